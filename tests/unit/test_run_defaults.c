/*
 * What a run looks like by default and where a program's hooks go, on both
 * executors (a MonitoredTrainingSession over the embedded graph, and the
 * host loop): the steps/sec log line paced in wall time while the summary
 * keeps its step cadence, one INFO line per checkpoint (H62); hooks placed
 * before the built-in ones (H66); the asynchronous saver waiting for the
 * write in flight so saves land on the cadence (H67); SessionLog START at a
 * restart (H68). Time is the test env's mock clock; the asynchronous
 * writer is held by the gate file system (tests/support/gate_fs), so the
 * tests are about what happens while a write is in flight, not about speed.
 */
#include "loop_tests.h"

#include "gate_fs.h"

/* ---- the graph executor: a MonitoredTrainingSession ------------------------------ */

typedef struct gfx {
  test_env *te;
  char *dir, *ck;
  hk_status st;
  hk_graph *g;
  hk_handle train;
  hk_training_session_options o;
} gfx;

static hk_code add_one(void *user, hk_kernel_context *ctx, const hk_tensor *in, size_t nin, hk_tensor *out, size_t nout,
                       hk_status *st) {
  (void)user, (void)in, (void)nin, (void)out, (void)nout, (void)st;
  *(int64_t *)hk_kernel_context_variable(ctx, 0)->data += 1;
  return HK_OK;
}

static gfx *gfx_new(void) {
  gfx *f = calloc(1, sizeof *f);
  f->te = test_env_new();
  f->dir = test_tmpdir_new("runs");
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
  assert_int_equal(hk_training_session_options_init(&f->o, HK_TRAINING_SESSION_OPTIONS_VERSION), HK_OK);
  f->o.executor = hk_graph_executor(f->g);
  f->o.checkpoint_dir = f->ck;
  f->o.save_summaries_steps = 0;
  f->o.recovery_wait_secs = 0.01;
  return f;
}

static void gfx_free(gfx *f) {
  hk_graph_free(f->g);
  free(f->ck);
  test_tmpdir_free(f->dir);
  assert_int_equal(test_env_release(f->te), 0);
  free(f);
}

static hk_code train(gfx *f, hk_session *s) {
  hk_run_args args = {NULL, 0, NULL, 0, &f->train, 1, NULL};
  return hk_session_run(s, &args, NULL, NULL, &f->st);
}

/* How many "global_step/sec" summaries the only event file of dir holds. */
static int rate_summaries(const char *dir) {
  ev_file *ev = event_file_only(dir);
  int n = event_file_count_tag(ev, "global_step/sec");
  event_file_free(ev);
  return n;
}

/* 25 steps, 1 s of the mock clock apart, a rate at every step: 24 rates
 * written, logged at t = 1, 11 and 21 s only (the first rate, then at most
 * every 10 s). */
#define PACED_STEPS 25
#define PACED_RATES 24
#define PACED_LINES 3

/* H62 on the graph executor: the MTS's StepCounter writes every rate and
 * logs at most every log_step_count_secs (default 10); HK_UNSET_SECS logs
 * every one, as TensorFlow does. */
static void test_run_defaults__graph_step_rate_log_is_paced(void **state) {
  (void)state;
  for (int k = 0; k < 2; k++) {
    gfx *f = gfx_new();
    assert_true(f->o.log_step_count_secs == 10.0);
    f->o.log_step_count_steps = 1;
    f->o.save_checkpoint_steps = 1000;
    if (k == 1) f->o.log_step_count_secs = HK_UNSET_SECS;
    hk_session *s = NULL;
    assert_ok(hk_training_session_new(&s, &f->o, &f->st), &f->st);
    for (int i = 0; i < PACED_STEPS; i++) {
      assert_ok(train(f, s), &f->st);
      test_clock_advance(&f->te->clock, 1);
    }
    assert_ok(hk_session_close(s, HK_OK, &f->st), &f->st);
    hk_session_free(s);
    assert_int_equal(rate_summaries(f->ck), PACED_RATES);
    assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "global_step/sec: "), k == 0 ? PACED_LINES : PACED_RATES);
    gfx_free(f);
  }
}

/* H62 on the host loop: the same pacing through log_step_count_secs. */
static void test_run_defaults__loop_step_rate_log_is_paced(void **state) {
  fx *f = *state;
  for (int k = 0; k < 2; k++) {
    model m;
    model_init(&m);
    char name[16];
    snprintf(name, sizeof name, "r%d", k);
    char *dir = test_path(f->dir, name);
    hk_loop_options o = opts_for(f);
    assert_true(o.log_step_count_secs == 10.0);
    o.checkpoint_dir = dir;
    o.save_steps = 1000;
    o.log_step_count_steps = 1;
    if (k == 1) o.log_step_count_secs = HK_UNSET_SECS;
    test_log_clear(&f->te->log);
    hk_loop *l = NULL;
    assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
    add_model(l, &m, f);
    assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
    for (int i = 0; i < PACED_STEPS; i++) {
      assert_ok(hk_loop_step(l, step_fn, &m, &f->st), &f->st);
      test_clock_advance(&f->te->clock, 1);
    }
    assert_ok(hk_loop_finish(l, &f->st), &f->st);
    hk_loop_free(l);
    assert_int_equal(rate_summaries(dir), PACED_RATES);
    assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "global_step/sec: "), k == 0 ? PACED_LINES : PACED_RATES);
    free(dir);
  }
  hk_loop_options o = opts_for(f);
  o.log_step_count_secs = -1;
  hk_loop *l = NULL;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "log_step_count_secs");
}

/* H62: one INFO line per checkpoint, on both executors (the synchronous
 * saver's "Saving checkpoints for"; the listener lines are DEBUG). */
static void test_run_defaults__one_info_line_per_checkpoint(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  o.save_steps = 2;
  o.last_step = 6;
  run_to(f, &m, &o); /* saves 0, 2, 4, 6 */
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "Saving checkpoints for"), 4);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "checkpoint listeners"), 0);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_DEBUG, "checkpoint listeners"), 8);

  gfx *g = gfx_new();
  g->o.save_checkpoint_steps = 2;
  g->o.log_step_count_steps = 0;
  hk_session *s = NULL;
  assert_ok(hk_training_session_new(&s, &g->o, &g->st), &g->st);
  for (int i = 0; i < 4; i++) assert_ok(train(g, s), &g->st);
  assert_ok(hk_session_close(s, HK_OK, &g->st), &g->st);
  hk_session_free(s);
  assert_int_equal(test_log_count(&g->te->log, HK_LOG_INFO, "Saving checkpoints for"), 3); /* 0, 2, 4 */
  assert_int_equal(test_log_count(&g->te->log, HK_LOG_INFO, "checkpoint listeners"), 0);
  gfx_free(g);
}

/* ---- hooks placed before the built-in ones (H66) ---------------------------------- */

typedef struct saw {
  const char *dir; /* the checkpoint directory */
  int64_t step;    /* the step to look for */
  int seen;        /* after_run found that step's checkpoint written */
} saw;

/* In after_run: is the checkpoint of the step just run already written? */
static hk_code look_for_checkpoint(spy_hook *spy, spy_slot slot, void *arg, hk_status *st) {
  (void)arg, (void)st;
  saw *w = spy->action_user;
  if (slot != SPY_AFTER_RUN) return HK_OK;
  int64_t gs = 0;
  hk_status ignored = HK_STATUS_INIT;
  hk_raw_session_global_step(&gs, hk_run_context_session(arg), &ignored);
  if (gs != w->step) return HK_OK;
  char name[64];
  snprintf(name, sizeof name, "model.ckpt-%lld.safetensors", (long long)w->step);
  char *p = test_path(w->dir, name);
  w->seen = test_path_exists(p);
  free(p);
  return HK_OK;
}

static int index_of(hk_session *s, const char *name) {
  for (size_t i = 0; i < hk_session_hook_count(s); i++)
    if (strcmp(hk_hook_name(hk_session_hook(s, i)), name) == 0) return (int)i;
  return -1;
}

/* H66 on the host loop: a hook in hooks_first runs before the NaN guard,
 * StopAtStep, the StepCounter and the checkpoint saver — its before_run
 * first, its after_run before the saver writes the step's checkpoint — and
 * a hook in hooks after them. */
static void test_run_defaults__loop_hooks_first_run_before_the_saver(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  spy_log log = {0};
  spy_hook *first = spy_hook_new("timer", &log, NULL), *last = spy_hook_new("late", &log, NULL);
  saw wf = {f->ck, 2, -1}, wl = {f->ck, 2, -1};
  first->action = look_for_checkpoint;
  first->action_user = &wf;
  last->action = look_for_checkpoint;
  last->action_user = &wl;
  hk_loop_options o = opts_for(f);
  o.save_steps = 2;
  o.nan_guard = "loss";
  o.hooks_first = &first->hook;
  o.nhooks_first = 1;
  o.hooks = &last->hook;
  o.nhooks = 1;
  hk_loop *l = NULL;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &m, f);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  hk_session *s = hk_loop_session(l);
  int t = index_of(s, "timer");
  assert_true(t >= 0);
  assert_true(t < index_of(s, "NanTensorHook"));
  assert_true(t < index_of(s, "CheckpointSaverHook"));
  assert_true(index_of(s, "CheckpointSaverHook") < index_of(s, "late"));
  assert_ok(hk_loop_step(l, step_fn, &m, &f->st), &f->st);
  assert_ok(hk_loop_step(l, step_fn, &m, &f->st), &f->st);
  assert_int_equal(wf.seen, 0); /* the timer's after_run came before the write of step 2 */
  assert_int_equal(wl.seen, 1); /* a hook in `hooks` comes after it */
  int a = spy_log_find(&log, "timer.before_run", 0), b = spy_log_find(&log, "late.before_run", 0);
  assert_true(a >= 0 && a < b);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);

  o.hooks = &first->hook; /* in both lists */
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "both hooks_first[0] and hooks[0]");
  o.hooks = NULL;
  o.nhooks = 0;
  o.hooks_first = NULL;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "hooks_first is NULL");
  spy_hook_free(first);
  spy_hook_free(last);
}

/* H66 on the graph executor: hooks_first run before every hook the MTS
 * makes (and before chief_only_hooks). */
static void test_run_defaults__graph_hooks_first_run_before_the_defaults(void **state) {
  (void)state;
  gfx *f = gfx_new();
  spy_hook *first = spy_hook_new("timer", NULL, NULL), *last = spy_hook_new("late", NULL, NULL);
  saw wf = {f->ck, 2, -1}, wl = {f->ck, 2, -1};
  first->action = look_for_checkpoint;
  first->action_user = &wf;
  last->action = look_for_checkpoint;
  last->action_user = &wl;
  f->o.save_checkpoint_steps = 2;
  f->o.hooks_first = &first->hook;
  f->o.nhooks_first = 1;
  f->o.hooks = &last->hook;
  f->o.nhooks = 1;
  hk_session *s = NULL;
  assert_ok(hk_training_session_new(&s, &f->o, &f->st), &f->st);
  assert_int_equal(index_of(s, "timer"), 0);
  assert_true(index_of(s, "StepCounterHook") > 0);
  assert_true(index_of(s, "CheckpointSaverHook") < index_of(s, "late"));
  assert_ok(train(f, s), &f->st);
  assert_ok(train(f, s), &f->st);
  assert_int_equal(wf.seen, 0);
  assert_int_equal(wl.seen, 1);
  assert_ok(hk_session_close(s, HK_OK, &f->st), &f->st);
  hk_session_free(s);
  f->o.hooks_first = NULL;
  assert_status(hk_training_session_new(&s, &f->o, &f->st), &f->st, HK_INVALID_ARGUMENT, "hooks_first");
  f->o.nhooks_first = 0;
  f->o.log_step_count_secs = -1;
  assert_status(hk_training_session_new(&s, &f->o, &f->st), &f->st, HK_INVALID_ARGUMENT, "log_step_count_secs");
  assert_null(s);
  spy_hook_free(first);
  spy_hook_free(last);
  gfx_free(f);
}

/* ---- asynchronous saves on the cadence (H67) --------------------------------------- */

static void *open_later(void *arg) {
  test_sleep_real_ms(50);
  gate_fs_open(arg);
  return NULL;
}

static int64_t checkpoint_gs(test_env *te, const char *dir, int64_t step) {
  char name[64];
  hk_checkpoint_reader *r = NULL;
  size_t i;
  int64_t gs = -1;
  hk_status st = HK_STATUS_INIT;
  snprintf(name, sizeof name, "model.ckpt-%lld.safetensors", (long long)step);
  char *path = test_path(dir, name);
  if (test_path_exists(path)) {
    assert_ok(hk_checkpoint_reader_open(&r, &te->env, path, &st), &st);
    assert_ok(hk_checkpoint_reader_find(r, "global_step", &i, &st), &st);
    assert_ok(hk_checkpoint_reader_read(r, i, &gs, sizeof gs, &st), &st);
    hk_checkpoint_reader_free(r);
  }
  free(path);
  return gs;
}

/* H67 on the host loop: with async_checkpoint_block_when_busy a save that
 * falls due while step 0's is still being written waits for it, so every
 * save lands on its step (0, 1, 2, 3); without it the save of step 1 is
 * deferred and the checkpoints drift off the cadence. */
static void test_run_defaults__loop_async_wait_keeps_the_cadence(void **state) {
  fx *f = *state;
  for (int block = 1; block >= 0; block--) {
    model m;
    model_init(&m);
    char name[16];
    snprintf(name, sizeof name, "a%d", block);
    char *dir = test_path(f->dir, name);
    gate_fs g;
    gate_fs_init(&g, NULL, NULL);
    f->te->env.fs = gate_fs_vtable();
    f->te->env.fs_user = &g;
    hk_loop_options o = opts_for(f);
    o.checkpoint_dir = dir;
    o.save_steps = 1;
    o.log_step_count_steps = 0;
    o.async_checkpoint = 1;
    o.async_checkpoint_block_when_busy = block;
    gate_fs_close(&g, "model.ckpt-0.safetensors", NULL);
    hk_loop *l = NULL;
    assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
    add_model(l, &m, f);
    assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
    gate_fs_wait_arrival(&g); /* the writer holds step 0 */
    pthread_t opener;
    if (block) assert_int_equal(pthread_create(&opener, NULL, open_later, &g), 0);
    assert_ok(hk_loop_step(l, step_fn, &m, &f->st), &f->st); /* step 1 falls due during step 0's write */
    if (block)
      pthread_join(opener, NULL);
    else
      gate_fs_open(&g);
    for (int i = 0; i < 2; i++) {
      assert_ok(hk_loop_step(l, step_fn, &m, &f->st), &f->st);
      /* let the writer finish before the next save falls due */
      for (int k = 0; k < 2000 && test_log_count(&f->te->log, -1, "Checkpoint finished for") < 2 + i; k++)
        test_sleep_real_ms(1);
    }
    assert_ok(hk_loop_finish(l, &f->st), &f->st);
    hk_loop_free(l);
    gate_fs_destroy(&g);
    f->te->env.fs = NULL;
    f->te->env.fs_user = NULL;
    if (block) {
      for (int64_t n = 0; n <= 3; n++) assert_true(checkpoint_gs(f->te, dir, n) == n);
      assert_int_equal(test_log_count(&f->te->log, -1, "deferring checkpoint"), 0);
    } else {
      assert_true(checkpoint_gs(f->te, dir, 1) == -1); /* deferred past step 1 */
      assert_true(test_log_count(&f->te->log, -1, "deferring checkpoint") >= 1);
    }
    test_log_clear(&f->te->log);
    free(dir);
  }
  hk_loop *l = NULL;
  hk_loop_options o = opts_for(f);
  o.async_checkpoint_block_when_busy = 1;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "without async_checkpoint");
}

/* ---- SessionLog START at a restart (H68) -------------------------------------------- */

/* The SessionLog events of every event file of dir, in file order: their
 * statuses and steps, "s@step;". */
static void session_logs(const char *dir, char *buf, size_t cap) {
  char names[8][600];
  int n = event_file_list(dir, names, 8);
  buf[0] = '\0';
  for (int i = 0; i < n; i++) {
    char *p = test_path(dir, names[i]);
    ev_file *ev = event_file_read(p, 0);
    for (size_t k = 0; k < ev->n; k++)
      if (ev->events[k].kind == EV_SESSION_LOG && ev->events[k].status == 1) {
        size_t len = strlen(buf);
        snprintf(buf + len, cap - len, "START@%lld;", (long long)ev->events[k].step);
      }
    event_file_free(ev);
    free(p);
  }
}

/* H68 on the host loop: a run killed at step 6 after its checkpoint of
 * step 4 left summaries of steps 5 and 6; the restart resumes at 4 and
 * writes SessionLog START at step 4 into its event file, so TensorBoard
 * drops those steps instead of drawing them twice. A first run into an
 * empty directory writes none (there is nothing to drop). */
static void test_run_defaults__loop_restart_writes_session_start(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  o.save_steps = 4;
  o.log_step_count_steps = 1;
  hk_loop *l = NULL;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &m, f);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  for (int i = 0; i < 6; i++) {
    assert_ok(hk_loop_step(l, step_fn, &m, &f->st), &f->st);
    test_clock_advance(&f->te->clock, 1);
  }
  hk_loop_free(l); /* killed: no finish, no final checkpoint */
  char logs[256];
  session_logs(f->ck, logs, sizeof logs);
  assert_string_equal(logs, "");

  int64_t step = -1;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &m, f);
  assert_ok(hk_loop_start(l, &step, &f->st), &f->st);
  assert_int_equal(step, 4);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  session_logs(f->ck, logs, sizeof logs);
  assert_string_equal(logs, "START@4;");
}

/* H68 on the graph executor: the MTS's SummarySaverHook writes START at
 * the first run of each session, the restarted one included (C135). */
static void test_run_defaults__graph_restart_writes_session_start(void **state) {
  (void)state;
  gfx *f = gfx_new();
  f->o.save_checkpoint_steps = 2;
  f->o.save_summaries_steps = 100;
  hk_session *s = NULL;
  assert_ok(hk_training_session_new(&s, &f->o, &f->st), &f->st);
  for (int i = 0; i < 3; i++) assert_ok(train(f, s), &f->st);
  hk_session_close(s, HK_ABORTED, &f->st); /* killed at 3: no final checkpoint */
  hk_session_free(s);
  assert_ok(hk_training_session_new(&s, &f->o, &f->st), &f->st);
  assert_ok(train(f, s), &f->st);
  assert_ok(hk_session_close(s, HK_OK, &f->st), &f->st);
  hk_session_free(s);
  char logs[256];
  session_logs(f->ck, logs, sizeof logs);
  /* START at the GS its first run fetched: 1, then 3 after resuming at 2 */
  assert_string_equal(logs, "START@1;START@3;");
  gfx_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_run_defaults__graph_step_rate_log_is_paced),
      cmocka_unit_test_setup_teardown(test_run_defaults__loop_step_rate_log_is_paced, setup, teardown),
      cmocka_unit_test_setup_teardown(test_run_defaults__one_info_line_per_checkpoint, setup, teardown),
      cmocka_unit_test_setup_teardown(test_run_defaults__loop_hooks_first_run_before_the_saver, setup, teardown),
      cmocka_unit_test(test_run_defaults__graph_hooks_first_run_before_the_defaults),
      cmocka_unit_test_setup_teardown(test_run_defaults__loop_async_wait_keeps_the_cadence, setup, teardown),
      cmocka_unit_test_setup_teardown(test_run_defaults__loop_restart_writes_session_start, setup, teardown),
      cmocka_unit_test(test_run_defaults__graph_restart_writes_session_start),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
