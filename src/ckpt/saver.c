/*
 * hooked — the Saver (contract group M), latest_checkpoint and
 * restore with fallback, and the checkpoint helpers
 * (checkpoint_exists, remove_checkpoint, checkpoint_mtimes,
 * update_checkpoint_state).
 *
 * Variables are reached only through the executor interface (count, info,
 * read, assign, and the optional storage a restore reads straight into),
 * so any executor gets checkpoints. hk_saver_save() reads
 * zero-copy views of the variables and hands them to the same write path
 * the asynchronous hook uses from its writer thread (hk__saver_write), so
 * both share one implementation of the durable order of a save's files
 * and of retention.
 *
 * This file holds the Saver's options, lifetime and variables, and the
 * checkpoint helpers; saver_internal.h lists the others.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "ckpt/ckpt.h"
#include "ckpt/saver_internal.h"
#include "ckpt/shard.h"
#include "util/common.h"
#include "util/fs.h"
#include "util/path.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Stack room for "<prefix>.safetensors" in the helpers that do not allocate. */
#define PATH_BUF 4096

/* ---- options and lifetime ----------------------------------------------------------- */

hk_code hk_saver_options_init(hk_saver_options *opts, uint32_t version) {
  return HK__STRUCT_INIT(opts, version, hk_saver_options, HK_SAVER_OPTIONS_INIT);
}

void hk__saver_free_best(hk_saver *s) {
  for (size_t i = 0; i < s->nbest; i++) hk_env_free(senv(s), s->best[i]);
  hk_env_free(senv(s), s->best);
  hk_env_free(senv(s), s->best_metric);
  s->best = NULL;
  s->best_metric = NULL;
  s->nbest = 0;
}

void hk__saver_free_list(hk_saver *s) {
  for (size_t i = 0; i < s->n; i++) hk_env_free(senv(s), s->paths[i]);
  hk_env_free(senv(s), s->paths);
  hk_env_free(senv(s), s->stamps);
  s->paths = NULL;
  s->stamps = NULL;
  s->n = 0;
}

void hk_saver_group_place(const hk_saver *s, int *rank, int *size) {
  const int has = s && s->group;
  if (rank) *rank = has ? s->group->rank(s->group_user) : 0;
  if (size) *size = has ? s->group->size(s->group_user) : 1;
}

void hk_saver_free(hk_saver *s) {
  hk_env env;
  if (!s) return;
  env = s->env;
  hk__saver_free_list(s);
  hk__saver_free_best(s);
  hk_env_free(&env, s->dir);
  hk_env_free(&env, s->prefix);
  hk_env_free(&env, s->latest_filename);
  hk_env_free(&env, s->var_index);
  hk_env_free(&env, s->var_info);
  hk_env_free(&env, s->views);
  hk_env_free(&env, s->var_per_rank);
  for (size_t i = 0; i < s->nper_rank; i++) hk_env_free(&env, s->per_rank[i]);
  hk_env_free(&env, s->per_rank);
  hk_env_free(&env, s->var_partitioned);
  for (size_t i = 0; i < s->npartitioned; i++) hk_env_free(&env, s->partitioned[i]);
  hk_env_free(&env, s->partitioned);
  hk_env_free(&env, s);
}

/* Fill var_info from var_index (already set) and size the views. */
static hk_code describe_vars(hk_saver *s, hk_status *st) {
  hk_code rc;
  if (s->nvars > 0) {
    s->var_info = hk_env_calloc(senv(s), s->nvars, sizeof *s->var_info);
    s->views = hk_env_calloc(senv(s), s->nvars, sizeof *s->views);
    s->var_per_rank = hk_env_calloc(senv(s), s->nvars, 1);
    s->var_partitioned = hk_env_calloc(senv(s), s->nvars, 1);
    if (!s->var_info || !s->views || !s->var_per_rank || !s->var_partitioned)
      return oom(st, "describing the Saver's variables");
  }
  for (size_t i = 0; i < s->nvars; i++) {
    rc = hk_executor_variable_info(&s->var_info[i], s->ex, s->var_index[i], st);
    if (rc != HK_OK) return rc;
  }
  /* Which variables are per rank: each name must be one of the Saver's. */
  for (size_t k = 0; k < s->nper_rank; k++) {
    size_t i = 0;
    while (i < s->nvars && strcmp(s->var_info[i].name, s->per_rank[k]) != 0) i++;
    if (i == s->nvars)
      return hk_status_set(st, HK_NOT_FOUND, "opts->per_rank_list[%zu]: the Saver has no variable named '%s'", k,
                           s->per_rank[k]);
    s->var_per_rank[i] = 1;
  }
  /* Which are partitioned: each one of the Saver's, and one-dimensional. */
  for (size_t k = 0; k < s->npartitioned; k++) {
    size_t i = 0;
    while (i < s->nvars && strcmp(s->var_info[i].name, s->partitioned[k]) != 0) i++;
    if (i == s->nvars)
      return hk_status_set(st, HK_NOT_FOUND, "opts->partitioned_list[%zu]: the Saver has no variable named '%s'", k,
                           s->partitioned[k]);
    if (s->var_info[i].rank != 1)
      return hk_status_set(st, HK_INVALID_ARGUMENT,
                           "opts->partitioned_list[%zu]: variable '%s' has rank %d; a partitioned variable is "
                           "one-dimensional (each rank holds a block of a flat global variable)",
                           k, s->partitioned[k], (int)s->var_info[i].rank);
    s->var_partitioned[i] = 1;
  }
  s->gs_name = NULL;
  {
    size_t gs;
    if (hk_executor_global_step(NULL, &gs, s->ex, NULL) == HK_OK)
      for (size_t i = 0; i < s->nvars && !s->gs_name; i++)
        if (s->var_index[i] == gs) s->gs_name = s->var_info[i].name;
  }
  return HK_OK;
}

static void unresolve(hk_saver *s) {
  hk_env_free(senv(s), s->var_index);
  hk_env_free(senv(s), s->var_info);
  hk_env_free(senv(s), s->views);
  hk_env_free(senv(s), s->var_per_rank);
  hk_env_free(senv(s), s->var_partitioned);
  s->var_per_rank = NULL;
  s->var_partitioned = NULL;
  s->var_index = NULL;
  s->var_info = NULL;
  s->views = NULL;
  s->nvars = 0;
  s->resolved = 0;
  s->gs_name = NULL;
}

/* Without a var_list, every global variable, resolved at first use so
 * variables built after the Saver are included. */
hk_code hk__saver_resolve_vars(hk_saver *s, hk_status *st) {
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
    rc = hk_executor_variable_info(&info, s->ex, i, st);
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
  HK__CHECK_VERSION(o, HK_SAVER_OPTIONS_VERSION, hk_saver_options, "opts", st);
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
  {
    if (o->group) {
      hk_code rc = hk_group_check(o->group, o->group_user, "opts->group", st);
      if (rc != HK_OK) return rc;
    }
    if (!o->per_rank_list && o->nper_rank_list > 0)
      return hk_status_set(st, HK_INVALID_ARGUMENT, "opts->per_rank_list is NULL but opts->nper_rank_list is %zu",
                           o->nper_rank_list);
    for (size_t i = 0; i < o->nper_rank_list; i++) {
      if (!o->per_rank_list[i]) return hk_status_set(st, HK_INVALID_ARGUMENT, "opts->per_rank_list[%zu] is NULL", i);
      for (size_t j = 0; j < i; j++)
        if (strcmp(o->per_rank_list[i], o->per_rank_list[j]) == 0)
          return hk_status_set(st, HK_INVALID_ARGUMENT, "opts->per_rank_list names variable '%s' twice",
                               o->per_rank_list[i]);
    }
    if (!o->partitioned_list && o->npartitioned_list > 0)
      return hk_status_set(st, HK_INVALID_ARGUMENT, "opts->partitioned_list is NULL but opts->npartitioned_list is %zu",
                           o->npartitioned_list);
    for (size_t i = 0; i < o->npartitioned_list; i++) {
      const char *name = o->partitioned_list[i];
      if (!name) return hk_status_set(st, HK_INVALID_ARGUMENT, "opts->partitioned_list[%zu] is NULL", i);
      for (size_t j = 0; j < i; j++)
        if (strcmp(name, o->partitioned_list[j]) == 0)
          return hk_status_set(st, HK_INVALID_ARGUMENT, "opts->partitioned_list names variable '%s' twice", name);
      for (size_t j = 0; j < o->nper_rank_list; j++)
        if (strcmp(name, o->per_rank_list[j]) == 0)
          return hk_status_set(st, HK_INVALID_ARGUMENT,
                               "opts->partitioned_list[%zu]: variable '%s' is also in opts->per_rank_list; a variable "
                               "is either per rank or partitioned",
                               i, name);
    }
  }
  return HK_OK;
}

hk_code hk_saver_new(hk_saver **out, const hk_saver_options *opts, hk_status *status) {
  hk_env env;
  hk_saver *s;
  hk_code rc;

  if (out) *out = NULL;
  if (!out) return hk_status_set(status, HK_INVALID_ARGUMENT, "out is NULL");
  if (!opts) return hk_status_set(status, HK_INVALID_ARGUMENT, "opts is NULL (the executor is required)");
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
  {
    s->group = opts->group;
    s->group_user = opts->group_user;
    if (opts->nper_rank_list > 0) {
      s->per_rank = hk_env_calloc(&s->env, opts->nper_rank_list, sizeof *s->per_rank);
      if (!s->per_rank) {
        hk_saver_free(s);
        return oom(status, "creating a Saver");
      }
      for (size_t i = 0; i < opts->nper_rank_list; i++) {
        s->per_rank[i] = hk_env_strdup(&s->env, opts->per_rank_list[i]);
        if (!s->per_rank[i]) {
          hk_saver_free(s);
          return oom(status, "creating a Saver");
        }
        s->nper_rank = i + 1;
      }
    }
    if (opts->npartitioned_list > 0) {
      s->partitioned = hk_env_calloc(&s->env, opts->npartitioned_list, sizeof *s->partitioned);
      if (!s->partitioned) {
        hk_saver_free(s);
        return oom(status, "creating a Saver");
      }
      for (size_t i = 0; i < opts->npartitioned_list; i++) {
        s->partitioned[i] = hk_env_strdup(&s->env, opts->partitioned_list[i]);
        if (!s->partitioned[i]) {
          hk_saver_free(s);
          return oom(status, "creating a Saver");
        }
        s->npartitioned = i + 1;
      }
    }
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

/* ---- helpers ------------------------------------------------------------------------------- */

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
  if (hk__fs_is_file(&fs, data)) return 1;
  /* A sharded checkpoint exists by its index. */
  return file_of(data, sizeof data, prefix, HK__SHARD_INDEX_EXT) && hk__fs_is_file(&fs, data);
}

hk_code hk_checkpoint_remove(const hk_env *env, const char *prefix, hk_status *status) {
  /* The data file, the graph description and its legacy name. */
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
    if (rc == HK_NOT_FOUND && i == 0) {
      /* No data file: a sharded checkpoint's index and every shard. */
      char *dir = hk__path_dirname(fs.env, paths[0]);
      int failed = 0;
      size_t nl = strlen(paths[0]) - (sizeof DATA_EXT - 1);
      char name[256];
      const char *base;
      paths[0][nl] = '\0';
      base = hk__path_basename(paths[0]);
      snprintf(name, sizeof name, "%s", base);
      paths[0][nl] = '.';
      rc = dir ? hk__shard_remove_files(&fs, dir, name, &removed, &failed, status)
               : hk_status_set(status, HK_RESOURCE_EXHAUSTED, "out of memory removing checkpoint %s", prefix);
      hk_env_free(fs.env, dir);
      if (rc != HK_OK) return rc;
      if (failed)
        return hk_status_set(status, HK_UNKNOWN,
                             "Checkpoint %s: some of its shard files could not be removed (see the log)", prefix);
    }
  }
  if (!removed)
    return hk_status_set(status, HK_NOT_FOUND, "Checkpoint %s not found: none of %s, %s, %s exists", prefix, paths[0],
                         paths[1], paths[2]);
  return HK_OK;
}

hk_code hk_checkpoint_mtimes(double *out, const hk_env *env, const char *const *prefixes, size_t n, hk_status *status) {
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
    if (rc == HK_NOT_FOUND && file_of(data, sizeof data, prefixes[i], HK__SHARD_INDEX_EXT)) {
      hk_status_clear(&why);
      rc = hk__fs_stat(&fs, data, &sb, &why); /* a sharded checkpoint's index */
    }
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
