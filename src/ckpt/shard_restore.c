/*
 * Reading a sharded checkpoint (checkpoint-format.md "Sharded
 * checkpoints"): the index and its shards opened and checked against each
 * other, the slices checked to tile every variable, the variables
 * assembled from their slices (every byte CRC-checked), and the restore of
 * a Saver's variables from it — with any rank count: replicated variables
 * whole from the slices, per-rank ones from the rank's own shard when the
 * rank count is the one that saved.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "ckpt/safetensors_internal.h"
#include "ckpt/saver_internal.h"
#include "ckpt/shard.h"
#include "util/fs.h"
#include "util/path.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- opening -------------------------------------------------------------------------------- */

int hk__sharded_exists(const hk_env *env, const char *prefix) {
  hk__fs fs;
  char *index;
  int yes;
  env = hk__env_or_default(env);
  index = prefix ? hk__shard_index_path(env, prefix) : NULL;
  if (!index) return 0;
  hk__fs_init(&fs, env);
  yes = hk__fs_is_file(&fs, index);
  hk_env_free(env, index);
  return yes;
}

void hk__sharded_close(hk__sharded *s) {
  if (!s || !s->env) return;
  for (int i = 0; s->shards && i < s->ix.num_shards; i++) hk_checkpoint_reader_free(s->shards[i]);
  hk_env_free(s->env, s->shards);
  hk_env_free(s->env, s->vars);
  hk_env_free(s->env, s->slices);
  hk_env_free(s->env, s->prefix);
  hk__shard_index_clear(s->env, &s->ix);
  memset(s, 0, sizeof *s);
}

/* The slices' order: by variable name, then first element. */
static int cmp_slice(const void *a, const void *b, const hk__sharded *s) {
  const struct hk__sharded_slice *x = a, *y = b;
  const hk__reader_entry *ex = &s->shards[x->shard]->entries[x->entry];
  const hk__reader_entry *ey = &s->shards[y->shard]->entries[y->entry];
  int c = strcmp(ex->name, ey->name);
  if (c) return c;
  return x->first < y->first ? -1 : x->first > y->first;
}

/* Insertion sort over a gapped sequence would do, but the slices may be
 * many: a merge sort with the context at hand. */
static void sort_slices(hk__sharded *s, struct hk__sharded_slice *tmp, size_t lo, size_t hi) {
  size_t mid, i, j, k;
  if (hi - lo < 2) return;
  mid = lo + (hi - lo) / 2;
  sort_slices(s, tmp, lo, mid);
  sort_slices(s, tmp, mid, hi);
  for (i = lo, j = mid, k = lo; k < hi; k++)
    tmp[k] =
        (j >= hi || (i < mid && cmp_slice(&s->slices[i], &s->slices[j], s) <= 0)) ? s->slices[i++] : s->slices[j++];
  memcpy(s->slices + lo, tmp + lo, (hi - lo) * sizeof *tmp);
}

static hk_code refuse(hk_status *st, const char *path, const char *fmt, ...) HK_PRINTF(3, 4);
static hk_code refuse(hk_status *st, const char *path, const char *fmt, ...) {
  char why[360];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  return hk_status_set(st, HK_DATA_LOSS, "Sharded checkpoint %s is corrupt: %s", path, why);
}

static hk_code open_shards(hk__sharded *s, hk_status *st) {
  const hk_env *env = s->env;
  for (int r = 0; r < s->ix.num_shards; r++) {
    char *path = hk__shard_path(env, s->prefix, r, s->ix.num_shards);
    hk_checkpoint_reader *rd = NULL;
    hk_status why = HK_STATUS_INIT;
    hk_code rc;
    if (!path) return oom(st, "opening a sharded checkpoint");
    rc = hk_checkpoint_reader_open(&rd, env, path, &why);
    if (rc == HK_NOT_FOUND) {
      rc = refuse(st, s->prefix, "shard %d of %d, %s, is missing", r, s->ix.num_shards, path);
    } else if (rc != HK_OK) {
      hk__status_copy(st, &why);
    } else if (rd->data_start + rd->data_size != s->ix.shards[r].bytes ||
               rd->header_crc32c != s->ix.shards[r].header_crc32c) {
      rc = refuse(st, s->prefix,
                  "shard %s is not the one its index records (%" PRIu64 " bytes, header CRC-32C %08" PRIx32
                  "; the file has %" PRIu64 " bytes, %08" PRIx32 ")",
                  path, s->ix.shards[r].bytes, s->ix.shards[r].header_crc32c, rd->data_start + rd->data_size,
                  rd->header_crc32c);
    } else if (rd->step != s->ix.step) {
      rc =
          refuse(st, s->prefix, "shard %s holds step %" PRId64 ", its index step %" PRId64, path, rd->step, s->ix.step);
    } else if (rd->shard != r || rd->num_shards != s->ix.num_shards) {
      rc = refuse(st, s->prefix, "shard %s says it is shard %" PRId64 " of %" PRId64 ", its index shard %d of %d", path,
                  rd->shard, rd->num_shards, r, s->ix.num_shards);
    }
    hk_env_free(env, path);
    if (rc != HK_OK) {
      hk_checkpoint_reader_free(rd);
      return rc;
    }
    s->shards[r] = rd;
  }
  return HK_OK;
}

/* Every replicated variable: one dtype and whole shape across its slices,
 * which tile its elements exactly. */
static hk_code collect_vars(hk__sharded *s, hk_status *st) {
  const hk_env *env = s->env;
  struct hk__sharded_slice *tmp;
  size_t n = 0;
  for (int r = 0; r < s->ix.num_shards; r++)
    for (size_t i = 0; i < s->shards[r]->n; i++) n += s->shards[r]->entries[i].has_slice ? 1 : 0;
  if (n == 0) return HK_OK;
  s->slices = hk_env_calloc(env, n, sizeof *s->slices);
  s->vars = hk_env_calloc(env, n, sizeof *s->vars);
  tmp = hk_env_calloc(env, n, sizeof *tmp);
  if (!s->slices || !s->vars || !tmp) {
    hk_env_free(env, tmp);
    return oom(st, "opening a sharded checkpoint");
  }
  for (int r = 0; r < s->ix.num_shards; r++)
    for (size_t i = 0; i < s->shards[r]->n; i++) {
      const hk__reader_entry *e = &s->shards[r]->entries[i];
      if (!e->has_slice) continue;
      s->slices[s->nslices].shard = r;
      s->slices[s->nslices].entry = i;
      s->slices[s->nslices].first = e->slice_first;
      s->slices[s->nslices].end = e->slice_end;
      s->nslices++;
    }
  sort_slices(s, tmp, 0, s->nslices);
  hk_env_free(env, tmp);
  for (size_t k = 0; k < s->nslices;) {
    const hk__reader_entry *e0 = &s->shards[s->slices[k].shard]->entries[s->slices[k].entry];
    struct hk__sharded_var *v = &s->vars[s->nvars++];
    uint64_t at = 0;
    v->name = e0->name;
    v->dtype = e0->dtype;
    v->rank = e0->full_rank;
    memcpy(v->dims, e0->full_dims, sizeof v->dims);
    v->count = 1;
    for (int32_t d = 0; d < v->rank; d++) v->count *= (uint64_t)v->dims[d];
    v->first_slice = k;
    for (; k < s->nslices; k++) {
      const struct hk__sharded_slice *sl = &s->slices[k];
      const hk__reader_entry *e = &s->shards[sl->shard]->entries[sl->entry];
      if (strcmp(e->name, v->name) != 0) break;
      if (e->dtype != v->dtype || e->full_rank != v->rank ||
          memcmp(e->full_dims, v->dims, (size_t)v->rank * sizeof v->dims[0]) != 0)
        return refuse(st, s->prefix, "variable '%.200s' has another dtype or shape in shard %d than in shard %d",
                      v->name, sl->shard, s->slices[v->first_slice].shard);
      if (sl->first > at)
        return refuse(st, s->prefix,
                      "the slices of variable '%.200s' do not tile it: no shard holds elements %" PRIu64 " to %" PRIu64,
                      v->name, at, sl->first);
      if (sl->first < at || (sl->first == sl->end && v->count > 0) || (v->count == 0 && k > v->first_slice))
        return refuse(st, s->prefix,
                      "the slices of variable '%.200s' do not tile it: shard %d's slice %" PRIu64 ":%" PRIu64
                      " overlaps another",
                      v->name, sl->shard, sl->first, sl->end);
      at = sl->end;
    }
    v->nslices = k - v->first_slice;
    if (at != v->count)
      return refuse(st, s->prefix,
                    "the slices of variable '%.200s' do not tile it: they end at element %" PRIu64 " of its %" PRIu64,
                    v->name, at, v->count);
  }
  return HK_OK;
}

hk_code hk__sharded_open(hk__sharded *out, const hk_env *env, const char *prefix, hk_status *st) {
  hk_code rc;
  memset(out, 0, sizeof *out);
  env = hk__env_or_default(env);
  out->env = env;
  out->prefix = hk_env_strdup(env, prefix);
  if (!out->prefix) {
    out->env = NULL;
    return oom(st, "opening a sharded checkpoint");
  }
  rc = hk__shard_index_read(env, prefix, &out->ix, st);
  if (rc == HK_OK) {
    out->shards = hk_env_calloc(env, (size_t)out->ix.num_shards, sizeof *out->shards);
    rc = out->shards ? open_shards(out, st) : oom(st, "opening a sharded checkpoint");
  }
  if (rc == HK_OK) rc = collect_vars(out, st);
  if (rc != HK_OK) hk__sharded_close(out);
  return rc;
}

hk_code hk__sharded_verify(hk__sharded *s, hk_status *st) {
  for (int r = 0; r < s->ix.num_shards; r++) {
    hk_code rc = hk_checkpoint_reader_verify(s->shards[r], st);
    if (rc != HK_OK) return rc;
  }
  return HK_OK;
}

const struct hk__sharded_var *hk__sharded_find(const hk__sharded *s, const char *name) {
  size_t lo = 0, hi = s->nvars;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(s->vars[mid].name, name);
    if (c == 0) return &s->vars[mid];
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

hk_code hk__sharded_read_var(hk__sharded *s, const struct hk__sharded_var *v, void *dst, hk_status *st) {
  size_t esize = hk_dtype_size(v->dtype);
  for (size_t k = v->first_slice; k < v->first_slice + v->nslices; k++) {
    const struct hk__sharded_slice *sl = &s->slices[k];
    hk__read_target t;
    hk_code rc;
    if (sl->end == sl->first) continue;
    t.entry = sl->entry;
    t.dst = (char *)dst + (size_t)sl->first * esize;
    rc = hk__reader_read_into(s->shards[sl->shard], &t, 1, 0, st);
    if (rc != HK_OK) return rc;
  }
  return HK_OK;
}

hk_code hk__sharded_read_range(hk__sharded *s, const struct hk__sharded_var *v, uint64_t first, uint64_t end, void *dst,
                               hk_status *st) {
  size_t esize = hk_dtype_size(v->dtype);
  void *tmp = NULL;
  hk_code rc = HK_OK;
  for (size_t k = v->first_slice; k < v->first_slice + v->nslices && rc == HK_OK; k++) {
    const struct hk__sharded_slice *sl = &s->slices[k];
    uint64_t lo = sl->first > first ? sl->first : first, hi = sl->end < end ? sl->end : end;
    hk__read_target t;
    if (lo >= hi) continue; /* no part in the range (or an empty slice): not read */
    t.entry = sl->entry;
    if (lo == sl->first && hi == sl->end) {
      t.dst = (char *)dst + (size_t)(lo - first) * esize;
      rc = hk__reader_read_into(s->shards[sl->shard], &t, 1, 0, st);
      continue;
    }
    /* Only part of it is wanted: the whole slice, for its CRC, then that part. */
    hk_env_free(s->env, tmp);
    tmp = hk_env_alloc(s->env, (size_t)(sl->end - sl->first) * esize);
    if (!tmp) {
      rc = oom(st, "restoring a checkpoint");
      break;
    }
    t.dst = tmp;
    rc = hk__reader_read_into(s->shards[sl->shard], &t, 1, 0, st);
    if (rc == HK_OK)
      memcpy((char *)dst + (size_t)(lo - first) * esize, (char *)tmp + (size_t)(lo - sl->first) * esize,
             (size_t)(hi - lo) * esize);
  }
  hk_env_free(s->env, tmp);
  return rc;
}

/* ---- the reader's view of a whole sharded checkpoint ------------------------------------------ */

hk_code hk__reader_open_sharded(hk_checkpoint_reader *r, const char *prefix, hk_status *st) {
  const hk_env *env = &r->env;
  char *path;
  hk_code rc;
  if (!hk__sharded_exists(env, prefix))
    return hk_status_set(st, HK_NOT_FOUND, "Checkpoint %s not found: neither a data file nor an index", prefix);
  r->sharded = hk_env_calloc(env, 1, sizeof *r->sharded);
  path = hk__shard_index_path(env, prefix);
  if (!r->sharded || !path) {
    hk_env_free(env, path);
    return oom(st, "opening a sharded checkpoint");
  }
  hk_env_free(env, r->path);
  r->path = path;
  rc = hk__sharded_open(r->sharded, env, prefix, st);
  if (rc != HK_OK) {
    hk_env_free(env, r->sharded);
    r->sharded = NULL;
    return rc;
  }
  r->step = r->sharded->ix.step;
  r->shard = r->num_shards = -1;
  if (r->sharded->nvars > 0) {
    r->entries = hk_env_calloc(env, r->sharded->nvars, sizeof *r->entries);
    if (!r->entries) return oom(st, "opening a sharded checkpoint");
  }
  for (size_t i = 0; i < r->sharded->nvars; i++) {
    const struct hk__sharded_var *v = &r->sharded->vars[i];
    hk__reader_entry *e = &r->entries[i];
    e->name = (char *)(uintptr_t)v->name;
    e->dtype = v->dtype;
    e->rank = v->rank;
    memcpy(e->dims, v->dims, sizeof e->dims);
    e->begin = 0;
    e->end = v->count * hk_dtype_size(v->dtype);
  }
  r->n = r->sharded->nvars;
  return HK_OK;
}

/* ---- restoring a Saver's variables ------------------------------------------------------------ */

static void spec_of(hk_tensor *t, hk_dtype dtype, int32_t rank, const int64_t *dims) {
  memset(t, 0, sizeof *t);
  t->dtype = dtype;
  t->rank = rank;
  if (rank > 0 && rank <= HK_MAX_RANK) memcpy(t->dims, dims, (size_t)rank * sizeof dims[0]);
}

/* Where variable i comes from: a replicated variable (whole, or for a
 * partitioned one with a group, its block [first, first + len)), a
 * per-rank tensor of this rank's shard, or nowhere (it keeps its value). */
typedef struct source {
  const struct hk__sharded_var *var;
  size_t local; /* entry in the own shard; SIZE_MAX: none */
  int part;
  uint64_t first, len;
} source;

hk_code hk__saver_part_block(hk_saver *s, const hk_variable_info *info, int32_t whole_rank, const int64_t *whole_dims,
                             const char *path, uint64_t *first, uint64_t *len, hk_status *st) {
  int rank = s->group->rank(s->group_user), size = s->group->size(s->group_user);
  size_t f = 0, l = 0;
  int64_t have = info->rank == 1 ? info->dims[0] : -1;
  if (whole_rank != 1) {
    hk_tensor want, got;
    char a[160], b[160];
    spec_of(&want, info->dtype, info->rank, info->dims);
    spec_of(&got, info->dtype, whole_rank, whole_dims);
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "Partitioned variable %s (shape %s on rank %d) is a block of a one-dimensional variable, but "
                         "checkpoint %s holds it with shape %s",
                         info->name, hk_tensor_shape_str(&want, a, sizeof a), rank, path,
                         hk_tensor_shape_str(&got, b, sizeof b));
  }
  hk_code rc = hk_group_block(&f, &l, (size_t)whole_dims[0], size, rank, st);
  if (rc != HK_OK) return rc;
  if (have < 0 || (uint64_t)have != (uint64_t)l)
    return hk_status_set(st, HK_FAILED_PRECONDITION,
                         "partitioned variable %s has %" PRId64
                         " elements on rank %d of %d, but its block of the %" PRId64
                         " elements of checkpoint %s is %zu elements: rank r must hold block r as hk_group_block() "
                         "cuts it",
                         info->name, have, rank, size, whole_dims[0], path, l);
  *first = f;
  *len = l;
  return HK_OK;
}

static hk_code check_spec(const hk_variable_info *info, hk_dtype dtype, int32_t rank, const int64_t *dims,
                          const char *prefix, int *mismatch, hk_status *st) {
  hk_tensor want, have;
  spec_of(&want, info->dtype, info->rank, info->dims);
  spec_of(&have, dtype, rank, dims);
  if (dtype != info->dtype) {
    *mismatch = 1;
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "Variable %s has dtype %s but checkpoint %s holds it as %s: dtypes differ", info->name,
                         hk_dtype_name(info->dtype), prefix, hk_dtype_name(dtype));
  }
  if (!hk_tensor_same_spec(&want, &have)) {
    char a[160], b[160];
    *mismatch = 1;
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "Variable %s has shape %s but checkpoint %s holds it with shape %s: shapes differ", info->name,
                         hk_tensor_shape_str(&want, a, sizeof a), prefix, hk_tensor_shape_str(&have, b, sizeof b));
  }
  return HK_OK;
}

hk_code hk__shard_restore_impl(hk_saver *s, hk_raw_session *rs, const char *prefix, int *mismatch, hk_status *st) {
  const hk_env *env = senv(s);
  int rank = s->group ? s->group->rank(s->group_user) : 0, size = s->group ? s->group->size(s->group_user) : 1;
  hk__sharded sh;
  source *src = NULL;
  void *buf = NULL;
  hk_checkpoint_reader *mine;
  hk_code rc;

  *mismatch = 0;
  rc = hk__sharded_open(&sh, env, prefix, st);
  if (rc != HK_OK) return rc;
  hk_env_log(env, HK_LOG_INFO, "Restoring parameters from %s (%d shards, rank %d of %d)", prefix, sh.ix.num_shards,
             rank, size);
  mine = sh.ix.num_shards == size ? sh.shards[rank] : NULL;
  if (s->nvars > 0 && !(src = hk_env_calloc(env, s->nvars, sizeof *src))) {
    rc = oom(st, "restoring a checkpoint");
    goto done;
  }
  /* Every variable is checked before any is assigned. */
  for (size_t i = 0; i < s->nvars && rc == HK_OK; i++) {
    const hk_variable_info *info = &s->var_info[i];
    src[i].local = SIZE_MAX;
    if (s->var_per_rank[i]) {
      char name[HK_STATUS_MESSAGE_MAX];
      hk__reader_entry *e;
      if (!mine) {
        hk_env_log(env, HK_LOG_WARNING,
                   "Checkpoint %s was saved by %d ranks and this job has %d: per-rank variable %s keeps its value.",
                   prefix, sh.ix.num_shards, size, info->name);
        continue;
      }
      snprintf(name, sizeof name, LOCAL_PREFIX "%s", info->name);
      e = hk__reader_find_entry(mine, name);
      if (!e && (info->flags & HK_VAR_OPTIONAL)) {
        hk_env_log(env, HK_LOG_WARNING, "Checkpoint %s holds no %s; optional variable %s keeps its value.", prefix,
                   name, info->name);
        continue;
      }
      if (!e) {
        *mismatch = 1;
        rc = hk_status_set(st, HK_NOT_FOUND, "Key %s not found in checkpoint %s", name, mine->path);
        break;
      }
      rc = check_spec(info, e->dtype, e->rank, e->dims, prefix, mismatch, st);
      src[i].local = (size_t)(e - mine->entries);
      continue;
    }
    src[i].var = hk__sharded_find(&sh, info->name);
    if (!src[i].var && (info->flags & HK_VAR_OPTIONAL)) {
      hk_env_log(env, HK_LOG_WARNING, "Checkpoint %s holds no %s; optional variable %s keeps its value.", prefix,
                 info->name, info->name);
      continue;
    }
    if (!src[i].var) {
      *mismatch = 1;
      rc = hk_status_set(st, HK_NOT_FOUND, "Key %s not found in checkpoint %s", info->name, prefix);
      break;
    }
    if (s->group && s->var_partitioned[i]) {
      /* This rank's block, from the slices that cover it. */
      src[i].part = 1;
      rc = check_spec(info, src[i].var->dtype, info->rank, info->dims, prefix, mismatch, st);
      if (rc == HK_OK)
        rc = hk__saver_part_block(s, info, src[i].var->rank, src[i].var->dims, prefix, &src[i].first, &src[i].len, st);
      if (rc != HK_OK) *mismatch = 1;
      continue;
    }
    rc = check_spec(info, src[i].var->dtype, src[i].var->rank, src[i].var->dims, prefix, mismatch, st);
  }
  /* Straight into the executor's storage where it lends it; through a
   * buffer and an assign otherwise (host-loop states, optional variables,
   * which must keep a verified value if a slice is corrupt). */
  for (size_t i = 0; i < s->nvars && rc == HK_OK; i++) {
    const hk_variable_info *info = &s->var_info[i];
    hk_tensor storage, value;
    hk_status why = HK_STATUS_INIT;
    size_t nbytes = hk__saver_info_nbytes(info);
    if (!src[i].var && src[i].local == SIZE_MAX) continue;
    rc = (info->flags & HK_VAR_OPTIONAL) ? HK_UNIMPLEMENTED
                                         : hk_raw_session_variable_storage(&storage, rs, s->var_index[i], &why);
    if (rc == HK_OK) {
      if (src[i].part) {
        rc = hk__sharded_read_range(&sh, src[i].var, src[i].first, src[i].first + src[i].len, storage.data, st);
      } else if (src[i].var) {
        rc = hk__sharded_read_var(&sh, src[i].var, storage.data, st);
      } else {
        hk__read_target t = {src[i].local, storage.data};
        rc = hk__reader_read_into(mine, &t, 1, 0, st);
      }
      continue;
    }
    if (rc != HK_UNIMPLEMENTED) {
      *mismatch = 1; /* an executor error, not the file's: no fallback either */
      hk__status_copy(st, &why);
      break;
    }
    hk_env_free(env, buf);
    buf = nbytes > 0 ? hk_env_alloc(env, nbytes) : NULL;
    if (nbytes > 0 && !buf) {
      rc = oom(st, "restoring a checkpoint");
      break;
    }
    if (src[i].part) {
      rc = hk__sharded_read_range(&sh, src[i].var, src[i].first, src[i].first + src[i].len, buf, st);
    } else if (src[i].var) {
      rc = hk__sharded_read_var(&sh, src[i].var, buf, st);
    } else {
      hk__read_target t = {src[i].local, buf};
      rc = hk__reader_read_into(mine, &t, 1, 0, st);
    }
    if (rc != HK_OK) break;
    spec_of(&value, info->dtype, info->rank, info->dims);
    value.nbytes = nbytes;
    value.data = buf;
    rc = hk_raw_session_assign_variable(rs, s->var_index[i], &value, st);
    if (rc != HK_OK) *mismatch = 1;
  }

done:
  hk_env_free(env, buf);
  hk_env_free(env, src);
  hk__sharded_close(&sh);
  return rc;
}

/* ---- agreeing across the group ------------------------------------------------------------------ */

#define AGREE_MSG HK_STATUS_MESSAGE_MAX
#define AGREE_LEN (4 + 4 + 4 + AGREE_MSG)

hk_code hk__shard_agree(hk_saver *s, hk_code rc, int fatal, uint32_t what, const hk_status *mine, int *any_fatal,
                        hk_status *st) {
  int size = s->group->size(s->group_user);
  const hk_env *env = senv(s);
  unsigned char out[AGREE_LEN], *all = hk_env_calloc(env, (size_t)size, AGREE_LEN);
  hk_status why = HK_STATUS_INIT;
  hk_code grc;

  *any_fatal = 0;
  memset(out, 0, sizeof out);
  for (int i = 0; i < 4; i++) {
    out[i] = (unsigned char)((uint32_t)rc >> (8 * i));
    out[4 + i] = (unsigned char)((uint32_t)fatal >> (8 * i));
    out[8 + i] = (unsigned char)(what >> (8 * i));
  }
  if (rc != HK_OK)
    snprintf((char *)out + 12, AGREE_MSG, "%s", mine && mine->message[0] ? mine->message : hk_code_name(rc));
  if (!all) return oom(st, "agreeing on a restore");
  grc = s->group->all_gather(s->group_user, out, all, AGREE_LEN, &why);
  if (grc != HK_OK) {
    hk_env_free(env, all);
    *any_fatal = 1;
    return hk_status_set(st, grc, "the ranks' exchange failed: %s", why.message[0] ? why.message : hk_code_name(grc));
  }
  for (int r = 0; r < size; r++) {
    const unsigned char *p = all + (size_t)r * AGREE_LEN;
    uint32_t code = 0, fat = 0, w = 0;
    for (int i = 3; i >= 0; i--) {
      code = code << 8 | p[i];
      fat = fat << 8 | p[4 + i];
      w = w << 8 | p[8 + i];
    }
    if (w != what) {
      hk_env_free(env, all);
      *any_fatal = 1;
      return hk_status_set(st, HK_FAILED_PRECONDITION,
                           "rank %d of %d restores another checkpoint than rank 0 (do all ranks see the same "
                           "checkpoint directory?)",
                           r, size);
    }
    if (code != HK_OK) {
      char msg[AGREE_MSG];
      memcpy(msg, p + 12, AGREE_MSG);
      msg[AGREE_MSG - 1] = '\0';
      *any_fatal = fat != 0;
      hk_env_free(env, all);
      return hk_status_set(st, (hk_code)code, "rank %d of %d: %s", r, size, msg);
    }
  }
  hk_env_free(env, all);
  return HK_OK;
}
