/*
 * hooked — the hook interface (contract groups A and B).
 *
 * A hook is a `static const hk_hook_vtable` plus a `void *user`, wrapped with
 * hk_hook_new(). What a program that only uses hooks needs (the hk_hook
 * type, hk_hook_free(), hk_hook_name()) is in hooked/hook.h. Every slot may be NULL ("no-op returning OK", and for
 * before_run "no request"). Callbacks run on the thread that called the
 * session function. A callback that returns non-OK stops that dispatch,
 * and its code and message reach the caller unchanged; a callback that
 * returns non-OK without filling its status gets a message naming the hook.
 *
 * Stability: headers under hooked/sys/ are for implementers and carry a
 * WEAKER promise than the other public headers. Until 1.0 they may change
 * in any minor release; from 1.0 on, source compatibility is kept within a
 * major version only by the versioned-vtable rule: slots are only ever
 * appended under a new HK_HOOK_VTABLE_VERSION, and the library never reads a
 * slot beyond the version a hook declares. The context accessors may
 * gain siblings in any release.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_SYS_HOOK_H
#define HOOKED_SYS_HOOK_H

#include "hooked/common.h"
#include "hooked/tensor.h"
#include "hooked/hook.h"
#include "hooked/sys/executor.h"
#include "hooked/coordinator.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hk_run_context hk_run_context;
typedef struct hk_creation_context hk_creation_context;

/**
 * What before_run asks for. The session zeroes it before each
 * before_run. Arrays stay owned by the hook and must remain valid until that
 * hook's after_run for the same call returns. An invalid request (NULL
 * array with a count, trace_level outside 0..3, negative timeout_ms) fails
 * the run with INVALID_ARGUMENT naming the hook. So does a feed that
 * conflicts: two hooks, or a hook and the caller, feeding one tensor, or
 * one list naming a tensor twice (no after_run runs then).
 */
typedef struct hk_run_request {
  const hk_handle *fetches;
  size_t nfetches;
  const hk_feed *feeds;
  size_t nfeeds;
  const hk_handle *targets;
  size_t ntargets;
  int32_t trace_level; /**< merged as the maximum */
  int64_t timeout_ms;  /**< merged as the maximum */
} hk_run_request;

/** What after_run receives: exactly this hook's fetches, in its order. */
typedef struct hk_run_values {
  const hk_tensor *results; /**< NULL when the hook fetched nothing */
  size_t nresults;
  const hk_run_options *options; /**< the merged options used for the run */
  hk_run_metadata *metadata;     /**< the metadata used for the run */
} hk_run_values;

#define HK_HOOK_VTABLE_VERSION 1

typedef struct hk_hook_vtable {
  uint32_t version; /**< HK_HOOK_VTABLE_VERSION */
  /* slots below: version 1 */
  /** Once per session, before the graph is finalized; resolve names here. */
  hk_code (*begin)(void *user, hk_executor *graph, hk_status *status);
  /** After every raw-session creation. `coord` stays valid until the session is freed. */
  hk_code (*after_create_session)(void *user, hk_raw_session *session, hk_coordinator *coord, hk_creation_context *ctx,
                                  hk_status *status);
  /** Before each run; fill `request` to add fetches, feeds, targets. */
  hk_code (*before_run)(void *user, hk_run_context *ctx, hk_run_request *request, hk_status *status);
  /** After each successful run. Values are valid only during the call. */
  hk_code (*after_run)(void *user, hk_run_context *ctx, const hk_run_values *values, hk_status *status);
  /** At a clean close, with the most recent raw session. */
  hk_code (*end)(void *user, hk_raw_session *session, hk_status *status);
  /** Release `user`; called exactly once, by hk_hook_free(). */
  void (*destroy)(void *user);
} hk_hook_vtable;

/**
 * Wrap an implementation in a hook.
 * @param out    receives the hook; NULL on failure.
 * @param vtable borrowed; must outlive the hook (make it static const).
 * @param user   borrowed until hk_hook_free(), which releases it with
 *               vtable->destroy (if set). On failure nothing is called and
 *               `user` stays the caller's.
 * @param name   copied; used in messages. NULL: "hook".
 * @param env    copied; NULL: the hook is allocated with the default
 *               allocator, and hk_hook_env() returns the env of the session
 *               it serves (defaults while it serves none).
 * @return HK_OK or an error.
 * **Ownership:** *out owned by the caller, hk_hook_free(). A session borrows
 * its hooks: a hook must outlive the sessions using it, and serves one
 * session at a time; it may serve a later session once the previous
 * one is closed or freed (begin() resets it).
 * **Errors:** INVALID_ARGUMENT for NULL out/vtable, a version that is 0 or
 * newer than HK_HOOK_VTABLE_VERSION (naming the hook) or a bad env;
 * RESOURCE_EXHAUSTED.
 * **Threads:** any. **Allocates:** yes.
 */
HK_API hk_code hk_hook_new(hk_hook **out, const hk_hook_vtable *vtable, void *user, const char *name, const hk_env *env,
                           hk_status *status);
/** @return the user pointer given at creation (NULL for a NULL hook).
 *  **Ownership:** borrowed. **Threads:** any. **Allocates:** no. */
HK_API void *hk_hook_user(const hk_hook *hook);
/**
 * Recognise a hook of one's own kind: a hook's functions that take an
 * hk_hook * (a report call, an info call) check with this that they were
 * given a hook made with their vtable, not another that merely has its
 * name.
 * @param hook    may be NULL.
 * @param vtable  the vtable the hook must have been made with.
 * @return the user pointer given at creation when `hook` was made by
 *         hk_hook_new() with exactly `vtable` (the same address), else NULL.
 * **Ownership:** borrowed. **Threads:** any. **Allocates:** no.
 */
HK_API void *hk_hook_user_if(const hk_hook *hook, const hk_hook_vtable *vtable);
/**
 * @return the env in force: the hook's own copy, else the env of the session
 *         it currently serves, else the defaults. Never NULL.
 * **Ownership:** borrowed; a session's env is valid only while the hook is
 *         attached to it (until that session is closed), so do not keep it.
 * **Threads:** the training thread. **Allocates:** no.
 */
HK_API const hk_env *hk_hook_env(const hk_hook *hook);
/**
 * Format and log through hk_hook_env(hook), as hk_env_log() does.
 * **Threads:** the training thread. **Errors:** none. **Allocates:** no.
 */
HK_API void hk_hook_log(const hk_hook *hook, hk_log_level level, const char *fmt, ...) HK_PRINTF(3, 4);

/**
 * The finalized Scaffold of the session this hook currently serves (
 * the session makes it available to hooks), NULL while it serves none.
 * **Ownership:** borrowed; valid while the hook is attached (until that
 * session is closed). **Threads:** the training thread. **Allocates:** no.
 */
HK_API struct hk_scaffold *hk_hook_scaffold(const hk_hook *hook);

/* ---- run context (group B) ---------------------------------------------- */
/* A run context exists only during one run() call: use it from
 * before_run and after_run of that call, on the training thread, and do not
 * keep it. These accessors never fail (NULL in, NULL / 0 out) and never
 * allocate. */

/**
 * @return the caller's original arguments, exactly as passed:
 *         the caller's own pointer, possibly NULL for a run without
 *         arguments. Read-only.
 * **Ownership:** borrowed from the caller for the duration of the run.
 * **Threads:** the hook callback's (the thread running the session). **Allocates:** no.
 */
HK_API const hk_run_args *hk_run_context_args(const hk_run_context *ctx);
/**
 * @return the raw session of this run; calls on it go straight to the
 *         executor and trigger no hooks.
 * **Ownership:** borrowed; valid during the callback only (the session may
 *         be re-created between runs).
 * **Threads:** the hook callback's (the thread running the session). **Allocates:** no.
 */
HK_API hk_raw_session *hk_run_context_session(const hk_run_context *ctx);
/**
 * Request a stop. It takes effect after every after_run of this call has
 * run: the current step still executes, later hooks see the request, and
 * then should_stop() is true and run() fails with FAILED_PRECONDITION
 * "Run called even after should_stop requested.". A request
 * from a call that fails is dropped. Cannot be undone.
 * **Threads:** the hook callback's (the thread running the session). **Allocates:** no.
 */
HK_API void hk_run_context_request_stop(hk_run_context *ctx);
/** @return nonzero once a stop was requested on this context, by this hook
 *  or an earlier one.
 * **Threads:** the hook callback's (the thread running the session). **Allocates:** no.
 */
HK_API int hk_run_context_stop_requested(const hk_run_context *ctx);
/**
 * hk_run_context_request_stop(), saying why: the session (and a host loop
 * over it) reports `reason` and `detail` as why training stopped
 * (hk_session_stop_reason()) when this is the first cause. A plain
 * hk_run_context_request_stop() reports HK_STOP_HOOK with the hook's name.
 * A hook whose call then fails still names the reason, with the failure's
 * code (the stop request itself is dropped, as any of a failing call): the
 * NaN guard reports HK_STOP_NON_FINITE so. The first
 * reason given in a run is kept; later ones are ignored.
 * @param reason  any hk_stop_reason but HK_STOP_NONE (which requests the
 *                stop as HK_STOP_HOOK).
 * @param detail  copied (truncated to HK_STATUS_MESSAGE_MAX - 1 bytes);
 *                NULL: the hook's name.
 * **Threads:** the training thread, inside before_run or after_run.
 * **Allocates:** no.
 */
HK_API void hk_run_context_request_stop_with_reason(hk_run_context *ctx, hk_stop_reason reason, const char *detail);

/**
 * One timed part of a traced run: a hook callback, the executor run,
 * or the whole run. Times are monotonic seconds from the session env's
 * clock; `thread` identifies the thread it ran on (the kernel's thread id
 * on Linux), for trace viewers.
 */
typedef struct hk_span {
  const char *hook; /**< the hook's name; "executor" or "session" for those spans */
  const char *what; /**< "before_run", "after_run", "run" (executor) or "session.run" (the whole call) */
  double start_secs;
  double end_secs;
  uint64_t thread;
} hk_span;

/**
 * The spans of this session's most recent completed traced run: a
 * run is traced from the moment the caller's options or a hook's request
 * set trace_level >= 1 (so a profiler placed first in the hook list sees
 * every other hook's before_run), and its spans cover every later
 * before_run, the executor run, every after_run and the whole call. A hook
 * reads them in a later callback (its next before_run, or end()) because
 * after_run callbacks after its own have not run yet in its own after_run.
 * @param n  required; receives the count (0 when no run was traced yet, or
 *           for a NULL ctx).
 * @return borrowed array, valid during the callback; NULL when none.
 * **Threads:** the training thread. **Allocates:** no.
 */
HK_API const hk_span *hk_run_context_last_traced_spans(const hk_run_context *ctx, size_t *n);
/**
 * As hk_run_context_last_traced_spans(), from any callback of a hook (end()
 * included): the spans of the most recent completed traced run of the
 * session the hook serves.
 * @param n  required; receives the count (0 when the hook serves no session
 *           or none was traced).
 * @return borrowed, valid during the callback; NULL when none.
 * **Threads:** the training thread. **Allocates:** no.
 */
HK_API const hk_span *hk_hook_last_traced_spans(const hk_hook *hook, size_t *n);

/**
 * Why the session this hook serves stopped, as hk_session_stop_reason()
 * says: in end() the cause is known (a progress display says "stopped at
 * 24% (signal: SIGINT)" rather than "done"); HK_STOP_NONE while it runs or
 * when the hook serves no session.
 * @param out  receives the cause; zeroed first.
 * **Errors:** INVALID_ARGUMENT for a NULL out or hook.
 * **Threads:** the training thread. **Allocates:** no.
 */
HK_API hk_code hk_hook_stop_reason(hk_stop_info *out, const hk_hook *hook, hk_status *status);

/**
 * Request a stop from after_create_session: once every
 * after_create_session of that creation succeeded, the session's stop flag
 * is set, so should_stop() is true before any step and run() fails with
 * FAILED_PRECONDITION.
 * Dropped when the creation fails. Valid only during that callback.
 * **Threads:** the training thread. **Allocates:** no.
 */
HK_API void hk_creation_context_request_stop(hk_creation_context *ctx);
/**
 * hk_creation_context_request_stop(), saying why (as
 * hk_run_context_request_stop_with_reason(); StopAtStepHook says
 * HK_STOP_LAST_STEP when the restored step is already the last).
 * @param detail  copied; NULL: the hook's name.
 * **Threads:** the training thread, inside after_create_session.
 * **Allocates:** no.
 */
HK_API void hk_creation_context_request_stop_with_reason(hk_creation_context *ctx, hk_stop_reason reason,
                                                         const char *detail);
/**
 * Whether a hook has requested a stop in this creation so far
 * (hk_creation_context_request_stop() from an earlier hook's
 * after_create_session, such as StopAtStep's when the restored step is
 * already the last): a hook placed after it can act on it, as the MPI stop
 * hook does to stop every rank alike. 0 for a NULL ctx.
 * Valid only during that after_create_session callback.
 * **Threads:** the training thread. **Allocates:** no.
 */
HK_API int hk_creation_context_stop_requested(const hk_creation_context *ctx);
/**
 * The checkpoint this creation restored the model from: its
 * prefix "<dir>/<name>", as hk_session_manager_restored_checkpoint() gives
 * it. A hook that writes checkpoints can tell from it that the checkpoint
 * of the current step is already on disk (the checkpoint saver
 * hooks do not save it again).
 * @return NULL when the model was initialized rather than restored, when
 *         the raw session came from a custom session creator or a
 *         worker's wait, and for a NULL ctx.
 * **Ownership:** borrowed; valid only during that after_create_session
 * callback: copy it to keep it.
 * **Threads:** the training thread. **Allocates:** no.
 */
HK_API const char *hk_creation_context_restored_checkpoint(const hk_creation_context *ctx);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_SYS_HOOK_H */
