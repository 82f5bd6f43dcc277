/*
 * Tests of NanTensorHook (contract group N: C134, H2), through real
 * sessions over the scripted fake executor; and the guarantee it gives with
 * C14 and C16: placed before a checkpoint saver, in fail mode, no
 * checkpoint holding a non-finite value is written and none is rotated out
 * by one — over the embedded graph executor and over the host loop.
 */
#include "session_fixture.h"
#include "tmpdir.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fixture {
  test_env *te;
  fake_executor *fx;
  hk_executor *ex;
  hk_handle gs, train, l16, lb16, l32, l64, vec, lint, ivar;
  hk_hook *hook;
  spy_hook *after;
  hk_session *s;
  char *dir;
  hk_status st;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof(*f));
  static const int64_t three[1] = {3};
  assert_non_null(f);
  f->te = test_env_new();
  f->fx = fake_training_executor(f->te, &f->ex, &f->gs, &f->train);
  f->l16 = fake_executor_add_tensor(f->fx, "l16", HK_DTYPE_F16, 0, NULL);
  f->lb16 = fake_executor_add_tensor(f->fx, "lb16", HK_DTYPE_BF16, 0, NULL);
  f->l32 = fake_executor_add_tensor(f->fx, "l32", HK_DTYPE_F32, 0, NULL);
  f->l64 = fake_executor_add_tensor(f->fx, "l64", HK_DTYPE_F64, 0, NULL);
  f->vec = fake_executor_add_tensor(f->fx, "vec", HK_DTYPE_F32, 1, three);
  f->lint = fake_executor_add_tensor(f->fx, "lint", HK_DTYPE_I32, 0, NULL);
  f->ivar = fake_executor_add_variable(f->fx, "ivar", HK_DTYPE_I64, 0, NULL, 0, NULL);
  f->after = spy_hook_new("after", NULL, NULL);
  assert_non_null(f->after);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  session_close_and_free(f->s);
  hk_hook_free(f->hook);
  spy_hook_free(f->after);
  if (f->dir) test_tmpdir_free(f->dir);
  return fixture_release(f, f->fx, f->te);
}

static void make_hook(fixture *f, const char *loss, int fail, int non_finite) {
  hk_nan_tensor_options o = HK_NAN_TENSOR_OPTIONS_INIT;
  o.loss = loss;
  o.fail_on_nan_loss = fail;
  o.non_finite = non_finite;
  assert_ok(hk_nan_tensor_hook_new(&f->hook, &o, &f->st), &f->st);
}

/* The NaN hook, then a spy that shows whether later hooks ran. */
static void open_session(fixture *f) {
  hk_hook *hooks[2] = {f->hook, f->after->hook};
  hk_session_options so;
  test_session_options(&so, &f->te->env, HK_SESSION_MONITORED, f->ex, hooks, 2);
  assert_ok(hk_session_new(&f->s, &so, &f->st), &f->st);
  test_log_clear(&f->te->log);
  fake_executor_reset_calls(f->fx);
}

static void close_session(fixture *f, hk_code with) {
  (void)hk_session_close(f->s, with, NULL);
  hk_session_free(f->s);
  f->s = NULL;
}

static hk_code run(fixture *f) { return session_run_train(f->s, f->train, &f->st); }

/* ---- options ---------------------------------------------------------------------- */

static void expect_refused(fixture *f, const hk_nan_tensor_options *o, const char *substr) {
  hk_hook *h = (hk_hook *)f;
  long live = test_alloc_live(&f->te->alloc);
  assert_status(hk_nan_tensor_hook_new(&h, o, &f->st), &f->st, HK_INVALID_ARGUMENT, substr);
  assert_null(h);
  assert_int_equal(test_alloc_live(&f->te->alloc), live);
}

static void *only_alloc(void *user, size_t n) {
  (void)user;
  return malloc(n);
}

static void test_nan_tensor__bad_options_are_named(void **state) {
  fixture *f = *state;
  hk_nan_tensor_options o = HK_NAN_TENSOR_OPTIONS_INIT;
  hk_env bad_env = HK_ENV_INIT;
  o.env = &f->te->env;
  o.loss = "l32";
  assert_status(hk_nan_tensor_hook_new(NULL, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "out");
  expect_refused(f, NULL, "opts is NULL");
  o.version = 0;
  expect_refused(f, &o, "opts->version");
  o.version = HK_NAN_TENSOR_OPTIONS_VERSION;
  bad_env.allocator.alloc = only_alloc; /* one of the three */
  o.env = &bad_env;
  expect_refused(f, &o, "opts->env");
  o.env = &f->te->env;
  o.loss = NULL;
  expect_refused(f, &o, "one of loss (a name) or loss_tensor must be given");
  o.loss = "l32";
  o.loss_tensor = f->l32;
  expect_refused(f, &o, "not both");
  o.loss_tensor = HK_NO_HANDLE;
  o.loss = "";
  expect_refused(f, &o, "loss is an empty name");
}

static void test_nan_tensor__options_init(void **state) {
  hk_nan_tensor_options o;
  (void)state;
  memset(&o, 0x5a, sizeof o);
  assert_int_equal(hk_nan_tensor_options_init(&o, HK_NAN_TENSOR_OPTIONS_VERSION), HK_OK);
  assert_null(o.env);
  assert_null(o.loss);
  assert_true(o.loss_tensor == HK_NO_HANDLE);
  assert_int_equal(o.fail_on_nan_loss, 1); /* C134 */
  assert_int_equal(o.non_finite, 1);
  assert_int_equal(hk_nan_tensor_options_init(&o, 7), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_nan_tensor_options_init(NULL, HK_NAN_TENSOR_OPTIONS_VERSION), HK_INVALID_ARGUMENT);
}

/* ---- C134: fail and warn ---------------------------------------------------------------- */

/* C134: the loss is fetched on every run; a NaN logs ERROR "Model diverged with
 * loss = NaN." and after_run returns INVALID_ARGUMENT "NaN loss during
 * training." (H2): later hooks' after_run are skipped and no stop is
 * applied (C14); a close with that error runs no end() (C16). */
static void test_nan_tensor__a_nan_loss_fails_the_run(void **state) {
  fixture *f = *state;
  float ok = 0.5f, nan = NAN;
  make_hook(f, "l32", 1, 1);
  open_session(f);
  fake_executor_set_value(f->fx, f->l32, &ok);
  for (int i = 0; i < 3; i++) {
    assert_ok(run(f), &f->st);
    assert_int_equal(fake_executor_last_run(f->fx)->nfetches, 1);
  }
  assert_int_equal(f->after->calls[SPY_AFTER_RUN], 3);
  fake_executor_set_value(f->fx, f->l32, &nan);
  hk_code rc = run(f);
  assert_status(rc, &f->st, HK_INVALID_ARGUMENT, NULL);
  assert_string_equal(f->st.message, "NaN loss during training.");
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_ERROR, "Model diverged with loss = NaN."), 1);
  assert_int_equal(f->after->calls[SPY_AFTER_RUN], 3);
  assert_false(hk_session_should_stop(f->s));
  close_session(f, rc);
  assert_int_equal(f->after->calls[SPY_END], 0);
}

/* C134: without fail_on_nan_loss: WARNING and a stop request; the step's later
 * hooks still run and see the request (C19), then should_stop() is true. */
static void test_nan_tensor__in_warn_mode_a_nan_loss_requests_a_stop(void **state) {
  fixture *f = *state;
  double nan = NAN;
  make_hook(f, "l64:0", 0, 1);
  open_session(f);
  assert_ok(run(f), &f->st);
  assert_false(hk_session_should_stop(f->s));
  fake_executor_set_value(f->fx, f->l64, &nan);
  assert_ok(run(f), &f->st);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, "Model diverged with loss = NaN."), 1);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_ERROR, NULL), 0);
  assert_int_equal(f->after->calls[SPY_AFTER_RUN], 2);
  assert_true(f->after->stop_seen_in_after_run);
  assert_true(hk_session_should_stop(f->s));
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  assert_int_equal(f->after->calls[SPY_END], 1);
}

/* C134: every floating dtype, NaN decoded from the bits: quiet and signalling
 * payloads, either sign; the largest finite half and bfloat16 are fine. */
static void test_nan_tensor__checks_a_loss_of_every_float_dtype(void **state) {
  fixture *f = *state;
  struct {
    const char *name;
    hk_handle *h;
    uint64_t finite[3];
    uint64_t nans[3];
  } cases[4] = {
      {"l16", &f->l16, {0x7bff, 0xfbff, 0x0001}, {0x7e00, 0x7c01, 0xfe00}},
      {"lb16", &f->lb16, {0x7f7f, 0xff7f, 0x3f80}, {0x7fc0, 0x7f81, 0xff81}},
      {"l32", &f->l32, {0x7f7fffff, 0x00000001, 0xbf800000}, {0x7fc00000, 0x7f800001, 0xffc00000}},
      {"l64",
       &f->l64,
       {UINT64_C(0x7fefffffffffffff), 1, UINT64_C(0xbff0000000000000)},
       {UINT64_C(0x7ff8000000000000), UINT64_C(0x7ff0000000000001), UINT64_C(0xfff8000000000000)}},
  };
  for (int c = 0; c < 4; c++) {
    size_t size = hk_dtype_size(c == 0 ? HK_DTYPE_F16 : c == 1 ? HK_DTYPE_BF16 : c == 2 ? HK_DTYPE_F32 : HK_DTYPE_F64);
    for (int k = 0; k < 3; k++) {
      unsigned char bytes[8];
      make_hook(f, cases[c].name, 1, 1);
      open_session(f);
      for (int i = 0; i < 3; i++) {
        uint64_t v = cases[c].finite[i];
        uint16_t v16 = (uint16_t)v;
        uint32_t v32 = (uint32_t)v;
        memcpy(bytes, size == 2 ? (void *)&v16 : size == 4 ? (void *)&v32 : (void *)&v, size);
        fake_executor_set_value(f->fx, *cases[c].h, bytes);
        assert_ok(run(f), &f->st);
      }
      uint64_t v = cases[c].nans[k];
      uint16_t v16 = (uint16_t)v;
      uint32_t v32 = (uint32_t)v;
      memcpy(bytes, size == 2 ? (void *)&v16 : size == 4 ? (void *)&v32 : (void *)&v, size);
      fake_executor_set_value(f->fx, *cases[c].h, bytes);
      hk_code rc = run(f);
      if (rc != HK_INVALID_ARGUMENT) fprintf(stderr, "%s pattern %d not seen as NaN\n", cases[c].name, k);
      assert_status(rc, &f->st, HK_INVALID_ARGUMENT, "NaN loss during training.");
      close_session(f, rc);
      hk_hook_free(f->hook);
      f->hook = NULL;
    }
  }
}

/* C134: infinity: by default (non_finite) it counts as divergence, with its own
 * texts; with non_finite 0 it is not NaN, as in TF. */
static void test_nan_tensor__an_infinite_loss_diverges_unless_non_finite_is_off(void **state) {
  fixture *f = *state;
  float inf = HUGE_VALF, ninf = -HUGE_VALF;
  uint16_t hinf = 0x7c00;
  hk_code rc;

  make_hook(f, "l32", 1, 1);
  open_session(f);
  fake_executor_set_value(f->fx, f->l32, &inf);
  rc = run(f);
  assert_status(rc, &f->st, HK_INVALID_ARGUMENT, NULL);
  assert_string_equal(f->st.message, "Inf loss during training.");
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_ERROR, "Model diverged with loss = Inf."), 1);
  close_session(f, rc);
  hk_hook_free(f->hook);

  make_hook(f, "l32", 0, 1);
  open_session(f);
  fake_executor_set_value(f->fx, f->l32, &ninf);
  assert_ok(run(f), &f->st);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, "Model diverged with loss = -Inf."), 1);
  assert_true(hk_session_should_stop(f->s));
  close_session(f, HK_OK);
  hk_hook_free(f->hook);

  make_hook(f, "l16", 1, 1);
  open_session(f);
  fake_executor_set_value(f->fx, f->l16, &hinf);
  assert_status(run(f), &f->st, HK_INVALID_ARGUMENT, "Inf loss during training.");
  close_session(f, HK_INVALID_ARGUMENT);
  hk_hook_free(f->hook);

  /* TF's behaviour: infinity is not NaN. */
  make_hook(f, "l32", 1, 0);
  open_session(f);
  fake_executor_set_value(f->fx, f->l32, &inf);
  assert_ok(run(f), &f->st);
  fake_executor_set_value(f->fx, f->l32, &ninf);
  assert_ok(run(f), &f->st);
  assert_int_equal(test_log_count(&f->te->log, -1, "diverged"), 0);
  assert_false(hk_session_should_stop(f->s));
}

/* C134: any element counts, and a NaN anywhere is reported as NaN. */
static void test_nan_tensor__one_nan_element_anywhere_makes_the_loss_nan(void **state) {
  fixture *f = *state;
  float v[3] = {HUGE_VALF, 1.0f, NAN}, w[3] = {1.0f, -HUGE_VALF, 2.0f};
  make_hook(f, "vec", 1, 1);
  open_session(f);
  fake_executor_set_value(f->fx, f->vec, w);
  assert_status(run(f), &f->st, HK_INVALID_ARGUMENT, "-Inf loss during training.");
  fake_executor_set_value(f->fx, f->vec, v);
  assert_status(run(f), &f->st, HK_INVALID_ARGUMENT, "NaN loss during training.");
}

/* C134: a loss that is not floating is refused: a variable's dtype in
 * begin(), any other tensor's at the first fetch. */
static void test_nan_tensor__a_loss_that_is_not_floating_point_is_refused(void **state) {
  fixture *f = *state;
  make_hook(f, "ivar", 1, 1);
  assert_status(one_hook_session_new(&f->s, &f->te->env, HK_SESSION_MONITORED, f->ex, &f->hook, NULL, &f->st), &f->st,
                HK_INVALID_ARGUMENT, "loss 'ivar' is a i64 variable");
  hk_hook_free(f->hook);
  make_hook(f, "lint", 1, 1);
  open_session(f);
  assert_status(run(f), &f->st, HK_INVALID_ARGUMENT, "loss 'lint' is a i32 tensor");
}

/* C134: a loss the executor does not know fails begin() with NOT_FOUND naming it. */
static void test_nan_tensor__unknown_loss_is_not_found(void **state) {
  fixture *f = *state;
  make_hook(f, "no_such_loss:0", 1, 1);
  assert_status(one_hook_session_new(&f->s, &f->te->env, HK_SESSION_MONITORED, f->ex, &f->hook, NULL, &f->st), &f->st,
                HK_NOT_FOUND, "no_such_loss");
  assert_null(f->s);
}

/* C134: the loss may be given by handle instead of by name. */
static void test_nan_tensor__the_loss_may_be_given_by_handle(void **state) {
  fixture *f = *state;
  hk_nan_tensor_options o = HK_NAN_TENSOR_OPTIONS_INIT;
  float nan = NAN;
  o.loss_tensor = f->l32;
  assert_ok(hk_nan_tensor_hook_new(&f->hook, &o, &f->st), &f->st);
  open_session(f);
  assert_ok(run(f), &f->st);
  assert_true(fake_executor_last_run(f->fx)->fetches[0] == f->l32);
  fake_executor_set_value(f->fx, f->l32, &nan);
  assert_status(run(f), &f->st, HK_INVALID_ARGUMENT, "NaN loss during training.");
}

static void test_nan_tensor__oom_at_creation_is_clean(void **state) {
  fixture *f = *state;
  hk_nan_tensor_options o = HK_NAN_TENSOR_OPTIONS_INIT;
  hk_code rc = HK_INTERNAL;
  long n, base = test_alloc_live(&f->te->alloc);
  o.env = &f->te->env;
  o.loss = "l32";
  for (n = 0; n < 50; n++) {
    test_alloc_fail_at(&f->te->alloc, n, 0);
    rc = hk_nan_tensor_hook_new(&f->hook, &o, &f->st);
    test_alloc_fail_at(&f->te->alloc, -1, 0);
    if (rc == HK_OK) break;
    assert_status(rc, &f->st, HK_RESOURCE_EXHAUSTED, NULL);
    assert_null(f->hook);
    assert_int_equal(test_alloc_live(&f->te->alloc), base);
  }
  assert_int_equal(rc, HK_OK);
  assert_true(n >= 2);
}

/* ---- no divergent checkpoints ----------------------------------------------------------- */

/* Every checkpoint the state file of `dir` lists: its "w" is finite.
 * @return how many there are; *newest receives the newest one's step. */
static int check_checkpoints_finite(test_env *te, const char *dir, const char *var, int64_t *newest) {
  hk_checkpoint_state *cs = NULL;
  hk_status st = HK_STATUS_INIT;
  assert_ok(hk_checkpoint_state_get(&cs, &te->env, dir, NULL, &st), &st);
  size_t n = hk_checkpoint_state_count(cs);
  for (size_t i = 0; i < n; i++) {
    hk_checkpoint_reader *r = NULL;
    hk_checkpoint_entry e;
    size_t index;
    float w[8];
    assert_ok(hk_checkpoint_reader_open(&r, &te->env, hk_checkpoint_state_path(cs, i), &st), &st);
    assert_ok(hk_checkpoint_reader_find(r, var, &index, &st), &st);
    assert_ok(hk_checkpoint_reader_entry(&e, r, index, &st), &st);
    assert_int_equal(e.dtype, HK_DTYPE_F32);
    assert_true(e.nbytes <= sizeof w);
    assert_ok(hk_checkpoint_reader_read(r, index, w, sizeof w, &st), &st);
    for (size_t k = 0; k < e.nbytes / sizeof(float); k++) assert_true(isfinite(w[k]));
    if (i + 1 == n) *newest = hk_checkpoint_reader_step(r);
    hk_checkpoint_reader_free(r);
  }
  hk_checkpoint_state_free(cs);
  return (int)n;
}

static int checkpoint_exists(const char *dir, int step) {
  char name[64];
  snprintf(name, sizeof name, "model.ckpt-%d.safetensors", step);
  char *p = test_path(dir, name);
  int yes = test_path_exists(p);
  free(p);
  return yes;
}

typedef struct graph_model {
  hk_graph *g;
  hk_handle gs, train, delta, upd;
  hk_saver *saver;
} graph_model;

/* w (f32, graph-owned, starts at 1) += delta (fed) in each step; the loss
 * is the update's own output, the new w, so the guard sees the value the
 * step leaves (H29); GS += 1. */
static void build_graph_model(test_env *te, graph_model *m, int allow_non_finite, hk_status *st) {
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_variable_def vd = HK_VARIABLE_DEF_INIT;
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  hk_handle one_h, w, inc, ops[2];
  int64_t one = 1;
  hk_tensor t;
  go.env = &te->env;
  assert_ok(hk_graph_new(&m->g, &go, st), st);
  assert_ok(hk_graph_get_or_create_global_step(m->g, &m->gs, st), st);
  t = hk_tensor_scalar_i64(&one);
  assert_ok(hk_graph_constant(m->g, &one_h, "one", &t, st), st);
  assert_ok(hk_graph_assign_add(m->g, &inc, "inc", m->gs, one_h, st), st);
  vd.name = "w";
  vd.dtype = HK_DTYPE_F32;
  vd.init.kind = HK_INIT_CONSTANT;
  vd.init.value = 1.0;
  assert_ok(hk_graph_variable(m->g, &w, &vd, st), st);
  assert_ok(hk_graph_placeholder(m->g, &m->delta, "delta", HK_DTYPE_F32, 0, NULL, st), st);
  assert_ok(hk_graph_assign_add(m->g, &m->upd, "upd", w, m->delta, st), st);
  ops[0] = inc;
  ops[1] = m->upd;
  assert_ok(hk_graph_group(m->g, &m->train, "train", ops, 2, st), st);
  so.executor = hk_graph_executor(m->g);
  so.max_to_keep = 3;
  so.allow_non_finite = allow_non_finite;
  assert_ok(hk_saver_new(&m->saver, &so, st), st);
}

static hk_code graph_step(hk_session *s, graph_model *m, float delta, hk_status *st) {
  hk_feed feed;
  hk_run_args args;
  memset(&args, 0, sizeof args);
  feed.tensor = m->delta;
  feed.value = hk_tensor_scalar_f32(&delta);
  args.feeds = &feed;
  args.nfeeds = 1;
  args.targets = &m->train;
  args.ntargets = 1;
  return hk_session_run(s, &args, NULL, NULL, st);
}

/* Steps 1..5 are finite and each is saved (max_to_keep 3: 3, 4, 5 stay);
 * step 6 diverges. With the guard BEFORE the saver nothing of step 6 is
 * written, at the step or at the end, and 3 is not rotated out; with the
 * guard AFTER it, and a Saver that writes non-finite values
 * (allow_non_finite, as TensorFlow's does), step 6 is saved and pushes 3
 * out — the order is what gives the guarantee (C14, C16). */
static void divergence_against_saver(fixture *f, float bad, int guard_first) {
  graph_model m;
  hk_hook *ck = NULL, *hooks[2];
  hk_checkpoint_saver_options co = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
  hk_nan_tensor_options no = HK_NAN_TENSOR_OPTIONS_INIT;
  hk_session_options so;
  int64_t newest = -1;
  char *dir = test_path(f->dir, guard_first ? "first" : "last");

  memset(&m, 0, sizeof m);
  build_graph_model(f->te, &m, !guard_first, &f->st);
  no.loss = "upd";
  assert_ok(hk_nan_tensor_hook_new(&f->hook, &no, &f->st), &f->st);
  co.checkpoint_dir = dir;
  co.save_steps = 1;
  co.saver = m.saver;
  assert_ok(hk_checkpoint_saver_hook_new(&ck, &co, &f->st), &f->st);
  hooks[0] = guard_first ? f->hook : ck;
  hooks[1] = guard_first ? ck : f->hook;
  test_session_options(&so, &f->te->env, HK_SESSION_MONITORED, hk_graph_executor(m.g), hooks, 2);
  assert_ok(hk_session_new(&f->s, &so, &f->st), &f->st);
  for (int i = 1; i <= 5; i++) assert_ok(graph_step(f->s, &m, 0.5f, &f->st), &f->st);
  assert_int_equal(check_checkpoints_finite(f->te, dir, "w", &newest), 3);
  assert_int_equal(newest, 5);

  hk_code rc = graph_step(f->s, &m, bad, &f->st);
  assert_status(rc, &f->st, HK_INVALID_ARGUMENT,
                isnan(bad) ? "NaN loss during training." : "Inf loss during training.");
  (void)hk_session_close(f->s, rc, NULL); /* the training loop ends with the run's error */
  hk_session_free(f->s);
  f->s = NULL;
  if (guard_first) {
    assert_false(checkpoint_exists(dir, 6));
    assert_true(checkpoint_exists(dir, 3));
    assert_int_equal(check_checkpoints_finite(f->te, dir, "w", &newest), 3);
    assert_int_equal(newest, 5);
  } else {
    assert_true(checkpoint_exists(dir, 6));  /* the divergent step was saved ... */
    assert_false(checkpoint_exists(dir, 3)); /* ... and rotated a good one out */
  }
  hk_hook_free(ck);
  hk_hook_free(f->hook);
  f->hook = NULL;
  hk_saver_free(m.saver);
  hk_graph_free(m.g);
  free(dir);
}

static void test_nan_tensor__guard_before_saver_writes_no_nan_checkpoint(void **state) {
  fixture *f = *state;
  f->dir = test_tmpdir_new("nan-graph");
  divergence_against_saver(f, NAN, 1);
  divergence_against_saver(f, NAN, 0);
}

static void test_nan_tensor__guard_before_saver_writes_no_inf_checkpoint(void **state) {
  fixture *f = *state;
  f->dir = test_tmpdir_new("inf-graph");
  divergence_against_saver(f, HUGE_VALF, 1);
}

/* The host loop: its own checkpoint hook runs before the program's hooks,
 * so the guard goes with a zero loop cadence (the loop still restores) and
 * a CheckpointSaverHook of the program's after the guard. A NaN at step 6
 * fails the loop, nothing of it is written, and a new run resumes from 5. */
typedef struct host_model {
  float w[3];
  float loss;
} host_model;

static void host_step(host_model *m, float delta) {
  for (int i = 0; i < 3; i++) m->w[i] += delta * (float)(i + 1);
  m->loss = m->w[0] + m->w[1] + m->w[2];
}

static hk_loop *host_loop_new(fixture *f, host_model *m, hk_hook **hooks, size_t nhooks) {
  static const int64_t d3[1] = {3};
  hk_loop_options lo = HK_LOOP_OPTIONS_INIT;
  hk_loop *l = NULL;
  lo.env = &f->te->env;
  lo.handle_signals = 0;
  lo.checkpoint_dir = f->dir;
  lo.save_steps = 0; /* the loop saves nothing itself; it restores */
  lo.max_to_keep = 3;
  lo.hooks = hooks;
  lo.nhooks = nhooks;
  assert_ok(hk_loop_new(&l, &lo, &f->st), &f->st);
  assert_ok(hk_loop_add_array(l, "w", HK_DTYPE_F32, 1, d3, m->w, 0, &f->st), &f->st);
  assert_ok(hk_loop_add_array(l, "loss", HK_DTYPE_F32, 0, NULL, &m->loss, HK_LOOP_NO_CHECKPOINT, &f->st), &f->st);
  return l;
}

static void test_nan_tensor__host_loop_guard_writes_no_nan_checkpoint(void **state) {
  fixture *f = *state;
  host_model m = {{1, 1, 1}, 3}, after5;
  hk_hook *ck = NULL, *hooks[2];
  hk_checkpoint_saver_options co = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
  hk_nan_tensor_options no = HK_NAN_TENSOR_OPTIONS_INIT;
  int64_t step = -1, newest = -1;
  hk_loop *l;

  f->dir = test_tmpdir_new("nan-loop");
  no.loss = "loss";
  assert_ok(hk_nan_tensor_hook_new(&f->hook, &no, &f->st), &f->st);
  co.checkpoint_dir = f->dir;
  co.save_steps = 1;
  co.save_graph_def = 0;
  assert_ok(hk_checkpoint_saver_hook_new(&ck, &co, &f->st), &f->st);
  hooks[0] = f->hook;
  hooks[1] = ck;

  l = host_loop_new(f, &m, hooks, 2);
  assert_ok(hk_loop_start(l, &step, &f->st), &f->st);
  assert_int_equal(step, 0);
  for (int i = 1; i <= 5; i++) {
    assert_ok(hk_loop_step_begin(l, NULL, &f->st), &f->st);
    host_step(&m, 0.25f);
    assert_ok(hk_loop_step_end(l, &f->st), &f->st);
  }
  after5 = m;
  assert_ok(hk_loop_step_begin(l, NULL, &f->st), &f->st);
  host_step(&m, NAN);
  assert_status(hk_loop_step_end(l, &f->st), &f->st, HK_INVALID_ARGUMENT, "NaN loss during training.");
  assert_true(hk_loop_should_stop(l));
  assert_status(hk_loop_finish(l, &f->st), &f->st, HK_INVALID_ARGUMENT, "NaN loss during training.");
  hk_loop_free(l);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_ERROR, "Model diverged with loss = NaN."), 1);
  assert_false(checkpoint_exists(f->dir, 6));
  assert_true(checkpoint_exists(f->dir, 3));
  assert_int_equal(check_checkpoints_finite(f->te, f->dir, "w", &newest), 3);
  assert_int_equal(newest, 5);

  /* The next run resumes from the last good step. */
  host_model fresh = {{0, 0, 0}, 0};
  l = host_loop_new(f, &fresh, hooks, 2);
  assert_ok(hk_loop_start(l, &step, &f->st), &f->st);
  assert_int_equal(step, 5);
  assert_memory_equal(fresh.w, after5.w, sizeof fresh.w);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  hk_hook_free(ck);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_nan_tensor__bad_options_are_named),
      T(test_nan_tensor__options_init),
      T(test_nan_tensor__a_nan_loss_fails_the_run),
      T(test_nan_tensor__in_warn_mode_a_nan_loss_requests_a_stop),
      T(test_nan_tensor__checks_a_loss_of_every_float_dtype),
      T(test_nan_tensor__an_infinite_loss_diverges_unless_non_finite_is_off),
      T(test_nan_tensor__one_nan_element_anywhere_makes_the_loss_nan),
      T(test_nan_tensor__a_loss_that_is_not_floating_point_is_refused),
      T(test_nan_tensor__unknown_loss_is_not_found),
      T(test_nan_tensor__the_loss_may_be_given_by_handle),
      T(test_nan_tensor__oom_at_creation_is_clean),
      T(test_nan_tensor__guard_before_saver_writes_no_nan_checkpoint),
      T(test_nan_tensor__guard_before_saver_writes_no_inf_checkpoint),
      T(test_nan_tensor__host_loop_guard_writes_no_nan_checkpoint),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
