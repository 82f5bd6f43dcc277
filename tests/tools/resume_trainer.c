/*
 * resume_trainer — a small trainer on the host loop for the tests of
 * `hooked-ckpt check-resume`: a 4-8-1 MLP (tanh) fitted to a smooth target
 * by SGD with momentum, each step drawing its batch and a dropout mask from
 * the program's own RNG. Registered: the weights (w1, b1, w2, b2), the
 * momentum of each ("momentum/w1", ...), the RNG (a state). Each fault flag
 * leaves the program resumable in appearance (it restarts, trains, exits 0)
 * but not exactly:
 *
 *   --forget-rng          the RNG is not registered: a resumed run draws the
 *                         batches of a fresh start
 *   --forget-accumulator  the momentum is not registered: it restarts at 0
 *   --padding             the RNG is registered through a struct with
 *                         uninitialized padding, copied on the stack by its
 *                         save callback
 *   --time-seed           the RNG is seeded from the clock: two runs differ
 *                         even without a restart
 *
 *   resume_trainer --steps N --checkpoint-dir D [--save-steps S] [FAULTS]
 *
 * Exit status: 0 success, 1 a hooked error, 2 bad usage.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L

#include <hooked/hooked.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NIN 4
#define NHID 8
#define BATCH 8
#define LR 0.05f
#define MOMENTUM 0.9f
#define KEEP 0.8f /* dropout keeps a hidden unit with this probability */

typedef struct rng {
  uint64_t s;
} rng;

static uint64_t rng_next(rng *r) {
  uint64_t z = (r->s += UINT64_C(0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

static float uniform(rng *r) { return (float)(rng_next(r) >> 40) * 0x1p-24f; }

/* --padding: the RNG as many programs keep it, a kind byte before the
 * state, so the compiler pads 7 bytes between them. */
typedef struct tagged_rng {
  unsigned char kind;
  uint64_t s;
} tagged_rng;

typedef struct model {
  float w1[NIN * NHID], b1[NHID], w2[NHID], b2[1];
  float m_w1[NIN * NHID], m_b1[NHID], m_w2[NHID], m_b2[1]; /* momentum */
  float loss;
  rng r;
} model;

static hk_code rng_save(void *user, void *dst, size_t size, hk_status *st) {
  (void)st;
  memcpy(dst, user, size);
  return HK_OK;
}

static hk_code rng_restore(void *user, const void *src, size_t size, hk_status *st) {
  (void)st;
  memcpy(user, src, size);
  return HK_OK;
}

/* The bug --padding plants: the struct is filled field by field on the
 * stack and copied whole, padding included. */
static hk_code tagged_save(void *user, void *dst, size_t size, hk_status *st) {
  const rng *r = user;
  tagged_rng t;
  (void)st;
  t.kind = 1;
  t.s = r->s;
  memcpy(dst, &t, size);
  return HK_OK;
}

static hk_code tagged_restore(void *user, const void *src, size_t size, hk_status *st) {
  rng *r = user;
  tagged_rng t;
  (void)st;
  memcpy(&t, src, size);
  r->s = t.s;
  return HK_OK;
}

/* The target the MLP fits. */
static float target(const float *x) { return sinf(x[0] + 0.5f * x[1]) - 0.25f * x[2] * x[3]; }

static void train_step(model *m) {
  float g_w1[NIN * NHID] = {0}, g_b1[NHID] = {0}, g_w2[NHID] = {0}, g_b2 = 0, loss = 0;
  for (int n = 0; n < BATCH; n++) {
    float x[NIN], h[NHID], keep[NHID], y = m->b2[0], d;
    for (int i = 0; i < NIN; i++) x[i] = 2.0f * uniform(&m->r) - 1.0f;
    for (int j = 0; j < NHID; j++) {
      float a = m->b1[j];
      for (int i = 0; i < NIN; i++) a += x[i] * m->w1[i * NHID + j];
      keep[j] = uniform(&m->r) < KEEP ? 1.0f / KEEP : 0.0f;
      h[j] = tanhf(a) * keep[j];
      y += h[j] * m->w2[j];
    }
    d = y - target(x);
    loss += d * d / BATCH;
    g_b2 += 2 * d / BATCH;
    for (int j = 0; j < NHID; j++) {
      float dh = 2 * d / BATCH * m->w2[j], t = keep[j] != 0.0f ? h[j] / keep[j] : 0.0f;
      g_w2[j] += 2 * d / BATCH * h[j];
      dh *= keep[j] * (1 - t * t);
      g_b1[j] += dh;
      for (int i = 0; i < NIN; i++) g_w1[i * NHID + j] += dh * x[i];
    }
  }
  for (int k = 0; k < NIN * NHID; k++) m->w1[k] -= LR * (m->m_w1[k] = MOMENTUM * m->m_w1[k] + g_w1[k]);
  for (int k = 0; k < NHID; k++) m->b1[k] -= LR * (m->m_b1[k] = MOMENTUM * m->m_b1[k] + g_b1[k]);
  for (int k = 0; k < NHID; k++) m->w2[k] -= LR * (m->m_w2[k] = MOMENTUM * m->m_w2[k] + g_w2[k]);
  m->b2[0] -= LR * (m->m_b2[0] = MOMENTUM * m->m_b2[0] + g_b2);
  m->loss = loss;
}

static int usage(const char *why) {
  fprintf(stderr,
          "resume_trainer: %s\nusage: resume_trainer --steps N --checkpoint-dir D [--save-steps S] [--forget-rng] "
          "[--forget-accumulator] [--padding] [--time-seed]\n",
          why);
  return 2;
}

int main(int argc, char **argv) {
  int64_t steps = -1, save_steps = 10;
  const char *dir = NULL;
  int forget_rng = 0, forget_acc = 0, padding = 0, time_seed = 0;
  static model m;
  hk_status st = HK_STATUS_INIT;
  hk_loop *loop = NULL;
  int64_t step = 0;

  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--forget-rng") == 0) {
      forget_rng = 1;
    } else if (strcmp(a, "--forget-accumulator") == 0) {
      forget_acc = 1;
    } else if (strcmp(a, "--padding") == 0) {
      padding = 1;
    } else if (strcmp(a, "--time-seed") == 0) {
      time_seed = 1;
    } else if (i + 1 < argc && strcmp(a, "--steps") == 0) {
      steps = strtoll(argv[++i], NULL, 10);
    } else if (i + 1 < argc && strcmp(a, "--save-steps") == 0) {
      save_steps = strtoll(argv[++i], NULL, 10);
    } else if (i + 1 < argc && strcmp(a, "--checkpoint-dir") == 0) {
      dir = argv[++i];
    } else {
      return usage("unknown or incomplete argument");
    }
  }
  if (steps < 0 || dir == NULL || save_steps < 1) return usage("--steps and --checkpoint-dir are required");

  m.r.s = 12345;
  if (time_seed) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    m.r.s = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  }
  {
    rng init = {7};
    for (int k = 0; k < NIN * NHID; k++) m.w1[k] = 0.5f * (2.0f * uniform(&init) - 1.0f);
    for (int k = 0; k < NHID; k++) m.w2[k] = 0.5f * (2.0f * uniform(&init) - 1.0f);
  }

  hk_loop_options lo = HK_LOOP_OPTIONS_INIT;
  lo.checkpoint_dir = dir;
  lo.save_steps = save_steps;
  lo.last_step = steps;
  if (hk_loop_new(&loop, &lo, &st) != HK_OK) goto failed;
  {
    static const struct {
      const char *name, *momentum;
      int64_t n;
    } params[] = {{"w1", "momentum/w1", NIN * NHID},
                  {"b1", "momentum/b1", NHID},
                  {"w2", "momentum/w2", NHID},
                  {"b2", "momentum/b2", 1}};
    float *data[] = {m.w1, m.b1, m.w2, m.b2}, *mom[] = {m.m_w1, m.m_b1, m.m_w2, m.m_b2};
    for (int i = 0; i < 4; i++) {
      hk_loop_add_array(loop, params[i].name, HK_DTYPE_F32, 1, &params[i].n, data[i], 0, &st);
      if (!forget_acc) hk_loop_add_array(loop, params[i].momentum, HK_DTYPE_F32, 1, &params[i].n, mom[i], 0, &st);
    }
  }
  hk_loop_add_array(loop, "loss", HK_DTYPE_F32, 0, NULL, &m.loss, HK_LOOP_NO_CHECKPOINT, &st);
  if (padding)
    hk_loop_add_state(loop, "rng", sizeof(tagged_rng), tagged_save, tagged_restore, &m.r, 0, &st);
  else if (!forget_rng)
    hk_loop_add_state(loop, "rng", sizeof m.r, rng_save, rng_restore, &m.r, 0, &st);
  hk_loop_start(loop, &step, &st);
  while (!hk_loop_should_stop(loop) && hk_loop_step_begin(loop, NULL, &st) == HK_OK) {
    train_step(&m);
    hk_loop_step_end(loop, &st);
  }
  if (hk_loop_finish(loop, &st) != HK_OK) goto failed;
  printf("resume_trainer: step %lld, loss %.6f\n", (long long)hk_loop_global_step(loop), (double)m.loss);
  hk_loop_free(loop);
  return 0;

failed:
  fprintf(stderr, "resume_trainer: %s: %s\n", hk_code_name(st.code), st.message);
  hk_loop_free(loop);
  return 1;
}
