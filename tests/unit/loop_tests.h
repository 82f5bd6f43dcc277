/*
 * What the host-loop test programs (test_loop_*.c) share: a tiny trainer
 * over the program's own arrays, and the fixture (a temporary directory,
 * a loop's options, the loop).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_TESTS_UNIT_LOOP_TESTS_H
#define HOOKED_TESTS_UNIT_LOOP_TESTS_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hooked/hooked.h>

#include "event_file.h"
#include "faulty_fs.h"
#include "spy_hook.h"
#include "test_env.h"
#include "tmpdir.h"

/* The program's RNG: opaque state that is not a flat array. */
typedef struct rng {
  uint64_t s;
  uint32_t calls;
} rng;

uint64_t rng_next(rng *r);
hk_code rng_save(void *user, void *dst, size_t size, hk_status *st);
hk_code rng_restore(void *user, const void *src, size_t size, hk_status *st);

typedef struct model {
  float w[6];
  double b[2];
  float loss;
  rng r;
  int64_t my_step; /* a program-owned global step, when registered */
  int advance;     /* advance my_step in each step */
  int steps_run;
  spy_log *log; /* "step" markers between the hooks' events */
} model;

void model_init(model *m);
void model_step(model *m);
hk_code step_fn(void *user, int64_t step, hk_status *st);

typedef struct fx {
  test_env *te;
  char *dir;
  char *ck; /* dir/ck */
  hk_status st;
} fx;

int setup(void **state);
int teardown(void **state);
hk_loop_options opts_for(fx *f);
void add_model(hk_loop *l, model *m, fx *f);
int64_t run_to(fx *f, model *m, const hk_loop_options *o);
char *ckpt_file(fx *f, const char *name);
int files_equal(const char *a, const char *b);
int hook_index(hk_loop *l, const char *name);

#endif /* HOOKED_TESTS_UNIT_LOOP_TESTS_H */
