/*
 * hooked — StopAtStepHook (contract group I).
 *
 * Written against the public headers only. Everything is
 * allocated at construction; the callbacks allocate nothing.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "hooked/hooks.h"
#include "util/common.h"

#include <inttypes.h>
#include <stdio.h>

typedef struct stop_at_step {
  hk_hook *hook; /* the wrapper, for its env and log */
  hk_env env;    /* what the struct was allocated with */
  int has_env;
  int64_t num_steps; /* HK_UNSET_STEPS when last_step was given */
  int64_t given_last_step;
  /* Per-session state, reset by begin(). */
  int64_t last_step;
  int have_last_step; /* last_step known (given, or num_steps past the GS after the restore) */
  int created_since_begin;
  hk_handle gs; /* the GS value tensor, fetched in before_run */
} stop_at_step;

static const hk_env *own_env(const stop_at_step *self) { return self->has_env ? &self->env : NULL; }

static hk_code sas_begin(void *user, hk_executor *graph, hk_status *status) {
  stop_at_step *self = user;
  hk_variable_info info;
  hk_code rc;

  self->created_since_begin = 0;
  self->have_last_step = self->num_steps == HK_UNSET_STEPS;
  self->last_step = self->have_last_step ? self->given_last_step : 0;

  rc = hk_executor_global_step(&info, NULL, graph, status);
  if (rc == HK_NOT_FOUND)
    return hk_status_set(status, HK_FAILED_PRECONDITION, "Global step should be created to use StopAtStepHook.");
  if (rc != HK_OK) return rc; /* a GS of the wrong dtype or shape: get_global_step's message */
  self->gs = info.tensor;
  return HK_OK;
}

static hk_code sas_after_create_session(void *user, hk_raw_session *session, hk_coordinator *coord,
                                        hk_creation_context *ctx, hk_status *status) {
  stop_at_step *self = user;
  int64_t gs;
  hk_code rc;

  (void)coord;
  rc = hk_raw_session_global_step(&gs, session, status);
  if (rc != HK_OK) return rc;

  /* num_steps counts from the GS of the first creation after begin(),
   * i.e. after any restore; re-creations keep that last_step. */
  if (!self->created_since_begin && self->num_steps != HK_UNSET_STEPS) {
    self->last_step = gs > INT64_MAX - self->num_steps ? INT64_MAX : gs + self->num_steps;
    self->have_last_step = 1;
  }
  self->created_since_begin = 1;

  if (self->have_last_step && gs >= self->last_step) {
    hk_hook_log(self->hook, HK_LOG_INFO,
                "Global step %" PRId64 " already reached last step %" PRId64 "; stopping before the first step.", gs,
                self->last_step);
    char detail[96];
    snprintf(detail, sizeof detail, "global step %" PRId64 " reached the last step %" PRId64, gs, self->last_step);
    hk_creation_context_request_stop_with_reason(ctx, HK_STOP_LAST_STEP, detail);
  }
  return HK_OK;
}

static hk_code sas_before_run(void *user, hk_run_context *ctx, hk_run_request *request, hk_status *status) {
  stop_at_step *self = user;

  (void)ctx;
  (void)status;
  request->fetches = &self->gs;
  request->nfetches = 1;
  return HK_OK;
}

static hk_code sas_after_run(void *user, hk_run_context *ctx, const hk_run_values *values, hk_status *status) {
  stop_at_step *self = user;
  int64_t stale, gs;
  hk_code rc;

  if (values == NULL || values->nresults < 1 || values->results == NULL)
    return hk_status_set(status, HK_INTERNAL,
                         "StopAtStepHook: the global step it fetched is missing from its run values");
  rc = hk_tensor_to_i64(&stale, &values->results[0], "global_step", status);
  if (rc != HK_OK) return rc;
  /* Driven without after_create_session and with num_steps, there is no
   * last step to compare with yet. */
  if (!self->have_last_step) return HK_OK;
  /* Stale + 1 >= last_step, written so it cannot overflow
   * (last_step >= 0). The +1 assumes the step added one; the re-read
   * confirms it. */
  if (stale < self->last_step - 1) return HK_OK;
  rc = hk_raw_session_global_step(&gs, hk_run_context_session(ctx), status);
  if (rc != HK_OK) return rc;
  if (gs >= self->last_step) {
    char detail[96];
    snprintf(detail, sizeof detail, "global step %" PRId64 " reached the last step %" PRId64, gs, self->last_step);
    hk_run_context_request_stop_with_reason(ctx, HK_STOP_LAST_STEP, detail);
  }
  return HK_OK;
}

static void sas_destroy(void *user) {
  stop_at_step *self = user;
  hk_env env;
  int has_env = self->has_env;

  if (has_env) env = self->env;
  hk_env_free(has_env ? &env : NULL, self);
}

static const hk_hook_vtable stop_at_step_vtable = {
    HK_HOOK_VTABLE_VERSION, sas_begin, sas_after_create_session, sas_before_run, sas_after_run, NULL, sas_destroy,
};

hk_code hk_stop_at_step_options_init(hk_stop_at_step_options *opts, uint32_t version) {
  return HK__STRUCT_INIT(opts, version, hk_stop_at_step_options, HK_STOP_AT_STEP_OPTIONS_INIT);
}

hk_code hk_stop_at_step_hook_new(hk_hook **out, const hk_stop_at_step_options *opts, hk_status *status) {
  stop_at_step *self;
  hk_code rc;

  if (out == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "out: must not be NULL");
  *out = NULL;
  if (opts == NULL)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "opts is NULL: One of num_steps or last_step must be specified.");
  HK__CHECK_VERSION(opts, HK_STOP_AT_STEP_OPTIONS_VERSION, hk_stop_at_step_options, "hk_stop_at_step_hook_new: opts",
                    status);
  rc = hk_env_check(opts->env, "opts->env", status);
  if (rc != HK_OK) return rc;
  if (opts->num_steps == HK_UNSET_STEPS && opts->last_step == HK_UNSET_STEPS)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "One of num_steps or last_step must be specified.");
  if (opts->num_steps != HK_UNSET_STEPS && opts->last_step != HK_UNSET_STEPS)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "Only one of num_steps or last_step can be specified.");
  if (opts->num_steps != HK_UNSET_STEPS && opts->num_steps < 0)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "num_steps must be >= 0, got %" PRId64, opts->num_steps);
  if (opts->last_step != HK_UNSET_STEPS && opts->last_step < 0)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "last_step must be >= 0, got %" PRId64, opts->last_step);

  self = hk_env_calloc(opts->env, 1, sizeof(*self));
  if (self == NULL) return hk_status_set(status, HK_RESOURCE_EXHAUSTED, "StopAtStepHook: out of memory");
  if (opts->env != NULL) {
    hk_env_copy(&self->env, opts->env);
    self->has_env = 1;
  }
  self->num_steps = opts->num_steps;
  self->given_last_step = opts->last_step;
  self->have_last_step = opts->num_steps == HK_UNSET_STEPS;
  self->last_step = self->have_last_step ? opts->last_step : 0;
  self->gs = HK_NO_HANDLE;

  rc = hk_hook_new(out, &stop_at_step_vtable, self, "StopAtStepHook", opts->env, status);
  if (rc != HK_OK) {
    hk_env_free(own_env(self), self);
    return rc;
  }
  self->hook = *out;
  hk_status_clear(status);
  return HK_OK;
}
