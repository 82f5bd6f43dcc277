/*
 * hooked — the Saver (contract group M, D4–D6), latest_checkpoint and
 * restore with fallback (D5), and the checkpoint helpers of H34.
 *
 * Variables are reached only through the executor interface (count, info,
 * read, assign, and the optional storage a restore reads straight into),
 * so any executor gets checkpoints. hk_saver_save() reads
 * zero-copy views of the variables and hands them to the same write path
 * the asynchronous hook uses from its writer thread (hk__saver_write), so
 * both share one implementation of D4's order and D6's retention.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "ckpt/ckpt.h"
#include "util/common.h"
#include "util/fs.h"
#include "util/path.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(_M_X64)
#include <emmintrin.h> /* _mm_sfence after streamed snapshot copies */
#define HAVE_STREAM_COPY 1
#endif

#define DEFAULT_LATEST "checkpoint"
#define DATA_EXT ".safetensors"
/* HK_SAVE_META's companion: hooked's own text description of the graph (not
 * a TensorFlow MetaGraphDef, so not named like one). */
#define GRAPH_EXT ".graph.txt"
/* What that companion was called before; retention and
 * hk_remove_checkpoint still remove it. */
#define LEGACY_META_EXT ".meta"
/* Stack room for "<prefix>.safetensors" in the helpers that do not allocate. */
#define PATH_BUF 4096
#define SNAPSHOT_ALIGN 64
/* Internal flag of write_impl: the call runs on the asynchronous hook's
 * writer thread, beside training, so it computes CRCs on no second thread. */
#define SAVE__ON_WRITER_THREAD 0x80000000u

struct hk_saver {
  hk_env env;
  hk_executor *ex;
  int64_t max_to_keep;
  int keep_all;      /* the check-resume mode: max_to_keep 0 for every save */
  double keep_hours; /* 0: off */
  int pad_step_number;
  int allow_non_finite; /* write NaN and infinities of every variable as they are */
  char *latest_filename;
  /* Variables: resolved at hk_saver_new for a var_list, else at first use. */
  int resolved;
  size_t nvars;
  size_t *var_index;
  hk_variable_info *var_info;
  hk__ckpt_tensor *views; /* scratch of nvars for hk_saver_save */
  /* The managed list (D6) of directory `dir`; dir NULL until recovered. */
  char *dir;
  char **paths; /* "<dir>/<name>", oldest first */
  double *stamps;
  size_t n;
  double last_preserved;
  int state_seen;    /* recovery found a state file, readable or not */
  int adopt_pending; /* recovered without a save path: the next managed save adopts the unlisted */
  int explicit_vars; /* a var_list was given (C112): H27's unrestored tensors are logged at DEBUG */
  char *prefix;      /* the last hk_saver_save's prefix */
  int graph_logged;  /* "cannot describe its graph" was logged */
  /* The executor's global step (C143) when it is one of the variables:
   * its name (var_info's), which a checkpoint's header names as the tensor
   * holding its step (checkpoint-format.md); NULL otherwise. */
  const char *gs_name;
  /* Best-k retention (H45): k (0: off) and mode; the best managed
   * checkpoints of `dir`, best first ("<dir>/<name>", each also in paths),
   * with their metrics, read from the best record at the first save after
   * a recovery (best_loaded); best_dirty: the record on disk differs. */
  int64_t best_k;
  int best_mode;
  int best_loaded;
  int best_dirty;
  int best_on_disk; /* the record exists (as read, or written by this Saver) */
  char **best;
  double *best_metric;
  size_t nbest;
  int have_metric; /* hk__saver_note_metric: the next save's metric */
  double metric;
};

static const hk_env *senv(const hk_saver *s) { return &s->env; }

/* ---- options and lifetime ----------------------------------------------------------- */

/* The size of each version of the options: a program built against an
 * older header has only that much. */
static size_t options_size(uint32_t version) {
  return version >= 2 ? sizeof(hk_saver_options) : offsetof(hk_saver_options, allow_non_finite);
}

hk_code hk_saver_options_init(hk_saver_options *opts, uint32_t version) {
  static const hk_saver_options init = HK_SAVER_OPTIONS_INIT;
  if (!opts || version == 0 || version > HK_SAVER_OPTIONS_VERSION) return HK_INVALID_ARGUMENT;
  memcpy(opts, &init, options_size(version));
  opts->version = version;
  return HK_OK;
}

static void free_best(hk_saver *s) {
  for (size_t i = 0; i < s->nbest; i++) hk_env_free(senv(s), s->best[i]);
  hk_env_free(senv(s), s->best);
  hk_env_free(senv(s), s->best_metric);
  s->best = NULL;
  s->best_metric = NULL;
  s->nbest = 0;
}

static void free_list(hk_saver *s) {
  for (size_t i = 0; i < s->n; i++) hk_env_free(senv(s), s->paths[i]);
  hk_env_free(senv(s), s->paths);
  hk_env_free(senv(s), s->stamps);
  s->paths = NULL;
  s->stamps = NULL;
  s->n = 0;
}

void hk_saver_free(hk_saver *s) {
  hk_env env;
  if (!s) return;
  env = s->env;
  free_list(s);
  free_best(s);
  hk_env_free(&env, s->dir);
  hk_env_free(&env, s->prefix);
  hk_env_free(&env, s->latest_filename);
  hk_env_free(&env, s->var_index);
  hk_env_free(&env, s->var_info);
  hk_env_free(&env, s->views);
  hk_env_free(&env, s);
}

static hk_code oom(hk_status *st, const char *what) {
  return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory %s", what);
}

/* Fill var_info from var_index (already set) and size the views. */
static hk_code describe_vars(hk_saver *s, hk_status *st) {
  hk_code rc;
  if (s->nvars > 0) {
    s->var_info = hk_env_calloc(senv(s), s->nvars, sizeof *s->var_info);
    s->views = hk_env_calloc(senv(s), s->nvars, sizeof *s->views);
    if (!s->var_info || !s->views) return oom(st, "describing the Saver's variables");
  }
  for (size_t i = 0; i < s->nvars; i++) {
    rc = hk_executor_variable_info(s->ex, s->var_index[i], &s->var_info[i], st);
    if (rc != HK_OK) return rc;
  }
  s->gs_name = NULL;
  {
    size_t gs;
    if (hk_executor_global_step(s->ex, NULL, &gs, NULL) == HK_OK)
      for (size_t i = 0; i < s->nvars && !s->gs_name; i++)
        if (s->var_index[i] == gs) s->gs_name = s->var_info[i].name;
  }
  return HK_OK;
}

static void unresolve(hk_saver *s) {
  hk_env_free(senv(s), s->var_index);
  hk_env_free(senv(s), s->var_info);
  hk_env_free(senv(s), s->views);
  s->var_index = NULL;
  s->var_info = NULL;
  s->views = NULL;
  s->nvars = 0;
  s->resolved = 0;
  s->gs_name = NULL;
}

/* C112: without a var_list, every global variable, resolved at first use so
 * variables built after the Saver are included. */
static hk_code resolve_vars(hk_saver *s, hk_status *st) {
  size_t count, k = 0;
  hk_variable_info info;
  hk_code rc;

  if (s->resolved) return HK_OK;
  count = hk_executor_variable_count(s->ex);
  if (count > 0) {
    s->var_index = hk_env_calloc(senv(s), count, sizeof *s->var_index);
    if (!s->var_index) return oom(st, "listing the executor's variables");
  }
  for (size_t i = 0; i < count; i++) {
    rc = hk_executor_variable_info(s->ex, i, &info, st);
    if (rc != HK_OK) {
      unresolve(s);
      return rc;
    }
    if (!(info.flags & HK_VAR_LOCAL)) s->var_index[k++] = i;
  }
  s->nvars = k;
  rc = describe_vars(s, st);
  if (rc != HK_OK) {
    unresolve(s);
    return rc;
  }
  s->resolved = 1;
  return HK_OK;
}

static hk_code check_options(const hk_saver_options *o, hk_status *st) {
  double h = o->keep_checkpoint_every_n_hours;
  if (o->version == 0 || o->version > HK_SAVER_OPTIONS_VERSION)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "opts->version %u is not supported (expected 1..%d)",
                         (unsigned)o->version, HK_SAVER_OPTIONS_VERSION);
  if (!o->executor) return hk_status_set(st, HK_INVALID_ARGUMENT, "opts->executor is required");
  if (o->max_to_keep < 0)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "max_to_keep must be >= 0 (0 keeps every checkpoint), got %" PRId64,
                         o->max_to_keep);
  if (!hk_secs_is_unset(h) && !(h >= 0 && h < HUGE_VAL))
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "keep_checkpoint_every_n_hours must be finite and >= 0 (or unset), got %g", h);
  if (o->latest_filename && !hk__valid_name(o->latest_filename))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "'latest_filename' must not contain path components (got '%s')",
                         o->latest_filename);
  if (!o->var_list && o->nvar_list > 0)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "opts->var_list is NULL but opts->nvar_list is %zu", o->nvar_list);
  for (size_t i = 0; i < o->nvar_list; i++) {
    if (!o->var_list[i]) return hk_status_set(st, HK_INVALID_ARGUMENT, "opts->var_list[%zu] is NULL", i);
    for (size_t j = 0; j < i; j++)
      if (strcmp(o->var_list[i], o->var_list[j]) == 0)
        return hk_status_set(st, HK_INVALID_ARGUMENT, "opts->var_list names variable '%s' twice", o->var_list[i]);
  }
  return HK_OK;
}

hk_code hk_saver_new(hk_saver **out, const hk_saver_options *given, hk_status *status) {
  static const hk_saver_options init = HK_SAVER_OPTIONS_INIT;
  hk_saver_options full;
  const hk_saver_options *opts = given;
  hk_env env;
  hk_saver *s;
  hk_code rc;

  if (out) *out = NULL;
  if (!out) return hk_status_set(status, HK_INVALID_ARGUMENT, "out is NULL");
  if (!given) return hk_status_set(status, HK_INVALID_ARGUMENT, "opts is NULL (the executor is required)");
  /* An older version is read as far as it goes; the rest takes defaults. */
  if (given->version >= 1 && given->version <= HK_SAVER_OPTIONS_VERSION) {
    full = init;
    memcpy(&full, given, options_size(given->version));
    opts = &full;
  }
  rc = check_options(opts, status);
  if (rc != HK_OK) return rc;
  rc = hk_env_check(opts->env, "opts->env", status);
  if (rc != HK_OK) return rc;
  hk_env_copy(&env, opts->env ? opts->env : hk_executor_env(opts->executor));

  s = hk_env_calloc(&env, 1, sizeof *s);
  if (!s) return oom(status, "creating a Saver");
  s->env = env;
  s->ex = opts->executor;
  s->max_to_keep = opts->max_to_keep;
  s->keep_hours = hk_secs_is_unset(opts->keep_checkpoint_every_n_hours) ? 0 : opts->keep_checkpoint_every_n_hours;
  s->pad_step_number = opts->pad_step_number != 0;
  s->allow_non_finite = opts->allow_non_finite != 0;
  s->latest_filename = hk_env_strdup(&s->env, opts->latest_filename ? opts->latest_filename : DEFAULT_LATEST);
  if (!s->latest_filename) {
    hk_saver_free(s);
    return oom(status, "creating a Saver");
  }
  if (opts->var_list) {
    s->explicit_vars = 1;
    if (opts->nvar_list > 0) {
      s->var_index = hk_env_calloc(&s->env, opts->nvar_list, sizeof *s->var_index);
      if (!s->var_index) {
        hk_saver_free(s);
        return oom(status, "creating a Saver");
      }
    }
    for (size_t i = 0; i < opts->nvar_list; i++) {
      hk_status why = HK_STATUS_INIT;
      rc = hk_executor_find_variable(s->ex, opts->var_list[i], &s->var_index[i], &why);
      if (rc != HK_OK) {
        hk_saver_free(s);
        if (rc == HK_NOT_FOUND)
          return hk_status_set(status, rc, "opts->var_list[%zu]: the executor has no variable named '%s'", i,
                               opts->var_list[i]);
        hk__status_copy(status, &why);
        return rc;
      }
    }
    s->nvars = opts->nvar_list;
    rc = describe_vars(s, status);
    if (rc != HK_OK) {
      hk_saver_free(s);
      return rc;
    }
    s->resolved = 1;
  }
  *out = s;
  return HK_OK;
}

const char *const *hk_saver_checkpoints(const hk_saver *saver, size_t *n) {
  if (n) *n = saver ? saver->n : 0;
  return saver ? (const char *const *)saver->paths : NULL;
}

hk_executor *hk_saver_executor(const hk_saver *saver) { return saver ? saver->ex : NULL; }

const char *hk_saver_latest_filename(const hk_saver *saver) { return saver ? saver->latest_filename : NULL; }

const hk_env *hk__saver_env(const hk_saver *saver) { return saver ? &saver->env : NULL; }

/* ---- recovery of the managed list (D6.1, C122) ----------------------------------------- */

/* `now` is the wall time the caller read: recovery may run on the
 * asynchronous hook's writer thread, which must not call the env's clocks
 * (H6). `base`: the basename of the save path of the save that recovers,
 * whose unlisted checkpoints are adopted; NULL (a recovery for a
 * restore) adopts nothing and leaves that to the next managed save
 * (adopt_after_restore). */
static hk_code recover_impl(hk_saver *s, const char *dir, double now, const char *base, hk_status *st) {
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
    /* C123: treated as absent, so nothing is ever deleted because of it. */
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
  free_list(s);
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
  /* H45: the best record is read against this list at the next save. */
  free_best(s);
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
static hk_code adopt_after_restore(hk_saver *s, const char *dir, const char *base, double now, hk_status *st) {
  const hk_env *env = senv(s);
  hk__state state;
  hk_status why = HK_STATUS_INIT;
  hk_code rc = hk__state_read(env, dir, s->latest_filename, &state, &why);
  if (rc == HK_RESOURCE_EXHAUSTED) {
    hk__status_copy(st, &why);
    return rc;
  }
  rc = hk__adopt_into(env, dir, base, now, s->keep_hours > 0, rc == HK_OK ? &state : NULL, &s->paths, &s->stamps,
                      &s->n, st);
  hk__state_clear(env, &state);
  if (rc == HK_OK) s->adopt_pending = 0;
  return rc;
}

hk_code hk_saver_recover(hk_saver *saver, const char *dir, hk_status *status) {
  if (!saver) return hk_status_set(status, HK_INVALID_ARGUMENT, "saver is NULL");
  if (!dir) return hk_status_set(status, HK_INVALID_ARGUMENT, "dir is NULL");
  return recover_impl(saver, dir, hk_env_wall(senv(saver)), NULL, status);
}

void hk__saver_set_keep_all(hk_saver *saver, int on) {
  if (saver) saver->keep_all = on != 0;
}

/* ---- best-k retention (H45) ------------------------------------------------------------ */

void hk__saver_set_best(hk_saver *saver, int64_t k, int mode) {
  if (!saver || k < 0) return;
  if (k == saver->best_k && mode == saver->best_mode) return;
  saver->best_k = k;
  saver->best_mode = mode;
  free_best(saver);
  saver->best_loaded = 0;
}

void hk__saver_note_metric(hk_saver *saver, double value) {
  if (!saver) return;
  saver->metric = value;
  saver->have_metric = 1;
}

/* Nonzero when a ranks strictly before b: ties keep the older first. */
static int better(int mode, double a, double b) { return mode == HK_MONITOR_MAX ? a > b : a < b; }

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
static hk_code best_recover(hk_saver *s, const char *dir, hk_status *st) {
  const hk_env *env = senv(s);
  hk__best rec;
  char why[160];
  int malformed = 0;
  size_t n = 0;
  hk_code rc;

  free_best(s);
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
    for (at = n; at > 0 && better(s->best_mode, rec.metrics[i], s->best_metric[at - 1]); at--) {
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
  free_best(s);
  s->best_loaded = 0;
  return oom(st, "reading the best checkpoints");
}

/* ---- save (C113–C116, D4, D6) ------------------------------------------------------------ */

/* The managed list a save would leave, built before any file is touched so
 * a failure (OOM included) changes nothing, and installed only after the
 * state file naming it is durable (D4.3). */
typedef struct plan {
  char **paths; /* owned copies */
  double *stamps;
  size_t n;
  const char **names; /* bare names of paths, for the state file */
  char **drop;        /* owned copies: files to delete */
  size_t ndrop;
  double last_preserved;
  /* H45: the best checkpoints after the save (owned copies, best first)
   * and whether the record on disk must change. */
  char **best;
  double *best_metric;
  size_t nbest;
  int best_changed;
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
  memset(p, 0, sizeof *p);
}

static int plan_ranks(const plan *p, const char *path) {
  for (size_t i = 0; i < p->nbest; i++)
    if (strcmp(p->best[i], path) == 0) return 1;
  return 0;
}

/* H45: the best list after saving `path` with `metric` (NaN: none): a
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
  for (at = p->nbest; at > 0 && better(s->best_mode, metric, p->best_metric[at - 1]); at--) {}
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
  /* D6.2: X leaves its old place and is appended with timestamp now. */
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
  /* D6.2: the max_to_keep newest stay, and (H45) the best ones; every
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
       * (D6.1, D3.2). The plan's own copy changes hands. */
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

static void plan_install(hk_saver *s, plan *p) {
  free_list(s);
  s->paths = p->paths;
  s->stamps = p->stamps;
  s->n = p->n;
  s->last_preserved = p->last_preserved;
  p->paths = NULL;
  p->stamps = NULL;
  p->n = 0;
  if (s->best_k > 0) {
    free_best(s);
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

/* H45: the best record for the plan's list, before the state file that
 * relies on it. */
static hk_code write_best(hk_saver *s, const char *dir, const char *const *best, const double *metric, size_t n,
                          hk_status *st) {
  return hk__best_write(senv(s), dir, s->latest_filename, s->best_mode, best, metric, n, st);
}

/* H45, after a failed save that may have put its record in place (the
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

/* Nonzero when the file is gone (removed, or missing). */
static int remove_ignoring(const hk__fs *fs, const char *path, int quiet_missing) {
  hk_status why = HK_STATUS_INIT;
  if (hk__fs_unlink(fs, path, &why) == HK_OK) return 1;
  if (quiet_missing && why.code == HK_NOT_FOUND) return 1;
  hk_env_log(fs->env, HK_LOG_WARNING, "Ignoring: %s", why.message);
  return why.code == HK_NOT_FOUND;
}

/* D4.3/D4.4: a failed state write may have renamed the new state file into
 * place before its directory fsync failed; put back the list it replaced so
 * the directory holds what it held before. Returns nonzero when the state
 * file on disk is known not to name `name` any more, durably: only then may
 * the caller remove the files of `name`. On zero they stay, so whatever
 * state file survives names a checkpoint that exists. */
static int rollback_state(hk_saver *s, const hk__fs *fs, const char *name) {
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
      rc = hk__state_write(env, s->dir, s->latest_filename, names, s->stamps, s->n, s->last_preserved, &why);
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
             "file names exists (D4.4).",
             s->dir, s->latest_filename, name);
  return 0;
}

static hk_code check_save_path(hk_saver *s, const char *save_path, int64_t step, hk_status *st) {
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

/* Everything a save does once the variables are in hand (D4.2 steps 1–4). */
static hk_code write_impl(hk_saver *s, const char *save_path, int64_t name_step, int64_t record_step, unsigned flags,
                          double now, const hk__ckpt_tensor *tensors, size_t ntensors, const char *graph,
                          size_t graph_len, char **prefix_out, hk_status *st) {
  const hk_env *env = senv(s);
  int manage = !(flags & HK_SAVE_NO_STATE);
  int write_graph = (flags & HK_SAVE_META) && graph;
  char *prefix = NULL, *dir = NULL, *data = NULL, *graphpath = NULL; /* graphpath: <prefix>.graph.txt */
  const char *name;
  int data_existed = 0, graph_existed = 0, planned = 0, best_written = 0;
  /* H45: the metric given for this save, consumed by it. */
  double metric = s->have_metric ? s->metric : NAN;
  hk_fs_stat sb;
  hk__fs fs;
  plan p;
  hk_code rc;

  s->have_metric = 0;
  if (prefix_out) *prefix_out = NULL;
  memset(&p, 0, sizeof p);
  hk__fs_init(&fs, env);
  rc = check_save_path(s, save_path, name_step, st);
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
  /* C115: the Saver never creates directories. */
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
  /* D6.5: deletions an interrupted save recorded, before our own work —
   * and before a recovery that adopts unlisted checkpoints, which
   * must not take in the ones such a record is about to delete. */
  rc = hk__pending_finish(env, dir, s->latest_filename, st);
  if (rc == HK_OK) rc = hk__remove_stale_tmp(env, dir, s->latest_filename, st);
  if (rc != HK_OK) goto done;
  if (manage) {
    if (!s->dir || strcmp(s->dir, dir) != 0) {
      rc = recover_impl(s, dir, now, hk__path_basename(save_path), st);
      if (rc != HK_OK) goto done;
    } else if (s->adopt_pending) {
      /* A recovery for a restore adopted nothing: this save does, knowing
       * the basename whose checkpoints it manages. */
      rc = adopt_after_restore(s, dir, hk__path_basename(save_path), now, st);
      if (rc != HK_OK) goto done;
    }
    if (s->best_k > 0 && !s->best_loaded) {
      rc = best_recover(s, dir, st);
      if (rc != HK_OK) goto done;
    }
    rc = plan_build(s, name, now, metric, &p, st);
    if (rc != HK_OK) goto done;
    planned = 1;
  }
  rc = probe(&fs, data, &data_existed, st);
  if (rc == HK_OK && write_graph) rc = probe(&fs, graphpath, &graph_existed, st);
  /* D6.5: what retention will delete, recorded before the state file that
   * drops it; the data file's directory fsync below makes it durable. */
  if (rc == HK_OK && planned)
    rc = hk__pending_write(env, dir, s->latest_filename, p.names, p.stamps, p.n, p.last_preserved, p.drop, p.ndrop, st);
  if (rc != HK_OK) goto done;

  rc = hk__ckpt_write(env, data, record_step, s->gs_name, tensors, ntensors,
                      (flags & SAVE__ON_WRITER_THREAD ? 0u : (unsigned)HK__CKPT_WRITE_THREAD) |
                          (s->allow_non_finite ? (unsigned)HK__CKPT_WRITE_NON_FINITE : 0u),
                      st);
  if (rc != HK_OK) {
    if (!data_existed) remove_created(&fs, data);
    if (p.ndrop > 0) hk__pending_remove(env, dir, s->latest_filename);
    goto done;
  }
  if (write_graph) {
    rc = hk__write_file_atomic(env, graphpath, graph, graph_len, st);
    if (rc != HK_OK) {
      if (!graph_existed) remove_created(&fs, graphpath);
      if (!data_existed) remove_created(&fs, data);
      if (p.ndrop > 0) hk__pending_remove(env, dir, s->latest_filename);
      goto done;
    }
  }
  if (planned && p.best_changed) {
    /* H45: durable before the state file that keeps its checkpoints. */
    rc = write_best(s, dir, (const char *const *)p.best, p.best_metric, p.nbest, st);
    if (rc != HK_OK) {
      restore_best(s, &fs, dir);
      if (write_graph && !graph_existed) remove_created(&fs, graphpath);
      if (!data_existed) remove_created(&fs, data);
      if (p.ndrop > 0) hk__pending_remove(env, dir, s->latest_filename);
      goto done;
    }
    best_written = 1;
  }
  if (manage) {
    rc = hk__state_write(env, dir, s->latest_filename, p.names, p.stamps, p.n, p.last_preserved, st);
    if (rc != HK_OK) {
      /* H45: the ranking the previous state file goes with (best effort;
       * a record that names what a state file does not list is harmless). */
      if (best_written) restore_best(s, &fs, dir);
      /* D4.4: the previous state file first, then the new files. */
      if (rollback_state(s, &fs, name)) {
        if (write_graph && !graph_existed) remove_created(&fs, graphpath);
        if (!data_existed) remove_created(&fs, data);
      }
      /* Bound to the state file that failed: harmless if it stays. */
      if (p.ndrop > 0) hk__pending_remove(env, dir, s->latest_filename);
      goto done;
    }
    /* The new state is durable: now, and only now, retention deletes. */
    int all_gone = 1;
    for (size_t i = 0; i < p.ndrop; i++) {
      char *d = hk__asprintf(env, "%s" DATA_EXT, p.drop[i]);
      char *g = hk__asprintf(env, "%s" GRAPH_EXT, p.drop[i]);
      char *m = hk__asprintf(env, "%s" LEGACY_META_EXT, p.drop[i]);
      if (d) all_gone &= remove_ignoring(&fs, d, 0);
      if (g) all_gone &= remove_ignoring(&fs, g, 1);
      if (m) all_gone &= remove_ignoring(&fs, m, 1);
      if (!d || !g || !m) {
        all_gone = 0;
        hk_env_log(env, HK_LOG_WARNING, "Ignoring: out of memory deleting checkpoint %s", p.drop[i]);
      }
      hk_env_free(env, d);
      hk_env_free(env, g);
      hk_env_free(env, m);
    }
    if (p.ndrop > 0) {
      hk_status why = HK_STATUS_INIT;
      if (hk__fs_sync_dir(&fs, dir, &why) != HK_OK) {
        all_gone = 0;
        hk_env_log(env, HK_LOG_WARNING, "Ignoring: %s", why.message);
      }
      /* D6.5: only once the deletions are durable may the record go (its
       * removal first could leave unlisted checkpoints nothing deletes).
       * Its removal needs no fsync: a record that survives is bound to
       * this state file, and the next save removes it durably. A deletion
       * that failed keeps the record, so the next save tries it again. */
      if (all_gone) hk__pending_remove(env, dir, s->latest_filename);
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
  return write_impl(saver, save_path, step, step == HK_UNSET_STEPS ? 0 : step,
                    (flags & ~(unsigned)HK_SAVE_META) | SAVE__ON_WRITER_THREAD, now, tensors, ntensors, NULL, 0, prefix,
                    st);
}

/* ---- reading variables ------------------------------------------------------------------ */

static size_t info_nbytes(const hk_variable_info *info) {
  size_t n = hk_dtype_size(info->dtype);
  for (int32_t d = 0; d < info->rank; d++) {
    size_t dim = (size_t)info->dims[d];
    if (dim != 0 && n > SIZE_MAX / dim) return SIZE_MAX;
    n *= dim;
  }
  return n;
}

static hk_code read_view(hk_saver *s, hk_raw_session *rs, size_t i, hk_tensor *out, hk_status *st) {
  const hk_variable_info *info = &s->var_info[i];
  hk_code rc = hk_raw_session_read_variable(rs, s->var_index[i], out, st);
  if (rc != HK_OK) return rc;
  if (out->dtype != info->dtype || out->rank != info->rank ||
      memcmp(out->dims, info->dims, (size_t)info->rank * sizeof info->dims[0]) != 0 ||
      out->nbytes != info_nbytes(info) || (!out->data && out->nbytes > 0))
    return hk_status_set(st, HK_INTERNAL, "the executor's value of variable %s does not match its description",
                         info->name);
  return HK_OK;
}

hk_code hk__saver_snapshot_size(hk_saver *saver, size_t *nbytes, size_t *ntensors, hk_status *st) {
  size_t total = 0;
  hk_code rc;

  if (nbytes) *nbytes = 0;
  if (ntensors) *ntensors = 0;
  if (!saver || !nbytes || !ntensors)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "saver, nbytes and ntensors are required");
  rc = resolve_vars(saver, st);
  if (rc != HK_OK) return rc;
  for (size_t i = 0; i < saver->nvars; i++) {
    size_t n = info_nbytes(&saver->var_info[i]);
    size_t padded =
        n > SIZE_MAX - (SNAPSHOT_ALIGN - 1) ? SIZE_MAX : (n + SNAPSHOT_ALIGN - 1) / SNAPSHOT_ALIGN * SNAPSHOT_ALIGN;
    if (padded == SIZE_MAX || total > SIZE_MAX - padded)
      return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "the Saver's variables do not fit in memory (at %s)",
                           saver->var_info[i].name);
    total += padded;
  }
  *nbytes = total;
  *ntensors = saver->nvars;
  return HK_OK;
}

hk_code hk__saver_snapshot(hk_saver *saver, hk_raw_session *rs, void *buf, size_t cap, hk__ckpt_tensor *tensors,
                           size_t ntensors, hk_status *st) {
  size_t off = 0;
  int streamed = 0;
  hk_code rc = HK_OK;

  if (!saver || !rs) return hk_status_set(st, HK_INVALID_ARGUMENT, "saver and rs are required");
  rc = resolve_vars(saver, st);
  if (rc != HK_OK) return rc;
  if (ntensors != saver->nvars || (!tensors && ntensors > 0))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "snapshot of %zu tensors into room for %zu", saver->nvars, ntensors);
  for (size_t i = 0; i < saver->nvars; i++) {
    hk_tensor v;
    rc = read_view(saver, rs, i, &v, st);
    if (rc != HK_OK) break;
    if (v.nbytes > cap || off > cap - v.nbytes || (!buf && v.nbytes > 0)) {
      rc = hk_status_set(st, HK_INVALID_ARGUMENT, "snapshot buffer of %zu bytes is too small (at %s)", cap,
                         saver->var_info[i].name);
      break;
    }
    if (v.nbytes > 0) streamed |= hk__snapshot_stream_copy((char *)buf + off, v.data, v.nbytes);
    tensors[i].name = saver->var_info[i].name;
    tensors[i].non_finite_ok = (saver->var_info[i].flags & HK_VAR_NON_FINITE_OK) != 0;
    tensors[i].value = v;
    tensors[i].value.data = v.nbytes > 0 ? (char *)buf + off : NULL;
    off += (v.nbytes + SNAPSHOT_ALIGN - 1) / SNAPSHOT_ALIGN * SNAPSHOT_ALIGN;
  }
#ifdef HAVE_STREAM_COPY
  /* Streaming stores are weakly ordered: make them visible before the
   * caller hands the buffer to the writer thread. */
  if (streamed) _mm_sfence();
#else
  (void)streamed;
#endif
  return rc;
}

/* The asynchronous hook's copy-before-write snapshot (D3.7) reads the views
 * here and copies them itself, possibly on its writer thread, with the same
 * copy as above. */
hk_code hk__saver_snapshot_views(hk_saver *saver, hk_raw_session *rs, hk__ckpt_tensor *tensors, size_t *index,
                                 size_t ntensors, hk_status *st) {
  hk_code rc;

  if (!saver || !rs) return hk_status_set(st, HK_INVALID_ARGUMENT, "saver and rs are required");
  rc = resolve_vars(saver, st);
  if (rc != HK_OK) return rc;
  if (ntensors != saver->nvars || ((!tensors || !index) && ntensors > 0))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "snapshot of %zu tensors into room for %zu", saver->nvars, ntensors);
  for (size_t i = 0; i < saver->nvars; i++) {
    rc = read_view(saver, rs, i, &tensors[i].value, st);
    if (rc != HK_OK) return rc;
    tensors[i].name = saver->var_info[i].name;
    tensors[i].non_finite_ok = (saver->var_info[i].flags & HK_VAR_NON_FINITE_OK) != 0;
    index[i] = saver->var_index[i];
  }
  return HK_OK;
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
 * A refused argument, or C115's missing directory, is already about the
 * save: passed on as it is. */
static hk_code save_failed(const char *save_path, int64_t step, hk_code rc, const hk_status *why, hk_status *status) {
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
  if (step == HK_UNSET_STEPS) return hk_status_set(status, rc, "Saving checkpoint into %s failed: %s", save_path, cause);
  return hk_status_set(status, rc, "Saving checkpoint for step %" PRId64 " into %s failed: %s", step, save_path, cause);
}

hk_code hk_saver_save(hk_saver *saver, hk_raw_session *rs, const char *save_path, int64_t step, unsigned flags,
                      const char **prefix, hk_status *status) {
  text_buf graph;
  int64_t record = step;
  char *out = NULL;
  hk_code rc;

  if (prefix) *prefix = NULL;
  if (!saver) return hk_status_set(status, HK_INVALID_ARGUMENT, "saver is NULL");
  if (!rs) return hk_status_set(status, HK_INVALID_ARGUMENT, "rs is NULL");
  if (!save_path) return hk_status_set(status, HK_INVALID_ARGUMENT, "save_path is NULL");
  if (flags & ~(unsigned)(HK_SAVE_NO_STATE | HK_SAVE_META))
    return hk_status_set(status, HK_INVALID_ARGUMENT, "flags 0x%x has bits that are not hk_save_flags", flags);
  /* Refuse bad names before reading anything. */
  rc = check_save_path(saver, save_path, step, status);
  if (rc != HK_OK) return rc;
  rc = resolve_vars(saver, status);
  if (rc != HK_OK) return rc;
  /* GS is read by a run, which would invalidate views taken before it. */
  if (step == HK_UNSET_STEPS) {
    hk_status why = HK_STATUS_INIT;
    rc = hk_raw_session_global_step(rs, &record, &why);
    if (rc == HK_NOT_FOUND) {
      record = 0;
    } else if (rc != HK_OK) {
      hk__status_copy(status, &why);
      return rc;
    }
  }
  for (size_t i = 0; i < saver->nvars; i++) {
    saver->views[i].name = saver->var_info[i].name;
    saver->views[i].non_finite_ok = (saver->var_info[i].flags & HK_VAR_NON_FINITE_OK) != 0;
    rc = read_view(saver, rs, i, &saver->views[i].value, status);
    if (rc != HK_OK) return rc;
  }
  memset(&graph, 0, sizeof graph);
  graph.env = senv(saver);
  /* HK_SAVE_META: the executor's description of its graph, beside the data
   * file as <prefix>.graph.txt. */
  if (flags & HK_SAVE_META) {
    hk_status why = HK_STATUS_INIT;
    rc = hk_executor_describe(saver->ex, text_sink, &graph, &why);
    if (rc == HK_UNIMPLEMENTED) {
      if (!saver->graph_logged)
        hk_env_log(senv(saver), HK_LOG_INFO,
                   "The executor cannot describe its graph: no " GRAPH_EXT " file is written.");
      saver->graph_logged = 1;
      hk_env_free(graph.env, graph.data);
      memset(&graph, 0, sizeof graph);
    } else if (rc != HK_OK) {
      hk_env_free(graph.env, graph.data);
      hk__status_copy(status, &why);
      return rc;
    } else if (!graph.data) {
      graph.data = hk_env_strdup(graph.env, "");
      if (!graph.data) return oom(status, "describing the graph for the " GRAPH_EXT " file");
    }
  }
  {
    hk_status why = HK_STATUS_INIT;
    rc = write_impl(saver, save_path, step, record, flags, hk_env_wall(senv(saver)), saver->views, saver->nvars,
                    graph.data, graph.len, &out, &why);
    hk_env_free(senv(saver), graph.data);
    if (rc != HK_OK) return save_failed(save_path, step, rc, &why, status);
  }
  hk_env_free(senv(saver), saver->prefix);
  saver->prefix = out;
  if (prefix) *prefix = out;
  return HK_OK;
}

/* ---- restore (C125, H27) -------------------------------------------------------------------- */

static void spec_of(hk_tensor *t, hk_dtype dtype, int32_t rank, const int64_t *dims) {
  memset(t, 0, sizeof *t);
  t->dtype = dtype;
  t->rank = rank;
  if (rank > 0 && rank <= HK_MAX_RANK) memcpy(t->dims, dims, (size_t)rank * sizeof dims[0]);
}

/* No tensor of the checkpoint for this variable (an optional one, H27). */
#define NOT_IN_CHECKPOINT SIZE_MAX

/* H27, after a restore succeeded: what it did not do. Each optional variable
 * the checkpoint lacks kept its value; each tensor no variable asked for was
 * not read — a WARNING when the Saver covers every global variable (a
 * variable renamed or dropped from the program shows up here), DEBUG when
 * its var_list chose the variables on purpose. */
static hk_code report_unrestored(hk_saver *s, hk_checkpoint_reader *r, const char *path, const size_t *where,
                                 hk_status *st) {
  const hk_env *env = senv(s);
  size_t count = hk_checkpoint_reader_count(r);
  unsigned char *used = NULL;

  for (size_t i = 0; i < s->nvars; i++)
    if (where[i] == NOT_IN_CHECKPOINT)
      hk_env_log(env, HK_LOG_WARNING,
                 "Variable %s is not in checkpoint %s; it is optional (HK_VAR_OPTIONAL), so its current value is kept.",
                 s->var_info[i].name, path);
  if (count == 0) return HK_OK;
  used = hk_env_calloc(env, count, 1);
  if (!used) return oom(st, "restoring a checkpoint");
  for (size_t i = 0; i < s->nvars; i++)
    if (where[i] != NOT_IN_CHECKPOINT) used[where[i]] = 1;
  for (size_t j = 0; j < count; j++) {
    hk_checkpoint_entry e;
    if (used[j] || hk_checkpoint_reader_entry(r, j, &e, NULL) != HK_OK) continue;
    hk_env_log(env, s->explicit_vars ? HK_LOG_DEBUG : HK_LOG_WARNING,
               "Checkpoint %s holds %s, which this program does not restore.", path, e.name);
  }
  hk_env_free(env, used);
  return HK_OK;
}

/* *mismatch is set for H27's model errors, which restore_latest must
 * return at once rather than fall back on. */
static hk_code restore_impl(hk_saver *s, hk_raw_session *rs, const char *path, int *mismatch, hk_status *st) {
  const hk_env *env = senv(s);
  hk_checkpoint_reader *r = NULL;
  size_t *where = NULL;
  hk__read_target *targets = NULL; /* read in place */
  size_t *assign = NULL;           /* assigned: Saver indices */
  size_t ntargets = 0, nassign = 0;
  hk_code rc;

  *mismatch = 1; /* the executor's errors are not the file's */
  rc = resolve_vars(s, st);
  if (rc != HK_OK) return rc;
  *mismatch = 0;
  rc = hk_checkpoint_reader_open(&r, env, path, st);
  if (rc == HK_NOT_FOUND) return hk_status_set(st, rc, "The passed save_path is not a valid checkpoint: %s", path);
  if (rc != HK_OK) return rc;
  hk_env_log(env, HK_LOG_INFO, "Restoring parameters from %s", path);
  if (s->nvars > 0) {
    where = hk_env_calloc(env, s->nvars, sizeof *where);
    if (!where) {
      rc = oom(st, "restoring a checkpoint");
      goto done;
    }
  }
  /* H27: every variable is checked before any is assigned. */
  for (size_t i = 0; i < s->nvars; i++) {
    const hk_variable_info *info = &s->var_info[i];
    hk_checkpoint_entry e;
    hk_tensor want, have;
    hk_status why = HK_STATUS_INIT;
    rc = hk_checkpoint_reader_find(r, info->name, &where[i], &why);
    if (rc == HK_NOT_FOUND && (info->flags & HK_VAR_OPTIONAL)) {
      where[i] = NOT_IN_CHECKPOINT; /* kept as it is, reported once the restore succeeded */
      continue;
    }
    if (rc == HK_NOT_FOUND) {
      *mismatch = 1;
      rc = hk_status_set(st, HK_NOT_FOUND, "Key %s not found in checkpoint %s", info->name, path);
      goto done;
    }
    if (rc == HK_OK) rc = hk_checkpoint_reader_entry(r, where[i], &e, &why);
    if (rc != HK_OK) {
      hk__status_copy(st, &why);
      goto done;
    }
    spec_of(&want, info->dtype, info->rank, info->dims);
    spec_of(&have, e.dtype, e.rank, e.dims);
    if (e.dtype != info->dtype) {
      *mismatch = 1;
      rc = hk_status_set(st, HK_INVALID_ARGUMENT,
                         "Variable %s has dtype %s but checkpoint %s holds it as %s: dtypes differ", info->name,
                         hk_dtype_name(info->dtype), path, hk_dtype_name(e.dtype));
      goto done;
    }
    if (!hk_tensor_same_spec(&want, &have)) {
      char a[160], b[160];
      *mismatch = 1;
      rc = hk_status_set(st, HK_INVALID_ARGUMENT,
                         "Variable %s has shape %s but checkpoint %s holds it with shape %s: shapes differ", info->name,
                         hk_shape_str(&want, a, sizeof a), path, hk_shape_str(&have, b, sizeof b));
      goto done;
    }
  }
  /* Two ways in. A variable whose storage the executor hands out (H30) is
   * read straight into it, its CRC computed in the same pass; every other
   * one gets a checked view assigned (executors without the slot, host-loop
   * states, and optional variables: an older candidate (D5.3) may lack one,
   * which must then keep a value that was verified, not a corrupt
   * tensor's unverified bytes). The storage is all handed out and filled
   * before the first assign, which would end its validity. */
  if (s->nvars > 0) {
    targets = hk_env_calloc(env, s->nvars, sizeof *targets);
    assign = hk_env_calloc(env, s->nvars, sizeof *assign);
    if (!targets || !assign) {
      rc = oom(st, "restoring a checkpoint");
      goto done;
    }
  }
  for (size_t i = 0; i < s->nvars; i++) {
    hk_tensor storage;
    hk_status why = HK_STATUS_INIT;
    if (where[i] == NOT_IN_CHECKPOINT) continue;
    rc = (s->var_info[i].flags & HK_VAR_OPTIONAL)
             ? HK_UNIMPLEMENTED
             : hk_raw_session_variable_storage(rs, s->var_index[i], &storage, &why);
    if (rc == HK_UNIMPLEMENTED) {
      assign[nassign++] = i;
      continue;
    }
    if (rc != HK_OK) {
      *mismatch = 1; /* an executor error, not the file's: no fallback either */
      hk__status_copy(st, &why);
      goto done;
    }
    targets[ntargets].entry = where[i];
    targets[ntargets].dst = storage.data;
    ntargets++;
  }
  rc = hk__reader_read_into(r, targets, ntargets, 1, st);
  if (rc != HK_OK) goto done;
  /* Assigned straight from the checked view: mapped, no copy in between. */
  for (size_t k = 0; k < nassign; k++) {
    size_t i = assign[k];
    const hk_variable_info *info = &s->var_info[i];
    hk__tensor_view view;
    hk_tensor value;
    rc = hk__reader_view(r, where[i], &view, st);
    if (rc != HK_OK) goto done;
    spec_of(&value, info->dtype, info->rank, info->dims);
    value.nbytes = info_nbytes(info);
    value.data = value.nbytes > 0 ? (void *)(uintptr_t)view.data : NULL;
    rc = hk_raw_session_assign_variable(rs, s->var_index[i], &value, st);
    if (rc != HK_OK) {
      *mismatch = 1; /* an executor error, not the file's: no fallback either */
      goto done;
    }
  }
  rc = report_unrestored(s, r, path, where, st);

done:
  hk_env_free(env, where);
  hk_env_free(env, targets);
  hk_env_free(env, assign);
  hk_checkpoint_reader_free(r);
  return rc;
}

hk_code hk_saver_restore(hk_saver *saver, hk_raw_session *rs, const char *path, hk_status *status) {
  int mismatch;
  if (!saver) return hk_status_set(status, HK_INVALID_ARGUMENT, "saver is NULL");
  if (!rs) return hk_status_set(status, HK_INVALID_ARGUMENT, "rs is NULL");
  if (!path) return hk_status_set(status, HK_INVALID_ARGUMENT, "Can't load save_path when it is None.");
  return restore_impl(saver, rs, path, &mismatch, status);
}

/* ---- candidates (D5, C123) ----------------------------------------------------------------- */

typedef struct cands {
  const hk_env *env;
  char **paths; /* "<dir>/<name>", in the order to try */
  size_t n, cap;
  int64_t *steps; /* scan only */
  int oom;
} cands;

static void cands_free(cands *c) {
  for (size_t i = 0; i < c->n; i++) hk_env_free(c->env, c->paths[i]);
  hk_env_free(c->env, c->paths);
  hk_env_free(c->env, c->steps);
  c->paths = NULL;
  c->steps = NULL;
  c->n = c->cap = 0;
}

static int cands_add(cands *c, const char *dir, const char *name, int64_t step) {
  char *path;
  for (size_t i = 0; i < c->n; i++)
    if (strcmp(hk__path_basename(c->paths[i]), name) == 0) return 1;
  if (c->n == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 8;
    char **p = hk_env_realloc(c->env, c->paths, cap * sizeof *p);
    int64_t *s;
    if (!p) return 0;
    c->paths = p;
    s = hk_env_realloc(c->env, c->steps, cap * sizeof *s);
    if (!s) return 0;
    c->steps = s;
    c->cap = cap;
  }
  path = hk__path_join(c->env, dir, name);
  if (!path) return 0;
  c->paths[c->n] = path;
  c->steps[c->n++] = step;
  return 1;
}

typedef struct scan_ctx {
  cands *c;
  const char *dir;
} scan_ctx;

/* "<name>-<step>.safetensors" with a valid name and a decimal step. */
static hk_code scan_entry(void *user, const char *entry, hk_status *st) {
  scan_ctx *x = user;
  size_t n = strlen(entry), k = sizeof DATA_EXT - 1, stem, i;
  int64_t step = 0;
  char name[256];

  (void)st;
  if (x->c->oom || n <= k || n - k > 255 || strcmp(entry + n - k, DATA_EXT) != 0) return HK_OK;
  stem = n - k;
  memcpy(name, entry, stem);
  name[stem] = '\0';
  for (i = stem; i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9'; i--) {}
  if (i == stem || i < 2 || name[i - 1] != '-' || !hk__valid_name(name)) return HK_OK;
  for (size_t j = i; j < stem; j++) {
    int d = name[j] - '0';
    if (step > (INT64_MAX - d) / 10) return HK_OK;
    step = step * 10 + d;
  }
  if (!cands_add(x->c, x->dir, name, step)) x->c->oom = 1;
  return HK_OK;
}

static int newest_first(const void *a, const void *b, const cands *c) {
  size_t i = *(const size_t *)a, j = *(const size_t *)b;
  if (c->steps[i] != c->steps[j]) return c->steps[i] > c->steps[j] ? -1 : 1;
  return -strcmp(c->paths[i], c->paths[j]);
}

/* Insertion sort: qsort has no user pointer, and scans are small. */
static void sort_scan(cands *c) {
  for (size_t i = 1; i < c->n; i++) {
    for (size_t j = i; j > 0; j--) {
      size_t a = j - 1, b = j;
      char *tp;
      int64_t ts;
      if (newest_first(&a, &b, c) <= 0) break;
      tp = c->paths[a];
      c->paths[a] = c->paths[b];
      c->paths[b] = tp;
      ts = c->steps[a];
      c->steps[a] = c->steps[b];
      c->steps[b] = ts;
    }
  }
}

/* C123: every "<name>-<step>.safetensors" of dir (valid names), newest step
 * first. A directory that does not exist is NOT_FOUND. */
static hk_code scan_dir(const hk_env *env, const char *dir, cands *c, hk_status *st) {
  hk__fs fs;
  scan_ctx x;
  hk_code rc;

  hk__fs_init(&fs, env);
  x.c = c;
  x.dir = dir;
  rc = hk__fs_list(&fs, dir, scan_entry, &x, st);
  if (rc == HK_OK && c->oom) rc = oom(st, "scanning for checkpoints");
  if (rc != HK_OK) {
    cands_free(c);
    return rc;
  }
  sort_scan(c);
  return HK_OK;
}

hk_code hk__dir_has_checkpoints(const hk_env *env, const char *dir, int *found, hk_status *st) {
  cands c;
  hk_code rc;

  *found = 0;
  memset(&c, 0, sizeof c);
  c.env = hk__env_or_default(env);
  rc = scan_dir(c.env, dir, &c, st);
  if (rc == HK_NOT_FOUND) return HK_OK;
  if (rc != HK_OK) return rc;
  *found = c.n > 0;
  cands_free(&c);
  return HK_OK;
}

/*
 * D5.1/D5.2: candidates from the state file, or from a directory scan when
 * it is missing, malformed or unreadable (*scanned then set). NOT_FOUND when
 * there is no state file and the scan finds no checkpoint (or no directory).
 */
static hk_code get_candidates(const hk_env *env, const char *dir, const char *latest, cands *c, int *scanned,
                              hk_status *st) {
  hk__state state;
  hk_status why = HK_STATUS_INIT;
  hk_code rc;

  memset(c, 0, sizeof *c);
  c->env = env;
  *scanned = 0;
  memset(&state, 0, sizeof state);
  rc = hk__state_read(env, dir, latest, &state, &why);
  if (rc == HK_RESOURCE_EXHAUSTED) {
    hk__status_copy(st, &why);
    return rc;
  }
  if (rc == HK_OK) {
    int ok = state.model ? cands_add(c, dir, state.model, 0) : 1;
    for (size_t i = state.n; ok && i > 0; i--) ok = cands_add(c, dir, state.names[i - 1], 0);
    hk__state_clear(env, &state);
    if (!ok) {
      cands_free(c);
      return oom(st, "listing checkpoint candidates");
    }
    return HK_OK;
  }
  if (rc == HK_NOT_FOUND) {
    /* D5.2: a state file deleted by hand, or lost with a copied directory,
     * must not turn into a silent fresh start that later overwrites the
     * checkpoints still there. */
    hk_status scan_st = HK_STATUS_INIT;
    rc = scan_dir(env, dir, c, &scan_st);
    if (rc == HK_NOT_FOUND || (rc == HK_OK && c->n == 0)) {
      cands_free(c);
      hk__status_copy(st, &why);
      return HK_NOT_FOUND;
    }
    if (rc != HK_OK) {
      hk__status_copy(st, &scan_st);
      return rc;
    }
    hk_env_log(env, HK_LOG_WARNING,
               "The checkpoint state file %s/%s is missing; scanning %s for checkpoints (found %zu).", dir, latest, dir,
               c->n);
    *scanned = 1;
    return HK_OK;
  }
  hk_env_log(env, HK_LOG_WARNING, "Ignoring the checkpoint state file %s/%s (%s); scanning %s for checkpoints.", dir,
             latest, why.message, dir);
  *scanned = 1;
  return scan_dir(env, dir, c, st);
}

/* ---- the DATA_LOSS of D5.2/D5.3: every candidate named ------------------------------------ */

/* What each failed candidate gets in the message: its name relative to the
 * directory (a valid name, H32: at most 255 bytes) and its reason. */
#define FAIL_REASON_MAX 200
/* What each reason gets before the directory is shown in full. */
#define REASON_FIRST 64
typedef struct failure {
  char name[256];
  char reason[FAIL_REASON_MAX];
} failure;

typedef struct failures {
  const hk_env *env;
  failure *e;
  size_t n, cap;
  size_t lost; /* candidates not kept: out of memory */
} failures;

/* s with every occurrence of prefix taken out, into out (cap bytes). */
static void strip_into(char *out, size_t cap, const char *s, const char *prefix, size_t pl) {
  size_t o = 0;
  while (*s && o + 1 < cap) {
    if (pl > 0 && strncmp(s, prefix, pl) == 0) {
      s += pl;
      continue;
    }
    out[o++] = *s++;
  }
  out[o] = '\0';
}

/* Record that candidate `path` ("<dir>/<name>") failed for `reason`: the
 * name alone, and the reason with the directory taken out of its paths and
 * without a leading "Checkpoint <name>.safetensors is " that would only
 * repeat the name. */
static void note_failure(failures *f, const char *path, const char *reason) {
  const char *name = hk__path_basename(path);
  size_t pl = (size_t)(name - path), nl = strlen(name);
  failure *e;
  char *r;

  if (f->n == f->cap) {
    size_t cap = f->cap ? f->cap * 2 : 8;
    failure *grown = hk_env_realloc(f->env, f->e, cap * sizeof *grown);
    if (!grown) {
      f->lost++;
      return;
    }
    f->e = grown;
    f->cap = cap;
  }
  e = &f->e[f->n++];
  snprintf(e->name, sizeof e->name, "%s", name);
  strip_into(e->reason, sizeof e->reason, reason, path, pl);
  r = e->reason;
  if (strncmp(r, "Checkpoint ", 11) == 0 && strncmp(r + 11, name, nl) == 0) {
    const char *rest = r + 11 + nl;
    if (strncmp(rest, DATA_EXT, sizeof DATA_EXT - 1) == 0) rest += sizeof DATA_EXT - 1;
    if (strncmp(rest, " is ", 4) == 0) memmove(r, rest + 4, strlen(rest + 4) + 1);
  }
}

static void failures_free(failures *f) {
  hk_env_free(f->env, f->e);
  memset(f, 0, sizeof *f);
}

/* Append s, cut to at most n bytes (with "..." when cut and n allows). */
static void put(char *out, size_t cap, size_t *len, const char *s, size_t n) {
  size_t k = strlen(s);
  int cut = k > n;
  if (cut) k = n >= 3 ? n - 3 : n;
  if (k > cap - 1 - *len) k = cap - 1 - *len;
  memcpy(out + *len, s, k);
  *len += k;
  if (cut && n >= 3 && *len + 3 <= cap - 1) {
    memcpy(out + *len, "...", 3);
    *len += 3;
  }
  out[*len] = '\0';
}

/*
 * "No checkpoint in <dir> <what>: <name> (<reason>); ..." in one status:
 * every candidate's name first of all (relative to dir, which is shown once
 * and, when long, by its end only), then the reasons sharing what room is
 * left evenly, each cut short with "..." when it must be. Only when the
 * names alone overflow the status do the last ones become "and %zu more".
 * The file's own paths are never needed: a reason's were made relative.
 */
static hk_code failure_status(hk_status *st, const failures *f, const char *dir, const char *what) {
  char msg[HK_STATUS_MESSAGE_MAX];
  const size_t cap = sizeof msg - 1;
  size_t n = f->n, names = 0, reasons = 0, head_fixed, dir_room, dl = strlen(dir), len = 0, shown = n, room, left;
  size_t share[64];
  char more[48] = "";

  /* "No checkpoint in " + dir + " " + what + ": " */
  head_fixed = strlen("No checkpoint in ") + 1 + strlen(what) + 2;
  for (size_t i = 0; i < n; i++) names += strlen(f->e[i].name) + (i ? 2 : 0);
  if (f->lost > 0) snprintf(more, sizeof more, "; and %zu more", f->lost);
  /* Room goes to the names first, then to each reason up to REASON_FIRST
   * bytes, then to the directory (at least its last 40 bytes), then to the
   * rest of the reasons. */
  for (size_t i = 0; i < n && i < 64; i++) {
    size_t r = strlen(f->e[i].reason);
    reasons += 3 + (r < REASON_FIRST ? r : REASON_FIRST);
  }
  dir_room = dl;
  if (head_fixed + dl + names + strlen(more) + reasons > cap) {
    size_t need = head_fixed + names + strlen(more) + reasons + 3;
    dir_room = need < cap && cap - need > 40 ? cap - need : 40;
    if (dir_room > dl) dir_room = dl;
  }
  while (shown > 0 && head_fixed + dir_room + (dir_room < dl ? 3 : 0) + names + strlen(more) > cap) {
    shown--;
    names -= strlen(f->e[shown].name) + (shown ? 2 : 0);
    snprintf(more, sizeof more, "; and %zu more", n - shown + f->lost);
  }
  put(msg, sizeof msg, &len, "No checkpoint in ", cap);
  if (dir_room < dl) put(msg, sizeof msg, &len, "...", cap);
  put(msg, sizeof msg, &len, dir + (dl - dir_room), cap);
  put(msg, sizeof msg, &len, " ", cap);
  put(msg, sizeof msg, &len, what, cap);
  put(msg, sizeof msg, &len, ": ", cap);
  /* Water-fill the reasons: each " (reason)" costs 3 bytes more. */
  room = cap > len + names + strlen(more) ? cap - len - names - strlen(more) : 0;
  left = shown < 64 ? shown : 64;
  for (size_t i = 0; i < left; i++) share[i] = 0;
  if (left > 0 && room > 3 * left) {
    size_t pool = room - 3 * left, open = left;
    int grew = 1;
    while (pool > 0 && open > 0 && grew) {
      size_t each = pool / open;
      grew = 0;
      if (each == 0) each = 1;
      for (size_t i = 0; i < left && pool > 0; i++) {
        size_t want = strlen(f->e[i].reason), give;
        if (share[i] >= want) continue;
        give = want - share[i] < each ? want - share[i] : each;
        if (give > pool) give = pool;
        share[i] += give;
        pool -= give;
        grew = 1;
        if (share[i] >= want) open--;
      }
    }
  }
  for (size_t i = 0; i < shown; i++) {
    if (i) put(msg, sizeof msg, &len, "; ", cap);
    put(msg, sizeof msg, &len, f->e[i].name, cap);
    if (i < left && share[i] > 0) {
      put(msg, sizeof msg, &len, " (", cap);
      put(msg, sizeof msg, &len, f->e[i].reason, share[i]);
      put(msg, sizeof msg, &len, ")", cap);
    }
  }
  put(msg, sizeof msg, &len, more, cap);
  return hk_status_set(st, HK_DATA_LOSS, "%s", msg);
}

static void warn_skip(const hk_env *env, const char *path, const char *reason) {
  hk_env_log(env, HK_LOG_WARNING, "Checkpoint %s is missing or corrupt (%s); trying an older one.", path, reason);
}

static const char *lf_or_default(const char *lf) { return lf ? lf : DEFAULT_LATEST; }

hk_code hk_latest_checkpoint(const hk_env *env, const char *dir, const char *latest_filename, char **out,
                             hk_status *status) {
  failures fl;
  cands c;
  int scanned;
  hk_code rc;

  if (out) *out = NULL;
  if (!out) return hk_status_set(status, HK_INVALID_ARGUMENT, "out is NULL");
  if (!dir) return hk_status_set(status, HK_INVALID_ARGUMENT, "dir is NULL");
  rc = hk_env_check(env, "env", status);
  if (rc != HK_OK) return rc;
  if (!hk__valid_name(lf_or_default(latest_filename)))
    return hk_status_set(status, HK_INVALID_ARGUMENT, "'latest_filename' must not contain path components (got '%s')",
                         latest_filename);
  env = hk__env_or_default(env);
  rc = get_candidates(env, dir, lf_or_default(latest_filename), &c, &scanned, status);
  if (rc != HK_OK) return rc;
  if (c.n == 0) {
    cands_free(&c);
    return hk_status_set(status, HK_NOT_FOUND, "No checkpoint found in %s (its state file is unreadable)", dir);
  }
  memset(&fl, 0, sizeof fl);
  fl.env = env;
  for (size_t i = 0; i < c.n; i++) {
    hk_checkpoint_reader *r = NULL;
    hk_status why = HK_STATUS_INIT;
    rc = hk_checkpoint_reader_open(&r, env, c.paths[i], &why);
    if (rc == HK_OK) rc = hk_checkpoint_reader_verify(r, &why);
    hk_checkpoint_reader_free(r);
    if (rc == HK_RESOURCE_EXHAUSTED) {
      hk__status_copy(status, &why);
      cands_free(&c);
      failures_free(&fl);
      return rc;
    }
    if (rc == HK_OK) {
      *out = c.paths[i];
      c.paths[i] = NULL;
      cands_free(&c);
      failures_free(&fl);
      return HK_OK;
    }
    warn_skip(env, c.paths[i], why.message);
    note_failure(&fl, c.paths[i], why.message);
  }
  cands_free(&c);
  rc = failure_status(status, &fl, dir, "verifies");
  failures_free(&fl);
  return rc;
}

hk_code hk__saver_restore_latest(hk_saver *saver, hk_raw_session *rs, const char *dir, char **restored, hk_status *st) {
  failures fl;
  const hk_env *env;
  cands c;
  int scanned;
  hk_code rc;

  if (restored) *restored = NULL;
  if (!saver || !rs || !dir || !restored)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "saver, rs, dir and restored are required");
  env = senv(saver);
  rc = get_candidates(env, dir, saver->latest_filename, &c, &scanned, st);
  /* No state file and no checkpoint in dir: nothing to restore, the caller
   * initializes. */
  if (rc == HK_NOT_FOUND) return HK_OK;
  if (rc != HK_OK) return rc;
  if (c.n == 0) {
    cands_free(&c);
    return HK_OK;
  }
  memset(&fl, 0, sizeof fl);
  fl.env = env;
  for (size_t i = 0; i < c.n; i++) {
    hk_status why = HK_STATUS_INIT;
    int mismatch = 0;
    rc = restore_impl(saver, rs, c.paths[i], &mismatch, &why);
    if (rc == HK_OK) {
      failures_free(&fl);
      *restored = hk_env_strdup(env, c.paths[i]);
      cands_free(&c);
      if (!*restored) return oom(st, "restoring a checkpoint");
      /* C123: a list found by a scan is never adopted. */
      if (!scanned) rc = recover_impl(saver, dir, hk_env_wall(env), NULL, st);
      if (rc != HK_OK) {
        hk_env_free(env, *restored);
        *restored = NULL;
      }
      return rc;
    }
    if (mismatch || rc == HK_RESOURCE_EXHAUSTED) {
      hk__status_copy(st, &why);
      cands_free(&c);
      failures_free(&fl);
      return rc;
    }
    warn_skip(env, c.paths[i], why.message);
    note_failure(&fl, c.paths[i], why.message);
  }
  cands_free(&c);
  rc = failure_status(st, &fl, dir, "could be restored");
  failures_free(&fl);
  return rc;
}

/* ---- helpers (H34) ------------------------------------------------------------------------- */

/* "<prefix><ext>" into buf; a prefix that already names the data file keeps
 * its stem. 0 when it does not fit. */
static int file_of(char *buf, size_t cap, const char *prefix, const char *ext) {
  size_t n = strlen(prefix), k = sizeof DATA_EXT - 1;
  int w;
  if (n >= k && strcmp(prefix + n - k, DATA_EXT) == 0) n -= k;
  if (n > INT32_MAX) return 0;
  w = snprintf(buf, cap, "%.*s%s", (int)n, prefix, ext);
  return w >= 0 && (size_t)w < cap;
}

int hk_checkpoint_exists(const hk_env *env, const char *prefix) {
  char data[PATH_BUF];
  hk__fs fs;
  if (!prefix || !file_of(data, sizeof data, prefix, DATA_EXT)) return 0;
  hk__fs_init(&fs, env);
  return hk__fs_is_file(&fs, data);
}

hk_code hk_remove_checkpoint(const hk_env *env, const char *prefix, hk_status *status) {
  /* The data file, the graph description and its legacy name (H31). */
  static const char *const exts[3] = {DATA_EXT, GRAPH_EXT, LEGACY_META_EXT};
  char paths[3][PATH_BUF];
  int removed = 0;
  hk__fs fs;

  if (!prefix) return hk_status_set(status, HK_INVALID_ARGUMENT, "prefix is NULL");
  if (hk_env_check(env, "env", status) != HK_OK) return HK_INVALID_ARGUMENT;
  for (size_t i = 0; i < 3; i++)
    if (!file_of(paths[i], sizeof paths[i], prefix, exts[i]))
      return hk_status_set(status, HK_INVALID_ARGUMENT, "checkpoint prefix is too long: %.200s...", prefix);
  hk__fs_init(&fs, env);
  for (size_t i = 0; i < 3; i++) {
    hk_status why = HK_STATUS_INIT;
    hk_code rc = hk__fs_unlink(&fs, paths[i], &why);
    if (rc == HK_OK) removed = 1;
    if (rc != HK_OK && rc != HK_NOT_FOUND) {
      hk__status_copy(status, &why);
      return rc;
    }
  }
  if (!removed)
    return hk_status_set(status, HK_NOT_FOUND, "Checkpoint %s not found: none of %s, %s, %s exists", prefix, paths[0],
                         paths[1], paths[2]);
  return HK_OK;
}

hk_code hk_checkpoint_mtimes(const hk_env *env, const char *const *prefixes, size_t n, double *out, hk_status *status) {
  hk__fs fs;
  if (n > 0 && !prefixes) return hk_status_set(status, HK_INVALID_ARGUMENT, "prefixes is NULL");
  if (n > 0 && !out) return hk_status_set(status, HK_INVALID_ARGUMENT, "out is NULL");
  if (hk_env_check(env, "env", status) != HK_OK) return HK_INVALID_ARGUMENT;
  hk__fs_init(&fs, env);
  for (size_t i = 0; i < n; i++) {
    char data[PATH_BUF];
    hk_fs_stat sb;
    hk_status why = HK_STATUS_INIT;
    hk_code rc;
    if (!prefixes[i]) return hk_status_set(status, HK_INVALID_ARGUMENT, "prefixes[%zu] is NULL", i);
    if (!file_of(data, sizeof data, prefixes[i], DATA_EXT))
      return hk_status_set(status, HK_INVALID_ARGUMENT, "prefixes[%zu] is too long", i);
    memset(&sb, 0, sizeof sb);
    rc = hk__fs_stat(&fs, data, &sb, &why);
    if (rc == HK_OK && sb.is_dir) rc = HK_NOT_FOUND;
    if (rc == HK_NOT_FOUND)
      return hk_status_set(status, HK_NOT_FOUND, "Checkpoint %s not found: %s does not exist", prefixes[i], data);
    if (rc != HK_OK) {
      hk__status_copy(status, &why);
      return rc;
    }
    out[i] = sb.mtime;
  }
  return HK_OK;
}
