/*
 * What the saver test programs share (saver_tests.h).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "saver_tests.h"

/* The saved variables, in creation order; "loc" is local and never saved. */
const char *const var_names[NVARS] = {"w", "b", "i", "bytes", "flags", "global_step"};

void add_var(fx *f, const char *name, hk_dtype dt, int32_t rank, const int64_t *dims, uint32_t flags) {
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

fx *fx_build(int with_gs) {
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

int setup(void **state) {
  *state = fx_build(1);
  return 0;
}

int teardown(void **state) {
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
unsigned char pattern(int seed, size_t v, size_t k) { return (unsigned char)(seed * 31 + (int)v * 7 + (int)k); }

/* Byte k of variable v of dtype dt: the pattern, a bool's 0 or 1, and a
 * float's exponent never all ones (its top bit clear), since a checkpoint
 * refuses NaN and infinities (H59). */
unsigned char value_byte(int seed, size_t v, size_t k, hk_dtype dt) {
  unsigned char b = pattern(seed, v, k);
  if (dt == HK_DTYPE_BOOL) b &= 1;
  if ((dt == HK_DTYPE_F32 && k % 4 == 3) || (dt == HK_DTYPE_F64 && k % 8 == 7)) b &= 0xbf;
  return b;
}

void set_var(fx *f, const char *name, int seed, size_t v) {
  hk_status st = HK_STATUS_INIT;
  size_t idx;
  hk_variable_info info;
  hk_tensor t;
  unsigned char buf[256];
  assert_ok(hk_executor_find_variable(f->ex, name, &idx, &st), &st);
  assert_ok(hk_executor_variable_info(&info, f->ex, idx, &st), &st);
  assert_ok(hk_tensor_init(&t, info.dtype, info.rank, info.dims, buf, &st), &st);
  assert_true(t.nbytes <= sizeof buf);
  for (size_t k = 0; k < t.nbytes; k++) buf[k] = value_byte(seed, v, k, info.dtype);
  if (strcmp(name, "global_step") == 0) {
    int64_t gs = seed;
    memcpy(buf, &gs, sizeof gs);
  }
  assert_ok(hk_raw_session_assign_variable(f->rs, idx, &t, &st), &st);
}

void set_values(fx *f, int seed) {
  for (size_t v = 0; v < NVARS; v++) {
    if (strcmp(var_names[v], "global_step") == 0 && hk_executor_find_variable(f->ex, "global_step", &(size_t){0}, NULL))
      continue;
    set_var(f, var_names[v], seed, v);
  }
  set_var(f, "loc", seed, 99);
}

/* nonzero when variable `name` holds seed's values */
int var_is(fx *f, const char *name, int seed, size_t v) {
  hk_status st = HK_STATUS_INIT;
  size_t idx;
  hk_tensor t;
  const unsigned char *p;
  if (hk_executor_find_variable(f->ex, name, &idx, &st) != HK_OK) return 1; /* absent in this graph */
  if (hk_raw_session_read_variable(&t, f->rs, idx, &st) != HK_OK) return 0;
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

void assert_values(fx *f, int seed) {
  for (size_t v = 0; v < NVARS; v++) assert_true(var_is(f, var_names[v], seed, v));
}

hk_saver *make_saver(fx *f, int64_t max_to_keep, double hours) {
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

void save_step(fx *f, hk_saver *s, int64_t step) {
  hk_status st = HK_STATUS_INIT;
  set_values(f, (int)step);
  assert_ok(hk_saver_save(NULL, s, f->rs, f->save_path, step, HK_SAVE_DEFAULT, &st), &st);
}

int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The directory's entries, sorted, joined with ','. malloc'd. */
char *listing(const char *dir) {
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

void assert_listing(const char *dir, const char *want) {
  char *got = listing(dir);
  if (strcmp(got, want) != 0) fprintf(stderr, "directory %s holds: %s\n  expected: %s\n", dir, got, want);
  assert_string_equal(got, want);
  free(got);
}

/* The state file's bare names, joined with ','. */
void assert_state(fx *f, const char *want) {
  hk_checkpoint_state *cs = NULL;
  hk_status st = HK_STATUS_INIT;
  char got[1024] = "";
  assert_ok(hk_checkpoint_state_get(&cs, &f->te->env, f->dir, NULL, &st), &st);
  for (size_t i = 0; i < hk_checkpoint_state_count(cs); i++) {
    const char *p = hk_checkpoint_state_path(cs, i);
    const char *slash = strrchr(p, '/');
    if (i) strcat(got, ",");
    strcat(got, slash ? slash + 1 : p);
  }
  hk_checkpoint_state_free(cs);
  assert_string_equal(got, want);
}

char *ckpt_file(fx *f, const char *name) {
  char buf[1024];
  snprintf(buf, sizeof buf, "%s/%s", f->dir, name);
  return strdup(buf);
}

char *saved_bytes(fx *f, hk_executor *ex, hk_raw_session *rs, const hk_env *env, int64_t step, size_t *n) {
  hk_saver_options o = HK_SAVER_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_saver *s = NULL;
  const char *prefix = NULL;
  char path[1024], *bytes;
  o.executor = ex;
  o.env = env;
  assert_ok(hk_saver_new(&s, &o, &st), &st);
  assert_ok(hk_saver_save(&prefix, s, rs, f->save_path, step, HK_SAVE_NO_STATE, &st), &st);
  snprintf(path, sizeof path, "%s.safetensors", prefix);
  bytes = test_read_file(path, n);
  assert_non_null(bytes);
  assert_int_equal(unlink(path), 0);
  hk_saver_free(s);
  return bytes;
}
