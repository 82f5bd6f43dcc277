/*
 * hooked — monitored and singular sessions (contract groups A–D).
 *
 * A session drives an ordered list of hooks around every run of a graph
 * executor. Construction: begin() on every hook in order → Scaffold
 * finalization (which finalizes the graph) → raw-session creation →
 * initialization → after_create_session() on every hook. Then run(),
 * run_step_fn(), should_stop(), close(), free().
 *
 * Threads: every function is called from one thread at a time (the training
 * thread), except hk_session_should_stop(), which is also safe from hook
 * callbacks. Use the coordinator (hk_session_coordinator) to stop from
 * other threads.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_SESSION_H
#define HOOKED_SESSION_H

#include "hooked/common.h"
#include "hooked/tensor.h"
#include "hooked/sys/executor.h"
#include "hooked/sys/hook.h"
#include "hooked/coordinator.h"
#include "hooked/scaffold.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hk_session hk_session;
typedef struct hk_step_context hk_step_context;

typedef enum hk_session_kind {
  HK_SESSION_MONITORED = 0,   /**< recovers from ABORTED/UNAVAILABLE (C38–C41, D2) */
  HK_SESSION_SINGULAR = 1     /**< never recovers; exposes its raw session (C24, C25) */
} hk_session_kind;

/* ---- session creators (H21) -------------------------------------------- */

#define HK_SESSION_CREATOR_VTABLE_VERSION 1
/**
 * A custom session creator: `create` must return a ready raw session (owned
 * by the session afterwards) or a status. Replaces the chief/worker creator.
 */
typedef struct hk_session_creator_vtable {
  uint32_t version;  /**< HK_SESSION_CREATOR_VTABLE_VERSION */
  /* slots below: version 1 */
  /** (required) */
  hk_code (*create)(void *user, hk_executor *executor, hk_raw_session **out, hk_status *status);
  /** Called once when the session is freed. */
  void (*destroy)(void *user);
} hk_session_creator_vtable;

/* ---- options ----------------------------------------------------------- */

#define HK_SESSION_OPTIONS_VERSION 1
typedef struct hk_session_options {
  uint32_t version;                 /**< HK_SESSION_OPTIONS_VERSION */
  const hk_env *env;                /**< copied; NULL: the executor's env */
  hk_session_kind kind;             /**< default MONITORED */
  hk_executor *executor;            /**< required; borrowed for the session's life */
  hk_hook *const *hooks;            /**< borrowed array of borrowed hooks; may be empty (H11) */
  size_t nhooks;
  hk_scaffold *scaffold;            /**< borrowed; NULL: the session owns a default one */
  int is_chief;                     /**< default 1: chief creator (C47); 0: worker (C48) */
  const hk_session_creator_vtable *creator; /**< optional custom creator (H21), borrowed */
  void *creator_user;               /**< taken by the session when hk_session_new succeeds and
                                         released by creator->destroy at hk_session_free; on
                                         failure the caller keeps it */
  const char *checkpoint_dir;       /**< see hk_prepare_options */
  const char *checkpoint_filename_with_path;
  double stop_grace_period_secs;    /**< >= 0, default 120 (C24, C30) */
  double max_wait_secs;             /**< worker wait, default 1800 (C48); HK_UNSET_SECS: no limit */
  double recovery_wait_secs;        /**< > 0, default 30 (C48, D9) */
  double recovery_initial_delay_secs; /**< >= 0, default 1 (D2) */
  double recovery_max_delay_secs;   /**< >= initial, default 60 */
  int64_t recovery_max_attempts;    /**< >= 0, default 10; 0 = unlimited */
  double recovery_max_secs;         /**< >= 0, default 0 = unlimited */
} hk_session_options;

#define HK_SESSION_OPTIONS_INIT { HK_SESSION_OPTIONS_VERSION, NULL, HK_SESSION_MONITORED, NULL, NULL, 0, \
  NULL, 1, NULL, NULL, NULL, NULL, 120.0, 1800.0, 30.0, 1.0, 60.0, 10, 0.0 }

/** Initialize options to defaults. INVALID_ARGUMENT for NULL or a wrong version. */
HK_API hk_code hk_session_options_init(hk_session_options *opts, uint32_t version);

/**
 * Create a session (contract C2–C4, C47, C48).
 * Every option is validated before any side effect (H3): on an option error
 * no hook runs. Then begin() on each hook in order, Scaffold finalization,
 * creation and initialization of a raw session, after_create_session() on
 * each hook. In a monitored session preemption errors during creation are
 * retried per D2.
 * Ownership: *out owned, hk_session_close() then hk_session_free(). On
 * failure *out is NULL and no end() runs (C2).
 * Errors: INVALID_ARGUMENT (options, hooks: NULL entry, duplicate, already
 * serving another session), a hook's or the executor's error, CANCELLED
 * (worker wait interrupted), DEADLINE_EXCEEDED (worker wait timed out).
 * Allocates: yes.
 */
HK_API hk_code hk_session_new(hk_session **out, const hk_session_options *opts, hk_status *status);

/**
 * Run once with hooks (C5–C14): before_run on each hook, one executor run
 * with the merged arguments, after_run on each hook.
 * @param args     the caller's arguments; never written (D10). NULL: nothing.
 * @param results  args->nfetches tensors, written in fetch order; views owned
 *                 by the raw session, valid until the next run or close.
 *                 May be NULL when there are no fetches.
 * @param metadata may be NULL (the session then supplies its own, C12).
 * Errors: FAILED_PRECONDITION "Run called even after should_stop requested."
 * (C5) / "Session is closed." (C37) / "session is busy: called from a hook
 * callback" (H19); INVALID_ARGUMENT for feed conflicts (C9, C10, H13);
 * OUT_OF_RANGE and other hook/executor errors, passed through.
 * Allocates: no, in steady state (H7).
 */
HK_API hk_code hk_session_run(hk_session *s, const hk_run_args *args, hk_tensor *results,
                              hk_run_metadata *metadata, hk_status *status);

/** C26: nonzero when closed, failed, a hook requested a stop, the
 *  coordinator has a stop request, or the signal helper fired. Never fails.
 *  (In a monitored session a recorded preemption error triggers recovery, C40.) */
HK_API int hk_session_should_stop(hk_session *s);

/** step_fn (C42): results travel through `user`. */
typedef hk_code (*hk_step_fn)(hk_step_context *ctx, void *user, hk_status *status);

/** C43–C45: call step_fn once (again after recovery in a monitored session).
 *  Errors: INVALID_ARGUMENT for a NULL step_fn; step_fn's status. */
HK_API hk_code hk_session_run_step_fn(hk_session *s, hk_step_fn step_fn, void *user,
                                      hk_status *status);
/** Within step_fn: the raw session (no hooks). Borrowed. */
HK_API hk_raw_session *hk_step_context_session(hk_step_context *ctx);
/** Within step_fn: exactly hk_session_run() semantics (C43). */
HK_API hk_code hk_step_context_run_with_hooks(hk_step_context *ctx, const hk_run_args *args,
                                              hk_tensor *results, hk_run_metadata *metadata,
                                              hk_status *status);
/** Within step_fn: mark the step as stopping; returns OUT_OF_RANGE
 *  "step_fn has requested the iterations to stop." (C44). */
HK_API hk_code hk_step_context_request_stop(hk_step_context *ctx, hk_status *status);

/**
 * Close (C29, H15, D7) with the status the training loop ended with
 * (HK_OK, OUT_OF_RANGE and, after a clean stop request, CANCELLED are clean:
 * end() runs on every hook). Then a clean coordinator stop, the join of
 * registered threads within the grace period, and the raw session's close.
 * @return by precedence: the coordinator's recorded error; the first end()
 * error; the failed-state error; `exit_code` when not clean; OK.
 * A second close does nothing and returns OK.
 */
HK_API hk_code hk_session_close(hk_session *s, hk_code exit_code, hk_status *status);
/** Free. An open session is first closed as close(CANCELLED) with a WARNING
 *  (H20). Detaches the hooks (they are not freed). NULL is a no-op. */
HK_API void hk_session_free(hk_session *s);

/** C25: the raw session of a singular session while open; NULL for a
 *  monitored one or after close. Borrowed. */
HK_API hk_raw_session *hk_session_raw_session(hk_session *s);
/** C46: the executor while open, NULL after close. Borrowed. */
HK_API hk_executor *hk_session_graph(hk_session *s);
/** The current coordinator (fresh after each creation, C4). Borrowed; valid until hk_session_free(). Threads: any. */
HK_API hk_coordinator *hk_session_coordinator(hk_session *s);
/** The session's finalized Scaffold. Borrowed. */
HK_API hk_scaffold *hk_session_scaffold(hk_session *s);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_SESSION_H */
