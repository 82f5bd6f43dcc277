/*
 * test_loop — the host loop's bad arguments and misuse: every refusal names
 * what is wrong and leaves the loop as it was.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "loop_tests.h"

/* ---- bad arguments and misuse ---------------------------------------------------------- */

static void test_loop__bad_options_have_no_side_effect(void **state) {
  fx *f = *state;
  hk_loop *l = (hk_loop *)1;
  hk_loop_options o = opts_for(f);
  o.save_secs = 10;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "Can not provide both save_secs and save_steps.");
  assert_null(l);
  o = opts_for(f);
  o.save_steps = -1;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "save_steps");
  o = opts_for(f);
  o.num_steps = 1;
  o.last_step = 2;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "Only one of num_steps or last_step");
  o = opts_for(f);
  o.checkpoint_basename = "a/b";
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "checkpoint_basename");
  o = opts_for(f);
  o.checkpoint_dir = NULL;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "checkpoint_dir");
  o = opts_for(f);
  o.max_to_keep = -1;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "max_to_keep");
  o = opts_for(f);
  o.nhooks = 1;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "hooks");
  spy_hook *h = spy_hook_new("h", NULL, NULL);
  hk_hook *twice[2] = {h->hook, h->hook};
  o = opts_for(f);
  o.hooks = twice;
  o.nhooks = 2;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "twice");
  spy_hook_free(h);
  o = opts_for(f);
  o.version = 99;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "version");
  assert_status(hk_loop_new(NULL, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "out");
  assert_int_equal(hk_loop_options_init(NULL, HK_LOOP_OPTIONS_VERSION), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_loop_options_init(&o, 0), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_loop_options_init(&o, 99), HK_INVALID_ARGUMENT);
  /* H45, H46: the version-2 options, each named. */
  o = opts_for(f);
  o.nan_guard = "";
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "nan_guard '' is not an array name");
  o.nan_guard = "a b";
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "nan_guard 'a b'");
  o = opts_for(f);
  o.best_k = -1;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "best_k must be >= 0");
  o.best_k = 2;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "best_k 2 needs best_metric");
  o.best_metric = "a b";
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "best_metric 'a b'");
  o.best_metric = "loss";
  o.best_mode = (hk_monitor_mode)-1;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "best_mode -1");
  o.best_mode = HK_MONITOR_MAX;
  o.save_steps = 0;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "best_k needs the loop's checkpoint saves");
  o.save_steps = HK_UNSET_STEPS;
  o.checkpoint_dir = NULL;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "there is no checkpoint_dir");
  o = opts_for(f);
  o.best_metric = "loss";
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "best_metric 'loss' is given but best_k is 0");
  /* C54, H47: the version-3 options, each named. */
  o = opts_for(f);
  o.log_step_count_steps = -1;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "hk_loop_new: log_step_count_steps must be >= 0, got -1");
  o.log_step_count_steps = HK_UNSET_STEPS;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "log_step_count_steps must be >= 0");
  o = opts_for(f);
  o.summary_dir = "";
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "hk_loop_new: summary_dir is empty");
  /* The one version rule: version 0 is refused naming the struct, and
   * _init of another version writes nothing. */
  o = opts_for(f);
  o.version = 0;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "hk_loop_new: opts->version: version 0 of hk_loop_options");
  assert_null(l);
  memset(&o, 0x5a, sizeof o);
  assert_int_equal(hk_loop_options_init(&o, 0), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_loop_options_init(&o, HK_LOOP_OPTIONS_VERSION + 1), HK_INVALID_ARGUMENT);
  assert_true(o.nan_guard == (const char *)(uintptr_t)0x5a5a5a5a5a5a5a5aull);
  assert_int_equal(hk_loop_options_init(&o, HK_LOOP_OPTIONS_VERSION), HK_OK);
  assert_int_equal(o.version, HK_LOOP_OPTIONS_VERSION);
  assert_int_equal(o.handle_signals, 1);
  assert_null(o.nan_guard);
  assert_int_equal(o.best_k, 0);
  assert_null(o.best_metric);
  assert_int_equal(o.best_mode, HK_MONITOR_MIN);
  assert_false(test_path_exists(f->ck));
}

static void test_loop__bad_registrations_name_the_array(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  hk_loop *l = NULL;
  hk_loop_options o = opts_for(f);
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  static const int64_t d[1] = {6}, neg[1] = {-1};
  assert_status(hk_loop_add_array(NULL, "w", HK_DTYPE_F32, 1, d, m.w, 0, &f->st), &f->st, HK_INVALID_ARGUMENT, "loop");
  assert_status(hk_loop_add_array(l, NULL, HK_DTYPE_F32, 1, d, m.w, 0, &f->st), &f->st, HK_INVALID_ARGUMENT, "name");
  assert_status(hk_loop_add_array(l, "a b", HK_DTYPE_F32, 1, d, m.w, 0, &f->st), &f->st, HK_INVALID_ARGUMENT, "a b");
  assert_status(hk_loop_add_array(l, "", HK_DTYPE_F32, 1, d, m.w, 0, &f->st), &f->st, HK_INVALID_ARGUMENT, "name");
  assert_status(hk_loop_add_array(l, "w", HK_DTYPE_STRING, 1, d, m.w, 0, &f->st), &f->st, HK_INVALID_ARGUMENT, "'w'");
  assert_status(hk_loop_add_array(l, "w", (hk_dtype)99, 1, d, m.w, 0, &f->st), &f->st, HK_INVALID_ARGUMENT, "'w'");
  assert_status(hk_loop_add_array(l, "w", HK_DTYPE_F32, 9, d, m.w, 0, &f->st), &f->st, HK_INVALID_ARGUMENT, "'w'");
  assert_status(hk_loop_add_array(l, "w", HK_DTYPE_F32, 1, neg, m.w, 0, &f->st), &f->st, HK_INVALID_ARGUMENT, "'w'");
  assert_status(hk_loop_add_array(l, "w", HK_DTYPE_F32, 1, d, NULL, 0, &f->st), &f->st, HK_INVALID_ARGUMENT, "'w'");
  assert_status(hk_loop_add_array(l, "w", HK_DTYPE_F32, 1, d, m.w, 0x100, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "flags");
  assert_status(hk_loop_add_array(l, "w", HK_DTYPE_F32, 1, d, m.w, HK_LOOP_GLOBAL_STEP, &f->st), &f->st,
                HK_INVALID_ARGUMENT, "integer scalar");
  assert_status(hk_loop_add_array(l, "global_step", HK_DTYPE_I64, 0, NULL, &m.my_step, 0, &f->st), &f->st,
                HK_INVALID_ARGUMENT, "global_step");
  assert_ok(hk_loop_add_array(l, "w", HK_DTYPE_F32, 1, d, m.w, 0, &f->st), &f->st);
  assert_status(hk_loop_add_array(l, "w", HK_DTYPE_F32, 1, d, m.w, 0, &f->st), &f->st, HK_ALREADY_EXISTS, "'w'");
  assert_status(hk_loop_add_state(l, "w", 4, rng_save, rng_restore, NULL, 0, &f->st), &f->st, HK_ALREADY_EXISTS, "'w'");
  assert_status(hk_loop_add_state(l, "r", 4, NULL, rng_restore, NULL, 0, &f->st), &f->st, HK_INVALID_ARGUMENT, "save");
  assert_status(hk_loop_add_state(l, "r", 4, rng_save, NULL, NULL, 0, &f->st), &f->st, HK_INVALID_ARGUMENT, "restore");
  assert_status(hk_loop_add_state(l, "r", 0, rng_save, rng_restore, NULL, 0, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "size");
  assert_status(hk_loop_add_state(l, "r", 4, rng_save, rng_restore, NULL, HK_LOOP_NO_CHECKPOINT, &f->st), &f->st,
                HK_INVALID_ARGUMENT, "'r'");
  assert_ok(hk_loop_add_array(l, "s", HK_DTYPE_I64, 0, NULL, &m.my_step, HK_LOOP_GLOBAL_STEP, &f->st), &f->st);
  int64_t other = 0;
  assert_status(hk_loop_add_array(l, "s2", HK_DTYPE_I64, 0, NULL, &other, HK_LOOP_GLOBAL_STEP, &f->st), &f->st,
                HK_ALREADY_EXISTS, "global step");
  /* misuse before start */
  assert_status(hk_loop_step_begin(l, NULL, &f->st), &f->st, HK_FAILED_PRECONDITION, "not started");
  assert_status(hk_loop_step_end(l, &f->st), &f->st, HK_FAILED_PRECONDITION, "not started");
  assert_status(hk_loop_save(NULL, l, NULL, &f->st), &f->st, HK_FAILED_PRECONDITION, "not started");
  assert_true(hk_loop_should_stop(l));
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  /* misuse after start: refused, the loop carries on */
  assert_status(hk_loop_add_array(l, "late", HK_DTYPE_F32, 1, d, m.w, 0, &f->st), &f->st, HK_FAILED_PRECONDITION,
                "after hk_loop_start");
  assert_status(hk_loop_start(l, NULL, &f->st), &f->st, HK_FAILED_PRECONDITION, "already started");
  assert_status(hk_loop_step_end(l, &f->st), &f->st, HK_FAILED_PRECONDITION, "no step is open");
  assert_ok(hk_loop_step_begin(l, NULL, &f->st), &f->st);
  assert_status(hk_loop_step_begin(l, NULL, &f->st), &f->st, HK_FAILED_PRECONDITION, "already open");
  m.my_step++;
  assert_ok(hk_loop_step_end(l, &f->st), &f->st);
  assert_status(hk_loop_step(l, NULL, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "fn");
  assert_status(hk_loop_run(l, NULL, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "fn");
  assert_false(hk_loop_should_stop(l));
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  assert_status(hk_loop_step_begin(l, NULL, &f->st), &f->st, HK_FAILED_PRECONDITION, "finished");
  hk_loop_free(l);
  /* NULL everywhere */
  assert_status(hk_loop_start(NULL, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "loop");
  assert_status(hk_loop_step_begin(NULL, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "loop");
  assert_status(hk_loop_step_end(NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "loop");
  assert_status(hk_loop_save(NULL, NULL, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "loop");
  assert_status(hk_loop_finish(NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "loop");
  assert_true(hk_loop_should_stop(NULL));
  hk_loop_request_stop(NULL);
  hk_loop_free(NULL);
  assert_int_equal(hk_loop_global_step(NULL), 0);
  assert_null(hk_loop_restored_checkpoint(NULL));
  assert_null(hk_loop_executor(NULL));
  assert_null(hk_loop_session(NULL));
}

/* Freeing a started loop without finish logs a warning and writes no final
 * checkpoint (it is not a clean end). */
static void test_loop__free_without_finish(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  o.save_steps = 100;
  hk_loop *l = NULL;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &m, f);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  assert_ok(hk_loop_step(l, step_fn, &m, &f->st), &f->st);
  hk_loop_free(l);
  assert_logged(f->te, HK_LOG_WARNING, "without hk_loop_finish");
  char *p = ckpt_file(f, "model.ckpt-1");
  assert_false(test_path_exists(p));
  free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_loop__bad_options_have_no_side_effect, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__bad_registrations_name_the_array, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__free_without_finish, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
