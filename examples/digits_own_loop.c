/*
 * digits_own_loop — the digits MLP of train_digits.c written the way most
 * trainers are written: the program owns its parameter arrays, its math
 * (forward, backward and the SGD or Adam update in plain C on float arrays,
 * in digits_own_model.c), its random number generator, its data iterator
 * and its training loop. hooked
 * comes in through the host loop (hooked/loop.h), which borrows that memory
 * in place: restore at start, periodic and final checkpoints, --steps as the
 * last global step, a clean stop on SIGINT/SIGTERM, and TensorBoard event
 * files: global_step/sec every 100 steps into --summary-dir, by default the
 * checkpoint directory (as MonitoredTrainingSession does), with the loss
 * and the test accuracy when --summary-dir is given.
 *
 * THE HOOKED CHANGE is the #include and 31 lines of train(), marked
 * HOOKED (alone or inside a HOOKED block). 10 of them serve the run's
 * flags: --quiet/--verbose (the env and its log level), --time-limit (a
 * TimeLimitHook, made and freed), --stop-signals, and why the run stopped
 * for the result line (hk_loop_stop_reason()); of the other 21, 16 are the loop: 10 call it
 * (hk_loop_new; hk_loop_add_array for w1, b1, w2, b2 in one two-line loop
 * and for the loss; hk_loop_add_state for the data iterator; hk_loop_start;
 * the step bracketing, 2 lines; hk_loop_finish; hk_loop_free), 5 declare the
 * loop, its status and its options (copied from the flags), 1 prints its
 * error. 5 are --summary-dir, for TensorBoard: 1 points the loop's own
 * StepCounterHook (global_step/sec every 100 steps, by default into the
 * checkpoint directory) at it, and one 4-line statement records the loss
 * and the test accuracy every 100 steps with hk_loop_summary_scalar(). Add
 * the two callbacks iter_save and iter_restore (9 lines) that hand the data
 * iterator's own tell and seek to hk_loop_add_state(). The learning-rate
 * flags (--lr-schedule, --lr-plateau, ...) add a LearningRateHook in
 * add_learning_rate() and two lines marked HOOKED (--lr): the rate the
 * update reads becomes a registered scalar the hook writes before every
 * step, and the test loss is reported to it. Take all that out,
 * loop `while (step < o->steps)`, and what is left is the plain C trainer it
 * started as. --metrics-log adds 13 more: a MetricsLogHook of the loss
 * array and of the test accuracy the program reports (its declaration and
 * its free, a 9-line block that makes it and hands it to the loop, and a
 * 2-line report in the steps that write a row). --optimizer adam adds 2
 * lines marked HOOKED (--optimizer adam): Adam's moments m and v are
 * registered arrays, in every checkpoint; its step count is the global
 * step the loop restores, so it needs no state of its own.
 *
 * --distributed sync (under mpirun, with hooked::mpi) adds 14 lines marked
 * HOOKED (--distributed) and --zero1 2 more; the rest of a rank's job —
 * MPI_Init, the context with its --collective-timeout, the stop agreement
 * that owns the stop signals, the check that every rank has the same
 * global batch — is digits_dist.c's, which any digits trainer can share.
 * 3 lines in main() start and end the job. 6 in train(): the env names the
 * rank in every line (hk_mpi_log_env()), the loop gets the job's group
 * (hk_mpi_group(): with --checkpoint-dir every rank writes its shard of each
 * checkpoint, rank 0 commits it, and a job of any rank count resumes it),
 * the stop hook comes last among the loop's hooks in place of the loop's
 * own signal handlers (a signal to any rank stops every rank after the
 * same step), and checkpoints fall due in steps, every 1000 unless
 * --save-steps says otherwise (a clock differs between ranks). 5 in
 * update(): the program averages its gradients itself — each rank computes
 * the mean gradient of its block of rows of the global batch (hk_mpi_block:
 * 3 ranks take 11, 11 and 10 rows of 32), weighted by its share of the
 * rows, so the average over the ranks is the global batch's mean gradient —
 * with hk_mpi_average(), and the loss with hk_mpi_average_scalar(). With
 * --zero1 each rank keeps m and v of its block of the flat parameter
 * vector only (hk_mpi_block(), the 2 lines of --zero1; registered
 * HK_LOOP_PARTITIONED, so a checkpoint holds each block once and a restart
 * on another rank count re-cuts them), and hk_mpi_average() becomes its
 * two halves: hk_mpi_reduce_scatter_average() gives the rank the mean of
 * its block of the gradient, it updates that block of the parameters, and
 * hk_mpi_allgather_blocks() gives every rank every block. The reduce-
 * scatter's block holds the bits of the full average, so --zero1 computes
 * the parameters of Adam without it bit for bit, with 1/N of the memory
 * for m and v (the log line at the start says how much). Every rank walks
 * the same global batch stream: the data iterator's position is a
 * replicated state, the same on every rank, saved once.
 *
 * The data, its train/test split and the order of the batches follow the
 * recipe of digits_common.h, as in train_digits.c, so the two compare;
 * weights and biases ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)) are drawn here from
 * the program's own SplitMix64 seeded --seed (w1, b1, w2, b2 in order), not
 * by the executor's initializers: same distribution, other numbers than
 * train_digits'; plain SGD with learning rate --lr, or Adam. The parameters
 * live in one flat vector (w1, b1, w2, b2 are views of it), which the
 * averaging and ZeRO-1 cut into blocks.
 *
 * The data iterator is the program's opaque state: its position (epoch and
 * next row) moves with every step and is nowhere else. It is checkpointed
 * through hk_loop_add_state(), and restoring it rebuilds the epoch's
 * shuffle, so a resumed run — even one resumed after a SIGKILL — feeds the
 * batches an uninterrupted run would have fed and reaches bit-identical
 * parameters. Left unregistered, a resumed run would start over at epoch 0
 * and diverge; check_own_loop.sh (kill) compares the final checkpoints of
 * an interrupted and an uninterrupted run byte for byte to catch that.
 *
 * Exit status: 0 success (also after SIGINT/SIGTERM), 1 data or runtime
 * error, 2 usage error.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#if !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif

#include "digits_common.h"
#include "digits_dist.h"
#include "digits_own_model.h"

#include <hooked/hooked.h>

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PROG "digits_own_loop"

/* ---- command line (the flags of digits_common.h, and its own) ------------ */

typedef struct own_options {
  digits_flags f;            /* the flags both digits programs take */
  int adam;                  /* --optimizer adam */
  int zero1;                 /* --zero1 */
  int distributed;           /* --distributed sync */
  double collective_timeout; /* --collective-timeout; HK_UNSET_SECS: hooked::mpi's default */
} own_options;

static void usage(FILE *out) {
  fprintf(out,
          "usage: digits_own_loop [--data PATH] [--steps N] [--batch N] [--lr X] [--seed N]\n"
          "                       [--optimizer sgd|adam] [--log-every N]\n"
          "                       [--checkpoint-dir DIR [--save-steps N | --save-secs S]\n"
          "                       [--async] [--keep N]] [--summary-dir DIR] [--lr-schedule S ...]\n"
          "                       [--lr-plateau PATIENCE[,FACTOR] [--lr-plateau-every N]]\n"
          "                       [--metrics-log PATH [--metrics-format csv|jsonl] [--metrics-every N]]\n"
          "                       [--ema DECAY [--ema-export PATH]] [--best-k K [--restore-best]]\n"
          "                       [--distributed sync [--zero1] [--collective-timeout S]]\n"
          "                       [--quiet | --verbose] [--time-limit S] [--stop-signals LIST] [--help]\n"
          "\n"
          "Train a 64-32-10 MLP on the UCI digits data with the program's own loop and math,\n"
          "checkpointed and stopped by hooked's host loop.\n"
          "\n"
          "  --data PATH      digits CSV, gzip-compressed or plain (default: the bundled\n"
          "                   digits.csv.gz of the source tree)\n"
          "  --steps N        last global step: stop when it is reached (default 3000)\n"
          "  --batch N        rows per step (default 32); distributed, the global batch\n"
          "  --lr X           learning rate, > 0 (default 0.1; 0.01 with --optimizer adam)\n"
          "  --optimizer sgd|adam\n"
          "                   plain SGD (default), or Adam (beta1 0.9, beta2 0.999, epsilon\n"
          "                   1e-8), whose moments m and v are in every checkpoint\n"
          "  --seed N         seed of the initialization and the per-epoch shuffle (default 42)\n"
          "  --log-every N    log the loss to stderr every N steps, 0 for never (default 500)\n"
          "  --checkpoint-dir DIR\n"
          "                   restore the newest checkpoint of DIR that verifies (if any),\n"
          "                   save during training and at the end; global_step/sec\n"
          "                   goes there every 100 steps unless --summary-dir is given\n"
          "  --save-steps N   save every N global steps (default: every 600 s, as TensorFlow;\n"
          "                   distributed, every 1000 steps)\n"
          "  --save-secs S    save every S seconds instead\n"
          "  --async          write checkpoints on a background thread\n"
          "  --keep N         checkpoints to keep, 0 for all (default 5)\n"
          "  --summary-dir DIR\n"
          "                   write TensorBoard event files into DIR: loss and test_accuracy\n"
          "                   every 100 steps, and global_step/sec\n" DIGITS_AVERAGE_USAGE
          "                   (the test metric: the test accuracy, higher is better)\n"
          "%s%s",
          DIGITS_RUN_FLAGS_HELP, digits_lr_usage);
  /* Its own call: one string literal of the whole text would pass the
   * 4095 bytes C requires compilers to accept. */
  fprintf(out,
          "  --metrics-log PATH\n"
          "                   write step, wall_time, loss and test_accuracy to PATH every\n"
          "                   --metrics-every steps, CSV (.csv) or JSON lines (.jsonl); a\n"
          "                   restart keeps the rows up to the restored checkpoint and\n"
          "                   drops the rest, so each step appears once\n"
          "  --metrics-format csv|jsonl  the format, whatever PATH ends in\n"
          "  --metrics-every N  steps between rows (default 100)\n"
          "  --distributed sync\n"
          "                   train as one rank of a synchronous MPI job (under mpirun): each\n"
          "                   rank takes its block of rows of every global batch (--batch, any\n"
          "                   size >= the rank count), the gradients are averaged (hooked::mpi);\n"
          "                   with --checkpoint-dir every rank writes its shard of each\n"
          "                   checkpoint every --save-steps steps, and a job of any rank count\n"
          "                   resumes it; with --async each rank's background writer saves\n"
          "                   its shard. Not with --save-secs, --summary-dir, --metrics-log,\n"
          "                   --ema, --best-k, --lr-schedule or --lr-plateau\n"
          "  --zero1          (--distributed sync, --optimizer adam) each rank keeps Adam's m\n"
          "                   and v of its block of the parameters only (ZeRO-1): it\n"
          "                   reduce-scatters the gradients, updates its block, all-gathers\n"
          "                   the parameters; the same parameters, bit for bit, as without\n"
          "  --collective-timeout S\n"
          "                   a rank that waits S seconds for the others (default 300) ends the\n"
          "                   job with exit status 1, naming the ranks that did not arrive\n"
          "  --help           show this text\n"
          "\n"
          "SIGINT or SIGTERM (--stop-signals) stops training after the current step; with\n"
          "--checkpoint-dir the final checkpoint is written. The result line is printed\n"
          "either way, with why training stopped (last_step, signal:SIGINT, time_limit, ...).\n"
          "Distributed, a signal to any rank stops every rank after the same step, every\n"
          "line on stderr names its rank (rank R/N), and the chief prints the result line.\n"
          "\n"
          "Prints one line on stdout: result: step=<N> loss=<x> test_accuracy=<y> stop=<why>\n");
}

/* The flags only this program takes (digits_extra_flags). */
static int parse_own_flag(void *user, const char *flag, const char *value) {
  own_options *o = user;
  if (value == NULL) { /* --zero1 */
    o->zero1 = 1;
    return 0;
  }
  if (strcmp(flag, "--optimizer") == 0) {
    if (strcmp(value, "sgd") != 0 && strcmp(value, "adam") != 0)
      return digits_usage_error(PROG, "--optimizer '%s' is neither sgd nor adam", value);
    o->adam = value[0] == 'a';
    return 0;
  }
  if (strcmp(flag, "--collective-timeout") == 0) return digits_parse_timeout(PROG, flag, value, &o->collective_timeout);
  if (strcmp(value, "sync") != 0) return digits_usage_error(PROG, "--distributed '%s' is not sync", value);
#ifdef HK_EXAMPLE_MPI
  o->distributed = 1;
  return 0;
#else
  return digits_usage_error(
      PROG, "--distributed: this digits_own_loop was built without MPI (install libopenmpi-dev and rebuild)");
#endif
}

/* Whether argv gives --lr (Adam's default rate is another). */
static int lr_given(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--lr") == 0 || strncmp(argv[i], "--lr=", 5) == 0) return 1;
  return 0;
}

/* @return 0 to go on, DIGITS_HELP, or an exit status. */
static int parse_args(int argc, char **argv, own_options *o) {
  static const char *const switches[] = {"--zero1", NULL};
  static const char *const valued[] = {"--optimizer", "--distributed", "--collective-timeout", NULL};
  const digits_extra_flags extra = {switches, valued, parse_own_flag, o};
  const digits_flags *f = &o->f;
  int rc;

  o->adam = o->zero1 = o->distributed = 0;
  o->collective_timeout = HK_UNSET_SECS;
  if ((rc = digits_parse_flags(&o->f, PROG, argc, argv, &extra)) != 0) return rc;
  if (o->adam && !lr_given(argc, argv)) o->f.lr = 0.01;
  if (o->zero1 && (!o->distributed || !o->adam))
    return digits_usage_error(PROG, "--zero1 needs --distributed sync and --optimizer adam");
  if (!o->distributed && !hk_secs_is_unset(o->collective_timeout))
    return digits_usage_error(PROG, "--collective-timeout needs --distributed");
  if (!o->distributed) return 0;
  /* Every rank saves its shard at the same steps (the saves are
   * collectives), and every rank computes the same model: what one rank
   * alone would write or decide has no place here yet. */
  if (!hk_secs_is_unset(f->save_secs))
    return digits_usage_error(PROG,
                              "--save-secs: with --distributed sync every rank saves its shard at the same "
                              "steps; give --save-steps");
  if (f->summary_dir || f->metrics_log || f->ema_decay >= 0 || f->best_k || f->lr_flags.schedule >= 0 ||
      f->lr_flags.patience >= 0)
    return digits_usage_error(PROG,
                              "--summary-dir, --metrics-log, --ema, --best-k, --lr-schedule and --lr-plateau "
                              "do not combine with --distributed sync");
  return 0;
}

/* ---- the data iterator: the program's state across steps ---------------- */

/*
 * Hands out the training rows batch by batch in the order of a per-epoch
 * shuffle; a new epoch (and shuffle) starts when fewer than `batch` rows
 * are left, so the partial last batch is dropped. Its position is saved as
 * ITER_STATE_BYTES bytes (epoch and next row, little-endian), and seeking
 * to a saved position rebuilds that epoch's shuffle. In a synchronous job
 * every rank walks the same stream of global batches (the same seed, the
 * same position) and takes its block of rows of each: the position is the
 * same on every rank, a replicated state that any rank count restores.
 */
#define ITER_STATE_BYTES 16

typedef struct data_iter {
  const digits_data *train;
  int64_t batch;           /* the global batch */
  int64_t row_first, rows; /* the rows of each batch this rank takes (all of them in one process) */
  uint64_t seed;
  int64_t epoch;  /* the epoch `perm` shuffles */
  int64_t next;   /* index into perm of the next batch's first row */
  uint32_t *perm; /* train->n */
} data_iter;

static void iter_seek_to(data_iter *it, int64_t epoch, int64_t next) {
  it->epoch = epoch;
  it->next = next;
  fisher_yates(it->perm, it->train->n, epoch_seed(it->seed, epoch));
}

/* Copy this rank's rows of the next batch into x (rows * NPIX) and y (rows). */
static void iter_next(data_iter *it, float *x, int32_t *y) {
  if (it->next + it->batch > (int64_t)it->train->n) iter_seek_to(it, it->epoch + 1, 0);
  for (int64_t r = 0; r < it->rows; r++) {
    size_t row = it->perm[it->next + it->row_first + r];
    memcpy(x + r * NPIX, it->train->x + row * NPIX, sizeof(float) * NPIX);
    y[r] = it->train->y[row];
  }
  it->next += it->batch;
}

static void put_le64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static void iter_tell(const data_iter *it, unsigned char out[ITER_STATE_BYTES]) {
  put_le64(out, (uint64_t)it->epoch);
  put_le64(out + 8, (uint64_t)it->next);
}

/* @return NULL, or why `in` is not a position in this data. */
static const char *iter_seek(data_iter *it, const unsigned char in[ITER_STATE_BYTES]) {
  int64_t epoch = (int64_t)get_le64(in), next = (int64_t)get_le64(in + 8);
  if (epoch < 0 || next < 0 || next > (int64_t)it->train->n) return "position outside the training data";
  iter_seek_to(it, epoch, next);
  return NULL;
}

/* HOOKED: the iterator's tell and seek as the callbacks of hk_loop_add_state(). */
static hk_code iter_save(void *it, void *dst, size_t size, hk_status *status) {
  (void)size, (void)status;
  iter_tell(it, dst);
  return HK_OK;
}

static hk_code iter_restore(void *it, const void *src, size_t size, hk_status *status) {
  const char *why = iter_seek(it, src);
  (void)size;
  return why ? hk_status_set(status, HK_INVALID_ARGUMENT, "data_iter: %s", why) : HK_OK;
}

/* ---- training ----------------------------------------------------------- */

static double now_secs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* --ema: an ExponentialMovingAverage hook on the weights, one of the
 * loop's own hooks (it runs before the checkpoint hook, which saves its
 * averages), exporting them at the end with --ema-export. */
static hk_code add_ema(hk_loop *loop, const digits_flags *o, hk_hook **ema, hk_status *st) {
  static const char *const weights[NPARAMS] = {"w1", "b1", "w2", "b2"};
  hk_ema_options eo = HK_EMA_OPTIONS_INIT;
  eo.variables = weights, eo.nvariables = NPARAMS, eo.decay = o->ema_decay, eo.export_path = o->ema_export;
  if (hk_ema_hook_new(ema, &eo, st) != HK_OK) return st->code;
  return hk_loop_add_ema(loop, *ema, st);
}

/* The test accuracy of the averaged weights. */
static float ema_accuracy(const hk_hook *ema, const digits_data *test) {
  static model avg; /* too large for some stacks */
  for (int i = 0; i < NPARAMS; i++) {
    hk_tensor t;
    if (hk_ema_hook_average(&t, ema, own_params[i].name, NULL) != HK_OK) return NAN;
    memcpy(avg.p + own_params[i].offset, t.data, t.nbytes);
  }
  return own_accuracy(&avg, test);
}

/* The report on stderr and the result line on stdout, with why it stopped;
 * a rank of a job other than the chief says its step and accuracy on
 * stderr instead. */
static int report(const digits_flags *o, const digits_dist *d, const hk_stop_info *why, int64_t step, int64_t steps_run,
                  double secs, float loss, float acc, float ema_acc) {
  char word[64], ema[48] = "";
  if (o->verbosity >= 0) {
    if (why->reason != HK_STOP_LAST_STEP)
      fprintf(stderr, PROG ": %sstopped at step %" PRId64 ": %s (%s)\n", d->tag, step, hk_stop_reason_name(why->reason),
              why->detail);
    fprintf(stderr, "%straining time: %.3f s for %" PRId64 " steps (%.1f us/step)\n", d->tag, secs, steps_run,
            steps_run ? secs * 1e6 / (double)steps_run : 0.0);
  }
  if (!d->chief) {
    fprintf(stderr, PROG ": %sstep=%" PRId64 " test_accuracy=%.6f\n", d->tag, step, (double)acc);
    return 0;
  }
  if (o->ema_decay >= 0) snprintf(ema, sizeof ema, " ema_test_accuracy=%.6f", (double)ema_acc);
  printf("result: step=%" PRId64 " loss=%.6f test_accuracy=%.6f%s stop=%s\n", step, (double)loss, (double)acc, ema,
         digits_stop_word(why, word, sizeof word));
  return fflush(stdout) == 0 ? 0 : DIGITS_EXIT_RUNTIME;
}

/* ---- the update: the optimizer, and the averaging of a synchronous job -- */

/* The optimizer's state: Adam's moments of the parameters
 * [first, first + len) — all of them, or with --zero1 this rank's block. */
typedef struct optimizer {
  int adam, zero1;
  size_t first, len;
  int64_t dim;    /* len, as the loop's dims */
  unsigned flags; /* the loop's flags of m and v: --zero1, HK_LOOP_PARTITIONED */
  float *m, *v;   /* len each; NULL for SGD */
  float share;    /* this rank's weight in the global batch's mean gradient */
} optimizer;

/* The moments of the parameters this rank updates (the block
 * hk_mpi_block() gives it with --zero1), zero; what they weigh on stderr.
 * @return 0, or nonzero when out of memory. */
static int optimizer_init(optimizer *op, const own_options *o, const digits_dist *d, int64_t rows) {
  memset(op, 0, sizeof *op);
  op->adam = o->adam, op->zero1 = o->zero1;
  op->len = NFLAT;
  /* The mean of the ranks' gradients is the global batch's mean gradient
   * when each rank's (the mean over its rows) is weighted by its share of
   * the rows: 1 when every rank has as many (exactly: such a job's bits do
   * not change). */
  op->share = (float)((double)rows * d->size / (double)o->f.batch);
#ifdef HK_EXAMPLE_MPI
  if (op->zero1 && hk_mpi_block(&op->first, &op->len, NFLAT, d->size, d->rank, NULL) != HK_OK) /* HOOKED (--zero1) */
    return 1;
#endif
  op->dim = (int64_t)op->len;
  op->flags = op->zero1 ? HK_LOOP_PARTITIONED : HK_LOOP_DEFAULT;
  if (!op->adam) return 0;
  op->m = calloc(op->len, sizeof(float));
  op->v = calloc(op->len, sizeof(float));
  if (o->f.verbosity >= 0)
    fprintf(stderr, PROG ": %sadam: m and v of %zu of the %d parameters on this rank: %zu bytes%s\n", d->tag, op->len,
            NFLAT, 2 * op->len * sizeof(float), op->zero1 ? " (--zero1: its block)" : "");
  return op->m == NULL || op->v == NULL;
}

/* One step on this rank's rows of s->x, s->y at global step `step`: the
 * gradient, averaged over the job, and the update. *loss = the global
 * batch's mean loss. @return HK_OK, or hooked::mpi's error. */
static hk_code update(model *m, scratch *s, const optimizer *op, const digits_dist *d, int64_t rows, int64_t step,
                      float lr, float *loss, hk_status *st) {
  double l = own_gradient(m, s, rows);
  (void)st;
#ifdef HK_EXAMPLE_MPI
  if (d->on) {
    if (op->share != 1.0f) {
      for (size_t i = 0; i < NFLAT; i++) s->g[i] *= op->share;
      l *= op->share;
    }
    /* HOOKED (--distributed): the means over the job; --zero1: of this rank's block only */
    if (hk_mpi_average_scalar(d->mpi, &l, st) != HK_OK ||
        (op->zero1 ? hk_mpi_reduce_scatter_average : hk_mpi_average)(d->mpi, HK_DTYPE_F32, s->g, NFLAT, st) != HK_OK)
      return st->code;
  }
#else
  (void)d;
#endif
  *loss = (float)l;
  if (op->adam)
    own_adam(m->p, s->g, op->m, op->v, op->first, op->len, lr, step + 1);
  else
    own_sgd(m->p, s->g, 0, NFLAT, lr);
#ifdef HK_EXAMPLE_MPI
  if (op->zero1) /* HOOKED (--distributed): every rank's updated block to every rank */
    return hk_mpi_allgather_blocks(d->mpi, HK_DTYPE_F32, m->p, NFLAT, st);
#endif
  return HK_OK;
}

/* HOOKED (--lr): the learning-rate flags as a LearningRateHook among the
 * loop's own hooks, writing `lr` (registered, not checkpointed: the hook
 * writes it before every step) and, with --lr-plateau, watching the test
 * loss the program reports; its plateau state is in every checkpoint.
 * Without those flags *hook stays NULL and the rate stays --lr. */
static void add_learning_rate(hk_loop *loop, const digits_flags *o, float *lr, hk_hook **hook, hk_status *st) {
  hk_learning_rate_options lo;
  if (!digits_lr_options(o, "learning_rate", &lo)) return;
  if (o->lr_flags.patience >= 0) {
    lo.monitor = "test_loss";
    lo.reported = 1;
    lo.every_n_steps = HK_UNSET_STEPS; /* the program reports every --lr-plateau-every steps */
    lo.state = "learning_rate_state";
  }
  lo.summary_dir = o->summary_dir ? o->summary_dir : o->checkpoint_dir;
  if (hk_loop_add_array(loop, "learning_rate", HK_DTYPE_F32, 0, NULL, lr, HK_LOOP_NO_CHECKPOINT, st) != HK_OK ||
      hk_learning_rate_hook_new(hook, &lo, st) != HK_OK)
    return; /* the error is in st; a failed registration is the loop's too (sticky) */
  hk_loop_add_learning_rate(loop, *hook, st);
}

/* What the LearningRateHook did, on stderr. */
static void report_learning_rate(const hk_hook *hook) {
  hk_learning_rate_info info;
  if (hook == NULL || hk_learning_rate_hook_info(&info, hook, NULL) != HK_OK || info.rate_step == HK_UNSET_STEPS)
    return;
  fprintf(stderr, PROG ": learning rate %g at step %" PRId64 ", %" PRId64 " reductions\n", info.rate, info.rate_step,
          info.reductions);
}

/* --best-k ranks the checkpoint of each save by the test accuracy: evaluate
 * it before the steps that end in a save. */
static int save_due(const digits_flags *o, int64_t step) {
  return o->save_steps == HK_UNSET_STEPS || step % o->save_steps == 0 || step == o->steps;
}

/* The plain C trainer, with the HOOKED lines that make it a hooked one. */
static int train(const own_options *oo, const digits_dist *d, const digits_data *trn, const digits_data *tst) {
  const digits_flags *o = &oo->f;
  const param *p = own_params;
  model m;
  optimizer op;
  int64_t row_first, rows; /* this rank's rows of each batch */
  digits_dist_rows(d, o->batch, &row_first, &rows);
  scratch *s = scratch_new(rows);
  data_iter it = {trn, o->batch, row_first, rows, o->seed, 0, 0, NULL};
  float loss = NAN;     /* of the last step */
  float test_acc = NAN; /* --best-k: the test accuracy at the last save */
  int64_t step = 0, steps_run = 0;
  int status = DIGITS_EXIT_RUNTIME;
  double t0, secs;
  hk_status st = HK_STATUS_INIT; /* HOOKED */
  hk_loop *loop = NULL;          /* HOOKED */
  hk_hook *lr_hook = NULL;       /* HOOKED (--lr) */
  float lr = (float)o->lr;       /* what the update reads */
  const int64_t plateau_every = o->lr_flags.plateau_every == HK_UNSET_STEPS ? 100 : o->lr_flags.plateau_every;
  hk_hook *metrics = NULL;          /* HOOKED: --metrics-log */
  hk_hook *ema = NULL;              /* HOOKED: --ema */
  hk_hook *hooks[2] = {NULL, NULL}; /* HOOKED: --time-limit; distributed, the stop agreement after it */
  hk_stop_info why;                 /* HOOKED: why it stopped */
  hk_env env;                       /* HOOKED: --quiet / --verbose */

  it.perm = malloc(trn->n * sizeof *it.perm);
  if (s == NULL || it.perm == NULL || optimizer_init(&op, oo, d, rows) != 0) {
    fprintf(stderr, PROG ": %sout of memory\n", d->tag);
    goto out;
  }
  own_init(&m, o->seed);
  iter_seek_to(&it, 0, 0);

  /* ==== HOOKED: the loop, its options from the flags, the program's memory registered in place ==== */
  hk_env_init(&env, HK_ENV_VERSION);
  digits_env_levels(o, &env);
  if (digits_time_limit_hook(o, &hooks[0]) != 0) goto out;
  hk_loop_options lo = HK_LOOP_OPTIONS_INIT;
  lo.env = &env, lo.stop_signals = digits_stop_signals(o); /* --stop-signals */
  lo.hooks = hooks, lo.nhooks = hooks[0] != NULL;          /* --time-limit */
  lo.checkpoint_dir = o->checkpoint_dir, lo.max_to_keep = o->keep, lo.async_checkpoint = o->async;
  lo.last_step = o->steps, lo.save_steps = o->save_steps, lo.save_secs = o->save_secs; /* unset: every 600 s */
  lo.summary_dir = o->summary_dir; /* global_step/sec every 100 steps; NULL: into the checkpoint dir */
  lo.best_k = o->best_k, lo.restore_best = o->restore_best; /* --best-k K [--restore-best] */
  if (o->best_k) lo.best_metric = "test_accuracy", lo.best_mode = HK_MONITOR_MAX;
#ifdef HK_EXAMPLE_MPI
  if (d->on) { /* HOOKED (--distributed): one job of the group's ranks, each writing its shard */
    if (hk_mpi_log_env(&env, d->mpi, &env, &st) != HK_OK) goto failed;             /* every line names its rank */
    lo.group = hk_mpi_group(), lo.group_user = d->ckpt_mpi ? d->ckpt_mpi : d->mpi; /* --async: the writer's own */
    lo.handle_signals = 0, lo.stop_signals = 0, hooks[lo.nhooks++] = d->stop;      /* it owns the signals */
    lo.save_steps = o->checkpoint_dir && o->save_steps == HK_UNSET_STEPS ? 1000 : o->save_steps; /* not a clock */
  }
#endif
  if (hk_loop_new(&loop, &lo, &st) != HK_OK) goto failed;
  for (int i = 0; i < NPARAMS; i++) /* w1, b1, w2, b2: views into the flat vector m.p */
    hk_loop_add_array(loop, p[i].name, HK_DTYPE_F32, p[i].rank, p[i].dims, m.p + p[i].offset, 0, &st);
  for (int i = 0; op.adam && i < 2; i++) /* HOOKED (--optimizer adam): m, v; --zero1: this rank's blocks */
    hk_loop_add_array(loop, i ? "adam_v" : "adam_m", HK_DTYPE_F32, 1, &op.dim, i ? op.v : op.m, op.flags, &st);
  hk_loop_add_array(loop, "loss", HK_DTYPE_F32, 0, NULL, &loss, HK_LOOP_NO_CHECKPOINT, &st);
  hk_loop_add_array(loop, "test_accuracy", HK_DTYPE_F32, 0, NULL, &test_acc, HK_LOOP_NO_CHECKPOINT, &st);
  if (o->ema_decay >= 0 && add_ema(loop, o, &ema, &st) != HK_OK) goto failed;
  hk_loop_add_state(loop, "data_iter", ITER_STATE_BYTES, iter_save, iter_restore, &it, HK_LOOP_DEFAULT, &st);
  add_learning_rate(loop, o, &lr, &lr_hook, &st); /* HOOKED (--lr) */
  if (o->metrics_log) { /* --metrics-log: the loss array and the reported test accuracy, before the saver */
    static const char *const tensors[] = {"loss"}, *const reported[] = {"test_accuracy"};
    hk_metrics_log_options mo = HK_METRICS_LOG_OPTIONS_INIT;
    mo.path = o->metrics_log, mo.format = (hk_metrics_log_format)o->metrics_format;
    mo.tensors = tensors, mo.ntensors = 1, mo.reported = reported, mo.nreported = 1;
    mo.every_n_steps = o->metrics_every;
    if (hk_metrics_log_hook_new(&metrics, &mo, &st) != HK_OK || hk_loop_add_metrics_log(loop, metrics, &st) != HK_OK)
      goto failed;
  }
  hk_loop_start(loop, &step, &st); /* restores into m, op, it (and step), or keeps them */
  /* ==== end HOOKED (errors are sticky: hk_loop_finish() below returns the first) ==== */

  if (step > 0 && o->verbosity >= 0) fprintf(stderr, PROG ": %sresumed at step %" PRId64 "\n", d->tag, step);
  t0 = now_secs();
  while (!hk_loop_should_stop(loop) && hk_loop_step_begin(loop, NULL, &st) == HK_OK) { /* HOOKED */
    iter_next(&it, s->x, s->y);
    if (update(&m, s, &op, d, rows, step, lr, &loss, &st) != HK_OK) goto failed;
    if (lr_hook && o->lr_flags.patience >= 0 && (step + 1) % plateau_every == 0) /* HOOKED (--lr): test loss */
      hk_learning_rate_report(lr_hook, own_test_loss(&m, tst), &st);
    if (metrics && (step + 1) % o->metrics_every == 0) /* HOOKED: the row of this step has it */
      hk_metrics_log_report(metrics, "test_accuracy", own_accuracy(&m, tst), &st);
    if (o->best_k && save_due(o, step + 1)) test_acc = own_accuracy(&m, tst);
    hk_loop_step_end(loop, &st); /* HOOKED: the global step moves, a checkpoint due is saved */
    step++;
    steps_run++;
    if (o->log_every > 0 && step % o->log_every == 0 && o->verbosity >= 0 && d->chief)
      fprintf(stderr, "%sstep %" PRId64 ": loss = %.4f\n", d->tag, step, (double)loss);
    if (o->summary_dir && step % 100 == 0 && /* HOOKED: TensorBoard scalars at the loop's global step */
        (hk_loop_summary_scalar(loop, o->summary_dir, "loss", loss, &st) != HK_OK ||
         hk_loop_summary_scalar(loop, o->summary_dir, "test_accuracy", own_accuracy(&m, tst), &st) != HK_OK))
      goto failed; /* HOOKED */
  }
  secs = now_secs() - t0;
  if (hk_loop_finish(loop, &st) != HK_OK)
    goto failed; /* HOOKED: the final checkpoint (--restore-best: then the best) */
  report_learning_rate(lr_hook);
  if (o->restore_best && o->verbosity >= 0) digits_report_best(o, "test_accuracy");
  hk_loop_stop_reason(&why, loop, NULL); /* HOOKED */
  status = report(o, d, &why, step, steps_run, secs, loss, own_accuracy(&m, tst), ema ? ema_accuracy(ema, tst) : NAN);
  goto out;

failed:
  fprintf(stderr, PROG ": %s%s: %s\n", d->tag, hk_code_name(st.code), st.message); /* HOOKED */
out:
  hk_loop_free(loop);                              /* HOOKED */
  hk_hook_free(lr_hook);                           /* HOOKED (--lr) */
  hk_hook_free(metrics);                           /* HOOKED: after the loop that borrowed it */
  hk_hook_free(ema);                               /* HOOKED (--ema) */
  if (hooks[0] != d->stop) hk_hook_free(hooks[0]); /* HOOKED: --time-limit (the stop hook is the job's) */
  scratch_free(s);
  free(it.perm);
  free(op.m);
  free(op.v);
  return status;
}

int main(int argc, char **argv) {
  own_options o;
  digits_dist d;
  digits_data trn, tst;
  int rc = parse_args(argc, argv, &o);

  if (rc == DIGITS_HELP) {
    usage(stdout);
    return 0;
  }
  if (rc != 0) return rc;
  digits_dist_single(&d, PROG);
#ifdef HK_EXAMPLE_MPI
  if (o.distributed &&
      (rc = digits_dist_start(&d, PROG, &o.f, o.collective_timeout, &argc, &argv)) != 0) /* HOOKED (--distributed) */
    return rc;
  o.f.prog = d.who; /* the data's lines name the rank too */
#endif
  /* No signal handler is installed yet in a single process (the loop
   * installs its own at start), so a signal while loading ends the
   * program as usual; in a job the stop hook has them already. */
  if ((rc = digits_load(&o.f, &trn, &tst)) == 0) {
    rc = train(&o, &d, &trn, &tst);
    digits_data_free(&trn);
    digits_data_free(&tst);
  } else {
    rc = DIGITS_EXIT_RUNTIME;
  }
#ifdef HK_EXAMPLE_MPI
  if (d.on) digits_dist_end(&d, rc); /* HOOKED (--distributed) */
#endif
  return rc;
}
