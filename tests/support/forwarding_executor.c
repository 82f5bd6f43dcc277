/*
 * forwarding_executor — see forwarding_executor.h. Written against the
 * public headers only, as a third party would.
 */
#include "forwarding_executor.h"

#include <string.h>

typedef struct fwd {
  hk_executor *inner;
  forwarding_kind kind;
  int runs;
} fwd;

/* One session of the wrapper: the inner raw session it opened. */
typedef struct fwd_session {
  hk_raw_session *inner;
} fwd_session;

static hk_raw_session *inner_rs(void *session) { return ((fwd_session *)session)->inner; }
static hk_executor *inner(void *self) { return ((fwd *)self)->inner; }

static hk_code f_resolve_tensor(void *self, const char *name, hk_handle *out, hk_status *st) {
  return hk_executor_resolve_tensor(out, inner(self), name, st);
}
static hk_code f_resolve_op(void *self, const char *name, hk_handle *out, hk_status *st) {
  return hk_executor_resolve_op(out, inner(self), name, st);
}
static const char *f_handle_name(void *self, hk_handle h) { return hk_executor_handle_name(inner(self), h); }
static hk_code f_finalize(void *self, hk_status *st) { return hk_executor_finalize(inner(self), st); }
static int f_is_finalized(void *self) { return hk_executor_is_finalized(inner(self)); }

static hk_code f_open(void *self, void **out, hk_status *st) {
  const hk_env *env = hk_executor_env(inner(self));
  fwd_session *s = hk_env_calloc(env, 1, sizeof *s);
  if (!s) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "forwarding executor: out of memory");
  hk_code rc = hk_raw_session_open(&s->inner, inner(self), st);
  if (rc != HK_OK) {
    hk_env_free(env, s);
    return rc;
  }
  *out = s;
  return HK_OK;
}

static hk_code f_close(void *self, void *session, hk_status *st) {
  hk_code rc = hk_raw_session_close(inner_rs(session), st);
  hk_raw_session_free(inner_rs(session));
  hk_env_free(hk_executor_env(inner(self)), session);
  return rc;
}

static hk_code f_run(void *self, void *session, const hk_run_args *args, hk_tensor *results, hk_run_metadata *md,
                     hk_status *st) {
  ((fwd *)self)->runs++;
  return hk_raw_session_run(inner_rs(session), args, results, md, st);
}

static size_t f_variable_count(void *self) { return hk_executor_variable_count(inner(self)); }
static hk_code f_variable_info(void *self, size_t index, hk_variable_info *out, hk_status *st) {
  return hk_executor_variable_info(out, inner(self), index, st);
}
static hk_code f_variable_read(void *self, void *session, size_t index, hk_tensor *out, hk_status *st) {
  (void)self;
  return hk_raw_session_read_variable(out, inner_rs(session), index, st);
}
static hk_code f_variable_assign(void *self, void *session, size_t index, const hk_tensor *value, hk_status *st) {
  (void)self;
  return hk_raw_session_assign_variable(inner_rs(session), index, value, st);
}
static hk_code f_variable_storage(void *self, void *session, size_t index, hk_tensor *out, hk_status *st) {
  (void)self;
  return hk_raw_session_variable_storage(out, inner_rs(session), index, st);
}
static hk_code f_role_get(void *self, const char *role, hk_handle *out, size_t cap, size_t *count, hk_status *st) {
  return hk_executor_role_get(out, cap, count, inner(self), role, st);
}
static hk_code f_role_add(void *self, const char *role, hk_handle h, hk_status *st) {
  return hk_executor_role_add(inner(self), role, h, st);
}
static hk_code f_default_op(void *self, hk_default_op kind, hk_handle *out, hk_status *st) {
  return hk_executor_default_op(out, inner(self), kind, st);
}
static hk_code f_describe(void *self, hk_text_sink sink, void *user, hk_status *st) {
  return hk_executor_describe(inner(self), sink, user, st);
}

static hk_code f_control(void *self, int op, void *arg, hk_status *st) {
  fwd *w = self;
  if (op == HK_CONTROL_SNAPSHOT_ATTACH && w->kind == FORWARDING_RIGHT && arg) {
    hk_control_snapshot a = *(const hk_control_snapshot *)arg;
    a.session = inner_rs(a.session); /* the inner raw session, never our own */
    return hk_executor_control(w->inner, op, &a, st);
  }
  return hk_executor_control(w->inner, op, arg, st);
}

static void f_destroy(void *self) { hk_env_free(hk_executor_env(inner(self)), self); }

/* The two kinds differ only in f_control (w->kind) and in their names. */
#define FWD_VTABLE(label)                                                                                             \
  {                                                                                                                   \
    .version = HK_EXECUTOR_VTABLE_VERSION, .name = label, .resolve_tensor = f_resolve_tensor,                         \
    .resolve_op = f_resolve_op, .handle_name = f_handle_name, .finalize = f_finalize, .is_finalized = f_is_finalized, \
    .open = f_open, .close = f_close, .run = f_run, .variable_count = f_variable_count,                               \
    .variable_info = f_variable_info, .variable_read = f_variable_read, .variable_assign = f_variable_assign,         \
    .role_get = f_role_get, .role_add = f_role_add, .default_op = f_default_op, .describe = f_describe,               \
    .control = f_control, .destroy = f_destroy, .variable_storage = f_variable_storage,                               \
  }

static const hk_executor_vtable right_vtable = FWD_VTABLE("forwarding (right)");
static const hk_executor_vtable wrong_vtable = FWD_VTABLE("forwarding (wrong)");

hk_code forwarding_executor_new(hk_executor **out, hk_executor *in, forwarding_kind kind, hk_status *st) {
  if (out) *out = NULL;
  if (!out || !in)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "forwarding_executor_new: %s is NULL", out ? "inner" : "out");
  const hk_env *env = hk_executor_env(in);
  fwd *w = hk_env_calloc(env, 1, sizeof *w);
  if (!w) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "forwarding_executor_new: out of memory");
  w->inner = in;
  w->kind = kind;
  hk_code rc = hk_executor_new(out, kind == FORWARDING_RIGHT ? &right_vtable : &wrong_vtable, w, env, st);
  if (rc != HK_OK) hk_env_free(env, w);
  return rc;
}

int forwarding_executor_runs(hk_executor *wrapper) { return ((fwd *)hk_executor_self(wrapper))->runs; }
