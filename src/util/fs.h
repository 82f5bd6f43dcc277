/*
 * The file system every layer writes and reads through (hk__ names; not
 * API): an env's hk_fs resolved once, thin wrappers that make every
 * failure name its path, atomic files, bounded whole-file reads and
 * mkdir -p.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_UTIL_FS_H
#define HOOKED_UTIL_FS_H

#include "util/common.h"

/* ---- file system (fs.c; the POSIX one in fs_posix.c) -------------------------- */

/** An env's file system, resolved once: vt is never NULL. */
typedef struct hk__fs {
  const hk_fs_vtable *vt;
  void *user;
  const hk_env *env; /* borrowed: for allocation and logging; never NULL */
} hk__fs;

/** Resolve env->fs (POSIX when NULL). `env` NULL: defaults. */
void hk__fs_init(hk__fs *fs, const hk_env *env);

/** What a slot returned, made what the library promises of file-system
 *  errors: a code other than ABORTED or UNAVAILABLE (those become UNKNOWN,
 *  so that a disk error never triggers session recovery), with a message naming `path`,
 *  copied from `local` into `st`. @return the code. */
hk_code hk__fs_result(hk_code rc, hk_status *local, hk_status *st, const char *op, const char *path);

/* Thin wrappers: call the slot and make sure a non-OK code comes with a
 * message naming the path (implementations may forget). */
hk_code hk__fs_open_read(const hk__fs *fs, const char *path, hk_fs_file **out, hk_status *st);
hk_code hk__fs_read_full(const hk__fs *fs, hk_fs_file *f, const char *path, void *buf, size_t len, uint64_t offset,
                         size_t *nread, hk_status *st); /* loops until len or EOF */
hk_code hk__fs_size(const hk__fs *fs, hk_fs_file *f, const char *path, uint64_t *size, hk_status *st);
hk_code hk__fs_close(const hk__fs *fs, hk_fs_file *f, const char *path, hk_status *st);
hk_code hk__fs_create_excl(const hk__fs *fs, const char *path, hk_fs_file **out, hk_status *st);
/** One write call; *nwritten is at most len. */
hk_code hk__fs_write(const hk__fs *fs, hk_fs_file *f, const char *path, const void *buf, size_t len, size_t *nwritten,
                     hk_status *st);
/** The optional write_at slot (version 2): nonzero when the fs has
 *  one; hk__fs_write_at is UNIMPLEMENTED otherwise. One call, like write. */
int hk__fs_has_write_at(const hk__fs *fs);
hk_code hk__fs_write_at(const hk__fs *fs, hk_fs_file *f, const char *path, const void *buf, size_t len, uint64_t offset,
                        size_t *nwritten, hk_status *st);
hk_code hk__fs_sync(const hk__fs *fs, hk_fs_file *f, const char *path, hk_status *st);
/** The optional write_at_v slot (version 4, only with write_at): nonzero
 *  when the fs has one; hk__fs_write_at_v is UNIMPLEMENTED otherwise. One
 *  call of 1 to HK_FS_MAX_PIECES pieces, like write_at. */
int hk__fs_has_write_at_v(const hk__fs *fs);
hk_code hk__fs_write_at_v(const hk__fs *fs, hk_fs_file *f, const char *path, const hk_fs_piece *pieces, size_t n,
                          uint64_t offset, size_t *nwritten, hk_status *st);
/** POSIX write_at's early writeback (writeback.c): start writing out to the
 *  disk the 8 MiB windows of descriptor fd that the write of [offset,
 *  offset + len) completed (Linux sync_file_range; a no-op elsewhere). */
void hk__start_writeback(int fd, uint64_t offset, size_t len);
/** The optional map slot: UNIMPLEMENTED when the fs has none. On failure
 *  *addr and *token are NULL. */
hk_code hk__fs_map(const hk__fs *fs, hk_fs_file *f, const char *path, uint64_t offset, size_t len, const void **addr,
                   void **token, hk_status *st);
hk_code hk__fs_unmap(const hk__fs *fs, void *token, const char *path, hk_status *st);
hk_code hk__fs_stat(const hk__fs *fs, const char *path, hk_fs_stat *out, hk_status *st);
hk_code hk__fs_unlink(const hk__fs *fs, const char *path, hk_status *st);
hk_code hk__fs_list(const hk__fs *fs, const char *path, hk_fs_list_fn fn, void *fn_user, hk_status *st);
hk_code hk__fs_sync_dir(const hk__fs *fs, const char *path, hk_status *st);
hk_code hk__fs_rename(const hk__fs *fs, const char *from, const char *to, hk_status *st);
/** nonzero when `path` exists (stat succeeds) and is not a directory. */
int hk__fs_is_file(const hk__fs *fs, const char *path);

/* ---- atomic files (atomic_file.c) --------------------------------------------- */

/**
 * A file written atomically: created as "<final>.tmp-XXXXXX" (six
 * random [A-Za-z0-9], exclusive, retried on ALREADY_EXISTS), appended to,
 * then committed: fsync, close, rename over final, fsync of the directory.
 * Any failure removes the temporary file (best effort). Write errors are
 * sticky: after one, write() returns it again and commit() fails with it.
 */
typedef struct hk__atomic_file {
  hk__fs fs;
  hk_fs_file *f;    /* NULL once closed */
  char *final_path; /* owned (fs.env allocator) */
  char *tmp_path;   /* owned */
  char *dir;        /* owned: directory of final_path ("." when none) */
  hk_code error;    /* sticky */
  hk_status error_status;
  uint64_t written;
  /* Set by the caller before commit: skip the directory fsync after the
   * rename, because the caller's next step fsyncs the same directory before
   * anything depends on the new name (the pending-deletion record). */
  int defer_dir_sync;
} hk__atomic_file;

hk_code hk__atomic_begin(hk__atomic_file *af, const hk_env *env, const char *final_path, hk_status *st);
/** Append all of buf, looping over short writes (a write of 0 bytes is an
 *  UNKNOWN error naming the file). */
hk_code hk__atomic_write(hk__atomic_file *af, const void *buf, size_t n, hk_status *st);
/** Write all of buf at `offset` through the fs's write_at (the caller
 *  checked hk__fs_has_write_at), looping over short writes; errors are
 *  sticky as for hk__atomic_write. Never mixed with it on one file. */
hk_code hk__atomic_write_at(hk__atomic_file *af, const void *buf, size_t n, uint64_t offset, hk_status *st);
/** Write all of the `n` pieces (1 to HK_FS_MAX_PIECES), one after the
 *  other, from `offset` through the fs's write_at_v (the caller checked
 *  hk__fs_has_write_at_v), looping over short writes; `pieces` is
 *  consumed (its entries are advanced past what was written). Errors as
 *  hk__atomic_write_at. */
hk_code hk__atomic_write_at_v(hk__atomic_file *af, hk_fs_piece *pieces, size_t n, uint64_t offset, hk_status *st);
/** fsync, close, rename, fsync dir; frees the struct's strings either way. */
hk_code hk__atomic_commit(hk__atomic_file *af, hk_status *st);
/** Close and unlink the temporary file; frees the strings. Safe after commit. */
void hk__atomic_abort(hk__atomic_file *af);
/** nonzero when `name` (a bare name) is "<F>.tmp-XXXXXX" as
 *  hk__atomic_begin() names the temporary file of a final name F (not
 *  empty), with *final_len set to F's length. */
int hk__atomic_tmp_name(const char *name, size_t *final_len);
/** begin + write + commit. */
hk_code hk__write_file_atomic(const hk_env *env, const char *path, const void *data, size_t n, hk_status *st);

/* ---- whole files and directories (fs.c) ------------------------------------- */

/**
 * Read a whole small file, NUL-terminated, into an allocation of env.
 * A file larger than `max` bytes → OUT_OF_RANGE naming it (nothing read).
 * @param out  owned (hk_env_free) on success; NULL on failure.
 */
hk_code hk__read_file(const hk_env *env, const char *path, size_t max, char **out, size_t *len, hk_status *st);

/** mkdir -p through the fs; an existing directory is OK, an existing
 *  non-directory is FAILED_PRECONDITION naming it. Every level it creates
 *  is made durable: its parent is fsynced before the next level is
 *  made, so one sync_dir per directory created, none when all exist. */
hk_code hk__mkdirs(const hk_env *env, const char *path, hk_status *st);

#endif /* HOOKED_UTIL_FS_H */
