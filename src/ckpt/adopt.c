/*
 * Checkpoints of a directory that its state file does not list: the names
 * a Saver's recovery may adopt into its managed list, so that retention
 * handles them like any other.
 *
 * Such a checkpoint is what a crash between a save's data-file rename and
 * its state-file rename leaves, or what stays of a directory whose state
 * file was lost. It has the managed form "<basename>-<digits>" of the
 * Saver's save path (the %08d padding included). Preserved checkpoints
 * (keep_checkpoint_every_n_hours) are unlisted too, and must never be
 * adopted: retention takes them off the oldest end of the list, so every
 * one of them is older, by step, than the oldest checkpoint the state file
 * still lists. The Saver's recovery (saver_recover.c) decides with that reference;
 * this file finds and describes the candidates.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "ckpt/ckpt.h"
#include "ckpt/ckpt_internal.h"
#include "ckpt/shard.h"
#include "util/fs.h"
#include "util/path.h"

#include <string.h>

#define DATA_EXT ".safetensors"

int hk__managed_step(const char *name, const char *basename, int64_t *step) {
  size_t bl = strlen(basename), n = strlen(name);
  int64_t v = 0;
  if (n < bl + 2 || strncmp(name, basename, bl) != 0 || name[bl] != '-') return 0;
  for (const char *p = name + bl + 1; *p; p++) {
    int d = *p - '0';
    if (d < 0 || d > 9 || v > (INT64_MAX - d) / 10) return 0;
    v = v * 10 + d;
  }
  if (step) *step = v;
  return 1;
}

/* A checkpoint of the managed form found in a directory. */
typedef struct adoptee {
  char *name; /* owned (env allocator): the bare name, without ".safetensors" */
  int64_t step;
  double mtime; /* of its data file (a sharded checkpoint's: of its index) */
  int sharded;  /* found by its index "<name>.shards" */
} adoptee;

typedef struct scan {
  const hk_env *env;
  const char *basename;
  adoptee *list;
  size_t n, cap;
  int oom;
} scan;

static hk_code scan_entry(void *user, const char *entry, hk_status *st) {
  scan *x = user;
  size_t n = strlen(entry), k = sizeof DATA_EXT - 1;
  char name[256];
  int64_t step;
  int sharded = n > sizeof HK__SHARD_INDEX_EXT - 1 &&
                strcmp(entry + n - (sizeof HK__SHARD_INDEX_EXT - 1), HK__SHARD_INDEX_EXT) == 0;
  (void)st;
  if (sharded) k = sizeof HK__SHARD_INDEX_EXT - 1; /* a sharded checkpoint, by its index */
  if (x->oom || n <= k || n - k > 255 || (!sharded && strcmp(entry + n - k, DATA_EXT) != 0)) return HK_OK;
  memcpy(name, entry, n - k);
  name[n - k] = '\0';
  if (!hk__valid_name(name) || !hk__managed_step(name, x->basename, &step)) return HK_OK;
  for (size_t i = 0; i < x->n; i++) /* a name with both files counts once, as a data file */
    if (strcmp(x->list[i].name, name) == 0) {
      if (!sharded) x->list[i].sharded = 0;
      return HK_OK;
    }
  if (x->n == x->cap) {
    size_t cap = x->cap ? x->cap * 2 : 8;
    adoptee *grown = hk_env_realloc(x->env, x->list, cap * sizeof *grown);
    if (!grown) {
      x->oom = 1;
      return HK_OK;
    }
    x->list = grown;
    x->cap = cap;
  }
  x->list[x->n].name = hk_env_strdup(x->env, name);
  if (!x->list[x->n].name) {
    x->oom = 1;
    return HK_OK;
  }
  x->list[x->n].step = step;
  x->list[x->n].mtime = 0;
  x->list[x->n].sharded = sharded;
  x->n++;
  return HK_OK;
}

static void adoptees_free(const hk_env *env, adoptee *list, size_t n) {
  for (size_t i = 0; i < n; i++) hk_env_free(env, list[i].name);
  hk_env_free(env, list);
}

static hk_code adopt_scan(const hk_env *env, const char *dir, const char *basename, adoptee **out, size_t *nout,
                          hk_status *st) {
  hk__fs fs;
  scan x;
  size_t kept = 0;
  hk_code rc;

  *out = NULL;
  *nout = 0;
  memset(&x, 0, sizeof x);
  x.env = env;
  x.basename = basename;
  hk__fs_init(&fs, env);
  rc = hk__fs_list(&fs, dir, scan_entry, &x, st);
  if (rc == HK_OK && x.oom)
    rc = hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory listing the checkpoints of %s", dir);
  if (rc != HK_OK) {
    adoptees_free(env, x.list, x.n);
    return rc;
  }
  /* Only regular files, with their modification times; a stat that fails
   * leaves that name out (it stays unadopted, which is always safe). */
  for (size_t i = 0; i < x.n; i++) {
    char *prefix = hk__path_join(env, dir, x.list[i].name);
    char *path = prefix ? hk__asprintf(env, "%s%s", prefix, x.list[i].sharded ? HK__SHARD_INDEX_EXT : DATA_EXT) : NULL;
    hk_fs_stat sb;
    hk_status why = HK_STATUS_INIT;
    memset(&sb, 0, sizeof sb);
    hk_env_free(env, prefix);
    if (!path) {
      adoptees_free(env, x.list, x.n);
      return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory listing the checkpoints of %s", dir);
    }
    if (hk__fs_stat(&fs, path, &sb, &why) == HK_OK && !sb.is_dir) {
      x.list[i].mtime = sb.mtime;
      x.list[kept++] = x.list[i];
    } else {
      hk_env_free(env, x.list[i].name);
    }
    hk_env_free(env, path);
  }
  /* Oldest step first; a tie (padded and unpadded forms) by name. */
  for (size_t i = 1; i < kept; i++) {
    adoptee a = x.list[i];
    size_t j = i;
    for (; j > 0 &&
           (x.list[j - 1].step > a.step || (x.list[j - 1].step == a.step && strcmp(x.list[j - 1].name, a.name) > 0));
         j--)
      x.list[j] = x.list[j - 1];
    x.list[j] = a;
  }
  if (kept == 0) {
    hk_env_free(env, x.list);
    x.list = NULL;
  }
  *out = x.list;
  *nout = kept;
  return HK_OK;
}

/* Preserved checkpoints are never taken: retention preserves from the
 * oldest end of the list, so only checkpoints newer (by step) than the
 * oldest one of that form the state file lists are adopted; without such a
 * reference, every one — unless the Saver preserves checkpoints, which
 * then cannot tell a preserved one from a lost one and adopts none. */
hk_code hk__adopt_into(const hk_env *env, const char *dir, const char *base, double now, int preserves,
                       const hk__state *state, char ***paths, double **stamps, size_t *n, hk_status *st) {
  adoptee *found = NULL;
  size_t nfound = 0, na = 0, kept = 0, j = 0, held_back = 0;
  int have_ref = 0;
  int64_t ref = 0;
  char **np = NULL, **ap = NULL;
  double *ns = NULL;
  hk_code rc = adopt_scan(env, dir, base, &found, &nfound, st);

  if (rc == HK_NOT_FOUND) return HK_OK;
  if (rc != HK_OK) return rc;
  for (size_t i = 0; state && i < state->n; i++) {
    int64_t v;
    if (hk__managed_step(state->names[i], base, &v) && (!have_ref || v < ref)) {
      ref = v;
      have_ref = 1;
    }
  }
  for (size_t i = 0; i < nfound; i++) {
    int is_listed = 0;
    for (size_t k = 0; state && k < state->n && !is_listed; k++)
      is_listed = strcmp(state->names[k], found[i].name) == 0;
    for (size_t k = 0; k < *n && !is_listed; k++)
      is_listed = strcmp(hk__path_basename((*paths)[k]), found[i].name) == 0;
    /* One the state file records as a pending deletion (still there: its
     * deletion failed) is retention's to delete, never to adopt. */
    for (size_t k = 0; state && k < state->npending && !is_listed; k++)
      is_listed = strcmp(state->pending[k], found[i].name) == 0;
    if (is_listed || (have_ref && found[i].step <= ref) || (!have_ref && preserves)) {
      if (!is_listed && !have_ref) held_back++;
      hk_env_free(env, found[i].name);
      continue;
    }
    found[na++] = found[i];
  }
  if (held_back > 0)
    hk_env_log(env, HK_LOG_WARNING,
               "Not adopting %zu checkpoint(s) %s/%s-<step> that no state file lists: this Saver preserves checkpoints "
               "(keep_checkpoint_every_n_hours), and without a state file listing one of them it cannot tell a "
               "preserved checkpoint from a lost one; they are kept, outside retention.",
               held_back, dir, base);
  if (na == 0) goto done;
  np = hk_env_calloc(env, *n + na, sizeof *np);
  ns = hk_env_calloc(env, *n + na, sizeof *ns);
  ap = hk_env_calloc(env, na, sizeof *ap);
  if (!np || !ns || !ap) goto oom;
  for (size_t k = 0; k < na; k++)
    if (!(ap[k] = hk__path_join(env, dir, found[k].name))) goto oom;
  /* Nothing fails from here: the merge moves pointers. */
  for (size_t i = 0; i <= *n; i++) {
    int64_t step = 0;
    int ordered = i < *n && hk__managed_step(hk__path_basename((*paths)[i]), base, &step);
    /* The adopted ones older than this entry go before it; at the end, the rest. */
    while (j < na && (i == *n || (ordered && found[j].step < step))) {
      hk_env_log(env, HK_LOG_INFO,
                 "Adopting checkpoint %s, which the state file does not list (a save interrupted before its state "
                 "file, or a state file that was lost); retention now manages it.",
                 ap[j]);
      np[kept] = ap[j];
      ns[kept++] = found[j].mtime <= now ? found[j].mtime : now;
      ap[j++] = NULL;
    }
    if (i < *n) {
      np[kept] = (*paths)[i];
      ns[kept++] = (*stamps)[i];
    }
  }
  hk_env_free(env, *paths);
  hk_env_free(env, *stamps);
  *paths = np;
  *stamps = ns;
  *n = kept;
  hk_env_free(env, ap);
done:
  adoptees_free(env, found, na);
  return HK_OK;

oom:
  for (size_t k = 0; ap && k < na; k++) hk_env_free(env, ap[k]);
  hk_env_free(env, ap);
  hk_env_free(env, np);
  hk_env_free(env, ns);
  adoptees_free(env, found, na);
  return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory adopting the unlisted checkpoints of %s", dir);
}
