/*
 * hooked::mpi — the messages and the sums of one averaging unit: which
 * blocks a rank sends to whom at each step of the reduce-scatter and the
 * all-gather, and how it adds what arrives. average_request.c drives a
 * unit from step to step; this file knows the two schedules.
 *
 * A unit of `count` elements is cut into N blocks (hk_mpi_block()).
 *
 * Halving, when N is a power of two (log2 N steps a phase). At
 * reduce-scatter step j (j = 0, 1, ...) rank r pairs with r XOR 2^j: of
 * the blocks it still holds, it sends its partner the half its partner
 * keeps and receives the partner's partial sums of its own half, then
 * adds them. After step j a rank holds, for its blocks, the sum over the
 * 2^(j+1) consecutive ranks that share its bits above j; the lower half's
 * sum is always the left operand. So each element's sum is one fixed tree:
 * sum(lo, hi) = sum(lo, mid) + sum(mid, hi), mid = (lo + hi) / 2, down to
 * single ranks — ((x0 + x1) + (x2 + x3)) at 4 ranks — whichever rank adds
 * it, whatever block or segment it lies in. The all-gather runs the steps
 * backwards, each rank sending its partner every finished block it holds.
 * A rank sends and receives (N-1)/N of the buffer per phase, a ring's
 * bytes, in log2 N exchanges with one partner each: what Open MPI's
 * recursive halving does (Rabenseifner's algorithm), with the order of the
 * additions pinned.
 *
 * Which rank ends with which block: for the halves (hk_mpi_reduce_scatter_
 * average(), hk_mpi_allgather_blocks()) rank r owns block r, as their
 * contract says; a rank's blocks at a step are then every 2^j-th block, a
 * message each. A full average owns block bitrev(r) instead (the bits of
 * r reversed): a rank's blocks at each step are then consecutive, one
 * message a step. The tree, so the bits, are the same either way.
 *
 * Pairwise, for any other N (one step a phase): every rank sends its copy
 * of block b to rank b (at step k to rank r+k, from rank r-k, mod N), and
 * rank r adds the N copies of its block in rank order.
 *
 * Partial sums: a full average keeps them in place (its buffer is
 * overwritten by the all-gather anyway); a reduce-scatter alone must leave
 * the other blocks as they were, so it keeps them in the scratch, a slot
 * per block it holds after the first step.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "mpi_internal.h"

static MPI_Datatype mpi_type(hk_dtype dtype) { return dtype == HK_DTYPE_F32 ? MPI_FLOAT : MPI_DOUBLE; }

int hk__avg_steps(int nranks) {
  if (nranks < 2 || (nranks & (nranks - 1)) != 0) return 1;
  int steps = 0;
  while ((1 << steps) < nranks) steps++;
  return steps;
}

static int halving(const hk_mpi *m) { return m->size >= 2 && (m->size & (m->size - 1)) == 0; }

size_t hk__avg_unit_scratch_elems(int nranks, size_t count) {
  size_t first = 0, len = 0;
  hk_mpi_block(&first, &len, count, nranks, 0, NULL); /* block 0 is the longest */
  return len * (size_t)nranks;
}

/* ---- halving ------------------------------------------------------------------------ */

static int bitrev(int b, int bits) {
  int v = 0;
  for (int i = 0; i < bits; i++) v |= ((b >> i) & 1) << (bits - 1 - i);
  return v;
}

/* The rank that ends the reduce-scatter with block b. */
static int owner(const hk_mpi_average_request *r, int b) {
  return r->mode == HK__AVG_FULL ? bitrev(b, hk__avg_steps(r->mpi->size)) : b;
}

/* The blocks whose owners agree with `want` in the bits of `mask`. */
static int holds(const hk_mpi_average_request *r, int b, unsigned mask, int want) {
  return ((unsigned)owner(r, b) & mask) == ((unsigned)want & mask);
}

/* The next run of consecutive blocks from *b on that holds(): its first
 * block *start and its elements [*first, *first + *len), *b moved past
 * it; 0 when there is none. A run fits MPI's int count: only a full
 * average's runs hold several blocks, and its units are segments of at
 * most HK__AVG_SEGMENT_BYTES; the halves' runs are single blocks, which
 * hk__avg_check_arrays() keeps within INT_MAX. */
static int next_run(const hk_mpi_average_request *r, const hk__avg_unit *u, int *b, unsigned mask, int want, int *start,
                    size_t *first, size_t *len) {
  const int N = r->mpi->size;
  while (*b < N && !holds(r, *b, mask, want)) (*b)++;
  if (*b >= N) return 0;
  *start = *b;
  size_t f, l, f2, l2;
  hk_mpi_block(&f, &l, u->count, N, *b, NULL);
  for ((*b)++; *b < N && holds(r, *b, mask, want); (*b)++) {
    hk_mpi_block(&f2, &l2, u->count, N, *b, NULL);
    l += l2;
  }
  *first = f;
  *len = l;
  return 1;
}

/* Where a reduce-scatter alone keeps its partial sums of block b: the
 * scratch's slot b / 2 (after step 0 a rank holds the blocks of its own
 * parity, N / 2 of them). A full average keeps them in place. */
static unsigned char *partial(const hk_mpi_average_request *r, const hk__avg_unit *u, int b, size_t first) {
  const size_t esize = hk__avg_esize(u->dtype);
  if (r->mode == HK__AVG_FULL) return u->buf + first * esize;
  size_t f0, maxlen;
  hk_mpi_block(&f0, &maxlen, u->count, r->mpi->size, 0, NULL);
  return r->scratch + u->scratch_off + (size_t)(b / 2) * maxlen * esize;
}

/* Where the partner's partial sums arrive, back to back (NULL: a unit of
 * no elements, whose scratch may never have been allocated). */
static unsigned char *arrivals(const hk_mpi_average_request *r, const hk__avg_unit *u) {
  size_t f0, maxlen;
  hk_mpi_block(&f0, &maxlen, u->count, r->mpi->size, 0, NULL);
  if (maxlen == 0) return NULL;
  const size_t held = r->mode == HK__AVG_FULL ? 0 : (size_t)(r->mpi->size / 2) * maxlen;
  return r->scratch + u->scratch_off + held * hk__avg_esize(u->dtype);
}

static hk_code halving_post_scatter(hk_mpi_average_request *r, size_t k, hk_status *st) {
  hk_mpi *m = r->mpi;
  hk__avg_unit *u = &r->units[k];
  const int j = u->step, me = m->rank, peer = me ^ (1 << j);
  const unsigned mask = (2u << j) - 1;
  const size_t esize = hk__avg_esize(u->dtype);
  MPI_Request *q = hk__avg_unit_reqs(r, k);
  unsigned char *at = arrivals(r, u);
  size_t first, len;
  int n = 0, err;
  for (int b = 0, b0; next_run(r, u, &b, mask, me, &b0, &first, &len);) {
    if (len == 0) continue;
    if ((err = MPI_Irecv(at, (int)len, mpi_type(u->dtype), peer, u->tag, m->comm, &q[n++])) != MPI_SUCCESS)
      return hk__mpi_error(st, err, "averaging: MPI_Irecv");
    at += len * esize;
  }
  for (int b = 0, b0; next_run(r, u, &b, mask, peer, &b0, &first, &len);) {
    if (len == 0) continue;
    /* A reduce-scatter alone sends single blocks: its blocks lie 2^(j+1) apart. */
    const unsigned char *from = j == 0 ? u->buf + first * esize : partial(r, u, b0, first);
    if ((err = MPI_Isend(from, (int)len, mpi_type(u->dtype), peer, u->tag, m->comm, &q[n++])) != MPI_SUCCESS)
      return hk__mpi_error(st, err, "averaging: MPI_Isend");
  }
  return HK_OK;
}

/* dst = left + right, element by element; on the last step, divided by N. */
#define ADD_PAIR(T)                                                                       \
  do {                                                                                    \
    T *d = (T *)dst;                                                                      \
    const T *a = (const T *)(bit ? theirs : mine), *c = (const T *)(bit ? mine : theirs); \
    if (last)                                                                             \
      for (size_t e = 0; e < len; e++) d[e] = (a[e] + c[e]) / (T)N;                       \
    else                                                                                  \
      for (size_t e = 0; e < len; e++) d[e] = a[e] + c[e];                                \
  } while (0)

static void halving_sum(hk_mpi_average_request *r, size_t k) {
  hk_mpi *m = r->mpi;
  hk__avg_unit *u = &r->units[k];
  const int N = m->size, j = u->step, me = m->rank, bit = (me >> j) & 1;
  const int last = j + 1 == hk__avg_steps(N);
  const unsigned mask = (2u << j) - 1;
  const size_t esize = hk__avg_esize(u->dtype);
  const unsigned char *theirs = arrivals(r, u);
  for (int b = 0; b < N; b++) {
    if (!holds(r, b, mask, me)) continue;
    size_t first, len;
    hk_mpi_block(&first, &len, u->count, N, b, NULL);
    if (len == 0) continue;
    const unsigned char *mine = j == 0 ? u->buf + first * esize : partial(r, u, b, first);
    unsigned char *dst = last ? u->buf + first * esize : partial(r, u, b, first);
    if (u->dtype == HK_DTYPE_F32)
      ADD_PAIR(float);
    else
      ADD_PAIR(double);
    theirs += len * esize;
  }
}

static hk_code halving_post_gather(hk_mpi_average_request *r, size_t k, hk_status *st) {
  hk_mpi *m = r->mpi;
  hk__avg_unit *u = &r->units[k];
  const int j = hk__avg_steps(m->size) - 1 - u->step, me = m->rank, peer = me ^ (1 << j);
  const unsigned mask = (2u << j) - 1;
  const size_t esize = hk__avg_esize(u->dtype);
  MPI_Request *q = hk__avg_unit_reqs(r, k);
  size_t first, len;
  int n = 0, err;
  for (int b = 0, b0; next_run(r, u, &b, mask, peer, &b0, &first, &len);) {
    if (len == 0) continue;
    if ((err = MPI_Irecv(u->buf + first * esize, (int)len, mpi_type(u->dtype), peer, u->tag + 1, m->comm, &q[n++])) !=
        MPI_SUCCESS)
      return hk__mpi_error(st, err, "averaging: MPI_Irecv");
  }
  for (int b = 0, b0; next_run(r, u, &b, mask, me, &b0, &first, &len);) {
    if (len == 0) continue;
    if ((err = MPI_Isend(u->buf + first * esize, (int)len, mpi_type(u->dtype), peer, u->tag + 1, m->comm, &q[n++])) !=
        MPI_SUCCESS)
      return hk__mpi_error(st, err, "averaging: MPI_Isend");
  }
  return HK_OK;
}

/* ---- pairwise ----------------------------------------------------------------------- */

static hk_code pairwise_post_scatter(hk_mpi_average_request *r, size_t k, hk_status *st) {
  hk_mpi *m = r->mpi;
  hk__avg_unit *u = &r->units[k];
  const int N = m->size, me = m->rank;
  const size_t esize = hk__avg_esize(u->dtype);
  MPI_Request *q = hk__avg_unit_reqs(r, k);
  size_t mine_first, mine_len, first, len;
  hk_mpi_block(&mine_first, &mine_len, u->count, N, me, NULL);
  for (int s = 1; s < N && mine_len > 0; s++) {
    const int from = (me - s + N) % N;
    unsigned char *slots = r->scratch + u->scratch_off;
    int err = MPI_Irecv(slots + (size_t)from * mine_len * esize, (int)mine_len, mpi_type(u->dtype), from, u->tag,
                        m->comm, &q[s - 1]);
    if (err != MPI_SUCCESS) return hk__mpi_error(st, err, "averaging: MPI_Irecv");
  }
  for (int s = 1; s < N; s++) {
    const int to = (me + s) % N;
    hk_mpi_block(&first, &len, u->count, N, to, NULL);
    if (len == 0) continue;
    int err = MPI_Isend(u->buf + first * esize, (int)len, mpi_type(u->dtype), to, u->tag, m->comm, &q[N - 1 + s - 1]);
    if (err != MPI_SUCCESS) return hk__mpi_error(st, err, "averaging: MPI_Isend");
  }
  return HK_OK;
}

static hk_code pairwise_post_gather(hk_mpi_average_request *r, size_t k, hk_status *st) {
  hk_mpi *m = r->mpi;
  hk__avg_unit *u = &r->units[k];
  const int N = m->size, me = m->rank;
  const size_t esize = hk__avg_esize(u->dtype);
  MPI_Request *q = hk__avg_unit_reqs(r, k);
  size_t mine_first, mine_len, first, len;
  hk_mpi_block(&mine_first, &mine_len, u->count, N, me, NULL);
  for (int s = 1; s < N; s++) {
    const int from = (me - s + N) % N;
    hk_mpi_block(&first, &len, u->count, N, from, NULL);
    if (len == 0) continue;
    int err = MPI_Irecv(u->buf + first * esize, (int)len, mpi_type(u->dtype), from, u->tag + 1, m->comm, &q[s - 1]);
    if (err != MPI_SUCCESS) return hk__mpi_error(st, err, "averaging: MPI_Irecv");
  }
  for (int s = 1; s < N; s++) {
    const int to = (me + s) % N;
    if (mine_len == 0) continue;
    int err = MPI_Isend(u->buf + mine_first * esize, (int)mine_len, mpi_type(u->dtype), to, u->tag + 1, m->comm,
                        &q[N - 1 + s - 1]);
    if (err != MPI_SUCCESS) return hk__mpi_error(st, err, "averaging: MPI_Isend");
  }
  return HK_OK;
}

/* dst = (copy 0 + copy 1 + ... + copy N-1) / N, element by element, the
 * additions in rank order. Copy r is slot r of the scratch (the slots are
 * `len` elements apart), except this rank's own, which is dst itself. One
 * pass over the copies, a chunk of SUM_CHUNK elements at a time summed in
 * a buffer that stays in the first-level cache: each element's additions
 * are the same, in the same order, as summing whole copies one after the
 * other would make. */
#define SUM_CHUNK 1024
#define SUM_IN_RANK_ORDER(T)                                        \
  do {                                                              \
    T *d = (T *)dst, acc[SUM_CHUNK];                                \
    const T *s = (const T *)slots;                                  \
    for (size_t at = 0; at < len; at += SUM_CHUNK) {                \
      const size_t c = len - at < SUM_CHUNK ? len - at : SUM_CHUNK; \
      const T *x0 = me == 0 ? d + at : s + at;                      \
      for (size_t e = 0; e < c; e++) acc[e] = x0[e];                \
      for (int r_ = 1; r_ < N; r_++) {                              \
        const T *x = r_ == me ? d + at : s + (size_t)r_ * len + at; \
        for (size_t e = 0; e < c; e++) acc[e] += x[e];              \
      }                                                             \
      for (size_t e = 0; e < c; e++) d[at + e] = acc[e] / (T)N;     \
    }                                                               \
  } while (0)

static void pairwise_sum(hk_mpi_average_request *r, size_t k) {
  hk_mpi *m = r->mpi;
  hk__avg_unit *u = &r->units[k];
  const int N = m->size, me = m->rank;
  const size_t esize = hk__avg_esize(u->dtype);
  size_t first, len;
  hk_mpi_block(&first, &len, u->count, N, me, NULL);
  if (len == 0) return;
  const unsigned char *slots = r->scratch + u->scratch_off;
  unsigned char *dst = u->buf + first * esize;
  if (u->dtype == HK_DTYPE_F32)
    SUM_IN_RANK_ORDER(float);
  else
    SUM_IN_RANK_ORDER(double);
}

/* ---- the schedule of the context's rank count ------------------------------------ */

hk_code hk__avg_post_scatter(hk_mpi_average_request *r, size_t k, hk_status *st) {
  return halving(r->mpi) ? halving_post_scatter(r, k, st) : pairwise_post_scatter(r, k, st);
}

void hk__avg_sum(hk_mpi_average_request *r, size_t k) {
  if (halving(r->mpi))
    halving_sum(r, k);
  else
    pairwise_sum(r, k);
}

hk_code hk__avg_post_gather(hk_mpi_average_request *r, size_t k, hk_status *st) {
  return halving(r->mpi) ? halving_post_gather(r, k, st) : pairwise_post_gather(r, k, st);
}
