/*
 * Adversarial review of the session core (session.c, session_manager.c,
 * scaffold.c, executor.c, hook.c, common.c) against the contract.
 *
 * Each test names the clause it checks. Tests in the first part demonstrate
 * deviations: they assert what the contract requires, so they fail against
 * code that deviates. Tests in the second part pin down behaviour the review
 * checked and found correct but that the other suites do not cover.
 */
#include "session_fixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef session_fixture fixture;

static int setup_kind(void **state, hk_session_kind kind)
{
  fixture *f = session_fixture_new(kind, 3);
  f->x = fake_executor_add_i64(f->fx, "x", 7);
  *state = f;
  return 0;
}

static int setup_ms(void **state) { return setup_kind(state, HK_SESSION_MONITORED); }
static int setup_sms(void **state) { return setup_kind(state, HK_SESSION_SINGULAR); }

/* Create f->scaffold from *so on the fixture's env and register it in the session options. */
static void use_scaffold(fixture *f, hk_scaffold_options *so)
{
  so->env = &f->te->env;
  assert_ok(hk_scaffold_new(&f->scaffold, so, &f->st), &f->st);
  f->opts.scaffold = f->scaffold;
}

/* ======================================================================= */
/* Part 1: deviations                                                       */
/* ======================================================================= */

/* An init_fn that fails without writing its status (the status may even be
 * NULL: hk_session_manager_prepare_session accepts a NULL status). */
static hk_code init_fn_silent_failure(void *user, const hk_scaffold *scaffold, hk_raw_session *session,
                                      hk_status *status)
{
  int *calls = user;
  (void)scaffold;
  (void)session;
  (void)status;
  (*calls)++;
  return HK_INTERNAL;
}

static hk_code init_fn_silent_preemption(void *user, const hk_scaffold *scaffold, hk_raw_session *session,
                                         hk_status *status)
{
  int *calls = user;
  (void)scaffold;
  (void)session;
  (void)status;
  (*calls)++;
  return HK_UNAVAILABLE;
}

/*
 * H1 + C59/C66: a callback's non-OK code reaches the caller, and a non-OK
 * status always carries a non-empty message. prepare_session returns
 * init_fn's code but leaves the caller's status as it found it (OK, empty),
 * so code and status disagree. Hook callbacks, the creator and step_fn are
 * normalized by callback_result(); init_fn is not.
 */
static void test_review__h1_c59_init_fn_failure_without_status_prepare(void **state)
{
  fixture *f = *state;
  hk_session_manager_options mo;
  hk_prepare_options po = HK_PREPARE_OPTIONS_INIT;
  int calls = 0;
  hk_code rc;

  hk_session_manager_options_init(&mo, HK_SESSION_MANAGER_OPTIONS_VERSION);
  mo.env = &f->te->env;
  mo.executor = f->ex;
  assert_ok(hk_session_manager_new(&f->sm, &mo, &f->st), &f->st);
  po.init_fn = init_fn_silent_failure;
  po.init_fn_user = &calls;
  hk_status_clear(&f->st);
  rc = hk_session_manager_prepare_session(f->sm, &f->rs, &po, &f->st);
  assert_int_equal(calls, 1);
  assert_int_equal(rc, HK_INTERNAL);
  assert_null(f->rs);
  assert_int_equal(fake_executor_open_sessions(f->fx), 0);
  /* The deviation: the status still says OK with an empty message. */
  assert_int_equal(f->st.code, HK_INTERNAL);
  assert_true(f->st.message[0] != '\0');
}

/* H1 through the session constructor: the code is right (finish() copies it)
 * but the message is empty. */
static void test_review__h1_c59_init_fn_failure_without_status_session(void **state)
{
  fixture *f = *state;
  hk_scaffold_options so = HK_SCAFFOLD_OPTIONS_INIT;
  int calls = 0;
  so.init_fn = init_fn_silent_failure;
  so.init_fn_user = &calls;
  use_scaffold(f, &so);
  assert_int_equal(hk_session_new(&f->s, &f->opts, &f->st), HK_INTERNAL);
  assert_null(f->s);
  assert_int_equal(calls, 1);
  assert_int_equal(f->st.code, HK_INTERNAL);
  assert_true(f->st.message[0] != '\0');
}

/*
 * D2.3, C39, H1: a preemption error from init_fn is retried; giving up
 * returns the last preemption error (same code) with " (gave up after %d
 * recovery attempts)". recover() takes the code from the status, not from
 * the return value, so a silent init_fn leaves it at HK_OK: giving up then
 * "succeeds" and hk_session_new hands out a session in the failed state
 * whose failure code is OK.
 */
static void test_review__d2_c39_init_fn_silent_preemption_gives_up(void **state)
{
  fixture *f = *state;
  hk_scaffold_options so = HK_SCAFFOLD_OPTIONS_INIT;
  int calls = 0;
  hk_code rc;
  so.init_fn = init_fn_silent_preemption;
  so.init_fn_user = &calls;
  use_scaffold(f, &so);
  f->opts.recovery_max_attempts = 2;
  rc = hk_session_new(&f->s, &f->opts, &f->st);
  /* One creation plus two recovery attempts. */
  assert_int_equal(calls, 3);
  if (rc == HK_OK) {
    /* Show what the caller got: a "session" whose run() does nothing and says OK. */
    hk_code run_rc = session_fixture_run_train(f);
    fprintf(stderr, "hk_session_new returned OK after giving up; run() returned %s, train op ran %d times\n",
            hk_code_name(run_rc), fake_executor_op_runs(f->fx, f->train));
  }
  assert_int_equal(rc, HK_UNAVAILABLE);
  assert_null(f->s);
  assert_int_equal(f->st.code, HK_UNAVAILABLE);
  assert_non_null(strstr(f->st.message, "(gave up after 2 recovery attempts)"));
}

/* A coordinator thread that, once asked to stop, fails while shutting down. */
static void failing_on_stop_thread(void *user, hk_coordinator *c)
{
  (void)user;
  while (!hk_coordinator_should_stop(c))
    test_sleep_real_ms(1);
  hk_coordinator_request_stop(c, HK_INTERNAL, "worker thread failed while stopping");
}

static hk_code start_failing_thread(spy_hook *spy, spy_slot slot, void *arg, hk_status *st)
{
  (void)arg;
  if (slot != SPY_AFTER_CREATE)
    return HK_OK;
  return hk_coordinator_start_thread(spy->coord, "failing_on_stop", failing_on_stop_thread, NULL, st);
}

/*
 * C29 + H15(1) + D11: close() requests a clean stop, joins the registered
 * threads, and returns the coordinator's recorded error. close() reads the
 * recorded error before the stop request and the join, so an error a thread
 * reports while it is being stopped (TF's coord.join re-raises it) is lost
 * and close() returns OK.
 */
static void test_review__c29_h15_error_reported_during_join_is_returned(void **state)
{
  fixture *f = *state;
  hk_code rc;
  f->a->action = start_failing_thread;
  session_fixture_open(f);
  assert_ok(session_fixture_run_train(f), &f->st);
  assert_false(hk_session_should_stop(f->s));
  rc = hk_session_close(f->s, HK_OK, &f->st);
  /* The error was recorded before close() returned. */
  assert_int_equal(hk_coordinator_error(hk_session_coordinator(f->s), NULL), HK_INTERNAL);
  assert_status(rc, &f->st, HK_INTERNAL, "worker thread failed while stopping");
}

/*
 * H3 (and the hk_session_new header: "Every option is validated before any
 * side effect: on an option error no hook runs"): a Scaffold option that is
 * already bound to another executor is refused with INVALID_ARGUMENT, but
 * only after every hook's begin() ran.
 */
static void test_review__h3_scaffold_of_other_executor_refused_before_begin(void **state)
{
  fixture *f = *state;
  hk_scaffold_options so = HK_SCAFFOLD_OPTIONS_INIT;
  f->other = fake_executor_new(&f->te->env);
  assert_non_null(f->other);
  use_scaffold(f, &so);
  assert_ok(hk_scaffold_finalize(f->scaffold, fake_executor_executor(f->other), &f->st), &f->st);
  assert_status(hk_session_new(&f->s, &f->opts, &f->st), &f->st, HK_INVALID_ARGUMENT, NULL);
  assert_null(f->s);
  assert_int_equal(fake_executor_sessions_opened(f->fx), 0);
  /* The deviation: begin() already ran on every hook. */
  assert_int_equal(f->a->calls[SPY_BEGIN], 0);
  assert_int_equal(f->b->calls[SPY_BEGIN], 0);
  assert_int_equal(f->c->calls[SPY_BEGIN], 0);
}

/*
 * C65 via C47: the chief creator builds its session manager from the
 * Scaffold's ops, so a Scaffold with a ready_for_local_init_op and no
 * local_init_op (possible with an executor that builds no defaults) must be
 * refused with C65's message. session.c instead silently drops the
 * ready_for_local_init_op, so the guard the caller gave never runs.
 */
static void test_review__c65_scaffold_ready_for_local_init_without_local_init(void **state)
{
  fixture *f = *state;
  hk_scaffold_options so = HK_SCAFFOLD_OPTIONS_INIT;
  static const char *const not_ready[] = { "global_step" };
  hk_handle init = fake_executor_add_op(f->fx, "my_init");
  hk_handle rfli = fake_executor_add_report(f->fx, "my_ready_for_local_init", FAKE_REPORT_GLOBAL);
  fake_executor_op_initializes(f->fx, init, FAKE_INIT_GLOBAL);
  fake_executor_script_report(f->fx, rfli, not_ready, 1, FAKE_FOREVER);
  fake_executor_set_unimplemented_defaults(f->fx, 1);
  so.init_op = init;
  so.ready_for_local_init_op = rfli;
  use_scaffold(f, &so);
  assert_status(hk_session_new(&f->s, &f->opts, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "If you pass a ready_for_local_init_op you must also pass a local_init_op");
  assert_null(f->s);
}

static hk_code advance_clock_on_run(void *user, fake_executor *fx, const hk_run_args *args, hk_status *status)
{
  test_env *te = user;
  (void)fx;
  (void)args;
  (void)status;
  test_clock_advance(&te->clock, 2e12);
  return HK_OK;
}

/*
 * C73 + §0 ("%d stands for a decimal integer of any width"): the deadline
 * message prints max_wait_secs with (int), which is undefined for values
 * beyond INT_MAX (x86 yields INT_MIN). A valid max_wait_secs of 1e12 must
 * read "Session was not ready after waiting 1000000000000 secs.".
 */
static void test_review__c73_deadline_message_large_max_wait(void **state)
{
  fixture *f = *state;
  hk_session_manager_options mo;
  static const char *const names[] = { "v" };
  hk_handle ready = fake_executor_add_report(f->fx, "ready", FAKE_REPORT_ALL);
  fake_executor_script_report(f->fx, ready, names, 1, FAKE_FOREVER);
  hk_session_manager_options_init(&mo, HK_SESSION_MANAGER_OPTIONS_VERSION);
  mo.env = &f->te->env;
  mo.executor = f->ex;
  mo.ready_op = ready;
  assert_ok(hk_session_manager_new(&f->sm, &mo, &f->st), &f->st);
  fake_executor_on_run(f->fx, advance_clock_on_run, f->te);
  assert_status(hk_session_manager_wait_for_session(f->sm, &f->rs, 1e12, &f->st), &f->st, HK_DEADLINE_EXCEEDED,
                "Session was not ready after waiting 1000000000000 secs.");
  assert_null(f->rs);
}

/*
 * H4: a negative, NaN or infinite duration → INVALID_ARGUMENT naming the
 * option. check_prepare() validates max_wait_secs only when
 * wait_for_checkpoint is set, so a negative or NaN value is accepted.
 */
static void test_review__h4_prepare_max_wait_secs_validated(void **state)
{
  fixture *f = *state;
  hk_session_manager_options mo;
  hk_prepare_options po = HK_PREPARE_OPTIONS_INIT;
  hk_handle init = fake_executor_add_op(f->fx, "my_init");
  fake_executor_op_initializes(f->fx, init, FAKE_INIT_GLOBAL | FAKE_INIT_LOCAL);
  hk_session_manager_options_init(&mo, HK_SESSION_MANAGER_OPTIONS_VERSION);
  mo.env = &f->te->env;
  mo.executor = f->ex;
  assert_ok(hk_session_manager_new(&f->sm, &mo, &f->st), &f->st);
  po.init_op = init;
  po.max_wait_secs = -5.0;
  assert_status(hk_session_manager_prepare_session(f->sm, &f->rs, &po, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "max_wait_secs");
  assert_null(f->rs);
  po.max_wait_secs = NAN;
  assert_status(hk_session_manager_prepare_session(f->sm, &f->rs, &po, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "max_wait_secs");
  assert_null(f->rs);
}

/*
 * H1 (the message names the offending tensor and says what is wrong) and
 * C11 7.21.6.12 (vsnprintf's buffer and arguments must not overlap):
 * hk__feeds_copy formats "%s[%zu]: %s" into st->message with st->message
 * itself as the last argument, after hk_status_setv has already cleared it.
 * The behaviour is undefined; with glibc the reason is lost.
 */
static void test_review__h1_scaffold_bad_feed_reason_kept(void **state)
{
  fixture *f = *state;
  hk_scaffold_options so = HK_SCAFFOLD_OPTIONS_INIT;
  hk_feed feed;
  int64_t v = 1;
  memset(&feed, 0, sizeof(feed));
  feed.tensor = f->x;
  feed.value = hk_tensor_scalar_i64(&v);
  feed.value.rank = HK_MAX_RANK + 1; /* invalid */
  so.env = &f->te->env;
  so.init_feed = &feed;
  so.ninit_feed = 1;
  assert_status(hk_scaffold_new(&f->scaffold, &so, &f->st), &f->st, HK_INVALID_ARGUMENT, "init_feed[0]");
  assert_null(f->scaffold);
  /* The reason hk_tensor_init gave ("rank 9 outside [0, 8]") must survive. */
  assert_non_null(strstr(f->st.message, "rank"));
}

/*
 * D8 + C26 + H12: a stop requested through the creation context in
 * after_create_session — "first and after re-creation" — makes
 * should_stop() true before any step runs. When the re-creation happens
 * inside should_stop() (C40), should_stop() returns false even though the
 * hook-stop flag is now set, so a `while (!should_stop()) run();` loop gets
 * C5's FAILED_PRECONDITION from run(). (C40 says "returns false" because TF
 * has no creation-time stop; D8 and C26 make the flag win.)
 */
static void test_review__d8_c26_should_stop_true_after_recreation_stop(void **state)
{
  fixture *f = *state;
  session_fixture_open(f);
  spy_hook_stop_at(f->a, SPY_AFTER_CREATE, 1, 1);
  hk_coordinator_request_stop(hk_session_coordinator(f->s), HK_ABORTED, "worker preempted");
  {
    int stop = hk_session_should_stop(f->s);
    assert_int_equal(f->a->calls[SPY_AFTER_CREATE], 2); /* created, then re-created once */
    if (!stop) {
      hk_code rc = session_fixture_run_train(f);
      fprintf(stderr, "should_stop() was false; the next run() returned %s \"%s\"\n", hk_code_name(rc),
              f->st.message);
    }
    assert_true(stop);
  }
}

/*
 * C10 (and C9): the conflict list names every conflicting tensor. merge_feeds
 * keeps at most MAX_CONFLICTS (16) and drops the rest silently.
 */
static void test_review__c10_all_conflicts_listed(void **state)
{
  fixture *f = *state;
  hk_handle t[17];
  hk_feed caller[17];
  int64_t vals[17];
  hk_run_args args;
  char name[16];
  int i;
  for (i = 0; i < 17; i++) {
    snprintf(name, sizeof(name), "t%02d", i);
    t[i] = fake_executor_add_i64(f->fx, name, 0);
  }
  for (i = 0; i < 16; i++)
    spy_hook_feed_i64(f->a, t[i], 1);
  spy_hook_feed_i64(f->b, t[16], 1);
  for (i = 0; i < 17; i++) {
    vals[i] = i;
    memset(&caller[i], 0, sizeof(caller[i]));
    caller[i].tensor = t[i];
    caller[i].value = hk_tensor_scalar_i64(&vals[i]);
  }
  session_fixture_open(f);
  memset(&args, 0, sizeof(args));
  args.feeds = caller;
  args.nfeeds = 17;
  assert_status(hk_session_run(f->s, &args, NULL, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "Same tensor is fed by a SessionRunHook and user. Conflict(s): [t00:0, t01:0");
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 0);
  if (strstr(f->st.message, "t15:0, t16:0]") == NULL)
    fprintf(stderr, "message: %s\n", f->st.message);
  assert_non_null(strstr(f->st.message, "t15:0, t16:0]"));
}

/*
 * H11 + hk_hook_free ("Must not be attached to a live session"): close()
 * detaches the hooks (so that they may serve another session), so a hook
 * may be freed between close() and hk_session_free(). destroy() calls
 * detach_hooks() again and reads every hook's `owner` field: a
 * use-after-free that ASan and valgrind report (this test passes silently
 * without them).
 */
static void test_review__h11_hook_freed_after_close_before_session_free(void **state)
{
  fixture *f = *state;
  session_fixture_open(f);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  spy_hook_release(f->a); /* hk_hook_free: the hook is no longer attached */
  hk_session_free(f->s);  /* must not touch the freed hook */
  f->s = NULL;
}

/* ======================================================================= */
/* Part 2: behaviour checked and found correct (not covered elsewhere)      */
/* ======================================================================= */

/* H15 precedence (3) before (4): the failed-state error beats the status passed in. */
static void test_review__h15_failed_state_error_beats_given_status(void **state)
{
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
static void test_review__c28_before_run_error_substituted_and_recovered(void **state)
{
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
static hk_code close_from_after_run(spy_hook *spy, spy_slot slot, void *arg, hk_status *st)
{
  fixture *f = spy->action_user;
  (void)arg;
  (void)st;
  if (slot == SPY_AFTER_RUN) {
    hk_status inner = HK_STATUS_INIT;
    f->aux = (int)hk_session_close(f->s, HK_OK, &inner);
  }
  return HK_OK;
}

static void test_review__h19_d7_close_from_hook_and_second_close(void **state)
{
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
  assert_int_equal((size_t)test_log_count(&f->te->log, -1, NULL) - (size_t)test_log_count(&f->te->log, HK_LOG_DEBUG, NULL),
                   before);
  assert_int_equal(f->a->calls[SPY_END], 1);
}

/* H3: bad run arguments are refused before any hook runs; NULL status is safe. */
static void test_review__h3_run_arguments_validated(void **state)
{
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
static hk_code silent_after_run(spy_hook *spy, spy_slot slot, void *arg, hk_status *st)
{
  (void)spy;
  (void)arg;
  (void)st;
  return slot == SPY_AFTER_RUN ? HK_UNKNOWN : HK_OK;
}

static void test_review__h1_hook_failure_without_status_named(void **state)
{
  fixture *f = *state;
  f->c->action = silent_after_run;
  session_fixture_open(f);
  assert_status(session_fixture_run_train(f), &f->st, HK_UNKNOWN, "'c'");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    /* Part 1: deviations */
    cmocka_unit_test_setup_teardown(test_review__h1_c59_init_fn_failure_without_status_prepare, setup_sms, session_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_review__h1_c59_init_fn_failure_without_status_session, setup_sms, session_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_review__d2_c39_init_fn_silent_preemption_gives_up, setup_ms, session_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_review__c29_h15_error_reported_during_join_is_returned, setup_sms, session_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_review__c29_h15_error_reported_during_join_is_returned, setup_ms, session_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_review__h3_scaffold_of_other_executor_refused_before_begin, setup_ms, session_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_review__c65_scaffold_ready_for_local_init_without_local_init, setup_sms, session_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_review__c73_deadline_message_large_max_wait, setup_sms, session_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_review__h4_prepare_max_wait_secs_validated, setup_sms, session_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_review__h1_scaffold_bad_feed_reason_kept, setup_sms, session_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_review__d8_c26_should_stop_true_after_recreation_stop, setup_ms, session_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_review__c10_all_conflicts_listed, setup_sms, session_fixture_teardown),
    /* Part 2: checked and correct */
    cmocka_unit_test_setup_teardown(test_review__h15_failed_state_error_beats_given_status, setup_ms, session_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_review__c28_before_run_error_substituted_and_recovered, setup_ms, session_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_review__h19_d7_close_from_hook_and_second_close, setup_ms, session_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_review__h3_run_arguments_validated, setup_sms, session_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_review__h1_hook_failure_without_status_named, setup_ms, session_fixture_teardown),
    /* Last: under ASan this use-after-free aborts the program. */
    cmocka_unit_test_setup_teardown(test_review__h11_hook_freed_after_close_before_session_free, setup_sms, session_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
