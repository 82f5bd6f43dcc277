/*
 * What the graph test programs share (graph_tests.h).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "graph_tests.h"

/* ---- fixture ------------------------------------------------------------- */

void open_rs(fx *f) {
  hk_status st = HK_STATUS_INIT;
  if (f->rs) hk_raw_session_free(f->rs);
  f->rs = NULL;
  assert_ok(hk_raw_session_open(&f->rs, f->ex, &st), &st);
}

hk_handle var_full(fx *f, const char *name, hk_dtype dt, int32_t rank, const int64_t *dims, hk_init_kind kind,
                   double value, uint32_t flags, void *ext) {
  hk_variable_def d = HK_VARIABLE_DEF_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_handle h = HK_NO_HANDLE;
  d.name = name;
  d.dtype = dt;
  d.rank = rank;
  d.dims = dims;
  d.init.kind = kind;
  d.init.value = value;
  d.flags = flags;
  d.external_data = ext;
  assert_ok(hk_graph_variable(f->g, &h, &d, &st), &st);
  assert_int_not_equal(h, HK_NO_HANDLE);
  return h;
}

hk_handle var_f32(fx *f, const char *name, double value) {
  return var_full(f, name, HK_DTYPE_F32, 0, NULL, HK_INIT_CONSTANT, value, HK_VAR_TRAINABLE, NULL);
}

hk_handle const_f32(fx *f, const char *name, float v) {
  hk_status st = HK_STATUS_INIT;
  hk_tensor t = hk_tensor_scalar_f32(&v);
  hk_handle h;
  assert_ok(hk_graph_constant(f->g, &h, name, &t, &st), &st);
  return h;
}

hk_code run(fx *f, const hk_feed *feeds, size_t nfeeds, const hk_handle *fetches, size_t nfetches,
            const hk_handle *targets, size_t ntargets, hk_tensor *results, hk_status *st) {
  hk_run_args a;
  memset(&a, 0, sizeof(a));
  a.feeds = feeds;
  a.nfeeds = nfeeds;
  a.fetches = fetches;
  a.nfetches = nfetches;
  a.targets = targets;
  a.ntargets = ntargets;
  return hk_raw_session_run(f->rs, &a, results, NULL, st);
}

void run_target(fx *f, hk_handle op) {
  hk_status st = HK_STATUS_INIT;
  assert_ok(run(f, NULL, 0, NULL, 0, &op, 1, NULL, &st), &st);
}

float fetch_f32(fx *f, hk_handle t) {
  hk_status st = HK_STATUS_INIT;
  hk_tensor r;
  assert_ok(run(f, NULL, 0, &t, 1, NULL, 0, &r, &st), &st);
  assert_int_equal(r.dtype, HK_DTYPE_F32);
  return *(float *)r.data;
}

hk_handle init_all(fx *f, const char *name) {
  hk_status st = HK_STATUS_INIT;
  hk_handle op;
  assert_ok(hk_graph_init_op(f->g, &op, name, NULL, 0, &st), &st);
  return op;
}

/* ---- kernels for tests ---------------------------------------------------- */

hk_code counting_kernel(void *user, hk_kernel_context *ctx, const hk_tensor *inputs, size_t ninputs, hk_tensor *outputs,
                        size_t noutputs, hk_status *status) {
  counting_op *op = user;
  float sum = op->add;
  size_t i;
  (void)status;
  op->rec->calls[op->id]++;
  if (op->rec->norder < LOG_MAX) op->rec->order[op->rec->norder++] = op->id;
  op->rec->input_data[op->id] = ninputs ? inputs[0].data : NULL;
  op->rec->var_view[op->id] = hk_kernel_context_variable(ctx, 0);
  for (i = 0; i < ninputs; i++)
    if (inputs[i].dtype == HK_DTYPE_F32 && inputs[i].rank == 0) sum += *(const float *)inputs[i].data;
  if (noutputs) *(float *)outputs[0].data = sum;
  return HK_OK;
}

hk_handle counting(fx *f, const char *name, counting_op *op, const hk_handle *in, size_t nin, const hk_handle *ctl,
                   size_t nctl) {
  hk_op_def d = HK_OP_DEF_INIT;
  hk_output_spec out = {HK_DTYPE_F32, 0, {0}};
  hk_status st = HK_STATUS_INIT;
  hk_handle h;
  d.name = name;
  d.kernel = counting_kernel;
  d.kernel_user = op;
  d.inputs = in;
  d.ninputs = nin;
  d.control_inputs = ctl;
  d.ncontrol_inputs = nctl;
  d.outputs = &out;
  d.noutputs = 1;
  assert_ok(hk_graph_op(f->g, &h, &d, &st), &st);
  return h;
}

hk_handle out0(fx *f, hk_handle op) {
  hk_status st = HK_STATUS_INIT;
  hk_handle t;
  assert_ok(hk_graph_op_output(f->g, &t, op, 0, &st), &st);
  return t;
}
