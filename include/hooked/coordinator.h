/*
 * hooked — the coordinator (contract H17, C26–C30) and the opt-in signal
 * helper (D12).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_COORDINATOR_H
#define HOOKED_COORDINATOR_H

#include "hooked/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hk_coordinator hk_coordinator;
typedef struct hk_coordinator_thread hk_coordinator_thread;

/**
 * Create a standalone coordinator (sessions make their own, C4).
 * Ownership: owned; hk_coordinator_free(). Errors: INVALID_ARGUMENT, RESOURCE_EXHAUSTED.
 */
HK_API hk_code hk_coordinator_new(hk_coordinator **out, const hk_env *env, hk_status *status);
/** Free. Threads started with hk_coordinator_start_thread() that are still
 *  running are requested to stop and joined first. NULL is a no-op. */
HK_API void hk_coordinator_free(hk_coordinator *c);

/**
 * Request a stop. `code` HK_OK is a clean stop; the first non-OK code (with
 * `message`, copied, may be NULL) is recorded and later ones are ignored
 * (logged at DEBUG). Threads: any. Allocates: no.
 */
HK_API void hk_coordinator_request_stop(hk_coordinator *c, hk_code code, const char *message);
/** @return nonzero once a stop was requested (or the signal helper fired). Threads: any. */
HK_API int hk_coordinator_should_stop(hk_coordinator *c);
/**
 * Wait until a stop is requested or `timeout_secs` passes (HK_UNSET_SECS:
 * no limit; <= 0: just test). @return nonzero when a stop was requested.
 * Threads: any. With an injected clock whose `sleep` is set the wait sleeps
 * through it in slices of at most 0.1 s.
 */
HK_API int hk_coordinator_wait_for_stop(hk_coordinator *c, double timeout_secs);
/** The recorded error: returns its code (HK_OK when none) and copies it into `out` (may be NULL). Threads: any. */
HK_API hk_code hk_coordinator_error(hk_coordinator *c, hk_status *out);
/** @return nonzero when a clean stop (no error) was requested, or the signal helper fired. */
HK_API int hk_coordinator_clean_stop_requested(hk_coordinator *c);

/**
 * Register a thread the join waits for (C30). The thread calls
 * hk_coordinator_thread_done(token) as the last thing it does with the
 * coordinator. `name` is copied. Threads: any.
 */
HK_API hk_code hk_coordinator_register_thread(hk_coordinator *c, const char *name,
                                              hk_coordinator_thread **token, hk_status *status);
/** Report completion of a registered thread. Threads: any. */
HK_API void hk_coordinator_thread_done(hk_coordinator_thread *token);

/** Body of a thread started by the coordinator; it should return soon after
 *  hk_coordinator_should_stop() becomes true. */
typedef void (*hk_thread_fn)(void *user, hk_coordinator *c);
/** Start a named, registered thread running fn(user, c). Threads: any. */
HK_API hk_code hk_coordinator_start_thread(hk_coordinator *c, const char *name, hk_thread_fn fn,
                                           void *user, hk_status *status);

/**
 * Request a clean stop, then wait up to `grace_secs` (>= 0) for every
 * registered thread to report completion. Threads still running are logged
 * at WARNING "Coordinator stopped with threads still running: <names>" and do
 * not make the call fail (C29, C30). Errors: INVALID_ARGUMENT for a bad
 * grace. Threads: any one thread at a time.
 */
HK_API hk_code hk_coordinator_join(hk_coordinator *c, double grace_secs, hk_status *status);

/* ---- signal helper (D12) ---------------------------------------------- */
/**
 * Install process-wide handlers for SIGINT and SIGTERM that only set a flag.
 * Every session, session manager and coordinator treats the flag as a clean
 * stop. A second delivery of the same signal restores the previous
 * disposition and re-raises it. Errors: FAILED_PRECONDITION if already
 * installed; UNIMPLEMENTED without POSIX signals. Threads: any, but install
 * and uninstall are not meant to race each other.
 */
HK_API hk_code hk_signal_install(hk_status *status);
/** Restore the previous dispositions and clear the flag. FAILED_PRECONDITION if not installed. */
HK_API hk_code hk_signal_uninstall(hk_status *status);
/** @return the signal number received (SIGINT/SIGTERM) since install, or 0. Async-signal-safe. */
HK_API int hk_signal_fired(void);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_COORDINATOR_H */
