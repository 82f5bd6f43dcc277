/*
 * hooked-events plot: one self-contained HTML page (inline SVG, no script,
 * nothing fetched) with a line chart per scalar tag, a run per colour.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "tool.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- plot ------------------------------------------------------------------------------ */

static const dataset *sort_ds; /* qsort has no user pointer */

/* Chart geometry, in SVG user units (= CSS pixels). */
#define SVG_W 540.0
#define SVG_H 300.0
#define PAD_RIGHT 14.0
#define PAD_TOP 12.0
#define STRIP_H 18.0 /* the band above the plot that holds NaN and infinity markers */
#define PAD_BOTTOM 40.0
#define Y_TICKS 5
#define X_TICKS 6
#define DOTS_MAX 60 /* a run with at most this many points also gets a dot per point */

static const char *const palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
#define NCOLORS (sizeof palette / sizeof palette[0])

static void html_escape(FILE *out, const char *s) {
  for (; *s; s++) {
    switch (*s) {
      case '&': fputs("&amp;", out); break;
      case '<': fputs("&lt;", out); break;
      case '>': fputs("&gt;", out); break;
      case '"': fputs("&quot;", out); break;
      case '\'': fputs("&#39;", out); break;
      default: fputc(*s, out);
    }
  }
}

static int cmp_plot(const void *pa, const void *pb) {
  const point *a = pa, *b = pb;
  uint32_t ra = sort_ds->tags[a->tag].rank, rb = sort_ds->tags[b->tag].rank;
  if (ra != rb) return ra < rb ? -1 : 1;
  if (a->run != b->run) return a->run < b->run ? -1 : 1;
  if (a->step != b->step) return a->step < b->step ? -1 : 1;
  return (a->seq > b->seq) - (a->seq < b->seq);
}

/* A "nice" tick spacing (1, 2 or 5 times a power of ten) for about `n` ticks over `range`. */
static double nice_spacing(double range, int n) {
  double raw = range / n, mag = pow(10.0, floor(log10(raw))), f = raw / mag;
  return (f < 1.5 ? 1.0 : f < 3.0 ? 2.0 : f < 7.0 ? 5.0 : 10.0) * mag;
}

typedef struct axis {
  double lo, hi, spacing; /* in axis units: log10 of the value on a log axis */
  int decimals;           /* y: fixed decimals, or -1 for %g */
  int log;                /* y: a log10 scale */
} axis;

/* Positive values spanning this many decades or more get a log scale: a
 * loss falling from 10 to 0.001 is a flat line on a linear one. */
#define LOG_DECADES 3.0

static void y_axis(axis *a, double lo, double hi) {
  double span;
  a->log = 0;
  if (lo > 0 && log10(hi) - log10(lo) >= LOG_DECADES) {
    a->log = 1;
    a->lo = floor(log10(lo));
    a->hi = ceil(log10(hi));
    a->spacing = ceil((a->hi - a->lo) / 6.0);
    a->decimals = -1;
    return;
  }
  if (!(hi > lo)) { /* one value (or none): a band around it */
    double pad = lo == 0 ? 1.0 : fabs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  span = hi - lo;
  a->spacing = nice_spacing(span, Y_TICKS);
  if (!isfinite(a->spacing) || a->spacing <= 0) a->spacing = span / Y_TICKS;
  /* A float's rounding (0.1f is 0.100000001) must not add a whole tick. */
  a->lo = floor(lo / a->spacing + 1e-6) * a->spacing;
  a->hi = ceil(hi / a->spacing - 1e-6) * a->spacing;
  if (!(a->hi > a->lo)) a->hi = a->lo + a->spacing;
  {
    double big = fmax(fabs(a->lo), fabs(a->hi));
    int dec = (int)-floor(log10(a->spacing) + 1e-9);
    a->decimals = big >= 1e6 || a->spacing < 1e-4 ? -1 : dec > 0 ? dec : 0;
  }
}

static void x_axis(axis *a, int64_t lo, int64_t hi) {
  double span;
  if (hi <= lo) {
    lo = lo > INT64_MIN + 1 ? lo - 1 : lo;
    hi = lo + 2;
  }
  span = (double)hi - (double)lo;
  a->spacing = nice_spacing(span, X_TICKS);
  if (a->spacing < 1) a->spacing = 1;
  a->lo = floor((double)lo / a->spacing) * a->spacing;
  a->hi = ceil((double)hi / a->spacing) * a->spacing;
  a->decimals = 0;
  a->log = 0;
}

static void fmt_y_tick(char *buf, size_t cap, const axis *a, double v) {
  if (a->log) {
    snprintf(buf, cap, "%g", pow(10.0, v));
    return;
  }
  if (fabs(v) < a->spacing * 1e-9) v = 0; /* no "-0.00" */
  if (a->decimals < 0)
    snprintf(buf, cap, "%.3g", v);
  else
    snprintf(buf, cap, "%.*f", a->decimals, v);
}

static void fmt_x_tick(char *buf, size_t cap, double v) {
  double m = fabs(v);
  if (m >= 1e9)
    snprintf(buf, cap, "%gG", v / 1e9);
  else if (m >= 1e6)
    snprintf(buf, cap, "%gM", v / 1e6);
  else if (m >= 1e4)
    snprintf(buf, cap, "%gk", v / 1e3);
  else
    snprintf(buf, cap, "%.0f", v);
}

typedef struct frame {
  double x0, x1, y0, y1; /* plot area */
  axis xa, ya;
  double strip_y; /* centre of the non-finite band, when there is one */
} frame;

/* Data stay this far inside the frame, so no point sits on it. */
#define INSET 6.0

static double px_u(const frame *fr, double u) {
  return fr->x0 + INSET + (u - fr->xa.lo) / (fr->xa.hi - fr->xa.lo) * (fr->x1 - fr->x0 - 2 * INSET);
}

static double px(const frame *fr, int64_t step) { return px_u(fr, (double)step); }

static double py_u(const frame *fr, double u) {
  return fr->y1 - INSET - (u - fr->ya.lo) / (fr->ya.hi - fr->ya.lo) * (fr->y1 - fr->y0 - 2 * INSET);
}

static double py(const frame *fr, double v) { return py_u(fr, fr->ya.log ? log10(v) : v); }

/* One run's line: segments between non-finite values, each reduced to at
 * most four points per pixel column (the first, lowest, highest and last,
 * in step order), which draws the same envelope as every point would. */
typedef struct pathw {
  FILE *out;
  const frame *fr;
  int started; /* a segment is open */
  long col;
  size_t first, lo, hi, last; /* indices of the open column */
  int have;
  const point *p;
} pathw;

static void emit_pt(pathw *w, size_t i) {
  fprintf(w->out, "%s%.1f %.1f", w->started ? " L" : " M", px(w->fr, w->p[i].step), py(w->fr, w->p[i].value));
  w->started = 1;
}

static void flush_col(pathw *w) {
  size_t idx[4] = {w->first, w->lo, w->hi, w->last};
  size_t prev = (size_t)-1;
  if (!w->have) return;
  /* Emit in step order, each index once. */
  for (int a = 0; a < 4; a++)
    for (int b = a + 1; b < 4; b++)
      if (idx[b] < idx[a]) {
        size_t t = idx[a];
        idx[a] = idx[b];
        idx[b] = t;
      }
  for (int a = 0; a < 4; a++) {
    if (idx[a] != prev) emit_pt(w, idx[a]);
    prev = idx[a];
  }
  w->have = 0;
}

static void path_add(pathw *w, size_t i) {
  long col = lround(px(w->fr, w->p[i].step));
  if (w->have && col != w->col) flush_col(w);
  if (!w->have) {
    w->col = col;
    w->first = w->lo = w->hi = w->last = i;
    w->have = 1;
    return;
  }
  if (w->p[i].value < w->p[w->lo].value) w->lo = i;
  if (w->p[i].value > w->p[w->hi].value) w->hi = i;
  w->last = i;
}

static void path_break(pathw *w) {
  flush_col(w);
  w->started = 0;
}

typedef struct run_stats {
  size_t n, nan, pinf, ninf;
  int64_t first_bad[3]; /* the first step of each: NaN, +Inf, -Inf */
  size_t imin, imax;    /* finite extremes; valid when n > nan + pinf + ninf */
  int have_finite;
} run_stats;

static void stats_of(const point *p, size_t n, run_stats *s) {
  memset(s, 0, sizeof *s);
  s->n = n;
  for (size_t i = 0; i < n; i++) {
    double v = p[i].value;
    if (!isfinite(v)) {
      size_t *count = isnan(v) ? &s->nan : v > 0 ? &s->pinf : &s->ninf;
      if ((*count)++ == 0) s->first_bad[isnan(v) ? 0 : v > 0 ? 1 : 2] = p[i].step;
    } else if (!s->have_finite) {
      s->imin = s->imax = i;
      s->have_finite = 1;
    } else {
      if (v < p[s->imin].value) s->imin = i;
      if (v > p[s->imax].value) s->imax = i;
    }
  }
}

/* Markers of the non-finite values of one run: one per kind and pixel column. */
static void draw_nonfinite(FILE *out, const frame *fr, const run_info *run, const point *p, size_t n,
                           const char *color) {
  long last_col[3] = {LONG_MIN, LONG_MIN, LONG_MIN};
  for (size_t i = 0; i < n; i++) {
    double v = p[i].value, x = px(fr, p[i].step), y = fr->strip_y;
    int kind;
    long col = lround(x);
    if (isfinite(v)) continue;
    kind = isnan(v) ? 0 : v > 0 ? 1 : 2;
    if (col == last_col[kind]) continue;
    last_col[kind] = col;
    if (kind == 0)
      fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.2\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\">", x, y,
              color);
    else if (kind == 1)
      fprintf(out, "<path d=\"M%.1f %.1f l4 7 h-8 z\" fill=\"%s\">", x, y - 4, color);
    else
      fprintf(out, "<path d=\"M%.1f %.1f l4 -7 h-8 z\" fill=\"%s\">", x, y + 4, color);
    fputs("<title>", out);
    html_escape(out, run->name);
    fprintf(out, ": step %" PRId64 ": %s</title>%s\n", p[i].step,
            kind == 0   ? "NaN"
            : kind == 1 ? "+Inf"
                        : "-Inf",
            kind == 0 ? "</circle>" : "</path>");
  }
}

/* One chart: the points of tag `tag` of every run, sorted by run then step,
 * one value per step. */
static void draw_chart(FILE *out, const dataset *ds, size_t chart, const point *p, size_t n, const size_t *run_start,
                       const size_t *run_n) {
  frame fr;
  int any_nonfinite = 0, any_finite = 0;
  double ymin = 0, ymax = 0, label_w = 0;
  int64_t xmin = INT64_MAX, xmax = INT64_MIN;
  char buf[64];
  const char *tag = ds->tags[p[0].tag].name;

  for (size_t i = 0; i < n; i++) {
    double v = p[i].value;
    if (p[i].step < xmin) xmin = p[i].step;
    if (p[i].step > xmax) xmax = p[i].step;
    if (!isfinite(v)) {
      any_nonfinite = 1;
    } else if (!any_finite) {
      ymin = ymax = v;
      any_finite = 1;
    } else {
      ymin = fmin(ymin, v);
      ymax = fmax(ymax, v);
    }
  }
  x_axis(&fr.xa, xmin, xmax);
  y_axis(&fr.ya, ymin, ymax);
  /* The left margin fits the widest y label (about 6.2 units per glyph at 11px). */
  for (double v = fr.ya.lo; v <= fr.ya.hi + fr.ya.spacing * 0.5; v += fr.ya.spacing) {
    fmt_y_tick(buf, sizeof buf, &fr.ya, v);
    if (strlen(buf) * 6.2 > label_w) label_w = (double)strlen(buf) * 6.2;
  }
  fr.x0 = 22.0 + label_w + 8.0;
  fr.x1 = SVG_W - PAD_RIGHT;
  fr.y0 = PAD_TOP + (any_nonfinite ? STRIP_H + 6.0 : 0.0);
  fr.y1 = SVG_H - PAD_BOTTOM;
  fr.strip_y = PAD_TOP + STRIP_H / 2.0;

  fprintf(out, "<section class=\"chart\" id=\"chart-%zu\">\n<h2>", chart);
  html_escape(out, tag);
  fputs("</h2>\n", out);
  fprintf(out,
          "<svg class=\"plot\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" role=\"img\" aria-label=\"",
          SVG_W, SVG_H, SVG_W, SVG_H);
  html_escape(out, tag);
  fputs(": value by step\">\n<title>", out);
  html_escape(out, tag);
  fputs("</title>\n", out);
  fprintf(out, "<rect class=\"area\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>\n", fr.x0, fr.y0,
          fr.x1 - fr.x0, fr.y1 - fr.y0);

  /* Grid and tick labels. */
  fputs("<g class=\"grid\">", out);
  for (double v = fr.ya.lo; v <= fr.ya.hi + fr.ya.spacing * 0.5; v += fr.ya.spacing)
    fprintf(out, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>", fr.x0, fr.x1, py_u(&fr, v), py_u(&fr, v));
  for (double v = fr.xa.lo; v <= fr.xa.hi + fr.xa.spacing * 0.5; v += fr.xa.spacing)
    fprintf(out, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>", px_u(&fr, v), px_u(&fr, v), fr.y0, fr.y1);
  fputs("</g>\n<g class=\"ticks y\">", out);
  for (double v = fr.ya.lo; v <= fr.ya.hi + fr.ya.spacing * 0.5; v += fr.ya.spacing) {
    fmt_y_tick(buf, sizeof buf, &fr.ya, v);
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">%s</text>", fr.x0 - 6, py_u(&fr, v) + 3.8, buf);
  }
  fputs("</g>\n<g class=\"ticks x\">", out);
  for (double v = fr.xa.lo; v <= fr.xa.hi + fr.xa.spacing * 0.5; v += fr.xa.spacing) {
    fmt_x_tick(buf, sizeof buf, v);
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">%s</text>", px_u(&fr, v), fr.y1 + 15, buf);
  }
  fputs("</g>\n", out);
  fprintf(out, "<text class=\"label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">step</text>\n", (fr.x0 + fr.x1) / 2,
          SVG_H - 6);
  fprintf(
      out,
      "<text class=\"label\" x=\"12\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 12 %.1f)\">%s</text>\n",
      (fr.y0 + fr.y1) / 2, (fr.y0 + fr.y1) / 2, fr.ya.log ? "value (log scale)" : "value");
  if (any_nonfinite) {
    fprintf(out, "<rect class=\"strip\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>\n", fr.x0, PAD_TOP,
            fr.x1 - fr.x0, STRIP_H);
    fprintf(out, "<text class=\"strip-label\" x=\"%.1f\" y=\"%.1f\">NaN/Inf</text>\n", fr.x0 - 6, fr.strip_y + 3.8);
  }
  fprintf(out, "<rect class=\"frame\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>\n", fr.x0, fr.y0,
          fr.x1 - fr.x0, fr.y1 - fr.y0);

  /* Lines, dots and non-finite markers, run by run. */
  for (size_t r = 0; r < ds->nruns; r++) {
    const point *rp = p + run_start[r];
    const char *color = palette[r % NCOLORS];
    pathw w;
    if (run_n[r] == 0) continue;
    memset(&w, 0, sizeof w);
    w.out = out;
    w.fr = &fr;
    w.p = rp;
    fprintf(out, "<path class=\"line\" stroke=\"%s\" d=\"", color);
    for (size_t i = 0; i < run_n[r]; i++) {
      if (isfinite(rp[i].value))
        path_add(&w, i);
      else
        path_break(&w);
    }
    flush_col(&w);
    fputs("\"/>\n", out);
    /* Isolated points (and every point of a short run) get a dot: a path of one point draws nothing. */
    for (size_t i = 0; i < run_n[r]; i++) {
      int lonely = (i == 0 || !isfinite(rp[i - 1].value)) && (i + 1 == run_n[r] || !isfinite(rp[i + 1].value));
      if (!isfinite(rp[i].value) || !(run_n[r] <= DOTS_MAX || lonely)) continue;
      fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.2\" fill=\"%s\"/>", px(&fr, rp[i].step), py(&fr, rp[i].value),
              color);
    }
    if (run_n[r] <= DOTS_MAX) fputs("\n", out);
    draw_nonfinite(out, &fr, &ds->runs[r], rp, run_n[r], color);
  }
  fputs("</svg>\n", out);

  /* The numbers behind the chart, one row per run: a legend too. */
  fputs(
      "<table class=\"stats\">\n<tr><th class=\"run\">run</th><th>values</th><th>steps</th><th>last</th>"
      "<th>min</th><th>max</th><th>NaN/Inf</th></tr>\n",
      out);
  for (size_t r = 0; r < ds->nruns; r++) {
    const point *rp = p + run_start[r];
    run_stats s;
    char a[40], b[40];
    if (run_n[r] == 0) continue;
    stats_of(rp, run_n[r], &s);
    fprintf(out, "<tr><td class=\"run\"><span class=\"swatch\" style=\"background:%s\"></span>", palette[r % NCOLORS]);
    html_escape(out, ds->runs[r].name);
    fmt_num(a, sizeof a, rp[run_n[r] - 1].value, rp[run_n[r] - 1].dbl);
    fprintf(out, "</td><td>%zu</td><td>%" PRId64, s.n, rp[0].step);
    if (rp[run_n[r] - 1].step != rp[0].step) fprintf(out, "&ndash;%" PRId64, rp[run_n[r] - 1].step);
    fprintf(out, "</td><td>%s</td>", a);
    if (s.have_finite) {
      fmt_num(a, sizeof a, rp[s.imin].value, rp[s.imin].dbl);
      fmt_num(b, sizeof b, rp[s.imax].value, rp[s.imax].dbl);
      fprintf(out, "<td title=\"step %" PRId64 "\">%s</td><td title=\"step %" PRId64 "\">%s</td>", rp[s.imin].step, a,
              rp[s.imax].step, b);
    } else {
      fputs("<td>&ndash;</td><td>&ndash;</td>", out);
    }
    fprintf(out, "<td%s>%zu</td></tr>\n", s.nan + s.pinf + s.ninf ? " class=\"bad\"" : "", s.nan + s.pinf + s.ninf);
  }
  fputs("</table>\n", out);
  /* Where the non-finite values are, run by run, and what their markers mean. */
  for (size_t r = 0; r < ds->nruns; r++) {
    static const char *const what[3] = {"&#9675; NaN", "&#9650; +Inf", "&#9660; &minus;Inf"};
    const point *rp = p + run_start[r];
    run_stats s;
    const char *sep = "";
    if (run_n[r] == 0) continue;
    stats_of(rp, run_n[r], &s);
    if (s.nan + s.pinf + s.ninf == 0) continue;
    fputs("<p class=\"bad\">", out);
    html_escape(out, ds->runs[r].name);
    fputs(": ", out);
    for (int kind = 0; kind < 3; kind++) {
      size_t c = kind == 0 ? s.nan : kind == 1 ? s.pinf : s.ninf;
      if (c == 0) continue;
      if (c == 1)
        fprintf(out, "%s%s at step %" PRId64, sep, what[kind], s.first_bad[kind]);
      else
        fprintf(out, "%s%s &times; %zu, the first at step %" PRId64, sep, what[kind], c, s.first_bad[kind]);
      sep = "; ";
    }
    fputs("</p>\n", out);
  }
  fputs("</section>\n", out);
}

static const char style[] =
    "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,'Helvetica Neue',Arial,sans-serif;margin:16px 16px "
    "32px;color:#222;background:#f6f7f9}\n"
    "h1{font-size:20px;font-weight:600;margin:0 0 4px;word-break:break-all}\n"
    "p.meta{margin:0 0 12px;color:#555;font-size:13px}\n"
    "nav{font-size:13px;margin:0 0 14px;line-height:1.7}\n"
    "nav a{color:#1f5fa8;text-decoration:none;margin-right:14px;white-space:nowrap}\n"
    ".legend{font-size:13px;margin:0 0 14px}\n"
    ".legend span.item{margin-right:16px;white-space:nowrap}\n"
    ".swatch{display:inline-block;width:14px;height:4px;border-radius:2px;vertical-align:middle;margin-right:6px}\n"
    ".charts{display:flex;flex-wrap:wrap;gap:16px}\n"
    ".chart{background:#fff;border:1px solid #dcdfe4;border-radius:6px;padding:10px 12px;width:540px}\n"
    ".chart h2{font-size:14px;font-weight:600;margin:0 0 2px;word-break:break-all}\n"
    "svg.plot{display:block}\n"
    "svg.plot text{font-size:11px;fill:#555}\n"
    "svg.plot .ticks.y text,svg.plot .strip-label{text-anchor:end}\n"
    "svg.plot .ticks.x text{text-anchor:middle}\n"
    "svg.plot text.label{font-size:12px;fill:#333}\n"
    "svg.plot .strip-label{fill:#b22;font-size:10px}\n"
    "svg.plot .area{fill:#fff}\n"
    "svg.plot .strip{fill:#fdf1f1}\n"
    "svg.plot .frame{fill:none;stroke:#bbb}\n"
    "svg.plot .grid line{stroke:#ececec}\n"
    "svg.plot .line{fill:none;stroke-width:1.6;stroke-linejoin:round;stroke-linecap:round}\n"
    "table.stats{border-collapse:collapse;font-size:12px;margin-top:4px;width:100%}\n"
    "table.stats th{font-weight:600;color:#555;text-align:right;padding:2px 6px;border-bottom:1px solid #e3e5e8}\n"
    "table.stats td{text-align:right;padding:2px 6px;font-variant-numeric:tabular-nums}\n"
    "table.stats .run{text-align:left;white-space:normal;overflow-wrap:anywhere;width:40%}\n"
    "table.stats td,table.stats th{white-space:nowrap}\n"
    "table.stats td.bad,p.bad{color:#b22}\n"
    "p.bad{font-size:12px;margin:4px 6px 0}\n"
    "p.none{color:#555}\n";

static int write_html(FILE *out, const char *path, dataset *ds) {
  size_t ncharts = 0, i = 0, kept = 0, k;
  size_t *run_start, *run_n;

  /* One value per (tag, run, step): the last one written. */
  sort_ds = ds;
  if (ds->npts > 0) qsort(ds->pts, ds->npts, sizeof *ds->pts, cmp_plot);
  for (k = 0; k < ds->npts; k++) {
    const point *p = &ds->pts[k], *q = k + 1 < ds->npts ? &ds->pts[k + 1] : NULL;
    if (q != NULL && q->tag == p->tag && q->run == p->run && q->step == p->step) continue;
    ds->pts[kept++] = *p;
  }
  ds->npts = kept;
  run_start = calloc(ds->nruns, sizeof *run_start);
  run_n = calloc(ds->nruns, sizeof *run_n);
  if (run_start == NULL || run_n == NULL) {
    free(run_start);
    free(run_n);
    return out_of_memory();
  }
  for (k = 0; k < ds->npts; k++)
    if (k == 0 || ds->pts[k].tag != ds->pts[k - 1].tag) ncharts++;

  fputs(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>",
      out);
  html_escape(out, path);
  fputs(" \xe2\x80\x94 scalars</title>\n<style>\n", out);
  fputs(style, out);
  fputs("</style>\n</head>\n<body>\n<h1>Scalars of ", out);
  html_escape(out, path);
  fputs("</h1>\n", out);
  fprintf(out, "<p class=\"meta\">%zu tag%s, %zu run%s, %zu value%s &middot; written by " TOOL " (hooked %s)</p>\n",
          ncharts, ncharts == 1 ? "" : "s", ds->nruns, ds->nruns == 1 ? "" : "s", ds->npts, ds->npts == 1 ? "" : "s",
          hk_version());
  if (ncharts > 1) {
    size_t c = 0;
    fputs("<nav>", out);
    for (k = 0; k < ds->npts; k++) {
      if (k > 0 && ds->pts[k].tag == ds->pts[k - 1].tag) continue;
      fprintf(out, "<a href=\"#chart-%zu\">", c++);
      html_escape(out, ds->tags[ds->pts[k].tag].name);
      fputs("</a> ", out);
    }
    fputs("</nav>\n", out);
  }
  if (ds->nruns > 1) {
    fputs("<div class=\"legend\">runs: ", out);
    for (size_t r = 0; r < ds->nruns; r++) {
      fprintf(out, "<span class=\"item\"><span class=\"swatch\" style=\"background:%s\"></span>", palette[r % NCOLORS]);
      html_escape(out, ds->runs[r].name);
      fputs("</span>", out);
    }
    fputs("</div>\n", out);
  }
  if (ncharts == 0) fputs("<p class=\"none\">No scalar values in these event files.</p>\n", out);
  fputs("<div class=\"charts\">\n", out);
  for (size_t chart = 0; chart < ncharts; chart++) {
    size_t start = i;
    memset(run_start, 0, ds->nruns * sizeof *run_start);
    memset(run_n, 0, ds->nruns * sizeof *run_n);
    while (i < ds->npts && ds->pts[i].tag == ds->pts[start].tag) {
      if (run_n[ds->pts[i].run]++ == 0) run_start[ds->pts[i].run] = i - start;
      i++;
    }
    draw_chart(out, ds, chart, ds->pts + start, i - start, run_start, run_n);
  }
  fputs("</div>\n</body>\n</html>\n", out);
  free(run_start);
  free(run_n);
  return 0;
}

int cmd_plot(const char *path, const char *output) {
  dataset ds;
  FILE *out;
  int rc, to_stdout = strcmp(output, "-") == 0;

  memset(&ds, 0, sizeof ds);
  rc = find_runs(&ds, path, 1);
  if (rc == 0) rc = load(&ds);
  if (rc != 0) {
    dataset_free(&ds);
    return rc;
  }
  if (ds.npts == 0) fprintf(stderr, TOOL ": warning: %s: no scalar values in its event files\n", path);
  out = to_stdout ? stdout : fopen(output, "w");
  if (out == NULL) {
    fprintf(stderr, TOOL ": %s: cannot create: %s\n", output, strerror(errno));
    dataset_free(&ds);
    return 1;
  }
  rc = write_html(out, path, &ds);
  if (rc == 0 && (fflush(out) != 0 || ferror(out))) {
    fprintf(stderr, TOOL ": %s: write error: %s\n", to_stdout ? "standard output" : output, strerror(errno));
    rc = 1;
  }
  if (!to_stdout && fclose(out) != 0 && rc == 0) {
    fprintf(stderr, TOOL ": %s: write error: %s\n", output, strerror(errno));
    rc = 1;
  }
  if (rc != 0 && !to_stdout) remove(output);
  dataset_free(&ds);
  return rc;
}
