/*
 * hooked — the second-or-step timer (contract group H).
 *
 * A plain struct so a hook can embed it without allocating; its fields are
 * private to hooked: use the functions. No function here allocates or calls
 * back into user code except the clock's `monotonic`. A timer is plain data:
 * one thread at a time may use it.
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
  double every_secs;   /* HK_UNSET_SECS when unset */
  int64_t every_steps; /* HK_UNSET_STEPS when unset */
  int never;           /* a never-trigger timer */
  int has_last;
  double last_time;
  int64_t last_step;
  hk_clock clock;
} hk_timer;

/**
 * Initialize a timer that has never triggered, with exactly one of
 * every_secs/every_steps given (the other HK_UNSET_*; "given" means not
 * unset, whatever the value).
 * @param secs_name, steps_name  option names used in messages; NULL
 *        means "every_secs" / "every_steps". Borrowed for the call.
 * @param clock  copied; NULL (or NULL members): the system monotonic clock.
 *        Its `user` is borrowed for the timer's life.
 * @return HK_OK or INVALID_ARGUMENT; on failure `t` is untouched.
 * **Errors:** INVALID_ARGUMENT "Either <secs_name> or
 * <steps_name> should be provided." when neither is given, "Can not provide
 * both <secs_name> and <steps_name>." when both are, and a message naming
 * it for every_steps < 1 or every_secs not finite and > 0; also for a NULL t.
 * **Threads:** the timer owner's. **Allocates:** no.
 */
HK_API hk_code hk_timer_init(hk_timer *t, double every_secs, int64_t every_steps, const char *secs_name,
                             const char *steps_name, const hk_clock *clock, hk_status *status);
/** Initialize a timer that never triggers and always reports "none".
 *  NULL is a no-op.
 * **Threads:** the timer owner's. **Allocates:** no.
 */
HK_API void hk_timer_init_never(hk_timer *t);
/**
 * Whether to trigger at `step`, in this order: true if it never
 * triggered (was never updated); false if `step` equals the last triggered
 * step; true if every_secs is set and now >= last time + every_secs; true if
 * every_steps is set and step >= last step + every_steps; else false.
 * @return a boolean; 0 for NULL or a never-trigger timer.
 * **Threads:** the timer owner's. **Allocates:** no.
 */
HK_API int hk_timer_should_trigger(hk_timer *t, int64_t step);
/**
 * Record (now, step) as the last trigger.
 * @param elapsed_secs, elapsed_steps  may be NULL; filled with the time and
 *        steps since the previous update, and left untouched on the first.
 * @return nonzero when elapsed values were computed, 0 on the first update
 *         ("none"), for NULL, and for a never-trigger timer (which records
 *         nothing).
 * **Threads:** the timer owner's. **Allocates:** no.
 */
HK_API int hk_timer_update(hk_timer *t, int64_t step, double *elapsed_secs, int64_t *elapsed_steps);
/** Forget the last trigger, so the next should_trigger() is true.
 *  NULL is a no-op.
 * **Threads:** the timer owner's. **Allocates:** no.
 */
HK_API void hk_timer_reset(hk_timer *t);
/**
 * The last triggered step.
 * @param step  may be NULL; receives the step of the last update.
 * @return nonzero when the timer was updated at least once since init or
 *         reset; 0 ("none") otherwise, for NULL and for a never-trigger timer.
 * **Threads:** the timer owner's. **Allocates:** no.
 */
HK_API int hk_timer_last_triggered_step(const hk_timer *t, int64_t *step);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_TIMER_H */
