/*
 * test_loop — the host loop's steps: the step bracket, the global step,
 * signals and stop requests, the log level, and steps that allocate
 * nothing (H7).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "loop_tests.h"

/* ---- the step bracket ------------------------------------------------------------- */

/* Every hook's before_run runs before the program's step and every after_run
 * after it, in both forms; after_run sees the values the step produced. */
static void test_loop__hooks_bracket_the_step(void **state) {
  fx *f = *state;
  spy_log log;
  spy_log_clear(&log);
  spy_hook *h1 = spy_hook_new("h1", &log, NULL);
  spy_hook *h2 = spy_hook_new("h2", &log, NULL);
  hk_hook *hooks[2] = {h1->hook, h2->hook};
  model m;
  model_init(&m);
  m.log = &log;
  hk_loop_options o = opts_for(f);
  o.checkpoint_dir = NULL;
  o.save_steps = HK_UNSET_STEPS;
  o.hooks = hooks;
  o.nhooks = 2;
  hk_loop *l = NULL;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &m, f);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  hk_handle loss = HK_NO_HANDLE, gs = HK_NO_HANDLE;
  assert_ok(hk_executor_resolve_tensor(&loss, hk_loop_executor(l), "loss:0", &f->st), &f->st);
  assert_ok(hk_executor_resolve_tensor(&gs, hk_loop_executor(l), "global_step", &f->st), &f->st);
  spy_hook_fetch(h2, loss);
  spy_hook_fetch(h2, gs);
  spy_log_clear(&log);

  int64_t step = -1;
  assert_ok(hk_loop_step_begin(l, &step, &f->st), &f->st);
  assert_int_equal(step, 0);
  model_step(&m);
  assert_ok(hk_loop_step_end(l, &f->st), &f->st);
  assert_ok(hk_loop_step(l, step_fn, &m, &f->st), &f->st);
  static const char *const want[] = {"h1.before_run", "h2.before_run", "step", "h1.after_run", "h2.after_run",
                                     "h1.before_run", "h2.before_run", "step", "h1.after_run", "h2.after_run"};
  assert_true(spy_log_equals(&log, want, 10));
  assert_int_equal(h2->last_nresults, 2);
  assert_true(*(const float *)h2->last_results[0].data == m.loss);
  assert_int_equal(h2->last_i64[1], 2); /* the global step after the step */
  assert_int_equal(hk_loop_global_step(l), 2);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  spy_hook_free(h1);
  spy_hook_free(h2);
}

/* A hook asking for a trace gets the program's step as one traced "step"
 * op with its start and end times, so a profiler can time the user's math. */
static void test_loop__trace_times_the_program_step(void **state) {
  fx *f = *state;
  spy_hook *h = spy_hook_new("prof", NULL, NULL);
  hk_hook *hooks[1] = {h->hook};
  model m;
  model_init(&m);
  hk_loop_options o = HK_LOOP_OPTIONS_INIT;
  o.env = &f->te->env;
  o.handle_signals = 0;
  o.hooks = hooks;
  o.nhooks = 1;
  hk_loop *l = NULL;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &m, f);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  spy_hook_options(h, 3, 0);
  assert_ok(hk_loop_step_begin(l, NULL, &f->st), &f->st);
  test_clock_advance(&f->te->clock, 0.25);
  model_step(&m);
  assert_ok(hk_loop_step_end(l, &f->st), &f->st);
  assert_non_null(h->last_metadata);
  assert_int_equal(h->last_metadata->ntrace, 1);
  assert_string_equal(h->last_metadata->trace[0].op_name, "step");
  double d = h->last_metadata->trace[0].end_secs - h->last_metadata->trace[0].start_secs;
  assert_true(d >= 0.25 && d < 0.26);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  spy_hook_free(h);
}

static hk_code failing_step(void *user, int64_t step, hk_status *st) {
  (void)user;
  return hk_status_set(st, HK_UNKNOWN, "the program's step failed at %lld", (long long)step);
}

/* A failing step skips the step's after_run (C13), fails the loop (sticky),
 * and finish writes no final checkpoint (C16) and returns the error. */
static void test_loop__step_error_is_sticky_and_writes_nothing(void **state) {
  fx *f = *state;
  spy_hook *h = spy_hook_new("h", NULL, NULL);
  hk_hook *hooks[1] = {h->hook};
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  o.save_steps = 100;
  o.hooks = hooks;
  o.nhooks = 1;
  hk_loop *l = NULL;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &m, f);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  assert_ok(hk_loop_step(l, step_fn, &m, &f->st), &f->st);
  assert_status(hk_loop_step(l, failing_step, &m, &f->st), &f->st, HK_UNKNOWN, "failed at 1");
  assert_int_equal(h->calls[SPY_BEFORE_RUN], 2);
  assert_int_equal(h->calls[SPY_AFTER_RUN], 1);
  assert_true(hk_loop_should_stop(l));
  assert_status(hk_loop_step_begin(l, NULL, &f->st), &f->st, HK_UNKNOWN, "failed at 1");
  assert_status(hk_loop_finish(l, &f->st), &f->st, HK_UNKNOWN, "failed at 1");
  assert_int_equal(h->calls[SPY_END], 0);
  char *p = ckpt_file(f, "model.ckpt-1");
  assert_false(test_path_exists(p));
  free(p);
  assert_status(hk_loop_finish(l, &f->st), &f->st, HK_UNKNOWN, "failed at 1");
  hk_loop_free(l);
  spy_hook_free(h);
}

static hk_code three_then_done(void *user, int64_t step, hk_status *st) {
  if (step >= 3) return hk_status_set(st, HK_OUT_OF_RANGE, "no more data");
  model_step(user);
  return HK_OK;
}

/* OUT_OF_RANGE from the step ends the loop cleanly (C35, H15): run returns
 * OK, finish writes the final checkpoint. */
static void test_loop__out_of_range_ends_cleanly(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  o.save_steps = 100;
  hk_loop *l = NULL;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &m, f);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  assert_ok(hk_loop_run(l, three_then_done, &m, &f->st), &f->st);
  assert_int_equal(m.steps_run, 3);
  assert_true(hk_loop_should_stop(l));
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  char *p = ckpt_file(f, "model.ckpt-3");
  assert_true(test_path_exists(p));
  free(p);
}

/* num_steps counts from the step the start resumed at (D13). */
static void test_loop__num_steps_counts_from_resume(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  o.num_steps = 3;
  assert_int_equal(run_to(f, &m, &o), 0);
  assert_int_equal(run_to(f, &m, &o), 3);
  assert_int_equal(m.steps_run, 6);
}

/* ---- the global step ------------------------------------------------------------- */

/* A program-owned global step is restored into the program's variable and
 * drives the stop condition. */
static void test_loop__program_owned_global_step(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  m.my_step = 10;
  hk_loop_options o = opts_for(f);
  o.last_step = 13;
  hk_loop *l = NULL;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &m, f);
  assert_ok(hk_loop_add_array(l, "step", HK_DTYPE_I64, 0, NULL, &m.my_step, HK_LOOP_GLOBAL_STEP, &f->st), &f->st);
  int64_t step = 0;
  assert_ok(hk_loop_start(l, &step, &f->st), &f->st);
  assert_int_equal(step, 10);
  assert_ok(hk_loop_run(l, step_fn, &m, &f->st), &f->st);
  assert_int_equal(m.my_step, 13);
  assert_int_equal(m.steps_run, 3);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  char *p = ckpt_file(f, "model.ckpt-13");
  assert_true(test_path_exists(p));
  free(p);
}

/* A global step that never moves is a warning within the first step, and
 * 100 such steps fail the loop instead of looping forever. */
static void test_loop__global_step_that_never_moves(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  m.advance = 0;
  hk_loop_options o = opts_for(f);
  o.checkpoint_dir = NULL;
  o.save_steps = HK_UNSET_STEPS;
  o.last_step = 5;
  hk_loop *l = NULL;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  assert_ok(hk_loop_add_array(l, "my_step", HK_DTYPE_I64, 0, NULL, &m.my_step, HK_LOOP_GLOBAL_STEP, &f->st), &f->st);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  assert_ok(hk_loop_step(l, step_fn, &m, &f->st), &f->st);
  assert_logged(f->te, HK_LOG_WARNING, "global step did not move");
  hk_code rc = HK_OK;
  int steps = 1;
  while (!hk_loop_should_stop(l) && steps < 1000) {
    rc = hk_loop_step(l, step_fn, &m, &f->st);
    steps++;
  }
  assert_status(rc, &f->st, HK_FAILED_PRECONDITION, "has not moved in 100 steps");
  assert_int_equal(steps, 100);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, "did not move"), 5);
  assert_status(hk_loop_finish(l, &f->st), &f->st, HK_FAILED_PRECONDITION, "has not moved");
  hk_loop_free(l);
}

/* ---- signals, stop requests ------------------------------------------------------------- */

static hk_code term_at_2(void *user, int64_t step, hk_status *st) {
  (void)st;
  model_step(user);
  if (step == 2) raise(SIGTERM);
  return HK_OK;
}

/* D12: SIGTERM stops the loop after the step in progress; finish writes the
 * final checkpoint and returns OK. */
static void test_loop__sigterm_stops_cleanly(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  o.save_steps = 100;
  o.handle_signals = 1;
  hk_loop *l = NULL;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &m, f);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  assert_ok(hk_loop_run(l, term_at_2, &m, &f->st), &f->st);
  assert_int_equal(m.steps_run, 3);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  char *p = ckpt_file(f, "model.ckpt-3");
  assert_true(test_path_exists(p));
  free(p);
  assert_int_equal(hk_signal_fired(), 0); /* uninstalled, flag cleared */
}

static void *stopper(void *arg) {
  hk_loop_request_stop(arg);
  return NULL;
}

/* hk_loop_request_stop() from another thread stops after the step. */
static void test_loop__request_stop_from_another_thread(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  hk_loop *l = NULL;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &m, f);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  assert_ok(hk_loop_step(l, step_fn, &m, &f->st), &f->st);
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, stopper, l), 0);
  pthread_join(t, NULL);
  assert_true(hk_loop_should_stop(l));
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  char *p = ckpt_file(f, "model.ckpt-1");
  assert_true(test_path_exists(p));
  free(p);
}

/* ---- log level ------------------------------------------------------------------------ */

/* One log level reaches everything the loop creates, and hooks the program
 * creates with env NULL: at WARNING, a whole run with checkpoints logs no
 * INFO line at all. */
static void test_loop__log_level_reaches_every_hook(void **state) {
  fx *f = *state;
  f->te->env.log_level = HK_LOG_WARNING;
  hk_hook *ck = NULL;
  hk_checkpoint_saver_options co = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
  char *other = test_path(f->dir, "user_ck");
  co.checkpoint_dir = other;
  co.save_steps = 1;
  assert_ok(hk_checkpoint_saver_hook_new(&ck, &co, &f->st), &f->st);
  hk_hook *hooks[1] = {ck};
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  o.last_step = 3;
  o.hooks = hooks;
  o.nhooks = 1;
  run_to(f, &m, &o);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, ""), 0);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_DEBUG, ""), 0);
  hk_hook_free(ck);
  test_tmpdir_remove(other);
  free(other);
}

/* ---- allocation (H7) -------------------------------------------------------------------- */

/* extras: the loop's NaN guard on "loss", an EarlyStoppingHook among its
 * own hooks (evaluating far apart) and best-k retention by "loss" (H45,
 * H46): none of them allocates on a step where nothing triggers. */
static void steady_state_allocates_nothing(fx *f, int async, int nhooks, int extras) {
  spy_hook *spies[10];
  hk_hook *hooks[10];
  hk_hook *es = NULL;
  for (int i = 0; i < nhooks; i++) {
    char name[16];
    snprintf(name, sizeof name, "spy%d", i);
    spies[i] = spy_hook_new(name, NULL, NULL);
    hooks[i] = spies[i]->hook;
  }
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  o.save_steps = 5;
  o.async_checkpoint = async;
  o.hooks = hooks;
  o.nhooks = (size_t)nhooks;
  if (extras) {
    hk_early_stopping_options eo = HK_EARLY_STOPPING_OPTIONS_INIT;
    eo.monitor = "loss";
    eo.every_n_steps = 1000;
    eo.state = "early_stopping";
    assert_ok(hk_early_stopping_hook_new(&es, &eo, &f->st), &f->st);
    o.nan_guard = "loss";
    o.best_k = 2;
    o.best_metric = "loss";
  }
  hk_loop *l = NULL;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &m, f);
  if (es) assert_ok(hk_loop_add_early_stopping(l, es, &f->st), &f->st);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  /* H47: the default StepCounter (every 100 steps into the checkpoint
   * directory) is attached; it triggers at step 1 and 101, not at 7..9. */
  assert_true(hook_index(l, "StepCounterHook") >= 0);
  /* Past the first saves (at 0 and 5: the snapshot buffer and writer exist). */
  for (int i = 0; i < 6; i++) assert_ok(hk_loop_step(l, step_fn, &m, &f->st), &f->st);
  /* The asynchronous save of step 5 may have been deferred while the writer
   * was busy (D3.3, a slow machine or a sanitizer), and processing its
   * completion is the hook triggering (it may allocate), at whichever step
   * finds it done: a managed save now waits for the writer, processes its
   * result and restarts the cadence from step 6. */
  if (async) assert_ok(hk_loop_save(NULL, l, NULL, &f->st), &f->st);
  test_alloc_reset_counts(&f->te->alloc);
  for (int i = 0; i < 3; i++) { /* steps 7..9: no save triggers */
    assert_ok(hk_loop_step_begin(l, NULL, &f->st), &f->st);
    model_step(&m);
    assert_ok(hk_loop_step_end(l, &f->st), &f->st);
  }
  assert_int_equal(test_alloc_count(&f->te->alloc), 0);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  hk_hook_free(es);
  for (int i = 0; i < nhooks; i++) spy_hook_free(spies[i]);
}

static void test_loop__steady_state_steps_allocate_nothing(void **state) {
  fx *f = *state;
  steady_state_allocates_nothing(f, 0, 0, 0);
  steady_state_allocates_nothing(f, 0, 10, 0);
  test_tmpdir_remove(f->ck);
  steady_state_allocates_nothing(f, 1, 1, 0);
  test_tmpdir_remove(f->ck);
  steady_state_allocates_nothing(f, 0, 1, 1);
  test_tmpdir_remove(f->ck);
  steady_state_allocates_nothing(f, 1, 1, 1);
}

/* An OOM loop (allocation N fails, for N = 0, 1, 2, ... until the loop
 * finishes): every allocation failure from new to finish is
 * RESOURCE_EXHAUSTED (or a clean finish) and leaks nothing. */
static void test_loop__oom_anywhere_is_clean(void **state) {
  fx *f = *state;
  for (long n = 0;; n++) {
    test_tmpdir_remove(f->ck);
    model m;
    model_init(&m);
    hk_loop_options o = opts_for(f);
    o.last_step = 3;
    long live = test_alloc_live(&f->te->alloc), failed_before = f->te->alloc.nfailed;
    test_alloc_fail_at(&f->te->alloc, n, 0);
    hk_loop *l = NULL;
    hk_code rc = hk_loop_new(&l, &o, &f->st);
    if (rc == HK_OK) rc = hk_loop_add_array(l, "w", HK_DTYPE_F32, 1, (const int64_t[]){6}, m.w, 0, &f->st);
    if (rc == HK_OK) rc = hk_loop_add_state(l, "rng", sizeof m.r, rng_save, rng_restore, &m.r, 0, &f->st);
    if (rc == HK_OK) rc = hk_loop_start(l, NULL, &f->st);
    if (rc == HK_OK) rc = hk_loop_run(l, step_fn, &m, &f->st);
    hk_code frc = l ? hk_loop_finish(l, &f->st) : rc;
    if (rc == HK_OK) rc = frc;
    hk_loop_free(l);
    long injected = f->te->alloc.nfailed - failed_before;
    test_alloc_fail_at(&f->te->alloc, -1, 0);
    assert_int_equal(test_alloc_live(&f->te->alloc), live);
    if (injected == 0) {
      assert_ok(rc, &f->st);
      break;
    }
    assert_status(rc, &f->st, HK_RESOURCE_EXHAUSTED, NULL);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_loop__hooks_bracket_the_step, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__trace_times_the_program_step, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__step_error_is_sticky_and_writes_nothing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__out_of_range_ends_cleanly, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__num_steps_counts_from_resume, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__program_owned_global_step, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__global_step_that_never_moves, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__sigterm_stops_cleanly, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__request_stop_from_another_thread, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__log_level_reaches_every_hook, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__steady_state_steps_allocate_nothing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__oom_anywhere_is_clean, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
