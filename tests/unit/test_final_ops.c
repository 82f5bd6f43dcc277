/*
 * Tests of FinalOpsHook (contract group N: C138), through real sessions over
 * the scripted fake executor: the final ops run only in end(), with their
 * feed, and the values are kept by the hook until its next begin().
 */
#include "session_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fixture {
  test_env *te;
  fake_executor *fx;
  hk_executor *ex;
  hk_handle gs, train, x, v, p, done, report;
  hk_hook *hook;
  hk_session *s;
  hk_status st;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof(*f));
  static const int64_t two[1] = {2};
  const float vinit[2] = {1.5f, 2.5f};
  int64_t x = 3;
  assert_non_null(f);
  f->te = test_env_new();
  f->fx = fake_training_executor(f->te, &f->ex, &f->gs, &f->train);
  f->x = fake_executor_add_tensor(f->fx, "x", HK_DTYPE_I64, 0, NULL);
  fake_executor_set_value(f->fx, f->x, &x);
  f->v = fake_executor_add_variable(f->fx, "v", HK_DTYPE_F32, 1, two, 0, vinit);
  f->p = fake_executor_add_tensor(f->fx, "p", HK_DTYPE_I64, 0, NULL);
  f->done = fake_executor_add_op(f->fx, "done");
  f->report = fake_executor_add_report(f->fx, "report", FAKE_REPORT_ALL);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  session_close_and_free(f->s);
  hk_hook_free(f->hook);
  return fixture_release(f, f->fx, f->te);
}

static const char *const OPS[4] = {"x", "v:0", "done", "p"};

static void make_hook(fixture *f, const char *const *ops, size_t n, int64_t *feed_value) {
  hk_final_ops_options o = HK_FINAL_OPS_OPTIONS_INIT;
  hk_final_feed feed;
  o.final_ops = ops;
  o.nfinal_ops = n;
  if (feed_value != NULL) {
    feed.name = "p";
    feed.value = hk_tensor_scalar_i64(feed_value);
    o.final_feed = &feed;
    o.nfinal_feed = 1;
  }
  assert_ok(hk_final_ops_hook_new(&f->hook, &o, &f->st), &f->st);
}

static void open_session(fixture *f) {
  assert_ok(one_hook_session_new(&f->s, &f->te->env, HK_SESSION_MONITORED, f->ex, &f->hook, NULL, &f->st), &f->st);
  fake_executor_reset_calls(f->fx);
}

static void free_session(fixture *f) {
  hk_session_free(f->s);
  f->s = NULL;
}

/* ---- options ---------------------------------------------------------------------- */

static void expect_refused(fixture *f, const hk_final_ops_options *o, const char *substr) {
  hk_hook *h = (hk_hook *)f;
  long live = test_alloc_live(&f->te->alloc);
  assert_status(hk_final_ops_hook_new(&h, o, &f->st), &f->st, HK_INVALID_ARGUMENT, substr);
  assert_null(h);
  assert_int_equal(test_alloc_live(&f->te->alloc), live);
}

static void test_final_ops__bad_options_are_named(void **state) {
  fixture *f = *state;
  static const char *const with_null[2] = {"x", NULL};
  static const char *const with_empty[1] = {""};
  const char *str = "s";
  int64_t value = 1;
  hk_final_feed feed = {"p", hk_tensor_scalar_i64(&value)};
  hk_final_ops_options o = HK_FINAL_OPS_OPTIONS_INIT;
  hk_env bad_env = HK_ENV_INIT;
  o.env = &f->te->env;
  o.final_ops = OPS;
  o.nfinal_ops = 4;
  assert_status(hk_final_ops_hook_new(NULL, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "out");
  expect_refused(f, NULL, "opts is NULL");
  o.version = 2;
  expect_refused(f, &o, "opts->version");
  o.version = HK_FINAL_OPS_OPTIONS_VERSION;
  bad_env.version = 0;
  o.env = &bad_env;
  expect_refused(f, &o, "opts->env");
  o.env = &f->te->env;
  o.nfinal_ops = 0;
  expect_refused(f, &o, "final_ops must name at least one tensor or op");
  o.final_ops = NULL;
  o.nfinal_ops = 1;
  expect_refused(f, &o, "final_ops is NULL with nfinal_ops 1");
  o.final_ops = with_null;
  o.nfinal_ops = 2;
  expect_refused(f, &o, "final_ops[1] is NULL");
  o.final_ops = with_empty;
  o.nfinal_ops = 1;
  expect_refused(f, &o, "final_ops[0] is empty");
  o.final_ops = OPS;
  o.nfinal_ops = 4;
  o.nfinal_feed = 1;
  expect_refused(f, &o, "final_feed is NULL with nfinal_feed 1");
  o.final_feed = &feed;
  feed.name = NULL;
  expect_refused(f, &o, "final_feed[0].name is NULL");
  feed.name = "p";
  feed.value.nbytes = 4;
  expect_refused(f, &o, "final_feed[0] ('p').value: nbytes is 4, its dtype and shape need 8");
  feed.value = hk_tensor_scalar_i64(&value);
  feed.value.data = NULL;
  expect_refused(f, &o, "final_feed[0] ('p').value");
  feed.value.dtype = HK_DTYPE_STRING;
  feed.value.data = (void *)&str;
  feed.value.nbytes = sizeof str;
  expect_refused(f, &o, "final_feed[0] ('p'): a STRING value cannot be fed");
}

static void test_final_ops__options_init(void **state) {
  hk_final_ops_options o;
  (void)state;
  memset(&o, 0x5a, sizeof o);
  assert_int_equal(hk_final_ops_options_init(&o, HK_FINAL_OPS_OPTIONS_VERSION), HK_OK);
  assert_int_equal(o.version, HK_FINAL_OPS_OPTIONS_VERSION);
  assert_null(o.env);
  assert_null(o.final_ops);
  assert_int_equal(o.nfinal_ops, 0);
  assert_null(o.final_feed);
  assert_int_equal(o.nfinal_feed, 0);
  assert_int_equal(hk_final_ops_options_init(&o, 0), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_final_ops_options_init(NULL, HK_FINAL_OPS_OPTIONS_VERSION), HK_INVALID_ARGUMENT);
}

/* ---- C138 -------------------------------------------------------------------------- */

/* C138: nothing runs before end(); end() runs the final ops once, with the feed
 * (a tensor fed and fetched gives the fed value), an op without outputs as
 * a target; the values stay the hook's after the session is gone, until
 * its next begin(). */
static void test_final_ops__runs_only_in_end_and_keeps_values(void **state) {
  fixture *f = *state;
  int64_t fed = 7;
  const hk_tensor *values = NULL;
  size_t n = 99;
  make_hook(f, OPS, 4, &fed);
  fed = -1; /* the feed was copied */
  open_session(f);
  for (int i = 0; i < 3; i++) {
    assert_ok(session_run_train(f->s, f->train, &f->st), &f->st);
    assert_int_equal(fake_executor_last_run(f->fx)->nfetches, 0);
    assert_int_equal(fake_executor_last_run(f->fx)->nfeeds, 0);
  }
  assert_int_equal(fake_executor_op_runs(f->fx, f->done), 0);
  assert_status(hk_final_ops_hook_values(&values, &n, f->hook, &f->st), &f->st, HK_FAILED_PRECONDITION,
                "no final values");
  assert_null(values);
  assert_int_equal(n, 0);

  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  const fake_run_record *r = fake_executor_last_run(f->fx);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 4);
  assert_int_equal(r->nfetches, 3);
  assert_int_equal(r->ntargets, 1);
  assert_int_equal(r->nfeeds, 1);
  assert_int_equal(r->feed_i64[0], 7);
  assert_int_equal(fake_executor_op_runs(f->fx, f->done), 1);
  free_session(f);

  assert_ok(hk_final_ops_hook_values(&values, &n, f->hook, &f->st), &f->st);
  assert_int_equal(n, 4);
  assert_int_equal(values[0].dtype, HK_DTYPE_I64);
  assert_int_equal(*(const int64_t *)values[0].data, 3);
  assert_int_equal(values[1].dtype, HK_DTYPE_F32);
  assert_int_equal(values[1].rank, 1);
  assert_int_equal(values[1].dims[0], 2);
  assert_int_equal(values[1].nbytes, 8);
  assert_true(((const float *)values[1].data)[0] == 1.5f && ((const float *)values[1].data)[1] == 2.5f);
  assert_int_equal(values[2].dtype, HK_DTYPE_INVALID); /* TF's None for an op */
  assert_null(values[2].data);
  assert_int_equal(values[2].nbytes, 0);
  assert_int_equal(*(const int64_t *)values[3].data, 7);

  /* A new session's begin() drops them. */
  open_session(f);
  assert_status(hk_final_ops_hook_values(&values, &n, f->hook, &f->st), &f->st, HK_FAILED_PRECONDITION, NULL);
}

/* C138: string values are copied, strings included. */
static void test_final_ops__string_values_are_copied_strings_included(void **state) {
  fixture *f = *state;
  static const char *const names[2] = {"alpha", "b\"c"};
  static const char *const ops[1] = {"report"};
  const hk_tensor *values = NULL;
  size_t n = 0;
  char text[64];
  fake_executor_script_report(f->fx, f->report, names, 2, FAKE_FOREVER);
  make_hook(f, ops, 1, NULL);
  open_session(f);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  free_session(f);
  assert_ok(hk_final_ops_hook_values(&values, &n, f->hook, &f->st), &f->st);
  assert_int_equal(n, 1);
  assert_int_equal(values[0].dtype, HK_DTYPE_STRING);
  assert_int_equal(values[0].dims[0], 2);
  hk_logging_tensor_format_value(text, sizeof text, &values[0]);
  assert_string_equal(text, "[\"alpha\" \"b\\\"c\"]");
  assert_true(((const char *const *)values[0].data)[0] != names[0]);
}

/* C138: OUT_OF_RANGE from the final run: TF's WARNING, end() returns it, no
 * values. */
static void test_final_ops__out_of_range_is_a_warning_not_an_error(void **state) {
  fixture *f = *state;
  const hk_tensor *values = NULL;
  size_t n = 0;
  make_hook(f, OPS, 2, NULL);
  open_session(f);
  assert_ok(session_run_train(f->s, f->train, &f->st), &f->st);
  fake_executor_fail(f->fx, FAKE_RUN, 1, 1, HK_OUT_OF_RANGE, "End of sequence");
  assert_status(hk_session_close(f->s, HK_OK, &f->st), &f->st, HK_OUT_OF_RANGE, "End of sequence");
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING,
                                  "An OutOfRangeError or StopIteration exception is raised by the code in "
                                  "FinalOpsHook."),
                   1);
  assert_logged(f->te, HK_LOG_WARNING, "must only read variables");
  assert_status(hk_final_ops_hook_values(&values, &n, f->hook, &f->st), &f->st, HK_FAILED_PRECONDITION, NULL);
}

/* C138: any other error is end()'s as it is, without the warning. */
static void test_final_ops__other_errors_are_end_s_unchanged(void **state) {
  fixture *f = *state;
  make_hook(f, OPS, 2, NULL);
  open_session(f);
  fake_executor_fail(f->fx, FAKE_RUN, 1, 1, HK_DATA_LOSS, "the disk ate it");
  assert_status(hk_session_close(f->s, HK_OK, &f->st), &f->st, HK_DATA_LOSS, "the disk ate it");
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, "OutOfRangeError"), 0);
}

/* C138, C16: a close that is not clean runs no end(): nothing runs, no values. */
static void test_final_ops__nothing_runs_after_an_unclean_close(void **state) {
  fixture *f = *state;
  const hk_tensor *values = NULL;
  size_t n = 0;
  make_hook(f, OPS, 3, NULL);
  open_session(f);
  (void)hk_session_close(f->s, HK_INTERNAL, &f->st);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 0);
  assert_int_equal(fake_executor_op_runs(f->fx, f->done), 0);
  assert_status(hk_final_ops_hook_values(&values, &n, f->hook, &f->st), &f->st, HK_FAILED_PRECONDITION, NULL);
}

static void test_final_ops__begin_names_an_unknown_name(void **state) {
  fixture *f = *state;
  static const char *const ops[2] = {"x", "nowhere"};
  static const char *const ok_ops[1] = {"x"};
  int64_t fed = 1;
  hk_final_ops_options o = HK_FINAL_OPS_OPTIONS_INIT;
  hk_final_feed feed = {"nofeed:0", hk_tensor_scalar_i64(&fed)};
  make_hook(f, ops, 2, NULL);
  assert_status(one_hook_session_new(&f->s, &f->te->env, HK_SESSION_MONITORED, f->ex, &f->hook, NULL, &f->st), &f->st,
                HK_NOT_FOUND, "final op 'nowhere' is neither a tensor nor an op");
  hk_hook_free(f->hook);
  o.final_ops = ok_ops;
  o.nfinal_ops = 1;
  o.final_feed = &feed;
  o.nfinal_feed = 1;
  assert_ok(hk_final_ops_hook_new(&f->hook, &o, &f->st), &f->st);
  assert_status(one_hook_session_new(&f->s, &f->te->env, HK_SESSION_MONITORED, f->ex, &f->hook, NULL, &f->st), &f->st,
                HK_NOT_FOUND, "final_feed 'nofeed:0'");
}

static hk_code noop_end(void *user, hk_raw_session *rs, hk_status *st) {
  (void)user;
  (void)rs;
  (void)st;
  return HK_OK;
}

/* The accessor refuses what is not a FinalOpsHook, also a hook of the
 * program's that took its name. */
static void test_final_ops__values_refuses_other_hooks(void **state) {
  fixture *f = *state;
  static const hk_hook_vtable vt = {HK_HOOK_VTABLE_VERSION, NULL, NULL, NULL, NULL, noop_end, NULL};
  uint64_t impostor_state[16];
  hk_hook *impostor = NULL;
  spy_hook *spy = spy_hook_new("spy", NULL, NULL);
  const hk_tensor *values = (const hk_tensor *)f;
  size_t n = 5;
  memset(impostor_state, 0, sizeof impostor_state);
  assert_ok(hk_hook_new(&impostor, &vt, impostor_state, "FinalOpsHook", NULL, &f->st), &f->st);
  make_hook(f, OPS, 1, NULL);
  assert_status(hk_final_ops_hook_values(&values, &n, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "hook is NULL");
  assert_null(values);
  assert_int_equal(n, 0);
  assert_status(hk_final_ops_hook_values(NULL, &n, f->hook, &f->st), &f->st, HK_INVALID_ARGUMENT, "values is NULL");
  assert_status(hk_final_ops_hook_values(&values, NULL, f->hook, &f->st), &f->st, HK_INVALID_ARGUMENT, "count is NULL");
  assert_status(hk_final_ops_hook_values(&values, &n, spy->hook, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "hook 'spy' is not a FinalOpsHook");
  assert_status(hk_final_ops_hook_values(&values, &n, impostor, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "is not a FinalOpsHook");
  hk_hook_free(impostor);
  spy_hook_free(spy);
}

/* ---- OOM ---------------------------------------------------------------------------------- */

static void test_final_ops__oom_is_clean(void **state) {
  fixture *f = *state;
  int64_t fed = 7;
  hk_final_ops_options o = HK_FINAL_OPS_OPTIONS_INIT;
  hk_final_feed feed = {"p", hk_tensor_scalar_i64(&fed)};
  hk_code rc = HK_INTERNAL;
  long n, base = test_alloc_live(&f->te->alloc);
  o.env = &f->te->env;
  o.final_ops = OPS;
  o.nfinal_ops = 4;
  o.final_feed = &feed;
  o.nfinal_feed = 1;
  for (n = 0; n < 100; n++) {
    test_alloc_fail_at(&f->te->alloc, n, 0);
    rc = hk_final_ops_hook_new(&f->hook, &o, &f->st);
    test_alloc_fail_at(&f->te->alloc, -1, 0);
    if (rc == HK_OK) break;
    assert_status(rc, &f->st, HK_RESOURCE_EXHAUSTED, NULL);
    assert_null(f->hook);
    assert_int_equal(test_alloc_live(&f->te->alloc), base);
  }
  assert_int_equal(rc, HK_OK);
  assert_true(n > 8);

  /* Out of memory while end() keeps the values: RESOURCE_EXHAUSTED, no
   * values, nothing leaked once the hook is freed. */
  open_session(f);
  test_alloc_reset_counts(&f->te->alloc);
  test_alloc_fail_at(&f->te->alloc, 0, 1);
  rc = hk_session_close(f->s, HK_OK, &f->st);
  test_alloc_fail_at(&f->te->alloc, -1, 0);
  assert_status(rc, &f->st, HK_RESOURCE_EXHAUSTED, "out of memory keeping the value of 'x'");
  const hk_tensor *values = NULL;
  size_t count = 0;
  assert_status(hk_final_ops_hook_values(&values, &count, f->hook, &f->st), &f->st, HK_FAILED_PRECONDITION, NULL);
  free_session(f);
  hk_hook_free(f->hook);
  f->hook = NULL;
  assert_int_equal(test_alloc_live(&f->te->alloc), base);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_final_ops__bad_options_are_named),
      T(test_final_ops__options_init),
      T(test_final_ops__runs_only_in_end_and_keeps_values),
      T(test_final_ops__string_values_are_copied_strings_included),
      T(test_final_ops__out_of_range_is_a_warning_not_an_error),
      T(test_final_ops__other_errors_are_end_s_unchanged),
      T(test_final_ops__nothing_runs_after_an_unclean_close),
      T(test_final_ops__begin_names_an_unknown_name),
      T(test_final_ops__values_refuses_other_hooks),
      T(test_final_ops__oom_is_clean),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
