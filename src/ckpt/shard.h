/*
 * Sharded checkpoints inside the checkpoint layer (hk__ names; not API):
 * the files' names, the index, the removal of a checkpoint's shards, and
 * the reads a restore and the tools share.
 *
 *   shard_files.c    names, the index "<prefix>.shards", removal, hk_group_check
 *   shard_save.c     the sharded save: the layout and the two-phase commit
 *   shard_restore.c  opening a sharded checkpoint, verifying it, restoring from it
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_CKPT_SHARD_H
#define HOOKED_CKPT_SHARD_H

#include "ckpt/ckpt_internal.h"
#include "util/fs.h"

/* "<prefix>.shard-00002-of-00004.safetensors" and "<prefix>.shards". */
#define HK__SHARD_INFIX ".shard-"
#define HK__SHARD_INDEX_EXT ".shards"
#define HK__SHARD_FORMAT "hooked-sharded/1"
/* Five digits each in the names. */
#define HK__SHARD_MAX 99999

/** "<prefix>.shard-<r>-of-<n>.safetensors", allocated through env. */
char *hk__shard_path(const hk_env *env, const char *prefix, int shard, int num_shards);
/** "<prefix>.shards", allocated through env. */
char *hk__shard_index_path(const hk_env *env, const char *prefix);
/** When entry `name` (len bytes) is "<stem>.shard-DDDDD-of-DDDDD.safetensors",
 *  the length of <stem> (> 0); else 0. */
size_t hk__shard_stem(const char *name, size_t len);

/**
 * Remove checkpoint dir/name's index and every shard file of that name
 * the directory lists (whatever their count), as retention and the
 * pending deletions do: *removed set when one existed, *failed when a
 * removal failed (logged "Ignoring: %s"). Only RESOURCE_EXHAUSTED is
 * returned.
 */
hk_code hk__shard_remove_files(const hk__fs *fs, const char *dir, const char *name, int *removed, int *failed,
                               hk_status *st);

/** A sharded checkpoint's index. */
typedef struct hk__shard_index {
  int64_t step;
  int num_shards;
  struct {
    uint64_t bytes;
    uint32_t header_crc32c;
  } * shards; /* num_shards, owned (env allocator) */
} hk__shard_index;

/** The index's text (checkpoint-format.md); *text owned (env allocator). */
hk_code hk__shard_index_format(const hk_env *env, const hk__shard_index *ix, char **text, size_t *len, hk_status *st);
/** Parse an index's text; DATA_LOSS "Checkpoint index <path> is corrupt: ..."; FAILED_PRECONDITION for a newer format.
 */
hk_code hk__shard_index_parse(const hk_env *env, const char *path, const char *text, size_t len, hk__shard_index *ix,
                              hk_status *st);
/** Read and parse "<prefix>.shards"; NOT_FOUND when it is absent. */
hk_code hk__shard_index_read(const hk_env *env, const char *prefix, hk__shard_index *ix, hk_status *st);
void hk__shard_index_clear(const hk_env *env, hk__shard_index *ix);

/**
 * An opened sharded checkpoint: the index and a reader per shard, every
 * shard checked against the index (size, header CRC, step, num_shards, its
 * own number) and the slices checked to tile every variable exactly, with
 * one dtype and one whole shape per variable.
 */
typedef struct hk__sharded {
  const hk_env *env;
  char *prefix;
  hk__shard_index ix;
  hk_checkpoint_reader **shards; /* ix.num_shards */
  /* The replicated variables, sorted by name: each slice in order of its
   * first element. */
  struct hk__sharded_var {
    const char *name; /* borrowed from a reader */
    hk_dtype dtype;
    int32_t rank;
    int64_t dims[HK_MAX_RANK];
    uint64_t count;              /* elements */
    size_t first_slice, nslices; /* into slices */
  } * vars;
  size_t nvars;
  struct hk__sharded_slice {
    int shard;
    size_t entry; /* in that shard's reader */
    uint64_t first, end;
  } * slices;
  size_t nslices;
} hk__sharded;

/** Nonzero when "<prefix>.shards" exists (the checkpoint is sharded). */
int hk__sharded_exists(const hk_env *env, const char *prefix);
/** Open "<prefix>.shards" and its shards (a prefix, never a file name). DATA_LOSS naming the file for
 *  anything refused: a missing shard, one of another step or count, slices that do not tile. */
hk_code hk__sharded_open(hk__sharded *out, const hk_env *env, const char *prefix, hk_status *st);
void hk__sharded_close(hk__sharded *s);
/** Read every tensor of every shard and check its CRC. */
hk_code hk__sharded_verify(hk__sharded *s, hk_status *st);
/** The replicated variable `name`, NULL when there is none. */
const struct hk__sharded_var *hk__sharded_find(const hk__sharded *s, const char *name);
/** Assemble variable v into dst (its whole byte size), every slice CRC-checked. */
hk_code hk__sharded_read_var(hk__sharded *s, const struct hk__sharded_var *v, void *dst, hk_status *st);
/** Elements [first, end) of variable v into dst ((end - first) elements): only the slices that meet the range are
 *  read, each whole and CRC-checked, and their part in the range copied. */
hk_code hk__sharded_read_range(hk__sharded *s, const struct hk__sharded_var *v, uint64_t first, uint64_t end, void *dst,
                               hk_status *st);

#endif /* HOOKED_CKPT_SHARD_H */
