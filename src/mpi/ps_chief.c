/*
 * hooked::mpi — the parameter server's chief: the serve op and the hook
 * that ends the service.
 *
 * The server is the chief's training loop itself: one run of the serve op
 * applies one worker's update (one global step) and answers the pulls and
 * step reads that arrive meanwhile. Single-threaded, so every update is
 * applied whole between two others, and a checkpoint the chief's saver
 * writes between two runs holds the shared variables at one global step.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h>
#include <string.h>

#include "ps.h"

/* The longest pause between two looks for a message while idle. */
#define IDLE_MAX_SECS 0.001

static hk_code reply(hk_mpi_ps *ps, int dest, int64_t gs, int64_t flags, int with_payload, hk_status *st) {
  ps_header h = {gs, flags, (int64_t)ps->fingerprint, 0};
  memcpy(ps->tx, &h, sizeof h);
  return hk__ps_send(ps, dest, PS_TAG_REPLY, with_payload ? ps->payload : 0, st);
}

/* The variables' current values into the reply's payload. */
static void pack(hk_mpi_ps *ps, hk_kernel_context *ctx) {
  for (size_t k = 0; k < ps->nvars; k++) {
    hk_tensor *v = hk_kernel_context_variable(ctx, k);
    memcpy(ps->tx + PS_HEADER_BYTES + ps->vars[k].offset, v->data, ps->vars[k].nbytes);
  }
}

static void apply(hk_mpi_ps *ps, hk_kernel_context *ctx, const unsigned char *delta) {
  for (size_t k = 0; k < ps->nvars; k++) {
    hk_tensor *v = hk_kernel_context_variable(ctx, k);
    const unsigned char *d = delta + ps->vars[k].offset;
    if (ps->vars[k].dtype == HK_DTYPE_F32) {
      float *dst = v->data;
      size_t n = ps->vars[k].nbytes / sizeof(float);
      for (size_t i = 0; i < n; i++) {
        float x;
        memcpy(&x, d + i * sizeof x, sizeof x);
        dst[i] += x;
      }
    } else {
      double *dst = v->data;
      size_t n = ps->vars[k].nbytes / sizeof(double);
      for (size_t i = 0; i < n; i++) {
        double x;
        memcpy(&x, d + i * sizeof x, sizeof x);
        dst[i] += x;
      }
    }
  }
}

static int stop_wanted(const hk_mpi_ps *ps) {
  return hk_signal_fired() != 0 || (ps->coord && hk_coordinator_should_stop(ps->coord));
}

/* The first pause after an idle look, doubled up to IDLE_MAX_SECS. */
#define IDLE_MIN_SECS 0.00002

/* No request from any worker within the deadline: name those still there. */
static hk_code nobody_came(hk_mpi_ps *ps, hk_status *st) {
  char ranks[160];
  size_t len = (size_t)snprintf(ranks, sizeof ranks, "worker rank(s) ");
  int n = 0;
  for (int r = 0; r < ps->mpi->size && len < sizeof ranks; r++)
    if (!ps->gone[r]) {
      len += (size_t)snprintf(ranks + len, sizeof ranks - len, "%s%d", n++ ? ", " : "", r);
      if (len >= sizeof ranks) len = sizeof ranks;
    }
  return hk__mpi_p2p_timeout(ps->mpi, HK__MPI_OP_PS_REQUEST, ranks, "parameter server", st);
}

/* Receive one request into rx if there is one (*got 1, *h its header);
 * otherwise sleep *idle, double it up to IDLE_MAX_SECS and return with *got
 * 0, or DEADLINE_EXCEEDED once no request has come since *last for the
 * context's deadline. A request resets *idle and *last. */
static hk_code next_request(hk_mpi_ps *ps, MPI_Status *status, ps_header *h, double *idle, double *last, int *got,
                            hk_status *st) {
  int flag = 0, bytes = 0;
  *got = 0;
  int err = MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, ps->mpi->comm, &flag, status);
  if (err != MPI_SUCCESS) return hk__mpi_error(st, err, "parameter server: MPI_Iprobe");
  if (!flag) {
    if (hk_env_monotonic(NULL) - *last >= ps->mpi->timeout) return nobody_came(ps, st);
    hk_env_sleep(&ps->env, *idle);
    *idle = *idle * 2 < IDLE_MAX_SECS ? *idle * 2 : IDLE_MAX_SECS;
    return HK_OK;
  }
  if (status->MPI_TAG < PS_TAG_PULL || status->MPI_TAG > PS_TAG_BYE)
    return hk_status_set(st, HK_INTERNAL, "parameter server: rank %d sent a message with tag %d, not a request",
                         status->MPI_SOURCE, status->MPI_TAG);
  MPI_Get_count(status, MPI_BYTE, &bytes);
  if (bytes < (int)PS_HEADER_BYTES || bytes > hk__ps_first_capacity(ps))
    return hk_status_set(st, HK_INTERNAL, "parameter server: rank %d sent a request of %d bytes; the layout takes %zu",
                         status->MPI_SOURCE, bytes, PS_HEADER_BYTES + ps->payload);
  err = MPI_Recv(ps->rx, bytes, MPI_BYTE, status->MPI_SOURCE, status->MPI_TAG, ps->mpi->comm, MPI_STATUS_IGNORE);
  if (err != MPI_SUCCESS) return hk__mpi_error(st, err, "parameter server: MPI_Recv");
  hk_code rc = hk__ps_receive_rest(ps, status->MPI_SOURCE, status->MPI_TAG, bytes, h, st);
  if (rc != HK_OK) return rc;
  *idle = IDLE_MIN_SECS;
  *last = hk_env_monotonic(NULL);
  *got = 1;
  return HK_OK;
}

static void leave(hk_mpi_ps *ps, int rank) {
  if (!ps->gone[rank]) {
    ps->gone[rank] = 1;
    ps->nleft--;
  }
}

static hk_code serve_kernel(void *user, hk_kernel_context *ctx, const hk_tensor *inputs, size_t ninputs,
                            hk_tensor *outputs, size_t noutputs, hk_status *st) {
  hk_mpi_ps *ps = user;
  hk_tensor *gsv = hk_kernel_context_variable(ctx, ps->nvars);
  double idle = IDLE_MIN_SECS, last = hk_env_monotonic(NULL);
  (void)inputs, (void)ninputs;
  for (;;) {
    if (ps->nleft == 0) return hk_status_set(st, HK_OUT_OF_RANGE, "parameter server: every worker has finished");
    if (stop_wanted(ps)) return hk_status_set(st, HK_CANCELLED, "parameter server: stop requested");
    MPI_Status status;
    ps_header h;
    int got;
    hk_code prc = next_request(ps, &status, &h, &idle, &last, &got, st);
    if (prc != HK_OK) return prc;
    if (!got) continue;
    int from = status.MPI_SOURCE;
    int64_t *gs = gsv->data;
    hk__mpi_set_step(ps->mpi, *gs);
    int64_t flags = atomic_load(&ps->stop) ? PS_FLAG_STOP : 0;
    if (h.flags & PS_FLAG_STOP) atomic_store(&ps->stop, 1);
    if (status.MPI_TAG == PS_TAG_BYE) {
      leave(ps, from);
      continue;
    }
    if (status.MPI_TAG != PS_TAG_STEP && h.fingerprint != (int64_t)ps->fingerprint) {
      hk_code rc = reply(ps, from, *gs, PS_FLAG_MISMATCH, 0, st);
      if (rc != HK_OK) return rc;
      continue;
    }
    if (status.MPI_TAG == PS_TAG_STEP) {
      hk_code rc = reply(ps, from, *gs, flags, 0, st);
      if (rc != HK_OK) return rc;
      continue;
    }
    if (status.MPI_TAG == PS_TAG_PUSH) {
      if ((size_t)h.payload != ps->payload)
        return hk_status_set(st, HK_INTERNAL, "parameter server: rank %d pushed %lld bytes; the update takes %zu", from,
                             (long long)h.payload, ps->payload);
      apply(ps, ctx, ps->rx + PS_HEADER_BYTES);
      *gs += 1;
      ps->updates++;
      /* Applied, even when the reply also says "stop" (a worker asked the
       * job to stop meanwhile): the worker counts it. */
      flags |= PS_FLAG_APPLIED;
    }
    pack(ps, ctx);
    hk_code rc = reply(ps, from, *gs, flags, 1, st);
    if (rc != HK_OK) return rc;
    if (status.MPI_TAG == PS_TAG_PUSH) {
      if (noutputs == 1) *(int64_t *)outputs[0].data = from;
      return HK_OK;
    }
  }
}

hk_code hk_mpi_ps_serve_op(hk_handle *out, hk_mpi_ps *ps, hk_graph *g, const char *name, hk_status *st) {
  if (!ps || !g || !out || !name)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_mpi_ps_serve_op: %s is NULL",
                         !ps    ? "ps"
                         : !g   ? "g"
                         : !out ? "out"
                                : "name");
  if (!ps->chief)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_mpi_ps_serve_op: rank %d is a worker; the chief (rank %d) serves",
                         ps->mpi->rank, ps->mpi->root);
  hk_executor *ex = hk_graph_executor(g);
  hk_code rc = hk__ps_layout(ps, ex, st);
  if (rc != HK_OK) return rc;
  hk_handle *mut = hk_env_calloc(&ps->env, ps->nvars + 1, sizeof *mut);
  if (!mut) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_mpi_ps_serve_op: out of memory");
  for (size_t k = 0; k <= ps->nvars; k++) {
    hk_variable_info info;
    rc = hk_executor_variable_info(&info, ex, k < ps->nvars ? ps->vars[k].index : ps->gs_index, st);
    if (rc != HK_OK) {
      hk_env_free(&ps->env, mut);
      return rc;
    }
    mut[k] = info.tensor;
  }
  hk_output_spec spec;
  memset(&spec, 0, sizeof spec);
  spec.dtype = HK_DTYPE_I64;
  hk_op_def def = HK_OP_DEF_INIT;
  def.name = name;
  def.kernel = serve_kernel;
  def.kernel_user = ps;
  def.mutates = mut;
  def.nmutates = ps->nvars + 1;
  def.outputs = &spec;
  def.noutputs = 1;
  rc = hk_graph_op(g, out, &def, st);
  hk_env_free(&ps->env, mut);
  return rc;
}

/* ---- the chief's hook ------------------------------------------------------------------ */

static hk_code chief_after_create_session(void *user, hk_raw_session *rs, hk_coordinator *coord,
                                          hk_creation_context *ctx, hk_status *st) {
  hk_mpi_ps *ps = user;
  (void)rs, (void)ctx, (void)st;
  ps->coord = coord;
  return HK_OK;
}

static hk_code chief_after_run(void *user, hk_run_context *ctx, const hk_run_values *values, hk_status *st) {
  hk_mpi_ps *ps = user;
  (void)values, (void)st;
  if (atomic_load(&ps->stop) && !hk_run_context_stop_requested(ctx)) {
    hk_env_log(&ps->env, HK_LOG_INFO, "A worker asked the job to stop; the chief stops serving.");
    hk_run_context_request_stop(ctx);
  }
  return HK_OK;
}

/* Tell every worker still there to stop, and wait until each has left. */
static hk_code chief_end(void *user, hk_raw_session *rs, hk_status *st) {
  hk_mpi_ps *ps = user;
  if (!ps->have_layout || ps->nleft == 0) return HK_OK;
  hk_tensor gst;
  hk_code rc = hk_raw_session_variable_storage(&gst, rs, ps->gs_index, st);
  if (rc != HK_OK) return rc;
  int64_t gs;
  memcpy(&gs, gst.data, sizeof gs);
  hk_env_log(&ps->env, HK_LOG_INFO, "Stopping %d worker(s) at global step %lld.", ps->nleft, (long long)gs);
  /* The payload answers pulls (a worker still starting gets the final state). */
  for (size_t k = 0; k < ps->nvars; k++) {
    hk_tensor v;
    if ((rc = hk_raw_session_variable_storage(&v, rs, ps->vars[k].index, st)) != HK_OK) return rc;
    memcpy(ps->tx + PS_HEADER_BYTES + ps->vars[k].offset, v.data, ps->vars[k].nbytes);
  }
  double idle = IDLE_MIN_SECS, last = hk_env_monotonic(NULL);
  while (ps->nleft > 0) {
    MPI_Status status;
    ps_header h;
    int got;
    if ((rc = next_request(ps, &status, &h, &idle, &last, &got, st)) != HK_OK) return rc;
    if (!got) continue;
    if (status.MPI_TAG == PS_TAG_BYE) {
      leave(ps, status.MPI_SOURCE);
      continue;
    }
    /* A worker whose model differs is refused here too: one that
     * arrives while the job stops must not be handed the final state. */
    if (status.MPI_TAG != PS_TAG_STEP && h.fingerprint != (int64_t)ps->fingerprint) {
      if ((rc = reply(ps, status.MPI_SOURCE, gs, PS_FLAG_MISMATCH, 0, st)) != HK_OK) return rc;
      continue;
    }
    /* Updates arriving now are not applied: the final checkpoint is the
     * state at the chief's last step. */
    if ((rc = reply(ps, status.MPI_SOURCE, gs, PS_FLAG_STOP, status.MPI_TAG != PS_TAG_STEP, st)) != HK_OK) return rc;
  }
  hk_env_log(&ps->env, HK_LOG_INFO, "Every worker has left.");
  return HK_OK;
}

static const hk_hook_vtable chief_vtable = {
    .version = HK_HOOK_VTABLE_VERSION,
    .after_create_session = chief_after_create_session,
    .after_run = chief_after_run,
    .end = chief_end,
};

hk_code hk_mpi_ps_chief_hook_new(hk_hook **out, hk_mpi_ps *ps, hk_status *st) {
  if (out) *out = NULL;
  if (!out || !ps)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_mpi_ps_chief_hook_new: %s is NULL", !out ? "out" : "ps");
  if (!ps->chief)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_mpi_ps_chief_hook_new: rank %d is a worker, not the chief",
                         ps->mpi->rank);
  return hk_hook_new(out, &chief_vtable, ps, "ParameterServerChiefHook", &ps->env, st);
}
