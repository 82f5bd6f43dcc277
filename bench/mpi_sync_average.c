/*
 * mpi_sync — the averaging cases (see mpi_sync.c for the whole bench).
 *
 * Every case runs --reps rounds; in a round hooked's case and its
 * reference run once each, interleaved, the order rotated from round to
 * round, each timed from an MPI_Barrier to the slowest rank's end; the
 * round's ratio is hooked's time over the reference's. min / median / max
 * of the per-round ratios are printed.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#if !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "mpi_sync.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmpi_count.h"

/* Bytes averaged per round of (A): calls = this / size, in 4..1000. */
#define A_BYTES_PER_ROUND ((size_t)64 << 20)
/* (D): 200 arrays of 1 to 100 KiB. */
#define D_ARRAYS 200
/* (E): the averaged buffer, and the compute loop's chunks. */
#define E_BYTES ((size_t)4 << 20)
#define E_CHUNKS 16
/* Timed back to back in one measurement of (D) and (E), so that one
 * scheduling hiccup weighs less. */
#define D_REPEAT 4
#define E_REPEAT 8

static void raw_average(float *x, size_t n) {
  mpi_check(MPI_Allreduce(MPI_IN_PLACE, x, (int)n, MPI_FLOAT, MPI_SUM, B.comm), "MPI_Allreduce");
  const float N = (float)B.size;
  for (size_t i = 0; i < n; i++) x[i] /= N;
}

static void hk_average(float *x, size_t n) {
  hk_status st = HK_STATUS_INIT;
  if (hk_mpi_average(B.mpi, HK_DTYPE_F32, x, n, &st) != HK_OK) die("hk_mpi_average", &st);
}

/* ---- (A) averaging against MPI_Allreduce --------------------------------------------- */

spread bench_average(size_t bytes) {
  const size_t n = bytes / sizeof(float);
  size_t calls = A_BYTES_PER_ROUND / bytes;
  double ratio[MAX_REPS], t_hk[MAX_REPS], t_raw[MAX_REPS];
  float *a = malloc(bytes), *r = malloc(bytes);
  char name[32];
  if (!a || !r) die("out of memory", NULL);
  if (calls < 4) calls = 4;
  if (calls > 1000) calls = 1000;
  fill(a, n, B.rank);
  fill(r, n, B.rank);
  for (int w = 0; w < 2; w++) { /* warm-up: the scratch, MPI's buffers, the pages */
    hk_average(a, n);
    raw_average(r, n);
  }
  for (int round = 0; round < B.reps; round++) {
    for (int k = 0; k < 2; k++) {
      const int hooked = (round + k) % 2 == 0;
      MPI_Barrier(B.comm);
      double t0 = now_secs();
      for (size_t c = 0; c < calls; c++) hooked ? hk_average(a, n) : raw_average(r, n);
      double t = slowest(now_secs() - t0) / (double)calls;
      *(hooked ? &t_hk[round] : &t_raw[round]) = t;
    }
    ratio[round] = t_hk[round] / t_raw[round];
  }

  /* The check: the same bits everywhere, and close to MPI's own mean. */
  fill(a, n, B.rank);
  fill(r, n, B.rank);
  hk_average(a, n);
  raw_average(r, n);
  unsigned long long h = hash_bytes(a, bytes), *all = malloc((size_t)B.size * sizeof *all);
  if (!all) die("out of memory", NULL);
  mpi_check(MPI_Gather(&h, 1, MPI_UNSIGNED_LONG_LONG, all, 1, MPI_UNSIGNED_LONG_LONG, 0, B.comm), "MPI_Gather");
  double maxdiff = 0, gmax = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)a[i] - (double)r[i]) / fabs((double)r[i]);
    if (d > maxdiff) maxdiff = d;
  }
  mpi_check(MPI_Reduce(&maxdiff, &gmax, 1, MPI_DOUBLE, MPI_MAX, 0, B.comm), "MPI_Reduce");
  spread s = spread_of(ratio, B.reps);
  if (B.rank == 0) {
    int same = 1;
    for (int k = 1; k < B.size; k++) same &= all[k] == all[0];
    if (!same) B.bad_bits = 1;
    double hk = median(t_hk, B.reps), raw = median(t_raw, B.reps);
    printf(
        "%-8s %5zu calls/round  hk_mpi_average %9.1f us  raw %9.1f us  ratio min %.2fx median %.2fx max %.2fx  "
        "(same bits on every rank: %s; max rel. diff vs raw %.1e)\n",
        size_name(bytes, name, sizeof name), calls, hk * 1e6, raw * 1e6, s.min, s.med, s.max, same ? "yes" : "NO",
        gmax);
  }
  free(all);
  free(a);
  free(r);
  return s;
}

/* ---- bytes per rank, counted through MPI's profiling interface --------------------------- */

spread bench_bytes(void) {
  static const size_t sizes[] = {100u << 10, 1u << 20, 16u << 20};
  double ratio[3 * 64];
  int nr = 0;
  float *x = malloc(sizes[2]);
  if (!x) die("out of memory", NULL);
  for (size_t k = 0; k < 3; k++) {
    const size_t n = sizes[k] / sizeof(float);
    fill(x, n, B.rank);
    pmpi_count_start();
    hk_average(x, n);
    pmpi_counts c = pmpi_count_stop();
    const double ring = 2.0 * (B.size - 1) / B.size * (double)sizes[k];
    double mine[2] = {(double)c.bytes_sent / ring, (double)c.collectives}, *all = malloc(2 * (size_t)B.size * 8);
    if (!all) die("out of memory", NULL);
    mpi_check(MPI_Allgather(mine, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, B.comm), "MPI_Allgather");
    double lo = all[0], hi = all[0], coll = 0;
    for (int r = 0; r < B.size; r++) {
      lo = all[2 * r] < lo ? all[2 * r] : lo;
      hi = all[2 * r] > hi ? all[2 * r] : hi;
      coll += all[2 * r + 1];
      if (nr < 3 * 64) ratio[nr++] = all[2 * r];
    }
    char name[32];
    if (B.rank == 0)
      printf("%-8s ring bound 2(N-1)/N*S = %.0f bytes; sent per rank %.0f..%.0f (%.4fx..%.4fx the bound); %s\n",
             size_name(sizes[k], name, sizeof name), ring, lo * ring, hi * ring, lo, hi,
             coll == 0 ? "no MPI collective called" : "AN MPI COLLECTIVE WAS CALLED (its bytes are not counted)");
    free(all);
  }
  free(x);
  return spread_of(ratio, nr);
}

/* ---- (D) fusion: 200 small arrays ------------------------------------------------------- */

spread bench_fusion(void) {
  hk_status st = HK_STATUS_INIT;
  hk_mpi_array arrays[D_ARRAYS];
  size_t total = 0;
  for (size_t i = 0; i < D_ARRAYS; i++) {
    arrays[i].dtype = HK_DTYPE_F32;
    arrays[i].count = (1 + (i * 37) % 100) * 1024 / sizeof(float);
    arrays[i].data = malloc(arrays[i].count * sizeof(float));
    if (!arrays[i].data) die("out of memory", NULL);
    fill(arrays[i].data, arrays[i].count, B.rank);
    total += arrays[i].count * sizeof(float);
  }
  double ratio[MAX_REPS], t_fused[MAX_REPS], t_each[MAX_REPS], t_raw[MAX_REPS];
  for (int w = 0; w < 2; w++)
    if (hk_mpi_average_arrays(B.mpi, arrays, D_ARRAYS, &st) != HK_OK) die("hk_mpi_average_arrays", &st);
  for (int round = 0; round < B.reps; round++) {
    for (int k = 0; k < 3; k++) {
      const int which = (round + k) % 3;
      MPI_Barrier(B.comm);
      double t0 = now_secs();
      for (int rep = 0; rep < D_REPEAT; rep++) {
        if (which == 0) {
          if (hk_mpi_average_arrays(B.mpi, arrays, D_ARRAYS, &st) != HK_OK) die("hk_mpi_average_arrays", &st);
        } else {
          for (size_t i = 0; i < D_ARRAYS; i++)
            which == 1 ? hk_average(arrays[i].data, arrays[i].count) : raw_average(arrays[i].data, arrays[i].count);
        }
      }
      double t = slowest(now_secs() - t0) / D_REPEAT;
      *(which == 0 ? &t_fused[round] : which == 1 ? &t_each[round] : &t_raw[round]) = t;
    }
    ratio[round] = t_fused[round] / t_each[round];
  }
  spread s = spread_of(ratio, B.reps);
  if (B.rank == 0) {
    double f = median(t_fused, B.reps), e = median(t_each, B.reps), r = median(t_raw, B.reps);
    printf(
        "%d f32 arrays of 1..100 KiB (%.2f MiB): hk_mpi_average_arrays %.2f ms (one fused buffer), %d "
        "hk_mpi_average calls %.2f ms, %d raw MPI_Allreduce %.2f ms\n"
        "  fused / per-array calls: min %.2fx median %.2fx max %.2fx; fused / raw per-array: %.2fx (medians)\n",
        D_ARRAYS, (double)total / (1 << 20), f * 1e3, D_ARRAYS, e * 1e3, D_ARRAYS, r * 1e3, s.min, s.med, s.max, f / r);
  }
  for (size_t i = 0; i < D_ARRAYS; i++) free(arrays[i].data);
  return s;
}

/* ---- (E) overlap: averaging in flight behind a compute loop -------------------------------- */

static volatile float g_sink;

/* A compute loop of `iters` multiply-adds over a small private array (in
 * cache: it competes for the core, not for memory bandwidth). */
static void compute(float *w, size_t iters) {
  float acc = 0;
  for (size_t i = 0; i < iters; i++) {
    float *p = &w[i & 1023];
    *p = *p * 0.999f + 0.001f;
    acc += *p;
  }
  g_sink = acc;
}

spread bench_overlap(void) {
  hk_status st = HK_STATUS_INIT;
  const size_t n = E_BYTES / sizeof(float);
  float *x = malloc(E_BYTES), *w = calloc(1024, sizeof(float));
  hk_mpi_average_request *req = NULL;
  if (!x || !w) die("out of memory", NULL);
  if (hk_mpi_average_request_new(&req, B.mpi, &st) != HK_OK) die("hk_mpi_average_request_new", &st);
  const hk_mpi_array list[1] = {{HK_DTYPE_F32, x, n}};
  fill(x, n, B.rank);
  /* Calibrate: the compute loop as long as the average alone (rank 0's
   * figures, so that every rank computes the same): the median of 5
   * averages after a warm-up, and the fastest of 3 timed loops. */
  double t_avgs[5], per_iter = 0;
  hk_average(x, n);
  for (int i = 0; i < 5; i++) {
    MPI_Barrier(B.comm);
    double t0 = now_secs();
    hk_average(x, n);
    t_avgs[i] = slowest(now_secs() - t0);
  }
  const size_t probe = (size_t)1 << 22;
  for (int i = 0; i < 3; i++) {
    double t0 = now_secs();
    compute(w, probe);
    double t = (now_secs() - t0) / (double)probe;
    if (i == 0 || t < per_iter) per_iter = t;
  }
  const double target = median(t_avgs, 5);
  size_t iters = (size_t)(target / per_iter) + 1;
  unsigned long long it = iters;
  mpi_check(MPI_Bcast(&it, 1, MPI_UNSIGNED_LONG_LONG, 0, B.comm), "MPI_Bcast");
  iters = (size_t)it;
  const size_t chunk = iters / E_CHUNKS + 1;

  double frac[MAX_REPS], ta[MAX_REPS], tc[MAX_REPS], tb[MAX_REPS];
  for (int round = 0; round < B.reps; round++) {
    for (int k = 0; k < 3; k++) {
      const int which = (round + k) % 3; /* 0: average alone, 1: compute alone, 2: both */
      MPI_Barrier(B.comm);
      double t0 = now_secs();
      for (int rep = 0; rep < E_REPEAT; rep++) {
        if (which != 1 && hk_mpi_average_start(req, list, 1, &st) != HK_OK) die("hk_mpi_average_start", &st);
        if (which != 0)
          for (int c = 0; c < E_CHUNKS; c++) {
            compute(w, chunk);
            int done = 0;
            if (which == 2 && hk_mpi_average_test(req, &done, &st) != HK_OK) die("hk_mpi_average_test", &st);
          }
        if (which != 1 && hk_mpi_average_finish(req, &st) != HK_OK) die("hk_mpi_average_finish", &st);
      }
      double t = slowest(now_secs() - t0) / E_REPEAT;
      *(which == 0 ? &ta[round] : which == 1 ? &tc[round] : &tb[round]) = t;
    }
    /* The share of the average's time hidden behind the computation. */
    frac[round] = (ta[round] + tc[round] - tb[round]) / ta[round];
  }
  spread s = spread_of(frac, B.reps);
  if (B.rank == 0) {
    char name[32];
    printf(
        "%s f32, compute loop of %zu multiply-adds in %d chunks, hk_mpi_average_test between chunks:\n"
        "  average alone %.2f ms, compute alone %.2f ms, both %.2f ms (medians); hidden share of the average "
        "(alone + compute - both) / alone: min %.2f median %.2f max %.2f\n",
        size_name(E_BYTES, name, sizeof name), iters, E_CHUNKS, median(ta, B.reps) * 1e3, median(tc, B.reps) * 1e3,
        median(tb, B.reps) * 1e3, s.min, s.med, s.max);
  }
  hk_mpi_average_request_free(req);
  free(x);
  free(w);
  return s;
}
