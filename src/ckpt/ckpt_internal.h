/*
 * What the files of the checkpoint layer share among themselves (hk__
 * names; not API): the data files, the state file and its records, and
 * the Saver's helpers.
 *
 *   safetensors*.c the data files: the writer (_write), the header's JSON
 *                 parser (_json), the public reader (_read), what they
 *                 share (safetensors.c, safetensors_internal.h)
 *   finite.c      the writer's scan for NaN and infinities
 *   state*.c      the state file: parse (state_parse.c), format
 *                 (state.c), public helpers
 *   pending.c     pending deletions: the state file's, an earlier version's record
 *   best.c        the best-checkpoint record
 *   adopt.c       checkpoints the state file does not list
 *   stale_tmp.c   stale temporary files of a checkpoint directory
 *   saver*.c      hk_saver: options and lifetime (saver.c), the managed
 *                 list (_recover), save (_save), latest_checkpoint and
 *                 restore with fallback (_restore)
 *   snapshot.c    the copy-before-write snapshot (snapshot.h)
 *   shard_*.c, safetensors_shard.c
 *                 sharded checkpoints: the files, the save over a group,
 *                 the restore with any rank count (shard.h)
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_CKPT_CKPT_INTERNAL_H
#define HOOKED_CKPT_CKPT_INTERNAL_H

#include "ckpt/ckpt.h"

/* ---- writing data files (safetensors_write.c) ---------------------------------- */

/** hk__ckpt_write's flags. */
enum {
  /** 8 MiB or more of data: compute the CRCs on a second thread. */
  HK__CKPT_WRITE_THREAD = 1u << 0,
  /** Write NaN and infinities of every tensor (hk_saver_options'
   *  allow_non_finite) instead of refusing them. */
  HK__CKPT_WRITE_NON_FINITE = 1u << 1
};

/**
 * Write "<prefix>.safetensors"-style data file `final_path` atomically per
 * checkpoint-format.md: header (sorted bytewise by name, padded so data
 * starts 64-byte aligned, "__metadata__" with format, global_step, the
 * CRC-32C of global_step's text, "global_step_tensor" = `gs_tensor` when
 * that tensor is among them, an integer scalar holding `step` (NULL: no
 * tensor is the global step), and a CRC-32C per tensor), then the data in
 * the same order. Byte-identical for
 * the same variables and step, whichever way it is written. Names must be
 * unique and non-empty (else INVALID_ARGUMENT); STRING tensors are refused
 * (INVALID_ARGUMENT).
 * With an fs that has write_at (version 2) the data is written first, at
 * its offsets, each tensor's CRC computed while it is written, and the
 * header last; with HK__CKPT_WRITE_THREAD and at least 8 MiB of data the
 * CRCs are computed on a second thread (joined before returning) beside
 * the writes. Without write_at: a CRC pass, then header and data in order.
 * Unless HK__CKPT_WRITE_NON_FINITE, the CRC pass also scans every floating
 * tensor (F16, BF16, F32, F64) that is not non_finite_ok, piece by piece
 * after each piece's CRC: the first NaN or infinity fails the write with
 * INVALID_ARGUMENT naming the file, the tensor, the element and its value
 * before anything is renamed into place (the temporary file is
 * removed). Allocates the header and index arrays.
 */
hk_code hk__ckpt_write(const hk_env *env, const char *final_path, int64_t step, const char *gs_tensor,
                       const hk__ckpt_tensor *tensors, size_t n, unsigned flags, hk_status *st);

/** A metadata member beyond the format's own: key "<key_prefix><key_name>"
 *  (written JSON-escaped), value a string; all borrowed. */
typedef struct hk__ckpt_meta {
  const char *key_prefix;
  const char *key_name;
  const char *value;
} hk__ckpt_meta;

/** What hk__ckpt_write_ex reports of the file it wrote. */
typedef struct hk__ckpt_written {
  uint64_t bytes;         /* the whole file's */
  uint32_t header_crc32c; /* the CRC-32C of its first 8 + N bytes (length and padded header) */
} hk__ckpt_written;

/**
 * hk__ckpt_write with `nextra` more metadata members, written after
 * global_step_tensor and before the CRCs in the order given (a sharded
 * checkpoint's shard keys), and, when `written` is not NULL, the file's size
 * and its header's CRC-32C.
 */
hk_code hk__ckpt_write_ex(const hk_env *env, const char *final_path, int64_t step, const char *gs_tensor,
                          const hk__ckpt_tensor *tensors, size_t n, unsigned flags, const hk__ckpt_meta *extra,
                          size_t nextra, hk__ckpt_written *written, hk_status *st);

/* ---- non-finite values (finite.c) ------------------------------------------ */

/** nonzero for the dtypes whose values can be NaN or infinite: F16, BF16,
 *  F32, F64. */
int hk__dtype_can_be_non_finite(hk_dtype dtype);
/** The index of the first element of data[0, nbytes) (whole elements of
 *  `dtype`) that is NaN or infinite; SIZE_MAX when there is none or the
 *  dtype is not floating. Reads each byte once; allocates nothing. */
size_t hk__first_non_finite(hk_dtype dtype, const void *data, size_t nbytes);
/** "NaN", "Inf" or "-Inf" for a non-finite element of `dtype`. */
const char *hk__non_finite_text(hk_dtype dtype, const void *element);

/* ---- reading data files (safetensors_read.c, safetensors.c) --------------------- */

/**
 * A tensor's bytes, checked against their CRC-32C, for a restore to assign
 * without another copy. The reader maps its whole data region at the first
 * view when the fs can map (a failure to map falls back, logged at DEBUG);
 * else the tensor is read in pieces of at most 1 MiB, each CRC'd while
 * cache-hot, into a scratch buffer the reader keeps. `data` is valid until
 * the next view or hk_checkpoint_reader_free.
 */
typedef struct hk__tensor_view {
  const void *data; /* NULL for an empty tensor */
  size_t nbytes;
} hk__tensor_view;

/** DATA_LOSS naming the file and tensor for a short file or a CRC
 *  mismatch; fs errors as mapped. On failure *v is zeroed. */
hk_code hk__reader_view(hk_checkpoint_reader *r, size_t i, hk__tensor_view *v, hk_status *st);

/** A tensor of the reader (`entry`) to read into the caller's memory
 *  (`dst`, writable, the entry's byte size; NULL only for 0 bytes). */
typedef struct hk__read_target {
  size_t entry;
  void *dst;
} hk__read_target;

/**
 * Read every target tensor straight into its dst, each checked against its
 * CRC-32C: positional reads (the fs's read_at) of 1 MiB pieces in file
 * order, each piece CRC'd right after its read while it is still in the
 * cache, the pieces' CRCs joined per tensor; with `may_use_thread` and at
 * least 4 MiB, two threads take the pieces in turn (the fs's read_at is
 * then called from both at once, on the same file). A file that shrank
 * since it was opened is refused before anything is read into dst.
 * DATA_LOSS naming the file and the tensor for a CRC mismatch (the first in
 * file order) or a short file; every dst may then hold unverified bytes.
 * fs errors as mapped (the earliest failing piece's).
 */
hk_code hk__reader_read_into(hk_checkpoint_reader *r, const hk__read_target *targets, size_t n, int may_use_thread,
                             hk_status *st);

/** The data-file path of a checkpoint reference: `path` itself when it ends
 *  in ".safetensors", else "<path>.safetensors". Allocated through env. */
char *hk__ckpt_data_path(const hk_env *env, const char *path);

/* ---- state file (state_parse.c, state.c) ------------------------------------- */

/** A parsed state file: bare names, oldest first. */
typedef struct hk__state {
  char **names;       /* n owned names (env allocator) */
  double *timestamps; /* n values, or NULL when the file has none */
  size_t n;
  char *model;           /* owned: model_checkpoint_path (a valid name; also the last of names) */
  double last_preserved; /* NaN when absent */
  /* Checkpoints a save dropped whose deletion may not be durable yet
   * (checkpoint-format.md "Pending deletions in the state file"): owned
   * valid names, none listed above; only from a file with its checksum line. */
  char **pending;
  size_t npending;
} hk__state;

/**
 * Parse a state file's text (the grammar is in state_parse.c). `what` names the file in messages.
 * Malformed → DATA_LOSS "Invalid checkpoint state loaded from <what>:
 * <reason> (line %d)". An entry that is not a bare valid name is
 * ignored with a WARNING through env ("Ignoring checkpoint state entry
 * ..."). On failure *out is zeroed.
 */
hk_code hk__state_parse(const hk_env *env, const char *what, const char *text, size_t len, hk__state *out,
                        hk_status *st);
/** Read and parse "<dir>/<latest_filename>"; NOT_FOUND when absent. */
hk_code hk__state_read(const hk_env *env, const char *dir, const char *latest_filename, hk__state *out, hk_status *st);
/** Free what a state holds; zeroes it. NULL is a no-op. */
void hk__state_clear(const hk_env *env, hk__state *s);
/**
 * Write "<dir>/<latest_filename>" atomically: names are bare
 * valid names, the last one is model_checkpoint_path; timestamps may be
 * NULL; `pending` (npending bare valid names, none of them listed, none
 * twice; NULL when 0) become the pending-deletion lines. Refuses an invalid
 * name, and a name equal to latest_filename, with INVALID_ARGUMENT, so it
 * never writes a file its reader would refuse.
 */
hk_code hk__state_write(const hk_env *env, const char *dir, const char *latest_filename, const char *const *names,
                        const double *timestamps, size_t n, double last_preserved, const char *const *pending,
                        size_t npending, hk_status *st);

/** A state file larger than this is refused unread ("line 0"). */
#define HK__STATE_MAX_BYTES ((size_t)256 << 20)

/**
 * The text hk__state_write writes for these arguments, after the
 * same checks; *text is owned (env allocator), NUL-terminated, *len bytes.
 */
hk_code hk__state_format(const hk_env *env, const char *dir, const char *latest_filename, const char *const *names,
                         const double *timestamps, size_t n, double last_preserved, const char *const *pending,
                         size_t npending, char **text, size_t *len, hk_status *st);

/* ---- pending deletions (pending.c) ------------------------------------------------ */

/** The record an earlier version wrote: the state file's name plus this
 *  suffix, in the same directory: "checkpoint.pending-deletions". It is
 *  still finished (hk__pending_finish), never written. */
#define HK__PENDING_SUFFIX ".pending-deletions"

/** The first bytes of a pending-deletion line of the state file. */
#define HK__PENDING_LINE "# hooked-pending-deletion: \""

/** What hk__pending_state_finish leaves for the save that called it. */
typedef struct hk__pending_left {
  /* Recorded names still present (their deletion failed): owned bare
   * names the next state file must record again. */
  char **carry;
  size_t ncarry;
} hk__pending_left;

/**
 * The state file "<dir>/<latest>" as parsed, when it can record pending
 * deletions: NOT_FOUND when it is missing, larger than any state file, or
 * has no checksum line (not written by hooked: its pending-deletion lines
 * are comments, and it is not parsed); a malformed one is DATA_LOSS; read
 * errors are the file system's.
 */
hk_code hk__pending_state_read(const hk_env *env, const char *dir, const char *latest, hk__state *out, hk_status *st);

/** Free what a hk__pending_left holds; zeroes it. */
void hk__pending_left_clear(const hk_env *env, hk__pending_left *left);

/**
 * Before a save's own work: delete the checkpoints the current state file
 * records as pending deletion (its pending-deletion lines) that it does not
 * list and whose name is not the basename of one of `keep` (nkeep paths:
 * the Saver's own list) —
 * "<name>.safetensors", "<name>.graph.txt" and "<name>.meta", those that
 * exist — with no fsync: the data file's commit that follows fsyncs the
 * directory before any state file that stops recording them is written.
 * When `target` (the bare name the save writes) is among them, the
 * deletions are made durable (a directory fsync) and the state file is
 * rewritten without them before returning, so no state file recording
 * `target` outlives the save that re-creates it. A deletion that fails
 * (other than NOT_FOUND) is logged at WARNING and its name returned in
 * left->carry. A missing or malformed state file, or one without the
 * checksum line (not hooked's), deletes nothing. The
 * save fails (before writing anything) on RESOURCE_EXHAUSTED, when
 * `must_read` and the state file exists but cannot be read, or when the
 * rewrite fails.
 */
hk_code hk__pending_state_finish(const hk_env *env, const char *dir, const char *latest_filename, const char *target,
                                 char *const *keep, size_t nkeep, int must_read, hk__pending_left *left, hk_status *st);

/**
 * Before a save's own work: finish the deletions a record an earlier
 * version left (its interrupted save) lists, fsync the directory (when one was deleted), then
 * remove the record durably (one more directory fsync; none of this when
 * no record exists). Only while the state file is the
 * very one the record was written for (its CRC-32C), and never a name that
 * state file lists; a malformed record (WARNING), or one for another
 * state file (INFO), deletes nothing and is removed: what a record says is
 * never a reason to fail. The save fails (before writing anything) only
 * when memory runs out, or when a record that may exist cannot be read,
 * removed or its removal made durable — the save must not write what such
 * a record could later delete. No record: one open attempt, nothing else.
 */
hk_code hk__pending_finish(const hk_env *env, const char *dir, const char *latest_filename, hk_status *st);

/* ---- best-k retention: the record (best.c) ------------------------------------------ */

/** The best-checkpoint record's name is the state file's name plus this
 *  suffix, in the same directory: "checkpoint.best". */
#define HK__BEST_SUFFIX ".best"

/** A parsed best-checkpoint record: bare names, best first. */
typedef struct hk__best {
  char **names; /* n owned names (env allocator) */
  double *metrics;
  size_t n;
  int mode; /* hk_monitor_mode */
} hk__best;

/**
 * Read "<dir>/<latest_filename>.best". NOT_FOUND when absent; another
 * read error → its code, the message naming the record; a record that
 * breaks checkpoint-format.md's rules (or is larger than 64 MiB) sets
 * *malformed and a reason in `why`, with HK_OK and nothing in *out.
 * RESOURCE_EXHAUSTED. *out is owned (hk__best_clear).
 */
hk_code hk__best_read(const hk_env *env, const char *dir, const char *latest_filename, hk__best *out, char *why,
                      size_t cap, int *malformed, hk_status *st);
/** Write the record atomically (its own directory fsync): `names`
 *  (prefixes or bare names of valid names, never latest_filename) with
 *  their metrics (not NaN), best first. */
hk_code hk__best_write(const hk_env *env, const char *dir, const char *latest_filename, int mode,
                       const char *const *names, const double *metrics, size_t n, hk_status *st);
/** Free what a record holds; zeroes it. NULL is a no-op. */
void hk__best_clear(const hk_env *env, hk__best *b);

/* ---- checkpoints the state file does not list (adopt.c) ---------------------------- */

/**
 * Adopt into a recovered managed list (paths "<dir>/<name>", stamps, n: the
 * caller's, replaced on success) every "<base>-<digits>.safetensors"
 * regular file of `dir` that `state` (the state file as read; NULL when it
 * is missing or unreadable) does not list, except those that may be
 * preserved ones: a step not above the oldest "<base>-<digits>" the state
 * file lists, or, when it lists none, all of them if `preserves` (the
 * Saver's keep_checkpoint_every_n_hours is on; logged at WARNING). Each
 * goes before the first listed entry of a greater step, its timestamp its
 * mtime (at most now), logged at INFO. A missing directory adopts nothing;
 * other list errors and RESOURCE_EXHAUSTED are returned with the list
 * untouched.
 */
hk_code hk__adopt_into(const hk_env *env, const char *dir, const char *base, double now, int preserves,
                       const hk__state *state, char ***paths, double **stamps, size_t *n, hk_status *st);

/* ---- stale temporary files (stale_tmp.c) ----------------------------------------- */

/**
 * Before a save writes anything: remove "<F>.tmp-XXXXXX" entries of `dir`
 * whose final name F no live writer but the save's own trainer can be
 * writing: `latest_filename`, its pending-deletion record (latest_filename +
 * HK__PENDING_SUFFIX), its best-checkpoint record (latest_filename +
 * HK__BEST_SUFFIX), "graph.txt" (or, as named before, "graph.pbtxt"), and
 * "<X>.safetensors", "<X>.graph.txt" or "<X>.meta" where X is `own` (the
 * save's checkpoint name; NULL: none) or has the managed form
 * "<basename>-<digits>" (`basename` NULL: none). Another checkpoint's
 * temporary is kept: it may be an unmanaged save of another process in
 * progress. Failures to remove are logged at WARNING, not returned; a
 * listing error is returned.
 */
hk_code hk__remove_stale_tmp(const hk_env *env, const char *dir, const char *latest_filename, const char *basename,
                             const char *own, hk_status *st);

/* ---- the snapshot's copy (saver_save.c) -------------------------------------------- */

/** The snapshot's copy: memcpy, or streaming stores for large copies then a
 *  store fence, so a later release store publishes the bytes. Any thread. */
void hk__snapshot_copy(void *dst, const void *src, size_t n);
/** hk__snapshot_copy without its fence: @return nonzero when it used
 *  streaming stores, after which the caller fences once (_mm_sfence) before
 *  another thread reads the copies. */
int hk__snapshot_stream_copy(void *dst, const void *src, size_t n);

#endif /* HOOKED_CKPT_CKPT_INTERNAL_H */
