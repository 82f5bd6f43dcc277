/*
 * What the files of the data-file format share among themselves (hk__
 * names; not API): the format's constants, the reader's layout, and the
 * helpers the writer and the reader both use.
 *
 *   safetensors.c        dtype names, byte sizes, names for messages
 *   safetensors_write.c  the writer
 *   safetensors_json.c   the reader's header: its bounded JSON parser
 *   safetensors_read.c   the public reader, and reads into the caller's
 *                        memory for a restore
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_CKPT_SAFETENSORS_INTERNAL_H
#define HOOKED_CKPT_SAFETENSORS_INTERNAL_H

#include "ckpt/ckpt_internal.h"
#include "util/fs.h"

#define HEADER_MAX ((uint64_t)100 << 20)
#define FORMAT_PREFIX "hooked/"
#define FORMAT_VERSION 1
#define CRC_KEY_PREFIX "crc32c:"
#define METADATA_KEY "__metadata__"
/* Optional (checkpoint-format.md): checked when present. */
#define STEP_CRC_KEY "global_step_crc32c"
#define STEP_TENSOR_KEY "global_step_tensor"
/* Writes and verification reads go in pieces of this size. */
#define IO_CHUNK ((size_t)4 << 20)

/* ---- the reader's layout ---------------------------------------------------------------- */

typedef struct hk__reader_entry {
  char *name; /* points into the header buffer */
  hk_dtype dtype;
  int32_t rank;
  int64_t dims[HK_MAX_RANK];
  uint64_t begin, end; /* relative to the data */
  uint32_t crc;
  int has_crc;
  /* A shard's slice of a variable (SLICE_KEY_PREFIX, SHAPE_KEY_PREFIX):
   * flat elements [slice_first, slice_end) of a variable of shape
   * full_rank/full_dims. */
  int has_slice;
  uint64_t slice_first, slice_end;
  int32_t full_rank;
  int64_t full_dims[HK_MAX_RANK];
} hk__reader_entry;

/* A shard file's metadata keys (checkpoint-format.md "Sharded checkpoints"). */
#define SHARD_KEY "shard"
#define NUM_SHARDS_KEY "num_shards"
#define SLICE_KEY_PREFIX "slice:"
#define SHAPE_KEY_PREFIX "shape:"
/* The prefix of a per-rank tensor's name in a shard. */
#define LOCAL_PREFIX "local/"

/* A slice: or shape: key the parser saw, checked once the tensors are known. */
typedef struct hk__slice_note {
  const char *name;  /* the tensor's */
  const char *value; /* as written */
  int is_shape;
} hk__slice_note;

struct hk_checkpoint_reader {
  hk_env env;
  hk__fs fs;
  char *path;
  hk_fs_file *f;
  char *header; /* decoded in place; owns every entry name */
  uint64_t data_start;
  uint64_t data_size;
  int64_t step;
  uint32_t header_crc32c;    /* of the file's first 8 + N bytes, as read */
  int64_t shard, num_shards; /* a shard's metadata; -1 in a file that is no shard */
  /* A sharded checkpoint opened whole (hk__reader_open_sharded): the
   * entries are its replicated variables, read from their slices; no file
   * of its own (f NULL). */
  struct hk__sharded *sharded;
  hk__reader_entry *entries; /* sorted by name */
  size_t n;
  /* hk__reader_view's: the data region mapped, or a read buffer. */
  const void *map_addr;
  void *map_token;
  int map_tried;
  unsigned char *scratch;
  size_t scratch_cap;
};

/* ---- shared helpers (safetensors.c) ----------------------------------------------------- */

/** The format's name of a dtype ("F32"); NULL for STRING, which has none. */
const char *hk__safetensors_dtype_name(hk_dtype dt);
/** The dtype of a format name; HK_DTYPE_INVALID for an unknown one. */
hk_dtype hk__safetensors_dtype_from_name(const char *s);
/** Byte size of a shape, or 0 with *overflow set when it does not fit 64 bits. */
uint64_t hk__safetensors_shape_bytes(hk_dtype dt, int32_t rank, const int64_t *dims, int *overflow);
/** Well-formed UTF-8 (no overlongs, surrogates or code points past
 *  0x10FFFF); 0 with *bad the offset of the first bad byte. */
int hk__safetensors_valid_utf8(const unsigned char *s, size_t n, size_t *bad);
/** A name for a message: printable ASCII as is, every other byte as \xHH,
 *  cut to fit `cap`. @return buf. */
const char *hk__safetensors_escaped_name(const char *name, char *buf, size_t cap);
/** The integer dtypes (a global step's), and whether one is signed. */
int hk__safetensors_int_dtype(hk_dtype dtype, int *is_signed);
/** An integer scalar's value from its little-endian bytes; 0 when it is
 *  not one of the global step's dtypes or does not fit int64. */
int hk__safetensors_int_scalar(hk_dtype dtype, const unsigned char *p, size_t nbytes, int64_t *out);

/* ---- the reader (safetensors_json.c, safetensors_read.c) -------------------------------- */

/** Read and check the header of the reader's file (r->path, opened into
 *  r->f): its length, its JSON, its metadata, the tensors' tiling and the
 *  global step. Every refusal is DATA_LOSS naming the file (and tensor);
 *  a newer format is FAILED_PRECONDITION. */
hk_code hk__reader_load(hk_checkpoint_reader *r, hk_status *st);
/** The entry named `name`, NULL when there is none (entries are sorted). */
hk__reader_entry *hk__reader_find_entry(const hk_checkpoint_reader *r, const char *name);
/** Turn reader r (env and path set, nothing loaded) into the view of the
 *  sharded checkpoint `prefix`: its replicated variables, whole
 *  (shard_restore.c). NOT_FOUND when there is no index. */
hk_code hk__reader_open_sharded(hk_checkpoint_reader *r, const char *prefix, hk_status *st);
/** A shard file's metadata, checked against its tensors (safetensors_shard.c):
 *  the shard and num_shards texts (NULL when absent) and the slice notes.
 *  DATA_LOSS naming the file (and tensor), through `corrupt_fmt`'s wording. */
hk_code hk__reader_check_shard(hk_checkpoint_reader *r, const char *shard, const char *num_shards,
                               const hk__slice_note *notes, size_t nnotes, hk_status *st);
/** Parse a decimal int64 as the format writes it (no leading zero, no '+'). */
int hk__safetensors_parse_int(const char *s, int64_t *out);
/** Read entry e's bytes in pieces of at most `piece`, checking the CRC:
 *  into consecutive parts of buf, or (reuse) each piece into buf itself. */
hk_code hk__reader_read_checked(hk_checkpoint_reader *r, const hk__reader_entry *e, unsigned char *buf, size_t piece,
                                int reuse, hk_status *status);

#endif /* HOOKED_CKPT_SAFETENSORS_INTERNAL_H */
