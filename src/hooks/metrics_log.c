/*
 * hooked — MetricsLogHook: a CSV or JSON-lines log of a run's values.
 *
 * Written against the public headers only. Everything a row needs (the
 * line buffer, the column keys, the fetch list) is allocated at
 * construction, so a step allocates nothing, also when it writes a row.
 * The file itself (the rows as text, what a restart keeps) is
 * metrics_log_file.c's.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "hooks/metrics_log_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOOK_NAME HK__METRICS_LOG_NAME

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* ---- callbacks ---------------------------------------------------------------- */

static hk_code ml_begin(void *user, hk_executor *graph, hk_status *status) {
  metrics_log *self = user;
  hk_variable_info info;
  hk_status inner = HK_STATUS_INIT;
  hk_code rc;

  hk__metrics_log_close(self);
  self->created = 0;
  self->fetched = 0;
  self->broken = 0;
  memset(self->has_rep, 0, self->nreported ? self->nreported : 1);
  if (self->every_steps == HK_UNSET_STEPS) /* timed by the clock of the env in force */
    (void)hk_timer_init(&self->timer, self->every_secs, HK_UNSET_STEPS, NULL, NULL, &hk_hook_env(self->hook)->clock,
                        NULL);
  rc = hk_executor_global_step(&info, NULL, graph, status);
  if (rc == HK_NOT_FOUND)
    return hk_status_set(status, HK_FAILED_PRECONDITION, "Global step should be created to use " HOOK_NAME ".");
  if (rc != HK_OK) return rc;
  self->fetch[0] = info.tensor;
  for (size_t i = 0; i < self->ntensors; i++) {
    rc = hk_executor_resolve_tensor(&self->fetch[1 + i], graph, self->tensors[i], &inner);
    if (rc != HK_OK) return hk_status_set(status, rc, HOOK_NAME ": column '%s': %s", self->names[i], inner.message);
  }
  return HK_OK;
}

static hk_code create(metrics_log *self, hk_raw_session *session, hk_status *status) {
  int64_t gs;
  hk_code rc = hk_raw_session_global_step(&gs, session, status);
  if (rc != HK_OK) return rc;
  rc = hk__metrics_log_open(self, gs, status);
  if (rc != HK_OK) return rc;
  self->last_seen = gs;
  if (self->every_steps != HK_UNSET_STEPS) self->bucket = floor_div(gs, self->every_steps);
  self->created = 1;
  return HK_OK;
}

static hk_code ml_after_create_session(void *user, hk_raw_session *session, hk_coordinator *coord,
                                       hk_creation_context *ctx, hk_status *status) {
  (void)coord;
  (void)ctx;
  return create(user, session, status);
}

static hk_code ml_before_run(void *user, hk_run_context *ctx, hk_run_request *request, hk_status *status) {
  metrics_log *self = user;
  hk_code rc;

  if (self->broken)
    return hk_status_set(status, self->broken_code, HOOK_NAME ": the metrics log '%s' failed an earlier write",
                         self->path);
  if (!self->created) { /* driven without after_create_session */
    rc = create(self, hk_run_context_session(ctx), status);
    if (rc != HK_OK) return rc;
  }
  /* The run ends at last_seen + 1 (a host loop fetches the step's end) or
   * + 2 (a graph fetches its start): fetch when either may write. */
  if (self->every_steps != HK_UNSET_STEPS)
    self->fetched =
        self->last_seen <= INT64_MAX - 2 && floor_div(self->last_seen + 2, self->every_steps) > self->bucket;
  else
    self->fetched = self->last_seen < INT64_MAX && hk_timer_should_trigger(&self->timer, self->last_seen + 1);
  request->fetches = self->fetch;
  request->nfetches = self->fetched ? 1 + self->ntensors : 1;
  return HK_OK;
}

static hk_code ml_after_run(void *user, hk_run_context *ctx, const hk_run_values *values, hk_status *status) {
  metrics_log *self = user;
  hk_raw_session *rs = hk_run_context_session(ctx);
  const hk_tensor *tensors;
  int64_t stale, gs, last;
  hk_code rc;

  if (values == NULL || values->nresults < 1 || values->results == NULL)
    return hk_status_set(status, HK_INTERNAL, HOOK_NAME ": the global step it fetched is missing from its run values");
  rc = hk_tensor_to_i64(&stale, &values->results[0], "global_step", status);
  if (rc != HK_OK) return rc;
  self->last_seen = stale;
  tensors = self->fetched && values->nresults == 1 + self->ntensors ? values->results + 1 : NULL;
  if (self->every_steps != HK_UNSET_STEPS) {
    if (stale == INT64_MAX || floor_div(stale + 1, self->every_steps) <= self->bucket) return HK_OK;
    rc = hk_raw_session_global_step(&gs, rs, status);
    if (rc != HK_OK) return rc;
    if (floor_div(gs, self->every_steps) <= self->bucket) return HK_OK;
    self->bucket = floor_div(gs, self->every_steps);
    self->last_seen = gs;
    return hk__metrics_log_write_row(self, gs, tensors, status);
  }
  if (!self->fetched) return HK_OK;
  rc = hk_raw_session_global_step(&gs, rs, status);
  if (rc != HK_OK) return rc;
  self->last_seen = gs;
  if (hk_timer_last_triggered_step(&self->timer, &last) && last == gs) return HK_OK;
  (void)hk_timer_update(&self->timer, gs, NULL, NULL);
  return hk__metrics_log_write_row(self, gs, tensors, status);
}

static hk_code ml_end(void *user, hk_raw_session *session, hk_status *status) {
  metrics_log *self = user;
  hk_code rc;
  (void)session;
  rc = hk__metrics_log_sync(self, status);
  hk__metrics_log_close(self);
  return rc;
}

static void ml_free(metrics_log *self) {
  hk_env copy;
  const hk_env *env;
  if (self == NULL) return;
  hk__metrics_log_close(self);
  if (self->has_env) copy = self->env;
  env = self->has_env ? &copy : NULL;
  for (size_t i = 0; self->names != NULL && i < self->ncols; i++) hk_env_free(env, self->names[i]);
  for (size_t i = 0; self->keys != NULL && i < self->ncols; i++) hk_env_free(env, self->keys[i]);
  for (size_t i = 0; self->tensors != NULL && i < self->ntensors; i++) hk_env_free(env, self->tensors[i]);
  hk_env_free(env, self->tensors);
  hk_env_free(env, self->names);
  hk_env_free(env, self->keys);
  hk_env_free(env, self->key_len);
  hk_env_free(env, self->header);
  hk_env_free(env, self->path);
  hk_env_free(env, self->tmp_path);
  hk_env_free(env, self->dir);
  hk_env_free(env, self->fetch);
  hk_env_free(env, self->rep);
  hk_env_free(env, self->has_rep);
  hk_env_free(env, self->line);
  hk_env_free(env, self);
}

static void ml_destroy(void *user) { ml_free(user); }

static const hk_hook_vtable metrics_log_vtable = {
    HK_HOOK_VTABLE_VERSION, ml_begin, ml_after_create_session, ml_before_run, ml_after_run, ml_end, ml_destroy,
};

/* ---- the checkpoint listener ------------------------------------------------------ */

static hk_code listener_before_save(void *user, hk_raw_session *session, int64_t step, hk_status *status) {
  (void)session;
  (void)step;
  return hk__metrics_log_sync(user, status);
}

static const hk_checkpoint_listener_vtable listener_vtable = {
    HK_CHECKPOINT_LISTENER_VTABLE_VERSION, NULL, listener_before_save, NULL, NULL,
};

/* ---- construction -------------------------------------------------------------- */

hk_code hk_metrics_log_options_init(hk_metrics_log_options *opts, uint32_t version) {
  return hk_struct_init(opts, sizeof(hk_metrics_log_options),
                        &(const hk_metrics_log_options)HK_METRICS_LOG_OPTIONS_INIT, version);
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n > m && strcmp(s + n - m, suffix) == 0;
}

static hk_code check_names(const char *const *names, size_t n, const char *what, hk_status *status) {
  if (n > 0 && names == NULL)
    return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": %s is NULL with n%s = %zu", what, what, n);
  for (size_t i = 0; i < n; i++) {
    if (names[i] == NULL || names[i][0] == '\0')
      return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": %s[%zu] is %s", what, i,
                           names[i] == NULL ? "NULL" : "an empty name");
    if (strcmp(names[i], "step") == 0 || strcmp(names[i], "wall_time") == 0)
      return hk_status_set(status, HK_INVALID_ARGUMENT,
                           HOOK_NAME ": %s[%zu] is '%s', the name of a column every row has", what, i, names[i]);
  }
  return HK_OK;
}

/* The name of column i: a tensor's (or its columns[] name), then a reported one. */
static const char *column_name(const hk_metrics_log_options *o, size_t i) {
  if (i >= o->ntensors) return o->reported[i - o->ntensors];
  return o->columns != NULL ? o->columns[i] : o->tensors[i];
}

static hk_code validate(const hk_metrics_log_options *o, int *format, hk_status *status) {
  hk_timer probe;
  hk_code rc;
  if (o == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "opts is NULL: " HOOK_NAME " needs a path");
  if (hk_struct_check_version(o, HK_METRICS_LOG_OPTIONS_VERSION, "hk_metrics_log_options", "opts", status) != HK_OK)
    return HK_INVALID_ARGUMENT;
  rc = hk_env_check(o->env, "opts->env", status);
  if (rc != HK_OK) return rc;
  if (o->path == NULL || o->path[0] == '\0')
    return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": path is required (the log file)");
  if (o->path[strlen(o->path) - 1] == '/')
    return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": path '%s' names a directory, not a file", o->path);
  switch (o->format) {
    case HK_METRICS_LOG_AUTO:
      if (ends_with(o->path, ".csv"))
        *format = HK_METRICS_LOG_CSV;
      else if (ends_with(o->path, ".jsonl") || ends_with(o->path, ".json"))
        *format = HK_METRICS_LOG_JSONL;
      else
        return hk_status_set(status, HK_INVALID_ARGUMENT,
                             HOOK_NAME ": path '%s' ends in neither .csv nor .jsonl (nor .json): set format", o->path);
      break;
    case HK_METRICS_LOG_CSV:
    case HK_METRICS_LOG_JSONL: *format = (int)o->format; break;
    default:
      return hk_status_set(status, HK_INVALID_ARGUMENT,
                           HOOK_NAME ": format %d is none of HK_METRICS_LOG_AUTO, _CSV, _JSONL", (int)o->format);
  }
  rc = check_names(o->tensors, o->ntensors, "tensors", status);
  if (rc == HK_OK && o->columns != NULL) rc = check_names(o->columns, o->ntensors, "columns", status);
  if (rc == HK_OK) rc = check_names(o->reported, o->nreported, "reported", status);
  if (rc != HK_OK) return rc;
  for (size_t i = 0; i < o->ntensors + o->nreported; i++)
    for (size_t j = 0; j < i; j++) {
      const char *a = column_name(o, i), *b = column_name(o, j);
      if (strcmp(a, b) == 0)
        return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": column '%s' is given twice", a);
    }
  return hk_timer_init(&probe, o->every_n_secs, o->every_n_steps, "every_n_secs", "every_n_steps", NULL, status);
}

/* CSV: the name, quoted when it holds a comma, a quote, CR or LF. */
static size_t csv_field(char *dst, const char *name) {
  size_t n = 0;
  int quote = strpbrk(name, ",\"\r\n") != NULL;
  if (quote) dst[n++] = '"';
  for (const char *p = name; *p; p++) {
    if (*p == '"') dst[n++] = '"';
    dst[n++] = *p;
  }
  if (quote) dst[n++] = '"';
  return n;
}

/* JSON: ",\"<name>\":" with '"', '\' and bytes below 0x20 escaped. */
static size_t json_key(char *dst, const char *name) {
  size_t n = 0;
  dst[n++] = ',';
  dst[n++] = '"';
  for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
    if (*p == '"' || *p == '\\') {
      dst[n++] = '\\';
      dst[n++] = (char)*p;
    } else if (*p < 0x20) {
      n += (size_t)snprintf(dst + n, 7, "\\u%04x", *p);
    } else {
      dst[n++] = (char)*p;
    }
  }
  dst[n++] = '"';
  dst[n++] = ':';
  return n;
}

static hk_code build(metrics_log *self, const hk_metrics_log_options *o) {
  const hk_env *env = hk__metrics_log_env(self);
  size_t n = self->ncols, header_cap = sizeof "step,wall_time\n", keys_total = 0;
  const char *slash;

  self->path = hk_env_strdup(env, o->path);
  self->tmp_path = hk_env_alloc(env, strlen(o->path) + sizeof ".tmp");
  slash = strrchr(o->path, '/');
  self->dir = slash == NULL ? hk_env_strdup(env, ".") : hk_env_alloc(env, (size_t)(slash - o->path) + 2);
  self->names = hk_env_calloc(env, n ? n : 1, sizeof *self->names);
  self->keys = hk_env_calloc(env, n ? n : 1, sizeof *self->keys);
  self->key_len = hk_env_calloc(env, n ? n : 1, sizeof *self->key_len);
  self->fetch = hk_env_calloc(env, 1 + self->ntensors, sizeof *self->fetch);
  self->tensors = hk_env_calloc(env, self->ntensors ? self->ntensors : 1, sizeof *self->tensors);
  self->rep = hk_env_calloc(env, self->nreported ? self->nreported : 1, sizeof *self->rep);
  self->has_rep = hk_env_calloc(env, self->nreported ? self->nreported : 1, 1);
  if (!self->path || !self->tmp_path || !self->dir || !self->names || !self->keys || !self->key_len || !self->fetch ||
      !self->tensors || !self->rep || !self->has_rep)
    return HK_RESOURCE_EXHAUSTED;
  strcpy(self->tmp_path, o->path);
  strcat(self->tmp_path, ".tmp");
  if (slash != NULL) {
    size_t d = (size_t)(slash - o->path);
    memcpy(self->dir, o->path, d ? d : 1); /* "/x.csv": the root */
    self->dir[d ? d : 1] = '\0';
  }
  for (size_t i = 0; i < n; i++) {
    const char *name = column_name(o, i);
    size_t len = strlen(name);
    if (i < self->ntensors && (self->tensors[i] = hk_env_strdup(env, o->tensors[i])) == NULL)
      return HK_RESOURCE_EXHAUSTED;
    self->names[i] = hk_env_strdup(env, name);
    self->keys[i] = hk_env_alloc(env, 6 * len + 5);
    if (!self->names[i] || !self->keys[i]) return HK_RESOURCE_EXHAUSTED;
    self->key_len[i] = json_key(self->keys[i], name);
    keys_total += self->key_len[i];
    header_cap += 2 * len + 3;
  }
  if (self->format == HK_METRICS_LOG_CSV) {
    char *p;
    self->header = hk_env_alloc(env, header_cap);
    if (!self->header) return HK_RESOURCE_EXHAUSTED;
    memcpy(self->header, "step,wall_time", strlen("step,wall_time"));
    p = self->header + strlen("step,wall_time");
    for (size_t i = 0; i < n; i++) {
      *p++ = ',';
      p += csv_field(p, self->names[i]);
    }
    *p++ = '\n';
    self->header_len = (size_t)(p - self->header);
  }
  /* {"step":<int>,"wall_time":<num><keys and values>}\n, or the CSV row. */
  self->line_cap = sizeof "{\"step\":,\"wall_time\":}\n" + 2 * HK__METRICS_LOG_CELL_MAX + keys_total +
                   n * (HK__METRICS_LOG_CELL_MAX + 1);
  self->line = hk_env_alloc(env, self->line_cap);
  return self->line ? HK_OK : HK_RESOURCE_EXHAUSTED;
}

hk_code hk_metrics_log_hook_new(hk_hook **out, const hk_metrics_log_options *opts, hk_status *status) {
  metrics_log *self;
  int format = HK_METRICS_LOG_CSV;
  hk_code rc;

  if (out == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "out: must not be NULL");
  *out = NULL;
  rc = validate(opts, &format, status);
  if (rc != HK_OK) return rc;
  self = hk_env_calloc(opts->env, 1, sizeof(*self));
  if (self == NULL) return hk_status_set(status, HK_RESOURCE_EXHAUSTED, HOOK_NAME ": out of memory");
  if (opts->env != NULL) {
    hk_env_copy(&self->env, opts->env);
    self->has_env = 1;
  }
  self->format = format;
  self->ntensors = opts->ntensors;
  self->nreported = opts->nreported;
  self->ncols = opts->ntensors + opts->nreported;
  self->every_steps = opts->every_n_steps;
  self->every_secs = opts->every_n_secs;
  if (build(self, opts) != HK_OK) {
    ml_free(self);
    return hk_status_set(status, HK_RESOURCE_EXHAUSTED, HOOK_NAME ": out of memory");
  }
  rc = hk_hook_new(out, &metrics_log_vtable, self, HOOK_NAME, opts->env, status);
  if (rc != HK_OK) {
    ml_free(self);
    return rc;
  }
  self->hook = *out;
  hk_status_clear(status);
  return HK_OK;
}

/* Ours: a hook made with this file's vtable, not one that only has its name. */
static metrics_log *ours(const hk_hook *hook) { return hk_hook_user_if(hook, &metrics_log_vtable); }

hk_code hk_metrics_log_report(hk_hook *hook, const char *name, double value, hk_status *status) {
  metrics_log *self;
  if (hook == NULL || name == NULL)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_metrics_log_report: %s is NULL", hook ? "name" : "hook");
  self = ours(hook);
  if (self == NULL)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_metrics_log_report: hook '%s' is not a " HOOK_NAME,
                         hk_hook_name(hook));
  for (size_t i = 0; i < self->nreported; i++)
    if (strcmp(self->names[self->ntensors + i], name) == 0) {
      self->rep[i] = value;
      self->has_rep[i] = 1;
      return HK_OK;
    }
  return hk_status_set(status, HK_INVALID_ARGUMENT,
                       "hk_metrics_log_report: '%s' is not a reported column of the metrics log '%s'", name,
                       self->path);
}

hk_code hk_metrics_log_sync(hk_hook *hook, hk_status *status) {
  metrics_log *self = ours(hook);
  if (self == NULL)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_metrics_log_sync: hook %s%s%s", hook ? "'" : "",
                         hook ? hk_hook_name(hook) : "is NULL", hook ? "' is not a " HOOK_NAME : "");
  return hk__metrics_log_sync(self, status);
}

hk_code hk_metrics_log_checkpoint_listener(hk_checkpoint_listener *out, hk_hook *hook, hk_status *status) {
  metrics_log *self;
  if (out != NULL) memset(out, 0, sizeof *out);
  if (out == NULL || hook == NULL)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_metrics_log_checkpoint_listener: %s is NULL",
                         out == NULL ? "out" : "hook");
  self = ours(hook);
  if (self == NULL)
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         "hk_metrics_log_checkpoint_listener: hook '%s' is not a " HOOK_NAME, hk_hook_name(hook));
  out->vtable = &listener_vtable;
  out->user = self;
  out->name = HOOK_NAME;
  return HK_OK;
}

hk_code hk_metrics_log_hook_info(hk_metrics_log_info *out, const hk_hook *hook, hk_status *status) {
  const metrics_log *self;
  if (out != NULL) memset(out, 0, sizeof *out);
  if (out == NULL || hook == NULL)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_metrics_log_hook_info: %s is NULL",
                         out == NULL ? "out" : "hook");
  self = ours(hook);
  if (self == NULL)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_metrics_log_hook_info: hook '%s' is not a " HOOK_NAME,
                         hk_hook_name(hook));
  out->path = self->path;
  out->format = self->format;
  out->rows = self->rows;
  out->kept_rows = self->kept_rows;
  out->dropped_rows = self->dropped_rows;
  out->dropped_torn = self->dropped_torn;
  return HK_OK;
}
