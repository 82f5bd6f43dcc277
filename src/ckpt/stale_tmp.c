/*
 * Stale temporary files of a checkpoint directory: before a
 * save writes anything, the "<F>.tmp-XXXXXX" files a crashed save left
 * behind are removed — but only for final names no live writer but this
 * save's own trainer can be writing: the state file and its records,
 * "graph.txt", the checkpoints of the Saver's managed form
 * "<basename>-<digits>" (which the directory lock keeps to one trainer and
 * unmanaged saves refuse), and the save's own target. A temporary of any
 * other checkpoint may be an unmanaged export another process is writing
 * right now, which takes no directory lock: it is left alone (a save of
 * that name removes it, should its writer have crashed).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "ckpt/ckpt.h"
#include "ckpt/ckpt_internal.h"
#include "ckpt/shard.h"
#include "util/fs.h"
#include "util/path.h"

#include <string.h>

typedef struct stale_list {
  const hk_env *env;
  const char *latest;
  const char *basename; /* of the managed form, or NULL */
  const char *own;      /* the save's own checkpoint name, or NULL */
  char **names;
  size_t n, cap;
  int oom;
} stale_list;

static int ends_with(const char *s, size_t n, const char *suffix) {
  size_t k = strlen(suffix);
  return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* F (fl bytes) is "<X><ext>" with ext a checkpoint file's and X `own`, or
 * of the managed form of `basename`. */
static int is_our_checkpoint_file(const char *name, size_t fl, const char *basename, const char *own) {
  static const char *const exts[4] = {".safetensors", ".graph.txt", ".meta", HK__SHARD_INDEX_EXT};
  size_t shard_stem = hk__shard_stem(name, fl);
  for (size_t i = 0; i < 4; i++) {
    size_t xl;
    char x[256];
    if (!ends_with(name, fl, exts[i])) continue;
    /* A shard "<X>.shard-DDDDD-of-DDDDD.safetensors" is X's. */
    xl = i == 0 && shard_stem > 0 ? shard_stem : fl - strlen(exts[i]);
    if (xl == 0 || xl >= sizeof x) return 0;
    memcpy(x, name, xl);
    x[xl] = '\0';
    if (own && strcmp(x, own) == 0) return 1;
    return basename && hk__managed_step(x, basename, NULL);
  }
  return 0;
}

/* "<F>.tmp-XXXXXX" with F one of ours. */
static int is_our_tmp(const char *name, const char *latest, const char *basename, const char *own) {
  size_t fl;
  if (!hk__atomic_tmp_name(name, &fl)) return 0;
  if (fl == strlen(latest) && memcmp(name, latest, fl) == 0) return 1;
  /* The pending-deletion record beside the state file. */
  if (fl == strlen(latest) + sizeof HK__PENDING_SUFFIX - 1 && memcmp(name, latest, strlen(latest)) == 0 &&
      memcmp(name + strlen(latest), HK__PENDING_SUFFIX, sizeof HK__PENDING_SUFFIX - 1) == 0)
    return 1;
  /* The best-checkpoint record beside it. */
  if (fl == strlen(latest) + sizeof HK__BEST_SUFFIX - 1 && memcmp(name, latest, strlen(latest)) == 0 &&
      memcmp(name + strlen(latest), HK__BEST_SUFFIX, sizeof HK__BEST_SUFFIX - 1) == 0)
    return 1;
  if (fl == strlen("graph.txt") && memcmp(name, "graph.txt", fl) == 0) return 1;
  /* The name graph.txt had before: a crashed save of an older version. */
  if (fl == strlen("graph.pbtxt") && memcmp(name, "graph.pbtxt", fl) == 0) return 1;
  return is_our_checkpoint_file(name, fl, basename, own);
}

static hk_code collect_stale(void *user, const char *name, hk_status *st) {
  stale_list *l = user;
  (void)st;
  if (l->oom || !is_our_tmp(name, l->latest, l->basename, l->own)) return HK_OK;
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 8;
    char **grown = hk_env_realloc(l->env, l->names, cap * sizeof *grown);
    if (!grown) {
      l->oom = 1;
      return HK_OK;
    }
    l->names = grown;
    l->cap = cap;
  }
  l->names[l->n] = hk_env_strdup(l->env, name);
  if (!l->names[l->n]) {
    l->oom = 1;
    return HK_OK;
  }
  l->n++;
  return HK_OK;
}

hk_code hk__remove_stale_tmp(const hk_env *env, const char *dir, const char *latest_filename, const char *basename,
                             const char *own, hk_status *st) {
  hk__fs fs;
  stale_list l;
  hk_code rc;

  hk__fs_init(&fs, env);
  memset(&l, 0, sizeof l);
  l.env = fs.env;
  l.latest = latest_filename ? latest_filename : "checkpoint";
  l.basename = basename;
  l.own = own;
  /* Collect first, remove after: an fs need not allow changing a directory
   * while it is being listed. */
  rc = hk__fs_list(&fs, dir, collect_stale, &l, st);
  if (rc == HK_OK && l.oom)
    rc = hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory listing temporary files in %s", dir);
  for (size_t i = 0; i < l.n; i++) {
    if (rc == HK_OK) {
      hk_status why = HK_STATUS_INIT;
      char *path = hk__path_join(fs.env, dir, l.names[i]);
      if (!path) {
        rc = hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory removing temporary files in %s", dir);
      } else {
        if (hk__fs_unlink(&fs, path, &why) != HK_OK && why.code != HK_NOT_FOUND)
          hk_env_log(fs.env, HK_LOG_WARNING, "Could not remove stale temporary file %s: %s", path, why.message);
        hk_env_free(fs.env, path);
      }
    }
    hk_env_free(fs.env, l.names[i]);
  }
  hk_env_free(fs.env, l.names);
  return rc;
}
