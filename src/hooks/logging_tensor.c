/*
 * hooked — LoggingTensorHook (contract group N).
 *
 * Written against the public headers only. Everything is
 * allocated at construction, the line buffer and the end() results
 * included, so a run that logs allocates nothing: the line is
 * formatted into the buffer and handed to the sink as it is.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "hooked/hooks.h"
#include "hooked/timer.h"
#include "util/common.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOOK_NAME "LoggingTensorHook"
/* A dimension longer than this shows its first and last EDGE entries. */
#define ELIDE_ABOVE 6
#define EDGE 3
#define TRUNCATED " (truncated)"
/* Room kept at the end of the line for TRUNCATED and " (%.3f sec)". */
#define SUFFIX_ROOM 64

/* ---- value text ------------------------------------------------------------ */

/* An snprintf-like writer: `len` counts the whole text, what fits is kept. */
typedef struct writer {
  char *buf;
  size_t cap; /* bytes of buf, NUL included; 0: count only */
  size_t len;
} writer;

static void put_mem(writer *w, const char *s, size_t n) {
  if (w->cap > 0 && w->len < w->cap - 1) {
    size_t room = w->cap - 1 - w->len;
    memcpy(w->buf + w->len, s, n < room ? n : room);
  }
  w->len += n;
}

static void put(writer *w, const char *s) { put_mem(w, s, strlen(s)); }

static void finish(writer *w) {
  if (w->cap > 0) w->buf[w->len < w->cap - 1 ? w->len : w->cap - 1] = '\0';
}

static double f16_to_double(uint16_t h) {
  int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0)
    v = ldexp((double)mant, -24); /* zero and subnormals */
  else if (exp == 31)
    v = mant ? NAN : HUGE_VAL;
  else
    v = ldexp((double)(mant | 0x400), exp - 25);
  return sign ? -v : v;
}

static double bf16_to_double(uint16_t b) {
  uint32_t bits = (uint32_t)b << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static void put_string(writer *w, const char *s) {
  put(w, "\"");
  if (s == NULL) s = "";
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    char esc[8];
    if (c == '"' || c == '\\') {
      esc[0] = '\\';
      esc[1] = (char)c;
      put_mem(w, esc, 2);
    } else if (c < 0x20 || c == 0x7f) {
      snprintf(esc, sizeof esc, "\\x%02x", c);
      put(w, esc);
    } else {
      put_mem(w, (const char *)&c, 1);
    }
  }
  put(w, "\"");
}

static void put_element(writer *w, hk_dtype dtype, const unsigned char *p) {
  char num[48];
  switch (dtype) {
    case HK_DTYPE_BOOL: put(w, *p ? "true" : "false"); return;
    case HK_DTYPE_STRING: {
      const char *s;
      memcpy(&s, p, sizeof s);
      put_string(w, s);
      return;
    }
    case HK_DTYPE_F16: {
      uint16_t h;
      memcpy(&h, p, sizeof h);
      snprintf(num, sizeof num, "%g", f16_to_double(h));
      break;
    }
    case HK_DTYPE_BF16: {
      uint16_t b;
      memcpy(&b, p, sizeof b);
      snprintf(num, sizeof num, "%g", bf16_to_double(b));
      break;
    }
    case HK_DTYPE_F32: {
      float f;
      memcpy(&f, p, sizeof f);
      snprintf(num, sizeof num, "%g", (double)f);
      break;
    }
    case HK_DTYPE_F64: {
      double d;
      memcpy(&d, p, sizeof d);
      snprintf(num, sizeof num, "%g", d);
      break;
    }
#define SIGNED_CASE(DT, T)                             \
  case DT: {                                           \
    T v;                                               \
    memcpy(&v, p, sizeof v);                           \
    snprintf(num, sizeof num, "%" PRId64, (int64_t)v); \
    break;                                             \
  }
#define UNSIGNED_CASE(DT, T)                            \
  case DT: {                                            \
    T v;                                                \
    memcpy(&v, p, sizeof v);                            \
    snprintf(num, sizeof num, "%" PRIu64, (uint64_t)v); \
    break;                                              \
  }
      SIGNED_CASE(HK_DTYPE_I8, int8_t)
      SIGNED_CASE(HK_DTYPE_I16, int16_t)
      SIGNED_CASE(HK_DTYPE_I32, int32_t)
      SIGNED_CASE(HK_DTYPE_I64, int64_t)
      UNSIGNED_CASE(HK_DTYPE_U8, uint8_t)
      UNSIGNED_CASE(HK_DTYPE_U16, uint16_t)
      UNSIGNED_CASE(HK_DTYPE_U32, uint32_t)
      UNSIGNED_CASE(HK_DTYPE_U64, uint64_t)
#undef SIGNED_CASE
#undef UNSIGNED_CASE
    default: snprintf(num, sizeof num, "?"); break;
  }
  put(w, num);
}

/* Dimension `d` of t, starting at byte offset `off`; strides[d] is the byte
 * size of one entry of dimension d. */
static void put_dim(writer *w, const hk_tensor *t, const size_t *strides, int32_t d, size_t off) {
  const unsigned char *data = t->data;
  int64_t n = t->dims[d];
  put(w, "[");
  for (int64_t i = 0; i < n; i++) {
    if (n > ELIDE_ABOVE && i == EDGE) {
      put(w, " ...");
      i = n - EDGE; /* the loop continues with the last EDGE entries */
    }
    if (i > 0) put(w, " ");
    size_t at = off + (size_t)i * strides[d];
    if (d + 1 == t->rank)
      put_element(w, t->dtype, data + at);
    else
      put_dim(w, t, strides, d + 1, at);
  }
  put(w, "]");
}

static int valid_for_text(const hk_tensor *t) {
  int64_t n;
  size_t size;
  if (t == NULL || t->dtype <= HK_DTYPE_INVALID || t->dtype >= HK_DTYPE__COUNT) return 0;
  if (t->rank < 0 || t->rank > HK_MAX_RANK) return 0;
  n = hk_tensor_num_elements(t);
  if (n < 0) return 0;
  if (n == 0) return 1;
  size = hk_dtype_size(t->dtype);
  if (t->data == NULL || (uint64_t)n > SIZE_MAX / size) return 0;
  return t->nbytes >= (size_t)n * size;
}

static void put_value(writer *w, const hk_tensor *t) {
  size_t strides[HK_MAX_RANK];
  if (!valid_for_text(t)) {
    put(w, "<invalid tensor>");
    return;
  }
  if (t->rank == 0) {
    put_element(w, t->dtype, t->data);
    return;
  }
  strides[t->rank - 1] = hk_dtype_size(t->dtype);
  for (int32_t d = t->rank - 1; d > 0; d--) strides[d - 1] = strides[d] * (size_t)t->dims[d];
  put_dim(w, t, strides, 0, 0);
}

size_t hk_logging_tensor_format_value(char *buf, size_t cap, const hk_tensor *value) {
  writer w = {buf, buf == NULL ? 0 : cap, 0};
  put_value(&w, value);
  finish(&w);
  return w.len;
}

/* ---- the hook ------------------------------------------------------------------ */

typedef struct logging_tensor {
  hk_hook *hook; /* the wrapper, for its env and log */
  hk_env env;    /* what the struct was allocated with */
  int has_env;
  size_t n;
  char **names;          /* n, in logging order */
  char **tags;           /* n, in logging order (tags[i] == names[i] for the list form) */
  int tagged;            /* tags are separate copies */
  char *probe;           /* scratch for "<bare name>:1" */
  hk_handle *handles;    /* n, resolved by begin() */
  hk_tensor *end_values; /* n, for end()'s run */
  char *line;            /* HK_LOGGING_TENSOR_LINE_MAX */
  int64_t every_n_iter;
  double every_n_secs;
  int at_end;
  hk_logging_tensor_formatter formatter;
  void *formatter_user;
  /* Per-session state, reset by begin(). */
  hk_timer timer;
  int64_t iter;
  int should_trigger;
  int resolved;
} logging_tensor;

/* Send a finished line to the sink of the env in force, as hk_env_log()
 * would, but without its 1024-byte stack copy: the line is ours. */
static void emit(const logging_tensor *self, hk_log_level level, const char *line) {
  const hk_env *env = hk_hook_env(self->hook);
  if (level < env->log_level) return;
  if (env->log != NULL)
    env->log(env->log_user, level, line);
  else
    hk_log_stderr(NULL, level, line);
}

/* Update the timer, then log the line (or the formatter's). */
static hk_code log_values(logging_tensor *self, const hk_tensor *values, hk_status *status) {
  double secs = 0;
  int has_secs = hk_timer_update(&self->timer, self->iter, &secs, NULL);
  writer w;

  if (self->formatter != NULL) {
    const char *text = NULL;
    hk_code rc = self->formatter(self->formatter_user, (const char *const *)self->tags, values, self->n, &text, status);
    if (rc != HK_OK) return rc;
    if (text != NULL) emit(self, HK_LOG_INFO, text);
    return HK_OK;
  }
  w.buf = self->line;
  w.cap = HK_LOGGING_TENSOR_LINE_MAX - SUFFIX_ROOM;
  w.len = 0;
  for (size_t i = 0; i < self->n; i++) {
    if (i > 0) put(&w, ", ");
    put(&w, self->tags[i]);
    put(&w, " = ");
    put_value(&w, &values[i]);
  }
  if (w.len >= w.cap) {
    /* Cut: the marker and the seconds go after the text that was kept. */
    w.len = w.cap - 1;
    w.cap = HK_LOGGING_TENSOR_LINE_MAX;
    put(&w, TRUNCATED);
  }
  w.cap = HK_LOGGING_TENSOR_LINE_MAX;
  if (has_secs) {
    char sec[SUFFIX_ROOM];
    snprintf(sec, sizeof sec, " (%.3f sec)", secs);
    put(&w, sec);
  }
  finish(&w);
  emit(self, HK_LOG_INFO, self->line);
  return HK_OK;
}

static hk_code resolve(logging_tensor *self, hk_executor *graph, size_t i, hk_status *status) {
  const char *name = self->names[i];
  hk_status inner = HK_STATUS_INIT;
  hk_handle h = HK_NO_HANDLE, other = HK_NO_HANDLE;
  hk_code rc = hk_executor_resolve_tensor(&h, graph, name, &inner);

  if (rc != HK_OK) return hk_status_set(status, rc, HOOK_NAME ": tensor '%s': %s", name, inner.message);
  if (strchr(name, ':') == NULL) {
    /* A bare name stands for output 0 only when the op has no
     * output 1. */
    snprintf(self->probe, strlen(name) + 3, "%s:1", name);
    if (hk_executor_resolve_tensor(&other, graph, self->probe, NULL) == HK_OK)
      return hk_status_set(status, HK_INVALID_ARGUMENT,
                           "Name %s is ambiguous, as this Operation has multiple outputs (at least 2).", name);
  }
  self->handles[i] = h;
  return HK_OK;
}

static hk_code lt_begin(void *user, hk_executor *graph, hk_status *status) {
  logging_tensor *self = user;
  const hk_env *env = hk_hook_env(self->hook);
  hk_code rc;

  self->iter = 0;
  self->should_trigger = 0;
  self->resolved = 0;
  if (self->every_n_iter != HK_UNSET_STEPS)
    rc = hk_timer_init(&self->timer, HK_UNSET_SECS, self->every_n_iter, "every_n_secs", "every_n_iter", &env->clock,
                       status);
  else if (!hk_secs_is_unset(self->every_n_secs))
    rc = hk_timer_init(&self->timer, self->every_n_secs, HK_UNSET_STEPS, "every_n_secs", "every_n_iter", &env->clock,
                       status);
  else {
    hk_timer_init_never(&self->timer); /* at_end alone */
    rc = HK_OK;
  }
  if (rc != HK_OK) return rc;
  for (size_t i = 0; i < self->n; i++) {
    rc = resolve(self, graph, i, status);
    if (rc != HK_OK) return rc;
  }
  self->resolved = 1;
  return HK_OK;
}

static hk_code lt_before_run(void *user, hk_run_context *ctx, hk_run_request *request, hk_status *status) {
  logging_tensor *self = user;

  (void)ctx;
  (void)status;
  self->should_trigger = self->resolved && hk_timer_should_trigger(&self->timer, self->iter);
  if (self->should_trigger) {
    request->fetches = self->handles;
    request->nfetches = self->n;
  }
  return HK_OK;
}

static hk_code lt_after_run(void *user, hk_run_context *ctx, const hk_run_values *values, hk_status *status) {
  logging_tensor *self = user;
  hk_code rc = HK_OK;

  (void)ctx;
  if (self->should_trigger) {
    if (values == NULL || values->results == NULL || values->nresults != self->n)
      return hk_status_set(status, HK_INTERNAL,
                           HOOK_NAME ": the %zu tensors it fetched are missing from its run values", self->n);
    rc = log_values(self, values->results, status);
  }
  self->iter++;
  return rc;
}

static hk_code lt_end(void *user, hk_raw_session *session, hk_status *status) {
  logging_tensor *self = user;
  hk_run_args args;
  hk_code rc;

  if (!self->at_end || !self->resolved) return HK_OK;
  memset(&args, 0, sizeof args);
  args.fetches = self->handles;
  args.nfetches = self->n;
  rc = hk_raw_session_run(session, &args, self->end_values, NULL, status);
  if (rc != HK_OK) return rc;
  return log_values(self, self->end_values, status);
}

static void lt_free(logging_tensor *self) {
  const hk_env *env;
  hk_env copy;
  if (self == NULL) return;
  if (self->has_env) copy = self->env;
  env = self->has_env ? &copy : NULL;
  for (size_t i = 0; i < self->n; i++) {
    if (self->names != NULL) hk_env_free(env, self->names[i]);
    if (self->tagged && self->tags != NULL) hk_env_free(env, self->tags[i]);
  }
  hk_env_free(env, self->names);
  hk_env_free(env, self->tags);
  hk_env_free(env, self->probe);
  hk_env_free(env, self->handles);
  hk_env_free(env, self->end_values);
  hk_env_free(env, self->line);
  hk_env_free(env, self);
}

static void lt_destroy(void *user) { lt_free(user); }

static const hk_hook_vtable logging_tensor_vtable = {
    HK_HOOK_VTABLE_VERSION, lt_begin, NULL, lt_before_run, lt_after_run, lt_end, lt_destroy,
};

hk_code hk_logging_tensor_options_init(hk_logging_tensor_options *opts, uint32_t version) {
  return HK__STRUCT_INIT(opts, version, hk_logging_tensor_options, HK_LOGGING_TENSOR_OPTIONS_INIT);
}

static int by_tag(const void *a, const void *b) {
  const hk_tagged_tensor *x = a, *y = b;
  return strcmp(x->tag, y->tag);
}

static hk_code validate(const hk_logging_tensor_options *opts, hk_status *status) {
  int iter_given = opts->every_n_iter != HK_UNSET_STEPS;
  int secs_given = !hk_secs_is_unset(opts->every_n_secs);
  hk_code rc;

  HK__CHECK_VERSION(opts, HK_LOGGING_TENSOR_OPTIONS_VERSION, hk_logging_tensor_options, "opts", status);
  rc = hk_env_check(opts->env, "opts->env", status);
  if (rc != HK_OK) return rc;
  /* The options' checks, in TF's order: the cadence first, then every_n_iter's value. */
  if (!(opts->at_end && !iter_given && !secs_given) && iter_given == secs_given)
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         "either at_end and/or exactly one of every_n_iter and every_n_secs must be provided.");
  if (iter_given && opts->every_n_iter <= 0)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "invalid every_n_iter=%" PRId64 ".", opts->every_n_iter);
  if (secs_given && !(isfinite(opts->every_n_secs) && opts->every_n_secs > 0))
    return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": every_n_secs must be finite and > 0, got %g",
                         opts->every_n_secs);
  if (opts->tensors == NULL && opts->ntensors > 0)
    return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": tensors is NULL with ntensors %zu", opts->ntensors);
  if (opts->tagged == NULL && opts->ntagged > 0)
    return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": tagged is NULL with ntagged %zu", opts->ntagged);
  if (opts->ntensors == 0 && opts->ntagged == 0)
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         HOOK_NAME ": no tensors to log: give tensors (names) or tagged ((tag, name) pairs)");
  if (opts->ntensors > 0 && opts->ntagged > 0)
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         HOOK_NAME ": give tensors (names) or tagged ((tag, name) pairs), not both");
  for (size_t i = 0; i < opts->ntensors; i++)
    if (opts->tensors[i] == NULL || opts->tensors[i][0] == '\0')
      return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": tensors[%zu] is %s", i,
                           opts->tensors[i] == NULL ? "NULL" : "empty");
  for (size_t i = 0; i < opts->ntagged; i++) {
    if (opts->tagged[i].tag == NULL)
      return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": tagged[%zu].tag is NULL", i);
    if (opts->tagged[i].name == NULL || opts->tagged[i].name[0] == '\0')
      return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": tagged[%zu].name is %s", i,
                           opts->tagged[i].name == NULL ? "NULL" : "empty");
    for (size_t j = 0; j < i; j++)
      if (strcmp(opts->tagged[j].tag, opts->tagged[i].tag) == 0)
        return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": tag '%s' is given twice (tagged[%zu] and [%zu])",
                             opts->tagged[i].tag, j, i);
  }
  return HK_OK;
}

hk_code hk_logging_tensor_hook_new(hk_hook **out, const hk_logging_tensor_options *opts, hk_status *status) {
  logging_tensor *self;
  const hk_env *env;
  hk_tagged_tensor *sorted = NULL;
  size_t longest = 0;
  hk_code rc;

  if (out == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "out: must not be NULL");
  *out = NULL;
  if (opts == NULL)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "opts is NULL: " HOOK_NAME " needs tensors and a cadence");
  rc = validate(opts, status);
  if (rc != HK_OK) return rc;

  env = opts->env;
  self = hk_env_calloc(env, 1, sizeof(*self));
  if (self == NULL) return hk_status_set(status, HK_RESOURCE_EXHAUSTED, HOOK_NAME ": out of memory");
  if (env != NULL) {
    hk_env_copy(&self->env, env);
    self->has_env = 1;
  }
  self->n = opts->ntagged > 0 ? opts->ntagged : opts->ntensors;
  self->tagged = opts->ntagged > 0;
  self->every_n_iter = opts->every_n_iter;
  self->every_n_secs = opts->every_n_secs;
  self->at_end = opts->at_end != 0;
  self->formatter = opts->formatter;
  self->formatter_user = opts->formatter_user;
  self->names = hk_env_calloc(env, self->n, sizeof(*self->names));
  self->tags = hk_env_calloc(env, self->n, sizeof(*self->tags));
  self->handles = hk_env_calloc(env, self->n, sizeof(*self->handles));
  self->end_values = hk_env_calloc(env, self->n, sizeof(*self->end_values));
  self->line = hk_env_alloc(env, HK_LOGGING_TENSOR_LINE_MAX);
  if (self->tagged) sorted = hk_env_calloc(env, self->n, sizeof(*sorted));
  if (self->names == NULL || self->tags == NULL || self->handles == NULL || self->end_values == NULL ||
      self->line == NULL || (self->tagged && sorted == NULL))
    goto oom;
  if (self->tagged) {
    /* (tag, name) pairs are logged sorted by tag, bytewise. */
    memcpy(sorted, opts->tagged, self->n * sizeof(*sorted));
    qsort(sorted, self->n, sizeof(*sorted), by_tag);
  }
  for (size_t i = 0; i < self->n; i++) {
    const char *name = self->tagged ? sorted[i].name : opts->tensors[i];
    self->names[i] = hk_env_strdup(env, name);
    if (self->names[i] == NULL) goto oom;
    if (self->tagged) {
      self->tags[i] = hk_env_strdup(env, sorted[i].tag);
      if (self->tags[i] == NULL) goto oom;
    } else {
      self->tags[i] = self->names[i];
    }
    if (strlen(name) > longest) longest = strlen(name);
  }
  self->probe = hk_env_alloc(env, longest + 3);
  if (self->probe == NULL) goto oom;
  self->line[0] = '\0';
  hk_env_free(env, sorted);
  sorted = NULL;

  rc = hk_hook_new(out, &logging_tensor_vtable, self, HOOK_NAME, env, status);
  if (rc != HK_OK) {
    lt_free(self);
    return rc;
  }
  self->hook = *out;
  hk_status_clear(status);
  return HK_OK;

oom:
  hk_env_free(env, sorted);
  lt_free(self);
  return hk_status_set(status, HK_RESOURCE_EXHAUSTED, HOOK_NAME ": out of memory");
}
