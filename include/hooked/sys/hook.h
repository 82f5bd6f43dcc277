/*
 * hooked — the hook interface (contract groups A and B).
 *
 * A hook is a `static const hk_hook_vtable` plus a `void *user`, wrapped with
 * hk_hook_new(). Every slot may be NULL ("no-op returning OK", and for
 * before_run "no request"). Callbacks run on the thread that called the
 * session function (H6). A callback that returns non-OK stops that dispatch,
 * and its code and message reach the caller unchanged (H1).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_SYS_HOOK_H
#define HOOKED_SYS_HOOK_H

#include "hooked/common.h"
#include "hooked/tensor.h"
#include "hooked/sys/executor.h"
#include "hooked/coordinator.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hk_hook hk_hook;
typedef struct hk_run_context hk_run_context;
typedef struct hk_creation_context hk_creation_context;

/**
 * What before_run asks for (C8–C11). The session zeroes it before each
 * before_run. Arrays stay owned by the hook and must remain valid until that
 * hook's after_run for the same call returns (H14).
 */
typedef struct hk_run_request {
  const hk_handle *fetches;
  size_t nfetches;
  const hk_feed *feeds;
  size_t nfeeds;
  const hk_handle *targets;
  size_t ntargets;
  int32_t trace_level;   /**< merged as the maximum (C11) */
  int64_t timeout_ms;    /**< merged as the maximum (C11) */
} hk_run_request;

/** What after_run receives: exactly this hook's fetches, in its order (C8). */
typedef struct hk_run_values {
  const hk_tensor *results;        /**< NULL when the hook fetched nothing */
  size_t nresults;
  const hk_run_options *options;   /**< the merged options used for the run (C12) */
  hk_run_metadata *metadata;       /**< the metadata used for the run (C12) */
} hk_run_values;

#define HK_HOOK_VTABLE_VERSION 1

typedef struct hk_hook_vtable {
  uint32_t version;  /**< HK_HOOK_VTABLE_VERSION */
  /* slots below: version 1 */
  /** Once per session, before the graph is finalized; resolve names here (C2, C3). */
  hk_code (*begin)(void *user, hk_executor *graph, hk_status *status);
  /** After every raw-session creation (C4). `coord` stays valid until the session is freed (H17). */
  hk_code (*after_create_session)(void *user, hk_raw_session *session, hk_coordinator *coord,
                                  hk_creation_context *ctx, hk_status *status);
  /** Before each run; fill `request` to add fetches, feeds, targets (C7–C11). */
  hk_code (*before_run)(void *user, hk_run_context *ctx, hk_run_request *request,
                        hk_status *status);
  /** After each successful run (C7, C13). Values are valid only during the call (H14). */
  hk_code (*after_run)(void *user, hk_run_context *ctx, const hk_run_values *values,
                       hk_status *status);
  /** At a clean close, with the most recent raw session (C15). */
  hk_code (*end)(void *user, hk_raw_session *session, hk_status *status);
  /** Release `user`; called exactly once, by hk_hook_free(). */
  void (*destroy)(void *user);
} hk_hook_vtable;

/**
 * Wrap an implementation.
 * @param vtable borrowed; must outlive the hook (make it static const).
 * @param user   borrowed; released by vtable->destroy in hk_hook_free().
 * @param name   copied; used in messages. NULL: "hook".
 * @param env    copied; NULL: the env of the session the hook serves.
 * Errors: INVALID_ARGUMENT for NULL out/vtable or a version that is 0 or
 * newer than HK_HOOK_VTABLE_VERSION (naming the vtable). On failure
 * `destroy` is not called. Ownership: owned by the caller, hk_hook_free().
 * A session borrows its hooks: a hook must outlive the sessions using it,
 * and serves one session at a time (H11).
 */
HK_API hk_code hk_hook_new(hk_hook **out, const hk_hook_vtable *vtable, void *user,
                           const char *name, const hk_env *env, hk_status *status);
/** Free: calls destroy(user) once. NULL is a no-op. Must not be attached to a live session. */
HK_API void hk_hook_free(hk_hook *hook);
/** @return the name given at creation (borrowed). */
HK_API const char *hk_hook_name(const hk_hook *hook);
/** @return the user pointer. */
HK_API void *hk_hook_user(const hk_hook *hook);
/** @return the env in force: the hook's own, else its session's, else defaults. */
HK_API const hk_env *hk_hook_env(const hk_hook *hook);
/** Log through hk_hook_env(hook). Allocates: no. Threads: the training thread. */
HK_API void hk_hook_log(const hk_hook *hook, hk_log_level level, const char *fmt, ...) HK_PRINTF(3, 4);

/* ---- run context (group B) ---------------------------------------------- */

/** The caller's original arguments, exactly as passed (C6, C21). Borrowed. */
HK_API const hk_run_args *hk_run_context_args(const hk_run_context *ctx);
/** The raw session; calls on it trigger no hooks (C17). Borrowed. */
HK_API hk_raw_session *hk_run_context_session(const hk_run_context *ctx);
/** Request a stop after this call's after_run hooks (C18–C20). */
HK_API void hk_run_context_request_stop(hk_run_context *ctx);
/** @return nonzero once a stop was requested on this context. */
HK_API int hk_run_context_stop_requested(const hk_run_context *ctx);

/** Request a stop from after_create_session (H12): should_stop() is true before any step. */
HK_API void hk_creation_context_request_stop(hk_creation_context *ctx);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_SYS_HOOK_H */
