/*
 * hooked-ckpt diff — two checkpoints compared tensor by tensor, bytewise,
 * with the first differing element and the largest difference of each
 * tensor whose values differ.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "tool.h"

/* ---- diff ----------------------------------------------------------------- */

/* One checkpoint of a diff, its tensors read one at a time into `buf`. */
typedef struct diff_side {
  const char *arg; /* as given */
  char *latest;    /* for a directory: its latest checkpoint (hk_env_free) */
  hk_checkpoint_reader *r;
  unsigned char *buf;
  size_t cap;
} diff_side;

/* What the elements of two same-shaped tensors whose bytes differ have in
 * common. */
typedef struct elem_diff {
  uint64_t count;   /* elements whose bytes differ */
  uint64_t first;   /* flat index of the first of them */
  double max_abs;   /* float dtypes: the largest |a - b|, in double */
  int nan;          /* float dtypes: some differing pair has a NaN */
  uint64_t max_int; /* the others: the largest |a - b|, exact */
} elem_diff;

static int diff_problem(const char *file, const hk_status *st) {
  problem(file, st);
  return DIFF_TROUBLE;
}

/* Open side `s`: a checkpoint, or a directory's latest one. @return 0, or
 * DIFF_TROUBLE after a message. */
static int diff_open(const hk_env *env, diff_side *s) {
  hk_status st = HK_STATUS_INIT;
  const char *path = s->arg;
  if (is_directory(s->arg)) {
    if (hk_latest_checkpoint(env, s->arg, NULL, &s->latest, &st) != HK_OK) return diff_problem(s->arg, &st);
    path = s->latest;
  }
  if (hk_checkpoint_reader_open(&s->r, env, path, &st) != HK_OK) return diff_problem(path, &st);
  return 0;
}

static void diff_close(const hk_env *env, diff_side *s) {
  hk_checkpoint_reader_free(s->r);
  hk_env_free(env, s->latest);
  free(s->buf);
}

/* Read and CRC-verify tensor i of side `s` into s->buf, which grows to the
 * largest tensor read so far: one tensor per side in memory, never a whole
 * checkpoint. @return 0, or DIFF_TROUBLE after a message. */
static int diff_read(diff_side *s, size_t i, const hk_checkpoint_entry *e) {
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
  if (hk_checkpoint_reader_read(s->r, i, s->buf, s->cap, &st) != HK_OK) return diff_problem(path, &st);
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
    if (d->count++ == 0) d->first = i;
    ua = load_le(a, size);
    ub = load_le(b, size);
    if (is_float) {
      double x = fabs(float_value(dtype, ua) - float_value(dtype, ub));
      if (isnan(x)) {
        d->nan = 1;
      } else if (x > d->max_abs) {
        d->max_abs = x;
      }
    } else {
      uint64_t x = int_abs_diff(dtype, ua, ub);
      if (x > d->max_int) d->max_int = x;
    }
  }
}

/* A tensor line "  NAME  STATUS     DETAILS", the status column as wide as
 * "only in A"; without details, "  NAME  STATUS". */
static void diff_line_start(const char *name, size_t wname, const char *status) {
  printf("  %-*s  %-9s  ", (int)wname, name, status);
}

/* Compare the values of a tensor both sides hold with one dtype and shape,
 * read into a->buf and b->buf. @return 1 when they differ. */
static int diff_values(const hk_checkpoint_entry *e, const diff_side *a, const diff_side *b, size_t wname) {
  char shape[HK_MAX_RANK * 22 + 3], index[HK_MAX_RANK * 22 + 3], va[ELEMENT_MAX], vb[ELEMENT_MAX], max[ELEMENT_MAX];
  size_t size = hk_dtype_size(e->dtype);
  uint64_t count = 1;
  elem_diff d;

  if (memcmp(a->buf, b->buf, (size_t)e->nbytes) == 0) {
    printf("  %-*s  equal\n", (int)wname, e->name);
    return 0;
  }
  for (int32_t k = 0; k < e->rank; k++) count *= (uint64_t)e->dims[k];
  compare_elements(e->dtype, a->buf, b->buf, count, &d);
  format_shape(e, shape, sizeof shape);
  format_index(e, d.first, index, sizeof index);
  format_value(e->dtype, a->buf + d.first * size, va, sizeof va);
  format_value(e->dtype, b->buf + d.first * size, vb, sizeof vb);
  if (!hk_dtype_is_float(e->dtype)) {
    snprintf(max, sizeof max, "%" PRIu64, d.max_int);
  } else if (d.nan) {
    snprintf(max, sizeof max, "nan");
  } else {
    format_double(d.max_abs, max, sizeof max);
  }
  diff_line_start(e->name, wname, "differs");
  printf("%s %s: %" PRIu64 " of %" PRIu64 " element%s differ%s; first at %s (flat %" PRIu64
         "): %s vs %s; max abs diff %s\n",
         dtype_st_name(e->dtype), shape, d.count, count, count == 1 ? "" : "s", d.count == 1 ? "s" : "", index, d.first,
         va, vb, max);
  return 1;
}

/* "A: <data file>: global step S, N tensors, B bytes" */
static void diff_header(const char *label, const diff_side *s) {
  hk_checkpoint_entry e;
  size_t n = hk_checkpoint_reader_count(s->r);
  uint64_t total = 0;
  for (size_t i = 0; i < n; i++)
    if (hk_checkpoint_reader_entry(s->r, i, &e, NULL) == HK_OK) total += e.nbytes;
  printf("%s: %s: global step %" PRId64 ", %zu tensor%s, %" PRIu64 " bytes", label, hk_checkpoint_reader_path(s->r),
         hk_checkpoint_reader_step(s->r), n, n == 1 ? "" : "s", total);
  if (s->latest != NULL) printf(" (latest in %s)", s->arg);
  printf("\n");
}

int cmd_diff(const hk_env *env, const char *path_a, const char *path_b) {
  hk_status st = HK_STATUS_INIT;
  diff_side a, b;
  hk_checkpoint_entry ea, eb;
  size_t na, nb, i = 0, j = 0, wname = 4, total = 0, differ = 0, only_a = 0, only_b = 0;
  int64_t step_a, step_b;
  int rc;

  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  a.arg = path_a;
  b.arg = path_b;
  if ((rc = diff_open(env, &a)) != 0 || (rc = diff_open(env, &b)) != 0) goto out;
  na = hk_checkpoint_reader_count(a.r);
  nb = hk_checkpoint_reader_count(b.r);
  for (size_t k = 0; k < na + nb; k++) {
    diff_side *s = k < na ? &a : &b;
    if (hk_checkpoint_reader_entry(s->r, k < na ? k : k - na, &ea, &st) != HK_OK) {
      rc = diff_problem(hk_checkpoint_reader_path(s->r), &st);
      goto out;
    }
    if (strlen(ea.name) > wname) wname = strlen(ea.name);
  }
  step_a = hk_checkpoint_reader_step(a.r);
  step_b = hk_checkpoint_reader_step(b.r);
  diff_header("A", &a);
  diff_header("B", &b);
  if (step_a != step_b) printf("global step differs: %" PRId64 " in A, %" PRId64 " in B\n", step_a, step_b);

  /* Both files list their tensors in bytewise name order: a merge. Every
   * tensor of both is read, so every CRC is verified. */
  while (i < na || j < nb) {
    char shape_a[HK_MAX_RANK * 22 + 3], shape_b[HK_MAX_RANK * 22 + 3];
    int c;
    if (i < na) hk_checkpoint_reader_entry(a.r, i, &ea, NULL);
    if (j < nb) hk_checkpoint_reader_entry(b.r, j, &eb, NULL);
    c = i == na ? 1 : j == nb ? -1 : strcmp(ea.name, eb.name);
    total++;
    if (c < 0) {
      if ((rc = diff_read(&a, i, &ea)) != 0) goto out;
      format_shape(&ea, shape_a, sizeof shape_a);
      diff_line_start(ea.name, wname, "only in A");
      printf("%s %s\n", dtype_st_name(ea.dtype), shape_a);
      only_a++;
      i++;
      continue;
    }
    if (c > 0) {
      if ((rc = diff_read(&b, j, &eb)) != 0) goto out;
      format_shape(&eb, shape_b, sizeof shape_b);
      diff_line_start(eb.name, wname, "only in B");
      printf("%s %s\n", dtype_st_name(eb.dtype), shape_b);
      only_b++;
      j++;
      continue;
    }
    if ((rc = diff_read(&a, i, &ea)) != 0 || (rc = diff_read(&b, j, &eb)) != 0) goto out;
    if (same_type(&ea, &eb)) {
      differ += (size_t)diff_values(&ea, &a, &b, wname);
    } else {
      format_shape(&ea, shape_a, sizeof shape_a);
      format_shape(&eb, shape_b, sizeof shape_b);
      diff_line_start(ea.name, wname, "mismatch");
      printf("%s %s in A, %s %s in B\n", dtype_st_name(ea.dtype), shape_a, dtype_st_name(eb.dtype), shape_b);
      differ++;
    }
    i++;
    j++;
  }

  if (differ == 0 && only_a == 0 && only_b == 0 && step_a == step_b) {
    printf("identical: %zu tensor%s\n", total, total == 1 ? "" : "s");
    rc = 0;
  } else {
    printf("differ: %zu of %zu tensor%s differ%s, %zu only in A, %zu only in B", differ, total, total == 1 ? "" : "s",
           differ == 1 ? "s" : "", only_a, only_b);
    if (step_a != step_b) printf("; global step differs (%" PRId64 " vs %" PRId64 ")", step_a, step_b);
    printf("\n");
    rc = 1;
  }
out:
  diff_close(env, &a);
  diff_close(env, &b);
  return rc;
}
