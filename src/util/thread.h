/*
 * Thread helpers (hk__ names; not API).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_UTIL_THREAD_H
#define HOOKED_UTIL_THREAD_H

#include <stdint.h>

/** An id of the calling thread for trace viewers (the kernel's tid on Linux). */
uint64_t hk__thread_id(void);

#endif /* HOOKED_UTIL_THREAD_H */
