/*
 * Recovery of monitored sessions: C38–C41, C45, D2 (bounded back-off), H18
 * (failed state), H21 (custom creators), and the singular session's refusal
 * to recover (C24). Delays are measured on the mock clock.
 */
#include "session_fixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef session_fixture fixture;

static int setup_kind(void **state, hk_session_kind kind) {
  fixture *f = session_fixture_new(kind, 2);
  session_fixture_fail_train(f);
  spy_hook_fetch(f->a, f->gs);
  *state = f;
  return 0;
}

static int setup_ms(void **state) { return setup_kind(state, HK_SESSION_MONITORED); }
static int setup_sms(void **state) { return setup_kind(state, HK_SESSION_SINGULAR); }

/* Also forget the creation: spy counters, sleeps and log lines. */
static void open_session(fixture *f) {
  session_fixture_open(f);
  spy_hook_reset(f->a);
  spy_hook_reset(f->b);
  test_clock_reset_sleeps(&f->te->clock);
  test_log_clear(&f->te->log);
}

static int near(double a, double b) { return fabs(a - b) < 1e-6; }

/* Delays between consecutive after_create_session events of spy a. */
static int creation_gaps(const spy_log *log, double *gaps, int max) {
  size_t i;
  int n = 0;
  double prev = 0;
  int have = 0;
  for (i = 0; i < log->n; i++) {
    if (strcmp(log->events[i].name, "a.after_create_session") != 0) continue;
    if (have && n < max) gaps[n++] = log->events[i].time - prev;
    prev = log->events[i].time;
    have = 1;
  }
  return n;
}

/* ---- D2.1 options ------------------------------------------------------- */

/* D2: bad recovery options (delays, attempts, seconds) are INVALID_ARGUMENT naming the option. */
static void test_recovery__bad_recovery_options_are_refused_naming_them(void **state) {
  fixture *f = *state;
  hk_session_options o;
  o = f->opts;
  o.recovery_initial_delay_secs = -1;
  assert_status(hk_session_new(&f->s, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "recovery_initial_delay_secs");
  o = f->opts;
  o.recovery_initial_delay_secs = NAN;
  assert_status(hk_session_new(&f->s, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "recovery_initial_delay_secs");
  o = f->opts;
  o.recovery_initial_delay_secs = 5;
  o.recovery_max_delay_secs = 4;
  assert_status(hk_session_new(&f->s, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "recovery_max_delay_secs");
  o = f->opts;
  o.recovery_max_attempts = -1;
  assert_status(hk_session_new(&f->s, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "recovery_max_attempts");
  o = f->opts;
  o.recovery_max_secs = -1;
  assert_status(hk_session_new(&f->s, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "recovery_max_secs");
  o = f->opts;
  o.recovery_max_secs = INFINITY;
  assert_status(hk_session_new(&f->s, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "recovery_max_secs");
  assert_null(f->s);
  assert_int_equal(f->a->calls[SPY_BEGIN], 0);
}

/* ---- C38, C41, C4, D2.2 ------------------------------------------------- */

/* C38: a run that fails with a preemption error re-creates the session and runs again. */
static void test_recovery__a_preempted_run_recreates_the_session_and_runs_again(void **state) {
  fixture *f = *state;
  hk_coordinator *first_coord;
  open_session(f);
  first_coord = hk_session_coordinator(f->s);
  assert_ok(session_fixture_run_train(f), &f->st);
  assert_int_equal(fake_executor_get_i64(f->fx, NULL, f->gs), 1);

  f->tf.remaining = 1;
  f->tf.code = HK_ABORTED;
  spy_hook_reset(f->a);
  spy_hook_reset(f->b);
  assert_ok(session_fixture_run_train(f), &f->st);
  assert_logged(f->te, HK_LOG_WARNING,
                "An error was raised. This may be due to a preemption in a connected worker or parameter server. "
                "The current session will be closed and a new session will be created. Error: ");
  assert_logged(f->te, HK_LOG_WARNING, "train step 2 preempted");
  /* The old raw session was closed, a new one created (C4), begin never again (C2). */
  assert_int_equal(fake_executor_sessions_opened(f->fx), 2);
  assert_int_equal(fake_executor_open_sessions(f->fx), 1);
  assert_int_equal(f->a->calls[SPY_BEGIN], 0);
  assert_int_equal(f->a->calls[SPY_AFTER_CREATE], 1);
  assert_int_equal(f->b->calls[SPY_AFTER_CREATE], 1);
  /* The whole call ran again: every before_run twice, after_run once. */
  assert_int_equal(f->a->calls[SPY_BEFORE_RUN], 2);
  assert_int_equal(f->b->calls[SPY_BEFORE_RUN], 2);
  assert_int_equal(f->a->calls[SPY_AFTER_RUN], 1);
  /* C41: the re-created session was initialized like the first: GS restarted at 0. */
  assert_int_equal(f->a->last_i64[0], 0);
  assert_int_equal(fake_executor_get_i64(f->fx, NULL, f->gs), 1);
  /* D2: the first attempt waited recovery_initial_delay_secs. */
  assert_true(near(test_clock_total_slept(&f->te->clock), 1.0));
  /* C4, H17: a fresh coordinator, handed to the hooks; the old one is stopped but valid. */
  assert_ptr_equal(f->a->coord, hk_session_coordinator(f->s));
  assert_ptr_not_equal(f->a->coord, first_coord);
  assert_true(hk_coordinator_should_stop(first_coord));
  assert_false(hk_session_should_stop(f->s));
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  assert_int_equal(f->a->calls[SPY_END], 1);
}

/* C38: a preemption error from a hook's before_run is recovered from like one from the executor. */
static void test_recovery__a_preemption_error_from_a_hook_recovers_too(void **state) {
  fixture *f = *state;
  open_session(f);
  spy_hook_fail(f->b, SPY_BEFORE_RUN, 1, 1, HK_UNAVAILABLE, "b: ps unavailable");
  assert_ok(session_fixture_run_train(f), &f->st);
  assert_int_equal(fake_executor_sessions_opened(f->fx), 2);
  assert_int_equal(f->tf.seen, 1); /* the executor ran only in the retried call */
  assert_logged(f->te, HK_LOG_WARNING, "b: ps unavailable");

  spy_hook_fail(f->a, SPY_AFTER_RUN, 1, 1, HK_ABORTED, "a: aborted in after_run");
  assert_ok(session_fixture_run_train(f), &f->st);
  assert_int_equal(fake_executor_sessions_opened(f->fx), 3);
  assert_int_equal(f->tf.seen, 3); /* the step itself was executed twice */
  assert_int_equal(f->a->calls[SPY_BEGIN], 0);
}

/* C28: a run error replaced by the coordinator's recorded preemption error is recovered from. */
static void test_recovery__an_error_replaced_by_a_recorded_preemption_recovers(void **state) {
  fixture *f = *state;
  open_session(f);
  hk_coordinator_request_stop(hk_session_coordinator(f->s), HK_ABORTED, "worker lost");
  f->tf.remaining = 1;
  f->tf.code = HK_INTERNAL;
  assert_ok(session_fixture_run_train(f), &f->st);
  assert_int_equal(fake_executor_sessions_opened(f->fx), 2);
  assert_false(hk_session_should_stop(f->s));
}

/* C24: a singular session returns a preemption error and never re-creates itself. */
static void test_recovery__a_singular_session_never_recovers(void **state) {
  fixture *f = *state;
  open_session(f);
  f->tf.remaining = 1;
  f->tf.code = HK_ABORTED;
  assert_status(session_fixture_run_train(f), &f->st, HK_ABORTED, "train step 1 preempted");
  assert_int_equal(fake_executor_sessions_opened(f->fx), 1);
  assert_int_equal(test_clock_nsleeps(&f->te->clock), 0);
  /* The session is still usable. */
  assert_ok(session_fixture_run_train(f), &f->st);
}

/* ---- D2.2, D2.3: back-off ----------------------------------------------- */

/* D2: the delay before each re-creation doubles from recovery_initial_delay_secs. */
static void test_recovery__the_delay_between_recoveries_doubles(void **state) {
  fixture *f = *state;
  double gaps[8];
  int n;
  f->opts.recovery_max_attempts = 0; /* unlimited */
  open_session(f);
  f->tf.remaining = 5;
  f->tf.code = HK_UNAVAILABLE;
  assert_ok(session_fixture_run_train(f), &f->st);
  assert_int_equal(fake_executor_sessions_opened(f->fx), 6);
  assert_true(near(test_clock_total_slept(&f->te->clock), 1 + 2 + 4 + 8 + 16));
  n = creation_gaps(&f->log, gaps, 8);
  assert_int_equal(n, 4);
  assert_true(near(gaps[0], 2));
  assert_true(near(gaps[1], 4));
  assert_true(near(gaps[2], 8));
  assert_true(near(gaps[3], 16));
  /* D2.5: each attempt logs a preemption warning. */
  assert_true(test_log_count(&f->te->log, HK_LOG_WARNING, "may be due to a preemption") >= 5);
  assert_int_equal(f->a->calls[SPY_AFTER_CREATE], 5);
}

/* D2: the delay before a re-creation never exceeds recovery_max_delay_secs. */
static void test_recovery__the_delay_between_recoveries_is_capped(void **state) {
  fixture *f = *state;
  f->opts.recovery_initial_delay_secs = 0.5;
  f->opts.recovery_max_delay_secs = 3;
  open_session(f);
  f->tf.remaining = 5;
  f->tf.code = HK_ABORTED;
  assert_ok(session_fixture_run_train(f), &f->st);
  assert_true(near(test_clock_total_slept(&f->te->clock), 0.5 + 1 + 2 + 3 + 3));
}

/* D2: after a successful recovery the next episode starts again at the initial delay. */
static void test_recovery__the_back_off_starts_over_after_a_recovered_episode(void **state) {
  fixture *f = *state;
  open_session(f);
  f->tf.remaining = 2;
  f->tf.code = HK_ABORTED;
  assert_ok(session_fixture_run_train(f), &f->st);
  assert_true(near(test_clock_total_slept(&f->te->clock), 1 + 2));
  f->tf.remaining = 1;
  assert_ok(session_fixture_run_train(f), &f->st);
  assert_true(near(test_clock_total_slept(&f->te->clock), 1 + 2 + 1));
}

static hk_code counting_step(hk_step_context *ctx, void *user, hk_status *st) {
  (void)ctx;
  (void)st;
  (*(int *)user)++;
  return HK_OK;
}

/* D2: after recovery_max_attempts failed re-creations the session gives up and returns the last preemption error. */
static void test_recovery__gives_up_after_max_attempts_with_the_last_error(void **state) {
  fixture *f = *state;
  f->opts.recovery_max_attempts = 3;
  open_session(f);
  f->tf.remaining = FAKE_FOREVER;
  f->tf.code = HK_ABORTED;
  assert_status(session_fixture_run_train(f), &f->st, HK_ABORTED, " (gave up after 3 recovery attempts)");
  assert_true(strstr(f->st.message, "preempted") != NULL); /* the last preemption error's message */
  assert_int_equal(fake_executor_sessions_opened(f->fx), 4);
  assert_true(near(test_clock_total_slept(&f->te->clock), 1 + 2 + 4));

  /* H18: failed state. */
  assert_true(hk_session_should_stop(f->s));
  spy_hook_reset(f->a);
  fake_executor_reset_calls(f->fx);
  assert_status(session_fixture_run_train(f), &f->st, HK_ABORTED, "gave up after 3 recovery attempts");
  assert_int_equal(f->a->calls[SPY_BEFORE_RUN], 0);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 0);
  {
    int step_calls = 0;
    assert_status(hk_session_run_step_fn(f->s, counting_step, &step_calls, &f->st), &f->st, HK_ABORTED,
                  "gave up after 3 recovery attempts");
    assert_int_equal(step_calls, 0);
  }
  /* close() skips end() and returns the failure error (H15 precedence 3). */
  assert_status(hk_session_close(f->s, HK_OK, &f->st), &f->st, HK_ABORTED, "gave up after 3 recovery attempts");
  assert_int_equal(f->a->calls[SPY_END], 0);
  assert_int_equal(fake_executor_open_sessions(f->fx), 0);
}

/* D2: the session gives up once recovery_max_secs have passed in one episode. */
static void test_recovery__gives_up_after_max_secs(void **state) {
  fixture *f = *state;
  f->opts.recovery_max_attempts = 0;
  f->opts.recovery_max_secs = 10;
  open_session(f);
  f->tf.remaining = FAKE_FOREVER;
  f->tf.code = HK_UNAVAILABLE;
  /* Delays 1, 2, 4 (7 s); the 4th would end at 7 + 8 > 10. */
  assert_status(session_fixture_run_train(f), &f->st, HK_UNAVAILABLE, " (gave up after 3 recovery attempts)");
  assert_true(near(test_clock_total_slept(&f->te->clock), 7));
  assert_true(hk_session_should_stop(f->s));
}

/* ---- D2.4: non-preemption error during re-creation ---------------------- */

/* D2: an error other than a preemption while re-creating is returned and the session is in the failed state. */
static void test_recovery__a_non_preemption_error_while_recreating_fails_the_session(void **state) {
  fixture *f = *state;
  open_session(f);
  f->tf.remaining = 1;
  f->tf.code = HK_ABORTED;
  fake_executor_fail(f->fx, FAKE_OPEN, 1, 1, HK_PERMISSION_DENIED, "cannot open: no credentials");
  assert_status(session_fixture_run_train(f), &f->st, HK_PERMISSION_DENIED, "cannot open: no credentials");
  assert_int_equal(fake_executor_open_sessions(f->fx), 0);
  /* H18: no raw session remains: failed state. */
  assert_true(hk_session_should_stop(f->s));
  fake_executor_reset_calls(f->fx);
  assert_status(session_fixture_run_train(f), &f->st, HK_PERMISSION_DENIED, "no credentials");
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN) + fake_executor_calls(f->fx, FAKE_OPEN), 0);
  assert_status(hk_session_close(f->s, HK_OK, &f->st), &f->st, HK_PERMISSION_DENIED, "no credentials");
  assert_int_equal(f->a->calls[SPY_END], 0);
}

/* D2: an after_create_session error while re-creating fails the session. */
static void test_recovery__an_after_create_error_while_recreating_fails_the_session(void **state) {
  fixture *f = *state;
  open_session(f);
  f->tf.remaining = 1;
  f->tf.code = HK_ABORTED;
  spy_hook_fail(f->b, SPY_AFTER_CREATE, 1, 1, HK_INTERNAL, "b cannot start its thread");
  assert_status(session_fixture_run_train(f), &f->st, HK_INTERNAL, "b cannot start its thread");
  assert_int_equal(fake_executor_open_sessions(f->fx), 0); /* the new raw session was closed (C4) */
  assert_true(hk_session_should_stop(f->s));
}

/* ---- C39: creation --------------------------------------------------------- */

/* C39: a preemption error while constructing a monitored session is retried with back-off. */
static void test_recovery__a_preemption_while_constructing_is_retried(void **state) {
  fixture *f = *state;
  fake_executor_fail(f->fx, FAKE_OPEN, 1, 2, HK_UNAVAILABLE, "master not up yet");
  if (f->opts.kind == HK_SESSION_SINGULAR) {
    assert_status(hk_session_new(&f->s, &f->opts, &f->st), &f->st, HK_UNAVAILABLE, "master not up yet");
    assert_null(f->s);
    return;
  }
  assert_ok(hk_session_new(&f->s, &f->opts, &f->st), &f->st);
  assert_logged(f->te, HK_LOG_WARNING,
                "An error was raised while a session was being created. This may be due to "
                "a preemption of a connected worker or parameter server. A new session will be created. Error: ");
  assert_logged(f->te, HK_LOG_WARNING, "master not up yet");
  assert_int_equal(fake_executor_calls(f->fx, FAKE_OPEN), 3);
  assert_int_equal(f->a->calls[SPY_BEGIN], 1);
  assert_int_equal(f->a->calls[SPY_AFTER_CREATE], 1);
  assert_true(near(test_clock_total_slept(&f->te->clock), 1 + 2));
}

/* C39: a preemption error from after_create_session at construction is retried. */
static void test_recovery__a_preemption_in_after_create_session_is_retried(void **state) {
  fixture *f = *state;
  spy_hook_fail(f->b, SPY_AFTER_CREATE, 1, 1, HK_ABORTED, "b: aborted while starting");
  assert_ok(hk_session_new(&f->s, &f->opts, &f->st), &f->st);
  assert_int_equal(f->a->calls[SPY_AFTER_CREATE], 2);
  assert_int_equal(f->b->calls[SPY_AFTER_CREATE], 2);
  assert_int_equal(f->a->calls[SPY_BEGIN], 1);
  assert_int_equal(fake_executor_sessions_opened(f->fx), 2);
  assert_int_equal(fake_executor_open_sessions(f->fx), 1);
}

/* C39: an error other than a preemption at construction is returned at once. */
static void test_recovery__other_creation_errors_are_returned_at_once(void **state) {
  fixture *f = *state;
  fake_executor_fail(f->fx, FAKE_OPEN, 1, 1, HK_INTERNAL, "open broke");
  assert_status(hk_session_new(&f->s, &f->opts, &f->st), &f->st, HK_INTERNAL, "open broke");
  assert_null(f->s);
  assert_int_equal(test_clock_nsleeps(&f->te->clock), 0);
  assert_int_equal(f->a->calls[SPY_END], 0);
}

/* C39: construction gives up after recovery_max_attempts and returns the last preemption error. */
static void test_recovery__construction_gives_up_after_max_attempts(void **state) {
  fixture *f = *state;
  f->opts.recovery_max_attempts = 2;
  fake_executor_fail(f->fx, FAKE_OPEN, 1, FAKE_FOREVER, HK_ABORTED, "never up");
  assert_status(hk_session_new(&f->s, &f->opts, &f->st), &f->st, HK_ABORTED,
                "never up (gave up after 2 recovery attempts)");
  assert_null(f->s);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_OPEN), 3);
  assert_int_equal(f->a->calls[SPY_BEGIN], 1);
  assert_int_equal(f->a->calls[SPY_END], 0);
}

/* ---- C40: should_stop ----------------------------------------------------- */

/* C40: should_stop() re-creates the session when the coordinator holds a recorded preemption error. */
static void test_recovery__should_stop_recovers_from_a_recorded_preemption(void **state) {
  fixture *f = *state;
  hk_coordinator *old;
  open_session(f);
  old = hk_session_coordinator(f->s);
  hk_coordinator_request_stop(old, HK_UNAVAILABLE, "ps restarted");
  if (f->opts.kind == HK_SESSION_SINGULAR) {
    assert_true(hk_session_should_stop(f->s));
    assert_int_equal(fake_executor_sessions_opened(f->fx), 1);
    return;
  }
  assert_false(hk_session_should_stop(f->s));
  assert_logged(f->te, HK_LOG_WARNING,
                "An error was raised while considering whether the session is complete. This may be due to a "
                "preemption in a connected worker or parameter server. The current session will be closed and a "
                "new session will be created. Error: ");
  assert_logged(f->te, HK_LOG_WARNING, "ps restarted");
  assert_int_equal(fake_executor_sessions_opened(f->fx), 2);
  assert_int_equal(f->a->calls[SPY_AFTER_CREATE], 1);
  assert_ptr_not_equal(hk_session_coordinator(f->s), old);
  assert_false(hk_session_should_stop(f->s));
  assert_ok(session_fixture_run_train(f), &f->st);
}

/* C40: should_stop() gives up after recovery_max_attempts and the session stops. */
static void test_recovery__should_stop_gives_up_after_max_attempts(void **state) {
  fixture *f = *state;
  f->opts.recovery_max_attempts = 1;
  open_session(f);
  fake_executor_fail(f->fx, FAKE_OPEN, 1, FAKE_FOREVER, HK_ABORTED, "still down");
  hk_coordinator_request_stop(hk_session_coordinator(f->s), HK_ABORTED, "ps down");
  assert_true(hk_session_should_stop(f->s));
  assert_status(session_fixture_run_train(f), &f->st, HK_ABORTED, "(gave up after 1 recovery attempts)");
}

/* C40: an error while should_stop() re-creates the session puts it in the failed state. */
static void test_recovery__an_error_while_recreating_enters_the_failed_state(void **state) {
  fixture *f = *state;
  open_session(f);
  fake_executor_fail(f->fx, FAKE_OPEN, 1, 1, HK_INTERNAL, "cannot reopen");
  hk_coordinator_request_stop(hk_session_coordinator(f->s), HK_ABORTED, "ps down");
  /* D2.4: a non-preemption error during the attempt ends it; no raw session remains. */
  assert_true(hk_session_should_stop(f->s));
  assert_int_equal(fake_executor_open_sessions(f->fx), 0);
  assert_status(session_fixture_run_train(f), &f->st, HK_INTERNAL, "cannot reopen");
  assert_int_equal(f->a->calls[SPY_BEFORE_RUN], 0);
  assert_status(hk_session_close(f->s, HK_OK, &f->st), &f->st, HK_INTERNAL, "cannot reopen");
  assert_int_equal(f->a->calls[SPY_END], 0);
}

/* C40: a recorded error that is not a preemption makes should_stop() true without recovery. */
static void test_recovery__a_recorded_non_preemption_error_stops_the_session(void **state) {
  fixture *f = *state;
  open_session(f);
  hk_coordinator_request_stop(hk_session_coordinator(f->s), HK_INTERNAL, "thread crashed");
  assert_true(hk_session_should_stop(f->s));
  assert_int_equal(fake_executor_sessions_opened(f->fx), 1);
  assert_status(hk_session_close(f->s, HK_OK, &f->st), &f->st, HK_INTERNAL, "thread crashed");
}

/* ---- C45: step fn --------------------------------------------------------- */

typedef struct step_data {
  fixture *f;
  int calls;
  int fail_first; /* 1: return ABORTED itself; 2: through run_with_hooks */
} step_data;

static hk_code step(hk_step_context *ctx, void *user, hk_status *st) {
  step_data *d = user;
  hk_run_args args = {NULL, 0, NULL, 0, &d->f->train, 1, NULL};
  hk_code rc;
  d->calls++;
  if (d->calls == 1 && d->fail_first == 1) return hk_status_set(st, HK_ABORTED, "step_fn saw a preemption");
  if (d->calls == 1 && d->fail_first == 2) d->f->tf.remaining = 1, d->f->tf.code = HK_UNAVAILABLE;
  rc = hk_step_context_run_with_hooks(ctx, &args, NULL, NULL, st);
  return rc;
}

/* C45: a step_fn that returns a preemption error runs again on the re-created session. */
static void test_recovery__a_preempted_step_fn_runs_again_on_the_new_session(void **state) {
  fixture *f = *state;
  step_data d;
  memset(&d, 0, sizeof(d));
  d.f = f;
  d.fail_first = 1;
  open_session(f);
  if (f->opts.kind == HK_SESSION_SINGULAR) {
    assert_status(hk_session_run_step_fn(f->s, step, &d, &f->st), &f->st, HK_ABORTED, "step_fn saw a preemption");
    assert_int_equal(d.calls, 1);
    return;
  }
  assert_ok(hk_session_run_step_fn(f->s, step, &d, &f->st), &f->st);
  assert_int_equal(d.calls, 2);
  assert_int_equal(fake_executor_sessions_opened(f->fx), 2);

  memset(&d, 0, sizeof(d));
  d.f = f;
  d.fail_first = 2;
  assert_ok(hk_session_run_step_fn(f->s, step, &d, &f->st), &f->st);
  assert_int_equal(d.calls, 2);
  assert_int_equal(fake_executor_sessions_opened(f->fx), 3);
}

/* ---- H21: custom creator -------------------------------------------------- */

typedef struct creator_state {
  int creates;
  int destroys;
  int fail_next;
  hk_code code;
} creator_state;

static hk_code creator_create(void *user, hk_executor *ex, hk_raw_session **out, hk_status *st) {
  creator_state *cs = user;
  hk_code rc;
  cs->creates++;
  if (cs->fail_next > 0) {
    cs->fail_next--;
    return hk_status_set(st, cs->code, "creator failed on command");
  }
  rc = hk_raw_session_open(out, ex, st);
  if (rc != HK_OK) return rc;
  return HK_OK;
}

static void creator_destroy(void *user) {
  creator_state *cs = user;
  cs->destroys++;
}

static const hk_session_creator_vtable creator_vt = {HK_SESSION_CREATOR_VTABLE_VERSION, creator_create,
                                                     creator_destroy};

/* H21: a custom session creator creates the first raw session and every re-created one. */
static void test_recovery__a_custom_session_creator_creates_every_raw_session(void **state) {
  fixture *f = *state;
  creator_state cs;
  memset(&cs, 0, sizeof(cs));
  cs.fail_next = 1;
  cs.code = HK_ABORTED;
  f->opts.creator = &creator_vt;
  f->opts.creator_user = &cs;
  /* The creator's raw session is not initialized by anyone: no hook fetches GS. */
  spy_hook_clear_request(f->a);
  if (f->opts.kind == HK_SESSION_SINGULAR) {
    assert_status(hk_session_new(&f->s, &f->opts, &f->st), &f->st, HK_ABORTED, "creator failed on command");
    assert_int_equal(cs.destroys, 0); /* not ours on failure */
    return;
  }
  assert_ok(hk_session_new(&f->s, &f->opts, &f->st), &f->st);
  assert_int_equal(cs.creates, 2);
  assert_int_equal(f->a->calls[SPY_AFTER_CREATE], 1);
  cs.fail_next = 1;
  cs.code = HK_UNAVAILABLE;
  hk_coordinator_request_stop(hk_session_coordinator(f->s), HK_ABORTED, "recreate please");
  assert_false(hk_session_should_stop(f->s));
  assert_int_equal(cs.creates, 4);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  hk_session_free(f->s);
  f->s = NULL;
  assert_int_equal(cs.destroys, 1);
}

/* H10: a session-creator vtable with version 0 or above the current one is INVALID_ARGUMENT. */
static void test_recovery__a_creator_vtable_of_an_unknown_version_is_refused(void **state) {
  fixture *f = *state;
  creator_state cs;
  hk_session_creator_vtable bad = creator_vt;
  memset(&cs, 0, sizeof(cs));
  bad.version = 0;
  f->opts.creator = &bad;
  f->opts.creator_user = &cs;
  assert_status(hk_session_new(&f->s, &f->opts, &f->st), &f->st, HK_INVALID_ARGUMENT, NULL);
  bad.version = HK_SESSION_CREATOR_VTABLE_VERSION;
  bad.create = NULL;
  assert_status(hk_session_new(&f->s, &f->opts, &f->st), &f->st, HK_INVALID_ARGUMENT, "create");
  assert_int_equal(f->a->calls[SPY_BEGIN], 0);
  assert_int_equal(cs.creates, 0);
}

/* ---- non-preemption during re-creation ------------------------------------ */

/* D2: a stop requested on the old coordinator during the back-off does not reach the new session. */
static void test_recovery__a_stop_on_the_old_coordinator_spares_the_new_session(void **state) {
  fixture *f = *state;
  /* While the MS re-creates, a coordinator stop on the old coordinator does not
   * preempt the new session: after recovery should_stop is false. */
  open_session(f);
  f->tf.remaining = 1;
  f->tf.code = HK_ABORTED;
  assert_ok(session_fixture_run_train(f), &f->st);
  assert_false(hk_session_should_stop(f->s));
  assert_false(hk_coordinator_should_stop(hk_session_coordinator(f->s)));
}

#define MS(fn) cmocka_unit_test_setup_teardown(fn, setup_ms, session_fixture_teardown)
#define SMS(fn) cmocka_unit_test_setup_teardown(fn, setup_sms, session_fixture_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      MS(test_recovery__bad_recovery_options_are_refused_naming_them),
      MS(test_recovery__a_preempted_run_recreates_the_session_and_runs_again),
      MS(test_recovery__a_preemption_error_from_a_hook_recovers_too),
      MS(test_recovery__an_error_replaced_by_a_recorded_preemption_recovers),
      SMS(test_recovery__a_singular_session_never_recovers),
      MS(test_recovery__the_delay_between_recoveries_doubles),
      MS(test_recovery__the_delay_between_recoveries_is_capped),
      MS(test_recovery__the_back_off_starts_over_after_a_recovered_episode),
      MS(test_recovery__gives_up_after_max_attempts_with_the_last_error),
      MS(test_recovery__gives_up_after_max_secs),
      MS(test_recovery__a_non_preemption_error_while_recreating_fails_the_session),
      MS(test_recovery__an_after_create_error_while_recreating_fails_the_session),
      MS(test_recovery__a_preemption_while_constructing_is_retried),
      SMS(test_recovery__a_preemption_while_constructing_is_retried),
      MS(test_recovery__a_preemption_in_after_create_session_is_retried),
      MS(test_recovery__other_creation_errors_are_returned_at_once),
      MS(test_recovery__construction_gives_up_after_max_attempts),
      MS(test_recovery__should_stop_recovers_from_a_recorded_preemption),
      SMS(test_recovery__should_stop_recovers_from_a_recorded_preemption),
      MS(test_recovery__should_stop_gives_up_after_max_attempts),
      MS(test_recovery__an_error_while_recreating_enters_the_failed_state),
      MS(test_recovery__a_recorded_non_preemption_error_stops_the_session),
      MS(test_recovery__a_preempted_step_fn_runs_again_on_the_new_session),
      SMS(test_recovery__a_preempted_step_fn_runs_again_on_the_new_session),
      MS(test_recovery__a_custom_session_creator_creates_every_raw_session),
      SMS(test_recovery__a_custom_session_creator_creates_every_raw_session),
      MS(test_recovery__a_creator_vtable_of_an_unknown_version_is_refused),
      MS(test_recovery__a_stop_on_the_old_coordinator_spares_the_new_session),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
