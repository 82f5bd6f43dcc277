/*
 * hooked::mpi — training across processes and machines over MPI (see
 * docs/distributed.md).
 *
 * An optional component: its own library (CMake target hooked::mpi,
 * pkg-config module hooked-mpi), built when MPI is found. The core library
 * never depends on MPI; everything here is written against hooked's public
 * headers only, as a third party could.
 *
 * Two ways to train, as TensorFlow users did:
 *
 *  - Synchronous data parallel (Horovod's recipe). Every rank runs the same
 *    program on its shard of the data. Rank `root` (0) is the chief: it
 *    restores or initializes, saves checkpoints and runs the chief-only
 *    hooks; the others are workers with no checkpoint directory. The
 *    broadcast hook makes every rank's variables the chief's after the
 *    chief's restore or initialization; gradients are averaged with
 *    hk_mpi_average() (host buffers) or hk_mpi_graph_average() (a graph op)
 *    in a fixed reduction order, so a run is bit-reproducible for a fixed
 *    rank count; the stop-agreement hook makes every rank stop after the
 *    same step.
 *
 *  - Asynchronous parameter server (TensorFlow's between-graph
 *    replication). The chief (rank `root`) holds the global step and the
 *    shared variables and serves them in a loop (hk_mpi_ps_serve_op()); the
 *    workers read the current parameters, compute, and push their updates
 *    without waiting for each other (hk_mpi_ps_worker_hook_new()).
 *
 * Threads: MPI must be initialized by the program (MPI_Init or
 * MPI_Init_thread, any thread level: hooked makes MPI calls only from the
 * thread that drives the session) before hk_mpi_new() and finalized after
 * hk_mpi_free(). Every function below is called from the training thread
 * unless it says otherwise.
 *
 * Errors: every function returns an hk_code and fills an optional
 * hk_status with a message naming what is wrong; an MPI error is returned
 * as HK_INTERNAL with MPI's error string (hooked sets MPI_ERRORS_RETURN on
 * its own communicator; not UNAVAILABLE, which would make a monitored
 * session recover and re-enter collectives the other ranks left). A rank that fails and exits makes Open MPI end
 * the whole job: no rank is left waiting in a collective.
 *
 * Deadlines: no call of this module waits for other ranks for ever. Every
 * collective is started non-blocking and polled against the context's
 * deadline (hk_mpi_options.collective_timeout_secs, 300 s by default):
 * a rank still waiting when it passes tells every other rank that it gives
 * up, and a rank waiting in any collective of the same context that hears
 * it gives up at once too; each then collects, for a short while, which
 * ranks are waiting where, and fails with DEADLINE_EXCEEDED and a message
 * such as "hk_mpi_average: collective #12 (average) at step 41 did not
 * complete within 3 s: rank 2 did not arrive; ranks 0, 1 waited". A rank
 * that arrives later hears it and fails the same way, at once. The
 * parameter server's waits fail likewise, naming the chief (a worker's
 * wait for its reply) or the workers still there (the chief's wait for a
 * request). The library never ends the process and never calls MPI_Abort:
 * it returns the error, and the program decides. After a deadline the
 * context is broken: the collective left behind can be neither completed
 * nor cancelled (MPI forbids it), so every later call on the context fails
 * with FAILED_PRECONDITION, and MPI_Finalize may wait for the ranks that
 * never came. A program that gets DEADLINE_EXCEEDED should therefore end
 * the job with MPI_Abort(MPI_COMM_WORLD, code), as the examples do.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_MPI_H
#define HOOKED_MPI_H

#include <mpi.h>

#include "hooked/common.h"
#include "hooked/graph.h"
#include "hooked/sys/executor.h"
#include "hooked/sys/group.h"
#include "hooked/sys/hook.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the communicator context --------------------------------------------------- */

typedef struct hk_mpi hk_mpi;

#define HK_MPI_OPTIONS_VERSION 1
typedef struct hk_mpi_options {
  uint32_t version; /**< HK_MPI_OPTIONS_VERSION */
  /** Copied; NULL: defaults. Allocations and logs of everything built on
   *  this context. */
  const hk_env *env;
  /** The ranks that train together; duplicated (MPI_Comm_dup), so hooked's
   *  messages never meet the program's. MPI_COMM_NULL (the default):
   *  MPI_COMM_WORLD. */
  MPI_Comm comm;
  int root; /**< the chief's rank in comm; default 0 */
  /** The deadline of every wait of this context for other ranks (a
   *  collective, the parameter server's replies and requests): a rank
   *  that has waited this long stops waiting, and the call fails with
   *  DEADLINE_EXCEEDED naming the ranks that did not arrive, the step and
   *  the operation (see "Deadlines" below). Seconds on the system's
   *  monotonic clock, not env's (the other ranks run in real time).
   *  HK_UNSET_SECS (the default): 300 s; +infinity: no deadline (wait as
   *  long as MPI does); otherwise > 0 and finite. */
  double collective_timeout_secs;
  /** Tensor fusion (Horovod's): hk_mpi_average_arrays() and
   *  hk_mpi_average_start() pack consecutive arrays of one dtype into
   *  fused buffers of at most this many bytes and average each fused
   *  buffer as one; an array of this size or more is averaged on its own,
   *  in place. 0 (the default): HK_MPI_DEFAULT_FUSION_BYTES; 1: no fusion
   *  (every array on its own). */
  size_t fusion_threshold_bytes;
} hk_mpi_options;
#define HK_MPI_OPTIONS_INIT \
  { HK_MPI_OPTIONS_VERSION, NULL, MPI_COMM_NULL, 0, HK_UNSET_SECS, 0 }

/** The fusion threshold when hk_mpi_options.fusion_threshold_bytes is 0:
 *  64 MiB, Horovod's default. */
#define HK_MPI_DEFAULT_FUSION_BYTES ((size_t)64 << 20)

/** The deadline when hk_mpi_options.collective_timeout_secs is unset. */
#define HK_MPI_DEFAULT_COLLECTIVE_TIMEOUT_SECS 300.0

/**
 * Initialize options to HK_MPI_OPTIONS_INIT.
 * @param version  HK_MPI_OPTIONS_VERSION, the version the program is compiled
 *                 with: only that version's fields are written (a program
 *                 compiled against version 1 has a smaller struct), and
 *                 `version` is set to it.
 * @return HK_OK; INVALID_ARGUMENT (no message: there is no status), writing
 *         nothing, for a NULL opts or a version that is 0 or above
 *         HK_MPI_OPTIONS_VERSION.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_mpi_options_init(hk_mpi_options *opts, uint32_t version);

/**
 * Create a context over a duplicate of `opts->comm`. Collective: every rank
 * of the communicator calls it.
 * @param opts  borrowed for the call; NULL: HK_MPI_OPTIONS_INIT.
 * **Ownership:** *out owned, hk_mpi_free() (before MPI_Finalize).
 * **Errors:** FAILED_PRECONDITION "MPI is not initialized (call MPI_Init
 * first)" or "MPI is already finalized"; INVALID_ARGUMENT for a bad
 * version or env, or a root outside 0..size-1 (named with the size);
 * INTERNAL when MPI_Comm_dup fails; RESOURCE_EXHAUSTED.
 * **Allocates:** yes.
 * **Threads:** the training thread.
 */
HK_API hk_code hk_mpi_new(hk_mpi **out, const hk_mpi_options *opts, hk_status *status);
/** Free the context and its communicator (collective: every rank calls
 *  it), before MPI_Finalize. NULL is a no-op. **Threads:** the training
 *  thread. **Errors:** none (after MPI_Finalize only memory is freed).
 *  **Allocates:** no. */
HK_API void hk_mpi_free(hk_mpi *mpi);

/** This process's rank in the context's communicator; -1 for NULL. **Threads:** any. **Allocates:** no. */
HK_API int hk_mpi_rank(const hk_mpi *mpi);
/** The number of ranks; 0 for NULL. **Threads:** any. **Allocates:** no. */
HK_API int hk_mpi_size(const hk_mpi *mpi);
/** The chief's rank (options.root); -1 for NULL. **Threads:** any. **Allocates:** no. */
HK_API int hk_mpi_root(const hk_mpi *mpi);
/** 1 on the chief (rank == root), else 0 (also for NULL): what
 *  MonitoredTrainingSession's is_chief takes.
 * **Threads:** any. **Allocates:** no.
 */
HK_API int hk_mpi_is_chief(const hk_mpi *mpi);
/** The context's own communicator (the duplicate); MPI_COMM_NULL for NULL.
 *  Borrowed: valid until hk_mpi_free().
 * **Threads:** any. **Allocates:** no.
 */
HK_API MPI_Comm hk_mpi_comm(const hk_mpi *mpi);

/* ---- log lines: which rank wrote them ------------------------------------------ */

/**
 * An env whose log lines say which rank wrote them: a copy of `base`
 * (NULL: the defaults of HK_ENV_INIT) whose log sink writes each message as
 * "rank R/N: <message>" through base's own sink (hooked's stderr sink when
 * it has none), with the same level; R is this process's rank in the
 * context, N the number of ranks. A message of several lines gets the
 * prefix on each (up to eight; a longer one is cut at a line's end). Give it to everything of the rank that
 * logs — the session (MonitoredTrainingSession's or the host loop's env,
 * which its built-in hooks, checkpoint saver and summary writers take),
 * hooks made with an env of their own, and the program's own hk_env_log()
 * calls — and every line the rank logs names it, on any thread (the
 * saver's too). An env whose sink is such a sink already is copied
 * unchanged: no line gets two prefixes. The context's own lines (the
 * deadline's messages, the broadcast hook's, the stop hook's, the
 * parameter server's) carry the prefix without this call: hk_mpi_new()
 * wraps options.env the same way.
 * @param out   receives the env; may be `base` itself.
 * @param base  borrowed for the call; NULL: the defaults.
 * **Ownership:** the prefixed sink's state belongs to the context: *out
 * (and every copy of it an object keeps) may log until hk_mpi_free(), so
 * free the session and hooks that use it first.
 * **Errors:** INVALID_ARGUMENT for a NULL out or mpi or a bad base (named);
 * RESOURCE_EXHAUSTED.
 * **Allocates:** a small record, kept until hk_mpi_free(), the first time a
 * base sink (function and user) is wrapped; none after that, and a logged
 * line allocates nothing.
 * **Threads:** the call: the training thread; the sink: any thread, as far
 * as base's sink allows.
 */
HK_API hk_code hk_mpi_log_env(hk_env *out, hk_mpi *mpi, const hk_env *base, hk_status *status);

/* ---- deterministic averaging ------------------------------------------------ */

/*
 * How every average is computed. A buffer of `count` elements is cut into
 * N blocks (hk_mpi_block()). Reduce-scatter: each block's sum ends on one
 * rank, which divides it by N; all-gather: each finished block is sent to
 * every rank. Both are point-to-point messages, and every addition is
 * hooked's, in an order fixed by the rank count:
 *
 *  - N a power of two (2, 4, 8, ...): halving. Each phase takes log2 N
 *    steps; at step j rank r exchanges half of the blocks it holds with
 *    rank r XOR 2^j and adds the partner's partial sums to its own, the
 *    lower ranks' on the left. Each element's sum is the tree of halves:
 *    ((x0 + x1) + (x2 + x3)) at 4 ranks, whichever rank adds it.
 *  - Any other N: pairwise. Rank r owns block r; every rank sends its copy
 *    of block r to rank r (at step k to r+k, from r-k, mod N), which adds
 *    the N copies in rank order — rank 0's value, plus rank 1's, ... —
 *    then sends the finished block to every other rank.
 *
 * Either way each rank sends and receives 2 (N-1)/N of the buffer — a ring
 * all-reduce's bytes — and MPI only moves bytes: the result's bits depend
 * on the rank count alone, not on timing, message sizes or the MPI library.
 * A job killed and restarted with the same rank count resumes bit-exactly.
 *
 * Every average is collective: every rank makes the same calls, in the same
 * order, with the same dtypes and counts. Every wait for other ranks is
 * under the context's deadline (see "Deadlines" above).
 */

/**
 * The block partition of every average: rank `rank` of `nranks` owns the
 * elements [*first, *first + *len) of a buffer of `count`. Blocks are
 * consecutive, in rank order: each holds count / nranks elements, and the
 * first count % nranks hold one more. A ZeRO-1 trainer keeps the optimizer
 * state of its block only (see hk_mpi_reduce_scatter_average()); a restart
 * on another rank count re-cuts the blocks with the new `nranks`. It is
 * hk_group_block() of hooked/sys/group.h, the blocks of a partitioned
 * variable in a sharded checkpoint (hk_saver_options.partitioned_list).
 * @param first, len  outputs; untouched on an error.
 * **Errors:** INVALID_ARGUMENT for a NULL output, nranks < 1 or a rank
 * outside 0..nranks-1 (named), in hk_group_block()'s words.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_mpi_block(size_t *first, size_t *len, size_t count, int nranks, int rank, hk_status *status);

/**
 * Average `count` elements of `data` across the ranks, in place: every rank
 * passes its buffer and receives the element-wise mean, the same bits on
 * every rank, summed in the order above. Cost: each rank sends and
 * receives 2 (N-1)/N of the buffer, in 2 log2 N messages per segment at a
 * power of two N, 2 (N-1) at most otherwise: a buffer of more than 1 MiB
 * goes in segments of 1 MiB, all started at once, each moved on as its
 * step's messages arrive, a later one held while an earlier one is in its
 * reduce-scatter (the same sums: the same bits).
 * @param dtype  HK_DTYPE_F32 or HK_DTYPE_F64.
 * @param data   borrowed for the call.
 * **Errors:** INVALID_ARGUMENT for a NULL mpi, a NULL data with count > 0,
 * another dtype (named), or blocks of more than INT_MAX elements;
 * DEADLINE_EXCEEDED; FAILED_PRECONDITION on a broken context; INTERNAL for
 * an MPI error; RESOURCE_EXHAUSTED when the scratch cannot grow.
 * **Allocates:** the first call for a larger buffer than before grows the
 * context's scratch (hk_mpi_reserve() does it up front); later calls of
 * that size or smaller allocate nothing.
 * **Threads:** the training thread.
 */
HK_API hk_code hk_mpi_average(hk_mpi *mpi, hk_dtype dtype, void *data, size_t count, hk_status *status);

/** One array to average: `count` elements of `dtype` (F32 or F64) at
 *  `data`, averaged in place. */
typedef struct hk_mpi_array {
  hk_dtype dtype;
  void *data;
  size_t count;
} hk_mpi_array;

/**
 * Average several arrays at once, with tensor fusion: consecutive arrays
 * of one dtype are packed, in order, into fused buffers of at most the
 * context's fusion threshold (hk_mpi_options.fusion_threshold_bytes), and
 * each fused buffer is averaged as one (in segments of 1 MiB, as
 * hk_mpi_average() averages a large buffer: 2 (N-1) messages at most per
 * segment, not that many per array); an array of the threshold's size or more, or alone in
 * its fused buffer, is averaged in place. Every element's mean is the same
 * bits hk_mpi_average() gives it (an element's sum does not depend on the
 * buffer it travels in).
 * @param arrays  `n` arrays, borrowed for the call; their data borrowed
 *                for the call, and must not overlap.
 * **Errors:** as hk_mpi_average(), naming the array ("arrays[3]").
 * **Allocates:** the first call with more arrays or bytes than before
 * grows the context's buffers; later calls of those sizes allocate
 * nothing.
 * **Threads:** the training thread.
 */
HK_API hk_code hk_mpi_average_arrays(hk_mpi *mpi, const hk_mpi_array *arrays, size_t n, hk_status *status);

/** Grow the scratch of hk_mpi_average() for buffers of up to `bytes` (the
 *  size of the largest buffer the program will average), and the fusion
 *  buffer of hk_mpi_average_arrays() for up to that many bytes (at most the
 *  fusion threshold), so the steps that follow allocate nothing. Not
 *  collective. **Errors:** INVALID_ARGUMENT, RESOURCE_EXHAUSTED.
 *  **Threads:** the training thread. **Allocates:** yes, when a buffer
 *  grows. */
HK_API hk_code hk_mpi_reserve(hk_mpi *mpi, size_t bytes, hk_status *status);

/* ---- overlap: averaging in flight while the program computes --------------------- */

/*
 * DDP's gradient buckets: a trainer starts averaging a layer's gradients as
 * soon as they are computed, computes the next layer's meanwhile, and
 * finishes every average before the update. A request holds one average in
 * flight (one bucket: any number of arrays, fused as
 * hk_mpi_average_arrays() fuses them) and the buffers it needs; a program
 * keeps one request per bucket and reuses them every step.
 *
 * Order: every rank starts the same averages in the same order (with the
 * same dtypes and counts); several may be in flight at once; each started
 * average is finished once, with hk_mpi_average_finish(), in any order.
 * The blocking calls (hk_mpi_average() and the others) may run while
 * requests are in flight: they count in the order too.
 *
 * Progress: most MPI transports move a large message only while the
 * program is inside MPI. Call hk_mpi_average_test() now and then during
 * the computation (after each layer, say): each call moves the averages
 * in flight forward, sums a block whose copies have all arrived and sends
 * it on.
 *
 * Deadline: the context's deadline counts from the start: a request still
 * incomplete that long after its start (in hk_mpi_average_test() or
 * hk_mpi_average_finish()) fails with DEADLINE_EXCEEDED naming the ranks
 * that did not arrive, and breaks the context as any collective's
 * deadline does. Set the deadline above the longest step.
 *
 * Ownership: the arrays' data are borrowed from the start until
 * hk_mpi_average_finish() returns: the program neither reads nor writes
 * them in between (MPI may read and write them at any time); the arrays
 * list itself is copied at the start.
 *
 * Threads: the training thread, like every call of this module.
 */
typedef struct hk_mpi_average_request hk_mpi_average_request;

/**
 * Create a request on `mpi`.
 * @param mpi  borrowed; must outlive the request.
 * **Ownership:** *out owned, hk_mpi_average_request_free().
 * **Errors:** INVALID_ARGUMENT for NULL arguments; RESOURCE_EXHAUSTED.
 * **Allocates:** yes. **Threads:** the training thread.
 */
HK_API hk_code hk_mpi_average_request_new(hk_mpi_average_request **out, hk_mpi *mpi, hk_status *status);

/** Free a request. One still in flight (never finished, or left behind by
 *  a deadline) has its MPI requests cancelled and freed first: free it only
 *  when the job ends (its averages are lost, the other ranks' wait for
 *  them). NULL is a no-op. Before hk_mpi_free() of its context.
 *  **Errors:** none. **Allocates:** no. **Threads:** the training thread. */
HK_API void hk_mpi_average_request_free(hk_mpi_average_request *req);

/**
 * Start averaging `arrays` (fused as hk_mpi_average_arrays() fuses them):
 * the first step's messages of every buffer (or segment) are posted — at
 * a power of two N, one exchange with one partner; otherwise this rank's
 * copies of the other ranks' blocks sent and theirs of its own awaited.
 * Returns at once; hk_mpi_average_test() and hk_mpi_average_finish()
 * post the later steps.
 * @param arrays  `n` arrays, copied; their data borrowed until
 *                hk_mpi_average_finish() returns.
 * **Errors:** as hk_mpi_average_arrays(); FAILED_PRECONDITION when `req`
 * is already in flight ("finish it first") or the context is broken;
 * RESOURCE_EXHAUSTED when more fused buffers or arrays would be in flight
 * on the context at once than the MPI library's tags tell apart (at least
 * 15,883; about 10^9 with Open MPI). A refused start sends nothing: the
 * request stays idle.
 * **Allocates:** the first start with more arrays or bytes than the
 * request had before grows its buffers; later starts of those sizes
 * allocate nothing.
 * **Threads:** the training thread.
 */
HK_API hk_code hk_mpi_average_start(hk_mpi_average_request *req, const hk_mpi_array *arrays, size_t n,
                                    hk_status *status);

/**
 * Move the average forward without waiting: sum and send what has arrived.
 * *done becomes 1 when the average is complete (the arrays hold the means;
 * hk_mpi_average_finish() then returns at once), else 0.
 * **Errors:** FAILED_PRECONDITION for a request not in flight;
 * DEADLINE_EXCEEDED (above); INTERNAL for an MPI error. After an error the
 * request is still in flight: end the job.
 * **Allocates:** no. **Threads:** the training thread.
 */
HK_API hk_code hk_mpi_average_test(hk_mpi_average_request *req, int *done, hk_status *status);

/**
 * Wait, under the deadline, until the average is complete: every array
 * holds its element-wise mean, the same bits hk_mpi_average() gives. The
 * request is then idle: start it again next step.
 * **Errors:** FAILED_PRECONDITION for a request not in flight;
 * DEADLINE_EXCEEDED (above); INTERNAL for an MPI error.
 * **Allocates:** no. **Threads:** the training thread.
 */
HK_API hk_code hk_mpi_average_finish(hk_mpi_average_request *req, hk_status *status);

/* ---- the two halves, for partitioned optimizer state (ZeRO-1) --------------------- */

/*
 * A ZeRO-1 trainer (llm.c's, DeepSpeed's stage 1) keeps the optimizer
 * state (AdamW's m and v) of its own block only (hk_mpi_block()): each step
 * it reduce-scatters the gradients, updates the parameters of its block
 * with its block of the mean gradient, and all-gathers the parameters.
 * The two calls below are exactly the two halves of hk_mpi_average(): the
 * reduce-scatter's block holds the bits hk_mpi_average() would give it,
 * and the pair moves the bytes of one average. Both are collective, in
 * place, and allocate and fail as hk_mpi_average() does.
 */

/**
 * Reduce-scatter: this rank's block of `data` (hk_mpi_block() of `count`
 * for this rank) becomes the element-wise mean of every rank's block, the
 * same bits hk_mpi_average() would give; the other elements are left as
 * they were. Each rank sends and receives (N-1)/N of the buffer.
 * **Errors:** as hk_mpi_average(). **Allocates:** as hk_mpi_average().
 * **Threads:** the training thread.
 */
HK_API hk_code hk_mpi_reduce_scatter_average(hk_mpi *mpi, hk_dtype dtype, void *data, size_t count, hk_status *status);

/**
 * All-gather: every rank's block of `data` (hk_mpi_block()) is sent to
 * every other rank, into the same place of their `data`; this rank's block
 * is left as it was. Each rank sends and receives (N-1)/N of the buffer.
 * **Errors:** as hk_mpi_average(). **Allocates:** no.
 * **Threads:** the training thread.
 */
HK_API hk_code hk_mpi_allgather_blocks(hk_mpi *mpi, hk_dtype dtype, void *data, size_t count, hk_status *status);

/**
 * Metric averaging: replace `*value` by its mean across the ranks (the same
 * fixed order as hk_mpi_average()), e.g. the loss the chief logs or writes
 * as a summary. Collective. **Errors:** as hk_mpi_average().
 * **Allocates:** no.
 * **Threads:** the training thread.
 */
HK_API hk_code hk_mpi_average_scalar(hk_mpi *mpi, double *value, hk_status *status);

/**
 * Gradient averaging as a graph op: output 0 of the new op `name` is the
 * cross-rank mean of `input`, a tensor of `dtype` (F32 or F64) and the
 * static shape `rank`/`dims` (a graph does not tell its tensors' shapes),
 * computed by hk_mpi_average() when the op runs. Every rank must run it the
 * same number of times (it is a collective): put it on the path of the
 * train op that every rank runs each step.
 * @param mpi  borrowed; must outlive the graph.
 * **Errors:** INVALID_ARGUMENT for a NULL argument, another dtype, a bad
 * rank or a negative dimension; the graph's errors (a taken name, ...). A
 * run whose input is not of the declared dtype and shape fails with
 * INVALID_ARGUMENT naming both.
 * **Allocates:** at build time (the scratch is reserved); a run allocates
 * nothing.
 * **Threads:** the graph's owner's.
 */
HK_API hk_code hk_mpi_graph_average(hk_graph *g, hk_handle *out, const char *name, hk_handle input, hk_dtype dtype,
                                    int32_t rank, const int64_t *dims, hk_mpi *mpi, hk_status *status);

/* ---- synchronous data parallel: hooks ------------------------------ */

/**
 * BroadcastGlobalVariablesHook: in after_create_session (after the chief's
 * restore or initialization, before the first step) every variable of the
 * session's executor — the global step included, for the graph executor
 * and the host loop alike — is sent from the chief to every rank, in
 * variable order, in place through hk_raw_session_variable_storage().
 * Variables marked HK_VAR_LOCAL (the host loop's HK_LOOP_NO_CHECKPOINT
 * arrays) and those whose storage the executor does not expose (the host
 * loop's opaque states, such as a data iterator) stay per rank.
 * First it checks that every rank has the same variables (names, dtypes
 * and shapes, by a CRC-32C of their description): a rank whose model
 * differs fails with FAILED_PRECONDITION naming its rank and its first
 * variable; the chief fails too, so the job ends instead of training
 * different models.
 * Place it first among the hooks (MonitoredTrainingSession's `hooks`): the
 * hooks after it, StopAtStep's start check for one, then see the chief's
 * global step. With the host loop it is first among the program's hooks,
 * which run after the loop's own: the loop's StopAtStep (num_steps,
 * last_step) decides at the start on the rank's own step, so give workers
 * no stop condition of the loop's and let the stop hook carry the chief's
 * (its start-time agreement stops every rank when a chief restored at its
 * last step stops before any step).
 * Collective in after_create_session.
 * @param mpi  borrowed; must outlive the hook.
 * **Ownership:** *out owned, hk_hook_free().
 * **Errors:** INVALID_ARGUMENT for NULL arguments; RESOURCE_EXHAUSTED.
 * **Allocates:** at creation and in after_create_session; not per step.
 * **Threads:** the training thread.
 */
HK_API hk_code hk_mpi_broadcast_hook_new(hk_hook **out, hk_mpi *mpi, hk_status *status);

/**
 * The worker role of synchronous training on the graph executor: fills the
 * scaffold fields of a worker (MonitoredTrainingSession with is_chief 0)
 * so that it initializes its own copy of every global variable as its
 * local init — the values the broadcast hook then replaces by the chief's —
 * and is ready once they are initialized: `local_init_op` initializes every
 * global variable and runs the default local init (local variables),
 * `ready_for_local_init_op` reports nothing, `ready_op` is
 * HK_NO_HANDLE (the default: every variable initialized). A worker never
 * restores a checkpoint.
 * **Errors:** INVALID_ARGUMENT for NULL arguments or on the chief; the
 * graph's errors.
 * **Threads:** the graph's owner's. **Allocates:** yes (the graph grows).
 */
HK_API hk_code hk_mpi_sync_worker_ops(hk_mpi *mpi, hk_graph *g, hk_handle *ready_op, hk_handle *ready_for_local_init_op,
                                      hk_handle *local_init_op, hk_status *status);

#define HK_MPI_STOP_OPTIONS_VERSION 1
typedef struct hk_mpi_stop_options {
  uint32_t version;  /**< HK_MPI_STOP_OPTIONS_VERSION */
  const hk_env *env; /**< NULL: the session's */
  /** Default 1: the hook installs its own handlers for stop_signals when it
   *  is created — so create it before a long start-up (loading data,
   *  building the model): a signal then is a stop agreed on at the
   *  session's start — and again in begin() after an end() (they are
   *  removed in end() and when it is freed): a signal delivered to any
   *  rank — one rank alone, or all of them by mpirun (which SIGKILLs ranks
   *  still running 1 s later unless its odls_base_sigkill_timeout is raised:
   *  signal the ranks, not mpirun, when the final checkpoint takes longer) —
   *  is agreed on at the next step's end and stops every rank after that
   *  same step, each with the stop reason HK_STOP_SIGNAL naming the signal
   *  (hk_session_stop_reason()); a second signal acts as without hooked.
   *  hooked's own signal helper (hk_signal_install()) must then not be
   *  installed: it would stop the signalled rank alone. 0: signals are left
   *  alone. */
  int handle_signals;
  /** The signals that stop every rank with handle_signals: an OR of
   *  hk_signal_set (hooked/coordinator.h), the set hk_signal_install_set()
   *  and the host loop's stop_signals take. 0 (the default):
   *  HK_SIGNAL_DEFAULT_SET (SIGINT, SIGTERM). Add HK_SIGNAL_USR1 for the
   *  warning a batch system sends before the time limit (Slurm's
   *  `--signal=USR1@60`): the job then ends with its final checkpoint
   *  instead of being killed at the limit. */
  unsigned stop_signals;
} hk_mpi_stop_options;
#define HK_MPI_STOP_OPTIONS_INIT \
  { HK_MPI_STOP_OPTIONS_VERSION, NULL, 1, 0 }

/**
 * Initialize options to HK_MPI_STOP_OPTIONS_INIT.
 * @param version  HK_MPI_STOP_OPTIONS_VERSION, the version the program is compiled with.
 * @return HK_OK; INVALID_ARGUMENT (no message: there is no status), writing
 *         nothing, for a NULL opts or a version that is 0 or above
 *         HK_MPI_STOP_OPTIONS_VERSION.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_mpi_stop_options_init(hk_mpi_stop_options *opts, uint32_t version);

/**
 * Stop agreement: in after_run of every step each rank contributes whether
 * it wants to stop — a hook before this one requested a stop in this run
 * (StopAtStep, a NaN guard in stop mode, early stopping), one of its stop
 * signals arrived (handle_signals), or hk_mpi_stop_hook_request() was called — and every
 * rank learns whether any rank did; if so, every rank requests a stop in
 * that same after_run, so all ranks stop after the same step and the chief
 * writes the final checkpoint at its end. The same agreement runs once in
 * after_create_session: a stop requested at creation on any rank (a hook
 * before this one called hk_creation_context_request_stop(), such as the
 * host loop's StopAtStep on a chief restored at its last step, decided
 * before the broadcast gave the workers that step) stops every rank before
 * its first step, so no rank enters a step's collectives alone.
 * Cost: one MPI_Allreduce of two ints (MAXLOC) per step, latency-bound (the
 * bench prints it next to the gradient average), and one at each session
 * creation; no other collective.
 * Place it LAST among the hooks, so it sees every earlier hook's request.
 * A stop requested any other way (hk_coordinator_request_stop(),
 * hk_loop_request_stop() from another thread) stops one rank alone: use
 * hk_mpi_stop_hook_request() instead.
 * @param mpi   borrowed; must outlive the hook.
 * @param opts  borrowed for the call; NULL: HK_MPI_STOP_OPTIONS_INIT.
 * **Ownership:** *out owned, hk_hook_free().
 * **Errors:** INVALID_ARGUMENT for NULL arguments, a bad version or env,
 * stop_signals with bits outside hk_signal_set or given with
 * handle_signals 0; RESOURCE_EXHAUSTED. begin() fails with FAILED_PRECONDITION when
 * handle_signals is set and another hooked hook of this kind already
 * handles signals in this process (the handlers then stay the other's
 * from creation on), or hooked's signal helper is installed.
 * **Allocates:** at creation only.
 * **Threads:** the training thread.
 */
HK_API hk_code hk_mpi_stop_hook_new(hk_hook **out, hk_mpi *mpi, const hk_mpi_stop_options *opts, hk_status *status);

/** Ask the stop hook to stop every rank after the current or next step.
 *  **Threads:** any; lock-free. NULL or another kind of hook: no-op.
 * **Allocates:** no.
 */
HK_API void hk_mpi_stop_hook_request(hk_hook *stop_hook);

/* ---- asynchronous parameter server ---------------------------------------- */

/*
 * The shared state: the global step and every F32 or F64 variable of the
 * chief's executor that is not HK_VAR_LOCAL, in variable order (the
 * workers' executors must have the same ones, checked at the first pull).
 * A worker's update is the difference its step made to its copy of them
 * (new - pulled); the chief adds it and increments the global step, one
 * update per global step, so every update is applied whole between two
 * others and a checkpoint the chief writes between two steps holds the
 * shared variables at one global step.
 */
typedef struct hk_mpi_ps hk_mpi_ps;

/**
 * Create the parameter-server endpoint of this rank: the server on the
 * chief, a client on a worker.
 * @param mpi  borrowed; must outlive the endpoint.
 * **Ownership:** *out owned, hk_mpi_ps_free().
 * **Errors:** INVALID_ARGUMENT for NULL arguments or a communicator of one
 * rank (a server needs a worker); RESOURCE_EXHAUSTED.
 * **Threads:** the training thread. **Allocates:** yes.
 */
HK_API hk_code hk_mpi_ps_new(hk_mpi_ps **out, hk_mpi *mpi, hk_status *status);
/** Free the endpoint (not collective; a pull still pending is cancelled).
 *  Free it after the sessions that use it and before hk_mpi_free() of its
 *  context. NULL is a no-op. **Threads:** the training thread.
 * **Allocates:** no.
 */
HK_API void hk_mpi_ps_free(hk_mpi_ps *ps);

/**
 * Chief: an op of `g` that serves the workers until it has applied one
 * update (then it returns: one run is one global step, so StopAtStep, the
 * checkpoint saver and every chief hook see the shared global step move).
 * While it waits it answers pulls and global-step reads at once. It mutates
 * the shared variables and the global step of `g`. A run returns
 * OUT_OF_RANGE "every worker has finished" once every worker has left, and
 * CANCELLED when a signal arrives or a stop was requested (the session
 * stops cleanly). Build the chief's train op from it.
 * @param ps  borrowed; must outlive the graph.
 * **Errors:** INVALID_ARGUMENT for NULL arguments, on a worker, or for a
 * graph without a global step; the graph's errors.
 * **Threads:** the graph's owner's. **Allocates:** yes (the graph grows).
 */
HK_API hk_code hk_mpi_ps_serve_op(hk_handle *out, hk_mpi_ps *ps, hk_graph *g, const char *name, hk_status *status);

/**
 * Chief: the hook that ends the service. It is a chief-only hook
 * (MonitoredTrainingSession's `chief_only_hooks`): in after_run it turns a
 * worker's stop request into the chief's; in end(), before the
 * checkpoint saver writes the final checkpoint, it answers every worker
 * still there with "stop" and waits until each has left (updates arriving
 * then are not applied), so the final checkpoint is the state at the
 * chief's last step and no worker is left waiting.
 * **Ownership:** *out owned, hk_hook_free(). **Errors:** INVALID_ARGUMENT
 * for NULL arguments or on a worker.
 * **Threads:** the training thread. **Allocates:** yes.
 */
HK_API hk_code hk_mpi_ps_chief_hook_new(hk_hook **out, hk_mpi_ps *ps, hk_status *status);

/**
 * Worker: the ready check of the worker role. Fills the three
 * scaffold fields so that a worker session (MonitoredTrainingSession with
 * is_chief 0) waits, interruptibly and within max_wait_secs, until the
 * chief has initialized or restored the model: `ready_op` asks the chief,
 * and is ready when the chief has answered with the shared variables and
 * global step, which it writes into the worker's variables; until then it
 * reports "model (not yet served by the chief)". `ready_for_local_init_op`
 * reports nothing (a worker's local init needs nothing from the chief) and
 * `local_init_op` is a no-op.
 * **Errors:** INVALID_ARGUMENT for NULL arguments or on the chief; the
 * graph's errors.
 * **Threads:** the graph's owner's. **Allocates:** yes (the graph grows).
 */
HK_API hk_code hk_mpi_ps_worker_ready_ops(hk_mpi_ps *ps, hk_graph *g, hk_handle *ready_op,
                                          hk_handle *ready_for_local_init_op, hk_handle *local_init_op,
                                          hk_status *status);

/**
 * Worker: an executor that forwards everything to `inner` (the worker's
 * graph executor) except reads of the global step, which it answers with
 * the chief's shared global step: GlobalStepWaiterHook's wait, StopAtStep's
 * re-read and every hook see the shared step. Give it to the worker's
 * session in place of `inner`.
 * **Ownership:** *out owned, hk_executor_free(); `inner` borrowed and must
 * outlive it. **Errors:** INVALID_ARGUMENT for NULL arguments or on the
 * chief.
 * **Threads:** the training thread. **Allocates:** yes.
 */
HK_API hk_code hk_mpi_ps_worker_executor_new(hk_executor **out, hk_mpi_ps *ps, hk_executor *inner, hk_status *status);

/**
 * Worker: the hook that pushes. In after_run, after the step changed the
 * worker's copy of the shared variables, it sends the difference to the
 * chief and receives the shared variables and global step as they are
 * after its update, into the worker's variables. When the chief answers
 * "stop", it requests a stop; in end() it tells the chief it leaves. A
 * stop this worker requests (a signal, StopAtStep) is sent with its next
 * update, or at its end, and stops the chief and so every worker.
 * Place it first among the worker's hooks.
 * **Ownership:** *out owned, hk_hook_free(). **Errors:** INVALID_ARGUMENT
 * for NULL arguments or on the chief. **Allocates:** at creation and at
 * the first pull; not per step.
 * **Threads:** the training thread.
 */
HK_API hk_code hk_mpi_ps_worker_hook_new(hk_hook **out, hk_mpi_ps *ps, hk_status *status);

/** Number of updates the chief applied, or of this worker's updates the
 *  chief applied (a push answered "stop" is not); 0 for NULL.
 *  **Threads:** the training thread.
 * **Allocates:** no.
 */
HK_API int64_t hk_mpi_ps_updates(const hk_mpi_ps *ps);

/* ---- sharded checkpoints ------------------------------------------------------------ */

/**
 * The group of a context's ranks (hooked/sys/group.h), for a Saver that
 * writes sharded checkpoints (hk_saver_options.group = hk_mpi_group(),
 * group_user = the context): every rank writes its shard, the chief
 * commits, and a job resumes with another rank count. Group rank 0 is the
 * context's root (the chief); rank g is the communicator rank g places
 * after it. Every collective waits against the context's deadline
 * (collective_timeout_secs), failing with DEADLINE_EXCEEDED naming "a
 * sharded checkpoint's exchange" and the ranks that did not arrive; the
 * context is then broken, as after any deadline.
 * The Saver calls the group from the thread that saves: with the
 * asynchronous checkpoint hook that is its writer thread, beside the
 * training thread's collectives, which needs MPI_THREAD_MULTIPLE; use the
 * synchronous checkpoint hook otherwise.
 * @return a static vtable; its user pointer is the hk_mpi (borrowed: it
 * must outlive the Saver).
 * **Threads:** any. **Errors:** none. **Allocates:** no (its all_gather
 * allocates size * len bytes per call).
 */
HK_API const hk_group_vtable *hk_mpi_group(void);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_MPI_H */
