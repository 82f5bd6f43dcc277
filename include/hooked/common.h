/*
 * hooked — common definitions: export macro, version, status codes, the
 * caller-owned status object, the environment (allocator, log sink, clocks).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_COMMON_H
#define HOOKED_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>
#include <math.h>

/* ---- export macro ------------------------------------------------------ */
#if defined(HK_BUILDING_SHARED) && defined(HK_SHARED)
#error "define at most one of HK_BUILDING_SHARED and HK_SHARED"
#endif
#if defined(_WIN32)
#  if defined(HK_BUILDING_SHARED)
#    define HK_API __declspec(dllexport)
#  elif defined(HK_SHARED)
#    define HK_API __declspec(dllimport)
#  else
#    define HK_API
#  endif
#elif defined(__GNUC__) || defined(__clang__)
#  define HK_API __attribute__((visibility("default")))
#else
#  define HK_API
#endif

#if defined(__GNUC__) || defined(__clang__)
#  define HK_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#  define HK_PRINTF(f, a)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- version ----------------------------------------------------------- */
#define HK_VERSION_MAJOR 0
#define HK_VERSION_MINOR 1
#define HK_VERSION_PATCH 0
/** MAJOR*10000 + MINOR*100 + PATCH; compare with hk_version_number(). */
#define HK_VERSION_NUMBER (HK_VERSION_MAJOR * 10000 + HK_VERSION_MINOR * 100 + HK_VERSION_PATCH)
#define HK_VERSION_STRING "0.1.0"

/** @return the library's version string ("0.1.0"). Static storage. Threads: any. */
HK_API const char *hk_version(void);
/** @return HK_VERSION_NUMBER of the library actually linked. Threads: any. */
HK_API int hk_version_number(void);

/* ---- status codes (contract H1: TensorFlow's numbering) ----------------- */
/* X(name, value). New codes may be added; callers must treat any code they do
 * not know as an error. Test with `!= HK_OK`, never `< 0`. */
#define HK_CODE_TABLE(X)            \
  X(OK, 0)                          \
  X(CANCELLED, 1)                   \
  X(UNKNOWN, 2)                     \
  X(INVALID_ARGUMENT, 3)            \
  X(DEADLINE_EXCEEDED, 4)           \
  X(NOT_FOUND, 5)                   \
  X(ALREADY_EXISTS, 6)              \
  X(PERMISSION_DENIED, 7)           \
  X(RESOURCE_EXHAUSTED, 8)          \
  X(FAILED_PRECONDITION, 9)         \
  X(ABORTED, 10)                    \
  X(OUT_OF_RANGE, 11)               \
  X(UNIMPLEMENTED, 12)              \
  X(INTERNAL, 13)                   \
  X(UNAVAILABLE, 14)                \
  X(DATA_LOSS, 15)

typedef enum hk_code {
#define HK__CODE_ENUM(name, value) HK_##name = value,
  HK_CODE_TABLE(HK__CODE_ENUM)
#undef HK__CODE_ENUM
  HK__CODE_FORCE_INT = 0x7fffffff
} hk_code;

/** @return "OK", "INVALID_ARGUMENT", ... or "UNKNOWN_CODE" for a number the
 *  library does not know. Static storage. Threads: any. Allocates: no. */
HK_API const char *hk_code_name(hk_code code);

/** @return nonzero for ABORTED and UNAVAILABLE, the codes that make a
 *  monitored session recover (contract C38). Threads: any. */
HK_API int hk_code_is_preemption(hk_code code);

/* ---- status object ----------------------------------------------------- */
#define HK_STATUS_MESSAGE_MAX 512

/**
 * Caller-owned status. Every fallible function returns an hk_code and takes a
 * trailing `hk_status *status` that may be NULL; when it is not NULL it
 * receives the same code and, for a non-OK code, a non-empty message that
 * names the offending argument, option, tensor, hook or file (H1). On
 * success a function may leave the status untouched: test the returned code,
 * and read the status only after a failure.
 * Reporting never allocates: the message lives inline (truncated to fit).
 * Initialize with HK_STATUS_INIT or hk_status_clear().
 */
typedef struct hk_status {
  hk_code code;
  char message[HK_STATUS_MESSAGE_MAX];
} hk_status;

#define HK_STATUS_INIT { HK_OK, { 0 } }

/** Set `st` to OK with an empty message. NULL is a no-op. Threads: the owner's. */
HK_API void hk_status_clear(hk_status *st);

/**
 * Set `st` (may be NULL) to `code` with a printf-formatted message, and
 * return `code`, so implementers can write `return hk_status_set(st, ...)`.
 * Meant for hook, executor and callback implementers. Allocates: no.
 */
HK_API hk_code hk_status_set(hk_status *st, hk_code code, const char *fmt, ...) HK_PRINTF(3, 4);
/** va_list variant of hk_status_set(). */
HK_API hk_code hk_status_setv(hk_status *st, hk_code code, const char *fmt, va_list ap);

/* ---- allocator (house style 11) ---------------------------------------- */
/**
 * A per-object allocator. All three functions NULL means the C library's
 * malloc/realloc/free. Otherwise all three must be set. The library copies
 * the struct. The functions must be thread-safe: background threads (a saver,
 * a coordinator-registered thread started by a hook) may allocate.
 * `alloc` and `realloc` return NULL on failure; the library then reports
 * RESOURCE_EXHAUSTED. `free` accepts NULL.
 */
typedef struct hk_allocator {
  void *(*alloc)(void *user, size_t size);
  void *(*realloc)(void *user, void *ptr, size_t size);
  void (*free)(void *user, void *ptr);
  void *user;
} hk_allocator;

/* ---- log sink (house style 12, contract H8) ---------------------------- */
typedef enum hk_log_level {
  HK_LOG_DEBUG = 0,
  HK_LOG_INFO = 1,
  HK_LOG_WARNING = 2,
  HK_LOG_ERROR = 3
} hk_log_level;

/**
 * Log sink. `msg` is valid only during the call and has no trailing newline.
 * May be called from background threads the library starts (a checkpoint
 * writer), so a sink shared between threads must be thread-safe.
 */
typedef void (*hk_log_fn)(void *user, hk_log_level level, const char *msg);

/* ---- clocks (contract H5) ---------------------------------------------- */
/**
 * Clocks and sleep. All NULL means the system: CLOCK_MONOTONIC, the wall
 * clock (seconds since the epoch) and nanosleep. A test installs a mock whose
 * `sleep` advances its `monotonic` instantly. When `sleep` is set, waits that
 * can be interrupted (coordinator waits, worker waits) sleep through it in
 * slices, so a mock sleep also makes them instant.
 * Any of the three may be NULL on its own: it then falls back to the system.
 */
typedef struct hk_clock {
  double (*monotonic)(void *user);
  double (*wall)(void *user);
  void (*sleep)(void *user, double secs);
  void *user;
} hk_clock;

/* ---- environment ------------------------------------------------------- */
#define HK_ENV_VERSION 1

/**
 * What the host program lends an object: allocator, log sink, clocks.
 * Options structs carry `const hk_env *env`; NULL means all defaults
 * (stdlib allocator, stderr sink at INFO and above, system clocks). The
 * library copies the struct at creation time; the `user` pointers are
 * borrowed and must outlive the object.
 */
typedef struct hk_env {
  uint32_t version;           /**< HK_ENV_VERSION */
  hk_allocator allocator;
  hk_log_fn log;              /**< NULL: default stderr sink */
  void *log_user;
  hk_log_level log_level;     /**< messages below this level are dropped (default INFO) */
  hk_clock clock;
} hk_env;

#define HK_ENV_INIT { HK_ENV_VERSION, { NULL, NULL, NULL, NULL }, NULL, NULL, HK_LOG_INFO, { NULL, NULL, NULL, NULL } }

/** Initialize `env` to defaults. @return INVALID_ARGUMENT if env is NULL or
 *  version is not HK_ENV_VERSION. */
HK_API hk_code hk_env_init(hk_env *env, uint32_t version);

/**
 * The default sink: writes "YYYY-MM-DD HH:MM:SS.uuuuuu: I hooked] msg\n"
 * (TensorFlow's level letters I/W/E, D for debug) to stderr. Exposed so a
 * custom sink can forward to it. Threads: any.
 */
HK_API void hk_log_stderr(void *user, hk_log_level level, const char *msg);

/* ---- environment helpers for implementers (hooks, executors) ---------- */
/* Each takes the env an object was created with; NULL means defaults. */

/** Allocate through env's allocator. @return NULL on failure or size 0. Threads: any. */
HK_API void *hk_env_alloc(const hk_env *env, size_t size);
/** Zero-filled allocation; checks n*size for overflow. @return NULL on failure. */
HK_API void *hk_env_calloc(const hk_env *env, size_t n, size_t size);
/** Reallocate through env's allocator. On failure returns NULL and `ptr` stays valid. */
HK_API void *hk_env_realloc(const hk_env *env, void *ptr, size_t size);
/** Free through env's allocator. NULL is a no-op. */
HK_API void hk_env_free(const hk_env *env, void *ptr);
/** Copy a string through env's allocator. @return NULL on failure or NULL s. */
HK_API char *hk_env_strdup(const hk_env *env, const char *s);
/** Format and send a message to env's sink, if level >= env->log_level.
 *  Messages longer than 1023 bytes are truncated. Allocates: no. Threads: any. */
HK_API void hk_env_log(const hk_env *env, hk_log_level level, const char *fmt, ...) HK_PRINTF(3, 4);
/** Monotonic seconds from env's clock. */
HK_API double hk_env_monotonic(const hk_env *env);
/** Wall-clock seconds since the epoch from env's clock. */
HK_API double hk_env_wall(const hk_env *env);
/** Sleep `secs` (<= 0 returns at once) through env's clock. */
HK_API void hk_env_sleep(const hk_env *env, double secs);
/**
 * Validate an env given in options (NULL is valid). INVALID_ARGUMENT, naming
 * `what`, for a wrong version or an allocator with some but not all of
 * alloc/realloc/free set, or a log_level outside DEBUG..ERROR.
 */
HK_API hk_code hk_env_check(const hk_env *env, const char *what, hk_status *status);

/* Unset sentinels for optional options (contract §0 "unset"): durations are
 * doubles whose unset value is -infinity; counts and steps are int64 whose
 * unset value is INT64_MIN. Every other value is "given". */
#define HK_UNSET_SECS (-HUGE_VAL)
#define HK_UNSET_STEPS INT64_MIN
/** @return nonzero if `secs` is the HK_UNSET_SECS sentinel. */
HK_API int hk_secs_is_unset(double secs);

/**
 * Opaque handle to a tensor, op or variable of an executor, returned when a
 * name is resolved. 0 is never a valid handle and means "unset".
 */
typedef uint64_t hk_handle;
#define HK_NO_HANDLE ((hk_handle)0)

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_COMMON_H */
