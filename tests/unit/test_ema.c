/*
 * Tests of the ExponentialMovingAverage hook (hooked/ema.h; contract H74,
 * H75): the averages follow TensorFlow's formula (decay, the num_updates
 * warm-up, the first update taking the value), they are in every
 * checkpoint so that a resumed run averages exactly as one that was not
 * stopped, the export holds them under the variables' names, updates
 * allocate nothing — on the embedded graph executor and on the host loop —
 * and bad inputs and allocation failures are refused with a message naming
 * them. Everything goes
 * through the public headers.
 */
#include "session_fixture.h"
#include "tmpdir.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NSTEPS 6

/* What the program's step leaves in its weights after global step s. */
static void weights_at(int64_t s, float w[3], double d[2]) {
  for (int i = 0; i < 3; i++) w[i] = (float)(s * (i + 1)) * 0.5f - (float)i;
  for (int i = 0; i < 2; i++) d[i] = sin((double)s + i) * 3.0;
}

/* The averages after `n` steps, computed here from the definition
 * shadow = decay * shadow + (1 - decay) * value (the first step's value
 * taken as it is). */
static void expected(int64_t n, double decay, int num_updates, double w_out[3], double d_out[2]) {
  float w[3];
  double d[2];
  for (int64_t s = 1; s <= n; s++) {
    double k = decay;
    if (num_updates) {
      double warm = (1.0 + (double)(s - 1)) / (10.0 + (double)(s - 1));
      if (warm < k) k = warm;
    }
    weights_at(s, w, d);
    for (int i = 0; i < 3; i++) w_out[i] = s == 1 ? w[i] : k * w_out[i] + (1 - k) * w[i];
    for (int i = 0; i < 2; i++) d_out[i] = s == 1 ? d[i] : k * d_out[i] + (1 - k) * d[i];
  }
}

static const char *const averaged[2] = {"w", "d"};

typedef struct fixture {
  test_env *te;
  hk_status st;
  /* the graph */
  hk_graph *g;
  hk_handle gs, train;
  float w[3];
  double d[2];
  float bias;
  /* hooks, session, loop */
  hk_hook *ema, *ck;
  hk_session *s;
  hk_loop *loop;
  char *dir;
} fixture;

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

static void free_loop(fixture *f) {
  if (!f->loop) return;
  (void)hk_loop_finish(f->loop, NULL);
  hk_loop_free(f->loop);
  f->loop = NULL;
}

static int teardown(void **state) {
  fixture *f = *state;
  close_session(f);
  free_loop(f);
  hk_hook_free(f->ema);
  hk_hook_free(f->ck);
  hk_graph_free(f->g);
  if (f->dir) test_tmpdir_free(f->dir);
  test_env *te = f->te;
  free(f);
  return test_env_release(te);
}

static hk_ema_options ema_opts(fixture *f, double decay) {
  hk_ema_options o = HK_EMA_OPTIONS_INIT;
  o.env = &f->te->env;
  o.variables = averaged;
  o.nvariables = 2;
  o.decay = decay;
  return o;
}

static void make_ema(fixture *f, const hk_ema_options *o) {
  hk_hook_free(f->ema);
  f->ema = NULL;
  assert_ok(hk_ema_hook_new(&f->ema, o, &f->st), &f->st);
}

static void check_averages(fixture *f, int64_t n, double decay, int num_updates) {
  double ew[3], ed[2];
  hk_tensor t;
  expected(n, decay, num_updates, ew, ed);
  assert_ok(hk_ema_hook_average(&t, f->ema, "w", &f->st), &f->st);
  assert_int_equal(t.dtype, HK_DTYPE_F32);
  assert_int_equal(t.nbytes, sizeof f->w);
  for (int i = 0; i < 3; i++) assert_true(fabs(((const float *)t.data)[i] - ew[i]) <= 1e-5 * (1 + fabs(ew[i])));
  assert_ok(hk_ema_hook_average(&t, f->ema, "d", &f->st), &f->st);
  assert_int_equal(t.dtype, HK_DTYPE_F64);
  for (int i = 0; i < 2; i++) assert_true(fabs(((const double *)t.data)[i] - ed[i]) <= 1e-12 * (1 + fabs(ed[i])));
}

/* ---- the graph ------------------------------------------------------------------------------ */

static void add_external(fixture *f, const char *name, hk_dtype dtype, int32_t rank, const int64_t *dims, void *data,
                         uint32_t flags) {
  hk_variable_def vd = HK_VARIABLE_DEF_INIT;
  hk_handle h;
  vd.name = name;
  vd.dtype = dtype;
  vd.rank = rank;
  vd.dims = dims;
  vd.flags = flags;
  vd.external_data = data;
  assert_ok(hk_graph_variable(f->g, &h, &vd, &f->st), &f->st);
}

/* GS += 1 per run; the weights "w" (F32[3]) and "d" (F64[2]) and "bias"
 * (not averaged) are the test's memory, which each step sets; "scratch" is
 * local. With `shadows`, the hook's variables. */
static void build(fixture *f, int shadows) {
  static const int64_t three[1] = {3}, two[1] = {2}, one_dim[1] = {1};
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_handle one_h;
  int64_t one = 1;
  hk_tensor t;
  go.env = &f->te->env;
  assert_ok(hk_graph_new(&f->g, &go, &f->st), &f->st);
  assert_ok(hk_graph_get_or_create_global_step(f->g, &f->gs, &f->st), &f->st);
  t = hk_tensor_scalar_i64(&one);
  assert_ok(hk_graph_constant(f->g, &one_h, "one", &t, &f->st), &f->st);
  assert_ok(hk_graph_assign_add(f->g, &f->train, "train", f->gs, one_h, &f->st), &f->st);
  add_external(f, "w", HK_DTYPE_F32, 1, three, f->w, HK_VAR_TRAINABLE);
  add_external(f, "d", HK_DTYPE_F64, 1, two, f->d, HK_VAR_TRAINABLE);
  add_external(f, "bias", HK_DTYPE_F32, 1, one_dim, &f->bias, HK_VAR_TRAINABLE);
  add_external(f, "scratch", HK_DTYPE_F32, 1, one_dim, &f->bias, HK_VAR_LOCAL);
  if (shadows) assert_ok(hk_ema_hook_add_graph_variables(f->ema, f->g, &f->st), &f->st);
}

static void make_saver_hook(fixture *f) {
  hk_checkpoint_saver_options co = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
  co.checkpoint_dir = f->dir;
  co.save_steps = 1;
  co.save_graph_def = 0;
  hk_hook_free(f->ck);
  f->ck = NULL;
  assert_ok(hk_checkpoint_saver_hook_new(&f->ck, &co, &f->st), &f->st);
}

/* A singular session over the graph: the average, then the checkpoint
 * saver (restoring from f->dir) when f->ck is set. */
static hk_code open_session(fixture *f) {
  hk_hook *hooks[2] = {f->ema, f->ck};
  hk_session_options so;
  test_session_options(&so, &f->te->env, HK_SESSION_SINGULAR, hk_graph_executor(f->g), hooks, f->ck ? 2 : 1);
  if (f->ck) so.checkpoint_dir = f->dir;
  return hk_session_new(&f->s, &so, &f->st);
}

/* Steps until global step `last`: each sets the weights of the step it
 * ends at, then runs. */
static void graph_steps(fixture *f, int64_t from, int64_t last) {
  for (int64_t s = from + 1; s <= last; s++) {
    weights_at(s, f->w, f->d);
    f->bias = (float)s;
    assert_ok(session_run_train(f->s, f->train, &f->st), &f->st);
  }
}

/* H74: shadow = decay * shadow + (1 - decay) * value after each step, the
 * first step's value taken as it is (F32 and F64). */
static void test_ema__graph_averages_follow_the_definition(void **state) {
  fixture *f = *state;
  hk_ema_options o = ema_opts(f, 0.75);
  hk_ema_info info;
  make_ema(f, &o);
  build(f, 1);
  assert_ok(open_session(f), &f->st);
  graph_steps(f, 0, 1);
  check_averages(f, 1, 0.75, 0);
  graph_steps(f, 1, NSTEPS);
  check_averages(f, NSTEPS, 0.75, 0);
  assert_ok(hk_ema_hook_info(&info, f->ema, &f->st), &f->st);
  assert_int_equal(info.updates, NSTEPS);
  assert_string_equal(info.shadows[0], "w/ExponentialMovingAverage");
  assert_string_equal(info.count, "ExponentialMovingAverage/num_updates");
  close_session(f);
  /* The averages outlive the session. */
  check_averages(f, NSTEPS, 0.75, 0);
}

/* H74: with num_updates the decay of update n+1 is min(decay, (1+n)/(10+n)). */
static void test_ema__graph_num_updates_warms_the_decay_up(void **state) {
  fixture *f = *state;
  hk_ema_options o = ema_opts(f, 0.999);
  o.num_updates = 1;
  make_ema(f, &o);
  build(f, 1);
  assert_ok(open_session(f), &f->st);
  graph_steps(f, 0, NSTEPS);
  check_averages(f, NSTEPS, 0.999, 1);
}

/* The shadow variables of the graph, read back through a checkpoint. */
static void read_tensor(const char *prefix, const char *name, void *dst, size_t n) {
  hk_checkpoint_reader *r = NULL;
  hk_status st = HK_STATUS_INIT;
  size_t i;
  assert_ok(hk_checkpoint_reader_open(&r, NULL, prefix, &st), &st);
  assert_ok(hk_checkpoint_reader_find(r, name, &i, &st), &st);
  assert_ok(hk_checkpoint_reader_read(r, i, dst, n, &st), &st);
  hk_checkpoint_reader_free(r);
}

static int reader_has(const char *prefix, const char *name) {
  hk_checkpoint_reader *r = NULL;
  hk_status st = HK_STATUS_INIT;
  size_t i;
  assert_ok(hk_checkpoint_reader_open(&r, NULL, prefix, &st), &st);
  int found = hk_checkpoint_reader_find(r, name, &i, &st) == HK_OK;
  hk_checkpoint_reader_free(r);
  return found;
}

/* H75: the shadows and the count are in every checkpoint: a run stopped at
 * step 3 and resumed holds, at step 6, the bytes of a run that was not
 * stopped — in the hook and in checkpoint 6. */
static void test_ema__graph_resumed_run_averages_as_an_uninterrupted_one(void **state) {
  fixture *f = *state;
  char *root = test_tmpdir_new("ema-graph");
  char *dir_a = test_path(root, "a"), *dir_b = test_path(root, "b");
  float wa[3], wb[3], sa[3], sb[3];
  double da[2], db[2];
  hk_ema_options o = ema_opts(f, 0.5);
  o.num_updates = 1;
  make_ema(f, &o);
  build(f, 1);

  f->dir = dir_a;
  make_saver_hook(f);
  assert_ok(open_session(f), &f->st);
  graph_steps(f, 0, NSTEPS);
  close_session(f);
  hk_tensor t;
  assert_ok(hk_ema_hook_average(&t, f->ema, "w", &f->st), &f->st);
  memcpy(wa, t.data, sizeof wa);
  assert_ok(hk_ema_hook_average(&t, f->ema, "d", &f->st), &f->st);
  memcpy(da, t.data, sizeof da);

  f->dir = dir_b;
  make_saver_hook(f);
  make_ema(f, &o);
  assert_ok(open_session(f), &f->st);
  graph_steps(f, 0, 3);
  close_session(f);
  make_ema(f, &o); /* a new hook: what it knows comes from checkpoint 3 */
  memset(f->w, 0, sizeof f->w);
  assert_ok(open_session(f), &f->st);
  hk_ema_info info;
  assert_ok(hk_ema_hook_info(&info, f->ema, &f->st), &f->st);
  assert_int_equal(info.updates, 3);
  graph_steps(f, 3, NSTEPS);
  close_session(f);
  assert_ok(hk_ema_hook_average(&t, f->ema, "w", &f->st), &f->st);
  memcpy(wb, t.data, sizeof wb);
  assert_ok(hk_ema_hook_average(&t, f->ema, "d", &f->st), &f->st);
  memcpy(db, t.data, sizeof db);
  assert_memory_equal(wa, wb, sizeof wa);
  assert_memory_equal(da, db, sizeof da);

  char *pa = test_path(dir_a, "model.ckpt-6"), *pb = test_path(dir_b, "model.ckpt-6");
  read_tensor(pa, "w/ExponentialMovingAverage", sa, sizeof sa);
  read_tensor(pb, "w/ExponentialMovingAverage", sb, sizeof sb);
  assert_memory_equal(sa, sb, sizeof sa);
  assert_memory_equal(sa, wa, sizeof sa);
  int64_t ca = 0;
  read_tensor(pb, "ExponentialMovingAverage/num_updates", &ca, sizeof ca);
  assert_int_equal(ca, NSTEPS);
  free(pa);
  free(pb);
  f->dir = NULL;
  free(dir_a);
  free(dir_b);
  test_tmpdir_free(root);
}

/* H75: the export holds every checkpointed variable under its own name,
 * the averaged ones with their average, and neither shadows, count nor
 * local variables; a Saver over the model restores it. */
static void test_ema__export_holds_the_averages_under_the_variables_names(void **state) {
  fixture *f = *state;
  hk_ema_options o = ema_opts(f, 0.75);
  const char *prefix = NULL;
  f->dir = test_tmpdir_new("ema-export");
  char *path = test_path(f->dir, "ema");
  make_ema(f, &o);
  build(f, 1);
  assert_ok(open_session(f), &f->st);
  assert_status(hk_ema_hook_export(&prefix, f->ema, path, &f->st), &f->st, HK_FAILED_PRECONDITION, "no average yet");
  graph_steps(f, 0, 4);
  assert_ok(hk_ema_hook_export(&prefix, f->ema, path, &f->st), &f->st);
  assert_string_equal(prefix, path);
  assert_logged(f->te, HK_LOG_INFO, "exported the averages of 2 variable(s) after 4 update(s)");

  float w[3], bias = 0;
  double d[2], ew[3], ed[2];
  int64_t gs = 0;
  expected(4, 0.75, 0, ew, ed);
  read_tensor(path, "w", w, sizeof w);
  read_tensor(path, "d", d, sizeof d);
  read_tensor(path, "bias", &bias, sizeof bias);
  read_tensor(path, "global_step", &gs, sizeof gs);
  for (int i = 0; i < 3; i++) assert_true(fabs(w[i] - ew[i]) <= 1e-5 * (1 + fabs(ew[i])));
  for (int i = 0; i < 2; i++) assert_true(fabs(d[i] - ed[i]) <= 1e-12 * (1 + fabs(ed[i])));
  assert_true(bias == 4.0f); /* not averaged: the variable's value */
  assert_int_equal(gs, 4);
  assert_false(reader_has(path, "w/ExponentialMovingAverage"));
  assert_false(reader_has(path, "ExponentialMovingAverage/num_updates"));
  assert_false(reader_has(path, "scratch"));
  {
    hk_checkpoint_reader *r = NULL;
    assert_ok(hk_checkpoint_reader_open(&r, NULL, path, &f->st), &f->st);
    assert_int_equal(hk_checkpoint_reader_step(r), 4);
    assert_ok(hk_checkpoint_reader_verify(r, &f->st), &f->st);
    hk_checkpoint_reader_free(r);
  }

  /* An evaluator restores it as the model: its Saver over every global
   * variable but the hook's. */
  const char *model_vars[4] = {"w", "d", "bias", "global_step"};
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  hk_saver *saver = NULL;
  so.executor = hk_graph_executor(f->g);
  so.var_list = model_vars;
  so.nvar_list = 4;
  assert_ok(hk_saver_new(&saver, &so, &f->st), &f->st);
  assert_ok(hk_saver_restore(saver, hk_session_raw_session(f->s), path, &f->st), &f->st);
  assert_memory_equal(f->w, w, sizeof w);
  hk_saver_free(saver);

  /* A session closed after an error runs no end(): its raw session is gone,
   * and the export says the hook serves no session. */
  (void)hk_session_close(f->s, HK_INTERNAL, NULL);
  assert_status(hk_ema_hook_export(&prefix, f->ema, path, &f->st), &f->st, HK_FAILED_PRECONDITION, "serves no session");
  free(path);
}

/* H74: an update allocates nothing (the embedded executor caches its
 * reads and assignments). */
static void test_ema__graph_update_allocates_nothing(void **state) {
  fixture *f = *state;
  hk_ema_options o = ema_opts(f, 0.9);
  o.num_updates = 1;
  make_ema(f, &o);
  build(f, 1);
  assert_ok(open_session(f), &f->st);
  graph_steps(f, 0, 3);
  test_alloc_reset_counts(&f->te->alloc);
  graph_steps(f, 3, 20);
  assert_int_equal(test_alloc_count(&f->te->alloc), 0);
}

/* H74: begin() names what the executor lacks, and how to create it; a
 * variable that is not F32 or F64 is refused by name. */
static void test_ema__graph_missing_shadows_are_named(void **state) {
  fixture *f = *state;
  hk_ema_options o = ema_opts(f, 0.9);
  make_ema(f, &o);
  build(f, 0);
  assert_status(open_session(f), &f->st, HK_NOT_FOUND, "shadow 'w/ExponentialMovingAverage'");
  assert_true(strstr(f->st.message, "hk_ema_hook_add_graph_variables") != NULL);

  const char *bad[1] = {"global_step"};
  o.variables = bad;
  o.nvariables = 1;
  make_ema(f, &o);
  assert_status(hk_ema_hook_add_graph_variables(f->ema, f->g, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "variable 'global_step' is i64; only F32 and F64 are averaged");
  const char *none[1] = {"nothing"};
  o.variables = none;
  make_ema(f, &o);
  assert_status(hk_ema_hook_add_graph_variables(f->ema, f->g, &f->st), &f->st, HK_NOT_FOUND, "variable 'nothing'");
}

/* Bad options: refused with a message naming them, nothing created. */
static void test_ema__bad_options_are_named(void **state) {
  fixture *f = *state;
  hk_hook *h = NULL;
  hk_ema_options o = ema_opts(f, 0.9);
  const char *twice[2] = {"w", "w"}, *with_null[2] = {"w", NULL}, *bad_name[1] = {"w x"};

  assert_status(hk_ema_hook_new(&h, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "options is NULL");
  o.nvariables = 0;
  assert_status(hk_ema_hook_new(&h, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "variables is empty");
  o = ema_opts(f, 1.5);
  assert_status(hk_ema_hook_new(&h, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "decay 1.5 is not in [0, 1]");
  o = ema_opts(f, NAN);
  assert_status(hk_ema_hook_new(&h, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "decay nan is not in [0, 1]");
  o = ema_opts(f, 0.9);
  o.variables = twice;
  assert_status(hk_ema_hook_new(&h, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "variables[1] 'w' repeats variables[0]");
  o.variables = with_null;
  assert_status(hk_ema_hook_new(&h, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "variables[1] is NULL");
  o.variables = bad_name;
  o.nvariables = 1;
  assert_status(hk_ema_hook_new(&h, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "variables[0] 'w x'");
  o = ema_opts(f, 0.9);
  o.name = "a/b";
  assert_status(hk_ema_hook_new(&h, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "name 'a/b'");
  o.name = NULL;
  o.export_path = "";
  assert_status(hk_ema_hook_new(&h, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "export_path is empty");
  o.export_path = NULL;
  o.version = 2;
  assert_status(hk_ema_hook_new(&h, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "version 2 of hk_ema_options");
  assert_null(h);
  assert_int_equal(hk_ema_options_init(&o, 2), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_ema_options_init(&o, HK_EMA_OPTIONS_VERSION), HK_OK);
  assert_true(o.decay == 0.999);

  /* Queries on something that is not the hook. */
  hk_ema_info info;
  hk_tensor t;
  assert_status(hk_ema_hook_info(&info, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "not an ExponentialMovingAverage");
  o = ema_opts(f, 0.9);
  make_ema(f, &o);
  assert_status(hk_ema_hook_average(&t, f->ema, "nothing", &f->st), &f->st, HK_NOT_FOUND, "does not average 'nothing'");
  assert_status(hk_ema_hook_average(&t, f->ema, "w", &f->st), &f->st, HK_FAILED_PRECONDITION, "no average of 'w'");
  assert_status(hk_ema_hook_export(NULL, f->ema, "x", &f->st), &f->st, HK_FAILED_PRECONDITION, "serves no session");
}

/* ---- the host loop ------------------------------------------------------------------------- */

typedef struct prog {
  float w[3];
  double d[2];
  float bias;
} prog;

static hk_loop *loop_new(fixture *f, prog *p, const char *dir, int64_t last_step) {
  hk_loop_options lo = HK_LOOP_OPTIONS_INIT;
  hk_loop *l = NULL;
  static const int64_t three[1] = {3}, two[1] = {2};
  lo.env = &f->te->env;
  lo.handle_signals = 0;
  lo.checkpoint_dir = dir;
  if (dir) lo.save_steps = 1;
  lo.last_step = last_step;
  lo.log_step_count_steps = 0;
  assert_ok(hk_loop_new(&l, &lo, &f->st), &f->st);
  assert_ok(hk_loop_add_array(l, "w", HK_DTYPE_F32, 1, three, p->w, 0, &f->st), &f->st);
  assert_ok(hk_loop_add_array(l, "d", HK_DTYPE_F64, 1, two, p->d, 0, &f->st), &f->st);
  assert_ok(hk_loop_add_array(l, "bias", HK_DTYPE_F32, 0, NULL, &p->bias, 0, &f->st), &f->st);
  assert_ok(hk_loop_add_ema(l, f->ema, &f->st), &f->st);
  return l;
}

static void loop_steps(fixture *f, hk_loop *l, prog *p) {
  int64_t step = 0;
  while (!hk_loop_should_stop(l)) {
    assert_ok(hk_loop_step_begin(l, &step, &f->st), &f->st);
    weights_at(step + 1, p->w, p->d);
    p->bias = (float)(step + 1);
    assert_ok(hk_loop_step_end(l, &f->st), &f->st);
  }
}

/* H74: on the host loop, the averages of the program's arrays follow the
 * definition (the loop registered the shadows and the count itself). */
static void test_ema__loop_averages_follow_the_definition(void **state) {
  fixture *f = *state;
  prog p;
  hk_ema_options o = ema_opts(f, 0.75);
  o.num_updates = 1;
  memset(&p, 0, sizeof p);
  make_ema(f, &o);
  f->loop = loop_new(f, &p, NULL, NSTEPS);
  assert_ok(hk_loop_start(f->loop, NULL, &f->st), &f->st);
  loop_steps(f, f->loop, &p);
  assert_ok(hk_loop_finish(f->loop, &f->st), &f->st);
  check_averages(f, NSTEPS, 0.75, 1);
}

/* H75: a host-loop run stopped at step 3 and resumed averages exactly as
 * one that was not (the hook runs before the loop's checkpoint hook); the
 * export_path export at the end holds the averages under the arrays'
 * names. */
static void test_ema__loop_resumed_run_averages_as_an_uninterrupted_one(void **state) {
  fixture *f = *state;
  char *root = test_tmpdir_new("ema-loop");
  char *dir_a = test_path(root, "a"), *dir_b = test_path(root, "b"), *export_b = test_path(root, "ema-b");
  prog a, b;
  float sa[3], sb[3], ex[3];
  double da[2], db[2];
  hk_ema_options o = ema_opts(f, 0.5);
  o.num_updates = 1;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  make_ema(f, &o);
  f->loop = loop_new(f, &a, dir_a, NSTEPS);
  assert_ok(hk_loop_start(f->loop, NULL, &f->st), &f->st);
  loop_steps(f, f->loop, &a);
  free_loop(f);

  o.export_path = export_b;
  make_ema(f, &o);
  f->loop = loop_new(f, &b, dir_b, 3);
  assert_ok(hk_loop_start(f->loop, NULL, &f->st), &f->st);
  loop_steps(f, f->loop, &b);
  free_loop(f);
  make_ema(f, &o);
  memset(&b, 0, sizeof b);
  f->loop = loop_new(f, &b, dir_b, NSTEPS);
  assert_ok(hk_loop_start(f->loop, NULL, &f->st), &f->st);
  loop_steps(f, f->loop, &b);
  assert_ok(hk_loop_finish(f->loop, &f->st), &f->st);

  char *pa = test_path(dir_a, "model.ckpt-6"), *pb = test_path(dir_b, "model.ckpt-6");
  read_tensor(pa, "w/ExponentialMovingAverage", sa, sizeof sa);
  read_tensor(pb, "w/ExponentialMovingAverage", sb, sizeof sb);
  assert_memory_equal(sa, sb, sizeof sa);
  read_tensor(pa, "d/ExponentialMovingAverage", da, sizeof da);
  read_tensor(pb, "d/ExponentialMovingAverage", db, sizeof db);
  assert_memory_equal(da, db, sizeof da);
  read_tensor(export_b, "w", ex, sizeof ex);
  assert_memory_equal(ex, sb, sizeof ex);
  assert_false(reader_has(export_b, "w/ExponentialMovingAverage"));
  assert_true(reader_has(export_b, "bias"));
  free(pa);
  free(pb);
  free(dir_a);
  free(dir_b);
  free(export_b);
  free_loop(f);
  test_tmpdir_free(root);
}

/* H74: on the host loop, a step's update allocates nothing. */
static void test_ema__loop_update_allocates_nothing(void **state) {
  fixture *f = *state;
  prog p;
  int64_t step = 0;
  hk_ema_options o = ema_opts(f, 0.9);
  memset(&p, 0, sizeof p);
  make_ema(f, &o);
  f->loop = loop_new(f, &p, NULL, HK_UNSET_STEPS);
  assert_ok(hk_loop_start(f->loop, NULL, &f->st), &f->st);
  for (int i = 0; i < 3; i++) {
    assert_ok(hk_loop_step_begin(f->loop, &step, &f->st), &f->st);
    assert_ok(hk_loop_step_end(f->loop, &f->st), &f->st);
  }
  test_alloc_reset_counts(&f->te->alloc);
  for (int i = 0; i < 20; i++) {
    assert_ok(hk_loop_step_begin(f->loop, &step, &f->st), &f->st);
    weights_at(step + 1, p.w, p.d);
    assert_ok(hk_loop_step_end(f->loop, &f->st), &f->st);
  }
  assert_int_equal(test_alloc_count(&f->te->alloc), 0);
}

/* hk_loop_add_ema refuses what it cannot average, by name, and leaves the
 * loop as it was. */
static void test_ema__loop_add_refusals_are_named(void **state) {
  fixture *f = *state;
  hk_loop_options lo = HK_LOOP_OPTIONS_INIT;
  prog p;
  int32_t steps = 0;
  float loss = 0;
  hk_ema_options o = ema_opts(f, 0.9);
  memset(&p, 0, sizeof p);
  lo.env = &f->te->env;
  lo.handle_signals = 0;
  assert_ok(hk_loop_new(&f->loop, &lo, &f->st), &f->st);
  make_ema(f, &o);
  assert_status(hk_loop_add_ema(f->loop, f->ema, &f->st), &f->st, HK_FAILED_PRECONDITION,
                "'w' names no registered array");
  assert_ok(hk_loop_add_array(f->loop, "w", HK_DTYPE_I32, 0, NULL, &steps, 0, &f->st), &f->st);
  assert_ok(hk_loop_add_array(f->loop, "d", HK_DTYPE_F32, 0, NULL, &loss, HK_LOOP_NO_CHECKPOINT, &f->st), &f->st);
  assert_status(hk_loop_add_ema(f->loop, f->ema, &f->st), &f->st, HK_INVALID_ARGUMENT, "'w' is i32");
  const char *only_d[1] = {"d"};
  o.variables = only_d;
  o.nvariables = 1;
  make_ema(f, &o);
  assert_status(hk_loop_add_ema(f->loop, f->ema, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "'d' is not checkpointed (HK_LOOP_NO_CHECKPOINT)");
  assert_status(hk_loop_add_ema(f->loop, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "hook is NULL");
  hk_hook *counter = NULL;
  hk_step_counter_options sco = HK_STEP_COUNTER_OPTIONS_INIT;
  sco.every_n_steps = 1;
  assert_ok(hk_step_counter_hook_new(&counter, &sco, &f->st), &f->st);
  assert_status(hk_loop_add_ema(f->loop, counter, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "is not an ExponentialMovingAverage hook");
  hk_hook_free(counter);
  /* Nothing was registered by the refusals: the start works. */
  assert_ok(hk_loop_start(f->loop, NULL, &f->st), &f->st);
  assert_status(hk_loop_add_ema(f->loop, f->ema, &f->st), &f->st, HK_FAILED_PRECONDITION, "after hk_loop_start()");
}

/* Every allocation failure — creating the hook, in its begin() (a session
 * over the graph), in hk_loop_add_ema() — is RESOURCE_EXHAUSTED naming it,
 * and leaks nothing. */
static void test_ema__out_of_memory_is_clean(void **state) {
  fixture *f = *state;
  hk_ema_options o = ema_opts(f, 0.9);
  hk_code rc = HK_INTERNAL;
  long n, live = test_alloc_live(&f->te->alloc);
  for (n = 0; n < 100; n++) {
    hk_hook *h = (hk_hook *)f;
    test_alloc_fail_at(&f->te->alloc, n, 0);
    rc = hk_ema_hook_new(&h, &o, &f->st);
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
  assert_true(n >= 5); /* the struct, the names, the shadows' names, the wrapper */

  make_ema(f, &o);
  build(f, 1);
  rc = HK_INTERNAL;
  for (n = 0; n < 400 && rc != HK_OK; n++) {
    test_alloc_fail_at(&f->te->alloc, n, 0);
    rc = open_session(f);
    test_alloc_fail_at(&f->te->alloc, -1, 0);
    if (rc != HK_OK) {
      assert_int_equal(rc, HK_RESOURCE_EXHAUSTED);
      assert_null(f->s);
    }
  }
  assert_int_equal(rc, HK_OK);
  graph_steps(f, 0, 2);
  check_averages(f, 2, 0.9, 0);
  close_session(f);

  prog p;
  memset(&p, 0, sizeof p);
  rc = HK_INTERNAL;
  for (n = 0; n < 100 && rc != HK_OK; n++) {
    static const int64_t three[1] = {3}, two[1] = {2};
    hk_loop_options lo = HK_LOOP_OPTIONS_INIT;
    hk_loop *l = NULL;
    lo.env = &f->te->env;
    lo.handle_signals = 0;
    assert_ok(hk_loop_new(&l, &lo, &f->st), &f->st);
    assert_ok(hk_loop_add_array(l, "w", HK_DTYPE_F32, 1, three, p.w, 0, &f->st), &f->st);
    assert_ok(hk_loop_add_array(l, "d", HK_DTYPE_F64, 1, two, p.d, 0, &f->st), &f->st);
    test_alloc_fail_at(&f->te->alloc, n, 0);
    rc = hk_loop_add_ema(l, f->ema, &f->st);
    test_alloc_fail_at(&f->te->alloc, -1, 0);
    if (rc != HK_OK) assert_status(rc, &f->st, HK_RESOURCE_EXHAUSTED, "out of memory");
    hk_loop_free(l);
  }
  assert_int_equal(rc, HK_OK);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_ema__graph_averages_follow_the_definition, setup, teardown),
      cmocka_unit_test_setup_teardown(test_ema__graph_num_updates_warms_the_decay_up, setup, teardown),
      cmocka_unit_test_setup_teardown(test_ema__graph_resumed_run_averages_as_an_uninterrupted_one, setup, teardown),
      cmocka_unit_test_setup_teardown(test_ema__export_holds_the_averages_under_the_variables_names, setup, teardown),
      cmocka_unit_test_setup_teardown(test_ema__graph_update_allocates_nothing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_ema__graph_missing_shadows_are_named, setup, teardown),
      cmocka_unit_test_setup_teardown(test_ema__bad_options_are_named, setup, teardown),
      cmocka_unit_test_setup_teardown(test_ema__loop_averages_follow_the_definition, setup, teardown),
      cmocka_unit_test_setup_teardown(test_ema__loop_resumed_run_averages_as_an_uninterrupted_one, setup, teardown),
      cmocka_unit_test_setup_teardown(test_ema__loop_update_allocates_nothing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_ema__loop_add_refusals_are_named, setup, teardown),
      cmocka_unit_test_setup_teardown(test_ema__out_of_memory_is_clean, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
