/*
 * hooked — ExponentialMovingAverage hook (hooked/ema.h).
 *
 * Written against the public headers only (house style 16). The hook keeps
 * one buffer per averaged variable, allocated in begin(): an update reads
 * the variable through the raw session, averages into the buffer and
 * assigns the buffer to the shadow variable, so the step allocates nothing
 * and an asynchronous checkpoint's copy-before-write sees the write (an
 * assignment is the executor's to guard). The buffers also keep the
 * averages after the session closed, for a program that evaluates with
 * them.
 *
 * The export writes through a Saver over a small executor of this file's
 * own that renames: it lists the checkpointed variables of the session's
 * executor but the shadows and the count, and reads an averaged one from
 * the hook's buffer, so the file holds the averages under the variables'
 * names.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "hooked/ema.h"
#include "hooked/checkpoint.h"
#include "hooked/sys/hook.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define HOOK_NAME "ExponentialMovingAverage"
#define NAME_MAX_BYTES 200
#define TENSOR_NAME_MAX 255
#define COUNT_SUFFIX "/num_updates"

/* A status on the per-step path: an initializer would clear its whole
 * message buffer at every step. */
#define STEP_STATUS_DECL(name) \
  hk_status name;              \
  name.code = HK_OK;           \
  name.message[0] = '\0'

typedef struct ema {
  hk_hook *hook;
  hk_env env; /* what the struct was allocated with */
  int has_env;
  /* Options, copied. */
  size_t n;
  char **vars;
  char **shadows;
  char *count_name;
  double decay;
  int num_updates;
  char *export_path;
  /* Per session, set by begin(). */
  hk_executor *ex;
  size_t *var_index, *shadow_index, count_index;
  hk_tensor *avg;     /* the hook's averages: spec of the variable, data in a buffer of its own */
  size_t cap;         /* buffers allocated (avg[i].data for i < cap) */
  hk_raw_session *rs; /* the current session's, between after_create_session and end() */
  int have_avg;       /* avg holds averages (an update, or restored shadows) */
  int64_t updates;
  int64_t count_buf;   /* the count's bytes for an assignment */
  char *export_prefix; /* the last export's */
} ema;

static const hk_env *own_env(const ema *self) { return self->has_env ? &self->env : NULL; }

static const hk_hook_vtable ema_vtable; /* defined with the callbacks below */

/* Ours: a hook made with this file's vtable, not one that only has its name. */
static ema *ema_of(const hk_hook *hook) { return hk_hook_user_if(hook, &ema_vtable); }

static int name_char(char c, int slash) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '-' || (slash && c == '/');
}

static int valid_name(const char *s, size_t max, int slash) {
  size_t n = 0;
  if (!s || !*s) return 0;
  for (; s[n]; n++)
    if (n >= max || !name_char(s[n], slash)) return 0;
  return 1;
}

/* ---- options ------------------------------------------------------------------ */

hk_code hk_ema_options_init(hk_ema_options *opts, uint32_t version) {
  static const hk_ema_options init = HK_EMA_OPTIONS_INIT;
  return hk_struct_init(opts, sizeof *opts, &init, version);
}

static hk_code check_options(const hk_ema_options *o, hk_status *st) {
  static const char fn[] = "hk_ema_hook_new";
  hk_code rc = hk_struct_check_version(o, HK_EMA_OPTIONS_VERSION, "hk_ema_options", "hk_ema_hook_new: opts", st);
  if (rc != HK_OK) return rc;
  rc = hk_env_check(o->env, "hk_ema_options.env", st);
  if (rc != HK_OK) return rc;
  if (!o->variables || o->nvariables == 0)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: variables is empty: name the variables to average", fn);
  const char *name = o->name ? o->name : HK_EMA_DEFAULT_NAME;
  if (!valid_name(name, NAME_MAX_BYTES, 0))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: name '%s' is not 1..%d bytes of [A-Za-z0-9_.-]", fn, name,
                         NAME_MAX_BYTES);
  size_t room = TENSOR_NAME_MAX - 1 - strlen(name);
  for (size_t i = 0; i < o->nvariables; i++) {
    const char *v = o->variables[i];
    if (!v) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: variables[%zu] is NULL", fn, i);
    if (!valid_name(v, room, 1))
      return hk_status_set(st, HK_INVALID_ARGUMENT,
                           "%s: variables[%zu] '%s' is not a variable name of 1..%zu bytes of [A-Za-z0-9_./-] (its "
                           "shadow '<variable>/%s' must fit in %d bytes)",
                           fn, i, v, room, name, TENSOR_NAME_MAX);
    for (size_t j = 0; j < i; j++)
      if (strcmp(o->variables[j], v) == 0)
        return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: variables[%zu] '%s' repeats variables[%zu]", fn, i, v, j);
  }
  if (!(o->decay >= 0.0 && o->decay <= 1.0))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: decay %g is not in [0, 1]", fn, o->decay);
  if (o->export_path && !*o->export_path)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: export_path is empty (NULL: no export)", fn);
  return HK_OK;
}

/* ---- lifetime ----------------------------------------------------------------- */

static void free_buffers(ema *self) {
  const hk_env *env = own_env(self);
  for (size_t i = 0; i < self->cap; i++) hk_env_free(env, self->avg[i].data);
  hk_env_free(env, self->avg);
  hk_env_free(env, self->var_index);
  hk_env_free(env, self->shadow_index);
  self->avg = NULL;
  self->var_index = self->shadow_index = NULL;
  self->cap = 0;
  self->have_avg = 0;
}

static void ema_destroy(void *user) {
  ema *self = user;
  const hk_env *env = own_env(self);
  free_buffers(self);
  for (size_t i = 0; self->vars && i < self->n; i++) hk_env_free(env, self->vars[i]);
  for (size_t i = 0; self->shadows && i < self->n; i++) hk_env_free(env, self->shadows[i]);
  hk_env_free(env, self->vars);
  hk_env_free(env, self->shadows);
  hk_env_free(env, self->count_name);
  hk_env_free(env, self->export_path);
  hk_env_free(env, self->export_prefix);
  hk_env_free(env, self);
}

/* ---- begin: find the variables, their shadows and the count --------------------------- */

static hk_code find(hk_executor *ex, const char *name, const char *what, size_t *index, hk_status *st) {
  hk_status inner = HK_STATUS_INIT;
  hk_code rc = hk_executor_find_variable(ex, name, index, &inner);
  if (rc == HK_OK) return HK_OK;
  return hk_status_set(st, rc,
                       HOOK_NAME
                       ": %s '%s': %s (a host loop registers the shadows and the count with "
                       "hk_loop_add_ema(); a graph creates them with hk_ema_hook_add_graph_variables())",
                       what, name, inner.message);
}

static hk_code prepare_variable(ema *self, hk_executor *ex, size_t i, hk_status *st) {
  hk_variable_info vi, si;
  hk_code rc = find(ex, self->vars[i], "variable", &self->var_index[i], st);
  if (rc == HK_OK) rc = find(ex, self->shadows[i], "shadow", &self->shadow_index[i], st);
  if (rc == HK_OK) rc = hk_executor_variable_info(&vi, ex, self->var_index[i], st);
  if (rc == HK_OK) rc = hk_executor_variable_info(&si, ex, self->shadow_index[i], st);
  if (rc != HK_OK) return rc;
  if (vi.dtype != HK_DTYPE_F32 && vi.dtype != HK_DTYPE_F64)
    return hk_status_set(st, HK_INVALID_ARGUMENT, HOOK_NAME ": variable '%s' is %s; only F32 and F64 are averaged",
                         self->vars[i], hk_dtype_name(vi.dtype));
  if (vi.flags & HK_VAR_LOCAL)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         HOOK_NAME ": variable '%s' is local (not checkpointed); average the model's variables",
                         self->vars[i]);
  int same = si.dtype == vi.dtype && si.rank == vi.rank;
  for (int32_t d = 0; same && d < vi.rank; d++) same = si.dims[d] == vi.dims[d];
  if (!same || (si.flags & HK_VAR_LOCAL))
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         HOOK_NAME ": shadow '%s' must be a checkpointed variable of the dtype and shape of '%s'",
                         self->shadows[i], self->vars[i]);
  hk_tensor *t = &self->avg[i];
  hk_status why = HK_STATUS_INIT;
  /* The spec and byte size first (any non-NULL data will do), then the buffer. */
  rc = hk_tensor_init(t, vi.dtype, vi.rank, vi.dims, self, &why);
  t->data = NULL;
  if (rc != HK_OK) return hk_status_set(st, rc, HOOK_NAME ": variable '%s': %s", self->vars[i], why.message);
  if (t->nbytes && !(t->data = hk_env_calloc(own_env(self), 1, t->nbytes)))
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, HOOK_NAME ": out of memory for the average of '%s'", self->vars[i]);
  self->cap = i + 1;
  return HK_OK;
}

static hk_code ema_begin(void *user, hk_executor *ex, hk_status *st) {
  ema *self = user;
  const hk_env *env = own_env(self);
  hk_variable_info ci;
  free_buffers(self);
  self->ex = ex;
  self->rs = NULL;
  self->updates = 0;
  self->avg = hk_env_calloc(env, self->n, sizeof *self->avg);
  self->var_index = hk_env_calloc(env, self->n, sizeof *self->var_index);
  self->shadow_index = hk_env_calloc(env, self->n, sizeof *self->shadow_index);
  if (!self->avg || !self->var_index || !self->shadow_index)
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, HOOK_NAME ": out of memory");
  for (size_t i = 0; i < self->n; i++) {
    hk_code rc = prepare_variable(self, ex, i, st);
    if (rc != HK_OK) return rc;
  }
  hk_code rc = find(ex, self->count_name, "count", &self->count_index, st);
  if (rc == HK_OK) rc = hk_executor_variable_info(&ci, ex, self->count_index, st);
  if (rc != HK_OK) return rc;
  if (ci.dtype != HK_DTYPE_I64 || ci.rank != 0 || (ci.flags & HK_VAR_LOCAL))
    return hk_status_set(st, HK_INVALID_ARGUMENT, HOOK_NAME ": count '%s' must be a checkpointed I64 scalar",
                         self->count_name);
  return HK_OK;
}

/* ---- the session's state --------------------------------------------------------------- */

static hk_code read_into(hk_raw_session *rs, size_t index, const char *name, hk_tensor *dst, hk_status *st) {
  hk_tensor t;
  hk_status inner = HK_STATUS_INIT;
  hk_code rc = hk_raw_session_read_variable(&t, rs, index, &inner);
  if (rc != HK_OK) return hk_status_set(st, rc, HOOK_NAME ": reading '%s': %s", name, inner.message);
  if (t.nbytes != dst->nbytes || (t.nbytes && !t.data))
    return hk_status_set(st, HK_INTERNAL, HOOK_NAME ": '%s' read back as %zu bytes, not %zu", name, t.nbytes,
                         dst->nbytes);
  if (t.nbytes) memcpy(dst->data, t.data, t.nbytes);
  return HK_OK;
}

static hk_code ema_after_create_session(void *user, hk_raw_session *rs, hk_coordinator *coord, hk_creation_context *ctx,
                                        hk_status *st) {
  ema *self = user;
  hk_tensor count;
  int64_t n = 0;
  (void)coord;
  (void)ctx;
  self->rs = rs;
  hk_code rc = hk_tensor_init(&count, HK_DTYPE_I64, 0, NULL, &n, st);
  if (rc == HK_OK) rc = read_into(rs, self->count_index, self->count_name, &count, st);
  if (rc != HK_OK) return rc;
  if (n < 0)
    return hk_status_set(st, HK_DATA_LOSS, HOOK_NAME ": count '%s' holds %" PRId64 ", not a count of updates",
                         self->count_name, n);
  self->updates = n;
  self->have_avg = 0;
  if (n == 0) return HK_OK; /* fresh: the first update sets the shadows */
  for (size_t i = 0; i < self->n; i++) {
    rc = read_into(rs, self->shadow_index[i], self->shadows[i], &self->avg[i], st);
    if (rc != HK_OK) return rc;
  }
  self->have_avg = 1;
  return HK_OK;
}

/* s -= (1 - d) * (s - v), in the variable's precision (TensorFlow's
 * assign_moving_average). k = 0: s = v. */
static void average_f32(float *s, const float *v, int64_t n, float k) {
  for (int64_t i = 0; i < n; i++) s[i] -= k * (s[i] - v[i]);
}
static void average_f64(double *s, const double *v, int64_t n, double k) {
  for (int64_t i = 0; i < n; i++) s[i] -= k * (s[i] - v[i]);
}

static double decay_of(const ema *self) {
  if (!self->num_updates) return self->decay;
  double n = (double)self->updates;
  double warm = (1.0 + n) / (10.0 + n);
  return warm < self->decay ? warm : self->decay;
}

static hk_code update_one(ema *self, hk_raw_session *rs, size_t i, double decay, hk_status *st) {
  hk_tensor *a = &self->avg[i];
  hk_tensor v;
  STEP_STATUS_DECL(inner);
  hk_code rc = hk_raw_session_read_variable(&v, rs, self->var_index[i], &inner);
  if (rc != HK_OK) return hk_status_set(st, rc, HOOK_NAME ": reading '%s': %s", self->vars[i], inner.message);
  if (v.dtype != a->dtype || v.nbytes != a->nbytes || (v.nbytes && !v.data))
    return hk_status_set(st, HK_INTERNAL, HOOK_NAME ": '%s' read back as %s of %zu bytes", self->vars[i],
                         hk_dtype_name(v.dtype), v.nbytes);
  int64_t n = hk_tensor_num_elements(a);
  if (!self->have_avg) {
    if (a->nbytes) memcpy(a->data, v.data, a->nbytes);
  } else if (a->dtype == HK_DTYPE_F32) {
    average_f32(a->data, v.data, n, (float)(1.0 - decay));
  } else {
    average_f64(a->data, v.data, n, 1.0 - decay);
  }
  rc = hk_raw_session_assign_variable(rs, self->shadow_index[i], a, &inner);
  if (rc != HK_OK) return hk_status_set(st, rc, HOOK_NAME ": assigning '%s': %s", self->shadows[i], inner.message);
  return HK_OK;
}

static hk_code ema_after_run(void *user, hk_run_context *ctx, const hk_run_values *values, hk_status *st) {
  ema *self = user;
  hk_raw_session *rs = hk_run_context_session(ctx);
  (void)values;
  if (!self->avg) return hk_status_set(st, HK_FAILED_PRECONDITION, HOOK_NAME ": after_run without begin()");
  self->rs = rs;
  double decay = decay_of(self);
  for (size_t i = 0; i < self->n; i++) {
    hk_code rc = update_one(self, rs, i, decay, st);
    if (rc != HK_OK) return rc;
  }
  self->have_avg = 1;
  self->updates++;
  self->count_buf = self->updates;
  hk_tensor c;
  memset(&c, 0, sizeof c);
  c.dtype = HK_DTYPE_I64;
  c.data = &self->count_buf;
  c.nbytes = sizeof self->count_buf;
  STEP_STATUS_DECL(inner);
  hk_code rc = hk_raw_session_assign_variable(rs, self->count_index, &c, &inner);
  if (rc != HK_OK) return hk_status_set(st, rc, HOOK_NAME ": assigning '%s': %s", self->count_name, inner.message);
  return HK_OK;
}

static hk_code export_to(ema *self, hk_raw_session *rs, const char *path, const char **prefix, hk_status *st);

static hk_code ema_end(void *user, hk_raw_session *rs, hk_status *st) {
  ema *self = user;
  hk_code rc = HK_OK;
  if (self->export_path && self->have_avg && rs) rc = export_to(self, rs, self->export_path, NULL, st);
  self->rs = NULL;
  return rc;
}

static const hk_hook_vtable ema_vtable = {
    HK_HOOK_VTABLE_VERSION, ema_begin, ema_after_create_session, NULL, ema_after_run, ema_end, ema_destroy,
};

/* ---- construction ------------------------------------------------------------------- */

static char *join(const hk_env *env, const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  char *s = hk_env_alloc(env, na + nb + 1);
  if (!s) return NULL;
  memcpy(s, a, na);
  memcpy(s + na, b, nb + 1);
  return s;
}

hk_code hk_ema_hook_new(hk_hook **out, const hk_ema_options *o, hk_status *st) {
  if (out) *out = NULL;
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_ema_hook_new: out is NULL");
  if (!o) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_ema_hook_new: options is NULL (variables are required)");
  hk_code rc = check_options(o, st);
  if (rc != HK_OK) return rc;
  const hk_env *env = o->env;
  ema *self = hk_env_calloc(env, 1, sizeof *self);
  if (!self) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_ema_hook_new: out of memory");
  if (env) {
    hk_env_copy(&self->env, env);
    self->has_env = 1;
  }
  env = own_env(self);
  self->n = o->nvariables;
  self->decay = o->decay;
  self->num_updates = o->num_updates != 0;
  const char *name = o->name ? o->name : HK_EMA_DEFAULT_NAME;
  char *suffix = join(env, "/", name);
  int oom = !suffix;
  self->vars = hk_env_calloc(env, self->n, sizeof *self->vars);
  self->shadows = hk_env_calloc(env, self->n, sizeof *self->shadows);
  oom |= !self->vars || !self->shadows;
  for (size_t i = 0; !oom && i < self->n; i++) {
    self->vars[i] = hk_env_strdup(env, o->variables[i]);
    self->shadows[i] = join(env, o->variables[i], suffix);
    oom |= !self->vars[i] || !self->shadows[i];
  }
  if (!oom) oom = !(self->count_name = join(env, name, COUNT_SUFFIX));
  if (!oom && o->export_path) oom = !(self->export_path = hk_env_strdup(env, o->export_path));
  hk_env_free(env, suffix);
  if (!oom) {
    rc = hk_hook_new(&self->hook, &ema_vtable, self, HOOK_NAME, o->env, st);
    if (rc == HK_OK) {
      *out = self->hook;
      return HK_OK;
    }
  } else {
    rc = hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_ema_hook_new: out of memory");
  }
  ema_destroy(self);
  return rc;
}

/* ---- the export: a Saver over an executor that renames ------------------------------ */

/* The exported variables: index i of this executor is variable inner[i] of
 * the session's executor, read from the hook's average avg[i] when that is
 * not -1. Handles are i + 1. */
typedef struct export_view {
  ema *self;
  hk_raw_session *rs;
  size_t n;
  size_t *inner;
  long *avg;
} export_view;

static hk_code x_resolve_tensor(void *user, const char *name, hk_handle *out, hk_status *st) {
  export_view *x = user;
  size_t len = strlen(name);
  if (len > 2 && strcmp(name + len - 2, ":0") == 0) len -= 2;
  for (size_t i = 0; i < x->n; i++) {
    hk_variable_info vi;
    if (hk_executor_variable_info(&vi, x->self->ex, x->inner[i], NULL) != HK_OK) continue;
    if (strlen(vi.name) == len && strncmp(vi.name, name, len) == 0) {
      *out = (hk_handle)(i + 1);
      return HK_OK;
    }
  }
  return hk_status_set(st, HK_NOT_FOUND, "the averages' export has no tensor '%s'", name);
}

static hk_code x_resolve_op(void *user, const char *name, hk_handle *out, hk_status *st) {
  (void)user;
  (void)out;
  return hk_status_set(st, HK_NOT_FOUND, "the averages' export has no op '%s'", name);
}

static hk_code x_open(void *user, void **out, hk_status *st) {
  (void)st;
  *out = user;
  return HK_OK;
}

static hk_code x_close(void *user, void *session, hk_status *st) {
  (void)user;
  (void)session;
  (void)st;
  return HK_OK;
}

static size_t x_variable_count(void *user) { return ((export_view *)user)->n; }

static hk_code x_variable_info(void *user, size_t index, hk_variable_info *out, hk_status *st) {
  export_view *x = user;
  hk_code rc = hk_executor_variable_info(out, x->self->ex, x->inner[index], st);
  if (rc == HK_OK) out->tensor = (hk_handle)(index + 1);
  return rc;
}

static hk_code x_variable_read(void *user, void *session, size_t index, hk_tensor *out, hk_status *st) {
  export_view *x = user;
  (void)session;
  if (x->avg[index] >= 0) {
    *out = x->self->avg[x->avg[index]];
    return HK_OK;
  }
  return hk_raw_session_read_variable(out, x->rs, x->inner[index], st);
}

static hk_code x_run(void *user, void *session, const hk_run_args *args, hk_tensor *results, hk_run_metadata *md,
                     hk_status *st) {
  export_view *x = user;
  (void)md;
  if (args->ntargets || args->nfeeds)
    return hk_status_set(st, HK_UNIMPLEMENTED, "the averages' export runs no ops and takes no feeds");
  for (size_t i = 0; i < args->nfetches; i++) {
    size_t k = (size_t)(args->fetches[i] - 1);
    if (args->fetches[i] == HK_NO_HANDLE || k >= x->n)
      return hk_status_set(st, HK_INVALID_ARGUMENT, "the averages' export has no tensor #%zu",
                           (size_t)args->fetches[i]);
    hk_code rc = x_variable_read(user, session, k, &results[i], st);
    if (rc != HK_OK) return rc;
  }
  return HK_OK;
}

/* The global step of the session's executor, when it is exported. */
static hk_code x_role_get(void *user, const char *role, hk_handle *out, size_t cap, size_t *count, hk_status *st) {
  export_view *x = user;
  size_t gs;
  (void)st;
  *count = 0;
  if (strcmp(role, HK_ROLE_GLOBAL_STEP) != 0 || hk_executor_global_step(NULL, &gs, x->self->ex, NULL) != HK_OK)
    return HK_OK;
  for (size_t i = 0; i < x->n; i++)
    if (x->inner[i] == gs) {
      if (cap > 0) out[0] = (hk_handle)(i + 1);
      *count = 1;
    }
  return HK_OK;
}

static const hk_executor_vtable export_vtable = {
    1,
    "ExponentialMovingAverage export",
    x_resolve_tensor,
    x_resolve_op,
    NULL,
    NULL,
    NULL,
    x_open,
    x_close,
    x_run,
    x_variable_count,
    x_variable_info,
    x_variable_read,
    NULL,
    x_role_get,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
};

/* Which variables the export holds: the checkpointed ones but the hook's
 * own. */
static hk_code plan_export(ema *self, export_view *x, hk_status *st) {
  const hk_env *env = own_env(self);
  size_t total = hk_executor_variable_count(self->ex);
  x->inner = hk_env_calloc(env, total ? total : 1, sizeof *x->inner);
  x->avg = hk_env_calloc(env, total ? total : 1, sizeof *x->avg);
  if (!x->inner || !x->avg) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, HOOK_NAME ": out of memory exporting");
  for (size_t k = 0; k < total; k++) {
    hk_variable_info vi;
    hk_code rc = hk_executor_variable_info(&vi, self->ex, k, st);
    if (rc != HK_OK) return rc;
    int own = (vi.flags & HK_VAR_LOCAL) || k == self->count_index;
    long avg = -1;
    for (size_t i = 0; i < self->n && !own; i++) {
      if (k == self->shadow_index[i]) own = 1;
      if (k == self->var_index[i]) avg = (long)i;
    }
    if (own) continue;
    x->inner[x->n] = k;
    x->avg[x->n++] = avg;
  }
  return HK_OK;
}

static hk_code export_to(ema *self, hk_raw_session *rs, const char *path, const char **prefix, hk_status *st) {
  const hk_env *env = own_env(self) ? own_env(self) : hk_hook_env(self->hook);
  export_view x;
  hk_executor *ex = NULL;
  hk_saver *saver = NULL;
  const char *written = NULL;
  memset(&x, 0, sizeof x);
  x.self = self;
  x.rs = rs;
  hk_code rc = plan_export(self, &x, st);
  if (rc == HK_OK) rc = hk_executor_new(&ex, &export_vtable, &x, env, st);
  if (rc == HK_OK) {
    hk_saver_options so = HK_SAVER_OPTIONS_INIT;
    so.env = env;
    so.executor = ex;
    so.max_to_keep = 0;
    rc = hk_saver_new(&saver, &so, st);
  }
  hk_raw_session *xrs = NULL;
  if (rc == HK_OK) rc = hk_raw_session_open(&xrs, ex, st);
  if (rc == HK_OK) rc = hk_saver_save(&written, saver, xrs, path, HK_UNSET_STEPS, HK_SAVE_NO_STATE, st);
  if (rc == HK_OK) {
    char *copy = hk_env_strdup(own_env(self), written);
    if (!copy) {
      rc = hk_status_set(st, HK_RESOURCE_EXHAUSTED, HOOK_NAME ": out of memory");
    } else {
      hk_env_free(own_env(self), self->export_prefix);
      self->export_prefix = copy;
      if (prefix) *prefix = copy;
      hk_hook_log(self->hook, HK_LOG_INFO,
                  HOOK_NAME ": exported the averages of %zu variable(s) after %" PRId64 " update(s) to %s", self->n,
                  self->updates, copy);
    }
  }
  hk_raw_session_free(xrs);
  hk_saver_free(saver);
  hk_executor_free(ex);
  hk_env_free(own_env(self), x.inner);
  hk_env_free(own_env(self), x.avg);
  return rc;
}

hk_code hk_ema_hook_export(const char **prefix, hk_hook *hook, const char *path, hk_status *st) {
  static const char fn[] = "hk_ema_hook_export";
  ema *self = ema_of(hook);
  if (prefix) *prefix = NULL;
  if (!hook || !self)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: hook '%s' is not an ExponentialMovingAverage hook", fn,
                         hk_hook_name(hook));
  if (!path || !*path) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: path is %s", fn, path ? "empty" : "NULL");
  /* A session closed after an error runs no end(): the raw session kept
   * from its callbacks is gone once the hook serves no session. */
  if (!self->rs || !hk_hook_scaffold(hook))
    return hk_status_set(st, HK_FAILED_PRECONDITION, "%s: the hook serves no session (export between its runs)", fn);
  if (!self->have_avg)
    return hk_status_set(st, HK_FAILED_PRECONDITION, "%s: no average yet (no update since the session began)", fn);
  return export_to(self, self->rs, path, prefix, st);
}

/* ---- queries --------------------------------------------------------------------------- */

hk_code hk_ema_hook_info(hk_ema_info *out, const hk_hook *hook, hk_status *st) {
  const ema *self = ema_of(hook);
  if (out) memset(out, 0, sizeof *out);
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_ema_hook_info: out is NULL");
  if (!self)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_ema_hook_info: hook '%s' is not an ExponentialMovingAverage hook",
                         hk_hook_name(hook));
  out->nvariables = self->n;
  out->variables = (const char *const *)self->vars;
  out->shadows = (const char *const *)self->shadows;
  out->count = self->count_name;
  out->decay = self->decay;
  out->num_updates = self->num_updates;
  out->updates = self->updates;
  return HK_OK;
}

hk_code hk_ema_hook_average(hk_tensor *out, const hk_hook *hook, const char *variable, hk_status *st) {
  static const char fn[] = "hk_ema_hook_average";
  const ema *self = ema_of(hook);
  if (out) memset(out, 0, sizeof *out);
  if (!out || !variable) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: %s is NULL", fn, !out ? "out" : "variable");
  if (!self)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: hook '%s' is not an ExponentialMovingAverage hook", fn,
                         hk_hook_name(hook));
  for (size_t i = 0; i < self->n; i++) {
    if (strcmp(self->vars[i], variable) != 0) continue;
    if (!self->have_avg || i >= self->cap)
      return hk_status_set(st, HK_FAILED_PRECONDITION, "%s: no average of '%s' yet (no update nor restored average)",
                           fn, variable);
    *out = self->avg[i];
    return HK_OK;
  }
  return hk_status_set(st, HK_NOT_FOUND, "%s: the hook does not average '%s'", fn, variable);
}

/* ---- the graph's variables ------------------------------------------------------------ */

hk_code hk_ema_hook_add_graph_variables(hk_hook *hook, hk_graph *g, hk_status *st) {
  static const char fn[] = "hk_ema_hook_add_graph_variables";
  ema *self = ema_of(hook);
  if (!self)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: hook '%s' is not an ExponentialMovingAverage hook", fn,
                         hk_hook_name(hook));
  if (!g) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: graph is NULL", fn);
  hk_executor *ex = hk_graph_executor(g);
  for (size_t i = 0; i < self->n; i++) {
    size_t index;
    hk_variable_info vi;
    hk_status inner = HK_STATUS_INIT;
    hk_code rc = hk_executor_find_variable(ex, self->vars[i], &index, &inner);
    if (rc != HK_OK) return hk_status_set(st, rc, "%s: variable '%s': %s", fn, self->vars[i], inner.message);
    rc = hk_executor_variable_info(&vi, ex, index, st);
    if (rc != HK_OK) return rc;
    if (vi.dtype != HK_DTYPE_F32 && vi.dtype != HK_DTYPE_F64)
      return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: variable '%s' is %s; only F32 and F64 are averaged", fn,
                           self->vars[i], hk_dtype_name(vi.dtype));
    hk_variable_def def = HK_VARIABLE_DEF_INIT;
    hk_handle h;
    def.name = self->shadows[i];
    def.dtype = vi.dtype;
    def.rank = vi.rank;
    def.dims = vi.dims;
    def.init.kind = HK_INIT_ZEROS;
    def.flags = 0; /* global, not trainable */
    rc = hk_graph_variable(g, &h, &def, st);
    if (rc != HK_OK) return rc;
  }
  hk_variable_def def = HK_VARIABLE_DEF_INIT;
  hk_handle h;
  def.name = self->count_name;
  def.dtype = HK_DTYPE_I64;
  def.rank = 0;
  def.init.kind = HK_INIT_ZEROS;
  def.flags = 0;
  return hk_graph_variable(g, &h, &def, st);
}
