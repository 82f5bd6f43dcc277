/*
 * hooked-ckpt diff — two checkpoints compared tensor by tensor (compare.c),
 * a line each: equal, differs (with the first differing element and the
 * largest difference), mismatch (dtype or shape), only in A or B.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "tool.h"

typedef struct diff_counts {
  size_t wname; /* the name column's width */
  size_t total, differ, only_a, only_b;
} diff_counts;

/* A tensor line "  NAME  STATUS     DETAILS", the status column as wide as
 * "only in A"; without details, "  NAME  STATUS". */
static void diff_line_start(const char *name, size_t wname, const char *status) {
  printf("  %-*s  %-9s  ", (int)wname, name, status);
}

static int print_tensor(void *user, const tensor_cmp *c) {
  diff_counts *n = user;
  char shape_a[SHAPE_MAX], shape_b[SHAPE_MAX], index[SHAPE_MAX], va[ELEMENT_MAX], vb[ELEMENT_MAX], max[ELEMENT_MAX];
  size_t size;

  n->total++;
  if (c->a != NULL) format_shape(c->a, shape_a, sizeof shape_a);
  if (c->b != NULL) format_shape(c->b, shape_b, sizeof shape_b);
  switch (c->kind) {
    case CMP_ONLY_A:
      diff_line_start(c->a->name, n->wname, "only in A");
      printf("%s %s\n", dtype_st_name(c->a->dtype), shape_a);
      n->only_a++;
      return 0;
    case CMP_ONLY_B:
      diff_line_start(c->b->name, n->wname, "only in B");
      printf("%s %s\n", dtype_st_name(c->b->dtype), shape_b);
      n->only_b++;
      return 0;
    case CMP_MISMATCH:
      diff_line_start(c->a->name, n->wname, "mismatch");
      printf("%s %s in A, %s %s in B\n", dtype_st_name(c->a->dtype), shape_a, dtype_st_name(c->b->dtype), shape_b);
      n->differ++;
      return 0;
    case CMP_EQUAL: printf("  %-*s  equal\n", (int)n->wname, c->a->name); return 0;
    default: break;
  }
  size = hk_dtype_size(c->a->dtype);
  format_index(c->a, c->d.first, index, sizeof index);
  format_value(c->a->dtype, c->va + c->d.first * size, va, sizeof va);
  format_value(c->a->dtype, c->vb + c->d.first * size, vb, sizeof vb);
  format_max_diff(c, max, sizeof max);
  diff_line_start(c->a->name, n->wname, "differs");
  printf("%s %s: %" PRIu64 " of %" PRIu64 " element%s differ%s; first at %s (flat %" PRIu64
         "): %s vs %s; max abs diff %s\n",
         dtype_st_name(c->a->dtype), shape_a, c->d.count, c->count, c->count == 1 ? "" : "s",
         c->d.count == 1 ? "s" : "", index, c->d.first, va, vb, max);
  n->differ++;
  return 0;
}

/* "A: <data file>: global step S, N tensors, B bytes" */
static void diff_header(const char *label, const ckpt_side *s) {
  hk_checkpoint_entry e;
  size_t n = hk_checkpoint_reader_count(s->r);
  uint64_t total = 0;
  for (size_t i = 0; i < n; i++)
    if (hk_checkpoint_reader_entry(&e, s->r, i, NULL) == HK_OK) total += e.nbytes;
  printf("%s: %s: global step %" PRId64 ", %zu tensor%s, %" PRIu64 " bytes", label, hk_checkpoint_reader_path(s->r),
         hk_checkpoint_reader_step(s->r), n, n == 1 ? "" : "s", total);
  if (s->latest != NULL) printf(" (latest in %s)", s->arg);
  printf("\n");
}

int cmd_diff(const hk_env *env, const char *path_a, const char *path_b) {
  hk_status st = HK_STATUS_INIT;
  ckpt_side a, b;
  hk_checkpoint_entry e;
  diff_counts n;
  size_t na, nb;
  int64_t step_a, step_b;
  int rc;

  memset(&n, 0, sizeof n);
  n.wname = 4;
  memset(&b, 0, sizeof b);
  if ((rc = side_open(env, &a, path_a)) != 0 || (rc = side_open(env, &b, path_b)) != 0) goto out;
  na = hk_checkpoint_reader_count(a.r);
  nb = hk_checkpoint_reader_count(b.r);
  for (size_t k = 0; k < na + nb; k++) {
    ckpt_side *s = k < na ? &a : &b;
    if (hk_checkpoint_reader_entry(&e, s->r, k < na ? k : k - na, &st) != HK_OK) {
      problem(hk_checkpoint_reader_path(s->r), &st);
      rc = DIFF_TROUBLE;
      goto out;
    }
    if (strlen(e.name) > n.wname) n.wname = strlen(e.name);
  }
  step_a = hk_checkpoint_reader_step(a.r);
  step_b = hk_checkpoint_reader_step(b.r);
  diff_header("A", &a);
  diff_header("B", &b);
  if (step_a != step_b) printf("global step differs: %" PRId64 " in A, %" PRId64 " in B\n", step_a, step_b);
  if ((rc = compare_checkpoints(&a, &b, print_tensor, &n)) != 0) goto out;

  if (n.differ == 0 && n.only_a == 0 && n.only_b == 0 && step_a == step_b) {
    printf("identical: %zu tensor%s\n", n.total, n.total == 1 ? "" : "s");
    rc = 0;
  } else {
    printf("differ: %zu of %zu tensor%s differ%s, %zu only in A, %zu only in B", n.differ, n.total,
           n.total == 1 ? "" : "s", n.differ == 1 ? "s" : "", n.only_a, n.only_b);
    if (step_a != step_b) printf("; global step differs (%" PRId64 " vs %" PRId64 ")", step_a, step_b);
    printf("\n");
    rc = 1;
  }
out:
  side_close(env, &a);
  side_close(env, &b);
  return rc;
}
