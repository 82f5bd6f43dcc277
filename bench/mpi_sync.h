/*
 * mpi_sync — what the files of the bench share (see mpi_sync.c).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_BENCH_MPI_SYNC_H
#define HOOKED_BENCH_MPI_SYNC_H

#include <hooked/hooked.h>
#include <hooked/mpi.h>

#include <stddef.h>

#define MAX_REPS 1000

typedef struct bench {
  int rank, size;
  hk_env env;
  hk_mpi *mpi;
  MPI_Comm comm; /* the bench's own communicator for the raw references */
  int reps;
  long steps;
  int bad_bits;
} bench;

extern bench B;

double now_secs(void);
void die(const char *what, const hk_status *st);
void mpi_check(int err, const char *what);
/* The slowest rank's value (collective). */
double slowest(double secs);
double median(const double *v, int n);
const char *size_name(size_t bytes, char *buf, size_t n);
unsigned long long hash_bytes(const void *p, size_t n);
void fill(float *x, size_t n, int rank);

/* min / median / max of n values. */
typedef struct spread {
  double min, med, max;
} spread;
spread spread_of(const double *v, int n);

/* The averaging cases (mpi_sync_average.c); each prints on rank 0 and
 * returns its goal's spread. */
spread bench_average(size_t bytes);
spread bench_bytes(void);
spread bench_fusion(void);
spread bench_overlap(void);

#endif
