/*
 * hooked — the check-resume mode's environment variable,
 * HOOKED_CHECK_RESUME (hooked/checkpoint_saver.h): read by the checkpoint
 * saver hooks in begin() and by the host loop at its start, which
 * `hooked-ckpt check-resume` sets for the runs it makes of a program. A
 * comma-separated list of key=value:
 *
 *   report=DIR   a directory the tool made, for the loop's reports of
 *                registered states whose bytes are not stable
 *   stop_at=K    stop after the step that reaches global step K (>= 0)
 *   keep_all=1   keep every checkpoint (0: the program's retention)
 *
 * A value that is not that list is an error, never ignored: a run that
 * silently skipped the stop would pass for a resumed one.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "core/core.h"

#include <stdlib.h>
#include <string.h>

/* What every error message ends with, so it says what the variable is. */
#define WHAT                                                                    \
  " (" HK__CHECK_RESUME_VAR                                                     \
  " is set by hooked-ckpt check-resume: a comma-separated list of report=DIR, " \
  "stop_at=STEP and keep_all=0|1; unset it to train normally)"

/* At most this much of a bad item is quoted back. */
#define QUOTE_MAX 64

static hk_code bad_item(hk_status *st, const char *item, size_t len, const char *why) {
  int shown = (int)(len > QUOTE_MAX ? QUOTE_MAX : len);
  return hk_status_set(st, HK_INVALID_ARGUMENT, HK__CHECK_RESUME_VAR ": '%.*s%s': %s" WHAT, shown, item,
                       len > QUOTE_MAX ? "..." : "", why);
}

static int key_is(const char *item, size_t key_len, const char *key) {
  return key_len == strlen(key) && memcmp(item, key, key_len) == 0;
}

/* Decimal digits only, at most INT64_MAX. */
static int parse_step(const char *s, size_t len, int64_t *out) {
  int64_t v = 0;
  if (len == 0) return 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9') return 0;
    if (v > (INT64_MAX - (s[i] - '0')) / 10) return 0;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return 1;
}

hk_code hk__check_resume_parse(const char *value, hk__check_resume *out, hk_status *st) {
  int seen_report = 0, seen_keep = 0;
  const char *p = value;

  memset(out, 0, sizeof *out);
  if (value == NULL || value[0] == '\0') return HK_OK;
  out->on = 1;
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    const char *eq = memchr(p, '=', len);
    size_t key_len = eq ? (size_t)(eq - p) : len;
    const char *v = eq ? eq + 1 : NULL;
    size_t vlen = eq ? len - key_len - 1 : 0;

    if (len == 0) return bad_item(st, p, len, "an empty item (two commas, or a comma at an end)");
    if (eq == NULL) return bad_item(st, p, len, "not key=value");
    if (key_is(p, key_len, "report")) {
      if (seen_report) return bad_item(st, p, len, "report is given twice");
      if (vlen == 0) return bad_item(st, p, len, "report needs a directory");
      seen_report = 1;
      out->report = v;
      out->report_len = vlen;
    } else if (key_is(p, key_len, "stop_at")) {
      if (out->has_stop_at) return bad_item(st, p, len, "stop_at is given twice");
      if (!parse_step(v, vlen, &out->stop_at))
        return bad_item(st, p, len, "stop_at takes a global step, a decimal integer >= 0");
      out->has_stop_at = 1;
    } else if (key_is(p, key_len, "keep_all")) {
      if (seen_keep) return bad_item(st, p, len, "keep_all is given twice");
      if (vlen != 1 || (v[0] != '0' && v[0] != '1')) return bad_item(st, p, len, "keep_all takes 0 or 1");
      seen_keep = 1;
      out->keep_all = v[0] == '1';
    } else {
      return bad_item(st, p, len, "an unknown key");
    }
    if (comma == NULL) break;
    p = comma + 1;
  }
  return HK_OK;
}

hk_code hk__check_resume_read(hk__check_resume *out, hk_status *st) {
  return hk__check_resume_parse(getenv(HK__CHECK_RESUME_VAR), out, st);
}
