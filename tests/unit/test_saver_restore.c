/*
 * test_saver — the Saver (contract group M: C112–C116, C125, H27; group P:
 * H31, H32, C122; D4, D6): round trips, names, refusals, exact retention
 * across saves and restarts, fault sweeps over the write sequence, restore
 * errors and an OOM loop.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <hooked/hooked.h>
#include <hooked/checkpoint.h>
#include <hooked/graph.h>

#include "test_env.h"
#include "tmpdir.h"
#include "ckpt_fixture.h"
#include "faulty_fs.h"
#include "session_fixture.h"

#define NVARS 6

/* The saved variables, in creation order; "loc" is local and never saved. */
static const char *const var_names[NVARS] = {"w", "b", "i", "bytes", "flags", "global_step"};

typedef struct fx {
  test_env *te;
  faulty_fs ff;
  hk_graph *g;
  hk_executor *ex;
  hk_raw_session *rs;
  char *root; /* temp tree */
  char *dir;  /* root/ck: the checkpoint directory */
  char *save_path;
  hk_saver *saver;
} fx;

static void add_var(fx *f, const char *name, hk_dtype dt, int32_t rank, const int64_t *dims, uint32_t flags) {
  hk_variable_def d = HK_VARIABLE_DEF_INIT;
  hk_handle h;
  hk_status st = HK_STATUS_INIT;
  d.name = name;
  d.dtype = dt;
  d.rank = rank;
  d.dims = dims;
  d.flags = flags;
  assert_ok(hk_graph_variable(f->g, &h, &d, &st), &st);
}

static fx *fx_build(int with_gs) {
  static const int64_t w_dims[2] = {2, 3}, b_dims[1] = {4}, by_dims[1] = {5}, fl_dims[2] = {1, 2};
  fx *f = calloc(1, sizeof *f);
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_handle h;
  assert_non_null(f);
  f->te = test_env_new();
  faulty_fs_init(&f->ff);
  faulty_fs_bind(&f->ff, &f->te->env);
  go.env = &f->te->env;
  assert_ok(hk_graph_new(&f->g, &go, &st), &st);
  f->ex = hk_graph_executor(f->g);
  add_var(f, "w", HK_DTYPE_F32, 2, w_dims, HK_VAR_TRAINABLE);
  add_var(f, "b", HK_DTYPE_F64, 1, b_dims, HK_VAR_TRAINABLE);
  add_var(f, "i", HK_DTYPE_I32, 0, NULL, 0);
  add_var(f, "bytes", HK_DTYPE_U8, 1, by_dims, 0);
  add_var(f, "flags", HK_DTYPE_BOOL, 2, fl_dims, 0);
  if (with_gs) assert_ok(hk_graph_create_global_step(f->g, &h, &st), &st);
  add_var(f, "loc", HK_DTYPE_I64, 0, NULL, HK_VAR_LOCAL);
  assert_ok(hk_raw_session_open(&f->rs, f->ex, &st), &st);
  ckpt_dir_new("saver", &f->root, &f->dir, &f->save_path);
  return f;
}

static int setup(void **state) {
  *state = fx_build(1);
  return 0;
}

static int teardown(void **state) {
  fx *f = *state;
  hk_saver_free(f->saver);
  hk_raw_session_free(f->rs);
  hk_graph_free(f->g);
  ckpt_dir_free(f->root, f->dir, f->save_path);
  faulty_fs_destroy(&f->ff);
  assert_int_equal(test_env_release(f->te), 0);
  free(f);
  return 0;
}

/* Value of byte k of variable v for a given seed: distinct per seed. */
static unsigned char pattern(int seed, size_t v, size_t k) { return (unsigned char)(seed * 31 + (int)v * 7 + (int)k); }

/* Byte k of variable v of dtype dt: the pattern, a bool's 0 or 1, and a
 * float's exponent never all ones (its top bit clear), since a checkpoint
 * refuses NaN and infinities (H59). */
static unsigned char value_byte(int seed, size_t v, size_t k, hk_dtype dt) {
  unsigned char b = pattern(seed, v, k);
  if (dt == HK_DTYPE_BOOL) b &= 1;
  if ((dt == HK_DTYPE_F32 && k % 4 == 3) || (dt == HK_DTYPE_F64 && k % 8 == 7)) b &= 0xbf;
  return b;
}

static void set_var(fx *f, const char *name, int seed, size_t v) {
  hk_status st = HK_STATUS_INIT;
  size_t idx;
  hk_variable_info info;
  hk_tensor t;
  unsigned char buf[256];
  assert_ok(hk_executor_find_variable(f->ex, name, &idx, &st), &st);
  assert_ok(hk_executor_variable_info(f->ex, idx, &info, &st), &st);
  assert_ok(hk_tensor_init(&t, info.dtype, info.rank, info.dims, buf, &st), &st);
  assert_true(t.nbytes <= sizeof buf);
  for (size_t k = 0; k < t.nbytes; k++) buf[k] = value_byte(seed, v, k, info.dtype);
  if (strcmp(name, "global_step") == 0) {
    int64_t gs = seed;
    memcpy(buf, &gs, sizeof gs);
  }
  assert_ok(hk_raw_session_assign_variable(f->rs, idx, &t, &st), &st);
}

static void set_values(fx *f, int seed) {
  for (size_t v = 0; v < NVARS; v++) {
    if (strcmp(var_names[v], "global_step") == 0 && hk_executor_find_variable(f->ex, "global_step", &(size_t){0}, NULL))
      continue;
    set_var(f, var_names[v], seed, v);
  }
  set_var(f, "loc", seed, 99);
}

/* nonzero when variable `name` holds seed's values */
static int var_is(fx *f, const char *name, int seed, size_t v) {
  hk_status st = HK_STATUS_INIT;
  size_t idx;
  hk_tensor t;
  const unsigned char *p;
  if (hk_executor_find_variable(f->ex, name, &idx, &st) != HK_OK) return 1; /* absent in this graph */
  if (hk_raw_session_read_variable(f->rs, idx, &t, &st) != HK_OK) return 0;
  p = t.data;
  if (strcmp(name, "global_step") == 0) {
    int64_t gs;
    memcpy(&gs, p, sizeof gs);
    return gs == seed;
  }
  for (size_t k = 0; k < t.nbytes; k++)
    if (p[k] != value_byte(seed, v, k, t.dtype)) return 0;
  return 1;
}

static void assert_values(fx *f, int seed) {
  for (size_t v = 0; v < NVARS; v++) assert_true(var_is(f, var_names[v], seed, v));
}

static hk_saver *make_saver(fx *f, int64_t max_to_keep, double hours) {
  hk_saver_options o = HK_SAVER_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_saver *s = NULL;
  o.executor = f->ex;
  o.env = &f->te->env;
  o.max_to_keep = max_to_keep;
  o.keep_checkpoint_every_n_hours = hours;
  assert_ok(hk_saver_new(&s, &o, &st), &st);
  return s;
}

static void save_step(fx *f, hk_saver *s, int64_t step) {
  hk_status st = HK_STATUS_INIT;
  set_values(f, (int)step);
  assert_ok(hk_saver_save(s, f->rs, f->save_path, step, HK_SAVE_DEFAULT, NULL, &st), &st);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The directory's entries, sorted, joined with ','. malloc'd. */
static char *listing(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char *names[256];
  size_t n = 0, len = 1;
  char *out;
  assert_non_null(d);
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    assert_true(n < 256);
    names[n] = strdup(e->d_name);
    len += strlen(e->d_name) + 1;
    n++;
  }
  closedir(d);
  qsort(names, n, sizeof names[0], cmp_str);
  out = calloc(1, len);
  for (size_t i = 0; i < n; i++) {
    if (i) strcat(out, ",");
    strcat(out, names[i]);
    free(names[i]);
  }
  return out;
}

static void assert_listing(const char *dir, const char *want) {
  char *got = listing(dir);
  if (strcmp(got, want) != 0) fprintf(stderr, "directory %s holds: %s\n  expected: %s\n", dir, got, want);
  assert_string_equal(got, want);
  free(got);
}

/* The state file's bare names, joined with ','. */
static void assert_state(fx *f, const char *want) {
  hk_checkpoint_state *cs = NULL;
  hk_status st = HK_STATUS_INIT;
  char got[1024] = "";
  assert_ok(hk_get_checkpoint_state(&f->te->env, f->dir, NULL, &cs, &st), &st);
  for (size_t i = 0; i < hk_checkpoint_state_count(cs); i++) {
    const char *p = hk_checkpoint_state_path(cs, i);
    const char *slash = strrchr(p, '/');
    if (i) strcat(got, ",");
    strcat(got, slash ? slash + 1 : p);
  }
  hk_checkpoint_state_free(cs);
  assert_string_equal(got, want);
}

static char *ckpt_file(fx *f, const char *name) {
  char buf[1024];
  snprintf(buf, sizeof buf, "%s/%s", f->dir, name);
  return strdup(buf);
}

/* ---- round trip and names (C113, C114, C125) ---------------------------------------- */

static void test_saver__round_trip_several_dtypes_C113_C125(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  const char *prefix = NULL;
  hk_checkpoint_reader *r = NULL;
  size_t idx;
  char want[1024];

  f->saver = make_saver(f, 5, HK_UNSET_SECS);
  set_values(f, 3);
  assert_ok(hk_saver_save(f->saver, f->rs, f->save_path, 7, HK_SAVE_DEFAULT, &prefix, &st), &st);
  snprintf(want, sizeof want, "%s-7", f->save_path);
  assert_string_equal(prefix, want);
  assert_listing(f->dir, "checkpoint,model.ckpt-7.safetensors");

  assert_ok(hk_checkpoint_reader_open(&r, &f->te->env, prefix, &st), &st);
  assert_int_equal(hk_checkpoint_reader_step(r), 7);
  assert_int_equal(hk_checkpoint_reader_count(r), NVARS); /* the local variable is not saved (C112) */
  assert_status(hk_checkpoint_reader_find(r, "loc", &idx, &st), &st, HK_NOT_FOUND, "loc");
  hk_checkpoint_reader_free(r);

  set_values(f, 11);
  assert_ok(hk_saver_restore(f->saver, f->rs, want, &st), &st);
  assert_values(f, 3);
  assert_logged(f->te, HK_LOG_INFO, "Restoring parameters from");
  assert_true(var_is(f, "loc", 11, 99)); /* local variables are left alone */

  /* The data file's own path works as well. */
  set_values(f, 12);
  strcat(want, ".safetensors");
  assert_ok(hk_saver_restore(f->saver, f->rs, want, &st), &st);
  assert_values(f, 3);
}

static void test_saver__pad_step_number_C113(void **state) {
  fx *f = *state;
  hk_saver_options o = HK_SAVER_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  const char *prefix = NULL;
  char want[1024];
  o.executor = f->ex;
  o.pad_step_number = 1;
  assert_ok(hk_saver_new(&f->saver, &o, &st), &st);
  set_values(f, 1);
  assert_ok(hk_saver_save(f->saver, f->rs, f->save_path, 42, HK_SAVE_DEFAULT, &prefix, &st), &st);
  snprintf(want, sizeof want, "%s-00000042", f->save_path);
  assert_string_equal(prefix, want);
  assert_listing(f->dir, "checkpoint,model.ckpt-00000042.safetensors");
}

static void test_saver__no_step_records_global_step_C113(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  const char *prefix = NULL;
  hk_checkpoint_reader *r = NULL;
  f->saver = make_saver(f, 5, HK_UNSET_SECS);
  set_values(f, 17); /* GS = 17 */
  assert_ok(hk_saver_save(f->saver, f->rs, f->save_path, HK_UNSET_STEPS, HK_SAVE_DEFAULT, &prefix, &st), &st);
  assert_string_equal(prefix, f->save_path);
  assert_ok(hk_checkpoint_reader_open(&r, &f->te->env, prefix, &st), &st);
  assert_int_equal(hk_checkpoint_reader_step(r), 17);
  hk_checkpoint_reader_free(r);
  assert_state(f, "model.ckpt");
}

static void test_saver__no_step_without_gs_records_zero_C113(void **state) {
  fx *f = fx_build(0);
  hk_status st = HK_STATUS_INIT;
  const char *prefix = NULL;
  hk_checkpoint_reader *r = NULL;
  (void)state;
  f->saver = make_saver(f, 5, HK_UNSET_SECS);
  set_values(f, 2);
  assert_ok(hk_saver_save(f->saver, f->rs, f->save_path, HK_UNSET_STEPS, HK_SAVE_DEFAULT, &prefix, &st), &st);
  assert_ok(hk_checkpoint_reader_open(&r, &f->te->env, prefix, &st), &st);
  assert_int_equal(hk_checkpoint_reader_step(r), 0);
  hk_checkpoint_reader_free(r);
  teardown((void **)&f);
}

/* C114: HK_SAVE_META writes the executor's description of its graph as
 * <prefix>.graph.txt (hooked's own text, not a TensorFlow MetaGraphDef, so
 * not <prefix>.meta). */
static void test_saver__graph_file_when_asked_C114(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  f->saver = make_saver(f, 5, HK_UNSET_SECS);
  set_values(f, 1);
  assert_ok(hk_saver_save(f->saver, f->rs, f->save_path, 1, HK_SAVE_META, NULL, &st), &st);
  assert_listing(f->dir, "checkpoint,model.ckpt-1.graph.txt,model.ckpt-1.safetensors");
  {
    char *meta = ckpt_file(f, "model.ckpt-1.graph.txt");
    size_t n = 0;
    char *text = test_read_file(meta, &n);
    assert_non_null(text);
    assert_non_null(strstr(text, "global_step")); /* the executor's description of its graph */
    free(text);
    free(meta);
  }
  assert_ok(hk_saver_save(f->saver, f->rs, f->save_path, 2, HK_SAVE_DEFAULT, NULL, &st), &st);
  assert_listing(f->dir, "checkpoint,model.ckpt-1.graph.txt,model.ckpt-1.safetensors,model.ckpt-2.safetensors");
}

static void test_saver__selected_var_list_C112(void **state) {
  fx *f = *state;
  hk_saver_options o = HK_SAVER_OPTIONS_INIT;
  const char *vl[2] = {"b", "i"};
  hk_status st = HK_STATUS_INIT;
  hk_checkpoint_reader *r = NULL;
  const char *prefix;
  o.executor = f->ex;
  o.var_list = vl;
  o.nvar_list = 2;
  assert_ok(hk_saver_new(&f->saver, &o, &st), &st);
  set_values(f, 4);
  assert_ok(hk_saver_save(f->saver, f->rs, f->save_path, 1, 0, &prefix, &st), &st);
  assert_ok(hk_checkpoint_reader_open(&r, &f->te->env, prefix, &st), &st);
  assert_int_equal(hk_checkpoint_reader_count(r), 2);
  hk_checkpoint_reader_free(r);
  set_values(f, 5);
  assert_ok(hk_saver_restore(f->saver, f->rs, prefix, &st), &st);
  assert_true(var_is(f, "b", 4, 1));
  assert_true(var_is(f, "i", 4, 2));
  assert_true(var_is(f, "w", 5, 0)); /* not in the list: untouched */
}

/* ---- refusals (C112, C115, C118, H32) ---------------------------------------------- */

static void expect_new_refused(fx *f, hk_saver_options *o, hk_code code, const char *substr) {
  hk_status st = HK_STATUS_INIT;
  hk_saver *s = (hk_saver *)1;
  assert_status(hk_saver_new(&s, o, &st), &st, code, substr);
  assert_null(s);
  (void)f;
}

static void test_saver__new_refusals_C112_C115(void **state) {
  fx *f = *state;
  hk_saver_options o;
  const char *dup[2] = {"w", "w"};
  const char *nul[1] = {NULL};
  const char *unknown[2] = {"w", "nope"};
  hk_status st = HK_STATUS_INIT;
  hk_saver *s = NULL;

  assert_int_equal(hk_saver_options_init(NULL, HK_SAVER_OPTIONS_VERSION), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_saver_options_init(&o, 99), HK_INVALID_ARGUMENT);
  assert_ok(hk_saver_options_init(&o, HK_SAVER_OPTIONS_VERSION), NULL);
  assert_int_equal(o.max_to_keep, 5);
  assert_status(hk_saver_new(&s, NULL, &st), &st, HK_INVALID_ARGUMENT, "opts");
  expect_new_refused(f, &o, HK_INVALID_ARGUMENT, "executor");
  o.executor = f->ex;
  assert_status(hk_saver_new(NULL, &o, &st), &st, HK_INVALID_ARGUMENT, "out");

  o.max_to_keep = -1;
  expect_new_refused(f, &o, HK_INVALID_ARGUMENT, "max_to_keep");
  o.max_to_keep = 5;
  o.keep_checkpoint_every_n_hours = -1;
  expect_new_refused(f, &o, HK_INVALID_ARGUMENT, "keep_checkpoint_every_n_hours");
  o.keep_checkpoint_every_n_hours = NAN;
  expect_new_refused(f, &o, HK_INVALID_ARGUMENT, "keep_checkpoint_every_n_hours");
  o.keep_checkpoint_every_n_hours = HUGE_VAL;
  expect_new_refused(f, &o, HK_INVALID_ARGUMENT, "keep_checkpoint_every_n_hours");
  o.keep_checkpoint_every_n_hours = 0;

  o.latest_filename = "a/b";
  expect_new_refused(f, &o, HK_INVALID_ARGUMENT, "'latest_filename' must not contain path components");
  o.latest_filename = "..";
  expect_new_refused(f, &o, HK_INVALID_ARGUMENT, "'latest_filename' must not contain path components");
  o.latest_filename = "";
  expect_new_refused(f, &o, HK_INVALID_ARGUMENT, "'latest_filename' must not contain path components");
  o.latest_filename = NULL;

  o.var_list = dup;
  o.nvar_list = 2;
  expect_new_refused(f, &o, HK_INVALID_ARGUMENT, "'w' twice");
  o.var_list = nul;
  o.nvar_list = 1;
  expect_new_refused(f, &o, HK_INVALID_ARGUMENT, "var_list[0]");
  o.var_list = unknown;
  o.nvar_list = 2;
  expect_new_refused(f, &o, HK_NOT_FOUND, "nope");
  o.var_list = NULL;
  expect_new_refused(f, &o, HK_INVALID_ARGUMENT, "var_list");
  o.nvar_list = 0;
  assert_ok(hk_saver_new(&s, &o, &st), &st);
  assert_ptr_equal(hk_saver_executor(s), f->ex);
  assert_string_equal(hk_saver_latest_filename(s), "checkpoint");
  hk_saver_free(s);
  hk_saver_free(NULL);
}

static void expect_save_refused(fx *f, const char *path, int64_t step, hk_code code, const char *substr) {
  hk_status st = HK_STATUS_INIT;
  const char *prefix = "x";
  assert_status(hk_saver_save(f->saver, f->rs, path, step, 0, &prefix, &st), &st, code, substr);
  assert_null(prefix);
}

static void test_saver__save_refusals_C115_C118_H32(void **state) {
  fx *f = *state;
  hk_saver_options o = HK_SAVER_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  char path[2048], missing[1024], longname[256];
  char *before;

  o.executor = f->ex;
  o.latest_filename = "model-5";
  assert_ok(hk_saver_new(&f->saver, &o, &st), &st);
  set_values(f, 1);
  before = listing(f->dir);

  assert_status(hk_saver_save(NULL, f->rs, f->save_path, 1, 0, NULL, &st), &st, HK_INVALID_ARGUMENT, "saver");
  assert_status(hk_saver_save(f->saver, NULL, f->save_path, 1, 0, NULL, &st), &st, HK_INVALID_ARGUMENT, "rs");
  assert_status(hk_saver_save(f->saver, f->rs, NULL, 1, 0, NULL, &st), &st, HK_INVALID_ARGUMENT, "save_path");
  assert_status(hk_saver_save(f->saver, f->rs, f->save_path, 1, 1u << 7, NULL, &st), &st, HK_INVALID_ARGUMENT, "flags");

  snprintf(path, sizeof path, "%s/", f->dir);
  expect_save_refused(f, path, 1, HK_INVALID_ARGUMENT, "not a valid checkpoint name");
  snprintf(path, sizeof path, "%s/a..b", f->dir);
  expect_save_refused(f, path, 1, HK_INVALID_ARGUMENT, "a..b");
  snprintf(path, sizeof path, "%s/q\"uote", f->dir);
  expect_save_refused(f, path, 1, HK_INVALID_ARGUMENT, "not a valid checkpoint name");
  /* C115: no step and the basename is the state file's name */
  snprintf(path, sizeof path, "%s/model-5", f->dir);
  expect_save_refused(f, path, HK_UNSET_STEPS, HK_INVALID_ARGUMENT, "'latest_filename' collides with 'save_path'");
  /* C118: the checkpoint name equals the state file's name */
  snprintf(path, sizeof path, "%s/model", f->dir);
  expect_save_refused(f, path, 5, HK_INVALID_ARGUMENT, "conflicts with path used for checkpoint state");
  /* H32: the name with its step is longer than 255 bytes */
  memset(longname, 'n', 250);
  longname[250] = '\0';
  snprintf(path, sizeof path, "%s/%s", f->dir, longname);
  expect_save_refused(f, path, 123456789, HK_INVALID_ARGUMENT, "not a valid name");
  /* C115: a missing parent is NOT_FOUND and is not created */
  snprintf(missing, sizeof missing, "%s/nodir/model.ckpt", f->dir);
  expect_save_refused(f, missing, 1, HK_NOT_FOUND, "doesn't exist, can't save.");
  snprintf(path, sizeof path, "%s/nodir", f->dir);
  assert_false(test_path_exists(path));
  /* a file where the directory should be */
  snprintf(path, sizeof path, "%s/afile", f->root);
  assert_int_equal(test_write_file(path, "x", 1), 0);
  strcat(path, "/model.ckpt");
  expect_save_refused(f, path, 1, HK_NOT_FOUND, "Parent directory of");

  {
    char *after = listing(f->dir);
    assert_string_equal(before, after);
    free(after);
  }
  free(before);
}

/* ---- retention (D6, C126) ------------------------------------------------------------ */

static void test_saver__max_to_keep_2_over_5_saves_D6_2(void **state) {
  fx *f = *state;
  size_t n;
  const char *const *paths;
  f->saver = make_saver(f, 2, HK_UNSET_SECS);
  for (int64_t s = 1; s <= 5; s++) save_step(f, f->saver, s);
  assert_listing(f->dir, "checkpoint,model.ckpt-4.safetensors,model.ckpt-5.safetensors");
  assert_state(f, "model.ckpt-4,model.ckpt-5");
  paths = hk_saver_checkpoints(f->saver, &n);
  assert_int_equal(n, 2);
  assert_non_null(strstr(paths[0], "/ck/model.ckpt-4"));
  assert_non_null(strstr(paths[1], "/ck/model.ckpt-5"));
  assert_null(hk_saver_checkpoints(NULL, &n));
  assert_int_equal(n, 0);
}

/* H31, D6.2: retention deletes a checkpoint's graph description with it,
 * and the <prefix>.meta an older version wrote for it too. */
static void test_saver__graph_files_deleted_with_checkpoint_H31(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  char *legacy = ckpt_file(f, "model.ckpt-2.meta");
  f->saver = make_saver(f, 1, HK_UNSET_SECS);
  set_values(f, 1);
  assert_ok(hk_saver_save(f->saver, f->rs, f->save_path, 1, HK_SAVE_META, NULL, &st), &st);
  assert_ok(hk_saver_save(f->saver, f->rs, f->save_path, 2, HK_SAVE_META, NULL, &st), &st);
  assert_listing(f->dir, "checkpoint,model.ckpt-2.graph.txt,model.ckpt-2.safetensors");
  assert_int_equal(test_write_file(legacy, "old graph text", 14), 0);
  assert_ok(hk_saver_save(f->saver, f->rs, f->save_path, 3, HK_SAVE_DEFAULT, NULL, &st), &st);
  assert_listing(f->dir, "checkpoint,model.ckpt-3.safetensors");
  free(legacy);
}

static void test_saver__max_to_keep_0_keeps_all_D6_3(void **state) {
  fx *f = *state;
  f->saver = make_saver(f, 0, HK_UNSET_SECS);
  for (int64_t s = 1; s <= 5; s++) save_step(f, f->saver, s);
  assert_listing(f->dir,
                 "checkpoint,model.ckpt-1.safetensors,model.ckpt-2.safetensors,model.ckpt-3.safetensors,"
                 "model.ckpt-4.safetensors,model.ckpt-5.safetensors");
  assert_state(f, "model.ckpt-1,model.ckpt-2,model.ckpt-3,model.ckpt-4,model.ckpt-5");
}

static void test_saver__keep_every_n_hours_preserves_D6_2(void **state) {
  fx *f = *state;
  hk_checkpoint_state *cs = NULL;
  hk_status st = HK_STATUS_INIT;
  double t0 = hk_env_wall(&f->te->env);
  f->saver = make_saver(f, 1, 1.0);
  /* saves every 20 minutes: k = 0..7 at t0 + 1200 k; the first one at least an
   * hour after last_preserved (t0 - 1) is k = 3, the next k = 6 */
  for (int64_t k = 0; k <= 7; k++) {
    save_step(f, f->saver, k);
    test_clock_advance(&f->te->clock, 1200);
  }
  assert_listing(f->dir, "checkpoint,model.ckpt-3.safetensors,model.ckpt-6.safetensors,model.ckpt-7.safetensors");
  assert_ok(hk_get_checkpoint_state(&f->te->env, f->dir, NULL, &cs, &st), &st);
  assert_int_equal(hk_checkpoint_state_count(cs), 1);
  assert_true(hk_checkpoint_state_last_preserved(cs) == t0 + 7200);
  assert_true(hk_checkpoint_state_timestamp(cs, 0) == t0 + 8400);
  hk_checkpoint_state_free(cs);
}

static void test_saver__retention_across_restarts_D6_1(void **state) {
  fx *f = *state;
  hk_saver *a = make_saver(f, 2, HK_UNSET_SECS), *b;
  size_t n;
  for (int64_t s = 1; s <= 3; s++) save_step(f, a, s);
  hk_saver_free(a);
  assert_listing(f->dir, "checkpoint,model.ckpt-2.safetensors,model.ckpt-3.safetensors");
  /* a new Saver continues the list: its first save deletes step 2 */
  b = make_saver(f, 2, HK_UNSET_SECS);
  save_step(f, b, 4);
  assert_listing(f->dir, "checkpoint,model.ckpt-3.safetensors,model.ckpt-4.safetensors");
  assert_state(f, "model.ckpt-3,model.ckpt-4");
  hk_saver_checkpoints(b, &n);
  assert_int_equal(n, 2);
  hk_saver_free(b);
}

static void test_saver__recovery_drops_missing_entries_C122(void **state) {
  fx *f = *state;
  hk_saver *a = make_saver(f, 5, HK_UNSET_SECS), *b;
  hk_status st = HK_STATUS_INIT;
  const char *const *paths;
  size_t n;
  char *gone = ckpt_file(f, "model.ckpt-1.safetensors");
  for (int64_t s = 1; s <= 2; s++) save_step(f, a, s);
  hk_saver_free(a);
  assert_int_equal(unlink(gone), 0);
  free(gone);
  b = make_saver(f, 5, HK_UNSET_SECS);
  assert_ok(hk_saver_recover(b, f->dir, &st), &st);
  paths = hk_saver_checkpoints(b, &n);
  assert_int_equal(n, 1);
  assert_non_null(strstr(paths[0], "model.ckpt-2"));
  save_step(f, b, 3);
  assert_state(f, "model.ckpt-2,model.ckpt-3");
  assert_status(hk_saver_recover(NULL, f->dir, &st), &st, HK_INVALID_ARGUMENT, "saver");
  assert_status(hk_saver_recover(b, NULL, &st), &st, HK_INVALID_ARGUMENT, "dir");
  hk_saver_free(b);
}

static void test_saver__clock_reset_preserves_recovered_D6_1(void **state) {
  fx *f = *state;
  hk_saver *a = make_saver(f, 5, HK_UNSET_SECS), *b;
  hk_status st = HK_STATUS_INIT;
  const char *names[2] = {"model.ckpt-1", "model.ckpt-2"};
  double now = hk_env_wall(&f->te->env);
  double ts[2] = {now - 20, now - 10};
  for (int64_t s = 1; s <= 2; s++) save_step(f, a, s);
  hk_saver_free(a);
  /* a state file whose last_preserved_timestamp is an hour ahead of the clock */
  assert_ok(hk_update_checkpoint_state(&f->te->env, f->dir, "model.ckpt-2", names, 2, ts, now + 3600, NULL, &st), &st);
  b = make_saver(f, 1, HK_UNSET_SECS);
  save_step(f, b, 3);
  assert_logged(f->te, HK_LOG_WARNING, "seconds behind the last preserved checkpoint timestamp.");
  /* the recovered checkpoints count as preserved: kept, no longer listed */
  assert_listing(f->dir, "checkpoint,model.ckpt-1.safetensors,model.ckpt-2.safetensors,model.ckpt-3.safetensors");
  assert_state(f, "model.ckpt-3");
  hk_saver_free(b);
}

static void test_saver__resave_moves_to_end_D6_2(void **state) {
  fx *f = *state;
  f->saver = make_saver(f, 3, HK_UNSET_SECS);
  for (int64_t s = 1; s <= 3; s++) save_step(f, f->saver, s);
  save_step(f, f->saver, 1);
  assert_state(f, "model.ckpt-2,model.ckpt-3,model.ckpt-1");
  save_step(f, f->saver, 4);
  assert_state(f, "model.ckpt-3,model.ckpt-1,model.ckpt-4");
  assert_listing(f->dir, "checkpoint,model.ckpt-1.safetensors,model.ckpt-3.safetensors,model.ckpt-4.safetensors");
}

static void test_saver__no_state_is_unmanaged_C116_D6_4(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  char *statefile = ckpt_file(f, "checkpoint");
  char *before, *after;
  size_t nb, na, n;
  f->saver = make_saver(f, 2, HK_UNSET_SECS);
  for (int64_t s = 1; s <= 2; s++) save_step(f, f->saver, s);
  before = test_read_file(statefile, &nb);
  set_values(f, 10);
  assert_ok(hk_saver_save(f->saver, f->rs, f->save_path, 10, HK_SAVE_NO_STATE, NULL, &st), &st);
  after = test_read_file(statefile, &na);
  assert_int_equal(nb, na);
  assert_memory_equal(before, after, nb);
  hk_saver_checkpoints(f->saver, &n);
  assert_int_equal(n, 2);
  for (int64_t s = 3; s <= 5; s++) save_step(f, f->saver, s);
  assert_listing(f->dir, "checkpoint,model.ckpt-10.safetensors,model.ckpt-4.safetensors,model.ckpt-5.safetensors");
  assert_state(f, "model.ckpt-4,model.ckpt-5");
  free(before);
  free(after);
  free(statefile);
}

/* D6.4, H60: files of other names, and a checkpoint of the managed form
 * older than the oldest one the state file lists (as a preserved one is),
 * are never deleted. */
static void test_saver__unlisted_and_other_files_never_deleted_D6_4(void **state) {
  fx *f = *state;
  const char *others[] = {"model.ckpt-0.safetensors", "notes.txt", "other-1.safetensors", "model.ckpt-9.meta",
                          "checkpoint.bak"};
  f->saver = make_saver(f, 1, HK_UNSET_SECS);
  save_step(f, f->saver, 1);
  for (size_t i = 0; i < 5; i++) {
    char *p = ckpt_file(f, others[i]);
    assert_int_equal(test_write_file(p, "keep", 4), 0);
    free(p);
  }
  hk_saver_free(f->saver);
  f->saver = make_saver(f, 1, HK_UNSET_SECS); /* a restart: its recovery sees them */
  for (int64_t s = 2; s <= 5; s++) save_step(f, f->saver, s);
  assert_listing(f->dir,
                 "checkpoint,checkpoint.bak,model.ckpt-0.safetensors,model.ckpt-5.safetensors,model.ckpt-9.meta,"
                 "notes.txt,other-1.safetensors");
}

static void test_saver__stale_temporaries_removed_D4_2(void **state) {
  fx *f = *state;
  /* today's names, and the names older versions gave the graph descriptions */
  const char *stale[] = {"model.ckpt-3.safetensors.tmp-AbC123", "checkpoint.tmp-zzzzzz", "x.graph.txt.tmp-000000",
                         "graph.txt.tmp-a1B2c3", "x.meta.tmp-000000", "graph.pbtxt.tmp-Zz9Yy8"};
  const char *kept[] = {"notes.txt.tmp-AbC123", "model.ckpt-3.safetensors.tmp-short"};
  for (size_t i = 0; i < 6; i++) {
    char *p = ckpt_file(f, stale[i]);
    assert_int_equal(test_write_file(p, "junk", 4), 0);
    free(p);
  }
  for (size_t i = 0; i < 2; i++) {
    char *p = ckpt_file(f, kept[i]);
    assert_int_equal(test_write_file(p, "junk", 4), 0);
    free(p);
  }
  f->saver = make_saver(f, 5, HK_UNSET_SECS);
  save_step(f, f->saver, 1);
  assert_listing(f->dir, "checkpoint,model.ckpt-1.safetensors,model.ckpt-3.safetensors.tmp-short,notes.txt.tmp-AbC123");
}

/* ---- fault sweep (D4, H9) -------------------------------------------------------------- */

/* A fresh directory holding checkpoint 1 (managed, max_to_keep 1); then a new
 * Saver saves step 2 — with HK_SAVE_META — while call n of the fs fails. */
static void sweep(fx *f, int errnum, hk_code code) {
  hk_status st = HK_STATUS_INIT;
  long n;
  for (n = 0;; n++) {
    hk_saver *a, *b;
    char *before, *prev, *got = NULL;
    hk_code rc;
    char prefix1[1024], prefix2[1024];

    test_tmpdir_remove(f->dir);
    assert_int_equal(mkdir(f->dir, 0755), 0);
    faulty_fs_reset(&f->ff);
    a = make_saver(f, 1, HK_UNSET_SECS);
    save_step(f, a, 1);
    hk_saver_free(a);
    before = listing(f->dir);
    snprintf(prefix1, sizeof prefix1, "%s-1", f->save_path);
    snprintf(prefix2, sizeof prefix2, "%s-2", f->save_path);

    b = make_saver(f, 1, HK_UNSET_SECS);
    set_values(f, 2);
    faulty_fs_fail_errno(&f->ff, FAULTY_FS_ANY, n, errnum, 0);
    rc = hk_saver_save(b, f->rs, f->save_path, 2, HK_SAVE_META, NULL, &st);
    if (faulty_fs_injected(&f->ff) == 0) {
      assert_ok(rc, &st);
      hk_saver_free(b);
      free(before);
      break;
    }
    faulty_fs_reset(&f->ff);
    assert_int_equal(faulty_fs_open_handles(&f->ff), 0);
    assert_int_equal(test_dir_count_matching(f->dir, ".tmp-"), 0);
    prev = rc == HK_OK ? prefix2 : prefix1;
    if (rc != HK_OK) {
      /* the error is H9's mapping, and the directory is exactly as it was */
      assert_status(rc, &st, code, NULL);
      assert_listing(f->dir, before);
    }
    set_values(f, 77);
    assert_ok(hk_saver_restore(b, f->rs, prev, &st), &st);
    assert_values(f, rc == HK_OK ? 2 : 1);
    assert_ok(hk_latest_checkpoint(&f->te->env, f->dir, NULL, &got, &st), &st);
    assert_string_equal(got, prev);
    hk_env_free(&f->te->env, got);
    hk_saver_free(b);
    free(before);
  }
  assert_true(n > 20); /* the sweep did cover the whole write sequence */
}

static void test_saver__fault_sweep_enospc_D4(void **state) {
  fx *f = *state;
  sweep(f, ENOSPC, HK_RESOURCE_EXHAUSTED);
}

static void test_saver__fault_sweep_eio_D4(void **state) {
  fx *f = *state;
  sweep(f, EIO, HK_UNKNOWN);
}

static void test_saver__short_writes_and_full_disk_D4_H9(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  char prefix[1024];
  char *before;
  f->saver = make_saver(f, 1, HK_UNSET_SECS);
  faulty_fs_short_writes(&f->ff, 7);
  save_step(f, f->saver, 1);
  set_values(f, 9);
  snprintf(prefix, sizeof prefix, "%s-1", f->save_path);
  assert_ok(hk_saver_restore(f->saver, f->rs, prefix, &st), &st);
  assert_values(f, 1);

  faulty_fs_reset(&f->ff);
  before = listing(f->dir);
  faulty_fs_space(&f->ff, 100);
  set_values(f, 2);
  assert_status(hk_saver_save(f->saver, f->rs, f->save_path, 2, 0, NULL, &st), &st, HK_RESOURCE_EXHAUSTED, NULL);
  faulty_fs_reset(&f->ff);
  assert_listing(f->dir, before);
  free(before);
  set_values(f, 9);
  assert_ok(hk_saver_restore(f->saver, f->rs, prefix, &st), &st);
  assert_values(f, 1);
}

/* H1: a failed save says that a checkpoint save failed, for which step and
 * where, then the file system's message, with the paths inside it relative
 * to that directory — so the OS's text survives even a long directory. */
static void test_saver__failed_save_names_checkpoint_and_step_H1(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  char want[1200];
  f->saver = make_saver(f, 5, HK_UNSET_SECS);
  set_values(f, 40);
  faulty_fs_fail_errno(&f->ff, FAULTY_FS_WRITE, 0, ENOSPC, 1);
  assert_status(hk_saver_save(f->saver, f->rs, f->save_path, 40, 0, NULL, &st), &st, HK_RESOURCE_EXHAUSTED, NULL);
  snprintf(want, sizeof want, "Saving checkpoint for step 40 into %s failed: write model.ckpt-40.safetensors.tmp-",
           f->save_path);
  if (!strstr(st.message, want)) fail_msg("message '%s' lacks '%s'", st.message, want);
  assert_non_null(strstr(st.message, strerror(ENOSPC)));
  /* without a step: the save path is the checkpoint */
  assert_status(hk_saver_save(f->saver, f->rs, f->save_path, HK_UNSET_STEPS, 0, NULL, &st), &st,
                HK_RESOURCE_EXHAUSTED, NULL);
  snprintf(want, sizeof want, "Saving checkpoint into %s failed: write model.ckpt.safetensors.tmp-", f->save_path);
  if (!strstr(st.message, want)) fail_msg("message '%s' lacks '%s'", st.message, want);
  /* a refused argument is about the save already: unchanged (C115) */
  assert_status(hk_saver_save(f->saver, f->rs, "/nonexistent-dir-9a/x/model.ckpt", 1, 0, NULL, &st), &st,
                HK_NOT_FOUND, "Parent directory of /nonexistent-dir-9a/x/model.ckpt doesn't exist, can't save.");
  assert_status(hk_saver_save(f->saver, f->rs, "bad\"name", 1, 0, NULL, &st), &st, HK_INVALID_ARGUMENT, NULL);
  assert_null(strstr(st.message, "Saving checkpoint"));
  faulty_fs_reset(&f->ff);
  assert_int_equal(test_dir_count_matching(f->dir, ".tmp-"), 0);
}

/* ---- restore errors (C125, H27) ---------------------------------------------------------- */

static void test_saver__restore_errors_C125(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  char path[1024], *data;
  size_t n;
  f->saver = make_saver(f, 5, HK_UNSET_SECS);
  save_step(f, f->saver, 1);
  assert_status(hk_saver_restore(f->saver, f->rs, NULL, &st), &st, HK_INVALID_ARGUMENT,
                "Can't load save_path when it is None.");
  assert_status(hk_saver_restore(NULL, f->rs, "x", &st), &st, HK_INVALID_ARGUMENT, "saver");
  assert_status(hk_saver_restore(f->saver, NULL, "x", &st), &st, HK_INVALID_ARGUMENT, "rs");
  snprintf(path, sizeof path, "%s-9", f->save_path);
  assert_status(hk_saver_restore(f->saver, f->rs, path, &st), &st, HK_NOT_FOUND,
                "The passed save_path is not a valid checkpoint: ");
  assert_non_null(strstr(st.message, "model.ckpt-9"));

  /* truncated: DATA_LOSS naming the file, and nothing crashes */
  snprintf(path, sizeof path, "%s-1.safetensors", f->save_path);
  data = test_read_file(path, &n);
  assert_non_null(data);
  assert_int_equal(test_write_file(path, data, n - 3), 0);
  assert_status(hk_saver_restore(f->saver, f->rs, path, &st), &st, HK_DATA_LOSS, "model.ckpt-1");
  /* a flipped byte in the tensor data: the CRC names the tensor */
  data[n - 1] ^= 0x55;
  assert_int_equal(test_write_file(path, data, n), 0);
  assert_status(hk_saver_restore(f->saver, f->rs, path, &st), &st, HK_DATA_LOSS, "model.ckpt-1");
  free(data);
}

/* ---- restore's two read paths: mapped and read (C125) ----------------------------------------- */

/* Restore through the fs's map when it has one (one mapping of the file,
 * released by the end) and through reads when it has none: the same
 * values either way. */
static void test_saver__restore_mapped_or_read_same_values_C125(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  char prefix[1024];
  f->saver = make_saver(f, 5, HK_UNSET_SECS);
  save_step(f, f->saver, 4);
  snprintf(prefix, sizeof prefix, "%s-4", f->save_path);

  set_values(f, 40);
  faulty_fs_reset(&f->ff);
  assert_ok(hk_saver_restore(f->saver, f->rs, prefix, &st), &st);
  assert_values(f, 4);
  assert_int_equal(faulty_fs_calls(&f->ff, FAULTY_FS_MAP), 1);
  assert_int_equal(faulty_fs_calls(&f->ff, FAULTY_FS_UNMAP), 1);
  assert_int_equal(faulty_fs_open_maps(&f->ff), 0);
  assert_int_equal(faulty_fs_open_handles(&f->ff), 0);

  set_values(f, 41);
  faulty_fs_no_map(&f->ff, 1);
  faulty_fs_reset(&f->ff);
  assert_ok(hk_saver_restore(f->saver, f->rs, prefix, &st), &st);
  assert_values(f, 4);
  assert_int_equal(faulty_fs_calls(&f->ff, FAULTY_FS_MAP), 0);
  assert_true(faulty_fs_calls(&f->ff, FAULTY_FS_READ_AT) > 2); /* header length, header, tensors */
  assert_int_equal(faulty_fs_open_handles(&f->ff), 0);
  faulty_fs_no_map(&f->ff, 1);
}

/* A failing map is no error: restore reads instead (logged at DEBUG
 * naming the file). A failing unmap is logged as a WARNING naming the
 * file, the values are restored and no mapping is left. */
static void test_saver__restore_map_or_unmap_failure_C125_H9(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  char prefix[1024];
  f->saver = make_saver(f, 5, HK_UNSET_SECS);
  save_step(f, f->saver, 5);
  snprintf(prefix, sizeof prefix, "%s-5", f->save_path);

  set_values(f, 50);
  faulty_fs_fail_errno(&f->ff, FAULTY_FS_MAP, 0, ENOMEM, 1);
  assert_ok(hk_saver_restore(f->saver, f->rs, prefix, &st), &st);
  assert_values(f, 5);
  assert_int_equal(faulty_fs_injected(&f->ff), 1);
  assert_true(faulty_fs_calls(&f->ff, FAULTY_FS_READ_AT) > 2);
  assert_logged(f->te, HK_LOG_DEBUG, "instead of mapping it");
  assert_logged(f->te, HK_LOG_DEBUG, "model.ckpt-5.safetensors");

  set_values(f, 51);
  faulty_fs_fail_errno(&f->ff, FAULTY_FS_UNMAP, 0, EIO, 1);
  assert_ok(hk_saver_restore(f->saver, f->rs, prefix, &st), &st);
  assert_values(f, 5);
  assert_int_equal(faulty_fs_injected(&f->ff), 1);
  assert_int_equal(faulty_fs_open_maps(&f->ff), 0);
  assert_int_equal(faulty_fs_open_handles(&f->ff), 0);
  assert_logged(f->te, HK_LOG_WARNING, "Releasing the mapping of checkpoint");
  assert_logged(f->te, HK_LOG_WARNING, "model.ckpt-5.safetensors");
  faulty_fs_reset(&f->ff);
}

/* A graph of one U8 variable "big" of n bytes (more than one 1 MiB read
 * piece), saved with byte k = k * 7 + seed. */
typedef struct big_graph {
  hk_graph *g;
  hk_raw_session *rs;
  hk_saver *saver;
  size_t idx, n;
} big_graph;

static void big_open(fx *f, big_graph *bg, size_t n) {
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_saver_options o = HK_SAVER_OPTIONS_INIT;
  hk_variable_def d = HK_VARIABLE_DEF_INIT;
  hk_status st = HK_STATUS_INIT;
  int64_t dims[1];
  hk_handle h;
  dims[0] = (int64_t)n;
  bg->n = n;
  go.env = &f->te->env;
  assert_ok(hk_graph_new(&bg->g, &go, &st), &st);
  d.name = "big";
  d.dtype = HK_DTYPE_U8;
  d.rank = 1;
  d.dims = dims;
  assert_ok(hk_graph_variable(bg->g, &h, &d, &st), &st);
  assert_ok(hk_raw_session_open(&bg->rs, hk_graph_executor(bg->g), &st), &st);
  assert_ok(hk_executor_find_variable(hk_graph_executor(bg->g), "big", &bg->idx, &st), &st);
  o.executor = hk_graph_executor(bg->g);
  o.env = &f->te->env;
  assert_ok(hk_saver_new(&bg->saver, &o, &st), &st);
}

static void big_set(big_graph *bg, int seed) {
  hk_status st = HK_STATUS_INIT;
  int64_t dims[1];
  hk_tensor t;
  unsigned char *buf = malloc(bg->n);
  assert_non_null(buf);
  dims[0] = (int64_t)bg->n;
  for (size_t k = 0; k < bg->n; k++) buf[k] = (unsigned char)(k * 7 + (size_t)seed);
  assert_ok(hk_tensor_init(&t, HK_DTYPE_U8, 1, dims, buf, &st), &st);
  assert_ok(hk_raw_session_assign_variable(bg->rs, bg->idx, &t, &st), &st);
  free(buf);
}

static int big_is(big_graph *bg, int seed) {
  hk_status st = HK_STATUS_INIT;
  hk_tensor t;
  const unsigned char *p;
  if (hk_raw_session_read_variable(bg->rs, bg->idx, &t, &st) != HK_OK || t.nbytes != bg->n) return 0;
  p = t.data;
  for (size_t k = 0; k < bg->n; k++)
    if (p[k] != (unsigned char)(k * 7 + (size_t)seed)) return 0;
  return 1;
}

static void big_close(big_graph *bg) {
  hk_saver_free(bg->saver);
  hk_raw_session_free(bg->rs);
  hk_graph_free(bg->g);
}

/* A tensor of several read pieces round-trips by both paths, and one
 * flipped byte in its second MiB is DATA_LOSS naming the file and the
 * tensor by both paths (the mapped bytes are checked before they are
 * assigned, the read ones piece by piece). */
static void test_saver__restore_big_tensor_crc_both_paths_C125(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  big_graph bg;
  const char *prefix = NULL;
  char path[1024], *data;
  size_t n;
  big_open(f, &bg, ((size_t)3 << 20) + 5);
  big_set(&bg, 1);
  assert_ok(hk_saver_save(bg.saver, bg.rs, f->save_path, 1, HK_SAVE_DEFAULT, &prefix, &st), &st);
  for (int no_map = 0; no_map < 2; no_map++) {
    faulty_fs_no_map(&f->ff, no_map);
    big_set(&bg, 2);
    assert_ok(hk_saver_restore(bg.saver, bg.rs, prefix, &st), &st);
    assert_true(big_is(&bg, 1));
  }
  snprintf(path, sizeof path, "%s.safetensors", prefix);
  data = test_read_file(path, &n);
  assert_non_null(data);
  data[n - bg.n + ((size_t)3 << 19)] ^= 0x01;
  assert_int_equal(test_write_file(path, data, n), 0);
  free(data);
  for (int no_map = 0; no_map < 2; no_map++) {
    faulty_fs_no_map(&f->ff, no_map);
    faulty_fs_reset(&f->ff);
    assert_status(hk_saver_restore(bg.saver, bg.rs, prefix, &st), &st, HK_DATA_LOSS, "CRC-32C mismatch");
    assert_non_null(strstr(st.message, "'big'"));
    assert_non_null(strstr(st.message, "model.ckpt-1.safetensors"));
    assert_int_equal(faulty_fs_calls(&f->ff, FAULTY_FS_MAP), no_map ? 0 : 1);
    assert_int_equal(faulty_fs_open_maps(&f->ff), 0);
    assert_int_equal(faulty_fs_open_handles(&f->ff), 0);
  }
  faulty_fs_no_map(&f->ff, 0);
  big_close(&bg);
}

/* A restore large enough for two threads (>= 16 MiB, just written, so in
 * the page cache): exact bytes by both paths, and a flipped byte in the
 * middle is DATA_LOSS naming the file and the tensor (H27). */
static void test_saver__restore_two_threads_in_place_C125_H27(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  big_graph bg;
  const char *prefix = NULL;
  char path[1024], *data;
  size_t n;
  big_open(f, &bg, ((size_t)20 << 20) + 333);
  big_set(&bg, 5);
  assert_ok(hk_saver_save(bg.saver, bg.rs, f->save_path, 1, HK_SAVE_DEFAULT, &prefix, &st), &st);
  for (int no_map = 0; no_map < 2; no_map++) {
    faulty_fs_no_map(&f->ff, no_map);
    big_set(&bg, 6);
    test_log_clear(&f->te->log);
    assert_ok(hk_saver_restore(bg.saver, bg.rs, prefix, &st), &st);
    assert_true(big_is(&bg, 5));
    /* mapped and in the page cache (it was just written): two threads */
    assert_int_equal(test_log_count(&f->te->log, HK_LOG_DEBUG, "in place, on two threads"), no_map ? 0 : 1);
  }
  snprintf(path, sizeof path, "%s.safetensors", prefix);
  data = test_read_file(path, &n);
  assert_non_null(data);
  data[n - bg.n + bg.n / 2] ^= 0x20;
  assert_int_equal(test_write_file(path, data, n), 0);
  free(data);
  for (int no_map = 0; no_map < 2; no_map++) {
    faulty_fs_no_map(&f->ff, no_map);
    assert_status(hk_saver_restore(bg.saver, bg.rs, prefix, &st), &st, HK_DATA_LOSS, "CRC-32C mismatch");
    assert_non_null(strstr(st.message, "'big'"));
    assert_non_null(strstr(st.message, "model.ckpt-1.safetensors"));
  }
  faulty_fs_no_map(&f->ff, 0);
  assert_int_equal(faulty_fs_open_maps(&f->ff), 0);
  assert_int_equal(faulty_fs_open_handles(&f->ff), 0);
  big_close(&bg);
}

static int poison_write_at_calls;

static hk_code poison_write_at(void *user, hk_fs_file *f, const void *buf, size_t len, uint64_t offset,
                               size_t *nwritten, hk_status *st) {
  (void)user, (void)f, (void)buf, (void)len, (void)offset, (void)st;
  poison_write_at_calls++;
  *nwritten = 0;
  return HK_INTERNAL;
}

/* Save the big graph's state at `step` with a Saver over env, unmanaged;
 * returns the data file's bytes (malloc) and their count. */
static char *big_save_with(fx *f, big_graph *bg, const hk_env *env, int64_t step, size_t *n) {
  hk_saver_options o = HK_SAVER_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_saver *s = NULL;
  const char *prefix = NULL;
  char path[1024], *bytes;
  o.executor = hk_graph_executor(bg->g);
  o.env = env;
  assert_ok(hk_saver_new(&s, &o, &st), &st);
  assert_ok(hk_saver_save(s, bg->rs, f->save_path, step, HK_SAVE_NO_STATE, &prefix, &st), &st);
  snprintf(path, sizeof path, "%s.safetensors", prefix);
  bytes = test_read_file(path, n);
  assert_non_null(bytes);
  assert_int_equal(unlink(path), 0);
  hk_saver_free(s);
  return bytes;
}

/* checkpoint-format.md: the same variables and step give the same bytes
 * whichever way the file is written: data first with write_at (CRCs on a
 * second thread from 8 MiB on, else while writing), or in order through an
 * fs without write_at; and a version-1 fs vtable is never asked for
 * write_at (H10), whatever follows its last slot. */
static void test_saver__same_bytes_by_every_write_path_D4_H10(void **state) {
  fx *f = *state;
  static const size_t sizes[2] = {(size_t)40 << 10, ((size_t)9 << 20) + 17};
  static hk_fs_vtable append_only, v1;
  for (size_t k = 0; k < 2; k++) {
    big_graph bg;
    hk_env env = f->te->env;
    size_t na = 0, nb = 0, nc = 0;
    char *a, *b, *c;
    big_open(f, &bg, sizes[k]);
    big_set(&bg, 3);
    a = big_save_with(f, &bg, &env, 7, &na); /* faulty_fs: write_at */
    append_only = *faulty_fs_vtable();
    append_only.write_at = NULL;
    env.fs = &append_only;
    b = big_save_with(f, &bg, &env, 7, &nb);
    v1 = *faulty_fs_vtable();
    v1.version = 1;
    v1.write_at = poison_write_at;
    env.fs = &v1;
    poison_write_at_calls = 0;
    c = big_save_with(f, &bg, &env, 7, &nc);
    assert_int_equal(poison_write_at_calls, 0);
    assert_int_equal(na, nb);
    assert_int_equal(na, nc);
    assert_memory_equal(a, b, na);
    assert_memory_equal(a, c, na);
    assert_int_equal((na - sizes[k]) % 64, 0); /* length and padded header, then the data */
    free(a);
    free(b);
    free(c);
    big_close(&bg);
  }
}

/* What a save does to its data file, recorded: every write_at to a
 * ".safetensors" temporary file, and the fsyncs of files and directories. */
typedef struct order_fs {
  hk_fs_file *data; /* the data file's temporary, once created */
  int writes;       /* write_at calls to it */
  uint64_t last_offset;
  size_t last_len;
  uint64_t first_offset;
  int appends; /* write calls to it */
  int syncs, dir_syncs;
} order_fs;

static hk_code of_create_excl(void *user, const char *path, hk_fs_file **out, hk_status *st) {
  order_fs *o = user;
  hk_code rc = hk_fs_posix()->create_excl(NULL, path, out, st);
  if (rc == HK_OK && strstr(path, ".safetensors.tmp-")) o->data = *out;
  return rc;
}
static hk_code of_write(void *user, hk_fs_file *f, const void *buf, size_t len, size_t *n, hk_status *st) {
  order_fs *o = user;
  if (f == o->data) o->appends++;
  return hk_fs_posix()->write(NULL, f, buf, len, n, st);
}
static hk_code of_write_at(void *user, hk_fs_file *f, const void *buf, size_t len, uint64_t offset, size_t *n,
                           hk_status *st) {
  order_fs *o = user;
  if (f == o->data) {
    if (o->writes++ == 0) o->first_offset = offset;
    o->last_offset = offset;
    o->last_len = len;
  }
  return hk_fs_posix()->write_at(NULL, f, buf, len, offset, n, st);
}
static hk_code of_sync(void *user, hk_fs_file *f, hk_status *st) {
  ((order_fs *)user)->syncs++;
  return hk_fs_posix()->sync(NULL, f, st);
}
static hk_code of_close(void *user, hk_fs_file *f, hk_status *st) {
  order_fs *o = user;
  if (f == o->data) o->data = NULL;
  return hk_fs_posix()->close(NULL, f, st);
}
static hk_code of_sync_dir(void *user, const char *path, hk_status *st) {
  ((order_fs *)user)->dir_syncs++;
  return hk_fs_posix()->sync_dir(NULL, path, st);
}

/* D4.1, D4.2: one managed save writes its data file data first (at its
 * final offsets) and its header last, at offset 0, in one write; it makes
 * exactly four fsyncs: the data file, its directory, the state file, its
 * directory. */
static void test_saver__data_first_header_last_and_four_fsyncs_D4(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  static hk_fs_vtable vt;
  order_fs o;
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  hk_saver *s = NULL;
  hk_checkpoint_reader *r = NULL;
  const char *prefix = NULL;
  hk_env env = f->te->env;
  vt = *hk_fs_posix();
  vt.create_excl = of_create_excl;
  vt.write = of_write;
  vt.write_at = of_write_at;
  vt.sync = of_sync;
  vt.close = of_close;
  vt.sync_dir = of_sync_dir;
  memset(&o, 0, sizeof o);
  env.fs = &vt;
  env.fs_user = &o;
  for (size_t i = 0; i < NVARS; i++) set_var(f, var_names[i], 4, i);
  so.executor = f->ex;
  so.env = &env;
  so.max_to_keep = 3;
  assert_ok(hk_saver_new(&s, &so, &st), &st);
  assert_ok(hk_saver_save(s, f->rs, f->save_path, 1, HK_SAVE_DEFAULT, NULL, &st), &st); /* a state file exists */
  memset(&o, 0, sizeof o);
  assert_ok(hk_saver_save(s, f->rs, f->save_path, 2, HK_SAVE_DEFAULT, &prefix, &st), &st);
  assert_int_equal(o.appends, 0);
  assert_true(o.writes >= 2);
  assert_true(o.first_offset > 0); /* the data, first */
  assert_int_equal(o.last_offset, 0);
  assert_int_equal(o.syncs, 2);
  assert_int_equal(o.dir_syncs, 2);
  assert_ok(hk_checkpoint_reader_open(&r, &env, prefix, &st), &st);
  {
    hk_checkpoint_entry e;
    assert_ok(hk_checkpoint_reader_entry(r, 0, &e, &st), &st);
    assert_int_equal(o.last_len, e.offset); /* length and header, exactly what precedes the data */
  }
  assert_ok(hk_checkpoint_reader_verify(r, &st), &st);
  hk_checkpoint_reader_free(r);
  hk_saver_free(s);
}

/* An fs that truncates the data file just before forwarding its first
 * map to POSIX: the file shrinks after the reader opened it. */
typedef struct shrink_fs {
  char path[1024];
  uint64_t keep;
  int maps;
} shrink_fs;

static hk_code sh_open_read(void *user, const char *path, hk_fs_file **out, hk_status *st) {
  shrink_fs *s = user;
  if (strstr(path, ".safetensors")) snprintf(s->path, sizeof s->path, "%s", path);
  return hk_fs_posix()->open_read(NULL, path, out, st);
}
static hk_code sh_create_excl(void *user, const char *path, hk_fs_file **out, hk_status *st) {
  (void)user;
  return hk_fs_posix()->create_excl(NULL, path, out, st);
}
static hk_code sh_read_at(void *user, hk_fs_file *f, void *buf, size_t len, uint64_t offset, size_t *nread,
                          hk_status *st) {
  (void)user;
  return hk_fs_posix()->read_at(NULL, f, buf, len, offset, nread, st);
}
static hk_code sh_write(void *user, hk_fs_file *f, const void *buf, size_t len, size_t *nwritten, hk_status *st) {
  (void)user;
  return hk_fs_posix()->write(NULL, f, buf, len, nwritten, st);
}
static hk_code sh_size(void *user, hk_fs_file *f, uint64_t *size, hk_status *st) {
  (void)user;
  return hk_fs_posix()->size(NULL, f, size, st);
}
static hk_code sh_sync(void *user, hk_fs_file *f, hk_status *st) {
  (void)user;
  return hk_fs_posix()->sync(NULL, f, st);
}
static hk_code sh_close(void *user, hk_fs_file *f, hk_status *st) {
  (void)user;
  return hk_fs_posix()->close(NULL, f, st);
}
static hk_code sh_sync_dir(void *user, const char *path, hk_status *st) {
  (void)user;
  return hk_fs_posix()->sync_dir(NULL, path, st);
}
static hk_code sh_rename(void *user, const char *from, const char *to, hk_status *st) {
  (void)user;
  return hk_fs_posix()->rename(NULL, from, to, st);
}
static hk_code sh_unlink(void *user, const char *path, hk_status *st) {
  (void)user;
  return hk_fs_posix()->unlink(NULL, path, st);
}
static hk_code sh_stat(void *user, const char *path, hk_fs_stat *out, hk_status *st) {
  (void)user;
  return hk_fs_posix()->stat(NULL, path, out, st);
}
static hk_code sh_list(void *user, const char *path, hk_fs_list_fn fn, void *fn_user, hk_status *st) {
  (void)user;
  return hk_fs_posix()->list(NULL, path, fn, fn_user, st);
}
static hk_code sh_mkdir(void *user, const char *path, hk_status *st) {
  (void)user;
  return hk_fs_posix()->mkdir(NULL, path, st);
}
static hk_code sh_map(void *user, hk_fs_file *f, uint64_t offset, size_t len, const void **addr, void **token,
                      hk_status *st) {
  shrink_fs *s = user;
  if (s->maps++ == 0) assert_int_equal(truncate(s->path, (off_t)s->keep), 0);
  return hk_fs_posix()->map(NULL, f, offset, len, addr, token, st);
}
static hk_code sh_unmap(void *user, void *token, hk_status *st) {
  (void)user;
  return hk_fs_posix()->unmap(NULL, token, st);
}

static const hk_fs_vtable shrink_vtable = {
    .version = HK_FS_VTABLE_VERSION,
    .open_read = sh_open_read,
    .create_excl = sh_create_excl,
    .read_at = sh_read_at,
    .write = sh_write,
    .size = sh_size,
    .sync = sh_sync,
    .close = sh_close,
    .sync_dir = sh_sync_dir,
    .rename = sh_rename,
    .unlink = sh_unlink,
    .stat = sh_stat,
    .list = sh_list,
    .mkdir = sh_mkdir,
    .map = sh_map,
    .unmap = sh_unmap,
};

/* A data file that shrinks after the reader opened it is never touched
 * past its end (which would raise SIGBUS): the mapping is refused, the
 * read finds the file short, and restore fails with DATA_LOSS naming the
 * file and the tensor. */
static void test_saver__restore_file_shrunk_after_open_no_sigbus_C125(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  big_graph bg;
  shrink_fs sh;
  const char *prefix = NULL;
  char path[1024];
  size_t n;
  char *data;
  memset(&sh, 0, sizeof sh);
  f->te->env.fs = &shrink_vtable; /* before the Saver copies the env */
  f->te->env.fs_user = &sh;
  big_open(f, &bg, (size_t)1 << 16);
  big_set(&bg, 3);
  assert_ok(hk_saver_save(bg.saver, bg.rs, f->save_path, 2, HK_SAVE_DEFAULT, &prefix, &st), &st);
  snprintf(path, sizeof path, "%s.safetensors", prefix);
  data = test_read_file(path, &n);
  assert_non_null(data);
  free(data);
  sh.keep = n - 8192 - 100; /* two pages and more short of the end */
  big_set(&bg, 4);
  assert_status(hk_saver_restore(bg.saver, bg.rs, prefix, &st), &st, HK_DATA_LOSS, "model.ckpt-2.safetensors");
  assert_non_null(strstr(st.message, "'big'"));
  assert_non_null(strstr(st.message, "the file ends"));
  assert_int_equal(sh.maps, 1);
  assert_true(big_is(&bg, 4)); /* nothing assigned */
  faulty_fs_bind(&f->ff, &f->te->env);
  big_close(&bg);
}

/* A second graph with the same names but one variable changed, restoring
 * the first graph's checkpoint: the error names the variable and nothing
 * is assigned (H27). */
static void mismatch_case(fx *f, const char *prefix, hk_dtype dt, int32_t rank, const int64_t *dims, const char *drop,
                          hk_code code, const char *s1, const char *s2) {
  hk_graph *g;
  hk_executor *ex;
  hk_raw_session *rs;
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_saver_options o = HK_SAVER_OPTIONS_INIT;
  hk_saver *s;
  hk_status st = HK_STATUS_INIT;
  hk_variable_def d = HK_VARIABLE_DEF_INIT;
  static const int64_t b_dims[1] = {4};
  hk_handle h;
  double sentinel[4] = {-1, -1, -1, -1};
  hk_tensor t;
  size_t idx;

  go.env = &f->te->env;
  assert_ok(hk_graph_new(&g, &go, &st), &st);
  ex = hk_graph_executor(g);
  d.name = "b";
  d.dtype = HK_DTYPE_F64;
  d.rank = 1;
  d.dims = b_dims;
  assert_ok(hk_graph_variable(g, &h, &d, &st), &st);
  d.name = "w";
  d.dtype = dt;
  d.rank = rank;
  d.dims = dims;
  assert_ok(hk_graph_variable(g, &h, &d, &st), &st);
  if (drop) {
    d.name = drop;
    d.dtype = HK_DTYPE_I8;
    d.rank = 0;
    d.dims = NULL;
    assert_ok(hk_graph_variable(g, &h, &d, &st), &st);
  }
  assert_ok(hk_raw_session_open(&rs, ex, &st), &st);
  assert_ok(hk_executor_find_variable(ex, "b", &idx, &st), &st);
  assert_ok(hk_tensor_init(&t, HK_DTYPE_F64, 1, b_dims, sentinel, &st), &st);
  assert_ok(hk_raw_session_assign_variable(rs, idx, &t, &st), &st);
  o.executor = ex;
  assert_ok(hk_saver_new(&s, &o, &st), &st);
  assert_status(hk_saver_restore(s, rs, prefix, &st), &st, code, s1);
  if (s2) assert_non_null(strstr(st.message, s2));
  /* "b" comes first and matches, yet it was not assigned */
  assert_ok(hk_raw_session_read_variable(rs, idx, &t, &st), &st);
  assert_true(((double *)t.data)[0] == -1);
  hk_saver_free(s);
  hk_raw_session_free(rs);
  hk_graph_free(g);
}

static void test_saver__restore_model_mismatch_H27(void **state) {
  fx *f = *state;
  static const int64_t w_dims[2] = {2, 3}, w_t[2] = {3, 2};
  char prefix[1024];
  f->saver = make_saver(f, 5, HK_UNSET_SECS);
  save_step(f, f->saver, 1);
  snprintf(prefix, sizeof prefix, "%s-1", f->save_path);
  mismatch_case(f, prefix, HK_DTYPE_F64, 2, w_dims, NULL, HK_INVALID_ARGUMENT, "w", "f64");
  mismatch_case(f, prefix, HK_DTYPE_F64, 2, w_dims, NULL, HK_INVALID_ARGUMENT, "f32", NULL);
  mismatch_case(f, prefix, HK_DTYPE_F32, 2, w_t, NULL, HK_INVALID_ARGUMENT, "[2, 3]", "[3, 2]");
  mismatch_case(f, prefix, HK_DTYPE_F32, 2, w_dims, "zz_missing", HK_NOT_FOUND,
                "Key zz_missing not found in checkpoint", "model.ckpt-1");
}

/* ---- helpers (H34) ---------------------------------------------------------------------- */

static void test_saver__exists_remove_mtimes_H34(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  char p1[1024], p2[1024], p9[1024];
  const char *prefixes[2];
  double mt[2] = {0, 0};
  f->saver = make_saver(f, 5, HK_UNSET_SECS);
  set_values(f, 1);
  assert_ok(hk_saver_save(f->saver, f->rs, f->save_path, 1, HK_SAVE_META, NULL, &st), &st);
  save_step(f, f->saver, 2);
  snprintf(p1, sizeof p1, "%s-1", f->save_path);
  snprintf(p2, sizeof p2, "%s-2", f->save_path);
  snprintf(p9, sizeof p9, "%s-9", f->save_path);
  assert_true(hk_checkpoint_exists(&f->te->env, p1));
  assert_true(hk_checkpoint_exists(NULL, p2));
  assert_false(hk_checkpoint_exists(&f->te->env, p9));
  assert_false(hk_checkpoint_exists(&f->te->env, NULL));
  assert_false(hk_checkpoint_exists(&f->te->env, f->dir)); /* a directory is no checkpoint */

  prefixes[0] = p1;
  prefixes[1] = p2;
  assert_ok(hk_checkpoint_mtimes(&f->te->env, prefixes, 2, mt, &st), &st);
  assert_true(mt[0] > 1e9 && mt[1] > 1e9);
  prefixes[1] = p9;
  assert_status(hk_checkpoint_mtimes(&f->te->env, prefixes, 2, mt, &st), &st, HK_NOT_FOUND, "model.ckpt-9");
  assert_status(hk_checkpoint_mtimes(&f->te->env, NULL, 2, mt, &st), &st, HK_INVALID_ARGUMENT, "prefixes");

  /* H31: with its graph description, and an older version's .meta */
  {
    char *legacy = ckpt_file(f, "model.ckpt-1.meta");
    assert_int_equal(test_write_file(legacy, "old", 3), 0);
    free(legacy);
  }
  assert_listing(f->dir, "checkpoint,model.ckpt-1.graph.txt,model.ckpt-1.meta,model.ckpt-1.safetensors,"
                         "model.ckpt-2.safetensors");
  assert_ok(hk_remove_checkpoint(&f->te->env, p1, &st), &st);
  assert_listing(f->dir, "checkpoint,model.ckpt-2.safetensors");
  assert_status(hk_remove_checkpoint(&f->te->env, p1, &st), &st, HK_NOT_FOUND, "model.ckpt-1");
  /* a lone legacy .meta is still removed */
  {
    char *legacy = ckpt_file(f, "model.ckpt-7.meta");
    char p7[1024];
    snprintf(p7, sizeof p7, "%s-7", f->save_path);
    assert_int_equal(test_write_file(legacy, "old", 3), 0);
    assert_ok(hk_remove_checkpoint(&f->te->env, p7, &st), &st);
    assert_false(test_path_exists(legacy));
    free(legacy);
  }
  assert_status(hk_remove_checkpoint(&f->te->env, NULL, &st), &st, HK_INVALID_ARGUMENT, "prefix");
}

/* ---- OOM loop (H7, house style 22a) -------------------------------------------------------- */

static void test_saver__oom_loop_save_and_restore_H7(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  char prefix[1024];
  long n;
  snprintf(prefix, sizeof prefix, "%s-3", f->save_path);
  for (n = 0;; n++) {
    long live = test_alloc_live(&f->te->alloc);
    hk_saver *s = make_saver(f, 2, HK_UNSET_SECS);
    hk_code rc;
    set_values(f, 3);
    long failed;
    test_alloc_reset_counts(&f->te->alloc);
    test_alloc_fail_at(&f->te->alloc, n, 0);
    rc = hk_saver_save(s, f->rs, f->save_path, 3, HK_SAVE_META, NULL, &st);
    failed = f->te->alloc.nfailed;
    test_alloc_fail_at(&f->te->alloc, -1, 0);
    if (rc != HK_OK) assert_status(rc, &st, HK_RESOURCE_EXHAUSTED, NULL);
    hk_saver_free(s);
    assert_int_equal(test_alloc_live(&f->te->alloc), live);
    if (rc == HK_OK && failed == 0) break;
    assert_int_equal(test_dir_count_matching(f->dir, ".tmp-"), 0);
  }
  assert_true(n > 5);
  for (n = 0;; n++) {
    long live = test_alloc_live(&f->te->alloc);
    hk_saver *s = make_saver(f, 2, HK_UNSET_SECS);
    hk_code rc;
    set_values(f, 8);
    long failed;
    test_alloc_reset_counts(&f->te->alloc);
    test_alloc_fail_at(&f->te->alloc, n, 0);
    rc = hk_saver_restore(s, f->rs, prefix, &st);
    failed = f->te->alloc.nfailed;
    test_alloc_fail_at(&f->te->alloc, -1, 0);
    if (rc != HK_OK) assert_status(rc, &st, HK_RESOURCE_EXHAUSTED, NULL);
    hk_saver_free(s);
    assert_int_equal(test_alloc_live(&f->te->alloc), live);
    if (rc == HK_OK && failed == 0) {
      assert_values(f, 3);
      break;
    }
  }
  assert_true(n > 2);
}

/* ---- D4.3/D4.4: the order of a failed state write's cleanup ---------------------------- */

/*
 * A recording file system: delegates every slot to hk_fs_posix(). When armed
 * it fails the directory fsync that follows the rename of the state file
 * into place, and it checks, at the moment the save unlinks a data file,
 * whether the state file then on disk names that checkpoint.
 */
typedef struct rec_fs {
  const hk_fs_vtable *base;
  char state_path[512];     /* "<dir>/checkpoint" */
  char watch_data[512];     /* data file whose unlink is watched */
  char watch_name[128];     /* "\"<name>\"" as the state file would quote it */
  int armed;                /* fail the sync_dir right after the state rename */
  int state_just_renamed;   /* the last rename targeted the state file */
  int unlinked_while_named; /* the watched data file was unlinked while the state file named it */
  int watched_unlinks;
  int fail_state_create; /* 1: every state temporary's creation fails; 2: only after the armed fault */
} rec_fs;

static rec_fs rfs;

static hk_code r_open_read(void *u, const char *p, hk_fs_file **o, hk_status *st) {
  return ((rec_fs *)u)->base->open_read(NULL, p, o, st);
}
static hk_code r_create_excl(void *u, const char *p, hk_fs_file **o, hk_status *st) {
  rec_fs *r = u;
  size_t n = strlen(r->state_path);
  int state_tmp = strncmp(p, r->state_path, n) == 0 && strncmp(p + n, ".tmp-", 5) == 0;
  if (state_tmp && (r->fail_state_create == 1 || (r->fail_state_create == 2 && !r->armed)))
    return hk_fs_status_from_errno(st, EIO, "create", p);
  return r->base->create_excl(NULL, p, o, st);
}
static hk_code r_read_at(void *u, hk_fs_file *f, void *b, size_t n, uint64_t off, size_t *got, hk_status *st) {
  return ((rec_fs *)u)->base->read_at(NULL, f, b, n, off, got, st);
}
static hk_code r_write(void *u, hk_fs_file *f, const void *b, size_t n, size_t *w, hk_status *st) {
  return ((rec_fs *)u)->base->write(NULL, f, b, n, w, st);
}
static hk_code r_size(void *u, hk_fs_file *f, uint64_t *s, hk_status *st) {
  return ((rec_fs *)u)->base->size(NULL, f, s, st);
}
static hk_code r_sync(void *u, hk_fs_file *f, hk_status *st) { return ((rec_fs *)u)->base->sync(NULL, f, st); }
static hk_code r_close(void *u, hk_fs_file *f, hk_status *st) { return ((rec_fs *)u)->base->close(NULL, f, st); }
static hk_code r_sync_dir(void *u, const char *p, hk_status *st) {
  rec_fs *r = u;
  if (r->armed && r->state_just_renamed) {
    r->armed = 0;
    r->state_just_renamed = 0;
    return hk_fs_status_from_errno(st, EIO, "fsync directory", p);
  }
  r->state_just_renamed = 0;
  return r->base->sync_dir(NULL, p, st);
}
static hk_code r_rename(void *u, const char *from, const char *to, hk_status *st) {
  rec_fs *r = u;
  hk_code rc = r->base->rename(NULL, from, to, st);
  r->state_just_renamed = rc == HK_OK && strcmp(to, r->state_path) == 0;
  return rc;
}
static hk_code r_unlink(void *u, const char *p, hk_status *st) {
  rec_fs *r = u;
  if (r->watch_data[0] && strcmp(p, r->watch_data) == 0) {
    char *text = test_read_file(r->state_path, NULL);
    r->watched_unlinks++;
    if (text && strstr(text, r->watch_name)) r->unlinked_while_named = 1;
    free(text);
  }
  return r->base->unlink(NULL, p, st);
}
static hk_code r_stat(void *u, const char *p, hk_fs_stat *o, hk_status *st) {
  return ((rec_fs *)u)->base->stat(NULL, p, o, st);
}
static hk_code r_list(void *u, const char *p, hk_fs_list_fn fn, void *fu, hk_status *st) {
  return ((rec_fs *)u)->base->list(NULL, p, fn, fu, st);
}
static hk_code r_mkdir(void *u, const char *p, hk_status *st) { return ((rec_fs *)u)->base->mkdir(NULL, p, st); }

static const hk_fs_vtable rec_vtable = {
    HK_FS_VTABLE_VERSION, r_open_read, r_create_excl, r_read_at, r_write, r_size,  r_sync, r_close,
    r_sync_dir,           r_rename,    r_unlink,      r_stat,    r_list,  r_mkdir,
    NULL, NULL, /* map, unmap: optional, not supported */
    NULL,       /* write_at (version 2): optional, not supported */
    NULL, NULL, /* lock, unlock (version 3): optional, not supported */
};

/* Put the recording file system (reset) under f's env, in place of faulty_fs. */
static void use_rec_fs(fx *f) {
  memset(&rfs, 0, sizeof rfs);
  rfs.base = hk_fs_posix();
  snprintf(rfs.state_path, sizeof rfs.state_path, "%s/checkpoint", f->dir);
  f->te->env.fs = &rec_vtable;
  f->te->env.fs_user = &rfs;
}

/*
 * D4.4 ("until the new state file is durable, the previous state file and
 * every checkpoint it names are intact"; "the state file is the previous
 * one or the new one ... and every checkpoint it names exists"). When the
 * directory fsync after the state file's rename fails, the new state file
 * (naming model.ckpt-2) is already in place: the save puts the previous
 * state file back first and removes the new data file only after that
 * (D4.3), never while the state file on disk still names it.
 */
static void test_saver__failed_state_fsync_rolls_back_before_deleting_data_D4_4(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  const char *prefix = NULL;
  use_rec_fs(f);
  set_values(f, 1);
  f->saver = make_saver(f, 5, HK_UNSET_SECS);
  assert_ok(hk_saver_save(f->saver, f->rs, f->save_path, 1, 0, &prefix, &st), &st);

  snprintf(rfs.watch_data, sizeof rfs.watch_data, "%s/model.ckpt-2.safetensors", f->dir);
  snprintf(rfs.watch_name, sizeof rfs.watch_name, "\"model.ckpt-2\"");
  rfs.armed = 1;
  assert_status(hk_saver_save(f->saver, f->rs, f->save_path, 2, 0, &prefix, &st), &st, HK_UNKNOWN, "");
  assert_int_equal(rfs.armed, 0);           /* the fault did fire */
  assert_int_equal(rfs.watched_unlinks, 1); /* D4.3: the new data file is removed */
  /* ... but never while the state file on disk still names it. */
  assert_int_equal(rfs.unlinked_while_named, 0);
}

/* D4.4: when the rollback of the state file fails too, the state file on
 * disk names checkpoint 2, so its files stay: every checkpoint a state
 * file names exists and verifies. */
static void test_saver__failed_rollback_keeps_the_new_checkpoint_D4_4(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  const char *prefix = NULL;
  char *data2, *got = NULL;
  use_rec_fs(f);
  set_values(f, 1);
  f->saver = make_saver(f, 5, HK_UNSET_SECS);
  assert_ok(hk_saver_save(f->saver, f->rs, f->save_path, 1, 0, &prefix, &st), &st);
  data2 = test_path(f->dir, "model.ckpt-2.safetensors");
  snprintf(rfs.watch_data, sizeof rfs.watch_data, "%s", data2);
  snprintf(rfs.watch_name, sizeof rfs.watch_name, "\"model.ckpt-2\"");
  rfs.armed = 1;
  rfs.fail_state_create = 2; /* the rollback's write of the previous state file fails */
  assert_status(hk_saver_save(f->saver, f->rs, f->save_path, 2, 0, &prefix, &st), &st, HK_UNKNOWN, "");
  assert_int_equal(rfs.armed, 0);
  assert_int_equal(rfs.watched_unlinks, 0);
  assert_true(test_path_exists(data2));
  assert_logged(f->te, HK_LOG_WARNING, "its files are kept");
  rfs.fail_state_create = 0;
  assert_ok(hk_latest_checkpoint(&f->te->env, f->dir, NULL, &got, &st), &st);
  assert_non_null(strstr(got, "model.ckpt-2"));
  hk_env_free(&f->te->env, got);
  free(data2);
}

/* D4.3: a save under an existing name whose state write fails keeps the
 * data file it replaced (complete, same step); the save under a new name
 * removes its own. */
static void test_saver__failed_state_write_never_removes_an_existing_file_D4_3(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  const char *prefix = NULL;
  char *data1, *data2;
  use_rec_fs(f);
  set_values(f, 1);
  f->saver = make_saver(f, 5, HK_UNSET_SECS);
  assert_ok(hk_saver_save(f->saver, f->rs, f->save_path, 1, 0, &prefix, &st), &st);
  data1 = test_path(f->dir, "model.ckpt-1.safetensors");
  data2 = test_path(f->dir, "model.ckpt-2.safetensors");
  rfs.fail_state_create = 1;
  assert_status(hk_saver_save(f->saver, f->rs, f->save_path, 1, 0, &prefix, &st), &st, HK_UNKNOWN, "checkpoint");
  assert_true(test_path_exists(data1));
  assert_status(hk_saver_save(f->saver, f->rs, f->save_path, 2, 0, &prefix, &st), &st, HK_UNKNOWN, "checkpoint");
  assert_false(test_path_exists(data2));
  rfs.fail_state_create = 0;
  assert_ok(hk_saver_restore(f->saver, f->rs, data1, &st), &st);
  free(data1);
  free(data2);
}

/* ---- checkpoint-format.md: the writer never writes what its reader refuses ------------- */

/* Give every variable of ex a value in rs (zeros, GS 0). */
static void assign_zeros(hk_executor *ex, hk_raw_session *rs) {
  unsigned char zeros[256];
  hk_status st = HK_STATUS_INIT;
  memset(zeros, 0, sizeof zeros);
  for (size_t i = 0; i < hk_executor_variable_count(ex); i++) {
    hk_variable_info info;
    hk_tensor t;
    assert_ok(hk_executor_variable_info(ex, i, &info, &st), &st);
    assert_ok(hk_tensor_init(&t, info.dtype, info.rank, info.dims, zeros, &st), &st);
    assert_true(t.nbytes <= sizeof zeros);
    assert_ok(hk_raw_session_assign_variable(rs, i, &t, &st), &st);
  }
}

/*
 * checkpoint-format.md ("N bytes: a UTF-8 JSON object"; the reader refuses
 * a header that is not valid UTF-8) together with H32's spirit ("hooked
 * never writes a state file it would refuse to read") and C113/C125: a
 * variable whose name is not valid UTF-8 (any executor but the embedded
 * graph may have "w\xff") never yields a checkpoint that reports success
 * and can never be restored: the save either writes a file that reads back
 * or refuses with INVALID_ARGUMENT.
 */
static void test_saver__non_utf8_variable_name_never_saved_unreadable_C113_C125(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  const char *prefix = NULL;
  hk_executor *ex = NULL;
  hk_raw_session *rs = NULL;
  hk_saver *saver = NULL;
  hk_saver_options so;
  hk_handle gs;
  hk_code rc;
  /* The embedded graph only allows [A-Za-z0-9_./-]; the executor interface
   * allows any name, so a fake executor stands for any other executor. */
  fake_executor *fex = fake_gs_executor(f->te, &ex, &gs);
  fake_executor_add_variable(fex, "w\xff", HK_DTYPE_I32, 0, NULL, HK_VAR_TRAINABLE, NULL);
  assert_ok(hk_raw_session_open(&rs, ex, &st), &st);
  assign_zeros(ex, rs);
  assert_ok(hk_saver_options_init(&so, HK_SAVER_OPTIONS_VERSION), NULL);
  so.env = &f->te->env;
  so.executor = ex;
  assert_ok(hk_saver_new(&saver, &so, &st), &st);
  rc = hk_saver_save(saver, rs, f->save_path, 1, 0, &prefix, &st);
  if (rc == HK_OK) {
    /* Written: then it must read back. */
    rc = hk_saver_restore(saver, rs, prefix, &st);
    if (rc != HK_OK) print_message("restore: %s\n", st.message);
  } else {
    /* Refusing to write it is the other acceptable answer. */
    print_message("save: %s\n", st.message);
    rc = rc == HK_INVALID_ARGUMENT ? HK_OK : rc;
  }
  hk_saver_free(saver);
  hk_raw_session_free(rs);
  fake_executor_free(fex);
  assert_int_equal(rc, HK_OK);
}

/* checkpoint-format.md: the refusal of a name that is not UTF-8 is
 * INVALID_ARGUMENT naming the tensor (its bad byte hex-escaped), and
 * nothing is written. */
static void test_saver__non_utf8_name_refused_before_writing_H32(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_executor *ex = NULL;
  hk_raw_session *rs = NULL;
  hk_saver *saver = NULL;
  hk_saver_options so;
  hk_handle gs;
  fake_executor *fex = fake_gs_executor(f->te, &ex, &gs);
  fake_executor_add_variable(fex, "ok", HK_DTYPE_I32, 0, NULL, HK_VAR_TRAINABLE, NULL);
  fake_executor_add_variable(fex, "b\xc3(", HK_DTYPE_I32, 0, NULL, HK_VAR_TRAINABLE, NULL); /* bad continuation */
  assert_ok(hk_raw_session_open(&rs, ex, &st), &st);
  assign_zeros(ex, rs);
  assert_ok(hk_saver_options_init(&so, HK_SAVER_OPTIONS_VERSION), NULL);
  so.env = &f->te->env;
  so.executor = ex;
  assert_ok(hk_saver_new(&saver, &so, &st), &st);
  assert_status(hk_saver_save(saver, rs, f->save_path, 1, 0, NULL, &st), &st, HK_INVALID_ARGUMENT,
                "tensor name 'b\\xc3(' is not well-formed UTF-8");
  assert_int_equal(test_dir_count(f->dir), 0);
  hk_saver_free(saver);
  hk_raw_session_free(rs);
  fake_executor_free(fex);
}

/* ---- D6.2: preservation arithmetic at the boundary ---------------------------------------- */

/* D6.2: t - hours*3600 >= last_preserved preserves, with equality included;
 * one second short deletes. D6.1: without a state file last_preserved is
 * now - 1 s at recovery. */
static void test_saver__preservation_boundary_is_inclusive_D6_2(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  char *p1, *p2, *p3;
  const double t0 = 1000000.0;
  set_values(f, 1);
  f->te->clock.wall = t0;
  f->saver = make_saver(f, 1, 1.0);
  assert_ok(hk_saver_recover(f->saver, f->dir, &st), &st); /* no state file: last_preserved = t0 - 1 */
  /* Step 1 at t0 + 3599 is exactly one hour after last_preserved. */
  f->te->clock.wall = t0 + 3599;
  assert_ok(hk_saver_save(f->saver, f->rs, f->save_path, 1, 0, NULL, &st), &st);
  f->te->clock.wall = t0 + 3599 + 3599; /* step 2: 1 s short of an hour after step 1 */
  assert_ok(hk_saver_save(f->saver, f->rs, f->save_path, 2, 0, NULL, &st), &st);
  f->te->clock.wall = t0 + 3 * 3600;
  assert_ok(hk_saver_save(f->saver, f->rs, f->save_path, 3, 0, NULL, &st), &st);
  p1 = test_path(f->dir, "model.ckpt-1.safetensors");
  p2 = test_path(f->dir, "model.ckpt-2.safetensors");
  p3 = test_path(f->dir, "model.ckpt-3.safetensors");
  assert_true(test_path_exists(p1));  /* preserved at equality: t0+3599 - 3600 == t0 - 1 */
  assert_false(test_path_exists(p2)); /* 3599 s after the last preserved one: deleted */
  assert_true(test_path_exists(p3));
  free(p1);
  free(p2);
  free(p3);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_saver__round_trip_several_dtypes_C113_C125, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__pad_step_number_C113, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__no_step_records_global_step_C113, setup, teardown),
      cmocka_unit_test(test_saver__no_step_without_gs_records_zero_C113),
      cmocka_unit_test_setup_teardown(test_saver__graph_file_when_asked_C114, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__selected_var_list_C112, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__new_refusals_C112_C115, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__save_refusals_C115_C118_H32, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__max_to_keep_2_over_5_saves_D6_2, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__graph_files_deleted_with_checkpoint_H31, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__max_to_keep_0_keeps_all_D6_3, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__keep_every_n_hours_preserves_D6_2, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__retention_across_restarts_D6_1, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__recovery_drops_missing_entries_C122, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__clock_reset_preserves_recovered_D6_1, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__resave_moves_to_end_D6_2, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__no_state_is_unmanaged_C116_D6_4, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__unlisted_and_other_files_never_deleted_D6_4, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__stale_temporaries_removed_D4_2, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__fault_sweep_enospc_D4, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__fault_sweep_eio_D4, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__short_writes_and_full_disk_D4_H9, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__failed_save_names_checkpoint_and_step_H1, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__restore_errors_C125, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__restore_model_mismatch_H27, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__restore_mapped_or_read_same_values_C125, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__restore_map_or_unmap_failure_C125_H9, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__restore_big_tensor_crc_both_paths_C125, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__restore_file_shrunk_after_open_no_sigbus_C125, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__restore_two_threads_in_place_C125_H27, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__same_bytes_by_every_write_path_D4_H10, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__data_first_header_last_and_four_fsyncs_D4, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__exists_remove_mtimes_H34, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__oom_loop_save_and_restore_H7, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__failed_state_fsync_rolls_back_before_deleting_data_D4_4, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_saver__failed_rollback_keeps_the_new_checkpoint_D4_4, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__failed_state_write_never_removes_an_existing_file_D4_3, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_saver__non_utf8_variable_name_never_saved_unreadable_C113_C125, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_saver__non_utf8_name_refused_before_writing_H32, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__preservation_boundary_is_inclusive_D6_2, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
