/*
 * The host loop's executor: an hk_executor whose variables are the arrays
 * and opaque states a program registers, read and written in place. Built
 * on hooked/sys/executor.h only, like any third-party executor. Private to
 * the loop (src/loop/); nothing here is exported.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_LOOP_HOST_EXECUTOR_H
#define HOOKED_LOOP_HOST_EXECUTOR_H

#include "hooked/loop.h"

typedef struct hk__host hk__host;

/** A new, empty registry. @return NULL when out of memory. */
hk__host *hk__host_new(const hk_env *env);
/** Free a registry that was never wrapped in an executor. */
void hk__host_free(hk__host *h);

/**
 * Register an array (state == NULL) or an opaque state of `nbytes` bytes.
 * `var_flags` are hk_variable_flags (HK_VAR_EXTERNAL is added). Names are
 * checked by the caller. ALREADY_EXISTS for a taken name.
 */
hk_code hk__host_add(hk__host *h, const char *name, hk_dtype dtype, int32_t rank, const int64_t *dims, void *data,
                     size_t nbytes, uint32_t var_flags, hk_loop_state_save_fn save, hk_loop_state_restore_fn restore,
                     void *user, hk_status *st);
/**
 * Look up `name` ("x" or "x:0", as the executor resolves it) for the loop's
 * own checks of its options: 1 when registered, with its dtype, number of
 * elements and whether it is an opaque state; 0 otherwise.
 */
int hk__host_describe(const hk__host *h, const char *name, hk_dtype *dtype, int64_t *elements, int *is_state);
/**
 * Look up `name` as hk__host_describe does: 1 when registered, with its
 * spec (dtype, rank, dims, nbytes; data NULL), its hk_variable_flags and
 * whether it is an opaque state; 0 otherwise.
 */
int hk__host_spec(const hk__host *h, const char *name, hk_tensor *spec, uint32_t *flags, int *is_state);
/** Make entry `index` the global step (registered under HK_ROLE_GLOBAL_STEP). */
void hk__host_set_global_step(hk__host *h, size_t index);
/** The number of entries (the next index hk__host_add uses). */
size_t hk__host_count(const hk__host *h);
/** The global step's current value (0 when there is none). */
int64_t hk__host_global_step(const hk__host *h);

/** The monotonic times of the program's last step, traced as op "step" by
 *  runs with trace_level >= 1. */
void hk__host_set_step_times(hk__host *h, double start, double end);
/** The last step was not timed: traced runs record no "step" op. */
void hk__host_clear_step_times(hk__host *h);

/** Whether the executor accepts a copy-before-write snapshot from
 *  now on: the loop allows it after a step in which the program called
 *  hk_loop_updates_begin(). */
void hk__host_allow_overlap(hk__host *h, int allow);
/** Nonzero while a snapshot is attached (its copy may still be running). */
int hk__host_snapshot_attached(const hk__host *h);
/** Complete the attached snapshot's copy on this thread (waiting for the
 *  writer's copy in progress) and forget it; none: nothing to do. */
void hk__host_updates_begin(hk__host *h);
/** Copy-before-write for entry `index`, before the loop writes it. */
void hk__host_before_write(hk__host *h, size_t index);

/**
 * The check-resume mode (HOOKED_CHECK_RESUME, hooked/checkpoint_saver.h), after every
 * registration: when the variable is set, every later read of a state reads
 * it twice and names one whose two reads differ (*on is then 1). A
 * malformed variable → INVALID_ARGUMENT naming it; RESOURCE_EXHAUSTED.
 */
hk_code hk__host_check_resume(hk__host *h, int *on, hk_status *st);

/** Wrap the registry in an executor that owns it from then on (also on
 *  failure: the registry is freed). */
hk_code hk__host_executor_new(hk_executor **out, hk__host *h, const hk_env *env, hk_status *st);

#endif /* HOOKED_LOOP_HOST_EXECUTOR_H */
