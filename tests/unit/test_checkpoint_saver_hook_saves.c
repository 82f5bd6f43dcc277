/*
 * Tests of CheckpointSaverHook and its listeners (contract group K): when it
 * saves (C94, C96, C97, C98, C101), listeners' stop requests and failures,
 * graph.txt and no per-checkpoint companion (C102), the final save after a
 * signal stop (D12), and the checkpoint a session just restored not saved
 * again. *
 * Driven through real sessions over the scripted fake executor (a fetched
 * GS is the value at the start of the run, H29) and real temporary
 * directories; C100 drives the hook's vtable directly, as a harness would.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "checkpoint_saver_hook_tests.h"

/* ---- C94, C96, C97, C98, C101 --------------------------------------------------- */

/* C101: with save_steps N from GS 0, checkpoints are written at 0 and every N steps, and at the end. */
static void test_checkpoint_saver_hook__save_steps_1_saves_at_creation_and_after_every_step(void **state) {
  fixture *f = *state;
  int64_t gs, v;
  hk_checkpoint_state *cs = NULL;

  open_ok(f);
  assert_ok(step(f), &f->st);
  assert_ok(step(f), &f->st);
  assert_ok(close_session(f), &f->st);

  assert_true(ckpt_exists(f, "model.ckpt", 0));
  assert_true(ckpt_exists(f, "model.ckpt", 1));
  assert_true(ckpt_exists(f, "model.ckpt", 2));
  assert_int_equal(count_files(f, ".safetensors"), 3);
  assert_int_equal(f->l[0].begin, 1);
  assert_int_equal(f->l[0].before, 3);
  assert_int_equal(f->l[0].after, 3);
  assert_int_equal(f->l[0].end, 1);
  assert_int_equal(f->l[1].before, 3);
  assert_true(f->l[0].before_steps[0] == 0 && f->l[0].before_steps[1] == 1 && f->l[0].before_steps[2] == 2);
  assert_true(f->l[0].end_step == 2);
  /* C97: nothing extra at end: the final step was just saved. */
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "Saving checkpoints for 2 into"), 1);

  /* Each checkpoint holds its step's values. */
  read_ckpt(f, 1, &gs, &v);
  assert_true(gs == 1 && v == 5);
  read_ckpt(f, 2, &gs, &v);
  assert_true(gs == 2 && v == 10);

  /* The scaffold's Saver managed them (state file, C99). */
  assert_ok(hk_checkpoint_state_get(&cs, &f->te->env, f->dir, NULL, &f->st), &f->st);
  assert_int_equal(hk_checkpoint_state_count(cs), 3);
  assert_non_null(strstr(hk_checkpoint_state_model_path(cs), "model.ckpt-2"));
  hk_checkpoint_state_free(cs);
}

/* C98: a save calls every listener's before_save, saves, then every after_save, in order, logging each stage. */
static void test_checkpoint_saver_hook__a_save_calls_listeners_in_order_and_logs_each_stage(void **state) {
  fixture *f = *state;
  char *save_path = test_path(f->dir, "model.ckpt");
  char line[600];
  const char *pos;

  open_ok(f);
  /* C98: listeners in order, before then after. */
  assert_string_equal(f->order,
                      "first.begin@-1;second.begin@-1;first.before_save@0;second.before_save@0;"
                      "first.after_save@0;second.after_save@0;");
  /* One INFO line per checkpoint; the listener lines are DEBUG (H62). */
  assert_logged(f->te, HK_LOG_DEBUG, "Calling checkpoint listeners before saving checkpoint 0...");
  snprintf(line, sizeof line, "Saving checkpoints for 0 into %s.", save_path);
  assert_logged(f->te, HK_LOG_INFO, line);
  assert_logged(f->te, HK_LOG_DEBUG, "Calling checkpoint listeners after saving checkpoint 0...");
  /* The log lines come in C98's order. */
  {
    size_t i, a = 0, b = 0, c = 0;
    for (i = 0; i < f->te->log.n; i++) {
      pos = f->te->log.lines[i].text;
      if (strstr(pos, "before saving checkpoint 0") && !a) a = i + 1;
      if (strstr(pos, "Saving checkpoints for 0") && !b) b = i + 1;
      if (strstr(pos, "after saving checkpoint 0") && !c) c = i + 1;
    }
    assert_true(a > 0 && a < b && b < c);
  }
  free(save_path);
}

/* C101: with save_steps 3 from GS 0, checkpoints are written at 0, 3 and 6. */
static void test_checkpoint_saver_hook__save_steps_3_saves_at_0_3_and_6(void **state) {
  fixture *f = *state;
  int i;

  f->o.save_steps = 3;
  open_ok(f);
  for (i = 0; i < 7; i++) assert_ok(step(f), &f->st);
  assert_int_equal(count_files(f, ".safetensors"), 3); /* 0, 3, 6 */
  assert_true(ckpt_exists(f, "model.ckpt", 3));
  assert_true(ckpt_exists(f, "model.ckpt", 6));
  assert_ok(close_session(f), &f->st);
  /* C97: the final step 7 was not saved yet. */
  assert_true(ckpt_exists(f, "model.ckpt", 7));
  assert_int_equal(count_files(f, ".safetensors"), 4);
  assert_int_equal(f->l[0].before, 4);
  assert_true(f->l[0].end_step == 7);
}

/* C96: with save_secs, after_run saves once the interval has passed on the env's clock. */
static void test_checkpoint_saver_hook__save_secs_saves_when_the_clock_passes_the_interval(void **state) {
  fixture *f = *state;

  f->o.save_steps = HK_UNSET_STEPS;
  f->o.save_secs = 10;
  open_ok(f);
  assert_ok(step(f), &f->st);
  assert_ok(step(f), &f->st);
  assert_int_equal(count_files(f, ".safetensors"), 1); /* only the creation save */
  test_clock_advance(&f->te->clock, 10.0);
  assert_ok(step(f), &f->st);
  assert_true(ckpt_exists(f, "model.ckpt", 3));
  assert_ok(step(f), &f->st);
  assert_int_equal(count_files(f, ".safetensors"), 2);
  assert_ok(close_session(f), &f->st);
  assert_true(ckpt_exists(f, "model.ckpt", 4));
}

/* C95: before_run fetches the global step on every run. */
static void test_checkpoint_saver_hook__fetches_the_global_step_on_every_run(void **state) {
  fixture *f = *state;
  const fake_run_record *rec;

  f->o.save_steps = 100;
  open_ok(f);
  assert_ok(step(f), &f->st);
  rec = fake_executor_last_run(f->fx);
  assert_int_equal(rec->nfetches, 1);
  assert_true(rec->fetches[0] == f->gs);
  assert_ok(step(f), &f->st);
  rec = fake_executor_last_run(f->fx);
  assert_true(rec->nfetches == 1 && rec->fetches[0] == f->gs);
}

/* C97: end() saves when the final GS was not saved, and calls listeners'
 * end with GS either way. */
static void test_checkpoint_saver_hook__end_calls_listeners_without_saving_a_saved_step_again(void **state) {
  fixture *f = *state;

  f->o.save_steps = 100;
  open_ok(f);
  assert_ok(close_session(f), &f->st);
  assert_int_equal(f->l[0].before, 1); /* the creation save only: GS 0 was just saved */
  assert_int_equal(f->l[0].end, 1);
  assert_int_equal(f->l[1].end, 1);
  assert_true(f->l[0].end_step == 0);
}

/* ---- C94, C96, C98: listener stop requests ------------------------------------------ */

/* C96: a listener's after_save returning a stop request stops the session after the step. */
static void test_checkpoint_saver_hook__a_listener_s_stop_request_stops_the_session(void **state) {
  fixture *f = *state;

  f->l[0].stop_at = 2;
  open_ok(f);
  assert_ok(step(f), &f->st);
  assert_false(hk_session_should_stop(f->s));
  assert_ok(step(f), &f->st); /* saves at 2: the first listener asks to stop */
  assert_true(hk_session_should_stop(f->s));
  /* C98: every listener is still called, and the request is logged by name. */
  assert_int_equal(f->l[1].after, 3);
  assert_logged(f->te, HK_LOG_INFO, "A CheckpointSaverListener requested that training be stopped. listener: first");
  assert_status(step(f), &f->st, HK_FAILED_PRECONDITION, "Run called even after should_stop requested.");
}

/* C94: a listener's stop request from the save at creation is logged and ignored. */
static void test_checkpoint_saver_hook__a_stop_request_at_the_creation_save_is_logged_and_ignored(void **state) {
  fixture *f = *state;

  f->l[1].stop_at = 0;
  f->ls[1].name = NULL; /* named by its index */
  open_ok(f);
  assert_false(hk_session_should_stop(f->s));
  assert_logged(f->te, HK_LOG_INFO,
                "A CheckpointSaverListener requested that training be stopped. listener: listener 1");
  assert_ok(step(f), &f->st);
}

/* ---- C98: failures stop the sequence ----------------------------------------------- */

/* C98: a failing before_save fails the run, and nothing is saved. */
static void test_checkpoint_saver_hook__a_failing_before_save_fails_the_run_before_saving(void **state) {
  fixture *f = *state;

  open_ok(f);
  f->l[1].fail_before = HK_PERMISSION_DENIED;
  assert_status(step(f), &f->st, HK_PERMISSION_DENIED, "listener second before_save failed");
  assert_false(ckpt_exists(f, "model.ckpt", 1)); /* the save did not happen */
  assert_int_equal(f->l[0].after, 1);
}

/* C98: a failing after_save fails the run after the checkpoint was written; later listeners are not called. */
static void test_checkpoint_saver_hook__a_failing_after_save_fails_the_run_after_saving(void **state) {
  fixture *f = *state;

  open_ok(f);
  f->l[0].fail_after = HK_INTERNAL;
  assert_status(step(f), &f->st, HK_INTERNAL, "listener first after_save failed");
  assert_true(ckpt_exists(f, "model.ckpt", 1));
  assert_int_equal(f->l[1].after, 1); /* the second listener was not called for step 1 */
}

/* C97: a listener's failing end fails close() and skips the later listeners. */
static void test_checkpoint_saver_hook__a_failing_end_listener_fails_close_and_skips_later_ones(void **state) {
  fixture *f = *state;

  open_ok(f);
  f->l[0].fail_end = HK_DATA_LOSS;
  assert_status(close_session(f), &f->st, HK_DATA_LOSS, "listener first end failed");
  assert_int_equal(f->l[1].end, 0);
}

/* C98: the Saver's error fails the run that saves. */
static void test_checkpoint_saver_hook__a_saver_error_fails_the_run(void **state) {
  fixture *f = *state;
  faulty_fs ff;

  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &f->te->env);
  open_ok(f);
  faulty_fs_match(&ff, ".safetensors");
  faulty_fs_fail_errno(&ff, FAULTY_FS_WRITE, 0, ENOSPC, 1);
  assert_status(step(f), &f->st, HK_RESOURCE_EXHAUSTED, "safetensors");
  assert_false(ckpt_exists(f, "model.ckpt", 1));
  assert_int_equal(f->l[0].after, 1); /* after_save is not called for the failed save */
  faulty_fs_reset(&ff);
  session_close_and_free(f->s);
  f->s = NULL;
  hk_hook_free(f->hook);
  f->hook = NULL;
  assert_int_equal(faulty_fs_open_handles(&ff), 0);
  faulty_fs_destroy(&ff);
}

/* ---- C102: graph.txt, and no per-checkpoint companion ------------------------------ */

/* C94, C102: save_graph_def writes the executor's description once, as
 * graph.txt (hooked's own text, not a TensorFlow GraphDef, so not
 * graph.pbtxt), and nothing beside each checkpoint (no .meta: it would not
 * be a MetaGraphDef either). */
static void test_checkpoint_saver_hook__save_graph_def_writes_graph_txt_once(void **state) {
  fixture *f = *state;
  char *graph = test_path(f->dir, "graph.txt");
  char *text;
  size_t n = 0;

  open_ok(f);
  assert_ok(step(f), &f->st);
  assert_ok(close_session(f), &f->st);
  assert_true(test_path_exists(graph));
  text = test_read_file(graph, &n);
  assert_non_null(text);
  assert_non_null(strstr(text, "global_step")); /* the executor's description */
  free(text);
  assert_int_equal(count_files(f, "graph.pbtxt"), 0);
  assert_int_equal(count_files(f, ".meta"), 0);
  assert_int_equal(count_files(f, ".graph.txt"), 0);
  assert_int_equal(count_files(f, "graph.txt"), 1);
  assert_true(ckpt_exists(f, "model.ckpt", 1));
  assert_int_equal(count_files(f, ".safetensors"), 2);
  free(graph);
}

/* C102: with save_graph_def false, no graph.txt and no companion file is written. */
static void test_checkpoint_saver_hook__without_save_graph_def_no_graph_file_is_written(void **state) {
  fixture *f = *state;

  f->o.save_graph_def = 0;
  open_ok(f);
  assert_ok(step(f), &f->st);
  assert_ok(close_session(f), &f->st);
  assert_int_equal(count_files(f, "graph.txt"), 0);
  assert_int_equal(count_files(f, ".meta"), 0);
  assert_int_equal(count_files(f, ".safetensors"), 2);
}

/* C94: an executor that cannot describe its graph gets one log line, and no graph.txt. */
static void test_checkpoint_saver_hook__an_executor_without_a_description_is_logged_once(void **state) {
  fixture *f = *state;

  fake_executor_set_unimplemented_defaults(f->fx, 1);
  /* default_op is hidden too: give the session a Scaffold whose init_fn
   * initializes GS and v through the raw session. */
  hk_scaffold_options sco = HK_SCAFFOLD_OPTIONS_INIT;
  hk_handle init = fake_executor_add_op(f->fx, "init");
  hk_handle ready = fake_executor_add_report(f->fx, "ready", FAKE_REPORT_ALL);
  hk_handle ready_local = fake_executor_add_report(f->fx, "ready_local", FAKE_REPORT_GLOBAL);
  hk_handle local_init = fake_executor_add_op(f->fx, "local_init");
  fake_executor_op_initializes(f->fx, init, FAKE_INIT_GLOBAL);
  sco.env = &f->te->env;
  sco.init_op = init;
  sco.ready_op = ready;
  sco.ready_for_local_init_op = ready_local;
  sco.local_init_op = local_init;
  assert_ok(hk_scaffold_new(&f->scaffold, &sco, &f->st), &f->st);
  open_ok(f);
  assert_ok(step(f), &f->st);
  assert_ok(close_session(f), &f->st);
  assert_int_equal(count_files(f, "graph.txt"), 0);
  assert_int_equal(count_files(f, ".meta"), 0);
  assert_int_equal(count_files(f, ".safetensors"), 2);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "does not describe its graph"), 1);
}

/* ---- D12: a signal stop ends with the final checkpoint --------------------------------- */

/* D12: a signal is a clean stop, so end() saves the final step. */
static void test_checkpoint_saver_hook__a_signal_stop_still_saves_the_final_step(void **state) {
  fixture *f = *state;
  int i;

  f->o.save_steps = 1000;
  open_ok(f);
  assert_ok(hk_signal_install(&f->st), &f->st);
  for (i = 0; i < 3; i++) assert_ok(step(f), &f->st);
  raise(SIGTERM);
  assert_true(hk_session_should_stop(f->s));
  assert_ok(close_session(f), &f->st);
  assert_ok(hk_signal_uninstall(&f->st), &f->st);
  assert_true(ckpt_exists(f, "model.ckpt", 3));
  assert_int_equal(f->l[0].end, 1);
}

/* D12: a clean stop through the coordinator still runs end(), which saves the final step. */
static void test_checkpoint_saver_hook__a_coordinator_clean_stop_still_saves_the_final_step(void **state) {
  fixture *f = *state;

  f->o.save_steps = 1000;
  open_ok(f);
  assert_ok(step(f), &f->st);
  assert_ok(step(f), &f->st);
  hk_coordinator_request_stop(hk_session_coordinator(f->s), HK_OK, NULL);
  assert_true(hk_session_should_stop(f->s));
  assert_ok(close_session(f), &f->st);
  assert_true(ckpt_exists(f, "model.ckpt", 2));
}

/* C16: an unclean close calls no end(): no final save. */
static void test_checkpoint_saver_hook__an_unclean_close_makes_no_final_save(void **state) {
  fixture *f = *state;

  f->o.save_steps = 1000;
  open_ok(f);
  assert_ok(step(f), &f->st);
  assert_status(hk_session_close(f->s, HK_INTERNAL, &f->st), &f->st, HK_INTERNAL, NULL);
  assert_false(ckpt_exists(f, "model.ckpt", 1));
  assert_int_equal(f->l[0].end, 0);
}

/* H11: a hook reused by a later session starts over (begin resets). */
static void test_checkpoint_saver_hook__a_hook_reused_by_a_later_session_starts_over(void **state) {
  fixture *f = *state;

  f->o.save_steps = 1000;
  open_ok(f);
  assert_ok(step(f), &f->st);
  assert_ok(close_session(f), &f->st);
  assert_ok(open_session(f), &f->st);
  assert_ok(close_session(f), &f->st);
  assert_int_equal(f->l[0].begin, 2);
  assert_int_equal(f->l[0].end, 2);
  assert_int_equal(count_files(f, "events.out.tfevents."), 2);
}

/* C94: a re-creation (MS recovery, D2) runs after_create_session again:
 * another save at the GS of the new raw session; begin() does not rerun. */
static hk_code preempt_first_train(void *user, fake_executor *fx, const hk_run_args *args, hk_status *st) {
  fixture *f = user;
  (void)fx;
  if (args->ntargets == 0 || args->targets[0] != f->train || f->preempted) return HK_OK;
  f->preempted = 1;
  return hk_status_set(st, HK_ABORTED, "preempted");
}

/* C94: after_create_session saves again after every re-creation of the session. */
static void test_checkpoint_saver_hook__saves_again_after_the_session_is_recreated(void **state) {
  fixture *f = *state;

  f->o.save_steps = 1000;
  open_ok(f);
  assert_int_equal(f->l[0].before, 1);
  fake_executor_on_run(f->fx, preempt_first_train, f);
  assert_ok(step(f), &f->st); /* preempted, recovered, re-run */
  fake_executor_on_run(f->fx, NULL, NULL);
  assert_int_equal(fake_executor_sessions_opened(f->fx), 2);
  assert_int_equal(f->l[0].begin, 1);
  assert_int_equal(f->l[0].before, 2);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "Saving checkpoints for 0 into"), 2);
}

/* ---- C94, C97: the checkpoint a session just restored is not saved again ------------ */

/* A monitored session with the hook that restores from the hook's
 * directory at creation (C47, C68). */
static hk_code open_restoring(fixture *f) {
  hk_session_options o;
  test_session_options(&o, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(f->fx), &f->hook, 1);
  o.checkpoint_dir = f->dir;
  return hk_session_new(&f->s, &o, &f->st);
}

/* File-system calls that change something. */
static long mutating_calls(faulty_fs *ff) {
  static const int slots[] = {FAULTY_FS_CREATE_EXCL, FAULTY_FS_WRITE,  FAULTY_FS_SYNC, FAULTY_FS_SYNC_DIR,
                              FAULTY_FS_RENAME,      FAULTY_FS_UNLINK, FAULTY_FS_MKDIR};
  long n = 0;
  for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++) n += faulty_fs_calls(ff, slots[i]);
  return n;
}

/* C94 (revised), C97: a session that restored the checkpoint of GS from
 * this hook's directory does not save it again at creation: no file is
 * written or synced (graph.txt already holds the description), no
 * listener's before_save/after_save runs for it, an INFO line says why — so
 * a resume succeeds on a full disk. The timer is at GS: closing before any
 * step saves nothing either (the listeners' end still runs), and the next
 * save comes after the cadence. */
static void test_checkpoint_saver_hook__restored_checkpoint_not_saved_again(void **state) {
  fixture *f = *state;
  faulty_fs ff;
  char line[1200];
  char *save_path = test_path(f->dir, "model.ckpt");
  int i;

  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &f->te->env); /* before the hook and the sessions copy the env */
  f->o.save_steps = 2;
  make_hook(f);
  assert_ok(open_restoring(f), &f->st); /* an empty directory: initialized */
  for (i = 0; i < 4; i++) assert_ok(step(f), &f->st);
  assert_ok(close_session(f), &f->st);
  assert_true(ckpt_exists(f, "model.ckpt", 4));
  assert_int_equal(f->l[0].before, 3); /* 0, 2, 4 */
  assert_int_equal(f->l[0].after, 3);

  /* a new session on a full disk restores step 4 */
  faulty_fs_reset(&ff);
  faulty_fs_space(&ff, 0);
  test_log_clear(&f->te->log);
  assert_ok(open_restoring(f), &f->st);
  assert_int_equal(fake_executor_get_i64(f->fx, NULL, f->gs), 4);
  assert_int_equal(fake_executor_get_i64(f->fx, NULL, f->v), 20);
  assert_int_equal(mutating_calls(&ff), 0);
  for (i = 0; i < 2; i++) {
    assert_int_equal(f->l[i].begin, 2);
    assert_int_equal(f->l[i].before, 3);
    assert_int_equal(f->l[i].after, 3);
  }
  snprintf(line, sizeof line, "Not saving checkpoint 4 into %s at session creation: %s-4 was just restored from it.",
           save_path, save_path);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, line), 1);
  assert_int_equal(test_log_count(&f->te->log, -1, "Saving checkpoints for"), 0);
  /* closing at once: GS 4 is not saved again (C97) */
  assert_ok(close_session(f), &f->st);
  assert_int_equal(mutating_calls(&ff), 0);
  assert_int_equal(f->l[0].before, 3);
  assert_int_equal(f->l[0].end, 2);
  assert_true(f->l[0].end_step == 4);
  assert_int_equal(count_files(f, ".safetensors"), 3);

  /* room again: the next save is at 6, the cadence after 4, not at 5 */
  faulty_fs_reset(&ff);
  assert_ok(open_restoring(f), &f->st);
  assert_int_equal(f->l[0].before, 3);
  assert_ok(step(f), &f->st);
  assert_false(ckpt_exists(f, "model.ckpt", 5));
  assert_ok(step(f), &f->st);
  assert_true(ckpt_exists(f, "model.ckpt", 6));
  assert_int_equal(f->l[0].before, 4);
  assert_ok(close_session(f), &f->st);
  assert_int_equal(f->l[0].before, 4); /* 6 was just saved (C97) */

  hk_hook_free(f->hook);
  f->hook = NULL;
  f->te->env.fs = NULL;
  f->te->env.fs_user = NULL;
  assert_int_equal(faulty_fs_open_handles(&ff), 0);
  faulty_fs_destroy(&ff);
  free(save_path);
}

/* C94: only the checkpoint of GS from this hook's own directory counts. A
 * hook saving elsewhere saves as usual at creation; so does one whose
 * directory is spelled with a trailing slash, then recognized as the same. */
static void test_checkpoint_saver_hook__a_restore_from_another_directory_still_saves_at_creation(void **state) {
  fixture *f = *state;
  char *other = test_path(f->tmp, "other");
  char *slashed = malloc(strlen(f->dir) + 3);

  assert_non_null(slashed);
  f->o.save_steps = 100;
  f->o.nlisteners = 0;
  make_hook(f);
  assert_ok(open_restoring(f), &f->st);
  assert_ok(step(f), &f->st);
  assert_ok(close_session(f), &f->st); /* saved 0 and 1 */
  hk_hook_free(f->hook);
  f->hook = NULL;

  /* the session restores step 1 from f->dir; this hook writes into `other` */
  f->o.checkpoint_dir = other;
  make_hook(f);
  assert_ok(open_restoring(f), &f->st);
  assert_true(ckpt_data_exists(other, "model.ckpt", 1));
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "Not saving checkpoint"), 0);
  assert_ok(close_session(f), &f->st);
  hk_hook_free(f->hook);
  f->hook = NULL;

  /* "<dir>//" is the same directory */
  strcpy(slashed, f->dir);
  strcat(slashed, "//");
  f->o.checkpoint_dir = slashed;
  make_hook(f);
  assert_ok(open_restoring(f), &f->st);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "Not saving checkpoint 1 into"), 1);
  assert_ok(close_session(f), &f->st);
  free(other);
  free(slashed);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_checkpoint_saver_hook__save_steps_1_saves_at_creation_and_after_every_step),
      T(test_checkpoint_saver_hook__a_save_calls_listeners_in_order_and_logs_each_stage),
      T(test_checkpoint_saver_hook__save_steps_3_saves_at_0_3_and_6),
      T(test_checkpoint_saver_hook__save_secs_saves_when_the_clock_passes_the_interval),
      T(test_checkpoint_saver_hook__fetches_the_global_step_on_every_run),
      T(test_checkpoint_saver_hook__end_calls_listeners_without_saving_a_saved_step_again),
      T(test_checkpoint_saver_hook__a_listener_s_stop_request_stops_the_session),
      T(test_checkpoint_saver_hook__a_stop_request_at_the_creation_save_is_logged_and_ignored),
      T(test_checkpoint_saver_hook__a_failing_before_save_fails_the_run_before_saving),
      T(test_checkpoint_saver_hook__a_failing_after_save_fails_the_run_after_saving),
      T(test_checkpoint_saver_hook__a_failing_end_listener_fails_close_and_skips_later_ones),
      T(test_checkpoint_saver_hook__a_saver_error_fails_the_run),
      T(test_checkpoint_saver_hook__save_graph_def_writes_graph_txt_once),
      T(test_checkpoint_saver_hook__without_save_graph_def_no_graph_file_is_written),
      T(test_checkpoint_saver_hook__an_executor_without_a_description_is_logged_once),
      T(test_checkpoint_saver_hook__a_signal_stop_still_saves_the_final_step),
      T(test_checkpoint_saver_hook__a_coordinator_clean_stop_still_saves_the_final_step),
      T(test_checkpoint_saver_hook__an_unclean_close_makes_no_final_save),
      T(test_checkpoint_saver_hook__a_hook_reused_by_a_later_session_starts_over),
      T(test_checkpoint_saver_hook__saves_again_after_the_session_is_recreated),
      T(test_checkpoint_saver_hook__restored_checkpoint_not_saved_again),
      T(test_checkpoint_saver_hook__a_restore_from_another_directory_still_saves_at_creation),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
