/*
 * Memory (H7): steady-state hk_session_run performs no
 * allocation through the session's allocator after the first two runs, with
 * three spy hooks (fetches and feeds) plus the built-in StopAtStep hook, on
 * the fake executor and on the embedded graph executor; and OOM loops over
 * hk_session_new and the first run (every failure is RESOURCE_EXHAUSTED,
 * nothing leaks, the objects stay freeable).
 */
#include "session_fixture.h"
#include "tmpdir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fixture {
  test_env *te;
  int use_graph;
  fake_executor *fx;
  hk_graph *g;
  hk_executor *ex;
  hk_handle gs, train, p, q, c;
  spy_hook *a, *b, *d;
  hk_hook *stop;
  hk_hook *hooks[4];
  hk_session_options opts;
  hk_session *s;
  hk_status st;
} fixture;

static void build_fake(fixture *f) {
  f->fx = fake_training_executor(f->te, &f->ex, &f->gs, &f->train);
  f->p = fake_executor_add_i64(f->fx, "p", 0);
  f->q = fake_executor_add_i64(f->fx, "q", 0);
  f->c = fake_executor_add_i64(f->fx, "c", 3);
}

static void build_graph(fixture *f) {
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  int64_t one = 1, three = 3;
  hk_tensor t;
  hk_handle one_h;
  go.env = &f->te->env;
  assert_ok(hk_graph_new(&f->g, &go, &f->st), &f->st);
  f->ex = hk_graph_executor(f->g);
  assert_ok(hk_graph_get_or_create_global_step(f->g, &f->gs, &f->st), &f->st);
  t = hk_tensor_scalar_i64(&one);
  assert_ok(hk_graph_constant(f->g, &one_h, "one", &t, &f->st), &f->st);
  t = hk_tensor_scalar_i64(&three);
  assert_ok(hk_graph_constant(f->g, &f->c, "c", &t, &f->st), &f->st);
  assert_ok(hk_graph_assign_add(f->g, &f->train, "train", f->gs, one_h, &f->st), &f->st);
  assert_ok(hk_graph_placeholder(f->g, &f->p, "p", HK_DTYPE_I64, 0, NULL, &f->st), &f->st);
  assert_ok(hk_graph_placeholder(f->g, &f->q, "q", HK_DTYPE_I64, 0, NULL, &f->st), &f->st);
}

static int setup_with(void **state, int use_graph) {
  hk_stop_at_step_options so = HK_STOP_AT_STEP_OPTIONS_INIT;
  fixture *f = calloc(1, sizeof(*f));
  assert_non_null(f);
  *state = f;
  f->te = test_env_new();
  f->use_graph = use_graph;
  if (use_graph)
    build_graph(f);
  else
    build_fake(f);
  f->a = spy_hook_new("a", NULL, NULL);
  f->b = spy_hook_new("b", NULL, NULL);
  f->d = spy_hook_new("d", NULL, NULL);
  assert_non_null(f->a);
  assert_non_null(f->b);
  assert_non_null(f->d);
  spy_hook_fetch(f->a, f->gs);
  spy_hook_feed_i64(f->a, f->p, 11);
  spy_hook_fetch(f->a, f->p);
  spy_hook_feed_i64(f->b, f->q, 12);
  spy_hook_fetch(f->b, f->q);
  spy_hook_target(f->b, f->train);
  spy_hook_fetch(f->d, f->c);
  spy_hook_options(f->d, 0, 10);
  so.num_steps = 1000000;
  assert_ok(hk_stop_at_step_hook_new(&f->stop, &so, &f->st), &f->st);
  f->hooks[0] = f->a->hook;
  f->hooks[1] = f->b->hook;
  f->hooks[2] = f->stop;
  f->hooks[3] = f->d->hook;
  test_session_options(&f->opts, &f->te->env, HK_SESSION_MONITORED, f->ex, f->hooks, 4);
  return 0;
}

static int setup_fake(void **state) { return setup_with(state, 0); }
static int setup_graph(void **state) { return setup_with(state, 1); }

static int teardown(void **state) {
  fixture *f = *state;
  hk_session_free(f->s);
  spy_hook_free(f->a);
  spy_hook_free(f->b);
  spy_hook_free(f->d);
  hk_hook_free(f->stop);
  hk_graph_free(f->g);
  return fixture_release(f, f->fx, f->te);
}

static hk_code run_once(fixture *f, hk_session_kind kind, int64_t *fetched) {
  hk_tensor res[2];
  hk_handle fetches[2];
  hk_run_options ro = HK_RUN_OPTIONS_INIT;
  hk_run_args args;
  hk_code rc;
  (void)kind;
  /* The caller fetches the GS and a constant, with a target and options; the
   * hooks feed p and q and fetch their own tensors. */
  memset(&args, 0, sizeof(args));
  fetches[0] = f->gs;
  fetches[1] = f->c;
  args.fetches = fetches;
  args.nfetches = 2;
  args.targets = &f->train;
  args.ntargets = 1;
  args.options = &ro;
  rc = hk_session_run(f->s, &args, res, NULL, &f->st);
  if (rc == HK_OK && fetched) *fetched = *(int64_t *)res[0].data;
  return rc;
}

/* ---- H7: zero allocations in steady state -------------------------------- */

static void zero_alloc_check(fixture *f, hk_session_kind kind) {
  int i;
  int64_t gs = -1;
  f->opts.kind = kind;
  assert_ok(hk_session_new(&f->s, &f->opts, &f->st), &f->st);
  assert_ok(run_once(f, kind, &gs), &f->st);
  assert_ok(run_once(f, kind, &gs), &f->st);
  test_alloc_reset_counts(&f->te->alloc);
  for (i = 0; i < 50; i++) {
    assert_ok(run_once(f, kind, &gs), &f->st);
  }
  if (test_alloc_count(&f->te->alloc) != 0)
    fprintf(stderr, "steady-state runs allocated %ld times (%ld alloc, %ld realloc)\n", test_alloc_count(&f->te->alloc),
            f->te->alloc.nalloc, f->te->alloc.nrealloc);
  assert_int_equal(test_alloc_count(&f->te->alloc), 0);
  assert_int_equal(f->te->alloc.nfree, 0);
  /* The runs did real work: hooks saw their values, the step advanced. */
  assert_int_equal(gs, 51);
  assert_int_equal(f->a->calls[SPY_AFTER_RUN], 52);
  assert_int_equal(f->a->last_nresults, 2);
  assert_int_equal(f->a->last_i64[1], 11);
  assert_int_equal(f->b->last_i64[0], 12);
  assert_int_equal(f->d->last_i64[0], 3);
  assert_false(hk_session_should_stop(f->s));
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
}

/* H7: a monitored session's run allocates nothing once it has run the same fetches before. */
static void test_alloc__a_monitored_session_s_steady_state_run_allocates_nothing(void **state) {
  zero_alloc_check(*state, HK_SESSION_MONITORED);
}

/* H7: a singular session's run allocates nothing once it has run the same fetches before. */
static void test_alloc__a_singular_session_s_steady_state_run_allocates_nothing(void **state) {
  zero_alloc_check(*state, HK_SESSION_SINGULAR);
}

/* H7 with the checkpoint saver hooks (sync and async) in the list: they
 * save at creation (which allocates), then a run on which neither triggers
 * allocates nothing (C95 fetches GS, C96's stale-step test). */
static void test_alloc__runs_that_save_no_checkpoint_allocate_nothing(void **state) {
  fixture *f = *state;
  char *root = test_tmpdir_new("alloc-ckpt");
  char *dirs[2] = {test_path(root, "sync"), test_path(root, "async")};
  hk_hook *ck[2] = {NULL, NULL};
  hk_hook *hooks[6];
  int64_t gs = -1;
  for (int k = 0; k < 2; k++) {
    hk_checkpoint_saver_options co = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
    co.checkpoint_dir = dirs[k];
    co.save_steps = 1000000;
    assert_ok(
        k ? hk_async_checkpoint_saver_hook_new(&ck[k], &co, &f->st) : hk_checkpoint_saver_hook_new(&ck[k], &co, &f->st),
        &f->st);
  }
  memcpy(hooks, f->hooks, sizeof f->hooks);
  hooks[4] = ck[0];
  hooks[5] = ck[1];
  f->opts.hooks = hooks;
  f->opts.nhooks = 6;
  assert_ok(hk_session_new(&f->s, &f->opts, &f->st), &f->st);
  assert_ok(run_once(f, f->opts.kind, &gs), &f->st);
  assert_ok(run_once(f, f->opts.kind, &gs), &f->st);
  /* The async creation save completes in the background; processing its
   * completion (log lines, the event) is a hook triggering, which may
   * allocate. Run until it has been processed (bounded), then count. */
  for (int i = 0; i < 20000 && test_log_count(&f->te->log, HK_LOG_INFO, "Checkpoint finished for 0 into") == 0; i++) {
    test_sleep_real_ms(5);
    assert_ok(run_once(f, f->opts.kind, &gs), &f->st);
  }
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "Checkpoint finished for 0 into"), 1);
  int64_t before = gs;
  test_alloc_reset_counts(&f->te->alloc);
  for (int i = 0; i < 50; i++) assert_ok(run_once(f, f->opts.kind, &gs), &f->st);
  if (test_alloc_count(&f->te->alloc) != 0)
    fprintf(stderr, "steady-state runs allocated %ld times\n", test_alloc_count(&f->te->alloc));
  assert_int_equal(test_alloc_count(&f->te->alloc), 0);
  assert_int_equal(gs, before + 50);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  /* Both saved at creation and at the end: the hooks were live. */
  for (int k = 0; k < 2; k++) {
    char name[64];
    snprintf(name, sizeof name, "model.ckpt-%lld.safetensors", (long long)gs + 1);
    char *p0 = test_path(dirs[k], "model.ckpt-0.safetensors"), *p1 = test_path(dirs[k], name);
    assert_true(test_path_exists(p0));
    assert_true(test_path_exists(p1));
    free(p0);
    free(p1);
  }
  hk_session_free(f->s);
  f->s = NULL;
  hk_hook_free(ck[0]);
  hk_hook_free(ck[1]);
  free(dirs[0]);
  free(dirs[1]);
  test_tmpdir_free(root);
}

/* H7 with the group-N hooks in the list (LoggingTensor, NanTensor, FeedFn,
 * FinalOps): once the session has seen both fetch lists, a run allocates
 * nothing — also a run on which LoggingTensor logs, since it formats into
 * a buffer it allocated at creation; FinalOps works only in end(). */
typedef struct n_feeder {
  float value;
  hk_feed feed;
} n_feeder;

static hk_code n_feed_fn(void *user, const hk_feed **feeds, size_t *nfeeds, hk_status *status) {
  n_feeder *fd = user;
  (void)status;
  fd->value += 1.0f;
  *feeds = &fd->feed;
  *nfeeds = 1;
  return HK_OK;
}

/* H7: with LoggingTensor, NanTensor, FeedFn and FinalOps hooks in the list, steady-state runs allocate nothing. */
static void test_alloc__runs_with_the_logging_feed_and_final_ops_hooks_allocate_nothing(void **state) {
  fixture *f = *state;
  static const char *const logged[3] = {"global_step", "c", "loss"};
  static const char *const finals[2] = {"loss", "ff"};
  float lossv = 0.25f, fed_at_end = -2.0f;
  n_feeder fd;
  hk_tensor t;
  hk_handle loss;
  hk_hook *n[4] = {NULL, NULL, NULL, NULL}, *hooks[8];
  hk_logging_tensor_options lo = HK_LOGGING_TENSOR_OPTIONS_INIT;
  hk_nan_tensor_options no = HK_NAN_TENSOR_OPTIONS_INIT;
  hk_feed_fn_options fo = HK_FEED_FN_OPTIONS_INIT;
  hk_final_ops_options xo = HK_FINAL_OPS_OPTIONS_INIT;
  hk_final_feed final_feed;
  const hk_tensor *values = NULL;
  size_t nvalues = 0;
  int64_t gs = -1;

  t = hk_tensor_scalar_f32(&lossv);
  assert_ok(hk_graph_constant(f->g, &loss, "loss", &t, &f->st), &f->st);
  memset(&fd, 0, sizeof fd);
  assert_ok(hk_graph_placeholder(f->g, &fd.feed.tensor, "ff", HK_DTYPE_F32, 0, NULL, &f->st), &f->st);
  fd.feed.value = hk_tensor_scalar_f32(&fd.value);
  lo.tensors = logged;
  lo.ntensors = 3;
  lo.every_n_iter = 5;
  assert_ok(hk_logging_tensor_hook_new(&n[0], &lo, &f->st), &f->st);
  no.loss = "loss";
  assert_ok(hk_nan_tensor_hook_new(&n[1], &no, &f->st), &f->st);
  fo.feed_fn = n_feed_fn;
  fo.feed_fn_user = &fd;
  assert_ok(hk_feed_fn_hook_new(&n[2], &fo, &f->st), &f->st);
  final_feed.name = "ff";
  final_feed.value = hk_tensor_scalar_f32(&fed_at_end);
  xo.final_ops = finals;
  xo.nfinal_ops = 2;
  xo.final_feed = &final_feed;
  xo.nfinal_feed = 1;
  assert_ok(hk_final_ops_hook_new(&n[3], &xo, &f->st), &f->st);
  memcpy(hooks, f->hooks, sizeof f->hooks);
  memcpy(hooks + 4, n, sizeof n);
  f->opts.hooks = hooks;
  f->opts.nhooks = 8;
  assert_ok(hk_session_new(&f->s, &f->opts, &f->st), &f->st);
  for (int i = 0; i < 6; i++) assert_ok(run_once(f, f->opts.kind, &gs), &f->st); /* logs at 0 and 5 */
  test_alloc_reset_counts(&f->te->alloc);
  test_log_clear(&f->te->log);
  for (int i = 0; i < 50; i++) assert_ok(run_once(f, f->opts.kind, &gs), &f->st);
  if (test_alloc_count(&f->te->alloc) != 0)
    fprintf(stderr, "steady-state runs allocated %ld times\n", test_alloc_count(&f->te->alloc));
  assert_int_equal(test_alloc_count(&f->te->alloc), 0);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "global_step = "), 10);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "global_step = 10, c = 3, loss = 0.25"), 1);
  assert_true(fd.value == 56.0f);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  assert_ok(hk_final_ops_hook_values(&values, &nvalues, n[3], &f->st), &f->st);
  assert_int_equal(nvalues, 2);
  assert_true(*(const float *)values[0].data == 0.25f);
  assert_true(*(const float *)values[1].data == -2.0f);
  hk_session_free(f->s);
  f->s = NULL;
  for (int i = 0; i < 4; i++) hk_hook_free(n[i]);
}

/* H7 with StepCounter and SummarySaver (summaries from the graph's summary
 * ops through the Scaffold's default merge, C62) writing into one directory
 * (H26): their first runs trigger (SessionLog START, the summaries, the
 * timer's start), which may allocate; a run on which neither triggers
 * fetches the global step alone and allocates nothing. */
static void test_alloc__runs_with_step_counter_and_summary_saver_allocate_nothing(void **state) {
  fixture *f = *state;
  char *root = test_tmpdir_new("alloc-summary");
  hk_step_counter_options sco = HK_STEP_COUNTER_OPTIONS_INIT;
  hk_summary_saver_options sso = HK_SUMMARY_SAVER_OPTIONS_INIT;
  hk_scaffold_options sfo = HK_SCAFFOLD_OPTIONS_INIT;
  hk_scaffold *scaffold = NULL;
  hk_hook *counter = NULL, *saver = NULL;
  hk_hook *hooks[6];
  hk_handle s_gs, h_c;
  int64_t gs = -1;
  assert_ok(hk_graph_scalar_summary(f->g, &s_gs, "gs_summary", "gs", f->gs, &f->st), &f->st);
  assert_ok(hk_graph_histogram_summary(f->g, &h_c, "c_summary", "c", f->c, &f->st), &f->st);
  sfo.env = &f->te->env;
  assert_ok(hk_scaffold_new(&scaffold, &sfo, &f->st), &f->st);
  sco.every_n_steps = 1000000;
  sco.output_dir = root;
  assert_ok(hk_step_counter_hook_new(&counter, &sco, &f->st), &f->st);
  sso.save_steps = 1000000;
  sso.output_dir = root;
  sso.scaffold = scaffold;
  assert_ok(hk_summary_saver_hook_new(&saver, &sso, &f->st), &f->st);
  memcpy(hooks, f->hooks, sizeof f->hooks);
  hooks[4] = counter;
  hooks[5] = saver;
  f->opts.hooks = hooks;
  f->opts.nhooks = 6;
  f->opts.scaffold = scaffold;
  assert_ok(hk_session_new(&f->s, &f->opts, &f->st), &f->st);
  assert_ok(run_once(f, f->opts.kind, &gs), &f->st);
  assert_ok(run_once(f, f->opts.kind, &gs), &f->st);
  test_alloc_reset_counts(&f->te->alloc);
  for (int i = 0; i < 50; i++) assert_ok(run_once(f, f->opts.kind, &gs), &f->st);
  if (test_alloc_count(&f->te->alloc) != 0)
    fprintf(stderr, "steady-state runs allocated %ld times\n", test_alloc_count(&f->te->alloc));
  assert_int_equal(test_alloc_count(&f->te->alloc), 0);
  assert_int_equal(gs, 51); /* the stale GS of the 52nd run */
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  hk_session_free(f->s);
  f->s = NULL;
  /* The hooks were live: START and one merged summary were written. */
  assert_int_equal(test_dir_count_matching(root, "tfevents"), 1);
  hk_hook_free(counter);
  hk_hook_free(saver);
  hk_scaffold_free(scaffold);
  test_tmpdir_free(root);
}

/* H7 with an EarlyStoppingHook (H44) and a checkpoint saver ranking its
 * checkpoints by a metric (best-k, H45): at creation the saver saves (and
 * fetches the metric), which may allocate; on the runs between their
 * triggers — the hook fetches only the global step, the saver's timer does
 * not fire — nothing is allocated. */
static void test_alloc__runs_with_early_stopping_and_best_k_allocate_nothing(void **state) {
  fixture *f = *state;
  char *root = test_tmpdir_new("alloc-best");
  hk_early_stopping_options eo = HK_EARLY_STOPPING_OPTIONS_INIT;
  hk_checkpoint_saver_options co = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
  hk_hook *es = NULL, *ck = NULL, *hooks[6];
  hk_early_stopping_info info;
  int64_t gs = -1;
  eo.monitor = "c";
  eo.every_n_steps = 1000000;
  eo.patience = 3;
  assert_ok(hk_early_stopping_hook_new(&es, &eo, &f->st), &f->st);
  co.checkpoint_dir = root;
  co.save_steps = 1000000;
  co.best_k = 2;
  co.best_metric = "c";
  assert_ok(hk_checkpoint_saver_hook_new(&ck, &co, &f->st), &f->st);
  memcpy(hooks, f->hooks, sizeof f->hooks);
  hooks[4] = es;
  hooks[5] = ck;
  f->opts.hooks = hooks;
  f->opts.nhooks = 6;
  assert_ok(hk_session_new(&f->s, &f->opts, &f->st), &f->st);
  assert_ok(run_once(f, f->opts.kind, &gs), &f->st);
  assert_ok(run_once(f, f->opts.kind, &gs), &f->st);
  test_alloc_reset_counts(&f->te->alloc);
  for (int i = 0; i < 50; i++) assert_ok(run_once(f, f->opts.kind, &gs), &f->st);
  if (test_alloc_count(&f->te->alloc) != 0)
    fprintf(stderr, "steady-state runs allocated %ld times\n", test_alloc_count(&f->te->alloc));
  assert_int_equal(test_alloc_count(&f->te->alloc), 0);
  assert_ok(hk_early_stopping_hook_info(&info, es, &f->st), &f->st);
  assert_int_equal(info.evaluations, 0);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  hk_session_free(f->s);
  f->s = NULL;
  /* The saver was live: creation and end() saved, ranked by c. */
  char *rec = test_path(root, "checkpoint.best");
  assert_true(test_path_exists(rec));
  free(rec);
  hk_hook_free(es);
  hk_hook_free(ck);
  test_tmpdir_free(root);
}

/* ---- 22a: OOM loops ------------------------------------------------------- */

/* One full session first: the Scaffold registers default ops in the graph and
 * an executor may cache plans; those belong to the graph, not to a session. */
static long warm_up(fixture *f) {
  assert_ok(hk_session_new(&f->s, &f->opts, &f->st), &f->st);
  assert_ok(run_once(f, f->opts.kind, NULL), &f->st);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  hk_session_free(f->s);
  f->s = NULL;
  spy_hook_reset(f->a);
  return test_alloc_live(&f->te->alloc);
}

static void test_alloc__oom_loop_session_new(void **state) {
  fixture *f = *state;
  long n, base = warm_up(f);
  hk_code rc = HK_INTERNAL;
  for (n = 0; n < 2000; n++) {
    test_alloc_fail_at(&f->te->alloc, n, 0);
    f->s = (hk_session *)f;
    rc = hk_session_new(&f->s, &f->opts, &f->st);
    test_alloc_fail_at(&f->te->alloc, -1, 0);
    if (rc == HK_OK) break;
    if (rc != HK_RESOURCE_EXHAUSTED)
      fprintf(stderr, "allocation %ld failed: %s %s\n", n, hk_code_name(rc), f->st.message);
    assert_status(rc, &f->st, HK_RESOURCE_EXHAUSTED, NULL);
    assert_null(f->s);
    assert_int_equal(test_alloc_live(&f->te->alloc), base);
    /* No end() for a failed construction. */
    assert_int_equal(f->a->calls[SPY_END], 0);
  }
  assert_int_equal(rc, HK_OK);
  assert_true(n > 0);
  /* The hooks were detached by every failure: the last attempt could use them. */
  assert_ok(run_once(f, f->opts.kind, NULL), &f->st);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  hk_session_free(f->s);
  f->s = NULL;
  assert_int_equal(test_alloc_live(&f->te->alloc), base);
}

static void test_alloc__oom_loop_first_run(void **state) {
  fixture *f = *state;
  long n, attempts, base = warm_up(f);
  hk_code rc;
  for (n = 0; n < 2000; n++) {
    assert_ok(hk_session_new(&f->s, &f->opts, &f->st), &f->st);
    test_alloc_fail_at(&f->te->alloc, n, 0);
    rc = run_once(f, f->opts.kind, NULL);
    attempts = f->te->alloc.attempts;
    test_alloc_fail_at(&f->te->alloc, -1, 0);
    if (attempts <= n) {
      /* The run needed fewer than n+1 allocations: nothing was injected. */
      assert_ok(rc, &f->st);
      assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
    } else {
      if (rc != HK_OK) assert_status(rc, &f->st, HK_RESOURCE_EXHAUSTED, NULL);
      /* Usable or freeable: a later run either works or reports an error, no crash. */
      (void)run_once(f, f->opts.kind, NULL);
      (void)hk_session_close(f->s, rc, NULL);
    }
    hk_session_free(f->s);
    f->s = NULL;
    assert_int_equal(test_alloc_live(&f->te->alloc), base);
    if (attempts <= n) break;
  }
  assert_true(n < 2000);
}

#define FAKE(fn) cmocka_unit_test_setup_teardown(fn, setup_fake, teardown)
#define GRAPH(fn) cmocka_unit_test_setup_teardown(fn, setup_graph, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      FAKE(test_alloc__a_monitored_session_s_steady_state_run_allocates_nothing),
      FAKE(test_alloc__a_singular_session_s_steady_state_run_allocates_nothing),
      GRAPH(test_alloc__a_monitored_session_s_steady_state_run_allocates_nothing),
      GRAPH(test_alloc__a_singular_session_s_steady_state_run_allocates_nothing),
      GRAPH(test_alloc__runs_that_save_no_checkpoint_allocate_nothing),
      GRAPH(test_alloc__runs_with_step_counter_and_summary_saver_allocate_nothing),
      GRAPH(test_alloc__runs_with_the_logging_feed_and_final_ops_hooks_allocate_nothing),
      GRAPH(test_alloc__runs_with_early_stopping_and_best_k_allocate_nothing),
      FAKE(test_alloc__oom_loop_session_new),
      GRAPH(test_alloc__oom_loop_session_new),
      FAKE(test_alloc__oom_loop_first_run),
      GRAPH(test_alloc__oom_loop_first_run),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
