/*
 * Copy-before-write snapshots (hk_snapshot in hooked/sys/executor.h):
 * the asynchronous checkpoint hook's list of (variable, source, destination)
 * copies, made by its writer thread while the training thread goes on, with
 * a per-variable barrier an executor calls before it mutates a variable.
 *
 * Each item goes PENDING -> COPYING -> DONE exactly once per arming: the
 * thread that claims it (a CAS from PENDING) copies it and publishes DONE;
 * a thread that needs an item another thread is copying waits for it on a
 * condition variable (signalled only when someone waits). The training
 * thread fills and arms a snapshot only while no other thread uses it (the
 * writer is idle), and reads the item list without locks afterwards; the
 * writer reads it after the hand-over, under the writer's mutex.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_CKPT_SNAPSHOT_H
#define HOOKED_CKPT_SNAPSHOT_H

#include "util/common.h"

/** A new, empty snapshot (nothing pending); allocated through env. On
 *  failure *out is NULL and the status names what ran out. */
hk_code hk__snapshot_new(hk_snapshot **out, const hk_env *env, hk_status *st);
/** Free a snapshot no thread uses any more (complete, detached). NULL: no-op. */
void hk__snapshot_free(hk_snapshot *s);

/**
 * Empty the snapshot and make room for `n` items over executor variable
 * indices < `nvars`: allocates only when either grows past what an earlier
 * call reserved. Training thread, while no other thread uses it.
 */
hk_code hk__snapshot_reset(hk_snapshot *s, size_t n, size_t nvars, hk_status *st);
/** Add an item: variable `var` (< the reset's nvars, not added before) is
 *  `nbytes` bytes at `src`, to be copied to `dst`. At most the reset's n. */
void hk__snapshot_add(hk_snapshot *s, size_t var, const void *src, void *dst, size_t nbytes);
/** Publish the items: from now on each is copied exactly once, by whichever
 *  thread claims it first. */
void hk__snapshot_arm(hk_snapshot *s);

/**
 * The writer thread's part: copy every item no one has claimed, in order,
 * then wait until the items the training thread claimed are copied too.
 * Returns once every item is DONE; what the copies wrote is then visible to
 * the caller.
 */
void hk__snapshot_run(hk_snapshot *s);

/** The number of items the training thread copied itself (barriers and
 *  completions) since the last arming, for the hook's DEBUG line. */
size_t hk__snapshot_copied_here(const hk_snapshot *s);

#endif /* HOOKED_CKPT_SNAPSHOT_H */
