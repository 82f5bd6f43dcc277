/*
 * hooked — the coordinator.
 *
 * Memory rule. Threads registered with a coordinator may outlive the session
 * that made it (a straggler after the join's grace period), so the
 * coordinator's memory is reference counted: the owner holds one reference
 * and every registered thread that has not yet reported completion holds one.
 * hk_coordinator_free() requests a stop, pthread_joins every thread that
 * hk_coordinator_start_thread() started (such a thread must return soon after
 * a stop, and joining it is the only way to know it no longer runs our
 * code), then drops the owner's reference. A thread registered by its owner
 * keeps the coordinator alive until it calls hk_coordinator_thread_done();
 * the last reference to go frees the memory, on whichever thread drops it
 * (the allocator is thread-safe by contract). So every call a registered
 * thread makes on the coordinator, up to and including thread_done, is safe
 * even after hk_coordinator_free().
 *
 * The join never detaches a straggler started by start_thread(): it stays
 * joinable and hk_coordinator_free() joins it.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* pthread_setname_np */
#endif

#include "hooked/coordinator.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#if defined(__APPLE__)
/* No pthread_condattr_setclock: timed waits use the wall clock there. */
#define HK__COND_CLOCK CLOCK_REALTIME
#else
#define HK__COND_CLOCK CLOCK_MONOTONIC
#define HK__HAVE_CONDATTR_SETCLOCK 1
#endif

/* Longest wait between two looks at the signal flag, which a signal handler
 * can set but cannot announce through the condition variable (waits end
 * within one poll interval). Also the slice for waits through an injected
 * sleep. */
#define HK__WAIT_SLICE_SECS 0.1
/* With an injected sleep, the join still gives real threads this much real
 * time per slice to report completion, so a mock clock does not turn a
 * thread that is about to finish into a straggler. */
#define HK__JOIN_REAL_SLICE_SECS 0.001
/* pthread names are limited to 16 bytes with the terminator. */
#define HK__THREAD_NAME_MAX 15

struct hk_coordinator_thread {
  hk_coordinator *coord;
  hk_coordinator_thread *next;
  int done;
  int started; /* by hk_coordinator_start_thread(); tid is valid */
  int joined;  /* pthread_join done or in progress */
  pthread_t tid;
  hk_thread_fn fn;
  void *user;
  char name[]; /* copied */
};

struct hk_coordinator {
  hk_env env;
  pthread_mutex_t mu;
  pthread_cond_t cv; /* broadcast on every stop request and completion */
  int stop;
  hk_code error; /* first non-OK request, HK_OK when none */
  char message[HK_STATUS_MESSAGE_MAX];
  size_t refs;                    /* owner + registered threads not yet done */
  int freed;                      /* the owner called hk_coordinator_free() */
  hk_coordinator_thread *threads; /* in registration order */
  hk_coordinator_thread **tail;
};

/* ---- time helpers -------------------------------------------------------- */

static double real_now(void) {
  struct timespec ts;
  clock_gettime(HK__COND_CLOCK, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Wait on c->cv (c->mu held) for at most `secs` of real time. */
static void timed_wait_locked(hk_coordinator *c, double secs) {
  struct timespec ts;
  double whole;
  double frac;

  clock_gettime(HK__COND_CLOCK, &ts);
  if (secs < 0) secs = 0;
  if (secs > 1e9) secs = 1e9; /* ~31 years: keeps the time_t conversion defined; callers loop anyway */
  frac = modf(secs, &whole);
  ts.tv_sec += (time_t)whole;
  ts.tv_nsec += (long)(frac * 1e9);
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec += 1;
    ts.tv_nsec -= 1000000000L;
  }
  (void)pthread_cond_timedwait(&c->cv, &c->mu, &ts);
}

static int has_custom_sleep(const hk_coordinator *c) { return c->env.clock.sleep != NULL; }

/* ---- lifetime ------------------------------------------------------------ */

hk_code hk_coordinator_new(hk_coordinator **out, const hk_env *env, hk_status *status) {
  hk_coordinator *c;
  hk_env defaults = HK_ENV_INIT;
  pthread_condattr_t attr;
  hk_code rc;

  if (out == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "out: must not be NULL");
  *out = NULL;
  rc = hk_env_check(env, "env", status);
  if (rc != HK_OK) return rc;

  c = hk_env_calloc(env, 1, sizeof(*c));
  if (c == NULL) return hk_status_set(status, HK_RESOURCE_EXHAUSTED, "coordinator: out of memory");
  c->env = env != NULL ? *env : defaults;
  c->error = HK_OK;
  c->refs = 1;
  c->tail = &c->threads;

  if (pthread_mutex_init(&c->mu, NULL) != 0) {
    hk_env_free(env, c);
    return hk_status_set(status, HK_RESOURCE_EXHAUSTED, "coordinator: cannot create its mutex");
  }
  if (pthread_condattr_init(&attr) != 0) {
    pthread_mutex_destroy(&c->mu);
    hk_env_free(env, c);
    return hk_status_set(status, HK_RESOURCE_EXHAUSTED, "coordinator: cannot create its condition");
  }
#ifdef HK__HAVE_CONDATTR_SETCLOCK
  pthread_condattr_setclock(&attr, HK__COND_CLOCK);
#endif
  if (pthread_cond_init(&c->cv, &attr) != 0) {
    pthread_condattr_destroy(&attr);
    pthread_mutex_destroy(&c->mu);
    hk_env_free(env, c);
    return hk_status_set(status, HK_RESOURCE_EXHAUSTED, "coordinator: cannot create its condition");
  }
  pthread_condattr_destroy(&attr);

  *out = c;
  hk_status_clear(status);
  return HK_OK;
}

static void destroy(hk_coordinator *c) {
  hk_env env = c->env;
  hk_coordinator_thread *t = c->threads;

  while (t != NULL) {
    hk_coordinator_thread *next = t->next;
    hk_env_free(&env, t);
    t = next;
  }
  pthread_cond_destroy(&c->cv);
  pthread_mutex_destroy(&c->mu);
  hk_env_free(&env, c);
}

/* Join the started threads not joined yet (only those that finished when
 * only_done), one at a time, without the lock held (a thread needs it to
 * report completion). */
static void join_threads(hk_coordinator *c, int only_done) {
  for (;;) {
    hk_coordinator_thread *t;
    pthread_t tid;
    int found = 0;

    pthread_mutex_lock(&c->mu);
    for (t = c->threads; t != NULL; t = t->next) {
      if (t->started && !t->joined && (!only_done || t->done)) {
        t->joined = 1;
        tid = t->tid;
        found = 1;
        break;
      }
    }
    pthread_mutex_unlock(&c->mu);
    if (!found) return;
    pthread_join(tid, NULL);
  }
}

void hk_coordinator_free(hk_coordinator *c) {
  int last;

  if (c == NULL) return;
  hk_coordinator_request_stop(c, HK_OK, NULL);

  join_threads(c, 0);

  pthread_mutex_lock(&c->mu);
  c->freed = 1;
  c->refs--;
  last = c->refs == 0;
  pthread_mutex_unlock(&c->mu);
  if (last) destroy(c);
}

/* ---- stop requests ------------------------------------------------------- */

void hk_coordinator_request_stop(hk_coordinator *c, hk_code code, const char *message) {
  int ignored = 0;
  hk_code recorded = HK_OK;

  if (c == NULL) return;
  if (message == NULL || message[0] == '\0') message = hk_code_name(code);

  pthread_mutex_lock(&c->mu);
  c->stop = 1;
  if (code != HK_OK) {
    if (c->error == HK_OK) {
      size_t n = strlen(message);
      if (n >= sizeof(c->message)) n = sizeof(c->message) - 1;
      memcpy(c->message, message, n);
      c->message[n] = '\0';
      c->error = code;
    } else {
      ignored = 1;
      recorded = c->error;
    }
  }
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);

  /* Logged after unlocking: a sink may be slow or call back into us. */
  if (ignored)
    hk_env_log(&c->env, HK_LOG_DEBUG, "Coordinator: ignoring stop request with %s (%s): %s is already recorded",
               hk_code_name(code), message, hk_code_name(recorded));
}

int hk_coordinator_should_stop(hk_coordinator *c) {
  int stop;

  if (hk_signal_fired() != 0) return 1;
  if (c == NULL) return 0;
  pthread_mutex_lock(&c->mu);
  stop = c->stop;
  pthread_mutex_unlock(&c->mu);
  return stop;
}

int hk_coordinator_wait_for_stop(hk_coordinator *c, double timeout_secs) {
  int limited;
  double start;

  if (c == NULL) return hk_signal_fired() != 0;
  /* Unset or +inf: no limit. NaN, zero or negative: just test. */
  limited = !(hk_secs_is_unset(timeout_secs) || timeout_secs == HUGE_VAL);
  if (limited && !(timeout_secs > 0)) return hk_coordinator_should_stop(c);

  if (has_custom_sleep(c)) {
    /* An injected sleep paces the wait, and the injected clock measures it,
     * so a mock clock makes the wait instant. */
    start = hk_env_monotonic(&c->env);
    for (;;) {
      double slice = HK__WAIT_SLICE_SECS;
      if (hk_coordinator_should_stop(c)) return 1;
      if (limited) {
        double left = timeout_secs - (hk_env_monotonic(&c->env) - start);
        if (left <= 0) return 0;
        if (left < slice) slice = left;
      }
      hk_env_sleep(&c->env, slice);
    }
  }

  /* Real waits are measured on the condition variable's own clock. */
  start = real_now();
  pthread_mutex_lock(&c->mu);
  for (;;) {
    double slice = HK__WAIT_SLICE_SECS;
    if (c->stop || hk_signal_fired() != 0) {
      pthread_mutex_unlock(&c->mu);
      return 1;
    }
    if (limited) {
      double left = timeout_secs - (real_now() - start);
      if (left <= 0) {
        pthread_mutex_unlock(&c->mu);
        return 0;
      }
      if (left < slice) slice = left;
    }
    timed_wait_locked(c, slice);
  }
}

hk_code hk_coordinator_error(hk_status *out, hk_coordinator *c) {
  hk_code code;

  if (c == NULL) return hk_status_set(out, HK_INVALID_ARGUMENT, "c: coordinator must not be NULL");
  pthread_mutex_lock(&c->mu);
  code = c->error;
  if (out != NULL) {
    out->code = code;
    if (code == HK_OK)
      out->message[0] = '\0';
    else
      memcpy(out->message, c->message, sizeof(out->message));
  }
  pthread_mutex_unlock(&c->mu);
  return code;
}

int hk_coordinator_clean_stop_requested(hk_coordinator *c) {
  int clean;

  if (hk_signal_fired() != 0) return 1;
  if (c == NULL) return 0;
  pthread_mutex_lock(&c->mu);
  clean = c->stop && c->error == HK_OK;
  pthread_mutex_unlock(&c->mu);
  return clean;
}

/* ---- threads ------------------------------------------------------------- */

hk_code hk_coordinator_register_thread(hk_coordinator_thread **token, hk_coordinator *c, const char *name,
                                       hk_status *status) {
  hk_coordinator_thread *t;
  size_t n;

  if (token != NULL) *token = NULL;
  if (c == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "c: coordinator must not be NULL");
  if (name == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "name: must not be NULL");
  if (token == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "token: must not be NULL");

  n = strlen(name);
  t = hk_env_calloc(&c->env, 1, sizeof(*t) + n + 1);
  if (t == NULL)
    return hk_status_set(status, HK_RESOURCE_EXHAUSTED, "coordinator: out of memory registering thread %s", name);
  memcpy(t->name, name, n + 1);
  t->coord = c;

  pthread_mutex_lock(&c->mu);
  *c->tail = t;
  c->tail = &t->next;
  c->refs++;
  pthread_mutex_unlock(&c->mu);

  *token = t;
  hk_status_clear(status);
  return HK_OK;
}

void hk_coordinator_thread_done(hk_coordinator_thread *token) {
  hk_coordinator *c;
  int last;

  if (token == NULL) return;
  c = token->coord;
  pthread_mutex_lock(&c->mu);
  if (!token->done) {
    token->done = 1;
    c->refs--;
  }
  last = c->freed && c->refs == 0;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  /* Not touching c or token past this point unless we hold the last
   * reference: the owner may free it as soon as the lock is released. */
  if (last) destroy(c);
}

static void set_thread_name(const char *name) {
  char buf[HK__THREAD_NAME_MAX + 1];
  size_t n = strlen(name);

  if (n > HK__THREAD_NAME_MAX) n = HK__THREAD_NAME_MAX;
  memcpy(buf, name, n);
  buf[n] = '\0';
#if defined(__GLIBC__) || defined(__FreeBSD__) || defined(__NetBSD__)
  (void)pthread_setname_np(pthread_self(), buf);
#elif defined(__APPLE__)
  (void)pthread_setname_np(buf);
#else
  (void)buf;
#endif
}

static void *thread_main(void *arg) {
  hk_coordinator_thread *t = arg;

  set_thread_name(t->name);
  t->fn(t->user, t->coord);
  hk_coordinator_thread_done(t);
  return NULL;
}

static void unregister(hk_coordinator *c, hk_coordinator_thread *t) {
  hk_coordinator_thread **p;

  pthread_mutex_lock(&c->mu);
  for (p = &c->threads; *p != NULL; p = &(*p)->next) {
    if (*p == t) {
      *p = t->next;
      if (c->tail == &t->next) c->tail = p;
      break;
    }
  }
  c->refs--;
  pthread_mutex_unlock(&c->mu);
  hk_env_free(&c->env, t);
}

hk_code hk_coordinator_start_thread(hk_coordinator *c, const char *name, hk_thread_fn fn, void *user,
                                    hk_status *status) {
  hk_coordinator_thread *t;
  pthread_t tid;
  hk_code rc;
  int err;

  if (c == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "c: coordinator must not be NULL");
  if (name == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "name: must not be NULL");
  if (fn == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "fn: must not be NULL");

  rc = hk_coordinator_register_thread(&t, c, name, status);
  if (rc != HK_OK) return rc;
  t->fn = fn;
  t->user = user;

  err = pthread_create(&tid, NULL, thread_main, t);
  if (err != 0) {
    unregister(c, t);
    return hk_status_set(status, err == EAGAIN ? HK_RESOURCE_EXHAUSTED : HK_INTERNAL,
                         "coordinator: cannot start thread %s (%s)", name, strerror(err));
  }
  /* tid is published under the lock: join and free read it only once
   * `started` is set. */
  pthread_mutex_lock(&c->mu);
  t->tid = tid;
  t->started = 1;
  pthread_mutex_unlock(&c->mu);
  hk_status_clear(status);
  return HK_OK;
}

static int all_done_locked(const hk_coordinator *c) {
  const hk_coordinator_thread *t;

  for (t = c->threads; t != NULL; t = t->next)
    if (!t->done) return 0;
  return 1;
}

/* Append `s` to buf (capacity cap, current length *len), truncating. */
static void append(char *buf, size_t cap, size_t *len, const char *s) {
  size_t n = strlen(s);

  if (*len + 1 >= cap) return;
  if (n > cap - 1 - *len) n = cap - 1 - *len;
  memcpy(buf + *len, s, n);
  *len += n;
  buf[*len] = '\0';
}

hk_code hk_coordinator_join(hk_coordinator *c, double grace_secs, hk_status *status) {
  char names[1024];
  size_t len = 0;
  int stragglers = 0;
  hk_coordinator_thread *t;
  double start;

  if (c == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "c: coordinator must not be NULL");
  if (!(isfinite(grace_secs) && grace_secs >= 0))
    return hk_status_set(status, HK_INVALID_ARGUMENT, "grace_secs must be finite and >= 0, got %g", grace_secs);

  hk_coordinator_request_stop(c, HK_OK, NULL);

  if (has_custom_sleep(c)) {
    start = hk_env_monotonic(&c->env);
    pthread_mutex_lock(&c->mu);
    for (;;) {
      double left;
      if (all_done_locked(c)) break;
      left = grace_secs - (hk_env_monotonic(&c->env) - start);
      if (left <= 0) break;
      timed_wait_locked(c, HK__JOIN_REAL_SLICE_SECS);
      if (all_done_locked(c)) break;
      pthread_mutex_unlock(&c->mu);
      hk_env_sleep(&c->env, left < HK__WAIT_SLICE_SECS ? left : HK__WAIT_SLICE_SECS);
      pthread_mutex_lock(&c->mu);
    }
  } else {
    start = real_now();
    pthread_mutex_lock(&c->mu);
    for (;;) {
      double left;
      if (all_done_locked(c)) break;
      left = grace_secs - (real_now() - start);
      if (left <= 0) break;
      timed_wait_locked(c, left);
    }
  }

  names[0] = '\0';
  for (t = c->threads; t != NULL; t = t->next) {
    if (t->done) continue;
    if (stragglers++ > 0) append(names, sizeof(names), &len, ", ");
    append(names, sizeof(names), &len, t->name);
  }
  pthread_mutex_unlock(&c->mu);

  /* Reap the started threads that finished; stragglers stay joinable for
   * hk_coordinator_free(). */
  join_threads(c, 1);

  if (stragglers > 0) hk_env_log(&c->env, HK_LOG_WARNING, "Coordinator stopped with threads still running: %s", names);
  hk_status_clear(status);
  return HK_OK;
}

/* ---- why training stopped ------------------------------------------------------ */

const char *hk_stop_reason_name(hk_stop_reason reason) {
  switch (reason) {
    case HK_STOP_NONE: return "none";
    case HK_STOP_LAST_STEP: return "last step";
    case HK_STOP_HOOK: return "hook";
    case HK_STOP_SIGNAL: return "signal";
    case HK_STOP_EARLY_STOPPING: return "early stopping";
    case HK_STOP_NON_FINITE: return "non-finite value";
    case HK_STOP_TIME_LIMIT: return "time limit";
    case HK_STOP_ERROR: return "error";
    case HK_STOP_END_OF_INPUT: return "end of input";
    case HK_STOP_REQUESTED: return "requested";
    case HK_STOP_CLOSED: return "closed";
  }
  return "unknown";
}
