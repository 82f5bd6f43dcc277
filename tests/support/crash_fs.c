/*
 * A recording hk_fs over hk_fs_posix() and its power-loss model (see
 * crash_fs.h for the model).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "crash_fs.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CRASH_MAX_THREADS 32

static void die(const char *what, const char *path) {
  fprintf(stderr, "crash_fs: %s %s: %s\n", what, path ? path : "", strerror(errno));
  abort();
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) die("out of memory", NULL);
  return p;
}

static void *xrealloc(void *p, size_t n) {
  p = realloc(p, n ? n : 1);
  if (!p) die("out of memory", NULL);
  return p;
}

static char *xstrdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = xmalloc(n);
  memcpy(d, s, n);
  return d;
}

/* ---- name maps: path -> inode ------------------------------------------------ */

typedef struct entry {
  char *path;
  int ino;
} entry;

typedef struct entries {
  entry *v;
  size_t n, cap;
} entries;

static long map_find(const entries *m, const char *path) {
  for (size_t i = 0; i < m->n; i++)
    if (strcmp(m->v[i].path, path) == 0) return (long)i;
  return -1;
}

static int map_get(const entries *m, const char *path) {
  long i = map_find(m, path);
  return i < 0 ? -1 : m->v[i].ino;
}

static void map_set(entries *m, const char *path, int ino) {
  long i = map_find(m, path);
  if (i >= 0) {
    m->v[i].ino = ino;
    return;
  }
  if (m->n == m->cap) {
    m->cap = m->cap ? m->cap * 2 : 16;
    m->v = xrealloc(m->v, m->cap * sizeof *m->v);
  }
  m->v[m->n].path = xstrdup(path);
  m->v[m->n].ino = ino;
  m->n++;
}

static void map_del(entries *m, const char *path) {
  long i = map_find(m, path);
  if (i < 0) return;
  free(m->v[i].path);
  m->v[i] = m->v[m->n - 1];
  m->n--;
}

static void map_clear(entries *m) {
  for (size_t i = 0; i < m->n; i++) free(m->v[i].path);
  free(m->v);
  memset(m, 0, sizeof *m);
}

static void map_copy(entries *dst, const entries *src) {
  memset(dst, 0, sizeof *dst);
  for (size_t i = 0; i < src->n; i++) map_set(dst, src->v[i].path, src->v[i].ino);
}

/* ---- the recorder ------------------------------------------------------------ */

typedef struct init_inode {
  int is_dir;
  unsigned char *data;
  size_t len;
} init_inode;

struct crash_fs {
  pthread_mutex_t mu;
  char *root;
  size_t rootlen;
  /* the tree at crash_fs_new(): inodes 0 .. ninit-1 */
  init_inode *init;
  int ninit;
  entries init_names;
  /* the live namespace, to know which inode an unlink or rename concerns */
  entries vol;
  int next_ino;
  crash_op *ops;
  size_t nops, cap;
  long unmodeled;
  long open_handles;
  int lie_sync, lie_sync_dir;
  int append_only;
  pthread_t threads[CRASH_MAX_THREADS];
  int nthreads;
};

typedef struct cf_file {
  hk_fs_file *inner;
  int ino;    /* -1: not modeled (outside the root, or opened for reading) */
  char *path; /* as opened, for messages */
} cf_file;

static void read_whole(const char *path, unsigned char **data, size_t *len) {
  FILE *f = fopen(path, "rb");
  size_t cap = 4096, n = 0;
  unsigned char *buf;
  if (!f) die("open", path);
  buf = xmalloc(cap);
  for (;;) {
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (n < cap) {
      if (ferror(f)) die("read", path);
      break;
    }
    cap *= 2;
    buf = xrealloc(buf, cap);
  }
  fclose(f);
  *data = buf;
  *len = n;
}

static char *join(const char *a, const char *b) {
  size_t n = strlen(a) + strlen(b) + 2;
  char *p = xmalloc(n);
  if (*a && *b)
    snprintf(p, n, "%s/%s", a, b);
  else
    snprintf(p, n, "%s%s", a, b);
  return p;
}

/* Read the tree under abs (relative name rel) into init/names, recursively. */
typedef struct tree_sink {
  void (*add)(void *user, const char *rel, int is_dir, unsigned char *data, size_t len);
  void *user;
} tree_sink;

static void walk(const char *abs, const char *rel, const tree_sink *sink) {
  DIR *d = opendir(abs);
  if (!d) die("opendir", abs);
  for (struct dirent *e = readdir(d); e; e = readdir(d)) {
    struct stat sb;
    char *a, *r;
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    if (strcmp(e->d_name, CRASH_LOCK_FILE) == 0) continue; /* not modeled: see cf_lock */
    a = join(abs, e->d_name);
    r = join(rel, e->d_name);
    if (lstat(a, &sb) != 0) die("lstat", a);
    if (S_ISDIR(sb.st_mode)) {
      sink->add(sink->user, r, 1, NULL, 0);
      walk(a, r, sink);
    } else if (S_ISREG(sb.st_mode)) {
      unsigned char *data;
      size_t len;
      read_whole(a, &data, &len);
      sink->add(sink->user, r, 0, data, len);
    } else {
      fprintf(stderr, "crash_fs: %s is neither a file nor a directory\n", a);
      abort();
    }
    free(a);
    free(r);
  }
  closedir(d);
}

static void init_add(void *user, const char *rel, int is_dir, unsigned char *data, size_t len) {
  crash_fs *cf = user;
  cf->init = xrealloc(cf->init, (size_t)(cf->ninit + 1) * sizeof *cf->init);
  cf->init[cf->ninit].is_dir = is_dir;
  cf->init[cf->ninit].data = data;
  cf->init[cf->ninit].len = len;
  map_set(&cf->init_names, rel, cf->ninit);
  cf->ninit++;
}

crash_fs *crash_fs_new(const char *root) {
  crash_fs *cf = xmalloc(sizeof *cf);
  tree_sink sink;
  memset(cf, 0, sizeof *cf);
  pthread_mutex_init(&cf->mu, NULL);
  cf->root = xstrdup(root);
  cf->rootlen = strlen(cf->root);
  while (cf->rootlen > 1 && cf->root[cf->rootlen - 1] == '/') cf->root[--cf->rootlen] = '\0';
  sink.add = init_add;
  sink.user = cf;
  walk(cf->root, "", &sink);
  map_copy(&cf->vol, &cf->init_names);
  cf->next_ino = cf->ninit;
  return cf;
}

void crash_fs_free(crash_fs *cf) {
  if (!cf) return;
  for (int i = 0; i < cf->ninit; i++) free(cf->init[i].data);
  free(cf->init);
  map_clear(&cf->init_names);
  map_clear(&cf->vol);
  for (size_t i = 0; i < cf->nops; i++) {
    free(cf->ops[i].path);
    free(cf->ops[i].path2);
    free(cf->ops[i].data);
  }
  free(cf->ops);
  free(cf->root);
  pthread_mutex_destroy(&cf->mu);
  free(cf);
}

static const hk_fs_vtable append_vtable;

void crash_fs_bind(crash_fs *cf, hk_env *env) {
  env->fs = cf->append_only ? &append_vtable : crash_fs_vtable();
  env->fs_user = cf;
}

void crash_fs_append_only(crash_fs *cf, int on) { cf->append_only = on; }

void crash_fs_lie(crash_fs *cf, int lie_sync, int lie_sync_dir) {
  pthread_mutex_lock(&cf->mu);
  cf->lie_sync = lie_sync;
  cf->lie_sync_dir = lie_sync_dir;
  pthread_mutex_unlock(&cf->mu);
}

const char *crash_fs_root(const crash_fs *cf) { return cf->root; }
size_t crash_fs_nops(const crash_fs *cf) { return cf->nops; }
const crash_op *crash_fs_op(const crash_fs *cf, size_t i) { return i < cf->nops ? &cf->ops[i] : NULL; }

long crash_fs_unmodeled(const crash_fs *cf) {
  long n;
  pthread_mutex_lock((pthread_mutex_t *)&cf->mu);
  n = cf->unmodeled;
  pthread_mutex_unlock((pthread_mutex_t *)&cf->mu);
  return n;
}

long crash_fs_open_handles(const crash_fs *cf) {
  long n;
  pthread_mutex_lock((pthread_mutex_t *)&cf->mu);
  n = cf->open_handles;
  pthread_mutex_unlock((pthread_mutex_t *)&cf->mu);
  return n;
}

/* "root/a//b/" -> "a/b"; NULL when outside the root. */
static char *rel_of(const crash_fs *cf, const char *path) {
  const char *p;
  char *out, *o;
  if (strncmp(path, cf->root, cf->rootlen) != 0) return NULL;
  p = path + cf->rootlen;
  if (*p != '\0' && *p != '/' && !(cf->rootlen == 1 && cf->root[0] == '/')) return NULL;
  while (*p == '/') p++;
  out = o = xmalloc(strlen(p) + 1);
  while (*p) {
    if (*p == '/') {
      while (*p == '/') p++;
      if (*p) *o++ = '/';
      continue;
    }
    *o++ = *p++;
  }
  *o = '\0';
  return out;
}

static char *dir_of(const char *rel) {
  const char *slash = strrchr(rel, '/');
  char *d;
  if (!slash) return xstrdup("");
  d = xmalloc((size_t)(slash - rel) + 1);
  memcpy(d, rel, (size_t)(slash - rel));
  d[slash - rel] = '\0';
  return d;
}

/* With cf->mu held. Takes ownership of path, path2 and data. */
static void log_op(crash_fs *cf, crash_op_kind kind, int ino, char *path, char *path2, unsigned char *data, size_t len,
                   int lied) {
  crash_op *op;
  pthread_t self = pthread_self();
  int t;
  for (t = 0; t < cf->nthreads; t++)
    if (pthread_equal(cf->threads[t], self)) break;
  if (t == cf->nthreads && cf->nthreads < CRASH_MAX_THREADS) cf->threads[cf->nthreads++] = self;
  if (cf->nops == cf->cap) {
    cf->cap = cf->cap ? cf->cap * 2 : 64;
    cf->ops = xrealloc(cf->ops, cf->cap * sizeof *cf->ops);
  }
  op = &cf->ops[cf->nops++];
  memset(op, 0, sizeof *op);
  op->kind = kind;
  op->ino = ino;
  op->path = path;
  op->path2 = path2;
  op->data = data;
  op->len = len;
  op->lied = lied;
  op->mark = CRASH_NO_MARK;
  op->offset = -1;
  op->thread = t;
}

void crash_fs_mark(crash_fs *cf, int64_t v) {
  pthread_mutex_lock(&cf->mu);
  log_op(cf, CRASH_OP_MARK, -1, NULL, NULL, NULL, 0, 0);
  cf->ops[cf->nops - 1].mark = v;
  pthread_mutex_unlock(&cf->mu);
}

int crash_fs_known_name(const crash_fs *cf, const char *rel) {
  if (map_find(&cf->init_names, rel) >= 0) return 1;
  for (size_t i = 0; i < cf->nops; i++) {
    const crash_op *op = &cf->ops[i];
    if ((op->kind == CRASH_OP_CREATE || op->kind == CRASH_OP_MKDIR) && strcmp(op->path, rel) == 0) return 1;
    if (op->kind == CRASH_OP_RENAME && strcmp(op->path2, rel) == 0) return 1;
  }
  return 0;
}

const unsigned char *crash_fs_initial(const crash_fs *cf, const char *rel, size_t *len) {
  int ino = map_get(&cf->init_names, rel);
  if (ino < 0 || cf->init[ino].is_dir) return NULL;
  *len = cf->init[ino].len;
  return cf->init[ino].data;
}

char *crash_fs_op_describe(const crash_fs *cf, size_t i, char *buf, size_t cap) {
  static const char *const names[] = {"create", "write",  "fsync", "close", "fsync dir",
                                      "rename", "unlink", "mkdir", "mark"};
  const crash_op *op = crash_fs_op(cf, i);
  if (!op) {
    snprintf(buf, cap, "(none)");
    return buf;
  }
  switch (op->kind) {
    case CRASH_OP_WRITE:
    case CRASH_OP_SYNC:
    case CRASH_OP_CLOSE: {
      /* name the inode by the path it was created with */
      const char *p = "?";
      for (size_t k = 0; k < cf->nops; k++)
        if (cf->ops[k].kind == CRASH_OP_CREATE && cf->ops[k].ino == op->ino) p = cf->ops[k].path;
      if (op->kind == CRASH_OP_WRITE && op->offset >= 0)
        snprintf(buf, cap, "#%zu write %zu bytes at %lld to %s", i, op->len, (long long)op->offset, p);
      else if (op->kind == CRASH_OP_WRITE)
        snprintf(buf, cap, "#%zu write %zu bytes to %s", i, op->len, p);
      else
        snprintf(buf, cap, "#%zu %s %s%s", i, names[op->kind], p, op->lied ? " (lie)" : "");
      break;
    }
    case CRASH_OP_RENAME: snprintf(buf, cap, "#%zu rename %s -> %s", i, op->path, op->path2); break;
    case CRASH_OP_MARK: snprintf(buf, cap, "#%zu mark %lld", i, (long long)op->mark); break;
    default:
      snprintf(buf, cap, "#%zu %s %s%s", i, names[op->kind], *op->path ? op->path : ".", op->lied ? " (lie)" : "");
      break;
  }
  if (op->thread > 0) {
    size_t n = strlen(buf);
    if (n + 16 < cap) snprintf(buf + n, cap - n, " [thread %d]", op->thread);
  }
  return buf;
}

/* ---- the hk_fs slots ------------------------------------------------------------ */

static hk_code wrap_open(crash_fs *cf, int create, const char *path, hk_fs_file **out, hk_status *st) {
  const hk_fs_vtable *posix = hk_fs_posix();
  hk_fs_file *inner = NULL;
  cf_file *w;
  hk_code rc;

  *out = NULL;
  w = malloc(sizeof *w);
  if (!w) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "crash_fs: out of memory opening %s", path);
  w->path = malloc(strlen(path) + 1);
  if (!w->path) {
    free(w);
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "crash_fs: out of memory opening %s", path);
  }
  strcpy(w->path, path);
  w->ino = -1;
  pthread_mutex_lock(&cf->mu);
  rc = create ? posix->create_excl(NULL, path, &inner, st) : posix->open_read(NULL, path, &inner, st);
  if (rc == HK_OK) {
    cf->open_handles++;
    if (create) {
      char *rel = rel_of(cf, path);
      if (rel) {
        w->ino = cf->next_ino++;
        map_set(&cf->vol, rel, w->ino);
        log_op(cf, CRASH_OP_CREATE, w->ino, rel, NULL, NULL, 0, 0);
      } else {
        cf->unmodeled++;
      }
    }
  }
  pthread_mutex_unlock(&cf->mu);
  if (rc != HK_OK) {
    free(w->path);
    free(w);
    return rc;
  }
  w->inner = inner;
  *out = (hk_fs_file *)w;
  return HK_OK;
}

static hk_code cf_open_read(void *user, const char *path, hk_fs_file **out, hk_status *st) {
  return wrap_open(user, 0, path, out, st);
}

static hk_code cf_create_excl(void *user, const char *path, hk_fs_file **out, hk_status *st) {
  return wrap_open(user, 1, path, out, st);
}

static hk_code cf_read_at(void *user, hk_fs_file *f, void *buf, size_t len, uint64_t offset, size_t *nread,
                          hk_status *st) {
  (void)user;
  return hk_fs_posix()->read_at(NULL, ((cf_file *)f)->inner, buf, len, offset, nread, st);
}

static hk_code cf_write(void *user, hk_fs_file *f, const void *buf, size_t len, size_t *nwritten, hk_status *st) {
  crash_fs *cf = user;
  cf_file *w = (cf_file *)f;
  hk_code rc;
  pthread_mutex_lock(&cf->mu);
  rc = hk_fs_posix()->write(NULL, w->inner, buf, len, nwritten, st);
  if (rc == HK_OK && w->ino >= 0 && *nwritten > 0) {
    unsigned char *copy = xmalloc(*nwritten);
    memcpy(copy, buf, *nwritten);
    log_op(cf, CRASH_OP_WRITE, w->ino, NULL, NULL, copy, *nwritten, 0);
  }
  pthread_mutex_unlock(&cf->mu);
  return rc;
}

#if HK_FS_VTABLE_VERSION >= 2
static hk_code cf_write_at(void *user, hk_fs_file *f, const void *buf, size_t len, uint64_t offset, size_t *nwritten,
                           hk_status *st) {
  crash_fs *cf = user;
  cf_file *w = (cf_file *)f;
  const hk_fs_vtable *posix = hk_fs_posix();
  hk_code rc;
  *nwritten = 0;
  if (!posix->write_at) return hk_status_set(st, HK_UNIMPLEMENTED, "crash_fs: write_at %s: not supported", w->path);
  if (offset > (uint64_t)INT64_MAX) return hk_fs_status_from_errno(st, EFBIG, "write", w->path);
  pthread_mutex_lock(&cf->mu);
  rc = posix->write_at(NULL, w->inner, buf, len, offset, nwritten, st);
  if (rc == HK_OK && w->ino >= 0 && *nwritten > 0) {
    unsigned char *copy = xmalloc(*nwritten);
    memcpy(copy, buf, *nwritten);
    log_op(cf, CRASH_OP_WRITE, w->ino, NULL, NULL, copy, *nwritten, 0);
    cf->ops[cf->nops - 1].offset = (int64_t)offset;
  }
  pthread_mutex_unlock(&cf->mu);
  return rc;
}

/* The first piece alone, through write_at (recorded as one write): a
 * short write, which the library completes with further calls. */
static hk_code cf_write_at_v(void *user, hk_fs_file *f, const hk_fs_piece *pieces, size_t n, uint64_t offset,
                             size_t *nwritten, hk_status *st) {
  *nwritten = 0;
  if (n == 0) return hk_status_set(st, HK_INVALID_ARGUMENT, "crash_fs: write_at_v of no pieces");
  return cf_write_at(user, f, pieces[0].data, pieces[0].len, offset, nwritten, st);
}
#endif

static hk_code cf_size(void *user, hk_fs_file *f, uint64_t *size, hk_status *st) {
  (void)user;
  return hk_fs_posix()->size(NULL, ((cf_file *)f)->inner, size, st);
}

/* Not forwarded: durability is the model's business (see crash_fs.h). */
static hk_code cf_sync(void *user, hk_fs_file *f, hk_status *st) {
  crash_fs *cf = user;
  cf_file *w = (cf_file *)f;
  (void)st;
  pthread_mutex_lock(&cf->mu);
  if (w->ino >= 0) log_op(cf, CRASH_OP_SYNC, w->ino, NULL, NULL, NULL, 0, cf->lie_sync);
  pthread_mutex_unlock(&cf->mu);
  return HK_OK;
}

static hk_code cf_close(void *user, hk_fs_file *f, hk_status *st) {
  crash_fs *cf = user;
  cf_file *w = (cf_file *)f;
  hk_code rc;
  pthread_mutex_lock(&cf->mu);
  rc = hk_fs_posix()->close(NULL, w->inner, st);
  cf->open_handles--;
  if (w->ino >= 0) log_op(cf, CRASH_OP_CLOSE, w->ino, NULL, NULL, NULL, 0, 0);
  pthread_mutex_unlock(&cf->mu);
  free(w->path);
  free(w);
  return rc;
}

static hk_code cf_sync_dir(void *user, const char *path, hk_status *st) {
  crash_fs *cf = user;
  hk_fs_stat sb;
  hk_code rc;
  char *rel;
  /* What a real directory fsync would refuse, it refuses. */
  rc = hk_fs_posix()->stat(NULL, path, &sb, st);
  if (rc != HK_OK) return rc;
  if (!sb.is_dir) return hk_fs_status_from_errno(st, ENOTDIR, "fsync directory", path);
  pthread_mutex_lock(&cf->mu);
  rel = rel_of(cf, path);
  if (rel) log_op(cf, CRASH_OP_SYNC_DIR, -1, rel, NULL, NULL, 0, cf->lie_sync_dir);
  pthread_mutex_unlock(&cf->mu);
  return HK_OK;
}

static hk_code cf_rename(void *user, const char *from, const char *to, hk_status *st) {
  crash_fs *cf = user;
  hk_code rc;
  pthread_mutex_lock(&cf->mu);
  rc = hk_fs_posix()->rename(NULL, from, to, st);
  if (rc == HK_OK) {
    char *rf = rel_of(cf, from), *rt = rel_of(cf, to);
    char *df = rf ? dir_of(rf) : NULL, *dt = rt ? dir_of(rt) : NULL;
    int ino = rf ? map_get(&cf->vol, rf) : -1;
    if (rf && rt && strcmp(df, dt) == 0 && ino >= 0) {
      map_del(&cf->vol, rf);
      map_set(&cf->vol, rt, ino);
      log_op(cf, CRASH_OP_RENAME, ino, rf, rt, NULL, 0, 0);
      rf = rt = NULL;
    } else {
      cf->unmodeled++;
    }
    free(rf);
    free(rt);
    free(df);
    free(dt);
  }
  pthread_mutex_unlock(&cf->mu);
  return rc;
}

static hk_code cf_unlink(void *user, const char *path, hk_status *st) {
  crash_fs *cf = user;
  hk_code rc;
  pthread_mutex_lock(&cf->mu);
  rc = hk_fs_posix()->unlink(NULL, path, st);
  if (rc == HK_OK) {
    char *rel = rel_of(cf, path);
    int ino = rel ? map_get(&cf->vol, rel) : -1;
    if (ino >= 0) {
      map_del(&cf->vol, rel);
      log_op(cf, CRASH_OP_UNLINK, ino, rel, NULL, NULL, 0, 0);
    } else {
      free(rel);
      cf->unmodeled++;
    }
  }
  pthread_mutex_unlock(&cf->mu);
  return rc;
}

static hk_code cf_stat(void *user, const char *path, hk_fs_stat *out, hk_status *st) {
  (void)user;
  return hk_fs_posix()->stat(NULL, path, out, st);
}

static hk_code cf_list(void *user, const char *path, hk_fs_list_fn fn, void *fn_user, hk_status *st) {
  (void)user;
  return hk_fs_posix()->list(NULL, path, fn, fn_user, st);
}

static hk_code cf_mkdir(void *user, const char *path, hk_status *st) {
  crash_fs *cf = user;
  hk_code rc;
  pthread_mutex_lock(&cf->mu);
  rc = hk_fs_posix()->mkdir(NULL, path, st);
  if (rc == HK_OK) {
    char *rel = rel_of(cf, path);
    if (rel && *rel) {
      int ino = cf->next_ino++;
      map_set(&cf->vol, rel, ino);
      log_op(cf, CRASH_OP_MKDIR, ino, rel, NULL, NULL, 0, 0);
    } else {
      free(rel);
      cf->unmodeled++;
    }
  }
  pthread_mutex_unlock(&cf->mu);
  return rc;
}

/* The directory lock (H58) is forwarded and not recorded: it guards a
 * running trainer and holds nothing the library reads, so no crash state
 * has it (see crash_fs.h). */
static hk_code cf_lock(void *user, const char *path, const char *holder, hk_fs_lock **out, hk_status *st) {
  (void)user;
  return hk_fs_posix()->lock(NULL, path, holder, out, st);
}

static hk_code cf_unlock(void *user, hk_fs_lock *lock, hk_status *st) {
  (void)user;
  return hk_fs_posix()->unlock(NULL, lock, st);
}

static const hk_fs_vtable crash_vtable = {
    .version = HK_FS_VTABLE_VERSION,
    .open_read = cf_open_read,
    .create_excl = cf_create_excl,
    .read_at = cf_read_at,
    .write = cf_write,
    .size = cf_size,
    .sync = cf_sync,
    .close = cf_close,
    .sync_dir = cf_sync_dir,
    .rename = cf_rename,
    .unlink = cf_unlink,
    .stat = cf_stat,
    .list = cf_list,
    .mkdir = cf_mkdir,
    .map = NULL,
    .unmap = NULL,
#if HK_FS_VTABLE_VERSION >= 2
    .write_at = cf_write_at,
    .write_at_v = cf_write_at_v,
#endif
    .lock = cf_lock,
    .unlock = cf_unlock,
};

/* The same without write_at: the library appends every file. */
static const hk_fs_vtable append_vtable = {
    .version = HK_FS_VTABLE_VERSION,
    .open_read = cf_open_read,
    .create_excl = cf_create_excl,
    .read_at = cf_read_at,
    .write = cf_write,
    .size = cf_size,
    .sync = cf_sync,
    .close = cf_close,
    .sync_dir = cf_sync_dir,
    .rename = cf_rename,
    .unlink = cf_unlink,
    .stat = cf_stat,
    .list = cf_list,
    .mkdir = cf_mkdir,
    .map = NULL,
    .unmap = NULL,
    .lock = cf_lock,
    .unlock = cf_unlock,
};

const hk_fs_vtable *crash_fs_vtable(void) { return &crash_vtable; }

/* ---- the model ------------------------------------------------------------------- */

typedef struct m_inode {
  int is_dir;
  unsigned char *buf; /* the content as written */
  size_t len, cap;
  unsigned char *sbuf; /* the durable content: as at the last fsync */
  size_t slen;
  size_t *unsynced; /* write ops since the last fsync, in order */
  size_t nunsynced, capunsynced;
} m_inode;

typedef struct model {
  const crash_fs *cf;
  m_inode *ino;
  int nino;
  entries dur;     /* durable names */
  entries vol;     /* names as the running system sees them */
  size_t *pending; /* indices of namespace ops not yet durable, in order */
  size_t npending, cappending;
} model;

static m_inode *inode_at(model *m, int ino) {
  if (ino >= m->nino) {
    m->ino = xrealloc(m->ino, (size_t)(ino + 1) * sizeof *m->ino);
    memset(m->ino + m->nino, 0, (size_t)(ino + 1 - m->nino) * sizeof *m->ino);
    m->nino = ino + 1;
  }
  return &m->ino[ino];
}

static void model_init(model *m, const crash_fs *cf) {
  memset(m, 0, sizeof *m);
  m->cf = cf;
  for (int i = 0; i < cf->ninit; i++) {
    m_inode *n = inode_at(m, i);
    n->is_dir = cf->init[i].is_dir;
    if (cf->init[i].len) {
      n->buf = xmalloc(cf->init[i].len);
      memcpy(n->buf, cf->init[i].data, cf->init[i].len);
    }
    n->len = n->cap = n->slen = cf->init[i].len;
    if (n->len) {
      n->sbuf = xmalloc(n->len);
      memcpy(n->sbuf, n->buf, n->len);
    }
  }
  map_copy(&m->dur, &cf->init_names);
  map_copy(&m->vol, &cf->init_names);
}

static void model_free(model *m) {
  for (int i = 0; i < m->nino; i++) {
    free(m->ino[i].buf);
    free(m->ino[i].sbuf);
    free(m->ino[i].unsynced);
  }
  free(m->ino);
  map_clear(&m->dur);
  map_clear(&m->vol);
  free(m->pending);
  memset(m, 0, sizeof *m);
}

/* Apply one namespace op to a name map, with the meaning it has on its own. */
static void ns_apply(entries *map, const crash_op *op) {
  switch (op->kind) {
    case CRASH_OP_CREATE:
    case CRASH_OP_MKDIR: map_set(map, op->path, op->ino); break;
    case CRASH_OP_RENAME:
      if (map_get(map, op->path) == op->ino) map_del(map, op->path);
      map_set(map, op->path2, op->ino);
      break;
    case CRASH_OP_UNLINK:
      if (map_get(map, op->path) == op->ino) map_del(map, op->path);
      break;
    default: break;
  }
}

static const char *op_dir_path(const crash_op *op) { return op->kind == CRASH_OP_RENAME ? op->path2 : op->path; }

static int in_dir(const char *path, const char *dir) {
  const char *slash = strrchr(path, '/');
  size_t n = slash ? (size_t)(slash - path) : 0;
  return strlen(dir) == n && strncmp(path, dir, n) == 0;
}

static void model_step(model *m, size_t i) {
  const crash_op *op = &m->cf->ops[i];
  m_inode *n;
  switch (op->kind) {
    case CRASH_OP_CREATE:
    case CRASH_OP_MKDIR:
    case CRASH_OP_RENAME:
    case CRASH_OP_UNLINK:
      if (op->kind == CRASH_OP_CREATE || op->kind == CRASH_OP_MKDIR)
        inode_at(m, op->ino)->is_dir = op->kind == CRASH_OP_MKDIR;
      ns_apply(&m->vol, op);
      if (m->npending == m->cappending) {
        m->cappending = m->cappending ? m->cappending * 2 : 16;
        m->pending = xrealloc(m->pending, m->cappending * sizeof *m->pending);
      }
      m->pending[m->npending++] = i;
      break;
    case CRASH_OP_WRITE: {
      size_t off, end;
      n = inode_at(m, op->ino);
      off = op->offset < 0 ? n->len : (size_t)op->offset;
      end = off + op->len;
      if (end > n->cap) {
        n->cap = end * 2;
        n->buf = xrealloc(n->buf, n->cap);
      }
      if (off > n->len) memset(n->buf + n->len, 0, off - n->len); /* a hole reads as zeros */
      memcpy(n->buf + off, op->data, op->len);
      if (end > n->len) n->len = end;
      if (n->nunsynced == n->capunsynced) {
        n->capunsynced = n->capunsynced ? n->capunsynced * 2 : 8;
        n->unsynced = xrealloc(n->unsynced, n->capunsynced * sizeof *n->unsynced);
      }
      n->unsynced[n->nunsynced++] = i;
      break;
    }
    case CRASH_OP_SYNC:
      n = inode_at(m, op->ino);
      if (!op->lied) {
        free(n->sbuf);
        n->sbuf = n->len ? xmalloc(n->len) : NULL;
        if (n->len) memcpy(n->sbuf, n->buf, n->len);
        n->slen = n->len;
        n->nunsynced = 0;
      }
      break;
    case CRASH_OP_SYNC_DIR:
      if (!op->lied) {
        size_t k = 0;
        for (size_t j = 0; j < m->npending; j++) {
          const crash_op *p = &m->cf->ops[m->pending[j]];
          if (in_dir(op_dir_path(p), op->path))
            ns_apply(&m->dur, p);
          else
            m->pending[k++] = m->pending[j];
        }
        m->npending = k;
      }
      break;
    default: break;
  }
}

/* ---- crash states ---------------------------------------------------------------- */

typedef struct st_entry {
  const char *path;
  int is_dir;
  int ino;
  const unsigned char *data;
  size_t len;
  unsigned char *owned;
  int mode;
} st_entry;

struct crash_state {
  size_t point;
  int64_t mark;
  st_entry *e;
  size_t n;
  char desc[2048];
};

size_t crash_state_point(const crash_state *cs) { return cs->point; }
int64_t crash_state_mark(const crash_state *cs) { return cs->mark; }
const char *crash_state_describe(const crash_state *cs) { return cs->desc; }
size_t crash_state_count(const crash_state *cs) { return cs->n; }

const char *crash_state_entry(const crash_state *cs, size_t i, int *is_dir, const unsigned char **data, size_t *len) {
  if (i >= cs->n) return NULL;
  if (is_dir) *is_dir = cs->e[i].is_dir;
  if (data) *data = cs->e[i].data;
  if (len) *len = cs->e[i].len;
  return cs->e[i].path;
}

void crash_state_materialize(const crash_state *cs, const char *dest) {
  for (size_t i = 0; i < cs->n; i++) {
    char *p = join(dest, cs->e[i].path);
    if (cs->e[i].is_dir) {
      if (mkdir(p, 0755) != 0) die("mkdir", p);
    } else {
      FILE *f = fopen(p, "wb");
      if (!f) die("create", p);
      if (cs->e[i].len && fwrite(cs->e[i].data, 1, cs->e[i].len, f) != cs->e[i].len) die("write", p);
      if (fclose(f) != 0) die("close", p);
    }
    free(p);
  }
}

enum { MODE_LOST, MODE_FULL, MODE_TORN, MODE_ZERO };
static const char *const mode_names[] = {"lost", "full", "torn", "zeros"};

static int entry_cmp(const void *a, const void *b) {
  return strcmp(((const st_entry *)a)->path, ((const st_entry *)b)->path);
}

/* Every ancestor of `path` is a durable directory. */
static int reachable(const model *m, const entries *map, const char *path) {
  char buf[1024];
  size_t n = strlen(path);
  if (n >= sizeof buf) return 0;
  memcpy(buf, path, n + 1);
  for (size_t i = n; i > 0; i--) {
    if (buf[i - 1] != '/') continue;
    buf[i - 1] = '\0';
    {
      int ino = map_get(map, buf);
      if (ino < 0 || !m->ino[ino].is_dir) return 0;
    }
  }
  return 1;
}

static uint64_t fnv(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

typedef struct seen_set {
  uint64_t *v;
  size_t cap, n;
} seen_set;

/* 1 when h was new (and is now in the set). */
static int seen_add(seen_set *s, uint64_t h) {
  if (h == 0) h = 1;
  if (2 * (s->n + 1) > s->cap) {
    seen_set bigger;
    bigger.cap = s->cap ? s->cap * 2 : 1024;
    bigger.n = 0;
    bigger.v = calloc(bigger.cap, sizeof *bigger.v);
    if (!bigger.v) die("out of memory", NULL);
    for (size_t i = 0; i < s->cap; i++)
      if (s->v[i]) seen_add(&bigger, s->v[i]);
    free(s->v);
    *s = bigger;
  }
  for (size_t i = (size_t)(h % s->cap);; i = (i + 1) % s->cap) {
    if (s->v[i] == h) return 0;
    if (s->v[i] == 0) {
      s->v[i] = h;
      s->n++;
      return 1;
    }
  }
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void
appendf(char *buf, size_t cap, const char *fmt, ...) {
  size_t n = strlen(buf);
  va_list ap;
  if (n + 1 >= cap) return;
  va_start(ap, fmt);
  vsnprintf(buf + n, cap - n, fmt, ap);
  va_end(ap);
}

/*
 * The durable content of a file with unsynced writes, in the torn or zeroed
 * outcome (owned buffer, *len its length):
 *   TORN: the synced content with the unsynced writes applied in order up to
 *         half of their bytes (the write at the cut applies in part);
 *   ZERO: the length as written, the synced content, and zeros wherever an
 *         unsynced write landed or beyond the synced end.
 */
static unsigned char *outcome(const model *m, const m_inode *in, int mode, size_t *len) {
  /* Files never shrink, so every write ends within the length as written. */
  size_t total = 0, budget, vlen = in->slen, cur = in->slen;
  unsigned char *out = calloc(in->len ? in->len : 1, 1);
  if (!out) die("out of memory", NULL);
  if (in->slen) memcpy(out, in->sbuf, in->slen);
  for (size_t k = 0; k < in->nunsynced; k++) total += m->cf->ops[in->unsynced[k]].len;
  budget = total / 2;
  for (size_t k = 0; k < in->nunsynced; k++) {
    const crash_op *op = &m->cf->ops[in->unsynced[k]];
    size_t off = op->offset < 0 ? vlen : (size_t)op->offset; /* an append lands at the end of the moment */
    if (mode == MODE_ZERO) {
      memset(out + off, 0, op->len);
    } else if (budget > 0) {
      size_t take = op->len < budget ? op->len : budget;
      memcpy(out + off, op->data, take);
      if (off + take > cur) cur = off + take;
      budget -= take;
    }
    if (off + op->len > vlen) vlen = off + op->len;
  }
  *len = mode == MODE_ZERO ? in->len : cur;
  return out;
}

typedef struct explorer {
  const crash_fs *cf;
  model *m;
  crash_visit_fn fn;
  void *user;
  crash_explore_stats *stats;
  seen_set seen;
  int nmodes;
  int data_inodes;
  int stop;
  int64_t mark;
  size_t point;
} explorer;

/* One namespace outcome (`keep[j]`: pending op j persisted): enumerate the data outcomes. */
static void visit_names(explorer *x, const unsigned char *keep) {
  model *m = x->m;
  entries map;
  st_entry *e;
  size_t n = 0, nu = 0, combos = 1;
  size_t *unsynced;
  char head[1024];

  map_copy(&map, &m->dur);
  for (size_t j = 0; j < m->npending; j++)
    if (keep[j]) ns_apply(&map, &m->cf->ops[m->pending[j]]);
  e = xmalloc((map.n + 1) * sizeof *e);
  unsynced = xmalloc((map.n + 1) * sizeof *unsynced);
  for (size_t i = 0; i < map.n; i++) {
    const m_inode *in;
    if (!reachable(m, &map, map.v[i].path)) continue;
    in = &m->ino[map.v[i].ino];
    memset(&e[n], 0, sizeof e[n]);
    e[n].path = map.v[i].path;
    e[n].ino = map.v[i].ino;
    e[n].is_dir = in->is_dir;
    n++;
  }
  qsort(e, n, sizeof *e, entry_cmp);
  for (size_t i = 0; i < n; i++)
    if (!e[i].is_dir && m->ino[e[i].ino].nunsynced > 0) unsynced[nu++] = i;

  /* The description: the crash point and the pending changes that were lost. */
  {
    char opd[512];
    snprintf(head, sizeof head, "crash point %zu/%zu", x->point, x->cf->nops);
    if (x->point > 0)
      appendf(head, sizeof head, " after %s", crash_fs_op_describe(x->cf, x->point - 1, opd, sizeof opd));
    for (size_t j = 0; j < m->npending; j++)
      if (!keep[j])
        appendf(head, sizeof head, "; lost: %s", crash_fs_op_describe(x->cf, m->pending[j], opd, sizeof opd));
  }

  if (nu <= (size_t)x->data_inodes) {
    for (size_t u = 0; u < nu; u++) combos *= (size_t)x->nmodes;
  } else {
    combos = (size_t)x->nmodes;
  }
  for (size_t c = 0; c < combos && !x->stop; c++) {
    crash_state cs;
    /* Keyed by the last mark too: a tree that is fine before a save was
     * acknowledged may not be after it. */
    uint64_t h = fnv(0xcbf29ce484222325ULL, &x->mark, sizeof x->mark);
    size_t rest = c;
    memset(&cs, 0, sizeof cs);
    for (size_t i = 0; i < n; i++) {
      e[i].mode = MODE_FULL;
      e[i].owned = NULL;
      if (!e[i].is_dir) {
        const m_inode *in = &m->ino[e[i].ino];
        e[i].data = in->buf;
        e[i].len = in->len;
      } else {
        e[i].data = NULL;
        e[i].len = 0;
      }
    }
    for (size_t u = 0; u < nu; u++) {
      st_entry *se = &e[unsynced[u]];
      const m_inode *in = &m->ino[se->ino];
      int mode;
      if (nu <= (size_t)x->data_inodes) {
        mode = (int)(rest % (size_t)x->nmodes);
        rest /= (size_t)x->nmodes;
      } else {
        mode = (int)c;
      }
      se->mode = mode;
      switch (mode) {
        case MODE_LOST:
          se->data = in->sbuf;
          se->len = in->slen;
          break;
        case MODE_TORN:
        case MODE_ZERO:
          se->owned = outcome(m, in, mode, &se->len);
          se->data = se->owned;
          break;
        default: break;
      }
    }
    for (size_t i = 0; i < n; i++) {
      h = fnv(h, e[i].path, strlen(e[i].path) + 1);
      h = fnv(h, &e[i].is_dir, sizeof e[i].is_dir);
      h = fnv(h, &e[i].len, sizeof e[i].len);
      if (e[i].len) h = fnv(h, e[i].data, e[i].len);
    }
    x->stats->variants++;
    if (seen_add(&x->seen, h)) {
      x->stats->distinct++;
      cs.point = x->point;
      cs.mark = x->mark;
      cs.e = e;
      cs.n = n;
      snprintf(cs.desc, sizeof cs.desc, "%s", head);
      for (size_t u = 0; u < nu; u++) {
        const st_entry *se = &e[unsynced[u]];
        appendf(cs.desc, sizeof cs.desc, "; unsynced %s: %s", se->path, mode_names[se->mode]);
      }
      if (x->fn(x->user, &cs)) x->stop = 1;
    }
    for (size_t i = 0; i < n; i++) {
      free(e[i].owned);
      e[i].owned = NULL;
    }
  }
  free(unsynced);
  free(e);
  map_clear(&map);
}

static void visit_point(explorer *x, int subset_bits) {
  model *m = x->m;
  size_t k = m->npending;
  unsigned char *keep = xmalloc(k + 1);
  if (k <= (size_t)subset_bits) {
    for (unsigned long mask = 0; mask < (1ul << k) && !x->stop; mask++) {
      for (size_t j = 0; j < k; j++) keep[j] = (unsigned char)((mask >> j) & 1u);
      visit_names(x, keep);
    }
  } else {
    /* In order: every prefix of the pending changes ... */
    for (size_t p = 0; p <= k && !x->stop; p++) {
      for (size_t j = 0; j < k; j++) keep[j] = j < p;
      visit_names(x, keep);
    }
    /* ... and everything but one. */
    for (size_t drop = 0; drop < k && !x->stop; drop++) {
      for (size_t j = 0; j < k; j++) keep[j] = j != drop;
      visit_names(x, keep);
    }
  }
  free(keep);
}

void crash_fs_explore(const crash_fs *cf, const crash_explore_opts *opts, crash_visit_fn fn, void *user,
                      crash_explore_stats *stats) {
  explorer x;
  model m;
  crash_explore_stats local;
  int subset_bits = opts && opts->subset_bits > 0 ? opts->subset_bits : CRASH_SUBSET_BITS;
  if (subset_bits > 16) subset_bits = 16;
  if (!stats) stats = &local;
  memset(stats, 0, sizeof *stats);
  memset(&x, 0, sizeof x);
  model_init(&m, cf);
  x.cf = cf;
  x.m = &m;
  x.fn = fn;
  x.user = user;
  x.stats = stats;
  x.nmodes = opts && opts->no_data_modes ? 2 : 4;
  x.data_inodes = opts && opts->data_inodes > 0 ? opts->data_inodes : CRASH_DATA_INODES;
  x.mark = CRASH_NO_MARK;
  for (size_t c = 0; c <= cf->nops && !x.stop; c++) {
    x.point = c;
    stats->points++;
    visit_point(&x, subset_bits);
    if (c < cf->nops) {
      if (cf->ops[c].kind == CRASH_OP_MARK) x.mark = cf->ops[c].mark;
      model_step(&m, c);
    }
  }
  free(x.seen.v);
  model_free(&m);
}

unsigned char *crash_fs_content_at(const crash_fs *cf, size_t i, size_t *len) {
  model m;
  unsigned char *out = NULL;
  const crash_op *op = crash_fs_op(cf, i);
  *len = 0;
  if (!op || op->ino < 0) return NULL;
  model_init(&m, cf);
  for (size_t k = 0; k < i; k++) model_step(&m, k);
  if (op->ino < m.nino && !m.ino[op->ino].is_dir) {
    *len = m.ino[op->ino].len;
    out = xmalloc(*len);
    if (*len) memcpy(out, m.ino[op->ino].buf, *len);
  }
  model_free(&m);
  return out;
}

/* ---- self-check ---------------------------------------------------------------------- */

typedef struct real_tree {
  char **paths;
  int *is_dir;
  unsigned char **data;
  size_t *len;
  size_t n;
} real_tree;

static void real_add(void *user, const char *rel, int is_dir, unsigned char *data, size_t len) {
  real_tree *t = user;
  t->paths = xrealloc(t->paths, (t->n + 1) * sizeof *t->paths);
  t->is_dir = xrealloc(t->is_dir, (t->n + 1) * sizeof *t->is_dir);
  t->data = xrealloc(t->data, (t->n + 1) * sizeof *t->data);
  t->len = xrealloc(t->len, (t->n + 1) * sizeof *t->len);
  t->paths[t->n] = xstrdup(rel);
  t->is_dir[t->n] = is_dir;
  t->data[t->n] = data;
  t->len[t->n] = len;
  t->n++;
}

int crash_fs_check_model(const crash_fs *cf, char *msg, size_t cap) {
  model m;
  real_tree t;
  tree_sink sink;
  int rc = 0;

  memset(&t, 0, sizeof t);
  sink.add = real_add;
  sink.user = &t;
  walk(cf->root, "", &sink);
  model_init(&m, cf);
  for (size_t i = 0; i < cf->nops; i++) model_step(&m, i);
  if (m.vol.n != t.n) {
    snprintf(msg, cap, "the model holds %zu entries, the directory %zu", m.vol.n, t.n);
    rc = -1;
  }
  for (size_t i = 0; i < t.n && rc == 0; i++) {
    int ino = map_get(&m.vol, t.paths[i]);
    const m_inode *in;
    if (ino < 0) {
      snprintf(msg, cap, "%s is in the directory, not in the model", t.paths[i]);
      rc = -1;
      break;
    }
    in = &m.ino[ino];
    if (in->is_dir != t.is_dir[i] ||
        (!t.is_dir[i] && (in->len != t.len[i] || (t.len[i] && memcmp(in->buf, t.data[i], t.len[i]) != 0)))) {
      snprintf(msg, cap, "%s differs between the model (%zu bytes) and the directory (%zu bytes)", t.paths[i], in->len,
               t.len[i]);
      rc = -1;
    }
  }
  for (size_t i = 0; i < t.n; i++) {
    free(t.paths[i]);
    free(t.data[i]);
  }
  free(t.paths);
  free(t.is_dir);
  free(t.data);
  free(t.len);
  model_free(&m);
  return rc;
}
