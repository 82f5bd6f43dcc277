/*
 * hooked::mpi — the communicator context: options, creation, accessors,
 * and the helpers every file of src/mpi/ shares. The averaging is in
 * average.c, average_request.c and fusion.c.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include <stddef.h>
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
  return hk_struct_init(opts, sizeof *opts, &default_options, version);
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
  size_t fusion = o->fusion_threshold_bytes;
  if (fusion == 0) fusion = HK_MPI_DEFAULT_FUSION_BYTES;
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
  m->fusion_bytes = fusion;
  m->scalars = hk_env_calloc(&m->env, (size_t)size, sizeof(double));
  m->notes = hk_env_calloc(&m->env, (size_t)size * 4, sizeof(int64_t));
  m->note_reqs = hk_env_calloc(&m->env, (size_t)size * 2, sizeof(MPI_Request));
  if (!m->scalars || !m->notes || !m->note_reqs || hk__avg_request_create(&m->sync, m, NULL) != HK_OK) {
    hk_mpi_free(m);
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_mpi_new: out of memory");
  }
  m->note_rreqs = m->note_reqs + size;
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
  /* The averaging's tags: as many as the library's tag range holds (MPI
   * promises up to 32767; Open MPI's reaches 2^31 - 1). */
  int *tag_ub = NULL, has = 0;
  MPI_Comm_get_attr(m->comm, MPI_TAG_UB, &tag_ub, &has);
  const int64_t ub = has && tag_ub ? *tag_ub : 32767;
  m->avg_span = (ub - HK__AVG_TAG_BASE - 1) / 2;
  *out = m;
  return HK_OK;
}

void hk_mpi_free(hk_mpi *m) {
  if (!m) return;
  hk_env env = m->env;
  int finalized = 0;
  MPI_Finalized(&finalized);
  hk__avg_request_destroy(m->sync); /* first: it may hold requests on the communicator */
  if (m->watch != MPI_COMM_NULL && !finalized) MPI_Comm_free(&m->watch);
  if (m->comm != MPI_COMM_NULL && !finalized) MPI_Comm_free(&m->comm);
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
