/*
 * hooked::mpi — the parameter-server endpoint and the shared layout.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "ps.h"

hk_code hk_mpi_ps_new(hk_mpi_ps **out, hk_mpi *mpi, hk_status *st) {
  if (out) *out = NULL;
  if (!out || !mpi) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_mpi_ps_new: %s is NULL", !out ? "out" : "mpi");
  if (mpi->size < 2)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "hk_mpi_ps_new: the communicator has 1 rank; a parameter server needs a chief and at least "
                         "one worker (run with mpirun -np 2 or more)");
  hk_mpi_ps *ps = hk_env_calloc(&mpi->env, 1, sizeof *ps);
  if (!ps) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_mpi_ps_new: out of memory");
  ps->mpi = mpi;
  hk_env_copy(&ps->env, &mpi->env);
  ps->chief = mpi->rank == mpi->root;
  atomic_init(&ps->stop, 0);
  ps->pull_req = MPI_REQUEST_NULL;
  ps->chunk = PS_CHUNK_DEFAULT;
  if (ps->chief) {
    ps->gone = hk_env_calloc(&ps->env, (size_t)mpi->size, sizeof *ps->gone);
    if (!ps->gone) {
      hk_env_free(&ps->env, ps);
      return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_mpi_ps_new: out of memory");
    }
    ps->gone[mpi->root] = 1;
    ps->nleft = mpi->size - 1;
  }
  *out = ps;
  return HK_OK;
}

void hk_mpi_ps_free(hk_mpi_ps *ps) {
  if (!ps) return;
  hk_env env = ps->env;
  if (ps->pull_req != MPI_REQUEST_NULL) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
      MPI_Cancel(&ps->pull_req);
      MPI_Request_free(&ps->pull_req);
    }
  }
  hk_env_free(&env, ps->vars);
  hk_env_free(&env, ps->tx);
  hk_env_free(&env, ps->rx);
  hk_env_free(&env, ps->base);
  hk_env_free(&env, ps->gone);
  hk_env_free(&env, ps);
}

int64_t hk_mpi_ps_updates(const hk_mpi_ps *ps) { return ps ? ps->updates : 0; }

static int shared(const hk_variable_info *info) {
  return (info->flags & HK_VAR_LOCAL) == 0 && (info->dtype == HK_DTYPE_F32 || info->dtype == HK_DTYPE_F64);
}

static int pick_shared(const hk_variable_info *info, void *user) {
  (void)user;
  return shared(info);
}

void hk__mpi_ps_set_chunk_bytes(hk_mpi_ps *ps, size_t bytes) {
  if (ps && bytes > 0) ps->chunk = bytes < PS_CHUNK_DEFAULT ? bytes : PS_CHUNK_DEFAULT;
}

int hk__ps_first_capacity(const hk_mpi_ps *ps) {
  size_t whole = PS_HEADER_BYTES + ps->payload;
  return whole < (size_t)INT_MAX ? (int)whole : INT_MAX;
}

/* Who a wait for `peer` waits for, in words. */
static void describe_peer(const hk_mpi_ps *ps, int peer, char *buf, size_t cap) {
  if (peer == ps->mpi->root)
    snprintf(buf, cap, "the chief (rank %d)", peer);
  else
    snprintf(buf, cap, "worker rank %d", peer);
}

hk_code hk__ps_send(hk_mpi_ps *ps, int dest, int tag, size_t payload, hk_status *st) {
  hk_mpi *m = ps->mpi;
  char peer[48];
  int64_t n64 = (int64_t)payload;
  memcpy(ps->tx + offsetof(ps_header, payload), &n64, sizeof n64);
  describe_peer(ps, dest, peer, sizeof peer);
  const size_t total = PS_HEADER_BYTES + payload;
  for (size_t off = 0; off < total;) {
    /* The first piece holds the header whole, whatever the chunk. */
    size_t piece = total - off < ps->chunk ? total - off : ps->chunk;
    if (off == 0 && piece < PS_HEADER_BYTES) piece = PS_HEADER_BYTES;
    MPI_Request req = MPI_REQUEST_NULL;
    int err = MPI_Isend(ps->tx + off, (int)piece, MPI_BYTE, dest, tag, m->comm, &req);
    if (err != MPI_SUCCESS) return hk__mpi_error(st, err, "parameter server: MPI_Isend");
    hk_code rc = hk__mpi_p2p_wait(m, &req, tag == PS_TAG_REPLY ? HK__MPI_OP_PS_REPLY : HK__MPI_OP_PS_REQUEST, peer,
                                  "parameter server", NULL, st);
    if (rc != HK_OK) return rc;
    off += piece;
  }
  return HK_OK;
}

hk_code hk__ps_receive_rest(hk_mpi_ps *ps, int source, int tag, int bytes, ps_header *h, hk_status *st) {
  hk_mpi *m = ps->mpi;
  char peer[48];
  if (bytes < (int)PS_HEADER_BYTES)
    return hk_status_set(st, HK_INTERNAL,
                         "parameter server: rank %d sent a message of %d bytes, less than a header (%zu)", source,
                         bytes, PS_HEADER_BYTES);
  memcpy(h, ps->rx, sizeof *h);
  const size_t got = (size_t)bytes - PS_HEADER_BYTES;
  if (h->payload < 0 || (uint64_t)h->payload > ps->payload || got > (size_t)h->payload)
    return hk_status_set(st, HK_INTERNAL,
                         "parameter server: rank %d sent a message of %lld bytes after its header; the layout's "
                         "variables take %zu",
                         source, (long long)h->payload, ps->payload);
  describe_peer(ps, source, peer, sizeof peer);
  for (size_t off = got; off < (size_t)h->payload;) {
    size_t left = (size_t)h->payload - off;
    int cap = left < (size_t)INT_MAX ? (int)left : INT_MAX, n = 0;
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Status status;
    int err = MPI_Irecv(ps->rx + PS_HEADER_BYTES + off, cap, MPI_BYTE, source, tag, m->comm, &req);
    if (err != MPI_SUCCESS) return hk__mpi_error(st, err, "parameter server: MPI_Irecv");
    hk_code rc = hk__mpi_p2p_wait(m, &req, tag == PS_TAG_REPLY ? HK__MPI_OP_PS_REPLY : HK__MPI_OP_PS_REQUEST, peer,
                                  "parameter server", &status, st);
    if (rc != HK_OK) {
      MPI_Cancel(&req);
      MPI_Request_free(&req);
      return rc;
    }
    MPI_Get_count(&status, MPI_BYTE, &n);
    if (n <= 0)
      return hk_status_set(st, HK_INTERNAL, "parameter server: rank %d sent an empty piece of a message", source);
    off += (size_t)n;
  }
  return HK_OK;
}

hk_code hk__ps_request(hk_mpi_ps *ps, int tag, int64_t flags, size_t payload, hk_status *st) {
  ps_header h = {0, flags, (int64_t)ps->fingerprint, 0};
  memcpy(ps->tx, &h, sizeof h);
  return hk__ps_send(ps, ps->mpi->root, tag, payload, st);
}

hk_code hk__ps_receive(hk_mpi_ps *ps, ps_header *h, hk_status *st) {
  hk_mpi *m = ps->mpi;
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_Status status;
  char peer[48];
  int bytes = 0;
  describe_peer(ps, m->root, peer, sizeof peer);
  int err = MPI_Irecv(ps->rx, hk__ps_first_capacity(ps), MPI_BYTE, m->root, PS_TAG_REPLY, m->comm, &req);
  if (err != MPI_SUCCESS) return hk__mpi_error(st, err, "parameter server worker: MPI_Irecv");
  hk_code rc = hk__mpi_p2p_wait(m, &req, HK__MPI_OP_PS_REPLY, peer, "parameter server worker", &status, st);
  if (rc != HK_OK) {
    MPI_Cancel(&req);
    MPI_Request_free(&req);
    return rc;
  }
  MPI_Get_count(&status, MPI_BYTE, &bytes);
  return hk__ps_receive_rest(ps, m->root, PS_TAG_REPLY, bytes, h, st);
}

hk_code hk__ps_layout(hk_mpi_ps *ps, hk_executor *ex, hk_status *st) {
  if (ps->have_layout) return HK_OK;
  hk_variable_info gsinfo;
  size_t gs_index;
  hk_status why = HK_STATUS_INIT;
  hk_code rc = hk_executor_global_step(&gsinfo, &gs_index, ex, &why);
  /* A graph without one is a bad argument of the serve op and the worker's
   * ops, whatever the executor's own code for it. */
  if (rc != HK_OK)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "parameter server: the model needs an int64 global step (the shared step): %s", why.message);
  if (gs_index == (size_t)-1 || gsinfo.dtype != HK_DTYPE_I64)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "parameter server: the model needs an int64 global step (the shared step), not %s",
                         hk_dtype_name(gsinfo.dtype));
  size_t n = hk_executor_variable_count(ex), count = 0;
  for (size_t i = 0; i < n; i++) {
    hk_variable_info info;
    if ((rc = hk_executor_variable_info(&info, ex, i, st)) != HK_OK) return rc;
    if (i != gs_index && shared(&info)) count++;
  }
  ps_var *vars = hk_env_calloc(&ps->env, count ? count : 1, sizeof *vars);
  if (!vars) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "parameter server: out of memory");
  size_t k = 0, offset = 0;
  for (size_t i = 0; i < n; i++) {
    hk_variable_info info;
    if ((rc = hk_executor_variable_info(&info, ex, i, st)) != HK_OK) {
      hk_env_free(&ps->env, vars);
      return rc;
    }
    if (i == gs_index || !shared(&info)) continue;
    size_t elements = 1;
    for (int32_t d = 0; d < info.rank; d++) elements *= (size_t)info.dims[d];
    vars[k].index = i;
    vars[k].dtype = info.dtype;
    vars[k].nbytes = elements * hk_dtype_size(info.dtype);
    vars[k].offset = offset;
    offset += vars[k].nbytes;
    k++;
  }
  uint32_t print;
  if ((rc = hk__mpi_fingerprint(ex, pick_shared, NULL, &print, st)) != HK_OK) {
    hk_env_free(&ps->env, vars);
    return rc;
  }
  ps->tx = hk_env_alloc(&ps->env, PS_HEADER_BYTES + offset);
  ps->rx = hk_env_alloc(&ps->env, PS_HEADER_BYTES + offset);
  ps->base = ps->chief ? NULL : hk_env_alloc(&ps->env, offset ? offset : 1);
  if (!ps->tx || !ps->rx || (!ps->chief && !ps->base)) {
    hk_env_free(&ps->env, vars);
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "parameter server: out of memory for %zu bytes of variables",
                         offset);
  }
  ps->vars = vars;
  ps->nvars = count;
  ps->gs_index = gs_index;
  ps->payload = offset;
  ps->fingerprint = print;
  ps->have_layout = 1;
  return HK_OK;
}
