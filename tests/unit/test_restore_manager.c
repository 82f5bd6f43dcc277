/*
 * test_restore — restoring a model through the session manager: an explicit
 * checkpoint (C66, C67; D5.4: no fallback for it), checkpoint_dir and the
 * C68 wait (H24), and recover_session (C74).
 *
 * Checkpoints are written by a "writer" raw session whose variables hold
 * values derived from a seed (the step), so a restored session shows which
 * checkpoint it came from; the initializers give other values, so a session
 * that was initialized instead of restored is told apart (restore_tests.c).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "restore_tests.h"

/* ---- C67: an explicit checkpoint ------------------------------------------------------ */

/* C66/C67: the explicit checkpoint is restored, even when it is not the
 * newest, and init_op does not run (it would overwrite w with its uniform
 * values and the GS with 0); local init still runs (C66 step 3). */
static void test_restore__an_explicit_path_restores_without_running_init_op(void **state) {
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
static void test_restore__a_missing_explicit_path_is_not_found_and_no_session(void **state) {
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
  assert_status(hk_session_manager_recover_session(&f->out, &initialized, f->sm, &f->po, &f->st), &f->st, HK_NOT_FOUND,
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
static void test_restore__a_corrupt_explicit_path_never_falls_back(void **state) {
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
static void test_restore__both_paths_given_are_refused_before_a_raw_session(void **state) {
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
  assert_status(hk_session_manager_recover_session(&f->out, &initialized, f->sm, &f->po, &f->st), &f->st,
                HK_INVALID_ARGUMENT, "Can not provide both checkpoint_dir and checkpoint_filename_with_path.");
  assert_null(f->out);
  assert_int_equal(test_alloc_count(&f->te->alloc), 0);
  assert_int_equal(test_log_count(&f->te->log, -1, "Restoring"), 0);
  free(p);
}

/* C67: without a saver nothing is restored, from a directory or an explicit
 * path; the model is initialized. Options of a version the library does not
 * know are refused, naming the struct, before anything is restored. */
static void test_restore__without_a_saver_nothing_is_restored(void **state) {
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
  drop_out(f);
  f->po.saver = f->saver;
  f->po.version = HK_PREPARE_OPTIONS_VERSION + 1;
  assert_status(prepare(f), &f->st, HK_INVALID_ARGUMENT, "version 2 of hk_prepare_options");
  f->po.version = 0;
  assert_status(prepare(f), &f->st, HK_INVALID_ARGUMENT, "version 0 of hk_prepare_options");
  assert_int_equal(test_log_count(&f->te->log, -1, "Restoring parameters"), 0);
  free(p);
}

/* ---- C68: checkpoint_dir and the wait ---------------------------------------------- */

/* C68, D5.2: a directory with neither a state file nor a checkpoint data
 * file restores nothing: init_op runs, and nothing is warned about (other
 * files do not count). */
static void test_restore__without_a_checkpoint_the_model_is_initialized(void **state) {
  fx *f = *state;
  int initialized = 7;
  char *notes = test_path(f->dir, "notes-1.txt");
  assert_int_equal(test_write_file(notes, "x", 1), 0);
  make_sm(f);
  assert_ok(prepare(f), &f->st);
  assert_true(initialized_by_init_op(&f->m, f->out));
  drop_out(f);
  assert_ok(hk_session_manager_recover_session(&f->out, &initialized, f->sm, &f->po, &f->st), &f->st);
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
static void test_restore__without_a_state_file_restores_the_newest_scanned(void **state) {
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
  assert_ok(hk_session_manager_recover_session(&f->out, &initialized, f->sm, &f->po, &f->st), &f->st);
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
static void test_restore__the_wait_for_a_checkpoint_times_out_then_initializes(void **state) {
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
static void test_restore__a_state_file_appearing_during_the_wait_is_restored(void **state) {
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
static void test_restore__a_data_file_appearing_during_the_wait_ends_it(void **state) {
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
static void test_restore__a_cancel_during_the_wait_ends_it(void **state) {
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

/* ---- C74: recover_session ------------------------------------------------------------ */

/* C74: recover_session reports a model restored from a checkpoint as initialized. */
static void test_restore__recover_session_reports_a_restored_model_initialized(void **state) {
  fx *f = *state;
  char *p5 = prefix_of(f, 5), line[1200];
  int initialized = 0;
  int64_t loc = -1;
  save(f, 5);
  make_sm(f);
  assert_ok(hk_session_manager_recover_session(&f->out, &initialized, f->sm, &f->po, &f->st), &f->st);
  assert_int_equal(initialized, 1);
  assert_true(holds(&f->m, f->out, 5));
  assert_true(read_var(&f->m, f->out, "loc", &loc, sizeof loc));
  snprintf(line, sizeof line, "Restored model from %s", p5);
  assert_logged(f->te, HK_LOG_INFO, line);
  free(p5);
}

/* C74: nothing to restore → initialized 0; local init ran, init_op did not. */
static void test_restore__recover_session_with_nothing_to_restore_is_not_initialized(void **state) {
  fx *f = *state;
  int initialized = 1;
  int64_t loc = -1;
  float w[NW];
  make_sm(f);
  assert_ok(hk_session_manager_recover_session(&f->out, &initialized, f->sm, &f->po, &f->st), &f->st);
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
static void test_restore__recover_session_of_a_model_not_ready_is_not_initialized(void **state) {
  fx *f = *state;
  static const char *const no_b[2] = {"w", "global_step"};
  char *p5 = prefix_of(f, 5), line[1200];
  int initialized = 1;
  save(f, 5);
  hk_saver_free(f->saver);
  f->saver = saver_new(f, &f->m, 5, no_b, 2);
  f->po.saver = f->saver;
  make_sm(f);
  assert_ok(hk_session_manager_recover_session(&f->out, &initialized, f->sm, &f->po, &f->st), &f->st);
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
static void test_restore__recover_session_not_ready_for_local_init_is_not_initialized(void **state) {
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
  assert_ok(hk_graph_op_output(f->m.g, &f->mo.ready_for_local_init_op, rep, 0, &f->st), &f->st);
  save(f, 5);
  hk_saver_free(f->saver);
  f->saver = saver_new(f, &f->m, 5, no_b, 2);
  f->po.saver = f->saver;
  make_sm(f);
  assert_ok(hk_session_manager_recover_session(&f->out, &initialized, f->sm, &f->po, &f->st), &f->st);
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
static void test_restore__a_restored_model_needs_no_init_op(void **state) {
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
static void test_restore__a_truncated_newest_checkpoint_falls_back(void **state) {
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

/* An OOM loop: every allocation of a restoring prepare_session failing
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

/* A faulty file system: each file-system call of a restoring prepare_session
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_restore__an_explicit_path_restores_without_running_init_op, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__a_missing_explicit_path_is_not_found_and_no_session, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_restore__a_corrupt_explicit_path_never_falls_back, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__both_paths_given_are_refused_before_a_raw_session, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__without_a_saver_nothing_is_restored, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__without_a_checkpoint_the_model_is_initialized, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__without_a_state_file_restores_the_newest_scanned, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__the_wait_for_a_checkpoint_times_out_then_initializes, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_restore__a_state_file_appearing_during_the_wait_is_restored, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_restore__a_data_file_appearing_during_the_wait_ends_it, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__a_cancel_during_the_wait_ends_it, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__recover_session_reports_a_restored_model_initialized, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_restore__recover_session_with_nothing_to_restore_is_not_initialized, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_restore__recover_session_of_a_model_not_ready_is_not_initialized, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_restore__recover_session_not_ready_for_local_init_is_not_initialized, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_restore__a_restored_model_needs_no_init_op, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__a_truncated_newest_checkpoint_falls_back, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__oom_loop, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__fs_fault_sweep, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
