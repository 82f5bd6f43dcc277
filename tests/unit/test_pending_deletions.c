/*
 * test_pending_deletions — deletions a crash interrupted are finished (D6.5,
 * D4.2, D4.4): the record "<latest_filename>.pending-deletions" a save
 * writes before the state file that drops checkpoints, how the next save
 * finishes it, what it never deletes (D6.4), malformed and stale records,
 * the fsyncs it costs (D4.1), and its stale temporaries (D4.2 step 1).
 *
 * A crash between the state file and the deletions is played by failing
 * every unlink of one save: the state file is written, the dropped
 * checkpoints and the record stay, exactly what a power loss there leaves.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include <hooked/hooked.h>
#include <hooked/checkpoint.h>
#include <hooked/graph.h>

#include "test_env.h"
#include "tmpdir.h"
#include "ckpt_fixture.h"
#include "faulty_fs.h"

#define RECORD "checkpoint.pending-deletions"
#define MAGIC "# hooked pending checkpoint deletions 1\n"

typedef struct fx {
  test_env *te;
  faulty_fs ff;
  hk_graph *g;
  hk_executor *ex;
  hk_raw_session *rs;
  char *root, *dir, *save_path;
} fx;

static void add_var(fx *f, const char *name, hk_dtype dt, int32_t rank, const int64_t *dims) {
  hk_variable_def d = HK_VARIABLE_DEF_INIT;
  hk_handle h;
  hk_status st = HK_STATUS_INIT;
  d.name = name;
  d.dtype = dt;
  d.rank = rank;
  d.dims = dims;
  assert_ok(hk_graph_variable(f->g, &h, &d, &st), &st);
}

static int setup(void **state) {
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
  add_var(f, "w", HK_DTYPE_F32, 1, w_dims);
  assert_ok(hk_graph_create_global_step(f->g, &h, &st), &st);
  assert_ok(hk_raw_session_open(&f->rs, f->ex, &st), &st);
  ckpt_dir_new("pending", &f->root, &f->dir, &f->save_path);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fx *f = *state;
  hk_raw_session_free(f->rs);
  hk_graph_free(f->g);
  ckpt_dir_free(f->root, f->dir, f->save_path);
  faulty_fs_destroy(&f->ff);
  assert_int_equal(test_env_release(f->te), 0);
  free(f);
  return 0;
}

static void set_step(fx *f, int64_t step) {
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

static void save(fx *f, hk_saver *s, int64_t step, unsigned flags) {
  hk_status st = HK_STATUS_INIT;
  set_step(f, step);
  assert_ok(hk_saver_save(NULL, s, f->rs, f->save_path, step, flags, &st), &st);
}

/* The save of `step` runs as if the machine died right after its state file
 * became durable: no unlink of it happens (deletions, the record's removal). */
static void save_then_crash(fx *f, hk_saver *s, int64_t step) {
  faulty_fs_fail_errno(&f->ff, FAULTY_FS_UNLINK, 0, EIO, 1);
  save(f, s, step, HK_SAVE_DEFAULT);
  faulty_fs_reset(&f->ff);
}

static char *file_in(fx *f, const char *name) { return test_path(f->dir, name); }

static int exists(fx *f, const char *name) {
  char *p = file_in(f, name);
  int yes = test_path_exists(p);
  free(p);
  return yes;
}

static char *read_in(fx *f, const char *name, size_t *n) {
  char *p = file_in(f, name);
  char *text = test_read_file(p, n);
  free(p);
  return text;
}

static void write_in(fx *f, const char *name, const char *text, size_t n) {
  char *p = file_in(f, name);
  assert_int_equal(test_write_file(p, text, n), 0);
  free(p);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The directory's entries, sorted, joined with ','. */
static void assert_listing(fx *f, const char *want) {
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

static void assert_state_lists_only(fx *f, const char *name) {
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
static void write_record_for_current_state(fx *f, const char *const *names, size_t n) {
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

static long syncs(fx *f) {
  return faulty_fs_calls(&f->ff, FAULTY_FS_SYNC) + faulty_fs_calls(&f->ff, FAULTY_FS_SYNC_DIR);
}

/* ---- the crash between the state file and the deletions ------------------------------ */

/* D6.5: deletions a crash interrupted after the state file was written are finished by the next save. */
static void test_pending_deletions__crash_after_state_is_finished_by_next_save(void **state) {
  fx *f = *state;
  hk_saver *a = make_saver(f, 2, HK_UNSET_SECS), *b;
  save(f, a, 1, HK_SAVE_DEFAULT);
  save(f, a, 2, HK_SAVE_DEFAULT);
  save_then_crash(f, a, 3);
  hk_saver_free(a);
  /* What the crash left: the new state file, the dropped checkpoint 1 no
   * longer listed, and the record that names it. */
  assert_listing(f, "checkpoint," RECORD ",model.ckpt-1.safetensors,model.ckpt-2.safetensors,model.ckpt-3.safetensors");

  /* The next process: its first save deletes checkpoint 1 before its own
   * work, then retention drops 2 as usual. */
  b = make_saver(f, 2, HK_UNSET_SECS);
  save(f, b, 4, HK_SAVE_DEFAULT);
  assert_logged(f->te, HK_LOG_INFO, "Deleted checkpoint model.ckpt-1 of ");
  assert_listing(f, "checkpoint,model.ckpt-3.safetensors,model.ckpt-4.safetensors");
  hk_saver_free(b);
}

/* D6.5: a save that writes no state file finishes interrupted deletions too. */
static void test_pending_deletions__finished_by_an_unmanaged_save_too(void **state) {
  fx *f = *state;
  hk_saver *a = make_saver(f, 1, HK_UNSET_SECS), *b;
  save(f, a, 1, HK_SAVE_DEFAULT);
  save_then_crash(f, a, 2);
  hk_saver_free(a);
  /* Any save of a Saver using that state file, one that writes no state
   * file included (C116): the record is finished first. */
  b = make_saver(f, 1, HK_UNSET_SECS);
  save(f, b, 50, HK_SAVE_NO_STATE);
  assert_listing(f, "checkpoint,model.ckpt-2.safetensors,model.ckpt-50.safetensors");
  hk_saver_free(b);
}

static void test_pending_deletions__record_names_the_drops_and_the_state_file(void **state) {
  fx *f = *state;
  hk_saver *a = make_saver(f, 1, HK_UNSET_SECS);
  char want[512], *record, *graph = file_in(f, "model.ckpt-1.graph.txt"), *meta = file_in(f, "model.ckpt-1.meta");
  char *statefile;
  size_t n = 0, sn = 0;
  save(f, a, 1, HK_SAVE_DEFAULT);
  assert_int_equal(test_write_file(graph, "g", 1), 0);
  assert_int_equal(test_write_file(meta, "m", 1), 0);
  save_then_crash(f, a, 2);
  statefile = read_in(f, "checkpoint", &sn);
  record = read_in(f, RECORD, &n);
  assert_non_null(record);
  snprintf(want, sizeof want, MAGIC "state_crc32c: %08" PRIx32 "\ndelete: \"model.ckpt-1\"\n",
           hk_crc32c_extend(0, statefile, sn));
  assert_string_equal(record, want);
  /* The state file holds TensorFlow's fields only. */
  assert_null(strstr(statefile, "pending"));
  assert_null(strstr(statefile, "model.ckpt-1\""));
  /* Finished: the data file and both companions go (H31). */
  save(f, a, 3, HK_SAVE_DEFAULT);
  assert_false(test_path_exists(graph));
  assert_false(test_path_exists(meta));
  assert_listing(f, "checkpoint,model.ckpt-3.safetensors");
  free(record);
  free(statefile);
  free(graph);
  free(meta);
  hk_saver_free(a);
}

/* ---- what it costs (D4.1, D6.5) ---------------------------------------------------------- */

/* D6.5: a save whose retention deletes nothing writes no record and makes no extra fsync. */
static void test_pending_deletions__fsyncs_only_when_retention_deletes(void **state) {
  fx *f = *state;
  hk_saver *a = make_saver(f, 2, HK_UNSET_SECS), *keep_all;
  faulty_fs_reset(&f->ff);
  save(f, a, 1, HK_SAVE_DEFAULT);
  /* data file + its directory, state file + its directory */
  assert_int_equal(syncs(f), 4);
  assert_int_equal(faulty_fs_calls(&f->ff, FAULTY_FS_CREATE_EXCL), 2);
  faulty_fs_reset(&f->ff);
  save(f, a, 2, HK_SAVE_DEFAULT);
  assert_int_equal(syncs(f), 4);
  faulty_fs_reset(&f->ff);
  save(f, a, 3, HK_SAVE_DEFAULT); /* drops 1 */
  /* + the record's file fsync (its name rides on the data file's directory
   * fsync) + the directory fsync after the deletions (as before) */
  assert_int_equal(syncs(f), 4 + 1 + 1);
  assert_int_equal(faulty_fs_calls(&f->ff, FAULTY_FS_CREATE_EXCL), 3);
  assert_false(exists(f, RECORD));
  save_then_crash(f, a, 4); /* drops 2, which stays, recorded */
  faulty_fs_reset(&f->ff);
  /* A record found at the start: + a directory fsync after its deletions
   * and one after its removal; then this save's own retention (drops 3). */
  save(f, a, 5, HK_SAVE_DEFAULT);
  assert_int_equal(syncs(f), 2 + 6);
  assert_listing(f, "checkpoint,model.ckpt-4.safetensors,model.ckpt-5.safetensors");
  /* max_to_keep 0 never deletes, so never records */
  keep_all = make_saver(f, 0, HK_UNSET_SECS);
  faulty_fs_reset(&f->ff);
  save(f, keep_all, 6, HK_SAVE_DEFAULT);
  assert_int_equal(syncs(f), 4);
  assert_int_equal(faulty_fs_calls(&f->ff, FAULTY_FS_CREATE_EXCL), 2);
  hk_saver_free(a);
  hk_saver_free(keep_all);
}

/* ---- what it never deletes (D6.4) ------------------------------------------------------- */

/* D6.4: a record deletes only checkpoint files of names the current state file does not list. */
static void test_pending_deletions__deletes_only_checkpoint_files_of_unlisted_names(void **state) {
  fx *f = *state;
  hk_saver *a = make_saver(f, 5, HK_UNSET_SECS), *b;
  hk_status st = HK_STATUS_INIT;
  const char *names[2] = {"model.ckpt-1", "model.ckpt-2"};
  save(f, a, 1, HK_SAVE_DEFAULT);
  save(f, a, 2, HK_SAVE_DEFAULT);
  save(f, a, 10, HK_SAVE_NO_STATE);
  hk_saver_free(a);
  write_in(f, "model.ckpt-1", "x", 1);
  write_in(f, "model.ckpt-1.txt", "x", 1);
  write_in(f, "model.ckpt-1.safetensors.bak", "x", 1);
  /* The state file lists only checkpoint 2; a record bound to it that
   * names 2 as well (hooked never writes one: defence in depth). */
  assert_ok(hk_checkpoint_state_update(&f->te->env, f->dir, "model.ckpt-2", &names[1], 1, NULL, 0, NULL, &st), &st);
  write_record_for_current_state(f, names, 2);
  b = make_saver(f, 5, HK_UNSET_SECS);
  save(f, b, 3, HK_SAVE_DEFAULT);
  assert_logged(f->te, HK_LOG_WARNING, "Not deleting checkpoint model.ckpt-2 recorded in ");
  assert_listing(f,
                 "checkpoint,model.ckpt-1,model.ckpt-1.safetensors.bak,model.ckpt-1.txt,model.ckpt-10.safetensors,"
                 "model.ckpt-2.safetensors,model.ckpt-3.safetensors");
  hk_saver_free(b);
}

/* D6.5: a record that outlived its save (its removal lost in a crash) meets a
 * checkpoint re-created under a recorded name: bound to a state file that
 * is no longer current, it deletes nothing. */
static void test_pending_deletions__stale_record_spares_recreated_checkpoints(void **state) {
  fx *f = *state;
  hk_saver *a = make_saver(f, 1, HK_UNSET_SECS);
  char *stale;
  size_t n = 0;
  save(f, a, 1, HK_SAVE_DEFAULT);
  save_then_crash(f, a, 2);
  stale = read_in(f, RECORD, &n);
  assert_non_null(stale);
  save(f, a, 3, HK_SAVE_DEFAULT); /* finishes it: checkpoint 1 goes */
  assert_false(exists(f, "model.ckpt-1.safetensors"));
  /* checkpoint 1 again: unmanaged, so protected (D6.4) */
  save(f, a, 1, HK_SAVE_NO_STATE);
  write_in(f, RECORD, stale, n);
  test_log_clear(&f->te->log);
  save(f, a, 4, HK_SAVE_DEFAULT);
  assert_logged(f->te, HK_LOG_INFO, "belong to a state file other than the current");
  assert_true(exists(f, "model.ckpt-1.safetensors"));
  assert_false(exists(f, RECORD));
  /* and re-created as a managed checkpoint, listed */
  write_in(f, RECORD, stale, n);
  save(f, a, 1, HK_SAVE_DEFAULT);
  assert_true(exists(f, "model.ckpt-1.safetensors"));
  free(stale);
  hk_saver_free(a);
}

/* D6.5: a stale record never deletes a checkpoint that has since been preserved. */
static void test_pending_deletions__stale_record_spares_preserved_checkpoints(void **state) {
  fx *f = *state;
  /* max_to_keep 1, one checkpoint preserved per hour */
  hk_saver *a = make_saver(f, 1, 1.0);
  char *stale;
  size_t n = 0;
  save(f, a, 1, HK_SAVE_DEFAULT);
  test_clock_advance(&f->te->clock, 60);
  save_then_crash(f, a, 2); /* 1 goes: not an hour after last_preserved */
  stale = read_in(f, RECORD, &n);
  assert_non_null(strstr(stale, "\"model.ckpt-1\""));
  save(f, a, 3, HK_SAVE_DEFAULT);
  assert_false(exists(f, "model.ckpt-1.safetensors"));
  /* checkpoint 1 again, two hours later: preserved when retention drops it */
  test_clock_advance(&f->te->clock, 7200);
  save(f, a, 1, HK_SAVE_DEFAULT);
  save(f, a, 5, HK_SAVE_DEFAULT);
  assert_true(exists(f, "model.ckpt-1.safetensors")); /* preserved: kept, unlisted */
  assert_state_lists_only(f, "model.ckpt-5");
  write_in(f, RECORD, stale, n);
  save(f, a, 6, HK_SAVE_DEFAULT);
  assert_true(exists(f, "model.ckpt-1.safetensors"));
  free(stale);
  hk_saver_free(a);
}

/* D4.3: when writing the state file fails, the save removes the pending-deletion record it wrote. */
static void test_pending_deletions__failed_state_write_removes_the_record(void **state) {
  fx *f = *state;
  hk_saver *a = make_saver(f, 1, HK_UNSET_SECS);
  hk_status st = HK_STATUS_INIT;
  save(f, a, 1, HK_SAVE_DEFAULT);
  /* The state write of step 2 fails after the record was written: the
   * previous state file stands, and it lists checkpoint 1. */
  faulty_fs_match(&f->ff, "checkpoint.tmp-");
  faulty_fs_fail_errno(&f->ff, FAULTY_FS_CREATE_EXCL, 0, ENOSPC, 1);
  set_step(f, 2);
  assert_status(hk_saver_save(NULL, a, f->rs, f->save_path, 2, HK_SAVE_DEFAULT, &st), &st, HK_RESOURCE_EXHAUSTED,
                "checkpoint.tmp-");
  faulty_fs_reset(&f->ff);
  assert_listing(f, "checkpoint,model.ckpt-1.safetensors");
  hk_saver_free(a);
}

/* ---- malformed and unreadable records ------------------------------------------------- */

/* `tmpl` with every "{CRC}" replaced by crc, into out. */
static size_t fill(char *out, size_t cap, const char *tmpl, const char *crc) {
  size_t n = 0;
  for (const char *p = tmpl; *p && n + 9 < cap;) {
    if (strncmp(p, "{CRC}", 5) == 0) {
      memcpy(out + n, crc, 8);
      n += 8;
      p += 5;
    } else {
      out[n++] = *p++;
    }
  }
  out[n] = '\0';
  return n;
}

/* D6.5: a malformed pending-deletion record is ignored with a warning and deletes nothing. */
static void test_pending_deletions__malformed_record_ignored_with_warning(void **state) {
  fx *f = *state;
  static const char *const bad[] = {
      "",
      "# hooked pending checkpoint deletions 2\nstate_crc32c: {CRC}\ndelete: \"model.ckpt-1\"\n",
      MAGIC "state_crc32c: {CRC}\ndelete: \"model.ckpt-1\"",         /* no final newline */
      MAGIC "state_crc32c: {CRC}\n",                                 /* names nothing */
      MAGIC "state_crc32c: {CRC}\ndelete: \"../ck/model.ckpt-1\"\n", /* not a bare name */
      MAGIC "state_crc32c: {CRC}\ndelete: \"/tmp/model.ckpt-1\"\n",
      MAGIC "state_crc32c: {CRC}\ndelete: \"checkpoint\"\n", /* the state file itself */
      MAGIC "state_crc32c: {CRC}\ndelete: \"model.ckpt-1\"\nrm -rf\n",
      MAGIC "state_crc32c: {CRC}\ndelete: model.ckpt-1\n",
      MAGIC "state_crc32c: {CRC}X\ndelete: \"model.ckpt-1\"\n",
      MAGIC "state_crc32c: DEADBEEF\ndelete: \"model.ckpt-1\"\n", /* uppercase */
      MAGIC "delete: \"model.ckpt-1\"\n",                         /* no CRC line */
      "delete: \"model.ckpt-1\"\n",
  };
  hk_saver *a = make_saver(f, 0, HK_UNSET_SECS);
  save(f, a, 1, HK_SAVE_NO_STATE); /* unlisted, the victim a bad record could name */
  save(f, a, 2, HK_SAVE_DEFAULT);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char text[512], crc[16];
    size_t sn = 0, k;
    char *statefile = read_in(f, "checkpoint", &sn);
    snprintf(crc, sizeof crc, "%08" PRIx32, hk_crc32c_extend(0, statefile, sn));
    free(statefile);
    k = fill(text, sizeof text, bad[i], crc);
    write_in(f, RECORD, text, k);
    test_log_clear(&f->te->log);
    save(f, a, 2, HK_SAVE_DEFAULT); /* the save succeeds */
    if (!test_log_has(&f->te->log, HK_LOG_WARNING, "Ignoring the pending-deletion record "))
      fail_msg("record %zu was not refused: %s", i, text);
    assert_logged(f->te, HK_LOG_WARNING, RECORD);
    assert_true(exists(f, "model.ckpt-1.safetensors"));
    assert_false(exists(f, RECORD));
  }
  /* a NUL byte inside */
  {
    char text[256];
    int k = snprintf(text, sizeof text, MAGIC "state_crc32c: 00000000\ndelete: \"model.ckpt-1\"\n");
    text[k - 3] = '\0';
    write_in(f, RECORD, text, (size_t)k);
    save(f, a, 2, HK_SAVE_DEFAULT);
    assert_logged(f->te, HK_LOG_WARNING, "NUL byte");
    assert_true(exists(f, "model.ckpt-1.safetensors"));
  }
  hk_saver_free(a);
}

static void test_pending_deletions__unreadable_record_fails_the_save_first(void **state) {
  fx *f = *state;
  hk_saver *a = make_saver(f, 1, HK_UNSET_SECS);
  hk_status st = HK_STATUS_INIT;
  save(f, a, 1, HK_SAVE_DEFAULT);
  save_then_crash(f, a, 2);
  /* A record that may be there but cannot be read: the save writes nothing
   * that record could later delete. */
  faulty_fs_match(&f->ff, RECORD);
  faulty_fs_fail_errno(&f->ff, FAULTY_FS_OPEN_READ, 0, EIO, 1);
  set_step(f, 3);
  assert_status(hk_saver_save(NULL, a, f->rs, f->save_path, 3, HK_SAVE_DEFAULT, &st), &st, HK_UNKNOWN,
                "Cannot read the pending-deletion record ");
  assert_non_null(strstr(st.message, RECORD));
  faulty_fs_reset(&f->ff);
  assert_listing(f, "checkpoint," RECORD ",model.ckpt-1.safetensors,model.ckpt-2.safetensors");
  /* and one that cannot be removed */
  faulty_fs_match(&f->ff, RECORD);
  faulty_fs_fail_errno(&f->ff, FAULTY_FS_UNLINK, 0, EACCES, 1);
  assert_status(hk_saver_save(NULL, a, f->rs, f->save_path, 3, HK_SAVE_DEFAULT, &st), &st, HK_PERMISSION_DENIED,
                "Cannot remove the pending-deletion record ");
  faulty_fs_reset(&f->ff);
  assert_false(exists(f, "model.ckpt-3.safetensors"));
  save(f, a, 3, HK_SAVE_DEFAULT);
  assert_listing(f, "checkpoint,model.ckpt-3.safetensors");
  hk_saver_free(a);
}

/* ---- failed saves and temporaries -------------------------------------------------------- */

/* D4.3: a save that fails leaves no pending-deletion record behind. */
static void test_pending_deletions__failed_save_leaves_no_record(void **state) {
  fx *f = *state;
  hk_saver *a = make_saver(f, 1, HK_UNSET_SECS);
  hk_status st = HK_STATUS_INIT;
  save(f, a, 1, HK_SAVE_DEFAULT);
  faulty_fs_match(&f->ff, "model.ckpt-2.safetensors");
  faulty_fs_fail_errno(&f->ff, FAULTY_FS_WRITE, 0, ENOSPC, 1);
  set_step(f, 2);
  assert_status(hk_saver_save(NULL, a, f->rs, f->save_path, 2, HK_SAVE_DEFAULT, &st), &st, HK_RESOURCE_EXHAUSTED, NULL);
  faulty_fs_reset(&f->ff);
  assert_listing(f, "checkpoint,model.ckpt-1.safetensors");
  hk_saver_free(a);
}

/* D4.2: temporary files of a record are removed as stale temporaries, and those of other state files kept. */
static void test_pending_deletions__record_temporaries_are_stale_temporaries(void **state) {
  fx *f = *state;
  hk_saver *a = make_saver(f, 1, HK_UNSET_SECS);
  write_in(f, RECORD ".tmp-AbC123", "junk", 4);
  write_in(f, "other.pending-deletions.tmp-AbC123", "junk", 4); /* not this state file's */
  save(f, a, 1, HK_SAVE_DEFAULT);
  assert_listing(f, "checkpoint,model.ckpt-1.safetensors,other.pending-deletions.tmp-AbC123");
  hk_saver_free(a);
}

/* ---- out of memory (H7) ------------------------------------------------------------------ */

/* H7: an allocation failure while finishing deletions is RESOURCE_EXHAUSTED and loses no listed checkpoint. */
static void test_pending_deletions__allocation_failures_while_finishing_lose_nothing(void **state) {
  fx *f = *state;
  hk_saver *a = make_saver(f, 1, HK_UNSET_SECS);
  hk_status st = HK_STATUS_INIT;
  int saved = 0;
  long n;
  save(f, a, 1, HK_SAVE_DEFAULT);
  save_then_crash(f, a, 2);
  hk_saver_free(a);
  for (n = 0;; n++) {
    hk_code rc;
    long failed;
    a = make_saver(f, 1, HK_UNSET_SECS);
    set_step(f, 3);
    test_alloc_reset_counts(&f->te->alloc);
    test_alloc_fail_at(&f->te->alloc, n, 0);
    rc = hk_saver_save(NULL, a, f->rs, f->save_path, 3, HK_SAVE_DEFAULT, &st);
    failed = f->te->alloc.nfailed;
    test_alloc_fail_at(&f->te->alloc, -1, 0);
    hk_saver_free(a);
    if (failed == 0) {
      assert_ok(rc, &st);
      break;
    }
    if (rc != HK_OK) {
      assert_status(rc, &st, HK_RESOURCE_EXHAUSTED, NULL);
      /* listed until a save of 3 succeeds: never at risk before */
      if (!saved) assert_true(exists(f, "model.ckpt-2.safetensors"));
    }
    saved |= rc == HK_OK;
  }
  assert_true(n > 5);
  assert_listing(f, "checkpoint,model.ckpt-3.safetensors");
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
      T(test_pending_deletions__crash_after_state_is_finished_by_next_save),
      T(test_pending_deletions__finished_by_an_unmanaged_save_too),
      T(test_pending_deletions__record_names_the_drops_and_the_state_file),
      T(test_pending_deletions__fsyncs_only_when_retention_deletes),
      T(test_pending_deletions__deletes_only_checkpoint_files_of_unlisted_names),
      T(test_pending_deletions__stale_record_spares_recreated_checkpoints),
      T(test_pending_deletions__stale_record_spares_preserved_checkpoints),
      T(test_pending_deletions__failed_state_write_removes_the_record),
      T(test_pending_deletions__malformed_record_ignored_with_warning),
      T(test_pending_deletions__unreadable_record_fails_the_save_first),
      T(test_pending_deletions__failed_save_leaves_no_record),
      T(test_pending_deletions__record_temporaries_are_stale_temporaries),
      T(test_pending_deletions__allocation_failures_while_finishing_lose_nothing),
#undef T
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
