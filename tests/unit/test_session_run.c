/*
 * Sessions over the fake executor: contract groups A (hook protocol),
 * B (run context) and C (monitored and singular sessions), plus H11–H20 and
 * the worker creator (C48, C73, H24).
 *
 * Most tests run twice, once per session kind (MS and SMS), through two
 * setups that share one fixture type.
 */
#include "session_fixture.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef session_fixture fixture;

static int setup_kind(void **state, hk_session_kind kind)
{
  fixture *f = session_fixture_new(kind, 3);
  f->x = fake_executor_add_i64(f->fx, "x", 7);
  f->y = fake_executor_add_i64(f->fx, "y:0", 8);
  f->p = fake_executor_add_i64(f->fx, "p", 0);
  f->q = fake_executor_add_i64(f->fx, "q", 0);
  *state = f;
  return 0;
}

static int setup_ms(void **state) { return setup_kind(state, HK_SESSION_MONITORED); }
static int setup_sms(void **state) { return setup_kind(state, HK_SESSION_SINGULAR); }

/* ---- H3, H10, H11: construction arguments ------------------------------ */

static void test_session__h3_bad_options_no_side_effect(void **state)
{
  fixture *f = *state;
  hk_session_options o;
  hk_hook *null_list[1] = { NULL };

  assert_status(hk_session_new(NULL, &f->opts, &f->st), &f->st, HK_INVALID_ARGUMENT, NULL);
  f->s = (hk_session *)&o; /* must be reset to NULL on failure */
  assert_status(hk_session_new(&f->s, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, NULL);
  assert_null(f->s);

  o = f->opts;
  o.executor = NULL;
  assert_status(hk_session_new(&f->s, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "executor");
  o = f->opts;
  o.version = 0;
  assert_status(hk_session_new(&f->s, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, NULL);
  o = f->opts;
  o.hooks = NULL; /* NULL array with a count */
  assert_status(hk_session_new(&f->s, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "hooks");
  o = f->opts;
  o.stop_grace_period_secs = -1;
  assert_status(hk_session_new(&f->s, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "stop_grace_period_secs");
  o = f->opts;
  o.kind = (hk_session_kind)7;
  assert_status(hk_session_new(&f->s, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "kind");
  o = f->opts;
  o.recovery_wait_secs = 0;
  assert_status(hk_session_new(&f->s, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "recovery_wait_secs");
  o = f->opts;
  o.hooks = null_list;
  o.nhooks = 1;
  assert_status(hk_session_new(&f->s, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, NULL);
  assert_null(f->s);
  /* H3: no hook ran, no raw session was opened, the graph is not finalized. */
  assert_int_equal(f->a->calls[SPY_BEGIN], 0);
  assert_int_equal(fake_executor_sessions_opened(f->fx), 0);
  assert_false(fake_executor_finalized(f->fx));
}

static void test_session__h11_empty_hook_list(void **state)
{
  fixture *f = *state;
  hk_tensor res[1];
  hk_run_args args = { NULL, 0, &f->x, 1, &f->train, 1, NULL };
  f->opts.hooks = NULL;
  f->opts.nhooks = 0;
  session_fixture_open(f);
  assert_ok(hk_session_run(f->s, &args, res, NULL, &f->st), &f->st);
  assert_int_equal(*(int64_t *)res[0].data, 7);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
}

static void test_session__h11_null_entry_and_duplicate(void **state)
{
  fixture *f = *state;
  hk_hook *with_null[3] = { f->a->hook, NULL, f->c->hook };
  hk_hook *dup[3] = { f->a->hook, f->b->hook, f->a->hook };
  f->opts.hooks = with_null;
  assert_status(hk_session_new(&f->s, &f->opts, &f->st), &f->st, HK_INVALID_ARGUMENT, NULL);
  assert_null(f->s);
  f->opts.hooks = dup;
  assert_status(hk_session_new(&f->s, &f->opts, &f->st), &f->st, HK_INVALID_ARGUMENT, NULL);
  assert_null(f->s);
  assert_int_equal(f->a->calls[SPY_BEGIN], 0);
  assert_int_equal(f->b->calls[SPY_BEGIN], 0);
  assert_int_equal(fake_executor_sessions_opened(f->fx), 0);
}

static void test_session__h11_hook_serves_one_session(void **state)
{
  fixture *f = *state;
  hk_session *other = NULL;
  hk_hook *just_b[1];
  session_fixture_open(f);
  spy_hook_reset(f->b);
  just_b[0] = f->b->hook;
  f->opts.hooks = just_b;
  f->opts.nhooks = 1;
  assert_status(hk_session_new(&other, &f->opts, &f->st), &f->st, HK_INVALID_ARGUMENT, NULL);
  assert_null(other);
  assert_int_equal(f->b->calls[SPY_BEGIN], 0);

  /* Once the first session is freed, the hook may serve a new one; begin() runs again. */
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  hk_session_free(f->s);
  f->s = NULL;
  assert_ok(hk_session_new(&other, &f->opts, &f->st), &f->st);
  assert_int_equal(f->b->calls[SPY_BEGIN], 1);
  assert_ok(hk_session_close(other, HK_OK, &f->st), &f->st);
  hk_session_free(other);
}

static void test_session__h10_hook_vtable_version(void **state)
{
  fixture *f = *state;
  hk_hook_vtable vt = *spy_hook_vtable();
  hk_hook *h = (hk_hook *)&vt;
  (void)f;
  vt.version = 0;
  assert_status(hk_hook_new(&h, &vt, NULL, "v0", NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "vtable");
  assert_null(h);
  vt.version = HK_HOOK_VTABLE_VERSION + 1;
  assert_status(hk_hook_new(&h, &vt, NULL, "v2", NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "vtable");
  assert_status(hk_hook_new(&h, NULL, NULL, "x", NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, NULL);
}

/* ---- C1: NULL slots ----------------------------------------------------- */

static void test_session__c1_null_slots_are_noops(void **state)
{
  fixture *f = *state;
  static const hk_hook_vtable empty = { HK_HOOK_VTABLE_VERSION, NULL, NULL, NULL, NULL, NULL, NULL };
  hk_hook *h = NULL;
  hk_hook *list[2];
  hk_tensor res[1];
  hk_run_args args = { NULL, 0, &f->x, 1, &f->train, 1, NULL };
  assert_ok(hk_hook_new(&h, &empty, NULL, "empty", NULL, &f->st), &f->st);
  assert_string_equal(hk_hook_name(h), "empty");
  list[0] = h;
  list[1] = f->a->hook;
  f->opts.hooks = list;
  f->opts.nhooks = 2;
  session_fixture_open(f);
  assert_ok(hk_session_run(f->s, &args, res, NULL, &f->st), &f->st);
  assert_int_equal(*(int64_t *)res[0].data, 7);
  assert_int_equal(fake_executor_last_run(f->fx)->nfetches, 1);
  assert_int_equal(f->a->calls[SPY_AFTER_RUN], 1);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  hk_session_free(f->s);
  f->s = NULL;
  hk_hook_free(h);
}

/* ---- C2, C3, C4: construction ------------------------------------------ */

static hk_code check_not_finalized(spy_hook *spy, spy_slot slot, void *arg, hk_status *st)
{
  fixture *f = spy->action_user;
  (void)st;
  if (slot == SPY_BEGIN) {
    f->aux += fake_executor_finalized(f->fx) ? 100 : 1;
    f->aux += fake_executor_sessions_opened(f->fx) ? 1000 : 0;
    f->aux += arg == (void *)f->ex ? 0 : 10000;
  }
  return HK_OK;
}

static void test_session__c2_c3_c4_construction_order(void **state)
{
  fixture *f = *state;
  static const char *const expect[] = {
    "a.begin", "b.begin", "c.begin",
    "a.after_create_session", "b.after_create_session", "c.after_create_session",
  };
  f->a->action = f->b->action = f->c->action = check_not_finalized;
  assert_ok(hk_session_new(&f->s, &f->opts, &f->st), &f->st);
  assert_true(spy_log_equals(&f->log, expect, 6));
  /* C3: every begin ran before finalization and before any raw session, with the graph. */
  assert_int_equal(f->aux, 3);
  assert_true(fake_executor_finalized(f->fx));
  assert_true(hk_executor_is_finalized(f->ex));
  /* C4: after_create_session got an open raw session and the session's coordinator. */
  assert_non_null(f->a->created_session);
  assert_true(hk_raw_session_is_open(f->a->created_session));
  assert_ptr_equal(f->a->created_session, f->c->created_session);
  assert_ptr_equal(f->a->coord, hk_session_coordinator(f->s));
  assert_false(hk_coordinator_should_stop(f->a->coord));
  assert_int_equal(fake_executor_open_sessions(f->fx), 1);
  /* C23/C47: the default chief creator ran the default init op (GS initialized to 0). */
  assert_int_equal(fake_executor_get_i64(f->fx, NULL, f->gs), 0);
  assert_non_null(hk_session_scaffold(f->s));
  assert_true(hk_scaffold_is_finalized(hk_session_scaffold(f->s)));
}

static void test_session__c2_begin_failure(void **state)
{
  fixture *f = *state;
  spy_hook_fail(f->b, SPY_BEGIN, 1, 1, HK_NOT_FOUND, "b could not resolve loss:0");
  f->s = (hk_session *)f;
  assert_status(hk_session_new(&f->s, &f->opts, &f->st), &f->st, HK_NOT_FOUND, "b could not resolve loss:0");
  assert_null(f->s);
  assert_int_equal(f->a->calls[SPY_BEGIN], 1);
  assert_int_equal(f->b->calls[SPY_BEGIN], 1);
  assert_int_equal(f->c->calls[SPY_BEGIN], 0);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_OPEN), 0);
  assert_int_equal(f->a->calls[SPY_AFTER_CREATE] + f->a->calls[SPY_END], 0);
  assert_int_equal(f->c->calls[SPY_END], 0);
  /* The hooks are free again. */
  spy_hook_reset(f->a);
  session_fixture_open(f);
}

static void test_session__c3_mutation_after_finalize_fails(void **state)
{
  fixture *f = *state;
  hk_handle h = HK_NO_HANDLE;
  session_fixture_open(f);
  assert_status(hk_executor_role_add(f->ex, "init_op", f->train, &f->st), &f->st, HK_FAILED_PRECONDITION,
                "Graph is finalized and cannot be modified.");
  assert_status(hk_executor_default_op(f->ex, HK_DEFAULT_INIT_OP, &h, &f->st), &f->st,
                HK_FAILED_PRECONDITION, NULL);
}

static void test_session__c4_after_create_failure(void **state)
{
  fixture *f = *state;
  spy_hook_fail(f->b, SPY_AFTER_CREATE, 1, 1, HK_INTERNAL, "b after_create failed");
  assert_status(hk_session_new(&f->s, &f->opts, &f->st), &f->st, HK_INTERNAL, "b after_create failed");
  assert_null(f->s);
  assert_int_equal(f->a->calls[SPY_AFTER_CREATE], 1);
  assert_int_equal(f->b->calls[SPY_AFTER_CREATE], 1);
  assert_int_equal(f->c->calls[SPY_AFTER_CREATE], 0);
  /* The new raw session was closed and no end() ran. */
  assert_int_equal(fake_executor_open_sessions(f->fx), 0);
  assert_int_equal(f->a->calls[SPY_END] + f->b->calls[SPY_END] + f->c->calls[SPY_END], 0);
}

/* ---- H12, C5, C20 ------------------------------------------------------- */

static void test_session__h12_stop_from_after_create(void **state)
{
  fixture *f = *state;
  spy_hook_stop_at(f->b, SPY_AFTER_CREATE, 1, 1);
  session_fixture_open(f);
  assert_true(hk_session_should_stop(f->s));
  /* Hooks after the one that asked see the request; those before did not. */
  assert_false(f->a->stop_seen_in_after_create);
  assert_false(f->b->stop_seen_in_after_create);
  assert_true(f->c->stop_seen_in_after_create);
  assert_status(session_fixture_run_train(f), &f->st, HK_FAILED_PRECONDITION, "Run called even after should_stop requested.");
  assert_int_equal(f->a->calls[SPY_BEFORE_RUN], 0);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 0);
  /* A hook stop is not a coordinator stop. */
  assert_false(hk_coordinator_should_stop(hk_session_coordinator(f->s)));
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  assert_int_equal(f->c->calls[SPY_END], 1);
}

static void test_session__c5_c20_run_after_stop_refused(void **state)
{
  fixture *f = *state;
  session_fixture_open(f);
  spy_hook_stop_at(f->a, SPY_AFTER_RUN, 1, 1);
  assert_ok(session_fixture_run_train(f), &f->st);
  assert_true(hk_session_should_stop(f->s));
  spy_log_clear(&f->log);
  fake_executor_reset_calls(f->fx);
  assert_status(session_fixture_run_train(f), &f->st, HK_FAILED_PRECONDITION, "Run called even after should_stop requested.");
  assert_int_equal(f->log.n, 0);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 0);
  /* C20: sticky. */
  assert_true(hk_session_should_stop(f->s));
  assert_status(session_fixture_run_train(f), &f->st, HK_FAILED_PRECONDITION, "should_stop");
}

static void test_session__c5_c27_coordinator_stop_does_not_block_run(void **state)
{
  fixture *f = *state;
  session_fixture_open(f);
  hk_coordinator_request_stop(hk_session_coordinator(f->s), HK_OK, NULL);
  assert_true(hk_session_should_stop(f->s));
  assert_ok(session_fixture_run_train(f), &f->st);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 1);
  assert_int_equal(f->c->calls[SPY_AFTER_RUN], 1);
}

/* ---- C6, C7, C21 -------------------------------------------------------- */

static hk_code mark_executor_run(void *user, fake_executor *fx, const hk_run_args *args, hk_status *st)
{
  fixture *f = user;
  (void)fx;
  (void)args;
  (void)st;
  spy_log_add(&f->log, "executor.run", 0);
  return HK_OK;
}

static void test_session__c6_c7_c21_run_order_and_context(void **state)
{
  fixture *f = *state;
  static const char *const expect[] = {
    "a.before_run", "b.before_run", "c.before_run", "executor.run",
    "a.after_run", "b.after_run", "c.after_run",
  };
  hk_run_options opts = HK_RUN_OPTIONS_INIT;
  hk_run_args args = { NULL, 0, &f->x, 1, &f->train, 1, &opts };
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

static void test_session__c8_merged_fetches_each_hook_gets_its_own(void **state)
{
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
  spy_hook_target(f->b, extra);     /* b: targets only, no fetches */
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
    for (i = 0; i < r->ntargets; i++)
      saw_extra |= r->targets[i] == extra;
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

static void test_session__c9_two_hooks_feed_same_tensor(void **state)
{
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

static void test_session__c9_h13_conflict_list_order(void **state)
{
  fixture *f = *state;
  session_fixture_open(f);
  spy_hook_feed_i64(f->a, f->q, 1);
  spy_hook_feed_i64(f->a, f->p, 1);
  spy_hook_feed_i64(f->b, f->p, 2);
  spy_hook_feed_i64(f->b, f->q, 2);
  assert_status(session_fixture_run_train(f), &f->st, HK_INVALID_ARGUMENT, "Conflict(s): [q:0, p:0]");
}

static void test_session__c10_hook_and_user_feed_same_tensor(void **state)
{
  fixture *f = *state;
  int64_t v = 5;
  hk_feed feeds[1];
  hk_run_args args = { feeds, 1, NULL, 0, &f->train, 1, NULL };
  feeds[0].tensor = f->p;
  feeds[0].value = hk_tensor_scalar_i64(&v);
  session_fixture_open(f);
  spy_hook_feed_i64(f->b, f->p, 9);
  assert_status(hk_session_run(f->s, &args, NULL, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "Same tensor is fed by a SessionRunHook and user. Conflict(s): [p:0]");
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 0);
  assert_int_equal(f->a->calls[SPY_AFTER_RUN], 0);
}

static void test_session__c10_d10_feed_union_caller_untouched(void **state)
{
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

static void test_session__c10_only_caller_or_only_hook_feeds(void **state)
{
  fixture *f = *state;
  int64_t v = 3;
  hk_feed feeds[1];
  hk_run_args args = { feeds, 1, NULL, 0, NULL, 0, NULL };
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

static void test_session__h13_duplicate_in_one_list(void **state)
{
  fixture *f = *state;
  int64_t v = 3;
  hk_feed feeds[2];
  hk_run_args args = { feeds, 2, NULL, 0, NULL, 0, NULL };
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

static void test_session__c11_merged_options(void **state)
{
  fixture *f = *state;
  int marker = 0;
  hk_run_options opts = HK_RUN_OPTIONS_INIT, copy;
  hk_run_args args = { NULL, 0, NULL, 0, &f->train, 1, &opts };
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

static void test_session__c12_metadata(void **state)
{
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
    hk_run_args args = { NULL, 0, NULL, 0, &f->train, 1, NULL };
    assert_ok(hk_session_run(f->s, &args, NULL, &mine, &f->st), &f->st);
  }
  assert_ptr_equal(fake_executor_last_run(f->fx)->metadata, &mine);
  assert_ptr_equal(f->b->last_metadata, &mine);
  assert_ptr_equal(mine.executor_data, f->fx); /* filled by the executor */
}

/* ---- C13, C14 ----------------------------------------------------------- */

static void test_session__c13_executor_failure(void **state)
{
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

static void test_session__c14_before_run_failure(void **state)
{
  fixture *f = *state;
  session_fixture_open(f);
  spy_hook_fail(f->b, SPY_BEFORE_RUN, 1, 1, HK_PERMISSION_DENIED, "b refuses");
  assert_status(session_fixture_run_train(f), &f->st, HK_PERMISSION_DENIED, "b refuses");
  assert_int_equal(f->a->calls[SPY_BEFORE_RUN], 1);
  assert_int_equal(f->c->calls[SPY_BEFORE_RUN], 0);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 0);
  assert_int_equal(f->a->calls[SPY_AFTER_RUN], 0);
}

static void test_session__c14_after_run_failure(void **state)
{
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

/* ---- C15, C16, H16: end ------------------------------------------------- */

static void test_session__c15_end_on_clean_close(void **state)
{
  fixture *f = *state;
  static const char *const expect[] = { "a.end", "b.end", "c.end" };
  hk_raw_session *created;
  session_fixture_open(f);
  created = f->a->created_session;
  assert_ok(session_fixture_run_train(f), &f->st);
  spy_log_clear(&f->log);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  assert_true(spy_log_equals(&f->log, expect, 3));
  assert_ptr_equal(f->a->end_session, created);
  assert_ptr_equal(f->c->end_session, created);
  assert_int_equal(fake_executor_open_sessions(f->fx), 0);
}

static void test_session__c16_no_end_on_error_close(void **state)
{
  fixture *f = *state;
  session_fixture_open(f);
  assert_status(hk_session_close(f->s, HK_INTERNAL, &f->st), &f->st, HK_INTERNAL, NULL);
  assert_int_equal(f->a->calls[SPY_END] + f->b->calls[SPY_END] + f->c->calls[SPY_END], 0);
  assert_int_equal(fake_executor_open_sessions(f->fx), 0);
}

static void test_session__h16_end_failure(void **state)
{
  fixture *f = *state;
  session_fixture_open(f);
  spy_hook_fail(f->b, SPY_END, 1, 1, HK_UNKNOWN, "b end broke");
  assert_status(hk_session_close(f->s, HK_OK, &f->st), &f->st, HK_UNKNOWN, "b end broke");
  assert_int_equal(f->a->calls[SPY_END], 1);
  assert_int_equal(f->c->calls[SPY_END], 0);
  /* close() still completed its remaining steps (C29) and the session is closed (C32). */
  assert_int_equal(fake_executor_open_sessions(f->fx), 0);
  assert_true(hk_coordinator_should_stop(hk_session_coordinator(f->s)));
  assert_true(hk_session_should_stop(f->s));
  assert_null(hk_session_graph(f->s));
  assert_null(hk_session_raw_session(f->s));
  assert_status(session_fixture_run_train(f), &f->st, HK_FAILED_PRECONDITION, "Session is closed.");
}

/* An end() that recovered from an error of its own: the status still says
 * it, the code is OK. */
static hk_code end_ok_with_status_filled(spy_hook *spy, spy_slot slot, void *arg, hk_status *status)
{
  (void)spy;
  (void)arg;
  if (slot == SPY_END) hk_status_set(status, HK_ALREADY_EXISTS, "create x: File exists (retried under another name)");
  return HK_OK;
}

/* H1, H16: what counts is the code an end() returns. One that returns OK
 * with its status still filled is a success: close returns OK and the
 * later hooks' end() runs. */
static void test_session__h1_end_returning_ok_with_a_filled_status_is_ok(void **state)
{
  fixture *f = *state;
  session_fixture_open(f);
  f->b->action = end_ok_with_status_filled;
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  assert_int_equal(f->st.code, HK_OK);
  assert_string_equal(f->st.message, "");
  assert_int_equal(f->c->calls[SPY_END], 1);
}

/* ---- C18, C19, C20: run context stop ------------------------------------ */

static void test_session__c18_c19_stop_in_before_run(void **state)
{
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

static void test_session__c19_stop_in_after_run_seen_by_later_hooks(void **state)
{
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

/* ---- C25, C26, C46 ------------------------------------------------------- */

static void test_session__c25_c46_accessors(void **state)
{
  fixture *f = *state;
  session_fixture_open(f);
  assert_ptr_equal(hk_session_graph(f->s), f->ex);
  if (f->opts.kind == HK_SESSION_SINGULAR) {
    hk_raw_session *rs = hk_session_raw_session(f->s);
    assert_non_null(rs);
    assert_ptr_equal(rs, f->a->created_session);
    /* C17: a direct raw-session run triggers no hooks. */
    {
      hk_run_args args = { NULL, 0, NULL, 0, &f->train, 1, NULL };
      assert_ok(hk_raw_session_run(rs, &args, NULL, NULL, &f->st), &f->st);
      assert_int_equal(f->a->calls[SPY_BEFORE_RUN], 0);
    }
  } else {
    assert_null(hk_session_raw_session(f->s));
  }
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  assert_null(hk_session_raw_session(f->s));
  assert_null(hk_session_graph(f->s));
  assert_non_null(hk_session_coordinator(f->s)); /* H17: valid until free */
}

static void test_session__c26_should_stop(void **state)
{
  fixture *f = *state;
  session_fixture_open(f);
  assert_false(hk_session_should_stop(f->s));
  assert_ok(session_fixture_run_train(f), &f->st);
  assert_false(hk_session_should_stop(f->s));
  hk_coordinator_request_stop(hk_session_coordinator(f->s), HK_OK, NULL);
  assert_true(hk_session_should_stop(f->s));
}

static void test_session__c26_should_stop_after_close(void **state)
{
  fixture *f = *state;
  session_fixture_open(f);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  assert_true(hk_session_should_stop(f->s));
}

/* ---- C27, D11, C28 ------------------------------------------------------ */

static void test_session__c27_d11_coordinator_error(void **state)
{
  fixture *f = *state;
  session_fixture_open(f);
  hk_coordinator_request_stop(hk_session_coordinator(f->s), HK_INTERNAL, "reader thread died");
  assert_ok(session_fixture_run_train(f), &f->st);  /* run still executes */
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 1);
  assert_true(hk_session_should_stop(f->s));
  /* A later error is ignored: the first one wins. */
  hk_coordinator_request_stop(hk_session_coordinator(f->s), HK_DATA_LOSS, "second");
  assert_status(hk_session_close(f->s, HK_OK, &f->st), &f->st, HK_INTERNAL, "reader thread died");
}

static void test_session__c28_substitution_singular(void **state)
{
  fixture *f = *state;
  session_fixture_open(f);
  /* A non-preemption run error is replaced by a recorded preemption error. */
  hk_coordinator_request_stop(hk_session_coordinator(f->s), HK_ABORTED, "worker 3 preempted");
  fake_executor_fail(f->fx, FAKE_RUN, 1, 1, HK_INTERNAL, "lost connection");
  assert_status(session_fixture_run_train(f), &f->st, HK_ABORTED, "worker 3 preempted");
  /* A preemption run error is returned unchanged. */
  fake_executor_fail(f->fx, FAKE_RUN, 1, 1, HK_UNAVAILABLE, "ps unreachable");
  assert_status(session_fixture_run_train(f), &f->st, HK_UNAVAILABLE, "ps unreachable");
  /* C24: SMS never recovers. */
  assert_int_equal(fake_executor_sessions_opened(f->fx), 1);
  /* D11: close returns the recorded error (SMS: any code). */
  assert_status(hk_session_close(f->s, HK_OK, &f->st), &f->st, HK_ABORTED, "worker 3 preempted");
}

static void test_session__c28_non_preemption_recorded_not_substituted(void **state)
{
  fixture *f = *state;
  session_fixture_open(f);
  hk_coordinator_request_stop(hk_session_coordinator(f->s), HK_INTERNAL, "recorded");
  fake_executor_fail(f->fx, FAKE_RUN, 1, 1, HK_UNKNOWN, "run failed");
  assert_status(session_fixture_run_train(f), &f->st, HK_UNKNOWN, "run failed");
}

/* ---- C29, C30, C31, C32 ------------------------------------------------- */

static hk_code check_close_order(spy_hook *spy, spy_slot slot, void *arg, hk_status *st)
{
  fixture *f = spy->action_user;
  (void)st;
  if (slot == SPY_END) {
    /* end() runs before the coordinator stop and before the raw session closes. */
    if (!hk_coordinator_should_stop(hk_session_coordinator(f->s)) && hk_raw_session_is_open(arg))
      f->aux++;
  }
  return HK_OK;
}

static void test_session__c29_close_order(void **state)
{
  fixture *f = *state;
  hk_coordinator *coord;
  session_fixture_open(f);
  f->a->action = f->c->action = check_close_order;
  coord = hk_session_coordinator(f->s);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  assert_int_equal(f->aux, 2);
  assert_true(hk_coordinator_should_stop(coord));
  assert_true(hk_coordinator_clean_stop_requested(coord));
  assert_int_equal(fake_executor_open_sessions(f->fx), 0);
}

static void test_session__c29_c30_stuck_thread(void **state)
{
  fixture *f = *state;
  hk_coordinator_thread *tok = NULL;
  double before;
  f->opts.stop_grace_period_secs = 5;
  session_fixture_open(f);
  assert_ok(hk_coordinator_register_thread(hk_session_coordinator(f->s), "reader-7", &tok, &f->st), &f->st);
  before = test_clock_now(&f->te->clock);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  assert_logged(f->te, HK_LOG_WARNING, "Coordinator stopped with threads still running:");
  assert_logged(f->te, HK_LOG_WARNING, "reader-7");
  /* Gave up after about the grace period (mock time). */
  assert_true(test_clock_now(&f->te->clock) - before >= 5.0 - 0.2);
  assert_true(test_clock_now(&f->te->clock) - before <= 5.0 + 1.0);
  hk_coordinator_thread_done(tok);
}

static void test_session__c30_finished_threads_no_wait(void **state)
{
  fixture *f = *state;
  hk_coordinator_thread *tok = NULL;
  double before;
  f->opts.stop_grace_period_secs = 100;
  session_fixture_open(f);
  assert_ok(hk_coordinator_register_thread(hk_session_coordinator(f->s), "done-thread", &tok, &f->st), &f->st);
  hk_coordinator_thread_done(tok);
  before = test_clock_now(&f->te->clock);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  assert_true(test_clock_now(&f->te->clock) - before < 1.0);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, "threads still running"), 0);
}

static void test_session__c31_raw_close_errors_logged(void **state)
{
  fixture *f = *state;
  session_fixture_open(f);
  fake_executor_fail(f->fx, FAKE_CLOSE, 1, 1, HK_UNAVAILABLE, "ps gone");
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  assert_logged(f->te, HK_LOG_WARNING, "An error occurred when attempting to close the session.");
  assert_logged(f->te, HK_LOG_WARNING, "ps gone");
}

static void test_session__c31_raw_close_other_error_logged_at_error(void **state)
{
  fixture *f = *state;
  session_fixture_open(f);
  fake_executor_fail(f->fx, FAKE_CLOSE, 1, 1, HK_INTERNAL, "close exploded");
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  assert_logged(f->te, HK_LOG_ERROR, "close exploded");
}

/* ---- H15: close status -------------------------------------------------- */

static void test_session__h15_out_of_range_is_clean(void **state)
{
  fixture *f = *state;
  session_fixture_open(f);
  assert_ok(hk_session_close(f->s, HK_OUT_OF_RANGE, &f->st), &f->st);
  assert_int_equal(f->c->calls[SPY_END], 1);
}

static void test_session__h15_cancelled_without_stop_not_clean(void **state)
{
  fixture *f = *state;
  session_fixture_open(f);
  assert_status(hk_session_close(f->s, HK_CANCELLED, &f->st), &f->st, HK_CANCELLED, NULL);
  assert_int_equal(f->a->calls[SPY_END], 0);
}

static void test_session__h15_cancelled_after_clean_stop_is_clean(void **state)
{
  fixture *f = *state;
  session_fixture_open(f);
  hk_coordinator_request_stop(hk_session_coordinator(f->s), HK_OK, NULL);
  assert_ok(hk_session_close(f->s, HK_CANCELLED, &f->st), &f->st);
  assert_int_equal(f->a->calls[SPY_END], 1);
}

static void test_session__h15_cancelled_after_hook_stop_not_clean(void **state)
{
  fixture *f = *state;
  /* Only a coordinator clean stop (or the signal helper) makes CANCELLED clean. */
  spy_hook_stop_at(f->a, SPY_AFTER_CREATE, 1, 1);
  session_fixture_open(f);
  assert_status(hk_session_close(f->s, HK_CANCELLED, &f->st), &f->st, HK_CANCELLED, NULL);
  assert_int_equal(f->a->calls[SPY_END], 0);
}

static void test_session__h15_unknown_code_not_clean(void **state)
{
  fixture *f = *state;
  session_fixture_open(f);
  assert_int_equal(hk_session_close(f->s, (hk_code)77, &f->st), 77);
  assert_int_equal(f->st.code, 77);
  assert_int_equal(f->b->calls[SPY_END], 0);
}

static void test_session__h15_coordinator_error_beats_end_error(void **state)
{
  fixture *f = *state;
  session_fixture_open(f);
  hk_coordinator_request_stop(hk_session_coordinator(f->s), HK_INTERNAL, "coordinator error");
  spy_hook_fail(f->a, SPY_END, 1, 1, HK_DATA_LOSS, "end error");
  assert_status(hk_session_close(f->s, HK_OK, &f->st), &f->st, HK_INTERNAL, "coordinator error");
  assert_int_equal(f->a->calls[SPY_END], 1);
  /* Errors not returned are logged at ERROR. */
  assert_logged(f->te, HK_LOG_ERROR, "end error");
}

static void test_session__h15_ms_recorded_preemption_not_returned(void **state)
{
  fixture *f = *state;
  session_fixture_open(f);
  hk_coordinator_request_stop(hk_session_coordinator(f->s), HK_ABORTED, "preempted ps");
  if (f->opts.kind == HK_SESSION_MONITORED) {
    assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
    assert_logged(f->te, HK_LOG_WARNING, "preempted ps");
  } else {
    assert_status(hk_session_close(f->s, HK_OK, &f->st), &f->st, HK_ABORTED, "preempted ps");
  }
}

/* ---- C35, C37, D7 ------------------------------------------------------- */

static void test_session__c35_out_of_range_from_run(void **state)
{
  fixture *f = *state;
  session_fixture_open(f);
  fake_executor_fail(f->fx, FAKE_RUN, 1, 1, HK_OUT_OF_RANGE, "End of sequence");
  assert_status(session_fixture_run_train(f), &f->st, HK_OUT_OF_RANGE, "End of sequence");
  assert_int_equal(f->a->calls[SPY_AFTER_RUN], 0); /* C16 */
  assert_false(hk_session_should_stop(f->s));
  assert_int_equal(fake_executor_sessions_opened(f->fx), 1); /* not a preemption: no recovery */
  assert_ok(hk_session_close(f->s, HK_OUT_OF_RANGE, &f->st), &f->st);
  assert_int_equal(f->c->calls[SPY_END], 1);
}

static hk_code step_noop(hk_step_context *ctx, void *user, hk_status *st)
{
  (void)ctx;
  (void)user;
  (void)st;
  return HK_OK;
}

static void test_session__c37_d7_after_close(void **state)
{
  fixture *f = *state;
  session_fixture_open(f);
  spy_hook_fail(f->a, SPY_END, 1, 1, HK_INTERNAL, "first close fails");
  assert_status(hk_session_close(f->s, HK_OK, &f->st), &f->st, HK_INTERNAL, "first close fails");
  assert_status(session_fixture_run_train(f), &f->st, HK_FAILED_PRECONDITION, "Session is closed.");
  assert_status(hk_session_run_step_fn(f->s, step_noop, NULL, &f->st), &f->st, HK_FAILED_PRECONDITION,
                "Session is closed.");
  assert_true(hk_session_should_stop(f->s));
  test_log_clear(&f->te->log);
  spy_log_clear(&f->log);
  /* D7: later closes do nothing and return OK whatever they are given. */
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  assert_ok(hk_session_close(f->s, HK_INTERNAL, &f->st), &f->st);
  assert_int_equal(f->log.n, 0);
  assert_int_equal(f->a->calls[SPY_END], 1);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, NULL) + test_log_count(&f->te->log, HK_LOG_WARNING, NULL)
                   + test_log_count(&f->te->log, HK_LOG_ERROR, NULL), 0);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_CLOSE), 1);
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

static hk_code step_body(hk_step_context *ctx, void *user, hk_status *st)
{
  step_data *d = user;
  fixture *f = d->f;
  hk_tensor res[1];
  hk_run_args args = { NULL, 0, &f->x, 1, &f->train, 1, NULL };
  hk_raw_session *rs = hk_step_context_session(ctx);
  hk_code rc;
  d->calls++;
  if (rs == NULL)
    return hk_status_set(st, HK_INTERNAL, "no raw session in step context");
  /* C17: the raw session triggers no hooks. */
  rc = hk_raw_session_run(rs, &args, res, NULL, st);
  if (rc != HK_OK)
    return rc;
  rc = hk_step_context_run_with_hooks(ctx, &args, res, NULL, st);
  if (rc != HK_OK)
    return rc;
  rc = hk_step_context_run_with_hooks(ctx, &args, res, NULL, st);
  if (rc != HK_OK)
    return rc;
  d->fetched = *(int64_t *)res[0].data;
  if (d->request_stop) {
    rc = hk_step_context_request_stop(ctx, st);
    d->after_stop_rc = hk_step_context_run_with_hooks(ctx, &args, res, NULL, &d->after_stop_st);
    if (d->ret != HK_OK)
      return hk_status_set(st, d->ret, "step_fn's own error");
    return d->request_stop == 2 ? HK_OK : rc;
  }
  if (d->ret != HK_OK)
    return hk_status_set(st, d->ret, "step_fn's own error");
  return HK_OK;
}

static void test_session__c42_null_step_fn(void **state)
{
  fixture *f = *state;
  session_fixture_open(f);
  assert_status(hk_session_run_step_fn(f->s, NULL, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "step_fn");
}

static void test_session__c43_step_fn(void **state)
{
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

static void test_session__c44_request_stop(void **state)
{
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

static hk_code step_two_runs(hk_step_context *ctx, void *user, hk_status *st)
{
  fixture *f = user;
  hk_run_args args = { NULL, 0, NULL, 0, &f->train, 1, NULL };
  hk_code rc = hk_step_context_run_with_hooks(ctx, &args, NULL, NULL, st);
  if (rc != HK_OK)
    return rc;
  return hk_step_context_run_with_hooks(ctx, &args, NULL, NULL, st);
}

static void test_session__c5_run_with_hooks_after_hook_stop(void **state)
{
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

/* ---- H17: stop from another thread ------------------------------------- */

typedef struct stopper {
  hk_coordinator *coord;
  hk_code code;
} stopper;

static void *stopper_main(void *arg)
{
  stopper *sp = arg;
  hk_coordinator_request_stop(sp->coord, sp->code, sp->code == HK_OK ? NULL : "stopped from a thread");
  return NULL;
}

static void test_session__h17_stop_from_another_thread(void **state)
{
  fixture *f = *state;
  pthread_t th;
  stopper sp;
  session_fixture_open(f);
  sp.coord = hk_session_coordinator(f->s);
  sp.code = HK_OK;
  assert_int_equal(pthread_create(&th, NULL, stopper_main, &sp), 0);
  assert_int_equal(pthread_join(th, NULL), 0);
  assert_true(hk_session_should_stop(f->s));
  assert_ok(hk_session_close(f->s, HK_CANCELLED, &f->st), &f->st); /* clean after a clean stop */
  assert_int_equal(f->a->calls[SPY_END], 1);
}

static void test_session__h17_error_from_another_thread(void **state)
{
  fixture *f = *state;
  pthread_t th;
  stopper sp;
  session_fixture_open(f);
  sp.coord = hk_session_coordinator(f->s);
  sp.code = HK_INTERNAL;
  assert_int_equal(pthread_create(&th, NULL, stopper_main, &sp), 0);
  assert_int_equal(pthread_join(th, NULL), 0);
  assert_true(hk_session_should_stop(f->s));
  assert_status(hk_session_close(f->s, HK_OK, &f->st), &f->st, HK_INTERNAL, "stopped from a thread");
}

/* ---- H19: re-entrancy --------------------------------------------------- */

static hk_code reenter(spy_hook *spy, spy_slot slot, void *arg, hk_status *st)
{
  fixture *f = spy->action_user;
  (void)arg;
  (void)st;
  if (slot != SPY_AFTER_RUN && slot != SPY_BEFORE_RUN)
    return HK_OK;
  f->aux_rc = session_fixture_run_train(f);
  f->aux_st = f->st;
  f->aux += hk_session_should_stop(f->s) ? 100 : 1; /* allowed anywhere */
  if (hk_session_run_step_fn(f->s, step_noop, NULL, &f->st) == HK_FAILED_PRECONDITION)
    f->aux += 10;
  if (hk_session_close(f->s, HK_OK, &f->st) == HK_FAILED_PRECONDITION)
    f->aux += 1000;
  return HK_OK;
}

static void test_session__h19_reentrant_calls_refused(void **state)
{
  fixture *f = *state;
  session_fixture_open(f);
  f->b->action = reenter;
  assert_ok(session_fixture_run_train(f), &f->st);
  assert_true(test_status_is(f->aux_rc, &f->aux_st, HK_FAILED_PRECONDITION,
                             "session is busy: called from a hook callback"));
  /* before_run and after_run each: should_stop false (1), step_fn refused (10), close refused (1000). */
  assert_int_equal(f->aux, 2 * 1011);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 1);
  f->b->action = NULL;
  /* The session is still open and usable. */
  assert_ok(session_fixture_run_train(f), &f->st);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  assert_int_equal(f->b->calls[SPY_END], 1);
}

/* ---- H20: free without close -------------------------------------------- */

static void test_session__h20_free_without_close(void **state)
{
  fixture *f = *state;
  session_fixture_open(f);
  hk_session_free(f->s);
  f->s = NULL;
  assert_logged(f->te, HK_LOG_WARNING, "session destroyed without close");
  /* close(CANCELLED) without a clean stop: not clean, no end(). */
  assert_int_equal(f->a->calls[SPY_END], 0);
  assert_int_equal(fake_executor_open_sessions(f->fx), 0);
  /* The hooks are detached, not freed. */
  assert_int_equal(f->a->calls[SPY_DESTROY], 0);
}

static void test_session__h20_free_after_clean_stop_runs_end(void **state)
{
  fixture *f = *state;
  session_fixture_open(f);
  hk_coordinator_request_stop(hk_session_coordinator(f->s), HK_OK, NULL);
  hk_session_free(f->s);
  f->s = NULL;
  assert_logged(f->te, HK_LOG_WARNING, "session destroyed without close");
  assert_int_equal(f->a->calls[SPY_END], 1);
  assert_int_equal(f->c->calls[SPY_END], 1);
}

static void test_session__hook_destroy_once(void **state)
{
  fixture *f = *state;
  session_fixture_open(f);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  hk_session_free(f->s);
  f->s = NULL;
  assert_int_equal(f->a->calls[SPY_DESTROY], 0);
  spy_hook_release(f->a);
  assert_int_equal(f->a->calls[SPY_DESTROY], 1);
  spy_hook_release(f->a);
  assert_int_equal(f->a->calls[SPY_DESTROY], 1);
}

/* ---- C48, C73, H24: the worker creator ---------------------------------- */

/* A worker fixture: no variables at all (a worker never initializes globals),
 * and a scripted ready op. */
typedef struct worker {
  fixture *f;
  hk_scaffold *scaffold;
  hk_handle ready;
  int raise_at;
  int runs;
} worker;

static void worker_setup(fixture *f, worker *w, int not_ready_times)
{
  static const char *const names[] = { "w", "b" };
  hk_scaffold_options so;
  memset(w, 0, sizeof(*w));
  w->f = f;
  w->ready = fake_executor_add_report(f->fx, "worker_ready", FAKE_REPORT_ALL);
  fake_executor_script_report(f->fx, w->ready, names, 2, not_ready_times);
  hk_scaffold_options_init(&so, HK_SCAFFOLD_OPTIONS_VERSION);
  so.env = &f->te->env;
  so.ready_op = w->ready;
  assert_ok(hk_scaffold_new(&w->scaffold, &so, &f->st), &f->st);
  f->opts.scaffold = w->scaffold;
  f->opts.is_chief = 0;
  f->opts.recovery_wait_secs = 30;
}

static void test_session__c48_c73_worker_waits_until_ready(void **state)
{
  fixture *f = *state;
  worker w;
  fake_executor *plain = fake_executor_new(&f->te->env);
  /* Use an executor without variables for the worker. */
  fake_executor *keep = f->fx;
  f->fx = plain;
  f->ex = fake_executor_executor(plain);
  f->opts.executor = f->ex;
  worker_setup(f, &w, 3);
  assert_ok(hk_session_new(&f->s, &f->opts, &f->st), &f->st);
  /* Not ready for the first 3 checks: 3 waits of recovery_wait_secs, 4 sessions. */
  assert_int_equal(fake_executor_report_evals(f->fx, w.ready), 4);
  assert_int_equal(fake_executor_sessions_opened(f->fx), 4);
  assert_int_equal(fake_executor_open_sessions(f->fx), 1);
  assert_true(test_clock_total_slept(&f->te->clock) >= 90.0 - 1e-9);
  assert_true(test_clock_total_slept(&f->te->clock) <= 90.0 + 1e-9);
  assert_logged(f->te, HK_LOG_INFO, "Waiting for model to be ready.");
  assert_logged(f->te, HK_LOG_INFO, "Variables not initialized: w, b");
  assert_int_equal(f->a->calls[SPY_AFTER_CREATE], 1);
  /* C48: a worker never runs an init op (the default one was never built or run). */
  {
    hk_handle init = fake_executor_default_handle(f->fx, HK_DEFAULT_INIT_OP);
    assert_true(init == HK_NO_HANDLE || fake_executor_op_runs(f->fx, init) == 0);
  }
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  hk_session_free(f->s);
  f->s = NULL;
  hk_scaffold_free(w.scaffold);
  fake_executor_free(plain);
  f->fx = keep;
}

static void test_session__c73_worker_deadline(void **state)
{
  fixture *f = *state;
  worker w;
  fake_executor *plain = fake_executor_new(&f->te->env);
  fake_executor *keep = f->fx;
  f->fx = plain;
  f->ex = fake_executor_executor(plain);
  f->opts.executor = f->ex;
  worker_setup(f, &w, FAKE_FOREVER);
  f->opts.max_wait_secs = 100;
  assert_status(hk_session_new(&f->s, &f->opts, &f->st), &f->st, HK_DEADLINE_EXCEEDED,
                "Session was not ready after waiting 100 secs.");
  assert_null(f->s);
  assert_int_equal(f->a->calls[SPY_BEGIN], 1);
  assert_int_equal(f->a->calls[SPY_AFTER_CREATE], 0);
  assert_int_equal(f->a->calls[SPY_END], 0);
  assert_int_equal(fake_executor_open_sessions(f->fx), 0);
  /* It never waited beyond max_wait_secs. */
  assert_true(test_clock_total_slept(&f->te->clock) <= 100.0);
  hk_scaffold_free(w.scaffold);
  fake_executor_free(plain);
  f->fx = keep;
}

static hk_code raise_on_ready_check(void *user, fake_executor *fx, const hk_run_args *args, hk_status *st)
{
  worker *w = user;
  (void)fx;
  (void)st;
  if (args->nfetches == 1 && args->fetches[0] == w->ready && ++w->runs == w->raise_at)
    raise(SIGINT);
  return HK_OK;
}

static void test_session__h24_worker_wait_cancelled_by_signal(void **state)
{
  fixture *f = *state;
  worker w;
  fake_executor *plain = fake_executor_new(&f->te->env);
  fake_executor *keep = f->fx;
  hk_status ist = HK_STATUS_INIT;
  f->fx = plain;
  f->ex = fake_executor_executor(plain);
  f->opts.executor = f->ex;
  worker_setup(f, &w, FAKE_FOREVER);
  f->opts.max_wait_secs = HK_UNSET_SECS;
  w.raise_at = 2;
  fake_executor_on_run(plain, raise_on_ready_check, &w);
  assert_ok(hk_signal_install(&ist), &ist);
  assert_status(hk_session_new(&f->s, &f->opts, &f->st), &f->st, HK_CANCELLED, "wait cancelled: stop requested");
  assert_ok(hk_signal_uninstall(&ist), &ist);
  assert_null(f->s);
  assert_int_equal(w.runs, 2);
  assert_int_equal(f->a->calls[SPY_END], 0);
  assert_int_equal(fake_executor_open_sessions(f->fx), 0);
  hk_scaffold_free(w.scaffold);
  fake_executor_free(plain);
  f->fx = keep;
}

/* ---- D12: the signal helper is a clean stop ------------------------------ */

static void test_session__d12_signal_is_clean_stop(void **state)
{
  fixture *f = *state;
  hk_status ist = HK_STATUS_INIT;
  session_fixture_open(f);
  assert_ok(hk_signal_install(&ist), &ist);
  assert_false(hk_session_should_stop(f->s));
  raise(SIGTERM);
  assert_true(hk_signal_fired() != 0);
  assert_true(hk_session_should_stop(f->s));
  /* A step in progress (or a new one) still runs: only hook stops block run(). */
  assert_ok(session_fixture_run_train(f), &f->st);
  /* H15: CANCELLED after the signal is clean, so end() runs. */
  assert_ok(hk_session_close(f->s, HK_CANCELLED, &f->st), &f->st);
  assert_int_equal(f->a->calls[SPY_END], 1);
  assert_ok(hk_signal_uninstall(&ist), &ist);
  assert_int_equal(hk_signal_fired(), 0);
}

/* ---- options ------------------------------------------------------------- */

static void test_session__options_init_defaults(void **state)
{
  fixture *f = *state;
  hk_session_options o;
  (void)f;
  assert_int_equal(hk_session_options_init(NULL, HK_SESSION_OPTIONS_VERSION), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_session_options_init(&o, 0), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_session_options_init(&o, HK_SESSION_OPTIONS_VERSION + 1), HK_INVALID_ARGUMENT);
  memset(&o, 0x5c, sizeof(o));
  assert_int_equal(hk_session_options_init(&o, HK_SESSION_OPTIONS_VERSION), HK_OK);
  assert_int_equal(o.version, HK_SESSION_OPTIONS_VERSION);
  assert_int_equal(o.kind, HK_SESSION_MONITORED);
  assert_null(o.executor);
  assert_null(o.hooks);
  assert_int_equal(o.nhooks, 0);
  assert_int_equal(o.is_chief, 1);
  assert_null(o.creator);
  assert_null(o.scaffold);
  assert_true(o.stop_grace_period_secs == 120.0);  /* C24 */
  assert_true(o.max_wait_secs == 1800.0);          /* C48 */
  assert_true(o.recovery_wait_secs == 30.0);
  assert_true(o.recovery_initial_delay_secs == 1.0); /* D2.1 */
  assert_true(o.recovery_max_delay_secs == 60.0);
  assert_int_equal(o.recovery_max_attempts, 10);
  assert_true(o.recovery_max_secs == 0.0);
}

/* ---- split runs (hk_session_run_begin / run_end / run_abandon) -------- */

/* C7 across the split: every before_run at begin, the caller's own work in
 * between, then one executor run and every after_run at end; the caller's
 * fetches come back from end. */
static void test_session__c7_split_run_brackets_the_callers_work(void **state)
{
  fixture *f = *state;
  static const char *const expect[] = {
    "a.before_run", "b.before_run", "c.before_run", "caller.work", "executor.run",
    "a.after_run", "b.after_run", "c.after_run",
  };
  hk_run_args args = { NULL, 0, &f->x, 1, &f->train, 1, NULL };
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
static void test_session__split_run_misuse(void **state)
{
  fixture *f = *state;
  hk_run_args args = { NULL, 0, &f->x, 1, &f->train, 1, NULL };
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
  assert_false(hk_session_should_stop(f->s)); /* the abandoned run's stop request is dropped */
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
static void test_session__split_run_end_failure_and_stop(void **state)
{
  fixture *f = *state;
  hk_run_args args = { NULL, 0, &f->x, 1, &f->train, 1, NULL };
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
static hk_code copy_spans(spy_hook *spy, spy_slot slot, void *arg, hk_status *st)
{
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
static void test_session__h41_traced_run_spans(void **state)
{
  fixture *f = *state;
  span_probe probe;
  hk_run_args args = { NULL, 0, NULL, 0, &f->train, 1, NULL };
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
    { "b", "before_run" }, { "c", "before_run" }, { "executor", "run" }, { "a", "after_run" },
    { "b", "after_run" }, { "c", "after_run" }, { "session", "session.run" },
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

/* ---- init_fn failures through the session (H1, C59, D2.3, C39) ---------- */

/* Create f->scaffold from *so on the fixture's env and register it in the session options. */
static void use_scaffold(fixture *f, hk_scaffold_options *so)
{
  so->env = &f->te->env;
  assert_ok(hk_scaffold_new(&f->scaffold, so, &f->st), &f->st);
  f->opts.scaffold = f->scaffold;
}

/* An init_fn that fails without writing its status. */
static hk_code init_fn_silent_failure(void *user, const hk_scaffold *scaffold, hk_raw_session *session,
                                      hk_status *status)
{
  int *calls = user;
  (void)scaffold;
  (void)session;
  (void)status;
  (*calls)++;
  return HK_INTERNAL;
}

static hk_code init_fn_silent_preemption(void *user, const hk_scaffold *scaffold, hk_raw_session *session,
                                         hk_status *status)
{
  int *calls = user;
  (void)scaffold;
  (void)session;
  (void)status;
  (*calls)++;
  return HK_UNAVAILABLE;
}

/*
 * H1 + C59/C66 through the session constructor: an init_fn that fails
 * without writing its status makes hk_session_new return its code with a
 * non-empty message (init_fn's result is normalized like the hooks', the
 * creator's and step_fn's).
 */
static void test_session__h1_c59_silent_init_fn_failure_has_a_message(void **state)
{
  fixture *f = *state;
  hk_scaffold_options so = HK_SCAFFOLD_OPTIONS_INIT;
  int calls = 0;
  so.init_fn = init_fn_silent_failure;
  so.init_fn_user = &calls;
  use_scaffold(f, &so);
  assert_int_equal(hk_session_new(&f->s, &f->opts, &f->st), HK_INTERNAL);
  assert_null(f->s);
  assert_int_equal(calls, 1);
  assert_int_equal(f->st.code, HK_INTERNAL);
  assert_true(f->st.message[0] != '\0');
}

/*
 * D2.3, C39, H1: a preemption error from init_fn is retried; giving up
 * returns the last preemption error (same code) with " (gave up after %d
 * recovery attempts)". recover() takes the code from the callback's return
 * value, so a silent init_fn still makes hk_session_new fail with
 * UNAVAILABLE (never a session in the failed state whose failure code is
 * OK).
 */
static void test_session__d2_c39_silent_init_fn_preemption_gives_up(void **state)
{
  fixture *f = *state;
  hk_scaffold_options so = HK_SCAFFOLD_OPTIONS_INIT;
  int calls = 0;
  hk_code rc;
  so.init_fn = init_fn_silent_preemption;
  so.init_fn_user = &calls;
  use_scaffold(f, &so);
  f->opts.recovery_max_attempts = 2;
  rc = hk_session_new(&f->s, &f->opts, &f->st);
  /* One creation plus two recovery attempts. */
  assert_int_equal(calls, 3);
  if (rc == HK_OK) {
    /* Show what the caller got: a "session" whose run() does nothing and says OK. */
    hk_code run_rc = session_fixture_run_train(f);
    fprintf(stderr, "hk_session_new returned OK after giving up; run() returned %s, train op ran %d times\n",
            hk_code_name(run_rc), fake_executor_op_runs(f->fx, f->train));
  }
  assert_int_equal(rc, HK_UNAVAILABLE);
  assert_null(f->s);
  assert_int_equal(f->st.code, HK_UNAVAILABLE);
  assert_non_null(strstr(f->st.message, "(gave up after 2 recovery attempts)"));
}

/* ---- C29, H15: an error reported while close() joins the threads -------- */

/* A coordinator thread that, once asked to stop, fails while shutting down. */
static void failing_on_stop_thread(void *user, hk_coordinator *c)
{
  (void)user;
  while (!hk_coordinator_should_stop(c))
    test_sleep_real_ms(1);
  hk_coordinator_request_stop(c, HK_INTERNAL, "worker thread failed while stopping");
}

static hk_code start_failing_thread(spy_hook *spy, spy_slot slot, void *arg, hk_status *st)
{
  (void)arg;
  if (slot != SPY_AFTER_CREATE)
    return HK_OK;
  return hk_coordinator_start_thread(spy->coord, "failing_on_stop", failing_on_stop_thread, NULL, st);
}

/*
 * C29 + H15(1) + D11: close() requests a clean stop, joins the registered
 * threads, and returns the coordinator's recorded error. close() reads the
 * recorded error after the stop request and the join, so an error a thread
 * reports while it is being stopped (TF's coord.join re-raises it) is
 * returned.
 */
static void test_session__c29_h15_error_reported_during_join_is_returned(void **state)
{
  fixture *f = *state;
  hk_code rc;
  f->a->action = start_failing_thread;
  session_fixture_open(f);
  assert_ok(session_fixture_run_train(f), &f->st);
  assert_false(hk_session_should_stop(f->s));
  rc = hk_session_close(f->s, HK_OK, &f->st);
  /* The error was recorded before close() returned. */
  assert_int_equal(hk_coordinator_error(hk_session_coordinator(f->s), NULL), HK_INTERNAL);
  assert_status(rc, &f->st, HK_INTERNAL, "worker thread failed while stopping");
}

/* ---- H3, C65: Scaffold options refused before any side effect ----------- */

/*
 * H3 (and the hk_session_new header: "Every option is validated before any
 * side effect: on an option error no hook runs"): a Scaffold option that is
 * already bound to another executor is refused with INVALID_ARGUMENT before
 * any hook's begin() runs.
 */
static void test_session__h3_scaffold_of_other_executor_refused_before_begin(void **state)
{
  fixture *f = *state;
  hk_scaffold_options so = HK_SCAFFOLD_OPTIONS_INIT;
  f->other = fake_executor_new(&f->te->env);
  assert_non_null(f->other);
  use_scaffold(f, &so);
  assert_ok(hk_scaffold_finalize(f->scaffold, fake_executor_executor(f->other), &f->st), &f->st);
  assert_status(hk_session_new(&f->s, &f->opts, &f->st), &f->st, HK_INVALID_ARGUMENT, NULL);
  assert_null(f->s);
  assert_int_equal(fake_executor_sessions_opened(f->fx), 0);
  /* No begin() ran. */
  assert_int_equal(f->a->calls[SPY_BEGIN], 0);
  assert_int_equal(f->b->calls[SPY_BEGIN], 0);
  assert_int_equal(f->c->calls[SPY_BEGIN], 0);
}

/*
 * C65 via C47: the chief creator builds its session manager from the
 * Scaffold's ops, so a Scaffold with a ready_for_local_init_op and no
 * local_init_op (possible with an executor that builds no defaults) is
 * refused with C65's message (the ready_for_local_init_op the caller gave
 * is never silently dropped).
 */
static void test_session__c47_c65_scaffold_ready_for_local_init_without_local_init(void **state)
{
  fixture *f = *state;
  hk_scaffold_options so = HK_SCAFFOLD_OPTIONS_INIT;
  static const char *const not_ready[] = { "global_step" };
  hk_handle init = fake_executor_add_op(f->fx, "my_init");
  hk_handle rfli = fake_executor_add_report(f->fx, "my_ready_for_local_init", FAKE_REPORT_GLOBAL);
  fake_executor_op_initializes(f->fx, init, FAKE_INIT_GLOBAL);
  fake_executor_script_report(f->fx, rfli, not_ready, 1, FAKE_FOREVER);
  fake_executor_set_unimplemented_defaults(f->fx, 1);
  so.init_op = init;
  so.ready_for_local_init_op = rfli;
  use_scaffold(f, &so);
  assert_status(hk_session_new(&f->s, &f->opts, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "If you pass a ready_for_local_init_op you must also pass a local_init_op");
  assert_null(f->s);
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
static void test_session__d8_c26_should_stop_true_after_recreation_stop(void **state)
{
  fixture *f = *state;
  session_fixture_open(f);
  spy_hook_stop_at(f->a, SPY_AFTER_CREATE, 1, 1);
  hk_coordinator_request_stop(hk_session_coordinator(f->s), HK_ABORTED, "worker preempted");
  {
    int stop = hk_session_should_stop(f->s);
    assert_int_equal(f->a->calls[SPY_AFTER_CREATE], 2); /* created, then re-created once */
    if (!stop) {
      hk_code rc = session_fixture_run_train(f);
      fprintf(stderr, "should_stop() was false; the next run() returned %s \"%s\"\n", hk_code_name(rc),
              f->st.message);
    }
    assert_true(stop);
  }
}

/*
 * C10 (and C9): the conflict list names every conflicting tensor, beyond
 * 16 of them too (nothing is dropped silently).
 */
static void test_session__c10_all_conflicts_listed(void **state)
{
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
  for (i = 0; i < 16; i++)
    spy_hook_feed_i64(f->a, t[i], 1);
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
  if (strstr(f->st.message, "t15:0, t16:0]") == NULL)
    fprintf(stderr, "message: %s\n", f->st.message);
  assert_non_null(strstr(f->st.message, "t15:0, t16:0]"));
}

/* ---- H15, C28, H19, D7, H3, H1: failed state, close, run arguments ------ */

/* H15 precedence (3) before (4): the failed-state error beats the status passed in. */
static void test_session__h15_failed_state_error_beats_given_status(void **state)
{
  fixture *f = *state;
  f->opts.recovery_max_attempts = 1;
  session_fixture_open(f);
  fake_executor_fail(f->fx, FAKE_RUN, 1, FAKE_FOREVER, HK_ABORTED, "preempted forever");
  /* Attempt 1 re-creates (the default init runs through the executor: it fails too). */
  assert_status(session_fixture_run_train(f), &f->st, HK_ABORTED, "gave up after");
  assert_true(hk_session_should_stop(f->s));
  assert_status(hk_session_close(f->s, HK_DATA_LOSS, &f->st), &f->st, HK_ABORTED, "gave up after");
  assert_int_equal(f->a->calls[SPY_END], 0);
}

/* C28: a before_run error is also substituted by a recorded preemption error, and the MS recovers (C38). */
static void test_session__c28_c38_before_run_error_substituted_and_recovered(void **state)
{
  fixture *f = *state;
  session_fixture_open(f);
  spy_hook_fail(f->b, SPY_BEFORE_RUN, 1, 1, HK_INTERNAL, "b broke");
  hk_coordinator_request_stop(hk_session_coordinator(f->s), HK_UNAVAILABLE, "ps went away");
  assert_ok(session_fixture_run_train(f), &f->st);
  assert_int_equal(f->a->calls[SPY_AFTER_CREATE], 2);
  assert_int_equal(fake_executor_op_runs(f->fx, f->train), 1);
  assert_logged(f->te, HK_LOG_WARNING, "An error was raised. This may be due to a preemption");
}

/* H19: close() from inside a hook is refused; D7: a second close logs nothing above DEBUG. */
static hk_code close_from_after_run(spy_hook *spy, spy_slot slot, void *arg, hk_status *st)
{
  fixture *f = spy->action_user;
  (void)arg;
  (void)st;
  if (slot == SPY_AFTER_RUN) {
    hk_status inner = HK_STATUS_INIT;
    f->aux = (int)hk_session_close(f->s, HK_OK, &inner);
  }
  return HK_OK;
}

static void test_session__h19_d7_close_from_hook_and_second_close(void **state)
{
  fixture *f = *state;
  size_t before;
  f->b->action = close_from_after_run;
  session_fixture_open(f);
  assert_ok(session_fixture_run_train(f), &f->st);
  assert_int_equal(f->aux, HK_FAILED_PRECONDITION);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  before = (size_t)test_log_count(&f->te->log, -1, NULL) - (size_t)test_log_count(&f->te->log, HK_LOG_DEBUG, NULL);
  assert_ok(hk_session_close(f->s, HK_INTERNAL, &f->st), &f->st);
  assert_int_equal(f->st.code, HK_OK);
  assert_int_equal((size_t)test_log_count(&f->te->log, -1, NULL) - (size_t)test_log_count(&f->te->log, HK_LOG_DEBUG, NULL),
                   before);
  assert_int_equal(f->a->calls[SPY_END], 1);
}

/* H3: bad run arguments are refused before any hook runs; NULL status is safe. */
static void test_session__h3_run_arguments_validated(void **state)
{
  fixture *f = *state;
  hk_run_options bad = HK_RUN_OPTIONS_INIT;
  hk_run_metadata md = HK_RUN_METADATA_INIT;
  hk_run_args args;
  session_fixture_open(f);
  memset(&args, 0, sizeof(args));
  args.nfetches = 1;
  assert_status(hk_session_run(f->s, &args, NULL, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "fetches");
  args.nfetches = 0;
  args.options = &bad;
  bad.trace_level = 4;
  assert_status(hk_session_run(f->s, &args, NULL, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "trace_level");
  bad.trace_level = 0;
  bad.timeout_ms = -1;
  assert_status(hk_session_run(f->s, &args, NULL, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "timeout_ms");
  args.options = NULL;
  md.version = 0;
  assert_status(hk_session_run(f->s, &args, NULL, &md, &f->st), &f->st, HK_INVALID_ARGUMENT, "metadata");
  args.fetches = &f->x;
  args.nfetches = 1;
  assert_status(hk_session_run(f->s, &args, NULL, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "results");
  assert_int_equal(f->a->calls[SPY_BEFORE_RUN], 0);
  /* NULL statuses everywhere. */
  assert_int_equal(hk_session_run(f->s, &args, NULL, NULL, NULL), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_session_run_step_fn(f->s, NULL, NULL, NULL), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_session_close(NULL, HK_OK, NULL), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_session_close(f->s, HK_OK, NULL), HK_OK);
}

/* H1: a hook that fails without writing its status still yields a named, non-empty message. */
static hk_code silent_after_run(spy_hook *spy, spy_slot slot, void *arg, hk_status *st)
{
  (void)spy;
  (void)arg;
  (void)st;
  return slot == SPY_AFTER_RUN ? HK_UNKNOWN : HK_OK;
}

static void test_session__h1_hook_failure_without_status_named(void **state)
{
  fixture *f = *state;
  f->c->action = silent_after_run;
  session_fixture_open(f);
  assert_status(session_fixture_run_train(f), &f->st, HK_UNKNOWN, "'c'");
}

/*
 * H11 + hk_hook_free ("Must not be attached to a live session"): close()
 * detaches the hooks (so that they may serve another session), so a hook
 * may be freed between close() and hk_session_free(): the session's
 * destruction touches no hook after close() (a use-after-free here is what
 * ASan and valgrind would report; without them the test passes silently).
 */
static void test_session__h11_hook_freed_after_close_before_session_free(void **state)
{
  fixture *f = *state;
  session_fixture_open(f);
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  spy_hook_release(f->a); /* hk_hook_free: the hook is no longer attached */
  hk_session_free(f->s);  /* must not touch the freed hook */
  f->s = NULL;
}

/* ---- main --------------------------------------------------------------- */

#define BOTH(fn) cmocka_unit_test_setup_teardown(fn, setup_ms, session_fixture_teardown), \
                 cmocka_unit_test_setup_teardown(fn, setup_sms, session_fixture_teardown)
#define MS(fn) cmocka_unit_test_setup_teardown(fn, setup_ms, session_fixture_teardown)
#define SMS(fn) cmocka_unit_test_setup_teardown(fn, setup_sms, session_fixture_teardown)

int main(void)
{
  const struct CMUnitTest tests[] = {
    BOTH(test_session__h3_bad_options_no_side_effect),
    BOTH(test_session__h11_empty_hook_list),
    BOTH(test_session__h11_null_entry_and_duplicate),
    BOTH(test_session__h11_hook_serves_one_session),
    MS(test_session__h10_hook_vtable_version),
    BOTH(test_session__c1_null_slots_are_noops),
    BOTH(test_session__c2_c3_c4_construction_order),
    BOTH(test_session__c2_begin_failure),
    BOTH(test_session__c3_mutation_after_finalize_fails),
    BOTH(test_session__c4_after_create_failure),
    BOTH(test_session__h12_stop_from_after_create),
    BOTH(test_session__c5_c20_run_after_stop_refused),
    BOTH(test_session__c5_c27_coordinator_stop_does_not_block_run),
    BOTH(test_session__c6_c7_c21_run_order_and_context),
    BOTH(test_session__c8_merged_fetches_each_hook_gets_its_own),
    BOTH(test_session__c9_two_hooks_feed_same_tensor),
    BOTH(test_session__c9_h13_conflict_list_order),
    BOTH(test_session__c10_hook_and_user_feed_same_tensor),
    BOTH(test_session__c10_d10_feed_union_caller_untouched),
    BOTH(test_session__c10_only_caller_or_only_hook_feeds),
    BOTH(test_session__h13_duplicate_in_one_list),
    BOTH(test_session__c11_merged_options),
    BOTH(test_session__c12_metadata),
    BOTH(test_session__c13_executor_failure),
    BOTH(test_session__c14_before_run_failure),
    BOTH(test_session__c14_after_run_failure),
    BOTH(test_session__c15_end_on_clean_close),
    BOTH(test_session__c16_no_end_on_error_close),
    BOTH(test_session__h16_end_failure),
    BOTH(test_session__h1_end_returning_ok_with_a_filled_status_is_ok),
    BOTH(test_session__c18_c19_stop_in_before_run),
    BOTH(test_session__c19_stop_in_after_run_seen_by_later_hooks),
    BOTH(test_session__c25_c46_accessors),
    BOTH(test_session__c26_should_stop),
    BOTH(test_session__c26_should_stop_after_close),
    BOTH(test_session__c27_d11_coordinator_error),
    SMS(test_session__c28_substitution_singular),
    BOTH(test_session__c28_non_preemption_recorded_not_substituted),
    BOTH(test_session__c29_close_order),
    BOTH(test_session__c29_c30_stuck_thread),
    BOTH(test_session__c30_finished_threads_no_wait),
    BOTH(test_session__c31_raw_close_errors_logged),
    BOTH(test_session__c31_raw_close_other_error_logged_at_error),
    BOTH(test_session__h15_out_of_range_is_clean),
    BOTH(test_session__h15_cancelled_without_stop_not_clean),
    BOTH(test_session__h15_cancelled_after_clean_stop_is_clean),
    BOTH(test_session__h15_cancelled_after_hook_stop_not_clean),
    BOTH(test_session__h15_unknown_code_not_clean),
    BOTH(test_session__h15_coordinator_error_beats_end_error),
    BOTH(test_session__h15_ms_recorded_preemption_not_returned),
    BOTH(test_session__c35_out_of_range_from_run),
    BOTH(test_session__c37_d7_after_close),
    BOTH(test_session__c42_null_step_fn),
    BOTH(test_session__c43_step_fn),
    BOTH(test_session__c44_request_stop),
    BOTH(test_session__c5_run_with_hooks_after_hook_stop),
    BOTH(test_session__h17_stop_from_another_thread),
    BOTH(test_session__h17_error_from_another_thread),
    BOTH(test_session__h19_reentrant_calls_refused),
    BOTH(test_session__h20_free_without_close),
    BOTH(test_session__h20_free_after_clean_stop_runs_end),
    MS(test_session__hook_destroy_once),
    BOTH(test_session__d12_signal_is_clean_stop),
    MS(test_session__options_init_defaults),
    MS(test_session__c48_c73_worker_waits_until_ready),
    MS(test_session__c73_worker_deadline),
    MS(test_session__h24_worker_wait_cancelled_by_signal),
    BOTH(test_session__c7_split_run_brackets_the_callers_work),
    BOTH(test_session__split_run_misuse),
    BOTH(test_session__split_run_end_failure_and_stop),
    BOTH(test_session__h41_traced_run_spans),
    SMS(test_session__h1_c59_silent_init_fn_failure_has_a_message),
    MS(test_session__d2_c39_silent_init_fn_preemption_gives_up),
    BOTH(test_session__c29_h15_error_reported_during_join_is_returned),
    MS(test_session__h3_scaffold_of_other_executor_refused_before_begin),
    SMS(test_session__c47_c65_scaffold_ready_for_local_init_without_local_init),
    MS(test_session__d8_c26_should_stop_true_after_recreation_stop),
    SMS(test_session__c10_all_conflicts_listed),
    MS(test_session__h15_failed_state_error_beats_given_status),
    MS(test_session__c28_c38_before_run_error_substituted_and_recovered),
    MS(test_session__h19_d7_close_from_hook_and_second_close),
    SMS(test_session__h3_run_arguments_validated),
    MS(test_session__h1_hook_failure_without_status_named),
    SMS(test_session__h11_hook_freed_after_close_before_session_free),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
