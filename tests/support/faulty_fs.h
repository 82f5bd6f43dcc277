/*
 * faulty_fs — an hk_fs (hooked/sys/fs.h) for fault-injection tests (house
 * style 22c). It forwards every slot to hk_fs_posix(), counts the calls per
 * slot, and can inject, deterministically:
 *   - a failure of the N-th call (0-based) of one slot, or of the N-th call
 *     across all slots, optionally of every call from the N-th on; with an
 *     errno mapped as H9 says (ENOSPC → RESOURCE_EXHAUSTED, EIO → UNKNOWN,
 *     EACCES → PERMISSION_DENIED, ...) or with a given hk_code;
 *   - short writes: at most K bytes per write call;
 *   - a full disk: ENOSPC once B bytes have been written in total (the write
 *     that crosses the limit is short, the next one fails).
 * A failure can be restricted to paths containing a substring (handle slots
 * use the path the file was opened with). write_at (hk_fs version 2) is a
 * write to all of this: counted, failed, shortened and limited under
 * FAULTY_FS_WRITE. lock and unlock (version 3) are slots of their own,
 * forwarded to the POSIX lock (a real flock, so two faulty_fs or a
 * faulty_fs and another process exclude each other), counted and failed
 * like the others and outside the space limit (a lock holds no data the
 * library reads); faulty_fs_no_lock() makes lock answer UNIMPLEMENTED, as
 * a wrapper over a file system that cannot lock does.
 *
 * Counting: faulty_fs_init(), faulty_fs_reset() and every faulty_fs_fail_*()
 * call zero all counters, so "N" counts the calls made after arming. An
 * injected failure does not reach the real file system (nothing is created,
 * written or renamed), except for close, which always releases the real file
 * as the hk_fs contract requires, and then reports the injected error.
 *
 * A fault sweep, for any operation `op` that uses env:
 *
 *   faulty_fs ff;
 *   faulty_fs_init(&ff);
 *   faulty_fs_bind(&ff, &te->env);
 *   for (long n = 0;; n++) {
 *     faulty_fs_fail_errno(&ff, FAULTY_FS_ANY, n, EIO, 0);
 *     rc = op(...);
 *     if (faulty_fs_injected(&ff) == 0) break;   // op made fewer than n+1 calls: done
 *     assert_int_not_equal(rc, HK_OK);             // ... and check the directory
 *     assert_int_equal(faulty_fs_open_handles(&ff), 0);
 *   }
 *   faulty_fs_destroy(&ff);
 *
 * Handles are wrapped (malloc), so faulty_fs_open_handles() tells whether
 * every opened file was closed; mappings too (faulty_fs_open_maps()), and
 * locks (faulty_fs_open_locks()). An injected unlock failure still releases
 * the real lock and removes its file, as close does. An
 * injected map failure maps nothing; an injected unmap failure still
 * releases the real mapping, as close does. Thread-safe (one mutex), like any hk_fs must
 * be. Use cmocka only on the main thread.
 */
#ifndef HOOKED_TEST_FAULTY_FS_H
#define HOOKED_TEST_FAULTY_FS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <hooked/hooked.h>
#include <hooked/sys/fs.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The slots of hk_fs_vtable, in vtable order. */
typedef enum faulty_fs_slot {
  FAULTY_FS_OPEN_READ,
  FAULTY_FS_CREATE_EXCL,
  FAULTY_FS_READ_AT,
  FAULTY_FS_WRITE,
  FAULTY_FS_SIZE,
  FAULTY_FS_SYNC,
  FAULTY_FS_CLOSE,
  FAULTY_FS_SYNC_DIR,
  FAULTY_FS_RENAME,
  FAULTY_FS_UNLINK,
  FAULTY_FS_STAT,
  FAULTY_FS_LIST,
  FAULTY_FS_MKDIR,
  FAULTY_FS_MAP,
  FAULTY_FS_UNMAP,
  FAULTY_FS_LOCK,
  FAULTY_FS_UNLOCK,
  FAULTY_FS_NSLOTS
} faulty_fs_slot;
/** Slot argument meaning "every slot" (counted together). */
#define FAULTY_FS_ANY (-1)

#define FAULTY_FS_PATH_MAX 512

typedef struct faulty_fs {
  pthread_mutex_t mu;
  /* counters (zeroed by init, reset and arming) */
  long calls[FAULTY_FS_NSLOTS]; /* every call, injected ones included */
  long total_calls;
  long injected;          /* failures injected */
  uint64_t bytes_written; /* through write, to the real files */
  long open_handles;      /* opened and not yet closed (not reset) */
  long open_maps;         /* mapped and not yet unmapped (not reset) */
  long open_locks;        /* locked and not yet unlocked (not reset) */
  int no_map;             /* map answers UNIMPLEMENTED, uncounted */
  int no_lock;            /* lock answers UNIMPLEMENTED, uncounted */
  /* the failure rule */
  int fail_slot; /* a faulty_fs_slot or FAULTY_FS_ANY */
  long fail_at;  /* -1: off */
  int fail_forever;
  int fail_errno; /* nonzero: map it (H9); else fail_code */
  hk_code fail_code;
  char match[FAULTY_FS_PATH_MAX]; /* "" : every path */
  long eligible[FAULTY_FS_NSLOTS];
  long eligible_total;
  /* write limits */
  size_t max_write; /* 0: unlimited */
  int space_limited;
  uint64_t space; /* total bytes writable when space_limited */
  /* the last injected failure, for diagnostics */
  int last_slot; /* -1: none yet */
  char last_path[FAULTY_FS_PATH_MAX];
} faulty_fs;

/** No faults, counters zero. */
void faulty_fs_init(faulty_fs *ff);
void faulty_fs_destroy(faulty_fs *ff);
/** The vtable; its `user` must be a faulty_fs*. */
const hk_fs_vtable *faulty_fs_vtable(void);
/** env->fs = the vtable, env->fs_user = ff (env must be version 2). */
void faulty_fs_bind(faulty_fs *ff, hk_env *env);

/** Fail call number n (0-based) of `slot` (or of all slots with
 *  FAULTY_FS_ANY) with errnum, mapped per H9; every call from n on when
 *  `forever`. Zeroes the counters. n < 0 turns failures off. */
void faulty_fs_fail_errno(faulty_fs *ff, int slot, long n, int errnum, int forever);
/** Same, failing with `code` and a message naming the path. */
void faulty_fs_fail_code(faulty_fs *ff, int slot, long n, hk_code code, int forever);
/** Only calls on paths containing `substr` count towards and receive the
 *  failure (NULL or "": all). Copied. Set it before arming. */
void faulty_fs_match(faulty_fs *ff, const char *substr);
/** Every write call writes at most `max` bytes (0: no limit). */
void faulty_fs_short_writes(faulty_fs *ff, size_t max);
/** ENOSPC once `bytes` bytes have been written in total (counted from now). */
void faulty_fs_space(faulty_fs *ff, uint64_t bytes);
/** Remove every fault and limit, zero the counters. */
void faulty_fs_reset(faulty_fs *ff);

/** Calls of `slot` since the counters were last zeroed; FAULTY_FS_ANY: all. */
long faulty_fs_calls(faulty_fs *ff, int slot);
/** Failures injected since the counters were last zeroed. */
long faulty_fs_injected(faulty_fs *ff);
/** Files opened (open_read or create_excl) and not closed. */
long faulty_fs_open_handles(faulty_fs *ff);
/** Mappings made (map) and not released (unmap). */
long faulty_fs_open_maps(faulty_fs *ff);
/** Nonzero: behave as an fs without mapping (map fails UNIMPLEMENTED and
 *  is not counted), so the library's read path runs. Not cleared by reset. */
void faulty_fs_no_map(faulty_fs *ff, int on);
/** Locks taken (lock) and not released (unlock). */
long faulty_fs_open_locks(faulty_fs *ff);
/** Nonzero: behave as a wrapper over a file system that cannot lock (lock
 *  fails UNIMPLEMENTED and is not counted). Not cleared by reset. */
void faulty_fs_no_lock(faulty_fs *ff, int on);
/** "open_read", "write", ... ; "any" for FAULTY_FS_ANY. */
const char *faulty_fs_slot_name(int slot);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_TEST_FAULTY_FS_H */
