/*
 * test_saver — retention (D6, C122, C126): exact retention across saves and
 * restarts, and the preservation arithmetic at its boundary (D6.2).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "saver_tests.h"

/* ---- retention (D6, C126) ------------------------------------------------------------ */

/* D6.2: a save removes the oldest managed checkpoints beyond max_to_keep. */
static void test_saver__max_to_keep_2_keeps_the_two_newest_of_five_saves(void **state) {
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
static void test_saver__retention_deletes_a_checkpoint_s_graph_files_with_it(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  char *legacy = ckpt_file(f, "model.ckpt-2.meta");
  f->saver = make_saver(f, 1, HK_UNSET_SECS);
  set_values(f, 1);
  assert_ok(hk_saver_save(NULL, f->saver, f->rs, f->save_path, 1, HK_SAVE_META, &st), &st);
  assert_ok(hk_saver_save(NULL, f->saver, f->rs, f->save_path, 2, HK_SAVE_META, &st), &st);
  assert_listing(f->dir, "checkpoint,model.ckpt-2.graph.txt,model.ckpt-2.safetensors");
  assert_int_equal(test_write_file(legacy, "old graph text", 14), 0);
  assert_ok(hk_saver_save(NULL, f->saver, f->rs, f->save_path, 3, HK_SAVE_DEFAULT, &st), &st);
  assert_listing(f->dir, "checkpoint,model.ckpt-3.safetensors");
  free(legacy);
}

/* D6.3: with max_to_keep 0 nothing is deleted and the state file lists every checkpoint. */
static void test_saver__max_to_keep_0_keeps_every_checkpoint(void **state) {
  fx *f = *state;
  f->saver = make_saver(f, 0, HK_UNSET_SECS);
  for (int64_t s = 1; s <= 5; s++) save_step(f, f->saver, s);
  assert_listing(f->dir,
                 "checkpoint,model.ckpt-1.safetensors,model.ckpt-2.safetensors,model.ckpt-3.safetensors,"
                 "model.ckpt-4.safetensors,model.ckpt-5.safetensors");
  assert_state(f, "model.ckpt-1,model.ckpt-2,model.ckpt-3,model.ckpt-4,model.ckpt-5");
}

/* D6.2: a checkpoint dropped from the list is preserved when keep_checkpoint_every_n_hours have passed since the
 * last preserved one. */
static void test_saver__keep_every_n_hours_preserves_one_checkpoint_per_period(void **state) {
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
  assert_ok(hk_checkpoint_state_get(&cs, &f->te->env, f->dir, NULL, &st), &st);
  assert_int_equal(hk_checkpoint_state_count(cs), 1);
  assert_true(hk_checkpoint_state_last_preserved(cs) == t0 + 7200);
  assert_true(hk_checkpoint_state_timestamp(cs, 0) == t0 + 8400);
  hk_checkpoint_state_free(cs);
}

/* D6.1: a new Saver recovers the managed list from the state file, so retention continues across restarts. */
static void test_saver__retention_continues_across_restarts(void **state) {
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

/* C122: recovering the managed list drops the entries whose files are missing. */
static void test_saver__recovery_drops_entries_whose_files_are_missing(void **state) {
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

/* D6.1: a wall clock set back does not make the recovered checkpoints deletable. */
static void test_saver__a_clock_set_back_still_preserves_recovered_checkpoints(void **state) {
  fx *f = *state;
  hk_saver *a = make_saver(f, 5, HK_UNSET_SECS), *b;
  hk_status st = HK_STATUS_INIT;
  const char *names[2] = {"model.ckpt-1", "model.ckpt-2"};
  double now = hk_env_wall(&f->te->env);
  double ts[2] = {now - 20, now - 10};
  for (int64_t s = 1; s <= 2; s++) save_step(f, a, s);
  hk_saver_free(a);
  /* a state file whose last_preserved_timestamp is an hour ahead of the clock */
  assert_ok(hk_checkpoint_state_update(&f->te->env, f->dir, "model.ckpt-2", names, 2, ts, now + 3600, NULL, &st), &st);
  b = make_saver(f, 1, HK_UNSET_SECS);
  save_step(f, b, 3);
  assert_logged(f->te, HK_LOG_WARNING, "seconds behind the last preserved checkpoint timestamp.");
  /* the recovered checkpoints count as preserved: kept, no longer listed */
  assert_listing(f->dir, "checkpoint,model.ckpt-1.safetensors,model.ckpt-2.safetensors,model.ckpt-3.safetensors");
  assert_state(f, "model.ckpt-3");
  hk_saver_free(b);
}

/* D6.2: a save under a listed name moves it to the end of the list with a new timestamp. */
static void test_saver__saving_a_name_again_moves_it_to_the_end(void **state) {
  fx *f = *state;
  f->saver = make_saver(f, 3, HK_UNSET_SECS);
  for (int64_t s = 1; s <= 3; s++) save_step(f, f->saver, s);
  save_step(f, f->saver, 1);
  assert_state(f, "model.ckpt-2,model.ckpt-3,model.ckpt-1");
  save_step(f, f->saver, 4);
  assert_state(f, "model.ckpt-3,model.ckpt-1,model.ckpt-4");
  assert_listing(f->dir, "checkpoint,model.ckpt-1.safetensors,model.ckpt-3.safetensors,model.ckpt-4.safetensors");
}

/* C116, D6.4: a save without write_state writes no state file, and its checkpoint is never deleted by retention. */
static void test_saver__a_save_without_the_state_file_is_unmanaged(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  char *statefile = ckpt_file(f, "checkpoint");
  char *before, *after;
  size_t nb, na, n;
  f->saver = make_saver(f, 2, HK_UNSET_SECS);
  for (int64_t s = 1; s <= 2; s++) save_step(f, f->saver, s);
  before = test_read_file(statefile, &nb);
  set_values(f, 10);
  assert_ok(hk_saver_save(NULL, f->saver, f->rs, f->save_path, 10, HK_SAVE_NO_STATE, &st), &st);
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
static void test_saver__unlisted_and_other_files_never_deleted(void **state) {
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

/* D4.2: a save removes the stale temporary files an interrupted save left,
 * of the names only its own trainer writes: the state file, graph.txt, the
 * managed form's checkpoints and its own. */
static void test_saver__stale_temporary_files_are_removed(void **state) {
  fx *f = *state;
  /* today's names, and the names older versions gave the graph descriptions */
  const char *stale[] = {"model.ckpt-3.safetensors.tmp-AbC123", "checkpoint.tmp-zzzzzz",
                         "model.ckpt-7.graph.txt.tmp-000000",   "graph.txt.tmp-a1B2c3",
                         "model.ckpt-2.meta.tmp-000000",        "graph.pbtxt.tmp-Zz9Yy8",
                         "model.ckpt-1.safetensors.tmp-Qq1Ww2"};
  const char *kept[] = {"notes.txt.tmp-AbC123", "model.ckpt-3.safetensors.tmp-short"};
  for (size_t i = 0; i < 7; i++) {
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

/* D4.2: the temporaries of another checkpoint's files are kept — an
 * unmanaged export another process (which takes no directory lock) is
 * writing right now — until a save of that very name removes them. */
static void test_saver__temporaries_a_live_export_may_be_writing_are_kept(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  const char *live[] = {"export.safetensors.tmp-AbC123", "export.graph.txt.tmp-AbC123", "x.meta.tmp-000000",
                        "other-5.safetensors.tmp-000000"};
  char *export_path = ckpt_file(f, "export");
  for (size_t i = 0; i < 4; i++) {
    char *p = ckpt_file(f, live[i]);
    assert_int_equal(test_write_file(p, "junk", 4), 0);
    free(p);
  }
  f->saver = make_saver(f, 5, HK_UNSET_SECS);
  save_step(f, f->saver, 1);
  assert_listing(f->dir,
                 "checkpoint,export.graph.txt.tmp-AbC123,export.safetensors.tmp-AbC123,model.ckpt-1.safetensors,"
                 "other-5.safetensors.tmp-000000,x.meta.tmp-000000");
  /* A save of "export" itself: its own name's temporaries are its own. */
  set_values(f, 2);
  assert_ok(hk_saver_save(NULL, f->saver, f->rs, export_path, HK_UNSET_STEPS, HK_SAVE_NO_STATE, &st), &st);
  assert_listing(f->dir,
                 "checkpoint,export.safetensors,model.ckpt-1.safetensors,other-5.safetensors.tmp-000000,"
                 "x.meta.tmp-000000");
  free(export_path);
}

/* ---- D6.2: preservation arithmetic at the boundary ---------------------------------------- */

/* D6.2: t - hours*3600 >= last_preserved preserves, with equality included;
 * one second short deletes. D6.1: without a state file last_preserved is
 * now - 1 s at recovery. */
static void test_saver__preservation_boundary_is_inclusive(void **state) {
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
  assert_ok(hk_saver_save(NULL, f->saver, f->rs, f->save_path, 1, 0, &st), &st);
  f->te->clock.wall = t0 + 3599 + 3599; /* step 2: 1 s short of an hour after step 1 */
  assert_ok(hk_saver_save(NULL, f->saver, f->rs, f->save_path, 2, 0, &st), &st);
  f->te->clock.wall = t0 + 3 * 3600;
  assert_ok(hk_saver_save(NULL, f->saver, f->rs, f->save_path, 3, 0, &st), &st);
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
      cmocka_unit_test_setup_teardown(test_saver__max_to_keep_2_keeps_the_two_newest_of_five_saves, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__retention_deletes_a_checkpoint_s_graph_files_with_it, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_saver__max_to_keep_0_keeps_every_checkpoint, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__keep_every_n_hours_preserves_one_checkpoint_per_period, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_saver__retention_continues_across_restarts, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__recovery_drops_entries_whose_files_are_missing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__a_clock_set_back_still_preserves_recovered_checkpoints, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_saver__saving_a_name_again_moves_it_to_the_end, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__a_save_without_the_state_file_is_unmanaged, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__unlisted_and_other_files_never_deleted, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__stale_temporary_files_are_removed, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__temporaries_a_live_export_may_be_writing_are_kept, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__preservation_boundary_is_inclusive, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
