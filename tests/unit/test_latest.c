/*
 * test_latest — hk_checkpoint_latest (D5.1, D5.2, C123): fallback past a
 * corrupt or missing newest checkpoint, DATA_LOSS naming every candidate,
 * the directory scan for a missing or malformed state file, and state
 * entries that point outside the directory (H33, D6.4), which are never
 * read or deleted.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
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

typedef struct fx {
  test_env *te;
  faulty_fs ff;
  hk_graph *g;
  hk_executor *ex;
  hk_raw_session *rs;
  hk_saver *saver;
  char *root;
  char *dir;
  char *save_path;
} fx;

static int setup(void **state) {
  static const int64_t dims[1] = {300};
  fx *f = calloc(1, sizeof *f);
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_variable_def d = HK_VARIABLE_DEF_INIT;
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_handle h;
  assert_non_null(f);
  f->te = test_env_new();
  faulty_fs_init(&f->ff);
  faulty_fs_bind(&f->ff, &f->te->env);
  go.env = &f->te->env;
  assert_ok(hk_graph_new(&f->g, &go, &st), &st);
  f->ex = hk_graph_executor(f->g);
  d.name = "v";
  d.dtype = HK_DTYPE_F32;
  d.rank = 1;
  d.dims = dims;
  assert_ok(hk_graph_variable(f->g, &h, &d, &st), &st);
  assert_ok(hk_graph_create_global_step(f->g, &h, &st), &st);
  assert_ok(hk_raw_session_open(&f->rs, f->ex, &st), &st);
  so.executor = f->ex;
  so.max_to_keep = 0;
  assert_ok(hk_saver_new(&f->saver, &so, &st), &st);
  ckpt_dir_new("latest", &f->root, &f->dir, &f->save_path);
  *state = f;
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

static void set_v(fx *f, float x) {
  static const int64_t dims[1] = {300};
  float buf[300];
  hk_tensor t;
  hk_status st = HK_STATUS_INIT;
  size_t idx;
  for (int i = 0; i < 300; i++) buf[i] = x + (float)i;
  assert_ok(hk_executor_find_variable(f->ex, "v", &idx, &st), &st);
  assert_ok(hk_tensor_init(&t, HK_DTYPE_F32, 1, dims, buf, &st), &st);
  assert_ok(hk_raw_session_assign_variable(f->rs, idx, &t, &st), &st);
  {
    int64_t gs = (int64_t)x;
    hk_tensor g = hk_tensor_scalar_i64(&gs);
    assert_ok(hk_executor_find_variable(f->ex, "global_step", &idx, &st), &st);
    assert_ok(hk_raw_session_assign_variable(f->rs, idx, &g, &st), &st);
  }
}

static void save(fx *f, int64_t step, hk_saver *s) {
  hk_status st = HK_STATUS_INIT;
  set_v(f, (float)step);
  assert_ok(hk_saver_save(NULL, s ? s : f->saver, f->rs, f->save_path, step, 0, &st), &st);
}

static char *prefix(fx *f, int64_t step) {
  char buf[1024];
  snprintf(buf, sizeof buf, "%s-%lld", f->save_path, (long long)step);
  return strdup(buf);
}

static char *file_in(const char *dir, const char *name) { return test_path(dir, name); }

/* Flip one byte of the tensor data (the last byte of the file). */
static void corrupt(fx *f, int64_t step) {
  char name[256], *path, *data;
  size_t n;
  snprintf(name, sizeof name, "model.ckpt-%lld.safetensors", (long long)step);
  path = file_in(f->dir, name);
  data = test_read_file(path, &n);
  assert_non_null(data);
  data[n - 1] ^= 0x40;
  assert_int_equal(test_write_file(path, data, n), 0);
  free(data);
  free(path);
}

static void remove_data(fx *f, int64_t step) {
  char name[256], *path;
  snprintf(name, sizeof name, "model.ckpt-%lld.safetensors", (long long)step);
  path = file_in(f->dir, name);
  assert_int_equal(unlink(path), 0);
  free(path);
}

static void write_state_text(fx *f, const char *text) {
  char *path = file_in(f->dir, "checkpoint");
  assert_int_equal(test_write_file(path, text, strlen(text)), 0);
  free(path);
}

static void expect_latest(fx *f, int64_t step) {
  hk_status st = HK_STATUS_INIT;
  char *got = NULL, *want = prefix(f, step);
  assert_ok(hk_checkpoint_latest(&got, &f->te->env, f->dir, NULL, &st), &st);
  assert_string_equal(got, want);
  hk_env_free(&f->te->env, got);
  free(want);
}

/* ---- D5.1 --------------------------------------------------------------------------------- */

/* D5.1: latest_checkpoint returns the model_checkpoint_path of the state file when it verifies. */
static void test_latest__returns_the_newest_listed_checkpoint(void **state) {
  fx *f = *state;
  for (int64_t s = 1; s <= 3; s++) save(f, s, NULL);
  expect_latest(f, 3);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, "missing or corrupt"), 0);
}

/* D5.2: no state file and no checkpoint file in the directory is NOT_FOUND. */
static void test_latest__no_state_file_and_no_checkpoint_is_not_found(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  char *got = (char *)"x";
  /* no state file and no checkpoint: NOT_FOUND, and nothing to warn about */
  assert_status(hk_checkpoint_latest(&got, &f->te->env, f->dir, NULL, &st), &st, HK_NOT_FOUND, NULL);
  assert_null(got);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, ""), 0);
  /* nor a directory that does not exist */
  {
    char *missing = file_in(f->dir, "nowhere");
    got = (char *)"x";
    assert_status(hk_checkpoint_latest(&got, &f->te->env, missing, NULL, &st), &st, HK_NOT_FOUND, NULL);
    assert_null(got);
    free(missing);
  }
  assert_status(hk_checkpoint_latest(&got, &f->te->env, NULL, NULL, &st), &st, HK_INVALID_ARGUMENT, "dir");
  assert_status(hk_checkpoint_latest(NULL, &f->te->env, f->dir, NULL, &st), &st, HK_INVALID_ARGUMENT, "out");
  assert_status(hk_checkpoint_latest(&got, &f->te->env, f->dir, "a/b", &st), &st, HK_INVALID_ARGUMENT,
                "latest_filename");
}

/* D5.2: a state file deleted by hand, checkpoints still there → WARNING
 * naming the directory and the missing state file, then the directory scan
 * of C123: the newest step that verifies, falling back past a corrupt one
 * with D5.1's warning; DATA_LOSS naming each when none verifies. */
static void test_latest__without_a_state_file_the_directory_is_scanned(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  char *got = NULL, *sf = file_in(f->dir, "checkpoint"), line[1200];
  save(f, 9, NULL);
  save(f, 10, NULL);
  save(f, 2, NULL);
  assert_int_equal(unlink(sf), 0);
  expect_latest(f, 10);
  snprintf(line, sizeof line, "The checkpoint state file %s is missing; scanning %s for checkpoints", sf, f->dir);
  assert_logged(f->te, HK_LOG_WARNING, line);
  assert_false(test_path_exists(sf)); /* looking writes nothing */
  corrupt(f, 10);
  expect_latest(f, 9);
  assert_logged(f->te, HK_LOG_WARNING, "model.ckpt-10 is missing or corrupt (");
  assert_logged(f->te, HK_LOG_WARNING, "trying an older one.");
  corrupt(f, 9);
  corrupt(f, 2);
  assert_status(hk_checkpoint_latest(&got, &f->te->env, f->dir, NULL, &st), &st, HK_DATA_LOSS, "model.ckpt-10");
  assert_non_null(strstr(st.message, "model.ckpt-9"));
  assert_non_null(strstr(st.message, "model.ckpt-2"));
  assert_null(got);
  free(sf);
}

/* D5.1: a corrupt newest candidate is skipped for the next newest that verifies. */
static void test_latest__skips_a_corrupt_newest_checkpoint(void **state) {
  fx *f = *state;
  for (int64_t s = 1; s <= 3; s++) save(f, s, NULL);
  corrupt(f, 3);
  expect_latest(f, 2);
  assert_logged(f->te, HK_LOG_WARNING, "model.ckpt-3 is missing or corrupt (");
  assert_logged(f->te, HK_LOG_WARNING, "trying an older one.");
}

/* D5.1: a missing newest candidate is skipped for the next newest that verifies. */
static void test_latest__skips_a_missing_newest_checkpoint(void **state) {
  fx *f = *state;
  for (int64_t s = 1; s <= 3; s++) save(f, s, NULL);
  remove_data(f, 3);
  remove_data(f, 2);
  expect_latest(f, 1);
  assert_logged(f->te, HK_LOG_WARNING, "model.ckpt-3 is missing or corrupt");
  assert_logged(f->te, HK_LOG_WARNING, "model.ckpt-2 is missing or corrupt");
}

/* A safetensors-shaped file: 8-byte little-endian header length, the JSON, the data. */
static void write_raw(const char *path, const char *json, const void *data, size_t n) {
  size_t jl = strlen(json);
  unsigned char *buf = malloc(8 + jl + n + 1);
  assert_non_null(buf);
  for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)jl >> (8 * i));
  memcpy(buf + 8, json, jl);
  if (n) memcpy(buf + 8 + jl, data, n);
  assert_int_equal(test_write_file(path, buf, 8 + jl + n), 0);
  free(buf);
}

/* D5.1/D5.3: a newer-format candidate cannot be verified by this library:
 * it is skipped with D5.1's warning, whose reason names the format. */
static void test_latest__newer_format_candidate_is_skipped(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  static const char *const names[] = {"model.ckpt-1", "model.ckpt-2"};
  char *path = file_in(f->dir, "model.ckpt-2.safetensors");
  unsigned char data[4] = {0};
  save(f, 1, NULL);
  write_raw(path, "{\"__metadata__\":{\"format\":\"hooked/2\"},\"w\":{\"layout\":\"new\"}}", data, sizeof data);
  assert_ok(hk_checkpoint_state_update(&f->te->env, f->dir, names[1], names, 2, NULL, 0, NULL, &st), &st);
  expect_latest(f, 1);
  assert_logged(f->te, HK_LOG_WARNING, "model.ckpt-2 is missing or corrupt (Checkpoint");
  assert_logged(f->te, HK_LOG_WARNING, "\"hooked/2\", newer than this library reads");
  free(path);
}

/* D5.2: when every candidate fails to verify, DATA_LOSS names each of them. */
static void test_latest__all_candidates_corrupt_is_data_loss_naming_each(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  char *got = NULL;
  for (int64_t s = 1; s <= 3; s++) save(f, s, NULL);
  corrupt(f, 1);
  corrupt(f, 2);
  remove_data(f, 3);
  assert_status(hk_checkpoint_latest(&got, &f->te->env, f->dir, NULL, &st), &st, HK_DATA_LOSS, "model.ckpt-3");
  assert_non_null(strstr(st.message, "model.ckpt-2"));
  assert_non_null(strstr(st.message, "model.ckpt-1"));
  assert_null(got);
}

/* A directory whose path is about `len` bytes long, below f->root. */
static char *long_dir(fx *f, size_t len) {
  char part[121], *dir = strdup(f->root);
  memset(part, 'd', 120);
  part[120] = '\0';
  while (strlen(dir) + 1 + 120 < len) {
    char *next = test_path(dir, part);
    free(dir);
    dir = next;
    assert_int_equal(mkdir(dir, 0755), 0);
  }
  {
    size_t k = len - strlen(dir) - 1;
    char *next;
    part[k] = '\0';
    next = test_path(dir, part);
    free(dir);
    dir = next;
    assert_int_equal(mkdir(dir, 0755), 0);
  }
  return dir;
}

/* n corrupt checkpoints model.ckpt-1..n in dir, all listed. */
static void corrupt_checkpoints_in(fx *f, const char *dir, int64_t n) {
  hk_status st = HK_STATUS_INIT;
  char *save_path = test_path(dir, "model.ckpt");
  hk_saver *s;
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  so.executor = f->ex;
  so.max_to_keep = 0;
  assert_ok(hk_saver_new(&s, &so, &st), &st);
  for (int64_t k = 1; k <= n; k++) {
    char name[64], *path, *data;
    size_t len;
    set_v(f, (float)k);
    assert_ok(hk_saver_save(NULL, s, f->rs, save_path, k, 0, &st), &st);
    snprintf(name, sizeof name, "model.ckpt-%lld.safetensors", (long long)k);
    path = test_path(dir, name);
    data = test_read_file(path, &len);
    data[len - 1] ^= 0x40;
    assert_int_equal(test_write_file(path, data, len), 0);
    free(data);
    free(path);
  }
  hk_saver_free(s);
  free(save_path);
}

/* D5.2: the DATA_LOSS names every candidate even under a long directory:
 * the directory once, each candidate by its name in it, newest first, each
 * with (a share of) its reason — all within the 512-byte status. */
static void test_latest__all_corrupt_in_a_long_directory_still_names_every_candidate(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  char *dir = long_dir(f, 300), *got = NULL;
  const char *at;
  assert_int_equal(strlen(dir), 300);
  corrupt_checkpoints_in(f, dir, 5);
  assert_status(hk_checkpoint_latest(&got, &f->te->env, dir, NULL, &st), &st, HK_DATA_LOSS, "No checkpoint in ");
  assert_null(got);
  assert_true(strlen(st.message) < HK_STATUS_MESSAGE_MAX);
  at = st.message;
  for (int64_t k = 5; k >= 1; k--) {
    char name[64];
    snprintf(name, sizeof name, "model.ckpt-%lld (", (long long)k);
    at = strstr(at, name);
    if (!at) fail_msg("'%s' is not named (after the newer ones) in: %s", name, st.message);
  }
  assert_non_null(strstr(st.message, dir + 300 - 40));               /* the directory, by its end at least */
  assert_non_null(strstr(st.message, " verifies: model.ckpt-5 (c")); /* a reason, not just a name */
  free(dir);
}

/* D5.2: so many candidates that their names alone overflow the status: as many
 * as fit, newest first, then how many more there are. */
static void test_latest__all_corrupt_with_too_many_to_name_says_how_many(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  char *dir = long_dir(f, 300), *got = NULL, *more;
  size_t named = 0, rest = 0;
  corrupt_checkpoints_in(f, dir, 40);
  assert_status(hk_checkpoint_latest(&got, &f->te->env, dir, NULL, &st), &st, HK_DATA_LOSS, "model.ckpt-40");
  for (const char *p = strstr(st.message, "model.ckpt-"); p; p = strstr(p + 1, "model.ckpt-")) named++;
  more = strstr(st.message, "; and ");
  assert_non_null(more);
  assert_int_equal(sscanf(more, "; and %zu more", &rest), 1);
  assert_int_equal(named + rest, 40);
  assert_true(named >= 10);
  free(dir);
}

/* ---- C123: malformed state file → scan ------------------------------------------------------ */

/* C123: a malformed state file is ignored with a warning and the directory scanned for the newest step. */
static void test_latest__a_malformed_state_file_scans_for_the_newest_step(void **state) {
  fx *f = *state;
  save(f, 9, NULL);
  save(f, 10, NULL);
  save(f, 2, NULL);
  write_state_text(f, "this is not a state file\n");
  expect_latest(f, 10); /* numerically newest, not the last written or bytewise last */
  assert_logged(f->te, HK_LOG_WARNING, "checkpoint");
  corrupt(f, 10);
  expect_latest(f, 9);
  assert_logged(f->te, HK_LOG_WARNING, "model.ckpt-10 is missing or corrupt");
}

/* C123: a malformed state file in a directory without a checkpoint file is NOT_FOUND. */
static void test_latest__a_malformed_state_file_and_no_checkpoint_is_not_found(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  char *got = NULL, *other = file_in(f->dir, "notes-1.txt");
  assert_int_equal(test_write_file(other, "x", 1), 0);
  write_state_text(f, "model_checkpoint_path: \"unterminated\n");
  assert_status(hk_checkpoint_latest(&got, &f->te->env, f->dir, NULL, &st), &st, HK_NOT_FOUND, NULL);
  assert_null(got);
  free(other);
}

/* C123: a state file that cannot be read is treated as malformed: the directory is scanned. */
static void test_latest__an_unreadable_state_file_scans_the_directory(void **state) {
  fx *f = *state;
  save(f, 4, NULL);
  save(f, 5, NULL);
  faulty_fs_match(&f->ff, "/checkpoint");
  faulty_fs_fail_errno(&f->ff, FAULTY_FS_ANY, 0, EIO, 1);
  expect_latest(f, 5);
  assert_true(faulty_fs_injected(&f->ff) > 0);
  faulty_fs_reset(&f->ff);
  faulty_fs_match(&f->ff, NULL);
}

/* ---- H33, D6.4: entries outside the directory ------------------------------------------------ */

static void copy_file(const char *from, const char *to) {
  size_t n;
  char *data = test_read_file(from, &n);
  assert_non_null(data);
  assert_int_equal(test_write_file(to, data, n), 0);
  free(data);
}

/* H33, D6.4: state-file entries that are not bare names are refused, never read or deleted. */
static void test_latest__state_entries_outside_the_directory_are_refused(void **state) {
  fx *f = *state;
  char text[4096], *good, *decoy_up, *decoy_abs, *decoy_sub, *subdir, *abs_prefix;
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  hk_saver *s;
  hk_status st = HK_STATUS_INIT;

  save(f, 1, NULL);
  good = file_in(f->dir, "model.ckpt-1.safetensors");
  /* decoys that are valid checkpoints, so reading one would "succeed" */
  decoy_up = file_in(f->root, "decoyx.safetensors");
  decoy_abs = file_in(f->root, "decoyabs.safetensors");
  subdir = file_in(f->dir, "a");
  assert_int_equal(mkdir(subdir, 0755), 0);
  decoy_sub = file_in(subdir, "decoyb.safetensors");
  copy_file(good, decoy_up);
  copy_file(good, decoy_abs);
  copy_file(good, decoy_sub);
  abs_prefix = file_in(f->root, "decoyabs");
  snprintf(text, sizeof text,
           "model_checkpoint_path: \"../decoyx\"\n"
           "all_model_checkpoint_paths: \"model.ckpt-1\"\n"
           "all_model_checkpoint_paths: \"/etc/passwd\"\n"
           "all_model_checkpoint_paths: \"%s\"\n"
           "all_model_checkpoint_paths: \"a/decoyb\"\n"
           "all_model_checkpoint_paths: \"../decoyx\"\n",
           abs_prefix);
  write_state_text(f, text);

  /* any fs call on a decoy path fails and is counted */
  faulty_fs_match(&f->ff, "decoy");
  faulty_fs_fail_errno(&f->ff, FAULTY_FS_ANY, 0, EIO, 1);
  faulty_fs_match(&f->ff, "decoy");
  expect_latest(f, 1);
  assert_logged(f->te, HK_LOG_WARNING, "Ignoring checkpoint state entry");
  assert_logged(f->te, HK_LOG_WARNING, "/etc/passwd");
  assert_logged(f->te, HK_LOG_WARNING, "a/decoyb");

  /* a retention pass over that state file: a Saver keeping one checkpoint */
  so.executor = f->ex;
  so.max_to_keep = 1;
  assert_ok(hk_saver_new(&s, &so, &st), &st);
  save(f, 2, s);
  save(f, 3, s);
  hk_saver_free(s);
  assert_int_equal(faulty_fs_injected(&f->ff), 0); /* no decoy was ever touched */
  faulty_fs_reset(&f->ff);
  faulty_fs_match(&f->ff, NULL);
  assert_true(test_path_exists(decoy_up));
  assert_true(test_path_exists(decoy_abs));
  assert_true(test_path_exists(decoy_sub));
  assert_true(test_path_exists("/etc/passwd"));
  expect_latest(f, 3);

  free(good);
  free(decoy_up);
  free(decoy_abs);
  free(decoy_sub);
  free(subdir);
  free(abs_prefix);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_latest__returns_the_newest_listed_checkpoint, setup, teardown),
      cmocka_unit_test_setup_teardown(test_latest__no_state_file_and_no_checkpoint_is_not_found, setup, teardown),
      cmocka_unit_test_setup_teardown(test_latest__without_a_state_file_the_directory_is_scanned, setup, teardown),
      cmocka_unit_test_setup_teardown(test_latest__skips_a_corrupt_newest_checkpoint, setup, teardown),
      cmocka_unit_test_setup_teardown(test_latest__skips_a_missing_newest_checkpoint, setup, teardown),
      cmocka_unit_test_setup_teardown(test_latest__newer_format_candidate_is_skipped, setup, teardown),
      cmocka_unit_test_setup_teardown(test_latest__all_candidates_corrupt_is_data_loss_naming_each, setup, teardown),
      cmocka_unit_test_setup_teardown(test_latest__all_corrupt_in_a_long_directory_still_names_every_candidate, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_latest__all_corrupt_with_too_many_to_name_says_how_many, setup, teardown),
      cmocka_unit_test_setup_teardown(test_latest__a_malformed_state_file_scans_for_the_newest_step, setup, teardown),
      cmocka_unit_test_setup_teardown(test_latest__a_malformed_state_file_and_no_checkpoint_is_not_found, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_latest__an_unreadable_state_file_scans_the_directory, setup, teardown),
      cmocka_unit_test_setup_teardown(test_latest__state_entries_outside_the_directory_are_refused, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
