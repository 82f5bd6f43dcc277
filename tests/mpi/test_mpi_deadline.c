/*
 * hooked::mpi — the deadline of collectives: a collective that some rank
 * never reaches ends every waiting rank with DEADLINE_EXCEEDED naming the
 * missing rank, the collective and the step, instead of hanging; a rank
 * that arrives later fails at once; the broken context refuses later
 * calls; the option is validated.
 *
 * Deadlines of 3 s. Nothing here measures time: a case that hangs is ended
 * by ctest's timeout, and the assertions are on the codes and messages.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mpi_test.h"

#define DEADLINE_SECS 3.0

static hk_mpi *context_with_deadline(const hk_env *env, double secs) {
  hk_mpi_options o = HK_MPI_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_mpi *m = NULL;
  o.env = env;
  o.collective_timeout_secs = secs;
  assert_ok(hk_mpi_new(&m, &o, &st), &st);
  return m;
}

/* "0, 1, 2" for ranks lo..hi. */
static void rank_list(char *buf, size_t cap, int lo, int hi) {
  size_t len = 0;
  buf[0] = '\0';
  for (int r = lo; r <= hi && len < cap; r++)
    len += (size_t)snprintf(buf + len, cap - len, "%s%d", r > lo ? ", " : "", r);
}

/* The last rank never calls hk_mpi_average(): every other rank fails with
 * DEADLINE_EXCEEDED naming it as missing and itself among those that
 * waited, and logs it. Then the last rank arrives: it fails at once, hearing
 * that the others gave up. Every later call on the context is refused. */
static void test_a_collective_the_last_rank_never_reaches_ends_every_rank_with_deadline_exceeded(void) {
  hk_env env;
  test_env *te = mpi_test_env(&env);
  hk_mpi *m = context_with_deadline(&env, DEADLINE_SECS);
  hk_status st = HK_STATUS_INIT;
  const int last = mpi_size() - 1;
  float data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  char want[128], waited[64];
  if (mpi_rank() != last) {
    assert_status(hk_mpi_average(m, HK_DTYPE_F32, data, 8, &st), &st, HK_DEADLINE_EXCEEDED,
                  "hk_mpi_average: collective #1 (average)");
    snprintf(want, sizeof want, "rank(s) %d did not arrive", last);
    assert_non_null(strstr(st.message, want));
    rank_list(waited, sizeof waited, 0, last - 1);
    snprintf(want, sizeof want, "rank(s) %s waited", waited);
    if (!strstr(st.message, want)) fail_msg("'%s' does not say '%s'", st.message, want);
    assert_non_null(strstr(st.message, "within 3 s"));
    assert_logged(te, HK_LOG_ERROR, st.message);
  }
  /* The late rank comes only once the others have given up. */
  MPI_Barrier(MPI_COMM_WORLD);
  if (mpi_rank() == last) {
    assert_status(hk_mpi_average(m, HK_DTYPE_F32, data, 8, &st), &st, HK_DEADLINE_EXCEEDED,
                  "hk_mpi_average: collective #1 (average)");
    assert_non_null(strstr(st.message, "gave up first"));
    assert_non_null(strstr(st.message, "every rank was there"));
  }
  /* The context is broken on every rank. */
  double x = 1.0;
  assert_status(hk_mpi_average_scalar(m, &x, &st), &st, HK_FAILED_PRECONDITION,
                "hk_mpi_average_scalar: the MPI context is broken: collective #1 (average) did not complete");
  hk_mpi_free(m);
  assert_int_equal(test_env_release(te), 0);
}

/* A session whose stop hook runs the agreement each step: the last rank
 * stops after step 3 on its own (no stop hook in its way), the others run
 * step 4 and fail its agreement, naming the step, the operation and the
 * missing rank. */
static void test_a_rank_that_leaves_early_fails_the_others_stop_agreement_naming_the_step(void) {
  hk_env env;
  test_env *te = mpi_test_env(&env);
  hk_mpi *m = context_with_deadline(&env, DEADLINE_SECS);
  hk_status st = HK_STATUS_INIT;
  hk_graph *g = NULL;
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  go.env = &env;
  assert_ok(hk_graph_new(&g, &go, &st), &st);
  hk_handle gs, c, train, new_gs;
  int64_t one = 1;
  hk_tensor c1 = hk_tensor_scalar_i64(&one);
  assert_ok(hk_graph_get_or_create_global_step(g, &gs, &st), &st);
  assert_ok(hk_graph_constant(g, &c, "one", &c1, &st), &st);
  assert_ok(hk_graph_assign_add(g, &train, "train", gs, c, &st), &st);
  assert_ok(hk_graph_op_output(g, &new_gs, train, 0, &st), &st);
  hk_mpi_stop_options so = HK_MPI_STOP_OPTIONS_INIT;
  so.handle_signals = 0;
  hk_hook *stop = NULL;
  assert_ok(hk_mpi_stop_hook_new(&stop, m, &so, &st), &st);
  hk_session_options o;
  assert_int_equal(hk_session_options_init(&o, HK_SESSION_OPTIONS_VERSION), HK_OK);
  o.env = &env;
  o.executor = hk_graph_executor(g);
  o.hooks = &stop;
  o.nhooks = 1;
  hk_session *s = NULL;
  assert_ok(hk_session_new(&s, &o, &st), &st);
  hk_run_args args;
  hk_tensor out;
  memset(&args, 0, sizeof args);
  args.fetches = &new_gs;
  args.nfetches = 1;
  const int last = mpi_size() - 1;
  for (int step = 1; step <= 3; step++) assert_ok(hk_session_run(s, &args, &out, NULL, &st), &st);
  if (mpi_rank() != last) {
    assert_status(hk_session_run(s, &args, &out, NULL, &st), &st, HK_DEADLINE_EXCEEDED,
                  "MPI stop hook: collective #5 (the stop agreement) at step 4 did not complete within 3 s");
    char want[64];
    snprintf(want, sizeof want, "rank(s) %d did not arrive", last);
    if (!strstr(st.message, want)) fail_msg("'%s' does not say '%s'", st.message, want);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  hk_session_free(s);
  hk_hook_free(stop);
  hk_graph_free(g);
  hk_mpi_free(m);
  assert_int_equal(test_env_release(te), 0);
}

/* Every rank at the collective: it completes under the deadline as without. */
static void test_collectives_every_rank_reaches_complete_as_before(void) {
  hk_mpi *m = context_with_deadline(NULL, DEADLINE_SECS);
  hk_status st = HK_STATUS_INIT;
  double x = (double)mpi_rank();
  assert_ok(hk_mpi_average_scalar(m, &x, &st), &st);
  assert_true(x == (double)(mpi_size() - 1) / 2.0);
  hk_mpi_free(m);
  m = context_with_deadline(NULL, INFINITY);
  x = 1.0;
  assert_ok(hk_mpi_average_scalar(m, &x, &st), &st);
  assert_true(x == 1.0);
  hk_mpi_free(m);
}

static void test_a_collective_timeout_that_is_not_positive_is_refused_naming_it(void) {
  const double bad[3] = {0.0, -1.0, NAN};
  for (int i = 0; i < 3; i++) {
    hk_mpi_options o = HK_MPI_OPTIONS_INIT;
    hk_status st = HK_STATUS_INIT;
    hk_mpi *m = (hk_mpi *)&st;
    o.collective_timeout_secs = bad[i];
    assert_status(hk_mpi_new(&m, &o, &st), &st, HK_INVALID_ARGUMENT, "opts->collective_timeout_secs");
    assert_null(m);
  }
}

int main(int argc, char **argv) {
  /* The cases that break a context come last, the one whose late rank
   * gives up at the start of the collective the very last: what they leave
   * in MPI (a collective that never completes, notices nobody reads) is why
   * a program ends the job after DEADLINE_EXCEEDED, and a context created
   * after it may not complete its creation. */
  const struct CMUnitTest tests[] = {
      MPI_CASE(test_collectives_every_rank_reaches_complete_as_before),
      MPI_CASE(test_a_collective_timeout_that_is_not_positive_is_refused_naming_it),
      MPI_CASE(test_a_rank_that_leaves_early_fails_the_others_stop_agreement_naming_the_step),
      MPI_CASE(test_a_collective_the_last_rank_never_reaches_ends_every_rank_with_deadline_exceeded),
  };
  return mpi_test_main(argc, argv, "mpi_deadline", tests, sizeof tests / sizeof tests[0], 2);
}
