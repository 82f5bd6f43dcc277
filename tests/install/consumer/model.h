/*
 * The model the install-consumer examples train: a global step, a scalar
 * variable w and an SGD op on (w - 3)^2.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef CONSUMER_MODEL_H
#define CONSUMER_MODEL_H

#include <hooked/hooked.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Build the model into g. *loss receives the loss tensor ("sgd:0"), *train
 * the op that updates w and increments the global step. */
hk_code consumer_build_model(hk_graph *g, hk_handle *loss, hk_handle *train, hk_status *st);

#ifdef __cplusplus
}
#endif
#endif
