/*
 * digits_own_loop — the digits MLP of train_digits.c written the way most
 * trainers are written: the program owns its parameter arrays, its math
 * (forward, backward and the SGD update in plain C on float arrays), its
 * random number generator, its data iterator and its training loop. hooked
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
 * 2-line report in the steps that write a row).
 *
 * The data, its train/test split and the order of the batches follow the
 * recipe of digits_common.h, as in train_digits.c, so the two compare;
 * weights and biases ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)) are drawn here from
 * the program's own SplitMix64 seeded --seed (w1, b1, w2, b2 in order), not
 * by the executor's initializers: same distribution, other numbers than
 * train_digits'; plain SGD with learning rate --lr.
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

#include <hooked/hooked.h>

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PROG "digits_own_loop"
#define NHID 32
#define NPARAMS 4

/* A float uniform in [0, 1) from the SplitMix64 generator of digits_common.h:
 * the top 24 bits of one output. */
static double uniform01(uint64_t *state) { return (double)(splitmix64_next(state) >> 40) * 0x1p-24; }

/* ---- command line (the flags of digits_common.h) ------------------------ */

static void usage(FILE *out) {
  fprintf(out,
          "usage: digits_own_loop [--data PATH] [--steps N] [--batch N] [--lr X] [--seed N]\n"
          "                       [--log-every N] [--checkpoint-dir DIR [--save-steps N | --save-secs S]\n"
          "                       [--async] [--keep N]] [--summary-dir DIR] [--lr-schedule S ...]\n"
          "                       [--lr-plateau PATIENCE[,FACTOR] [--lr-plateau-every N]]\n"
          "                       [--metrics-log PATH [--metrics-format csv|jsonl] [--metrics-every N]]\n"
          "                       [--ema DECAY [--ema-export PATH]] [--best-k K [--restore-best]]\n"
          "                       [--quiet | --verbose] [--time-limit S] [--stop-signals LIST] [--help]\n"
          "\n"
          "Train a 64-32-10 MLP on the UCI digits data with the program's own loop and math,\n"
          "checkpointed and stopped by hooked's host loop.\n"
          "\n"
          "  --data PATH      digits CSV, gzip-compressed or plain (default: the bundled\n"
          "                   digits.csv.gz of the source tree)\n"
          "  --steps N        last global step: stop when it is reached (default 3000)\n"
          "  --batch N        rows per step (default 32)\n"
          "  --lr X           SGD learning rate, > 0 (default 0.1)\n"
          "  --seed N         seed of the initialization and the per-epoch shuffle (default 42)\n"
          "  --log-every N    log the loss to stderr every N steps, 0 for never (default 500)\n"
          "  --checkpoint-dir DIR\n"
          "                   restore the newest checkpoint of DIR that verifies (if any),\n"
          "                   save during training and at the end; global_step/sec\n"
          "                   goes there every 100 steps unless --summary-dir is given\n"
          "  --save-steps N   save every N global steps (default: every 600 s, as TensorFlow)\n"
          "  --save-secs S    save every S seconds instead\n"
          "  --async          write checkpoints on a background thread\n"
          "  --keep N         checkpoints to keep, 0 for all (default 5)\n"
          "  --summary-dir DIR\n"
          "                   write TensorBoard event files into DIR: loss and test_accuracy\n"
          "                   every 100 steps, and global_step/sec\n" DIGITS_AVERAGE_USAGE
          "                   (the test metric: the test accuracy, higher is better)\n"
          "%s%s"
          "  --metrics-log PATH\n"
          "                   write step, wall_time, loss and test_accuracy to PATH every\n"
          "                   --metrics-every steps, CSV (.csv) or JSON lines (.jsonl); a\n"
          "                   restart keeps the rows up to the restored checkpoint and\n"
          "                   drops the rest, so each step appears once\n"
          "  --metrics-format csv|jsonl  the format, whatever PATH ends in\n"
          "  --metrics-every N  steps between rows (default 100)\n"
          "  --help           show this text\n"
          "\n"
          "SIGINT or SIGTERM (--stop-signals) stops training after the current step; with\n"
          "--checkpoint-dir the final checkpoint is written. The result line is printed\n"
          "either way, with why training stopped (last_step, signal:SIGINT, time_limit, ...).\n"
          "\n"
          "Prints one line on stdout: result: step=<N> loss=<x> test_accuracy=<y> stop=<why>\n",
          DIGITS_RUN_FLAGS_HELP, digits_lr_usage);
}

/* ---- the data iterator: the program's state across steps ---------------- */

/*
 * Hands out the training rows batch by batch in the order of a per-epoch
 * shuffle; a new epoch (and shuffle) starts when fewer than `batch` rows
 * are left, so the partial last batch is dropped. Its position is saved as
 * ITER_STATE_BYTES bytes (epoch and next row, little-endian), and seeking
 * to a saved position rebuilds that epoch's shuffle.
 */
#define ITER_STATE_BYTES 16

typedef struct data_iter {
  const digits_data *train;
  int64_t batch;
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

/* Copy the next batch into x (batch * NPIX) and y (batch). */
static void iter_next(data_iter *it, float *x, int32_t *y) {
  if (it->next + it->batch > (int64_t)it->train->n) iter_seek_to(it, it->epoch + 1, 0);
  for (int64_t r = 0; r < it->batch; r++) {
    size_t row = it->perm[it->next + r];
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

/* ---- the model ---------------------------------------------------------- */

typedef struct model {
  float w1[NPIX * NHID], b1[NHID]; /* hpre = x w1 + b1, h = relu(hpre) */
  float w2[NHID * NCLS], b2[NCLS]; /* logits = h w2 + b2 */
} model;

/* One entry per parameter array: what the initialization and the
 * checkpoints go through. */
typedef struct param {
  const char *name;
  int32_t rank;
  int64_t dims[2];
  int64_t fan_in;
  float *data;
} param;

static int64_t param_size(const param *p) { return p->rank == 1 ? p->dims[0] : p->dims[0] * p->dims[1]; }

/* U(-1/sqrt(fan_in), 1/sqrt(fan_in)) from one SplitMix64 stream seeded `seed`. */
static void init_params(const param *params, size_t n, uint64_t seed) {
  uint64_t rng = seed;
  for (size_t i = 0; i < n; i++) {
    double bound = 1.0 / sqrt((double)params[i].fan_in);
    for (int64_t k = 0; k < param_size(&params[i]); k++)
      params[i].data[k] = (float)(-bound + 2.0 * bound * uniform01(&rng));
  }
}

/* Scratch of a step, sized once for the batch: a step allocates nothing. */
typedef struct scratch {
  float *x;    /* batch * NPIX */
  int32_t *y;  /* batch */
  float *hpre; /* batch * NHID, pre-activation */
  float *h;    /* batch * NHID */
  float *dl;   /* batch * NCLS, d loss / d logits */
  float *dh;   /* batch * NHID, d loss / d hpre */
  float gw1[NPIX * NHID], gb1[NHID], gw2[NHID * NCLS], gb2[NCLS];
} scratch;

/* One row through the model. Most pixels are 0, and skipping them halves
 * the first layer's work. */
static void forward_row(const model *m, const float *x, float hpre[NHID], float h[NHID], float logits[NCLS]) {
  memcpy(hpre, m->b1, sizeof(float) * NHID);
  for (int i = 0; i < NPIX; i++) {
    const float xi = x[i];
    const float *wr = m->w1 + i * NHID;
    if (xi == 0.0f) continue;
    for (int j = 0; j < NHID; j++) hpre[j] += xi * wr[j];
  }
  for (int j = 0; j < NHID; j++) h[j] = hpre[j] > 0.0f ? hpre[j] : 0.0f;
  memcpy(logits, m->b2, sizeof(float) * NCLS);
  for (int j = 0; j < NHID; j++) {
    const float hj = h[j];
    const float *wr = m->w2 + j * NCLS;
    for (int k = 0; k < NCLS; k++) logits[k] += hj * wr[k];
  }
}

/* Forward, backward (softmax cross-entropy: d loss / d logits = (p - onehot)
 * / batch) and the SGD update of s->x, s->y, in place.
 * @return the batch's mean loss. */
static float train_step(model *m, scratch *s, int64_t B, float lr) {
  double loss = 0.0;

  for (int64_t n = 0; n < B; n++) {
    float *hp = s->hpre + n * NHID, *hn = s->h + n * NHID, *dl = s->dl + n * NCLS;
    float logits[NCLS], mx, sum = 0.0f;
    int32_t label = s->y[n];

    forward_row(m, s->x + n * NPIX, hp, hn, logits);
    mx = logits[0];
    for (int k = 1; k < NCLS; k++) mx = logits[k] > mx ? logits[k] : mx;
    for (int k = 0; k < NCLS; k++) {
      dl[k] = expf(logits[k] - mx);
      sum += dl[k];
    }
    /* -log softmax(logits)[label], computed stably. */
    loss += (double)(logf(sum) + mx - logits[label]);
    for (int k = 0; k < NCLS; k++) dl[k] = (dl[k] / sum - (k == label ? 1.0f : 0.0f)) / (float)B;
  }

  /* Every gradient is taken before any parameter moves: dh needs the old w2. */
  memset(s->gw2, 0, sizeof s->gw2);
  memset(s->gb2, 0, sizeof s->gb2);
  memset(s->gw1, 0, sizeof s->gw1);
  memset(s->gb1, 0, sizeof s->gb1);
  for (int64_t n = 0; n < B; n++) {
    const float *hn = s->h + n * NHID, *hp = s->hpre + n * NHID, *dl = s->dl + n * NCLS;
    const float *xn = s->x + n * NPIX;
    float *dh = s->dh + n * NHID;
    for (int j = 0; j < NHID; j++) {
      float *g = s->gw2 + j * NCLS;
      const float *wr = m->w2 + j * NCLS;
      float acc = 0.0f;
      for (int k = 0; k < NCLS; k++) {
        g[k] += hn[j] * dl[k];
        acc += dl[k] * wr[k];
      }
      dh[j] = hp[j] > 0.0f ? acc : 0.0f;
    }
    for (int k = 0; k < NCLS; k++) s->gb2[k] += dl[k];
    for (int i = 0; i < NPIX; i++) {
      const float xi = xn[i];
      float *g = s->gw1 + i * NHID;
      if (xi == 0.0f) continue;
      for (int j = 0; j < NHID; j++) g[j] += xi * dh[j];
    }
    for (int j = 0; j < NHID; j++) s->gb1[j] += dh[j];
  }

  for (int i = 0; i < NPIX * NHID; i++) m->w1[i] -= lr * s->gw1[i];
  for (int j = 0; j < NHID; j++) m->b1[j] -= lr * s->gb1[j];
  for (int i = 0; i < NHID * NCLS; i++) m->w2[i] -= lr * s->gw2[i];
  for (int k = 0; k < NCLS; k++) m->b2[k] -= lr * s->gb2[k];
  return (float)(loss / (double)B);
}

/* The fraction of `test` classified right (ties go to the lowest class). */
static float accuracy(const model *m, const digits_data *test) {
  int64_t correct = 0;
  for (size_t r = 0; r < test->n; r++) {
    float hpre[NHID], h[NHID], logits[NCLS];
    int best = 0;
    forward_row(m, test->x + r * NPIX, hpre, h, logits);
    for (int k = 1; k < NCLS; k++)
      if (logits[k] > logits[best]) best = k;
    correct += best == test->y[r];
  }
  return (float)((double)correct / (double)test->n);
}

/* The mean cross-entropy loss on `test`: what --lr-plateau watches. */
static float test_loss(const model *m, const digits_data *test) {
  double loss = 0.0;
  for (size_t r = 0; r < test->n; r++) {
    float hpre[NHID], h[NHID], logits[NCLS], mx, sum = 0.0f;
    forward_row(m, test->x + r * NPIX, hpre, h, logits);
    mx = logits[0];
    for (int k = 1; k < NCLS; k++) mx = logits[k] > mx ? logits[k] : mx;
    for (int k = 0; k < NCLS; k++) sum += expf(logits[k] - mx);
    loss += (double)(logf(sum) + mx - logits[test->y[r]]);
  }
  return (float)(loss / (double)test->n);
}

/* ---- training ----------------------------------------------------------- */

static double now_secs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void scratch_free(scratch *s) {
  if (s == NULL) return;
  free(s->x);
  free(s->y);
  free(s->hpre);
  free(s->h);
  free(s->dl);
  free(s->dh);
  free(s);
}

/* A step's scratch for batches of `batch` rows; NULL when out of memory. */
static scratch *scratch_new(int64_t batch) {
  scratch *s = calloc(1, sizeof *s);
  const size_t b = (size_t)batch;
  if (s == NULL || !(s->x = malloc(b * NPIX * sizeof(float))) || !(s->y = malloc(b * sizeof(int32_t))) ||
      !(s->hpre = malloc(b * NHID * sizeof(float))) || !(s->h = malloc(b * NHID * sizeof(float))) ||
      !(s->dl = malloc(b * NCLS * sizeof(float))) || !(s->dh = malloc(b * NHID * sizeof(float)))) {
    scratch_free(s);
    return NULL;
  }
  return s;
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
  float *dst[NPARAMS] = {avg.w1, avg.b1, avg.w2, avg.b2};
  static const char *const weights[NPARAMS] = {"w1", "b1", "w2", "b2"};
  for (int i = 0; i < NPARAMS; i++) {
    hk_tensor t;
    if (hk_ema_hook_average(&t, ema, weights[i], NULL) != HK_OK) return NAN;
    memcpy(dst[i], t.data, t.nbytes);
  }
  return accuracy(&avg, test);
}

/* The report on stderr and the result line on stdout, with why it stopped. */
static int report(const digits_flags *o, const hk_stop_info *why, int64_t step, int64_t steps_run, double secs,
                  float loss, float acc, float ema_acc) {
  char word[64], ema[48] = "";
  if (o->verbosity >= 0) {
    if (why->reason != HK_STOP_LAST_STEP)
      fprintf(stderr, PROG ": stopped at step %" PRId64 ": %s (%s)\n", step, hk_stop_reason_name(why->reason),
              why->detail);
    fprintf(stderr, "training time: %.3f s for %" PRId64 " steps (%.1f us/step)\n", secs, steps_run,
            steps_run ? secs * 1e6 / (double)steps_run : 0.0);
  }
  if (o->ema_decay >= 0) snprintf(ema, sizeof ema, " ema_test_accuracy=%.6f", (double)ema_acc);
  printf("result: step=%" PRId64 " loss=%.6f test_accuracy=%.6f%s stop=%s\n", step, (double)loss, (double)acc, ema,
         digits_stop_word(why, word, sizeof word));
  return fflush(stdout) == 0 ? 0 : DIGITS_EXIT_RUNTIME;
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
static int train(const digits_flags *o, const digits_data *trn, const digits_data *tst) {
  model m;
  param params[NPARAMS] = {{"w1", 2, {NPIX, NHID}, NPIX, m.w1},
                           {"b1", 1, {NHID, 0}, NPIX, m.b1},
                           {"w2", 2, {NHID, NCLS}, NHID, m.w2},
                           {"b2", 1, {NCLS, 0}, NHID, m.b2}};
  scratch *s = scratch_new(o->batch);
  data_iter it = {trn, o->batch, o->seed, 0, 0, NULL};
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
  hk_hook *metrics = NULL; /* HOOKED: --metrics-log */
  hk_hook *ema = NULL;     /* HOOKED: --ema */
  hk_hook *limit = NULL;   /* HOOKED: --time-limit */
  hk_stop_info why;        /* HOOKED: why it stopped */
  hk_env env;              /* HOOKED: --quiet / --verbose */

  it.perm = malloc(trn->n * sizeof *it.perm);
  if (s == NULL || it.perm == NULL) {
    fputs(PROG ": out of memory\n", stderr);
    goto out;
  }
  init_params(params, NPARAMS, o->seed);
  iter_seek_to(&it, 0, 0);

  /* ==== HOOKED: the loop, its options from the flags, the program's memory registered in place ==== */
  hk_env_init(&env, HK_ENV_VERSION);
  digits_env_levels(o, &env);
  if (digits_time_limit_hook(o, &limit) != 0) goto out;
  hk_loop_options lo = HK_LOOP_OPTIONS_INIT;
  lo.env = &env, lo.stop_signals = digits_stop_signals(o); /* --stop-signals */
  lo.hooks = &limit, lo.nhooks = limit != NULL;            /* --time-limit */
  lo.checkpoint_dir = o->checkpoint_dir, lo.max_to_keep = o->keep, lo.async_checkpoint = o->async;
  lo.last_step = o->steps, lo.save_steps = o->save_steps, lo.save_secs = o->save_secs; /* unset: every 600 s */
  lo.summary_dir = o->summary_dir; /* global_step/sec every 100 steps; NULL: into the checkpoint dir */
  lo.best_k = o->best_k, lo.restore_best = o->restore_best; /* --best-k K [--restore-best] */
  if (o->best_k) lo.best_metric = "test_accuracy", lo.best_mode = HK_MONITOR_MAX;
  if (hk_loop_new(&loop, &lo, &st) != HK_OK) goto failed;
  for (int i = 0; i < NPARAMS; i++) /* w1, b1, w2, b2 */
    hk_loop_add_array(loop, params[i].name, HK_DTYPE_F32, params[i].rank, params[i].dims, params[i].data, 0, &st);
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
  hk_loop_start(loop, &step, &st); /* restores into m, it (and step), or keeps them */
  /* ==== end HOOKED (errors are sticky: hk_loop_finish() below returns the first) ==== */

  if (step > 0 && o->verbosity >= 0) fprintf(stderr, PROG ": resumed at step %" PRId64 "\n", step);
  t0 = now_secs();
  while (!hk_loop_should_stop(loop) && hk_loop_step_begin(loop, NULL, &st) == HK_OK) { /* HOOKED */
    iter_next(&it, s->x, s->y);
    loss = train_step(&m, s, o->batch, lr);
    if (lr_hook && o->lr_flags.patience >= 0 && (step + 1) % plateau_every == 0) /* HOOKED (--lr): test loss */
      hk_learning_rate_report(lr_hook, test_loss(&m, tst), &st);
    if (metrics && (step + 1) % o->metrics_every == 0) /* HOOKED: the row of this step has it */
      hk_metrics_log_report(metrics, "test_accuracy", accuracy(&m, tst), &st);
    if (o->best_k && save_due(o, step + 1)) test_acc = accuracy(&m, tst);
    hk_loop_step_end(loop, &st); /* HOOKED: the global step moves, a checkpoint due is saved */
    step++;
    steps_run++;
    if (o->log_every > 0 && step % o->log_every == 0 && o->verbosity >= 0)
      fprintf(stderr, "step %" PRId64 ": loss = %.4f\n", step, (double)loss);
    if (o->summary_dir && step % 100 == 0 && /* HOOKED: TensorBoard scalars at the loop's global step */
        (hk_loop_summary_scalar(loop, o->summary_dir, "loss", loss, &st) != HK_OK ||
         hk_loop_summary_scalar(loop, o->summary_dir, "test_accuracy", accuracy(&m, tst), &st) != HK_OK))
      goto failed; /* HOOKED */
  }
  secs = now_secs() - t0;
  if (hk_loop_finish(loop, &st) != HK_OK)
    goto failed; /* HOOKED: the final checkpoint (--restore-best: then the best) */
  report_learning_rate(lr_hook);
  if (o->restore_best && o->verbosity >= 0) digits_report_best(o, "test_accuracy");
  hk_loop_stop_reason(&why, loop, NULL); /* HOOKED */
  status = report(o, &why, step, steps_run, secs, loss, accuracy(&m, tst), ema ? ema_accuracy(ema, tst) : NAN);
  goto out;

failed:
  fprintf(stderr, PROG ": %s: %s\n", hk_code_name(st.code), st.message); /* HOOKED */
out:
  hk_loop_free(loop);    /* HOOKED */
  hk_hook_free(lr_hook); /* HOOKED (--lr) */
  hk_hook_free(metrics); /* HOOKED: after the loop that borrowed it */
  hk_hook_free(ema);     /* HOOKED (--ema) */
  hk_hook_free(limit);   /* HOOKED */
  scratch_free(s);
  free(it.perm);
  return status;
}

int main(int argc, char **argv) {
  digits_flags o;
  digits_data trn, tst;
  int rc = digits_parse_flags(&o, PROG, argc, argv, NULL);

  if (rc == DIGITS_HELP) {
    usage(stdout);
    return 0;
  }
  if (rc != 0) return rc;
  /* No signal handler is installed yet (the loop installs its own at
   * start), so a signal while loading ends the program as usual. */
  if ((rc = digits_load(&o, &trn, &tst)) != 0) return DIGITS_EXIT_RUNTIME;
  rc = train(&o, &trn, &tst);
  digits_data_free(&trn);
  digits_data_free(&tst);
  return rc;
}
