/*
 * The helpers every file of the library uses (hk__ names; not API): the
 * default env, logging, status copies and callback results. The public
 * env, status and tensor functions these files define are declared in
 * include/hooked/.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_UTIL_COMMON_H
#define HOOKED_UTIL_COMMON_H

#include "hooked/hooked.h"

#include <stdarg.h>

/** The default env when `env` is NULL. */
const hk_env *hk__env_or_default(const hk_env *env);
void hk__env_vlog(const hk_env *env, hk_log_level level, const char *fmt, va_list ap);
void hk__status_copy(hk_status *dst, const hk_status *src);
/** A callback may return a code without filling its status, or fill a
 *  different code: make `st` agree with `rc` and name the culprit. @return rc. */
hk_code hk__callback_result(hk_code rc, hk_status *st, const char *what, const char *name);
/** finite and >= 0 */
int hk__secs_valid(double secs);

#endif /* HOOKED_UTIL_COMMON_H */
