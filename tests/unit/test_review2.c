/*
 * Adversarial review (second round) of the embedded executor, the
 * coordinator, the timer and the built-in hooks against the contract. Every
 * test here pins a deviation: it is correct per the contract and fails
 * because the library is wrong. Some of them only fail in the sanitizer
 * builds (-DHOOKED_SANITIZE=address,undefined with clang, which aborts on
 * the first report): the behaviour they check looks right on x86-64, but the
 * code reaches it through undefined behaviour or an out-of-bounds read, which
 * H3 ("no input makes hooked crash") does not allow.
 */
#include "graph_fixture.h"
#include "session_fixture.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- embedded executor ------------------------------------------------------ */

typedef graph_fixture graph_fx;

static hk_handle constant_var(graph_fx *f, const char *name, hk_dtype dtype, double value) {
  hk_variable_def d = HK_VARIABLE_DEF_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_handle h = HK_NO_HANDLE;
  d.name = name;
  d.dtype = dtype;
  d.init.kind = HK_INIT_CONSTANT;
  d.init.value = value;
  assert_ok(hk_graph_variable(f->g, &h, &d, &st), &st);
  return h;
}

/* Run the init op of `var` and fetch it. */
static hk_tensor init_and_fetch(graph_fx *f, hk_handle var) {
  hk_status st = HK_STATUS_INIT;
  hk_handle init;
  hk_run_args a;
  hk_tensor r;
  assert_ok(hk_graph_init_op(f->g, &init, "init", &var, 1, &st), &st);
  assert_ok(hk_raw_session_open(&f->rs, f->ex, &st), &st);
  memset(&a, 0, sizeof(a));
  a.targets = &init;
  a.ntargets = 1;
  assert_ok(hk_raw_session_run(f->rs, &a, NULL, NULL, &st), &st);
  memset(&a, 0, sizeof(a));
  a.fetches = &var;
  a.nfetches = 1;
  assert_ok(hk_raw_session_run(f->rs, &a, &r, NULL, &st), &st);
  return r;
}

/*
 * H3/H30: a BOOL variable accepts any finite constant (hk_graph_variable
 * validates it and the value means "nonzero"). kernels.c fill_integer()
 * converts the double to int64_t before looking at the dtype, which is
 * undefined for 1e30 (UBSan: float-cast-overflow).
 */
static void test_review2__h3_bool_constant_initializer_out_of_int64_range(void **state) {
  graph_fx *f = *state;
  hk_handle v = constant_var(f, "flag", HK_DTYPE_BOOL, 1e30);
  hk_tensor r = init_and_fetch(f, v);
  assert_int_equal(r.dtype, HK_DTYPE_BOOL);
  assert_int_equal(*(const uint8_t *)r.data, 1);
}

/*
 * H3/H30: a U64 constant up to 2^64 - 2048 is accepted by the initializer
 * check, but fill_integer() first converts it to int64_t (undefined above
 * INT64_MAX, UBSan: float-cast-overflow).
 */
static void test_review2__h3_u64_constant_initializer_above_int64_max(void **state) {
  graph_fx *f = *state;
  hk_handle v = constant_var(f, "big", HK_DTYPE_U64, 1e19);
  hk_tensor r = init_and_fetch(f, v);
  assert_int_equal(r.dtype, HK_DTYPE_U64);
  assert_true(*(const uint64_t *)r.data == UINT64_C(10000000000000000000));
}

/* A kernel that reports an output of an impossible rank. */
static hk_code bad_rank_kernel(void *user, hk_kernel_context *ctx, const hk_tensor *inputs, size_t ninputs,
                               hk_tensor *outputs, size_t noutputs, hk_status *status) {
  int i;
  (void)user;
  (void)ctx;
  (void)inputs;
  (void)ninputs;
  (void)noutputs;
  (void)status;
  outputs[0].rank = 1000;
  for (i = 0; i < HK_MAX_RANK; i++) outputs[0].dims[i] = 0;
  return HK_OK;
}

/*
 * H3/H30: a kernel may change the shape of its output (graph.h); when that
 * output feeds an assign whose variable it no longer matches, the run fails
 * with INVALID_ARGUMENT. check_operand() in kernels.c formats the input's
 * shape with hk__graph_shape_str(in->rank, ...) without clamping the rank to
 * HK_MAX_RANK, so it reads past dims[] and past the session's input scratch
 * (ASan: heap-buffer-overflow). check_feed() and variable_assign() clamp.
 */
static void test_review2__h30_assign_from_kernel_output_with_rank_over_max(void **state) {
  graph_fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_op_def d = HK_OP_DEF_INIT;
  hk_output_spec out;
  hk_handle var, op, t, assign, init;
  hk_run_args a;

  var = constant_var(f, "v", HK_DTYPE_F32, 1.0);
  memset(&out, 0, sizeof(out));
  out.dtype = HK_DTYPE_F32;
  out.rank = 0;
  d.name = "bad";
  d.kernel = bad_rank_kernel;
  d.outputs = &out;
  d.noutputs = 1;
  assert_ok(hk_graph_op(f->g, &op, &d, &st), &st);
  assert_ok(hk_graph_op_output(f->g, op, 0, &t, &st), &st);
  assert_ok(hk_graph_assign(f->g, &assign, "assign", var, t, &st), &st);
  assert_ok(hk_graph_init_op(f->g, &init, "init", &var, 1, &st), &st);
  assert_ok(hk_raw_session_open(&f->rs, f->ex, &st), &st);
  memset(&a, 0, sizeof(a));
  a.targets = &init;
  a.ntargets = 1;
  assert_ok(hk_raw_session_run(f->rs, &a, NULL, NULL, &st), &st);
  a.targets = &assign;
  assert_status(hk_raw_session_run(f->rs, &a, NULL, NULL, &st), &st, HK_INVALID_ARGUMENT, "assign");
}

/* ---- coordinator ---------------------------------------------------------------- */

typedef struct late_done {
  hk_coordinator_thread *token;
} late_done;

static void *finish_later(void *arg) {
  late_done *ld = arg;
  test_sleep_real_ms(50);
  hk_coordinator_thread_done(ld->token);
  return NULL;
}

/*
 * C30/H17: the join accepts any finite grace period >= 0 and returns as soon
 * as every registered thread reported completion. With the system clock,
 * timed_wait_locked() in coordinator.c converts the whole remaining grace
 * (here 1e300 s) to time_t, which is undefined (UBSan: float-cast-overflow);
 * on x86-64 it yields a deadline in the past and the join spins.
 */
static void test_review2__c30_join_with_huge_grace_period(void **state) {
  hk_env env = HK_ENV_INIT;
  test_env *te = test_env_new();
  hk_coordinator *c = NULL;
  hk_status st = HK_STATUS_INIT;
  late_done ld;
  pthread_t helper;
  (void)state;

  /* the system clock: log capture only */
  test_env_log_only(te, &env);
  assert_ok(hk_coordinator_new(&c, &env, &st), &st);
  assert_ok(hk_coordinator_register_thread(c, "late", &ld.token, &st), &st);
  assert_int_equal(pthread_create(&helper, NULL, finish_later, &ld), 0);
  assert_ok(hk_coordinator_join(c, 1e300, &st), &st);
  assert_int_equal(pthread_join(helper, NULL), 0);
  assert_false(test_log_has(&te->log, HK_LOG_WARNING, "Coordinator stopped with threads still running"));
  hk_coordinator_free(c);
  test_env_free(te);
}

/* ---- GlobalStepWaiterHook ----------------------------------------------------- */

typedef struct gsw_fx {
  test_env *te;
  fake_executor *fx;
  hk_handle gs, train;
  hk_hook *hook;
  hk_session *s;
  int polls;
} gsw_fx;

static int gsw_setup(void **state) {
  gsw_fx *f = calloc(1, sizeof(*f));
  assert_non_null(f);
  f->te = test_env_new();
  f->fx = fake_training_executor(f->te, NULL, &f->gs, &f->train);
  *state = f;
  return 0;
}

static int gsw_teardown(void **state) {
  gsw_fx *f = *state;
  session_close_and_free(f->s);
  hk_hook_free(f->hook);
  fake_executor_free(f->fx);
  test_env_free(f->te);
  free(f);
  return 0;
}

/* Another worker's GS as the hook's polls see it: 5000, then INT64_MIN (a
 * worker that was reset to a bogus value), then the target. */
static hk_code gs_script(void *user, fake_executor *fx, const hk_run_args *args, hk_status *status) {
  gsw_fx *f = user;
  static const int64_t script[3] = {5000, INT64_MIN, 10000};
  (void)args;
  (void)status;
  if (f->polls < 3) fake_executor_set_i64(fx, NULL, f->gs, script[f->polls]);
  f->polls++;
  return HK_OK;
}

/*
 * C90: the progress line is logged "whenever GS - last logged > 1000". After
 * it logged at 5000, a GS of INT64_MIN is far below, so no line may name it.
 * global_step_waiter.c computes gs - last_logged in int64_t, which overflows
 * (undefined; UBSan: signed-integer-overflow) and wraps to a huge positive
 * difference, so the hook logs "Current step is -9223372036854775808".
 */
static void test_review2__c90_progress_log_difference_overflows(void **state) {
  gsw_fx *f = *state;
  hk_global_step_waiter_options o = HK_GLOBAL_STEP_WAITER_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;

  o.wait_until_step = 10000;
  o.poll_interval_secs = 0.5;
  assert_ok(hk_global_step_waiter_hook_new(&f->hook, &o, &st), &st);
  assert_ok(one_hook_session_new(&f->s, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(f->fx), &f->hook,
                                 NULL, &st),
            &st);
  fake_executor_on_run(f->fx, gs_script, f);
  assert_ok(session_run_train(f->s, f->train, &st), &st);
  assert_true(f->polls >= 3);
  assert_true(test_log_has(&f->te->log, HK_LOG_INFO, "Current step is 5000."));
  assert_false(test_log_has(&f->te->log, HK_LOG_INFO, "Current step is -9223372036854775808."));
}

/* argv[1], when given, selects tests (cmocka's filter): the sanitizer builds
 * abort at the first report, so each deviation can be shown on its own. */
int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_review2__h3_bool_constant_initializer_out_of_int64_range, graph_fixture_setup,
                                      graph_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_review2__h3_u64_constant_initializer_above_int64_max, graph_fixture_setup,
                                      graph_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_review2__h30_assign_from_kernel_output_with_rank_over_max, graph_fixture_setup,
                                      graph_fixture_teardown),
      cmocka_unit_test(test_review2__c30_join_with_huge_grace_period),
      cmocka_unit_test_setup_teardown(test_review2__c90_progress_log_difference_overflows, gsw_setup, gsw_teardown),
  };
  if (argc > 1) cmocka_set_test_filter(argv[1]);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
