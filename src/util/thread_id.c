/*
 * An id of the calling thread for traces: the kernel's thread id on
 * Linux, as perf, top and Perfetto show it; elsewhere the pthread handle.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#if defined(__linux__)
#define _GNU_SOURCE /* syscall */
#include <sys/syscall.h>
#include <unistd.h>
#endif
#include <pthread.h>
#include <stdint.h>

#include "util/thread.h"

uint64_t hk__thread_id(void) {
#if defined(__linux__) && defined(SYS_gettid)
  return (uint64_t)syscall(SYS_gettid);
#else
  return (uint64_t)(uintptr_t)pthread_self();
#endif
}
