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
#include "hooked/checkpoint.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hk_scaffold hk_scaffold;
typedef struct hk_session_manager hk_session_manager;

/** init_fn: called on the training thread, once per created raw
 *  session when nothing was restored, after init_op. `scaffold` and
 *  `session` are borrowed for the call. A non-OK code fails the creation. */
typedef hk_code (*hk_init_fn)(void *user, const hk_scaffold *scaffold, hk_raw_session *session, hk_status *status);

#define HK_SCAFFOLD_OPTIONS_VERSION 1
typedef struct hk_scaffold_options {
  uint32_t version;         /**< HK_SCAFFOLD_OPTIONS_VERSION */
  const hk_env *env;        /**< copied; NULL: copy_from's env, else defaults */
  hk_handle init_op;        /**< op; HK_NO_HANDLE = unset */
  const hk_feed *init_feed; /**< copied, values included */
  size_t ninit_feed;
  hk_init_fn init_fn;                /**< NULL = unset */
  void *init_fn_user;                /**< borrowed */
  hk_handle ready_op;                /**< 1-D string tensor; unset = default */
  hk_handle ready_for_local_init_op; /**< 1-D string tensor; unset = default */
  hk_handle local_init_op;           /**< op; unset = default */
  const hk_feed *local_init_feed;    /**< copied, values included */
  size_t nlocal_init_feed;
  /** copy every field not given here from this Scaffold (borrowed during the call). */
  const hk_scaffold *copy_from;
  /** The Saver sessions restore with and checkpoint hooks save with;
   *  borrowed, must outlive the Scaffold. NULL: finalization creates
   *  a default one over every global variable, owned by the Scaffold. */
  hk_saver *saver;
  /** The summaries SummarySaverHook writes: tensor handles of
   *  serialized Summary messages (1-D U8), array copied; count 0 = unset:
   *  finalization fills it (hk_scaffold_summary_op()). */
  const hk_handle *summary_op;
  size_t nsummary_op;
} hk_scaffold_options;
#define HK_SCAFFOLD_OPTIONS_INIT                                                                                    \
  {                                                                                                                 \
    HK_SCAFFOLD_OPTIONS_VERSION, NULL, HK_NO_HANDLE, NULL, 0, NULL, NULL, HK_NO_HANDLE, HK_NO_HANDLE, HK_NO_HANDLE, \
        NULL, 0, NULL, NULL, NULL, 0                                                                                \
  }

/**
 * Initialize options to HK_SCAFFOLD_OPTIONS_INIT (every field unset).
 * @param version  HK_SCAFFOLD_OPTIONS_VERSION, the version the program is compiled with.
 * @return HK_OK; INVALID_ARGUMENT (no message: there is no status), writing
 *         nothing, for a NULL opts or a version that is 0 or above
 *         HK_SCAFFOLD_OPTIONS_VERSION.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_scaffold_options_init(hk_scaffold_options *opts, uint32_t version);

/**
 * Create a Scaffold. With copy_from, every field not given here
 * (a handle that is unset, a feed list with count 0, a NULL init_fn, a NULL
 * env) is copied from it, init_fn and its user included.
 * @param out   receives the Scaffold; NULL on failure.
 * @param opts  borrowed for the call; NULL: every field unset. Feed lists
 *              are deep-copied, tensor data included.
 * **Ownership:** *out owned, hk_scaffold_free(). init_fn_user stays
 * borrowed for the Scaffold's life.
 * **Errors:** INVALID_ARGUMENT (bad version or env, NULL array with a
 * count, an invalid feed tensor, a STRING feed, an unset feed or
 * summary_op handle);
 * RESOURCE_EXHAUSTED.
 * **Threads:** any. **Allocates:** yes.
 */
HK_API hk_code hk_scaffold_new(hk_scaffold **out, const hk_scaffold_options *opts, hk_status *status);
/**
 * Free the Scaffold and its copied feeds. A session given this Scaffold must
 * be freed first.
 * @param s  consumed; NULL is a no-op.
 * **Threads:** the owner's. **Allocates:** no.
 */
HK_API void hk_scaffold_free(hk_scaffold *s);

/**
 * Finalize. Each unset op field is filled from the executor's
 * role registry: exactly one op registered for the role is used; several
 * fail with FAILED_PRECONDITION 'More than one item in the collection
 * "<role>". Please indicate which one to use by passing it to the Scaffold
 * constructor as: <role>=<item to use>'; none: the executor's default
 * is built and registered under the role, or the field stays unset
 * when the executor cannot build defaults. An unset summary_op is filled
 * the same way from HK_ROLE_SUMMARY_OP (hooked/summary.h); with none
 * registered there it merges every tensor registered under
 * HK_ROLE_SUMMARIES (the graph's summary ops register theirs) into one op
 * (HK_CONTROL_MERGE_SUMMARIES), registered under HK_ROLE_SUMMARY_OP — or,
 * with an executor that cannot merge, takes those tensors themselves — and
 * stays unset when no summary is registered. Then the graph is
 * finalized and "Graph was finalized." is logged.
 * Idempotent for the same executor; a Scaffold serves one executor.
 * On failure the Scaffold is unchanged (defaults already built in the graph
 * stay there).
 * @param ex  borrowed; must outlive the Scaffold's use.
 * **Errors:** FAILED_PRECONDITION (several ops for a role; a graph already
 * finalized when a default had to be built); INVALID_ARGUMENT (NULL
 * arguments, another executor than the first finalization's); executor
 * errors.
 * **Threads:** the owner's. **Allocates:** yes.
 */
HK_API hk_code hk_scaffold_finalize(hk_scaffold *s, hk_executor *ex, hk_status *status);
/** @return nonzero once finalized; 0 for NULL. **Threads:** the owner's. **Allocates:** no. */
HK_API int hk_scaffold_is_finalized(const hk_scaffold *s);

/* Field getters: HK_NO_HANDLE / NULL (count 0) when unset or for a NULL
 * Scaffold; op fields read before finalization hold only what was given.
 * `n` and `user` may be NULL. Returned feeds are borrowed, valid for the
 * Scaffold's life. They never fail or allocate; the owner's thread. */
/** @return the init op.
 *  **Threads:** any, once the Scaffold is finalized (it no longer changes). **Allocates:** no. */
HK_API hk_handle hk_scaffold_init_op(const hk_scaffold *s);
/** @return the copied init feeds, borrowed; @param n receives their count.
 *  **Threads:** any, once the Scaffold is finalized (it no longer changes). **Allocates:** no. */
HK_API const hk_feed *hk_scaffold_init_feed(const hk_scaffold *s, size_t *n);
/** @return init_fn; @param user receives init_fn_user (borrowed).
 *  **Threads:** any, once the Scaffold is finalized (it no longer changes). **Allocates:** no. */
HK_API hk_init_fn hk_scaffold_init_fn(void **user, const hk_scaffold *s);
/** @return the ready op: a 1-D string tensor.
 *  **Threads:** any, once the Scaffold is finalized (it no longer changes). **Allocates:** no. */
HK_API hk_handle hk_scaffold_ready_op(const hk_scaffold *s);
/** @return the ready-for-local-init op: a 1-D string tensor.
 *  **Threads:** any, once the Scaffold is finalized (it no longer changes). **Allocates:** no. */
HK_API hk_handle hk_scaffold_ready_for_local_init_op(const hk_scaffold *s);
/** @return the local init op.
 *  **Threads:** any, once the Scaffold is finalized (it no longer changes). **Allocates:** no. */
HK_API hk_handle hk_scaffold_local_init_op(const hk_scaffold *s);
/** @return the copied local init feeds, borrowed; @param n receives their count.
 *  **Threads:** any, once the Scaffold is finalized (it no longer changes). **Allocates:** no. */
HK_API const hk_feed *hk_scaffold_local_init_feed(const hk_scaffold *s, size_t *n);
/**
 * @return the summary_op: the handles given, or after
 * finalization the registered or default ones (NULL and a count of 0 when
 * unset); borrowed, valid for the Scaffold's life. @param n receives their
 * count.
 * **Threads:** any, once the Scaffold is finalized (it no longer changes). **Allocates:** no.
 */
HK_API const hk_handle *hk_scaffold_summary_op(const hk_scaffold *s, size_t *n);
/** @return the Saver: the one given, or after finalization
 *  the default one the Scaffold owns, over every global variable (also when
 *  there are none: it then saves checkpoints that hold no tensor); NULL
 *  only before finalization when none was given. Borrowed, valid for the
 *  Scaffold's life.
 * **Threads:** any, once the Scaffold is finalized (it no longer changes). **Allocates:** no.
 */
HK_API hk_saver *hk_scaffold_saver(const hk_scaffold *s);

/* ---- session manager (group G) ---------------------------------------- */

#define HK_SESSION_MANAGER_OPTIONS_VERSION 1
typedef struct hk_session_manager_options {
  uint32_t version;                  /**< HK_SESSION_MANAGER_OPTIONS_VERSION */
  const hk_env *env;                 /**< copied; NULL: the executor's env */
  hk_executor *executor;             /**< required; borrowed for the manager's life */
  hk_handle local_init_op;           /**< op or unset */
  hk_handle ready_op;                /**< 1-D string tensor or unset */
  hk_handle ready_for_local_init_op; /**< 1-D string tensor or unset; requires local_init_op */
  const hk_feed *local_init_feed;    /**< copied */
  size_t nlocal_init_feed;
  double recovery_wait_secs; /**< > 0, default 30 */
} hk_session_manager_options;
#define HK_SESSION_MANAGER_OPTIONS_INIT \
  { HK_SESSION_MANAGER_OPTIONS_VERSION, NULL, NULL, HK_NO_HANDLE, HK_NO_HANDLE, HK_NO_HANDLE, NULL, 0, 30.0 }

/**
 * Initialize options to HK_SESSION_MANAGER_OPTIONS_INIT.
 * @param version  HK_SESSION_MANAGER_OPTIONS_VERSION, the version the program is compiled with.
 * @return HK_OK; INVALID_ARGUMENT (no message: there is no status), writing
 *         nothing, for a NULL opts or a version that is 0 or above
 *         HK_SESSION_MANAGER_OPTIONS_VERSION.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_session_manager_options_init(hk_session_manager_options *opts, uint32_t version);
/**
 * Create a session manager.
 * @param out   receives it; NULL on failure.
 * @param opts  required (the executor is); borrowed for the call.
 * **Ownership:** *out owned, hk_session_manager_free(); the executor is
 * borrowed and must outlive it; local_init_feed is deep-copied.
 * **Errors:** INVALID_ARGUMENT: a bad option, recovery_wait_secs not finite
 * and > 0, or ready_for_local_init_op without local_init_op ("If you pass a
 * ready_for_local_init_op you must also pass a local_init_op,
 * ready_for_local_init_op [%s]"); RESOURCE_EXHAUSTED.
 * **Threads:** any. **Allocates:** yes.
 */
HK_API hk_code hk_session_manager_new(hk_session_manager **out, const hk_session_manager_options *opts,
                                      hk_status *status);
/**
 * Free the manager. Raw sessions it handed out are the caller's and stay
 * valid.
 * @param sm  consumed; NULL is a no-op. No call on it may be in progress.
 * **Threads:** the owner's. **Allocates:** no.
 */
HK_API void hk_session_manager_free(hk_session_manager *sm);

#define HK_PREPARE_OPTIONS_VERSION 1
/** What prepare_session / recover_session use. */
typedef struct hk_prepare_options {
  uint32_t version; /**< HK_PREPARE_OPTIONS_VERSION */
  hk_handle init_op;
  const hk_feed *init_feed; /**< borrowed during the call */
  size_t ninit_feed;
  hk_init_fn init_fn;
  void *init_fn_user;
  const hk_scaffold *scaffold; /**< passed to init_fn; may be NULL */
  /** Restoring from a checkpoint: both set →
   *  INVALID_ARGUMENT, checked before anything is created. With
   *  checkpoint_dir, the newest checkpoint that verifies (falling back past
   *  missing or corrupt ones) is restored and the Saver adopts the
   *  directory's managed list; without a state file, or with an
   *  unreadable one, the directory is scanned for "<name>-<step>.safetensors"
   *  files (with a WARNING) and what a scan finds is never adopted.
   * With checkpoint_filename_with_path, that checkpoint (a prefix)
   *  is restored, without fallback. Nothing is restored without a saver. */
  const char *checkpoint_dir;
  const char *checkpoint_filename_with_path;
  /** wait while checkpoint_dir holds neither a state file nor a
   *  checkpoint data file */
  int wait_for_checkpoint;
  double max_wait_secs; /**< default 7200 */
  hk_saver *saver;      /**< borrowed for the call; NULL: nothing is restored */
} hk_prepare_options;
#define HK_PREPARE_OPTIONS_INIT \
  { HK_PREPARE_OPTIONS_VERSION, HK_NO_HANDLE, NULL, 0, NULL, NULL, NULL, NULL, NULL, 0, 7200.0, NULL }

/**
 * Initialize options to HK_PREPARE_OPTIONS_INIT.
 * @param version  HK_PREPARE_OPTIONS_VERSION, the version the program is compiled with.
 * @return HK_OK; INVALID_ARGUMENT (no message: there is no status), writing
 *         nothing, for a NULL opts or a version that is 0 or above
 *         HK_PREPARE_OPTIONS_VERSION.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_prepare_options_init(hk_prepare_options *opts, uint32_t version);

/**
 * Prepare a ready raw session: create a raw session; restore when
 * configured; only if nothing was restored, run init_op
 * with init_feed if set, then init_fn if set; local init; ready check.
 * The first failing step's error is returned and the raw session is
 * closed and freed; a session whose restore failed is never handed out.
 * @param out   receives the raw session; NULL on failure.
 * @param opts  borrowed for the call; NULL: HK_PREPARE_OPTIONS_INIT.
 * **Ownership:** *out owned by the caller, hk_raw_session_free().
 * **Errors:** FAILED_PRECONDITION "Model is not initialized and no init_op
 * or init_fn or local_init_op was given" (not when every variable of
 * the executor is host-owned, HK_VAR_EXTERNAL, or there is none — such a
 * model needs no init op), "Init operations did not
 * make model ready for local_init. ...", "Init operations did not
 * make model ready. ..."; INVALID_ARGUMENT (bad options, both
 * checkpoint paths; a variable whose dtype or shape differs from the
 * checkpoint's); NOT_FOUND (a variable missing from the checkpoint; an
 * explicit checkpoint that does not exist); DATA_LOSS when every
 * candidate of checkpoint_dir is missing or corrupt, naming them;
 * CANCELLED "wait cancelled: stop requested" from the wait for a
 * checkpoint;
 * init_fn's and the executor's errors unchanged.
 * **Threads:** the owner's; init_fn runs on it. **Allocates:** yes.
 */
HK_API hk_code hk_session_manager_prepare_session(hk_raw_session **out, hk_session_manager *sm,
                                                  const hk_prepare_options *opts, hk_status *status);
/**
 * Recover a raw session: create a raw session, try to restore (as
 * prepare_session), always run local init; after a restore, check
 * readiness. *initialized is 1 when a checkpoint was restored and local
 * init and the ready check succeeded ("Restored model from %s"); 0 when
 * nothing was restored, or when local init or the ready check failed after
 * a restore ("Restoring model from %s did not make model ready for local
 * init: %s" / "... did not make model ready: %s"). The caller then
 * initializes the model itself.
 * @param out          receives the raw session; NULL on failure.
 * @param initialized  required; set to 0 first.
 * @param opts         borrowed for the call; NULL: HK_PREPARE_OPTIONS_INIT.
 * **Ownership:** *out owned by the caller, hk_raw_session_free().
 * **Errors:** INVALID_ARGUMENT; restore errors as prepare_session; an
 * error running local init when nothing was restored (the session is then
 * freed). A ready_for_local_init_op that reports not ready is not an
 * error: local init is skipped and *initialized stays 0.
 * **Threads:** the owner's. **Allocates:** yes.
 */
HK_API hk_code hk_session_manager_recover_session(hk_raw_session **out, int *initialized, hk_session_manager *sm,
                                                  const hk_prepare_options *opts, hk_status *status);
/**
 * Wait for a ready raw session, as a worker does: loop creating a raw
 * session, running local init and, if that could run, the ready check; a
 * ready session is returned, another one is freed and, unless the time
 * left minus recovery_wait_secs is negative, the manager logs "Waiting for
 * model to be ready. ..." and sleeps recovery_wait_secs through its env's
 * clock. Never runs init_op or init_fn.
 * @param out            receives the raw session; NULL on failure.
 * @param max_wait_secs  finite >= 0, or HK_UNSET_SECS for no limit.
 * **Ownership:** *out owned by the caller, hk_raw_session_free().
 * **Errors:** DEADLINE_EXCEEDED "Session was not ready after waiting %d
 * secs."; CANCELLED "wait cancelled: stop requested" when
 * hk_session_manager_cancel() was called or the signal helper fired, within
 * one recovery_wait_secs; INVALID_ARGUMENT; errors of the executor
 * and of running local init or the ready op, unchanged.
 * **Threads:** the owner's. **Allocates:** yes.
 */
HK_API hk_code hk_session_manager_wait_for_session(hk_raw_session **out, hk_session_manager *sm, double max_wait_secs,
                                                   hk_status *status);
/**
 * What the last hk_session_manager_prepare_session() or
 * hk_session_manager_recover_session() call restored: the checkpoint prefix
 * ("<dir>/<name>", as the restore named it: the state file's entry or the
 * scan's find joined to checkpoint_dir, or checkpoint_filename_with_path as
 * given). NULL when that call initialized the model instead (nothing to
 * restore, or recover_session returned *initialized 0), when it failed,
 * after hk_session_manager_wait_for_session() (a worker never restores),
 * before any call, and for a NULL manager. Sessions hand it to the hooks'
 * after_create_session (hk_creation_context_restored_checkpoint()).
 * **Ownership:** borrowed; valid until the next prepare_session,
 * recover_session or wait_for_session call on this manager, or its free.
 * **Threads:** the owner's. **Errors:** none. **Allocates:** no.
 */
HK_API const char *hk_session_manager_restored_checkpoint(const hk_session_manager *sm);

/**
 * End a wait for a checkpoint or for a ready model early with CANCELLED. Sticky: every later
 * wait_for_session() fails at once with CANCELLED until
 * hk_session_manager_reset_cancel(). NULL is a no-op.
 * **Threads:** any (an atomic flag). **Allocates:** no.
 */
HK_API void hk_session_manager_cancel(hk_session_manager *sm);
/** Clear a cancel request. NULL is a no-op.
 *  **Threads:** any (an atomic flag). **Allocates:** no. */
HK_API void hk_session_manager_reset_cancel(hk_session_manager *sm);

/**
 * Readiness check: run `ready_op`, a 1-D string tensor of the names
 * of uninitialized variables. Ready when ready_op is HK_NO_HANDLE or the
 * tensor is empty. Not ready when it names variables (`reason` gets
 * FAILED_PRECONDITION "Variables not initialized: a, b") or when the run
 * fails with FAILED_PRECONDITION whose message contains "uninitialized"
 * (`reason` gets that status). Both are HK_OK returns.
 * @param rs      borrowed for the call.
 * @param ready   required; meaningful only when HK_OK is returned.
 * @param reason  may be NULL; cleared first, filled when not ready.
 * **Errors:** any other run error (also logged at ERROR); INVALID_ARGUMENT
 * for NULL sm/rs/ready or a ready_op that is not a 1-D string tensor.
 * **Threads:** the owner's.
 * **Allocates:** as hk_raw_session_run() (no, in steady state).
 */
HK_API hk_code hk_session_manager_model_ready(hk_session_manager *sm, hk_raw_session *rs, hk_handle ready_op,
                                              int *ready, hk_status *reason, hk_status *status);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_SCAFFOLD_H */
