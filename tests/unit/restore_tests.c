/*
 * What the restore test programs share (restore_tests.h).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "restore_tests.h"

/* ---- the model ------------------------------------------------------------------- */

void model_build(model *m, test_env *te, int b_variant, uint64_t seed) {
  static const int64_t w_dims[2] = {2, 3}, b4[1] = {4}, b5[1] = {5};
  static const float ones[NW] = {1, 1, 1, 1, 1, 1};
  static const int64_t one = 1;
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_variable_def d = HK_VARIABLE_DEF_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_handle ones_h, one_h, add_w, add_gs, rep, parts[2];
  hk_tensor t;

  memset(m, 0, sizeof *m);
  go.env = &te->env;
  assert_ok(hk_graph_new(&m->g, &go, &st), &st);
  m->ex = hk_graph_executor(m->g);

  d.name = "w";
  d.dtype = HK_DTYPE_F32;
  d.rank = 2;
  d.dims = w_dims;
  d.init.kind = HK_INIT_UNIFORM;
  d.init.minval = -1;
  d.init.maxval = 1;
  d.init.seed = seed;
  assert_ok(hk_graph_variable(m->g, &m->w, &d, &st), &st);

  d = (hk_variable_def)HK_VARIABLE_DEF_INIT;
  d.name = "b";
  d.dtype = (b_variant & B_SHAPE) == B_F32_4 ? HK_DTYPE_F32 : HK_DTYPE_F64;
  d.rank = 1;
  d.dims = (b_variant & B_SHAPE) == B_F64_5 ? b5 : b4;
  d.init.kind = HK_INIT_CONSTANT;
  d.init.value = 0.25;
  if (b_variant & B_OPTIONAL) d.flags |= HK_VAR_OPTIONAL;
  if (b_variant & B_EXTERNAL) {
    for (size_t k = 0; k < 5; k++) m->b_ext[k] = B_EXTERNAL_VALUE;
    d.external_data = m->b_ext;
    d.init.kind = HK_INIT_NONE; /* host memory counts as initialized */
  }
  m->b = HK_NO_HANDLE;
  if ((b_variant & B_SHAPE) != B_NONE) assert_ok(hk_graph_variable(m->g, &m->b, &d, &st), &st);

  assert_ok(hk_graph_create_global_step(m->g, &m->gs, &st), &st);

  d = (hk_variable_def)HK_VARIABLE_DEF_INIT;
  d.name = "loc";
  d.dtype = HK_DTYPE_I64;
  d.init.kind = HK_INIT_ZEROS;
  d.flags = HK_VAR_LOCAL;
  assert_ok(hk_graph_variable(m->g, &m->loc, &d, &st), &st);

  assert_ok(hk_graph_init_op(m->g, &m->init, "my_init", NULL, 0, &st), &st);
  assert_ok(hk_graph_init_op(m->g, &m->local_init, "my_local_init", &m->loc, 1, &st), &st);
  assert_ok(hk_graph_report_uninitialized(m->g, &rep, "my_ready", NULL, 0, &st), &st);
  assert_ok(hk_graph_op_output(m->g, &m->ready, rep, 0, &st), &st);

  /* train: w += 1 and global_step += 1 */
  assert_ok(hk_tensor_init(&t, HK_DTYPE_F32, 2, w_dims, (void *)ones, &st), &st);
  assert_ok(hk_graph_constant(m->g, &ones_h, "ones", &t, &st), &st);
  assert_ok(hk_tensor_init(&t, HK_DTYPE_I64, 0, NULL, (void *)&one, &st), &st);
  assert_ok(hk_graph_constant(m->g, &one_h, "one", &t, &st), &st);
  assert_ok(hk_graph_assign_add(m->g, &add_w, "add_w", m->w, ones_h, &st), &st);
  assert_ok(hk_graph_assign_add(m->g, &add_gs, "add_gs", m->gs, one_h, &st), &st);
  parts[0] = add_w;
  parts[1] = add_gs;
  assert_ok(hk_graph_group(m->g, &m->train, "train", parts, 2, &st), &st);
}

size_t var_index(model *m, const char *name) {
  hk_status st = HK_STATUS_INIT;
  size_t idx = 0;
  assert_ok(hk_executor_find_variable(m->ex, name, &idx, &st), &st);
  return idx;
}

/* The seed's values: w[k] = 10 seed + k, b[k] = 100 seed + k + 0.5, GS = seed. */
float w_of(int seed, size_t k) { return (float)(10 * seed) + (float)k; }
double b_of(int seed, size_t k) { return 100.0 * seed + (double)k + 0.5; }

void set_values(model *m, hk_raw_session *rs, int seed) {
  static const int64_t w_dims[2] = {2, 3}, b_dims[1] = {4};
  hk_status st = HK_STATUS_INIT;
  float w[NW];
  double b[4];
  int64_t gs = seed;
  hk_tensor t;
  for (size_t k = 0; k < NW; k++) w[k] = w_of(seed, k);
  for (size_t k = 0; k < 4; k++) b[k] = b_of(seed, k);
  assert_ok(hk_tensor_init(&t, HK_DTYPE_F32, 2, w_dims, w, &st), &st);
  assert_ok(hk_raw_session_assign_variable(rs, var_index(m, "w"), &t, &st), &st);
  assert_ok(hk_tensor_init(&t, HK_DTYPE_F64, 1, b_dims, b, &st), &st);
  assert_ok(hk_raw_session_assign_variable(rs, var_index(m, "b"), &t, &st), &st);
  assert_ok(hk_tensor_init(&t, HK_DTYPE_I64, 0, NULL, &gs, &st), &st);
  assert_ok(hk_raw_session_assign_variable(rs, var_index(m, "global_step"), &t, &st), &st);
}

/* Copy variable `name` of rs into out (n bytes); nonzero when it is initialized. */
int read_var(model *m, hk_raw_session *rs, const char *name, void *out, size_t n) {
  hk_status st = HK_STATUS_INIT;
  hk_tensor t;
  if (hk_raw_session_read_variable(&t, rs, var_index(m, name), &st) != HK_OK) return 0;
  assert_int_equal(t.nbytes, n);
  memcpy(out, t.data, n);
  return 1;
}

int64_t gs_of(model *m, hk_raw_session *rs) {
  int64_t gs = -1;
  assert_true(read_var(m, rs, "global_step", &gs, sizeof gs));
  return gs;
}

/* Nonzero when w, b and the GS of rs hold the seed's values. */
int holds(model *m, hk_raw_session *rs, int seed) {
  float w[NW];
  double b[4];
  if (!read_var(m, rs, "w", w, sizeof w) || !read_var(m, rs, "b", b, sizeof b)) return 0;
  for (size_t k = 0; k < NW; k++)
    if (w[k] != w_of(seed, k)) return 0;
  for (size_t k = 0; k < 4; k++)
    if (b[k] != b_of(seed, k)) return 0;
  return gs_of(m, rs) == seed;
}

/* What m's init op gives w, computed in a scratch raw session. */
void initial_w(model *m, float *w) {
  hk_status st = HK_STATUS_INIT;
  hk_raw_session *rs = NULL;
  hk_run_args args = {NULL, 0, NULL, 0, &m->init, 1, NULL};
  assert_ok(hk_raw_session_open(&rs, m->ex, &st), &st);
  assert_ok(hk_raw_session_run(rs, &args, NULL, NULL, &st), &st);
  assert_true(read_var(m, rs, "w", w, NW * sizeof *w));
  hk_raw_session_free(rs);
}

/* Nonzero when rs was initialized by m's init op (and not restored). */
int initialized_by_init_op(model *m, hk_raw_session *rs) {
  float want[NW], w[NW];
  double b[4];
  initial_w(m, want);
  if (!read_var(m, rs, "w", w, sizeof w) || memcmp(w, want, sizeof w) != 0) return 0;
  if (!read_var(m, rs, "b", b, sizeof b)) return 0;
  for (size_t k = 0; k < 4; k++)
    if (b[k] != 0.25) return 0;
  return gs_of(m, rs) == 0;
}

/* ---- fixture --------------------------------------------------------------------- */

void wait_log(void *user, hk_log_level level, const char *msg) {
  wait_hook *w = user;
  test_log_sink(&w->te->log, level, msg);
  if (strstr(msg, WAIT_LINE) && ++w->count == w->at) {
    if (w->from) assert_int_equal(rename(w->from, w->to), 0);
    if (w->sm) hk_session_manager_cancel(w->sm);
  }
}

hk_saver *saver_new(fx *f, model *m, int64_t max_to_keep, const char *const *names, size_t n) {
  hk_saver_options o = HK_SAVER_OPTIONS_INIT;
  hk_saver *s = NULL;
  o.env = &f->te->env;
  o.executor = m->ex;
  o.max_to_keep = max_to_keep;
  o.var_list = names;
  o.nvar_list = n;
  assert_ok(hk_saver_new(&s, &o, &f->st), &f->st);
  return s;
}

const char *const all_vars[3] = {"w", "b", "global_step"};

int setup(void **state) {
  fx *f = calloc(1, sizeof *f);
  assert_non_null(f);
  f->te = test_env_new();
  model_build(&f->m, f->te, B_F64_4, 1);
  assert_ok(hk_raw_session_open(&f->rs, f->m.ex, &f->st), &f->st);
  ckpt_dir_new("restore", &f->root, &f->dir, &f->save_path);
  f->writer = saver_new(f, &f->m, 5, NULL, 0);
  /* An explicit var_list is resolved at creation, so restoring allocates
   * nothing that outlives the call (the leak checks below rely on it). */
  f->saver = saver_new(f, &f->m, 5, all_vars, 3);
  f->wenv = f->te->env;
  f->wenv.log = wait_log;
  f->wenv.log_user = &f->wh;
  f->wh.te = f->te;
  hk_session_manager_options_init(&f->mo, HK_SESSION_MANAGER_OPTIONS_VERSION);
  f->mo.env = &f->wenv;
  f->mo.executor = f->m.ex;
  f->mo.local_init_op = f->m.local_init;
  f->mo.ready_op = f->m.ready;
  f->mo.recovery_wait_secs = 10;
  f->po = (hk_prepare_options)HK_PREPARE_OPTIONS_INIT;
  f->po.init_op = f->m.init;
  f->po.saver = f->saver;
  f->po.checkpoint_dir = f->dir;
  *state = f;
  return 0;
}

int teardown(void **state) {
  fx *f = *state;
  if (f->s) {
    hk_session_close(f->s, HK_OK, NULL);
    hk_session_free(f->s);
  }
  for (size_t i = 0; i < 2; i++) hk_hook_free(f->hooks[i]);
  spy_hook_free(f->spy);
  hk_scaffold_free(f->scaffold);
  hk_raw_session_free(f->out);
  hk_session_manager_free(f->sm);
  hk_saver_free(f->saver);
  hk_saver_free(f->writer);
  hk_saver_free(f->writer2);
  hk_raw_session_free(f->rs);
  hk_raw_session_free(f->rs2);
  hk_graph_free(f->m.g);
  hk_graph_free(f->m2.g);
  ckpt_dir_free(f->root, f->dir, f->save_path);
  assert_int_equal(test_env_release(f->te), 0);
  free(f);
  return 0;
}

void make_sm(fx *f) { assert_ok(hk_session_manager_new(&f->sm, &f->mo, &f->st), &f->st); }

/* Write checkpoint model.ckpt-<step> holding the values of seed `step`. */
void save_with(fx *f, hk_saver *s, model *m, hk_raw_session *rs, int step) {
  set_values(m, rs, step);
  assert_ok(hk_saver_save(NULL, s, rs, f->save_path, step, HK_SAVE_DEFAULT, &f->st), &f->st);
}
void save(fx *f, int step) { save_with(f, f->writer, &f->m, f->rs, step); }

/* "<dir>/model.ckpt-<step>" (malloc) */
char *prefix_of(fx *f, int step) {
  char name[64];
  snprintf(name, sizeof name, "model.ckpt-%d", step);
  return test_path(f->dir, name);
}

char *data_of(fx *f, int step) {
  char name[64];
  snprintf(name, sizeof name, "model.ckpt-%d.safetensors", step);
  return test_path(f->dir, name);
}

/* Flip the last byte of a checkpoint's data file: it lies in the data of its
 * last tensor (the format allows no trailing bytes), so the header still
 * validates and only the CRC of that tensor fails, while it is read. */
void corrupt(fx *f, int step) {
  char *path = data_of(f, step);
  size_t n = 0;
  char *data = test_read_file(path, &n);
  assert_non_null(data);
  assert_true(n > 0);
  data[n - 1] ^= 0x5a;
  assert_int_equal(test_write_file(path, data, n), 0);
  free(data);
  free(path);
}

void remove_data(fx *f, int step) {
  char *path = data_of(f, step);
  assert_int_equal(unlink(path), 0);
  free(path);
}

int ckpt_exists(fx *f, int step) {
  char *path = data_of(f, step);
  int yes = test_path_exists(path);
  free(path);
  return yes;
}

/* The Saver's managed list is exactly the given steps, oldest first. */
void assert_managed(fx *f, hk_saver *s, const int *steps, size_t n) {
  size_t got = 99;
  const char *const *list = hk_saver_checkpoints(s, &got);
  assert_int_equal(got, n);
  for (size_t i = 0; i < n; i++) {
    char *p = prefix_of(f, steps[i]);
    assert_string_equal(list[i], p);
    free(p);
  }
}

/* The state file of dir lists exactly the given steps, oldest first. */
void assert_state_lists(fx *f, const int *steps, size_t n) {
  hk_checkpoint_state *cs = NULL;
  assert_ok(hk_checkpoint_state_get(&cs, &f->te->env, f->dir, NULL, &f->st), &f->st);
  assert_int_equal(hk_checkpoint_state_count(cs), n);
  for (size_t i = 0; i < n; i++) {
    char *p = prefix_of(f, steps[i]);
    assert_string_equal(hk_checkpoint_state_path(cs, i), p);
    free(p);
  }
  hk_checkpoint_state_free(cs);
}

hk_code prepare(fx *f) { return hk_session_manager_prepare_session(&f->out, f->sm, &f->po, &f->st); }

void drop_out(fx *f) {
  hk_raw_session_free(f->out);
  f->out = NULL;
}

int skipped_logged(fx *f) { return test_log_count(&f->te->log, HK_LOG_WARNING, "; trying an older one."); }

/* Session options over the model, checkpoint_dir the fixture's, the
 * first nhooks of its hooks. */
void session_options(fx *f, hk_session_options *o, hk_session_kind kind, size_t nhooks) {
  hk_session_options_init(o, HK_SESSION_OPTIONS_VERSION);
  o->env = &f->te->env;
  o->kind = kind;
  o->executor = f->m.ex;
  o->hooks = f->hooks;
  o->nhooks = nhooks;
  o->checkpoint_dir = f->dir;
}
