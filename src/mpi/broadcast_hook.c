/*
 * hooked::mpi — BroadcastGlobalVariablesHook and the ready ops of a
 * synchronous worker.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include <limits.h>
#include <string.h>

#include "mpi_internal.h"

typedef struct broadcast {
  hk_mpi *mpi;
  uint32_t *prints; /* size entries */
} broadcast;

static int shared_var(const hk_variable_info *info, void *user) {
  (void)user;
  return (info->flags & HK_VAR_LOCAL) == 0;
}

/* One non-blocking broadcast from the chief, waited for under the deadline. */
static hk_code bcast(hk_mpi *m, void *p, int count, MPI_Datatype type, int op, hk_status *st) {
  MPI_Request req = MPI_REQUEST_NULL;
  hk_code rc = hk__mpi_collective_begin(m, op, "broadcast hook", st);
  if (rc != HK_OK) return rc;
  int err = MPI_Ibcast(p, count, type, m->root, m->comm, &req);
  if (err != MPI_SUCCESS) return hk__mpi_error(st, err, "broadcast hook: MPI_Ibcast");
  return hk__mpi_collective_wait(m, &req, op, "broadcast hook", st);
}

/* The next shared variable of ex from *cursor on: 1 found (in *info), 0 none. */
static int next_shared(hk_executor *ex, size_t *cursor, hk_variable_info *info) {
  size_t n = hk_executor_variable_count(ex);
  while (*cursor < n) {
    hk_status ignore = HK_STATUS_INIT;
    size_t i = (*cursor)++;
    if (hk_executor_variable_info(info, ex, i, &ignore) == HK_OK && shared_var(info, NULL)) return 1;
  }
  return 0;
}

/* Collective, once some model differs (every rank knows it): the chief sends
 * its variables' fingerprints one by one and each rank finds its first shared
 * variable that is not the chief's. *name is that variable's name, or NULL
 * when this rank has fewer variables than the chief (or none differs);
 * *nchief the chief's count. Only the error path pays for it; it allocates
 * nothing, so every rank stays in step. */
static hk_code first_difference(broadcast *b, hk_executor *ex, const char **name, int *nchief, hk_status *st) {
  hk_mpi *m = b->mpi;
  hk_variable_info info;
  size_t cursor = 0;
  int n0 = 0, found = 0;
  *name = NULL;
  if (m->rank == m->root)
    while (next_shared(ex, &cursor, &info)) n0++;
  hk_code rc = bcast(m, &n0, 1, MPI_INT, HK__MPI_OP_MODEL_CHECK, st);
  if (rc != HK_OK) return rc;
  *nchief = n0;
  cursor = 0;
  for (int k = 0; k < n0; k++) {
    int have = next_shared(ex, &cursor, &info);
    uint32_t mine = have ? hk__mpi_describe(0, &info) : 0, theirs = mine;
    if ((rc = bcast(m, &theirs, 1, MPI_UINT32_T, HK__MPI_OP_MODEL_CHECK, st)) != HK_OK) return rc;
    if (!found && (!have || mine != theirs)) {
      found = 1;
      *name = have ? info.name : NULL;
    }
  }
  /* The chief's variables are a prefix of this rank's: the next is extra. */
  if (!found && next_shared(ex, &cursor, &info)) *name = info.name;
  return HK_OK;
}

/* Every rank's fingerprint against the chief's: a rank with another model
 * fails, naming its first variable that differs, and so does the chief, so
 * the job ends. */
static hk_code check_models(broadcast *b, hk_raw_session *rs, hk_status *st) {
  hk_mpi *m = b->mpi;
  hk_executor *ex = hk_raw_session_executor(rs);
  uint32_t mine;
  hk_code rc = hk__mpi_fingerprint(ex, shared_var, NULL, &mine, st);
  if (rc != HK_OK) return rc;
  MPI_Request req = MPI_REQUEST_NULL;
  if ((rc = hk__mpi_collective_begin(m, HK__MPI_OP_MODEL_CHECK, "broadcast hook", st)) != HK_OK) return rc;
  int err = MPI_Iallgather(&mine, 1, MPI_UINT32_T, b->prints, 1, MPI_UINT32_T, m->comm, &req);
  if (err != MPI_SUCCESS) return hk__mpi_error(st, err, "broadcast hook: MPI_Iallgather");
  if ((rc = hk__mpi_collective_wait(m, &req, HK__MPI_OP_MODEL_CHECK, "broadcast hook", st)) != HK_OK) return rc;
  int first_bad = -1, nbad = 0;
  for (int r = 0; r < m->size; r++)
    if (b->prints[r] != b->prints[m->root]) {
      if (first_bad < 0) first_bad = r;
      nbad++;
    }
  if (nbad == 0) return HK_OK;
  const char *differs = NULL;
  int nchief = 0;
  rc = first_difference(b, ex, &differs, &nchief, st);
  if (rc != HK_OK) return rc;
  if (m->rank == m->root)
    return hk_status_set(st, HK_FAILED_PRECONDITION,
                         "broadcast hook: %d rank(s), the first rank %d, have other variables (names, dtypes or "
                         "shapes) than the chief (rank %d): every rank must build the same model",
                         nbad, first_bad, m->root);
  if (b->prints[m->rank] != b->prints[m->root] && differs)
    return hk_status_set(st, HK_FAILED_PRECONDITION,
                         "broadcast hook: rank %d has other variables (names, dtypes or shapes) than the chief (rank "
                         "%d): its variable '%s' is not the chief's; every rank must build the same model",
                         m->rank, m->root, differs);
  if (b->prints[m->rank] != b->prints[m->root])
    return hk_status_set(st, HK_FAILED_PRECONDITION,
                         "broadcast hook: rank %d has other variables (names, dtypes or shapes) than the chief (rank "
                         "%d): it lacks some of the chief's %d; every rank must build the same model",
                         m->rank, m->root, nchief);
  return hk_status_set(st, HK_FAILED_PRECONDITION,
                       "broadcast hook: rank %d has other variables than the chief (rank %d); stopping with it",
                       first_bad, m->root);
}

static hk_code bcast_after_create_session(void *user, hk_raw_session *rs, hk_coordinator *coord,
                                          hk_creation_context *ctx, hk_status *st) {
  broadcast *b = user;
  hk_mpi *m = b->mpi;
  (void)coord;
  (void)ctx;
  /* This rank's own step until the broadcast: a deadline's message names it. */
  int64_t gs = HK_UNSET_STEPS;
  hk_status ignore = HK_STATUS_INIT;
  if (hk_raw_session_global_step(&gs, rs, &ignore) != HK_OK) gs = HK_UNSET_STEPS;
  hk__mpi_set_step(m, gs);
  hk_code rc = check_models(b, rs, st);
  if (rc != HK_OK) return rc;
  hk_executor *ex = hk_raw_session_executor(rs);
  size_t n = hk_executor_variable_count(ex);
  size_t sent = 0, bytes = 0;
  for (size_t i = 0; i < n; i++) {
    hk_variable_info info;
    if ((rc = hk_executor_variable_info(&info, ex, i, st)) != HK_OK) return rc;
    if (!shared_var(&info, NULL)) continue;
    hk_tensor t;
    hk_status local = HK_STATUS_INIT;
    rc = hk_raw_session_variable_storage(&t, rs, i, &local);
    if (rc == HK_UNIMPLEMENTED) continue; /* an opaque state: per rank */
    if (rc != HK_OK) return hk_status_set(st, rc, "broadcast hook: variable '%s': %s", info.name, local.message);
    unsigned char *p = t.data;
    for (size_t left = t.nbytes; left > 0;) {
      int chunk = left > (size_t)(INT_MAX / 2) ? INT_MAX / 2 : (int)left;
      if ((rc = bcast(m, p, chunk, MPI_BYTE, HK__MPI_OP_BROADCAST, st)) != HK_OK) return rc;
      p += chunk;
      left -= (size_t)chunk;
    }
    sent++;
    bytes += t.nbytes;
  }
  if (m->rank == m->root)
    hk_env_log(&m->env, HK_LOG_INFO, "Broadcast %zu variables (%zu bytes) from the chief (rank %d) to %d ranks.", sent,
               bytes, m->root, m->size);
  return HK_OK;
}

static void bcast_destroy(void *user) {
  broadcast *b = user;
  hk_env env = b->mpi->env;
  hk_env_free(&env, b->prints);
  hk_env_free(&env, b);
}

static const hk_hook_vtable bcast_vtable = {
    .version = HK_HOOK_VTABLE_VERSION,
    .after_create_session = bcast_after_create_session,
    .destroy = bcast_destroy,
};

hk_code hk_mpi_broadcast_hook_new(hk_hook **out, hk_mpi *mpi, hk_status *st) {
  if (out) *out = NULL;
  if (!out || !mpi)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_mpi_broadcast_hook_new: %s is NULL", !out ? "out" : "mpi");
  broadcast *b = hk_env_calloc(&mpi->env, 1, sizeof *b);
  uint32_t *prints = hk_env_calloc(&mpi->env, (size_t)mpi->size, sizeof *prints);
  if (!b || !prints) {
    hk_env_free(&mpi->env, b);
    hk_env_free(&mpi->env, prints);
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_mpi_broadcast_hook_new: out of memory");
  }
  b->mpi = mpi;
  b->prints = prints;
  return hk_hook_new(out, &bcast_vtable, b, "BroadcastGlobalVariablesHook", &mpi->env, st);
}

/* ---- the ready ops of a synchronous worker ---------------------------------------- */

static const char *const no_names[1] = {NULL};

static hk_code nothing_kernel(void *user, hk_kernel_context *ctx, const hk_tensor *inputs, size_t ninputs,
                              hk_tensor *outputs, size_t noutputs, hk_status *st) {
  (void)user, (void)ctx, (void)inputs, (void)ninputs, (void)st;
  if (noutputs == 1) {
    outputs[0].data = (void *)no_names;
    outputs[0].dims[0] = 0;
    outputs[0].nbytes = 0;
  }
  return HK_OK;
}

hk_code hk__mpi_nothing_report(hk_graph *g, const char *name, hk_handle *out, hk_status *st) {
  hk_output_spec spec;
  memset(&spec, 0, sizeof spec);
  spec.dtype = HK_DTYPE_STRING;
  spec.rank = 1;
  spec.dims[0] = 0;
  hk_op_def def = HK_OP_DEF_INIT;
  def.name = name;
  def.kernel = nothing_kernel;
  def.outputs = &spec;
  def.noutputs = 1;
  hk_handle op;
  hk_code rc = hk_graph_op(g, &op, &def, st);
  if (rc != HK_OK) return rc;
  return hk_graph_op_output(g, out, op, 0, st);
}

hk_code hk_mpi_sync_worker_ops(hk_mpi *mpi, hk_graph *g, hk_handle *ready_op, hk_handle *ready_for_local_init_op,
                               hk_handle *local_init_op, hk_status *st) {
  if (!mpi || !g || !ready_op || !ready_for_local_init_op || !local_init_op)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_mpi_sync_worker_ops: an argument is NULL");
  if (mpi->rank == mpi->root)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_mpi_sync_worker_ops: rank %d is the chief, not a worker",
                         mpi->rank);
  /* Every global variable (the values the broadcast then replaces) and, as
   * the default local init does, every local one: the default ready_op
   * waits for both. */
  hk_handle parts[2];
  hk_code rc = hk_graph_init_op(g, &parts[0], "mpi/worker_init_global", NULL, 0, st);
  if (rc == HK_OK) rc = hk_executor_default_op(&parts[1], hk_graph_executor(g), HK_DEFAULT_LOCAL_INIT_OP, st);
  if (rc == HK_OK) rc = hk_graph_group(g, local_init_op, "mpi/worker_init", parts, 2, st);
  if (rc != HK_OK) return rc;
  rc = hk__mpi_nothing_report(g, "mpi/worker_ready_for_local_init", ready_for_local_init_op, st);
  if (rc != HK_OK) return rc;
  *ready_op = HK_NO_HANDLE; /* the default: every variable initialized */
  return HK_OK;
}
