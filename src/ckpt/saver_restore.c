/*
 * Restore: a checkpoint's tensors into the executor's variables, read
 * straight into their storage where the executor offers it; the fallback
 * over a directory's candidates (the state file's, or a scan's), each
 * failure named in the one error when all fail; latest_checkpoint.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "ckpt/ckpt.h"
#include "ckpt/ckpt_internal.h"
#include "ckpt/safetensors_internal.h"
#include "ckpt/saver_internal.h"
#include "ckpt/shard.h"
#include "util/common.h"
#include "util/fs.h"
#include "util/path.h"

#include <stdio.h>
#include <string.h>

/* ---- restore -------------------------------------------------------------------------------- */

static void spec_of(hk_tensor *t, hk_dtype dtype, int32_t rank, const int64_t *dims) {
  memset(t, 0, sizeof *t);
  t->dtype = dtype;
  t->rank = rank;
  if (rank > 0 && rank <= HK_MAX_RANK) memcpy(t->dims, dims, (size_t)rank * sizeof dims[0]);
}

/* No tensor of the checkpoint for this variable (an optional one). */
#define NOT_IN_CHECKPOINT SIZE_MAX

/* After a restore succeeded: what it did not do. Each optional variable
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
    if (used[j] || hk_checkpoint_reader_entry(&e, r, j, NULL) != HK_OK) continue;
    hk_env_log(env, s->explicit_vars ? HK_LOG_DEBUG : HK_LOG_WARNING,
               "Checkpoint %s holds %s, which this program does not restore.", path, e.name);
  }
  hk_env_free(env, used);
  return HK_OK;
}

/* *mismatch is set for a model that differs from the file (a missing
 * variable, another dtype or shape), which restore_latest must
 * return at once rather than fall back on. */
static hk_code restore_impl(hk_saver *s, hk_raw_session *rs, const char *path, int *mismatch, hk_status *st) {
  const hk_env *env = senv(s);
  hk_checkpoint_reader *r = NULL;
  size_t *where = NULL;
  uint64_t *part_first = NULL;     /* a partitioned variable's block, with a group: its first element */
  hk__read_target *targets = NULL; /* read in place */
  size_t *assign = NULL;           /* assigned: Saver indices */
  size_t ntargets = 0, nassign = 0;
  hk_code rc;

  *mismatch = 1; /* the executor's errors are not the file's */
  rc = hk__saver_resolve_vars(s, st);
  if (rc != HK_OK) return rc;
  *mismatch = 0;
  rc = hk_checkpoint_reader_open(&r, env, path, st);
  if (rc == HK_OK && r->sharded) {
    /* A sharded checkpoint: its own restore, with the rank's own part. */
    hk_checkpoint_reader_free(r);
    return hk__shard_restore_impl(s, rs, path, mismatch, st);
  }
  if (rc == HK_NOT_FOUND) return hk_status_set(st, rc, "The passed save_path is not a valid checkpoint: %s", path);
  if (rc != HK_OK) return rc;
  hk_env_log(env, HK_LOG_INFO, "Restoring parameters from %s", path);
  if (s->nvars > 0) {
    where = hk_env_calloc(env, s->nvars, sizeof *where);
    part_first = hk_env_calloc(env, s->nvars, sizeof *part_first);
    if (!where || !part_first) {
      rc = oom(st, "restoring a checkpoint");
      goto done;
    }
  }
  /* Every variable is checked before any is assigned. */
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
    if (rc == HK_OK) rc = hk_checkpoint_reader_entry(&e, r, where[i], &why);
    if (rc != HK_OK) {
      hk__status_copy(st, &why);
      goto done;
    }
    spec_of(&want, info->dtype, info->rank, info->dims);
    spec_of(&have, e.dtype, e.rank, e.dims);
    if (s->group && s->var_partitioned[i] && e.dtype == info->dtype) {
      /* This rank's block of the whole variable the file holds. */
      uint64_t len;
      rc = hk__saver_part_block(s, info, e.rank, e.dims, path, &part_first[i], &len, st);
      if (rc != HK_OK) {
        *mismatch = 1;
        goto done;
      }
      continue;
    }
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
                         hk_tensor_shape_str(&want, a, sizeof a), path, hk_tensor_shape_str(&have, b, sizeof b));
      goto done;
    }
  }
  /* Two ways in. A variable whose storage the executor hands out is
   * read straight into it, its CRC computed in the same pass; every other
   * one gets a checked view assigned (executors without the slot, host-loop
   * states, partitioned variables with a group, which take their block of
   * the whole tensor checked, and optional variables: an older candidate
   * may lack one,
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
    rc = (s->var_info[i].flags & HK_VAR_OPTIONAL) || (s->group && s->var_partitioned[i])
             ? HK_UNIMPLEMENTED
             : hk_raw_session_variable_storage(&storage, rs, s->var_index[i], &why);
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
    value.nbytes = hk__saver_info_nbytes(info);
    value.data = value.nbytes > 0
                     ? (void *)(uintptr_t)((const char *)view.data + (size_t)part_first[i] * hk_dtype_size(info->dtype))
                     : NULL;
    rc = hk_raw_session_assign_variable(rs, s->var_index[i], &value, st);
    if (rc != HK_OK) {
      *mismatch = 1; /* an executor error, not the file's: no fallback either */
      goto done;
    }
  }
  rc = report_unrestored(s, r, path, where, st);

done:
  hk_env_free(env, where);
  hk_env_free(env, part_first);
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
  if (saver->group) {
    /* Every rank restores, then every rank learns whether all did. */
    hk_status why = HK_STATUS_INIT;
    int fatal;
    hk_code rc = restore_impl(saver, rs, path, &mismatch, &why);
    return hk__shard_agree(saver, rc, mismatch, hk_crc32c_extend(0, path, strlen(path)), &why, &fatal, status);
  }
  return restore_impl(saver, rs, path, &mismatch, status);
}

/* ---- candidates ---------------------------------------------------------------------------- */

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
  /* A shard is part of a sharded checkpoint, which its index names. */
  if (hk__shard_stem(entry, n) > 0) return HK_OK;
  if (n > sizeof HK__SHARD_INDEX_EXT - 1 &&
      strcmp(entry + n - (sizeof HK__SHARD_INDEX_EXT - 1), HK__SHARD_INDEX_EXT) == 0)
    k = sizeof HK__SHARD_INDEX_EXT - 1; /* a sharded checkpoint's index */
  if (x->c->oom || n <= k || n - k > 255 ||
      (strcmp(entry + n - k, DATA_EXT) != 0 && strcmp(entry + n - k, HK__SHARD_INDEX_EXT) != 0))
    return HK_OK;
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

/* Every "<name>-<step>.safetensors" of dir (valid names), newest step
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
 * Candidates from the state file, or from a directory scan when
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
    /* A state file deleted by hand, or lost with a copied directory,
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

/* ---- the DATA_LOSS when nothing verifies or restores: every candidate named -------------- */

/* What each failed candidate gets in the message: its name relative to the
 * directory (a valid name: at most 255 bytes) and its reason. */
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

hk_code hk_checkpoint_latest(char **out, const hk_env *env, const char *dir, const char *latest_filename,
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
    hk_status why = HK_STATUS_INIT;
    rc = hk_checkpoint_verify(env, c.paths[i], &why);
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
    if (saver->group) {
      /* All ranks together: the candidate is restored when every rank
       * restored it, else every rank goes on to the next one (or stops,
       * when a rank's failure is not the checkpoint's). */
      hk_status all = HK_STATUS_INIT;
      int fatal = 0;
      rc = hk__shard_agree(saver, rc, mismatch || rc == HK_RESOURCE_EXHAUSTED,
                           hk_crc32c_extend(0, hk__path_basename(c.paths[i]), strlen(hk__path_basename(c.paths[i]))),
                           &why, &fatal, &all);
      hk__status_copy(&why, &all);
      mismatch = fatal;
    }
    if (rc == HK_OK) {
      failures_free(&fl);
      *restored = hk_env_strdup(env, c.paths[i]);
      cands_free(&c);
      if (!*restored) return oom(st, "restoring a checkpoint");
      /* A list found by a scan is never adopted. */
      if (!scanned) rc = hk__saver_recover_list(saver, dir, hk_env_wall(env), NULL, st);
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

hk_code hk_checkpoint_verify(const hk_env *env, const char *prefix, hk_status *status) {
  hk_checkpoint_reader *r = NULL;
  hk_code rc;
  if (!prefix) return hk_status_set(status, HK_INVALID_ARGUMENT, "prefix is NULL");
  rc = hk_checkpoint_reader_open(&r, env, prefix, status);
  if (rc == HK_OK) rc = hk_checkpoint_reader_verify(r, status);
  hk_checkpoint_reader_free(r);
  return rc;
}

hk_code hk_saver_restore_latest(const char **restored, hk_saver *saver, hk_raw_session *rs, const char *dir,
                                hk_status *status) {
  char *got = NULL;
  hk_code rc;
  if (restored) *restored = NULL;
  if (!saver) return hk_status_set(status, HK_INVALID_ARGUMENT, "saver is NULL");
  if (!rs) return hk_status_set(status, HK_INVALID_ARGUMENT, "rs is NULL");
  if (!dir) return hk_status_set(status, HK_INVALID_ARGUMENT, "dir is NULL");
  rc = hk__saver_restore_latest(saver, rs, dir, &got, status);
  if (rc != HK_OK) return rc;
  if (got) {
    hk_env_free(senv(saver), saver->prefix);
    saver->prefix = got;
  }
  if (restored) *restored = got;
  return HK_OK;
}
