/*
 * Sessions over the fake executor: runs — the order of the hooks and the
 * executor and the run context (C6, C7, C21), merged fetches, feeds and
 * options (C8–C12, H13, D10), failures (C13, C14), stops from the run
 * context (C18–C20), split runs, traced runs (H41), a stop at re-creation
 * (D8) and step functions (C42–C45).
 *
 * Most tests run twice, once per session kind (MS and SMS), through two
 * setups that share one fixture type (session_tests.h).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "session_tests.h"

/* ---- C6, C7, C21 -------------------------------------------------------- */

static hk_code mark_executor_run(void *user, fake_executor *fx, const hk_run_args *args, hk_status *st) {
  fixture *f = user;
  (void)fx;
  (void)args;
  (void)st;
  spy_log_add(&f->log, "executor.run", 0);
  return HK_OK;
}

/* C6, C7, C21: run() calls every before_run in list order, one executor run, then every after_run, with one shared
 * run context. */
static void test_session__run_calls_hooks_in_order_around_one_executor_run(void **state) {
  fixture *f = *state;
  static const char *const expect[] = {
      "a.before_run", "b.before_run", "c.before_run", "executor.run", "a.after_run", "b.after_run", "c.after_run",
  };
  hk_run_options opts = HK_RUN_OPTIONS_INIT;
  hk_run_args args = {NULL, 0, &f->x, 1, &f->train, 1, &opts};
  hk_tensor res[1];
  session_fixture_open(f);
  fake_executor_on_run(f->fx, mark_executor_run, f);
  assert_ok(hk_session_run(f->s, &args, res, NULL, &f->st), &f->st);
  assert_true(spy_log_equals(&f->log, expect, 7));
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 1);
  /* C6/C21: the context exposes the caller's own argument pointers. */
  assert_ptr_equal(f->a->last_ctx_args, &args);
  assert_ptr_equal(f->c->last_ctx_args, &args);
  assert_non_null(f->b->last_ctx_session);
  assert_true(hk_raw_session_is_open(f->b->last_ctx_session));
  assert_int_equal(*(int64_t *)res[0].data, 7);
}

/* ---- C8: merged fetches and targets ------------------------------------- */

/* C8: the executor gets the caller's fetches and each hook's, and each hook gets back only its own values. */
static void test_session__merged_fetches_each_hook_gets_its_own(void **state) {
  fixture *f = *state;
  hk_handle fetches[2];
  hk_run_args args;
  hk_tensor res[2];
  const fake_run_record *r;
  hk_handle extra = fake_executor_add_op(f->fx, "extra");
  memset(&args, 0, sizeof(args));
  fetches[0] = f->y;
  fetches[1] = f->x;
  args.fetches = fetches;
  args.nfetches = 2;
  args.targets = &f->train;
  args.ntargets = 1;

  spy_hook_fetch(f->a, f->gs);
  spy_hook_target(f->a, f->train);
  spy_hook_target(f->b, extra); /* b: targets only, no fetches */
  spy_hook_fetch(f->c, f->x);
  spy_hook_fetch(f->c, f->gs);
  spy_hook_fetch(f->c, f->y);
  session_fixture_open(f);
  assert_ok(hk_session_run(f->s, &args, res, NULL, &f->st), &f->st);

  r = fake_executor_last_run(f->fx);
  assert_int_equal(r->nfetches, 6);
  assert_int_equal(r->fetches[0], f->y);
  assert_int_equal(r->fetches[1], f->x);
  assert_int_equal(r->fetches[2], f->gs);
  assert_int_equal(r->fetches[3], f->x);
  assert_int_equal(r->fetches[4], f->gs);
  assert_int_equal(r->fetches[5], f->y);
  /* Targets: the caller's, plus every hook's (duplicates allowed, run once). */
  assert_true(r->ntargets >= 2);
  assert_int_equal(r->targets[0], f->train);
  {
    size_t i;
    int saw_extra = 0;
    for (i = 0; i < r->ntargets; i++) saw_extra |= r->targets[i] == extra;
    assert_true(saw_extra);
  }
  assert_int_equal(fake_executor_op_runs(f->fx, extra), 1);

  /* The caller's results, in its fetch order. */
  assert_int_equal(*(int64_t *)res[0].data, 8);
  assert_int_equal(*(int64_t *)res[1].data, 7);
  /* Each hook's values are exactly its own fetches. */
  assert_int_equal(f->a->last_nresults, 1);
  assert_int_equal(f->a->last_i64[0], 0); /* GS before the train op (fetches first) */
  assert_int_equal(f->b->last_nresults, 0);
  assert_null(f->b->last_results_ptr);
  assert_int_equal(f->c->last_nresults, 3);
  assert_int_equal(f->c->last_i64[0], 7);
  assert_int_equal(f->c->last_i64[1], 0);
  assert_int_equal(f->c->last_i64[2], 8);
  assert_int_equal(fake_executor_get_i64(f->fx, NULL, f->gs), 1);

  /* A hook with no request at all also gets (NULL, 0). */
  spy_hook_clear_request(f->a);
  assert_ok(hk_session_run(f->s, &args, res, NULL, &f->st), &f->st);
  assert_int_equal(f->a->last_nresults, 0);
  assert_null(f->a->last_results_ptr);
  assert_int_equal(f->c->last_i64[1], 1);
}

/* ---- C9, C10, H13: feeds ------------------------------------------------ */

/* C9: two hooks feeding the same tensor fail the run with INVALID_ARGUMENT naming it. */
static void test_session__two_hooks_feeding_one_tensor_fail_the_run(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  spy_hook_feed_i64(f->a, f->p, 1);
  spy_hook_feed_i64(f->c, f->p, 2);
  spy_hook_stop_at(f->a, SPY_BEFORE_RUN, 1, 1);
  assert_status(session_fixture_run_train(f), &f->st, HK_INVALID_ARGUMENT,
                "Same tensor is fed by two hooks. Conflict(s): [p:0]");
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 0);
  assert_int_equal(f->a->calls[SPY_AFTER_RUN] + f->b->calls[SPY_AFTER_RUN] + f->c->calls[SPY_AFTER_RUN], 0);
  /* H13: the stop flag is unchanged by the failed call. */
  assert_false(hk_session_should_stop(f->s));
}

/* C9, H13: the conflicting tensors are listed in the order the hooks' feeds name them. */
static void test_session__the_feed_conflict_list_is_in_list_order(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  spy_hook_feed_i64(f->a, f->q, 1);
  spy_hook_feed_i64(f->a, f->p, 1);
  spy_hook_feed_i64(f->b, f->p, 2);
  spy_hook_feed_i64(f->b, f->q, 2);
  assert_status(session_fixture_run_train(f), &f->st, HK_INVALID_ARGUMENT, "Conflict(s): [q:0, p:0]");
}

/* C10: a hook and the caller feeding the same tensor fail the run with INVALID_ARGUMENT naming it. */
static void test_session__a_hook_and_the_caller_feeding_one_tensor_fail_the_run(void **state) {
  fixture *f = *state;
  int64_t v = 5;
  hk_feed feeds[1];
  hk_run_args args = {feeds, 1, NULL, 0, &f->train, 1, NULL};
  feeds[0].tensor = f->p;
  feeds[0].value = hk_tensor_scalar_i64(&v);
  session_fixture_open(f);
  spy_hook_feed_i64(f->b, f->p, 9);
  assert_status(hk_session_run(f->s, &args, NULL, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "Same tensor is fed by a SessionRunHook and user. Conflict(s): [p:0]");
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 0);
  assert_int_equal(f->a->calls[SPY_AFTER_RUN], 0);
}

/* C10, D10: hooks' feeds are merged with the caller's into the session's own arrays; the caller's are left
 * untouched. */
static void test_session__feeds_are_merged_and_the_caller_s_arrays_untouched(void **state) {
  fixture *f = *state;
  int64_t v = 5;
  hk_feed feeds[1], feeds_copy[1];
  hk_handle fetches[3], fetches_copy[3];
  hk_handle targets[1], targets_copy[1];
  hk_run_args args, args_copy;
  hk_tensor res[3];
  const fake_run_record *r;
  memset(feeds, 0, sizeof(feeds));
  feeds[0].tensor = f->q;
  feeds[0].value = hk_tensor_scalar_i64(&v);
  fetches[0] = f->q;
  fetches[1] = f->p;
  fetches[2] = f->x;
  targets[0] = f->train;
  memset(&args, 0, sizeof(args));
  args.feeds = feeds;
  args.nfeeds = 1;
  args.fetches = fetches;
  args.nfetches = 3;
  args.targets = targets;
  args.ntargets = 1;
  memcpy(feeds_copy, feeds, sizeof(feeds));
  memcpy(fetches_copy, fetches, sizeof(fetches));
  memcpy(targets_copy, targets, sizeof(targets));
  args_copy = args;

  spy_hook_feed_i64(f->b, f->p, 11);
  spy_hook_fetch(f->b, f->gs);
  spy_hook_target(f->c, f->train);
  session_fixture_open(f);
  assert_ok(hk_session_run(f->s, &args, res, NULL, &f->st), &f->st);
  r = fake_executor_last_run(f->fx);
  /* The union: the caller's pairs first, then each hook's in list order. */
  assert_int_equal(r->nfeeds, 2);
  assert_int_equal(r->feeds[0].tensor, f->q);
  assert_int_equal(r->feed_i64[0], 5);
  assert_int_equal(r->feeds[1].tensor, f->p);
  assert_int_equal(r->feed_i64[1], 11);
  assert_int_equal(*(int64_t *)res[0].data, 5);
  assert_int_equal(*(int64_t *)res[1].data, 11);
  /* D10: the caller's arrays and args compare equal byte for byte. */
  assert_memory_equal(feeds, feeds_copy, sizeof(feeds));
  assert_memory_equal(fetches, fetches_copy, sizeof(fetches));
  assert_memory_equal(targets, targets_copy, sizeof(targets));
  assert_memory_equal(&args, &args_copy, sizeof(args));
  assert_int_equal(v, 5);
}

/* C10: when only the caller or only one hook feeds, its feeds reach the executor as they are. */
static void test_session__feeds_from_only_the_caller_or_only_a_hook_pass_through(void **state) {
  fixture *f = *state;
  int64_t v = 3;
  hk_feed feeds[1];
  hk_run_args args = {feeds, 1, NULL, 0, NULL, 0, NULL};
  const fake_run_record *r;
  memset(feeds, 0, sizeof(feeds));
  feeds[0].tensor = f->q;
  feeds[0].value = hk_tensor_scalar_i64(&v);
  spy_hook_fetch(f->a, f->gs); /* a request with no feeds */
  session_fixture_open(f);
  assert_ok(hk_session_run(f->s, &args, NULL, NULL, &f->st), &f->st);
  r = fake_executor_last_run(f->fx);
  assert_int_equal(r->nfeeds, 1);
  assert_int_equal(r->feeds[0].tensor, f->q);
  assert_int_equal(r->feed_i64[0], 3);

  spy_hook_feed_i64(f->c, f->p, 4);
  args.feeds = NULL;
  args.nfeeds = 0;
  assert_ok(hk_session_run(f->s, &args, NULL, NULL, &f->st), &f->st);
  r = fake_executor_last_run(f->fx);
  assert_int_equal(r->nfeeds, 1);
  assert_int_equal(r->feeds[0].tensor, f->p);
  assert_int_equal(r->feed_i64[0], 4);
}

/* H13: one feed list naming the same tensor twice is INVALID_ARGUMENT. */
static void test_session__a_tensor_fed_twice_in_one_list_is_refused(void **state) {
  fixture *f = *state;
  int64_t v = 3;
  hk_feed feeds[2];
  hk_run_args args = {feeds, 2, NULL, 0, NULL, 0, NULL};
  memset(feeds, 0, sizeof(feeds));
  feeds[0].tensor = f->q;
  feeds[0].value = hk_tensor_scalar_i64(&v);
  feeds[1] = feeds[0];
  session_fixture_open(f);
  assert_status(hk_session_run(f->s, &args, NULL, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "q:0");
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 0);
  assert_int_equal(f->a->calls[SPY_AFTER_RUN], 0);

  spy_hook_feed_i64(f->b, f->p, 1);
  spy_hook_feed_i64(f->b, f->p, 2);
  assert_status(session_fixture_run_train(f), &f->st, HK_INVALID_ARGUMENT, "p:0");
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 0);
  assert_int_equal(f->a->calls[SPY_AFTER_RUN], 0);
}

/* ---- C11, C12: options and metadata ------------------------------------- */

/* C11: run options the hooks ask for are merged into a session-owned copy; the caller's options are untouched. */
static void test_session__hook_run_options_are_merged_into_a_copy(void **state) {
  fixture *f = *state;
  int marker = 0;
  hk_run_options opts = HK_RUN_OPTIONS_INIT, copy;
  hk_run_args args = {NULL, 0, NULL, 0, &f->train, 1, &opts};
  const fake_run_record *r;
  opts.trace_level = 1;
  opts.timeout_ms = 100;
  opts.executor_options = &marker;
  copy = opts;
  spy_hook_options(f->a, 3, 50);
  spy_hook_options(f->b, 0, 500);
  session_fixture_open(f);
  assert_ok(hk_session_run(f->s, &args, NULL, NULL, &f->st), &f->st);
  r = fake_executor_last_run(f->fx);
  assert_true(r->had_options);
  assert_int_equal(r->options.trace_level, 3);
  assert_int_equal(r->options.timeout_ms, 500);
  assert_ptr_equal(r->options.executor_options, &marker);
  /* A session-owned copy; the caller's object is untouched. */
  assert_ptr_not_equal(r->options_ptr, &opts);
  assert_memory_equal(&opts, &copy, sizeof(opts));
  /* after_run sees the merged options. */
  assert_true(f->c->have_options);
  assert_int_equal(f->c->last_options.trace_level, 3);
  assert_int_equal(f->c->last_options.timeout_ms, 500);
  assert_ptr_equal(f->c->last_options.executor_options, &marker);

  /* No caller options: the hooks' maxima alone. */
  args.options = NULL;
  spy_hook_options(f->a, 2, 0);
  spy_hook_options(f->b, 0, 0);
  assert_ok(hk_session_run(f->s, &args, NULL, NULL, &f->st), &f->st);
  r = fake_executor_last_run(f->fx);
  assert_int_equal(r->options.trace_level, 2);
  assert_int_equal(r->options.timeout_ms, 0);
  assert_null(r->options.executor_options);
}

/* C12: run metadata is the caller's when given, else one the session supplies and reuses. */
static void test_session__run_metadata_is_the_caller_s_or_a_reused_session_one(void **state) {
  fixture *f = *state;
  hk_run_metadata *first;
  hk_run_metadata mine = HK_RUN_METADATA_INIT;
  session_fixture_open(f);
  assert_ok(session_fixture_run_train(f), &f->st);
  first = fake_executor_last_run(f->fx)->metadata;
  assert_non_null(first); /* supplied by the session */
  assert_ptr_equal(f->a->last_metadata, first);
  assert_ok(session_fixture_run_train(f), &f->st);
  assert_ptr_equal(fake_executor_last_run(f->fx)->metadata, first); /* reused */
  {
    hk_run_args args = {NULL, 0, NULL, 0, &f->train, 1, NULL};
    assert_ok(hk_session_run(f->s, &args, NULL, &mine, &f->st), &f->st);
  }
  assert_ptr_equal(fake_executor_last_run(f->fx)->metadata, &mine);
  assert_ptr_equal(f->b->last_metadata, &mine);
  assert_ptr_equal(mine.executor_data, f->fx); /* filled by the executor */
}

/* ---- C13, C14 ----------------------------------------------------------- */

/* C13: a failed executor run calls no after_run and does not update the stop flag. */
static void test_session__a_failed_executor_run_calls_no_after_run_and_sets_no_stop(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  spy_hook_stop_at(f->a, SPY_BEFORE_RUN, 1, 1);
  fake_executor_fail(f->fx, FAKE_RUN, 1, 1, HK_INTERNAL, "kernel exploded in op train");
  assert_status(session_fixture_run_train(f), &f->st, HK_INTERNAL, "kernel exploded in op train");
  assert_int_equal(f->a->calls[SPY_AFTER_RUN] + f->b->calls[SPY_AFTER_RUN] + f->c->calls[SPY_AFTER_RUN], 0);
  /* The stop flag is not updated by a failed run. */
  assert_false(hk_session_should_stop(f->s));
  /* C28: a failing run never requests a coordinator stop by itself. */
  assert_false(hk_coordinator_should_stop(hk_session_coordinator(f->s)));
  assert_ok(session_fixture_run_train(f), &f->st);
}

/* C14: a failing before_run skips the later hooks and the executor run and fails the run. */
static void test_session__a_failing_before_run_fails_the_run(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  spy_hook_fail(f->b, SPY_BEFORE_RUN, 1, 1, HK_PERMISSION_DENIED, "b refuses");
  assert_status(session_fixture_run_train(f), &f->st, HK_PERMISSION_DENIED, "b refuses");
  assert_int_equal(f->a->calls[SPY_BEFORE_RUN], 1);
  assert_int_equal(f->c->calls[SPY_BEFORE_RUN], 0);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 0);
  assert_int_equal(f->a->calls[SPY_AFTER_RUN], 0);
}

/* C14: a failing after_run skips the later hooks' after_run and fails the run. */
static void test_session__a_failing_after_run_fails_the_run(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  spy_hook_stop_at(f->a, SPY_AFTER_RUN, 1, 1);
  spy_hook_fail(f->b, SPY_AFTER_RUN, 1, 1, HK_DATA_LOSS, "b lost data");
  assert_status(session_fixture_run_train(f), &f->st, HK_DATA_LOSS, "b lost data");
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 1);
  assert_int_equal(f->a->calls[SPY_AFTER_RUN], 1);
  assert_int_equal(f->c->calls[SPY_AFTER_RUN], 0);
  /* The step's side effects happened, but this call's stop request is not applied. */
  assert_int_equal(fake_executor_get_i64(f->fx, NULL, f->gs), 1);
  assert_false(hk_session_should_stop(f->s));
}

/* ---- C18, C19, C20: run context stop ------------------------------------ */

/* C18, C19: a stop requested in before_run takes effect after the step, which still runs. */
static void test_session__a_stop_in_before_run_takes_effect_after_the_step(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  spy_hook_stop_at(f->a, SPY_BEFORE_RUN, 1, 1);
  assert_ok(session_fixture_run_train(f), &f->st);
  /* The step still executed; every after_run saw the request. */
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 1);
  assert_int_equal(fake_executor_get_i64(f->fx, NULL, f->gs), 1);
  assert_int_equal(f->c->calls[SPY_AFTER_RUN], 1);
  assert_true(f->a->stop_seen_in_after_run);
  assert_true(f->c->stop_seen_in_after_run);
  assert_true(hk_session_should_stop(f->s));
}

/* C19: a stop requested in after_run is seen by the later hooks of the same run. */
static void test_session__a_stop_in_after_run_is_seen_by_later_hooks(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  assert_ok(session_fixture_run_train(f), &f->st);
  assert_false(f->a->stop_seen_in_after_run); /* C18: a new context starts false */
  spy_hook_stop_at(f->b, SPY_AFTER_RUN, 1, 1);
  assert_ok(session_fixture_run_train(f), &f->st);
  assert_false(f->a->stop_seen_in_after_run);
  assert_false(f->b->stop_seen_in_after_run);
  assert_true(f->c->stop_seen_in_after_run);
  assert_true(hk_session_should_stop(f->s));
}

/* ---- split runs (hk_session_run_begin / run_end / run_abandon) -------- */

/* C7 across the split: every before_run at begin, the caller's own work in
 * between, then one executor run and every after_run at end; the caller's
 * fetches come back from end. */
static void test_session__split_run_brackets_the_callers_work(void **state) {
  fixture *f = *state;
  static const char *const expect[] = {
      "a.before_run", "b.before_run", "c.before_run", "caller.work",
      "executor.run", "a.after_run",  "b.after_run",  "c.after_run",
  };
  hk_run_args args = {NULL, 0, &f->x, 1, &f->train, 1, NULL};
  hk_tensor res[1];
  session_fixture_open(f);
  fake_executor_on_run(f->fx, mark_executor_run, f);
  assert_ok(hk_session_run_begin(f->s, &args, &f->st), &f->st);
  spy_log_add(&f->log, "caller.work", 0);
  assert_ok(hk_session_run_end(f->s, res, NULL, &f->st), &f->st);
  assert_true(spy_log_equals(&f->log, expect, 8));
  assert_int_equal(*(int64_t *)res[0].data, 7);
  assert_ptr_equal(f->b->last_ctx_args, &args); /* C6 */
  /* a whole run after it works as before */
  assert_ok(hk_session_run(f->s, &args, res, NULL, &f->st), &f->st);
}

/* While a split run is open, other runs are refused and change nothing; end
 * without an open run is refused; abandon drops the run's after_run and its
 * stop requests (C14); close abandons an open run. */
static void test_session__split_run_misuse(void **state) {
  fixture *f = *state;
  hk_run_args args = {NULL, 0, &f->x, 1, &f->train, 1, NULL};
  hk_tensor res[1];
  session_fixture_open(f);
  assert_status(hk_session_run_end(f->s, res, NULL, &f->st), &f->st, HK_FAILED_PRECONDITION, "no run is open");
  assert_status(hk_session_run_begin(NULL, &args, &f->st), &f->st, HK_INVALID_ARGUMENT, "session");
  assert_status(hk_session_run_end(NULL, res, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "session");
  hk_session_run_abandon(NULL);
  hk_session_run_abandon(f->s); /* nothing open: no-op */

  int runs = fake_executor_calls(f->fx, FAKE_RUN);
  spy_hook_stop_at(f->a, SPY_BEFORE_RUN, 1, 1);
  assert_ok(hk_session_run_begin(f->s, &args, &f->st), &f->st);
  assert_status(hk_session_run(f->s, &args, res, NULL, &f->st), &f->st, HK_FAILED_PRECONDITION, "still open");
  assert_status(hk_session_run_begin(f->s, &args, &f->st), &f->st, HK_FAILED_PRECONDITION, "still open");
  assert_status(hk_session_run_end(f->s, NULL, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "results");
  assert_int_equal(f->a->calls[SPY_BEFORE_RUN], 1);
  hk_session_run_abandon(f->s);
  assert_int_equal(f->a->calls[SPY_AFTER_RUN], 0);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), runs); /* no executor run */
  assert_false(hk_session_should_stop(f->s));                   /* the abandoned run's stop request is dropped */
  assert_status(hk_session_run_end(f->s, res, NULL, &f->st), &f->st, HK_FAILED_PRECONDITION, "no run is open");

  /* C14 in the first half: a failing before_run leaves no run open. */
  spy_hook_fail(f->b, SPY_BEFORE_RUN, 1, 1, HK_UNAVAILABLE, "b is down");
  assert_status(hk_session_run_begin(f->s, &args, &f->st), &f->st, HK_UNAVAILABLE, "b is down");
  assert_status(hk_session_run_end(f->s, res, NULL, &f->st), &f->st, HK_FAILED_PRECONDITION, "no run is open");

  /* close abandons an open run: no after_run, end() runs */
  assert_ok(hk_session_run_begin(f->s, &args, &f->st), &f->st);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  assert_int_equal(f->a->calls[SPY_AFTER_RUN], 0);
  assert_int_equal(f->a->calls[SPY_END], 1);
  assert_status(hk_session_run_end(f->s, res, NULL, &f->st), &f->st, HK_FAILED_PRECONDITION, "closed");
}

/* C13, C19, C20 in the second half: an executor failure skips every
 * after_run; a stop requested in before_run takes effect after end. */
static void test_session__split_run_end_failure_and_stop(void **state) {
  fixture *f = *state;
  hk_run_args args = {NULL, 0, &f->x, 1, &f->train, 1, NULL};
  hk_tensor res[1];
  session_fixture_open(f);
  fake_executor_fail(f->fx, FAKE_RUN, 1, 1, HK_INTERNAL, "kernel exploded");
  assert_ok(hk_session_run_begin(f->s, &args, &f->st), &f->st);
  assert_status(hk_session_run_end(f->s, res, NULL, &f->st), &f->st, HK_INTERNAL, "kernel exploded");
  assert_int_equal(f->a->calls[SPY_AFTER_RUN], 0);
  spy_hook_stop_at(f->b, SPY_BEFORE_RUN, 1, 1);
  assert_ok(hk_session_run_begin(f->s, &args, &f->st), &f->st);
  assert_false(hk_session_should_stop(f->s));
  assert_ok(hk_session_run_end(f->s, res, NULL, &f->st), &f->st);
  assert_true(hk_session_should_stop(f->s));
  assert_true(f->c->stop_seen_in_after_run);
  assert_status(hk_session_run_begin(f->s, &args, &f->st), &f->st, HK_FAILED_PRECONDITION,
                "Run called even after should_stop requested.");
}

/* ---- traced runs (H41) ----------------------------------------------------- */

typedef struct span_probe {
  size_t n;
  hk_span spans[16];
  int calls;
} span_probe;

/* b's before_run copies the spans of the last traced run. */
static hk_code copy_spans(spy_hook *spy, spy_slot slot, void *arg, hk_status *st) {
  span_probe *p = spy->action_user;
  (void)st;
  if (slot != SPY_BEFORE_RUN) return HK_OK;
  size_t n = 0;
  const hk_span *sp = hk_run_context_last_traced_spans(arg, &n);
  p->n = n < 16 ? n : 16;
  if (n) memcpy(p->spans, sp, p->n * sizeof *sp);
  p->calls++;
  return HK_OK;
}

/* H41: a run becomes traced from the hook that asks for it: its spans cover
 * every later before_run, the executor run, every after_run and the whole
 * call, in order and nested in time; an untraced run records nothing. */
static void test_session__a_traced_run_s_spans_cover_every_later_callback(void **state) {
  fixture *f = *state;
  span_probe probe;
  hk_run_args args = {NULL, 0, NULL, 0, &f->train, 1, NULL};
  memset(&probe, 0, sizeof probe);
  f->b->action = copy_spans;
  f->b->action_user = &probe;
  session_fixture_open(f);
  assert_ok(hk_session_run(f->s, &args, NULL, NULL, &f->st), &f->st);
  assert_int_equal(probe.n, 0); /* nothing traced yet */
  assert_null(hk_run_context_last_traced_spans(NULL, &probe.n));
  spy_hook_options(f->a, 1, 0); /* a asks for a trace */
  assert_ok(hk_session_run(f->s, &args, NULL, NULL, &f->st), &f->st);
  spy_hook_clear_request(f->a);
  assert_ok(hk_session_run(f->s, &args, NULL, NULL, &f->st), &f->st);
  /* the traced run: b and c before_run, executor, a b c after_run, session */
  static const char *const want[][2] = {
      {"b", "before_run"}, {"c", "before_run"}, {"executor", "run"},        {"a", "after_run"},
      {"b", "after_run"},  {"c", "after_run"},  {"session", "session.run"},
  };
  assert_int_equal(probe.n, 7);
  for (size_t i = 0; i < 7; i++) {
    assert_string_equal(probe.spans[i].hook, want[i][0]);
    assert_string_equal(probe.spans[i].what, want[i][1]);
    assert_true(probe.spans[i].end_secs >= probe.spans[i].start_secs);
    assert_true(probe.spans[i].start_secs >= probe.spans[6].start_secs);
    assert_true(probe.spans[i].end_secs <= probe.spans[6].end_secs);
    if (i > 0 && i < 6) assert_true(probe.spans[i].start_secs >= probe.spans[i - 1].end_secs);
    assert_true(probe.spans[i].thread != 0);
  }
  /* an untraced run leaves the last traced one in place */
  assert_ok(hk_session_run(f->s, &args, NULL, NULL, &f->st), &f->st);
  assert_int_equal(probe.n, 7);
}

/* ---- D8, C26, C10: stop at re-creation, the full conflict list ---------- */

/*
 * D8 + C26 + H12: a stop requested through the creation context in
 * after_create_session — "first and after re-creation" — makes
 * should_stop() true before any step runs, also when the re-creation
 * happens inside should_stop() (C40): the hook-stop flag wins over C40's
 * "returns false" (TF has no creation-time stop), so a
 * `while (!should_stop()) run();` loop never gets C5's FAILED_PRECONDITION
 * from run().
 */
static void test_session__a_stop_at_recreation_makes_should_stop_true(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  spy_hook_stop_at(f->a, SPY_AFTER_CREATE, 1, 1);
  hk_coordinator_request_stop(hk_session_coordinator(f->s), HK_ABORTED, "worker preempted");
  {
    int stop = hk_session_should_stop(f->s);
    assert_int_equal(f->a->calls[SPY_AFTER_CREATE], 2); /* created, then re-created once */
    if (!stop) {
      hk_code rc = session_fixture_run_train(f);
      fprintf(stderr, "should_stop() was false; the next run() returned %s \"%s\"\n", hk_code_name(rc), f->st.message);
    }
    assert_true(stop);
  }
}

/*
 * C10 (and C9): the conflict list names every conflicting tensor, beyond
 * 16 of them too (nothing is dropped silently).
 */
static void test_session__the_conflict_list_names_every_conflicting_tensor(void **state) {
  fixture *f = *state;
  hk_handle t[17];
  hk_feed caller[17];
  int64_t vals[17];
  hk_run_args args;
  char name[16];
  int i;
  for (i = 0; i < 17; i++) {
    snprintf(name, sizeof(name), "t%02d", i);
    t[i] = fake_executor_add_i64(f->fx, name, 0);
  }
  for (i = 0; i < 16; i++) spy_hook_feed_i64(f->a, t[i], 1);
  spy_hook_feed_i64(f->b, t[16], 1);
  for (i = 0; i < 17; i++) {
    vals[i] = i;
    memset(&caller[i], 0, sizeof(caller[i]));
    caller[i].tensor = t[i];
    caller[i].value = hk_tensor_scalar_i64(&vals[i]);
  }
  session_fixture_open(f);
  memset(&args, 0, sizeof(args));
  args.feeds = caller;
  args.nfeeds = 17;
  assert_status(hk_session_run(f->s, &args, NULL, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "Same tensor is fed by a SessionRunHook and user. Conflict(s): [t00:0, t01:0");
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 0);
  if (strstr(f->st.message, "t15:0, t16:0]") == NULL) fprintf(stderr, "message: %s\n", f->st.message);
  assert_non_null(strstr(f->st.message, "t15:0, t16:0]"));
}

/* ---- C42–C45: step fn --------------------------------------------------- */

typedef struct step_data {
  fixture *f;
  int calls;
  int64_t fetched;
  hk_code after_stop_rc;
  hk_status after_stop_st;
  hk_code ret;
  int request_stop;
} step_data;

static hk_code step_body(hk_step_context *ctx, void *user, hk_status *st) {
  step_data *d = user;
  fixture *f = d->f;
  hk_tensor res[1];
  hk_run_args args = {NULL, 0, &f->x, 1, &f->train, 1, NULL};
  hk_raw_session *rs = hk_step_context_session(ctx);
  hk_code rc;
  d->calls++;
  if (rs == NULL) return hk_status_set(st, HK_INTERNAL, "no raw session in step context");
  /* C17: the raw session triggers no hooks. */
  rc = hk_raw_session_run(rs, &args, res, NULL, st);
  if (rc != HK_OK) return rc;
  rc = hk_step_context_run_with_hooks(ctx, &args, res, NULL, st);
  if (rc != HK_OK) return rc;
  rc = hk_step_context_run_with_hooks(ctx, &args, res, NULL, st);
  if (rc != HK_OK) return rc;
  d->fetched = *(int64_t *)res[0].data;
  if (d->request_stop) {
    rc = hk_step_context_request_stop(ctx, st);
    d->after_stop_rc = hk_step_context_run_with_hooks(ctx, &args, res, NULL, &d->after_stop_st);
    if (d->ret != HK_OK) return hk_status_set(st, d->ret, "step_fn's own error");
    return d->request_stop == 2 ? HK_OK : rc;
  }
  if (d->ret != HK_OK) return hk_status_set(st, d->ret, "step_fn's own error");
  return HK_OK;
}

/* C42: run_step_fn with a NULL step_fn is INVALID_ARGUMENT. */
static void test_session__a_null_step_fn_is_invalid_argument(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  assert_status(hk_session_run_step_fn(f->s, NULL, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "step_fn");
}

/* C43: a step_fn's run_with_hooks runs the hooks; its raw-session runs do not; run_step_fn returns step_fn's status. */
static void test_session__step_fn_runs_hooks_only_through_run_with_hooks(void **state) {
  fixture *f = *state;
  step_data d;
  memset(&d, 0, sizeof(d));
  d.f = f;
  session_fixture_open(f);
  assert_ok(hk_session_run_step_fn(f->s, step_body, &d, &f->st), &f->st);
  assert_int_equal(d.calls, 1);
  assert_int_equal(d.fetched, 7);
  /* Hooks fired once per run_with_hooks; the raw run triggered none. */
  assert_int_equal(f->a->calls[SPY_BEFORE_RUN], 2);
  assert_int_equal(f->c->calls[SPY_AFTER_RUN], 2);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 3);
  assert_int_equal(fake_executor_get_i64(f->fx, NULL, f->gs), 3);
  /* run_step_fn returns step_fn's status. */
  d.ret = HK_NOT_FOUND;
  assert_status(hk_session_run_step_fn(f->s, step_body, &d, &f->st), &f->st, HK_NOT_FOUND, "step_fn's own error");
}

/* C44: the step context's request_stop stops the session after the step. */
static void test_session__a_step_fn_s_request_stop_stops_after_the_step(void **state) {
  fixture *f = *state;
  step_data d;
  memset(&d, 0, sizeof(d));
  d.f = f;
  d.request_stop = 1;
  session_fixture_open(f);
  assert_status(hk_session_run_step_fn(f->s, step_body, &d, &f->st), &f->st, HK_OUT_OF_RANGE,
                "step_fn has requested the iterations to stop.");
  /* After request_stop, run_with_hooks returns that status without hooks or executor. */
  assert_true(test_status_is(d.after_stop_rc, &d.after_stop_st, HK_OUT_OF_RANGE,
                             "step_fn has requested the iterations to stop."));
  assert_int_equal(f->a->calls[SPY_BEFORE_RUN], 2);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 3);
  assert_false(hk_session_should_stop(f->s));

  /* step_fn returning OK after request_stop: still OUT_OF_RANGE. */
  d.request_stop = 2;
  assert_status(hk_session_run_step_fn(f->s, step_body, &d, &f->st), &f->st, HK_OUT_OF_RANGE,
                "step_fn has requested the iterations to stop.");
  /* A different non-OK status from step_fn wins. */
  d.ret = HK_DATA_LOSS;
  assert_status(hk_session_run_step_fn(f->s, step_body, &d, &f->st), &f->st, HK_DATA_LOSS, "step_fn's own error");
  assert_ok(hk_session_close(f->s, HK_OUT_OF_RANGE, &f->st), &f->st);
  assert_int_equal(f->a->calls[SPY_END], 1);
}

static hk_code step_two_runs(hk_step_context *ctx, void *user, hk_status *st) {
  fixture *f = user;
  hk_run_args args = {NULL, 0, NULL, 0, &f->train, 1, NULL};
  hk_code rc = hk_step_context_run_with_hooks(ctx, &args, NULL, NULL, st);
  if (rc != HK_OK) return rc;
  return hk_step_context_run_with_hooks(ctx, &args, NULL, NULL, st);
}

/* C5: run_with_hooks after a hook requested a stop is refused like run(). */
static void test_session__run_with_hooks_after_a_hook_s_stop_is_refused(void **state) {
  fixture *f = *state;
  session_fixture_open(f);
  spy_hook_stop_at(f->c, SPY_AFTER_RUN, 1, 1);
  /* C5 applies to run_with_hooks too: the second call in the step is refused. */
  assert_status(hk_session_run_step_fn(f->s, step_two_runs, f, &f->st), &f->st, HK_FAILED_PRECONDITION,
                "Run called even after should_stop requested.");
  assert_int_equal(f->a->calls[SPY_BEFORE_RUN], 1);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 1);
  assert_true(hk_session_should_stop(f->s));
}

/* ---- main --------------------------------------------------------------- */

int main(void) {
  const struct CMUnitTest tests[] = {
      BOTH(test_session__run_calls_hooks_in_order_around_one_executor_run),
      BOTH(test_session__merged_fetches_each_hook_gets_its_own),
      BOTH(test_session__two_hooks_feeding_one_tensor_fail_the_run),
      BOTH(test_session__the_feed_conflict_list_is_in_list_order),
      BOTH(test_session__a_hook_and_the_caller_feeding_one_tensor_fail_the_run),
      BOTH(test_session__feeds_are_merged_and_the_caller_s_arrays_untouched),
      BOTH(test_session__feeds_from_only_the_caller_or_only_a_hook_pass_through),
      BOTH(test_session__a_tensor_fed_twice_in_one_list_is_refused),
      BOTH(test_session__hook_run_options_are_merged_into_a_copy),
      BOTH(test_session__run_metadata_is_the_caller_s_or_a_reused_session_one),
      BOTH(test_session__a_failed_executor_run_calls_no_after_run_and_sets_no_stop),
      BOTH(test_session__a_failing_before_run_fails_the_run),
      BOTH(test_session__a_failing_after_run_fails_the_run),
      BOTH(test_session__a_stop_in_before_run_takes_effect_after_the_step),
      BOTH(test_session__a_stop_in_after_run_is_seen_by_later_hooks),
      BOTH(test_session__a_null_step_fn_is_invalid_argument),
      BOTH(test_session__step_fn_runs_hooks_only_through_run_with_hooks),
      BOTH(test_session__a_step_fn_s_request_stop_stops_after_the_step),
      BOTH(test_session__run_with_hooks_after_a_hook_s_stop_is_refused),
      BOTH(test_session__split_run_brackets_the_callers_work),
      BOTH(test_session__split_run_misuse),
      BOTH(test_session__split_run_end_failure_and_stop),
      BOTH(test_session__a_traced_run_s_spans_cover_every_later_callback),
      MS(test_session__a_stop_at_recreation_makes_should_stop_true),
      SMS(test_session__the_conflict_list_names_every_conflicting_tensor),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
