/*
 * hooked — what a program passes to a run and gets back (the run arguments,
 * options and metadata), and raw sessions, the executor's own sessions that
 * a session manager hands out. Every program that runs a session uses these;
 * implementers of executors find the rest in hooked/sys/executor.h.
 *
 * Modules: run (hk_run_args, hk_run_options, hk_run_metadata, hk_feed and
 * hk_raw_session are modules of their own).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_RUN_H
#define HOOKED_RUN_H

#include "hooked/common.h"
#include "hooked/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** An executor (hooked/graph.h makes one; hooked/sys/executor.h says how to
 *  write one). */
typedef struct hk_executor hk_executor;
/** A session of an executor, below hooks and the coordinator. */
typedef struct hk_raw_session hk_raw_session;

/* ---- run arguments ------------------------------------------------------ */

#define HK_RUN_OPTIONS_VERSION 1
/** Run options. Never written by the library. */
typedef struct hk_run_options {
  uint32_t version;       /**< HK_RUN_OPTIONS_VERSION */
  int32_t trace_level;    /**< 0 none, 1 software, 2 hardware, 3 full */
  int64_t timeout_ms;     /**< 0 = none; >= 0 */
  void *executor_options; /**< opaque, defined by the executor; passed through */
} hk_run_options;
#define HK_RUN_OPTIONS_INIT \
  { HK_RUN_OPTIONS_VERSION, 0, 0, NULL }

/**
 * Initialize options to HK_RUN_OPTIONS_INIT.
 * @param version  HK_RUN_OPTIONS_VERSION, the version the program is compiled with.
 * @return HK_OK; INVALID_ARGUMENT (no message: there is no status), writing
 *         nothing, for a NULL opts or a version that is 0 or above
 *         HK_RUN_OPTIONS_VERSION.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_run_options_init(hk_run_options *opts, uint32_t version);

/** One traced op (reference executor with trace_level >= 1). */
typedef struct hk_op_trace {
  const char *op_name; /**< borrowed from the executor */
  double start_secs;   /**< monotonic seconds */
  double end_secs;
} hk_op_trace;

#define HK_RUN_METADATA_VERSION 1
/**
 * Run metadata, filled by the executor at each run. The
 * arrays it points to are owned by the raw session and stay valid until the
 * next run on it or its close.
 */
typedef struct hk_run_metadata {
  uint32_t version;         /**< HK_RUN_METADATA_VERSION */
  const hk_op_trace *trace; /**< NULL/0 unless traced */
  size_t ntrace;
  void *executor_data; /**< executor-defined, may be NULL */
} hk_run_metadata;
#define HK_RUN_METADATA_INIT \
  { HK_RUN_METADATA_VERSION, NULL, 0, NULL }

/** A feed: a tensor handle and the value to feed (data borrowed). */
typedef struct hk_feed {
  hk_handle tensor;
  hk_tensor value;
} hk_feed;

/**
 * The arguments of one run. Every array is borrowed for the duration of the
 * call and never written. A NULL array requires a zero count.
 * `options` NULL means HK_RUN_OPTIONS_INIT.
 */
typedef struct hk_run_args {
  const hk_feed *feeds;
  size_t nfeeds;
  const hk_handle *fetches;
  size_t nfetches;
  const hk_handle *targets;
  size_t ntargets;
  const hk_run_options *options;
} hk_run_args;

/* ---- raw sessions ------------------------------------------------------- */

/**
 * Open a raw session of `ex` (TF's tf.Session). With the reference executor
 * every new raw session starts with its graph-owned variables uninitialized.
 * @param out  receives the session; NULL on failure.
 * **Ownership:** *out owned, hk_raw_session_free(); `ex` is borrowed and
 * must outlive it.
 * **Errors:** RESOURCE_EXHAUSTED; the open slot's error; INVALID_ARGUMENT.
 * **Threads:** the owner's. **Allocates:** yes.
 */
HK_API hk_code hk_raw_session_open(hk_raw_session **out, hk_executor *ex, hk_status *status);
/**
 * Close the raw session: the session is closed even when the close slot
 * reports an error, which is then returned. A second close returns OK at
 * once. Afterwards runs, reads and assigns fail with FAILED_PRECONDITION
 * and every view the session handed out is invalid.
 * **Errors:** the close slot's error; INVALID_ARGUMENT for a NULL session.
 * **Threads:** the owner's. **Allocates:** no.
 */
HK_API hk_code hk_raw_session_close(hk_raw_session *rs, hk_status *status);
/**
 * Close if open (a close error is logged at ERROR), then free.
 * @param rs  consumed; NULL is a no-op.
 * **Threads:** the owner's. **Allocates:** no.
 */
HK_API void hk_raw_session_free(hk_raw_session *rs);
/** @return nonzero while open; 0 for NULL. **Threads:** the owner's. **Allocates:** no. */
HK_API int hk_raw_session_is_open(const hk_raw_session *rs);
/** @return the executor, NULL for NULL. **Ownership:** borrowed.
 *  **Threads:** any.
 * **Allocates:** no.
 */
HK_API hk_executor *hk_raw_session_executor(const hk_raw_session *rs);

/**
 * One executor run, no hooks: feed, execute exactly the ops the
 * fetches and targets need, each at most once, fetch.
 * @param args     borrowed for the call, never written; NULL: an empty
 *                 run. Options are checked: version 1, trace_level 0..3,
 *                 timeout_ms >= 0.
 * @param results  array of args->nfetches tensors, filled in fetch order; may
 *                 be NULL when there are no fetches. Contents are unspecified
 *                 on failure (the reference executor zeroes them).
 * @param metadata may be NULL; when given its version must be
 *                 HK_RUN_METADATA_VERSION, and the executor resets and fills
 *                 it.
 * **Ownership:** result views and metadata arrays are owned by the raw
 * session and valid until its next run, assign or close; copy what you keep.
 * **Errors:** INVALID_ARGUMENT for bad arguments (NULL array with a count,
 * bad options, a feed whose dtype or shape does not match its tensor, an
 * unfed placeholder); FAILED_PRECONDITION when closed, or "Attempting to use
 * uninitialized value <name>"; whatever a kernel or the executor
 * reports.
 * **Threads:** the owner's.
 * **Allocates:** executor-defined. The reference executor: not in steady
 * state, i.e. once it has seen the same feed/fetch/target handle lists
 * before (it caches 8 such combinations per raw session) and the graph has
 * not grown since.
 */
HK_API hk_code hk_raw_session_run(hk_raw_session *rs, const hk_run_args *args, hk_tensor *results,
                                  hk_run_metadata *metadata, hk_status *status);
/**
 * Read variable `index`.
 * @param out  a view of the variable's current value (the reference
 *             executor returns its storage itself, so it changes with later
 *             assignments).
 * **Ownership:** the view is borrowed from the raw session, valid until its
 * next run, assign or close.
 * **Errors:** FAILED_PRECONDITION "Attempting to use uninitialized value
 * <name>" or when closed; OUT_OF_RANGE for a bad index; UNIMPLEMENTED
 * when the executor has no variable_read slot.
 * **Threads:** the owner's, or another thread while no run is in progress on
 * this raw session (a background saver).
 * **Allocates:** no, in steady state (reference executor).
 */
HK_API hk_code hk_raw_session_read_variable(hk_tensor *out, hk_raw_session *rs, size_t index, hk_status *status);
/**
 * Assign variable `index` from `value`, which is copied, and mark the
 * variable initialized.
 * **Ownership:** `value` is borrowed for the call.
 * **Errors:** INVALID_ARGUMENT naming the variable when dtype, shape or
 * nbytes do not match; FAILED_PRECONDITION when closed; OUT_OF_RANGE for a
 * bad index; UNIMPLEMENTED when the executor has no variable_assign slot.
 * **Threads:** the owner's. **Allocates:** no, in steady state.
 */
HK_API hk_code hk_raw_session_assign_variable(hk_raw_session *rs, size_t index, const hk_tensor *value,
                                              hk_status *status);
/**
 * The memory that holds variable `index`, for the caller to write the
 * variable's value in place (the executor's variable_storage slot, vtable
 * version 2). Restore reads checkpoint data straight
 * into it, computing the CRC in the same pass.
 * @param out  zeroed first; on success the variable's dtype and shape,
 *             `nbytes` its byte size and `data` its memory, writable
 *             (non-NULL when nbytes > 0).
 * Semantics: on success the variable counts as initialized, and its value
 * is whatever the caller writes into out->data: write all of it before the
 * next run, read, assign or close (stopping halfway leaves a mix of old
 * and new bytes).
 * **Ownership:** the memory is the raw session's, borrowed until its next
 * run, assign or close.
 * **Errors:** UNIMPLEMENTED when the executor offers no memory for this
 * variable (a version-1 vtable, no slot, or a variable reached through
 * callbacks such as a host-loop state): nothing changed; assign it with
 * hk_raw_session_assign_variable() instead. FAILED_PRECONDITION when
 * closed; OUT_OF_RANGE for a bad index; INTERNAL, naming the variable,
 * when what the executor returned does not match the variable's
 * description; INVALID_ARGUMENT.
 * **Threads:** the owner's; the memory may be written from other threads
 * until the call that invalidates it.
 * **Allocates:** no, in steady state (reference executor, host loop).
 */
HK_API hk_code hk_raw_session_variable_storage(hk_tensor *out, hk_raw_session *rs, size_t index, hk_status *status);
/**
 * Read the global step through a run that fetches it (works with any
 * executor that can run).
 * @param out  receives the value on success.
 * **Errors:** those of hk_executor_global_step() (NOT_FOUND when there is
 * no GS) and of hk_raw_session_run(); OUT_OF_RANGE for a u64 value above
 * INT64_MAX.
 * **Threads:** the owner's.
 * **Allocates:** no, in steady state (its run's handle list is cached like
 * any other).
 */
HK_API hk_code hk_raw_session_global_step(int64_t *out, hk_raw_session *rs, hk_status *status);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_RUN_H */
