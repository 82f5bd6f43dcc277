/*
 * hooked — the graph-executor interface.
 *
 * The session never does model math: an executor does. An executor is a
 * `static const hk_executor_vtable` plus a `void *self`, wrapped in an
 * hk_executor with hk_executor_new(). The library ships one (hooked/graph.h);
 * a program may write its own against this header alone.
 *
 * Stability: headers under hooked/sys/ are for implementers. Slots are only
 * ever appended under a new version; the library never reads a slot beyond
 * the version an implementer declares (contract H10).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_SYS_EXECUTOR_H
#define HOOKED_SYS_EXECUTOR_H

#include "hooked/common.h"
#include "hooked/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- run arguments ------------------------------------------------------ */

#define HK_RUN_OPTIONS_VERSION 1
/** Run options (contract C11). Never written by the library (D10). */
typedef struct hk_run_options {
  uint32_t version;          /**< HK_RUN_OPTIONS_VERSION */
  int32_t trace_level;       /**< 0 none, 1 software, 2 hardware, 3 full */
  int64_t timeout_ms;        /**< 0 = none; >= 0 */
  void *executor_options;    /**< opaque, defined by the executor; passed through */
} hk_run_options;
#define HK_RUN_OPTIONS_INIT { HK_RUN_OPTIONS_VERSION, 0, 0, NULL }

/** One traced op (reference executor with trace_level >= 1, contract H30). */
typedef struct hk_op_trace {
  const char *op_name;       /**< borrowed from the executor */
  double start_secs;         /**< monotonic seconds */
  double end_secs;
} hk_op_trace;

#define HK_RUN_METADATA_VERSION 1
/**
 * Run metadata (contract C12), filled by the executor at each run. The
 * arrays it points to are owned by the raw session and stay valid until the
 * next run on it or its close.
 */
typedef struct hk_run_metadata {
  uint32_t version;          /**< HK_RUN_METADATA_VERSION */
  const hk_op_trace *trace;  /**< NULL/0 unless traced */
  size_t ntrace;
  void *executor_data;       /**< executor-defined, may be NULL */
} hk_run_metadata;
#define HK_RUN_METADATA_INIT { HK_RUN_METADATA_VERSION, NULL, 0, NULL }

/** A feed: a tensor handle and the value to feed (data borrowed). */
typedef struct hk_feed {
  hk_handle tensor;
  hk_tensor value;
} hk_feed;

/**
 * The arguments of one run. Every array is borrowed for the duration of the
 * call and never written (D10). A NULL array requires a zero count.
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

/* ---- variables ---------------------------------------------------------- */

typedef enum hk_variable_flags {
  HK_VAR_LOCAL = 1u << 0,       /**< local (not global) variable */
  HK_VAR_TRAINABLE = 1u << 1,   /**< trainable */
  HK_VAR_EXTERNAL = 1u << 2     /**< backed by a buffer the host program owns */
} hk_variable_flags;

/** Description of variable `index` of an executor. */
typedef struct hk_variable_info {
  const char *name;             /**< borrowed; valid for the executor's life */
  hk_handle tensor;             /**< fetchable handle of its value */
  hk_dtype dtype;
  int32_t rank;
  int64_t dims[HK_MAX_RANK];
  uint32_t flags;               /**< hk_variable_flags */
} hk_variable_info;

/** Defaults the Scaffold asks an executor to build (contract C62). */
typedef enum hk_default_op {
  HK_DEFAULT_INIT_OP = 1,                 /**< op: initialize every global variable */
  HK_DEFAULT_READY_OP = 2,                /**< tensor: names of uninitialized variables, global and local (1-D string) */
  HK_DEFAULT_READY_FOR_LOCAL_INIT_OP = 3, /**< tensor: names of uninitialized global variables */
  HK_DEFAULT_LOCAL_INIT_OP = 4            /**< op: initialize every local variable */
} hk_default_op;

/** Role names of the executor's role registry (contract C61, C143). */
#define HK_ROLE_INIT_OP "init_op"
#define HK_ROLE_READY_OP "ready_op"
#define HK_ROLE_READY_FOR_LOCAL_INIT_OP "ready_for_local_init_op"
#define HK_ROLE_LOCAL_INIT_OP "local_init_op"
#define HK_ROLE_GLOBAL_STEP "global_step"

/** Text sink for hk_executor_describe(): called with consecutive chunks. */
typedef hk_code (*hk_text_sink)(void *user, const char *text, size_t len, hk_status *status);

/* ---- the vtable --------------------------------------------------------- */

#define HK_EXECUTOR_VTABLE_VERSION 1

/**
 * Executor implementation. `self` is the pointer given to hk_executor_new();
 * `session` is what `open` produced. Slots marked (required) must be set;
 * others may be NULL (no-op / UNIMPLEMENTED as stated). Every slot reports
 * errors through its status argument with a message naming what is wrong.
 * Slots are called from one thread at a time (the training thread), except
 * `variable_read`, which a background saver may call while the training
 * thread is not running the same raw session.
 */
typedef struct hk_executor_vtable {
  uint32_t version;   /**< HK_EXECUTOR_VTABLE_VERSION */
  const char *name;   /**< the implementation's name, for messages; may be NULL */
  /* slots below: version 1 */

  /** (required) Resolve "op:k" or "op" (= "op:0") to a tensor handle. NOT_FOUND naming it when unknown. */
  hk_code (*resolve_tensor)(void *self, const char *name, hk_handle *out, hk_status *status);
  /** (required) Resolve an op name to an op handle. NOT_FOUND naming it when unknown. */
  hk_code (*resolve_op)(void *self, const char *name, hk_handle *out, hk_status *status);
  /** Resolved name of a tensor ("op:k") or op handle, for messages; NULL if unknown. Borrowed. */
  const char *(*handle_name)(void *self, hk_handle handle);
  /** Finalize the graph; idempotent. Later mutations fail with FAILED_PRECONDITION (C3). */
  hk_code (*finalize)(void *self, hk_status *status);
  /** Nonzero once finalized. */
  int (*is_finalized)(void *self);

  /** (required) Open a raw session. */
  hk_code (*open)(void *self, void **out_session, hk_status *status);
  /** Close and release a raw session; always releases, may report an error. */
  hk_code (*close)(void *self, void *session, hk_status *status);
  /**
   * (required) One run: feed, execute exactly what fetches and targets need,
   * each op at most once, dependencies first (H30), and fill `results[i]` for
   * fetch i (data owned by the session until its next run or close). Fills
   * `metadata` when non-NULL. Must not allocate in steady state.
   */
  hk_code (*run)(void *self, void *session, const hk_run_args *args, hk_tensor *results,
                 hk_run_metadata *metadata, hk_status *status);

  /** Number of variables (0 when NULL). */
  size_t (*variable_count)(void *self);
  /** Describe variable `index` < variable_count. */
  hk_code (*variable_info)(void *self, size_t index, hk_variable_info *out, hk_status *status);
  /** Read variable `index` of `session`: a view valid until the next run, assign or close.
   *  FAILED_PRECONDITION "Attempting to use uninitialized value <name>" when uninitialized. */
  hk_code (*variable_read)(void *self, void *session, size_t index, hk_tensor *out, hk_status *status);
  /** Assign (copy) `value` into variable `index`; marks it initialized. dtype/shape must match. */
  hk_code (*variable_assign)(void *self, void *session, size_t index, const hk_tensor *value,
                             hk_status *status);

  /** Role registry: write up to `cap` ops registered for `role` into out, the total into *count. */
  hk_code (*role_get)(void *self, const char *role, hk_handle *out, size_t cap, size_t *count,
                      hk_status *status);
  /** Register `handle` under `role`. FAILED_PRECONDITION after finalize. */
  hk_code (*role_add)(void *self, const char *role, hk_handle handle, hk_status *status);
  /** Build one of the defaults of C62 (before finalize). UNIMPLEMENTED when NULL. */
  hk_code (*default_op)(void *self, hk_default_op kind, hk_handle *out, hk_status *status);
  /** Stream a text description of the graph to `sink` (H30). UNIMPLEMENTED when NULL. */
  hk_code (*describe)(void *self, hk_text_sink sink, void *sink_user, hk_status *status);
  /** Open-ended extension; UNIMPLEMENTED for unknown ops. Ops 0..999 are reserved. */
  hk_code (*control)(void *self, int op, void *arg, hk_status *status);
  /** Release `self`; called exactly once by hk_executor_free(). */
  void (*destroy)(void *self);
} hk_executor_vtable;

/* ---- the executor object ------------------------------------------------ */

typedef struct hk_executor hk_executor;
typedef struct hk_raw_session hk_raw_session;

/**
 * Wrap an implementation.
 * @param out     receives the executor; NULL on failure.
 * @param vtable  borrowed; must outlive the executor (make it static const).
 * @param self    borrowed; released by vtable->destroy at hk_executor_free().
 * @param env     copied; NULL for defaults.
 * Errors: INVALID_ARGUMENT for NULL out/vtable, version 0 or newer than
 * HK_EXECUTOR_VTABLE_VERSION, or a missing required slot (named).
 * On failure `destroy` is not called. Threads: any. Allocates: yes.
 */
HK_API hk_code hk_executor_new(hk_executor **out, const hk_executor_vtable *vtable, void *self,
                               const hk_env *env, hk_status *status);
/** Free; calls destroy(self) once. NULL is a no-op. Raw sessions must be freed first. */
HK_API void hk_executor_free(hk_executor *ex);
/** @return the env the executor was created with (borrowed). */
HK_API const hk_env *hk_executor_env(const hk_executor *ex);
/** @return the implementation's self pointer (borrowed). */
HK_API void *hk_executor_self(const hk_executor *ex);

/** Resolve a tensor name ("op:k" or "op"). Errors: NOT_FOUND, INVALID_ARGUMENT. Allocates: no. */
HK_API hk_code hk_executor_resolve_tensor(hk_executor *ex, const char *name, hk_handle *out,
                                          hk_status *status);
/** Resolve an op name. Errors: NOT_FOUND, INVALID_ARGUMENT. Allocates: no. */
HK_API hk_code hk_executor_resolve_op(hk_executor *ex, const char *name, hk_handle *out,
                                      hk_status *status);
/** Resolved name of a handle, or a stable "#<number>" form when the executor
 *  cannot name it. The result is valid until the next call on this executor.
 *  Allocates: no. */
HK_API const char *hk_executor_handle_name(hk_executor *ex, hk_handle handle);
/** Finalize the graph (idempotent). */
HK_API hk_code hk_executor_finalize(hk_executor *ex, hk_status *status);
/** @return nonzero once finalized. */
HK_API int hk_executor_is_finalized(hk_executor *ex);

/** @return the number of variables. */
HK_API size_t hk_executor_variable_count(hk_executor *ex);
/** Describe variable `index`. Errors: OUT_OF_RANGE for a bad index. */
HK_API hk_code hk_executor_variable_info(hk_executor *ex, size_t index, hk_variable_info *out,
                                         hk_status *status);
/** Find a variable by name. Errors: NOT_FOUND naming it. */
HK_API hk_code hk_executor_find_variable(hk_executor *ex, const char *name, size_t *index,
                                         hk_status *status);
/**
 * The global-step variable (contract C143): the one registered under
 * HK_ROLE_GLOBAL_STEP, else the variable named "global_step".
 * Errors: NOT_FOUND when there is none (or several registered, logged as
 * WARNING "Multiple tensors in global_step collection."); INVALID_ARGUMENT
 * 'Existing "global_step" does not have integer type: %s' or
 * 'Existing "global_step" is not scalar: %s'.
 * @param index  may be NULL. Allocates: no.
 */
HK_API hk_code hk_executor_global_step(hk_executor *ex, hk_variable_info *out, size_t *index,
                                       hk_status *status);

/** Role registry (see the vtable). UNIMPLEMENTED when the executor has none. */
HK_API hk_code hk_executor_role_get(hk_executor *ex, const char *role, hk_handle *out, size_t cap,
                                    size_t *count, hk_status *status);
HK_API hk_code hk_executor_role_add(hk_executor *ex, const char *role, hk_handle handle,
                                    hk_status *status);
HK_API hk_code hk_executor_default_op(hk_executor *ex, hk_default_op kind, hk_handle *out,
                                      hk_status *status);
HK_API hk_code hk_executor_describe(hk_executor *ex, hk_text_sink sink, void *sink_user,
                                    hk_status *status);
HK_API hk_code hk_executor_control(hk_executor *ex, int op, void *arg, hk_status *status);

/* ---- raw sessions ------------------------------------------------------- */

/** Open a raw session of `ex` (TF's tf.Session). Owned: free with hk_raw_session_free(). */
HK_API hk_code hk_raw_session_open(hk_raw_session **out, hk_executor *ex, hk_status *status);
/** Close (idempotent). Later runs fail with FAILED_PRECONDITION. The close error, if any, is returned. */
HK_API hk_code hk_raw_session_close(hk_raw_session *rs, hk_status *status);
/** Close if open, then free. NULL is a no-op. */
HK_API void hk_raw_session_free(hk_raw_session *rs);
/** @return nonzero while open. */
HK_API int hk_raw_session_is_open(const hk_raw_session *rs);
/** @return the executor (borrowed). */
HK_API hk_executor *hk_raw_session_executor(const hk_raw_session *rs);

/**
 * One executor run, no hooks (contract C17).
 * @param results  array of args->nfetches tensors, written (views owned by
 *                 the raw session, valid until its next run or close).
 * @param metadata may be NULL.
 * Errors: INVALID_ARGUMENT for bad arguments (NULL array with a count, a
 * feed that does not match its tensor), FAILED_PRECONDITION when closed, and
 * whatever the executor reports. Allocates: no (reference executor, steady
 * state). Threads: the owning thread.
 */
HK_API hk_code hk_raw_session_run(hk_raw_session *rs, const hk_run_args *args, hk_tensor *results,
                                  hk_run_metadata *metadata, hk_status *status);
/** Read variable `index` (view valid until the next run, assign or close). */
HK_API hk_code hk_raw_session_read_variable(hk_raw_session *rs, size_t index, hk_tensor *out,
                                            hk_status *status);
/** Assign variable `index` from `value` (copied). dtype/shape must match: INVALID_ARGUMENT naming it. */
HK_API hk_code hk_raw_session_assign_variable(hk_raw_session *rs, size_t index,
                                              const hk_tensor *value, hk_status *status);
/**
 * Read the global step through a run that fetches it (works with any
 * executor). Errors: those of hk_executor_global_step() and of the run.
 * Allocates: no.
 */
HK_API hk_code hk_raw_session_global_step(hk_raw_session *rs, int64_t *out, hk_status *status);

/** Convert a scalar integer tensor of any integer dtype to int64.
 *  INVALID_ARGUMENT, naming `what`, for a non-integer or non-scalar tensor. */
HK_API hk_code hk_tensor_to_i64(const hk_tensor *t, const char *what, int64_t *out, hk_status *status);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_SYS_EXECUTOR_H */
