/*
 * Tests of the LearningRateHook (contract H70–H73): the schedules, written
 * before the step that reads them; reduce-on-plateau with Keras' rules;
 * its state across a restart; the learning_rate summary; the host loop's
 * hk_loop_add_learning_rate — each on the embedded graph executor and on
 * the host loop — validation, OOM and steady-state allocation.
 * Everything goes through the public headers.
 */
#include "event_file.h"
#include "session_fixture.h"
#include "tmpdir.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STEPS 64
#define PI 3.14159265358979323846

/* What the program's step saw: the rate it read at each global step. */
typedef struct seen {
  float rate[MAX_STEPS];
  int64_t step[MAX_STEPS];
  int n;
} seen;

static void saw(seen *s, int64_t step, float rate) {
  assert_true(s->n < MAX_STEPS);
  s->step[s->n] = step;
  s->rate[s->n++] = rate;
}

/* ---- a graph: "train" reads "lr" and adds one to GS; "val" is the program's value ---- */

typedef struct model {
  hk_graph *g;
  hk_handle gs, lr, train;
  double val;
  seen seen;
} model;

typedef struct fixture {
  test_env *te;
  model m;
  hk_hook *lrh;
  hk_hook *ck;
  hk_session *s;
  char *dir;
  hk_status st;
} fixture;

/* The train op's kernel: the rate it reads as its input, at the global
 * step it then advances: what an optimizer does. */
static hk_code train_kernel(void *user, hk_kernel_context *ctx, const hk_tensor *inputs, size_t ninputs,
                            hk_tensor *outputs, size_t noutputs, hk_status *status) {
  model *m = user;
  hk_tensor *gs = hk_kernel_context_variable(ctx, 0);
  (void)outputs;
  (void)noutputs;
  if (ninputs != 1 || inputs[0].dtype != HK_DTYPE_F32 || gs == NULL)
    return hk_status_set(status, HK_INTERNAL, "train: expected the f32 rate and the global step");
  saw(&m->seen, *(int64_t *)gs->data, *(const float *)inputs[0].data);
  *(int64_t *)gs->data += 1;
  return HK_OK;
}

static void add_var(fixture *f, hk_handle *h, const char *name, hk_dtype dtype, int32_t rank, const int64_t *dims,
                    void *data, uint32_t flags, double init) {
  hk_variable_def vd = HK_VARIABLE_DEF_INIT;
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
  assert_ok(hk_graph_variable(f->m.g, h, &vd, &f->st), &f->st);
}

/* state: 0 none; 1 "lrs" F64[8] zero; 2 "lrs" of another shape; 3 "lrs"
 * local; 4 "lrs" holding 7s (no valid state). */
static void build(fixture *f, int with_gs, int state) {
  static const int64_t eight[1] = {HK_LEARNING_RATE_STATE_SIZE}, five[1] = {5};
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_op_def def = HK_OP_DEF_INIT;
  hk_handle h;
  go.env = &f->te->env;
  memset(&f->m.seen, 0, sizeof f->m.seen);
  assert_ok(hk_graph_new(&f->m.g, &go, &f->st), &f->st);
  add_var(f, &f->m.lr, "lr", HK_DTYPE_F32, 0, NULL, NULL, HK_VAR_LOCAL, 0);
  add_var(f, &h, "val", HK_DTYPE_F64, 0, NULL, &f->m.val, HK_VAR_LOCAL, 0);
  add_var(f, &h, "lr_i32", HK_DTYPE_I32, 0, NULL, NULL, HK_VAR_LOCAL, 0);
  if (state == 1) add_var(f, &h, "lrs", HK_DTYPE_F64, 1, eight, NULL, HK_VAR_NON_FINITE_OK, 0);
  if (state == 2) add_var(f, &h, "lrs", HK_DTYPE_F64, 1, five, NULL, 0, 0);
  if (state == 3) add_var(f, &h, "lrs", HK_DTYPE_F64, 1, eight, NULL, HK_VAR_LOCAL, 0);
  if (state == 4) add_var(f, &h, "lrs", HK_DTYPE_F64, 1, eight, NULL, 0, 7);
  if (!with_gs) return;
  assert_ok(hk_graph_get_or_create_global_step(f->m.g, &f->m.gs, &f->st), &f->st);
  def.name = "train";
  def.kernel = train_kernel;
  def.kernel_user = &f->m;
  def.inputs = &f->m.lr;
  def.ninputs = 1;
  def.mutates = &f->m.gs;
  def.nmutates = 1;
  assert_ok(hk_graph_op(f->m.g, &f->m.train, &def, &f->st), &f->st);
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
  hk_hook_free(f->lrh);
  hk_hook_free(f->ck);
  hk_graph_free(f->m.g);
  if (f->dir) test_tmpdir_free(f->dir);
  test_env *te = f->te;
  free(f);
  return test_env_release(te);
}

static hk_learning_rate_options lr_opts(fixture *f) {
  hk_learning_rate_options o = HK_LEARNING_RATE_OPTIONS_INIT;
  o.env = &f->te->env;
  o.variable = "lr";
  o.rate = 0.1;
  return o;
}

static void make_lr(fixture *f, const hk_learning_rate_options *o) {
  hk_hook_free(f->lrh);
  f->lrh = NULL;
  assert_ok(hk_learning_rate_hook_new(&f->lrh, o, &f->st), &f->st);
}

/* A singular session over the graph with the hook (and the checkpoint saver
 * after it, restoring from f->dir, when f->ck is set). */
static hk_code open_session(fixture *f) {
  hk_hook *hooks[2] = {f->lrh, f->ck};
  hk_session_options so;
  test_session_options(&so, &f->te->env, HK_SESSION_SINGULAR, hk_graph_executor(f->m.g), hooks, f->ck ? 2 : 1);
  if (f->ck) so.checkpoint_dir = f->dir;
  return hk_session_new(&f->s, &so, &f->st);
}

static hk_code step(fixture *f, double value) {
  f->m.val = value;
  return session_run_train(f->s, f->m.train, &f->st);
}

static hk_learning_rate_info info_of(const hk_hook *h, hk_status *st) {
  hk_learning_rate_info info;
  assert_ok(hk_learning_rate_hook_info(&info, h, st), st);
  return info;
}

/* ---- the schedules, computed here from their definitions ------------------------------ */

static double cosine_ref(int64_t k, double rate, int64_t warmup, double from, int64_t decay, double alpha) {
  if (k < warmup) return from + (rate - from) * (double)k / (double)warmup;
  double s = (double)(k - warmup < decay ? k - warmup : decay);
  return rate * ((1 - alpha) * 0.5 * (1 + cos(PI * s / (double)decay)) + alpha);
}

typedef struct schedule_case {
  hk_learning_rate_options o;
  double expect[MAX_STEPS];
} schedule_case;

static const int64_t g_bounds[2] = {3, 6};
static const double g_values[3] = {0.5, 0.25, 0.125};

/* The four schedules over steps 0..n-1, with their expected rates. */
static int schedule_cases(fixture *f, schedule_case *c, int n) {
  for (int i = 0; i < 5; i++) c[i].o = lr_opts(f);
  for (int k = 0; k < n; k++) c[0].expect[k] = 0.1; /* CONSTANT */
  c[1].o.schedule = HK_LEARNING_RATE_PIECEWISE;
  c[1].o.rate = 0;
  c[1].o.boundaries = g_bounds;
  c[1].o.nboundaries = 2;
  c[1].o.values = g_values;
  for (int k = 0; k < n; k++) c[1].expect[k] = k <= 3 ? 0.5 : k <= 6 ? 0.25 : 0.125; /* TF: k <= boundary */
  c[2].o.schedule = HK_LEARNING_RATE_EXPONENTIAL;
  c[2].o.decay_steps = 4;
  c[2].o.decay_rate = 0.5;
  for (int k = 0; k < n; k++) c[2].expect[k] = 0.1 * pow(0.5, k / 4.0);
  c[3].o = c[2].o;
  c[3].o.staircase = 1;
  for (int k = 0; k < n; k++) c[3].expect[k] = 0.1 * pow(0.5, (double)(k / 4));
  c[4].o.schedule = HK_LEARNING_RATE_COSINE;
  c[4].o.warmup_steps = 4;
  c[4].o.warmup_from = 0.01;
  c[4].o.decay_steps = 6;
  c[4].o.alpha = 0.1;
  for (int k = 0; k < n; k++) c[4].expect[k] = cosine_ref(k, 0.1, 4, 0.01, 6, 0.1);
  return 5;
}

/* H70: each schedule's rate of step k is in the variable when step k runs
 * (written in its before_run); a few values checked by hand too. */
static void test_learning_rate__graph_step_k_reads_the_schedule_at_k(void **state) {
  fixture *f = *state;
  schedule_case c[5];
  const int n = 14;
  int cases = schedule_cases(f, c, n);
  for (int i = 0; i < cases; i++) {
    build(f, 1, 0);
    make_lr(f, &c[i].o);
    assert_ok(open_session(f), &f->st);
    for (int k = 0; k < n; k++) assert_ok(step(f, 0), &f->st);
    assert_int_equal(f->m.seen.n, n);
    for (int k = 0; k < n; k++) {
      assert_int_equal(f->m.seen.step[k], k);
      assert_true(f->m.seen.rate[k] == (float)c[i].expect[k]);
    }
    hk_learning_rate_info info = info_of(f->lrh, &f->st);
    assert_int_equal(info.rate_step, n - 1);
    assert_true(info.rate == c[i].expect[n - 1]);
    close_session(f);
    hk_graph_free(f->m.g);
    f->m.g = NULL;
  }
  /* By hand: piecewise at its boundaries; exponential halves every 4
   * steps; the cosine starts at warmup_from, peaks after the warmup, is
   * halfway down at 4 + 3 and ends at alpha * rate. */
  assert_true(c[1].expect[3] == 0.5 && c[1].expect[4] == 0.25 && c[1].expect[7] == 0.125);
  assert_true(c[2].expect[8] == 0.025 && c[3].expect[7] == 0.05);
  assert_true(c[4].expect[0] == 0.01 && c[4].expect[4] == 0.1);
  assert_true(fabs(c[4].expect[7] - 0.055) < 1e-15 && fabs(c[4].expect[13] - 0.01) < 1e-15);
}

/* ---- H71: reduce on plateau ------------------------------------------------------------- */

/* Keras' ReduceLROnPlateau, step by step: patience 2, factor 0.5, cooldown
 * 1, min_rate 0.02; the floor stops the reductions (then the count grows
 * on); an improvement resets it. */
static void test_learning_rate__graph_plateau_follows_keras(void **state) {
  fixture *f = *state;
  static const double vals[12] = {5, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 3};
  static const double rates[12] = {0.1, 0.1, 0.1, 0.1, 0.05, 0.05, 0.025, 0.025, 0.02, 0.02, 0.02, 0.02};
  hk_learning_rate_options o = lr_opts(f);
  build(f, 1, 0);
  o.monitor = "val";
  o.patience = 2;
  o.factor = 0.5;
  o.cooldown = 1;
  o.min_rate = 0.02;
  o.min_delta = 0;
  make_lr(f, &o);
  assert_ok(open_session(f), &f->st);
  for (int k = 0; k < 12; k++) assert_ok(step(f, vals[k]), &f->st);
  for (int k = 0; k < 12; k++) assert_true(f->m.seen.rate[k] == (float)rates[k]);
  hk_learning_rate_info info = info_of(f->lrh, &f->st);
  assert_int_equal(info.reductions, 3);
  assert_true(info.scale == 0.125);
  assert_int_equal(info.evaluations, 12);
  assert_true(info.best == 3);
  assert_int_equal(info.best_step, 12);
  assert_int_equal(info.wait, 0);
  assert_logged(f->te, HK_LOG_INFO,
                "LearningRateHook: val did not improve for 2 evaluations; learning rate reduced to 0.05 from step 4.");
  assert_logged(f->te, HK_LOG_INFO, "learning rate reduced to 0.02 from step 8.");
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "learning rate reduced"), 3);
  assert_logged(f->te, HK_LOG_DEBUG, "LearningRateHook: val = 4 at step 3; best 4 at step 2, 1 evaluation(s)");
}

/* every_n_steps: evaluated after the runs that bring GS to a multiple;
 * min_delta: an improvement must beat the best by more than it. */
static void test_learning_rate__graph_plateau_cadence_and_min_delta(void **state) {
  fixture *f = *state;
  hk_learning_rate_options o = lr_opts(f);
  build(f, 1, 0);
  o.monitor = "val";
  o.every_n_steps = 3;
  o.patience = 1;
  o.min_delta = 0.5;
  make_lr(f, &o);
  assert_ok(open_session(f), &f->st);
  /* GS after each run 1..9: values at 3, 6, 9 are 10, 9.6 (not by more than
   * 0.5: reduce), 9 (improves on 10 by 1). */
  for (int gs = 1; gs <= 9; gs++) {
    assert_ok(step(f, gs == 3 ? 10 : gs == 6 ? 9.6 : gs == 9 ? 9 : -100), &f->st);
    assert_int_equal(info_of(f->lrh, &f->st).evaluations, gs / 3);
  }
  for (int k = 0; k < 9; k++) assert_true(f->m.seen.rate[k] == (k < 6 ? 0.1f : 0.01f));
  hk_learning_rate_info info = info_of(f->lrh, &f->st);
  assert_int_equal(info.reductions, 1);
  assert_true(info.best == 9);
  assert_int_equal(info.best_step, 9);
}

/* Reported values: evaluated in the next after_run; MAX mode. */
static void test_learning_rate__graph_plateau_reported_values(void **state) {
  fixture *f = *state;
  hk_learning_rate_options o = lr_opts(f);
  hk_hook *other = NULL;
  hk_stop_at_step_options so = HK_STOP_AT_STEP_OPTIONS_INIT;
  build(f, 1, 0);
  o.monitor = "accuracy";
  o.reported = 1;
  o.mode = HK_MONITOR_MAX;
  o.patience = 1;
  make_lr(f, &o);
  assert_status(hk_learning_rate_report(f->lrh, 1, &f->st), &f->st, HK_FAILED_PRECONDITION, "serves no session");
  assert_ok(open_session(f), &f->st);
  assert_ok(step(f, 0), &f->st); /* no report: no evaluation */
  assert_int_equal(info_of(f->lrh, &f->st).evaluations, 0);
  assert_ok(hk_learning_rate_report(f->lrh, 0.5, &f->st), &f->st);
  assert_ok(hk_learning_rate_report(f->lrh, 0.8, &f->st), &f->st); /* replaces it */
  assert_ok(step(f, 0), &f->st);
  assert_true(info_of(f->lrh, &f->st).best == 0.8);
  assert_ok(hk_learning_rate_report(f->lrh, 0.7, &f->st), &f->st);
  assert_ok(step(f, 0), &f->st);
  assert_ok(step(f, 0), &f->st);
  assert_true(f->m.seen.rate[2] == 0.1f);
  assert_true(f->m.seen.rate[3] == 0.01f);
  assert_logged(f->te, HK_LOG_INFO,
                "accuracy did not improve for 1 evaluations; learning rate reduced to 0.01 from step 3.");

  /* Misuse. */
  assert_status(hk_learning_rate_report(NULL, 1, &f->st), &f->st, HK_INVALID_ARGUMENT, "hook is NULL");
  so.last_step = 10;
  assert_ok(hk_stop_at_step_hook_new(&other, &so, &f->st), &f->st);
  assert_status(hk_learning_rate_report(other, 1, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "hook 'StopAtStepHook' is not a LearningRateHook");
  hk_learning_rate_info junk;
  assert_status(hk_learning_rate_hook_info(&junk, other, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "is not a LearningRateHook");
  assert_status(hk_learning_rate_hook_info(NULL, f->lrh, &f->st), &f->st, HK_INVALID_ARGUMENT, "out is NULL");
  hk_hook_free(other);
  close_session(f);
  o.reported = 0;
  o.monitor = "val";
  make_lr(f, &o);
  assert_ok(open_session(f), &f->st);
  assert_status(hk_learning_rate_report(f->lrh, 1, &f->st), &f->st, HK_FAILED_PRECONDITION,
                "fetches its monitor 'val' itself");
  close_session(f);
  o = lr_opts(f);
  make_lr(f, &o);
  assert_ok(open_session(f), &f->st);
  assert_status(hk_learning_rate_report(f->lrh, 1, &f->st), &f->st, HK_FAILED_PRECONDITION, "has no monitor");
}

/* ---- H72: the state in checkpoints, the summary ------------------------------------------- */

static void make_saver_hook(fixture *f, int64_t save_steps) {
  hk_checkpoint_saver_options co = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
  co.checkpoint_dir = f->dir;
  co.save_steps = save_steps;
  co.save_graph_def = 0;
  hk_hook_free(f->ck);
  f->ck = NULL;
  assert_ok(hk_checkpoint_saver_hook_new(&f->ck, &co, &f->st), &f->st);
}

/* The monitored value at global step k (a plateau from step 4 on). */
static double val_at(int64_t k) { return k < 4 ? 10.0 - (double)k : 6.5; }

static hk_learning_rate_options restart_opts(fixture *f) {
  hk_learning_rate_options o = lr_opts(f);
  o.schedule = HK_LEARNING_RATE_COSINE;
  o.warmup_steps = 3;
  o.decay_steps = 20;
  o.monitor = "val";
  o.patience = 2;
  o.factor = 0.5;
  o.cooldown = 1;
  o.state = "lrs";
  return o;
}

/* Steps from the session's step to `last`, each fed val_at(its step). */
static void run_to(fixture *f, int64_t last) {
  while (f->m.seen.n == 0 || f->m.seen.step[f->m.seen.n - 1] + 1 < last)
    assert_ok(step(f, val_at(f->m.seen.n ? f->m.seen.step[f->m.seen.n - 1] + 1 : 0)), &f->st);
}

/* A run interrupted at step 7 (its final checkpoint) and resumed in a new
 * session with a new hook writes exactly the rates of an uninterrupted
 * run: the schedule follows the global step, the plateau's progress comes
 * from the checkpoint. */
static void test_learning_rate__graph_resumed_run_writes_the_same_rates(void **state) {
  fixture *f = *state;
  char *root = test_tmpdir_new("lr-graph");
  hk_learning_rate_options o = restart_opts(f);
  seen whole;
  hk_learning_rate_info a, b;

  f->dir = test_path(root, "a");
  build(f, 1, 1);
  make_lr(f, &o);
  make_saver_hook(f, 2);
  assert_ok(open_session(f), &f->st);
  run_to(f, 16);
  whole = f->m.seen;
  a = info_of(f->lrh, &f->st);
  assert_true(a.reductions >= 2); /* the test covers reductions on both sides of the restart */
  close_session(f);
  hk_graph_free(f->m.g);
  free(f->dir);

  f->dir = test_path(root, "b");
  build(f, 1, 1);
  make_lr(f, &o);
  make_saver_hook(f, 2);
  assert_ok(open_session(f), &f->st);
  run_to(f, 7);
  close_session(f); /* the final checkpoint: step 7 */
  seen first = f->m.seen;
  make_lr(f, &o);
  memset(&f->m.seen, 0, sizeof f->m.seen);
  assert_ok(open_session(f), &f->st);
  assert_int_equal(info_of(f->lrh, &f->st).evaluations, 7);
  while (f->m.seen.n == 0 || f->m.seen.step[f->m.seen.n - 1] + 1 < 16)
    assert_ok(step(f, val_at(f->m.seen.n ? f->m.seen.step[f->m.seen.n - 1] + 1 : 7)), &f->st);
  b = info_of(f->lrh, &f->st);
  assert_int_equal(first.n + f->m.seen.n, whole.n);
  for (int i = 0; i < whole.n; i++) {
    const seen *s = i < first.n ? &first : &f->m.seen;
    int j = i < first.n ? i : i - first.n;
    assert_int_equal(s->step[j], whole.step[i]);
    assert_true(s->rate[j] == whole.rate[i]);
  }
  assert_true(a.scale == b.scale && a.best == b.best);
  assert_int_equal(a.reductions, b.reductions);
  assert_int_equal(a.wait, b.wait);
  assert_int_equal(a.cooldown, b.cooldown);
  assert_int_equal(a.best_step, b.best_step);
  assert_string_equal(b.state, "lrs");
  close_session(f);

  /* A state of the other mode starts over, with a WARNING. */
  o.mode = HK_MONITOR_MAX;
  make_lr(f, &o);
  assert_ok(open_session(f), &f->st);
  assert_logged(f->te, HK_LOG_WARNING, "state variable 'lrs' holds the progress of mode min, not max; monitoring val");
  assert_int_equal(info_of(f->lrh, &f->st).evaluations, 0);
  close_session(f);
  free(f->dir);
  f->dir = NULL;
  test_tmpdir_free(root);
}

/* The summary learning_rate: the rate of step k at step k, on the cadence
 * (the first step of the session, then every summary_steps). */
static void test_learning_rate__graph_rate_is_a_summary(void **state) {
  fixture *f = *state;
  hk_learning_rate_options o = lr_opts(f);
  const ev_event *ev = NULL;
  size_t from = 0;
  f->dir = test_tmpdir_new("lr-summary");
  build(f, 1, 0);
  o.schedule = HK_LEARNING_RATE_EXPONENTIAL;
  o.decay_steps = 1;
  o.decay_rate = 0.5;
  o.summary_dir = f->dir;
  o.summary_steps = 2;
  make_lr(f, &o);
  assert_ok(open_session(f), &f->st);
  for (int k = 0; k < 5; k++) assert_ok(step(f, 0), &f->st);
  close_session(f);
  ev_file *ef = event_file_only(f->dir);
  assert_int_equal(event_file_count_tag(ef, "learning_rate"), 3);
  for (int64_t k = 0; k <= 4; k += 2) {
    const ev_value *v = event_file_find(ef, "learning_rate", from, &ev);
    assert_non_null(v);
    assert_int_equal(ev->step, k);
    assert_true(v->simple == (float)(0.1 * pow(0.5, (double)k)));
    from = (size_t)(ev - ef->events) + 1;
  }
  event_file_free(ef);
}

/* begin() and after_create_session refuse what they cannot work with. */
static void test_learning_rate__begin_errors_are_named(void **state) {
  fixture *f = *state;
  hk_learning_rate_options o = lr_opts(f);
  struct {
    int gs, state;
    const char *variable, *monitor, *state_name;
    hk_code code;
    const char *msg;
  } cases[] = {
      {0, 0, "lr", NULL, NULL, HK_FAILED_PRECONDITION, "Global step should be created to use LearningRateHook."},
      {1, 0, "nope", NULL, NULL, HK_NOT_FOUND, "variable 'nope'"},
      {1, 0, "lr_i32", NULL, NULL, HK_INVALID_ARGUMENT, "variable 'lr_i32' is i32 with 1 elements"},
      {1, 0, "lrs", NULL, NULL, HK_NOT_FOUND, "variable 'lrs'"},
      {1, 0, "lr", "nope", NULL, HK_NOT_FOUND, "monitor 'nope'"},
      {1, 0, "lr", "val", "lrs", HK_NOT_FOUND, "state variable 'lrs'"},
      {1, 2, "lr", "val", "lrs", HK_INVALID_ARGUMENT, "state variable 'lrs' is f64 of shape [5]; it must be F64"},
      {1, 3, "lr", "val", "lrs", HK_INVALID_ARGUMENT, "state variable 'lrs' is local"},
      {1, 4, "lr", "val", "lrs", HK_DATA_LOSS, "state variable 'lrs' holds no valid learning-rate state"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    build(f, cases[i].gs, cases[i].state);
    o.variable = cases[i].variable;
    o.monitor = cases[i].monitor;
    o.state = cases[i].state_name;
    make_lr(f, &o);
    assert_status(open_session(f), &f->st, cases[i].code, cases[i].msg);
    assert_null(f->s);
    hk_graph_free(f->m.g);
    f->m.g = NULL;
  }
}

/* ---- options ----------------------------------------------------------------------------- */

static void expect_refused(fixture *f, const hk_learning_rate_options *o, const char *substr) {
  hk_hook *h = (hk_hook *)f;
  long live = test_alloc_live(&f->te->alloc);
  assert_status(hk_learning_rate_hook_new(&h, o, &f->st), &f->st, HK_INVALID_ARGUMENT, substr);
  assert_null(h);
  assert_int_equal(test_alloc_live(&f->te->alloc), live);
}

static void test_learning_rate__bad_options_are_named(void **state) {
  fixture *f = *state;
  static const int64_t flat[2] = {5, 5};
  static const double bad_values[3] = {1, NAN, 1};
  hk_learning_rate_options o = lr_opts(f), p;
  assert_status(hk_learning_rate_hook_new(NULL, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "out is NULL");
  expect_refused(f, NULL, "opts is NULL");
  o.version = 0;
  expect_refused(f, &o, "opts->version");
  o = lr_opts(f);
  o.variable = "";
  expect_refused(f, &o, "variable is required");
  o = lr_opts(f);
  o.schedule = (hk_learning_rate_schedule)7;
  expect_refused(f, &o, "schedule 7 is not");
  o = lr_opts(f);
  o.rate = 0;
  expect_refused(f, &o, "rate must be finite and > 0 for CONSTANT, got 0");
  o.rate = INFINITY;
  expect_refused(f, &o, "rate must be finite and > 0");
  o = lr_opts(f);
  o.decay_steps = 5;
  expect_refused(f, &o, "decay_steps does not apply to schedule CONSTANT");
  o = lr_opts(f);
  o.boundaries = flat;
  expect_refused(f, &o, "boundaries/values does not apply to schedule CONSTANT");
  /* PIECEWISE */
  p = lr_opts(f);
  p.schedule = HK_LEARNING_RATE_PIECEWISE;
  p.rate = 0;
  expect_refused(f, &p, "PIECEWISE needs boundaries");
  p.boundaries = flat;
  p.nboundaries = 2;
  p.values = g_values;
  expect_refused(f, &p, "boundaries must be strictly increasing: boundaries[1] = 5 after 5");
  p.boundaries = g_bounds;
  p.values = bad_values;
  expect_refused(f, &p, "values[1] must be finite and >= 0, got nan");
  p.values = g_values;
  p.rate = 0.1;
  expect_refused(f, &p, "rate does not apply to schedule PIECEWISE");
  /* EXPONENTIAL */
  o = lr_opts(f);
  o.schedule = HK_LEARNING_RATE_EXPONENTIAL;
  o.decay_rate = 0.5;
  expect_refused(f, &o, "decay_steps must be >= 1 for EXPONENTIAL, got unset");
  o.decay_steps = 0;
  expect_refused(f, &o, "decay_steps must be >= 1 for EXPONENTIAL, got 0");
  o.decay_steps = 10;
  o.decay_rate = 0;
  expect_refused(f, &o, "decay_rate must be finite and > 0, got 0");
  o.decay_rate = 0.5;
  o.warmup_steps = 5;
  expect_refused(f, &o, "warmup_steps does not apply to schedule EXPONENTIAL");
  /* COSINE */
  o = lr_opts(f);
  o.schedule = HK_LEARNING_RATE_COSINE;
  o.decay_steps = 10;
  o.warmup_steps = -1;
  expect_refused(f, &o, "warmup_steps must be >= 0, got -1");
  o.warmup_steps = 0;
  o.warmup_from = -1;
  expect_refused(f, &o, "warmup_from must be finite and >= 0, got -1");
  o.warmup_from = 0;
  o.alpha = 1.5;
  expect_refused(f, &o, "alpha must be in [0, 1], got 1.5");
  o.alpha = 0;
  o.staircase = 1;
  expect_refused(f, &o, "staircase does not apply to schedule COSINE");
  /* Reduce on plateau. */
  o = lr_opts(f);
  o.state = "lrs";
  expect_refused(f, &o, "state applies to reduce-on-plateau, which needs a monitor");
  o.state = NULL;
  o.reported = 1;
  expect_refused(f, &o, "reported applies to reduce-on-plateau");
  o = lr_opts(f);
  o.monitor = "";
  expect_refused(f, &o, "monitor is empty");
  o.monitor = "val";
  o.mode = (hk_monitor_mode)2;
  expect_refused(f, &o, "mode 2 is neither");
  o.mode = HK_MONITOR_MIN;
  o.factor = 1;
  expect_refused(f, &o, "factor must be > 0 and < 1, got 1");
  o.factor = 0;
  expect_refused(f, &o, "factor must be > 0 and < 1, got 0");
  o.factor = 0.5;
  o.patience = -1;
  expect_refused(f, &o, "patience must be >= 0, got -1");
  o.patience = 1;
  o.cooldown = -2;
  expect_refused(f, &o, "cooldown must be >= 0, got -2");
  o.cooldown = 0;
  o.min_delta = NAN;
  expect_refused(f, &o, "min_delta must be finite and >= 0");
  o.min_delta = 0;
  o.min_rate = -1;
  expect_refused(f, &o, "min_rate must be finite and >= 0, got -1");
  o.min_rate = 0;
  o.every_n_steps = 0;
  expect_refused(f, &o, "every_n_steps must be >= 1, got 0");
  o.every_n_steps = 2;
  o.reported = 1;
  expect_refused(f, &o, "every_n_steps applies to a fetched monitor");
  o.every_n_steps = HK_UNSET_STEPS;
  o.state = "";
  expect_refused(f, &o, "state is an empty name");
  /* The summary. */
  o = lr_opts(f);
  o.summary_dir = "";
  expect_refused(f, &o, "summary_dir is empty");
  o.summary_dir = NULL;
  o.summary_steps = 5;
  expect_refused(f, &o, "summary_steps needs a summary_dir");
  o.summary_dir = "logs";
  o.summary_steps = 0;
  expect_refused(f, &o, "summary_steps must be >= 1, got 0");
}

static void test_learning_rate__options_init_gives_the_defaults(void **state) {
  hk_learning_rate_options o;
  (void)state;
  memset(&o, 0x5a, sizeof o);
  assert_int_equal(hk_learning_rate_options_init(&o, HK_LEARNING_RATE_OPTIONS_VERSION), HK_OK);
  assert_null(o.env);
  assert_null(o.variable);
  assert_int_equal(o.schedule, HK_LEARNING_RATE_CONSTANT);
  assert_true(o.rate == 0 && o.decay_rate == 0 && o.warmup_from == 0 && o.alpha == 0);
  assert_null(o.boundaries);
  assert_null(o.values);
  assert_int_equal(o.nboundaries, 0);
  assert_int_equal(o.decay_steps, HK_UNSET_STEPS);
  assert_int_equal(o.staircase, 0);
  assert_int_equal(o.warmup_steps, 0);
  assert_null(o.monitor);
  assert_int_equal(o.reported, 0);
  assert_int_equal(o.mode, HK_MONITOR_MIN);
  assert_true(o.factor == 0.1 && o.min_delta == 1e-4 && o.min_rate == 0); /* Keras' defaults */
  assert_int_equal(o.patience, 10);
  assert_int_equal(o.cooldown, 0);
  assert_int_equal(o.every_n_steps, HK_UNSET_STEPS);
  assert_null(o.state);
  assert_null(o.summary_dir);
  assert_int_equal(o.summary_steps, HK_UNSET_STEPS);
  assert_int_equal(hk_learning_rate_options_init(&o, 9), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_learning_rate_options_init(NULL, HK_LEARNING_RATE_OPTIONS_VERSION), HK_INVALID_ARGUMENT);
}

/* Every allocation failure at creation is RESOURCE_EXHAUSTED, leaks
 * nothing, and creates nothing. */
static void test_learning_rate__oom_at_creation_is_clean(void **state) {
  fixture *f = *state;
  hk_learning_rate_options o = lr_opts(f);
  hk_code rc = HK_INTERNAL;
  long n, live = test_alloc_live(&f->te->alloc);
  o.schedule = HK_LEARNING_RATE_PIECEWISE;
  o.rate = 0;
  o.boundaries = g_bounds;
  o.nboundaries = 2;
  o.values = g_values;
  o.monitor = "val";
  o.state = "lrs";
  o.summary_dir = "logs";
  for (n = 0; n < 100; n++) {
    hk_hook *h = (hk_hook *)f;
    test_alloc_fail_at(&f->te->alloc, n, 0);
    rc = hk_learning_rate_hook_new(&h, &o, &f->st);
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
  assert_true(n >= 7); /* the struct, 4 names, 2 arrays, the wrapper */
  assert_int_equal(test_alloc_live(&f->te->alloc), live);
}

/* A steady-state step allocates nothing: the global step's read, the
 * rate's assignment, an evaluation and a summary write. */
static void test_learning_rate__graph_steady_state_steps_allocate_nothing(void **state) {
  fixture *f = *state;
  hk_learning_rate_options o = restart_opts(f);
  f->dir = test_tmpdir_new("lr-alloc");
  build(f, 1, 1);
  o.summary_dir = f->dir;
  o.summary_steps = 1;
  make_lr(f, &o);
  assert_ok(open_session(f), &f->st);
  for (int k = 0; k < 3; k++) assert_ok(step(f, val_at(k)), &f->st);
  test_alloc_reset_counts(&f->te->alloc);
  for (int k = 3; k < 12; k++) assert_ok(step(f, val_at(k)), &f->st);
  assert_int_equal(test_alloc_count(&f->te->alloc), 0);
  assert_true(info_of(f->lrh, &f->st).reductions >= 1);
}

/* ---- the host loop (H73) ----------------------------------------------------------------- */

typedef struct prog {
  double w;
  float lr;
  float val_loss;
  seen seen;
} prog;

static hk_loop *loop_new(fixture *f, prog *p, hk_hook *lrh, int64_t last_step) {
  hk_loop_options lo = HK_LOOP_OPTIONS_INIT;
  hk_loop *l = NULL;
  lo.env = &f->te->env;
  lo.handle_signals = 0;
  lo.checkpoint_dir = f->dir;
  lo.save_steps = f->dir ? 2 : HK_UNSET_STEPS;
  lo.last_step = last_step;
  assert_ok(hk_loop_new(&l, &lo, &f->st), &f->st);
  assert_ok(hk_loop_add_array(l, "w", HK_DTYPE_F64, 0, NULL, &p->w, 0, &f->st), &f->st);
  assert_ok(hk_loop_add_array(l, "lr", HK_DTYPE_F32, 0, NULL, &p->lr, HK_LOOP_NO_CHECKPOINT, &f->st), &f->st);
  assert_ok(hk_loop_add_array(l, "val", HK_DTYPE_F32, 0, NULL, &p->val_loss, HK_LOOP_NO_CHECKPOINT, &f->st), &f->st);
  assert_ok(hk_loop_add_learning_rate(l, lrh, &f->st), &f->st);
  return l;
}

/* Steps until the loop stops, the program's update reading the rate the
 * hook wrote; reports the value when `reported`. @return the last step. */
static int64_t loop_run(fixture *f, hk_loop *l, prog *p, hk_hook *reported) {
  int64_t step = 0;
  assert_ok(hk_loop_start(l, &step, &f->st), &f->st);
  while (!hk_loop_should_stop(l)) {
    assert_ok(hk_loop_step_begin(l, &step, &f->st), &f->st);
    saw(&p->seen, step, p->lr);
    p->w -= (double)p->lr; /* the program's update */
    p->val_loss = (float)val_at(step);
    if (reported) assert_ok(hk_learning_rate_report(reported, p->val_loss, &f->st), &f->st);
    assert_ok(hk_loop_step_end(l, &f->st), &f->st);
  }
  step = hk_loop_global_step(l);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  return step;
}

/* H70 on the host loop: step k of the program reads each schedule at k. */
static void test_learning_rate__loop_step_k_reads_the_schedule_at_k(void **state) {
  fixture *f = *state;
  schedule_case c[5];
  const int n = 14;
  int cases = schedule_cases(f, c, n);
  for (int i = 0; i < cases; i++) {
    prog p;
    hk_hook *h = NULL;
    memset(&p, 0, sizeof p);
    c[i].o.variable = "lr";
    assert_ok(hk_learning_rate_hook_new(&h, &c[i].o, &f->st), &f->st);
    hk_loop *l = loop_new(f, &p, h, n);
    assert_int_equal(loop_run(f, l, &p, NULL), n);
    assert_int_equal(p.seen.n, n);
    for (int k = 0; k < n; k++) {
      assert_int_equal(p.seen.step[k], k);
      assert_true(p.seen.rate[k] == (float)c[i].expect[k]);
    }
    hk_loop_free(l);
    hk_hook_free(h);
  }
}

/* The rate's variable may be F64: written without rounding. */
static void test_learning_rate__loop_rate_variable_may_be_f64(void **state) {
  fixture *f = *state;
  hk_learning_rate_options o = lr_opts(f);
  hk_loop_options lo = HK_LOOP_OPTIONS_INIT;
  hk_loop *l = NULL;
  hk_hook *h = NULL;
  double rate = 0;
  int64_t step = 0;
  o.schedule = HK_LEARNING_RATE_EXPONENTIAL;
  o.decay_steps = 3;
  o.decay_rate = 0.7;
  assert_ok(hk_learning_rate_hook_new(&h, &o, &f->st), &f->st);
  lo.env = &f->te->env;
  lo.handle_signals = 0;
  assert_ok(hk_loop_new(&l, &lo, &f->st), &f->st);
  assert_ok(hk_loop_add_array(l, "lr", HK_DTYPE_F64, 1, (int64_t[]){1}, &rate, HK_LOOP_NO_CHECKPOINT, &f->st), &f->st);
  assert_ok(hk_loop_add_learning_rate(l, h, &f->st), &f->st);
  assert_ok(hk_loop_start(l, &step, &f->st), &f->st);
  for (int k = 0; k < 5; k++) {
    assert_ok(hk_loop_step_begin(l, &step, &f->st), &f->st);
    assert_true(rate == 0.1 * pow(0.7, (double)k / 3.0));
    assert_ok(hk_loop_step_end(l, &f->st), &f->st);
  }
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  hk_hook_free(h);
}

static hk_hook *loop_lr(fixture *f, int reported) {
  hk_learning_rate_options o = restart_opts(f);
  hk_hook *h = NULL;
  o.reported = reported;
  o.state = "learning_rate_state";
  if (reported) o.monitor = "val_loss";
  assert_ok(hk_learning_rate_hook_new(&h, &o, &f->st), &f->st);
  return h;
}

/* The loop's hook order, and a run stopped at step 7 and resumed writes
 * the rates of an uninterrupted run; the weights that followed them agree
 * bit for bit. */
static void loop_restart_matches(fixture *f, int reported) {
  prog a, b, c;
  char *root = test_tmpdir_new("lr-loop");
  hk_hook *h = loop_lr(f, reported);
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  memset(&c, 0, sizeof c);
  f->dir = test_path(root, "a");
  hk_loop *l = loop_new(f, &a, h, 16);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  hk_session *s = hk_loop_session(l);
  assert_string_equal(hk_hook_name(hk_session_hook(s, 1)), "LearningRateHook");
  assert_string_equal(hk_hook_name(hk_session_hook(s, 2)), "StopAtStepHook");
  assert_string_equal(hk_hook_name(hk_session_hook(s, 4)), "CheckpointSaverHook");
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  test_tmpdir_remove(f->dir);
  l = loop_new(f, &a, h, 16);
  assert_int_equal(loop_run(f, l, &a, reported ? h : NULL), 16);
  hk_loop_free(l);
  hk_learning_rate_info ia = info_of(h, &f->st);
  assert_true(ia.reductions >= 2);
  free(f->dir);

  f->dir = test_path(root, "b");
  hk_hook_free(h);
  h = loop_lr(f, reported);
  l = loop_new(f, &b, h, 7);
  assert_int_equal(loop_run(f, l, &b, reported ? h : NULL), 7);
  hk_loop_free(l);
  hk_hook_free(h);
  h = loop_lr(f, reported);
  l = loop_new(f, &c, h, 16);
  assert_int_equal(loop_run(f, l, &c, reported ? h : NULL), 16);
  hk_loop_free(l);
  assert_int_equal(b.seen.n, 7);
  assert_int_equal(c.seen.n, 9);
  for (int i = 0; i < 16; i++) {
    const seen *s = i < 7 ? &b.seen : &c.seen;
    int j = i < 7 ? i : i - 7;
    assert_int_equal(s->step[j], a.seen.step[i]);
    assert_true(s->rate[j] == a.seen.rate[i]);
  }
  assert_true(c.w == a.w); /* restored at 7, then the same rates */
  hk_learning_rate_info ic = info_of(h, &f->st);
  assert_int_equal(ic.reductions, ia.reductions);
  assert_true(ic.scale == ia.scale);
  assert_int_equal(ic.evaluations, ia.evaluations);
  hk_hook_free(h);
  free(f->dir);
  f->dir = NULL;
  test_tmpdir_free(root);
}

static void test_learning_rate__loop_resumed_run_writes_the_same_rates(void **state) {
  loop_restart_matches(*state, 0);
}

static void test_learning_rate__loop_resumed_run_writes_the_same_rates_reported(void **state) {
  loop_restart_matches(*state, 1);
}

/* The summary on the host loop, into the loop's shared event file. */
static void test_learning_rate__loop_rate_is_a_summary(void **state) {
  fixture *f = *state;
  hk_learning_rate_options o = lr_opts(f);
  hk_hook *h = NULL;
  prog p;
  const ev_event *ev = NULL;
  memset(&p, 0, sizeof p);
  f->dir = test_tmpdir_new("lr-loop-summary");
  o.schedule = HK_LEARNING_RATE_PIECEWISE;
  o.rate = 0;
  o.boundaries = g_bounds;
  o.nboundaries = 2;
  o.values = g_values;
  o.summary_dir = f->dir;
  o.summary_steps = 4;
  assert_ok(hk_learning_rate_hook_new(&h, &o, &f->st), &f->st);
  hk_loop *l = loop_new(f, &p, h, 9);
  assert_int_equal(loop_run(f, l, &p, NULL), 9);
  hk_loop_free(l);
  ev_file *ef = event_file_only(f->dir);
  assert_int_equal(event_file_count_tag(ef, "learning_rate"), 3); /* steps 0, 4, 8 */
  const ev_value *v = event_file_find(ef, "learning_rate", 0, &ev);
  assert_int_equal(ev->step, 0);
  assert_true(v->simple == 0.5f);
  v = event_file_find(ef, "learning_rate", (size_t)(ev - ef->events) + 1, &ev);
  assert_int_equal(ev->step, 4);
  assert_true(v->simple == 0.25f);
  v = event_file_find(ef, "learning_rate", (size_t)(ev - ef->events) + 1, &ev);
  assert_int_equal(ev->step, 8);
  assert_true(v->simple == 0.125f);
  event_file_free(ef);
  hk_hook_free(h);
}

/* A steady-state step of the loop with the hook allocates nothing. */
static void test_learning_rate__loop_steady_state_steps_allocate_nothing(void **state) {
  fixture *f = *state;
  hk_hook *h = loop_lr(f, 0);
  prog p;
  int64_t step = 0;
  memset(&p, 0, sizeof p);
  hk_loop *l = loop_new(f, &p, h, HK_UNSET_STEPS);
  assert_ok(hk_loop_start(l, &step, &f->st), &f->st);
  for (int k = 0; k < 12; k++) {
    if (k == 3) test_alloc_reset_counts(&f->te->alloc);
    assert_ok(hk_loop_step_begin(l, &step, &f->st), &f->st);
    p.val_loss = (float)val_at(step);
    assert_ok(hk_loop_step_end(l, &f->st), &f->st);
  }
  assert_int_equal(test_alloc_count(&f->te->alloc), 0);
  assert_true(info_of(h, &f->st).reductions >= 1);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  hk_hook_free(h);
}

static void test_learning_rate__loop_add_errors_are_named(void **state) {
  fixture *f = *state;
  prog p;
  hk_loop_options lo = HK_LOOP_OPTIONS_INIT;
  hk_loop *l = NULL;
  hk_hook *h = loop_lr(f, 0), *h2 = NULL, *other = NULL;
  hk_stop_at_step_options so = HK_STOP_AT_STEP_OPTIONS_INIT;
  hk_learning_rate_options o = restart_opts(f);
  memset(&p, 0, sizeof p);
  so.last_step = 3;
  assert_ok(hk_stop_at_step_hook_new(&other, &so, &f->st), &f->st);
  lo.env = &f->te->env;
  lo.handle_signals = 0;
  lo.hooks = &other;
  lo.nhooks = 1;
  assert_ok(hk_loop_new(&l, &lo, &f->st), &f->st);
  assert_status(hk_loop_add_learning_rate(NULL, h, &f->st), &f->st, HK_INVALID_ARGUMENT, "loop is NULL");
  assert_status(hk_loop_add_learning_rate(l, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "hook is NULL");
  assert_status(hk_loop_add_learning_rate(l, other, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "hook 'StopAtStepHook' is not a LearningRateHook");
  assert_ok(hk_loop_add_learning_rate(l, h, &f->st), &f->st);
  assert_status(hk_loop_add_learning_rate(l, h, &f->st), &f->st, HK_INVALID_ARGUMENT, "was already added");
  o.state = "learning_rate_state"; /* taken by the first */
  assert_ok(hk_learning_rate_hook_new(&h2, &o, &f->st), &f->st);
  assert_status(hk_loop_add_learning_rate(l, h2, &f->st), &f->st, HK_ALREADY_EXISTS, "learning_rate_state");
  hk_hook_free(h2);
  o.state = "bad name!";
  assert_ok(hk_learning_rate_hook_new(&h2, &o, &f->st), &f->st);
  assert_status(hk_loop_add_learning_rate(l, h2, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "the hook's state 'bad name!' is not an array name");
  hk_hook_free(h2);
  assert_ok(hk_loop_add_array(l, "lr", HK_DTYPE_F32, 0, NULL, &p.lr, HK_LOOP_NO_CHECKPOINT, &f->st), &f->st);
  assert_ok(hk_loop_add_array(l, "val", HK_DTYPE_F32, 0, NULL, &p.val_loss, HK_LOOP_NO_CHECKPOINT, &f->st), &f->st);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  assert_status(hk_loop_add_learning_rate(l, h, &f->st), &f->st, HK_FAILED_PRECONDITION, "after hk_loop_start()");
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);

  /* A hook listed in opts.hooks is not added a second time. */
  lo.hooks = &h;
  assert_ok(hk_loop_new(&l, &lo, &f->st), &f->st);
  assert_status(hk_loop_add_learning_rate(l, h, &f->st), &f->st, HK_INVALID_ARGUMENT, "is hooks[0]");
  hk_loop_free(l);

  /* Out of memory: RESOURCE_EXHAUSTED, nothing leaks (the loop is failed). */
  lo.hooks = NULL;
  lo.nhooks = 0;
  hk_code rc = HK_INTERNAL;
  for (long n = 0; n < 50 && rc != HK_OK; n++) {
    assert_ok(hk_loop_new(&l, &lo, &f->st), &f->st);
    test_alloc_fail_at(&f->te->alloc, n, 0);
    rc = hk_loop_add_learning_rate(l, h, &f->st);
    test_alloc_fail_at(&f->te->alloc, -1, 0);
    if (rc != HK_OK) assert_status(rc, &f->st, HK_RESOURCE_EXHAUSTED, "out of memory");
    hk_loop_free(l);
  }
  assert_int_equal(rc, HK_OK);
  hk_hook_free(h);
  hk_hook_free(other);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_learning_rate__graph_step_k_reads_the_schedule_at_k),
      T(test_learning_rate__graph_plateau_follows_keras),
      T(test_learning_rate__graph_plateau_cadence_and_min_delta),
      T(test_learning_rate__graph_plateau_reported_values),
      T(test_learning_rate__graph_resumed_run_writes_the_same_rates),
      T(test_learning_rate__graph_rate_is_a_summary),
      T(test_learning_rate__begin_errors_are_named),
      T(test_learning_rate__bad_options_are_named),
      T(test_learning_rate__options_init_gives_the_defaults),
      T(test_learning_rate__oom_at_creation_is_clean),
      T(test_learning_rate__graph_steady_state_steps_allocate_nothing),
      T(test_learning_rate__loop_step_k_reads_the_schedule_at_k),
      T(test_learning_rate__loop_resumed_run_writes_the_same_rates),
      T(test_learning_rate__loop_resumed_run_writes_the_same_rates_reported),
      T(test_learning_rate__loop_rate_is_a_summary),
      T(test_learning_rate__loop_rate_variable_may_be_f64),
      T(test_learning_rate__loop_steady_state_steps_allocate_nothing),
      T(test_learning_rate__loop_add_errors_are_named),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
