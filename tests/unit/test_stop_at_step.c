/*
 * Tests of StopAtStepHook (contract group I: C80–C85, D8, D13), driven
 * through real sessions over the scripted fake executor, whose runs evaluate
 * every fetch before any target (so a fetched GS is the stale value, H29).
 */
#include "session_fixture.h"

#include <stdlib.h>
#include <string.h>

typedef struct fixture {
  test_env *te;
  fake_executor *fx;
  hk_handle gs;
  hk_handle train;
  hk_hook *hook;
  hk_session *s;
  hk_scaffold *scaffold;
  /* init_fn script: GS value to assign at creation k (k-th call), if any */
  int64_t init_gs[4];
  int ninit_gs;
  int init_calls;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof(*f));
  assert_non_null(f);
  f->te = test_env_new();
  f->fx = fake_training_executor(f->te, NULL, &f->gs, &f->train);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  session_close_and_free(f->s);
  hk_scaffold_free(f->scaffold);
  hk_hook_free(f->hook);
  fake_executor_free(f->fx);
  test_env_free(f->te);
  free(f);
  return 0;
}

/* init_fn: assigns the scripted GS of this creation (simulates a restore). */
static hk_code scripted_init_fn(void *user, const hk_scaffold *scaffold, hk_raw_session *rs, hk_status *status) {
  fixture *f = user;
  int k = f->init_calls++;

  (void)scaffold;
  if (k >= f->ninit_gs) return HK_OK;
  return raw_session_assign_global_step(rs, f->init_gs[k], status);
}

static void script_init_gs(fixture *f, const int64_t *values, int n) {
  hk_scaffold_options so = HK_SCAFFOLD_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  int i;

  for (i = 0; i < n; i++) f->init_gs[i] = values[i];
  f->ninit_gs = n;
  so.env = &f->te->env;
  so.init_fn = scripted_init_fn;
  so.init_fn_user = f;
  assert_ok(hk_scaffold_new(&f->scaffold, &so, &st), &st);
}

static void make_hook(fixture *f, int64_t num_steps, int64_t last_step) {
  hk_stop_at_step_options o = HK_STOP_AT_STEP_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  o.num_steps = num_steps;
  o.last_step = last_step;
  assert_ok(hk_stop_at_step_hook_new(&f->hook, &o, &st), &st);
}

static hk_code open_session(fixture *f, hk_session_kind kind, hk_status *st) {
  return one_hook_session_new(&f->s, &f->te->env, kind, fake_executor_executor(f->fx), &f->hook, f->scaffold, st);
}

static hk_code run_train(fixture *f, hk_status *st) { return session_run_train(f->s, f->train, st); }

static hk_code run_noop(fixture *f, hk_status *st) { return hk_session_run(f->s, NULL, NULL, NULL, st); }

static int64_t gs_now(fixture *f) { return fake_executor_get_i64(f->fx, NULL, f->gs); }

/* ---- C80: options ------------------------------------------------------------ */

/* C80: exactly one of num_steps and last_step must be given, else INVALID_ARGUMENT. */
static void test_stop_at_step__exactly_one_of_num_steps_and_last_step(void **state) {
  hk_stop_at_step_options o = HK_STOP_AT_STEP_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_hook *h = (hk_hook *)1;
  hk_env bad_env = HK_ENV_INIT;
  (void)state;

  assert_status(hk_stop_at_step_hook_new(&h, &o, &st), &st, HK_INVALID_ARGUMENT,
                "One of num_steps or last_step must be specified.");
  assert_null(h);
  o.num_steps = 3;
  o.last_step = 5;
  assert_status(hk_stop_at_step_hook_new(&h, &o, &st), &st, HK_INVALID_ARGUMENT,
                "Only one of num_steps or last_step can be specified.");
  o.num_steps = 0; /* "given" whatever the value */
  assert_status(hk_stop_at_step_hook_new(&h, &o, &st), &st, HK_INVALID_ARGUMENT,
                "Only one of num_steps or last_step can be specified.");
  o.last_step = HK_UNSET_STEPS;
  o.num_steps = -1;
  assert_status(hk_stop_at_step_hook_new(&h, &o, &st), &st, HK_INVALID_ARGUMENT, "num_steps");
  o.num_steps = HK_UNSET_STEPS;
  o.last_step = -2;
  assert_status(hk_stop_at_step_hook_new(&h, &o, &st), &st, HK_INVALID_ARGUMENT, "last_step");
  assert_null(h);

  /* H3 */
  o.last_step = 1;
  assert_status(hk_stop_at_step_hook_new(NULL, &o, &st), &st, HK_INVALID_ARGUMENT, "out");
  assert_status(hk_stop_at_step_hook_new(&h, NULL, &st), &st, HK_INVALID_ARGUMENT,
                "One of num_steps or last_step must be specified.");
  o.version = 99;
  assert_status(hk_stop_at_step_hook_new(&h, &o, &st), &st, HK_INVALID_ARGUMENT, "version");
  o.version = HK_STOP_AT_STEP_OPTIONS_VERSION;
  bad_env.version = 0;
  o.env = &bad_env;
  assert_int_equal(hk_stop_at_step_hook_new(&h, &o, &st), HK_INVALID_ARGUMENT);
  assert_null(h);

  o.env = NULL;
  assert_ok(hk_stop_at_step_hook_new(&h, &o, &st), &st);
  assert_string_equal(hk_hook_name(h), "StopAtStepHook");
  hk_hook_free(h);
}

/* ---- C81, C143: the global step ---------------------------------------------- */

/* C81: begin() without a global step is FAILED_PRECONDITION. */
static void test_stop_at_step__begin_without_a_global_step_fails(void **state) {
  fixture *f = *state;
  fake_executor *bare = fake_executor_new(&f->te->env);
  hk_status st = HK_STATUS_INIT;
  hk_session *s = (hk_session *)1;

  make_hook(f, 10, HK_UNSET_STEPS);
  assert_status(
      one_hook_session_new(&s, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(bare), &f->hook, NULL, &st),
      &st, HK_FAILED_PRECONDITION, "Global step should be created to use StopAtStepHook.");
  assert_null(s);
  assert_int_equal(fake_executor_sessions_opened(bare), 0); /* C2 */
  fake_executor_free(bare);
}

/* C143: a global step that is not an integer scalar is refused. */
static void test_stop_at_step__a_global_step_of_the_wrong_type_is_refused(void **state) {
  fixture *f = *state;
  fake_executor *fx = fake_executor_new(&f->te->env);
  hk_status st = HK_STATUS_INIT;
  hk_session *s = NULL;
  hk_handle v = fake_executor_add_variable(fx, "global_step", HK_DTYPE_F32, 0, NULL, 0, NULL);

  (void)v;
  make_hook(f, 10, HK_UNSET_STEPS);
  assert_status(
      one_hook_session_new(&s, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(fx), &f->hook, NULL, &st), &st,
      HK_INVALID_ARGUMENT, "Existing \"global_step\" does not have integer type");
  assert_null(s);
  fake_executor_free(fx);
}

/* ---- C83, C84: fetch and confirming read --------------------------------------- */

/* C84: the session stops after the step that brings the global step to last_step. */
static void test_stop_at_step__stops_at_last_step_with_train_op(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;

  make_hook(f, HK_UNSET_STEPS, 3);
  assert_ok(open_session(f, HK_SESSION_MONITORED, &st), &st);
  assert_false(hk_session_should_stop(f->s));
  assert_ok(run_train(f, &st), &st);
  assert_false(hk_session_should_stop(f->s));
  assert_ok(run_train(f, &st), &st);
  assert_false(hk_session_should_stop(f->s));
  assert_ok(run_train(f, &st), &st);
  assert_true(hk_session_should_stop(f->s));
  assert_int_equal(gs_now(f), 3);
  assert_status(run_train(f, &st), &st, HK_FAILED_PRECONDITION, "Run called even after should_stop requested.");
  assert_int_equal(fake_executor_op_runs(f->fx, f->train), 3);
}

/* C83, C84: before_run always fetches the global step, and after_run reads it again only near last_step. */
static void test_stop_at_step__fetches_the_step_and_rereads_it_only_near_the_end(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_handle x = fake_executor_add_i64(f->fx, "x", 7);
  hk_run_args args = {NULL, 0, &x, 1, &f->train, 1, NULL};
  hk_tensor out;
  const fake_run_record *rec;
  int64_t xv;

  make_hook(f, HK_UNSET_STEPS, 10);
  assert_ok(open_session(f, HK_SESSION_MONITORED, &st), &st);

  /* Far from the end: one executor run per step, the caller's fetch then GS (C8, C83). */
  fake_executor_reset_calls(f->fx);
  assert_ok(hk_session_run(f->s, &args, &out, NULL, &st), &st);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 1);
  rec = fake_executor_last_run(f->fx);
  assert_int_equal(rec->nfetches, 2);
  assert_true(rec->fetches[0] == x);
  assert_true(rec->fetches[1] == f->gs);
  assert_int_equal(out.dtype, HK_DTYPE_I64);
  memcpy(&xv, out.data, sizeof(xv)); /* executor views need not be aligned */
  assert_int_equal(xv, 7);

  /* stale 8: 8 + 1 < 10, no confirming read. */
  fake_executor_set_i64(f->fx, NULL, f->gs, 8);
  fake_executor_reset_calls(f->fx);
  assert_ok(run_train(f, &st), &st);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 1);
  assert_false(hk_session_should_stop(f->s));

  /* stale 9: 9 + 1 >= 10, so GS is read again (10) and the hook stops. */
  assert_int_equal(gs_now(f), 9);
  fake_executor_reset_calls(f->fx);
  assert_ok(run_train(f, &st), &st);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 2);
  assert_true(hk_session_should_stop(f->s));
}

/* C85: last_step 10, no-op steps, GS assigned through the raw session. */
static void run_a_no_op_step_with_global_step_set_to(fixture *f, int64_t gs_value, int expect_stop) {
  hk_status st = HK_STATUS_INIT;
  hk_raw_session *rs;
  size_t index;
  int64_t value = gs_value;
  hk_tensor t = hk_tensor_scalar_i64(&value);

  make_hook(f, HK_UNSET_STEPS, 10);
  assert_ok(open_session(f, HK_SESSION_SINGULAR, &st), &st);
  rs = hk_session_raw_session(f->s);
  assert_non_null(rs);
  assert_ok(hk_executor_global_step(NULL, &index, hk_raw_session_executor(rs), &st), &st);
  assert_ok(hk_raw_session_assign_variable(rs, index, &t, &st), &st);

  fake_executor_reset_calls(f->fx);
  assert_ok(run_noop(f, &st), &st);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 2); /* stale + 1 >= 10: the re-read happened */
  assert_int_equal(hk_session_should_stop(f->s), expect_stop);
  assert_int_equal(fake_executor_op_runs(f->fx, f->train), 0);
}

/* C85: with last_step 10, a global step set externally to 9 does not stop the session. */
static void test_stop_at_step__a_step_set_to_9_below_last_step_10_does_not_stop(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  run_a_no_op_step_with_global_step_set_to(f, 9, 0);
  /* Another no-op step still sees 9: no stop, the run keeps working. */
  assert_ok(run_noop(f, &st), &st);
  assert_false(hk_session_should_stop(f->s));
}

/* C85: with last_step 10, a global step set externally to 10 stops the session. */
static void test_stop_at_step__a_step_set_to_last_step_10_stops(void **state) {
  run_a_no_op_step_with_global_step_set_to(*state, 10, 1);
}

/* C85: with last_step 10, a global step set externally to 11 stops the session. */
static void test_stop_at_step__a_step_set_past_last_step_10_stops(void **state) {
  run_a_no_op_step_with_global_step_set_to(*state, 11, 1);
}

/* ---- D8: stop before the first step --------------------------------------------- */

/* D8: num_steps 0 stops the session before the first step. */
static void test_stop_at_step__num_steps_zero_stops_before_any_step(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;

  make_hook(f, 0, HK_UNSET_STEPS);
  assert_ok(open_session(f, HK_SESSION_MONITORED, &st), &st);
  assert_true(hk_session_should_stop(f->s));
  assert_logged(f->te, HK_LOG_INFO, "Global step 0 already reached last step 0; stopping before the first step.");
  fake_executor_reset_calls(f->fx);
  assert_status(run_train(f, &st), &st, HK_FAILED_PRECONDITION, "Run called even after should_stop requested.");
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 0);
  assert_int_equal(fake_executor_op_runs(f->fx, f->train), 0);
}

/* D8: a session restored at a global step past last_step stops before the first step. */
static void test_stop_at_step__a_restored_step_past_last_step_stops_before_any_step(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  const int64_t restored[] = {7};

  script_init_gs(f, restored, 1);
  make_hook(f, HK_UNSET_STEPS, 5);
  assert_ok(open_session(f, HK_SESSION_SINGULAR, &st), &st);
  assert_true(hk_session_should_stop(f->s));
  assert_logged(f->te, HK_LOG_INFO, "Global step 7 already reached last step 5; stopping before the first step.");
  assert_status(run_noop(f, &st), &st, HK_FAILED_PRECONDITION, "Run called even after should_stop requested.");
}

/* D8: a last_step not yet reached at creation neither stops nor logs. */
static void test_stop_at_step__a_last_step_not_reached_neither_stops_nor_logs(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  const int64_t restored[] = {4};

  script_init_gs(f, restored, 1);
  make_hook(f, HK_UNSET_STEPS, 5);
  assert_ok(open_session(f, HK_SESSION_SINGULAR, &st), &st);
  assert_false(hk_session_should_stop(f->s));
  assert_int_equal(test_log_count(&f->te->log, -1, "already reached last step"), 0);
  assert_ok(run_train(f, &st), &st);
  assert_true(hk_session_should_stop(f->s));
  assert_int_equal(gs_now(f), 5);
}

/* ---- D13: what num_steps counts from -------------------------------------------- */

/* D13: num_steps counts from the global step the session starts at, restored ones included. */
static void test_stop_at_step__num_steps_counts_from_the_restored_step(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  const int64_t restored[] = {5};

  script_init_gs(f, restored, 1);
  make_hook(f, 2, HK_UNSET_STEPS);
  assert_ok(open_session(f, HK_SESSION_MONITORED, &st), &st);
  assert_false(hk_session_should_stop(f->s));
  assert_ok(run_train(f, &st), &st);
  assert_false(hk_session_should_stop(f->s));
  assert_int_equal(gs_now(f), 6);
  assert_ok(run_train(f, &st), &st);
  assert_true(hk_session_should_stop(f->s));
  assert_int_equal(gs_now(f), 7);
}

/* D13, D2: a re-created session (GS restarting at 1) keeps last_step = 0 + 3. */
static void test_stop_at_step__a_recreated_session_keeps_last_step(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  const int64_t per_creation[] = {0, 1};

  script_init_gs(f, per_creation, 2);
  make_hook(f, 3, HK_UNSET_STEPS);
  assert_ok(open_session(f, HK_SESSION_MONITORED, &st), &st);
  assert_ok(run_train(f, &st), &st);
  assert_ok(run_train(f, &st), &st);
  assert_int_equal(gs_now(f), 2);
  assert_false(hk_session_should_stop(f->s));

  /* The next executor run is preempted: the MS re-creates (init_fn sets GS 1)
   * and runs the whole call again (GS 2). */
  fake_executor_fail(f->fx, FAKE_RUN, 1, 1, HK_ABORTED, "preempted by test");
  assert_ok(run_train(f, &st), &st);
  assert_int_equal(fake_executor_sessions_opened(f->fx), 2);
  assert_int_equal(f->init_calls, 2);
  assert_int_equal(gs_now(f), 2);
  assert_false(hk_session_should_stop(f->s));

  /* GS 3 reaches the original last_step 3 (a recomputed one would be 4). */
  assert_ok(run_train(f, &st), &st);
  assert_int_equal(gs_now(f), 3);
  assert_true(hk_session_should_stop(f->s));
}

/* D8 applies in every after_create_session, re-creations included. */
static void test_stop_at_step__stopping_before_a_step_applies_after_recreation(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  const int64_t per_creation[] = {0, 5};

  script_init_gs(f, per_creation, 2);
  make_hook(f, 2, HK_UNSET_STEPS);
  assert_ok(open_session(f, HK_SESSION_MONITORED, &st), &st);
  assert_false(hk_session_should_stop(f->s));
  fake_executor_fail(f->fx, FAKE_RUN, 1, 1, HK_UNAVAILABLE, "preempted by test");
  (void)run_train(f, &st); /* what the interrupted call returns is the session's business */
  assert_int_equal(fake_executor_sessions_opened(f->fx), 2);
  assert_logged(f->te, HK_LOG_INFO, "Global step 5 already reached last step 2; stopping before the first step.");
  assert_true(hk_session_should_stop(f->s));
}

/* H11, D13: a hook reused by a later session starts over from that session's first creation. */
static void test_stop_at_step__a_reused_hook_computes_last_step_again(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;

  make_hook(f, 2, HK_UNSET_STEPS);
  assert_ok(open_session(f, HK_SESSION_MONITORED, &st), &st);
  assert_ok(run_train(f, &st), &st);
  assert_ok(run_train(f, &st), &st);
  assert_true(hk_session_should_stop(f->s));
  assert_ok(hk_session_close(f->s, HK_OK, &st), &st);
  hk_session_free(f->s);
  f->s = NULL;

  assert_ok(open_session(f, HK_SESSION_MONITORED, &st), &st);
  assert_false(hk_session_should_stop(f->s));
  assert_ok(run_train(f, &st), &st);
  assert_false(hk_session_should_stop(f->s));
  assert_ok(run_train(f, &st), &st);
  assert_true(hk_session_should_stop(f->s));
}

/* C84, H29: with the embedded reference executor the stale GS of a step that
 * increments it is the pre-step value, so the confirming read happens only
 * on the last step and the hook stops exactly at last_step. */
static void test_stop_at_step__on_the_graph_executor_rereads_only_at_the_last_step(void **state) {
  fixture *f = *state;
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_session_options so = HK_SESSION_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_graph *g = NULL;
  hk_session *s = NULL;
  hk_handle gs, one, train;
  int64_t one_value = 1, value = -1;
  hk_tensor one_t = hk_tensor_scalar_i64(&one_value);
  hk_run_args args = {NULL, 0, NULL, 0, NULL, 1, NULL};
  int i;

  go.env = &f->te->env;
  assert_ok(hk_graph_new(&g, &go, &st), &st);
  assert_ok(hk_graph_create_global_step(g, &gs, &st), &st);
  assert_ok(hk_graph_constant(g, &one, "one", &one_t, &st), &st);
  assert_ok(hk_graph_assign_add(g, &train, "train", gs, one, &st), &st);
  args.targets = &train;

  make_hook(f, HK_UNSET_STEPS, 4);
  so.env = &f->te->env;
  so.kind = HK_SESSION_SINGULAR;
  so.executor = hk_graph_executor(g);
  so.hooks = &f->hook;
  so.nhooks = 1;
  assert_ok(hk_session_new(&s, &so, &st), &st);
  for (i = 0; i < 4; i++) {
    assert_false(hk_session_should_stop(s));
    assert_ok(hk_session_run(s, &args, NULL, NULL, &st), &st);
  }
  assert_true(hk_session_should_stop(s));
  assert_ok(hk_raw_session_global_step(&value, hk_session_raw_session(s), &st), &st);
  assert_int_equal(value, 4);
  assert_status(hk_session_run(s, &args, NULL, NULL, &st), &st, HK_FAILED_PRECONDITION,
                "Run called even after should_stop requested.");
  assert_ok(hk_session_close(s, HK_OK, &st), &st);
  hk_session_free(s);
  hk_graph_free(g);
}

/* H7: the hook allocates nothing per step (the fake executor never uses the env allocator). */
static void test_stop_at_step__allocates_nothing_per_step(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  int i;

  make_hook(f, 100, HK_UNSET_STEPS);
  assert_ok(open_session(f, HK_SESSION_MONITORED, &st), &st);
  assert_ok(run_train(f, &st), &st);
  assert_ok(run_train(f, &st), &st);
  test_alloc_reset_counts(&f->te->alloc);
  for (i = 0; i < 10; i++) assert_ok(run_train(f, &st), &st);
  assert_int_equal(test_alloc_count(&f->te->alloc), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stop_at_step__exactly_one_of_num_steps_and_last_step),
      cmocka_unit_test_setup_teardown(test_stop_at_step__begin_without_a_global_step_fails, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stop_at_step__a_global_step_of_the_wrong_type_is_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stop_at_step__stops_at_last_step_with_train_op, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stop_at_step__fetches_the_step_and_rereads_it_only_near_the_end, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_stop_at_step__a_step_set_to_9_below_last_step_10_does_not_stop, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_stop_at_step__a_step_set_to_last_step_10_stops, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stop_at_step__a_step_set_past_last_step_10_stops, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stop_at_step__num_steps_zero_stops_before_any_step, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stop_at_step__a_restored_step_past_last_step_stops_before_any_step, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_stop_at_step__a_last_step_not_reached_neither_stops_nor_logs, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_stop_at_step__num_steps_counts_from_the_restored_step, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stop_at_step__a_recreated_session_keeps_last_step, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stop_at_step__stopping_before_a_step_applies_after_recreation, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_stop_at_step__a_reused_hook_computes_last_step_again, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stop_at_step__on_the_graph_executor_rereads_only_at_the_last_step, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_stop_at_step__allocates_nothing_per_step, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
