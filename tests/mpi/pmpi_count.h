/*
 * pmpi_count — what a rank hands MPI, counted through MPI's profiling
 * interface (tests/mpi/).
 *
 * Linked into a test executable, pmpi_count.c defines the MPI calls that
 * send (MPI_Isend, MPI_Send and the other point-to-point sends), the
 * receives, and every collective and one-sided call that could move a
 * buffer's bytes; each counts while counting is on and calls its PMPI_
 * twin. A collective's internal traffic is invisible to the profiling
 * interface (Open MPI's collectives call the transport directly), so the
 * test also asserts that none was called: then the bytes counted are
 * exactly the bytes the rank sent.
 */
#ifndef HOOKED_TESTS_MPI_PMPI_COUNT_H
#define HOOKED_TESTS_MPI_PMPI_COUNT_H

#include <stdint.h>

typedef struct pmpi_counts {
  int64_t sends;       /* point-to-point sends started */
  int64_t bytes_sent;  /* their bytes */
  int64_t recvs;       /* receives posted */
  int64_t bytes_recv;  /* their buffers' bytes */
  int64_t collectives; /* collective or one-sided calls (their bytes unseen) */
} pmpi_counts;

/** Zero the counts and start counting. */
void pmpi_count_start(void);
/** Stop counting; the counts since the start. */
pmpi_counts pmpi_count_stop(void);

#endif
