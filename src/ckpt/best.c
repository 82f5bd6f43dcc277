/*
 * hooked — the best-checkpoint record of best-k retention
 * (checkpoint-format.md "The best-checkpoint record").
 *
 * A Saver that keeps the k best checkpoints by a metric, beside the
 * max_to_keep newest, lists them in the state file like any managed
 * checkpoint (TensorFlow's fields only) and records which they are, with
 * their metric values, in "<latest_filename>.best" beside it:
 *
 *   # hooked best checkpoints 1
 *   mode: min
 *   best: "model.ckpt-300" 0.25
 *   best: "model.ckpt-100" 0.3125
 *
 * best first. The record is written atomically before the state
 * file whenever it changes, so the state file that relies on it (keeping a
 * checkpoint beyond max_to_keep) never exists without it; it only ever
 * protects checkpoints the state file lists, so a record that is lost,
 * stale or refused can make the next save treat a best checkpoint as an
 * ordinary one, never delete anything the state file does not list.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "ckpt/ckpt_internal.h"
#include "util/common.h"
#include "util/decimal.h"
#include "util/fs.h"
#include "util/path.h"
#include "util/record_lines.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC "# hooked best checkpoints 1"
#define KEY_MODE "mode: "
#define KEY_BEST "best: \""
/* Far more than any record: k names of at most 255 bytes with a number. */
#define BEST_MAX_BYTES ((size_t)64 << 20)

/* v (not NaN) as "%.17g" with '.' for the decimal point: reads back as v. */
static void format_metric(double v, char *out, size_t cap) {
  char tmp[64];
  snprintf(tmp, sizeof tmp, "%.17g", v);
  hk__decimal_to_c(tmp, out, cap);
}

/* strtod of the whole token in the "C" locale's sense. @return 0 when it
 * is not a number (NaN included) or has anything after it. */
static int parse_metric(const char *tok, double *out) {
  size_t n = strlen(tok);
  if (n == 0 || strpbrk(tok, " \t,")) return 0; /* no spaces, nor a decimal point of another locale */
  return hk__decimal_parse_c(tok, n, 96, out) && !isnan(*out);
}

static char *record_path(const hk_env *env, const char *dir, const char *latest) {
  char *name = hk__asprintf(env, "%s" HK__BEST_SUFFIX, latest);
  char *path = name ? hk__path_join(env, dir, name) : NULL;
  hk_env_free(env, name);
  return path;
}

void hk__best_clear(const hk_env *env, hk__best *b) {
  if (b == NULL) return;
  for (size_t i = 0; i < b->n; i++) hk_env_free(env, b->names[i]);
  hk_env_free(env, b->names);
  hk_env_free(env, b->metrics);
  memset(b, 0, sizeof *b);
}

/* ---- writing ------------------------------------------------------------------------ */

hk_code hk__best_write(const hk_env *env, const char *dir, const char *latest_filename, int mode,
                       const char *const *names, const double *metrics, size_t n, hk_status *st) {
  char *text = NULL, *path = NULL;
  size_t cap = sizeof MAGIC + sizeof KEY_MODE + 8, len;
  hk_code rc;

  for (size_t i = 0; i < n; i++) {
    const char *name = hk__path_basename(names[i]);
    /* Only names the state file lists are ranked: valid ones. */
    if (!hk__valid_name(name) || strcmp(name, latest_filename) == 0 || isnan(metrics[i]))
      return hk_status_set(st, HK_INTERNAL, "best checkpoint %s (%g) cannot be recorded in %s", names[i], metrics[i],
                           dir);
    cap += sizeof KEY_BEST + strlen(name) + 2 + 32;
  }
  text = hk_env_alloc(env, cap);
  path = record_path(env, dir, latest_filename);
  if (!text || !path) {
    rc = hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory recording the best checkpoints of %s", dir);
    goto done;
  }
  len = (size_t)snprintf(text, cap, MAGIC "\n" KEY_MODE "%s\n", mode == HK_MONITOR_MAX ? "max" : "min");
  for (size_t i = 0; i < n; i++) {
    char num[64];
    format_metric(metrics[i], num, sizeof num);
    len += (size_t)snprintf(text + len, cap - len, KEY_BEST "%s\" %s\n", hk__path_basename(names[i]), num);
  }
  rc = hk__write_file_atomic(env, path, text, len, st);

done:
  hk_env_free(env, text);
  hk_env_free(env, path);
  return rc;
}

/* ---- reading ------------------------------------------------------------------------ */

/* Strict: the exact lines hk__best_write writes. RESOURCE_EXHAUSTED is the
 * only error; a record that breaks a rule sets *malformed and *why. */
static hk_code parse(const hk_env *env, char *text, size_t len, const char *latest, hk__best *out, char *why,
                     size_t cap, int *malformed) {
  char *p = text, *line;
  const char *end = text + len;
  size_t n, lineno = 2, count = 0;

  memset(out, 0, sizeof *out);
  *malformed = 1;
  if (!hk__record_open(&p, text, len, MAGIC, why, cap)) return HK_OK;
  line = hk__record_next_line(&p, end, &n);
  if (line && strcmp(line, KEY_MODE "min") == 0)
    out->mode = HK_MONITOR_MIN;
  else if (line && strcmp(line, KEY_MODE "max") == 0)
    out->mode = HK_MONITOR_MAX;
  else {
    snprintf(why, cap, "line 2 is not \"" KEY_MODE "min\" or \"" KEY_MODE "max\"");
    return HK_OK;
  }
  for (const char *q = p; q < end; q++) count += *q == '\n';
  if (count > 0) {
    out->names = hk_env_calloc(env, count, sizeof *out->names);
    out->metrics = hk_env_calloc(env, count, sizeof *out->metrics);
    if (!out->names || !out->metrics) {
      hk__best_clear(env, out);
      return HK_RESOURCE_EXHAUSTED;
    }
  }
  while ((line = hk__record_next_line(&p, end, &n)) != NULL) {
    char *name = line + sizeof KEY_BEST - 1, *quote;
    double v;
    lineno++;
    quote = n >= sizeof KEY_BEST && memcmp(line, KEY_BEST, sizeof KEY_BEST - 1) == 0 ? strchr(name, '"') : NULL;
    if (!quote || quote[1] != ' ') {
      snprintf(why, cap, "line %zu is not 'best: \"<name>\" <value>'", lineno);
      goto refused;
    }
    *quote = '\0';
    if (!parse_metric(quote + 2, &v)) {
      snprintf(why, cap, "line %zu does not end with a number", lineno);
      goto refused;
    }
    /* A bare, valid checkpoint name of this directory, never the
     * state file; each once. */
    if (!hk__valid_name(name) || strcmp(name, latest) == 0) {
      snprintf(why, cap, "line %zu does not name a checkpoint of this directory", lineno);
      goto refused;
    }
    for (size_t i = 0; i < out->n; i++)
      if (strcmp(out->names[i], name) == 0) {
        snprintf(why, cap, "line %zu names %s a second time", lineno, name);
        goto refused;
      }
    out->names[out->n] = hk_env_strdup(env, name);
    if (!out->names[out->n]) {
      hk__best_clear(env, out);
      return HK_RESOURCE_EXHAUSTED;
    }
    out->metrics[out->n++] = v;
  }
  *malformed = 0;
  return HK_OK;

refused:
  hk__best_clear(env, out);
  return HK_OK;
}

hk_code hk__best_read(const hk_env *env, const char *dir, const char *latest_filename, hk__best *out, char *why,
                      size_t cap, int *malformed, hk_status *st) {
  hk_status rst = HK_STATUS_INIT;
  char *path, *text = NULL;
  size_t len = 0;
  hk_code rc;

  memset(out, 0, sizeof *out);
  *malformed = 0;
  path = record_path(env, dir, latest_filename);
  if (!path) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory reading the best checkpoints of %s", dir);
  rc = hk__read_file(env, path, BEST_MAX_BYTES, &text, &len, &rst);
  if (rc == HK_OUT_OF_RANGE) {
    *malformed = 1;
    snprintf(why, cap, "it is larger than any record hooked writes");
    rc = HK_OK;
  } else if (rc == HK_NOT_FOUND || rc == HK_RESOURCE_EXHAUSTED) {
    hk__status_copy(st, &rst);
  } else if (rc != HK_OK) {
    rc = hk_status_set(st, rc, "Cannot read the best-checkpoint record %s: %s", path, rst.message);
  } else if (parse(env, text, len, latest_filename, out, why, cap, malformed) != HK_OK) {
    rc = hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory reading the best checkpoints of %s", dir);
  }
  hk_env_free(env, text);
  hk_env_free(env, path);
  return rc;
}

hk_code hk_checkpoint_best(char **out, double *value, const hk_env *env, const char *dir, const char *latest_filename,
                           hk_status *st) {
  static const char fn[] = "hk_checkpoint_best";
  hk__best b;
  char why[256] = "";
  int malformed = 0;
  if (out) *out = NULL;
  if (!out || !dir) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: %s is NULL", fn, !out ? "out" : "dir");
  const char *latest = latest_filename ? latest_filename : "checkpoint";
  if (!hk__valid_name(latest))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: latest_filename '%s' is not a valid name", fn, latest);
  char *path = record_path(env, dir, latest);
  if (!path) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
  hk_status rst = HK_STATUS_INIT;
  hk_code rc = hk__best_read(env, dir, latest, &b, why, sizeof why, &malformed, &rst);
  if (rc == HK_NOT_FOUND || (rc == HK_OK && !malformed && b.n == 0))
    rc = hk_status_set(st, HK_NOT_FOUND,
                       "No best-checkpoint record %s lists a checkpoint: best-k retention (best_k with best_metric) "
                       "has ranked no save in %s with a value that is a number",
                       path, dir);
  else if (rc != HK_OK)
    hk__status_copy(st, &rst);
  else if (malformed)
    rc = hk_status_set(st, HK_DATA_LOSS, "The best-checkpoint record %s is malformed: %s", path, why);
  else if (!(*out = hk__path_join(env, dir, b.names[0])))
    rc = hk_status_set(st, HK_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
  else if (value)
    *value = b.metrics[0];
  hk__best_clear(env, &b);
  hk_env_free(env, path);
  return rc;
}
