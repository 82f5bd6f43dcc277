/*
 * hooked — built-in hooks. Each constructor returns an hk_hook owned by the
 * caller (hk_hook_free()), which a session borrows. On failure *out is
 * NULL. Constructors may be called from any thread; the callbacks run on the
 * training thread. With `env` NULL a built-in hook is allocated with the
 * default allocator and logs through the env of the session it serves.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_HOOKS_H
#define HOOKED_HOOKS_H

#include <stdio.h>

#include "hooked/common.h"
#include "hooked/sys/hook.h"
#include "hooked/checkpoint.h"
#include "hooked/scaffold.h"
#include "hooked/summary.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- StopAtStepHook (group I) ------------------------------- */
#define HK_STOP_AT_STEP_OPTIONS_VERSION 1
typedef struct hk_stop_at_step_options {
  uint32_t version;  /**< HK_STOP_AT_STEP_OPTIONS_VERSION */
  const hk_env *env; /**< NULL: the session's */
  int64_t num_steps; /**< HK_UNSET_STEPS or >= 0 */
  int64_t last_step; /**< HK_UNSET_STEPS or >= 0 */
} hk_stop_at_step_options;
#define HK_STOP_AT_STEP_OPTIONS_INIT \
  { HK_STOP_AT_STEP_OPTIONS_VERSION, NULL, HK_UNSET_STEPS, HK_UNSET_STEPS }

/**
 * Initialize options to HK_STOP_AT_STEP_OPTIONS_INIT.
 * @param version  HK_STOP_AT_STEP_OPTIONS_VERSION, the version the program is compiled with.
 * @return HK_OK; INVALID_ARGUMENT (no message: there is no status), writing
 *         nothing, for a NULL opts or a version that is 0 or above
 *         HK_STOP_AT_STEP_OPTIONS_VERSION.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_stop_at_step_options_init(hk_stop_at_step_options *opts, uint32_t version);

/**
 * StopAtStepHook: request a stop once the global step (GS) reaches
 * last_step, or, with num_steps, the GS read in the first
 * after_create_session after begin() plus num_steps (not
 * recomputed on re-creation). It fetches GS in every before_run; in
 * after_run, when the stale GS + 1 >= last_step, it re-reads GS through the
 * raw session and requests a stop iff GS >= last_step. When GS already
 * reaches last_step at a creation, it stops before the first step through
 * the creation context and logs "Global step %d already reached last step
 * %d; stopping before the first step."; so num_steps 0 runs no step.
 * @param opts  required (one of the steps is); borrowed for the call.
 * **Ownership:** *out owned, hk_hook_free().
 * **Errors:** INVALID_ARGUMENT "One of num_steps or last_step must be
 * specified." (also for a NULL opts), "Only one of num_steps or last_step
 * can be specified.", or a negative value, named; INVALID_ARGUMENT for a
 * version other than HK_STOP_AT_STEP_OPTIONS_VERSION or a bad env;
 * RESOURCE_EXHAUSTED. Later, begin() fails with FAILED_PRECONDITION "Global
 * step should be created to use StopAtStepHook." without a GS, or with
 * INVALID_ARGUMENT for a GS that is not an integer scalar.
 * **Threads:** any. **Allocates:** at creation only; its callbacks do not
 * (their GS re-read is a run like any other).
 */
HK_API hk_code hk_stop_at_step_hook_new(hk_hook **out, const hk_stop_at_step_options *opts, hk_status *status);

/* ---- ProgressHook: a progress display --------------------------------- */
/** Where and how a ProgressHook draws. */
typedef enum hk_progress_mode {
  /** TERMINAL when the stream's file descriptor is a terminal (isatty),
   *  PLAIN otherwise (a pipe, a file, a CI log). */
  HK_PROGRESS_AUTO = 0,
  /** One line redrawn in place: "\r", the text, "\033[K" (erase to the end
   *  of the line), cut to the terminal's width; the final line ends with
   *  "\n". */
  HK_PROGRESS_TERMINAL = 1,
  /** One line ending with "\n" per redraw, so a log stays readable. */
  HK_PROGRESS_PLAIN = 2
} hk_progress_mode;

#define HK_PROGRESS_OPTIONS_VERSION 1
typedef struct hk_progress_options {
  uint32_t version;  /**< HK_PROGRESS_OPTIONS_VERSION */
  const hk_env *env; /**< NULL: the session's (its monotonic clock paces redraws and measures rates) */
  /** Where to draw; borrowed: it must stay open until hk_hook_free(). The
   *  _INIT macro and hk_progress_options_init() set stderr (so the macro is
   *  an initializer for automatic variables, not for static ones). NULL: the
   *  hook does nothing at all: it draws nothing, resolves and fetches no
   *  loss, reads no clock. */
  FILE *stream;
  int64_t last_step; /**< HK_UNSET_STEPS (unknown: no "/ last", no percentage, no ETA) or >= 0 */
  /** A tensor to fetch at every run and show as "loss": any name the
   *  executor resolves (a graph's "loss:0", a host loop's registered array
   *  "loss"), a scalar of any float or integer dtype. Copied. NULL: none. */
  const char *loss;
  /** Seconds between redraws: HK_UNSET_SECS (0.1 on a terminal, 10
   *  otherwise) or finite >= 0 (0: after every run). */
  double every_n_secs;
  hk_progress_mode mode; /**< default HK_PROGRESS_AUTO */
} hk_progress_options;
#define HK_PROGRESS_OPTIONS_INIT \
  { HK_PROGRESS_OPTIONS_VERSION, NULL, stderr, HK_UNSET_STEPS, NULL, HK_UNSET_SECS, HK_PROGRESS_AUTO }

/**
 * Initialize options to HK_PROGRESS_OPTIONS_INIT (stream = stderr).
 * @param version  HK_PROGRESS_OPTIONS_VERSION, the version the program is compiled with.
 * @return HK_OK; INVALID_ARGUMENT (no message: there is no status), writing
 *         nothing, for a NULL opts or a version that is 0 or above
 *         HK_PROGRESS_OPTIONS_VERSION.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_progress_options_init(hk_progress_options *opts, uint32_t version);

/**
 * ProgressHook: a progress display, like tqdm, for a terminal or a log.
 * Every every_n_secs, after a run, it draws
 *     step 1234/3000 (41.1%)  256 steps/s  ETA 0:07  loss 0.4321
 * where the step is the global step after the run (read through the raw
 * session at each redraw, so it is exact with any executor; without a
 * global step, the number of runs since begin()), the rate is smoothed
 * exponentially with a 5-second time constant ("s/step" below one step a
 * second), the ETA is (last_step - step) / rate, and the loss is the value
 * fetched in the last run ("nan" and "inf" shown as such). Parts it cannot
 * know yet are "--". end() draws a final line,
 *     step 3000/3000 (100.0%)  done in 0:12  250 steps/s avg  loss 0.1234
 * with the average rate since the first run, and ends it with "\n".
 * On a terminal the line is redrawn in place (HK_PROGRESS_TERMINAL); else
 * each redraw is a line of its own (HK_PROGRESS_PLAIN).
 *
 * A display, not a log: it writes to the stream the program chose, with
 * fputs and fflush, and not through the env's log sink, because a sink
 * takes whole messages, one per line, and adds timestamps: it cannot
 * redraw a line in place.
 * Log lines reaching the same terminal while the line is drawn would be
 * appended to it; hk_progress_hook_log() is a sink that erases it first.
 * Write errors on the stream are ignored: a display never stops training.
 * @param opts  borrowed for the call; NULL: HK_PROGRESS_OPTIONS_INIT.
 * **Ownership:** *out owned, hk_hook_free().
 * **Errors:** INVALID_ARGUMENT naming the option: a wrong version or a bad
 * env, last_step < 0 (other than HK_UNSET_STEPS), every_n_secs negative or
 * not finite (other than HK_UNSET_SECS), an unknown mode; RESOURCE_EXHAUSTED.
 * Later, begin() fails with NOT_FOUND naming the loss tensor when the
 * executor has none of that name, and an after_run with INVALID_ARGUMENT
 * naming it when it is not a numeric scalar; a global step read error is
 * returned by the after_run or end() that read it.
 * **Threads:** any; callbacks on the training thread. **Allocates:** at
 * creation only: its callbacks format into the hook's own buffer.
 */
HK_API hk_code hk_progress_hook_new(hk_hook **out, const hk_progress_options *opts, hk_status *status);

/**
 * A log sink (hk_log_fn) that keeps log lines and a ProgressHook's line
 * apart on a terminal: when the hook has a line drawn in TERMINAL mode it
 * erases it ("\r\033[K" on the hook's stream) before passing the message to
 * hk_log_stderr(); the hook draws again at its next redraw. Install it in
 * the env of the session or loop the hook serves: env.log =
 * hk_progress_hook_log, env.log_user = the hook.
 * @param hook  an hk_hook * from hk_progress_hook_new(), borrowed: it must
 *              outlive every object logging through this sink. NULL, or a
 *              hook that is not a ProgressHook, only forwards to
 *              hk_log_stderr().
 * **Threads:** any (the sink may be called from library threads; it and
 * the hook's redraws take turns on the stream). **Allocates:** no.
 */
HK_API void hk_progress_hook_log(void *hook, hk_log_level level, const char *msg);

/* ---- GlobalStepWaiterHook (group J) ------------------------------ */
#define HK_GLOBAL_STEP_WAITER_OPTIONS_VERSION 1
typedef struct hk_global_step_waiter_options {
  uint32_t version;          /**< HK_GLOBAL_STEP_WAITER_OPTIONS_VERSION */
  const hk_env *env;         /**< NULL: the session's (its clock paces the polls) */
  int64_t wait_until_step;   /**< <= 0: never waits */
  double poll_interval_secs; /**< finite, > 0; default 0.5 */
  double deadline_secs;      /**< HK_UNSET_SECS (default: none) or finite >= 0 */
} hk_global_step_waiter_options;
#define HK_GLOBAL_STEP_WAITER_OPTIONS_INIT \
  { HK_GLOBAL_STEP_WAITER_OPTIONS_VERSION, NULL, 0, 0.5, HK_UNSET_SECS }

/**
 * Initialize options to HK_GLOBAL_STEP_WAITER_OPTIONS_INIT.
 * @param version  HK_GLOBAL_STEP_WAITER_OPTIONS_VERSION, the version the program is compiled with.
 * @return HK_OK; INVALID_ARGUMENT (no message: there is no status), writing
 *         nothing, for a NULL opts or a version that is 0 or above
 *         HK_GLOBAL_STEP_WAITER_OPTIONS_VERSION.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_global_step_waiter_options_init(hk_global_step_waiter_options *opts, uint32_t version);

/**
 * GlobalStepWaiterHook: hold the first run after begin() in its before_run
 * until the global step reaches wait_until_step. It polls GS
 * through the raw session every poll_interval_secs, waiting on the
 * coordinator so a stop ends the wait early; logs "Waiting for global step
 * %d before starting training." once per wait and a progress line whenever
 * GS moved more than 1000 since the last one. wait_until_step <= 0
 * never waits. A wait that fails is tried again at the next run.
 * @param opts  borrowed for the call; NULL: HK_GLOBAL_STEP_WAITER_OPTIONS_INIT
 *              (which never waits).
 * **Ownership:** *out owned, hk_hook_free().
 * **Errors:** INVALID_ARGUMENT naming poll_interval_secs (finite, > 0) or
 * deadline_secs (HK_UNSET_SECS or finite >= 0), a wrong version or a
 * bad env; RESOURCE_EXHAUSTED. Later, begin() fails with FAILED_PRECONDITION
 * "Global step should be created to use GlobalStepWaiterHook.", and
 * the held run() returns CANCELLED "Stopped waiting for global step %d: stop
 * requested." when the coordinator has a stop request or the signal helper
 * fired, DEADLINE_EXCEEDED "Global step %d not reached within %g secs
 * (current step %d)." after deadline_secs, or a GS read error.
 * **Threads:** any. **Allocates:** at creation only.
 */
HK_API hk_code hk_global_step_waiter_hook_new(hk_hook **out, const hk_global_step_waiter_options *opts,
                                              hk_status *status);

/* ---- LoggingTensorHook --------------------- */

/** One (tag, name) pair of hk_logging_tensor_options.tagged. */
typedef struct hk_tagged_tensor {
  const char *tag;  /**< required; copied; the text logged before " = " */
  const char *name; /**< required; copied; a tensor name, "op:k" or "op" */
} hk_tagged_tensor;

/**
 * Formatter of a LoggingTensorHook: makes the line to log from the
 * values of one log. It runs on the training thread, in the after_run (or
 * end()) that logs.
 * @param user    the options' formatter_user.
 * @param tags    n tags, in logging order; borrowed for the call.
 * @param values  n tensors, values[i] for tags[i]; borrowed for the call
 *                (hk_logging_tensor_format_value() writes one as the
 *                hook's own line does).
 * @param line    receives the text to log at INFO, verbatim: the hook adds
 *                nothing to it, not even the seconds. It must stay
 *                valid until the formatter returns control to the hook's
 *                callback that called it (a buffer the formatter reuses will
 *                do). NULL: nothing is logged for this trigger.
 * @return HK_OK, or an error, which that after_run or end() returns
 *         unchanged.
 */
typedef hk_code (*hk_logging_tensor_formatter)(void *user, const char *const *tags, const hk_tensor *values, size_t n,
                                               const char **line, hk_status *status);

/** The longest line the hook formats itself, terminating NUL included; a
 *  longer one is cut and ends with " (truncated)" before the seconds. */
#define HK_LOGGING_TENSOR_LINE_MAX 4096

#define HK_LOGGING_TENSOR_OPTIONS_VERSION 1
typedef struct hk_logging_tensor_options {
  uint32_t version;  /**< HK_LOGGING_TENSOR_OPTIONS_VERSION */
  const hk_env *env; /**< NULL: the session's (its clock times every_n_secs, its sink logs) */
  /** Tensor names, logged in this order, each name its own tag. Array and
   *  names copied. Exactly one of tensors and tagged is non-empty. */
  const char *const *tensors;
  size_t ntensors;
  /** (tag, name) pairs, logged sorted by tag bytewise, as TF sorts a
   *  dict's keys; tags unique. Array and strings copied. */
  const hk_tagged_tensor *tagged;
  size_t ntagged;
  int64_t every_n_iter;                  /**< HK_UNSET_STEPS or >= 1: log every n of this hook's runs */
  double every_n_secs;                   /**< HK_UNSET_SECS or finite > 0: log when n seconds passed */
  int at_end;                            /**< nonzero: log once more in end(); default 0 */
  hk_logging_tensor_formatter formatter; /**< NULL: the hook's own line, "tag1 = v1, tag2 = v2" */
  void *formatter_user;                  /**< borrowed for the hook's life; passed to formatter */
} hk_logging_tensor_options;
#define HK_LOGGING_TENSOR_OPTIONS_INIT \
  { HK_LOGGING_TENSOR_OPTIONS_VERSION, NULL, NULL, 0, NULL, 0, HK_UNSET_STEPS, HK_UNSET_SECS, 0, NULL, NULL }

/**
 * Initialize options to HK_LOGGING_TENSOR_OPTIONS_INIT.
 * @param version  HK_LOGGING_TENSOR_OPTIONS_VERSION, the version the program is compiled with.
 * @return HK_OK; INVALID_ARGUMENT (no message: there is no status), writing
 *         nothing, for a NULL opts or a version that is 0 or above
 *         HK_LOGGING_TENSOR_OPTIONS_VERSION.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_logging_tensor_options_init(hk_logging_tensor_options *opts, uint32_t version);

/**
 * LoggingTensorHook: log the values of some tensors every every_n_iter of
 * its runs or every every_n_secs seconds, and/or at the end.
 * Its timer counts this hook's own runs from 0, not the global step, and
 * begin() resets it and resolves the names: "op:k" is that output, a bare
 * "op" is output 0. On a triggering run it fetches the tensors and
 * logs at INFO one line "tag1 = v1, tag2 = v2", followed by
 * " (%.3f sec)" with the seconds since its previous log except on the
 * first; each value is written as hk_logging_tensor_format_value()
 * says. A formatter's line replaces the whole line. With at_end,
 * end() fetches the tensors once more through the raw session and logs
 * them the same way. Works with any executor that resolves the
 * names: graph tensors, or the arrays and states a host loop registered
 * (hooked/loop.h).
 * @param opts  required (the tensors are); borrowed for the call.
 * **Ownership:** *out owned, hk_hook_free().
 * **Errors:** INVALID_ARGUMENT: "either at_end and/or exactly one
 * of every_n_iter and every_n_secs must be provided." (neither cadence
 * without at_end, or both cadences); "invalid every_n_iter=%d." for
 * every_n_iter <= 0; every_n_secs not finite and > 0, named; a NULL opts,
 * no tensors, both tensors and tagged, a NULL array with a count, a NULL
 * or empty name or a NULL tag (named by index), a tag given twice; a
 * version other than HK_LOGGING_TENSOR_OPTIONS_VERSION or a bad env;
 * RESOURCE_EXHAUSTED. Later, begin() fails with NOT_FOUND naming a tensor
 * the executor does not know, or INVALID_ARGUMENT "Name %s is ambiguous,
 * as this Operation has multiple outputs (at least 2)." for a bare name
 * whose op has an output 1; after_run and end() return the
 * formatter's error, end() a failed run's.
 * **Threads:** any; callbacks and the formatter on the training thread.
 * **Allocates:** at creation only (the line buffer included): a run
 * allocates nothing, also when it logs; end() with at_end runs the
 * executor once more, which may allocate for that new fetch list.
 */
HK_API hk_code hk_logging_tensor_hook_new(hk_hook **out, const hk_logging_tensor_options *opts, hk_status *status);

/**
 * Write a tensor's value as text, as LoggingTensorHook logs it:
 * booleans "true"/"false"; integers in decimal; f16, bf16, f32, f64 with
 * "%g" ("nan", "inf", "-inf" included); strings in double quotes, with '"'
 * and '\' escaped by a backslash and other bytes below 0x20 or 0x7f as
 * "\xHH"; a tensor of rank >= 1 in brackets, its elements separated by one
 * space and nested per dimension ("[[1 2] [3 4]]"); a dimension longer
 * than 6 shows its first 3 and last 3 entries with "..." between
 * ("[0 1 2 ... 7 8 9]"); an empty dimension "[]". A NULL tensor, an invalid
 * dtype or rank, or data missing or shorter than the shape needs gives
 * "<invalid tensor>".
 * @param buf    receives the text, cut to cap - 1 bytes and NUL-terminated
 *               when cap > 0; may be NULL when cap is 0.
 * @param value  borrowed for the call.
 * @return the length of the whole text (without the NUL), as snprintf: it
 *         was cut when the return is >= cap.
 * **Ownership:** buf is the caller's; nothing is kept.
 * **Threads:** any. **Errors:** none. **Allocates:** no.
 */
HK_API size_t hk_logging_tensor_format_value(char *buf, size_t cap, const hk_tensor *value);

/* ---- NanTensorHook ----------------------------------- */
#define HK_NAN_TENSOR_OPTIONS_VERSION 1
typedef struct hk_nan_tensor_options {
  uint32_t version;  /**< HK_NAN_TENSOR_OPTIONS_VERSION */
  const hk_env *env; /**< NULL: the session's */
  /** The loss: a tensor name ("op:k", or "op" for output 0), copied and
   *  resolved in begin() ... */
  const char *loss;
  /** ... or a tensor handle of the session's executor. Exactly one of the
   *  two is given. */
  hk_handle loss_tensor;
  /** Default 1: a divergent loss fails the run; 0: it requests a stop. */
  int fail_on_nan_loss;
  /**
   * Default 1: +Inf and -Inf count as divergence too, not only NaN. TF's
   * hook checks NaN alone ("Infinity is not NaN"); set 0 for exactly that.
   * The default departs from TF because this hook is the guard that keeps
   * non-finite values out of checkpoints (see hk_nan_tensor_hook_new()):
   * an infinite loss means infinite or NaN gradients, so the step that
   * produced it has already left non-finite weights (or will at the next
   * update), and a checkpoint of them would be no better than a NaN one —
   * and, once written, it rotates a good checkpoint out. A training
   * that recovers from an infinite loss is not a case worth that risk;
   * a program that has one (say, a loss scaled in f16 that overflows and
   * whose step it skips) passes 0.
   */
  int non_finite;
} hk_nan_tensor_options;
#define HK_NAN_TENSOR_OPTIONS_INIT \
  { HK_NAN_TENSOR_OPTIONS_VERSION, NULL, NULL, HK_NO_HANDLE, 1, 1 }

/**
 * Initialize options to HK_NAN_TENSOR_OPTIONS_INIT.
 * @param version  HK_NAN_TENSOR_OPTIONS_VERSION, the version the program is compiled with.
 * @return HK_OK; INVALID_ARGUMENT (no message: there is no status), writing
 *         nothing, for a NULL opts or a version that is 0 or above
 *         HK_NAN_TENSOR_OPTIONS_VERSION.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_nan_tensor_options_init(hk_nan_tensor_options *opts, uint32_t version);

/**
 * NanTensorHook: fetch the loss on every run and watch it for
 * divergence: any element that is NaN (f16, bf16, f32 or f64; half and
 * bfloat16 NaNs are decoded from their bits), or, with non_finite (the
 * default), +Inf or -Inf. With fail_on_nan_loss (the default) the hook
 * logs at ERROR "Model diverged with loss = NaN." and its after_run
 * returns INVALID_ARGUMENT "NaN loss during training."; otherwise it
 * logs the same text at WARNING and requests a stop (the step's later
 * hooks still run). For an infinite loss the texts read "Inf" or
 * "-Inf" instead of "NaN" ("Model diverged with loss = -Inf.", "Inf loss
 * during training."); a loss with both reports NaN.
 *
 * **No divergent checkpoints.** In fail mode, place this hook BEFORE the
 * checkpoint saver hooks in the session's list: when its after_run fails,
 * the later hooks' after_run do not run, so the checkpoint saver
 * does not save that step, and the session closed with that error runs no
 * end(), so no final checkpoint is written either. Every checkpoint
 * then holds a step whose loss was finite, and none is rotated out by a
 * divergent one. What the guard sees is the loss tensor: a loss the
 * executor computes before the step's update reaches it one step
 * late, so fetch a loss computed from the updated values (the output of
 * the update op, or the host loop's array the program's step writes).
 * The host loop (hooked/loop.h) runs its own checkpoint hook BEFORE the
 * program's hooks, so a guard among them cannot keep its saves clean: name
 * the loss in the loop's nan_guard option instead, and the loop runs this
 * hook, in fail mode, ahead of its checkpoint hook. A
 * MonitoredTrainingSession (hooked/training_session.h) runs its `hooks`
 * after its CheckpointSaver too: pass the guard in chief_only_hooks, which
 * run before it (only the chief saves).
 * @param opts  required (the loss is); borrowed for the call.
 * **Ownership:** *out owned, hk_hook_free().
 * **Errors:** INVALID_ARGUMENT for a NULL opts, neither or both of loss and
 * loss_tensor, an empty loss name, a version other than
 * HK_NAN_TENSOR_OPTIONS_VERSION or a bad env; RESOURCE_EXHAUSTED. Later,
 * begin() fails with NOT_FOUND naming a loss the executor does not know,
 * or INVALID_ARGUMENT when the loss is a variable of a dtype that is not
 * floating; the first after_run with INVALID_ARGUMENT naming the loss when
 * the fetched loss is not of a floating dtype; every after_run with
 * "NaN loss during training." as above.
 * **Threads:** any; callbacks on the training thread.
 * **Allocates:** at creation only.
 */
HK_API hk_code hk_nan_tensor_hook_new(hk_hook **out, const hk_nan_tensor_options *opts, hk_status *status);

/* ---- FinalOpsHook ------------------------------------ */

/** A named feed of hk_final_ops_options.final_feed. */
typedef struct hk_final_feed {
  const char *name; /**< required; copied; resolved in begin() */
  hk_tensor value;  /**< copied, data included; any dtype but STRING */
} hk_final_feed;

#define HK_FINAL_OPS_OPTIONS_VERSION 1
typedef struct hk_final_ops_options {
  uint32_t version;  /**< HK_FINAL_OPS_OPTIONS_VERSION */
  const hk_env *env; /**< NULL: the session's */
  /** Names to evaluate in end(), non-empty; array and names copied. "op:k"
   *  is a tensor; a bare "op" is its output 0 when it has one, else the
   *  op itself, run as a target (its value is an empty tensor of dtype
   *  HK_DTYPE_INVALID, TF's None). */
  const char *const *final_ops;
  size_t nfinal_ops;
  const hk_final_feed *final_feed; /**< array, names and values copied; may be empty */
  size_t nfinal_feed;
} hk_final_ops_options;
#define HK_FINAL_OPS_OPTIONS_INIT \
  { HK_FINAL_OPS_OPTIONS_VERSION, NULL, NULL, 0, NULL, 0 }

/**
 * Initialize options to HK_FINAL_OPS_OPTIONS_INIT.
 * @param version  HK_FINAL_OPS_OPTIONS_VERSION, the version the program is compiled with.
 * @return HK_OK; INVALID_ARGUMENT (no message: there is no status), writing
 *         nothing, for a NULL opts or a version that is 0 or above
 *         HK_FINAL_OPS_OPTIONS_VERSION.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_final_ops_options_init(hk_final_ops_options *opts, uint32_t version);

/**
 * FinalOpsHook: in end(session) only — so at a clean close —
 * run final_ops with final_feed through the raw session, once, and keep
 * the values (hk_final_ops_hook_values()). When that run fails with
 * OUT_OF_RANGE it logs a WARNING that starts "An OutOfRangeError or
 * StopIteration exception is raised by the code in FinalOpsHook." and
 * explains that final ops must read variables only, never an input source,
 * and end() returns that OUT_OF_RANGE error; any other error is returned
 * as is. Either way no values are kept.
 * @param opts  required (final_ops is); borrowed for the call.
 * **Ownership:** *out owned, hk_hook_free().
 * **Errors:** INVALID_ARGUMENT for a NULL opts, an empty final_ops, a NULL
 * array with a count, a NULL or empty name, a feed value that is not a
 * valid tensor (hk_tensor_init()'s rules) or is STRING (named by index), a
 * version other than HK_FINAL_OPS_OPTIONS_VERSION or a bad env;
 * RESOURCE_EXHAUSTED. Later, begin() fails with NOT_FOUND naming a name the
 * executor knows neither as a tensor nor as an op, and end() with the
 * run's error or RESOURCE_EXHAUSTED while copying the values.
 * **Threads:** any; callbacks on the training thread.
 * **Allocates:** at creation, and in end() (the run, the copies).
 */
HK_API hk_code hk_final_ops_hook_new(hk_hook **out, const hk_final_ops_options *opts, hk_status *status);

/**
 * The values the last end() of a FinalOpsHook computed: one per
 * final_ops name, in that order.
 * @param values  receives the array, NULL on failure. The tensors and their
 *                data are owned by the hook, valid until its next begin()
 *                (a new session) or hk_hook_free().
 * @param count   receives the number of values, 0 on failure.
 * @param hook    one made by hk_final_ops_hook_new() (recognised by the
 *                vtable it was made with, see hk_hook_user_if()).
 * **Errors:** INVALID_ARGUMENT for NULL arguments or another kind of hook;
 * FAILED_PRECONDITION "FinalOpsHook: no final values: end() has not run
 * successfully since begin()".
 * **Threads:** the training thread. **Allocates:** no.
 */
HK_API hk_code hk_final_ops_hook_values(const hk_tensor **values, size_t *count, const hk_hook *hook,
                                        hk_status *status);

/* ---- FeedFnHook -------------------------------------- */

/**
 * Feed callback of a FeedFnHook, called in every before_run on the
 * training thread.
 * @param feeds   receives the feeds to request for this run: the array and
 *                the tensors' data are the callback's, and stay valid until
 *                the hook's after_run of the same run returns, or until the
 *                run returns when no after_run follows. NULL with 0:
 *                no feeds this run.
 * @param nfeeds  receives their number.
 * @return HK_OK, or an error, which before_run returns unchanged, so the
 *         step does not run.
 */
typedef hk_code (*hk_feed_fn)(void *user, const hk_feed **feeds, size_t *nfeeds, hk_status *status);

#define HK_FEED_FN_OPTIONS_VERSION 1
typedef struct hk_feed_fn_options {
  uint32_t version;   /**< HK_FEED_FN_OPTIONS_VERSION */
  const hk_env *env;  /**< NULL: the session's */
  hk_feed_fn feed_fn; /**< required */
  void *feed_fn_user; /**< borrowed for the hook's life; passed to feed_fn */
} hk_feed_fn_options;
#define HK_FEED_FN_OPTIONS_INIT \
  { HK_FEED_FN_OPTIONS_VERSION, NULL, NULL, NULL }

/**
 * Initialize options to HK_FEED_FN_OPTIONS_INIT.
 * @param version  HK_FEED_FN_OPTIONS_VERSION, the version the program is compiled with.
 * @return HK_OK; INVALID_ARGUMENT (no message: there is no status), writing
 *         nothing, for a NULL opts or a version that is 0 or above
 *         HK_FEED_FN_OPTIONS_VERSION.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_feed_fn_options_init(hk_feed_fn_options *opts, uint32_t version);

/**
 * FeedFnHook: in every before_run, call feed_fn and request exactly
 * the feeds it returns, and nothing else (no fetches, no targets). The
 * feeds are merged with the caller's and the other hooks'.
 * For graph executors: an executor over memory the program owns takes no
 * feeds — the host loop (hooked/loop.h) refuses them when the step ends,
 * with INVALID_ARGUMENT "the host loop takes no feeds (tensor '%s' is
 * fed) ...", which fails the loop.
 * @param opts  required (feed_fn is); borrowed for the call.
 * **Ownership:** *out owned, hk_hook_free().
 * **Errors:** INVALID_ARGUMENT for a NULL opts or feed_fn, a version other
 * than HK_FEED_FN_OPTIONS_VERSION or a bad env; RESOURCE_EXHAUSTED. Later,
 * before_run returns feed_fn's error unchanged, or INVALID_ARGUMENT when
 * feed_fn returns a NULL array with a count.
 * **Threads:** any; feed_fn on the training thread.
 * **Allocates:** at creation only (feed_fn's allocations are its own).
 */
HK_API hk_code hk_feed_fn_hook_new(hk_hook **out, const hk_feed_fn_options *opts, hk_status *status);

/* ---- StepCounterHook ---------------------------- */
#define HK_STEP_COUNTER_OPTIONS_VERSION 1
typedef struct hk_step_counter_options {
  uint32_t version;  /**< HK_STEP_COUNTER_OPTIONS_VERSION */
  const hk_env *env; /**< NULL: the session's (its clock times the rate, its sink logs) */
  /** HK_UNSET_STEPS: 100, unless every_n_secs is given; else >= 1. */
  int64_t every_n_steps;
  double every_n_secs; /**< HK_UNSET_SECS or finite > 0; not with every_n_steps */
  /** Copied; NULL: no summaries unless summary_writer. The session's shared
   *  writer of this directory, created with its parents in begin(). */
  const char *output_dir;
  /** Borrowed, must outlive the hook's sessions; wins over output_dir, as in
   *  TF. NULL: output_dir's. */
  hk_summary_writer *summary_writer;
  int64_t steps_per_run; /**< >= 1, default 1 */
  /** How often the rate is logged, apart from how often it is written:
   *  HK_UNSET_SECS (default): with every summary, as TensorFlow does; 0:
   *  never (the summary only); finite > 0: at most once per that many
   *  seconds of the hook's clock (a SecondOrStepTimer), the first rate
   *  included. The MonitoredTrainingSession and the host loop pass 10. */
  double log_every_secs;
} hk_step_counter_options;
#define HK_STEP_COUNTER_OPTIONS_INIT \
  { HK_STEP_COUNTER_OPTIONS_VERSION, NULL, HK_UNSET_STEPS, HK_UNSET_SECS, NULL, NULL, 1, HK_UNSET_SECS }

/**
 * Initialize options to HK_STEP_COUNTER_OPTIONS_INIT.
 * @param version  HK_STEP_COUNTER_OPTIONS_VERSION, the version the program is compiled with.
 * @return HK_OK; INVALID_ARGUMENT (no message: there is no status), writing
 *         nothing, for a NULL opts or a version that is 0 or above
 *         HK_STEP_COUNTER_OPTIONS_VERSION.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_step_counter_options_init(hk_step_counter_options *opts, uint32_t version);

/**
 * StepCounterHook: measures training speed. It fetches GS in
 * every before_run; in after_run, when the timer may trigger at the stale GS
 * + steps_per_run, it reads GS through the raw session and, when the timer
 * triggers at it, updates the timer and — except at the first update —
 * logs "<GS name>/sec: %g" (e.g. "global_step/sec: 12.5", the GS variable's
 * name without ":0") with elapsed steps / elapsed seconds of the hook's
 * clock, and writes that value as a scalar summary of that tag at GS into
 * the writer; with log_every_secs the log line is written at most that
 * often, the summary still at every trigger. A zero elapsed time writes
 * and logs nothing.
 * When the stale GS equals the previous run's, it logs WARNING "It seems
 * that global step has not been increased. Current value (could be stable):
 * %d vs previous value: %d." at most 5 times per hook. Timer and
 * previous step restart at begin() and at every session creation.
 * @param opts  borrowed for the call; NULL: HK_STEP_COUNTER_OPTIONS_INIT
 *              (every 100 steps, logging only).
 * **Ownership:** *out owned, hk_hook_free().
 * **Errors:** INVALID_ARGUMENT naming the option: a bad version or env, "Can
 * not provide both every_n_secs and every_n_steps.", every_n_steps < 1
 * or every_n_secs not finite and > 0, steps_per_run < 1, an empty
 * output_dir, a log_every_secs that is negative or not finite;
 * RESOURCE_EXHAUSTED. Later: begin() fails with
 * FAILED_PRECONDITION "Global step should be created to use
 * StepCounterHook.", INVALID_ARGUMENT for a GS that is not an integer
 * scalar, or a file-system error creating output_dir; an after_run
 * that writes returns the writer's error.
 * **Threads:** any; callbacks on the training thread.
 * **Allocates:** at creation and in begin(); a run on which it does not
 * trigger allocates nothing.
 */
HK_API hk_code hk_step_counter_hook_new(hk_hook **out, const hk_step_counter_options *opts, hk_status *status);

/* ---- SummarySaverHook --------------------------- */
#define HK_SUMMARY_SAVER_OPTIONS_VERSION 1
typedef struct hk_summary_saver_options {
  uint32_t version;   /**< HK_SUMMARY_SAVER_OPTIONS_VERSION */
  const hk_env *env;  /**< NULL: the session's (its clock times save_secs) */
  double save_secs;   /**< HK_UNSET_SECS or finite > 0 (exactly one of the two cadences) */
  int64_t save_steps; /**< HK_UNSET_STEPS or >= 1 */
  /** Copied; the session's shared writer of this directory, created
   *  with its parents in begin(). NULL and no summary_writer: nothing is
   *  written and no summary op runs. */
  const char *output_dir;
  /** Borrowed, must outlive the hook's sessions; wins over output_dir. */
  hk_summary_writer *summary_writer;
  /** Borrowed; its summary_op (hk_scaffold_summary_op(), read once it is
   *  finalized). Exactly one of scaffold and summary_op. */
  hk_scaffold *scaffold;
  /** Tensor handles of serialized Summary messages (1-D U8 tensors, e.g.
   *  from hk_graph_merge_summary()); array copied. */
  const hk_handle *summary_op;
  size_t nsummary_op;
} hk_summary_saver_options;
#define HK_SUMMARY_SAVER_OPTIONS_INIT \
  { HK_SUMMARY_SAVER_OPTIONS_VERSION, NULL, HK_UNSET_SECS, HK_UNSET_STEPS, NULL, NULL, NULL, NULL, 0 }

/**
 * Initialize options to HK_SUMMARY_SAVER_OPTIONS_INIT.
 * @param version  HK_SUMMARY_SAVER_OPTIONS_VERSION, the version the program is compiled with.
 * @return HK_OK; INVALID_ARGUMENT (no message: there is no status), writing
 *         nothing, for a NULL opts or a version that is 0 or above
 *         HK_SUMMARY_SAVER_OPTIONS_VERSION.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_summary_saver_options_init(hk_summary_saver_options *opts, uint32_t version);

/**
 * SummarySaverHook: saves summaries every save_steps steps or
 * save_secs seconds. before_run fetches GS on every run and, on the first
 * run after begin() and whenever the timer may trigger at the next step,
 * the summary ops too (none when the Scaffold has no summary_op).
 * after_run, when there is a writer: GS is the stale GS + 1, read through
 * the raw session on the first run and on summary runs; on the first run it
 * writes SessionLog START at GS; on a summary run it updates the timer and
 * writes each fetched Summary verbatim at GS. end() flushes the
 * writer. The fetched tensors must be 1-D U8 tensors holding serialized
 * Summary messages (what the summary ops of hooked/graph.h produce).
 * @param opts  required (a cadence and the summaries are); borrowed for the
 *              call.
 * **Ownership:** *out owned, hk_hook_free().
 * **Errors:** INVALID_ARGUMENT naming the option: a NULL out or opts, a bad
 * version or env, "Exactly one of scaffold or summary_op must be provided.",
 * "Either save_secs or save_steps should be provided." / "Can not
 * provide both save_secs and save_steps." or an invalid cadence,
 * a NULL summary_op with a count or an unset handle in it, an empty
 * output_dir; RESOURCE_EXHAUSTED. Later: begin() fails with
 * FAILED_PRECONDITION "Global step should be created to use
 * SummarySaverHook.", INVALID_ARGUMENT for a GS that is not an integer
 * scalar, or a file-system
 * error creating output_dir; after_run returns INVALID_ARGUMENT naming a
 * fetched summary that is not a 1-D U8 serialized Summary, and the writer's
 * errors; end() the flush's.
 * **Threads:** any; callbacks on the training thread.
 * **Allocates:** at creation, in begin() and at the first run after a
 * Scaffold is finalized; on summary runs (the records); a run that fetches
 * only GS allocates nothing.
 */
HK_API hk_code hk_summary_saver_hook_new(hk_hook **out, const hk_summary_saver_options *opts, hk_status *status);

/**
 * Save now, between runs, through a CheckpointSaverHook or an
 * AsyncCheckpointSaverHook attached to an open session, with its Saver and
 * the raw session of its last after_create_session. Synchronous: the
 * checkpoint is durable when this returns; the asynchronous hook first
 * waits for its write in flight and processes its completion.
 * @param prefix  may be NULL; receives the checkpoint's prefix, borrowed
 *                from the hook until its next save on demand or its
 *                session ends.
 * @param name  NULL: a managed checkpoint at the current global step,
 *              exactly like a timer-triggered save (listeners, log lines,
 *              event, retention, state file), and the timer restarts
 *              from it; a listener's stop request is ignored, as at creation.
 * Given: an unmanaged checkpoint "<checkpoint_dir>/<name>"
 *              (a valid name: 1 to 255 bytes without '/', '\\', '"', control
 *              bytes or "..", and not ".";
 *              not of the managed form
 *              "<checkpoint_basename>-<digits>", which is reserved for the
 *              checkpoints retention manages), written atomically over
 *              an earlier one of that name, never listed in the state file
 *              nor deleted by retention; no listener runs.
 * **Errors:** INVALID_ARGUMENT for a NULL hook, a hook that is not a
 * checkpoint saver hook, a bad name or one of the managed form (naming it
 * and the form); FAILED_PRECONDITION when the hook
 * serves no session; the processed write error of the asynchronous hook;
 * the Saver's and the listeners' errors (file-system errors, e.g.
 * RESOURCE_EXHAUSTED for a full disk, after which the directory holds what it held before).
 * **Threads:** the training thread, between runs (never from inside a hook
 * callback of the same session). **Allocates:** yes.
 */
HK_API hk_code hk_checkpoint_saver_hook_save(const char **prefix, hk_hook *hook, const char *name, hk_status *status);

/* ---- ProfilerHook ----------------------------- */
#define HK_PROFILER_OPTIONS_VERSION 1
typedef struct hk_profiler_options {
  uint32_t version;       /**< HK_PROFILER_OPTIONS_VERSION */
  const hk_env *env;      /**< NULL: the session's (clock, log, fs) */
  double save_secs;       /**< HK_UNSET_SECS or finite > 0 (exactly one of the two cadences) */
  int64_t save_steps;     /**< HK_UNSET_STEPS or >= 1 */
  const char *output_dir; /**< copied; NULL or "": the current directory; created with parents in begin() */
} hk_profiler_options;
#define HK_PROFILER_OPTIONS_INIT \
  { HK_PROFILER_OPTIONS_VERSION, NULL, HK_UNSET_SECS, HK_UNSET_STEPS, NULL }

/**
 * Initialize options to HK_PROFILER_OPTIONS_INIT.
 * @param version  HK_PROFILER_OPTIONS_VERSION, the version the program is compiled with.
 * @return HK_OK; INVALID_ARGUMENT (no message: there is no status), writing
 *         nothing, for a NULL opts or a version that is 0 or above
 *         HK_PROFILER_OPTIONS_VERSION.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_profiler_options_init(hk_profiler_options *opts, uint32_t version);

/**
 * ProfilerHook: every save_steps steps or save_secs seconds
 * (never on the first run) it asks for a traced run (trace_level 3)
 * and writes "<output_dir>/timeline-<GS>.json" (atomically; logs "Saving
 * timeline for %d into '%s'."): Chrome trace-event JSON that Perfetto and
 * chrome://tracing open, with one span for the run ("step <GS>"), one per
 * hook callback and for the executor run (the session's spans), and
 * one per op the executor traced — every op of the graph executor, the
 * program's "step" of the host loop — each with its thread id. Place it
 * FIRST in the hook list to see every other hook's before_run (a run is
 * traced from the hook that asks). Beside it, as TensorFlow's hook does, it
 * writes a tagged_run_metadata event "step_<GS>" at step GS into the event
 * file of output_dir (the writer the session shares for it): a
 * serialized RunMetadata whose step_stats hold the same spans, and the
 * ops, as NodeExecStats. Both are written once every after_run of the
 * traced run has run, before run() returns (TensorFlow writes them in the
 * hook's own after_run, which would cut off the later hooks' spans); a
 * traced run that fails writes neither. Driven without a session, the hook
 * writes at its next before_run or at end().
 * @param opts  required (a cadence is); borrowed for the call.
 * **Ownership:** *out owned, hk_hook_free().
 * **Errors:** INVALID_ARGUMENT: a NULL out or opts, a bad version or env,
 * "Either save_secs or save_steps should be provided." / "Can not provide
 * both save_secs and save_steps." or an invalid cadence;
 * RESOURCE_EXHAUSTED. Later: begin() fails with FAILED_PRECONDITION
 * "Global step should be created to use ProfilerHook." or a
 * file-system error creating output_dir; a failed write of the timeline or
 * of the event fails the run() of the traced run, as a failed
 * after_run does.
 * **Threads:** any; callbacks on the training thread.
 * **Allocates:** at creation, and on traced steps (the timeline text, the
 * run metadata, the event record; their buffers are reused); an untraced
 * step allocates nothing.
 */
HK_API hk_code hk_profiler_hook_new(hk_hook **out, const hk_profiler_options *opts, hk_status *status);

#ifdef __cplusplus
}
#endif

/* The checkpoint hooks and the EarlyStoppingHook have headers of their own;
 * hooks.h keeps bringing them. */
#include "hooked/checkpoint_saver.h"
#include "hooked/early_stopping.h"

#endif /* HOOKED_HOOKS_H */
