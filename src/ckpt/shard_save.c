/*
 * The sharded save (checkpoint-format.md "Sharded checkpoints"): which
 * slice of each variable a rank writes, and the two-phase commit over the
 * Saver's group.
 *
 * The protocol, three collectives in all (four with partitioned
 * variables):
 *  1. all_gather "ready": the chief's directory is prepared (pending
 *     deletions finished, stale temporaries removed, retention planned),
 *     every rank has read its variables, and every rank saves the same
 *     checkpoint (name and step) with the same partitioned variables. Any
 *     failure ends the save here on every rank, before a file is written.
 *  1b. with partitioned variables, all_gather of each rank's element count
 *     of each: the global counts, and every rank's count checked against
 *     its block, the same check on every rank, so a wrong count fails the
 *     save everywhere with one message, before a file is written.
 *  2. every rank writes its shard (temporary, fsync, rename, directory
 *     fsync: the same write path as a single data file), then all_gather
 *     of each rank's outcome, size and header CRC. Any failure: every rank
 *     removes the shard it wrote, the save fails everywhere with the
 *     failing rank's message, and nothing else changes.
 *  3. the chief writes the index, then the state file exactly as an
 *     unsharded save does (the commit point), then retention; it
 *     broadcasts the outcome, and on a failure whether the new files may
 *     go (the state file is known not to name them).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "ckpt/safetensors_internal.h"
#include "ckpt/saver_internal.h"
#include "ckpt/shard.h"
#include "util/fs.h"
#include "util/path.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- what a rank writes ------------------------------------------------------------------- */

typedef struct layout {
  hk__ckpt_tensor *tensors; /* this rank's shard */
  size_t n;
  hk__ckpt_meta *meta;
  size_t nmeta;
  char **owned; /* strings the tensors and meta point to */
  size_t nowned;
  uint64_t *first; /* per tensor: a slice's first element within its variable */
  size_t *whole;   /* per tensor: the variable it is a slice of (an index of the save's tensors) */
  char shard_text[12], num_text[12];
} layout;

static void layout_free(const hk_env *env, layout *L) {
  for (size_t i = 0; i < L->nowned; i++) hk_env_free(env, L->owned[i]);
  hk_env_free(env, L->owned);
  hk_env_free(env, L->first);
  hk_env_free(env, L->whole);
  hk_env_free(env, L->tensors);
  hk_env_free(env, L->meta);
  memset(L, 0, sizeof *L);
}

static char *own(layout *L, char *s) {
  if (s) L->owned[L->nowned++] = s;
  return s;
}

/* The variables' tensors have valid shapes (hk_tensor_init checks them): never -1. */
static uint64_t elements(const hk_tensor *t) { return (uint64_t)hk_tensor_num_elements(t); }

/* Rank r's block of T elements cut into N: the first T % N one longer. */
static uint64_t block_start(uint64_t total, int r, int n) {
  uint64_t q = total / (uint64_t)n, rem = total % (uint64_t)n;
  return (uint64_t)r * q + ((uint64_t)r < rem ? (uint64_t)r : rem);
}

static int cmp_slice_name(const void *a, const void *b) {
  const hk__ckpt_tensor *x = *(const hk__ckpt_tensor *const *)a, *y = *(const hk__ckpt_tensor *const *)b;
  return strcmp(x->name, y->name);
}

static int is_partitioned(const hk_saver *s, size_t i) {
  return s->var_partitioned && i < s->nvars && s->var_partitioned[i];
}
static int is_per_rank(const hk_saver *s, size_t i) { return s->var_per_rank && i < s->nvars && s->var_per_rank[i]; }

/* A replicated variable named like a per-rank tensor would be read back as
 * one: refused before the ranks exchange anything. */
static hk_code check_names(hk_saver *s, const hk__ckpt_tensor *tensors, size_t n, hk_status *st) {
  for (size_t i = 0; i < n; i++)
    if (!is_per_rank(s, i) && strncmp(tensors[i].name, LOCAL_PREFIX, sizeof LOCAL_PREFIX - 1) == 0)
      return hk_status_set(st, HK_INVALID_ARGUMENT,
                           "variable '%s' cannot be saved in a sharded checkpoint: names starting with "
                           "\"" LOCAL_PREFIX "\" are its per-rank tensors (list it in per_rank_list, or rename it)",
                           tensors[i].name);
  return HK_OK;
}

/* The replicated variables, flattened in variable order, are cut into
 * `size` blocks; rank `rank` writes, for each variable that meets its
 * block, that part as a 1-D tensor of the variable's name (a variable of
 * no elements: rank 0, as the slice 0:0). A partitioned variable i of
 * part_total[i] elements in all is cut on its own: the rank writes its
 * whole value as its block of it (one of 0 elements in all: rank 0, as the
 * slice 0:0). Every per-rank variable is written whole as "local/<name>". */
static hk_code build_layout(hk_saver *s, const hk__ckpt_tensor *tensors, size_t n, const uint64_t *part_total, int rank,
                            int size, layout *L, hk_status *st) {
  const hk_env *env = senv(s);
  uint64_t total = 0, b0, b1, off = 0;
  const hk__ckpt_tensor **sliced = NULL;
  size_t nsliced = 0;

  memset(L, 0, sizeof *L);
  L->tensors = hk_env_calloc(env, n + 1, sizeof *L->tensors);
  L->owned = hk_env_calloc(env, 3 * n + 1, sizeof *L->owned);
  L->meta = hk_env_calloc(env, 2 * n + 2, sizeof *L->meta);
  L->first = hk_env_calloc(env, n + 1, sizeof *L->first);
  L->whole = hk_env_calloc(env, n + 1, sizeof *L->whole);
  sliced = hk_env_calloc(env, n + 1, sizeof *sliced);
  if (!L->tensors || !L->owned || !L->meta || !L->first || !L->whole || !sliced) goto oom;
  for (size_t i = 0; i < n; i++)
    if (!is_per_rank(s, i) && !is_partitioned(s, i)) total += elements(&tensors[i].value);
  b0 = block_start(total, rank, size);
  b1 = block_start(total, rank + 1, size);
  for (size_t i = 0; i < n; i++) {
    const hk_tensor *v = &tensors[i].value;
    hk__ckpt_tensor *t = &L->tensors[L->n];
    uint64_t c = elements(v), lo, hi;
    size_t esize = hk_dtype_size(v->dtype);
    int writes;
    if (is_per_rank(s, i)) {
      *t = tensors[i];
      t->name = own(L, hk__asprintf(env, LOCAL_PREFIX "%s", tensors[i].name));
      if (!t->name) goto oom;
      L->n++;
      continue;
    }
    if (is_partitioned(s, i)) {
      /* The exchange checked that c is this rank's block of part_total[i]. */
      lo = block_start(part_total[i], rank, size);
      hi = lo + c;
      writes = part_total[i] == 0 ? rank == 0 : c > 0;
    } else {
      lo = off > b0 ? off : b0;
      hi = off + c < b1 ? off + c : b1;
      writes = c == 0 ? rank == 0 : lo < hi;
      if (c == 0) lo = hi = off;
      lo -= off; /* the slice's place in its variable */
      hi -= off;
      off += c;
    }
    if (!writes) continue;
    *t = tensors[i];
    t->value.rank = 1;
    t->value.dims[0] = (int64_t)(hi - lo);
    t->value.nbytes = (size_t)(hi - lo) * esize;
    if (is_partitioned(s, i))
      t->value.data = v->data;
    else
      t->value.data = v->data ? (char *)v->data + (size_t)lo * esize : NULL;
    if (t->value.nbytes == 0) t->value.data = NULL;
    L->first[L->n] = lo; /* for its metadata */
    L->whole[L->n] = i;
    sliced[nsliced++] = t;
    L->n++;
  }
  snprintf(L->shard_text, sizeof L->shard_text, "%d", rank);
  snprintf(L->num_text, sizeof L->num_text, "%d", size);
  L->meta[L->nmeta++] = (hk__ckpt_meta){"", SHARD_KEY, L->shard_text};
  L->meta[L->nmeta++] = (hk__ckpt_meta){"", NUM_SHARDS_KEY, L->num_text};
  if (nsliced > 1) qsort(sliced, nsliced, sizeof *sliced, cmp_slice_name);
  for (size_t k = 0; k < nsliced; k++) {
    hk__ckpt_tensor *t = (hk__ckpt_tensor *)sliced[k];
    size_t i = L->whole[t - L->tensors];
    const hk_tensor *whole = &tensors[i].value;
    char shape[HK_MAX_RANK * 21 + 1];
    size_t sl = 0;
    shape[0] = '\0';
    if (is_partitioned(s, i)) {
      /* The global variable: one dimension of every rank's elements. */
      snprintf(shape, sizeof shape, "%" PRIu64, part_total[i]);
    } else {
      for (int32_t d = 0; d < whole->rank; d++)
        sl += (size_t)snprintf(shape + sl, sizeof shape - sl, d ? ",%" PRId64 : "%" PRId64, whole->dims[d]);
    }
    uint64_t first = L->first[t - L->tensors];
    char *range = own(L, hk__asprintf(env, "%" PRIu64 ":%" PRIu64, first, first + (uint64_t)t->value.dims[0]));
    char *shp = own(L, hk_env_strdup(env, shape));
    if (!range || !shp) goto oom;
    L->meta[L->nmeta++] = (hk__ckpt_meta){SLICE_KEY_PREFIX, t->name, range};
    L->meta[L->nmeta++] = (hk__ckpt_meta){SHAPE_KEY_PREFIX, t->name, shp};
  }
  hk_env_free(env, sliced);
  return HK_OK;

oom:
  hk_env_free(env, sliced);
  layout_free(env, L);
  return oom(st, "laying out a checkpoint shard");
}

/* ---- the records the ranks exchange ------------------------------------------------------- */

#define REC_MSG HK_STATUS_MESSAGE_MAX
#define REC_LEN (4 + 4 + 4 + 8 + 4 + 4 + REC_MSG)

typedef struct rec {
  hk_code code;
  uint32_t header_crc32c;
  uint32_t remove; /* the final record: the new files may go */
  uint64_t bytes;
  uint32_t parts, parts_crc; /* "ready": how many variables are partitioned, a CRC of their names */
  char msg[REC_MSG];
} rec;

static void put32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get32(const unsigned char *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

static void rec_put(unsigned char *b, const rec *r) {
  put32(b, (uint32_t)r->code);
  put32(b + 4, r->header_crc32c);
  put32(b + 8, r->remove);
  put32(b + 12, (uint32_t)r->bytes);
  put32(b + 16, (uint32_t)(r->bytes >> 32));
  put32(b + 20, r->parts);
  put32(b + 24, r->parts_crc);
  memcpy(b + 28, r->msg, REC_MSG);
  b[REC_LEN - 1] = '\0';
}

static void rec_get(rec *r, const unsigned char *b) {
  r->code = (hk_code)get32(b);
  r->header_crc32c = get32(b + 4);
  r->remove = get32(b + 8);
  r->bytes = (uint64_t)get32(b + 12) | (uint64_t)get32(b + 16) << 32;
  r->parts = get32(b + 20);
  r->parts_crc = get32(b + 24);
  memcpy(r->msg, b + 28, REC_MSG);
  r->msg[REC_MSG - 1] = '\0';
}

static void rec_of(rec *r, hk_code code, const hk_status *why) {
  memset(r, 0, sizeof *r);
  r->code = code;
  if (code != HK_OK) snprintf(r->msg, sizeof r->msg, "%s", why && why->message[0] ? why->message : hk_code_name(code));
}

/* ---- the protocol --------------------------------------------------------------------------- */

typedef struct ctx {
  hk_saver *s;
  const hk_env *env;
  int rank, size;
  layout L;
  int64_t step;
  unsigned wflags;
  char *shard_path;
  int shard_existed, wrote, index_written, removed_all;
  int broken;   /* a collective failed: no further call on the group */
  int gathered; /* the chief: the "ready" exchange happened */
  int all_written;
  unsigned char *buf;             /* size * REC_LEN */
  rec *recs;                      /* size */
  const hk__ckpt_tensor *tensors; /* the Saver's variables, in its order */
  size_t n;
  /* Partitioned variables: how many, a CRC of their names and dtypes, the
   * counts exchanged (nparts * 8 bytes out, size times that in) and each
   * variable's global element count (n; 0 for the others). */
  uint32_t nparts, parts_crc;
  unsigned char *count_out, *count_all;
  uint64_t *part_total;
} ctx;

/* Every rank's record; HK_OK when every rank's code is, else the first
 * failing rank's code with "rank <r> of <N>: <its message>". */
static hk_code exchange(ctx *c, const rec *mine, hk_status *st) {
  unsigned char out[REC_LEN];
  hk_status why = HK_STATUS_INIT;
  hk_code rc;
  rec_put(out, mine);
  rc = c->s->group->all_gather(c->s->group_user, out, c->buf, REC_LEN, &why);
  if (rc != HK_OK) {
    c->broken = 1;
    return hk_status_set(st, rc, "the ranks' exchange failed: %s", why.message[0] ? why.message : hk_code_name(rc));
  }
  for (int r = 0; r < c->size; r++) rec_get(&c->recs[r], c->buf + (size_t)r * REC_LEN);
  for (int r = 0; r < c->size; r++)
    if (c->recs[r].code != HK_OK)
      return hk_status_set(st, c->recs[r].code, "rank %d of %d: %s", r, c->size, c->recs[r].msg);
  return HK_OK;
}

/* The "ready" exchange: this rank's outcome so far, and which checkpoint
 * it saves (the CRC-32C of its name, and the step), so ranks given
 * different steps or paths fail together instead of committing an index
 * whose shards lie under other names. */
static hk_code exchange_ready(ctx *c, hk_code rc, const hk_status *why, const char *prefix, hk_status *st) {
  rec mine;
  rec_of(&mine, rc, why);
  if (prefix) mine.header_crc32c = hk_crc32c_extend(0, prefix, strlen(prefix));
  mine.bytes = (uint64_t)c->step;
  mine.parts = c->nparts;
  mine.parts_crc = c->parts_crc;
  rc = exchange(c, &mine, st);
  if (rc != HK_OK) return rc;
  for (int r = 1; r < c->size; r++) {
    if (c->recs[r].header_crc32c != c->recs[0].header_crc32c || c->recs[r].bytes != c->recs[0].bytes)
      return hk_status_set(st, HK_FAILED_PRECONDITION,
                           "rank %d of %d saves another checkpoint than rank 0 (step %" PRId64 ", rank 0's %" PRId64
                           ", or another save path): every rank of a group must save the same step to the same path",
                           r, c->size, (int64_t)c->recs[r].bytes, (int64_t)c->recs[0].bytes);
    if (c->recs[r].parts != c->recs[0].parts || c->recs[r].parts_crc != c->recs[0].parts_crc)
      return hk_status_set(st, HK_FAILED_PRECONDITION,
                           "rank %d of %d partitions other variables than rank 0 (%" PRIu32 ", rank 0's %" PRIu32
                           ", or other names or dtypes): every rank of a group must list the same partitioned_list",
                           r, c->size, c->recs[r].parts, c->recs[0].parts);
  }
  return HK_OK;
}

static void put64(unsigned char *p, uint64_t v) {
  put32(p, (uint32_t)v);
  put32(p + 4, (uint32_t)(v >> 32));
}
static uint64_t get64(const unsigned char *p) { return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32; }

/* The partitioned variables of the save, named and typed, for "ready". */
static void describe_parts(ctx *c) {
  uint32_t crc = 0;
  c->nparts = 0;
  for (size_t i = 0; i < c->n; i++) {
    unsigned char dt;
    if (!is_partitioned(c->s, i)) continue;
    dt = (unsigned char)c->tensors[i].value.dtype;
    crc = hk_crc32c_extend(crc, c->tensors[i].name, strlen(c->tensors[i].name) + 1);
    crc = hk_crc32c_extend(crc, &dt, 1);
    c->nparts++;
  }
  c->parts_crc = crc;
}

/* Phase 1b, after "ready" (so every rank has the same partitioned
 * variables): every rank's element count of each, summed into the global
 * count, and every rank's count checked against its block. Every rank
 * checks the same counts, so a wrong one fails the save on every rank with
 * the same message. */
static hk_code exchange_counts(ctx *c, hk_status *st) {
  const size_t np = c->nparts, row = np * 8;
  hk_status why = HK_STATUS_INIT;
  size_t k = 0;
  hk_code rc;
  if (np == 0) return HK_OK;
  for (size_t i = 0; i < c->n; i++)
    if (is_partitioned(c->s, i)) put64(c->count_out + 8 * k++, elements(&c->tensors[i].value));
  rc = c->s->group->all_gather(c->s->group_user, c->count_out, c->count_all, row, &why);
  if (rc != HK_OK) {
    c->broken = 1;
    return hk_status_set(st, rc, "the ranks' exchange failed: %s", why.message[0] ? why.message : hk_code_name(rc));
  }
  k = 0;
  for (size_t i = 0; i < c->n; i++) {
    uint64_t total = 0;
    if (!is_partitioned(c->s, i)) continue;
    for (int r = 0; r < c->size; r++) {
      uint64_t have = get64(c->count_all + (size_t)r * row + 8 * k);
      if (have > UINT64_MAX - total)
        return hk_status_set(st, HK_FAILED_PRECONDITION,
                             "partitioned variable '%s': the ranks' element counts add up to more than 2^64",
                             c->tensors[i].name);
      total += have;
    }
    for (int r = 0; r < c->size; r++) {
      uint64_t have = get64(c->count_all + (size_t)r * row + 8 * k);
      uint64_t want = block_start(total, r + 1, c->size) - block_start(total, r, c->size);
      if (have != want)
        return hk_status_set(st, HK_FAILED_PRECONDITION,
                             "rank %d of %d holds %" PRIu64
                             " elements of partitioned variable '%s', but its block of "
                             "the %" PRIu64 " elements the ranks hold together is %" PRIu64
                             " elements: rank r must hold block r as hk_group_block() cuts it",
                             r, c->size, have, c->tensors[i].name, total, want);
    }
    c->part_total[i] = total;
    k++;
  }
  return HK_OK;
}

static void remove_own(ctx *c) {
  hk__fs fs;
  hk_status why = HK_STATUS_INIT;
  if (!c->wrote || c->shard_existed) return;
  hk__fs_init(&fs, c->env);
  if (hk__fs_unlink(&fs, c->shard_path, &why) != HK_OK && why.code != HK_NOT_FOUND)
    hk_env_log(c->env, HK_LOG_WARNING, "Could not remove %s after a failed save: %s", c->shard_path, why.message);
  c->wrote = 0;
}

/* Phase 2 on every rank: the own shard, durable, then every rank's outcome. */
static hk_code write_shard(ctx *c, const char *prefix, hk_status *st) {
  hk__fs fs;
  hk_fs_stat sb;
  hk__ckpt_written w;
  hk_status why = HK_STATUS_INIT;
  rec mine;
  hk_code rc;

  hk__fs_init(&fs, c->env);
  rc = build_layout(c->s, c->tensors, c->n, c->part_total, c->rank, c->size, &c->L, &why);
  if (rc == HK_OK) c->shard_path = hk__shard_path(c->env, prefix, c->rank, c->size);
  if (rc != HK_OK) {
    /* this rank's outcome, exchanged below */
  } else if (!c->shard_path) {
    rc = oom(&why, "naming a checkpoint shard");
  } else {
    rc = hk__fs_stat(&fs, c->shard_path, &sb, &why);
    c->shard_existed = rc == HK_OK;
    if (rc == HK_NOT_FOUND) rc = HK_OK;
    hk_status_clear(&why);
  }
  if (rc == HK_OK) {
    rc = hk__ckpt_write_ex(c->env, c->shard_path, c->step, NULL, c->L.tensors, c->L.n, c->wflags, c->L.meta, c->L.nmeta,
                           &w, &why);
    c->wrote = 1; /* its temporary is gone either way; the name may hold it */
    if (rc != HK_OK) remove_own(c);
  }
  rec_of(&mine, rc, &why);
  if (rc == HK_OK) {
    mine.bytes = w.bytes;
    mine.header_crc32c = w.header_crc32c;
  }
  rc = exchange(c, &mine, st);
  if (rc != HK_OK) {
    remove_own(c);
    return rc;
  }
  c->all_written = 1;
  return HK_OK;
}

/* The chief's data writer for write_with. */
static hk_code chief_existed(void *user, const char *prefix, int *existed, hk_status *st) {
  ctx *c = user;
  hk__fs fs;
  hk_fs_stat sb;
  hk_status why = HK_STATUS_INIT;
  char *index = hk__shard_index_path(c->env, prefix);
  hk_code rc;
  if (!index) return oom(st, "naming a checkpoint index");
  hk__fs_init(&fs, c->env);
  rc = hk__fs_stat(&fs, index, &sb, &why);
  hk_env_free(c->env, index);
  *existed = rc == HK_OK;
  if (rc == HK_OK || rc == HK_NOT_FOUND) return HK_OK;
  hk__status_copy(st, &why);
  return rc;
}

static hk_code chief_write(void *user, const char *prefix, hk_status *st) {
  ctx *c = user;
  hk__shard_index ix;
  char *index = NULL, *text = NULL;
  size_t len = 0;
  hk_code rc;

  c->gathered = 1;
  rc = exchange_ready(c, HK_OK, NULL, prefix, st);
  if (rc == HK_OK) rc = exchange_counts(c, st);
  if (rc == HK_OK) rc = write_shard(c, prefix, st);
  if (rc != HK_OK) return rc;
  memset(&ix, 0, sizeof ix);
  ix.step = c->step;
  ix.num_shards = c->size;
  ix.shards = hk_env_calloc(c->env, (size_t)c->size, sizeof *ix.shards);
  index = hk__shard_index_path(c->env, prefix);
  if (!ix.shards || !index) {
    rc = oom(st, "writing a checkpoint index");
  } else {
    for (int r = 0; r < c->size; r++) {
      ix.shards[r].bytes = c->recs[r].bytes;
      ix.shards[r].header_crc32c = c->recs[r].header_crc32c;
    }
    rc = hk__shard_index_format(c->env, &ix, &text, &len, st);
    if (rc == HK_OK) rc = hk__write_file_atomic(c->env, index, text, len, st);
    c->index_written = 1; /* the name may hold it even when a step after the rename failed */
  }
  hk_env_free(c->env, text);
  hk_env_free(c->env, index);
  hk__shard_index_clear(c->env, &ix);
  return rc;
}

/* write_with may remove the new checkpoint's files (nothing durable names
 * them): the index and the chief's shard here, every other rank's by the
 * final broadcast. */
static void chief_remove(void *user, const char *prefix) {
  ctx *c = user;
  c->removed_all = 1;
  if (c->index_written) {
    hk__fs fs;
    hk_status why = HK_STATUS_INIT;
    char *index = hk__shard_index_path(c->env, prefix);
    hk__fs_init(&fs, c->env);
    if (index && hk__fs_unlink(&fs, index, &why) != HK_OK && why.code != HK_NOT_FOUND)
      hk_env_log(c->env, HK_LOG_WARNING, "Could not remove %s after a failed save: %s", index, why.message);
    hk_env_free(c->env, index);
  }
  remove_own(c);
}

static hk_code final_broadcast(ctx *c, rec *r, hk_status *st) {
  unsigned char b[REC_LEN];
  hk_status why = HK_STATUS_INIT;
  hk_code rc;
  rec_put(b, r);
  rc = c->s->group->broadcast(c->s->group_user, b, REC_LEN, 0, &why);
  if (rc != HK_OK) {
    c->broken = 1;
    return hk_status_set(st, rc, "the ranks' exchange failed: %s", why.message[0] ? why.message : hk_code_name(rc));
  }
  rec_get(r, b);
  return HK_OK;
}

hk_code hk__shard_write(hk_saver *s, const char *save_path, int64_t name_step, int64_t record_step, unsigned flags,
                        double now, const hk__ckpt_tensor *tensors, size_t ntensors, const char *graph,
                        size_t graph_len, hk_code pre_rc, const hk_status *pre, char **prefix_out, hk_status *st) {
  ctx c;
  hk_status why = HK_STATUS_INIT;
  hk_code rc = pre_rc;

  if (prefix_out) *prefix_out = NULL;
  memset(&c, 0, sizeof c);
  c.s = s;
  c.env = senv(s);
  c.rank = s->group->rank(s->group_user);
  c.size = s->group->size(s->group_user);
  c.step = record_step;
  c.wflags = (flags & HK__SAVE_ON_WRITER_THREAD ? 0u : (unsigned)HK__CKPT_WRITE_THREAD) |
             (s->allow_non_finite ? (unsigned)HK__CKPT_WRITE_NON_FINITE : 0u);
  c.tensors = tensors;
  c.n = ntensors;
  c.buf = hk_env_calloc(c.env, (size_t)c.size, REC_LEN);
  c.recs = hk_env_calloc(c.env, (size_t)c.size, sizeof *c.recs);
  if (rc != HK_OK) {
    hk__status_copy(&why, pre);
  } else if (!c.buf || !c.recs) {
    rc = oom(&why, "saving a sharded checkpoint");
  } else if (!s->var_per_rank && ntensors > 0) {
    rc = hk_status_set(&why, HK_INTERNAL, "the Saver's variables are not resolved");
  } else {
    rc = check_names(s, tensors, ntensors, &why);
  }
  if (rc == HK_OK) {
    describe_parts(&c);
    c.part_total = hk_env_calloc(c.env, ntensors + 1, sizeof *c.part_total);
    c.count_out = hk_env_calloc(c.env, (size_t)c.nparts + 1, 8);
    c.count_all = hk_env_calloc(c.env, (size_t)c.size * c.nparts + 1, 8);
    if (!c.part_total || !c.count_out || !c.count_all) rc = oom(&why, "saving a sharded checkpoint");
  }
  if (!c.buf || !c.recs) {
    /* Without room for the records there is no exchange to join: the
     * other ranks' wait ends at the group's deadline. */
    hk_env_free(c.env, c.buf);
    hk_env_free(c.env, c.recs);
    hk_env_free(c.env, c.part_total);
    hk_env_free(c.env, c.count_out);
    hk_env_free(c.env, c.count_all);
    hk__status_copy(st, &why);
    return rc;
  }

  if (c.rank == 0) {
    hk__data_writer dw = {chief_write, chief_remove, chief_existed, &c};
    if (rc == HK_OK) {
      rc = hk__saver_write_with(s, save_path, name_step, record_step, flags, now, tensors, ntensors, graph, graph_len,
                                &dw, prefix_out, &why);
    }
    if (!c.gathered) {
      /* Failed before the shards: the other ranks learn it from "ready". */
      rc = exchange_ready(&c, rc, &why, NULL, st);
    } else if (c.all_written && !c.broken) {
      rec fin;
      hk_code frc;
      rec_of(&fin, rc, &why);
      fin.remove = (uint32_t)c.removed_all;
      frc = final_broadcast(&c, &fin, st);
      if (frc != HK_OK && rc == HK_OK)
        rc = frc;
      else if (rc != HK_OK)
        hk_status_set(st, rc, "rank 0 of %d: %s", c.size, why.message);
    } else {
      hk__status_copy(st, &why);
    }
    if (rc != HK_OK && prefix_out) {
      hk_env_free(c.env, *prefix_out);
      *prefix_out = NULL;
    }
  } else {
    char *prefix = hk__saver_prefix(s, save_path, name_step);
    if (rc == HK_OK && !prefix) rc = oom(&why, "saving a sharded checkpoint");
    rc = exchange_ready(&c, rc, &why, prefix, st);
    if (rc == HK_OK) rc = exchange_counts(&c, st);
    if (rc == HK_OK) rc = write_shard(&c, prefix, st);
    if (rc == HK_OK) {
      rec fin;
      memset(&fin, 0, sizeof fin);
      rc = final_broadcast(&c, &fin, st);
      if (rc == HK_OK && fin.code != HK_OK) {
        if (fin.remove) remove_own(&c);
        rc = hk_status_set(st, fin.code, "rank 0 of %d: %s", c.size, fin.msg);
      }
    }
    if (rc == HK_OK && prefix_out) {
      *prefix_out = prefix;
      prefix = NULL;
    }
    hk_env_free(c.env, prefix);
  }
  hk_env_free(c.env, c.shard_path);
  hk_env_free(c.env, c.buf);
  hk_env_free(c.env, c.recs);
  hk_env_free(c.env, c.part_total);
  hk_env_free(c.env, c.count_out);
  hk_env_free(c.env, c.count_all);
  layout_free(c.env, &c.L);
  return rc;
}
