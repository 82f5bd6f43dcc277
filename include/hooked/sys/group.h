/*
 * hooked — the group interface: the ranks of a job that save and restore
 * one sharded checkpoint together (docs/checkpoint-format.md, "Sharded
 * checkpoints").
 *
 * The core library does not depend on MPI. A Saver given a group
 * (hk_saver_options.group) writes one shard per rank and commits the
 * checkpoint only when every rank's shard is durable; what it needs from
 * the ranks is these few collective operations on small byte records. The
 * hooked::mpi library implements them over its context (hk_mpi_group(),
 * with its collective deadline); a program implements them over NCCL,
 * gloo, sockets — or, as the test suite does, over threads of one process.
 *
 * Rules for implementers:
 * - A `static const hk_group_vtable` plus a `void *user`. Every slot is
 *   required; a Saver refuses a vtable with a NULL slot, a version of 0 or
 *   above HK_GROUP_VTABLE_VERSION (INVALID_ARGUMENT naming it).
 * - rank and size are fixed for the group's life: 0 <= rank < size. Rank 0
 *   is the chief: it writes the index and the state file.
 * - all_gather and broadcast are collective: every rank calls them in the
 *   same order with the same `len`. They must not wait for ever: a rank
 *   that never arrives (it died, it hangs) must fail the call on the others
 *   within a deadline the implementation chooses, with an error code that
 *   is not ABORTED or UNAVAILABLE (those would make a session recover and
 *   re-enter collectives the other ranks left). After such a failure the
 *   Saver makes no further call on the group in that operation, so an
 *   implementation may refuse every later call (a broken MPI context does).
 * - The slots are called from the thread that calls the Saver (the
 *   asynchronous checkpoint hook's writer thread for its saves); the
 *   records are small (a few hundred bytes per rank) and the buffers are
 *   the Saver's, borrowed for the call.
 *
 * Stability: as every header under hooked/sys/ (see sys/hook.h).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_SYS_GROUP_H
#define HOOKED_SYS_GROUP_H

#include "hooked/common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HK_GROUP_VTABLE_VERSION 1

typedef struct hk_group_vtable {
  uint32_t version; /**< HK_GROUP_VTABLE_VERSION */
  /* slots below: version 1 */
  /** This process's rank in the group, 0 .. size-1; the same on every call. */
  int (*rank)(void *user);
  /** The number of ranks, >= 1; the same on every call and every rank. */
  int (*size)(void *user);
  /**
   * Every rank contributes `len` bytes from `send`; every rank receives
   * size * len bytes in `recv`, rank r's bytes at r * len. Collective.
   * On failure the contents of `recv` are unspecified.
   */
  hk_code (*all_gather)(void *user, const void *send, void *recv, size_t len, hk_status *status);
  /**
   * Rank `root`'s `len` bytes of `buf` replace every other rank's `buf`.
   * Collective.
   */
  hk_code (*broadcast)(void *user, void *buf, size_t len, int root, hk_status *status);
} hk_group_vtable;

/**
 * Check a group: `vtable` non-NULL with a version this library knows and
 * no NULL slot, and rank/size in range.
 * @param what  names the group in messages (e.g. "opts->group").
 * **Errors:** INVALID_ARGUMENT naming `what` and the fault.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_group_check(const hk_group_vtable *vtable, void *user, const char *what, hk_status *status);

/**
 * The block partition of a sharded checkpoint, and of a partitioned
 * variable (hk_saver_options.partitioned_list): rank `rank` of `nranks`
 * owns the elements [*first, *first + *len) of a flat variable of `count`
 * elements. Blocks are consecutive, in rank order: each holds
 * count / nranks elements, and the first count % nranks hold one more.
 * hooked::mpi's hk_mpi_block() cuts the same blocks.
 * @param first, len  outputs; untouched on an error.
 * **Errors:** INVALID_ARGUMENT for a NULL output, nranks < 1 or a rank
 * outside 0..nranks-1 (named).
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_group_block(size_t *first, size_t *len, size_t count, int nranks, int rank, hk_status *status);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_SYS_GROUP_H */
