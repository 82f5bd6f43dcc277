/*
 * A host loop over a group (hooked/loop.h, hk_loop_options.group;
 * contract H99-H102): the ranks of one job, here threads of one process
 * joined by a thread group (tests/support/thread_group.h), each with its
 * own loop over its own arrays, save sharded checkpoints at the loop's
 * cadence and resume from them with the same or another rank count.
 *
 * The program: "w" F32 [6] and the global step are replicated (the same on
 * every rank); "seen" I64 [2] (an array) and "rng" (an opaque state) are
 * per rank (HK_LOOP_PER_RANK) and hold values of the rank's own.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hooked/hooked.h>

#include "faulty_fs.h"
#include "ckpt_fixture.h"
#include "test_env.h"
#include "thread_group.h"
#include "tmpdir.h"

#define MAXR 4

typedef struct rank_prog {
  int rank, nranks;
  float w[6];
  int64_t seen[2];
  uint64_t rng;
  /* the rank's env (its log counts, its file system) */
  hk_env env;
  faulty_fs ff;
  int faulty;
  pthread_mutex_t mu;
  int per_rank_warnings; /* WARNING lines naming a per-rank array or state */
  /* the run and its outcome */
  const hk_loop_options *base;
  thread_group_member *member;
  hk_code start_rc, run_rc, finish_rc;
  hk_status st;
  int64_t start_step, end_step;
  int restored;
  int64_t stop_failed_at; /* the global step whose step_end failed; -1: none */
} rank_prog;

static void rank_log(void *user, hk_log_level level, const char *msg) {
  rank_prog *p = user;
  if (level != HK_LOG_WARNING) return;
  pthread_mutex_lock(&p->mu);
  if (strstr(msg, "per-rank variable") && (strstr(msg, "seen") || strstr(msg, "rng"))) p->per_rank_warnings++;
  pthread_mutex_unlock(&p->mu);
}

static hk_code rng_save(void *user, void *dst, size_t size, hk_status *st) {
  (void)st;
  memcpy(dst, user, size);
  return HK_OK;
}

static hk_code rng_restore(void *user, const void *src, size_t size, hk_status *st) {
  (void)st;
  memcpy(user, src, size);
  return HK_OK;
}

/* The program's own initial values: "w" replicated, the rest the rank's. */
static void prog_init(rank_prog *p, int rank, int nranks, int seed) {
  memset(p, 0, sizeof *p);
  p->rank = rank;
  p->nranks = nranks;
  for (int i = 0; i < 6; i++) p->w[i] = (float)(seed + i);
  p->seen[0] = 1000 * (rank + 1) + seed;
  p->seen[1] = -p->seen[0];
  p->rng = 0x9e3779b97f4a7c15ull * (uint64_t)(rank + 1) + (uint64_t)seed;
  p->stop_failed_at = -1;
  pthread_mutex_init(&p->mu, NULL);
  hk_env_init(&p->env, HK_ENV_VERSION);
  p->env.log = rank_log;
  p->env.log_user = p;
  p->env.log_level = HK_LOG_WARNING;
  faulty_fs_init(&p->ff);
  faulty_fs_bind(&p->ff, &p->env);
}

static void prog_free(rank_prog *p) {
  faulty_fs_destroy(&p->ff);
  pthread_mutex_destroy(&p->mu);
}

/* One step of the program: "w" moves the same on every rank, the per-rank
 * values the rank's own way. */
static void prog_step(rank_prog *p) {
  for (int i = 0; i < 6; i++) p->w[i] += 0.5f * (float)(i + 1);
  p->seen[0] += p->rank + 1;
  p->seen[1] -= 1;
  p->rng = p->rng * 6364136223846793005ull + 1442695040888963407ull;
}

static void *rank_main(void *arg) {
  rank_prog *p = arg;
  hk_loop_options o = *p->base;
  hk_loop *loop = NULL;
  hk_status st = HK_STATUS_INIT;
  static const int64_t w_dims[1] = {6}, seen_dims[1] = {2};

  o.env = &p->env;
  o.group_user = p->member;
  p->start_rc = hk_loop_new(&loop, &o, &st);
  if (p->start_rc == HK_OK) p->start_rc = hk_loop_add_array(loop, "w", HK_DTYPE_F32, 1, w_dims, p->w, 0, &st);
  if (p->start_rc == HK_OK)
    p->start_rc = hk_loop_add_array(loop, "seen", HK_DTYPE_I64, 1, seen_dims, p->seen, HK_LOOP_PER_RANK, &st);
  if (p->start_rc == HK_OK)
    p->start_rc = hk_loop_add_state(loop, "rng", sizeof p->rng, rng_save, rng_restore, &p->rng, HK_LOOP_PER_RANK, &st);
  if (p->start_rc == HK_OK) p->start_rc = hk_loop_start(loop, &p->start_step, &st);
  if (p->start_rc != HK_OK) {
    p->st = st;
    hk_loop_finish(loop, NULL);
    hk_loop_free(loop);
    return NULL;
  }
  p->restored = hk_loop_restored_checkpoint(loop) != NULL;
  p->run_rc = HK_OK;
  while (!hk_loop_should_stop(loop)) {
    if (hk_loop_step_begin(loop, NULL, &st) != HK_OK) break;
    prog_step(p);
    if (hk_loop_step_end(loop, &st) != HK_OK) {
      p->stop_failed_at = hk_loop_global_step(loop);
      break;
    }
  }
  p->end_step = hk_loop_global_step(loop);
  p->finish_rc = hk_loop_finish(loop, &st);
  p->st = st;
  hk_loop_free(loop);
  return NULL;
}

typedef struct job {
  thread_group tg;
  int n;
  rank_prog p[MAXR];
} job;

/* Every rank of an n-rank job runs `o` on its own thread from `seed`'s
 * initial values; joined before returning. `prepare` (may be NULL) adjusts
 * a rank's program before it starts. */
static void run_job(job *j, int n, const hk_loop_options *o, int seed, void (*prepare)(rank_prog *)) {
  thread_group_init(&j->tg, n);
  j->n = n;
  for (int r = 0; r < n; r++) {
    prog_init(&j->p[r], r, n, seed);
    j->p[r].base = o;
    j->p[r].member = &j->tg.members[r];
    if (prepare) prepare(&j->p[r]);
  }
  assert_int_equal(thread_group_run(rank_main, j->p, sizeof j->p[0], n), 0);
}

static void job_free(job *j) {
  for (int r = 0; r < j->n; r++) prog_free(&j->p[r]);
  thread_group_destroy(&j->tg);
}

static hk_loop_options group_options(const char *dir, int64_t save_steps, int64_t last_step) {
  hk_loop_options o = HK_LOOP_OPTIONS_INIT;
  o.checkpoint_dir = dir;
  o.save_steps = save_steps;
  o.last_step = last_step;
  o.max_to_keep = 0; /* keep all: the test lists them */
  o.handle_signals = 0;
  o.group = thread_group_vtable();
  return o;
}

static int committed(const char *dir, int64_t step) {
  char prefix[1024];
  snprintf(prefix, sizeof prefix, "%s/model.ckpt-%" PRId64, dir, step);
  return hk_checkpoint_exists(NULL, prefix);
}

/* The values of `w` after `steps` steps from `seed`'s. */
static void w_after(float w[6], int seed, int64_t steps) {
  for (int i = 0; i < 6; i++) {
    w[i] = (float)(seed + i);
    for (int64_t k = 0; k < steps; k++) w[i] += 0.5f * (float)(i + 1);
  }
}

static void assert_all_ok(job *j) {
  for (int r = 0; r < j->n; r++) {
    if (j->p[r].start_rc != HK_OK || j->p[r].finish_rc != HK_OK)
      fail_msg("rank %d: start %s, finish %s: %s", r, hk_code_name(j->p[r].start_rc), hk_code_name(j->p[r].finish_rc),
               j->p[r].st.message);
  }
}

/* H99, H100: 3 ranks save sharded checkpoints at the loop's cadence (every
 * rank its shard, at creation, every 2 steps and at the end), rank 0 alone
 * holds the directory lock and writes the events; 2 ranks resume from
 * them with the same global model, and their per-rank array and state keep
 * the program's values with a WARNING. */
static void test_loop_group__saves_sharded_checkpoints_and_resumes_on_fewer_ranks(void **state) {
  (void)state;
  char *dir = test_tmpdir_new("loop-group");
  hk_loop_options o = group_options(dir, 2, 5);
  job j;

  run_job(&j, 3, &o, 1, NULL);
  assert_all_ok(&j);
  for (int r = 0; r < 3; r++) {
    assert_int_equal(j.p[r].end_step, 5);
    assert_false(j.p[r].restored);
  }
  for (int64_t s = 0; s <= 5; s++) {
    const int due = s == 0 || s == 2 || s == 4 || s == 5;
    assert_int_equal(committed(dir, s), due);
    for (int r = 0; r < 3; r++) assert_int_equal(ckpt_shard_exists(dir, s, r, 3), due);
  }
  /* Rank 0's event file alone (its StepCounter and CHECKPOINT events). */
  assert_int_equal(ckpt_count_entries(dir, "events.out.tfevents."), 1);
  job_free(&j);

  /* Resume on 2 ranks from other initial values: the global model comes
   * back, the per-rank values stay the program's. */
  o.last_step = 7;
  run_job(&j, 2, &o, 50, NULL);
  assert_all_ok(&j);
  float want[6];
  w_after(want, 1, 7); /* 5 steps of the first job, 2 of this one */
  for (int r = 0; r < 2; r++) {
    assert_true(j.p[r].restored);
    assert_int_equal(j.p[r].start_step, 5);
    assert_int_equal(j.p[r].end_step, 7);
    assert_memory_equal(j.p[r].w, want, sizeof want);
    /* The program's own "seen" after 2 steps from seed 50. */
    assert_int_equal(j.p[r].seen[0], 1000 * (r + 1) + 50 + 2 * (r + 1));
    assert_true(j.p[r].per_rank_warnings >= 2); /* "seen" and "rng" */
  }
  assert_true(committed(dir, 7));
  assert_true(ckpt_shard_exists(dir, 7, 0, 2) && ckpt_shard_exists(dir, 7, 1, 2));
  /* This run's rank 0 opened an event file of its own; no other rank did. */
  assert_int_equal(ckpt_count_entries(dir, "events.out.tfevents."), 2);
  job_free(&j);
  test_tmpdir_free(dir);
}

/* H100: with the rank count that saved them, per-rank arrays and states
 * come back per rank, not the program's values nor another rank's. */
static void test_loop_group__per_rank_values_come_back_per_rank_at_the_same_rank_count(void **state) {
  (void)state;
  char *dir = test_tmpdir_new("loop-group-rank");
  hk_loop_options o = group_options(dir, 3, 3);
  job j;
  int64_t seen[3];
  uint64_t rng[3];

  run_job(&j, 3, &o, 7, NULL);
  assert_all_ok(&j);
  for (int r = 0; r < 3; r++) {
    seen[r] = j.p[r].seen[0];
    rng[r] = j.p[r].rng;
  }
  job_free(&j);

  o.last_step = 3; /* resume at the end: no step runs */
  run_job(&j, 3, &o, 90, NULL);
  assert_all_ok(&j);
  for (int r = 0; r < 3; r++) {
    assert_true(j.p[r].restored);
    assert_int_equal(j.p[r].seen[0], seen[r]);
    assert_true(j.p[r].rng == rng[r]);
    assert_int_equal(j.p[r].per_rank_warnings, 0);
  }
  job_free(&j);
  test_tmpdir_free(dir);
}

/* H101: asynchronous checkpoints over a group save at exactly the
 * cadence's steps on every rank (a save that falls due while one is in
 * flight waits for it). */
static void test_loop_group__async_saves_at_exactly_the_cadence_on_every_rank(void **state) {
  (void)state;
  char *dir = test_tmpdir_new("loop-group-async");
  hk_loop_options o = group_options(dir, 3, 10);
  job j;

  o.async_checkpoint = 1;
  run_job(&j, 3, &o, 3, NULL);
  assert_all_ok(&j);
  for (int64_t s = 0; s <= 10; s++) {
    const int due = s % 3 == 0 || s == 10;
    assert_int_equal(committed(dir, s), due);
    for (int r = 0; r < 3; r++) assert_int_equal(ckpt_shard_exists(dir, s, r, 3), due);
  }
  assert_int_equal(ckpt_count_entries(dir, "events.out.tfevents."), 1);
  job_free(&j);
  test_tmpdir_free(dir);
}

/* Rank 1's file system fails the writes of its shard of checkpoint 4. */
static void fail_rank1_at_4(rank_prog *p) {
  if (p->rank != 1) return;
  faulty_fs_match(&p->ff, "model.ckpt-4.shard-00001");
  faulty_fs_fail_errno(&p->ff, FAULTY_FS_ANY, 0, EIO, 1);
}

/* H102: a rank that cannot write its shard fails the save on every rank:
 * each rank's loop fails at that step and none waits for ever; the
 * checkpoint is not committed and the one before stays the newest. */
static void test_loop_group__a_failing_rank_fails_the_save_on_every_rank(void **state) {
  (void)state;
  char *dir = test_tmpdir_new("loop-group-fail");
  hk_loop_options o = group_options(dir, 2, 8);
  job j;
  for (int async = 0; async <= 1; async++) {
    o.async_checkpoint = async;
    run_job(&j, 3, &o, 5, fail_rank1_at_4);
    for (int r = 0; r < 3; r++) {
      assert_int_equal(j.p[r].start_rc, HK_OK);
      assert_int_not_equal(j.p[r].finish_rc, HK_OK);
      assert_true(j.p[r].stop_failed_at >= 4);
      assert_true(j.p[r].end_step < 8);
    }
    assert_true(committed(dir, 2));
    assert_false(committed(dir, 4));
    job_free(&j);
    test_tmpdir_remove(dir);
    mkdir(dir, 0700);
  }
  test_tmpdir_free(dir);
}

/* H99: the options and registrations a group refuses, each named. */
static void test_loop_group__refuses_a_clock_cadence_best_k_and_bad_flags(void **state) {
  (void)state;
  thread_group tg;
  hk_loop *loop = NULL;
  hk_status st = HK_STATUS_INIT;
  hk_loop_options o = group_options("unused-dir", HK_UNSET_STEPS, HK_UNSET_STEPS);
  static const int64_t d1[1] = {4}, d2[2] = {2, 2};
  float a[4] = {0};

  thread_group_init(&tg, 2);
  o.group_user = &tg.members[0];
  o.save_secs = 60;
  assert_int_equal(hk_loop_new(&loop, &o, &st), HK_INVALID_ARGUMENT);
  assert_non_null(strstr(st.message, "save_secs"));
  assert_null(loop);
  o.save_secs = HK_UNSET_SECS; /* the default cadence is a clock's too */
  assert_int_equal(hk_loop_new(&loop, &o, &st), HK_INVALID_ARGUMENT);
  assert_non_null(strstr(st.message, "save_steps"));
  o.save_steps = 10;
  o.best_k = 2;
  o.best_metric = "w";
  assert_int_equal(hk_loop_new(&loop, &o, &st), HK_INVALID_ARGUMENT);
  assert_non_null(strstr(st.message, "best_k"));
  o.best_k = 0;
  o.best_metric = NULL;
  o.group_user = NULL;
  o.group = NULL;
  o.group_user = &tg;
  assert_int_equal(hk_loop_new(&loop, &o, &st), HK_INVALID_ARGUMENT);
  assert_non_null(strstr(st.message, "group_user"));

  o.group = thread_group_vtable();
  o.group_user = &tg.members[1];
  assert_ok(hk_loop_new(&loop, &o, &st), &st);
  assert_int_equal(hk_loop_add_array(loop, "m", HK_DTYPE_F32, 2, d2, a, HK_LOOP_PARTITIONED, &st), HK_INVALID_ARGUMENT);
  assert_non_null(strstr(st.message, "'m'"));
  assert_non_null(strstr(st.message, "one-dimensional"));
  assert_int_equal(hk_loop_add_array(loop, "m", HK_DTYPE_F32, 1, d1, a, HK_LOOP_PARTITIONED | HK_LOOP_PER_RANK, &st),
                   HK_INVALID_ARGUMENT);
  assert_non_null(strstr(st.message, "exclude each other"));
  assert_int_equal(hk_loop_add_state(loop, "s", 4, rng_save, rng_restore, a, HK_LOOP_PARTITIONED, &st),
                   HK_INVALID_ARGUMENT);
  assert_non_null(strstr(st.message, "'s'"));
  assert_int_equal(hk_loop_add_array(loop, "lr", HK_DTYPE_F32, 1, d1, a, HK_LOOP_PER_RANK | HK_LOOP_NO_CHECKPOINT, &st),
                   HK_INVALID_ARGUMENT);
  /* Accepted: a 1-D partitioned array, a per-rank array and state. */
  assert_ok(hk_loop_add_array(loop, "m", HK_DTYPE_F32, 1, d1, a, HK_LOOP_PARTITIONED, &st), &st);
  assert_ok(hk_loop_add_array(loop, "v", HK_DTYPE_F32, 1, d1, a, HK_LOOP_PER_RANK, &st), &st);
  assert_ok(hk_loop_add_state(loop, "s", 4, rng_save, rng_restore, a, HK_LOOP_PER_RANK, &st), &st);
  hk_loop_free(loop);
  thread_group_destroy(&tg);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_loop_group__saves_sharded_checkpoints_and_resumes_on_fewer_ranks),
      cmocka_unit_test(test_loop_group__per_rank_values_come_back_per_rank_at_the_same_rank_count),
      cmocka_unit_test(test_loop_group__async_saves_at_exactly_the_cadence_on_every_rank),
      cmocka_unit_test(test_loop_group__a_failing_rank_fails_the_save_on_every_rank),
      cmocka_unit_test(test_loop_group__refuses_a_clock_cadence_best_k_and_bad_flags),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
