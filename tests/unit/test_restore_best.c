/*
 * Tests of restoring the best weights at the end (Keras'
 * restore_best_weights; contract H76): after a run whose ranked metric got
 * worse at the end, the model holds the best checkpoint's values, byte for
 * byte — the host loop's arrays (restore_best) and the graph's variables
 * (the checkpoint saver hook's restore_best, and a MonitoredTrainingSession
 * passing it on) — and a run with no best checkpoint fails with a message
 * naming the record. hk_checkpoint_best() reads the record. Everything goes
 * through the public headers.
 */
#include "session_fixture.h"
#include "tmpdir.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NSTEPS 6
#define BEST_STEP 3

/* The program's weights after global step s, and the metric its
 * evaluation gives then: best (lowest) at BEST_STEP, worse after. */
static void weights_at(int64_t s, float w[4]) {
  for (int i = 0; i < 4; i++) w[i] = (float)s * 1.25f + (float)i;
}
static float metric_at(int64_t s) { return (float)((s - BEST_STEP) * (s - BEST_STEP)) + 0.5f; }

typedef struct fixture {
  test_env *te;
  hk_status st;
  char *dir;
  /* the program's memory (the host loop's arrays, the graph's external variables) */
  float w[4];
  float val;
  /* graph */
  hk_graph *g;
  hk_handle gs, train;
  hk_hook *ck;
  hk_session *s;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  assert_non_null(f);
  f->te = test_env_new();
  f->dir = test_tmpdir_new("restore-best");
  f->val = 100.0f; /* what the creation's checkpoint 0 is ranked by: not the best */
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  if (f->s) {
    (void)hk_session_close(f->s, HK_OK, NULL);
    hk_session_free(f->s);
  }
  hk_hook_free(f->ck);
  hk_graph_free(f->g);
  test_tmpdir_free(f->dir);
  test_env *te = f->te;
  free(f);
  return test_env_release(te);
}

/* The bytes of "w" in checkpoint <dir>/model.ckpt-<step>. */
static void checkpoint_w(fixture *f, int64_t step, float out[4]) {
  char name[64];
  hk_checkpoint_reader *r = NULL;
  size_t i;
  snprintf(name, sizeof name, "model.ckpt-%d", (int)step);
  char *prefix = test_path(f->dir, name);
  assert_ok(hk_checkpoint_reader_open(&r, NULL, prefix, &f->st), &f->st);
  assert_ok(hk_checkpoint_reader_find(r, "w", &i, &f->st), &f->st);
  assert_ok(hk_checkpoint_reader_read(r, i, out, 4 * sizeof(float), &f->st), &f->st);
  hk_checkpoint_reader_free(r);
  free(prefix);
}

/* ---- the host loop ------------------------------------------------------------------------- */

static hk_loop *loop_new(fixture *f, int restore_best, int64_t *gs_out) {
  static const int64_t four[1] = {4};
  hk_loop_options lo = HK_LOOP_OPTIONS_INIT;
  hk_loop *l = NULL;
  (void)gs_out;
  lo.env = &f->te->env;
  lo.handle_signals = 0;
  lo.checkpoint_dir = f->dir;
  lo.save_steps = 1;
  lo.max_to_keep = 2;
  lo.last_step = NSTEPS;
  lo.log_step_count_steps = 0;
  lo.best_k = 1;
  lo.best_metric = "val";
  lo.restore_best = restore_best;
  assert_ok(hk_loop_new(&l, &lo, &f->st), &f->st);
  assert_ok(hk_loop_add_array(l, "w", HK_DTYPE_F32, 1, four, f->w, 0, &f->st), &f->st);
  assert_ok(hk_loop_add_array(l, "val", HK_DTYPE_F32, 0, NULL, &f->val, HK_LOOP_NO_CHECKPOINT, &f->st), &f->st);
  return l;
}

static void loop_train(fixture *f, hk_loop *l, int nan_metric) {
  int64_t step = 0;
  if (nan_metric) f->val = NAN;
  assert_ok(hk_loop_start(l, &step, &f->st), &f->st);
  while (!hk_loop_should_stop(l)) {
    assert_ok(hk_loop_step_begin(l, &step, &f->st), &f->st);
    weights_at(step + 1, f->w);
    f->val = nan_metric ? NAN : metric_at(step + 1);
    assert_ok(hk_loop_step_end(l, &f->st), &f->st);
  }
}

/* H76: the metric was best at step 3 and worse at the end: after
 * hk_loop_finish() the program's array holds checkpoint 3's bytes (kept by
 * best-k retention though max_to_keep is 2), the global step stays 6, and
 * the line names the checkpoint, its step and its value. */
static void test_restore_best__loop_arrays_hold_the_best_checkpoint(void **state) {
  fixture *f = *state;
  float want[4], last[4];
  hk_loop *l = loop_new(f, 1, NULL);
  loop_train(f, l, 0);
  weights_at(NSTEPS, last);
  assert_memory_equal(f->w, last, sizeof last);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  checkpoint_w(f, BEST_STEP, want);
  assert_memory_equal(f->w, want, sizeof want);
  assert_int_equal(hk_loop_global_step(l), NSTEPS);
  assert_logged(f->te, HK_LOG_INFO, "Restored the best checkpoint");
  assert_logged(f->te, HK_LOG_INFO, "model.ckpt-3 (step 3, val = 0.5) into the program's arrays (1).");
  hk_loop_free(l);

  /* hk_checkpoint_best() reads the same record. */
  char *prefix = NULL;
  double value = 0;
  char *expect = test_path(f->dir, "model.ckpt-3");
  assert_ok(hk_checkpoint_best(&prefix, &value, NULL, f->dir, NULL, &f->st), &f->st);
  assert_string_equal(prefix, expect);
  assert_true(value == 0.5);
  hk_env_free(NULL, prefix);
  free(expect);
}

/* Without restore_best the arrays keep the last step's values. */
static void test_restore_best__loop_without_the_option_keeps_the_last_values(void **state) {
  fixture *f = *state;
  float last[4];
  hk_loop *l = loop_new(f, 0, NULL);
  loop_train(f, l, 0);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  weights_at(NSTEPS, last);
  assert_memory_equal(f->w, last, sizeof last);
  hk_loop_free(l);
}

/* H76: no best checkpoint (every ranked value NaN): hk_loop_finish() fails
 * with NOT_FOUND naming the record, the arrays keep the last values; and
 * restore_best without best_k is refused at hk_loop_new(). */
static void test_restore_best__loop_without_a_best_checkpoint_fails_clearly(void **state) {
  fixture *f = *state;
  float last[4];
  hk_loop *l = loop_new(f, 1, NULL);
  loop_train(f, l, 1);
  assert_status(hk_loop_finish(l, &f->st), &f->st, HK_NOT_FOUND, "restore_best: No best-checkpoint record");
  assert_true(strstr(f->st.message, "checkpoint.best") != NULL);
  weights_at(NSTEPS, last);
  assert_memory_equal(f->w, last, sizeof last);
  hk_loop_free(l);

  hk_loop_options lo = HK_LOOP_OPTIONS_INIT;
  lo.checkpoint_dir = f->dir;
  lo.restore_best = 1;
  l = NULL;
  assert_status(hk_loop_new(&l, &lo, &f->st), &f->st, HK_INVALID_ARGUMENT, "restore_best needs best_k");
  assert_null(l);
  char *prefix = NULL;
  assert_status(hk_checkpoint_best(&prefix, NULL, NULL, f->dir, "other", &f->st), &f->st, HK_NOT_FOUND,
                "No best-checkpoint record");
  assert_null(prefix);
}

/* ---- the graph executor --------------------------------------------------------------------- */

/* GS += 1 per run; "w" (F32[4]) and "val" (its metric, local) are the
 * test's memory, which each step sets. */
static void build(fixture *f) {
  static const int64_t four[1] = {4};
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_variable_def vd = HK_VARIABLE_DEF_INIT;
  hk_handle one_h, h;
  int64_t one = 1;
  hk_tensor t;
  go.env = &f->te->env;
  assert_ok(hk_graph_new(&f->g, &go, &f->st), &f->st);
  assert_ok(hk_graph_get_or_create_global_step(f->g, &f->gs, &f->st), &f->st);
  t = hk_tensor_scalar_i64(&one);
  assert_ok(hk_graph_constant(f->g, &one_h, "one", &t, &f->st), &f->st);
  assert_ok(hk_graph_assign_add(f->g, &f->train, "train", f->gs, one_h, &f->st), &f->st);
  vd.name = "w";
  vd.dtype = HK_DTYPE_F32;
  vd.rank = 1;
  vd.dims = four;
  vd.external_data = f->w;
  assert_ok(hk_graph_variable(f->g, &h, &vd, &f->st), &f->st);
  vd.name = "val";
  vd.rank = 0;
  vd.dims = NULL;
  vd.flags = HK_VAR_LOCAL;
  vd.external_data = &f->val;
  assert_ok(hk_graph_variable(f->g, &h, &vd, &f->st), &f->st);
}

static void graph_train(fixture *f) {
  for (int64_t s = 1; s <= NSTEPS; s++) {
    weights_at(s, f->w);
    f->val = metric_at(s);
    assert_ok(session_run_train(f->s, f->train, &f->st), &f->st);
  }
}

/* H76: the checkpoint saver hook's restore_best, at its clean end(): the
 * graph's variable holds checkpoint 3's bytes after the close, and the
 * global step is the last one. */
static void test_restore_best__graph_variables_hold_the_best_checkpoint(void **state) {
  fixture *f = *state;
  hk_checkpoint_saver_options co = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
  hk_session_options so;
  float want[4];
  build(f);
  co.checkpoint_dir = f->dir;
  co.save_steps = 1;
  co.save_graph_def = 0;
  co.best_k = 1;
  co.best_metric = "val";
  co.restore_best = 1;
  assert_ok(hk_checkpoint_saver_hook_new(&f->ck, &co, &f->st), &f->st);
  test_session_options(&so, &f->te->env, HK_SESSION_SINGULAR, hk_graph_executor(f->g), &f->ck, 1);
  assert_ok(hk_session_new(&f->s, &so, &f->st), &f->st);
  graph_train(f);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  checkpoint_w(f, BEST_STEP, want);
  assert_memory_equal(f->w, want, sizeof want);
  assert_logged(f->te, HK_LOG_INFO, "model.ckpt-3 (step 3, val = 0.5) into the variables (1).");

  co.best_k = 0;
  co.best_metric = NULL;
  hk_hook *h = NULL;
  assert_status(hk_checkpoint_saver_hook_new(&h, &co, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "restore_best: needs best_k");
}

/* H76: a MonitoredTrainingSession passes best_k and restore_best on to its
 * checkpoint hook; without a checkpoint hook the options are refused. */
static void test_restore_best__training_session_passes_it_on(void **state) {
  fixture *f = *state;
  hk_training_session_options to = HK_TRAINING_SESSION_OPTIONS_INIT;
  float want[4];
  build(f);
  to.env = &f->te->env;
  to.executor = hk_graph_executor(f->g);
  to.checkpoint_dir = f->dir;
  to.save_checkpoint_steps = 1;
  to.log_step_count_steps = 0;
  to.save_summaries_steps = 0;
  to.save_graph_def = 0;
  to.best_k = 1;
  to.best_metric = "val";
  to.restore_best = 1;
  assert_ok(hk_training_session_new(&f->s, &to, &f->st), &f->st);
  graph_train(f);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  hk_session_free(f->s);
  f->s = NULL;
  checkpoint_w(f, BEST_STEP, want);
  assert_memory_equal(f->w, want, sizeof want);

  to.checkpoint_dir = NULL;
  to.save_checkpoint_steps = HK_UNSET_STEPS;
  assert_status(hk_training_session_new(&f->s, &to, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "best_k, best_metric and restore_best configure the checkpoint hook, and there is none");
  assert_null(f->s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_restore_best__loop_arrays_hold_the_best_checkpoint, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore_best__loop_without_the_option_keeps_the_last_values, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_restore_best__loop_without_a_best_checkpoint_fails_clearly, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore_best__graph_variables_hold_the_best_checkpoint, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore_best__training_session_passes_it_on, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
