/*
 * fake_executor — a scripted graph executor for tests.
 *
 * It implements hk_executor_vtable from scratch (it shares nothing with the
 * embedded graph of hooked/graph.h), which is the proof that the executor
 * interface is pluggable. A test declares a fixed set of named entities:
 *
 *   - plain tensors ("x:0", dtype, shape) whose value the test sets; fetching a
 *     fed tensor returns the fed value (as TF does);
 *   - variables (value handle "name:0"), global or local, with an initial value
 *     that init ops install; each raw session has its own values and its own
 *     "initialized" flags, so C69–C72 can be exercised. Fetching or mutating an
 *     uninitialized variable fails with FAILED_PRECONDITION "Attempting to use
 *     uninitialized value <name>" (H30). A variable flagged HK_VAR_EXTERNAL
 *     stands for host-owned memory: every raw session starts with it
 *     initialized to its initial value;
 *   - ops (run as targets) that may add a delta to an integer variable (the
 *     train op incrementing "global_step"), initialize every global and/or
 *     local variable, or fail;
 *   - report tensors (1-D HK_DTYPE_STRING): the names of the uninitialized
 *     variables (all, or global only) of the raw session, or, for the first K
 *     evaluations, a list of names the test scripts.
 *
 * Semantics of one run (documented so tests can rely on them): feeds are
 * recorded and override fetched values of the fed tensors; every fetch is
 * evaluated BEFORE any target runs (a fetched variable therefore shows the
 * value it had when the run started, like H29); then each distinct target op
 * runs once, in the order given. Results stay valid until the next run or
 * close of that raw session. A run never allocates.
 *
 * Every vtable slot counts its calls (fake_executor_calls). The last run's
 * arguments are copied for inspection (fake_executor_last_run). Failures are
 * scripted per slot with fake_executor_fail(): "fail the Nth next call, or the
 * next K calls, or every call from the Nth next one, with code C and message
 * M". A run callback lets a test act at the moment the executor runs.
 *
 * The role registry (role_get/role_add) and default_op are complete enough
 * for the Scaffold and the session manager: default_op builds one op or
 * report per kind (C62) and role_add after finalize fails with
 * FAILED_PRECONDITION "Graph is finalized and cannot be modified." (C3).
 *
 * Memory: the fake allocates with the C library (never through the env), so
 * a counting allocator in the env sees only hooked's own allocations.
 * Threads: one thread at a time, except fake_executor_calls() and the
 * counters, which are plain ints read after joins.
 */
#ifndef HOOKED_TEST_FAKE_EXECUTOR_H
#define HOOKED_TEST_FAKE_EXECUTOR_H

#include <hooked/hooked.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fake_executor fake_executor;

/** Vtable slots, for call counters and failure scripting. */
typedef enum fake_slot {
  FAKE_RESOLVE_TENSOR = 0,
  FAKE_RESOLVE_OP,
  FAKE_HANDLE_NAME,
  FAKE_FINALIZE,
  FAKE_IS_FINALIZED,
  FAKE_OPEN,
  FAKE_CLOSE,
  FAKE_RUN,
  FAKE_VARIABLE_COUNT,
  FAKE_VARIABLE_INFO,
  FAKE_VARIABLE_READ,
  FAKE_VARIABLE_ASSIGN,
  FAKE_ROLE_GET,
  FAKE_ROLE_ADD,
  FAKE_DEFAULT_OP,
  FAKE_DESCRIBE,
  FAKE_CONTROL,
  FAKE_DESTROY,
  FAKE_VARIABLE_STORAGE, /* version 2; only with fake_executor_new_with_storage() */
  FAKE__NSLOTS
} fake_slot;

/** Count argument of fake_executor_fail(): fail every call from the Nth on. */
#define FAKE_FOREVER (-1)

/** Capacities of the recorded last run and of scripted lists. */
#define FAKE_MAX_RECORD 32
#define FAKE_MAX_NAMES 16
/** Largest value (bytes) a plain tensor or variable may hold. */
#define FAKE_MAX_VALUE_BYTES 256

/** Initialization flags of fake_executor_op_initializes(). */
#define FAKE_INIT_GLOBAL 1u
#define FAKE_INIT_LOCAL 2u

/** Which variables a report tensor lists when not scripted. */
typedef enum fake_report_kind {
  FAKE_REPORT_ALL = 0,   /**< every uninitialized variable (default ready_op) */
  FAKE_REPORT_GLOBAL = 1 /**< uninitialized global variables (ready_for_local_init_op) */
} fake_report_kind;

/** A copy of what the last run received (arrays truncated at FAKE_MAX_RECORD). */
typedef struct fake_run_record {
  size_t nfeeds, nfetches, ntargets;
  hk_feed feeds[FAKE_MAX_RECORD];    /**< value.data points at the caller's memory: stale after the run */
  int64_t feed_i64[FAKE_MAX_RECORD]; /**< first 8 bytes of each scalar feed, as int64 (0 if smaller) */
  hk_handle fetches[FAKE_MAX_RECORD];
  hk_handle targets[FAKE_MAX_RECORD];
  const hk_feed *feeds_ptr; /**< the array pointers as received */
  const hk_handle *fetches_ptr;
  const hk_handle *targets_ptr;
  int had_options; /**< options pointer was non-NULL */
  const hk_run_options *options_ptr;
  hk_run_options options;    /**< copy (INIT when NULL) */
  hk_run_metadata *metadata; /**< metadata pointer received (may be NULL) */
  void *session;             /**< raw session it ran on */
  hk_code code;              /**< what the run returned */
} fake_run_record;

/** Called at the start of every run (before failure scripting). A non-OK
 *  return fails the run with it. */
typedef hk_code (*fake_run_fn)(void *user, fake_executor *fx, const hk_run_args *args, hk_status *status);

/**
 * Create a fake executor and its hk_executor. `env` is given to
 * hk_executor_new (may be NULL). Returns NULL only if hk_executor_new fails,
 * which the caller asserts on.
 */
fake_executor *fake_executor_new(const hk_env *env);
/**
 * The same fake with the version-2 variable_storage slot: it hands out each
 * variable's value buffer of the raw session and marks it initialized, so
 * a restore writes into it in place (counted as FAKE_VARIABLE_STORAGE;
 * fake_executor_fail() on that slot with HK_UNIMPLEMENTED makes a variable
 * take the assign path). fake_executor_new()'s vtable leaves the slot NULL.
 */
fake_executor *fake_executor_new_with_storage(const hk_env *env);
/** Free the hk_executor (its destroy slot is counted) and the fake. NULL ok. */
void fake_executor_free(fake_executor *fx);
/** The wrapped executor (borrowed, owned by the fake). */
hk_executor *fake_executor_executor(fake_executor *fx);
/** The vtable the fake registers (static const). */
const hk_executor_vtable *fake_executor_vtable(void);

/* ---- declarations (allowed before and after finalize; tests own them) ---- */

/** Plain tensor; `name` "op:k" or "op" (= "op:0"). Value zero-filled. */
hk_handle fake_executor_add_tensor(fake_executor *fx, const char *name, hk_dtype dtype, int32_t rank,
                                   const int64_t *dims);
/** Set a plain tensor's value (nbytes of its shape copied from data). */
void fake_executor_set_value(fake_executor *fx, hk_handle tensor, const void *data);
/** Convenience: int64 scalar tensor with a value. */
hk_handle fake_executor_add_i64(fake_executor *fx, const char *name, int64_t value);

/** Variable named `name` (handle of "name:0"); `flags` hk_variable_flags; `initial` may be NULL (zeros). */
hk_handle fake_executor_add_variable(fake_executor *fx, const char *name, hk_dtype dtype, int32_t rank,
                                     const int64_t *dims, uint32_t flags, const void *initial);
/** An int64 scalar variable "global_step", initial 0, registered under HK_ROLE_GLOBAL_STEP. */
hk_handle fake_executor_add_global_step(fake_executor *fx);

/** An op that does nothing unless configured below. */
hk_handle fake_executor_add_op(fake_executor *fx, const char *name);
/** The op adds `delta` to integer variable `var` (fails if uninitialized). */
void fake_executor_op_increments(fake_executor *fx, hk_handle op, hk_handle var, int64_t delta);
/** The op initializes every variable matching FAKE_INIT_GLOBAL / FAKE_INIT_LOCAL. */
void fake_executor_op_initializes(fake_executor *fx, hk_handle op, unsigned which);
/** The op fails every time it runs with `code` and `message`. */
void fake_executor_op_fails(fake_executor *fx, hk_handle op, hk_code code, const char *message);
/** @return how many times `op` ran (over all raw sessions). */
int fake_executor_op_runs(const fake_executor *fx, hk_handle op);
/** A train op "train" that increments the global step by 1 (adds one if missing). */
hk_handle fake_executor_add_train_op(fake_executor *fx);

/** A 1-D string report tensor named `name` (":0" implied) listing uninitialized variables. */
hk_handle fake_executor_add_report(fake_executor *fx, const char *name, fake_report_kind kind);
/**
 * Script a report: its next `times` evaluations (FAKE_FOREVER: all) return
 * `names` (copied, up to FAKE_MAX_NAMES); then it falls back to its kind.
 */
void fake_executor_script_report(fake_executor *fx, hk_handle report, const char *const *names, size_t n, int times);
/** @return how many times the report was evaluated. */
int fake_executor_report_evals(const fake_executor *fx, hk_handle report);

/** Register `handle` under `role` directly (test-side, ignores finalization). */
void fake_executor_role_register(fake_executor *fx, const char *role, hk_handle handle);
/** @return how many handles are registered for `role`; the first is stored in *first (may be NULL). */
size_t fake_executor_role_count(const fake_executor *fx, const char *role, hk_handle *first);
/** @return the handle default_op built for `kind`, HK_NO_HANDLE if none yet. */
hk_handle fake_executor_default_handle(const fake_executor *fx, hk_default_op kind);

/* ---- behaviour scripting ---------------------------------------------- */

/**
 * Fail calls of `slot`: starting with the `nth` next call (1 = the very next
 * one), `count` consecutive calls (FAKE_FOREVER: all later calls) return
 * `code` with `message` (copied). A new script for a slot replaces the old.
 * `nth` <= 0 clears the script for that slot. Calls are counted from the
 * moment of this call. For FAKE_RUN a failed run still counts as a run.
 */
void fake_executor_fail(fake_executor *fx, fake_slot slot, int nth, int count, hk_code code, const char *message);
/** Install a callback called at the start of each run. NULL removes it. */
void fake_executor_on_run(fake_executor *fx, fake_run_fn fn, void *user);
/** Hide the `describe` and `default_op` behaviours: they return UNIMPLEMENTED. */
void fake_executor_set_unimplemented_defaults(fake_executor *fx, int yes);

/* ---- inspection -------------------------------------------------------- */

/** Number of calls of `slot` since creation (or the last reset). */
int fake_executor_calls(const fake_executor *fx, fake_slot slot);
/** Zero every call counter (scripts keep their remaining counts). */
void fake_executor_reset_calls(fake_executor *fx);
/** The last run's record (also for failed runs). */
const fake_run_record *fake_executor_last_run(const fake_executor *fx);
/** Raw sessions currently open. */
int fake_executor_open_sessions(const fake_executor *fx);
/** Raw sessions opened since creation. */
int fake_executor_sessions_opened(const fake_executor *fx);
/** The most recently opened raw session still open (the fake's session pointer), or NULL. */
void *fake_executor_last_session(const fake_executor *fx);
/** Nonzero once finalized. */
int fake_executor_finalized(const fake_executor *fx);

/**
 * Read / write an integer variable in raw session `session` (NULL: the most
 * recently opened one still open). Writing marks it initialized. Reading an
 * uninitialized or unknown variable returns INT64_MIN.
 */
int64_t fake_executor_get_i64(const fake_executor *fx, void *session, hk_handle var);
void fake_executor_set_i64(fake_executor *fx, void *session, hk_handle var, int64_t value);
/** @return nonzero when `var` is initialized in `session` (NULL: latest). */
int fake_executor_is_initialized(const fake_executor *fx, void *session, hk_handle var);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_TEST_FAKE_EXECUTOR_H */
