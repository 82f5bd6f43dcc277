/*
 * hooked-ckpt check-resume — judging two runs: every checkpoint both hold
 * (same key, same global step) compared tensor by tensor with compare.c,
 * and the tensors of one step written out as what they say: which differ,
 * where and by how much, which one run lacks, which are still equal.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "check_resume.h"

#define MAX_RANGES 6

/* ---- counting ----------------------------------------------------------------- */

typedef struct counts {
  size_t total, differ;
} counts;

static int count_tensor(void *user, const tensor_cmp *c) {
  counts *n = user;
  n->total++;
  if (c->kind != CMP_EQUAL) n->differ++;
  return 0;
}

/* Compare the checkpoints `pa` and `pb`. @return 0, or CR_TROUBLE. */
static int compare_pair(const hk_env *env, const char *pa, const char *pb, compare_fn fn, void *user) {
  ckpt_side a, b;
  int rc;
  memset(&b, 0, sizeof b);
  rc = side_open(env, &a, pa);
  if (rc == 0) rc = side_open(env, &b, pb);
  if (rc == 0) rc = compare_checkpoints(&a, &b, fn, user);
  side_close(env, &a);
  side_close(env, &b);
  return rc != 0 ? CR_TROUBLE : 0;
}

int judge_runs(const hk_env *env, const ckpt_set *a, const ckpt_set *b, int64_t from, int64_t to, verdict *v) {
  memset(v, 0, sizeof *v);
  v->last_equal = -1;
  for (size_t i = 0; i < a->n; i++) {
    const ckpt_file *fa = &a->f[i], *fb;
    counts n = {0, 0};
    if (fa->step < from || fa->step > to) continue;
    if ((fb = find_checkpoint(b, fa->key, fa->step)) == NULL) continue;
    if (compare_pair(env, fa->prefix, fb->prefix, count_tensor, &n) != 0) return CR_TROUBLE;
    if (v->shared++ == 0) v->lo = fa->step;
    v->hi = fa->step;
    v->tensors += n.total;
    v->last_differ_tensors = n.differ;
    if (v->differ > 0) v->shared_after_first++;
    if (n.differ == 0) {
      if (v->differ == 0) {
        v->last_equal = fa->step;
        v->equal_before++;
      }
      continue;
    }
    if (v->differ++ == 0) {
      v->first_step = fa->step;
      v->first_key = fa->key;
    }
  }
  return 0;
}

/* ---- one step, written out ------------------------------------------------------ */

#define MAX_TENSOR_LINES 24
#define MAX_NAMES 12

typedef struct step_notes {
  const sides *labels;
  size_t wname, wshape;
  size_t ndiffer, nstates, lines;
  step_summary *out;
  int oom;
} step_notes;

/* An opaque state of the host loop is a U8 vector: its bytes, not values. */
static int looks_like_state(const hk_checkpoint_entry *e) { return e->dtype == HK_DTYPE_U8 && e->rank == 1; }

/* Append `name` to the list *names ("a, b, c", at most MAX_NAMES, then "and
 * N more" by the count). */
static void add_name(step_notes *s, name_list *l, const char *name) {
  if (l->n++ < MAX_NAMES) {
    char *more = l->text ? join(l->text, ", ", name) : join(name, "", "");
    if (more == NULL) {
      s->oom = 1;
      return;
    }
    free(l->text);
    l->text = more;
  }
}

/* "1-7, 12-15" of the bytes that differ (inclusive offsets), the first
 * MAX_RANGES of them. */
static void byte_ranges(const tensor_cmp *c, char *buf, size_t cap) {
  size_t len = 0, ranges = 0, n = (size_t)c->a->nbytes;
  buf[0] = '\0';
  for (size_t i = 0; i < n;) {
    size_t start;
    if (c->va[i] == c->vb[i]) {
      i++;
      continue;
    }
    for (start = i; i < n && c->va[i] != c->vb[i]; i++) {}
    if (ranges++ < MAX_RANGES && len < cap)
      len += (size_t)snprintf(buf + len, cap - len, "%s%zu-%zu", len ? ", " : "", start, i - 1);
  }
  if (ranges > MAX_RANGES && len < cap) snprintf(buf + len, cap - len, " and %zu more", ranges - MAX_RANGES);
}

/* The largest difference of a tensor in 3 digits: enough to tell noise
 * from divergence. */
static void short_max(const tensor_cmp *c, char *buf, size_t cap) {
  if (hk_dtype_is_float(c->a->dtype) && !c->d.nan)
    snprintf(buf, cap, "%.3g", c->d.max_abs);
  else
    format_max_diff(c, buf, cap);
}

static void print_detail(const step_notes *s, const tensor_cmp *c) {
  const hk_checkpoint_entry *e = c->a != NULL ? c->a : c->b;
  char shape_b[SHAPE_MAX], index[SHAPE_MAX], va[ELEMENT_MAX], vb[ELEMENT_MAX], max[ELEMENT_MAX], ranges[160];
  size_t size;
  switch (c->kind) {
    case CMP_ONLY_A: printf("only in %s\n", s->labels->a); return;
    case CMP_ONLY_B: printf("only in %s\n", s->labels->b); return;
    case CMP_MISMATCH:
      format_shape(c->b, shape_b, sizeof shape_b);
      printf("in %s; %s %s in %s\n", s->labels->a, dtype_st_name(c->b->dtype), shape_b, s->labels->b);
      return;
    default: break;
  }
  if (looks_like_state(e)) {
    byte_ranges(c, ranges, sizeof ranges);
    printf("bytes %s of %" PRIu64 " differ\n", ranges, c->a->nbytes);
    return;
  }
  size = hk_dtype_size(e->dtype);
  format_index(e, c->d.max_at, index, sizeof index);
  format_value(e->dtype, c->va + c->d.max_at * size, va, sizeof va);
  format_value(e->dtype, c->vb + c->d.max_at * size, vb, sizeof vb);
  short_max(c, max, sizeof max);
  printf("%" PRIu64 " of %" PRIu64 " element%s differ%s, by up to %s (at %s: %s vs %s)\n", c->d.count, c->count,
         c->count == 1 ? "" : "s", c->d.count == 1 ? "s" : "", max, index, va, vb);
}

static int print_tensor(void *user, const tensor_cmp *c) {
  step_notes *s = user;
  const hk_checkpoint_entry *e = c->a != NULL ? c->a : c->b;
  char shape[SHAPE_MAX];

  if (c->kind == CMP_EQUAL) {
    add_name(s, looks_like_state(e) ? &s->out->equal_states : &s->out->equal_arrays, e->name);
    return 0;
  }
  s->ndiffer++;
  if (c->kind == CMP_DIFFERS && looks_like_state(e)) {
    s->nstates++;
    add_name(s, &s->out->differ_states, e->name);
  }
  if (s->lines++ >= MAX_TENSOR_LINES) return 0;
  format_shape(e, shape, sizeof shape);
  printf("    %-*s  %-4s %-*s  ", (int)s->wname, e->name, dtype_st_name(e->dtype), (int)s->wshape, shape);
  print_detail(s, c);
  return 0;
}

/* The widest tensor name and shape of checkpoint `path` into *wname and
 * *wshape (which only grow). */
static void widths(const hk_env *env, const char *path, size_t *wname, size_t *wshape) {
  hk_checkpoint_reader *r = NULL;
  hk_checkpoint_entry e;
  char shape[SHAPE_MAX];
  if (hk_checkpoint_reader_open(&r, env, path, NULL) != HK_OK) return;
  for (size_t i = 0; i < hk_checkpoint_reader_count(r); i++) {
    if (hk_checkpoint_reader_entry(&e, r, i, NULL) != HK_OK) continue;
    format_shape(&e, shape, sizeof shape);
    if (strlen(e.name) > *wname) *wname = strlen(e.name);
    if (strlen(shape) > *wshape) *wshape = strlen(shape);
  }
  hk_checkpoint_reader_free(r);
}

static void print_names(const char *what, const name_list *l) {
  if (l->n == 0) return;
  printf("    %s: %s", what, l->text ? l->text : "");
  if (l->n > MAX_NAMES) printf(" and %zu more", l->n - MAX_NAMES);
  printf("\n");
}

int print_step(const hk_env *env, const ckpt_set *a, const ckpt_set *b, const char *key, int64_t step,
               const sides *labels, step_summary *out) {
  const ckpt_file *fa = find_checkpoint(a, key, step), *fb = find_checkpoint(b, key, step);
  step_notes s;
  int rc;

  memset(out, 0, sizeof *out);
  if (fa == NULL || fb == NULL) return 0;
  memset(&s, 0, sizeof s);
  s.labels = labels;
  s.out = out;
  s.wname = 4;
  s.wshape = 5;
  widths(env, fa->prefix, &s.wname, &s.wshape);
  widths(env, fb->prefix, &s.wname, &s.wshape);
  rc = compare_pair(env, fa->prefix, fb->prefix, print_tensor, &s);
  if (rc == 0 && s.oom) {
    out_of_memory();
    rc = CR_TROUBLE;
  }
  if (rc != 0) return rc;
  if (s.lines > MAX_TENSOR_LINES) printf("    ... and %zu more that differ\n", s.lines - MAX_TENSOR_LINES);
  if (out->equal_arrays.n + out->equal_states.n == 0) printf("    no tensor is equal there\n");
  print_names("still equal there", &out->equal_arrays);
  print_names(out->equal_arrays.n ? "and the states" : "still equal there: the states", &out->equal_states);
  out->states_only = s.ndiffer > 0 && s.nstates == s.ndiffer;
  return 0;
}

void free_step_summary(step_summary *s) {
  free(s->equal_arrays.text);
  free(s->equal_states.text);
  free(s->differ_states.text);
  memset(s, 0, sizeof *s);
}

void print_causes(void) {
  printf(
      "  The usual causes:\n"
      "    - an RNG that is not registered (data sampling, shuffling, dropout, noise)\n"
      "    - optimizer accumulators: momentum, Adam or RMSprop moments\n"
      "    - loop-local counters: per-epoch sums, a learning-rate schedule's position\n"
      "    - the data position: which batch comes next\n"
      "    - uninitialized padding in a registered struct\n");
}
