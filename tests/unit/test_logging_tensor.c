/*
 * Tests of LoggingTensorHook (contract group N: C127–C130, H28), through
 * real sessions over the scripted fake executor, the embedded graph
 * executor and the host loop (hooked/loop.h), whose registered arrays are
 * fetchable by name. Also H7: a run that logs allocates nothing.
 */
#include "session_fixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fixture {
  test_env *te;
  fake_executor *fx;
  hk_executor *ex;
  hk_handle gs, train, x, y, multi0, multi1;
  hk_hook *hook;
  hk_session *s;
  hk_status st;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof(*f));
  static const int64_t two[1] = {2};
  int64_t x = 3;
  float y = 1.5f;
  assert_non_null(f);
  f->te = test_env_new();
  f->fx = fake_training_executor(f->te, &f->ex, &f->gs, &f->train);
  f->x = fake_executor_add_tensor(f->fx, "x", HK_DTYPE_I64, 0, NULL);
  fake_executor_set_value(f->fx, f->x, &x);
  f->y = fake_executor_add_tensor(f->fx, "y", HK_DTYPE_F32, 0, NULL);
  fake_executor_set_value(f->fx, f->y, &y);
  f->multi0 = fake_executor_add_tensor(f->fx, "multi:0", HK_DTYPE_I32, 1, two);
  f->multi1 = fake_executor_add_tensor(f->fx, "multi:1", HK_DTYPE_I32, 1, two);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  session_close_and_free(f->s);
  hk_hook_free(f->hook);
  return fixture_release(f, f->fx, f->te);
}

static const char *const XY[2] = {"x", "y:0"};

static hk_logging_tensor_options opts_xy(int64_t every_n_iter) {
  hk_logging_tensor_options o = HK_LOGGING_TENSOR_OPTIONS_INIT;
  o.tensors = XY;
  o.ntensors = 2;
  o.every_n_iter = every_n_iter;
  return o;
}

static void open_session(fixture *f) {
  assert_ok(one_hook_session_new(&f->s, &f->te->env, HK_SESSION_MONITORED, f->ex, &f->hook, NULL, &f->st), &f->st);
  test_log_clear(&f->te->log);
  fake_executor_reset_calls(f->fx);
}

static void run(fixture *f) { assert_ok(session_run_train(f->s, f->train, &f->st), &f->st); }

/* Lines logged at INFO that start with `prefix`. */
static int lines_starting(test_env *te, const char *prefix) {
  int n = 0;
  for (size_t i = 0; i < te->log.n; i++)
    if (te->log.lines[i].level == HK_LOG_INFO && strncmp(te->log.lines[i].text, prefix, strlen(prefix)) == 0) n++;
  return n;
}

/* The k-th (0-based) INFO line starting with `prefix`, "" when none. */
static const char *line_starting(test_env *te, const char *prefix, int k) {
  for (size_t i = 0; i < te->log.n; i++)
    if (te->log.lines[i].level == HK_LOG_INFO && strncmp(te->log.lines[i].text, prefix, strlen(prefix)) == 0 &&
        k-- == 0)
      return te->log.lines[i].text;
  return "";
}

/* ---- C127: options -------------------------------------------------------------- */

static void expect_refused(fixture *f, const hk_logging_tensor_options *o, const char *substr) {
  hk_hook *h = (hk_hook *)f;
  long live = test_alloc_live(&f->te->alloc);
  assert_status(hk_logging_tensor_hook_new(&h, o, &f->st), &f->st, HK_INVALID_ARGUMENT, substr);
  assert_null(h);
  assert_int_equal(test_alloc_live(&f->te->alloc), live); /* no side effect (H3) */
}

/* C127: exactly one cadence or at_end alone, a non-empty list of tensors; anything else is INVALID_ARGUMENT naming
 * it. */
static void test_logging_tensor__bad_options_are_named(void **state) {
  fixture *f = *state;
  static const char *const bad_names[2] = {"x", NULL};
  static const char *const empty_names[1] = {""};
  hk_tagged_tensor dup[2] = {{"a", "x"}, {"a", "y"}};
  hk_tagged_tensor null_tag[1] = {{NULL, "x"}};
  hk_tagged_tensor null_name[1] = {{"a", NULL}};
  hk_env bad_env = HK_ENV_INIT;
  hk_logging_tensor_options o;
  const char *cadence = "either at_end and/or exactly one of every_n_iter and every_n_secs must be provided.";

  o = opts_xy(1);
  o.env = &f->te->env;
  assert_status(hk_logging_tensor_hook_new(NULL, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "out");
  expect_refused(f, NULL, "opts is NULL");
  o.version = 99;
  expect_refused(f, &o, "opts->version");
  o = opts_xy(1);
  bad_env.log_level = (hk_log_level)42;
  o.env = &bad_env;
  expect_refused(f, &o, "opts->env");

  /* C127's cadence rules, TF's message. */
  o = opts_xy(HK_UNSET_STEPS);
  o.env = &f->te->env;
  expect_refused(f, &o, cadence);
  o.every_n_iter = 2;
  o.every_n_secs = 1.0;
  expect_refused(f, &o, cadence);
  o.at_end = 1;
  expect_refused(f, &o, cadence);
  o = opts_xy(0);
  expect_refused(f, &o, "invalid every_n_iter=0.");
  o.every_n_iter = -3;
  expect_refused(f, &o, "invalid every_n_iter=-3.");
  o = opts_xy(HK_UNSET_STEPS);
  o.every_n_secs = 0.0;
  expect_refused(f, &o, "every_n_secs");
  o.every_n_secs = NAN;
  expect_refused(f, &o, "every_n_secs");
  o.every_n_secs = HUGE_VAL;
  expect_refused(f, &o, "every_n_secs");
  o.every_n_secs = -1.0;
  expect_refused(f, &o, "every_n_secs");

  /* The tensors. */
  o = opts_xy(1);
  o.ntensors = 0;
  expect_refused(f, &o, "no tensors to log");
  o = opts_xy(1);
  o.tensors = NULL;
  expect_refused(f, &o, "tensors is NULL with ntensors 2");
  o = opts_xy(1);
  o.tagged = dup;
  o.ntagged = 1;
  expect_refused(f, &o, "not both");
  o = opts_xy(1);
  o.ntensors = 0;
  o.ntagged = 1;
  expect_refused(f, &o, "tagged is NULL with ntagged 1");
  o.tensors = bad_names;
  o.ntensors = 2;
  o.ntagged = 0;
  expect_refused(f, &o, "tensors[1] is NULL");
  o.tensors = empty_names;
  o.ntensors = 1;
  expect_refused(f, &o, "tensors[0] is empty");
  o = opts_xy(1);
  o.tensors = NULL;
  o.ntensors = 0;
  o.tagged = dup;
  o.ntagged = 2;
  expect_refused(f, &o, "tag 'a' is given twice");
  o.tagged = null_tag;
  o.ntagged = 1;
  expect_refused(f, &o, "tagged[0].tag is NULL");
  o.tagged = null_name;
  expect_refused(f, &o, "tagged[0].name is NULL");

  /* Valid: at_end alone; one cadence with or without at_end. */
  o = opts_xy(HK_UNSET_STEPS);
  o.at_end = 1;
  assert_ok(hk_logging_tensor_hook_new(&f->hook, &o, &f->st), &f->st);
  hk_hook_free(f->hook);
  o.every_n_secs = 2.5;
  assert_ok(hk_logging_tensor_hook_new(&f->hook, &o, &f->st), &f->st);
  assert_string_equal(hk_hook_name(f->hook), "LoggingTensorHook");
}

static void test_logging_tensor__options_init(void **state) {
  hk_logging_tensor_options o, init = HK_LOGGING_TENSOR_OPTIONS_INIT;
  (void)state;
  memset(&o, 0x5a, sizeof o);
  assert_int_equal(hk_logging_tensor_options_init(&o, HK_LOGGING_TENSOR_OPTIONS_VERSION), HK_OK);
  assert_int_equal(o.version, init.version);
  assert_null(o.tensors);
  assert_int_equal(o.ntensors, 0);
  assert_null(o.tagged);
  assert_true(o.every_n_iter == HK_UNSET_STEPS);
  assert_true(hk_secs_is_unset(o.every_n_secs));
  assert_int_equal(o.at_end, 0);
  assert_null(o.formatter);
  assert_int_equal(hk_logging_tensor_options_init(&o, 2), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_logging_tensor_options_init(NULL, HK_LOGGING_TENSOR_OPTIONS_VERSION), HK_INVALID_ARGUMENT);
}

/* ---- C128: names ---------------------------------------------------------------- */

/* C128: begin() fails with NOT_FOUND naming a tensor the executor does not know. */
static void test_logging_tensor__an_unknown_tensor_name_is_not_found(void **state) {
  fixture *f = *state;
  static const char *const names[2] = {"x", "nope:0"};
  hk_logging_tensor_options o = opts_xy(1);
  o.tensors = names;
  assert_ok(hk_logging_tensor_hook_new(&f->hook, &o, &f->st), &f->st);
  assert_status(one_hook_session_new(&f->s, &f->te->env, HK_SESSION_MONITORED, f->ex, &f->hook, NULL, &f->st), &f->st,
                HK_NOT_FOUND, "nope:0");
  assert_null(f->s);
}

/* C128: a bare op name of an op with several outputs is ambiguous and refused. */
static void test_logging_tensor__a_bare_name_of_a_multi_output_op_is_ambiguous(void **state) {
  fixture *f = *state;
  static const char *const names[1] = {"multi"};
  static const char *const explicit_names[2] = {"multi:0", "multi:1"};
  hk_logging_tensor_options o = opts_xy(1);
  o.tensors = names;
  o.ntensors = 1;
  assert_ok(hk_logging_tensor_hook_new(&f->hook, &o, &f->st), &f->st);
  assert_status(one_hook_session_new(&f->s, &f->te->env, HK_SESSION_MONITORED, f->ex, &f->hook, NULL, &f->st), &f->st,
                HK_INVALID_ARGUMENT, "Name multi is ambiguous, as this Operation has multiple outputs (at least 2).");
  hk_hook_free(f->hook);
  f->hook = NULL;

  /* Naming each output is fine; a bare name of a one-output op is output 0. */
  o.tensors = explicit_names;
  o.ntensors = 2;
  assert_ok(hk_logging_tensor_hook_new(&f->hook, &o, &f->st), &f->st);
  open_session(f);
  run(f);
  assert_int_equal(lines_starting(f->te, "multi:0 = [0 0], multi:1 = [0 0]"), 1);
}

/* ---- C128, C129: cadence --------------------------------------------------------- */

/* C128: the timer counts the hook's own runs from 0, not the global step, and
 * the tensors are fetched only on the runs that log. */
static void test_logging_tensor__every_n_iter_counts_its_own_runs(void **state) {
  fixture *f = *state;
  hk_logging_tensor_options o = opts_xy(2);
  assert_ok(hk_logging_tensor_hook_new(&f->hook, &o, &f->st), &f->st);
  open_session(f);
  fake_executor_set_i64(f->fx, NULL, f->gs, 100); /* GS plays no part */
  for (int i = 0; i < 5; i++) {
    run(f);
    const fake_run_record *r = fake_executor_last_run(f->fx);
    assert_int_equal(r->nfetches, i % 2 == 0 ? 2 : 0);
    assert_int_equal(lines_starting(f->te, "x = 3, y:0 = 1.5"), i / 2 + 1);
  }
}

/* C129: "tag = value" in the given order, then the seconds since the
 * previous log, except on the first. */
static void test_logging_tensor__logs_one_line_with_the_seconds_since_the_last(void **state) {
  fixture *f = *state;
  hk_logging_tensor_options o = opts_xy(1);
  float y = -0.25f;
  assert_ok(hk_logging_tensor_hook_new(&f->hook, &o, &f->st), &f->st);
  open_session(f);
  run(f);
  assert_string_equal(line_starting(f->te, "x = ", 0), "x = 3, y:0 = 1.5");
  test_clock_advance(&f->te->clock, 0.25);
  fake_executor_set_value(f->fx, f->y, &y);
  run(f);
  assert_string_equal(line_starting(f->te, "x = ", 1), "x = 3, y:0 = -0.25 (0.250 sec)");
}

/* C129: with every_n_secs the hook logs once the interval has passed on the env's clock. */
static void test_logging_tensor__every_n_secs_logs_when_the_clock_passes_the_interval(void **state) {
  fixture *f = *state;
  hk_logging_tensor_options o = opts_xy(HK_UNSET_STEPS);
  o.every_n_secs = 10.0;
  assert_ok(hk_logging_tensor_hook_new(&f->hook, &o, &f->st), &f->st);
  open_session(f);
  run(f); /* the first run logs (C76) */
  test_clock_advance(&f->te->clock, 5.0);
  run(f);
  assert_int_equal(lines_starting(f->te, "x = "), 1);
  test_clock_advance(&f->te->clock, 5.0);
  run(f);
  assert_int_equal(lines_starting(f->te, "x = "), 2);
  assert_string_equal(line_starting(f->te, "x = ", 1), "x = 3, y:0 = 1.5 (10.000 sec)");
  run(f);
  assert_int_equal(lines_starting(f->te, "x = "), 2);
}

/* C129: (tag, name) pairs are logged sorted by tag, bytewise. */
static void test_logging_tensor__tags_sorted_bytewise(void **state) {
  fixture *f = *state;
  hk_tagged_tensor tagged[3] = {{"loss", "y"}, {"Step", "x"}, {"global", "global_step"}};
  hk_logging_tensor_options o = HK_LOGGING_TENSOR_OPTIONS_INIT;
  o.tagged = tagged;
  o.ntagged = 3;
  o.every_n_iter = 1;
  assert_ok(hk_logging_tensor_hook_new(&f->hook, &o, &f->st), &f->st);
  /* The pairs were copied: the caller's array may change. */
  tagged[0].tag = "changed";
  open_session(f);
  run(f);
  assert_string_equal(line_starting(f->te, "Step = ", 0), "Step = 3, global = 0, loss = 1.5");
}

typedef struct fmt_state {
  int calls;
  size_t n;
  char seen[256];
  char line[64];
  int fail;
  int null_line;
} fmt_state;

static hk_code formatter(void *user, const char *const *tags, const hk_tensor *values, size_t n, const char **line,
                         hk_status *status) {
  fmt_state *fs = user;
  size_t len = 0;
  fs->calls++;
  fs->n = n;
  if (fs->fail) return hk_status_set(status, HK_DATA_LOSS, "formatter failed on call %d", fs->calls);
  for (size_t i = 0; i < n; i++) {
    len += (size_t)snprintf(fs->seen + len, sizeof fs->seen - len, "%s%s:", i ? "|" : "", tags[i]);
    len += hk_logging_tensor_format_value(fs->seen + len, sizeof fs->seen - len, &values[i]);
  }
  snprintf(fs->line, sizeof fs->line, "custom line %d", fs->calls);
  *line = fs->null_line ? NULL : fs->line;
  return HK_OK;
}

/* C129: the formatter's line replaces the whole line, seconds included;
 * its error is the run's (H1). */
static void test_logging_tensor__formatter_replaces_the_line(void **state) {
  fixture *f = *state;
  fmt_state fs;
  hk_logging_tensor_options o = opts_xy(1);
  memset(&fs, 0, sizeof fs);
  o.formatter = formatter;
  o.formatter_user = &fs;
  assert_ok(hk_logging_tensor_hook_new(&f->hook, &o, &f->st), &f->st);
  open_session(f);
  run(f);
  test_clock_advance(&f->te->clock, 1.0);
  run(f);
  assert_int_equal(fs.calls, 2);
  assert_int_equal(fs.n, 2);
  assert_string_equal(fs.seen, "x:3|y:0:1.5");
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "custom line 1"), 1);
  assert_string_equal(line_starting(f->te, "custom line", 1), "custom line 2");
  assert_int_equal(lines_starting(f->te, "x = "), 0);

  fs.null_line = 1; /* nothing logged */
  run(f);
  assert_int_equal(lines_starting(f->te, "custom line"), 2);

  fs.fail = 1;
  assert_status(session_run_train(f->s, f->train, &f->st), &f->st, HK_DATA_LOSS, "formatter failed on call 4");
}

/* ---- C130: at_end ----------------------------------------------------------------- */

/* C130: with at_end alone, end() fetches the tensors once and logs one line without seconds. */
static void test_logging_tensor__at_end_alone_logs_once_at_close(void **state) {
  fixture *f = *state;
  hk_logging_tensor_options o = opts_xy(HK_UNSET_STEPS);
  o.at_end = 1;
  assert_ok(hk_logging_tensor_hook_new(&f->hook, &o, &f->st), &f->st);
  open_session(f);
  for (int i = 0; i < 3; i++) {
    run(f);
    assert_int_equal(fake_executor_last_run(f->fx)->nfetches, 0);
  }
  assert_int_equal(lines_starting(f->te, "x = "), 0);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  /* No previous log: no seconds (C79's timer reports none). */
  assert_int_equal(lines_starting(f->te, "x = "), 1);
  assert_string_equal(line_starting(f->te, "x = ", 0), "x = 3, y:0 = 1.5");
}

/* C130: with at_end and a cadence, the line at end reports the seconds since the previous line. */
static void test_logging_tensor__at_end_with_cadence_reports_seconds(void **state) {
  fixture *f = *state;
  hk_logging_tensor_options o = opts_xy(10);
  o.at_end = 1;
  assert_ok(hk_logging_tensor_hook_new(&f->hook, &o, &f->st), &f->st);
  open_session(f);
  run(f);
  run(f);
  test_clock_advance(&f->te->clock, 2.0);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  assert_int_equal(lines_starting(f->te, "x = "), 2);
  assert_string_equal(line_starting(f->te, "x = ", 1), "x = 3, y:0 = 1.5 (2.000 sec)");
}

/* C130, C16: a close that is not clean runs no end(), so nothing is logged. */
static void test_logging_tensor__no_end_log_after_an_error(void **state) {
  fixture *f = *state;
  hk_logging_tensor_options o = opts_xy(HK_UNSET_STEPS);
  o.at_end = 1;
  assert_ok(hk_logging_tensor_hook_new(&f->hook, &o, &f->st), &f->st);
  open_session(f);
  run(f);
  (void)hk_session_close(f->s, HK_INTERNAL, &f->st);
  assert_int_equal(lines_starting(f->te, "x = "), 0);
}

/* begin() resets the counter and the timer: a hook reused by a second
 * session logs at its first run again, without seconds (C128). */
static void test_logging_tensor__begin_resets_counter_and_timer(void **state) {
  fixture *f = *state;
  hk_logging_tensor_options o = opts_xy(3);
  assert_ok(hk_logging_tensor_hook_new(&f->hook, &o, &f->st), &f->st);
  open_session(f);
  run(f);
  run(f);
  session_close_and_free(f->s);
  f->s = NULL;
  open_session(f);
  run(f);
  assert_int_equal(lines_starting(f->te, "x = "), 1);
  assert_string_equal(line_starting(f->te, "x = ", 0), "x = 3, y:0 = 1.5");
}

/* ---- H28: value text --------------------------------------------------------------- */

static const char *text_of(hk_dtype dtype, int32_t rank, const int64_t *dims, void *data) {
  static char buf[512];
  hk_tensor t;
  hk_status st = HK_STATUS_INIT;
  assert_ok(hk_tensor_init(&t, dtype, rank, dims, data, &st), &st);
  size_t n = hk_logging_tensor_format_value(buf, sizeof buf, &t);
  assert_int_equal(n, strlen(buf));
  return buf;
}

/* H28: booleans print as true or false, integers in decimal, floating point with %g. */
static void test_logging_tensor__scalars_print_as_their_dtype_says(void **state) {
  (void)state;
  uint8_t b1 = 1, b0 = 0;
  int8_t i8 = -5;
  uint64_t u64 = UINT64_MAX;
  int64_t i64 = INT64_MIN;
  float f = 1.5f, fnan = NAN, finf = -HUGE_VALF;
  double d = 1e-7, big = 123456789.0;
  const char *s = "say \"hi\"\\\n";
  assert_string_equal(text_of(HK_DTYPE_BOOL, 0, NULL, &b1), "true");
  assert_string_equal(text_of(HK_DTYPE_BOOL, 0, NULL, &b0), "false");
  assert_string_equal(text_of(HK_DTYPE_I8, 0, NULL, &i8), "-5");
  assert_string_equal(text_of(HK_DTYPE_U64, 0, NULL, &u64), "18446744073709551615");
  assert_string_equal(text_of(HK_DTYPE_I64, 0, NULL, &i64), "-9223372036854775808");
  assert_string_equal(text_of(HK_DTYPE_F32, 0, NULL, &f), "1.5");
  assert_string_equal(text_of(HK_DTYPE_F32, 0, NULL, &fnan), "nan");
  assert_string_equal(text_of(HK_DTYPE_F32, 0, NULL, &finf), "-inf");
  assert_string_equal(text_of(HK_DTYPE_F64, 0, NULL, &d), "1e-07");
  assert_string_equal(text_of(HK_DTYPE_F64, 0, NULL, &big), "1.23457e+08");
  assert_string_equal(text_of(HK_DTYPE_STRING, 0, NULL, (void *)&s), "\"say \\\"hi\\\"\\\\\\x0a\"");
}

/* H28: f16 and bf16 values print with %g like the other floating-point types. */
static void test_logging_tensor__half_and_bfloat16_print_as_floats(void **state) {
  (void)state;
  static const int64_t six[1] = {6};
  uint16_t h[6] = {0x3c00, 0xc000, 0x7e00, 0xfc00, 0x0001, 0x7bff};
  uint16_t b[6] = {0x3fc0, 0xbf80, 0x7fc0, 0x7f80, 0x0000, 0x8000};
  assert_string_equal(text_of(HK_DTYPE_F16, 1, six, h), "[1 -2 nan -inf 5.96046e-08 65504]");
  assert_string_equal(text_of(HK_DTYPE_BF16, 1, six, b), "[1.5 -1 nan inf 0 -0]");
}

/* H28: tensors print as nested brackets, long dimensions showing their first and last three values. */
static void test_logging_tensor__tensors_print_nested_with_long_dimensions_elided(void **state) {
  (void)state;
  int32_t v[40];
  static const int64_t d22[2] = {2, 2}, d10[1] = {10}, d7[1] = {7}, d6[1] = {6}, d0[1] = {0}, d20[2] = {2, 0},
                       d28[2] = {2, 8}, d81[2] = {8, 1}, d3[1] = {3};
  const char *strs[3] = {"a", "", "c"};
  for (int i = 0; i < 40; i++) v[i] = i;
  assert_string_equal(text_of(HK_DTYPE_I32, 2, d22, v), "[[0 1] [2 3]]");
  assert_string_equal(text_of(HK_DTYPE_I32, 1, d10, v), "[0 1 2 ... 7 8 9]");
  assert_string_equal(text_of(HK_DTYPE_I32, 1, d7, v), "[0 1 2 ... 4 5 6]");
  assert_string_equal(text_of(HK_DTYPE_I32, 1, d6, v), "[0 1 2 3 4 5]");
  assert_string_equal(text_of(HK_DTYPE_I32, 1, d0, NULL), "[]");
  assert_string_equal(text_of(HK_DTYPE_I32, 2, d20, NULL), "[[] []]");
  assert_string_equal(text_of(HK_DTYPE_I32, 2, d28, v), "[[0 1 2 ... 5 6 7] [8 9 10 ... 13 14 15]]");
  assert_string_equal(text_of(HK_DTYPE_I32, 2, d81, v), "[[0] [1] [2] ... [5] [6] [7]]");
  assert_string_equal(text_of(HK_DTYPE_STRING, 1, d3, (void *)strs), "[\"a\" \"\" \"c\"]");
}

/* H28: a tensor that does not match its shape prints "<invalid tensor>", and output is cut like snprintf. */
static void test_logging_tensor__invalid_and_truncated_tensors_print_a_marker(void **state) {
  (void)state;
  char buf[8];
  int32_t v[4] = {1000, 2000, 3000, 4000};
  static const int64_t d4[1] = {4};
  hk_tensor t;
  hk_status st = HK_STATUS_INIT;
  assert_int_equal(hk_logging_tensor_format_value(buf, sizeof buf, NULL), strlen("<invalid tensor>"));
  assert_string_equal(buf, "<invali");
  assert_ok(hk_tensor_init(&t, HK_DTYPE_I32, 1, d4, v, &st), &st);
  t.nbytes = 8; /* shorter than the shape needs */
  char big[64];
  hk_logging_tensor_format_value(big, sizeof big, &t);
  assert_string_equal(big, "<invalid tensor>");
  t.nbytes = sizeof v;
  t.data = NULL;
  hk_logging_tensor_format_value(big, sizeof big, &t);
  assert_string_equal(big, "<invalid tensor>");
  t.data = v;
  t.dtype = (hk_dtype)99;
  hk_logging_tensor_format_value(big, sizeof big, &t);
  assert_string_equal(big, "<invalid tensor>");
  t.dtype = HK_DTYPE_I32;
  /* Cut like snprintf: the return is the whole length. */
  assert_int_equal(hk_logging_tensor_format_value(buf, sizeof buf, &t), strlen("[1000 2000 3000 4000]"));
  assert_string_equal(buf, "[1000 2");
  assert_int_equal(hk_logging_tensor_format_value(NULL, 0, &t), strlen("[1000 2000 3000 4000]"));
}

/* A line longer than HK_LOGGING_TENSOR_LINE_MAX is cut, marked, and still
 * carries the seconds; the sink gets it whole (no 1024-byte copy). */
typedef struct long_sink {
  size_t len;
  char tail[64];
} long_sink;

static void long_sink_fn(void *user, hk_log_level level, const char *msg) {
  long_sink *ls = user;
  size_t n = strlen(msg);
  if (level != HK_LOG_INFO || strncmp(msg, "TTTT", 4) != 0) return;
  ls->len = n;
  snprintf(ls->tail, sizeof ls->tail, "%s", msg + (n > 30 ? n - 30 : 0));
}

/* C129: a line over the limit is cut and marked "(truncated)", the seconds kept. */
static void test_logging_tensor__long_line_is_cut_and_marked(void **state) {
  fixture *f = *state;
  static char tag[6000];
  long_sink ls;
  hk_env env = f->te->env;
  hk_tagged_tensor tagged[1] = {{tag, "x"}};
  hk_logging_tensor_options o = HK_LOGGING_TENSOR_OPTIONS_INIT;
  memset(tag, 'T', sizeof tag - 1);
  memset(&ls, 0, sizeof ls);
  env.log = long_sink_fn;
  env.log_user = &ls;
  o.env = &env;
  o.tagged = tagged;
  o.ntagged = 1;
  o.every_n_iter = 1;
  assert_ok(hk_logging_tensor_hook_new(&f->hook, &o, &f->st), &f->st);
  open_session(f);
  run(f);
  assert_true(ls.len > 1024 && ls.len < HK_LOGGING_TENSOR_LINE_MAX);
  assert_string_equal(ls.tail + strlen(ls.tail) - strlen(" (truncated)"), " (truncated)");
  test_clock_advance(&f->te->clock, 0.5);
  run(f);
  assert_true(ls.len < HK_LOGGING_TENSOR_LINE_MAX);
  assert_string_equal(ls.tail + strlen(ls.tail) - strlen("TTT (truncated) (0.500 sec)"), "TTT (truncated) (0.500 sec)");
}

/* ---- the embedded graph executor, H7 ------------------------------------------------- */

/* A run that logs, like one that does not, allocates nothing once the
 * session has seen both fetch lists (H7). */
static void test_logging_tensor__logging_runs_allocate_nothing(void **state) {
  fixture *f = *state;
  hk_graph *g = NULL;
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_handle gs, one_h, train, w;
  int64_t one = 1;
  float wv[3] = {0.5f, -1.0f, 2.0f};
  static const int64_t d3[1] = {3};
  hk_variable_def vd = HK_VARIABLE_DEF_INIT;
  static const char *const names[2] = {"global_step", "w"};
  hk_logging_tensor_options o = HK_LOGGING_TENSOR_OPTIONS_INIT;
  hk_tensor t;
  go.env = &f->te->env;
  assert_ok(hk_graph_new(&g, &go, &f->st), &f->st);
  assert_ok(hk_graph_get_or_create_global_step(g, &gs, &f->st), &f->st);
  t = hk_tensor_scalar_i64(&one);
  assert_ok(hk_graph_constant(g, &one_h, "one", &t, &f->st), &f->st);
  assert_ok(hk_graph_assign_add(g, &train, "train", gs, one_h, &f->st), &f->st);
  vd.name = "w";
  vd.dtype = HK_DTYPE_F32;
  vd.rank = 1;
  vd.dims = d3;
  vd.external_data = wv;
  assert_ok(hk_graph_variable(g, &w, &vd, &f->st), &f->st);
  o.tensors = names;
  o.ntensors = 2;
  o.every_n_iter = 3;
  assert_ok(hk_logging_tensor_hook_new(&f->hook, &o, &f->st), &f->st);
  assert_ok(one_hook_session_new(&f->s, &f->te->env, HK_SESSION_SINGULAR, hk_graph_executor(g), &f->hook, NULL, &f->st),
            &f->st);
  for (int i = 0; i < 4; i++) assert_ok(session_run_train(f->s, train, &f->st), &f->st);
  test_alloc_reset_counts(&f->te->alloc);
  test_log_clear(&f->te->log);
  for (int i = 0; i < 30; i++) assert_ok(session_run_train(f->s, train, &f->st), &f->st);
  assert_int_equal(test_alloc_count(&f->te->alloc), 0);
  assert_int_equal(lines_starting(f->te, "global_step = "), 10);
  /* H29: the fetched GS is the value before the run's increment. */
  assert_string_equal(line_starting(f->te, "global_step = ", 0), "global_step = 6, w = [0.5 -1 2] (0.000 sec)");
  session_close_and_free(f->s);
  f->s = NULL;
  hk_graph_free(g);
}

/* ---- the host loop ---------------------------------------------------------------------- */

typedef struct model {
  float w[2][3];
  float loss;
  uint32_t rng;
} model;

static hk_code rng_save(void *user, void *dst, size_t size, hk_status *st) {
  (void)st;
  memcpy(dst, user, size);
  return HK_OK;
}

static hk_code rng_restore(void *user, const void *src, size_t size, hk_status *st) {
  (void)st;
  memcpy(user, src, size);
  return HK_OK;
}

static void model_step(model *m) {
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++) m->w[i][j] = m->w[i][j] * 0.5f + (float)(i + j);
  m->rng = m->rng * 1664525u + 1013904223u;
  m->loss = m->w[0][0] + m->w[1][2];
}

/* The host loop's registered arrays and states are fetchable by name: the
 * hook logs what the program's step left in them, after the step, and a
 * step that logs allocates nothing (H7). at_end logs them once more. */
static void test_logging_tensor__host_loop_logs_the_programs_arrays(void **state) {
  fixture *f = *state;
  model m = {{{1, 2, 3}, {4, 5, 6}}, 0.0f, 7};
  static const int64_t dw[2] = {2, 3};
  hk_tagged_tensor tagged[4] = {{"w", "w"}, {"loss", "loss:0"}, {"step", "global_step"}, {"rng", "rng"}};
  hk_logging_tensor_options o = HK_LOGGING_TENSOR_OPTIONS_INIT;
  hk_loop_options lo = HK_LOOP_OPTIONS_INIT;
  hk_loop *l = NULL;
  o.tagged = tagged;
  o.ntagged = 4;
  o.every_n_iter = 2;
  o.at_end = 1;
  assert_ok(hk_logging_tensor_hook_new(&f->hook, &o, &f->st), &f->st);
  lo.env = &f->te->env;
  lo.handle_signals = 0;
  lo.hooks = &f->hook;
  lo.nhooks = 1;
  assert_ok(hk_loop_new(&l, &lo, &f->st), &f->st);
  assert_ok(hk_loop_add_array(l, "w", HK_DTYPE_F32, 2, dw, m.w, 0, &f->st), &f->st);
  assert_ok(hk_loop_add_array(l, "loss", HK_DTYPE_F32, 0, NULL, &m.loss, HK_LOOP_NO_CHECKPOINT, &f->st), &f->st);
  assert_ok(hk_loop_add_state(l, "rng", sizeof m.rng, rng_save, rng_restore, &m.rng, 0, &f->st), &f->st);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  test_log_clear(&f->te->log);

  for (int i = 0; i < 24; i++) {
    if (i == 4) test_alloc_reset_counts(&f->te->alloc);
    test_clock_advance(&f->te->clock, 0.125);
    assert_ok(hk_loop_step_begin(l, NULL, &f->st), &f->st);
    model_step(&m);
    assert_ok(hk_loop_step_end(l, &f->st), &f->st);
    if (i % 2 == 0) {
      char want[512], w[128], rng[64];
      hk_tensor tw, tr;
      uint8_t bytes[4];
      memcpy(bytes, &m.rng, 4);
      assert_ok(hk_tensor_init(&tw, HK_DTYPE_F32, 2, dw, m.w, &f->st), &f->st);
      assert_ok(hk_tensor_init(&tr, HK_DTYPE_U8, 1, (const int64_t[]){4}, bytes, &f->st), &f->st);
      hk_logging_tensor_format_value(w, sizeof w, &tw);
      hk_logging_tensor_format_value(rng, sizeof rng, &tr);
      snprintf(want, sizeof want, "loss = %g, rng = %s, step = %d, w = %s%s", (double)m.loss, rng, i + 1, w,
               i == 0 ? "" : " (0.250 sec)");
      assert_string_equal(line_starting(f->te, "loss = ", i / 2), want);
    }
  }
  assert_int_equal(test_alloc_count(&f->te->alloc), 0);
  assert_int_equal(lines_starting(f->te, "loss = "), 12);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  assert_int_equal(lines_starting(f->te, "loss = "), 13);
  assert_true(strstr(line_starting(f->te, "loss = ", 12), "step = 24, ") != NULL);
  hk_loop_free(l);
}

/* ---- OOM ----------------------------------------------------------------------------- */

static void test_logging_tensor__oom_at_creation_is_clean(void **state) {
  fixture *f = *state;
  hk_tagged_tensor tagged[2] = {{"b", "x"}, {"a", "y"}};
  hk_logging_tensor_options o = HK_LOGGING_TENSOR_OPTIONS_INIT;
  hk_code rc = HK_INTERNAL;
  long n, base = test_alloc_live(&f->te->alloc);
  o.env = &f->te->env;
  o.tagged = tagged;
  o.ntagged = 2;
  o.every_n_iter = 1;
  for (n = 0; n < 100; n++) {
    test_alloc_fail_at(&f->te->alloc, n, 0);
    rc = hk_logging_tensor_hook_new(&f->hook, &o, &f->st);
    test_alloc_fail_at(&f->te->alloc, -1, 0);
    if (rc == HK_OK) break;
    assert_status(rc, &f->st, HK_RESOURCE_EXHAUSTED, "out of memory");
    assert_null(f->hook);
    assert_int_equal(test_alloc_live(&f->te->alloc), base);
  }
  assert_int_equal(rc, HK_OK);
  assert_true(n > 5);
  hk_hook_free(f->hook);
  f->hook = NULL;
  assert_int_equal(test_alloc_live(&f->te->alloc), base);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_logging_tensor__bad_options_are_named),
      T(test_logging_tensor__options_init),
      T(test_logging_tensor__an_unknown_tensor_name_is_not_found),
      T(test_logging_tensor__a_bare_name_of_a_multi_output_op_is_ambiguous),
      T(test_logging_tensor__every_n_iter_counts_its_own_runs),
      T(test_logging_tensor__begin_resets_counter_and_timer),
      T(test_logging_tensor__logs_one_line_with_the_seconds_since_the_last),
      T(test_logging_tensor__every_n_secs_logs_when_the_clock_passes_the_interval),
      T(test_logging_tensor__tags_sorted_bytewise),
      T(test_logging_tensor__formatter_replaces_the_line),
      T(test_logging_tensor__long_line_is_cut_and_marked),
      T(test_logging_tensor__at_end_alone_logs_once_at_close),
      T(test_logging_tensor__at_end_with_cadence_reports_seconds),
      T(test_logging_tensor__no_end_log_after_an_error),
      T(test_logging_tensor__scalars_print_as_their_dtype_says),
      T(test_logging_tensor__half_and_bfloat16_print_as_floats),
      T(test_logging_tensor__tensors_print_nested_with_long_dimensions_elided),
      T(test_logging_tensor__invalid_and_truncated_tensors_print_a_marker),
      T(test_logging_tensor__logging_runs_allocate_nothing),
      T(test_logging_tensor__host_loop_logs_the_programs_arrays),
      T(test_logging_tensor__oom_at_creation_is_clean),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
