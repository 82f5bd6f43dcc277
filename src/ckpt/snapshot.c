/*
 * hooked — copy-before-write snapshots (see snapshot.h and
 * hk_snapshot in hooked/sys/executor.h).
 *
 * Memory ordering. An item's bytes are written by the thread that claimed
 * it (hk__snapshot_copy fences its streaming stores), then published by a
 * sequentially consistent store of DONE and a decrement of `remaining`; a
 * thread that finds DONE, or `remaining` at 0, reads it with acquire (or
 * stronger) ordering, so it sees the bytes: the training thread before it
 * overwrites the variable's source, the writer thread before it writes the
 * destination to disk. A waiter announces itself in `waiters` before it
 * takes the mutex and checks; a finisher stores DONE before it reads
 * `waiters` and broadcasts under the mutex when it is not 0 (both seq_cst),
 * so no wake-up is lost and an uncontended copy takes no lock.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L

#include "ckpt/snapshot.h"
#include "ckpt/ckpt_internal.h"

#include <pthread.h>
#include <stdint.h>
#include <stdatomic.h>
#include <string.h>

#if defined(__x86_64__) || defined(_M_X64)
#include <emmintrin.h> /* SSE2: baseline on x86-64 */
#define HAVE_STREAM_COPY 1
#endif

enum { PENDING = 0, COPYING = 1, DONE = 2 };

typedef struct item {
  size_t var;
  const void *src;
  void *dst;
  size_t nbytes;
} item;

struct hk_snapshot {
  hk_env env;
  item *items;         /* n items; written by the training thread while unarmed */
  atomic_uchar *state; /* per item */
  size_t n, cap;
  uint32_t *by_var; /* executor variable index -> item index + 1; 0: not in the snapshot */
  size_t nvars_cap;
  atomic_size_t remaining; /* items not DONE; 0 when nothing is pending */
  atomic_int waiters;
  size_t copied_here; /* training thread only */
  pthread_mutex_t mu;
  pthread_cond_t cv;
};

hk_code hk__snapshot_new(hk_snapshot **out, const hk_env *env, hk_status *st) {
  hk_snapshot *s;

  *out = NULL;
  s = hk_env_calloc(env, 1, sizeof *s);
  if (s == NULL) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory for a checkpoint snapshot");
  hk_env_copy(&s->env, env);
  atomic_init(&s->remaining, 0);
  atomic_init(&s->waiters, 0);
  if (pthread_mutex_init(&s->mu, NULL) != 0) {
    hk_env_free(env, s);
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "cannot create a mutex for a checkpoint snapshot");
  }
  if (pthread_cond_init(&s->cv, NULL) != 0) {
    pthread_mutex_destroy(&s->mu);
    hk_env_free(env, s);
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "cannot create a condition variable for a checkpoint snapshot");
  }
  *out = s;
  return HK_OK;
}

void hk__snapshot_free(hk_snapshot *s) {
  hk_env env;

  if (s == NULL) return;
  env = s->env;
  pthread_cond_destroy(&s->cv);
  pthread_mutex_destroy(&s->mu);
  hk_env_free(&env, s->items);
  hk_env_free(&env, (void *)s->state);
  hk_env_free(&env, s->by_var);
  hk_env_free(&env, s);
}

hk_code hk__snapshot_reset(hk_snapshot *s, size_t n, size_t nvars, hk_status *st) {
  for (size_t i = 0; i < s->n; i++) s->by_var[s->items[i].var] = 0;
  s->n = 0;
  s->copied_here = 0;
  atomic_store(&s->remaining, 0);
  if (n > UINT32_MAX - 1)
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "a checkpoint snapshot of %zu tensors is too large", n);
  if (n > s->cap) {
    item *items = hk_env_calloc(&s->env, n, sizeof *items);
    atomic_uchar *state = hk_env_calloc(&s->env, n, sizeof *state);
    if (items == NULL || state == NULL) {
      hk_env_free(&s->env, items);
      hk_env_free(&s->env, (void *)state);
      return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory for a checkpoint snapshot of %zu tensors", n);
    }
    hk_env_free(&s->env, s->items);
    hk_env_free(&s->env, (void *)s->state);
    s->items = items;
    s->state = state;
    s->cap = n;
  }
  if (nvars > s->nvars_cap) {
    uint32_t *by_var = hk_env_calloc(&s->env, nvars, sizeof *by_var);
    if (by_var == NULL)
      return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory for a checkpoint snapshot over %zu variables",
                           nvars);
    hk_env_free(&s->env, s->by_var);
    s->by_var = by_var;
    s->nvars_cap = nvars;
  }
  return HK_OK;
}

void hk__snapshot_add(hk_snapshot *s, size_t var, const void *src, void *dst, size_t nbytes) {
  item *it = &s->items[s->n];
  it->var = var;
  it->src = src;
  it->dst = dst;
  it->nbytes = nbytes;
  atomic_store_explicit(&s->state[s->n], PENDING, memory_order_relaxed);
  s->n++;
  s->by_var[var] = (uint32_t)s->n;
}

void hk__snapshot_arm(hk_snapshot *s) { atomic_store(&s->remaining, s->n); }

size_t hk__snapshot_copied_here(const hk_snapshot *s) { return s->copied_here; }

/* Copy item i, which the caller claimed, and publish it. */
static void copy_item(hk_snapshot *s, size_t i) {
  const item *it = &s->items[i];
  if (it->nbytes > 0) hk__snapshot_copy(it->dst, it->src, it->nbytes);
  atomic_store(&s->state[i], DONE);
  atomic_fetch_sub(&s->remaining, 1);
  if (atomic_load(&s->waiters) > 0) {
    pthread_mutex_lock(&s->mu);
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
  }
}

static int claim(hk_snapshot *s, size_t i) {
  unsigned char expected = PENDING;
  return atomic_compare_exchange_strong(&s->state[i], &expected, COPYING);
}

/* Wait until item i is DONE (i >= n: until every item is). */
static void wait_done(hk_snapshot *s, size_t i) {
  atomic_fetch_add(&s->waiters, 1);
  pthread_mutex_lock(&s->mu);
  if (i < s->n) {
    while (atomic_load(&s->state[i]) != DONE) pthread_cond_wait(&s->cv, &s->mu);
  } else {
    while (atomic_load(&s->remaining) != 0) pthread_cond_wait(&s->cv, &s->mu);
  }
  pthread_mutex_unlock(&s->mu);
  atomic_fetch_sub(&s->waiters, 1);
}

/* The training thread needs item i copied now: claim and copy it, or wait
 * for the thread that claimed it. */
static void settle(hk_snapshot *s, size_t i) {
  unsigned char state = atomic_load(&s->state[i]);
  if (state == DONE) return;
  if (state == PENDING && claim(s, i)) {
    copy_item(s, i);
    s->copied_here++;
    return;
  }
  wait_done(s, i);
}

void hk__snapshot_run(hk_snapshot *s) {
  for (size_t i = 0; i < s->n && atomic_load(&s->remaining) != 0; i++)
    if (claim(s, i)) copy_item(s, i);
  if (atomic_load(&s->remaining) != 0) wait_done(s, SIZE_MAX);
}

/* ---- the executor's side (hooked/sys/executor.h) -------------------------------------- */

void hk_snapshot_before_write(hk_snapshot *s, size_t index) {
  uint32_t k;
  if (s == NULL || atomic_load(&s->remaining) == 0) return;
  if (index >= s->nvars_cap || (k = s->by_var[index]) == 0) return;
  settle(s, k - 1);
}

void hk_snapshot_complete(hk_snapshot *s) {
  if (s == NULL) return;
  /* From the end: the writer thread copies from the start. */
  for (size_t i = s->n; i-- > 0 && atomic_load(&s->remaining) != 0;) settle(s, i);
}

/* ---- the copy itself (also the Saver's snapshot at the step boundary) ---------- */

/* Snapshot copies this large go around the cache (non-temporal stores):
 * the writer thread reads them much later, and plain stores would both
 * fetch every destination line first and evict the training thread's
 * working set. Smaller ones are cheaper through the cache. */
#define STREAM_COPY_MIN ((size_t)256 << 10)

#ifdef HAVE_STREAM_COPY
#define STREAM_PAGE ((size_t)4096)

/* One 64-byte line; `d` is 64-byte aligned: streaming stores that fill
 * parts of two lines each go out as partial writes, which measured 1.5
 * times slower than memcpy (malloc aligns the buffer to 16 only). */
static void stream_line(unsigned char *d, const unsigned char *s) {
  __m128i a = _mm_loadu_si128((const __m128i *)(const void *)s);
  __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + 16));
  __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(s + 32));
  __m128i e = _mm_loadu_si128((const __m128i *)(const void *)(s + 48));
  _mm_stream_si128((__m128i *)(void *)d, a);
  _mm_stream_si128((__m128i *)(void *)(d + 16), b);
  _mm_stream_si128((__m128i *)(void *)(d + 32), c);
  _mm_stream_si128((__m128i *)(void *)(d + 48), e);
}

/* Four pages at a time, a line of each in turn, reads prefetched (as
 * glibc's large_memcpy_4x): a plain line-by-line streaming loop measured
 * no faster than memcpy, this one as fast as one big memcpy. */
static void stream_copy(unsigned char *d, const unsigned char *s, size_t n) {
  size_t head = (64 - ((uintptr_t)d & 63)) & 63; /* offsets are aligned, the buffer is the caller's */
  memcpy(d, s, head);
  d += head;
  s += head;
  n -= head;
  for (; n >= 4 * STREAM_PAGE; n -= 4 * STREAM_PAGE, d += 4 * STREAM_PAGE, s += 4 * STREAM_PAGE) {
    for (size_t k = 0; k < STREAM_PAGE; k += 64) {
      /* Within each page only: past the last one is past the source. */
      if (k + 128 < STREAM_PAGE)
        for (size_t p = 0; p < 4 * STREAM_PAGE; p += STREAM_PAGE)
          _mm_prefetch((const char *)(s + p + k + 128), _MM_HINT_T0);
      for (size_t p = 0; p < 4 * STREAM_PAGE; p += STREAM_PAGE) stream_line(d + p + k, s + p + k);
    }
  }
  for (; n >= 64; n -= 64, d += 64, s += 64) stream_line(d, s);
  memcpy(d, s, n);
}
#endif

/* Returns nonzero when it streamed: the caller then fences once. */
int hk__snapshot_stream_copy(void *dst, const void *src, size_t n) {
#ifdef HAVE_STREAM_COPY
  if (n >= STREAM_COPY_MIN) {
    stream_copy(dst, src, n);
    return 1;
  }
#endif
  memcpy(dst, src, n);
  return 0;
}

void hk__snapshot_copy(void *dst, const void *src, size_t n) {
#ifdef HAVE_STREAM_COPY
  if (hk__snapshot_stream_copy(dst, src, n)) _mm_sfence();
#else
  (void)hk__snapshot_stream_copy(dst, src, n);
#endif
}
