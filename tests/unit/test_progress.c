/*
 * Tests of ProgressHook (hooked/hooks.h): options, the terminal redraw
 * protocol ("\r", text, "\033[K"; one "\n" at the end) and the plain lines,
 * their exact contents under the mock clock (step / last step, percentage,
 * smoothed steps per second, ETA, loss), the host loop's registered loss and
 * a scripted executor's loss tensor, the exact post-run step where a fetched
 * global step would be stale, counting runs without a global step, a NULL
 * stream, errors naming the loss tensor, the log sink that erases the line,
 * no allocation per step, and out-of-memory at creation.
 *
 * The stream is a tmpfile(), read back after the run.
 */
#include "session_fixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OUT_MAX 16384

typedef struct fixture {
  test_env *te;
  FILE *stream;
  hk_hook *hook;
  hk_loop *loop;
  float loss;        /* the host loop's registered loss */
  float vec[3];      /* a registered array that is not a scalar */
  double step_secs;  /* mock time one step takes */
  char out[OUT_MAX]; /* what the hook wrote */
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof(*f));
  assert_non_null(f);
  f->te = test_env_new();
  f->stream = tmpfile();
  assert_non_null(f->stream);
  f->step_secs = 0.25;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  hk_loop_free(f->loop);
  hk_hook_free(f->hook);
  fclose(f->stream);
  return fixture_release(f, NULL, f->te);
}

/* Everything the hook wrote so far, NUL-terminated, in f->out. */
static const char *written(fixture *f) {
  size_t n;
  fflush(f->stream);
  rewind(f->stream);
  n = fread(f->out, 1, sizeof(f->out) - 1, f->stream);
  f->out[n] = '\0';
  fseek(f->stream, 0, SEEK_END);
  return f->out;
}

static void make_hook(fixture *f, hk_progress_mode mode, int64_t last_step, const char *loss, double every) {
  hk_progress_options o = HK_PROGRESS_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  o.stream = f->stream;
  o.mode = mode;
  o.last_step = last_step;
  o.loss = loss;
  o.every_n_secs = every;
  assert_ok(hk_progress_hook_new(&f->hook, &o, &st), &st);
}

/* A host loop on the mock env stopping at last_step, with "loss" (f32
 * scalar) and "vec" (f32 [3]) registered, the progress hook its only hook. */
static hk_code make_loop(fixture *f, int64_t last_step, hk_status *st) {
  hk_loop_options o = HK_LOOP_OPTIONS_INIT;
  hk_code rc;
  o.env = &f->te->env;
  o.last_step = last_step;
  o.hooks = &f->hook;
  o.nhooks = 1;
  o.handle_signals = 0;
  rc = hk_loop_new(&f->loop, &o, st);
  if (rc != HK_OK) return rc;
  rc = hk_loop_add_array(f->loop, "loss", HK_DTYPE_F32, 0, NULL, &f->loss, HK_LOOP_NO_CHECKPOINT, st);
  if (rc != HK_OK) return rc;
  return hk_loop_add_array(f->loop, "vec", HK_DTYPE_F32, 1, (int64_t[]){3}, f->vec, HK_LOOP_NO_CHECKPOINT, st);
}

/* The program's step from `step` to step + 1: its loss is 1 / (step + 1),
 * and it takes f->step_secs. */
static hk_code train_step(void *user, int64_t step, hk_status *status) {
  fixture *f = user;
  (void)status;
  f->loss = 1.0f / (float)(step + 1);
  test_clock_advance(&f->te->clock, f->step_secs);
  return HK_OK;
}

static void run_loop(fixture *f) {
  hk_status st = HK_STATUS_INIT;
  assert_ok(hk_loop_start(f->loop, NULL, &st), &st);
  assert_ok(hk_loop_run(f->loop, train_step, f, &st), &st);
  assert_ok(hk_loop_finish(f->loop, &st), &st);
}

static int count(const char *s, const char *what) {
  int n = 0;
  for (const char *p = strstr(s, what); p != NULL; p = strstr(p + strlen(what), what)) n++;
  return n;
}

/* ---- options ------------------------------------------------------------------ */

static void test_progress__options_are_validated(void **state) {
  fixture *f = *state;
  hk_progress_options o;
  hk_status st = HK_STATUS_INIT;
  hk_hook *h = (hk_hook *)1;
  hk_env bad_env = HK_ENV_INIT;

  assert_int_equal(hk_progress_options_init(NULL, HK_PROGRESS_OPTIONS_VERSION), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_progress_options_init(&o, 99), HK_INVALID_ARGUMENT);
  assert_ok(hk_progress_options_init(&o, HK_PROGRESS_OPTIONS_VERSION), NULL);
  assert_ptr_equal(o.stream, stderr);
  assert_int_equal(o.last_step, HK_UNSET_STEPS);
  assert_true(hk_secs_is_unset(o.every_n_secs));
  assert_int_equal(o.mode, HK_PROGRESS_AUTO);
  assert_null(o.loss);

  assert_status(hk_progress_hook_new(NULL, &o, &st), &st, HK_INVALID_ARGUMENT, "out");
  o.version = 0;
  assert_status(hk_progress_hook_new(&h, &o, &st), &st, HK_INVALID_ARGUMENT, "opts->version");
  assert_null(h);
  o.version = HK_PROGRESS_OPTIONS_VERSION;
  o.last_step = -1;
  assert_status(hk_progress_hook_new(&h, &o, &st), &st, HK_INVALID_ARGUMENT, "last_step must be >= 0");
  o.last_step = 0; /* "given", whatever the value */
  o.every_n_secs = -0.5;
  assert_status(hk_progress_hook_new(&h, &o, &st), &st, HK_INVALID_ARGUMENT, "every_n_secs");
  o.every_n_secs = NAN;
  assert_status(hk_progress_hook_new(&h, &o, &st), &st, HK_INVALID_ARGUMENT, "every_n_secs");
  o.every_n_secs = HUGE_VAL;
  assert_status(hk_progress_hook_new(&h, &o, &st), &st, HK_INVALID_ARGUMENT, "every_n_secs");
  o.every_n_secs = 0;
  o.mode = (hk_progress_mode)7;
  assert_status(hk_progress_hook_new(&h, &o, &st), &st, HK_INVALID_ARGUMENT, "mode 7");
  o.mode = HK_PROGRESS_PLAIN;
  bad_env.version = 0;
  o.env = &bad_env;
  assert_status(hk_progress_hook_new(&h, &o, &st), &st, HK_INVALID_ARGUMENT, "opts->env");
  assert_null(h);

  /* NULL options: every default; the name says what it is. */
  assert_ok(hk_progress_hook_new(&f->hook, NULL, &st), &st);
  assert_string_equal(hk_hook_name(f->hook), "ProgressHook");
}

/* ---- terminal mode -------------------------------------------------------------- */

static void test_progress__terminal_redraws_one_line_in_place(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  const char *out, *p;

  make_hook(f, HK_PROGRESS_TERMINAL, 20, "loss", 1.0);
  assert_ok(make_loop(f, 20, &st), &st);
  run_loop(f);
  out = written(f);

  /* Redraws at steps 1, 5, 9, 13, 17 (every 1 s of 0.25 s steps), then the
   * final line: each "\r", the text, "\033[K"; one "\n", at the very end. */
  assert_int_equal(count(out, "\r"), 6);
  assert_int_equal(count(out, "\033[K"), 6);
  assert_int_equal(count(out, "\n"), 1);
  assert_int_equal(out[0], '\r');
  assert_int_equal(out[strlen(out) - 1], '\n');
  for (p = strchr(out, '\r'); p != NULL; p = strchr(p + 1, '\r')) {
    const char *next = strchr(p + 1, '\r');
    const char *erase = strstr(p, "\033[K");
    assert_non_null(erase);
    assert_true(next == NULL || erase < next); /* every redraw erases the rest of the old line */
  }
  assert_non_null(strstr(out, "\rstep 1/20 (5.0%)  4.00 steps/s  ETA 0:05  loss 1\033[K"));
  assert_non_null(strstr(out, "\rstep 5/20 (25.0%)  4.00 steps/s  ETA 0:04  loss 0.2\033[K"));
  assert_non_null(strstr(out, "\rstep 17/20 (85.0%)  4.00 steps/s  ETA 0:01  loss 0.05882\033[K"));
  assert_non_null(strstr(out, "\rstep 20/20 (100.0%)  done in 0:05  4.00 steps/s avg  loss 0.05\033[K\n"));
}

/* ---- plain mode ---------------------------------------------------------------------- */

static void test_progress__plain_lines_when_not_a_terminal(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;

  /* AUTO on a file is PLAIN, and PLAIN redraws every 10 s by default. */
  make_hook(f, HK_PROGRESS_AUTO, 20, "loss", HK_UNSET_SECS);
  f->step_secs = 1.0;
  assert_ok(make_loop(f, 20, &st), &st);
  run_loop(f);
  assert_string_equal(written(f),
                      "step 1/20 (5.0%)  1.00 steps/s  ETA 0:19  loss 1\n"
                      "step 11/20 (55.0%)  1.00 steps/s  ETA 0:09  loss 0.09091\n"
                      "step 20/20 (100.0%)  done in 0:20  1.00 steps/s avg  loss 0.05\n");
}

static void test_progress__rate_is_smoothed_and_eta_follows_it(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  const char *out, *third;
  double rate;

  make_hook(f, HK_PROGRESS_PLAIN, 100, NULL, 5.0);
  assert_ok(make_loop(f, 100, &st), &st);
  assert_ok(hk_loop_start(f->loop, NULL, &st), &st);
  /* 8 steps/s for 60 steps (7.5 s), then 1 step/s. */
  for (int i = 0; i < 70; i++) {
    f->step_secs = i < 60 ? 0.125 : 1.0;
    assert_ok(hk_loop_step(f->loop, train_step, f, &st), &st);
  }
  out = written(f);
  /* Draws at 0.125 s (step 1), 5.125 s (step 41) and 10.5 s (step 63). */
  assert_non_null(strstr(out, "step 1/100 (1.0%)  8.00 steps/s  ETA 0:12\n"));
  assert_non_null(strstr(out, "step 41/100 (41.0%)  8.00 steps/s  ETA 0:07\n"));
  /* Since the last draw: 22 steps in 5.375 s, 4.09/s; smoothed with weight
   * 1 - exp(-5.375 / 5) = 0.66 on it: 5.43, between the two rates. */
  third = strstr(out, "step 63/100 (63.0%)  ");
  assert_non_null(third);
  assert_int_equal(sscanf(third, "step 63/100 (63.0%%)  %lf steps/s", &rate), 1);
  assert_true(rate > 5.38 && rate < 5.48);
  assert_non_null(strstr(third, "5.43 steps/s  ETA 0:07\n")); /* 37 / 5.43 = 6.8 s */
  assert_ok(hk_loop_finish(f->loop, &st), &st);
}

static void test_progress__unknown_last_step_shows_no_total_nor_eta(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  const char *out;

  make_hook(f, HK_PROGRESS_PLAIN, HK_UNSET_STEPS, "loss", 0.0); /* 0: every run */
  assert_ok(make_loop(f, 3, &st), &st);
  run_loop(f);
  out = written(f);
  assert_string_equal(out,
                      "step 1  4.00 steps/s  loss 1\n"
                      "step 2  4.00 steps/s  loss 0.5\n"
                      "step 3  4.00 steps/s  loss 0.3333\n"
                      "step 3  done in 0:01  4.00 steps/s avg  loss 0.3333\n");
}

static void test_progress__slow_steps_show_seconds_per_step(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;

  make_hook(f, HK_PROGRESS_PLAIN, 2, NULL, 0.0);
  f->step_secs = 4.0;
  assert_ok(make_loop(f, 2, &st), &st);
  run_loop(f);
  assert_string_equal(written(f),
                      "step 1/2 (50.0%)  4.00 s/step  ETA 0:04\n"
                      "step 2/2 (100.0%)  4.00 s/step  ETA 0:00\n"
                      "step 2/2 (100.0%)  done in 0:08  4.00 s/step avg\n");
}

/* ---- the stream ---------------------------------------------------------------------- */

static void test_progress__null_stream_writes_nothing(void **state) {
  fixture *f = *state;
  hk_progress_options o = HK_PROGRESS_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;

  o.stream = NULL;
  o.loss = "loss";
  o.mode = HK_PROGRESS_TERMINAL;
  assert_ok(hk_progress_hook_new(&f->hook, &o, &st), &st);
  assert_ok(make_loop(f, 5, &st), &st);
  run_loop(f);
  assert_int_equal(hk_loop_global_step(f->loop), 5);
  assert_string_equal(written(f), ""); /* f->stream was not given to it: nothing anywhere */
}

/* ---- the loss -------------------------------------------------------------------------- */

static void test_progress__unknown_loss_fails_begin_naming_it(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;

  make_hook(f, HK_PROGRESS_PLAIN, 5, "no_such_loss", 1.0);
  assert_ok(make_loop(f, 5, &st), &st);
  assert_status(hk_loop_start(f->loop, NULL, &st), &st, HK_NOT_FOUND, "ProgressHook: loss tensor 'no_such_loss'");
  assert_string_equal(written(f), "");
}

static void test_progress__loss_that_is_not_a_scalar_fails_the_run(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;

  make_hook(f, HK_PROGRESS_PLAIN, 5, "vec", 1.0);
  assert_ok(make_loop(f, 5, &st), &st);
  assert_ok(hk_loop_start(f->loop, NULL, &st), &st);
  assert_status(hk_loop_step(f->loop, train_step, f, &st), &st, HK_INVALID_ARGUMENT,
                "ProgressHook: loss tensor 'vec' is not a scalar: 3 elements");
}

/* Each run of the train op takes 0.5 s of mock time; reads of the global
 * step (runs without targets) take none. */
static hk_code slow_train(void *user, fake_executor *fx, const hk_run_args *args, hk_status *status) {
  fixture *f = user;
  (void)fx;
  (void)status;
  if (args != NULL && args->ntargets > 0) test_clock_advance(&f->te->clock, 0.5);
  return HK_OK;
}

/* A scripted executor whose fetches read variables before the train op runs
 * (a fetched global step is stale, H29): the hook's step is the one after
 * the run all the same, and the loss is a plain f64 tensor of the graph. */
static void test_progress__step_is_exact_and_loss_fetched_from_an_executor(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_handle gs, train, loss;
  fake_executor *fx = fake_training_executor(f->te, NULL, &gs, &train);
  hk_session *s = NULL;

  loss = fake_executor_add_tensor(fx, "loss", HK_DTYPE_F64, 0, NULL);
  fake_executor_on_run(fx, slow_train, f);
  make_hook(f, HK_PROGRESS_PLAIN, 3, "loss:0", 0.0);
  assert_ok(one_hook_session_new(&s, &f->te->env, HK_SESSION_SINGULAR, fake_executor_executor(fx), &f->hook, NULL, &st),
            &st);
  for (int i = 0; i < 3; i++) {
    double v = 2.0 - i;
    fake_executor_set_value(fx, loss, &v);
    assert_ok(session_run_train(s, train, &st), &st);
  }
  assert_ok(hk_session_close(s, HK_OK, &st), &st);
  hk_session_free(s);
  fake_executor_free(fx);
  assert_string_equal(written(f),
                      "step 1/3 (33.3%)  2.00 steps/s  ETA 0:01  loss 2\n"
                      "step 2/3 (66.7%)  2.00 steps/s  ETA 0:01  loss 1\n"
                      "step 3/3 (100.0%)  2.00 steps/s  ETA 0:00  loss 0\n"
                      "step 3/3 (100.0%)  done in 0:02  2.00 steps/s avg  loss 0\n");
}

/* Without a global step the hook counts its runs. */
static void test_progress__counts_runs_without_a_global_step(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  fake_executor *fx = fake_executor_new(&f->te->env);
  hk_handle op = fake_executor_add_op(fx, "work");
  hk_session *s = NULL;

  make_hook(f, HK_PROGRESS_PLAIN, 4, NULL, 0.0);
  assert_ok(one_hook_session_new(&s, &f->te->env, HK_SESSION_SINGULAR, fake_executor_executor(fx), &f->hook, NULL, &st),
            &st);
  fake_executor_on_run(fx, slow_train, f);
  for (int i = 0; i < 2; i++) assert_ok(session_run_train(s, op, &st), &st);
  assert_ok(hk_session_close(s, HK_OK, &st), &st);
  hk_session_free(s);
  fake_executor_free(fx);
  assert_non_null(strstr(written(f), "step 1/4 (25.0%)"));
  assert_non_null(strstr(written(f), "step 2/4 (50.0%)"));
  assert_non_null(strstr(written(f), "step 2/4 (50.0%)  done in"));
}

/* ---- the log sink ------------------------------------------------------------------------ */

static void test_progress__log_sink_erases_the_line_first(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  const char *out;
  size_t before;

  make_hook(f, HK_PROGRESS_TERMINAL, 10, NULL, 100.0);
  assert_ok(make_loop(f, 10, &st), &st);
  assert_ok(hk_loop_start(f->loop, NULL, &st), &st);
  assert_ok(hk_loop_step(f->loop, train_step, f, &st), &st);
  before = strlen(written(f));
  assert_true(before > 0);
  hk_progress_hook_log(f->hook, HK_LOG_INFO, "hk_progress_hook_log test message (expected on stderr)");
  out = written(f);
  assert_string_equal(out + before, "\r\033[K");
  /* No line is drawn now: a second message erases nothing. */
  hk_progress_hook_log(f->hook, HK_LOG_INFO, "hk_progress_hook_log second message (expected on stderr)");
  assert_int_equal(strlen(written(f)), before + 4);
  /* NULL, or a hook of another kind, only forwards. */
  hk_progress_hook_log(NULL, HK_LOG_INFO, "hk_progress_hook_log without a hook (expected on stderr)");
  assert_ok(hk_loop_finish(f->loop, &st), &st);
  out = written(f);
  assert_int_equal(out[strlen(out) - 1], '\n');
}

/* ---- allocation ------------------------------------------------------------------------- */

static void test_progress__steps_do_not_allocate(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;

  make_hook(f, HK_PROGRESS_TERMINAL, 1000, "loss", 0.0); /* a redraw at every step */
  assert_ok(make_loop(f, 1000, &st), &st);
  assert_ok(hk_loop_start(f->loop, NULL, &st), &st);
  for (int i = 0; i < 5; i++) assert_ok(hk_loop_step(f->loop, train_step, f, &st), &st);
  test_alloc_reset_counts(&f->te->alloc);
  for (int i = 0; i < 50; i++) assert_ok(hk_loop_step(f->loop, train_step, f, &st), &st);
  assert_int_equal(test_alloc_count(&f->te->alloc), 0);
  assert_int_equal(count(written(f), "\r"), 55);
  assert_ok(hk_loop_finish(f->loop, &st), &st);
}

static void test_progress__out_of_memory_at_creation_leaks_nothing(void **state) {
  fixture *f = *state;
  hk_progress_options o = HK_PROGRESS_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_code rc = HK_RESOURCE_EXHAUSTED;

  o.env = &f->te->env;
  o.loss = "loss";
  for (long n = 0; rc == HK_RESOURCE_EXHAUSTED; n++) {
    hk_hook *h = (hk_hook *)1;
    test_alloc_fail_at(&f->te->alloc, n, 0);
    rc = hk_progress_hook_new(&h, &o, &st);
    if (rc == HK_RESOURCE_EXHAUSTED) {
      assert_null(h);
      assert_int_equal(test_alloc_live(&f->te->alloc), 0);
    } else {
      assert_ok(rc, &st);
      hk_hook_free(h);
    }
    assert_true(n < 10);
  }
  test_alloc_fail_at(&f->te->alloc, -1, 0);
  assert_int_equal(test_alloc_live(&f->te->alloc), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_progress__options_are_validated, setup, teardown),
      cmocka_unit_test_setup_teardown(test_progress__terminal_redraws_one_line_in_place, setup, teardown),
      cmocka_unit_test_setup_teardown(test_progress__plain_lines_when_not_a_terminal, setup, teardown),
      cmocka_unit_test_setup_teardown(test_progress__rate_is_smoothed_and_eta_follows_it, setup, teardown),
      cmocka_unit_test_setup_teardown(test_progress__unknown_last_step_shows_no_total_nor_eta, setup, teardown),
      cmocka_unit_test_setup_teardown(test_progress__slow_steps_show_seconds_per_step, setup, teardown),
      cmocka_unit_test_setup_teardown(test_progress__null_stream_writes_nothing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_progress__unknown_loss_fails_begin_naming_it, setup, teardown),
      cmocka_unit_test_setup_teardown(test_progress__loss_that_is_not_a_scalar_fails_the_run, setup, teardown),
      cmocka_unit_test_setup_teardown(test_progress__step_is_exact_and_loss_fetched_from_an_executor, setup, teardown),
      cmocka_unit_test_setup_teardown(test_progress__counts_runs_without_a_global_step, setup, teardown),
      cmocka_unit_test_setup_teardown(test_progress__log_sink_erases_the_line_first, setup, teardown),
      cmocka_unit_test_setup_teardown(test_progress__steps_do_not_allocate, setup, teardown),
      cmocka_unit_test_setup_teardown(test_progress__out_of_memory_at_creation_leaks_nothing, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
