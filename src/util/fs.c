/*
 * The built-in POSIX file system, H9's errno mapping, and the file helpers
 * the layers above build on: atomic files (D4.1), mkdir -p, bounded
 * whole-file reads, names (H32) and paths.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "util/fs.h"
#include "util/common.h"
#include "util/dir_lock.h"
#include "util/path.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- errno mapping (H9) ------------------------------------------------------ */

static hk_code errno_code(int errnum) {
  switch (errnum) {
    case ENOSPC:
#ifdef EDQUOT
    case EDQUOT:
#endif
      return HK_RESOURCE_EXHAUSTED;
    case EACCES:
    case EPERM:
    case EROFS: return HK_PERMISSION_DENIED;
    case ENOENT:
    case ENOTDIR: return HK_NOT_FOUND;
    case EEXIST: return HK_ALREADY_EXISTS;
    default: return HK_UNKNOWN;
  }
}

/* strerror() may use a shared buffer; the XSI strerror_r does not. */
static void errno_text(int errnum, char *text, size_t cap) {
  if (errnum == 0 || strerror_r(errnum, text, cap) != 0) snprintf(text, cap, "error %d", errnum);
}

hk_code hk_fs_status_from_errno(hk_status *status, int errnum, const char *op, const char *path) {
  char text[256];
  errno_text(errnum, text, sizeof text);
  return hk_status_set(status, errno_code(errnum), "%s %s: %s", op ? op : "file operation", path ? path : "(no path)",
                       text);
}

/* ---- POSIX implementation ------------------------------------------------------ */

/* The handle is the descriptor itself, offset by one so that no valid handle
 * is NULL: opening a file allocates nothing. */
static hk_fs_file *fd_to_file(int fd) { return (hk_fs_file *)(intptr_t)(fd + 1); }
static int file_to_fd(hk_fs_file *f) { return (int)((intptr_t)f - 1); }

/* Handle slots have no path to name; the hk__fs_ wrappers add it. */
static hk_code fd_error(hk_status *st, int errnum, const char *op, int fd) {
  char what[32];
  snprintf(what, sizeof what, "(descriptor %d)", fd);
  return hk_fs_status_from_errno(st, errnum, op, what);
}

/* Large requests are split so the byte count always fits ssize_t. */
#define POSIX_IO_CHUNK ((size_t)1 << 30)

static hk_code posix_open(const char *path, int flags, hk_fs_file **out, hk_status *st, const char *op) {
  int fd;
  do {
    fd = open(path, flags | O_CLOEXEC, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return hk_fs_status_from_errno(st, errno, op, path);
  *out = fd_to_file(fd);
  return HK_OK;
}

static hk_code posix_open_read(void *user, const char *path, hk_fs_file **out, hk_status *st) {
  (void)user;
  return posix_open(path, O_RDONLY, out, st, "open");
}

static hk_code posix_create_excl(void *user, const char *path, hk_fs_file **out, hk_status *st) {
  (void)user;
  return posix_open(path, O_WRONLY | O_CREAT | O_EXCL, out, st, "create");
}

static hk_code posix_read_at(void *user, hk_fs_file *f, void *buf, size_t len, uint64_t offset, size_t *nread,
                             hk_status *st) {
  int fd = file_to_fd(f);
  size_t done = 0;
  (void)user;
  *nread = 0;
  if ((uint64_t)len > (uint64_t)INT64_MAX || offset > (uint64_t)INT64_MAX - len)
    return fd_error(st, EOVERFLOW, "read", fd);
  while (done < len) {
    size_t want = len - done < POSIX_IO_CHUNK ? len - done : POSIX_IO_CHUNK;
    ssize_t n = pread(fd, (char *)buf + done, want, (off_t)(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return fd_error(st, errno, "read", fd);
    }
    if (n == 0) break;
    done += (size_t)n;
  }
  *nread = done;
  return HK_OK;
}

static hk_code posix_write(void *user, hk_fs_file *f, const void *buf, size_t len, size_t *nwritten, hk_status *st) {
  int fd = file_to_fd(f);
  size_t want = len < POSIX_IO_CHUNK ? len : POSIX_IO_CHUNK;
  ssize_t n;
  (void)user;
  *nwritten = 0;
  do {
    n = write(fd, buf, want);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return fd_error(st, errno, "write", fd);
  *nwritten = (size_t)n;
  return HK_OK;
}

static hk_code posix_write_at(void *user, hk_fs_file *f, const void *buf, size_t len, uint64_t offset,
                              size_t *nwritten, hk_status *st) {
  int fd = file_to_fd(f);
  size_t want = len < POSIX_IO_CHUNK ? len : POSIX_IO_CHUNK;
  ssize_t n;
  (void)user;
  *nwritten = 0;
  if (offset > (uint64_t)INT64_MAX - want) return fd_error(st, EOVERFLOW, "write", fd);
  do {
    n = pwrite(fd, buf, want, (off_t)offset);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return fd_error(st, errno, "write", fd);
  *nwritten = (size_t)n;
  hk__start_writeback(fd, offset, (size_t)n);
  return HK_OK;
}

static hk_code posix_size(void *user, hk_fs_file *f, uint64_t *size, hk_status *st) {
  struct stat sb;
  (void)user;
  if (fstat(file_to_fd(f), &sb) != 0) return fd_error(st, errno, "stat", file_to_fd(f));
  *size = sb.st_size < 0 ? 0 : (uint64_t)sb.st_size;
  return HK_OK;
}

static hk_code posix_sync(void *user, hk_fs_file *f, hk_status *st) {
  int rc;
  (void)user;
  do {
    rc = fsync(file_to_fd(f));
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) return fd_error(st, errno, "fsync", file_to_fd(f));
  return HK_OK;
}

static hk_code posix_close(void *user, hk_fs_file *f, hk_status *st) {
  (void)user;
  /* Linux releases the descriptor even when close() reports EINTR, so a
   * retry could close a descriptor another thread just opened. */
  if (close(file_to_fd(f)) != 0 && errno != EINTR) return fd_error(st, errno, "close", file_to_fd(f));
  return HK_OK;
}

static hk_code posix_sync_dir(void *user, const char *path, hk_status *st) {
  int fd, rc, err;
  (void)user;
  do {
    fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return hk_fs_status_from_errno(st, errno, "open directory", path);
  do {
    rc = fsync(fd);
  } while (rc != 0 && errno == EINTR);
  err = errno;
  close(fd);
  /* Some file systems cannot fsync a directory (EINVAL); their renames are
   * then as durable as they can be made. */
  if (rc != 0 && err != EINVAL) return hk_fs_status_from_errno(st, err, "fsync directory", path);
  return HK_OK;
}

static hk_code posix_rename(void *user, const char *from, const char *to, hk_status *st) {
  int rc;
  (void)user;
  do {
    rc = rename(from, to);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    char text[256];
    int err = errno;
    errno_text(err, text, sizeof text);
    return hk_status_set(st, errno_code(err), "rename %s to %s: %s", from, to, text);
  }
  return HK_OK;
}

static hk_code posix_unlink(void *user, const char *path, hk_status *st) {
  int rc;
  (void)user;
  do {
    rc = unlink(path);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) return hk_fs_status_from_errno(st, errno, "unlink", path);
  return HK_OK;
}

static hk_code posix_stat(void *user, const char *path, hk_fs_stat *out, hk_status *st) {
  struct stat sb;
  (void)user;
  if (stat(path, &sb) != 0) return hk_fs_status_from_errno(st, errno, "stat", path);
  out->is_dir = S_ISDIR(sb.st_mode) ? 1 : 0;
  out->size = sb.st_size < 0 ? 0 : (uint64_t)sb.st_size;
  out->mtime = (double)sb.st_mtim.tv_sec + (double)sb.st_mtim.tv_nsec * 1e-9;
  return HK_OK;
}

static hk_code posix_list(void *user, const char *path, hk_fs_list_fn fn, void *fn_user, hk_status *st) {
  DIR *d;
  hk_code rc = HK_OK;
  (void)user;
  d = opendir(path);
  if (!d) return hk_fs_status_from_errno(st, errno, "list", path);
  for (;;) {
    struct dirent *e;
    errno = 0;
    e = readdir(d);
    if (!e) {
      if (errno != 0) rc = hk_fs_status_from_errno(st, errno, "list", path);
      break;
    }
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    rc = fn(fn_user, e->d_name, st);
    if (rc != HK_OK) break;
  }
  closedir(d);
  return rc;
}

static hk_code posix_mkdir(void *user, const char *path, hk_status *st) {
  (void)user;
  if (mkdir(path, 0755) != 0) return hk_fs_status_from_errno(st, errno, "mkdir", path);
  return HK_OK;
}

/* munmap needs the page-aligned start and length the caller never sees. */
typedef struct posix_mapping {
  void *base;
  size_t span;
} posix_mapping;

static hk_code posix_map(void *user, hk_fs_file *f, uint64_t offset, size_t len, const void **addr, void **token,
                         hk_status *st) {
  int fd = file_to_fd(f);
  struct stat sb;
  long page = sysconf(_SC_PAGESIZE);
  uint64_t start, size;
  size_t lead, span;
  posix_mapping *m;
  void *p;
  (void)user;
  *addr = NULL;
  *token = NULL;
  if (len == 0 || page <= 0) return fd_error(st, EINVAL, "map", fd);
  /* Touching a mapped page past the end of the file raises SIGBUS: map only
   * what the file holds now (a read reports a short file properly). */
  if (fstat(fd, &sb) != 0) return fd_error(st, errno, "map", fd);
  size = sb.st_size < 0 ? 0 : (uint64_t)sb.st_size;
  if (offset > size || len > size - offset) {
    char what[32];
    snprintf(what, sizeof what, "(descriptor %d)", fd);
    return hk_status_set(st, HK_OUT_OF_RANGE, "map %s: %zu bytes at offset %llu pass the end of the file (%llu bytes)",
                         what, len, (unsigned long long)offset, (unsigned long long)size);
  }
  start = offset / (uint64_t)page * (uint64_t)page;
  lead = (size_t)(offset - start);
  if (len > SIZE_MAX - lead || start > (uint64_t)INT64_MAX) return fd_error(st, EOVERFLOW, "map", fd);
  span = lead + len;
  m = malloc(sizeof *m);
  if (!m) return fd_error(st, ENOMEM, "map", fd);
  p = mmap(NULL, span, PROT_READ, MAP_SHARED, fd, (off_t)start);
  if (p == MAP_FAILED) {
    int err = errno;
    free(m);
    return fd_error(st, err, "map", fd);
  }
  /* Advice only: a kernel that ignores it still maps correctly. Not
   * WILLNEED: on a file that is not in the page cache it reads the whole
   * range before the first page is used, which made a cold restore take
   * twice a read's time; sequential faults keep the disk and the copy
   * going together. */
  (void)posix_madvise(p, span, POSIX_MADV_SEQUENTIAL);
  m->base = p;
  m->span = span;
  *addr = (const unsigned char *)p + lead;
  *token = m;
  return HK_OK;
}

static hk_code posix_unmap(void *user, void *token, hk_status *st) {
  posix_mapping *m = token;
  int rc, err;
  (void)user;
  if (!m) return hk_status_set(st, HK_INVALID_ARGUMENT, "unmap: the token is NULL");
  rc = munmap(m->base, m->span);
  err = errno;
  free(m);
  if (rc != 0) return hk_fs_status_from_errno(st, err, "unmap", "(a mapping)");
  return HK_OK;
}

static const hk_fs_vtable posix_vtable = {
    .version = HK_FS_VTABLE_VERSION,
    .open_read = posix_open_read,
    .create_excl = posix_create_excl,
    .read_at = posix_read_at,
    .write = posix_write,
    .size = posix_size,
    .sync = posix_sync,
    .close = posix_close,
    .sync_dir = posix_sync_dir,
    .rename = posix_rename,
    .unlink = posix_unlink,
    .stat = posix_stat,
    .list = posix_list,
    .mkdir = posix_mkdir,
    .map = posix_map,
    .unmap = posix_unmap,
    .write_at = posix_write_at,
    .lock = hk__posix_lock,
    .unlock = hk__posix_unlock,
};

const hk_fs_vtable *hk_fs_posix(void) { return &posix_vtable; }

/* ---- resolved fs and wrappers ------------------------------------------------------ */

void hk__fs_init(hk__fs *fs, const hk_env *env) {
  env = hk__env_or_default(env);
  fs->env = env;
  if (env->version >= 2 && env->fs) {
    fs->vt = env->fs;
    fs->user = env->fs_user;
  } else {
    fs->vt = &posix_vtable;
    fs->user = NULL;
  }
}

/* A replaceable fs may forget the message, fill it for another code, leave
 * out the path, or return a code that would trigger session recovery (H9
 * forbids ABORTED and UNAVAILABLE): make the result what the contract says. */
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

hk_code hk__fs_write_at(const hk__fs *fs, hk_fs_file *f, const char *path, const void *buf, size_t len,
                        uint64_t offset, size_t *nwritten, hk_status *st) {
  hk_status local = HK_STATUS_INIT;
  hk_code rc;
  *nwritten = 0;
  /* H10: a version-1 vtable ends before this slot. */
  if (!hk__fs_has_write_at(fs)) return hk_status_set(st, HK_UNIMPLEMENTED, "write %s at an offset: not supported", path);
  rc = fs->vt->write_at(fs->user, f, buf, len, offset, nwritten, &local);
  if (rc == HK_OK && *nwritten > len) *nwritten = len;
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

static hk_code fs_rename(const hk__fs *fs, const char *from, const char *to, hk_status *st) {
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

/* ---- strings and paths ---------------------------------------------------------- */

char *hk__asprintf(const hk_env *env, const char *fmt, ...) {
  va_list ap;
  int n;
  char *s;

  va_start(ap, fmt);
  n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return NULL;
  s = hk_env_alloc(env, (size_t)n + 1);
  if (!s) return NULL;
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return s;
}

int hk__valid_name(const char *name) {
  size_t n;
  if (!name) return 0;
  n = strlen(name);
  if (n < 1 || n > 255) return 0;
  if (strcmp(name, ".") == 0 || strstr(name, "..")) return 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)name[i];
    if (c == '/' || c == '\\' || c == '"' || c < 0x20 || c == 0x7f) return 0;
  }
  return 1;
}

char *hk__path_join(const hk_env *env, const char *dir, const char *name) {
  size_t dl;
  if (!dir || !*dir) return hk_env_strdup(env, name);
  dl = strlen(dir);
  while (*name == '/') name++;
  if (dir[dl - 1] == '/') return hk__asprintf(env, "%s%s", dir, name);
  return hk__asprintf(env, "%s/%s", dir, name);
}

char *hk__path_dirname(const hk_env *env, const char *path) {
  const char *slash = strrchr(path, '/');
  size_t n;
  char *out;
  if (!slash) return hk_env_strdup(env, ".");
  n = (size_t)(slash - path);
  while (n > 0 && path[n - 1] == '/') n--; /* "a//b" is in "a" */
  if (n == 0) return hk_env_strdup(env, "/");
  out = hk_env_alloc(env, n + 1);
  if (!out) return NULL;
  memcpy(out, path, n);
  out[n] = '\0';
  return out;
}

const char *hk__path_basename(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/* ---- atomic files (D4.1) ---------------------------------------------------------- */

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
  if (rc == HK_OK) rc = fs_rename(&af->fs, af->tmp_path, af->final_path, &why);
  if (rc != HK_OK) {
    af_fail(af, rc, &why, st);
    hk__atomic_abort(af);
    return rc;
  }
  /* The file is in place under its final name; only its directory entry may
   * not be durable yet. The temporary name no longer exists, so there is
   * nothing to remove; the caller decides about the final file (D4.3). A
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
  /* D4.5: the new directory's entry is durable once its parent is synced.
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
  if (!data && n > 0) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_fs_write_file_atomic: data is NULL for %s", path);
  return hk__write_file_atomic(env, path, data ? data : "", n, st);
}

hk_code hk_fs_make_dirs(const hk_env *env, const char *path, hk_status *st) {
  if (!path || !*path) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_fs_make_dirs: path is NULL or empty");
  return hk__mkdirs(env, path, st);
}
