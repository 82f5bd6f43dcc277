/*
 * What the graph test programs (test_graph_*.c) share: the fixture's
 * helpers and the kernels the tests register.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_TESTS_UNIT_GRAPH_TESTS_H
#define HOOKED_TESTS_UNIT_GRAPH_TESTS_H

#include "graph_fixture.h"
#include "test_env.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef graph_fixture fx;

void open_rs(fx *f);
hk_handle var_full(fx *f, const char *name, hk_dtype dt, int32_t rank, const int64_t *dims, hk_init_kind kind,
                   double value, uint32_t flags, void *ext);

hk_handle var_f32(fx *f, const char *name, double value);
hk_handle const_f32(fx *f, const char *name, float v);
hk_code run(fx *f, const hk_feed *feeds, size_t nfeeds, const hk_handle *fetches, size_t nfetches,
            const hk_handle *targets, size_t ntargets, hk_tensor *results, hk_status *st);

void run_target(fx *f, hk_handle op);
float fetch_f32(fx *f, hk_handle t);
hk_handle init_all(fx *f, const char *name);

#define LOG_MAX 64

typedef struct recorder {
  int calls[16];
  int order[LOG_MAX];
  int norder;
  const void *input_data[16];
  hk_tensor *var_view[16];
} recorder;

typedef struct counting_op {
  recorder *rec;
  int id;
  float add; /* output 0 = sum of f32 inputs + add */
} counting_op;

hk_code counting_kernel(void *user, hk_kernel_context *ctx, const hk_tensor *inputs, size_t ninputs, hk_tensor *outputs,
                        size_t noutputs, hk_status *status);

hk_handle counting(fx *f, const char *name, counting_op *op, const hk_handle *in, size_t nin, const hk_handle *ctl,
                   size_t nctl);

hk_handle out0(fx *f, hk_handle op);

#endif /* HOOKED_TESTS_UNIT_GRAPH_TESTS_H */
