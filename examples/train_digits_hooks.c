/*
 * train_digits_hooks — the hooks of train_digits.c, made in the order they
 * run: the chief-only ones (the profiler, the NaN guard, early stopping,
 * the learning rate, the metrics log, the moving average) before the MTS's
 * own, then every rank's (the distributed ones, the feeder, StopAtStep, the
 * time limit, the progress line). Each add_* makes one and appends it to
 * its list in the run; run_free() frees them.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#if !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* isatty */
#endif

#include "train_digits.h"

#include <unistd.h>

/* --progress (or a terminal): the progress line, made first: every object
 * after it logs through a sink that erases the line before a log line is
 * written, so the two never mix. */
int add_progress_hook(run *r, hk_status *st) {
  hk_progress_options po = HK_PROGRESS_OPTIONS_INIT;
  const int wanted = r->o->progress > 0 || (r->o->progress < 0 && r->o->f.verbosity >= 0 && isatty(STDERR_FILENO));
  if (!g_dist.chief || !wanted) return 0;
  po.last_step = r->o->f.steps;
  po.loss = r->ps_chief ? NULL : LOSS_NAME; /* the chief of a parameter server computes no loss */
  if (hk_progress_hook_new(&r->progress, &po, st) != HK_OK) return fail_status("creating the progress hook", st);
  r->env.log = hk_progress_hook_log;
  r->env.log_user = r->progress;
  return 0;
}

/* --profile-dir: a ProfilerHook. */
static int add_profiler(run *r, hk_status *st) {
  hk_profiler_options pro = HK_PROFILER_OPTIONS_INIT;
  pro.output_dir = r->o->profile_dir;
  pro.save_steps = r->o->profile_steps;
  if (hk_profiler_hook_new(&r->profiler, &pro, st) != HK_OK) return fail_status("creating the profiler hook", st);
  r->chief_hooks[r->nchief++] = r->profiler;
  return 0;
}

/* The NaN guard on the guarded loss. Distributed, every rank guards (it
 * goes among the hooks): a synchronous job's loss and weights are the same
 * on every rank, so all fail at the same step. */
static int add_nan_guard(run *r, hk_status *st) {
  hk_nan_tensor_options no = HK_NAN_TENSOR_OPTIONS_INIT;
  no.loss = GUARDED_LOSS_NAME;
  no.fail_on_nan_loss = 1;
  if (hk_nan_tensor_hook_new(&r->nan_guard, &no, st) != HK_OK) return fail_status("creating the NaN guard", st);
  if (g_dist.mode == DIST_NONE) r->chief_hooks[r->nchief++] = r->nan_guard;
  return 0;
}

/* --early-stop-patience: an EarlyStoppingHook on the test loss, its state in
 * the graph's variable. */
static int add_early_stop(run *r, hk_status *st) {
  hk_early_stopping_options eo = HK_EARLY_STOPPING_OPTIONS_INIT;
  eo.monitor = TEST_LOSS_NAME;
  eo.mode = HK_MONITOR_MIN;
  eo.patience = r->o->early_patience;
  eo.every_n_steps = r->o->early_every;
  eo.state = EARLY_STATE_NAME;
  if (hk_early_stopping_hook_new(&r->early_stop, &eo, st) != HK_OK)
    return fail_status("creating the early-stopping hook", st);
  r->chief_hooks[r->nchief++] = r->early_stop;
  return 0;
}

/* --lr-schedule, --lr-plateau: a LearningRateHook writing the rate the
 * train op reads, watching the test loss, its plateau state in the graph's
 * variable; the rate is a summary beside the graph's. */
static int add_learning_rate(run *r, hk_status *st) {
  hk_learning_rate_options lo;
  if (!digits_lr_options(&r->o->f, LR_NAME, &lo)) return 0;
  if (r->o->f.lr_flags.patience >= 0) {
    lo.monitor = TEST_LOSS_NAME;
    lo.state = LR_STATE_NAME;
  }
  if (r->summaries) lo.summary_dir = r->o->f.summary_dir ? r->o->f.summary_dir : r->o->f.checkpoint_dir;
  if (hk_learning_rate_hook_new(&r->learning_rate, &lo, st) != HK_OK)
    return fail_status("creating the learning-rate hook", st);
  r->chief_hooks[r->nchief++] = r->learning_rate;
  return 0;
}

/* --metrics-log: a row of the training loss, the test loss and the test
 * accuracy every --metrics-every steps, before the checkpoint saver, with
 * the listener that fsyncs the log before each checkpoint. */
static int add_metrics_log(run *r, hk_status *st) {
  static const char *const tensors[] = {LOSS_NAME, TEST_LOSS_NAME, "accuracy:0"};
  static const char *const columns[] = {"loss", "test_loss", "test_accuracy"};
  hk_metrics_log_options mo = HK_METRICS_LOG_OPTIONS_INIT;
  mo.path = r->o->f.metrics_log;
  mo.format = (hk_metrics_log_format)r->o->f.metrics_format;
  mo.tensors = tensors;
  mo.columns = columns;
  mo.ntensors = 3;
  mo.every_n_steps = r->o->f.metrics_every;
  if (hk_metrics_log_hook_new(&r->metrics, &mo, st) != HK_OK ||
      hk_metrics_log_checkpoint_listener(&r->metrics_listener, r->metrics, st) != HK_OK)
    return fail_status("creating the metrics log", st);
  r->chief_hooks[r->nchief++] = r->metrics;
  return 0;
}

/* --ema: an ExponentialMovingAverage hook on the parameters, its shadows
 * and count variables of the graph, exporting them at the end with
 * --ema-export. */
static int add_ema(run *r, hk_status *st) {
  static const char *const params[4] = {"w1", "b1", "w2", "b2"};
  hk_ema_options eo = HK_EMA_OPTIONS_INIT;
  eo.variables = params;
  eo.nvariables = 4;
  eo.decay = r->o->f.ema_decay;
  eo.export_path = r->o->f.ema_export;
  if (hk_ema_hook_new(&r->ema, &eo, st) != HK_OK || hk_ema_hook_add_graph_variables(r->ema, r->m.g, st) != HK_OK)
    return fail_status("setting up the moving average", st);
  r->chief_hooks[r->nchief++] = r->ema;
  return 0;
}

/* Chief-only hooks run before the MTS's own StepCounter, SummarySaver and
 * CheckpointSaver: the profiler first, to trace every other hook; then the
 * NaN guard, whose failing after_run keeps the checkpoint saver from saving
 * a diverged step and the session from running end(), so no final
 * checkpoint of it either; then early stopping, the learning rate and the
 * moving average, so that a checkpoint holds the state of its own step. */
int add_chief_hooks(run *r, hk_status *st) {
  int rc = 0;
  if (r->o->profile_dir) rc = add_profiler(r, st);
  if (rc == 0 && !r->ps_chief) rc = add_nan_guard(r, st);
  if (rc == 0 && r->o->early_patience) rc = add_early_stop(r, st);
  if (rc == 0) rc = add_learning_rate(r, st);
  if (rc == 0 && r->o->f.metrics_log && !r->ps_chief) rc = add_metrics_log(r, st);
  if (rc == 0 && r->o->f.ema_decay >= 0 && g_dist.chief && !r->ps_chief) rc = add_ema(r, st);
  return rc;
}

/* The hooks of every rank, in order: the distributed ones that must come
 * first (with sharded checkpoints, the broadcast, then every rank's
 * checkpoint hook), the NaN guard when distributed, the feeder, StopAtStep at --steps,
 * the progress line, and the stop agreement of a synchronous job. */
int add_hooks(run *r, hk_status *st) {
  hk_stop_at_step_options so = HK_STOP_AT_STEP_OPTIONS_INIT;
  so.last_step = r->o->f.steps;
  if (hk_hook_new(&r->feed, &feeder_vtable, &r->f, "digits_feeder", NULL, st) != HK_OK ||
      hk_stop_at_step_hook_new(&r->stop, &so, st) != HK_OK)
    return fail_status("creating hooks", st);
#ifdef HK_EXAMPLE_MPI
  if (add_dist_hooks(r, st) != 0) return DIGITS_EXIT_RUNTIME;
  if (setup_sharded_checkpoints(r, st) != 0) return DIGITS_EXIT_RUNTIME;
#endif
  if (r->dist_first) r->hooks[r->nhooks++] = r->dist_first;
  if (r->shard_hook) r->hooks[r->nhooks++] = r->shard_hook; /* after the broadcast: the chief's variables */
  if (r->waiter) r->hooks[r->nhooks++] = r->waiter;
  if (r->nan_guard && g_dist.mode != DIST_NONE) r->hooks[r->nhooks++] = r->nan_guard;
  r->hooks[r->nhooks++] = r->feed;
  r->hooks[r->nhooks++] = r->stop;
  if (digits_time_limit_hook(&r->o->f, &r->time_limit) != 0) return DIGITS_EXIT_RUNTIME;
  if (r->time_limit) r->hooks[r->nhooks++] = r->time_limit; /* --time-limit */
  if (r->progress) r->hooks[r->nhooks++] = r->progress;
  if (r->dist_last) r->hooks[r->nhooks++] = r->dist_last;
  return 0;
}
