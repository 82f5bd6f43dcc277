/*
 * hooked — the second-or-step timer (contract group H).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "hooked/timer.h"

#include <math.h>
#include <string.h>

/* The timer keeps only an hk_clock (so a hook can embed it without an env);
 * the env helpers already implement "NULL field means the system clock". */
static double timer_now(const hk_timer *t) {
  hk_env env = HK_ENV_INIT;
  env.clock = t->clock;
  return hk_env_monotonic(&env);
}

hk_code hk_timer_init(hk_timer *t, double every_secs, int64_t every_steps, const char *secs_name,
                      const char *steps_name, const hk_clock *clock, hk_status *status) {
  int secs_given, steps_given;

  if (secs_name == NULL) secs_name = "every_secs";
  if (steps_name == NULL) steps_name = "every_steps";
  if (t == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "t: timer must not be NULL");

  /* "Given" means not unset, whatever the value: a NaN is given, and
   * then refused below, as a zero cadence is. */
  secs_given = !hk_secs_is_unset(every_secs);
  steps_given = every_steps != HK_UNSET_STEPS;
  if (!secs_given && !steps_given)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "Either %s or %s should be provided.", secs_name, steps_name);
  if (secs_given && steps_given)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "Can not provide both %s and %s.", secs_name, steps_name);
  if (steps_given && every_steps < 1)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "%s must be >= 1, got %lld", steps_name, (long long)every_steps);
  if (secs_given && !(isfinite(every_secs) && every_secs > 0))
    return hk_status_set(status, HK_INVALID_ARGUMENT, "%s must be finite and > 0, got %g", secs_name, every_secs);

  memset(t, 0, sizeof(*t));
  t->every_secs = secs_given ? every_secs : HK_UNSET_SECS;
  t->every_steps = steps_given ? every_steps : HK_UNSET_STEPS;
  t->never = 0;
  t->has_last = 0;
  t->last_time = 0.0;
  t->last_step = 0;
  if (clock != NULL) t->clock = *clock;
  hk_status_clear(status);
  return HK_OK;
}

void hk_timer_init_never(hk_timer *t) {
  if (t == NULL) return;
  memset(t, 0, sizeof(*t));
  t->every_secs = HK_UNSET_SECS;
  t->every_steps = HK_UNSET_STEPS;
  t->never = 1;
}

int hk_timer_should_trigger(hk_timer *t, int64_t step) {
  if (t == NULL || t->never) return 0;
  if (!t->has_last) return 1;
  if (step == t->last_step) return 0;
  if (!hk_secs_is_unset(t->every_secs) && timer_now(t) >= t->last_time + t->every_secs) return 1;
  /* Written as a difference so a huge every_steps cannot overflow. */
  if (t->every_steps != HK_UNSET_STEPS && step > t->last_step &&
      (uint64_t)step - (uint64_t)t->last_step >= (uint64_t)t->every_steps)
    return 1;
  return 0;
}

int hk_timer_update(hk_timer *t, int64_t step, double *elapsed_secs, int64_t *elapsed_steps) {
  double now;
  int had_last;

  /* A never-trigger timer records nothing, so it keeps reporting "none". */
  if (t == NULL || t->never) return 0;
  now = timer_now(t);
  had_last = t->has_last;
  if (had_last) {
    if (elapsed_secs != NULL) *elapsed_secs = now - t->last_time;
    if (elapsed_steps != NULL) *elapsed_steps = (int64_t)((uint64_t)step - (uint64_t)t->last_step);
  }
  t->has_last = 1;
  t->last_time = now;
  t->last_step = step;
  return had_last;
}

void hk_timer_reset(hk_timer *t) {
  if (t == NULL) return;
  t->has_last = 0;
  t->last_time = 0.0;
  t->last_step = 0;
}

int hk_timer_last_triggered_step(const hk_timer *t, int64_t *step) {
  if (t == NULL || t->never || !t->has_last) return 0;
  if (step != NULL) *step = t->last_step;
  return 1;
}
