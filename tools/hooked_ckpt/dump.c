/*
 * hooked-ckpt dump — the values of one tensor, laid out as numpy prints the
 * array (rows wrapped at numpy's line width, floats aligned on the point).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "tool.h"

typedef struct printer {
  hk_dtype dtype;
  const unsigned char *data;
  const hk_checkpoint_entry *e;
  float_style fs;
  uint64_t limit; /* elements to print; UINT64_MAX: all */
  uint64_t next;  /* index of the next element */
  size_t before, after;
  int cut; /* "..." printed */
  size_t column;
} printer;

static void put(printer *pr, const char *s) {
  fputs(s, stdout);
  pr->column += strlen(s);
}

static void newline_indent(printer *pr, int depth, int blank_lines) {
  for (int i = 0; i <= blank_lines; i++) putchar('\n');
  pr->column = 0;
  for (int i = 0; i < depth; i++) put(pr, " ");
}

static void print_element(printer *pr, int depth, int first) {
  char s[ELEMENT_MAX];
  size_t b, a, width = pr->before + pr->after;
  format_element(pr->dtype, pr->data + pr->next * hk_dtype_size(pr->dtype), &pr->fs, s, sizeof s);
  split_widths(pr->dtype, &pr->fs, s, &b, &a);
  if (!first) {
    /* numpy wraps a row that would pass the line width (counting the
     * closing brackets). */
    if (pr->column + 1 + width + (size_t)depth + 1 > LINE_WIDTH) {
      newline_indent(pr, depth + 1, 0);
    } else {
      put(pr, " ");
    }
  }
  for (size_t i = b; i < pr->before; i++) put(pr, " ");
  put(pr, s);
  for (size_t i = a; i < pr->after; i++) put(pr, " ");
  pr->next++;
}

static void print_dim(printer *pr, int depth) {
  int64_t n = pr->e->dims[depth];
  put(pr, "[");
  for (int64_t i = 0; i < n && !pr->cut; i++) {
    if (pr->next >= pr->limit) {
      put(pr, i > 0 ? " ..." : "...");
      pr->cut = 1;
      break;
    }
    if (depth == pr->e->rank - 1) {
      print_element(pr, depth, i == 0);
    } else {
      /* numpy separates the blocks of rank >= 3 with blank lines. */
      if (i > 0) newline_indent(pr, depth + 1, pr->e->rank - depth - 2);
      print_dim(pr, depth + 1);
    }
  }
  put(pr, "]");
}

int cmd_dump(const hk_env *env, const char *path, const char *name, uint64_t limit) {
  hk_status st = HK_STATUS_INIT;
  hk_checkpoint_reader *r = NULL;
  hk_checkpoint_entry e;
  unsigned char *buf = NULL;
  size_t index;
  uint64_t count = 1, shown;
  printer pr;
  int rc = 1;

  if (is_directory(path)) {
    fprintf(stderr, TOOL ": %s: is a directory; dump needs a checkpoint (see '" TOOL " latest %s')\n", path, path);
    return 1;
  }
  if (hk_checkpoint_reader_open(&r, env, path, &st) != HK_OK) return problem(path, &st);
  path = hk_checkpoint_reader_path(r);
  if (hk_checkpoint_reader_find(r, name, &index, &st) != HK_OK ||
      hk_checkpoint_reader_entry(&e, r, index, &st) != HK_OK)
    goto fail;
  if (e.nbytes > SIZE_MAX) {
    fprintf(stderr, TOOL ": %s: tensor %s: %" PRIu64 " bytes do not fit in memory\n", path, name, e.nbytes);
    goto out;
  }
  buf = malloc(e.nbytes ? (size_t)e.nbytes : 1);
  if (buf == NULL) {
    fprintf(stderr, TOOL ": %s: tensor %s: out of memory for %" PRIu64 " bytes\n", path, name, e.nbytes);
    goto out;
  }
  if (hk_checkpoint_reader_read(r, index, buf, (size_t)e.nbytes, &st) != HK_OK) goto fail;

  for (int32_t k = 0; k < e.rank; k++) count *= (uint64_t)e.dims[k];
  memset(&pr, 0, sizeof pr);
  pr.dtype = e.dtype;
  pr.data = buf;
  pr.e = &e;
  pr.limit = limit;
  shown = count < limit ? count : limit;
  pr.fs = choose_float_style(e.dtype, buf, shown);
  for (uint64_t i = 0; i < shown; i++) {
    char s[ELEMENT_MAX];
    size_t b, a;
    format_element(e.dtype, buf + i * hk_dtype_size(e.dtype), &pr.fs, s, sizeof s);
    split_widths(e.dtype, &pr.fs, s, &b, &a);
    if (b > pr.before) pr.before = b;
    if (a > pr.after) pr.after = a;
  }
  if (e.rank == 0) {
    char s[ELEMENT_MAX];
    format_element(e.dtype, buf, &pr.fs, s, sizeof s);
    fputs(s, stdout);
  } else {
    print_dim(&pr, 0);
  }
  putchar('\n');
  if (shown < count)
    fprintf(stderr, TOOL ": %s: tensor %s: showed %" PRIu64 " of %" PRIu64 " elements (--limit 0 shows all)\n", path,
            name, shown, count);
  rc = 0;
  goto out;
fail:
  rc = problem(path, &st);
out:
  free(buf);
  hk_checkpoint_reader_free(r);
  return rc;
}
