/*
 * Tests of GlobalStepWaiterHook (contract group J: C88–C91, D1, D12), driven
 * through real sessions over the scripted fake executor. "Another worker"
 * moving the global step is simulated by the fake's run callback, which runs
 * on the training thread at the start of every executor run (each poll of the
 * hook is one); a real thread only ever publishes a value under a mutex or
 * requests a stop. cmocka assertions run on the main thread only.
 */
#include "session_fixture.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

typedef struct fixture {
  test_env *te;
  hk_env real; /* log capture, system clock */
  fake_executor *fx;
  hk_handle gs;
  hk_handle train;
  hk_hook *hook;
  hk_session *s;
  hk_scaffold *scaffold;
  int64_t init_gs; /* assigned by init_fn when have_init_gs */
  int have_init_gs;
  /* run callback script */
  int64_t gs_step; /* added to GS at every executor run */
  int runs_seen;
  int raise_at_run; /* raise SIGTERM at this executor run (1-based); 0: never */
  /* published by a real thread, applied by the run callback */
  pthread_mutex_t mu;
  int64_t published;
  int has_published;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof(*f));
  assert_non_null(f);
  f->te = test_env_new();
  test_env_log_only(f->te, &f->real);
  f->fx = fake_training_executor(f->te, NULL, &f->gs, &f->train);
  pthread_mutex_init(&f->mu, NULL);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  (void)hk_signal_uninstall(NULL); /* in case a signal test failed half-way */
  session_close_and_free(f->s);
  hk_scaffold_free(f->scaffold);
  hk_hook_free(f->hook);
  fake_executor_free(f->fx);
  pthread_mutex_destroy(&f->mu);
  test_env_free(f->te);
  free(f);
  return 0;
}

static hk_code init_fn(void *user, const hk_scaffold *scaffold, hk_raw_session *rs, hk_status *status) {
  fixture *f = user;

  (void)scaffold;
  if (!f->have_init_gs) return HK_OK;
  return raw_session_assign_global_step(rs, f->init_gs, status);
}

static hk_code on_run(void *user, fake_executor *fx, const hk_run_args *args, hk_status *status) {
  fixture *f = user;
  int64_t gs;

  (void)args;
  (void)status;
  f->runs_seen++;
  gs = fake_executor_get_i64(fx, NULL, f->gs);
  if (f->gs_step != 0) fake_executor_set_i64(fx, NULL, f->gs, gs + f->gs_step);
  pthread_mutex_lock(&f->mu);
  if (f->has_published) {
    fake_executor_set_i64(fx, NULL, f->gs, f->published);
    f->has_published = 0;
  }
  pthread_mutex_unlock(&f->mu);
  if (f->raise_at_run != 0 && f->runs_seen == f->raise_at_run) raise(SIGTERM);
  return HK_OK;
}

static void make_hook(fixture *f, int64_t wait_until_step, double poll, double deadline) {
  hk_global_step_waiter_options o = HK_GLOBAL_STEP_WAITER_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  o.wait_until_step = wait_until_step;
  o.poll_interval_secs = poll;
  o.deadline_secs = deadline;
  assert_ok(hk_global_step_waiter_hook_new(&f->hook, &o, &st), &st);
}

/* Open a session with the hook; GS starts at `initial` (via init_fn). The
 * run callback is installed after creation, so it only sees runs of steps. */
static void open_session_env(fixture *f, int64_t initial, const hk_env *env) {
  hk_scaffold_options sco = HK_SCAFFOLD_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;

  f->init_gs = initial;
  f->have_init_gs = 1;
  if (f->scaffold == NULL) {
    sco.env = env;
    sco.init_fn = init_fn;
    sco.init_fn_user = f;
    assert_ok(hk_scaffold_new(&f->scaffold, &sco, &st), &st);
  }
  assert_ok(
      one_hook_session_new(&f->s, env, HK_SESSION_MONITORED, fake_executor_executor(f->fx), &f->hook, f->scaffold, &st),
      &st);
  fake_executor_on_run(f->fx, on_run, f);
  fake_executor_reset_calls(f->fx);
  f->runs_seen = 0;
}

static void open_session(fixture *f, int64_t initial) { open_session_env(f, initial, &f->te->env); }

static hk_code run_train(fixture *f, hk_status *st) { return session_run_train(f->s, f->train, st); }

static const char *const WAITING = "Waiting for global step";

/* ---- D1.1: options ------------------------------------------------------------- */

/* D1.1: a poll interval or deadline that is not finite and positive is INVALID_ARGUMENT naming it. */
static void test_global_step_waiter__bad_options_are_invalid_argument(void **state) {
  hk_global_step_waiter_options o = HK_GLOBAL_STEP_WAITER_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_hook *h = (hk_hook *)1;
  const double bad_poll[] = {0.0, -0.5, NAN, INFINITY};
  const double bad_deadline[] = {-1.0, NAN, INFINITY};
  size_t i;
  (void)state;

  assert_true(o.poll_interval_secs == 0.5); /* the default */
  assert_true(hk_secs_is_unset(o.deadline_secs));
  for (i = 0; i < sizeof(bad_poll) / sizeof(bad_poll[0]); i++) {
    o.poll_interval_secs = bad_poll[i];
    assert_status(hk_global_step_waiter_hook_new(&h, &o, &st), &st, HK_INVALID_ARGUMENT, "poll_interval_secs");
    assert_null(h);
  }
  o.poll_interval_secs = 0.5;
  for (i = 0; i < sizeof(bad_deadline) / sizeof(bad_deadline[0]); i++) {
    o.deadline_secs = bad_deadline[i];
    assert_status(hk_global_step_waiter_hook_new(&h, &o, &st), &st, HK_INVALID_ARGUMENT, "deadline_secs");
  }
  o.deadline_secs = HK_UNSET_SECS;
  o.version = 7;
  assert_status(hk_global_step_waiter_hook_new(&h, &o, &st), &st, HK_INVALID_ARGUMENT, "version");
  o.version = HK_GLOBAL_STEP_WAITER_OPTIONS_VERSION;
  assert_status(hk_global_step_waiter_hook_new(NULL, &o, &st), &st, HK_INVALID_ARGUMENT, "out");

  o.deadline_secs = 0.0; /* given and valid */
  assert_ok(hk_global_step_waiter_hook_new(&h, &o, &st), &st);
  assert_string_equal(hk_hook_name(h), "GlobalStepWaiterHook");
  hk_hook_free(h);
  assert_ok(hk_global_step_waiter_hook_new(&h, NULL, &st), &st); /* NULL: defaults */
  hk_hook_free(h);
}

/* ---- C88, C89 -------------------------------------------------------------------- */

/* C88: begin() without a global step is FAILED_PRECONDITION. */
static void test_global_step_waiter__begin_without_a_global_step_fails(void **state) {
  fixture *f = *state;
  fake_executor *bare = fake_executor_new(&f->te->env);
  hk_status st = HK_STATUS_INIT;
  hk_session *s = NULL;

  make_hook(f, 0, 0.5, HK_UNSET_SECS); /* begin() needs a GS even when it will never wait */
  assert_status(
      one_hook_session_new(&s, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(bare), &f->hook, NULL, &st),
      &st, HK_FAILED_PRECONDITION, "Global step should be created to use GlobalStepWaiterHook.");
  assert_null(s);
  fake_executor_free(bare);
}

/* C89: a wait_until_step of 0 or less marks the hook started without waiting. */
static void test_global_step_waiter__non_positive_step_never_waits(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;

  make_hook(f, 0, 0.5, HK_UNSET_SECS);
  open_session(f, 0);
  assert_ok(run_train(f, &st), &st);
  assert_ok(run_train(f, &st), &st);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 2); /* no GS read */
  assert_int_equal(test_log_count(&f->te->log, -1, WAITING), 0);
  assert_int_equal(test_clock_nsleeps(&f->te->clock), 0);
}

/* C89, C90: a global step already reached starts the hook at once; later runs do not wait. */
static void test_global_step_waiter__a_step_already_reached_starts_at_once(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;

  make_hook(f, 5, 0.5, HK_UNSET_SECS);
  open_session(f, 5);
  assert_ok(run_train(f, &st), &st);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 2); /* one read, then the step */
  assert_logged(f->te, HK_LOG_INFO, "Waiting for global step 5 before starting training.");
  assert_int_equal(test_clock_nsleeps(&f->te->clock), 0);
  assert_ok(run_train(f, &st), &st);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 3); /* started: no more reads */
  assert_int_equal(test_log_count(&f->te->log, -1, WAITING), 1);
}

/* ---- D1.2: the wait loop ------------------------------------------------------------ */

/* D1.2: (b), (e): polls every poll_interval_secs on the env's clock until GS is reached. */
static void test_global_step_waiter__polls_on_the_env_clock_until_the_step_is_reached(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;

  make_hook(f, 3, 0.5, HK_UNSET_SECS);
  open_session(f, 0);
  f->gs_step = 1; /* another worker advances GS by one per poll: reads 1, 2, 3 */
  assert_ok(run_train(f, &st), &st);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 4);
  assert_true(fabs(test_clock_total_slept(&f->te->clock) - 1.0) < 1e-9);
  assert_int_equal(fake_executor_op_runs(f->fx, f->train), 1);
  /* H92: the end of the wait is logged once, on the env's clock. */
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO,
                                  "Global step 3 reached (current step 3) after waiting 1 secs; starting training."),
                   1);
}

typedef struct publisher {
  fixture *f;
  int64_t value;
} publisher;

static void *publisher_main(void *arg) {
  publisher *p = arg;
  test_sleep_real_ms(20);
  pthread_mutex_lock(&p->f->mu);
  p->f->published = p->value;
  p->f->has_published = 1;
  pthread_mutex_unlock(&p->f->mu);
  return NULL;
}

/* D1.2: (b): GS reached because another thread moved it while the hook waited. */
static void test_global_step_waiter__a_step_reached_by_another_thread_ends_the_wait(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  publisher p;
  pthread_t tid;

  make_hook(f, 50, 0.01, HK_UNSET_SECS);
  open_session_env(f, 0, &f->real);
  p.f = f;
  p.value = 50;
  assert_int_equal(pthread_create(&tid, NULL, publisher_main, &p), 0);
  assert_ok(run_train(f, &st), &st);
  pthread_join(tid, NULL);
  assert_true(f->runs_seen >= 2);
  assert_int_equal(fake_executor_op_runs(f->fx, f->train), 1);
  assert_int_equal(fake_executor_get_i64(f->fx, NULL, f->gs), 51);
}

static void *stop_requester_main(void *arg) {
  test_sleep_real_ms(20);
  hk_coordinator_request_stop(arg, HK_OK, NULL);
  return NULL;
}

/* D1.2: (a), (e), D1.3: a stop requested from another thread ends the wait with CANCELLED. */
static void test_global_step_waiter__stop_from_other_thread_cancels(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  pthread_t tid;

  make_hook(f, 100, 60.0, HK_UNSET_SECS); /* a long poll: only the stop can end it */
  open_session_env(f, 0, &f->real);
  assert_int_equal(pthread_create(&tid, NULL, stop_requester_main, hk_session_coordinator(f->s)), 0);
  assert_status(run_train(f, &st), &st, HK_CANCELLED, "Stopped waiting for global step 100: stop requested.");
  pthread_join(tid, NULL);
  assert_int_equal(fake_executor_op_runs(f->fx, f->train), 0); /* C14: the step did not run */
  /* H15: CANCELLED after a clean stop is a clean close. */
  assert_ok(hk_session_close(f->s, HK_CANCELLED, &st), &st);
}

/* D1.2: (a) comes before (b): a pending stop wins even over a reached step, without reading GS. */
static void test_global_step_waiter__stop_checked_before_reading(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;

  make_hook(f, 5, 0.5, HK_UNSET_SECS);
  open_session(f, 5);
  hk_coordinator_request_stop(hk_session_coordinator(f->s), HK_INTERNAL, "worker failed");
  assert_status(run_train(f, &st), &st, HK_CANCELLED, "Stopped waiting for global step 5: stop requested.");
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 0);
}

/* D1.2: (b): an error reading GS is returned. */
static void test_global_step_waiter__an_error_reading_the_step_is_returned(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;

  make_hook(f, 5, 0.5, HK_UNSET_SECS);
  open_session(f, 0);
  fake_executor_fail(f->fx, FAKE_RUN, 1, 1, HK_INTERNAL, "read exploded");
  assert_status(run_train(f, &st), &st, HK_INTERNAL, "read exploded");
  assert_int_equal(fake_executor_op_runs(f->fx, f->train), 0);
}

/* D1.2: (c): the deadline, with the last poll shortened to the time left. */
static void test_global_step_waiter__the_deadline_shortens_the_last_poll_and_fails_the_wait(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;

  make_hook(f, 100, 0.5, 0.75);
  open_session(f, 0);
  assert_status(run_train(f, &st), &st, HK_DEADLINE_EXCEEDED,
                "Global step 100 not reached within 0.75 secs (current step 0).");
  assert_true(fabs(test_clock_total_slept(&f->te->clock) - 0.75) < 1e-9);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 3); /* reads at 0, 0.5, 0.75 */
  assert_int_equal(fake_executor_op_runs(f->fx, f->train), 0);
}

/* D1.2: (b) before (c): deadline 0 still reads GS once. */
static void test_global_step_waiter__a_zero_deadline_still_reads_the_step_once(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;

  make_hook(f, 3, 0.5, 0.0);
  open_session(f, 2);
  assert_status(run_train(f, &st), &st, HK_DEADLINE_EXCEEDED,
                "Global step 3 not reached within 0 secs (current step 2).");
  assert_int_equal(test_clock_nsleeps(&f->te->clock), 0);
  fake_executor_set_i64(f->fx, NULL, f->gs, 3);
  assert_ok(run_train(f, &st), &st);
}

/* C91: a wait that ended without the step is repeated by the next run. */
static void test_global_step_waiter__the_next_run_repeats_a_wait_that_failed(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;

  make_hook(f, 100, 0.5, 1.0);
  open_session(f, 0);
  assert_status(run_train(f, &st), &st, HK_DEADLINE_EXCEEDED, "Global step 100 not reached within 1 secs");
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "Waiting for global step 100 before starting training."),
                   1);
  fake_executor_set_i64(f->fx, NULL, f->gs, 100);
  fake_executor_reset_calls(f->fx);
  assert_ok(run_train(f, &st), &st);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 2);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "Waiting for global step 100 before starting training."),
                   2);
  fake_executor_reset_calls(f->fx);
  assert_ok(run_train(f, &st), &st);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 1);
}

/* C90, (d): progress whenever GS moved more than 1000 since the last progress line. */
static void test_global_step_waiter__logs_progress_when_the_step_moved_over_1000(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;

  make_hook(f, 3000, 0.5, HK_UNSET_SECS);
  open_session(f, 0);
  f->gs_step = 600; /* reads 600, 1200, 1800, 2400, 3000 */
  assert_ok(run_train(f, &st), &st);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "Current step is"), 2);
  assert_logged(f->te, HK_LOG_INFO, "Waiting for global step 3000 before starting training. Current step is 1200.");
  assert_logged(f->te, HK_LOG_INFO, "Waiting for global step 3000 before starting training. Current step is 2400.");
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "Waiting for global step 3000 before starting training."),
                   3);
}

/* Another worker's GS as the hook's polls see it: 5000, then INT64_MIN (a
 * worker that was reset to a bogus value), then the target. */
static hk_code gs_script(void *user, fake_executor *fx, const hk_run_args *args, hk_status *status) {
  fixture *f = user;
  static const int64_t script[3] = {5000, INT64_MIN, 10000};

  (void)args;
  (void)status;
  if (f->runs_seen < 3) fake_executor_set_i64(fx, NULL, f->gs, script[f->runs_seen]);
  f->runs_seen++;
  return HK_OK;
}

/*
 * C90: the progress line is logged "whenever GS - last logged > 1000". After
 * it logged at 5000, a GS of INT64_MIN is far below, so no line names it:
 * the difference is computed without signed overflow (in int64_t it would
 * be undefined, UBSan: signed-integer-overflow, and wrap to a huge positive
 * difference that logs "Current step is -9223372036854775808").
 */
static void test_global_step_waiter__progress_log_difference_does_not_overflow(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;

  make_hook(f, 10000, 0.5, HK_UNSET_SECS);
  open_session(f, 0);
  fake_executor_on_run(f->fx, gs_script, f);
  assert_ok(run_train(f, &st), &st);
  assert_true(f->runs_seen >= 3);
  assert_true(test_log_has(&f->te->log, HK_LOG_INFO, "Current step is 5000."));
  assert_false(test_log_has(&f->te->log, HK_LOG_INFO, "Current step is -9223372036854775808."));
}

/* D12: the signal helper ends the wait with CANCELLED, and close(CANCELLED) is then clean. */
static void test_global_step_waiter__a_signal_cancels_the_wait(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;

  make_hook(f, 100, 0.5, HK_UNSET_SECS);
  open_session(f, 0);
  assert_ok(hk_signal_install(&st), &st);
  f->raise_at_run = 3;
  assert_status(run_train(f, &st), &st, HK_CANCELLED, "Stopped waiting for global step 100: stop requested.");
  assert_int_equal(f->runs_seen, 3);
  assert_int_equal(fake_executor_op_runs(f->fx, f->train), 0);
  assert_ok(hk_session_close(f->s, HK_CANCELLED, &st), &st);
  assert_ok(hk_signal_uninstall(&st), &st);
}

/* C88, H11: begin() clears the started flag, so a reused hook waits again. */
static void test_global_step_waiter__a_reused_hook_waits_again(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;

  make_hook(f, 1, 0.5, HK_UNSET_SECS);
  open_session(f, 1);
  assert_ok(run_train(f, &st), &st);
  assert_ok(hk_session_close(f->s, HK_OK, &st), &st);
  hk_session_free(f->s);
  f->s = NULL;
  open_session(f, 1);
  assert_ok(run_train(f, &st), &st);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 2);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "Waiting for global step 1 before starting training."), 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_global_step_waiter__bad_options_are_invalid_argument),
      cmocka_unit_test_setup_teardown(test_global_step_waiter__begin_without_a_global_step_fails, setup, teardown),
      cmocka_unit_test_setup_teardown(test_global_step_waiter__non_positive_step_never_waits, setup, teardown),
      cmocka_unit_test_setup_teardown(test_global_step_waiter__a_step_already_reached_starts_at_once, setup, teardown),
      cmocka_unit_test_setup_teardown(test_global_step_waiter__polls_on_the_env_clock_until_the_step_is_reached, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_global_step_waiter__a_step_reached_by_another_thread_ends_the_wait, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_global_step_waiter__stop_from_other_thread_cancels, setup, teardown),
      cmocka_unit_test_setup_teardown(test_global_step_waiter__stop_checked_before_reading, setup, teardown),
      cmocka_unit_test_setup_teardown(test_global_step_waiter__an_error_reading_the_step_is_returned, setup, teardown),
      cmocka_unit_test_setup_teardown(test_global_step_waiter__the_deadline_shortens_the_last_poll_and_fails_the_wait,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_global_step_waiter__a_zero_deadline_still_reads_the_step_once, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_global_step_waiter__the_next_run_repeats_a_wait_that_failed, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_global_step_waiter__logs_progress_when_the_step_moved_over_1000, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_global_step_waiter__progress_log_difference_does_not_overflow, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_global_step_waiter__a_signal_cancels_the_wait, setup, teardown),
      cmocka_unit_test_setup_teardown(test_global_step_waiter__a_reused_hook_waits_again, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
