/*
 * Partitioned variables of a sharded checkpoint (hk_saver_options
 * .partitioned_list; checkpoint-format.md "Sharded checkpoints"; contract
 * D22-D27): rank r of N holds block r (hk_group_block) of a flat global
 * variable; each block is saved once as its rank's slice, and a restore by
 * any rank count gives each rank its own block, read from the slices that
 * cover it. Ranks are threads of one process joined by a thread group
 * (tests/support/thread_group.h), each with its own model and Saver.
 *
 * The model: partitioned "m" F32 (11 elements in all), "v" F64 (3 in all:
 * on 4 ranks the last holds none) and "z" F32 (none in all); replicated
 * "w" F32 [5] and the global step. A "partitioned-only" model has "m"
 * alone.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <hooked/hooked.h>
#include <hooked/checkpoint.h>
#include <hooked/graph.h>
#include <hooked/sys/fs.h>

#include "ckpt_fixture.h"
#include "graph_fixture.h"
#include "test_env.h"
#include "thread_group.h"
#include "tmpdir.h"

#define MAXR 8
#define M_ALL 11
#define V_ALL 3

static const char *const parts[3] = {"m", "v", "z"};

/* ---- an fs that counts the data reads of each shard ---------------------------------------- */

/* Reads of a shard at or after its data's first byte are data reads; the
 * header's reads come before it. The map slots are off, so every byte the
 * library reads goes through read_at. */
typedef struct watch {
  int nshards;
  char name[MAXR][64]; /* "shard-0000k-of-0000n" */
  uint64_t data_start[MAXR];
  long data_reads[MAXR];
} watch;

static struct {
  pthread_mutex_t mu;
  struct {
    hk_fs_file *f;
    watch *w;
    int shard; /* -1: not watched */
  } open[64];
} g_files = {PTHREAD_MUTEX_INITIALIZER, {{NULL, NULL, -1}}};

static hk_fs_vtable g_watch_vt;

static hk_code watch_open_read(void *user, const char *path, hk_fs_file **out, hk_status *st) {
  watch *w = user;
  hk_code rc = hk_fs_posix()->open_read(NULL, path, out, st);
  int shard = -1;
  if (rc != HK_OK) return rc;
  for (int k = 0; k < w->nshards; k++)
    if (strstr(path, w->name[k])) shard = k;
  pthread_mutex_lock(&g_files.mu);
  for (size_t i = 0; i < 64; i++)
    if (!g_files.open[i].f) {
      g_files.open[i].f = *out;
      g_files.open[i].w = w;
      g_files.open[i].shard = shard;
      break;
    }
  pthread_mutex_unlock(&g_files.mu);
  return HK_OK;
}

static hk_code watch_read_at(void *user, hk_fs_file *f, void *buf, size_t len, uint64_t offset, size_t *nread,
                             hk_status *st) {
  (void)user;
  pthread_mutex_lock(&g_files.mu);
  for (size_t i = 0; i < 64; i++)
    if (g_files.open[i].f == f && g_files.open[i].shard >= 0 &&
        offset >= g_files.open[i].w->data_start[g_files.open[i].shard])
      g_files.open[i].w->data_reads[g_files.open[i].shard]++;
  pthread_mutex_unlock(&g_files.mu);
  return hk_fs_posix()->read_at(NULL, f, buf, len, offset, nread, st);
}

static hk_code watch_close(void *user, hk_fs_file *f, hk_status *st) {
  (void)user;
  pthread_mutex_lock(&g_files.mu);
  for (size_t i = 0; i < 64; i++)
    if (g_files.open[i].f == f) g_files.open[i].f = NULL;
  pthread_mutex_unlock(&g_files.mu);
  return hk_fs_posix()->close(NULL, f, st);
}

/* Watch the shards of checkpoint `prefix`, saved by n ranks, through env. */
static void watch_bind(watch *w, hk_env *env, const char *prefix, int n) {
  memset(w, 0, sizeof *w);
  g_watch_vt = *hk_fs_posix();
  g_watch_vt.open_read = watch_open_read;
  g_watch_vt.read_at = watch_read_at;
  g_watch_vt.close = watch_close;
  g_watch_vt.map = NULL;
  g_watch_vt.unmap = NULL;
  w->nshards = n;
  for (int k = 0; k < n; k++) {
    char path[1200];
    size_t len = 0;
    unsigned char *b;
    uint64_t hlen = 0;
    snprintf(w->name[k], sizeof w->name[k], "shard-%05d-of-%05d", k, n);
    snprintf(path, sizeof path, "%s.%s.safetensors", prefix, w->name[k]);
    b = (unsigned char *)test_read_file(path, &len);
    assert_non_null(b);
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | b[i];
    w->data_start[k] = 8 + hlen;
    free(b);
  }
  env->fs = &g_watch_vt;
  env->fs_user = w;
}

/* ---- the jobs --------------------------------------------------------------------------------- */

typedef enum model { MODEL_FULL, MODEL_PARTITIONED_ONLY } model;
typedef enum op { OP_SAVE, OP_RESTORE } op;

typedef struct rank_fx {
  int rank;
  hk_env env;
  watch w;
  hk_graph *g;
  hk_executor *ex;
  hk_raw_session *rs;
  hk_saver *saver;
  op what;
  int64_t step;
  const char *path;
  hk_code rc;
  hk_status st;
  char saved[512];
} rank_fx;

typedef struct job {
  thread_group tg;
  int n;
  model mdl;
  rank_fx r[MAXR];
  char *root, *dir, *save_path;
  const char *watch_prefix; /* non-NULL: the ranks' Savers count the data reads of its shards */
  int watch_shards;
} job;

static size_t block_len(size_t count, int n, int r) {
  size_t first = 0, len = 0;
  hk_status st = HK_STATUS_INIT;
  assert_ok(hk_group_block(&first, &len, count, n, r, &st), &st);
  return len;
}

static size_t block_first(size_t count, int n, int r) {
  size_t first = 0, len = 0;
  hk_status st = HK_STATUS_INIT;
  assert_ok(hk_group_block(&first, &len, count, n, r, &st), &st);
  return first;
}

/* The model of rank r of n ranks (n 0: no group, every variable whole),
 * "m" holding m_extra more elements than its block; its Saver without a
 * Saver when no_saver. */
static void rank_build(job *j, int r, int n, long m_extra, int no_saver) {
  static const int64_t w_dims[1] = {5};
  rank_fx *x = &j->r[r];
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  int64_t m_dims[1], v_dims[1], z_dims[1] = {0};
  hk_handle h;
  int nn = n > 0 ? n : 1;
  memset(x, 0, sizeof *x);
  x->rank = r;
  hk_env_init(&x->env, HK_ENV_VERSION);
  go.env = &x->env;
  assert_ok(hk_graph_new(&x->g, &go, &st), &st);
  x->ex = hk_graph_executor(x->g);
  m_dims[0] = (int64_t)block_len(M_ALL, nn, r) + m_extra;
  v_dims[0] = (int64_t)block_len(V_ALL, nn, r);
  graph_fixture_variable(x->g, "m", HK_DTYPE_F32, 1, m_dims);
  if (j->mdl == MODEL_FULL) {
    graph_fixture_variable(x->g, "v", HK_DTYPE_F64, 1, v_dims);
    graph_fixture_variable(x->g, "z", HK_DTYPE_F32, 1, z_dims);
    graph_fixture_variable(x->g, "w", HK_DTYPE_F32, 1, w_dims);
    assert_ok(hk_graph_create_global_step(x->g, &h, &st), &st);
  }
  assert_ok(hk_raw_session_open(&x->rs, x->ex, &st), &st);
  if (no_saver) return;
  if (j->watch_prefix) watch_bind(&x->w, &x->env, j->watch_prefix, j->watch_shards);
  so.env = &x->env;
  so.executor = x->ex;
  so.max_to_keep = 0;
  if (n > 0) {
    so.group = thread_group_vtable();
    so.group_user = &j->tg.members[r];
  }
  so.partitioned_list = parts;
  so.npartitioned_list = j->mdl == MODEL_FULL ? 3 : 1;
  assert_ok(hk_saver_new(&x->saver, &so, &st), &st);
}

static void rank_free(rank_fx *x) {
  hk_saver_free(x->saver);
  hk_raw_session_free(x->rs);
  hk_graph_free(x->g);
}

/* n ranks (n 0: one process without a group); rank `odd` (-1: none) holds
 * one element of "m" more than its block. */
static void job_new(job *j, model mdl, int n, const char *tag, int odd) {
  if (tag) ckpt_dir_new(tag, &j->root, &j->dir, &j->save_path);
  j->mdl = mdl;
  j->n = n > 0 ? n : 1;
  thread_group_init(&j->tg, j->n);
  for (int r = 0; r < j->n; r++) rank_build(j, r, n, r == odd ? 1 : 0, 0);
}

static void job_end(job *j) {
  for (int r = 0; r < j->n; r++) rank_free(&j->r[r]);
  thread_group_destroy(&j->tg);
}

/* Element k of the global "m", "v", "w" for seed. */
static float m_at(int seed, size_t k) { return (float)(seed * 100) + (float)k * 0.5f; }
static double v_at(int seed, size_t k) { return seed * 1000.0 + (double)k + 0.25; }
static float w_at(int seed, size_t k) { return (float)seed + (float)k * 0.125f; }

static void assign(rank_fx *x, const char *name, hk_dtype dt, int64_t count, const void *data) {
  hk_status st = HK_STATUS_INIT;
  hk_tensor t;
  size_t idx;
  assert_ok(hk_executor_find_variable(x->ex, name, &idx, &st), &st);
  assert_ok(hk_tensor_init(&t, dt, 1, &count, (void *)(uintptr_t)data, &st), &st);
  assert_ok(hk_raw_session_assign_variable(x->rs, idx, &t, &st), &st);
}

static int64_t count_of(rank_fx *x, const char *name) {
  hk_status st = HK_STATUS_INIT;
  hk_variable_info info;
  size_t idx;
  assert_ok(hk_executor_find_variable(x->ex, name, &idx, &st), &st);
  assert_ok(hk_executor_variable_info(&info, x->ex, idx, &st), &st);
  return info.dims[0];
}

/* Rank r of n (0: no group) holds its block of seed's global arrays: the
 * elements from its block's first on, as many as its variable has. */
static void set_blocks(rank_fx *x, int n, int seed, int64_t gs, model mdl) {
  float m[64], w[5];
  double v[8];
  int nn = n > 0 ? n : 1;
  size_t mf = block_first(M_ALL, nn, x->rank), vf = block_first(V_ALL, nn, x->rank);
  int64_t mc = count_of(x, "m");
  for (int64_t k = 0; k < mc; k++) m[k] = m_at(seed, mf + (size_t)k);
  assign(x, "m", HK_DTYPE_F32, mc, m);
  if (mdl == MODEL_PARTITIONED_ONLY) return;
  for (int64_t k = 0; k < count_of(x, "v"); k++) v[k] = v_at(seed, vf + (size_t)k);
  assign(x, "v", HK_DTYPE_F64, count_of(x, "v"), v);
  assign(x, "z", HK_DTYPE_F32, 0, NULL);
  for (size_t k = 0; k < 5; k++) w[k] = w_at(seed, k);
  assign(x, "w", HK_DTYPE_F32, 5, w);
  {
    hk_status st = HK_STATUS_INIT;
    size_t idx;
    hk_tensor t;
    assert_ok(hk_executor_find_variable(x->ex, "global_step", &idx, &st), &st);
    assert_ok(hk_tensor_init(&t, HK_DTYPE_I64, 0, NULL, &gs, &st), &st);
    assert_ok(hk_raw_session_assign_variable(x->rs, idx, &t, &st), &st);
  }
}

/* Rank r of n holds exactly its block of seed's global arrays, byte for
 * byte (and the replicated "w" whole). */
static void assert_blocks(rank_fx *x, int n, int seed, model mdl) {
  hk_status st = HK_STATUS_INIT;
  hk_tensor t;
  size_t idx;
  int nn = n > 0 ? n : 1;
  float m[64], w[5];
  double v[8];
  size_t mf = block_first(M_ALL, nn, x->rank), ml = block_len(M_ALL, nn, x->rank);
  size_t vf = block_first(V_ALL, nn, x->rank), vl = block_len(V_ALL, nn, x->rank);
  for (size_t k = 0; k < ml; k++) m[k] = m_at(seed, mf + k);
  assert_ok(hk_executor_find_variable(x->ex, "m", &idx, &st), &st);
  assert_ok(hk_raw_session_read_variable(&t, x->rs, idx, &st), &st);
  assert_int_equal(t.nbytes, ml * sizeof(float));
  assert_memory_equal(t.data, m, t.nbytes);
  if (mdl == MODEL_PARTITIONED_ONLY) return;
  for (size_t k = 0; k < vl; k++) v[k] = v_at(seed, vf + k);
  assert_ok(hk_executor_find_variable(x->ex, "v", &idx, &st), &st);
  assert_ok(hk_raw_session_read_variable(&t, x->rs, idx, &st), &st);
  assert_int_equal(t.nbytes, vl * sizeof(double));
  if (vl > 0) assert_memory_equal(t.data, v, t.nbytes);
  assert_ok(hk_executor_find_variable(x->ex, "z", &idx, &st), &st);
  assert_ok(hk_raw_session_read_variable(&t, x->rs, idx, &st), &st);
  assert_int_equal(t.nbytes, 0);
  for (size_t k = 0; k < 5; k++) w[k] = w_at(seed, k);
  assert_ok(hk_executor_find_variable(x->ex, "w", &idx, &st), &st);
  assert_ok(hk_raw_session_read_variable(&t, x->rs, idx, &st), &st);
  assert_memory_equal(t.data, w, sizeof w);
}

static void *rank_main(void *arg) {
  rank_fx *x = arg;
  const char *p = NULL;
  hk_status_clear(&x->st);
  x->saved[0] = '\0';
  if (x->what == OP_SAVE)
    x->rc = hk_saver_save(&p, x->saver, x->rs, x->path, x->step, 0, &x->st);
  else
    x->rc = hk_saver_restore(x->saver, x->rs, x->path, &x->st);
  if (p) snprintf(x->saved, sizeof x->saved, "%s", p);
  return NULL;
}

static void run_all(job *j, op what, const char *path, int64_t step) {
  for (int r = 0; r < j->n; r++) {
    j->r[r].what = what;
    j->r[r].path = path;
    j->r[r].step = step;
  }
  assert_int_equal(thread_group_run(rank_main, j->r, sizeof j->r[0], j->n), 0);
}

/* n ranks save seed's arrays as step `step`; the checkpoint's prefix into out. */
static void save_blocks(job *j, int seed, int64_t step, char *out, size_t cap) {
  for (int r = 0; r < j->n; r++) set_blocks(&j->r[r], j->n, seed, step, j->mdl);
  run_all(j, OP_SAVE, j->save_path, step);
  for (int r = 0; r < j->n; r++) assert_ok(j->r[r].rc, &j->r[r].st);
  snprintf(out, cap, "%s", j->r[0].saved);
}

/* m ranks restore prefix over zeroed values and each holds its block of seed's arrays. */
static void restore_on(job *j, model mdl, int m, const char *prefix, int seed) {
  job_new(j, mdl, m, NULL, -1);
  for (int r = 0; r < m; r++) set_blocks(&j->r[r], m, 99, 0, mdl);
  run_all(j, OP_RESTORE, prefix, 0);
  for (int r = 0; r < m; r++) {
    assert_ok(j->r[r].rc, &j->r[r].st);
    assert_blocks(&j->r[r], m, seed, mdl);
  }
  job_end(j);
}

/* ---- tests -------------------------------------------------------------------------------------- */

/* D22, D23, D24: saved by 4 ranks, each block is its rank's slice of the
 * whole variable; 2, 3 and 4 ranks each get exactly the block of the
 * global array the 4 ranks held, byte for byte. */
static void test_shard_partitioned__saved_by_4_ranks_restores_each_ranks_block_on_2_3_and_4(void **state) {
  job *j = calloc(1, sizeof *j);
  char prefix[1024];
  hk_status st = HK_STATUS_INIT;
  (void)state;
  assert_non_null(j);
  job_new(j, MODEL_FULL, 4, "part", -1);
  save_blocks(j, 1, 10, prefix, sizeof prefix);
  job_end(j);
  /* The shards hold slices of the global variables: shard 2's "m" is
   * elements 6:9 of 11, and the last rank writes no slice of "v". */
  {
    char path[1200];
    hk_checkpoint_reader *rd = NULL;
    size_t idx;
    snprintf(path, sizeof path, "%s.shard-00002-of-00004.safetensors", prefix);
    assert_ok(hk_checkpoint_reader_open(&rd, NULL, path, &st), &st);
    assert_ok(hk_checkpoint_reader_find(rd, "m", &idx, &st), &st);
    hk_checkpoint_reader_free(rd);
    snprintf(path, sizeof path, "%s.shard-00003-of-00004.safetensors", prefix);
    assert_ok(hk_checkpoint_reader_open(&rd, NULL, path, &st), &st);
    assert_int_equal(hk_checkpoint_reader_find(rd, "v", &idx, &st), HK_NOT_FOUND);
    hk_checkpoint_reader_free(rd);
  }
  assert_ok(hk_checkpoint_verify(NULL, prefix, &st), &st);
  restore_on(j, MODEL_FULL, 2, prefix, 1);
  restore_on(j, MODEL_FULL, 3, prefix, 1);
  restore_on(j, MODEL_FULL, 4, prefix, 1);
  ckpt_dir_free(j->root, j->dir, j->save_path);
  free(j);
}

/* D24: without a group a partitioned variable is restored whole: the
 * concatenation of the 4 ranks' blocks; the reader (and so hooked-ckpt)
 * shows the whole variable. */
static void test_shard_partitioned__restored_without_a_group_it_is_the_whole_array(void **state) {
  job *j = calloc(1, sizeof *j);
  char prefix[1024];
  hk_status st = HK_STATUS_INIT;
  hk_checkpoint_reader *rd = NULL;
  hk_checkpoint_entry e;
  size_t idx;
  float whole[M_ALL];
  (void)state;
  assert_non_null(j);
  job_new(j, MODEL_FULL, 4, "partwhole", -1);
  save_blocks(j, 3, 10, prefix, sizeof prefix);
  job_end(j);
  job_new(j, MODEL_FULL, 0, NULL, -1);
  assert_int_equal(count_of(&j->r[0], "m"), M_ALL);
  set_blocks(&j->r[0], 0, 99, 0, MODEL_FULL);
  assert_ok(hk_saver_restore(j->r[0].saver, j->r[0].rs, prefix, &st), &st);
  assert_blocks(&j->r[0], 0, 3, MODEL_FULL);
  job_end(j);
  for (size_t k = 0; k < M_ALL; k++) whole[k] = m_at(3, k);
  assert_ok(hk_checkpoint_reader_open(&rd, NULL, prefix, &st), &st);
  assert_ok(hk_checkpoint_reader_find(rd, "m", &idx, &st), &st);
  assert_ok(hk_checkpoint_reader_entry(&e, rd, idx, &st), &st);
  assert_int_equal(e.rank, 1);
  assert_int_equal(e.dims[0], M_ALL);
  {
    float got[M_ALL];
    assert_ok(hk_checkpoint_reader_read(rd, idx, got, sizeof got, &st), &st);
    assert_memory_equal(got, whole, sizeof whole);
  }
  assert_ok(hk_checkpoint_reader_find(rd, "z", &idx, &st), &st);
  assert_ok(hk_checkpoint_reader_entry(&e, rd, idx, &st), &st);
  assert_int_equal(e.dims[0], 0);
  hk_checkpoint_reader_free(rd);
  ckpt_dir_free(j->root, j->dir, j->save_path);
  free(j);
}

/* D25: a single-file checkpoint (saved without a group, the arrays whole)
 * restores on 3 ranks as each rank's block. */
static void test_shard_partitioned__a_single_file_checkpoint_restores_on_3_ranks_as_blocks(void **state) {
  job *j = calloc(1, sizeof *j);
  char prefix[1024];
  (void)state;
  assert_non_null(j);
  job_new(j, MODEL_FULL, 0, "partsingle", -1);
  save_blocks(j, 5, 10, prefix, sizeof prefix);
  assert_true(ckpt_data_exists(j->dir, "model.ckpt", 10));
  job_end(j);
  restore_on(j, MODEL_FULL, 3, prefix, 5);
  restore_on(j, MODEL_FULL, 1, prefix, 5);
  ckpt_dir_free(j->root, j->dir, j->save_path);
  free(j);
}

/* D23: a rank holding another count than its block fails the save on
 * every rank, naming the variable, the rank and both counts; no file of
 * the new checkpoint is written and the previous one stays the latest. */
static void test_shard_partitioned__a_rank_with_a_wrong_count_fails_the_save_on_every_rank(void **state) {
  job *j = calloc(1, sizeof *j);
  char prefix[1024], *latest = NULL;
  hk_status st = HK_STATUS_INIT;
  (void)state;
  assert_non_null(j);
  job_new(j, MODEL_FULL, 4, "partwrong", -1);
  save_blocks(j, 1, 10, prefix, sizeof prefix);
  job_end(j);
  /* Rank 2 holds 4 elements of "m": 12 in all, blocks of 3 each. */
  job_new(j, MODEL_FULL, 4, NULL, 2);
  for (int r = 0; r < 4; r++) set_blocks(&j->r[r], 4, 2, 20, MODEL_FULL);
  run_all(j, OP_SAVE, j->save_path, 20);
  for (int r = 0; r < 4; r++) {
    assert_int_equal(j->r[r].rc, HK_FAILED_PRECONDITION);
    if (!strstr(j->r[r].st.message,
                "rank 2 of 4 holds 4 elements of partitioned variable 'm', but its block of the "
                "12 elements the ranks hold together is 3 elements"))
      fail_msg("%s", j->r[r].st.message);
  }
  job_end(j);
  {
    char pattern[1100];
    FILE *p;
    char line[64] = "";
    snprintf(pattern, sizeof pattern, "ls -1 '%s' | grep -c '^model.ckpt-20' || true", j->dir);
    p = popen(pattern, "r");
    assert_non_null(p);
    assert_non_null(fgets(line, sizeof line, p));
    pclose(p);
    assert_int_equal(atoi(line), 0);
  }
  assert_ok(hk_checkpoint_latest(&latest, NULL, j->dir, NULL, &st), &st);
  assert_string_equal(latest, prefix);
  hk_env_free(NULL, latest);
  /* On restore, a count other than the block's fails every rank alike. */
  job_new(j, MODEL_FULL, 2, NULL, 1);
  run_all(j, OP_RESTORE, prefix, 0);
  for (int r = 0; r < 2; r++) {
    assert_int_equal(j->r[r].rc, HK_FAILED_PRECONDITION);
    if (!strstr(j->r[r].st.message,
                "rank 1 of 2: partitioned variable m has 6 elements on rank 1 of 2, but its "
                "block of the 11 elements of checkpoint"))
      fail_msg("%s", j->r[r].st.message);
  }
  job_end(j);
  ckpt_dir_free(j->root, j->dir, j->save_path);
  free(j);
}

static hk_code new_saver(job *j, const char *const *plist, size_t np, const char *const *vlist, size_t nv,
                         const char *const *prlist, size_t npr, hk_status *st) {
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  hk_saver *sv = NULL;
  hk_code rc;
  so.executor = j->r[0].ex;
  so.group = thread_group_vtable();
  so.group_user = &j->tg.members[0];
  so.partitioned_list = plist;
  so.npartitioned_list = np;
  so.var_list = vlist;
  so.nvar_list = nv;
  so.per_rank_list = prlist;
  so.nper_rank_list = npr;
  rc = hk_saver_new(&sv, &so, st);
  hk_saver_free(sv);
  return rc;
}

/* D26: the list's faults are refused by name: NULL entries, a name twice,
 * a name also per rank, a variable the Saver does not have, a variable
 * that is not one-dimensional (at hk_saver_new with a var_list, else at
 * the first save, on every rank). */
static void test_shard_partitioned__bad_partitioned_lists_are_refused_by_name(void **state) {
  static const char *const twice[2] = {"m", "m"}, *const nulls[2] = {"m", NULL}, *const nope[1] = {"nope"},
                           *const mw2[2] = {"m", "w2"}, *const gl[1] = {"global_step"}, *const ml[1] = {"m"},
                           *const both[2] = {"v", "m"}, *const vars[3] = {"m", "w", "global_step"};
  job *j = calloc(1, sizeof *j);
  hk_status st = HK_STATUS_INIT;
  (void)state;
  assert_non_null(j);
  job_new(j, MODEL_FULL, 2, "partbad", -1);
  assert_int_equal(new_saver(j, NULL, 1, NULL, 0, NULL, 0, &st), HK_INVALID_ARGUMENT);
  assert_non_null(strstr(st.message, "opts->partitioned_list is NULL but opts->npartitioned_list is 1"));
  assert_int_equal(new_saver(j, nulls, 2, NULL, 0, NULL, 0, &st), HK_INVALID_ARGUMENT);
  assert_non_null(strstr(st.message, "opts->partitioned_list[1] is NULL"));
  assert_int_equal(new_saver(j, twice, 2, NULL, 0, NULL, 0, &st), HK_INVALID_ARGUMENT);
  assert_non_null(strstr(st.message, "opts->partitioned_list names variable 'm' twice"));
  assert_int_equal(new_saver(j, both, 2, NULL, 0, ml, 1, &st), HK_INVALID_ARGUMENT);
  assert_non_null(strstr(st.message, "opts->partitioned_list[1]: variable 'm' is also in opts->per_rank_list"));
  /* With a var_list the variables are known at once. */
  assert_int_equal(new_saver(j, nope, 1, vars, 3, NULL, 0, &st), HK_NOT_FOUND);
  assert_non_null(strstr(st.message, "opts->partitioned_list[0]: the Saver has no variable named 'nope'"));
  assert_int_equal(new_saver(j, gl, 1, vars, 3, NULL, 0, &st), HK_INVALID_ARGUMENT);
  assert_non_null(strstr(st.message, "opts->partitioned_list[0]: variable 'global_step' has rank 0"));
  assert_ok(new_saver(j, ml, 1, vars, 3, NULL, 0, &st), &st);
  job_end(j);
  /* Without one, at the first save: every rank fails, nothing is written. */
  {
    static const int64_t w2[2] = {2, 3};
    job_new(j, MODEL_FULL, 2, NULL, -1);
    for (int r = 0; r < 2; r++) {
      hk_saver_options so = HK_SAVER_OPTIONS_INIT;
      rank_fx *x = &j->r[r];
      graph_fixture_variable(x->g, "w2", HK_DTYPE_F32, 2, w2);
      hk_saver_free(x->saver);
      so.env = &x->env;
      so.executor = x->ex;
      so.group = thread_group_vtable();
      so.group_user = &j->tg.members[r];
      so.partitioned_list = mw2;
      so.npartitioned_list = 2;
      assert_ok(hk_saver_new(&x->saver, &so, &st), &st);
    }
    run_all(j, OP_SAVE, j->save_path, 10);
    for (int r = 0; r < 2; r++) {
      assert_int_equal(j->r[r].rc, HK_INVALID_ARGUMENT);
      if (!strstr(j->r[r].st.message,
                  "rank 0 of 2: opts->partitioned_list[1]: variable 'w2' has rank 2; a "
                  "partitioned variable is one-dimensional"))
        fail_msg("%s", j->r[r].st.message);
    }
    job_end(j);
  }
  /* Ranks that partition other variables: refused on every rank. */
  job_new(j, MODEL_FULL, 2, NULL, -1);
  {
    hk_saver_options so = HK_SAVER_OPTIONS_INIT;
    hk_saver_free(j->r[1].saver);
    so.env = &j->r[1].env;
    so.executor = j->r[1].ex;
    so.group = thread_group_vtable();
    so.group_user = &j->tg.members[1];
    so.partitioned_list = both; /* "v", "m": without "z" */
    so.npartitioned_list = 2;
    assert_ok(hk_saver_new(&j->r[1].saver, &so, &st), &st);
  }
  for (int r = 0; r < 2; r++) set_blocks(&j->r[r], 2, 1, 10, MODEL_FULL);
  run_all(j, OP_SAVE, j->save_path, 10);
  for (int r = 0; r < 2; r++) {
    assert_int_equal(j->r[r].rc, HK_FAILED_PRECONDITION);
    if (!strstr(j->r[r].st.message, "rank 1 of 2 partitions other variables than rank 0 (2, rank 0's 3"))
      fail_msg("%s", j->r[r].st.message);
  }
  job_end(j);
  assert_int_equal(ckpt_data_exists(j->dir, "model.ckpt", 10), 0);
  ckpt_dir_free(j->root, j->dir, j->save_path);
  free(j);
}

/* D27: a restore reads only the slices that cover the rank's block: of a
 * partitioned-only model saved by 4 ranks ("m": 3, 3, 3, 2 elements),
 * rank 0 of 2 (elements 0:6) reads no data of shards 2 and 3, rank 1
 * (6:11) none of shards 0 and 1. */
static void test_shard_partitioned__a_restore_reads_only_the_slices_that_cover_the_block(void **state) {
  job *j = calloc(1, sizeof *j);
  char prefix[1024];
  (void)state;
  assert_non_null(j);
  job_new(j, MODEL_PARTITIONED_ONLY, 4, "partreads", -1);
  save_blocks(j, 7, 10, prefix, sizeof prefix);
  job_end(j);
  j->watch_prefix = prefix;
  j->watch_shards = 4;
  job_new(j, MODEL_PARTITIONED_ONLY, 2, NULL, -1);
  j->watch_prefix = NULL;
  for (int r = 0; r < 2; r++) set_blocks(&j->r[r], 2, 99, 0, MODEL_PARTITIONED_ONLY);
  run_all(j, OP_RESTORE, prefix, 0);
  for (int r = 0; r < 2; r++) {
    watch *w = &j->r[r].w;
    assert_ok(j->r[r].rc, &j->r[r].st);
    assert_blocks(&j->r[r], 2, 7, MODEL_PARTITIONED_ONLY);
    for (int k = 0; k < 4; k++) {
      int covers = r == 0 ? k < 2 : k >= 2;
      if (covers ? w->data_reads[k] == 0 : w->data_reads[k] != 0)
        fail_msg("rank %d read %ld pieces of shard %d's data", r, w->data_reads[k], k);
    }
  }
  job_end(j);
  ckpt_dir_free(j->root, j->dir, j->save_path);
  free(j);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shard_partitioned__saved_by_4_ranks_restores_each_ranks_block_on_2_3_and_4),
      cmocka_unit_test(test_shard_partitioned__restored_without_a_group_it_is_the_whole_array),
      cmocka_unit_test(test_shard_partitioned__a_single_file_checkpoint_restores_on_3_ranks_as_blocks),
      cmocka_unit_test(test_shard_partitioned__a_rank_with_a_wrong_count_fails_the_save_on_every_rank),
      cmocka_unit_test(test_shard_partitioned__bad_partitioned_lists_are_refused_by_name),
      cmocka_unit_test(test_shard_partitioned__a_restore_reads_only_the_slices_that_cover_the_block),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
