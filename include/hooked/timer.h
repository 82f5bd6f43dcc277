/*
 * hooked — the second-or-step timer (contract group H).
 *
 * A plain struct so a hook can embed it without allocating; its fields are
 * private to hooked: use the functions.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_TIMER_H
#define HOOKED_TIMER_H

#include "hooked/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hk_timer {
  double every_secs;     /* HK_UNSET_SECS when unset */
  int64_t every_steps;   /* HK_UNSET_STEPS when unset */
  int never;             /* C79 */
  int has_last;
  double last_time;
  int64_t last_step;
  hk_clock clock;
} hk_timer;

/**
 * Initialize with exactly one of every_secs/every_steps given (the other
 * HK_UNSET_*). Errors (C75, H25, D9): neither → INVALID_ARGUMENT "Either
 * <secs_name> or <steps_name> should be provided."; both → "Can not provide
 * both <secs_name> and <steps_name>."; every_steps < 1 or every_secs not
 * finite and > 0 → INVALID_ARGUMENT naming it. `secs_name`/`steps_name`
 * NULL mean "every_secs"/"every_steps". `clock` copied; NULL: system.
 */
HK_API hk_code hk_timer_init(hk_timer *t, double every_secs, int64_t every_steps,
                             const char *secs_name, const char *steps_name, const hk_clock *clock,
                             hk_status *status);
/** A timer that never triggers (C79). */
HK_API void hk_timer_init_never(hk_timer *t);
/** C76. */
HK_API int hk_timer_should_trigger(hk_timer *t, int64_t step);
/** C77: record (now, step). @return nonzero and fill the elapsed values
 *  (either pointer may be NULL) unless this is the first update. */
HK_API int hk_timer_update(hk_timer *t, int64_t step, double *elapsed_secs, int64_t *elapsed_steps);
/** C78. */
HK_API void hk_timer_reset(hk_timer *t);
/** C78: @return nonzero and *step when the timer was updated at least once. */
HK_API int hk_timer_last_triggered_step(const hk_timer *t, int64_t *step);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_TIMER_H */
