/*
 * Status codes (H1), the status object, env validation and helpers, and
 * tensor views (dtype table, hk_tensor_init validation, H3).
 */
#include "test_env.h"

#include <float.h>
#include <string.h>

/* ---- H1: codes and names ---------------------------------------------- */

/* H1: status codes have TensorFlow's numbering, from OK 0. */
static void test_status__codes_have_tensorflow_s_numbering(void **state) {
  (void)state;
  assert_int_equal(HK_OK, 0);
  assert_int_equal(HK_CANCELLED, 1);
  assert_int_equal(HK_UNKNOWN, 2);
  assert_int_equal(HK_INVALID_ARGUMENT, 3);
  assert_int_equal(HK_DEADLINE_EXCEEDED, 4);
  assert_int_equal(HK_NOT_FOUND, 5);
  assert_int_equal(HK_ALREADY_EXISTS, 6);
  assert_int_equal(HK_PERMISSION_DENIED, 7);
  assert_int_equal(HK_RESOURCE_EXHAUSTED, 8);
  assert_int_equal(HK_FAILED_PRECONDITION, 9);
  assert_int_equal(HK_ABORTED, 10);
  assert_int_equal(HK_OUT_OF_RANGE, 11);
  assert_int_equal(HK_UNIMPLEMENTED, 12);
  assert_int_equal(HK_INTERNAL, 13);
  assert_int_equal(HK_UNAVAILABLE, 14);
  assert_int_equal(HK_DATA_LOSS, 15);
}

/* H1: code_name returns each code's name, and UNKNOWN_CODE for a code it does not know. */
static void test_status__code_name_names_every_code(void **state) {
  (void)state;
  assert_string_equal(hk_code_name(HK_OK), "OK");
  assert_string_equal(hk_code_name(HK_CANCELLED), "CANCELLED");
  assert_string_equal(hk_code_name(HK_INVALID_ARGUMENT), "INVALID_ARGUMENT");
  assert_string_equal(hk_code_name(HK_RESOURCE_EXHAUSTED), "RESOURCE_EXHAUSTED");
  assert_string_equal(hk_code_name(HK_FAILED_PRECONDITION), "FAILED_PRECONDITION");
  assert_string_equal(hk_code_name(HK_OUT_OF_RANGE), "OUT_OF_RANGE");
  assert_string_equal(hk_code_name(HK_DATA_LOSS), "DATA_LOSS");
  /* H1: codes a caller does not know are errors; the name says so. */
  assert_string_equal(hk_code_name((hk_code)16), "UNKNOWN_CODE");
  assert_string_equal(hk_code_name((hk_code)-1), "UNKNOWN_CODE");
  assert_string_equal(hk_code_name((hk_code)1000), "UNKNOWN_CODE");
}

/* C38: ABORTED and UNAVAILABLE are the preemption errors, and no other code is. */
static void test_status__only_aborted_and_unavailable_are_preemption_codes(void **state) {
  int c;
  (void)state;
  for (c = 0; c <= 20; c++) {
    int expect = c == HK_ABORTED || c == HK_UNAVAILABLE;
    assert_int_equal(hk_code_is_preemption((hk_code)c) != 0, expect);
  }
}

/* ---- status object ------------------------------------------------------ */

static void test_status__set_formats_and_returns_code(void **state) {
  hk_status st = HK_STATUS_INIT;
  (void)state;
  assert_int_equal(hk_status_set(&st, HK_NOT_FOUND, "tensor %s (%d)", "x:0", 7), HK_NOT_FOUND);
  assert_int_equal(st.code, HK_NOT_FOUND);
  assert_string_equal(st.message, "tensor x:0 (7)");
  hk_status_clear(&st);
  assert_int_equal(st.code, HK_OK);
  assert_string_equal(st.message, "");
}

static void test_status__set_null_status_is_noop(void **state) {
  (void)state;
  assert_int_equal(hk_status_set(NULL, HK_ABORTED, "x"), HK_ABORTED);
  hk_status_clear(NULL);
}

static void test_status__set_truncates_long_message(void **state) {
  hk_status st = HK_STATUS_INIT;
  char big[2000];
  (void)state;
  memset(big, 'a', sizeof(big) - 1);
  big[sizeof(big) - 1] = '\0';
  assert_int_equal(hk_status_set(&st, HK_INTERNAL, "%s", big), HK_INTERNAL);
  assert_int_equal(strlen(st.message), HK_STATUS_MESSAGE_MAX - 1);
  assert_int_equal(st.message[0], 'a');
}

static hk_code setv_helper(hk_status *st, hk_code code, const char *fmt, ...) {
  va_list ap;
  hk_code rc;
  va_start(ap, fmt);
  rc = hk_status_setv(st, code, fmt, ap);
  va_end(ap);
  return rc;
}

static void test_status__setv(void **state) {
  hk_status st = HK_STATUS_INIT;
  (void)state;
  assert_int_equal(setv_helper(&st, HK_UNAVAILABLE, "%s-%d", "w", 3), HK_UNAVAILABLE);
  assert_string_equal(st.message, "w-3");
}

static void test_status__version(void **state) {
  (void)state;
  assert_string_equal(hk_version(), HOOKED_VERSION_STRING);
  assert_int_equal(hk_version_number(), HOOKED_VERSION_NUMBER);
}

/* ---- env ---------------------------------------------------------------- */

static void test_status__env_init(void **state) {
  hk_env env;
  (void)state;
  memset(&env, 0x5a, sizeof(env));
  assert_int_equal(hk_env_init(&env, HK_ENV_VERSION), HK_OK);
  assert_int_equal(env.version, HK_ENV_VERSION);
  assert_null(env.allocator.alloc);
  assert_null(env.log);
  assert_int_equal(env.log_level, HK_LOG_INFO);
  assert_null(env.clock.monotonic);
  assert_int_equal(hk_env_init(NULL, HK_ENV_VERSION), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_env_init(&env, 0), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_env_init(&env, HK_ENV_VERSION + 1), HK_INVALID_ARGUMENT);
}

static void test_status__env_check(void **state) {
  hk_env env = HK_ENV_INIT;
  hk_status st = HK_STATUS_INIT;
  test_env *te = test_env_new();
  (void)state;

  assert_ok(hk_env_check(NULL, "opts.env", &st), &st);
  assert_ok(hk_env_check(&env, "opts.env", &st), &st);
  assert_ok(hk_env_check(&te->env, "opts.env", &st), &st);

  env.version = 0;
  assert_status(hk_env_check(&env, "opts.env", &st), &st, HK_INVALID_ARGUMENT, "opts.env");
  env.version = HK_ENV_VERSION + 1;
  assert_status(hk_env_check(&env, "opts.env", &st), &st, HK_INVALID_ARGUMENT, "opts.env");

  /* Some but not all allocator functions set. */
  env = te->env;
  env.allocator.free = NULL;
  assert_status(hk_env_check(&env, "my_env", &st), &st, HK_INVALID_ARGUMENT, "my_env");
  env = te->env;
  env.allocator.alloc = NULL;
  assert_status(hk_env_check(&env, "my_env", &st), &st, HK_INVALID_ARGUMENT, "my_env");

  env = te->env;
  env.log_level = (hk_log_level)7;
  assert_status(hk_env_check(&env, "my_env", &st), &st, HK_INVALID_ARGUMENT, "my_env");
  env.log_level = (hk_log_level)-1;
  assert_status(hk_env_check(&env, "my_env", &st), &st, HK_INVALID_ARGUMENT, "my_env");
  test_env_free(te);
}

static void test_status__env_helpers_use_allocator(void **state) {
  test_env *te = test_env_new();
  char *s;
  void *p;
  (void)state;
  p = hk_env_alloc(&te->env, 16);
  assert_non_null(p);
  assert_int_equal(te->alloc.nalloc, 1);
  p = hk_env_realloc(&te->env, p, 64);
  assert_non_null(p);
  assert_int_equal(te->alloc.nrealloc, 1);
  hk_env_free(&te->env, p);
  assert_int_equal(te->alloc.nfree, 1);
  hk_env_free(&te->env, NULL);
  assert_int_equal(te->alloc.nfree, 1);

  s = hk_env_strdup(&te->env, "global_step");
  assert_string_equal(s, "global_step");
  hk_env_free(&te->env, s);
  assert_null(hk_env_strdup(&te->env, NULL));

  p = hk_env_calloc(&te->env, 4, 8);
  assert_non_null(p);
  assert_int_equal(((unsigned char *)p)[31], 0);
  hk_env_free(&te->env, p);
  /* n*size overflow is refused before the allocator is asked. */
  assert_null(hk_env_calloc(&te->env, SIZE_MAX / 2, 4));
  assert_null(hk_env_alloc(&te->env, 0));

  /* An allocator failure returns NULL; realloc keeps the old block. */
  p = hk_env_alloc(&te->env, 8);
  test_alloc_fail_at(&te->alloc, 0, 1);
  assert_null(hk_env_alloc(&te->env, 8));
  assert_null(hk_env_realloc(&te->env, p, 128));
  test_alloc_fail_at(&te->alloc, -1, 0);
  hk_env_free(&te->env, p);
  assert_int_equal(test_alloc_live(&te->alloc), 0);

  /* Defaults (NULL env) work too. */
  p = hk_env_alloc(NULL, 8);
  assert_non_null(p);
  hk_env_free(NULL, p);
  test_env_free(te);
}

static void test_status__env_log_and_clock(void **state) {
  test_env *te = test_env_new();
  (void)state;
  hk_env_log(&te->env, HK_LOG_WARNING, "hello %d", 42);
  assert_logged(te, HK_LOG_WARNING, "hello 42");
  te->env.log_level = HK_LOG_ERROR;
  hk_env_log(&te->env, HK_LOG_WARNING, "dropped");
  assert_int_equal(test_log_count(&te->log, -1, "dropped"), 0);

  assert_true(hk_env_monotonic(&te->env) == 1000.0);
  hk_env_sleep(&te->env, 2.5);
  assert_true(hk_env_monotonic(&te->env) == 1002.5);
  assert_true(test_clock_total_slept(&te->clock) == 2.5);
  hk_env_sleep(&te->env, 0);
  hk_env_sleep(&te->env, -1);
  assert_true(hk_env_monotonic(&te->env) == 1002.5);
  assert_true(hk_env_wall(&te->env) > 1.6e9);
  test_env_free(te);
}

static void test_status__unset_sentinels(void **state) {
  (void)state;
  assert_true(hk_secs_is_unset(HK_UNSET_SECS));
  assert_false(hk_secs_is_unset(0.0));
  assert_false(hk_secs_is_unset(-1.0));
  assert_false(hk_secs_is_unset(-DBL_MAX));
}

/* ---- tensors ------------------------------------------------------------ */

static void test_status__dtype_table(void **state) {
  (void)state;
  assert_int_equal(hk_dtype_size(HK_DTYPE_F16), 2);
  assert_int_equal(hk_dtype_size(HK_DTYPE_BF16), 2);
  assert_int_equal(hk_dtype_size(HK_DTYPE_F32), 4);
  assert_int_equal(hk_dtype_size(HK_DTYPE_F64), 8);
  assert_int_equal(hk_dtype_size(HK_DTYPE_I8), 1);
  assert_int_equal(hk_dtype_size(HK_DTYPE_I16), 2);
  assert_int_equal(hk_dtype_size(HK_DTYPE_I32), 4);
  assert_int_equal(hk_dtype_size(HK_DTYPE_I64), 8);
  assert_int_equal(hk_dtype_size(HK_DTYPE_U8), 1);
  assert_int_equal(hk_dtype_size(HK_DTYPE_U16), 2);
  assert_int_equal(hk_dtype_size(HK_DTYPE_U32), 4);
  assert_int_equal(hk_dtype_size(HK_DTYPE_U64), 8);
  assert_int_equal(hk_dtype_size(HK_DTYPE_BOOL), 1);
  assert_int_equal(hk_dtype_size(HK_DTYPE_STRING), sizeof(const char *));
  assert_int_equal(hk_dtype_size(HK_DTYPE_INVALID), 0);
  assert_int_equal(hk_dtype_size(HK_DTYPE__COUNT), 0);
  assert_int_equal(hk_dtype_size((hk_dtype)-3), 0);

  assert_string_equal(hk_dtype_name(HK_DTYPE_F32), "f32");
  assert_string_equal(hk_dtype_name(HK_DTYPE_I64), "i64");
  assert_string_equal(hk_dtype_name(HK_DTYPE_BOOL), "bool");
  assert_string_equal(hk_dtype_name(HK_DTYPE_STRING), "string");
  assert_string_equal(hk_dtype_name(HK_DTYPE_INVALID), "invalid");
  assert_string_equal(hk_dtype_name((hk_dtype)99), "invalid");

  assert_true(hk_dtype_is_float(HK_DTYPE_BF16));
  assert_true(hk_dtype_is_float(HK_DTYPE_F64));
  assert_false(hk_dtype_is_float(HK_DTYPE_I32));
  assert_true(hk_dtype_is_integer(HK_DTYPE_U64));
  assert_true(hk_dtype_is_integer(HK_DTYPE_I8));
  assert_false(hk_dtype_is_integer(HK_DTYPE_F32));
  assert_false(hk_dtype_is_integer(HK_DTYPE_BOOL));
  assert_false(hk_dtype_is_integer(HK_DTYPE_STRING));
}

static void test_status__tensor_init_ok(void **state) {
  float data[6] = {0};
  int64_t dims[2] = {2, 3};
  hk_tensor t;
  hk_status st = HK_STATUS_INIT;
  char buf[32];
  (void)state;
  assert_ok(hk_tensor_init(&t, HK_DTYPE_F32, 2, dims, data, &st), &st);
  assert_int_equal(t.dtype, HK_DTYPE_F32);
  assert_int_equal(t.rank, 2);
  assert_int_equal(t.dims[0], 2);
  assert_int_equal(t.dims[1], 3);
  assert_ptr_equal(t.data, data);
  assert_int_equal(t.nbytes, 24);
  assert_int_equal(hk_tensor_num_elements(&t), 6);
  assert_string_equal(hk_tensor_shape_str(&t, buf, sizeof(buf)), "[2, 3]");

  /* Scalar: rank 0, dims may be NULL, one element. */
  assert_ok(hk_tensor_init(&t, HK_DTYPE_F32, 0, NULL, data, &st), &st);
  assert_int_equal(t.nbytes, 4);
  assert_int_equal(hk_tensor_num_elements(&t), 1);

  /* Empty shape: data may be NULL. */
  dims[0] = 0;
  assert_ok(hk_tensor_init(&t, HK_DTYPE_F64, 2, dims, NULL, &st), &st);
  assert_int_equal(t.nbytes, 0);
  assert_int_equal(hk_tensor_num_elements(&t), 0);
}

/* H3: tensor_init refuses a NULL output, an unknown dtype, a bad rank or shape, and zeroes its output. */
static void test_status__tensor_init_refuses_bad_arguments(void **state) {
  float data[4] = {0};
  int64_t dims[HK_MAX_RANK + 1] = {2, 2, 1, 1, 1, 1, 1, 1, 1};
  int64_t neg[2] = {2, -1};
  int64_t huge[2] = {INT64_MAX, INT64_MAX};
  hk_tensor t;
  hk_status st = HK_STATUS_INIT;
  (void)state;

  assert_status(hk_tensor_init(NULL, HK_DTYPE_F32, 1, dims, data, &st), &st, HK_INVALID_ARGUMENT, "out");

  memset(&t, 0x77, sizeof(t));
  assert_status(hk_tensor_init(&t, HK_DTYPE_INVALID, 1, dims, data, &st), &st, HK_INVALID_ARGUMENT, "dtype");
  assert_int_equal(t.dtype, 0); /* zeroed on failure */
  assert_null(t.data);
  assert_status(hk_tensor_init(&t, (hk_dtype)99, 1, dims, data, &st), &st, HK_INVALID_ARGUMENT, "dtype");
  assert_status(hk_tensor_init(&t, HK_DTYPE_F32, -1, dims, data, &st), &st, HK_INVALID_ARGUMENT, "rank");
  assert_status(hk_tensor_init(&t, HK_DTYPE_F32, HK_MAX_RANK + 1, dims, data, &st), &st, HK_INVALID_ARGUMENT, "rank");
  assert_status(hk_tensor_init(&t, HK_DTYPE_F32, 2, NULL, data, &st), &st, HK_INVALID_ARGUMENT, "dims");
  assert_status(hk_tensor_init(&t, HK_DTYPE_F32, 2, neg, data, &st), &st, HK_INVALID_ARGUMENT, "dim");
  assert_status(hk_tensor_init(&t, HK_DTYPE_F32, 2, huge, data, &st), &st, HK_INVALID_ARGUMENT, NULL);
  assert_status(hk_tensor_init(&t, HK_DTYPE_F32, 2, dims, NULL, &st), &st, HK_INVALID_ARGUMENT, "data");
  assert_int_equal(t.rank, 0);

  /* A NULL status is allowed: only the code is returned. */
  assert_int_equal(hk_tensor_init(&t, HK_DTYPE_INVALID, 0, NULL, data, NULL), HK_INVALID_ARGUMENT);
  /* Max rank is accepted. */
  assert_ok(hk_tensor_init(&t, HK_DTYPE_U8, HK_MAX_RANK, dims + 1, data, &st), &st);
  assert_int_equal(t.nbytes, 2);
}

static void test_status__tensor_helpers(void **state) {
  int64_t v = 41;
  float f = 1.5f;
  int64_t out = 0;
  hk_tensor a, b;
  hk_status st = HK_STATUS_INIT;
  int32_t i32 = -7;
  (void)state;
  a = hk_tensor_scalar_i64(&v);
  assert_int_equal(a.dtype, HK_DTYPE_I64);
  assert_int_equal(a.rank, 0);
  assert_ptr_equal(a.data, &v);
  assert_int_equal(a.nbytes, 8);
  b = hk_tensor_scalar_f32(&f);
  assert_int_equal(b.dtype, HK_DTYPE_F32);
  assert_int_equal(b.nbytes, 4);
  assert_false(hk_tensor_same_spec(&a, &b));
  b = hk_tensor_scalar_i64(&out);
  assert_true(hk_tensor_same_spec(&a, &b));

  assert_ok(hk_tensor_to_i64(&out, &a, "gs", &st), &st);
  assert_int_equal(out, 41);
  assert_ok(hk_tensor_init(&b, HK_DTYPE_I32, 0, NULL, &i32, &st), &st);
  assert_ok(hk_tensor_to_i64(&out, &b, "gs", &st), &st);
  assert_int_equal(out, -7);
  b = hk_tensor_scalar_f32(&f);
  assert_status(hk_tensor_to_i64(&out, &b, "my_tensor", &st), &st, HK_INVALID_ARGUMENT, "my_tensor");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_status__codes_have_tensorflow_s_numbering),
      cmocka_unit_test(test_status__code_name_names_every_code),
      cmocka_unit_test(test_status__only_aborted_and_unavailable_are_preemption_codes),
      cmocka_unit_test(test_status__set_formats_and_returns_code),
      cmocka_unit_test(test_status__set_null_status_is_noop),
      cmocka_unit_test(test_status__set_truncates_long_message),
      cmocka_unit_test(test_status__setv),
      cmocka_unit_test(test_status__version),
      cmocka_unit_test(test_status__env_init),
      cmocka_unit_test(test_status__env_check),
      cmocka_unit_test(test_status__env_helpers_use_allocator),
      cmocka_unit_test(test_status__env_log_and_clock),
      cmocka_unit_test(test_status__unset_sentinels),
      cmocka_unit_test(test_status__dtype_table),
      cmocka_unit_test(test_status__tensor_init_ok),
      cmocka_unit_test(test_status__tensor_init_refuses_bad_arguments),
      cmocka_unit_test(test_status__tensor_helpers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
