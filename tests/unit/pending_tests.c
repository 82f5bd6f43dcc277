/*
 * What the pending-deletion test programs share (pending_tests.h).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "pending_tests.h"
#include "graph_fixture.h"

int setup(void **state) {
  static const int64_t w_dims[1] = {3};
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
  graph_fixture_variable(f->g, "w", HK_DTYPE_F32, 1, w_dims);
  assert_ok(hk_graph_create_global_step(f->g, &h, &st), &st);
  assert_ok(hk_raw_session_open(&f->rs, f->ex, &st), &st);
  ckpt_dir_new("pending", &f->root, &f->dir, &f->save_path);
  *state = f;
  return 0;
}

int teardown(void **state) {
  fx *f = *state;
  hk_raw_session_free(f->rs);
  hk_graph_free(f->g);
  ckpt_dir_free(f->root, f->dir, f->save_path);
  faulty_fs_destroy(&f->ff);
  assert_int_equal(test_env_release(f->te), 0);
  free(f);
  return 0;
}

void set_step(fx *f, int64_t step) {
  hk_status st = HK_STATUS_INIT;
  size_t idx;
  hk_tensor t;
  float w[3] = {(float)step, (float)step + 0.5f, -(float)step};
  static const int64_t w_dims[1] = {3};
  assert_ok(hk_executor_find_variable(f->ex, "w", &idx, &st), &st);
  assert_ok(hk_tensor_init(&t, HK_DTYPE_F32, 1, w_dims, w, &st), &st);
  assert_ok(hk_raw_session_assign_variable(f->rs, idx, &t, &st), &st);
  assert_ok(hk_executor_find_variable(f->ex, "global_step", &idx, &st), &st);
  assert_ok(hk_tensor_init(&t, HK_DTYPE_I64, 0, NULL, &step, &st), &st);
  assert_ok(hk_raw_session_assign_variable(f->rs, idx, &t, &st), &st);
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

void save(fx *f, hk_saver *s, int64_t step, unsigned flags) {
  hk_status st = HK_STATUS_INIT;
  set_step(f, step);
  assert_ok(hk_saver_save(NULL, s, f->rs, f->save_path, step, flags, &st), &st);
}

/* The save of `step` runs as if the machine died right after its state file
 * became durable: no unlink of it happens (deletions, the record's removal). */
void save_then_crash(fx *f, hk_saver *s, int64_t step) {
  faulty_fs_fail_errno(&f->ff, FAULTY_FS_UNLINK, 0, EIO, 1);
  save(f, s, step, HK_SAVE_DEFAULT);
  faulty_fs_reset(&f->ff);
}

char *file_in(fx *f, const char *name) { return test_path(f->dir, name); }

int exists(fx *f, const char *name) {
  char *p = file_in(f, name);
  int yes = test_path_exists(p);
  free(p);
  return yes;
}

char *read_in(fx *f, const char *name, size_t *n) {
  char *p = file_in(f, name);
  char *text = test_read_file(p, n);
  free(p);
  return text;
}

void write_in(fx *f, const char *name, const char *text, size_t n) {
  char *p = file_in(f, name);
  assert_int_equal(test_write_file(p, text, n), 0);
  free(p);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The directory's entries, sorted, joined with ','. */
void assert_listing(fx *f, const char *want) {
  DIR *d = opendir(f->dir);
  struct dirent *e;
  char *names[64];
  char got[4096] = "";
  size_t n = 0;
  assert_non_null(d);
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    assert_true(n < 64);
    names[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, n, sizeof names[0], cmp_str);
  for (size_t i = 0; i < n; i++) {
    if (i) strcat(got, ",");
    strcat(got, names[i]);
    free(names[i]);
  }
  if (strcmp(got, want) != 0) fail_msg("directory holds\n  %s\nexpected\n  %s", got, want);
}

void assert_state_lists_only(fx *f, const char *name) {
  size_t n = 0;
  char *text = read_in(f, "checkpoint", &n);
  char want[256];
  assert_non_null(text);
  const char *body = strchr(text, '\n') + 1; /* after the checksum line (C117) */
  assert_true(strncmp(text, "# hooked-crc32c: ", 17) == 0);
  snprintf(want, sizeof want, "model_checkpoint_path: \"%s\"\nall_model_checkpoint_paths: \"%s\"\n", name, name);
  assert_true(strncmp(body, want, strlen(want)) == 0);
  assert_null(strstr(body + strlen(want), "all_model_checkpoint_paths"));
  free(text);
}

/* A record bound to the state file as it is now (its CRC-32C). */
void write_record_for_current_state(fx *f, const char *const *names, size_t n) {
  size_t len = 0;
  char *state = read_in(f, "checkpoint", &len);
  char text[2048];
  int k;
  assert_non_null(state);
  k = snprintf(text, sizeof text, MAGIC "state_crc32c: %08" PRIx32 "\n", hk_crc32c_extend(0, state, len));
  for (size_t i = 0; i < n; i++) k += snprintf(text + k, sizeof text - (size_t)k, "delete: \"%s\"\n", names[i]);
  write_in(f, RECORD, text, (size_t)k);
  free(state);
}

/* The names the state file records as pending deletions, in order,
 * joined with ','. */
void recorded(fx *f, char *out, size_t cap) {
  static const char key[] = "# hooked-pending-deletion: \"";
  size_t n = 0;
  char *text = read_in(f, "checkpoint", &n);
  assert_non_null(text);
  out[0] = '\0';
  for (char *line = strchr(text, '\n') + 1; *line; line = strchr(line, '\n') + 1) {
    if (strncmp(line, key, sizeof key - 1) != 0) break;
    if (out[0]) strncat(out, ",", cap - strlen(out) - 1);
    strncat(out, line + sizeof key - 1, (size_t)(strchr(line, '\n') - 1 - (line + sizeof key - 1)));
  }
  free(text);
}

/* What an earlier version left where save_then_crash() leaves the state
 * file recording names: the same state file without those lines (its
 * checksum line recomputed) and the record naming them. */
void as_an_earlier_version_left_it(fx *f) {
  static const char key[] = "# hooked-pending-deletion: \"";
  size_t n = 0, k = 0;
  char *text = read_in(f, "checkpoint", &n), *body, *out;
  const char *names[8];
  char copy[8][64];
  size_t nn = 0;
  assert_non_null(text);
  body = strchr(text, '\n') + 1;
  while (strncmp(body, key, sizeof key - 1) == 0) {
    char *end = strchr(body, '\n');
    assert_true(nn < 8);
    snprintf(copy[nn], sizeof copy[nn], "%.*s", (int)(end - 1 - (body + sizeof key - 1)), body + sizeof key - 1);
    names[nn] = copy[nn];
    nn++;
    body = end + 1;
  }
  assert_true(nn > 0);
  out = malloc(n + 32);
  assert_non_null(out);
  k = (size_t)sprintf(out, "# hooked-crc32c: %08" PRIx32 "\n", hk_crc32c_extend(0, body, strlen(body)));
  memcpy(out + k, body, strlen(body));
  write_in(f, "checkpoint", out, k + strlen(body));
  write_record_for_current_state(f, names, nn);
  free(out);
  free(text);
}

long syncs(fx *f) { return faulty_fs_calls(&f->ff, FAULTY_FS_SYNC) + faulty_fs_calls(&f->ff, FAULTY_FS_SYNC_DIR); }
