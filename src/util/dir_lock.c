/*
 * One trainer per checkpoint directory: the POSIX hk_fs's
 * lock and unlock slots, the lock of a checkpoint directory that its
 * writers (the checkpoint saver hooks) take, and the set of them a session
 * holds.
 *
 * Two trainers writing one directory delete each other's checkpoints: each
 * save removes the directory's stale temporary files, which are the
 * other's writes in flight, and each Saver's retention deletes checkpoints
 * the other one's state file lists. So the second trainer must not start.
 * The lock is the kernel's (flock), not the file's existence: a lock file
 * left by a killed process is no lock, and the next trainer takes it over
 * without anyone having to delete it.
 *
 * In a file of its own because flock is not POSIX: it needs
 * _DEFAULT_SOURCE, which fs.c, written to POSIX alone, does not define.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE 1 /* flock */
#endif
#include "util/dir_lock.h"
#include "util/fs.h"
#include "util/path.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- the POSIX lock slot ---------------------------------------------------------- */

/* Starting again after the file was replaced under us can only repeat while
 * holders keep unlinking it between our open and our lock: a bound turns a
 * pathological churn into an error instead of a hang. */
#define LOCK_ATTEMPTS 64
/* How much of another holder's description a message quotes. */
#define HOLDER_MAX 200

struct hk_fs_lock {
  int fd;
  char path[]; /* NUL-terminated */
};

/* The first line of `text` (n bytes), control bytes shown as '?', at most
 * cap - 1 bytes, into out. */
static void first_line(const char *text, size_t n, char *out, size_t cap) {
  size_t k = 0;
  for (size_t i = 0; i < n && text[i] != '\n' && text[i] != '\0' && k + 1 < cap; i++) {
    unsigned char c = (unsigned char)text[i];
    out[k++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
  }
  out[k] = '\0';
}

/* Another open holds fd's file: FAILED_PRECONDITION quoting its content. */
static hk_code held_by_another(int fd, const char *path, hk_status *st) {
  char text[HOLDER_MAX + 1], line[HOLDER_MAX + 1];
  ssize_t n;
  do {
    n = pread(fd, text, HOLDER_MAX, 0);
  } while (n < 0 && errno == EINTR);
  first_line(text, n > 0 ? (size_t)n : 0, line, sizeof line);
  return hk_status_set(st, HK_FAILED_PRECONDITION, "%s is locked by another holder: %s", path,
                       line[0] ? line : "(it has not described itself yet)");
}

/* Replace the content of the locked file with `holder`. No room for it is
 * no error: the lock works without its description. */
static int write_holder(int fd, const char *holder) {
  size_t len = strlen(holder), done = 0;
  if (ftruncate(fd, 0) != 0) return errno;
  while (done < len) {
    ssize_t w = pwrite(fd, holder + done, len - done, (off_t)done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      int err = w < 0 ? errno : EIO;
      if (err != ENOSPC
#ifdef EDQUOT
          && err != EDQUOT
#endif
      )
        return err;
      (void)ftruncate(fd, 0); /* no half description */
      return 0;
    }
    done += (size_t)w;
  }
  return 0;
}

hk_code hk__posix_lock(void *user, const char *path, const char *holder, hk_fs_lock **out, hk_status *st) {
  size_t plen = strlen(path);
  (void)user;
  *out = NULL;
  for (int attempt = 0; attempt < LOCK_ATTEMPTS; attempt++) {
    struct stat opened, named;
    hk_fs_lock *l;
    int fd, rc, err;
    do {
      fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) return hk_fs_status_from_errno(st, errno, "open lock file", path);
    do {
      rc = flock(fd, LOCK_EX | LOCK_NB);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) {
      hk_code code;
      err = errno;
      code = err == EWOULDBLOCK ? held_by_another(fd, path, st) : hk_fs_status_from_errno(st, err, "lock", path);
      close(fd);
      return code;
    }
    /* A holder letting go unlinks the file while it still holds it: if that
     * happened between our open and our lock, we hold a file no one else
     * will ever open, and the next trainer would lock a new one. */
    if (fstat(fd, &opened) != 0) {
      err = errno;
      close(fd);
      return hk_fs_status_from_errno(st, err, "stat lock file", path);
    }
    if (stat(path, &named) != 0) {
      err = errno;
      close(fd);
      if (err == ENOENT) continue;
      return hk_fs_status_from_errno(st, err, "stat lock file", path);
    }
    if (opened.st_dev != named.st_dev || opened.st_ino != named.st_ino) {
      close(fd);
      continue;
    }
    err = write_holder(fd, holder ? holder : "");
    if (err == 0) {
      l = malloc(sizeof *l + plen + 1);
      if (l == NULL) err = ENOMEM;
    }
    if (err != 0) {
      /* Nothing held: the file goes while it is still ours. */
      (void)unlink(path);
      close(fd);
      return hk_fs_status_from_errno(st, err, "write lock file", path);
    }
    l->fd = fd;
    memcpy(l->path, path, plen + 1);
    *out = l;
    return HK_OK;
  }
  return hk_status_set(st, HK_UNKNOWN, "lock %s: the file was replaced %d times while being locked", path,
                       LOCK_ATTEMPTS);
}

hk_code hk__posix_unlock(void *user, hk_fs_lock *l, hk_status *st) {
  struct stat opened, named;
  hk_code rc = HK_OK;
  (void)user;
  if (l == NULL) return hk_status_set(st, HK_INVALID_ARGUMENT, "unlock: the lock is NULL");
  /* Only the file we hold: one deleted by hand and made again by another
   * trainer is that trainer's. */
  if (fstat(l->fd, &opened) == 0 && stat(l->path, &named) == 0 && opened.st_dev == named.st_dev &&
      opened.st_ino == named.st_ino && unlink(l->path) != 0 && errno != ENOENT)
    rc = hk_fs_status_from_errno(st, errno, "unlink lock file", l->path);
  close(l->fd); /* releases the lock */
  free(l);
  return rc;
}

/* ---- a checkpoint directory's lock -------------------------------------------------- */

struct hk__dir_lock {
  hk_env env; /* copied: the lock outlives the call that took it */
  hk__fs fs;  /* fs.env points at env above */
  hk_fs_lock *handle;
  char *path; /* <dir>/hooked.lock */
};

static int fs_can_lock(const hk__fs *fs) {
  /* Slots beyond a table's version are never read. */
  return fs->vt->version >= 3 && fs->vt->lock != NULL && fs->vt->unlock != NULL;
}

static void free_lock(hk__dir_lock *l) {
  hk_env env = l->env;
  hk_env_free(&env, l->path);
  hk_env_free(&env, l);
}

/* "pid <pid> on host <host> since <UTC time> (hooked <version>)\n" */
static void describe_holder(const hk_env *env, char *out, size_t cap) {
  char host[256], when[32] = "an unknown time";
  double wall = hk_env_wall(env);
  if (gethostname(host, sizeof host) != 0 || host[0] == '\0') snprintf(host, sizeof host, "%s", "localhost");
  host[sizeof host - 1] = '\0';
  if (isfinite(wall) && wall >= 0 && wall < 1e15) {
    time_t t = (time_t)wall;
    struct tm tm;
    if (gmtime_r(&t, &tm) != NULL) strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  }
  snprintf(out, cap, "pid %ld on host %s since %s (hooked %s)\n", (long)getpid(), host, when, hk_version());
}

/* The other holder's description for the message: the lock file's first
 * line, read now; the slot's own message when it cannot be read. */
static void other_holder(hk__dir_lock *l, const hk_status *slot, char *out, size_t cap) {
  hk_status why = HK_STATUS_INIT;
  char *text = NULL;
  size_t len = 0;
  out[0] = '\0';
  if (hk__read_file(&l->env, l->path, 4096, &text, &len, &why) == HK_OK) {
    first_line(text, len, out, cap < HOLDER_MAX + 1 ? cap : HOLDER_MAX + 1);
    hk_env_free(&l->env, text);
  }
  if (out[0] == '\0') snprintf(out, cap, "holder unknown: %s", slot->message);
}

hk_code hk__dir_lock_take(const hk_env *env, const char *dir, hk__dir_lock **out, hk_status *st) {
  char holder[512];
  hk_status local = HK_STATUS_INIT;
  hk__dir_lock *l;
  hk__fs probe;
  hk_code rc;

  *out = NULL;
  hk__fs_init(&probe, env);
  if (!fs_can_lock(&probe)) {
    hk_env_log(probe.env, HK_LOG_DEBUG,
               "The file system cannot lock: checkpoint directory %s is not locked against other trainers.", dir);
    return HK_OK;
  }
  l = hk_env_calloc(env, 1, sizeof *l);
  if (l == NULL) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "locking checkpoint directory %s: out of memory", dir);
  hk_env_copy(&l->env, env);
  hk__fs_init(&l->fs, &l->env);
  l->path = hk__path_join(&l->env, dir, HK__LOCK_FILE);
  if (l->path == NULL) {
    free_lock(l);
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "locking checkpoint directory %s: out of memory", dir);
  }
  describe_holder(&l->env, holder, sizeof holder);
  rc = l->fs.vt->lock(l->fs.user, l->path, holder, &l->handle, &local);
  if (rc == HK_UNIMPLEMENTED) {
    hk_env_log(&l->env, HK_LOG_DEBUG,
               "The file system cannot lock (%s): checkpoint directory %s is not locked against other trainers.",
               local.message[0] ? local.message : "UNIMPLEMENTED", dir);
    free_lock(l);
    return HK_OK;
  }
  if (rc == HK_FAILED_PRECONDITION) {
    char other[HOLDER_MAX + HK_STATUS_MESSAGE_MAX];
    other_holder(l, &local, other, sizeof other);
    rc = hk_status_set(st, HK_FAILED_PRECONDITION,
                       "Checkpoint directory %s is in use by another trainer (%s; lock file %s). Two trainers "
                       "writing one directory delete each other's checkpoints: give each run its own directory, "
                       "or stop the other one.",
                       dir, other, l->path);
    free_lock(l);
    return rc;
  }
  if (rc != HK_OK) {
    rc = hk__fs_result(rc, &local, st, "lock", l->path);
    free_lock(l);
    return rc;
  }
  holder[strcspn(holder, "\n")] = '\0';
  hk_env_log(&l->env, HK_LOG_DEBUG, "Locked checkpoint directory %s: %s holds %s.", dir, holder, l->path);
  *out = l;
  return HK_OK;
}

void hk__dir_lock_release(hk__dir_lock *l) {
  hk_status why = HK_STATUS_INIT;
  hk_code rc;
  if (l == NULL) return;
  rc = l->fs.vt->unlock(l->fs.user, l->handle, &why);
  if (rc != HK_OK) {
    hk__fs_result(rc, &why, NULL, "unlock", l->path);
    hk_env_log(&l->env, HK_LOG_WARNING, "Releasing the lock %s: %s (the next trainer takes the file over).", l->path,
               why.message);
  }
  free_lock(l);
}

/* ---- the locks a session holds ---------------------------------------------------- */

typedef struct hk__dir_locks_entry {
  char *dir;
  hk__dir_lock *lock; /* NULL: the file system cannot lock */
} entry;

/* "a/b", "a/b/" and "a/b//" name one directory. */
static size_t dir_key_len(const char *dir) {
  size_t n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/') n--;
  return n;
}

hk_code hk__dir_locks_take(hk__dir_locks *set, const hk_env *set_env, const hk_env *env, const char *dir,
                           hk_status *st) {
  size_t k = dir_key_len(dir);
  hk__dir_lock *l = NULL;
  char *copy;
  hk_code rc;

  for (size_t i = 0; i < set->n; i++)
    if (dir_key_len(set->v[i].dir) == k && memcmp(set->v[i].dir, dir, k) == 0) return HK_OK;
  if (set->n == set->cap) {
    size_t cap = set->cap ? set->cap * 2 : 4;
    entry *grown = hk_env_realloc(set_env, set->v, cap * sizeof *grown);
    if (grown == NULL)
      return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "locking checkpoint directory %s: out of memory", dir);
    set->v = grown;
    set->cap = cap;
  }
  copy = hk_env_strdup(set_env, dir);
  if (copy == NULL)
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "locking checkpoint directory %s: out of memory", dir);
  rc = hk__dir_lock_take(env, dir, &l, st);
  if (rc != HK_OK) {
    hk_env_free(set_env, copy);
    return rc;
  }
  set->v[set->n].dir = copy;
  set->v[set->n].lock = l;
  set->n++;
  return HK_OK;
}

void hk__dir_locks_release(hk__dir_locks *set, const hk_env *set_env) {
  for (size_t i = 0; i < set->n; i++) {
    hk__dir_lock_release(set->v[i].lock);
    hk_env_free(set_env, set->v[i].dir);
  }
  hk_env_free(set_env, set->v);
  set->v = NULL;
  set->n = set->cap = 0;
}
