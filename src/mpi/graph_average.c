/*
 * hooked::mpi — gradient averaging as a graph op.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include <string.h>

#include "mpi_internal.h"

static hk_code average_kernel(void *user, hk_kernel_context *ctx, const hk_tensor *inputs, size_t ninputs,
                              hk_tensor *outputs, size_t noutputs, hk_status *st) {
  hk_mpi *m = user;
  char want[64], got[64];
  (void)ctx;
  if (ninputs != 1 || noutputs != 1 || !hk_tensor_same_spec(&inputs[0], &outputs[0]))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "mpi average: input is %s %s, the op was built for %s %s",
                         hk_dtype_name(inputs[0].dtype), hk_tensor_shape_str(&inputs[0], got, sizeof got),
                         hk_dtype_name(outputs[0].dtype), hk_tensor_shape_str(&outputs[0], want, sizeof want));
  if (outputs[0].nbytes) memcpy(outputs[0].data, inputs[0].data, outputs[0].nbytes);
  return hk_mpi_average(m, outputs[0].dtype, outputs[0].data, (size_t)hk_tensor_num_elements(&outputs[0]), st);
}

hk_code hk_mpi_graph_average(hk_graph *g, hk_handle *out, const char *name, hk_handle input, hk_dtype dtype,
                             int32_t rank, const int64_t *dims, hk_mpi *mpi, hk_status *st) {
  if (!g || !out || !name || !mpi || (rank > 0 && !dims))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_mpi_graph_average: %s is NULL",
                         !g      ? "g"
                         : !out  ? "out"
                         : !name ? "name"
                         : !mpi  ? "mpi"
                                 : "dims");
  if (dtype != HK_DTYPE_F32 && dtype != HK_DTYPE_F64)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_mpi_graph_average: '%s': dtype %s is not f32 or f64", name,
                         hk_dtype_name(dtype));
  if (rank < 0 || rank > HK_MAX_RANK)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_mpi_graph_average: '%s': rank %d is not 0..%d", name, (int)rank,
                         HK_MAX_RANK);
  hk_output_spec spec;
  memset(&spec, 0, sizeof spec);
  spec.dtype = dtype;
  spec.rank = rank;
  size_t elements = 1;
  for (int32_t d = 0; d < rank; d++) {
    if (dims[d] < 0)
      return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_mpi_graph_average: '%s': dimension %d is %lld", name, (int)d,
                           (long long)dims[d]);
    spec.dims[d] = dims[d];
    elements *= (size_t)dims[d];
  }
  /* The scratch of the largest block a rank receives: a run allocates nothing. */
  size_t esize = dtype == HK_DTYPE_F32 ? sizeof(float) : sizeof(double);
  size_t block = elements / (size_t)mpi->size + 1;
  hk_code rc = hk_mpi_reserve(mpi, block * (size_t)mpi->size * esize, st);
  if (rc != HK_OK) return rc;
  hk_op_def def = HK_OP_DEF_INIT;
  def.name = name;
  def.kernel = average_kernel;
  def.kernel_user = mpi;
  def.inputs = &input;
  def.ninputs = 1;
  def.outputs = &spec;
  def.noutputs = 1;
  hk_handle op;
  rc = hk_graph_op(g, &op, &def, st);
  if (rc != HK_OK) return rc;
  return hk_graph_op_output(g, out, op, 0, st);
}
