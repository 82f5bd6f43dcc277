/*
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "model.h"

static hk_code sgd_step(void *user, hk_kernel_context *ctx, const hk_tensor *inputs, size_t ninputs, hk_tensor *outputs,
                        size_t noutputs, hk_status *status) {
  float *w = hk_kernel_context_variable(ctx, 0)->data;
  float diff = *w - 3.0f;
  (void)user;
  (void)inputs;
  (void)ninputs;
  (void)noutputs;
  (void)status;
  *(float *)outputs[0].data = diff * diff;
  *w -= 0.1f * 2.0f * diff;
  return HK_OK;
}

hk_code consumer_build_model(hk_graph *g, hk_handle *loss, hk_handle *train, hk_status *st) {
  hk_handle gs, w, one, sgd, inc;
  hk_handle both[2];
  int64_t one_value = 1;
  hk_tensor one_tensor = hk_tensor_scalar_i64(&one_value);
  hk_variable_def var = HK_VARIABLE_DEF_INIT;
  hk_output_spec scalar_f32 = {HK_DTYPE_F32, 0, {0}};
  hk_op_def op = HK_OP_DEF_INIT;
  hk_code rc;

  if ((rc = hk_graph_create_global_step(g, &gs, st)) != HK_OK) return rc;
  var.name = "w";
  var.dtype = HK_DTYPE_F32;
  var.init.kind = HK_INIT_ZEROS;
  if ((rc = hk_graph_variable(g, &w, &var, st)) != HK_OK) return rc;
  op.name = "sgd";
  op.kernel = sgd_step;
  op.mutates = &w;
  op.nmutates = 1;
  op.outputs = &scalar_f32;
  op.noutputs = 1;
  if ((rc = hk_graph_op(g, &sgd, &op, st)) != HK_OK || (rc = hk_graph_op_output(g, loss, sgd, 0, st)) != HK_OK ||
      (rc = hk_graph_constant(g, &one, "one", &one_tensor, st)) != HK_OK ||
      (rc = hk_graph_assign_add(g, &inc, "increment_global_step", gs, one, st)) != HK_OK)
    return rc;
  both[0] = sgd;
  both[1] = inc;
  return hk_graph_group(g, train, "train", both, 2, st);
}
