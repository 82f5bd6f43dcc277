/*
 * test_pending_record — the record "<latest_filename>.pending-deletions"
 * earlier versions wrote before the state file that dropped checkpoints
 * (D6.5): this version never writes one and still finishes one it finds,
 * only while the state file is the one it was written for, never for a
 * name that state file lists (D6.4), refusing a malformed one, failing the
 * save before it writes anything when one may exist but cannot be read or
 * removed, and removing its stale temporaries (D4.2 step 1).
 *
 * What an earlier version left after a crash between its state file and
 * its deletions is played by as_an_earlier_version_left_it().
 */
#include "pending_tests.h"

/* D6.5: an earlier version's record is finished by the next save, its
 * deletions and its removal made durable before the save's own work: two
 * directory fsyncs more than the save's own four. */
static void test_pending_record__an_earlier_version_s_record_is_finished(void **state) {
  fx *f = *state;
  hk_saver *a = make_saver(f, 2, HK_UNSET_SECS), *b;
  save(f, a, 1, HK_SAVE_DEFAULT);
  save(f, a, 2, HK_SAVE_DEFAULT);
  save_then_crash(f, a, 3);
  as_an_earlier_version_left_it(f);
  hk_saver_free(a);
  assert_listing(f, "checkpoint," RECORD ",model.ckpt-1.safetensors,model.ckpt-2.safetensors,model.ckpt-3.safetensors");
  b = make_saver(f, 2, HK_UNSET_SECS);
  faulty_fs_reset(&f->ff);
  save(f, b, 4, HK_SAVE_DEFAULT);
  assert_int_equal(syncs(f), 4 + 2);
  assert_logged(f->te, HK_LOG_INFO, "Deleted checkpoint model.ckpt-1 of ");
  assert_listing(f, "checkpoint,model.ckpt-3.safetensors,model.ckpt-4.safetensors");
  hk_saver_free(b);
}

/* D6.4: a record deletes only checkpoint files of names the current state file does not list. */
static void test_pending_record__deletes_only_checkpoint_files_of_unlisted_names(void **state) {
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
static void test_pending_record__stale_record_spares_recreated_checkpoints(void **state) {
  fx *f = *state;
  hk_saver *a = make_saver(f, 1, HK_UNSET_SECS);
  char *stale;
  size_t n = 0;
  save(f, a, 1, HK_SAVE_DEFAULT);
  save_then_crash(f, a, 2);
  as_an_earlier_version_left_it(f);
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
static void test_pending_record__stale_record_spares_preserved_checkpoints(void **state) {
  fx *f = *state;
  /* max_to_keep 1, one checkpoint preserved per hour */
  hk_saver *a = make_saver(f, 1, 1.0);
  char *stale;
  size_t n = 0;
  save(f, a, 1, HK_SAVE_DEFAULT);
  test_clock_advance(&f->te->clock, 60);
  save_then_crash(f, a, 2); /* 1 goes: not an hour after last_preserved */
  as_an_earlier_version_left_it(f);
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
static void test_pending_record__malformed_record_ignored_with_warning(void **state) {
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

static void test_pending_record__unreadable_record_fails_the_save_first(void **state) {
  fx *f = *state;
  hk_saver *a = make_saver(f, 1, HK_UNSET_SECS);
  hk_status st = HK_STATUS_INIT;
  save(f, a, 1, HK_SAVE_DEFAULT);
  save_then_crash(f, a, 2);
  as_an_earlier_version_left_it(f);
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

/* D4.2: temporary files of a record are removed as stale temporaries, and those of other state files kept. */
static void test_pending_record__record_temporaries_are_stale_temporaries(void **state) {
  fx *f = *state;
  hk_saver *a = make_saver(f, 1, HK_UNSET_SECS);
  write_in(f, RECORD ".tmp-AbC123", "junk", 4);
  write_in(f, "other.pending-deletions.tmp-AbC123", "junk", 4); /* not this state file's */
  save(f, a, 1, HK_SAVE_DEFAULT);
  assert_listing(f, "checkpoint,model.ckpt-1.safetensors,other.pending-deletions.tmp-AbC123");
  hk_saver_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
      T(test_pending_record__an_earlier_version_s_record_is_finished),
      T(test_pending_record__deletes_only_checkpoint_files_of_unlisted_names),
      T(test_pending_record__stale_record_spares_recreated_checkpoints),
      T(test_pending_record__stale_record_spares_preserved_checkpoints),
      T(test_pending_record__malformed_record_ignored_with_warning),
      T(test_pending_record__unreadable_record_fails_the_save_first),
      T(test_pending_record__record_temporaries_are_stale_temporaries),
#undef T
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
