/*
 * test_saver — faults (D4, H9, H7): fault sweeps over the write sequence,
 * the order of a failed state write's cleanup (D4.3, D4.4), and an OOM
 * loop.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "saver_tests.h"

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
    rc = hk_saver_save(NULL, b, f->rs, f->save_path, 2, HK_SAVE_META, &st);
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
    assert_ok(hk_checkpoint_latest(&got, &f->te->env, f->dir, NULL, &st), &st);
    assert_string_equal(got, prev);
    hk_env_free(&f->te->env, got);
    hk_saver_free(b);
    free(before);
  }
  assert_true(n > 20); /* the sweep did cover the whole write sequence */
}

/* D4: a full disk at any file-system call of a save fails it and leaves the previous checkpoints and state file
 * whole. */
static void test_saver__a_full_disk_at_any_call_leaves_the_old_checkpoints(void **state) {
  fx *f = *state;
  sweep(f, ENOSPC, HK_RESOURCE_EXHAUSTED);
}

/* D4: an I/O error at any file-system call of a save fails it and leaves the previous checkpoints and state file
 * whole. */
static void test_saver__an_io_error_at_any_call_leaves_the_old_checkpoints(void **state) {
  fx *f = *state;
  sweep(f, EIO, HK_UNKNOWN);
}

/* D4, H9: short writes are written again until complete, and a full disk is RESOURCE_EXHAUSTED. */
static void test_saver__short_writes_are_completed_and_a_full_disk_reported(void **state) {
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
  assert_status(hk_saver_save(NULL, f->saver, f->rs, f->save_path, 2, 0, &st), &st, HK_RESOURCE_EXHAUSTED, NULL);
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
static void test_saver__failed_save_names_checkpoint_and_step(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  char want[1200];
  f->saver = make_saver(f, 5, HK_UNSET_SECS);
  set_values(f, 40);
  faulty_fs_fail_errno(&f->ff, FAULTY_FS_WRITE, 0, ENOSPC, 1);
  assert_status(hk_saver_save(NULL, f->saver, f->rs, f->save_path, 40, 0, &st), &st, HK_RESOURCE_EXHAUSTED, NULL);
  snprintf(want, sizeof want, "Saving checkpoint for step 40 into %s failed: write model.ckpt-40.safetensors.tmp-",
           f->save_path);
  if (!strstr(st.message, want)) fail_msg("message '%s' lacks '%s'", st.message, want);
  assert_non_null(strstr(st.message, strerror(ENOSPC)));
  /* without a step: the save path is the checkpoint */
  assert_status(hk_saver_save(NULL, f->saver, f->rs, f->save_path, HK_UNSET_STEPS, 0, &st), &st, HK_RESOURCE_EXHAUSTED,
                NULL);
  snprintf(want, sizeof want, "Saving checkpoint into %s failed: write model.ckpt.safetensors.tmp-", f->save_path);
  if (!strstr(st.message, want)) fail_msg("message '%s' lacks '%s'", st.message, want);
  /* a refused argument is about the save already: unchanged (C115) */
  assert_status(hk_saver_save(NULL, f->saver, f->rs, "/nonexistent-dir-9a/x/model.ckpt", 1, 0, &st), &st, HK_NOT_FOUND,
                "Parent directory of /nonexistent-dir-9a/x/model.ckpt doesn't exist, can't save.");
  assert_status(hk_saver_save(NULL, f->saver, f->rs, "bad\"name", 1, 0, &st), &st, HK_INVALID_ARGUMENT, NULL);
  assert_null(strstr(st.message, "Saving checkpoint"));
  faulty_fs_reset(&f->ff);
  assert_int_equal(test_dir_count_matching(f->dir, ".tmp-"), 0);
}

/* ---- OOM loop: allocation N fails, for N = 0, 1, 2, ... until the call succeeds (H7) ------------ */

/* H7: every allocation failure in save and restore is RESOURCE_EXHAUSTED and leaks nothing. */
static void test_saver__allocation_failures_in_save_and_restore_leak_nothing(void **state) {
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
    rc = hk_saver_save(NULL, s, f->rs, f->save_path, 3, HK_SAVE_META, &st);
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
    HK_FS_VTABLE_VERSION,
    r_open_read,
    r_create_excl,
    r_read_at,
    r_write,
    r_size,
    r_sync,
    r_close,
    r_sync_dir,
    r_rename,
    r_unlink,
    r_stat,
    r_list,
    r_mkdir,
    NULL,
    NULL, /* map, unmap: optional, not supported */
    NULL, /* write_at (version 2): optional, not supported */
    NULL,
    NULL, /* lock, unlock (version 3): optional, not supported */
    NULL, /* write_at_v (version 4): optional, not supported */
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
static void test_saver__failed_state_fsync_rolls_back_before_deleting_data(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  const char *prefix = NULL;
  use_rec_fs(f);
  set_values(f, 1);
  f->saver = make_saver(f, 5, HK_UNSET_SECS);
  assert_ok(hk_saver_save(&prefix, f->saver, f->rs, f->save_path, 1, 0, &st), &st);

  snprintf(rfs.watch_data, sizeof rfs.watch_data, "%s/model.ckpt-2.safetensors", f->dir);
  snprintf(rfs.watch_name, sizeof rfs.watch_name, "\"model.ckpt-2\"");
  rfs.armed = 1;
  assert_status(hk_saver_save(&prefix, f->saver, f->rs, f->save_path, 2, 0, &st), &st, HK_UNKNOWN, "");
  assert_int_equal(rfs.armed, 0);           /* the fault did fire */
  assert_int_equal(rfs.watched_unlinks, 1); /* D4.3: the new data file is removed */
  /* ... but never while the state file on disk still names it. */
  assert_int_equal(rfs.unlinked_while_named, 0);
}

/* D4.4: when the rollback of the state file fails too, the state file on
 * disk names checkpoint 2, so its files stay: every checkpoint a state
 * file names exists and verifies. */
static void test_saver__failed_rollback_keeps_the_new_checkpoint(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  const char *prefix = NULL;
  char *data2, *got = NULL;
  use_rec_fs(f);
  set_values(f, 1);
  f->saver = make_saver(f, 5, HK_UNSET_SECS);
  assert_ok(hk_saver_save(&prefix, f->saver, f->rs, f->save_path, 1, 0, &st), &st);
  data2 = test_path(f->dir, "model.ckpt-2.safetensors");
  snprintf(rfs.watch_data, sizeof rfs.watch_data, "%s", data2);
  snprintf(rfs.watch_name, sizeof rfs.watch_name, "\"model.ckpt-2\"");
  rfs.armed = 1;
  rfs.fail_state_create = 2; /* the rollback's write of the previous state file fails */
  assert_status(hk_saver_save(&prefix, f->saver, f->rs, f->save_path, 2, 0, &st), &st, HK_UNKNOWN, "");
  assert_int_equal(rfs.armed, 0);
  assert_int_equal(rfs.watched_unlinks, 0);
  assert_true(test_path_exists(data2));
  assert_logged(f->te, HK_LOG_WARNING, "its files are kept");
  rfs.fail_state_create = 0;
  assert_ok(hk_checkpoint_latest(&got, &f->te->env, f->dir, NULL, &st), &st);
  assert_non_null(strstr(got, "model.ckpt-2"));
  hk_env_free(&f->te->env, got);
  free(data2);
}

/* D4.3: a save under an existing name whose state write fails keeps the
 * data file it replaced (complete, same step); the save under a new name
 * removes its own. */
static void test_saver__failed_state_write_never_removes_an_existing_file(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  const char *prefix = NULL;
  char *data1, *data2;
  use_rec_fs(f);
  set_values(f, 1);
  f->saver = make_saver(f, 5, HK_UNSET_SECS);
  assert_ok(hk_saver_save(&prefix, f->saver, f->rs, f->save_path, 1, 0, &st), &st);
  data1 = test_path(f->dir, "model.ckpt-1.safetensors");
  data2 = test_path(f->dir, "model.ckpt-2.safetensors");
  rfs.fail_state_create = 1;
  assert_status(hk_saver_save(&prefix, f->saver, f->rs, f->save_path, 1, 0, &st), &st, HK_UNKNOWN, "checkpoint");
  assert_true(test_path_exists(data1));
  assert_status(hk_saver_save(&prefix, f->saver, f->rs, f->save_path, 2, 0, &st), &st, HK_UNKNOWN, "checkpoint");
  assert_false(test_path_exists(data2));
  rfs.fail_state_create = 0;
  assert_ok(hk_saver_restore(f->saver, f->rs, data1, &st), &st);
  free(data1);
  free(data2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_saver__a_full_disk_at_any_call_leaves_the_old_checkpoints, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__an_io_error_at_any_call_leaves_the_old_checkpoints, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__short_writes_are_completed_and_a_full_disk_reported, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__failed_save_names_checkpoint_and_step, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__allocation_failures_in_save_and_restore_leak_nothing, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_saver__failed_state_fsync_rolls_back_before_deleting_data, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__failed_rollback_keeps_the_new_checkpoint, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__failed_state_write_never_removes_an_existing_file, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
