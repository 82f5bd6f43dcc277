/*
 * thread_group — an hk_group (hooked/sys/group.h) over the threads of one
 * process, for tests of sharded checkpoints without MPI: each of `size`
 * threads is one rank and passes its member as the group's user pointer.
 * The collectives meet at a barrier (a mutex, a condition variable and a
 * generation count); a rank can be told to fail its next collectives, as a
 * broken transport would, and every rank then fails that call too (as a
 * deadline would make them).
 *
 * Every wait has a deadline (deadline_secs, 60 by default): a rank that
 * never comes (a regression that skips a collective) fails the waiting
 * ranks' call with DEADLINE_EXCEEDED instead of hanging the test, and the
 * group is broken from then on — every later call fails at once.
 */
#ifndef HOOKED_TEST_THREAD_GROUP_H
#define HOOKED_TEST_THREAD_GROUP_H

#include <pthread.h>
#include <stddef.h>

#include <hooked/hooked.h>
#include <hooked/sys/group.h>

#ifdef __cplusplus
extern "C" {
#endif

#define THREAD_GROUP_MAX 16
#define THREAD_GROUP_SLOT 8192 /* bytes per rank and call */

typedef struct thread_group thread_group;

typedef struct thread_group_member {
  thread_group *g;
  int rank;
} thread_group_member;

struct thread_group {
  int size;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  unsigned long gen;
  int arrived;
  int failing; /* a rank that arrived said the call fails */
  unsigned char slots[THREAD_GROUP_MAX * THREAD_GROUP_SLOT];
  thread_group_member members[THREAD_GROUP_MAX];
  long calls;        /* collectives completed */
  long fail_at;      /* the collective (0-based) that fails on every rank; -1: none */
  int deadline_secs; /* how long a rank waits for the others (60) */
  int broken;        /* a wait passed its deadline: every call fails */
};

/** A group of `size` ranks (1..THREAD_GROUP_MAX); members[r] is rank r's user pointer. */
void thread_group_init(thread_group *g, int size);
void thread_group_destroy(thread_group *g);
/** The vtable every member uses. */
const hk_group_vtable *thread_group_vtable(void);
/** Run rank_main(&ranks[r]) for r in 0..n-1 (ranks: n records of `size`
 *  bytes each), each on a thread of its own, and join them all.
 *  @return 0; -1 when a thread could not be started (the others started
 *  are joined first). */
int thread_group_run(void *(*rank_main)(void *), void *ranks, size_t size, int n);

#ifdef __cplusplus
}
#endif
#endif
