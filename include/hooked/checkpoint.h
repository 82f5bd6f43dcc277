/*
 * hooked — checkpoints (the on-disk format is docs/checkpoint-format.md's):
 * the Saver, a checkpoint reader, the state file and its helpers, and
 * CRC-32C.
 *
 * Modules: checkpoint (hk_saver, hk_checkpoint_state and
 * hk_checkpoint_reader are modules of their own), crc32c.
 *
 * A checkpoint is addressed by its PREFIX "<dir>/<name>" (e.g.
 * "ckpt/model.ckpt-3000"); its data is the single safetensors file
 * "<prefix>.safetensors", with a CRC-32C per tensor inside the format's own
 * metadata, and an optional "<prefix>.graph.txt" (the executor's own text
 * description of its graph — not a TensorFlow MetaGraphDef, so not named
 * ".meta"). The state file "checkpoint" in the same
 * directory lists the managed checkpoints, TensorFlow-style, with bare names.
 * Every file is written to a temporary name, fsynced, renamed and the
 * directory fsynced, so a crash at any instant leaves the previous
 * state file and every checkpoint it names whole.
 *
 * File access goes through hk_env.fs (hooked/sys/fs.h); paths are passed to
 * it as given (relative paths are relative to the process's working
 * directory).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_CHECKPOINT_H
#define HOOKED_CHECKPOINT_H

#include "hooked/common.h"
#include "hooked/tensor.h"
#include "hooked/sys/executor.h"
#include "hooked/sys/group.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- CRC-32C ------------------------------------------------------------ */

/**
 * Extend a CRC-32C (Castagnoli, reflected, init and final xor 0xFFFFFFFF)
 * with `n` more bytes: start with crc 0; hk_crc32c_extend(0, "123456789", 9)
 * is 0xe3069283. Uses the fastest implementation this CPU has (detected
 * once at run time, named by hk_crc32c_implementation()); every one gives
 * the same result.
 * @param data  may be NULL when n is 0.
 * **Threads:** any. **Errors:** none. **Allocates:** no.
 */
HK_API uint32_t hk_crc32c_extend(uint32_t crc, const void *data, size_t n);
/**
 * @return the name of the implementation hk_crc32c_extend() (and every
 * CRC-32C hooked computes) uses on this CPU; the same string on every
 * call. It is one of:
 * - "vpclmulqdq": x86-64 with AVX-512F and VPCLMULQDQ; buffers of 256
 *   bytes and more are folded 64 bytes per carry-less multiply, shorter
 *   ones go the "sse4.2+pclmul" way.
 * - "sse4.2+pclmul": x86-64 with SSE4.2 and PCLMULQDQ; three streams of
 *   the SSE4.2 crc32 instruction over adjacent blocks, joined with
 *   PCLMULQDQ.
 * - "sse4.2": x86-64 with SSE4.2 alone; one chain of crc32 instructions.
 * - "armv8-crc+pmull": 64-bit ARM (Linux) with the CRC32 extension and
 *   PMULL; three streams of crc32c instructions joined with PMULL.
 * - "armv8-crc": 64-bit ARM (Linux) with the CRC32 extension alone; one
 *   chain of crc32c instructions.
 * - "portable": any other CPU or compiler; slicing-by-8 over tables.
 * Static storage. **Threads:** any.
 * **Allocates:** no.
 */
HK_API const char *hk_crc32c_implementation(void);

/* ---- Saver (group M) ------------------------------------------- */

typedef struct hk_saver hk_saver;

#define HK_SAVER_OPTIONS_VERSION 1
typedef struct hk_saver_options {
  uint32_t version;      /**< HK_SAVER_OPTIONS_VERSION */
  const hk_env *env;     /**< copied; NULL: the executor's env */
  hk_executor *executor; /**< required; borrowed for the Saver's life */
  /** Names of the variables to save and restore, copied. NULL with
   *  count 0: every global variable of the executor, resolved at the first
   *  save or restore. Each must name a variable; none twice. */
  const char *const *var_list;
  size_t nvar_list;
  int64_t max_to_keep; /**< >= 0, default 5; 0 keeps every checkpoint */
  /** HK_UNSET_SECS or 0: off; > 0 and finite: keep one checkpoint per that
   *  many hours forever. */
  double keep_checkpoint_every_n_hours;
  int pad_step_number;         /**< nonzero: "<path>-%08d" */
  const char *latest_filename; /**< copied; NULL: "checkpoint"; a valid name */
  /** 0 (default): a save refuses to write a checkpoint in which a floating
   *  variable (F16, BF16, F32, F64) holds NaN or an infinity, unless the
   *  variable is flagged HK_VAR_NON_FINITE_OK (see hk_saver_save()).
   *  Nonzero: every variable is written as it is (TensorFlow's behaviour). */
  int allow_non_finite;
  /** NULL (the default): every save writes one data file. Non-NULL: the
   *  ranks of `group` save and restore sharded checkpoints together
   *  (checkpoint-format.md "Sharded checkpoints"): hk_saver_save() and
   *  hk_saver_restore() become collective over the group, each rank
   *  writing its shard, rank 0 committing. Borrowed with group_user for
   *  the Saver's life; checked by hk_group_check(). Every rank must see the
   *  checkpoint directory (a shared file system). */
  const hk_group_vtable *group;
  void *group_user;
  /** Names (copied) of Saver variables whose value differs per rank — a
   *  data position, a random state: with a group, each rank saves its own
   *  under "local/<name>" in its shard, and a restore with the same rank
   *  count gives each rank its own back; with another rank count they keep
   *  their current values (WARNING naming each), so the program re-derives
   *  them. Every other variable is replicated: the same on every rank,
   *  saved once, cut across the shards. Each must be a variable of the
   *  Saver; none twice. Without a group they are saved as any variable. */
  const char *const *per_rank_list;
  size_t nper_rank_list;
  /** Names (copied) of Saver variables that are partitioned across the
   *  group (ZeRO-1: an optimizer's moments): each is one-dimensional and
   *  rank r holds block r of a flat global variable of G elements, G the
   *  sum of the ranks' element counts, cut by the rule of hk_group_block()
   *  (hooked/sys/group.h). Each block is saved once, by its rank, as that
   *  rank's slice of the global variable (a variable of G = 0 elements:
   *  rank 0 writes the empty slice), so the files are those of a
   *  replicated variable of G elements; a restore gives each rank the
   *  block of its place in the restoring group, read from the slices that
   *  cover it (only those), whatever rank count saved it, or from a data
   *  file saved without a group. A rank whose element count is not its
   *  block's fails the save or restore on every rank with
   *  FAILED_PRECONDITION naming the variable, the rank and both counts
   *  (a save before any file is written). Each must be a variable of the
   *  Saver (NOT_FOUND), one-dimensional (INVALID_ARGUMENT), not per-rank;
   *  none twice — checked at hk_saver_new() with a var_list, else when the
   *  variables are resolved at the first save or restore. Every rank of a
   *  group must list the same variables (else a save fails on every rank
   *  with FAILED_PRECONDITION). Without a group they are saved and restored
   *  whole, as any variable. */
  const char *const *partitioned_list;
  size_t npartitioned_list;
} hk_saver_options;
#define HK_SAVER_OPTIONS_INIT \
  { HK_SAVER_OPTIONS_VERSION, NULL, NULL, NULL, 0, 5, HK_UNSET_SECS, 0, NULL, 0, NULL, NULL, NULL, 0, NULL, 0 }

/**
 * Initialize options to HK_SAVER_OPTIONS_INIT.
 * @param version  HK_SAVER_OPTIONS_VERSION, the version the program is compiled with.
 * @return HK_OK; INVALID_ARGUMENT (no message: there is no status), writing
 *         nothing, for a NULL opts or a version that is 0 or above
 *         HK_SAVER_OPTIONS_VERSION.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_saver_options_init(hk_saver_options *opts, uint32_t version);

/**
 * Create a Saver.
 * @param out   receives it; NULL on failure.
 * @param opts  required (the executor is); borrowed for the call.
 * **Ownership:** *out owned, hk_saver_free(); the executor is borrowed.
 * **Errors:** INVALID_ARGUMENT naming the option: a negative max_to_keep,
 * a negative/NaN/infinite keep_checkpoint_every_n_hours, a latest_filename
 * that is not a valid name ("'latest_filename' must not contain path
 * components"), a NULL or duplicate var_list, per_rank_list or
 * partitioned_list entry, a name in both per_rank_list and
 * partitioned_list, a group that fails hk_group_check(); NOT_FOUND for a
 * var_list name the executor does not have. With a var_list also:
 * NOT_FOUND for a per_rank_list or partitioned_list name that is not one
 * of its variables, INVALID_ARGUMENT for a partitioned variable that is
 * not one-dimensional (without one, these fail the first save or
 * restore). RESOURCE_EXHAUSTED.
 * **Threads:** any. **Allocates:** yes.
 */
HK_API hk_code hk_saver_new(hk_saver **out, const hk_saver_options *opts, hk_status *status);
/** Free the Saver. @param saver consumed; NULL is a no-op. No call on it may
 *  be in progress. **Threads:** the owner's. **Allocates:** no. */
HK_API void hk_saver_free(hk_saver *saver);

/**
 * The Saver's place in its group (hk_saver_options.group): *rank and *size
 * receive the group's rank and size, 0 and 1 for a Saver without a group
 * (or a NULL saver). Hooks use it to let rank 0 alone do what belongs to
 * the job (the directory lock, events, the graph description).
 * @param rank, size  outputs; either may be NULL.
 * **Threads:** any. **Errors:** none. **Allocates:** no.
 */
HK_API void hk_saver_group_place(const hk_saver *saver, int *rank, int *size);

/** Flags for hk_saver_save(). */
typedef enum hk_save_flags {
  HK_SAVE_DEFAULT = 0,
  HK_SAVE_NO_STATE = 1u << 0, /**< write_state false: unmanaged checkpoint, state file untouched */
  /** also write <prefix>.graph.txt, the executor's text description of its graph, when it has one */
  HK_SAVE_META = 1u << 1
} hk_save_flags;

/**
 * Save every variable of the Saver.
 * With a group (hk_saver_options.group) the save is collective: every rank
 * of the group calls it with the same save_path, step and flags; each
 * writes its shard "<prefix>.shard-<r>-of-<N>.safetensors" (the slices of
 * the replicated variables in its block, its per-rank variables), and rank
 * 0 writes the index "<prefix>.shards", then the state file and retention
 * as below, only once every rank reported its shard durable. A failure on
 * any rank fails the save on every rank, the message "rank <r> of <N>:
 * <that rank's message>", and leaves every checkpoint as it was (the new
 * shards removed); ranks given different steps or save paths fail with
 * FAILED_PRECONDITION naming the rank. The group's collective operations are called from this
 * thread. Only rank 0 keeps the managed list (hk_saver_checkpoints()) and
 * writes the graph description.
 * The prefix is "<save_path>-<step>" ("%08d" with pad_step_number), or
 * save_path itself when step is HK_UNSET_STEPS; the file records `step` as
 * its global_step (without a step: the GS value, or 0 when there is none).
 * Order: stale temporary files of ours removed; the data file (and, with
 * HK_SAVE_META, "<prefix>.graph.txt") written atomically; unless HK_SAVE_NO_STATE, the state file listing
 * the new checkpoint last, then the checkpoints retention drops are deleted
 * (removal errors are logged "Ignoring: %s", not returned). Before the
 * first save into a directory the managed list is recovered from its state
 * file, and the first managed save after each recovery adopts the
 * checkpoints "<basename of save_path>-<step>" (padded or not) that the
 * state file does not list — a save that crashed before its state file, a
 * state file that was lost — except those that may be preserved ones (a
 * step not above the oldest checkpoint the state file lists; any, when no
 * state file lists one and keep_checkpoint_every_n_hours is on): each is
 * logged at INFO and retention handles it from then on. So
 * an unmanaged save (HK_SAVE_NO_STATE) with a step, whose prefix has that
 * form, into a directory where a managed Saver of that basename saves, is
 * adopted by that Saver's next recovery; give unmanaged checkpoints other
 * names (or HK_UNSET_STEPS).
 * @param prefix     may be NULL; receives the prefix, borrowed from the
 *                   Saver until its next save, restore or free.
 * @param rs         borrowed for the call; variables are read through it.
 * @param save_path  "<dir>/<basename>"; the directory must exist.
 * @param flags      hk_save_flags.
 * **Errors:** INVALID_ARGUMENT: NULL arguments, a basename that is not a
 * valid name, "'latest_filename' collides with 'save_path': ...",
 * a checkpoint name equal to latest_filename; NOT_FOUND
 * "Parent directory of %s doesn't exist, can't save."; file-system
 * errors (RESOURCE_EXHAUSTED for a full disk, PERMISSION_DENIED, ...) —
 * after which the directory holds exactly what it held before; executor
 * errors reading a variable; INVALID_ARGUMENT for a floating variable that
 * holds NaN or an infinity, unless allow_non_finite or the variable's
 * HK_VAR_NON_FINITE_OK allows it: the message names the variable, the
 * first such element (its index and value), the file and how to allow it;
 * nothing is renamed into place, so the state file, every checkpoint and
 * retention are as they were (a run that diverged keeps its last finite
 * checkpoints).
 * With a file system that writes at an offset (hk_fs version 2, POSIX) the
 * data file's tensors are written first and its header, which holds their
 * CRCs, last; each CRC is computed while its tensor is written, and each
 * piece of a floating tensor is scanned for NaN and infinities right after
 * its CRC, while it is in cache (no pass of its own). Fsyncs: the
 * data file and its directory, the state file and its directory.
 * **Threads:** the owner's; 8 MiB or more are CRC'd by a second thread the
 * call starts and joins, beside the writes.
 * **Allocates:** yes.
 */
HK_API hk_code hk_saver_save(const char **prefix, hk_saver *saver, hk_raw_session *rs, const char *save_path,
                             int64_t step, unsigned flags, hk_status *status);

/**
 * Fail this rank's part of a save: the rank cannot produce its state for
 * the checkpoint of save_path and step (a listener failed, a snapshot ran
 * out of memory) and says so instead of saving.
 * With a group the call is this rank's part of that collective save, made
 * where it would call hk_saver_save(): it joins the ranks' first exchange
 * with `code` and `message`, so the save fails on every rank before any
 * file is written — each other rank's hk_saver_save() returns `code` with
 * "Saving checkpoint for step <step> into <save_path> failed: rank <r> of
 * <N>: <message>" (the first failing rank's, when several fail), nothing is
 * committed and the previous checkpoint stays the latest — and this call
 * returns that same error. Without it the other ranks would wait in the
 * exchange for this rank, up to the group's deadline (for ever without
 * one). Without a group there is nothing to join: it returns `code` with
 * `message` and touches nothing.
 * A bad save_path or code is still joined as this rank's failure (the
 * other ranks fail with the INVALID_ARGUMENT message) when the Saver is
 * usable, so nobody waits; a NULL saver joins nothing.
 * @param saver      borrowed for the call.
 * @param save_path  the save_path the other ranks pass to hk_saver_save();
 *                   borrowed for the call. Other ranks' differing paths or
 *                   steps are not reported: this rank's failure is.
 * @param step       the step the other ranks save (HK_UNSET_STEPS too).
 * @param code       the failure's code; not HK_OK.
 * @param message    borrowed for the call; NULL or "": the code's name
 *                   (hk_code_name()). Cut to fit a status.
 * **Errors:** always an error: `code` with the message above;
 * INVALID_ARGUMENT "saver is NULL", "save_path is NULL" or "code is HK_OK:
 * ..." (with a group, prefixed as above, since it was joined); the group's
 * error when one of its collectives fails (a deadline), as
 * hk_saver_save() returns it.
 * **Threads:** as hk_saver_save(): the owner's, and with a group the
 * thread the Saver's saves make the group's collective calls from.
 * **Allocates:** yes, with a group (the exchange's records); no without.
 */
HK_API hk_code hk_saver_fail_save(hk_saver *saver, const char *save_path, int64_t step, hk_code code,
                                  const char *message, hk_status *status);

/**
 * Restore every variable of the Saver from checkpoint `path`:
 * a prefix, or the data file's path itself. A prefix with an index
 * "<prefix>.shards" is a sharded checkpoint: every replicated variable is
 * assembled from its slices in every shard (each slice CRC-verified), so a
 * job of any rank count restores it; a per-rank variable comes from
 * "local/<name>" of the rank's own shard when the checkpoint was saved by
 * as many ranks as the group has, else it keeps its value with a WARNING
 * naming it. With a group the call is collective: every rank restores,
 * then every rank returns the first failing rank's error ("rank <r> of
 * <N>: ...") or HK_OK when all succeeded. Logs "Restoring parameters from
 * %s". Every variable is checked against the file before any is assigned;
 * every tensor read is CRC-verified: straight into the variable's own
 * memory when the executor hands it out (hk_raw_session_variable_storage()),
 * the CRC computed in the same pass, else from a checked view that
 * is assigned (optional variables always). Never falls back.
 * A variable flagged HK_VAR_OPTIONAL that the file lacks is not assigned:
 * it keeps its current value, and a WARNING names it and the checkpoint.
 * After a restore, each tensor of the file that no variable of the Saver
 * asks for is named in a line "Checkpoint %s holds %s, which this program
 * does not restore." — a WARNING for a Saver over every global variable
 * (no var_list), DEBUG for one with a var_list.
 * **Errors:** INVALID_ARGUMENT "Can't load save_path when it is None." for
 * a NULL path, or a variable whose dtype or shape differs (naming it, both
 * dtypes or both shapes; optional variables included); NOT_FOUND "The
 * passed save_path is not a valid checkpoint: %s" or "Key %s not found in
 * checkpoint %s" (a variable that is not optional); DATA_LOSS naming
 * the file (and tensor) for a malformed or corrupt file — variables may
 * then hold a mix of old and new values (one read in place, the corrupt
 * tensor's unverified bytes); FAILED_PRECONDITION for a file of a newer
 * format; file-system and executor errors.
 * **Threads:** the owner's; 4 MiB or more are read by this thread and one
 * more the call starts and joins (the file system's read_at is then called
 * from both at once).
 * **Allocates:** yes (the reader, per-piece CRCs, and a read buffer for a
 * variable the executor does not lend its memory for when the file cannot
 * be mapped).
 */
HK_API hk_code hk_saver_restore(hk_saver *saver, hk_raw_session *rs, const char *path, hk_status *status);

/**
 * Restore every variable of the Saver from the newest checkpoint of `dir`
 * that restores, as the session manager does: the state file's newest,
 * then older ones (each skipped one logged "Checkpoint %s is missing or
 * corrupt (%s); trying an older one."), or a directory scan when the state
 * file is missing or malformed; then the Saver adopts dir's managed list.
 * With a group the call is collective and the ranks fall back together: a
 * checkpoint counts as restored only when every rank restored it, so
 * every rank ends on the same one.
 * @param restored  may be NULL; receives the prefix restored ("<dir>/<name>"),
 *                  or NULL when dir holds no checkpoint (nothing was
 *                  restored: the caller initializes); borrowed from the
 *                  Saver until its next save, restore or free.
 * **Errors:** NOT_FOUND or INVALID_ARGUMENT for a model that differs from a
 * checkpoint (no fallback: an older one would differ too); DATA_LOSS naming
 * every candidate and why when none restores; with a group, "rank <r> of
 * <N>: ..." for a failure of another rank; INVALID_ARGUMENT for NULL
 * arguments.
 * **Threads:** the owner's. **Allocates:** yes.
 */
HK_API hk_code hk_saver_restore_latest(const char **restored, hk_saver *saver, hk_raw_session *rs, const char *dir,
                                       hk_status *status);

/**
 * Adopt the managed list of directory `dir` from its state file: listed
 * names whose data file exists become the managed list, in
 * order; timestamps from the file clamped to now, or the files' mtimes;
 * last_preserved_timestamp from the file or now - 1 s; the clock-reset
 * rule. A missing state file gives an empty list; a malformed one an empty
 * list and a WARNING. hk_saver_save() calls this itself before its first
 * save into a directory, and the session manager after restoring from one.
 * Knowing no save path, it adopts no unlisted checkpoint: the next
 * managed hk_saver_save() recovers again and does.
 * **Errors:** INVALID_ARGUMENT for NULL arguments; RESOURCE_EXHAUSTED.
 * **Threads:** the owner's. **Allocates:** yes.
 */
HK_API hk_code hk_saver_recover(hk_saver *saver, const char *dir, hk_status *status);

/**
 * The managed checkpoints, oldest first, as prefixes "<dir>/<name>".
 * @param n  required; receives the count (0 for a NULL saver).
 * @return borrowed array, valid until the next call on the Saver.
 * **Threads:** the owner's. **Allocates:** no.
 */
HK_API const char *const *hk_saver_checkpoints(const hk_saver *saver, size_t *n);
/** @return the Saver's executor (borrowed), NULL for NULL.
 *  **Threads:** the Saver's owner's. **Allocates:** no. */
HK_API hk_executor *hk_saver_executor(const hk_saver *saver);
/** @return the state file name in force (borrowed), NULL for NULL.
 *  **Threads:** the Saver's owner's. **Allocates:** no. */
HK_API const char *hk_saver_latest_filename(const hk_saver *saver);

/* ---- state file ---------------------------------- */

typedef struct hk_checkpoint_state hk_checkpoint_state;

/**
 * Read and parse the state file `<dir>/<latest_filename>`.
 * Entries that are not bare valid names are dropped with a WARNING (and the
 * newest remaining one becomes model_checkpoint_path when needed). A first
 * line starting with "# hooked-crc32c:" (what hooked writes) must be that
 * line exactly and hold the CRC-32C of the rest of the file, or the file is
 * malformed; a file without it (TensorFlow's) is read as it is.
 * @param out              receives the state; NULL on failure.
 * @param env              borrowed for the call; NULL: defaults.
 * @param latest_filename  NULL: "checkpoint".
 * **Ownership:** *out owned, hk_checkpoint_state_free().
 * **Errors:** NOT_FOUND when there is no state file; DATA_LOSS "Invalid
 * checkpoint state loaded from %s: <reason> (line %d)" for a malformed
 * one, and for a file larger than 256 MiB (refused unread, with its size,
 * as "(line 0)"); INVALID_ARGUMENT; file-system errors.
 * **Threads:** any. **Allocates:** yes.
 */
HK_API hk_code hk_checkpoint_state_get(hk_checkpoint_state **out, const hk_env *env, const char *dir,
                                       const char *latest_filename, hk_status *status);
/** Free a state. @param cs consumed; NULL is a no-op.
 *  **Threads:** any thread, one at a time per state. **Allocates:** no. */
HK_API void hk_checkpoint_state_free(hk_checkpoint_state *cs);
/** @return "<dir>/<model_checkpoint_path>" (borrowed from cs), NULL for NULL.
 *  **Threads:** any thread, one at a time per state. **Allocates:** no. */
HK_API const char *hk_checkpoint_state_model_path(const hk_checkpoint_state *cs);
/** @return the number of all_model_checkpoint_paths entries (0 for NULL).
 *  **Threads:** any thread, one at a time per state. **Allocates:** no. */
HK_API size_t hk_checkpoint_state_count(const hk_checkpoint_state *cs);
/** @return entry i ("<dir>/<name>", oldest first; borrowed), NULL when out of range.
 *  **Threads:** any thread, one at a time per state. **Allocates:** no. */
HK_API const char *hk_checkpoint_state_path(const hk_checkpoint_state *cs, size_t i);
/** @return entry i's timestamp, or NaN when the file has none / out of range.
 *  **Threads:** any thread, one at a time per state. **Allocates:** no. */
HK_API double hk_checkpoint_state_timestamp(const hk_checkpoint_state *cs, size_t i);
/** @return last_preserved_timestamp, NaN when the file has none.
 *  **Threads:** any thread, one at a time per state. **Allocates:** no. */
HK_API double hk_checkpoint_state_last_preserved(const hk_checkpoint_state *cs);

/**
 * Write the state file `<dir>/<latest_filename>` atomically,
 * its first line the checksum line "# hooked-crc32c: <8 hex>" (a comment
 * to TensorFlow's parser). The pending-deletion lines of the file it
 * replaces (checkpoint-format.md) are kept, except for names the new file
 * lists, so deletions a Saver has not yet made durable are still finished.
 * @param newest      a checkpoint name or "<dir>/<name>" (required); appended
 *                    to `names` with a log line when missing.
 * @param names       n names or "<dir>/<name>" paths, oldest first.
 * @param timestamps  n wall-clock times, or NULL (no timestamps written).
 * @param last_preserved  finite >= 0.
 * **Errors:** INVALID_ARGUMENT: a name in another directory, an
 * invalid name, a name equal to latest_filename ("Save path '%s'
 * conflicts with path used for checkpoint state.  Please use a different
 * save path."), a duplicate, a file that would be larger than the 256 MiB
 * hk_checkpoint_state_get() reads (some 750,000 255-byte names with
 * timestamps); file-system errors, reading the current file included (a
 * missing or malformed one records nothing and is no error).
 * **Threads:** any. **Allocates:** yes.
 */
HK_API hk_code hk_checkpoint_state_update(const hk_env *env, const char *dir, const char *newest,
                                          const char *const *names, size_t n, const double *timestamps,
                                          double last_preserved, const char *latest_filename, hk_status *status);

/**
 * The newest checkpoint of `dir` that exists and verifies:
 * candidates model_checkpoint_path, then the list newest to oldest, each
 * skipped one logged "Checkpoint %s is missing or corrupt (%s); trying an
 * older one."; a malformed or unreadable state file → directory scan of
 * "<name>-<step>.safetensors" files, newest step first; a missing
 * state file with such files present → the same scan, after a WARNING
 * naming the directory and saying the state file is missing.
 * @param out  receives "<dir>/<name>" owned by the caller (hk_env_free()
 *             with the same env); NULL on failure.
 * **Errors:** NOT_FOUND (no state file and nothing found by a scan);
 * DATA_LOSS naming every candidate and its reason when none verifies;
 * INVALID_ARGUMENT; RESOURCE_EXHAUSTED.
 * **Threads:** any. **Allocates:** yes.
 */
HK_API hk_code hk_checkpoint_latest(char **out, const hk_env *env, const char *dir, const char *latest_filename,
                                    hk_status *status);

/**
 * The best checkpoint of `dir` by its best-checkpoint record
 * "<dir>/<latest_filename>.best", which best-k retention writes (the
 * checkpoint saver hooks' best_k; checkpoint-format.md): the first one it
 * lists. What Keras' restore_best_weights restores.
 * @param out    receives "<dir>/<name>" owned by the caller (hk_env_free()
 *               with the same env); NULL on failure.
 * @param value  may be NULL; receives its metric value.
 * @param latest_filename  NULL: "checkpoint".
 * **Ownership:** *out owned (hk_env_free() with env); the strings given are
 * borrowed for the call.
 * **Errors:** NOT_FOUND "No best-checkpoint record <path> ..." when the
 * directory has no record (no best-k retention saved there, or no ranked
 * value was a number) or the record lists none; DATA_LOSS naming the
 * record and why for a malformed one; INVALID_ARGUMENT for a NULL out or
 * dir or a latest_filename that is not a valid name; file-system errors;
 * RESOURCE_EXHAUSTED.
 * **Threads:** any. **Allocates:** yes.
 */
HK_API hk_code hk_checkpoint_best(char **out, double *value, const hk_env *env, const char *dir,
                                  const char *latest_filename, hk_status *status);

/** @return nonzero iff "<prefix>.safetensors" exists, or the index
 *  "<prefix>.shards" of a sharded checkpoint. **Threads:** any. **Allocates:** no. */
HK_API int hk_checkpoint_exists(const hk_env *env, const char *prefix);
/**
 * Verify checkpoint `prefix` completely: the data file, or a sharded
 * checkpoint's index and every shard it records (each present, of the
 * index's size, header CRC, step and shard count; the slices tiling every
 * variable exactly), every tensor's CRC-32C included.
 * @param prefix  a prefix, or a data file's path.
 * **Errors:** NOT_FOUND when there is no such checkpoint; DATA_LOSS naming
 * the file (and tensor, or shard) and what is wrong; FAILED_PRECONDITION
 * for a format newer than this library; file-system errors.
 * **Threads:** any. **Allocates:** yes.
 */
HK_API hk_code hk_checkpoint_verify(const hk_env *env, const char *prefix, hk_status *status);
/**
 * Remove "<prefix>.safetensors", "<prefix>.graph.txt" and, from older
 * versions, "<prefix>.meta"; for a sharded checkpoint (no data file) its
 * index "<prefix>.shards" and every shard file of that prefix.
 * **Errors:** NOT_FOUND when none of them exists; file-system errors.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_checkpoint_remove(const hk_env *env, const char *prefix, hk_status *status);
/**
 * Modification times of n checkpoints' data files.
 * @param out  n doubles (seconds since the epoch).
 * **Errors:** NOT_FOUND naming the first prefix without a data file.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_checkpoint_mtimes(double *out, const hk_env *env, const char *const *prefixes, size_t n,
                                    hk_status *status);

/* ---- reader (checkpoint-format.md "Reading") ----------------------------- */

typedef struct hk_checkpoint_reader hk_checkpoint_reader;

/**
 * Open a checkpoint: a prefix, or a path ending in ".safetensors". A prefix
 * with no data file but an index "<prefix>.shards" opens the sharded
 * checkpoint whole: the index and every shard are opened and checked
 * against each other (a missing shard, one of another size, header CRC,
 * step or count, slices that do not tile a variable: DATA_LOSS naming it);
 * its entries are the replicated variables, whole, in bytewise name order
 * (per-rank "local/" tensors are in the shards alone; open a shard file for
 * them); read() assembles a variable from its slices, each CRC-checked;
 * its path is the index's, an entry's offset and crc32c are 0 (its bytes
 * lie in several files, each slice with its own CRC). The
 * header is read and validated completely (sizes, dtypes, shapes, offsets,
 * gaps, overlaps, trailing bytes, duplicate names, format, every CRC
 * present); tensor data is read only by hk_checkpoint_reader_read() and
 * hk_checkpoint_reader_verify(). Memory is bounded by the header (at most
 * 100 MiB, and never more than the file holds), never by a declared size.
 * @param out  receives the reader; NULL on failure.
 * **Ownership:** *out owned, hk_checkpoint_reader_free().
 * **Errors:** NOT_FOUND when there is no such file; DATA_LOSS naming the
 * file (and tensor) for anything the format refuses; FAILED_PRECONDITION
 * for a "hooked/<n>" format newer than this library; file-system errors.
 * **Threads:** any. **Allocates:** yes.
 */
HK_API hk_code hk_checkpoint_reader_open(hk_checkpoint_reader **out, const hk_env *env, const char *path,
                                         hk_status *status);
/** Close and free. @param r consumed; NULL is a no-op.
 *  **Threads:** any thread, one at a time per reader. **Allocates:** no. */
HK_API void hk_checkpoint_reader_free(hk_checkpoint_reader *r);
/** @return the data file path (borrowed), NULL for NULL.
 *  **Threads:** any thread, one at a time per reader. **Allocates:** no. */
HK_API const char *hk_checkpoint_reader_path(const hk_checkpoint_reader *r);
/** @return the global_step metadata. **Threads:** any thread, one at a time per reader. **Allocates:** no. */
HK_API int64_t hk_checkpoint_reader_step(const hk_checkpoint_reader *r);
/** @return the number of tensors (0 for NULL).
 *  **Threads:** any thread, one at a time per reader. **Allocates:** no. */
HK_API size_t hk_checkpoint_reader_count(const hk_checkpoint_reader *r);
/** One tensor of a checkpoint. */
typedef struct hk_checkpoint_entry {
  const char *name; /**< borrowed from the reader */
  hk_dtype dtype;
  int32_t rank;
  int64_t dims[HK_MAX_RANK];
  uint64_t offset; /**< of its bytes from the start of the file */
  uint64_t nbytes;
  uint32_t crc32c; /**< the recorded CRC-32C */
} hk_checkpoint_entry;
/**
 * Entry i, tensors in the file's (bytewise name) order.
 * **Errors:** OUT_OF_RANGE for i >= count; INVALID_ARGUMENT.
 * **Threads:** any thread, one at a time per reader. **Allocates:** no.
 */
HK_API hk_code hk_checkpoint_reader_entry(hk_checkpoint_entry *out, const hk_checkpoint_reader *r, size_t i,
                                          hk_status *status);
/** Find a tensor by name. **Errors:** NOT_FOUND "Key %s not found in
 *  checkpoint %s".
 * **Threads:** any thread, one at a time per reader. **Allocates:** no.
 */
HK_API hk_code hk_checkpoint_reader_find(const hk_checkpoint_reader *r, const char *name, size_t *index,
                                         hk_status *status);
/**
 * Read tensor i into `dst` (cap >= its nbytes) and verify its CRC.
 * **Errors:** DATA_LOSS naming the file and tensor (CRC mismatch, file
 * shorter than its header says); INVALID_ARGUMENT (cap too small);
 * file-system errors.
 * **Threads:** the owner's. **Allocates:** no.
 */
HK_API hk_code hk_checkpoint_reader_read(hk_checkpoint_reader *r, size_t i, void *dst, size_t cap, hk_status *status);
/**
 * Read every tensor through a bounded buffer and verify every CRC (of a
 * sharded checkpoint: every tensor of every shard).
 * **Errors:** DATA_LOSS naming the file and the first bad tensor.
 * **Threads:** the owner's. **Allocates:** yes (one buffer of at most 4 MiB).
 */
HK_API hk_code hk_checkpoint_reader_verify(hk_checkpoint_reader *r, hk_status *status);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_CHECKPOINT_H */
