/*
 * hooked — decimal numbers in the "C" locale's sense, whatever the process
 * locale: the state file (C-group numbers such as last_preserved_timestamp)
 * and the best-checkpoint record always write and read '.' as the decimal
 * point, while printf and strtod use the locale's.
 *
 * The locale's decimal point is probed with snprintf ("0<dp>5"), not
 * localeconv(), which is not thread-safe.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "util/decimal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Enough for any locale's decimal point (at most a few bytes in practice). */
#define DECIMAL_POINT_MAX 8

static void decimal_point(char dp[DECIMAL_POINT_MAX]) {
  char buf[32];
  int k = snprintf(buf, sizeof buf, "%.1f", 0.5);
  if (k >= 3 && (size_t)(k - 2) < DECIMAL_POINT_MAX && buf[0] == '0' && buf[k - 1] == '5') {
    memcpy(dp, buf + 1, (size_t)(k - 2));
    dp[k - 2] = '\0';
  } else {
    dp[0] = '.', dp[1] = '\0';
  }
}

void hk__decimal_to_c(const char *printed, char *out, size_t cap) {
  char dp[DECIMAL_POINT_MAX];
  size_t dpl, o = 0;
  decimal_point(dp);
  dpl = strlen(dp);
  for (const char *p = printed; *p && o + 1 < cap;) {
    if (dpl > 0 && strncmp(p, dp, dpl) == 0) {
      out[o++] = '.';
      p += dpl;
    } else {
      out[o++] = *p++;
    }
  }
  out[o] = '\0';
}

int hk__decimal_parse_c(const char *tok, size_t len, size_t max, double *out) {
  char buf[HK__DECIMAL_MAX + DECIMAL_POINT_MAX + 1];
  char dp[DECIMAL_POINT_MAX];
  size_t dpl, o = 0;
  char *end = NULL;

  if (max > sizeof buf) max = sizeof buf;
  decimal_point(dp);
  dpl = strlen(dp);
  for (size_t i = 0; i < len; i++) {
    if (tok[i] == '.') {
      if (o + dpl >= max) return 0;
      memcpy(buf + o, dp, dpl);
      o += dpl;
    } else {
      if (o + 1 >= max) return 0;
      buf[o++] = tok[i];
    }
  }
  buf[o] = '\0';
  *out = strtod(buf, &end);
  return end == buf + o;
}
