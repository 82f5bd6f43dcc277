/*
 * A fault-injecting hk_fs over hk_fs_posix() (see faulty_fs.h).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "faulty_fs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct faulty_file {
  hk_fs_file *inner;
  char path[FAULTY_FS_PATH_MAX];
} faulty_file;

static const char *const slot_names[FAULTY_FS_NSLOTS] = {
    "open_read", "create_excl", "read_at", "write", "size", "sync",  "close", "sync_dir", "rename",
    "unlink",    "stat",        "list",    "mkdir", "map",  "unmap", "lock",  "unlock",
};

typedef struct faulty_map {
  void *inner;
  char path[FAULTY_FS_PATH_MAX];
} faulty_map;

const char *faulty_fs_slot_name(int slot) {
  if (slot == FAULTY_FS_ANY) return "any";
  if (slot < 0 || slot >= FAULTY_FS_NSLOTS) return "?";
  return slot_names[slot];
}

static void zero_counts(faulty_fs *ff) {
  memset(ff->calls, 0, sizeof ff->calls);
  memset(ff->eligible, 0, sizeof ff->eligible);
  ff->total_calls = 0;
  ff->eligible_total = 0;
  ff->injected = 0;
  ff->bytes_written = 0;
  ff->last_slot = -1;
  ff->last_path[0] = '\0';
}

static void clear_faults(faulty_fs *ff) {
  ff->fail_slot = FAULTY_FS_ANY;
  ff->fail_at = -1;
  ff->fail_forever = 0;
  ff->fail_errno = 0;
  ff->fail_code = HK_OK;
  ff->match[0] = '\0';
  ff->max_write = 0;
  ff->space_limited = 0;
  ff->space = 0;
}

void faulty_fs_init(faulty_fs *ff) {
  memset(ff, 0, sizeof *ff);
  pthread_mutex_init(&ff->mu, NULL);
  clear_faults(ff);
  zero_counts(ff);
}

void faulty_fs_destroy(faulty_fs *ff) { pthread_mutex_destroy(&ff->mu); }

void faulty_fs_bind(faulty_fs *ff, hk_env *env) {
  env->fs = faulty_fs_vtable();
  env->fs_user = ff;
}

static void arm(faulty_fs *ff, int slot, long n, int errnum, hk_code code, int forever) {
  pthread_mutex_lock(&ff->mu);
  zero_counts(ff);
  ff->fail_slot = slot;
  ff->fail_at = n < 0 ? -1 : n;
  ff->fail_forever = forever;
  ff->fail_errno = errnum;
  ff->fail_code = code;
  pthread_mutex_unlock(&ff->mu);
}

void faulty_fs_fail_errno(faulty_fs *ff, int slot, long n, int errnum, int forever) {
  arm(ff, slot, n, errnum, HK_UNKNOWN, forever);
}

void faulty_fs_fail_code(faulty_fs *ff, int slot, long n, hk_code code, int forever) {
  arm(ff, slot, n, 0, code, forever);
}

void faulty_fs_match(faulty_fs *ff, const char *substr) {
  pthread_mutex_lock(&ff->mu);
  ff->match[0] = '\0';
  if (substr) {
    strncpy(ff->match, substr, sizeof ff->match - 1);
    ff->match[sizeof ff->match - 1] = '\0';
  }
  pthread_mutex_unlock(&ff->mu);
}

void faulty_fs_short_writes(faulty_fs *ff, size_t max) {
  pthread_mutex_lock(&ff->mu);
  ff->max_write = max;
  pthread_mutex_unlock(&ff->mu);
}

void faulty_fs_space(faulty_fs *ff, uint64_t bytes) {
  pthread_mutex_lock(&ff->mu);
  ff->space_limited = 1;
  ff->space = bytes;
  ff->bytes_written = 0;
  pthread_mutex_unlock(&ff->mu);
}

void faulty_fs_reset(faulty_fs *ff) {
  pthread_mutex_lock(&ff->mu);
  clear_faults(ff);
  zero_counts(ff);
  pthread_mutex_unlock(&ff->mu);
}

long faulty_fs_calls(faulty_fs *ff, int slot) {
  long n;
  pthread_mutex_lock(&ff->mu);
  n = slot == FAULTY_FS_ANY ? ff->total_calls : (slot >= 0 && slot < FAULTY_FS_NSLOTS ? ff->calls[slot] : 0);
  pthread_mutex_unlock(&ff->mu);
  return n;
}

long faulty_fs_injected(faulty_fs *ff) {
  long n;
  pthread_mutex_lock(&ff->mu);
  n = ff->injected;
  pthread_mutex_unlock(&ff->mu);
  return n;
}

long faulty_fs_open_handles(faulty_fs *ff) {
  long n;
  pthread_mutex_lock(&ff->mu);
  n = ff->open_handles;
  pthread_mutex_unlock(&ff->mu);
  return n;
}

/* Count the call and decide whether it fails; fills st when it does. */
static hk_code intercept(faulty_fs *ff, int slot, const char *path, hk_status *st) {
  int hit = 0, errnum;
  hk_code code;

  pthread_mutex_lock(&ff->mu);
  ff->calls[slot]++;
  ff->total_calls++;
  int eligible = ff->match[0] == '\0' || (path && strstr(path, ff->match));
  if (eligible) {
    long idx = -1;
    if (ff->fail_slot == FAULTY_FS_ANY)
      idx = ff->eligible_total;
    else if (ff->fail_slot == slot)
      idx = ff->eligible[slot];
    if (ff->fail_at >= 0 && idx >= 0) hit = ff->fail_forever ? idx >= ff->fail_at : idx == ff->fail_at;
    ff->eligible[slot]++;
    ff->eligible_total++;
  }
  if (hit) {
    ff->injected++;
    ff->last_slot = slot;
    strncpy(ff->last_path, path ? path : "", sizeof ff->last_path - 1);
    ff->last_path[sizeof ff->last_path - 1] = '\0';
  }
  errnum = ff->fail_errno;
  code = ff->fail_code;
  pthread_mutex_unlock(&ff->mu);

  if (!hit) return HK_OK;
  if (errnum) return hk_fs_status_from_errno(st, errnum, slot_names[slot], path ? path : "(no path)");
  return hk_status_set(st, code, "injected %s failure on %s", slot_names[slot], path ? path : "(no path)");
}

static hk_code wrap_open(faulty_fs *ff, int slot, const char *path, hk_fs_file **out, hk_status *st) {
  const hk_fs_vtable *posix = hk_fs_posix();
  hk_fs_file *inner = NULL;
  hk_code rc;
  faulty_file *w;

  *out = NULL;
  rc = intercept(ff, slot, path, st);
  if (rc != HK_OK) return rc;
  w = malloc(sizeof *w);
  if (!w) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "faulty_fs: out of memory opening %s", path);
  rc = slot == FAULTY_FS_OPEN_READ ? posix->open_read(NULL, path, &inner, st)
                                   : posix->create_excl(NULL, path, &inner, st);
  if (rc != HK_OK) {
    free(w);
    return rc;
  }
  w->inner = inner;
  strncpy(w->path, path, sizeof w->path - 1);
  w->path[sizeof w->path - 1] = '\0';
  pthread_mutex_lock(&ff->mu);
  ff->open_handles++;
  pthread_mutex_unlock(&ff->mu);
  *out = (hk_fs_file *)w;
  return HK_OK;
}

static hk_code ff_open_read(void *user, const char *path, hk_fs_file **out, hk_status *st) {
  return wrap_open(user, FAULTY_FS_OPEN_READ, path, out, st);
}

static hk_code ff_create_excl(void *user, const char *path, hk_fs_file **out, hk_status *st) {
  return wrap_open(user, FAULTY_FS_CREATE_EXCL, path, out, st);
}

static hk_code ff_read_at(void *user, hk_fs_file *f, void *buf, size_t len, uint64_t offset, size_t *nread,
                          hk_status *st) {
  faulty_file *w = (faulty_file *)f;
  *nread = 0;
  hk_code rc = intercept(user, FAULTY_FS_READ_AT, w->path, st);
  if (rc != HK_OK) return rc;
  return hk_fs_posix()->read_at(NULL, w->inner, buf, len, offset, nread, st);
}

/* A write of up to *want bytes to `path`: counted and maybe failed, then
 * *want cut to the short-write limit and the space left (ENOSPC when
 * none is). Every write slot goes through it. */
static hk_code admit_write(faulty_fs *ff, const char *path, size_t *want, hk_status *st) {
  hk_code rc = intercept(ff, FAULTY_FS_WRITE, path, st);
  if (rc != HK_OK) return rc;
  pthread_mutex_lock(&ff->mu);
  if (ff->max_write && *want > ff->max_write) *want = ff->max_write;
  if (ff->space_limited) {
    uint64_t left = ff->space > ff->bytes_written ? ff->space - ff->bytes_written : 0;
    if (left == 0) {
      pthread_mutex_unlock(&ff->mu);
      return hk_fs_status_from_errno(st, ENOSPC, "write", path);
    }
    if (*want > left) *want = (size_t)left;
  }
  pthread_mutex_unlock(&ff->mu);
  return HK_OK;
}

/* Bytes the real file took. */
static void count_written(faulty_fs *ff, size_t n) {
  pthread_mutex_lock(&ff->mu);
  ff->bytes_written += n;
  pthread_mutex_unlock(&ff->mu);
}

static hk_code ff_write(void *user, hk_fs_file *f, const void *buf, size_t len, size_t *nwritten, hk_status *st) {
  faulty_fs *ff = user;
  faulty_file *w = (faulty_file *)f;
  size_t want = len;
  hk_code rc;

  *nwritten = 0;
  rc = admit_write(ff, w->path, &want, st);
  if (rc != HK_OK) return rc;
  rc = hk_fs_posix()->write(NULL, w->inner, buf, want, nwritten, st);
  if (rc == HK_OK) count_written(ff, *nwritten);
  return rc;
}

/* Counted, failed, shortened and space-limited exactly as a write: to the
 * tests it is one (the library writes a data file with it). */
static hk_code ff_write_at(void *user, hk_fs_file *f, const void *buf, size_t len, uint64_t offset, size_t *nwritten,
                           hk_status *st) {
  faulty_fs *ff = user;
  faulty_file *w = (faulty_file *)f;
  size_t want = len;
  hk_code rc;

  *nwritten = 0;
  rc = admit_write(ff, w->path, &want, st);
  if (rc != HK_OK) return rc;
  rc = hk_fs_posix()->write_at(NULL, w->inner, buf, want, offset, nwritten, st);
  if (rc == HK_OK) count_written(ff, *nwritten);
  return rc;
}

/* Counted, failed, shortened and space-limited exactly as a write (and
 * as write_at): the pieces are cut to what a write of their total would
 * be allowed. */
static hk_code ff_write_at_v(void *user, hk_fs_file *f, const hk_fs_piece *pieces, size_t n, uint64_t offset,
                             size_t *nwritten, hk_status *st) {
  faulty_fs *ff = user;
  faulty_file *w = (faulty_file *)f;
  hk_fs_piece cut[HK_FS_MAX_PIECES];
  size_t want = 0, k = 0;
  hk_code rc;

  *nwritten = 0;
  if (n == 0 || n > HK_FS_MAX_PIECES)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "faulty_fs: write_at_v of %zu pieces", n);
  for (size_t i = 0; i < n; i++) want += pieces[i].len;
  rc = admit_write(ff, w->path, &want, st);
  if (rc != HK_OK) return rc;
  for (size_t room = want; k < n && room > 0; k++) {
    cut[k] = pieces[k];
    if (cut[k].len > room) cut[k].len = room;
    room -= cut[k].len;
  }
  rc = hk_fs_posix()->write_at_v(NULL, w->inner, cut, k, offset, nwritten, st);
  if (rc == HK_OK) count_written(ff, *nwritten);
  return rc;
}

static hk_code ff_size(void *user, hk_fs_file *f, uint64_t *size, hk_status *st) {
  faulty_file *w = (faulty_file *)f;
  hk_code rc = intercept(user, FAULTY_FS_SIZE, w->path, st);
  if (rc != HK_OK) return rc;
  return hk_fs_posix()->size(NULL, w->inner, size, st);
}

static hk_code ff_sync(void *user, hk_fs_file *f, hk_status *st) {
  faulty_file *w = (faulty_file *)f;
  hk_code rc = intercept(user, FAULTY_FS_SYNC, w->path, st);
  if (rc != HK_OK) return rc;
  return hk_fs_posix()->sync(NULL, w->inner, st);
}

static hk_code ff_close(void *user, hk_fs_file *f, hk_status *st) {
  faulty_fs *ff = user;
  faulty_file *w = (faulty_file *)f;
  hk_status inner_st = HK_STATUS_INIT;
  hk_code injected = intercept(ff, FAULTY_FS_CLOSE, w->path, st);
  /* The real file is released whatever is injected: close always does. */
  hk_code rc = hk_fs_posix()->close(NULL, w->inner, &inner_st);
  pthread_mutex_lock(&ff->mu);
  ff->open_handles--;
  pthread_mutex_unlock(&ff->mu);
  free(w);
  if (injected != HK_OK) return injected;
  if (rc != HK_OK && st) *st = inner_st;
  return rc;
}

static hk_code ff_sync_dir(void *user, const char *path, hk_status *st) {
  hk_code rc = intercept(user, FAULTY_FS_SYNC_DIR, path, st);
  if (rc != HK_OK) return rc;
  return hk_fs_posix()->sync_dir(NULL, path, st);
}

static hk_code ff_rename(void *user, const char *from, const char *to, hk_status *st) {
  hk_code rc = intercept(user, FAULTY_FS_RENAME, from, st);
  if (rc != HK_OK) return rc;
  return hk_fs_posix()->rename(NULL, from, to, st);
}

static hk_code ff_unlink(void *user, const char *path, hk_status *st) {
  hk_code rc = intercept(user, FAULTY_FS_UNLINK, path, st);
  if (rc != HK_OK) return rc;
  return hk_fs_posix()->unlink(NULL, path, st);
}

static hk_code ff_stat(void *user, const char *path, hk_fs_stat *out, hk_status *st) {
  hk_code rc = intercept(user, FAULTY_FS_STAT, path, st);
  if (rc != HK_OK) return rc;
  return hk_fs_posix()->stat(NULL, path, out, st);
}

static hk_code ff_list(void *user, const char *path, hk_fs_list_fn fn, void *fn_user, hk_status *st) {
  hk_code rc = intercept(user, FAULTY_FS_LIST, path, st);
  if (rc != HK_OK) return rc;
  return hk_fs_posix()->list(NULL, path, fn, fn_user, st);
}

static hk_code ff_mkdir(void *user, const char *path, hk_status *st) {
  hk_code rc = intercept(user, FAULTY_FS_MKDIR, path, st);
  if (rc != HK_OK) return rc;
  return hk_fs_posix()->mkdir(NULL, path, st);
}

long faulty_fs_open_maps(faulty_fs *ff) {
  long n;
  pthread_mutex_lock(&ff->mu);
  n = ff->open_maps;
  pthread_mutex_unlock(&ff->mu);
  return n;
}

void faulty_fs_no_map(faulty_fs *ff, int on) {
  pthread_mutex_lock(&ff->mu);
  ff->no_map = on;
  pthread_mutex_unlock(&ff->mu);
}

static hk_code ff_map(void *user, hk_fs_file *f, uint64_t offset, size_t len, const void **addr, void **token,
                      hk_status *st) {
  faulty_fs *ff = user;
  faulty_file *w = (faulty_file *)f;
  faulty_map *m;
  int no_map;
  hk_code rc;

  *addr = NULL;
  *token = NULL;
  pthread_mutex_lock(&ff->mu);
  no_map = ff->no_map;
  pthread_mutex_unlock(&ff->mu);
  if (no_map) return hk_status_set(st, HK_UNIMPLEMENTED, "map %s: faulty_fs_no_map is set", w->path);
  rc = intercept(ff, FAULTY_FS_MAP, w->path, st);
  if (rc != HK_OK) return rc;
  m = malloc(sizeof *m);
  if (!m) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "faulty_fs: out of memory mapping %s", w->path);
  rc = hk_fs_posix()->map(NULL, w->inner, offset, len, addr, &m->inner, st);
  if (rc != HK_OK) {
    free(m);
    return rc;
  }
  {
    size_t n = strlen(w->path);
    if (n >= sizeof m->path) n = sizeof m->path - 1;
    memcpy(m->path, w->path, n);
    m->path[n] = '\0';
  }
  pthread_mutex_lock(&ff->mu);
  ff->open_maps++;
  pthread_mutex_unlock(&ff->mu);
  *token = m;
  return HK_OK;
}

static hk_code ff_unmap(void *user, void *token, hk_status *st) {
  faulty_fs *ff = user;
  faulty_map *m = token;
  hk_status inner_st = HK_STATUS_INIT;
  hk_code injected = intercept(ff, FAULTY_FS_UNMAP, m->path, st);
  /* The real mapping is released whatever is injected, as the slot says. */
  hk_code rc = hk_fs_posix()->unmap(NULL, m->inner, &inner_st);
  pthread_mutex_lock(&ff->mu);
  ff->open_maps--;
  pthread_mutex_unlock(&ff->mu);
  free(m);
  if (injected != HK_OK) return injected;
  if (rc != HK_OK && st) *st = inner_st;
  return rc;
}

long faulty_fs_open_locks(faulty_fs *ff) {
  long n;
  pthread_mutex_lock(&ff->mu);
  n = ff->open_locks;
  pthread_mutex_unlock(&ff->mu);
  return n;
}

void faulty_fs_no_lock(faulty_fs *ff, int on) {
  pthread_mutex_lock(&ff->mu);
  ff->no_lock = on;
  pthread_mutex_unlock(&ff->mu);
}

typedef struct faulty_lock {
  hk_fs_lock *inner;
  char path[FAULTY_FS_PATH_MAX];
} faulty_lock;

static hk_code ff_lock(void *user, const char *path, const char *holder, hk_fs_lock **out, hk_status *st) {
  faulty_fs *ff = user;
  faulty_lock *l;
  int no_lock;
  hk_code rc;

  *out = NULL;
  pthread_mutex_lock(&ff->mu);
  no_lock = ff->no_lock;
  pthread_mutex_unlock(&ff->mu);
  if (no_lock) return hk_status_set(st, HK_UNIMPLEMENTED, "lock %s: faulty_fs_no_lock is set", path);
  rc = intercept(ff, FAULTY_FS_LOCK, path, st);
  if (rc != HK_OK) return rc;
  l = malloc(sizeof *l);
  if (!l) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "faulty_fs: out of memory locking %s", path);
  rc = hk_fs_posix()->lock(NULL, path, holder, &l->inner, st);
  if (rc != HK_OK) {
    free(l);
    return rc;
  }
  strncpy(l->path, path, sizeof l->path - 1);
  l->path[sizeof l->path - 1] = '\0';
  pthread_mutex_lock(&ff->mu);
  ff->open_locks++;
  pthread_mutex_unlock(&ff->mu);
  *out = (hk_fs_lock *)l;
  return HK_OK;
}

static hk_code ff_unlock(void *user, hk_fs_lock *lock, hk_status *st) {
  faulty_fs *ff = user;
  faulty_lock *l = (faulty_lock *)lock;
  hk_status inner_st = HK_STATUS_INIT;
  hk_code injected = intercept(ff, FAULTY_FS_UNLOCK, l->path, st);
  /* The real lock is released (and its file removed) whatever is
   * injected, as close does. */
  hk_code rc = hk_fs_posix()->unlock(NULL, l->inner, &inner_st);
  pthread_mutex_lock(&ff->mu);
  ff->open_locks--;
  pthread_mutex_unlock(&ff->mu);
  free(l);
  if (injected != HK_OK) return injected;
  if (rc != HK_OK && st) *st = inner_st;
  return rc;
}

static const hk_fs_vtable faulty_vtable = {
    .version = HK_FS_VTABLE_VERSION,
    .open_read = ff_open_read,
    .create_excl = ff_create_excl,
    .read_at = ff_read_at,
    .write = ff_write,
    .size = ff_size,
    .sync = ff_sync,
    .close = ff_close,
    .sync_dir = ff_sync_dir,
    .rename = ff_rename,
    .unlink = ff_unlink,
    .stat = ff_stat,
    .list = ff_list,
    .mkdir = ff_mkdir,
    .map = ff_map,
    .unmap = ff_unmap,
    .write_at = ff_write_at,
    .lock = ff_lock,
    .unlock = ff_unlock,
    .write_at_v = ff_write_at_v,
};

const hk_fs_vtable *faulty_fs_vtable(void) { return &faulty_vtable; }
