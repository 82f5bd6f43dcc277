/*
 * gate_fs — an hk_fs (hooked/sys/fs.h) that makes a background writer thread
 * deterministic in tests: it forwards every slot to a base hk_fs (a
 * faulty_fs, or hk_fs_posix()) and can hold chosen calls until the test lets
 * them go, reporting when a thread has arrived at a closed gate.
 *
 *   - The write gate holds writes to files whose path (as created) contains
 *     `block` and not `except`, while it is closed. Whether a file is gated is
 *     decided when it is created, against the strings set at that moment:
 *     close the gate before the writer creates the file it should stop in.
 *   - The list gate holds `list` calls while it is closed.
 *
 * With an exempt thread (gate_fs_exempt(), usually the test's own), neither
 * gate ever holds a call made on that thread: only the writer thread waits.
 * Without one, every thread does.
 *
 * A test that needs more (to count some calls, or to force an interleaving)
 * installs a gate_fs_observer: its callbacks run inside the calls, with the
 * gate's mutex held, so they may read and change the gate's fields and wait
 * on its condition variable.
 *
 *   gate_fs g;
 *   gate_fs_init(&g, faulty_fs_vtable(), &ff);
 *   te->env.fs = gate_fs_vtable();
 *   te->env.fs_user = &g;
 *   gate_fs_close(&g, "model.ckpt-1.safetensors", NULL);
 *   ... start the save ...
 *   gate_fs_wait_arrival(&g);   // the writer is held at its first write
 *   ... check what must hold while a write is in flight ...
 *   gate_fs_open(&g);
 *   ...
 *   gate_fs_open(&g);           // in the teardown, before freeing what waits
 *   gate_fs_destroy(&g);
 *
 * The directory lock (lock/unlock) is forwarded to the base and never held
 * at a gate; over a base that cannot lock, lock answers UNIMPLEMENTED (the
 * library then writes unlocked).
 *
 * map/unmap are not offered (NULL), so readers take their read path. Handles
 * are wrapped (calloc). Thread-safe (one mutex); use cmocka only on the main
 * thread.
 */
#ifndef HOOKED_TEST_GATE_FS_H
#define HOOKED_TEST_GATE_FS_H

#include <pthread.h>

#include <hooked/hooked.h>
#include <hooked/sys/fs.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gate_fs gate_fs;

/** Optional callbacks, each called with g->mu held. NULL slots are skipped. */
typedef struct gate_fs_observer {
  /** After a successful create_excl of `path`; the value returned is the
   *  file's tag, passed to `writing` and `syncing` for that file. */
  unsigned (*created)(void *user, gate_fs *g, const char *path);
  /** Before each write to a file, once the write gate has let it through. */
  void (*writing)(void *user, gate_fs *g, unsigned tag);
  /** Before each sync of a file. */
  void (*syncing)(void *user, gate_fs *g, unsigned tag);
} gate_fs_observer;

struct gate_fs {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  const hk_fs_vtable *base;
  void *base_user;
  /* write gate */
  int closed;       /* writes to matching files are held while set */
  char block[128];  /* a matching path contains this ... */
  char except[128]; /* ... and not this ("": no exception) */
  int arrivals;     /* writes that found the write gate closed */
  /* list gate */
  int list_closed;   /* list calls are held while set */
  int list_arrivals; /* list calls that found the list gate closed */
  int has_exempt;
  pthread_t exempt; /* with has_exempt: calls on this thread are never held */
  const gate_fs_observer *obs;
  void *obs_user;
};

/** Start with both gates open over `base` (NULL: hk_fs_posix()). */
void gate_fs_init(gate_fs *g, const hk_fs_vtable *base, void *base_user);
void gate_fs_destroy(gate_fs *g);
/** The vtable to put in hk_env.fs, with the gate_fs as hk_env.fs_user. */
const hk_fs_vtable *gate_fs_vtable(void);

/** Never hold calls made on `thread`. Call before the gate is used. */
void gate_fs_exempt(gate_fs *g, pthread_t thread);
/** 1 when an exempt thread is set and the caller is it. */
int gate_fs_exempt_here(const gate_fs *g);
/** Install `obs` (kept by pointer; NULL removes it). Call before the gate is used. */
void gate_fs_observe(gate_fs *g, const gate_fs_observer *obs, void *user);

/** Close the write gate for files whose path contains `block` and not
 *  `except` (NULL: no exception). */
void gate_fs_close(gate_fs *g, const char *block, const char *except);
/** Close the list gate. */
void gate_fs_close_list(gate_fs *g);
/** Open both gates and wake every held call. */
void gate_fs_open(gate_fs *g);

/** Wait until some write has found the write gate closed (since init). */
void gate_fs_wait_arrival(gate_fs *g);
/** The number of writes that found the write gate closed (since init). */
int gate_fs_arrivals(gate_fs *g);
/** Wait until some list call has found the list gate closed (since init). */
void gate_fs_wait_list_arrival(gate_fs *g);

#ifdef __cplusplus
}
#endif

#endif
