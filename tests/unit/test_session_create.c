/*
 * Sessions over the fake executor: construction and creation — the
 * arguments (H3, H10, H11), NULL slots (C1), the order of begin, finalize
 * and after_create_session (C2–C4), a stop from after_create (H12), the
 * options, init_fn failures (H1, C59, D2.3), Scaffold options (C65) and
 * the worker creator (C48, C73, H24).
 *
 * Most tests run twice, once per session kind (MS and SMS), through two
 * setups that share one fixture type (session_tests.h).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "session_tests.h"

/* ---- H3, H10, H11: construction arguments ------------------------------ */

/* H3: every bad option is INVALID_ARGUMENT before any hook runs or anything is created. */
static void test_session__bad_options_are_refused_before_any_side_effect(void **state) {
  fixture *f = *state;
  hk_session_options o;
  hk_hook *null_list[1] = {NULL};

  assert_status(hk_session_new(NULL, &f->opts, &f->st), &f->st, HK_INVALID_ARGUMENT, NULL);
  f->s = (hk_session *)&o; /* must be reset to NULL on failure */
  assert_status(hk_session_new(&f->s, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, NULL);
  assert_null(f->s);

  o = f->opts;
  o.executor = NULL;
  assert_status(hk_session_new(&f->s, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "executor");
  o = f->opts;
  o.version = 0;
  assert_status(hk_session_new(&f->s, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, NULL);
  o = f->opts;
  o.hooks = NULL; /* NULL array with a count */
  assert_status(hk_session_new(&f->s, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "hooks");
  o = f->opts;
  o.stop_grace_period_secs = -1;
  assert_status(hk_session_new(&f->s, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "stop_grace_period_secs");
  o = f->opts;
  o.kind = (hk_session_kind)7;
  assert_status(hk_session_new(&f->s, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "kind");
  o = f->opts;
  o.recovery_wait_secs = 0;
  assert_status(hk_session_new(&f->s, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "recovery_wait_secs");
  o = f->opts;
  o.hooks = null_list;
  o.nhooks = 1;
  assert_status(hk_session_new(&f->s, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, NULL);
  assert_null(f->s);
  /* H3: no hook ran, no raw session was opened, the graph is not finalized. */
  assert_int_equal(f->a->calls[SPY_BEGIN], 0);
  assert_int_equal(fake_executor_sessions_opened(f->fx), 0);
  assert_false(fake_executor_finalized(f->fx));
}

/* H11: a session's hook list may be empty. */
static void test_session__an_empty_hook_list_runs(void **state) {
  fixture *f = *state;
  hk_tensor res[1];
  hk_run_args args = {NULL, 0, &f->x, 1, &f->train, 1, NULL};
  f->opts.hooks = NULL;
  f->opts.nhooks = 0;
  session_fixture_open(f);
  assert_ok(hk_session_run(f->s, &args, res, NULL, &f->st), &f->st);
  assert_int_equal(*(int64_t *)res[0].data, 7);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
}

/* H11: a NULL entry or the same hook twice in the list is INVALID_ARGUMENT. */
static void test_session__a_null_or_repeated_hook_in_the_list_is_refused(void **state) {
  fixture *f = *state;
  hk_hook *with_null[3] = {f->a->hook, NULL, f->c->hook};
  hk_hook *dup[3] = {f->a->hook, f->b->hook, f->a->hook};
  f->opts.hooks = with_null;
  assert_status(hk_session_new(&f->s, &f->opts, &f->st), &f->st, HK_INVALID_ARGUMENT, NULL);
  assert_null(f->s);
  f->opts.hooks = dup;
  assert_status(hk_session_new(&f->s, &f->opts, &f->st), &f->st, HK_INVALID_ARGUMENT, NULL);
  assert_null(f->s);
  assert_int_equal(f->a->calls[SPY_BEGIN], 0);
  assert_int_equal(f->b->calls[SPY_BEGIN], 0);
  assert_int_equal(fake_executor_sessions_opened(f->fx), 0);
}

/* H11: a hook that serves an open session is refused by another until that one is closed. */
static void test_session__a_hook_serves_one_session_at_a_time(void **state) {
  fixture *f = *state;
  hk_session *other = NULL;
  hk_hook *just_b[1];
  session_fixture_open(f);
  spy_hook_reset(f->b);
  just_b[0] = f->b->hook;
  f->opts.hooks = just_b;
  f->opts.nhooks = 1;
  assert_status(hk_session_new(&other, &f->opts, &f->st), &f->st, HK_INVALID_ARGUMENT, NULL);
  assert_null(other);
  assert_int_equal(f->b->calls[SPY_BEGIN], 0);

  /* Once the first session is freed, the hook may serve a new one; begin() runs again. */
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  hk_session_free(f->s);
  f->s = NULL;
  assert_ok(hk_session_new(&other, &f->opts, &f->st), &f->st);
  assert_int_equal(f->b->calls[SPY_BEGIN], 1);
  assert_ok(hk_session_close(other, HK_OK, &f->st), &f->st);
  hk_session_free(other);
}

/* H10: a hook vtable with version 0 or above the current one is INVALID_ARGUMENT naming it. */
static void test_session__a_hook_vtable_of_an_unknown_version_is_refused(void **state) {
  fixture *f = *state;
  hk_hook_vtable vt = *spy_hook_vtable();
  hk_hook *h = (hk_hook *)&vt;
  (void)f;
  vt.version = 0;
  assert_status(hk_hook_new(&h, &vt, NULL, "v0", NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "vtable");
  assert_null(h);
  vt.version = HK_HOOK_VTABLE_VERSION + 1;
  assert_status(hk_hook_new(&h, &vt, NULL, "v2", NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "vtable");
  assert_status(hk_hook_new(&h, NULL, NULL, "x", NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, NULL);
}

/* ---- C1: NULL slots ----------------------------------------------------- */

/* C1: every callback slot of a hook vtable may be NULL, meaning do nothing. */
static void test_session__null_hook_slots_are_no_ops(void **state) {
  fixture *f = *state;
  static const hk_hook_vtable empty = {HK_HOOK_VTABLE_VERSION, NULL, NULL, NULL, NULL, NULL, NULL};
  hk_hook *h = NULL;
  hk_hook *list[2];
  hk_tensor res[1];
  hk_run_args args = {NULL, 0, &f->x, 1, &f->train, 1, NULL};
  assert_ok(hk_hook_new(&h, &empty, NULL, "empty", NULL, &f->st), &f->st);
  assert_string_equal(hk_hook_name(h), "empty");
  list[0] = h;
  list[1] = f->a->hook;
  f->opts.hooks = list;
  f->opts.nhooks = 2;
  session_fixture_open(f);
  assert_ok(hk_session_run(f->s, &args, res, NULL, &f->st), &f->st);
  assert_int_equal(*(int64_t *)res[0].data, 7);
  assert_int_equal(fake_executor_last_run(f->fx)->nfetches, 1);
  assert_int_equal(f->a->calls[SPY_AFTER_RUN], 1);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  hk_session_free(f->s);
  f->s = NULL;
  hk_hook_free(h);
}

/* ---- C2, C3, C4: construction ------------------------------------------ */

static hk_code check_not_finalized(spy_hook *spy, spy_slot slot, void *arg, hk_status *st) {
  fixture *f = spy->action_user;
  (void)st;
  if (slot == SPY_BEGIN) {
    f->aux += fake_executor_finalized(f->fx) ? 100 : 1;
    f->aux += fake_executor_sessions_opened(f->fx) ? 1000 : 0;
    f->aux += arg == (void *)f->ex ? 0 : 10000;
  }
  return HK_OK;
}

/* C2, C3, C4: construction calls every begin() in order, finalizes the graph, then calls every after_create_session. */
static void test_session__construction_calls_begin_finalizes_then_after_create(void **state) {
  fixture *f = *state;
  static const char *const expect[] = {
      "a.begin", "b.begin", "c.begin", "a.after_create_session", "b.after_create_session", "c.after_create_session",
  };
  f->a->action = f->b->action = f->c->action = check_not_finalized;
  assert_ok(hk_session_new(&f->s, &f->opts, &f->st), &f->st);
  assert_true(spy_log_equals(&f->log, expect, 6));
  /* C3: every begin ran before finalization and before any raw session, with the graph. */
  assert_int_equal(f->aux, 3);
  assert_true(fake_executor_finalized(f->fx));
  assert_true(hk_executor_is_finalized(f->ex));
  /* C4: after_create_session got an open raw session and the session's coordinator. */
  assert_non_null(f->a->created_session);
  assert_true(hk_raw_session_is_open(f->a->created_session));
  assert_ptr_equal(f->a->created_session, f->c->created_session);
  assert_ptr_equal(f->a->coord, hk_session_coordinator(f->s));
  assert_false(hk_coordinator_should_stop(f->a->coord));
  assert_int_equal(fake_executor_open_sessions(f->fx), 1);
  /* C23/C47: the default chief creator ran the default init op (GS initialized to 0). */
  assert_int_equal(fake_executor_get_i64(f->fx, NULL, f->gs), 0);
  assert_non_null(hk_session_scaffold(f->s));
  assert_true(hk_scaffold_is_finalized(hk_session_scaffold(f->s)));
}

/* C2: a failing begin() fails construction before any raw session is created. */
static void test_session__a_failing_begin_fails_construction(void **state) {
  fixture *f = *state;
  spy_hook_fail(f->b, SPY_BEGIN, 1, 1, HK_NOT_FOUND, "b could not resolve loss:0");
  f->s = (hk_session *)f;
  assert_status(hk_session_new(&f->s, &f->opts, &f->st), &f->st, HK_NOT_FOUND, "b could not resolve loss:0");
  assert_null(f->s);
  assert_int_equal(f->a->calls[SPY_BEGIN], 1);
  assert_int_equal(f->b->calls[SPY_BEGIN], 1);
  assert_int_equal(f->c->calls[SPY_BEGIN], 0);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_OPEN), 0);
  assert_int_equal(f->a->calls[SPY_AFTER_CREATE] + f->a->calls[SPY_END], 0);
  assert_int_equal(f->c->calls[SPY_END], 0);
  /* The hooks are free again. */
  spy_hook_reset(f->a);
  session_fixture_open(f);
}

/* C3: the graph is finalized after the begin() calls: a later change fails. */
static void test_session__changing_the_graph_after_construction_fails(void **state) {
  fixture *f = *state;
  hk_handle h = HK_NO_HANDLE;
  session_fixture_open(f);
  assert_status(hk_executor_role_add(f->ex, "init_op", f->train, &f->st), &f->st, HK_FAILED_PRECONDITION,
                "Graph is finalized and cannot be modified.");
  assert_status(hk_executor_default_op(&h, f->ex, HK_DEFAULT_INIT_OP, &f->st), &f->st, HK_FAILED_PRECONDITION, NULL);
}

/* C4: a failing after_create_session fails construction with its error. */
static void test_session__a_failing_after_create_session_fails_construction(void **state) {
  fixture *f = *state;
  spy_hook_fail(f->b, SPY_AFTER_CREATE, 1, 1, HK_INTERNAL, "b after_create failed");
  assert_status(hk_session_new(&f->s, &f->opts, &f->st), &f->st, HK_INTERNAL, "b after_create failed");
  assert_null(f->s);
  assert_int_equal(f->a->calls[SPY_AFTER_CREATE], 1);
  assert_int_equal(f->b->calls[SPY_AFTER_CREATE], 1);
  assert_int_equal(f->c->calls[SPY_AFTER_CREATE], 0);
  /* The new raw session was closed and no end() ran. */
  assert_int_equal(fake_executor_open_sessions(f->fx), 0);
  assert_int_equal(f->a->calls[SPY_END] + f->b->calls[SPY_END] + f->c->calls[SPY_END], 0);
}

/* ---- H12, C5, C20 ------------------------------------------------------- */

/* H12: a stop requested through the creation context stops the session before any run. */
static void test_session__a_stop_requested_in_after_create_session_stops_before_the_first_run(void **state) {
  fixture *f = *state;
  spy_hook_stop_at(f->b, SPY_AFTER_CREATE, 1, 1);
  session_fixture_open(f);
  assert_true(hk_session_should_stop(f->s));
  /* Hooks after the one that asked see the request; those before did not. */
  assert_false(f->a->stop_seen_in_after_create);
  assert_false(f->b->stop_seen_in_after_create);
  assert_true(f->c->stop_seen_in_after_create);
  assert_status(session_fixture_run_train(f), &f->st, HK_FAILED_PRECONDITION,
                "Run called even after should_stop requested.");
  assert_int_equal(f->a->calls[SPY_BEFORE_RUN], 0);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 0);
  /* A hook stop is not a coordinator stop. */
  assert_false(hk_coordinator_should_stop(hk_session_coordinator(f->s)));
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  assert_int_equal(f->c->calls[SPY_END], 1);
}

/* C5, C20: run() after a hook requested a stop is FAILED_PRECONDITION, and the flag stays set. */
static void test_session__run_after_a_hook_s_stop_is_refused(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  spy_hook_stop_at(f->a, SPY_AFTER_RUN, 1, 1);
  assert_ok(session_fixture_run_train(f), &f->st);
  assert_true(hk_session_should_stop(f->s));
  spy_log_clear(&f->log);
  fake_executor_reset_calls(f->fx);
  assert_status(session_fixture_run_train(f), &f->st, HK_FAILED_PRECONDITION,
                "Run called even after should_stop requested.");
  assert_int_equal(f->log.n, 0);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 0);
  /* C20: sticky. */
  assert_true(hk_session_should_stop(f->s));
  assert_status(session_fixture_run_train(f), &f->st, HK_FAILED_PRECONDITION, "should_stop");
}

/* C5, C27: a coordinator stop makes should_stop() true but does not refuse run(). */
static void test_session__a_coordinator_stop_does_not_refuse_run(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  hk_coordinator_request_stop(hk_session_coordinator(f->s), HK_OK, NULL);
  assert_true(hk_session_should_stop(f->s));
  assert_ok(session_fixture_run_train(f), &f->st);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 1);
  assert_int_equal(f->c->calls[SPY_AFTER_RUN], 1);
}

/* ---- options ------------------------------------------------------------- */

static void test_session__options_init_defaults(void **state) {
  fixture *f = *state;
  hk_session_options o;
  (void)f;
  assert_int_equal(hk_session_options_init(NULL, HK_SESSION_OPTIONS_VERSION), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_session_options_init(&o, 0), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_session_options_init(&o, HK_SESSION_OPTIONS_VERSION + 1), HK_INVALID_ARGUMENT);
  memset(&o, 0x5c, sizeof(o));
  assert_int_equal(hk_session_options_init(&o, HK_SESSION_OPTIONS_VERSION), HK_OK);
  assert_int_equal(o.version, HK_SESSION_OPTIONS_VERSION);
  assert_int_equal(o.kind, HK_SESSION_MONITORED);
  assert_null(o.executor);
  assert_null(o.hooks);
  assert_int_equal(o.nhooks, 0);
  assert_int_equal(o.is_chief, 1);
  assert_null(o.creator);
  assert_null(o.scaffold);
  assert_true(o.stop_grace_period_secs == 120.0); /* C24 */
  assert_true(o.max_wait_secs == 1800.0);         /* C48 */
  assert_true(o.recovery_wait_secs == 30.0);
  assert_true(o.recovery_initial_delay_secs == 1.0); /* D2.1 */
  assert_true(o.recovery_max_delay_secs == 60.0);
  assert_int_equal(o.recovery_max_attempts, 10);
  assert_true(o.recovery_max_secs == 0.0);
}

/* ---- init_fn failures through the session (H1, C59, D2.3, C39) ---------- */

/* Create f->scaffold from *so on the fixture's env and register it in the session options. */
static void use_scaffold(fixture *f, hk_scaffold_options *so) {
  so->env = &f->te->env;
  assert_ok(hk_scaffold_new(&f->scaffold, so, &f->st), &f->st);
  f->opts.scaffold = f->scaffold;
}

/* An init_fn that fails without writing its status. */
static hk_code init_fn_silent_failure(void *user, const hk_scaffold *scaffold, hk_raw_session *session,
                                      hk_status *status) {
  int *calls = user;
  (void)scaffold;
  (void)session;
  (void)status;
  (*calls)++;
  return HK_INTERNAL;
}

static hk_code init_fn_silent_preemption(void *user, const hk_scaffold *scaffold, hk_raw_session *session,
                                         hk_status *status) {
  int *calls = user;
  (void)scaffold;
  (void)session;
  (void)status;
  (*calls)++;
  return HK_UNAVAILABLE;
}

/*
 * H1 + C59/C66 through the session constructor: an init_fn that fails
 * without writing its status makes hk_session_new return its code with a
 * non-empty message (init_fn's result is normalized like the hooks', the
 * creator's and step_fn's).
 */
static void test_session__silent_init_fn_failure_has_a_message(void **state) {
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
 * recovery attempts)". recover() takes the code from the callback's return
 * value, so a silent init_fn still makes hk_session_new fail with
 * UNAVAILABLE (never a session in the failed state whose failure code is
 * OK).
 */
static void test_session__a_preempted_init_fn_is_retried_then_gives_up(void **state) {
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

/* ---- H3, C65: Scaffold options refused before any side effect ----------- */

/*
 * H3 (and the hk_session_new header: "Every option is validated before any
 * side effect: on an option error no hook runs"): a Scaffold option that is
 * already bound to another executor is refused with INVALID_ARGUMENT before
 * any hook's begin() runs.
 */
static void test_session__scaffold_of_other_executor_refused_before_begin(void **state) {
  fixture *f = *state;
  hk_scaffold_options so = HK_SCAFFOLD_OPTIONS_INIT;
  f->other = fake_executor_new(&f->te->env);
  assert_non_null(f->other);
  use_scaffold(f, &so);
  assert_ok(hk_scaffold_finalize(f->scaffold, fake_executor_executor(f->other), &f->st), &f->st);
  assert_status(hk_session_new(&f->s, &f->opts, &f->st), &f->st, HK_INVALID_ARGUMENT, NULL);
  assert_null(f->s);
  assert_int_equal(fake_executor_sessions_opened(f->fx), 0);
  /* No begin() ran. */
  assert_int_equal(f->a->calls[SPY_BEGIN], 0);
  assert_int_equal(f->b->calls[SPY_BEGIN], 0);
  assert_int_equal(f->c->calls[SPY_BEGIN], 0);
}

/*
 * C65 via C47: the chief creator builds its session manager from the
 * Scaffold's ops, so a Scaffold with a ready_for_local_init_op and no
 * local_init_op (possible with an executor that builds no defaults) is
 * refused with C65's message (the ready_for_local_init_op the caller gave
 * is never silently dropped).
 */
static void test_session__a_scaffold_with_ready_for_local_init_but_no_local_init_is_refused(void **state) {
  fixture *f = *state;
  hk_scaffold_options so = HK_SCAFFOLD_OPTIONS_INIT;
  static const char *const not_ready[] = {"global_step"};
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

/* ---- C48, C73, H24: the worker creator ---------------------------------- */

/* A worker fixture: no variables at all (a worker never initializes globals),
 * and a scripted ready op. */
typedef struct worker {
  fixture *f;
  hk_scaffold *scaffold;
  hk_handle ready;
  int raise_at;
  int runs;
} worker;

static void worker_setup(fixture *f, worker *w, int not_ready_times) {
  static const char *const names[] = {"w", "b"};
  hk_scaffold_options so;
  memset(w, 0, sizeof(*w));
  w->f = f;
  w->ready = fake_executor_add_report(f->fx, "worker_ready", FAKE_REPORT_ALL);
  fake_executor_script_report(f->fx, w->ready, names, 2, not_ready_times);
  hk_scaffold_options_init(&so, HK_SCAFFOLD_OPTIONS_VERSION);
  so.env = &f->te->env;
  so.ready_op = w->ready;
  assert_ok(hk_scaffold_new(&w->scaffold, &so, &f->st), &f->st);
  f->opts.scaffold = w->scaffold;
  f->opts.is_chief = 0;
  f->opts.recovery_wait_secs = 30;
}

/* C48, C73: a worker's session waits until the chief made the model ready. */
static void test_session__a_worker_waits_until_the_model_is_ready(void **state) {
  fixture *f = *state;
  worker w;
  fake_executor *plain = fake_executor_new(&f->te->env);
  /* Use an executor without variables for the worker. */
  fake_executor *keep = f->fx;
  f->fx = plain;
  f->ex = fake_executor_executor(plain);
  f->opts.executor = f->ex;
  worker_setup(f, &w, 3);
  assert_ok(hk_session_new(&f->s, &f->opts, &f->st), &f->st);
  /* Not ready for the first 3 checks: 3 waits of recovery_wait_secs, 4 sessions. */
  assert_int_equal(fake_executor_report_evals(f->fx, w.ready), 4);
  assert_int_equal(fake_executor_sessions_opened(f->fx), 4);
  assert_int_equal(fake_executor_open_sessions(f->fx), 1);
  assert_true(test_clock_total_slept(&f->te->clock) >= 90.0 - 1e-9);
  assert_true(test_clock_total_slept(&f->te->clock) <= 90.0 + 1e-9);
  assert_logged(f->te, HK_LOG_INFO, "Waiting for model to be ready.");
  assert_logged(f->te, HK_LOG_INFO, "Variables not initialized: w, b");
  assert_int_equal(f->a->calls[SPY_AFTER_CREATE], 1);
  /* C48: a worker never runs an init op (the default one was never built or run). */
  {
    hk_handle init = fake_executor_default_handle(f->fx, HK_DEFAULT_INIT_OP);
    assert_true(init == HK_NO_HANDLE || fake_executor_op_runs(f->fx, init) == 0);
  }
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  hk_session_free(f->s);
  f->s = NULL;
  hk_scaffold_free(w.scaffold);
  fake_executor_free(plain);
  f->fx = keep;
}

/* C73: a worker's wait for a ready model ends with DEADLINE_EXCEEDED at max_wait_secs. */
static void test_session__a_worker_s_wait_ends_at_its_deadline(void **state) {
  fixture *f = *state;
  worker w;
  fake_executor *plain = fake_executor_new(&f->te->env);
  fake_executor *keep = f->fx;
  f->fx = plain;
  f->ex = fake_executor_executor(plain);
  f->opts.executor = f->ex;
  worker_setup(f, &w, FAKE_FOREVER);
  f->opts.max_wait_secs = 100;
  assert_status(hk_session_new(&f->s, &f->opts, &f->st), &f->st, HK_DEADLINE_EXCEEDED,
                "Session was not ready after waiting 100 secs.");
  assert_null(f->s);
  assert_int_equal(f->a->calls[SPY_BEGIN], 1);
  assert_int_equal(f->a->calls[SPY_AFTER_CREATE], 0);
  assert_int_equal(f->a->calls[SPY_END], 0);
  assert_int_equal(fake_executor_open_sessions(f->fx), 0);
  /* It never waited beyond max_wait_secs. */
  assert_true(test_clock_total_slept(&f->te->clock) <= 100.0);
  hk_scaffold_free(w.scaffold);
  fake_executor_free(plain);
  f->fx = keep;
}

static hk_code raise_on_ready_check(void *user, fake_executor *fx, const hk_run_args *args, hk_status *st) {
  worker *w = user;
  (void)fx;
  (void)st;
  if (args->nfetches == 1 && args->fetches[0] == w->ready && ++w->runs == w->raise_at) raise(SIGINT);
  return HK_OK;
}

/* H24: a signal ends a worker's wait for a ready model with CANCELLED. */
static void test_session__a_signal_cancels_a_worker_s_wait(void **state) {
  fixture *f = *state;
  worker w;
  fake_executor *plain = fake_executor_new(&f->te->env);
  fake_executor *keep = f->fx;
  hk_status ist = HK_STATUS_INIT;
  f->fx = plain;
  f->ex = fake_executor_executor(plain);
  f->opts.executor = f->ex;
  worker_setup(f, &w, FAKE_FOREVER);
  f->opts.max_wait_secs = HK_UNSET_SECS;
  w.raise_at = 2;
  fake_executor_on_run(plain, raise_on_ready_check, &w);
  assert_ok(hk_signal_install(&ist), &ist);
  assert_status(hk_session_new(&f->s, &f->opts, &f->st), &f->st, HK_CANCELLED, "wait cancelled: stop requested");
  assert_ok(hk_signal_uninstall(&ist), &ist);
  assert_null(f->s);
  assert_int_equal(w.runs, 2);
  assert_int_equal(f->a->calls[SPY_END], 0);
  assert_int_equal(fake_executor_open_sessions(f->fx), 0);
  hk_scaffold_free(w.scaffold);
  fake_executor_free(plain);
  f->fx = keep;
}

/* ---- main --------------------------------------------------------------- */

int main(void) {
  const struct CMUnitTest tests[] = {
      BOTH(test_session__bad_options_are_refused_before_any_side_effect),
      BOTH(test_session__an_empty_hook_list_runs),
      BOTH(test_session__a_null_or_repeated_hook_in_the_list_is_refused),
      BOTH(test_session__a_hook_serves_one_session_at_a_time),
      MS(test_session__a_hook_vtable_of_an_unknown_version_is_refused),
      BOTH(test_session__null_hook_slots_are_no_ops),
      BOTH(test_session__construction_calls_begin_finalizes_then_after_create),
      BOTH(test_session__a_failing_begin_fails_construction),
      BOTH(test_session__changing_the_graph_after_construction_fails),
      BOTH(test_session__a_failing_after_create_session_fails_construction),
      BOTH(test_session__a_stop_requested_in_after_create_session_stops_before_the_first_run),
      BOTH(test_session__run_after_a_hook_s_stop_is_refused),
      BOTH(test_session__a_coordinator_stop_does_not_refuse_run),
      MS(test_session__options_init_defaults),
      MS(test_session__a_worker_waits_until_the_model_is_ready),
      MS(test_session__a_worker_s_wait_ends_at_its_deadline),
      MS(test_session__a_signal_cancels_a_worker_s_wait),
      SMS(test_session__silent_init_fn_failure_has_a_message),
      MS(test_session__a_preempted_init_fn_is_retried_then_gives_up),
      MS(test_session__scaffold_of_other_executor_refused_before_begin),
      SMS(test_session__a_scaffold_with_ready_for_local_init_but_no_local_init_is_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
