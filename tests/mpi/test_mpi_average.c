/*
 * hooked::mpi — deterministic averaging (H49): hk_mpi_average() gives the
 * element-wise mean with the same bits on every rank, summed in the order
 * the rank count fixes (a tree at a power of two, rank order otherwise;
 * mpi_mean_f32()) whatever the
 * counts, f32 and f64; repeated calls give identical bits; another dtype is
 * INVALID_ARGUMENT naming it; hk_mpi_average_scalar(); steady-state calls
 * after hk_mpi_reserve() allocate nothing; hk_mpi_graph_average() as an op
 * of a graph run through a raw session and a session, its steady-state runs
 * allocation-free, and a wrong input spec at run time or bad builder
 * arguments are INVALID_ARGUMENT naming what is wrong.
 *
 * Every rank knows every rank's inputs (they are functions of the rank and
 * the element), so each computes the expected result itself, serially, in
 * that order, and compares bits.
 */
#include "mpi_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hooked/graph.h"

/* Values whose float sums depend on the order: 1e8f + 1.0f is 1e8f. */
static const float order_f32[] = {1e8f, 1.0f, -1e8f, 3.0f, 0.5f, -7.25f, 1e-3f, 2e7f};
static const double order_f64[] = {1e17, 1.0, -1e17, 3.0, 0.5, -7.25, 1e-3, 4e16};
#define NORDER 8

static float input_f32(int rank, size_t e) { return order_f32[((size_t)rank * 3 + e) % NORDER]; }
static double input_f64(int rank, size_t e) { return order_f64[((size_t)rank * 5 + e) % NORDER]; }

#define MAX_RANKS 64

/* The serial mean in the order H49 fixes for n ranks. */
static float serial_mean_f32(size_t e, int n) {
  float v[MAX_RANKS];
  for (int r = 0; r < n; r++) v[r] = input_f32(r, e);
  return mpi_mean_f32(v, n);
}
static double serial_mean_f64(size_t e, int n) {
  double v[MAX_RANKS];
  for (int r = 0; r < n; r++) v[r] = input_f64(r, e);
  return mpi_mean_f64(v, n);
}
/* The same values summed in rank order, and in reverse rank order: the
 * data must tell the orders apart. */
static float rank_order_mean_f32(size_t e, int n) {
  float acc = input_f32(0, e);
  for (int r = 1; r < n; r++) acc += input_f32(r, e);
  return acc / (float)n;
}
static float reverse_mean_f32(size_t e, int n) {
  float acc = input_f32(n - 1, e);
  for (int r = n - 2; r >= 0; r--) acc += input_f32(r, e);
  return acc / (float)n;
}

static void check_f32(hk_mpi *m, size_t count) {
  hk_status st = HK_STATUS_INIT;
  float *x = malloc((count ? count : 1) * sizeof *x);
  assert_non_null(x);
  for (size_t e = 0; e < count; e++) x[e] = input_f32(mpi_rank(), e);
  assert_ok(hk_mpi_average(m, HK_DTYPE_F32, count ? x : NULL, count, &st), &st);
  for (size_t e = 0; e < count; e++) {
    float want = serial_mean_f32(e, mpi_size());
    if (memcmp(&x[e], &want, sizeof want) != 0)
      fail_msg("rank %d, %zu elements: element %zu is %.9g, the fixed-order mean is %.9g", mpi_rank(), count, e,
               (double)x[e], (double)want);
  }
  assert_true(mpi_same_bytes_everywhere(x, count * sizeof *x));
  free(x);
}

static void test_the_mean_is_elementwise_and_the_same_bits_on_every_rank(void) {
  hk_mpi *m = mpi_test_context(NULL);
  hk_status st = HK_STATUS_INIT;
  /* Integers: the mean is exact and known in closed form too. */
  enum { COUNT = 1003 }; /* not a multiple of 2, 3 or 4: uneven blocks */
  float *x = malloc(COUNT * sizeof *x);
  assert_non_null(x);
  for (int e = 0; e < COUNT; e++) x[e] = (float)(mpi_rank() * 1000 + e);
  assert_ok(hk_mpi_average(m, HK_DTYPE_F32, x, COUNT, &st), &st);
  double rank_mean = (mpi_size() - 1) / 2.0;
  for (int e = 0; e < COUNT; e++) assert_true(x[e] == (float)(rank_mean * 1000 + e));
  assert_true(mpi_same_bytes_everywhere(x, COUNT * sizeof *x));
  free(x);
  check_f32(m, COUNT);
  hk_mpi_free(m);
}

/* H49: the sum's order is fixed by the rank count — a tree at 2, 4, 8
 * ranks, rank order at 3 — and the data tells it from other orders. */
static void test_the_sum_is_taken_in_the_order_the_rank_count_fixes_f32(void) {
  hk_mpi *m = mpi_test_context(NULL);
  assert_true(mpi_size() <= MAX_RANKS);
  /* The data is order-sensitive: with 3 or more ranks some element's
   * reverse-order mean differs from its fixed-order mean, and with 4 the
   * tree's differs from rank order's. */
  if (mpi_size() >= 3) {
    int reverse = 0, rank_order = 0;
    for (size_t e = 0; e < NORDER; e++) {
      reverse |= serial_mean_f32(e, mpi_size()) != reverse_mean_f32(e, mpi_size());
      rank_order |= serial_mean_f32(e, mpi_size()) != rank_order_mean_f32(e, mpi_size());
    }
    assert_true(reverse);
    assert_int_equal(rank_order, mpi_size() == 4 || mpi_size() == 8);
  }
  check_f32(m, NORDER);
  check_f32(m, 4099);
  hk_mpi_free(m);
}

static void test_the_sum_is_taken_in_the_order_the_rank_count_fixes_f64(void) {
  hk_mpi *m = mpi_test_context(NULL);
  hk_status st = HK_STATUS_INIT;
  enum { COUNT = 517 };
  double x[COUNT];
  for (size_t e = 0; e < COUNT; e++) x[e] = input_f64(mpi_rank(), e);
  assert_ok(hk_mpi_average(m, HK_DTYPE_F64, x, COUNT, &st), &st);
  for (size_t e = 0; e < COUNT; e++) {
    double want = serial_mean_f64(e, mpi_size());
    if (memcmp(&x[e], &want, sizeof want) != 0)
      fail_msg("rank %d: element %zu is %.17g, the fixed-order mean is %.17g", mpi_rank(), e, x[e], want);
  }
  assert_true(mpi_same_bytes_everywhere(x, sizeof x));
  hk_mpi_free(m);
}

/* 0, 1, 2 elements with up to 4 ranks: some ranks own an empty block. */
static void test_counts_smaller_than_the_rank_count(void) {
  hk_mpi *m = mpi_test_context(NULL);
  for (size_t count = 0; count <= (size_t)mpi_size() + 1; count++) check_f32(m, count);
  hk_status st = HK_STATUS_INIT;
  assert_ok(hk_mpi_average(m, HK_DTYPE_F64, NULL, 0, &st), &st);
  double one = input_f64(mpi_rank(), 3), want = serial_mean_f64(3, mpi_size());
  assert_ok(hk_mpi_average(m, HK_DTYPE_F64, &one, 1, &st), &st);
  assert_memory_equal(&one, &want, sizeof one);
  hk_mpi_free(m);
}

/* H88 at every small count, where halving meets empty blocks and blocks
 * of unequal length: the reduce-scatter leaves this rank's block with the
 * mean's bits and every other element as it was; the all-gather then
 * gives every element the mean; f32 and f64. */
static void test_the_halves_give_the_mean_s_bits_at_every_small_count(void) {
  hk_mpi *m = mpi_test_context(NULL);
  hk_status st = HK_STATUS_INIT;
  const size_t top = 2 * (size_t)mpi_size() + 5;
  float *x = malloc(top * sizeof *x), *before = malloc(top * sizeof *before);
  double *y = malloc(top * sizeof *y);
  assert_non_null(x);
  assert_non_null(before);
  assert_non_null(y);
  for (size_t count = 0; count <= top; count++) {
    size_t first, len;
    assert_ok(hk_mpi_block(&first, &len, count, mpi_size(), mpi_rank(), &st), &st);
    for (size_t e = 0; e < count; e++) x[e] = before[e] = input_f32(mpi_rank(), e);
    assert_ok(hk_mpi_reduce_scatter_average(m, HK_DTYPE_F32, count ? x : NULL, count, &st), &st);
    for (size_t e = 0; e < count; e++) {
      const float want = e >= first && e < first + len ? serial_mean_f32(e, mpi_size()) : before[e];
      if (memcmp(&x[e], &want, sizeof want) != 0)
        fail_msg("rank %d, %zu elements: after the reduce-scatter element %zu is %.9g, not %.9g", mpi_rank(), count, e,
                 (double)x[e], (double)want);
    }
    assert_ok(hk_mpi_allgather_blocks(m, HK_DTYPE_F32, count ? x : NULL, count, &st), &st);
    for (size_t e = 0; e < count; e++) {
      const float want = serial_mean_f32(e, mpi_size());
      if (memcmp(&x[e], &want, sizeof want) != 0)
        fail_msg("rank %d, %zu elements: after the all-gather element %zu is %.9g, not %.9g", mpi_rank(), count, e,
                 (double)x[e], (double)want);
    }
    for (size_t e = 0; e < count; e++) y[e] = input_f64(mpi_rank(), e);
    assert_ok(hk_mpi_reduce_scatter_average(m, HK_DTYPE_F64, count ? y : NULL, count, &st), &st);
    assert_ok(hk_mpi_allgather_blocks(m, HK_DTYPE_F64, count ? y : NULL, count, &st), &st);
    for (size_t e = 0; e < count; e++) {
      const double want = serial_mean_f64(e, mpi_size());
      if (memcmp(&y[e], &want, sizeof want) != 0)
        fail_msg("rank %d, %zu f64 elements: element %zu is %.17g, not %.17g", mpi_rank(), count, e, y[e], want);
    }
  }
  free(x);
  free(before);
  free(y);
  hk_mpi_free(m);
}

static void test_repeated_calls_give_identical_bits(void) {
  hk_mpi *m = mpi_test_context(NULL);
  hk_status st = HK_STATUS_INIT;
  enum { COUNT = 301 };
  float first[COUNT], again[COUNT];
  for (int call = 0; call < 5; call++) {
    float *x = call == 0 ? first : again;
    for (size_t e = 0; e < COUNT; e++) x[e] = input_f32(mpi_rank(), e * 7);
    assert_ok(hk_mpi_average(m, HK_DTYPE_F32, x, COUNT, &st), &st);
    if (call > 0) assert_memory_equal(first, again, sizeof first);
  }
  hk_mpi_free(m);
}

static void test_another_dtype_is_invalid_argument_naming_it(void) {
  hk_mpi *m = mpi_test_context(NULL);
  hk_status st = HK_STATUS_INIT;
  int32_t ints[4] = {1, 2, 3, 4};
  assert_status(hk_mpi_average(m, HK_DTYPE_I32, ints, 4, &st), &st, HK_INVALID_ARGUMENT, "i32");
  assert_status(hk_mpi_average(m, HK_DTYPE_F16, ints, 4, &st), &st, HK_INVALID_ARGUMENT, "f16");
  assert_status(hk_mpi_average(m, HK_DTYPE_INVALID, ints, 4, &st), &st, HK_INVALID_ARGUMENT, "invalid");
  assert_int_equal(ints[0], 1); /* untouched */
  assert_status(hk_mpi_average(m, HK_DTYPE_F32, NULL, 3, &st), &st, HK_INVALID_ARGUMENT, "NULL");
  assert_status(hk_mpi_average(NULL, HK_DTYPE_F32, ints, 1, &st), &st, HK_INVALID_ARGUMENT, "mpi");
  double v = 1;
  assert_status(hk_mpi_average_scalar(m, NULL, &st), &st, HK_INVALID_ARGUMENT, "value");
  assert_status(hk_mpi_average_scalar(NULL, &v, &st), &st, HK_INVALID_ARGUMENT, "mpi");
  assert_status(hk_mpi_reserve(NULL, 16, &st), &st, HK_INVALID_ARGUMENT, "mpi");
  /* The context still works after the refusals (nobody entered a collective). */
  check_f32(m, 5);
  hk_mpi_free(m);
}

static void test_average_scalar_is_the_fixed_order_mean(void) {
  test_env *te = mpi_test_env(NULL);
  hk_mpi *m = mpi_test_context(&te->env);
  hk_status st = HK_STATUS_INIT;
  double v = mpi_rank() + 1;
  assert_ok(hk_mpi_average_scalar(m, &v, &st), &st);
  assert_true(v == (mpi_size() + 1) / 2.0);
  test_alloc_reset_counts(&te->alloc);
  for (size_t e = 0; e < NORDER; e++) {
    v = input_f64(mpi_rank(), e);
    assert_ok(hk_mpi_average_scalar(m, &v, &st), &st);
    double want = serial_mean_f64(e, mpi_size());
    assert_memory_equal(&v, &want, sizeof v);
    assert_true(mpi_same_bytes_everywhere(&v, sizeof v));
  }
  assert_int_equal(test_alloc_count(&te->alloc), 0); /* Allocates: no */
  hk_mpi_free(m);
  assert_int_equal(test_env_release(te), 0);
}

/* Reserving the buffer's own size up front makes every later call of that
 * size (or smaller) allocation-free, on every rank, whatever its block. */
static void test_steady_state_calls_after_reserve_allocate_nothing(void) {
  test_env *te = mpi_test_env(NULL);
  hk_mpi *m = mpi_test_context(&te->env);
  hk_status st = HK_STATUS_INIT;
  enum { COUNT = 1001 }; /* 1001 % N != 0 for N = 2, 3, 4: uneven blocks */
  float x[COUNT];
  double y[COUNT / 2];
  assert_ok(hk_mpi_reserve(m, sizeof x, &st), &st);
  test_alloc_reset_counts(&te->alloc);
  for (int step = 0; step < 20; step++) {
    for (size_t e = 0; e < COUNT; e++) x[e] = input_f32(mpi_rank(), e + (size_t)step);
    assert_ok(hk_mpi_average(m, HK_DTYPE_F32, x, COUNT, &st), &st);
    for (size_t e = 0; e < COUNT / 2; e++) y[e] = input_f64(mpi_rank(), e);
    assert_ok(hk_mpi_average(m, HK_DTYPE_F64, y, COUNT / 2, &st), &st);
    assert_ok(hk_mpi_average(m, HK_DTYPE_F32, x, 3, &st), &st);
  }
  if (test_alloc_count(&te->alloc) != 0)
    fail_msg("rank %d: %ld allocations after hk_mpi_reserve(%zu)", mpi_rank(), test_alloc_count(&te->alloc), sizeof x);
  hk_mpi_free(m);
  assert_int_equal(test_env_release(te), 0);
}

/* Without a reserve, the first call of a size grows the scratch once; the
 * calls after it allocate nothing. */
/* H49's "after hk_mpi_reserve a call allocates nothing" for a buffer large
 * enough to go in segments (its units and MPI requests too, not only the
 * scratch), through the blocking average and both halves; and the
 * all-gather alone, which needs no scratch, allocates nothing even
 * without a reserve. */
static void test_reserve_covers_a_segmented_buffer_and_the_halves(void) {
  test_env *te = mpi_test_env(NULL);
  hk_mpi *m = mpi_test_context(&te->env);
  hk_status st = HK_STATUS_INIT;
  const size_t count = (5u << 20) / 2 / sizeof(float) + 3; /* 2.5 MiB and a bit: 3 segments */
  float *x = malloc(count * sizeof *x);
  assert_non_null(x);
  for (size_t e = 0; e < count; e++) x[e] = (float)mpi_rank();
  test_alloc_reset_counts(&te->alloc);
  assert_ok(hk_mpi_allgather_blocks(m, HK_DTYPE_F32, x, count, &st), &st);
  if (test_alloc_count(&te->alloc) != 0)
    fail_msg("rank %d: hk_mpi_allgather_blocks made %ld allocations", mpi_rank(), test_alloc_count(&te->alloc));
  assert_ok(hk_mpi_reserve(m, count * sizeof *x, &st), &st);
  test_alloc_reset_counts(&te->alloc);
  for (int step = 0; step < 3; step++) {
    for (size_t e = 0; e < count; e++) x[e] = input_f32(mpi_rank(), e + (size_t)step);
    assert_ok(hk_mpi_average(m, HK_DTYPE_F32, x, count, &st), &st);
    assert_ok(hk_mpi_reduce_scatter_average(m, HK_DTYPE_F32, x, count, &st), &st);
    assert_ok(hk_mpi_allgather_blocks(m, HK_DTYPE_F32, x, count, &st), &st);
  }
  if (test_alloc_count(&te->alloc) != 0)
    fail_msg("rank %d: %ld allocations after hk_mpi_reserve(%zu)", mpi_rank(), test_alloc_count(&te->alloc),
             count * sizeof *x);
  free(x);
  hk_mpi_free(m);
  assert_int_equal(test_env_release(te), 0);
}

static void test_only_the_first_call_of_a_larger_size_allocates(void) {
  test_env *te = mpi_test_env(NULL);
  hk_mpi *m = mpi_test_context(&te->env);
  hk_status st = HK_STATUS_INIT;
  enum { COUNT = 777 };
  float x[COUNT];
  for (size_t e = 0; e < COUNT; e++) x[e] = input_f32(mpi_rank(), e);
  test_alloc_reset_counts(&te->alloc);
  assert_ok(hk_mpi_average(m, HK_DTYPE_F32, x, COUNT, &st), &st);
  assert_true(test_alloc_count(&te->alloc) <= 1);
  test_alloc_reset_counts(&te->alloc);
  for (int i = 0; i < 10; i++) assert_ok(hk_mpi_average(m, HK_DTYPE_F32, x, COUNT - (size_t)i, &st), &st);
  assert_int_equal(test_alloc_count(&te->alloc), 0);
  hk_mpi_free(m);
  assert_int_equal(test_env_release(te), 0);
}

/* ---- hk_mpi_graph_average ------------------------------------------------------ */

static hk_graph *new_graph(test_env *te) {
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_graph *g = NULL;
  go.env = &te->env;
  assert_ok(hk_graph_new(&g, &go, &st), &st);
  return g;
}

/* A placeholder fed per rank, averaged by the op, fetched through a raw
 * session; runs after the first two allocate nothing. */
static void test_graph_average_op_gives_the_mean_through_a_raw_session(void) {
  test_env *te = mpi_test_env(NULL);
  hk_mpi *m = mpi_test_context(&te->env);
  hk_graph *g = new_graph(te);
  hk_status st = HK_STATUS_INIT;
  int64_t dims[2] = {3, 5};
  hk_handle x, avg;
  assert_ok(hk_graph_placeholder(g, &x, "x", HK_DTYPE_F32, 2, dims, &st), &st);
  assert_ok(hk_mpi_graph_average(g, &avg, "avg", x, HK_DTYPE_F32, 2, dims, m, &st), &st);
  assert_ok(hk_graph_finalize(g, &st), &st);
  hk_raw_session *rs = NULL;
  assert_ok(hk_raw_session_open(&rs, hk_graph_executor(g), &st), &st);
  float in[15];
  hk_feed feed;
  feed.tensor = x;
  assert_ok(hk_tensor_init(&feed.value, HK_DTYPE_F32, 2, dims, in, &st), &st);
  hk_run_args args;
  memset(&args, 0, sizeof args);
  args.feeds = &feed;
  args.nfeeds = 1;
  args.fetches = &avg;
  args.nfetches = 1;
  for (int run = 0; run < 6; run++) {
    if (run == 2) test_alloc_reset_counts(&te->alloc);
    for (size_t e = 0; e < 15; e++) in[e] = input_f32(mpi_rank(), e + (size_t)run);
    hk_tensor out;
    assert_ok(hk_raw_session_run(rs, &args, &out, NULL, &st), &st);
    assert_int_equal(out.dtype, HK_DTYPE_F32);
    assert_int_equal(out.rank, 2);
    assert_int_equal(out.dims[0], 3);
    assert_int_equal(out.dims[1], 5);
    const float *got = out.data;
    for (size_t e = 0; e < 15; e++) {
      float want = serial_mean_f32(e + (size_t)run, mpi_size());
      assert_memory_equal(&got[e], &want, sizeof want);
    }
    assert_true(mpi_same_bytes_everywhere(got, 15 * sizeof(float)));
    /* The input is not modified in place. */
    assert_true(in[0] == input_f32(mpi_rank(), (size_t)run));
  }
  if (test_alloc_count(&te->alloc) != 0)
    fail_msg("rank %d: %ld allocations in the steady-state runs of the average op", mpi_rank(),
             test_alloc_count(&te->alloc));
  hk_raw_session_free(rs);
  hk_graph_free(g);
  hk_mpi_free(m);
  assert_int_equal(test_env_release(te), 0);
}

/* An f64 constant per rank, averaged in a monitored session's run. */
static void test_graph_average_op_gives_the_mean_through_a_session(void) {
  test_env *te = mpi_test_env(NULL);
  hk_mpi *m = mpi_test_context(&te->env);
  hk_graph *g = new_graph(te);
  hk_status st = HK_STATUS_INIT;
  int64_t dims[1] = {6};
  double values[6];
  for (size_t e = 0; e < 6; e++) values[e] = input_f64(mpi_rank(), e);
  hk_tensor value;
  assert_ok(hk_tensor_init(&value, HK_DTYPE_F64, 1, dims, values, &st), &st);
  hk_handle c, avg;
  assert_ok(hk_graph_constant(g, &c, "c", &value, &st), &st);
  assert_ok(hk_mpi_graph_average(g, &avg, "grad/avg", c, HK_DTYPE_F64, 1, dims, m, &st), &st);
  hk_session_options so;
  assert_int_equal(hk_session_options_init(&so, HK_SESSION_OPTIONS_VERSION), HK_OK);
  so.env = &te->env;
  so.executor = hk_graph_executor(g);
  hk_session *s = NULL;
  assert_ok(hk_session_new(&s, &so, &st), &st);
  hk_run_args args;
  memset(&args, 0, sizeof args);
  args.fetches = &avg;
  args.nfetches = 1;
  for (int run = 0; run < 3; run++) {
    hk_tensor out;
    assert_ok(hk_session_run(s, &args, &out, NULL, &st), &st);
    const double *got = out.data;
    for (size_t e = 0; e < 6; e++) {
      double want = serial_mean_f64(e, mpi_size());
      assert_memory_equal(&got[e], &want, sizeof want);
    }
  }
  assert_ok(hk_session_close(s, HK_OK, &st), &st);
  hk_session_free(s);
  hk_graph_free(g);
  hk_mpi_free(m);
  assert_int_equal(test_env_release(te), 0);
}

/* A run whose input is not of the declared dtype and shape fails on every
 * rank before any message is sent, naming both. */
static void test_graph_average_run_with_a_wrong_input_spec_is_invalid_argument(void) {
  test_env *te = mpi_test_env(NULL);
  hk_mpi *m = mpi_test_context(&te->env);
  hk_graph *g = new_graph(te);
  hk_status st = HK_STATUS_INIT;
  int64_t any[1] = {-1}, four[1] = {4}, three[1] = {3};
  hk_handle x, avg, c, avg64;
  assert_ok(hk_graph_placeholder(g, &x, "x", HK_DTYPE_F32, 1, any, &st), &st);
  assert_ok(hk_mpi_graph_average(g, &avg, "avg", x, HK_DTYPE_F32, 1, four, m, &st), &st);
  double d[4] = {1, 2, 3, 4};
  hk_tensor dv;
  assert_ok(hk_tensor_init(&dv, HK_DTYPE_F64, 1, four, d, &st), &st);
  assert_ok(hk_graph_constant(g, &c, "c64", &dv, &st), &st);
  assert_ok(hk_mpi_graph_average(g, &avg64, "avg_declared_f32", c, HK_DTYPE_F32, 1, four, m, &st), &st);
  hk_raw_session *rs = NULL;
  assert_ok(hk_raw_session_open(&rs, hk_graph_executor(g), &st), &st);

  float in[4] = {1, 2, 3, (float)mpi_rank()};
  hk_feed feed;
  feed.tensor = x;
  assert_ok(hk_tensor_init(&feed.value, HK_DTYPE_F32, 1, three, in, &st), &st);
  hk_run_args args;
  memset(&args, 0, sizeof args);
  args.feeds = &feed;
  args.nfeeds = 1;
  args.fetches = &avg;
  args.nfetches = 1;
  hk_tensor out;
  assert_status(hk_raw_session_run(rs, &args, &out, NULL, &st), &st, HK_INVALID_ARGUMENT, "[3]");
  assert_non_null(strstr(st.message, "[4]"));

  memset(&args, 0, sizeof args);
  args.fetches = &avg64;
  args.nfetches = 1;
  assert_status(hk_raw_session_run(rs, &args, &out, NULL, &st), &st, HK_INVALID_ARGUMENT, "f64");
  assert_non_null(strstr(st.message, "f32"));

  /* The right spec then works: nobody was left in a collective. */
  assert_ok(hk_tensor_init(&feed.value, HK_DTYPE_F32, 1, four, in, &st), &st);
  args.feeds = &feed;
  args.nfeeds = 1;
  args.fetches = &avg;
  assert_ok(hk_raw_session_run(rs, &args, &out, NULL, &st), &st);
  assert_true(((const float *)out.data)[3] == (float)((mpi_size() - 1) / 2.0));
  hk_raw_session_free(rs);
  hk_graph_free(g);
  hk_mpi_free(m);
  assert_int_equal(test_env_release(te), 0);
}

static void test_graph_average_builder_rejects_bad_arguments(void) {
  test_env *te = mpi_test_env(NULL);
  hk_mpi *m = mpi_test_context(&te->env);
  hk_graph *g = new_graph(te);
  hk_status st = HK_STATUS_INIT;
  int64_t dims[9] = {2, 2, 2, 2, 2, 2, 2, 2, 2}, neg[2] = {3, -2};
  hk_handle x, out;
  assert_ok(hk_graph_placeholder(g, &x, "x", HK_DTYPE_F32, 1, dims, &st), &st);
  assert_status(hk_mpi_graph_average(g, &out, "a", x, HK_DTYPE_I64, 1, dims, m, &st), &st, HK_INVALID_ARGUMENT, "i64");
  assert_status(hk_mpi_graph_average(g, &out, "a", x, HK_DTYPE_F32, 9, dims, m, &st), &st, HK_INVALID_ARGUMENT,
                "rank 9");
  assert_status(hk_mpi_graph_average(g, &out, "a", x, HK_DTYPE_F32, -1, dims, m, &st), &st, HK_INVALID_ARGUMENT,
                "rank -1");
  assert_status(hk_mpi_graph_average(g, &out, "a", x, HK_DTYPE_F32, 2, neg, m, &st), &st, HK_INVALID_ARGUMENT, "-2");
  assert_status(hk_mpi_graph_average(g, &out, "a", x, HK_DTYPE_F32, 1, NULL, m, &st), &st, HK_INVALID_ARGUMENT, "dims");
  assert_status(hk_mpi_graph_average(g, &out, "a", x, HK_DTYPE_F32, 1, dims, NULL, &st), &st, HK_INVALID_ARGUMENT,
                "mpi");
  assert_status(hk_mpi_graph_average(NULL, &out, "a", x, HK_DTYPE_F32, 1, dims, m, &st), &st, HK_INVALID_ARGUMENT,
                NULL);
  /* The graph's own errors: a taken name. */
  assert_ok(hk_mpi_graph_average(g, &out, "a", x, HK_DTYPE_F32, 1, dims, m, &st), &st);
  assert_status(hk_mpi_graph_average(g, &out, "a", x, HK_DTYPE_F32, 1, dims, m, &st), &st, HK_ALREADY_EXISTS, NULL);
  hk_graph_free(g);
  hk_mpi_free(m);
  assert_int_equal(test_env_release(te), 0);
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      MPI_CASE(test_the_mean_is_elementwise_and_the_same_bits_on_every_rank),
      MPI_CASE(test_the_sum_is_taken_in_the_order_the_rank_count_fixes_f32),
      MPI_CASE(test_the_sum_is_taken_in_the_order_the_rank_count_fixes_f64),
      MPI_CASE(test_counts_smaller_than_the_rank_count),
      MPI_CASE(test_the_halves_give_the_mean_s_bits_at_every_small_count),
      MPI_CASE(test_repeated_calls_give_identical_bits),
      MPI_CASE(test_another_dtype_is_invalid_argument_naming_it),
      MPI_CASE(test_average_scalar_is_the_fixed_order_mean),
      MPI_CASE(test_steady_state_calls_after_reserve_allocate_nothing),
      MPI_CASE(test_reserve_covers_a_segmented_buffer_and_the_halves),
      MPI_CASE(test_only_the_first_call_of_a_larger_size_allocates),
      MPI_CASE(test_graph_average_op_gives_the_mean_through_a_raw_session),
      MPI_CASE(test_graph_average_op_gives_the_mean_through_a_session),
      MPI_CASE(test_graph_average_run_with_a_wrong_input_spec_is_invalid_argument),
      MPI_CASE(test_graph_average_builder_rejects_bad_arguments),
  };
  return mpi_test_main(argc, argv, "mpi_average", tests, sizeof tests / sizeof tests[0], 2);
}
