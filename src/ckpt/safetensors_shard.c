/*
 * A shard file's own metadata (checkpoint-format.md "Sharded checkpoints"):
 * "shard" and "num_shards", and for every slice of a replicated variable
 * "slice:<name>" (its flat element range) and "shape:<name>" (the
 * variable's whole shape). Checked when the file is opened, against the
 * file's tensors, so a reader never assembles a variable from a slice whose
 * description is damaged.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "ckpt/safetensors_internal.h"

#include <inttypes.h>
#include <string.h>

static hk_code bad(hk_checkpoint_reader *r, const char *tensor, const char *what, hk_status *st) {
  char shown[160];
  if (tensor)
    return hk_status_set(st, HK_DATA_LOSS, "Checkpoint %s is corrupt: tensor '%s': %s", r->path,
                         hk__safetensors_escaped_name(tensor, shown, sizeof shown), what);
  return hk_status_set(st, HK_DATA_LOSS, "Checkpoint %s is corrupt: %s", r->path, what);
}

/* "<first>:<end>", two decimal integers as the format writes them. */
static int parse_range(const char *v, uint64_t *first, uint64_t *end) {
  char a[24], b[24];
  const char *colon = strchr(v, ':');
  int64_t x, y;
  if (!colon || (size_t)(colon - v) >= sizeof a || strlen(colon + 1) >= sizeof b) return 0;
  memcpy(a, v, (size_t)(colon - v));
  a[colon - v] = '\0';
  strcpy(b, colon + 1);
  if (a[0] == '-' || b[0] == '-' || !hk__safetensors_parse_int(a, &x) || !hk__safetensors_parse_int(b, &y) || x > y)
    return 0;
  *first = (uint64_t)x;
  *end = (uint64_t)y;
  return 1;
}

/* "" (a scalar) or "<d0>,<d1>,...": at most HK_MAX_RANK dimensions. */
static int parse_shape(const char *v, int32_t *rank, int64_t *dims) {
  *rank = 0;
  if (!*v) return 1;
  for (;;) {
    char d[24];
    size_t k = strcspn(v, ",");
    int64_t x;
    if (*rank == HK_MAX_RANK || k == 0 || k >= sizeof d) return 0;
    memcpy(d, v, k);
    d[k] = '\0';
    if (d[0] == '-' || !hk__safetensors_parse_int(d, &x)) return 0;
    dims[(*rank)++] = x;
    if (!v[k]) return 1;
    v += k + 1;
  }
}

hk_code hk__reader_check_shard(hk_checkpoint_reader *r, const char *shard, const char *num_shards,
                               const hk__slice_note *notes, size_t nnotes, hk_status *st) {
  char why[320];
  r->shard = -1;
  r->num_shards = -1;
  if (!shard && !num_shards) {
    if (nnotes > 0)
      return bad(r, notes[0].name, "a slice or shape key in a file that is no shard (no \"" NUM_SHARDS_KEY "\")", st);
    return HK_OK;
  }
  if (!shard || !num_shards)
    return bad(r, NULL, "a shard needs both \"" SHARD_KEY "\" and \"" NUM_SHARDS_KEY "\"; one is missing", st);
  if (shard[0] == '-' || num_shards[0] == '-' || !hk__safetensors_parse_int(shard, &r->shard) ||
      !hk__safetensors_parse_int(num_shards, &r->num_shards) || r->num_shards < 1 || r->shard >= r->num_shards) {
    snprintf(why, sizeof why,
             "\"" SHARD_KEY "\" \"%.24s\" and \"" NUM_SHARDS_KEY "\" \"%.24s\" are not 0 <= shard < num_shards", shard,
             num_shards);
    return bad(r, NULL, why, st);
  }
  for (size_t i = 0; i < nnotes; i++) {
    hk__reader_entry *e = hk__reader_find_entry(r, notes[i].name);
    if (!e) return bad(r, notes[i].name, "a slice or shape key names a tensor the file does not have", st);
    if (notes[i].is_shape) {
      int overflow;
      if (e->has_slice & 2) return bad(r, e->name, "its shape key appears twice", st);
      if (!parse_shape(notes[i].value, &e->full_rank, e->full_dims)) {
        snprintf(why, sizeof why, "shape \"%.60s\" is not a list of at most %d dimensions", notes[i].value,
                 HK_MAX_RANK);
        return bad(r, e->name, why, st);
      }
      (void)hk__safetensors_shape_bytes(e->dtype, e->full_rank, e->full_dims, &overflow);
      if (overflow) return bad(r, e->name, "its whole shape's byte size overflows 64 bits", st);
      e->has_slice |= 2;
    } else {
      if (e->has_slice & 1) return bad(r, e->name, "its slice key appears twice", st);
      if (!parse_range(notes[i].value, &e->slice_first, &e->slice_end)) {
        snprintf(why, sizeof why, "slice \"%.60s\" is not \"<first>:<end>\" with first <= end", notes[i].value);
        return bad(r, e->name, why, st);
      }
      e->has_slice |= 1;
    }
  }
  for (size_t i = 0; i < r->n; i++) {
    hk__reader_entry *e = &r->entries[i];
    uint64_t whole = 1;
    if (strncmp(e->name, LOCAL_PREFIX, sizeof LOCAL_PREFIX - 1) == 0) {
      if (e->has_slice) return bad(r, e->name, "a per-rank tensor (local/) has a slice or shape key", st);
      continue;
    }
    if (e->has_slice != 3)
      return bad(r, e->name,
                 e->has_slice == 1   ? "its slice has no \"" SHAPE_KEY_PREFIX "\" key"
                 : e->has_slice == 2 ? "its shape has no \"" SLICE_KEY_PREFIX "\" key"
                                     : "a shard's tensor has no \"" SLICE_KEY_PREFIX "\" key",
                 st);
    e->has_slice = 1;
    for (int32_t d = 0; d < e->full_rank; d++) whole *= (uint64_t)e->full_dims[d];
    if (e->rank != 1 || (uint64_t)e->dims[0] != e->slice_end - e->slice_first || e->slice_end > whole) {
      snprintf(why, sizeof why,
               "slice %" PRIu64 ":%" PRIu64
               " does not fit: the tensor must be 1-D of end - first elements, inside the "
               "%" PRIu64 " elements of the whole variable",
               e->slice_first, e->slice_end, whole);
      return bad(r, e->name, why, st);
    }
  }
  return HK_OK;
}
