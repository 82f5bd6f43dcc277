/*
 * hooked — common definitions: export macro, version, status codes, the
 * caller-owned status object, the environment (allocator, log sink, clocks).
 *
 * Reading the contract. Comments on public declarations are the API
 * contract. Each function states, after its summary and parameters:
 *   Ownership: borrowed (valid until the stated point), owned (the caller
 *              frees it with the named hk_*_free), consumed (taken even on
 *              failure) or copied; and what output slots hold on failure.
 *   Threads:   which thread may call it. "The owner's" means one thread at a
 *              time per object, the one that uses it.
 *   Errors:    the codes a caller can act on. Any other code is an error
 *              too, see the message. New codes may appear in later releases.
 *   Allocates: whether the call may allocate through the env's allocator.
 * Every sentence here is tested; docs/contract.md, the behaviour contract,
 * says why each behaviour is what it is.
 *
 * Modules: version, code, status, env, log, struct, secs (besides the types
 * declared here, each of which is a module too: hk_status_..., hk_env_...).
 *
 * Status rule. A function that returns hk_code writes the same code into
 * its `hk_status *status` argument (when not NULL) on failure, together with
 * a message. On success it MAY leave the status untouched: test the returned
 * code, never a status you did not clear, and read the message only after a
 * failure.
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
#if defined(HK_BUILDING_SHARED)
#define HK_API __declspec(dllexport)
#elif defined(HK_SHARED)
#define HK_API __declspec(dllimport)
#else
#define HK_API
#endif
#elif defined(__GNUC__) || defined(__clang__)
#define HK_API __attribute__((visibility("default")))
#else
#define HK_API
#endif

#if defined(__GNUC__) || defined(__clang__)
#define HK_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define HK_PRINTF(f, a)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- version ----------------------------------------------------------- */
#define HOOKED_VERSION_MAJOR 0
#define HOOKED_VERSION_MINOR 2
#define HOOKED_VERSION_PATCH 0
/** MAJOR*10000 + MINOR*100 + PATCH; compare with hk_version_number(). */
#define HOOKED_VERSION_NUMBER (HOOKED_VERSION_MAJOR * 10000 + HOOKED_VERSION_MINOR * 100 + HOOKED_VERSION_PATCH)
#define HOOKED_VERSION_STRING "0.2.0"

/**
 * The version of the library actually linked.
 * @return its version string, e.g. "0.2.0" (HOOKED_VERSION_STRING at build time).
 * **Ownership:** static storage; never free it.
 * **Threads:** any. **Errors:** none. **Allocates:** no.
 */
HK_API const char *hk_version(void);
/**
 * The version number of the library actually linked; compare it with
 * HOOKED_VERSION_NUMBER to check that header and library match.
 * @return MAJOR*10000 + MINOR*100 + PATCH.
 * **Threads:** any. **Errors:** none. **Allocates:** no.
 */
HK_API int hk_version_number(void);

/* ---- status codes (TensorFlow's numbering) ----------------- */
/* X(name, value). New codes may be added; callers must treat any code they do
 * not know as an error. Test with `!= HK_OK`, never `< 0`. */
#define HK_CODE_TABLE(X)    \
  X(OK, 0)                  \
  X(CANCELLED, 1)           \
  X(UNKNOWN, 2)             \
  X(INVALID_ARGUMENT, 3)    \
  X(DEADLINE_EXCEEDED, 4)   \
  X(NOT_FOUND, 5)           \
  X(ALREADY_EXISTS, 6)      \
  X(PERMISSION_DENIED, 7)   \
  X(RESOURCE_EXHAUSTED, 8)  \
  X(FAILED_PRECONDITION, 9) \
  X(ABORTED, 10)            \
  X(OUT_OF_RANGE, 11)       \
  X(UNIMPLEMENTED, 12)      \
  X(INTERNAL, 13)           \
  X(UNAVAILABLE, 14)        \
  X(DATA_LOSS, 15)

typedef enum hk_code {
#define HK__CODE_ENUM(name, value) HK_##name = value,
  HK_CODE_TABLE(HK__CODE_ENUM)
#undef HK__CODE_ENUM
      HK__CODE_FORCE_INT = 0x7fffffff
} hk_code;

/**
 * Name of a status code.
 * @return "OK", "INVALID_ARGUMENT", ... (the enum name without HK_), or
 *         "UNKNOWN_CODE" for a number the library does not know.
 * **Ownership:** static storage.
 * **Threads:** any. **Errors:** none. **Allocates:** no.
 */
HK_API const char *hk_code_name(hk_code code);

/**
 * Whether `code` is a preemption error.
 * @return nonzero for ABORTED and UNAVAILABLE, the codes that make a
 *         monitored session recover; 0 for every other value.
 * **Threads:** any. **Errors:** none. **Allocates:** no.
 */
HK_API int hk_code_is_preemption(hk_code code);

/* ---- status object ----------------------------------------------------- */
#define HK_STATUS_MESSAGE_MAX 512

/**
 * Caller-owned status. Every fallible function returns an hk_code and takes a
 * trailing `hk_status *status` that may be NULL; when it is not NULL and the
 * call fails it receives the same code and a non-empty message that names
 * the offending argument, option, tensor, hook or file.
 * On success a function may leave the status untouched (some clear it, some
 * do not): test the returned code, and read the status only after a failure.
 * Reporting never allocates: the message lives inline and is truncated to
 * HK_STATUS_MESSAGE_MAX - 1 bytes.
 * Initialize with HK_STATUS_INIT or hk_status_clear(). A status is plain
 * data: one thread at a time may use it.
 */
typedef struct hk_status {
  hk_code code;
  char message[HK_STATUS_MESSAGE_MAX];
} hk_status;

#define HK_STATUS_INIT \
  {                    \
    HK_OK, { 0 }       \
  }

/**
 * Reset a status to OK with an empty message.
 * @param st  may be NULL (no-op).
 * **Threads:** the status owner's. **Errors:** none. **Allocates:** no.
 */
HK_API void hk_status_clear(hk_status *st);

/**
 * Set a status and return its code, so implementers can write
 * `return hk_status_set(st, HK_NOT_FOUND, "no tensor '%s'", name);`.
 * Meant for hook, executor and callback implementers.
 * @param st    may be NULL: nothing is written and `code` is still returned.
 * @param code  stored as given (HK_OK included).
 * @param fmt   printf format for the message; may be NULL. The message is
 *              truncated to fit. A non-OK code with an empty message gets
 *              hk_code_name(code) as its message.
 * @return `code`.
 * **Ownership:** the formatted text is copied into `st`.
 * **Threads:** the status owner's. **Errors:** none. **Allocates:** no.
 */
HK_API hk_code hk_status_set(hk_status *st, hk_code code, const char *fmt, ...) HK_PRINTF(3, 4);
/**
 * va_list variant of hk_status_set(); same contract. `ap` is consumed as
 * by vsnprintf.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_status_setv(hk_status *st, hk_code code, const char *fmt, va_list ap);

/* ---- allocator ---------------------------------------- */
/**
 * A per-object allocator. All three functions NULL means the C library's
 * malloc/realloc/free. Otherwise all three must be set (hk_env_check()). The
 * library copies the struct; `user` is borrowed and must outlive every
 * object created with it. The functions must be thread-safe: background
 * threads (a saver, a coordinator thread, the last registered thread to
 * leave a coordinator) may allocate or free. The library never calls them
 * with size 0. `alloc` and `realloc` return NULL on failure; the library then
 * reports RESOURCE_EXHAUSTED. `free` may be passed NULL.
 * Memory the library hands out is released by the matching hk_*_free, never
 * by the host's own free ("do not mix allocators").
 */
typedef struct hk_allocator {
  void *(*alloc)(void *user, size_t size);
  void *(*realloc)(void *user, void *ptr, size_t size);
  void (*free)(void *user, void *ptr);
  void *user;
} hk_allocator;

/* ---- log sink ---------------------------- */
typedef enum hk_log_level { HK_LOG_DEBUG = 0, HK_LOG_INFO = 1, HK_LOG_WARNING = 2, HK_LOG_ERROR = 3 } hk_log_level;

/**
 * Log sink. `msg` is borrowed, valid only during the call, and has no
 * trailing newline. Called on whatever thread logs: the training thread, a
 * coordinator's caller, or a background thread the library starts, so
 * a sink shared between threads must be thread-safe. A sink must not call
 * back into the object that is logging.
 */
typedef void (*hk_log_fn)(void *user, hk_log_level level, const char *msg);

/* ---- clocks ---------------------------------------------- */
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

struct hk_fs_vtable; /* hooked/sys/fs.h */

/**
 * What the host program lends an object: allocator, log sink, clocks and
 * the file system.
 * Options structs carry `const hk_env *env`; NULL means all defaults
 * (stdlib allocator, stderr sink at INFO and above, system clocks) unless
 * the options say it falls back to another object's env. The library copies
 * the struct at creation time; the `user` and `log_user` pointers are
 * borrowed and must outlive the object (and everything created from it).
 */
typedef struct hk_env {
  uint32_t version; /**< HK_ENV_VERSION */
  hk_allocator allocator;
  hk_log_fn log; /**< NULL: default stderr sink */
  void *log_user;
  hk_log_level log_level; /**< messages below this level are dropped (default INFO) */
  hk_clock clock;
  /** File system for every file the library reads or writes; NULL:
   *  POSIX (hk_fs_posix()). Borrowed, like `user`; all slots required and
   *  thread-safe, see hooked/sys/fs.h. */
  const struct hk_fs_vtable *fs;
  void *fs_user; /**< passed to every fs slot; borrowed */
} hk_env;

#define HK_ENV_INIT \
  { HK_ENV_VERSION, {NULL, NULL, NULL, NULL}, NULL, NULL, HK_LOG_INFO, {NULL, NULL, NULL, NULL}, NULL, NULL }

/**
 * Initialize `env` to the defaults of HK_ENV_INIT.
 * @param version  HK_ENV_VERSION, the version the caller was compiled with.
 * @return HK_OK, or INVALID_ARGUMENT (no message: there is no status) when
 *         env is NULL or version is 0 or above HK_ENV_VERSION; env is then
 *         untouched.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_env_init(hk_env *env, uint32_t version);

/**
 * The default sink: writes "YYYY-MM-DD HH:MM:SS.uuuuuu: I hooked] msg\n"
 * (UTC; TensorFlow's level letters I/W/E, D for debug) to stderr with one
 * fprintf. Exposed so a custom sink can forward to it. `user` is ignored;
 * `msg` may be NULL.
 * **Threads:** any. **Errors:** none. **Allocates:** no (stdio may buffer).
 */
HK_API void hk_log_stderr(void *user, hk_log_level level, const char *msg);

/**
 * Copy an env into `dst`, or the defaults of HK_ENV_INIT when `src` is
 * NULL. Objects that keep an env use this.
 * @param dst  required. @param src  borrowed; NULL: the defaults.
 * **Threads:** any. **Errors:** none. **Allocates:** no.
 */
HK_API void hk_env_copy(hk_env *dst, const hk_env *src);

/* ---- environment helpers for implementers (hooks, executors) ---------- */
/* Each takes the env an object was created with (borrowed for the call);
 * NULL means defaults. Each is safe on any thread as far as the env's own
 * functions are (the allocator and sink must be thread-safe anyway). Memory
 * from one env must be freed through an env with the same allocator. */

/**
 * Allocate `size` bytes through env's allocator.
 * @return the block, owned by the caller (hk_env_free() with the same env);
 *         NULL on failure or when size is 0 (the allocator is not called).
 * **Threads:** any. **Allocates:** yes.
 */
HK_API void *hk_env_alloc(const hk_env *env, size_t size);
/**
 * Zero-filled allocation of n * size bytes, checked for overflow.
 * @return owned block; NULL on failure, on overflow, or when n or size is 0.
 * **Threads:** any. **Allocates:** yes.
 */
HK_API void *hk_env_calloc(const hk_env *env, size_t n, size_t size);
/**
 * Reallocate through env's allocator (`ptr` NULL acts as an allocation).
 * @return the new block; NULL on failure, and then `ptr` stays valid and
 *         owned by the caller. Size 0 returns NULL WITHOUT freeing `ptr`.
 * **Threads:** any. **Allocates:** yes.
 */
HK_API void *hk_env_realloc(const hk_env *env, void *ptr, size_t size);
/**
 * Free a block obtained from the same env's allocator.
 * @param ptr  consumed; NULL is a no-op.
 * **Threads:** any. **Allocates:** no.
 */
HK_API void hk_env_free(const hk_env *env, void *ptr);
/**
 * Copy a NUL-terminated string through env's allocator.
 * @return owned copy (hk_env_free()); NULL on failure or when s is NULL.
 * **Threads:** any. **Allocates:** yes.
 */
HK_API char *hk_env_strdup(const hk_env *env, const char *s);
/**
 * Format a message and send it to env's sink (the stderr sink when
 * env->log is NULL) if level >= env->log_level. The text is formatted into a
 * 1024-byte stack buffer, so longer messages are truncated to 1023 bytes.
 * **Threads:** any (the sink is called on the calling thread).
 * **Errors:** none. **Allocates:** no.
 */
HK_API void hk_env_log(const hk_env *env, hk_log_level level, const char *fmt, ...) HK_PRINTF(3, 4);
/**
 * @return monotonic seconds from env's clock (CLOCK_MONOTONIC when
 *         clock.monotonic is NULL). Only differences are meaningful.
 * **Threads:** any. **Allocates:** no.
 */
HK_API double hk_env_monotonic(const hk_env *env);
/**
 * @return wall-clock seconds since the Unix epoch from env's clock
 *         (CLOCK_REALTIME when clock.wall is NULL).
 * **Threads:** any. **Allocates:** no.
 */
HK_API double hk_env_wall(const hk_env *env);
/**
 * Sleep `secs` through env's clock.sleep, or nanosleep (restarted after a
 * signal, capped at 1e9 s) when it is NULL. `secs` <= 0 or NaN returns at
 * once without calling the clock.
 * **Threads:** any. **Allocates:** no.
 */
HK_API void hk_env_sleep(const hk_env *env, double secs);
/**
 * Validate an env given in options, as every constructor does.
 * @param env   borrowed; NULL is valid (defaults).
 * @param what  prefix of the message, e.g. "opts->env"; NULL means "env".
 * @return HK_OK or INVALID_ARGUMENT.
 * **Errors:** INVALID_ARGUMENT, naming `what`, for a version that is 0 or
 * newer than HK_ENV_VERSION, an allocator with some but not all of
 * alloc/realloc/free set, a log_level outside DEBUG..ERROR, or
 * an fs vtable with a bad version or a NULL slot.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_env_check(const hk_env *env, const char *what, hk_status *status);

/* ---- versioned structs ------------------------------------------------- */
/* Every options struct (and hk_env, hk_variable_def, hk_op_def, the run
 * options and metadata) starts with `uint32_t version`, which its HK_X_INIT
 * macro or its hk_x_init() sets to the version the program was compiled
 * with. The library reads every field of a struct whose version it knows,
 * and refuses version 0 (a struct nobody initialized) and a version above
 * its own (a program built against a newer header). Implementers who give
 * their own hooks or executors options structs follow the same rule with
 * these two functions. */

/**
 * Fill a versioned struct from its initial value: the body of every
 * hk_x_init(ptr, version).
 * @param s        the struct to fill; `size` bytes.
 * @param init     its initial value (HK_X_INIT), whose first member is the
 *                 current version; borrowed for the call.
 * @param version  the version the caller was compiled with.
 * @return HK_OK; INVALID_ARGUMENT, writing nothing, for a NULL `s` or
 *         `init`, or a version that is 0 or above the initial value's
 *         (there is no status to name it in).
 * **Ownership:** `init` is copied into `s`.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_struct_init(void *s, size_t size, const void *init, uint32_t version);

/**
 * Check the version of a versioned struct a caller passed.
 * @param s        the struct, borrowed for the call; NULL passes (whether
 *                 NULL is allowed is the caller's rule).
 * @param current  the version this code was compiled with (HK_X_VERSION).
 * @param type     the struct's type name, for the message.
 * @param what     how the caller names it, for the message ("hk_loop_new:
 *                 opts").
 * @return HK_OK for a version from 1 to `current`.
 * **Errors:** INVALID_ARGUMENT for version 0 or above `current`: "<what>->
 * version: version N of <type> is not one this library knows (1 to
 * <current>); initialize the struct with its _INIT macro or _init()".
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_struct_check_version(const void *s, uint32_t current, const char *type, const char *what,
                                       hk_status *status);

/* Unset sentinels for optional options (contract §0 "unset"): durations are
 * doubles whose unset value is -infinity; counts and steps are int64 whose
 * unset value is INT64_MIN. Every other value is "given". */
#define HK_UNSET_SECS (-HUGE_VAL)
#define HK_UNSET_STEPS INT64_MIN
/**
 * @return nonzero if `secs` is the HK_UNSET_SECS sentinel (negative
 *         infinity); 0 for every other value, NaN included.
 * **Threads:** any. **Allocates:** no.
 */
HK_API int hk_secs_is_unset(double secs);

/**
 * Which way a monitored value improves: the EarlyStoppingHook
 * (hooked/early_stopping.h) and best-k checkpoint retention.
 */
typedef enum hk_monitor_mode {
  HK_MONITOR_MIN = 0, /**< lower is better (a loss); the default */
  HK_MONITOR_MAX = 1  /**< higher is better (an accuracy) */
} hk_monitor_mode;

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
