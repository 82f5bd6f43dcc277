/*
 * Files written atomically: a temporary file with a random name beside the
 * final one, written, fsynced, closed and renamed over it, then the
 * directory fsynced; any failure removes the temporary file. Also how those
 * temporary files are named, for the cleanup that recognizes them.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "util/common.h"
#include "util/fs.h"
#include "util/path.h"

#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- atomic files ----------------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

#define TMP_SUFFIX ".tmp-"
#define TMP_RANDOM_CHARS 6
#define TMP_MAX_ATTEMPTS 100

static const char tmp_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

static void free_af_strings(hk__atomic_file *af) {
  const hk_env *env = af->fs.env;
  hk_env_free(env, af->final_path);
  hk_env_free(env, af->tmp_path);
  hk_env_free(env, af->dir);
  af->final_path = af->tmp_path = af->dir = NULL;
}

hk_code hk__atomic_begin(hk__atomic_file *af, const hk_env *env, const char *final_path, hk_status *st) {
  struct timespec ts;
  uint64_t seed;
  size_t n;
  hk_code rc = HK_OK;

  memset(af, 0, sizeof *af);
  hk__fs_init(&af->fs, env);
  af->error = HK_OK;
  n = strlen(final_path);
  af->final_path = hk_env_strdup(af->fs.env, final_path);
  af->dir = hk__path_dirname(af->fs.env, final_path);
  af->tmp_path = hk_env_alloc(af->fs.env, n + sizeof TMP_SUFFIX + TMP_RANDOM_CHARS);
  if (!af->final_path || !af->dir || !af->tmp_path) {
    free_af_strings(af);
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory writing %s", final_path);
  }
  /* Per call, no shared state: two writers in one process (or two
   * processes) draw different names, and a collision is simply retried. */
  clock_gettime(CLOCK_MONOTONIC, &ts);
  seed = ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^ (uint64_t)(uintptr_t)af ^ ((uint64_t)getpid() << 48);
  memcpy(af->tmp_path, final_path, n);
  memcpy(af->tmp_path + n, TMP_SUFFIX, sizeof TMP_SUFFIX - 1);
  for (int attempt = 0; attempt < TMP_MAX_ATTEMPTS; attempt++) {
    char *r = af->tmp_path + n + sizeof TMP_SUFFIX - 1;
    uint64_t bits = splitmix64(&seed) ^ (uint64_t)attempt;
    for (int i = 0; i < TMP_RANDOM_CHARS; i++) {
      r[i] = tmp_alphabet[bits % (sizeof tmp_alphabet - 1)];
      bits /= sizeof tmp_alphabet - 1;
    }
    r[TMP_RANDOM_CHARS] = '\0';
    rc = hk__fs_create_excl(&af->fs, af->tmp_path, &af->f, st);
    if (rc != HK_ALREADY_EXISTS) break;
  }
  if (rc != HK_OK) {
    af->f = NULL;
    free_af_strings(af);
    return rc;
  }
  return HK_OK;
}

static hk_code af_fail(hk__atomic_file *af, hk_code rc, const hk_status *why, hk_status *st) {
  if (af->error == HK_OK) {
    af->error = rc;
    hk__status_copy(&af->error_status, why);
  }
  hk__status_copy(st, &af->error_status);
  return af->error;
}

/* A write may go on: no earlier failure (it is returned again) and not
 * closed yet. */
static hk_code af_writable(hk__atomic_file *af, hk_status *st) {
  if (af->error != HK_OK) {
    hk__status_copy(st, &af->error_status);
    return af->error;
  }
  if (!af->f) {
    hk_status why;
    hk_status_set(&why, HK_FAILED_PRECONDITION, "write to %s after it was closed",
                  af->final_path ? af->final_path : "a file");
    return af_fail(af, HK_FAILED_PRECONDITION, &why, st);
  }
  return HK_OK;
}

hk_code hk__atomic_write(hk__atomic_file *af, const void *buf, size_t n, hk_status *st) {
  const char *p = buf;
  hk_code rc0 = af_writable(af, st);
  if (rc0 != HK_OK) return rc0;
  while (n > 0) {
    hk_status why = HK_STATUS_INIT;
    size_t w = 0;
    hk_code rc = hk__fs_write(&af->fs, af->f, af->tmp_path, p, n, &w, &why);
    if (rc != HK_OK) return af_fail(af, rc, &why, st);
    if (w == 0) {
      hk_status_set(&why, HK_UNKNOWN, "write %s: no progress (0 bytes written)", af->tmp_path);
      return af_fail(af, HK_UNKNOWN, &why, st);
    }
    p += w;
    n -= w;
    af->written += w;
  }
  return HK_OK;
}

void hk__atomic_abort(hk__atomic_file *af) {
  if (!af) return;
  if (af->f) {
    hk__fs_close(&af->fs, af->f, af->tmp_path, NULL);
    af->f = NULL;
  }
  if (af->tmp_path) hk__fs_unlink(&af->fs, af->tmp_path, NULL);
  free_af_strings(af);
}

hk_code hk__atomic_write_at(hk__atomic_file *af, const void *buf, size_t n, uint64_t offset, hk_status *st) {
  const char *p = buf;
  hk_code rc0 = af_writable(af, st);
  if (rc0 != HK_OK) return rc0;
  while (n > 0) {
    hk_status why = HK_STATUS_INIT;
    size_t w = 0;
    hk_code rc;
    if (offset > UINT64_MAX - n) {
      hk_status_set(&why, HK_INVALID_ARGUMENT, "write %s: offset %llu + %zu bytes overflows", af->tmp_path,
                    (unsigned long long)offset, n);
      return af_fail(af, HK_INVALID_ARGUMENT, &why, st);
    }
    rc = hk__fs_write_at(&af->fs, af->f, af->tmp_path, p, n, offset, &w, &why);
    if (rc != HK_OK) return af_fail(af, rc, &why, st);
    if (w == 0) {
      hk_status_set(&why, HK_UNKNOWN, "write %s: no progress (0 bytes written)", af->tmp_path);
      return af_fail(af, HK_UNKNOWN, &why, st);
    }
    p += w;
    n -= w;
    offset += w;
    af->written += w;
  }
  return HK_OK;
}

hk_code hk__atomic_write_at_v(hk__atomic_file *af, hk_fs_piece *pieces, size_t n, uint64_t offset, hk_status *st) {
  hk_code rc0 = af_writable(af, st);
  if (rc0 != HK_OK) return rc0;
  while (n > 0 && pieces[0].len == 0) pieces++, n--;
  while (n > 0) {
    hk_status why = HK_STATUS_INIT;
    size_t w = 0, total = 0;
    hk_code rc;
    for (size_t i = 0; i < n; i++) total += pieces[i].len;
    if (offset > UINT64_MAX - total) {
      hk_status_set(&why, HK_INVALID_ARGUMENT, "write %s: offset %llu + %zu bytes overflows", af->tmp_path,
                    (unsigned long long)offset, total);
      return af_fail(af, HK_INVALID_ARGUMENT, &why, st);
    }
    rc = hk__fs_write_at_v(&af->fs, af->f, af->tmp_path, pieces, n, offset, &w, &why);
    if (rc != HK_OK) return af_fail(af, rc, &why, st);
    if (w == 0) {
      hk_status_set(&why, HK_UNKNOWN, "write %s: no progress (0 bytes written)", af->tmp_path);
      return af_fail(af, HK_UNKNOWN, &why, st);
    }
    offset += w;
    af->written += w;
    /* Past the pieces written whole, into the one written in part. */
    while (n > 0 && w >= pieces[0].len) {
      w -= pieces[0].len;
      pieces++;
      n--;
    }
    if (n > 0) {
      pieces[0].data = (const char *)pieces[0].data + w;
      pieces[0].len -= w;
    }
  }
  return HK_OK;
}

hk_code hk__atomic_commit(hk__atomic_file *af, hk_status *st) {
  hk_status why = HK_STATUS_INIT;
  hk_code rc;
  hk_fs_file *f;

  if (!af->tmp_path) return hk_status_set(st, HK_FAILED_PRECONDITION, "commit of an atomic file that is not open");
  if (af->error != HK_OK) {
    hk__status_copy(st, &af->error_status);
    rc = af->error;
    hk__atomic_abort(af);
    return rc;
  }
  rc = hk__fs_sync(&af->fs, af->f, af->tmp_path, &why);
  f = af->f;
  af->f = NULL;
  if (rc != HK_OK) {
    hk__fs_close(&af->fs, f, af->tmp_path, NULL);
  } else {
    rc = hk__fs_close(&af->fs, f, af->tmp_path, &why);
  }
  if (rc == HK_OK) rc = hk__fs_rename(&af->fs, af->tmp_path, af->final_path, &why);
  if (rc != HK_OK) {
    af_fail(af, rc, &why, st);
    hk__atomic_abort(af);
    return rc;
  }
  /* The file is in place under its final name; only its directory entry may
   * not be durable yet. The temporary name no longer exists, so there is
   * nothing to remove; the caller decides about the final file. A
   * caller whose next step fsyncs this directory anyway may leave that
   * fsync to it (defer_dir_sync). */
  if (af->defer_dir_sync) {
    free_af_strings(af);
    return HK_OK;
  }
  rc = hk__fs_sync_dir(&af->fs, af->dir, &why);
  if (rc != HK_OK) {
    hk_status named;
    hk_status_set(&named, rc, "writing %s: %s", af->final_path, why.message);
    af_fail(af, rc, &named, st);
  }
  free_af_strings(af);
  return rc;
}

hk_code hk__write_file_atomic(const hk_env *env, const char *path, const void *data, size_t n, hk_status *st) {
  hk__atomic_file af;
  hk_code rc = hk__atomic_begin(&af, env, path, st);
  if (rc != HK_OK) return rc;
  rc = hk__atomic_write(&af, data, n, st);
  if (rc != HK_OK) {
    hk__atomic_abort(&af);
    return rc;
  }
  return hk__atomic_commit(&af, st);
}

int hk__atomic_tmp_name(const char *name, size_t *final_len) {
  size_t n = strlen(name);
  size_t k = sizeof TMP_SUFFIX - 1 + TMP_RANDOM_CHARS;
  if (n <= k) return 0;
  if (memcmp(name + n - k, TMP_SUFFIX, sizeof TMP_SUFFIX - 1) != 0) return 0;
  for (size_t i = n - TMP_RANDOM_CHARS; i < n; i++) {
    char c = name[i];
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return 0;
  }
  *final_len = n - k;
  return 1;
}
