/*
 * hooked — built-in hooks. Each constructor returns an hk_hook owned by the
 * caller (hk_hook_free()), which a session borrows (H11). On failure *out is
 * NULL. Constructors may be called from any thread; the callbacks run on the
 * training thread (H6). With `env` NULL a built-in hook is allocated with the
 * default allocator and logs through the env of the session it serves.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_HOOKS_H
#define HOOKED_HOOKS_H

#include "hooked/common.h"
#include "hooked/sys/hook.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- StopAtStepHook (group I, D8, D13) ------------------------------- */
#define HK_STOP_AT_STEP_OPTIONS_VERSION 1
typedef struct hk_stop_at_step_options {
  uint32_t version;      /**< HK_STOP_AT_STEP_OPTIONS_VERSION */
  const hk_env *env;     /**< NULL: the session's */
  int64_t num_steps;     /**< HK_UNSET_STEPS or >= 0 */
  int64_t last_step;     /**< HK_UNSET_STEPS or >= 0 */
} hk_stop_at_step_options;
#define HK_STOP_AT_STEP_OPTIONS_INIT { HK_STOP_AT_STEP_OPTIONS_VERSION, NULL, HK_UNSET_STEPS, HK_UNSET_STEPS }

/**
 * StopAtStepHook: request a stop once the global step (GS) reaches
 * last_step, or, with num_steps, the GS read in the first
 * after_create_session after begin() plus num_steps (C82, D13; not
 * recomputed on re-creation). It fetches GS in every before_run (C83); in
 * after_run, when the stale GS + 1 >= last_step, it re-reads GS through the
 * raw session and requests a stop iff GS >= last_step (C84). When GS already
 * reaches last_step at a creation, it stops before the first step through
 * the creation context and logs "Global step %d already reached last step
 * %d; stopping before the first step." (D8); so num_steps 0 runs no step.
 * @param opts  required (one of the steps is); borrowed for the call.
 * **Ownership:** *out owned, hk_hook_free().
 * **Errors:** (C80) INVALID_ARGUMENT "One of num_steps or last_step must be
 * specified." (also for a NULL opts), "Only one of num_steps or last_step
 * can be specified.", or a negative value, named; INVALID_ARGUMENT for a
 * version other than HK_STOP_AT_STEP_OPTIONS_VERSION or a bad env;
 * RESOURCE_EXHAUSTED. Later, begin() fails with FAILED_PRECONDITION "Global
 * step should be created to use StopAtStepHook." without a GS (C81), or with
 * C143's INVALID_ARGUMENT for a GS of the wrong dtype or shape.
 * **Threads:** any. **Allocates:** at creation only; its callbacks do not
 * (their GS re-read is a run like any other).
 */
HK_API hk_code hk_stop_at_step_hook_new(hk_hook **out, const hk_stop_at_step_options *opts,
                                        hk_status *status);

/* ---- GlobalStepWaiterHook (group J, D1) ------------------------------ */
#define HK_GLOBAL_STEP_WAITER_OPTIONS_VERSION 1
typedef struct hk_global_step_waiter_options {
  uint32_t version;           /**< HK_GLOBAL_STEP_WAITER_OPTIONS_VERSION */
  const hk_env *env;          /**< NULL: the session's (its clock paces the polls) */
  int64_t wait_until_step;    /**< <= 0: never waits */
  double poll_interval_secs;  /**< finite, > 0; default 0.5 */
  double deadline_secs;       /**< HK_UNSET_SECS (default: none) or finite >= 0 */
} hk_global_step_waiter_options;
#define HK_GLOBAL_STEP_WAITER_OPTIONS_INIT { HK_GLOBAL_STEP_WAITER_OPTIONS_VERSION, NULL, 0, 0.5, HK_UNSET_SECS }

/**
 * GlobalStepWaiterHook: hold the first run after begin() in its before_run
 * until the global step reaches wait_until_step (C88–C91, D1). It polls GS
 * through the raw session every poll_interval_secs, waiting on the
 * coordinator so a stop ends the wait early; logs "Waiting for global step
 * %d before starting training." once per wait and a progress line whenever
 * GS moved more than 1000 since the last one (C90). wait_until_step <= 0
 * never waits. A wait that fails is tried again at the next run (C91).
 * @param opts  borrowed for the call; NULL: HK_GLOBAL_STEP_WAITER_OPTIONS_INIT
 *              (which never waits).
 * **Ownership:** *out owned, hk_hook_free().
 * **Errors:** INVALID_ARGUMENT naming poll_interval_secs (finite, > 0) or
 * deadline_secs (HK_UNSET_SECS or finite >= 0) (D1.1), a wrong version or a
 * bad env; RESOURCE_EXHAUSTED. Later, begin() fails with FAILED_PRECONDITION
 * "Global step should be created to use GlobalStepWaiterHook." (C88), and
 * the held run() returns CANCELLED "Stopped waiting for global step %d: stop
 * requested." when the coordinator has a stop request or the signal helper
 * fired, DEADLINE_EXCEEDED "Global step %d not reached within %g secs
 * (current step %d)." after deadline_secs (D1.2, D1.3), or a GS read error.
 * **Threads:** any. **Allocates:** at creation only.
 */
HK_API hk_code hk_global_step_waiter_hook_new(hk_hook **out, const hk_global_step_waiter_options *opts,
                                              hk_status *status);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_HOOKS_H */
