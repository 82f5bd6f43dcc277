/*
 * hooked — EarlyStoppingHook.
 *
 * Written against the public headers only. Everything is
 * allocated at construction; the callbacks allocate nothing themselves (an
 * evaluation reads the monitor and assigns the state through the raw
 * session, runs the executor caches).
 *
 * The state that must survive a restart (the best value, its step, the
 * evaluations without improvement) lives in an F64 variable the program
 * names: it is checkpointed with everything else, read back at each session
 * creation (after the restore) and assigned after each evaluation, so any
 * executor keeps it — a graph's variable, a host loop's array
 * (hk_loop_add_early_stopping registers one).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "hooked/early_stopping.h"
#include "util/common.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define HOOK_NAME "EarlyStoppingHook"

/* The state variable's layout (HK_EARLY_STOPPING_STATE_SIZE doubles). */
enum { S_EVALS = 0, S_BEST, S_BEST_STEP, S_WAIT, S_LAST, S_MODE };

typedef struct early_stopping {
  hk_hook *hook; /* the wrapper, for its env and log */
  hk_env env;    /* what the struct was allocated with */
  int has_env;
  /* Options, copied. */
  char *monitor;
  char *state_name; /* NULL: not checkpointed */
  int reported;
  int mode; /* hk_monitor_mode */
  double min_delta;
  int64_t patience;
  int64_t every; /* every_n_steps (1 when unset) */
  /* Per-session state, reset by begin(). */
  int began;
  int created; /* an after_create_session ran since begin() */
  hk_handle gs;
  hk_handle mon; /* the monitor's tensor (fetched monitors) */
  size_t state_index;
  int64_t bucket; /* floor(GS / every) at the last evaluation or creation */
  int pending;    /* a reported value waits for the next after_run */
  double pending_value;
  /* What is evaluated, kept in the state variable. */
  int64_t evaluations;
  double best;
  int64_t best_step; /* -1: none */
  int64_t wait;
  int64_t last_step; /* -1: none */
  int64_t stopped_step;
  double buf[HK_EARLY_STOPPING_STATE_SIZE]; /* the state's bytes for an assignment */
} early_stopping;

static const hk_env *own_env(const early_stopping *self) { return self->has_env ? &self->env : NULL; }

static int64_t threshold(const early_stopping *self) { return self->patience > 1 ? self->patience : 1; }

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static void reset_progress(early_stopping *self) {
  self->evaluations = 0;
  self->best = self->mode == HK_MONITOR_MAX ? -HUGE_VAL : HUGE_VAL;
  self->best_step = -1;
  self->wait = 0;
  self->last_step = -1;
  self->stopped_step = HK_UNSET_STEPS;
}

/* ---- the state variable ------------------------------------------------------- */

static int whole(double v, double lo) { return isfinite(v) && v >= lo && v == floor(v) && v < 9007199254740992.0; }

/* Adopt what the state variable holds: zero (nothing evaluated) leaves a
 * fresh state; another mode's state is dropped with a WARNING. */
static hk_code load_state(early_stopping *self, hk_raw_session *rs, hk_status *status) {
  hk_tensor t;
  double v[HK_EARLY_STOPPING_STATE_SIZE];
  hk_status inner = HK_STATUS_INIT;
  hk_code rc = hk_raw_session_read_variable(&t, rs, self->state_index, &inner);

  if (rc != HK_OK)
    return hk_status_set(status, rc, HOOK_NAME ": reading state variable '%s': %s", self->state_name, inner.message);
  if (t.dtype != HK_DTYPE_F64 || t.nbytes != sizeof v || t.data == NULL)
    return hk_status_set(status, HK_INTERNAL, HOOK_NAME ": state variable '%s' read back as %s of %zu bytes",
                         self->state_name, hk_dtype_name(t.dtype), t.nbytes);
  memcpy(v, t.data, sizeof v);
  reset_progress(self);
  if (v[S_EVALS] == 0) return HK_OK; /* fresh: zero until the first evaluation */
  if (!whole(v[S_EVALS], 1) || !whole(v[S_WAIT], 0) || v[S_WAIT] > v[S_EVALS] || !whole(v[S_BEST_STEP] + 1, 0) ||
      !whole(v[S_LAST] + 1, 0) || (v[S_MODE] != 0 && v[S_MODE] != 1) || isnan(v[S_BEST]))
    return hk_status_set(status, HK_DATA_LOSS,
                         HOOK_NAME
                         ": state variable '%s' holds no valid early-stopping state ([%g, %g, %g, %g, %g, %g])",
                         self->state_name, v[0], v[1], v[2], v[3], v[4], v[5]);
  if ((int)v[S_MODE] != self->mode) {
    hk_hook_log(self->hook, HK_LOG_WARNING,
                HOOK_NAME ": state variable '%s' holds the progress of mode %s, not %s; monitoring %s starts over.",
                self->state_name, v[S_MODE] == 1 ? "max" : "min", self->mode == HK_MONITOR_MAX ? "max" : "min",
                self->monitor);
    return HK_OK;
  }
  self->evaluations = (int64_t)v[S_EVALS];
  self->best = v[S_BEST];
  self->best_step = (int64_t)v[S_BEST_STEP];
  self->wait = (int64_t)v[S_WAIT];
  self->last_step = (int64_t)v[S_LAST];
  return HK_OK;
}

static hk_code store_state(early_stopping *self, hk_raw_session *rs, hk_status *status) {
  hk_tensor t;
  hk_status inner = HK_STATUS_INIT;
  int64_t dims[1] = {HK_EARLY_STOPPING_STATE_SIZE};
  hk_code rc;

  self->buf[S_EVALS] = (double)self->evaluations;
  self->buf[S_BEST] = self->best;
  self->buf[S_BEST_STEP] = (double)self->best_step;
  self->buf[S_WAIT] = (double)self->wait;
  self->buf[S_LAST] = (double)self->last_step;
  self->buf[S_MODE] = self->mode == HK_MONITOR_MAX ? 1 : 0;
  rc = hk_tensor_init(&t, HK_DTYPE_F64, 1, dims, self->buf, &inner);
  if (rc == HK_OK) rc = hk_raw_session_assign_variable(rs, self->state_index, &t, &inner);
  if (rc != HK_OK)
    return hk_status_set(status, rc, HOOK_NAME ": assigning state variable '%s': %s", self->state_name, inner.message);
  return HK_OK;
}

/* ---- evaluation --------------------------------------------------------------- */

static void log_stop(early_stopping *self, const char *already) {
  hk_hook_log(self->hook, HK_LOG_INFO,
              "Early stopping %sat step %" PRId64 ": %s did not improve by more than %g for %" PRId64
              " evaluations (best %g at step %" PRId64 ")%s",
              already, self->last_step, self->monitor, self->min_delta, self->wait, self->best, self->best_step,
              *already ? "; stopping before the first step." : ".");
}

static void stop_detail(const early_stopping *self, char *buf, size_t size) {
  snprintf(buf, size,
           "%s did not improve by more than %g for %" PRId64 " evaluations (best %g at step %" PRId64
           "); stopped at step %" PRId64,
           self->monitor, self->min_delta, self->wait, self->best, self->best_step, self->last_step);
}

static hk_code evaluate(early_stopping *self, hk_run_context *ctx, double value, int64_t gs, hk_status *status) {
  int improved =
      self->mode == HK_MONITOR_MAX ? value - self->min_delta > self->best : value + self->min_delta < self->best;
  if (improved) {
    self->best = value;
    self->best_step = gs;
    self->wait = 0;
  } else {
    self->wait++;
  }
  self->evaluations++;
  self->last_step = gs;
  hk_hook_log(self->hook, HK_LOG_DEBUG,
              HOOK_NAME ": %s = %g at step %" PRId64 "; best %g at step %" PRId64 ", %" PRId64
                        " evaluation(s) without improvement.",
              self->monitor, value, gs, self->best, self->best_step, self->wait);
  if (self->state_name != NULL) {
    hk_code rc = store_state(self, hk_run_context_session(ctx), status);
    if (rc != HK_OK) return rc;
  }
  if (!improved && self->wait >= threshold(self)) {
    self->stopped_step = gs;
    log_stop(self, "");
    char detail[HK_STATUS_MESSAGE_MAX];
    stop_detail(self, detail, sizeof detail);
    hk_run_context_request_stop_with_reason(ctx, HK_STOP_EARLY_STOPPING, detail);
  }
  return HK_OK;
}

/* The monitor's value now, through the raw session (after the step). */
static hk_code read_monitor(early_stopping *self, hk_raw_session *rs, double *value, hk_status *status) {
  hk_run_args args;
  hk_tensor result;
  hk_status inner = HK_STATUS_INIT;
  hk_code rc;

  memset(&args, 0, sizeof args);
  memset(&result, 0, sizeof result);
  args.fetches = &self->mon;
  args.nfetches = 1;
  rc = hk_raw_session_run(rs, &args, &result, NULL, &inner);
  if (rc != HK_OK)
    return hk_status_set(status, rc, HOOK_NAME ": reading monitor '%s': %s", self->monitor, inner.message);
  rc = hk_tensor_to_f64(value, &result, self->monitor, &inner);
  if (rc != HK_OK) return hk_status_set(status, rc, HOOK_NAME ": monitor %s", inner.message);
  return HK_OK;
}

/* ---- callbacks ---------------------------------------------------------------- */

static hk_code es_begin(void *user, hk_executor *graph, hk_status *status) {
  early_stopping *self = user;
  hk_variable_info info;
  hk_status inner = HK_STATUS_INIT;
  hk_code rc;

  self->began = 1;
  self->created = 0;
  self->pending = 0;
  self->mon = HK_NO_HANDLE;
  self->gs = HK_NO_HANDLE;
  reset_progress(self);
  rc = hk_executor_global_step(&info, NULL, graph, status);
  if (rc == HK_NOT_FOUND)
    return hk_status_set(status, HK_FAILED_PRECONDITION, "Global step should be created to use " HOOK_NAME ".");
  if (rc != HK_OK) return rc; /* a GS of the wrong dtype or shape: get_global_step's message */
  self->gs = info.tensor;
  if (!self->reported) {
    rc = hk_executor_resolve_tensor(&self->mon, graph, self->monitor, &inner);
    if (rc != HK_OK) return hk_status_set(status, rc, HOOK_NAME ": monitor '%s': %s", self->monitor, inner.message);
  }
  if (self->state_name != NULL) {
    rc = hk_executor_find_variable(graph, self->state_name, &self->state_index, &inner);
    if (rc != HK_OK)
      return hk_status_set(status, rc,
                           HOOK_NAME ": state variable '%s': %s (create it: F64, shape [%d], zero, checkpointed)",
                           self->state_name, inner.message, HK_EARLY_STOPPING_STATE_SIZE);
    rc = hk_executor_variable_info(&info, graph, self->state_index, status);
    if (rc != HK_OK) return rc;
    if (info.dtype != HK_DTYPE_F64 || info.rank != 1 || info.dims[0] != HK_EARLY_STOPPING_STATE_SIZE) {
      hk_tensor spec;
      char shape[HK_MAX_RANK * 22 + 3];
      memset(&spec, 0, sizeof spec);
      spec.dtype = info.dtype;
      spec.rank = info.rank;
      memcpy(spec.dims, info.dims, sizeof spec.dims);
      return hk_status_set(status, HK_INVALID_ARGUMENT,
                           HOOK_NAME ": state variable '%s' is %s of shape %s; it must be F64 of shape [%d]",
                           self->state_name, hk_dtype_name(info.dtype), hk_tensor_shape_str(&spec, shape, sizeof shape),
                           HK_EARLY_STOPPING_STATE_SIZE);
    }
    if (info.flags & HK_VAR_LOCAL)
      return hk_status_set(status, HK_INVALID_ARGUMENT,
                           HOOK_NAME ": state variable '%s' is local, so no checkpoint would keep it",
                           self->state_name);
  }
  return HK_OK;
}

static hk_code es_after_create_session(void *user, hk_raw_session *session, hk_coordinator *coord,
                                       hk_creation_context *ctx, hk_status *status) {
  early_stopping *self = user;
  int64_t gs;
  hk_code rc;

  (void)coord;
  rc = hk_raw_session_global_step(&gs, session, status);
  if (rc != HK_OK) return rc;
  /* A creation is no evaluation: the first one comes at the next multiple. */
  self->bucket = floor_div(gs, self->every);
  self->pending = 0;
  /* Without a state variable, what the hook counted survives re-creations
   * of its session (as a StopAtStep's last step does). */
  if (self->state_name != NULL) {
    rc = load_state(self, session, status);
    if (rc != HK_OK) return rc;
    if (self->evaluations > 0 && self->wait >= threshold(self)) {
      self->stopped_step = self->last_step;
      log_stop(self, "already reached ");
      char detail[HK_STATUS_MESSAGE_MAX];
      stop_detail(self, detail, sizeof detail);
      hk_creation_context_request_stop_with_reason(ctx, HK_STOP_EARLY_STOPPING, detail);
    }
  }
  self->created = 1;
  return HK_OK;
}

static hk_code es_before_run(void *user, hk_run_context *ctx, hk_run_request *request, hk_status *status) {
  early_stopping *self = user;

  (void)ctx;
  (void)status;
  if (self->reported) return HK_OK;
  request->fetches = &self->gs;
  request->nfetches = 1;
  return HK_OK;
}

static hk_code es_after_run(void *user, hk_run_context *ctx, const hk_run_values *values, hk_status *status) {
  early_stopping *self = user;
  hk_raw_session *rs = hk_run_context_session(ctx);
  int64_t stale, gs;
  double value;
  hk_code rc;

  if (self->reported) {
    if (!self->pending) return HK_OK;
    self->pending = 0;
    rc = hk_raw_session_global_step(&gs, rs, status);
    if (rc != HK_OK) return rc;
    return evaluate(self, ctx, self->pending_value, gs, status);
  }
  if (values == NULL || values->nresults < 1 || values->results == NULL)
    return hk_status_set(status, HK_INTERNAL, HOOK_NAME ": the global step it fetched is missing from its run values");
  rc = hk_tensor_to_i64(&stale, &values->results[0], "global_step", status);
  if (rc != HK_OK) return rc;
  /* Driven without after_create_session: the first run sets the bucket. */
  if (!self->created) {
    self->bucket = floor_div(stale, self->every);
    self->created = 1;
    return HK_OK;
  }
  /* The fetched GS is the step's start or its end (a host loop): a
   * new multiple may have been reached only when stale + 1 reaches one.
   * The raw session's GS decides. */
  if (stale == INT64_MAX || floor_div(stale + 1, self->every) <= self->bucket) return HK_OK;
  rc = hk_raw_session_global_step(&gs, rs, status);
  if (rc != HK_OK) return rc;
  if (floor_div(gs, self->every) <= self->bucket) return HK_OK;
  self->bucket = floor_div(gs, self->every);
  rc = read_monitor(self, rs, &value, status);
  if (rc != HK_OK) return rc;
  return evaluate(self, ctx, value, gs, status);
}

static hk_code es_end(void *user, hk_raw_session *session, hk_status *status) {
  early_stopping *self = user;
  (void)session;
  (void)status;
  self->began = 0;
  self->pending = 0;
  return HK_OK;
}

static void es_free(early_stopping *self) {
  hk_env copy;
  int has_env;
  if (self == NULL) return;
  has_env = self->has_env;
  if (has_env) copy = self->env;
  hk_env_free(has_env ? &copy : NULL, self->monitor);
  hk_env_free(has_env ? &copy : NULL, self->state_name);
  hk_env_free(has_env ? &copy : NULL, self);
}

static void es_destroy(void *user) { es_free(user); }

static const hk_hook_vtable early_stopping_vtable = {
    HK_HOOK_VTABLE_VERSION, es_begin, es_after_create_session, es_before_run, es_after_run, es_end, es_destroy,
};

/* ---- construction -------------------------------------------------------------- */

hk_code hk_early_stopping_options_init(hk_early_stopping_options *opts, uint32_t version) {
  return HK__STRUCT_INIT(opts, version, hk_early_stopping_options, HK_EARLY_STOPPING_OPTIONS_INIT);
}

static hk_code validate(const hk_early_stopping_options *o, hk_status *status) {
  hk_code rc;
  if (o == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "opts is NULL: " HOOK_NAME " needs a monitor");
  HK__CHECK_VERSION(o, HK_EARLY_STOPPING_OPTIONS_VERSION, hk_early_stopping_options, "opts", status);
  rc = hk_env_check(o->env, "opts->env", status);
  if (rc != HK_OK) return rc;
  if (o->monitor == NULL || o->monitor[0] == '\0')
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         HOOK_NAME ": monitor is required (a tensor name, or with reported the value's name)");
  if (o->mode != HK_MONITOR_MIN && o->mode != HK_MONITOR_MAX)
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         HOOK_NAME ": mode %d is neither HK_MONITOR_MIN nor HK_MONITOR_MAX", (int)o->mode);
  if (!(o->min_delta >= 0 && isfinite(o->min_delta)))
    return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": min_delta must be finite and >= 0, got %g",
                         o->min_delta);
  if (o->patience < 0)
    return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": patience must be >= 0, got %" PRId64, o->patience);
  if (o->every_n_steps != HK_UNSET_STEPS && o->reported)
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         HOOK_NAME
                         ": every_n_steps applies to a fetched monitor; with reported, each value reported "
                         "is one evaluation");
  if (o->every_n_steps != HK_UNSET_STEPS && o->every_n_steps < 1)
    return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": every_n_steps must be >= 1, got %" PRId64,
                         o->every_n_steps);
  if (o->state != NULL && o->state[0] == '\0')
    return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": state is an empty name");
  return HK_OK;
}

hk_code hk_early_stopping_hook_new(hk_hook **out, const hk_early_stopping_options *opts, hk_status *status) {
  early_stopping *self;
  hk_code rc;

  if (out == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "out: must not be NULL");
  *out = NULL;
  rc = validate(opts, status);
  if (rc != HK_OK) return rc;
  self = hk_env_calloc(opts->env, 1, sizeof(*self));
  if (self == NULL) return hk_status_set(status, HK_RESOURCE_EXHAUSTED, HOOK_NAME ": out of memory");
  if (opts->env != NULL) {
    hk_env_copy(&self->env, opts->env);
    self->has_env = 1;
  }
  self->monitor = hk_env_strdup(own_env(self), opts->monitor);
  if (self->monitor == NULL ||
      (opts->state != NULL && (self->state_name = hk_env_strdup(own_env(self), opts->state)) == NULL)) {
    es_free(self);
    return hk_status_set(status, HK_RESOURCE_EXHAUSTED, HOOK_NAME ": out of memory");
  }
  self->reported = opts->reported != 0;
  self->mode = opts->mode;
  self->min_delta = opts->min_delta;
  self->patience = opts->patience;
  self->every = opts->every_n_steps == HK_UNSET_STEPS ? 1 : opts->every_n_steps;
  reset_progress(self);
  rc = hk_hook_new(out, &early_stopping_vtable, self, HOOK_NAME, opts->env, status);
  if (rc != HK_OK) {
    es_free(self);
    return rc;
  }
  self->hook = *out;
  hk_status_clear(status);
  return HK_OK;
}

/* Ours: a hook made with this file's vtable, not one that only has its name. */
static early_stopping *ours(const hk_hook *hook) { return hk_hook_user_if(hook, &early_stopping_vtable); }

hk_code hk_early_stopping_report(hk_hook *hook, double value, hk_status *status) {
  early_stopping *self;
  if (hook == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_early_stopping_report: hook is NULL");
  self = ours(hook);
  if (self == NULL)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_early_stopping_report: hook '%s' is not an " HOOK_NAME,
                         hk_hook_name(hook));
  if (!self->reported)
    return hk_status_set(status, HK_FAILED_PRECONDITION,
                         "hk_early_stopping_report: this " HOOK_NAME
                         " fetches its monitor '%s' itself (set "
                         "opts.reported to report values)",
                         self->monitor);
  if (!self->began)
    return hk_status_set(status, HK_FAILED_PRECONDITION,
                         "hk_early_stopping_report: the " HOOK_NAME " of '%s' serves no session", self->monitor);
  self->pending = 1;
  self->pending_value = value;
  return HK_OK;
}

hk_code hk_early_stopping_hook_info(hk_early_stopping_info *out, const hk_hook *hook, hk_status *status) {
  const early_stopping *self;
  if (out != NULL) memset(out, 0, sizeof *out);
  if (hook == NULL || out == NULL)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_early_stopping_hook_info: %s is NULL",
                         hook == NULL ? "hook" : "out");
  self = ours(hook);
  if (self == NULL)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_early_stopping_hook_info: hook '%s' is not an " HOOK_NAME,
                         hk_hook_name(hook));
  out->evaluations = self->evaluations;
  out->best = self->best;
  out->best_step = self->best_step < 0 ? HK_UNSET_STEPS : self->best_step;
  out->wait = self->wait;
  out->stopped_step = self->stopped_step;
  out->state = self->state_name;
  return HK_OK;
}
