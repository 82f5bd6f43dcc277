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
  double *scalars; /* size entries: hk_mpi_average_scalar() */
  /* averaging (average.c, average_request.c, fusion.c) */
  size_t fusion_bytes;          /* the fusion threshold */
  int64_t avg_units;            /* averaging units started on this context: their tags */
  int64_t avg_inflight;         /* units started and not finished */
  int64_t avg_span;             /* units whose tags differ: the most in flight at once */
  hk_mpi_average_request *sync; /* the request of the blocking calls */
  /* The requests in flight, in start order: every wait moves all of them
   * forward, or two ranks waiting for different ones would wait for each
   * other. */
  hk_mpi_average_request *first_active, *last_active;
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
  HK__MPI_OP_CHECKPOINT,
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

/* ---- averaging (average_request.c, fusion.c) ------------------------------------ */

/* What a request does to each unit: the reduce-scatter (the owner of each
 * block gets its mean), the all-gather (every rank gets every block), or
 * both (the average). */
enum { HK__AVG_REDUCE_SCATTER = 1, HK__AVG_ALL_GATHER = 2, HK__AVG_FULL = 3 };

/* The first tag of the averaging units (the parameter server's are below;
 * the deadline's notices go on another communicator). */
#define HK__AVG_TAG_BASE 1000

/* One averaging unit: one buffer whose blocks travel between the ranks,
 * either an array averaged in place or a slice of the fusion buffer
 * holding several arrays packed in order. */
/* A full average cuts an array of more than this into units of this size
 * (fusion.c). */
#define HK__AVG_SEGMENT_BYTES ((size_t)1 << 20)

typedef struct hk__avg_unit {
  hk_dtype dtype;
  unsigned char *buf; /* the array, or the fusion buffer at fused_off */
  size_t count;       /* elements */
  size_t first_array, narrays;
  int fused;          /* packed into the fusion buffer */
  size_t fused_off;   /* bytes into the fusion buffer */
  size_t seg_off;     /* a segment's first byte in its array or fused buffer (0: the first or only one) */
  size_t scratch_off; /* bytes into the scratch: room for N blocks (average_schedule.c) */
  int tag;            /* its reduce-scatter tag; the all-gather's is one more */
  int phase;          /* the phase values in average_request.c */
  int step;           /* the step of its phase (average_schedule.c) */
} hk__avg_unit;

struct hk_mpi_average_request {
  hk_mpi *mpi;
  const char *who;                                   /* the public function, for messages */
  int mode;                                          /* HK__AVG_* */
  int active;                                        /* started and not yet finished */
  hk_mpi_average_request *prev_active, *next_active; /* the context's list */
  double t0;                                         /* its start, on the monotonic clock: the deadline */
  int64_t seq;                                       /* the context's collective number of its start */
  hk_mpi_array *arrays;
  size_t narrays, arrays_cap;
  hk__avg_unit *units;
  size_t nunits, units_cap;
  MPI_Request *reqs; /* 2 (N-1) per unit */
  size_t reqs_cap;
  unsigned char *fused, *scratch;
  size_t fused_cap, scratch_cap;
};

/* Unit k's MPI requests: 2 (N-1) slots, a step's messages from the first. */
static inline MPI_Request *hk__avg_unit_reqs(hk_mpi_average_request *r, size_t k) {
  return r->reqs + k * 2 * (size_t)(r->mpi->size - 1);
}

/* The schedule of a unit's messages and sums (average_schedule.c): each
 * phase takes hk__avg_steps() steps (log2 N when N is a power of two,
 * else 1); the post functions post unit k's messages of its phase's step
 * u->step, hk__avg_sum() adds what its reduce-scatter step brought. A
 * unit's scratch holds hk__avg_unit_scratch_elems() elements. */
int hk__avg_steps(int nranks);
size_t hk__avg_unit_scratch_elems(int nranks, size_t count);
hk_code hk__avg_post_scatter(hk_mpi_average_request *r, size_t k, hk_status *st);
void hk__avg_sum(hk_mpi_average_request *r, size_t k);
hk_code hk__avg_post_gather(hk_mpi_average_request *r, size_t k, hk_status *st);

/* Bytes of one element of an averaging dtype (F32, F64). */
size_t hk__avg_esize(hk_dtype dtype);

/* Cut the request's arrays into units (fusing what fits under the
 * context's threshold) and grow its buffers to hold them. */
hk_code hk__avg_plan(hk_mpi_average_request *r, hk_status *st);

/* Copy a fused unit's arrays into it, and its mean back into them. */
/* Copy the arrays of a fused unit into its fused buffer (at its first
 * segment: all of them), and out of it (each segment its own bytes). */
void hk__avg_pack(hk_mpi_average_request *r, const hk__avg_unit *u);
void hk__avg_unpack(hk_mpi_average_request *r, const hk__avg_unit *u);

/* A request of the context's own (the blocking calls'), and its buffers. */
hk_code hk__avg_request_create(hk_mpi_average_request **out, hk_mpi *m, hk_status *st);
void hk__avg_request_destroy(hk_mpi_average_request *r);
hk_code hk__avg_reserve(hk_mpi_average_request *r, size_t scratch_bytes, size_t fused_bytes, size_t nunits,
                        hk_status *st);

/* Refuse bad arrays before anything is sent (INVALID_ARGUMENT naming
 * "arrays[i]" when `named`). */
hk_code hk__avg_check_arrays(const hk_mpi *m, const char *who, const hk_mpi_array *arrays, size_t n, int named,
                             hk_status *st);

/* Start `arrays` on `r` in `mode`, then (finish) wait for it. */
hk_code hk__avg_start(hk_mpi_average_request *r, int mode, const char *who, const hk_mpi_array *arrays, size_t n,
                      hk_status *st);
hk_code hk__avg_finish(hk_mpi_average_request *r, hk_status *st);

/* ---- polling under the deadline (deadline.c) --------------------------------------- */

/* The system's monotonic clock, in seconds. */
double hk__mpi_now(void);

/* A wait that polls: start it, then between two looks call
 * hk__mpi_poll_pause(), which spins for a moment (from the start, or the
 * last progress the caller reported with hk__mpi_poll_moved()), then
 * sleeps between looks (doubling the pause up to a millisecond), and
 * returns 1 when the
 * wait must end: the deadline counted from `t0` passed, or (*from >= 0)
 * another rank's give-up notice arrived. */
typedef struct hk__mpi_poll {
  double t0, w0, idle;
  unsigned spins;
} hk__mpi_poll;
void hk__mpi_poll_start(hk__mpi_poll *p, double t0);
/* The wait made progress: spin again before any pause. */
void hk__mpi_poll_moved(hk__mpi_poll *p);
int hk__mpi_poll_pause(hk_mpi *m, hk__mpi_poll *p, int *from);

/* 1 when another rank's give-up notice waits (*from: its rank). */
int hk__mpi_heard_give_up(hk_mpi *m, int *from);

/* Give up collective #seq of `op`: exchange the notices, break the
 * context, and return DEADLINE_EXCEEDED with the message (logged at ERROR;
 * `first`: the rank whose notice made this one give up, or -1). */
hk_code hk__mpi_give_up(hk_mpi *m, int64_t seq, int op, const char *who, int first, hk_status *st);

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
