/*
 * test_loop — the host loop's own hooks (early stopping, StopAtStep, the
 * StepCounter, the program's hooks after them) and the NaN guard (H46).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "loop_tests.h"

/* ---- the loop's own hooks ------------------------------------------------------------- */

/* Start a loop over the model with `o`, run `n` steps 0.5 s apart on the
 * mock clock (2 steps/s), and return it, started. */
static hk_loop *run_half_second_steps(fx *f, model *m, const hk_loop_options *o, int n) {
  hk_loop *l = NULL;
  assert_ok(hk_loop_new(&l, o, &f->st), &f->st);
  add_model(l, m, f);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  for (int i = 0; i < n; i++) {
    assert_ok(hk_loop_step(l, step_fn, m, &f->st), &f->st);
    test_clock_advance(&f->te->clock, 0.5);
  }
  return l;
}

/* C52, C53, H47: with summary_dir NULL the loop's StepCounter writes
 * global_step/sec every 100 steps into the checkpoint directory (and logs
 * it), into the one event file the session shares for it (H26) with the
 * checkpoint hook's CHECKPOINT events and the program's own scalars. */
static void test_loop__step_counter_writes_into_checkpoint_dir_by_default(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  o.save_steps = 1000;
  hk_loop *l = run_half_second_steps(f, &m, &o, 201);
  assert_ok(hk_loop_summary_scalar(l, f->ck, "loss", m.loss, &f->st), &f->st);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  assert_logged(f->te, HK_LOG_INFO, "global_step/sec: 2");
  ev_file *ef = event_file_only(f->ck); /* one file: the writer is shared */
  const ev_event *e = NULL;
  assert_int_equal(event_file_count_tag(ef, "global_step/sec"), 2);
  const ev_value *v = event_file_find(ef, "global_step/sec", 0, &e);
  assert_true(e->step == 101 && v->simple == 2.0f); /* 100 steps in 50 s */
  v = event_file_find(ef, "global_step/sec", (size_t)(e - ef->events) + 1, &e);
  assert_true(e->step == 201 && v->simple == 2.0f);
  v = event_file_find(ef, "loss", 0, &e);
  assert_true(v != NULL && e->step == 201);
  int checkpoints = 0;
  for (size_t k = 0; k < ef->n; k++)
    if (ef->events[k].kind == EV_SESSION_LOG && ef->events[k].status == 3) checkpoints++;
  assert_int_equal(checkpoints, 2); /* at the start (0) and the final one (201) */
  event_file_free(ef);
}

/* C52, H47: a summary_dir takes the StepCounter's rate away from the
 * checkpoint directory; the program's scalars there share its file (H26). */
static void test_loop__summary_dir_overrides_checkpoint_dir(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  char *tb = test_path(f->dir, "tb");
  hk_loop_options o = opts_for(f);
  o.save_steps = 1000;
  o.summary_dir = tb;
  o.log_step_count_steps = 10;
  hk_loop *l = run_half_second_steps(f, &m, &o, 21);
  assert_ok(hk_loop_summary_scalar(l, tb, "loss", m.loss, &f->st), &f->st);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  ev_file *ef = event_file_only(tb);
  const ev_event *e = NULL;
  assert_int_equal(event_file_count_tag(ef, "global_step/sec"), 2); /* at 11 and 21 */
  assert_non_null(event_file_find(ef, "global_step/sec", 0, &e));
  assert_true(e->step == 11);
  assert_non_null(event_file_find(ef, "loss", 0, &e));
  assert_true(e->step == 21);
  event_file_free(ef);
  ef = event_file_only(f->ck); /* the checkpoint hook's events only */
  assert_int_equal(event_file_count_tag(ef, "global_step/sec"), 0);
  event_file_free(ef);
  free(tb);
}

/* C54, H47: log_step_count_steps 0 runs no StepCounter, so a loop whose
 * checkpoint saves are off too writes no event file; the default one does. */
static void test_loop__zero_log_step_count_steps_runs_no_step_counter(void **state) {
  fx *f = *state;
  for (int off = 0; off <= 1; off++) {
    model m;
    model_init(&m);
    test_tmpdir_remove(f->ck);
    assert_int_equal(mkdir(f->ck, 0700), 0);
    hk_loop_options o = opts_for(f);
    o.save_steps = 0;
    if (off) o.log_step_count_steps = 0;
    hk_loop *l = run_half_second_steps(f, &m, &o, 101);
    assert_int_equal(hook_index(l, "StepCounterHook") >= 0, !off);
    assert_ok(hk_loop_finish(l, &f->st), &f->st);
    hk_loop_free(l);
    assert_int_equal(test_dir_count_matching(f->ck, "tfevents"), !off);
  }
  /* No directory at all: no StepCounter either. */
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  o.checkpoint_dir = NULL;
  o.save_steps = HK_UNSET_STEPS;
  hk_loop *l = run_half_second_steps(f, &m, &o, 1);
  assert_int_equal(hook_index(l, "StepCounterHook"), -1);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
}

/* H46, H47: the loop's own hooks run in this order — its watch, the NaN
 * guard, the early stopping, StopAtStep, the StepCounter, the checkpoint
 * saver — and then the program's. */
static void test_loop__own_hooks_run_in_order_step_counter_before_saver(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  spy_hook *spy = spy_hook_new("spy", NULL, NULL);
  hk_hook *hooks[1] = {spy->hook};
  hk_hook *es = NULL;
  hk_early_stopping_options eo = HK_EARLY_STOPPING_OPTIONS_INIT;
  eo.monitor = "loss";
  eo.every_n_steps = 1000;
  assert_ok(hk_early_stopping_hook_new(&es, &eo, &f->st), &f->st);
  for (int async = 0; async <= 1; async++) {
    hk_loop_options o = opts_for(f);
    o.async_checkpoint = async;
    o.nan_guard = "loss";
    o.last_step = 10;
    o.hooks = hooks;
    o.nhooks = 1;
    hk_loop *l = NULL;
    assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
    add_model(l, &m, f);
    assert_ok(hk_loop_add_early_stopping(l, es, &f->st), &f->st);
    assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
    const char *want[] = {"host loop",
                          "NanTensorHook",
                          "EarlyStoppingHook",
                          "StopAtStepHook",
                          "StepCounterHook",
                          async ? "AsyncCheckpointSaverHook" : "CheckpointSaverHook",
                          "spy"};
    hk_session *s = hk_loop_session(l);
    assert_int_equal(hk_session_hook_count(s), 7);
    for (size_t i = 0; i < 7; i++) assert_string_equal(hk_hook_name(hk_session_hook(s, i)), want[i]);
    assert_ok(hk_loop_finish(l, &f->st), &f->st);
    hk_loop_free(l);
    test_tmpdir_remove(f->ck);
  }
  hk_hook_free(es);
  spy_hook_free(spy);
}

/* H47: options left at their defaults (no summary_dir, the default
 * log_step_count_steps) run the default StepCounter into the checkpoint
 * directory. */
static void test_loop__default_options_get_the_default_step_counter(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  hk_loop_options o;
  memset(&o, 0x5a, sizeof o);
  assert_int_equal(hk_loop_options_init(&o, HK_LOOP_OPTIONS_VERSION), HK_OK);
  assert_int_equal(o.version, HK_LOOP_OPTIONS_VERSION);
  assert_int_equal(o.best_mode, HK_MONITOR_MIN);
  assert_null(o.summary_dir);
  assert_int_equal(o.log_step_count_steps, 100);
  o.env = &f->te->env;
  o.checkpoint_dir = f->ck;
  o.save_steps = 1000;
  o.handle_signals = 0;
  hk_loop *l = run_half_second_steps(f, &m, &o, 101);
  assert_int_equal(hook_index(l, "StepCounterHook"), 1);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  ev_file *ef = event_file_only(f->ck);
  const ev_event *e = NULL;
  assert_non_null(event_file_find(ef, "global_step/sec", 0, &e));
  assert_true(e->step == 101);
  event_file_free(ef);
}

/* ---- the NaN guard (H46) ----------------------------------------------------------------- */

/* Every checkpoint of f->ck verifies, names a listed step, and holds finite
 * values of "w"; @return how many, *newest the newest one's step. */
static int checkpoints_finite(fx *f, int64_t *newest) {
  hk_checkpoint_state *cs = NULL;
  assert_ok(hk_checkpoint_state_get(&cs, &f->te->env, f->ck, NULL, &f->st), &f->st);
  size_t n = hk_checkpoint_state_count(cs);
  for (size_t i = 0; i < n; i++) {
    hk_checkpoint_reader *r = NULL;
    size_t index;
    float w[6];
    assert_ok(hk_checkpoint_reader_open(&r, &f->te->env, hk_checkpoint_state_path(cs, i), &f->st), &f->st);
    assert_ok(hk_checkpoint_reader_verify(r, &f->st), &f->st);
    assert_ok(hk_checkpoint_reader_find(r, "w", &index, &f->st), &f->st);
    assert_ok(hk_checkpoint_reader_read(r, index, w, sizeof w, &f->st), &f->st);
    for (int k = 0; k < 6; k++) assert_true(isfinite(w[k]));
    *newest = hk_checkpoint_reader_step(r);
    hk_checkpoint_reader_free(r);
  }
  hk_checkpoint_state_free(cs);
  return (int)n;
}

/* A step that leaves the loss NaN on a save step (6, save_steps 2) fails
 * the loop before the loop's own checkpoint hook saves it: no checkpoint 6,
 * no final one, every checkpoint finite, the newest the last good step, and
 * hk_loop_finish() returns the guard's error (C134, H2). A new run resumes
 * there. */
static void nan_guard_case(fx *f, int async) {
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  o.max_to_keep = 3;
  o.async_checkpoint = async;
  o.nan_guard = "loss";
  hk_loop *l = NULL;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &m, f);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  /* The guard runs before the loop's StepCounter (H47) and checkpoint hook. */
  hk_session *s = hk_loop_session(l);
  assert_string_equal(hk_hook_name(hk_session_hook(s, 1)), "NanTensorHook");
  assert_string_equal(hk_hook_name(hk_session_hook(s, 2)), "StepCounterHook");
  assert_string_equal(hk_hook_name(hk_session_hook(s, 3)), async ? "AsyncCheckpointSaverHook" : "CheckpointSaverHook");
  for (int i = 1; i <= 5; i++) assert_ok(hk_loop_step(l, step_fn, &m, &f->st), &f->st);
  model good = m;
  assert_ok(hk_loop_step_begin(l, NULL, &f->st), &f->st);
  model_step(&m);
  m.loss = NAN;
  for (int i = 0; i < 6; i++) m.w[i] = NAN; /* the divergent step wrecked the weights too */
  assert_status(hk_loop_step_end(l, &f->st), &f->st, HK_INVALID_ARGUMENT, "NaN loss during training.");
  assert_true(hk_loop_should_stop(l));
  assert_status(hk_loop_finish(l, &f->st), &f->st, HK_INVALID_ARGUMENT, "NaN loss during training.");
  hk_loop_free(l);
  assert_logged(f->te, HK_LOG_ERROR, "Model diverged with loss = NaN.");
  char *six = ckpt_file(f, "model.ckpt-6");
  assert_false(test_path_exists(six));
  free(six);
  int64_t newest = -1;
  int n = checkpoints_finite(f, &newest);
  if (!async) {
    assert_int_equal(n, 3); /* 0, 2, 4 */
    assert_int_equal(newest, 4);
  } else {
    /* A save may be deferred while the writer is busy (D3.3): which steps
     * are saved varies, never 6. */
    assert_true(n >= 1 && newest <= 5);
  }

  model r;
  model_init(&r);
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &r, f);
  int64_t step = -1;
  assert_ok(hk_loop_start(l, &step, &f->st), &f->st);
  assert_int_equal(step, newest);
  assert_true(isfinite(r.w[0]));
  if (newest < 5) assert_false(memcmp(r.w, good.w, sizeof r.w) == 0); /* the newest checkpoint, not step 5 */
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
}

/* H46: the nan_guard array stops the loop on a NaN before the step's values reach a checkpoint. */
static void test_loop__nan_guard_keeps_nan_out_of_checkpoints(void **state) {
  fx *f = *state;
  nan_guard_case(f, 0);
  test_tmpdir_remove(f->ck);
  test_log_clear(&f->te->log);
  nan_guard_case(f, 1);
}

/* H46: what nan_guard and best_metric name is checked at the start, before
 * anything is built or created, naming the option. */
static void test_loop__arrays_named_by_options_are_checked_at_start(void **state) {
  fx *f = *state;
  static const struct {
    const char *nan_guard, *best_metric;
    hk_code code;
    const char *msg;
  } cases[] = {
      {"nope", NULL, HK_FAILED_PRECONDITION, "nan_guard 'nope' names no registered array"},
      {"rng", NULL, HK_INVALID_ARGUMENT, "nan_guard 'rng' is an opaque state"},
      {"step", NULL, HK_INVALID_ARGUMENT, "nan_guard 'step' is i64"},
      {NULL, "nope", HK_FAILED_PRECONDITION, "best_metric 'nope' names no registered array"},
      {NULL, "w", HK_INVALID_ARGUMENT, "best_metric 'w' is an array of more than one element"},
      {NULL, "rng", HK_INVALID_ARGUMENT, "best_metric 'rng' is an opaque state"},
      {"loss", "loss", HK_OK, NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    model m;
    model_init(&m);
    hk_loop_options o = opts_for(f);
    o.nan_guard = cases[i].nan_guard;
    o.best_metric = cases[i].best_metric;
    o.best_k = cases[i].best_metric ? 1 : 0;
    hk_loop *l = NULL;
    assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
    add_model(l, &m, f);
    assert_ok(hk_loop_add_array(l, "step", HK_DTYPE_I64, 0, NULL, &m.my_step, HK_LOOP_NO_CHECKPOINT, &f->st), &f->st);
    hk_code rc = hk_loop_start(l, NULL, &f->st);
    if (cases[i].code == HK_OK) {
      assert_ok(rc, &f->st);
      assert_ok(hk_loop_finish(l, &f->st), &f->st);
      assert_true(test_path_exists(f->ck));
    } else {
      assert_status(rc, &f->st, cases[i].code, cases[i].msg);
      assert_true(hk_loop_should_stop(l));
      assert_status(hk_loop_finish(l, &f->st), &f->st, cases[i].code, cases[i].msg);
      assert_false(test_path_exists(f->ck)); /* nothing created */
    }
    hk_loop_free(l);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_loop__step_counter_writes_into_checkpoint_dir_by_default, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__summary_dir_overrides_checkpoint_dir, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__zero_log_step_count_steps_runs_no_step_counter, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__own_hooks_run_in_order_step_counter_before_saver, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__default_options_get_the_default_step_counter, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__nan_guard_keeps_nan_out_of_checkpoints, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__arrays_named_by_options_are_checked_at_start, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
