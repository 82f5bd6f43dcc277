/*
 * digits_dist — one rank of a synchronous MPI job (see digits_dist.h).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "digits_dist.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void digits_dist_single(digits_dist *d, const char *prog) {
  memset(d, 0, sizeof *d);
  d->size = 1;
  d->chief = 1;
  snprintf(d->who, sizeof d->who, "%s", prog);
}

int digits_parse_timeout(const char *prog, const char *flag, const char *value, double *out) {
  char *end;
  double v = strtod(value, &end);
  if (end == value || *end != '\0' || !isfinite(v) || v <= 0.0)
    return digits_usage_error(prog, "invalid value '%s' for %s: expected a finite number of seconds > 0", value, flag);
  *out = v;
  return 0;
}

void digits_dist_rows(const digits_dist *d, int64_t batch, int64_t *first, int64_t *len) {
  *first = 0;
  *len = batch;
#ifdef HK_EXAMPLE_MPI
  size_t f, n;
  /* Cannot fail: the batch agreed (batch >= size), the rank is the context's. */
  if (d->on && hk_mpi_block(&f, &n, (size_t)batch, d->size, d->rank, NULL) == HK_OK) {
    *first = (int64_t)f;
    *len = (int64_t)n;
  }
#else
  (void)d;
#endif
}

#ifdef HK_EXAMPLE_MPI
int digits_batch_agrees(hk_mpi *mpi, const char *prog, const char *tag, int64_t batch) {
  const int size = hk_mpi_size(mpi), chief = hk_mpi_is_chief(mpi);
  int64_t *all = malloc((size_t)size * sizeof *all);
  int ok = all != NULL;
  if (ok) MPI_Allgather(&batch, 1, MPI_INT64_T, all, 1, MPI_INT64_T, hk_mpi_comm(mpi));
  for (int r = 1; ok && r < size; r++)
    if (all[r] != all[0]) {
      if (chief)
        fprintf(stderr,
                "%s: %s--batch differs between ranks: rank 0 has %" PRId64 ", rank %d has %" PRId64
                "; every rank of a synchronous job takes the same global batch\n",
                prog, tag, all[0], r, all[r]);
      ok = 0;
    }
  if (ok && batch < size) {
    if (chief)
      fprintf(stderr, "%s: %s--batch %" PRId64 " (the global batch) gives no row to some of the %d ranks\n", prog, tag,
              batch, size);
    ok = 0;
  }
  if (!all) fprintf(stderr, "%s: %sout of memory\n", prog, tag);
  free(all);
  return ok;
}

int digits_dist_start(digits_dist *d, const char *prog, const digits_flags *f, double timeout, int *argc,
                      char ***argv) {
  hk_status st = HK_STATUS_INIT;
  hk_mpi_options mo = HK_MPI_OPTIONS_INIT;
  hk_mpi_stop_options so = HK_MPI_STOP_OPTIONS_INIT;
  int provided = MPI_THREAD_SINGLE;
  digits_dist_single(d, prog);
  /* --async: the background writer makes the sharded saves' exchanges
   * while this thread averages, on a context of its own. */
  MPI_Init_thread(argc, argv, f->async ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
  if (f->async && provided < MPI_THREAD_MULTIPLE) {
    fprintf(stderr, "%s: --async with --distributed sync needs an MPI library with MPI_THREAD_MULTIPLE\n", prog);
    MPI_Abort(MPI_COMM_WORLD, DIGITS_EXIT_RUNTIME);
  }
  mo.collective_timeout_secs = timeout;
  so.stop_signals = digits_stop_signals(f);
  if (hk_mpi_new(&d->mpi, &mo, &st) != HK_OK || hk_mpi_stop_hook_new(&d->stop, d->mpi, &so, &st) != HK_OK ||
      (f->async && hk_mpi_new(&d->ckpt_mpi, &mo, &st) != HK_OK)) {
    fprintf(stderr, "%s: --distributed: %s\n", prog, st.message);
    MPI_Abort(MPI_COMM_WORLD, DIGITS_EXIT_RUNTIME);
  }
  d->on = 1;
  d->rank = hk_mpi_rank(d->mpi);
  d->size = hk_mpi_size(d->mpi);
  d->chief = hk_mpi_is_chief(d->mpi);
  snprintf(d->tag, sizeof d->tag, "rank %d/%d: ", d->rank, d->size);
  snprintf(d->who, sizeof d->who, "%s: rank %d/%d", prog, d->rank, d->size);
  if (!digits_batch_agrees(d->mpi, prog, d->tag, f->batch)) {
    hk_hook_free(d->stop);
    hk_mpi_free(d->ckpt_mpi);
    hk_mpi_free(d->mpi);
    MPI_Finalize();
    return DIGITS_EXIT_USAGE;
  }
  return 0;
}

void digits_dist_end(digits_dist *d, int rc) {
  if (rc != 0) MPI_Abort(MPI_COMM_WORLD, rc);
  hk_hook_free(d->stop);
  hk_mpi_free(d->ckpt_mpi);
  hk_mpi_free(d->mpi);
  MPI_Finalize();
}
#endif
