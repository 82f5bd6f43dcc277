/*
 * train_digits_graph — the model of train_digits.c as a hooked graph: the
 * kernels of its ops (the train step, the step counter, the evaluation), the
 * hook that feeds it its batches, and the graph that joins them.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_EXAMPLES_TRAIN_DIGITS_GRAPH_H
#define HOOKED_EXAMPLES_TRAIN_DIGITS_GRAPH_H

#include "digits_common.h"

#include <hooked/hooked.h>
#ifdef HK_EXAMPLE_MPI
#include <hooked/mpi.h>
#endif

#define NHID 32
#define NGRAD (NPIX * NHID + NHID + NHID * NCLS + NCLS)

/* Scratch of the train kernel, sized once for the batch: a step allocates
 * nothing. */
typedef struct trainer {
  int64_t batch;
  float lr;
  int diverged; /* a step left a non-finite loss or weights */
  float *hpre;  /* batch * NHID, pre-activation */
  float *h;     /* batch * NHID */
  float *dl;    /* batch * NCLS, d loss / d logits */
  float *dh;    /* batch * NHID, d loss / d hpre */
  /* The gradients of w1, b1, w2, b2 in one array, so that one call
   * averages them across the ranks of a synchronous job; its last element
   * carries the batch's loss through the same call. */
  float grad[NGRAD + 1];
  float *gw1, *gb1, *gw2, *gb2;
#ifdef HK_EXAMPLE_MPI
  hk_mpi *mpi;  /* --distributed sync: average the gradients; else NULL */
  double share; /* this rank's rows * ranks / the global batch (1: an even split) */
#endif
} trainer;

/*
 * Feeds x and y for the current global step. It reads the global step once
 * per raw-session creation (so after a restore or a recovery it resumes at
 * the right batch) and adds one after each successful run: every run of this
 * program's session is a training step, which adds exactly one.
 * At a clean close it evaluates the test accuracy and reads the final step.
 */
typedef struct feeder {
  /* data */
  const float *train_x;
  const int32_t *train_y;
  size_t ntrain;
  int64_t batch;
  int64_t batches_per_epoch;
  uint64_t seed;
  /* --distributed sync: this rank's rows of each global batch of `stride`
   * rows start at `offset`; otherwise stride = batch, offset = 0. */
  int64_t stride, offset;
  int no_feeds; /* the parameter server's chief: its step reads no data */
  /* graph */
  hk_handle x, y, accuracy;
  hk_handle params[4]; /* w1, b1, w2, b2 */
  /* state */
  int64_t gs;
  int64_t cached_epoch; /* epoch of perm, -1 for none */
  uint32_t *perm;       /* ntrain */
  float *xbuf;          /* batch * NPIX */
  int32_t *ybuf;        /* batch */
  hk_feed feeds[2];
  /* results of end() */
  int have_result;
  int64_t final_step;
  float test_accuracy;
  double final_loss; /* no_feeds: the final model's mean loss over the training set */
} feeder;

/* The feeder's hook callbacks (hk_hook_new() with the feeder as user). */
extern const hk_hook_vtable feeder_vtable;

typedef struct model {
  hk_graph *g;
  hk_handle params[4];   /* w1, b1, w2, b2 */
  hk_handle global_step; /* "global_step:0" */
  hk_handle x_test, y_test;
  hk_handle loss;          /* "train:0" */
  hk_handle test_loss;     /* "test_loss:0", a copy of "accuracy:1" */
  hk_handle train_op;      /* group of train and the step increment */
  hk_handle learning_rate; /* "learning_rate:0" (--lr-*): the rate train reads; HK_NO_HANDLE without */
  /* The EarlyStoppingHook's state: a variable over this memory, zero (a
   * fresh state) unless a checkpoint holding it is restored. */
  double early_state[HK_EARLY_STOPPING_STATE_SIZE];
  /* The LearningRateHook's plateau state (--lr-plateau), the same way. */
  double lr_state[HK_LEARNING_RATE_STATE_SIZE];
} model;

#define LOSS_NAME "train:0"
#define GUARDED_LOSS_NAME "train:1"
#define TEST_LOSS_NAME "test_loss:0"
#define EARLY_STATE_NAME "early_stopping"
#define LR_NAME "learning_rate"
#define LR_STATE_NAME "learning_rate_state"

/* build_model()'s `learning_rate`: what the LearningRateHook needs. */
#define MODEL_LR_VARIABLE 1 /* the rate as a variable the train op reads */
#define MODEL_LR_STATE 2    /* and the plateau's state, checkpointed */

/* The fraction of `test` the model with these weights classifies right:
 * the evaluation of the accuracy op, on the host (for weights outside the
 * graph, such as --ema's averages). */
float host_accuracy(const float *w1, const float *b1, const float *w2, const float *b2, const digits_data *test);
/* The mean softmax cross-entropy of the model with these weights over n
 * rows of x and y (NaN for none), as the accuracy op computes the test
 * loss. */
double host_loss(const float *w1, const float *b1, const float *w2, const float *b2, const float *x, const int32_t *y,
                 size_t n);

/* The graph, in this order (the order of its variables in a checkpoint):
 * the parameters, the early-stopping state (--early-stop-patience), the
 * learning rate (local: never checkpointed) and its plateau state
 * (`learning_rate`, MODEL_LR_* bits), the global step; then the inputs, the
 * train op, the evaluation and, with `summaries`, the summary ops. Without
 * MODEL_LR_VARIABLE the train op uses the trainer's fixed rate. */
hk_code build_model(model *m, trainer *t, feeder *f, const digits_data *test, uint64_t seed, int early_stopping,
                    int learning_rate, const hk_env *env, int summaries, hk_status *st);

#endif /* HOOKED_EXAMPLES_TRAIN_DIGITS_GRAPH_H */
