/*
 * hooked — TimeLimitHook (hooked/time_limit.h): a clean stop after a
 * wall-clock duration, so the session's normal end writes the final
 * checkpoint. Written against the public headers only, as a program's own
 * hook would be: its clock is the hook's env, so a test's mock clock drives
 * it without waiting.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "hooked/time_limit.h"
#include "hooked/sys/hook.h"
#include "hooked/run.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#define HOOK_NAME "TimeLimitHook"

typedef struct time_limit {
  hk_hook *hook;
  hk_env env; /* what the struct was allocated with */
  int has_env;
  double duration;
  double start; /* monotonic seconds at begin() */
  int stopped;  /* the stop was requested in this session */
} time_limit;

static hk_code tl_begin(void *user, hk_executor *graph, hk_status *status) {
  time_limit *self = user;
  (void)graph;
  (void)status;
  self->start = hk_env_monotonic(hk_hook_env(self->hook));
  self->stopped = 0;
  return HK_OK;
}

static hk_code tl_after_run(void *user, hk_run_context *ctx, const hk_run_values *values, hk_status *status) {
  time_limit *self = user;
  (void)values;
  (void)status;
  if (self->stopped) return HK_OK;
  double elapsed = hk_env_monotonic(hk_hook_env(self->hook)) - self->start;
  if (elapsed < self->duration) return HK_OK;
  self->stopped = 1;
  int64_t gs = 0;
  hk_status ignored = HK_STATUS_INIT;
  char detail[HK_STATUS_MESSAGE_MAX];
  if (hk_raw_session_global_step(&gs, hk_run_context_session(ctx), &ignored) == HK_OK)
    snprintf(detail, sizeof detail, "Time limit of %g s reached after %g s at global step %" PRId64 "; stopping.",
             self->duration, elapsed, gs);
  else
    snprintf(detail, sizeof detail, "Time limit of %g s reached after %g s; stopping.", self->duration, elapsed);
  hk_hook_log(self->hook, HK_LOG_INFO, "%s", detail);
  hk_run_context_request_stop_with_reason(ctx, HK_STOP_TIME_LIMIT, detail);
  return HK_OK;
}

static void tl_destroy(void *user) {
  time_limit *self = user;
  hk_env env;
  int has_env = self->has_env;
  if (has_env) env = self->env;
  hk_env_free(has_env ? &env : NULL, self);
}

static const hk_hook_vtable time_limit_vtable = {
    .version = HK_HOOK_VTABLE_VERSION,
    .begin = tl_begin,
    .after_run = tl_after_run,
    .destroy = tl_destroy,
};

hk_code hk_time_limit_options_init(hk_time_limit_options *opts, uint32_t version) {
  return hk_struct_init(opts, sizeof(hk_time_limit_options), &(const hk_time_limit_options)HK_TIME_LIMIT_OPTIONS_INIT,
                        version);
}

hk_code hk_time_limit_hook_new(hk_hook **out, const hk_time_limit_options *opts, hk_status *status) {
  static const char fn[] = "hk_time_limit_hook_new";
  if (out == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "%s: out is NULL", fn);
  *out = NULL;
  if (opts == NULL)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "%s: opts is NULL (duration_secs is required)", fn);
  if (hk_struct_check_version(opts, HK_TIME_LIMIT_OPTIONS_VERSION, "hk_time_limit_options",
                              "hk_time_limit_hook_new: opts", status) != HK_OK)
    return HK_INVALID_ARGUMENT;
  hk_code rc = hk_env_check(opts->env, "hk_time_limit_hook_new: opts->env", status);
  if (rc != HK_OK) return rc;
  if (hk_secs_is_unset(opts->duration_secs))
    return hk_status_set(status, HK_INVALID_ARGUMENT, "%s: duration_secs is required (seconds, > 0)", fn);
  if (!(isfinite(opts->duration_secs) && opts->duration_secs > 0))
    return hk_status_set(status, HK_INVALID_ARGUMENT, "%s: duration_secs must be finite and > 0, got %g", fn,
                         opts->duration_secs);
  time_limit *self = hk_env_calloc(opts->env, 1, sizeof *self);
  if (self == NULL) return hk_status_set(status, HK_RESOURCE_EXHAUSTED, HOOK_NAME ": out of memory");
  if (opts->env != NULL) {
    hk_env_copy(&self->env, opts->env);
    self->has_env = 1;
  }
  self->duration = opts->duration_secs;
  rc = hk_hook_new(out, &time_limit_vtable, self, HOOK_NAME, opts->env, status);
  if (rc != HK_OK) {
    hk_env_free(opts->env, self);
    return rc;
  }
  self->hook = *out;
  return HK_OK;
}
