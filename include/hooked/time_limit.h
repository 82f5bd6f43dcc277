/*
 * hooked — TimeLimitHook: stop training after a wall-clock duration, with
 * the final checkpoint (PyTorch Lightning's Timer callback).
 *
 * A batch job has a time limit; a run that is killed at it loses everything
 * since its last checkpoint. The hook asks the session (or the host loop)
 * to stop cleanly once the run has lasted `duration_secs`: the step in
 * progress completes, the session's normal end of run writes the final
 * checkpoint (CheckpointSaverHook's end(), the loop's finish), and the stop
 * reason is HK_STOP_TIME_LIMIT (hk_session_stop_reason(),
 * hk_loop_stop_reason()).
 *
 *     hk_time_limit_options to = HK_TIME_LIMIT_OPTIONS_INIT;
 *     to.duration_secs = 3.5 * 3600;        // leave the job 30 min of a 4 h limit
 *     hk_hook *limit = NULL;
 *     hk_time_limit_hook_new(&limit, &to, &st);
 *     // pass it in the loop's or the session's hooks; free it after them
 *
 * The clock starts at the hook's begin() (the session's construction, the
 * loop's start), so a resumed job has its own full duration; it is the
 * monotonic clock of the hook's env (the session's when env is NULL), read
 * once per step in after_run. For a signal a batch system sends before its
 * limit (Slurm's --signal=USR1@120), see hk_signal_install_set() and the
 * loop's stop_signals instead.
 *
 * Written against the public headers only, as a program's own hook would be.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_TIME_LIMIT_H
#define HOOKED_TIME_LIMIT_H

#include "hooked/common.h"
#include "hooked/hook.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HK_TIME_LIMIT_OPTIONS_VERSION 1
/** Options of hk_time_limit_hook_new(). */
typedef struct hk_time_limit_options {
  uint32_t version;  /**< HK_TIME_LIMIT_OPTIONS_VERSION */
  const hk_env *env; /**< copied; NULL: the session's (its monotonic clock, its log) */
  /** Required: finite and > 0 seconds of the run after which it stops. */
  double duration_secs;
} hk_time_limit_options;
#define HK_TIME_LIMIT_OPTIONS_INIT \
  { HK_TIME_LIMIT_OPTIONS_VERSION, NULL, HK_UNSET_SECS }

/**
 * Initialize options to HK_TIME_LIMIT_OPTIONS_INIT.
 * @param version  HK_TIME_LIMIT_OPTIONS_VERSION, the version the program is
 *                 compiled with.
 * @return HK_OK; INVALID_ARGUMENT (no message: there is no status), writing
 *         nothing, for a NULL opts or a version that is 0 or above
 *         HK_TIME_LIMIT_OPTIONS_VERSION.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_time_limit_options_init(hk_time_limit_options *opts, uint32_t version);

/**
 * TimeLimitHook: at the first after_run at which the run has lasted at
 * least duration_secs since the hook's begin(), it logs INFO "Time limit of
 * %g s reached after %g s at global step %d; stopping." and requests a
 * clean stop with reason HK_STOP_TIME_LIMIT and that sentence as the
 * detail. Nothing is fetched; a step costs one clock read.
 * @param out   receives the hook; NULL on failure.
 * @param opts  borrowed for the call; required (duration_secs has no
 *              default).
 * **Ownership:** *out owned: hk_hook_free(), after the session or loop that
 * runs it.
 * **Errors:** INVALID_ARGUMENT naming the option: NULL out or opts, a bad
 * version or env, a duration_secs that is unset, not finite or <= 0;
 * RESOURCE_EXHAUSTED.
 * **Threads:** any; its callbacks on the training thread.
 * **Allocates:** at creation only; a step allocates nothing.
 */
HK_API hk_code hk_time_limit_hook_new(hk_hook **out, const hk_time_limit_options *opts, hk_status *status);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_TIME_LIMIT_H */
