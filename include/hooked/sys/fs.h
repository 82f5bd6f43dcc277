/*
 * hooked — the file-system interface (contract H9).
 *
 * Every file the library touches (checkpoint data files, meta files, the
 * checkpoint state file, graph.pbtxt, event files) goes through an hk_fs:
 * a `static const hk_fs_vtable` plus a `void *user`, set in hk_env.fs /
 * hk_env.fs_user. NULL means the built-in POSIX implementation
 * (hk_fs_posix()). Replace it to run checkpoints on another storage, to
 * count or throttle I/O, or — as the test suite does — to inject ENOSPC,
 * EIO, short writes and failures at every step of the write sequence.
 *
 * Rules for implementers:
 * - Every slot is required (hk_env_check() refuses a vtable with a NULL
 *   slot). Return HK_OK or an error code with a message naming the path; map
 *   OS errors as H9 says (hk_fs_status_from_errno() does it): ENOSPC/EDQUOT →
 *   RESOURCE_EXHAUSTED; EACCES/EPERM/EROFS → PERMISSION_DENIED;
 *   ENOENT/ENOTDIR → NOT_FOUND; EEXIST → ALREADY_EXISTS; else UNKNOWN. Never
 *   return ABORTED or UNAVAILABLE (they would trigger session recovery).
 * - Slots may be called from the library's background saver thread while
 *   the training thread calls others, on different files: the
 *   implementation must be thread-safe.
 * - A `hk_fs_file *` is the implementation's own handle; the library never
 *   looks inside it and closes every handle it opened exactly once.
 *
 * Stability: as every header under hooked/sys/ (see sys/hook.h).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_SYS_FS_H
#define HOOKED_SYS_FS_H

#include "hooked/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** An open file of an hk_fs implementation (opaque to the library). */
typedef struct hk_fs_file hk_fs_file;

/** What stat reports. */
typedef struct hk_fs_stat {
  int is_dir;        /**< nonzero for a directory */
  uint64_t size;     /**< bytes, for a regular file */
  double mtime;      /**< modification time, seconds since the epoch */
} hk_fs_stat;

/** Directory listing callback: one call per entry except "." and "..".
 *  `name` is borrowed for the call. A non-OK return stops the listing and
 *  is returned by `list`. */
typedef hk_code (*hk_fs_list_fn)(void *user, const char *name, hk_status *status);

#define HK_FS_VTABLE_VERSION 1

typedef struct hk_fs_vtable {
  uint32_t version; /**< HK_FS_VTABLE_VERSION */
  /* slots below: version 1 */
  /** Open an existing file for reading. */
  hk_code (*open_read)(void *user, const char *path, hk_fs_file **out, hk_status *status);
  /** Create a new file for writing, failing with ALREADY_EXISTS when the
   *  name exists (O_CREAT|O_EXCL, mode 0644 before umask). */
  hk_code (*create_excl)(void *user, const char *path, hk_fs_file **out, hk_status *status);
  /** Read up to `len` bytes at `offset`; *nread < len only at end of file. */
  hk_code (*read_at)(void *user, hk_fs_file *f, void *buf, size_t len, uint64_t offset, size_t *nread,
                     hk_status *status);
  /** Append up to `len` bytes; *nwritten may be short (the library loops). */
  hk_code (*write)(void *user, hk_fs_file *f, const void *buf, size_t len, size_t *nwritten,
                   hk_status *status);
  /** Size of an open file. */
  hk_code (*size)(void *user, hk_fs_file *f, uint64_t *size, hk_status *status);
  /** Make the file's data durable (fsync). */
  hk_code (*sync)(void *user, hk_fs_file *f, hk_status *status);
  /** Close and release the handle, even when it reports an error. */
  hk_code (*close)(void *user, hk_fs_file *f, hk_status *status);
  /** Make a directory's entries durable (fsync of the directory). */
  hk_code (*sync_dir)(void *user, const char *path, hk_status *status);
  /** Atomically replace `to` with `from` (POSIX rename). */
  hk_code (*rename)(void *user, const char *from, const char *to, hk_status *status);
  /** Remove a file. NOT_FOUND when there is none. */
  hk_code (*unlink)(void *user, const char *path, hk_status *status);
  /** Stat a path (following links). NOT_FOUND when there is none. */
  hk_code (*stat)(void *user, const char *path, hk_fs_stat *out, hk_status *status);
  /** Call `fn` for each entry of a directory, in no particular order. */
  hk_code (*list)(void *user, const char *path, hk_fs_list_fn fn, void *fn_user, hk_status *status);
  /** Create one directory level (mode 0755 before umask); ALREADY_EXISTS
   *  when the name exists. */
  hk_code (*mkdir)(void *user, const char *path, hk_status *status);
} hk_fs_vtable;

/**
 * The built-in POSIX implementation (pread/write/fsync/rename/...; EINTR is
 * retried). Its `user` is ignored.
 * @return a static vtable; never NULL.
 * **Threads:** any; the implementation is thread-safe. **Allocates:** its
 * open_read/create_excl allocate a small handle with malloc.
 */
HK_API const hk_fs_vtable *hk_fs_posix(void);

/**
 * Fill `status` from an OS error number as H9 maps it, with the message
 * "<op> <path>: <strerror text>". For implementers of hk_fs.
 * @return the code: RESOURCE_EXHAUSTED, PERMISSION_DENIED, NOT_FOUND,
 *         ALREADY_EXISTS or UNKNOWN (also for errnum 0).
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_fs_status_from_errno(hk_status *status, int errnum, const char *op, const char *path);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_SYS_FS_H */
