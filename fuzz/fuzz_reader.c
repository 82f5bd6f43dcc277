/*
 * libFuzzer target for the checkpoint reader (checkpoint-format.md
 * "Reading"): the input is served as "ckpt/model.safetensors" by an
 * in-memory, read-only hk_fs, opened with hk_checkpoint_reader_open(),
 * every entry is looked up and read, and the file is verified. Besides
 * memory errors (ASan/UBSan), it aborts when an accepted file breaks what
 * the format promises (entries in strict name order, found by name, tiling
 * the data exactly, byte sizes matching shapes) or when a refusal is not
 * DATA_LOSS / FAILED_PRECONDITION naming the file.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include <hooked/hooked.h>
#include <hooked/sys/fs.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_PATH "ckpt/model.safetensors"
/* Reads of tensors larger than this are skipped (verify still covers them). */
#define FUZZ_READ_MAX ((size_t)1 << 20)

typedef struct mem_file {
  const uint8_t *data;
  size_t size;
} mem_file;

static hk_code mem_open_read(void *user, const char *path, hk_fs_file **out, hk_status *st) {
  if (strcmp(path, FUZZ_PATH) != 0) return hk_status_set(st, HK_NOT_FOUND, "open %s: no such file", path);
  *out = (hk_fs_file *)user;
  return HK_OK;
}

static hk_code mem_read_at(void *user, hk_fs_file *f, void *buf, size_t len, uint64_t offset, size_t *nread,
                           hk_status *st) {
  const mem_file *m = (const mem_file *)f;
  (void)user;
  (void)st;
  *nread = 0;
  if (offset >= m->size) return HK_OK;
  if (len > m->size - offset) len = (size_t)(m->size - offset);
  memcpy(buf, m->data + offset, len);
  *nread = len;
  return HK_OK;
}

static hk_code mem_size(void *user, hk_fs_file *f, uint64_t *size, hk_status *st) {
  (void)user;
  (void)st;
  *size = ((const mem_file *)f)->size;
  return HK_OK;
}

static hk_code mem_close(void *user, hk_fs_file *f, hk_status *st) {
  (void)user;
  (void)f;
  (void)st;
  return HK_OK;
}

static hk_code mem_stat(void *user, const char *path, hk_fs_stat *out, hk_status *st) {
  const mem_file *m = user;
  if (strcmp(path, FUZZ_PATH) != 0) return hk_status_set(st, HK_NOT_FOUND, "stat %s: no such file", path);
  memset(out, 0, sizeof *out);
  out->size = m->size;
  return HK_OK;
}

static hk_code deny_path(void *user, const char *path, hk_status *st) {
  (void)user;
  return hk_status_set(st, HK_PERMISSION_DENIED, "%s: read-only file system", path);
}

static hk_code deny_create(void *user, const char *path, hk_fs_file **out, hk_status *st) {
  (void)out;
  return deny_path(user, path, st);
}

static hk_code deny_write(void *user, hk_fs_file *f, const void *buf, size_t len, size_t *nwritten, hk_status *st) {
  (void)user;
  (void)f;
  (void)buf;
  (void)len;
  *nwritten = 0;
  return hk_status_set(st, HK_PERMISSION_DENIED, "write: read-only file system");
}

static hk_code deny_sync(void *user, hk_fs_file *f, hk_status *st) {
  (void)user;
  (void)f;
  return hk_status_set(st, HK_PERMISSION_DENIED, "fsync: read-only file system");
}

static hk_code deny_rename(void *user, const char *from, const char *to, hk_status *st) {
  (void)to;
  return deny_path(user, from, st);
}

static hk_code deny_list(void *user, const char *path, hk_fs_list_fn fn, void *fn_user, hk_status *st) {
  (void)fn;
  (void)fn_user;
  return deny_path(user, path, st);
}

static const hk_fs_vtable mem_fs = {
    HK_FS_VTABLE_VERSION,
    mem_open_read,
    deny_create,
    mem_read_at,
    deny_write,
    mem_size,
    deny_sync,
    mem_close,
    deny_path,
    deny_rename,
    deny_path,
    mem_stat,
    deny_list,
    deny_path,
    NULL, /* map: not supported, so the read path is what gets fuzzed */
    NULL,
};

static void quiet(void *user, hk_log_level level, const char *msg) {
  (void)user;
  (void)level;
  (void)msg;
}

static void check(int ok) {
  if (!ok) abort();
}

static int is_refusal(hk_code rc, const hk_status *st) {
  return (rc == HK_DATA_LOSS || rc == HK_FAILED_PRECONDITION) && st->code == rc && strstr(st->message, FUZZ_PATH);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mem_file m = {data, size};
  hk_env env = HK_ENV_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_checkpoint_reader *r = NULL;
  hk_code rc;

  env.log = quiet;
  env.fs = &mem_fs;
  env.fs_user = &m;
  rc = hk_checkpoint_reader_open(&r, &env, FUZZ_PATH, &st);
  if (rc != HK_OK) {
    check(r == NULL);
    check(is_refusal(rc, &st));
    return 0;
  }
  check(strcmp(hk_checkpoint_reader_path(r), FUZZ_PATH) == 0);

  size_t n = hk_checkpoint_reader_count(r);
  uint64_t total = 0, data_start = UINT64_MAX;
  const char *prev = NULL;
  unsigned char *buf = NULL;
  for (size_t i = 0; i < n; i++) {
    hk_checkpoint_entry e;
    size_t found = SIZE_MAX;
    check(hk_checkpoint_reader_entry(r, i, &e, &st) == HK_OK);
    check(e.name != NULL && e.name[0] != '\0');
    check(prev == NULL || strcmp(prev, e.name) < 0);
    prev = e.name;
    check(hk_checkpoint_reader_find(r, e.name, &found, &st) == HK_OK && found == i);
    check(e.rank >= 0 && e.rank <= HK_MAX_RANK);
    uint64_t expect = hk_dtype_size(e.dtype);
    check(expect > 0 && e.dtype != HK_DTYPE_STRING);
    for (int32_t d = 0; d < e.rank; d++) {
      check(e.dims[d] >= 0);
      expect *= (uint64_t)e.dims[d]; /* cannot wrap: the reader checked the product */
    }
    check(expect == e.nbytes);
    check(e.offset <= size && e.nbytes <= size - e.offset);
    if (e.offset < data_start) data_start = e.offset;
    total += e.nbytes;
    if (e.nbytes <= FUZZ_READ_MAX) {
      unsigned char *grown = realloc(buf, e.nbytes ? (size_t)e.nbytes : 1);
      check(grown != NULL);
      buf = grown;
      rc = hk_checkpoint_reader_read(r, i, buf, (size_t)e.nbytes, &st);
      check(rc == HK_OK || is_refusal(rc, &st));
      if (rc == HK_OK) check(memcmp(buf, data + e.offset, (size_t)e.nbytes) == 0);
    }
  }
  /* the tensors tile everything after the header */
  if (n > 0) check(data_start + total == size);
  hk_checkpoint_entry none;
  check(hk_checkpoint_reader_entry(r, n, &none, &st) == HK_OUT_OF_RANGE);
  rc = hk_checkpoint_reader_verify(r, &st);
  check(rc == HK_OK || is_refusal(rc, &st));
  free(buf);
  hk_checkpoint_reader_free(r);
  return 0;
}
