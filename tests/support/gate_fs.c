/*
 * gate_fs — see gate_fs.h.
 */
#include "gate_fs.h"
#include "test_env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gate_file {
  hk_fs_file *inner;
  int gated;
  unsigned tag;
} gate_file;

static int held_here(const gate_fs *g) { return !gate_fs_exempt_here(g); }

static int gate_matches(const gate_fs *g, const char *path) {
  return held_here(g) && g->block[0] != '\0' && strstr(path, g->block) != NULL &&
         (g->except[0] == '\0' || !strstr(path, g->except));
}

static hk_code g_open_read(void *user, const char *path, hk_fs_file **out, hk_status *st) {
  gate_fs *g = user;
  gate_file *gf = calloc(1, sizeof *gf);
  hk_code rc;
  assert_non_null(gf);
  rc = g->base->open_read(g->base_user, path, &gf->inner, st);
  if (rc != HK_OK) {
    free(gf);
    return rc;
  }
  *out = (hk_fs_file *)gf;
  return HK_OK;
}

static hk_code g_create_excl(void *user, const char *path, hk_fs_file **out, hk_status *st) {
  gate_fs *g = user;
  gate_file *gf = calloc(1, sizeof *gf);
  hk_code rc;
  assert_non_null(gf);
  rc = g->base->create_excl(g->base_user, path, &gf->inner, st);
  if (rc != HK_OK) {
    free(gf);
    return rc;
  }
  pthread_mutex_lock(&g->mu);
  gf->gated = gate_matches(g, path);
  if (g->obs && g->obs->created) gf->tag = g->obs->created(g->obs_user, g, path);
  pthread_mutex_unlock(&g->mu);
  *out = (hk_fs_file *)gf;
  return HK_OK;
}

static hk_code g_read_at(void *user, hk_fs_file *f, void *buf, size_t len, uint64_t off, size_t *n, hk_status *st) {
  gate_fs *g = user;
  return g->base->read_at(g->base_user, ((gate_file *)f)->inner, buf, len, off, n, st);
}

static hk_code g_write(void *user, hk_fs_file *f, const void *buf, size_t len, size_t *n, hk_status *st) {
  gate_fs *g = user;
  gate_file *gf = (gate_file *)f;
  int observed = g->obs && g->obs->writing;
  if (gf->gated || observed) {
    pthread_mutex_lock(&g->mu);
    if (gf->gated && g->closed) {
      g->arrivals++;
      pthread_cond_broadcast(&g->cv);
      while (g->closed) pthread_cond_wait(&g->cv, &g->mu);
    }
    if (observed) g->obs->writing(g->obs_user, g, gf->tag);
    pthread_mutex_unlock(&g->mu);
  }
  return g->base->write(g->base_user, gf->inner, buf, len, n, st);
}

static hk_code g_size(void *user, hk_fs_file *f, uint64_t *size, hk_status *st) {
  gate_fs *g = user;
  return g->base->size(g->base_user, ((gate_file *)f)->inner, size, st);
}

static hk_code g_sync(void *user, hk_fs_file *f, hk_status *st) {
  gate_fs *g = user;
  gate_file *gf = (gate_file *)f;
  if (g->obs && g->obs->syncing) {
    pthread_mutex_lock(&g->mu);
    g->obs->syncing(g->obs_user, g, gf->tag);
    pthread_mutex_unlock(&g->mu);
  }
  return g->base->sync(g->base_user, gf->inner, st);
}

static hk_code g_close(void *user, hk_fs_file *f, hk_status *st) {
  gate_fs *g = user;
  gate_file *gf = (gate_file *)f;
  hk_code rc = g->base->close(g->base_user, gf->inner, st);
  free(gf);
  return rc;
}

static hk_code g_sync_dir(void *user, const char *path, hk_status *st) {
  gate_fs *g = user;
  return g->base->sync_dir(g->base_user, path, st);
}

static hk_code g_rename(void *user, const char *from, const char *to, hk_status *st) {
  gate_fs *g = user;
  return g->base->rename(g->base_user, from, to, st);
}

static hk_code g_unlink(void *user, const char *path, hk_status *st) {
  gate_fs *g = user;
  return g->base->unlink(g->base_user, path, st);
}

static hk_code g_stat(void *user, const char *path, hk_fs_stat *out, hk_status *st) {
  gate_fs *g = user;
  return g->base->stat(g->base_user, path, out, st);
}

static hk_code g_list(void *user, const char *path, hk_fs_list_fn fn, void *fn_user, hk_status *st) {
  gate_fs *g = user;
  if (held_here(g)) {
    pthread_mutex_lock(&g->mu);
    if (g->list_closed) {
      g->list_arrivals++;
      pthread_cond_broadcast(&g->cv);
      while (g->list_closed) pthread_cond_wait(&g->cv, &g->mu);
    }
    pthread_mutex_unlock(&g->mu);
  }
  return g->base->list(g->base_user, path, fn, fn_user, st);
}

static hk_code g_mkdir(void *user, const char *path, hk_status *st) {
  gate_fs *g = user;
  return g->base->mkdir(g->base_user, path, st);
}

/* The directory lock is never held at a gate: forwarded, or UNIMPLEMENTED
 * ("cannot lock here") over a base without it. */
static hk_code g_lock(void *user, const char *path, const char *holder, hk_fs_lock **out, hk_status *st) {
  gate_fs *g = user;
  *out = NULL;
  if (g->base->version < 3 || !g->base->lock)
    return hk_status_set(st, HK_UNIMPLEMENTED, "lock %s: the base file system cannot lock", path);
  return g->base->lock(g->base_user, path, holder, out, st);
}

static hk_code g_unlock(void *user, hk_fs_lock *lock, hk_status *st) {
  gate_fs *g = user;
  return g->base->unlock(g->base_user, lock, st);
}

static const hk_fs_vtable gate_vtable = {
    .version = HK_FS_VTABLE_VERSION,
    .open_read = g_open_read,
    .create_excl = g_create_excl,
    .read_at = g_read_at,
    .write = g_write,
    .size = g_size,
    .sync = g_sync,
    .close = g_close,
    .sync_dir = g_sync_dir,
    .rename = g_rename,
    .unlink = g_unlink,
    .stat = g_stat,
    .list = g_list,
    .mkdir = g_mkdir,
    /* map, unmap, write_at: optional, not supported */
    .lock = g_lock,
    .unlock = g_unlock,
};

const hk_fs_vtable *gate_fs_vtable(void) { return &gate_vtable; }

void gate_fs_init(gate_fs *g, const hk_fs_vtable *base, void *base_user) {
  memset(g, 0, sizeof *g);
  pthread_mutex_init(&g->mu, NULL);
  pthread_cond_init(&g->cv, NULL);
  g->base = base ? base : hk_fs_posix();
  g->base_user = base_user;
}

void gate_fs_destroy(gate_fs *g) {
  pthread_cond_destroy(&g->cv);
  pthread_mutex_destroy(&g->mu);
}

void gate_fs_exempt(gate_fs *g, pthread_t thread) {
  g->exempt = thread;
  g->has_exempt = 1;
}

int gate_fs_exempt_here(const gate_fs *g) { return g->has_exempt && pthread_equal(pthread_self(), g->exempt); }

void gate_fs_observe(gate_fs *g, const gate_fs_observer *obs, void *user) {
  g->obs = obs;
  g->obs_user = user;
}

void gate_fs_close(gate_fs *g, const char *block, const char *except) {
  pthread_mutex_lock(&g->mu);
  snprintf(g->block, sizeof g->block, "%s", block);
  snprintf(g->except, sizeof g->except, "%s", except ? except : "");
  g->closed = 1;
  pthread_mutex_unlock(&g->mu);
}

void gate_fs_close_list(gate_fs *g) {
  pthread_mutex_lock(&g->mu);
  g->list_closed = 1;
  pthread_mutex_unlock(&g->mu);
}

void gate_fs_open(gate_fs *g) {
  pthread_mutex_lock(&g->mu);
  g->closed = 0;
  g->list_closed = 0;
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
}

void gate_fs_wait_arrival(gate_fs *g) {
  pthread_mutex_lock(&g->mu);
  while (g->arrivals == 0) pthread_cond_wait(&g->cv, &g->mu);
  pthread_mutex_unlock(&g->mu);
}

int gate_fs_arrivals(gate_fs *g) {
  int n;
  pthread_mutex_lock(&g->mu);
  n = g->arrivals;
  pthread_mutex_unlock(&g->mu);
  return n;
}

void gate_fs_wait_list_arrival(gate_fs *g) {
  pthread_mutex_lock(&g->mu);
  while (g->list_arrivals == 0) pthread_cond_wait(&g->cv, &g->mu);
  pthread_mutex_unlock(&g->mu);
}
