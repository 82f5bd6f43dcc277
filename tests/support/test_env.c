/*
 * test_env — see test_env.h.
 */
#include "test_env.h"

#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

/* Library threads update the mocks' fields: every read takes the mock's mutex. */

static double locked_double(pthread_mutex_t *mu, const double *field) {
  double v;
  pthread_mutex_lock(mu);
  v = *field;
  pthread_mutex_unlock(mu);
  return v;
}

static long locked_long(pthread_mutex_t *mu, const long *field) {
  long v;
  pthread_mutex_lock(mu);
  v = *field;
  pthread_mutex_unlock(mu);
  return v;
}

/* ---- clock -------------------------------------------------------------- */

static double clock_monotonic(void *user) {
  test_clock *c = user;
  return locked_double(&c->mu, &c->now);
}

static double clock_wall(void *user) {
  test_clock *c = user;
  return locked_double(&c->mu, &c->wall);
}

static void clock_sleep(void *user, double secs) {
  test_clock *c = user;
  pthread_mutex_lock(&c->mu);
  if (secs > 0) {
    c->now += secs;
    c->wall += secs;
    c->total_slept += secs;
  }
  if (c->nsleeps < TEST_CLOCK_MAX_SLEEPS) c->sleeps[c->nsleeps] = secs;
  c->nsleeps++;
  pthread_mutex_unlock(&c->mu);
}

void test_clock_init(test_clock *c) {
  memset(c, 0, sizeof(*c));
  pthread_mutex_init(&c->mu, NULL);
  c->now = 1000.0;
  c->wall = 1.7e9;
}

void test_clock_bind(test_clock *c, hk_clock *out) {
  out->monotonic = clock_monotonic;
  out->wall = clock_wall;
  out->sleep = clock_sleep;
  out->user = c;
}

double test_clock_now(test_clock *c) { return clock_monotonic(c); }

void test_clock_advance(test_clock *c, double secs) {
  pthread_mutex_lock(&c->mu);
  c->now += secs;
  c->wall += secs;
  pthread_mutex_unlock(&c->mu);
}

double test_clock_total_slept(test_clock *c) { return locked_double(&c->mu, &c->total_slept); }

int test_clock_nsleeps(test_clock *c) {
  int n;
  pthread_mutex_lock(&c->mu);
  n = c->nsleeps;
  pthread_mutex_unlock(&c->mu);
  return n;
}

void test_clock_reset_sleeps(test_clock *c) {
  pthread_mutex_lock(&c->mu);
  c->nsleeps = 0;
  c->total_slept = 0;
  pthread_mutex_unlock(&c->mu);
}

/* ---- allocator ---------------------------------------------------------- */

/* A header in front of each block records its size, so live bytes can be
 * tracked and a foreign pointer would show up as a bad magic. */
#define ALLOC_MAGIC 0x686f6f6bu
typedef union block_header {
  struct {
    size_t size;
    unsigned magic;
  } h;
  max_align_t align;
} block_header;

static int should_fail(test_alloc *a) {
  long n = a->attempts++;
  if (a->fail_at < 0) return 0;
  if (n == a->fail_at || (a->fail_forever && n > a->fail_at)) {
    a->nfailed++;
    return 1;
  }
  return 0;
}

static void *alloc_alloc(void *user, size_t size) {
  test_alloc *a = user;
  block_header *b;
  pthread_mutex_lock(&a->mu);
  if (should_fail(a)) {
    pthread_mutex_unlock(&a->mu);
    return NULL;
  }
  b = malloc(sizeof(*b) + size);
  if (b) {
    b->h.size = size;
    b->h.magic = ALLOC_MAGIC;
    a->nalloc++;
    a->live++;
    a->live_bytes += (long)size;
  }
  pthread_mutex_unlock(&a->mu);
  return b ? (void *)(b + 1) : NULL;
}

static void alloc_free(void *user, void *ptr) {
  test_alloc *a = user;
  block_header *b;
  if (ptr == NULL) return;
  b = (block_header *)ptr - 1;
  pthread_mutex_lock(&a->mu);
  if (b->h.magic != ALLOC_MAGIC) {
    fprintf(stderr, "test_alloc: free of a block it did not allocate (%p)\n", ptr);
    abort();
  }
  b->h.magic = 0;
  a->nfree++;
  a->live--;
  a->live_bytes -= (long)b->h.size;
  pthread_mutex_unlock(&a->mu);
  free(b);
}

static void *alloc_realloc(void *user, void *ptr, size_t size) {
  test_alloc *a = user;
  block_header *b, *nb;
  size_t old;
  if (ptr == NULL) return alloc_alloc(user, size);
  b = (block_header *)ptr - 1;
  pthread_mutex_lock(&a->mu);
  if (b->h.magic != ALLOC_MAGIC) {
    fprintf(stderr, "test_alloc: realloc of a block it did not allocate (%p)\n", ptr);
    abort();
  }
  if (should_fail(a)) {
    pthread_mutex_unlock(&a->mu);
    return NULL;
  }
  old = b->h.size;
  nb = realloc(b, sizeof(*nb) + size);
  if (nb) {
    nb->h.size = size;
    a->nrealloc++;
    a->live_bytes += (long)size - (long)old;
  }
  pthread_mutex_unlock(&a->mu);
  return nb ? (void *)(nb + 1) : NULL;
}

void test_alloc_init(test_alloc *a) {
  memset(a, 0, sizeof(*a));
  pthread_mutex_init(&a->mu, NULL);
  a->fail_at = -1;
}

void test_alloc_bind(test_alloc *a, hk_allocator *out) {
  out->alloc = alloc_alloc;
  out->realloc = alloc_realloc;
  out->free = alloc_free;
  out->user = a;
}

void test_alloc_fail_at(test_alloc *a, long n, int forever) {
  pthread_mutex_lock(&a->mu);
  a->attempts = 0;
  a->fail_at = n;
  a->fail_forever = forever;
  pthread_mutex_unlock(&a->mu);
}

void test_alloc_reset_counts(test_alloc *a) {
  pthread_mutex_lock(&a->mu);
  a->nalloc = a->nrealloc = a->nfree = a->attempts = a->nfailed = 0;
  a->fail_at = -1;
  a->fail_forever = 0;
  pthread_mutex_unlock(&a->mu);
}

long test_alloc_count(test_alloc *a) {
  long n;
  pthread_mutex_lock(&a->mu);
  n = a->nalloc + a->nrealloc;
  pthread_mutex_unlock(&a->mu);
  return n;
}

long test_alloc_live(test_alloc *a) { return locked_long(&a->mu, &a->live); }

/* ---- log ---------------------------------------------------------------- */

static const char *level_name(int level) {
  switch (level) {
    case HK_LOG_DEBUG: return "DEBUG";
    case HK_LOG_INFO: return "INFO";
    case HK_LOG_WARNING: return "WARNING";
    case HK_LOG_ERROR: return "ERROR";
    default: return "?";
  }
}

void test_log_init(test_log *l) {
  memset(l, 0, sizeof(*l));
  pthread_mutex_init(&l->mu, NULL);
  l->echo = getenv("HOOKED_TEST_ECHO_LOG") != NULL;
}

void test_log_sink(void *user, hk_log_level level, const char *msg) {
  test_log *l = user;
  pthread_mutex_lock(&l->mu);
  if (l->echo) fprintf(stderr, "[log %s] %s\n", level_name((int)level), msg);
  if (l->n < TEST_LOG_MAX_LINES) {
    l->lines[l->n].level = level;
    snprintf(l->lines[l->n].text, TEST_LOG_LINE_MAX, "%s", msg ? msg : "(null)");
    l->n++;
  } else {
    l->dropped++;
  }
  pthread_mutex_unlock(&l->mu);
}

int test_log_count(test_log *l, int level, const char *substr) {
  size_t i;
  int n = 0;
  pthread_mutex_lock(&l->mu);
  for (i = 0; i < l->n; i++) {
    if (level >= 0 && (int)l->lines[i].level != level) continue;
    if (substr == NULL || strstr(l->lines[i].text, substr)) n++;
  }
  pthread_mutex_unlock(&l->mu);
  return n;
}

void test_log_dump(test_log *l) {
  size_t i;
  pthread_mutex_lock(&l->mu);
  fprintf(stderr, "---- captured log (%zu lines, %zu dropped) ----\n", l->n, l->dropped);
  for (i = 0; i < l->n; i++) fprintf(stderr, "  %s: %s\n", level_name((int)l->lines[i].level), l->lines[i].text);
  fprintf(stderr, "----\n");
  pthread_mutex_unlock(&l->mu);
}

int test_log_has(test_log *l, int level, const char *substr) {
  if (test_log_count(l, level, substr) > 0) return 1;
  fprintf(stderr, "expected a %s log line containing \"%s\"\n", level < 0 ? "any-level" : level_name(level),
          substr ? substr : "");
  test_log_dump(l);
  return 0;
}

void test_log_clear(test_log *l) {
  pthread_mutex_lock(&l->mu);
  l->n = 0;
  l->dropped = 0;
  pthread_mutex_unlock(&l->mu);
}

/* ---- env ---------------------------------------------------------------- */

test_env *test_env_new(void) {
  test_env *te = calloc(1, sizeof(*te));
  if (te == NULL) {
    fprintf(stderr, "test_env_new: out of memory\n");
    abort();
  }
  test_clock_init(&te->clock);
  test_alloc_init(&te->alloc);
  test_log_init(&te->log);
  hk_env_init(&te->env, HK_ENV_VERSION);
  te->env.version = HK_ENV_VERSION;
  test_alloc_bind(&te->alloc, &te->env.allocator);
  te->env.log = test_log_sink;
  te->env.log_user = &te->log;
  te->env.log_level = HK_LOG_DEBUG;
  test_clock_bind(&te->clock, &te->env.clock);
  return te;
}

void test_env_log_only(test_env *te, hk_env *out) {
  hk_env e = HK_ENV_INIT;
  e.log = test_log_sink;
  e.log_user = &te->log;
  e.log_level = HK_LOG_DEBUG;
  *out = e;
}

void test_env_free(test_env *te) {
  if (te == NULL) return;
  pthread_mutex_destroy(&te->clock.mu);
  pthread_mutex_destroy(&te->alloc.mu);
  pthread_mutex_destroy(&te->log.mu);
  free(te);
}

int test_env_release(test_env *te) {
  long live = test_alloc_live(&te->alloc);
  if (live != 0) fprintf(stderr, "teardown: %ld blocks leaked through the env allocator\n", live);
  test_env_free(te);
  return live == 0 ? 0 : -1;
}

void test_sleep_real_ms(long ms) {
  struct timespec ts;
  ts.tv_sec = ms / 1000;
  ts.tv_nsec = (ms % 1000) * 1000000L;
  nanosleep(&ts, NULL);
}

/* ---- status ------------------------------------------------------------- */

int test_status_is(hk_code rc, const hk_status *st, hk_code code, const char *substr) {
  int ok = rc == code;
  /* For OK only the return code is checked: whether a success also rewrites
   * the status object is tested explicitly where it matters. */
  if (st && code != HK_OK) {
    ok = ok && st->code == code;
    if (substr) ok = ok && strstr(st->message, substr) != NULL;
  }
  if (!ok)
    fprintf(stderr, "expected %s%s%s%s, got rc=%s status=%s \"%s\"\n", hk_code_name(code), substr ? " with \"" : "",
            substr ? substr : "", substr ? "\"" : "", hk_code_name(rc), st ? hk_code_name(st->code) : "-",
            st ? st->message : "");
  return ok;
}
