/*
 * digits_own_model — the math of digits_own_loop.c, the program's own: the
 * 64-32-10 MLP's parameters in one flat buffer, forward, backward, the test
 * metrics, and the two optimizers (SGD, Adam) over a range of the flat
 * parameter vector, so that a ZeRO-1 rank updates its block only.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_EXAMPLES_DIGITS_OWN_MODEL_H
#define HOOKED_EXAMPLES_DIGITS_OWN_MODEL_H

#include "digits_common.h"

#include <stddef.h>
#include <stdint.h>

#define NHID 32
#define NPARAMS 4 /* arrays: w1, b1, w2, b2 */

/* Where each array starts in the flat vector, and its length. */
#define OFF_W1 0
#define OFF_B1 (OFF_W1 + NPIX * NHID)
#define OFF_W2 (OFF_B1 + NHID)
#define OFF_B2 (OFF_W2 + NHID * NCLS)
#define NFLAT (OFF_B2 + NCLS) /* 2410 floats */

/* The parameters: w1 (NPIX x NHID), b1, w2 (NHID x NCLS), b2, consecutive
 * in one flat vector (what the gradient averaging and ZeRO-1 cut into
 * blocks). hpre = x w1 + b1, h = relu(hpre), logits = h w2 + b2. */
typedef struct model {
  float p[NFLAT];
} model;

/* One entry per parameter array: a view into the flat vector, which the
 * initialization and the checkpoints go through. */
typedef struct param {
  const char *name;
  int32_t rank;
  int64_t dims[2];
  int64_t fan_in;
  size_t offset; /* into model.p */
} param;

extern const param own_params[NPARAMS];

/* w1, b1, w2, b2 ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)), in that order, from
 * one SplitMix64 stream seeded `seed`. */
void own_init(model *m, uint64_t seed);

/* Scratch of a step, sized once for the rows a step trains on: a step
 * allocates nothing. */
typedef struct scratch {
  float *x;       /* rows * NPIX */
  int32_t *y;     /* rows */
  float *hpre;    /* rows * NHID, pre-activation */
  float *h;       /* rows * NHID */
  float *dl;      /* rows * NCLS, d loss / d logits */
  float *dh;      /* rows * NHID, d loss / d hpre */
  float g[NFLAT]; /* the gradient, laid out as model.p */
} scratch;

/* NULL when out of memory. */
scratch *scratch_new(int64_t rows);
void scratch_free(scratch *s);

/* Forward and backward over the `rows` rows of s->x, s->y (softmax
 * cross-entropy): s->g = the gradient of their mean loss.
 * @return their mean loss. */
double own_gradient(const model *m, scratch *s, int64_t rows);

/* p[i] -= lr * g[i] for i in [first, first + len). */
void own_sgd(float *p, const float *g, size_t first, size_t len, float lr);

/* Adam (Kingma & Ba, beta1 0.9, beta2 0.999, epsilon 1e-8) at step t >= 1
 * over p[first, first + len), with that range's moments mo[0, len) and
 * ve[0, len). */
void own_adam(float *p, const float *g, float *mo, float *ve, size_t first, size_t len, float lr, int64_t t);

/* The fraction of `test` classified right (ties go to the lowest class). */
float own_accuracy(const model *m, const digits_data *test);
/* The mean cross-entropy loss on `test`. */
float own_test_loss(const model *m, const digits_data *test);

#endif
