/*
 * hooked::mpi — averaging traffic (issue "At cluster scale, traffic"),
 * counted through MPI's profiling interface (pmpi_count.h):
 *  - hk_mpi_average() sends and receives, per rank, within 5% of a ring
 *    all-reduce's 2 (N-1)/N of the buffer, in point-to-point messages only
 *    (no collective whose bytes the profiling interface cannot see), and
 *    its bits are the mean in the order the rank count fixes, on every
 *    rank, call after call, in 2 log2 N sends per segment at a power of two;
 *  - the two halves (hk_mpi_reduce_scatter_average, hk_mpi_allgather_blocks)
 *    each move half of that, over the partition hk_mpi_block() gives, and
 *    together give hk_mpi_average()'s bits;
 *  - hk_mpi_average_arrays() fuses arrays: one exchange per 1 MiB segment of
 *    a fused buffer (2 log2 N sends at a power of two, 2 (N-1) otherwise),
 *    not one per array, with per-array averaging's bits;
 *  - requests in flight (start / test / finish) give the blocking bits,
 *    finish in any order, allocate nothing once warm, and fail at the
 *    deadline naming a rank that never started.
 *
 * Every rank's inputs are functions of the rank and the element, so each
 * rank computes the expected mean itself, in the order the rank count
 * fixes (mpi_mean_f32()), and compares bits.
 */
#include "mpi_test.h"

#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmpi_count.h"

/* Order-sensitive values: 1e8f + 1.0f is 1e8f. */
static const float vals_f32[] = {1e8f, 1.0f, -1e8f, 3.0f, 0.5f, -7.25f, 1e-3f, 2e7f, 0.1f, -3e-5f, 6.5e6f};
static const double vals_f64[] = {1e17, 1.0, -1e17, 3.0, 0.5, -7.25, 1e-3, 4e16, 0.1};
#define NF32 (sizeof vals_f32 / sizeof vals_f32[0])
#define NF64 (sizeof vals_f64 / sizeof vals_f64[0])

static float in_f32(int rank, size_t e, unsigned salt) { return vals_f32[((size_t)rank * 3 + e * 7 + salt) % NF32]; }
static double in_f64(int rank, size_t e, unsigned salt) { return vals_f64[((size_t)rank * 5 + e * 3 + salt) % NF64]; }

/* The mean in the order the rank count fixes (H49). */
static float mean_f32(size_t e, unsigned salt) {
  float v[64];
  assert_true(mpi_size() <= 64);
  for (int r = 0; r < mpi_size(); r++) v[r] = in_f32(r, e, salt);
  return mpi_mean_f32(v, mpi_size());
}
static double mean_f64(size_t e, unsigned salt) {
  double v[64];
  assert_true(mpi_size() <= 64);
  for (int r = 0; r < mpi_size(); r++) v[r] = in_f64(r, e, salt);
  return mpi_mean_f64(v, mpi_size());
}

static void fill_f32(float *x, size_t n, unsigned salt) {
  for (size_t e = 0; e < n; e++) x[e] = in_f32(mpi_rank(), e, salt);
}
static void fill_f64(double *x, size_t n, unsigned salt) {
  for (size_t e = 0; e < n; e++) x[e] = in_f64(mpi_rank(), e, salt);
}

static void expect_mean_f32(const float *x, size_t n, unsigned salt, const char *what) {
  for (size_t e = 0; e < n; e++) {
    float want = mean_f32(e, salt);
    if (memcmp(&x[e], &want, sizeof want) != 0)
      fail_msg("rank %d, %s: element %zu of %zu is %.9g, the fixed-order mean is %.9g", mpi_rank(), what, e, n,
               (double)x[e], (double)want);
  }
}
static void expect_mean_f64(const double *x, size_t n, unsigned salt, const char *what) {
  for (size_t e = 0; e < n; e++) {
    double want = mean_f64(e, salt);
    if (memcmp(&x[e], &want, sizeof want) != 0)
      fail_msg("rank %d, %s: element %zu of %zu is %.17g, the fixed-order mean is %.17g", mpi_rank(), what, e, n, x[e],
               want);
  }
}

/* The sends of one full average of non-empty blocks (H85): halving at a
 * power of two, one message a step, log2 N steps a phase; pairwise
 * otherwise, N-1 messages a phase. */
static int64_t sends_per_average(void) {
  const int n = mpi_size();
  if ((n & (n - 1)) != 0) return 2 * (int64_t)(n - 1);
  int steps = 0;
  while ((1 << steps) < n) steps++;
  return 2 * (int64_t)steps;
}

/* The bytes counted are within 5% of `want` (and at least it). */
static void expect_bytes_near(int64_t got, double want, const char *what) {
  if (fabs((double)got - want) > 0.05 * want)
    fail_msg("rank %d of %d, %s: %lld bytes, %.0f expected (more than 5%% apart)", mpi_rank(), mpi_size(), what,
             (long long)got, want);
}

/* ---- the ring's bytes, in a fixed order ------------------------------------------------ */

static void test_average_sends_a_ring_s_bytes_per_rank_and_gives_fixed_order_bits(void) {
  hk_mpi *m = mpi_test_context(NULL);
  hk_status st = HK_STATUS_INIT;
  const double N = mpi_size();
  /* Sizes not a multiple of 2, 3 or 4: uneven blocks. */
  const size_t counts[] = {262147, 100003};
  for (size_t c = 0; c < 2; c++) {
    const size_t n = counts[c];
    float *x = malloc(n * sizeof *x), *first = malloc(n * sizeof *first);
    assert_non_null(x);
    assert_non_null(first);
    for (int call = 0; call < 3; call++) {
      fill_f32(x, n, (unsigned)c);
      pmpi_count_start();
      assert_ok(hk_mpi_average(m, HK_DTYPE_F32, x, n, &st), &st);
      pmpi_counts k = pmpi_count_stop();
      const double S = (double)(n * sizeof(float)), ring = 2 * (N - 1) / N * S;
      assert_int_equal(k.collectives, 0); /* every byte went through a counted send */
      expect_bytes_near(k.bytes_sent, ring, "bytes sent by hk_mpi_average");
      expect_bytes_near(k.bytes_recv, ring, "bytes received by hk_mpi_average");
      /* 2 (N-1) sends at most per segment of 1 MiB (262147 floats: 2 segments) */
      const size_t segments = (n * sizeof(float) + ((size_t)1 << 20) - 1) >> 20;
      assert_true(k.sends <= (long long)(2 * (mpi_size() - 1) * (int)segments));
      assert_true(k.sends <= sends_per_average() * (int64_t)segments); /* fewer when a block is empty */
      expect_mean_f32(x, n, (unsigned)c, "hk_mpi_average");
      if (call == 0)
        memcpy(first, x, n * sizeof *x);
      else
        assert_memory_equal(first, x, n * sizeof *x); /* repeated runs: the same bits */
    }
    assert_true(mpi_same_bytes_everywhere(x, n * sizeof *x));
    free(x);
    free(first);
  }
  /* f64 too. */
  enum { N64 = 50021 };
  double *y = malloc(N64 * sizeof *y);
  assert_non_null(y);
  fill_f64(y, N64, 1);
  pmpi_count_start();
  assert_ok(hk_mpi_average(m, HK_DTYPE_F64, y, N64, &st), &st);
  pmpi_counts k = pmpi_count_stop();
  assert_int_equal(k.collectives, 0);
  expect_bytes_near(k.bytes_sent, 2 * (N - 1) / N * (double)(N64 * sizeof(double)), "bytes sent, f64");
  expect_mean_f64(y, N64, 1, "hk_mpi_average f64");
  free(y);
  hk_mpi_free(m);
}

/* ---- the partition and the two halves ------------------------------------------------ */

static void test_block_partition_is_consecutive_in_rank_order_and_refuses_bad_arguments(void) {
  hk_status st = HK_STATUS_INIT;
  for (int nranks = 1; nranks <= 7; nranks++)
    for (size_t count = 0; count <= 23; count++) {
      size_t next = 0;
      for (int r = 0; r < nranks; r++) {
        size_t first = 99, len = 99;
        assert_ok(hk_mpi_block(&first, &len, count, nranks, r, &st), &st);
        assert_int_equal(first, next); /* consecutive, in rank order */
        assert_int_equal(len, count / (size_t)nranks + ((size_t)r < count % (size_t)nranks));
        next = first + len;
      }
      assert_int_equal(next, count); /* they tile the buffer */
    }
  size_t first = 7, len = 7;
  assert_status(hk_mpi_block(&first, &len, 10, 0, 0, &st), &st, HK_INVALID_ARGUMENT, "nranks 0");
  assert_status(hk_mpi_block(&first, &len, 10, 4, 4, &st), &st, HK_INVALID_ARGUMENT, "rank 4");
  assert_status(hk_mpi_block(&first, &len, 10, 4, -1, &st), &st, HK_INVALID_ARGUMENT, "rank -1");
  assert_status(hk_mpi_block(NULL, &len, 10, 4, 0, &st), &st, HK_INVALID_ARGUMENT, "first");
  assert_status(hk_mpi_block(&first, NULL, 10, 4, 0, &st), &st, HK_INVALID_ARGUMENT, "len");
  assert_int_equal(first, 7);
  assert_int_equal(len, 7);
}

static void test_the_two_halves_each_move_half_and_compose_to_the_average(void) {
  hk_mpi *m = mpi_test_context(NULL);
  hk_status st = HK_STATUS_INIT;
  const double N = mpi_size();
  enum { COUNT = 120011 };
  float *x = malloc(COUNT * sizeof *x), *before = malloc(COUNT * sizeof *before);
  assert_non_null(x);
  assert_non_null(before);
  size_t first, len;
  assert_ok(hk_mpi_block(&first, &len, COUNT, mpi_size(), mpi_rank(), &st), &st);
  fill_f32(x, COUNT, 5);
  memcpy(before, x, COUNT * sizeof *x);
  const double half = (N - 1) / N * (double)(COUNT * sizeof(float));

  pmpi_count_start();
  assert_ok(hk_mpi_reduce_scatter_average(m, HK_DTYPE_F32, x, COUNT, &st), &st);
  pmpi_counts k = pmpi_count_stop();
  assert_int_equal(k.collectives, 0);
  expect_bytes_near(k.bytes_sent, half, "bytes sent by the reduce-scatter");
  /* This rank's block holds the mean; the rest is as it was. */
  for (size_t e = 0; e < COUNT; e++) {
    if (e >= first && e < first + len) {
      float want = mean_f32(e, 5);
      if (memcmp(&x[e], &want, sizeof want) != 0) fail_msg("rank %d: block element %zu is not the mean", mpi_rank(), e);
    } else if (memcmp(&x[e], &before[e], sizeof x[e]) != 0) {
      fail_msg("rank %d: element %zu outside its block changed", mpi_rank(), e);
    }
  }
  /* A ZeRO-1 step would update the block here; the all-gather then gives
   * every rank every block. */
  pmpi_count_start();
  assert_ok(hk_mpi_allgather_blocks(m, HK_DTYPE_F32, x, COUNT, &st), &st);
  k = pmpi_count_stop();
  assert_int_equal(k.collectives, 0);
  expect_bytes_near(k.bytes_sent, half, "bytes sent by the all-gather");
  expect_mean_f32(x, COUNT, 5, "reduce-scatter then all-gather");
  assert_true(mpi_same_bytes_everywhere(x, COUNT * sizeof *x));

  /* The all-gather alone moves each rank's own block, whatever it holds. */
  for (size_t e = 0; e < COUNT; e++) x[e] = (float)mpi_rank();
  assert_ok(hk_mpi_allgather_blocks(m, HK_DTYPE_F32, x, COUNT, &st), &st);
  for (int r = 0; r < mpi_size(); r++) {
    size_t f, l;
    assert_ok(hk_mpi_block(&f, &l, COUNT, mpi_size(), r, &st), &st);
    for (size_t e = f; e < f + l; e++)
      if (x[e] != (float)r) fail_msg("rank %d: element %zu is %g, not rank %d's", mpi_rank(), e, (double)x[e], r);
  }
  free(x);
  free(before);
  hk_mpi_free(m);
}

/* ---- fusion ----------------------------------------------------------------------------- */

#define NARR 200

/* 200 arrays of 1 to 100 KiB (mostly f32, a run of f64 in the middle). */
typedef struct arrays {
  hk_mpi_array a[NARR];
  void *mem[NARR];
} arrays;

static void make_arrays(arrays *A, unsigned salt) {
  for (size_t i = 0; i < NARR; i++) {
    const size_t kib = 1 + (i * 37) % 100;
    A->a[i].dtype = i >= 90 && i < 100 ? HK_DTYPE_F64 : HK_DTYPE_F32;
    const size_t esize = A->a[i].dtype == HK_DTYPE_F32 ? 4 : 8;
    A->a[i].count = kib * 1024 / esize - i % 3; /* uneven */
    A->mem[i] = malloc(A->a[i].count * esize);
    assert_non_null(A->mem[i]);
    A->a[i].data = A->mem[i];
  }
  for (size_t i = 0; i < NARR; i++) {
    if (A->a[i].dtype == HK_DTYPE_F32)
      fill_f32(A->a[i].data, A->a[i].count, salt + (unsigned)i);
    else
      fill_f64(A->a[i].data, A->a[i].count, salt + (unsigned)i);
  }
}

static void refill(arrays *A, unsigned salt) {
  for (size_t i = 0; i < NARR; i++) {
    if (A->a[i].dtype == HK_DTYPE_F32)
      fill_f32(A->a[i].data, A->a[i].count, salt + (unsigned)i);
    else
      fill_f64(A->a[i].data, A->a[i].count, salt + (unsigned)i);
  }
}

static void free_arrays(arrays *A) {
  for (size_t i = 0; i < NARR; i++) free(A->mem[i]);
}

static void expect_arrays_mean(const arrays *A, unsigned salt) {
  for (size_t i = 0; i < NARR; i++) {
    char what[48];
    snprintf(what, sizeof what, "array %zu", i);
    if (A->a[i].dtype == HK_DTYPE_F32)
      expect_mean_f32(A->a[i].data, A->a[i].count, salt + (unsigned)i, what);
    else
      expect_mean_f64(A->a[i].data, A->a[i].count, salt + (unsigned)i, what);
  }
}

/* The fused buffers Horovod's rule makes of A under `threshold`: runs of
 * one dtype, each at most `threshold` bytes, an array of the threshold or
 * more alone. */
/* A full average goes in segments of 1 MiB (H85). */
static size_t segments_of(size_t bytes) { return bytes == 0 ? 1 : (bytes + ((size_t)1 << 20) - 1) >> 20; }

/* The fused buffers hk_mpi_average_arrays() makes of A at `threshold`;
 * *segments: the segments they are averaged in (NULL: not wanted). */
static size_t expected_buffers(const arrays *A, size_t threshold, size_t *segments) {
  size_t n = 0, open_bytes = 0, segs = 0;
  hk_dtype open_dtype = HK_DTYPE_INVALID;
  for (size_t i = 0; i < NARR; i++) {
    const size_t bytes = A->a[i].count * (A->a[i].dtype == HK_DTYPE_F32 ? 4 : 8);
    if (bytes >= threshold) {
      if (open_dtype != HK_DTYPE_INVALID) segs += segments_of(open_bytes);
      n++;
      segs += segments_of(bytes);
      open_dtype = HK_DTYPE_INVALID;
    } else if (open_dtype == A->a[i].dtype && open_bytes + bytes <= threshold) {
      open_bytes += bytes;
    } else {
      if (open_dtype != HK_DTYPE_INVALID) segs += segments_of(open_bytes);
      n++;
      open_dtype = A->a[i].dtype;
      open_bytes = bytes;
    }
  }
  if (open_dtype != HK_DTYPE_INVALID) segs += segments_of(open_bytes);
  if (segments) *segments = segs;
  return n;
}

static hk_mpi *context_with_fusion(const hk_env *env, size_t threshold) {
  hk_mpi_options o;
  hk_status st = HK_STATUS_INIT;
  hk_mpi *m = NULL;
  assert_int_equal(hk_mpi_options_init(&o, HK_MPI_OPTIONS_VERSION), HK_OK);
  o.env = env;
  o.fusion_threshold_bytes = threshold;
  assert_ok(hk_mpi_new(&m, &o, &st), &st);
  return m;
}

static void test_fused_arrays_make_one_exchange_per_fused_buffer_with_per_array_bits(void) {
  hk_status st = HK_STATUS_INIT;
  const int64_t per_exchange = sends_per_average(); /* every block is non-empty here */
  arrays A;
  make_arrays(&A, 11);
  size_t total = 0;
  for (size_t i = 0; i < NARR; i++) total += A.a[i].count * (A.a[i].dtype == HK_DTYPE_F32 ? 4 : 8);

  /* Per array: one exchange each. */
  hk_mpi *m = mpi_test_context(NULL);
  pmpi_count_start();
  for (size_t i = 0; i < NARR; i++) assert_ok(hk_mpi_average(m, A.a[i].dtype, A.a[i].data, A.a[i].count, &st), &st);
  pmpi_counts per_array = pmpi_count_stop();
  assert_int_equal(per_array.sends, per_exchange * NARR);
  expect_arrays_mean(&A, 11);

  /* Fused, the default threshold (64 MiB): the f32 run, the f64 run, the f32 run. */
  refill(&A, 11);
  pmpi_count_start();
  assert_ok(hk_mpi_average_arrays(m, A.a, NARR, &st), &st);
  pmpi_counts fused = pmpi_count_stop();
  size_t segs = 0;
  assert_int_equal(expected_buffers(&A, HK_MPI_DEFAULT_FUSION_BYTES, &segs), 3);
  assert_int_equal(fused.sends, per_exchange * (int64_t)segs); /* one exchange per 1 MiB of each buffer */
  assert_int_equal(fused.collectives, 0);
  expect_bytes_near(fused.bytes_sent, 2.0 * (mpi_size() - 1) / mpi_size() * (double)total, "fused bytes sent");
  expect_arrays_mean(&A, 11); /* the same bits as per array */
  hk_mpi_free(m);

  /* A 256 KiB threshold: more buffers, still one exchange each. */
  m = context_with_fusion(NULL, 256 << 10);
  const size_t want = expected_buffers(&A, 256 << 10, NULL);
  assert_true(want > 3 && want < NARR);
  refill(&A, 11);
  pmpi_count_start();
  assert_ok(hk_mpi_average_arrays(m, A.a, NARR, &st), &st);
  fused = pmpi_count_stop();
  assert_int_equal(fused.sends, per_exchange * (int64_t)want);
  expect_arrays_mean(&A, 11);
  hk_mpi_free(m);

  /* Threshold 1: no fusion, one exchange per array. */
  m = context_with_fusion(NULL, 1);
  refill(&A, 11);
  pmpi_count_start();
  assert_ok(hk_mpi_average_arrays(m, A.a, NARR, &st), &st);
  fused = pmpi_count_stop();
  assert_int_equal(fused.sends, per_exchange * NARR);
  expect_arrays_mean(&A, 11);
  hk_mpi_free(m);
  free_arrays(&A);
}

/* ---- requests in flight ------------------------------------------------------------------- */

static void test_requests_in_flight_give_the_blocking_bits_in_any_finish_order(void) {
  test_env *te = mpi_test_env(NULL);
  hk_status st = HK_STATUS_INIT;
  /* A deadline well above what these averages take even on a loaded
   * machine: ranks that waited for each other would fail, not hang. */
  hk_mpi_options o;
  hk_mpi *m = NULL;
  assert_int_equal(hk_mpi_options_init(&o, HK_MPI_OPTIONS_VERSION), HK_OK);
  o.env = &te->env;
  o.collective_timeout_secs = 30;
  assert_ok(hk_mpi_new(&m, &o, &st), &st);
  enum { NA = 70001, NB = 3, NC = 40000 };
  float *a = malloc(NA * sizeof *a), *c = malloc(NC * sizeof *c), b[NB];
  double small[5];
  assert_non_null(a);
  assert_non_null(c);
  hk_mpi_average_request *ra = NULL, *rb = NULL, *rc = NULL;
  assert_ok(hk_mpi_average_request_new(&ra, m, &st), &st);
  assert_ok(hk_mpi_average_request_new(&rb, m, &st), &st);
  assert_ok(hk_mpi_average_request_new(&rc, m, &st), &st);
  for (int step = 0; step < 12; step++) {
    if (step == 2) test_alloc_reset_counts(&te->alloc);
    const unsigned salt = (unsigned)step;
    fill_f32(a, NA, salt);
    fill_f32(b, NB, salt + 1);
    fill_f64(small, 5, salt + 2);
    fill_f32(c, NC, salt + 3);
    const hk_mpi_array la[1] = {{HK_DTYPE_F32, a, NA}};
    const hk_mpi_array lb[2] = {{HK_DTYPE_F32, b, NB}, {HK_DTYPE_F64, small, 5}};
    const hk_mpi_array lc[1] = {{HK_DTYPE_F32, c, NC}};
    assert_ok(hk_mpi_average_start(ra, la, 1, &st), &st);
    int done = 0;
    assert_ok(hk_mpi_average_test(ra, &done, &st), &st);
    assert_ok(hk_mpi_average_start(rb, lb, 2, &st), &st);
    assert_ok(hk_mpi_average_test(rb, &done, &st), &st);
    /* A blocking average while requests are in flight counts in the order. */
    double v = in_f64(mpi_rank(), 0, salt);
    assert_ok(hk_mpi_average(m, HK_DTYPE_F64, &v, 1, &st), &st);
    assert_ok(hk_mpi_average_start(rc, lc, 1, &st), &st);
    /* Finish in another order than the start's, and on odd steps the
     * other way round on odd ranks. */
    hk_mpi_average_request *order[3] = {rc, ra, rb};
    if (step % 2 && mpi_rank() % 2) order[0] = rb, order[2] = rc;
    for (int i = 0; i < 3; i++) assert_ok(hk_mpi_average_finish(order[i], &st), &st);
    expect_mean_f32(a, NA, salt, "request a");
    expect_mean_f32(b, NB, salt + 1, "request b, f32");
    expect_mean_f64(small, 5, salt + 2, "request b, f64");
    expect_mean_f32(c, NC, salt + 3, "request c");
    double want = mean_f64(0, salt);
    assert_memory_equal(&v, &want, sizeof v);
  }
  if (test_alloc_count(&te->alloc) != 0)
    fail_msg("rank %d: %ld allocations in steady-state steps with requests in flight", mpi_rank(),
             test_alloc_count(&te->alloc));
  /* test after completion reports done; finish then returns at once. */
  fill_f32(c, NC, 9);
  const hk_mpi_array lc[1] = {{HK_DTYPE_F32, c, NC}};
  assert_ok(hk_mpi_average_start(rc, lc, 1, &st), &st);
  int done = 0;
  while (!done) assert_ok(hk_mpi_average_test(rc, &done, &st), &st);
  expect_mean_f32(c, NC, 9, "tested to completion");
  assert_ok(hk_mpi_average_finish(rc, &st), &st);
  hk_mpi_average_request_free(ra);
  hk_mpi_average_request_free(rb);
  hk_mpi_average_request_free(rc);
  free(a);
  free(c);
  hk_mpi_free(m);
  assert_int_equal(test_env_release(te), 0);
}

static void test_requests_refuse_misuse_naming_it(void) {
  hk_mpi *m = mpi_test_context(NULL);
  hk_status st = HK_STATUS_INIT;
  hk_mpi_average_request *r = NULL;
  float x[8] = {0};
  int32_t ints[2] = {0};
  int done = 0;
  assert_status(hk_mpi_average_request_new(&r, NULL, &st), &st, HK_INVALID_ARGUMENT, "mpi");
  assert_null(r);
  assert_status(hk_mpi_average_request_new(NULL, m, &st), &st, HK_INVALID_ARGUMENT, "out");
  assert_ok(hk_mpi_average_request_new(&r, m, &st), &st);
  assert_status(hk_mpi_average_finish(r, &st), &st, HK_FAILED_PRECONDITION, "not in flight");
  assert_status(hk_mpi_average_test(r, &done, &st), &st, HK_FAILED_PRECONDITION, "not in flight");
  assert_status(hk_mpi_average_test(r, NULL, &st), &st, HK_INVALID_ARGUMENT, "done");
  const hk_mpi_array bad[2] = {{HK_DTYPE_F32, x, 8}, {HK_DTYPE_I32, ints, 2}};
  assert_status(hk_mpi_average_start(r, bad, 2, &st), &st, HK_INVALID_ARGUMENT, "arrays[1]: dtype i32");
  const hk_mpi_array null_data[1] = {{HK_DTYPE_F32, NULL, 3}};
  assert_status(hk_mpi_average_start(r, null_data, 1, &st), &st, HK_INVALID_ARGUMENT, "arrays[0]: data is NULL");
  assert_status(hk_mpi_average_start(r, NULL, 2, &st), &st, HK_INVALID_ARGUMENT, "arrays is NULL");
  assert_status(hk_mpi_average_start(NULL, bad, 1, &st), &st, HK_INVALID_ARGUMENT, "req");
  assert_status(hk_mpi_average_arrays(m, bad, 2, &st), &st, HK_INVALID_ARGUMENT, "arrays[1]");
  assert_status(hk_mpi_average_arrays(NULL, bad, 1, &st), &st, HK_INVALID_ARGUMENT, "mpi");
  assert_status(hk_mpi_reduce_scatter_average(m, HK_DTYPE_I64, ints, 1, &st), &st, HK_INVALID_ARGUMENT, "i64");
  assert_status(hk_mpi_allgather_blocks(NULL, HK_DTYPE_F32, x, 1, &st), &st, HK_INVALID_ARGUMENT, "mpi");
  /* Nobody entered an exchange: a real one works, and a second start of a
   * request in flight is refused without sending. */
  for (size_t e = 0; e < 8; e++) x[e] = in_f32(mpi_rank(), e, 4);
  const hk_mpi_array good[1] = {{HK_DTYPE_F32, x, 8}};
  assert_ok(hk_mpi_average_start(r, good, 1, &st), &st);
  assert_status(hk_mpi_average_start(r, good, 1, &st), &st, HK_FAILED_PRECONDITION, "already in flight");
  assert_ok(hk_mpi_average_finish(r, &st), &st);
  expect_mean_f32(x, 8, 4, "after the refusals");
  assert_status(hk_mpi_average_finish(r, &st), &st, HK_FAILED_PRECONDITION, "not in flight");
  hk_mpi_average_request_free(r);
  hk_mpi_average_request_free(NULL);
  hk_mpi_free(m);
}

/* The last rank never starts: every other rank's finish fails at the
 * deadline naming it; the context is broken afterwards. */
static void test_a_request_whose_peer_never_starts_fails_at_the_deadline_naming_it(void) {
  hk_env env;
  test_env *te = mpi_test_env(&env);
  hk_mpi_options o = HK_MPI_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_mpi *m = NULL;
  o.env = &env;
  o.collective_timeout_secs = 2;
  assert_ok(hk_mpi_new(&m, &o, &st), &st);
  hk_mpi_average_request *r = NULL;
  assert_ok(hk_mpi_average_request_new(&r, m, &st), &st);
  const int last = mpi_size() - 1;
  float x[1000];
  for (size_t e = 0; e < 1000; e++) x[e] = (float)e;
  if (mpi_rank() != last) {
    const hk_mpi_array l[1] = {{HK_DTYPE_F32, x, 1000}};
    assert_ok(hk_mpi_average_start(r, l, 1, &st), &st);
    assert_status(hk_mpi_average_finish(r, &st), &st, HK_DEADLINE_EXCEEDED,
                  "hk_mpi_average_start: collective #1 (average)");
    char want[64];
    snprintf(want, sizeof want, "rank(s) %d did not arrive", last);
    if (!strstr(st.message, want)) fail_msg("'%s' does not say '%s'", st.message, want);
    assert_status(hk_mpi_average(m, HK_DTYPE_F32, x, 4, &st), &st, HK_FAILED_PRECONDITION, "broken");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  hk_mpi_average_request_free(r); /* cancels what is left in flight */
  hk_mpi_free(m);
  assert_int_equal(test_env_release(te), 0);
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      MPI_CASE(test_average_sends_a_ring_s_bytes_per_rank_and_gives_fixed_order_bits),
      MPI_CASE(test_block_partition_is_consecutive_in_rank_order_and_refuses_bad_arguments),
      MPI_CASE(test_the_two_halves_each_move_half_and_compose_to_the_average),
      MPI_CASE(test_fused_arrays_make_one_exchange_per_fused_buffer_with_per_array_bits),
      MPI_CASE(test_requests_in_flight_give_the_blocking_bits_in_any_finish_order),
      MPI_CASE(test_requests_refuse_misuse_naming_it),
      MPI_CASE(test_a_request_whose_peer_never_starts_fails_at_the_deadline_naming_it),
  };
  return mpi_test_main(argc, argv, "mpi_traffic", tests, sizeof tests / sizeof tests[0], 2);
}
