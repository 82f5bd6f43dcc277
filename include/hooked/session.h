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
 * thread), and every callback (hooks, creator, init_fn, step_fn) runs on
 * that thread. From inside a hook, creator or init_fn callback only
 * hk_session_should_stop() and the accessors may be called on the same
 * session; run(), run_step_fn() and close() then fail with
 * FAILED_PRECONDITION "session is busy: called from a hook callback".
 * To stop from another thread, use the coordinator
 * (hk_session_coordinator()).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_SESSION_H
#define HOOKED_SESSION_H

#include "hooked/common.h"
#include "hooked/tensor.h"
#include "hooked/sys/executor.h"
#include "hooked/hook.h"
#include "hooked/coordinator.h"
#include "hooked/scaffold.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hk_session hk_session;
typedef struct hk_step_context hk_step_context;

typedef enum hk_session_kind {
  HK_SESSION_MONITORED = 0, /**< recovers from ABORTED/UNAVAILABLE */
  HK_SESSION_SINGULAR = 1   /**< never recovers; exposes its raw session */
} hk_session_kind;

/* ---- session creators -------------------------------------------- */

#define HK_SESSION_CREATOR_VTABLE_VERSION 1
/**
 * A custom session creator: `create` must return a ready raw session
 * in *out, owned by the session afterwards, or a non-OK code with a status.
 * It replaces the chief/worker creator and is called for the first creation
 * and for every re-creation, on the training thread. A raw session left in
 * *out together with a non-OK code is freed by the session; OK with a NULL
 * *out is reported as INTERNAL. In a monitored session ABORTED and
 * UNAVAILABLE are retried, with a back-off, until recovery gives up.
 */
typedef struct hk_session_creator_vtable {
  uint32_t version; /**< HK_SESSION_CREATOR_VTABLE_VERSION */
  /* slots below: version 1 */
  /** (required) */
  hk_code (*create)(void *user, hk_executor *executor, hk_raw_session **out, hk_status *status);
  /** Called once when the session is freed. */
  void (*destroy)(void *user);
} hk_session_creator_vtable;

/* ---- options ----------------------------------------------------------- */

#define HK_SESSION_OPTIONS_VERSION 1
typedef struct hk_session_options {
  uint32_t version;      /**< HK_SESSION_OPTIONS_VERSION */
  const hk_env *env;     /**< copied; NULL: the executor's env */
  hk_session_kind kind;  /**< default MONITORED */
  hk_executor *executor; /**< required; borrowed for the session's life */
  hk_hook *const *hooks; /**< array copied, hooks borrowed; may be empty */
  size_t nhooks;
  hk_scaffold *scaffold;                    /**< borrowed; NULL: the session owns a default one */
  int is_chief;                             /**< default 1: chief creator; 0: worker */
  const hk_session_creator_vtable *creator; /**< optional custom creator, borrowed */
  void *creator_user;                       /**< taken by the session when hk_session_new succeeds and
                                                 released by creator->destroy at hk_session_free; on
                                                 failure the caller keeps it */
  /** Restore at every (re-)creation from the newest checkpoint of this
   *  directory that verifies, with the Scaffold's Saver;
   *  copied. A chief also adopts the directory's managed list. */
  const char *checkpoint_dir;
  /** Restore this checkpoint (a prefix), without fallback; not together
   *  with checkpoint_dir; copied. */
  const char *checkpoint_filename_with_path;
  double stop_grace_period_secs;      /**< >= 0, default 120 */
  double max_wait_secs;               /**< worker wait, default 1800; HK_UNSET_SECS: no limit */
  double recovery_wait_secs;          /**< > 0, default 30 */
  double recovery_initial_delay_secs; /**< >= 0, default 1 */
  double recovery_max_delay_secs;     /**< >= initial, default 60 */
  int64_t recovery_max_attempts;      /**< >= 0, default 10; 0 = unlimited */
  double recovery_max_secs;           /**< >= 0, default 0 = unlimited */
  /** Called once, last, by hk_session_free() of a session that was created
   *  (never when hk_session_new() fails): a layer that made resources for
   *  the session (hooks, a Scaffold) releases them with it. NULL: none. */
  void (*on_free)(void *user);
  void *on_free_user; /**< passed to on_free; borrowed */
} hk_session_options;

#define HK_SESSION_OPTIONS_INIT                                                                                    \
  {                                                                                                                \
    HK_SESSION_OPTIONS_VERSION, NULL, HK_SESSION_MONITORED, NULL, NULL, 0, NULL, 1, NULL, NULL, NULL, NULL, 120.0, \
        1800.0, 30.0, 1.0, 60.0, 10, 0.0, NULL, NULL                                                               \
  }

/**
 * Initialize options to the defaults of HK_SESSION_OPTIONS_INIT.
 * @param version  HK_SESSION_OPTIONS_VERSION, the version the program is compiled with.
 * @return HK_OK; INVALID_ARGUMENT (no message: there is no status), writing
 *         nothing, for a NULL opts or a version that is 0 or above
 *         HK_SESSION_OPTIONS_VERSION.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_session_options_init(hk_session_options *opts, uint32_t version);

/**
 * Create a session.
 * Every option is validated before any side effect: on an option error
 * no hook runs and nothing is created. Then begin() on each hook in order,
 * exactly once; Scaffold finalization, which finalizes the graph;
 * creation and initialization of a raw session (the chief restores or
 * initializes it, a worker waits until it is ready, or the custom creator
 * makes it); a fresh coordinator; and after_create_session() on each hook.
 * In a monitored session ABORTED/UNAVAILABLE during creation are retried,
 * with a back-off, until recovery gives up.
 * @param out   receives the session; NULL on failure.
 * @param opts  required (the executor is); borrowed for the call. The env,
 *              durations and hooks array are copied; the executor, hooks,
 *              scaffold, creator vtable and creator_user are borrowed as
 *              the field comments say.
 * **Ownership:** *out owned: hk_session_close() then hk_session_free(). On
 * failure *out is NULL, no end() runs, every hook is released for
 * reuse, a raw session that was created is closed, and creator_user stays
 * the caller's (creator->destroy is not called).
 * **Errors:** INVALID_ARGUMENT for a bad option or hook list (NULL entry,
 * the same hook twice, a hook serving another session; a scaffold
 * finalized with another executor; both checkpoint_dir and
 * checkpoint_filename_with_path); restore errors (NOT_FOUND,
 * INVALID_ARGUMENT naming a variable, DATA_LOSS); a hook's, the Scaffold's or the executor's
 * error unchanged (e.g. FAILED_PRECONDITION); DEADLINE_EXCEEDED or
 * CANCELLED from a worker's wait. Otherwise see the message.
 * **Threads:** the training thread (it becomes the session's). The status is
 * written on success too (cleared).
 * **Allocates:** yes.
 */
HK_API hk_code hk_session_new(hk_session **out, const hk_session_options *opts, hk_status *status);

/**
 * Run once with hooks: before_run on each hook in list order, one
 * executor run with the merged arguments, after_run on each hook
 * in list order, then the caller's results. In a monitored session an
 * ABORTED/UNAVAILABLE error (from the executor, a hook, or the
 * coordinator's recorded preemption error in place of the run's) closes and re-creates the raw session and runs the
 * whole call again, hooks included.
 * @param args     the caller's arguments, borrowed for the call and never
 *                 written. NULL: an empty run.
 * @param results  args->nfetches tensors, written in fetch order on success
 *                 only (untouched on failure). May be NULL when there are no
 *                 fetches.
 * @param metadata may be NULL (the session then supplies its own);
 *                 when given its version must be HK_RUN_METADATA_VERSION and
 *                 the executor fills it.
 * **Ownership:** result views (and metadata arrays) are owned by the raw
 * session, valid until the next run on this session or its close; copy
 * what you keep.
 * **Errors:** FAILED_PRECONDITION "Run called even after should_stop
 * requested.", "Session is closed." or "session is busy: called
 * from a hook callback"; INVALID_ARGUMENT for bad arguments and feed
 * conflicts; OUT_OF_RANGE (end of input) and every
 * other hook or executor error, passed through. A session in the
 * failed state returns its failure at once. ABORTED/UNAVAILABLE
 * reach the caller from a singular session, or from a monitored one when
 * recovery gave up (message ending "(gave up after %d recovery
 * attempts)"). Otherwise see the message.
 * **Threads:** the training thread. The status is written on success too.
 * **Allocates:** no, in steady state: with the reference executor and
 * built-in hooks, not after the first two runs unless a hook triggers or
 * the merged arguments grow. Recovery allocates.
 */
HK_API hk_code hk_session_run(hk_session *s, const hk_run_args *args, hk_tensor *results, hk_run_metadata *metadata,
                              hk_status *status);

/**
 * The first half of a run whose work the caller does itself between the
 * hooks' before_run and after_run (a training loop that owns its math, such
 * as the host loop of hooked/loop.h). It does what hk_session_run() does
 * up to the executor run: the refusals after a hook's stop request, after
 * close, in the failed state and from inside a callback, before_run on every
 * hook in list order and the merge of the caller's and the hooks'
 * arguments. On success the run is OPEN: the caller does its
 * work, then calls hk_session_run_end() (or hk_session_run_abandon()).
 * While a run is open, hk_session_run(), hk_session_run_step_fn() and a
 * second hk_session_run_begin() fail with FAILED_PRECONDITION "a run begun
 * with hk_session_run_begin() is still open: ..."; should_stop() and the
 * accessors work; hk_session_close() abandons the open run first.
 * Split runs never recover: an ABORTED/UNAVAILABLE error is returned as a
 * singular session returns it, since the caller's work cannot be repeated.
 * @param args  the caller's arguments, BORROWED until hk_session_run_end()
 *              or hk_session_run_abandon() returns, never written.
 *              NULL: an empty run.
 * **Errors:** as hk_session_run() for its first half; on failure no run is
 * open, no after_run runs and the stop flag is unchanged.
 * **Threads:** the training thread. The status is written on success too.
 * **Allocates:** no, in steady state (as hk_session_run()).
 */
HK_API hk_code hk_session_run_begin(hk_session *s, const hk_run_args *args, hk_status *status);
/**
 * The second half of an open run: one executor run with the merged
 * arguments (whose fetched values therefore reflect the caller's work),
 * after_run on every hook in list order, then the caller's results. The run is closed whatever the result.
 * @param results   the open run's args->nfetches tensors, written on success
 *                  only; may be NULL when there are no fetches.
 * @param metadata  as hk_session_run().
 * **Ownership:** as hk_session_run().
 * **Errors:** FAILED_PRECONDITION "hk_session_run_end: no run is open ..."
 * when none is (nothing else happens), "Session is closed." or the
 * busy message; INVALID_ARGUMENT for NULL results with fetches or a
 * bad metadata version (the run stays open); the executor's or an
 * after_run's error, passed through.
 * **Threads:** the training thread. The status is written on success too.
 * **Allocates:** no, in steady state (as hk_session_run()).
 */
HK_API hk_code hk_session_run_end(hk_session *s, hk_tensor *results, hk_run_metadata *metadata, hk_status *status);
/**
 * The merged run options (the caller's and every hook's trace_level
 * and timeout_ms) of the run open between hk_session_run_begin() and its
 * end, so a caller doing the work itself can honour them — e.g. time its
 * work only when a hook asked for a trace.
 * @return borrowed, valid until the run ends or is abandoned; NULL when no
 *         run is open or for NULL.
 * **Threads:** the training thread. **Errors:** none. **Allocates:** no.
 */
HK_API const hk_run_options *hk_session_open_run_options(const hk_session *s);
/**
 * Close an open run without its second half, as when the caller's work
 * failed: no executor run and no after_run; the run's stop requests are
 * dropped. No-op for NULL, for a session with no open run, and from
 * inside a callback.
 * **Threads:** the training thread. **Allocates:** no.
 */
HK_API void hk_session_run_abandon(hk_session *s);

/**
 * Whether the training loop should end: nonzero when s is NULL or
 * closed, in the failed state, a hook requested a stop, the
 * coordinator has a stop request (clean or with an error), or the
 * signal helper fired. A stop requested on the coordinator does not
 * make run() fail. OUT_OF_RANGE from run() does not set it.
 * In a monitored session, a recorded ABORTED/UNAVAILABLE on the coordinator
 * instead re-creates the raw session (with a back-off) and returns 0 (nonzero if
 * recovery gives up or a hook stops the new session); inside a
 * callback it just returns nonzero.
 * @return a boolean; never an error.
 * **Threads:** the training thread, also from inside this session's
 * callbacks.
 * **Allocates:** no, except while recovering.
 */
HK_API int hk_session_should_stop(hk_session *s);

/**
 * Why training stopped (the first cause wins): a hook's request (its name,
 * or the reason it gave: StopAtStepHook's last step, EarlyStoppingHook's,
 * a time limit, a non-finite value), a signal of the signal helper (which
 * one), a stop requested on the coordinator (an error recorded there is
 * HK_STOP_ERROR with its status), the step function's request. A run that
 * failed is the cause unless a later run succeeds (HK_STOP_ERROR with its
 * status, HK_STOP_END_OF_INPUT for OUT_OF_RANGE, or the reason the failing
 * hook gave). hk_session_close() fixes the cause: with none known, the
 * code it is given says (OUT_OF_RANGE: end of input; an error: that error;
 * OK: HK_STOP_CLOSED). A preemption a monitored session recovers from is
 * not a stop. HK_STOP_NONE while the session runs.
 * @param out  receives the cause; zeroed first.
 * **Errors:** INVALID_ARGUMENT for a NULL out or session.
 * **Threads:** the training thread (also after close, until
 * hk_session_free()). **Allocates:** no.
 */
HK_API hk_code hk_session_stop_reason(hk_stop_info *out, const hk_session *session, hk_status *status);

/**
 * A step function. It runs on the training thread; results travel
 * through `user`. `ctx` is valid only during the call. Return a status as
 * any callback does.
 */
typedef hk_code (*hk_step_fn)(hk_step_context *ctx, void *user, hk_status *status);

/**
 * Call step_fn once with a step context. In a monitored session, when
 * step_fn returns ABORTED/UNAVAILABLE the raw session is re-created and
 * step_fn is called again from the start, repeating its side effects,
 * until recovery gives up.
 * @param user  borrowed; passed to step_fn.
 * @return step_fn's code; after hk_step_context_request_stop(), OUT_OF_RANGE
 *         "step_fn has requested the iterations to stop." unless step_fn
 *         returned another non-OK code, which wins.
 * **Errors:** INVALID_ARGUMENT for a NULL step_fn; FAILED_PRECONDITION
 * "Session is closed." or the busy message; the failure of a
 * failed session; step_fn's status otherwise.
 * **Threads:** the training thread. The status is written on success too.
 * **Allocates:** no by itself (step_fn and recovery may).
 */
HK_API hk_code hk_session_run_step_fn(hk_session *s, hk_step_fn step_fn, void *user, hk_status *status);
/**
 * Within step_fn: the current raw session; calls on it trigger no hooks.
 * NULL for a NULL ctx.
 * **Ownership:** borrowed; valid during this step_fn call only.
 * **Threads:** the training thread. **Allocates:** no.
 */
HK_API hk_raw_session *hk_step_context_session(hk_step_context *ctx);
/**
 * Within step_fn: hk_session_run() semantics, hooks included, any number of
 * times per step, with one difference: ABORTED/UNAVAILABLE are
 * returned to step_fn without recovery; run_step_fn recovers when step_fn
 * returns them. After hk_step_context_request_stop() it returns
 * OUT_OF_RANGE "step_fn has requested the iterations to stop." without
 * calling hooks or the executor.
 * **Ownership**, **Errors**, **Allocates:** as hk_session_run(), plus
 * INVALID_ARGUMENT for a NULL ctx.
 * **Threads:** the training thread, inside step_fn.
 */
HK_API hk_code hk_step_context_run_with_hooks(hk_step_context *ctx, const hk_run_args *args, hk_tensor *results,
                                              hk_run_metadata *metadata, hk_status *status);
/**
 * Within step_fn: mark the step as stopping. should_stop() is not
 * changed; close(OUT_OF_RANGE) is clean.
 * @return OUT_OF_RANGE "step_fn has requested the iterations to stop.",
 *         which step_fn is expected to return at once; INVALID_ARGUMENT for
 *         a NULL ctx.
 * **Threads:** the training thread, inside step_fn. **Allocates:** no.
 */
HK_API hk_code hk_step_context_request_stop(hk_step_context *ctx, hk_status *status);

/**
 * Close with the status the training loop ended with.
 * In order: end() on every hook in list order with the most recent raw
 * session, only when `exit_code` is clean and the session is not failed
 * (an end() error skips later ones); a clean coordinator stop
 * and the join of registered threads within stop_grace_period_secs (
 * stragglers are logged at WARNING and do not fail the close); the raw
 * session's close (its errors are logged, never returned). The hooks
 * are then released for reuse. Clean codes: OK, OUT_OF_RANGE, and CANCELLED
 * when the coordinator holds a clean stop request or the signal helper fired.
 * @param exit_code  any code, unknown numbers included (not clean).
 * @return by precedence: the coordinator's recorded error (monitored:
 *         not ABORTED/UNAVAILABLE, which are logged instead); the first
 *         end() error; the failed-state error; `exit_code` when not
 *         clean; OK. Errors not returned are logged at ERROR.
 * After the first close, whatever it returned, the session is closed:
 * should_stop() is true, hk_session_executor() and hk_session_raw_session()
 * return NULL, run() fails, and
 * a further close does nothing and returns OK.
 * **Errors:** as @return; FAILED_PRECONDITION with the busy message from
 * inside a callback (the session stays open); INVALID_ARGUMENT for a
 * NULL session.
 * **Threads:** the training thread. The status is written on success too.
 * **Allocates:** no (end() callbacks may).
 */
HK_API hk_code hk_session_close(hk_session *s, hk_code exit_code, hk_status *status);
/**
 * Free the session and everything it owns: its default Scaffold, its
 * coordinators, and creator_user through creator->destroy. The hooks,
 * executor and a caller's Scaffold are not freed. A session that was not
 * closed is first closed as close(CANCELLED) after a WARNING "session
 * destroyed without close". Called from inside one of the session's
 * callbacks it logs an ERROR and does nothing.
 * @param s  consumed; NULL is a no-op.
 * **Threads:** the training thread. Coordinator threads still running must
 * have been started with hk_coordinator_start_thread() (they are joined) or
 * must only touch the coordinator until hk_coordinator_thread_done().
 * **Allocates:** no (end() callbacks of an implicit close may).
 */
HK_API void hk_session_free(hk_session *s);

/**
 * The raw session of a singular session while open; NULL for a
 * monitored session, after close, or for NULL.
 * **Ownership:** borrowed; valid until the session is closed.
 * **Threads:** the training thread. **Allocates:** no.
 */
HK_API hk_raw_session *hk_session_raw_session(hk_session *s);
/**
 * The executor while open, NULL after close or for NULL.
 * **Ownership:** borrowed (the caller owns the executor).
 * **Threads:** the training thread. **Allocates:** no.
 */
HK_API hk_executor *hk_session_executor(hk_session *s);
/**
 * The current coordinator: a fresh one after each (re-)creation, so
 * fetch it again after a recovery. Stop requests on it are seen by
 * should_stop().
 * **Ownership:** borrowed; valid until hk_session_free(), even after close
 * or re-creation. NULL for NULL.
 * **Threads:** call this on the training thread; the coordinator it returns
 * may then be used from any thread.
 * **Allocates:** no.
 */
HK_API hk_coordinator *hk_session_coordinator(hk_session *s);
/**
 * The session's Scaffold, finalized (the caller's, or the default one the
 * session owns). Still returned after close; NULL for NULL.
 * **Ownership:** borrowed; a default Scaffold lives until hk_session_free().
 * **Threads:** the training thread. **Allocates:** no.
 */
HK_API hk_scaffold *hk_session_scaffold(hk_session *s);
/** @return the number of hooks the session drives (0 for NULL).
 *  **Threads:** the training thread. **Allocates:** no. */
HK_API size_t hk_session_hook_count(const hk_session *s);
/**
 * @return hook `i` in dispatch order, NULL when out of range or for
 *         NULL. **Ownership:** borrowed, as the session borrows it.
 * **Threads:** the training thread. **Allocates:** no.
 */
HK_API hk_hook *hk_session_hook(const hk_session *s, size_t i);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_SESSION_H */
