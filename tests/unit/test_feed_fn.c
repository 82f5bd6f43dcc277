/*
 * Tests of FeedFnHook (contract group N: C139), through real sessions over
 * the scripted fake executor and the embedded graph executor; and its
 * clear refusal by the host loop, whose executor takes no feeds.
 */
#include "session_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct feeder {
  int calls;
  int64_t value; /* fed, then incremented */
  hk_feed feeds[2];
  size_t nfeeds;  /* what to return */
  int null_array; /* return NULL with nfeeds */
  int fail_at;    /* call number (1-based) that fails, 0: never */
} feeder;

static hk_code feed_fn(void *user, const hk_feed **feeds, size_t *nfeeds, hk_status *status) {
  feeder *fd = user;
  fd->calls++;
  if (fd->fail_at == fd->calls) return hk_status_set(status, HK_OUT_OF_RANGE, "feeder exhausted at call %d", fd->calls);
  fd->value++;
  *feeds = fd->null_array ? NULL : fd->feeds;
  *nfeeds = fd->nfeeds;
  return HK_OK;
}

typedef struct fixture {
  test_env *te;
  fake_executor *fx;
  hk_executor *ex;
  hk_handle gs, train, p;
  feeder fd;
  hk_hook *hook;
  spy_hook *after;
  hk_session *s;
  hk_status st;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof(*f));
  assert_non_null(f);
  f->te = test_env_new();
  f->fx = fake_training_executor(f->te, &f->ex, &f->gs, &f->train);
  f->p = fake_executor_add_tensor(f->fx, "p", HK_DTYPE_I64, 0, NULL);
  f->fd.feeds[0].tensor = f->p;
  f->fd.feeds[0].value = hk_tensor_scalar_i64(&f->fd.value);
  f->fd.nfeeds = 1;
  f->after = spy_hook_new("after", NULL, NULL);
  assert_non_null(f->after);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  session_close_and_free(f->s);
  hk_hook_free(f->hook);
  spy_hook_free(f->after);
  return fixture_release(f, f->fx, f->te);
}

static void make_hook(fixture *f) {
  hk_feed_fn_options o = HK_FEED_FN_OPTIONS_INIT;
  o.feed_fn = feed_fn;
  o.feed_fn_user = &f->fd;
  assert_ok(hk_feed_fn_hook_new(&f->hook, &o, &f->st), &f->st);
}

static void open_session(fixture *f) {
  hk_hook *hooks[2] = {f->hook, f->after->hook};
  hk_session_options so;
  test_session_options(&so, &f->te->env, HK_SESSION_MONITORED, f->ex, hooks, 2);
  assert_ok(hk_session_new(&f->s, &so, &f->st), &f->st);
  fake_executor_reset_calls(f->fx);
}

/* ---- options -------------------------------------------------------------------- */

static void test_feed_fn__bad_options_are_named(void **state) {
  fixture *f = *state;
  hk_feed_fn_options o = HK_FEED_FN_OPTIONS_INIT;
  hk_env bad_env = HK_ENV_INIT;
  hk_hook *h = (hk_hook *)f;
  long live = test_alloc_live(&f->te->alloc);
  o.env = &f->te->env;
  assert_status(hk_feed_fn_hook_new(NULL, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "out");
  assert_status(hk_feed_fn_hook_new(&h, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "opts is NULL");
  assert_null(h);
  assert_status(hk_feed_fn_hook_new(&h, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "feed_fn must not be NULL");
  o.feed_fn = feed_fn;
  o.version = 9;
  assert_status(hk_feed_fn_hook_new(&h, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "opts->version");
  o.version = HK_FEED_FN_OPTIONS_VERSION;
  bad_env.version = 99;
  o.env = &bad_env;
  assert_status(hk_feed_fn_hook_new(&h, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "opts->env");
  assert_int_equal(test_alloc_live(&f->te->alloc), live);
  assert_int_equal(f->fd.calls, 0); /* no callback ran (H3) */
}

static void test_feed_fn__options_init(void **state) {
  hk_feed_fn_options o;
  (void)state;
  memset(&o, 0x5a, sizeof o);
  assert_int_equal(hk_feed_fn_options_init(&o, HK_FEED_FN_OPTIONS_VERSION), HK_OK);
  assert_int_equal(o.version, HK_FEED_FN_OPTIONS_VERSION);
  assert_null(o.env);
  assert_null(o.feed_fn);
  assert_null(o.feed_fn_user);
  assert_int_equal(hk_feed_fn_options_init(&o, 0), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_feed_fn_options_init(NULL, HK_FEED_FN_OPTIONS_VERSION), HK_INVALID_ARGUMENT);
}

/* ---- C139 -------------------------------------------------------------------------- */

/* C139: feed_fn runs in every before_run, and exactly its feeds are requested:
 * no fetches, no targets of the hook's; the executor sees the fed value. */
static void test_feed_fn__feed_fn_feeds_every_run_and_requests_only_its_feeds(void **state) {
  fixture *f = *state;
  make_hook(f);
  spy_hook_fetch(f->after, f->p);
  open_session(f);
  for (int i = 1; i <= 4; i++) {
    assert_ok(session_run_train(f->s, f->train, &f->st), &f->st);
    const fake_run_record *r = fake_executor_last_run(f->fx);
    assert_int_equal(f->fd.calls, i);
    assert_int_equal(r->nfeeds, 1);
    assert_true(r->feeds[0].tensor == f->p);
    assert_int_equal(r->feed_i64[0], i);
    assert_int_equal(r->nfetches, 1); /* the spy's */
    assert_int_equal(r->ntargets, 1); /* the caller's */
    assert_int_equal(f->after->last_i64[0], i);
  }
  /* No feeds this time: none requested. */
  f->fd.nfeeds = 0;
  assert_ok(session_run_train(f->s, f->train, &f->st), &f->st);
  assert_int_equal(fake_executor_last_run(f->fx)->nfeeds, 0);
}

/* C139: a feed_fn error is before_run's, unchanged: the step does not run (C14). */
static void test_feed_fn__a_feed_fn_error_fails_before_run_and_the_step(void **state) {
  fixture *f = *state;
  make_hook(f);
  open_session(f);
  assert_ok(session_run_train(f->s, f->train, &f->st), &f->st);
  f->fd.fail_at = 2;
  assert_status(session_run_train(f->s, f->train, &f->st), &f->st, HK_OUT_OF_RANGE, "feeder exhausted at call 2");
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 1);
  assert_int_equal(f->after->calls[SPY_BEFORE_RUN], 1);
  assert_int_equal(f->after->calls[SPY_AFTER_RUN], 1);
}

/* C139: a feed_fn that returns a NULL array with a non-zero count fails the run with INVALID_ARGUMENT. */
static void test_feed_fn__null_array_with_a_count_is_refused(void **state) {
  fixture *f = *state;
  make_hook(f);
  open_session(f);
  f->fd.null_array = 1;
  f->fd.nfeeds = 2;
  assert_status(session_run_train(f->s, f->train, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "feed_fn returned a NULL feeds array with nfeeds 2");
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 0);
}

/* Its feeds merge like any hook's: the caller feeding the same tensor is
 * C10's conflict. */
static void test_feed_fn__a_feed_the_caller_also_gives_is_refused(void **state) {
  fixture *f = *state;
  int64_t mine = 5;
  hk_feed feed = {f->p, hk_tensor_scalar_i64(&mine)};
  hk_run_args args = {&feed, 1, NULL, 0, &f->train, 1, NULL};
  make_hook(f);
  open_session(f);
  assert_status(hk_session_run(f->s, &args, NULL, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "Same tensor is fed by a SessionRunHook and user.");
}

/* C139: the embedded graph executor: a placeholder fed by the hook drives the
 * step (GS += the fed value). */
static void test_feed_fn__feeds_a_placeholder_of_the_graph_executor(void **state) {
  fixture *f = *state;
  hk_graph *g = NULL;
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_handle gs, p, train;
  int64_t value = 0;
  go.env = &f->te->env;
  assert_ok(hk_graph_new(&g, &go, &f->st), &f->st);
  assert_ok(hk_graph_get_or_create_global_step(g, &gs, &f->st), &f->st);
  assert_ok(hk_graph_placeholder(g, &p, "p", HK_DTYPE_I64, 0, NULL, &f->st), &f->st);
  assert_ok(hk_graph_assign_add(g, &train, "train", gs, p, &f->st), &f->st);
  f->fd.feeds[0].tensor = p;
  f->fd.value = 1; /* fed 2, 3, 4 */
  make_hook(f);
  assert_ok(one_hook_session_new(&f->s, &f->te->env, HK_SESSION_SINGULAR, hk_graph_executor(g), &f->hook, NULL, &f->st),
            &f->st);
  for (int i = 0; i < 3; i++) assert_ok(session_run_train(f->s, train, &f->st), &f->st);
  assert_ok(hk_raw_session_global_step(&value, hk_session_raw_session(f->s), &f->st), &f->st);
  assert_int_equal(value, 2 + 3 + 4);
  /* Steady state: the same feed list every run allocates nothing (H7). */
  test_alloc_reset_counts(&f->te->alloc);
  for (int i = 0; i < 10; i++) assert_ok(session_run_train(f->s, train, &f->st), &f->st);
  assert_int_equal(test_alloc_count(&f->te->alloc), 0);
  session_close_and_free(f->s);
  f->s = NULL;
  hk_graph_free(g);
}

/* The host loop's executor is the program's memory: it takes no feeds. The
 * step ends with its clear INVALID_ARGUMENT, the loop is failed (sticky),
 * and finish returns the error without any end(). */
static void test_feed_fn__host_loop_refuses_feeds(void **state) {
  fixture *f = *state;
  float w[2] = {1.0f, 2.0f}, other[2] = {9.0f, 9.0f};
  static const int64_t d2[1] = {2};
  hk_loop_options lo = HK_LOOP_OPTIONS_INIT;
  hk_hook *hooks[2];
  hk_loop *l = NULL;
  make_hook(f);
  hooks[0] = f->hook;
  hooks[1] = f->after->hook;
  lo.env = &f->te->env;
  lo.handle_signals = 0;
  lo.hooks = hooks;
  lo.nhooks = 2;
  assert_ok(hk_loop_new(&l, &lo, &f->st), &f->st);
  assert_ok(hk_loop_add_array(l, "w", HK_DTYPE_F32, 1, d2, w, 0, &f->st), &f->st);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  assert_ok(hk_executor_resolve_tensor(&f->fd.feeds[0].tensor, hk_loop_executor(l), "w", &f->st), &f->st);
  assert_ok(hk_tensor_init(&f->fd.feeds[0].value, HK_DTYPE_F32, 1, d2, other, &f->st), &f->st);
  assert_ok(hk_loop_step_begin(l, NULL, &f->st), &f->st);
  assert_status(hk_loop_step_end(l, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "the host loop takes no feeds (tensor 'w' is fed)");
  assert_int_equal(f->after->calls[SPY_AFTER_RUN], 0);
  assert_true(hk_loop_should_stop(l));
  assert_status(hk_loop_finish(l, &f->st), &f->st, HK_INVALID_ARGUMENT, "the host loop takes no feeds");
  assert_int_equal(f->after->calls[SPY_END], 0);
  assert_true(w[0] == 1.0f && w[1] == 2.0f); /* the program's memory is untouched */
  hk_loop_free(l);
}

static void test_feed_fn__oom_at_creation_is_clean(void **state) {
  fixture *f = *state;
  hk_feed_fn_options o = HK_FEED_FN_OPTIONS_INIT;
  hk_code rc = HK_INTERNAL;
  long n, base = test_alloc_live(&f->te->alloc);
  o.env = &f->te->env;
  o.feed_fn = feed_fn;
  for (n = 0; n < 20; n++) {
    test_alloc_fail_at(&f->te->alloc, n, 0);
    rc = hk_feed_fn_hook_new(&f->hook, &o, &f->st);
    test_alloc_fail_at(&f->te->alloc, -1, 0);
    if (rc == HK_OK) break;
    assert_status(rc, &f->st, HK_RESOURCE_EXHAUSTED, NULL);
    assert_null(f->hook);
    assert_int_equal(test_alloc_live(&f->te->alloc), base);
  }
  assert_int_equal(rc, HK_OK);
  assert_true(n >= 1);
  assert_string_equal(hk_hook_name(f->hook), "FeedFnHook");
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_feed_fn__bad_options_are_named),
      T(test_feed_fn__options_init),
      T(test_feed_fn__feed_fn_feeds_every_run_and_requests_only_its_feeds),
      T(test_feed_fn__a_feed_fn_error_fails_before_run_and_the_step),
      T(test_feed_fn__null_array_with_a_count_is_refused),
      T(test_feed_fn__a_feed_the_caller_also_gives_is_refused),
      T(test_feed_fn__feeds_a_placeholder_of_the_graph_executor),
      T(test_feed_fn__host_loop_refuses_feeds),
      T(test_feed_fn__oom_at_creation_is_clean),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
