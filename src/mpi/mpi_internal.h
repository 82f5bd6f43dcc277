/*
 * hooked::mpi — what the files of src/mpi/ share. Built on hooked's public
 * headers only (no header of src/), like a third-party extension.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_MPI_INTERNAL_H
#define HOOKED_MPI_INTERNAL_H

#include "hooked/mpi.h"

struct hk_mpi {
  hk_env env;
  MPI_Comm comm; /* our duplicate */
  int rank, size, root;
  void *scratch; /* hk_mpi_average()'s receive buffer */
  size_t scratch_bytes;
  int *counts, *displs; /* per rank, in elements (size entries each) */
  int *counts2, *displs2;
  double *scalars; /* size entries: hk_mpi_average_scalar() */
};

/* Set an INTERNAL status naming the MPI call and MPI's own message. */
hk_code hk__mpi_error(hk_status *st, int err, const char *call);

/* Extend crc (0 to start) with one variable's description: name, dtype,
 * shape (hk_crc32c_extend). */
uint32_t hk__mpi_describe(uint32_t crc, const hk_variable_info *info);

/* A fingerprint of an executor's variables: names, dtypes, shapes and
 * flags of those `pick` selects (all when NULL), in order. */
typedef int (*hk__mpi_var_pick)(const hk_variable_info *info, void *user);
hk_code hk__mpi_fingerprint(hk_executor *ex, hk__mpi_var_pick pick, void *user, uint32_t *out, hk_status *st);

/* An op of g whose output 0 is an empty 1-D string tensor: "ready". */
hk_code hk__mpi_nothing_report(hk_graph *g, const char *name, hk_handle *out, hk_status *st);

#endif /* HOOKED_MPI_INTERNAL_H */
