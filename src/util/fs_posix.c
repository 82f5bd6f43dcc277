/*
 * The built-in POSIX file system, hk_fs_posix(): each slot a system call
 * or a loop of them, with errno mapped to hooked's codes
 * (hk_fs_status_from_errno). The lock and unlock slots are in dir_lock.c,
 * the early writeback of positional writes in writeback.c.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
/* pwritev(): Linux declares it with the BSD interfaces, beyond POSIX. */
#if defined(__linux__) && !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE 1
#endif
#include "util/dir_lock.h"
#include "util/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

/* ---- errno mapping ----------------------------------------------------------- */

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

static hk_code posix_write_at(void *user, hk_fs_file *f, const void *buf, size_t len, uint64_t offset, size_t *nwritten,
                              hk_status *st) {
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

/* pwritev of at most IOV_BATCH pieces and POSIX_IO_CHUNK bytes per call
 * (a short write: the library calls again for the rest). */
#define IOV_BATCH 256
static hk_code posix_write_at_v(void *user, hk_fs_file *f, const hk_fs_piece *pieces, size_t n, uint64_t offset,
                                size_t *nwritten, hk_status *st) {
  int fd = file_to_fd(f);
  struct iovec iov[IOV_BATCH];
  size_t k = 0, want = 0;
  ssize_t w;
  (void)user;
  *nwritten = 0;
  for (; k < n && k < IOV_BATCH && want < POSIX_IO_CHUNK; k++) {
    size_t len = pieces[k].len < POSIX_IO_CHUNK - want ? pieces[k].len : POSIX_IO_CHUNK - want;
    iov[k].iov_base = (void *)(uintptr_t)pieces[k].data; /* pwritev only reads it */
    iov[k].iov_len = len;
    want += len;
  }
  if (offset > (uint64_t)INT64_MAX - want) return fd_error(st, EOVERFLOW, "write", fd);
  do {
#ifdef __linux__
    w = pwritev(fd, iov, (int)k, (off_t)offset);
#else
    w = pwrite(fd, iov[0].iov_base, iov[0].iov_len, (off_t)offset); /* a short write: the rest next call */
#endif
  } while (w < 0 && errno == EINTR);
  if (w < 0) return fd_error(st, errno, "write", fd);
  *nwritten = (size_t)w;
  hk__start_writeback(fd, offset, (size_t)w);
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
    .write_at_v = posix_write_at_v,
};

const hk_fs_vtable *hk_fs_posix(void) { return &posix_vtable; }
