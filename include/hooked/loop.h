/*
 * hooked — the host loop: hooks, stops and checkpoints around the training
 * loop a program already has.
 *
 * Most trainers own their parameter arrays, their math, their optimizer and
 * their random state. The host loop borrows that memory in place (zero
 * copy) and drives hooked's sessions, hooks and checkpoints around the
 * program's own step:
 *
 *     hk_loop *loop = NULL;
 *     hk_loop_options o = HK_LOOP_OPTIONS_INIT;
 *     o.checkpoint_dir = "ckpt";              // restore at start, save ...
 *     o.save_steps = 500;                     // ... every 500 steps and at the end
 *     o.last_step = 3000;                     // stop at global step 3000
 *     hk_loop_new(&loop, &o, &st);
 *     hk_loop_add_array(loop, "w", HK_DTYPE_F32, 2, (int64_t[]){64, 32}, w, 0, &st);
 *     hk_loop_add_state(loop, "rng", sizeof rng, save_rng, load_rng, &rng, 0, &st);
 *     hk_loop_start(loop, &step, &st);        // restores into w and rng, or keeps them
 *     while (!hk_loop_should_stop(loop)) {
 *       hk_loop_step_begin(loop, &step, &st); // every hook's before_run
 *       train_one_step(w, &rng);              // the program's own math
 *       hk_loop_step_end(loop, &st);          // the global step moves; every after_run
 *     }
 *     hk_loop_finish(loop, &st);              // final checkpoint, every end()
 *     hk_loop_free(loop);
 *
 * Errors are sticky: after the first failure the loop is failed,
 * hk_loop_should_stop() is true, every later call returns that first error
 * again, and hk_loop_finish() returns it. A program that checks only
 * hk_loop_finish() therefore still stops at the first error and learns it.
 * A run whose arrays go NaN or infinite is one such error: the checkpoint
 * that would hold them is refused and fails the loop, so the newest
 * checkpoint stays the last finite one (see allow_non_finite and
 * HK_LOOP_NON_FINITE_OK for arrays that hold such values on purpose).
 *
 * How it is built: the loop is an executor over the registered host memory
 * (hooked/sys/executor.h), a singular session over that executor
 * (hooked/session.h) with the loop's own hooks — in this order: the
 * program's hooks_first, the NaN guard (nan_guard), the early-stopping and
 * learning-rate hooks of hk_loop_add_early_stopping() and
 * hk_loop_add_learning_rate(), the metrics log of hk_loop_add_metrics_log(),
 * StopAtStep, the StepCounter
 * (global_step/sec, summary_dir), the checkpoint saver — followed by the
 * program's hooks, and the Scaffold's Saver — written
 * against the public headers only. Every hook, built-in or the program's,
 * works with it: registered arrays are the executor's variables, fetchable
 * by name ("w" or "w:0") from before_run; checkpoints are ordinary hooked
 * checkpoints (hooked-ckpt reads them). Hooks see, in after_run, the values
 * the program's step left in its arrays, and the global step after the
 * step.
 *
 * The global step. By default the loop owns it: a variable "global_step"
 * (int64) that hk_loop_step_end() advances by one, saved with every
 * checkpoint. A program with its own step counter registers it instead
 * (an integer scalar with HK_LOOP_GLOBAL_STEP) and advances it itself in
 * each step; a step that leaves it unchanged is logged at WARNING (the first
 * five times), and 100 consecutive such steps fail the loop with
 * FAILED_PRECONDITION rather than loop forever.
 *
 * Threads: one thread at a time calls the loop (the training thread), and
 * every callback (hooks, state save/restore, the step function) runs on it,
 * also with asynchronous checkpoints (the writer thread only copies arrays,
 * see hk_loop_updates_begin(), and does file I/O — and, in a loop over a
 * group, calls the group's collectives: see hk_loop_options.group).
 * hk_loop_request_stop() may be called from any thread.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_LOOP_H
#define HOOKED_LOOP_H

#include "hooked/common.h"
#include "hooked/tensor.h"
#include "hooked/sys/executor.h"
#include "hooked/sys/group.h"
#include "hooked/hook.h"
#include "hooked/session.h"
#include "hooked/summary.h"
#include "hooked/metrics_log.h"
#include "hooked/ema.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hk_loop hk_loop;

/** Flags of hk_loop_add_array() and hk_loop_add_state(). */
typedef enum hk_loop_flags {
  HK_LOOP_DEFAULT = 0,
  /** Visible to hooks (fetchable by name) but not checkpointed: a loss, a
   *  learning rate, an accuracy. Arrays only. */
  HK_LOOP_NO_CHECKPOINT = 1u << 0,
  /** Optional on restore: a checkpoint written before this was registered
   *  restores everything else and keeps the program's value of this one,
   *  with a WARNING naming it. Without the flag such a checkpoint fails the
   *  start with NOT_FOUND naming it. */
  HK_LOOP_OPTIONAL = 1u << 1,
  /** This integer scalar is the global step, owned and advanced by the
   *  program (see the file comment). At most one. Arrays only. */
  HK_LOOP_GLOBAL_STEP = 1u << 2,
  /** This floating array may hold NaN or infinities on purpose (a running
   *  minimum that starts at +Inf): checkpoints write it as it is. Without
   *  the flag (and without opts.allow_non_finite) a checkpoint in which a
   *  floating array holds one is refused and fails the loop. Arrays
   *  only; HK_VAR_NON_FINITE_OK of hooked/sys/executor.h. */
  HK_LOOP_NON_FINITE_OK = 1u << 3,
  /** With a group (hk_loop_options.group): this one-dimensional array is
   *  this rank's block of a flat global array partitioned across the ranks
   *  (ZeRO-1: an optimizer's moments), cut by hk_group_block()
   *  (hooked/sys/group.h); checkpoints hold each block once, and a restart
   *  on another rank count gives each rank its new block (the program
   *  sizes the array by hk_group_block() for the new count). The Saver's
   *  partitioned_list (hooked/checkpoint.h). Without a group, an array as
   *  any other. Arrays only, rank 1; not with HK_LOOP_PER_RANK,
   *  HK_LOOP_GLOBAL_STEP or HK_LOOP_NO_CHECKPOINT. */
  HK_LOOP_PARTITIONED = 1u << 4,
  /** With a group: this array or state differs per rank (a rank's own
   *  random state): each rank saves its own, and a restart with the same
   *  rank count gives each its own back; with another rank count it keeps
   *  the program's value, with a WARNING naming it, so the program
   *  re-derives it. The Saver's per_rank_list. Without a group, as any
   *  other. Not with HK_LOOP_GLOBAL_STEP or HK_LOOP_NO_CHECKPOINT. */
  HK_LOOP_PER_RANK = 1u << 5
} hk_loop_flags;

#define HK_LOOP_OPTIONS_VERSION 1
typedef struct hk_loop_options {
  uint32_t version; /**< HK_LOOP_OPTIONS_VERSION */
  /** Copied. Everything the loop creates (its executor, session, Saver and
   *  hooks) uses it, and hooks the program creates with env NULL log
   *  through it: one log_level reaches them all. NULL: defaults. */
  const hk_env *env;
  /** Checkpoint directory, copied; created with its parents at start. At
   *  start the newest checkpoint in it that verifies is restored into the
   *  registered memory (with a WARNING when the state file is missing
   *  and the directory is scanned); with none, the program's own initial
   *  values are kept — nothing is zeroed or re-initialized. NULL: no
   *  checkpoints at all. While the loop saves into it (a cadence that is
   *  not 0), it is locked against a second trainer: another loop or
   *  session writing it makes hk_loop_start() fail, naming the holder. */
  const char *checkpoint_dir;
  /** Cadence of managed checkpoints: at most one of the two;
   *  both unset: every 600 s. 0 (either) disables periodic and final saves
   *  (the directory is still restored from; hk_loop_save() still works).
   *  The start does not re-save the checkpoint it just restored. */
  double save_secs;                     /**< HK_UNSET_SECS, 0, or finite > 0 */
  int64_t save_steps;                   /**< HK_UNSET_STEPS, 0, or >= 1 */
  int64_t max_to_keep;                  /**< managed checkpoints kept, >= 0 (0 = all); default 5 */
  double keep_checkpoint_every_n_hours; /**< HK_UNSET_SECS or 0: off; > 0 */
  const char *checkpoint_basename;      /**< copied; NULL: "model.ckpt" */
  int async_checkpoint;                 /**< nonzero: AsyncCheckpointSaverHook; default 0 */
  /** Stop conditions (StopAtStepHook): at most one; both
   *  HK_UNSET_STEPS (the default): the loop stops only when asked (a hook,
   *  hk_loop_request_stop(), a signal, a step returning OUT_OF_RANGE).
   *  num_steps counts from the step the start resumed at. */
  int64_t num_steps;
  int64_t last_step;
  /** The program's hooks, run after the loop's own (the NaN guard, the
   *  early-stopping and learning-rate hooks, the metrics log, StopAtStep,
   *  the StepCounter, then the checkpoint saver) in this order; hooks_first
   *  runs before them. Array copied, hooks borrowed: they must outlive the
   *  loop (hk_loop_free() first, then hk_hook_free()). */
  hk_hook *const *hooks;
  size_t nhooks;
  /** Default 1: SIGINT/SIGTERM (stop_signals) stop the loop cleanly (the step in progress
   *  completes, the final checkpoint is written, hk_loop_finish() returns
   *  OK; a second signal acts as without hooked) through the process-wide
   *  signal helper (hooked/coordinator.h), installed by hk_loop_start() and uninstalled by
   *  hk_loop_finish() (a helper the program installed itself is used and
   *  left installed). 0: the loop leaves signals alone. */
  int handle_signals;
  /**
   * Copied; NULL (default): none. The name of a registered floating array
   * (the loss, say) that the loop guards: a fail-mode NanTensorHook
   * with non_finite (hooked/hooks.h) runs BEFORE the loop's StopAtStep
   * and checkpoint hooks, so a step that leaves it NaN or infinite fails
   * the loop ("NaN loss during training.", INVALID_ARGUMENT, from
   * hk_loop_step_end() and hk_loop_finish()) before its checkpoint is
   * written, and no final checkpoint follows: every checkpoint holds a step
   * whose guarded array was finite. (A NanTensorHook among the program's
   * hooks runs after the loop's checkpoint hook and cannot do that.)
   */
  const char *nan_guard;
  /** Best-k retention of the loop's checkpoint hook: 0 (default)
   *  off; k >= 1 keeps, beside the max_to_keep newest, the k best managed
   *  checkpoints by best_metric. Needs checkpoint saves (a checkpoint_dir,
   *  a cadence that is not 0). */
  int64_t best_k;
  /** Copied: the registered array (one number, e.g. "val_loss") whose value
   *  at each save ranks the checkpoint. Only with best_k. */
  const char *best_metric;
  hk_monitor_mode best_mode; /**< HK_MONITOR_MIN (default) or HK_MONITOR_MAX */
  /** Copied; NULL (default): checkpoint_dir. Where the loop's
   *  StepCounterHook (hooked/hooks.h) writes global_step/sec,
   *  through the writer the session shares for the directory: what
   *  hk_loop_summary_scalar() writes there and the checkpoint hook's
   *  CHECKPOINT events go into the same event file. Created with its
   *  parents by hk_loop_start() when the StepCounter runs; its event file
   *  appears at the first write. Empty: INVALID_ARGUMENT. */
  const char *summary_dir;
  /** The loop's StepCounterHook, as MonitoredTrainingSession's: every log_step_count_steps steps it logs
   * "global_step/sec: %g" and writes that rate into summary_dir, when summary_dir (or the checkpoint_dir it defaults
   * to) is set. Default 100; 0: no StepCounterHook; negative: INVALID_ARGUMENT naming it. It runs after StopAtStep and
   * before the checkpoint saver. */
  int64_t log_step_count_steps;
  /** 0 (default): a checkpoint in which a floating array holds NaN or an
   *  infinity is refused (INVALID_ARGUMENT naming the array, the element
   *  and its value), which fails the loop (errors are sticky): nothing more is
   *  written, hk_loop_finish() returns it, and the newest checkpoint is the
   *  last finite one. Arrays flagged HK_LOOP_NON_FINITE_OK (and the early
   *  stopping state the loop registers) are written as they are. Nonzero:
   *  every array is written as it is (the loop's Saver's allow_non_finite,
   *  hooked/checkpoint.h). nan_guard, when given, stops a diverged step
   *  before its checkpoint is even attempted. */
  int allow_non_finite;
  /**
   * Keras' restore_best_weights. 0 (default): the arrays hold the values of
   * the last step when the loop finishes. Nonzero (needs best_k): a clean
   * hk_loop_finish(), once every end() ran (the final checkpoint is ranked
   * too), restores the best checkpoint of best-k retention — the first of
   * the record "<checkpoint_dir>/checkpoint.best", see hk_checkpoint_best()
   * in hooked/checkpoint.h — into the program's checkpointed arrays, the
   * global step and the arrays the loop registered for its own hooks
   * excepted (early-stopping and learning-rate states, averages; opaque
   * states are not restored either: they are not weights), CRC-checked,
   * and logs "Restored the best checkpoint <prefix> (step S, <best_metric>
   * = V) into the program's arrays." at INFO; the program then evaluates
   * and saves the best model. With no best checkpoint (every ranked value
   * was NaN) hk_loop_finish() fails with NOT_FOUND naming the record and
   * the arrays keep the last step's values. After an error nothing is
   * restored.
   */
  int restore_best;
  /** The program's hooks that run BEFORE the loop's own, in this order:
   *  hooks_first, the NaN guard, the early-stopping hooks, StopAtStep, the
   *  StepCounter, the checkpoint saver, then `hooks`. A step timer here
   *  has its before_run before the checkpoint saver's and its after_run
   *  before the saver writes, so it times the program's step alone; one in
   *  `hooks` counts the checkpoint write in the step. Array copied, hooks borrowed as `hooks`; a hook appears once
   *  across both lists. NULL / 0 (default): none. */
  hk_hook *const *hooks_first;
  size_t nhooks_first;
  /** The signals that stop the loop cleanly with handle_signals: an OR of
   *  hk_signal_set (hooked/coordinator.h). 0 (default):
   *  HK_SIGNAL_DEFAULT_SET (SIGINT, SIGTERM). Add HK_SIGNAL_HUP for a
   *  terminal that may close, HK_SIGNAL_USR1 for Slurm's warning
   *  (`#SBATCH --signal=USR1@120`): each then ends the run with its final
   *  checkpoint, and hk_loop_stop_reason() names the signal. */
  unsigned stop_signals;
  /** With async_checkpoint only: the asynchronous hook's block_when_busy.
   *  0 (default): a save that falls due while the previous one is still
   *  being written is deferred to a later step (the checkpoints drift off
   *  the cadence on slow storage); nonzero: that step waits for the write
   *  in flight, so every save lands on its step, as TensorFlow's saver
   *  does. */
  int async_checkpoint_block_when_busy;
  /** How often the loop's StepCounterHook logs "global_step/sec: %g", in
   *  seconds (its log_every_secs); the rate is still written into
   *  summary_dir every log_step_count_steps steps. Default 10;
   *  HK_UNSET_SECS: at every write; 0: never. */
  double log_step_count_secs;
  /** NULL (default): the loop checkpoints alone. Non-NULL: the ranks of
   *  this group (hooked/sys/group.h; hk_mpi_group() over MPI) run one job
   *  and write sharded checkpoints together: every rank registers the same
   *  arrays and states in the same order, calls hk_loop_start() and saves
   *  at the same steps, each writes its shard, and rank 0 commits the
   *  checkpoint. Arrays and opaque states are replicated (the same on every
   *  rank, saved once across the shards) unless flagged
   *  HK_LOOP_PARTITIONED or HK_LOOP_PER_RANK. Borrowed with group_user for
   *  the loop's life. The program averages its gradients itself
   *  (hooked::mpi).
   *  - The cadence is in steps: with a checkpoint_dir, save_steps (or 0)
   *    is required; save_secs (other than 0) and the default every 600 s
   *    are refused, since a clock differs between ranks. best_k (and so
   *    restore_best) is refused: best-k retention does not rank sharded
   *    checkpoints.
   *  - The start restores collectively: the ranks fall back together to
   *    the newest checkpoint every rank restores. A save that fails on one
   *    rank fails on every rank (each loop fails at that step).
   *    hk_loop_save() is collective: every rank calls it between the same
   *    steps.
   *  - Rank 0 alone holds the directory lock and writes event files (its
   *    StepCounter, SessionLog START, the CHECKPOINT events); the other
   *    ranks have no StepCounter, and hk_loop_summary_scalar() there
   *    writes nothing (see it).
   *  - async_checkpoint: a save that falls due while one is in flight
   *    waits for it (as async_checkpoint_block_when_busy), so every rank
   *    saves at the cadence's steps; the writer thread makes the
   *    collective save, so the group must accept calls from that thread
   *    while the training thread makes its own collectives. Over MPI: give
   *    the loop a second hk_mpi context (hk_mpi_new()) for its group, and
   *    initialize MPI with MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...)
   *    (check MPI_Query_thread()). Synchronous checkpoints make every
   *    collective on the training thread: the program's context serves. */
  const hk_group_vtable *group;
  void *group_user;
} hk_loop_options;

#define HK_LOOP_OPTIONS_INIT                                                                                        \
  {                                                                                                                 \
    HK_LOOP_OPTIONS_VERSION, NULL, NULL, HK_UNSET_SECS, HK_UNSET_STEPS, 5, HK_UNSET_SECS, NULL, 0, HK_UNSET_STEPS,  \
        HK_UNSET_STEPS, NULL, 0, 1, NULL, 0, NULL, HK_MONITOR_MIN, NULL, 100, 0, 0, NULL, 0, 0, 0, 10.0, NULL, NULL \
  }

/**
 * Initialize options to HK_LOOP_OPTIONS_INIT.
 * @param version  HK_LOOP_OPTIONS_VERSION, the version the program is compiled with.
 * @return HK_OK; INVALID_ARGUMENT (no message: there is no status), writing
 *         nothing, for a NULL opts or a version that is 0 or above
 *         HK_LOOP_OPTIONS_VERSION.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_loop_options_init(hk_loop_options *opts, uint32_t version);

/**
 * Create a loop. Every option is validated here, before any side effect
 *: nothing is created on disk, no hook runs, no signal handler is
 * installed until hk_loop_start().
 * @param out   receives the loop; NULL on failure.
 * @param opts  borrowed for the call; NULL: HK_LOOP_OPTIONS_INIT (no
 *              checkpoints, no stop condition).
 * **Ownership:** *out owned: hk_loop_finish(), then hk_loop_free().
 * **Errors:** INVALID_ARGUMENT naming the option: a bad version or env; a
 * cadence that is negative, NaN or both given ("Can not provide both
 * save_secs and save_steps."); a negative max_to_keep or
 * keep_checkpoint_every_n_hours; a checkpoint_basename that is not a valid
 * name; num_steps and last_step both given ("Only one of num_steps or
 * last_step can be specified.") or negative; a NULL hooks array with a
 * count, a NULL hook or the same hook twice; a cadence without a
 * checkpoint_dir; a nan_guard or best_metric that is not a valid array name
 * (empty included); a negative best_k, best_k without best_metric or
 * without checkpoint saves (no checkpoint_dir, or a cadence of 0),
 * best_metric without best_k, a best_mode other than HK_MONITOR_MIN or
 * HK_MONITOR_MAX; an empty summary_dir; a negative
 * log_step_count_steps ("hk_loop_new: log_step_count_steps must be >= 0,
 * got N"); restore_best without best_k; a NULL hooks_first with a count, a NULL hook in it or a hook
 * in both lists; stop_signals with bits outside hk_signal_set, or given
 * with handle_signals 0; async_checkpoint_block_when_busy without
 * async_checkpoint; a negative or non-finite log_step_count_secs; a group
 * hk_group_check() refuses, group_user without a group, and with a group
 * save_secs other than 0, a checkpoint_dir without save_steps, or best_k.
 * RESOURCE_EXHAUSTED.
 * **Threads:** any. **Allocates:** yes.
 */
HK_API hk_code hk_loop_new(hk_loop **out, const hk_loop_options *opts, hk_status *status);

/**
 * Register an array of the program's: `data` is borrowed, zero copy, and
 * read and written in place by checkpoints, restores and hooks' fetches.
 * Only before hk_loop_start().
 * @param name   copied; 1..255 bytes of [A-Za-z0-9_./-], unique among the
 *               loop's arrays and states, not "global_step" unless this is
 *               the global step. It is the tensor's name in checkpoints.
 * @param dtype  any dtype but STRING.
 * @param rank   0..HK_MAX_RANK; @param dims rank entries >= 0, copied (NULL
 *               when rank is 0).
 * @param data   borrowed until hk_loop_free(); holds product(dims) * element
 *               size bytes; may be NULL only for an empty shape.
 * @param flags  hk_loop_flags: HK_LOOP_NO_CHECKPOINT, HK_LOOP_OPTIONAL,
 *               HK_LOOP_GLOBAL_STEP (an integer scalar, not with
 *               NO_CHECKPOINT or OPTIONAL), HK_LOOP_NON_FINITE_OK,
 *               HK_LOOP_PARTITIONED (rank 1), HK_LOOP_PER_RANK (not both;
 *               neither with GLOBAL_STEP or NO_CHECKPOINT).
 * **Errors:** INVALID_ARGUMENT naming the array for each rule above (and
 * unknown flags); ALREADY_EXISTS for a name taken, or a second global step;
 * FAILED_PRECONDITION after start; the loop's sticky error.
 * RESOURCE_EXHAUSTED.
 * **Threads:** the training thread. **Allocates:** yes.
 */
HK_API hk_code hk_loop_add_array(hk_loop *loop, const char *name, hk_dtype dtype, int32_t rank, const int64_t *dims,
                                 void *data, unsigned flags, hk_status *status);

/**
 * Save callback of an opaque state: write exactly `size` bytes describing
 * the state into `dst` (which is suitably aligned for any type). Called on
 * the training thread whenever the state is read: by every checkpoint save
 * (at the step boundary, also for asynchronous saves) and by a hook that
 * fetches it. A non-OK return fails that save or run with its status.
 * Every byte of dst must come from the state: a struct copied with its
 * uninitialized padding makes checkpoints that differ from run to run.
 * In the check-resume mode (HOOKED_CHECK_RESUME, hooked/checkpoint_saver.h) each
 * read calls it twice, dst and the stack below filled with other bytes
 * each time, and a state whose two reads differ is named once, in a
 * WARNING "... gave different bytes in two reads of the same state ..."
 * with the differing byte ranges, and in a report file for hooked-ckpt
 * check-resume ("unstable-<pid>-<name>" in the variable's report
 * directory). Outside the mode it is called once per read.
 */
typedef hk_code (*hk_loop_state_save_fn)(void *user, void *dst, size_t size, hk_status *status);
/**
 * Restore callback of an opaque state: rebuild the state from the `size`
 * bytes at `src` (borrowed for the call), as written by the save callback
 * of a run of the same program. Called on the training thread by
 * hk_loop_start() when it restores a checkpoint that holds the state. A
 * non-OK return fails the start with its status.
 */
typedef hk_code (*hk_loop_state_restore_fn)(void *user, const void *src, size_t size, hk_status *status);

/**
 * Register opaque state that is not a flat array — an RNG object, an
 * optimizer's private struct, a data iterator's position — by a byte size
 * and two callbacks. Its bytes go into every checkpoint as a tensor of
 * their own (U8, shape [size], named `name`) and come back through
 * `restore`. Only before hk_loop_start().
 * @param name     as hk_loop_add_array().
 * @param size     the byte size, >= 1, the same in every run of the program
 *                 (a checkpoint whose tensor has another size fails the
 *                 start with INVALID_ARGUMENT naming it).
 * @param save, restore  required; @param user  borrowed, passed to both.
 * @param flags    HK_LOOP_DEFAULT, HK_LOOP_OPTIONAL, HK_LOOP_PER_RANK.
 * **Errors:** INVALID_ARGUMENT naming the state (NULL callback, size 0,
 * another flag, a bad name); ALREADY_EXISTS; FAILED_PRECONDITION after
 * start; the loop's sticky error. RESOURCE_EXHAUSTED.
 * **Threads:** the training thread. **Allocates:** yes (a buffer of `size`
 * bytes that the callbacks' bytes pass through).
 */
HK_API hk_code hk_loop_add_state(hk_loop *loop, const char *name, size_t size, hk_loop_state_save_fn save,
                                 hk_loop_state_restore_fn restore, void *user, unsigned flags, hk_status *status);

/**
 * Run an EarlyStoppingHook (hooked/early_stopping.h) as one of the loop's own
 * hooks, and keep its state in the loop's checkpoints: the hook runs
 * after the NaN guard and BEFORE StopAtStep and the checkpoint saver (hooks
 * added so run in the order added), so the checkpoint of a step holds the
 * early-stopping state of that step's evaluation, and a program restarted
 * from it goes on counting where it stood. When the hook has a `state`
 * name, the loop registers that array for it — F64, shape
 * [HK_EARLY_STOPPING_STATE_SIZE], zero, in the loop's own memory,
 * checkpointed and HK_LOOP_OPTIONAL (checkpoints written before it restore,
 * the early stopping then starting over) — so the program registers
 * nothing. Do not also list the hook in opts.hooks. Only before
 * hk_loop_start().
 *
 *     hk_early_stopping_options eo = HK_EARLY_STOPPING_OPTIONS_INIT;
 *     eo.monitor = "val_loss";            // a registered array ...
 *     eo.every_n_steps = 500;             // ... evaluated every 500 steps
 *     eo.patience = 5;
 *     eo.state = "early_stopping";        // kept in every checkpoint
 *     hk_early_stopping_hook_new(&es, &eo, &st);
 *     hk_loop_add_early_stopping(loop, es, &st);
 *
 * @param hook  borrowed: it must outlive the loop, like opts.hooks.
 * **Errors:** INVALID_ARGUMENT for a NULL loop or hook, a hook that is not
 * an EarlyStoppingHook, one already added or listed in opts.hooks, or a
 * state name that is not a valid array name; ALREADY_EXISTS when the state
 * name is taken; FAILED_PRECONDITION after start; the loop's sticky error.
 * RESOURCE_EXHAUSTED.
 * **Threads:** the training thread. **Allocates:** yes.
 */
HK_API hk_code hk_loop_add_early_stopping(hk_loop *loop, hk_hook *hook, hk_status *status);

/**
 * Run a LearningRateHook (hooked/learning_rate.h) as one of the loop's own
 * hooks: it runs after the NaN guard and BEFORE StopAtStep and the
 * checkpoint saver, with the early-stopping hooks in the order added, so
 * the checkpoint of a step holds the reduce-on-plateau state of that
 * step's evaluation and a program restarted from it writes the rates an
 * uninterrupted run would. When the hook has a `state` name, the loop
 * registers that array for it — F64, shape [HK_LEARNING_RATE_STATE_SIZE],
 * zero, in the loop's own memory, checkpointed and HK_LOOP_OPTIONAL — so
 * the program registers nothing for it. The rate's own variable is the
 * program's: it registers it (an F32 or F64 scalar its update reads), best
 * with HK_LOOP_NO_CHECKPOINT since the hook writes it before every step (a
 * checkpointed one works too, and shows the rate of the checkpoint's last
 * step to tools). Do not also list the hook in opts.hooks. Only before
 * hk_loop_start().
 *
 *     float lr;                                // what the update reads
 *     hk_loop_add_array(loop, "learning_rate", HK_DTYPE_F32, 0, NULL, &lr, HK_LOOP_NO_CHECKPOINT, &st);
 *     hk_learning_rate_options lo = HK_LEARNING_RATE_OPTIONS_INIT;
 *     lo.variable = "learning_rate";
 *     lo.rate = 0.1;
 *     lo.monitor = "val_loss";                 // a registered array ...
 *     lo.every_n_steps = 500;                  // ... evaluated every 500 steps
 *     lo.patience = 3;
 *     lo.state = "learning_rate_state";        // kept in every checkpoint
 *     hk_learning_rate_hook_new(&lrh, &lo, &st);
 *     hk_loop_add_learning_rate(loop, lrh, &st);
 *
 * @param hook  borrowed: it must outlive the loop, like opts.hooks.
 * **Errors:** INVALID_ARGUMENT for a NULL loop or hook, a hook that is not
 * a LearningRateHook, one already added or listed in opts.hooks, or a state
 * name that is not a valid array name; ALREADY_EXISTS when the state name
 * is taken; FAILED_PRECONDITION after start; the loop's sticky error.
 * RESOURCE_EXHAUSTED.
 * **Threads:** the training thread. **Allocates:** yes.
 */
HK_API hk_code hk_loop_add_learning_rate(hk_loop *loop, hk_hook *hook, hk_status *status);

/**
 * Run a MetricsLogHook (hooked/metrics_log.h) as one of the loop's own
 * hooks: after the early-stopping and learning-rate hooks and BEFORE StopAtStep and the
 * checkpoint saver, so the row of a step is in the file before that step's
 * checkpoint is written, and with its checkpoint listener on the loop's
 * checkpoint saver, so the log is fsynced before each checkpoint: a
 * program restarted from a checkpoint finds every row up to its step, even
 * after a power loss. Do not also list the hook in opts.hooks. At most one
 * per loop. Only before hk_loop_start().
 *
 *     hk_metrics_log_options mo = HK_METRICS_LOG_OPTIONS_INIT;
 *     mo.path = "run/metrics.csv";
 *     mo.tensors = (const char *[]){"loss"};   // a registered array
 *     mo.ntensors = 1;
 *     mo.every_n_steps = 100;
 *     hk_metrics_log_hook_new(&ml, &mo, &st);
 *     hk_loop_add_metrics_log(loop, ml, &st);
 *
 * @param hook  borrowed: it must outlive the loop, like opts.hooks.
 * **Errors:** INVALID_ARGUMENT for a NULL loop or hook, a hook that is not
 * a MetricsLogHook, a second one, or one listed in opts.hooks;
 * FAILED_PRECONDITION after start; the loop's sticky error.
 * **Threads:** the training thread. **Allocates:** no.
 */
HK_API hk_code hk_loop_add_metrics_log(hk_loop *loop, hk_hook *hook, hk_status *status);

/**
 * Run an ExponentialMovingAverage hook (hooked/ema.h) as one of the loop's
 * own hooks, and keep its averages in the loop's checkpoints: the hook runs
 * after the early-stopping and learning-rate hooks and BEFORE StopAtStep
 * and the checkpoint
 * saver (hooks added so run in the order added), so the checkpoint of a
 * step holds the averages of that step and a resumed run averages exactly
 * as one that was not stopped. For each averaged array "w" the loop
 * registers the shadow "w/<name>" (its dtype and shape) and the count
 * "<name>/num_updates" (I64 scalar), in the loop's own memory,
 * checkpointed and HK_LOOP_OPTIONAL (a checkpoint written before the
 * average restores, and the average starts over) — so the program
 * registers nothing. Do not also list the hook in opts.hooks. Register the
 * arrays first; only before hk_loop_start().
 *
 *     const char *avg[] = {"w1", "b1"};
 *     hk_ema_options eo = HK_EMA_OPTIONS_INIT;
 *     eo.variables = avg;
 *     eo.nvariables = 2;
 *     eo.decay = 0.99;
 *     hk_ema_hook_new(&ema, &eo, &st);
 *     hk_loop_add_ema(loop, ema, &st);
 *
 * @param hook  borrowed: it must outlive the loop, like opts.hooks.
 * **Errors:** INVALID_ARGUMENT for a NULL loop or hook, a hook that is not
 * an ExponentialMovingAverage hook, one already added or listed in
 * opts.hooks, an averaged name that is an opaque state, an array that is
 * not F32 or F64 or is HK_LOOP_NO_CHECKPOINT; FAILED_PRECONDITION naming an
 * averaged name that is not registered, and after start; ALREADY_EXISTS
 * when a shadow's or the count's name is taken (nothing is registered
 * then); the loop's sticky error. RESOURCE_EXHAUSTED.
 * **Threads:** the training thread. **Allocates:** yes.
 */
HK_API hk_code hk_loop_add_ema(hk_loop *loop, hk_hook *hook, hk_status *status);

/**
 * Start: create the checkpoint directory, build the session (every hook's
 * begin() and after_create_session()), restore the newest checkpoint of
 * checkpoint_dir that verifies into the registered memory or keep the
 * program's values, install the signal helper, and report the step to
 * resume at. A resumed start logs by name every tensor of the checkpoint
 * that the program did not register (it was not restored) and every
 * optional array or state the checkpoint lacks (its value was kept).
 * @param step  may be NULL; receives the global step after the restore
 *              (0, or the program's own global step's value, on a fresh
 *              start).
 * **Errors:** INVALID_ARGUMENT naming HOOKED_CHECK_RESUME for a malformed
 * value of it; FAILED_PRECONDITION naming the option when nan_guard or
 * best_metric names nothing registered, INVALID_ARGUMENT naming it when
 * nan_guard names a state or an array that is not floating, or best_metric
 * a state or an array of more than one number or not numeric —
 * checked before anything is built or created; FAILED_PRECONDITION when
 * called twice or after finish;
 * restore errors (NOT_FOUND naming a registered array the checkpoint
 * lacks, INVALID_ARGUMENT naming one whose dtype or shape differs;
 * DATA_LOSS naming every candidate when none verifies); a hook's
 * begin()/after_create_session() error, among them FAILED_PRECONDITION
 * "Checkpoint directory <dir> is in use by another trainer (pid <pid> on
 * host <host> since <time> ...; lock file <dir>/hooked.lock). ..." when
 * another loop or session, here or in another process, saves into
 * checkpoint_dir (nothing in the directory is touched); file-system
 * errors creating or locking the directory. The loop is then failed
 * (sticky).
 * **Threads:** the training thread. **Allocates:** yes.
 */
HK_API hk_code hk_loop_start(hk_loop *loop, int64_t *step, hk_status *status);

/**
 * Whether the loop should end: nonzero after a stop request (a hook, the
 * StopAtStep condition, hk_loop_request_stop(), a signal), after a step
 * returned OUT_OF_RANGE, when the loop is failed, finished, not started,
 * or NULL.
 * **Threads:** the training thread. **Errors:** none. **Allocates:** no.
 */
HK_API int hk_loop_should_stop(hk_loop *loop);

/**
 * Open a step: every hook's before_run, in order, runs now, before the
 * program's math (a step timer or profiler hook times what follows).
 * @param step  may be NULL; receives the global step the step starts at.
 * **Errors:** FAILED_PRECONDITION when not started, after finish, when a
 * step is already open, or when the loop should stop ("Run called even
 * after should_stop requested."); a hook's error. The loop is then
 * failed (sticky), except for the "already open" and "not started" misuse.
 * **Threads:** the training thread. **Allocates:** no, in steady state.
 */
HK_API hk_code hk_loop_step_begin(hk_loop *loop, int64_t *step, hk_status *status);

/**
 * Close the step opened by hk_loop_step_begin(): the loop-owned global step
 * advances by one (a program-owned one must have been advanced by the
 * program), then every hook's after_run, in order, sees the arrays as the
 * step left them; a save that is due happens here.
 * **Errors:** FAILED_PRECONDITION when no step is open; FAILED_PRECONDITION
 * "the global step has not moved in 100 steps ..." (a program-owned global
 * step); a hook's or a save's error. The loop is then failed (sticky).
 * **Threads:** the training thread. **Allocates:** no, in steady state (a
 * step on which no hook triggers).
 */
HK_API hk_code hk_loop_step_end(hk_loop *loop, hk_status *status);

/**
 * Say, inside an open step, that the step's read-only work is over and the
 * program is about to write its registered arrays. Optional: it makes
 * asynchronous checkpoints (async_checkpoint) cost the training thread
 * almost nothing. Without it, an asynchronous save copies every checkpointed
 * array at the step boundary, on the training thread, before the next step
 * starts. With it, the save at the end of a step that called it copies the
 * arrays on the writer thread while the next step reads them (its forward
 * and backward passes), and that step's call waits for the copy to finish
 * — copying on this thread whatever the writer has not copied yet — so the
 * checkpoint still holds exactly the values of the step it is named after.
 * Opaque states and the global step are always copied at the step boundary,
 * on this thread (their save callbacks run there).
 *
 *     hk_loop_step_begin(loop, &step, &st);
 *     forward_backward(w, grads);          // reads w, writes grads (not registered)
 *     hk_loop_updates_begin(loop, &st);    // the copy of the last checkpoint ends here
 *     sgd_update(w, grads);                // writes w
 *     hk_loop_step_end(loop, &st);
 *
 * The rule it relies on: once a step calls it, the next step calls it too,
 * before its first write of a checkpointed array (the global step
 * included). A step that ends without it after one that called it logs a
 * WARNING once (that checkpoint may hold values of the later step) and the
 * loop falls back to copying at the step boundary until a step calls it
 * again. A second call in one step does nothing.
 * **Errors:** FAILED_PRECONDITION when no step is open, when not started
 * or after finish (none of these change the loop); the loop's sticky error.
 * **Threads:** the training thread. **Allocates:** no.
 */
HK_API hk_code hk_loop_updates_begin(hk_loop *loop, hk_status *status);

/**
 * One step of the program's, as a callback: `step` is the global step it
 * starts at; return HK_OK, OUT_OF_RANGE when the data is exhausted (a clean
 * end: the loop stops, hk_loop_finish() writes the final checkpoint and
 * returns OK), or an error (the loop fails; the step's after_run
 * does not run and no final checkpoint is written).
 */
typedef hk_code (*hk_loop_step_fn)(void *user, int64_t step, hk_status *status);

/**
 * One bracketed step: hk_loop_step_begin(), fn, hk_loop_step_end().
 * @param fn  required; @param user  borrowed, passed to fn.
 * **Errors:** those of the three parts; fn's own code and message
 * unchanged, after which the step's after_run does not run.
 * OUT_OF_RANGE from fn is returned and ends the loop cleanly.
 * **Threads:** the training thread. **Allocates:** no, in steady state.
 */
HK_API hk_code hk_loop_step(hk_loop *loop, hk_loop_step_fn fn, void *user, hk_status *status);

/**
 * hk_loop_step() until hk_loop_should_stop().
 * @return HK_OK when the loop stopped cleanly (a stop request, a signal,
 *         OUT_OF_RANGE from fn); otherwise the first error.
 * **Threads:** the training thread. **Allocates:** no, in steady state.
 */
HK_API hk_code hk_loop_run(hk_loop *loop, hk_loop_step_fn fn, void *user, hk_status *status);

/**
 * Save a checkpoint now, between steps, synchronously (it is durable when
 * this returns; with asynchronous checkpoints the write in flight is
 * finished first).
 * @param prefix  may be NULL; receives the checkpoint's prefix, borrowed
 *              until the next call on the loop.
 * @param name  NULL: a managed checkpoint "<dir>/<basename>-<step>" at the
 *              current global step, exactly like a periodic save (listeners,
 *              retention, the state file), and the cadence restarts from
 *              it. Given: an unmanaged checkpoint "<dir>/<name>" (a valid
 *              name: 1 to 255 bytes without '/', '\\', '"', control bytes or
 *              "..", and not ".", e.g.
 *              "best", not of the managed form
 *              "<checkpoint_basename>-<digits>", which is reserved for the
 *              checkpoints retention manages), written atomically over
 *              any earlier one of that name and never deleted by retention;
 * the state file is untouched. In a loop over a group the save is
 * collective: every rank calls it, with the same name, between the same
 * steps.
 * **Errors:** FAILED_PRECONDITION when not started, after finish, inside
 * an open step, or without a checkpoint_dir; INVALID_ARGUMENT for a bad
 * name or one of the managed form (neither fails the loop); file-system
 * errors (RESOURCE_EXHAUSTED for a full disk), after which the
 * directory holds what it held before; INVALID_ARGUMENT for a floating
 * array holding NaN or an infinity (see allow_non_finite). A failed save
 * fails the loop (sticky).
 * **Threads:** the training thread. **Allocates:** yes.
 */
HK_API hk_code hk_loop_save(const char **prefix, hk_loop *loop, const char *name, hk_status *status);

/**
 * Ask the loop to stop after the step in progress (a clean stop: the final
 * checkpoint is written). Safe from any thread and from a signal-free
 * context; NULL is a no-op.
 * **Allocates:** no.
 * **Threads:** any.
 */
HK_API void hk_loop_request_stop(hk_loop *loop);

/**
 * Finish: abandon a step left open, then close the session — on a clean
 * end (a stop, a signal, OUT_OF_RANGE, or the program simply finishing)
 * every hook's end() runs, which writes the final checkpoint unless the
 * last step was just saved and joins the asynchronous writer; after
 * an error no end() runs and nothing more is written. Uninstalls the
 * signal helper the loop installed. Idempotent: a second call returns the
 * first call's result. hk_loop_stop_reason() then says why the run ended.
 * @return the loop's first error, else the first end() error, else OK.
 * **Threads:** the training thread. **Allocates:** no (end() may).
 */
HK_API hk_code hk_loop_finish(hk_loop *loop, hk_status *status);

/**
 * Free the loop and everything it created. The program's arrays, states
 * and hooks are not touched. A loop that was started but not finished is
 * first finished as after an error (no end(), no final checkpoint) with a
 * WARNING "loop freed without hk_loop_finish()".
 * @param loop  consumed; NULL is a no-op.
 * **Threads:** the training thread. **Allocates:** no.
 */
HK_API void hk_loop_free(hk_loop *loop);

/**
 * Why the loop stopped, the first cause: the last step (StopAtStep, with
 * the step), a hook's request (its name, or the reason it gave: early
 * stopping, a time limit), a signal (which one, signal set), the NaN guard
 * (HK_STOP_NON_FINITE with its INVALID_ARGUMENT), hk_loop_request_stop()
 * (HK_STOP_REQUESTED), the step function's OUT_OF_RANGE
 * (HK_STOP_END_OF_INPUT), an error (HK_STOP_ERROR with the loop's sticky
 * status), or, after hk_loop_finish() with none of these, HK_STOP_CLOSED
 * (the program ended its loop itself). HK_STOP_NONE while the loop runs.
 * An example prints it in its result line:
 *
 *     hk_stop_info why;
 *     hk_loop_stop_reason(&why, loop, NULL);
 *     printf("stopped: %s (%s)\n", hk_stop_reason_name(why.reason), why.detail);
 *
 * @param out  receives the cause; zeroed first.
 * **Errors:** INVALID_ARGUMENT for a NULL out or loop.
 * **Threads:** the training thread. **Allocates:** no.
 */
HK_API hk_code hk_loop_stop_reason(hk_stop_info *out, const hk_loop *loop, hk_status *status);

/** @return the current global step (the value a checkpoint would record);
 *  0 for NULL. **Threads:** the training thread. **Allocates:** no. */
HK_API int64_t hk_loop_global_step(const hk_loop *loop);
/**
 * @return the checkpoint prefix hk_loop_start() restored, NULL when it kept
 *         the program's values (or before start, or for NULL).
 * **Ownership:** borrowed, valid until hk_loop_free().
 * **Threads:** the training thread. **Allocates:** no.
 */
HK_API const char *hk_loop_restored_checkpoint(const hk_loop *loop);
/**
 * @return the loop's executor: a program's hook resolves the registered
 *         names through it (as in begin()). NULL for NULL.
 * **Ownership:** borrowed, owned by the loop, valid until hk_loop_free().
 * **Threads:** the training thread. **Allocates:** no.
 */
HK_API hk_executor *hk_loop_executor(hk_loop *loop);
/**
 * @return the loop's session after start (NULL before, and for NULL), for
 *         what the loop does not wrap (its coordinator, its Scaffold).
 *         Do not run, close or free it: the loop does.
 * **Ownership:** borrowed, valid until hk_loop_free().
 * **Threads:** the training thread. **Allocates:** no.
 */
HK_API hk_session *hk_loop_session(hk_loop *loop);

#ifdef __cplusplus
}
#endif

/* Summaries the program writes into the loop's event files. */
#include "hooked/loop_summary.h"

#endif /* HOOKED_LOOP_H */
