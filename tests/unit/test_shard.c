/*
 * Sharded checkpoints (checkpoint-format.md "Sharded checkpoints"; contract
 * D16-D21): several ranks of one job, here threads of one process joined by
 * a thread group (tests/support/thread_group.h), each with its own model
 * and Saver, save one checkpoint together and restore it with the same or
 * another rank count.
 *
 * The model: replicated "w" F32 [5, 7], "b" F64 [3], "empty" F32 [0] and the
 * global step; per-rank "rng" U8 [16] and "pos" I64 [] (per_rank_list).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <hooked/hooked.h>
#include <hooked/checkpoint.h>
#include <hooked/graph.h>

#include "ckpt_fixture.h"
#include "graph_fixture.h"
#include "faulty_fs.h"
#include "test_env.h"
#include "thread_group.h"
#include "tmpdir.h"

#define MAXR 8

static const char *const per_rank[3] = {"rng", "pos", "b"};
/* How many of per_rank the jobs' Savers list (3: "b" is per rank too). */
static size_t g_nper_rank = 2;

typedef enum op { OP_SAVE, OP_RESTORE, OP_RESTORE_LATEST } op;

typedef struct rank_fx {
  int rank;
  hk_env env;
  faulty_fs ff;
  hk_graph *g;
  hk_executor *ex;
  hk_raw_session *rs;
  hk_saver *saver;
  /* the job a thread runs, and its outcome */
  op what;
  int64_t step;
  const char *path;
  hk_code rc;
  hk_status st;
  char restored[512];
  int warned_per_rank; /* WARNING lines about per-rank variables keeping their values */
  /* OP_SAVE on this rank fails its part instead (hk_saver_fail_save()) */
  int fails;
  hk_code fail_code;
  const char *fail_message;
} rank_fx;

typedef struct job {
  thread_group tg;
  int n;
  rank_fx r[MAXR];
  char *root, *dir, *save_path;
} job;

static void count_log(void *user, hk_log_level level, const char *msg) {
  rank_fx *r = user;
  if (level == HK_LOG_WARNING && strstr(msg, "per-rank variable")) r->warned_per_rank++;
}

/* Rank r of an n-rank job over dir. */
static void rank_build(job *j, int r) {
  static const int64_t w_dims[2] = {5, 7}, b_dims[1] = {3}, e_dims[1] = {0}, rng_dims[1] = {16};
  rank_fx *x = &j->r[r];
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_handle h;
  memset(x, 0, sizeof *x);
  x->rank = r;
  hk_env_init(&x->env, HK_ENV_VERSION);
  x->env.log = count_log;
  x->env.log_user = x;
  faulty_fs_init(&x->ff);
  faulty_fs_bind(&x->ff, &x->env);
  go.env = &x->env;
  assert_ok(hk_graph_new(&x->g, &go, &st), &st);
  x->ex = hk_graph_executor(x->g);
  graph_fixture_variable(x->g, "w", HK_DTYPE_F32, 2, w_dims);
  graph_fixture_variable(x->g, "b", HK_DTYPE_F64, 1, b_dims);
  graph_fixture_variable(x->g, "empty", HK_DTYPE_F32, 1, e_dims);
  assert_ok(hk_graph_create_global_step(x->g, &h, &st), &st);
  graph_fixture_variable(x->g, "rng", HK_DTYPE_U8, 1, rng_dims);
  graph_fixture_variable(x->g, "pos", HK_DTYPE_I64, 0, NULL);
  assert_ok(hk_raw_session_open(&x->rs, x->ex, &st), &st);
  so.executor = x->ex;
  so.max_to_keep = 2;
  so.group = thread_group_vtable();
  so.group_user = &j->tg.members[r];
  so.per_rank_list = per_rank;
  so.nper_rank_list = g_nper_rank;
  assert_ok(hk_saver_new(&x->saver, &so, &st), &st);
}

static void rank_free(rank_fx *x) {
  hk_saver_free(x->saver);
  hk_raw_session_free(x->rs);
  hk_graph_free(x->g);
  faulty_fs_destroy(&x->ff);
}

static void job_new(job *j, int n, const char *tag, int reuse_dir) {
  if (!reuse_dir) ckpt_dir_new(tag, &j->root, &j->dir, &j->save_path);
  thread_group_init(&j->tg, n);
  j->n = n;
  for (int r = 0; r < n; r++) rank_build(j, r);
}

static void job_end(job *j) {
  for (int r = 0; r < j->n; r++) rank_free(&j->r[r]);
  thread_group_destroy(&j->tg);
}

/* Byte k of variable `name`'s value for `seed`; per-rank variables also
 * depend on the rank. Floats keep a small exponent (finite values). */
static unsigned char byte_of(const char *name, int seed, int rank, size_t k) {
  unsigned char b = (unsigned char)(seed * 37 + (int)k * 11 + (int)strlen(name) * 5 + rank * 101);
  if (strcmp(name, "w") == 0 && k % 4 == 3) b &= 0x3f;
  if (strcmp(name, "b") == 0 && k % 8 == 7) b &= 0x3f;
  return b;
}

static void set_all(rank_fx *x, int seed, int64_t gs) {
  hk_status st = HK_STATUS_INIT;
  for (size_t i = 0; i < hk_executor_variable_count(x->ex); i++) {
    hk_variable_info info;
    hk_tensor t;
    unsigned char buf[512];
    assert_ok(hk_executor_variable_info(&info, x->ex, i, &st), &st);
    assert_ok(hk_tensor_init(&t, info.dtype, info.rank, info.dims, buf, &st), &st);
    int pr = strcmp(info.name, "rng") == 0 || strcmp(info.name, "pos") == 0;
    for (size_t k = 0; k < t.nbytes; k++) buf[k] = byte_of(info.name, seed, pr ? x->rank : 0, k);
    if (strcmp(info.name, "global_step") == 0) memcpy(buf, &gs, sizeof gs);
    assert_ok(hk_raw_session_assign_variable(x->rs, i, &t, &st), &st);
  }
}

/* 1 when variable `name` holds seed's value for `rank`. */
static int holds(rank_fx *x, const char *name, int seed, int rank) {
  hk_status st = HK_STATUS_INIT;
  size_t idx;
  hk_tensor t;
  if (hk_executor_find_variable(x->ex, name, &idx, &st) != HK_OK) return 0;
  if (hk_raw_session_read_variable(&t, x->rs, idx, &st) != HK_OK) return 0;
  for (size_t k = 0; k < t.nbytes; k++)
    if (((const unsigned char *)t.data)[k] != byte_of(name, seed, rank, k)) return 0;
  return 1;
}

static int64_t gs_of(rank_fx *x) {
  hk_status st = HK_STATUS_INIT;
  int64_t gs = -1;
  assert_ok(hk_raw_session_global_step(&gs, x->rs, &st), &st);
  return gs;
}

static void *rank_main(void *arg) {
  rank_fx *x = arg;
  const char *p = NULL;
  hk_status_clear(&x->st);
  x->restored[0] = '\0';
  switch (x->what) {
    case OP_SAVE:
      x->rc = x->fails ? hk_saver_fail_save(x->saver, x->path, x->step, x->fail_code, x->fail_message, &x->st)
                       : hk_saver_save(&p, x->saver, x->rs, x->path, x->step, 0, &x->st);
      break;
    case OP_RESTORE: x->rc = hk_saver_restore(x->saver, x->rs, x->path, &x->st); break;
    case OP_RESTORE_LATEST: x->rc = hk_saver_restore_latest(&p, x->saver, x->rs, x->path, &x->st); break;
  }
  if (p) snprintf(x->restored, sizeof x->restored, "%s", p);
  return NULL;
}

/* Every rank runs `what` on its own thread; joined before returning. */
static void run_all(job *j, op what, const char *path, int64_t step) {
  for (int r = 0; r < j->n; r++) {
    j->r[r].what = what;
    j->r[r].path = path;
    j->r[r].step = step;
  }
  assert_int_equal(thread_group_run(rank_main, j->r, sizeof j->r[0], j->n), 0);
}

static void save_all(job *j, int seed, int64_t step) {
  for (int r = 0; r < j->n; r++) set_all(&j->r[r], seed, step);
  run_all(j, OP_SAVE, j->save_path, step);
  for (int r = 0; r < j->n; r++) assert_ok(j->r[r].rc, &j->r[r].st);
}

static char *file_in(job *j, const char *fmt, ...) HK_PRINTF(2, 3);
static char *file_in(job *j, const char *fmt, ...) {
  char name[512], *out = malloc(1024);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(name, sizeof name, fmt, ap);
  va_end(ap);
  assert_non_null(out);
  snprintf(out, 1024, "%s/%s", j->dir, name);
  return out;
}

static int exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0;
}

/* How many directory entries start with `start`. */
static int count_files(job *j, const char *start) {
  char cmd[1200], line[64];
  FILE *p;
  int n = 0;
  snprintf(cmd, sizeof cmd, "ls -1 '%s' | grep -c '^%s' || true", j->dir, start);
  p = popen(cmd, "r");
  assert_non_null(p);
  if (fgets(line, sizeof line, p)) n = atoi(line);
  pclose(p);
  return n;
}

static void flip_byte(const char *path, long from_end) {
  FILE *f = fopen(path, "r+b");
  int c;
  assert_non_null(f);
  assert_int_equal(fseek(f, -from_end, SEEK_END), 0);
  c = fgetc(f);
  assert_int_equal(fseek(f, -from_end, SEEK_END), 0);
  fputc(c ^ 0x40, f);
  fclose(f);
}

/* D16, D17: each rank writes its own shard, a valid hooked file that opens
 * and verifies alone; the chief writes the index and the state file. */
static void test_shard__each_rank_writes_a_shard_that_opens_alone_and_the_chief_commits(void **state) {
  job *j = calloc(1, sizeof *j);
  hk_status st = HK_STATUS_INIT;
  char *latest = NULL;
  (void)state;
  assert_non_null(j);
  job_new(j, 4, "shard", 0);
  save_all(j, 1, 10);
  for (int r = 0; r < 4; r++) {
    char *path = file_in(j, "model.ckpt-10.shard-%05d-of-00004.safetensors", r);
    hk_checkpoint_reader *rd = NULL;
    size_t idx;
    assert_ok(hk_checkpoint_reader_open(&rd, NULL, path, &st), &st);
    assert_ok(hk_checkpoint_reader_verify(rd, &st), &st);
    assert_int_equal(hk_checkpoint_reader_step(rd), 10);
    /* its own per-rank state, under local/ */
    assert_ok(hk_checkpoint_reader_find(rd, "local/rng", &idx, &st), &st);
    hk_checkpoint_reader_free(rd);
    assert_string_equal(j->r[r].restored, j->r[0].restored);
    free(path);
  }
  {
    char *index = file_in(j, "model.ckpt-10.shards");
    assert_true(exists(index));
    free(index);
  }
  assert_ok(hk_checkpoint_verify(NULL, j->r[0].restored, &st), &st);
  assert_true(hk_checkpoint_exists(NULL, j->r[0].restored));
  assert_ok(hk_checkpoint_latest(&latest, NULL, j->dir, NULL, &st), &st);
  assert_string_equal(latest, j->r[0].restored);
  hk_env_free(NULL, latest);
  /* Without a state file the scan finds the checkpoint by its index, never
   * a shard as a checkpoint of its own. */
  {
    char *state_file = file_in(j, "checkpoint");
    assert_int_equal(unlink(state_file), 0);
    free(state_file);
  }
  assert_ok(hk_checkpoint_latest(&latest, NULL, j->dir, NULL, &st), &st);
  assert_string_equal(latest, j->r[0].restored);
  hk_env_free(NULL, latest);
  job_end(j);
  ckpt_dir_free(j->root, j->dir, j->save_path);
  free(j);
}

/* D18: saved by 4 ranks, restored by 2, saved again, restored by 3: the
 * replicated variables byte-identical each time; per-rank variables come
 * back only with the rank count that saved them (else a WARNING, and they
 * keep their values). */
static void test_shard__a_checkpoint_of_4_ranks_restores_on_2_then_3_byte_identical(void **state) {
  job *j = calloc(1, sizeof *j);
  char prefix[1024];
  (void)state;
  assert_non_null(j);
  job_new(j, 4, "reshard", 0);
  save_all(j, 1, 10);
  snprintf(prefix, sizeof prefix, "%s", j->r[0].restored);
  job_end(j);

  job_new(j, 2, NULL, 1);
  for (int r = 0; r < 2; r++) set_all(&j->r[r], 7, 0);
  run_all(j, OP_RESTORE, prefix, 0);
  for (int r = 0; r < 2; r++) {
    rank_fx *x = &j->r[r];
    assert_ok(x->rc, &x->st);
    assert_true(holds(x, "w", 1, 0));
    assert_true(holds(x, "b", 1, 0));
    assert_int_equal(gs_of(x), 10);
    assert_true(holds(x, "rng", 7, r)); /* 4 -> 2: kept */
    assert_int_equal(x->warned_per_rank, 2);
  }
  /* saved again by 2 ranks, from the restored model */
  run_all(j, OP_SAVE, j->save_path, 20);
  for (int r = 0; r < 2; r++) assert_ok(j->r[r].rc, &j->r[r].st);
  snprintf(prefix, sizeof prefix, "%s", j->r[0].restored);
  job_end(j);

  job_new(j, 3, NULL, 1);
  for (int r = 0; r < 3; r++) set_all(&j->r[r], 9, 0);
  run_all(j, OP_RESTORE_LATEST, j->dir, 0);
  for (int r = 0; r < 3; r++) {
    rank_fx *x = &j->r[r];
    assert_ok(x->rc, &x->st);
    assert_string_equal(x->restored, prefix);
    assert_true(holds(x, "w", 1, 0));
    assert_true(holds(x, "b", 1, 0));
    assert_int_equal(gs_of(x), 10); /* the variable as saved (the save was named step 20) */
  }
  job_end(j);

  /* The same rank count gets its per-rank state back, each rank its own. */
  job_new(j, 2, NULL, 1);
  for (int r = 0; r < 2; r++) set_all(&j->r[r], 9, 0);
  run_all(j, OP_RESTORE, prefix, 0);
  for (int r = 0; r < 2; r++) {
    assert_ok(j->r[r].rc, &j->r[r].st);
    assert_true(holds(&j->r[r], "rng", 7, r));
    assert_true(holds(&j->r[r], "pos", 7, r));
    assert_int_equal(j->r[r].warned_per_rank, 0);
  }
  job_end(j);
  ckpt_dir_free(j->root, j->dir, j->save_path);
  free(j);
}

/* D19: a rank whose disk is full fails the save on every rank with its
 * message; no file of the new checkpoint stays, and the previous one is
 * still the newest and restores. */
static void test_shard__one_rank_out_of_space_fails_the_save_everywhere_and_keeps_the_previous(void **state) {
  job *j = calloc(1, sizeof *j);
  char *state_file;
  hk_checkpoint_state *cs = NULL;
  hk_status st = HK_STATUS_INIT;
  (void)state;
  assert_non_null(j);
  job_new(j, 4, "shardfull", 0);
  save_all(j, 1, 10);
  faulty_fs_match(&j->r[2].ff, "shard-00002");
  faulty_fs_fail_errno(&j->r[2].ff, FAULTY_FS_WRITE, 0, ENOSPC, 1);
  for (int r = 0; r < 4; r++) set_all(&j->r[r], 2, 20);
  run_all(j, OP_SAVE, j->save_path, 20);
  for (int r = 0; r < 4; r++) {
    assert_int_equal(j->r[r].rc, HK_RESOURCE_EXHAUSTED);
    assert_non_null(strstr(j->r[r].st.message, "rank 2 of 4: "));
    assert_non_null(strstr(j->r[r].st.message, "shard-00002-of-00004"));
  }
  assert_int_equal(count_files(j, "model.ckpt-20"), 0);
  state_file = file_in(j, "checkpoint");
  assert_ok(hk_checkpoint_state_get(&cs, NULL, j->dir, NULL, &st), &st);
  assert_non_null(strstr(hk_checkpoint_state_model_path(cs), "model.ckpt-10"));
  hk_checkpoint_state_free(cs);
  free(state_file);
  faulty_fs_reset(&j->r[2].ff);
  faulty_fs_match(&j->r[2].ff, NULL);
  run_all(j, OP_RESTORE_LATEST, j->dir, 0);
  for (int r = 0; r < 4; r++) {
    assert_ok(j->r[r].rc, &j->r[r].st);
    assert_true(holds(&j->r[r], "w", 1, 0));
  }
  job_end(j);
  ckpt_dir_free(j->root, j->dir, j->save_path);
  free(j);
}

/* H104: rank 2 cannot produce its state and fails its part of the save
 * while ranks 0 and 1 save: every rank's call returns the code and "rank 2
 * of 3: <message>", nothing is committed, and the next save works. A code
 * of HK_OK is a bad argument still joined, so every rank fails with it. */
static void test_shard__a_rank_failing_its_part_fails_the_save_on_every_rank(void **state) {
  job *j = calloc(1, sizeof *j);
  hk_checkpoint_state *cs = NULL;
  hk_status st = HK_STATUS_INIT;
  (void)state;
  assert_non_null(j);
  job_new(j, 3, "shardfailpart", 0);
  save_all(j, 1, 10);
  for (int r = 0; r < 3; r++) set_all(&j->r[r], 2, 20);
  j->r[2].fails = 1;
  j->r[2].fail_code = HK_UNAVAILABLE;
  j->r[2].fail_message = "the data loader of rank 2 lost its position";
  run_all(j, OP_SAVE, j->save_path, 20);
  for (int r = 0; r < 3; r++) {
    assert_int_equal(j->r[r].rc, HK_UNAVAILABLE);
    assert_non_null(strstr(j->r[r].st.message, "Saving checkpoint for step 20 into "));
    assert_non_null(strstr(j->r[r].st.message, "rank 2 of 3: the data loader of rank 2 lost its position"));
  }
  assert_int_equal(count_files(j, "model.ckpt-20"), 0);
  assert_ok(hk_checkpoint_state_get(&cs, NULL, j->dir, NULL, &st), &st);
  assert_non_null(strstr(hk_checkpoint_state_model_path(cs), "model.ckpt-10"));
  hk_checkpoint_state_free(cs);

  j->r[2].fail_code = HK_OK;
  run_all(j, OP_SAVE, j->save_path, 20);
  for (int r = 0; r < 3; r++) {
    assert_int_equal(j->r[r].rc, HK_INVALID_ARGUMENT);
    assert_non_null(strstr(j->r[r].st.message, "rank 2 of 3: code is HK_OK"));
  }
  assert_int_equal(count_files(j, "model.ckpt-20"), 0);

  j->r[2].fails = 0;
  save_all(j, 3, 30);
  assert_int_equal(count_files(j, "model.ckpt-30"), 4); /* three shards and the index */
  job_end(j);
  ckpt_dir_free(j->root, j->dir, j->save_path);
  free(j);
}

/* H104: without a group there is nothing to join: the call returns the
 * code and message and writes nothing; bad arguments are named. */
static void test_shard__failing_a_save_without_a_group_returns_the_code_and_message(void **state) {
  job *j = calloc(1, sizeof *j);
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  hk_saver *solo = NULL;
  hk_status st = HK_STATUS_INIT;
  (void)state;
  assert_non_null(j);
  job_new(j, 1, "shardfailsolo", 0);
  so.executor = j->r[0].ex;
  assert_ok(hk_saver_new(&solo, &so, &st), &st);
  assert_int_equal(hk_saver_fail_save(solo, j->save_path, 5, HK_RESOURCE_EXHAUSTED, "no memory for the snapshot", &st),
                   HK_RESOURCE_EXHAUSTED);
  assert_int_equal(st.code, HK_RESOURCE_EXHAUSTED);
  assert_string_equal(st.message, "no memory for the snapshot");
  assert_int_equal(hk_saver_fail_save(solo, j->save_path, 5, HK_ABORTED, NULL, &st), HK_ABORTED);
  assert_string_equal(st.message, hk_code_name(HK_ABORTED));
  assert_int_equal(count_files(j, "model.ckpt"), 0);
  assert_int_equal(count_files(j, "checkpoint"), 0);
  assert_int_equal(hk_saver_fail_save(NULL, j->save_path, 5, HK_ABORTED, "x", &st), HK_INVALID_ARGUMENT);
  assert_non_null(strstr(st.message, "saver"));
  assert_int_equal(hk_saver_fail_save(solo, NULL, 5, HK_ABORTED, "x", &st), HK_INVALID_ARGUMENT);
  assert_non_null(strstr(st.message, "save_path"));
  assert_int_equal(hk_saver_fail_save(solo, j->save_path, 5, HK_OK, "x", &st), HK_INVALID_ARGUMENT);
  assert_non_null(strstr(st.message, "code"));
  hk_saver_free(solo);
  job_end(j);
  ckpt_dir_free(j->root, j->dir, j->save_path);
  free(j);
}

/* D20: a corrupt shard makes every rank fall back together to the newest
 * checkpoint that verifies; a missing one likewise. */
static void test_shard__a_corrupt_or_missing_shard_makes_every_rank_fall_back_together(void **state) {
  job *j = calloc(1, sizeof *j);
  char *shard;
  hk_status st = HK_STATUS_INIT;
  (void)state;
  assert_non_null(j);
  job_new(j, 3, "shardbad", 0);
  save_all(j, 1, 10);
  save_all(j, 2, 20);
  shard = file_in(j, "model.ckpt-20.shard-00001-of-00003.safetensors");
  flip_byte(shard, 1);
  assert_int_equal(hk_checkpoint_verify(NULL, j->r[0].restored, &st), HK_DATA_LOSS);
  assert_non_null(strstr(st.message, "shard-00001-of-00003"));
  for (int r = 0; r < 3; r++) set_all(&j->r[r], 5, 0);
  run_all(j, OP_RESTORE_LATEST, j->dir, 0);
  for (int r = 0; r < 3; r++) {
    assert_ok(j->r[r].rc, &j->r[r].st);
    assert_non_null(strstr(j->r[r].restored, "model.ckpt-10"));
    assert_true(holds(&j->r[r], "w", 1, 0));
    assert_int_equal(gs_of(&j->r[r]), 10);
  }
  assert_int_equal(unlink(shard), 0);
  {
    char *p20 = file_in(j, "model.ckpt-20");
    assert_int_equal(hk_checkpoint_verify(NULL, p20, &st), HK_DATA_LOSS);
    assert_non_null(strstr(st.message, "is missing"));
    run_all(j, OP_RESTORE, p20, 0);
    for (int r = 0; r < 3; r++) {
      assert_int_equal(j->r[r].rc, HK_DATA_LOSS);
      assert_non_null(strstr(j->r[r].st.message, "rank 0 of 3: "));
    }
    free(p20);
  }
  free(shard);
  job_end(j);
  ckpt_dir_free(j->root, j->dir, j->save_path);
  free(j);
}

/* D21: retention deletes a checkpoint's index and every shard as one. */
static void test_shard__retention_deletes_every_shard_of_a_dropped_checkpoint(void **state) {
  job *j = calloc(1, sizeof *j);
  (void)state;
  assert_non_null(j);
  job_new(j, 3, "shardkeep", 0);
  save_all(j, 1, 10);
  save_all(j, 2, 20);
  assert_int_equal(count_files(j, "model.ckpt-10."), 4);
  save_all(j, 3, 30); /* max_to_keep 2 */
  assert_int_equal(count_files(j, "model.ckpt-10."), 0);
  assert_int_equal(count_files(j, "model.ckpt-20."), 4);
  assert_int_equal(count_files(j, "model.ckpt-30."), 4);
  job_end(j);
  ckpt_dir_free(j->root, j->dir, j->save_path);
  free(j);
}

/* The index of checkpoint `prefix` written by hand over shards `paths`
 * (num of them): sizes and header CRCs from the files, so only the shards'
 * own contents decide. */
static void write_index(const char *prefix, char *const *paths, int num, int64_t step) {
  char text[2048], path[1200];
  size_t n = 0;
  n += (size_t)snprintf(text + n, sizeof text - n, "# hooked-crc32c: 00000000\nformat: hooked-sharded/1\n");
  n += (size_t)snprintf(text + n, sizeof text - n, "global_step: %" PRId64 "\nnum_shards: %d\n", step, num);
  for (int r = 0; r < num; r++) {
    size_t len = 0;
    char *b = test_read_file(paths[r], &len);
    uint64_t hlen = 0;
    assert_non_null(b);
    for (int k = 7; k >= 0; k--) hlen = hlen << 8 | (unsigned char)b[k];
    n += (size_t)snprintf(text + n, sizeof text - n, "shard: %d %zu %08" PRIx32 "\n", r, len,
                          hk_crc32c_extend(0, b, (size_t)(8 + hlen)));
    free(b);
  }
  {
    char crc[9];
    snprintf(crc, sizeof crc, "%08" PRIx32, hk_crc32c_extend(0, text + 26, n - 26));
    memcpy(text + 17, crc, 8);
  }
  assert_true(strlen(prefix) + sizeof ".shards" <= sizeof path);
  memcpy(path, prefix, strlen(prefix));
  memcpy(path + strlen(prefix), ".shards", sizeof ".shards");
  assert_int_equal(test_write_file(path, text, n), 0);
}

/* D20: shards that are each sound but do not tile a variable together (one
 * from a job whose "b" was per rank, so its blocks lie elsewhere) are
 * refused with DATA_LOSS naming the variable; so is an index with a flipped
 * byte. */
static void test_shard__slices_that_do_not_tile_a_variable_are_refused(void **state) {
  job *j = calloc(1, sizeof *j);
  hk_status st = HK_STATUS_INIT;
  char *a0, *b1, *mixed[2], prefix[1100], *index;
  (void)state;
  assert_non_null(j);
  job_new(j, 2, "shardtile", 0);
  save_all(j, 1, 10);
  job_end(j);
  g_nper_rank = 3;
  job_new(j, 2, NULL, 1);
  save_all(j, 1, 20);
  job_end(j);
  g_nper_rank = 2;
  a0 = file_in(j, "model.ckpt-10.shard-00000-of-00002.safetensors");
  b1 = file_in(j, "model.ckpt-20.shard-00001-of-00002.safetensors");
  mixed[0] = a0;
  mixed[1] = b1;
  snprintf(prefix, sizeof prefix, "%s/mixed", j->dir);
  /* A shard holds its own step: the mixed checkpoint's shards must agree. */
  write_index(prefix, mixed, 2, 10);
  {
    char *m0 = file_in(j, "mixed.shard-00000-of-00002.safetensors"),
         *m1 = file_in(j, "mixed.shard-00001-of-00002.safetensors");
    assert_int_equal(link(a0, m0), 0);
    assert_int_equal(link(b1, m1), 0);
    assert_int_equal(hk_checkpoint_verify(NULL, prefix, &st), HK_DATA_LOSS);
    assert_non_null(strstr(st.message, "holds step 20, its index step 10"));
    write_index(prefix, mixed, 2, 20);
    assert_int_equal(hk_checkpoint_verify(NULL, prefix, &st), HK_DATA_LOSS);
    assert_non_null(strstr(st.message, "holds step 10, its index step 20"));
    free(m0);
    free(m1);
  }
  /* Same steps: the shards of step 20 of both jobs. */
  {
    char *m0 = file_in(j, "mixed.shard-00000-of-00002.safetensors");
    assert_int_equal(unlink(m0), 0);
    g_nper_rank = 2;
    job_new(j, 2, NULL, 1);
    save_all(j, 1, 20); /* over the 3-per-rank job's step 20: rewrite it with the 2-per-rank job */
    job_end(j);
    /* now model.ckpt-20 is the 2-per-rank job's; keep its shard 0, and the
     * other job's shard 1 under the mixed name (hard link made above) */
    char *a20 = file_in(j, "model.ckpt-20.shard-00000-of-00002.safetensors");
    assert_int_equal(link(a20, m0), 0);
    mixed[0] = m0;
    mixed[1] = file_in(j, "mixed.shard-00001-of-00002.safetensors");
    write_index(prefix, mixed, 2, 20);
    assert_int_equal(hk_checkpoint_verify(NULL, prefix, &st), HK_DATA_LOSS);
    assert_non_null(strstr(st.message, "do not tile it"));
    free(mixed[1]);
    free(a20);
    free(m0);
  }
  index = file_in(j, "mixed.shards");
  flip_byte(index, 3);
  assert_int_equal(hk_checkpoint_verify(NULL, prefix, &st), HK_DATA_LOSS);
  assert_non_null(strstr(st.message, "Checkpoint index"));
  free(index);
  free(a0);
  free(b1);
  ckpt_dir_free(j->root, j->dir, j->save_path);
  free(j);
}

/* Bad inputs: a group vtable with a NULL slot or a rank out of range, a
 * per_rank_list name that is no variable, ranks saving different steps:
 * every rank's save fails with the first failing rank's message, and
 * nothing is written. */
static void test_shard__bad_groups_and_per_rank_names_are_refused_by_name(void **state) {
  static const hk_group_vtable no_broadcast = {HK_GROUP_VTABLE_VERSION, NULL, NULL, NULL, NULL};
  static const char *const missing[1] = {"nope"};
  thread_group tg;
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_saver *sv = NULL;
  job *j = calloc(1, sizeof *j);
  (void)state;
  assert_non_null(j);
  job_new(j, 2, "shardbad", 0);
  so.executor = j->r[0].ex;
  so.group = &no_broadcast;
  assert_int_equal(hk_saver_new(&sv, &so, &st), HK_INVALID_ARGUMENT);
  assert_non_null(strstr(st.message, "opts->group: the vtable's rank slot is NULL"));
  thread_group_init(&tg, 2);
  tg.members[1].rank = 5;
  so.group = thread_group_vtable();
  so.group_user = &tg.members[1];
  assert_int_equal(hk_saver_new(&sv, &so, &st), HK_INVALID_ARGUMENT);
  assert_non_null(strstr(st.message, "rank 5 of size 2"));
  thread_group_destroy(&tg);
  so.group_user = &j->tg.members[0];
  so.per_rank_list = NULL;
  so.nper_rank_list = 1;
  assert_int_equal(hk_saver_new(&sv, &so, &st), HK_INVALID_ARGUMENT);
  assert_non_null(strstr(st.message, "per_rank_list is NULL"));
  /* A name no variable has: every rank fails before the exchange, and the
   * save fails on every rank with the first failing rank's message (rank
   * 0's); nothing is written. */
  for (int r = 0; r < 2; r++) {
    hk_saver_free(j->r[r].saver);
    so.executor = j->r[r].ex;
    so.group_user = &j->tg.members[r];
    so.per_rank_list = missing;
    so.nper_rank_list = 1;
    so.env = &j->r[r].env;
    assert_ok(hk_saver_new(&j->r[r].saver, &so, &st), &st);
  }
  run_all(j, OP_SAVE, j->save_path, 10);
  for (int r = 0; r < 2; r++) {
    assert_int_equal(j->r[r].rc, HK_NOT_FOUND);
    assert_non_null(
        strstr(j->r[r].st.message, "rank 0 of 2: opts->per_rank_list[0]: the Saver has no variable named 'nope'"));
  }
  assert_int_equal(count_files(j, "model.ckpt"), 0);
  /* Ranks given different steps: refused on every rank, nothing written. */
  for (int r = 0; r < 2; r++) {
    hk_saver_free(j->r[r].saver);
    so.executor = j->r[r].ex;
    so.group_user = &j->tg.members[r];
    so.per_rank_list = NULL;
    so.nper_rank_list = 0;
    so.env = &j->r[r].env;
    assert_ok(hk_saver_new(&j->r[r].saver, &so, &st), &st);
  }
  for (int r = 0; r < 2; r++) {
    set_all(&j->r[r], 1, 10 + r);
    j->r[r].what = OP_SAVE;
    j->r[r].path = j->save_path;
    j->r[r].step = 10 + r;
  }
  assert_int_equal(thread_group_run(rank_main, j->r, sizeof j->r[0], 2), 0);
  for (int r = 0; r < 2; r++) {
    assert_int_equal(j->r[r].rc, HK_FAILED_PRECONDITION);
    if (!strstr(j->r[r].st.message, "rank 1 of 2 saves another checkpoint than rank 0 (step 11, rank 0's 10"))
      fail_msg("%s", j->r[r].st.message);
  }
  assert_int_equal(count_files(j, "model.ckpt"), 0);
  job_end(j);
  ckpt_dir_free(j->root, j->dir, j->save_path);
  free(j);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shard__each_rank_writes_a_shard_that_opens_alone_and_the_chief_commits),
      cmocka_unit_test(test_shard__a_checkpoint_of_4_ranks_restores_on_2_then_3_byte_identical),
      cmocka_unit_test(test_shard__one_rank_out_of_space_fails_the_save_everywhere_and_keeps_the_previous),
      cmocka_unit_test(test_shard__a_rank_failing_its_part_fails_the_save_on_every_rank),
      cmocka_unit_test(test_shard__failing_a_save_without_a_group_returns_the_code_and_message),
      cmocka_unit_test(test_shard__a_corrupt_or_missing_shard_makes_every_rank_fall_back_together),
      cmocka_unit_test(test_shard__retention_deletes_every_shard_of_a_dropped_checkpoint),
      cmocka_unit_test(test_shard__slices_that_do_not_tile_a_variable_are_refused),
      cmocka_unit_test(test_shard__bad_groups_and_per_rank_names_are_refused_by_name),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
