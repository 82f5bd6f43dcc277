/*
 * The checkpoint benchmark's rows beyond the main state's: retention (a
 * Saver keeping 5 over many saves), the small models, and the scaling
 * sizes and tensor counts. Each runs in rounds, reference and hooked
 * interleaved with the order rotated, and prints its per-round figures as
 * it goes.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "bench.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define KEEP 5           /* the retention row's max_to_keep (the Saver's default) */
#define TENSOR_BYTES 256 /* each tensor of the tensor-count rows: 64 f32 */
#define BIG_ROUNDS 3     /* rounds at 1 GiB and at 100,000 tensors: enough for a spread, in a sane time */

/* "256 KiB", "64 MiB", "1 GiB" */
static void size_name(size_t n, char *buf, size_t cap) {
  if (n >= ((size_t)1 << 30) && n % ((size_t)1 << 30) == 0)
    snprintf(buf, cap, "%zu GiB", n >> 30);
  else if (n >= ((size_t)1 << 20))
    snprintf(buf, cap, "%zu MiB", n >> 20);
  else
    snprintf(buf, cap, "%zu KiB", n >> 10);
}

/* ---- printing ------------------------------------------------------------------ */

void print_header(void) {
  printf("%-46s %8s %8s %8s %7s  %s\n", "case (seconds per round)", "min", "median", "max", "GB/s", "");
}

void print_row(const char *label, const double *t, size_t n, size_t bytes, const char *note) {
  spread s = spread_of(t, n);
  printf("%-46s %8.4f %8.4f %8.4f %7.2f  %s\n", label, s.min, s.med, s.max, (double)bytes / s.med / 1e9, note);
}

spread print_ratio(const char *what, const double *ref, const double *hooked, size_t n, int as_time) {
  double *r = calloc(n, sizeof *r);
  spread s = {0, 0, 0};
  if (r == NULL) return s;
  for (size_t i = 0; i < n; i++) r[i] = as_time ? hooked[i] / ref[i] : ref[i] / hooked[i];
  s = spread_of(r, n);
  printf("    %-42s min %5.2f  median %5.2f  max %5.2f\n", what, s.min, s.med, s.max);
  free(r);
  return s;
}

/* ---- retention ------------------------------------------------------------------ */

static int keep_save(bench *b, hk_saver *saver, const char *dir, double *secs, unsigned long *fsyncs) {
  hk_status st = HK_STATUS_INIT;
  char *path = path_join(dir, "model.ckpt");
  double t0;
  hk_code rc;
  if (path == NULL) return os_fail("allocating", "a path");
  atomic_store(&b->counts.syncs, 0);
  atomic_store(&b->counts.dir_syncs, 0);
  t0 = now_secs();
  rc = hk_saver_save(NULL, saver, b->rs, path, b->next_step++, HK_SAVE_DEFAULT, &st);
  *secs = now_secs() - t0;
  *fsyncs = atomic_load(&b->counts.syncs) + atomic_load(&b->counts.dir_syncs);
  free(path);
  return rc != HK_OK ? hk_fail("hk_saver_save (keep 5)", &st) : 0;
}

int run_retention(bench *b, size_t rounds, retention_result *r) {
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_saver *saver = NULL;
  char *dir = path_join(b->dir, "keep5");
  const char *prefix;
  int rc = 1;

  memset(r, 0, sizeof *r);
  r->keep = calloc(rounds, sizeof(double));
  r->plain = calloc(rounds, sizeof(double));
  r->n = rounds;
  r->keep_min = r->plain_min = (unsigned long)-1;
  if (!dir || !r->keep || !r->plain) {
    fprintf(stderr, PROG ": out of memory\n");
    goto out;
  }
  if (mkdir(dir, 0755) != 0) {
    os_fail("creating", dir);
    goto out;
  }
  so.executor = hk_graph_executor(b->g);
  so.max_to_keep = KEEP;
  if (hk_saver_new(&saver, &so, &st) != HK_OK) {
    hk_fail("creating the keep-5 saver", &st);
    goto out;
  }
  /* Steady state: KEEP saves fill the window; from the next one on, every
   * save deletes the oldest. */
  for (int i = 0; i < KEEP + 1; i++) {
    double t;
    unsigned long f;
    if (keep_save(b, saver, dir, &t, &f) != 0) goto out;
  }
  for (size_t i = 0; i < rounds; i++) {
    for (int k = 0; k < 2; k++) {
      unsigned long f;
      if ((k + (int)i) % 2 == 0) {
        if (keep_save(b, saver, dir, &r->keep[i], &f) != 0) goto out;
        if (f < r->keep_min) r->keep_min = f;
        if (f > r->keep_max) r->keep_max = f;
      } else {
        if (sync_save(b, &prefix, &r->plain[i]) != 0) goto out;
        f = b->save_syncs + b->save_dir_syncs;
        if (f < r->plain_min) r->plain_min = f;
        if (f > r->plain_max) r->plain_max = f;
      }
    }
  }
  {
    char note[96];
    snprintf(note, sizeof note, "deletes nothing (reference); %lu-%lu fsyncs", r->plain_min, r->plain_max);
    print_row("(2) hooked sync save, keep all", r->plain, rounds, b->bytes, note);
    snprintf(note, sizeof note, "deletes the oldest each save; %lu-%lu fsyncs", r->keep_min, r->keep_max);
    print_row("(2k) hooked sync save, max_to_keep 5", r->keep, rounds, b->bytes, note);
    print_ratio("(2k) speed vs (2)", r->plain, r->keep, rounds, 0);
  }
  rc = 0;
out:
  hk_saver_free(saver);
  if (dir != NULL) remove_tree(dir);
  free(dir);
  return rc;
}

/* ---- small models ---------------------------------------------------------------- */

/* Four tensors each: an 11 KiB and a 64 KiB model. */
static const size_t small_sizes[NSMALL_MODELS][4] = {{8192, 2048, 512, 512}, {32768, 16384, 8192, 8192}};

int run_small(bench *b, size_t rounds, small_result res[NSMALL_MODELS]) {
  for (int s = 0; s < NSMALL_MODELS; s++) {
    small_result *r = &res[s];
    model m;
    char name[32], label[64], note[128];
    size_t n = rounds * SMALL_PER_ROUND;
    double t;
    unsigned long syncs = 0, dir_syncs = 0;
    snprintf(name, sizeof name, "small%d", s);
    memset(r, 0, sizeof *r);
    r->posix = calloc(n, sizeof(double));
    r->hooked = calloc(n, sizeof(double));
    r->n = n;
    if (!r->posix || !r->hooked) {
      fprintf(stderr, PROG ": out of memory\n");
      return 1;
    }
    if (model_open(b, &m, name, small_sizes[s], 4) != 0) {
      model_close(&m);
      return 1;
    }
    r->bytes = m.bytes;
    r->ntensors = m.ntensors;
    /* One warm-up of each, then alternating. */
    if (model_save(b, &m, &t, &syncs, &dir_syncs) != 0 || model_raw_write(b, &m, UNPACED, &t) != 0) {
      model_close(&m);
      return 1;
    }
    for (size_t i = 0; i < n; i++) {
      for (int k = 0; k < 2; k++) {
        int fail = (k + (int)i) % 2 == 0 ? model_raw_write(b, &m, UNPACED, &r->posix[i])
                                         : model_save(b, &m, &r->hooked[i], &syncs, &dir_syncs);
        if (fail) {
          model_close(&m);
          return 1;
        }
      }
    }
    r->hooked_fsyncs = syncs + dir_syncs;
    r->posix_fsyncs = 2; /* the file, then its directory */
    model_close(&m);
    snprintf(label, sizeof label, "(1s) POSIX, a %zu KiB model", r->bytes / 1024);
    snprintf(note, sizeof note, "one write, fsync, rename, fsync dir: %lu fsyncs", r->posix_fsyncs);
    print_row(label, r->posix, n, r->bytes, note);
    snprintf(label, sizeof label, "(2s) hooked sync save, a %zu KiB model", r->bytes / 1024);
    snprintf(note, sizeof note, "%zu tensors + global step: %lu fsyncs", r->ntensors, r->hooked_fsyncs);
    print_row(label, r->hooked, n, r->bytes, note);
    {
      spread sp;
      double per = (double)r->hooked_fsyncs / (double)r->posix_fsyncs;
      snprintf(label, sizeof label, "(2s) speed vs (1s), %zu KiB", r->bytes / 1024);
      sp = print_ratio(label, r->posix, r->hooked, n, 0);
      printf("    %-42s min %5.2f  median %5.2f  max %5.2f  (x %lu/%lu fsyncs)\n", "per fsync", sp.min * per,
             sp.med * per, sp.max * per, r->hooked_fsyncs, r->posix_fsyncs);
    }
  }
  return 0;
}

/* ---- scaling --------------------------------------------------------------------- */

static int scale_size(bench *b, size_t bytes, size_t rounds) {
  model m;
  double *t[4]; /* paced write, save, read, restore */
  char name[32], label[64];
  int rc = 1;
  size_t file_bytes;
  for (int i = 0; i < 4; i++) t[i] = calloc(rounds, sizeof(double));
  snprintf(name, sizeof name, "size%zu", bytes);
  memset(&m, 0, sizeof m);
  if (!t[0] || !t[1] || !t[2] || !t[3]) {
    fprintf(stderr, PROG ": out of memory\n");
    goto out;
  }
  if (model_open_mix(b, &m, name, bytes) != 0 || ensure_copy(b, bytes + ((size_t)64 << 20)) != 0) goto out;
  {
    double w;
    if (model_raw_write(b, &m, PACED, &w) != 0 || model_save(b, &m, &w, NULL, NULL) != 0 ||
        raw_read(b, m.data_path, &w, &file_bytes) != 0 || model_restore(b, &m, &w) != 0)
      goto out;
  }
  for (size_t r = 0; r < rounds; r++) {
    for (int k = 0; k < 2; k++)
      if ((k + (int)r) % 2 == 0 ? model_raw_write(b, &m, PACED, &t[0][r]) != 0
                                : model_save(b, &m, &t[1][r], NULL, NULL) != 0)
        goto out;
    for (int k = 0; k < 2; k++)
      if ((k + (int)r) % 2 == 0 ? raw_read(b, m.data_path, &t[2][r], &file_bytes) != 0
                                : model_restore(b, &m, &t[3][r]) != 0)
        goto out;
  }
  size_name(bytes, name, sizeof name);
  snprintf(label, sizeof label, "  %s: save (%zu rounds)", name, rounds);
  print_row(label, t[1], rounds, bytes, "");
  print_ratio("speed vs the paced raw write", t[0], t[1], rounds, 0);
  snprintf(label, sizeof label, "  %s: restore, warm", name);
  print_row(label, t[3], rounds, bytes, "");
  print_ratio("speed vs read(), warm", t[2], t[3], rounds, 0);
  rc = 0;
out:
  model_close(&m);
  for (int i = 0; i < 4; i++) free(t[i]);
  return rc;
}

static int scale_count(bench *b, size_t n, size_t rounds) {
  model m;
  double *save = calloc(rounds, sizeof(double)), *rest = calloc(rounds, sizeof(double));
  char name[32];
  int rc = 1;
  snprintf(name, sizeof name, "count%zu", n);
  memset(&m, 0, sizeof m);
  if (!save || !rest) {
    fprintf(stderr, PROG ": out of memory\n");
    goto out;
  }
  if (model_open_uniform(b, &m, name, n, TENSOR_BYTES) != 0) goto out;
  {
    double w;
    if (model_save(b, &m, &w, NULL, NULL) != 0 || model_restore(b, &m, &w) != 0) goto out;
  }
  for (size_t r = 0; r < rounds; r++)
    if (model_save(b, &m, &save[r], NULL, NULL) != 0 || model_restore(b, &m, &rest[r]) != 0) goto out;
  {
    spread s = spread_of(save, rounds), t = spread_of(rest, rounds);
    double k = 1e6 / (double)n;
    printf(
        "  %7zu tensors of %d B (%zu rounds): us per tensor, save %.2f / %.2f / %.2f, restore %.2f / %.2f / %.2f\n"
        "  %7s (a whole save %.2f ms, a whole restore %.2f ms at the median)\n",
        n, TENSOR_BYTES, rounds, s.min * k, s.med * k, s.max * k, t.min * k, t.med * k, t.max * k, "", s.med * 1e3,
        t.med * 1e3);
  }
  rc = 0;
out:
  model_close(&m);
  free(save), free(rest);
  return rc;
}

int run_scaling(bench *b, int quick, size_t rounds, const double *main_save, const double *main_paced,
                const double *main_restore, const double *main_read) {
  static const size_t sizes[] = {(size_t)1 << 20, (size_t)64 << 20, (size_t)256 << 20, (size_t)1 << 30};
  static const size_t quick_sizes[] = {(size_t)256 << 10, (size_t)1 << 20};
  static const size_t counts[] = {10, 1000, 100000}, quick_counts[] = {10, 100, 1000};
  const size_t *sz = quick ? quick_sizes : sizes, *ct = quick ? quick_counts : counts;
  size_t nsz = quick ? 2 : 4;
  printf(
      "\nscaling: save and restore by total bytes (the same 580-tensor mix; min / median / max seconds, per-round\n"
      "speed ratios); save vs the paced raw write of the same bytes, restore vs read() of the same file, warm\n");
  for (size_t i = 0; i < nsz; i++) {
    size_t r = sz[i] >= ((size_t)1 << 30) && rounds > BIG_ROUNDS ? BIG_ROUNDS : rounds;
    if (sz[i] == b->bytes) {
      char label[64], name[32];
      size_name(b->bytes, name, sizeof name);
      snprintf(label, sizeof label, "  %s: save (the rows above)", name);
      print_row(label, main_save, rounds, b->bytes, "");
      print_ratio("speed vs the paced raw write", main_paced, main_save, rounds, 0);
      snprintf(label, sizeof label, "  %s: restore, warm", name);
      print_row(label, main_restore, rounds, b->bytes, "");
      print_ratio("speed vs read(), warm", main_read, main_restore, rounds, 0);
      continue;
    }
    if (scale_size(b, sz[i], r) != 0) return 1;
    fflush(stdout);
  }
  printf("scaling by tensor count (min / median / max):\n");
  for (size_t i = 0; i < 3; i++) {
    size_t r = ct[i] >= 100000 && rounds > BIG_ROUNDS ? BIG_ROUNDS : rounds;
    if (scale_count(b, ct[i], r) != 0) return 1;
    fflush(stdout);
  }
  return 0;
}
