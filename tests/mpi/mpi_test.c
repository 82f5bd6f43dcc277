/*
 * mpi_test — see mpi_test.h.
 */
#include "mpi_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int g_rank = -1, g_size = 0;
static int g_case_done;
/* Ranks other than 0: stderr goes into this file, copied out on a failure. */
static FILE *g_err_log;
static int g_real_stderr = -1;

/* Copy what this rank wrote on stderr so far to the real stderr, each line
 * prefixed with the rank. */
static void dump_err_log(void) {
  char line[2048];
  if (!g_err_log) return;
  fflush(stderr);
  rewind(g_err_log);
  while (fgets(line, sizeof line, g_err_log)) {
    char prefixed[2100];
    int n = snprintf(prefixed, sizeof prefixed, "[rank %d] %s", g_rank, line);
    if (n > 0 && write(g_real_stderr, prefixed, strlen(prefixed)) < 0) break;
  }
}

static void real_stderr_printf(const char *fmt, ...) HK_PRINTF(1, 2);
static void real_stderr_printf(const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (write(g_real_stderr >= 0 ? g_real_stderr : 2, buf, strlen(buf)) < 0) return;
}

int mpi_rank(void) { return g_rank; }
int mpi_size(void) { return g_size; }

/* A case that failed on this rank ends the job, but only once cmocka has
 * printed why: it prints a failure after the teardown, so the abort waits for
 * the next case's setup or the end of the group. */
static const char *g_failed_case;

static void abort_if_failed(void) {
  if (!g_failed_case) return;
  fflush(stdout);
  dump_err_log();
  real_stderr_printf(
      "rank %d of %d: %s FAILED on this rank; aborting the job (the other ranks may wait in a "
      "collective)\n",
      g_rank, g_size, g_failed_case);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

int mpi_case_setup(void **state) {
  (void)state;
  abort_if_failed();
  g_case_done = 0;
  return 0;
}

void mpi_case_run(void **state) {
  const mpi_case *c = *state;
  c->fn();
  g_case_done = 1;
}

int mpi_case_teardown(void **state) {
  const mpi_case *c = *state;
  if (!g_case_done) {
    g_failed_case = c->name; /* no barrier: the other ranks may be elsewhere */
    return 0;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return 0;
}

int mpi_test_main(int argc, char **argv, const char *group, const struct CMUnitTest *tests, size_t n, int min_ranks) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  if (g_size < min_ranks) {
    if (g_rank == 0)
      fprintf(stderr, "%s: needs at least %d ranks, got %d (run under mpirun -np)\n", group, min_ranks, g_size);
    MPI_Finalize();
    return 1;
  }
  /* cmocka's report from rank 0 only; the other ranks' stderr (cmocka's
   * failures, logs) is kept and printed when they fail. */
  if (g_rank != 0) {
    fflush(stderr);
    g_real_stderr = dup(2);
    g_err_log = tmpfile();
    if (g_real_stderr < 0 || !g_err_log || dup2(fileno(g_err_log), 2) < 0) {
      if (g_err_log) fclose(g_err_log);
      g_err_log = NULL;
    }
    if (!freopen("/dev/null", "w", stdout)) real_stderr_printf("rank %d: cannot silence stdout\n", g_rank);
  }
  int rc = _cmocka_run_group_tests(group, tests, n, NULL, NULL);
  abort_if_failed();
  fflush(stdout);
  if (rc != 0) dump_err_log();
  fflush(stderr);
  MPI_Finalize();
  return rc;
}

test_env *mpi_test_env(hk_env *real) {
  test_env *te = test_env_new();
  if (real) {
    *real = te->env;
    memset(&real->clock, 0, sizeof real->clock);
  }
  return te;
}

hk_mpi *mpi_test_context(const hk_env *env) {
  hk_mpi_options o;
  hk_status st = HK_STATUS_INIT;
  hk_mpi *m = NULL;
  assert_int_equal(hk_mpi_options_init(&o, HK_MPI_OPTIONS_VERSION), HK_OK);
  o.env = env;
  assert_ok(hk_mpi_new(&m, &o, &st), &st);
  assert_non_null(m);
  return m;
}

int mpi_same_bytes_everywhere(const void *p, size_t n) {
  unsigned char *all = malloc(n * (size_t)g_size + 1);
  assert_non_null(all);
  MPI_Allgather(p, (int)n, MPI_BYTE, all, (int)n, MPI_BYTE, MPI_COMM_WORLD);
  int same = 1;
  for (int r = 1; r < g_size; r++)
    if (memcmp(all, all + (size_t)r * n, n) != 0) {
      if (g_rank == 0) fprintf(stderr, "rank %d's %zu bytes differ from rank 0's\n", r, n);
      same = 0;
    }
  free(all);
  return same;
}

void mpi_allgather_i64(int64_t value, int64_t *out) {
  MPI_Allgather(&value, 1, MPI_INT64_T, out, 1, MPI_INT64_T, MPI_COMM_WORLD);
}

static int power_of_two(int n) { return n >= 1 && (n & (n - 1)) == 0; }

static float tree_f32(const float *v, int lo, int hi) {
  if (hi - lo == 1) return v[lo];
  const int mid = (lo + hi) / 2;
  return tree_f32(v, lo, mid) + tree_f32(v, mid, hi);
}
static double tree_f64(const double *v, int lo, int hi) {
  if (hi - lo == 1) return v[lo];
  const int mid = (lo + hi) / 2;
  return tree_f64(v, lo, mid) + tree_f64(v, mid, hi);
}

float mpi_mean_f32(const float *v, int n) {
  float acc = v[0];
  if (power_of_two(n))
    acc = tree_f32(v, 0, n);
  else
    for (int r = 1; r < n; r++) acc += v[r];
  return acc / (float)n;
}

double mpi_mean_f64(const double *v, int n) {
  double acc = v[0];
  if (power_of_two(n))
    acc = tree_f64(v, 0, n);
  else
    for (int r = 1; r < n; r++) acc += v[r];
  return acc / (double)n;
}
