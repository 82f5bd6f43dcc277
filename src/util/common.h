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
/* ---- versioned structs ----------------------------------------------------
 * Every options struct, definition struct and env starts with `uint32_t
 * version`, set by its HK_X_INIT macro or its hk_x_init() function, the way
 * libgit2's GIT_INIT_STRUCTURE and GIT_ERROR_CHECK_VERSION do it; the rule
 * is hk_struct_check_version()'s (hooked/common.h). These two macros are how
 * the library's own files use it. */

/** The body of every hk_x_init(ptr, version): `ptr` becomes a copy of the
 *  INIT macro's value (hk_struct_init()). */
#define HK__STRUCT_INIT(ptr, version, TYPE, INIT) hk_struct_init((ptr), sizeof(TYPE), &(const TYPE)INIT, (version))

/** Check the version of a struct a caller passed (hk_struct_check_version())
 *  and return INVALID_ARGUMENT from the calling function when it is refused.
 *  `what` names the struct in the message ("hk_loop_new: opts"). */
#define HK__CHECK_VERSION(s, CURRENT, TYPE, what, status)                                                      \
  do {                                                                                                         \
    if (hk_struct_check_version((s), (CURRENT), #TYPE, (what), (status)) != HK_OK) return HK_INVALID_ARGUMENT; \
  } while (0)

/** finite and >= 0 */
int hk__secs_valid(double secs);

#endif /* HOOKED_UTIL_COMMON_H */
