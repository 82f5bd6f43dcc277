/*
 * MonitoredTrainingSession (contract group E: C49–C56, H22, H23): defaults,
 * the hook order for chief and worker, zero disabling a default hook, both
 * cadences refused, options validated before any side effect, and the
 * asynchronous saver's block_when_busy: with it every due save is written at
 * its step, without it a save due while one is written is deferred. The
 * writer thread is held by the gate file system (tests/support/gate_fs), so
 * those tests are about what the saver does while a write is in flight, not
 * about how fast it writes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hooked/hooked.h>

#include "gate_fs.h"
#include "spy_hook.h"
#include "test_env.h"
#include "tmpdir.h"

typedef struct fx {
  test_env *te;
  char *dir, *ck;
  hk_status st;
  hk_graph *g;
  hk_handle train;
  spy_hook *chief, *user;
  hk_training_session_options o;
} fx;

static hk_code add_one(void *user, hk_kernel_context *ctx, const hk_tensor *in, size_t nin, hk_tensor *out, size_t nout,
                       hk_status *st) {
  (void)user, (void)in, (void)nin, (void)out, (void)nout, (void)st;
  *(int64_t *)hk_kernel_context_variable(ctx, 0)->data += 1;
  return HK_OK;
}

static int setup(void **state) {
  fx *f = calloc(1, sizeof *f);
  f->te = test_env_new();
  f->dir = test_tmpdir_new("mts");
  f->ck = test_path(f->dir, "run");
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  go.env = &f->te->env;
  hk_handle gs;
  assert_ok(hk_graph_new(&f->g, &go, &f->st), &f->st);
  assert_ok(hk_graph_create_global_step(f->g, &gs, &f->st), &f->st);
  hk_op_def op = HK_OP_DEF_INIT;
  op.name = "train_op";
  op.kernel = add_one;
  op.mutates = &gs;
  op.nmutates = 1;
  assert_ok(hk_graph_op(f->g, &f->train, &op, &f->st), &f->st);
  f->chief = spy_hook_new("chief_only", NULL, NULL);
  f->user = spy_hook_new("user", NULL, NULL);
  assert_int_equal(hk_training_session_options_init(&f->o, HK_TRAINING_SESSION_OPTIONS_VERSION), HK_OK);
  f->o.executor = hk_graph_executor(f->g);
  f->o.hooks = &f->user->hook;
  f->o.nhooks = 1;
  f->o.chief_only_hooks = &f->chief->hook;
  f->o.nchief_only_hooks = 1;
  f->o.checkpoint_dir = f->ck;
  f->o.recovery_wait_secs = 0.01;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fx *f = *state;
  spy_hook_free(f->chief);
  spy_hook_free(f->user);
  hk_graph_free(f->g);
  free(f->ck);
  test_tmpdir_free(f->dir);
  int rc = test_env_release(f->te);
  free(f);
  return rc;
}

/* The names of the session's hooks, "a,b,c". */
static void hook_names(hk_session *s, char *buf, size_t cap) {
  buf[0] = '\0';
  for (size_t i = 0; i < hk_session_hook_count(s); i++) {
    size_t len = strlen(buf);
    snprintf(buf + len, cap - len, "%s%s", i ? "," : "", hk_hook_name(hk_session_hook(s, i)));
  }
}

/* C49: every default. */
static void test_training_session__options_init_sets_every_default(void **state) {
  fx *f = *state;
  hk_training_session_options o = HK_TRAINING_SESSION_OPTIONS_INIT;
  assert_int_equal(o.is_chief, 1);
  assert_null(o.checkpoint_dir);
  assert_null(o.scaffold);
  assert_true(hk_secs_is_unset(o.save_checkpoint_secs));
  assert_true(o.save_checkpoint_steps == HK_UNSET_STEPS);
  assert_true(o.save_summaries_steps == HK_UNSET_STEPS);
  assert_true(hk_secs_is_unset(o.save_summaries_secs));
  assert_true(o.stop_grace_period_secs == 120.0);
  assert_int_equal(o.log_step_count_steps, 100);
  assert_true(o.max_wait_secs == 7200.0);
  assert_null(o.summary_dir);
  assert_int_equal(o.save_graph_def, 1);
  assert_true(o.recovery_wait_secs == 30.0);
  assert_int_equal(o.async_checkpoint, 0);
  assert_int_equal(o.async_checkpoint_block_when_busy, 0);
  assert_int_equal(hk_training_session_options_init(NULL, HK_TRAINING_SESSION_OPTIONS_VERSION), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_training_session_options_init(&o, 9), HK_INVALID_ARGUMENT);
  (void)f;
}

/* C53, C52, C50, C51: the chief's order, summary_dir defaulting to
 * checkpoint_dir, a checkpoint at creation, summaries and steps/sec. */
static void test_training_session__a_chief_runs_the_default_hooks_in_order(void **state) {
  fx *f = *state;
  hk_session *s = NULL;
  char names[512];
  assert_ok(hk_training_session_new(&s, &f->o, &f->st), &f->st);
  hook_names(s, names, sizeof names);
  assert_string_equal(names, "chief_only,StepCounterHook,SummarySaverHook,CheckpointSaverHook,user");
  hk_run_args args = {NULL, 0, NULL, 0, &f->train, 1, NULL};
  for (int i = 0; i < 3; i++) assert_ok(hk_session_run(s, &args, NULL, NULL, &f->st), &f->st);
  assert_ok(hk_session_close(s, HK_OK, &f->st), &f->st);
  hk_session_free(s);
  char *c0 = test_path(f->ck, "model.ckpt-0.safetensors"), *c3 = test_path(f->ck, "model.ckpt-3.safetensors");
  assert_true(test_path_exists(c0)); /* C94 at creation */
  assert_true(test_path_exists(c3)); /* C97 at end */
  free(c0);
  free(c3);
  assert_int_equal(test_dir_count_matching(f->ck, "events.out.tfevents."), 1); /* H26: one file */
  assert_int_equal(f->chief->calls[SPY_BEFORE_RUN], 3);
  assert_int_equal(f->user->calls[SPY_END], 1);
}

/* H22: async_checkpoint puts the asynchronous saver in the same place. */
static void test_training_session__async_checkpoint_puts_the_async_saver_in_place(void **state) {
  fx *f = *state;
  hk_session *s = NULL;
  char names[512];
  f->o.async_checkpoint = 1;
  f->o.summary_dir = NULL;
  f->o.log_step_count_steps = 0;
  f->o.save_summaries_steps = 0;
  assert_ok(hk_training_session_new(&s, &f->o, &f->st), &f->st);
  hook_names(s, names, sizeof names);
  assert_string_equal(names, "chief_only,AsyncCheckpointSaverHook,user");
  assert_ok(hk_session_close(s, HK_OK, &f->st), &f->st);
  hk_session_free(s);
}

/* ---- H22, D3.3: async_checkpoint_block_when_busy ------------------------------------ */

/* Opens the gate from another thread after a short real-time pause, for a
 * training thread that blocks until the held write completes. */
static void *open_later(void *arg) {
  test_sleep_real_ms(50);
  gate_fs_open(arg);
  return NULL;
}

static hk_code run_train(fx *f, hk_session *s) {
  hk_run_args args = {NULL, 0, NULL, 0, &f->train, 1, NULL};
  return hk_session_run(s, &args, NULL, NULL, &f->st);
}

/* The global step checkpoint `step` of f->ck holds; -1 when there is none. */
static int64_t checkpoint_gs(fx *f, int64_t step) {
  char name[64];
  hk_checkpoint_reader *r = NULL;
  size_t i;
  int64_t gs = -1;
  snprintf(name, sizeof name, "model.ckpt-%lld.safetensors", (long long)step);
  char *path = test_path(f->ck, name);
  if (test_path_exists(path)) {
    assert_ok(hk_checkpoint_reader_open(&r, &f->te->env, path, &f->st), &f->st);
    assert_ok(hk_checkpoint_reader_find(r, "global_step", &i, &f->st), &f->st);
    assert_ok(hk_checkpoint_reader_read(r, i, &gs, sizeof gs, &f->st), &f->st);
    hk_checkpoint_reader_free(r);
  }
  free(path);
  return gs;
}

/* An MTS with asynchronous checkpoints every step over the gate, which
 * holds the write of the checkpoint at creation (step 0) until opened. */
static hk_session *open_gated(fx *f, gate_fs *g, int block) {
  hk_session *s = NULL;
  gate_fs_init(g, NULL, NULL);
  f->te->env.fs = gate_fs_vtable();
  f->te->env.fs_user = g;
  f->o.env = &f->te->env;
  f->o.async_checkpoint = 1;
  f->o.async_checkpoint_block_when_busy = block;
  f->o.save_checkpoint_steps = 1;
  f->o.summary_dir = NULL;
  f->o.log_step_count_steps = 0;
  f->o.save_summaries_steps = 0;
  gate_fs_close(g, "model.ckpt-0.safetensors", NULL);
  assert_ok(hk_training_session_new(&s, &f->o, &f->st), &f->st);
  gate_fs_wait_arrival(g); /* the writer holds step 0 */
  return s;
}

static void close_gated(fx *f, hk_session *s, gate_fs *g) {
  gate_fs_open(g);
  assert_ok(hk_session_close(s, HK_OK, &f->st), &f->st);
  hk_session_free(s);
  gate_fs_destroy(g);
  f->te->env.fs = NULL;
  f->te->env.fs_user = NULL;
}

/* H22, D3.3: with async_checkpoint_block_when_busy the step on which a save
 * falls due while step 0's is still being written waits for it, so every
 * due save is written at its step: checkpoints 0..3, each of its own step. */
static void test_training_session__block_when_busy_writes_every_save_at_its_step(void **state) {
  fx *f = *state;
  gate_fs g;
  pthread_t opener;
  hk_session *s = open_gated(f, &g, 1);
  assert_int_equal(pthread_create(&opener, NULL, open_later, &g), 0);
  assert_ok(run_train(f, s), &f->st); /* GS 1: waits for step 0's write, then saves 1 */
  pthread_join(opener, NULL);
  assert_ok(run_train(f, s), &f->st);
  assert_ok(run_train(f, s), &f->st);
  close_gated(f, s, &g);
  for (int64_t n = 0; n <= 3; n++) assert_true(checkpoint_gs(f, n) == n);
  assert_int_equal(test_log_count(&f->te->log, -1, "deferring checkpoint"), 0);
  for (int64_t n = 0; n <= 3; n++) {
    char line[64];
    snprintf(line, sizeof line, "Saving checkpoints for %lld into", (long long)n);
    assert_int_equal(test_log_count(&f->te->log, -1, line), 1);
  }
}

/* H22, D3.3: without it (the default) the save that falls due at step 1 while
 * step 0's write is held is deferred: nothing is saved at step 1. */
static void test_training_session__without_block_when_busy_defers_a_due_save(void **state) {
  fx *f = *state;
  gate_fs g;
  hk_session *s = open_gated(f, &g, 0);
  assert_ok(run_train(f, s), &f->st); /* GS 1: due, deferred */
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "Saver thread still in progress, deferring checkpoint."),
                   1);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "Saving checkpoints for 1 into"), 0);
  assert_true(checkpoint_gs(f, 1) == -1);
  close_gated(f, s, &g); /* end() drains step 0, then saves the final step (D3.5) */
  assert_true(checkpoint_gs(f, 0) == 0);
  assert_true(checkpoint_gs(f, 1) == 1);
}

/* H22: the option needs async_checkpoint. The options struct follows the
 * one version rule: init fills every field, block_when_busy included, and
 * version 0 or a version above the library's is refused naming the struct. */
static void test_training_session__block_when_busy_needs_async_and_a_known_options_version(void **state) {
  fx *f = *state;
  hk_session *s = NULL;
  hk_training_session_options o1;
  f->o.async_checkpoint_block_when_busy = 1;
  assert_status(hk_training_session_new(&s, &f->o, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "async_checkpoint_block_when_busy is set without async_checkpoint");
  assert_null(s);
  assert_false(test_path_exists(f->ck)); /* H23 */
  memset(&o1, 0, sizeof o1);
  o1.async_checkpoint_block_when_busy = 7;
  assert_int_equal(hk_training_session_options_init(&o1, 0), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_training_session_options_init(&o1, HK_TRAINING_SESSION_OPTIONS_VERSION + 1), HK_INVALID_ARGUMENT);
  assert_int_equal(o1.async_checkpoint_block_when_busy, 7); /* untouched */
  assert_int_equal(hk_training_session_options_init(&o1, HK_TRAINING_SESSION_OPTIONS_VERSION), HK_OK);
  assert_int_equal(o1.version, HK_TRAINING_SESSION_OPTIONS_VERSION);
  assert_int_equal(o1.async_checkpoint_block_when_busy, 0);
  assert_int_equal(o1.log_step_count_steps, 100);
  o1.executor = f->o.executor;
  o1.version = HK_TRAINING_SESSION_OPTIONS_VERSION + 1;
  assert_status(hk_training_session_new(&s, &o1, &f->st), &f->st, HK_INVALID_ARGUMENT, "hk_training_session_options");
  assert_null(s);
  o1.version = HK_TRAINING_SESSION_OPTIONS_VERSION;
  assert_ok(hk_training_session_new(&s, &o1, &f->st), &f->st);
  assert_ok(hk_session_close(s, HK_OK, &f->st), &f->st);
  hk_session_free(s);
}

/* C54: a cadence of 0 (or log_step_count_steps 0) disables its default
 * hook; without checkpoint_dir and summary_dir there are none. */
static void test_training_session__a_zero_cadence_disables_its_default_hook(void **state) {
  fx *f = *state;
  hk_session *s = NULL;
  char names[512];
  f->o.save_checkpoint_secs = 0;
  f->o.log_step_count_steps = 0;
  assert_ok(hk_training_session_new(&s, &f->o, &f->st), &f->st);
  hook_names(s, names, sizeof names);
  assert_string_equal(names, "chief_only,SummarySaverHook,user");
  assert_ok(hk_session_close(s, HK_OK, &f->st), &f->st);
  hk_session_free(s);
  assert_int_equal(test_dir_count_matching(f->ck, ".safetensors"), 0);

  f->o.checkpoint_dir = NULL;
  f->o.save_checkpoint_secs = HK_UNSET_SECS;
  f->o.log_step_count_steps = 100;
  assert_ok(hk_training_session_new(&s, &f->o, &f->st), &f->st);
  hook_names(s, names, sizeof names);
  assert_string_equal(names, "chief_only,user");
  assert_ok(hk_session_close(s, HK_OK, &f->st), &f->st);
  hk_session_free(s);
}

/* C56: a worker runs only the user hooks and waits for a ready model. */
static void test_training_session__a_worker_runs_only_the_user_hooks(void **state) {
  fx *f = *state;
  hk_session *s = NULL;
  char names[512];
  f->o.is_chief = 0;
  f->o.checkpoint_dir = NULL;
  f->o.max_wait_secs = 0.05;
  /* The graph's variables are graph-owned: a worker never initializes
   * them, so it times out waiting (C48, C73). */
  assert_status(hk_training_session_new(&s, &f->o, &f->st), &f->st, HK_DEADLINE_EXCEEDED, "not ready");
  assert_null(s);
  assert_int_equal(f->chief->calls[SPY_BEGIN], 0);
  assert_int_equal(f->user->calls[SPY_BEGIN], 1);
  (void)names;
}

/* C50, C51, D9: both cadences; C54: negative; H23: nothing created. */
static void test_training_session__bad_options_are_refused_before_any_side_effect(void **state) {
  fx *f = *state;
  hk_session *s = (hk_session *)f;
  hk_training_session_options o = f->o;
  o.save_checkpoint_secs = 10;
  o.save_checkpoint_steps = 10;
  assert_status(hk_training_session_new(&s, &o, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "Can not provide both save_checkpoint_secs and save_checkpoint_steps.");
  assert_null(s);
  o = f->o;
  o.save_summaries_secs = 1;
  o.save_summaries_steps = 1;
  assert_status(hk_training_session_new(&s, &o, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "Can not provide both save_summaries_secs and save_summaries_steps.");
  o = f->o;
  o.save_checkpoint_steps = -1;
  assert_status(hk_training_session_new(&s, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "save_checkpoint_steps");
  o = f->o;
  o.save_summaries_secs = NAN;
  assert_status(hk_training_session_new(&s, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "save_summaries_secs");
  o = f->o;
  o.log_step_count_steps = -5;
  assert_status(hk_training_session_new(&s, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "log_step_count_steps");
  o = f->o;
  o.nhooks = 2;
  o.hooks = NULL;
  assert_status(hk_training_session_new(&s, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "hooks");
  o = f->o;
  o.executor = NULL;
  assert_status(hk_training_session_new(&s, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "executor");
  o = f->o;
  o.recovery_wait_secs = 0;
  assert_status(hk_training_session_new(&s, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "recovery_wait_secs");
  o = f->o;
  o.version = 0;
  assert_status(hk_training_session_new(&s, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "version");
  assert_status(hk_training_session_new(&s, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "options");
  assert_status(hk_training_session_new(NULL, &f->o, &f->st), &f->st, HK_INVALID_ARGUMENT, "out");
  /* the same hook as chief-only and user hook (H11) */
  o = f->o;
  o.chief_only_hooks = &f->user->hook;
  assert_status(hk_training_session_new(&s, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "twice");
  assert_int_equal(f->user->calls[SPY_BEGIN], 0);
  assert_int_equal(f->chief->calls[SPY_BEGIN], 0);
  assert_false(test_path_exists(f->ck));
}

/* An OOM loop: an allocation failure anywhere in the constructor is
 * RESOURCE_EXHAUSTED and leaks nothing. */
static void test_training_session__oom_is_clean(void **state) {
  fx *f = *state;
  /* The graph keeps what it builds (the Scaffold's default ops) across
   * attempts: give it the system allocator, so that only what the MTS,
   * the session and the hooks allocate is failed and counted. */
  hk_graph *g = NULL;
  hk_handle gs;
  assert_ok(hk_graph_new(&g, NULL, &f->st), &f->st);
  assert_ok(hk_graph_create_global_step(g, &gs, &f->st), &f->st);
  f->o.executor = hk_graph_executor(g);
  f->o.env = &f->te->env;
  for (long n = 0;; n++) {
    hk_session *s = NULL;
    long live = test_alloc_live(&f->te->alloc), before = f->te->alloc.nfailed;
    test_alloc_fail_at(&f->te->alloc, n, 0);
    hk_code rc = hk_training_session_new(&s, &f->o, &f->st);
    long injected = f->te->alloc.nfailed - before;
    test_alloc_fail_at(&f->te->alloc, -1, 0);
    if (rc == HK_OK) {
      assert_ok(hk_session_close(s, HK_OK, &f->st), &f->st);
      hk_session_free(s);
    }
    test_tmpdir_remove(f->ck);
    assert_int_equal(test_alloc_live(&f->te->alloc), live);
    if (injected == 0) {
      assert_ok(rc, &f->st);
      break;
    }
    if (rc != HK_OK) assert_status(rc, &f->st, HK_RESOURCE_EXHAUSTED, NULL);
  }
  hk_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_training_session__options_init_sets_every_default, setup, teardown),
      cmocka_unit_test_setup_teardown(test_training_session__a_chief_runs_the_default_hooks_in_order, setup, teardown),
      cmocka_unit_test_setup_teardown(test_training_session__async_checkpoint_puts_the_async_saver_in_place, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_training_session__block_when_busy_writes_every_save_at_its_step, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_training_session__without_block_when_busy_defers_a_due_save, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_training_session__block_when_busy_needs_async_and_a_known_options_version,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_training_session__a_zero_cadence_disables_its_default_hook, setup, teardown),
      cmocka_unit_test_setup_teardown(test_training_session__a_worker_runs_only_the_user_hooks, setup, teardown),
      cmocka_unit_test_setup_teardown(test_training_session__bad_options_are_refused_before_any_side_effect, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_training_session__oom_is_clean, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
