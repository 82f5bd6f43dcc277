/*
 * The line reader of hooked's small text records (hk__ names; not API).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_UTIL_RECORD_LINES_H
#define HOOKED_UTIL_RECORD_LINES_H

#include <stddef.h>

/** The line starting at *p without its '\n' (replaced by a NUL), *n its
 *  length; advances *p past it. NULL at `end`. Every line must end in '\n'
 *  (hk__record_open() checked it). */
char *hk__record_next_line(char **p, const char *end, size_t *n);
/** Start reading the record text[0, len) (NUL-terminated at len): it must
 *  end with a complete line, hold no NUL byte and have `magic` as line 1.
 *  @return 1 with *p past line 1; 0 with *why (cap bytes) saying which
 *  rule it breaks. */
int hk__record_open(char **p, char *text, size_t len, const char *magic, char *why, size_t cap);

#endif /* HOOKED_UTIL_RECORD_LINES_H */
