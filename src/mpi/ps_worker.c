/*
 * hooked::mpi — the parameter server's workers: the ready check of the
 * worker role, the hook that pushes updates and the executor that reads the
 * shared global step.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include <string.h>

#include "ps.h"

static hk_code check_reply(hk_mpi_ps *ps, const ps_header *h, hk_status *st) {
  if (h->flags & PS_FLAG_MISMATCH)
    return hk_status_set(st, HK_FAILED_PRECONDITION,
                         "parameter server worker: rank %d's shared variables (names, dtypes or shapes) are not the "
                         "chief's: every rank must build the same model",
                         ps->mpi->rank);
  if (h->flags & PS_FLAG_STOP) ps->chief_stopped = 1;
  ps->last_gs = h->global_step;
  hk__mpi_set_step(ps->mpi, h->global_step);
  return HK_OK;
}

/* ---- the ready check -------------------------------------------------------------------- */

static const char *const not_served[1] = {"model (not yet served by the chief)"};

static hk_code ready_kernel(void *user, hk_kernel_context *ctx, const hk_tensor *inputs, size_t ninputs,
                            hk_tensor *outputs, size_t noutputs, hk_status *st) {
  hk_mpi_ps *ps = user;
  (void)inputs, (void)ninputs, (void)noutputs;
  if (!ps->pull_pending) {
    hk_code rc = hk__ps_request(ps, PS_TAG_PULL, 0, 0, st);
    if (rc != HK_OK) return rc;
    int err = MPI_Irecv(ps->rx, hk__ps_first_capacity(ps), MPI_BYTE, ps->mpi->root, PS_TAG_REPLY, ps->mpi->comm,
                        &ps->pull_req);
    if (err != MPI_SUCCESS) return hk__mpi_error(st, err, "parameter server worker: MPI_Irecv");
    ps->pull_pending = 1;
  }
  int done = 0;
  MPI_Status status;
  /* The chief answers at once when it serves: give it a moment before
   * reporting "not ready" and sleeping recovery_wait_secs. */
  for (int i = 0; i < 100 && !done; i++) {
    int err = MPI_Test(&ps->pull_req, &done, &status);
    if (err != MPI_SUCCESS) return hk__mpi_error(st, err, "parameter server worker: MPI_Test");
    if (!done) hk_env_sleep(&ps->env, 0.001);
  }
  if (!done) {
    outputs[0].data = (void *)not_served;
    outputs[0].dims[0] = 1;
    outputs[0].nbytes = sizeof not_served;
    return HK_OK;
  }
  ps->pull_pending = 0;
  ps_header h;
  int bytes = 0;
  MPI_Get_count(&status, MPI_BYTE, &bytes);
  hk_code rc = hk__ps_receive_rest(ps, ps->mpi->root, PS_TAG_REPLY, bytes, &h, st);
  if (rc == HK_OK) rc = check_reply(ps, &h, st);
  if (rc != HK_OK) return rc;
  for (size_t k = 0; k < ps->nvars; k++) {
    hk_tensor *v = hk_kernel_context_variable(ctx, k);
    memcpy(v->data, ps->rx + PS_HEADER_BYTES + ps->vars[k].offset, ps->vars[k].nbytes);
  }
  memcpy(ps->base, ps->rx + PS_HEADER_BYTES, ps->payload);
  memcpy(hk_kernel_context_variable(ctx, ps->nvars)->data, &h.global_step, sizeof h.global_step);
  ps->have_pull = 1;
  outputs[0].data = (void *)not_served;
  outputs[0].dims[0] = 0;
  outputs[0].nbytes = 0;
  return HK_OK;
}

hk_code hk_mpi_ps_worker_ready_ops(hk_mpi_ps *ps, hk_graph *g, hk_handle *ready_op, hk_handle *ready_for_local_init_op,
                                   hk_handle *local_init_op, hk_status *st) {
  if (!ps || !g || !ready_op || !ready_for_local_init_op || !local_init_op)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_mpi_ps_worker_ready_ops: an argument is NULL");
  if (ps->chief)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_mpi_ps_worker_ready_ops: rank %d is the chief, not a worker",
                         ps->mpi->rank);
  hk_executor *ex = hk_graph_executor(g);
  hk_code rc = hk__ps_layout(ps, ex, st);
  if (rc != HK_OK) return rc;
  hk_handle *mut = hk_env_calloc(&ps->env, ps->nvars + 1, sizeof *mut);
  if (!mut) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_mpi_ps_worker_ready_ops: out of memory");
  for (size_t k = 0; k <= ps->nvars && rc == HK_OK; k++) {
    hk_variable_info info;
    rc = hk_executor_variable_info(&info, ex, k < ps->nvars ? ps->vars[k].index : ps->gs_index, st);
    mut[k] = info.tensor;
  }
  hk_output_spec spec;
  memset(&spec, 0, sizeof spec);
  spec.dtype = HK_DTYPE_STRING;
  spec.rank = 1;
  spec.dims[0] = 1;
  hk_op_def def = HK_OP_DEF_INIT;
  def.name = "mpi/ps_ready";
  def.kernel = ready_kernel;
  def.kernel_user = ps;
  def.mutates = mut;
  def.nmutates = ps->nvars + 1;
  def.initializes = 1;
  def.outputs = &spec;
  def.noutputs = 1;
  hk_handle op;
  if (rc == HK_OK) rc = hk_graph_op(g, &op, &def, st);
  hk_env_free(&ps->env, mut);
  if (rc == HK_OK) rc = hk_graph_op_output(g, ready_op, op, 0, st);
  if (rc == HK_OK) rc = hk__mpi_nothing_report(g, "mpi/ps_ready_for_local_init", ready_for_local_init_op, st);
  if (rc == HK_OK) rc = hk_graph_group(g, local_init_op, "mpi/ps_local_init", NULL, 0, st);
  return rc;
}

/* ---- the worker's hook -------------------------------------------------------------------- */

static hk_code worker_after_create_session(void *user, hk_raw_session *rs, hk_coordinator *coord,
                                           hk_creation_context *ctx, hk_status *st) {
  hk_mpi_ps *ps = user;
  (void)rs, (void)st;
  ps->coord = coord;
  if (!ps->have_pull)
    return hk_status_set(st, HK_FAILED_PRECONDITION,
                         "parameter server worker: the session was created without the chief's variables; give the "
                         "worker's scaffold the ops of hk_mpi_ps_worker_ready_ops()");
  if (ps->chief_stopped) {
    hk_env_log(&ps->env, HK_LOG_INFO, "The chief has stopped; this worker stops before its first step.");
    hk_creation_context_request_stop(ctx);
  }
  return HK_OK;
}

static hk_code worker_after_run(void *user, hk_run_context *ctx, const hk_run_values *values, hk_status *st) {
  hk_mpi_ps *ps = user;
  hk_raw_session *rs = hk_run_context_session(ctx);
  (void)values;
  if (ps->chief_stopped) {
    hk_run_context_request_stop(ctx);
    return HK_OK;
  }
  /* The update: what this step did to the pulled values. */
  unsigned char *payload = ps->tx + PS_HEADER_BYTES;
  for (size_t k = 0; k < ps->nvars; k++) {
    hk_tensor v;
    hk_code rc = hk_raw_session_variable_storage(&v, rs, ps->vars[k].index, st);
    if (rc != HK_OK) return rc;
    const unsigned char *base = ps->base + ps->vars[k].offset;
    unsigned char *d = payload + ps->vars[k].offset;
    if (ps->vars[k].dtype == HK_DTYPE_F32) {
      const float *now = v.data;
      for (size_t i = 0; i < ps->vars[k].nbytes / sizeof(float); i++) {
        float b, x;
        memcpy(&b, base + i * sizeof b, sizeof b);
        x = now[i] - b;
        memcpy(d + i * sizeof x, &x, sizeof x);
      }
    } else {
      const double *now = v.data;
      for (size_t i = 0; i < ps->vars[k].nbytes / sizeof(double); i++) {
        double b, x;
        memcpy(&b, base + i * sizeof b, sizeof b);
        x = now[i] - b;
        memcpy(d + i * sizeof x, &x, sizeof x);
      }
    }
  }
  int64_t flags = (hk_run_context_stop_requested(ctx) || hk_signal_fired()) ? PS_FLAG_STOP : 0;
  ps_header h;
  hk_code rc = hk__ps_request(ps, PS_TAG_PUSH, flags, ps->payload, st);
  if (rc == HK_OK) rc = hk__ps_receive(ps, &h, st);
  if (rc == HK_OK) rc = check_reply(ps, &h, st);
  if (rc != HK_OK) return rc;
  /* The shared state after the update, into the worker's variables. */
  for (size_t k = 0; k < ps->nvars; k++) {
    hk_tensor v;
    if ((rc = hk_raw_session_variable_storage(&v, rs, ps->vars[k].index, st)) != HK_OK) return rc;
    memcpy(v.data, ps->rx + PS_HEADER_BYTES + ps->vars[k].offset, ps->vars[k].nbytes);
  }
  memcpy(ps->base, ps->rx + PS_HEADER_BYTES, ps->payload);
  hk_tensor gs;
  if ((rc = hk_raw_session_variable_storage(&gs, rs, ps->gs_index, st)) != HK_OK) return rc;
  memcpy(gs.data, &h.global_step, sizeof h.global_step);
  if (h.flags & PS_FLAG_APPLIED) ps->updates++; /* a "stop" may come with an applied update, or instead of one */
  if (ps->chief_stopped) hk_run_context_request_stop(ctx);
  return HK_OK;
}

static hk_code worker_end(void *user, hk_raw_session *rs, hk_status *st) {
  hk_mpi_ps *ps = user;
  (void)rs;
  /* Leaving asks the job to stop unless the chief asked first: a worker
   * stops for a signal or its own StopAtStep, and the job with it. */
  return hk__ps_request(ps, PS_TAG_BYE, ps->chief_stopped ? 0 : PS_FLAG_STOP, 0, st);
}

static const hk_hook_vtable worker_vtable = {
    .version = HK_HOOK_VTABLE_VERSION,
    .after_create_session = worker_after_create_session,
    .after_run = worker_after_run,
    .end = worker_end,
};

hk_code hk_mpi_ps_worker_hook_new(hk_hook **out, hk_mpi_ps *ps, hk_status *st) {
  if (out) *out = NULL;
  if (!out || !ps)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_mpi_ps_worker_hook_new: %s is NULL", !out ? "out" : "ps");
  if (ps->chief)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_mpi_ps_worker_hook_new: rank %d is the chief, not a worker",
                         ps->mpi->rank);
  return hk_hook_new(out, &worker_vtable, ps, "ParameterServerWorkerHook", &ps->env, st);
}
