/*
 * Tests of the EarlyStoppingHook (contract H44) and of its place among the
 * host loop's own hooks (H46): modes, min_delta, patience, the cadence on
 * the global step, the stop request and its log line, values reported by
 * the program, the state that checkpoints carry across a restart — on the
 * embedded graph executor and on the host loop — validation and OOM.
 * Everything goes through the public headers.
 */
#include "session_fixture.h"
#include "tmpdir.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a graph: GS += 1 per run; "val" (the program's value, external),
 * "vec" (not one number), and the state variables ------------------------------------- */

typedef struct model {
  hk_graph *g;
  hk_handle gs, train;
  double val; /* what the monitored variable holds: the test sets it */
  float vec[2];
} model;

typedef struct fixture {
  test_env *te;
  model m;
  hk_hook *es;
  hk_hook *ck;
  hk_session *s;
  char *dir;
  hk_status st;
} fixture;

static void add_var(fixture *f, const char *name, hk_dtype dtype, int32_t rank, const int64_t *dims, void *data,
                    uint32_t flags, double init) {
  hk_variable_def vd = HK_VARIABLE_DEF_INIT;
  hk_handle h;
  vd.name = name;
  vd.dtype = dtype;
  vd.rank = rank;
  vd.dims = dims;
  vd.flags = flags;
  vd.external_data = data;
  if (!data) {
    vd.init.kind = HK_INIT_CONSTANT;
    vd.init.value = init;
  }
  assert_ok(hk_graph_variable(f->m.g, &h, &vd, &f->st), &f->st);
}

/* state: 0 none; 1 "es" F64[6] zero; 2 "es" of another shape; 3 "es" local;
 * 4 "es" holding 7s (no valid state). */
static void build(fixture *f, int with_gs, int state) {
  static const int64_t six[1] = {HK_EARLY_STOPPING_STATE_SIZE}, five[1] = {5}, two[1] = {2};
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_handle one_h;
  int64_t one = 1;
  hk_tensor t;
  go.env = &f->te->env;
  assert_ok(hk_graph_new(&f->m.g, &go, &f->st), &f->st);
  if (with_gs) {
    assert_ok(hk_graph_get_or_create_global_step(f->m.g, &f->m.gs, &f->st), &f->st);
    t = hk_tensor_scalar_i64(&one);
    assert_ok(hk_graph_constant(f->m.g, &one_h, "one", &t, &f->st), &f->st);
    assert_ok(hk_graph_assign_add(f->m.g, &f->m.train, "train", f->m.gs, one_h, &f->st), &f->st);
  }
  add_var(f, "val", HK_DTYPE_F64, 0, NULL, &f->m.val, HK_VAR_LOCAL, 0);
  add_var(f, "vec", HK_DTYPE_F32, 1, two, f->m.vec, HK_VAR_LOCAL, 0);
  if (state == 1) add_var(f, "es", HK_DTYPE_F64, 1, six, NULL, 0, 0);
  if (state == 2) add_var(f, "es", HK_DTYPE_F64, 1, five, NULL, 0, 0);
  if (state == 3) add_var(f, "es", HK_DTYPE_F64, 1, six, NULL, HK_VAR_LOCAL, 0);
  if (state == 4) add_var(f, "es", HK_DTYPE_F64, 1, six, NULL, 0, 7);
}

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  assert_non_null(f);
  f->te = test_env_new();
  *state = f;
  return 0;
}

static void close_session(fixture *f) {
  if (!f->s) return;
  (void)hk_session_close(f->s, HK_OK, NULL);
  hk_session_free(f->s);
  f->s = NULL;
}

static int teardown(void **state) {
  fixture *f = *state;
  close_session(f);
  hk_hook_free(f->es);
  hk_hook_free(f->ck);
  hk_graph_free(f->m.g);
  if (f->dir) test_tmpdir_free(f->dir);
  test_env *te = f->te;
  free(f);
  return test_env_release(te);
}

static hk_early_stopping_options es_opts(fixture *f) {
  hk_early_stopping_options o = HK_EARLY_STOPPING_OPTIONS_INIT;
  o.env = &f->te->env;
  o.monitor = "val";
  return o;
}

static void make_es(fixture *f, const hk_early_stopping_options *o) {
  hk_hook_free(f->es);
  f->es = NULL;
  assert_ok(hk_early_stopping_hook_new(&f->es, o, &f->st), &f->st);
}

/* A singular session over the graph with the hook (and the checkpoint
 * saver after it, restoring from f->dir, when f->ck is set). */
static hk_code open_session(fixture *f) {
  hk_hook *hooks[2] = {f->es, f->ck};
  hk_session_options so;
  test_session_options(&so, &f->te->env, HK_SESSION_SINGULAR, hk_graph_executor(f->m.g), hooks, f->ck ? 2 : 1);
  if (f->ck) so.checkpoint_dir = f->dir;
  return hk_session_new(&f->s, &so, &f->st);
}

/* One step: the program's value, then the run that moves GS to the next step. */
static hk_code step(fixture *f, double value) {
  f->m.val = value;
  return session_run_train(f->s, f->m.train, &f->st);
}

static hk_early_stopping_info info_of(fixture *f) {
  hk_early_stopping_info info;
  assert_ok(hk_early_stopping_hook_info(&info, f->es, &f->st), &f->st);
  return info;
}

/* ---- H44: evaluations, the stop and its line ------------------------------------- */

/* H44: MIN: 5 (best), 4 (best, step 2), 4.5, 4.2: the second evaluation without
 * improvement reaches patience 2 at step 4; the stop takes effect after the
 * step (C19, C20) and the line says why. */
static void test_early_stopping__min_mode_stops_after_patience(void **state) {
  fixture *f = *state;
  static const double vals[4] = {5, 4, 4.5, 4.2};
  hk_early_stopping_options o = es_opts(f);
  build(f, 1, 0);
  o.patience = 2;
  make_es(f, &o);
  assert_ok(open_session(f), &f->st);
  for (int i = 0; i < 4; i++) {
    assert_false(hk_session_should_stop(f->s));
    assert_ok(step(f, vals[i]), &f->st);
  }
  assert_true(hk_session_should_stop(f->s));
  assert_logged(f->te, HK_LOG_INFO,
                "Early stopping at step 4: val did not improve by more than 0 for 2 evaluations (best 4 at step 2).");
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "Early stopping"), 1);
  assert_logged(f->te, HK_LOG_DEBUG, "EarlyStoppingHook: val = 4.5 at step 3; best 4 at step 2, 1 evaluation(s)");
  assert_status(step(f, 1), &f->st, HK_FAILED_PRECONDITION, "Run called even after should_stop requested.");
  hk_early_stopping_info info = info_of(f);
  assert_int_equal(info.evaluations, 4);
  assert_true(info.best == 4);
  assert_int_equal(info.best_step, 2);
  assert_int_equal(info.wait, 2);
  assert_int_equal(info.stopped_step, 4);
  assert_null(info.state);
}

/* H44: MAX: higher is better; an improvement resets the count. */
static void test_early_stopping__max_mode_stops_when_the_metric_stops_rising(void **state) {
  fixture *f = *state;
  static const double vals[6] = {0.5, 0.7, 0.6, 0.8, 0.79, 0.78};
  hk_early_stopping_options o = es_opts(f);
  build(f, 1, 0);
  o.mode = HK_MONITOR_MAX;
  o.patience = 2;
  make_es(f, &o);
  assert_ok(open_session(f), &f->st);
  for (int i = 0; i < 6; i++) {
    assert_false(hk_session_should_stop(f->s));
    assert_ok(step(f, vals[i]), &f->st);
  }
  assert_true(hk_session_should_stop(f->s));
  assert_logged(f->te, HK_LOG_INFO,
                "Early stopping at step 6: val did not improve by more than 0 for 2 evaluations (best 0.8 at step 4).");
  hk_early_stopping_info info = info_of(f);
  assert_true(info.best == 0.8);
  assert_int_equal(info.best_step, 4);
  assert_int_equal(info.evaluations, 6);
}

/* H44: an improvement must beat the best by MORE than min_delta: 4.25 after 5
 * with min_delta 0.5 is one, 3.75 after 4.25 is none (strict). Patience 0
 * acts as 1: the first evaluation without improvement stops. */
static void test_early_stopping__min_delta_and_patience_zero(void **state) {
  fixture *f = *state;
  hk_early_stopping_options o = es_opts(f);
  build(f, 1, 0);
  o.min_delta = 0.5;
  o.patience = 0;
  make_es(f, &o);
  assert_ok(open_session(f), &f->st);
  assert_ok(step(f, 5), &f->st);
  assert_ok(step(f, 4.25), &f->st); /* 4.25 + 0.5 < 5 */
  assert_false(hk_session_should_stop(f->s));
  assert_ok(step(f, 3.75), &f->st); /* 3.75 + 0.5 = 4.25: not less */
  assert_true(hk_session_should_stop(f->s));
  assert_logged(f->te, HK_LOG_INFO,
                "Early stopping at step 3: val did not improve by more than 0.5 for 1 evaluations (best 4.25 at step "
                "2).");
}

/* H44: NaN never improves; the first value always does (the best starts at
 * +Inf for MIN). */
static void test_early_stopping__nan_never_improves(void **state) {
  fixture *f = *state;
  hk_early_stopping_options o = es_opts(f);
  build(f, 1, 0);
  o.patience = 2;
  make_es(f, &o);
  assert_ok(open_session(f), &f->st);
  assert_ok(step(f, NAN), &f->st);
  hk_early_stopping_info info = info_of(f);
  assert_int_equal(info.wait, 1);
  assert_int_equal(info.best_step, HK_UNSET_STEPS);
  assert_true(isinf(info.best) && info.best > 0);
  assert_ok(step(f, 1e300), &f->st);
  info = info_of(f);
  assert_int_equal(info.wait, 0);
  assert_int_equal(info.best_step, 2);
  assert_ok(step(f, NAN), &f->st);
  assert_ok(step(f, NAN), &f->st);
  assert_true(hk_session_should_stop(f->s));
}

/* H44: every_n_steps: evaluated after the runs that bring GS to a multiple (3,
 * 6, 9), never at the creation step, whatever the value did between. */
static void test_early_stopping__cadence_on_the_global_step(void **state) {
  fixture *f = *state;
  hk_early_stopping_options o = es_opts(f);
  build(f, 1, 0);
  o.every_n_steps = 3;
  o.patience = 2;
  make_es(f, &o);
  assert_ok(open_session(f), &f->st);
  /* GS after each run: 1..9. Values at 3, 6, 9: 10, 11, 12 (worse). */
  for (int gs = 1; gs <= 9; gs++) {
    assert_false(hk_session_should_stop(f->s));
    assert_ok(step(f, gs % 3 == 0 ? 9.0 + gs / 3 : -100.0), &f->st);
    assert_int_equal(info_of(f).evaluations, gs / 3);
  }
  assert_true(hk_session_should_stop(f->s));
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_DEBUG, "EarlyStoppingHook: val = "), 3);
  assert_logged(f->te, HK_LOG_DEBUG, "EarlyStoppingHook: val = 10 at step 3;");
  assert_logged(f->te, HK_LOG_DEBUG, "EarlyStoppingHook: val = 11 at step 6;");
  assert_logged(f->te, HK_LOG_INFO,
                "Early stopping at step 9: val did not improve by more than 0 for 2 evaluations (best 10 at step 3).");
}

/* H44: a monitor that is not one number fails the evaluating after_run, named. */
static void test_early_stopping__monitor_must_be_one_number(void **state) {
  fixture *f = *state;
  hk_early_stopping_options o = es_opts(f);
  build(f, 1, 0);
  o.monitor = "vec";
  make_es(f, &o);
  assert_ok(open_session(f), &f->st);
  assert_status(step(f, 0), &f->st, HK_INVALID_ARGUMENT, "vec is not a single number (2 elements)");
}

/* ---- H44: the state in checkpoints ----------------------------------------------------- */

static void make_saver_hook(fixture *f, int64_t save_steps) {
  hk_checkpoint_saver_options co = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
  co.checkpoint_dir = f->dir;
  co.save_steps = save_steps;
  co.save_graph_def = 0;
  hk_hook_free(f->ck);
  f->ck = NULL;
  assert_ok(hk_checkpoint_saver_hook_new(&f->ck, &co, &f->st), &f->st);
}

/* H44: a session restored from a checkpoint goes on counting where it stood
 * (the hook before the saver: checkpoint 4 holds step 4's evaluation); one
 * restored from a checkpoint whose count reached the patience stops before
 * its first step (as D8). */
static void test_early_stopping__state_survives_a_restart(void **state) {
  fixture *f = *state;
  static const double vals[4] = {3, 2, 2.5, 2.6};
  hk_early_stopping_options o = es_opts(f);
  f->dir = test_tmpdir_new("es-graph");
  build(f, 1, 1);
  o.patience = 3;
  o.state = "es";
  make_es(f, &o);
  make_saver_hook(f, 2);
  assert_ok(open_session(f), &f->st);
  for (int i = 0; i < 4; i++) assert_ok(step(f, vals[i]), &f->st);
  assert_string_equal(info_of(f).state, "es");
  close_session(f);

  /* A new hook object: what it knows comes from checkpoint 4. */
  make_es(f, &o);
  test_log_clear(&f->te->log);
  assert_ok(open_session(f), &f->st);
  hk_early_stopping_info info = info_of(f);
  assert_int_equal(info.evaluations, 4);
  assert_true(info.best == 2);
  assert_int_equal(info.best_step, 2);
  assert_int_equal(info.wait, 2);
  assert_false(hk_session_should_stop(f->s));
  assert_ok(step(f, 2.7), &f->st); /* the third without improvement */
  assert_true(hk_session_should_stop(f->s));
  assert_logged(f->te, HK_LOG_INFO,
                "Early stopping at step 5: val did not improve by more than 0 for 3 evaluations (best 2 at step 2).");
  close_session(f); /* end() saves checkpoint 5, which holds the stop */

  make_es(f, &o);
  test_log_clear(&f->te->log);
  assert_ok(open_session(f), &f->st);
  assert_true(hk_session_should_stop(f->s));
  assert_logged(
      f->te, HK_LOG_INFO,
      "Early stopping already reached at step 5: val did not improve by more than 0 for 3 evaluations (best 2 "
      "at step 2); stopping before the first step.");
  assert_int_equal(info_of(f).stopped_step, 5);
  close_session(f);

  /* More patience: the same checkpoint trains on. */
  o.patience = 5;
  make_es(f, &o);
  assert_ok(open_session(f), &f->st);
  assert_false(hk_session_should_stop(f->s));
  assert_ok(step(f, 1.5), &f->st);
  info = info_of(f);
  assert_int_equal(info.wait, 0);
  assert_int_equal(info.best_step, 6);
  assert_int_equal(info.evaluations, 6);
}

/* H44: a state kept for the other mode is dropped with a WARNING; the count
 * starts over. */
static void test_early_stopping__state_of_another_mode_starts_over(void **state) {
  fixture *f = *state;
  hk_early_stopping_options o = es_opts(f);
  f->dir = test_tmpdir_new("es-mode");
  build(f, 1, 1);
  o.state = "es";
  o.patience = 4;
  make_es(f, &o);
  make_saver_hook(f, 1);
  assert_ok(open_session(f), &f->st);
  assert_ok(step(f, 3), &f->st);
  assert_ok(step(f, 4), &f->st);
  close_session(f);
  o.mode = HK_MONITOR_MAX;
  make_es(f, &o);
  assert_ok(open_session(f), &f->st);
  assert_logged(f->te, HK_LOG_WARNING,
                "state variable 'es' holds the progress of mode min, not max; monitoring val starts over");
  assert_int_equal(info_of(f).evaluations, 0);
}

/* H44: begin() and after_create_session refuse what they cannot work with. */
static void test_early_stopping__begin_refuses_what_it_cannot_monitor_naming_it(void **state) {
  fixture *f = *state;
  hk_early_stopping_options o = es_opts(f);
  struct {
    int gs, state;
    const char *monitor, *state_name;
    hk_code code;
    const char *msg;
  } cases[] = {
      {0, 0, "val", NULL, HK_FAILED_PRECONDITION, "Global step should be created to use EarlyStoppingHook."},
      {1, 0, "nope", NULL, HK_NOT_FOUND, "monitor 'nope'"},
      {1, 0, "val", "es", HK_NOT_FOUND, "state variable 'es'"},
      {1, 2, "val", "es", HK_INVALID_ARGUMENT, "state variable 'es' is f64 of shape [5]; it must be F64 of shape [6]"},
      {1, 3, "val", "es", HK_INVALID_ARGUMENT, "state variable 'es' is local"},
      {1, 4, "val", "es", HK_DATA_LOSS, "state variable 'es' holds no valid early-stopping state"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    build(f, cases[i].gs, cases[i].state);
    o.monitor = cases[i].monitor;
    o.state = cases[i].state_name;
    make_es(f, &o);
    assert_status(open_session(f), &f->st, cases[i].code, cases[i].msg);
    assert_null(f->s);
    hk_graph_free(f->m.g);
    f->m.g = NULL;
  }
}

/* ---- reported values -------------------------------------------------------------------- */

/* H44: values the program reports are evaluated at the next run, the last report winning. */
static void test_early_stopping__values_reported_by_the_program_are_monitored(void **state) {
  fixture *f = *state;
  hk_early_stopping_options o = es_opts(f);
  hk_hook *other = NULL;
  hk_stop_at_step_options so = HK_STOP_AT_STEP_OPTIONS_INIT;
  build(f, 1, 0);
  o.monitor = "validation loss"; /* a name for messages only */
  o.reported = 1;
  o.patience = 1;
  make_es(f, &o);
  assert_status(hk_early_stopping_report(f->es, 1, &f->st), &f->st, HK_FAILED_PRECONDITION, "serves no session");
  assert_ok(open_session(f), &f->st);
  /* Runs without a report evaluate nothing. */
  assert_ok(step(f, 0), &f->st);
  assert_int_equal(info_of(f).evaluations, 0);
  assert_ok(hk_early_stopping_report(f->es, 2.0, &f->st), &f->st);
  assert_ok(hk_early_stopping_report(f->es, 1.0, &f->st), &f->st); /* replaces the first */
  assert_ok(step(f, 0), &f->st);
  hk_early_stopping_info info = info_of(f);
  assert_int_equal(info.evaluations, 1);
  assert_true(info.best == 1.0);
  assert_int_equal(info.best_step, 2);
  assert_ok(step(f, 0), &f->st);
  assert_int_equal(info_of(f).evaluations, 1);
  assert_ok(hk_early_stopping_report(f->es, 1.5, &f->st), &f->st);
  assert_ok(step(f, 0), &f->st);
  assert_true(hk_session_should_stop(f->s));
  assert_logged(f->te, HK_LOG_INFO,
                "Early stopping at step 4: validation loss did not improve by more than 0 for 1 evaluations (best 1 at "
                "step 2).");

  /* Misuse. */
  assert_status(hk_early_stopping_report(NULL, 1, &f->st), &f->st, HK_INVALID_ARGUMENT, "hook is NULL");
  so.last_step = 10;
  assert_ok(hk_stop_at_step_hook_new(&other, &so, &f->st), &f->st);
  assert_status(hk_early_stopping_report(other, 1, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "hook 'StopAtStepHook' is not an EarlyStoppingHook");
  hk_early_stopping_info junk;
  assert_status(hk_early_stopping_hook_info(&junk, other, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "is not an EarlyStoppingHook");
  assert_status(hk_early_stopping_hook_info(NULL, f->es, &f->st), &f->st, HK_INVALID_ARGUMENT, "out is NULL");
  hk_hook_free(other);
  /* A program's hook that only has the name is no EarlyStoppingHook: the
   * hook is recognised by the vtable it was made with, and its user pointer
   * (here one byte) is never read as the hook's state. */
  static const hk_hook_vtable impostor_vtable = {.version = HK_HOOK_VTABLE_VERSION};
  static char tiny;
  assert_ok(hk_hook_new(&other, &impostor_vtable, &tiny, "EarlyStoppingHook", NULL, &f->st), &f->st);
  assert_status(hk_early_stopping_report(other, 1, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "hook 'EarlyStoppingHook' is not an EarlyStoppingHook");
  assert_ptr_equal(hk_hook_user_if(other, &impostor_vtable), &tiny);
  assert_null(hk_hook_user_if(other, NULL));
  assert_null(hk_hook_user_if(NULL, &impostor_vtable));
  assert_null(hk_hook_user_if(f->es, &impostor_vtable));
  hk_hook_free(other);
  close_session(f);
  o.reported = 0;
  o.monitor = "val";
  make_es(f, &o);
  assert_ok(open_session(f), &f->st);
  assert_status(hk_early_stopping_report(f->es, 1, &f->st), &f->st, HK_FAILED_PRECONDITION,
                "fetches its monitor 'val' itself");
}

/* ---- options ------------------------------------------------------------------------------ */

static void expect_refused(fixture *f, const hk_early_stopping_options *o, const char *substr) {
  hk_hook *h = (hk_hook *)f;
  long live = test_alloc_live(&f->te->alloc);
  assert_status(hk_early_stopping_hook_new(&h, o, &f->st), &f->st, HK_INVALID_ARGUMENT, substr);
  assert_null(h);
  assert_int_equal(test_alloc_live(&f->te->alloc), live);
}

/* H44: a missing monitor and every other bad option are INVALID_ARGUMENT naming the option. */
static void test_early_stopping__bad_options_are_named(void **state) {
  fixture *f = *state;
  hk_early_stopping_options o = es_opts(f);
  assert_status(hk_early_stopping_hook_new(NULL, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "out");
  expect_refused(f, NULL, "opts is NULL");
  o.version = 0;
  expect_refused(f, &o, "opts->version");
  o = es_opts(f);
  o.monitor = NULL;
  expect_refused(f, &o, "monitor is required");
  o.monitor = "";
  expect_refused(f, &o, "monitor is required");
  o = es_opts(f);
  o.mode = (hk_monitor_mode)2;
  expect_refused(f, &o, "mode 2 is neither");
  o = es_opts(f);
  o.min_delta = -0.1;
  expect_refused(f, &o, "min_delta must be finite and >= 0, got -0.1");
  o.min_delta = NAN;
  expect_refused(f, &o, "min_delta");
  o.min_delta = HUGE_VAL;
  expect_refused(f, &o, "min_delta");
  o = es_opts(f);
  o.patience = -1;
  expect_refused(f, &o, "patience must be >= 0, got -1");
  o = es_opts(f);
  o.every_n_steps = 0;
  expect_refused(f, &o, "every_n_steps must be >= 1, got 0");
  o.every_n_steps = 5;
  o.reported = 1;
  expect_refused(f, &o, "every_n_steps applies to a fetched monitor");
  o = es_opts(f);
  o.state = "";
  expect_refused(f, &o, "state is an empty name");
}

static void test_early_stopping__options_init(void **state) {
  hk_early_stopping_options o;
  (void)state;
  memset(&o, 0x5a, sizeof o);
  assert_int_equal(hk_early_stopping_options_init(&o, HK_EARLY_STOPPING_OPTIONS_VERSION), HK_OK);
  assert_null(o.env);
  assert_null(o.monitor);
  assert_int_equal(o.reported, 0);
  assert_int_equal(o.mode, HK_MONITOR_MIN);
  assert_true(o.min_delta == 0);
  assert_int_equal(o.patience, 0);
  assert_int_equal(o.every_n_steps, HK_UNSET_STEPS);
  assert_null(o.state);
  assert_int_equal(hk_early_stopping_options_init(&o, 9), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_early_stopping_options_init(NULL, HK_EARLY_STOPPING_OPTIONS_VERSION), HK_INVALID_ARGUMENT);
}

/* Every allocation failure at creation is RESOURCE_EXHAUSTED, leaks
 * nothing, and creates nothing. */
static void test_early_stopping__oom_at_creation_is_clean(void **state) {
  fixture *f = *state;
  hk_early_stopping_options o = es_opts(f);
  hk_code rc = HK_INTERNAL;
  long n, live = test_alloc_live(&f->te->alloc);
  o.state = "es";
  for (n = 0; n < 100; n++) {
    hk_hook *h = (hk_hook *)f;
    test_alloc_fail_at(&f->te->alloc, n, 0);
    rc = hk_early_stopping_hook_new(&h, &o, &f->st);
    test_alloc_fail_at(&f->te->alloc, -1, 0);
    if (rc == HK_OK) {
      hk_hook_free(h);
      break;
    }
    assert_status(rc, &f->st, HK_RESOURCE_EXHAUSTED, "out of memory");
    assert_null(h);
    assert_int_equal(test_alloc_live(&f->te->alloc), live);
  }
  assert_int_equal(rc, HK_OK);
  assert_true(n >= 3); /* the struct, the monitor, the state name, the wrapper */
  assert_int_equal(test_alloc_live(&f->te->alloc), live);
}

/* ---- the host loop (H46) ------------------------------------------------------------------- */

typedef struct prog {
  double w;
  float val_loss;
  int steps;
} prog;

/* The validation loss falls to its minimum at step 6, then rises. */
static float curve(int64_t step) { return (float)((step - 6) * (step - 6)) + 1.0f; }

static hk_loop *loop_new(fixture *f, prog *p, hk_hook *es, int64_t last_step, int reported) {
  hk_loop_options lo = HK_LOOP_OPTIONS_INIT;
  hk_loop *l = NULL;
  lo.env = &f->te->env;
  lo.handle_signals = 0;
  lo.checkpoint_dir = f->dir;
  lo.save_steps = 2;
  lo.last_step = last_step;
  assert_ok(hk_loop_new(&l, &lo, &f->st), &f->st);
  assert_ok(hk_loop_add_array(l, "w", HK_DTYPE_F64, 0, NULL, &p->w, 0, &f->st), &f->st);
  if (!reported)
    assert_ok(hk_loop_add_array(l, "val_loss", HK_DTYPE_F32, 0, NULL, &p->val_loss, HK_LOOP_NO_CHECKPOINT, &f->st),
              &f->st);
  assert_ok(hk_loop_add_early_stopping(l, es, &f->st), &f->st);
  return l;
}

/* Steps until the loop stops; @return the step it stopped at. */
static int64_t loop_run(fixture *f, hk_loop *l, prog *p, hk_hook *reported) {
  int64_t step = 0;
  assert_ok(hk_loop_start(l, &step, &f->st), &f->st);
  while (!hk_loop_should_stop(l)) {
    assert_ok(hk_loop_step_begin(l, &step, &f->st), &f->st);
    p->w += 1;
    p->val_loss = curve(step + 1);
    if (reported && (step + 1) % 2 == 0) assert_ok(hk_early_stopping_report(reported, p->val_loss, &f->st), &f->st);
    p->steps++;
    assert_ok(hk_loop_step_end(l, &f->st), &f->st);
  }
  step = hk_loop_global_step(l);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  return step;
}

static hk_hook *loop_es(fixture *f, int reported) {
  hk_early_stopping_options o = es_opts(f);
  hk_hook *h = NULL;
  o.monitor = "val_loss";
  o.reported = reported;
  if (!reported) o.every_n_steps = 2;
  o.patience = 2;
  o.state = "early_stopping";
  assert_ok(hk_early_stopping_hook_new(&h, &o, &f->st), &f->st);
  return h;
}

/* One run stops at step 10 (best 1 at step 6; 8 and 10 no better). The
 * same training stopped at step 8 by last_step and restarted ends exactly
 * there too: checkpoint 8 holds step 8's evaluation (the hook runs before
 * the loop's checkpoint hook) and the loop registered its state itself. */
static void restart_matches(fixture *f, int reported) {
  prog a = {0, 0, 0}, b = {0, 0, 0};
  char *root = test_tmpdir_new("es-loop");
  hk_hook *es = loop_es(f, reported);
  f->dir = test_path(root, "a");
  hk_loop *l = loop_new(f, &a, es, HK_UNSET_STEPS, reported);
  /* The order of the loop's hooks: the early stopping before StopAtStep,
   * the StepCounter (H47) and the saver. */
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  hk_session *s = hk_loop_session(l);
  assert_string_equal(hk_hook_name(hk_session_hook(s, 1)), "EarlyStoppingHook");
  assert_string_equal(hk_hook_name(hk_session_hook(s, 2)), "StepCounterHook");
  assert_string_equal(hk_hook_name(hk_session_hook(s, 3)), "CheckpointSaverHook");
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  test_tmpdir_remove(f->dir);
  l = loop_new(f, &a, es, HK_UNSET_STEPS, reported);
  assert_int_equal(loop_run(f, l, &a, reported ? es : NULL), 10);
  hk_loop_free(l);
  assert_logged(f->te, HK_LOG_INFO,
                "Early stopping at step 10: val_loss did not improve by more than 0 for 2 evaluations (best 1 at step "
                "6).");
  free(f->dir);

  f->dir = test_path(root, "b");
  hk_hook_free(es);
  es = loop_es(f, reported);
  l = loop_new(f, &b, es, 8, reported);
  assert_int_equal(loop_run(f, l, &b, reported ? es : NULL), 8);
  hk_loop_free(l);
  hk_hook_free(es);
  es = loop_es(f, reported);
  prog c = {0, 0, 0};
  l = loop_new(f, &c, es, HK_UNSET_STEPS, reported);
  test_log_clear(&f->te->log);
  assert_int_equal(loop_run(f, l, &c, reported ? es : NULL), 10);
  assert_int_equal(c.steps, 2);
  assert_true(c.w == a.w); /* restored, then two steps */
  hk_early_stopping_info info;
  assert_ok(hk_early_stopping_hook_info(&info, es, &f->st), &f->st);
  assert_int_equal(info.best_step, 6);
  assert_int_equal(info.stopped_step, 10);
  assert_int_equal(info.evaluations, 5);
  assert_logged(f->te, HK_LOG_INFO, "Early stopping at step 10: val_loss did not improve");
  hk_loop_free(l);
  hk_hook_free(es);
  free(f->dir);
  f->dir = NULL;
  test_tmpdir_free(root);
}

/* H46: a host loop restarted from a checkpoint goes on monitoring exactly where it stood. */
static void test_early_stopping__a_restarted_loop_goes_on_exactly_where_it_stood(void **state) {
  restart_matches(*state, 0);
}

/* H46: a restarted host loop whose program reports the values goes on exactly where it stood. */
static void test_early_stopping__a_restarted_loop_with_reported_values_goes_on_exactly(void **state) {
  restart_matches(*state, 1);
}

/* H46: the host loop refuses a NULL, foreign or repeated early-stopping hook, naming the problem. */
static void test_early_stopping__the_loop_refuses_a_bad_or_repeated_early_stopping_hook(void **state) {
  fixture *f = *state;
  prog p = {0, 0, 0};
  hk_loop_options lo = HK_LOOP_OPTIONS_INIT;
  hk_loop *l = NULL;
  hk_hook *es = loop_es(f, 0), *es2 = NULL, *other = NULL;
  hk_stop_at_step_options so = HK_STOP_AT_STEP_OPTIONS_INIT;
  hk_early_stopping_options o = es_opts(f);
  so.last_step = 3;
  assert_ok(hk_stop_at_step_hook_new(&other, &so, &f->st), &f->st);
  lo.env = &f->te->env;
  lo.handle_signals = 0;
  lo.hooks = &other;
  lo.nhooks = 1;
  assert_ok(hk_loop_new(&l, &lo, &f->st), &f->st);
  assert_status(hk_loop_add_early_stopping(NULL, es, &f->st), &f->st, HK_INVALID_ARGUMENT, "loop is NULL");
  assert_status(hk_loop_add_early_stopping(l, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "hook is NULL");
  assert_status(hk_loop_add_early_stopping(l, other, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "hook 'StopAtStepHook' is not an EarlyStoppingHook");
  assert_ok(hk_loop_add_array(l, "val_loss", HK_DTYPE_F32, 0, NULL, &p.val_loss, HK_LOOP_NO_CHECKPOINT, &f->st),
            &f->st);
  assert_ok(hk_loop_add_early_stopping(l, es, &f->st), &f->st);
  assert_status(hk_loop_add_early_stopping(l, es, &f->st), &f->st, HK_INVALID_ARGUMENT, "was already added");
  o.monitor = "val_loss";
  o.state = "early_stopping"; /* taken by the first */
  assert_ok(hk_early_stopping_hook_new(&es2, &o, &f->st), &f->st);
  assert_status(hk_loop_add_early_stopping(l, es2, &f->st), &f->st, HK_ALREADY_EXISTS, "early_stopping");
  hk_hook_free(es2);
  o.state = "bad name!";
  assert_ok(hk_early_stopping_hook_new(&es2, &o, &f->st), &f->st);
  assert_status(hk_loop_add_early_stopping(l, es2, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "the hook's state 'bad name!' is not an array name");
  hk_hook_free(es2);
  es2 = NULL;
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  assert_status(hk_loop_add_early_stopping(l, es, &f->st), &f->st, HK_FAILED_PRECONDITION, "after hk_loop_start()");
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);

  /* A hook listed in opts.hooks is not added a second time. */
  lo.hooks = &es;
  assert_ok(hk_loop_new(&l, &lo, &f->st), &f->st);
  assert_status(hk_loop_add_early_stopping(l, es, &f->st), &f->st, HK_INVALID_ARGUMENT, "is hooks[0]");
  hk_loop_free(l);

  /* Out of memory: RESOURCE_EXHAUSTED, nothing leaks (the loop is failed). */
  lo.hooks = NULL;
  lo.nhooks = 0;
  hk_code rc = HK_INTERNAL;
  for (long n = 0; n < 50 && rc != HK_OK; n++) {
    assert_ok(hk_loop_new(&l, &lo, &f->st), &f->st);
    test_alloc_fail_at(&f->te->alloc, n, 0);
    rc = hk_loop_add_early_stopping(l, es, &f->st);
    test_alloc_fail_at(&f->te->alloc, -1, 0);
    if (rc != HK_OK) assert_status(rc, &f->st, HK_RESOURCE_EXHAUSTED, "out of memory");
    hk_loop_free(l);
  }
  assert_int_equal(rc, HK_OK);
  hk_hook_free(es);
  hk_hook_free(other);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_early_stopping__min_mode_stops_after_patience),
      T(test_early_stopping__max_mode_stops_when_the_metric_stops_rising),
      T(test_early_stopping__min_delta_and_patience_zero),
      T(test_early_stopping__nan_never_improves),
      T(test_early_stopping__cadence_on_the_global_step),
      T(test_early_stopping__monitor_must_be_one_number),
      T(test_early_stopping__state_survives_a_restart),
      T(test_early_stopping__state_of_another_mode_starts_over),
      T(test_early_stopping__begin_refuses_what_it_cannot_monitor_naming_it),
      T(test_early_stopping__values_reported_by_the_program_are_monitored),
      T(test_early_stopping__bad_options_are_named),
      T(test_early_stopping__options_init),
      T(test_early_stopping__oom_at_creation_is_clean),
      T(test_early_stopping__a_restarted_loop_goes_on_exactly_where_it_stood),
      T(test_early_stopping__a_restarted_loop_with_reported_values_goes_on_exactly),
      T(test_early_stopping__the_loop_refuses_a_bad_or_repeated_early_stopping_hook),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
