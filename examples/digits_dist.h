/*
 * digits_dist — what a digits trainer needs to be one rank of a synchronous
 * MPI job (hooked/mpi.h), shared by the programs that take --distributed
 * sync: the start of the job (MPI, the context and its collective deadline,
 * the stop agreement that owns the stop signals, the check that every rank
 * was given the same global batch), the block of each global batch a rank
 * trains on, the names its lines start with, and the end of the job.
 *
 * Without hooked::mpi (HK_EXAMPLE_MPI undefined) only the single-process
 * part is here: a program then refuses --distributed.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_EXAMPLES_DIGITS_DIST_H
#define HOOKED_EXAMPLES_DIGITS_DIST_H

#include "digits_common.h"

#include <hooked/hooked.h>
#ifdef HK_EXAMPLE_MPI
#include <hooked/mpi.h>
#endif

#include <stdint.h>

/* This process's part in the job: a single process unless
 * digits_dist_start() made it a rank. */
typedef struct digits_dist {
  int on; /* a rank of a synchronous job */
  int rank, size, chief;
  /* What starts each line of a rank: "rank R/N: " ("" in a single
   * process), and "<prog>: rank R/N" (<prog>), the name the shared code's
   * messages start with (digits_flags.prog). */
  char tag[32];
  char who[64];
  hk_hook *stop; /* the stop agreement: the last of the rank's hooks, owning the stop signals; NULL alone */
#ifdef HK_EXAMPLE_MPI
  hk_mpi *mpi;
  /* With --async, the checkpoints' own context: the background writer
   * makes the sharded saves' exchanges on it while the training thread
   * averages on `mpi` (MPI_THREAD_MULTIPLE); NULL otherwise. */
  hk_mpi *ckpt_mpi;
#endif
} digits_dist;

/* A single process named `prog`. */
void digits_dist_single(digits_dist *d, const char *prog);

/* --collective-timeout's value: *out = seconds, finite and > 0.
 * @return 0 or DIGITS_EXIT_USAGE after naming `flag`. */
int digits_parse_timeout(const char *prog, const char *flag, const char *value, double *out);

/* The rows of each global batch of `batch` rows this rank trains on:
 * [*first, *first + *len), cut by hk_mpi_block() (batch / size each, the
 * first batch % size one more); a single process trains on all of them. */
void digits_dist_rows(const digits_dist *d, int64_t batch, int64_t *first, int64_t *len);

#ifdef HK_EXAMPLE_MPI
/* Collective over `mpi`: every rank must be given the same global `batch`,
 * at least one row per rank. Every rank learns every rank's, so all stop
 * together on a mismatch (the chief says why on stderr, after `prog` and
 * `tag`, e.g. "rank 0/4: ") instead of some training on while the others
 * have left. @return 1 when it agrees. */
int digits_batch_agrees(hk_mpi *mpi, const char *prog, const char *tag, int64_t batch);

/*
 * Start a synchronous job under mpirun: MPI_Init, the context (its
 * collective deadline `timeout`, HK_UNSET_SECS for hooked::mpi's default;
 * rank 0 is the chief), and at once the stop hook, which installs the
 * handlers of f's stop signals (a signal to any rank from then on stops
 * every rank after the same step); then every rank learns every rank's
 * --batch, and all leave together (the chief says why) when they differ or
 * some rank would get no row. With f->async (checkpoints written on a
 * background thread) MPI is initialized with MPI_THREAD_MULTIPLE and a
 * second context, ckpt_mpi, is made for the checkpoints' group; an MPI
 * without that thread level ends the job with a message saying so. The
 * program must not install hooked's signal helper (nor let the host loop
 * do it: handle_signals 0).
 * @return 0; DIGITS_EXIT_USAGE after the batches disagreed (MPI is then
 *         finalized); a failure to start aborts the job.
 */
int digits_dist_start(digits_dist *d, const char *prog, const digits_flags *f, double timeout, int *argc, char ***argv);

/* The end of the job: a nonzero rc aborts it (no rank is left waiting for
 * this one); else the stop hook and the contexts are freed and MPI
 * finalized. */
void digits_dist_end(digits_dist *d, int rc);
#endif

#endif
