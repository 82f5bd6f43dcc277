/*
 * hooked — the coordinator and the opt-in signal helper.
 *
 * Modules: coordinator, signal.
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

/*
 * Every coordinator function is safe from any thread and never
 * calls back into user code except the log sink and, for
 * hk_coordinator_start_thread(), the thread body.
 */

/**
 * Create a standalone coordinator (sessions make their own).
 * @param out  receives it; NULL on failure.
 * @param env  copied; NULL for defaults. Its clock paces the waits.
 * **Ownership:** *out owned, hk_coordinator_free().
 * **Errors:** INVALID_ARGUMENT (NULL out, bad env); RESOURCE_EXHAUSTED.
 * **Threads:** any. **Allocates:** yes.
 */
HK_API hk_code hk_coordinator_new(hk_coordinator **out, const hk_env *env, hk_status *status);
/**
 * Free: request a clean stop, then join (without time limit) every thread
 * started with hk_coordinator_start_thread() that was not joined yet, so
 * such a thread must return soon after a stop. A thread only registered
 * with hk_coordinator_register_thread() keeps the memory alive: it may go on
 * calling coordinator functions until its hk_coordinator_thread_done(), and
 * the last of them frees the memory.
 * @param c  consumed; NULL is a no-op. The owner must not use it afterwards.
 * **Threads:** the owner's (not from a thread it started). **Allocates:** no.
 */
HK_API void hk_coordinator_free(hk_coordinator *c);

/**
 * Request a stop; sets the stop flag and wakes every waiter.
 * `code` HK_OK is a clean stop; the first non-OK code is recorded with its
 * message, and later ones are ignored (logged at DEBUG). A session that
 * owns the coordinator then answers should_stop() with true, returns a
 * recorded preemption error in place of a run's own error, and reports the
 * recorded error from close().
 * @param message  copied (truncated to HK_STATUS_MESSAGE_MAX - 1 bytes);
 *                 NULL or "": hk_code_name(code).
 * NULL c is a no-op.
 * **Threads:** any. **Allocates:** no.
 */
HK_API void hk_coordinator_request_stop(hk_coordinator *c, hk_code code, const char *message);
/** @return nonzero once a stop was requested (clean or not) or the signal
 *  helper fired; for a NULL c, only the latter.
 *  **Threads:** any. **Allocates:** no. */
HK_API int hk_coordinator_should_stop(hk_coordinator *c);
/**
 * Wait until a stop is requested (or the signal helper fires) or
 * `timeout_secs` passes.
 * @param timeout_secs  HK_UNSET_SECS or +infinity: no limit; zero, negative
 *                      or NaN: just test.
 * @return nonzero when a stop was requested, 0 at the timeout.
 * With an injected clock whose `sleep` is set, the wait sleeps through it in
 * slices of at most 0.1 s and measures time with its `monotonic`, so a mock
 * clock makes it instant. Otherwise it waits on a condition variable and
 * looks at the signal flag at least every 0.1 s.
 * **Threads:** any. **Allocates:** no.
 */
HK_API int hk_coordinator_wait_for_stop(hk_coordinator *c, double timeout_secs);
/**
 * The recorded error.
 * @param out  may be NULL; receives a copy of the recorded code and message
 *             (HK_OK and "" when there is none).
 * @return the recorded code, HK_OK when none; INVALID_ARGUMENT for a NULL c.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_coordinator_error(hk_status *out, hk_coordinator *c);
/** @return nonzero when a stop was requested and no error is recorded, or
 *  the signal helper fired (what a session's close() counts as a clean
 *  stop).
 *  **Threads:** any. **Allocates:** no. */
HK_API int hk_coordinator_clean_stop_requested(hk_coordinator *c);

/**
 * Register a thread that the join waits for. The thread calls
 * hk_coordinator_thread_done(token) exactly once, as the last thing it does
 * with the coordinator.
 * @param token  receives the registration; NULL on failure.
 * @param name   copied; listed when the thread outlives a join.
 * **Ownership:** the token belongs to the coordinator; it is released by
 * thread_done together with the thread's hold on the coordinator.
 * **Errors:** INVALID_ARGUMENT (NULL c, name or token); RESOURCE_EXHAUSTED.
 * **Threads:** any. **Allocates:** yes.
 */
HK_API hk_code hk_coordinator_register_thread(hk_coordinator_thread **token, hk_coordinator *c, const char *name,
                                              hk_status *status);
/**
 * Report completion of a registered thread and wake the join. The token
 * and, after hk_coordinator_free(), the coordinator may be gone when this
 * returns. NULL is a no-op.
 * **Threads:** any (normally the registered thread). **Allocates:** no.
 */
HK_API void hk_coordinator_thread_done(hk_coordinator_thread *token);

/** Body of a thread started by the coordinator. It runs on the new thread;
 *  it should return soon after hk_coordinator_should_stop(c) becomes true,
 *  because hk_coordinator_free() joins it. */
typedef void (*hk_thread_fn)(void *user, hk_coordinator *c);
/**
 * Start a registered thread running fn(user, c); the thread is named after
 * `name` (truncated to 15 bytes where names are supported) and reports its
 * own completion when fn returns.
 * @param name  copied.
 * @param user  borrowed; must stay valid until the thread has finished.
 * **Errors:** INVALID_ARGUMENT (NULL c, name or fn); RESOURCE_EXHAUSTED
 * (memory, or the system's thread limit); INTERNAL (another pthread_create
 * failure). On failure no thread runs.
 * **Threads:** any. **Allocates:** yes.
 */
HK_API hk_code hk_coordinator_start_thread(hk_coordinator *c, const char *name, hk_thread_fn fn, void *user,
                                           hk_status *status);

/**
 * Request a clean stop, then wait up to `grace_secs` for every registered
 * thread to report completion, returning as soon as all have, and
 * join the started threads that finished. Threads still running are logged
 * at WARNING "Coordinator stopped with threads still running: <names>" and
 * do not make the call fail; started ones stay joinable for
 * hk_coordinator_free().
 * @param grace_secs  finite, >= 0.
 * **Errors:** INVALID_ARGUMENT for a NULL c or a bad grace_secs.
 * **Threads:** any, one thread at a time. **Allocates:** no.
 */
HK_API hk_code hk_coordinator_join(hk_coordinator *c, double grace_secs, hk_status *status);

/* ---- why training stopped -------------------------------------------- */

/** Why a session or a host loop stopped (hk_session_stop_reason(),
 *  hk_loop_stop_reason()). The first cause wins: a run that reached its
 *  last step and was then interrupted by a signal says HK_STOP_LAST_STEP. */
typedef enum hk_stop_reason {
  HK_STOP_NONE = 0,       /**< not stopped: still running, or not started */
  HK_STOP_LAST_STEP,      /**< StopAtStepHook: the last step was reached */
  HK_STOP_HOOK,           /**< a hook asked; the detail is the hook's name */
  HK_STOP_SIGNAL,         /**< a stop signal of the signal helper; the detail names it ("SIGUSR1") */
  HK_STOP_EARLY_STOPPING, /**< EarlyStoppingHook: the monitored value stopped improving */
  HK_STOP_NON_FINITE,     /**< a value went NaN or infinite (NanTensorHook, the host loop's nan_guard) */
  HK_STOP_TIME_LIMIT,     /**< a wall-clock limit (TimeLimitHook, hooked/time_limit.h) */
  HK_STOP_ERROR,          /**< an error: code and detail are its status */
  HK_STOP_END_OF_INPUT,   /**< a run or step returned OUT_OF_RANGE: the data is exhausted */
  HK_STOP_REQUESTED,      /**< the program asked (hk_loop_request_stop(), hk_coordinator_request_stop()) */
  HK_STOP_CLOSED          /**< the program closed the session or finished the loop without any stop */
} hk_stop_reason;

/** What hk_session_stop_reason() and hk_loop_stop_reason() report. */
typedef struct hk_stop_info {
  hk_stop_reason reason;
  /** HK_OK for a clean stop; the error's code for HK_STOP_ERROR (and for a
   *  HK_STOP_NON_FINITE that failed the run, such as the NaN guard's
   *  INVALID_ARGUMENT); HK_OUT_OF_RANGE for HK_STOP_END_OF_INPUT. */
  hk_code code;
  int signal; /**< the signal's number for HK_STOP_SIGNAL, else 0 */
  /** A sentence for people: which hook, which signal, the error's message,
   *  the step and the limit reached. "" for HK_STOP_NONE. */
  char detail[HK_STATUS_MESSAGE_MAX];
} hk_stop_info;

/**
 * @return a short lowercase name of the reason ("last step", "hook",
 *         "signal", "early stopping", "non-finite value", "time limit",
 *         "error", "end of input", "requested", "closed", "none"); "unknown"
 *         for a value outside the enum. Static storage.
 * **Threads:** any. **Allocates:** no.
 */
HK_API const char *hk_stop_reason_name(hk_stop_reason reason);

/* ---- signal helper ---------------------------------------------- */

/** Signals the helper can turn into a clean stop (a set: OR them). */
typedef enum hk_signal_set {
  HK_SIGNAL_INT = 1u << 0,  /**< SIGINT: Ctrl-C */
  HK_SIGNAL_TERM = 1u << 1, /**< SIGTERM: kill, a scheduler's end of job */
  HK_SIGNAL_HUP = 1u << 2,  /**< SIGHUP: the terminal was closed */
  HK_SIGNAL_USR1 = 1u << 3, /**< SIGUSR1: Slurm's warning before the time limit (sbatch --signal=USR1@120) */
  HK_SIGNAL_USR2 = 1u << 4  /**< SIGUSR2 */
} hk_signal_set;
/** The set hk_signal_install() handles. */
#define HK_SIGNAL_DEFAULT_SET (HK_SIGNAL_INT | HK_SIGNAL_TERM)

/**
 * Install process-wide handlers for SIGINT and SIGTERM that only set an
 * async-signal-safe flag (the library's one piece of global state: a
 * signal is process-wide): hk_signal_install_set(HK_SIGNAL_DEFAULT_SET).
 * Every session, session manager and coordinator treats the flag as a
 * clean stop: should_stop() becomes true, waits end with CANCELLED within
 * one poll interval, close(OK) or close(CANCELLED) is clean. A second
 * delivery of the same signal restores the previous disposition and
 * re-raises it. The flag is cleared at install.
 * **Errors:** FAILED_PRECONDITION if already installed; UNIMPLEMENTED
 * without POSIX signals; INTERNAL when sigaction fails (nothing installed).
 * **Threads:** any (install and uninstall are serialized).
 * **Allocates:** no.
 */
HK_API hk_code hk_signal_install(hk_status *status);
/**
 * As hk_signal_install(), for the signals of `signals` (an OR of
 * hk_signal_set): each of them stops cleanly, the first one received is
 * what hk_signal_fired() returns and what the stop reason names. SIGHUP
 * (the terminal closed) and SIGUSR1 (a batch system's warning) otherwise
 * end the process with no final checkpoint.
 * **Errors:** INVALID_ARGUMENT naming the bits for an empty set or bits
 * outside hk_signal_set; as hk_signal_install() otherwise (UNIMPLEMENTED
 * when a signal of the set does not exist on the platform).
 * **Threads:** any (install and uninstall are serialized).
 * **Allocates:** no.
 */
HK_API hk_code hk_signal_install_set(unsigned signals, hk_status *status);
/**
 * @return the name of a signal ("SIGINT", "SIGTERM", "SIGHUP", "SIGUSR1",
 *         "SIGUSR2"), "signal" for any other number. Static storage.
 * **Threads:** any; async-signal-safe. **Allocates:** no.
 */
HK_API const char *hk_signal_name(int signal);
/**
 * Restore the previous dispositions and clear the flag.
 * **Errors:** FAILED_PRECONDITION if not installed; UNIMPLEMENTED without
 * POSIX signals.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_signal_uninstall(hk_status *status);
/** @return the first signal of the installed set received since install,
 *  or 0. **Threads:** any; async-signal-safe. **Allocates:** no. */
HK_API int hk_signal_fired(void);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_COORDINATOR_H */
