/*
 * hk_saver_save and the write path the asynchronous hook shares from its
 * writer thread (hk__saver_write): the managed list a save leaves, planned
 * before any file is touched; the data file, the records and the state
 * file in their order; retention. The reads of the variables a save and a
 * snapshot make are saver_read.c's.
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

#include <inttypes.h>
#include <string.h>

#define SAVE__ON_WRITER_THREAD HK__SAVE_ON_WRITER_THREAD

/* ---- save -------------------------------------------------------------------------------- */

/* The managed list a save would leave, built before any file is touched so
 * a failure (OOM included) changes nothing, and installed only after the
 * state file naming it is durable. */
typedef struct plan {
  char **paths; /* owned copies */
  double *stamps;
  size_t n;
  const char **names; /* bare names of paths, for the state file */
  char **drop;        /* owned copies: files to delete */
  size_t ndrop;
  double last_preserved;
  /* The best checkpoints after the save (owned copies, best first)
   * and whether the record on disk must change. */
  char **best;
  double *best_metric;
  size_t nbest;
  int best_changed;
  /* What the state file records as pending deletion: the basenames of
   * drop, then the recorded names whose deletion failed (borrowed). */
  const char **pending;
  size_t npending;
} plan;

static void plan_free(const hk_env *env, plan *p) {
  for (size_t i = 0; i < p->n; i++) hk_env_free(env, p->paths[i]);
  hk_env_free(env, p->paths);
  hk_env_free(env, p->stamps);
  hk_env_free(env, (void *)p->names);
  for (size_t i = 0; i < p->ndrop; i++) hk_env_free(env, p->drop[i]);
  hk_env_free(env, p->drop);
  for (size_t i = 0; i < p->nbest; i++) hk_env_free(env, p->best[i]);
  hk_env_free(env, p->best);
  hk_env_free(env, p->best_metric);
  hk_env_free(env, (void *)p->pending);
  memset(p, 0, sizeof *p);
}

static int plan_ranks(const plan *p, const char *path) {
  for (size_t i = 0; i < p->nbest; i++)
    if (strcmp(p->best[i], path) == 0) return 1;
  return 0;
}

/* The best list after saving `path` with `metric` (NaN: none): a
 * re-saved name loses its old rank; the new one enters when it beats the
 * worst of a full list (ties keep the older), and pushes that one out. */
static int plan_best(hk_saver *s, const char *path, double metric, plan *p) {
  const hk_env *env = senv(s);
  size_t cap = s->nbest + 1, at;
  int changed = s->best_dirty;

  p->best = hk_env_calloc(env, cap, sizeof *p->best);
  p->best_metric = hk_env_calloc(env, cap, sizeof *p->best_metric);
  if (!p->best || !p->best_metric) return 0;
  for (size_t i = 0; i < s->nbest; i++) {
    if (strcmp(s->best[i], path) == 0) {
      changed = 1;
      continue;
    }
    p->best[p->nbest] = hk_env_strdup(env, s->best[i]);
    if (!p->best[p->nbest]) return 0;
    p->best_metric[p->nbest++] = s->best_metric[i];
  }
  if (isnan(metric)) {
    p->best_changed = changed;
    return 1;
  }
  for (at = p->nbest; at > 0 && hk__saver_better(s->best_mode, metric, p->best_metric[at - 1]); at--) {}
  if ((int64_t)at >= s->best_k) {
    p->best_changed = changed;
    return 1;
  }
  memmove(p->best + at + 1, p->best + at, (p->nbest - at) * sizeof *p->best);
  memmove(p->best_metric + at + 1, p->best_metric + at, (p->nbest - at) * sizeof *p->best_metric);
  p->best[at] = hk_env_strdup(env, path);
  p->best_metric[at] = metric;
  p->nbest++;
  if (!p->best[at]) return 0;
  if ((int64_t)p->nbest > s->best_k) hk_env_free(env, p->best[--p->nbest]); /* out of the best k */
  p->best_changed = 1;
  return 1;
}

static hk_code plan_build(hk_saver *s, const char *name, double now, double metric, plan *p, hk_status *st) {
  const hk_env *env = senv(s);
  size_t cap = s->n + 1, keep_from, kept = 0;

  memset(p, 0, sizeof *p);
  p->paths = hk_env_calloc(env, cap, sizeof *p->paths);
  p->stamps = hk_env_calloc(env, cap, sizeof *p->stamps);
  p->names = hk_env_calloc(env, cap, sizeof *p->names);
  p->drop = hk_env_calloc(env, cap, sizeof *p->drop);
  if (!p->paths || !p->stamps || !p->names || !p->drop) goto oom;
  /* X leaves its old place and is appended with timestamp now. */
  for (size_t i = 0; i < s->n; i++) {
    if (strcmp(hk__path_basename(s->paths[i]), name) == 0) continue;
    p->paths[p->n] = hk_env_strdup(env, s->paths[i]);
    if (!p->paths[p->n]) goto oom;
    p->stamps[p->n++] = s->stamps[i];
  }
  p->paths[p->n] = hk__path_join(env, s->dir, name);
  if (!p->paths[p->n]) goto oom;
  p->stamps[p->n++] = now;
  p->last_preserved = s->last_preserved;
  if (s->best_k > 0 && !plan_best(s, p->paths[p->n - 1], metric, p)) goto oom;
  /* The max_to_keep newest stay, and the best ones; every
   * other entry, oldest first, is preserved or deleted. */
  keep_from = 0;
  if (!s->keep_all && s->max_to_keep > 0 && (int64_t)p->n > s->max_to_keep) keep_from = p->n - (size_t)s->max_to_keep;
  for (size_t i = 0; i < p->n; i++) {
    double t = p->stamps[i];
    if (i >= keep_from || plan_ranks(p, p->paths[i])) {
      p->paths[kept] = p->paths[i];
      p->stamps[kept++] = t;
      continue;
    }
    if (s->keep_hours > 0 && t - s->keep_hours * 3600.0 >= p->last_preserved) {
      p->last_preserved = t; /* preserved: kept forever, no longer listed */
      hk_env_free(env, p->paths[i]);
    } else {
      /* Owned, not borrowed from the list: after planning, a write reads
       * nothing of the managed list, which a restore elsewhere may replace
       * while the writer thread writes. The plan's own copy changes hands. */
      p->drop[p->ndrop++] = p->paths[i];
    }
  }
  for (size_t i = kept; i < p->n; i++) p->paths[i] = NULL;
  p->n = kept;
  for (size_t i = 0; i < p->n; i++) p->names[i] = hk__path_basename(p->paths[i]);
  return HK_OK;

oom:
  plan_free(env, p);
  return oom(st, "planning checkpoint retention");
}

/* The pending-deletion lines of the plan's state file: this save's drops,
 * then what an earlier one recorded and could not delete yet. */
static hk_code plan_pending(const hk_env *env, plan *p, const hk__pending_left *left, hk_status *st) {
  if (p->ndrop + left->ncarry == 0) return HK_OK;
  p->pending = hk_env_calloc(env, p->ndrop + left->ncarry, sizeof *p->pending);
  if (!p->pending) return oom(st, "planning checkpoint retention");
  for (size_t i = 0; i < p->ndrop; i++) p->pending[p->npending++] = hk__path_basename(p->drop[i]);
  for (size_t i = 0; i < left->ncarry; i++) {
    int dup = 0;
    for (size_t j = 0; j < p->npending && !dup; j++) dup = strcmp(p->pending[j], left->carry[i]) == 0;
    for (size_t j = 0; j < p->n && !dup; j++) dup = strcmp(p->names[j], left->carry[i]) == 0;
    if (!dup) p->pending[p->npending++] = left->carry[i];
  }
  return HK_OK;
}

static void plan_install(hk_saver *s, plan *p) {
  hk__saver_free_list(s);
  s->paths = p->paths;
  s->stamps = p->stamps;
  s->n = p->n;
  s->last_preserved = p->last_preserved;
  p->paths = NULL;
  p->stamps = NULL;
  p->n = 0;
  if (s->best_k > 0) {
    hk__saver_free_best(s);
    s->best = p->best;
    s->best_metric = p->best_metric;
    s->nbest = p->nbest;
    if (p->best_changed) s->best_on_disk = 1; /* written before the state file */
    s->best_dirty = 0;
    p->best = NULL;
    p->best_metric = NULL;
    p->nbest = 0;
  }
  plan_free(senv(s), p);
}

/* The best record for the plan's list, before the state file that
 * relies on it. */
static hk_code write_best(hk_saver *s, const char *dir, const char *const *best, const double *metric, size_t n,
                          hk_status *st) {
  return hk__best_write(senv(s), dir, s->latest_filename, s->best_mode, best, metric, n, st);
}

/* Best-k retention, after a failed save that may have put its record in place (the
 * rename done, the directory fsync failed): the record the directory held
 * before, or none (best effort, logged; a record that stays is harmless:
 * it ranks only what the state file lists, and the next save rewrites
 * it). */
static void restore_best(hk_saver *s, const hk__fs *fs, const char *dir) {
  const hk_env *env = senv(s);
  hk_status why = HK_STATUS_INIT;
  hk_code rc;
  if (s->best_on_disk) {
    rc = write_best(s, dir, (const char *const *)s->best, s->best_metric, s->nbest, &why);
  } else {
    char *name = hk__asprintf(env, "%s" HK__BEST_SUFFIX, s->latest_filename);
    char *path = name ? hk__path_join(env, dir, name) : NULL;
    rc = path ? hk__fs_unlink(fs, path, &why) : hk_status_set(&why, HK_RESOURCE_EXHAUSTED, "out of memory");
    if (rc == HK_NOT_FOUND) rc = HK_OK;
    if (rc == HK_OK) rc = hk__fs_sync_dir(fs, dir, &why);
    hk_env_free(env, name);
    hk_env_free(env, path);
  }
  if (rc != HK_OK) {
    hk_env_log(env, HK_LOG_WARNING, "Ignoring: %s", why.message);
    s->best_dirty = 1;
  }
}

/* NOT_FOUND (absent) and OK (present) are answers; anything else is an
 * error the save must not guess about, since it decides what a failure
 * may remove. */
static hk_code probe(const hk__fs *fs, const char *path, int *exists, hk_status *st) {
  hk_fs_stat sb;
  hk_status why = HK_STATUS_INIT;
  hk_code rc = hk__fs_stat(fs, path, &sb, &why);
  *exists = rc == HK_OK;
  if (rc == HK_OK || rc == HK_NOT_FOUND) return HK_OK;
  hk__status_copy(st, &why);
  return rc;
}

/* Best-effort removal of a file this save created under a new name. */
static void remove_created(const hk__fs *fs, const char *path) {
  hk_status why = HK_STATUS_INIT;
  if (hk__fs_unlink(fs, path, &why) != HK_OK && why.code != HK_NOT_FOUND)
    hk_env_log(fs->env, HK_LOG_WARNING, "Could not remove %s after a failed save: %s", path, why.message);
}

/* Remove a file, logging a failure (a missing one too, unless quiet_missing). */
static void remove_ignoring(const hk__fs *fs, const char *path, int quiet_missing) {
  hk_status why = HK_STATUS_INIT;
  if (hk__fs_unlink(fs, path, &why) == HK_OK) return;
  if (quiet_missing && why.code == HK_NOT_FOUND) return;
  hk_env_log(fs->env, HK_LOG_WARNING, "Ignoring: %s", why.message);
}

/* A failed state write may have renamed the new state file into
 * place before its directory fsync failed; put back the list it replaced so
 * the directory holds what it held before. Returns nonzero when the state
 * file on disk is known not to name `name` any more, durably: only then may
 * the caller remove the files of `name`. On zero they stay, so whatever
 * state file survives names a checkpoint that exists. */
static int rollback_state(hk_saver *s, const hk__fs *fs, const char *name, const hk__pending_left *left) {
  const hk_env *env = senv(s);
  hk__state now;
  hk_status why = HK_STATUS_INIT;
  hk_code rc;
  int replaced;

  memset(&now, 0, sizeof now);
  rc = hk__state_read(env, s->dir, s->latest_filename, &now, &why);
  /* Absent, or malformed (the save writes only well-formed files): the
   * new state file is not in place. Other errors leave it unknown. */
  if (rc == HK_NOT_FOUND || rc == HK_DATA_LOSS) return 1;
  if (rc != HK_OK) {
    hk_env_log(env, HK_LOG_WARNING,
               "Keeping checkpoint %s after its failed save: cannot tell whether the state file %s/%s names it: %s",
               name, s->dir, s->latest_filename, why.message);
    return 0;
  }
  replaced = now.model && strcmp(now.model, name) == 0 &&
             !(s->n > 0 && strcmp(hk__path_basename(s->paths[s->n - 1]), name) == 0);
  hk__state_clear(env, &now);
  if (!replaced) return 1;
  if (s->n > 0) {
    const char **names = hk_env_calloc(env, s->n, sizeof *names);
    if (names) {
      for (size_t i = 0; i < s->n; i++) names[i] = hk__path_basename(s->paths[i]);
      /* What the replaced file recorded is deleted durably by now (the data
       * file's directory fsync came after), except what failed. */
      rc = hk__state_write(env, s->dir, s->latest_filename, names, s->stamps, s->n, s->last_preserved,
                           (const char *const *)left->carry, left->ncarry, &why);
      hk_env_free(env, (void *)names);
      if (rc == HK_OK) return 1; /* written atomically, directory synced */
    }
  } else if (!s->state_seen) {
    char *path = hk__path_join(env, s->dir, s->latest_filename);
    /* The removal is durable only once the directory is synced. */
    rc = path ? hk__fs_unlink(fs, path, &why) : HK_RESOURCE_EXHAUSTED;
    if (rc == HK_OK) rc = hk__fs_sync_dir(fs, s->dir, &why);
    hk_env_free(env, path);
    if (rc == HK_OK) return 1;
  }
  hk_env_log(env, HK_LOG_WARNING,
             "The state file %s/%s may name %s, whose save failed; its files are kept so every checkpoint the state "
             "file names exists.",
             s->dir, s->latest_filename, name);
  return 0;
}

hk_code hk__saver_check_save_path(hk_saver *s, const char *save_path, int64_t step, hk_status *st) {
  const char *base = hk__path_basename(save_path);
  if (!hk__valid_name(base))
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "The basename '%s' of save_path %s is not a valid checkpoint name (1-255 bytes, no '/', "
                         "'\\', '\"', control bytes or '..', not '.')",
                         base, save_path);
  if (step == HK_UNSET_STEPS && strcmp(base, s->latest_filename) == 0)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "'latest_filename' collides with 'save_path': '%s' and '%s'",
                         s->latest_filename, save_path);
  return HK_OK;
}

static char *make_prefix(hk_saver *s, const char *save_path, int64_t step) {
  if (step == HK_UNSET_STEPS) return hk_env_strdup(senv(s), save_path);
  return s->pad_step_number ? hk__asprintf(senv(s), "%s-%08" PRId64, save_path, step)
                            : hk__asprintf(senv(s), "%s-%" PRId64, save_path, step);
}

char *hk__saver_prefix(hk_saver *saver, const char *save_path, int64_t step) {
  return saver && save_path ? make_prefix(saver, save_path, step) : NULL;
}

/* Everything a save does once the variables are in hand (recorded
 * deletions, stale temporaries, data file and graph, best record, state
 * file, retention's deletions). */
/* The data file's part when no writer is given: the single data file. */
static void remove_data(const hk__data_writer *dw, const hk__fs *fs, const char *data, const char *prefix) {
  if (dw)
    dw->remove(dw->user, prefix);
  else
    remove_created(fs, data);
}

hk_code hk__saver_write_with(hk_saver *s, const char *save_path, int64_t name_step, int64_t record_step, unsigned flags,
                             double now, const hk__ckpt_tensor *tensors, size_t ntensors, const char *graph,
                             size_t graph_len, const hk__data_writer *dw, char **prefix_out, hk_status *st) {
  const hk_env *env = senv(s);
  int manage = !(flags & HK_SAVE_NO_STATE);
  int write_graph = (flags & HK_SAVE_META) && graph;
  char *prefix = NULL, *dir = NULL, *data = NULL, *graphpath = NULL; /* graphpath: <prefix>.graph.txt */
  const char *name;
  int data_existed = 0, graph_existed = 0, planned = 0, best_written = 0;
  /* The metric given for this save, consumed by it. */
  double metric = s->have_metric ? s->metric : NAN;
  hk_fs_stat sb;
  hk__fs fs;
  plan p;
  hk__pending_left left;
  hk_code rc;

  s->have_metric = 0;
  if (prefix_out) *prefix_out = NULL;
  memset(&p, 0, sizeof p);
  memset(&left, 0, sizeof left);
  hk__fs_init(&fs, env);
  rc = hk__saver_check_save_path(s, save_path, name_step, st);
  if (rc != HK_OK) return rc;
  prefix = make_prefix(s, save_path, name_step);
  dir = hk__path_dirname(env, save_path);
  data = prefix ? hk__asprintf(env, "%s" DATA_EXT, prefix) : NULL;
  graphpath = prefix ? hk__asprintf(env, "%s" GRAPH_EXT, prefix) : NULL;
  if (!prefix || !dir || !data || !graphpath) {
    rc = oom(st, "saving a checkpoint");
    goto done;
  }
  name = hk__path_basename(prefix);
  if (!hk__valid_name(name)) {
    rc = hk_status_set(st, HK_INVALID_ARGUMENT, "Checkpoint name is not a valid name: '%s' (from save_path %s)", name,
                       save_path);
    goto done;
  }
  if (strcmp(name, s->latest_filename) == 0) {
    rc = hk_status_set(st, HK_INVALID_ARGUMENT,
                       "Save path '%s' conflicts with path used for checkpoint state.  Please use a different save "
                       "path.",
                       prefix);
    goto done;
  }
  /* The Saver never creates directories. */
  {
    hk_status why = HK_STATUS_INIT;
    memset(&sb, 0, sizeof sb);
    rc = hk__fs_stat(&fs, dir, &sb, &why);
    if (rc == HK_NOT_FOUND || (rc == HK_OK && !sb.is_dir)) {
      rc = hk_status_set(st, HK_NOT_FOUND, "Parent directory of %s doesn't exist, can't save.", save_path);
      goto done;
    }
    if (rc != HK_OK) {
      hk__status_copy(st, &why);
      goto done;
    }
  }
  /* Deletions a crash may have undone, before our own work — and before a
   * recovery that adopts unlisted checkpoints, which must not take in the
   * ones a record is about to delete: an earlier version's record, then
   * the state file's. */
  rc = hk__pending_finish(env, dir, s->latest_filename, st);
  if (rc == HK_OK) {
    int own = s->dir && strcmp(s->dir, dir) == 0;
    rc = hk__pending_state_finish(env, dir, s->latest_filename, name, own ? s->paths : NULL, own ? s->n : 0, manage,
                                  &left, st);
  }
  /* A managed save's trainer (the only one, under the directory lock) owns
   * the managed form's temporaries; any save its own target's. */
  if (rc == HK_OK)
    rc = hk__remove_stale_tmp(env, dir, s->latest_filename, manage ? hk__path_basename(save_path) : NULL, name, st);
  if (rc != HK_OK) goto done;
  if (manage) {
    if (!s->dir || strcmp(s->dir, dir) != 0) {
      rc = hk__saver_recover_list(s, dir, now, hk__path_basename(save_path), st);
      if (rc != HK_OK) goto done;
    } else if (s->adopt_pending) {
      /* A recovery for a restore adopted nothing: this save does, knowing
       * the basename whose checkpoints it manages. */
      rc = hk__saver_adopt_after_restore(s, dir, hk__path_basename(save_path), now, st);
      if (rc != HK_OK) goto done;
    }
    if (s->best_k > 0 && !s->best_loaded) {
      rc = hk__saver_best_recover(s, dir, st);
      if (rc != HK_OK) goto done;
    }
    rc = plan_build(s, name, now, metric, &p, st);
    if (rc != HK_OK) goto done;
    planned = 1;
    rc = plan_pending(env, &p, &left, st);
    if (rc != HK_OK) goto done;
  }
  rc = dw ? dw->existed(dw->user, prefix, &data_existed, st) : probe(&fs, data, &data_existed, st);
  if (rc == HK_OK && write_graph) rc = probe(&fs, graphpath, &graph_existed, st);
  if (rc != HK_OK) goto done;

  if (dw)
    rc = dw->write(dw->user, prefix, st);
  else
    rc = hk__ckpt_write(env, data, record_step, s->gs_name, tensors, ntensors,
                        (flags & SAVE__ON_WRITER_THREAD ? 0u : (unsigned)HK__CKPT_WRITE_THREAD) |
                            (s->allow_non_finite ? (unsigned)HK__CKPT_WRITE_NON_FINITE : 0u),
                        st);
  if (rc != HK_OK) {
    if (!data_existed) remove_data(dw, &fs, data, prefix);
    goto done;
  }
  if (write_graph) {
    rc = hk__write_file_atomic(env, graphpath, graph, graph_len, st);
    if (rc != HK_OK) {
      if (!graph_existed) remove_created(&fs, graphpath);
      if (!data_existed) remove_data(dw, &fs, data, prefix);
      goto done;
    }
  }
  if (planned && p.best_changed) {
    /* Durable before the state file that keeps its checkpoints. */
    rc = write_best(s, dir, (const char *const *)p.best, p.best_metric, p.nbest, st);
    if (rc != HK_OK) {
      restore_best(s, &fs, dir);
      if (write_graph && !graph_existed) remove_created(&fs, graphpath);
      if (!data_existed) remove_data(dw, &fs, data, prefix);
      goto done;
    }
    best_written = 1;
  }
  if (manage) {
    /* Records what retention is about to delete: the same fsyncs. */
    rc = hk__state_write(env, dir, s->latest_filename, p.names, p.stamps, p.n, p.last_preserved, p.pending, p.npending,
                         st);
    if (rc != HK_OK) {
      /* The ranking the previous state file goes with (best effort;
       * a record that names what a state file does not list is harmless). */
      if (best_written) restore_best(s, &fs, dir);
      /* The previous state file first, then the new files. */
      if (rollback_state(s, &fs, name, &left)) {
        if (write_graph && !graph_existed) remove_created(&fs, graphpath);
        if (!data_existed) remove_data(dw, &fs, data, prefix);
      }
      goto done;
    }
    /* The new state is durable: now, and only now, retention deletes. No
     * directory fsync: the state file records the names until the next
     * save's data-file commit has made these unlinks durable, and that save
     * deletes again whatever a crash brought back. A deletion that fails
     * stays recorded, so the next save tries it again. */
    for (size_t i = 0; i < p.ndrop; i++) {
      char *d = hk__asprintf(env, "%s" DATA_EXT, p.drop[i]);
      char *g = hk__asprintf(env, "%s" GRAPH_EXT, p.drop[i]);
      char *m = hk__asprintf(env, "%s" LEGACY_META_EXT, p.drop[i]);
      if (d) {
        hk_status why = HK_STATUS_INIT;
        if (hk__fs_unlink(&fs, d, &why) != HK_OK) {
          int removed = 0, failed = 0;
          hk_status why2 = HK_STATUS_INIT;
          /* No data file: a sharded checkpoint, its index and every shard. */
          if (why.code == HK_NOT_FOUND &&
              hk__shard_remove_files(&fs, dir, hk__path_basename(p.drop[i]), &removed, &failed, &why2) != HK_OK)
            hk_env_log(env, HK_LOG_WARNING, "Ignoring: %s", why2.message);
          if (why.code != HK_NOT_FOUND || (!removed && !failed))
            hk_env_log(env, HK_LOG_WARNING, "Ignoring: %s", why.message);
        }
      }
      if (g) remove_ignoring(&fs, g, 1);
      if (m) remove_ignoring(&fs, m, 1);
      if (!d || !g || !m) hk_env_log(env, HK_LOG_WARNING, "Ignoring: out of memory deleting checkpoint %s", p.drop[i]);
      hk_env_free(env, d);
      hk_env_free(env, g);
      hk_env_free(env, m);
    }
    plan_install(s, &p);
    planned = 0;
  }
  if (prefix_out) {
    *prefix_out = prefix;
    prefix = NULL;
  }

done:
  if (planned) plan_free(env, &p);
  hk__pending_left_clear(env, &left);
  hk_env_free(env, prefix);
  hk_env_free(env, dir);
  hk_env_free(env, data);
  hk_env_free(env, graphpath);
  return rc;
}

hk_code hk__saver_write(hk_saver *saver, const char *save_path, int64_t step, unsigned flags, double now,
                        const hk__ckpt_tensor *tensors, size_t ntensors, char **prefix, hk_status *st) {
  if (prefix) *prefix = NULL;
  if (!saver) return hk_status_set(st, HK_INVALID_ARGUMENT, "saver is NULL");
  if (!save_path) return hk_status_set(st, HK_INVALID_ARGUMENT, "save_path is NULL");
  if (!tensors && ntensors > 0) return hk_status_set(st, HK_INVALID_ARGUMENT, "tensors is NULL");
  /* The writer thread writes no graph description: it would have to ask
   * the executor from a thread other than the training thread. */
  if (saver->group)
    return hk__shard_write(saver, save_path, step, step == HK_UNSET_STEPS ? 0 : step,
                           (flags & ~(unsigned)HK_SAVE_META) | SAVE__ON_WRITER_THREAD, now, tensors, ntensors, NULL, 0,
                           HK_OK, NULL, prefix, st);
  return hk__saver_write_with(saver, save_path, step, step == HK_UNSET_STEPS ? 0 : step,
                              (flags & ~(unsigned)HK_SAVE_META) | SAVE__ON_WRITER_THREAD, now, tensors, ntensors, NULL,
                              0, NULL, prefix, st);
}

typedef struct text_buf {
  const hk_env *env;
  char *data;
  size_t len, cap;
} text_buf;

static hk_code text_sink(void *user, const char *text, size_t len, hk_status *st) {
  text_buf *b = user;
  if (len > SIZE_MAX - b->len - 1) return oom(st, "describing the graph");
  if (b->len + len + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    char *grown;
    while (cap < b->len + len + 1) cap = cap > SIZE_MAX / 2 ? b->len + len + 1 : cap * 2;
    grown = hk_env_realloc(b->env, b->data, cap);
    if (!grown) return oom(st, "describing the graph for the " GRAPH_EXT " file");
    b->data = grown;
    b->cap = cap;
  }
  if (len > 0) memcpy(b->data + b->len, text, len);
  b->len += len;
  b->data[b->len] = '\0';
  return HK_OK;
}

/* A failed save says what failed: the checkpoint, its step and where, then
 * the cause — whose paths are shown relative to the directory the first
 * part names, so the cause's own text (the OS's) still fits the status.
 * A refused argument, or a missing parent directory (NOT_FOUND), is already about the
 * save: passed on as it is. */
hk_code hk__saver_save_failed(const char *save_path, int64_t step, hk_code rc, const hk_status *why,
                              hk_status *status) {
  const char *slash = strrchr(save_path, '/');
  size_t dl = slash ? (size_t)(slash - save_path) + 1 : 0; /* "<dir>/" */
  char cause[HK_STATUS_MESSAGE_MAX];
  size_t o = 0;
  int as_is = rc == HK_INVALID_ARGUMENT;

  if (rc == HK_NOT_FOUND) {
    hk_status c115;
    hk_status_set(&c115, rc, "Parent directory of %s doesn't exist, can't save.", save_path);
    as_is = strcmp(c115.message, why->message) == 0;
  }
  if (as_is) {
    hk__status_copy(status, why);
    return rc;
  }
  for (const char *p = why->message[0] ? why->message : hk_code_name(rc); *p && o + 1 < sizeof cause;) {
    if (dl > 1 && strncmp(p, save_path, dl) == 0) {
      p += dl;
      continue;
    }
    cause[o++] = *p++;
  }
  cause[o] = '\0';
  if (step == HK_UNSET_STEPS)
    return hk_status_set(status, rc, "Saving checkpoint into %s failed: %s", save_path, cause);
  return hk_status_set(status, rc, "Saving checkpoint for step %" PRId64 " into %s failed: %s", step, save_path, cause);
}

hk_code hk_saver_save(const char **prefix, hk_saver *saver, hk_raw_session *rs, const char *save_path, int64_t step,
                      unsigned flags, hk_status *status) {
  text_buf graph;
  int64_t record = step;
  char *out = NULL;
  hk_status pre = HK_STATUS_INIT; /* a sharded save's own failure before its collectives */
  hk_code rc;

  if (prefix) *prefix = NULL;
  if (!saver) return hk_status_set(status, HK_INVALID_ARGUMENT, "saver is NULL");
  if (!rs) return hk_status_set(status, HK_INVALID_ARGUMENT, "rs is NULL");
  if (!save_path) return hk_status_set(status, HK_INVALID_ARGUMENT, "save_path is NULL");
  if (flags & ~(unsigned)(HK_SAVE_NO_STATE | HK_SAVE_META))
    return hk_status_set(status, HK_INVALID_ARGUMENT, "flags 0x%x has bits that are not hk_save_flags", flags);
  memset(&graph, 0, sizeof graph);
  graph.env = senv(saver);
  /* With a group every rank must reach the collectives, so a failure of
   * this rank from here on is carried into them (every rank then fails
   * with it) instead of returned alone. */
  /* Refuse bad names before reading anything. */
  rc = hk__saver_check_save_path(saver, save_path, step, &pre);
  if (rc == HK_OK) rc = hk__saver_resolve_vars(saver, &pre);
  /* GS is read by a run, which would invalidate views taken before it. */
  if (rc == HK_OK && step == HK_UNSET_STEPS) {
    hk_status why = HK_STATUS_INIT;
    rc = hk_raw_session_global_step(&record, rs, &why);
    if (rc == HK_NOT_FOUND) {
      record = 0;
      rc = HK_OK;
    } else if (rc != HK_OK) {
      hk__status_copy(&pre, &why);
    }
  }
  for (size_t i = 0; rc == HK_OK && i < saver->nvars; i++) {
    saver->views[i].name = saver->var_info[i].name;
    saver->views[i].non_finite_ok = (saver->var_info[i].flags & HK_VAR_NON_FINITE_OK) != 0;
    rc = hk__saver_read_view(saver, rs, i, &saver->views[i].value, &pre);
  }
  /* HK_SAVE_META: the executor's description of its graph, beside the data
   * file as <prefix>.graph.txt (by the chief alone with a group). */
  if (rc == HK_OK && (flags & HK_SAVE_META) && (!saver->group || saver->group->rank(saver->group_user) == 0)) {
    hk_status why = HK_STATUS_INIT;
    rc = hk_executor_describe(saver->ex, text_sink, &graph, &why);
    if (rc == HK_UNIMPLEMENTED) {
      if (!saver->graph_logged)
        hk_env_log(senv(saver), HK_LOG_INFO,
                   "The executor cannot describe its graph: no " GRAPH_EXT " file is written.");
      saver->graph_logged = 1;
      hk_env_free(graph.env, graph.data);
      memset(&graph, 0, sizeof graph);
      rc = HK_OK;
    } else if (rc != HK_OK) {
      hk_env_free(graph.env, graph.data);
      memset(&graph, 0, sizeof graph);
      hk__status_copy(&pre, &why);
    } else if (!graph.data) {
      graph.data = hk_env_strdup(graph.env, "");
      if (!graph.data) rc = oom(&pre, "describing the graph for the " GRAPH_EXT " file");
    }
  }
  if (rc != HK_OK && !saver->group) {
    hk__status_copy(status, &pre);
    return rc;
  }
  {
    hk_status why = HK_STATUS_INIT;
    if (saver->group)
      rc = hk__shard_write(saver, save_path, step, record, flags, hk_env_wall(senv(saver)), saver->views, saver->nvars,
                           graph.data, graph.len, rc, &pre, &out, &why);
    else
      rc = hk__saver_write_with(saver, save_path, step, record, flags, hk_env_wall(senv(saver)), saver->views,
                                saver->nvars, graph.data, graph.len, NULL, &out, &why);
    hk_env_free(senv(saver), graph.data);
    if (rc != HK_OK) return hk__saver_save_failed(save_path, step, rc, &why, status);
  }
  hk_env_free(senv(saver), saver->prefix);
  saver->prefix = out;
  if (prefix) *prefix = out;
  return HK_OK;
}

hk_code hk_saver_fail_save(hk_saver *saver, const char *save_path, int64_t step, hk_code code, const char *message,
                           hk_status *status) {
  hk_status pre = HK_STATUS_INIT, why = HK_STATUS_INIT;
  hk_code rc;

  if (!saver) return hk_status_set(status, HK_INVALID_ARGUMENT, "saver is NULL");
  if (!save_path)
    rc = hk_status_set(&pre, HK_INVALID_ARGUMENT, "save_path is NULL");
  else if (code == HK_OK)
    rc = hk_status_set(&pre, HK_INVALID_ARGUMENT, "code is HK_OK: a failed save needs the code of its failure");
  else
    rc = hk_status_set(&pre, code, "%s", message && message[0] ? message : hk_code_name(code));
  if (!saver->group) {
    hk__status_copy(status, &pre);
    return rc;
  }
  /* This rank's failure goes into the first exchange, as a failure of
   * hk_saver_save() before its shard does: every rank fails there. */
  rc = hk__shard_write(saver, save_path ? save_path : "", step, step == HK_UNSET_STEPS ? 0 : step, 0, 0.0, NULL, 0,
                       NULL, 0, rc, &pre, NULL, &why);
  if (!save_path) {
    hk__status_copy(status, &why);
    return rc;
  }
  return hk__saver_save_failed(save_path, step, rc, &why, status);
}
