/*
 * session_fixture — the fixture shared by the session suites (test_session_*,
 * test_recovery): a test_env, a fake executor holding a global
 * step and a train op, spy hooks a, b (and c) sharing one log, and session
 * options registering the spies in that order.
 *
 * The struct carries every field those suites use, so a test reads the same
 * against any of them; fields a suite does not use stay zero, and the
 * teardown frees whatever is set. Suites add their own tensors (x, y, p, q)
 * after session_fixture_new(), which keeps the executor's handle order the
 * same as when each suite built its own.
 *
 * Lower-level helpers (test_session_options, fake_training_executor) serve
 * the suites whose fixture is shaped otherwise (test_alloc).
 */
#ifndef HOOKED_TEST_SESSION_FIXTURE_H
#define HOOKED_TEST_SESSION_FIXTURE_H

#include "test_env.h"
#include "fake_executor.h"
#include "spy_hook.h"

#define SESSION_FIXTURE_MAX_SPIES 3

/* Scripted failures of the runs whose first target is the train op (creation
 * runs such as init ops and readiness checks are left alone). */
typedef struct train_fault {
  hk_handle train;
  int remaining; /* FAKE_FOREVER or count */
  hk_code code;
  int seen; /* runs targeting train */
} train_fault;

typedef struct session_fixture {
  test_env *te;
  fake_executor *fx;
  hk_executor *ex;
  spy_log log;
  spy_hook *a, *b, *c;
  hk_hook *hooks[SESSION_FIXTURE_MAX_SPIES];
  hk_handle gs, train, x, y, p, q;
  hk_session_options opts;
  hk_session *s;
  hk_scaffold *scaffold;
  hk_session_manager *sm; /* freed by teardown, so a failed assertion leaks nothing */
  hk_raw_session *rs;
  fake_executor *other;
  hk_status st;
  train_fault tf; /* armed by session_fixture_fail_train() */
  int aux;        /* scratch for actions */
  hk_code aux_rc;
  hk_status aux_st;
} session_fixture;

/**
 * Fill *o (after hk_session_options_init) with env, kind, the executor and
 * the hook list.
 */
void test_session_options(hk_session_options *o, const hk_env *env, hk_session_kind kind, hk_executor *ex,
                          hk_hook **hooks, size_t nhooks);

/**
 * A fake executor on te's env with a global step (asserts it was created).
 * ex may be NULL when the caller does not keep the executor.
 */
fake_executor *fake_gs_executor(test_env *te, hk_executor **ex, hk_handle *gs);

/** fake_gs_executor() plus a train op. */
fake_executor *fake_training_executor(test_env *te, hk_executor **ex, hk_handle *gs, hk_handle *train);

/* ---- one-hook sessions (test_stop_at_step, test_global_step_waiter) ---- */

/** hk_session_new of `kind` over ex, with *hook as the only hook and scaffold (may be NULL). */
hk_code one_hook_session_new(hk_session **out, const hk_env *env, hk_session_kind kind, hk_executor *ex, hk_hook **hook,
                             hk_scaffold *scaffold, hk_status *st);

/** Close (ignoring the result: teardown of a test that may have failed half-way) and free; NULL is a no-op. */
void session_close_and_free(hk_session *s);

/** One hk_session_run of s with train as the only target and no fetches. */
hk_code session_run_train(hk_session *s, hk_handle train, hk_status *st);

/** Assign value to the executor's global step through rs (what an init_fn restoring a checkpoint does). */
hk_code raw_session_assign_global_step(hk_raw_session *rs, int64_t value, hk_status *st);

/**
 * calloc a fixture: env, fake training executor, nspies (2 or 3) spies "a",
 * "b", "c" on f->log with action_user = f, and options of `kind` registering
 * them in that order. Fails the test (cmocka) when anything is not created.
 */
session_fixture *session_fixture_new(hk_session_kind kind, int nspies);

/** Make the executor fail runs targeting the train op as f->tf scripts. */
void session_fixture_fail_train(session_fixture *f);

/**
 * Last step of a teardown: free fx (may be NULL) and the calloc'd fixture,
 * then release te. @return test_env_release()'s result.
 */
int fixture_release(void *fixture, fake_executor *fx, test_env *te);

/** cmocka teardown: frees everything set, then fails when the env allocator leaked. */
int session_fixture_teardown(void **state);

/** Create f->s from f->opts (asserting success), then clear the spy log and the executor's call counters. */
void session_fixture_open(session_fixture *f);

/** One hk_session_run with the train op as the only target, no fetches, status in f->st. */
hk_code session_fixture_run_train(session_fixture *f);

#endif /* HOOKED_TEST_SESSION_FIXTURE_H */
