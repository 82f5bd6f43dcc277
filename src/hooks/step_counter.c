/*
 * hooked — StepCounterHook (contract group N).
 *
 * Fetches the global step in every before_run; after a run whose stale step
 * (plus steps_per_run) may trigger its timer, reads the step through the raw
 * session and, when the timer triggers there, logs and writes the rate
 * "<GS name>/sec". Its summaries go to the writer the session shares
 * for output_dir, or to a writer the program gives.
 *
 * Everything a run needs is made at construction or in begin(): a run on
 * which the timer does not trigger allocates nothing; one that writes
 * may grow the shared writer's record buffer.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "core/core.h"
#include "events/events.h"
#include "util/fs.h"
#include "util/common.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#define DEFAULT_EVERY_N_STEPS 100
#define MAX_STALL_WARNINGS 5 /* "global step has not been increased", as TF 2.x's log_first_n */

typedef struct step_counter {
  hk_hook *hook;
  hk_env env; /* what the struct was allocated with */
  int has_env;
  /* options */
  int64_t every_n_steps; /* resolved: HK_UNSET_STEPS when seconds are used */
  double every_n_secs;
  char *output_dir;         /* NULL: none */
  hk_summary_writer *given; /* borrowed */
  int64_t steps_per_run;
  double log_every_secs; /* HK_UNSET_SECS: log every rate; 0: never */
  int stall_warnings;    /* per hook */
  /* per session, set by begin() */
  hk_env senv; /* the env in force at begin(): clock, log */
  hk_timer timer;
  hk_timer log_timer; /* with log_every_secs > 0 */
  hk_handle gs;
  char *tag; /* "<GS name>/sec" (senv allocator) */
  hk__event_writer *events;
  int owns_events; /* driven outside a session: a writer of our own */
  int has_last;
  int64_t last_stale;
} step_counter;

static const hk_env *own_env(const step_counter *self) { return self->has_env ? &self->env : NULL; }

static hk_summary_writer *writer(const step_counter *self) {
  return self->given ? self->given : (self->events ? hk__summary_writer_of(self->events) : NULL);
}

/* Drop what a session lent or begin() made. */
static void release_session(step_counter *self) {
  hk__hook_event_writer_release(self->hook, "StepCounterHook", &self->events, &self->owns_events);
  hk_env_free(&self->senv, self->tag);
  self->tag = NULL;
}

static void sc_detach(void *user) { release_session(user); }

static hk_code sc_begin(void *user, hk_executor *graph, hk_status *status) {
  step_counter *self = user;
  hk_variable_info info;
  const char *name;
  size_t n;
  hk_code rc;

  release_session(self);
  hk_env_copy(&self->senv, hk_hook_env(self->hook));
  self->gs = HK_NO_HANDLE;
  self->has_last = 0;
  rc = hk_timer_init(&self->timer, self->every_n_secs, self->every_n_steps, "every_n_secs", "every_n_steps",
                     &self->senv.clock, status);
  if (rc != HK_OK) return rc;
  if (self->log_every_secs > 0) {
    rc = hk_timer_init(&self->log_timer, self->log_every_secs, HK_UNSET_STEPS, "log_every_secs", "every_n_steps",
                       &self->senv.clock, status);
    if (rc != HK_OK) return rc;
  }
  rc = hk_executor_global_step(&info, NULL, graph, status);
  if (rc == HK_NOT_FOUND)
    return hk_status_set(status, HK_FAILED_PRECONDITION, "Global step should be created to use StepCounterHook.");
  if (rc != HK_OK) return rc; /* a GS that is not an integer scalar */
  self->gs = info.tensor;
  /* The GS variable's name without ":0", then "/sec". */
  name = info.name ? info.name : "global_step";
  n = strlen(name);
  if (n >= 2 && strcmp(name + n - 2, ":0") == 0) n -= 2;
  if (n + 4 > HK_SUMMARY_TAG_MAX)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "StepCounterHook: the global step's name is too long for a tag");
  self->tag = hk_env_alloc(&self->senv, n + 5);
  if (!self->tag) return hk_status_set(status, HK_RESOURCE_EXHAUSTED, "StepCounterHook: out of memory");
  memcpy(self->tag, name, n);
  memcpy(self->tag + n, "/sec", 5);
  if (!self->given && self->output_dir) {
    rc = hk__mkdirs(&self->senv, self->output_dir, status); /* output_dir, with any missing parents */
    if (rc != HK_OK) return rc;
    rc = hk__hook_event_writer(self->hook, self->output_dir, &self->events, &self->owns_events, status);
    if (rc != HK_OK) return rc;
  }
  return HK_OK;
}

static hk_code sc_after_create_session(void *user, hk_raw_session *session, hk_coordinator *coord,
                                       hk_creation_context *ctx, hk_status *status) {
  step_counter *self = user;
  (void)session;
  (void)coord;
  (void)ctx;
  (void)status;
  /* A new raw session (a recovery may have rolled GS back): measure anew. */
  hk_timer_reset(&self->timer);
  self->has_last = 0;
  return HK_OK;
}

static hk_code sc_before_run(void *user, hk_run_context *ctx, hk_run_request *request, hk_status *status) {
  step_counter *self = user;
  (void)ctx;
  (void)status;
  request->fetches = &self->gs;
  request->nfetches = 1;
  return HK_OK;
}

/* The log line is paced apart from the summary when log_every_secs says so. */
static int should_log(step_counter *self, int64_t gs) {
  if (hk_secs_is_unset(self->log_every_secs)) return 1;
  if (!(self->log_every_secs > 0)) return 0;
  if (!hk_timer_should_trigger(&self->log_timer, gs)) return 0;
  double secs;
  int64_t steps;
  hk_timer_update(&self->log_timer, gs, &secs, &steps);
  return 1;
}

static hk_code sc_after_run(void *user, hk_run_context *ctx, const hk_run_values *values, hk_status *status) {
  step_counter *self = user;
  int64_t stale, gs, next;
  hk_code rc;

  if (values == NULL || values->nresults < 1 || values->results == NULL)
    return hk_status_set(status, HK_INTERNAL,
                         "StepCounterHook: the global step it fetched is missing from its run values");
  rc = hk_tensor_to_i64(&stale, &values->results[0], "global_step", status);
  if (rc != HK_OK) return rc;
  next = stale > INT64_MAX - self->steps_per_run ? INT64_MAX : stale + self->steps_per_run;
  if (hk_timer_should_trigger(&self->timer, next)) {
    /* The stale value only says a trigger is possible; the real GS
     * after the run decides. */
    rc = hk_raw_session_global_step(&gs, hk_run_context_session(ctx), status);
    if (rc != HK_OK) return rc;
    if (hk_timer_should_trigger(&self->timer, gs)) {
      double secs = 0;
      int64_t steps = 0;
      if (hk_timer_update(&self->timer, gs, &secs, &steps) && secs > 0) {
        double rate = (double)steps / secs;
        hk_summary_writer *w = writer(self);
        if (w) {
          rc = hk_summary_writer_scalar(w, self->tag, gs, rate, status);
          if (rc != HK_OK) return rc;
        }
        if (should_log(self, gs)) hk_hook_log(self->hook, HK_LOG_INFO, "%s: %g", self->tag, rate);
      }
    }
  }
  if (self->has_last && stale == self->last_stale && self->stall_warnings < MAX_STALL_WARNINGS) {
    self->stall_warnings++;
    hk_hook_log(self->hook, HK_LOG_WARNING,
                "It seems that global step has not been increased. Current value (could be stable): %" PRId64
                " vs previous value: %" PRId64 ".",
                stale, self->last_stale);
  }
  self->last_stale = stale;
  self->has_last = 1;
  return HK_OK;
}

static void sc_destroy(void *user) {
  step_counter *self = user;
  hk_env env;
  int has_env = self->has_env;

  release_session(self);
  if (has_env) env = self->env;
  hk_env_free(has_env ? &env : NULL, self->output_dir);
  hk_env_free(has_env ? &env : NULL, self);
}

static const hk_hook_vtable step_counter_vtable = {
    HK_HOOK_VTABLE_VERSION, sc_begin, sc_after_create_session, sc_before_run, sc_after_run, NULL, sc_destroy,
};

static const hk_step_counter_options default_options = HK_STEP_COUNTER_OPTIONS_INIT;

hk_code hk_step_counter_options_init(hk_step_counter_options *opts, uint32_t version) {
  return HK__STRUCT_INIT(opts, version, hk_step_counter_options, HK_STEP_COUNTER_OPTIONS_INIT);
}

hk_code hk_step_counter_hook_new(hk_hook **out, const hk_step_counter_options *opts, hk_status *status) {
  static const char fn[] = "hk_step_counter_hook_new";
  step_counter *self;
  hk_timer probe;
  int64_t steps;
  hk_code rc;

  if (out == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "%s: out is NULL", fn);
  *out = NULL;
  if (opts == NULL) opts = &default_options;
  HK__CHECK_VERSION(opts, HK_STEP_COUNTER_OPTIONS_VERSION, hk_step_counter_options, "hk_step_counter_hook_new: opts",
                    status);
  rc = hk_env_check(opts->env, "hk_step_counter_hook_new: opts->env", status);
  if (rc != HK_OK) return rc;
  /* every_n_steps unset means 100, unless every_n_secs is given. */
  steps = opts->every_n_steps;
  if (steps == HK_UNSET_STEPS && hk_secs_is_unset(opts->every_n_secs)) steps = DEFAULT_EVERY_N_STEPS;
  /* Both cadences given, or a zero one, are refused. */
  rc = hk_timer_init(&probe, opts->every_n_secs, steps, "every_n_secs", "every_n_steps", NULL, status);
  if (rc != HK_OK) return rc;
  if (opts->steps_per_run < 1)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "%s: steps_per_run must be >= 1, got %" PRId64, fn,
                         opts->steps_per_run);
  if (opts->output_dir != NULL && opts->output_dir[0] == '\0')
    return hk_status_set(status, HK_INVALID_ARGUMENT, "%s: output_dir is empty", fn);
  double log_secs = opts->log_every_secs;
  if (!hk_secs_is_unset(log_secs) && !(isfinite(log_secs) && log_secs >= 0))
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         "%s: log_every_secs must be finite and >= 0 (0: never log), got %g", fn, log_secs);

  self = hk_env_calloc(opts->env, 1, sizeof(*self));
  if (self == NULL) return hk_status_set(status, HK_RESOURCE_EXHAUSTED, "StepCounterHook: out of memory");
  if (opts->env != NULL) {
    hk_env_copy(&self->env, opts->env);
    self->has_env = 1;
  }
  self->every_n_steps = steps;
  self->every_n_secs = opts->every_n_secs;
  self->given = opts->summary_writer;
  self->steps_per_run = opts->steps_per_run;
  self->log_every_secs = log_secs;
  self->gs = HK_NO_HANDLE;
  if (opts->output_dir != NULL && !(self->output_dir = hk_env_strdup(own_env(self), opts->output_dir))) {
    hk_env_free(own_env(self), self);
    return hk_status_set(status, HK_RESOURCE_EXHAUSTED, "StepCounterHook: out of memory");
  }
  rc = hk_hook_new(out, &step_counter_vtable, self, "StepCounterHook", opts->env, status);
  if (rc != HK_OK) {
    hk_env_free(own_env(self), self->output_dir);
    hk_env_free(own_env(self), self);
    return rc;
  }
  self->hook = *out;
  hk__hook_set_on_detach(*out, sc_detach);
  return HK_OK;
}
