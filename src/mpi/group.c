/*
 * hooked::mpi's group (hooked/sys/group.h): the ranks of a context, for a
 * Saver that writes sharded checkpoints. Rank 0 of the group is the
 * context's root (the chief), the others follow in communicator order, so a
 * job's shard r is written by the rank r places after the chief. Every
 * collective is started non-blocking and waited for against the context's
 * deadline, like every other wait of this module.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "mpi_internal.h"

#include <limits.h>
#include <string.h>

#define WHO "sharded checkpoint"

static int g_rank(void *user) {
  const hk_mpi *m = user;
  return (m->rank - m->root + m->size) % m->size;
}

static int g_size(void *user) { return ((const hk_mpi *)user)->size; }

/* The group's rank g lives at communicator rank (g + root) % size: the
 * gathered blocks are rotated back into group order. */
static hk_code g_all_gather(void *user, const void *send, void *recv, size_t len, hk_status *st) {
  hk_mpi *m = user;
  MPI_Request req = MPI_REQUEST_NULL;
  unsigned char *tmp;
  hk_code rc;
  int err;
  if (len > (size_t)INT_MAX) return hk_status_set(st, HK_INVALID_ARGUMENT, WHO ": %zu bytes per rank", len);
  tmp = hk_env_alloc(&m->env, (size_t)m->size * len);
  if (!tmp) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, WHO ": out of memory");
  rc = hk__mpi_collective_begin(m, HK__MPI_OP_CHECKPOINT, WHO, st);
  if (rc == HK_OK) {
    err = MPI_Iallgather(send, (int)len, MPI_BYTE, tmp, (int)len, MPI_BYTE, m->comm, &req);
    rc = err != MPI_SUCCESS ? hk__mpi_error(st, err, WHO ": MPI_Iallgather")
                            : hk__mpi_collective_wait(m, &req, HK__MPI_OP_CHECKPOINT, WHO, st);
  }
  if (rc == HK_OK)
    for (int g = 0; g < m->size; g++)
      memcpy((unsigned char *)recv + (size_t)g * len, tmp + (size_t)((g + m->root) % m->size) * len, len);
  hk_env_free(&m->env, tmp);
  return rc;
}

static hk_code g_broadcast(void *user, void *buf, size_t len, int root, hk_status *st) {
  hk_mpi *m = user;
  MPI_Request req = MPI_REQUEST_NULL;
  hk_code rc;
  int err;
  if (len > (size_t)INT_MAX) return hk_status_set(st, HK_INVALID_ARGUMENT, WHO ": %zu bytes", len);
  if (root < 0 || root >= m->size)
    return hk_status_set(st, HK_INVALID_ARGUMENT, WHO ": root %d of %d ranks", root, m->size);
  rc = hk__mpi_collective_begin(m, HK__MPI_OP_CHECKPOINT, WHO, st);
  if (rc != HK_OK) return rc;
  err = MPI_Ibcast(buf, (int)len, MPI_BYTE, (root + m->root) % m->size, m->comm, &req);
  if (err != MPI_SUCCESS) return hk__mpi_error(st, err, WHO ": MPI_Ibcast");
  return hk__mpi_collective_wait(m, &req, HK__MPI_OP_CHECKPOINT, WHO, st);
}

static const hk_group_vtable group_vtable = {HK_GROUP_VTABLE_VERSION, g_rank, g_size, g_all_gather, g_broadcast};

const hk_group_vtable *hk_mpi_group(void) { return &group_vtable; }
