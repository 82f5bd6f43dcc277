/*
 * test_crash — crash consistency of checkpoint saves, proven by exhaustive
 * power-loss exploration (D4.1–D4.5, D5, D6.2–D6.5, H31, C123; D3.3/D3.6 for
 * the asynchronous hook's writer thread): each scenario below is recorded
 * once over tests/support/crash_fs, and every crash point of the recording
 * is replayed and checked by crash_tests.c (whose comment lists the checks).
 *
 * Scenario 4 adds D6.5: after a crash between the state file and the
 * retention deletions, the next save deletes what the crashed one was about
 * to delete. Where the crash left D6.5 something to do (that window, or a
 * record of hooked's own the crashed save wrote), every crash point of the
 * next save is explored too, each followed by one more save that must still
 * finish the deletions.
 *
 * The checker is tested as well: the same scenarios over a crash_fs whose
 * file fsync (or directory fsync) lies must produce violations, of the
 * clause the lie breaks.
 *
 * Each scenario prints its counts; HOOKED_CRASH_DUMP=1 also prints every
 * recorded operation.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "crash_tests.h"

#include <pthread.h>

#include "thread_group.h"

#define NEXT_STEP 1000   /* the step of the save after a crash */
#define CK "ck"          /* the checkpoint directory, relative to the scenario's root ... */
#define CK_MADE "run/ck" /* ... and where the hook must create it and its parent (D4.5) */
#define ASYNC_STEPS 4    /* steps of the asynchronous scenario, each saved */

/* ---- scenarios ------------------------------------------------------------------------ */

typedef enum scenario {
  S_SAVER_FIRST,     /* (1) a first save, Saver, into an empty directory */
  S_HOOK_FIRST,      /* (1) a first save, CheckpointSaverHook, into an empty directory */
  S_HOOK_MKDIR,      /* (1) the same, into a directory the hook creates (D4.5) */
  S_RETENTION,       /* (2) max_to_keep 2: the third save deletes the first */
  S_ASYNC,           /* (3) AsyncCheckpointSaverHook, retention on its writer thread */
  S_PENDING_DELETES, /* (4) D6.5 */
  S_SERIES,          /* (5) retention over three saves, each deleting one */
  S_RESAVE,          /* (6) a restart re-saves the step retention just deleted */
  S_RESAVE_NO_STATE, /* (6) the same, without the state file */
  S_SHARDED          /* (7) three ranks save one sharded checkpoint; retention drops a sharded one (D17, D21) */
} scenario;

static const char *const scenario_names[] = {
    "1 first save, Saver",
    "1 first save, CheckpointSaverHook",
    "1 first save, directory made by the hook",
    "2 retention (max_to_keep 2)",
    "3 AsyncCheckpointSaverHook",
    "4 pending deletions (D6.5)",
    "5 retention over three saves",
    "6 a restart re-saves a deleted step",
    "6 ... without the state file",
    "7 three writers, one sharded checkpoint",
};

static const char *const keep_files[] = {CK "/best.safetensors", CK "/notes.txt"};

typedef struct result {
  crash_explore_stats stats;
  long checked, nested, bad, windows, want_hits;
  double secs;
} result;

static hk_code run_steps(hk_session *s, const model_vars *mv, int n, hk_status *st) {
  hk_handle targets[2];
  hk_run_args args;
  targets[0] = mv->train;
  targets[1] = mv->bump;
  memset(&args, 0, sizeof args);
  args.targets = targets;
  args.ntargets = 2;
  for (int i = 0; i < n; i++) {
    hk_code rc = hk_session_run(s, &args, NULL, NULL, st);
    if (rc != HK_OK) return rc;
  }
  return HK_OK;
}

/* A listener whose after_save marks the recording: the hook reported the
 * save of `step` done (for the asynchronous hook, D3.4: the writer finished
 * and the training thread processed it). */
static hk_code mark_after_save(void *user, hk_raw_session *rs, int64_t step, int *stop, hk_status *st) {
  (void)rs;
  (void)stop;
  (void)st;
  crash_fs_mark(user, step);
  return HK_OK;
}

static const hk_checkpoint_listener_vtable marker_vtable = {
    HK_CHECKPOINT_LISTENER_VTABLE_VERSION, NULL, NULL, mark_after_save, NULL,
};

static int64_t last_mark(const crash_fs *cf) {
  int64_t m = CRASH_NO_MARK;
  for (size_t i = 0; i < crash_fs_nops(cf); i++)
    if (crash_fs_op(cf, i)->kind == CRASH_OP_MARK) m = crash_fs_op(cf, i)->mark;
  return m;
}

typedef struct run_opts {
  int lie_sync, lie_sync_dir; /* crash_fs_lie() */
  int append_only;            /* crash_fs_append_only(): no write_at */
  int quiet;                  /* do not print the violations */
  const char *want;           /* count the violations whose message contains it */
} run_opts;

/* ---- (7) several writers: ranks as threads of one thread group ------------------------ */

#define SHARD_RANKS 3

typedef struct shard_rank {
  test_env *te;
  model_vars mv;
  hk_raw_session *rs;
  hk_saver *sv;
  const char *save_path;
  int64_t step;
  hk_code rc;
  hk_status st;
} shard_rank;

static void *shard_rank_main(void *arg) {
  shard_rank *r = arg;
  r->rc = hk_saver_save(NULL, r->sv, r->rs, r->save_path, r->step, HK_SAVE_DEFAULT, &r->st);
  return NULL;
}

/* Every rank saves `step` at once (the threads only save: cmocka stays on
 * this thread). */
static void shard_save_all(shard_rank *ranks, int64_t step) {
  for (int r = 0; r < SHARD_RANKS; r++) {
    assign_step(ranks[r].rs, ranks[r].mv.ex, step);
    ranks[r].step = step;
  }
  assert_int_equal(thread_group_run(shard_rank_main, ranks, sizeof ranks[0], SHARD_RANKS), 0);
  for (int r = 0; r < SHARD_RANKS; r++) assert_ok(ranks[r].rc, &ranks[r].st);
}

/* Three ranks, each with its own model and Saver, their files through cf
 * (NULL: the plain POSIX fs). */
static void shard_ranks_open(shard_rank *ranks, thread_group *tg, const char *save_path, int64_t max_to_keep,
                             crash_fs *cf) {
  thread_group_init(tg, SHARD_RANKS);
  for (int r = 0; r < SHARD_RANKS; r++) {
    hk_saver_options so = HK_SAVER_OPTIONS_INIT;
    hk_status st = HK_STATUS_INIT;
    memset(&ranks[r], 0, sizeof ranks[r]);
    ranks[r].te = test_env_new();
    if (cf) crash_fs_bind(cf, &ranks[r].te->env);
    ranks[r].save_path = save_path;
    make_executor(ranks[r].te, &ranks[r].mv);
    assert_ok(hk_raw_session_open(&ranks[r].rs, ranks[r].mv.ex, &st), &st);
    so.env = &ranks[r].te->env;
    so.executor = ranks[r].mv.ex;
    so.max_to_keep = max_to_keep;
    so.group = thread_group_vtable();
    so.group_user = &tg->members[r];
    assert_ok(hk_saver_new(&ranks[r].sv, &so, &st), &st);
  }
}

static void shard_ranks_close(shard_rank *ranks, thread_group *tg) {
  for (int r = 0; r < SHARD_RANKS; r++) {
    hk_saver_free(ranks[r].sv);
    hk_raw_session_free(ranks[r].rs);
    fake_executor_free(ranks[r].mv.fx);
    assert_int_equal(test_env_release(ranks[r].te), 0);
  }
  thread_group_destroy(tg);
}

/* (7): checkpoints 1 and 2 saved sharded before the recording; recorded:
 * a restarted job of three ranks (fresh Savers, one crash_fs for all, so
 * one order of every rank's operations) saves step 3, and retention
 * (max_to_keep 2) deletes checkpoint 1's index and shards. */
static crash_fs *record_sharded(const char *root, const char *save_path, run_opts ro, expect *ex) {
  shard_rank ranks[SHARD_RANKS];
  thread_group tg;
  crash_fs *cf;
  shard_ranks_open(ranks, &tg, save_path, 2, NULL);
  shard_save_all(ranks, 1);
  shard_save_all(ranks, 2);
  shard_ranks_close(ranks, &tg);
  cf = crash_fs_new(root);
  crash_fs_lie(cf, ro.lie_sync, ro.lie_sync_dir);
  crash_fs_append_only(cf, ro.append_only);
  shard_ranks_open(ranks, &tg, save_path, 2, cf);
  shard_save_all(ranks, 3);
  crash_fs_mark(cf, 3);
  shard_ranks_close(ranks, &tg);
  ex->prev = 2;
  ex->max_to_keep = 2;
  ex->vanish = 1;
  ex->nest = 1;
  return cf;
}

/* Record the scenario, then explore every crash point of it. */
static result run_scenario(scenario sc, run_opts ro) {
  test_env *te = test_env_new();
  hk_env plain;
  model_vars mv;
  checker *ck = checker_new();
  char *root = fast_tmpdir("crash");
  const char *ck_rel = sc == S_HOOK_MKDIR ? CK_MADE : CK;
  char *dir = test_path(root, ck_rel);
  char *save_path = test_path(dir, "model.ckpt");
  crash_fs *cf = NULL;
  hk_status st = HK_STATUS_INIT;
  hk_raw_session *rs = NULL;
  hk_saver *sv = NULL;
  expect ex;
  result res;
  char msg[512];
  double t0 = now_secs();

  memset(&ex, 0, sizeof ex);
  memset(&res, 0, sizeof res);
  ck->want = ro.want;
  ex.ck = ck_rel;
  ex.prev = -1;
  ex.max_to_keep = 5;
  ex.next = NEXT_STEP;
  ex.vanish = -1;
  ex.survive = -1;
  plain = te->env;
  plain.fs = NULL;
  plain.fs_user = NULL;
  if (sc != S_HOOK_MKDIR) assert_int_equal(mkdir(dir, 0755), 0);

  if (sc == S_SHARDED) {
    cf = record_sharded(root, save_path, ro, &ex);
    make_executor(te, &mv); /* freed below, as the other scenarios' */
  } else if (sc == S_RETENTION || sc == S_PENDING_DELETES || sc >= S_SERIES) {
    /* Before the recording: checkpoints 1 and 2 (managed, max_to_keep 2), an
     * unmanaged checkpoint and a foreign file, none of which retention may
     * touch but checkpoint 1 (D6.4). */
    make_executor(te, &mv);
    sv = saver_new(&plain, mv.ex, 2);
    assert_ok(hk_raw_session_open(&rs, mv.ex, &st), &st);
    for (int64_t step = 1; step <= 2; step++) {
      assign_step(rs, mv.ex, step);
      assert_ok(hk_saver_save(NULL, sv, rs, save_path, step, HK_SAVE_META, &st), &st);
    }
    {
      char *best = test_path(dir, "best");
      assign_step(rs, mv.ex, 2);
      assert_ok(hk_saver_save(NULL, sv, rs, best, HK_UNSET_STEPS, HK_SAVE_NO_STATE, &st), &st);
      free(best);
    }
    {
      char *notes = test_path(dir, "notes.txt");
      assert_int_equal(test_write_file(notes, "not a checkpoint\n", 17), 0);
      free(notes);
    }
    hk_saver_free(sv);
    ex.prev = 2;
    ex.max_to_keep = 2;
    ex.keep = keep_files;
    ex.nkeep = 2;
    if (sc == S_PENDING_DELETES || sc >= S_SERIES) {
      ex.vanish = sc == S_PENDING_DELETES ? 1 : -1;
      ex.nest = 1;
    }
    cf = crash_fs_new(root);
    crash_fs_lie(cf, ro.lie_sync, ro.lie_sync_dir);
    crash_fs_append_only(cf, ro.append_only);
    crash_fs_bind(cf, &te->env);
    /* A restarted program: a fresh Saver, which recovers [1, 2] (D6.1). */
    sv = saver_new(&te->env, mv.ex, 2);
    assign_step(rs, mv.ex, 3);
    assert_ok(hk_saver_save(NULL, sv, rs, save_path, 3, HK_SAVE_META, &st), &st);
    crash_fs_mark(cf, 3);
    /* (5) two more saves, each deleting the oldest (2, then 3). */
    for (int64_t step = 4; sc == S_SERIES && step <= 5; step++) {
      assign_step(rs, mv.ex, step);
      assert_ok(hk_saver_save(NULL, sv, rs, save_path, step, HK_SAVE_DEFAULT, &st), &st);
      crash_fs_mark(cf, step);
    }
    if (sc == S_RESAVE || sc == S_RESAVE_NO_STATE) {
      /* (6) A restarted program (a fresh Saver) saves step 1 again, under
       * the name the state file records as a pending deletion. */
      hk_saver_free(sv);
      sv = saver_new(&te->env, mv.ex, 2);
      assign_step(rs, mv.ex, 1);
      assert_ok(hk_saver_save(NULL, sv, rs, save_path, 1, sc == S_RESAVE ? HK_SAVE_DEFAULT : HK_SAVE_NO_STATE, &st),
                &st);
      crash_fs_mark(cf, 1);
      ex.survive = 1;
      ex.survive_kept = sc == S_RESAVE_NO_STATE;
    }
    hk_saver_free(sv);
    hk_raw_session_free(rs);
  } else {
    cf = crash_fs_new(root);
    crash_fs_lie(cf, ro.lie_sync, ro.lie_sync_dir);
    crash_fs_append_only(cf, ro.append_only);
    crash_fs_bind(cf, &te->env);
    make_executor(te, &mv); /* after the bind: the executor's env (the Scaffold's Saver) records too */
    if (sc == S_SAVER_FIRST) {
      sv = saver_new(&te->env, mv.ex, 5);
      assert_ok(hk_raw_session_open(&rs, mv.ex, &st), &st);
      assign_step(rs, mv.ex, 1);
      assert_ok(hk_saver_save(NULL, sv, rs, save_path, 1, HK_SAVE_DEFAULT, &st), &st);
      crash_fs_mark(cf, 1);
      hk_raw_session_free(rs);
      hk_saver_free(sv);
    } else {
      hk_checkpoint_saver_options o;
      hk_hook *hook = NULL;
      hk_session *s = NULL;
      hk_checkpoint_listener marker;
      marker.vtable = &marker_vtable;
      marker.user = cf;
      marker.name = "crash marker";
      hk_checkpoint_saver_options_init(&o, HK_CHECKPOINT_SAVER_OPTIONS_VERSION);
      o.env = &te->env;
      o.checkpoint_dir = dir;
      o.listeners = &marker;
      o.nlisteners = 1;
      if (sc == S_ASYNC) {
        /* Every step saves, waiting for the write in flight (D3.3), so each
         * save but the last goes through the writer thread, retention
         * (max_to_keep 2) included. */
        sv = saver_new(&te->env, mv.ex, 2);
        o.saver = sv;
        o.save_steps = 1;
        o.block_when_busy = 1;
        ex.max_to_keep = 2;
        assert_ok(hk_async_checkpoint_saver_hook_new(&hook, &o, &st), &st);
      } else {
        o.save_steps = 1000; /* only the save at creation (C94) */
        assert_ok(hk_checkpoint_saver_hook_new(&hook, &o, &st), &st);
      }
      assert_ok(one_hook_session_new(&s, &te->env, HK_SESSION_MONITORED, mv.ex, &hook, NULL, &st), &st);
      if (sc == S_ASYNC) assert_ok(run_steps(s, &mv, ASYNC_STEPS, &st), &st);
      assert_ok(hk_session_close(s, HK_OK, &st), &st);
      hk_session_free(s);
      hk_hook_free(hook);
      hk_saver_free(sv);
      /* The listener marked every save the hook reported: the one at
       * creation, and for the asynchronous hook each step's, up to the last. */
      assert_int_equal(last_mark(cf), sc == S_ASYNC ? ASYNC_STEPS : 0);
    }
  }
  /* The recording covers everything the run did. */
  assert_int_equal(crash_fs_open_handles(cf), 0);
  assert_int_equal(crash_fs_unmodeled(cf), 0);
  if (crash_fs_check_model(cf, msg, sizeof msg) != 0) fail_msg("crash_fs lost track of the run: %s", msg);

  if (getenv("HOOKED_CRASH_DUMP")) {
    char line[512];
    for (size_t i = 0; i < crash_fs_nops(cf); i++) printf("    %s\n", crash_fs_op_describe(cf, i, line, sizeof line));
  }
  explore(ck, cf, &ex, 1, &ck->opts, &res.stats);
  res.checked = ck->checked;
  res.nested = ck->nested;
  res.bad = ck->bad;
  res.windows = ck->windows;
  res.want_hits = ck->want_hits;
  res.secs = now_secs() - t0;
  printf("[ crash    ] scenario %s%s%s: %zu operations, %zu crash points, %zu crash states, %zu distinct checked",
         scenario_names[sc], ro.append_only ? " [appends only]" : "",
         ro.lie_sync       ? " [lying fsync]"
         : ro.lie_sync_dir ? " [lying directory fsync]"
                           : "",
         crash_fs_nops(cf), res.stats.points, res.stats.variants, res.stats.distinct);
  if (res.nested) printf(" + %ld in the next saves", res.nested);
  if (ex.nest) printf(" (%ld in D6.5's window)", ck->windows);
  printf(", %ld violating, %.2f s\n", res.bad, res.secs);
  if (!ro.quiet) print_msgs(ck);
  fflush(stdout);

  crash_fs_free(cf);
  fake_executor_free(mv.fx);
  test_tmpdir_free(root);
  free(dir);
  free(save_path);
  checker_free(ck);
  assert_int_equal(test_env_release(te), 0);
  return res;
}

/* ---- tests ------------------------------------------------------------------------------ */

/* (1) A first save with the Saver into an empty directory: every crash
 * leaves nothing or checkpoint 1, complete (D4.1, D4.4, D4.5). */
static void test_crash__a_crash_in_a_saver_s_first_save_leaves_no_torn_files(void **state) {
  result r = run_scenario(S_SAVER_FIRST, (run_opts){0});
  (void)state;
  assert_true(r.stats.points >= 14);
  assert_true(r.stats.distinct >= 14); /* the small tensors' data in one write */
  assert_int_equal(r.bad, 0);
  /* Over a file system without write_at, every file is appended. */
  r = run_scenario(S_SAVER_FIRST, (run_opts){.append_only = 1});
  assert_true(r.stats.points >= 14);
  assert_true(r.stats.distinct >= 15);
  assert_int_equal(r.bad, 0);
}

/* (1) The same through CheckpointSaverHook: its save at creation (C94), the
 * graph description and the event file (D4.1, D4.4, H26). */
static void test_crash__a_crash_in_a_hook_s_first_save_leaves_no_torn_files(void **state) {
  result r = run_scenario(S_HOOK_FIRST, (run_opts){0});
  (void)state;
  assert_true(r.stats.points >= 20);
  assert_true(r.stats.distinct >= 30);
  assert_int_equal(r.bad, 0);
}

/* (1) With a checkpoint directory the hook creates: D4.5 requires its
 * parent to be fsynced before the save at creation is reported. */
static void test_crash__hook_created_directory_is_durable(void **state) {
  result r = run_scenario(S_HOOK_MKDIR, (run_opts){0});
  (void)state;
  assert_true(r.stats.points >= 20);
  assert_int_equal(r.bad, 0);
}

/* (2) Retention: the third save (max_to_keep 2) deletes the first, only
 * after the state file without it is durable (D4.2, D6.2), and never
 * touches an unmanaged checkpoint or a foreign file (D6.4). */
static void test_crash__retention_deletes_only_after_the_state_file_is_written(void **state) {
  result r = run_scenario(S_RETENTION, (run_opts){0});
  (void)state;
  assert_true(r.stats.points >= 18);
  assert_true(r.stats.distinct >= 20);
  assert_int_equal(r.bad, 0);
}

/* D4.4: (3) AsyncCheckpointSaverHook: saves at creation and at every step written
 * by its writer thread, retention there too; operations of both threads in
 * one order (D3.6, D4, D6). */
static void test_crash__a_crash_during_an_async_save_leaves_no_torn_files(void **state) {
  result r = run_scenario(S_ASYNC, (run_opts){0});
  (void)state;
  assert_true(r.stats.points >= 30);
  assert_true(r.stats.distinct >= 60);
  assert_int_equal(r.bad, 0);
}

/* (4) D6.5: a crash after the state file that drops checkpoint 1 and before
 * its deletion; the next save of a fresh Saver deletes it. Every crash point
 * of that next save is explored as well, and after each the save after it
 * must still finish the deletion. */
static void test_crash__deletions_a_crash_interrupted_are_finished(void **state) {
  result r = run_scenario(S_PENDING_DELETES, (run_opts){0});
  (void)state;
  assert_true(r.stats.points >= 18);
  assert_true(r.windows >= 1);
  assert_true(r.nested >= 20);
  assert_int_equal(r.bad, 0);
}

/* (5) Retention over several saves, each deleting one checkpoint with no
 * directory fsync of its own: every crash leaves a state file that lists
 * no deleted checkpoint (so latest and restore never pick one) and records
 * the deletions not yet durable; the next save deletes whatever came back,
 * and every crash point of that save is explored too (D4.4, D6.2, D6.5). */
static void test_crash__retention_over_several_saves_leaves_no_checkpoint_behind(void **state) {
  result r = run_scenario(S_SERIES, (run_opts){0});
  (void)state;
  assert_true(r.stats.points >= 40);
  assert_true(r.windows >= 1);
  assert_true(r.nested >= 20);
  assert_int_equal(r.bad, 0);
}

/* (6) A restart re-saves step 1, which the state file records as a
 * pending deletion: the new checkpoint is never deleted because of that
 * record once its save returned, with or without the state file (D4.5,
 * D6.5). */
static void test_crash__a_re_saved_step_is_never_deleted_by_its_old_record(void **state) {
  result r = run_scenario(S_RESAVE, (run_opts){0});
  (void)state;
  assert_true(r.stats.points >= 30);
  assert_int_equal(r.bad, 0);
  r = run_scenario(S_RESAVE_NO_STATE, (run_opts){0});
  assert_true(r.stats.points >= 30);
  assert_int_equal(r.bad, 0);
}

/* The checker can fail: over a file system whose file fsync lies (OK,
 * nothing durable), states appear where a data file or the state file
 * renamed into place has lost its bytes, and the checker reports them
 * (D4.1, D4.4). */
static void test_crash__lying_file_fsync_is_caught(void **state) {
  result r;
  (void)state;
  r = run_scenario(S_SAVER_FIRST, (run_opts){.lie_sync = 1, .quiet = 1, .want = "(D4.4"});
  assert_true(r.bad > 0);
  assert_true(r.want_hits > 0);
  r = run_scenario(S_RETENTION, (run_opts){.lie_sync = 1, .quiet = 1, .want = "(D4.4"});
  assert_true(r.bad > 0);
  assert_true(r.want_hits > 0);
}

/* (7) Several writers: three ranks save one sharded checkpoint, each its
 * shard, the chief the index and the state file, and retention deletes an
 * older sharded checkpoint (D17, D21). Every crash point of the three
 * writers' operations (one order of them) leaves the previous state file
 * and every checkpoint it names whole, never a state file naming a
 * checkpoint with a shard missing; a restart with one rank restores the
 * newest one complete, and its save finishes the deletion of every shard. */
static void test_crash__a_crash_anywhere_in_a_sharded_save_of_three_writers_keeps_a_whole_checkpoint(void **state) {
  result r = run_scenario(S_SHARDED, (run_opts){0});
  (void)state;
  assert_true(r.stats.points >= 35);
  assert_true(r.nested >= 10);
  assert_int_equal(r.bad, 0);
  /* The checker sees through lies here too. */
  r = run_scenario(S_SHARDED, (run_opts){.lie_sync = 1, .quiet = 1, .want = "(D4.4"});
  assert_true(r.bad > 0);
  assert_true(r.want_hits > 0);
}

/* ... and over one whose directory fsync lies: a state file renamed into
 * place without the data file it names (D4.4), an acknowledged save lost
 * (D4.5). */
static void test_crash__lying_directory_fsync_is_caught(void **state) {
  result r;
  (void)state;
  r = run_scenario(S_SAVER_FIRST, (run_opts){.lie_sync_dir = 1, .quiet = 1, .want = "(D4.5)"});
  assert_true(r.bad > 0);
  assert_true(r.want_hits > 0);
  r = run_scenario(S_RETENTION, (run_opts){.lie_sync_dir = 1, .quiet = 1, .want = "which does not open"});
  assert_true(r.bad > 0);
  assert_true(r.want_hits > 0);
}

/* ---- the model itself ------------------------------------------------------------- */

#define MODEL_MAX_TREES 64

typedef struct trees {
  char text[MODEL_MAX_TREES][96]; /* "name=content;" per entry, '0' for a zero byte */
  int64_t mark[MODEL_MAX_TREES];
  int n;
} trees;

static int collect_tree(void *user, const crash_state *cs) {
  trees *t = user;
  char *out;
  assert_true(t->n < MODEL_MAX_TREES);
  out = t->text[t->n];
  out[0] = '\0';
  for (size_t i = 0; i < crash_state_count(cs); i++) {
    const unsigned char *d;
    size_t len, at = strlen(out);
    const char *p = crash_state_entry(cs, i, NULL, &d, &len);
    at += (size_t)snprintf(out + at, 96 - at, "%s=", p);
    for (size_t k = 0; k < len && at + 2 < 96; k++) out[at++] = d[k] ? (char)d[k] : '0';
    out[at] = '\0';
    strncat(out, ";", 95 - strlen(out));
  }
  t->mark[t->n++] = crash_state_mark(cs);
  return 0;
}

static int trees_have(const trees *t, const char *text) {
  for (int i = 0; i < t->n; i++)
    if (strcmp(t->text[i], text) == 0) return 1;
  return 0;
}

/* create a, write 12 bytes, fsync, close, rename a -> b, fsync the
 * directory, mark 1: the states crash_fs.h promises, and only those. */
static void record_rename(trees *t, int lie_sync) {
  char *root = fast_tmpdir("crash-model");
  char *a = test_path(root, "a"), *b = test_path(root, "b");
  crash_fs *cf = crash_fs_new(root);
  const hk_fs_vtable *vt = crash_fs_vtable();
  hk_status st = HK_STATUS_INIT;
  hk_fs_file *f = NULL;
  size_t n = 0;
  char msg[256];
  crash_fs_lie(cf, lie_sync, 0);
  assert_ok(vt->create_excl(cf, a, &f, &st), &st);
  assert_ok(vt->write(cf, f, "hello world!", 12, &n, &st), &st);
  assert_int_equal(n, 12);
  assert_ok(vt->sync(cf, f, &st), &st);
  assert_ok(vt->close(cf, f, &st), &st);
  assert_ok(vt->rename(cf, a, b, &st), &st);
  assert_ok(vt->sync_dir(cf, root, &st), &st);
  crash_fs_mark(cf, 1);
  assert_int_equal(crash_fs_nops(cf), 7);
  assert_int_equal(crash_fs_check_model(cf, msg, sizeof msg), 0);
  memset(t, 0, sizeof *t);
  crash_fs_explore(cf, NULL, collect_tree, t, NULL);
  crash_fs_free(cf);
  free(a);
  free(b);
  test_tmpdir_free(root);
}

static void test_crash__model_outcomes_of_a_rename(void **state) {
  trees t;
  int after_mark = 0;
  (void)state;
  record_rename(&t, 0);
  /* Before the directory fsync: no name, or a, or b (each change alone) ... */
  assert_true(trees_have(&t, ""));
  /* ... and a's unsynced bytes lost, torn (half), zeroed or all there. */
  assert_true(trees_have(&t, "a=;"));
  assert_true(trees_have(&t, "a=hello ;"));
  assert_true(trees_have(&t, "a=000000000000;"));
  assert_true(trees_have(&t, "a=hello world!;"));
  /* After the fsync b has its bytes in every outcome: b is never torn. */
  assert_true(trees_have(&t, "b=hello world!;"));
  assert_false(trees_have(&t, "b=;"));
  assert_false(trees_have(&t, "b=hello ;"));
  for (int i = 0; i < t.n; i++) {
    assert_null(strstr(t.text[i], "a=hello world!;b=")); /* one inode, one name */
    if (t.mark[i] == 1) {
      /* Once the directory fsync returned, the one state left is b, whole. */
      assert_string_equal(t.text[i], "b=hello world!;");
      after_mark++;
    }
  }
  assert_int_equal(after_mark, 1);
  assert_int_equal(t.n, 7);

  /* With a lying fsync, b can be empty even after everything returned. */
  record_rename(&t, 1);
  assert_true(trees_have(&t, "b=;"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_crash__model_outcomes_of_a_rename),
      cmocka_unit_test(test_crash__a_crash_in_a_saver_s_first_save_leaves_no_torn_files),
      cmocka_unit_test(test_crash__a_crash_in_a_hook_s_first_save_leaves_no_torn_files),
      cmocka_unit_test(test_crash__hook_created_directory_is_durable),
      cmocka_unit_test(test_crash__retention_deletes_only_after_the_state_file_is_written),
      cmocka_unit_test(test_crash__a_crash_during_an_async_save_leaves_no_torn_files),
      cmocka_unit_test(test_crash__deletions_a_crash_interrupted_are_finished),
      cmocka_unit_test(test_crash__retention_over_several_saves_leaves_no_checkpoint_behind),
      cmocka_unit_test(test_crash__a_re_saved_step_is_never_deleted_by_its_old_record),
      cmocka_unit_test(test_crash__a_crash_anywhere_in_a_sharded_save_of_three_writers_keeps_a_whole_checkpoint),
      cmocka_unit_test(test_crash__lying_file_fsync_is_caught),
      cmocka_unit_test(test_crash__lying_directory_fsync_is_caught),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
