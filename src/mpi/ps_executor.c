/*
 * hooked::mpi — a worker's executor: the worker's own executor, except that
 * a run fetching the global step alone (hk_raw_session_global_step(): how
 * GlobalStepWaiterHook polls and StopAtStep re-reads) is answered with the
 * chief's shared step. Written against the public executor interface,
 * as any third-party wrapper could be: it owns its raw sessions (one raw
 * session of the inner executor per session of its own, which is its own
 * session pointer) and passes the inner executor that one.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include <string.h>

#include "ps.h"

typedef struct wrapper {
  hk_mpi_ps *ps;
  hk_executor *inner;
  hk_handle gs_tensor;
  int have_gs;
} wrapper;

static hk_code w_resolve_tensor(void *self, const char *name, hk_handle *out, hk_status *st) {
  return hk_executor_resolve_tensor(out, ((wrapper *)self)->inner, name, st);
}
static hk_code w_resolve_op(void *self, const char *name, hk_handle *out, hk_status *st) {
  return hk_executor_resolve_op(out, ((wrapper *)self)->inner, name, st);
}
static const char *w_handle_name(void *self, hk_handle handle) {
  return hk_executor_handle_name(((wrapper *)self)->inner, handle);
}
static hk_code w_finalize(void *self, hk_status *st) { return hk_executor_finalize(((wrapper *)self)->inner, st); }
static int w_is_finalized(void *self) { return hk_executor_is_finalized(((wrapper *)self)->inner); }

static hk_code w_open(void *self, void **out, hk_status *st) {
  hk_raw_session *rs = NULL;
  hk_code rc = hk_raw_session_open(&rs, ((wrapper *)self)->inner, st);
  *out = rs;
  return rc;
}
static hk_code w_close(void *self, void *session, hk_status *st) {
  (void)self;
  hk_code rc = hk_raw_session_close(session, st);
  hk_raw_session_free(session);
  return rc;
}

/* The shared global step, asked of the chief. */
static hk_code shared_step(hk_mpi_ps *ps, int64_t *gs, hk_status *st) {
  ps_header h;
  hk_code rc = hk__ps_request(ps, PS_TAG_STEP, 0, 0, st);
  if (rc == HK_OK) rc = hk__ps_receive(ps, &h, st);
  if (rc != HK_OK) return rc;
  if (h.flags & PS_FLAG_STOP) {
    ps->chief_stopped = 1;
    /* A wait on the step (GlobalStepWaiterHook) ends through the coordinator. */
    if (ps->coord) hk_coordinator_request_stop(ps->coord, HK_OK, NULL);
  }
  *gs = h.global_step;
  return HK_OK;
}

static hk_code w_run(void *self, void *session, const hk_run_args *args, hk_tensor *results, hk_run_metadata *md,
                     hk_status *st) {
  wrapper *w = self;
  hk_code rc = hk_raw_session_run(session, args, results, md, st);
  if (rc != HK_OK) return rc;
  if (!w->have_gs) {
    hk_variable_info info;
    hk_status ignore = HK_STATUS_INIT;
    if (hk_executor_global_step(&info, NULL, w->inner, &ignore) == HK_OK) w->gs_tensor = info.tensor;
    w->have_gs = 1;
  }
  /* Only a read of the step alone: training runs keep the step their
   * push received, at no extra message. */
  if (w->gs_tensor != HK_NO_HANDLE && w->ps->have_layout && w->ps->have_pull && args->nfetches == 1 &&
      args->ntargets == 0 && args->nfeeds == 0 && args->fetches[0] == w->gs_tensor && !w->ps->chief_stopped &&
      results[0].dtype == HK_DTYPE_I64 && results[0].nbytes == sizeof(int64_t)) {
    int64_t gs = 0;
    rc = shared_step(w->ps, &gs, st);
    if (rc != HK_OK) return rc;
    memcpy(results[0].data, &gs, sizeof gs);
  }
  return HK_OK;
}

static size_t w_variable_count(void *self) { return hk_executor_variable_count(((wrapper *)self)->inner); }
static hk_code w_variable_info(void *self, size_t index, hk_variable_info *out, hk_status *st) {
  return hk_executor_variable_info(out, ((wrapper *)self)->inner, index, st);
}
static hk_code w_variable_read(void *self, void *session, size_t index, hk_tensor *out, hk_status *st) {
  (void)self;
  return hk_raw_session_read_variable(out, session, index, st);
}
static hk_code w_variable_assign(void *self, void *session, size_t index, const hk_tensor *value, hk_status *st) {
  (void)self;
  return hk_raw_session_assign_variable(session, index, value, st);
}
static hk_code w_role_get(void *self, const char *role, hk_handle *out, size_t cap, size_t *count, hk_status *st) {
  return hk_executor_role_get(out, cap, count, ((wrapper *)self)->inner, role, st);
}
static hk_code w_role_add(void *self, const char *role, hk_handle handle, hk_status *st) {
  return hk_executor_role_add(((wrapper *)self)->inner, role, handle, st);
}
static hk_code w_default_op(void *self, hk_default_op kind, hk_handle *out, hk_status *st) {
  return hk_executor_default_op(out, ((wrapper *)self)->inner, kind, st);
}
static hk_code w_describe(void *self, hk_text_sink sink, void *sink_user, hk_status *st) {
  return hk_executor_describe(((wrapper *)self)->inner, sink, sink_user, st);
}
/* A control op naming a session (HK_CONTROL_SNAPSHOT_ATTACH) reaches this
 * slot naming this executor's own session, which is the inner raw session
 * w_open made: what a wrapper hands the inner executor, so the argument goes
 * through as it is, and the inner executor's hk_executor_control() checks
 * that it is one of its raw sessions. */
static hk_code w_control(void *self, int op, void *arg, hk_status *st) {
  return hk_executor_control(((wrapper *)self)->inner, op, arg, st);
}
static hk_code w_variable_storage(void *self, void *session, size_t index, hk_tensor *out, hk_status *st) {
  (void)self;
  return hk_raw_session_variable_storage(out, session, index, st);
}
static void w_destroy(void *self) {
  wrapper *w = self;
  hk_env env = w->ps->env;
  hk_env_free(&env, w);
}

static const hk_executor_vtable wrapper_vtable = {
    .version = HK_EXECUTOR_VTABLE_VERSION,
    .name = "parameter-server worker",
    .resolve_tensor = w_resolve_tensor,
    .resolve_op = w_resolve_op,
    .handle_name = w_handle_name,
    .finalize = w_finalize,
    .is_finalized = w_is_finalized,
    .open = w_open,
    .close = w_close,
    .run = w_run,
    .variable_count = w_variable_count,
    .variable_info = w_variable_info,
    .variable_read = w_variable_read,
    .variable_assign = w_variable_assign,
    .role_get = w_role_get,
    .role_add = w_role_add,
    .default_op = w_default_op,
    .describe = w_describe,
    .control = w_control,
    .destroy = w_destroy,
    .variable_storage = w_variable_storage,
};

hk_code hk_mpi_ps_worker_executor_new(hk_executor **out, hk_mpi_ps *ps, hk_executor *inner, hk_status *st) {
  if (out) *out = NULL;
  if (!out || !ps || !inner)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_mpi_ps_worker_executor_new: %s is NULL",
                         !out  ? "out"
                         : !ps ? "ps"
                               : "inner");
  if (ps->chief)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_mpi_ps_worker_executor_new: rank %d is the chief, not a worker",
                         ps->mpi->rank);
  wrapper *w = hk_env_calloc(&ps->env, 1, sizeof *w);
  if (!w) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_mpi_ps_worker_executor_new: out of memory");
  w->ps = ps;
  w->inner = inner;
  w->gs_tensor = HK_NO_HANDLE;
  hk_code rc = hk_executor_new(out, &wrapper_vtable, w, &ps->env, st);
  if (rc != HK_OK) hk_env_free(&ps->env, w);
  return rc;
}
