/*
 * The Saver's managed list: recovered from a directory's state file, with
 * the checkpoints it does not list adopted, and best-k retention's record
 * of the best checkpoints kept beside the newest.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "ckpt/ckpt.h"
#include "ckpt/ckpt_internal.h"
#include "ckpt/saver_internal.h"
#include "ckpt/shard.h"
#include "util/common.h"
#include "util/fs.h"
#include "util/path.h"

#include <string.h>

/* ---- recovery of the managed list ------------------------------------------------------ */

/* `now` is the wall time the caller read: recovery may run on the
 * asynchronous hook's writer thread, which must not call the env's clocks
 * (it calls only the allocator, the log sink and the file system).
 * `base`: the basename of the save path of the save that recovers, whose
 * unlisted checkpoints are adopted; NULL (a recovery for a
 * restore) adopts nothing and leaves that to the next managed save
 * (hk__saver_adopt_after_restore). */
hk_code hk__saver_recover_list(hk_saver *s, const char *dir, double now, const char *base, hk_status *st) {
  const hk_env *env = senv(s);
  hk__fs fs;
  hk__state state;
  hk_status why = HK_STATUS_INIT;
  char **paths = NULL;
  double *stamps = NULL;
  size_t n = 0;
  double lp = now - 1;
  int seen = 1, readable = 0;
  char *dircopy;
  hk_code rc;

  hk__fs_init(&fs, env);
  memset(&state, 0, sizeof state);
  dircopy = hk_env_strdup(env, dir);
  if (!dircopy) return oom(st, "recovering the managed checkpoints");
  rc = hk__state_read(env, dir, s->latest_filename, &state, &why);
  if (rc == HK_RESOURCE_EXHAUSTED) {
    hk_env_free(env, dircopy);
    hk__status_copy(st, &why);
    return rc;
  }
  if (rc == HK_NOT_FOUND) {
    seen = 0;
  } else if (rc != HK_OK) {
    /* Treated as absent, so nothing is ever deleted because of it. */
    hk_env_log(env, HK_LOG_WARNING, "Ignoring the checkpoint state file %s/%s: %s", dir, s->latest_filename,
               why.message);
  } else {
    readable = 1;
    if (state.n > 0) {
      paths = hk_env_calloc(env, state.n, sizeof *paths);
      stamps = hk_env_calloc(env, state.n, sizeof *stamps);
      if (!paths || !stamps) goto oom;
    }
    for (size_t i = 0; i < state.n; i++) {
      hk_fs_stat sb;
      char *path = hk__path_join(env, dir, state.names[i]);
      char *data = path ? hk__asprintf(env, "%s" DATA_EXT, path) : NULL;
      double t = now;
      hk_status sw = HK_STATUS_INIT;
      if (!data) {
        hk_env_free(env, path);
        goto oom;
      }
      memset(&sb, 0, sizeof sb);
      rc = hk__fs_stat(&fs, data, &sb, &sw);
      hk_env_free(env, data);
      if (rc == HK_NOT_FOUND) {
        /* A sharded checkpoint exists by its index. */
        char *index = hk__shard_index_path(env, path);
        if (!index) {
          hk_env_free(env, path);
          goto oom;
        }
        hk_status_clear(&sw);
        rc = hk__fs_stat(&fs, index, &sb, &sw);
        hk_env_free(env, index);
      }
      if (rc == HK_NOT_FOUND || (rc == HK_OK && sb.is_dir)) {
        hk_env_log(env, HK_LOG_INFO, "Checkpoint %s listed in %s/%s has no data file; no longer managed.", path, dir,
                   s->latest_filename);
        hk_env_free(env, path);
        continue;
      }
      /* Another stat error: keep the entry; it stays subject to retention. */
      if (state.timestamps) {
        t = state.timestamps[i];
      } else if (rc == HK_OK) {
        t = sb.mtime;
      }
      if (!(t <= now)) t = now;
      paths[n] = path;
      stamps[n] = t;
      n++;
    }
    if (!isnan(state.last_preserved)) lp = state.last_preserved;
    if (now < lp) {
      hk_env_log(env, HK_LOG_WARNING,
                 "Clock returned a value %f seconds behind the last preserved checkpoint timestamp.", lp - now);
      lp = now;
      /* Every recovered checkpoint counts as preserved: kept, unlisted. */
      for (size_t i = 0; i < n; i++) hk_env_free(env, paths[i]);
      n = 0;
    }
  }
  if (base) {
    rc = hk__adopt_into(senv(s), dir, base, now, s->keep_hours > 0, readable ? &state : NULL, &paths, &stamps, &n, st);
    if (rc != HK_OK) {
      for (size_t i = 0; i < n; i++) hk_env_free(env, paths[i]);
      hk_env_free(env, paths);
      hk_env_free(env, stamps);
      hk_env_free(env, dircopy);
      hk__state_clear(env, &state);
      return rc;
    }
  }
  s->adopt_pending = base == NULL;
  hk__state_clear(env, &state);
  hk__saver_free_list(s);
  if (n == 0) {
    hk_env_free(env, paths);
    hk_env_free(env, stamps);
    paths = NULL;
    stamps = NULL;
  }
  s->paths = paths;
  s->stamps = stamps;
  s->n = n;
  s->last_preserved = lp;
  s->state_seen = seen;
  hk_env_free(env, s->dir);
  s->dir = dircopy;
  /* The best record is read against this list at the next save. */
  hk__saver_free_best(s);
  s->best_loaded = 0;
  return HK_OK;

oom:
  for (size_t i = 0; i < n; i++) hk_env_free(env, paths[i]);
  hk_env_free(env, paths);
  hk_env_free(env, stamps);
  hk_env_free(env, dircopy);
  hk__state_clear(env, &state);
  return oom(st, "recovering the managed checkpoints");
}

/* After a recovery for a restore (same directory, list recovered): the
 * adoption that recovery could not make, against the state file as it is
 * now, without recovering again (the list, its timestamps and
 * last_preserved_timestamp stay what that recovery made them). */
hk_code hk__saver_adopt_after_restore(hk_saver *s, const char *dir, const char *base, double now, hk_status *st) {
  const hk_env *env = senv(s);
  hk__state state;
  hk_status why = HK_STATUS_INIT;
  hk_code rc = hk__state_read(env, dir, s->latest_filename, &state, &why);
  if (rc == HK_RESOURCE_EXHAUSTED) {
    hk__status_copy(st, &why);
    return rc;
  }
  rc = hk__adopt_into(env, dir, base, now, s->keep_hours > 0, rc == HK_OK ? &state : NULL, &s->paths, &s->stamps, &s->n,
                      st);
  hk__state_clear(env, &state);
  if (rc == HK_OK) s->adopt_pending = 0;
  return rc;
}

hk_code hk_saver_recover(hk_saver *saver, const char *dir, hk_status *status) {
  if (!saver) return hk_status_set(status, HK_INVALID_ARGUMENT, "saver is NULL");
  if (!dir) return hk_status_set(status, HK_INVALID_ARGUMENT, "dir is NULL");
  return hk__saver_recover_list(saver, dir, hk_env_wall(senv(saver)), NULL, status);
}

void hk__saver_set_keep_all(hk_saver *saver, int on) {
  if (saver) saver->keep_all = on != 0;
}

/* ---- best-k retention ------------------------------------------------------------------ */

void hk__saver_set_best(hk_saver *saver, int64_t k, int mode) {
  if (!saver || k < 0) return;
  if (k == saver->best_k && mode == saver->best_mode) return;
  saver->best_k = k;
  saver->best_mode = mode;
  hk__saver_free_best(saver);
  saver->best_loaded = 0;
}

void hk__saver_note_metric(hk_saver *saver, double value) {
  if (!saver) return;
  saver->metric = value;
  saver->have_metric = 1;
}

/* Nonzero when a ranks strictly before b: ties keep the older first. */

static int listed(const hk_saver *s, const char *path) {
  for (size_t i = 0; i < s->n; i++)
    if (strcmp(s->paths[i], path) == 0) return 1;
  return 0;
}

/* The best checkpoints of the managed list `dir` (just recovered), from the
 * record beside its state file: those the state file still lists, in
 * metric order, at most k. A record that is missing starts an empty list;
 * one that is refused, or of the other mode, too, with a WARNING (its
 * checkpoints, still listed, are then ordinary managed ones); one that
 * cannot be read fails the save before it writes anything, as the best
 * checkpoints it protects are unknown. */
hk_code hk__saver_best_recover(hk_saver *s, const char *dir, hk_status *st) {
  const hk_env *env = senv(s);
  hk__best rec;
  char why[160];
  int malformed = 0;
  size_t n = 0;
  hk_code rc;

  hk__saver_free_best(s);
  rc = hk__best_read(env, dir, s->latest_filename, &rec, why, sizeof why, &malformed, st);
  if (rc == HK_NOT_FOUND) {
    s->best_loaded = 1;
    s->best_dirty = 0;
    s->best_on_disk = 0;
    return HK_OK;
  }
  if (rc != HK_OK) return rc;
  s->best_loaded = 1;
  s->best_dirty = 0;
  s->best_on_disk = 1;
  if (malformed || rec.mode != s->best_mode) {
    if (malformed)
      hk_env_log(env, HK_LOG_WARNING,
                 "Ignoring the best-checkpoint record %s/%s" HK__BEST_SUFFIX
                 ": %s; the checkpoints it named are kept only as max_to_keep keeps any, and the next save rewrites "
                 "it.",
                 dir, s->latest_filename, why);
    else
      hk_env_log(env, HK_LOG_WARNING,
                 "The best-checkpoint record %s/%s" HK__BEST_SUFFIX
                 " ranks checkpoints for mode %s, this Saver keeps the best for mode %s: starting a new ranking (its "
                 "checkpoints are kept only as max_to_keep keeps any).",
                 dir, s->latest_filename, rec.mode == HK_MONITOR_MAX ? "max" : "min",
                 s->best_mode == HK_MONITOR_MAX ? "max" : "min");
    hk__best_clear(env, &rec);
    s->best_dirty = 1;
    return HK_OK;
  }
  if (rec.n > 0) {
    s->best = hk_env_calloc(env, rec.n, sizeof *s->best);
    s->best_metric = hk_env_calloc(env, rec.n, sizeof *s->best_metric);
    if (!s->best || !s->best_metric) goto oom;
  }
  for (size_t i = 0; i < rec.n; i++) {
    char *path = hk__path_join(env, dir, rec.names[i]);
    size_t at;
    if (!path) goto oom;
    if (!listed(s, path)) {
      /* No longer managed (deleted, preserved): not ranked. */
      hk_env_free(env, path);
      s->best_dirty = 1;
      continue;
    }
    /* In metric order, whatever the record's order. */
    for (at = n; at > 0 && hk__saver_better(s->best_mode, rec.metrics[i], s->best_metric[at - 1]); at--) {
      s->best[at] = s->best[at - 1];
      s->best_metric[at] = s->best_metric[at - 1];
    }
    s->best[at] = path;
    s->best_metric[at] = rec.metrics[i];
    s->nbest = ++n;
  }
  hk__best_clear(env, &rec);
  /* A smaller k than the record's: the rest are ordinary from now on. */
  while ((int64_t)s->nbest > s->best_k) {
    hk_env_free(env, s->best[--s->nbest]);
    s->best_dirty = 1;
  }
  return HK_OK;

oom:
  hk__best_clear(env, &rec);
  hk__saver_free_best(s);
  s->best_loaded = 0;
  return oom(st, "reading the best checkpoints");
}
