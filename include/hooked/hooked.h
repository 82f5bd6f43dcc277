/*
 * hooked — umbrella header. Include this one.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_HOOKED_H
#define HOOKED_HOOKED_H

#include "hooked/common.h"
#include "hooked/tensor.h"
#include "hooked/run.h"
#include "hooked/sys/executor.h"
#include "hooked/graph.h"
#include "hooked/coordinator.h"
#include "hooked/hook.h"
#include "hooked/sys/hook.h"
#include "hooked/scaffold.h"
#include "hooked/session.h"
#include "hooked/timer.h"
#include "hooked/sys/fs.h"
#include "hooked/checkpoint.h"
#include "hooked/hooks.h"
#include "hooked/checkpoint_saver.h"
#include "hooked/early_stopping.h"
#include "hooked/learning_rate.h"
#include "hooked/ema.h"
#include "hooked/summary.h"
#include "hooked/loop.h"
#include "hooked/training_session.h"
#include "hooked/metrics_log.h"
#include "hooked/time_limit.h"

#endif /* HOOKED_HOOKED_H */
