/*
 * hooked — the file-system interface.
 *
 * Every file the library touches (checkpoint data files, graph
 * descriptions, the checkpoint state file, event files) goes through an hk_fs:
 * a `static const hk_fs_vtable` plus a `void *user`, set in hk_env.fs /
 * hk_env.fs_user. NULL means the built-in POSIX implementation
 * (hk_fs_posix()). Replace it to run checkpoints on another storage, to
 * count or throttle I/O, or — as the test suite does — to inject ENOSPC,
 * EIO, short writes and failures at every step of the write sequence.
 *
 * Rules for implementers:
 * - Every slot is required (hk_env_check() refuses a vtable with a NULL
 *   slot) except the optional pair map/unmap (set both or neither), the
 *   optional write_at of version 2, the optional pair lock/unlock of
 *   version 3 (set both or neither) and the optional write_at_v of version
 *   4 (used only with write_at: ignored without it).
 *   Return HK_OK or an error code with a message naming the path; map
 *   OS errors this way (hk_fs_status_from_errno() does it): ENOSPC/EDQUOT →
 *   RESOURCE_EXHAUSTED; EACCES/EPERM/EROFS → PERMISSION_DENIED;
 *   ENOENT/ENOTDIR → NOT_FOUND; EEXIST → ALREADY_EXISTS; else UNKNOWN. Never
 *   return ABORTED or UNAVAILABLE (they would trigger session recovery).
 * - Slots may be called from the library's background saver thread while
 *   the training thread calls others, on different files: the
 *   implementation must be thread-safe. A large restore also calls read_at
 *   from two threads at once on the same file, at different offsets: each
 *   call reads at the offset it names, as pread() does, whatever the other
 *   does meanwhile.
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

/** One piece of a gathered write (write_at_v): `len` bytes at `data`. */
typedef struct hk_fs_piece {
  const void *data;
  size_t len;
} hk_fs_piece;

/** The most pieces the library passes to one write_at_v call (Linux's
 *  IOV_MAX). */
#define HK_FS_MAX_PIECES 1024

/** A lock held through an hk_fs's lock slot (opaque to the library). */
typedef struct hk_fs_lock hk_fs_lock;

/** What stat reports. */
typedef struct hk_fs_stat {
  int is_dir;    /**< nonzero for a directory */
  uint64_t size; /**< bytes, for a regular file */
  double mtime;  /**< modification time, seconds since the epoch */
} hk_fs_stat;

/** Directory listing callback: one call per entry except "." and "..".
 *  `name` is borrowed for the call. A non-OK return stops the listing and
 *  is returned by `list`. */
typedef hk_code (*hk_fs_list_fn)(void *user, const char *name, hk_status *status);

#define HK_FS_VTABLE_VERSION 4

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
  hk_code (*write)(void *user, hk_fs_file *f, const void *buf, size_t len, size_t *nwritten, hk_status *status);
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
  /* Optional slots, still version 1: NULL means "not supported", and the
   * library then reads the bytes with read_at. Set both or neither. */
  /**
   * Map `len` (> 0) bytes of open file `f` from `offset`, read-only, so
   * that a restore can verify and assign a tensor without copying it out
   * first. On success *addr is the address of the byte at `offset` and
   * *token whatever unmap needs. The library only reads the bytes, and
   * calls unmap exactly once for every successful map, before it closes
   * `f`. Any failure is not an error of the operation: the library reads
   * the same bytes with read_at instead.
   * - Fail when the range is not wholly inside the file as it is now: a
   *   process that touches a mapped page past the end of a file gets
   *   SIGBUS. (A file that shrinks while mapped still does that: checkpoint
   *   files are replaced by rename, never truncated in place.)
   * - The bytes are read twice (checked, then copied out): a file modified
   *   in place while mapped can slip unchecked bytes past the CRC.
   */
  hk_code (*map)(void *user, hk_fs_file *f, uint64_t offset, size_t len, const void **addr, void **token,
                 hk_status *status);
  /** Release a mapping made by map, even when reporting an error (the
   *  library logs the error as a warning and goes on). */
  hk_code (*unmap)(void *user, void *token, hk_status *status);
  /* slots below: version 2 (never read from a version-1 vtable) */
  /**
   * Optional (NULL: not supported). Write up to `len` bytes at `offset` of
   * a file opened by create_excl, as pwrite(): *nwritten may be short (the
   * library loops), the position `write` appends at does not move, and a
   * write past the end extends the file (bytes never written read as
   * zeros). The library uses either write or write_at on one file, never
   * both. With it, a checkpoint's data is written before its header, whose
   * CRCs are then computed while the data is written; without it they take
   * a pass of their own before the file is written (checkpoint-format.md,
   * the same bytes either way).
   */
  hk_code (*write_at)(void *user, hk_fs_file *f, const void *buf, size_t len, uint64_t offset, size_t *nwritten,
                      hk_status *status);
  /* slots below: version 3 (never read from a version-1 or -2 vtable) */
  /**
   * Optional, with unlock (NULL: this file system cannot lock; the
   * checkpoint hooks then write their directory unlocked, which they log at
   * DEBUG). Take an exclusive lock on the file `path`, creating it when
   * missing (mode 0644 before umask), that no other holder — another
   * process, or another lock of this process on the same file — can take
   * until unlock, and that is released by itself when the holding process
   * dies (however it dies), so a lock left by a killed process never blocks
   * the next one. Never waits. Once held, replace the file's content with
   * `holder` (one line describing the holder, NUL-terminated; the library
   * writes "pid <pid> on host <host> since <UTC time> (hooked <version>)\n").
   * - Held by another: FAILED_PRECONDITION, with a message that contains
   *   the file's current content (the other holder's description). Never
   *   ABORTED or UNAVAILABLE (they would trigger session recovery).
   * - UNIMPLEMENTED means "cannot lock here" (a wrapper over a file system
   *   without the slot): the library goes on without a lock, as for NULL.
   * - Any other error: the file system's, naming the path; nothing held.
   * The checkpoint hooks lock "<checkpoint_dir>/hooked.lock".
   */
  hk_code (*lock)(void *user, const char *path, const char *holder, hk_fs_lock **out, hk_status *status);
  /**
   * Remove the lock's file while still holding the lock (so no other
   * holder's file is ever removed), then release the lock and the handle —
   * even when reporting an error (the library logs it as a warning: a file
   * left behind is taken over by the next holder).
   */
  hk_code (*unlock)(void *user, hk_fs_lock *lock, hk_status *status);
  /* slots below: version 4 (never read from a vtable of an older version) */
  /**
   * Optional (NULL: not supported; ignored without write_at). Write the `n`
   * pieces (1 <= n <= HK_FS_MAX_PIECES), one after the other, as
   * consecutive bytes from `offset` of a file opened by create_excl, as
   * pwritev(): one call, which may write fewer bytes than the pieces hold
   * (*nwritten short: the library calls again for the rest); otherwise as
   * write_at. With it, a large checkpoint's tensors go from their own
   * memory to the file in writes of up to 8 MiB, however small each
   * tensor; without it the library first copies small tensors into a
   * buffer of its own and writes that with write_at (the same bytes either
   * way, and a copy of them more).
   */
  hk_code (*write_at_v)(void *user, hk_fs_file *f, const hk_fs_piece *pieces, size_t n, uint64_t offset,
                        size_t *nwritten, hk_status *status);
} hk_fs_vtable;

/**
 * The built-in POSIX implementation (pread/write/pwrite/fsync/rename/...; EINTR is
 * retried; map is mmap(PROT_READ, MAP_SHARED) of the page-aligned range
 * with sequential advice; write_at hands each 8 MiB a file's positional
 * writes complete to the disk at once, on Linux, so the fsync that follows
 * has less to do). Its `user` is ignored.
 * Its lock is flock(LOCK_EX | LOCK_NB) on the file opened with O_CLOEXEC
 * (the kernel releases it when the last descriptor of that open goes: at
 * the process's death, or its children's that inherited it without exec).
 * Once locked it checks that `path` still names the locked file (stat
 * against fstat) and starts again when not, so a holder unlinking the file
 * as it lets go never leaves two holders. The content is then replaced
 * (ftruncate, pwrite; no fsync: it only informs). When the disk has no
 * room for it (ENOSPC, EDQUOT) the lock is kept with an empty file: a
 * resume on a full disk must not fail for a hundred bytes of description.
 * unlock removes the file only while it is still the locked one. On
 * network file systems flock is as good as the client's emulation (Linux
 * NFS maps it onto fcntl locks).
 * @return a static vtable; never NULL.
 * **Threads:** any; the implementation is thread-safe. **Allocates:** its
 * map and its lock allocate a small record with malloc (freed by unmap and
 * unlock).
 */
HK_API const hk_fs_vtable *hk_fs_posix(void);

/**
 * Fill `status` from an OS error number, mapped as hk_fs_vtable says, with the message
 * "<op> <path>: <strerror text>". For implementers of hk_fs.
 * @return the code: RESOURCE_EXHAUSTED, PERMISSION_DENIED, NOT_FOUND,
 *         ALREADY_EXISTS or UNKNOWN (also for errnum 0).
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_fs_status_from_errno(hk_status *status, int errnum, const char *op, const char *path);

/**
 * Write a whole file the way hooked writes its own: to
 * "<path>.tmp-XXXXXX" in the same directory (created exclusively), fsynced,
 * closed, renamed over `path`, then the directory fsynced; on failure the
 * temporary file is removed and `path` is untouched. Through env's file
 * system. For hooks that write files of their own (a profiler's timeline).
 * @param env   borrowed; NULL: defaults (POSIX).
 * @param data  n bytes, borrowed for the call; may be NULL when n is 0.
 * **Errors:** INVALID_ARGUMENT for a NULL path or NULL data with n > 0;
 * the file system's errors, naming the path.
 * **Threads:** any. **Allocates:** yes (the temporary name).
 */
HK_API hk_code hk_fs_write_file_atomic(const hk_env *env, const char *path, const void *data, size_t n,
                                       hk_status *status);

/**
 * Create directory `path` and its missing parents, as the checkpoint hooks
 * do for their directory. An existing directory is OK.
 * @param env  borrowed; NULL: defaults (POSIX).
 * **Errors:** INVALID_ARGUMENT for a NULL or empty path; the file system's
 * errors, e.g. ALREADY_EXISTS when a component is a file.
 * **Threads:** any. **Allocates:** yes.
 */
HK_API hk_code hk_fs_make_dirs(const hk_env *env, const char *path, hk_status *status);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_SYS_FS_H */
