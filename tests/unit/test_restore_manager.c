/*
 * test_restore — restoring a model from checkpoints through the session
 * manager and sessions: C66–C68, C74, H24 (the C68 wait), D5.3/D5.4
 * (fallback past missing or corrupt checkpoints, none for an explicit one or
 * a model mismatch), H27, C122/C123/D6.1 (the managed list recovered, never
 * adopted from a scan), C99 (the Scaffold's Saver), D13 (num_steps counts
 * from the restored step), H30/H10 (restoring in place through the
 * executor's variable storage, never asked of a version-1 vtable), and an
 * end-to-end train / save / resume.
 *
 * Checkpoints are written by a "writer" raw session whose variables hold
 * values derived from a seed (the step), so a restored session shows which
 * checkpoint it came from; the initializers give other values, so a session
 * that was initialized instead of restored is told apart.
 */
#include <stdarg.h>
#include <errno.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <hooked/hooked.h>
#include <hooked/checkpoint.h>
#include <hooked/graph.h>
#include <hooked/hooks.h>

#include "test_env.h"
#include "tmpdir.h"
#include "ckpt_fixture.h"
#include "spy_hook.h"
#include "faulty_fs.h"
#include "fake_executor.h"

#define WAIT_LINE "Waiting for checkpoint to be available."
#define NW 6 /* elements of w */

/* ---- the model ------------------------------------------------------------------- */

/* Variants of "b", for H27's mismatches, optional variables and tensors
 * no variable asks for: a shape, or no "b" at all, OR'ed with flags. */
enum { B_F64_4, B_F64_5, B_F32_4, B_NONE, B_SHAPE = 0x0f, B_OPTIONAL = 0x10, B_EXTERNAL = 0x20 };
#define B_EXTERNAL_VALUE 7.5 /* what an external "b" holds before any restore */

typedef struct model {
  hk_graph *g;
  hk_executor *ex;
  hk_handle w, b, gs, loc;
  hk_handle init, local_init, ready, train;
  double b_ext[5]; /* B_EXTERNAL (F64 only): the host's storage of "b" */
} model;

static void model_build(model *m, test_env *te, int b_variant, uint64_t seed) {
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
  assert_ok(hk_graph_op_output(m->g, rep, 0, &m->ready, &st), &st);

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

static size_t var_index(model *m, const char *name) {
  hk_status st = HK_STATUS_INIT;
  size_t idx = 0;
  assert_ok(hk_executor_find_variable(m->ex, name, &idx, &st), &st);
  return idx;
}

/* The seed's values: w[k] = 10 seed + k, b[k] = 100 seed + k + 0.5, GS = seed. */
static float w_of(int seed, size_t k) { return (float)(10 * seed) + (float)k; }
static double b_of(int seed, size_t k) { return 100.0 * seed + (double)k + 0.5; }

static void set_values(model *m, hk_raw_session *rs, int seed) {
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
static int read_var(model *m, hk_raw_session *rs, const char *name, void *out, size_t n) {
  hk_status st = HK_STATUS_INIT;
  hk_tensor t;
  if (hk_raw_session_read_variable(rs, var_index(m, name), &t, &st) != HK_OK) return 0;
  assert_int_equal(t.nbytes, n);
  memcpy(out, t.data, n);
  return 1;
}

static int64_t gs_of(model *m, hk_raw_session *rs) {
  int64_t gs = -1;
  assert_true(read_var(m, rs, "global_step", &gs, sizeof gs));
  return gs;
}

/* Nonzero when w, b and the GS of rs hold the seed's values. */
static int holds(model *m, hk_raw_session *rs, int seed) {
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
static void initial_w(model *m, float *w) {
  hk_status st = HK_STATUS_INIT;
  hk_raw_session *rs = NULL;
  hk_run_args args = {NULL, 0, NULL, 0, &m->init, 1, NULL};
  assert_ok(hk_raw_session_open(&rs, m->ex, &st), &st);
  assert_ok(hk_raw_session_run(rs, &args, NULL, NULL, &st), &st);
  assert_true(read_var(m, rs, "w", w, NW * sizeof *w));
  hk_raw_session_free(rs);
}

/* Nonzero when rs was initialized by m's init op (and not restored). */
static int initialized_by_init_op(model *m, hk_raw_session *rs) {
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

/* A log sink in front of the capture: at the `at`-th C68 wait line it
 * renames `from` to `to` (a state file appearing) or cancels `sm`. */
typedef struct wait_hook {
  test_env *te;
  int count, at;
  const char *from, *to;
  hk_session_manager *sm;
} wait_hook;

static void wait_log(void *user, hk_log_level level, const char *msg) {
  wait_hook *w = user;
  test_log_sink(&w->te->log, level, msg);
  if (strstr(msg, WAIT_LINE) && ++w->count == w->at) {
    if (w->from) assert_int_equal(rename(w->from, w->to), 0);
    if (w->sm) hk_session_manager_cancel(w->sm);
  }
}

typedef struct fx {
  test_env *te;
  model m, m2;
  hk_raw_session *rs, *rs2; /* writers of m and m2 */
  char *root, *dir, *save_path;
  hk_saver *writer, *writer2, *saver;
  hk_env wenv; /* te->env with wait_log */
  wait_hook wh;
  hk_session_manager_options mo;
  hk_session_manager *sm;
  hk_prepare_options po;
  hk_raw_session *out;
  /* sessions */
  hk_scaffold *scaffold;
  hk_session *s;
  hk_hook *hooks[2];
  spy_hook *spy;
  hk_status st;
} fx;

static hk_saver *saver_new(fx *f, model *m, int64_t max_to_keep, const char *const *names, size_t n) {
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

static const char *const all_vars[3] = {"w", "b", "global_step"};

static int setup(void **state) {
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

static int teardown(void **state) {
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

static void make_sm(fx *f) { assert_ok(hk_session_manager_new(&f->sm, &f->mo, &f->st), &f->st); }

/* Write checkpoint model.ckpt-<step> holding the values of seed `step`. */
static void save_with(fx *f, hk_saver *s, model *m, hk_raw_session *rs, int step) {
  set_values(m, rs, step);
  assert_ok(hk_saver_save(s, rs, f->save_path, step, HK_SAVE_DEFAULT, NULL, &f->st), &f->st);
}
static void save(fx *f, int step) { save_with(f, f->writer, &f->m, f->rs, step); }

/* "<dir>/model.ckpt-<step>" (malloc) */
static char *prefix_of(fx *f, int step) {
  char name[64];
  snprintf(name, sizeof name, "model.ckpt-%d", step);
  return test_path(f->dir, name);
}

static char *data_of(fx *f, int step) {
  char name[64];
  snprintf(name, sizeof name, "model.ckpt-%d.safetensors", step);
  return test_path(f->dir, name);
}

/* Flip the last byte of a checkpoint's data file: it lies in the data of its
 * last tensor (the format allows no trailing bytes), so the header still
 * validates and only the CRC of that tensor fails, while it is read. */
static void corrupt(fx *f, int step) {
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

static void remove_data(fx *f, int step) {
  char *path = data_of(f, step);
  assert_int_equal(unlink(path), 0);
  free(path);
}

static int ckpt_exists(fx *f, int step) {
  char *path = data_of(f, step);
  int yes = test_path_exists(path);
  free(path);
  return yes;
}

/* The Saver's managed list is exactly the given steps, oldest first. */
static void assert_managed(fx *f, hk_saver *s, const int *steps, size_t n) {
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
static void assert_state_lists(fx *f, const int *steps, size_t n) {
  hk_checkpoint_state *cs = NULL;
  assert_ok(hk_get_checkpoint_state(&f->te->env, f->dir, NULL, &cs, &f->st), &f->st);
  assert_int_equal(hk_checkpoint_state_count(cs), n);
  for (size_t i = 0; i < n; i++) {
    char *p = prefix_of(f, steps[i]);
    assert_string_equal(hk_checkpoint_state_path(cs, i), p);
    free(p);
  }
  hk_checkpoint_state_free(cs);
}

static hk_code prepare(fx *f) { return hk_session_manager_prepare_session(f->sm, &f->out, &f->po, &f->st); }

static void drop_out(fx *f) {
  hk_raw_session_free(f->out);
  f->out = NULL;
}

static int skipped_logged(fx *f) { return test_log_count(&f->te->log, HK_LOG_WARNING, "; trying an older one."); }

/* ---- C67: an explicit checkpoint ------------------------------------------------------ */

/* C66/C67: the explicit checkpoint is restored, even when it is not the
 * newest, and init_op does not run (it would overwrite w with its uniform
 * values and the GS with 0); local init still runs (C66 step 3). */
static void test_restore__c67_explicit_path_restores_without_init_op(void **state) {
  fx *f = *state;
  char *p3;
  int64_t loc = -1;
  save(f, 3);
  save(f, 7);
  p3 = prefix_of(f, 3);
  make_sm(f);
  f->po.checkpoint_dir = NULL;
  f->po.checkpoint_filename_with_path = p3;
  assert_ok(prepare(f), &f->st);
  assert_non_null(f->out);
  assert_true(holds(&f->m, f->out, 3));
  assert_int_equal(gs_of(&f->m, f->out), 3);
  assert_true(read_var(&f->m, f->out, "loc", &loc, sizeof loc));
  assert_int_equal(loc, 0);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "Restoring parameters from"), 1);
  assert_logged(f->te, HK_LOG_INFO, p3);
  /* C67 adopts no list for an explicit checkpoint */
  assert_managed(f, f->saver, NULL, 0);
  free(p3);
}

/* C67, C125: a missing explicit checkpoint is NOT_FOUND; no session is
 * handed out and the one opened for it is freed (repeating the call leaves
 * no block behind). */
static void test_restore__c67_missing_path_not_found_no_session(void **state) {
  fx *f = *state;
  char *p = prefix_of(f, 99);
  int initialized = 7;
  long live;
  save(f, 1);
  make_sm(f);
  f->po.checkpoint_dir = NULL;
  f->po.checkpoint_filename_with_path = p;
  assert_status(prepare(f), &f->st, HK_NOT_FOUND, "The passed save_path is not a valid checkpoint");
  assert_non_null(strstr(f->st.message, p));
  assert_null(f->out);
  live = test_alloc_live(&f->te->alloc);
  assert_status(prepare(f), &f->st, HK_NOT_FOUND, "The passed save_path is not a valid checkpoint");
  assert_null(f->out);
  assert_int_equal(test_alloc_live(&f->te->alloc), live);
  assert_status(hk_session_manager_recover_session(f->sm, &f->out, &initialized, &f->po, &f->st), &f->st, HK_NOT_FOUND,
                "The passed save_path is not a valid checkpoint");
  assert_null(f->out);
  assert_int_equal(initialized, 0);
  assert_int_equal(test_alloc_live(&f->te->alloc), live);
  /* no fallback to model.ckpt-1 and no init instead */
  assert_int_equal(skipped_logged(f), 0);
  free(p);
}

/* D5.4: a corrupt explicit checkpoint is DATA_LOSS naming its file, with no
 * fallback even though an older good one exists. */
static void test_restore__d5_4_corrupt_explicit_path_no_fallback(void **state) {
  fx *f = *state;
  char *p2 = prefix_of(f, 2);
  long live;
  save(f, 1);
  save(f, 2);
  corrupt(f, 2);
  make_sm(f);
  f->po.checkpoint_dir = NULL;
  f->po.checkpoint_filename_with_path = p2;
  live = test_alloc_live(&f->te->alloc);
  assert_status(prepare(f), &f->st, HK_DATA_LOSS, "model.ckpt-2");
  assert_null(f->out);
  assert_int_equal(test_alloc_live(&f->te->alloc), live);
  assert_int_equal(skipped_logged(f), 0);
  assert_int_equal(test_log_count(&f->te->log, -1, "model.ckpt-1"), 0);
  free(p2);
}

/* C67: both paths are INVALID_ARGUMENT before any raw session opens (opening
 * one allocates; nothing is allocated) and before anything is read. */
static void test_restore__c67_both_paths_before_raw_session(void **state) {
  fx *f = *state;
  char *p = prefix_of(f, 1);
  int initialized = 7;
  save(f, 1);
  make_sm(f);
  f->po.checkpoint_filename_with_path = p;
  test_log_clear(&f->te->log);
  test_alloc_reset_counts(&f->te->alloc);
  assert_status(prepare(f), &f->st, HK_INVALID_ARGUMENT,
                "Can not provide both checkpoint_dir and checkpoint_filename_with_path.");
  assert_null(f->out);
  assert_status(hk_session_manager_recover_session(f->sm, &f->out, &initialized, &f->po, &f->st), &f->st,
                HK_INVALID_ARGUMENT, "Can not provide both checkpoint_dir and checkpoint_filename_with_path.");
  assert_null(f->out);
  assert_int_equal(test_alloc_count(&f->te->alloc), 0);
  assert_int_equal(test_log_count(&f->te->log, -1, "Restoring"), 0);
  free(p);
}

/* C67: without a saver nothing is restored, from a directory or an explicit
 * path; the model is initialized. A version-1 options struct has no saver
 * field, so one left in memory after it is not read. */
static void test_restore__c67_no_saver_restores_nothing(void **state) {
  fx *f = *state;
  char *p = prefix_of(f, 4);
  save(f, 4);
  make_sm(f);
  f->po.saver = NULL;
  assert_ok(prepare(f), &f->st);
  assert_true(initialized_by_init_op(&f->m, f->out));
  drop_out(f);
  f->po.checkpoint_dir = NULL;
  f->po.checkpoint_filename_with_path = p;
  assert_ok(prepare(f), &f->st);
  assert_true(initialized_by_init_op(&f->m, f->out));
  drop_out(f);
  f->po.saver = f->saver;
  f->po.version = 1;
  assert_ok(prepare(f), &f->st);
  assert_true(initialized_by_init_op(&f->m, f->out));
  assert_int_equal(test_log_count(&f->te->log, -1, "Restoring parameters"), 0);
  free(p);
}

/* ---- C68: checkpoint_dir and the wait ---------------------------------------------- */

/* C68, D5.2: a directory with neither a state file nor a checkpoint data
 * file restores nothing: init_op runs, and nothing is warned about (other
 * files do not count). */
static void test_restore__c68_no_state_file_initializes(void **state) {
  fx *f = *state;
  int initialized = 7;
  char *notes = test_path(f->dir, "notes-1.txt");
  assert_int_equal(test_write_file(notes, "x", 1), 0);
  make_sm(f);
  assert_ok(prepare(f), &f->st);
  assert_true(initialized_by_init_op(&f->m, f->out));
  drop_out(f);
  assert_ok(hk_session_manager_recover_session(f->sm, &f->out, &initialized, &f->po, &f->st), &f->st);
  assert_int_equal(initialized, 0);
  assert_int_equal(test_log_count(&f->te->log, -1, "Restoring parameters"), 0);
  assert_int_equal(test_log_count(&f->te->log, -1, WAIT_LINE), 0);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, ""), 0);
  free(notes);
}

/* D5.2, C68, C123: checkpoints without a state file (deleted by hand) are
 * restored from a directory scan — the newest that verifies — after a
 * WARNING naming the directory and saying the state file is missing; never
 * a silent fresh start. A corrupt newest one is skipped with D5.1's warning.
 * The restore adopts nothing (C123); the next managed save adopts what the
 * scan found (H60), so with max_to_keep 1 retention deletes it and the state
 * file lists only the new checkpoint: nothing is left outside retention. */
static void test_restore__d5_2_no_state_file_restores_from_scan(void **state) {
  fx *f = *state;
  char *sf = test_path(f->dir, "checkpoint"), *p3 = prefix_of(f, 3), line[1200];
  static const int only4[1] = {4};
  int initialized = 0;
  save(f, 2);
  save(f, 3);
  assert_int_equal(unlink(sf), 0);
  hk_saver_free(f->saver);
  f->saver = saver_new(f, &f->m, 1, all_vars, 3);
  f->po.saver = f->saver;
  make_sm(f);
  assert_ok(prepare(f), &f->st);
  assert_true(holds(&f->m, f->out, 3));
  snprintf(line, sizeof line, "The checkpoint state file %s is missing; scanning %s for checkpoints", sf, f->dir);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, line), 1);
  assert_managed(f, f->saver, NULL, 0);
  assert_false(test_path_exists(sf));
  drop_out(f);
  /* the newest is corrupt: the older one, with D5.1's warning */
  corrupt(f, 3);
  assert_ok(hk_session_manager_recover_session(f->sm, &f->out, &initialized, &f->po, &f->st), &f->st);
  assert_int_equal(initialized, 1);
  assert_true(holds(&f->m, f->out, 2));
  snprintf(line, sizeof line, "Checkpoint %s is missing or corrupt (", p3);
  assert_logged(f->te, HK_LOG_WARNING, line);
  assert_managed(f, f->saver, NULL, 0);
  /* max_to_keep 1: the scanned checkpoints are adopted, then rotated out */
  test_log_clear(&f->te->log);
  save_with(f, f->saver, &f->m, f->out, 4);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "Adopting checkpoint"), 2);
  assert_false(ckpt_exists(f, 2));
  assert_false(ckpt_exists(f, 3));
  assert_state_lists(f, only4, 1);
  free(sf);
  free(p3);
}

/* C68: with wait_for_checkpoint, the manager logs and sleeps
 * recovery_wait_secs per try while the time waited is < max_wait_secs
 * (0, 10, 20, 30 < 35: four sleeps), then initializes. */
static void test_restore__c68_wait_times_out_then_initializes(void **state) {
  fx *f = *state;
  make_sm(f);
  f->po.wait_for_checkpoint = 1;
  f->po.max_wait_secs = 35;
  assert_ok(prepare(f), &f->st);
  assert_true(initialized_by_init_op(&f->m, f->out));
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, WAIT_LINE), 4);
  assert_int_equal(test_clock_nsleeps(&f->te->clock), 4);
  for (int i = 0; i < 4; i++) assert_true(f->te->clock.sleeps[i] == 10.0);
  drop_out(f);
  /* max_wait_secs 0: no wait at all */
  test_clock_reset_sleeps(&f->te->clock);
  test_log_clear(&f->te->log);
  f->po.max_wait_secs = 0;
  assert_ok(prepare(f), &f->st);
  assert_int_equal(test_clock_nsleeps(&f->te->clock), 0);
  assert_int_equal(test_log_count(&f->te->log, -1, WAIT_LINE), 0);
}

/* C68: a state file appearing during the wait (after the third wait line's
 * sleep, with its checkpoint: the whole directory appears) is restored; the
 * wait ends there. */
static void test_restore__c68_state_file_appears_during_wait(void **state) {
  fx *f = *state;
  char *hidden = test_path(f->root, "ck.hidden");
  save(f, 6);
  assert_int_equal(rename(f->dir, hidden), 0);
  f->wh.at = 3;
  f->wh.from = hidden;
  f->wh.to = f->dir;
  make_sm(f);
  f->po.wait_for_checkpoint = 1;
  assert_ok(prepare(f), &f->st);
  assert_true(holds(&f->m, f->out, 6));
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, WAIT_LINE), 3);
  assert_int_equal(test_clock_nsleeps(&f->te->clock), 3);
  free(hidden);
}

/* C68, D5.2: the wait is for a state file OR a checkpoint data file: a data
 * file appearing without a state file ends it, and is restored from the
 * scan (with the D5.2 warning); a data file present from the start means no
 * wait at all. */
static void test_restore__c68_data_file_ends_wait(void **state) {
  fx *f = *state;
  char *sf = test_path(f->dir, "checkpoint");
  char *data = data_of(f, 6);
  char *hidden = test_path(f->root, "model.ckpt-6.hidden");
  save(f, 6);
  assert_int_equal(unlink(sf), 0);
  assert_int_equal(rename(data, hidden), 0);
  f->wh.at = 2;
  f->wh.from = hidden;
  f->wh.to = data;
  make_sm(f);
  f->po.wait_for_checkpoint = 1;
  assert_ok(prepare(f), &f->st);
  assert_true(holds(&f->m, f->out, 6));
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, WAIT_LINE), 2);
  assert_int_equal(test_clock_nsleeps(&f->te->clock), 2);
  assert_logged(f->te, HK_LOG_WARNING, "checkpoint is missing; scanning");
  drop_out(f);
  test_clock_reset_sleeps(&f->te->clock);
  assert_ok(prepare(f), &f->st);
  assert_true(holds(&f->m, f->out, 6));
  assert_int_equal(test_clock_nsleeps(&f->te->clock), 0);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, WAIT_LINE), 2);
  free(sf);
  free(data);
  free(hidden);
}

/* H24: a cancel during the C68 wait ends it with CANCELLED within one
 * recovery_wait_secs, before any raw session exists; after
 * reset_cancel the manager prepares again. */
static void test_restore__h24_cancel_during_wait(void **state) {
  fx *f = *state;
  make_sm(f);
  f->wh.at = 2;
  f->wh.sm = f->sm;
  f->po.wait_for_checkpoint = 1;
  /* finite, so an ignored cancel fails the test instead of hanging it */
  f->po.max_wait_secs = 1000;
  save(f, 1); /* present but never reached: its directory is hidden */
  {
    char *hidden = test_path(f->root, "ck.hidden");
    assert_int_equal(rename(f->dir, hidden), 0);
    free(hidden);
  }
  assert_status(prepare(f), &f->st, HK_CANCELLED, "wait cancelled: stop requested");
  assert_null(f->out);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, WAIT_LINE), 2);
  assert_int_equal(test_clock_nsleeps(&f->te->clock), 1);
  assert_int_equal(test_log_count(&f->te->log, -1, "Restoring"), 0);
  hk_session_manager_reset_cancel(f->sm);
  f->po.wait_for_checkpoint = 0;
  assert_ok(prepare(f), &f->st);
  assert_true(initialized_by_init_op(&f->m, f->out));
}

/* ---- D5.3: fallback past missing or corrupt checkpoints ---------------------------------- */

/* D5.3: a corrupt newest checkpoint (found while reading its tensors) is
 * skipped with D5.1's warning naming it, and the older one is restored. */
static void test_restore__d5_3_newest_corrupt_falls_back(void **state) {
  fx *f = *state;
  char *p2 = prefix_of(f, 2), *p3 = prefix_of(f, 3), line[1200];
  int initialized = 0;
  save(f, 1);
  save(f, 2);
  save(f, 3);
  corrupt(f, 3);
  make_sm(f);
  assert_ok(prepare(f), &f->st);
  assert_true(holds(&f->m, f->out, 2));
  snprintf(line, sizeof line, "Checkpoint %s is missing or corrupt (", p3);
  assert_logged(f->te, HK_LOG_WARNING, line);
  assert_int_equal(skipped_logged(f), 1);
  drop_out(f);
  /* C74 reports the checkpoint actually restored */
  assert_ok(hk_session_manager_recover_session(f->sm, &f->out, &initialized, &f->po, &f->st), &f->st);
  assert_int_equal(initialized, 1);
  assert_true(holds(&f->m, f->out, 2));
  snprintf(line, sizeof line, "Restored model from %s", p2);
  assert_logged(f->te, HK_LOG_INFO, line);
  free(p2);
  free(p3);
}

/* D5.3: a missing newest checkpoint is skipped; the recovered list drops it
 * (C122: entries without a data file). */
static void test_restore__d5_3_newest_missing_falls_back(void **state) {
  fx *f = *state;
  char *p3 = prefix_of(f, 3), line[1200];
  static const int kept[2] = {1, 2};
  save(f, 1);
  save(f, 2);
  save(f, 3);
  remove_data(f, 3);
  make_sm(f);
  assert_ok(prepare(f), &f->st);
  assert_true(holds(&f->m, f->out, 2));
  snprintf(line, sizeof line, "Checkpoint %s is missing or corrupt (", p3);
  assert_logged(f->te, HK_LOG_WARNING, line);
  assert_managed(f, f->saver, kept, 2);
  free(p3);
}

/* D5.3: when every candidate fails → DATA_LOSS naming the directory and
 * each candidate in it, newest first, with its reason; no session is
 * handed out, none stays allocated, nothing is initialized. */
static void test_restore__d5_3_all_corrupt_data_loss_no_session(void **state) {
  fx *f = *state;
  char *p1 = prefix_of(f, 1), *p2 = prefix_of(f, 2), want[1200];
  int initialized = 7;
  long live;
  save(f, 1);
  save(f, 2);
  corrupt(f, 1);
  corrupt(f, 2);
  make_sm(f);
  snprintf(want, sizeof want, "No checkpoint in %.*s could be restored: model.ckpt-2 (corrupt: tensor ",
           (int)(strlen(p1) - strlen("/model.ckpt-1")), p1);
  assert_status(prepare(f), &f->st, HK_DATA_LOSS, want);
  assert_non_null(strstr(f->st.message, "; model.ckpt-1 (corrupt: tensor "));
  assert_null(f->out);
  live = test_alloc_live(&f->te->alloc);
  assert_status(hk_session_manager_recover_session(f->sm, &f->out, &initialized, &f->po, &f->st), &f->st, HK_DATA_LOSS,
                want);
  assert_null(f->out);
  assert_int_equal(initialized, 0);
  assert_int_equal(test_alloc_live(&f->te->alloc), live);
  /* the list of a directory nothing could be restored from is not adopted */
  assert_managed(f, f->saver, NULL, 0);
  free(p1);
  free(p2);
}

/* C123, D5.2, H60: a malformed state file → the directory scan restores the
 * newest checkpoint that verifies; the restore adopts nothing, and the
 * Saver's next save adopts every checkpoint of its form (the corrupt one
 * too) and, with max_to_keep 1, deletes them, writing a state file that
 * lists only its own. */
static void test_restore__c123_malformed_state_file_scans_then_the_next_save_adopts(void **state) {
  fx *f = *state;
  char *sf = test_path(f->dir, "checkpoint");
  static const char garbage[] = "model_checkpoint_path: \"model.ckpt-3\n\x01\x02 not a state file {\n";
  static const int only4[1] = {4};
  save(f, 1);
  save(f, 2);
  save(f, 3);
  corrupt(f, 3);
  assert_int_equal(test_write_file(sf, garbage, sizeof garbage - 1), 0);
  hk_saver_free(f->saver);
  f->saver = saver_new(f, &f->m, 1, all_vars, 3);
  f->po.saver = f->saver;
  make_sm(f);
  assert_ok(prepare(f), &f->st);
  assert_true(holds(&f->m, f->out, 2));
  assert_logged(f->te, HK_LOG_WARNING, "Ignoring the checkpoint state file");
  assert_managed(f, f->saver, NULL, 0);
  save_with(f, f->saver, &f->m, f->out, 4);
  assert_false(ckpt_exists(f, 1));
  assert_false(ckpt_exists(f, 2));
  assert_false(ckpt_exists(f, 3));
  assert_true(ckpt_exists(f, 4));
  assert_state_lists(f, only4, 1);
  free(sf);
}

/* H27, D5.3: the newest checkpoint lacks a variable → NOT_FOUND "Key %s not
 * found in checkpoint %s" at once, although the older one would restore. */
static void test_restore__h27_missing_variable_no_fallback(void **state) {
  fx *f = *state;
  static const char *const no_b[2] = {"w", "global_step"};
  char *p2 = prefix_of(f, 2), want[1200];
  save(f, 1);
  f->writer2 = saver_new(f, &f->m, 5, no_b, 2);
  save_with(f, f->writer2, &f->m, f->rs, 2);
  make_sm(f);
  snprintf(want, sizeof want, "Key b not found in checkpoint %s", p2);
  assert_status(prepare(f), &f->st, HK_NOT_FOUND, want);
  assert_null(f->out);
  assert_int_equal(skipped_logged(f), 0);
  /* the older checkpoint is compatible: an explicit restore of it works */
  {
    char *p1 = prefix_of(f, 1);
    f->po.checkpoint_dir = NULL;
    f->po.checkpoint_filename_with_path = p1;
    assert_ok(prepare(f), &f->st);
    assert_true(holds(&f->m, f->out, 1));
    free(p1);
  }
  free(p2);
}

/* Write model.ckpt-2 from a model whose "b" differs (variant), after a
 * compatible model.ckpt-1, then check prepare fails at once with
 * INVALID_ARGUMENT naming b, both specs and the file. */
static void mismatch_case(fx *f, int variant, const char *mine, const char *theirs) {
  char *p2 = prefix_of(f, 2);
  save(f, 1);
  model_build(&f->m2, f->te, variant, 1);
  assert_ok(hk_raw_session_open(&f->rs2, f->m2.ex, &f->st), &f->st);
  {
    hk_run_args args = {NULL, 0, NULL, 0, &f->m2.init, 1, NULL};
    int64_t gs = 2;
    hk_tensor t;
    assert_ok(hk_raw_session_run(f->rs2, &args, NULL, NULL, &f->st), &f->st);
    assert_ok(hk_tensor_init(&t, HK_DTYPE_I64, 0, NULL, &gs, &f->st), &f->st);
    assert_ok(hk_raw_session_assign_variable(f->rs2, var_index(&f->m2, "global_step"), &t, &f->st), &f->st);
  }
  f->writer2 = saver_new(f, &f->m2, 5, NULL, 0);
  assert_ok(hk_saver_save(f->writer2, f->rs2, f->save_path, 2, HK_SAVE_DEFAULT, NULL, &f->st), &f->st);
  make_sm(f);
  assert_status(prepare(f), &f->st, HK_INVALID_ARGUMENT, "b");
  assert_non_null(strstr(f->st.message, mine));
  assert_non_null(strstr(f->st.message, theirs));
  assert_non_null(strstr(f->st.message, p2));
  assert_null(f->out);
  assert_int_equal(skipped_logged(f), 0);
  free(p2);
}

static void test_restore__h27_shape_mismatch_no_fallback(void **state) { mismatch_case(*state, B_F64_5, "[4]", "[5]"); }

static void test_restore__h27_dtype_mismatch_no_fallback(void **state) {
  mismatch_case(*state, B_F32_4, hk_dtype_name(HK_DTYPE_F64), hk_dtype_name(HK_DTYPE_F32));
}

static void session_options(fx *f, hk_session_options *o, hk_session_kind kind, size_t nhooks);

/* f->m2 built with `variant` (seed 1) and an initialized raw session of it
 * in f->rs2; f->saver becomes a Saver of f->m2 over every global variable
 * (names NULL) or the given ones. */
static void m2_open(fx *f, int variant, const char *const *names, size_t n) {
  hk_run_args args = {NULL, 0, NULL, 0, NULL, 1, NULL};
  model_build(&f->m2, f->te, variant, 1);
  assert_ok(hk_raw_session_open(&f->rs2, f->m2.ex, &f->st), &f->st);
  args.targets = &f->m2.init;
  assert_ok(hk_raw_session_run(f->rs2, &args, NULL, NULL, &f->st), &f->st);
  hk_saver_free(f->saver);
  f->saver = saver_new(f, &f->m2, 5, names, n);
}

/* Nonzero when w and the GS of m2's raw session hold the seed's values. */
static int m2_holds_w_gs(fx *f, int seed) {
  float w[NW];
  if (!read_var(&f->m2, f->rs2, "w", w, sizeof w)) return 0;
  for (size_t k = 0; k < NW; k++)
    if (w[k] != w_of(seed, k)) return 0;
  return gs_of(&f->m2, f->rs2) == seed;
}

/* H27: a variable flagged HK_VAR_OPTIONAL that the checkpoint lacks does not
 * fail the restore: the other variables are restored, it keeps its value,
 * and a WARNING names it and the checkpoint. Without the flag the same
 * checkpoint is NOT_FOUND "Key %s not found in checkpoint %s". */
static void test_restore__h27_optional_variable_missing_keeps_value(void **state) {
  fx *f = *state;
  static const char *const no_b[2] = {"w", "global_step"};
  char *p2 = prefix_of(f, 2), line[1200];
  double b[4];
  f->writer2 = saver_new(f, &f->m, 5, no_b, 2);
  save_with(f, f->writer2, &f->m, f->rs, 2);
  m2_open(f, B_F64_4 | B_OPTIONAL, NULL, 0);
  assert_ok(hk_saver_restore(f->saver, f->rs2, p2, &f->st), &f->st);
  assert_true(m2_holds_w_gs(f, 2));
  assert_true(read_var(&f->m2, f->rs2, "b", b, sizeof b));
  for (size_t k = 0; k < 4; k++) assert_true(b[k] == 0.25); /* what init_op gave it */
  snprintf(line, sizeof line,
           "Variable b is not in checkpoint %s; it is optional (HK_VAR_OPTIONAL), so its current value is kept.", p2);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, line), 1);
  /* the graph describes the flag */
  {
    hk_variable_info info;
    assert_ok(hk_executor_variable_info(f->m2.ex, var_index(&f->m2, "b"), &info, &f->st), &f->st);
    assert_true(info.flags & HK_VAR_OPTIONAL);
  }
  /* f->m's "b" is not optional */
  {
    hk_saver *plain = saver_new(f, &f->m, 5, NULL, 0);
    snprintf(line, sizeof line, "Key b not found in checkpoint %s", p2);
    assert_status(hk_saver_restore(plain, f->rs, p2, &f->st), &f->st, HK_NOT_FOUND, line);
    hk_saver_free(plain);
  }
  free(p2);
}

/* H27: optional or not, a variable whose dtype or shape differs from the
 * checkpoint's is INVALID_ARGUMENT, and nothing is assigned. */
static void test_restore__h27_optional_variable_mismatch_is_error(void **state) {
  fx *f = *state;
  char *p1 = prefix_of(f, 1);
  save(f, 1);
  m2_open(f, B_F32_4 | B_OPTIONAL, NULL, 0);
  assert_status(hk_saver_restore(f->saver, f->rs2, p1, &f->st), &f->st, HK_INVALID_ARGUMENT, "Variable b has dtype");
  assert_non_null(strstr(f->st.message, hk_dtype_name(HK_DTYPE_F32)));
  assert_non_null(strstr(f->st.message, hk_dtype_name(HK_DTYPE_F64)));
  assert_false(m2_holds_w_gs(f, 1));
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, "HK_VAR_OPTIONAL"), 0);
  hk_raw_session_free(f->rs2);
  f->rs2 = NULL;
  hk_graph_free(f->m2.g);
  m2_open(f, B_F64_5 | B_OPTIONAL, NULL, 0);
  assert_status(hk_saver_restore(f->saver, f->rs2, p1, &f->st), &f->st, HK_INVALID_ARGUMENT, "Variable b has shape");
  assert_false(m2_holds_w_gs(f, 1));
  free(p1);
}

/* H27 through a session: a model that added an optional, host-owned "b"
 * resumes from checkpoints written before it existed; "b" keeps the host's
 * values and the session is ready (external storage counts as
 * initialized). */
static void test_restore__h27_session_resumes_without_optional_variable(void **state) {
  fx *f = *state;
  static const char *const no_b[2] = {"w", "global_step"};
  hk_session_options o;
  hk_raw_session *rs;
  f->writer2 = saver_new(f, &f->m, 5, no_b, 2);
  save_with(f, f->writer2, &f->m, f->rs, 3);
  model_build(&f->m2, f->te, B_F64_4 | B_OPTIONAL | B_EXTERNAL, 1);
  session_options(f, &o, HK_SESSION_SINGULAR, 0);
  o.executor = f->m2.ex;
  assert_ok(hk_session_new(&f->s, &o, &f->st), &f->st);
  rs = hk_session_raw_session(f->s);
  assert_int_equal(gs_of(&f->m2, rs), 3);
  for (size_t k = 0; k < 4; k++) assert_true(f->m2.b_ext[k] == B_EXTERNAL_VALUE);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, "Variable b is not in checkpoint"), 1);
}

/* H27: a tensor of the checkpoint that no variable asks for (a variable the
 * program dropped) is named in a WARNING with the checkpoint when the Saver
 * covers every global variable, at DEBUG when its var_list was chosen; the
 * restore succeeds either way. */
static void test_restore__h27_unrestored_tensor_is_named(void **state) {
  fx *f = *state;
  static const char *const w_gs[2] = {"w", "global_step"};
  char *p3 = prefix_of(f, 3), line[1200];
  hk_session_options o;
  save(f, 3);
  snprintf(line, sizeof line, "Checkpoint %s holds b, which this program does not restore.", p3);
  m2_open(f, B_NONE, NULL, 0);
  assert_ok(hk_saver_restore(f->saver, f->rs2, p3, &f->st), &f->st);
  assert_true(m2_holds_w_gs(f, 3));
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, line), 1);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, "which this program does not restore"), 1);
  /* an explicit var_list: DEBUG only */
  hk_saver_free(f->saver);
  f->saver = saver_new(f, &f->m2, 5, w_gs, 2);
  assert_ok(hk_saver_restore(f->saver, f->rs2, p3, &f->st), &f->st);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, line), 1);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_DEBUG, line), 1);
  /* a session's default Saver covers every global variable */
  session_options(f, &o, HK_SESSION_SINGULAR, 0);
  o.executor = f->m2.ex;
  assert_ok(hk_session_new(&f->s, &o, &f->st), &f->st);
  assert_int_equal(gs_of(&f->m2, hk_session_raw_session(f->s)), 3);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, line), 2);
  free(p3);
}

/* ---- C122 / D6.1: the managed list after a restore ------------------------------------------ */

/* C122, D6.1: restoring from checkpoint_dir gives the Saver the state
 * file's list; its next save continues retention (max_to_keep 2: saving 4
 * deletes 2, the oldest listed). */
static void test_restore__c122_recovers_list_and_retention_continues(void **state) {
  fx *f = *state;
  static const int listed[2] = {2, 3}, after[2] = {3, 4};
  hk_saver_free(f->writer);
  f->writer = saver_new(f, &f->m, 2, NULL, 0);
  save(f, 1);
  save(f, 2);
  save(f, 3);
  assert_false(ckpt_exists(f, 1));
  hk_saver_free(f->saver);
  f->saver = saver_new(f, &f->m, 2, all_vars, 3);
  f->po.saver = f->saver;
  make_sm(f);
  assert_ok(prepare(f), &f->st);
  assert_true(holds(&f->m, f->out, 3));
  assert_managed(f, f->saver, listed, 2);
  save_with(f, f->saver, &f->m, f->out, 4);
  assert_false(ckpt_exists(f, 2));
  assert_true(ckpt_exists(f, 3));
  assert_true(ckpt_exists(f, 4));
  assert_managed(f, f->saver, after, 2);
  assert_state_lists(f, after, 2);
}

/* ---- C74: recover_session ------------------------------------------------------------ */

static void test_restore__c74_restored_initialized(void **state) {
  fx *f = *state;
  char *p5 = prefix_of(f, 5), line[1200];
  int initialized = 0;
  int64_t loc = -1;
  save(f, 5);
  make_sm(f);
  assert_ok(hk_session_manager_recover_session(f->sm, &f->out, &initialized, &f->po, &f->st), &f->st);
  assert_int_equal(initialized, 1);
  assert_true(holds(&f->m, f->out, 5));
  assert_true(read_var(&f->m, f->out, "loc", &loc, sizeof loc));
  snprintf(line, sizeof line, "Restored model from %s", p5);
  assert_logged(f->te, HK_LOG_INFO, line);
  free(p5);
}

/* C74: nothing to restore → initialized 0; local init ran, init_op did not. */
static void test_restore__c74_nothing_to_restore(void **state) {
  fx *f = *state;
  int initialized = 1;
  int64_t loc = -1;
  float w[NW];
  make_sm(f);
  assert_ok(hk_session_manager_recover_session(f->sm, &f->out, &initialized, &f->po, &f->st), &f->st);
  assert_non_null(f->out);
  assert_int_equal(initialized, 0);
  assert_true(read_var(&f->m, f->out, "loc", &loc, sizeof loc));
  assert_false(read_var(&f->m, f->out, "w", w, sizeof w));
  assert_int_equal(test_log_count(&f->te->log, -1, "Restored model from"), 0);
}

/* C74: a restore that leaves a variable uninitialized (the Saver's var_list
 * omits b) is not ready: initialized 0 and the reason logged. prepare_session
 * fails the ready check instead (C71), init_op not being run after a
 * restore (C66). */
static void test_restore__c74_restore_not_ready(void **state) {
  fx *f = *state;
  static const char *const no_b[2] = {"w", "global_step"};
  char *p5 = prefix_of(f, 5), line[1200];
  int initialized = 1;
  save(f, 5);
  hk_saver_free(f->saver);
  f->saver = saver_new(f, &f->m, 5, no_b, 2);
  f->po.saver = f->saver;
  make_sm(f);
  assert_ok(hk_session_manager_recover_session(f->sm, &f->out, &initialized, &f->po, &f->st), &f->st);
  assert_non_null(f->out);
  assert_int_equal(initialized, 0);
  assert_int_equal(gs_of(&f->m, f->out), 5);
  snprintf(line, sizeof line, "Restoring model from %s did not make model ready:", p5);
  assert_logged(f->te, HK_LOG_INFO, line);
  assert_logged(f->te, HK_LOG_INFO, "Variables not initialized: b");
  assert_int_equal(test_log_count(&f->te->log, -1, "Restored model from"), 0);
  drop_out(f);
  assert_status(prepare(f), &f->st, HK_FAILED_PRECONDITION, "Init operations did not make model ready.");
  assert_non_null(strstr(f->st.message, "b"));
  assert_null(f->out);
  free(p5);
}

/* C74: after a restore, a ready_for_local_init_op that is not ready (b was
 * not restored) skips local init: initialized 0 and the reason logged. */
static void test_restore__c74_restore_not_ready_for_local_init(void **state) {
  fx *f = *state;
  static const char *const no_b[2] = {"w", "global_step"};
  hk_handle globals[3], rep;
  char *p5 = prefix_of(f, 5), line[1200];
  int initialized = 1;
  int64_t loc;
  globals[0] = f->m.w;
  globals[1] = f->m.b;
  globals[2] = f->m.gs;
  assert_ok(hk_graph_report_uninitialized(f->m.g, &rep, "globals_ready", globals, 3, &f->st), &f->st);
  assert_ok(hk_graph_op_output(f->m.g, rep, 0, &f->mo.ready_for_local_init_op, &f->st), &f->st);
  save(f, 5);
  hk_saver_free(f->saver);
  f->saver = saver_new(f, &f->m, 5, no_b, 2);
  f->po.saver = f->saver;
  make_sm(f);
  assert_ok(hk_session_manager_recover_session(f->sm, &f->out, &initialized, &f->po, &f->st), &f->st);
  assert_non_null(f->out);
  assert_int_equal(initialized, 0);
  assert_false(read_var(&f->m, f->out, "loc", &loc, sizeof loc));
  snprintf(line, sizeof line, "Restoring model from %s did not make model ready for local init:", p5);
  assert_logged(f->te, HK_LOG_INFO, line);
  assert_int_equal(test_log_count(&f->te->log, -1, "Running local_init_op."), 0);
  free(p5);
}

/* C69 does not apply after a restore: with no init_op, init_fn or
 * local_init_op a restored model is ready. */
static void test_restore__c69_restored_needs_no_init(void **state) {
  fx *f = *state;
  save(f, 4);
  f->mo.local_init_op = HK_NO_HANDLE;
  f->mo.ready_op = HK_NO_HANDLE;
  make_sm(f);
  f->po.init_op = HK_NO_HANDLE;
  assert_ok(prepare(f), &f->st);
  assert_true(holds(&f->m, f->out, 4));
  drop_out(f);
  /* a checkpoint_dir that does not exist restores nothing: C69 then applies */
  {
    char *missing = test_path(f->root, "nowhere");
    f->po.checkpoint_dir = missing;
    assert_status(prepare(f), &f->st, HK_FAILED_PRECONDITION,
                  "Model is not initialized and no init_op or init_fn or local_init_op was given");
    assert_null(f->out);
    free(missing);
  }
}

/* D5.3: a newest checkpoint that fails before reading (truncated: its
 * header does not validate) is skipped like one that fails while reading. */
static void test_restore__d5_3_newest_truncated_falls_back(void **state) {
  fx *f = *state;
  char *d3 = data_of(f, 3), line[1200];
  char *p3 = prefix_of(f, 3);
  save(f, 2);
  save(f, 3);
  assert_int_equal(truncate(d3, 12), 0);
  make_sm(f);
  assert_ok(prepare(f), &f->st);
  assert_true(holds(&f->m, f->out, 2));
  snprintf(line, sizeof line, "Checkpoint %s is missing or corrupt (", p3);
  assert_logged(f->te, HK_LOG_WARNING, line);
  free(d3);
  free(p3);
}

/* House style 22a: every allocation of a restoring prepare_session failing
 * in turn gives RESOURCE_EXHAUSTED, no session and no leak, and never a
 * silent fallback to the older checkpoint or an init instead. */
static void test_restore__oom_loop(void **state) {
  fx *f = *state;
  hk_code rc;
  long n;
  save(f, 1);
  save(f, 2);
  make_sm(f);
  /* warm-up: the first restore adopts the list and the graph caches its plans */
  assert_ok(prepare(f), &f->st);
  drop_out(f);
  for (n = 0;; n++) {
    /* a call releases the prefix the previous one restored, and a failed
     * one keeps none */
    long live = test_alloc_live(&f->te->alloc) - (hk_session_manager_restored_checkpoint(f->sm) != NULL);
    test_alloc_fail_at(&f->te->alloc, n, 0);
    rc = prepare(f);
    test_alloc_fail_at(&f->te->alloc, -1, 0);
    if (rc == HK_OK) break;
    assert_status(rc, &f->st, HK_RESOURCE_EXHAUSTED, NULL);
    assert_null(f->out);
    if (test_alloc_live(&f->te->alloc) != live) fprintf(stderr, "leak at n=%ld: %s\n", n, f->st.message);
    assert_int_equal(test_alloc_live(&f->te->alloc), live);
    assert_true(n < 10000);
  }
  assert_true(n > 0);
  assert_true(holds(&f->m, f->out, 2));
  assert_int_equal(skipped_logged(f), 0);
}

/* House style 22c: each file-system call of a restoring prepare_session
 * failing in turn (EIO) leaves no file open and no block allocated; a
 * failure is returned without a session, and a success holds a
 * checkpoint's values, never the initializers'. */
static void test_restore__fs_fault_sweep(void **state) {
  fx *f = *state;
  faulty_fs ff;
  hk_code rc;
  long n, ok = 0;
  save(f, 1);
  save(f, 2);
  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &f->te->env);
  faulty_fs_bind(&ff, &f->wenv);
  hk_saver_free(f->saver);
  f->saver = saver_new(f, &f->m, 5, all_vars, 3);
  f->po.saver = f->saver;
  make_sm(f);
  assert_ok(prepare(f), &f->st); /* warm-up, as in the OOM loop */
  drop_out(f);
  for (n = 0;; n++) {
    long live = test_alloc_live(&f->te->alloc);
    faulty_fs_fail_errno(&ff, FAULTY_FS_ANY, n, EIO, 0);
    rc = prepare(f);
    if (faulty_fs_injected(&ff) == 0) break;
    assert_int_equal(faulty_fs_open_handles(&ff), 0);
    if (rc == HK_OK) {
      size_t k;
      ok++;
      assert_true(holds(&f->m, f->out, 2) || holds(&f->m, f->out, 1));
      drop_out(f);
      /* an unreadable state file at recovery gives an empty list (C123) */
      hk_saver_checkpoints(f->saver, &k);
      assert_true(k == 0 || k == 2);
    } else {
      assert_null(f->out);
      assert_int_equal(test_alloc_live(&f->te->alloc), live);
    }
    assert_true(n < 1000);
  }
  assert_ok(rc, &f->st);
  assert_true(holds(&f->m, f->out, 2));
  assert_true(n > 3);
  faulty_fs_reset(&ff);
  drop_out(f);
  hk_session_manager_free(f->sm);
  f->sm = NULL;
  hk_saver_free(f->saver);
  f->saver = NULL;
  f->te->env.fs = NULL;
  f->te->env.fs_user = NULL;
  faulty_fs_destroy(&ff);
  assert_true(ok > 0);
}

/* ---- sessions ---------------------------------------------------------------------- */

static void session_options(fx *f, hk_session_options *o, hk_session_kind kind, size_t nhooks) {
  hk_session_options_init(o, HK_SESSION_OPTIONS_VERSION);
  o->env = &f->te->env;
  o->kind = kind;
  o->executor = f->m.ex;
  o->hooks = f->hooks;
  o->nhooks = nhooks;
  o->checkpoint_dir = f->dir;
}

static hk_code run_train(hk_session *s, model *m, hk_status *st) {
  hk_run_args args = {NULL, 0, NULL, 0, &m->train, 1, NULL};
  return hk_session_run(s, &args, NULL, NULL, st);
}

static hk_hook *stop_after(int64_t num_steps) {
  hk_stop_at_step_options o = HK_STOP_AT_STEP_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_hook *h = NULL;
  o.num_steps = num_steps;
  assert_ok(hk_stop_at_step_hook_new(&h, &o, &st), &st);
  return h;
}

/* C47, C99: the default Scaffold's default Saver (every global variable)
 * restores the newest checkpoint and adopts the directory's list; D13:
 * StopAtStep's num_steps counts from the restored GS (5 + 3). */
static void test_restore__session_default_scaffold_restores(void **state) {
  fx *f = *state;
  static const int listed[2] = {3, 5};
  hk_session_options o;
  hk_raw_session *rs;
  hk_saver *sv;
  int runs = 0;
  save(f, 3);
  save(f, 5);
  f->hooks[0] = stop_after(3);
  session_options(f, &o, HK_SESSION_SINGULAR, 1);
  assert_ok(hk_session_new(&f->s, &o, &f->st), &f->st);
  rs = hk_session_raw_session(f->s);
  assert_non_null(rs);
  assert_true(holds(&f->m, rs, 5));
  sv = hk_scaffold_saver(hk_session_scaffold(f->s));
  assert_non_null(sv);
  assert_ptr_not_equal(sv, f->saver);
  assert_managed(f, sv, listed, 2);
  while (!hk_session_should_stop(f->s)) {
    assert_ok(run_train(f->s, &f->m, &f->st), &f->st);
    assert_true(++runs <= 10);
  }
  assert_int_equal(runs, 3);
  assert_int_equal(gs_of(&f->m, rs), 8);
}

/* C99: an explicit Scaffold's given Saver is the one used: it restores and
 * recovers the directory's list; no default Saver is built. */
static void test_restore__session_explicit_scaffold_saver_used(void **state) {
  fx *f = *state;
  static const int listed[2] = {1, 2};
  hk_scaffold_options so = HK_SCAFFOLD_OPTIONS_INIT;
  hk_session_options o;
  save(f, 1);
  save(f, 2);
  so.env = &f->te->env;
  so.saver = f->saver;
  assert_ok(hk_scaffold_new(&f->scaffold, &so, &f->st), &f->st);
  session_options(f, &o, HK_SESSION_SINGULAR, 0);
  o.scaffold = f->scaffold;
  assert_managed(f, f->saver, NULL, 0);
  assert_ok(hk_session_new(&f->s, &o, &f->st), &f->st);
  assert_true(holds(&f->m, hk_session_raw_session(f->s), 2));
  assert_ptr_equal(hk_scaffold_saver(f->scaffold), f->saver);
  assert_managed(f, f->saver, listed, 2);
}

/* D5.3 through a session: a restore that fails fails hk_session_new with
 * DATA_LOSS; begin ran, after_create_session never did. */
static void test_restore__session_restore_failure_no_after_create(void **state) {
  fx *f = *state;
  hk_session_options o;
  save(f, 1);
  save(f, 2);
  corrupt(f, 1);
  corrupt(f, 2);
  f->spy = spy_hook_new("spy", NULL, NULL);
  assert_non_null(f->spy);
  f->hooks[0] = f->spy->hook;
  session_options(f, &o, HK_SESSION_MONITORED, 1);
  assert_status(hk_session_new(&f->s, &o, &f->st), &f->st, HK_DATA_LOSS, "model.ckpt-2");
  assert_null(f->s);
  f->hooks[0] = NULL;
  assert_int_equal(f->spy->calls[SPY_BEGIN], 1);
  assert_int_equal(f->spy->calls[SPY_AFTER_CREATE], 0);
  assert_null(f->spy->created_session);
}

/* ---- end to end ----------------------------------------------------------------------- */

/* Fetch w and the GS through a monitored session (a run without targets). */
static void fetch_state(hk_session *s, model *m, float *w, int64_t *gs) {
  hk_status st = HK_STATUS_INIT;
  hk_handle fetches[2];
  hk_tensor res[2];
  hk_run_args args = {NULL, 0, fetches, 2, NULL, 0, NULL};
  fetches[0] = m->w;
  fetches[1] = m->gs;
  assert_ok(hk_session_run(s, &args, res, NULL, &st), &st);
  assert_int_equal(res[0].nbytes, NW * sizeof *w);
  memcpy(w, res[0].data, NW * sizeof *w);
  assert_ok(hk_tensor_to_i64(&res[1], "global_step", gs, &st), &st);
}

/* D5.2 through a session: a new session on a directory whose state file is
 * gone resumes from the newest checkpoint, the hooks' after_create_session
 * sees the restored GS. */
static void test_restore__d5_2_session_without_state_file_resumes(void **state) {
  fx *f = *state;
  hk_session_options o;
  char *sf = test_path(f->dir, "checkpoint");
  save(f, 4);
  save(f, 6);
  assert_int_equal(unlink(sf), 0);
  session_options(f, &o, HK_SESSION_MONITORED, 0);
  assert_ok(hk_session_new(&f->s, &o, &f->st), &f->st);
  {
    float w[NW];
    int64_t gs = -1;
    fetch_state(f->s, &f->m, w, &gs);
    assert_int_equal(gs, 6);
    for (size_t k = 0; k < NW; k++) assert_true(w[k] == w_of(6, k));
  }
  assert_logged(f->te, HK_LOG_WARNING, "checkpoint is missing; scanning");
  free(sf);
}

/* What hk_creation_context_restored_checkpoint() said at each
 * after_create_session of a spy (C94, C105's public half). */
typedef struct seen_restored {
  int calls;
  int null_seen;
  char last[1024];
} seen_restored;

static hk_code note_restored(spy_hook *spy, spy_slot slot, void *arg, hk_status *st) {
  seen_restored *seen = spy->action_user;
  const char *from;
  (void)st;
  if (slot != SPY_AFTER_CREATE) return HK_OK;
  from = hk_creation_context_restored_checkpoint(arg);
  seen->calls++;
  seen->null_seen = from == NULL;
  snprintf(seen->last, sizeof seen->last, "%s", from ? from : "");
  return HK_OK;
}

/* A custom creator (H21) that restores by itself: the session cannot know. */
static hk_code restoring_creator(void *user, hk_executor *ex, hk_raw_session **out, hk_status *st) {
  fx *f = user;
  char *p = prefix_of(f, 5);
  hk_code rc = hk_raw_session_open(out, ex, st);
  if (rc == HK_OK) rc = hk_saver_restore(f->saver, *out, p, st);
  free(p);
  return rc;
}

static const hk_session_creator_vtable restoring_creator_vtable = {HK_SESSION_CREATOR_VTABLE_VERSION,
                                                                   restoring_creator, NULL};

/* C94, C105: hooks learn through the creation context which checkpoint the
 * creation restored — its prefix "<dir>/<name>" — and NULL when the model
 * was initialized, when a custom creator made the raw session, or for a
 * NULL context. */
static void test_restore__c94_creation_context_names_restored_checkpoint(void **state) {
  fx *f = *state;
  hk_session_options o;
  seen_restored seen;
  char *p5 = prefix_of(f, 5);

  memset(&seen, 0, sizeof seen);
  assert_null(hk_creation_context_restored_checkpoint(NULL));
  f->spy = spy_hook_new("spy", NULL, NULL);
  assert_non_null(f->spy);
  f->spy->action = note_restored;
  f->spy->action_user = &seen;
  f->hooks[0] = f->spy->hook;
  /* nothing to restore: initialized */
  session_options(f, &o, HK_SESSION_MONITORED, 1);
  assert_ok(hk_session_new(&f->s, &o, &f->st), &f->st);
  assert_int_equal(seen.calls, 1);
  assert_true(seen.null_seen);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  hk_session_free(f->s);
  f->s = NULL;
  /* restored: the prefix */
  save(f, 3);
  save(f, 5);
  assert_ok(hk_session_new(&f->s, &o, &f->st), &f->st);
  assert_int_equal(seen.calls, 2);
  assert_false(seen.null_seen);
  assert_string_equal(seen.last, p5);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  hk_session_free(f->s);
  f->s = NULL;
  /* a custom creator restores what it likes; the session reports nothing */
  o.kind = HK_SESSION_SINGULAR;
  o.creator = &restoring_creator_vtable;
  o.creator_user = f;
  assert_ok(hk_session_new(&f->s, &o, &f->st), &f->st);
  assert_true(holds(&f->m, hk_session_raw_session(f->s), 5));
  assert_int_equal(seen.calls, 3);
  assert_true(seen.null_seen);
  f->hooks[0] = NULL;
  free(p5);
}

/* The session manager's half: hk_session_manager_restored_checkpoint()
 * names what the last prepare_session / recover_session restored; NULL
 * when it initialized, failed, or was a wait_for_session. */
static void test_restore__sm_restored_checkpoint_reports_last_call(void **state) {
  fx *f = *state;
  char *p2 = prefix_of(f, 2), *missing = test_path(f->root, "nowhere");
  int initialized = 0;
  make_sm(f);
  assert_null(hk_session_manager_restored_checkpoint(NULL));
  assert_null(hk_session_manager_restored_checkpoint(f->sm));
  save(f, 1);
  save(f, 2);
  assert_ok(prepare(f), &f->st);
  assert_string_equal(hk_session_manager_restored_checkpoint(f->sm), p2);
  drop_out(f);
  /* nothing to restore: initialized */
  f->po.checkpoint_dir = missing;
  assert_ok(prepare(f), &f->st);
  assert_null(hk_session_manager_restored_checkpoint(f->sm));
  drop_out(f);
  /* recover_session: restored and ready */
  f->po.checkpoint_dir = f->dir;
  assert_ok(hk_session_manager_recover_session(f->sm, &f->out, &initialized, &f->po, &f->st), &f->st);
  assert_int_equal(initialized, 1);
  assert_string_equal(hk_session_manager_restored_checkpoint(f->sm), p2);
  drop_out(f);
  /* an explicit checkpoint, as given */
  f->po.checkpoint_dir = NULL;
  f->po.checkpoint_filename_with_path = p2;
  assert_ok(prepare(f), &f->st);
  assert_string_equal(hk_session_manager_restored_checkpoint(f->sm), p2);
  drop_out(f);
  /* a failed call reports nothing */
  f->po.checkpoint_filename_with_path = missing;
  assert_status(prepare(f), &f->st, HK_NOT_FOUND, NULL);
  assert_null(hk_session_manager_restored_checkpoint(f->sm));
  f->po.checkpoint_filename_with_path = p2;
  assert_ok(prepare(f), &f->st);
  drop_out(f);
  assert_non_null(hk_session_manager_restored_checkpoint(f->sm));
  /* a worker's wait never restores (here it gives up at once: nothing is
   * initialized) */
  assert_status(hk_session_manager_wait_for_session(f->sm, &f->out, 0, &f->st), &f->st, HK_DEADLINE_EXCEEDED, NULL);
  assert_null(hk_session_manager_restored_checkpoint(f->sm));
  free(p2);
  free(missing);
}

static hk_hook *ckpt_hook(fx *f, int64_t save_steps) {
  hk_checkpoint_saver_options o = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
  hk_hook *h = NULL;
  o.env = &f->te->env;
  o.checkpoint_dir = f->dir;
  o.save_steps = save_steps;
  assert_ok(hk_checkpoint_saver_hook_new(&h, &o, &f->st), &f->st);
  return h;
}

static void close_session(fx *f) {
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  hk_session_free(f->s);
  f->s = NULL;
  for (size_t i = 0; i < 2; i++) {
    hk_hook_free(f->hooks[i]);
    f->hooks[i] = NULL;
  }
}

/* Train 5 steps with a CheckpointSaverHook (save_steps 2), close; a new
 * session over a new graph of the same structure but another initializer
 * seed resumes from the last checkpoint (step 5, the final save at end)
 * with the trained values, then keeps training and saving from there. */
static void test_restore__e2e_train_save_resume(void **state) {
  fx *f = *state;
  hk_session_options o;
  float w0[NW], w[NW], want[NW], init2[NW];
  int64_t gs = -1;
  int runs = 0;
  static const int listed[5] = {0, 2, 4, 5, 7};

  f->hooks[0] = ckpt_hook(f, 2);
  f->hooks[1] = stop_after(5);
  session_options(f, &o, HK_SESSION_MONITORED, 2);
  assert_ok(hk_session_new(&f->s, &o, &f->st), &f->st);
  fetch_state(f->s, &f->m, w0, &gs);
  assert_int_equal(gs, 0); /* nothing to restore: initialized */
  while (!hk_session_should_stop(f->s)) {
    assert_ok(run_train(f->s, &f->m, &f->st), &f->st);
    assert_true(++runs <= 10);
  }
  assert_int_equal(runs, 5);
  close_session(f);
  assert_true(ckpt_exists(f, 5));
  for (size_t k = 0; k < NW; k++) {
    want[k] = w0[k];
    for (int i = 0; i < 5; i++) want[k] += 1.0f;
  }

  /* a new process: same structure, another seed */
  model_build(&f->m2, f->te, B_F64_4, 2);
  initial_w(&f->m2, init2);
  assert_memory_not_equal(init2, want, sizeof want);
  f->hooks[0] = ckpt_hook(f, 2);
  f->hooks[1] = stop_after(2);
  session_options(f, &o, HK_SESSION_MONITORED, 2);
  o.executor = f->m2.ex;
  assert_ok(hk_session_new(&f->s, &o, &f->st), &f->st);
  fetch_state(f->s, &f->m2, w, &gs);
  assert_int_equal(gs, 5);
  assert_memory_equal(w, want, sizeof want);
  runs = 0;
  while (!hk_session_should_stop(f->s)) {
    assert_ok(run_train(f->s, &f->m2, &f->st), &f->st);
    assert_true(++runs <= 10);
  }
  assert_int_equal(runs, 2);
  close_session(f);
  /* the resumed run's default Saver adopted the list and kept extending it */
  assert_state_lists(f, listed, 5);
}

/* ---- H30, H27, H10: restoring in place through the executor's storage -------------- */

/* A fake executor with the model's checkpointed variables (no ops). */
static fake_executor *fake_model(fx *f, int with_storage, uint32_t b_flags) {
  static const int64_t w_dims[2] = {2, 3}, b_dims[1] = {4};
  fake_executor *fk = with_storage ? fake_executor_new_with_storage(&f->te->env) : fake_executor_new(&f->te->env);
  assert_non_null(fk);
  fake_executor_add_variable(fk, "w", HK_DTYPE_F32, 2, w_dims, 0, NULL);
  fake_executor_add_variable(fk, "b", HK_DTYPE_F64, 1, b_dims, b_flags, NULL);
  fake_executor_add_global_step(fk);
  return fk;
}

/* Restore `prefix` into a fresh raw session of ex (*rs) through a Saver of
 * w, b and global_step over env. */
static hk_code restore_ex(fx *f, hk_executor *ex, const hk_env *env, const char *prefix, hk_raw_session **rs) {
  hk_saver_options o = HK_SAVER_OPTIONS_INIT;
  hk_saver *s = NULL;
  hk_code rc;
  o.env = env;
  o.executor = ex;
  o.var_list = all_vars;
  o.nvar_list = 3;
  assert_ok(hk_saver_new(&s, &o, &f->st), &f->st);
  assert_ok(hk_raw_session_open(rs, ex, &f->st), &f->st);
  rc = hk_saver_restore(s, *rs, prefix, &f->st);
  hk_saver_free(s);
  return rc;
}

/* w, b and the GS of rs, as bytes, into out (NW floats, 4 doubles, 1 int64). */
static void bytes_of(hk_executor *ex, hk_raw_session *rs, unsigned char *out) {
  static const char *const names[3] = {"w", "b", "global_step"};
  static const size_t sizes[3] = {NW * sizeof(float), 4 * sizeof(double), sizeof(int64_t)};
  hk_status st = HK_STATUS_INIT;
  for (size_t i = 0, at = 0; i < 3; at += sizes[i], i++) {
    size_t idx = 0;
    hk_tensor t;
    assert_ok(hk_executor_find_variable(ex, names[i], &idx, &st), &st);
    assert_ok(hk_raw_session_read_variable(rs, idx, &t, &st), &st);
    assert_int_equal(t.nbytes, sizes[i]);
    memcpy(out + at, t.data, sizes[i]);
  }
}

#define MODEL_BYTES (NW * sizeof(float) + 4 * sizeof(double) + sizeof(int64_t))

/* H30: the graph executor and a fake with the storage slot restore in
 * place; a fake without it assigns. All three end with exactly the
 * checkpoint's values. */
static void test_restore__h30_in_place_restore_equals_assign_path(void **state) {
  fx *f = *state;
  unsigned char want[MODEL_BYTES], got[MODEL_BYTES];
  hk_raw_session *rs = NULL;
  fake_executor *with = fake_model(f, 1, 0), *without = fake_model(f, 0, 0);
  char *prefix;
  save(f, 3);
  prefix = prefix_of(f, 3);
  bytes_of(f->m.ex, f->rs, want);

  assert_ok(restore_ex(f, f->m.ex, &f->te->env, prefix, &rs), &f->st);
  assert_true(holds(&f->m, rs, 3));
  bytes_of(f->m.ex, rs, got);
  assert_memory_equal(got, want, MODEL_BYTES);
  hk_raw_session_free(rs);

  assert_ok(restore_ex(f, fake_executor_executor(with), &f->te->env, prefix, &rs), &f->st);
  bytes_of(fake_executor_executor(with), rs, got);
  assert_memory_equal(got, want, MODEL_BYTES);
  assert_int_equal(fake_executor_calls(with, FAKE_VARIABLE_STORAGE), 3);
  assert_int_equal(fake_executor_calls(with, FAKE_VARIABLE_ASSIGN), 0);
  hk_raw_session_free(rs);

  assert_ok(restore_ex(f, fake_executor_executor(without), &f->te->env, prefix, &rs), &f->st);
  bytes_of(fake_executor_executor(without), rs, got);
  assert_memory_equal(got, want, MODEL_BYTES);
  assert_int_equal(fake_executor_calls(without, FAKE_VARIABLE_STORAGE), 0);
  assert_int_equal(fake_executor_calls(without, FAKE_VARIABLE_ASSIGN), 3);
  hk_raw_session_free(rs);

  fake_executor_free(with);
  fake_executor_free(without);
  free(prefix);
}

/* H27: a tensor whose bytes no longer match their CRC is DATA_LOSS naming
 * the file and the tensor, in place (graph, fake with storage) and by
 * assignment (fake without), with the file mapped and read. */
static void test_restore__h27_corrupt_tensor_data_loss_by_both_paths(void **state) {
  fx *f = *state;
  fake_executor *with = fake_model(f, 1, 0), *without = fake_model(f, 0, 0);
  hk_executor *exs[3] = {f->m.ex, fake_executor_executor(with), fake_executor_executor(without)};
  char *prefix, *data;
  faulty_fs ff;
  hk_env env = f->te->env;
  save(f, 4);
  corrupt(f, 4); /* the last byte: a byte of "w", the last name */
  prefix = prefix_of(f, 4);
  data = data_of(f, 4);
  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &env);
  for (int mapped = 0; mapped < 2; mapped++) {
    faulty_fs_no_map(&ff, !mapped);
    for (size_t k = 0; k < 3; k++) {
      hk_raw_session *rs = NULL;
      assert_status(restore_ex(f, exs[k], &env, prefix, &rs), &f->st, HK_DATA_LOSS, data);
      assert_non_null(strstr(f->st.message, "tensor 'w'"));
      assert_non_null(strstr(f->st.message, "CRC-32C mismatch"));
      hk_raw_session_free(rs);
    }
  }
  assert_int_equal(faulty_fs_open_handles(&ff), 0);
  assert_int_equal(faulty_fs_open_maps(&ff), 0);
  faulty_fs_destroy(&ff);
  fake_executor_free(with);
  fake_executor_free(without);
  free(prefix);
  free(data);
}

static int poison_calls;

/* What a version-1 table has after `destroy` is not a slot: if it were
 * called, it would hand out memory that is not the variable's. */
static hk_code poison_storage(void *self, void *session, size_t index, hk_tensor *out, hk_status *st) {
  static unsigned char junk[256];
  (void)self, (void)session, (void)index, (void)st;
  poison_calls++;
  memset(out, 0, sizeof *out);
  out->data = junk;
  return HK_OK;
}

/* H10: a vtable declaring version 1 is never asked for variable storage,
 * whatever follows `destroy` in memory: restore assigns. */
static void test_restore__h10_version_1_vtable_never_asked_for_storage(void **state) {
  fx *f = *state;
  fake_executor *fk = fake_model(f, 0, 0);
  static hk_executor_vtable v1;
  hk_executor *ex = NULL;
  hk_raw_session *rs = NULL;
  hk_tensor t;
  unsigned char want[MODEL_BYTES], got[MODEL_BYTES];
  char *prefix;
  save(f, 5);
  prefix = prefix_of(f, 5);
  bytes_of(f->m.ex, f->rs, want);
  v1 = *fake_executor_vtable();
  v1.version = 1;
  v1.destroy = NULL; /* the fake's own executor destroys it */
  v1.variable_storage = poison_storage;
  poison_calls = 0;
  assert_ok(hk_executor_new(&ex, &v1, hk_executor_self(fake_executor_executor(fk)), &f->te->env, &f->st), &f->st);
  assert_ok(restore_ex(f, ex, &f->te->env, prefix, &rs), &f->st);
  bytes_of(ex, rs, got);
  assert_memory_equal(got, want, MODEL_BYTES);
  assert_int_equal(fake_executor_calls(fk, FAKE_VARIABLE_ASSIGN), 3);
  assert_status(hk_raw_session_variable_storage(rs, 0, &t, &f->st), &f->st, HK_UNIMPLEMENTED, "variable storage");
  assert_int_equal(poison_calls, 0);
  hk_raw_session_free(rs);
  /* The same table declaring version 2 is asked (and must then be right). */
  v1.version = 2;
  assert_ok(hk_raw_session_open(&rs, ex, &f->st), &f->st);
  assert_status(hk_raw_session_variable_storage(rs, 0, &t, &f->st), &f->st, HK_INTERNAL, "does not match");
  assert_null(t.data);
  assert_int_equal(poison_calls, 1);
  hk_raw_session_free(rs);
  hk_executor_free(ex);
  fake_executor_free(fk);
  free(prefix);
}

/* H30, H27: storage refused for one variable (UNIMPLEMENTED) means that one
 * is assigned and the others are written in place; an optional variable is
 * always assigned (an older checkpoint may lack it, D5.3, and it must then
 * hold verified bytes); any other storage error is the executor's: no
 * fallback to an older checkpoint. */
static void test_restore__h30_refused_storage_and_optional_variables_are_assigned(void **state) {
  fx *f = *state;
  fake_executor *fk = fake_model(f, 1, 0), *opt = fake_model(f, 1, HK_VAR_OPTIONAL);
  hk_raw_session *rs = NULL;
  unsigned char want[MODEL_BYTES], got[MODEL_BYTES];
  char *prefix;
  save(f, 6);
  prefix = prefix_of(f, 6);
  bytes_of(f->m.ex, f->rs, want);

  fake_executor_fail(fk, FAKE_VARIABLE_STORAGE, 2, 1, HK_UNIMPLEMENTED, "no storage for this one");
  assert_ok(restore_ex(f, fake_executor_executor(fk), &f->te->env, prefix, &rs), &f->st);
  bytes_of(fake_executor_executor(fk), rs, got);
  assert_memory_equal(got, want, MODEL_BYTES);
  assert_int_equal(fake_executor_calls(fk, FAKE_VARIABLE_STORAGE), 3);
  assert_int_equal(fake_executor_calls(fk, FAKE_VARIABLE_ASSIGN), 1);
  hk_raw_session_free(rs);

  assert_ok(restore_ex(f, fake_executor_executor(opt), &f->te->env, prefix, &rs), &f->st);
  bytes_of(fake_executor_executor(opt), rs, got);
  assert_memory_equal(got, want, MODEL_BYTES);
  assert_int_equal(fake_executor_calls(opt, FAKE_VARIABLE_STORAGE), 2);
  assert_int_equal(fake_executor_calls(opt, FAKE_VARIABLE_ASSIGN), 1); /* "b" */
  hk_raw_session_free(rs);

  fake_executor_fail(fk, FAKE_VARIABLE_STORAGE, 1, 1, HK_RESOURCE_EXHAUSTED, "device memory is full");
  assert_status(restore_ex(f, fake_executor_executor(fk), &f->te->env, prefix, &rs), &f->st, HK_RESOURCE_EXHAUSTED,
                "device memory is full");
  hk_raw_session_free(rs);
  fake_executor_free(fk);
  fake_executor_free(opt);
  free(prefix);
}

/* H30: hk_raw_session_variable_storage's answers with the graph executor:
 * the variable's own buffer, writable, the variable initialized from then
 * on; argument, index and closed-session errors. */
static void test_restore__h30_storage_of_the_graph_executor(void **state) {
  fx *f = *state;
  hk_raw_session *rs = NULL;
  hk_tensor t, v;
  size_t iw = var_index(&f->m, "w");
  assert_ok(hk_raw_session_open(&rs, f->m.ex, &f->st), &f->st);
  assert_status(hk_raw_session_read_variable(rs, iw, &v, &f->st), &f->st, HK_FAILED_PRECONDITION, "uninitialized");
  assert_ok(hk_raw_session_variable_storage(rs, iw, &t, &f->st), &f->st);
  assert_int_equal(t.dtype, HK_DTYPE_F32);
  assert_int_equal(t.rank, 2);
  assert_int_equal(t.dims[0], 2);
  assert_int_equal(t.dims[1], 3);
  assert_int_equal(t.nbytes, NW * sizeof(float));
  for (size_t k = 0; k < NW; k++) ((float *)t.data)[k] = w_of(9, k);
  assert_ok(hk_raw_session_read_variable(rs, iw, &v, &f->st), &f->st);
  assert_ptr_equal(v.data, t.data);
  for (size_t k = 0; k < NW; k++) assert_true(((const float *)v.data)[k] == w_of(9, k));
  assert_status(hk_raw_session_variable_storage(NULL, iw, &t, &f->st), &f->st, HK_INVALID_ARGUMENT, "session");
  assert_status(hk_raw_session_variable_storage(rs, iw, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "out");
  assert_status(hk_raw_session_variable_storage(rs, 1000, &t, &f->st), &f->st, HK_OUT_OF_RANGE, "1000");
  assert_ok(hk_raw_session_close(rs, &f->st), &f->st);
  assert_status(hk_raw_session_variable_storage(rs, iw, &t, &f->st), &f->st, HK_FAILED_PRECONDITION, "closed");
  assert_null(t.data);
  hk_raw_session_free(rs);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_restore__c67_explicit_path_restores_without_init_op, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__c67_missing_path_not_found_no_session, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__d5_4_corrupt_explicit_path_no_fallback, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__c67_both_paths_before_raw_session, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__c67_no_saver_restores_nothing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__c68_no_state_file_initializes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__d5_2_no_state_file_restores_from_scan, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__d5_2_session_without_state_file_resumes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__c68_wait_times_out_then_initializes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__c68_state_file_appears_during_wait, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__c68_data_file_ends_wait, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__h24_cancel_during_wait, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__d5_3_newest_corrupt_falls_back, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__d5_3_newest_missing_falls_back, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__d5_3_all_corrupt_data_loss_no_session, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__c123_malformed_state_file_scans_then_the_next_save_adopts, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__h27_missing_variable_no_fallback, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__h27_shape_mismatch_no_fallback, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__h27_dtype_mismatch_no_fallback, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__h27_optional_variable_missing_keeps_value, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__h27_optional_variable_mismatch_is_error, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__h27_session_resumes_without_optional_variable, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__h27_unrestored_tensor_is_named, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__c122_recovers_list_and_retention_continues, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__c74_restored_initialized, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__c74_nothing_to_restore, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__c74_restore_not_ready, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__c74_restore_not_ready_for_local_init, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__c69_restored_needs_no_init, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__d5_3_newest_truncated_falls_back, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__oom_loop, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__fs_fault_sweep, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__session_default_scaffold_restores, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__session_explicit_scaffold_saver_used, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__session_restore_failure_no_after_create, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__e2e_train_save_resume, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__c94_creation_context_names_restored_checkpoint, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__sm_restored_checkpoint_reports_last_call, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__h30_in_place_restore_equals_assign_path, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__h27_corrupt_tensor_data_loss_by_both_paths, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__h10_version_1_vtable_never_asked_for_storage, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__h30_refused_storage_and_optional_variables_are_assigned, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_restore__h30_storage_of_the_graph_executor, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
