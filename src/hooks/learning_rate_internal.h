/*
 * hooked — what the LearningRateHook's two files share (not API): the check
 * of its options, apart from the hook itself.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_HOOKS_LEARNING_RATE_INTERNAL_H
#define HOOKED_HOOKS_LEARNING_RATE_INTERNAL_H

#include "hooked/learning_rate.h"

/** INVALID_ARGUMENT naming the first option of `o` that is wrong (and
 *  every rule of hk_learning_rate_hook_new()); HK_OK for options it can
 *  build a hook from. */
hk_code hk__learning_rate_check_options(const hk_learning_rate_options *o, hk_status *status);

#endif /* HOOKED_HOOKS_LEARNING_RATE_INTERNAL_H */
