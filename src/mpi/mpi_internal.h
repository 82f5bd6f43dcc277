/*
 * hooked::mpi — what the files of src/mpi/ share. Built on hooked's public
 * headers only (no header of src/), like a third-party extension.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_MPI_INTERNAL_H
#define HOOKED_MPI_INTERNAL_H

#include "hooked/mpi.h"

typedef struct hk__mpi_sink hk__mpi_sink;

struct hk_mpi {
  hk_env env;          /* the options' env, its log sink prefixed with the rank (log.c) */
  hk__mpi_sink *sinks; /* the base sinks the prefixed ones write through */
  MPI_Comm comm;       /* our duplicate */
  int rank, size, root;
  void *scratch; /* hk_mpi_average()'s receive buffer */
  size_t scratch_bytes;
  int *counts, *displs; /* per rank, in elements (size entries each) */
  int *counts2, *displs2;
  double *scalars; /* size entries: hk_mpi_average_scalar() */
  /* the deadline of every wait (deadline.c) */
  double timeout;          /* seconds; +infinity: none */
  MPI_Comm watch;          /* a second duplicate: the "I give up" notices */
  int64_t seq;             /* collectives started on this context */
  int64_t step;            /* the step in progress as far as a hook told; HK_UNSET_STEPS */
  int broken;              /* a wait passed its deadline: the context is unusable */
  char broken_what[96];    /* which one, for the calls after it */
  int64_t *notes;          /* size * 4: each rank's notice (seq, op, step, present) */
  MPI_Request *note_reqs;  /* size: the notices this rank sends */
  MPI_Request *note_rreqs; /* size: the notices it receives */
};

/* The waits the deadline names; hk__mpi_op_name() has their names. */
typedef enum hk__mpi_op {
  HK__MPI_OP_AVERAGE = 1,
  HK__MPI_OP_AVERAGE_SCALAR,
  HK__MPI_OP_MODEL_CHECK,
  HK__MPI_OP_BROADCAST,
  HK__MPI_OP_STOP_AGREEMENT,
  HK__MPI_OP_PS_REPLY,
  HK__MPI_OP_PS_REQUEST,
  HK__MPI_OP_CREATE,
  HK__MPI_OP__COUNT
} hk__mpi_op;

const char *hk__mpi_op_name(int op);

/* Before a collective of `op`: refuse a broken context, count the
 * collective, and give up at once (DEADLINE_EXCEEDED) when another rank has
 * given up already. `who` prefixes the message. */
hk_code hk__mpi_collective_begin(hk_mpi *m, int op, const char *who, hk_status *st);

/* Wait for `req`, a non-blocking collective every rank of the context
 * started, until it completes or the deadline passes (or another rank
 * gives up): then every rank that waits learns which ranks did not
 * arrive, the context is broken and the result is DEADLINE_EXCEEDED. */
hk_code hk__mpi_collective_wait(hk_mpi *m, MPI_Request *req, int op, const char *who, hk_status *st);

/* Wait for a request with no notices (a point-to-point one, or the
 * context's creation) until it completes or the deadline passes (the
 * request is left as it is: the caller cancels a receive): then the
 * context is broken and the result is DEADLINE_EXCEEDED
 * naming `peers` ("the chief (rank 0)"), through hk__mpi_p2p_timeout().
 * `status` (may be NULL) receives the request's status. */
hk_code hk__mpi_p2p_wait(hk_mpi *m, MPI_Request *req, int op, const char *peers, const char *who, MPI_Status *status,
                         hk_status *st);

/* A point-to-point wait for `peers` passed the deadline: break the
 * context, log and return DEADLINE_EXCEEDED. */
hk_code hk__mpi_p2p_timeout(hk_mpi *m, int op, const char *peers, const char *who, hk_status *st);

/* The step in progress (HK_UNSET_STEPS: unknown), for the messages. */
void hk__mpi_set_step(hk_mpi *m, int64_t step);

/* Refuse a broken context (FAILED_PRECONDITION naming why). */
hk_code hk__mpi_check_usable(const hk_mpi *m, const char *who, hk_status *st);

/* *out: a copy of base (NULL: the defaults) whose log sink writes
 * "rank R/N: " before each message through base's (unchanged when base's
 * sink is such a sink already); `out` may be `base`. m->rank and m->size
 * must be set. RESOURCE_EXHAUSTED when a record cannot be made. */
hk_code hk__mpi_log_wrap(hk_mpi *m, hk_env *out, const hk_env *base, hk_status *st);
/* Free the records, through `env` (the context's allocator). */
void hk__mpi_log_free(hk_mpi *m, const hk_env *env);

/* Set an INTERNAL status naming the MPI call and MPI's own message. */
hk_code hk__mpi_error(hk_status *st, int err, const char *call);

/* Extend crc (0 to start) with one variable's description: name, dtype,
 * shape (hk_crc32c_extend). */
uint32_t hk__mpi_describe(uint32_t crc, const hk_variable_info *info);

/* A fingerprint of an executor's variables: names, dtypes, shapes and
 * flags of those `pick` selects (all when NULL), in order. */
typedef int (*hk__mpi_var_pick)(const hk_variable_info *info, void *user);
hk_code hk__mpi_fingerprint(hk_executor *ex, hk__mpi_var_pick pick, void *user, uint32_t *out, hk_status *st);

/* An op of g whose output 0 is an empty 1-D string tensor: "ready". */
hk_code hk__mpi_nothing_report(hk_graph *g, const char *name, hk_handle *out, hk_status *st);

#endif /* HOOKED_MPI_INTERNAL_H */
