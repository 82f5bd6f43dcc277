/*
 * hooked — the LearningRateHook's options: their defaults and their check
 * (hooked/learning_rate.h). Every rule is checked before anything is
 * allocated, so a refused hook has no side effect.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "hooks/learning_rate_internal.h"

#include <inttypes.h>
#include <math.h>

#define HOOK_NAME "LearningRateHook"

hk_code hk_learning_rate_options_init(hk_learning_rate_options *opts, uint32_t version) {
  static const hk_learning_rate_options init = HK_LEARNING_RATE_OPTIONS_INIT;
  return hk_struct_init(opts, sizeof *opts, &init, version);
}

static const char *schedule_name(hk_learning_rate_schedule s) {
  switch (s) {
    case HK_LEARNING_RATE_CONSTANT: return "CONSTANT";
    case HK_LEARNING_RATE_PIECEWISE: return "PIECEWISE";
    case HK_LEARNING_RATE_EXPONENTIAL: return "EXPONENTIAL";
    case HK_LEARNING_RATE_COSINE: return "COSINE";
  }
  return "?";
}

static int finite_nonneg(double v) { return isfinite(v) && v >= 0; }

static hk_code refuse(hk_status *status, const char *option, hk_learning_rate_schedule s) {
  return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": %s does not apply to schedule %s", option,
                       schedule_name(s));
}

static hk_code check_piecewise(const hk_learning_rate_options *o, hk_status *status) {
  if (o->nboundaries < 1 || o->boundaries == NULL || o->values == NULL)
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         HOOK_NAME ": PIECEWISE needs boundaries (nboundaries >= 1) and nboundaries + 1 values");
  for (size_t i = 0; i < o->nboundaries; i++)
    if (i > 0 && o->boundaries[i] <= o->boundaries[i - 1])
      return hk_status_set(status, HK_INVALID_ARGUMENT,
                           HOOK_NAME ": boundaries must be strictly increasing: boundaries[%zu] = %" PRId64
                                     " after %" PRId64,
                           i, o->boundaries[i], o->boundaries[i - 1]);
  for (size_t i = 0; i <= o->nboundaries; i++)
    if (!finite_nonneg(o->values[i]))
      return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": values[%zu] must be finite and >= 0, got %g", i,
                           o->values[i]);
  if (o->rate != 0) return refuse(status, "rate", o->schedule);
  return HK_OK;
}

/* The options each schedule takes, and theirs only. */
static hk_code check_schedule(const hk_learning_rate_options *o, hk_status *status) {
  const hk_learning_rate_schedule s = o->schedule;
  const int exp = s == HK_LEARNING_RATE_EXPONENTIAL, cos = s == HK_LEARNING_RATE_COSINE;
  if (s != HK_LEARNING_RATE_CONSTANT && s != HK_LEARNING_RATE_PIECEWISE && !exp && !cos)
    return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": schedule %d is not an hk_learning_rate_schedule",
                         (int)s);
  if (s == HK_LEARNING_RATE_PIECEWISE) {
    hk_code rc = check_piecewise(o, status);
    if (rc != HK_OK) return rc;
  } else {
    if (!(isfinite(o->rate) && o->rate > 0))
      return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": rate must be finite and > 0 for %s, got %g",
                           schedule_name(s), o->rate);
    if (o->boundaries != NULL || o->nboundaries != 0 || o->values != NULL)
      return refuse(status, "boundaries/values", s);
  }
  if (exp || cos) {
    if (o->decay_steps == HK_UNSET_STEPS || o->decay_steps < 1)
      return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": decay_steps must be >= 1 for %s, got %s%" PRId64,
                           schedule_name(s), o->decay_steps == HK_UNSET_STEPS ? "unset " : "",
                           o->decay_steps == HK_UNSET_STEPS ? (int64_t)0 : o->decay_steps);
  } else if (o->decay_steps != HK_UNSET_STEPS) {
    return refuse(status, "decay_steps", s);
  }
  if (exp) {
    if (!(isfinite(o->decay_rate) && o->decay_rate > 0))
      return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": decay_rate must be finite and > 0, got %g",
                           o->decay_rate);
  } else if (o->decay_rate != 0 || o->staircase) {
    return refuse(status, o->decay_rate != 0 ? "decay_rate" : "staircase", s);
  }
  if (cos) {
    if (o->warmup_steps < 0)
      return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": warmup_steps must be >= 0, got %" PRId64,
                           o->warmup_steps);
    if (!finite_nonneg(o->warmup_from))
      return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": warmup_from must be finite and >= 0, got %g",
                           o->warmup_from);
    if (!(o->alpha >= 0 && o->alpha <= 1))
      return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": alpha must be in [0, 1], got %g", o->alpha);
  } else if (o->warmup_steps != 0 || o->warmup_from != 0 || o->alpha != 0) {
    return refuse(status, o->warmup_steps != 0 ? "warmup_steps" : o->warmup_from != 0 ? "warmup_from" : "alpha", s);
  }
  return HK_OK;
}

static hk_code check_plateau(const hk_learning_rate_options *o, hk_status *status) {
  if (o->monitor == NULL) {
    if (o->reported || o->state != NULL || o->every_n_steps != HK_UNSET_STEPS)
      return hk_status_set(status, HK_INVALID_ARGUMENT,
                           HOOK_NAME ": %s applies to reduce-on-plateau, which needs a monitor",
                           o->reported        ? "reported"
                           : o->state != NULL ? "state"
                                              : "every_n_steps");
    return HK_OK;
  }
  if (o->monitor[0] == '\0')
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         HOOK_NAME ": monitor is empty (a tensor name, or with reported the value's name)");
  if (o->mode != HK_MONITOR_MIN && o->mode != HK_MONITOR_MAX)
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         HOOK_NAME ": mode %d is neither HK_MONITOR_MIN nor HK_MONITOR_MAX", (int)o->mode);
  if (!(o->factor > 0 && o->factor < 1))
    return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": factor must be > 0 and < 1, got %g", o->factor);
  if (o->patience < 0)
    return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": patience must be >= 0, got %" PRId64, o->patience);
  if (o->cooldown < 0)
    return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": cooldown must be >= 0, got %" PRId64, o->cooldown);
  if (!finite_nonneg(o->min_delta))
    return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": min_delta must be finite and >= 0, got %g",
                         o->min_delta);
  if (!finite_nonneg(o->min_rate))
    return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": min_rate must be finite and >= 0, got %g",
                         o->min_rate);
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

hk_code hk__learning_rate_check_options(const hk_learning_rate_options *o, hk_status *status) {
  hk_code rc;
  if (o == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "opts is NULL: " HOOK_NAME " needs a variable");
  if (hk_struct_check_version(o, HK_LEARNING_RATE_OPTIONS_VERSION, "hk_learning_rate_options",
                              "hk_learning_rate_hook_new: opts", status) != HK_OK)
    return HK_INVALID_ARGUMENT;
  rc = hk_env_check(o->env, "opts->env", status);
  if (rc != HK_OK) return rc;
  if (o->variable == NULL || o->variable[0] == '\0')
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         HOOK_NAME ": variable is required (the name of the rate's variable)");
  rc = check_schedule(o, status);
  if (rc != HK_OK) return rc;
  rc = check_plateau(o, status);
  if (rc != HK_OK) return rc;
  if (o->summary_dir != NULL && o->summary_dir[0] == '\0')
    return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": summary_dir is empty");
  if (o->summary_steps != HK_UNSET_STEPS && o->summary_dir == NULL)
    return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": summary_steps needs a summary_dir");
  if (o->summary_steps != HK_UNSET_STEPS && o->summary_steps < 1)
    return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": summary_steps must be >= 1, got %" PRId64,
                         o->summary_steps);
  return HK_OK;
}
