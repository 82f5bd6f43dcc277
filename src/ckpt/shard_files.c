/*
 * The files of a sharded checkpoint (checkpoint-format.md "Sharded
 * checkpoints"): their names, the index "<prefix>.shards" (formatted and
 * parsed here), the removal of every file of a checkpoint as one, and the
 * check of a group vtable.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "ckpt/shard.h"
#include "util/crc32c.h"
#include "util/fs.h"
#include "util/path.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ---- the group ---------------------------------------------------------------------- */

hk_code hk_group_check(const hk_group_vtable *vt, void *user, const char *what, hk_status *status) {
  int rank, size;
  if (!what) what = "group";
  if (!vt) return hk_status_set(status, HK_INVALID_ARGUMENT, "%s: the vtable is NULL", what);
  if (vt->version == 0 || vt->version > HK_GROUP_VTABLE_VERSION)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "%s: vtable version %u is not 1..%d", what, vt->version,
                         HK_GROUP_VTABLE_VERSION);
  if (!vt->rank || !vt->size || !vt->all_gather || !vt->broadcast)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "%s: the vtable's %s slot is NULL", what,
                         !vt->rank         ? "rank"
                         : !vt->size       ? "size"
                         : !vt->all_gather ? "all_gather"
                                           : "broadcast");
  size = vt->size(user);
  rank = vt->rank(user);
  if (size < 1 || size > HK__SHARD_MAX || rank < 0 || rank >= size)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "%s: rank %d of size %d (need 0 <= rank < size <= %d)", what,
                         rank, size, HK__SHARD_MAX);
  return HK_OK;
}

hk_code hk_group_block(size_t *first, size_t *len, size_t count, int nranks, int rank, hk_status *status) {
  if (!first || !len)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_group_block: %s is NULL", !first ? "first" : "len");
  if (nranks < 1) return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_group_block: nranks %d is not >= 1", nranks);
  if (rank < 0 || rank >= nranks)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_group_block: rank %d is not one of 0..%d", rank, nranks - 1);
  const size_t q = count / (size_t)nranks, extra = count % (size_t)nranks, r = (size_t)rank;
  *len = q + (r < extra);
  *first = q * r + (r < extra ? r : extra);
  return HK_OK;
}

/* ---- names ------------------------------------------------------------------------------ */

char *hk__shard_path(const hk_env *env, const char *prefix, int shard, int num_shards) {
  return hk__asprintf(env, "%s" HK__SHARD_INFIX "%05d-of-%05d.safetensors", prefix, shard, num_shards);
}

char *hk__shard_index_path(const hk_env *env, const char *prefix) {
  return hk__asprintf(env, "%s" HK__SHARD_INDEX_EXT, prefix);
}

size_t hk__shard_stem(const char *name, size_t len) {
  static const char tail[] = ".safetensors";
  size_t k = sizeof tail - 1, infix = sizeof HK__SHARD_INFIX - 1, at;
  /* "<stem>.shard-DDDDD-of-DDDDD.safetensors" */
  if (len < k + infix + 14 || memcmp(name + len - k, tail, k) != 0) return 0;
  at = len - k - 14 - infix;
  if (at == 0 || memcmp(name + at, HK__SHARD_INFIX, infix) != 0) return 0;
  for (size_t i = 0; i < 14; i++) {
    char c = name[at + infix + i];
    int digit = c >= '0' && c <= '9';
    if (i >= 5 && i < 9 ? c != "-of-"[i - 5] : !digit) return 0;
  }
  return at;
}

/* ---- removing a checkpoint's shards ------------------------------------------------------ */

typedef struct shard_list {
  const hk_env *env;
  const char *name;
  char **found;
  size_t n, cap;
  int oom;
} shard_list;

static hk_code collect_shard(void *user, const char *entry, hk_status *st) {
  shard_list *l = user;
  size_t len = strlen(entry), stem = hk__shard_stem(entry, len);
  (void)st;
  if (l->oom || stem != strlen(l->name) || memcmp(entry, l->name, stem) != 0) return HK_OK;
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 8;
    char **grown = hk_env_realloc(l->env, l->found, cap * sizeof *grown);
    if (!grown) {
      l->oom = 1;
      return HK_OK;
    }
    l->found = grown;
    l->cap = cap;
  }
  l->found[l->n] = hk_env_strdup(l->env, entry);
  if (!l->found[l->n])
    l->oom = 1;
  else
    l->n++;
  return HK_OK;
}

hk_code hk__shard_remove_files(const hk__fs *fs, const char *dir, const char *name, int *removed, int *failed,
                               hk_status *st) {
  const hk_env *env = fs->env;
  char *index = NULL, *stem = hk__path_join(env, dir, name);
  shard_list l;
  hk_status why = HK_STATUS_INIT;
  hk_code rc = HK_OK;

  memset(&l, 0, sizeof l);
  l.env = env;
  l.name = name;
  index = stem ? hk__shard_index_path(env, stem) : NULL;
  if (!index) {
    hk_env_free(env, stem);
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory removing checkpoint %s", name);
  }
  /* The index first: the checkpoint stops existing at once; shards a crash
   * leaves behind are found again by name, since the state file still
   * records the checkpoint as a pending deletion until they are gone. */
  if (hk__fs_unlink(fs, index, &why) == HK_OK) {
    *removed = 1;
  } else if (why.code != HK_NOT_FOUND) {
    *failed = 1;
    hk_env_log(env, HK_LOG_WARNING, "Ignoring: %s", why.message);
  }
  hk_status_clear(&why);
  rc = hk__fs_list(fs, dir, collect_shard, &l, &why);
  if (rc != HK_OK && rc != HK_NOT_FOUND) {
    *failed = 1;
    hk_env_log(env, HK_LOG_WARNING, "Ignoring: %s", why.message);
  }
  rc = l.oom ? hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory removing checkpoint %s", name) : HK_OK;
  for (size_t i = 0; i < l.n; i++) {
    char *path = hk__path_join(env, dir, l.found[i]);
    hk_status_clear(&why);
    if (!path) {
      rc = hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory removing checkpoint %s", name);
    } else if (hk__fs_unlink(fs, path, &why) == HK_OK) {
      *removed = 1;
    } else if (why.code != HK_NOT_FOUND) {
      *failed = 1;
      hk_env_log(env, HK_LOG_WARNING, "Ignoring: %s", why.message);
    }
    hk_env_free(env, path);
    hk_env_free(env, l.found[i]);
  }
  hk_env_free(env, l.found);
  hk_env_free(env, index);
  hk_env_free(env, stem);
  return rc;
}

/* ---- the index ---------------------------------------------------------------------------- */

#define CRC_LINE "# hooked-crc32c: "
#define FORMAT_LINE "format: " HK__SHARD_FORMAT "\n"

hk_code hk__shard_index_format(const hk_env *env, const hk__shard_index *ix, char **text, size_t *len, hk_status *st) {
  size_t cap = 128 + (size_t)ix->num_shards * 64, n;
  char *p = hk_env_alloc(env, cap);
  uint32_t crc;
  int w;
  *text = NULL;
  *len = 0;
  if (!p) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory writing a checkpoint index");
  /* The checksum line is filled in last, over every byte after it. */
  w = snprintf(p, cap, CRC_LINE "00000000\n" FORMAT_LINE "global_step: %" PRId64 "\nnum_shards: %d\n", ix->step,
               ix->num_shards);
  n = (size_t)w;
  for (int i = 0; i < ix->num_shards; i++) {
    w = snprintf(p + n, cap - n, "shard: %d %" PRIu64 " %08" PRIx32 "\n", i, ix->shards[i].bytes,
                 ix->shards[i].header_crc32c);
    n += (size_t)w;
  }
  crc = hk_crc32c_extend(0, p + sizeof CRC_LINE - 1 + 9, n - (sizeof CRC_LINE - 1 + 9));
  snprintf(p + sizeof CRC_LINE - 1, 9, "%08" PRIx32, crc);
  p[sizeof CRC_LINE - 1 + 8] = '\n';
  *text = p;
  *len = n;
  return HK_OK;
}

/* One line of the index: the bytes up to '\n', which must be there. */
static int next_line(const char **p, const char *end, char *buf, size_t cap) {
  const char *nl = memchr(*p, '\n', (size_t)(end - *p));
  size_t k;
  if (!nl) return 0;
  k = (size_t)(nl - *p);
  if (k >= cap || memchr(*p, '\0', k)) return 0;
  memcpy(buf, *p, k);
  buf[k] = '\0';
  *p = nl + 1;
  return 1;
}

static int parse_decimal(const char *s, int64_t *out, const char **rest) {
  int64_t v = 0;
  if (*s < '0' || *s > '9' || (*s == '0' && s[1] >= '0' && s[1] <= '9')) return 0;
  for (; *s >= '0' && *s <= '9'; s++) {
    if (v > (INT64_MAX - (*s - '0')) / 10) return 0;
    v = v * 10 + (*s - '0');
  }
  *out = v;
  *rest = s;
  return 1;
}

/* Exactly 8 lowercase hex digits, then the end of the line. */
static int parse_hex8(const char *s, uint32_t *out) { return hk__crc32c_from_hex(s, 8, out) && s[8] == '\0'; }

hk_code hk__shard_index_parse(const hk_env *env, const char *path, const char *text, size_t len, hk__shard_index *ix,
                              hk_status *st) {
  const char *p = text, *end = text + len, *rest;
  char line[160];
  int64_t v;
  uint32_t crc;
  int neg = 0;

  memset(ix, 0, sizeof *ix);
#define REFUSE(...)                                                                           \
  do {                                                                                        \
    char why_[200];                                                                           \
    snprintf(why_, sizeof why_, __VA_ARGS__);                                                 \
    hk__shard_index_clear(env, ix);                                                           \
    return hk_status_set(st, HK_DATA_LOSS, "Checkpoint index %s is corrupt: %s", path, why_); \
  } while (0)
  if (!next_line(&p, end, line, sizeof line) || strncmp(line, CRC_LINE, sizeof CRC_LINE - 1) != 0 ||
      !parse_hex8(line + sizeof CRC_LINE - 1, &crc))
    REFUSE("line 1 is not \"" CRC_LINE "<8 lowercase hex digits>\"");
  if (hk_crc32c_extend(0, p, (size_t)(end - p)) != crc)
    REFUSE("its bytes do not match the CRC-32C of line 1 (recorded %08" PRIx32 ", computed %08" PRIx32 ")", crc,
           hk_crc32c_extend(0, p, (size_t)(end - p)));
  if (!next_line(&p, end, line, sizeof line) || strcmp(line, "format: " HK__SHARD_FORMAT) != 0) {
    if (strncmp(line, "format: hooked-sharded/", 23) == 0) {
      hk__shard_index_clear(env, ix);
      return hk_status_set(st, HK_FAILED_PRECONDITION,
                           "Checkpoint index %s has %.60s, newer than this library reads (" HK__SHARD_FORMAT
                           "); upgrade hooked to read it",
                           path, line);
    }
    REFUSE("line 2 is not \"format: " HK__SHARD_FORMAT "\"");
  }
  if (!next_line(&p, end, line, sizeof line) || strncmp(line, "global_step: ", 13) != 0)
    REFUSE("line 3 is not \"global_step: <decimal>\"");
  neg = line[13] == '-';
  if (!parse_decimal(line + 13 + neg, &v, &rest) || *rest) REFUSE("line 3 is not \"global_step: <decimal>\"");
  ix->step = neg ? -v : v;
  if (!next_line(&p, end, line, sizeof line) || strncmp(line, "num_shards: ", 12) != 0 ||
      !parse_decimal(line + 12, &v, &rest) || *rest || v < 1 || v > HK__SHARD_MAX)
    REFUSE("line 4 is not \"num_shards: <1..%d>\"", HK__SHARD_MAX);
  ix->num_shards = (int)v;
  ix->shards = hk_env_calloc(env, (size_t)ix->num_shards, sizeof *ix->shards);
  if (!ix->shards) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory reading %s", path);
  for (int i = 0; i < ix->num_shards; i++) {
    int64_t r, bytes;
    if (!next_line(&p, end, line, sizeof line) || strncmp(line, "shard: ", 7) != 0 ||
        !parse_decimal(line + 7, &r, &rest) || *rest != ' ' || r != i || !parse_decimal(rest + 1, &bytes, &rest) ||
        *rest != ' ' || !parse_hex8(rest + 1, &ix->shards[i].header_crc32c))
      REFUSE("line %d is not \"shard: %d <bytes> <8 lowercase hex digits>\"", 5 + i, i);
    ix->shards[i].bytes = (uint64_t)bytes;
  }
  if (p != end) REFUSE("bytes after the last of its %d shard lines", ix->num_shards);
#undef REFUSE
  return HK_OK;
}

void hk__shard_index_clear(const hk_env *env, hk__shard_index *ix) {
  hk_env_free(env, ix->shards);
  memset(ix, 0, sizeof *ix);
}

hk_code hk__shard_index_read(const hk_env *env, const char *prefix, hk__shard_index *ix, hk_status *st) {
  char *path = hk__shard_index_path(env, prefix), *text = NULL;
  size_t len = 0;
  hk_code rc;
  memset(ix, 0, sizeof *ix);
  if (!path) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory reading checkpoint %s", prefix);
  rc = hk__read_file(env, path, (size_t)8 << 20, &text, &len, st);
  if (rc == HK_OK) rc = hk__shard_index_parse(env, path, text, len, ix, st);
  hk_env_free(env, text);
  hk_env_free(env, path);
  return rc;
}
