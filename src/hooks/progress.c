/*
 * hooked — ProgressHook: a progress display on a stream the program chose.
 *
 * Written against the public headers only. Everything is
 * allocated at construction; the callbacks format into the hook's own line
 * buffer and write it with fputs, so a step allocates nothing (stdio may
 * allocate its stream buffer once, at the first write).
 *
 * Why a stream and not the log sink: a sink takes whole messages, one per
 * line, and adds timestamps; a display redraws one line in place, as tqdm
 * does. hk_progress_hook_log() is the bridge for log lines that reach the
 * same terminal.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#if !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* fileno, isatty */
#endif
#if !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE /* TIOCGWINSZ */
#endif

#include "hooked/hooks.h"
#include "util/common.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define HOOK_NAME "ProgressHook"
#define TERMINAL_SECS 0.1
#define PLAIN_SECS 10.0
#define RATE_TAU_SECS 5.0 /* time constant of the smoothed rate */
#define LINE_MAX_BYTES 256
#define MAGIC 0x50524f47u /* "PROG": tells hk_progress_hook_log() a progress hook from another */

typedef struct progress {
  uint32_t magic;
  hk_hook *hook; /* the wrapper, for its env */
  hk_env env;    /* what the struct was allocated with */
  int has_env;
  FILE *stream; /* NULL: draw nothing */
  int64_t last_step;
  char *loss_name;
  double every_secs_opt; /* as given; HK_UNSET_SECS: by mode */
  hk_progress_mode mode_opt;

  /* Per session, reset by begin(). */
  int terminal;
  double every_secs;
  int has_gs;
  hk_handle loss;
  int started;        /* after_create_session read the first step */
  int64_t start_step; /* GS at the first creation after begin() */
  int have_t0;
  double t0;    /* monotonic time at the first before_run */
  int64_t runs; /* after_runs since begin() */
  double next_draw;
  int64_t prev_step; /* the previous sample of the rate */
  double prev_time;
  double rate; /* smoothed steps per second */
  int have_rate;
  double loss_value;
  int have_loss;

  pthread_mutex_t mu; /* the stream and line_open: the log sink may run on other threads */
  int line_open;      /* a terminal line is drawn and not ended */
  char line[LINE_MAX_BYTES];
} progress;

static const hk_env *own_env(const progress *self) { return self->has_env ? &self->env : NULL; }

static double now_secs(const progress *self) { return hk_env_monotonic(hk_hook_env(self->hook)); }

/* ---- formatting (no allocation) ------------------------------------------- */

/* Append to self->line at *len, keeping it NUL-terminated and in bounds. */
static void put(progress *self, size_t *len, const char *fmt, ...) HK_PRINTF(3, 4);
static void put(progress *self, size_t *len, const char *fmt, ...) {
  va_list ap;
  int n;
  if (*len >= sizeof(self->line) - 1) return;
  va_start(ap, fmt);
  n = vsnprintf(self->line + *len, sizeof(self->line) - *len, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  *len += (size_t)n < sizeof(self->line) - *len ? (size_t)n : sizeof(self->line) - 1 - *len;
}

/* "0:07", "12:34", "1:02:03"; "--" when unknown or beyond 99 days. */
static void put_duration(progress *self, size_t *len, double secs) {
  long long s, h;
  if (!(secs >= 0) || secs > 99.0 * 86400.0) {
    put(self, len, "--");
    return;
  }
  s = (long long)(secs + 0.5);
  h = s / 3600;
  if (h > 0)
    put(self, len, "%lld:%02lld:%02lld", h, (s / 60) % 60, s % 60);
  else
    put(self, len, "%lld:%02lld", s / 60, s % 60);
}

static void put_rate(progress *self, size_t *len, double rate, const char *suffix) {
  if (!(rate > 0) || !isfinite(rate))
    put(self, len, "-- steps/s%s", suffix);
  else if (rate >= 100)
    put(self, len, "%.0f steps/s%s", rate, suffix);
  else if (rate >= 10)
    put(self, len, "%.1f steps/s%s", rate, suffix);
  else if (rate >= 1)
    put(self, len, "%.2f steps/s%s", rate, suffix);
  else
    put(self, len, "%.2f s/step%s", 1.0 / rate, suffix);
}

static double percent(const progress *self, int64_t step) {
  double pct = self->last_step > 0 ? 100.0 * (double)step / (double)self->last_step : 100.0;
  if (pct > 100.0) pct = 100.0;
  if (pct < 0.0) pct = 0.0;
  return pct;
}

static void put_step(progress *self, size_t *len, int64_t step) {
  put(self, len, "step %" PRId64, step);
  if (self->last_step != HK_UNSET_STEPS) put(self, len, "/%" PRId64 " (%.1f%%)", self->last_step, percent(self, step));
}

/* A stop that ended the run before its end: a signal, a hook's request, a
 * time limit, early stopping. The last step, the end of the input and a
 * program that simply closed are the run being done. */
static int stopped_early(const hk_stop_info *why) {
  switch (why->reason) {
    case HK_STOP_NONE:
    case HK_STOP_LAST_STEP:
    case HK_STOP_END_OF_INPUT:
    case HK_STOP_CLOSED: return 0;
    default: return 1;
  }
}

static void put_loss(progress *self, size_t *len) {
  if (self->loss == HK_NO_HANDLE) return;
  if (!self->have_loss)
    put(self, len, "  loss --");
  else if (isnan(self->loss_value))
    put(self, len, "  loss nan");
  else if (isinf(self->loss_value))
    put(self, len, "  loss %s", self->loss_value > 0 ? "inf" : "-inf");
  else
    put(self, len, "  loss %.4g", self->loss_value);
}

/* ---- drawing ---------------------------------------------------------------- */

static int terminal_width(FILE *stream) {
  struct winsize ws;
  if (ioctl(fileno(stream), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 0;
}

/* Write self->line: in place on a terminal, else as a line of its own. */
static void emit(progress *self, int final) {
  pthread_mutex_lock(&self->mu);
  if (self->terminal) {
    int width = terminal_width(self->stream);
    /* A line as wide as the terminal wraps, and "\r" then returns to the
     * wrapped part: keep it one column short. */
    if (width > 1 && strlen(self->line) > (size_t)(width - 1)) self->line[width - 1] = '\0';
    fputs("\r", self->stream);
    fputs(self->line, self->stream);
    fputs(final ? "\033[K\n" : "\033[K", self->stream);
    self->line_open = !final;
  } else {
    fputs(self->line, self->stream);
    fputs("\n", self->stream);
  }
  fflush(self->stream);
  pthread_mutex_unlock(&self->mu);
}

/* The step after the run: GS through the raw session (exact with any
 * executor, whenever it reads a fetched GS), else the runs counted since begin(). */
static hk_code current_step(progress *self, hk_raw_session *session, int64_t *step, hk_status *status) {
  if (!self->has_gs) {
    *step = self->start_step + self->runs;
    return HK_OK;
  }
  return hk_raw_session_global_step(step, session, status);
}

static void sample_rate(progress *self, int64_t step, double now) {
  double dt = now - self->prev_time;
  if (dt > 0) {
    double inst = (double)(step - self->prev_step) / dt;
    if (!self->have_rate) {
      self->rate = inst;
      self->have_rate = 1;
    } else {
      self->rate += (1.0 - exp(-dt / RATE_TAU_SECS)) * (inst - self->rate);
    }
    self->prev_step = step;
    self->prev_time = now;
  }
}

static void draw(progress *self, int64_t step) {
  size_t len = 0;
  self->line[0] = '\0';
  put_step(self, &len, step);
  put(self, &len, "  ");
  put_rate(self, &len, self->have_rate ? self->rate : 0.0, "");
  if (self->last_step != HK_UNSET_STEPS) {
    put(self, &len, "  ETA ");
    if (step >= self->last_step)
      put_duration(self, &len, 0.0);
    else
      put_duration(self, &len, self->have_rate && self->rate > 0 ? (double)(self->last_step - step) / self->rate : -1);
  }
  put_loss(self, &len);
  emit(self, 0);
}

/* ---- the hook ------------------------------------------------------------------ */

static hk_code pg_begin(void *user, hk_executor *graph, hk_status *status) {
  progress *self = user;
  hk_status st = HK_STATUS_INIT;
  hk_code rc;

  self->started = 0;
  self->start_step = 0;
  self->have_t0 = 0;
  self->runs = 0;
  self->have_rate = 0;
  self->rate = 0;
  self->have_loss = 0;
  self->next_draw = -HUGE_VAL;
  self->loss = HK_NO_HANDLE;
  pthread_mutex_lock(&self->mu);
  self->line_open = 0;
  pthread_mutex_unlock(&self->mu);
  if (self->stream == NULL) return HK_OK;

  self->terminal =
      self->mode_opt == HK_PROGRESS_TERMINAL || (self->mode_opt == HK_PROGRESS_AUTO && isatty(fileno(self->stream)));
  self->every_secs = !hk_secs_is_unset(self->every_secs_opt) ? self->every_secs_opt
                     : self->terminal                        ? TERMINAL_SECS
                                                             : PLAIN_SECS;
  rc = hk_executor_global_step(NULL, NULL, graph, &st);
  if (rc == HK_OK) {
    self->has_gs = 1;
  } else if (rc == HK_NOT_FOUND) {
    self->has_gs = 0; /* count runs instead */
  } else {
    return hk_status_set(status, rc, HOOK_NAME ": %s", st.message);
  }
  if (self->loss_name != NULL) {
    hk_status_clear(&st);
    rc = hk_executor_resolve_tensor(&self->loss, graph, self->loss_name, &st);
    if (rc != HK_OK) return hk_status_set(status, rc, HOOK_NAME ": loss tensor '%s': %s", self->loss_name, st.message);
  }
  return HK_OK;
}

static hk_code pg_after_create_session(void *user, hk_raw_session *session, hk_coordinator *coord,
                                       hk_creation_context *ctx, hk_status *status) {
  progress *self = user;
  hk_code rc;

  (void)coord;
  (void)ctx;
  /* Rates and the final average count from the step the first creation
   * after begin() resumed at; a re-creation (recovery) keeps it. */
  if (self->stream == NULL || self->started) return HK_OK;
  if (self->has_gs) {
    rc = hk_raw_session_global_step(&self->start_step, session, status);
    if (rc != HK_OK) return rc;
  }
  self->started = 1;
  return HK_OK;
}

static hk_code pg_before_run(void *user, hk_run_context *ctx, hk_run_request *request, hk_status *status) {
  progress *self = user;

  (void)ctx;
  (void)status;
  if (self->stream == NULL) return HK_OK;
  if (!self->have_t0) {
    self->t0 = now_secs(self);
    self->have_t0 = 1;
    self->prev_time = self->t0;
    self->prev_step = self->start_step;
  }
  /* The loss of every run, so the last one drawn (the final line's
   * included) is the last step's. */
  if (self->loss != HK_NO_HANDLE) {
    request->fetches = &self->loss;
    request->nfetches = 1;
  }
  return HK_OK;
}

/* A numeric scalar (one element) as a double. */
static hk_code to_double(const progress *self, const hk_tensor *t, double *out, hk_status *status) {
  const void *d = t->data;
  uint32_t bits;
  float f;

  if (hk_tensor_num_elements(t) != 1 || d == NULL || t->nbytes < hk_dtype_size(t->dtype))
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         HOOK_NAME ": loss tensor '%s' is not a scalar: %" PRId64 " elements", self->loss_name,
                         hk_tensor_num_elements(t));
  switch (t->dtype) {
    case HK_DTYPE_F32:
      memcpy(&f, d, 4);
      *out = f;
      return HK_OK;
    case HK_DTYPE_F64: memcpy(out, d, 8); return HK_OK;
    case HK_DTYPE_BF16: {
      uint16_t h;
      memcpy(&h, d, 2);
      bits = (uint32_t)h << 16;
      memcpy(&f, &bits, 4);
      *out = f;
      return HK_OK;
    }
    case HK_DTYPE_F16: {
      uint16_t h;
      int e;
      double m;
      memcpy(&h, d, 2);
      e = (h >> 10) & 0x1f;
      m = (double)(h & 0x3ff);
      *out = e == 0 ? ldexp(m, -24) : e == 31 ? (m == 0 ? HUGE_VAL : NAN) : ldexp(m + 1024.0, e - 25);
      if (h & 0x8000u) *out = -*out;
      return HK_OK;
    }
    case HK_DTYPE_U64: {
      uint64_t u;
      memcpy(&u, d, 8);
      *out = (double)u;
      return HK_OK;
    }
    default: break;
  }
  if (hk_dtype_is_integer(t->dtype)) {
    int64_t v;
    hk_code rc = hk_tensor_to_i64(&v, t, self->loss_name, status);
    if (rc == HK_OK) *out = (double)v;
    return rc;
  }
  return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": loss tensor '%s' has dtype %s, not a number",
                       self->loss_name, hk_dtype_name(t->dtype));
}

static hk_code pg_after_run(void *user, hk_run_context *ctx, const hk_run_values *values, hk_status *status) {
  progress *self = user;
  int64_t step;
  double now;
  hk_code rc;

  if (self->stream == NULL) return HK_OK;
  self->runs++;
  if (self->loss != HK_NO_HANDLE) {
    if (values == NULL || values->nresults < 1 || values->results == NULL)
      return hk_status_set(status, HK_INTERNAL, HOOK_NAME ": the loss it fetched is missing from its run values");
    rc = to_double(self, &values->results[0], &self->loss_value, status);
    if (rc != HK_OK) return rc;
    self->have_loss = 1;
  }
  now = now_secs(self);
  if (now < self->next_draw) return HK_OK;
  rc = current_step(self, hk_run_context_session(ctx), &step, status);
  if (rc != HK_OK) return rc;
  sample_rate(self, step, now);
  draw(self, step);
  self->next_draw = now + self->every_secs;
  return HK_OK;
}

static hk_code pg_end(void *user, hk_raw_session *session, hk_status *status) {
  progress *self = user;
  int64_t step;
  double now, elapsed;
  size_t len = 0;
  hk_code rc;

  if (self->stream == NULL) return HK_OK;
  rc = current_step(self, session, &step, status);
  if (rc != HK_OK) return rc;
  now = now_secs(self);
  elapsed = self->have_t0 ? now - self->t0 : 0.0;
  self->line[0] = '\0';
  hk_stop_info why;
  hk_hook_stop_reason(&why, self->hook, NULL);
  if (stopped_early(&why)) {
    /* Interrupted: say where and why, not "done". */
    put(self, &len, "step %" PRId64, step);
    if (self->last_step != HK_UNSET_STEPS)
      put(self, &len, "/%" PRId64 "  stopped at %.0f%%", self->last_step, percent(self, step));
    else
      put(self, &len, "  stopped");
    put(self, &len, " (%s: %s) after ", hk_stop_reason_name(why.reason), why.detail);
  } else {
    put_step(self, &len, step);
    put(self, &len, "  done in ");
  }
  put_duration(self, &len, elapsed);
  put(self, &len, "  ");
  put_rate(self, &len, elapsed > 0 ? (double)(step - self->start_step) / elapsed : 0.0, " avg");
  put_loss(self, &len);
  emit(self, 1);
  return HK_OK;
}

static void pg_destroy(void *user) {
  progress *self = user;
  hk_env env;
  int has_env = self->has_env;

  if (has_env) env = self->env;
  self->magic = 0;
  pthread_mutex_destroy(&self->mu);
  hk_env_free(has_env ? &env : NULL, self->loss_name);
  hk_env_free(has_env ? &env : NULL, self);
}

static const hk_hook_vtable progress_vtable = {
    HK_HOOK_VTABLE_VERSION, pg_begin, pg_after_create_session, pg_before_run, pg_after_run, pg_end, pg_destroy,
};

hk_code hk_progress_options_init(hk_progress_options *opts, uint32_t version) {
  return HK__STRUCT_INIT(opts, version, hk_progress_options, HK_PROGRESS_OPTIONS_INIT);
}

hk_code hk_progress_hook_new(hk_hook **out, const hk_progress_options *opts, hk_status *status) {
  hk_progress_options defaults;
  progress *self;
  hk_code rc;

  if (out == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "out: must not be NULL");
  *out = NULL;
  if (opts == NULL) {
    hk_progress_options_init(&defaults, HK_PROGRESS_OPTIONS_VERSION);
    opts = &defaults;
  }
  HK__CHECK_VERSION(opts, HK_PROGRESS_OPTIONS_VERSION, hk_progress_options, "hk_progress_hook_new: opts", status);
  rc = hk_env_check(opts->env, "opts->env", status);
  if (rc != HK_OK) return rc;
  if (opts->last_step != HK_UNSET_STEPS && opts->last_step < 0)
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         HOOK_NAME ": last_step must be >= 0 or HK_UNSET_STEPS, got %" PRId64, opts->last_step);
  if (!hk_secs_is_unset(opts->every_n_secs) && !(isfinite(opts->every_n_secs) && opts->every_n_secs >= 0))
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         HOOK_NAME ": every_n_secs must be finite and >= 0, or HK_UNSET_SECS, got %g",
                         opts->every_n_secs);
  if (opts->mode != HK_PROGRESS_AUTO && opts->mode != HK_PROGRESS_TERMINAL && opts->mode != HK_PROGRESS_PLAIN)
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         HOOK_NAME ": mode %d is not HK_PROGRESS_AUTO, HK_PROGRESS_TERMINAL or HK_PROGRESS_PLAIN",
                         (int)opts->mode);

  self = hk_env_calloc(opts->env, 1, sizeof(*self));
  if (self == NULL) return hk_status_set(status, HK_RESOURCE_EXHAUSTED, HOOK_NAME ": out of memory");
  if (opts->env != NULL) {
    hk_env_copy(&self->env, opts->env);
    self->has_env = 1;
  }
  if (opts->loss != NULL && (self->loss_name = hk_env_strdup(opts->env, opts->loss)) == NULL) {
    hk_env_free(own_env(self), self);
    return hk_status_set(status, HK_RESOURCE_EXHAUSTED, HOOK_NAME ": out of memory");
  }
  if (pthread_mutex_init(&self->mu, NULL) != 0) {
    hk_env_free(own_env(self), self->loss_name);
    hk_env_free(own_env(self), self);
    return hk_status_set(status, HK_RESOURCE_EXHAUSTED, HOOK_NAME ": cannot create its mutex");
  }
  self->magic = MAGIC;
  self->stream = opts->stream;
  self->last_step = opts->last_step;
  self->every_secs_opt = opts->every_n_secs;
  self->mode_opt = opts->mode;
  self->loss = HK_NO_HANDLE;

  rc = hk_hook_new(out, &progress_vtable, self, HOOK_NAME, opts->env, status);
  if (rc != HK_OK) {
    pthread_mutex_destroy(&self->mu);
    hk_env_free(own_env(self), self->loss_name);
    hk_env_free(own_env(self), self);
    return rc;
  }
  self->hook = *out;
  hk_status_clear(status);
  return HK_OK;
}

void hk_progress_hook_log(void *hook, hk_log_level level, const char *msg) {
  const hk_hook *h = hook;
  progress *self = h != NULL && strcmp(hk_hook_name(h), HOOK_NAME) == 0 ? hk_hook_user(h) : NULL;

  if (self != NULL && self->magic == MAGIC && self->stream != NULL) {
    pthread_mutex_lock(&self->mu);
    if (self->line_open) {
      fputs("\r\033[K", self->stream);
      fflush(self->stream);
      self->line_open = 0;
    }
    hk_log_stderr(NULL, level, msg);
    pthread_mutex_unlock(&self->mu);
    return;
  }
  hk_log_stderr(NULL, level, msg);
}
