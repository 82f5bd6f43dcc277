/*
 * hooked — Scaffold and session manager (contract groups F and G): how a
 * model is initialized (or, with checkpoints, restored) before the first step.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_SCAFFOLD_H
#define HOOKED_SCAFFOLD_H

#include "hooked/common.h"
#include "hooked/sys/executor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hk_scaffold hk_scaffold;
typedef struct hk_session_manager hk_session_manager;

/** init_fn (C59): called once per created session when nothing was restored. */
typedef hk_code (*hk_init_fn)(void *user, const hk_scaffold *scaffold, hk_raw_session *session,
                              hk_status *status);

#define HK_SCAFFOLD_OPTIONS_VERSION 1
typedef struct hk_scaffold_options {
  uint32_t version;                  /**< HK_SCAFFOLD_OPTIONS_VERSION */
  const hk_env *env;                 /**< copied; NULL: defaults */
  hk_handle init_op;                 /**< op; HK_NO_HANDLE = unset */
  const hk_feed *init_feed;          /**< copied, values included */
  size_t ninit_feed;
  hk_init_fn init_fn;                /**< NULL = unset */
  void *init_fn_user;                /**< borrowed */
  hk_handle ready_op;                /**< 1-D string tensor; unset = default */
  hk_handle ready_for_local_init_op; /**< 1-D string tensor; unset = default */
  hk_handle local_init_op;           /**< op; unset = default */
  const hk_feed *local_init_feed;    /**< copied, values included */
  size_t nlocal_init_feed;
  /** C58: copy every field not given here from this Scaffold (borrowed during the call). */
  const hk_scaffold *copy_from;
} hk_scaffold_options;
#define HK_SCAFFOLD_OPTIONS_INIT { HK_SCAFFOLD_OPTIONS_VERSION, NULL, HK_NO_HANDLE, NULL, 0, NULL, NULL, \
  HK_NO_HANDLE, HK_NO_HANDLE, HK_NO_HANDLE, NULL, 0, NULL }

/** Initialize options to defaults (every field unset). INVALID_ARGUMENT for a NULL or a wrong version. */
HK_API hk_code hk_scaffold_options_init(hk_scaffold_options *opts, uint32_t version);

/**
 * Create a Scaffold. @param opts NULL: every field unset.
 * Ownership: owned; hk_scaffold_free(). Errors: INVALID_ARGUMENT (NULL
 * array with a count, bad feed tensors), RESOURCE_EXHAUSTED.
 */
HK_API hk_code hk_scaffold_new(hk_scaffold **out, const hk_scaffold_options *opts, hk_status *status);
/** Free. NULL is a no-op. */
HK_API void hk_scaffold_free(hk_scaffold *s);

/**
 * Finalize (C61, C64): fill every unset op field from the executor's role
 * registry (one op: used; none: the executor's default is built and
 * registered; several: FAILED_PRECONDITION 'More than one item in the
 * collection "<role>". ...'), finalize the graph, log "Graph was finalized.".
 * Idempotent for the same executor; a Scaffold serves one executor.
 * Errors: FAILED_PRECONDITION, INVALID_ARGUMENT (another executor), executor errors.
 */
HK_API hk_code hk_scaffold_finalize(hk_scaffold *s, hk_executor *ex, hk_status *status);
/** @return nonzero once finalized. */
HK_API int hk_scaffold_is_finalized(const hk_scaffold *s);

/* Field getters (HK_NO_HANDLE / NULL when unset). Borrowed, valid for the Scaffold's life. */
HK_API hk_handle hk_scaffold_init_op(const hk_scaffold *s);
HK_API const hk_feed *hk_scaffold_init_feed(const hk_scaffold *s, size_t *n);
HK_API hk_init_fn hk_scaffold_init_fn(const hk_scaffold *s, void **user);
HK_API hk_handle hk_scaffold_ready_op(const hk_scaffold *s);
HK_API hk_handle hk_scaffold_ready_for_local_init_op(const hk_scaffold *s);
HK_API hk_handle hk_scaffold_local_init_op(const hk_scaffold *s);
HK_API const hk_feed *hk_scaffold_local_init_feed(const hk_scaffold *s, size_t *n);

/* ---- session manager (group G) ---------------------------------------- */

#define HK_SESSION_MANAGER_OPTIONS_VERSION 1
typedef struct hk_session_manager_options {
  uint32_t version;                  /**< HK_SESSION_MANAGER_OPTIONS_VERSION */
  const hk_env *env;                 /**< copied; NULL: the executor's env */
  hk_executor *executor;             /**< required; borrowed for the manager's life */
  hk_handle local_init_op;           /**< op or unset */
  hk_handle ready_op;                /**< 1-D string tensor or unset */
  hk_handle ready_for_local_init_op; /**< 1-D string tensor or unset; requires local_init_op (C65) */
  const hk_feed *local_init_feed;    /**< copied */
  size_t nlocal_init_feed;
  double recovery_wait_secs;         /**< > 0, default 30 */
} hk_session_manager_options;
#define HK_SESSION_MANAGER_OPTIONS_INIT { HK_SESSION_MANAGER_OPTIONS_VERSION, NULL, NULL, HK_NO_HANDLE, \
  HK_NO_HANDLE, HK_NO_HANDLE, NULL, 0, 30.0 }

HK_API hk_code hk_session_manager_options_init(hk_session_manager_options *opts, uint32_t version);
/** Create (C65). Errors: INVALID_ARGUMENT (including C65's local-init message). Owned. */
HK_API hk_code hk_session_manager_new(hk_session_manager **out, const hk_session_manager_options *opts,
                                      hk_status *status);
HK_API void hk_session_manager_free(hk_session_manager *sm);

#define HK_PREPARE_OPTIONS_VERSION 1
/** What prepare_session / recover_session use (C66–C68). */
typedef struct hk_prepare_options {
  uint32_t version;                  /**< HK_PREPARE_OPTIONS_VERSION */
  hk_handle init_op;
  const hk_feed *init_feed;          /**< borrowed during the call */
  size_t ninit_feed;
  hk_init_fn init_fn;
  void *init_fn_user;
  const hk_scaffold *scaffold;       /**< passed to init_fn; may be NULL */
  /** Restoring from a checkpoint: both set → INVALID_ARGUMENT (C67). This
   *  release has no checkpoint reader yet, so either one set → UNIMPLEMENTED
   *  "restoring checkpoints is not supported by this build"; nothing is
   *  created in that case. */
  const char *checkpoint_dir;
  const char *checkpoint_filename_with_path;
  int wait_for_checkpoint;
  double max_wait_secs;              /**< default 7200 */
} hk_prepare_options;
#define HK_PREPARE_OPTIONS_INIT { HK_PREPARE_OPTIONS_VERSION, HK_NO_HANDLE, NULL, 0, NULL, NULL, NULL, \
  NULL, NULL, 0, 7200.0 }

/**
 * C66: create a raw session; restore (when configured); if nothing was
 * restored run init_op with init_feed, then init_fn; local init (C70);
 * ready check (C71). The first failing step's error is returned and the raw
 * session is closed. Errors: FAILED_PRECONDITION (C69, C70, C71),
 * INVALID_ARGUMENT, CANCELLED (H24), executor errors.
 * Ownership: *out is owned by the caller (hk_raw_session_free()).
 */
HK_API hk_code hk_session_manager_prepare_session(hk_session_manager *sm, hk_raw_session **out,
                                                  const hk_prepare_options *opts, hk_status *status);
/**
 * C74: create a raw session, try to restore, always run local init, check
 * readiness; *initialized tells whether the model is ready from the restore.
 */
HK_API hk_code hk_session_manager_recover_session(hk_session_manager *sm, hk_raw_session **out,
                                                  int *initialized, const hk_prepare_options *opts,
                                                  hk_status *status);
/**
 * C73: loop until a raw session is ready (local init + ready check), sleeping
 * recovery_wait_secs between tries. `max_wait_secs` HK_UNSET_SECS: no limit.
 * Errors: DEADLINE_EXCEEDED "Session was not ready after waiting %d secs.",
 * CANCELLED "wait cancelled: stop requested" (H24).
 */
HK_API hk_code hk_session_manager_wait_for_session(hk_session_manager *sm, hk_raw_session **out,
                                                   double max_wait_secs, hk_status *status);
/** End a wait of C68/C73 early with CANCELLED (H24). Threads: any. Sticky until hk_session_manager_reset_cancel(). */
HK_API void hk_session_manager_cancel(hk_session_manager *sm);
/** Clear a cancel request. */
HK_API void hk_session_manager_reset_cancel(hk_session_manager *sm);

/**
 * Readiness (C72): run `ready_op` (HK_NO_HANDLE: ready). *ready is set; when
 * not ready `reason` (may be NULL) receives "Variables not initialized: a, b"
 * or the executor's "uninitialized" message. Other run errors are returned.
 */
HK_API hk_code hk_session_manager_model_ready(hk_session_manager *sm, hk_raw_session *rs,
                                              hk_handle ready_op, int *ready, hk_status *reason,
                                              hk_status *status);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_SCAFFOLD_H */
