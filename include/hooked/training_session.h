/*
 * hooked — MonitoredTrainingSession (contract group E): one constructor that
 * builds a monitored session with TensorFlow's default hooks, in TF's order,
 * for a chief or a worker.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_TRAINING_SESSION_H
#define HOOKED_TRAINING_SESSION_H

#include "hooked/common.h"
#include "hooked/session.h"
#include "hooked/hooks.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HK_TRAINING_SESSION_OPTIONS_VERSION 1
/**
 * Options of hk_training_session_new(). Unset values are
 * HK_UNSET_SECS / HK_UNSET_STEPS / NULL; "0 disables" applies to the
 * cadences and log_step_count_steps.
 */
typedef struct hk_training_session_options {
  uint32_t version;           /**< HK_TRAINING_SESSION_OPTIONS_VERSION */
  const hk_env *env;          /**< copied; NULL: the executor's env. The default hooks use it too. */
  hk_executor *executor;      /**< required; borrowed for the session's life */
  int is_chief;               /**< default 1 */
  const char *checkpoint_dir; /**< copied; NULL: no restore, no CheckpointSaverHook */
  hk_scaffold *scaffold;      /**< borrowed; NULL: a default one, owned by the session */
  hk_hook *const *hooks;      /**< run last, array copied, hooks borrowed */
  size_t nhooks;
  hk_hook *const *chief_only_hooks; /**< run first on the chief, not at all on a worker */
  size_t nchief_only_hooks;
  double save_checkpoint_secs; /**< both unset → 600; 0 → no CheckpointSaverHook */
  int64_t save_checkpoint_steps;
  int64_t save_summaries_steps; /**< both unset → 100 steps; 0 → no SummarySaverHook */
  double save_summaries_secs;
  double stop_grace_period_secs;      /**< default 120 */
  int64_t log_step_count_steps;       /**< default 100; 0 → no StepCounterHook */
  double max_wait_secs;               /**< worker's wait, default 7200 */
  const char *summary_dir;            /**< copied; NULL: checkpoint_dir */
  int save_graph_def;                 /**< default 1 */
  double recovery_wait_secs;          /**< > 0, default 30 */
  double recovery_initial_delay_secs; /**< the first recovery back-off, default 1 */
  double recovery_max_delay_secs;     /**< default 60 */
  int64_t recovery_max_attempts;      /**< default 10; 0 unlimited */
  double recovery_max_secs;           /**< default 0 = unlimited */
  int async_checkpoint;               /**< AsyncCheckpointSaverHook in CheckpointSaverHook's place; default 0 */
  /**
   * With async_checkpoint only (else INVALID_ARGUMENT): the asynchronous
   * hook's block_when_busy. Default 0: a save that falls due while
   * the previous one is still being written is deferred to the next step
   * (logged "Saver thread still in progress, deferring checkpoint."), so it
   * lands at a later step than the cadence says; nonzero: that step waits
   * for the write in flight, and every due save is written at its step.
   */
  int async_checkpoint_block_when_busy;
  /** Listeners of the checkpoint saver hook (hooked/checkpoint_saver.h): array copied,
   *  vtables and users borrowed for the session's life. A MetricsLogHook's
   *  (hk_metrics_log_checkpoint_listener()) fsyncs its log before each
   *  checkpoint. Ignored when there is no checkpoint saver hook; NULL with a
   *  count: INVALID_ARGUMENT. */
  const hk_checkpoint_listener *checkpoint_listeners;
  size_t ncheckpoint_listeners;
  /** The CheckpointSaverHook's best-k retention: best_k (0: off),
   *  best_metric (copied; the tensor that ranks each save), best_mode, and
   *  restore_best (Keras' restore_best_weights: at the hook's clean end(),
   *  the best checkpoint back into the variables, so `hooks`, whose end()
   *  runs after it, evaluate the best model). See
   *  hk_checkpoint_saver_options (hooked/checkpoint_saver.h). They need the
   *  checkpoint hook (a checkpoint_dir and a cadence that is not 0). */
  int64_t best_k;
  const char *best_metric;
  hk_monitor_mode best_mode;
  int restore_best;
  /**
   * The program's hooks that run BEFORE everything else, the default hooks
   * included (on the chief: hooks_first, chief_only_hooks, StepCounter,
   * SummarySaver, the checkpoint saver, hooks; on a worker: hooks_first,
   * hooks), in this order: a step timer placed here times the step alone,
   * while one in `hooks` counts the checkpoint write in it. Array copied, hooks borrowed, as
   * `hooks`. NULL / 0 (default): none.
   */
  hk_hook *const *hooks_first;
  size_t nhooks_first;
  /**
   * How often the default StepCounterHook logs "global_step/sec: %g", in
   * seconds (its log_every_secs): the rate is still written as a summary
   * every log_step_count_steps steps. Default 10: a log line a person
   * reads, not one per 100 steps. HK_UNSET_SECS: with every summary, as
   * TensorFlow does; 0: never. Negative or not finite: INVALID_ARGUMENT.
   */
  double log_step_count_secs;
} hk_training_session_options;

#define HK_TRAINING_SESSION_OPTIONS_INIT                                                                              \
  {                                                                                                                   \
    HK_TRAINING_SESSION_OPTIONS_VERSION, NULL, NULL, 1, NULL, NULL, NULL, 0, NULL, 0, HK_UNSET_SECS, HK_UNSET_STEPS,  \
        HK_UNSET_STEPS, HK_UNSET_SECS, 120.0, 100, 7200.0, NULL, 1, 30.0, 1.0, 60.0, 10, 0.0, 0, 0, NULL, 0, 0, NULL, \
        HK_MONITOR_MIN, 0, NULL, 0, 10.0                                                                              \
  }

/**
 * Initialize options to HK_TRAINING_SESSION_OPTIONS_INIT.
 * @param version  HK_TRAINING_SESSION_OPTIONS_VERSION, the version the program is compiled with.
 * @return HK_OK; INVALID_ARGUMENT (no message: there is no status), writing
 *         nothing, for a NULL opts or a version that is 0 or above
 *         HK_TRAINING_SESSION_OPTIONS_VERSION.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_training_session_options_init(hk_training_session_options *opts, uint32_t version);

/**
 * MonitoredTrainingSession: a monitored session with
 * the default hooks. On the chief the hook order is: hooks_first;
 * chief_only_hooks;
 * StepCounterHook (output_dir summary_dir, every log_step_count_steps
 * steps, logging at most every log_step_count_secs) when summary_dir is set
 * and log_step_count_steps > 0;
 * SummarySaverHook (the Scaffold's summary_op, the summary cadence,
 * output_dir summary_dir) when summary_dir is set and the cadence value is
 * > 0; CheckpointSaverHook — AsyncCheckpointSaverHook with async_checkpoint
 * (async_checkpoint_block_when_busy as its block_when_busy) —
 * (checkpoint_dir, the checkpoint cadence, the Scaffold, save_graph_def)
 * when checkpoint_dir is set and the cadence value is > 0;
 * then `hooks`. The chief restores the newest checkpoint of checkpoint_dir
 * that verifies. Its checkpoint hook locks checkpoint_dir:
 * while another trainer writes it, the construction fails with
 * FAILED_PRECONDITION "Checkpoint directory <dir> is in use by another
 * trainer (...)" and nothing in it is touched. A worker uses the worker creator (max_wait_secs,
 * recovery_wait_secs) and only hooks_first and `hooks`. The session owns the default
 * hooks and the default Scaffold it made and frees them with itself.
 * Every option is validated before any side effect: on an option error
 * no hook's begin() runs and nothing is created on disk.
 * @param out   receives the session (close and free it as any session).
 * @param opts  required (the executor is); borrowed for the call.
 * **Ownership:** *out owned: hk_session_close(), hk_session_free().
 * **Errors:** INVALID_ARGUMENT naming the option: "Can not provide both
 * save_checkpoint_secs and save_checkpoint_steps." / "Can not provide both
 * save_summaries_secs and save_summaries_steps.", a negative
 * or NaN cadence or log_step_count_steps, bad durations, a
 * NULL hooks array with a count, a NULL or repeated hook,
 * async_checkpoint_block_when_busy without async_checkpoint; best_k,
 * best_metric or restore_best without the checkpoint hook, and what
 * hk_checkpoint_saver_hook_new() refuses of them; a NULL hooks_first
 * with a count or a NULL hook in it, a negative or non-finite
 * log_step_count_secs; everything
 * hk_session_new() returns. RESOURCE_EXHAUSTED.
 * **Threads:** the training thread. **Allocates:** yes.
 */
HK_API hk_code hk_training_session_new(hk_session **out, const hk_training_session_options *opts, hk_status *status);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_TRAINING_SESSION_H */
