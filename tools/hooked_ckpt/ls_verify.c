/*
 * hooked-ckpt ls, verify and latest: a checkpoint's or a directory's
 * tensors, their CRCs and finiteness, and the newest checkpoint that
 * verifies.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "tool.h"

#include <time.h>

/* ---- ls ------------------------------------------------------------------- */

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
    if (hk_checkpoint_reader_entry(&e, r, i, &st) != HK_OK) {
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
    hk_checkpoint_reader_entry(&e, r, i, NULL);
    format_shape(&e, shape, sizeof shape);
    printf("  %-*s  %-5s  %-*s  %" PRIu64 "\n", (int)wname, e.name, dtype_st_name(e.dtype), (int)wshape, shape,
           e.nbytes);
  }
  if (is_index_path(hk_checkpoint_reader_path(r))) {
    /* A sharded checkpoint: its variables whole, above; then each shard. */
    const char *index = hk_checkpoint_reader_path(r);
    int nshards = index_num_shards(index), rc = 0;
    size_t stem = strlen(index) - strlen(INDEX_SUFFIX);
    for (int k = 0; k < nshards; k++) {
      char *shard = malloc(stem + 48), note_k[48];
      if (shard == NULL) {
        hk_checkpoint_reader_free(r);
        return out_of_memory();
      }
      snprintf(shard, stem + 48, "%.*s.shard-%05d-of-%05d" DATA_SUFFIX, (int)stem, index, k, nshards);
      snprintf(note_k, sizeof note_k, " (shard %d of %d)", k, nshards);
      if (ls_checkpoint(env, shard, note_k) != 0) rc = 1;
      free(shard);
    }
    hk_checkpoint_reader_free(r);
    return rc;
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

int cmd_ls(const hk_env *env, const char *path) {
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
 * Saver names it (negative steps included: "model.ckpt--5"); 0 when
 * the name says none (a checkpoint saved without a step). */
static int name_says_step(const char *data_path, int64_t *step) {
  const char *slash = strrchr(data_path, '/'), *name = slash ? slash + 1 : data_path;
  int64_t s = scan_name_step(name);
  size_t dash;
  if (s < 0) return 0;
  dash = strlen(name) - (is_index_path(name) ? strlen(INDEX_SUFFIX) : strlen(DATA_SUFFIX));
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
    if (hk_checkpoint_reader_entry(&e, r, i, &st) != HK_OK) break;
    if (!hk_dtype_is_float(e.dtype) || e.nbytes == 0) continue;
    if (is_index_path(path)) {
      /* A sharded checkpoint's variable: assembled from its slices. */
      unsigned char *whole = malloc((size_t)e.nbytes);
      if (whole == NULL) {
        hk_status_set(&st, HK_RESOURCE_EXHAUSTED, "out of memory");
        break;
      }
      if (hk_checkpoint_reader_read(r, i, whole, (size_t)e.nbytes, &st) == HK_OK)
        count_nonfinite(e.dtype, whole, (size_t)e.nbytes / hk_dtype_size(e.dtype), &c);
      free(whole);
      if (st.code != HK_OK) break;
    } else {
      if (f == NULL && fs->open_read(NULL, path, &f, &st) != HK_OK) break;
      if (buf == NULL && (buf = malloc(SCAN_CHUNK)) == NULL) {
        hk_status_set(&st, HK_RESOURCE_EXHAUSTED, "out of memory");
        break;
      }
      if (scan_tensor(fs, f, &e, buf, &c, &st) != HK_OK) break;
    }
    bad = c.nan + c.pos_inf + c.neg_inf;
    if (bad == 0) continue;
    elems = e.nbytes / hk_dtype_size(e.dtype);
    printf("%s %s: tensor '%s' holds %" PRIu64 " non-finite value%s of %" PRIu64 " (%" PRIu64 " NaN, %" PRIu64
           " +Inf, %" PRIu64 " -Inf)\n",
           finite ? "FAILED " : "WARNING", path, e.name, bad, bad == 1 ? "" : "s", elems, c.nan, c.pos_inf, c.neg_inf);
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
    if (hk_checkpoint_reader_entry(&e, r, i, NULL) == HK_OK) total += e.nbytes;
  printf("OK      %s (global step %" PRId64 ", %zu tensor%s, %" PRIu64 " bytes)\n", hk_checkpoint_reader_path(r),
         hk_checkpoint_reader_step(r), n, n == 1 ? "" : "s", total);
  hk_checkpoint_reader_free(r);
  return 0;
}

int cmd_verify(const hk_env *env, const char *path, int finite) {
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
    if (warned_files > 0) printf(" (%zu with non-finite values; --finite fails them)", warned_files);
    printf("\n");
    if (failed != 0) fprintf(stderr, TOOL ": %s: %zu of %zu checkpoints FAILED verification\n", path, failed, d.n);
  }
  free_listing(&d);
  return d.n == 0 || failed != 0 || d.state_problem ? 1 : 0;
}

/* ---- latest --------------------------------------------------------------- */

int cmd_latest(const hk_env *env, const char *dir) {
  hk_status st = HK_STATUS_INIT;
  char *path = NULL;
  if (hk_checkpoint_latest(&path, env, dir, NULL, &st) != HK_OK) return problem(dir, &st);
  printf("%s\n", path);
  hk_env_free(env, path);
  return 0;
}
