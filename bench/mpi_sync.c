/*
 * mpi_sync — what hooked::mpi's synchronous data-parallel pieces cost
 * against the raw MPI calls that move the same bytes (issue 10).
 *
 * Run under mpirun, e.g. `mpirun -np 2 build/bench/mpi_sync` and `-np 4`;
 * rank 0 prints. The averaging cases (mpi_sync_average.c):
 *   (A) hk_mpi_average() against MPI_Allreduce(MPI_IN_PLACE, MPI_SUM) of
 *       the same f32 buffer followed by the division by N (what a program
 *       would write without hooked), at 100 KiB, 1 MiB and 16 MiB: each
 *       round times a loop of calls of each, interleaved, the order
 *       rotated; the round's ratio is hooked's time over the raw one's.
 *       After the timing, a check: hk_mpi_average() gives the same bits on
 *       every rank (a hash of the result, gathered) and the largest
 *       difference from the raw allreduce's mean (which may differ in the
 *       last bits: MPI sums in an order of its own choosing).
 *   (A') the bytes each rank sends in one hk_mpi_average() of each size,
 *       counted through MPI's profiling interface (tests/mpi/pmpi_count.c
 *       is linked in), against a ring all-reduce's 2 (N-1)/N of the buffer,
 *       and whether any MPI collective (whose bytes are unseen) was called.
 *   (D) fusion: 200 f32 arrays of 1 to 100 KiB averaged by one
 *       hk_mpi_average_arrays() call against 200 hk_mpi_average() calls
 *       (and, for scale, 200 raw MPI_Allreduce calls), rotated likewise,
 *       each timed over 4 back-to-back repetitions.
 *   (E) overlap: a 4 MiB average started with hk_mpi_average_start(),
 *       moved by hk_mpi_average_test() between the 16 chunks of a compute
 *       loop calibrated to take about as long as the average alone, then
 *       finished; against the average alone and the loop alone, rotated,
 *       each timed over 8 back-to-back repetitions.
 *       The hidden share is (average + loop - both) / average: 1 when the
 *       average costs nothing beside the loop, 0 when nothing overlapped.
 *   (B) the broadcast hook (hk_mpi_broadcast_hook_new) in a real session:
 *       each measured unit is a fresh host loop (hooked/loop.h) with one
 *       registered f32 array of that size, started (hk_loop_start) and
 *       finished. Two timing hooks bracket the broadcast hook in the loop's
 *       hook list: the first one's after_create_session does an
 *       MPI_Barrier and reads the clock, the broadcast hook runs, the
 *       second one reads the clock; the unit's figure is the slowest rank's
 *       time between the two. That is the whole after_create_session of the
 *       hook: an MPI_Allgather of one fingerprint per rank (every rank has
 *       the same model), then an MPI_Bcast of the loop's global_step (8
 *       bytes) and of the array. Against it: one MPI_Bcast of the array's
 *       bytes from rank 0, from a barrier to the slowest rank's end, and
 *       the hook's three MPI calls made raw (what hooked adds beyond them).
 *       The whole start+finish of such a loop with and without the hook is
 *       printed beside it for scale. A hook runs once per session, so a
 *       unit is a whole fresh loop: timing the hook alone in a loop of its
 *       own would not be how a program meets it.
 *   (C) the stop-agreement hook (hk_mpi_stop_hook_new, handle_signals 0)
 *       in a host loop of empty steps (hk_loop_step_begin/end and nothing
 *       between) against the same loop without it: the hook's per-step
 *       cost, against a raw 1-int MPI_Allreduce(MPI_MAX) per step and a raw
 *       MPI_2INT MPI_MAXLOC allreduce (what the hook sends: its stop flag
 *       and its rank) per step.
 * Every case is timed from an MPI_Barrier to the slowest rank's end (the
 * ranks' times are reduced with MPI_MAX), --reps rounds, the cases of one
 * size interleaved so that drift hits all alike. Ratios are against the
 * raw reference measured in the same round. Timings depend on the machine,
 * the transport (here shared memory between processes of one host) and
 * whether ranks outnumber cores. The output ends with one machine-readable
 * line per goal, min / median / max over the rounds (bytes: over the ranks
 * and sizes):
 *   goal average_vs_allreduce_100KiB min=X median=Y max=Z    (A), goal <= 1.1
 *   goal average_vs_allreduce_1MiB ...                       (A), goal <= 1.1
 *   goal average_vs_allreduce_16MiB ...                      (A), goal <= 1.1
 *   goal bytes_per_rank_vs_ring ...                          (A'), goal <= 1.05
 *   goal fused_vs_per_array_calls ...                        (D), goal < 1
 *   goal overlap_hidden_share ...                            (E), the higher the better
 *
 * Exit status: 0, or 1 on an error or when hk_mpi_average() gave different
 * bits on two ranks; 2 for a usage error.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#if !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* clock_gettime, sysconf */
#endif

#include "mpi_sync.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef HOOKED_BENCH_BUILD_TYPE
#define HOOKED_BENCH_BUILD_TYPE ""
#endif

#define NSIZES 3
static const size_t sizes[NSIZES] = {100u << 10, 1u << 20, 16u << 20};
/* Fresh loop starts per repetition of (B). */
#define B_UNITS_PER_REP 5
bench B;

double now_secs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void die(const char *what, const hk_status *st) {
  fprintf(stderr, "mpi_sync (rank %d): %s: %s: %s\n", B.rank, what, st ? hk_code_name(st->code) : "error",
          st ? st->message : "");
  MPI_Abort(MPI_COMM_WORLD, 1);
}

void mpi_check(int err, const char *what) {
  if (err != MPI_SUCCESS) {
    fprintf(stderr, "mpi_sync (rank %d): %s failed (%d)\n", B.rank, what, err);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

/* The slowest rank's value. */
double slowest(double secs) {
  double out = 0;
  mpi_check(MPI_Allreduce(&secs, &out, 1, MPI_DOUBLE, MPI_MAX, B.comm), "MPI_Allreduce of a time");
  return out;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double median(const double *v, int n) {
  double tmp[MAX_REPS * B_UNITS_PER_REP];
  memcpy(tmp, v, (size_t)n * sizeof *v);
  qsort(tmp, (size_t)n, sizeof *tmp, cmp_double);
  return n % 2 ? tmp[n / 2] : 0.5 * (tmp[n / 2 - 1] + tmp[n / 2]);
}

const char *size_name(size_t bytes, char *buf, size_t n) {
  if (bytes >= (1u << 20))
    snprintf(buf, n, "%zu MiB", bytes >> 20);
  else
    snprintf(buf, n, "%zu KiB", bytes >> 10);
  return buf;
}

/* FNV-1a of the bytes: the same on every rank iff (almost surely) the bits are. */
unsigned long long hash_bytes(const void *p, size_t n) {
  const unsigned char *b = p;
  unsigned long long h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

void fill(float *x, size_t n, int rank) {
  for (size_t i = 0; i < n; i++) x[i] = 0.1f * (float)(rank + 1) + 1e-6f * (float)(i % 1000);
}

spread spread_of(const double *v, int n) {
  spread s = {v[0], median(v, n), v[0]};
  for (int i = 1; i < n; i++) {
    s.min = v[i] < s.min ? v[i] : s.min;
    s.max = v[i] > s.max ? v[i] : s.max;
  }
  return s;
}

static void goal_line(const char *name, spread s) {
  printf("goal %s min=%.3f median=%.3f max=%.3f\n", name, s.min, s.med, s.max);
}

/* ---- (B) the broadcast hook --------------------------------------------------------- */

typedef struct bracket {
  double t0, t1;
} bracket;
static bracket g_bracket;

static hk_code mark_start(void *user, hk_raw_session *rs, hk_coordinator *coord, hk_creation_context *ctx,
                          hk_status *st) {
  (void)user, (void)rs, (void)coord, (void)ctx, (void)st;
  MPI_Barrier(B.comm);
  g_bracket.t0 = now_secs();
  return HK_OK;
}

static hk_code mark_end(void *user, hk_raw_session *rs, hk_coordinator *coord, hk_creation_context *ctx,
                        hk_status *st) {
  (void)user, (void)rs, (void)coord, (void)ctx, (void)st;
  g_bracket.t1 = now_secs();
  return HK_OK;
}

static const hk_hook_vtable mark_start_vtable = {.version = HK_HOOK_VTABLE_VERSION, .after_create_session = mark_start};
static const hk_hook_vtable mark_end_vtable = {.version = HK_HOOK_VTABLE_VERSION, .after_create_session = mark_end};

/* One fresh loop over `data` (n floats) with `hooks`: new, add, start,
 * finish, free. @return the whole unit's time on this rank. */
static double loop_unit(float *data, size_t n, hk_hook *const *hooks, size_t nhooks) {
  hk_status st = HK_STATUS_INIT;
  hk_loop_options lo = HK_LOOP_OPTIONS_INIT;
  hk_loop *loop = NULL;
  const int64_t dims[1] = {(int64_t)n};
  lo.env = &B.env;
  lo.hooks = hooks;
  lo.nhooks = nhooks;
  lo.handle_signals = 0;
  lo.log_step_count_steps = 0;
  MPI_Barrier(B.comm);
  double t0 = now_secs();
  if (hk_loop_new(&loop, &lo, &st) != HK_OK ||
      hk_loop_add_array(loop, "w", HK_DTYPE_F32, 1, dims, data, 0, &st) != HK_OK ||
      hk_loop_start(loop, NULL, &st) != HK_OK || hk_loop_finish(loop, &st) != HK_OK)
    die("a host loop with the broadcast hook", &st);
  hk_loop_free(loop);
  return now_secs() - t0;
}

static void bench_broadcast(size_t bytes, hk_hook *bcast, hk_hook *m0, hk_hook *m1) {
  const size_t n = bytes / sizeof(float);
  const int units = B.reps * B_UNITS_PER_REP;
  double *hook = malloc(5 * (size_t)units * sizeof(double)), *whole = hook + units, *bare = whole + units,
         *raw = bare + units, *same = raw + units;
  unsigned print = 0x1234u, *prints = malloc((size_t)B.size * sizeof *prints);
  int64_t gs = 0;
  float *w = malloc(bytes);
  char name[32];
  hk_hook *with[3] = {m0, bcast, m1}, *without[2] = {m0, m1};
  if (!hook || !w || !prints) die("out of memory", NULL);
  fill(w, n, B.rank);
  loop_unit(w, n, with, 3); /* warm-up */
  loop_unit(w, n, without, 2);
  mpi_check(MPI_Bcast(w, (int)bytes, MPI_BYTE, 0, B.comm), "MPI_Bcast");
  for (int u = 0; u < units; u++) {
    /* Before each timed case alike: every rank writes its array (the
     * workers' values then differ from the chief's, and the bytes are in
     * the state a training step would leave them). */
    fill(w, n, B.rank);
    whole[u] = slowest(loop_unit(w, n, with, 3));
    hook[u] = slowest(g_bracket.t1 - g_bracket.t0);
    bare[u] = slowest(loop_unit(w, n, without, 2));
    fill(w, n, B.rank);
    MPI_Barrier(B.comm);
    double t0 = now_secs();
    mpi_check(MPI_Bcast(w, (int)bytes, MPI_BYTE, 0, B.comm), "MPI_Bcast");
    raw[u] = slowest(now_secs() - t0);
    /* The hook's own MPI calls, raw: its overhead beyond them is hooked's. */
    fill(w, n, B.rank);
    MPI_Barrier(B.comm);
    t0 = now_secs();
    mpi_check(MPI_Allgather(&print, 1, MPI_UNSIGNED, prints, 1, MPI_UNSIGNED, B.comm), "MPI_Allgather");
    mpi_check(MPI_Bcast(&gs, 8, MPI_BYTE, 0, B.comm), "MPI_Bcast");
    mpi_check(MPI_Bcast(w, (int)bytes, MPI_BYTE, 0, B.comm), "MPI_Bcast");
    same[u] = slowest(now_secs() - t0);
  }
  if (B.rank == 0) {
    double h = median(hook, units), r = median(raw, units), wh = median(whole, units), ba = median(bare, units),
           sm = median(same, units);
    printf(
        "%-8s %3d starts  broadcast hook %10.1f us  raw MPI_Bcast %10.1f us  ratio %5.2fx  "
        "(the hook's three calls raw: %.1f us, %.2fx; loop start+finish: %.1f us with the hook, %.1f us "
        "without)\n",
        size_name(bytes, name, sizeof name), units, h * 1e6, r * 1e6, h / r, sm * 1e6, h / sm, wh * 1e6, ba * 1e6);
  }
  free(prints);
  free(hook);
  free(w);
}

/* ---- (C) the stop agreement ---------------------------------------------------------- */

static hk_loop *open_step_loop(hk_hook *const *hooks, size_t nhooks, float *user) {
  hk_status st = HK_STATUS_INIT;
  hk_loop_options lo = HK_LOOP_OPTIONS_INIT;
  hk_loop *loop = NULL;
  const int64_t dims[1] = {16};
  lo.env = &B.env;
  lo.hooks = hooks;
  lo.nhooks = nhooks;
  lo.handle_signals = 0;
  lo.log_step_count_steps = 0;
  if (hk_loop_new(&loop, &lo, &st) != HK_OK ||
      hk_loop_add_array(loop, "user", HK_DTYPE_F32, 1, dims, user, 0, &st) != HK_OK ||
      hk_loop_start(loop, NULL, &st) != HK_OK)
    die("starting a host loop", &st);
  return loop;
}

static double run_steps(hk_loop *loop, long steps) {
  hk_status st = HK_STATUS_INIT;
  MPI_Barrier(B.comm);
  double t0 = now_secs();
  for (long i = 0; i < steps; i++)
    if (hk_loop_step_begin(loop, NULL, &st) != HK_OK || hk_loop_step_end(loop, &st) != HK_OK) die("a loop step", &st);
  return slowest(now_secs() - t0) / (double)steps;
}

static double run_raw_allreduce(long steps, int pair) {
  int in1 = B.rank & 1, out1 = 0;
  int in2[2] = {0, B.rank}, out2[2];
  MPI_Barrier(B.comm);
  double t0 = now_secs();
  for (long i = 0; i < steps; i++) {
    if (pair)
      mpi_check(MPI_Allreduce(in2, out2, 1, MPI_2INT, MPI_MAXLOC, B.comm), "MPI_Allreduce");
    else
      mpi_check(MPI_Allreduce(&in1, &out1, 1, MPI_INT, MPI_MAX, B.comm), "MPI_Allreduce");
  }
  return slowest(now_secs() - t0) / (double)steps;
}

static void bench_stop(void) {
  hk_status st = HK_STATUS_INIT;
  hk_mpi_stop_options so = HK_MPI_STOP_OPTIONS_INIT;
  hk_hook *stop = NULL;
  float u0[16] = {0}, u1[16] = {0};
  double t_with[MAX_REPS], t_without[MAX_REPS], t_raw1[MAX_REPS], t_raw2[MAX_REPS];
  so.handle_signals = 0;
  if (hk_mpi_stop_hook_new(&stop, B.mpi, &so, &st) != HK_OK) die("hk_mpi_stop_hook_new", &st);
  hk_loop *with = open_step_loop(&stop, 1, u0), *without = open_step_loop(NULL, 0, u1);
  const long warm = B.steps / 10 + 1;
  run_steps(with, warm);
  run_steps(without, warm);
  run_raw_allreduce(warm, 0);
  run_raw_allreduce(warm, 1);
  for (int rep = 0; rep < B.reps; rep++) {
    t_with[rep] = run_steps(with, B.steps);
    t_without[rep] = run_steps(without, B.steps);
    t_raw1[rep] = run_raw_allreduce(B.steps, 0);
    t_raw2[rep] = run_raw_allreduce(B.steps, 1);
  }
  if (hk_loop_finish(with, &st) != HK_OK) die("finishing the loop", &st);
  if (hk_loop_finish(without, &st) != HK_OK) die("finishing the loop", &st);
  hk_loop_free(with);
  hk_loop_free(without);
  hk_hook_free(stop);
  if (B.rank == 0) {
    double w = median(t_with, B.reps), wo = median(t_without, B.reps), r1 = median(t_raw1, B.reps),
           r2 = median(t_raw2, B.reps);
    printf(
        "host loop, empty steps: %.2f us/step with the stop hook, %.2f us/step without: the hook adds %.2f us/step\n",
        w * 1e6, wo * 1e6, (w - wo) * 1e6);
    printf("raw MPI_Allreduce per step: 1 int (MPI_MAX) %.2f us, MPI_2INT (MPI_MAXLOC, what the hook sends) %.2f us\n",
           r1 * 1e6, r2 * 1e6);
    printf("the hook's cost per step: %.2fx a raw 1-int allreduce, %.2fx a raw 2-int MAXLOC allreduce\n", (w - wo) / r1,
           (w - wo) / r2);
  }
}

/* ---- main ------------------------------------------------------------------------------ */

static int parse_long(const char *flag, const char *text, long max, long *out) {
  char *end;
  long v;
  errno = 0;
  v = strtol(text, &end, 10);
  if (end == text || *end != '\0' || errno == ERANGE || v < 1 || v > max) {
    if (B.rank == 0)
      fprintf(stderr, "mpi_sync: invalid value '%s' for %s: expected an integer in 1..%ld\n", text, flag, max);
    return 2;
  }
  *out = v;
  return 0;
}

int main(int argc, char **argv) {
  hk_status st = HK_STATUS_INIT;
  hk_mpi_options mo = HK_MPI_OPTIONS_INIT;
  long reps = 15, steps = 20000;
  int averaging_only = 0;
  hk_hook *bcast = NULL, *m0 = NULL, *m1 = NULL;

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &B.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &B.size);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int rc = 0;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      if (B.rank == 0)
        printf(
            "usage: mpirun -np N mpi_sync [--reps N] [--steps N] [--averaging-only]\n"
            "  --reps N    rounds (repetitions) of every case (default 15)\n"
            "  --steps N   host-loop steps and raw allreduces per repetition of the stop-agreement "
            "case (default 20000)\n"
            "  --averaging-only  only (A), (A'), (D) and (E), and the goal lines\n");
      MPI_Finalize();
      return 0;
    }
    if (strcmp(a, "--averaging-only") == 0)
      averaging_only = 1;
    else if (strcmp(a, "--reps") == 0 && i + 1 < argc)
      rc = parse_long(a, argv[++i], MAX_REPS, &reps);
    else if (strcmp(a, "--steps") == 0 && i + 1 < argc)
      rc = parse_long(a, argv[++i], 100000000L, &steps);
    else {
      if (B.rank == 0) fprintf(stderr, "mpi_sync: unknown or incomplete option '%s'\nTry 'mpi_sync --help'.\n", a);
      rc = 2;
    }
    if (rc) {
      MPI_Finalize();
      return rc;
    }
  }
  B.reps = (int)reps;
  B.steps = steps;
  hk_env_init(&B.env, HK_ENV_VERSION);
  B.env.log_level = HK_LOG_WARNING; /* the broadcast hook's INFO line at every start */
  mpi_check(MPI_Comm_dup(MPI_COMM_WORLD, &B.comm), "MPI_Comm_dup");
  mo.env = &B.env;
  if (hk_mpi_new(&B.mpi, &mo, &st) != HK_OK) die("hk_mpi_new", &st);
  if (hk_mpi_reserve(B.mpi, sizes[NSIZES - 1], &st) != HK_OK) die("hk_mpi_reserve", &st);
  if (hk_mpi_broadcast_hook_new(&bcast, B.mpi, &st) != HK_OK ||
      hk_hook_new(&m0, &mark_start_vtable, NULL, "bench_mark_start", &B.env, &st) != HK_OK ||
      hk_hook_new(&m1, &mark_end_vtable, NULL, "bench_mark_end", &B.env, &st) != HK_OK)
    die("creating the hooks", &st);

  if (B.rank == 0) {
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    const char *bt = HOOKED_BENCH_BUILD_TYPE;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, ",\n")] = '\0';
    printf("hooked %s mpi_sync: %d ranks, %s; %ld cores online on rank 0's host%s; build type %s\n", hk_version(),
           B.size, lib, cores, cores < B.size ? " (ranks outnumber cores: timings include their time-sharing)" : "",
           *bt ? bt : "(none: unoptimized)");
    printf(
        "(A), (D), (E): %d rounds, hooked and its reference interleaved, the order rotated each round; min / "
        "median / max of the per-round ratios\n(B), (C): the median of %d repetitions; every figure from an "
        "MPI_Barrier to the slowest rank's end\n\n",
        B.reps, B.reps);
    printf(
        "(A) gradient averaging, f32, in place: hk_mpi_average (point-to-point reduce-scatter, %s, all-gather) vs "
        "raw MPI_Allreduce(MPI_SUM) + division by %d\n",
        (B.size & (B.size - 1)) == 0 ? "halving, sums in a fixed tree" : "pairwise, sums in rank order", B.size);
    fflush(stdout);
  }
  spread avg[NSIZES];
  for (int k = 0; k < NSIZES; k++) avg[k] = bench_average(sizes[k]);
  if (B.rank == 0) {
    printf("\n(A') bytes sent per rank by one hk_mpi_average, counted through MPI's profiling interface\n");
    fflush(stdout);
  }
  spread bytes = bench_bytes();
  if (B.rank == 0) {
    printf("\n(D) fusion: hk_mpi_average_arrays vs one hk_mpi_average per array\n");
    fflush(stdout);
  }
  spread fused = bench_fusion();
  if (B.rank == 0) {
    printf("\n(E) overlap: hk_mpi_average_start / _test / _finish around a compute loop\n");
    fflush(stdout);
  }
  spread overlap = bench_overlap();

  if (!averaging_only) {
    if (B.rank == 0) {
      printf(
          "\n(B) broadcast hook, one fresh host loop per start with one f32 array of the size: the hook's "
          "after_create_session\n    (bracketed by two timing hooks; MPI_Allgather of the model fingerprint + "
          "MPI_Bcast of global_step + MPI_Bcast of the array) vs a raw MPI_Bcast of the array's bytes\n");
      fflush(stdout);
    }
    for (int k = 0; k < NSIZES; k++) bench_broadcast(sizes[k], bcast, m0, m1);

    if (B.rank == 0) {
      printf("\n(C) stop agreement (hk_mpi_stop_hook_new, handle_signals 0), %ld steps per repetition\n", B.steps);
      fflush(stdout);
    }
    bench_stop();
  }

  if (B.rank == 0) {
    printf("\n");
    goal_line("average_vs_allreduce_100KiB", avg[0]);
    goal_line("average_vs_allreduce_1MiB", avg[1]);
    goal_line("average_vs_allreduce_16MiB", avg[2]);
    goal_line("bytes_per_rank_vs_ring", bytes);
    goal_line("fused_vs_per_array_calls", fused);
    goal_line("overlap_hidden_share", overlap);
  }

  hk_hook_free(bcast);
  hk_hook_free(m0);
  hk_hook_free(m1);
  hk_mpi_free(B.mpi);
  MPI_Comm_free(&B.comm);
  int bad = B.bad_bits;
  MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (B.rank == 0 && bad) printf("\nhk_mpi_average gave different bits on two ranks\n");
  MPI_Finalize();
  return bad ? 1 : 0;
}
