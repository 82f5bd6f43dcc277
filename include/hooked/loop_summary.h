/*
 * hooked — the host loop's summaries from the program's code: the event
 * file a loop's session shares for a directory, and scalars pushed into it
 * at the loop's global step, beside what the hooks write there.
 * hooked/loop.h includes this header; the writer's own calls are in
 * hooked/summary.h.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_LOOP_SUMMARY_H
#define HOOKED_LOOP_SUMMARY_H

#include "hooked/common.h"
#include "hooked/summary.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The host loop (hooked/loop.h). */
typedef struct hk_loop hk_loop;

/**
 * The summary writer the loop's session shares for `logdir`: what the
 * program writes there (scalars, histograms of its arrays through an
 * hk_tensor view, text) goes into one event file with what the hooks write
 * into that directory — the loop's own StepCounterHook when logdir is its
 * summary_dir (by default the checkpoint_dir), a StepCounterHook or
 * SummarySaverHook given output_dir = logdir among the loop's hooks, the
 * checkpoint hook's CHECKPOINT events when logdir is the checkpoint_dir.
 * Writes happen when the program makes them, at the step it gives.
 * @param out     receives the writer; NULL on failure.
 * @param logdir  1 or more bytes, copied; created with its parents at the
 *                first write when missing.
 * **Ownership:** the writer is borrowed until hk_loop_finish(): do not
 * close or free it (the loop's session flushes it when the loop finishes,
 * and frees it with the loop). `logdir` is copied. In a loop over a group
 * every rank gets its writer, and what a rank other than 0 writes through
 * it goes into that rank's own event file: a program that wants one event
 * file per directory writes through it on rank 0 only.
 * **Errors:** INVALID_ARGUMENT for a NULL loop, logdir or out, or an empty
 * logdir; FAILED_PRECONDITION before hk_loop_start() or after
 * hk_loop_finish(); RESOURCE_EXHAUSTED. The loop is not failed by them.
 * **Threads:** the training thread (the writer itself may then be used
 * from any thread). **Allocates:** at the first request for a directory.
 */
HK_API hk_code hk_loop_summary_writer(hk_summary_writer **out, hk_loop *loop, const char *logdir, hk_status *status);

/**
 * Record a value pushed from the program's code: a scalar summary `tag` =
 * `value` at the loop's current global step (hk_loop_global_step()), written
 * into logdir's shared event file at once — not held for a hook's cadence.
 * Called after hk_loop_step_end(), the step is the one the step ended at,
 * where SummarySaverHook writes the summaries of that step; a program that
 * wants a value every n steps calls it every n steps. In a loop over a
 * group, rank 0 writes the job's events: on another rank the call checks
 * logdir, a NULL tag and the loop's state as on rank 0 and returns OK
 * without writing anything (so every rank may make the same calls).
 * @param logdir, tag  as hk_loop_summary_writer() and
 *                hk_summary_writer_scalar(); `value` is written as a float.
 * **Ownership:** logdir and tag are copied; nothing is kept from the call.
 * **Errors:** those of hk_loop_summary_writer() and of
 * hk_summary_writer_scalar() (a bad tag, file-system errors naming
 * the event file). The loop is not failed by them.
 * **Threads:** the training thread. **Allocates:** only when the writer
 * does: recording the same tags step after step allocates nothing
 * after the first time.
 */
HK_API hk_code hk_loop_summary_scalar(hk_loop *loop, const char *logdir, const char *tag, double value,
                                      hk_status *status);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_LOOP_SUMMARY_H */
