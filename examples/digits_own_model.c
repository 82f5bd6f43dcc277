/*
 * digits_own_model — the math of digits_own_loop.c in plain C on float
 * arrays (see digits_own_model.h). Nothing here knows hooked.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "digits_own_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const param own_params[NPARAMS] = {{"w1", 2, {NPIX, NHID}, NPIX, OFF_W1},
                                   {"b1", 1, {NHID, 0}, NPIX, OFF_B1},
                                   {"w2", 2, {NHID, NCLS}, NHID, OFF_W2},
                                   {"b2", 1, {NCLS, 0}, NHID, OFF_B2}};

/* A float uniform in [0, 1) from the SplitMix64 generator of digits_common.h:
 * the top 24 bits of one output. */
static double uniform01(uint64_t *state) { return (double)(splitmix64_next(state) >> 40) * 0x1p-24; }

static int64_t param_size(const param *p) { return p->rank == 1 ? p->dims[0] : p->dims[0] * p->dims[1]; }

void own_init(model *m, uint64_t seed) {
  uint64_t rng = seed;
  for (size_t i = 0; i < NPARAMS; i++) {
    double bound = 1.0 / sqrt((double)own_params[i].fan_in);
    float *data = m->p + own_params[i].offset;
    for (int64_t k = 0; k < param_size(&own_params[i]); k++) data[k] = (float)(-bound + 2.0 * bound * uniform01(&rng));
  }
}

void scratch_free(scratch *s) {
  if (s == NULL) return;
  free(s->x);
  free(s->y);
  free(s->hpre);
  free(s->h);
  free(s->dl);
  free(s->dh);
  free(s);
}

scratch *scratch_new(int64_t rows) {
  scratch *s = calloc(1, sizeof *s);
  const size_t b = (size_t)rows;
  if (s == NULL || !(s->x = malloc(b * NPIX * sizeof(float))) || !(s->y = malloc(b * sizeof(int32_t))) ||
      !(s->hpre = malloc(b * NHID * sizeof(float))) || !(s->h = malloc(b * NHID * sizeof(float))) ||
      !(s->dl = malloc(b * NCLS * sizeof(float))) || !(s->dh = malloc(b * NHID * sizeof(float)))) {
    scratch_free(s);
    return NULL;
  }
  return s;
}

/* One row through the model. Most pixels are 0, and skipping them halves
 * the first layer's work. */
static void forward_row(const model *m, const float *x, float hpre[NHID], float h[NHID], float logits[NCLS]) {
  const float *w1 = m->p + OFF_W1, *w2 = m->p + OFF_W2;
  memcpy(hpre, m->p + OFF_B1, sizeof(float) * NHID);
  for (int i = 0; i < NPIX; i++) {
    const float xi = x[i];
    const float *wr = w1 + i * NHID;
    if (xi == 0.0f) continue;
    for (int j = 0; j < NHID; j++) hpre[j] += xi * wr[j];
  }
  for (int j = 0; j < NHID; j++) h[j] = hpre[j] > 0.0f ? hpre[j] : 0.0f;
  memcpy(logits, m->p + OFF_B2, sizeof(float) * NCLS);
  for (int j = 0; j < NHID; j++) {
    const float hj = h[j];
    const float *wr = w2 + j * NCLS;
    for (int k = 0; k < NCLS; k++) logits[k] += hj * wr[k];
  }
}

/* d loss / d logits = (p - onehot) / rows. */
double own_gradient(const model *m, scratch *s, int64_t rows) {
  float *gw1 = s->g + OFF_W1, *gb1 = s->g + OFF_B1, *gw2 = s->g + OFF_W2, *gb2 = s->g + OFF_B2;
  double loss = 0.0;

  for (int64_t n = 0; n < rows; n++) {
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
    for (int k = 0; k < NCLS; k++) dl[k] = (dl[k] / sum - (k == label ? 1.0f : 0.0f)) / (float)rows;
  }

  memset(s->g, 0, sizeof s->g);
  for (int64_t n = 0; n < rows; n++) {
    const float *hn = s->h + n * NHID, *hp = s->hpre + n * NHID, *dl = s->dl + n * NCLS;
    const float *xn = s->x + n * NPIX;
    float *dh = s->dh + n * NHID;
    for (int j = 0; j < NHID; j++) {
      float *g = gw2 + j * NCLS;
      const float *wr = m->p + OFF_W2 + j * NCLS;
      float acc = 0.0f;
      for (int k = 0; k < NCLS; k++) {
        g[k] += hn[j] * dl[k];
        acc += dl[k] * wr[k];
      }
      dh[j] = hp[j] > 0.0f ? acc : 0.0f;
    }
    for (int k = 0; k < NCLS; k++) gb2[k] += dl[k];
    for (int i = 0; i < NPIX; i++) {
      const float xi = xn[i];
      float *g = gw1 + i * NHID;
      if (xi == 0.0f) continue;
      for (int j = 0; j < NHID; j++) g[j] += xi * dh[j];
    }
    for (int j = 0; j < NHID; j++) gb1[j] += dh[j];
  }
  return loss / (double)rows;
}

void own_sgd(float *p, const float *g, size_t first, size_t len, float lr) {
  for (size_t i = first; i < first + len; i++) p[i] -= lr * g[i];
}

void own_adam(float *p, const float *g, float *mo, float *ve, size_t first, size_t len, float lr, int64_t t) {
  const float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
  /* The bias corrections of step t, the same on every rank. */
  const float c1 = (float)(1.0 - pow(0.9, (double)t)), c2 = (float)(1.0 - pow(0.999, (double)t));
  for (size_t k = 0; k < len; k++) {
    const float gi = g[first + k];
    mo[k] = b1 * mo[k] + (1.0f - b1) * gi;
    ve[k] = b2 * ve[k] + (1.0f - b2) * gi * gi;
    p[first + k] -= lr * (mo[k] / c1) / (sqrtf(ve[k] / c2) + eps);
  }
}

float own_accuracy(const model *m, const digits_data *test) {
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

float own_test_loss(const model *m, const digits_data *test) {
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
