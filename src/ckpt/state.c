/*
 * hooked — writing the checkpoint state file
 * (checkpoint-format.md "The state file"), and the public state-file API.
 * state_parse.c reads it.
 *
 * Writing emits the checksum line, then exactly checkpoint-format.md's
 * lines in its order, numbers as the shortest %.Ng text (N = 1..17) that
 * converts back to the same double, always with '.' as the decimal point;
 * -0 is written as 0.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "ckpt/ckpt_internal.h"
#include "ckpt/state_internal.h"
#include "util/decimal.h"
#include "util/fs.h"
#include "util/path.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct hk_checkpoint_state {
  hk_env env;         /* what everything below was allocated with */
  char *model_path;   /* "<dir>/<model>" */
  char **paths;       /* n "<dir>/<name>", oldest first */
  double *timestamps; /* n, or NULL */
  size_t n;
  double last_preserved; /* NaN when absent */
};

/* ---- small helpers ---------------------------------------------------------------- */

/* A bounded, log-safe rendering of a name: backslashes and bytes that are
 * control bytes in ASCII are escaped, other bytes (UTF-8 included) are kept;
 * an empty name shows as "". Truncated with "..." to fit. */
const char *hk__state_printable(const char *s, size_t len, char *buf, size_t cap) {
  size_t o = 0;
  if (len == 0) {
    snprintf(buf, cap, "\"\"");
    return buf;
  }
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    char tmp[8];
    size_t k;
    if (c == '\\') {
      tmp[0] = '\\', tmp[1] = '\\', k = 2;
    } else if (c < 0x20 || c == 0x7f) {
      k = (size_t)snprintf(tmp, sizeof tmp, "\\%03o", (unsigned)c);
    } else {
      tmp[0] = (char)c, k = 1;
    }
    if (o + k + 4 > cap) {
      memcpy(buf + o, "...", 3);
      o += 3;
      break;
    }
    memcpy(buf + o, tmp, k);
    o += k;
  }
  buf[o] = '\0';
  return buf;
}

int hk__state_number_ok(double v) { return isfinite(v) && v >= 0; }

/* The shortest text among the %.Ng renderings (N = 1..17) of a finite
 * v >= 0 that read back as v (%.17g always does), the lowest N on a tie,
 * with '.' as the decimal point. Shortest text rather than lowest N: %g
 * switches to an exponent below N digits, so 1763690000 prints as
 * "1763690000" (N = 10), not "1.76369e+09" (N = 6). */
static void format_number(double v, char *out, size_t cap) {
  char tmp[64], best[64];
  size_t best_len = SIZE_MAX;

  if (v == 0) v = 0; /* -0 would print a sign the reader refuses */
  best[0] = '\0';
  for (int prec = 1; prec <= 17; prec++) {
    int k = snprintf(tmp, sizeof tmp, "%.*g", prec, v);
    if (k > 0 && (size_t)k < best_len && (prec == 17 || strtod(tmp, NULL) == v)) {
      memcpy(best, tmp, (size_t)k + 1);
      best_len = (size_t)k;
    }
  }
  hk__decimal_to_c(best, out, cap);
}

/* ---- writer ---------------------------------------------------------------------- */

typedef struct sbuf {
  const hk_env *env;
  char *p;
  size_t len, cap;
  int oom;
} sbuf;

static void sbuf_add(sbuf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    char *grown;
    while (cap < b->len + n + 1) cap *= 2;
    grown = hk_env_realloc(b->env, b->p, cap);
    if (!grown) {
      b->oom = 1;
      return;
    }
    b->p = grown;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

static void sbuf_str(sbuf *b, const char *s) { sbuf_add(b, s, strlen(s)); }

static void sbuf_field_name(sbuf *b, const char *key, const char *name) {
  sbuf_str(b, key);
  sbuf_add(b, ": \"", 3);
  sbuf_str(b, name);
  sbuf_add(b, "\"\n", 2);
}

static void sbuf_field_number(sbuf *b, const char *key, double v) {
  char num[64];
  format_number(v, num, sizeof num);
  sbuf_str(b, key);
  sbuf_add(b, ": ", 2);
  sbuf_str(b, num);
  sbuf_add(b, "\n", 1);
}

static int cstr_cmp(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* Every name valid and bare, none equal to latest_filename, none twice;
 * a refusal names the culprit. */
static hk_code check_names(const hk_env *env, const char *dir, const char *latest, const char *const *names, size_t n,
                           hk_status *st) {
  char buf[600];
  const char **sorted;
  const char *sep = (dir[0] && dir[strlen(dir) - 1] != '/') ? "/" : "";

  for (size_t i = 0; i < n; i++) {
    if (!names[i]) return hk_status_set(st, HK_INVALID_ARGUMENT, "checkpoint name %zu of the state file is NULL", i);
    if (!hk__valid_name(names[i]))
      return hk_status_set(st, HK_INVALID_ARGUMENT,
                           "Checkpoint name %s is not a bare name in the checkpoint directory %s: 1-255 bytes, no "
                           "'/', '\\', '\"', \"..\" or control bytes, and not \".\"",
                           hk__state_printable(names[i], strlen(names[i]), buf, 300), dir);
    if (strcmp(names[i], latest) == 0)
      return hk_status_set(st, HK_INVALID_ARGUMENT,
                           "Save path '%s%s%s' conflicts with path used for checkpoint state.  Please use a different "
                           "save path.",
                           dir, sep, names[i]);
  }
  if (n < 2) return HK_OK;
  sorted = hk_env_calloc(env, n, sizeof *sorted);
  if (!sorted) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory writing the checkpoint state of %s", dir);
  memcpy((void *)sorted, names, n * sizeof *names);
  qsort((void *)sorted, n, sizeof *sorted, cstr_cmp);
  for (size_t i = 1; i < n; i++) {
    if (strcmp(sorted[i - 1], sorted[i]) == 0) {
      hk_status_set(st, HK_INVALID_ARGUMENT, "Checkpoint %s is listed twice for the checkpoint state of %s",
                    hk__state_printable(sorted[i], strlen(sorted[i]), buf, 300), dir);
      hk_env_free(env, (void *)sorted);
      return HK_INVALID_ARGUMENT;
    }
  }
  hk_env_free(env, (void *)sorted);
  return HK_OK;
}

/* Each pending name valid, bare, not latest_filename, not listed, not twice. */
static hk_code check_pending(const char *dir, const char *latest, const char *const *names, size_t n,
                             const char *const *pending, size_t npending, hk_status *st) {
  char buf[300];
  for (size_t i = 0; i < npending; i++) {
    int clash = !pending[i] || !hk__valid_name(pending[i]) || strcmp(pending[i], latest) == 0;
    for (size_t j = 0; !clash && j < n; j++) clash = strcmp(pending[i], names[j]) == 0;
    for (size_t j = 0; !clash && j < i; j++) clash = strcmp(pending[i], pending[j]) == 0;
    if (clash)
      return hk_status_set(st, HK_INVALID_ARGUMENT,
                           "checkpoint %s cannot be recorded as a pending deletion in the state file of %s: not a "
                           "valid name, the state file's own, listed, or recorded twice",
                           pending[i] ? hk__state_printable(pending[i], strlen(pending[i]), buf, sizeof buf) : "NULL",
                           dir);
  }
  return HK_OK;
}

/* last_preserved NaN leaves its line out (callers that track none). */
hk_code hk__state_format(const hk_env *env, const char *dir, const char *latest_filename, const char *const *names,
                         const double *timestamps, size_t n, double last_preserved, const char *const *pending,
                         size_t npending, char **text, size_t *len, hk_status *st) {
  char buf[600];
  sbuf b;
  hk_code rc;

  *text = NULL;
  *len = 0;
  if (!dir) return hk_status_set(st, HK_INVALID_ARGUMENT, "checkpoint state: 'dir' is NULL");
  if (!latest_filename) latest_filename = DEFAULT_LATEST_FILENAME;
  if (!hk__valid_name(latest_filename))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "latest_filename %s is not a valid name for the state file in %s",
                         hk__state_printable(latest_filename, strlen(latest_filename), buf, 300), dir);
  if (n == 0 || !names)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "no checkpoint to record in the checkpoint state of %s", dir);
  rc = check_names(env, dir, latest_filename, names, n, st);
  if (rc == HK_OK) rc = check_pending(dir, latest_filename, names, n, pending, npending, st);
  if (rc != HK_OK) return rc;
  for (size_t i = 0; timestamps && i < n; i++)
    if (!hk__state_number_ok(timestamps[i]))
      return hk_status_set(st, HK_INVALID_ARGUMENT,
                           "timestamp of checkpoint %s must be finite and >= 0 for the state file in %s, got %g",
                           names[i], dir, timestamps[i]);
  if (!isnan(last_preserved) && !hk__state_number_ok(last_preserved))
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "last_preserved_timestamp must be finite and >= 0 for the state file in %s, got %g", dir,
                         last_preserved);

  memset(&b, 0, sizeof b);
  b.env = env;
  /* The checksum line's room, filled once the rest is known. */
  sbuf_add(&b, CHECKSUM_PREFIX " 00000000\n", CHECKSUM_LINE_LEN);
  /* Right after the checksum line, which covers them: comments to
   * TensorFlow's parser. */
  for (size_t i = 0; i < npending; i++) {
    sbuf_str(&b, HK__PENDING_LINE);
    sbuf_str(&b, pending[i]);
    sbuf_add(&b, "\"\n", 2);
  }
  sbuf_field_name(&b, hk__state_key_names[KEY_MODEL], names[n - 1]);
  for (size_t i = 0; i < n; i++) sbuf_field_name(&b, hk__state_key_names[KEY_PATHS], names[i]);
  for (size_t i = 0; timestamps && i < n; i++)
    sbuf_field_number(&b, hk__state_key_names[KEY_TIMESTAMPS], timestamps[i]);
  if (!isnan(last_preserved)) sbuf_field_number(&b, hk__state_key_names[KEY_LAST_PRESERVED], last_preserved);
  if (b.oom) {
    hk_env_free(env, b.p);
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory writing the checkpoint state of %s", dir);
  }
  if (b.len > STATE_MAX_BYTES) {
    hk_env_free(env, b.p);
    /* Never write a state file the reader would refuse. */
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "checkpoint state of %s would be %zu bytes, more than the %zu a reader accepts", dir, b.len,
                         STATE_MAX_BYTES);
  }
  {
    char crc[9];
    snprintf(crc, sizeof crc, "%08" PRIx32, hk_crc32c_extend(0, b.p + CHECKSUM_LINE_LEN, b.len - CHECKSUM_LINE_LEN));
    memcpy(b.p + sizeof CHECKSUM_PREFIX, crc, 8);
  }
  *text = b.p;
  *len = b.len;
  return HK_OK;
}

hk_code hk__state_write(const hk_env *env, const char *dir, const char *latest_filename, const char *const *names,
                        const double *timestamps, size_t n, double last_preserved, const char *const *pending,
                        size_t npending, hk_status *st) {
  char *text = NULL, *path;
  size_t len = 0;
  hk_code rc = hk__state_format(env, dir, latest_filename, names, timestamps, n, last_preserved, pending, npending,
                                &text, &len, st);

  if (rc != HK_OK) return rc;
  path = hk__path_join(env, dir, latest_filename ? latest_filename : DEFAULT_LATEST_FILENAME);
  if (!path) {
    hk_env_free(env, text);
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory writing the checkpoint state of %s", dir);
  }
  rc = hk__write_file_atomic(env, path, text, len, st);
  hk_env_free(env, path);
  hk_env_free(env, text);
  return rc;
}

/* ---- public API ------------------------------------------------------------------ */

void hk_checkpoint_state_free(hk_checkpoint_state *cs) {
  if (!cs) return;
  if (cs->paths)
    for (size_t i = 0; i < cs->n; i++) hk_env_free(&cs->env, cs->paths[i]);
  hk_env_free(&cs->env, cs->paths);
  hk_env_free(&cs->env, cs->timestamps);
  hk_env_free(&cs->env, cs->model_path);
  hk_env env = cs->env;
  hk_env_free(&env, cs);
}

hk_code hk_checkpoint_state_get(hk_checkpoint_state **out, const hk_env *env, const char *dir,
                                const char *latest_filename, hk_status *status) {
  char buf[600];
  hk_checkpoint_state *cs;
  hk__state s;
  hk_code rc;

  if (out) *out = NULL;
  rc = hk_env_check(env, "env", status);
  if (rc != HK_OK) return rc;
  if (!out) return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_checkpoint_state_get: 'out' is NULL");
  if (!dir) return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_checkpoint_state_get: 'dir' is NULL");
  if (!latest_filename) latest_filename = DEFAULT_LATEST_FILENAME;
  if (!hk__valid_name(latest_filename))
    return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_checkpoint_state_get: latest_filename %s is not a valid name",
                         hk__state_printable(latest_filename, strlen(latest_filename), buf, 300));

  rc = hk__state_read(env, dir, latest_filename, &s, status);
  if (rc != HK_OK) return rc;

  cs = hk_env_calloc(env, 1, sizeof *cs);
  if (cs) {
    hk_env_copy(&cs->env, env);
    cs->paths = hk_env_calloc(env, s.n, sizeof *cs->paths);
    cs->model_path = hk__path_join(env, dir, s.model);
    if (cs->paths) {
      cs->n = s.n;
      for (size_t i = 0; i < s.n; i++) {
        cs->paths[i] = hk__path_join(env, dir, s.names[i]);
        if (!cs->paths[i]) rc = HK_RESOURCE_EXHAUSTED;
      }
    }
    if (!cs->paths || !cs->model_path) rc = HK_RESOURCE_EXHAUSTED;
    cs->timestamps = s.timestamps;
    s.timestamps = NULL;
    cs->last_preserved = s.last_preserved;
  } else {
    rc = HK_RESOURCE_EXHAUSTED;
  }
  hk__state_clear(env, &s);
  if (rc != HK_OK) {
    hk_checkpoint_state_free(cs);
    return hk_status_set(status, rc, "out of memory reading the checkpoint state of %s", dir);
  }
  *out = cs;
  return HK_OK;
}

const char *hk_checkpoint_state_model_path(const hk_checkpoint_state *cs) { return cs ? cs->model_path : NULL; }

size_t hk_checkpoint_state_count(const hk_checkpoint_state *cs) { return cs ? cs->n : 0; }

const char *hk_checkpoint_state_path(const hk_checkpoint_state *cs, size_t i) {
  return cs && i < cs->n ? cs->paths[i] : NULL;
}

double hk_checkpoint_state_timestamp(const hk_checkpoint_state *cs, size_t i) {
  return cs && cs->timestamps && i < cs->n ? cs->timestamps[i] : NAN;
}

double hk_checkpoint_state_last_preserved(const hk_checkpoint_state *cs) { return cs ? cs->last_preserved : NAN; }

/* The bare name of `name` relative to dir: itself when it has no '/', the
 * rest after "<dir>/" otherwise; NULL when it lives elsewhere. */
static const char *bare_name(const char *dir, const char *name) {
  size_t dl = strlen(dir);
  const char *rest;
  if (!strchr(name, '/')) return name;
  if (dl == 0 || strncmp(name, dir, dl) != 0) return NULL;
  rest = name + dl;
  if (dir[dl - 1] != '/') {
    if (*rest != '/') return NULL;
    rest++;
  }
  return strchr(rest, '/') ? NULL : rest;
}

hk_code hk_checkpoint_state_update(const hk_env *env, const char *dir, const char *newest, const char *const *names,
                                   size_t n, const double *timestamps, double last_preserved,
                                   const char *latest_filename, hk_status *status) {
  const char **bare = NULL;
  double *ts = NULL;
  const char *newest_bare;
  size_t count = n, at;
  hk_code rc;

  rc = hk_env_check(env, "env", status);
  if (rc != HK_OK) return rc;
  if (!dir) return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_checkpoint_state_update: 'dir' is NULL");
  if (!newest) return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_checkpoint_state_update: 'newest' is NULL");
  if (n > 0 && !names)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_checkpoint_state_update: 'names' is NULL with n = %zu", n);
  if (!hk__state_number_ok(last_preserved))
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         "hk_checkpoint_state_update: last_preserved must be finite and >= 0, got %g", last_preserved);
  if (n >= SIZE_MAX / sizeof(double) - 1)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_checkpoint_state_update: n = %zu is too large", n);

  newest_bare = bare_name(dir, newest);
  if (!newest_bare)
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         "Checkpoint %s is not in %s: the checkpoint state records only checkpoints of its own "
                         "directory",
                         newest, dir);
  bare = hk_env_calloc(env, n + 1, sizeof *bare);
  if (timestamps) ts = hk_env_calloc(env, n + 1, sizeof *ts);
  if (!bare || (timestamps && !ts)) {
    rc = hk_status_set(status, HK_RESOURCE_EXHAUSTED, "out of memory writing the checkpoint state of %s", dir);
    goto done;
  }
  at = n;
  for (size_t i = 0; i < n; i++) {
    if (!names[i]) {
      rc = hk_status_set(status, HK_INVALID_ARGUMENT, "hk_checkpoint_state_update: names[%zu] is NULL", i);
      goto done;
    }
    bare[i] = bare_name(dir, names[i]);
    if (!bare[i]) {
      rc = hk_status_set(status, HK_INVALID_ARGUMENT,
                         "Checkpoint %s is not in %s: the checkpoint state records only checkpoints of its own "
                         "directory",
                         names[i], dir);
      goto done;
    }
    if (ts) ts[i] = timestamps[i];
    if (at == n && strcmp(bare[i], newest_bare) == 0) at = i;
  }
  if (at == n) {
    /* The newest goes last in the list; it was just written, so "now" is its
     * timestamp. */
    hk_env_log(env, HK_LOG_INFO, "%s is not in all_model_checkpoint_paths. Manually adding it.", newest);
    bare[n] = newest_bare;
    if (ts) ts[n] = hk_env_wall(env);
    count = n + 1;
  } else if (at != n - 1) {
    /* Listed, but not last: the newest goes last, with its timestamp. */
    const char *name = bare[at];
    double t = ts ? ts[at] : 0;
    memmove((void *)(bare + at), bare + at + 1, (n - at - 1) * sizeof *bare);
    bare[n - 1] = name;
    if (ts) {
      memmove(ts + at, ts + at + 1, (n - at - 1) * sizeof *ts);
      ts[n - 1] = t;
    }
  }
  {
    /* The deletions the current file records stay recorded (a name the new
     * list names drops out): they may not be durable yet, and the next save
     * of a Saver finishes them. A missing or malformed file records
     * nothing; one that cannot be read is an error, as losing what it
     * records would be. */
    hk__state cur;
    size_t kept = 0;
    memset(&cur, 0, sizeof cur);
    /* An invalid name is refused by the write, as such. */
    rc = hk__valid_name(latest_filename ? latest_filename : DEFAULT_LATEST_FILENAME)
             ? hk__pending_state_read(env, dir, latest_filename ? latest_filename : DEFAULT_LATEST_FILENAME, &cur,
                                      status)
             : HK_NOT_FOUND;
    if (rc == HK_NOT_FOUND || rc == HK_DATA_LOSS) {
      hk_status_clear(status);
      rc = HK_OK;
    }
    for (size_t i = 0; rc == HK_OK && i < cur.npending; i++) {
      int listed = 0;
      for (size_t j = 0; j < count && !listed; j++) listed = strcmp(cur.pending[i], bare[j]) == 0;
      if (!listed)
        cur.pending[kept++] = cur.pending[i];
      else
        hk_env_free(env, cur.pending[i]);
    }
    cur.npending = kept;
    if (rc == HK_OK)
      rc = hk__state_write(env, dir, latest_filename, bare, ts, count, last_preserved, (const char *const *)cur.pending,
                           cur.npending, status);
    hk__state_clear(env, &cur);
  }
done:
  hk_env_free(env, (void *)bare);
  hk_env_free(env, ts);
  return rc;
}
