/*
 * hooked-ckpt — two checkpoints compared tensor by tensor, bytewise: the one
 * comparison diff prints and check-resume judges. Every tensor of both is
 * read, so every CRC is verified; one tensor per side is in memory at a
 * time, never a whole checkpoint.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "tool.h"

static int side_problem(const char *file, const hk_status *st) {
  problem(file, st);
  return DIFF_TROUBLE;
}

int side_open(const hk_env *env, ckpt_side *s, const char *arg) {
  hk_status st = HK_STATUS_INIT;
  const char *path = arg;
  memset(s, 0, sizeof *s);
  s->arg = arg;
  if (is_directory(arg)) {
    if (hk_checkpoint_latest(&s->latest, env, arg, NULL, &st) != HK_OK) return side_problem(arg, &st);
    path = s->latest;
  }
  if (hk_checkpoint_reader_open(&s->r, env, path, &st) != HK_OK) return side_problem(path, &st);
  return 0;
}

void side_close(const hk_env *env, ckpt_side *s) {
  hk_checkpoint_reader_free(s->r);
  hk_env_free(env, s->latest);
  free(s->buf);
  memset(s, 0, sizeof *s);
}

/* Read and CRC-verify tensor i of side `s` into s->buf, which grows to the
 * largest tensor read so far. @return 0, or DIFF_TROUBLE after a message. */
static int side_read(ckpt_side *s, size_t i, const hk_checkpoint_entry *e) {
  hk_status st = HK_STATUS_INIT;
  const char *path = hk_checkpoint_reader_path(s->r);
  if (e->nbytes > SIZE_MAX) {
    fprintf(stderr, TOOL ": %s: tensor %s: %" PRIu64 " bytes do not fit in memory\n", path, e->name, e->nbytes);
    return DIFF_TROUBLE;
  }
  if (s->buf == NULL || e->nbytes > s->cap) {
    size_t n = e->nbytes ? (size_t)e->nbytes : 1;
    free(s->buf); /* nothing in it is kept: no realloc copy */
    s->buf = malloc(n);
    s->cap = s->buf != NULL ? n : 0;
    if (s->buf == NULL) {
      fprintf(stderr, TOOL ": %s: tensor %s: out of memory for %" PRIu64 " bytes\n", path, e->name, e->nbytes);
      return DIFF_TROUBLE;
    }
  }
  if (hk_checkpoint_reader_read(s->r, i, s->buf, s->cap, &st) != HK_OK) return side_problem(path, &st);
  return 0;
}

static int same_type(const hk_checkpoint_entry *a, const hk_checkpoint_entry *b) {
  if (a->dtype != b->dtype || a->rank != b->rank) return 0;
  for (int32_t k = 0; k < a->rank; k++)
    if (a->dims[k] != b->dims[k]) return 0;
  return 1;
}

static int64_t signed_value(hk_dtype dtype, uint64_t u) {
  switch (dtype) {
    case HK_DTYPE_I8: return (int8_t)u;
    case HK_DTYPE_I16: return (int16_t)u;
    case HK_DTYPE_I32: return (int32_t)u;
    default: return (int64_t)u;
  }
}

/* |a - b| of two integer (or BOOL) elements, exact: at most 2^64 - 1. */
static uint64_t int_abs_diff(hk_dtype dtype, uint64_t ua, uint64_t ub) {
  if (dtype == HK_DTYPE_I8 || dtype == HK_DTYPE_I16 || dtype == HK_DTYPE_I32 || dtype == HK_DTYPE_I64) {
    int64_t a = signed_value(dtype, ua), b = signed_value(dtype, ub);
    return a >= b ? (uint64_t)a - (uint64_t)b : (uint64_t)b - (uint64_t)a;
  }
  return ua >= ub ? ua - ub : ub - ua;
}

/* Compare n elements of `dtype` bytewise (so NaNs with the same bits are
 * equal, 0 and -0 are not). */
static void compare_elements(hk_dtype dtype, const unsigned char *a, const unsigned char *b, uint64_t n, elem_diff *d) {
  size_t size = hk_dtype_size(dtype);
  int is_float = hk_dtype_is_float(dtype);
  memset(d, 0, sizeof *d);
  for (uint64_t i = 0; i < n; i++, a += size, b += size) {
    uint64_t ua, ub;
    if (memcmp(a, b, size) == 0) continue;
    if (d->count++ == 0) d->first = d->max_at = i;
    ua = load_le(a, size);
    ub = load_le(b, size);
    if (is_float) {
      double x = fabs(float_value(dtype, ua) - float_value(dtype, ub));
      if (isnan(x)) {
        d->nan = 1;
      } else if (x > d->max_abs) {
        d->max_abs = x;
        d->max_at = i;
      }
    } else {
      uint64_t x = int_abs_diff(dtype, ua, ub);
      if (x > d->max_int) {
        d->max_int = x;
        d->max_at = i;
      }
    }
  }
}

int compare_checkpoints(ckpt_side *a, ckpt_side *b, compare_fn fn, void *user) {
  hk_status st = HK_STATUS_INIT;
  size_t na = hk_checkpoint_reader_count(a->r), nb = hk_checkpoint_reader_count(b->r), i = 0, j = 0;
  hk_checkpoint_entry ea, eb;
  int rc;

  for (size_t k = 0; k < na + nb; k++) {
    ckpt_side *s = k < na ? a : b;
    if (hk_checkpoint_reader_entry(&ea, s->r, k < na ? k : k - na, &st) != HK_OK)
      return side_problem(hk_checkpoint_reader_path(s->r), &st);
  }
  /* Both files list their tensors in bytewise name order: a merge. */
  while (i < na || j < nb) {
    tensor_cmp c;
    int order;
    memset(&c, 0, sizeof c);
    if (i < na) hk_checkpoint_reader_entry(&ea, a->r, i, NULL);
    if (j < nb) hk_checkpoint_reader_entry(&eb, b->r, j, NULL);
    order = i == na ? 1 : j == nb ? -1 : strcmp(ea.name, eb.name);
    if (order < 0) {
      if ((rc = side_read(a, i++, &ea)) != 0) return rc;
      c.kind = CMP_ONLY_A;
      c.a = &ea;
      c.va = a->buf;
    } else if (order > 0) {
      if ((rc = side_read(b, j++, &eb)) != 0) return rc;
      c.kind = CMP_ONLY_B;
      c.b = &eb;
      c.vb = b->buf;
    } else {
      if ((rc = side_read(a, i++, &ea)) != 0 || (rc = side_read(b, j++, &eb)) != 0) return rc;
      c.a = &ea;
      c.b = &eb;
      c.va = a->buf;
      c.vb = b->buf;
      if (!same_type(&ea, &eb)) {
        c.kind = CMP_MISMATCH;
      } else if (memcmp(a->buf, b->buf, (size_t)ea.nbytes) == 0) {
        c.kind = CMP_EQUAL;
      } else {
        c.kind = CMP_DIFFERS;
        c.count = 1;
        for (int32_t k = 0; k < ea.rank; k++) c.count *= (uint64_t)ea.dims[k];
        compare_elements(ea.dtype, a->buf, b->buf, c.count, &c.d);
      }
    }
    if ((rc = fn(user, &c)) != 0) return rc;
  }
  return 0;
}

void format_max_diff(const tensor_cmp *c, char *buf, size_t cap) {
  if (!hk_dtype_is_float(c->a->dtype)) {
    snprintf(buf, cap, "%" PRIu64, c->d.max_int);
  } else if (c->d.nan) {
    snprintf(buf, cap, "nan");
  } else {
    format_double(c->d.max_abs, buf, cap);
  }
}
