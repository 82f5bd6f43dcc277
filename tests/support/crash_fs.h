/*
 * crash_fs — an hk_fs (hooked/sys/fs.h) that records every operation and can
 * tell, for any prefix of what it recorded, which directory trees a POWER
 * LOSS at that point could leave behind (contract D4, D6.5).
 *
 * Why forward AND model. Every slot is forwarded to hk_fs_posix() on a real
 * directory (the "root"), so what the library reads back while it runs —
 * stat, list, read_at, the errors of create_excl and rename — is real POSIX
 * behaviour, not a second implementation that could disagree with the one
 * hooked ships with. What survives a power loss cannot be observed on a
 * running kernel, so that part is a model, replayed from the log: the
 * recording keeps every mutation in the order the calls took effect (one
 * mutex held across the forwarded call and its log entry, so operations of
 * several threads — the training thread and the asynchronous hook's writer —
 * form one total order). file and directory fsyncs are NOT forwarded: they
 * are only events of the model (the real files are test scaffolding, their
 * durability is irrelevant, and skipping the real fsyncs keeps the
 * exploration fast).
 *
 * The power-loss model (strict; POSIX promises no more):
 *   - Files. A file's durable content is what it held at its last fsync
 *     (sync slot); a file never fsynced has none. For a file written since
 *     (by `write`, which appends, or by `write_at`, which writes at an
 *     offset, version 2 of the vtable) the crash state picks one of four
 *     outcomes:
 *       LOST  the unsynced writes are gone (the file is empty if never synced),
 *       TORN  the unsynced writes survive in order up to half of their bytes
 *             (the write at the cut in part): a torn append is a prefix,
 *       ZERO  the size survived but every byte an unsynced write landed on
 *             reads as zero (metadata before data: ext4 data=writeback, XFS),
 *       FULL  everything written survived.
 *     With at most CRASH_DATA_INODES such files in the tree every combination
 *     is explored, otherwise the four outcomes are applied to all of them alike.
 *     hk_fs has no truncate, so files never shrink.
 *   - Names. create_excl, rename, unlink and mkdir change a directory; such a
 *     change is durable only once that directory is fsynced (sync_dir) after
 *     it. An fsync of a file makes its data durable, never its name. At a
 *     crash, the changes not yet made durable ("pending") persist or not
 *     INDEPENDENTLY: with at most `subset_bits` pending changes every subset
 *     is explored (so a rename may persist while the create before it does
 *     not, or an unlink persist while an earlier rename does not); with more,
 *     the in-order outcomes (every prefix of the pending changes, the model of
 *     a journaling file system) plus "everything but one". A change applied
 *     on its own keeps its meaning: rename(a, b) of inode i makes b name i
 *     (and removes a if a still names i); unlink(a) of inode i removes a only
 *     if it names i. A directory whose own entry did not persist takes its
 *     whole subtree with it.
 *   - Renames across directories are not modeled (hooked renames within one
 *     directory, D4.1); they are forwarded and counted in
 *     crash_fs_unmodeled(), and so are mutations outside the root.
 *   - Lies, to test the checker: with lie_sync a file fsync returns OK and
 *     makes nothing durable; with lie_sync_dir the same for directories.
 *
 * A crash point c (0 <= c <= crash_fs_nops()) means "the first c recorded
 * operations happened, the rest did not". crash_fs_explore() visits, for
 * every crash point, every state the model allows there, each distinct tree
 * once (a 64-bit hash of paths, kinds and contents, and of the last mark
 * before the crash point, since a check depends on it), and counts them.
 * crash_state_materialize() writes one into a fresh directory, mirroring the
 * root. The state before any operation is the root as it was when
 * crash_fs_new() read it, taken as wholly durable.
 *
 * Marks. crash_fs_mark(cf, v) records a marker operation (it changes
 * nothing): a test marks the moment a save was acknowledged, and a crash
 * state reports the last mark before its crash point, so a checker can
 * demand that an acknowledged save survive (D4.5: "a save that returned is
 * never lost").
 *
 * The directory lock (lock/unlock, hk_fs version 3) is forwarded to the
 * POSIX lock and not recorded: it only keeps a second trainer out while one
 * runs, a crash (or a kill) leaves its file or not without consequence (the
 * next trainer takes it over), and the library reads nothing from it. So
 * files named CRASH_LOCK_FILE are left out of the model altogether: out of
 * the tree read at crash_fs_new(), of crash_fs_check_model()'s comparison,
 * and of every crash state.
 *
 * map/unmap are not offered (NULL): readers take their read_at path. Handles
 * are wrapped (malloc). Thread-safe (one mutex). Test support only: on an
 * unexpected OS error outside the hk_fs slots (reading the root, writing a
 * materialized state) it prints and aborts.
 */
#ifndef HOOKED_TEST_CRASH_FS_H
#define HOOKED_TEST_CRASH_FS_H

#include <stddef.h>
#include <stdint.h>

#include <hooked/hooked.h>
#include <hooked/sys/fs.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct crash_fs crash_fs;

typedef enum crash_op_kind {
  CRASH_OP_CREATE,   /**< create_excl of `path`: a new inode */
  CRASH_OP_WRITE,    /**< `len` bytes written to `ino`: appended, or at `offset` (write_at) */
  CRASH_OP_SYNC,     /**< fsync of `ino` */
  CRASH_OP_CLOSE,    /**< close of `ino` (changes nothing durable) */
  CRASH_OP_SYNC_DIR, /**< fsync of directory `path` */
  CRASH_OP_RENAME,   /**< `path` -> `path2`, moving `ino` */
  CRASH_OP_UNLINK,   /**< `path`, which named `ino` */
  CRASH_OP_MKDIR,    /**< `path`: a new directory inode */
  CRASH_OP_MARK      /**< crash_fs_mark(): `mark`, nothing changes */
} crash_op_kind;

/** One recorded operation. Paths are relative to the root ("" is the root). */
typedef struct crash_op {
  crash_op_kind kind;
  int ino; /**< the inode concerned, -1 when none */
  char *path;
  char *path2;         /**< rename: the target */
  unsigned char *data; /**< write: the bytes written */
  size_t len;
  int lied;       /**< sync / sync_dir that made nothing durable */
  int64_t mark;   /**< CRASH_OP_MARK: the value given */
  int64_t offset; /**< write: the offset of a write_at, -1 for an append */
  int thread;     /**< 0, 1, ...: threads numbered in order of their first operation */
} crash_op;

#define CRASH_NO_MARK INT64_MIN
/** The checkpoint directory's lock file (H58), outside the model. */
#define CRASH_LOCK_FILE "hooked.lock"
/** Default bounds of crash_fs_explore(). */
#define CRASH_SUBSET_BITS 6
#define CRASH_DATA_INODES 2

/** Start recording over the existing directory `root` (its tree is read
 *  now and taken as durable). Never NULL (aborts). */
crash_fs *crash_fs_new(const char *root);
/** Free the log and the model. NULL is a no-op. Every handle must be closed. */
void crash_fs_free(crash_fs *cf);
/** The vtable; its `user` must be a crash_fs*. */
const hk_fs_vtable *crash_fs_vtable(void);
/** env->fs = the vtable (without write_at after crash_fs_append_only()),
 *  env->fs_user = cf (env must be version 2). */
void crash_fs_bind(crash_fs *cf, hk_env *env);
/** Offer no write_at slot (version 2 of hk_fs_vtable), so the library
 *  appends every file; takes effect at the next crash_fs_bind(). */
void crash_fs_append_only(crash_fs *cf, int on);
/** From now on, file fsyncs (lie_sync) and/or directory fsyncs (lie_sync_dir)
 *  report success and make nothing durable. */
void crash_fs_lie(crash_fs *cf, int lie_sync, int lie_sync_dir);
/** Record a marker with value v. */
void crash_fs_mark(crash_fs *cf, int64_t v);

/** The root as given (borrowed). */
const char *crash_fs_root(const crash_fs *cf);
/** Recorded operations so far, and operation i (borrowed; valid until free). */
size_t crash_fs_nops(const crash_fs *cf);
const crash_op *crash_fs_op(const crash_fs *cf, size_t i);
/** "rename ck/a -> ck/b" etc. into buf. @return buf */
char *crash_fs_op_describe(const crash_fs *cf, size_t i, char *buf, size_t cap);
/** Mutations the model does not cover (outside the root, across directories). */
long crash_fs_unmodeled(const crash_fs *cf);
/** Files opened and not closed. */
long crash_fs_open_handles(const crash_fs *cf);
/** Nonzero when relative path `rel` was in the root at crash_fs_new() or
 *  was created, renamed to or made (mkdir) by a recorded operation. */
int crash_fs_known_name(const crash_fs *cf, const char *rel);
/** The content `rel` had at crash_fs_new() (borrowed), NULL when it was not
 *  a file then. */
const unsigned char *crash_fs_initial(const crash_fs *cf, const char *rel, size_t *len);
/** The content of the file operation i concerns (its `ino`), as written
 *  before operation i (malloc; free()). NULL for a directory or no inode. */
unsigned char *crash_fs_content_at(const crash_fs *cf, size_t i, size_t *len);
/**
 * Self-check of the recording: replay every operation with everything
 * durable and compare with the real tree under the root (names, kinds,
 * contents). @return 0 when equal; else -1 with the first difference in msg.
 */
int crash_fs_check_model(const crash_fs *cf, char *msg, size_t cap);

/* ---- crash states ---------------------------------------------------------- */

typedef struct crash_state crash_state;

typedef struct crash_explore_opts {
  int subset_bits;   /**< every subset of up to this many pending changes (0: CRASH_SUBSET_BITS) */
  int data_inodes;   /**< every combination of data outcomes for up to this many files (0: CRASH_DATA_INODES) */
  int no_data_modes; /**< nonzero: only LOST and FULL (halves the work) */
} crash_explore_opts;

typedef struct crash_explore_stats {
  size_t points;   /**< crash points visited (nops + 1) */
  size_t variants; /**< states the model produced, duplicates included */
  size_t distinct; /**< distinct (tree, last mark) pairs handed to the visitor */
} crash_explore_stats;

/** Visitor: return 0 to go on, nonzero to stop the exploration. */
typedef int (*crash_visit_fn)(void *user, const crash_state *cs);

/** Visit every distinct crash state of the recording (see the model above).
 *  The recording must be quiescent (no call in progress). `opts` may be NULL. */
void crash_fs_explore(const crash_fs *cf, const crash_explore_opts *opts, crash_visit_fn fn, void *user,
                      crash_explore_stats *stats);

/** The crash point: ops [0, point) happened. */
size_t crash_state_point(const crash_state *cs);
/** The value of the last mark before the crash point, CRASH_NO_MARK if none. */
int64_t crash_state_mark(const crash_state *cs);
/** A one-line description: point, the last operation, lost changes, data outcomes. */
const char *crash_state_describe(const crash_state *cs);
/** Write the tree into the existing empty directory `dest`. Aborts on an OS error. */
void crash_state_materialize(const crash_state *cs, const char *dest);
/** Number of entries (files and directories) of the tree, and entry i. */
size_t crash_state_count(const crash_state *cs);
const char *crash_state_entry(const crash_state *cs, size_t i, int *is_dir, const unsigned char **data, size_t *len);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_TEST_CRASH_FS_H */
