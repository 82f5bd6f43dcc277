/*
 * hooked::mpi — the communicator context (hooked/mpi.h, contract group S):
 * options, hk_mpi_new()'s errors (a root outside the communicator named
 * with its size, another options version, a bad env), the accessors, a
 * context over a sub-communicator, and that hk_mpi_free() releases
 * everything the context allocated through its env.
 */
#include "mpi_test.h"

#include <stdio.h>
#include <string.h>

static void test_options_init_fills_the_defaults_and_rejects_another_version(void) {
  hk_mpi_options o;
  memset(&o, 0x5a, sizeof o);
  assert_int_equal(hk_mpi_options_init(&o, HK_MPI_OPTIONS_VERSION), HK_OK);
  assert_int_equal(o.version, HK_MPI_OPTIONS_VERSION);
  assert_null(o.env);
  assert_true(o.comm == MPI_COMM_NULL);
  assert_int_equal(o.root, 0);
  assert_int_equal(hk_mpi_options_init(&o, HK_MPI_OPTIONS_VERSION + 1), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_mpi_options_init(&o, 0), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_mpi_options_init(NULL, HK_MPI_OPTIONS_VERSION), HK_INVALID_ARGUMENT);
}

static void test_new_rejects_a_root_outside_the_communicator_naming_the_size(void) {
  hk_mpi_options o = HK_MPI_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_mpi *m = (hk_mpi *)&o; /* set to NULL on failure */
  char want[64];
  snprintf(want, sizeof want, "size %d", mpi_size());
  o.root = mpi_size();
  assert_status(hk_mpi_new(&m, &o, &st), &st, HK_INVALID_ARGUMENT, want);
  assert_null(m);
  snprintf(want, sizeof want, "root %d", mpi_size());
  assert_non_null(strstr(st.message, want));
  o.root = -1;
  assert_status(hk_mpi_new(&m, &o, &st), &st, HK_INVALID_ARGUMENT, "root -1");
  assert_non_null(strstr(st.message, "size"));
  assert_null(m);
}

static void test_new_rejects_another_options_version_naming_it(void) {
  hk_mpi_options o = HK_MPI_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_mpi *m = NULL;
  o.version = 99;
  assert_status(hk_mpi_new(&m, &o, &st), &st, HK_INVALID_ARGUMENT, "version 99");
  assert_null(m);
  o.version = 0;
  assert_status(hk_mpi_new(&m, &o, &st), &st, HK_INVALID_ARGUMENT, "version 0");
  assert_null(m);
}

static void test_new_rejects_a_bad_env_and_a_null_out(void) {
  hk_mpi_options o = HK_MPI_OPTIONS_INIT;
  hk_env env = HK_ENV_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_mpi *m = NULL;
  env.version = 77;
  o.env = &env;
  assert_status(hk_mpi_new(&m, &o, &st), &st, HK_INVALID_ARGUMENT, "env");
  assert_null(m);
  env.version = HK_ENV_VERSION;
  assert_status(hk_mpi_new(NULL, &o, &st), &st, HK_INVALID_ARGUMENT, "out");
}

static void test_accessors_report_rank_size_and_chief(void) {
  hk_mpi *m = mpi_test_context(NULL);
  int cmp = MPI_UNEQUAL;
  assert_int_equal(hk_mpi_rank(m), mpi_rank());
  assert_int_equal(hk_mpi_size(m), mpi_size());
  assert_int_equal(hk_mpi_root(m), 0);
  assert_int_equal(hk_mpi_is_chief(m), mpi_rank() == 0);
  /* A duplicate of MPI_COMM_WORLD: hooked's messages never meet the program's. */
  assert_true(hk_mpi_comm(m) != MPI_COMM_WORLD);
  MPI_Comm_compare(hk_mpi_comm(m), MPI_COMM_WORLD, &cmp);
  assert_int_equal(cmp, MPI_CONGRUENT);
  hk_mpi_free(m);

  /* NULL answers. */
  assert_int_equal(hk_mpi_rank(NULL), -1);
  assert_int_equal(hk_mpi_size(NULL), 0);
  assert_int_equal(hk_mpi_root(NULL), -1);
  assert_int_equal(hk_mpi_is_chief(NULL), 0);
  assert_true(hk_mpi_comm(NULL) == MPI_COMM_NULL);
  hk_mpi_free(NULL);
}

static void test_the_last_rank_can_be_the_chief(void) {
  hk_mpi_options o = HK_MPI_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_mpi *m = NULL;
  o.root = mpi_size() - 1;
  assert_ok(hk_mpi_new(&m, &o, &st), &st);
  assert_int_equal(hk_mpi_root(m), mpi_size() - 1);
  assert_int_equal(hk_mpi_is_chief(m), mpi_rank() == mpi_size() - 1);
  hk_mpi_free(m);
}

/* A context over a sub-communicator averages among its own ranks only. */
static void test_a_context_over_a_sub_communicator_averages_among_its_ranks(void) {
  MPI_Comm half;
  hk_mpi_options o = HK_MPI_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_mpi *m = NULL;
  int color = mpi_rank() % 2;
  MPI_Comm_split(MPI_COMM_WORLD, color, mpi_rank(), &half);
  o.comm = half;
  assert_ok(hk_mpi_new(&m, &o, &st), &st);
  int members = (mpi_size() + 1 - color) / 2; /* ranks with this parity */
  assert_int_equal(hk_mpi_size(m), members);
  assert_int_equal(hk_mpi_rank(m), mpi_rank() / 2);
  /* The mean of the world ranks of this parity: color, color+2, ... */
  double v = (double)mpi_rank(), want = 0;
  for (int r = color; r < mpi_size(); r += 2) want += (double)r;
  want /= members;
  assert_ok(hk_mpi_average(m, HK_DTYPE_F64, &v, 1, &st), &st);
  assert_true(v == want);
  hk_mpi_free(m);
  MPI_Comm_free(&half);
}

static void test_free_releases_everything_the_context_allocated(void) {
  test_env *te = mpi_test_env(NULL);
  hk_status st = HK_STATUS_INIT;
  hk_mpi *m = mpi_test_context(&te->env);
  assert_true(test_alloc_live(&te->alloc) > 0);
  float buf[37];
  for (int i = 0; i < 37; i++) buf[i] = (float)i;
  assert_ok(hk_mpi_average(m, HK_DTYPE_F32, buf, 37, &st), &st);
  assert_ok(hk_mpi_reserve(m, 1 << 16, &st), &st);
  hk_mpi_free(m);
  assert_int_equal(test_alloc_live(&te->alloc), 0);
  assert_int_equal(test_env_release(te), 0);
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      MPI_CASE(test_options_init_fills_the_defaults_and_rejects_another_version),
      MPI_CASE(test_new_rejects_a_root_outside_the_communicator_naming_the_size),
      MPI_CASE(test_new_rejects_another_options_version_naming_it),
      MPI_CASE(test_new_rejects_a_bad_env_and_a_null_out),
      MPI_CASE(test_accessors_report_rank_size_and_chief),
      MPI_CASE(test_the_last_rank_can_be_the_chief),
      MPI_CASE(test_a_context_over_a_sub_communicator_averages_among_its_ranks),
      MPI_CASE(test_free_releases_everything_the_context_allocated),
  };
  return mpi_test_main(argc, argv, "mpi_context", tests, sizeof tests / sizeof tests[0], 2);
}
