/*
 * hooked — exponential moving averages of chosen variables (TensorFlow's
 * ExponentialMovingAverage, Polyak averaging), as a hook.
 *
 * After each step the hook updates a shadow copy of every variable it
 * averages:
 *
 *     shadow -= (1 - decay) * (shadow - value)
 *
 * which is TensorFlow's `shadow = decay * shadow + (1 - decay) * value`
 * written as its assign_moving_average computes it. With num_updates the
 * decay of an update is min(decay, (1 + n) / (10 + n)), n the number of
 * updates applied before it, so early averages follow the weights closely.
 * The first update of a fresh run sets the shadow to the variable's value
 * (as Keras' optimizer EMA does at its first step) instead of averaging it
 * with whatever the shadow held.
 *
 * The shadows are variables of the executor, so every checkpoint holds them
 * and a restart restores them: a resumed run averages exactly as the run
 * that was not stopped (the host loop's `hooked-ckpt check-resume` compares
 * them byte for byte). The shadow of variable "w" is "w/<name>" (by default
 * "w/ExponentialMovingAverage", TensorFlow's name), and the count of
 * updates is the I64 scalar "<name>/num_updates". A host loop registers
 * them for the hook (hk_loop_add_ema(), hooked/loop.h); a graph creates them
 * with hk_ema_hook_add_graph_variables().
 *
 *     const char *avg[] = {"w1", "b1", "w2", "b2"};
 *     hk_ema_options eo = HK_EMA_OPTIONS_INIT;
 *     eo.variables = avg;
 *     eo.nvariables = 4;
 *     eo.decay = 0.999;
 *     eo.export_path = "ckpt/ema";        // at the end: ckpt/ema.safetensors
 *     hk_ema_hook_new(&ema, &eo, &st);
 *     hk_loop_add_ema(loop, ema, &st);    // or: hk_ema_hook_add_graph_variables(ema, g, &st)
 *
 * For evaluation the averages are exported as a checkpoint of their own
 * (hk_ema_hook_export(), or export_path at the end): every variable a
 * checkpoint of the model holds, under its own name, the averaged ones with
 * their shadow's value — TensorFlow's variables_to_restore() written out —
 * so an evaluator restores it as the model. It is an ordinary hooked
 * checkpoint: atomic, CRC-checked, read by hooked-ckpt and numpy.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_EMA_H
#define HOOKED_EMA_H

#include "hooked/common.h"
#include "hooked/tensor.h"
#include "hooked/hook.h"
#include "hooked/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The default `name`, TensorFlow's: shadows are "<variable>/ExponentialMovingAverage". */
#define HK_EMA_DEFAULT_NAME "ExponentialMovingAverage"

#define HK_EMA_OPTIONS_VERSION 1
typedef struct hk_ema_options {
  uint32_t version;  /**< HK_EMA_OPTIONS_VERSION */
  const hk_env *env; /**< copied; NULL: the session's (its sink logs) */
  /** Required: the names of the variables to average (1 or more, none
   *  twice), each an F32 or F64 variable of the executor that checkpoints
   *  keep. Array and names copied. */
  const char *const *variables;
  size_t nvariables;
  /** In [0, 1]; default 0.999. 0 makes each shadow the variable's last
   *  value; 1 keeps the value of the first update. */
  double decay;
  /** Nonzero: the decay of an update is min(decay, (1 + n) / (10 + n)), n
   *  the number of updates before it (TensorFlow's num_updates, counted by
   *  the hook and kept in "<name>/num_updates"). Default 0. */
  int num_updates;
  /** Copied; NULL: HK_EMA_DEFAULT_NAME. The shadows' suffix and the count's
   *  prefix: 1..200 bytes of [A-Za-z0-9_.-]. Two hooks averaging one
   *  variable need two names. */
  const char *name;
  /** Copied; NULL (default): none. A checkpoint prefix ("<dir>/<name>",
   *  the directory existing) that every clean end() of the hook exports the
   *  averages to, as hk_ema_hook_export() does. */
  const char *export_path;
} hk_ema_options;
#define HK_EMA_OPTIONS_INIT \
  { HK_EMA_OPTIONS_VERSION, NULL, NULL, 0, 0.999, 0, NULL, NULL }

/**
 * Initialize options to HK_EMA_OPTIONS_INIT.
 * @param version  HK_EMA_OPTIONS_VERSION, the version the program is compiled with.
 * @return HK_OK; INVALID_ARGUMENT (no message: there is no status), writing
 *         nothing, for a NULL opts or a version that is 0 or above
 *         HK_EMA_OPTIONS_VERSION.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_ema_options_init(hk_ema_options *opts, uint32_t version);

/**
 * ExponentialMovingAverage hook. begin() finds every averaged variable, its
 * shadow and the count (NOT_FOUND naming one that is missing, with how to
 * create it); after each session creation (after the restore) it reads the
 * count and the shadows; each after_run updates every shadow from the
 * variable's value as the step left it, in the order given, then the count,
 * by assigning them through the raw session (so an asynchronous checkpoint's
 * copy-before-write sees the writes); a clean end() keeps the last averages
 * (hk_ema_hook_average()) and, with export_path, exports them.
 *
 * Place it BEFORE the checkpoint saver hooks (a host loop does so with
 * hk_loop_add_ema(); in a MonitoredTrainingSession, list it in
 * chief_only_hooks): the checkpoint of a step then holds the averages of
 * that step, and a run resumed from it is identical to one that was not
 * stopped. Placed after them, a checkpoint holds the averages of the step
 * before.
 * @param opts  required (variables are); borrowed for the call.
 * **Ownership:** *out owned, hk_hook_free().
 * **Errors:** INVALID_ARGUMENT naming the option: a NULL out or opts, a
 * wrong version or bad env, no variables, a NULL, invalid or repeated
 * name in them (a valid name is 1..255 bytes of [A-Za-z0-9_./-] and must
 * leave room for the suffix), a decay outside [0, 1] or NaN, a name that
 * is not 1..200 bytes of [A-Za-z0-9_.-], an empty export_path;
 * RESOURCE_EXHAUSTED. Later, begin() fails with NOT_FOUND naming a
 * variable, shadow or count the executor does not have, INVALID_ARGUMENT
 * naming a variable that is not F32 or F64, that is local, or whose shadow
 * differs from it in dtype or shape, or a count that is not an I64 scalar;
 * after_create_session with DATA_LOSS for a negative count; after_run with
 * the raw session's error reading or assigning one (naming it).
 * **Threads:** any; callbacks on the training thread.
 * **Allocates:** at creation and in begin() (one buffer per averaged
 * variable); an update allocates nothing (reading a variable and assigning
 * one allocate nothing in the embedded executor and the host loop).
 */
HK_API hk_code hk_ema_hook_new(hk_hook **out, const hk_ema_options *opts, hk_status *status);

/**
 * Create, in graph `g`, the variables an ExponentialMovingAverage hook keeps
 * its state in: for each averaged variable "v" (which must already exist),
 * "v/<name>" of its dtype and shape, and the I64 scalar
 * "<name>/num_updates", all global, not trainable, zero-initialized (the
 * first update replaces a zero count's shadows). Before the graph is
 * finalized. A checkpoint written before they existed does not restore
 * into them (NOT_FOUND naming the shadow): add the average at the start of
 * a run's checkpoints.
 * **Ownership:** hook and graph borrowed for the call; the graph copies
 * the names.
 * **Errors:** INVALID_ARGUMENT for a NULL hook or graph, a hook that is not
 * an ExponentialMovingAverage hook, or a variable that is not F32 or F64;
 * NOT_FOUND naming a variable the graph does not have; the graph's errors
 * (ALREADY_EXISTS for a shadow that exists, FAILED_PRECONDITION after
 * finalization).
 * **Threads:** the graph's owner. **Allocates:** yes (the graph grows).
 */
HK_API hk_code hk_ema_hook_add_graph_variables(hk_hook *hook, hk_graph *g, hk_status *status);

/** What an ExponentialMovingAverage hook is (hk_ema_hook_info()). Every
 *  pointer is borrowed from the hook, valid until hk_hook_free(). */
typedef struct hk_ema_info {
  size_t nvariables;
  const char *const *variables; /**< the averaged variables, in order */
  const char *const *shadows;   /**< their shadows' names ("<variable>/<name>") */
  const char *count;            /**< the count's name ("<name>/num_updates") */
  double decay;
  int num_updates;
  int64_t updates; /**< updates applied so far, those of restored checkpoints included */
} hk_ema_info;

/**
 * Read what the hook is and how far it got.
 * @param out  filled on success; zeroed first.
 * **Ownership:** the pointers in *out are borrowed from the hook, valid
 * until hk_hook_free().
 * **Errors:** INVALID_ARGUMENT for a NULL hook or out, or a hook that is
 * not an ExponentialMovingAverage hook.
 * **Threads:** the training thread. **Allocates:** no.
 */
HK_API hk_code hk_ema_hook_info(hk_ema_info *out, const hk_hook *hook, hk_status *status);

/**
 * The current average of `variable`: the shadow as the last update, restore
 * or end() left it — still there after the session closed, for a program
 * that evaluates with the averages itself.
 * @param out  a view of the hook's copy (dtype and shape of the variable);
 *             zeroed first.
 * **Ownership:** the view's data is borrowed from the hook until its next
 * callback or hk_hook_free(); `variable` is borrowed for the call.
 * **Errors:** INVALID_ARGUMENT for a NULL argument or a hook that is not an
 * ExponentialMovingAverage hook; NOT_FOUND naming a variable the hook does
 * not average; FAILED_PRECONDITION while the hook holds no average yet (no
 * begin(), or no update nor restored average since).
 * **Threads:** the training thread. **Allocates:** no.
 */
HK_API hk_code hk_ema_hook_average(hk_tensor *out, const hk_hook *hook, const char *variable, hk_status *status);

/**
 * Export the averages as a checkpoint of their own at prefix `path` (the
 * data file "<path>.safetensors", written atomically and CRC-checked, its
 * directory existing): every global variable of the executor but the
 * hook's shadows and count, under its own name, an averaged variable
 * holding its shadow's value — so a Saver over the model restores it as the
 * model (its global step is the run's). The state file is not touched and
 * retention never deletes it; a later export overwrites it. Between runs,
 * while the hook serves a session whose raw session exists, after at least
 * one update or restored average. Export into another directory than
 * one an asynchronous checkpoint hook writes (a save first removes the
 * temporary files it finds in its directory as stale, so each would remove
 * the other's file in flight); beside synchronous checkpoints is fine.
 * @param prefix  may be NULL; receives the prefix written; NULL on failure.
 * **Ownership:** *prefix is borrowed from the hook until its next export or
 * hk_hook_free(); `path` is borrowed for the call.
 * **Errors:** INVALID_ARGUMENT for a NULL hook or path, an empty path, a
 * hook that is not an ExponentialMovingAverage hook; FAILED_PRECONDITION
 * when the hook serves no session or holds no average yet; the Saver's
 * errors (NOT_FOUND for a missing directory, file-system errors naming the
 * file, after which nothing of the export is left).
 * **Threads:** the training thread, between runs. **Allocates:** yes.
 */
HK_API hk_code hk_ema_hook_export(const char **prefix, hk_hook *hook, const char *path, hk_status *status);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_EMA_H */
