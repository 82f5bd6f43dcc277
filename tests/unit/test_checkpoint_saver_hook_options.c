/*
 * Tests of CheckpointSaverHook (contract group K): its options (C92;
 * C75, H25, D9 for the cadence), begin (C93) and the Saver it resolves
 * (C99). *
 * Driven through real sessions over the scripted fake executor (a fetched
 * GS is the value at the start of the run, H29) and real temporary
 * directories; C100 drives the hook's vtable directly, as a harness would.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "checkpoint_saver_hook_tests.h"

/* ---- C92: options ---------------------------------------------------------------- */

static void expect_invalid(fixture *f, const char *substr) {
  hk_hook *h = (hk_hook *)1;
  hk_status st = HK_STATUS_INIT;
  assert_status(hk_checkpoint_saver_hook_new(&h, &f->o, &st), &st, HK_INVALID_ARGUMENT, substr);
  assert_null(h);
}

/* C92: checkpoint_dir is required, exactly one cadence is given, and every bad option is INVALID_ARGUMENT naming it. */
static void test_checkpoint_saver_hook__bad_options_are_invalid_argument_naming_the_option(void **state) {
  fixture *f = *state;
  hk_checkpoint_saver_options good = f->o;
  static const hk_checkpoint_listener_vtable v0 = {0, NULL, NULL, NULL, NULL};
  static const hk_checkpoint_listener_vtable v9 = {9, NULL, NULL, NULL, NULL};
  hk_checkpoint_listener bad;
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  hk_scaffold_options sco = HK_SCAFFOLD_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_hook *h = (hk_hook *)1;

  assert_status(hk_checkpoint_saver_hook_new(&h, NULL, &st), &st, HK_INVALID_ARGUMENT, "checkpoint_dir");
  assert_null(h);
  assert_status(hk_checkpoint_saver_hook_new(NULL, &f->o, &st), &st, HK_INVALID_ARGUMENT, "out");

  f->o.checkpoint_dir = NULL;
  expect_invalid(f, "checkpoint_dir");
  f->o = good;
  f->o.version = 0;
  expect_invalid(f, "version");

  /* C92: saver and scaffold together. */
  f->o = good;
  so.executor = fake_executor_executor(f->fx);
  so.env = &f->te->env;
  assert_ok(hk_saver_new(&f->saver, &so, &st), &st);
  sco.env = &f->te->env;
  assert_ok(hk_scaffold_new(&f->scaffold, &sco, &st), &st);
  f->o.saver = f->saver;
  f->o.scaffold = f->scaffold;
  expect_invalid(f, "You cannot provide both saver and scaffold.");

  /* C75/D9 under the hook's names; "given" includes 0. */
  f->o = good;
  f->o.save_steps = HK_UNSET_STEPS;
  expect_invalid(f, "Either save_secs or save_steps should be provided.");
  f->o.save_secs = 0;
  f->o.save_steps = 0;
  expect_invalid(f, "Can not provide both save_secs and save_steps.");
  /* H25: zero and non-finite cadences are refused, naming the option. */
  f->o.save_secs = HK_UNSET_SECS;
  expect_invalid(f, "save_steps");
  f->o.save_steps = HK_UNSET_STEPS;
  f->o.save_secs = 0;
  expect_invalid(f, "save_secs");
  f->o.save_secs = NAN;
  expect_invalid(f, "save_secs");

  f->o = good;
  f->o.steps_per_run = 0;
  expect_invalid(f, "steps_per_run");

  /* H32: the basename must be a valid name. */
  f->o = good;
  f->o.checkpoint_basename = "a/b";
  expect_invalid(f, "checkpoint_basename");
  f->o.checkpoint_basename = "..";
  expect_invalid(f, "checkpoint_basename");
  f->o.checkpoint_basename = "";
  expect_invalid(f, "checkpoint_basename");

  /* H10: listener vtables. */
  f->o = good;
  bad.vtable = NULL;
  bad.user = NULL;
  bad.name = "bad";
  f->o.listeners = &bad;
  f->o.nlisteners = 1;
  expect_invalid(f, "listeners[0].vtable");
  bad.vtable = &v0;
  expect_invalid(f, "listeners[0].vtable->version");
  bad.vtable = &v9;
  expect_invalid(f, "listeners[0].vtable->version");
  f->o.listeners = NULL;
  expect_invalid(f, "listeners");

  /* H3: nothing was created by any failure, and no listener ran. */
  assert_false(test_path_exists(f->dir));
  assert_int_equal(f->l[0].begin, 0);
  assert_int_equal(test_log_count(&f->te->log, -1, "Create CheckpointSaverHook."), 0);

  f->o = good;
  make_hook(f);
  assert_logged(f->te, HK_LOG_INFO, "Create CheckpointSaverHook.");
  assert_false(test_path_exists(f->dir)); /* created by begin(), not by the constructor */
}

/* C92, C104: a hook created without an env logs its creation line at its
 * first begin(), through the env of the session it serves, so one log level
 * set there reaches it: at WARNING no INFO line arrives; at INFO the line
 * arrives once, at begin() and not at construction, and a later session
 * of the same hook does not repeat it. */
static void test_checkpoint_saver_hook__without_an_env_logs_its_creation_through_the_session_s(void **state) {
  fixture *f = *state;
  hk_env warn = f->te->env;
  hk_hook *async = NULL;
  char line[700];

  warn.log_level = HK_LOG_WARNING;
  f->o.env = NULL;
  make_hook(f);
  assert_int_equal(test_log_count(&f->te->log, -1, "Create CheckpointSaverHook."), 0);
  assert_ok(
      one_hook_session_new(&f->s, &warn, HK_SESSION_MONITORED, fake_executor_executor(f->fx), &f->hook, NULL, &f->st),
      &f->st);
  assert_int_equal(test_log_count(&f->te->log, -1, "Create CheckpointSaverHook."), 0);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, ""), 0); /* not one INFO line of the session's */
  assert_ok(close_session(f), &f->st);
  hk_hook_free(f->hook);
  f->hook = NULL;

  /* at INFO (the test env logs everything): once, at begin() */
  make_hook(f);
  assert_int_equal(test_log_count(&f->te->log, -1, "Create CheckpointSaverHook."), 0);
  assert_ok(open_session(f), &f->st);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "Create CheckpointSaverHook."), 1);
  assert_ok(close_session(f), &f->st);
  assert_ok(open_session(f), &f->st);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "Create CheckpointSaverHook."), 1);
  assert_ok(close_session(f), &f->st);

  /* the asynchronous hook's line, with its listener count (C104) */
  f->o.nlisteners = 1;
  assert_ok(hk_async_checkpoint_saver_hook_new(&async, &f->o, &f->st), &f->st);
  snprintf(line, sizeof line, "Create AsyncCheckpointSaverHook saving to path\n%s/model.ckpt with 1 listener(s).",
           f->dir);
  assert_int_equal(test_log_count(&f->te->log, -1, line), 0);
  assert_ok(one_hook_session_new(&f->s, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(f->fx), &async, NULL,
                                 &f->st),
            &f->st);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, line), 1);
  assert_ok(close_session(f), &f->st);
  hk_hook_free(async);
}

static void test_checkpoint_saver_hook__options_init(void **state) {
  hk_checkpoint_saver_options o;
  (void)state;
  assert_int_equal(hk_checkpoint_saver_options_init(NULL, HK_CHECKPOINT_SAVER_OPTIONS_VERSION), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_checkpoint_saver_options_init(&o, 99), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_checkpoint_saver_options_init(&o, HK_CHECKPOINT_SAVER_OPTIONS_VERSION), HK_OK);
  assert_null(o.checkpoint_dir);
  assert_true(hk_secs_is_unset(o.save_secs));
  assert_true(o.save_steps == HK_UNSET_STEPS);
  assert_int_equal(o.save_graph_def, 1);
  assert_true(o.steps_per_run == 1);
  assert_int_equal(o.block_when_busy, 0);
}

/* ---- C93: begin ------------------------------------------------------------------ */

/* C93: begin() creates checkpoint_dir with its parents and calls every listener's begin. */
static void test_checkpoint_saver_hook__begin_creates_dir_and_runs_listeners(void **state) {
  fixture *f = *state;
  char *nested = test_path(f->dir, "a/b");

  f->o.checkpoint_dir = nested;
  open_ok(f);
  assert_true(test_path_exists(nested));
  assert_int_equal(f->l[0].begin, 1);
  assert_int_equal(f->l[1].begin, 1);
  assert_non_null(strstr(f->order, "first.begin@-1;second.begin@-1;"));
  free(nested);
}

/* D4.5: begin() makes each directory level it creates durable, parent
 * first: one directory fsync per level created, on its parent, before the
 * next level is made; a failing fsync fails begin() naming the directory
 * created and the one synced. Levels that exist cost nothing. */
static void test_checkpoint_saver_hook__created_directories_are_made_durable(void **state) {
  fixture *f = *state;
  faulty_fs ff;
  char *levels[3], *parents[3];
  long fresh, existing;

  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &f->te->env); /* before the hook copies the env */
  levels[0] = strdup(f->dir);       /* tmp/ckpt */
  levels[1] = test_path(f->dir, "a");
  levels[2] = test_path(f->dir, "a/b");
  parents[0] = strdup(f->tmp);
  parents[1] = strdup(levels[0]);
  parents[2] = strdup(levels[1]);
  f->o.checkpoint_dir = levels[2];
  for (int k = 0; k < 3; k++) {
    char want[600], synced[600];
    assert_int_equal(test_tmpdir_remove(f->dir), 0);
    faulty_fs_fail_errno(&ff, FAULTY_FS_SYNC_DIR, k, EIO, 0);
    make_hook(f);
    assert_status(open_session(f), &f->st, HK_UNKNOWN, NULL);
    snprintf(want, sizeof want, "creating directory %s: ", levels[k]);
    snprintf(synced, sizeof synced, " %s: ", parents[k]); /* the fsync that failed names its directory */
    if (!strstr(f->st.message, want) || !strstr(f->st.message, synced))
      fail_msg("message '%s' lacks '%s' or '%s'", f->st.message, want, synced);
    assert_int_equal(faulty_fs_calls(&ff, FAULTY_FS_MKDIR), k + 1); /* level k+1 was never made */
    assert_int_equal(f->l[0].begin, 0);
    hk_hook_free(f->hook);
    f->hook = NULL;
  }

  /* Every level created: 3 more directory fsyncs than when they all exist. */
  assert_int_equal(test_tmpdir_remove(f->dir), 0);
  faulty_fs_reset(&ff);
  open_ok(f);
  fresh = faulty_fs_calls(&ff, FAULTY_FS_SYNC_DIR);
  assert_int_equal(faulty_fs_calls(&ff, FAULTY_FS_MKDIR), 3);
  assert_ok(close_session(f), &f->st);
  faulty_fs_reset(&ff);
  assert_ok(open_session(f), &f->st);
  existing = faulty_fs_calls(&ff, FAULTY_FS_SYNC_DIR);
  assert_int_equal(faulty_fs_calls(&ff, FAULTY_FS_MKDIR), 0);
  assert_int_equal(fresh - existing, 3);
  assert_ok(close_session(f), &f->st);
  hk_hook_free(f->hook);
  f->hook = NULL;
  f->o.checkpoint_dir = f->dir;
  f->te->env.fs = NULL;
  f->te->env.fs_user = NULL;
  for (int k = 0; k < 3; k++) {
    free(levels[k]);
    free(parents[k]);
  }
  faulty_fs_destroy(&ff);
}

/* C98, H1: a save that fails says that saving the checkpoint failed, for
 * which step and into which save path, then the file system's message. */
static void test_checkpoint_saver_hook__failed_save_names_step_and_path(void **state) {
  fixture *f = *state;
  faulty_fs ff;
  char want[1200];

  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &f->te->env); /* before the hook and the session copy the env */
  open_ok(f);                       /* saves 0 at creation */
  assert_ok(step(f), &f->st);       /* and 1 */
  faulty_fs_fail_errno(&ff, FAULTY_FS_WRITE, 0, ENOSPC, 1);
  assert_status(step(f), &f->st, HK_RESOURCE_EXHAUSTED, NULL);
  snprintf(want, sizeof want,
           "Saving checkpoint for step 2 into %s/model.ckpt failed: write model.ckpt-2.safetensors.tmp-", f->dir);
  if (!strstr(f->st.message, want)) fail_msg("message '%s' lacks '%s'", f->st.message, want);
  assert_non_null(strstr(f->st.message, strerror(ENOSPC)));
  assert_int_equal(f->l[0].after, 2); /* no after_save for the failed one */
  faulty_fs_reset(&ff);
  assert_int_equal(count_files(f, ".tmp-"), 0);
  session_close_and_free(f->s);
  f->s = NULL;
  hk_hook_free(f->hook);
  f->hook = NULL;
  f->te->env.fs = NULL;
  f->te->env.fs_user = NULL;
  assert_int_equal(faulty_fs_open_handles(&ff), 0);
  faulty_fs_destroy(&ff);
}

/* C93: begin() without a global step is FAILED_PRECONDITION. */
static void test_checkpoint_saver_hook__begin_without_a_global_step_fails(void **state) {
  fixture *f = *state;
  fake_executor *plain = fake_executor_new(&f->te->env);
  hk_handle train = fake_executor_add_op(plain, "train");

  (void)train;
  make_hook(f);
  assert_status(one_hook_session_new(&f->s, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(plain), &f->hook,
                                     NULL, &f->st),
                &f->st, HK_FAILED_PRECONDITION, "Global step should be created to use CheckpointSaverHook.");
  assert_null(f->s);
  assert_int_equal(f->l[0].begin, 0);
  fake_executor_free(plain);
}

/* C93: a listener's failing begin fails begin() and no later listener is called. */
static void test_checkpoint_saver_hook__a_failing_listener_begin_fails_begin_and_stops_the_loop(void **state) {
  fixture *f = *state;

  f->l[0].fail_begin = HK_INTERNAL;
  make_hook(f);
  assert_status(open_session(f), &f->st, HK_INTERNAL, "listener first begin failed");
  assert_int_equal(f->l[1].begin, 0); /* the loop stopped */
  assert_int_equal(f->l[0].end, 0);
  assert_int_equal(count_files(f, ".safetensors"), 0);
}

/* ---- C99: saver resolution --------------------------------------------------------- */

static void new_saver_of_gs_only(fixture *f) {
  static const char *const only_gs[] = {"global_step"};
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  so.env = &f->te->env;
  so.executor = fake_executor_executor(f->fx);
  so.var_list = only_gs;
  so.nvar_list = 1;
  assert_ok(hk_saver_new(&f->saver, &so, &f->st), &f->st);
}

static int ckpt_has_v(fixture *f, int64_t step) {
  char name[64];
  char *prefix;
  hk_checkpoint_reader *r = NULL;
  size_t i;
  hk_status st = HK_STATUS_INIT;
  int has;

  snprintf(name, sizeof name, "model.ckpt-%lld", (long long)step);
  prefix = test_path(f->dir, name);
  assert_ok(hk_checkpoint_reader_open(&r, &f->te->env, prefix, &st), &st);
  has = hk_checkpoint_reader_find(r, "v", &i, &st) == HK_OK;
  hk_checkpoint_reader_free(r);
  free(prefix);
  return has;
}

/* C99: the explicit saver option comes before any Scaffold's Saver. */
static void test_checkpoint_saver_hook__an_explicit_saver_is_used_first(void **state) {
  fixture *f = *state;

  new_saver_of_gs_only(f);
  f->o.saver = f->saver;
  open_ok(f);
  assert_true(ckpt_exists(f, "model.ckpt", 0));
  assert_false(ckpt_has_v(f, 0)); /* the explicit Saver, not the scaffold's */
}

/* C99: without an explicit saver, the Saver of the scaffold option is used. */
static void test_checkpoint_saver_hook__the_options_scaffold_s_saver_comes_next(void **state) {
  fixture *f = *state;
  hk_scaffold_options sco = HK_SCAFFOLD_OPTIONS_INIT;
  hk_scaffold *other = NULL;

  new_saver_of_gs_only(f);
  sco.env = &f->te->env;
  sco.saver = f->saver;
  assert_ok(hk_scaffold_new(&other, &sco, &f->st), &f->st);
  f->o.scaffold = other;
  open_ok(f); /* the session's own default scaffold saves every variable */
  assert_false(ckpt_has_v(f, 0));
  session_close_and_free(f->s);
  f->s = NULL;
  hk_scaffold_free(other);
}

/* C99: with neither option, the Saver of the session's Scaffold is used. */
static void test_checkpoint_saver_hook__without_either_the_session_scaffold_s_saver_is_used(void **state) {
  fixture *f = *state;

  open_ok(f); /* neither given: the session's Scaffold's Saver, every global variable */
  assert_true(ckpt_has_v(f, 0));
}

/* C99 and C100 outside a session: the hook's callbacks called directly. */
typedef struct harness {
  hk_raw_session *rs;
  struct hk_run_context ctx;
  int64_t stale;
  hk_tensor value;
  hk_run_values values;
} harness;

static void harness_begin(fixture *f, harness *h) {
  hk_executor *ex = fake_executor_executor(f->fx);
  hk_variable_info info;

  assert_ok(hk_executor_finalize(ex, &f->st), &f->st);
  assert_ok(hk_executor_global_step(&info, NULL, ex, &f->st), &f->st);
  assert_ok(hk_raw_session_open(&h->rs, ex, &f->st), &f->st);
  assert_ok(raw_session_assign_global_step(h->rs, 0, &f->st), &f->st);
  memset(&h->ctx, 0, sizeof h->ctx);
  h->ctx.session = h->rs;
  h->value = hk_tensor_scalar_i64(&h->stale);
  memset(&h->values, 0, sizeof h->values);
  h->values.results = &h->value;
  h->values.nresults = 1;
  assert_ok(f->hook->vt->begin(f->hook->user, ex, &f->st), &f->st);
}

static hk_code harness_run(fixture *f, harness *h) {
  hk_run_request req;
  hk_code rc;
  memset(&req, 0, sizeof req);
  rc = f->hook->vt->before_run(f->hook->user, &h->ctx, &req, &f->st);
  if (rc != HK_OK) return rc;
  h->stale = fake_executor_get_i64(f->fx, NULL, f->gs);
  fake_executor_set_i64(f->fx, NULL, f->gs, h->stale + 1);
  return f->hook->vt->after_run(f->hook->user, &h->ctx, &h->values, &f->st);
}

static void harness_end(fixture *f, harness *h) {
  hk_raw_session_free(h->rs);
  h->rs = NULL;
  (void)f;
}

/* C100: driven without after_create_session, the first after_run saves. */
static void test_checkpoint_saver_hook__driven_without_a_session_the_first_after_run_saves(void **state) {
  fixture *f = *state;
  harness h;

  new_saver_of_gs_only(f);
  f->o.saver = f->saver;
  f->o.save_steps = 1000;
  f->o.nlisteners = 0;
  make_hook(f);
  harness_begin(f, &h);
  assert_ok(harness_run(f, &h), &f->st);
  assert_true(ckpt_exists(f, "model.ckpt", 1)); /* whatever the cadence */
  assert_ok(harness_run(f, &h), &f->st);
  assert_int_equal(count_files(f, ".safetensors"), 1);
  assert_ok(f->hook->vt->end(f->hook->user, h.rs, &f->st), &f->st);
  assert_true(ckpt_exists(f, "model.ckpt", 2));
  harness_end(f, &h);
}

/* C99: with no Saver anywhere, a save is FAILED_PRECONDITION "No saver available". */
static void test_checkpoint_saver_hook__no_saver_available_is_failed_precondition(void **state) {
  fixture *f = *state;
  harness h;

  f->o.nlisteners = 0;
  make_hook(f);
  harness_begin(f, &h);
  assert_status(harness_run(f, &h), &f->st, HK_FAILED_PRECONDITION,
                "No saver available: provide a saver or a scaffold.");
  harness_end(f, &h);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_checkpoint_saver_hook__bad_options_are_invalid_argument_naming_the_option),
      T(test_checkpoint_saver_hook__options_init),
      T(test_checkpoint_saver_hook__without_an_env_logs_its_creation_through_the_session_s),
      T(test_checkpoint_saver_hook__begin_creates_dir_and_runs_listeners),
      T(test_checkpoint_saver_hook__created_directories_are_made_durable),
      T(test_checkpoint_saver_hook__failed_save_names_step_and_path),
      T(test_checkpoint_saver_hook__begin_without_a_global_step_fails),
      T(test_checkpoint_saver_hook__a_failing_listener_begin_fails_begin_and_stops_the_loop),
      T(test_checkpoint_saver_hook__an_explicit_saver_is_used_first),
      T(test_checkpoint_saver_hook__the_options_scaffold_s_saver_comes_next),
      T(test_checkpoint_saver_hook__without_either_the_session_scaffold_s_saver_is_used),
      T(test_checkpoint_saver_hook__driven_without_a_session_the_first_after_run_saves),
      T(test_checkpoint_saver_hook__no_saver_available_is_failed_precondition),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
