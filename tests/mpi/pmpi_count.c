/*
 * pmpi_count — see pmpi_count.h. Each wrapper has Open MPI's prototype of
 * its call (mpi.h declares them; a mismatch does not compile).
 */
#include "pmpi_count.h"

#include <mpi.h>
#include <string.h>

static int g_on;
static pmpi_counts g_counts;

void pmpi_count_start(void) {
  memset(&g_counts, 0, sizeof g_counts);
  g_on = 1;
}

pmpi_counts pmpi_count_stop(void) {
  g_on = 0;
  return g_counts;
}

static void sent(int count, MPI_Datatype type) {
  int size = 0;
  if (!g_on) return;
  PMPI_Type_size(type, &size);
  g_counts.sends++;
  g_counts.bytes_sent += (int64_t)count * size;
}

static void received(int count, MPI_Datatype type) {
  int size = 0;
  if (!g_on) return;
  PMPI_Type_size(type, &size);
  g_counts.recvs++;
  g_counts.bytes_recv += (int64_t)count * size;
}

static void collective(void) {
  if (g_on) g_counts.collectives++;
}

/* ---- point to point ---------------------------------------------------------------- */

int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *req) {
  sent(count, type);
  return PMPI_Isend(buf, count, type, dest, tag, comm, req);
}
int MPI_Issend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *req) {
  sent(count, type);
  return PMPI_Issend(buf, count, type, dest, tag, comm, req);
}
int MPI_Ibsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *req) {
  sent(count, type);
  return PMPI_Ibsend(buf, count, type, dest, tag, comm, req);
}
int MPI_Irsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *req) {
  sent(count, type);
  return PMPI_Irsend(buf, count, type, dest, tag, comm, req);
}
int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  sent(count, type);
  return PMPI_Send(buf, count, type, dest, tag, comm);
}
int MPI_Ssend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  sent(count, type);
  return PMPI_Ssend(buf, count, type, dest, tag, comm);
}
int MPI_Bsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  sent(count, type);
  return PMPI_Bsend(buf, count, type, dest, tag, comm);
}
int MPI_Rsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  sent(count, type);
  return PMPI_Rsend(buf, count, type, dest, tag, comm);
}
int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag, void *rbuf, int rcount,
                 MPI_Datatype rtype, int source, int rtag, MPI_Comm comm, MPI_Status *status) {
  sent(scount, stype);
  received(rcount, rtype);
  return PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm, status);
}
int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype type, int dest, int stag, int source, int rtag,
                         MPI_Comm comm, MPI_Status *status) {
  sent(count, type);
  received(count, type);
  return PMPI_Sendrecv_replace(buf, count, type, dest, stag, source, rtag, comm, status);
}
/* Persistent sends: their bytes move at each MPI_Start, which this does
 * not follow: count them as unseen. */
int MPI_Send_init(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *req) {
  collective();
  return PMPI_Send_init(buf, count, type, dest, tag, comm, req);
}
int MPI_Irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request *req) {
  received(count, type);
  return PMPI_Irecv(buf, count, type, source, tag, comm, req);
}
int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status *status) {
  received(count, type);
  return PMPI_Recv(buf, count, type, source, tag, comm, status);
}

/* ---- collectives and one-sided calls: counted, their bytes unseen ------------------- */

int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype, void *rbuf,
                  const int rcounts[], const int rdispls[], MPI_Datatype rtype, MPI_Comm comm) {
  collective();
  return PMPI_Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm);
}
int MPI_Ialltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype, void *rbuf,
                   const int rcounts[], const int rdispls[], MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req) {
  collective();
  return PMPI_Ialltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm, req);
}
int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
                 MPI_Comm comm) {
  collective();
  return PMPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm);
}
int MPI_Ialltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
                  MPI_Comm comm, MPI_Request *req) {
  collective();
  return PMPI_Ialltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm, req);
}
int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[],
                   const int displs[], MPI_Datatype rtype, MPI_Comm comm) {
  collective();
  return PMPI_Allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm);
}
int MPI_Iallgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[],
                    const int displs[], MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req) {
  collective();
  return PMPI_Iallgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm, req);
}
int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
                  MPI_Comm comm) {
  collective();
  return PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm);
}
int MPI_Iallgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
                   MPI_Comm comm, MPI_Request *req) {
  collective();
  return PMPI_Iallgather(sbuf, scount, stype, rbuf, rcount, rtype, comm, req);
}
int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  collective();
  return PMPI_Allreduce(sbuf, rbuf, count, type, op, comm);
}
int MPI_Iallreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                   MPI_Request *req) {
  collective();
  return PMPI_Iallreduce(sbuf, rbuf, count, type, op, comm, req);
}
int MPI_Reduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  collective();
  return PMPI_Reduce_scatter(sbuf, rbuf, rcounts, type, op, comm);
}
int MPI_Ireduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                        MPI_Request *req) {
  collective();
  return PMPI_Ireduce_scatter(sbuf, rbuf, rcounts, type, op, comm, req);
}
int MPI_Reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  collective();
  return PMPI_Reduce_scatter_block(sbuf, rbuf, rcount, type, op, comm);
}
int MPI_Ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                              MPI_Request *req) {
  collective();
  return PMPI_Ireduce_scatter_block(sbuf, rbuf, rcount, type, op, comm, req);
}
int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm) {
  collective();
  return PMPI_Reduce(sbuf, rbuf, count, type, op, root, comm);
}
int MPI_Ireduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm,
                MPI_Request *req) {
  collective();
  return PMPI_Ireduce(sbuf, rbuf, count, type, op, root, comm, req);
}
int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  collective();
  return PMPI_Bcast(buf, count, type, root, comm);
}
int MPI_Ibcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm, MPI_Request *req) {
  collective();
  return PMPI_Ibcast(buf, count, type, root, comm, req);
}
int MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[], const int displs[],
                MPI_Datatype rtype, int root, MPI_Comm comm) {
  collective();
  return PMPI_Gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm);
}
int MPI_Scatterv(const void *sbuf, const int scounts[], const int displs[], MPI_Datatype stype, void *rbuf, int rcount,
                 MPI_Datatype rtype, int root, MPI_Comm comm) {
  collective();
  return PMPI_Scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm);
}
int MPI_Put(const void *obuf, int ocount, MPI_Datatype otype, int target, MPI_Aint disp, int tcount, MPI_Datatype ttype,
            MPI_Win win) {
  collective();
  return PMPI_Put(obuf, ocount, otype, target, disp, tcount, ttype, win);
}
int MPI_Accumulate(const void *obuf, int ocount, MPI_Datatype otype, int target, MPI_Aint disp, int tcount,
                   MPI_Datatype ttype, MPI_Op op, MPI_Win win) {
  collective();
  return PMPI_Accumulate(obuf, ocount, otype, target, disp, tcount, ttype, op, win);
}
