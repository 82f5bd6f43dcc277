/*
 * Why training stopped (H63), the stop signals a program chooses (H64) and
 * the wall-clock limit (H65), on both executors: a MonitoredTrainingSession
 * over the embedded graph and the host loop. Signals are raised in-process
 * (raise()), the time limit is driven by the test env's mock clock: nothing
 * here waits or depends on timing.
 */
#include "loop_tests.h"

/* ---- the graph executor: a MonitoredTrainingSession ------------------------------ */

typedef struct gfx {
  test_env *te;
  char *dir, *ck;
  hk_status st;
  hk_graph *g;
  hk_handle train;
  float loss; /* external: "loss:0" */
  float val;  /* external: "val:0", the early-stopping monitor */
  hk_training_session_options o;
} gfx;

static hk_code add_one(void *user, hk_kernel_context *ctx, const hk_tensor *in, size_t nin, hk_tensor *out, size_t nout,
                       hk_status *st) {
  (void)user, (void)in, (void)nin, (void)out, (void)nout, (void)st;
  *(int64_t *)hk_kernel_context_variable(ctx, 0)->data += 1;
  return HK_OK;
}

static void external_f32(gfx *f, const char *name, float *data) {
  hk_variable_def d = HK_VARIABLE_DEF_INIT;
  hk_handle h;
  d.name = name;
  d.dtype = HK_DTYPE_F32;
  d.flags = HK_VAR_LOCAL;
  d.external_data = data;
  assert_ok(hk_graph_variable(f->g, &h, &d, &f->st), &f->st);
}

static gfx *gfx_new(void) {
  gfx *f = calloc(1, sizeof *f);
  f->te = test_env_new();
  f->dir = test_tmpdir_new("stop");
  f->ck = test_path(f->dir, "run");
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  go.env = &f->te->env;
  hk_handle gs;
  assert_ok(hk_graph_new(&f->g, &go, &f->st), &f->st);
  assert_ok(hk_graph_create_global_step(f->g, &gs, &f->st), &f->st);
  hk_op_def op = HK_OP_DEF_INIT;
  op.name = "train_op";
  op.kernel = add_one;
  op.mutates = &gs;
  op.nmutates = 1;
  assert_ok(hk_graph_op(f->g, &f->train, &op, &f->st), &f->st);
  external_f32(f, "loss", &f->loss);
  external_f32(f, "val", &f->val);
  assert_int_equal(hk_training_session_options_init(&f->o, HK_TRAINING_SESSION_OPTIONS_VERSION), HK_OK);
  f->o.executor = hk_graph_executor(f->g);
  f->o.checkpoint_dir = f->ck;
  f->o.save_checkpoint_steps = 1000; /* only the first and the final checkpoints */
  f->o.save_summaries_steps = 0;
  f->o.recovery_wait_secs = 0.01;
  return f;
}

static void gfx_free(gfx *f) {
  hk_graph_free(f->g);
  free(f->ck);
  test_tmpdir_free(f->dir);
  assert_int_equal(test_env_release(f->te), 0);
  free(f);
}

static hk_session *open_mts(gfx *f, hk_hook *const *hooks, size_t n) {
  hk_session *s = NULL;
  f->o.hooks = hooks;
  f->o.nhooks = n;
  assert_ok(hk_training_session_new(&s, &f->o, &f->st), &f->st);
  return s;
}

static hk_code train(gfx *f, hk_session *s) {
  hk_run_args args = {NULL, 0, NULL, 0, &f->train, 1, NULL};
  return hk_session_run(s, &args, NULL, NULL, &f->st);
}

static hk_stop_info session_reason(hk_session *s) {
  hk_stop_info why;
  hk_status st = HK_STATUS_INIT;
  assert_ok(hk_session_stop_reason(&why, s, &st), &st);
  return why;
}

static int graph_ckpt_exists(gfx *f, int64_t step) {
  char name[64];
  snprintf(name, sizeof name, "model.ckpt-%lld.safetensors", (long long)step);
  char *p = test_path(f->ck, name);
  int e = test_path_exists(p);
  free(p);
  return e;
}

/* StopAtStepHook names the last step; the cause stays after close. */
static void test_stop_reason__graph_last_step(void **state) {
  (void)state;
  gfx *f = gfx_new();
  hk_hook *stop = NULL;
  hk_stop_at_step_options so = HK_STOP_AT_STEP_OPTIONS_INIT;
  so.last_step = 3;
  assert_ok(hk_stop_at_step_hook_new(&stop, &so, &f->st), &f->st);
  hk_session *s = open_mts(f, &stop, 1);
  assert_int_equal(session_reason(s).reason, HK_STOP_NONE);
  while (!hk_session_should_stop(s)) assert_ok(train(f, s), &f->st);
  hk_stop_info why = session_reason(s);
  assert_int_equal(why.reason, HK_STOP_LAST_STEP);
  assert_int_equal(why.code, HK_OK);
  assert_non_null(strstr(why.detail, "reached the last step 3"));
  assert_ok(hk_session_close(s, HK_OK, &f->st), &f->st);
  assert_int_equal(session_reason(s).reason, HK_STOP_LAST_STEP);
  assert_string_equal(hk_stop_reason_name(HK_STOP_LAST_STEP), "last step");
  hk_session_free(s);
  hk_hook_free(stop);
  gfx_free(f);
}

/* A program's hook that asks to stop is named; an error is the cause with
 * its status; OUT_OF_RANGE at close is the end of the input; a plain close
 * is "closed"; a coordinator's request is "requested". */
static void test_stop_reason__graph_hook_error_end_of_input_closed(void **state) {
  (void)state;
  gfx *f = gfx_new();
  spy_hook *spy = spy_hook_new("my_stopper", NULL, NULL);
  spy_hook_stop_at(spy, SPY_AFTER_RUN, 2, 1);
  hk_session *s = open_mts(f, &spy->hook, 1);
  while (!hk_session_should_stop(s)) assert_ok(train(f, s), &f->st);
  hk_stop_info why = session_reason(s);
  assert_int_equal(why.reason, HK_STOP_HOOK);
  assert_string_equal(why.detail, "my_stopper");
  assert_ok(hk_session_close(s, HK_OK, &f->st), &f->st);
  hk_session_free(s);

  spy_hook_reset(spy);
  spy_hook_fail(spy, SPY_AFTER_RUN, 2, 1, HK_INVALID_ARGUMENT, "the batch is malformed");
  s = open_mts(f, &spy->hook, 1);
  assert_ok(train(f, s), &f->st);
  assert_status(train(f, s), &f->st, HK_INVALID_ARGUMENT, "malformed");
  why = session_reason(s);
  assert_int_equal(why.reason, HK_STOP_ERROR);
  assert_int_equal(why.code, HK_INVALID_ARGUMENT);
  assert_non_null(strstr(why.detail, "the batch is malformed"));
  hk_session_close(s, HK_INVALID_ARGUMENT, &f->st);
  assert_int_equal(session_reason(s).reason, HK_STOP_ERROR);
  hk_session_free(s);

  spy_hook_reset(spy);
  s = open_mts(f, &spy->hook, 1);
  assert_ok(train(f, s), &f->st);
  assert_ok(hk_session_close(s, HK_OUT_OF_RANGE, &f->st), &f->st);
  why = session_reason(s);
  assert_int_equal(why.reason, HK_STOP_END_OF_INPUT);
  assert_int_equal(why.code, HK_OUT_OF_RANGE);
  hk_session_free(s);

  s = open_mts(f, &spy->hook, 1);
  assert_ok(train(f, s), &f->st);
  hk_coordinator_request_stop(hk_session_coordinator(s), HK_OK, NULL);
  assert_true(hk_session_should_stop(s));
  assert_int_equal(session_reason(s).reason, HK_STOP_REQUESTED);
  assert_ok(hk_session_close(s, HK_OK, &f->st), &f->st);
  hk_session_free(s);

  s = open_mts(f, &spy->hook, 1);
  assert_ok(train(f, s), &f->st);
  assert_ok(hk_session_close(s, HK_OK, &f->st), &f->st);
  assert_int_equal(session_reason(s).reason, HK_STOP_CLOSED);
  hk_session_free(s);

  hk_stop_info dummy;
  assert_status(hk_session_stop_reason(NULL, s, &f->st), &f->st, HK_INVALID_ARGUMENT, "out");
  assert_status(hk_session_stop_reason(&dummy, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "session");
  spy_hook_free(spy);
  gfx_free(f);
}

/* The NaN guard names a non-finite value with the error it fails the run
 * with; early stopping names itself. */
static void test_stop_reason__graph_non_finite_and_early_stopping(void **state) {
  (void)state;
  gfx *f = gfx_new();
  hk_hook *nan = NULL;
  hk_nan_tensor_options no = HK_NAN_TENSOR_OPTIONS_INIT;
  no.loss = "loss:0";
  assert_ok(hk_nan_tensor_hook_new(&nan, &no, &f->st), &f->st);
  hk_session *s = open_mts(f, &nan, 1);
  assert_ok(train(f, s), &f->st);
  f->loss = NAN;
  assert_status(train(f, s), &f->st, HK_INVALID_ARGUMENT, "NaN loss during training.");
  hk_stop_info why = session_reason(s);
  assert_int_equal(why.reason, HK_STOP_NON_FINITE);
  assert_int_equal(why.code, HK_INVALID_ARGUMENT);
  assert_non_null(strstr(why.detail, "NaN loss"));
  hk_session_close(s, HK_INVALID_ARGUMENT, &f->st);
  assert_int_equal(session_reason(s).reason, HK_STOP_NON_FINITE);
  hk_session_free(s);
  hk_hook_free(nan);

  hk_hook *es = NULL;
  hk_early_stopping_options eo = HK_EARLY_STOPPING_OPTIONS_INIT;
  eo.monitor = "val:0";
  eo.patience = 1;
  assert_ok(hk_early_stopping_hook_new(&es, &eo, &f->st), &f->st);
  s = open_mts(f, &es, 1);
  f->val = 1.0f;
  while (!hk_session_should_stop(s)) {
    assert_ok(train(f, s), &f->st);
    f->val += 1.0f; /* never improves */
  }
  why = session_reason(s);
  assert_int_equal(why.reason, HK_STOP_EARLY_STOPPING);
  assert_non_null(strstr(why.detail, "val:0 did not improve"));
  assert_ok(hk_session_close(s, HK_OK, &f->st), &f->st);
  hk_session_free(s);
  hk_hook_free(es);
  gfx_free(f);
}

/* H64: SIGUSR1 (Slurm's warning) and SIGHUP (a closed terminal) stop the
 * session cleanly once the program asked for them; the close writes the
 * final checkpoint and the cause names the signal. */
static void test_stop_reason__graph_chosen_signals_stop_cleanly(void **state) {
  (void)state;
  static const int sigs[2] = {SIGUSR1, SIGHUP};
  for (int k = 0; k < 2; k++) {
    gfx *f = gfx_new();
    hk_status sst = HK_STATUS_INIT;
    assert_ok(hk_signal_install_set(HK_SIGNAL_USR1 | HK_SIGNAL_HUP, &sst), &sst);
    hk_session *s = open_mts(f, NULL, 0);
    assert_ok(train(f, s), &f->st);
    assert_ok(train(f, s), &f->st);
    assert_false(hk_session_should_stop(s));
    assert_int_equal(raise(sigs[k]), 0);
    assert_true(hk_session_should_stop(s));
    hk_stop_info why = session_reason(s);
    assert_int_equal(why.reason, HK_STOP_SIGNAL);
    assert_int_equal(why.signal, sigs[k]);
    assert_string_equal(why.detail, k == 0 ? "SIGUSR1" : "SIGHUP");
    assert_ok(hk_session_close(s, HK_OK, &f->st), &f->st);
    assert_true(graph_ckpt_exists(f, 2)); /* the final checkpoint */
    assert_ok(hk_signal_uninstall(&sst), &sst);
    hk_session_free(s);
    gfx_free(f);
  }
}

/* H65: TimeLimitHook stops after its duration of the session's clock, with
 * the final checkpoint. */
static void test_stop_reason__graph_time_limit_stops_with_final_checkpoint(void **state) {
  (void)state;
  gfx *f = gfx_new();
  hk_hook *limit = NULL;
  hk_time_limit_options to = HK_TIME_LIMIT_OPTIONS_INIT;
  to.duration_secs = 60;
  assert_ok(hk_time_limit_hook_new(&limit, &to, &f->st), &f->st);
  hk_session *s = open_mts(f, &limit, 1);
  assert_ok(train(f, s), &f->st);
  test_clock_advance(&f->te->clock, 59);
  assert_ok(train(f, s), &f->st);
  assert_false(hk_session_should_stop(s));
  test_clock_advance(&f->te->clock, 2);
  assert_ok(train(f, s), &f->st);
  assert_true(hk_session_should_stop(s));
  hk_stop_info why = session_reason(s);
  assert_int_equal(why.reason, HK_STOP_TIME_LIMIT);
  assert_non_null(strstr(why.detail, "Time limit of 60 s reached after 61 s at global step 3"));
  assert_ok(hk_session_close(s, HK_OK, &f->st), &f->st);
  assert_true(graph_ckpt_exists(f, 3));
  hk_session_free(s);
  hk_hook_free(limit);
  gfx_free(f);
}

/* ---- the host loop ---------------------------------------------------------------- */

static hk_stop_info loop_reason(hk_loop *l) {
  hk_stop_info why;
  hk_status st = HK_STATUS_INIT;
  assert_ok(hk_loop_stop_reason(&why, l, &st), &st);
  return why;
}

static hk_loop *start_loop(fx *f, model *m, const hk_loop_options *o) {
  hk_loop *l = NULL;
  assert_ok(hk_loop_new(&l, o, &f->st), &f->st);
  add_model(l, m, f);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  return l;
}

static int loop_ckpt_exists(fx *f, int64_t step) {
  char name[64];
  snprintf(name, sizeof name, "model.ckpt-%lld", (long long)step);
  char *p = ckpt_file(f, name);
  int e = test_path_exists(p);
  free(p);
  return e;
}

/* The last step, a hook's request by name, hk_loop_request_stop(), and a
 * loop the program finished itself. */
static void test_stop_reason__loop_last_step_hook_requested_closed(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  o.last_step = 3;
  hk_loop *l = start_loop(f, &m, &o);
  assert_int_equal(loop_reason(l).reason, HK_STOP_NONE);
  assert_ok(hk_loop_run(l, step_fn, &m, &f->st), &f->st);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_stop_info why = loop_reason(l);
  assert_int_equal(why.reason, HK_STOP_LAST_STEP);
  assert_non_null(strstr(why.detail, "global step 3 reached the last step 3"));
  hk_loop_free(l);

  spy_hook *spy = spy_hook_new("my_stopper", NULL, NULL);
  spy_hook_stop_at(spy, SPY_AFTER_RUN, 1, 1);
  o = opts_for(f);
  o.hooks = &spy->hook;
  o.nhooks = 1;
  l = start_loop(f, &m, &o);
  assert_ok(hk_loop_run(l, step_fn, &m, &f->st), &f->st);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  why = loop_reason(l);
  assert_int_equal(why.reason, HK_STOP_HOOK);
  assert_string_equal(why.detail, "my_stopper");
  hk_loop_free(l);
  spy_hook_free(spy);

  o = opts_for(f);
  l = start_loop(f, &m, &o);
  assert_ok(hk_loop_step(l, step_fn, &m, &f->st), &f->st);
  hk_loop_request_stop(l);
  assert_true(hk_loop_should_stop(l));
  assert_int_equal(loop_reason(l).reason, HK_STOP_REQUESTED);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  assert_int_equal(loop_reason(l).reason, HK_STOP_REQUESTED);
  hk_loop_free(l);

  l = start_loop(f, &m, &o);
  assert_ok(hk_loop_step(l, step_fn, &m, &f->st), &f->st);
  assert_int_equal(loop_reason(l).reason, HK_STOP_NONE);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  why = loop_reason(l);
  assert_int_equal(why.reason, HK_STOP_CLOSED);
  assert_non_null(strstr(why.detail, "finished the loop"));
  hk_stop_info dummy;
  assert_status(hk_loop_stop_reason(NULL, l, &f->st), &f->st, HK_INVALID_ARGUMENT, "out");
  assert_status(hk_loop_stop_reason(&dummy, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "loop");
  hk_loop_free(l);
}

static hk_code failing_step(void *user, int64_t step, hk_status *st) {
  model *m = user;
  model_step(m);
  if (step == 1) return hk_status_set(st, HK_DATA_LOSS, "the shard file is truncated");
  return HK_OK;
}

static hk_code exhausted_step(void *user, int64_t step, hk_status *st) {
  model *m = user;
  if (step == 2) return hk_status_set(st, HK_OUT_OF_RANGE, "epoch over");
  model_step(m);
  return HK_OK;
}

/* An error with its status, the end of the input, the NaN guard. */
static void test_stop_reason__loop_error_end_of_input_non_finite(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  hk_loop *l = start_loop(f, &m, &o);
  assert_status(hk_loop_run(l, failing_step, &m, &f->st), &f->st, HK_DATA_LOSS, "truncated");
  hk_loop_finish(l, &f->st);
  hk_stop_info why = loop_reason(l);
  assert_int_equal(why.reason, HK_STOP_ERROR);
  assert_int_equal(why.code, HK_DATA_LOSS);
  assert_non_null(strstr(why.detail, "the shard file is truncated"));
  hk_loop_free(l);

  model_init(&m);
  char *other = test_path(f->dir, "ck2");
  o = opts_for(f);
  o.checkpoint_dir = other;
  l = start_loop(f, &m, &o);
  assert_ok(hk_loop_run(l, exhausted_step, &m, &f->st), &f->st);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  why = loop_reason(l);
  assert_int_equal(why.reason, HK_STOP_END_OF_INPUT);
  assert_int_equal(why.code, HK_OUT_OF_RANGE);
  assert_non_null(strstr(why.detail, "epoch over"));
  hk_loop_free(l);
  free(other);

  model_init(&m);
  other = test_path(f->dir, "ck3");
  o = opts_for(f);
  o.checkpoint_dir = other;
  o.nan_guard = "loss";
  l = start_loop(f, &m, &o);
  assert_ok(hk_loop_step(l, step_fn, &m, &f->st), &f->st);
  assert_ok(hk_loop_step_begin(l, NULL, &f->st), &f->st);
  m.loss = -INFINITY;
  assert_status(hk_loop_step_end(l, &f->st), &f->st, HK_INVALID_ARGUMENT, "-Inf loss during training.");
  hk_loop_finish(l, &f->st);
  why = loop_reason(l);
  assert_int_equal(why.reason, HK_STOP_NON_FINITE);
  assert_int_equal(why.code, HK_INVALID_ARGUMENT);
  hk_loop_free(l);
  free(other);
}

/* H64: with stop_signals, SIGHUP and SIGUSR1 end the loop cleanly with the
 * final checkpoint, and the reason names the signal. */
static void test_stop_reason__loop_chosen_signals_stop_with_final_checkpoint(void **state) {
  fx *f = *state;
  static const int sigs[2] = {SIGHUP, SIGUSR1};
  for (int k = 0; k < 2; k++) {
    model m;
    model_init(&m);
    char name[16];
    snprintf(name, sizeof name, "sig%d", k);
    char *dir = test_path(f->dir, name);
    hk_loop_options o = opts_for(f);
    o.checkpoint_dir = dir;
    o.save_steps = 100;
    o.handle_signals = 1;
    o.stop_signals = HK_SIGNAL_HUP | HK_SIGNAL_USR1;
    hk_loop *l = start_loop(f, &m, &o);
    assert_ok(hk_loop_step(l, step_fn, &m, &f->st), &f->st);
    assert_ok(hk_loop_step(l, step_fn, &m, &f->st), &f->st);
    assert_ok(hk_loop_step(l, step_fn, &m, &f->st), &f->st);
    assert_false(hk_loop_should_stop(l));
    assert_int_equal(raise(sigs[k]), 0);
    assert_true(hk_loop_should_stop(l));
    assert_ok(hk_loop_finish(l, &f->st), &f->st);
    char *ck = test_path(dir, "model.ckpt-3.safetensors");
    assert_true(test_path_exists(ck)); /* the final checkpoint */
    free(ck);
    hk_stop_info why = loop_reason(l);
    assert_int_equal(why.reason, HK_STOP_SIGNAL);
    assert_int_equal(why.signal, sigs[k]);
    assert_string_equal(why.detail, hk_signal_name(sigs[k]));
    hk_loop_free(l);
    free(dir);
  }
  (void)loop_ckpt_exists;
}

/* H64: bad sets are refused, naming what is wrong. */
static void test_stop_reason__bad_signal_sets_are_refused(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  assert_status(hk_signal_install_set(0, &st), &st, HK_INVALID_ARGUMENT, "empty");
  assert_status(hk_signal_install_set(1u << 12, &st), &st, HK_INVALID_ARGUMENT, "0x1000");
  assert_string_equal(hk_signal_name(SIGUSR1), "SIGUSR1");
  assert_string_equal(hk_signal_name(SIGHUP), "SIGHUP");
  hk_loop *l = NULL;
  hk_loop_options o = opts_for(f);
  o.handle_signals = 1;
  o.stop_signals = 1u << 9;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "stop_signals");
  o.handle_signals = 0;
  o.stop_signals = HK_SIGNAL_USR1;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "handle_signals");
  assert_null(l);
}

/* H65 on the loop: the time limit of the loop's clock, the final checkpoint. */
static void test_stop_reason__loop_time_limit_stops_with_final_checkpoint(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  hk_hook *limit = NULL;
  hk_time_limit_options to = HK_TIME_LIMIT_OPTIONS_INIT;
  to.duration_secs = 30;
  assert_ok(hk_time_limit_hook_new(&limit, &to, &f->st), &f->st);
  hk_loop_options o = opts_for(f);
  o.save_steps = 100;
  o.hooks = &limit;
  o.nhooks = 1;
  hk_loop *l = start_loop(f, &m, &o);
  assert_ok(hk_loop_step(l, step_fn, &m, &f->st), &f->st); /* warm-up */
  test_alloc_reset_counts(&f->te->alloc);
  for (int i = 0; i < 20; i++) assert_ok(hk_loop_step(l, step_fn, &m, &f->st), &f->st);
  assert_int_equal(test_alloc_count(&f->te->alloc), 0); /* steady-state steps allocate nothing (H7) */
  for (int i = 0; i < 4; i++) {
    assert_false(hk_loop_should_stop(l));
    assert_ok(hk_loop_step(l, step_fn, &m, &f->st), &f->st);
    test_clock_advance(&f->te->clock, 10);
  }
  assert_true(hk_loop_should_stop(l)); /* 30 s had passed at the end of step 25 */
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  assert_true(loop_ckpt_exists(f, 25));
  hk_stop_info why = loop_reason(l);
  assert_int_equal(why.reason, HK_STOP_TIME_LIMIT);
  assert_non_null(strstr(why.detail, "at global step 25"));
  hk_loop_free(l);
  hk_hook_free(limit);

  hk_time_limit_options bad = HK_TIME_LIMIT_OPTIONS_INIT;
  assert_status(hk_time_limit_hook_new(&limit, &bad, &f->st), &f->st, HK_INVALID_ARGUMENT, "duration_secs");
  bad.duration_secs = -1;
  assert_status(hk_time_limit_hook_new(&limit, &bad, &f->st), &f->st, HK_INVALID_ARGUMENT, "duration_secs");
  bad.duration_secs = INFINITY;
  assert_status(hk_time_limit_hook_new(&limit, &bad, &f->st), &f->st, HK_INVALID_ARGUMENT, "duration_secs");
  assert_status(hk_time_limit_hook_new(&limit, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "opts");
  assert_null(limit);
}

/* The progress line of an interrupted run says where and why it stopped,
 * not "done"; a run that reached its last step says "done". */
static void test_stop_reason__progress_line_says_stopped_at(void **state) {
  fx *f = *state;
  for (int k = 0; k < 2; k++) {
    model m;
    model_init(&m);
    FILE *out = tmpfile();
    assert_non_null(out);
    hk_hook *progress = NULL;
    hk_progress_options po;
    assert_int_equal(hk_progress_options_init(&po, HK_PROGRESS_OPTIONS_VERSION), HK_OK);
    po.stream = out;
    po.last_step = 10;
    po.mode = HK_PROGRESS_PLAIN;
    assert_ok(hk_progress_hook_new(&progress, &po, &f->st), &f->st);
    char name[16];
    snprintf(name, sizeof name, "p%d", k);
    char *dir = test_path(f->dir, name);
    hk_loop_options o = opts_for(f);
    o.checkpoint_dir = dir;
    o.last_step = 10;
    o.hooks = &progress;
    o.nhooks = 1;
    hk_loop *l = start_loop(f, &m, &o);
    for (int i = 0; i < (k == 0 ? 2 : 10); i++) assert_ok(hk_loop_step(l, step_fn, &m, &f->st), &f->st);
    if (k == 0) hk_loop_request_stop(l);
    assert_true(hk_loop_should_stop(l));
    assert_ok(hk_loop_finish(l, &f->st), &f->st);
    hk_loop_free(l);
    hk_hook_free(progress);
    char text[4096] = {0};
    rewind(out);
    size_t n = fread(text, 1, sizeof text - 1, out);
    text[n] = '\0';
    fclose(out);
    if (k == 0) {
      assert_non_null(strstr(text, "step 2/10  stopped at 20% (requested: "));
      assert_null(strstr(text, "done"));
    } else {
      assert_non_null(strstr(text, "step 10/10 (100.0%)  done in"));
    }
    free(dir);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stop_reason__graph_last_step),
      cmocka_unit_test(test_stop_reason__graph_hook_error_end_of_input_closed),
      cmocka_unit_test(test_stop_reason__graph_non_finite_and_early_stopping),
      cmocka_unit_test(test_stop_reason__graph_chosen_signals_stop_cleanly),
      cmocka_unit_test(test_stop_reason__graph_time_limit_stops_with_final_checkpoint),
      cmocka_unit_test_setup_teardown(test_stop_reason__loop_last_step_hook_requested_closed, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stop_reason__loop_error_end_of_input_non_finite, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stop_reason__loop_chosen_signals_stop_with_final_checkpoint, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_stop_reason__bad_signal_sets_are_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stop_reason__loop_time_limit_stops_with_final_checkpoint, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stop_reason__progress_line_says_stopped_at, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
