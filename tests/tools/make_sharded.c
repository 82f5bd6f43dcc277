/*
 * make_sharded — write sharded checkpoints of known values (checkpoint-format.md
 * "Sharded checkpoints") for the hooked-ckpt and numpy tests: N ranks, threads
 * of this process joined by a thread group (tests/support/thread_group.h),
 * save "<dir>/model.ckpt-<step>" for each step given.
 *
 *   make_sharded DIR NRANKS STEP...
 *
 * Values at step s: "w" F32 [4, 5] holds s + k / 4 (k the flat index), "b"
 * F64 [3] holds s * 10 + k, the global step s; per-rank "rng" U8 [4] holds
 * 16 * rank + k; partitioned "p" F32, 7 elements in all, of which each rank
 * holds its block (hk_group_block), holds s * 100 + k (k the index in all 7).
 * Exit status 0 when every save succeeded.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hooked/hooked.h>
#include <hooked/checkpoint.h>
#include <hooked/graph.h>

#include "thread_group.h"

#define MAXR 16

typedef struct rank_job {
  int rank;
  thread_group *tg;
  const char *save_path;
  int64_t *steps;
  int nsteps;
  int failed;
} rank_job;

static int add(hk_graph *g, const char *name, hk_dtype dt, int32_t rank, const int64_t *dims, hk_status *st) {
  hk_variable_def d = HK_VARIABLE_DEF_INIT;
  hk_handle h;
  d.name = name;
  d.dtype = dt;
  d.rank = rank;
  d.dims = dims;
  return hk_graph_variable(g, &h, &d, st) == HK_OK;
}

static int assign(hk_raw_session *rs, hk_executor *ex, const char *name, hk_dtype dt, int32_t rank, const int64_t *dims,
                  void *data, hk_status *st) {
  size_t i;
  hk_tensor t;
  return hk_executor_find_variable(ex, name, &i, st) == HK_OK &&
         hk_tensor_init(&t, dt, rank, dims, data, st) == HK_OK &&
         hk_raw_session_assign_variable(rs, i, &t, st) == HK_OK;
}

static void *rank_main(void *arg) {
  static const int64_t w_dims[2] = {4, 5}, b_dims[1] = {3}, r_dims[1] = {4};
  static const char *const per_rank[1] = {"rng"}, *const partitioned[1] = {"p"};
  rank_job *j = arg;
  size_t p_first = 0, p_len = 0;
  int64_t p_dims[1];
  hk_status st = HK_STATUS_INIT;
  hk_graph *g = NULL;
  hk_raw_session *rs = NULL;
  hk_saver *saver = NULL;
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  hk_handle h;
  int ok = hk_group_block(&p_first, &p_len, 7, j->tg->size, j->rank, &st) == HK_OK;
  p_dims[0] = (int64_t)p_len;
  ok = ok && hk_graph_new(&g, NULL, &st) == HK_OK && add(g, "w", HK_DTYPE_F32, 2, w_dims, &st) &&
       add(g, "b", HK_DTYPE_F64, 1, b_dims, &st) && hk_graph_create_global_step(g, &h, &st) == HK_OK &&
       add(g, "rng", HK_DTYPE_U8, 1, r_dims, &st) && add(g, "p", HK_DTYPE_F32, 1, p_dims, &st) &&
       hk_raw_session_open(&rs, hk_graph_executor(g), &st) == HK_OK;
  if (ok) {
    so.executor = hk_graph_executor(g);
    so.group = thread_group_vtable();
    so.group_user = &j->tg->members[j->rank];
    so.per_rank_list = per_rank;
    so.nper_rank_list = 1;
    so.partitioned_list = partitioned;
    so.npartitioned_list = 1;
    so.max_to_keep = 0;
    ok = hk_saver_new(&saver, &so, &st) == HK_OK;
  }
  for (int s = 0; ok && s < j->nsteps; s++) {
    int64_t step = j->steps[s];
    float w[20];
    double b[3];
    unsigned char rng[4];
    float p[7];
    for (size_t k = 0; k < p_len; k++) p[k] = (float)(step * 100) + (float)(p_first + k);
    for (int k = 0; k < 20; k++) w[k] = (float)step + (float)k / 4.0f;
    for (int k = 0; k < 3; k++) b[k] = (double)step * 10 + k;
    for (int k = 0; k < 4; k++) rng[k] = (unsigned char)(16 * j->rank + k);
    hk_executor *ex = hk_graph_executor(g);
    ok = assign(rs, ex, "w", HK_DTYPE_F32, 2, w_dims, w, &st) && assign(rs, ex, "b", HK_DTYPE_F64, 1, b_dims, b, &st) &&
         assign(rs, ex, "rng", HK_DTYPE_U8, 1, r_dims, rng, &st) &&
         assign(rs, ex, "p", HK_DTYPE_F32, 1, p_dims, p, &st) &&
         assign(rs, ex, "global_step", HK_DTYPE_I64, 0, NULL, &step, &st) &&
         hk_saver_save(NULL, saver, rs, j->save_path, step, 0, &st) == HK_OK;
  }
  if (!ok) {
    fprintf(stderr, "make_sharded: rank %d: %s\n", j->rank, st.message);
    j->failed = 1;
  }
  hk_saver_free(saver);
  hk_raw_session_free(rs);
  hk_graph_free(g);
  return NULL;
}

int main(int argc, char **argv) {
  thread_group tg;
  rank_job jobs[MAXR];
  int64_t steps[64];
  char save_path[4096];
  int n, nsteps = argc - 3, failed = 0;
  if (argc < 4 || (n = atoi(argv[2])) < 1 || n > MAXR || nsteps > 64) {
    fprintf(stderr, "usage: make_sharded DIR NRANKS STEP...\n");
    return 2;
  }
  for (int s = 0; s < nsteps; s++) steps[s] = strtoll(argv[3 + s], NULL, 10);
  snprintf(save_path, sizeof save_path, "%s/model.ckpt", argv[1]);
  thread_group_init(&tg, n);
  for (int r = 0; r < n; r++) jobs[r] = (rank_job){r, &tg, save_path, steps, nsteps, 0};
  if (thread_group_run(rank_main, jobs, sizeof jobs[0], n) != 0) {
    fprintf(stderr, "make_sharded: cannot start a thread per rank\n");
    failed = 1;
  }
  for (int r = 0; r < n; r++) failed |= jobs[r].failed;
  thread_group_destroy(&tg);
  return failed;
}
