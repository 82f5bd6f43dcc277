/*
 * test_restore — the fallback past missing or corrupt checkpoints (D5.3;
 * none for a model mismatch, H27) and the managed list recovered after a
 * restore, never adopted from a scan (C122, C123, D6.1).
 *
 * Checkpoints are written by a "writer" raw session whose variables hold
 * values derived from a seed (the step), so a restored session shows which
 * checkpoint it came from; the initializers give other values, so a session
 * that was initialized instead of restored is told apart (restore_tests.c).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "restore_tests.h"

/* ---- D5.3: fallback past missing or corrupt checkpoints ---------------------------------- */

/* D5.3: a corrupt newest checkpoint (found while reading its tensors) is
 * skipped with D5.1's warning naming it, and the older one is restored. */
static void test_restore__a_corrupt_newest_checkpoint_falls_back_to_the_previous(void **state) {
  fx *f = *state;
  char *p2 = prefix_of(f, 2), *p3 = prefix_of(f, 3), line[1200];
  int initialized = 0;
  save(f, 1);
  save(f, 2);
  save(f, 3);
  corrupt(f, 3);
  make_sm(f);
  assert_ok(prepare(f), &f->st);
  assert_true(holds(&f->m, f->out, 2));
  snprintf(line, sizeof line, "Checkpoint %s is missing or corrupt (", p3);
  assert_logged(f->te, HK_LOG_WARNING, line);
  assert_int_equal(skipped_logged(f), 1);
  drop_out(f);
  /* C74 reports the checkpoint actually restored */
  assert_ok(hk_session_manager_recover_session(&f->out, &initialized, f->sm, &f->po, &f->st), &f->st);
  assert_int_equal(initialized, 1);
  assert_true(holds(&f->m, f->out, 2));
  snprintf(line, sizeof line, "Restored model from %s", p2);
  assert_logged(f->te, HK_LOG_INFO, line);
  free(p2);
  free(p3);
}

/* D5.3: a missing newest checkpoint is skipped; the recovered list drops it
 * (C122: entries without a data file). */
static void test_restore__a_missing_newest_checkpoint_falls_back_to_the_previous(void **state) {
  fx *f = *state;
  char *p3 = prefix_of(f, 3), line[1200];
  static const int kept[2] = {1, 2};
  save(f, 1);
  save(f, 2);
  save(f, 3);
  remove_data(f, 3);
  make_sm(f);
  assert_ok(prepare(f), &f->st);
  assert_true(holds(&f->m, f->out, 2));
  snprintf(line, sizeof line, "Checkpoint %s is missing or corrupt (", p3);
  assert_logged(f->te, HK_LOG_WARNING, line);
  assert_managed(f, f->saver, kept, 2);
  free(p3);
}

/* D5.3: when every candidate fails → DATA_LOSS naming the directory and
 * each candidate in it, newest first, with its reason; no session is
 * handed out, none stays allocated, nothing is initialized. */
static void test_restore__all_checkpoints_corrupt_is_data_loss_and_no_session(void **state) {
  fx *f = *state;
  char *p1 = prefix_of(f, 1), *p2 = prefix_of(f, 2), want[1200];
  int initialized = 7;
  long live;
  save(f, 1);
  save(f, 2);
  corrupt(f, 1);
  corrupt(f, 2);
  make_sm(f);
  snprintf(want, sizeof want, "No checkpoint in %.*s could be restored: model.ckpt-2 (corrupt: tensor ",
           (int)(strlen(p1) - strlen("/model.ckpt-1")), p1);
  assert_status(prepare(f), &f->st, HK_DATA_LOSS, want);
  assert_non_null(strstr(f->st.message, "; model.ckpt-1 (corrupt: tensor "));
  assert_null(f->out);
  live = test_alloc_live(&f->te->alloc);
  assert_status(hk_session_manager_recover_session(&f->out, &initialized, f->sm, &f->po, &f->st), &f->st, HK_DATA_LOSS,
                want);
  assert_null(f->out);
  assert_int_equal(initialized, 0);
  assert_int_equal(test_alloc_live(&f->te->alloc), live);
  /* the list of a directory nothing could be restored from is not adopted */
  assert_managed(f, f->saver, NULL, 0);
  free(p1);
  free(p2);
}

/* C123, D5.2, H60: a malformed state file → the directory scan restores the
 * newest checkpoint that verifies; the restore adopts nothing, and the
 * Saver's next save adopts every checkpoint of its form (the corrupt one
 * too) and, with max_to_keep 1, deletes them, writing a state file that
 * lists only its own. */
static void test_restore__malformed_state_file_scans_then_the_next_save_adopts(void **state) {
  fx *f = *state;
  char *sf = test_path(f->dir, "checkpoint");
  static const char garbage[] = "model_checkpoint_path: \"model.ckpt-3\n\x01\x02 not a state file {\n";
  static const int only4[1] = {4};
  save(f, 1);
  save(f, 2);
  save(f, 3);
  corrupt(f, 3);
  assert_int_equal(test_write_file(sf, garbage, sizeof garbage - 1), 0);
  hk_saver_free(f->saver);
  f->saver = saver_new(f, &f->m, 1, all_vars, 3);
  f->po.saver = f->saver;
  make_sm(f);
  assert_ok(prepare(f), &f->st);
  assert_true(holds(&f->m, f->out, 2));
  assert_logged(f->te, HK_LOG_WARNING, "Ignoring the checkpoint state file");
  assert_managed(f, f->saver, NULL, 0);
  save_with(f, f->saver, &f->m, f->out, 4);
  assert_false(ckpt_exists(f, 1));
  assert_false(ckpt_exists(f, 2));
  assert_false(ckpt_exists(f, 3));
  assert_true(ckpt_exists(f, 4));
  assert_state_lists(f, only4, 1);
  free(sf);
}

/* H27, D5.3: the newest checkpoint lacks a variable → NOT_FOUND "Key %s not
 * found in checkpoint %s" at once, although the older one would restore. */
static void test_restore__a_missing_variable_fails_without_falling_back(void **state) {
  fx *f = *state;
  static const char *const no_b[2] = {"w", "global_step"};
  char *p2 = prefix_of(f, 2), want[1200];
  save(f, 1);
  f->writer2 = saver_new(f, &f->m, 5, no_b, 2);
  save_with(f, f->writer2, &f->m, f->rs, 2);
  make_sm(f);
  snprintf(want, sizeof want, "Key b not found in checkpoint %s", p2);
  assert_status(prepare(f), &f->st, HK_NOT_FOUND, want);
  assert_null(f->out);
  assert_int_equal(skipped_logged(f), 0);
  /* the older checkpoint is compatible: an explicit restore of it works */
  {
    char *p1 = prefix_of(f, 1);
    f->po.checkpoint_dir = NULL;
    f->po.checkpoint_filename_with_path = p1;
    assert_ok(prepare(f), &f->st);
    assert_true(holds(&f->m, f->out, 1));
    free(p1);
  }
  free(p2);
}

/* Write model.ckpt-2 from a model whose "b" differs (variant), after a
 * compatible model.ckpt-1, then check prepare fails at once with
 * INVALID_ARGUMENT naming b, both specs and the file. */
static void mismatch_case(fx *f, int variant, const char *mine, const char *theirs) {
  char *p2 = prefix_of(f, 2);
  save(f, 1);
  model_build(&f->m2, f->te, variant, 1);
  assert_ok(hk_raw_session_open(&f->rs2, f->m2.ex, &f->st), &f->st);
  {
    hk_run_args args = {NULL, 0, NULL, 0, &f->m2.init, 1, NULL};
    int64_t gs = 2;
    hk_tensor t;
    assert_ok(hk_raw_session_run(f->rs2, &args, NULL, NULL, &f->st), &f->st);
    assert_ok(hk_tensor_init(&t, HK_DTYPE_I64, 0, NULL, &gs, &f->st), &f->st);
    assert_ok(hk_raw_session_assign_variable(f->rs2, var_index(&f->m2, "global_step"), &t, &f->st), &f->st);
  }
  f->writer2 = saver_new(f, &f->m2, 5, NULL, 0);
  assert_ok(hk_saver_save(NULL, f->writer2, f->rs2, f->save_path, 2, HK_SAVE_DEFAULT, &f->st), &f->st);
  make_sm(f);
  assert_status(prepare(f), &f->st, HK_INVALID_ARGUMENT, "b");
  assert_non_null(strstr(f->st.message, mine));
  assert_non_null(strstr(f->st.message, theirs));
  assert_non_null(strstr(f->st.message, p2));
  assert_null(f->out);
  assert_int_equal(skipped_logged(f), 0);
  free(p2);
}

/* H27: a variable whose shape differs from the file's fails the restore, with no fall back to an older checkpoint. */
static void test_restore__a_shape_mismatch_fails_without_falling_back(void **state) {
  mismatch_case(*state, B_F64_5, "[4]", "[5]");
}

/* H27: a variable whose dtype differs from the file's fails the restore, with no fall back to an older checkpoint. */
static void test_restore__a_dtype_mismatch_fails_without_falling_back(void **state) {
  mismatch_case(*state, B_F32_4, hk_dtype_name(HK_DTYPE_F64), hk_dtype_name(HK_DTYPE_F32));
}

/* f->m2 built with `variant` (seed 1) and an initialized raw session of it
 * in f->rs2; f->saver becomes a Saver of f->m2 over every global variable
 * (names NULL) or the given ones. */
static void m2_open(fx *f, int variant, const char *const *names, size_t n) {
  hk_run_args args = {NULL, 0, NULL, 0, NULL, 1, NULL};
  model_build(&f->m2, f->te, variant, 1);
  assert_ok(hk_raw_session_open(&f->rs2, f->m2.ex, &f->st), &f->st);
  args.targets = &f->m2.init;
  assert_ok(hk_raw_session_run(f->rs2, &args, NULL, NULL, &f->st), &f->st);
  hk_saver_free(f->saver);
  f->saver = saver_new(f, &f->m2, 5, names, n);
}

/* Nonzero when w and the GS of m2's raw session hold the seed's values. */
static int m2_holds_w_gs(fx *f, int seed) {
  float w[NW];
  if (!read_var(&f->m2, f->rs2, "w", w, sizeof w)) return 0;
  for (size_t k = 0; k < NW; k++)
    if (w[k] != w_of(seed, k)) return 0;
  return gs_of(&f->m2, f->rs2) == seed;
}

/* H27: a variable flagged HK_VAR_OPTIONAL that the checkpoint lacks does not
 * fail the restore: the other variables are restored, it keeps its value,
 * and a WARNING names it and the checkpoint. Without the flag the same
 * checkpoint is NOT_FOUND "Key %s not found in checkpoint %s". */
static void test_restore__a_missing_optional_variable_keeps_its_value(void **state) {
  fx *f = *state;
  static const char *const no_b[2] = {"w", "global_step"};
  char *p2 = prefix_of(f, 2), line[1200];
  double b[4];
  f->writer2 = saver_new(f, &f->m, 5, no_b, 2);
  save_with(f, f->writer2, &f->m, f->rs, 2);
  m2_open(f, B_F64_4 | B_OPTIONAL, NULL, 0);
  assert_ok(hk_saver_restore(f->saver, f->rs2, p2, &f->st), &f->st);
  assert_true(m2_holds_w_gs(f, 2));
  assert_true(read_var(&f->m2, f->rs2, "b", b, sizeof b));
  for (size_t k = 0; k < 4; k++) assert_true(b[k] == 0.25); /* what init_op gave it */
  snprintf(line, sizeof line,
           "Variable b is not in checkpoint %s; it is optional (HK_VAR_OPTIONAL), so its current value is kept.", p2);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, line), 1);
  /* the graph describes the flag */
  {
    hk_variable_info info;
    assert_ok(hk_executor_variable_info(&info, f->m2.ex, var_index(&f->m2, "b"), &f->st), &f->st);
    assert_true(info.flags & HK_VAR_OPTIONAL);
  }
  /* f->m's "b" is not optional */
  {
    hk_saver *plain = saver_new(f, &f->m, 5, NULL, 0);
    snprintf(line, sizeof line, "Key b not found in checkpoint %s", p2);
    assert_status(hk_saver_restore(plain, f->rs, p2, &f->st), &f->st, HK_NOT_FOUND, line);
    hk_saver_free(plain);
  }
  free(p2);
}

/* H27: optional or not, a variable whose dtype or shape differs from the
 * checkpoint's is INVALID_ARGUMENT, and nothing is assigned. */
static void test_restore__an_optional_variable_that_does_not_match_is_an_error(void **state) {
  fx *f = *state;
  char *p1 = prefix_of(f, 1);
  save(f, 1);
  m2_open(f, B_F32_4 | B_OPTIONAL, NULL, 0);
  assert_status(hk_saver_restore(f->saver, f->rs2, p1, &f->st), &f->st, HK_INVALID_ARGUMENT, "Variable b has dtype");
  assert_non_null(strstr(f->st.message, hk_dtype_name(HK_DTYPE_F32)));
  assert_non_null(strstr(f->st.message, hk_dtype_name(HK_DTYPE_F64)));
  assert_false(m2_holds_w_gs(f, 1));
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, "HK_VAR_OPTIONAL"), 0);
  hk_raw_session_free(f->rs2);
  f->rs2 = NULL;
  hk_graph_free(f->m2.g);
  m2_open(f, B_F64_5 | B_OPTIONAL, NULL, 0);
  assert_status(hk_saver_restore(f->saver, f->rs2, p1, &f->st), &f->st, HK_INVALID_ARGUMENT, "Variable b has shape");
  assert_false(m2_holds_w_gs(f, 1));
  free(p1);
}

/* H27 through a session: a model that added an optional, host-owned "b"
 * resumes from checkpoints written before it existed; "b" keeps the host's
 * values and the session is ready (external storage counts as
 * initialized). */
static void test_restore__session_resumes_without_optional_variable(void **state) {
  fx *f = *state;
  static const char *const no_b[2] = {"w", "global_step"};
  hk_session_options o;
  hk_raw_session *rs;
  f->writer2 = saver_new(f, &f->m, 5, no_b, 2);
  save_with(f, f->writer2, &f->m, f->rs, 3);
  model_build(&f->m2, f->te, B_F64_4 | B_OPTIONAL | B_EXTERNAL, 1);
  session_options(f, &o, HK_SESSION_SINGULAR, 0);
  o.executor = f->m2.ex;
  assert_ok(hk_session_new(&f->s, &o, &f->st), &f->st);
  rs = hk_session_raw_session(f->s);
  assert_int_equal(gs_of(&f->m2, rs), 3);
  for (size_t k = 0; k < 4; k++) assert_true(f->m2.b_ext[k] == B_EXTERNAL_VALUE);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, "Variable b is not in checkpoint"), 1);
}

/* H27: a tensor of the checkpoint that no variable asks for (a variable the
 * program dropped) is named in a WARNING with the checkpoint when the Saver
 * covers every global variable, at DEBUG when its var_list was chosen; the
 * restore succeeds either way. */
static void test_restore__a_tensor_left_unrestored_is_named(void **state) {
  fx *f = *state;
  static const char *const w_gs[2] = {"w", "global_step"};
  char *p3 = prefix_of(f, 3), line[1200];
  hk_session_options o;
  save(f, 3);
  snprintf(line, sizeof line, "Checkpoint %s holds b, which this program does not restore.", p3);
  m2_open(f, B_NONE, NULL, 0);
  assert_ok(hk_saver_restore(f->saver, f->rs2, p3, &f->st), &f->st);
  assert_true(m2_holds_w_gs(f, 3));
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, line), 1);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, "which this program does not restore"), 1);
  /* an explicit var_list: DEBUG only */
  hk_saver_free(f->saver);
  f->saver = saver_new(f, &f->m2, 5, w_gs, 2);
  assert_ok(hk_saver_restore(f->saver, f->rs2, p3, &f->st), &f->st);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, line), 1);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_DEBUG, line), 1);
  /* a session's default Saver covers every global variable */
  session_options(f, &o, HK_SESSION_SINGULAR, 0);
  o.executor = f->m2.ex;
  assert_ok(hk_session_new(&f->s, &o, &f->st), &f->st);
  assert_int_equal(gs_of(&f->m2, hk_session_raw_session(f->s)), 3);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, line), 2);
  free(p3);
}

/* ---- C122 / D6.1: the managed list after a restore ------------------------------------------ */

/* C122, D6.1: restoring from checkpoint_dir gives the Saver the state
 * file's list; its next save continues retention (max_to_keep 2: saving 4
 * deletes 2, the oldest listed). */
static void test_restore__recovers_the_list_and_retention_continues(void **state) {
  fx *f = *state;
  static const int listed[2] = {2, 3}, after[2] = {3, 4};
  hk_saver_free(f->writer);
  f->writer = saver_new(f, &f->m, 2, NULL, 0);
  save(f, 1);
  save(f, 2);
  save(f, 3);
  assert_false(ckpt_exists(f, 1));
  hk_saver_free(f->saver);
  f->saver = saver_new(f, &f->m, 2, all_vars, 3);
  f->po.saver = f->saver;
  make_sm(f);
  assert_ok(prepare(f), &f->st);
  assert_true(holds(&f->m, f->out, 3));
  assert_managed(f, f->saver, listed, 2);
  save_with(f, f->saver, &f->m, f->out, 4);
  assert_false(ckpt_exists(f, 2));
  assert_true(ckpt_exists(f, 3));
  assert_true(ckpt_exists(f, 4));
  assert_managed(f, f->saver, after, 2);
  assert_state_lists(f, after, 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_restore__a_corrupt_newest_checkpoint_falls_back_to_the_previous, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_restore__a_missing_newest_checkpoint_falls_back_to_the_previous, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_restore__all_checkpoints_corrupt_is_data_loss_and_no_session, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_restore__malformed_state_file_scans_then_the_next_save_adopts, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_restore__a_missing_variable_fails_without_falling_back, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__a_shape_mismatch_fails_without_falling_back, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__a_dtype_mismatch_fails_without_falling_back, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__a_missing_optional_variable_keeps_its_value, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__an_optional_variable_that_does_not_match_is_an_error, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_restore__session_resumes_without_optional_variable, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__a_tensor_left_unrestored_is_named, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__recovers_the_list_and_retention_continues, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
