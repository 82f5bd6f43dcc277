/*
 * hooked — the graph-executor interface.
 *
 * The session never does model math: an executor does. An executor is a
 * `static const hk_executor_vtable` plus a `void *self`, wrapped in an
 * hk_executor with hk_executor_new(). The library ships one (hooked/graph.h);
 * a program may write its own against this header alone.
 *
 * Wrappers. An executor may wrap another (the "inner" one) and forward to
 * it, changing what it needs to (hooked::mpi's worker executor answers
 * global-step reads; a program's may count runs or add latency). A wrapper
 * owns its raw sessions:
 *   - its `open` slot opens one raw session of the inner executor
 *     (hk_raw_session_open(&inner_rs, inner)) and returns it as its own
 *     session, or a struct of its own that keeps it; its `close` slot
 *     closes and frees that inner raw session (hk_raw_session_free());
 *   - every slot that receives a session passes the inner executor that
 *     inner raw session, never the wrapper's own session pointer:
 *     hk_raw_session_run(inner_rs, ...), hk_raw_session_read_variable(),
 *     _assign_variable(), _variable_storage();
 *   - slots without a session forward to the inner executor itself
 *     (hk_executor_resolve_tensor(out, inner, ...), ...), and so does `control`,
 *     except that an op naming a session is forwarded with the inner raw
 *     session in its place: for HK_CONTROL_SNAPSHOT_ATTACH, a copy of the
 *     hk_control_snapshot whose `session` is inner_rs (a wrapper whose own
 *     session pointer IS inner_rs forwards the argument as it is).
 * hk_executor_control() refuses, naming the executor and the op, a session
 * that is not a raw session of the executor it is called on, so a wrapper
 * that forwards its own session instead gets INVALID_ARGUMENT rather than
 * an executor guarding a session that is not its own.
 *
 * Stability: headers under hooked/sys/ are for implementers and carry a
 * WEAKER promise than the other public headers. Until 1.0 they may change
 * in any minor release; from 1.0 on, source compatibility is kept within a
 * major version only by the versioned-vtable rule: slots are only ever
 * appended under a new HK_EXECUTOR_VTABLE_VERSION, and the library never
 * reads a slot beyond the version an implementer declares. Helper
 * functions here may gain arguments or change in a minor release. What a
 * program that only drives sessions needs (the run arguments, results and
 * raw sessions) is in hooked/run.h, under the ordinary promise.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_SYS_EXECUTOR_H
#define HOOKED_SYS_EXECUTOR_H

#include "hooked/common.h"
#include "hooked/run.h"
#include "hooked/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- variables ---------------------------------------------------------- */

typedef enum hk_variable_flags {
  HK_VAR_LOCAL = 1u << 0,     /**< local (not global) variable */
  HK_VAR_TRAINABLE = 1u << 1, /**< trainable */
  HK_VAR_EXTERNAL = 1u << 2,  /**< backed by a buffer the host program owns */
  /** Optional on restore: a checkpoint without it restores the other
   *  variables and keeps this one's current value, with a WARNING naming it
   *  (state added to a model later must not make its old checkpoints
   *  unrestorable). */
  HK_VAR_OPTIONAL = 1u << 3,
  /** May hold NaN or infinities on purpose (an EarlyStoppingHook's state,
   *  whose best value starts at +-Inf): checkpoints write it as it is. A
   *  floating variable without the flag that holds one makes a save fail
   *  with INVALID_ARGUMENT, unless its Saver's allow_non_finite. */
  HK_VAR_NON_FINITE_OK = 1u << 4
} hk_variable_flags;

/** Description of variable `index` of an executor. */
typedef struct hk_variable_info {
  const char *name; /**< borrowed; valid for the executor's life */
  hk_handle tensor; /**< fetchable handle of its value */
  hk_dtype dtype;
  int32_t rank;
  int64_t dims[HK_MAX_RANK];
  uint32_t flags; /**< hk_variable_flags */
} hk_variable_info;

/** Defaults the Scaffold asks an executor to build. */
typedef enum hk_default_op {
  HK_DEFAULT_INIT_OP = 1,  /**< op: initialize every global variable */
  HK_DEFAULT_READY_OP = 2, /**< tensor: names of uninitialized variables, global and local (1-D string) */
  HK_DEFAULT_READY_FOR_LOCAL_INIT_OP = 3, /**< tensor: names of uninitialized global variables */
  HK_DEFAULT_LOCAL_INIT_OP = 4            /**< op: initialize every local variable */
} hk_default_op;

/** Role names of the executor's role registry. */
#define HK_ROLE_INIT_OP "init_op"
#define HK_ROLE_READY_OP "ready_op"
#define HK_ROLE_READY_FOR_LOCAL_INIT_OP "ready_for_local_init_op"
#define HK_ROLE_LOCAL_INIT_OP "local_init_op"
#define HK_ROLE_GLOBAL_STEP "global_step"

/** Text sink for hk_executor_describe(): called with consecutive chunks. */
typedef hk_code (*hk_text_sink)(void *user, const char *text, size_t len, hk_status *status);

/* ---- the vtable --------------------------------------------------------- */

#define HK_EXECUTOR_VTABLE_VERSION 2

/**
 * Executor implementation. `self` is the pointer given to hk_executor_new();
 * `session` is what `open` produced. Slots marked (required) must be set;
 * others may be NULL, with the behaviour the matching hk_executor_* /
 * hk_raw_session_* function states. The wrappers check NULL pointers, index
 * ranges and closed raw sessions before calling a slot, then return the
 * slot's code and status unchanged: a slot that fails must fill its status
 * with a message naming what is wrong.
 * Slots are called from one thread at a time (the training thread), except
 * `variable_read`, which a background saver may call while the training
 * thread is not running the same raw session.
 * Slots of a version are read only from a vtable that declares that
 * version or a later one: a version-1 table may end at `destroy`.
 */
typedef struct hk_executor_vtable {
  uint32_t version; /**< HK_EXECUTOR_VTABLE_VERSION */
  const char *name; /**< the implementation's name, for messages; may be NULL */
  /* slots below: version 1 */

  /** (required) Resolve "op:k" or "op" (= "op:0") to a tensor handle. NOT_FOUND naming it when unknown. */
  hk_code (*resolve_tensor)(void *self, const char *name, hk_handle *out, hk_status *status);
  /** (required) Resolve an op name to an op handle. NOT_FOUND naming it when unknown. */
  hk_code (*resolve_op)(void *self, const char *name, hk_handle *out, hk_status *status);
  /** Resolved name of a tensor ("op:k") or op handle, for messages; NULL if unknown. Borrowed. */
  const char *(*handle_name)(void *self, hk_handle handle);
  /** Finalize the graph; idempotent. Later mutations fail with FAILED_PRECONDITION. */
  hk_code (*finalize)(void *self, hk_status *status);
  /** Nonzero once finalized. */
  int (*is_finalized)(void *self);

  /** (required) Open a raw session. */
  hk_code (*open)(void *self, void **out_session, hk_status *status);
  /** Close and release a raw session; always releases, may report an error. */
  hk_code (*close)(void *self, void *session, hk_status *status);
  /**
   * (required) One run: feed, execute exactly what fetches and targets need,
   * each op at most once, dependencies first, and fill `results[i]` for
   * fetch i (data owned by the session until its next run or close). Fills
   * `metadata` when non-NULL. Must not allocate in steady state.
   */
  hk_code (*run)(void *self, void *session, const hk_run_args *args, hk_tensor *results, hk_run_metadata *metadata,
                 hk_status *status);

  /** Number of variables (0 when NULL). */
  size_t (*variable_count)(void *self);
  /** Describe variable `index` < variable_count. */
  hk_code (*variable_info)(void *self, size_t index, hk_variable_info *out, hk_status *status);
  /** Read variable `index` of `session`: a view valid until the next run, assign or close.
   *  FAILED_PRECONDITION "Attempting to use uninitialized value <name>" when uninitialized. */
  hk_code (*variable_read)(void *self, void *session, size_t index, hk_tensor *out, hk_status *status);
  /** Assign (copy) `value` into variable `index`; marks it initialized. dtype/shape must match. */
  hk_code (*variable_assign)(void *self, void *session, size_t index, const hk_tensor *value, hk_status *status);

  /** Role registry: write up to `cap` ops registered for `role` into out, the total into *count. */
  hk_code (*role_get)(void *self, const char *role, hk_handle *out, size_t cap, size_t *count, hk_status *status);
  /** Register `handle` under `role`. FAILED_PRECONDITION after finalize. */
  hk_code (*role_add)(void *self, const char *role, hk_handle handle, hk_status *status);
  /** Build one of the default ops (init, ready, local init; before finalize). UNIMPLEMENTED when NULL. */
  hk_code (*default_op)(void *self, hk_default_op kind, hk_handle *out, hk_status *status);
  /** Stream a text description of the graph to `sink`. UNIMPLEMENTED when NULL. */
  hk_code (*describe)(void *self, hk_text_sink sink, void *sink_user, hk_status *status);
  /** Open-ended extension; UNIMPLEMENTED for unknown ops. Ops 0..999 are reserved. */
  hk_code (*control)(void *self, int op, void *arg, hk_status *status);
  /** Release `self`; called exactly once by hk_executor_free(). */
  void (*destroy)(void *self);

  /* slots below: version 2 */

  /**
   * The memory that holds variable `index` of `session`, handed out for the
   * caller to write the variable's value in place (a restore reads a
   * checkpoint straight into it). Fill `out` as variable_info
   * describes the variable (dtype, rank, dims), with `nbytes` its byte size
   * and `data` that memory, writable (non-NULL when nbytes > 0). From this
   * call on the variable counts as initialized and its value is whatever
   * the caller writes there. The memory stays valid until the session's
   * next run, assign or close. Call hk_snapshot_before_write() first when a
   * copy-before-write snapshot holds the session.
   * A variable whose value lives in no such memory (reached through
   * callbacks, on a device, computed) → UNIMPLEMENTED, changing nothing:
   * the caller then assigns it (variable_assign). NULL: UNIMPLEMENTED for
   * every variable. Must not allocate in steady state.
   */
  hk_code (*variable_storage)(void *self, void *session, size_t index, hk_tensor *out, hk_status *status);
} hk_executor_vtable;

/* ---- the executor object ------------------------------------------------ */

/*
 * Unless stated otherwise, the functions below are called from one thread at
 * a time per executor (the training thread), report INVALID_ARGUMENT naming
 * a NULL required pointer, and pass a slot's code and status through
 * unchanged. Their allocation behaviour is the slot's: the reference
 * executor (hooked/graph.h) allocates only while building the graph and
 * when a raw session meets a new set of run arguments.
 */

/**
 * Wrap an implementation in an executor.
 * @param out     receives the executor; NULL on failure.
 * @param vtable  borrowed; must outlive the executor (make it static const).
 * @param self    borrowed until hk_executor_free(), which releases it with
 *                vtable->destroy (if set). On failure nothing is called and
 *                `self` stays the caller's.
 * @param env     copied; NULL for defaults.
 * @return HK_OK or an error.
 * **Ownership:** *out owned, hk_executor_free().
 * **Errors:** INVALID_ARGUMENT for NULL out/vtable, a version that is 0 or
 * newer than HK_EXECUTOR_VTABLE_VERSION, a missing required slot (named) or
 * a bad env; RESOURCE_EXHAUSTED.
 * **Threads:** any. **Allocates:** yes.
 */
HK_API hk_code hk_executor_new(hk_executor **out, const hk_executor_vtable *vtable, void *self, const hk_env *env,
                               hk_status *status);
/**
 * Free the executor, calling vtable->destroy(self) exactly once (if set).
 * Every raw session and session using it must be freed first.
 * @param ex  consumed; NULL is a no-op.
 * **Threads:** the owner's. **Allocates:** no.
 */
HK_API void hk_executor_free(hk_executor *ex);
/**
 * @return the executor's copy of the env it was created with (defaults when
 *         it was created with NULL, or when ex is NULL).
 * **Ownership:** borrowed; valid until hk_executor_free().
 * **Threads:** any. **Allocates:** no.
 */
HK_API const hk_env *hk_executor_env(const hk_executor *ex);
/**
 * @return the implementation's `self` pointer, NULL when ex is NULL.
 * **Ownership:** borrowed. **Threads:** any. **Allocates:** no.
 */
HK_API void *hk_executor_self(const hk_executor *ex);

/**
 * Resolve a tensor name ("op:k", or "op" meaning "op:0") to a handle. Names
 * are resolved once (in begin() or before a session exists), not per step.
 * @param out  set to HK_NO_HANDLE first, then to the handle on success.
 * **Errors:** NOT_FOUND naming the tensor; INVALID_ARGUMENT.
 * **Threads:** the owner's. **Allocates:** no (reference executor).
 */
HK_API hk_code hk_executor_resolve_tensor(hk_handle *out, hk_executor *ex, const char *name, hk_status *status);
/**
 * Resolve an op name to an op handle (for targets and init ops).
 * @param out  set to HK_NO_HANDLE first, then to the handle on success.
 * **Errors:** NOT_FOUND naming the op; INVALID_ARGUMENT.
 * **Threads:** the owner's. **Allocates:** no (reference executor).
 */
HK_API hk_code hk_executor_resolve_op(hk_handle *out, hk_executor *ex, const char *name, hk_status *status);
/**
 * Name of a handle for messages: the executor's name for it ("op:k" or
 * "op"), else "#<number>"; "(null executor)" when ex is NULL. Never NULL.
 * **Ownership:** borrowed. A name from the executor lives as long as the
 * executor; a "#<number>" form lives in the executor and is overwritten by
 * the next call that needs one.
 * **Threads:** the owner's. **Errors:** none. **Allocates:** no.
 */
HK_API const char *hk_executor_handle_name(hk_executor *ex, hk_handle handle);
/**
 * Finalize the graph: afterwards graph mutations fail with
 * FAILED_PRECONDITION "Graph is finalized and cannot be modified.".
 * Idempotent; OK without doing anything when the slot is NULL.
 * **Errors:** INVALID_ARGUMENT; the slot's error.
 * **Threads:** the owner's. **Allocates:** as the slot.
 */
HK_API hk_code hk_executor_finalize(hk_executor *ex, hk_status *status);
/** @return nonzero once finalized; 0 when ex is NULL or the slot is NULL.
 *  **Threads:** the owner's. **Allocates:** no. */
HK_API int hk_executor_is_finalized(hk_executor *ex);

/** @return the number of variables; 0 when ex is NULL or the slot is NULL.
 *  **Threads:** the owner's. **Allocates:** no. */
HK_API size_t hk_executor_variable_count(hk_executor *ex);
/**
 * Describe variable `index`.
 * @param out  zeroed first (when not NULL), filled on success. Its `name`
 *             is borrowed from the executor, valid for the executor's life.
 * **Errors:** OUT_OF_RANGE for index >= hk_executor_variable_count();
 * UNIMPLEMENTED when the executor has no variable_info slot; INVALID_ARGUMENT.
 * **Threads:** the owner's. **Allocates:** no.
 */
HK_API hk_code hk_executor_variable_info(hk_variable_info *out, hk_executor *ex, size_t index, hk_status *status);
/**
 * Find a variable by exact name (a linear scan).
 * @param index  receives its index on success; untouched on failure.
 * **Errors:** NOT_FOUND naming it; INVALID_ARGUMENT.
 * **Threads:** the owner's. **Allocates:** no.
 */
HK_API hk_code hk_executor_find_variable(hk_executor *ex, const char *name, size_t *index, hk_status *status);
/**
 * The global-step variable: the variable whose value tensor is
 * registered under HK_ROLE_GLOBAL_STEP, else the variable named
 * "global_step".
 * @param out    may be NULL; filled on success only.
 * @param index  may be NULL; filled on success only.
 * **Errors:** NOT_FOUND when there is none, or when several are registered
 * (also logged as WARNING "Multiple tensors in global_step collection.");
 * INVALID_ARGUMENT 'Existing "global_step" does not have integer type: %s'
 * or 'Existing "global_step" is not scalar: %s'.
 * **Threads:** the owner's. **Allocates:** no.
 */
HK_API hk_code hk_executor_global_step(hk_variable_info *out, size_t *index, hk_executor *ex, hk_status *status);

/**
 * Role registry: write up to `cap` handles registered under
 * `role` into `out` and the total number into *count (which may exceed cap).
 * An executor without a role_get slot has an empty registry: OK, count 0.
 * @param out  may be NULL when cap is 0.
 * **Errors:** INVALID_ARGUMENT (NULL role or count, NULL out with cap > 0).
 * **Threads:** the owner's. **Allocates:** no.
 */
HK_API hk_code hk_executor_role_get(hk_handle *out, size_t cap, size_t *count, hk_executor *ex, const char *role,
                                    hk_status *status);
/**
 * Register `handle` under `role` (the reference executor copies the role
 * name and accepts any op or tensor handle of its graph).
 * **Errors:** UNIMPLEMENTED when the executor has no role_add slot;
 * FAILED_PRECONDITION after finalization; INVALID_ARGUMENT for a NULL
 * role or an unset handle.
 * **Threads:** the owner's. **Allocates:** yes (the registry grows).
 */
HK_API hk_code hk_executor_role_add(hk_executor *ex, const char *role, hk_handle handle, hk_status *status);
/**
 * Build one of the default ops (ops for INIT/LOCAL_INIT, 1-D string
 * tensors for READY/READY_FOR_LOCAL_INIT). It is not registered: the
 * Scaffold registers what it builds.
 * @param out  set to HK_NO_HANDLE first, then to the handle on success.
 * **Errors:** UNIMPLEMENTED when the executor has no default_op slot;
 * FAILED_PRECONDITION after finalization; INVALID_ARGUMENT for a kind
 * outside hk_default_op.
 * **Threads:** the owner's. **Allocates:** yes (the graph grows).
 */
HK_API hk_code hk_executor_default_op(hk_handle *out, hk_executor *ex, hk_default_op kind, hk_status *status);
/**
 * Stream a text description of the graph to `sink` in consecutive chunks.
 * A non-OK return from the sink stops the stream and is returned.
 * @param sink_user  borrowed for the call.
 * **Errors:** UNIMPLEMENTED when the executor has no describe slot; the
 * sink's error; INVALID_ARGUMENT for a NULL sink.
 * **Threads:** the owner's; the sink runs on the calling thread.
 * **Allocates:** no (reference executor).
 */
HK_API hk_code hk_executor_describe(hk_executor *ex, hk_text_sink sink, void *sink_user, hk_status *status);
/**
 * Executor-defined extension. Ops 0..999 are reserved for
 * hooked; `arg` is defined by the op. An op that names a raw session
 * (HK_CONTROL_SNAPSHOT_ATTACH) names one opened on `ex` with
 * hk_raw_session_open(); this function checks that before the slot runs
 * and hands the slot a copy of `arg` naming that raw session's own session,
 * as the slot's `open` produced it.
 * **Errors:** UNIMPLEMENTED for an op the executor does not know (always
 * when it has no control slot); for an op naming a raw session,
 * INVALID_ARGUMENT naming the executor and the op when `arg` is NULL, of
 * an unknown version, or names anything but a raw session of `ex` (a
 * wrapper's own session, another executor's raw session), and
 * FAILED_PRECONDITION when that raw session is closed; otherwise the
 * slot's.
 * **Threads:** the owner's. **Allocates:** as the op.
 */
HK_API hk_code hk_executor_control(hk_executor *ex, int op, void *arg, hk_status *status);

/* ---- copy-before-write snapshots: control ops 100..101 ------------------ */

/**
 * A checkpoint snapshot whose copy is still being made while training goes
 * on. The asynchronous checkpoint hook snapshots its Saver's
 * variables at a step boundary; rather than copying every byte there, on
 * the training thread, it can let its writer thread copy them while the
 * next step runs — provided no variable is written before its copy is
 * made. An executor takes part by handling the two control ops below. One
 * that does not (any error, UNIMPLEMENTED included) keeps the whole copy at
 * the step boundary, on the training thread, as before.
 *
 * While a snapshot is attached to one of its sessions, the executor:
 *   - calls hk_snapshot_before_write(snapshot, index) before anything
 *     writes variable `index` of that session: a kernel that mutates it, an
 *     assignment or restore, storage handed out for writing, a read that
 *     regenerates its bytes (a callback filling a buffer);
 *   - calls hk_snapshot_complete(snapshot) before its close slot frees or
 *     reuses that session's storage;
 *   - while handling HK_CONTROL_SNAPSHOT_ATTACH, calls
 *     hk_snapshot_before_write() for every variable it cannot guard
 *     (memory another party writes without telling the executor, such as
 *     host-owned buffers): that copies it at once, on the training thread.
 * Reading variables needs nothing: the copy only reads them too. The
 * reference executor (hooked/graph.h) guards the variables it owns and
 * copies external ones at attach; the host loop (hooked/loop.h) takes part
 * only for programs that call hk_loop_updates_begin().
 */
typedef struct hk_snapshot hk_snapshot;

/**
 * Control op (arg: hk_control_snapshot *): attach `snapshot` to `session`
 * and keep the pointer until HK_CONTROL_SNAPSHOT_DETACH or the close of
 * that session, whichever comes first. A snapshot attached before is
 * completed (hk_snapshot_complete) and replaced. INVALID_ARGUMENT for a
 * NULL arg, session or snapshot or an unknown version; hk_executor_control()
 * refuses a session that is not a raw session of the executor.
 */
#define HK_CONTROL_SNAPSHOT_ATTACH 100
/**
 * Control op (arg: hk_control_snapshot *): forget `snapshot`, completing it
 * first if it is still pending. `session` is not used (it may be closed).
 * A snapshot that is not attached (any more): OK, nothing to do.
 */
#define HK_CONTROL_SNAPSHOT_DETACH 101

#define HK_CONTROL_SNAPSHOT_VERSION 1
/** The argument of HK_CONTROL_SNAPSHOT_ATTACH and _DETACH. */
typedef struct hk_control_snapshot {
  uint32_t version; /**< HK_CONTROL_SNAPSHOT_VERSION */
  /**
   * ATTACH: the caller of hk_executor_control() names an hk_raw_session *
   * opened on that executor; the control slot receives a copy naming that
   * raw session's own session, as its open slot produced it.
   * DETACH: not used.
   */
  void *session;
  hk_snapshot *snapshot; /**< borrowed until DETACH or that session's close */
} hk_control_snapshot;
#define HK_CONTROL_SNAPSHOT_INIT \
  { HK_CONTROL_SNAPSHOT_VERSION, NULL, NULL }

/**
 * Copy-before-write barrier: returns once variable `index` (the executor's
 * index) of the snapshot's session has been copied — at once when it was,
 * or when the snapshot does not hold it, is complete or is NULL; otherwise
 * after copying it on the calling thread, or after waiting for the writer
 * thread that is copying it. The variable may then be written.
 * **Threads:** the executor's (the training thread). **Errors:** none.
 * **Allocates:** no.
 */
HK_API void hk_snapshot_before_write(hk_snapshot *snapshot, size_t index);
/**
 * Finish the copy: every variable not copied yet is copied on the calling
 * thread (those the writer thread is copying are waited for). Afterwards
 * nothing is pending; NULL or a complete snapshot: nothing to do.
 * **Threads:** the executor's (the training thread). **Errors:** none.
 * **Allocates:** no.
 */
HK_API void hk_snapshot_complete(hk_snapshot *snapshot);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_SYS_EXECUTOR_H */
