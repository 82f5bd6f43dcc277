/*
 * Tests of CheckpointSaverHook and its listeners (contract group K: C92–C103;
 * C75/H25/D9 for its cadence options; D12 for the final save after a signal
 * stop), driven through real sessions over the scripted fake executor (a
 * fetched GS is the value at the start of the run, H29) and real temporary
 * directories. C100 drives the hook's vtable directly, as a harness would.
 */
#include "session_fixture.h"
#include "tmpdir.h"
#include "ckpt_fixture.h"
#include "faulty_fs.h"
#include "gate_fs.h"

/* C100 drives the callbacks without a session: the struct layouts of a hook
 * and a run context (no library symbol) come from core's internal header. */
#include "../../src/core/core_internal.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_EVENTS 64

/* ---- a spy listener (C103) ------------------------------------------------------ */

typedef struct spy_listener {
  const char *name;
  char *order; /* shared event log: "name.slot@step;" */
  size_t order_cap;
  int begin, before, after, end;
  int64_t before_steps[MAX_EVENTS];
  int64_t end_step;
  int64_t stop_at; /* after_save requests a stop at this step; -1 never */
  hk_code fail_before, fail_after, fail_begin, fail_end;
} spy_listener;

static void note(spy_listener *l, const char *slot, int64_t step) {
  char buf[64];
  if (l->order == NULL) return;
  snprintf(buf, sizeof buf, "%s.%s@%lld;", l->name, slot, (long long)step);
  strncat(l->order, buf, l->order_cap - strlen(l->order) - 1);
}

static hk_code l_begin(void *user, hk_status *st) {
  spy_listener *l = user;
  l->begin++;
  note(l, "begin", -1);
  if (l->fail_begin != HK_OK) return hk_status_set(st, l->fail_begin, "listener %s begin failed", l->name);
  return HK_OK;
}

static hk_code l_before(void *user, hk_raw_session *rs, int64_t step, hk_status *st) {
  spy_listener *l = user;
  (void)rs;
  if (l->before < MAX_EVENTS) l->before_steps[l->before] = step;
  l->before++;
  note(l, "before_save", step);
  if (l->fail_before != HK_OK) return hk_status_set(st, l->fail_before, "listener %s before_save failed", l->name);
  return HK_OK;
}

static hk_code l_after(void *user, hk_raw_session *rs, int64_t step, int *stop, hk_status *st) {
  spy_listener *l = user;
  (void)rs;
  l->after++;
  note(l, "after_save", step);
  if (l->fail_after != HK_OK) return hk_status_set(st, l->fail_after, "listener %s after_save failed", l->name);
  if (step == l->stop_at) *stop = 1;
  return HK_OK;
}

static hk_code l_end(void *user, hk_raw_session *rs, int64_t step, hk_status *st) {
  spy_listener *l = user;
  (void)rs;
  l->end++;
  l->end_step = step;
  note(l, "end", step);
  if (l->fail_end != HK_OK) return hk_status_set(st, l->fail_end, "listener %s end failed", l->name);
  return HK_OK;
}

static const hk_checkpoint_listener_vtable spy_listener_vtable = {
    HK_CHECKPOINT_LISTENER_VTABLE_VERSION, l_begin, l_before, l_after, l_end,
};

/* ---- fixture -------------------------------------------------------------------- */

typedef struct fixture {
  test_env *te;
  char *tmp;
  char *dir; /* tmp/ckpt: the checkpoint_dir, created by begin() */
  fake_executor *fx;
  hk_handle gs, train, v, bump;
  hk_hook *hook;
  hk_session *s;
  hk_saver *saver;
  hk_scaffold *scaffold;
  spy_listener l[2];
  hk_checkpoint_listener ls[2];
  char order[2048];
  int preempted; /* preempt_first_train fired */
  hk_checkpoint_saver_options o;
  hk_status st;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof(*f));
  int i;

  assert_non_null(f);
  f->te = test_env_new();
  f->tmp = test_tmpdir_new("ckpt-hook");
  f->dir = test_path(f->tmp, "ckpt");
  f->fx = fake_training_executor(f->te, NULL, &f->gs, &f->train);
  /* "v" += 5 per step, so a checkpoint's contents show its step. */
  f->v = fake_executor_add_variable(f->fx, "v", HK_DTYPE_I64, 0, NULL, HK_VAR_TRAINABLE, NULL);
  f->bump = fake_executor_add_op(f->fx, "bump");
  fake_executor_op_increments(f->fx, f->bump, f->v, 5);
  for (i = 0; i < 2; i++) {
    f->l[i].name = i == 0 ? "first" : "second";
    f->l[i].order = f->order;
    f->l[i].order_cap = sizeof f->order;
    f->l[i].stop_at = -1;
    f->ls[i].vtable = &spy_listener_vtable;
    f->ls[i].user = &f->l[i];
    f->ls[i].name = f->l[i].name;
  }
  hk_checkpoint_saver_options_init(&f->o, HK_CHECKPOINT_SAVER_OPTIONS_VERSION);
  f->o.env = &f->te->env;
  f->o.checkpoint_dir = f->dir;
  f->o.save_steps = 1;
  f->o.listeners = f->ls;
  f->o.nlisteners = 2;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  session_close_and_free(f->s);
  hk_hook_free(f->hook);
  hk_scaffold_free(f->scaffold);
  hk_saver_free(f->saver);
  test_tmpdir_free(f->tmp);
  free(f->dir);
  return fixture_release(f, f->fx, f->te);
}

static void make_hook(fixture *f) { assert_ok(hk_checkpoint_saver_hook_new(&f->hook, &f->o, &f->st), &f->st); }

static hk_code open_session(fixture *f) {
  return one_hook_session_new(&f->s, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(f->fx), &f->hook,
                              f->scaffold, &f->st);
}

static void open_ok(fixture *f) {
  make_hook(f);
  assert_ok(open_session(f), &f->st);
}

static hk_code step(fixture *f) {
  hk_handle targets[2];
  hk_run_args args;
  targets[0] = f->train;
  targets[1] = f->bump;
  memset(&args, 0, sizeof args);
  args.targets = targets;
  args.ntargets = 2;
  return hk_session_run(f->s, &args, NULL, NULL, &f->st);
}

static hk_code close_session(fixture *f) {
  hk_code rc = hk_session_close(f->s, HK_OK, &f->st);
  hk_session_free(f->s);
  f->s = NULL;
  return rc;
}

static int ckpt_exists(fixture *f, const char *base, int64_t step) { return ckpt_data_exists(f->dir, base, step); }

/* The step and value of "v" recorded in checkpoint model.ckpt-<step>. */
static void read_ckpt(fixture *f, int64_t step, int64_t *gs, int64_t *v) {
  ckpt_read_i64(&f->te->env, f->dir, step, 0, "v", gs, v, &f->st);
}

static int count_files(fixture *f, const char *substr) { return test_dir_count_matching(f->dir, substr); }

/* ---- C92: options ---------------------------------------------------------------- */

static void expect_invalid(fixture *f, const char *substr) {
  hk_hook *h = (hk_hook *)1;
  hk_status st = HK_STATUS_INIT;
  assert_status(hk_checkpoint_saver_hook_new(&h, &f->o, &st), &st, HK_INVALID_ARGUMENT, substr);
  assert_null(h);
}

static void test_checkpoint_saver_hook__c92_validation(void **state) {
  fixture *f = *state;
  hk_checkpoint_saver_options good = f->o;
  static const hk_checkpoint_listener_vtable v0 = {0, NULL, NULL, NULL, NULL};
  static const hk_checkpoint_listener_vtable v9 = {9, NULL, NULL, NULL, NULL};
  hk_checkpoint_listener bad;
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  hk_scaffold_options sco = HK_SCAFFOLD_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_hook *h = (hk_hook *)1;

  assert_status(hk_checkpoint_saver_hook_new(&h, NULL, &st), &st, HK_INVALID_ARGUMENT, "checkpoint_dir");
  assert_null(h);
  assert_status(hk_checkpoint_saver_hook_new(NULL, &f->o, &st), &st, HK_INVALID_ARGUMENT, "out");

  f->o.checkpoint_dir = NULL;
  expect_invalid(f, "checkpoint_dir");
  f->o = good;
  f->o.version = 0;
  expect_invalid(f, "version");

  /* C92: saver and scaffold together. */
  f->o = good;
  so.executor = fake_executor_executor(f->fx);
  so.env = &f->te->env;
  assert_ok(hk_saver_new(&f->saver, &so, &st), &st);
  sco.env = &f->te->env;
  assert_ok(hk_scaffold_new(&f->scaffold, &sco, &st), &st);
  f->o.saver = f->saver;
  f->o.scaffold = f->scaffold;
  expect_invalid(f, "You cannot provide both saver and scaffold.");

  /* C75/D9 under the hook's names; "given" includes 0. */
  f->o = good;
  f->o.save_steps = HK_UNSET_STEPS;
  expect_invalid(f, "Either save_secs or save_steps should be provided.");
  f->o.save_secs = 0;
  f->o.save_steps = 0;
  expect_invalid(f, "Can not provide both save_secs and save_steps.");
  /* H25: zero and non-finite cadences are refused, naming the option. */
  f->o.save_secs = HK_UNSET_SECS;
  expect_invalid(f, "save_steps");
  f->o.save_steps = HK_UNSET_STEPS;
  f->o.save_secs = 0;
  expect_invalid(f, "save_secs");
  f->o.save_secs = NAN;
  expect_invalid(f, "save_secs");

  f->o = good;
  f->o.steps_per_run = 0;
  expect_invalid(f, "steps_per_run");

  /* H32: the basename must be a valid name. */
  f->o = good;
  f->o.checkpoint_basename = "a/b";
  expect_invalid(f, "checkpoint_basename");
  f->o.checkpoint_basename = "..";
  expect_invalid(f, "checkpoint_basename");
  f->o.checkpoint_basename = "";
  expect_invalid(f, "checkpoint_basename");

  /* H10: listener vtables. */
  f->o = good;
  bad.vtable = NULL;
  bad.user = NULL;
  bad.name = "bad";
  f->o.listeners = &bad;
  f->o.nlisteners = 1;
  expect_invalid(f, "listeners[0].vtable");
  bad.vtable = &v0;
  expect_invalid(f, "listeners[0].vtable->version");
  bad.vtable = &v9;
  expect_invalid(f, "listeners[0].vtable->version");
  f->o.listeners = NULL;
  expect_invalid(f, "listeners");

  /* H3: nothing was created by any failure, and no listener ran. */
  assert_false(test_path_exists(f->dir));
  assert_int_equal(f->l[0].begin, 0);
  assert_int_equal(test_log_count(&f->te->log, -1, "Create CheckpointSaverHook."), 0);

  f->o = good;
  make_hook(f);
  assert_logged(f->te, HK_LOG_INFO, "Create CheckpointSaverHook.");
  assert_false(test_path_exists(f->dir)); /* created by begin(), not by the constructor */
}

/* C92, C104: a hook created without an env logs its creation line at its
 * first begin(), through the env of the session it serves, so one log level
 * set there reaches it: at WARNING no INFO line arrives; at INFO the line
 * arrives once, at begin() and not at construction, and a later session
 * of the same hook does not repeat it. */
static void test_checkpoint_saver_hook__c92_creation_line_through_session_env(void **state) {
  fixture *f = *state;
  hk_env warn = f->te->env;
  hk_hook *async = NULL;
  char line[700];

  warn.log_level = HK_LOG_WARNING;
  f->o.env = NULL;
  make_hook(f);
  assert_int_equal(test_log_count(&f->te->log, -1, "Create CheckpointSaverHook."), 0);
  assert_ok(one_hook_session_new(&f->s, &warn, HK_SESSION_MONITORED, fake_executor_executor(f->fx), &f->hook, NULL,
                                 &f->st),
            &f->st);
  assert_int_equal(test_log_count(&f->te->log, -1, "Create CheckpointSaverHook."), 0);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, ""), 0); /* not one INFO line of the session's */
  assert_ok(close_session(f), &f->st);
  hk_hook_free(f->hook);
  f->hook = NULL;

  /* at INFO (the test env logs everything): once, at begin() */
  make_hook(f);
  assert_int_equal(test_log_count(&f->te->log, -1, "Create CheckpointSaverHook."), 0);
  assert_ok(open_session(f), &f->st);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "Create CheckpointSaverHook."), 1);
  assert_ok(close_session(f), &f->st);
  assert_ok(open_session(f), &f->st);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "Create CheckpointSaverHook."), 1);
  assert_ok(close_session(f), &f->st);

  /* the asynchronous hook's line, with its listener count (C104) */
  f->o.nlisteners = 1;
  assert_ok(hk_async_checkpoint_saver_hook_new(&async, &f->o, &f->st), &f->st);
  snprintf(line, sizeof line, "Create AsyncCheckpointSaverHook saving to path\n%s/model.ckpt with 1 listener(s).",
           f->dir);
  assert_int_equal(test_log_count(&f->te->log, -1, line), 0);
  assert_ok(one_hook_session_new(&f->s, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(f->fx), &async,
                                 NULL, &f->st),
            &f->st);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, line), 1);
  assert_ok(close_session(f), &f->st);
  hk_hook_free(async);
}

static void test_checkpoint_saver_hook__options_init(void **state) {
  hk_checkpoint_saver_options o;
  (void)state;
  assert_int_equal(hk_checkpoint_saver_options_init(NULL, HK_CHECKPOINT_SAVER_OPTIONS_VERSION), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_checkpoint_saver_options_init(&o, 99), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_checkpoint_saver_options_init(&o, HK_CHECKPOINT_SAVER_OPTIONS_VERSION), HK_OK);
  assert_null(o.checkpoint_dir);
  assert_true(hk_secs_is_unset(o.save_secs));
  assert_true(o.save_steps == HK_UNSET_STEPS);
  assert_int_equal(o.save_graph_def, 1);
  assert_true(o.steps_per_run == 1);
  assert_int_equal(o.block_when_busy, 0);
}

/* ---- C93: begin ------------------------------------------------------------------ */

static void test_checkpoint_saver_hook__c93_begin_creates_dir_and_runs_listeners(void **state) {
  fixture *f = *state;
  char *nested = test_path(f->dir, "a/b");

  f->o.checkpoint_dir = nested;
  open_ok(f);
  assert_true(test_path_exists(nested));
  assert_int_equal(f->l[0].begin, 1);
  assert_int_equal(f->l[1].begin, 1);
  assert_non_null(strstr(f->order, "first.begin@-1;second.begin@-1;"));
  free(nested);
}

/* D4.5: begin() makes each directory level it creates durable, parent
 * first: one directory fsync per level created, on its parent, before the
 * next level is made; a failing fsync fails begin() naming the directory
 * created and the one synced. Levels that exist cost nothing. */
static void test_checkpoint_saver_hook__d4_5_created_directories_are_made_durable(void **state) {
  fixture *f = *state;
  faulty_fs ff;
  char *levels[3], *parents[3];
  long fresh, existing;

  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &f->te->env); /* before the hook copies the env */
  levels[0] = strdup(f->dir);       /* tmp/ckpt */
  levels[1] = test_path(f->dir, "a");
  levels[2] = test_path(f->dir, "a/b");
  parents[0] = strdup(f->tmp);
  parents[1] = strdup(levels[0]);
  parents[2] = strdup(levels[1]);
  f->o.checkpoint_dir = levels[2];
  for (int k = 0; k < 3; k++) {
    char want[600], synced[600];
    assert_int_equal(test_tmpdir_remove(f->dir), 0);
    faulty_fs_fail_errno(&ff, FAULTY_FS_SYNC_DIR, k, EIO, 0);
    make_hook(f);
    assert_status(open_session(f), &f->st, HK_UNKNOWN, NULL);
    snprintf(want, sizeof want, "creating directory %s: ", levels[k]);
    snprintf(synced, sizeof synced, " %s: ", parents[k]); /* the fsync that failed names its directory */
    if (!strstr(f->st.message, want) || !strstr(f->st.message, synced))
      fail_msg("message '%s' lacks '%s' or '%s'", f->st.message, want, synced);
    assert_int_equal(faulty_fs_calls(&ff, FAULTY_FS_MKDIR), k + 1); /* level k+1 was never made */
    assert_int_equal(f->l[0].begin, 0);
    hk_hook_free(f->hook);
    f->hook = NULL;
  }

  /* Every level created: 3 more directory fsyncs than when they all exist. */
  assert_int_equal(test_tmpdir_remove(f->dir), 0);
  faulty_fs_reset(&ff);
  open_ok(f);
  fresh = faulty_fs_calls(&ff, FAULTY_FS_SYNC_DIR);
  assert_int_equal(faulty_fs_calls(&ff, FAULTY_FS_MKDIR), 3);
  assert_ok(close_session(f), &f->st);
  faulty_fs_reset(&ff);
  assert_ok(open_session(f), &f->st);
  existing = faulty_fs_calls(&ff, FAULTY_FS_SYNC_DIR);
  assert_int_equal(faulty_fs_calls(&ff, FAULTY_FS_MKDIR), 0);
  assert_int_equal(fresh - existing, 3);
  assert_ok(close_session(f), &f->st);
  hk_hook_free(f->hook);
  f->hook = NULL;
  f->o.checkpoint_dir = f->dir;
  f->te->env.fs = NULL;
  f->te->env.fs_user = NULL;
  for (int k = 0; k < 3; k++) {
    free(levels[k]);
    free(parents[k]);
  }
  faulty_fs_destroy(&ff);
}

/* C98, H1: a save that fails says that saving the checkpoint failed, for
 * which step and into which save path, then the file system's message. */
static void test_checkpoint_saver_hook__c98_failed_save_names_step_and_path(void **state) {
  fixture *f = *state;
  faulty_fs ff;
  char want[1200];

  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &f->te->env); /* before the hook and the session copy the env */
  open_ok(f);                        /* saves 0 at creation */
  assert_ok(step(f), &f->st);        /* and 1 */
  faulty_fs_fail_errno(&ff, FAULTY_FS_WRITE, 0, ENOSPC, 1);
  assert_status(step(f), &f->st, HK_RESOURCE_EXHAUSTED, NULL);
  snprintf(want, sizeof want, "Saving checkpoint for step 2 into %s/model.ckpt failed: write model.ckpt-2.safetensors.tmp-",
           f->dir);
  if (!strstr(f->st.message, want)) fail_msg("message '%s' lacks '%s'", f->st.message, want);
  assert_non_null(strstr(f->st.message, strerror(ENOSPC)));
  assert_int_equal(f->l[0].after, 2); /* no after_save for the failed one */
  faulty_fs_reset(&ff);
  assert_int_equal(count_files(f, ".tmp-"), 0);
  session_close_and_free(f->s);
  f->s = NULL;
  hk_hook_free(f->hook);
  f->hook = NULL;
  f->te->env.fs = NULL;
  f->te->env.fs_user = NULL;
  assert_int_equal(faulty_fs_open_handles(&ff), 0);
  faulty_fs_destroy(&ff);
}

static void test_checkpoint_saver_hook__c93_no_global_step(void **state) {
  fixture *f = *state;
  fake_executor *plain = fake_executor_new(&f->te->env);
  hk_handle train = fake_executor_add_op(plain, "train");

  (void)train;
  make_hook(f);
  assert_status(one_hook_session_new(&f->s, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(plain), &f->hook,
                                     NULL, &f->st),
                &f->st, HK_FAILED_PRECONDITION, "Global step should be created to use CheckpointSaverHook.");
  assert_null(f->s);
  assert_int_equal(f->l[0].begin, 0);
  fake_executor_free(plain);
}

static void test_checkpoint_saver_hook__c93_listener_begin_failure(void **state) {
  fixture *f = *state;

  f->l[0].fail_begin = HK_INTERNAL;
  make_hook(f);
  assert_status(open_session(f), &f->st, HK_INTERNAL, "listener first begin failed");
  assert_int_equal(f->l[1].begin, 0); /* the loop stopped */
  assert_int_equal(f->l[0].end, 0);
  assert_int_equal(count_files(f, ".safetensors"), 0);
}

/* ---- C94, C96, C97, C98, C101 --------------------------------------------------- */

static void test_checkpoint_saver_hook__c101_example(void **state) {
  fixture *f = *state;
  int64_t gs, v;
  hk_checkpoint_state *cs = NULL;

  open_ok(f);
  assert_ok(step(f), &f->st);
  assert_ok(step(f), &f->st);
  assert_ok(close_session(f), &f->st);

  assert_true(ckpt_exists(f, "model.ckpt", 0));
  assert_true(ckpt_exists(f, "model.ckpt", 1));
  assert_true(ckpt_exists(f, "model.ckpt", 2));
  assert_int_equal(count_files(f, ".safetensors"), 3);
  assert_int_equal(f->l[0].begin, 1);
  assert_int_equal(f->l[0].before, 3);
  assert_int_equal(f->l[0].after, 3);
  assert_int_equal(f->l[0].end, 1);
  assert_int_equal(f->l[1].before, 3);
  assert_true(f->l[0].before_steps[0] == 0 && f->l[0].before_steps[1] == 1 && f->l[0].before_steps[2] == 2);
  assert_true(f->l[0].end_step == 2);
  /* C97: nothing extra at end: the final step was just saved. */
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "Saving checkpoints for 2 into"), 1);

  /* Each checkpoint holds its step's values. */
  read_ckpt(f, 1, &gs, &v);
  assert_true(gs == 1 && v == 5);
  read_ckpt(f, 2, &gs, &v);
  assert_true(gs == 2 && v == 10);

  /* The scaffold's Saver managed them (state file, C99). */
  assert_ok(hk_get_checkpoint_state(&f->te->env, f->dir, NULL, &cs, &f->st), &f->st);
  assert_int_equal(hk_checkpoint_state_count(cs), 3);
  assert_non_null(strstr(hk_checkpoint_state_model_path(cs), "model.ckpt-2"));
  hk_checkpoint_state_free(cs);
}

static void test_checkpoint_saver_hook__c98_sequence_and_logs(void **state) {
  fixture *f = *state;
  char *save_path = test_path(f->dir, "model.ckpt");
  char line[600];
  const char *pos;

  open_ok(f);
  /* C98: listeners in order, before then after. */
  assert_string_equal(f->order,
                      "first.begin@-1;second.begin@-1;first.before_save@0;second.before_save@0;"
                      "first.after_save@0;second.after_save@0;");
  assert_logged(f->te, HK_LOG_INFO, "Calling checkpoint listeners before saving checkpoint 0...");
  snprintf(line, sizeof line, "Saving checkpoints for 0 into %s.", save_path);
  assert_logged(f->te, HK_LOG_INFO, line);
  assert_logged(f->te, HK_LOG_INFO, "Calling checkpoint listeners after saving checkpoint 0...");
  /* The log lines come in C98's order. */
  {
    size_t i, a = 0, b = 0, c = 0;
    for (i = 0; i < f->te->log.n; i++) {
      pos = f->te->log.lines[i].text;
      if (strstr(pos, "before saving checkpoint 0") && !a) a = i + 1;
      if (strstr(pos, "Saving checkpoints for 0") && !b) b = i + 1;
      if (strstr(pos, "after saving checkpoint 0") && !c) c = i + 1;
    }
    assert_true(a > 0 && a < b && b < c);
  }
  free(save_path);
}

static void test_checkpoint_saver_hook__c101_save_steps_3(void **state) {
  fixture *f = *state;
  int i;

  f->o.save_steps = 3;
  open_ok(f);
  for (i = 0; i < 7; i++) assert_ok(step(f), &f->st);
  assert_int_equal(count_files(f, ".safetensors"), 3); /* 0, 3, 6 */
  assert_true(ckpt_exists(f, "model.ckpt", 3));
  assert_true(ckpt_exists(f, "model.ckpt", 6));
  assert_ok(close_session(f), &f->st);
  /* C97: the final step 7 was not saved yet. */
  assert_true(ckpt_exists(f, "model.ckpt", 7));
  assert_int_equal(count_files(f, ".safetensors"), 4);
  assert_int_equal(f->l[0].before, 4);
  assert_true(f->l[0].end_step == 7);
}

static void test_checkpoint_saver_hook__c96_save_secs_with_mock_clock(void **state) {
  fixture *f = *state;

  f->o.save_steps = HK_UNSET_STEPS;
  f->o.save_secs = 10;
  open_ok(f);
  assert_ok(step(f), &f->st);
  assert_ok(step(f), &f->st);
  assert_int_equal(count_files(f, ".safetensors"), 1); /* only the creation save */
  test_clock_advance(&f->te->clock, 10.0);
  assert_ok(step(f), &f->st);
  assert_true(ckpt_exists(f, "model.ckpt", 3));
  assert_ok(step(f), &f->st);
  assert_int_equal(count_files(f, ".safetensors"), 2);
  assert_ok(close_session(f), &f->st);
  assert_true(ckpt_exists(f, "model.ckpt", 4));
}

static void test_checkpoint_saver_hook__c95_fetches_gs_every_run(void **state) {
  fixture *f = *state;
  const fake_run_record *rec;

  f->o.save_steps = 100;
  open_ok(f);
  assert_ok(step(f), &f->st);
  rec = fake_executor_last_run(f->fx);
  assert_int_equal(rec->nfetches, 1);
  assert_true(rec->fetches[0] == f->gs);
  assert_ok(step(f), &f->st);
  rec = fake_executor_last_run(f->fx);
  assert_true(rec->nfetches == 1 && rec->fetches[0] == f->gs);
}

/* C97: end() saves when the final GS was not saved, and calls listeners'
 * end with GS either way. */
static void test_checkpoint_saver_hook__c97_end_listeners_without_save(void **state) {
  fixture *f = *state;

  f->o.save_steps = 100;
  open_ok(f);
  assert_ok(close_session(f), &f->st);
  assert_int_equal(f->l[0].before, 1); /* the creation save only: GS 0 was just saved */
  assert_int_equal(f->l[0].end, 1);
  assert_int_equal(f->l[1].end, 1);
  assert_true(f->l[0].end_step == 0);
}

/* ---- C94, C96, C98: listener stop requests ------------------------------------------ */

static void test_checkpoint_saver_hook__c96_listener_stop_request(void **state) {
  fixture *f = *state;

  f->l[0].stop_at = 2;
  open_ok(f);
  assert_ok(step(f), &f->st);
  assert_false(hk_session_should_stop(f->s));
  assert_ok(step(f), &f->st); /* saves at 2: the first listener asks to stop */
  assert_true(hk_session_should_stop(f->s));
  /* C98: every listener is still called, and the request is logged by name. */
  assert_int_equal(f->l[1].after, 3);
  assert_logged(f->te, HK_LOG_INFO, "A CheckpointSaverListener requested that training be stopped. listener: first");
  assert_status(step(f), &f->st, HK_FAILED_PRECONDITION, "Run called even after should_stop requested.");
}

static void test_checkpoint_saver_hook__c94_creation_stop_request_ignored(void **state) {
  fixture *f = *state;

  f->l[1].stop_at = 0;
  f->ls[1].name = NULL; /* named by its index */
  open_ok(f);
  assert_false(hk_session_should_stop(f->s));
  assert_logged(f->te, HK_LOG_INFO,
                "A CheckpointSaverListener requested that training be stopped. listener: listener 1");
  assert_ok(step(f), &f->st);
}

/* ---- C98: failures stop the sequence ----------------------------------------------- */

static void test_checkpoint_saver_hook__c98_failing_before_save(void **state) {
  fixture *f = *state;

  open_ok(f);
  f->l[1].fail_before = HK_PERMISSION_DENIED;
  assert_status(step(f), &f->st, HK_PERMISSION_DENIED, "listener second before_save failed");
  assert_false(ckpt_exists(f, "model.ckpt", 1)); /* the save did not happen */
  assert_int_equal(f->l[0].after, 1);
}

static void test_checkpoint_saver_hook__c98_failing_after_save(void **state) {
  fixture *f = *state;

  open_ok(f);
  f->l[0].fail_after = HK_INTERNAL;
  assert_status(step(f), &f->st, HK_INTERNAL, "listener first after_save failed");
  assert_true(ckpt_exists(f, "model.ckpt", 1));
  assert_int_equal(f->l[1].after, 1); /* the second listener was not called for step 1 */
}

static void test_checkpoint_saver_hook__c97_failing_end_listener(void **state) {
  fixture *f = *state;

  open_ok(f);
  f->l[0].fail_end = HK_DATA_LOSS;
  assert_status(close_session(f), &f->st, HK_DATA_LOSS, "listener first end failed");
  assert_int_equal(f->l[1].end, 0);
}

static void test_checkpoint_saver_hook__c98_saver_error_propagates(void **state) {
  fixture *f = *state;
  faulty_fs ff;

  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &f->te->env);
  open_ok(f);
  faulty_fs_match(&ff, ".safetensors");
  faulty_fs_fail_errno(&ff, FAULTY_FS_WRITE, 0, ENOSPC, 1);
  assert_status(step(f), &f->st, HK_RESOURCE_EXHAUSTED, "safetensors");
  assert_false(ckpt_exists(f, "model.ckpt", 1));
  assert_int_equal(f->l[0].after, 1); /* after_save is not called for the failed save */
  faulty_fs_reset(&ff);
  session_close_and_free(f->s);
  f->s = NULL;
  hk_hook_free(f->hook);
  f->hook = NULL;
  assert_int_equal(faulty_fs_open_handles(&ff), 0);
  faulty_fs_destroy(&ff);
}

/* ---- C99: saver resolution --------------------------------------------------------- */

static void new_saver_of_gs_only(fixture *f) {
  static const char *const only_gs[] = {"global_step"};
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  so.env = &f->te->env;
  so.executor = fake_executor_executor(f->fx);
  so.var_list = only_gs;
  so.nvar_list = 1;
  assert_ok(hk_saver_new(&f->saver, &so, &f->st), &f->st);
}

static int ckpt_has_v(fixture *f, int64_t step) {
  char name[64];
  char *prefix;
  hk_checkpoint_reader *r = NULL;
  size_t i;
  hk_status st = HK_STATUS_INIT;
  int has;

  snprintf(name, sizeof name, "model.ckpt-%lld", (long long)step);
  prefix = test_path(f->dir, name);
  assert_ok(hk_checkpoint_reader_open(&r, &f->te->env, prefix, &st), &st);
  has = hk_checkpoint_reader_find(r, "v", &i, &st) == HK_OK;
  hk_checkpoint_reader_free(r);
  free(prefix);
  return has;
}

static void test_checkpoint_saver_hook__c99_explicit_saver(void **state) {
  fixture *f = *state;

  new_saver_of_gs_only(f);
  f->o.saver = f->saver;
  open_ok(f);
  assert_true(ckpt_exists(f, "model.ckpt", 0));
  assert_false(ckpt_has_v(f, 0)); /* the explicit Saver, not the scaffold's */
}

static void test_checkpoint_saver_hook__c99_options_scaffold_saver(void **state) {
  fixture *f = *state;
  hk_scaffold_options sco = HK_SCAFFOLD_OPTIONS_INIT;
  hk_scaffold *other = NULL;

  new_saver_of_gs_only(f);
  sco.env = &f->te->env;
  sco.saver = f->saver;
  assert_ok(hk_scaffold_new(&other, &sco, &f->st), &f->st);
  f->o.scaffold = other;
  open_ok(f); /* the session's own default scaffold saves every variable */
  assert_false(ckpt_has_v(f, 0));
  session_close_and_free(f->s);
  f->s = NULL;
  hk_scaffold_free(other);
}

static void test_checkpoint_saver_hook__c99_session_scaffold_saver(void **state) {
  fixture *f = *state;

  open_ok(f); /* neither given: the session's Scaffold's Saver, every global variable */
  assert_true(ckpt_has_v(f, 0));
}

/* C99 and C100 outside a session: the hook's callbacks called directly. */
typedef struct harness {
  hk_raw_session *rs;
  struct hk_run_context ctx;
  int64_t stale;
  hk_tensor value;
  hk_run_values values;
} harness;

static void harness_begin(fixture *f, harness *h) {
  hk_executor *ex = fake_executor_executor(f->fx);
  hk_variable_info info;

  assert_ok(hk_executor_finalize(ex, &f->st), &f->st);
  assert_ok(hk_executor_global_step(ex, &info, NULL, &f->st), &f->st);
  assert_ok(hk_raw_session_open(&h->rs, ex, &f->st), &f->st);
  assert_ok(raw_session_assign_global_step(h->rs, 0, &f->st), &f->st);
  memset(&h->ctx, 0, sizeof h->ctx);
  h->ctx.session = h->rs;
  h->value = hk_tensor_scalar_i64(&h->stale);
  memset(&h->values, 0, sizeof h->values);
  h->values.results = &h->value;
  h->values.nresults = 1;
  assert_ok(f->hook->vt->begin(f->hook->user, ex, &f->st), &f->st);
}

static hk_code harness_run(fixture *f, harness *h) {
  hk_run_request req;
  hk_code rc;
  memset(&req, 0, sizeof req);
  rc = f->hook->vt->before_run(f->hook->user, &h->ctx, &req, &f->st);
  if (rc != HK_OK) return rc;
  h->stale = fake_executor_get_i64(f->fx, NULL, f->gs);
  fake_executor_set_i64(f->fx, NULL, f->gs, h->stale + 1);
  return f->hook->vt->after_run(f->hook->user, &h->ctx, &h->values, &f->st);
}

static void harness_end(fixture *f, harness *h) {
  hk_raw_session_free(h->rs);
  h->rs = NULL;
  (void)f;
}

static void test_checkpoint_saver_hook__c100_first_after_run_saves(void **state) {
  fixture *f = *state;
  harness h;

  new_saver_of_gs_only(f);
  f->o.saver = f->saver;
  f->o.save_steps = 1000;
  f->o.nlisteners = 0;
  make_hook(f);
  harness_begin(f, &h);
  assert_ok(harness_run(f, &h), &f->st);
  assert_true(ckpt_exists(f, "model.ckpt", 1)); /* whatever the cadence */
  assert_ok(harness_run(f, &h), &f->st);
  assert_int_equal(count_files(f, ".safetensors"), 1);
  assert_ok(f->hook->vt->end(f->hook->user, h.rs, &f->st), &f->st);
  assert_true(ckpt_exists(f, "model.ckpt", 2));
  harness_end(f, &h);
}

static void test_checkpoint_saver_hook__c99_no_saver_available(void **state) {
  fixture *f = *state;
  harness h;

  f->o.nlisteners = 0;
  make_hook(f);
  harness_begin(f, &h);
  assert_status(harness_run(f, &h), &f->st, HK_FAILED_PRECONDITION,
                "No saver available: provide a saver or a scaffold.");
  harness_end(f, &h);
}

/* ---- C102: graph.txt, and no per-checkpoint companion ------------------------------ */

/* C94, C102: save_graph_def writes the executor's description once, as
 * graph.txt (hooked's own text, not a TensorFlow GraphDef, so not
 * graph.pbtxt), and nothing beside each checkpoint (no .meta: it would not
 * be a MetaGraphDef either). */
static void test_checkpoint_saver_hook__c102_graph_def_files(void **state) {
  fixture *f = *state;
  char *graph = test_path(f->dir, "graph.txt");
  char *text;
  size_t n = 0;

  open_ok(f);
  assert_ok(step(f), &f->st);
  assert_ok(close_session(f), &f->st);
  assert_true(test_path_exists(graph));
  text = test_read_file(graph, &n);
  assert_non_null(text);
  assert_non_null(strstr(text, "global_step")); /* the executor's description */
  free(text);
  assert_int_equal(count_files(f, "graph.pbtxt"), 0);
  assert_int_equal(count_files(f, ".meta"), 0);
  assert_int_equal(count_files(f, ".graph.txt"), 0);
  assert_int_equal(count_files(f, "graph.txt"), 1);
  assert_true(ckpt_exists(f, "model.ckpt", 1));
  assert_int_equal(count_files(f, ".safetensors"), 2);
  free(graph);
}

static void test_checkpoint_saver_hook__c102_no_graph_def(void **state) {
  fixture *f = *state;

  f->o.save_graph_def = 0;
  open_ok(f);
  assert_ok(step(f), &f->st);
  assert_ok(close_session(f), &f->st);
  assert_int_equal(count_files(f, "graph.txt"), 0);
  assert_int_equal(count_files(f, ".meta"), 0);
  assert_int_equal(count_files(f, ".safetensors"), 2);
}

static void test_checkpoint_saver_hook__c94_undescribed_graph_logged_once(void **state) {
  fixture *f = *state;

  fake_executor_set_unimplemented_defaults(f->fx, 1);
  /* default_op is hidden too: give the session a Scaffold whose init_fn
   * initializes GS and v through the raw session. */
  hk_scaffold_options sco = HK_SCAFFOLD_OPTIONS_INIT;
  hk_handle init = fake_executor_add_op(f->fx, "init");
  hk_handle ready = fake_executor_add_report(f->fx, "ready", FAKE_REPORT_ALL);
  hk_handle ready_local = fake_executor_add_report(f->fx, "ready_local", FAKE_REPORT_GLOBAL);
  hk_handle local_init = fake_executor_add_op(f->fx, "local_init");
  fake_executor_op_initializes(f->fx, init, FAKE_INIT_GLOBAL);
  sco.env = &f->te->env;
  sco.init_op = init;
  sco.ready_op = ready;
  sco.ready_for_local_init_op = ready_local;
  sco.local_init_op = local_init;
  assert_ok(hk_scaffold_new(&f->scaffold, &sco, &f->st), &f->st);
  open_ok(f);
  assert_ok(step(f), &f->st);
  assert_ok(close_session(f), &f->st);
  assert_int_equal(count_files(f, "graph.txt"), 0);
  assert_int_equal(count_files(f, ".meta"), 0);
  assert_int_equal(count_files(f, ".safetensors"), 2);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "does not describe its graph"), 1);
}

/* ---- C98: the CHECKPOINT event (decoded in detail by test_events) ------------------- */

/* The one event file of dir (malloc'd name). */
static char *find_event_file(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char *name = NULL;

  assert_non_null(d);
  while ((e = readdir(d)) != NULL)
    if (strstr(e->d_name, "events.out.tfevents.") != NULL) {
      assert_null(name);
      name = strdup(e->d_name);
    }
  closedir(d);
  assert_non_null(name);
  return name;
}

static int has_bytes(const char *data, size_t n, const char *needle) {
  size_t k = strlen(needle), i;
  for (i = 0; i + k <= n; i++)
    if (memcmp(data + i, needle, k) == 0) return 1;
  return 0;
}

static void test_checkpoint_saver_hook__c98_event_file_written(void **state) {
  fixture *f = *state;
  char *save_path = test_path(f->dir, "model.ckpt");
  size_t n = 0;
  char *data = NULL;

  open_ok(f);
  assert_ok(close_session(f), &f->st);
  assert_int_equal(count_files(f, "events.out.tfevents."), 1);
  {
    char *name = find_event_file(f->dir);
    char *path = test_path(f->dir, name);
    data = test_read_file(path, &n);
    free(path);
    free(name);
  }
  assert_non_null(data);
  assert_true(has_bytes(data, n, "brain.Event:2"));
  assert_true(has_bytes(data, n, save_path));
  free(data);
  free(save_path);
}

/* ---- D12: a signal stop ends with the final checkpoint --------------------------------- */

static void test_checkpoint_saver_hook__d12_signal_stop_final_save(void **state) {
  fixture *f = *state;
  int i;

  f->o.save_steps = 1000;
  open_ok(f);
  assert_ok(hk_signal_install(&f->st), &f->st);
  for (i = 0; i < 3; i++) assert_ok(step(f), &f->st);
  raise(SIGTERM);
  assert_true(hk_session_should_stop(f->s));
  assert_ok(close_session(f), &f->st);
  assert_ok(hk_signal_uninstall(&f->st), &f->st);
  assert_true(ckpt_exists(f, "model.ckpt", 3));
  assert_int_equal(f->l[0].end, 1);
}

static void test_checkpoint_saver_hook__d12_coordinator_clean_stop(void **state) {
  fixture *f = *state;

  f->o.save_steps = 1000;
  open_ok(f);
  assert_ok(step(f), &f->st);
  assert_ok(step(f), &f->st);
  hk_coordinator_request_stop(hk_session_coordinator(f->s), HK_OK, NULL);
  assert_true(hk_session_should_stop(f->s));
  assert_ok(close_session(f), &f->st);
  assert_true(ckpt_exists(f, "model.ckpt", 2));
}

/* C16: an unclean close calls no end(): no final save. */
static void test_checkpoint_saver_hook__c16_unclean_close_no_final_save(void **state) {
  fixture *f = *state;

  f->o.save_steps = 1000;
  open_ok(f);
  assert_ok(step(f), &f->st);
  assert_status(hk_session_close(f->s, HK_INTERNAL, &f->st), &f->st, HK_INTERNAL, NULL);
  assert_false(ckpt_exists(f, "model.ckpt", 1));
  assert_int_equal(f->l[0].end, 0);
}

/* H11: a hook reused by a later session starts over (begin resets). */
static void test_checkpoint_saver_hook__h11_reuse_across_sessions(void **state) {
  fixture *f = *state;

  f->o.save_steps = 1000;
  open_ok(f);
  assert_ok(step(f), &f->st);
  assert_ok(close_session(f), &f->st);
  assert_ok(open_session(f), &f->st);
  assert_ok(close_session(f), &f->st);
  assert_int_equal(f->l[0].begin, 2);
  assert_int_equal(f->l[0].end, 2);
  assert_int_equal(count_files(f, "events.out.tfevents."), 2);
}

/* C94: a re-creation (MS recovery, D2) runs after_create_session again:
 * another save at the GS of the new raw session; begin() does not rerun. */
static hk_code preempt_first_train(void *user, fake_executor *fx, const hk_run_args *args, hk_status *st) {
  fixture *f = user;
  (void)fx;
  if (args->ntargets == 0 || args->targets[0] != f->train || f->preempted) return HK_OK;
  f->preempted = 1;
  return hk_status_set(st, HK_ABORTED, "preempted");
}

static void test_checkpoint_saver_hook__c94_saves_again_after_recreation(void **state) {
  fixture *f = *state;

  f->o.save_steps = 1000;
  open_ok(f);
  assert_int_equal(f->l[0].before, 1);
  fake_executor_on_run(f->fx, preempt_first_train, f);
  assert_ok(step(f), &f->st); /* preempted, recovered, re-run */
  fake_executor_on_run(f->fx, NULL, NULL);
  assert_int_equal(fake_executor_sessions_opened(f->fx), 2);
  assert_int_equal(f->l[0].begin, 1);
  assert_int_equal(f->l[0].before, 2);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "Saving checkpoints for 0 into"), 2);
}

/* ---- C94, C97: the checkpoint a session just restored is not saved again ------------ */

/* A monitored session with the hook that restores from the hook's
 * directory at creation (C47, C68). */
static hk_code open_restoring(fixture *f) {
  hk_session_options o;
  test_session_options(&o, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(f->fx), &f->hook, 1);
  o.checkpoint_dir = f->dir;
  return hk_session_new(&f->s, &o, &f->st);
}

/* File-system calls that change something. */
static long mutating_calls(faulty_fs *ff) {
  static const int slots[] = {FAULTY_FS_CREATE_EXCL, FAULTY_FS_WRITE,  FAULTY_FS_SYNC, FAULTY_FS_SYNC_DIR,
                              FAULTY_FS_RENAME,      FAULTY_FS_UNLINK, FAULTY_FS_MKDIR};
  long n = 0;
  for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++) n += faulty_fs_calls(ff, slots[i]);
  return n;
}

/* C94 (revised), C97: a session that restored the checkpoint of GS from
 * this hook's directory does not save it again at creation: no file is
 * written or synced (graph.txt already holds the description), no
 * listener's before_save/after_save runs for it, an INFO line says why — so
 * a resume succeeds on a full disk. The timer is at GS: closing before any
 * step saves nothing either (the listeners' end still runs), and the next
 * save comes after the cadence. */
static void test_checkpoint_saver_hook__c94_restored_checkpoint_not_saved_again(void **state) {
  fixture *f = *state;
  faulty_fs ff;
  char line[1200];
  char *save_path = test_path(f->dir, "model.ckpt");
  int i;

  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &f->te->env); /* before the hook and the sessions copy the env */
  f->o.save_steps = 2;
  make_hook(f);
  assert_ok(open_restoring(f), &f->st); /* an empty directory: initialized */
  for (i = 0; i < 4; i++) assert_ok(step(f), &f->st);
  assert_ok(close_session(f), &f->st);
  assert_true(ckpt_exists(f, "model.ckpt", 4));
  assert_int_equal(f->l[0].before, 3); /* 0, 2, 4 */
  assert_int_equal(f->l[0].after, 3);

  /* a new session on a full disk restores step 4 */
  faulty_fs_reset(&ff);
  faulty_fs_space(&ff, 0);
  test_log_clear(&f->te->log);
  assert_ok(open_restoring(f), &f->st);
  assert_int_equal(fake_executor_get_i64(f->fx, NULL, f->gs), 4);
  assert_int_equal(fake_executor_get_i64(f->fx, NULL, f->v), 20);
  assert_int_equal(mutating_calls(&ff), 0);
  for (i = 0; i < 2; i++) {
    assert_int_equal(f->l[i].begin, 2);
    assert_int_equal(f->l[i].before, 3);
    assert_int_equal(f->l[i].after, 3);
  }
  snprintf(line, sizeof line, "Not saving checkpoint 4 into %s at session creation: %s-4 was just restored from it.",
           save_path, save_path);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, line), 1);
  assert_int_equal(test_log_count(&f->te->log, -1, "Saving checkpoints for"), 0);
  /* closing at once: GS 4 is not saved again (C97) */
  assert_ok(close_session(f), &f->st);
  assert_int_equal(mutating_calls(&ff), 0);
  assert_int_equal(f->l[0].before, 3);
  assert_int_equal(f->l[0].end, 2);
  assert_true(f->l[0].end_step == 4);
  assert_int_equal(count_files(f, ".safetensors"), 3);

  /* room again: the next save is at 6, the cadence after 4, not at 5 */
  faulty_fs_reset(&ff);
  assert_ok(open_restoring(f), &f->st);
  assert_int_equal(f->l[0].before, 3);
  assert_ok(step(f), &f->st);
  assert_false(ckpt_exists(f, "model.ckpt", 5));
  assert_ok(step(f), &f->st);
  assert_true(ckpt_exists(f, "model.ckpt", 6));
  assert_int_equal(f->l[0].before, 4);
  assert_ok(close_session(f), &f->st);
  assert_int_equal(f->l[0].before, 4); /* 6 was just saved (C97) */

  hk_hook_free(f->hook);
  f->hook = NULL;
  f->te->env.fs = NULL;
  f->te->env.fs_user = NULL;
  assert_int_equal(faulty_fs_open_handles(&ff), 0);
  faulty_fs_destroy(&ff);
  free(save_path);
}

/* C94: only the checkpoint of GS from this hook's own directory counts. A
 * hook saving elsewhere saves as usual at creation; so does one whose
 * directory is spelled with a trailing slash, then recognized as the same. */
static void test_checkpoint_saver_hook__c94_other_directory_still_saves(void **state) {
  fixture *f = *state;
  char *other = test_path(f->tmp, "other");
  char *slashed = malloc(strlen(f->dir) + 3);

  assert_non_null(slashed);
  f->o.save_steps = 100;
  f->o.nlisteners = 0;
  make_hook(f);
  assert_ok(open_restoring(f), &f->st);
  assert_ok(step(f), &f->st);
  assert_ok(close_session(f), &f->st); /* saved 0 and 1 */
  hk_hook_free(f->hook);
  f->hook = NULL;

  /* the session restores step 1 from f->dir; this hook writes into `other` */
  f->o.checkpoint_dir = other;
  make_hook(f);
  assert_ok(open_restoring(f), &f->st);
  assert_true(ckpt_data_exists(other, "model.ckpt", 1));
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "Not saving checkpoint"), 0);
  assert_ok(close_session(f), &f->st);
  hk_hook_free(f->hook);
  f->hook = NULL;

  /* "<dir>//" is the same directory */
  strcpy(slashed, f->dir);
  strcat(slashed, "//");
  f->o.checkpoint_dir = slashed;
  make_hook(f);
  assert_ok(open_restoring(f), &f->st);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "Not saving checkpoint 1 into"), 1);
  assert_ok(close_session(f), &f->st);
  free(other);
  free(slashed);
}

/* ---- H26, C98: the SessionLog event and the event files' writers ------------------- */

/* The hook's options without listeners, saving only at creation (and end()). */
static void events_only_options(fixture *f) {
  f->o.save_steps = 1000;
  f->o.listeners = NULL;
  f->o.nlisteners = 0;
  f->o.save_graph_def = 0;
}

static uint64_t varint(const unsigned char **p, const unsigned char *end) {
  uint64_t v = 0;
  int shift = 0;
  while (*p < end && shift < 64) {
    unsigned char b = *(*p)++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
    shift += 7;
  }
  fail_msg("truncated varint");
  return 0;
}

/*
 * C98 asks for "an event SessionLog CHECKPOINT" and H26 for TensorBoard's
 * event files. In tensorflow/core/util/event.proto the Event oneof is
 * file_version = 3, graph_def = 4, summary = 5, log_message = 6,
 * session_log = 7: the SessionLog goes under field 7 (tag (7 << 3) | 2 =
 * 0x3a), never field 6 (which TensorBoard and TF's summary_iterator read
 * as a LogMessage).
 */
static void test_checkpoint_saver_hook__h26_c98_session_log_is_event_field_7(void **state) {
  fixture *f = *state;
  char *name, *path;
  unsigned char *data;
  size_t n = 0, off = 0;
  int field6 = 0, field7 = 0;

  events_only_options(f);
  open_ok(f);
  assert_ok(close_session(f), &f->st);

  assert_int_equal(count_files(f, "tfevents"), 1);
  name = find_event_file(f->dir);
  path = test_path(f->dir, name);
  data = (unsigned char *)test_read_file(path, &n);
  assert_non_null(data);
  while (n - off >= 16) {
    uint64_t len = 0;
    const unsigned char *p, *end;
    int i;
    for (i = 7; i >= 0; i--) len = (len << 8) | data[off + (size_t)i];
    assert_true(len <= n - off - 16);
    p = data + off + 12;
    end = p + len;
    while (p < end) {
      uint64_t tag = varint(&p, end);
      switch (tag & 7) {
        case 0: (void)varint(&p, end); break;
        case 1: p += 8; break;
        case 2: {
          uint64_t l = varint(&p, end);
          if (tag >> 3 == 6) field6++;
          if (tag >> 3 == 7) field7++;
          p += l;
          break;
        }
        default: fail_msg("unexpected wire type in tag 0x%llx", (unsigned long long)tag);
      }
    }
    off += 16 + (size_t)len;
  }
  assert_int_equal(field6, 0); /* no LogMessage */
  assert_int_equal(field7, 1); /* the SessionLog CHECKPOINT of the creation save (end: GS 0 already saved) */
  free(data);
  free(path);
  free(name);
}

/*
 * H26 "one writer per directory per session, shared by the hooks writing
 * there": two hooks saving into the same checkpoint_dir in one session
 * (here two CheckpointSaverHooks with different basenames) share one event
 * file (a per-session registry of event writers keyed by directory,
 * obtained by begin(), C93), never "...<host>" and "...<host>.1".
 */
static void test_checkpoint_saver_hook__h26_one_event_file_per_directory_per_session(void **state) {
  fixture *f = *state;
  hk_hook *hooks[2] = {NULL, NULL};
  hk_session_options so;

  events_only_options(f);
  f->o.checkpoint_basename = "a.ckpt";
  make_hook(f);
  hooks[0] = f->hook;
  f->o.checkpoint_basename = "b.ckpt";
  assert_ok(hk_checkpoint_saver_hook_new(&hooks[1], &f->o, &f->st), &f->st);
  test_session_options(&so, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(f->fx), hooks, 2);
  assert_ok(hk_session_new(&f->s, &so, &f->st), &f->st);
  assert_ok(session_run_train(f->s, f->train, &f->st), &f->st);
  assert_ok(close_session(f), &f->st);
  hk_hook_free(hooks[1]);
  assert_int_equal(count_files(f, "a.ckpt-0.safetensors"), 1);
  assert_int_equal(count_files(f, "b.ckpt-0.safetensors"), 1);
  assert_int_equal(count_files(f, "tfevents"), 1);
}

/* A gate_fs (never closed) over POSIX whose observer counts fsyncs of event files. */
enum { TAG_EVENT = 1 };
static int event_syncs;

static unsigned tag_event_files(void *user, gate_fs *g, const char *path) {
  (void)user;
  (void)g;
  return strstr(path, "tfevents") != NULL ? TAG_EVENT : 0;
}

static void count_event_syncs(void *user, gate_fs *g, unsigned tag) {
  (void)user;
  (void)g;
  if (tag & TAG_EVENT) event_syncs++;
}

static const gate_fs_observer event_sync_observer = {tag_event_files, NULL, count_event_syncs};
static gate_fs event_sync_fs;

/*
 * H26: event files are "flushed by end() and at close". A close whose
 * status is not clean calls no end() (C16); the event file is flushed
 * (fsynced) all the same when the session's detach frees the event writer,
 * so the CHECKPOINT event of the creation save is made durable.
 */
static void test_checkpoint_saver_hook__h26_event_file_flushed_at_unclean_close(void **state) {
  fixture *f = *state;

  event_syncs = 0;
  gate_fs_init(&event_sync_fs, NULL, NULL);
  gate_fs_observe(&event_sync_fs, &event_sync_observer, NULL);
  f->te->env.fs = gate_fs_vtable();
  f->te->env.fs_user = &event_sync_fs;
  events_only_options(f);
  open_ok(f); /* file_version + CHECKPOINT at 0 written */
  assert_ok(session_run_train(f->s, f->train, &f->st), &f->st);
  assert_int_equal(count_files(f, "tfevents"), 1);
  assert_status(hk_session_close(f->s, HK_INTERNAL, &f->st), &f->st, HK_INTERNAL, NULL); /* no end() (C16) */
  hk_session_free(f->s);
  f->s = NULL;
  assert_true(event_syncs >= 1);
  hk_hook_free(f->hook);
  f->hook = NULL;
  f->te->env.fs = NULL;
  f->te->env.fs_user = NULL;
  gate_fs_destroy(&event_sync_fs);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_checkpoint_saver_hook__c92_validation),
      T(test_checkpoint_saver_hook__options_init),
      T(test_checkpoint_saver_hook__c92_creation_line_through_session_env),
      T(test_checkpoint_saver_hook__c93_begin_creates_dir_and_runs_listeners),
      T(test_checkpoint_saver_hook__d4_5_created_directories_are_made_durable),
      T(test_checkpoint_saver_hook__c98_failed_save_names_step_and_path),
      T(test_checkpoint_saver_hook__c93_no_global_step),
      T(test_checkpoint_saver_hook__c93_listener_begin_failure),
      T(test_checkpoint_saver_hook__c101_example),
      T(test_checkpoint_saver_hook__c98_sequence_and_logs),
      T(test_checkpoint_saver_hook__c101_save_steps_3),
      T(test_checkpoint_saver_hook__c96_save_secs_with_mock_clock),
      T(test_checkpoint_saver_hook__c95_fetches_gs_every_run),
      T(test_checkpoint_saver_hook__c97_end_listeners_without_save),
      T(test_checkpoint_saver_hook__c96_listener_stop_request),
      T(test_checkpoint_saver_hook__c94_creation_stop_request_ignored),
      T(test_checkpoint_saver_hook__c98_failing_before_save),
      T(test_checkpoint_saver_hook__c98_failing_after_save),
      T(test_checkpoint_saver_hook__c97_failing_end_listener),
      T(test_checkpoint_saver_hook__c98_saver_error_propagates),
      T(test_checkpoint_saver_hook__c99_explicit_saver),
      T(test_checkpoint_saver_hook__c99_options_scaffold_saver),
      T(test_checkpoint_saver_hook__c99_session_scaffold_saver),
      T(test_checkpoint_saver_hook__c100_first_after_run_saves),
      T(test_checkpoint_saver_hook__c99_no_saver_available),
      T(test_checkpoint_saver_hook__c102_graph_def_files),
      T(test_checkpoint_saver_hook__c102_no_graph_def),
      T(test_checkpoint_saver_hook__c94_undescribed_graph_logged_once),
      T(test_checkpoint_saver_hook__c98_event_file_written),
      T(test_checkpoint_saver_hook__d12_signal_stop_final_save),
      T(test_checkpoint_saver_hook__d12_coordinator_clean_stop),
      T(test_checkpoint_saver_hook__c16_unclean_close_no_final_save),
      T(test_checkpoint_saver_hook__h11_reuse_across_sessions),
      T(test_checkpoint_saver_hook__c94_saves_again_after_recreation),
      T(test_checkpoint_saver_hook__c94_restored_checkpoint_not_saved_again),
      T(test_checkpoint_saver_hook__c94_other_directory_still_saves),
      T(test_checkpoint_saver_hook__h26_c98_session_log_is_event_field_7),
      T(test_checkpoint_saver_hook__h26_one_event_file_per_directory_per_session),
      T(test_checkpoint_saver_hook__h26_event_file_flushed_at_unclean_close),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
