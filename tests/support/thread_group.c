/*
 * thread_group — see thread_group.h.
 */
#include "thread_group.h"

#include <string.h>
#include <time.h>

void thread_group_init(thread_group *g, int size) {
  memset(g, 0, sizeof *g);
  g->size = size;
  g->fail_at = -1;
  g->deadline_secs = 60;
  pthread_mutex_init(&g->mu, NULL);
  pthread_cond_init(&g->cv, NULL);
  for (int r = 0; r < size && r < THREAD_GROUP_MAX; r++) {
    g->members[r].g = g;
    g->members[r].rank = r;
  }
}

void thread_group_destroy(thread_group *g) {
  pthread_mutex_destroy(&g->mu);
  pthread_cond_destroy(&g->cv);
}

/* Every rank waits until all arrived, up to the deadline: a wait that
 * passes it breaks the group (the waiters are woken and fail too), since
 * the rank that did not come would meet the others at the wrong barrier.
 * Called with mu held; 0 when all arrived, -1 when the group is broken. */
static int barrier(thread_group *g) {
  unsigned long gen = g->gen;
  struct timespec until;
  if (g->broken) return -1;
  if (++g->arrived == g->size) {
    g->arrived = 0;
    g->gen++;
    pthread_cond_broadcast(&g->cv);
    return 0;
  }
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += g->deadline_secs;
  while (gen == g->gen && !g->broken)
    if (pthread_cond_timedwait(&g->cv, &g->mu, &until) != 0 && gen == g->gen) {
      g->broken = 1;
      pthread_cond_broadcast(&g->cv);
    }
  return gen == g->gen ? -1 : 0;
}

static hk_code broken(thread_group *g, hk_status *st) {
  return hk_status_set(st, HK_DEADLINE_EXCEEDED, "thread group: a rank did not come within %d s (the group is broken)",
                       g->deadline_secs);
}

static int tg_rank(void *user) { return ((thread_group_member *)user)->rank; }
static int tg_size(void *user) { return ((thread_group_member *)user)->g->size; }

/* The call's outcome, the same on every rank: the injected failure. */
static hk_code outcome(thread_group *g, hk_status *st) {
  if (g->fail_at >= 0 && g->calls == g->fail_at)
    return hk_status_set(st, HK_DEADLINE_EXCEEDED, "thread group: collective #%ld did not complete (injected)",
                         g->calls);
  return HK_OK;
}

static hk_code tg_all_gather(void *user, const void *send, void *recv, size_t len, hk_status *st) {
  thread_group_member *m = user;
  thread_group *g = m->g;
  hk_code rc;
  if (len > THREAD_GROUP_SLOT) return hk_status_set(st, HK_INVALID_ARGUMENT, "thread group: %zu bytes per rank", len);
  pthread_mutex_lock(&g->mu);
  if (g->broken) {
    pthread_mutex_unlock(&g->mu);
    return broken(g, st);
  }
  memcpy(g->slots + (size_t)m->rank * len, send, len);
  if (barrier(g) != 0) goto out;
  rc = outcome(g, st);
  if (rc == HK_OK) memcpy(recv, g->slots, (size_t)g->size * len);
  if (barrier(g) != 0) goto out;
  if (m->rank == 0) g->calls++;
  if (barrier(g) != 0) goto out;
  pthread_mutex_unlock(&g->mu);
  return rc;
out:
  pthread_mutex_unlock(&g->mu);
  return broken(g, st);
}

static hk_code tg_broadcast(void *user, void *buf, size_t len, int root, hk_status *st) {
  thread_group_member *m = user;
  thread_group *g = m->g;
  hk_code rc;
  if (len > THREAD_GROUP_SLOT) return hk_status_set(st, HK_INVALID_ARGUMENT, "thread group: %zu bytes", len);
  pthread_mutex_lock(&g->mu);
  if (g->broken) {
    pthread_mutex_unlock(&g->mu);
    return broken(g, st);
  }
  if (m->rank == root) memcpy(g->slots, buf, len);
  if (barrier(g) != 0) goto out;
  rc = outcome(g, st);
  if (rc == HK_OK && m->rank != root) memcpy(buf, g->slots, len);
  if (barrier(g) != 0) goto out;
  if (m->rank == 0) g->calls++;
  if (barrier(g) != 0) goto out;
  pthread_mutex_unlock(&g->mu);
  return rc;
out:
  pthread_mutex_unlock(&g->mu);
  return broken(g, st);
}

static const hk_group_vtable vtable = {HK_GROUP_VTABLE_VERSION, tg_rank, tg_size, tg_all_gather, tg_broadcast};

const hk_group_vtable *thread_group_vtable(void) { return &vtable; }

int thread_group_run(void *(*rank_main)(void *), void *ranks, size_t size, int n) {
  pthread_t t[THREAD_GROUP_MAX];
  int started = 0;
  if (n < 0 || n > THREAD_GROUP_MAX) return -1;
  while (started < n && pthread_create(&t[started], NULL, rank_main, (char *)ranks + (size_t)started * size) == 0)
    started++;
  for (int r = 0; r < started; r++) pthread_join(t[r], NULL);
  return started == n ? 0 : -1;
}
