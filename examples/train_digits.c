/*
 * train_digits — a 64-32-10 MLP (ReLU, softmax cross-entropy, plain SGD) on
 * the UCI digits data, trained through a monitored session on hooked's
 * embedded executor.
 *
 * The data, its train/test split and the order of the batches follow the
 * recipe of digits_common.h, so results compare with a PyTorch reference of
 * the same model; weights and biases ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in))
 * come from the executor's seeded initializers; plain SGD with learning rate
 * --lr. The batch fed at a step is a pure function of (--seed, global step),
 * so a run resumed at any step continues exactly as an uninterrupted run
 * would.
 *
 * The session is a MonitoredTrainingSession (hk_training_session_new) with
 * TensorFlow's defaults: with a summary directory (--summary-dir, else
 * --checkpoint-dir, as TF) a StepCounterHook writes global_step/sec and a
 * SummarySaverHook the graph's summaries (loss, test accuracy and loss, a
 * histogram of w1) every 100 steps; with --checkpoint-dir a
 * CheckpointSaverHook saves on the --save-steps/--save-secs cadence. The
 * program adds, on the chief before those: a ProfilerHook (--profile-dir)
 * first, so it sees every other hook, then a NanTensorHook in fail mode
 * that watches the loss guarded by the updated weights (train:1), so a
 * diverging step fails the run before the checkpoint saver sees it, then an
 * EarlyStoppingHook on the test loss (--early-stop-patience), whose state
 * the checkpoints keep, then a LearningRateHook (--lr-schedule,
 * --lr-plateau) writing the rate the train op reads, then a MetricsLogHook
 * (--metrics-log) writing the loss, test loss and test accuracy to a CSV or
 * JSON-lines file; and after them its feeding hook, StopAtStepHook and a
 * ProgressHook (--progress).
 *
 * SIGINT and SIGTERM stop it cleanly from the start: during training the
 * step in progress completes and the final checkpoint is written; while the
 * data is still loading, it stops there and exits without touching the
 * checkpoint directory.
 *
 * Exit status: 0 success (a stop by a signal included), 1 data or runtime
 * error (a diverging loss included), 2 usage error.
 *
 * Reading order: the flags (here; what the files share in train_digits.h);
 * the model (its kernels, then the graph) and the feeding hook
 * (train_digits_graph.c); then train() (here), one function a step: the
 * hooks (train_digits_hooks.c), the checkpoints, the session's options, the
 * training loop, the result line; and a distributed job's start, hooks,
 * worker set-up and end (train_digits_mpi.c).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */

#include "train_digits.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- command line ------------------------------------------------------- */

/* A single process unless --distributed (dist_start() fills it in). */
dist g_dist = {DIST_NONE,
               0,
               1,
               1,
               "",
               PROG
#ifdef HK_EXAMPLE_MPI
               ,
               NULL,
               NULL,
               NULL,
               NULL
#endif
};

static void usage(FILE *out) {
  fprintf(out,
          "usage: train_digits [--data PATH] [--steps N] [--batch N] [--lr X] [--seed N]\n"
          "                    [--log-every N] [--checkpoint-dir DIR [--save-steps N | --save-secs S]\n"
          "                    [--async] [--keep N]] [--summary-dir DIR]\n"
          "                    [--profile-dir DIR [--profile-steps N]] [--progress | --no-progress]\n"
          "                    [--early-stop-patience N [--early-stop-every N]]\n"
          "                    [--lr-schedule S ...] [--lr-plateau PATIENCE[,FACTOR] [--lr-plateau-every N]]\n"
          "                    [--metrics-log PATH [--metrics-format csv|jsonl] [--metrics-every N]]\n"
          "                    [--distributed sync|ps [--ps-wait-k K] [--collective-timeout S]]\n"
          "                    [--quiet | --verbose]\n"
          "                    [--time-limit S] [--stop-signals LIST]\n"
          "                    [--ema DECAY [--ema-export PATH]] [--best-k K [--restore-best]] [--help]\n"
          "\n"
          "Train a 64-32-10 MLP on the UCI digits data through a hooked MonitoredTrainingSession.\n"
          "\n"
          "  --data PATH      digits CSV, gzip-compressed or plain (default: the bundled\n"
          "                   digits.csv.gz of the source tree)\n"
          "  --steps N        last global step: stop when it is reached (default 3000)\n"
          "  --batch N        rows per step (default 32)\n"
          "  --lr X           SGD learning rate, > 0 (default 0.1)\n"
          "  --seed N         seed of the initializers and the per-epoch shuffle (default 42)\n"
          "  --log-every N    log the loss to stderr every N steps, 0 for never (default 500)\n"
          "  --checkpoint-dir DIR\n"
          "                   restore the newest checkpoint of DIR that verifies (if any),\n"
          "                   save one at start, during training and at the end\n"
          "  --save-steps N   save every N global steps (default: every 600 s, as TensorFlow)\n"
          "  --save-secs S    save every S seconds instead\n"
          "  --async          write checkpoints on a background thread\n"
          "  --keep N         checkpoints to keep, 0 for all (default 5)\n"
          "  --summary-dir DIR\n"
          "                   write TensorBoard event files into DIR: loss, test_accuracy,\n"
          "                   test_loss and a histogram of w1 every 100 steps, global_step/sec\n"
          "                   (default: --checkpoint-dir's, as TensorFlow; neither: none)\n"
          "  --profile-dir DIR\n"
          "                   trace one step every --profile-steps into DIR/timeline-<step>.json\n"
          "                   (Chrome trace events: open it in ui.perfetto.dev)\n"
          "  --profile-steps N  steps between traced steps (default 1000)\n"
          "  --progress       draw a progress line on stderr (default when stderr is a terminal)\n"
          "  --no-progress    do not\n"
          "  --early-stop-patience N\n"
          "                   stop when the test loss, evaluated every --early-stop-every\n"
          "                   steps, has not improved for N evaluations in a row; with\n"
          "                   --checkpoint-dir the count survives restarts\n"
          "  --early-stop-every N  steps between evaluations (default 100)\n"
          "%s%s",
          DIGITS_RUN_FLAGS_HELP, digits_lr_usage);
  /* Its own call: one string literal of the whole text would pass the
   * 4095 bytes C requires compilers to accept. */
  fprintf(out,
          "  --distributed sync|ps\n"
          "                   train as one rank of an MPI job (under mpirun): synchronous data\n"
          "                   parallel, or a parameter server (rank 0 serves, the others train).\n"
          "                   sync: --batch is the global batch (any size >= the rank count);\n"
          "                   with --checkpoint-dir every rank writes its shard of each\n"
          "                   checkpoint every --save-steps (default 1000) steps, and a job of\n"
          "                   any rank count resumes it\n"
          "  --ps-wait-k K    parameter-server worker k starts at global step int(K log(k + 1))\n"
          "                   (default 100)\n"
          "  --collective-timeout S\n"
          "                   a rank that waits S seconds for the others (default 300) ends the\n"
          "                   job with exit status 1, naming the ranks that did not arrive\n"
          "                   (--distributed sync: a --stop-signals signal to any one rank stops\n"
          "                   every rank after the same step)\n");
  fprintf(out, DIGITS_AVERAGE_USAGE
          "                   (the test metric: the test loss, lower is better)\n"
          "  --metrics-log PATH\n"
          "                   write step, wall_time, loss, test_loss and test_accuracy to\n"
          "                   PATH every --metrics-every steps, CSV (.csv) or JSON lines\n"
          "                   (.jsonl); a restart keeps the rows up to the restored\n"
          "                   checkpoint and drops the rest, so each step appears once\n"
          "  --metrics-format csv|jsonl  the format, whatever PATH ends in\n"
          "  --metrics-every N  steps between rows (default 100)\n"
          "  --help           show this text\n"
          "\n"
          "SIGINT or SIGTERM stops training after the current step; with --checkpoint-dir\n"
          "the final checkpoint is written. The result line is printed either way.\n"
          "\n"
          "A loss or weights that stop being finite (too large an --lr) fail training at\n"
          "that step with exit status 1, before it is checkpointed: the newest checkpoint\n"
          "stays the last good one.\n"
          "\n"
          "Prints one line on stdout: result: step=<N> loss=<x> test_accuracy=<y> stop=<why>\n"
          "(with --ema: ema_test_accuracy=<z> before stop=; why training stopped: last_step,\n"
          "signal:SIGINT, time_limit, early_stopping, ...); loss is the last step's batch loss\n"
          "(--distributed ps: the chief trains on no batch, and prints the final model's loss\n"
          "over the training set). Distributed, every line on stderr names its rank (rank R/N).\n");
}

static int parse_distributed(options *o, const char *value) {
  if (strcmp(value, "sync") == 0)
    o->distributed = DIST_SYNC;
  else if (strcmp(value, "ps") == 0)
    o->distributed = DIST_PS;
  else
    return digits_usage_error(PROG, "--distributed '%s' is neither sync nor ps", value);
#ifdef HK_EXAMPLE_MPI
  return 0;
#else
  return digits_usage_error(
      PROG, "--distributed: this train_digits was built without MPI (install libopenmpi-dev and rebuild)");
#endif
}

/* The flags only this program takes (digits_extra_flags). */
static int parse_own_flag(void *user, const char *flag, const char *value) {
  options *o = user;
  if (value == NULL) { /* --progress or --no-progress */
    o->progress = flag[2] == 'p';
    return 0;
  }
  if (strcmp(flag, "--profile-dir") == 0) return digits_parse_path(PROG, flag, value, &o->profile_dir);
  if (strcmp(flag, "--profile-steps") == 0) return digits_parse_i64(PROG, flag, value, 1, INT64_MAX, &o->profile_steps);
  if (strcmp(flag, "--early-stop-patience") == 0)
    return digits_parse_i64(PROG, flag, value, 1, INT64_MAX, &o->early_patience);
  if (strcmp(flag, "--early-stop-every") == 0)
    return digits_parse_i64(PROG, flag, value, 1, INT64_MAX, &o->early_every);
  if (strcmp(flag, "--ps-wait-k") == 0) return digits_parse_i64(PROG, flag, value, 0, INT64_MAX, &o->ps_wait_k);
  if (strcmp(flag, "--collective-timeout") == 0) return digits_parse_timeout(PROG, flag, value, &o->collective_timeout);
  return parse_distributed(o, value);
}

/* @return 0 to go on, DIGITS_HELP, or an exit status. */
static int parse_args(int argc, char **argv, options *o) {
  static const char *const switches[] = {"--progress", "--no-progress", NULL};
  static const char *const valued[] = {
      "--profile-dir", "--profile-steps", "--early-stop-patience", "--early-stop-every",
      "--distributed", "--ps-wait-k",     "--collective-timeout",  NULL};
  const digits_extra_flags extra = {switches, valued, parse_own_flag, o};
  int rc;

  o->profile_dir = NULL;
  o->profile_steps = HK_UNSET_STEPS;
  o->progress = -1;
  o->early_patience = 0;
  o->early_every = HK_UNSET_STEPS;
  o->distributed = DIST_NONE;
  o->ps_wait_k = 100;
  o->collective_timeout = HK_UNSET_SECS;
  if ((rc = digits_parse_flags(&o->f, PROG, argc, argv, &extra)) != 0) return rc;
  if (!o->profile_dir && o->profile_steps != HK_UNSET_STEPS)
    return digits_usage_error(PROG, "--profile-steps needs --profile-dir");
  if (o->profile_steps == HK_UNSET_STEPS) o->profile_steps = 1000;
  if (!o->early_patience && o->early_every != HK_UNSET_STEPS)
    return digits_usage_error(PROG, "--early-stop-every needs --early-stop-patience");
  if (o->early_every == HK_UNSET_STEPS) o->early_every = 100;
  if (o->distributed == DIST_NONE && !hk_secs_is_unset(o->collective_timeout))
    return digits_usage_error(PROG, "--collective-timeout needs --distributed");
  if (o->distributed != DIST_NONE && (o->f.lr_flags.schedule >= 0 || o->f.lr_flags.patience >= 0))
    return digits_usage_error(PROG, "--lr-schedule and --lr-plateau do not combine with --distributed");
  /* Sharded checkpoints: every rank saves at the same steps (the saves
   * are collectives). */
  if (o->distributed == DIST_SYNC && o->f.checkpoint_dir) {
    if (!hk_secs_is_unset(o->f.save_secs))
      return digits_usage_error(PROG,
                                "--save-secs: with --distributed sync every rank saves its shard at the same "
                                "steps; give --save-steps");
    if (o->f.best_k) return digits_usage_error(PROG, "--best-k does not combine with --distributed sync");
  }
  return 0;
}

/* ---- one training run --------------------------------------------------- */

int fail_status(const char *what, const hk_status *st) {
  fprintf(stderr, PROG ": %s%s: %s: %s\n", g_dist.tag, what, hk_code_name(st->code), st->message);
  return DIGITS_EXIT_RUNTIME;
}

/* The train kernel's scratch, for batches of `batch` rows of which this
 * rank trains on `local_batch`. @return 0, or nonzero when out of memory. */
static int trainer_init(trainer *t, size_t batch, int64_t local_batch, double lr) {
  t->gw1 = t->grad;
  t->gb1 = t->gw1 + NPIX * NHID;
  t->gw2 = t->gb1 + NHID;
  t->gb2 = t->gw2 + NHID * NCLS;
#ifdef HK_EXAMPLE_MPI
  if (g_dist.mode == DIST_SYNC) t->mpi = g_dist.mpi;
  /* The mean of the ranks' gradients is the global batch's mean gradient
   * when each rank's is weighted by its share of the rows: 1 when every
   * rank has as many (exactly, so such a job's bits do not change). */
  t->share = g_dist.mode == DIST_SYNC ? (double)local_batch * g_dist.size / (double)batch : 1.0;
#endif
  t->batch = local_batch;
  t->lr = (float)lr;
  t->hpre = malloc(batch * NHID * sizeof(float));
  t->h = malloc(batch * NHID * sizeof(float));
  t->dl = malloc(batch * NCLS * sizeof(float));
  t->dh = malloc(batch * NHID * sizeof(float));
  return !t->hpre || !t->h || !t->dl || !t->dh;
}

/* The feeder of this rank's rows of each batch of the training data.
 * @return 0, or nonzero when out of memory. */
static int feeder_init(feeder *f, const digits_data *trn, const options *o, int64_t local_batch, int ps_worker) {
  const size_t batch = (size_t)o->f.batch;
  f->train_x = trn->x;
  f->train_y = trn->y;
  f->ntrain = trn->n;
  f->batch = local_batch;
  f->stride = g_dist.mode == DIST_SYNC ? o->f.batch : local_batch;
  f->offset = g_dist.mode == DIST_SYNC
                  ? g_dist.rank * (o->f.batch / g_dist.size) +
                        (g_dist.rank < o->f.batch % g_dist.size ? g_dist.rank : o->f.batch % g_dist.size)
                  : 0;
  f->batches_per_epoch = (int64_t)trn->n / f->stride;
  /* Parameter-server workers shuffle each in their own order. */
  f->seed = ps_worker ? o->f.seed + 7919u * (uint64_t)g_dist.rank : o->f.seed;
  f->no_feeds = g_dist.mode == DIST_PS && g_dist.chief;
  f->cached_epoch = -1;
  f->perm = malloc(trn->n * sizeof *f->perm);
  f->xbuf = malloc(batch * NPIX * sizeof(float));
  f->ybuf = malloc(batch * sizeof(int32_t));
  return !f->perm || !f->xbuf || !f->ybuf;
}

static int run_init(run *r, const options *o, const digits_data *trn) {
  /* --distributed sync: each rank trains on its share of every global batch,
   * batch / size rows, one more for the first batch % size ranks. */
  const int64_t local_batch = g_dist.mode == DIST_SYNC
                                  ? o->f.batch / g_dist.size + (g_dist.rank < o->f.batch % g_dist.size ? 1 : 0)
                                  : o->f.batch;
  int oom;
  memset(r, 0, sizeof *r);
  r->o = o;
  r->ps_chief = g_dist.mode == DIST_PS && g_dist.chief;
  r->ps_worker = g_dist.mode == DIST_PS && !g_dist.chief;
  /* The MTS writes summaries into summary_dir, else checkpoint_dir; a
   * parameter server's chief computes no loss to summarize. */
  r->summaries = (o->f.summary_dir != NULL || o->f.checkpoint_dir != NULL) && !r->ps_chief;
  hk_env_init(&r->env, HK_ENV_VERSION);
  digits_env_levels(&o->f, &r->env); /* --quiet, --verbose */
  r->serve = HK_NO_HANDLE;
  r->last_loss = NAN;
  oom = trainer_init(&r->t, (size_t)o->f.batch, local_batch, o->f.lr);
  oom |= feeder_init(&r->f, trn, o, local_batch, r->ps_worker);
  if (oom) {
    fprintf(stderr, PROG ": %sout of memory\n", g_dist.tag);
    return DIGITS_EXIT_RUNTIME;
  }
  return 0;
}

/* The session first (it frees the hooks and Scaffold it made), then what it
 * borrowed; the progress hook last: everything logged through it. */
static void run_free(run *r) {
  hk_session_free(r->s);
  hk_hook_free(r->feed);
  hk_hook_free(r->stop);
  hk_hook_free(r->time_limit);
  hk_hook_free(r->nan_guard);
  hk_hook_free(r->profiler);
  hk_hook_free(r->early_stop);
  hk_hook_free(r->learning_rate);
  hk_hook_free(r->metrics);
  hk_hook_free(r->ema);
  hk_hook_free(r->dist_first);
#ifdef HK_EXAMPLE_MPI
  if (r->dist_last != g_dist.stop) hk_hook_free(r->dist_last); /* the sync stop hook is dist_end()'s */
#else
  hk_hook_free(r->dist_last);
#endif
  hk_hook_free(r->waiter);
  hk_hook_free(r->ps_serve);
  hk_scaffold_free(r->scaffold);
  hk_saver_free(r->saver);
  hk_hook_free(r->shard_hook);
  hk_saver_free(r->shard_saver);
  hk_executor_free(r->ps_executor);
  hk_graph_free(r->m.g);
  hk_hook_free(r->progress);
  free(r->t.hpre);
  free(r->t.h);
  free(r->t.dl);
  free(r->t.dh);
  free(r->f.perm);
  free(r->f.xbuf);
  free(r->f.ybuf);
}

/* The graph, and the feeds of x and y over the feeder's buffers. */
static int build(run *r, const digits_data *tst, hk_status *st) {
  int64_t xdims[2] = {r->t.batch, NPIX}, ydims[1] = {r->t.batch};
  hk_learning_rate_options lo;
  const int lr = !digits_lr_options(&r->o->f, LR_NAME, &lo) ? 0
                 : r->o->f.lr_flags.patience >= 0           ? MODEL_LR_VARIABLE | MODEL_LR_STATE
                                                            : MODEL_LR_VARIABLE;
  if (build_model(&r->m, &r->t, &r->f, tst, r->o->f.seed, r->o->early_patience != 0, lr, &r->env, r->summaries, st) !=
      HK_OK)
    return fail_status("building the graph", st);
  r->f.feeds[0].tensor = r->f.x;
  r->f.feeds[1].tensor = r->f.y;
  if (hk_tensor_init(&r->f.feeds[0].value, HK_DTYPE_F32, 2, xdims, r->f.xbuf, st) != HK_OK ||
      hk_tensor_init(&r->f.feeds[1].value, HK_DTYPE_I32, 1, ydims, r->f.ybuf, st) != HK_OK)
    return fail_status("feeds", st);
  return 0;
}

/* --checkpoint-dir, on the chief: one Saver restores (through the Scaffold
 * and checkpoint_dir) and saves (through the MTS's CheckpointSaverHook,
 * which takes the Scaffold's), so retention continues across restarts. */
static int setup_checkpoints(run *r, hk_status *st) {
  hk_saver_options svo = HK_SAVER_OPTIONS_INIT;
  hk_scaffold_options sco = HK_SCAFFOLD_OPTIONS_INIT;
  if (!r->o->f.checkpoint_dir || !g_dist.chief) return 0;
  svo.env = &r->env;
  svo.executor = hk_graph_executor(r->m.g);
  svo.max_to_keep = r->o->f.keep;
  sco.env = &r->env;
  if (hk_saver_new(&r->saver, &svo, st) != HK_OK) return fail_status("creating the saver", st);
  sco.saver = r->saver;
  if (hk_scaffold_new(&r->scaffold, &sco, st) != HK_OK) return fail_status("setting up checkpoints", st);
  return 0;
}

/* The MonitoredTrainingSession over the graph (or a parameter-server
 * worker's executor), with the hooks, the Scaffold and the flags' cadences. */
static int new_session(run *r, hk_status *st) {
  hk_training_session_options to = HK_TRAINING_SESSION_OPTIONS_INIT;
  const digits_flags *f = &r->o->f;
  to.env = &r->env;
  to.executor = r->ps_executor ? r->ps_executor : hk_graph_executor(r->m.g);
  /* Only the chief restores and saves; a worker has no checkpoint_dir. */
  to.is_chief = g_dist.chief;
  to.recovery_wait_secs = 0.2; /* a worker's poll while the chief starts */
  to.checkpoint_dir = g_dist.chief ? f->checkpoint_dir : NULL;
  if (!r->summaries) to.save_summaries_steps = 0; /* no SummarySaverHook */
  to.scaffold = r->scaffold;                      /* NULL: the MTS makes a default one */
  to.summary_dir = f->summary_dir;
  to.chief_only_hooks = r->chief_hooks;
  to.nchief_only_hooks = r->nchief;
  to.hooks = r->hooks;
  to.nhooks = r->nhooks;
  to.save_checkpoint_steps = f->save_steps;
  to.save_checkpoint_secs = f->save_secs;
  to.async_checkpoint = f->async;
  if (r->shard_hook) { /* sharded: every rank's own hook saves, none of the MTS's */
    to.save_checkpoint_steps = HK_UNSET_STEPS;
    to.save_checkpoint_secs = 0;
  } else if (r->metrics) { /* the log is fsynced before each checkpoint */
    to.checkpoint_listeners = &r->metrics_listener;
    to.ncheckpoint_listeners = 1;
  }
  if (g_dist.chief && f->best_k) { /* --best-k K [--restore-best], ranked by the test loss */
    to.best_k = f->best_k;
    to.best_metric = TEST_LOSS_NAME;
    to.restore_best = f->restore_best;
  }
  if (hk_training_session_new(&r->s, &to, st) != HK_OK) return fail_status("creating the session", st);
  return 0;
}

/* --log-every: the loss of the step just run, through the progress line's
 * sink when there is one. */
static void log_loss(run *r) {
  char line[64];
  if (r->o->f.log_every <= 0 || r->f.gs % r->o->f.log_every != 0 || r->o->f.verbosity < 0) return;
  snprintf(line, sizeof line, "%sstep %" PRId64 ": loss = %.4f", g_dist.tag, r->f.gs, (double)r->last_loss);
  if (r->progress)
    hk_progress_hook_log(r->progress, HK_LOG_INFO, line);
  else
    fprintf(stderr, "%s\n", line);
}

/* After a run failed on a diverging step (the guard's NaN, or a summary op
 * refusing NaN weights): what happened and what is left on disk. */
static void report_divergence(const options *o, int64_t step) {
  fprintf(stderr,
          PROG ": %straining diverged at step %" PRId64
               ": the loss or the weights are no longer finite (--lr %g too large?); that step was not checkpointed\n",
          g_dist.tag, step, o->f.lr);
  if (o->f.checkpoint_dir) {
    hk_status st = HK_STATUS_INIT;
    char *latest = NULL;
    if (hk_checkpoint_latest(&latest, NULL, o->f.checkpoint_dir, NULL, &st) == HK_OK)
      fprintf(stderr, PROG ": %sthe newest checkpoint is the last good one: %s\n", g_dist.tag, latest);
    hk_env_free(NULL, latest);
  }
}

/* A failed step: its error, the session closed with it, and what a
 * divergence left. */
static int report_failed_step(run *r, hk_code rc, const hk_status *st) {
  hk_status cst = HK_STATUS_INIT;
  /* The feeder counts successful steps: the failed one is the next. */
  const int64_t failed_step = r->f.gs + 1;
  fail_status("training step", st);
  hk_session_close(r->s, rc, &cst);
  if (r->t.diverged) report_divergence(r->o, failed_step);
  return DIGITS_EXIT_RUNTIME;
}

/* The training loop: a step (or, on the parameter server's chief, a round of
 * serving) until the session says stop. */
static int train_steps(run *r, hk_status *st) {
  hk_run_args args = {NULL, 0, &r->m.loss, 1, &r->m.train_op, 1, NULL};
  hk_tensor loss;
  hk_code rc = HK_OK;
  double t0;
  if (r->serve != HK_NO_HANDLE) {
    if (hk_graph_op_output(r->m.g, &r->serve, r->serve, 0, st) != HK_OK)
      return fail_status("building the parameter server", st);
    args.fetches = args.targets = &r->serve;
  }
  t0 = hk_env_monotonic(NULL);
  while (!hk_session_should_stop(r->s)) {
    if ((rc = hk_session_run(r->s, &args, &loss, NULL, st)) != HK_OK) break;
    if (!r->ps_chief) r->last_loss = *(const float *)loss.data;
    r->steps_run++;
    log_loss(r);
  }
  r->secs = hk_env_monotonic(NULL) - t0;
  /* The parameter server's chief: every worker left (OUT_OF_RANGE) or a
   * signal stopped the service (CANCELLED): clean stops. */
  if (r->ps_chief && (rc == HK_OUT_OF_RANGE || (rc == HK_CANCELLED && hk_signal_fired()))) rc = HK_OK;
  /* A worker whose wait for its start step ended because the job stops. */
  if (r->ps_worker && rc == HK_CANCELLED && hk_session_should_stop(r->s)) rc = HK_OK;
  return rc == HK_OK ? 0 : report_failed_step(r, rc, st);
}

/* --early-stop-patience: how the evaluations went. */
static void report_early_stopping(const run *r, hk_status *st) {
  hk_early_stopping_info info;
  if (hk_early_stopping_hook_info(&info, r->early_stop, st) != HK_OK || info.best_step == HK_UNSET_STEPS) return;
  fprintf(stderr,
          PROG ": %searly stopping: best test_loss %.6f at step %" PRId64 ", %" PRId64 " evaluations, the last %" PRId64
               " without improvement%s\n",
          g_dist.tag, info.best, info.best_step, info.evaluations, info.wait,
          info.stopped_step != HK_UNSET_STEPS ? "; stopped" : "");
}

/* --ema: " ema_test_accuracy=<z>", the test accuracy of the averaged
 * parameters, for the result line. */
static const char *ema_result(const run *r) {
  static char text[48];
  static const char *const params[4] = {"w1", "b1", "w2", "b2"};
  const float *p[4];
  for (int i = 0; i < 4; i++) {
    hk_tensor t;
    if (hk_ema_hook_average(&t, r->ema, params[i], NULL) != HK_OK) return " ema_test_accuracy=nan";
    p[i] = t.data;
  }
  snprintf(text, sizeof text, " ema_test_accuracy=%.6f", (double)host_accuracy(p[0], p[1], p[2], p[3], r->tst));
  return text;
}

/* Close the session (every hook's end(): the final checkpoint, the test
 * accuracy), then the report on stderr and the result line on stdout. */
static int finish(run *r, hk_status *st) {
  if (hk_session_close(r->s, HK_OK, st) != HK_OK) return fail_status("closing the session", st);
  if (!r->f.have_result) {
    fprintf(stderr, PROG ": %sthe session closed without evaluating the test set\n", g_dist.tag);
    return DIGITS_EXIT_RUNTIME;
  }
  hk_stop_info why;
  char word[64];
  hk_session_stop_reason(&why, r->s, NULL);
  if (r->o->f.verbosity >= 0) {
    if (why.reason != HK_STOP_LAST_STEP)
      fprintf(stderr, PROG ": %sstopped at step %" PRId64 ": %s (%s)\n", g_dist.tag, r->f.final_step,
              hk_stop_reason_name(why.reason), why.detail);
    if (r->early_stop) report_early_stopping(r, st);
    if (r->learning_rate) {
      hk_learning_rate_info info;
      if (hk_learning_rate_hook_info(&info, r->learning_rate, st) == HK_OK && info.rate_step != HK_UNSET_STEPS)
        fprintf(stderr, PROG ": %slearning rate %g at step %" PRId64 ", %" PRId64 " reductions\n", g_dist.tag,
                info.rate, info.rate_step, info.reductions);
    }
    fprintf(stderr, "%straining time: %.3f s for %" PRId64 " steps (%.1f us/step)\n", g_dist.tag, r->secs, r->steps_run,
            r->steps_run ? r->secs * 1e6 / (double)r->steps_run : 0.0);
  }
  if (g_dist.chief && r->o->f.restore_best && r->o->f.verbosity >= 0) digits_report_best(&r->o->f, "test_loss");
  if (g_dist.chief)
    printf("result: step=%" PRId64 " loss=%.6f test_accuracy=%.6f%s stop=%s\n", r->f.final_step,
           r->ps_chief ? r->f.final_loss : (double)r->last_loss, (double)r->f.test_accuracy,
           r->ema ? ema_result(r) : "", digits_stop_word(&why, word, sizeof word));
  else
    fprintf(stderr, PROG ": %sstep=%" PRId64 " test_accuracy=%.6f\n", g_dist.tag, r->f.final_step,
            (double)r->f.test_accuracy);
  return fflush(stdout) == 0 ? 0 : DIGITS_EXIT_RUNTIME;
}

/* Train on the loaded data: build, run and report, each step only when the
 * ones before it succeeded. @return the exit status. */
static int train(const options *o, const digits_data *trn, const digits_data *tst) {
  run r;
  hk_status st = HK_STATUS_INIT;
  int status = run_init(&r, o, trn);
  if (status == 0) status = add_progress_hook(&r, &st);
#ifdef HK_EXAMPLE_MPI
  if (status == 0) status = dist_log_env(&r, &st);
#endif
  r.tst = tst;
  if (status == 0) status = build(&r, tst, &st);
  if (status == 0) status = add_chief_hooks(&r, &st);
  if (status == 0) status = add_hooks(&r, &st);
#ifdef HK_EXAMPLE_MPI
  if (status == 0) status = setup_distributed(&r, &st);
#endif
  if (status == 0) status = setup_checkpoints(&r, &st);
  if (status == 0) status = new_session(&r, &st);
  if (status == 0) status = train_steps(&r, &st);
  if (status == 0) status = finish(&r, &st);
  run_free(&r);
  return status;
}

/* ---- main --------------------------------------------------------------- */

/* Load the data and train, signals already installed. */
static int load_and_train(const options *o) {
  digits_data trn, tst;
  int rc = digits_load(&o->f, &trn, &tst);
  if (rc == DIGITS_STOPPED) {
    /* A stop asked for before training started; nothing was written. */
    fprintf(stderr, PROG ": %sstopped by a signal while loading the data; the checkpoint directory is untouched\n",
            g_dist.tag);
    return 0;
  }
  if (rc != 0) return rc;
  rc = train(o, &trn, &tst);
  digits_data_free(&trn);
  digits_data_free(&tst);
  return rc;
}

/* SIGINT/SIGTERM (--stop-signals) become a clean stop from the very start,
 * before MPI_Init and the data: start-up can take a while, and a signal
 * that arrived before the handler would kill the process. During training
 * the step in progress completes, the session closes normally and the
 * checkpoint hook writes the final step. A synchronous job hands signals
 * over to hooked::mpi's stop hook at once (dist_start()), which stops every
 * rank after the same step. @return 1 when the helper is installed. */
static int install_signals(const options *o) {
  hk_status st = HK_STATUS_INIT;
  if (hk_signal_install_set(digits_stop_signals(&o->f), &st) == HK_OK) return 1;
  fprintf(stderr, PROG ": signals will not stop training cleanly: %s\n", st.message);
  return 0;
}

int main(int argc, char **argv) {
  options o;
  int rc = parse_args(argc, argv, &o);
  if (rc == DIGITS_HELP) {
    usage(stdout);
    return 0;
  }
  if (rc != 0) return rc;
  int installed = install_signals(&o);
#ifdef HK_EXAMPLE_MPI
  if (o.distributed != DIST_NONE && (rc = dist_start(&o, &argc, &argv, &installed)) != 0) return rc;
  if (o.distributed != DIST_NONE) o.f.prog = g_dist.who; /* the data's lines name the rank too */
#endif
  rc = load_and_train(&o);
  if (installed) hk_signal_uninstall(NULL);
#ifdef HK_EXAMPLE_MPI
  if (g_dist.mode != DIST_NONE) dist_end(rc);
#endif
  return rc;
}
