/*
 * mem_fs — see mem_fs.h.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "mem_fs.h"

#include <string.h>

static hk_code mem_open_read(void *user, const char *path, hk_fs_file **out, hk_status *st) {
  const mem_fs *m = user;
  if (strcmp(path, m->path) != 0) return hk_status_set(st, HK_NOT_FOUND, "open %s: no such file", path);
  /* the one file needs no handle of its own: reads go to the mem_fs */
  *out = (hk_fs_file *)user;
  return HK_OK;
}

static hk_code mem_read_at(void *user, hk_fs_file *f, void *buf, size_t len, uint64_t offset, size_t *nread,
                           hk_status *st) {
  const mem_fs *m = (const mem_fs *)f;
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
  *size = ((const mem_fs *)f)->size;
  return HK_OK;
}

static hk_code mem_close(void *user, hk_fs_file *f, hk_status *st) {
  (void)user;
  (void)f;
  (void)st;
  return HK_OK;
}

static hk_code mem_stat(void *user, const char *path, hk_fs_stat *out, hk_status *st) {
  const mem_fs *m = user;
  if (strcmp(path, m->path) != 0) return hk_status_set(st, HK_NOT_FOUND, "stat %s: no such file", path);
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

static const hk_fs_vtable mem_vtable = {
    .version = HK_FS_VTABLE_VERSION,
    .open_read = mem_open_read,
    .create_excl = deny_create,
    .read_at = mem_read_at,
    .write = deny_write,
    .size = mem_size,
    .sync = deny_sync,
    .close = mem_close,
    .sync_dir = deny_path,
    .rename = deny_rename,
    .unlink = deny_path,
    .stat = mem_stat,
    .list = deny_list,
    .mkdir = deny_path,
};

const hk_fs_vtable *mem_fs_vtable(void) { return &mem_vtable; }
