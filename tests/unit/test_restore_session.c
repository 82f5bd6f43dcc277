/*
 * test_restore — restoring through sessions (C99: the Scaffold's Saver; the
 * creation context's restored checkpoint), and an end-to-end train, save
 * and resume (D13: num_steps counts from the restored step).
 *
 * Checkpoints are written by a "writer" raw session whose variables hold
 * values derived from a seed (the step), so a restored session shows which
 * checkpoint it came from; the initializers give other values, so a session
 * that was initialized instead of restored is told apart (restore_tests.c).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "restore_tests.h"

/* ---- sessions ---------------------------------------------------------------------- */

static hk_code run_train(hk_session *s, model *m, hk_status *st) {
  hk_run_args args = {NULL, 0, NULL, 0, &m->train, 1, NULL};
  return hk_session_run(s, &args, NULL, NULL, st);
}

static hk_hook *stop_after(int64_t num_steps) {
  hk_stop_at_step_options o = HK_STOP_AT_STEP_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_hook *h = NULL;
  o.num_steps = num_steps;
  assert_ok(hk_stop_at_step_hook_new(&h, &o, &st), &st);
  return h;
}

/* C47, C99: the default Scaffold's default Saver (every global variable)
 * restores the newest checkpoint and adopts the directory's list; D13:
 * StopAtStep's num_steps counts from the restored GS (5 + 3). */
static void test_restore__session_default_scaffold_restores(void **state) {
  fx *f = *state;
  static const int listed[2] = {3, 5};
  hk_session_options o;
  hk_raw_session *rs;
  hk_saver *sv;
  int runs = 0;
  save(f, 3);
  save(f, 5);
  f->hooks[0] = stop_after(3);
  session_options(f, &o, HK_SESSION_SINGULAR, 1);
  assert_ok(hk_session_new(&f->s, &o, &f->st), &f->st);
  rs = hk_session_raw_session(f->s);
  assert_non_null(rs);
  assert_true(holds(&f->m, rs, 5));
  sv = hk_scaffold_saver(hk_session_scaffold(f->s));
  assert_non_null(sv);
  assert_ptr_not_equal(sv, f->saver);
  assert_managed(f, sv, listed, 2);
  while (!hk_session_should_stop(f->s)) {
    assert_ok(run_train(f->s, &f->m, &f->st), &f->st);
    assert_true(++runs <= 10);
  }
  assert_int_equal(runs, 3);
  assert_int_equal(gs_of(&f->m, rs), 8);
}

/* C99: an explicit Scaffold's given Saver is the one used: it restores and
 * recovers the directory's list; no default Saver is built. */
static void test_restore__session_explicit_scaffold_saver_used(void **state) {
  fx *f = *state;
  static const int listed[2] = {1, 2};
  hk_scaffold_options so = HK_SCAFFOLD_OPTIONS_INIT;
  hk_session_options o;
  save(f, 1);
  save(f, 2);
  so.env = &f->te->env;
  so.saver = f->saver;
  assert_ok(hk_scaffold_new(&f->scaffold, &so, &f->st), &f->st);
  session_options(f, &o, HK_SESSION_SINGULAR, 0);
  o.scaffold = f->scaffold;
  assert_managed(f, f->saver, NULL, 0);
  assert_ok(hk_session_new(&f->s, &o, &f->st), &f->st);
  assert_true(holds(&f->m, hk_session_raw_session(f->s), 2));
  assert_ptr_equal(hk_scaffold_saver(f->scaffold), f->saver);
  assert_managed(f, f->saver, listed, 2);
}

/* D5.3 through a session: a restore that fails fails hk_session_new with
 * DATA_LOSS; begin ran, after_create_session never did. */
static void test_restore__session_restore_failure_no_after_create(void **state) {
  fx *f = *state;
  hk_session_options o;
  save(f, 1);
  save(f, 2);
  corrupt(f, 1);
  corrupt(f, 2);
  f->spy = spy_hook_new("spy", NULL, NULL);
  assert_non_null(f->spy);
  f->hooks[0] = f->spy->hook;
  session_options(f, &o, HK_SESSION_MONITORED, 1);
  assert_status(hk_session_new(&f->s, &o, &f->st), &f->st, HK_DATA_LOSS, "model.ckpt-2");
  assert_null(f->s);
  f->hooks[0] = NULL;
  assert_int_equal(f->spy->calls[SPY_BEGIN], 1);
  assert_int_equal(f->spy->calls[SPY_AFTER_CREATE], 0);
  assert_null(f->spy->created_session);
}

/* ---- end to end ----------------------------------------------------------------------- */

/* Fetch w and the GS through a monitored session (a run without targets). */
static void fetch_state(hk_session *s, model *m, float *w, int64_t *gs) {
  hk_status st = HK_STATUS_INIT;
  hk_handle fetches[2];
  hk_tensor res[2];
  hk_run_args args = {NULL, 0, fetches, 2, NULL, 0, NULL};
  fetches[0] = m->w;
  fetches[1] = m->gs;
  assert_ok(hk_session_run(s, &args, res, NULL, &st), &st);
  assert_int_equal(res[0].nbytes, NW * sizeof *w);
  memcpy(w, res[0].data, NW * sizeof *w);
  assert_ok(hk_tensor_to_i64(gs, &res[1], "global_step", &st), &st);
}

/* D5.2 through a session: a new session on a directory whose state file is
 * gone resumes from the newest checkpoint, the hooks' after_create_session
 * sees the restored GS. */
static void test_restore__a_session_without_a_state_file_resumes_from_the_scan(void **state) {
  fx *f = *state;
  hk_session_options o;
  char *sf = test_path(f->dir, "checkpoint");
  save(f, 4);
  save(f, 6);
  assert_int_equal(unlink(sf), 0);
  session_options(f, &o, HK_SESSION_MONITORED, 0);
  assert_ok(hk_session_new(&f->s, &o, &f->st), &f->st);
  {
    float w[NW];
    int64_t gs = -1;
    fetch_state(f->s, &f->m, w, &gs);
    assert_int_equal(gs, 6);
    for (size_t k = 0; k < NW; k++) assert_true(w[k] == w_of(6, k));
  }
  assert_logged(f->te, HK_LOG_WARNING, "checkpoint is missing; scanning");
  free(sf);
}

/* What hk_creation_context_restored_checkpoint() said at each
 * after_create_session of a spy (C94, C105's public half). */
typedef struct seen_restored {
  int calls;
  int null_seen;
  char last[1024];
} seen_restored;

static hk_code note_restored(spy_hook *spy, spy_slot slot, void *arg, hk_status *st) {
  seen_restored *seen = spy->action_user;
  const char *from;
  (void)st;
  if (slot != SPY_AFTER_CREATE) return HK_OK;
  from = hk_creation_context_restored_checkpoint(arg);
  seen->calls++;
  seen->null_seen = from == NULL;
  snprintf(seen->last, sizeof seen->last, "%s", from ? from : "");
  return HK_OK;
}

/* A custom creator (H21) that restores by itself: the session cannot know. */
static hk_code restoring_creator(void *user, hk_executor *ex, hk_raw_session **out, hk_status *st) {
  fx *f = user;
  char *p = prefix_of(f, 5);
  hk_code rc = hk_raw_session_open(out, ex, st);
  if (rc == HK_OK) rc = hk_saver_restore(f->saver, *out, p, st);
  free(p);
  return rc;
}

static const hk_session_creator_vtable restoring_creator_vtable = {HK_SESSION_CREATOR_VTABLE_VERSION, restoring_creator,
                                                                   NULL};

/* C94, C105: hooks learn through the creation context which checkpoint the
 * creation restored — its prefix "<dir>/<name>" — and NULL when the model
 * was initialized, when a custom creator made the raw session, or for a
 * NULL context. */
static void test_restore__the_creation_context_names_the_restored_checkpoint(void **state) {
  fx *f = *state;
  hk_session_options o;
  seen_restored seen;
  char *p5 = prefix_of(f, 5);

  memset(&seen, 0, sizeof seen);
  assert_null(hk_creation_context_restored_checkpoint(NULL));
  f->spy = spy_hook_new("spy", NULL, NULL);
  assert_non_null(f->spy);
  f->spy->action = note_restored;
  f->spy->action_user = &seen;
  f->hooks[0] = f->spy->hook;
  /* nothing to restore: initialized */
  session_options(f, &o, HK_SESSION_MONITORED, 1);
  assert_ok(hk_session_new(&f->s, &o, &f->st), &f->st);
  assert_int_equal(seen.calls, 1);
  assert_true(seen.null_seen);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  hk_session_free(f->s);
  f->s = NULL;
  /* restored: the prefix */
  save(f, 3);
  save(f, 5);
  assert_ok(hk_session_new(&f->s, &o, &f->st), &f->st);
  assert_int_equal(seen.calls, 2);
  assert_false(seen.null_seen);
  assert_string_equal(seen.last, p5);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  hk_session_free(f->s);
  f->s = NULL;
  /* a custom creator restores what it likes; the session reports nothing */
  o.kind = HK_SESSION_SINGULAR;
  o.creator = &restoring_creator_vtable;
  o.creator_user = f;
  assert_ok(hk_session_new(&f->s, &o, &f->st), &f->st);
  assert_true(holds(&f->m, hk_session_raw_session(f->s), 5));
  assert_int_equal(seen.calls, 3);
  assert_true(seen.null_seen);
  f->hooks[0] = NULL;
  free(p5);
}

/* The session manager's half: hk_session_manager_restored_checkpoint()
 * names what the last prepare_session / recover_session restored; NULL
 * when it initialized, failed, or was a wait_for_session. */
static void test_restore__sm_restored_checkpoint_reports_last_call(void **state) {
  fx *f = *state;
  char *p2 = prefix_of(f, 2), *missing = test_path(f->root, "nowhere");
  int initialized = 0;
  make_sm(f);
  assert_null(hk_session_manager_restored_checkpoint(NULL));
  assert_null(hk_session_manager_restored_checkpoint(f->sm));
  save(f, 1);
  save(f, 2);
  assert_ok(prepare(f), &f->st);
  assert_string_equal(hk_session_manager_restored_checkpoint(f->sm), p2);
  drop_out(f);
  /* nothing to restore: initialized */
  f->po.checkpoint_dir = missing;
  assert_ok(prepare(f), &f->st);
  assert_null(hk_session_manager_restored_checkpoint(f->sm));
  drop_out(f);
  /* recover_session: restored and ready */
  f->po.checkpoint_dir = f->dir;
  assert_ok(hk_session_manager_recover_session(&f->out, &initialized, f->sm, &f->po, &f->st), &f->st);
  assert_int_equal(initialized, 1);
  assert_string_equal(hk_session_manager_restored_checkpoint(f->sm), p2);
  drop_out(f);
  /* an explicit checkpoint, as given */
  f->po.checkpoint_dir = NULL;
  f->po.checkpoint_filename_with_path = p2;
  assert_ok(prepare(f), &f->st);
  assert_string_equal(hk_session_manager_restored_checkpoint(f->sm), p2);
  drop_out(f);
  /* a failed call reports nothing */
  f->po.checkpoint_filename_with_path = missing;
  assert_status(prepare(f), &f->st, HK_NOT_FOUND, NULL);
  assert_null(hk_session_manager_restored_checkpoint(f->sm));
  f->po.checkpoint_filename_with_path = p2;
  assert_ok(prepare(f), &f->st);
  drop_out(f);
  assert_non_null(hk_session_manager_restored_checkpoint(f->sm));
  /* a worker's wait never restores (here it gives up at once: nothing is
   * initialized) */
  assert_status(hk_session_manager_wait_for_session(&f->out, f->sm, 0, &f->st), &f->st, HK_DEADLINE_EXCEEDED, NULL);
  assert_null(hk_session_manager_restored_checkpoint(f->sm));
  free(p2);
  free(missing);
}

static hk_hook *ckpt_hook(fx *f, int64_t save_steps) {
  hk_checkpoint_saver_options o = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
  hk_hook *h = NULL;
  o.env = &f->te->env;
  o.checkpoint_dir = f->dir;
  o.save_steps = save_steps;
  assert_ok(hk_checkpoint_saver_hook_new(&h, &o, &f->st), &f->st);
  return h;
}

static void close_session(fx *f) {
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  hk_session_free(f->s);
  f->s = NULL;
  for (size_t i = 0; i < 2; i++) {
    hk_hook_free(f->hooks[i]);
    f->hooks[i] = NULL;
  }
}

/* Train 5 steps with a CheckpointSaverHook (save_steps 2), close; a new
 * session over a new graph of the same structure but another initializer
 * seed resumes from the last checkpoint (step 5, the final save at end)
 * with the trained values, then keeps training and saving from there. */
static void test_restore__e2e_train_save_resume(void **state) {
  fx *f = *state;
  hk_session_options o;
  float w0[NW], w[NW], want[NW], init2[NW];
  int64_t gs = -1;
  int runs = 0;
  static const int listed[5] = {0, 2, 4, 5, 7};

  f->hooks[0] = ckpt_hook(f, 2);
  f->hooks[1] = stop_after(5);
  session_options(f, &o, HK_SESSION_MONITORED, 2);
  assert_ok(hk_session_new(&f->s, &o, &f->st), &f->st);
  fetch_state(f->s, &f->m, w0, &gs);
  assert_int_equal(gs, 0); /* nothing to restore: initialized */
  while (!hk_session_should_stop(f->s)) {
    assert_ok(run_train(f->s, &f->m, &f->st), &f->st);
    assert_true(++runs <= 10);
  }
  assert_int_equal(runs, 5);
  close_session(f);
  assert_true(ckpt_exists(f, 5));
  for (size_t k = 0; k < NW; k++) {
    want[k] = w0[k];
    for (int i = 0; i < 5; i++) want[k] += 1.0f;
  }

  /* a new process: same structure, another seed */
  model_build(&f->m2, f->te, B_F64_4, 2);
  initial_w(&f->m2, init2);
  assert_memory_not_equal(init2, want, sizeof want);
  f->hooks[0] = ckpt_hook(f, 2);
  f->hooks[1] = stop_after(2);
  session_options(f, &o, HK_SESSION_MONITORED, 2);
  o.executor = f->m2.ex;
  assert_ok(hk_session_new(&f->s, &o, &f->st), &f->st);
  fetch_state(f->s, &f->m2, w, &gs);
  assert_int_equal(gs, 5);
  assert_memory_equal(w, want, sizeof want);
  runs = 0;
  while (!hk_session_should_stop(f->s)) {
    assert_ok(run_train(f->s, &f->m2, &f->st), &f->st);
    assert_true(++runs <= 10);
  }
  assert_int_equal(runs, 2);
  close_session(f);
  /* the resumed run's default Saver adopted the list and kept extending it */
  assert_state_lists(f, listed, 5);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_restore__a_session_without_a_state_file_resumes_from_the_scan, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_restore__session_default_scaffold_restores, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__session_explicit_scaffold_saver_used, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__session_restore_failure_no_after_create, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__e2e_train_save_resume, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__the_creation_context_names_the_restored_checkpoint, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_restore__sm_restored_checkpoint_reports_last_call, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
