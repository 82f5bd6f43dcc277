/*
 * hooked — built-in hooks. Each constructor returns an hk_hook owned by the
 * caller (hk_hook_free()), which a session borrows.
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
 * Stop when the global step reaches last_step (or the GS after creation +
 * num_steps). Errors (C80): INVALID_ARGUMENT "One of num_steps or last_step
 * must be specified." / "Only one of num_steps or last_step can be
 * specified." / a negative value, named. begin() fails with
 * FAILED_PRECONDITION "Global step should be created to use StopAtStepHook."
 * without a GS (C81). Allocates: at creation only.
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
 * Hold the first run until the global step reaches wait_until_step (C88–C91,
 * D1). Gives up with CANCELLED "Stopped waiting for global step %d: stop
 * requested." when the coordinator (or the signal helper) requests a stop,
 * and with DEADLINE_EXCEEDED "Global step %d not reached within %g secs
 * (current step %d)." after deadline_secs. Logs progress every 1000 steps.
 */
HK_API hk_code hk_global_step_waiter_hook_new(hk_hook **out, const hk_global_step_waiter_options *opts,
                                              hk_status *status);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_HOOKS_H */
