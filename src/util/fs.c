/*
 * The file system as the layers above use it: an env's hk_fs resolved
 * once, wrappers that make every failure name its path and a code the
 * caller can act on, bounded whole-file reads, mkdir -p, and the public
 * helpers of hooked/sys/fs.h. The POSIX file system itself is in
 * fs_posix.c, atomic files in atomic_file.c, paths in path.c.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "util/fs.h"
#include "util/common.h"
#include "util/path.h"

#include <stdint.h>
#include <string.h>

/* ---- resolved fs and wrappers ------------------------------------------------------ */

void hk__fs_init(hk__fs *fs, const hk_env *env) {
  env = hk__env_or_default(env);
  fs->env = env;
  if (env->fs) {
    fs->vt = env->fs;
    fs->user = env->fs_user;
  } else {
    fs->vt = hk_fs_posix();
    fs->user = NULL;
  }
}

/* A replaceable fs may forget the message, fill it for another code, leave
 * out the path, or return a code that would trigger session recovery (file-system
 * errors are never ABORTED or UNAVAILABLE): make the result what the contract says. */
hk_code hk__fs_result(hk_code rc, hk_status *local, hk_status *st, const char *op, const char *path) {
  if (rc == HK_OK) return HK_OK;
  if (rc == HK_ABORTED || rc == HK_UNAVAILABLE) {
    hk_status fixed;
    hk_status_set(&fixed, HK_UNKNOWN, "%s %s: %s (reported as %s)", op, path,
                  local->code == rc && local->message[0] ? local->message : "failed", hk_code_name(rc));
    hk__status_copy(local, &fixed);
    rc = HK_UNKNOWN;
  } else if (local->code != rc || local->message[0] == '\0') {
    hk_status_set(local, rc, "%s %s: %s", op, path, hk_code_name(rc));
  } else if (!strstr(local->message, path)) {
    hk_status fixed;
    hk_status_set(&fixed, rc, "%s %s: %s", op, path, local->message);
    hk__status_copy(local, &fixed);
  }
  hk__status_copy(st, local);
  return rc;
}

hk_code hk__fs_open_read(const hk__fs *fs, const char *path, hk_fs_file **out, hk_status *st) {
  hk_status local = HK_STATUS_INIT;
  *out = NULL;
  hk_code rc = fs->vt->open_read(fs->user, path, out, &local);
  if (rc != HK_OK) *out = NULL;
  return hk__fs_result(rc, &local, st, "open", path);
}

hk_code hk__fs_create_excl(const hk__fs *fs, const char *path, hk_fs_file **out, hk_status *st) {
  hk_status local = HK_STATUS_INIT;
  *out = NULL;
  hk_code rc = fs->vt->create_excl(fs->user, path, out, &local);
  if (rc != HK_OK) *out = NULL;
  return hk__fs_result(rc, &local, st, "create", path);
}

hk_code hk__fs_read_full(const hk__fs *fs, hk_fs_file *f, const char *path, void *buf, size_t len, uint64_t offset,
                         size_t *nread, hk_status *st) {
  size_t done = 0;
  *nread = 0;
  while (done < len) {
    hk_status local = HK_STATUS_INIT;
    size_t n = 0;
    if (offset > UINT64_MAX - done) break;
    hk_code rc = fs->vt->read_at(fs->user, f, (char *)buf + done, len - done, offset + done, &n, &local);
    if (rc != HK_OK) {
      *nread = done;
      return hk__fs_result(rc, &local, st, "read", path);
    }
    if (n == 0) break;
    if (n > len - done) n = len - done; /* a misbehaving fs must not make us overrun */
    done += n;
  }
  *nread = done;
  return HK_OK;
}

hk_code hk__fs_size(const hk__fs *fs, hk_fs_file *f, const char *path, uint64_t *size, hk_status *st) {
  hk_status local = HK_STATUS_INIT;
  *size = 0;
  return hk__fs_result(fs->vt->size(fs->user, f, size, &local), &local, st, "size of", path);
}

hk_code hk__fs_write(const hk__fs *fs, hk_fs_file *f, const char *path, const void *buf, size_t len, size_t *nwritten,
                     hk_status *st) {
  hk_status local = HK_STATUS_INIT;
  *nwritten = 0;
  hk_code rc = fs->vt->write(fs->user, f, buf, len, nwritten, &local);
  if (rc == HK_OK && *nwritten > len) *nwritten = len;
  return hk__fs_result(rc, &local, st, "write", path);
}

int hk__fs_has_write_at(const hk__fs *fs) { return fs->vt->version >= 2 && fs->vt->write_at != NULL; }

hk_code hk__fs_write_at(const hk__fs *fs, hk_fs_file *f, const char *path, const void *buf, size_t len, uint64_t offset,
                        size_t *nwritten, hk_status *st) {
  hk_status local = HK_STATUS_INIT;
  hk_code rc;
  *nwritten = 0;
  /* A version-1 vtable ends before this slot. */
  if (!hk__fs_has_write_at(fs))
    return hk_status_set(st, HK_UNIMPLEMENTED, "write %s at an offset: not supported", path);
  rc = fs->vt->write_at(fs->user, f, buf, len, offset, nwritten, &local);
  if (rc == HK_OK && *nwritten > len) *nwritten = len;
  return hk__fs_result(rc, &local, st, "write", path);
}

int hk__fs_has_write_at_v(const hk__fs *fs) {
  return hk__fs_has_write_at(fs) && fs->vt->version >= 4 && fs->vt->write_at_v != NULL;
}

hk_code hk__fs_write_at_v(const hk__fs *fs, hk_fs_file *f, const char *path, const hk_fs_piece *pieces, size_t n,
                          uint64_t offset, size_t *nwritten, hk_status *st) {
  hk_status local = HK_STATUS_INIT;
  size_t total = 0;
  hk_code rc;
  *nwritten = 0;
  /* An older vtable ends before this slot. */
  if (!hk__fs_has_write_at_v(fs))
    return hk_status_set(st, HK_UNIMPLEMENTED, "write %s from pieces: not supported", path);
  for (size_t i = 0; i < n; i++) total += pieces[i].len;
  rc = fs->vt->write_at_v(fs->user, f, pieces, n, offset, nwritten, &local);
  if (rc == HK_OK && *nwritten > total) *nwritten = total;
  return hk__fs_result(rc, &local, st, "write", path);
}

hk_code hk__fs_sync(const hk__fs *fs, hk_fs_file *f, const char *path, hk_status *st) {
  hk_status local = HK_STATUS_INIT;
  return hk__fs_result(fs->vt->sync(fs->user, f, &local), &local, st, "fsync", path);
}

hk_code hk__fs_map(const hk__fs *fs, hk_fs_file *f, const char *path, uint64_t offset, size_t len, const void **addr,
                   void **token, hk_status *st) {
  hk_status local = HK_STATUS_INIT;
  hk_code rc;
  *addr = NULL;
  *token = NULL;
  if (!fs->vt->map || !fs->vt->unmap) return hk_status_set(st, HK_UNIMPLEMENTED, "map %s: not supported", path);
  rc = fs->vt->map(fs->user, f, offset, len, addr, token, &local);
  if (rc == HK_OK && !*addr) {
    /* A NULL address could be neither read nor handed to an executor; the
     * mapping is released, and the caller reads instead. */
    fs->vt->unmap(fs->user, *token, &local);
    *token = NULL;
    return hk_status_set(st, HK_INTERNAL, "map %s: the file system returned no address", path);
  }
  if (rc != HK_OK) {
    *addr = NULL;
    *token = NULL;
  }
  return hk__fs_result(rc, &local, st, "map", path);
}

hk_code hk__fs_unmap(const hk__fs *fs, void *token, const char *path, hk_status *st) {
  hk_status local = HK_STATUS_INIT;
  return hk__fs_result(fs->vt->unmap(fs->user, token, &local), &local, st, "unmap", path);
}

hk_code hk__fs_close(const hk__fs *fs, hk_fs_file *f, const char *path, hk_status *st) {
  hk_status local = HK_STATUS_INIT;
  return hk__fs_result(fs->vt->close(fs->user, f, &local), &local, st, "close", path);
}

hk_code hk__fs_stat(const hk__fs *fs, const char *path, hk_fs_stat *out, hk_status *st) {
  hk_status local = HK_STATUS_INIT;
  memset(out, 0, sizeof *out);
  return hk__fs_result(fs->vt->stat(fs->user, path, out, &local), &local, st, "stat", path);
}

hk_code hk__fs_unlink(const hk__fs *fs, const char *path, hk_status *st) {
  hk_status local = HK_STATUS_INIT;
  return hk__fs_result(fs->vt->unlink(fs->user, path, &local), &local, st, "unlink", path);
}

hk_code hk__fs_list(const hk__fs *fs, const char *path, hk_fs_list_fn fn, void *fn_user, hk_status *st) {
  hk_status local = HK_STATUS_INIT;
  return hk__fs_result(fs->vt->list(fs->user, path, fn, fn_user, &local), &local, st, "list", path);
}

hk_code hk__fs_sync_dir(const hk__fs *fs, const char *path, hk_status *st) {
  hk_status local = HK_STATUS_INIT;
  return hk__fs_result(fs->vt->sync_dir(fs->user, path, &local), &local, st, "fsync directory", path);
}

hk_code hk__fs_rename(const hk__fs *fs, const char *from, const char *to, hk_status *st) {
  hk_status local = HK_STATUS_INIT;
  return hk__fs_result(fs->vt->rename(fs->user, from, to, &local), &local, st, "rename", from);
}

static hk_code fs_mkdir(const hk__fs *fs, const char *path, hk_status *st) {
  hk_status local = HK_STATUS_INIT;
  return hk__fs_result(fs->vt->mkdir(fs->user, path, &local), &local, st, "mkdir", path);
}

int hk__fs_is_file(const hk__fs *fs, const char *path) {
  hk_fs_stat sb;
  hk_status local = HK_STATUS_INIT;
  memset(&sb, 0, sizeof sb);
  return fs->vt->stat(fs->user, path, &sb, &local) == HK_OK && !sb.is_dir;
}

/* ---- whole-file reads ----------------------------------------------------------- */

hk_code hk__read_file(const hk_env *env, const char *path, size_t max, char **out, size_t *len, hk_status *st) {
  hk__fs fs;
  hk_fs_file *f = NULL;
  uint64_t size = 0;
  size_t got = 0;
  char *buf;
  hk_code rc;

  *out = NULL;
  if (len) *len = 0;
  hk__fs_init(&fs, env);
  rc = hk__fs_open_read(&fs, path, &f, st);
  if (rc != HK_OK) return rc;
  rc = hk__fs_size(&fs, f, path, &size, st);
  if (rc == HK_OK && (size > max || size >= SIZE_MAX))
    rc = hk_status_set(st, HK_OUT_OF_RANGE, "%s is %llu bytes, more than the %llu allowed", path,
                       (unsigned long long)size, (unsigned long long)max);
  if (rc != HK_OK) {
    hk__fs_close(&fs, f, path, NULL);
    return rc;
  }
  buf = hk_env_alloc(fs.env, (size_t)size + 1);
  if (!buf) {
    hk__fs_close(&fs, f, path, NULL);
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory reading %s (%llu bytes)", path,
                         (unsigned long long)size);
  }
  rc = hk__fs_read_full(&fs, f, path, buf, (size_t)size, 0, &got, st);
  if (rc != HK_OK) {
    hk__fs_close(&fs, f, path, NULL);
    hk_env_free(fs.env, buf);
    return rc;
  }
  rc = hk__fs_close(&fs, f, path, st);
  if (rc != HK_OK) {
    hk_env_free(fs.env, buf);
    return rc;
  }
  buf[got] = '\0'; /* a file that shrank since size() is read as it is now */
  *out = buf;
  if (len) *len = got;
  return HK_OK;
}

/* ---- mkdir -p ----------------------------------------------------------------------- */

static hk_code mkdir_one(const hk__fs *fs, const char *path, hk_status *st) {
  hk_fs_stat sb;
  hk_status why = HK_STATUS_INIT;
  char *parent;
  hk_code rc = hk__fs_stat(fs, path, &sb, &why);
  if (rc == HK_OK) {
    if (sb.is_dir) return HK_OK;
    return hk_status_set(st, HK_FAILED_PRECONDITION, "%s exists and is not a directory", path);
  }
  if (rc != HK_NOT_FOUND) {
    hk__status_copy(st, &why);
    return rc;
  }
  rc = fs_mkdir(fs, path, &why);
  if (rc == HK_ALREADY_EXISTS) {
    /* Someone else made it in between; fine if it is a directory. */
    if (hk__fs_stat(fs, path, &sb, NULL) == HK_OK && sb.is_dir) return HK_OK;
    return hk_status_set(st, HK_FAILED_PRECONDITION, "%s exists and is not a directory", path);
  }
  if (rc != HK_OK) {
    hk__status_copy(st, &why);
    return rc;
  }
  /* The new directory's entry is durable once its parent is synced.
   * Levels are made parent first, each synced before the next is made, so
   * no directory entry hangs from one that a crash could still take away. */
  parent = hk__path_dirname(fs->env, path);
  if (!parent) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory creating directory %s", path);
  rc = hk__fs_sync_dir(fs, parent, &why);
  if (rc != HK_OK) hk_status_set(st, rc, "creating directory %s: %s", path, why.message);
  hk_env_free(fs->env, parent);
  return rc;
}

hk_code hk__mkdirs(const hk_env *env, const char *path, hk_status *st) {
  hk__fs fs;
  char *buf;
  size_t n;
  hk_code rc = HK_OK;

  if (!path || !*path) return hk_status_set(st, HK_INVALID_ARGUMENT, "mkdirs: the directory path is empty");
  hk__fs_init(&fs, env);
  buf = hk_env_strdup(fs.env, path);
  if (!buf) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory creating directory %s", path);
  n = strlen(buf);
  while (n > 1 && buf[n - 1] == '/') buf[--n] = '\0';
  /* Each prefix ending before a '/', then the whole path. */
  for (size_t i = 1; i <= n && rc == HK_OK; i++) {
    if (i < n && (buf[i] != '/' || buf[i - 1] == '/')) continue;
    char saved = buf[i];
    buf[i] = '\0';
    rc = mkdir_one(&fs, buf, st);
    buf[i] = saved;
  }
  hk_env_free(fs.env, buf);
  return rc;
}

/* ---- public helpers (hooked/sys/fs.h) ------------------------------------------------ */

hk_code hk_fs_write_file_atomic(const hk_env *env, const char *path, const void *data, size_t n, hk_status *st) {
  if (!path) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_fs_write_file_atomic: path is NULL");
  if (!data && n > 0)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_fs_write_file_atomic: data is NULL for %s", path);
  return hk__write_file_atomic(env, path, data ? data : "", n, st);
}

hk_code hk_fs_make_dirs(const hk_env *env, const char *path, hk_status *st) {
  if (!path || !*path) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_fs_make_dirs: path is NULL or empty");
  return hk__mkdirs(env, path, st);
}
