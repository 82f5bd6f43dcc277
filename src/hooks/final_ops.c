/*
 * hooked — FinalOpsHook (contract group N).
 *
 * Written against the public headers only. The names, the
 * feeds (data included) and the result slots are allocated at
 * construction; end() allocates the copies of the values it keeps.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "hooked/hooks.h"
#include "util/common.h"

#include <string.h>

#define HOOK_NAME "FinalOpsHook"
/* The first member of the state, so hk_final_ops_hook_values() can tell
 * this hook from another one that took its name ("FINALOPS"). */

typedef struct final_ops {
  hk_hook *hook; /* the wrapper, for its env and log */
  hk_env env;    /* what the struct was allocated with */
  int has_env;
  size_t nops;
  char **names;       /* nops */
  int *is_target;     /* nops; set by begin() */
  hk_handle *fetches; /* the tensors among the names, in order */
  size_t nfetches;
  hk_handle *targets; /* the ops among the names, in order */
  size_t ntargets;
  hk_tensor *raw; /* nops slots for end()'s run results */
  size_t nfeeds;
  char **feed_names; /* nfeeds */
  void **feed_data;  /* nfeeds copies of the values' data */
  hk_feed *feeds;    /* nfeeds; tensors resolved by begin() */
  /* What the last end() computed: owned, freed by begin(). */
  hk_tensor *values; /* nops */
  void **blocks;     /* nops, the copies' data */
  int have_values;
} final_ops;

static const hk_env *own_env(const final_ops *self) { return self->has_env ? &self->env : NULL; }

static void drop_values(final_ops *self) {
  for (size_t i = 0; i < self->nops; i++) {
    hk_env_free(own_env(self), self->blocks[i]);
    self->blocks[i] = NULL;
    memset(&self->values[i], 0, sizeof self->values[i]);
  }
  self->have_values = 0;
}

static hk_code fo_begin(void *user, hk_executor *graph, hk_status *status) {
  final_ops *self = user;
  hk_status inner = HK_STATUS_INIT;
  hk_code rc;

  drop_values(self);
  self->nfetches = 0;
  self->ntargets = 0;
  for (size_t i = 0; i < self->nops; i++) {
    const char *name = self->names[i];
    hk_handle h = HK_NO_HANDLE;
    rc = hk_executor_resolve_tensor(&h, graph, name, &inner);
    if (rc == HK_NOT_FOUND && strchr(name, ':') == NULL) {
      hk_status op_st = HK_STATUS_INIT;
      /* A bare name without an output 0 is an op run for its effect. */
      if (hk_executor_resolve_op(&h, graph, name, &op_st) == HK_OK) {
        self->is_target[i] = 1;
        self->targets[self->ntargets++] = h;
        continue;
      }
      return hk_status_set(status, HK_NOT_FOUND, HOOK_NAME ": final op '%s' is neither a tensor nor an op: %s", name,
                           inner.message);
    }
    if (rc != HK_OK) return hk_status_set(status, rc, HOOK_NAME ": final op '%s': %s", name, inner.message);
    self->is_target[i] = 0;
    self->fetches[self->nfetches++] = h;
  }
  for (size_t i = 0; i < self->nfeeds; i++) {
    rc = hk_executor_resolve_tensor(&self->feeds[i].tensor, graph, self->feed_names[i], &inner);
    if (rc != HK_OK)
      return hk_status_set(status, rc, HOOK_NAME ": final_feed '%s': %s", self->feed_names[i], inner.message);
  }
  return HK_OK;
}

/* Copy a result the raw session owns into memory the hook owns. */
static hk_code copy_value(final_ops *self, size_t i, const hk_tensor *src, hk_status *status) {
  hk_tensor *dst = &self->values[i];
  *dst = *src;
  dst->data = NULL;
  if (src->dtype == HK_DTYPE_STRING) {
    int64_t n = hk_tensor_num_elements(src);
    const char *const *strs = src->data;
    size_t total, at;
    char **ptrs;
    if (n <= 0 || strs == NULL) {
      dst->nbytes = 0;
      return HK_OK;
    }
    total = (size_t)n * sizeof(char *);
    for (int64_t k = 0; k < n; k++) total += strlen(strs[k] != NULL ? strs[k] : "") + 1;
    self->blocks[i] = hk_env_alloc(own_env(self), total);
    if (self->blocks[i] == NULL) goto oom;
    ptrs = self->blocks[i];
    at = (size_t)n * sizeof(char *);
    for (int64_t k = 0; k < n; k++) {
      const char *s = strs[k] != NULL ? strs[k] : "";
      size_t len = strlen(s) + 1;
      ptrs[k] = (char *)self->blocks[i] + at;
      memcpy(ptrs[k], s, len);
      at += len;
    }
    dst->data = ptrs;
    dst->nbytes = (size_t)n * sizeof(char *);
    return HK_OK;
  }
  if (src->nbytes == 0 || src->data == NULL) {
    dst->nbytes = 0;
    return HK_OK;
  }
  self->blocks[i] = hk_env_alloc(own_env(self), src->nbytes);
  if (self->blocks[i] == NULL) goto oom;
  memcpy(self->blocks[i], src->data, src->nbytes);
  dst->data = self->blocks[i];
  return HK_OK;
oom:
  return hk_status_set(status, HK_RESOURCE_EXHAUSTED, HOOK_NAME ": out of memory keeping the value of '%s'",
                       self->names[i]);
}

static hk_code fo_end(void *user, hk_raw_session *session, hk_status *status) {
  final_ops *self = user;
  hk_run_args args;
  hk_code rc;
  size_t k = 0;

  drop_values(self);
  memset(&args, 0, sizeof args);
  args.feeds = self->feeds;
  args.nfeeds = self->nfeeds;
  args.fetches = self->fetches;
  args.nfetches = self->nfetches;
  args.targets = self->targets;
  args.ntargets = self->ntargets;
  rc = hk_raw_session_run(session, &args, self->raw, NULL, status);
  if (rc == HK_OUT_OF_RANGE) {
    hk_hook_log(self->hook, HK_LOG_WARNING,
                "An OutOfRangeError or StopIteration exception is raised by the code in FinalOpsHook. This typically "
                "means the ops run by the FinalOpsHook depend on an input source, which should not happen. For "
                "example, a metric has a value op and an update op: the update op runs once per batch of the input, "
                "and once the input is exhausted the value op, run by FinalOpsHook, reads the metric's result. The "
                "value op must only read variables; one that reads another batch from the exhausted input fails "
                "with OUT_OF_RANGE. Please fix that. (%s)",
                status != NULL ? status->message : hk_code_name(rc));
    return rc;
  }
  if (rc != HK_OK) return rc;
  for (size_t i = 0; i < self->nops; i++) {
    if (self->is_target[i]) continue; /* TF's None: a zeroed tensor, dtype HK_DTYPE_INVALID */
    rc = copy_value(self, i, &self->raw[k++], status);
    if (rc != HK_OK) {
      drop_values(self);
      return rc;
    }
  }
  self->have_values = 1;
  return HK_OK;
}

static void fo_free(final_ops *self) {
  hk_env copy;
  const hk_env *env;
  if (self == NULL) return;
  if (self->has_env) copy = self->env;
  env = self->has_env ? &copy : NULL;
  if (self->blocks != NULL && self->values != NULL) drop_values(self);
  for (size_t i = 0; self->names != NULL && i < self->nops; i++) hk_env_free(env, self->names[i]);
  for (size_t i = 0; i < self->nfeeds; i++) {
    if (self->feed_names != NULL) hk_env_free(env, self->feed_names[i]);
    if (self->feed_data != NULL) hk_env_free(env, self->feed_data[i]);
  }
  hk_env_free(env, self->names);
  hk_env_free(env, self->is_target);
  hk_env_free(env, self->fetches);
  hk_env_free(env, self->targets);
  hk_env_free(env, self->raw);
  hk_env_free(env, self->feed_names);
  hk_env_free(env, self->feed_data);
  hk_env_free(env, self->feeds);
  hk_env_free(env, self->values);
  hk_env_free(env, self->blocks);
  hk_env_free(env, self);
}

static void fo_destroy(void *user) { fo_free(user); }

static const hk_hook_vtable final_ops_vtable = {
    HK_HOOK_VTABLE_VERSION, fo_begin, NULL, NULL, NULL, fo_end, fo_destroy,
};

hk_code hk_final_ops_options_init(hk_final_ops_options *opts, uint32_t version) {
  return HK__STRUCT_INIT(opts, version, hk_final_ops_options, HK_FINAL_OPS_OPTIONS_INIT);
}

static hk_code validate(const hk_final_ops_options *opts, hk_status *status) {
  hk_code rc;
  HK__CHECK_VERSION(opts, HK_FINAL_OPS_OPTIONS_VERSION, hk_final_ops_options, "opts", status);
  rc = hk_env_check(opts->env, "opts->env", status);
  if (rc != HK_OK) return rc;
  if (opts->final_ops == NULL && opts->nfinal_ops > 0)
    return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": final_ops is NULL with nfinal_ops %zu",
                         opts->nfinal_ops);
  if (opts->nfinal_ops == 0)
    return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": final_ops must name at least one tensor or op");
  for (size_t i = 0; i < opts->nfinal_ops; i++)
    if (opts->final_ops[i] == NULL || opts->final_ops[i][0] == '\0')
      return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": final_ops[%zu] is %s", i,
                           opts->final_ops[i] == NULL ? "NULL" : "empty");
  if (opts->final_feed == NULL && opts->nfinal_feed > 0)
    return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": final_feed is NULL with nfinal_feed %zu",
                         opts->nfinal_feed);
  for (size_t i = 0; i < opts->nfinal_feed; i++) {
    const hk_final_feed *f = &opts->final_feed[i];
    hk_status inner = HK_STATUS_INIT;
    hk_tensor check;
    if (f->name == NULL || f->name[0] == '\0')
      return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": final_feed[%zu].name is %s", i,
                           f->name == NULL ? "NULL" : "empty");
    if (f->value.dtype == HK_DTYPE_STRING)
      return hk_status_set(status, HK_INVALID_ARGUMENT,
                           HOOK_NAME
                           ": final_feed[%zu] ('%s'): a STRING value cannot be fed; feed a numeric or "
                           "bool tensor",
                           i, f->name);
    if (hk_tensor_init(&check, f->value.dtype, f->value.rank, f->value.dims, f->value.data, &inner) != HK_OK)
      return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": final_feed[%zu] ('%s').value: %s", i, f->name,
                           inner.message);
    if (check.nbytes != f->value.nbytes)
      return hk_status_set(status, HK_INVALID_ARGUMENT,
                           HOOK_NAME ": final_feed[%zu] ('%s').value: nbytes is %zu, its dtype and shape need %zu", i,
                           f->name, f->value.nbytes, check.nbytes);
  }
  return HK_OK;
}

hk_code hk_final_ops_hook_new(hk_hook **out, const hk_final_ops_options *opts, hk_status *status) {
  final_ops *self;
  const hk_env *env;
  size_t n, nf;
  hk_code rc;

  if (out == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "out: must not be NULL");
  *out = NULL;
  if (opts == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "opts is NULL: " HOOK_NAME " needs final_ops");
  rc = validate(opts, status);
  if (rc != HK_OK) return rc;

  env = opts->env;
  n = opts->nfinal_ops;
  nf = opts->nfinal_feed;
  self = hk_env_calloc(env, 1, sizeof(*self));
  if (self == NULL) return hk_status_set(status, HK_RESOURCE_EXHAUSTED, HOOK_NAME ": out of memory");
  if (env != NULL) {
    hk_env_copy(&self->env, env);
    self->has_env = 1;
  }
  self->nops = n;
  self->nfeeds = nf;
  self->names = hk_env_calloc(env, n, sizeof(*self->names));
  self->is_target = hk_env_calloc(env, n, sizeof(*self->is_target));
  self->fetches = hk_env_calloc(env, n, sizeof(*self->fetches));
  self->targets = hk_env_calloc(env, n, sizeof(*self->targets));
  self->raw = hk_env_calloc(env, n, sizeof(*self->raw));
  self->values = hk_env_calloc(env, n, sizeof(*self->values));
  self->blocks = hk_env_calloc(env, n, sizeof(*self->blocks));
  if (self->names == NULL || self->is_target == NULL || self->fetches == NULL || self->targets == NULL ||
      self->raw == NULL || self->values == NULL || self->blocks == NULL)
    goto oom;
  if (nf > 0) {
    self->feed_names = hk_env_calloc(env, nf, sizeof(*self->feed_names));
    self->feed_data = hk_env_calloc(env, nf, sizeof(*self->feed_data));
    self->feeds = hk_env_calloc(env, nf, sizeof(*self->feeds));
    if (self->feed_names == NULL || self->feed_data == NULL || self->feeds == NULL) goto oom;
  }
  for (size_t i = 0; i < n; i++)
    if ((self->names[i] = hk_env_strdup(env, opts->final_ops[i])) == NULL) goto oom;
  for (size_t i = 0; i < nf; i++) {
    const hk_tensor *v = &opts->final_feed[i].value;
    if ((self->feed_names[i] = hk_env_strdup(env, opts->final_feed[i].name)) == NULL) goto oom;
    self->feeds[i].value = *v;
    self->feeds[i].value.data = NULL;
    if (v->nbytes > 0) {
      if ((self->feed_data[i] = hk_env_alloc(env, v->nbytes)) == NULL) goto oom;
      memcpy(self->feed_data[i], v->data, v->nbytes);
      self->feeds[i].value.data = self->feed_data[i];
    }
  }

  rc = hk_hook_new(out, &final_ops_vtable, self, HOOK_NAME, env, status);
  if (rc != HK_OK) {
    fo_free(self);
    return rc;
  }
  self->hook = *out;
  hk_status_clear(status);
  return HK_OK;

oom:
  fo_free(self);
  return hk_status_set(status, HK_RESOURCE_EXHAUSTED, HOOK_NAME ": out of memory");
}

hk_code hk_final_ops_hook_values(const hk_tensor **values, size_t *count, const hk_hook *hook, hk_status *status) {
  const final_ops *self;

  if (values != NULL) *values = NULL;
  if (count != NULL) *count = 0;
  if (hook == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_final_ops_hook_values: hook is NULL");
  if (values == NULL || count == NULL)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_final_ops_hook_values: %s is NULL",
                         values == NULL ? "values" : "count");
  /* Ours: a hook made with this file's vtable, not one that only has its name. */
  self = hk_hook_user_if(hook, &final_ops_vtable);
  if (self == NULL)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_final_ops_hook_values: hook '%s' is not a FinalOpsHook",
                         hk_hook_name(hook));
  if (!self->have_values)
    return hk_status_set(status, HK_FAILED_PRECONDITION,
                         HOOK_NAME ": no final values: end() has not run successfully since begin()");
  *values = self->values;
  *count = self->nops;
  return HK_OK;
}
