/*
 * hooked::mpi — the blocking averages: one buffer, several arrays (fused),
 * the two halves for partitioned optimizer state, and metric averaging.
 * Each runs on the context's own request (average_request.c) and waits
 * for it; see there for the messages and the order of the sums.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include <stdint.h>
#include <string.h>

#include "mpi_internal.h"

hk_code hk_mpi_block(size_t *first, size_t *len, size_t count, int nranks, int rank, hk_status *st) {
  return hk_group_block(first, len, count, nranks, rank, st);
}

/* Run `mode` over one buffer on the context's request, and wait. */
static hk_code run_one(hk_mpi *m, int mode, const char *who, hk_dtype dtype, void *data, size_t count, hk_status *st) {
  if (!m) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: mpi is NULL", who);
  const hk_mpi_array a = {dtype, data, count};
  hk_code rc = hk__avg_check_arrays(m, who, &a, 1, 0, st);
  if (rc == HK_OK) rc = hk__avg_start(m->sync, mode, who, &a, 1, st);
  if (rc == HK_OK) rc = hk__avg_finish(m->sync, st);
  return rc;
}

hk_code hk_mpi_average(hk_mpi *m, hk_dtype dtype, void *data, size_t count, hk_status *st) {
  return run_one(m, HK__AVG_FULL, "hk_mpi_average", dtype, data, count, st);
}

hk_code hk_mpi_reduce_scatter_average(hk_mpi *m, hk_dtype dtype, void *data, size_t count, hk_status *st) {
  return run_one(m, HK__AVG_REDUCE_SCATTER, "hk_mpi_reduce_scatter_average", dtype, data, count, st);
}

hk_code hk_mpi_allgather_blocks(hk_mpi *m, hk_dtype dtype, void *data, size_t count, hk_status *st) {
  return run_one(m, HK__AVG_ALL_GATHER, "hk_mpi_allgather_blocks", dtype, data, count, st);
}

hk_code hk_mpi_average_arrays(hk_mpi *m, const hk_mpi_array *arrays, size_t n, hk_status *st) {
  if (!m) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_mpi_average_arrays: mpi is NULL");
  hk_code rc = hk__avg_check_arrays(m, "hk_mpi_average_arrays", arrays, n, 1, st);
  if (rc == HK_OK) rc = hk__avg_start(m->sync, HK__AVG_FULL, "hk_mpi_average_arrays", arrays, n, st);
  if (rc == HK_OK) rc = hk__avg_finish(m->sync, st);
  return rc;
}

hk_code hk_mpi_reserve(hk_mpi *m, size_t bytes, hk_status *st) {
  if (!m) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_mpi_reserve: mpi is NULL");
  /* `bytes` is the size of the buffers the program will average; a unit's
   * scratch holds N blocks of the longest block's length (the pairwise
   * exchange's copies; halving's arrivals and partial sums), and the first
   * count % N blocks hold one element more than count / N: one element (at
   * most a double) more per rank, and the scratch's alignment, cover every
   * buffer of that size — per segment, when a large one is averaged in
   * segments — so the steps that follow allocate nothing on any rank. */
  size_t slack = (bytes / HK__AVG_SEGMENT_BYTES + 1) * ((size_t)m->size * sizeof(double) + 64);
  if (bytes > SIZE_MAX - slack)
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_mpi_reserve: %zu bytes is more than memory can hold", bytes);
  /* Units and MPI requests for as many segments, so that a first average
   * of that size allocates nothing either. */
  return hk__avg_reserve(m->sync, bytes + slack, bytes < m->fusion_bytes ? bytes + 64 : m->fusion_bytes,
                         bytes / HK__AVG_SEGMENT_BYTES + 1, st);
}

hk_code hk_mpi_average_scalar(hk_mpi *m, double *value, hk_status *st) {
  if (!m || !value)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_mpi_average_scalar: %s is NULL", !m ? "mpi" : "value");
  MPI_Request req = MPI_REQUEST_NULL;
  hk_code rc = hk__mpi_collective_begin(m, HK__MPI_OP_AVERAGE_SCALAR, "hk_mpi_average_scalar", st);
  if (rc != HK_OK) return rc;
  int err = MPI_Iallgather(value, 1, MPI_DOUBLE, m->scalars, 1, MPI_DOUBLE, m->comm, &req);
  if (err != MPI_SUCCESS) return hk__mpi_error(st, err, "hk_mpi_average_scalar: MPI_Iallgather");
  if ((rc = hk__mpi_collective_wait(m, &req, HK__MPI_OP_AVERAGE_SCALAR, "hk_mpi_average_scalar", st)) != HK_OK)
    return rc;
  /* The order of every average (average_schedule.c): at a power of two
   * the tree of halves, pairs of neighbours first; otherwise rank order. */
  double *v = m->scalars, acc = v[0];
  const int n = m->size;
  if ((n & (n - 1)) == 0) {
    for (int w = 1; w < n; w *= 2)
      for (int i = 0; i + w < n; i += 2 * w) v[i] = v[i] + v[i + w];
    acc = v[0];
  } else {
    for (int r = 1; r < n; r++) acc += v[r];
  }
  *value = acc / (double)n;
  return HK_OK;
}
