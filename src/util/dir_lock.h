/*
 * The lock of a checkpoint directory (hk__ names; not API): the POSIX
 * hk_fs's lock and unlock slots, one lock, and the set of them a session
 * holds.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_UTIL_DIR_LOCK_H
#define HOOKED_UTIL_DIR_LOCK_H

#include "util/common.h"

typedef struct hk__dir_lock hk__dir_lock;

/* ---- checkpoint directory locks (dir_lock.c) ------------------------------ */

/** The lock file of a checkpoint directory: one per directory, whatever the
 *  checkpoints' basename or the state file's name. */
#define HK__LOCK_FILE "hooked.lock"

/** The POSIX hk_fs's lock and unlock slots (hooked/sys/fs.h). */
hk_code hk__posix_lock(void *user, const char *path, const char *holder, hk_fs_lock **out, hk_status *st);
hk_code hk__posix_unlock(void *user, hk_fs_lock *lock, hk_status *st);

/**
 * Lock checkpoint directory `dir`: "<dir>/hooked.lock" through env's
 * file system, with this process's description (pid, host, since when, the
 * hooked version). A file system that cannot lock (no lock slot, or
 * UNIMPLEMENTED) gives *out NULL and OK, logged at DEBUG.
 * **Errors:** FAILED_PRECONDITION "Checkpoint directory <dir> is in use by
 * another trainer (<its description>; lock file <path>). ..." when another
 * holds it; the file system's errors; RESOURCE_EXHAUSTED.
 * @param out  owned: hk__dir_lock_release(). NULL on failure.
 */
hk_code hk__dir_lock_take(const hk_env *env, const char *dir, hk__dir_lock **out, hk_status *st);
/** Remove the lock file and release the lock; an unlock error is logged
 *  at WARNING (the file left is taken over by the next holder). NULL: a
 *  no-op. */
void hk__dir_lock_release(hk__dir_lock *lock);

/** The locks a session holds, one per directory ("a/b" and "a/b/" are one
 *  directory): taken by the first of its hooks to ask, released together. */
typedef struct hk__dir_locks {
  struct hk__dir_locks_entry *v;
  size_t n, cap;
} hk__dir_locks;

/** The lock of `dir` in `set`: already held (or known unlockable) → OK;
 *  otherwise hk__dir_lock_take() through `env`, kept in the set (allocated
 *  through `set_env`) when it succeeds. */
hk_code hk__dir_locks_take(hk__dir_locks *set, const hk_env *set_env, const hk_env *env, const char *dir,
                           hk_status *st);
/** Release every lock of the set, in the order taken, and empty it. */
void hk__dir_locks_release(hk__dir_locks *set, const hk_env *set_env);

#endif /* HOOKED_UTIL_DIR_LOCK_H */
