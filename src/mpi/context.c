/*
 * hooked::mpi — the communicator context and deterministic averaging.
 *
 * hk_mpi_average() sums in rank order whatever MPI does: a reduce-scatter
 * by MPI_Alltoallv (rank r receives every rank's r-th block), a sum of the
 * N copies of its block in rank order 0..N-1 and a division by N, then an
 * MPI_Allgatherv of the blocks. Only moves bytes through MPI, so the bits
 * of the result depend on the rank count alone.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "hooked/checkpoint.h"
#include "mpi_internal.h"

hk_code hk__mpi_error(hk_status *st, int err, const char *call) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(err, text, &len) != MPI_SUCCESS) len = 0;
  text[len < MPI_MAX_ERROR_STRING ? len : MPI_MAX_ERROR_STRING - 1] = '\0';
  return hk_status_set(st, HK_INTERNAL, "%s failed: %s", call, len ? text : "unknown MPI error");
}

uint32_t hk__mpi_describe(uint32_t crc, const hk_variable_info *info) {
  int32_t meta[2] = {(int32_t)info->dtype, info->rank};
  crc = hk_crc32c_extend(crc, info->name, strlen(info->name) + 1);
  crc = hk_crc32c_extend(crc, meta, sizeof meta);
  return hk_crc32c_extend(crc, info->dims, sizeof info->dims[0] * (size_t)info->rank);
}

hk_code hk__mpi_fingerprint(hk_executor *ex, hk__mpi_var_pick pick, void *user, uint32_t *out, hk_status *st) {
  uint32_t crc = 0;
  size_t n = hk_executor_variable_count(ex);
  for (size_t i = 0; i < n; i++) {
    hk_variable_info info;
    hk_code rc = hk_executor_variable_info(&info, ex, i, st);
    if (rc != HK_OK) return rc;
    if (pick && !pick(&info, user)) continue;
    crc = hk__mpi_describe(crc, &info);
  }
  *out = crc;
  return HK_OK;
}

static const hk_mpi_options default_options = HK_MPI_OPTIONS_INIT;

hk_code hk_mpi_options_init(hk_mpi_options *opts, uint32_t version) {
  return hk_struct_init(opts, sizeof(hk_mpi_options), &(const hk_mpi_options)HK_MPI_OPTIONS_INIT, version);
}

hk_code hk_mpi_new(hk_mpi **out, const hk_mpi_options *opts, hk_status *st) {
  int flag = 0, err;
  if (out) *out = NULL;
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_mpi_new: out is NULL");
  const hk_mpi_options *o = opts ? opts : &default_options;
  if (hk_struct_check_version(o, HK_MPI_OPTIONS_VERSION, "hk_mpi_options", "hk_mpi_new: opts", st) != HK_OK)
    return HK_INVALID_ARGUMENT;
  hk_code rc = hk_env_check(o->env, "hk_mpi_new: env", st);
  if (rc != HK_OK) return rc;
  MPI_Initialized(&flag);
  if (!flag)
    return hk_status_set(st, HK_FAILED_PRECONDITION, "hk_mpi_new: MPI is not initialized (call MPI_Init first)");
  MPI_Finalized(&flag);
  if (flag) return hk_status_set(st, HK_FAILED_PRECONDITION, "hk_mpi_new: MPI is already finalized");
  const double timeout = hk_secs_is_unset(o->collective_timeout_secs) ? HK_MPI_DEFAULT_COLLECTIVE_TIMEOUT_SECS
                                                                      : o->collective_timeout_secs;
  if (!(timeout > 0))
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "hk_mpi_new: opts->collective_timeout_secs %g is not > 0 (HK_UNSET_SECS: %g s; +infinity: "
                         "no deadline)",
                         o->collective_timeout_secs, HK_MPI_DEFAULT_COLLECTIVE_TIMEOUT_SECS);
  MPI_Comm base = o->comm == MPI_COMM_NULL ? MPI_COMM_WORLD : o->comm;
  int size = 0;
  if ((err = MPI_Comm_size(base, &size)) != MPI_SUCCESS) return hk__mpi_error(st, err, "hk_mpi_new: MPI_Comm_size");
  if (o->root < 0 || o->root >= size)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_mpi_new: root %d is not a rank of the communicator (size %d)",
                         o->root, size);
  int rank = 0;
  if ((err = MPI_Comm_rank(base, &rank)) != MPI_SUCCESS) return hk__mpi_error(st, err, "hk_mpi_new: MPI_Comm_rank");
  hk_mpi *m = hk_env_calloc(o->env, 1, sizeof *m);
  if (!m) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_mpi_new: out of memory");
  hk_env_copy(&m->env, o->env);
  m->comm = m->watch = MPI_COMM_NULL;
  m->rank = rank;
  m->size = size;
  /* Every line the context and what is built on it log names the rank. */
  if ((rc = hk__mpi_log_wrap(m, &m->env, o->env, st)) != HK_OK) {
    hk_mpi_free(m);
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_mpi_new: out of memory");
  }
  m->root = o->root;
  m->timeout = timeout;
  m->step = HK_UNSET_STEPS;
  m->counts = hk_env_calloc(&m->env, (size_t)size * 4, sizeof(int));
  m->scalars = hk_env_calloc(&m->env, (size_t)size, sizeof(double));
  m->notes = hk_env_calloc(&m->env, (size_t)size * 4, sizeof(int64_t));
  m->note_reqs = hk_env_calloc(&m->env, (size_t)size * 2, sizeof(MPI_Request));
  if (!m->counts || !m->scalars || !m->notes || !m->note_reqs) {
    hk_mpi_free(m);
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_mpi_new: out of memory");
  }
  m->note_rreqs = m->note_reqs + size;
  m->displs = m->counts + size;
  m->counts2 = m->counts + 2 * size;
  m->displs2 = m->counts + 3 * size;
  /* Both duplicates under the deadline: a rank that never calls
   * hk_mpi_new() must not hang the others here either. */
  MPI_Comm *dups[2] = {&m->comm, &m->watch};
  for (int i = 0; i < 2; i++) {
    MPI_Request req = MPI_REQUEST_NULL;
    if ((err = MPI_Comm_idup(i == 0 ? base : m->comm, dups[i], &req)) != MPI_SUCCESS) {
      *dups[i] = MPI_COMM_NULL;
      hk_mpi_free(m);
      return hk__mpi_error(st, err, "hk_mpi_new: MPI_Comm_idup");
    }
    if ((rc = hk__mpi_p2p_wait(m, &req, HK__MPI_OP_CREATE, "some rank of the communicator (it did not call hk_mpi_new)",
                               "hk_mpi_new", NULL, st)) != HK_OK) {
      /* The duplicate never completed: nothing of it to free. */
      *dups[i] = MPI_COMM_NULL;
      hk_mpi_free(m);
      return rc;
    }
    MPI_Comm_set_errhandler(*dups[i], MPI_ERRORS_RETURN);
  }
  MPI_Comm_rank(m->comm, &m->rank);
  *out = m;
  return HK_OK;
}

void hk_mpi_free(hk_mpi *m) {
  if (!m) return;
  hk_env env = m->env;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (m->watch != MPI_COMM_NULL && !finalized) MPI_Comm_free(&m->watch);
  if (m->comm != MPI_COMM_NULL && !finalized) MPI_Comm_free(&m->comm);
  hk_env_free(&env, m->scratch);
  hk_env_free(&env, m->counts);
  hk_env_free(&env, m->scalars);
  hk_env_free(&env, m->notes);
  hk_env_free(&env, m->note_reqs);
  hk__mpi_log_free(m, &env);
  hk_env_free(&env, m);
}

int hk_mpi_rank(const hk_mpi *m) { return m ? m->rank : -1; }
int hk_mpi_size(const hk_mpi *m) { return m ? m->size : 0; }
int hk_mpi_root(const hk_mpi *m) { return m ? m->root : -1; }
int hk_mpi_is_chief(const hk_mpi *m) { return m && m->rank == m->root; }
MPI_Comm hk_mpi_comm(const hk_mpi *m) { return m ? m->comm : MPI_COMM_NULL; }

/* Make the scratch hold at least `bytes`. */
static hk_code grow_scratch(hk_mpi *m, size_t bytes, hk_status *st) {
  if (bytes <= m->scratch_bytes) return HK_OK;
  void *p = hk_env_alloc(&m->env, bytes);
  if (!p) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_mpi_reserve: out of memory for %zu bytes", bytes);
  hk_env_free(&m->env, m->scratch);
  m->scratch = p;
  m->scratch_bytes = bytes;
  return HK_OK;
}

hk_code hk_mpi_reserve(hk_mpi *m, size_t bytes, hk_status *st) {
  if (!m) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_mpi_reserve: mpi is NULL");
  /* `bytes` is the size of the buffers the program will average; a rank
   * receives N copies of its block, and the first count % N blocks hold one
   * element more than count / N: one element (at most a double) more per
   * rank covers every buffer of that size, so the steps that follow
   * allocate nothing on any rank. */
  size_t slack = (size_t)m->size * sizeof(double);
  if (bytes > SIZE_MAX - slack)
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_mpi_reserve: %zu bytes is more than memory can hold", bytes);
  return grow_scratch(m, bytes + slack, st);
}

/* Block r of n elements over N ranks: the first n % N blocks have one more. */
static void block(size_t n, int N, int r, size_t *start, size_t *len) {
  size_t q = n / (size_t)N, extra = n % (size_t)N;
  *len = q + ((size_t)r < extra);
  *start = q * (size_t)r + ((size_t)r < extra ? (size_t)r : extra);
}

#define SUM_IN_RANK_ORDER(T)                                            \
  do {                                                                  \
    T *dst = (T *)data + mine_start;                                    \
    const T *src = (const T *)m->scratch;                               \
    for (size_t e = 0; e < mine_len; e++) {                             \
      T acc = src[e];                                                   \
      for (int r = 1; r < N; r++) acc += src[(size_t)r * mine_len + e]; \
      dst[e] = acc / (T)N;                                              \
    }                                                                   \
  } while (0)

hk_code hk_mpi_average(hk_mpi *m, hk_dtype dtype, void *data, size_t count, hk_status *st) {
  if (!m) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_mpi_average: mpi is NULL");
  if (dtype != HK_DTYPE_F32 && dtype != HK_DTYPE_F64)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_mpi_average: dtype %s is not f32 or f64", hk_dtype_name(dtype));
  if (!data && count)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_mpi_average: data is NULL with count %zu", count);
  const int N = m->size;
  const size_t esize = dtype == HK_DTYPE_F32 ? sizeof(float) : sizeof(double);
  MPI_Datatype type = dtype == HK_DTYPE_F32 ? MPI_FLOAT : MPI_DOUBLE;
  size_t mine_start, mine_len;
  block(count, N, m->rank, &mine_start, &mine_len);
  if (count > (size_t)INT_MAX)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_mpi_average: count %zu is more than MPI's int counts reach (%d)",
                         count, INT_MAX);
  hk_code rc = hk__mpi_check_usable(m, "hk_mpi_average", st);
  if (rc == HK_OK) rc = grow_scratch(m, mine_len * (size_t)N * esize, st);
  if (rc != HK_OK) return rc;
  for (int r = 0; r < N; r++) {
    size_t s, len;
    block(count, N, r, &s, &len);
    m->counts[r] = (int)len; /* what I send to r: my copy of its block */
    m->displs[r] = (int)s;
    m->counts2[r] = (int)mine_len; /* what I receive from r: its copy of my block */
    m->displs2[r] = (int)(mine_len * (size_t)r);
  }
  MPI_Request req = MPI_REQUEST_NULL;
  rc = hk__mpi_collective_begin(m, HK__MPI_OP_AVERAGE, "hk_mpi_average", st);
  if (rc != HK_OK) return rc;
  int err = MPI_Ialltoallv(data, m->counts, m->displs, type, m->scratch, m->counts2, m->displs2, type, m->comm, &req);
  if (err != MPI_SUCCESS) return hk__mpi_error(st, err, "hk_mpi_average: MPI_Ialltoallv");
  if ((rc = hk__mpi_collective_wait(m, &req, HK__MPI_OP_AVERAGE, "hk_mpi_average", st)) != HK_OK) return rc;
  if (mine_len == 0) {
    /* No block of its own (count < N, or an empty buffer whose data may be NULL). */
  } else if (dtype == HK_DTYPE_F32)
    SUM_IN_RANK_ORDER(float);
  else
    SUM_IN_RANK_ORDER(double);
  rc = hk__mpi_collective_begin(m, HK__MPI_OP_AVERAGE, "hk_mpi_average", st);
  if (rc != HK_OK) return rc;
  err = MPI_Iallgatherv(MPI_IN_PLACE, 0, type, data, m->counts, m->displs, type, m->comm, &req);
  if (err != MPI_SUCCESS) return hk__mpi_error(st, err, "hk_mpi_average: MPI_Iallgatherv");
  return hk__mpi_collective_wait(m, &req, HK__MPI_OP_AVERAGE, "hk_mpi_average", st);
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
  double acc = m->scalars[0];
  for (int r = 1; r < m->size; r++) acc += m->scalars[r];
  *value = acc / (double)m->size;
  return HK_OK;
}
