/*
 * hooked — the embedded default executor: a small dataflow graph of named
 * variables, placeholders, constants and ops with C kernels.
 *
 * Build a graph, hand hk_graph_executor(g) to a session, and the session
 * finalizes it. Names are resolved to handles once; a run executes exactly
 * the ops its fetches and targets need, each once, in dependency order.
 * A raw session caches the plans of its last 8 distinct
 * (feed, fetch, target) handle lists: a run whose lists were seen before,
 * on a graph that has not grown since, allocates nothing.
 *
 * Thread-safety: a graph and its raw sessions are used from one thread at a
 * time, except that hk_raw_session_read_variable() may be called from another
 * thread while no run is in progress on that session.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_GRAPH_H
#define HOOKED_GRAPH_H

#include "hooked/common.h"
#include "hooked/tensor.h"
#include "hooked/sys/executor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hk_graph hk_graph;

#define HK_GRAPH_OPTIONS_VERSION 1
typedef struct hk_graph_options {
  uint32_t version;  /**< HK_GRAPH_OPTIONS_VERSION */
  const hk_env *env; /**< copied; NULL for defaults */
} hk_graph_options;
#define HK_GRAPH_OPTIONS_INIT \
  { HK_GRAPH_OPTIONS_VERSION, NULL }

/**
 * Initialize options to HK_GRAPH_OPTIONS_INIT.
 * @param version  HK_GRAPH_OPTIONS_VERSION, the version the program is compiled with.
 * @return HK_OK; INVALID_ARGUMENT (no message: there is no status), writing
 *         nothing, for a NULL opts or a version that is 0 or above
 *         HK_GRAPH_OPTIONS_VERSION.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_graph_options_init(hk_graph_options *opts, uint32_t version);

/**
 * Create an empty graph and its executor.
 * @param out   receives the graph; NULL on failure.
 * @param opts  borrowed for the call; NULL for defaults. Its version must be
 *              HK_GRAPH_OPTIONS_VERSION.
 * **Ownership:** *out owned, hk_graph_free().
 * **Errors:** INVALID_ARGUMENT (NULL out, wrong version, bad env);
 * RESOURCE_EXHAUSTED.
 * **Threads:** any. **Allocates:** yes.
 */
HK_API hk_code hk_graph_new(hk_graph **out, const hk_graph_options *opts, hk_status *status);
/**
 * Free the graph and its executor. Every raw session and session using it
 * must be freed first.
 * @param g  consumed; NULL is a no-op.
 * **Threads:** the owner's. **Allocates:** no.
 */
HK_API void hk_graph_free(hk_graph *g);
/**
 * @return the graph's executor, NULL for NULL.
 * **Ownership:** borrowed, owned by the graph (never hk_executor_free it);
 * valid until hk_graph_free().
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_executor *hk_graph_executor(hk_graph *g);
/**
 * Finalize: hk_executor_finalize(hk_graph_executor(g)). Idempotent; a
 * session normally does this through its Scaffold.
 * **Errors:** INVALID_ARGUMENT for a NULL g.
 * **Threads:** the owner's. **Allocates:** no.
 */
HK_API hk_code hk_graph_finalize(hk_graph *g, hk_status *status);

/*
 * Builders. Every builder below sets its output handle to HK_NO_HANDLE
 * first and fills it on success only; a failed builder leaves the graph
 * unchanged. It fails with FAILED_PRECONDITION "Graph is finalized and
 * cannot be modified." after finalization, with ALREADY_EXISTS when the
 * name is taken, with RESOURCE_EXHAUSTED when memory runs out, and with
 * INVALID_ARGUMENT naming the bad argument (a NULL pointer, a handle that is
 * not of this graph, a bad dtype or shape). Names are 1..255 bytes of
 * [A-Za-z0-9_./-] and are copied. Op names double as tensor names: output k
 * of op "x" is "x:k" ("x" alone means "x:0"). Builders may be used while
 * raw sessions are open (they see the new ops at their next call). Builders
 * run on the graph owner's thread, one at a time, and allocate.
 */

/* ---- variables ---------------------------------------------------------- */

typedef enum hk_init_kind {
  HK_INIT_NONE = 0, /**< no initializer: stays uninitialized until assigned
                         (external variables: counts as initialized) */
  HK_INIT_ZEROS = 1,
  HK_INIT_CONSTANT = 2, /**< every element = value */
  HK_INIT_UNIFORM = 3,  /**< U[minval, maxval) */
  HK_INIT_NORMAL = 4    /**< N(mean, stddev) */
} hk_init_kind;

/**
 * An initializer. Random initializers use hooked's own generator
 * (counter-based, seeded by `seed`), so values are bit-identical across
 * platforms and compilers for f32/f64 uniform; the normal initializer is
 * identical wherever libm's log/sqrt/cos are correctly rounded.
 */
typedef struct hk_initializer {
  hk_init_kind kind;
  double value;          /**< CONSTANT */
  double minval, maxval; /**< UNIFORM, minval < maxval */
  double mean, stddev;   /**< NORMAL, stddev >= 0 */
  uint64_t seed;         /**< UNIFORM/NORMAL */
} hk_initializer;

#define HK_VARIABLE_DEF_VERSION 1
typedef struct hk_variable_def {
  uint32_t version; /**< HK_VARIABLE_DEF_VERSION */
  const char *name; /**< copied */
  hk_dtype dtype;   /**< not STRING */
  int32_t rank;
  const int64_t *dims; /**< copied; rank entries, each >= 0 */
  hk_initializer init;
  uint32_t flags; /**< HK_VAR_LOCAL, HK_VAR_TRAINABLE, HK_VAR_EXTERNAL, HK_VAR_OPTIONAL,
                       HK_VAR_NON_FINITE_OK */
  /** Optional host-owned storage of exactly the variable's byte size:
   *  borrowed for the graph's life, used in place (zero copy). Reads, kernels
   *  and assignments work on it directly. NULL: the graph owns storage. */
  void *external_data;
} hk_variable_def;
#define HK_VARIABLE_DEF_INIT \
  { HK_VARIABLE_DEF_VERSION, NULL, HK_DTYPE_INVALID, 0, NULL, {HK_INIT_NONE, 0, 0, 0, 0, 0, 0}, HK_VAR_TRAINABLE, NULL }

/**
 * Add a variable. A graph-owned variable starts uninitialized in every new
 * raw session until an init op or assignment runs; an external one with
 * HK_INIT_NONE counts as initialized.
 * @param out  receives its value tensor handle ("name:0").
 * @param def  borrowed for the call; version HK_VARIABLE_DEF_VERSION; dtype
 *             not STRING; flags only HK_VAR_LOCAL, HK_VAR_TRAINABLE,
 *             HK_VAR_EXTERNAL (which requires external_data, and is implied
 *             by it) and HK_VAR_OPTIONAL (a restore from a
 *             checkpoint that lacks the variable keeps its current value,
 *             with a WARNING, instead of failing with NOT_FOUND — for state
 *             added to a model after checkpoints of it were written; a
 *             session that restores runs no init op, so a graph-owned
 *             optional variable missing from the checkpoint stays
 *             uninitialized and the ready check reports it: give such
 *             a variable external_data, which counts as initialized) and
 *             HK_VAR_NON_FINITE_OK (a checkpoint may hold it NaN or
 *             infinite; without it a save of such a value fails); an
 *             initializer valid for the dtype.
 * **Ownership:** name and dims copied; external_data borrowed for the
 * graph's life.
 * **Threads:** the graph's owner's. **Allocates:** yes (the graph grows).
 */
HK_API hk_code hk_graph_variable(hk_graph *g, hk_handle *out, const hk_variable_def *def, hk_status *status);

/**
 * Create the global step: an int64 scalar named "global_step",
 * initial value 0, non-trainable, global, registered under
 * HK_ROLE_GLOBAL_STEP.
 * @param out  receives its value tensor handle.
 * **Errors:** ALREADY_EXISTS '"global_step" already exists.' when a GS is
 * registered or an op named "global_step" exists; the builder errors.
 * **Threads:** the graph's owner's. **Allocates:** yes (the graph grows).
 */
HK_API hk_code hk_graph_create_global_step(hk_graph *g, hk_handle *out, hk_status *status);
/**
 * Return the existing global step's value tensor handle,
 * creating it when there is none; an existing one is returned even after
 * finalization.
 * **Errors:** INVALID_ARGUMENT 'Existing "global_step" does not have integer
 * type: %s' / 'Existing "global_step" is not scalar: %s'; ALREADY_EXISTS
 * when several are registered (logged at WARNING "Multiple tensors in
 * global_step collection.") or "global_step" names a non-variable op; the
 * builder errors when it must create one.
 * **Threads:** the graph's owner's. **Allocates:** yes (the graph grows).
 */
HK_API hk_code hk_graph_get_or_create_global_step(hk_graph *g, hk_handle *out, hk_status *status);

/* ---- placeholders and constants ----------------------------------------- */

/**
 * Add a placeholder, fed at run time. A dimension of -1 accepts any size in
 * the feed. A run that needs an unfed placeholder fails with
 * INVALID_ARGUMENT "You must feed a value for placeholder tensor '<name>'
 * ..."; a feed of another dtype or shape with INVALID_ARGUMENT.
 * @param dims  rank entries, each >= -1, copied.
 * **Threads:** the graph's owner's. **Allocates:** yes (the graph grows).
 */
HK_API hk_code hk_graph_placeholder(hk_graph *g, hk_handle *out, const char *name, hk_dtype dtype, int32_t rank,
                                    const int64_t *dims, hk_status *status);
/**
 * Add a constant.
 * @param value  copied, data included; dtype not STRING; its nbytes must
 *               match dtype and shape.
 * **Threads:** the graph's owner's. **Allocates:** yes (the graph grows).
 */
HK_API hk_code hk_graph_constant(hk_graph *g, hk_handle *out, const char *name, const hk_tensor *value,
                                 hk_status *status);

/* ---- ops with C kernels ------------------------------------------------- */

typedef struct hk_kernel_context hk_kernel_context;

/**
 * A kernel. `inputs` are read-only views of the op's inputs. `outputs` are
 * pre-sized buffers for the declared outputs (owned by the raw session); a
 * kernel writes them in place, or may point `outputs[i].data` at storage it
 * owns that stays valid until the next run (its shape may then be changed).
 * Variables listed in the op's `mutates` are reached with
 * hk_kernel_context_variable(). A non-OK return fails the run with that status.
 * Kernels run on the thread that called run and must not allocate per step
 * if the run is to stay allocation-free.
 */
typedef hk_code (*hk_kernel_fn)(void *user, hk_kernel_context *ctx, const hk_tensor *inputs, size_t ninputs,
                                hk_tensor *outputs, size_t noutputs, hk_status *status);

/** Output declaration of an op. */
typedef struct hk_output_spec {
  hk_dtype dtype;
  int32_t rank;
  int64_t dims[HK_MAX_RANK];
} hk_output_spec;

#define HK_OP_DEF_VERSION 1
typedef struct hk_op_def {
  uint32_t version;        /**< HK_OP_DEF_VERSION */
  const char *name;        /**< copied */
  hk_kernel_fn kernel;     /**< NULL: a no-op (group) */
  void *kernel_user;       /**< borrowed for the graph's life */
  const hk_handle *inputs; /**< tensor handles (data dependencies), copied */
  size_t ninputs;
  const hk_handle *control_inputs; /**< op handles that must run first, copied */
  size_t ncontrol_inputs;
  const hk_handle *mutates; /**< variable tensor handles the kernel may write, copied */
  size_t nmutates;
  /** Nonzero: mutated variables need not be initialized, and the op marks
   *  them initialized when it succeeds (an initializer or assign). Zero:
   *  reading an uninitialized one fails with FAILED_PRECONDITION. */
  int initializes;
  const hk_output_spec *outputs; /**< copied */
  size_t noutputs;
} hk_op_def;
#define HK_OP_DEF_INIT \
  { HK_OP_DEF_VERSION, NULL, NULL, NULL, NULL, 0, NULL, 0, NULL, 0, 0, NULL, 0 }

/**
 * Add an op with a C kernel (or a no-op).
 * @param out  receives the op handle; its outputs are "name:k" (see
 *             hk_graph_op_output()).
 * @param def  borrowed for the call; version HK_OP_DEF_VERSION. Inputs must
 *             be tensors, control inputs ops (a tensor stands for its op),
 *             mutates variables, all of this graph; output dims >= 0. A NULL
 *             kernel may declare no outputs and no mutates.
 * **Ownership:** arrays and name copied; kernel_user borrowed for the
 * graph's life.
 * **Threads:** the graph's owner's. **Allocates:** yes (the graph grows).
 */
HK_API hk_code hk_graph_op(hk_graph *g, hk_handle *out, const hk_op_def *def, hk_status *status);
/**
 * Handle of output `index` of `op`. Works after finalization.
 * @param out  set to HK_NO_HANDLE first, filled on success.
 * **Errors:** NOT_FOUND when `op` is not an op handle of this graph;
 * OUT_OF_RANGE for a bad index; INVALID_ARGUMENT for NULL g or out.
 * **Threads:** the owner's. **Allocates:** no.
 */
HK_API hk_code hk_graph_op_output(hk_graph *g, hk_handle *out, hk_handle op, int32_t index, hk_status *status);

/**
 * Within a kernel: a mutable view of the op's i-th `mutates` variable; its
 * storage is owned by the raw session or, for an external variable, by the
 * host. Writing it changes the variable.
 * @return the view, valid during the kernel call only; NULL for a NULL ctx
 *         or i >= def->nmutates.
 * **Threads:** the kernel's (the run's). **Allocates:** no.
 */
HK_API hk_tensor *hk_kernel_context_variable(hk_kernel_context *ctx, size_t i);
/**
 * Within a kernel: the graph's env (for logging, hk_env_log()). NULL for a
 * NULL ctx.
 * **Ownership:** borrowed; valid for the graph's life.
 * **Threads:** the kernel's. **Allocates:** no.
 */
HK_API const hk_env *hk_kernel_context_env(hk_kernel_context *ctx);

/* ---- stock ops ---------------------------------------------------------- */

/**
 * Add `var = value`: same dtype and shape (a -1 dimension of `value` is
 * checked at run time). Output 0 is the new value. Running it initializes
 * var.
 * @param var    the variable's value or op handle.
 * @param value  a tensor handle of this graph.
 * **Threads:** the graph's owner's. **Allocates:** yes (the graph grows).
 */
HK_API hk_code hk_graph_assign(hk_graph *g, hk_handle *out_op, const char *name, hk_handle var, hk_handle value,
                               hk_status *status);
/**
 * Add `var += delta`: numeric dtype, same dtype and shape. Output 0 is the
 * new value. Running it with var uninitialized fails with
 * FAILED_PRECONDITION "Attempting to use uninitialized value <var>".
 * **Threads:** the graph's owner's. **Allocates:** yes (the graph grows).
 */
HK_API hk_code hk_graph_assign_add(hk_graph *g, hk_handle *out_op, const char *name, hk_handle var, hk_handle delta,
                                   hk_status *status);
/** Add a no-op that depends (control) on `ops` (op or tensor handles,
 *  copied); n may be 0. Use it as a target to run several ops at once.
 * **Threads:** the graph's owner's. **Allocates:** yes (the graph grows).
 */
HK_API hk_code hk_graph_group(hk_graph *g, hk_handle *out_op, const char *name, const hk_handle *ops, size_t n,
                              hk_status *status);
/**
 * Add an op running the initializers of `vars` (variable handles, copied,
 * duplicates ignored); NULL/0: every global variable. Variables without an
 * initializer (HK_INIT_NONE) are skipped, except that a graph-owned one in
 * an explicit list is INVALID_ARGUMENT (only an assignment can initialize
 * it).
 * **Threads:** the graph's owner's. **Allocates:** yes (the graph grows).
 */
HK_API hk_code hk_graph_init_op(hk_graph *g, hk_handle *out_op, const char *name, const hk_handle *vars, size_t n,
                                hk_status *status);
/** Add an op whose output 0 is a 1-D string tensor of the names of the
 *  uninitialized variables among `vars` (variable handles, copied; NULL/0:
 *  all variables, global and local), for readiness checks. The names
 *  are borrowed from the graph.
 * **Threads:** the graph's owner's. **Allocates:** yes (the graph grows).
 */
HK_API hk_code hk_graph_report_uninitialized(hk_graph *g, hk_handle *out_op, const char *name, const hk_handle *vars,
                                             size_t n, hk_status *status);

/* ---- summary ops (hooked/summary.h) ----------------- */
/*
 * A summary op's output 0 is a serialized Summary protocol buffer, as a 1-D
 * U8 tensor (its bytes contain NULs, so not a string): what
 * SummarySaverHook fetches and writes verbatim, and what
 * hk_summary_writer_summary() accepts. The declared length of the output is
 * the largest the op can produce; a run gives the actual length (dims[0]
 * and nbytes). The bytes live in the raw session's output buffer of the
 * op, valid until its next run. Tags are 1..HK_SUMMARY_TAG_MAX bytes of
 * UTF-8, copied (the op name keeps the naming rules of every builder).
 * The builders below follow the rules of every builder (see "Builders"),
 * and the graph's errors of a failing run name the op.
 */

/**
 * Add a scalar summary op (TensorFlow's ScalarSummary): its output is a
 * Summary with one Value, `tag` and simple_value = the value of `tensor`
 * rounded to float. Its output is registered under HK_ROLE_SUMMARIES, so a
 * Scaffold's default summary_op includes it.
 * @param out     receives the Summary tensor handle ("name:0").
 * @param tensor  a scalar of any integer or floating dtype of this graph.
 * **Ownership:** name and tag copied.
 * **Errors:** the builder errors; INVALID_ARGUMENT for a tag that is NULL,
 * empty, too long or not UTF-8, or a tensor that is not a numeric scalar.
 * **Threads:** the graph owner's. **Allocates:** yes (its run does not).
 */
HK_API hk_code hk_graph_scalar_summary(hk_graph *g, hk_handle *out, const char *name, const char *tag, hk_handle tensor,
                                       hk_status *status);

/**
 * Add a histogram summary op (TensorFlow's HistogramSummary): its output is
 * a Summary with one Value, `tag` and a HistogramProto of every element of
 * `values`, as hk_summary_writer_histogram() makes it. Registered under
 * HK_ROLE_SUMMARIES. A run in which an element is NaN or infinite fails with
 * INVALID_ARGUMENT "Nan in summary histogram for: <tag>" / "Infinity in
 * summary histogram for: <tag>".
 * @param values  a tensor of any integer or floating dtype and any shape
 *                (a placeholder's -1 dimensions included).
 * **Ownership:** name and tag copied.
 * **Errors:** the builder errors; INVALID_ARGUMENT for a bad tag or a BOOL
 * or STRING values tensor.
 * **Threads:** the graph owner's. **Allocates:** yes, with the op a 25 KB
 * block for its buckets (its run does not).
 */
HK_API hk_code hk_graph_histogram_summary(hk_graph *g, hk_handle *out, const char *name, const char *tag,
                                          hk_handle values, hk_status *status);

/**
 * Add an op merging summaries (TensorFlow's MergeSummary): its output is
 * one Summary holding every Value of its inputs, in input order. A run in
 * which two Values have the same tag fails with INVALID_ARGUMENT "Duplicate
 * tag <tag> found in summary inputs"; an input that is not a serialized
 * Summary, with INVALID_ARGUMENT naming it. Not registered under any role.
 * @param inputs  n Summary tensors (1-D U8 of a known length: the output of
 *                a summary op or of another merge), copied; NULL and n 0:
 *                every tensor registered under HK_ROLE_SUMMARIES now
 *                (TensorFlow's merge_all).
 * **Ownership:** name and the inputs array copied.
 * **Errors:** the builder errors; INVALID_ARGUMENT for an input that is not
 * a 1-D U8 tensor of a known length; FAILED_PRECONDITION for merge_all
 * with no summary registered.
 * **Threads:** the graph owner's. **Allocates:** yes (its run does not).
 */
HK_API hk_code hk_graph_merge_summary(hk_graph *g, hk_handle *out, const char *name, const hk_handle *inputs, size_t n,
                                      hk_status *status);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_GRAPH_H */
