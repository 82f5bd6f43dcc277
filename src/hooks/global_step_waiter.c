/*
 * hooked — GlobalStepWaiterHook (contract group J).
 *
 * Written against the public headers only. The wait polls
 * through hk_coordinator_wait_for_stop(), so a stop request (or the signal
 * helper) ends it early, and a mock clock in the env makes it instant.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "hooked/hooks.h"
#include "util/common.h"

#include <inttypes.h>
#include <math.h>

/* A progress line whenever GS moved more than this since the last one. */
#define PROGRESS_STEPS 1000

typedef struct global_step_waiter {
  hk_hook *hook; /* the wrapper, for its env and log */
  hk_env env;    /* what the struct was allocated with */
  int has_env;
  int64_t wait_until_step;
  double poll_interval_secs;
  double deadline_secs; /* HK_UNSET_SECS: none */
  /* Per-session state, reset by begin(). */
  int started;
  hk_coordinator *coord; /* kept from after_create_session */
} global_step_waiter;

static hk_code gsw_begin(void *user, hk_executor *graph, hk_status *status) {
  global_step_waiter *self = user;
  hk_code rc;

  self->started = 0;
  self->coord = NULL;
  rc = hk_executor_global_step(NULL, NULL, graph, status);
  if (rc == HK_NOT_FOUND)
    return hk_status_set(status, HK_FAILED_PRECONDITION, "Global step should be created to use GlobalStepWaiterHook.");
  return rc;
}

static hk_code gsw_after_create_session(void *user, hk_raw_session *session, hk_coordinator *coord,
                                        hk_creation_context *ctx, hk_status *status) {
  global_step_waiter *self = user;

  (void)session;
  (void)ctx;
  (void)status;
  /* A re-created session hands out a fresh coordinator; the old one
   * stays valid, but the new one is where stops are now requested. */
  self->coord = coord;
  return HK_OK;
}

static hk_code gsw_before_run(void *user, hk_run_context *ctx, hk_run_request *request, hk_status *status) {
  global_step_waiter *self = user;
  const hk_env *env = hk_hook_env(self->hook);
  int deadline_given = !hk_secs_is_unset(self->deadline_secs);
  int64_t last_logged = 0;
  double start;

  (void)request;
  if (self->started) return HK_OK;
  if (self->wait_until_step <= 0) {
    self->started = 1;
    return HK_OK;
  }

  hk_hook_log(self->hook, HK_LOG_INFO, "Waiting for global step %" PRId64 " before starting training.",
              self->wait_until_step);
  start = hk_env_monotonic(env);
  for (;;) {
    double elapsed, wait;
    int64_t gs;
    hk_code rc;

    /* (a) */
    if (hk_coordinator_should_stop(self->coord))
      return hk_status_set(status, HK_CANCELLED, "Stopped waiting for global step %" PRId64 ": stop requested.",
                           self->wait_until_step);
    /* (b) */
    rc = hk_raw_session_global_step(&gs, hk_run_context_session(ctx), status);
    if (rc != HK_OK) return rc;
    if (gs >= self->wait_until_step) {
      /* The end of the wait, for the reader of a worker's log. */
      hk_hook_log(self->hook, HK_LOG_INFO,
                  "Global step %" PRId64 " reached (current step %" PRId64
                  ") after waiting %g secs; starting training.",
                  self->wait_until_step, gs, hk_env_monotonic(env) - start);
      self->started = 1;
      return HK_OK;
    }
    /* (c) */
    elapsed = hk_env_monotonic(env) - start;
    if (deadline_given && elapsed >= self->deadline_secs)
      return hk_status_set(status, HK_DEADLINE_EXCEEDED,
                           "Global step %" PRId64 " not reached within %g secs (current step %" PRId64 ").",
                           self->wait_until_step, self->deadline_secs, gs);
    /* (d) */
    /* gs > last_logged first, so the subtraction cannot overflow. */
    if (gs > last_logged && (uint64_t)gs - (uint64_t)last_logged > (uint64_t)PROGRESS_STEPS) {
      hk_hook_log(self->hook, HK_LOG_INFO,
                  "Waiting for global step %" PRId64 " before starting training. Current step is %" PRId64 ".",
                  self->wait_until_step, gs);
      last_logged = gs;
    }
    /* (e) */
    wait = self->poll_interval_secs;
    if (deadline_given && self->deadline_secs - elapsed < wait) wait = self->deadline_secs - elapsed;
    if (self->coord != NULL) {
      (void)hk_coordinator_wait_for_stop(self->coord, wait);
    } else {
      /* Driven without after_create_session: nothing to wait on but the
       * clock; (a) still sees the signal helper. */
      hk_env_sleep(env, wait);
    }
  }
}

static void gsw_destroy(void *user) {
  global_step_waiter *self = user;
  hk_env env;
  int has_env = self->has_env;

  if (has_env) env = self->env;
  hk_env_free(has_env ? &env : NULL, self);
}

static const hk_hook_vtable global_step_waiter_vtable = {
    HK_HOOK_VTABLE_VERSION, gsw_begin, gsw_after_create_session, gsw_before_run, NULL, NULL, gsw_destroy,
};

hk_code hk_global_step_waiter_options_init(hk_global_step_waiter_options *opts, uint32_t version) {
  return HK__STRUCT_INIT(opts, version, hk_global_step_waiter_options, HK_GLOBAL_STEP_WAITER_OPTIONS_INIT);
}

hk_code hk_global_step_waiter_hook_new(hk_hook **out, const hk_global_step_waiter_options *opts, hk_status *status) {
  hk_global_step_waiter_options defaults = HK_GLOBAL_STEP_WAITER_OPTIONS_INIT;
  global_step_waiter *self;
  hk_code rc;

  if (out == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "out: must not be NULL");
  *out = NULL;
  if (opts == NULL) opts = &defaults;
  HK__CHECK_VERSION(opts, HK_GLOBAL_STEP_WAITER_OPTIONS_VERSION, hk_global_step_waiter_options,
                    "hk_global_step_waiter_hook_new: opts", status);
  rc = hk_env_check(opts->env, "opts->env", status);
  if (rc != HK_OK) return rc;
  if (!(isfinite(opts->poll_interval_secs) && opts->poll_interval_secs > 0))
    return hk_status_set(status, HK_INVALID_ARGUMENT, "poll_interval_secs must be finite and > 0, got %g",
                         opts->poll_interval_secs);
  if (!hk_secs_is_unset(opts->deadline_secs) && !(isfinite(opts->deadline_secs) && opts->deadline_secs >= 0))
    return hk_status_set(status, HK_INVALID_ARGUMENT, "deadline_secs must be finite and >= 0, got %g",
                         opts->deadline_secs);

  self = hk_env_calloc(opts->env, 1, sizeof(*self));
  if (self == NULL) return hk_status_set(status, HK_RESOURCE_EXHAUSTED, "GlobalStepWaiterHook: out of memory");
  if (opts->env != NULL) {
    hk_env_copy(&self->env, opts->env);
    self->has_env = 1;
  }
  self->wait_until_step = opts->wait_until_step;
  self->poll_interval_secs = opts->poll_interval_secs;
  self->deadline_secs = hk_secs_is_unset(opts->deadline_secs) ? HK_UNSET_SECS : opts->deadline_secs;

  rc = hk_hook_new(out, &global_step_waiter_vtable, self, "GlobalStepWaiterHook", opts->env, status);
  if (rc != HK_OK) {
    hk_env_free(opts->env, self);
    return rc;
  }
  self->hook = *out;
  hk_status_clear(status);
  return HK_OK;
}
