/*
 * hooked — EarlyStoppingHook: stop training when a monitored value has
 * stopped improving (Keras' EarlyStopping, TensorFlow's
 * stop_if_no_decrease_hook), with its state kept in every checkpoint so a
 * resumed run counts on where it stopped. hooked/hooks.h includes this
 * header; the host loop runs the hook as one of its own with
 * hk_loop_add_early_stopping() (hooked/loop.h).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_EARLY_STOPPING_H
#define HOOKED_EARLY_STOPPING_H

#include "hooked/common.h"
#include "hooked/hook.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Elements of an EarlyStoppingHook's state variable: an F64 vector, zero
 *  (a fresh state) until the hook's first evaluation. Its layout, for
 *  tools: [0] evaluations so far, [1] the best value, [2] its global step
 *  (-1: none), [3] evaluations since then without improvement, [4] the
 *  global step of the last evaluation (-1: none), [5] the mode (0 min,
 *  1 max). */
#define HK_EARLY_STOPPING_STATE_SIZE 6

#define HK_EARLY_STOPPING_OPTIONS_VERSION 1
typedef struct hk_early_stopping_options {
  uint32_t version;  /**< HK_EARLY_STOPPING_OPTIONS_VERSION */
  const hk_env *env; /**< NULL: the session's (its sink logs) */
  /**
   * Required; copied. The value to watch: a tensor name the executor
   * resolves ("val_loss:0" of a graph, a host loop's registered array
   * "val_loss"), one number of any float or integer dtype, fetched through
   * the raw session after the runs that evaluate — or, with `reported`,
   * only the name messages give the values hk_early_stopping_report()
   * hands in.
   */
  const char *monitor;
  /** Nonzero: the program reports the values (hk_early_stopping_report()),
   *  for one that evaluates outside its graph; 0 (default): fetched. */
  int reported;
  hk_monitor_mode mode; /**< default HK_MONITOR_MIN: lower is better */
  /** An improvement must beat the best by more than this: finite, >= 0;
   *  default 0. */
  double min_delta;
  /** Evaluations without improvement tolerated: >= 0, default 0; the
   *  evaluation that makes them max(patience, 1) stops (as in Keras and
   *  Lightning, 0 and 1 both stop at the first one). */
  int64_t patience;
  /** A fetched monitor is evaluated after each run that brings the global
   *  step to a new multiple of this: HK_UNSET_STEPS (every step) or >= 1.
   *  Not with `reported` (a reported value is one evaluation). */
  int64_t every_n_steps;
  /**
   * Copied; NULL (default): the state lives in the hook only and a restart
   * starts over. Given: the name of an F64 variable of shape
   * [HK_EARLY_STOPPING_STATE_SIZE], checkpointed (not local) and zero at
   * first, which keeps the best value, its step and the count of
   * evaluations without improvement in every checkpoint: the hook reads it
   * at each session creation (after the restore) and assigns it through the
   * raw session after each evaluation. A host loop registers it with
   * hk_loop_add_early_stopping() (hooked/loop.h); a graph creates it, e.g.
   * hk_graph_variable() with dtype HK_DTYPE_F64, dims
   * {HK_EARLY_STOPPING_STATE_SIZE}, a constant 0 initializer and flags
   * HK_VAR_NON_FINITE_OK (its best value is +-Inf while no evaluation has
   * improved, which a checkpoint refuses without the flag; add
   * HK_VAR_OPTIONAL with external_data for checkpoints older than it).
   */
  const char *state;
} hk_early_stopping_options;
#define HK_EARLY_STOPPING_OPTIONS_INIT \
  { HK_EARLY_STOPPING_OPTIONS_VERSION, NULL, NULL, 0, HK_MONITOR_MIN, 0.0, 0, HK_UNSET_STEPS, NULL }

/**
 * Initialize options to HK_EARLY_STOPPING_OPTIONS_INIT.
 * @param version  HK_EARLY_STOPPING_OPTIONS_VERSION, the version the program is compiled with.
 * @return HK_OK; INVALID_ARGUMENT (no message: there is no status), writing
 *         nothing, for a NULL opts or a version that is 0 or above
 *         HK_EARLY_STOPPING_OPTIONS_VERSION.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_early_stopping_options_init(hk_early_stopping_options *opts, uint32_t version);

/**
 * EarlyStoppingHook (Keras' EarlyStopping, Lightning's): stop training
 * when a monitored value stops improving. Each evaluation compares the value
 * with the best so far: in mode MIN it improves when value + min_delta <
 * best, in MAX when value - min_delta > best (the first value always does;
 * NaN never does). An improvement makes it the best, at the evaluation's
 * global step, and resets the count of evaluations without improvement;
 * otherwise the count grows, and when it reaches max(patience, 1) the hook
 * requests a stop (the step completes) and logs "Early stopping at
 * step %d: <monitor> did not improve by more than %g for %d evaluations
 * (best %g at step %d).". Every evaluation is logged at DEBUG.
 *
 * When it evaluates: a fetched monitor after each run that brings the global
 * step (read through the raw session; the hook fetches it in every
 * before_run and reads it exactly only when a multiple may have been
 * reached) to a new multiple of every_n_steps — never at a session's
 * creation step; a reported one in the first after_run after
 * hk_early_stopping_report(), at the global step after that run.
 *
 * Across restarts: with a `state` variable the best value, its step, the
 * count and the last evaluation's step are in every checkpoint, so a
 * program restarted from one goes on counting where that checkpoint
 * stood; a state that already reached the patience stops the restarted
 * session before its first step ("Early stopping already reached at step
 * %d ...; stopping before the first step.", as StopAtStep does). A
 * state of the other mode is dropped with a WARNING. Place the hook BEFORE
 * the checkpoint saver hooks in the session's list (in a
 * MonitoredTrainingSession, in chief_only_hooks; a host loop does so with
 * hk_loop_add_early_stopping()): the saver's after_run then saves the
 * state of its own step's evaluation; placed after it, a checkpoint holds
 * the state before its step's evaluation, which a restart from it loses.
 * @param opts  required (monitor is); borrowed for the call.
 * **Ownership:** *out owned, hk_hook_free().
 * **Errors:** INVALID_ARGUMENT naming the option: a NULL opts, a wrong
 * version or bad env, no or an empty monitor, a mode other than MIN or
 * MAX, min_delta negative or not finite, patience < 0, every_n_steps < 1
 * or given with `reported`, an empty state; RESOURCE_EXHAUSTED. Later,
 * begin() fails with FAILED_PRECONDITION "Global step should be created to
 * use EarlyStoppingHook.", NOT_FOUND naming a monitor or state the executor
 * does not have, INVALID_ARGUMENT naming a state variable of another dtype
 * or shape, or local; after_create_session with DATA_LOSS naming a state
 * variable that holds no valid state; an evaluating after_run with
 * INVALID_ARGUMENT naming a monitor that is not one number, or the raw
 * session's error reading it.
 * **Threads:** any; callbacks on the training thread.
 * **Allocates:** at creation only; an evaluation's fetch and assignment
 * are runs of the executor (the reference executor caches them).
 */
HK_API hk_code hk_early_stopping_hook_new(hk_hook **out, const hk_early_stopping_options *opts, hk_status *status);

/**
 * Hand an EarlyStoppingHook made with `reported` the value of an evaluation
 * the program made itself (a validation pass outside the graph): the hook
 * evaluates it in its next after_run, at the global step after that run.
 * Report inside the step the value belongs to — between
 * hk_loop_step_begin() and hk_loop_step_end(), or before the
 * hk_session_run() of that step; a value reported between steps counts for
 * the next one. A second report before that after_run replaces the first.
 * **Errors:** INVALID_ARGUMENT for a NULL hook or one that is not an
 * EarlyStoppingHook; FAILED_PRECONDITION for a hook that fetches its
 * monitor (not `reported`), or that serves no session.
 * **Threads:** the training thread, between the hook's callbacks.
 * **Allocates:** no.
 */
HK_API hk_code hk_early_stopping_report(hk_hook *hook, double value, hk_status *status);

/** What an EarlyStoppingHook knows (hk_early_stopping_hook_info()). */
typedef struct hk_early_stopping_info {
  int64_t evaluations;  /**< evaluations so far, those of restored checkpoints included */
  double best;          /**< the best value; +Inf (MIN) or -Inf (MAX) before the first improvement */
  int64_t best_step;    /**< the global step of the best value; HK_UNSET_STEPS when none */
  int64_t wait;         /**< evaluations since the best one without improvement */
  int64_t stopped_step; /**< the global step at which it requested a stop; HK_UNSET_STEPS when it did not */
  const char *state;    /**< the state variable's name (borrowed from the hook), NULL when none */
} hk_early_stopping_info;

/**
 * Read an EarlyStoppingHook's progress: after training, best_step says which
 * checkpoint to keep (with best-k retention it is still there).
 * @param out  filled on success; zeroed first.
 * **Errors:** INVALID_ARGUMENT for a NULL hook or out, or a hook that is
 * not an EarlyStoppingHook.
 * **Threads:** the training thread. **Allocates:** no.
 */
HK_API hk_code hk_early_stopping_hook_info(hk_early_stopping_info *out, const hk_hook *hook, hk_status *status);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_EARLY_STOPPING_H */
