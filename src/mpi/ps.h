/*
 * hooked::mpi — the parameter server's shared parts: the endpoint, the
 * layout of the shared state and the messages.
 *
 * Messages travel on the context's own communicator. A request from a
 * worker is a header (and, for a push, the update); the chief answers every
 * request but a goodbye with a header (and, for a pull or a push, the
 * shared variables as they are after it).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_MPI_PS_H
#define HOOKED_MPI_PS_H

#include <limits.h>
#include <stdatomic.h>

#include "hooked/coordinator.h"
#include "mpi_internal.h"

enum {
  PS_TAG_PULL = 101, /* worker: the shared state, please */
  PS_TAG_PUSH = 102, /* worker: my update */
  PS_TAG_STEP = 103, /* worker: the global step, please */
  PS_TAG_BYE = 104,  /* worker: I leave */
  PS_TAG_REPLY = 110 /* chief: the answer */
};

enum {
  PS_FLAG_STOP = 1,     /* chief: stop; worker: stop the job */
  PS_FLAG_MISMATCH = 2, /* chief: your variables are not the chief's */
  PS_FLAG_APPLIED = 4   /* chief: your update was applied (a reply may say so and "stop" at once) */
};

typedef struct ps_header {
  int64_t global_step;
  int64_t flags;
  int64_t fingerprint; /* of the shared variables' layout */
  int64_t payload;     /* bytes after the header, in this piece and the ones that follow */
} ps_header;

/* A message is one piece of at most the endpoint's chunk bytes (MPI counts
 * are int), the header and the first bytes of the payload, then the rest
 * of the payload in pieces of that size, on the same tag: MPI keeps
 * messages between two ranks on one tag in order. */
#define PS_CHUNK_DEFAULT ((size_t)(INT_MAX / 2))

/* One shared variable: an index of the executor and its bytes. */
typedef struct ps_var {
  size_t index;
  hk_dtype dtype;
  size_t nbytes, offset; /* in the payload */
} ps_var;

struct hk_mpi_ps {
  hk_mpi *mpi;
  hk_env env;
  int chief;
  /* the layout, fixed when the first op or hook sees the executor */
  int have_layout;
  ps_var *vars;
  size_t nvars;
  size_t gs_index;
  size_t payload; /* bytes of the shared variables */
  uint32_t fingerprint;
  unsigned char *tx, *rx; /* header + payload each */
  unsigned char *base;    /* worker: the shared variables as last pulled */
  int64_t updates;
  size_t chunk;          /* the largest piece of a message, in bytes */
  hk_coordinator *coord; /* of the session the hooks serve */
  /* chief */
  int *gone;       /* per rank: left (or the chief itself) */
  int nleft;       /* workers still there */
  atomic_int stop; /* a worker asked the job to stop */
  int stopped_serving;
  /* worker */
  int pull_pending;
  MPI_Request pull_req;
  int have_pull;
  int chief_stopped; /* the chief answered "stop" */
  int64_t last_gs;
};

/* Fix the layout from an executor: the global step and every F32/F64
 * variable that is not HK_VAR_LOCAL, in order; allocates the buffers. */
hk_code hk__ps_layout(hk_mpi_ps *ps, hk_executor *ex, hk_status *st);

#define PS_HEADER_BYTES sizeof(ps_header)

/* Send tx's header (its payload field set here) and `payload` bytes of
 * tx's payload to `dest` on `tag`, in pieces, under the deadline. */
hk_code hk__ps_send(hk_mpi_ps *ps, int dest, int tag, size_t payload, hk_status *st);

/* The first piece of a message from `source` on `tag` (`bytes` of it) is in
 * rx: check its header's payload against the layout and receive the
 * pieces that follow into rx, under the deadline. *h: the header. */
hk_code hk__ps_receive_rest(hk_mpi_ps *ps, int source, int tag, int bytes, ps_header *h, hk_status *st);

/* The receive capacity of a first piece: the whole message, within int. */
int hk__ps_first_capacity(const hk_mpi_ps *ps);

/* Tests only: send messages in pieces of at most `bytes` (>= 1), to check
 * the pieces without gigabytes of variables. */
void hk__mpi_ps_set_chunk_bytes(hk_mpi_ps *ps, size_t bytes);

/* Worker: send a request of `tag` (a header with `flags` and the layout's
 * fingerprint, then `payload` bytes of tx's payload) to the chief. */
hk_code hk__ps_request(hk_mpi_ps *ps, int tag, int64_t flags, size_t payload, hk_status *st);
/* Worker: receive the chief's answer into rx; *h its header. */
hk_code hk__ps_receive(hk_mpi_ps *ps, ps_header *h, hk_status *st);

#endif /* HOOKED_MPI_PS_H */
