/*
 * hooked-ckpt — inspect and verify hooked checkpoints (checkpoint-format.md).
 *
 *   hooked-ckpt ls FILE|DIR             tensors (name, dtype, shape, bytes), the step
 *   hooked-ckpt verify [--finite] FILE|DIR  every CRC-32C, and NaN/Inf in floating
 *                                       tensors (warned; with --finite, failed);
 *                                       exit 0 only if all verify
 *   hooked-ckpt dump [--limit N] FILE NAME   the values of one tensor
 *   hooked-ckpt latest DIR              the newest checkpoint that verifies
 *   hooked-ckpt diff A B                compare two checkpoints tensor by tensor
 *
 * FILE is a checkpoint prefix ("ckpt/model.ckpt-3000") or its data file
 * ("ckpt/model.ckpt-3000.safetensors"). For a DIR, ls and verify take the
 * checkpoints its state file lists, oldest first, plus any other
 * "<name>-<step>.safetensors" in it; diff takes its latest checkpoint (the
 * one `latest` prints).
 *
 * Written only against the public API (hooked/checkpoint.h and the POSIX
 * hk_fs of hooked/sys/fs.h), as any third-party tool could be.
 *
 * Exit status: 0 success; 1 any problem (one line on stderr,
 * "hooked-ckpt: <file>: <message>"); 2 bad usage. diff follows cmp(1) and
 * diff(1) instead, so that "different" and "could not tell" stay apart:
 * 0 identical, 1 different, 2 bad usage or a checkpoint that cannot be read.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#if !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <hooked/hooked.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TOOL "hooked-ckpt"
#define DEFAULT_LIMIT 1000
#define LINE_WIDTH 75 /* numpy's default linewidth */
#define DATA_SUFFIX ".safetensors"

static const char usage_text[] = "usage: " TOOL
                                 " COMMAND ARGS\n"
                                 "\n"
                                 "Inspect and verify hooked checkpoints. FILE is a checkpoint prefix\n"
                                 "(ckpt/model.ckpt-3000) or its data file (ckpt/model.ckpt-3000.safetensors);\n"
                                 "DIR is a checkpoint directory (its state file 'checkpoint' and every\n"
                                 "<name>-<step>.safetensors in it).\n"
                                 "\n"
                                 "commands:\n"
                                 "  ls FILE|DIR                 the global step and every tensor: name, dtype,\n"
                                 "                              shape, bytes\n"
                                 "  verify [--finite] FILE|DIR  check the header and every CRC-32C of each\n"
                                 "                              checkpoint, and that a name <base>-<step> says\n"
                                 "                              the global step it holds; prints OK or FAILED\n"
                                 "                              per file; exit status 0 only if all verify and\n"
                                 "                              one was found. Floating tensors (F16, BF16,\n"
                                 "                              F32, F64) holding NaN or Inf get a line\n"
                                 "                              'WARNING FILE: tensor NAME holds N non-finite\n"
                                 "                              values ...' (exit status still 0); with\n"
                                 "                              --finite that line says FAILED instead and the\n"
                                 "                              checkpoint fails verification (exit status 1)\n"
                                 "  dump [--limit N] FILE NAME  print the values of tensor NAME, at most N\n"
                                 "                              elements (default 1000; 0: all)\n"
                                 "  latest DIR                  print the prefix of the newest checkpoint of DIR\n"
                                 "                              that verifies\n"
                                 "  diff A B                    compare two checkpoints (each a FILE, or a DIR for\n"
                                 "                              its latest checkpoint): every tensor, equal\n"
                                 "                              (bytewise) or not; where values differ, the first\n"
                                 "                              differing element and the largest absolute\n"
                                 "                              difference; tensors only in A or B, dtypes or\n"
                                 "                              shapes that differ, a different global step.\n"
                                 "                              Every tensor is read and CRC-verified\n"
                                 "\n"
                                 "options:\n"
                                 "  -h, --help                  show this help\n"
                                 "  --version                   show the hooked version\n"
                                 "\n"
                                 "exit status: 0 success, 1 any problem (a message on stderr), 2 bad usage;\n"
                                 "diff: 0 identical (same tensors, dtypes, shapes, bytes and global step),\n"
                                 "1 different, 2 bad usage or a checkpoint that cannot be read\n";

/* safetensors names by hk_dtype (the format's dtype strings). */
static const char *dtype_st_name(hk_dtype dtype) {
  switch (dtype) {
#define X(lc, uc, size, st) \
  case HK_DTYPE_##uc: return st;
    HK_DTYPE_TABLE(X)
#undef X
    default: return "?";
  }
}

static int usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, TOOL ": ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\nTry '" TOOL " --help'.\n");
  return 2;
}

static int problem(const char *file, const hk_status *st) {
  fprintf(stderr, TOOL ": %s: %s\n", file, st->message);
  return 1;
}

static void log_sink(void *user, hk_log_level level, const char *msg) {
  (void)user;
  fprintf(stderr, TOOL ": %s: %s\n", level >= HK_LOG_ERROR ? "error" : "warning", msg);
}

static int is_directory(const char *path) {
  const hk_fs_vtable *fs = hk_fs_posix();
  hk_fs_stat s;
  return fs->stat(NULL, path, &s, NULL) == HK_OK && s.is_dir;
}

static char *join(const char *a, const char *b, const char *c) {
  size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
  char *s = malloc(n);
  if (s != NULL) snprintf(s, n, "%s%s%s", a, b, c);
  return s;
}

static int out_of_memory(void) {
  fprintf(stderr, TOOL ": out of memory\n");
  return 1;
}

/* ---- checkpoints of a directory ------------------------------------------- */

typedef struct candidate {
  char *prefix;      /* "<dir>/<name>" */
  int listed;        /* named by the state file */
  int latest;        /* its model_checkpoint_path */
  double timestamp;  /* from the state file; NaN when none */
  int64_t scan_step; /* from the file name, for ordering unlisted ones */
} candidate;

typedef struct dir_listing {
  const char *dir;
  candidate *c;
  size_t n, cap;
  int state_found;   /* the state file exists and parsed */
  int state_problem; /* it exists but could not be read */
  int oom;
} dir_listing;

static int add_candidate(dir_listing *d, char *prefix, int listed, double ts, int64_t step) {
  for (size_t i = 0; i < d->n; i++) {
    if (strcmp(d->c[i].prefix, prefix) == 0) {
      free(prefix);
      return 0;
    }
  }
  if (d->n == d->cap) {
    size_t cap = d->cap ? d->cap * 2 : 16;
    candidate *c = realloc(d->c, cap * sizeof *c);
    if (c == NULL) {
      free(prefix);
      d->oom = 1;
      return 1;
    }
    d->c = c;
    d->cap = cap;
  }
  d->c[d->n].prefix = prefix;
  d->c[d->n].listed = listed;
  d->c[d->n].latest = 0;
  d->c[d->n].timestamp = ts;
  d->c[d->n].scan_step = step;
  d->n++;
  return 0;
}

/* A data file name "<name>-<digits>.safetensors": its step, or -1. */
static int64_t scan_name_step(const char *name) {
  size_t len = strlen(name), sl = strlen(DATA_SUFFIX), end, i;
  int64_t step = 0;
  if (len <= sl || strcmp(name + len - sl, DATA_SUFFIX) != 0) return -1;
  end = len - sl;
  i = end;
  while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9') i--;
  if (i == end || i < 2 || name[i - 1] != '-' || end - i > 18) return -1;
  for (; i < end; i++) step = step * 10 + (name[i] - '0');
  return step;
}

static hk_code on_dir_entry(void *user, const char *name, hk_status *status) {
  dir_listing *d = user;
  int64_t step = scan_name_step(name);
  char *prefix;
  (void)status;
  if (step < 0) return HK_OK;
  prefix = join(d->dir, "/", name);
  if (prefix == NULL) {
    d->oom = 1;
    return HK_OK;
  }
  prefix[strlen(prefix) - strlen(DATA_SUFFIX)] = '\0';
  add_candidate(d, prefix, 0, NAN, step);
  return HK_OK;
}

static int cmp_unlisted(const void *pa, const void *pb) {
  const candidate *a = pa, *b = pb;
  /* Every name matched "<basename>-<step>": by basename, then by step. */
  size_t ba = (size_t)(strrchr(a->prefix, '-') - a->prefix), bb = (size_t)(strrchr(b->prefix, '-') - b->prefix);
  int c = memcmp(a->prefix, b->prefix, ba < bb ? ba : bb);
  if (c != 0) return c;
  if (ba != bb) return ba < bb ? -1 : 1;
  return (a->scan_step > b->scan_step) - (a->scan_step < b->scan_step);
}

/* The state file's checkpoints, oldest first, then the other data files of
 * the directory by basename and step. @return 0, or 1 after a message. */
static int list_dir(const hk_env *env, const char *dir, dir_listing *d) {
  hk_status st = HK_STATUS_INIT;
  hk_checkpoint_state *cs = NULL;
  hk_code rc;
  size_t nlisted;

  memset(d, 0, sizeof *d);
  d->dir = dir;
  rc = hk_get_checkpoint_state(env, dir, NULL, &cs, &st);
  if (rc == HK_OK) {
    const char *model = hk_checkpoint_state_model_path(cs);
    d->state_found = 1;
    for (size_t i = 0; i < hk_checkpoint_state_count(cs); i++) {
      char *p = join(hk_checkpoint_state_path(cs, i), "", "");
      if (p == NULL || add_candidate(d, p, 1, hk_checkpoint_state_timestamp(cs, i), -1) != 0) {
        hk_checkpoint_state_free(cs);
        return out_of_memory();
      }
    }
    /* TF's rule: model_checkpoint_path is the newest even when the list
     * misses it. */
    if (model != NULL) {
      char *p = join(model, "", "");
      if (p == NULL || add_candidate(d, p, 1, NAN, -1) != 0) {
        hk_checkpoint_state_free(cs);
        return out_of_memory();
      }
      for (size_t i = 0; i < d->n; i++) d->c[i].latest = strcmp(d->c[i].prefix, model) == 0;
    }
    hk_checkpoint_state_free(cs);
  } else if (rc != HK_NOT_FOUND) {
    d->state_problem = 1;
    problem(dir, &st);
  }
  nlisted = d->n;
  hk_status_clear(&st);
  if (hk_fs_posix()->list(NULL, dir, on_dir_entry, d, &st) != HK_OK) return problem(dir, &st);
  if (d->oom) return out_of_memory();
  if (d->n > nlisted) qsort(d->c + nlisted, d->n - nlisted, sizeof *d->c, cmp_unlisted); /* c may be NULL */
  return 0;
}

static void free_listing(dir_listing *d) {
  for (size_t i = 0; i < d->n; i++) free(d->c[i].prefix);
  free(d->c);
}

/* ---- ls ------------------------------------------------------------------- */

static void format_shape(const hk_checkpoint_entry *e, char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = '\0';
  len += (size_t)snprintf(buf, cap, "[");
  for (int32_t k = 0; k < e->rank && len < cap; k++)
    len += (size_t)snprintf(buf + len, cap - len, "%s%" PRId64, k ? ", " : "", e->dims[k]);
  if (len < cap) snprintf(buf + len, cap - len, "]");
}

/* Print one checkpoint's tensors. `note` follows the header line. */
static int ls_checkpoint(const hk_env *env, const char *path, const char *note) {
  hk_status st = HK_STATUS_INIT;
  hk_checkpoint_reader *r = NULL;
  hk_checkpoint_entry e;
  size_t n, wname = 4, wshape = 5;
  uint64_t total = 0;
  char shape[HK_MAX_RANK * 22 + 3];

  if (hk_checkpoint_reader_open(&r, env, path, &st) != HK_OK) return problem(path, &st);
  n = hk_checkpoint_reader_count(r);
  for (size_t i = 0; i < n; i++) {
    if (hk_checkpoint_reader_entry(r, i, &e, &st) != HK_OK) {
      hk_checkpoint_reader_free(r);
      return problem(path, &st);
    }
    format_shape(&e, shape, sizeof shape);
    if (strlen(e.name) > wname) wname = strlen(e.name);
    if (strlen(shape) > wshape) wshape = strlen(shape);
    total += e.nbytes;
  }
  printf("%s: global step %" PRId64 ", %zu tensor%s, %" PRIu64 " bytes%s\n", hk_checkpoint_reader_path(r),
         hk_checkpoint_reader_step(r), n, n == 1 ? "" : "s", total, note);
  printf("  %-*s  %-5s  %-*s  %s\n", (int)wname, "name", "dtype", (int)wshape, "shape", "bytes");
  for (size_t i = 0; i < n; i++) {
    hk_checkpoint_reader_entry(r, i, &e, NULL);
    format_shape(&e, shape, sizeof shape);
    printf("  %-*s  %-5s  %-*s  %" PRIu64 "\n", (int)wname, e.name, dtype_st_name(e.dtype), (int)wshape, shape,
           e.nbytes);
  }
  hk_checkpoint_reader_free(r);
  return 0;
}

static void format_time(double t, char *buf, size_t cap) {
  struct tm tm;
  time_t secs;
  buf[0] = '\0';
  /* Converting NaN or an out-of-range value to time_t is undefined. */
  if (!isfinite(t) || t < 0 || t > 253402300799.0) return; /* up to 9999-12-31 */
  secs = (time_t)t;
  if (gmtime_r(&secs, &tm) == NULL) return;
  strftime(buf, cap, ", saved %Y-%m-%d %H:%M:%S UTC", &tm);
}

static int cmd_ls(const hk_env *env, const char *path) {
  dir_listing d;
  int rc = 0;
  if (!is_directory(path)) return ls_checkpoint(env, path, "");
  if (list_dir(env, path, &d) != 0) {
    free_listing(&d);
    return 1;
  }
  rc = d.state_problem;
  if (d.state_found) {
    size_t listed = 0;
    for (size_t i = 0; i < d.n; i++) listed += (size_t)d.c[i].listed;
    printf("%s: the state file lists %zu checkpoint%s", path, listed, listed == 1 ? "" : "s");
    if (listed < d.n) printf("; %zu more not in it", d.n - listed);
    printf("\n");
  } else {
    printf("%s: no state file; %zu checkpoint%s found\n", path, d.n, d.n == 1 ? "" : "s");
  }
  if (d.n == 0) {
    fprintf(stderr, TOOL ": %s: no checkpoint found\n", path);
    rc = 1;
  }
  for (size_t i = 0; i < d.n; i++) {
    char note[96], when[64];
    format_time(d.c[i].timestamp, when, sizeof when);
    snprintf(note, sizeof note, "%s%s%s", when, d.c[i].latest ? " (latest)" : "",
             d.state_found && !d.c[i].listed ? " (not in the state file)" : "");
    printf("\n");
    if (ls_checkpoint(env, d.c[i].prefix, note) != 0) rc = 1;
  }
  free_listing(&d);
  return rc;
}

/* ---- verify --------------------------------------------------------------- */

/* The step a data file's name says, "<basename>-<step>.safetensors" as the
 * Saver names it (C113, negative steps included: "model.ckpt--5"); 0 when
 * the name says none (a checkpoint saved without a step). */
static int name_says_step(const char *data_path, int64_t *step) {
  const char *slash = strrchr(data_path, '/'), *name = slash ? slash + 1 : data_path;
  int64_t s = scan_name_step(name);
  size_t dash;
  if (s < 0) return 0;
  dash = strlen(name) - strlen(DATA_SUFFIX);
  while (dash > 0 && name[dash - 1] != '-') dash--;
  *step = dash >= 3 && name[dash - 2] == '-' ? -s : s;
  return 1;
}

/* ---- non-finite values ---------------------------------------------------- */

typedef struct nonfinite {
  uint64_t nan, pos_inf, neg_inf;
} nonfinite;

/* Exponent all ones: infinity when the mantissa is 0, NaN otherwise. */
static void classify_bits(uint64_t bits, uint64_t exp, uint64_t mant, uint64_t sign, nonfinite *c) {
  if ((bits & exp) != exp) return;
  if (bits & mant)
    c->nan++;
  else if (bits & sign)
    c->neg_inf++;
  else
    c->pos_inf++;
}

/* Count the NaN and infinite elements of n little-endian elements. */
static void count_nonfinite(hk_dtype dtype, const unsigned char *p, size_t n, nonfinite *c) {
  for (size_t i = 0; i < n; i++) {
    uint64_t b = 0;
    size_t size = hk_dtype_size(dtype);
    for (size_t k = 0; k < size; k++) b |= (uint64_t)p[i * size + k] << (8 * k);
    switch (dtype) {
      case HK_DTYPE_F16: classify_bits(b, 0x7c00u, 0x03ffu, 0x8000u, c); break;
      case HK_DTYPE_BF16: classify_bits(b, 0x7f80u, 0x007fu, 0x8000u, c); break;
      case HK_DTYPE_F32: classify_bits(b, 0x7f800000u, 0x007fffffu, 0x80000000u, c); break;
      case HK_DTYPE_F64:
        classify_bits(b, UINT64_C(0x7ff0000000000000), UINT64_C(0x000fffffffffffff), UINT64_C(0x8000000000000000), c);
        break;
      default: return;
    }
  }
}

#define SCAN_CHUNK ((size_t)1 << 20)

/* Count the non-finite values of floating tensor `e` of the data file
 * `data` (already CRC-verified), reading it in 1 MiB pieces. */
static hk_code scan_tensor(const hk_fs_vtable *fs, hk_fs_file *f, const hk_checkpoint_entry *e, unsigned char *buf,
                           nonfinite *c, hk_status *st) {
  size_t size = hk_dtype_size(e->dtype);
  uint64_t done = 0;
  while (done < e->nbytes) {
    size_t want = e->nbytes - done < SCAN_CHUNK ? (size_t)(e->nbytes - done) : SCAN_CHUNK, got = 0;
    while (got < want) {
      size_t k = 0;
      hk_code rc = fs->read_at(NULL, f, buf + got, want - got, e->offset + done + got, &k, st);
      if (rc != HK_OK) return rc;
      if (k == 0) return hk_status_set(st, HK_DATA_LOSS, "tensor '%s' ends before its header says", e->name);
      got += k;
    }
    count_nonfinite(e->dtype, buf, want / size, c);
    done += want;
  }
  return HK_OK;
}

/* Print a line for each floating tensor of r holding NaN or Inf: WARNING
 * (and *warned set), or FAILED when `finite` is set. @return 1 when
 * --finite fails the file, -1 when it cannot be read (a FAILED line is
 * printed), else 0. */
static int check_finite(hk_checkpoint_reader *r, int finite, int *warned) {
  const char *path = hk_checkpoint_reader_path(r);
  const hk_fs_vtable *fs = hk_fs_posix();
  hk_status st = HK_STATUS_INIT;
  hk_fs_file *f = NULL;
  unsigned char *buf = NULL;
  int failed = 0;
  size_t n = hk_checkpoint_reader_count(r);

  for (size_t i = 0; i < n; i++) {
    hk_checkpoint_entry e;
    nonfinite c = {0, 0, 0};
    uint64_t bad, elems;
    if (hk_checkpoint_reader_entry(r, i, &e, &st) != HK_OK) break;
    if (!hk_dtype_is_float(e.dtype) || e.nbytes == 0) continue;
    if (f == NULL && fs->open_read(NULL, path, &f, &st) != HK_OK) break;
    if (buf == NULL && (buf = malloc(SCAN_CHUNK)) == NULL) {
      hk_status_set(&st, HK_RESOURCE_EXHAUSTED, "out of memory");
      break;
    }
    if (scan_tensor(fs, f, &e, buf, &c, &st) != HK_OK) break;
    bad = c.nan + c.pos_inf + c.neg_inf;
    if (bad == 0) continue;
    elems = e.nbytes / hk_dtype_size(e.dtype);
    printf("%s %s: tensor '%s' holds %" PRIu64 " non-finite value%s of %" PRIu64 " (%" PRIu64 " NaN, %" PRIu64
           " +Inf, %" PRIu64 " -Inf)\n",
           finite ? "FAILED " : "WARNING", path, e.name, bad, bad == 1 ? "" : "s", elems, c.nan, c.pos_inf,
           c.neg_inf);
    if (finite)
      failed = 1;
    else
      *warned = 1;
  }
  if (f != NULL) fs->close(NULL, f, NULL);
  free(buf);
  if (st.code != HK_OK) {
    printf("FAILED  %s: reading it for non-finite values: %s\n", path, st.message);
    return -1;
  }
  return failed;
}

/* @return 0 when it verifies; prints OK or FAILED either way (and, for
 * floating tensors holding NaN or Inf, WARNING lines, or FAILED ones with
 * `finite`). Beyond the reader's checks, a name "<basename>-<step>" must
 * say the global step the file holds: "model.ckpt-300" holding step 301 is
 * not checkpoint 300. *warned is set when a WARNING line was printed. */
static int verify_checkpoint(const hk_env *env, const char *path, int finite, int *warned) {
  hk_status st = HK_STATUS_INIT;
  hk_checkpoint_reader *r = NULL;
  hk_checkpoint_entry e;
  uint64_t total = 0;
  int64_t named;
  size_t n;
  int nf;
  if (hk_checkpoint_reader_open(&r, env, path, &st) != HK_OK || hk_checkpoint_reader_verify(r, &st) != HK_OK) {
    const char *shown = r != NULL ? hk_checkpoint_reader_path(r) : path;
    printf("FAILED  %s: %s\n", shown, st.message);
    hk_checkpoint_reader_free(r);
    return 1;
  }
  if (name_says_step(hk_checkpoint_reader_path(r), &named) && named != hk_checkpoint_reader_step(r)) {
    printf("FAILED  %s: its name says step %" PRId64 " but it holds global step %" PRId64 "\n",
           hk_checkpoint_reader_path(r), named, hk_checkpoint_reader_step(r));
    hk_checkpoint_reader_free(r);
    return 1;
  }
  /* Every CRC verified: the values are the ones written; are they finite? */
  nf = check_finite(r, finite, warned);
  if (nf != 0) {
    hk_checkpoint_reader_free(r);
    return 1;
  }
  n = hk_checkpoint_reader_count(r);
  for (size_t i = 0; i < n; i++)
    if (hk_checkpoint_reader_entry(r, i, &e, NULL) == HK_OK) total += e.nbytes;
  printf("OK      %s (global step %" PRId64 ", %zu tensor%s, %" PRIu64 " bytes)\n", hk_checkpoint_reader_path(r),
         hk_checkpoint_reader_step(r), n, n == 1 ? "" : "s", total);
  hk_checkpoint_reader_free(r);
  return 0;
}

static int cmd_verify(const hk_env *env, const char *path, int finite) {
  dir_listing d;
  size_t failed = 0, warned_files = 0;
  int warned = 0;
  if (!is_directory(path)) {
    if (verify_checkpoint(env, path, finite, &warned) == 0) return 0;
    fprintf(stderr, TOOL ": %s: verification FAILED\n", path);
    return 1;
  }
  if (list_dir(env, path, &d) != 0) {
    free_listing(&d);
    return 1;
  }
  for (size_t i = 0; i < d.n; i++) {
    warned = 0;
    failed += (size_t)verify_checkpoint(env, d.c[i].prefix, finite, &warned);
    warned_files += (size_t)warned;
  }
  if (d.n == 0) {
    fprintf(stderr, TOOL ": %s: no checkpoint found\n", path);
  } else {
    printf("%zu checkpoint%s: %zu OK, %zu FAILED", d.n, d.n == 1 ? "" : "s", d.n - failed, failed);
    if (warned_files > 0)
      printf(" (%zu with non-finite values; --finite fails them)", warned_files);
    printf("\n");
    if (failed != 0) fprintf(stderr, TOOL ": %s: %zu of %zu checkpoints FAILED verification\n", path, failed, d.n);
  }
  free_listing(&d);
  return d.n == 0 || failed != 0 || d.state_problem ? 1 : 0;
}

/* ---- dump ----------------------------------------------------------------- */

/* Little-endian load, whatever the host's byte order. */
static uint64_t load_le(const unsigned char *p, size_t size) {
  uint64_t v = 0;
  for (size_t i = size; i > 0; i--) v = v << 8 | p[i - 1];
  return v;
}

static double half_to_double(uint16_t h) {
  int exp = (h >> 10) & 0x1f;
  double mant = h & 0x3ff, v;
  if (exp == 0) {
    v = ldexp(mant, -24);
  } else if (exp == 31) {
    v = mant != 0 ? NAN : INFINITY;
  } else {
    v = ldexp(mant + 1024, exp - 25);
  }
  return h & 0x8000 ? -v : v;
}

/* Round to the nearest half, ties to even; only for the round-trip test. */
static uint16_t double_to_half(double d) {
  uint16_t sign = signbit(d) ? 0x8000 : 0;
  double a = fabs(d);
  int e;
  if (isnan(d)) return 0x7e00;
  if (a >= 65520.0) return sign | 0x7c00;
  if (a < ldexp(1, -14)) return sign | (uint16_t)nearbyint(ldexp(a, 24));
  frexp(a, &e); /* a = f * 2^e, f in [0.5, 1): the half exponent is e - 1 */
  {
    double m = nearbyint((ldexp(a, 1 - e) - 1.0) * 1024.0);
    int ex = e - 1;
    if (m >= 1024.0) m = 0, ex++;
    if (ex + 15 >= 31) return sign | 0x7c00;
    return sign | (uint16_t)((ex + 15) << 10) | (uint16_t)m;
  }
}

static float bits_to_float(uint32_t b) {
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}

static uint32_t float_to_bits(float f) {
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  return b;
}

static uint16_t float_to_bf16(float f) {
  uint32_t b = float_to_bits(f);
  if (isnan(f)) return (uint16_t)(b >> 16 | 0x40);
  return (uint16_t)((b + 0x7fff + ((b >> 16) & 1)) >> 16);
}

/* The value of float element `bits` of `dtype` as a double. */
static double float_value(hk_dtype dtype, uint64_t bits) {
  double v;
  switch (dtype) {
    case HK_DTYPE_F16: return half_to_double((uint16_t)bits);
    case HK_DTYPE_BF16: return bits_to_float((uint32_t)bits << 16);
    case HK_DTYPE_F32: return bits_to_float((uint32_t)bits);
    default: memcpy(&v, &bits, sizeof v); return v;
  }
}

/* Whether `text` reads back to exactly `bits` in `dtype`. */
static int reads_back(hk_dtype dtype, uint64_t bits, const char *text) {
  double back = strtod(text, NULL);
  switch (dtype) {
    case HK_DTYPE_F16: return double_to_half(back) == (uint16_t)bits;
    case HK_DTYPE_BF16: return float_to_bf16((float)back) == (uint16_t)bits;
    case HK_DTYPE_F32: return float_to_bits((float)back) == (uint32_t)bits;
    default: return back == float_value(dtype, bits);
  }
}

/* How numpy prints a float array: positional unless the magnitudes call for
 * scientific notation; positional values each with the fewest digits that
 * read back exactly, scientific ones all with the most any needs. */
typedef struct float_style {
  int sci;
  int prec; /* scientific: digits after the point, common to all */
} float_style;

/* numpy's default precision: at most 8 digits after the point, fewer when
 * fewer read back exactly. */
#define MAX_DIGITS 8

static int fewest_digits(hk_dtype dtype, uint64_t bits, int sci) {
  char buf[400];
  for (int p = 0; p < MAX_DIGITS; p++) {
    snprintf(buf, sizeof buf, sci ? "%.*e" : "%.*f", p, float_value(dtype, bits));
    if (reads_back(dtype, bits, buf)) return p;
  }
  return MAX_DIGITS;
}

static void format_float(hk_dtype dtype, uint64_t bits, const float_style *fs, char *buf, size_t cap) {
  double v = float_value(dtype, bits);
  if (isnan(v) || isinf(v)) {
    snprintf(buf, cap, "%s", isnan(v) ? "nan" : v < 0 ? "-inf" : "inf");
  } else if (fs->sci) {
    snprintf(buf, cap, "%.*e", fs->prec, v);
  } else {
    size_t len;
    snprintf(buf, cap, "%.*f", fewest_digits(dtype, bits, 0), v);
    /* Rounded to MAX_DIGITS, "0.05000000" is numpy's "0.05"; "1" is "1.". */
    len = strlen(buf);
    if (strchr(buf, '.') != NULL) {
      while (buf[len - 1] == '0') buf[--len] = '\0';
    } else if (len + 1 < cap) {
      strcat(buf, ".");
    }
  }
}

static void format_element(hk_dtype dtype, const unsigned char *p, const float_style *fs, char *buf, size_t cap) {
  size_t size = hk_dtype_size(dtype);
  uint64_t u = load_le(p, size);
  switch (dtype) {
    case HK_DTYPE_BOOL: snprintf(buf, cap, "%s", u ? "True" : "False"); break;
    case HK_DTYPE_I8: snprintf(buf, cap, "%d", (int)(int8_t)u); break;
    case HK_DTYPE_I16: snprintf(buf, cap, "%d", (int)(int16_t)u); break;
    case HK_DTYPE_I32: snprintf(buf, cap, "%" PRId32, (int32_t)u); break;
    case HK_DTYPE_I64: snprintf(buf, cap, "%" PRId64, (int64_t)u); break;
    case HK_DTYPE_U8:
    case HK_DTYPE_U16:
    case HK_DTYPE_U32:
    case HK_DTYPE_U64: snprintf(buf, cap, "%" PRIu64, u); break;
    default: format_float(dtype, u, fs, buf, cap); break;
  }
}

/* numpy's rule (FloatingFormat.fillFormat): scientific when the largest
 * magnitude is >= 1e8, the smallest nonzero < 1e-4, or their ratio > 1e3. */
static float_style choose_float_style(hk_dtype dtype, const unsigned char *data, uint64_t n) {
  float_style fs = {0, 0};
  double lo = INFINITY, hi = 0;
  size_t size = hk_dtype_size(dtype);
  if (!hk_dtype_is_float(dtype)) return fs;
  for (uint64_t i = 0; i < n; i++) {
    double a = fabs(float_value(dtype, load_le(data + i * size, size)));
    if (!isfinite(a) || a == 0) continue;
    if (a < lo) lo = a;
    if (a > hi) hi = a;
  }
  fs.sci = hi > 0 && (hi >= 1e8 || lo < 1e-4 || hi / lo > 1e3);
  if (fs.sci) {
    for (uint64_t i = 0; i < n; i++) {
      uint64_t bits = load_le(data + i * size, size);
      int p;
      if (!isfinite(float_value(dtype, bits))) continue;
      p = fewest_digits(dtype, bits, 1);
      if (p > fs.prec) fs.prec = p;
    }
  }
  return fs;
}

/* numpy aligns positional floats on the decimal point: the text before it
 * padded on the left, the rest on the right. Everything else is
 * right-aligned (all "before"). */
static void split_widths(hk_dtype dtype, const float_style *fs, const char *s, size_t *before, size_t *after) {
  const char *dot = hk_dtype_is_float(dtype) && !fs->sci ? strchr(s, '.') : NULL;
  *before = dot != NULL ? (size_t)(dot - s) : strlen(s);
  *after = dot != NULL ? strlen(dot) : 0;
}

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

#define ELEMENT_MAX 64 /* "%.8f" of a positional value (below 1e8), "%.8e" of any */

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

static int parse_limit(const char *text, uint64_t *out) {
  char *end;
  unsigned long long v;
  errno = 0;
  v = strtoull(text, &end, 10);
  if (*text == '-' || *text == '\0' || *end != '\0' || errno == ERANGE) return 1;
  *out = v == 0 ? UINT64_MAX : (uint64_t)v;
  return 0;
}

static int cmd_dump(const hk_env *env, const char *path, const char *name, uint64_t limit) {
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
      hk_checkpoint_reader_entry(r, index, &e, &st) != HK_OK)
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

/* diff's exit status for trouble: 1 means "different". */
#define DIFF_TROUBLE 2

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

/* A float element as the shortest text that reads back to its bits. */
static void format_shortest(hk_dtype dtype, uint64_t bits, char *buf, size_t cap) {
  double v = float_value(dtype, bits);
  if (isnan(v) || isinf(v)) {
    snprintf(buf, cap, "%s", isnan(v) ? "nan" : v < 0 ? "-inf" : "inf");
    return;
  }
  for (int p = 1; p <= 17; p++) {
    snprintf(buf, cap, "%.*g", p, v);
    if (reads_back(dtype, bits, buf)) return;
  }
}

static void format_double(double v, char *buf, size_t cap) {
  uint64_t bits;
  memcpy(&bits, &v, sizeof bits);
  format_shortest(HK_DTYPE_F64, bits, buf, cap);
}

static void format_value(hk_dtype dtype, const unsigned char *p, char *buf, size_t cap) {
  static const float_style unused = {0, 0};
  if (hk_dtype_is_float(dtype)) {
    format_shortest(dtype, load_le(p, hk_dtype_size(dtype)), buf, cap);
  } else {
    format_element(dtype, p, &unused, buf, cap);
  }
}

/* The row-major multi-dimensional index of flat index i: "[1, 2]". */
static void format_index(const hk_checkpoint_entry *e, uint64_t i, char *buf, size_t cap) {
  int64_t idx[HK_MAX_RANK];
  size_t len = 0;
  for (int32_t k = e->rank - 1; k >= 0; k--) {
    uint64_t d = (uint64_t)e->dims[k]; /* > 0: the tensor has element i */
    idx[k] = (int64_t)(i % d);
    i /= d;
  }
  len += (size_t)snprintf(buf, cap, "[");
  for (int32_t k = 0; k < e->rank && len < cap; k++)
    len += (size_t)snprintf(buf + len, cap - len, "%s%" PRId64, k ? ", " : "", idx[k]);
  if (len < cap) snprintf(buf + len, cap - len, "]");
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

static int cmd_diff(const hk_env *env, const char *path_a, const char *path_b) {
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

/* ---- latest --------------------------------------------------------------- */

static int cmd_latest(const hk_env *env, const char *dir) {
  hk_status st = HK_STATUS_INIT;
  char *path = NULL;
  if (hk_latest_checkpoint(env, dir, NULL, &path, &st) != HK_OK) return problem(dir, &st);
  printf("%s\n", path);
  hk_env_free(env, path);
  return 0;
}

/* ---- main ----------------------------------------------------------------- */

/* "dir/" and "dir" name the same checkpoints: the prefixes built from the
 * directory must compare equal to the state file's. @return `arg`, or
 * *copy (to free) without its trailing slashes; NULL when out of memory. */
static const char *strip_dir_slashes(const char *arg, char **copy) {
  for (size_t len = strlen(arg); len > 1 && arg[len - 1] == '/' && is_directory(arg); len--) {
    if (*copy == NULL && (*copy = join(arg, "", "")) == NULL) return NULL;
    (*copy)[len - 1] = '\0';
    arg = *copy;
  }
  return arg;
}

int main(int argc, char **argv) {
  const char *args[3];
  int nargs = 0, wanted;
  uint64_t limit = DEFAULT_LIMIT;
  int finite = 0;
  const char *cmd;
  char *path_copy[2] = {NULL, NULL};
  hk_env env;
  int rc;

  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      fputs(usage_text, stdout);
      return 0;
    }
    if (strcmp(argv[i], "--version") == 0) {
      printf(TOOL " (hooked %s)\n", hk_version());
      return 0;
    }
  }
  if (argc < 2) {
    fputs(usage_text, stderr);
    return 2;
  }
  cmd = argv[1];
  if (strcmp(cmd, "ls") != 0 && strcmp(cmd, "verify") != 0 && strcmp(cmd, "dump") != 0 && strcmp(cmd, "latest") != 0 &&
      strcmp(cmd, "diff") != 0)
    return usage_error("unknown command '%s'", cmd);
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(cmd, "dump") == 0 && (strcmp(a, "--limit") == 0 || strncmp(a, "--limit=", 8) == 0)) {
      const char *v = a[7] == '=' ? a + 8 : (i + 1 < argc ? argv[++i] : NULL);
      if (v == NULL) return usage_error("option '%s' needs a value", "--limit");
      if (parse_limit(v, &limit) != 0) return usage_error("invalid --limit '%s': expected an integer >= 0", v);
      continue;
    }
    if (strcmp(cmd, "verify") == 0 && strcmp(a, "--finite") == 0) {
      finite = 1;
      continue;
    }
    if (a[0] == '-' && a[1] != '\0' && strcmp(a, "--") != 0) return usage_error("unknown option '%s'", a);
    if (strcmp(a, "--") == 0) {
      for (i++; i < argc; i++) {
        if (nargs == 3) return usage_error("too many arguments for '%s'", cmd);
        args[nargs++] = argv[i];
      }
      break;
    }
    if (nargs == 3) return usage_error("too many arguments for '%s'", cmd);
    args[nargs++] = a;
  }
  wanted = strcmp(cmd, "dump") == 0 || strcmp(cmd, "diff") == 0 ? 2 : 1;
  if (nargs != wanted)
    return usage_error(strcmp(cmd, "dump") == 0   ? "'%s' needs FILE and NAME"
                       : strcmp(cmd, "diff") == 0 ? "'%s' needs two checkpoints, A and B"
                                                  : "'%s' needs exactly one path",
                       cmd);

  /* dump's second argument is a tensor name, diff's a path. */
  for (int k = 0; k < (strcmp(cmd, "diff") == 0 ? 2 : 1); k++) {
    if ((args[k] = strip_dir_slashes(args[k], &path_copy[k])) == NULL) {
      free(path_copy[0]);
      out_of_memory();
      return strcmp(cmd, "diff") == 0 ? DIFF_TROUBLE : 1;
    }
  }

  hk_env_init(&env, HK_ENV_VERSION);
  env.log = log_sink;
  env.log_level = HK_LOG_WARNING;
  if (strcmp(cmd, "ls") == 0) {
    rc = cmd_ls(&env, args[0]);
  } else if (strcmp(cmd, "verify") == 0) {
    rc = cmd_verify(&env, args[0], finite);
  } else if (strcmp(cmd, "dump") == 0) {
    rc = cmd_dump(&env, args[0], args[1], limit);
  } else if (strcmp(cmd, "diff") == 0) {
    rc = cmd_diff(&env, args[0], args[1]);
  } else {
    rc = cmd_latest(&env, args[0]);
  }
  free(path_copy[0]);
  free(path_copy[1]);
  return rc;
}
