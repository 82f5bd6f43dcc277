/*
 * mpi_test — cmocka groups run on every rank of an MPI job (tests/mpi/).
 *
 * Every test executable calls mpi_test_main(), which initializes MPI, runs
 * one cmocka group on every rank and finalizes MPI. Each case is a plain
 * `static void test_x(void)` listed with MPI_CASE(test_x).
 *
 * Output: rank 0 prints cmocka's usual report. The other ranks' stdout goes
 * to /dev/null and their stderr (cmocka's failure messages, anything logged)
 * into a temporary file, which is copied to the real stderr, each line
 * prefixed "[rank R]", when that rank fails.
 *
 * Failures: a case that does not run to its end on some rank (a failed
 * assertion, a crash cmocka caught) may have left the other ranks inside a
 * collective that will never complete. The case's teardown notes it, cmocka
 * prints why, and the next case's setup (or the end of the group) prints
 * "rank R of N: <case> FAILED" and calls MPI_Abort(MPI_COMM_WORLD, 1): the
 * job ends at once and mpirun (so ctest) reports a failure, instead of
 * hanging until the ctest timeout. A case that passes ends with a barrier on
 * MPI_COMM_WORLD, so every case starts on every rank together and no message
 * of one case reaches the next.
 */
#ifndef HOOKED_TESTS_MPI_TEST_H
#define HOOKED_TESTS_MPI_TEST_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <mpi.h>

#include "hooked/hooked.h"
#include "hooked/mpi.h"
#include "test_env.h"

typedef void (*mpi_case_fn)(void);
typedef struct mpi_case {
  mpi_case_fn fn;
  const char *name;
} mpi_case;

void mpi_case_run(void **state);
int mpi_case_setup(void **state);
int mpi_case_teardown(void **state);

/** A cmocka test entry for `static void f(void)`; use inside a function
 *  (the case record is a block-scope compound literal). */
#define MPI_CASE(f)                                                            \
  {                                                                            \
#f, mpi_case_run, mpi_case_setup, mpi_case_teardown, &(mpi_case) { f, #f } \
  }

/**
 * MPI_Init, check that the job has at least min_ranks ranks, run the group
 * on every rank, MPI_Finalize. @return cmocka's result (non-zero on a
 * failure), or 1 when the job is too small.
 */
int mpi_test_main(int argc, char **argv, const char *group, const struct CMUnitTest *tests, size_t n, int min_ranks);

/** This process's rank and the job's size in MPI_COMM_WORLD. */
int mpi_rank(void);
int mpi_size(void);

/** A test_env (counting allocator, log capture) and, in *real, an env using
 *  its allocator and log capture with the system clock (a parameter server
 *  and its waits need real time). */
test_env *mpi_test_env(hk_env *real);

/** A context over MPI_COMM_WORLD with env (may be NULL); asserts success. */
hk_mpi *mpi_test_context(const hk_env *env);

/** Collective: every rank's n bytes at p (n equal on every rank) are the
 *  same bytes as rank 0's. */
int mpi_same_bytes_everywhere(const void *p, size_t n);

/** Collective: every rank's value, into out[size]. */
void mpi_allgather_i64(int64_t value, int64_t *out);

/** The mean of v[0..n) (v[r]: rank r's value) in the order the contract
 *  fixes for n ranks (H49), computed serially: for a power of two n the
 *  tree sum(lo, hi) = sum(lo, mid) + sum(mid, hi), mid = (lo + hi) / 2,
 *  down to single values; for any other n rank 0's value, plus rank 1's,
 *  and so on; then divided by n. The tests' own reading of the contract,
 *  not the library's code. */
float mpi_mean_f32(const float *v, int n);
double mpi_mean_f64(const double *v, int n);

#endif
