/*
 * Decimal numbers with '.' as the decimal point whatever the locale (hk__
 * names; not API).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_UTIL_DECIMAL_H
#define HOOKED_UTIL_DECIMAL_H

#include <stddef.h>

/** The longest token hk__decimal_parse_c() converts (a state-file line). */
#define HK__DECIMAL_MAX 4096
/** Copy printf's rendering of a number into out (cap bytes, NUL-terminated,
 *  cut short if needed) with the process locale's decimal point replaced by
 *  '.'. */
void hk__decimal_to_c(const char *printed, char *out, size_t cap);
/** strtod of tok[0, len) read with '.' as the decimal point, whatever the
 *  locale. The caller checks the grammar first (strtod also takes spaces,
 *  signs, "inf"). @return 0 when strtod does not take the whole token or
 *  the converted text with its NUL would need more than `max` bytes (max is
 *  capped at HK__DECIMAL_MAX plus a locale's decimal point and the NUL). */
int hk__decimal_parse_c(const char *tok, size_t len, size_t max, double *out);

#endif /* HOOKED_UTIL_DECIMAL_H */
