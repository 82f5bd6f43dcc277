/*
 * test_graph — the initializers' PRNG: golden values.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "graph_tests.h"

/* ---- PRNG golden values ------------------------------------------------------------- */

static void read_var(fx *f, size_t idx, hk_tensor *out) {
  hk_status st = HK_STATUS_INIT;
  assert_ok(hk_raw_session_read_variable(out, f->rs, idx, &st), &st);
}

static size_t random_var(fx *f, const char *name, hk_dtype dt, int64_t n, hk_init_kind kind, double a, double b,
                         uint64_t seed) {
  hk_variable_def d = HK_VARIABLE_DEF_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_handle h;
  size_t idx;
  d.name = name;
  d.dtype = dt;
  d.rank = 1;
  d.dims = &n;
  d.init.kind = kind;
  d.init.minval = d.init.mean = a;
  d.init.maxval = d.init.stddev = b;
  d.init.seed = seed;
  assert_ok(hk_graph_variable(f->g, &h, &d, &st), &st);
  assert_ok(hk_executor_find_variable(f->ex, name, &idx, &st), &st);
  return idx;
}

static uint32_t f32_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  return u;
}

static void test_graph__prng_golden_values(void **state) {
  fx *f = *state;
  /* Vigna's splitmix64.c seeded with 0 outputs these first three values. */
  static const uint64_t splitmix0[3] = {0xE220A8397B1DCDAFull, 0x6E789E6AA1B965F4ull, 0x06C45D188009454Full};
  static const uint32_t uni_f32[4] = {0x3ef75cc8u, 0xbf2e203au, 0xbee2b664u, 0xbe9f8c7cu};
  static const double uni_f64[4] = {0x1.f2fb6975bdfa2p+1, 0x1.57d3037c52de0p-3, 0x1.203e50a0e95d7p+3,
                                    0x1.75134c99021b6p+2};
  static const uint32_t norm_f32[4] = {0x40298c9eu, 0x3f131a4eu, 0x3e0b3906u, 0x3f7a6862u};
  size_t raw = random_var(f, "raw", HK_DTYPE_F64, 3, HK_INIT_UNIFORM, 0, 1, 0);
  size_t u32 = random_var(f, "u32", HK_DTYPE_F32, 4, HK_INIT_UNIFORM, -1, 1, 42);
  size_t u64 = random_var(f, "u64", HK_DTYPE_F64, 4, HK_INIT_UNIFORM, 0, 10, 7);
  size_t n32 = random_var(f, "n32", HK_DTYPE_F32, 4, HK_INIT_NORMAL, 1, 2, 123);
  hk_tensor r;
  int i;
  open_rs(f);
  run_target(f, init_all(f, "init"));

  read_var(f, raw, &r);
  for (i = 0; i < 3; i++) assert_true((uint64_t)(((double *)r.data)[i] * 0x1p53) == (splitmix0[i] >> 11));
  read_var(f, u32, &r);
  for (i = 0; i < 4; i++) assert_int_equal(f32_bits(((float *)r.data)[i]), uni_f32[i]);
  read_var(f, u64, &r);
  for (i = 0; i < 4; i++) assert_true(((double *)r.data)[i] == uni_f64[i]);
  read_var(f, n32, &r);
  for (i = 0; i < 4; i++) assert_int_equal(f32_bits(((float *)r.data)[i]), norm_f32[i]);
}

static void test_graph__prng_deterministic_and_in_range(void **state) {
  fx *f = *state;
  enum { N = 2000 };
  size_t a = random_var(f, "a", HK_DTYPE_F32, N, HK_INIT_UNIFORM, 0.25, 0.5, 99);
  size_t b = random_var(f, "b", HK_DTYPE_F32, N, HK_INIT_UNIFORM, 0.25, 0.5, 99);
  size_t c = random_var(f, "c", HK_DTYPE_F32, N, HK_INIT_UNIFORM, 0.25, 0.5, 100);
  size_t h = random_var(f, "h", HK_DTYPE_F16, N, HK_INIT_UNIFORM, -2, 2, 5);
  size_t bf = random_var(f, "bf", HK_DTYPE_BF16, N, HK_INIT_UNIFORM, 1, 1.0078125, 5);
  size_t n = random_var(f, "n", HK_DTYPE_F64, N, HK_INIT_NORMAL, 10, 0.5, 1);
  size_t z = random_var(f, "z", HK_DTYPE_F64, 4, HK_INIT_NORMAL, 3, 0, 1);
  hk_tensor ra, rb, rc;
  double sum = 0, sq = 0;
  int i, ndiff = 0;
  open_rs(f);
  run_target(f, init_all(f, "init"));
  read_var(f, a, &ra);
  read_var(f, b, &rb);
  read_var(f, c, &rc);
  assert_memory_equal(ra.data, rb.data, ra.nbytes);
  for (i = 0; i < N; i++) {
    float x = ((float *)ra.data)[i];
    assert_true(x >= 0.25f && x < 0.5f);
    ndiff += x != ((float *)rc.data)[i];
  }
  assert_true(ndiff > N - 10);
  read_var(f, h, &ra);
  for (i = 0; i < N; i++) {
    uint16_t bits = ((uint16_t *)ra.data)[i];
    /* |x| <= 2 in binary16: exponent field <= 16, and +2.0 (0x4000) excluded */
    assert_true((bits & 0x7C00u) <= 0x4000u);
    assert_true(bits != 0x4000u);
  }
  read_var(f, bf, &ra);
  for (i = 0; i < N; i++) /* [1, 1 + 2^-7): only 1.0 is representable in bfloat16 */
    assert_int_equal(((uint16_t *)ra.data)[i], 0x3F80u);
  read_var(f, n, &ra);
  for (i = 0; i < N; i++) {
    double x = ((double *)ra.data)[i];
    sum += x;
    sq += x * x;
  }
  sum /= N;
  sq = sq / N - sum * sum;
  assert_true(fabs(sum - 10) < 0.05);
  assert_true(fabs(sqrt(sq) - 0.5) < 0.05);
  read_var(f, z, &ra);
  for (i = 0; i < 4; i++) assert_true(((double *)ra.data)[i] == 3.0);
}

static void test_graph__constant_initializers_all_dtypes(void **state) {
  fx *f = *state;
  int64_t two = 2;
  size_t i8, u16, i64, bl, f16, bf16, f64;
  hk_tensor r;
  i8 = random_var(f, "i8", HK_DTYPE_I8, two, HK_INIT_ZEROS, 0, 0, 0);
  (void)i8;
  open_rs(f);
  {
    hk_status st = HK_STATUS_INIT;
    hk_variable_def d = HK_VARIABLE_DEF_INIT;
    hk_handle h;
    const struct {
      const char *name;
      hk_dtype dt;
      double v;
    } cases[] = {{"ci8", HK_DTYPE_I8, -128}, {"cu16", HK_DTYPE_U16, 65535}, {"ci64", HK_DTYPE_I64, -5e15},
                 {"cb", HK_DTYPE_BOOL, 3},   {"cf16", HK_DTYPE_F16, 1.5},   {"cbf16", HK_DTYPE_BF16, -2},
                 {"cf64", HK_DTYPE_F64, 0.1}};
    size_t k;
    for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
      d.name = cases[k].name;
      d.dtype = cases[k].dt;
      d.rank = 1;
      d.dims = &two;
      d.init.kind = HK_INIT_CONSTANT;
      d.init.value = cases[k].v;
      assert_ok(hk_graph_variable(f->g, &h, &d, &st), &st);
    }
    run_target(f, init_all(f, "init"));
    assert_ok(hk_executor_find_variable(f->ex, "ci8", &i8, &st), &st);
    assert_ok(hk_executor_find_variable(f->ex, "cu16", &u16, &st), &st);
    assert_ok(hk_executor_find_variable(f->ex, "ci64", &i64, &st), &st);
    assert_ok(hk_executor_find_variable(f->ex, "cb", &bl, &st), &st);
    assert_ok(hk_executor_find_variable(f->ex, "cf16", &f16, &st), &st);
    assert_ok(hk_executor_find_variable(f->ex, "cbf16", &bf16, &st), &st);
    assert_ok(hk_executor_find_variable(f->ex, "cf64", &f64, &st), &st);
  }
  read_var(f, i8, &r);
  assert_int_equal(((int8_t *)r.data)[1], -128);
  read_var(f, u16, &r);
  assert_int_equal(((uint16_t *)r.data)[1], 65535);
  read_var(f, i64, &r);
  assert_true(((int64_t *)r.data)[0] == INT64_C(-5000000000000000));
  read_var(f, bl, &r);
  assert_int_equal(((uint8_t *)r.data)[0], 1);
  read_var(f, f16, &r);
  assert_int_equal(((uint16_t *)r.data)[0], 0x3E00u);
  read_var(f, bf16, &r);
  assert_int_equal(((uint16_t *)r.data)[1], 0xC000u);
  read_var(f, f64, &r);
  assert_true(((double *)r.data)[0] == 0.1);
  read_var(f, 0, &r); /* zeros */
  assert_int_equal(((int8_t *)r.data)[0], 0);
}

/* Run an init op over `var` alone in a new raw session and fetch it. */
static hk_tensor init_and_fetch(fx *f, hk_handle var) {
  hk_status st = HK_STATUS_INIT;
  hk_handle init;
  hk_tensor r;
  assert_ok(hk_graph_init_op(f->g, &init, "init", &var, 1, &st), &st);
  open_rs(f);
  run_target(f, init);
  assert_ok(run(f, NULL, 0, &var, 1, NULL, 0, &r, &st), &st);
  return r;
}

/*
 * H3/H30: a BOOL variable accepts any finite constant (hk_graph_variable
 * validates it and the value means "nonzero"), 1e30 included: the kernel
 * looks at the dtype before any conversion to int64_t (which would be
 * undefined for 1e30; UBSan: float-cast-overflow).
 */
static void test_graph__a_bool_variable_accepts_any_finite_constant(void **state) {
  fx *f = *state;
  hk_handle v = var_full(f, "flag", HK_DTYPE_BOOL, 0, NULL, HK_INIT_CONSTANT, 1e30, HK_VAR_TRAINABLE, NULL);
  hk_tensor r = init_and_fetch(f, v);
  assert_int_equal(r.dtype, HK_DTYPE_BOOL);
  assert_int_equal(*(const uint8_t *)r.data, 1);
}

/*
 * H3/H30: a U64 constant up to 2^64 - 2048 is accepted by the initializer
 * check and stored exactly, above INT64_MAX too (never converted to int64_t
 * first, which would be undefined; UBSan: float-cast-overflow).
 */
static void test_graph__a_u64_constant_above_int64_max_is_stored_exactly(void **state) {
  fx *f = *state;
  hk_handle v = var_full(f, "big", HK_DTYPE_U64, 0, NULL, HK_INIT_CONSTANT, 1e19, HK_VAR_TRAINABLE, NULL);
  hk_tensor r = init_and_fetch(f, v);
  assert_int_equal(r.dtype, HK_DTYPE_U64);
  assert_true(*(const uint64_t *)r.data == UINT64_C(10000000000000000000));
}

static void test_graph__assign_add_dtypes(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  int32_t d32 = 2147483647;
  uint16_t h16 = 0x3C00; /* 1.0 in binary16 */
  hk_tensor t;
  hk_handle vi, ci, opi, vh, ch, oph, init, fetch[2];
  hk_tensor r[2];
  vi = var_full(f, "vi", HK_DTYPE_I32, 0, NULL, HK_INIT_CONSTANT, 1, 0, NULL);
  assert_ok(hk_tensor_init(&t, HK_DTYPE_I32, 0, NULL, &d32, &st), &st);
  assert_ok(hk_graph_constant(f->g, &ci, "ci", &t, &st), &st);
  assert_ok(hk_graph_assign_add(f->g, &opi, "addi", vi, ci, &st), &st);
  vh = var_full(f, "vh", HK_DTYPE_F16, 0, NULL, HK_INIT_CONSTANT, 0.5, 0, NULL);
  assert_ok(hk_tensor_init(&t, HK_DTYPE_F16, 0, NULL, &h16, &st), &st);
  assert_ok(hk_graph_constant(f->g, &ch, "ch", &t, &st), &st);
  assert_ok(hk_graph_assign_add(f->g, &oph, "addh", vh, ch, &st), &st);
  init = init_all(f, "init");
  open_rs(f);
  run_target(f, init);
  fetch[0] = out0(f, opi);
  fetch[1] = out0(f, oph);
  assert_ok(run(f, NULL, 0, fetch, 2, NULL, 0, r, &st), &st);
  assert_int_equal(*(int32_t *)r[0].data, INT32_MIN); /* wraps, no UB */
  assert_int_equal(*(uint16_t *)r[1].data, 0x3E00u);  /* 1.5 */
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, graph_fixture_setup, graph_fixture_teardown)
      T(test_graph__prng_golden_values),
      T(test_graph__prng_deterministic_and_in_range),
      T(test_graph__constant_initializers_all_dtypes),
      T(test_graph__assign_add_dtypes),
      T(test_graph__a_bool_variable_accepts_any_finite_constant),
      T(test_graph__a_u64_constant_above_int64_max_is_stored_exactly),
#undef T
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
