/*
 * hooked — MetricsLogHook: its file. The rows as text (numbers that read
 * back exactly), the rows a restart keeps, and the rewrite that keeps them:
 * the kept bytes go to "<path>.tmp", which is fsynced and renamed over the
 * log (the file system interface has no truncate, and the rename makes the
 * truncation atomic), and that file stays open for the rows to come.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "hooks/metrics_log_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOOK_NAME HK__METRICS_LOG_NAME

static void fs_of(const hk_env *env, const hk_fs_vtable **fs, void **user) {
  *fs = env->fs ? env->fs : hk_fs_posix();
  *user = env->fs ? env->fs_user : NULL;
}

/* ---- values as text ----------------------------------------------------------- */

static size_t put(char *dst, const char *s) {
  size_t n = strlen(s);
  memcpy(dst, s, n);
  return n;
}

static size_t put_non_finite(char *dst, double v, int json) {
  if (isnan(v)) return put(dst, json ? "\"NaN\"" : "nan");
  if (v > 0) return put(dst, json ? "\"Infinity\"" : "inf");
  return put(dst, json ? "\"-Infinity\"" : "-inf");
}

/* Copy a finite number printed by "%g" with a '.' for its decimal point,
 * whatever LC_NUMERIC the program set: the only other bytes are digits,
 * signs and the exponent's 'e'. */
static size_t put_number(char *dst, const char *buf, int n) {
  for (int i = 0; i < n; i++) {
    char c = buf[i];
    dst[i] = (c >= '0' && c <= '9') || c == '-' || c == '+' || c == 'e' ? c : '.';
  }
  return (size_t)n;
}

/* The shortest of %.15g, %.16g and %.17g that reads back as the same
 * double: %.17g always does, the shorter ones spare "0.10000000000000001".
 * (Printed and read back in the program's locale, then given a '.'.) */
static size_t put_f64(char *dst, double v, int json) {
  char buf[HK__METRICS_LOG_CELL_MAX];
  int n = 0;
  if (!isfinite(v)) return put_non_finite(dst, v, json);
  for (int p = 15; p <= 17; p++) {
    n = snprintf(buf, sizeof buf, "%.*g", p, v);
    if (p == 17 || strtod(buf, NULL) == v) break;
  }
  return put_number(dst, buf, n);
}

/* The same for a float: the shortest of %.6g .. %.9g that reads back as it. */
static size_t put_f32(char *dst, float v, int json) {
  char buf[HK__METRICS_LOG_CELL_MAX];
  int n = 0;
  if (!isfinite(v)) return put_non_finite(dst, v, json);
  for (int p = 6; p <= 9; p++) {
    n = snprintf(buf, sizeof buf, "%.*g", p, (double)v);
    if (p == 9 || strtof(buf, NULL) == v) break;
  }
  return put_number(dst, buf, n);
}

static size_t put_i64(char *dst, int64_t v) {
  char buf[HK__METRICS_LOG_CELL_MAX];
  int n = snprintf(buf, sizeof buf, "%" PRId64, v);
  memcpy(dst, buf, (size_t)n);
  return (size_t)n;
}

/* One tensor's value (one number of any float or integer dtype). */
static hk_code put_tensor(char *dst, size_t *len, const hk_tensor *t, const char *name, int json, hk_status *status) {
  char buf[HK__METRICS_LOG_CELL_MAX];
  hk_code rc;
  double d;
  if (hk_tensor_num_elements(t) != 1 || t->data == NULL || t->nbytes < hk_dtype_size(t->dtype) ||
      !(hk_dtype_is_float(t->dtype) || hk_dtype_is_integer(t->dtype)))
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         HOOK_NAME ": column '%s' is %s of %" PRId64 " element(s); a metrics column is one number",
                         name, hk_dtype_name(t->dtype), hk_tensor_num_elements(t));
  switch (t->dtype) {
    case HK_DTYPE_F32: {
      float f;
      memcpy(&f, t->data, sizeof f);
      *len = put_f32(dst, f, json);
      return HK_OK;
    }
    case HK_DTYPE_U64: {
      uint64_t u;
      int n;
      memcpy(&u, t->data, sizeof u);
      n = snprintf(buf, sizeof buf, "%" PRIu64, u);
      memcpy(dst, buf, (size_t)n);
      *len = (size_t)n;
      return HK_OK;
    }
    default: break;
  }
  if (hk_dtype_is_integer(t->dtype)) {
    int64_t i;
    rc = hk_tensor_to_i64(&i, t, name, status);
    if (rc == HK_OK) *len = put_i64(dst, i);
    return rc;
  }
  rc = hk_tensor_to_f64(&d, t, name, status); /* f16, bf16, f64: exact as a double */
  if (rc == HK_OK) *len = put_f64(dst, d, json);
  return rc;
}

/* ---- the rows already in the file ----------------------------------------------- */

/* The step a row starts with, or 0 when the line is no row. */
static int row_step(const metrics_log *self, const char *line, size_t n, int64_t *step) {
  static const char json_head[] = "{\"step\":";
  size_t i = 0;
  int neg = 0, digits = 0;
  uint64_t v = 0;
  if (self->format == HK_METRICS_LOG_JSONL) {
    if (n < sizeof json_head - 1 || memcmp(line, json_head, sizeof json_head - 1) != 0) return 0;
    i = sizeof json_head - 1;
  }
  if (i < n && line[i] == '-') {
    neg = 1;
    i++;
  }
  for (; i < n && line[i] >= '0' && line[i] <= '9'; i++, digits++) {
    if (v > (UINT64_C(1) << 62)) return 0;
    v = v * 10 + (uint64_t)(line[i] - '0');
  }
  if (digits == 0 || v > (uint64_t)INT64_MAX || i >= n) return 0;
  if (line[i] != ',' && !(self->format == HK_METRICS_LOG_JSONL && line[i] == '}')) return 0;
  *step = neg ? -(int64_t)v : (int64_t)v;
  return 1;
}

/* Whether a first line cut short (n bytes, no newline) may be this hook's:
 * the start of its CSV header or of a JSON row, or zeros (a power loss
 * keeps a file's size but not the bytes written since its last fsync). */
static int torn_start_is_ours(const metrics_log *self, const char *p, size_t n) {
  static const char json_head[] = "{\"step\":";
  const char *start = self->format == HK_METRICS_LOG_CSV ? self->header : json_head;
  size_t m = self->format == HK_METRICS_LOG_CSV ? self->header_len : sizeof json_head - 1;
  if (n > 0 && p[0] == '\0') return 1;
  return memcmp(p, start, n < m ? n : m) == 0;
}

static hk_code not_a_log(const metrics_log *self, hk_status *status) {
  return hk_status_set(status, HK_FAILED_PRECONDITION,
                       HOOK_NAME
                       ": '%s' is no metrics log (its first line is no row); log to another file, or move "
                       "this one away",
                       self->path);
}

/* How many bytes of the file's `n` to keep at restored step `gs`: the
 * header and the rows up to gs; counts what is dropped. */
static hk_code scan(metrics_log *self, const char *data, size_t n, int64_t gs, size_t *keep, hk_status *status) {
  size_t pos = 0, line_no = 1;
  const char *nl;
  int64_t step;

  *keep = 0;
  self->kept_rows = self->dropped_rows = 0;
  self->dropped_torn = 0;
  if (n == 0) return HK_OK;
  if (self->format == HK_METRICS_LOG_CSV) {
    nl = memchr(data, '\n', n);
    if (nl == NULL) { /* a header cut short: the file starts over */
      if (!torn_start_is_ours(self, data, n)) return not_a_log(self, status);
      self->dropped_torn = 1;
      return HK_OK;
    }
    if ((size_t)(nl - data) + 1 != self->header_len || memcmp(data, self->header, self->header_len) != 0) {
      int theirs = (int)(nl - data) > 200 ? 200 : (int)(nl - data);
      return hk_status_set(status, HK_FAILED_PRECONDITION,
                           HOOK_NAME
                           ": metrics log '%s' has the columns \"%.*s\", this run's are \"%.*s\"; log to "
                           "another file, or move this one away",
                           self->path, theirs, data, (int)self->header_len - 1, self->header);
    }
    pos = *keep = self->header_len;
    line_no = 2;
  }
  for (; pos < n; line_no++) {
    nl = memchr(data + pos, '\n', n - pos);
    if (nl == NULL) {
      if (pos == 0 && !torn_start_is_ours(self, data, n)) return not_a_log(self, status);
      self->dropped_torn = 1;
      break;
    }
    if (!row_step(self, data + pos, (size_t)(nl - (data + pos)), &step)) {
      if (pos == 0) return not_a_log(self, status);
      hk_hook_log(self->hook, HK_LOG_WARNING,
                  HOOK_NAME ": metrics log '%s': line %zu is no row; it and the lines after it are dropped", self->path,
                  line_no);
      break;
    }
    if (step > gs) break;
    self->kept_rows++;
    pos = (size_t)(nl - data) + 1;
    *keep = pos;
  }
  for (size_t i = *keep; i < n; i++)
    if (data[i] == '\n') self->dropped_rows++;
  self->dropped_torn = n > *keep && data[n - 1] != '\n';
  return HK_OK;
}

/* ---- the file ------------------------------------------------------------------- */

static hk_code write_all(const hk_fs_vtable *fs, void *fu, hk_fs_file *f, const char *p, size_t n, hk_status *status) {
  while (n > 0) {
    size_t done = 0;
    hk_code rc = fs->write(fu, f, p, n, &done, status);
    if (rc != HK_OK) return rc;
    if (done == 0 || done > n)
      return hk_status_set(status, HK_INTERNAL, "the file system's write reported %zu of %zu bytes written", done, n);
    p += done;
    n -= done;
  }
  return HK_OK;
}

void hk__metrics_log_close(metrics_log *self) {
  hk_status ignored = HK_STATUS_INIT;
  if (self->file == NULL) return;
  (void)self->file_fs->close(self->file_fs_user, self->file, &ignored);
  self->file = NULL;
}

/* The file's bytes into *out (allocated; NULL when there is no file). */
static hk_code read_file(metrics_log *self, const hk_fs_vtable *fs, void *fu, char **out, size_t *n,
                         hk_status *status) {
  hk_fs_stat stat;
  hk_fs_file *f = NULL;
  uint64_t size = 0;
  size_t got = 0;
  char *buf;
  hk_code rc = fs->stat(fu, self->path, &stat, status);

  *out = NULL;
  *n = 0;
  if (rc == HK_NOT_FOUND) {
    hk_status_clear(status);
    return HK_OK;
  }
  if (rc != HK_OK) return rc;
  if (stat.is_dir)
    return hk_status_set(status, HK_FAILED_PRECONDITION, HOOK_NAME ": metrics log '%s' is a directory", self->path);
  rc = fs->open_read(fu, self->path, &f, status);
  if (rc != HK_OK) return rc;
  rc = fs->size(fu, f, &size, status);
  if (rc == HK_OK && size > SIZE_MAX - 1)
    rc = hk_status_set(status, HK_OUT_OF_RANGE, HOOK_NAME ": metrics log '%s' is too large to read", self->path);
  buf = rc == HK_OK ? hk_env_alloc(hk__metrics_log_env(self), (size_t)size + 1) : NULL;
  if (rc == HK_OK && buf == NULL) rc = hk_status_set(status, HK_RESOURCE_EXHAUSTED, HOOK_NAME ": out of memory");
  while (rc == HK_OK && got < (size_t)size) {
    size_t nread = 0;
    rc = fs->read_at(fu, f, buf + got, (size_t)size - got, got, &nread, status);
    if (rc == HK_OK && nread == 0) break; /* the file shrank: what was read is the file */
    got += nread;
  }
  {
    hk_status ignored = HK_STATUS_INIT;
    (void)fs->close(fu, f, &ignored);
  }
  if (rc != HK_OK) {
    hk_env_free(hk__metrics_log_env(self), buf);
    return rc;
  }
  *out = buf;
  *n = got;
  return HK_OK;
}

/* Keep the file's rows up to `gs` and open it for the rows to come: the
 * kept bytes go to "<path>.tmp", fsynced and renamed over the file, whose
 * directory is then fsynced; that handle stays open for appending. */
hk_code hk__metrics_log_open(metrics_log *self, int64_t gs, hk_status *status) {
  const hk_env *env = hk_hook_env(self->hook);
  const hk_fs_vtable *fs;
  void *fu;
  hk_fs_file *f = NULL;
  char *data = NULL;
  size_t n = 0, keep = 0;
  hk_code rc;

  hk__metrics_log_close(self);
  fs_of(env, &fs, &fu);
  if (strcmp(self->dir, ".") != 0) {
    rc = hk_fs_make_dirs(env, self->dir, status);
    if (rc != HK_OK) return rc;
  }
  rc = read_file(self, fs, fu, &data, &n, status);
  if (rc == HK_OK) rc = scan(self, data, n, gs, &keep, status);
  if (rc == HK_OK) {
    rc = fs->unlink(fu, self->tmp_path, status);
    if (rc == HK_NOT_FOUND) {
      hk_status_clear(status);
      rc = HK_OK;
    }
  }
  if (rc == HK_OK) rc = fs->create_excl(fu, self->tmp_path, &f, status);
  if (rc == HK_OK && keep == 0 && self->header != NULL)
    rc = write_all(fs, fu, f, self->header, self->header_len, status);
  if (rc == HK_OK && keep > 0) rc = write_all(fs, fu, f, data, keep, status);
  if (rc == HK_OK) rc = fs->sync(fu, f, status);
  if (rc == HK_OK) rc = fs->rename(fu, self->tmp_path, self->path, status);
  if (rc == HK_OK) rc = fs->sync_dir(fu, self->dir, status);
  hk_env_free(hk__metrics_log_env(self), data);
  if (rc != HK_OK) {
    hk_status ignored = HK_STATUS_INIT;
    if (f != NULL) {
      (void)fs->close(fu, f, &ignored);
      (void)fs->unlink(fu, self->tmp_path, &ignored);
    }
    return rc;
  }
  self->file = f;
  self->file_fs = fs;
  self->file_fs_user = fu;
  self->broken = 0;
  self->rows = 0;
  if (self->dropped_rows > 0 || self->dropped_torn)
    hk_hook_log(self->hook, HK_LOG_INFO,
                HOOK_NAME ": metrics log '%s' resumed at step %" PRId64 ": kept %" PRId64 " row(s), dropped %" PRId64
                          " row(s) past that step%s.",
                self->path, gs, self->kept_rows, self->dropped_rows,
                self->dropped_torn ? " and a last line cut short" : "");
  return HK_OK;
}

hk_code hk__metrics_log_sync(metrics_log *self, hk_status *status) {
  hk_status inner = HK_STATUS_INIT;
  hk_code rc;
  if (self->file == NULL) return HK_OK;
  rc = self->file_fs->sync(self->file_fs_user, self->file, &inner);
  if (rc != HK_OK) return hk_status_set(status, rc, HOOK_NAME ": fsync of '%s': %s", self->path, inner.message);
  return HK_OK;
}

/* ---- rows ----------------------------------------------------------------------- */

hk_code hk__metrics_log_write_row(metrics_log *self, int64_t gs, const hk_tensor *values, hk_status *status) {
  int json = self->format == HK_METRICS_LOG_JSONL;
  char *p = self->line;
  size_t len = 0;
  hk_status inner;
  hk_code rc;

  inner.code = HK_OK; /* no initializer: it would clear the message buffer at every row */
  inner.message[0] = '\0';

  p += put(p, json ? "{\"step\":" : "");
  p += put_i64(p, gs);
  p += put(p, json ? ",\"wall_time\":" : ",");
  p += put_f64(p, hk_env_wall(hk_hook_env(self->hook)), json);
  for (size_t i = 0; i < self->ncols; i++) {
    if (json) {
      memcpy(p, self->keys[i], self->key_len[i]);
      p += self->key_len[i];
    } else {
      *p++ = ',';
    }
    if (i < self->ntensors && values != NULL) {
      rc = put_tensor(p, &len, &values[i], self->names[i], json, status);
      if (rc != HK_OK) return rc;
      p += len;
    } else if (i >= self->ntensors && self->has_rep[i - self->ntensors]) {
      p += put_f64(p, self->rep[i - self->ntensors], json);
    } else if (json) {
      p += put(p, "null");
    }
  }
  p += put(p, json ? "}\n" : "\n");
  memset(self->has_rep, 0, self->nreported ? self->nreported : 1);
  rc = write_all(self->file_fs, self->file_fs_user, self->file, self->line, (size_t)(p - self->line), &inner);
  if (rc != HK_OK) {
    self->broken = 1;
    self->broken_code = rc;
    return hk_status_set(status, rc, HOOK_NAME ": writing a row to '%s': %s; the log stops here", self->path,
                         inner.message);
  }
  self->rows++;
  return HK_OK;
}
