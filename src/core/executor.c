/*
 * The executor wrapper and raw sessions: argument checks, version checks and
 * the global-step lookup shared by every executor implementation.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "core/core_internal.h"
#include "util/common.h"

#include <stdio.h>
#include <string.h>

struct hk_executor {
  const hk_executor_vtable *vt;
  void *self;
  hk_env env;
  char name_buf[32];        /* "#<handle>" fallback of hk_executor_handle_name */
  hk_raw_session *sessions; /* every raw session opened on it and not freed yet */
};

struct hk_raw_session {
  hk_executor *ex;
  void *session;
  int open;
  hk_raw_session *prev, *next; /* in ex->sessions */
};

static const char *vt_name(const hk_executor_vtable *vt) { return vt && vt->name ? vt->name : "executor"; }

hk_code hk_run_options_init(hk_run_options *opts, uint32_t version) {
  return HK__STRUCT_INIT(opts, version, hk_run_options, HK_RUN_OPTIONS_INIT);
}

hk_code hk_executor_new(hk_executor **out, const hk_executor_vtable *vt, void *self, const hk_env *env, hk_status *st) {
  if (out) *out = NULL;
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_executor_new: out is NULL");
  if (!vt) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_executor_new: vtable is NULL");
  if (vt->version == 0 || vt->version > HK_EXECUTOR_VTABLE_VERSION)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "hk_executor_new: executor vtable '%s' has version %u; this library supports 1..%u",
                         vt_name(vt), (unsigned)vt->version, (unsigned)HK_EXECUTOR_VTABLE_VERSION);
  const char *missing = !vt->resolve_tensor ? "resolve_tensor"
                        : !vt->resolve_op   ? "resolve_op"
                        : !vt->open         ? "open"
                        : !vt->run          ? "run"
                                            : NULL;
  if (missing)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_executor_new: executor vtable '%s' lacks required slot %s",
                         vt_name(vt), missing);
  hk_code rc = hk_env_check(env, "hk_executor_new: env", st);
  if (rc != HK_OK) return rc;
  hk_executor *ex = hk_env_calloc(env, 1, sizeof *ex);
  if (!ex) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_executor_new: out of memory");
  ex->vt = vt;
  ex->self = self;
  hk_env_copy(&ex->env, env);
  *out = ex;
  return HK_OK;
}

void hk_executor_free(hk_executor *ex) {
  if (!ex) return;
  hk_env env = ex->env;
  if (ex->vt->destroy) ex->vt->destroy(ex->self);
  hk_env_free(&env, ex);
}

const hk_env *hk_executor_env(const hk_executor *ex) { return ex ? &ex->env : hk__env_or_default(NULL); }
void *hk_executor_self(const hk_executor *ex) { return ex ? ex->self : NULL; }

#define CHECK_EX(fn)                                                                 \
  do {                                                                               \
    if (!ex) return hk_status_set(st, HK_INVALID_ARGUMENT, fn ": executor is NULL"); \
  } while (0)

hk_code hk_executor_resolve_tensor(hk_handle *out, hk_executor *ex, const char *name, hk_status *st) {
  CHECK_EX("hk_executor_resolve_tensor");
  if (!name) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_executor_resolve_tensor: name is NULL");
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_executor_resolve_tensor: out is NULL");
  *out = HK_NO_HANDLE;
  return ex->vt->resolve_tensor(ex->self, name, out, st);
}

hk_code hk_executor_resolve_op(hk_handle *out, hk_executor *ex, const char *name, hk_status *st) {
  CHECK_EX("hk_executor_resolve_op");
  if (!name) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_executor_resolve_op: name is NULL");
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_executor_resolve_op: out is NULL");
  *out = HK_NO_HANDLE;
  return ex->vt->resolve_op(ex->self, name, out, st);
}

const char *hk_executor_handle_name(hk_executor *ex, hk_handle h) {
  if (!ex) return "(null executor)";
  const char *n = ex->vt->handle_name ? ex->vt->handle_name(ex->self, h) : NULL;
  if (n) return n;
  snprintf(ex->name_buf, sizeof ex->name_buf, "#%llu", (unsigned long long)h);
  return ex->name_buf;
}

hk_code hk_executor_finalize(hk_executor *ex, hk_status *st) {
  CHECK_EX("hk_executor_finalize");
  return ex->vt->finalize ? ex->vt->finalize(ex->self, st) : HK_OK;
}

int hk_executor_is_finalized(hk_executor *ex) {
  return ex && ex->vt->is_finalized ? ex->vt->is_finalized(ex->self) : 0;
}

size_t hk_executor_variable_count(hk_executor *ex) {
  return ex && ex->vt->variable_count ? ex->vt->variable_count(ex->self) : 0;
}

hk_code hk_executor_variable_info(hk_variable_info *out, hk_executor *ex, size_t index, hk_status *st) {
  CHECK_EX("hk_executor_variable_info");
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_executor_variable_info: out is NULL");
  memset(out, 0, sizeof *out);
  size_t n = hk_executor_variable_count(ex);
  if (index >= n)
    return hk_status_set(st, HK_OUT_OF_RANGE, "hk_executor_variable_info: index %zu >= variable count %zu", index, n);
  if (!ex->vt->variable_info)
    return hk_status_set(st, HK_UNIMPLEMENTED, "executor '%s' does not describe its variables", vt_name(ex->vt));
  return ex->vt->variable_info(ex->self, index, out, st);
}

hk_code hk_executor_find_variable(hk_executor *ex, const char *name, size_t *index, hk_status *st) {
  CHECK_EX("hk_executor_find_variable");
  if (!name) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_executor_find_variable: name is NULL");
  if (!index) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_executor_find_variable: index is NULL");
  size_t n = hk_executor_variable_count(ex);
  for (size_t i = 0; i < n; i++) {
    hk_variable_info info;
    hk_code rc = hk_executor_variable_info(&info, ex, i, st);
    if (rc != HK_OK) return rc;
    if (info.name && strcmp(info.name, name) == 0) {
      *index = i;
      return HK_OK;
    }
  }
  return hk_status_set(st, HK_NOT_FOUND, "variable '%s' not found", name);
}

/* Index of the variable whose value tensor is `h`, or n when none. */
static size_t variable_by_handle(hk_executor *ex, hk_handle h, hk_variable_info *info) {
  size_t n = hk_executor_variable_count(ex);
  for (size_t i = 0; i < n; i++) {
    if (hk_executor_variable_info(info, ex, i, NULL) == HK_OK && info->tensor == h) return i;
  }
  return n;
}

hk_code hk_executor_global_step(hk_variable_info *out, size_t *index, hk_executor *ex, hk_status *st) {
  CHECK_EX("hk_executor_global_step");
  hk_variable_info info;
  size_t n = hk_executor_variable_count(ex);
  size_t found = n;
  if (ex->vt->role_get) {
    hk_handle h[2];
    size_t count = 0;
    hk_status tmp = HK_STATUS_INIT;
    if (ex->vt->role_get(ex->self, HK_ROLE_GLOBAL_STEP, h, 2, &count, &tmp) == HK_OK && count > 0) {
      if (count > 1) {
        hk_env_log(&ex->env, HK_LOG_WARNING, "Multiple tensors in global_step collection.");
        return hk_status_set(st, HK_NOT_FOUND, "Multiple tensors in global_step collection.");
      }
      found = variable_by_handle(ex, h[0], &info);
    }
  }
  if (found == n) {
    for (size_t i = 0; i < n; i++) {
      if (hk_executor_variable_info(&info, ex, i, NULL) == HK_OK && info.name &&
          strcmp(info.name, "global_step") == 0) {
        found = i;
        break;
      }
    }
  }
  if (found == n) return hk_status_set(st, HK_NOT_FOUND, "global step not found");
  if (!hk_dtype_is_integer(info.dtype))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "Existing \"global_step\" does not have integer type: %s",
                         hk_dtype_name(info.dtype));
  if (info.rank != 0) {
    hk_tensor shape;
    memset(&shape, 0, sizeof shape);
    shape.rank = info.rank;
    memcpy(shape.dims, info.dims, sizeof shape.dims);
    char buf[128];
    return hk_status_set(st, HK_INVALID_ARGUMENT, "Existing \"global_step\" is not scalar: %s",
                         hk_tensor_shape_str(&shape, buf, sizeof buf));
  }
  if (out) *out = info;
  if (index) *index = found;
  return HK_OK;
}

hk_code hk_executor_role_get(hk_handle *out, size_t cap, size_t *count, hk_executor *ex, const char *role,
                             hk_status *st) {
  CHECK_EX("hk_executor_role_get");
  if (!role) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_executor_role_get: role is NULL");
  if (!count) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_executor_role_get: count is NULL");
  if (!out && cap) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_executor_role_get: out is NULL with cap %zu", cap);
  *count = 0;
  if (!ex->vt->role_get) return HK_OK; /* no registry: every role is empty */
  return ex->vt->role_get(ex->self, role, out, cap, count, st);
}

hk_code hk_executor_role_add(hk_executor *ex, const char *role, hk_handle h, hk_status *st) {
  CHECK_EX("hk_executor_role_add");
  if (!role) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_executor_role_add: role is NULL");
  if (h == HK_NO_HANDLE) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_executor_role_add: handle is unset");
  if (!ex->vt->role_add)
    return hk_status_set(st, HK_UNIMPLEMENTED, "executor '%s' has no role registry", vt_name(ex->vt));
  return ex->vt->role_add(ex->self, role, h, st);
}

hk_code hk_executor_default_op(hk_handle *out, hk_executor *ex, hk_default_op kind, hk_status *st) {
  CHECK_EX("hk_executor_default_op");
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_executor_default_op: out is NULL");
  *out = HK_NO_HANDLE;
  if (kind < HK_DEFAULT_INIT_OP || kind > HK_DEFAULT_LOCAL_INIT_OP)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_executor_default_op: kind %d is not a hk_default_op", (int)kind);
  if (!ex->vt->default_op)
    return hk_status_set(st, HK_UNIMPLEMENTED, "executor '%s' cannot build default ops", vt_name(ex->vt));
  return ex->vt->default_op(ex->self, kind, out, st);
}

hk_code hk_executor_describe(hk_executor *ex, hk_text_sink sink, void *user, hk_status *st) {
  CHECK_EX("hk_executor_describe");
  if (!sink) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_executor_describe: sink is NULL");
  if (!ex->vt->describe)
    return hk_status_set(st, HK_UNIMPLEMENTED, "executor '%s' cannot describe its graph", vt_name(ex->vt));
  return ex->vt->describe(ex->self, sink, user, st);
}

/* A raw session of ex, found by address among the ones it opened (a
 * pointer that is not one is never dereferenced). */
static hk_raw_session *own_raw_session(const hk_executor *ex, const void *p) {
  for (hk_raw_session *rs = ex->sessions; rs; rs = rs->next)
    if ((const void *)rs == p) return rs;
  return NULL;
}

/* HK_CONTROL_SNAPSHOT_ATTACH names a raw session of ex: checked here,
 * for every executor, and the slot gets a copy naming that raw session's own
 * session, as the slot's open produced it. */
static hk_code control_attach(hk_executor *ex, const hk_control_snapshot *a, hk_status *st) {
  const char *what = "HK_CONTROL_SNAPSHOT_ATTACH";
  if (!a) return hk_status_set(st, HK_INVALID_ARGUMENT, "executor '%s': %s: arg is NULL", vt_name(ex->vt), what);
  if (a->version == 0 || a->version > HK_CONTROL_SNAPSHOT_VERSION)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "executor '%s': %s: arg->version %u is not supported",
                         vt_name(ex->vt), what, (unsigned)a->version);
  hk_raw_session *rs = own_raw_session(ex, a->session);
  if (!rs)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "executor '%s': %s: arg->session is not a raw session of this executor (a wrapper passes "
                         "the inner executor the raw session it opened on it, never its own session)",
                         vt_name(ex->vt), what);
  if (!rs->open)
    return hk_status_set(st, HK_FAILED_PRECONDITION, "executor '%s': %s: the raw session is closed", vt_name(ex->vt),
                         what);
  hk_control_snapshot own = *a;
  own.session = rs->session;
  return ex->vt->control(ex->self, HK_CONTROL_SNAPSHOT_ATTACH, &own, st);
}

hk_code hk_executor_control(hk_executor *ex, int op, void *arg, hk_status *st) {
  CHECK_EX("hk_executor_control");
  if (!ex->vt->control)
    return hk_status_set(st, HK_UNIMPLEMENTED, "executor '%s' does not implement control op %d", vt_name(ex->vt), op);
  if (op == HK_CONTROL_SNAPSHOT_ATTACH) return control_attach(ex, arg, st);
  return ex->vt->control(ex->self, op, arg, st);
}

/* ---- raw sessions -------------------------------------------------------- */

hk_code hk_raw_session_open(hk_raw_session **out, hk_executor *ex, hk_status *st) {
  if (out) *out = NULL;
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_raw_session_open: out is NULL");
  CHECK_EX("hk_raw_session_open");
  hk_raw_session *rs = hk_env_calloc(&ex->env, 1, sizeof *rs);
  if (!rs) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_raw_session_open: out of memory");
  rs->ex = ex;
  hk_code rc = ex->vt->open(ex->self, &rs->session, st);
  if (rc != HK_OK) {
    hk_env_free(&ex->env, rs);
    return rc;
  }
  rs->open = 1;
  rs->next = ex->sessions;
  if (ex->sessions) ex->sessions->prev = rs;
  ex->sessions = rs;
  *out = rs;
  return HK_OK;
}

hk_code hk_raw_session_close(hk_raw_session *rs, hk_status *st) {
  if (!rs) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_raw_session_close: session is NULL");
  if (!rs->open) return HK_OK;
  rs->open = 0;
  if (!rs->ex->vt->close) return HK_OK;
  return rs->ex->vt->close(rs->ex->self, rs->session, st);
}

void hk_raw_session_free(hk_raw_session *rs) {
  if (!rs) return;
  if (rs->open) {
    hk_status tmp = HK_STATUS_INIT;
    if (hk_raw_session_close(rs, &tmp) != HK_OK)
      hk_env_log(&rs->ex->env, HK_LOG_ERROR, "error closing raw session: %s", tmp.message);
  }
  if (rs->prev)
    rs->prev->next = rs->next;
  else
    rs->ex->sessions = rs->next;
  if (rs->next) rs->next->prev = rs->prev;
  hk_env_free(&rs->ex->env, rs);
}

int hk_raw_session_is_open(const hk_raw_session *rs) { return rs ? rs->open : 0; }
hk_executor *hk_raw_session_executor(const hk_raw_session *rs) { return rs ? rs->ex : NULL; }

hk_code hk__run_args_check(const hk_run_args *a, const char *what, hk_status *st) {
  if (!a) return HK_OK;
  if (!a->feeds && a->nfeeds)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: feeds is NULL with nfeeds %zu", what, a->nfeeds);
  if (!a->fetches && a->nfetches)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: fetches is NULL with nfetches %zu", what, a->nfetches);
  if (!a->targets && a->ntargets)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: targets is NULL with ntargets %zu", what, a->ntargets);
  const hk_run_options *o = a->options;
  if (o) {
    HK__CHECK_VERSION(o, HK_RUN_OPTIONS_VERSION, hk_run_options, "args->options", st);
    if (o->trace_level < 0 || o->trace_level > 3)
      return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: trace_level %d outside [0, 3]", what, (int)o->trace_level);
    if (o->timeout_ms < 0)
      return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: timeout_ms %lld is negative", what, (long long)o->timeout_ms);
  }
  return HK_OK;
}

static const hk_run_args empty_args = {NULL, 0, NULL, 0, NULL, 0, NULL};

hk_code hk_raw_session_run(hk_raw_session *rs, const hk_run_args *args, hk_tensor *results, hk_run_metadata *md,
                           hk_status *st) {
  if (!rs) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_raw_session_run: session is NULL");
  if (!args) args = &empty_args;
  hk_code rc = hk__run_args_check(args, "hk_raw_session_run", st);
  if (rc != HK_OK) return rc;
  if (args->nfetches && !results)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_raw_session_run: results is NULL with %zu fetches",
                         args->nfetches);
  HK__CHECK_VERSION(md, HK_RUN_METADATA_VERSION, hk_run_metadata, "hk_raw_session_run: metadata", st);
  if (!rs->open) return hk_status_set(st, HK_FAILED_PRECONDITION, "hk_raw_session_run: the raw session is closed");
  return rs->ex->vt->run(rs->ex->self, rs->session, args, results, md, st);
}

hk_code hk_raw_session_read_variable(hk_tensor *out, hk_raw_session *rs, size_t index, hk_status *st) {
  if (!rs) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_raw_session_read_variable: session is NULL");
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_raw_session_read_variable: out is NULL");
  if (!rs->open)
    return hk_status_set(st, HK_FAILED_PRECONDITION, "hk_raw_session_read_variable: the raw session is closed");
  size_t n = hk_executor_variable_count(rs->ex);
  if (index >= n)
    return hk_status_set(st, HK_OUT_OF_RANGE, "hk_raw_session_read_variable: index %zu >= variable count %zu", index,
                         n);
  if (!rs->ex->vt->variable_read)
    return hk_status_set(st, HK_UNIMPLEMENTED, "executor '%s' cannot read variables", vt_name(rs->ex->vt));
  return rs->ex->vt->variable_read(rs->ex->self, rs->session, index, out, st);
}

hk_code hk_raw_session_assign_variable(hk_raw_session *rs, size_t index, const hk_tensor *value, hk_status *st) {
  if (!rs) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_raw_session_assign_variable: session is NULL");
  if (!value) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_raw_session_assign_variable: value is NULL");
  if (!rs->open)
    return hk_status_set(st, HK_FAILED_PRECONDITION, "hk_raw_session_assign_variable: the raw session is closed");
  size_t n = hk_executor_variable_count(rs->ex);
  if (index >= n)
    return hk_status_set(st, HK_OUT_OF_RANGE, "hk_raw_session_assign_variable: index %zu >= variable count %zu", index,
                         n);
  if (!rs->ex->vt->variable_assign)
    return hk_status_set(st, HK_UNIMPLEMENTED, "executor '%s' cannot assign variables", vt_name(rs->ex->vt));
  return rs->ex->vt->variable_assign(rs->ex->self, rs->session, index, value, st);
}

hk_code hk_raw_session_variable_storage(hk_tensor *out, hk_raw_session *rs, size_t index, hk_status *st) {
  hk_variable_info info;
  hk_tensor want;
  hk_code rc;
  if (out) memset(out, 0, sizeof *out);
  if (!rs) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_raw_session_variable_storage: session is NULL");
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_raw_session_variable_storage: out is NULL");
  if (!rs->open)
    return hk_status_set(st, HK_FAILED_PRECONDITION, "hk_raw_session_variable_storage: the raw session is closed");
  size_t n = hk_executor_variable_count(rs->ex);
  if (index >= n)
    return hk_status_set(st, HK_OUT_OF_RANGE, "hk_raw_session_variable_storage: index %zu >= variable count %zu", index,
                         n);
  /* A version-1 vtable ends before this slot; it is never read. */
  if (rs->ex->vt->version < 2 || !rs->ex->vt->variable_storage)
    return hk_status_set(st, HK_UNIMPLEMENTED, "executor '%s' does not hand out variable storage", vt_name(rs->ex->vt));
  rc = hk_executor_variable_info(&info, rs->ex, index, st);
  if (rc != HK_OK) return rc;
  rc = rs->ex->vt->variable_storage(rs->ex->self, rs->session, index, out, st);
  if (rc != HK_OK) {
    memset(out, 0, sizeof *out);
    return rc;
  }
  memset(&want, 0, sizeof want);
  want.dtype = info.dtype;
  want.rank = info.rank;
  memcpy(want.dims, info.dims, sizeof want.dims);
  {
    size_t bytes = hk_dtype_size(info.dtype);
    int ok = info.rank >= 0 && info.rank <= HK_MAX_RANK;
    for (int32_t d = 0; ok && d < info.rank; d++) {
      size_t dim = (size_t)info.dims[d];
      if (info.dims[d] < 0 || (dim != 0 && bytes > SIZE_MAX / dim))
        ok = 0;
      else
        bytes *= dim;
    }
    if (!ok || !hk_tensor_same_spec(out, &want) || out->nbytes != bytes || (out->nbytes > 0 && !out->data)) {
      memset(out, 0, sizeof *out);
      return hk_status_set(st, HK_INTERNAL,
                           "executor '%s' handed out storage for variable %s that does not match its description",
                           vt_name(rs->ex->vt), info.name ? info.name : "?");
    }
  }
  return HK_OK;
}

hk_code hk_raw_session_global_step(int64_t *out, hk_raw_session *rs, hk_status *st) {
  if (!rs) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_raw_session_global_step: session is NULL");
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_raw_session_global_step: out is NULL");
  hk_variable_info info;
  hk_code rc = hk_executor_global_step(&info, NULL, rs->ex, st);
  if (rc != HK_OK) return rc;
  hk_run_args args = {NULL, 0, &info.tensor, 1, NULL, 0, NULL};
  hk_tensor result;
  rc = hk_raw_session_run(rs, &args, &result, NULL, st);
  if (rc != HK_OK) return rc;
  return hk_tensor_to_i64(out, &result, "global_step", st);
}
