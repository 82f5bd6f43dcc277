/*
 * Sessions over the fake executor: stopping, closing and freeing — end
 * (C15, C16, H16), accessors and should_stop (C25, C26, C46), the
 * coordinator's errors and substitution (C27, C28, D11), close's order and
 * threads (C29–C32), close statuses (H15), after close (C35, C37, D7),
 * stops and errors from other threads (H17), re-entrancy (H19), free
 * without close (H20), the signal helper (D12) and the failed state.
 *
 * Most tests run twice, once per session kind (MS and SMS), through two
 * setups that share one fixture type (session_tests.h).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "session_tests.h"

/* ---- C15, C16, H16: end ------------------------------------------------- */

/* C15: close() with a clean status calls end() on every hook, in list order. */
static void test_session__a_clean_close_calls_every_end_in_order(void **state) {
  fixture *f = *state;
  static const char *const expect[] = {"a.end", "b.end", "c.end"};
  hk_raw_session *created;
  session_fixture_open(f);
  created = f->a->created_session;
  assert_ok(session_fixture_run_train(f), &f->st);
  spy_log_clear(&f->log);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  assert_true(spy_log_equals(&f->log, expect, 3));
  assert_ptr_equal(f->a->end_session, created);
  assert_ptr_equal(f->c->end_session, created);
  assert_int_equal(fake_executor_open_sessions(f->fx), 0);
}

/* C16: close() with a status that is not clean calls no end(). */
static void test_session__a_close_with_an_error_calls_no_end(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  assert_status(hk_session_close(f->s, HK_INTERNAL, &f->st), &f->st, HK_INTERNAL, NULL);
  assert_int_equal(f->a->calls[SPY_END] + f->b->calls[SPY_END] + f->c->calls[SPY_END], 0);
  assert_int_equal(fake_executor_open_sessions(f->fx), 0);
}

/* H16: a failing end() skips the later hooks' end() and close() still completes, returning that error. */
static void test_session__a_failing_end_skips_later_ends_and_close_completes(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  spy_hook_fail(f->b, SPY_END, 1, 1, HK_UNKNOWN, "b end broke");
  assert_status(hk_session_close(f->s, HK_OK, &f->st), &f->st, HK_UNKNOWN, "b end broke");
  assert_int_equal(f->a->calls[SPY_END], 1);
  assert_int_equal(f->c->calls[SPY_END], 0);
  /* close() still completed its remaining steps (C29) and the session is closed (C32). */
  assert_int_equal(fake_executor_open_sessions(f->fx), 0);
  assert_true(hk_coordinator_should_stop(hk_session_coordinator(f->s)));
  assert_true(hk_session_should_stop(f->s));
  assert_null(hk_session_executor(f->s));
  assert_null(hk_session_raw_session(f->s));
  assert_status(session_fixture_run_train(f), &f->st, HK_FAILED_PRECONDITION, "Session is closed.");
}

/* An end() that recovered from an error of its own: the status still says
 * it, the code is OK. */
static hk_code end_ok_with_status_filled(spy_hook *spy, spy_slot slot, void *arg, hk_status *status) {
  (void)spy;
  (void)arg;
  if (slot == SPY_END) hk_status_set(status, HK_ALREADY_EXISTS, "create x: File exists (retried under another name)");
  return HK_OK;
}

/* H1, H16: what counts is the code an end() returns. One that returns OK
 * with its status still filled is a success: close returns OK and the
 * later hooks' end() runs. */
static void test_session__end_returning_ok_with_a_filled_status_is_ok(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  f->b->action = end_ok_with_status_filled;
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  assert_int_equal(f->st.code, HK_OK);
  assert_string_equal(f->st.message, "");
  assert_int_equal(f->c->calls[SPY_END], 1);
}

/* ---- C25, C26, C46 ------------------------------------------------------- */

/* C25, C46: the raw-session and graph accessors return them while open and NULL after close. */
static void test_session__the_raw_session_and_graph_accessors_return_null_after_close(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  assert_ptr_equal(hk_session_executor(f->s), f->ex);
  if (f->opts.kind == HK_SESSION_SINGULAR) {
    hk_raw_session *rs = hk_session_raw_session(f->s);
    assert_non_null(rs);
    assert_ptr_equal(rs, f->a->created_session);
    /* C17: a direct raw-session run triggers no hooks. */
    {
      hk_run_args args = {NULL, 0, NULL, 0, &f->train, 1, NULL};
      assert_ok(hk_raw_session_run(rs, &args, NULL, NULL, &f->st), &f->st);
      assert_int_equal(f->a->calls[SPY_BEFORE_RUN], 0);
    }
  } else {
    assert_null(hk_session_raw_session(f->s));
  }
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  assert_null(hk_session_raw_session(f->s));
  assert_null(hk_session_executor(f->s));
  assert_non_null(hk_session_coordinator(f->s)); /* H17: valid until free */
}

/* C26: should_stop() becomes true after a hook requested a stop. */
static void test_session__should_stop_follows_a_hook_s_stop_request(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  assert_false(hk_session_should_stop(f->s));
  assert_ok(session_fixture_run_train(f), &f->st);
  assert_false(hk_session_should_stop(f->s));
  hk_coordinator_request_stop(hk_session_coordinator(f->s), HK_OK, NULL);
  assert_true(hk_session_should_stop(f->s));
}

/* C26: should_stop() is true once the session is closed. */
static void test_session__should_stop_is_true_after_close(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  assert_true(hk_session_should_stop(f->s));
}

/* ---- C27, D11, C28 ------------------------------------------------------ */

/* C27, D11: after a thread reported an error to the coordinator, should_stop() is true and close() returns the
 * error. */
static void test_session__a_thread_s_error_stops_the_session_and_close_returns_it(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  hk_coordinator_request_stop(hk_session_coordinator(f->s), HK_INTERNAL, "reader thread died");
  assert_ok(session_fixture_run_train(f), &f->st); /* run still executes */
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 1);
  assert_true(hk_session_should_stop(f->s));
  /* A later error is ignored: the first one wins. */
  hk_coordinator_request_stop(hk_session_coordinator(f->s), HK_DATA_LOSS, "second");
  assert_status(hk_session_close(f->s, HK_OK, &f->st), &f->st, HK_INTERNAL, "reader thread died");
}

/* C28: a run error is replaced by the coordinator's recorded preemption error. */
static void test_session__a_singular_session_replaces_run_errors_by_a_recorded_preemption(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  /* A non-preemption run error is replaced by a recorded preemption error. */
  hk_coordinator_request_stop(hk_session_coordinator(f->s), HK_ABORTED, "worker 3 preempted");
  fake_executor_fail(f->fx, FAKE_RUN, 1, 1, HK_INTERNAL, "lost connection");
  assert_status(session_fixture_run_train(f), &f->st, HK_ABORTED, "worker 3 preempted");
  /* A preemption run error is returned unchanged. */
  fake_executor_fail(f->fx, FAKE_RUN, 1, 1, HK_UNAVAILABLE, "ps unreachable");
  assert_status(session_fixture_run_train(f), &f->st, HK_UNAVAILABLE, "ps unreachable");
  /* C24: SMS never recovers. */
  assert_int_equal(fake_executor_sessions_opened(f->fx), 1);
  /* D11: close returns the recorded error (SMS: any code). */
  assert_status(hk_session_close(f->s, HK_OK, &f->st), &f->st, HK_ABORTED, "worker 3 preempted");
}

/* C28: a recorded error that is not a preemption replaces no run error. */
static void test_session__a_recorded_non_preemption_error_replaces_no_run_error(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  hk_coordinator_request_stop(hk_session_coordinator(f->s), HK_INTERNAL, "recorded");
  fake_executor_fail(f->fx, FAKE_RUN, 1, 1, HK_UNKNOWN, "run failed");
  assert_status(session_fixture_run_train(f), &f->st, HK_UNKNOWN, "run failed");
}

/* ---- C29, C30, C31, C32 ------------------------------------------------- */

static hk_code check_close_order(spy_hook *spy, spy_slot slot, void *arg, hk_status *st) {
  fixture *f = spy->action_user;
  (void)st;
  if (slot == SPY_END) {
    /* end() runs before the coordinator stop and before the raw session closes. */
    if (!hk_coordinator_should_stop(hk_session_coordinator(f->s)) && hk_raw_session_is_open(arg)) f->aux++;
  }
  return HK_OK;
}

/* C29: close() calls end() on the hooks, requests a clean stop, joins the threads, then closes the raw session. */
static void test_session__close_ends_hooks_stops_joins_then_closes_the_raw_session(void **state) {
  fixture *f = *state;
  hk_coordinator *coord;
  session_fixture_open(f);
  f->a->action = f->c->action = check_close_order;
  coord = hk_session_coordinator(f->s);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  assert_int_equal(f->aux, 2);
  assert_true(hk_coordinator_should_stop(coord));
  assert_true(hk_coordinator_clean_stop_requested(coord));
  assert_int_equal(fake_executor_open_sessions(f->fx), 0);
}

/* C29, C30: close() names a thread that did not finish within the grace period in a warning. */
static void test_session__close_warns_about_a_stuck_thread_after_the_grace_period(void **state) {
  fixture *f = *state;
  hk_coordinator_thread *tok = NULL;
  double before;
  f->opts.stop_grace_period_secs = 5;
  session_fixture_open(f);
  assert_ok(hk_coordinator_register_thread(&tok, hk_session_coordinator(f->s), "reader-7", &f->st), &f->st);
  before = test_clock_now(&f->te->clock);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  assert_logged(f->te, HK_LOG_WARNING, "Coordinator stopped with threads still running:");
  assert_logged(f->te, HK_LOG_WARNING, "reader-7");
  /* Gave up after about the grace period (mock time). */
  assert_true(test_clock_now(&f->te->clock) - before >= 5.0 - 0.2);
  assert_true(test_clock_now(&f->te->clock) - before <= 5.0 + 1.0);
  hk_coordinator_thread_done(tok);
}

/* C30: close() returns as soon as every registered thread has finished. */
static void test_session__close_does_not_wait_for_finished_threads(void **state) {
  fixture *f = *state;
  hk_coordinator_thread *tok = NULL;
  double before;
  f->opts.stop_grace_period_secs = 100;
  session_fixture_open(f);
  assert_ok(hk_coordinator_register_thread(&tok, hk_session_coordinator(f->s), "done-thread", &f->st), &f->st);
  hk_coordinator_thread_done(tok);
  before = test_clock_now(&f->te->clock);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  assert_true(test_clock_now(&f->te->clock) - before < 1.0);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, "threads still running"), 0);
}

/* C31: a preemption error closing the raw session is logged at WARNING, never returned. */
static void test_session__a_preemption_closing_the_raw_session_is_logged_not_returned(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  fake_executor_fail(f->fx, FAKE_CLOSE, 1, 1, HK_UNAVAILABLE, "ps gone");
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  assert_logged(f->te, HK_LOG_WARNING, "An error occurred when attempting to close the session.");
  assert_logged(f->te, HK_LOG_WARNING, "ps gone");
}

/* C31: any other error closing the raw session is logged at ERROR, never returned. */
static void test_session__other_errors_closing_the_raw_session_are_logged_at_error(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  fake_executor_fail(f->fx, FAKE_CLOSE, 1, 1, HK_INTERNAL, "close exploded");
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  assert_logged(f->te, HK_LOG_ERROR, "close exploded");
}

/* ---- H15: close status -------------------------------------------------- */

/* H15: close(OUT_OF_RANGE) is a clean close. */
static void test_session__close_with_out_of_range_is_clean(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  assert_ok(hk_session_close(f->s, HK_OUT_OF_RANGE, &f->st), &f->st);
  assert_int_equal(f->c->calls[SPY_END], 1);
}

/* H15: close(CANCELLED) without a clean stop requested is not clean. */
static void test_session__close_with_cancelled_without_a_stop_is_not_clean(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  assert_status(hk_session_close(f->s, HK_CANCELLED, &f->st), &f->st, HK_CANCELLED, NULL);
  assert_int_equal(f->a->calls[SPY_END], 0);
}

/* H15: close(CANCELLED) after a clean stop on the coordinator is clean. */
static void test_session__close_with_cancelled_after_a_clean_stop_is_clean(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  hk_coordinator_request_stop(hk_session_coordinator(f->s), HK_OK, NULL);
  assert_ok(hk_session_close(f->s, HK_CANCELLED, &f->st), &f->st);
  assert_int_equal(f->a->calls[SPY_END], 1);
}

/* H15: close(CANCELLED) after a hook's stop request is not clean: only a coordinator clean stop or a signal make it
 * so. */
static void test_session__close_with_cancelled_after_a_hook_s_stop_is_not_clean(void **state) {
  fixture *f = *state;
  /* Only a coordinator clean stop (or the signal helper) makes CANCELLED clean. */
  spy_hook_stop_at(f->a, SPY_AFTER_CREATE, 1, 1);
  session_fixture_open(f);
  assert_status(hk_session_close(f->s, HK_CANCELLED, &f->st), &f->st, HK_CANCELLED, NULL);
  assert_int_equal(f->a->calls[SPY_END], 0);
}

/* H15: close() with a code it does not know is not clean and returns that code. */
static void test_session__close_with_an_unknown_code_is_not_clean(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  assert_int_equal(hk_session_close(f->s, (hk_code)77, &f->st), 77);
  assert_int_equal(f->st.code, 77);
  assert_int_equal(f->b->calls[SPY_END], 0);
}

/* H15: close() returns the coordinator's recorded error before an end() error. */
static void test_session__close_returns_the_coordinator_error_before_an_end_error(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  hk_coordinator_request_stop(hk_session_coordinator(f->s), HK_INTERNAL, "coordinator error");
  spy_hook_fail(f->a, SPY_END, 1, 1, HK_DATA_LOSS, "end error");
  assert_status(hk_session_close(f->s, HK_OK, &f->st), &f->st, HK_INTERNAL, "coordinator error");
  assert_int_equal(f->a->calls[SPY_END], 1);
  /* Errors not returned are logged at ERROR. */
  assert_logged(f->te, HK_LOG_ERROR, "end error");
}

/* H15: a monitored session's close() does not return a recorded preemption error. */
static void test_session__a_monitored_session_does_not_return_a_recorded_preemption(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  hk_coordinator_request_stop(hk_session_coordinator(f->s), HK_ABORTED, "preempted ps");
  if (f->opts.kind == HK_SESSION_MONITORED) {
    assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
    assert_logged(f->te, HK_LOG_WARNING, "preempted ps");
  } else {
    assert_status(hk_session_close(f->s, HK_OK, &f->st), &f->st, HK_ABORTED, "preempted ps");
  }
}

/* ---- C35, C37, D7 ------------------------------------------------------- */

/* C35: OUT_OF_RANGE from run() is returned to the caller; it is no preemption and calls no after_run. */
static void test_session__out_of_range_from_run_is_returned_without_recovery(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  fake_executor_fail(f->fx, FAKE_RUN, 1, 1, HK_OUT_OF_RANGE, "End of sequence");
  assert_status(session_fixture_run_train(f), &f->st, HK_OUT_OF_RANGE, "End of sequence");
  assert_int_equal(f->a->calls[SPY_AFTER_RUN], 0); /* C16 */
  assert_false(hk_session_should_stop(f->s));
  assert_int_equal(fake_executor_sessions_opened(f->fx), 1); /* not a preemption: no recovery */
  assert_ok(hk_session_close(f->s, HK_OUT_OF_RANGE, &f->st), &f->st);
  assert_int_equal(f->c->calls[SPY_END], 1);
}

static hk_code step_noop(hk_step_context *ctx, void *user, hk_status *st) {
  (void)ctx;
  (void)user;
  (void)st;
  return HK_OK;
}

/* C37, D7: after close(), run() and run_step_fn() are FAILED_PRECONDITION; a second close does nothing and returns
 * OK. */
static void test_session__calls_after_close_are_refused_and_a_second_close_is_a_no_op(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  spy_hook_fail(f->a, SPY_END, 1, 1, HK_INTERNAL, "first close fails");
  assert_status(hk_session_close(f->s, HK_OK, &f->st), &f->st, HK_INTERNAL, "first close fails");
  assert_status(session_fixture_run_train(f), &f->st, HK_FAILED_PRECONDITION, "Session is closed.");
  assert_status(hk_session_run_step_fn(f->s, step_noop, NULL, &f->st), &f->st, HK_FAILED_PRECONDITION,
                "Session is closed.");
  assert_true(hk_session_should_stop(f->s));
  test_log_clear(&f->te->log);
  spy_log_clear(&f->log);
  /* D7: later closes do nothing and return OK whatever they are given. */
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  assert_ok(hk_session_close(f->s, HK_INTERNAL, &f->st), &f->st);
  assert_int_equal(f->log.n, 0);
  assert_int_equal(f->a->calls[SPY_END], 1);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, NULL) + test_log_count(&f->te->log, HK_LOG_WARNING, NULL) +
                       test_log_count(&f->te->log, HK_LOG_ERROR, NULL),
                   0);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_CLOSE), 1);
}

/* ---- H17: stop from another thread ------------------------------------- */

typedef struct stopper {
  hk_coordinator *coord;
  hk_code code;
} stopper;

static void *stopper_main(void *arg) {
  stopper *sp = arg;
  hk_coordinator_request_stop(sp->coord, sp->code, sp->code == HK_OK ? NULL : "stopped from a thread");
  return NULL;
}

/* H17: request_stop on the coordinator is safe from any thread and stops the session. */
static void test_session__a_stop_from_another_thread_stops_the_session(void **state) {
  fixture *f = *state;
  pthread_t th;
  stopper sp;
  session_fixture_open(f);
  sp.coord = hk_session_coordinator(f->s);
  sp.code = HK_OK;
  assert_int_equal(pthread_create(&th, NULL, stopper_main, &sp), 0);
  assert_int_equal(pthread_join(th, NULL), 0);
  assert_true(hk_session_should_stop(f->s));
  assert_ok(hk_session_close(f->s, HK_CANCELLED, &f->st), &f->st); /* clean after a clean stop */
  assert_int_equal(f->a->calls[SPY_END], 1);
}

/* H17: an error reported from another thread stops the session and close() returns it. */
static void test_session__an_error_from_another_thread_stops_the_session(void **state) {
  fixture *f = *state;
  pthread_t th;
  stopper sp;
  session_fixture_open(f);
  sp.coord = hk_session_coordinator(f->s);
  sp.code = HK_INTERNAL;
  assert_int_equal(pthread_create(&th, NULL, stopper_main, &sp), 0);
  assert_int_equal(pthread_join(th, NULL), 0);
  assert_true(hk_session_should_stop(f->s));
  assert_status(hk_session_close(f->s, HK_OK, &f->st), &f->st, HK_INTERNAL, "stopped from a thread");
}

/* ---- H19: re-entrancy --------------------------------------------------- */

static hk_code reenter(spy_hook *spy, spy_slot slot, void *arg, hk_status *st) {
  fixture *f = spy->action_user;
  (void)arg;
  (void)st;
  if (slot != SPY_AFTER_RUN && slot != SPY_BEFORE_RUN) return HK_OK;
  f->aux_rc = session_fixture_run_train(f);
  f->aux_st = f->st;
  f->aux += hk_session_should_stop(f->s) ? 100 : 1; /* allowed anywhere */
  if (hk_session_run_step_fn(f->s, step_noop, NULL, &f->st) == HK_FAILED_PRECONDITION) f->aux += 10;
  if (hk_session_close(f->s, HK_OK, &f->st) == HK_FAILED_PRECONDITION) f->aux += 1000;
  return HK_OK;
}

/* H19: run(), run_step_fn() or close() called from inside one of the session's hooks is FAILED_PRECONDITION. */
static void test_session__calls_from_inside_a_hook_are_refused(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  f->b->action = reenter;
  assert_ok(session_fixture_run_train(f), &f->st);
  assert_true(
      test_status_is(f->aux_rc, &f->aux_st, HK_FAILED_PRECONDITION, "session is busy: called from a hook callback"));
  /* before_run and after_run each: should_stop false (1), step_fn refused (10), close refused (1000). */
  assert_int_equal(f->aux, 2 * 1011);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 1);
  f->b->action = NULL;
  /* The session is still open and usable. */
  assert_ok(session_fixture_run_train(f), &f->st);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  assert_int_equal(f->b->calls[SPY_END], 1);
}

/* ---- H20: free without close -------------------------------------------- */

/* H20: freeing a session that was not closed first closes it as close(CANCELLED). */
static void test_session__free_without_close_closes_as_cancelled(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  hk_session_free(f->s);
  f->s = NULL;
  assert_logged(f->te, HK_LOG_WARNING, "session destroyed without close");
  /* close(CANCELLED) without a clean stop: not clean, no end(). */
  assert_int_equal(f->a->calls[SPY_END], 0);
  assert_int_equal(fake_executor_open_sessions(f->fx), 0);
  /* The hooks are detached, not freed. */
  assert_int_equal(f->a->calls[SPY_DESTROY], 0);
}

/* H20: freeing an open session after a clean stop is a clean close that runs every end(). */
static void test_session__free_after_a_clean_stop_runs_every_end(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  hk_coordinator_request_stop(hk_session_coordinator(f->s), HK_OK, NULL);
  hk_session_free(f->s);
  f->s = NULL;
  assert_logged(f->te, HK_LOG_WARNING, "session destroyed without close");
  assert_int_equal(f->a->calls[SPY_END], 1);
  assert_int_equal(f->c->calls[SPY_END], 1);
}

static void test_session__hook_destroy_once(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  hk_session_free(f->s);
  f->s = NULL;
  assert_int_equal(f->a->calls[SPY_DESTROY], 0);
  spy_hook_release(f->a);
  assert_int_equal(f->a->calls[SPY_DESTROY], 1);
  spy_hook_release(f->a);
  assert_int_equal(f->a->calls[SPY_DESTROY], 1);
}

/* ---- D12: the signal helper is a clean stop ------------------------------ */

/* D12: with the signal helper installed, SIGINT or SIGTERM is a clean stop of the session. */
static void test_session__a_signal_is_a_clean_stop(void **state) {
  fixture *f = *state;
  hk_status ist = HK_STATUS_INIT;
  session_fixture_open(f);
  assert_ok(hk_signal_install(&ist), &ist);
  assert_false(hk_session_should_stop(f->s));
  raise(SIGTERM);
  assert_true(hk_signal_fired() != 0);
  assert_true(hk_session_should_stop(f->s));
  /* A step in progress (or a new one) still runs: only hook stops block run(). */
  assert_ok(session_fixture_run_train(f), &f->st);
  /* H15: CANCELLED after the signal is clean, so end() runs. */
  assert_ok(hk_session_close(f->s, HK_CANCELLED, &f->st), &f->st);
  assert_int_equal(f->a->calls[SPY_END], 1);
  assert_ok(hk_signal_uninstall(&ist), &ist);
  assert_int_equal(hk_signal_fired(), 0);
}

/* ---- C29, H15: an error reported while close() joins the threads -------- */

/* A coordinator thread that, once asked to stop, fails while shutting down. */
static void failing_on_stop_thread(void *user, hk_coordinator *c) {
  (void)user;
  while (!hk_coordinator_should_stop(c)) test_sleep_real_ms(1);
  hk_coordinator_request_stop(c, HK_INTERNAL, "worker thread failed while stopping");
}

static hk_code start_failing_thread(spy_hook *spy, spy_slot slot, void *arg, hk_status *st) {
  (void)arg;
  if (slot != SPY_AFTER_CREATE) return HK_OK;
  return hk_coordinator_start_thread(spy->coord, "failing_on_stop", failing_on_stop_thread, NULL, st);
}

/*
 * C29 + H15(1) + D11: close() requests a clean stop, joins the registered
 * threads, and returns the coordinator's recorded error. close() reads the
 * recorded error after the stop request and the join, so an error a thread
 * reports while it is being stopped (TF's coord.join re-raises it) is
 * returned.
 */
static void test_session__error_reported_during_join_is_returned(void **state) {
  fixture *f = *state;
  hk_code rc;
  f->a->action = start_failing_thread;
  session_fixture_open(f);
  assert_ok(session_fixture_run_train(f), &f->st);
  assert_false(hk_session_should_stop(f->s));
  rc = hk_session_close(f->s, HK_OK, &f->st);
  /* The error was recorded before close() returned. */
  assert_int_equal(hk_coordinator_error(NULL, hk_session_coordinator(f->s)), HK_INTERNAL);
  assert_status(rc, &f->st, HK_INTERNAL, "worker thread failed while stopping");
}

/* ---- H15, C28, H19, D7, H3, H1: failed state, close, run arguments ------ */

/* H15 precedence (3) before (4): the failed-state error beats the status passed in. */
static void test_session__close_returns_the_failed_state_error_before_its_argument(void **state) {
  fixture *f = *state;
  f->opts.recovery_max_attempts = 1;
  session_fixture_open(f);
  fake_executor_fail(f->fx, FAKE_RUN, 1, FAKE_FOREVER, HK_ABORTED, "preempted forever");
  /* Attempt 1 re-creates (the default init runs through the executor: it fails too). */
  assert_status(session_fixture_run_train(f), &f->st, HK_ABORTED, "gave up after");
  assert_true(hk_session_should_stop(f->s));
  assert_status(hk_session_close(f->s, HK_DATA_LOSS, &f->st), &f->st, HK_ABORTED, "gave up after");
  assert_int_equal(f->a->calls[SPY_END], 0);
}

/* C28: a before_run error is also substituted by a recorded preemption error, and the MS recovers (C38). */
static void test_session__a_before_run_error_is_replaced_by_a_preemption_and_recovered(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  spy_hook_fail(f->b, SPY_BEFORE_RUN, 1, 1, HK_INTERNAL, "b broke");
  hk_coordinator_request_stop(hk_session_coordinator(f->s), HK_UNAVAILABLE, "ps went away");
  assert_ok(session_fixture_run_train(f), &f->st);
  assert_int_equal(f->a->calls[SPY_AFTER_CREATE], 2);
  assert_int_equal(fake_executor_op_runs(f->fx, f->train), 1);
  assert_logged(f->te, HK_LOG_WARNING, "An error was raised. This may be due to a preemption");
}

/* H19: close() from inside a hook is refused; D7: a second close logs nothing above DEBUG. */
static hk_code close_from_after_run(spy_hook *spy, spy_slot slot, void *arg, hk_status *st) {
  fixture *f = spy->action_user;
  (void)arg;
  (void)st;
  if (slot == SPY_AFTER_RUN) {
    hk_status inner = HK_STATUS_INIT;
    f->aux = (int)hk_session_close(f->s, HK_OK, &inner);
  }
  return HK_OK;
}

/* H19, D7: close() from inside a hook is refused, and a later second close() does nothing. */
static void test_session__close_from_a_hook_is_refused_and_a_second_close_is_a_no_op(void **state) {
  fixture *f = *state;
  size_t before;
  f->b->action = close_from_after_run;
  session_fixture_open(f);
  assert_ok(session_fixture_run_train(f), &f->st);
  assert_int_equal(f->aux, HK_FAILED_PRECONDITION);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  before = (size_t)test_log_count(&f->te->log, -1, NULL) - (size_t)test_log_count(&f->te->log, HK_LOG_DEBUG, NULL);
  assert_ok(hk_session_close(f->s, HK_INTERNAL, &f->st), &f->st);
  assert_int_equal(f->st.code, HK_OK);
  assert_int_equal(
      (size_t)test_log_count(&f->te->log, -1, NULL) - (size_t)test_log_count(&f->te->log, HK_LOG_DEBUG, NULL), before);
  assert_int_equal(f->a->calls[SPY_END], 1);
}

/* H3: bad run arguments are refused before any hook runs; NULL status is safe. */
static void test_session__bad_run_arguments_are_refused_before_any_hook(void **state) {
  fixture *f = *state;
  hk_run_options bad = HK_RUN_OPTIONS_INIT;
  hk_run_metadata md = HK_RUN_METADATA_INIT;
  hk_run_args args;
  session_fixture_open(f);
  memset(&args, 0, sizeof(args));
  args.nfetches = 1;
  assert_status(hk_session_run(f->s, &args, NULL, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "fetches");
  args.nfetches = 0;
  args.options = &bad;
  bad.trace_level = 4;
  assert_status(hk_session_run(f->s, &args, NULL, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "trace_level");
  bad.trace_level = 0;
  bad.timeout_ms = -1;
  assert_status(hk_session_run(f->s, &args, NULL, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "timeout_ms");
  args.options = NULL;
  md.version = 0;
  assert_status(hk_session_run(f->s, &args, NULL, &md, &f->st), &f->st, HK_INVALID_ARGUMENT, "metadata");
  args.fetches = &f->x;
  args.nfetches = 1;
  assert_status(hk_session_run(f->s, &args, NULL, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "results");
  assert_int_equal(f->a->calls[SPY_BEFORE_RUN], 0);
  /* NULL statuses everywhere. */
  assert_int_equal(hk_session_run(f->s, &args, NULL, NULL, NULL), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_session_run_step_fn(f->s, NULL, NULL, NULL), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_session_close(NULL, HK_OK, NULL), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_session_close(f->s, HK_OK, NULL), HK_OK);
}

/* H1: a hook that fails without writing its status still yields a named, non-empty message. */
static hk_code silent_after_run(spy_hook *spy, spy_slot slot, void *arg, hk_status *st) {
  (void)spy;
  (void)arg;
  (void)st;
  return slot == SPY_AFTER_RUN ? HK_UNKNOWN : HK_OK;
}

/* H1: a hook that fails without writing its status gets a message naming the hook and callback. */
static void test_session__a_hook_failing_without_a_message_is_named(void **state) {
  fixture *f = *state;
  f->c->action = silent_after_run;
  session_fixture_open(f);
  assert_status(session_fixture_run_train(f), &f->st, HK_UNKNOWN, "'c'");
}

/*
 * H11 + hk_hook_free ("Must not be attached to a live session"): close()
 * detaches the hooks (so that they may serve another session), so a hook
 * may be freed between close() and hk_session_free(): the session's
 * destruction touches no hook after close() (a use-after-free here is what
 * ASan and valgrind would report; without them the test passes silently).
 */
static void test_session__hook_freed_after_close_before_session_free(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  spy_hook_release(f->a); /* hk_hook_free: the hook is no longer attached */
  hk_session_free(f->s);  /* must not touch the freed hook */
  f->s = NULL;
}

/* ---- main --------------------------------------------------------------- */

int main(void) {
  const struct CMUnitTest tests[] = {
      BOTH(test_session__a_clean_close_calls_every_end_in_order),
      BOTH(test_session__a_close_with_an_error_calls_no_end),
      BOTH(test_session__a_failing_end_skips_later_ends_and_close_completes),
      BOTH(test_session__end_returning_ok_with_a_filled_status_is_ok),
      BOTH(test_session__the_raw_session_and_graph_accessors_return_null_after_close),
      BOTH(test_session__should_stop_follows_a_hook_s_stop_request),
      BOTH(test_session__should_stop_is_true_after_close),
      BOTH(test_session__a_thread_s_error_stops_the_session_and_close_returns_it),
      SMS(test_session__a_singular_session_replaces_run_errors_by_a_recorded_preemption),
      BOTH(test_session__a_recorded_non_preemption_error_replaces_no_run_error),
      BOTH(test_session__close_ends_hooks_stops_joins_then_closes_the_raw_session),
      BOTH(test_session__close_warns_about_a_stuck_thread_after_the_grace_period),
      BOTH(test_session__close_does_not_wait_for_finished_threads),
      BOTH(test_session__a_preemption_closing_the_raw_session_is_logged_not_returned),
      BOTH(test_session__other_errors_closing_the_raw_session_are_logged_at_error),
      BOTH(test_session__close_with_out_of_range_is_clean),
      BOTH(test_session__close_with_cancelled_without_a_stop_is_not_clean),
      BOTH(test_session__close_with_cancelled_after_a_clean_stop_is_clean),
      BOTH(test_session__close_with_cancelled_after_a_hook_s_stop_is_not_clean),
      BOTH(test_session__close_with_an_unknown_code_is_not_clean),
      BOTH(test_session__close_returns_the_coordinator_error_before_an_end_error),
      BOTH(test_session__a_monitored_session_does_not_return_a_recorded_preemption),
      BOTH(test_session__out_of_range_from_run_is_returned_without_recovery),
      BOTH(test_session__calls_after_close_are_refused_and_a_second_close_is_a_no_op),
      BOTH(test_session__a_stop_from_another_thread_stops_the_session),
      BOTH(test_session__an_error_from_another_thread_stops_the_session),
      BOTH(test_session__calls_from_inside_a_hook_are_refused),
      BOTH(test_session__free_without_close_closes_as_cancelled),
      BOTH(test_session__free_after_a_clean_stop_runs_every_end),
      MS(test_session__hook_destroy_once),
      BOTH(test_session__a_signal_is_a_clean_stop),
      BOTH(test_session__error_reported_during_join_is_returned),
      MS(test_session__close_returns_the_failed_state_error_before_its_argument),
      MS(test_session__a_before_run_error_is_replaced_by_a_preemption_and_recovered),
      MS(test_session__close_from_a_hook_is_refused_and_a_second_close_is_a_no_op),
      SMS(test_session__bad_run_arguments_are_refused_before_any_hook),
      MS(test_session__a_hook_failing_without_a_message_is_named),
      SMS(test_session__hook_freed_after_close_before_session_free),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
