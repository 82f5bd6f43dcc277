/*
 * hooked — LearningRateHook: a schedule of the global step, reduced on a
 * plateau of a monitored value, written into the variable the program's
 * optimizer reads before every step (hooked/learning_rate.h).
 *
 * Written against the public headers only, as a third party would write
 * it. Everything is allocated at construction (and the shared summary
 * writer at begin()); a step reads the global step and assigns the rate
 * through the raw session, which allocates nothing in steady state.
 *
 * The rate is a pure function of the global step and of the plateau's
 * progress. That progress (the best value, the counts, the cooldown, the
 * reductions' factor) lives in an F64 variable the program names: it is
 * checkpointed with everything else, read back at each session creation
 * (after the restore) and assigned after each evaluation, so a restored run
 * writes the rates an uninterrupted one would. The rate variable itself
 * needs no checkpoint: every step writes it before it runs.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "hooks/learning_rate_internal.h"
#include "hooked/summary.h"
#include "hooked/timer.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#define HOOK_NAME "LearningRateHook"
#define DEFAULT_SUMMARY_STEPS 100
#define SUMMARY_TAG "learning_rate"
#define PI 3.14159265358979323846

/* The state variable's layout (HK_LEARNING_RATE_STATE_SIZE doubles). */
enum { S_EVALS = 0, S_BEST, S_BEST_STEP, S_WAIT, S_COOLDOWN, S_SCALE, S_REDUCTIONS, S_MODE };

typedef struct learning_rate {
  hk_hook *hook; /* the wrapper, for its env and log */
  hk_env env;    /* what the struct was allocated with */
  int has_env;
  /* Options, copied. */
  char *variable;
  hk_learning_rate_schedule schedule;
  double rate;
  int64_t *boundaries;
  double *values;
  size_t nboundaries;
  int64_t decay_steps;
  double decay_rate;
  int staircase;
  int64_t warmup_steps;
  double warmup_from, alpha;
  char *monitor; /* NULL: no reduction on plateau */
  int reported;
  int mode; /* hk_monitor_mode */
  double factor, min_delta, min_rate;
  int64_t patience, cooldown;
  int64_t every;     /* every_n_steps (1 when unset) */
  char *state_name;  /* NULL: not checkpointed */
  char *summary_dir; /* NULL: no summary */
  int64_t summary_steps;
  /* Per-session, set by begin(). */
  int began;
  int created; /* an after_create_session ran since begin() */
  size_t gs_index;
  size_t var_index;
  hk_tensor var; /* the rate variable's dtype and shape; data points at `value` */
  union {
    float f32;
    double f64;
  } value;
  hk_handle mon; /* the monitor's tensor (fetched monitors) */
  size_t state_index;
  hk_summary_writer *writer; /* borrowed from the session until its close */
  hk_timer timer;
  int64_t bucket; /* floor(GS / every) at the last evaluation or creation */
  int pending;    /* a reported value waits for the next after_run */
  double pending_value;
  int in_step; /* before_run wrote the rate of the run in progress */
  /* What the hook knows. */
  double current; /* the rate last written */
  int64_t current_step;
  int64_t evaluations;
  double best;
  int64_t best_step; /* -1: none */
  int64_t wait;
  int64_t cooldown_left;
  double scale;
  int64_t reductions;
  double buf[HK_LEARNING_RATE_STATE_SIZE]; /* the state's bytes for an assignment */
} learning_rate;

static const hk_env *own_env(const learning_rate *self) { return self->has_env ? &self->env : NULL; }

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static void reset_progress(learning_rate *self) {
  self->evaluations = 0;
  self->best = self->mode == HK_MONITOR_MAX ? -HUGE_VAL : HUGE_VAL;
  self->best_step = -1;
  self->wait = 0;
  self->cooldown_left = 0;
  self->scale = 1.0;
  self->reductions = 0;
}

/* ---- the schedule -------------------------------------------------------------- */

static double piecewise(const learning_rate *self, int64_t k) {
  size_t lo = 0, hi = self->nboundaries; /* the first boundary >= k, else n */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (self->boundaries[mid] < k)
      lo = mid + 1;
    else
      hi = mid;
  }
  return self->values[lo];
}

static double cosine(const learning_rate *self, int64_t k) {
  int64_t s;
  if (k < 0) k = 0;
  if (k < self->warmup_steps)
    return self->warmup_from + (self->rate - self->warmup_from) * (double)k / (double)self->warmup_steps;
  s = k - self->warmup_steps;
  if (s > self->decay_steps) s = self->decay_steps;
  return self->rate *
         ((1.0 - self->alpha) * 0.5 * (1.0 + cos(PI * (double)s / (double)self->decay_steps)) + self->alpha);
}

static double schedule_at(const learning_rate *self, int64_t k) {
  switch (self->schedule) {
    case HK_LEARNING_RATE_PIECEWISE: return piecewise(self, k);
    case HK_LEARNING_RATE_EXPONENTIAL: {
      double p = self->staircase ? (double)floor_div(k, self->decay_steps) : (double)k / (double)self->decay_steps;
      return self->rate * pow(self->decay_rate, p);
    }
    case HK_LEARNING_RATE_COSINE: return cosine(self, k);
    case HK_LEARNING_RATE_CONSTANT:
    default: return self->rate;
  }
}

/* The rate of step k: the schedule, times the reductions, floored. */
static double rate_at(const learning_rate *self, int64_t k) {
  double r = schedule_at(self, k);
  if (self->monitor == NULL) return r;
  r *= self->scale;
  return r < self->min_rate ? self->min_rate : r;
}

/* ---- the state variable ---------------------------------------------------------- */

static int whole(double v, double lo) { return isfinite(v) && v >= lo && v == floor(v) && v < 9007199254740992.0; }

/* Adopt what the state variable holds: zero (nothing evaluated) leaves a
 * fresh state; another mode's state is dropped with a WARNING. */
static hk_code load_state(learning_rate *self, hk_raw_session *rs, hk_status *status) {
  hk_tensor t;
  double v[HK_LEARNING_RATE_STATE_SIZE];
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
  if (!whole(v[S_EVALS], 1) || !whole(v[S_WAIT], 0) || !whole(v[S_COOLDOWN], 0) || !whole(v[S_BEST_STEP] + 1, 0) ||
      !whole(v[S_REDUCTIONS], 0) || !(v[S_SCALE] >= 0 && v[S_SCALE] <= 1) || (v[S_MODE] != 0 && v[S_MODE] != 1) ||
      isnan(v[S_BEST]))
    return hk_status_set(status, HK_DATA_LOSS,
                         HOOK_NAME
                         ": state variable '%s' holds no valid learning-rate state ([%g, %g, %g, %g, %g, %g, "
                         "%g, %g])",
                         self->state_name, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
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
  self->cooldown_left = (int64_t)v[S_COOLDOWN];
  self->scale = v[S_SCALE];
  self->reductions = (int64_t)v[S_REDUCTIONS];
  return HK_OK;
}

static hk_code store_state(learning_rate *self, hk_raw_session *rs, hk_status *status) {
  hk_tensor t;
  hk_status inner = HK_STATUS_INIT;
  int64_t dims[1] = {HK_LEARNING_RATE_STATE_SIZE};
  hk_code rc;

  self->buf[S_EVALS] = (double)self->evaluations;
  self->buf[S_BEST] = self->best;
  self->buf[S_BEST_STEP] = (double)self->best_step;
  self->buf[S_WAIT] = (double)self->wait;
  self->buf[S_COOLDOWN] = (double)self->cooldown_left;
  self->buf[S_SCALE] = self->scale;
  self->buf[S_REDUCTIONS] = (double)self->reductions;
  self->buf[S_MODE] = self->mode == HK_MONITOR_MAX ? 1 : 0;
  rc = hk_tensor_init(&t, HK_DTYPE_F64, 1, dims, self->buf, &inner);
  if (rc == HK_OK) rc = hk_raw_session_assign_variable(rs, self->state_index, &t, &inner);
  if (rc != HK_OK)
    return hk_status_set(status, rc, HOOK_NAME ": assigning state variable '%s': %s", self->state_name, inner.message);
  return HK_OK;
}

/* ---- evaluation ----------------------------------------------------------------- */

/* Keras' ReduceLROnPlateau.on_epoch_end, with the rate of the step just run
 * as the optimizer's current rate. */
static hk_code evaluate(learning_rate *self, hk_raw_session *rs, double value, int64_t gs, hk_status *status) {
  int improved =
      self->mode == HK_MONITOR_MAX ? value - self->min_delta > self->best : value + self->min_delta < self->best;
  if (self->cooldown_left > 0) {
    self->cooldown_left--;
    self->wait = 0;
  }
  if (improved) {
    self->best = value;
    self->best_step = gs;
    self->wait = 0;
  } else if (self->cooldown_left == 0) {
    self->wait++;
    if (self->wait >= self->patience && self->current > self->min_rate) {
      int64_t waited = self->wait;
      self->scale *= self->factor;
      self->reductions++;
      self->cooldown_left = self->cooldown;
      self->wait = 0;
      hk_hook_log(self->hook, HK_LOG_INFO,
                  HOOK_NAME ": %s did not improve for %" PRId64
                            " evaluations; learning rate reduced to %g from step "
                            "%" PRId64 ".",
                  self->monitor, waited, rate_at(self, gs), gs);
    }
  }
  self->evaluations++;
  hk_hook_log(self->hook, HK_LOG_DEBUG,
              HOOK_NAME ": %s = %g at step %" PRId64 "; best %g at step %" PRId64 ", %" PRId64
                        " evaluation(s) without improvement, %" PRId64 " of cooldown left.",
              self->monitor, value, gs, self->best, self->best_step, self->wait, self->cooldown_left);
  return self->state_name != NULL ? store_state(self, rs, status) : HK_OK;
}

/* The monitor's value now, through the raw session (after the step). */
static hk_code read_monitor(learning_rate *self, hk_raw_session *rs, double *value, hk_status *status) {
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

/* The global step through its variable, which costs no run; an executor
 * that cannot read variables answers through a run. */
static hk_code read_global_step(learning_rate *self, hk_raw_session *rs, int64_t *gs, hk_status *status) {
  hk_tensor t;
  hk_code rc = hk_raw_session_read_variable(&t, rs, self->gs_index, status);
  if (rc == HK_UNIMPLEMENTED) return hk_raw_session_global_step(gs, rs, status);
  if (rc != HK_OK) return rc;
  return hk_tensor_to_i64(gs, &t, "global_step", status);
}

/* ---- callbacks -------------------------------------------------------------------- */

/* The variable named `name` of `dtype` and shape [size], checkpointed. */
static hk_code find_state(learning_rate *self, hk_executor *graph, hk_status *status) {
  hk_variable_info info;
  hk_status inner = HK_STATUS_INIT;
  hk_code rc = hk_executor_find_variable(graph, self->state_name, &self->state_index, &inner);
  if (rc != HK_OK)
    return hk_status_set(status, rc,
                         HOOK_NAME ": state variable '%s': %s (create it: F64, shape [%d], zero, checkpointed)",
                         self->state_name, inner.message, HK_LEARNING_RATE_STATE_SIZE);
  rc = hk_executor_variable_info(&info, graph, self->state_index, status);
  if (rc != HK_OK) return rc;
  if (info.dtype != HK_DTYPE_F64 || info.rank != 1 || info.dims[0] != HK_LEARNING_RATE_STATE_SIZE) {
    hk_tensor spec;
    char shape[HK_MAX_RANK * 22 + 3];
    memset(&spec, 0, sizeof spec);
    spec.dtype = info.dtype;
    spec.rank = info.rank;
    memcpy(spec.dims, info.dims, sizeof spec.dims);
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         HOOK_NAME ": state variable '%s' is %s of shape %s; it must be F64 of shape [%d]",
                         self->state_name, hk_dtype_name(info.dtype), hk_tensor_shape_str(&spec, shape, sizeof shape),
                         HK_LEARNING_RATE_STATE_SIZE);
  }
  if (info.flags & HK_VAR_LOCAL)
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         HOOK_NAME ": state variable '%s' is local, so no checkpoint would keep it", self->state_name);
  return HK_OK;
}

/* The rate variable: one F32 or F64 element; `var` takes its spec. */
static hk_code find_variable(learning_rate *self, hk_executor *graph, hk_status *status) {
  hk_variable_info info;
  hk_status inner = HK_STATUS_INIT;
  hk_code rc = hk_executor_find_variable(graph, self->variable, &self->var_index, &inner);
  int64_t n = 1;
  if (rc != HK_OK)
    return hk_status_set(status, rc, HOOK_NAME ": variable '%s': %s (the rate's variable: one F32 or F64 element)",
                         self->variable, inner.message);
  rc = hk_executor_variable_info(&info, graph, self->var_index, status);
  if (rc != HK_OK) return rc;
  for (int32_t i = 0; i < info.rank; i++) n *= info.dims[i];
  if ((info.dtype != HK_DTYPE_F32 && info.dtype != HK_DTYPE_F64) || n != 1)
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         HOOK_NAME ": variable '%s' is %s with %" PRId64
                                   " elements; the rate needs one F32 or F64 "
                                   "element",
                         self->variable, hk_dtype_name(info.dtype), n);
  rc = hk_tensor_init(&self->var, info.dtype, info.rank, info.dims, &self->value, status);
  return rc;
}

static hk_code lr_begin(void *user, hk_executor *graph, hk_status *status) {
  learning_rate *self = user;
  hk_variable_info info;
  hk_status inner = HK_STATUS_INIT;
  hk_code rc;

  self->began = 1;
  self->created = 0;
  self->pending = 0;
  self->in_step = 0;
  self->writer = NULL;
  self->mon = HK_NO_HANDLE;
  self->current = 0;
  self->current_step = HK_UNSET_STEPS;
  reset_progress(self);
  rc = hk_executor_global_step(&info, &self->gs_index, graph, NULL);
  if (rc == HK_NOT_FOUND)
    return hk_status_set(status, HK_FAILED_PRECONDITION, "Global step should be created to use " HOOK_NAME ".");
  if (rc != HK_OK) return hk_executor_global_step(&info, &self->gs_index, graph, status); /* its message */
  rc = find_variable(self, graph, status);
  if (rc != HK_OK) return rc;
  if (self->monitor != NULL && !self->reported) {
    rc = hk_executor_resolve_tensor(&self->mon, graph, self->monitor, &inner);
    if (rc != HK_OK) return hk_status_set(status, rc, HOOK_NAME ": monitor '%s': %s", self->monitor, inner.message);
  }
  if (self->state_name != NULL) {
    rc = find_state(self, graph, status);
    if (rc != HK_OK) return rc;
  }
  if (self->summary_dir != NULL) {
    rc = hk_timer_init(&self->timer, HK_UNSET_SECS, self->summary_steps, NULL, "summary_steps", NULL, status);
    if (rc != HK_OK) return rc;
    rc = hk_summary_writer_from_hook(&self->writer, self->hook, self->summary_dir, &inner);
    if (rc != HK_OK)
      return hk_status_set(status, rc, HOOK_NAME ": summary_dir '%s': %s", self->summary_dir, inner.message);
  }
  return HK_OK;
}

static hk_code lr_after_create_session(void *user, hk_raw_session *session, hk_coordinator *coord,
                                       hk_creation_context *ctx, hk_status *status) {
  learning_rate *self = user;
  int64_t gs;
  hk_code rc;

  (void)coord;
  (void)ctx;
  rc = read_global_step(self, session, &gs, status);
  if (rc != HK_OK) return rc;
  /* A creation is no evaluation: the first one comes at the next multiple. */
  self->bucket = floor_div(gs, self->every);
  self->pending = 0;
  self->in_step = 0;
  if (self->summary_dir != NULL) hk_timer_reset(&self->timer);
  /* Without a state variable, the plateau's progress survives re-creations
   * of its session in the hook. */
  if (self->state_name != NULL) {
    rc = load_state(self, session, status);
    if (rc != HK_OK) return rc;
  }
  self->created = 1;
  return HK_OK;
}

static hk_code lr_before_run(void *user, hk_run_context *ctx, hk_run_request *request, hk_status *status) {
  learning_rate *self = user;
  hk_raw_session *rs = hk_run_context_session(ctx);
  hk_status inner;
  int64_t k;
  double r;
  hk_code rc;

  (void)request;
  inner.code = HK_OK;
  inner.message[0] = '\0';
  self->in_step = 0;
  rc = read_global_step(self, rs, &k, status);
  if (rc != HK_OK) return rc;
  r = rate_at(self, k);
  if (self->var.dtype == HK_DTYPE_F32)
    self->value.f32 = (float)r;
  else
    self->value.f64 = r;
  rc = hk_raw_session_assign_variable(rs, self->var_index, &self->var, &inner);
  if (rc != HK_OK)
    return hk_status_set(status, rc, HOOK_NAME ": assigning variable '%s': %s", self->variable, inner.message);
  self->current = r;
  self->current_step = k;
  self->in_step = 1;
  return HK_OK;
}

static hk_code lr_after_run(void *user, hk_run_context *ctx, const hk_run_values *values, hk_status *status) {
  learning_rate *self = user;
  hk_raw_session *rs = hk_run_context_session(ctx);
  int64_t k, gs;
  double value;
  hk_code rc;

  (void)values;
  if (!self->in_step) return HK_OK;
  self->in_step = 0;
  k = self->current_step;
  if (self->writer != NULL && hk_timer_should_trigger(&self->timer, k)) {
    hk_timer_update(&self->timer, k, NULL, NULL);
    rc = hk_summary_writer_scalar(self->writer, SUMMARY_TAG, k, self->current, status);
    if (rc != HK_OK) return rc;
  }
  if (self->monitor == NULL) return HK_OK;
  if (self->reported) {
    if (!self->pending) return HK_OK;
    self->pending = 0;
    rc = read_global_step(self, rs, &gs, status);
    if (rc != HK_OK) return rc;
    return evaluate(self, rs, self->pending_value, gs, status);
  }
  /* Driven without after_create_session: the first run sets the bucket. */
  if (!self->created) {
    self->bucket = floor_div(k, self->every);
    self->created = 1;
  }
  /* A run moves the global step from k on: a new multiple may have been
   * reached only when k + 1 reaches one. The global step now decides. */
  if (k == INT64_MAX || floor_div(k + 1, self->every) <= self->bucket) return HK_OK;
  rc = read_global_step(self, rs, &gs, status);
  if (rc != HK_OK) return rc;
  if (floor_div(gs, self->every) <= self->bucket) return HK_OK;
  self->bucket = floor_div(gs, self->every);
  rc = read_monitor(self, rs, &value, status);
  if (rc != HK_OK) return rc;
  return evaluate(self, rs, value, gs, status);
}

static hk_code lr_end(void *user, hk_raw_session *session, hk_status *status) {
  learning_rate *self = user;
  (void)session;
  (void)status;
  self->began = 0;
  self->pending = 0;
  self->in_step = 0;
  self->writer = NULL; /* the session's: it closes it */
  return HK_OK;
}

static void lr_free(learning_rate *self) {
  hk_env copy;
  const hk_env *env;
  if (self == NULL) return;
  if (self->has_env) copy = self->env;
  env = self->has_env ? &copy : NULL;
  hk_env_free(env, self->variable);
  hk_env_free(env, self->boundaries);
  hk_env_free(env, self->values);
  hk_env_free(env, self->monitor);
  hk_env_free(env, self->state_name);
  hk_env_free(env, self->summary_dir);
  hk_env_free(env, self);
}

static void lr_destroy(void *user) { lr_free(user); }

static const hk_hook_vtable learning_rate_vtable = {
    HK_HOOK_VTABLE_VERSION, lr_begin, lr_after_create_session, lr_before_run, lr_after_run, lr_end, lr_destroy,
};

/* ---- construction ---------------------------------------------------------------- */

static char *dup_or_null(learning_rate *self, const char *s, int *oom) {
  char *d;
  if (s == NULL) return NULL;
  d = hk_env_strdup(own_env(self), s);
  if (d == NULL) *oom = 1;
  return d;
}

/* Copy what the options point to; nonzero when out of memory. */
static int copy_options(learning_rate *self, const hk_learning_rate_options *o) {
  int oom = 0;
  self->variable = dup_or_null(self, o->variable, &oom);
  self->monitor = dup_or_null(self, o->monitor, &oom);
  self->state_name = dup_or_null(self, o->state, &oom);
  self->summary_dir = dup_or_null(self, o->summary_dir, &oom);
  if (o->schedule == HK_LEARNING_RATE_PIECEWISE && !oom) {
    self->boundaries = hk_env_calloc(own_env(self), o->nboundaries, sizeof *self->boundaries);
    self->values = hk_env_calloc(own_env(self), o->nboundaries + 1, sizeof *self->values);
    if (self->boundaries == NULL || self->values == NULL) return 1;
    memcpy(self->boundaries, o->boundaries, o->nboundaries * sizeof *self->boundaries);
    memcpy(self->values, o->values, (o->nboundaries + 1) * sizeof *self->values);
    self->nboundaries = o->nboundaries;
  }
  self->schedule = o->schedule;
  self->rate = o->rate;
  self->decay_steps = o->decay_steps;
  self->decay_rate = o->decay_rate;
  self->staircase = o->staircase != 0;
  self->warmup_steps = o->warmup_steps;
  self->warmup_from = o->warmup_from;
  self->alpha = o->alpha;
  self->reported = o->reported != 0;
  self->mode = o->mode;
  self->factor = o->factor;
  self->min_delta = o->min_delta;
  self->min_rate = o->min_rate;
  self->patience = o->patience;
  self->cooldown = o->cooldown;
  self->every = o->every_n_steps == HK_UNSET_STEPS ? 1 : o->every_n_steps;
  self->summary_steps = o->summary_steps == HK_UNSET_STEPS ? DEFAULT_SUMMARY_STEPS : o->summary_steps;
  return oom;
}

hk_code hk_learning_rate_hook_new(hk_hook **out, const hk_learning_rate_options *opts, hk_status *status) {
  learning_rate *self;
  hk_code rc;

  if (out == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_learning_rate_hook_new: out is NULL");
  *out = NULL;
  rc = hk__learning_rate_check_options(opts, status);
  if (rc != HK_OK) return rc;
  self = hk_env_calloc(opts->env, 1, sizeof(*self));
  if (self == NULL) return hk_status_set(status, HK_RESOURCE_EXHAUSTED, HOOK_NAME ": out of memory");
  if (opts->env != NULL) {
    hk_env_copy(&self->env, opts->env);
    self->has_env = 1;
  }
  if (copy_options(self, opts) != 0) {
    lr_free(self);
    return hk_status_set(status, HK_RESOURCE_EXHAUSTED, HOOK_NAME ": out of memory");
  }
  reset_progress(self);
  self->current_step = HK_UNSET_STEPS;
  rc = hk_hook_new(out, &learning_rate_vtable, self, HOOK_NAME, opts->env, status);
  if (rc != HK_OK) {
    lr_free(self);
    return rc;
  }
  self->hook = *out;
  hk_status_clear(status);
  return HK_OK;
}

/* Ours: a hook made with this file's vtable, not one that only has its name. */
static learning_rate *ours(const hk_hook *hook) { return hk_hook_user_if(hook, &learning_rate_vtable); }

hk_code hk_learning_rate_report(hk_hook *hook, double value, hk_status *status) {
  learning_rate *self;
  if (hook == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_learning_rate_report: hook is NULL");
  self = ours(hook);
  if (self == NULL)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_learning_rate_report: hook '%s' is not a " HOOK_NAME,
                         hk_hook_name(hook));
  if (self->monitor == NULL)
    return hk_status_set(status, HK_FAILED_PRECONDITION,
                         "hk_learning_rate_report: this " HOOK_NAME " has no monitor (no reduce-on-plateau)");
  if (!self->reported)
    return hk_status_set(status, HK_FAILED_PRECONDITION,
                         "hk_learning_rate_report: this " HOOK_NAME
                         " fetches its monitor '%s' itself (set "
                         "opts.reported to report values)",
                         self->monitor);
  if (!self->began)
    return hk_status_set(status, HK_FAILED_PRECONDITION,
                         "hk_learning_rate_report: the " HOOK_NAME " of '%s' serves no session", self->monitor);
  self->pending = 1;
  self->pending_value = value;
  return HK_OK;
}

hk_code hk_learning_rate_hook_info(hk_learning_rate_info *out, const hk_hook *hook, hk_status *status) {
  const learning_rate *self;
  if (out != NULL) memset(out, 0, sizeof *out);
  if (hook == NULL || out == NULL)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_learning_rate_hook_info: %s is NULL",
                         hook == NULL ? "hook" : "out");
  self = ours(hook);
  if (self == NULL)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_learning_rate_hook_info: hook '%s' is not a " HOOK_NAME,
                         hk_hook_name(hook));
  out->rate = self->current;
  out->rate_step = self->current_step;
  out->scale = self->scale;
  out->reductions = self->reductions;
  out->evaluations = self->evaluations;
  out->best = self->best;
  out->best_step = self->best_step < 0 ? HK_UNSET_STEPS : self->best_step;
  out->wait = self->wait;
  out->cooldown = self->cooldown_left;
  out->state = self->state_name;
  return HK_OK;
}
