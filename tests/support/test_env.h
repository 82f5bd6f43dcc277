/*
 * test_env — an hk_env for tests: a mock clock, a counting allocator and a
 * log-capture sink, plus status assertion helpers.
 *
 * Mock clock: monotonic time starts at 1000.0 and wall time at 1.7e9; sleep
 * advances both instantly, and records the total slept, the number of sleeps
 * and each duration (the first TEST_CLOCK_MAX_SLEEPS). test_clock_advance()
 * moves time without counting a sleep.
 *
 * Counting allocator: counts alloc / realloc / free calls and live blocks
 * (and bytes, through a small header), and can fail allocations: the
 * `fail_at`-th allocation attempt (0-based, alloc and realloc both count),
 * optionally every attempt from there on. Used for the OOM loops of house
 * style 22a and the zero-allocation checks of H7.
 *
 * Log capture: stores every line with its level (the env's log_level is
 * DEBUG so nothing is dropped). test_log_has() checks a substring at a level.
 *
 * Everything here is thread-safe (a mutex each), because library threads may
 * log, allocate or sleep. Use cmocka assertions only on the main thread.
 */
#ifndef HOOKED_TEST_ENV_H
#define HOOKED_TEST_ENV_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <pthread.h>
#ifdef __cplusplus
extern "C" {
#endif
#include <cmocka.h>
#ifdef __cplusplus
}
#endif

#include <hooked/hooked.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TEST_CLOCK_MAX_SLEEPS 256
#define TEST_LOG_MAX_LINES 1024
#define TEST_LOG_LINE_MAX 1100

typedef struct test_clock {
  pthread_mutex_t mu;
  double now; /* monotonic */
  double wall;
  double total_slept;
  int nsleeps;
  double sleeps[TEST_CLOCK_MAX_SLEEPS];
} test_clock;

typedef struct test_alloc {
  pthread_mutex_t mu;
  long nalloc;   /* successful alloc calls */
  long nrealloc; /* successful realloc calls */
  long nfree;    /* free calls with a non-NULL pointer */
  long attempts; /* alloc + realloc attempts, failed included */
  long nfailed;  /* injected failures */
  long live;     /* blocks currently allocated */
  long live_bytes;
  long fail_at;     /* attempt index to fail (0-based), -1: never */
  int fail_forever; /* nonzero: every attempt from fail_at fails */
} test_alloc;

typedef struct test_log_line {
  hk_log_level level;
  char text[TEST_LOG_LINE_MAX];
} test_log_line;

typedef struct test_log {
  pthread_mutex_t mu;
  size_t n; /* lines stored (at most TEST_LOG_MAX_LINES) */
  size_t dropped;
  int echo; /* nonzero: also print each line to stderr */
  test_log_line lines[TEST_LOG_MAX_LINES];
} test_log;

typedef struct test_env {
  hk_env env; /* points at the three below */
  test_clock clock;
  test_alloc alloc;
  test_log log;
} test_env;

/** Create (calloc) a test_env whose env uses all three mocks. Never NULL (aborts). */
test_env *test_env_new(void);
/** Free. NULL is a no-op. */
void test_env_free(test_env *te);
/**
 * End of a fixture's teardown: free te and @return 0, or -1 (printing the
 * count) when blocks allocated through te's allocator are still live.
 */
int test_env_release(test_env *te);
/** An hk_env using only the log capture (system allocator and clock). */
void test_env_log_only(test_env *te, hk_env *out);

/* ---- clock -------------------------------------------------------------- */
void test_clock_init(test_clock *c);
/** Fill `out` with the mock clock's callbacks, user = c. */
void test_clock_bind(test_clock *c, hk_clock *out);
double test_clock_now(test_clock *c);
/** Move time forward without recording a sleep. */
void test_clock_advance(test_clock *c, double secs);
double test_clock_total_slept(test_clock *c);
int test_clock_nsleeps(test_clock *c);
/** Forget the recorded sleeps (time is not reset). */
void test_clock_reset_sleeps(test_clock *c);

/* ---- allocator ---------------------------------------------------------- */
void test_alloc_init(test_alloc *a);
void test_alloc_bind(test_alloc *a, hk_allocator *out);
/** Fail attempt number `n` (0-based, counted from the last reset) or every
 *  attempt from n on when `forever`; n < 0 disables. */
void test_alloc_fail_at(test_alloc *a, long n, int forever);
/** Zero the counters (live blocks are kept) and disable failures. */
void test_alloc_reset_counts(test_alloc *a);
/** alloc + realloc successes since the last reset. */
long test_alloc_count(test_alloc *a);
long test_alloc_live(test_alloc *a);

/* ---- log ---------------------------------------------------------------- */
void test_log_init(test_log *l);
/** The sink, user = test_log*. */
void test_log_sink(void *user, hk_log_level level, const char *msg);
/** @return how many lines at `level` contain `substr` (level < 0: any level). */
int test_log_count(test_log *l, int level, const char *substr);
/** @return nonzero when test_log_count() > 0; on a miss prints the log to stderr. */
int test_log_has(test_log *l, int level, const char *substr);
void test_log_clear(test_log *l);
void test_log_dump(test_log *l);

/** Sleep ms milliseconds of real time (for tests that must let another thread run first). */
void test_sleep_real_ms(long ms);

/* ---- status helpers ----------------------------------------------------- */
/**
 * @return nonzero when rc == code and, for a non-OK code, st->code == code
 * and (when substr is non-NULL) st->message contains it. Prints a
 * diagnostic when not.
 */
int test_status_is(hk_code rc, const hk_status *st, hk_code code, const char *substr);

#define assert_status(rc, st, code, substr) assert_true(test_status_is((rc), (st), (code), (substr)))
#define assert_ok(rc, st) assert_true(test_status_is((rc), (st), HK_OK, NULL))
#define assert_logged(te, level, substr) assert_true(test_log_has(&(te)->log, (int)(level), (substr)))

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_TEST_ENV_H */
