/*
 * Tests of the coordinator (contract H17, C29, C30, D11) and of the signal
 * helper (D12). Threads only touch plain flags under a mutex; every cmocka
 * assertion runs on the main thread, after the threads were joined or
 * released.
 */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* pthread_getname_np */
#endif

#include "test_env.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- small helpers ------------------------------------------------------- */

/* A latch a thread blocks on until the main thread opens it. */
typedef struct gate {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int open;
  int entered;   /* the thread reached the gate */
  int finished;  /* the thread body returned */
  char name[32]; /* what the thread read back as its own name */
} gate;

static void gate_init(gate *g) {
  memset(g, 0, sizeof(*g));
  pthread_mutex_init(&g->mu, NULL);
  pthread_cond_init(&g->cv, NULL);
}

static void gate_destroy(gate *g) {
  pthread_cond_destroy(&g->cv);
  pthread_mutex_destroy(&g->mu);
}

static void gate_open(gate *g) {
  pthread_mutex_lock(&g->mu);
  g->open = 1;
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
}

static int gate_get(gate *g, const int *field) {
  int v;
  pthread_mutex_lock(&g->mu);
  v = *field;
  pthread_mutex_unlock(&g->mu);
  return v;
}

static void gate_set(gate *g, int *field) {
  pthread_mutex_lock(&g->mu);
  *field = 1;
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
}

static void gate_wait_for(gate *g, const int *field) {
  pthread_mutex_lock(&g->mu);
  while (!*field) pthread_cond_wait(&g->cv, &g->mu);
  pthread_mutex_unlock(&g->mu);
}

static int setup(void **state) {
  *state = test_env_new();
  return 0;
}

static int teardown(void **state) {
  test_env_free(*state);
  return 0;
}

/* A test env with the log capture but the system clock and allocator. */
static hk_env real_env(test_env *te) {
  hk_env env;
  test_env_log_only(te, &env);
  return env;
}

/* A coordinator on env, its creation checked like any other call. */
static hk_coordinator *coordinator_on(const hk_env *env) {
  hk_coordinator *c = NULL;
  hk_status st = HK_STATUS_INIT;
  assert_ok(hk_coordinator_new(&c, env, &st), &st);
  return c;
}

/* ---- creation ------------------------------------------------------------ */

/* H3: a NULL output or an env of an unknown version is INVALID_ARGUMENT; a NULL env means the defaults. */
static void test_coordinator__new_refuses_bad_arguments(void **state) {
  test_env *te = *state;
  hk_coordinator *c = (hk_coordinator *)1;
  hk_status st = HK_STATUS_INIT;
  hk_env bad = te->env;
  hk_code rc;

  rc = hk_coordinator_new(NULL, &te->env, &st);
  assert_status(rc, &st, HK_INVALID_ARGUMENT, "out");
  bad.version = 0;
  rc = hk_coordinator_new(&c, &bad, &st);
  assert_int_equal(rc, HK_INVALID_ARGUMENT);
  assert_null(c);
  hk_coordinator_free(NULL);
  assert_ok(hk_coordinator_new(&c, NULL, &st), &st);
  assert_non_null(c);
  hk_coordinator_free(c);
}

/* ---- stop requests --------------------------------------------------------- */

/* H17: OK is a clean stop. */
static void test_coordinator__a_stop_with_ok_is_a_clean_stop(void **state) {
  test_env *te = *state;
  hk_coordinator *c;
  hk_status err = HK_STATUS_INIT;

  c = coordinator_on(&te->env);
  assert_false(hk_coordinator_should_stop(c));
  assert_false(hk_coordinator_clean_stop_requested(c));
  assert_false(hk_coordinator_wait_for_stop(c, 0));
  hk_coordinator_request_stop(c, HK_OK, NULL);
  assert_true(hk_coordinator_should_stop(c));
  assert_true(hk_coordinator_clean_stop_requested(c));
  assert_int_equal(hk_coordinator_error(&err, c), HK_OK);
  assert_int_equal(err.code, HK_OK);
  assert_true(hk_coordinator_wait_for_stop(c, 0));
  hk_coordinator_free(c);
}

/* H17, D11: the first non-OK status is recorded; later ones are logged at DEBUG and ignored. */
static void test_coordinator__first_error_wins(void **state) {
  test_env *te = *state;
  hk_coordinator *c;
  hk_status err = HK_STATUS_INIT;

  c = coordinator_on(&te->env);
  hk_coordinator_request_stop(c, HK_ABORTED, "first failure");
  hk_coordinator_request_stop(c, HK_INTERNAL, "second failure");
  hk_coordinator_request_stop(c, HK_OK, NULL);
  assert_true(hk_coordinator_should_stop(c));
  assert_false(hk_coordinator_clean_stop_requested(c));
  assert_int_equal(hk_coordinator_error(&err, c), HK_ABORTED);
  assert_int_equal(err.code, HK_ABORTED);
  assert_string_equal(err.message, "first failure");
  assert_logged(te, HK_LOG_DEBUG, "second failure");
  assert_int_equal(test_log_count(&te->log, HK_LOG_INFO, "second failure"), 0);
  hk_coordinator_free(c);
}

/* H17: an error reported after a clean stop is still the first error. */
static void test_coordinator__an_error_after_a_clean_stop_is_still_the_first_error(void **state) {
  test_env *te = *state;
  hk_coordinator *c;
  hk_status err = HK_STATUS_INIT;

  c = coordinator_on(&te->env);
  hk_coordinator_request_stop(c, HK_OK, NULL);
  assert_true(hk_coordinator_clean_stop_requested(c));
  hk_coordinator_request_stop(c, HK_DATA_LOSS, NULL); /* NULL message: still non-empty */
  assert_false(hk_coordinator_clean_stop_requested(c));
  assert_int_equal(hk_coordinator_error(&err, c), HK_DATA_LOSS);
  assert_true(strlen(err.message) > 0);
  hk_coordinator_free(c);
}

/* H17: a long message is truncated into the inline buffer (no allocation). */
static void test_coordinator__request_stop_truncates_a_long_message_without_allocating(void **state) {
  test_env *te = *state;
  hk_coordinator *c;
  hk_status err = HK_STATUS_INIT;
  char longmsg[2000];

  memset(longmsg, 'x', sizeof(longmsg) - 1);
  longmsg[sizeof(longmsg) - 1] = '\0';
  c = coordinator_on(&te->env);
  test_alloc_reset_counts(&te->alloc);
  hk_coordinator_request_stop(c, HK_UNAVAILABLE, longmsg);
  hk_coordinator_request_stop(c, HK_ABORTED, longmsg);
  assert_int_equal(test_alloc_count(&te->alloc), 0);
  assert_int_equal(hk_coordinator_error(&err, c), HK_UNAVAILABLE);
  assert_int_equal(strlen(err.message), HK_STATUS_MESSAGE_MAX - 1);
  hk_coordinator_free(c);
}

static void *request_stop_thread(void *arg) {
  hk_coordinator_request_stop(arg, HK_UNAVAILABLE, "worker lost");
  return NULL;
}

/* H17: request_stop from another thread. */
static void test_coordinator__a_stop_can_be_requested_from_another_thread(void **state) {
  test_env *te = *state;
  hk_coordinator *c;
  hk_status err = HK_STATUS_INIT;
  pthread_t tid;

  c = coordinator_on(&te->env);
  assert_int_equal(pthread_create(&tid, NULL, request_stop_thread, c), 0);
  pthread_join(tid, NULL);
  assert_true(hk_coordinator_should_stop(c));
  assert_int_equal(hk_coordinator_error(&err, c), HK_UNAVAILABLE);
  assert_string_equal(err.message, "worker lost");
  hk_coordinator_free(c);
}

/* ---- waits ------------------------------------------------------------------ */

/* H17, H5: a wait times out on the mock clock, through its sleep, in slices <= 0.1 s. */
static void test_coordinator__a_wait_times_out_on_the_mock_clock_in_short_slices(void **state) {
  test_env *te = *state;
  hk_coordinator *c;
  int i, n;

  c = coordinator_on(&te->env);
  assert_false(hk_coordinator_wait_for_stop(c, 5.0));
  assert_true(fabs(test_clock_total_slept(&te->clock) - 5.0) < 1e-9);
  n = test_clock_nsleeps(&te->clock);
  assert_true(n >= 50);
  for (i = 0; i < n && i < TEST_CLOCK_MAX_SLEEPS; i++) assert_true(te->clock.sleeps[i] <= 0.1 + 1e-12);
  hk_coordinator_free(c);
}

/* H17: a wait after a stop returns at once, even without a limit. */
static void test_coordinator__wait_after_stop_returns_at_once(void **state) {
  test_env *te = *state;
  hk_coordinator *c;

  c = coordinator_on(&te->env);
  hk_coordinator_request_stop(c, HK_OK, NULL);
  assert_true(hk_coordinator_wait_for_stop(c, HK_UNSET_SECS));
  assert_true(hk_coordinator_wait_for_stop(c, 10.0));
  assert_int_equal(test_clock_nsleeps(&te->clock), 0);
  hk_coordinator_free(c);
}

static void *delayed_stop_thread(void *arg) {
  test_sleep_real_ms(20);
  hk_coordinator_request_stop(arg, HK_OK, NULL);
  return NULL;
}

/* H17: a real-clock wait is woken by another thread's request. */
static void test_coordinator__a_wait_is_woken_by_another_thread_s_request(void **state) {
  test_env *te = *state;
  hk_env env = real_env(te);
  hk_coordinator *c;
  pthread_t tid;

  c = coordinator_on(&env);
  assert_int_equal(pthread_create(&tid, NULL, delayed_stop_thread, c), 0);
  assert_true(hk_coordinator_wait_for_stop(c, HK_UNSET_SECS));
  pthread_join(tid, NULL);
  hk_coordinator_free(c);

  c = coordinator_on(&env);
  assert_int_equal(pthread_create(&tid, NULL, delayed_stop_thread, c), 0);
  assert_true(hk_coordinator_wait_for_stop(c, 120.0));
  pthread_join(tid, NULL);
  hk_coordinator_free(c);
}

/* H17: a real-clock wait without a stop returns false at its timeout. */
static void test_coordinator__a_real_clock_wait_without_a_stop_times_out(void **state) {
  test_env *te = *state;
  hk_env env = real_env(te);
  hk_coordinator *c;

  c = coordinator_on(&env);
  assert_false(hk_coordinator_wait_for_stop(c, 0.02));
  assert_false(hk_coordinator_wait_for_stop(c, -1.0));
  assert_false(hk_coordinator_wait_for_stop(c, NAN));
  hk_coordinator_free(c);
}

/* ---- threads and join ---------------------------------------------------------- */

static void wait_stop_body(void *user, hk_coordinator *c) {
  gate *g = user;
  gate_set(g, &g->entered);
  hk_coordinator_wait_for_stop(c, HK_UNSET_SECS);
  gate_set(g, &g->finished);
}

typedef struct manual_worker {
  hk_coordinator *c;
  hk_coordinator_thread *token;
  gate *g;
} manual_worker;

static void *manual_worker_main(void *arg) {
  manual_worker *w = arg;
  hk_coordinator_wait_for_stop(w->c, HK_UNSET_SECS);
  gate_set(w->g, &w->g->finished);
  hk_coordinator_thread_done(w->token);
  return NULL;
}

/* C30: with every thread finishing after the stop, the join returns without a warning. */
static void test_coordinator__join_returns_without_a_warning_when_every_thread_finished(void **state) {
  test_env *te = *state;
  hk_env env = real_env(te);
  hk_coordinator *c;
  hk_status st = HK_STATUS_INIT;
  gate g1, g2, g3;
  manual_worker w;
  pthread_t tid;

  gate_init(&g1);
  gate_init(&g2);
  gate_init(&g3);
  c = coordinator_on(&env);
  assert_ok(hk_coordinator_start_thread(c, "waiter-1", wait_stop_body, &g1, &st), &st);
  assert_ok(hk_coordinator_start_thread(c, "waiter-2", wait_stop_body, &g2, &st), &st);
  w.c = c;
  w.g = &g3;
  assert_ok(hk_coordinator_register_thread(&w.token, c, "manual", &st), &st);
  assert_int_equal(pthread_create(&tid, NULL, manual_worker_main, &w), 0);

  /* The join requests the stop itself; a grace of 120 s must not be waited out. */
  assert_ok(hk_coordinator_join(c, 120.0, &st), &st);
  assert_true(gate_get(&g1, &g1.finished));
  assert_true(gate_get(&g2, &g2.finished));
  assert_true(gate_get(&g3, &g3.finished));
  assert_true(hk_coordinator_clean_stop_requested(c));
  assert_int_equal(test_log_count(&te->log, HK_LOG_WARNING, "Coordinator stopped with threads still running"), 0);
  pthread_join(tid, NULL);
  hk_coordinator_free(c);
  gate_destroy(&g1);
  gate_destroy(&g2);
  gate_destroy(&g3);
}

static void blocked_body(void *user, hk_coordinator *c) {
  gate *g = user;
  (void)c;
  gate_set(g, &g->entered);
  gate_wait_for(g, &g->open);
  gate_set(g, &g->finished);
}

/* C29, C30: stuck threads are named in a WARNING after the grace period; the join does not fail. */
static void test_coordinator__join_names_stuck_threads_in_a_warning_and_does_not_fail(void **state) {
  test_env *te = *state;
  hk_env env = real_env(te);
  hk_coordinator *c;
  hk_coordinator_thread *stuck, *done;
  hk_status st = HK_STATUS_INIT;
  gate g;

  gate_init(&g);
  c = coordinator_on(&env);
  assert_ok(hk_coordinator_register_thread(&stuck, c, "stuck-worker", &st), &st);
  assert_ok(hk_coordinator_register_thread(&done, c, "done-worker", &st), &st);
  hk_coordinator_thread_done(done);
  assert_ok(hk_coordinator_start_thread(c, "blocked-thread", blocked_body, &g, &st), &st);
  gate_wait_for(&g, &g.entered);

  assert_ok(hk_coordinator_join(c, 0.0, &st), &st);
  assert_logged(te, HK_LOG_WARNING, "Coordinator stopped with threads still running: stuck-worker, blocked-thread");
  assert_int_equal(test_log_count(&te->log, -1, "done-worker"), 0);
  assert_false(gate_get(&g, &g.finished));

  /* H17: still valid after the join. */
  assert_true(hk_coordinator_should_stop(c));
  gate_open(&g);
  hk_coordinator_thread_done(stuck);
  hk_coordinator_free(c); /* joins blocked-thread */
  assert_true(gate_get(&g, &g.finished));
  gate_destroy(&g);
}

/* C30, H5: with a mock clock the grace period passes on the mock clock. */
static void test_coordinator__the_join_s_grace_period_passes_on_the_mock_clock(void **state) {
  test_env *te = *state;
  hk_coordinator *c;
  hk_coordinator_thread *stuck;
  hk_status st = HK_STATUS_INIT;

  c = coordinator_on(&te->env);
  assert_ok(hk_coordinator_register_thread(&stuck, c, "slowpoke", &st), &st);
  assert_ok(hk_coordinator_join(c, 3.0, &st), &st);
  assert_true(test_clock_total_slept(&te->clock) >= 3.0 - 1e-9);
  assert_logged(te, HK_LOG_WARNING, "Coordinator stopped with threads still running: slowpoke");
  hk_coordinator_thread_done(stuck);
  hk_coordinator_free(c);
}

/* C30, H4: a negative, NaN or infinite grace period is refused. */
static void test_coordinator__join_refuses_a_negative_nan_or_infinite_grace_period(void **state) {
  test_env *te = *state;
  hk_coordinator *c;
  hk_status st = HK_STATUS_INIT;
  const double bad[] = {-1.0, NAN, INFINITY};
  size_t i;

  c = coordinator_on(&te->env);
  for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    assert_status(hk_coordinator_join(c, bad[i], &st), &st, HK_INVALID_ARGUMENT, "grace_secs");
  assert_false(hk_coordinator_should_stop(c)); /* a refused join requests nothing */
  assert_status(hk_coordinator_join(NULL, 1.0, &st), &st, HK_INVALID_ARGUMENT, "c");
  hk_coordinator_free(c);
}

/* A registered thread that reports completion after a pause. */
typedef struct late_done {
  hk_coordinator_thread *token;
} late_done;

static void *finish_later(void *arg) {
  late_done *ld = arg;
  test_sleep_real_ms(50);
  hk_coordinator_thread_done(ld->token);
  return NULL;
}

/*
 * C30/H17: the join accepts any finite grace period >= 0 and returns as soon
 * as every registered thread reported completion, 1e300 s included. With
 * the system clock the wait never converts the whole remaining grace to
 * time_t (undefined for 1e300; UBSan: float-cast-overflow; on x86-64 a
 * deadline in the past, and the join would spin).
 */
static void test_coordinator__join_with_a_huge_grace_period_returns_when_threads_finish(void **state) {
  test_env *te = *state;
  hk_env env = real_env(te);
  hk_coordinator *c;
  hk_status st = HK_STATUS_INIT;
  late_done ld;
  pthread_t helper;

  c = coordinator_on(&env);
  assert_ok(hk_coordinator_register_thread(&ld.token, c, "late", &st), &st);
  assert_int_equal(pthread_create(&helper, NULL, finish_later, &ld), 0);
  assert_ok(hk_coordinator_join(c, 1e300, &st), &st);
  assert_int_equal(pthread_join(helper, NULL), 0);
  assert_false(test_log_has(&te->log, HK_LOG_WARNING, "Coordinator stopped with threads still running"));
  hk_coordinator_free(c);
}

/* H3: register_thread refuses a NULL name or output with INVALID_ARGUMENT naming it. */
static void test_coordinator__register_thread_refuses_bad_arguments(void **state) {
  test_env *te = *state;
  hk_coordinator *c;
  hk_coordinator_thread *token = (hk_coordinator_thread *)1;
  hk_status st = HK_STATUS_INIT;

  c = coordinator_on(&te->env);
  assert_status(hk_coordinator_register_thread(&token, c, NULL, &st), &st, HK_INVALID_ARGUMENT, "name");
  assert_null(token);
  assert_status(hk_coordinator_register_thread(NULL, c, "x", &st), &st, HK_INVALID_ARGUMENT, "token");
  assert_status(hk_coordinator_register_thread(&token, NULL, "x", &st), &st, HK_INVALID_ARGUMENT, "c");
  assert_status(hk_coordinator_start_thread(c, "x", NULL, NULL, &st), &st, HK_INVALID_ARGUMENT, "fn");
  assert_status(hk_coordinator_start_thread(c, NULL, wait_stop_body, NULL, &st), &st, HK_INVALID_ARGUMENT, "name");
  hk_coordinator_thread_done(NULL);
  hk_coordinator_free(c);
}

/* H17: a coordinator stays usable after its join: new requests, registrations and joins work. */
static void test_coordinator__a_coordinator_stays_usable_after_its_join(void **state) {
  test_env *te = *state;
  hk_coordinator *c;
  hk_coordinator_thread *token;
  hk_status st = HK_STATUS_INIT;
  hk_status err = HK_STATUS_INIT;

  c = coordinator_on(&te->env);
  assert_ok(hk_coordinator_join(c, 0.0, &st), &st);
  hk_coordinator_request_stop(c, HK_INTERNAL, "late thread error");
  assert_int_equal(hk_coordinator_error(&err, c), HK_INTERNAL);
  assert_ok(hk_coordinator_register_thread(&token, c, "late", &st), &st);
  hk_coordinator_thread_done(token);
  assert_ok(hk_coordinator_join(c, 0.0, &st), &st);
  assert_int_equal(test_log_count(&te->log, HK_LOG_WARNING, "late"), 0);
  hk_coordinator_free(c);
}

/* H17: a registered thread keeps the coordinator's memory alive past free. */
static void test_coordinator__a_registered_thread_keeps_the_coordinator_alive_past_free(void **state) {
  test_env *te = *state;
  hk_coordinator *c;
  hk_coordinator_thread *token;
  hk_status st = HK_STATUS_INIT;
  long live0 = test_alloc_live(&te->alloc);

  c = coordinator_on(&te->env);
  assert_ok(hk_coordinator_register_thread(&token, c, "straggler", &st), &st);
  hk_coordinator_free(c);
  assert_true(test_alloc_live(&te->alloc) > live0);
  /* The straggler may still look at its coordinator, then reports completion. */
  assert_true(hk_coordinator_should_stop(c));
  hk_coordinator_thread_done(token);
  assert_int_equal(test_alloc_live(&te->alloc), live0);
}

static void slow_exit_body(void *user, hk_coordinator *c) {
  gate *g = user;
  hk_coordinator_wait_for_stop(c, HK_UNSET_SECS);
  test_sleep_real_ms(20);
  gate_set(g, &g->finished);
}

/* H17: free requests a stop and joins the threads it started before releasing memory. */
static void test_coordinator__free_joins_started_threads(void **state) {
  test_env *te = *state;
  hk_env env = real_env(te);
  hk_coordinator *c;
  hk_status st = HK_STATUS_INIT;
  gate g;

  gate_init(&g);
  c = coordinator_on(&env);
  assert_ok(hk_coordinator_start_thread(c, "slow-exit", slow_exit_body, &g, &st), &st);
  hk_coordinator_free(c);
  assert_true(gate_get(&g, &g.finished));
  gate_destroy(&g);
}

static void name_body(void *user, hk_coordinator *c) {
  gate *g = user;
  (void)c;
#if defined(__GLIBC__)
  pthread_getname_np(pthread_self(), g->name, sizeof(g->name));
#endif
  gate_set(g, &g->finished);
}

/* Threads the library starts carry a name (truncated to the 15 bytes pthreads allow), so a debugger or top shows
 * whose each thread is. */
static void test_coordinator__started_thread_is_named(void **state) {
#if defined(__GLIBC__)
  test_env *te = *state;
  hk_coordinator *c;
  hk_status st = HK_STATUS_INIT;
  gate g;

  gate_init(&g);
  c = coordinator_on(&te->env);
  assert_ok(hk_coordinator_start_thread(c, "a-very-long-thread-name", name_body, &g, &st), &st);
  assert_ok(hk_coordinator_join(c, 60.0, &st), &st);
  assert_true(gate_get(&g, &g.finished));
  assert_string_equal(g.name, "a-very-long-thr");
  hk_coordinator_free(c);
  gate_destroy(&g);
#else
  (void)state;
  (void)name_body;
  skip();
#endif
}

/* ---- signal helper (D12) ------------------------------------------------------ */

static volatile sig_atomic_t previous_handler_calls;

static void previous_handler(int sig) {
  (void)sig;
  previous_handler_calls++;
}

static int signal_setup(void **state) {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = previous_handler;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  previous_handler_calls = 0;
  return setup(state);
}

static int signal_teardown(void **state) {
  struct sigaction sa;
  (void)hk_signal_uninstall(NULL); /* in case a test failed half-way */
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = SIG_DFL;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  return teardown(state);
}

/* D12: install, a signal is a clean coordinator stop, uninstall restores and clears. */
static void test_coordinator__a_signal_is_a_clean_stop_and_uninstall_restores(void **state) {
  test_env *te = *state;
  hk_coordinator *c;
  hk_status st = HK_STATUS_INIT;
  hk_status err = HK_STATUS_INIT;
  struct sigaction now;

  c = coordinator_on(&te->env);
  assert_ok(hk_signal_install(&st), &st);
  assert_status(hk_signal_install(&st), &st, HK_FAILED_PRECONDITION, "already installed");
  assert_int_equal(hk_signal_fired(), 0);
  assert_false(hk_coordinator_should_stop(c));

  raise(SIGTERM);
  assert_int_equal(hk_signal_fired(), SIGTERM);
  assert_int_equal(previous_handler_calls, 0); /* the first delivery is ours alone */
  assert_true(hk_coordinator_should_stop(c));
  assert_true(hk_coordinator_clean_stop_requested(c));
  assert_true(hk_coordinator_wait_for_stop(c, HK_UNSET_SECS));
  assert_int_equal(hk_coordinator_error(&err, c), HK_OK);

  assert_ok(hk_signal_uninstall(&st), &st);
  assert_int_equal(hk_signal_fired(), 0);
  assert_false(hk_coordinator_should_stop(c));
  assert_false(hk_coordinator_clean_stop_requested(c));
  sigaction(SIGTERM, NULL, &now);
  assert_true(now.sa_handler == previous_handler);
  sigaction(SIGINT, NULL, &now);
  assert_true(now.sa_handler == previous_handler);
  assert_status(hk_signal_uninstall(&st), &st, HK_FAILED_PRECONDITION, "not installed");
  hk_coordinator_free(c);
}

/* D12: a second delivery of the same signal goes to the previous disposition. */
static void test_coordinator__a_second_signal_reaches_the_previous_handler(void **state) {
  hk_status st = HK_STATUS_INIT;
  (void)state;

  assert_ok(hk_signal_install(&st), &st);
  raise(SIGINT);
  assert_int_equal(hk_signal_fired(), SIGINT);
  assert_int_equal(previous_handler_calls, 0);
  raise(SIGTERM); /* another signal: its first delivery, still ours */
  assert_int_equal(previous_handler_calls, 0);
  assert_int_equal(hk_signal_fired(), SIGINT);
  raise(SIGINT);
  assert_int_equal(previous_handler_calls, 1);
  raise(SIGINT); /* the previous disposition is back in place */
  assert_int_equal(previous_handler_calls, 2);
  assert_ok(hk_signal_uninstall(&st), &st);
}

/* D12: with the default disposition underneath, a second SIGTERM kills the process. */
static void test_coordinator__a_second_sigterm_kills_under_the_default_disposition(void **state) {
  int wstatus = 0;
  pid_t pid;
  (void)state;

  fflush(NULL);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    if (hk_signal_install(NULL) != HK_OK) _exit(2);
    raise(SIGTERM);
    if (hk_signal_fired() != SIGTERM) _exit(3);
    raise(SIGTERM);
    _exit(4); /* survived the second delivery */
  }
  assert_int_equal(waitpid(pid, &wstatus, 0), pid);
  assert_true(WIFSIGNALED(wstatus));
  assert_int_equal(WTERMSIG(wstatus), SIGTERM);
}

static void *raise_thread(void *arg) {
  (void)arg;
  test_sleep_real_ms(20);
  raise(SIGTERM); /* delivered to this thread; the handler only sets the flag */
  return NULL;
}

/* D12: a real-clock wait notices the signal within a slice, though nobody signals the condition. */
static void test_coordinator__a_signal_ends_a_real_clock_wait(void **state) {
  test_env *te = *state;
  hk_env env = real_env(te);
  hk_coordinator *c;
  hk_status st = HK_STATUS_INIT;
  pthread_t tid;

  c = coordinator_on(&env);
  assert_ok(hk_signal_install(&st), &st);
  assert_int_equal(pthread_create(&tid, NULL, raise_thread, NULL), 0);
  assert_true(hk_coordinator_wait_for_stop(c, HK_UNSET_SECS));
  pthread_join(tid, NULL);
  assert_int_equal(hk_signal_fired(), SIGTERM);
  assert_ok(hk_signal_uninstall(&st), &st);
  hk_coordinator_free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_coordinator__new_refuses_bad_arguments, setup, teardown),
      cmocka_unit_test_setup_teardown(test_coordinator__a_stop_with_ok_is_a_clean_stop, setup, teardown),
      cmocka_unit_test_setup_teardown(test_coordinator__first_error_wins, setup, teardown),
      cmocka_unit_test_setup_teardown(test_coordinator__an_error_after_a_clean_stop_is_still_the_first_error, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_coordinator__request_stop_truncates_a_long_message_without_allocating, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_coordinator__a_stop_can_be_requested_from_another_thread, setup, teardown),
      cmocka_unit_test_setup_teardown(test_coordinator__a_wait_times_out_on_the_mock_clock_in_short_slices, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_coordinator__wait_after_stop_returns_at_once, setup, teardown),
      cmocka_unit_test_setup_teardown(test_coordinator__a_wait_is_woken_by_another_thread_s_request, setup, teardown),
      cmocka_unit_test_setup_teardown(test_coordinator__a_real_clock_wait_without_a_stop_times_out, setup, teardown),
      cmocka_unit_test_setup_teardown(test_coordinator__join_returns_without_a_warning_when_every_thread_finished,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_coordinator__join_names_stuck_threads_in_a_warning_and_does_not_fail, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_coordinator__the_join_s_grace_period_passes_on_the_mock_clock, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_coordinator__join_refuses_a_negative_nan_or_infinite_grace_period, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_coordinator__join_with_a_huge_grace_period_returns_when_threads_finish,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_coordinator__register_thread_refuses_bad_arguments, setup, teardown),
      cmocka_unit_test_setup_teardown(test_coordinator__a_coordinator_stays_usable_after_its_join, setup, teardown),
      cmocka_unit_test_setup_teardown(test_coordinator__a_registered_thread_keeps_the_coordinator_alive_past_free,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_coordinator__free_joins_started_threads, setup, teardown),
      cmocka_unit_test_setup_teardown(test_coordinator__started_thread_is_named, setup, teardown),
      cmocka_unit_test_setup_teardown(test_coordinator__a_signal_is_a_clean_stop_and_uninstall_restores, signal_setup,
                                      signal_teardown),
      cmocka_unit_test_setup_teardown(test_coordinator__a_second_signal_reaches_the_previous_handler, signal_setup,
                                      signal_teardown),
      cmocka_unit_test_setup_teardown(test_coordinator__a_second_sigterm_kills_under_the_default_disposition,
                                      signal_setup, signal_teardown),
      cmocka_unit_test_setup_teardown(test_coordinator__a_signal_ends_a_real_clock_wait, signal_setup, signal_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
