/*
 * libFuzzer target for the checkpoint state-file parser (H33, C123): the
 * input is served as "<dir>/checkpoint" by an in-memory, read-only hk_fs and
 * read with hk_get_checkpoint_state(). Besides memory errors (ASan/UBSan),
 * it aborts when a parsed state breaks what the contract promises: every
 * path is "<dir>/<valid name>" (H32: nothing outside the directory), the
 * model path is the newest entry (C117), no name twice, timestamps finite
 * and non-negative, and a refusal is DATA_LOSS naming the file.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include <hooked/hooked.h>
#include <hooked/sys/fs.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_DIR "ckpt"
#define FUZZ_STATE_PATH FUZZ_DIR "/checkpoint"

typedef struct mem_file {
  const uint8_t *data;
  size_t size;
} mem_file;

static hk_code mem_open_read(void *user, const char *path, hk_fs_file **out, hk_status *st) {
  if (strcmp(path, FUZZ_STATE_PATH) != 0) return hk_status_set(st, HK_NOT_FOUND, "open %s: no such file", path);
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
  if (strcmp(path, FUZZ_STATE_PATH) != 0) return hk_status_set(st, HK_NOT_FOUND, "stat %s: no such file", path);
  out->is_dir = 0;
  out->size = m->size;
  out->mtime = 0;
  return HK_OK;
}

/* The parser must never write, list or remove anything. */
static hk_code denied(hk_status *st, const char *op) {
  return hk_status_set(st, HK_PERMISSION_DENIED, "%s: the fuzzing file system is read-only", op);
}
static hk_code mem_create_excl(void *u, const char *p, hk_fs_file **o, hk_status *st) {
  (void)u, (void)p, (void)o;
  return denied(st, "create_excl");
}
static hk_code mem_write(void *u, hk_fs_file *f, const void *b, size_t l, size_t *n, hk_status *st) {
  (void)u, (void)f, (void)b, (void)l, (void)n;
  return denied(st, "write");
}
static hk_code mem_sync(void *u, hk_fs_file *f, hk_status *st) {
  (void)u, (void)f;
  return denied(st, "sync");
}
static hk_code mem_sync_dir(void *u, const char *p, hk_status *st) {
  (void)u, (void)p;
  return denied(st, "sync_dir");
}
static hk_code mem_rename(void *u, const char *a, const char *b, hk_status *st) {
  (void)u, (void)a, (void)b;
  return denied(st, "rename");
}
static hk_code mem_unlink(void *u, const char *p, hk_status *st) {
  (void)u, (void)p;
  return denied(st, "unlink");
}
static hk_code mem_list(void *u, const char *p, hk_fs_list_fn fn, void *fu, hk_status *st) {
  (void)u, (void)p, (void)fn, (void)fu;
  return denied(st, "list");
}
static hk_code mem_mkdir(void *u, const char *p, hk_status *st) {
  (void)u, (void)p;
  return denied(st, "mkdir");
}

static const hk_fs_vtable mem_fs = {
    .version = HK_FS_VTABLE_VERSION,
    .open_read = mem_open_read,
    .create_excl = mem_create_excl,
    .read_at = mem_read_at,
    .write = mem_write,
    .size = mem_size,
    .sync = mem_sync,
    .close = mem_close,
    .sync_dir = mem_sync_dir,
    .rename = mem_rename,
    .unlink = mem_unlink,
    .stat = mem_stat,
    .list = mem_list,
    .mkdir = mem_mkdir,
};

static void quiet_log(void *user, hk_log_level level, const char *msg) {
  (void)user;
  (void)level;
  (void)msg;
}

/* H32, restated independently of the library. */
static int valid_name(const char *s) {
  size_t n = strlen(s);
  if (n < 1 || n > 255 || strcmp(s, ".") == 0 || strstr(s, "..")) return 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '/' || c == '\\' || c == '"' || c < 0x20 || c == 0x7f) return 0;
  }
  return 1;
}

static const char *name_in_dir(const char *path) {
  static const char prefix[] = FUZZ_DIR "/";
  if (!path || strncmp(path, prefix, sizeof prefix - 1) != 0) abort();
  if (!valid_name(path + sizeof prefix - 1)) abort();
  return path + sizeof prefix - 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mem_file m = {data, size};
  hk_env env = HK_ENV_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_checkpoint_state *cs = NULL;
  hk_code rc;

  env.log = quiet_log;
  env.fs = &mem_fs;
  env.fs_user = &m;
  rc = hk_get_checkpoint_state(&env, FUZZ_DIR, NULL, &cs, &st);
  if (rc != HK_OK) {
    if (cs) abort();
    if (rc != HK_DATA_LOSS && rc != HK_RESOURCE_EXHAUSTED) abort();
    if (rc == HK_DATA_LOSS && !strstr(st.message, "Invalid checkpoint state loaded from " FUZZ_STATE_PATH ": "))
      abort();
    return 0;
  }

  size_t n = hk_checkpoint_state_count(cs);
  if (n == 0) abort();
  const char *model = name_in_dir(hk_checkpoint_state_model_path(cs));
  if (strcmp(model, name_in_dir(hk_checkpoint_state_path(cs, n - 1))) != 0) abort();
  for (size_t i = 0; i < n; i++) {
    const char *name = name_in_dir(hk_checkpoint_state_path(cs, i));
    double t = hk_checkpoint_state_timestamp(cs, i);
    if (!isnan(t) && !(isfinite(t) && t >= 0)) abort();
    for (size_t j = 0; j < i && n <= 4096; j++)
      if (strcmp(name, name_in_dir(hk_checkpoint_state_path(cs, j))) == 0) abort();
  }
  if (hk_checkpoint_state_path(cs, n) != NULL) abort();
  double lp = hk_checkpoint_state_last_preserved(cs);
  if (!isnan(lp) && !(isfinite(lp) && lp >= 0)) abort();
  hk_checkpoint_state_free(cs);
  return 0;
}
