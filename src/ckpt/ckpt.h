/*
 * What the checkpoint layer exports to the layers above it (hk__ names;
 * not API): the Saver's internal entry points for the session manager and
 * the checkpoint hooks. The files of ckpt/ share ckpt_internal.h besides;
 * it builds on src/util/ alone.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_CKPT_H
#define HOOKED_CKPT_H

#include "util/common.h"

/* ---- the tensors a save writes ---------------------------------------------------- */

/** One tensor to write: `value.data` is borrowed for the call. */
typedef struct hk__ckpt_tensor {
  const char *name;
  hk_tensor value;
  /** nonzero: a floating tensor that may hold NaN or infinities (its
   *  variable has HK_VAR_NON_FINITE_OK); 0: the writer refuses them. */
  int non_finite_ok;
} hk__ckpt_tensor;

/* ---- best-k retention (saver_recover.c) -------------------------------------------- */

/**
 * Best-k retention of a Saver: from its next managed save on, keep
 * beside the max_to_keep newest the k best checkpoints by the metric each
 * save is given (hk__saver_note_metric), lower first with HK_MONITOR_MIN,
 * higher with HK_MONITOR_MAX; k 0 turns it off. A change re-reads the
 * record at the next save. Call on the Saver's owning thread while no
 * asynchronous write uses it.
 */
void hk__saver_set_best(hk_saver *saver, int64_t k, int mode);
/** The metric of the checkpoint the Saver's next save writes (consumed by
 *  that save; a save with none, or NaN, is never among the best). Same
 *  thread rules as hk__saver_set_best. */
void hk__saver_note_metric(hk_saver *saver, double value);

/**
 * The check-resume mode's retention (HOOKED_CHECK_RESUME keep_all=1, see
 * hooked/hooks.h): from the Saver's next managed save on, every managed
 * checkpoint is kept, as with max_to_keep 0; 0 restores max_to_keep. Same
 * thread rules as hk__saver_set_best.
 */
void hk__saver_set_keep_all(hk_saver *saver, int on);

/* ---- managed names (adopt.c) ------------------------------------------------------ */

/** nonzero when `name` is "<basename>-<digits>" (the managed form of a
 *  save path whose basename is `basename`, zero padding included), the
 *  step in *step (may be NULL); 0 for any other name or a step past
 *  int64. */
int hk__managed_step(const char *name, const char *basename, int64_t *step);

/* ---- saver (saver_save.c, saver_restore.c) ------------------------------------- */

/**
 * Restore from checkpoint directory `dir` with fallback: candidates
 * from the state file, or from a directory scan when the state file
 * is missing (with a WARNING naming the directory), malformed or
 * unreadable; a missing or corrupt one (before or during reading) is
 * skipped with a WARNING naming it and why; a model mismatch is returned at once.
 * On success *restored receives the prefix used (owned, env allocator) and,
 * unless the candidates came from a scan, the Saver adopts dir's managed
 * list. HK_OK with *restored NULL when there is nothing to restore
 * (the scan finds no checkpoint, or no directory): the caller then
 * initializes instead — so NOT_FOUND always means a model mismatch ("Key %s
 * not found in checkpoint %s"); DATA_LOSS when every candidate failed.
 */
hk_code hk__saver_restore_latest(hk_saver *saver, hk_raw_session *rs, const char *dir, char **restored, hk_status *st);

/**
 * *found is 1 when `dir` holds a "<name>-<step>.safetensors"
 * file a directory scan would try, else 0 (a missing directory
 * included). List errors other than NOT_FOUND are returned.
 */
hk_code hk__dir_has_checkpoints(const hk_env *env, const char *dir, int *found, hk_status *st);

/** The prefix hk_saver_save(prefix, saver, rs, save_path, step, ...) would write
 *  ("<save_path>-<step>", "%08d" with pad_step_number; save_path
 *  itself for HK_UNSET_STEPS), allocated through the Saver's env; NULL on
 *  OOM or a NULL argument. */
char *hk__saver_prefix(hk_saver *saver, const char *save_path, int64_t step);

/** The Saver's env (borrowed). */
const hk_env *hk__saver_env(const hk_saver *saver);

/**
 * The asynchronous hook's split save. snapshot_size: total bytes the
 * Saver's variables need (resolving var_list at the first call). snapshot:
 * copy every variable, read through rs, into `buf` (size >= snapshot_size)
 * and fill `tensors` (count = hk__saver_var_count) with views into buf.
 * write: everything hk_saver_save does after reading the variables, from
 * those tensors, except the graph description (HK_SAVE_META is ignored:
 * describing the graph is the executor's, on the training thread); safe on
 * another thread while the training thread makes no other call on this
 * Saver. now: the wall time (hk_env_wall of the
 * Saver's env) read by the caller on the training thread at snapshot time;
 * it is the new checkpoint's timestamp and the "now" of any recovery and
 * clock-reset check in the call, which reads no clock itself
 * (the writer thread calls only the allocator, the log sink and the
 * fs). prefix: as hk_saver_save's, owned by the caller (env allocator).
 */
hk_code hk__saver_snapshot_size(hk_saver *saver, size_t *nbytes, size_t *ntensors, hk_status *st);
hk_code hk__saver_snapshot(hk_saver *saver, hk_raw_session *rs, void *buf, size_t cap, hk__ckpt_tensor *tensors,
                           size_t ntensors, hk_status *st);
hk_code hk__saver_write(hk_saver *saver, const char *save_path, int64_t step, unsigned flags, double now,
                        const hk__ckpt_tensor *tensors, size_t ntensors, char **prefix, hk_status *st);
/**
 * The copy-before-write snapshot's read: views of every variable of
 * the Saver read through rs, without copying: tensors[i] names variable i
 * and views its live value (valid until the next run, assign or close of
 * rs), index[i] is its executor index. ntensors as hk__saver_snapshot.
 */
hk_code hk__saver_snapshot_views(hk_saver *saver, hk_raw_session *rs, hk__ckpt_tensor *tensors, size_t *index,
                                 size_t ntensors, hk_status *st);
#endif /* HOOKED_CKPT_H */
