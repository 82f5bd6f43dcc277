/*
 * hooked-events csv: every scalar as tag,step,wall_time,value, sorted, and
 * the number formatting the plot shares.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "tool.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- formatting ------------------------------------------------------------------- */

/* The fewest significant digits that read back to the same float (or double). */
void fmt_num(char *buf, size_t cap, double v, int dbl) {
  if (isnan(v)) {
    snprintf(buf, cap, "nan");
    return;
  }
  if (isinf(v)) {
    snprintf(buf, cap, v > 0 ? "inf" : "-inf");
    return;
  }
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, cap, "%.*g", prec, v);
    if (dbl ? strtod(buf, NULL) == v : strtof(buf, NULL) == (float)v) {
      /* %g writes 10 in one digit as "1e+01": give an integer part its digits. */
      int x = v == 0 ? 0 : (int)floor(log10(fabs(v)));
      if (x >= prec && x < 17) snprintf(buf, cap, "%.*g", x + 1, v);
      return;
    }
  }
}

static void csv_field(FILE *out, const char *s) {
  if (strpbrk(s, ",\"\r\n") == NULL) {
    fputs(s, out);
    return;
  }
  fputc('"', out);
  for (; *s; s++) {
    if (*s == '"') fputc('"', out);
    fputc(*s, out);
  }
  fputc('"', out);
}

/* ---- csv ------------------------------------------------------------------------------ */

static const dataset *sort_ds; /* qsort has no user pointer */

static int cmp_csv(const void *pa, const void *pb) {
  const point *a = pa, *b = pb;
  uint32_t ra = sort_ds->tags[a->tag].rank, rb = sort_ds->tags[b->tag].rank;
  if (ra != rb) return ra < rb ? -1 : 1;
  if (a->step != b->step) return a->step < b->step ? -1 : 1;
  if (a->wall != b->wall) return a->wall < b->wall ? -1 : 1; /* NaN wall times fall back to seq */
  return (a->seq > b->seq) - (a->seq < b->seq);
}

int cmd_csv(const char *path) {
  dataset ds;
  char v[40], w[40];
  int rc;

  memset(&ds, 0, sizeof ds);
  rc = find_runs(&ds, path, 0);
  if (rc == 0) rc = load(&ds);
  if (rc == 0) {
    sort_ds = &ds;
    if (ds.npts > 0) qsort(ds.pts, ds.npts, sizeof *ds.pts, cmp_csv);
    fputs("tag,step,wall_time,value\n", stdout);
    for (size_t i = 0; i < ds.npts; i++) {
      const point *p = &ds.pts[i];
      csv_field(stdout, ds.tags[p->tag].name);
      fmt_num(w, sizeof w, p->wall, 1);
      fmt_num(v, sizeof v, p->value, p->dbl);
      printf(",%" PRId64 ",%s,%s\n", p->step, w, v);
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
      fprintf(stderr, TOOL ": standard output: write error: %s\n", strerror(errno));
      rc = 1;
    }
  }
  dataset_free(&ds);
  return rc;
}
