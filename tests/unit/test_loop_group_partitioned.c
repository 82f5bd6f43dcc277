/*
 * A host loop over a group with a partitioned array (HK_LOOP_PARTITIONED,
 * contract H100): each rank holds its block (hk_group_block()) of a flat
 * global array "m" of 10 elements, as an optimizer's moments in ZeRO-1;
 * the loop's sharded checkpoints hold each block once, and a restart on
 * another rank count gives each rank the block of its new place. Ranks
 * are threads of one process joined by a thread group
 * (tests/support/thread_group.h).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <hooked/hooked.h>

#include "test_env.h"
#include "thread_group.h"
#include "tmpdir.h"

#define MAXR 4
#define G 10 /* the global array's elements */

typedef struct rank_prog {
  thread_group_member *member;
  const char *dir;
  int64_t last_step;
  int seed;
  size_t first, len; /* the rank's block of m */
  float m[G];
  float w[2]; /* replicated */
  hk_code rc;
  hk_status st;
  int restored;
} rank_prog;

/* The global array's element g after `steps` steps from `seed`'s values. */
static float m_value(size_t g, int seed, int64_t steps) { return (float)g * 1.5f + (float)seed + (float)steps; }

static void *rank_main(void *arg) {
  rank_prog *p = arg;
  hk_loop_options o = HK_LOOP_OPTIONS_INIT;
  hk_loop *loop = NULL;
  const int rank = thread_group_vtable()->rank(p->member), n = thread_group_vtable()->size(p->member);
  const int64_t w_dims[1] = {2};
  int64_t m_dims[1];

  hk_env env;
  hk_env_init(&env, HK_ENV_VERSION);
  env.log_level = HK_LOG_WARNING;
  o.env = &env;
  o.checkpoint_dir = p->dir;
  o.save_steps = 2;
  o.last_step = p->last_step;
  o.max_to_keep = 0;
  o.handle_signals = 0;
  o.group = thread_group_vtable();
  o.group_user = p->member;
  p->rc = hk_group_block(&p->first, &p->len, G, n, rank, &p->st);
  for (size_t i = 0; i < p->len; i++) p->m[i] = m_value(p->first + i, p->seed, 0);
  p->w[0] = p->w[1] = (float)p->seed;
  m_dims[0] = (int64_t)p->len;
  if (p->rc == HK_OK) p->rc = hk_loop_new(&loop, &o, &p->st);
  if (p->rc == HK_OK) p->rc = hk_loop_add_array(loop, "w", HK_DTYPE_F32, 1, w_dims, p->w, 0, &p->st);
  if (p->rc == HK_OK) p->rc = hk_loop_add_array(loop, "m", HK_DTYPE_F32, 1, m_dims, p->m, HK_LOOP_PARTITIONED, &p->st);
  if (p->rc == HK_OK) p->rc = hk_loop_start(loop, NULL, &p->st);
  if (p->rc == HK_OK) p->restored = hk_loop_restored_checkpoint(loop) != NULL;
  while (p->rc == HK_OK && !hk_loop_should_stop(loop)) {
    p->rc = hk_loop_step_begin(loop, NULL, &p->st);
    for (size_t i = 0; p->rc == HK_OK && i < p->len; i++) p->m[i] += 1.0f;
    if (p->rc == HK_OK) p->rc = hk_loop_step_end(loop, &p->st);
  }
  hk_status fst = HK_STATUS_INIT;
  hk_code frc = hk_loop_finish(loop, &fst);
  if (p->rc == HK_OK && frc != HK_OK) {
    p->rc = frc;
    p->st = fst;
  }
  hk_loop_free(loop);
  return NULL;
}

static void run_job(rank_prog *p, thread_group *tg, int n, const char *dir, int64_t last_step, int seed) {
  thread_group_init(tg, n);
  for (int r = 0; r < n; r++) {
    memset(&p[r], 0, sizeof p[r]);
    p[r].member = &tg->members[r];
    p[r].dir = dir;
    p[r].last_step = last_step;
    p[r].seed = seed;
  }
  assert_int_equal(thread_group_run(rank_main, p, sizeof p[0], n), 0);
  for (int r = 0; r < n; r++)
    if (p[r].rc != HK_OK) fail_msg("rank %d of %d: %s: %s", r, n, hk_code_name(p[r].rc), p[r].st.message);
  thread_group_destroy(tg);
}

/* 3 ranks save their blocks at 0, 2 and 3; 2 and then 4 ranks resume at 3
 * from other initial values, each with its new block of the saved array. */
static void test_loop_group__partitioned_array_resumes_as_the_new_ranks_blocks(void **state) {
  (void)state;
  char *dir = test_tmpdir_new("loop-group-part");
  thread_group tg;
  rank_prog p[MAXR];

  run_job(p, &tg, 3, dir, 3, 1);
  for (int r = 0; r < 3; r++)
    for (size_t i = 0; i < p[r].len; i++) assert_true(p[r].m[i] == m_value(p[r].first + i, 1, 3));
  static const int counts[2] = {2, 4};
  for (int c = 0; c < 2; c++) {
    const int n = counts[c];
    run_job(p, &tg, n, dir, 3, 500); /* at its last step already: no step runs */
    for (int r = 0; r < n; r++) {
      assert_true(p[r].restored);
      for (size_t i = 0; i < p[r].len; i++) assert_true(p[r].m[i] == m_value(p[r].first + i, 1, 3));
      assert_true(p[r].w[0] == 1.0f);
    }
  }
  test_tmpdir_free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_loop_group__partitioned_array_resumes_as_the_new_ranks_blocks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
