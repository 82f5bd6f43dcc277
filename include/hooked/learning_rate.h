/*
 * hooked — learning-rate control: the LearningRateHook writes the rate of
 * each step into a variable the program's optimizer reads, from a schedule
 * of the global step (constant, piecewise constant, exponential decay,
 * cosine decay with a linear warmup) and, optionally, reduced when a
 * monitored value stops improving (Keras' ReduceLROnPlateau).
 *
 *     hk_learning_rate_options lo = HK_LEARNING_RATE_OPTIONS_INIT;
 *     lo.variable = "learning_rate";      // an F32 or F64 scalar the step reads
 *     lo.schedule = HK_LEARNING_RATE_COSINE;
 *     lo.rate = 0.1;                      // the peak, reached after the warmup
 *     lo.warmup_steps = 100;
 *     lo.decay_steps = 2900;              // the cosine's length after the warmup
 *     hk_learning_rate_hook_new(&lr, &lo, &st);
 *
 * The rate of step k (the step that starts at global step k) is written in
 * that step's before_run, so the step reads lr(k). On the host loop
 * (hooked/loop.h) the variable is an array the program registers and reads
 * in its own update, and hk_loop_add_learning_rate() runs the hook as one
 * of the loop's own; on a graph it is a variable the optimizer op takes as
 * an input.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_LEARNING_RATE_H
#define HOOKED_LEARNING_RATE_H

#include "hooked/common.h"
#include "hooked/sys/hook.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The schedule: the rate as a function of the global step k. */
typedef enum hk_learning_rate_schedule {
  /** `rate` at every step (the default). */
  HK_LEARNING_RATE_CONSTANT = 0,
  /** TensorFlow's piecewise_constant: values[0] while k <= boundaries[0],
   *  values[i] while boundaries[i-1] < k <= boundaries[i], values[n] once
   *  k > boundaries[n-1]. */
  HK_LEARNING_RATE_PIECEWISE = 1,
  /** TensorFlow's exponential_decay: rate * decay_rate^(k / decay_steps),
   *  the exponent floored with `staircase`. */
  HK_LEARNING_RATE_EXPONENTIAL = 2,
  /** Keras' CosineDecay with a warmup: while k < warmup_steps, linear from
   *  warmup_from (at k = 0) towards rate; then, with s = min(k -
   *  warmup_steps, decay_steps), rate * ((1 - alpha) * (1 + cos(pi * s /
   *  decay_steps)) / 2 + alpha), which ends at alpha * rate. */
  HK_LEARNING_RATE_COSINE = 3
} hk_learning_rate_schedule;

/** Elements of a LearningRateHook's state variable: an F64 vector, zero (a
 *  fresh state) until the hook's first plateau evaluation. Its layout, for
 *  tools: [0] evaluations so far, [1] the best value, [2] its global step
 *  (-1: none), [3] evaluations since the best one or the last reduction
 *  without improvement, [4] evaluations of cooldown left, [5] the factor
 *  the reductions multiplied the schedule by (1 before the first), [6] the
 *  reductions so far, [7] the mode (0 min, 1 max). */
#define HK_LEARNING_RATE_STATE_SIZE 8

#define HK_LEARNING_RATE_OPTIONS_VERSION 1
typedef struct hk_learning_rate_options {
  uint32_t version;  /**< HK_LEARNING_RATE_OPTIONS_VERSION */
  const hk_env *env; /**< NULL: the session's (its sink logs) */
  /** Required; copied. The variable the rate is written into before every
   *  step: one element of F32 or F64 (a host loop's registered array, a
   *  graph's variable). Nothing else writes it. */
  const char *variable;
  hk_learning_rate_schedule schedule; /**< default HK_LEARNING_RATE_CONSTANT */
  /** The rate of CONSTANT, the initial rate of EXPONENTIAL, the peak of
   *  COSINE: finite and > 0 for those; 0 (the default) for PIECEWISE,
   *  whose values give the rates. */
  double rate;
  /** PIECEWISE only (else NULL and 0): nboundaries >= 1 global steps,
   *  strictly increasing, and nboundaries + 1 values, finite and >= 0;
   *  both arrays copied. */
  const int64_t *boundaries;
  size_t nboundaries;
  const double *values;
  /** EXPONENTIAL and COSINE: >= 1 (required); else HK_UNSET_STEPS. */
  int64_t decay_steps;
  /** EXPONENTIAL only: finite and > 0 (required); else 0. */
  double decay_rate;
  /** EXPONENTIAL only: nonzero floors k / decay_steps (a rate that
   *  changes every decay_steps steps). */
  int staircase;
  /** COSINE only: the warmup's length, >= 0 (default 0: no warmup). */
  int64_t warmup_steps;
  /** COSINE only: the rate at step 0 of the warmup, finite and >= 0
   *  (default 0). */
  double warmup_from;
  /** COSINE only: the final rate as a fraction of `rate`, in [0, 1]
   *  (default 0). */
  double alpha;

  /* Reduce on plateau (Keras' ReduceLROnPlateau); off while monitor is NULL. */
  /**
   * Copied; NULL (default): no reduction. The value to watch: a tensor name
   * the executor resolves ("val_loss:0" of a graph, a host loop's
   * registered array "val_loss"), one number of any float or integer dtype,
   * fetched through the raw session after the runs that evaluate — or, with
   * `reported`, only the name messages give the values
   * hk_learning_rate_report() hands in.
   */
  const char *monitor;
  /** Nonzero: the program reports the values (hk_learning_rate_report());
   *  0 (default): fetched. */
  int reported;
  hk_monitor_mode mode; /**< default HK_MONITOR_MIN: lower is better */
  /** The factor a reduction multiplies the rate by: 0 < factor < 1;
   *  default 0.1 (Keras). */
  double factor;
  /** Evaluations without improvement before a reduction: >= 0; default
   *  10 (Keras). 0 reduces at every evaluation without improvement. */
  int64_t patience;
  /** An improvement must beat the best by more than this: finite, >= 0;
   *  default 1e-4 (Keras). */
  double min_delta;
  /** Evaluations after a reduction during which none is counted: >= 0,
   *  default 0. */
  int64_t cooldown;
  /** The reduced rate never goes below this: finite, >= 0, default 0. */
  double min_rate;
  /** A fetched monitor is evaluated after each run that brings the global
   *  step to a new multiple of this: HK_UNSET_STEPS (every step) or >= 1.
   *  Not with `reported`. */
  int64_t every_n_steps;
  /**
   * Copied; NULL (default): the plateau's progress lives in the hook and a
   * restart starts over. Given (only with a monitor): the name of an F64
   * variable of shape [HK_LEARNING_RATE_STATE_SIZE], checkpointed (not
   * local) and zero at first, which keeps the best value, the counts, the
   * cooldown and the reductions in every checkpoint: the hook reads it at
   * each session creation (after the restore) and assigns it after each
   * evaluation. A host loop registers it with hk_loop_add_learning_rate();
   * a graph creates it, e.g. hk_graph_variable() with dtype HK_DTYPE_F64,
   * dims {HK_LEARNING_RATE_STATE_SIZE}, a constant 0 initializer and flags
   * HK_VAR_NON_FINITE_OK (its best value is +-Inf until an evaluation
   * improves; add HK_VAR_OPTIONAL for checkpoints older than it).
   */
  const char *state;

  /* The summary. */
  /** Copied; NULL (default): no summary. The directory whose shared event
   *  file (the writer the session shares for it) receives the scalar
   *  "learning_rate": the rate of step k, at step k. */
  const char *summary_dir;
  /** The summary's cadence: written for the first step of a session and
   *  then for the first step at least this many steps after the last one
   *  written; HK_UNSET_STEPS (default: 100) or >= 1. Only with
   *  summary_dir. */
  int64_t summary_steps;
} hk_learning_rate_options;
#define HK_LEARNING_RATE_OPTIONS_INIT                                                                                 \
  {                                                                                                                   \
    HK_LEARNING_RATE_OPTIONS_VERSION, NULL, NULL, HK_LEARNING_RATE_CONSTANT, 0.0, NULL, 0, NULL, HK_UNSET_STEPS, 0.0, \
        0, 0, 0.0, 0.0, NULL, 0, HK_MONITOR_MIN, 0.1, 10, 1e-4, 0, 0.0, HK_UNSET_STEPS, NULL, NULL, HK_UNSET_STEPS    \
  }

/**
 * Initialize options to HK_LEARNING_RATE_OPTIONS_INIT.
 * @param opts  written; borrowed for the call.
 * @return HK_OK, or INVALID_ARGUMENT (no message) for a NULL opts or
 *         another version.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_learning_rate_options_init(hk_learning_rate_options *opts, uint32_t version);

/**
 * LearningRateHook: before every step it reads the global step k through
 * the raw session, computes the rate of the schedule at k — multiplied by
 * the reductions so far and floored at min_rate when a monitor is given —
 * and assigns it to `variable` (rounded to the variable's dtype), so the
 * step reads lr(k). Every step writes it again: a restored or overwritten
 * value never lasts into a step.
 *
 * Reduce on plateau, as Keras' ReduceLROnPlateau: each evaluation of value
 * v improves when v + min_delta < best (MIN) or v - min_delta > best (MAX),
 * the best starting at +Inf (MIN) or -Inf (MAX), so NaN never improves.
 * In this order: during a cooldown, the cooldown left drops by one and the
 * count of evaluations without improvement is reset; an improvement makes v
 * the best and resets the count; otherwise, out of cooldown, the count
 * grows, and once it reaches patience, if the rate of the step just run is
 * above min_rate, the rate is multiplied by factor (the factor applies to
 * every later step's schedule value), the cooldown starts and the count is
 * reset. A reduction logs "LearningRateHook: <monitor> did not improve for
 * %d evaluations; learning rate reduced to %g from step %d.", every
 * evaluation is logged at DEBUG. The new rate is written in the next
 * before_run. When it evaluates: a fetched monitor after each run that
 * brings the global step (read through the raw session) to a new multiple
 * of every_n_steps, never at a session's creation step; a reported one in
 * the first after_run after hk_learning_rate_report().
 *
 * The summary "learning_rate": with summary_dir, the rate of step k at step
 * k, in the after_run of that step (a failed step writes none), through
 * the writer the session shares for summary_dir, on the summary_steps
 * cadence.
 *
 * Across restarts: the schedule is a function of the global step, so a
 * restored run writes the rates an uninterrupted one would. With a `state`
 * variable the plateau's progress is in every checkpoint as well, so a run
 * restored from one goes on where that checkpoint stood, and writes the
 * same rates. A state of the other mode is dropped with a WARNING. Place
 * the hook BEFORE the checkpoint saver hooks (in a MonitoredTrainingSession,
 * in chief_only_hooks or hooks; on a host loop with
 * hk_loop_add_learning_rate()): the saver's after_run then saves the state
 * of its own step's evaluation.
 *
 * @param out   receives the hook; NULL on failure.
 * @param opts  required (variable is); borrowed for the call.
 * **Ownership:** *out owned, hk_hook_free().
 * **Errors:** INVALID_ARGUMENT naming the option: a NULL out or opts, a
 * wrong version or bad env, no or an empty variable, an unknown schedule, a
 * rate that is not finite and > 0 (or given to PIECEWISE), boundaries not
 * strictly increasing or values not finite and >= 0, decay_steps < 1 or
 * missing, decay_rate not finite and > 0, warmup_steps < 0, warmup_from not
 * finite and >= 0, alpha outside [0, 1], an option given to a schedule it
 * does not apply to; with a monitor: an empty one, a mode other than MIN or
 * MAX, factor outside (0, 1), patience or cooldown < 0, min_delta or
 * min_rate negative or not finite, every_n_steps < 1 or given with
 * `reported`, an empty state; reduce-on-plateau options (reported, state,
 * every_n_steps) without a monitor; an empty summary_dir, summary_steps < 1
 * or given without summary_dir. RESOURCE_EXHAUSTED. Later, begin() fails
 * with FAILED_PRECONDITION "Global step should be created to use
 * LearningRateHook.", NOT_FOUND naming a variable, monitor or state the
 * executor does not have, INVALID_ARGUMENT naming a variable that is not one
 * F32 or F64 element, or a state variable of another dtype or shape, or
 * local; after_create_session with DATA_LOSS naming a state variable that
 * holds no valid state; an evaluating after_run with INVALID_ARGUMENT naming
 * a monitor that is not one number; an after_run whose summary write fails
 * with the writer's error (a file-system error naming the event file).
 * **Threads:** any; callbacks on the training thread.
 * **Allocates:** at creation, and at a session's begin() (the summary
 * writer); a step allocates nothing (its reads and assignments are runs of
 * the executor, which caches them; a summary write reuses the writer's
 * buffer).
 */
HK_API hk_code hk_learning_rate_hook_new(hk_hook **out, const hk_learning_rate_options *opts, hk_status *status);

/**
 * Hand a LearningRateHook made with `reported` the value of an evaluation
 * the program made itself: the hook evaluates it in its next after_run.
 * Report inside the step the value belongs to (between hk_loop_step_begin()
 * and hk_loop_step_end(), or before that step's hk_session_run()). A second
 * report before that after_run replaces the first.
 * @param hook  borrowed for the call.
 * **Errors:** INVALID_ARGUMENT for a NULL hook or one that is not a
 * LearningRateHook; FAILED_PRECONDITION for a hook without a monitor, one
 * that fetches its monitor, or one that serves no session.
 * **Threads:** the training thread, between the hook's callbacks.
 * **Allocates:** no.
 */
HK_API hk_code hk_learning_rate_report(hk_hook *hook, double value, hk_status *status);

/** What a LearningRateHook knows (hk_learning_rate_hook_info()). */
typedef struct hk_learning_rate_info {
  double rate;         /**< the rate last written, before rounding to the variable's dtype; 0 before the first step */
  int64_t rate_step;   /**< the global step it was written for; HK_UNSET_STEPS before the first step */
  double scale;        /**< the product of the reductions' factors (1 before the first) */
  int64_t reductions;  /**< reductions so far, those of restored checkpoints included */
  int64_t evaluations; /**< plateau evaluations so far, restored ones included */
  double best;         /**< the best value; +Inf (MIN) or -Inf (MAX) before the first improvement */
  int64_t best_step;   /**< the global step of the best value; HK_UNSET_STEPS when none */
  int64_t wait;        /**< evaluations without improvement counted towards the next reduction */
  int64_t cooldown;    /**< evaluations of cooldown left */
  const char *state;   /**< the state variable's name (borrowed from the hook), NULL when none */
} hk_learning_rate_info;

/**
 * Read a LearningRateHook's rate and plateau progress.
 * @param out   filled on success; zeroed first.
 * @param hook  borrowed for the call.
 * **Errors:** INVALID_ARGUMENT for a NULL hook or out, or a hook that is
 * not a LearningRateHook.
 * **Threads:** the training thread. **Allocates:** no.
 */
HK_API hk_code hk_learning_rate_hook_info(hk_learning_rate_info *out, const hk_hook *hook, hk_status *status);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_LEARNING_RATE_H */
