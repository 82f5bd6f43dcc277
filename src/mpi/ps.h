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
  int64_t reserved;
} ps_header;

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

/* Worker: send a request of `tag` (a header with `flags` and the layout's
 * fingerprint, then `payload` bytes of tx's payload) to the chief. */
hk_code hk__ps_request(hk_mpi_ps *ps, int tag, int64_t flags, size_t payload, hk_status *st);
/* Worker: receive the chief's answer into rx; *h its header. */
hk_code hk__ps_receive(hk_mpi_ps *ps, ps_header *h, hk_status *st);

#endif /* HOOKED_MPI_PS_H */
