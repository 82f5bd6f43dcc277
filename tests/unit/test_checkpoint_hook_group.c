/*
 * The checkpoint saver hooks given a Saver over a group (contract H97,
 * H98): every rank of a job (here a thread of one process, joined by a
 * thread group, tests/support/thread_group.h) runs its own session with
 * the hook, as a third-party program wires sharded checkpoints. Every rank
 * saves at the same steps; rank 0 alone locks the directory and writes
 * graph.txt and the events; the creation save is skipped on every rank
 * when rank 0 restored that step's checkpoint. A rank whose listener fails
 * before a save joins that save as failed, so every rank fails it together.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <hooked/hooked.h>

#include "fake_executor.h"
#include "ckpt_fixture.h"
#include "session_fixture.h"
#include "test_env.h"
#include "thread_group.h"
#include "tmpdir.h"

#define NR 3

typedef struct rank_fx {
  int rank;
  test_env *te;
  fake_executor *fx;
  hk_handle gs, train;
  hk_saver *saver;         /* over the group */
  hk_saver *chief_restore; /* rank 0 of a resume: a Saver of its own restores the whole model */
  hk_scaffold *scaffold;
  hk_hook *hook, *sync;
  int64_t saves[16]; /* steps the listener saw saved */
  int nsaves;
  int64_t fail_step; /* the "loader" listener's before_save fails at this step; -1: never */
  /* the run */
  const char *dir;
  int async, steps, resume;
  hk_code rc;
  hk_status st;
} rank_fx;

static hk_code count_before(void *user, hk_raw_session *rs, int64_t step, hk_status *st) {
  rank_fx *x = user;
  (void)rs, (void)st;
  if (x->nsaves < 16) x->saves[x->nsaves++] = step;
  return HK_OK;
}

static const hk_checkpoint_listener_vtable counting = {HK_CHECKPOINT_LISTENER_VTABLE_VERSION, NULL, count_before, NULL,
                                                       NULL};

#define LOADER_MESSAGE "loader: the data position of this rank is lost"

static hk_code loader_before(void *user, hk_raw_session *rs, int64_t step, hk_status *st) {
  rank_fx *x = user;
  (void)rs;
  if (step != x->fail_step) return HK_OK;
  return hk_status_set(st, HK_DATA_LOSS, LOADER_MESSAGE);
}

static const hk_checkpoint_listener_vtable loader = {HK_CHECKPOINT_LISTENER_VTABLE_VERSION, NULL, loader_before, NULL,
                                                     NULL};

/* What the broadcast of a synchronous job does before the checkpoint
 * hook: every rank takes the chief's global step (the resume's, 5). */
static hk_code sync_after_create(void *user, hk_raw_session *rs, hk_coordinator *coord, hk_creation_context *ctx,
                                 hk_status *st) {
  rank_fx *x = user;
  (void)coord, (void)ctx;
  if (!x->resume || x->rank == 0) return HK_OK;
  return raw_session_assign_global_step(rs, 5, st);
}

static const hk_hook_vtable sync_vtable = {.version = HK_HOOK_VTABLE_VERSION,
                                           .after_create_session = sync_after_create};

static void rank_build(rank_fx *x, int r, thread_group *tg) {
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  memset(x, 0, sizeof *x);
  x->rank = r;
  x->fail_step = -1;
  x->te = test_env_new();
  x->te->env.log_level = HK_LOG_WARNING;
  x->fx = fake_training_executor(x->te, NULL, &x->gs, &x->train);
  so.env = &x->te->env;
  so.executor = fake_executor_executor(x->fx);
  so.max_to_keep = 0;
  so.group = thread_group_vtable();
  so.group_user = &tg->members[r];
  assert_ok(hk_saver_new(&x->saver, &so, &st), &st);
}

static void rank_free(rank_fx *x) {
  hk_hook_free(x->hook);
  hk_hook_free(x->sync);
  hk_scaffold_free(x->scaffold);
  hk_saver_free(x->saver);
  hk_saver_free(x->chief_restore);
  fake_executor_free(x->fx);
  test_env_free(x->te);
}

static void *rank_main(void *arg) {
  rank_fx *x = arg;
  hk_checkpoint_saver_options co = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
  hk_checkpoint_listener l[2] = {{&counting, x, "count"}, {&loader, x, "loader"}};
  hk_session_options so;
  hk_session *s = NULL;
  hk_hook *hooks[2];

  co.env = &x->te->env;
  co.checkpoint_dir = x->dir;
  co.save_steps = 2;
  co.saver = x->saver;
  co.listeners = l;
  co.nlisteners = 2;
  x->rc = x->async ? hk_async_checkpoint_saver_hook_new(&x->hook, &co, &x->st)
                   : hk_checkpoint_saver_hook_new(&x->hook, &co, &x->st);
  if (x->rc == HK_OK) x->rc = hk_hook_new(&x->sync, &sync_vtable, x, "sync", &x->te->env, &x->st);
  if (x->rc != HK_OK) return NULL;
  hooks[0] = x->sync;
  hooks[1] = x->hook;
  hk_session_options_init(&so, HK_SESSION_OPTIONS_VERSION);
  test_session_options(&so, &x->te->env, HK_SESSION_SINGULAR, fake_executor_executor(x->fx), hooks, 2);
  if (x->resume && x->rank == 0) { /* the chief restores, the broadcast gives the others its step */
    hk_saver_options ro = HK_SAVER_OPTIONS_INIT;
    hk_scaffold_options fo = HK_SCAFFOLD_OPTIONS_INIT;
    ro.env = &x->te->env;
    ro.executor = fake_executor_executor(x->fx);
    x->rc = hk_saver_new(&x->chief_restore, &ro, &x->st);
    fo.env = &x->te->env;
    fo.saver = x->chief_restore;
    if (x->rc == HK_OK) x->rc = hk_scaffold_new(&x->scaffold, &fo, &x->st);
    so.scaffold = x->scaffold;
    so.checkpoint_dir = x->dir;
    if (x->rc != HK_OK) return NULL;
  }
  x->rc = hk_session_new(&s, &so, &x->st);
  for (int i = 0; x->rc == HK_OK && i < x->steps; i++) x->rc = session_run_train(s, x->train, &x->st);
  if (s != NULL) {
    hk_status cst = HK_STATUS_INIT;
    hk_code crc = hk_session_close(s, x->rc == HK_OK ? HK_OK : x->rc, &cst);
    if (x->rc == HK_OK && crc != HK_OK) {
      x->rc = crc;
      x->st = cst;
    }
    hk_session_free(s);
  }
  return NULL;
}

/* Every rank's session on its own thread, joined before returning. */
static void run_ranks(rank_fx *x, int n) { assert_int_equal(thread_group_run(rank_main, x, sizeof x[0], n), 0); }

static void run_all(rank_fx *x, int n) {
  run_ranks(x, n);
  for (int r = 0; r < n; r++)
    if (x[r].rc != HK_OK) fail_msg("rank %d: %s: %s", r, hk_code_name(x[r].rc), x[r].st.message);
}

/* A job of NR ranks on `tg` saving into `dir` for `steps` steps, and its end. */
static void job_build(rank_fx *x, thread_group *tg, const char *dir, int async, int64_t steps) {
  thread_group_init(tg, NR);
  for (int r = 0; r < NR; r++) {
    rank_build(&x[r], r, tg);
    x[r].dir = dir;
    x[r].async = async;
    x[r].steps = steps;
  }
}

static void job_free(rank_fx *x, thread_group *tg) {
  for (int r = 0; r < NR; r++) rank_free(&x[r]);
  thread_group_destroy(tg);
}

static void run_job(int async) {
  char *tmp = test_tmpdir_new("ckpt-hook-group");
  char *dir = test_path(tmp, "ckpt");
  thread_group tg;
  rank_fx x[NR];

  /* A fresh job: saves at creation (0), every 2 steps and at the end (5),
   * on every rank; rank 0's event file and graph.txt alone. */
  job_build(x, &tg, dir, async, 5);
  run_all(x, NR);
  for (int r = 0; r < NR; r++) {
    static const int64_t want[] = {0, 2, 4, 5};
    assert_int_equal(x[r].nsaves, 4);
    assert_memory_equal(x[r].saves, want, sizeof want);
    for (int64_t s = 0; s <= 5; s++) assert_int_equal(ckpt_shard_exists(dir, s, r, NR), s == 0 || s % 2 == 0 || s == 5);
  }
  assert_int_equal(ckpt_count_entries(dir, "events.out.tfevents."), 1);
  assert_int_equal(ckpt_count_entries(dir, "graph.txt"), 1);
  job_free(x, &tg);

  /* A resume in which rank 0 alone restores checkpoint 5: no rank saves
   * at creation; all save at 7 and none again at the end. */
  job_build(x, &tg, dir, async, 2);
  for (int r = 0; r < NR; r++) x[r].resume = 1;
  run_all(x, NR);
  for (int r = 0; r < NR; r++) {
    assert_int_equal(x[r].nsaves, 1);
    assert_int_equal(x[r].saves[0], 7);
    assert_true(ckpt_shard_exists(dir, 7, r, NR));
    assert_false(ckpt_shard_exists(dir, 6, r, NR));
  }
  assert_int_equal(ckpt_count_entries(dir, "events.out.tfevents."), 2);
  job_free(x, &tg);
  free(dir);
  test_tmpdir_free(tmp);
}

static void test_checkpoint_hook_group__every_rank_saves_at_the_same_steps_rank0_writes_events(void **state) {
  (void)state;
  run_job(0);
}

static void test_checkpoint_hook_group__async_hook_saves_at_the_same_steps_on_every_rank(void **state) {
  (void)state;
  run_job(1);
}

/* H104: the listener of rank 1 fails before the save of step 2. Rank 1
 * joins that save as failed instead of skipping it: every rank's session
 * fails from that save (the asynchronous hook's other ranks at a later
 * after_run, when their write's failure is processed), rank 1 with its
 * listener's error and ranks 0 and 2 naming rank 1 and the listener's
 * message; no rank waits for another, and checkpoint 0 stays the latest.
 * Without the join, ranks 0 and 2 would wait in the save's exchange until
 * the thread group's deadline and fail with it instead. */
static void run_failing_listener(int async) {
  char *tmp = test_tmpdir_new("ckpt-hook-group-fail");
  char *dir = test_path(tmp, "ckpt");
  thread_group tg;
  rank_fx x[NR];
  hk_checkpoint_state *cs = NULL;
  hk_status st = HK_STATUS_INIT;

  job_build(x, &tg, dir, async, 5);
  x[1].fail_step = 2;
  run_ranks(x, NR);
  assert_int_equal(x[1].rc, HK_DATA_LOSS);
  assert_string_equal(x[1].st.message, LOADER_MESSAGE);
  for (int r = 0; r < NR; r += 2) {
    assert_int_equal(x[r].rc, HK_DATA_LOSS);
    assert_non_null(strstr(x[r].st.message, "rank 1 of 3: " LOADER_MESSAGE));
  }
  for (int r = 0; r < NR; r++) {
    assert_true(ckpt_shard_exists(dir, 0, r, NR));
    assert_false(ckpt_shard_exists(dir, 2, r, NR));
    assert_false(ckpt_shard_exists(dir, 4, r, NR));
  }
  assert_ok(hk_checkpoint_state_get(&cs, NULL, dir, NULL, &st), &st);
  assert_non_null(strstr(hk_checkpoint_state_model_path(cs), "model.ckpt-0"));
  hk_checkpoint_state_free(cs);
  job_free(x, &tg);
  free(dir);
  test_tmpdir_free(tmp);
}

static void test_checkpoint_hook_group__a_listener_failing_on_one_rank_fails_that_save_on_every_rank(void **state) {
  (void)state;
  run_failing_listener(0);
}

static void test_checkpoint_hook_group__async_hook_fails_the_save_on_every_rank_when_one_listener_fails(void **state) {
  (void)state;
  run_failing_listener(1);
}

/* H97: a clock cadence and best-k retention are refused with a grouped
 * Saver, naming the option. */
static void test_checkpoint_hook_group__refuses_save_secs_and_best_k(void **state) {
  (void)state;
  thread_group tg;
  rank_fx x;
  hk_checkpoint_saver_options co = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
  hk_hook *hook = NULL;
  hk_status st = HK_STATUS_INIT;

  thread_group_init(&tg, 2);
  rank_build(&x, 0, &tg);
  co.checkpoint_dir = "unused";
  co.saver = x.saver;
  co.save_secs = 30;
  assert_int_equal(hk_checkpoint_saver_hook_new(&hook, &co, &st), HK_INVALID_ARGUMENT);
  assert_non_null(strstr(st.message, "save_secs"));
  assert_int_equal(hk_async_checkpoint_saver_hook_new(&hook, &co, &st), HK_INVALID_ARGUMENT);
  assert_non_null(strstr(st.message, "save_secs"));
  co.save_secs = HK_UNSET_SECS;
  co.save_steps = 10;
  co.best_k = 2;
  co.best_metric = "v";
  assert_int_equal(hk_checkpoint_saver_hook_new(&hook, &co, &st), HK_INVALID_ARGUMENT);
  assert_non_null(strstr(st.message, "best_k"));
  assert_null(hook);
  rank_free(&x);
  thread_group_destroy(&tg);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_checkpoint_hook_group__every_rank_saves_at_the_same_steps_rank0_writes_events),
      cmocka_unit_test(test_checkpoint_hook_group__async_hook_saves_at_the_same_steps_on_every_rank),
      cmocka_unit_test(test_checkpoint_hook_group__a_listener_failing_on_one_rank_fails_that_save_on_every_rank),
      cmocka_unit_test(test_checkpoint_hook_group__async_hook_fails_the_save_on_every_rank_when_one_listener_fails),
      cmocka_unit_test(test_checkpoint_hook_group__refuses_save_secs_and_best_k),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
