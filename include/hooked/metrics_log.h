/*
 * hooked — the metrics log: a CSV or JSON-lines file of the values of a
 * training run, one row every N steps or T seconds (Keras' CSVLogger).
 *
 * A row holds the global step, the wall time, the values of chosen tensors
 * fetched with the step's own run (a graph's "loss", a host loop's
 * registered arrays) and values the program reports itself
 * (hk_metrics_log_report(): a validation pass outside the graph):
 *
 *     step,wall_time,loss,accuracy,val_loss        (CSV)
 *     500,1764316800.25,0.3125,0.90625,0.40000001
 *
 *     {"step":500,"wall_time":1764316800.25,"loss":0.3125,"accuracy":0.90625,"val_loss":null}   (JSON lines)
 *
 * Across restarts the file keeps each step once. When a session is created
 * (after its checkpoint is restored, at global step S) the hook reads the
 * file, keeps its rows up to step S, drops the rows past S (a crashed run
 * wrote them after the checkpoint this run resumed from; it logs how many
 * at INFO) and a last line without its newline (a write cut short), and
 * goes on appending. A CSV file's header is written once; a CSV file whose
 * header names other columns is refused, naming both lists. A JSON-lines
 * row names its own columns, so a restart with other columns just writes
 * rows with other keys.
 *
 * How the file stays parseable at every instant. The kept rows are written
 * to "<path>.tmp", which is fsynced and renamed over the file (then the
 * directory fsynced), and the rows that follow are appended to that file,
 * one write of a whole line each, with no buffer of the hook's: a kill at
 * any instant leaves the old file or the new one, every line of it complete
 * but maybe the last, which the next start drops. (The file system
 * interface, hooked/sys/fs.h, has no truncate: the rewrite costs a copy of
 * the kept rows at each session creation, which is also what makes the
 * truncation itself atomic.) Durability: a row is handed to the operating
 * system when it is written, so it survives the process; it is fsynced at
 * every checkpoint (through the listener of
 * hk_metrics_log_checkpoint_listener(), which a host loop installs with
 * hk_loop_add_metrics_log()) and at the session's end, so after a power
 * loss the log holds at least the rows up to the newest checkpoint.
 *
 * Written against the public headers only, like every built-in hook.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_METRICS_LOG_H
#define HOOKED_METRICS_LOG_H

#include "hooked/common.h"
#include "hooked/hooks.h"
#include "hooked/hook.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The file's format. */
typedef enum hk_metrics_log_format {
  /** By the path's suffix: ".csv" is CSV, ".jsonl" or ".json" JSON lines;
   *  any other suffix is refused. */
  HK_METRICS_LOG_AUTO = 0,
  /**
   * CSV (RFC 4180): a header row "step,wall_time,<columns>", then one row a
   * line, "\n"-terminated. A column name holding a comma, a double quote, CR
   * or LF is quoted, its double quotes doubled. An empty field is a value
   * not reported since the previous row (or a fetched value missing, see
   * hk_metrics_log_hook_new()); NaN and infinities are "nan", "inf", "-inf"
   * (what Python's float() and pandas read). Numbers in either format read
   * back exactly and have a '.' for their decimal point, whatever the
   * program's locale.
   */
  HK_METRICS_LOG_CSV = 1,
  /**
   * JSON lines: one object a line, keys "step", "wall_time", then the
   * columns in order. A missing value is null; NaN and infinities, which
   * JSON has no number for, are the strings "NaN", "Infinity" and
   * "-Infinity" (what Python's float() reads).
   */
  HK_METRICS_LOG_JSONL = 2
} hk_metrics_log_format;

#define HK_METRICS_LOG_OPTIONS_VERSION 1
typedef struct hk_metrics_log_options {
  uint32_t version; /**< HK_METRICS_LOG_OPTIONS_VERSION */
  /** NULL: the session's. Its file system writes the file, its wall clock
   *  stamps the rows, its sink logs. */
  const hk_env *env;
  /** Required; copied. The log file; its directory is created with its
   *  parents when missing. */
  const char *path;
  hk_metrics_log_format format; /**< default HK_METRICS_LOG_AUTO */
  /**
   * Tensor names whose values are columns, named as given, in this order:
   * a graph's tensors ("loss" is output 0 of op "loss", "loss:0" the same),
   * a host loop's registered arrays. Each must hold one number of any float
   * or integer dtype. Fetched with the run of each step that writes a row.
   * Array and names copied; may be empty.
   */
  const char *const *tensors;
  size_t ntensors;
  /** NULL: the tensors' columns are named as the tensors; else ntensors
   *  names, columns[i] the column of tensors[i] ("loss" for "train:0").
   *  Array and names copied. */
  const char *const *columns;
  /** Column names the program reports values for with
   *  hk_metrics_log_report(), after the tensors' columns, in this order.
   *  Array and names copied; may be empty. */
  const char *const *reported;
  size_t nreported;
  /** Exactly one of the two cadences: a row after each step that brings the
   *  global step to a new multiple of every_n_steps (>= 1; the same steps
   *  however often the run was restarted), or after the first step and then
   *  each step at least every_n_secs seconds (finite, > 0) after the
   *  previous row's. */
  int64_t every_n_steps; /**< HK_UNSET_STEPS or >= 1 */
  double every_n_secs;   /**< HK_UNSET_SECS or finite > 0 */
} hk_metrics_log_options;
#define HK_METRICS_LOG_OPTIONS_INIT                                                                          \
  {                                                                                                          \
    HK_METRICS_LOG_OPTIONS_VERSION, NULL, NULL, HK_METRICS_LOG_AUTO, NULL, 0, NULL, NULL, 0, HK_UNSET_STEPS, \
        HK_UNSET_SECS                                                                                        \
  }

/**
 * Initialize options to HK_METRICS_LOG_OPTIONS_INIT.
 * @return HK_OK, or INVALID_ARGUMENT (no message) for a NULL opts or
 *         another version.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_metrics_log_options_init(hk_metrics_log_options *opts, uint32_t version);

/**
 * MetricsLogHook: write a row of the run's values to a CSV or JSON-lines
 * file every every_n_steps steps or every_n_secs seconds, keeping each step
 * once across restarts (see the file comment).
 *
 * When it writes: in the after_run of a step that the cadence picks, at the
 * global step after that step (read through the raw session), never at a
 * session's creation. The hook fetches the global step with every run, and
 * the tensors with each run that may bring the global step to a new
 * multiple (with a graph the fetched global step is the step's start, with a
 * host loop its end: it fetches on the two runs that may) or, with
 * every_n_secs, with each run after the time has come. A run that moves the
 * global step by more than two at once and reaches a multiple it was not
 * fetched for writes its row with those columns empty.
 *
 * A row's reported columns hold the last value hk_metrics_log_report() gave
 * since the previous row, and are empty when none was given.
 *
 * Place the hook BEFORE the checkpoint saver (in a MonitoredTrainingSession
 * in chief_only_hooks, with a host loop through hk_loop_add_metrics_log()):
 * the row of a step is then written before that step's checkpoint, so a
 * restart from it finds the row. Placed after the saver, a kill between the
 * two loses the row of the checkpoint's step.
 *
 * @param opts  required (path is); borrowed for the call.
 * **Ownership:** *out owned, hk_hook_free().
 * **Errors:** INVALID_ARGUMENT naming the option: a NULL opts, a wrong
 * version or bad env, no or an empty path, a path whose suffix says no
 * format with HK_METRICS_LOG_AUTO, an unknown format, a NULL array with a
 * count, a NULL or empty tensor or column name, a column name given twice
 * or named "step" or "wall_time", neither or both cadences, every_n_steps < 1, every_n_secs
 * not finite and > 0; RESOURCE_EXHAUSTED. Later, begin() fails with
 * FAILED_PRECONDITION when the executor has no global step and NOT_FOUND
 * naming a tensor it does not know; after_create_session fails with
 * FAILED_PRECONDITION naming the file when it is a CSV file whose header
 * names other columns (both lists quoted) or a file whose first line is no
 * row of a metrics log (the file is left as it was), and with the file
 * system's errors naming the path; an after_run that writes fails with
 * INVALID_ARGUMENT naming a tensor that is not one number, and with the
 * file system's errors (after which the hook writes nothing more: the
 * line it cut short is dropped at the next start).
 * **Threads:** any; callbacks on the training thread.
 * **Allocates:** at creation, and at each session creation (the kept rows
 * are read and copied); a run allocates nothing, also when it writes a row.
 */
HK_API hk_code hk_metrics_log_hook_new(hk_hook **out, const hk_metrics_log_options *opts, hk_status *status);

/**
 * Hand a MetricsLogHook the value of a reported column: the next row
 * written holds it (a later report before that row replaces it). Report
 * inside the step the value belongs to — between hk_loop_step_begin() and
 * hk_loop_step_end(), or before the hk_session_run() of that step — so a
 * row written at that step has it. The hook's begin() forgets values
 * reported before it.
 * @param name  one of the options' reported names; borrowed for the call.
 * **Errors:** INVALID_ARGUMENT for a NULL hook or name, a hook that is not a
 * MetricsLogHook, or a name that is not one of its reported columns
 * (named).
 * **Threads:** the training thread, between the hook's callbacks.
 * **Allocates:** no.
 */
HK_API hk_code hk_metrics_log_report(hk_hook *hook, const char *name, double value, hk_status *status);

/**
 * Make the rows written so far durable (fsync of the file). The checkpoint
 * listener and the hook's end() call it; nothing to do while the hook
 * serves no session.
 * **Errors:** INVALID_ARGUMENT for a NULL hook or one that is not a
 * MetricsLogHook; the file system's errors, naming the path.
 * **Threads:** the training thread. **Allocates:** no.
 */
HK_API hk_code hk_metrics_log_sync(hk_hook *hook, hk_status *status);

/**
 * Fill a checkpoint listener (hooked/checkpoint_saver.h) whose before_save makes the
 * log durable (hk_metrics_log_sync()), so every checkpoint is written after
 * the rows up to its step are on disk. Give it to the checkpoint saver hook
 * (its options' listeners; a MonitoredTrainingSession's
 * checkpoint_listeners). hk_loop_add_metrics_log() does so for a host loop.
 * @param out   filled on success; zeroed on failure. Its vtable is static,
 *              its user the hook's state: borrowed, valid until
 *              hk_hook_free().
 * **Errors:** INVALID_ARGUMENT for a NULL out or hook, or a hook that is
 * not a MetricsLogHook.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_metrics_log_checkpoint_listener(hk_checkpoint_listener *out, hk_hook *hook, hk_status *status);

/** What a MetricsLogHook did (hk_metrics_log_hook_info()). */
typedef struct hk_metrics_log_info {
  const char *path;     /**< the log file (borrowed from the hook) */
  int format;           /**< HK_METRICS_LOG_CSV or HK_METRICS_LOG_JSONL */
  int64_t rows;         /**< rows written by the hook since its last session creation */
  int64_t kept_rows;    /**< rows kept at the last session creation */
  int64_t dropped_rows; /**< rows past the restored step dropped then */
  int dropped_torn;     /**< nonzero: a last line without its newline was dropped then */
} hk_metrics_log_info;

/**
 * Read what a MetricsLogHook did.
 * @param out  filled on success; zeroed first.
 * **Errors:** INVALID_ARGUMENT for a NULL out or hook, or a hook that is
 * not a MetricsLogHook.
 * **Threads:** the training thread. **Allocates:** no.
 */
HK_API hk_code hk_metrics_log_hook_info(hk_metrics_log_info *out, const hk_hook *hook, hk_status *status);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_METRICS_LOG_H */
