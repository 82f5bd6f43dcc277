/*
 * Session manager (group G): C65–C74 and H24, over the fake executor and
 * the mock clock.
 */
#include "session_fixture.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fixture {
  test_env *te;
  fake_executor *fx;
  hk_executor *ex;
  hk_handle gs, lv, p, init, local_init, ready, rfl;
  hk_session_manager_options mo;
  hk_session_manager *sm;
  hk_prepare_options po;
  hk_raw_session *rs;
  hk_status st;
  spy_log log;
  int init_fn_calls;
  hk_code init_fn_rc;
} fixture;

static hk_code log_runs(void *user, fake_executor *fx, const hk_run_args *args, hk_status *st) {
  fixture *f = user;
  char ev[SPY_EVENT_MAX];
  (void)fx;
  (void)st;
  if (args->ntargets > 0)
    snprintf(ev, sizeof(ev), "run:%s", hk_executor_handle_name(f->ex, args->targets[0]));
  else if (args->nfetches > 0)
    snprintf(ev, sizeof(ev), "fetch:%s", hk_executor_handle_name(f->ex, args->fetches[0]));
  else
    snprintf(ev, sizeof(ev), "run:empty");
  spy_log_add(&f->log, ev, 0);
  return HK_OK;
}

static int setup(void **state) {
  fixture *f = calloc(1, sizeof(*f));
  float zero = 0;
  f->te = test_env_new();
  f->fx = fake_gs_executor(f->te, &f->ex, &f->gs);
  f->lv = fake_executor_add_variable(f->fx, "lv", HK_DTYPE_F32, 0, NULL, HK_VAR_LOCAL, &zero);
  f->p = fake_executor_add_i64(f->fx, "p", 0);
  f->init = fake_executor_add_op(f->fx, "init");
  fake_executor_op_initializes(f->fx, f->init, FAKE_INIT_GLOBAL);
  f->local_init = fake_executor_add_op(f->fx, "local_init");
  fake_executor_op_initializes(f->fx, f->local_init, FAKE_INIT_LOCAL);
  f->ready = fake_executor_add_report(f->fx, "ready", FAKE_REPORT_ALL);
  f->rfl = fake_executor_add_report(f->fx, "ready_for_local", FAKE_REPORT_GLOBAL);
  fake_executor_on_run(f->fx, log_runs, f);
  hk_session_manager_options_init(&f->mo, HK_SESSION_MANAGER_OPTIONS_VERSION);
  f->mo.env = &f->te->env;
  f->mo.executor = f->ex;
  f->mo.local_init_op = f->local_init;
  f->mo.ready_op = f->ready;
  f->mo.ready_for_local_init_op = f->rfl;
  f->po = (hk_prepare_options)HK_PREPARE_OPTIONS_INIT;
  f->po.init_op = f->init;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  hk_raw_session_free(f->rs);
  hk_session_manager_free(f->sm);
  return fixture_release(f, f->fx, f->te);
}

static void make_sm(fixture *f) {
  assert_ok(hk_session_manager_new(&f->sm, &f->mo, &f->st), &f->st);
  assert_non_null(f->sm);
}

static hk_code init_fn(void *user, const hk_scaffold *scaffold, hk_raw_session *session, hk_status *st) {
  fixture *f = user;
  (void)scaffold;
  f->init_fn_calls++;
  spy_log_add(&f->log, "init_fn", 0);
  if (session == NULL || !hk_raw_session_is_open(session))
    return hk_status_set(st, HK_INTERNAL, "init_fn got no open session");
  if (f->init_fn_rc != HK_OK) return hk_status_set(st, f->init_fn_rc, "init_fn failed");
  return HK_OK;
}

/* ---- C65: options ------------------------------------------------------- */

/* C65: options_init refuses a NULL struct or an unknown version; new refuses bad options naming them. */
static void test_session_manager__options_init_checks_its_arguments_and_version(void **state) {
  fixture *f = *state;
  hk_session_manager_options o;
  assert_int_equal(hk_session_manager_options_init(NULL, HK_SESSION_MANAGER_OPTIONS_VERSION), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_session_manager_options_init(&o, 0), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_session_manager_options_init(&o, HK_SESSION_MANAGER_OPTIONS_VERSION), HK_OK);
  assert_true(o.recovery_wait_secs == 30.0);
  assert_int_equal(o.ready_op, HK_NO_HANDLE);

  o = f->mo;
  o.local_init_op = HK_NO_HANDLE;
  assert_status(hk_session_manager_new(&f->sm, &o, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "If you pass a ready_for_local_init_op you must also pass a local_init_op, ready_for_local_init_op [");
  assert_non_null(strstr(f->st.message, "ready_for_local"));
  assert_null(f->sm);
  o = f->mo;
  o.executor = NULL;
  assert_status(hk_session_manager_new(&f->sm, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "executor");
  o = f->mo;
  o.recovery_wait_secs = 0;
  assert_status(hk_session_manager_new(&f->sm, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "recovery_wait_secs");
  o.recovery_wait_secs = -5;
  assert_status(hk_session_manager_new(&f->sm, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "recovery_wait_secs");
  o = f->mo;
  o.nlocal_init_feed = 1;
  assert_status(hk_session_manager_new(&f->sm, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "local_init_feed");
  assert_status(hk_session_manager_new(NULL, &f->mo, &f->st), &f->st, HK_INVALID_ARGUMENT, NULL);
  assert_null(f->sm);
  hk_session_manager_free(NULL);
}

/* ---- C66: prepare_session ----------------------------------------------- */

/* C66: prepare_session tries to restore, runs init_op and init_fn, then local init and the ready check, in order. */
static void test_session_manager__prepare_session_restores_inits_then_local_inits_in_order(void **state) {
  fixture *f = *state;
  static const char *const expect[] = {
      "run:init", "init_fn", "fetch:ready_for_local:0", "run:local_init", "fetch:ready:0",
  };
  int64_t v = 9;
  hk_feed feed[1];
  memset(feed, 0, sizeof(feed));
  feed[0].tensor = f->p;
  feed[0].value = hk_tensor_scalar_i64(&v);
  f->mo.local_init_feed = feed;
  f->mo.nlocal_init_feed = 1;
  make_sm(f);
  v = 10; /* the manager copied the local init feed */
  f->po.init_fn = init_fn;
  f->po.init_fn_user = f;
  assert_ok(hk_session_manager_prepare_session(&f->rs, f->sm, &f->po, &f->st), &f->st);
  assert_non_null(f->rs);
  assert_true(spy_log_equals(&f->log, expect, 5));
  assert_int_equal(f->init_fn_calls, 1);
  assert_logged(f->te, HK_LOG_INFO, "Running local_init_op.");
  assert_logged(f->te, HK_LOG_INFO, "Done running local_init_op.");
  assert_true(fake_executor_is_initialized(f->fx, NULL, f->gs));
  assert_true(fake_executor_is_initialized(f->fx, NULL, f->lv));
  assert_int_equal(fake_executor_open_sessions(f->fx), 1);
}

/* C66: the init op runs with the init feed. */
static void test_session_manager__the_init_op_runs_with_the_init_feed(void **state) {
  fixture *f = *state;
  int64_t v = 5;
  hk_feed feed[1];
  int found = 0;
  size_t i;
  memset(feed, 0, sizeof(feed));
  feed[0].tensor = f->p;
  feed[0].value = hk_tensor_scalar_i64(&v);
  f->mo.ready_for_local_init_op = HK_NO_HANDLE;
  f->mo.local_init_op = HK_NO_HANDLE;
  f->mo.ready_op = HK_NO_HANDLE;
  make_sm(f);
  f->po.init_feed = feed;
  f->po.ninit_feed = 1;
  assert_ok(hk_session_manager_prepare_session(&f->rs, f->sm, &f->po, &f->st), &f->st);
  /* The last run was the init op with the init feed. */
  for (i = 0; i < fake_executor_last_run(f->fx)->nfeeds; i++)
    found |= fake_executor_last_run(f->fx)->feeds[i].tensor == f->p && fake_executor_last_run(f->fx)->feed_i64[i] == 5;
  assert_true(found);
  assert_int_equal(fake_executor_last_run(f->fx)->targets[0], f->init);
}

/* C66: a prepare_session that fails closes the raw session it created. */
static void test_session_manager__a_failed_prepare_closes_the_raw_session(void **state) {
  fixture *f = *state;
  make_sm(f);
  fake_executor_op_fails(f->fx, f->init, HK_INTERNAL, "init kernel failed");
  f->po.init_fn = init_fn;
  f->po.init_fn_user = f;
  f->rs = (hk_raw_session *)f;
  assert_status(hk_session_manager_prepare_session(&f->rs, f->sm, &f->po, &f->st), &f->st, HK_INTERNAL,
                "init kernel failed");
  assert_null(f->rs);
  assert_int_equal(f->init_fn_calls, 0);
  assert_int_equal(fake_executor_open_sessions(f->fx), 0);
}

/* C66: a failing init_fn fails prepare_session with its error and closes the raw session. */
static void test_session_manager__a_failing_init_fn_fails_prepare_and_closes_the_session(void **state) {
  fixture *f = *state;
  make_sm(f);
  f->po.init_fn = init_fn;
  f->po.init_fn_user = f;
  f->init_fn_rc = HK_ABORTED;
  assert_status(hk_session_manager_prepare_session(&f->rs, f->sm, &f->po, &f->st), &f->st, HK_ABORTED,
                "init_fn failed");
  assert_null(f->rs);
  assert_int_equal(fake_executor_open_sessions(f->fx), 0);
  assert_int_equal(fake_executor_op_runs(f->fx, f->local_init), 0);
}

/* C66: a raw session that cannot be opened fails prepare_session with the executor's error. */
static void test_session_manager__a_failed_open_fails_prepare(void **state) {
  fixture *f = *state;
  make_sm(f);
  fake_executor_fail(f->fx, FAKE_OPEN, 1, 1, HK_UNAVAILABLE, "no master");
  assert_status(hk_session_manager_prepare_session(&f->rs, f->sm, &f->po, &f->st), &f->st, HK_UNAVAILABLE, "no master");
  assert_null(f->rs);
}

/* ---- C67 ----------------------------------------------------------------- */

/* C67: checkpoint_dir and checkpoint_filename_with_path both set is INVALID_ARGUMENT, before a raw session exists. */
static void test_session_manager__both_checkpoint_paths_given_are_invalid_argument(void **state) {
  fixture *f = *state;
  int initialized = 7;
  make_sm(f);
  f->po.checkpoint_dir = "/tmp/ckpt";
  f->po.checkpoint_filename_with_path = "/tmp/ckpt/model.ckpt-1";
  assert_status(hk_session_manager_prepare_session(&f->rs, f->sm, &f->po, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "Can not provide both checkpoint_dir and checkpoint_filename_with_path.");
  assert_null(f->rs);
  assert_status(hk_session_manager_recover_session(&f->rs, &initialized, f->sm, &f->po, &f->st), &f->st,
                HK_INVALID_ARGUMENT, "Can not provide both checkpoint_dir and checkpoint_filename_with_path.");
  assert_null(f->rs);
  /* Checked before a raw session exists. */
  assert_int_equal(fake_executor_calls(f->fx, FAKE_OPEN), 0);
}

/* C67: without a saver nothing is restored, whatever path is given; the
 * model is initialized instead and recover_session reports it uninitialized.
 * Restoring itself is covered by test_restore. */
static void test_session_manager__no_saver_restores_nothing(void **state) {
  fixture *f = *state;
  int initialized = 1;
  make_sm(f);
  f->po.checkpoint_dir = "/nonexistent/ckpt";
  assert_ok(hk_session_manager_prepare_session(&f->rs, f->sm, &f->po, &f->st), &f->st);
  assert_non_null(f->rs);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_OPEN), 1);
  hk_raw_session_free(f->rs);
  f->rs = NULL;
  f->po.checkpoint_dir = NULL;
  f->po.checkpoint_filename_with_path = "/nonexistent/ckpt/model.ckpt-1";
  assert_ok(hk_session_manager_recover_session(&f->rs, &initialized, f->sm, &f->po, &f->st), &f->st);
  assert_non_null(f->rs);
  assert_int_equal(initialized, 0);
}

/* ---- C69, C70, C71, C72 ------------------------------------------------- */

/* C69: nothing restored and no init op, init_fn or local init op is FAILED_PRECONDITION. */
static void test_session_manager__a_model_nobody_initializes_is_failed_precondition(void **state) {
  fixture *f = *state;
  f->mo.local_init_op = HK_NO_HANDLE;
  f->mo.ready_for_local_init_op = HK_NO_HANDLE;
  make_sm(f);
  f->po.init_op = HK_NO_HANDLE;
  assert_status(hk_session_manager_prepare_session(&f->rs, f->sm, &f->po, &f->st), &f->st, HK_FAILED_PRECONDITION,
                "Model is not initialized and no init_op or init_fn or local_init_op was given");
  assert_null(f->rs);
  assert_int_equal(fake_executor_open_sessions(f->fx), 0);
}

/* C69 revised: a model whose every variable is host-owned (HK_VAR_EXTERNAL)
 * needs no init op. The executor here has no default ops, as a third-party
 * one may not: with no init_op, init_fn or local_init_op, prepare_session
 * hands out the session, logged at DEBUG — also with no variable at all —
 * and one variable that is not host-owned brings C69 back. */
static void test_session_manager__host_owned_variables_need_no_init_op(void **state) {
  fixture *f = *state;
  fake_executor *host = fake_executor_new(&f->te->env);
  hk_session_manager_options mo;
  hk_prepare_options po = HK_PREPARE_OPTIONS_INIT;
  hk_session_manager *sm = NULL;
  hk_raw_session *rs = NULL;
  const float w0[2] = {1.5f, -2.0f};
  const int64_t gs0 = 7, zero = 0, two = 2;
  hk_handle w, gs;

  assert_non_null(host);
  fake_executor_set_unimplemented_defaults(host, 1);
  hk_session_manager_options_init(&mo, HK_SESSION_MANAGER_OPTIONS_VERSION);
  mo.env = &f->te->env;
  mo.executor = fake_executor_executor(host);
  assert_ok(hk_session_manager_new(&sm, &mo, &f->st), &f->st);

  /* no variable needs initializing: none at all */
  assert_ok(hk_session_manager_prepare_session(&rs, sm, &po, &f->st), &f->st);
  assert_non_null(rs);
  hk_raw_session_free(rs);
  rs = NULL;

  /* every variable host-owned */
  w = fake_executor_add_variable(host, "w", HK_DTYPE_F32, 1, &two, HK_VAR_EXTERNAL | HK_VAR_TRAINABLE, w0);
  gs = fake_executor_add_variable(host, "global_step", HK_DTYPE_I64, 0, NULL, HK_VAR_EXTERNAL, &gs0);
  test_log_clear(&f->te->log);
  assert_ok(hk_session_manager_prepare_session(&rs, sm, &po, &f->st), &f->st);
  assert_non_null(rs);
  assert_true(fake_executor_is_initialized(host, NULL, w));
  assert_int_equal(fake_executor_get_i64(host, NULL, gs), 7);
  assert_logged(f->te, HK_LOG_DEBUG, "every variable of the executor is host-owned (HK_VAR_EXTERNAL)");
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, ""), 0);
  hk_raw_session_free(rs);
  rs = NULL;

  /* one variable that is not: C69 */
  (void)fake_executor_add_variable(host, "inner", HK_DTYPE_I64, 0, NULL, HK_VAR_TRAINABLE, &zero);
  assert_status(hk_session_manager_prepare_session(&rs, sm, &po, &f->st), &f->st, HK_FAILED_PRECONDITION,
                "Model is not initialized and no init_op or init_fn or local_init_op was given");
  assert_null(rs);
  assert_int_equal(fake_executor_open_sessions(host), 0);
  hk_session_manager_free(sm);
  fake_executor_free(host);
}

/* C69 revised, through a session: an executor without default ops whose
 * variables are all host-owned starts (C47: the chief's prepare_session
 * with the Scaffold's unset init ops) and trains. */
static void test_session_manager__a_session_over_host_owned_variables_starts(void **state) {
  fixture *f = *state;
  fake_executor *host = fake_executor_new(&f->te->env);
  const int64_t gs0 = 3;
  hk_session_options o;
  hk_session *s = NULL;
  hk_handle gs, train;

  assert_non_null(host);
  fake_executor_set_unimplemented_defaults(host, 1);
  gs = fake_executor_add_variable(host, "global_step", HK_DTYPE_I64, 0, NULL, HK_VAR_EXTERNAL, &gs0);
  fake_executor_role_register(host, HK_ROLE_GLOBAL_STEP, gs);
  train = fake_executor_add_op(host, "train");
  fake_executor_op_increments(host, train, gs, 1);
  test_session_options(&o, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(host), NULL, 0);
  assert_ok(hk_session_new(&s, &o, &f->st), &f->st);
  assert_ok(session_run_train(s, train, &f->st), &f->st);
  assert_int_equal(fake_executor_get_i64(host, NULL, gs), 4);
  assert_ok(hk_session_close(s, HK_OK, &f->st), &f->st);
  hk_session_free(s);
  fake_executor_free(host);
}

/* C70: a ready_for_local_init_op reporting not ready is FAILED_PRECONDITION and local init does not run. */
static void test_session_manager__not_ready_for_local_init_is_failed_precondition(void **state) {
  fixture *f = *state;
  hk_handle noop = fake_executor_add_op(f->fx, "noop_init");
  make_sm(f);
  f->po.init_op = noop; /* does not initialize the global step */
  assert_status(hk_session_manager_prepare_session(&f->rs, f->sm, &f->po, &f->st), &f->st, HK_FAILED_PRECONDITION,
                "Init operations did not make model ready for local_init.  Init op: ");
  assert_non_null(strstr(f->st.message, "noop_init"));
  assert_non_null(strstr(f->st.message, "init fn: "));
  assert_non_null(strstr(f->st.message, "Variables not initialized: global_step"));
  assert_int_equal(fake_executor_op_runs(f->fx, f->local_init), 0);
  assert_null(f->rs);
  assert_int_equal(fake_executor_open_sessions(f->fx), 0);
}

/* C71: a ready check that fails is FAILED_PRECONDITION "Init operations did not make model ready". */
static void test_session_manager__a_failing_ready_check_is_failed_precondition(void **state) {
  fixture *f = *state;
  static const char *const names[] = {"w1", "w2"};
  make_sm(f);
  fake_executor_script_report(f->fx, f->ready, names, 2, 1);
  assert_status(hk_session_manager_prepare_session(&f->rs, f->sm, &f->po, &f->st), &f->st, HK_FAILED_PRECONDITION,
                "Init operations did not make model ready.  Init op: ");
  assert_non_null(strstr(f->st.message, "local_init_op: "));
  assert_non_null(strstr(f->st.message, "local_init"));
  assert_non_null(strstr(f->st.message, "Variables not initialized: w1, w2"));
  assert_null(f->rs);
  assert_int_equal(fake_executor_open_sessions(f->fx), 0);
}

/* C72: a local init op without a ready_for_local_init guard that reads uninitialized variables fails prepare. */
static void test_session_manager__an_unguarded_local_init_reading_uninitialized_fails(void **state) {
  fixture *f = *state;
  hk_handle bump = fake_executor_add_op(f->fx, "bump_gs");
  fake_executor_op_increments(f->fx, bump, f->gs, 1);
  f->mo.local_init_op = bump;
  f->mo.ready_for_local_init_op = HK_NO_HANDLE;
  make_sm(f);
  f->po.init_op = HK_NO_HANDLE;
  f->po.init_fn = init_fn;
  f->po.init_fn_user = f;
  assert_status(hk_session_manager_prepare_session(&f->rs, f->sm, &f->po, &f->st), &f->st, HK_FAILED_PRECONDITION,
                "Attempting to use uninitialized value global_step");
  assert_null(f->rs);
}

/* C72: a readiness op is ready when unset or when it returns an empty list of names. */
static void test_session_manager__a_readiness_op_is_ready_when_unset_or_empty(void **state) {
  fixture *f = *state;
  static const char *const names[] = {"a", "b"};
  hk_status reason = HK_STATUS_INIT;
  int ready = -1;
  make_sm(f);
  assert_ok(hk_raw_session_open(&f->rs, f->ex, &f->st), &f->st);
  /* Unset: ready. */
  assert_ok(hk_session_manager_model_ready(f->sm, f->rs, HK_NO_HANDLE, &ready, &reason, &f->st), &f->st);
  assert_int_equal(ready, 1);
  /* Names: not ready, with the reason. */
  fake_executor_script_report(f->fx, f->ready, names, 2, 1);
  assert_ok(hk_session_manager_model_ready(f->sm, f->rs, f->ready, &ready, &reason, &f->st), &f->st);
  assert_int_equal(ready, 0);
  assert_string_equal(reason.message, "Variables not initialized: a, b");
  /* Nothing initialized: the automatic report lists both variables. */
  assert_ok(hk_session_manager_model_ready(f->sm, f->rs, f->ready, &ready, NULL, &f->st), &f->st);
  assert_int_equal(ready, 0);
  /* An empty report: ready. */
  fake_executor_script_report(f->fx, f->ready, NULL, 0, 1);
  assert_ok(hk_session_manager_model_ready(f->sm, f->rs, f->ready, &ready, &reason, &f->st), &f->st);
  assert_int_equal(ready, 1);
  /* FAILED_PRECONDITION mentioning "uninitialized": not ready, reason = the message. */
  fake_executor_fail(f->fx, FAKE_RUN, 1, 1, HK_FAILED_PRECONDITION, "Attempting to use uninitialized value v9");
  assert_ok(hk_session_manager_model_ready(f->sm, f->rs, f->ready, &ready, &reason, &f->st), &f->st);
  assert_int_equal(ready, 0);
  assert_non_null(strstr(reason.message, "Attempting to use uninitialized value v9"));
  /* Any other error is logged and returned. */
  fake_executor_fail(f->fx, FAKE_RUN, 1, 1, HK_INTERNAL, "ready op crashed");
  assert_status(hk_session_manager_model_ready(f->sm, f->rs, f->ready, &ready, &reason, &f->st), &f->st, HK_INTERNAL,
                "ready op crashed");
  assert_logged(f->te, -1, "ready op crashed");
  fake_executor_fail(f->fx, FAKE_RUN, 1, 1, HK_FAILED_PRECONDITION, "some other precondition");
  assert_status(hk_session_manager_model_ready(f->sm, f->rs, f->ready, &ready, &reason, &f->st), &f->st,
                HK_FAILED_PRECONDITION, "some other precondition");
  /* Arguments. */
  assert_status(hk_session_manager_model_ready(f->sm, NULL, f->ready, &ready, &reason, &f->st), &f->st,
                HK_INVALID_ARGUMENT, NULL);
  assert_status(hk_session_manager_model_ready(f->sm, f->rs, f->ready, NULL, &reason, &f->st), &f->st,
                HK_INVALID_ARGUMENT, NULL);
}

/* ---- C73: wait_for_session ---------------------------------------------- */

/* C73: wait_for_session creates raw sessions until the model is ready. */
static void test_session_manager__wait_for_session_retries_until_the_model_is_ready(void **state) {
  fixture *f = *state;
  static const char *const names[] = {"w"};
  fake_executor *plain;
  hk_handle ready;
  /* An executor without variables: readiness depends only on the script. */
  plain = fake_executor_new(&f->te->env);
  ready = fake_executor_add_report(plain, "ready", FAKE_REPORT_ALL);
  fake_executor_script_report(plain, ready, names, 1, 3);
  hk_session_manager_options_init(&f->mo, HK_SESSION_MANAGER_OPTIONS_VERSION);
  f->mo.env = &f->te->env;
  f->mo.executor = fake_executor_executor(plain);
  f->mo.ready_op = ready;
  f->mo.recovery_wait_secs = 10;
  make_sm(f);
  assert_ok(hk_session_manager_wait_for_session(&f->rs, f->sm, HK_UNSET_SECS, &f->st), &f->st);
  assert_non_null(f->rs);
  assert_int_equal(fake_executor_report_evals(plain, ready), 4);
  assert_int_equal(fake_executor_sessions_opened(plain), 4);
  assert_int_equal(fake_executor_open_sessions(plain), 1);
  assert_true(test_clock_total_slept(&f->te->clock) > 30 - 1e-9);
  assert_true(test_clock_total_slept(&f->te->clock) < 30 + 1e-9);
  assert_int_equal(
      test_log_count(&f->te->log, HK_LOG_INFO, "Waiting for model to be ready.  Ready_for_local_init_op:  "), 3);
  assert_logged(f->te, HK_LOG_INFO, "ready: Variables not initialized: w");
  /* H92: the end of the wait is logged, once. */
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "Model is ready after waiting 30 secs."), 1);
  hk_raw_session_free(f->rs);
  f->rs = NULL;
  hk_session_manager_free(f->sm);
  f->sm = NULL;
  fake_executor_free(plain);
}

/* C73: wait_for_session ends with DEADLINE_EXCEEDED at max_wait_secs, its last session closed. */
static void test_session_manager__wait_for_session_ends_at_its_deadline(void **state) {
  fixture *f = *state;
  f->mo.recovery_wait_secs = 30;
  make_sm(f);
  /* The worker never initializes the GS, so the model never becomes ready. */
  assert_status(hk_session_manager_wait_for_session(&f->rs, f->sm, 100, &f->st), &f->st, HK_DEADLINE_EXCEEDED,
                "Session was not ready after waiting 100 secs.");
  assert_null(f->rs);
  assert_int_equal(fake_executor_open_sessions(f->fx), 0);
  /* 100 → 70 → 40 → 10: three waits, then 10 − 30 < 0. */
  assert_int_equal(fake_executor_sessions_opened(f->fx), 4);
  assert_true(test_clock_total_slept(&f->te->clock) > 90 - 1e-9);
  assert_true(test_clock_total_slept(&f->te->clock) < 90 + 1e-9);
}

/* C73: while waiting, a local init that cannot run yet is not an error: the wait goes on. */
static void test_session_manager__a_failing_local_init_keeps_the_wait_going(void **state) {
  fixture *f = *state;
  f->mo.recovery_wait_secs = 30;
  make_sm(f);
  fake_executor_op_fails(f->fx, f->local_init, HK_INTERNAL, "local init broken");
  /* rfl reports the GS uninitialized: local init is not even attempted; errors are ignored. */
  assert_status(hk_session_manager_wait_for_session(&f->rs, f->sm, 40, &f->st), &f->st, HK_DEADLINE_EXCEEDED,
                "Session was not ready after waiting 40 secs.");
  assert_int_equal(fake_executor_open_sessions(f->fx), 0);
}

/* ---- H24: cancel ---------------------------------------------------------- */

typedef struct canceller {
  hk_session_manager *sm;
} canceller;

static void *cancel_main(void *arg) {
  canceller *c = arg;
  hk_session_manager_cancel(c->sm);
  return NULL;
}

/* H24: a cancel from another thread ends the wait for a ready model with CANCELLED. */
static void test_session_manager__a_cancel_from_another_thread_ends_the_wait(void **state) {
  fixture *f = *state;
  pthread_t th;
  canceller c;
  hk_code rc;
  make_sm(f);
  c.sm = f->sm;
  assert_int_equal(pthread_create(&th, NULL, cancel_main, &c), 0);
  /* Never ready, no limit: only the cancel ends the wait. */
  rc = hk_session_manager_wait_for_session(&f->rs, f->sm, HK_UNSET_SECS, &f->st);
  assert_int_equal(pthread_join(th, NULL), 0);
  assert_status(rc, &f->st, HK_CANCELLED, "wait cancelled: stop requested");
  assert_null(f->rs);
  assert_int_equal(fake_executor_open_sessions(f->fx), 0);
}

/* H24: a cancel ends every later wait too until the manager is reset. */
static void test_session_manager__a_cancel_stays_until_reset(void **state) {
  fixture *f = *state;
  make_sm(f);
  hk_session_manager_cancel(f->sm);
  assert_status(hk_session_manager_wait_for_session(&f->rs, f->sm, HK_UNSET_SECS, &f->st), &f->st, HK_CANCELLED,
                "wait cancelled: stop requested");
  assert_status(hk_session_manager_wait_for_session(&f->rs, f->sm, 1000, &f->st), &f->st, HK_CANCELLED,
                "wait cancelled");
  hk_session_manager_reset_cancel(f->sm);
  assert_status(hk_session_manager_wait_for_session(&f->rs, f->sm, 100, &f->st), &f->st, HK_DEADLINE_EXCEEDED, NULL);
  hk_session_manager_cancel(NULL);
}

/* ---- C74: recover_session ------------------------------------------------ */

/* C74: recover_session without a checkpoint runs local init only and reports the model not initialized. */
static void test_session_manager__recover_session_without_a_checkpoint_runs_local_init_only(void **state) {
  fixture *f = *state;
  int initialized = -1;
  f->mo.ready_for_local_init_op = HK_NO_HANDLE;
  make_sm(f);
  assert_ok(hk_session_manager_recover_session(&f->rs, &initialized, f->sm, &f->po, &f->st), &f->st);
  assert_non_null(f->rs);
  assert_int_equal(initialized, 0);
  /* Local init always runs; init_op is not run by recover_session. */
  assert_int_equal(fake_executor_op_runs(f->fx, f->local_init), 1);
  assert_int_equal(fake_executor_op_runs(f->fx, f->init), 0);
  assert_true(fake_executor_is_initialized(f->fx, NULL, f->lv));
}

/* ---- H1, C59, H4: init_fn and max_wait_secs corners ---------------------- */

/* An init_fn that fails without writing its status (the status may even be
 * NULL: hk_session_manager_prepare_session accepts a NULL status). */
static hk_code init_fn_silent_failure(void *user, const hk_scaffold *scaffold, hk_raw_session *session,
                                      hk_status *status) {
  int *calls = user;
  (void)scaffold;
  (void)session;
  (void)status;
  (*calls)++;
  return HK_INTERNAL;
}

/*
 * H1 + C59/C66: a callback's non-OK code reaches the caller, and a non-OK
 * status always carries a non-empty message. prepare_session returns
 * init_fn's code and sets the caller's status to it with a message even
 * when init_fn wrote none (init_fn's result is normalized like the hooks',
 * the creator's and step_fn's), so code and status agree.
 */
static void test_session_manager__silent_init_fn_failure_sets_status(void **state) {
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
  rc = hk_session_manager_prepare_session(&f->rs, f->sm, &po, &f->st);
  assert_int_equal(calls, 1);
  assert_int_equal(rc, HK_INTERNAL);
  assert_null(f->rs);
  assert_int_equal(fake_executor_open_sessions(f->fx), 0);
  /* The status is not left OK with an empty message. */
  assert_int_equal(f->st.code, HK_INTERNAL);
  assert_true(f->st.message[0] != '\0');
}

static hk_code advance_clock_on_run(void *user, fake_executor *fx, const hk_run_args *args, hk_status *status) {
  test_env *te = user;
  (void)fx;
  (void)args;
  (void)status;
  test_clock_advance(&te->clock, 2e12);
  return HK_OK;
}

/*
 * C73 + §0 ("%d stands for a decimal integer of any width"): the deadline
 * message prints max_wait_secs in full, never through a conversion to int
 * (undefined for values beyond INT_MAX; x86 yields INT_MIN). A valid
 * max_wait_secs of 1e12 reads "Session was not ready after waiting
 * 1000000000000 secs.".
 */
static void test_session_manager__the_deadline_message_prints_a_large_max_wait_in_full(void **state) {
  fixture *f = *state;
  hk_session_manager_options mo;
  static const char *const names[] = {"v"};
  hk_handle ready = fake_executor_add_report(f->fx, "ready_v", FAKE_REPORT_ALL);
  fake_executor_script_report(f->fx, ready, names, 1, FAKE_FOREVER);
  hk_session_manager_options_init(&mo, HK_SESSION_MANAGER_OPTIONS_VERSION);
  mo.env = &f->te->env;
  mo.executor = f->ex;
  mo.ready_op = ready;
  assert_ok(hk_session_manager_new(&f->sm, &mo, &f->st), &f->st);
  fake_executor_on_run(f->fx, advance_clock_on_run, f->te);
  assert_status(hk_session_manager_wait_for_session(&f->rs, f->sm, 1e12, &f->st), &f->st, HK_DEADLINE_EXCEEDED,
                "Session was not ready after waiting 1000000000000 secs.");
  assert_null(f->rs);
}

/*
 * H4: a negative, NaN or infinite duration → INVALID_ARGUMENT naming the
 * option. check_prepare() validates max_wait_secs also when
 * wait_for_checkpoint is not set, so a negative or NaN value is refused.
 */
static void test_session_manager__prepare_refuses_a_bad_max_wait_secs(void **state) {
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
  assert_status(hk_session_manager_prepare_session(&f->rs, f->sm, &po, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "max_wait_secs");
  assert_null(f->rs);
  po.max_wait_secs = NAN;
  assert_status(hk_session_manager_prepare_session(&f->rs, f->sm, &po, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "max_wait_secs");
  assert_null(f->rs);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_session_manager__options_init_checks_its_arguments_and_version),
      T(test_session_manager__prepare_session_restores_inits_then_local_inits_in_order),
      T(test_session_manager__the_init_op_runs_with_the_init_feed),
      T(test_session_manager__a_failed_prepare_closes_the_raw_session),
      T(test_session_manager__a_failing_init_fn_fails_prepare_and_closes_the_session),
      T(test_session_manager__a_failed_open_fails_prepare),
      T(test_session_manager__both_checkpoint_paths_given_are_invalid_argument),
      T(test_session_manager__no_saver_restores_nothing),
      T(test_session_manager__a_model_nobody_initializes_is_failed_precondition),
      T(test_session_manager__host_owned_variables_need_no_init_op),
      T(test_session_manager__a_session_over_host_owned_variables_starts),
      T(test_session_manager__not_ready_for_local_init_is_failed_precondition),
      T(test_session_manager__a_failing_ready_check_is_failed_precondition),
      T(test_session_manager__an_unguarded_local_init_reading_uninitialized_fails),
      T(test_session_manager__a_readiness_op_is_ready_when_unset_or_empty),
      T(test_session_manager__wait_for_session_retries_until_the_model_is_ready),
      T(test_session_manager__wait_for_session_ends_at_its_deadline),
      T(test_session_manager__a_failing_local_init_keeps_the_wait_going),
      T(test_session_manager__a_cancel_from_another_thread_ends_the_wait),
      T(test_session_manager__a_cancel_stays_until_reset),
      T(test_session_manager__recover_session_without_a_checkpoint_runs_local_init_only),
      T(test_session_manager__silent_init_fn_failure_sets_status),
      T(test_session_manager__the_deadline_message_prints_a_large_max_wait_in_full),
      T(test_session_manager__prepare_refuses_a_bad_max_wait_secs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
