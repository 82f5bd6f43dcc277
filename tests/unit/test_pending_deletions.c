/*
 * test_pending_deletions — deletions a crash may have undone are finished
 * (D6.5, D4.2, D4.4): a save whose retention deletes checkpoints records
 * them in the state file that stops listing them (pending-deletion lines,
 * checkpoint-format.md), unlinks their files with no directory fsync of its
 * own, and the next save deletes whatever is still there before its own
 * work; what the lines never delete (D6.4), what they cost (4 fsyncs per
 * save, D4.2), a re-save of a recorded name, failed deletions, malformed
 * lines, and hk_checkpoint_state_update() keeping them.
 *
 * A crash between the state file and the deletions is played by failing
 * every unlink of one save: the state file is written, the dropped
 * checkpoints stay, exactly what a power loss there leaves (the unlinks not
 * durable). test_crash explores the real power-loss states.
 */
#include "pending_tests.h"

/* A state file of `body` (its lines after the checksum line), with the
 * checksum line hooked writes. */
static void write_state(fx *f, const char *body) {
  char text[2048];
  int k =
      snprintf(text, sizeof text, "# hooked-crc32c: %08" PRIx32 "\n%s", hk_crc32c_extend(0, body, strlen(body)), body);
  write_in(f, "checkpoint", text, (size_t)k);
}

static void assert_recorded(fx *f, const char *want) {
  char got[512];
  recorded(f, got, sizeof got);
  if (strcmp(got, want) != 0) fail_msg("the state file records \"%s\", expected \"%s\"", got, want);
}

/* ---- the crash between the state file and the deletions ------------------------------ */

/* D6.5: deletions a crash undid after the state file was written are finished by the next save. */
static void test_pending_deletions__crash_after_state_is_finished_by_next_save(void **state) {
  fx *f = *state;
  hk_saver *a = make_saver(f, 2, HK_UNSET_SECS), *b;
  save(f, a, 1, HK_SAVE_DEFAULT);
  save(f, a, 2, HK_SAVE_DEFAULT);
  save_then_crash(f, a, 3);
  hk_saver_free(a);
  /* What the crash left: the new state file, which records checkpoint 1,
   * no longer listed, still there. */
  assert_listing(f, "checkpoint,model.ckpt-1.safetensors,model.ckpt-2.safetensors,model.ckpt-3.safetensors");
  assert_recorded(f, "model.ckpt-1");
  /* The next process: its first save deletes checkpoint 1 before its own
   * work, then retention drops 2 as usual, and records only 2. */
  b = make_saver(f, 2, HK_UNSET_SECS);
  save(f, b, 4, HK_SAVE_DEFAULT);
  assert_logged(f->te, HK_LOG_INFO, "Deleted checkpoint model.ckpt-1 of ");
  assert_listing(f, "checkpoint,model.ckpt-3.safetensors,model.ckpt-4.safetensors");
  assert_recorded(f, "model.ckpt-2");
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

/* D6.5, C117: the state file that drops a checkpoint records it right after
 * its checksum line, which covers it; no other file is written, and the
 * next save deletes the data file and both companions (H31). */
static void test_pending_deletions__state_file_records_the_drops(void **state) {
  fx *f = *state;
  hk_saver *a = make_saver(f, 1, HK_UNSET_SECS);
  char *graph = file_in(f, "model.ckpt-1.graph.txt"), *meta = file_in(f, "model.ckpt-1.meta"), *statefile;
  const char *body;
  size_t sn = 0;
  save(f, a, 1, HK_SAVE_DEFAULT);
  assert_int_equal(test_write_file(graph, "g", 1), 0);
  assert_int_equal(test_write_file(meta, "m", 1), 0);
  save_then_crash(f, a, 2);
  statefile = read_in(f, "checkpoint", &sn);
  body = strchr(statefile, '\n') + 1;
  assert_true(strncmp(body,
                      "# hooked-pending-deletion: \"model.ckpt-1\"\nmodel_checkpoint_path: \"model.ckpt-2\"\n"
                      "all_model_checkpoint_paths: \"model.ckpt-2\"\n",
                      strlen("# hooked-pending-deletion: \"model.ckpt-1\"\nmodel_checkpoint_path: \"model.ckpt-2\"\n"
                             "all_model_checkpoint_paths: \"model.ckpt-2\"\n")) == 0);
  assert_false(exists(f, RECORD));
  save(f, a, 3, HK_SAVE_DEFAULT);
  assert_false(test_path_exists(graph));
  assert_false(test_path_exists(meta));
  assert_listing(f, "checkpoint,model.ckpt-3.safetensors");
  assert_recorded(f, "model.ckpt-2");
  free(statefile);
  free(graph);
  free(meta);
  hk_saver_free(a);
}

/* ---- what it costs (D4.2) ---------------------------------------------------------------- */

/* D4.2, D6.2: in steady state with max_to_keep 5 every save costs exactly 4
 * fsyncs (data file and directory, state file and directory), deletion
 * included; the deleted checkpoint's files are gone when the save returns,
 * and the state file records that one alone. */
static void test_pending_deletions__steady_retention_costs_four_fsyncs_per_save(void **state) {
  fx *f = *state;
  hk_saver *a = make_saver(f, 5, HK_UNSET_SECS);
  for (int64_t step = 1; step <= 40; step++) {
    char dropped[64];
    faulty_fs_reset(&f->ff);
    save(f, a, step, HK_SAVE_DEFAULT);
    assert_int_equal(syncs(f), 4);
    assert_int_equal(faulty_fs_calls(&f->ff, FAULTY_FS_CREATE_EXCL), 2);
    if (step <= 5) {
      assert_recorded(f, "");
      continue;
    }
    snprintf(dropped, sizeof dropped, "model.ckpt-%" PRId64 ".safetensors", step - 5);
    assert_false(exists(f, dropped));
    snprintf(dropped, sizeof dropped, "model.ckpt-%" PRId64, step - 5);
    assert_recorded(f, dropped);
  }
  hk_saver_free(a);
}

/* D4.2: finishing recorded deletions costs no fsync of its own; nor does a
 * Saver that never deletes (max_to_keep 0). */
static void test_pending_deletions__finishing_deletions_costs_no_fsync(void **state) {
  fx *f = *state;
  hk_saver *a = make_saver(f, 2, HK_UNSET_SECS), *keep_all;
  save(f, a, 1, HK_SAVE_DEFAULT);
  save(f, a, 2, HK_SAVE_DEFAULT);
  save_then_crash(f, a, 3); /* drops 1, which stays, recorded */
  faulty_fs_reset(&f->ff);
  save(f, a, 4, HK_SAVE_DEFAULT); /* deletes 1, drops 2 */
  assert_int_equal(syncs(f), 4);
  assert_listing(f, "checkpoint,model.ckpt-3.safetensors,model.ckpt-4.safetensors");
  keep_all = make_saver(f, 0, HK_UNSET_SECS);
  faulty_fs_reset(&f->ff);
  save(f, keep_all, 5, HK_SAVE_DEFAULT);
  assert_int_equal(syncs(f), 4);
  assert_recorded(f, ""); /* 2's deletion was made durable by this save's data file commit */
  hk_saver_free(a);
  hk_saver_free(keep_all);
}

/* ---- deletions that fail, names saved again ------------------------------------------------- */

/* D6.5: a recorded deletion that fails stays recorded by the next state
 * file, is never adopted (H60), and the save after deletes it. */
static void test_pending_deletions__a_failed_deletion_stays_recorded(void **state) {
  fx *f = *state;
  hk_saver *a = make_saver(f, 2, HK_UNSET_SECS), *b;
  save(f, a, 1, HK_SAVE_DEFAULT);
  save(f, a, 2, HK_SAVE_DEFAULT);
  save(f, a, 3, HK_SAVE_DEFAULT); /* drops 1 */
  save_then_crash(f, a, 4);       /* drops 2, which stays */
  hk_saver_free(a);
  /* A fresh Saver (which recovers and adopts) cannot delete 2 this time. */
  b = make_saver(f, 2, HK_UNSET_SECS);
  faulty_fs_match(&f->ff, "model.ckpt-2.safetensors");
  faulty_fs_fail_errno(&f->ff, FAULTY_FS_UNLINK, 0, EACCES, 1);
  save(f, b, 5, HK_SAVE_DEFAULT); /* drops 3 */
  faulty_fs_reset(&f->ff);
  assert_logged(f->te, HK_LOG_WARNING, "model.ckpt-2.safetensors");
  assert_recorded(f, "model.ckpt-3,model.ckpt-2");
  assert_listing(f, "checkpoint,model.ckpt-2.safetensors,model.ckpt-4.safetensors,model.ckpt-5.safetensors");
  save(f, b, 6, HK_SAVE_DEFAULT);
  assert_listing(f, "checkpoint,model.ckpt-5.safetensors,model.ckpt-6.safetensors");
  assert_recorded(f, "model.ckpt-4");
  hk_saver_free(b);
}

/* D6.5, D4.5: a save under a name the state file records (a restart saving
 * an old step again) first deletes the old files and rewrites the state
 * file without the record (one directory fsync and the state file's two),
 * so the new checkpoint is never deleted because of it — with or without
 * the state file. */
static void test_pending_deletions__re_saving_a_recorded_name_stops_recording_it_first(void **state) {
  fx *f = *state;
  hk_saver *a = make_saver(f, 1, HK_UNSET_SECS), *b;
  save(f, a, 1, HK_SAVE_DEFAULT);
  save_then_crash(f, a, 2); /* drops 1, which stays, recorded */
  hk_saver_free(a);
  b = make_saver(f, 1, HK_UNSET_SECS);
  faulty_fs_reset(&f->ff);
  save(f, b, 1, HK_SAVE_NO_STATE);
  assert_int_equal(syncs(f), 2 + 3);
  assert_recorded(f, "");
  assert_state_lists_only(f, "model.ckpt-2");
  save(f, b, 3, HK_SAVE_DEFAULT); /* drops 2; 1 is not its to delete */
  assert_listing(f, "checkpoint,model.ckpt-1.safetensors,model.ckpt-3.safetensors");
  hk_saver_free(b);
  /* A managed re-save: listed again. */
  a = make_saver(f, 2, HK_UNSET_SECS);
  save(f, a, 4, HK_SAVE_DEFAULT);
  save_then_crash(f, a, 5); /* drops 3 */
  assert_recorded(f, "model.ckpt-3");
  save(f, a, 3, HK_SAVE_DEFAULT); /* drops 4 */
  assert_recorded(f, "model.ckpt-4");
  assert_true(exists(f, "model.ckpt-3.safetensors"));
  save(f, a, 6, HK_SAVE_DEFAULT); /* drops 5 */
  assert_listing(f, "checkpoint,model.ckpt-1.safetensors,model.ckpt-3.safetensors,model.ckpt-6.safetensors");
  hk_saver_free(a);
}

/* ---- what they never delete (D6.4), malformed lines ------------------------------------- */

/* D6.4: recorded names delete only "<name>.safetensors" and its companions,
 * never a name the state file lists. */
static void test_pending_deletions__deletes_only_checkpoint_files_of_unlisted_names(void **state) {
  fx *f = *state;
  hk_saver *a = make_saver(f, 5, HK_UNSET_SECS);
  save(f, a, 1, HK_SAVE_DEFAULT);
  save(f, a, 2, HK_SAVE_DEFAULT);
  hk_saver_free(a);
  write_in(f, "model.ckpt-1", "x", 1);
  write_in(f, "model.ckpt-1.txt", "x", 1);
  write_in(f, "model.ckpt-1.safetensors.bak", "x", 1);
  /* hooked never records a listed name: defence in depth */
  write_state(f,
              "# hooked-pending-deletion: \"model.ckpt-1\"\n# hooked-pending-deletion: \"model.ckpt-2\"\n"
              "model_checkpoint_path: \"model.ckpt-2\"\nall_model_checkpoint_paths: \"model.ckpt-2\"\n");
  a = make_saver(f, 5, HK_UNSET_SECS);
  save(f, a, 3, HK_SAVE_DEFAULT);
  assert_logged(f->te, HK_LOG_WARNING, "Not deleting checkpoint model.ckpt-2 recorded as a pending deletion");
  assert_listing(f,
                 "checkpoint,model.ckpt-1,model.ckpt-1.safetensors.bak,model.ckpt-1.txt,model.ckpt-2.safetensors,"
                 "model.ckpt-3.safetensors");
  hk_saver_free(a);
}

/* D6.5: malformed pending-deletion lines are ignored whole with a warning
 * and delete nothing; in a file without the checksum line (not hooked's)
 * they are comments and delete nothing either. */
static void test_pending_deletions__malformed_lines_delete_nothing(void **state) {
  fx *f = *state;
  static const char *const bad[] = {
      "# hooked-pending-deletion: \"../ck/model.ckpt-1\"\n",
      "# hooked-pending-deletion: \"model.ckpt-1\"\n# hooked-pending-deletion: \"/tmp/x\"\n",
      "# hooked-pending-deletion: model.ckpt-1\n",
      "# hooked-pending-deletion:  \"model.ckpt-1\"\n",
      "# hooked-pending-deletion: \"model.ckpt-1\" \n",
      "# hooked-pending-deletion: \"\"\n",
      "# hooked-pending-deletion: \"model.ckpt-1\"\n# hooked-pending-deletion: \"model.ckpt-1\"\n",
  };
  static const char tail[] = "model_checkpoint_path: \"model.ckpt-2\"\nall_model_checkpoint_paths: \"model.ckpt-2\"\n";
  hk_saver *a = make_saver(f, 0, HK_UNSET_SECS);
  save(f, a, 1, HK_SAVE_NO_STATE); /* unlisted, the victim a bad line could name */
  save(f, a, 2, HK_SAVE_DEFAULT);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char body[512];
    snprintf(body, sizeof body, "%s%s", bad[i], tail);
    write_state(f, body);
    test_log_clear(&f->te->log);
    save(f, a, 2, HK_SAVE_DEFAULT);
    if (!test_log_has(&f->te->log, HK_LOG_WARNING, "Ignoring the pending-deletion lines of the checkpoint state "))
      fail_msg("lines %zu were not refused: %s", i, body);
    assert_true(exists(f, "model.ckpt-1.safetensors"));
  }
  {
    char text[512];
    int k = snprintf(text, sizeof text, "# hooked-pending-deletion: \"model.ckpt-1\"\n%s", tail);
    write_in(f, "checkpoint", text, (size_t)k);
    save(f, a, 2, HK_SAVE_DEFAULT);
    assert_true(exists(f, "model.ckpt-1.safetensors"));
  }
  hk_saver_free(a);
}

/* D6.5: hk_checkpoint_state_update keeps what the file it replaces records,
 * but a name it lists. */
static void test_pending_deletions__state_update_keeps_the_recorded_names(void **state) {
  fx *f = *state;
  hk_saver *a = make_saver(f, 1, HK_UNSET_SECS);
  hk_status st = HK_STATUS_INIT;
  const char *names[1] = {"model.ckpt-1"};
  save(f, a, 1, HK_SAVE_DEFAULT);
  save_then_crash(f, a, 2); /* drops 1 */
  save_then_crash(f, a, 3); /* drops 2; 1 stays recorded, its deletion failed */
  assert_recorded(f, "model.ckpt-2,model.ckpt-1");
  assert_ok(hk_checkpoint_state_update(&f->te->env, f->dir, "model.ckpt-3", names, 1, NULL, 0, NULL, &st), &st);
  assert_recorded(f, "model.ckpt-2");
  hk_saver_free(a);
}

/* ---- failed saves and allocation failures ------------------------------------------------- */

/* D4.3: when writing the state file fails, the previous state file and what it lists stay. */
static void test_pending_deletions__failed_state_write_leaves_the_previous_state(void **state) {
  fx *f = *state;
  hk_saver *a = make_saver(f, 1, HK_UNSET_SECS);
  hk_status st = HK_STATUS_INIT;
  save(f, a, 1, HK_SAVE_DEFAULT);
  /* The state write of step 2 fails: the previous state file stands, and
   * it lists checkpoint 1. */
  faulty_fs_match(&f->ff, "checkpoint.tmp-");
  faulty_fs_fail_errno(&f->ff, FAULTY_FS_CREATE_EXCL, 0, ENOSPC, 1);
  set_step(f, 2);
  assert_status(hk_saver_save(NULL, a, f->rs, f->save_path, 2, HK_SAVE_DEFAULT, &st), &st, HK_RESOURCE_EXHAUSTED,
                "checkpoint.tmp-");
  faulty_fs_reset(&f->ff);
  assert_listing(f, "checkpoint,model.ckpt-1.safetensors");
  hk_saver_free(a);
}

/* D4.3: a save that fails leaves the directory as it was. */
static void test_pending_deletions__failed_save_leaves_the_directory_as_it_was(void **state) {
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
      T(test_pending_deletions__state_file_records_the_drops),
      T(test_pending_deletions__steady_retention_costs_four_fsyncs_per_save),
      T(test_pending_deletions__finishing_deletions_costs_no_fsync),
      T(test_pending_deletions__a_failed_deletion_stays_recorded),
      T(test_pending_deletions__re_saving_a_recorded_name_stops_recording_it_first),
      T(test_pending_deletions__deletes_only_checkpoint_files_of_unlisted_names),
      T(test_pending_deletions__malformed_lines_delete_nothing),
      T(test_pending_deletions__state_update_keeps_the_recorded_names),
      T(test_pending_deletions__failed_state_write_leaves_the_previous_state),
      T(test_pending_deletions__failed_save_leaves_the_directory_as_it_was),
      T(test_pending_deletions__allocation_failures_while_finishing_lose_nothing),
#undef T
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
