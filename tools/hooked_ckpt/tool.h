/*
 * hooked-ckpt — declarations the tool's files share. Nothing here is
 * hooked's API: the tool is written against the public headers only
 * (hooked/checkpoint.h and the POSIX hk_fs of hooked/sys/fs.h), as any
 * third-party tool could be.
 *
 *   main.c          usage, argument parsing, the command table
 *   common.c        messages, paths, a directory's checkpoints, shapes
 *   values.c        decoding and writing the values of tensors
 *   ls_verify.c     ls, verify, latest
 *   dump.c          dump
 *   compare.c       two checkpoints compared tensor by tensor (diff's and
 *                   check-resume's one comparison)
 *   diff.c          diff
 *   check_resume.c, runs.c, judge.c (check_resume.h)  check-resume
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_TOOLS_HOOKED_CKPT_TOOL_H
#define HOOKED_TOOLS_HOOKED_CKPT_TOOL_H

#if !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <hooked/hooked.h>

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOOL "hooked-ckpt"
#define LINE_WIDTH 75 /* numpy's default linewidth */
#define DATA_SUFFIX ".safetensors"
/* A sharded checkpoint's index (checkpoint-format.md "Sharded checkpoints"). */
#define INDEX_SUFFIX ".shards"
#define ELEMENT_MAX 64 /* "%.8f" of a positional value (below 1e8), "%.8e" of any */
/* Room for "[d0, d1, ...]" of any shape, or an index into it. */
#define SHAPE_MAX (HK_MAX_RANK * 22 + 3)

/* diff's exit status for trouble: 1 means "different". */
#define DIFF_TROUBLE 2

/* ---- common.c --------------------------------------------------------------- */

/* safetensors names by hk_dtype (the format's dtype strings). */
const char *dtype_st_name(hk_dtype dtype);
/* "hooked-ckpt: <fmt with arg>" and the --help hint on stderr. @return 2. */
int usage_error(const char *fmt, const char *arg);
/* "hooked-ckpt: <file>: <message>" on stderr. @return 1. */
int problem(const char *file, const hk_status *st);
/* The env's log sink: warnings and errors on stderr. */
void log_sink(void *user, hk_log_level level, const char *msg);
int is_directory(const char *path);
/* a, b and c concatenated (malloc); NULL when out of memory. */
char *join(const char *a, const char *b, const char *c);
/* "hooked-ckpt: out of memory" on stderr. @return 1. */
int out_of_memory(void);

typedef struct candidate {
  char *prefix;      /* "<dir>/<name>" */
  int listed;        /* named by the state file */
  int latest;        /* its model_checkpoint_path */
  double timestamp;  /* from the state file; NaN when none */
  int64_t scan_step; /* from the file name, for ordering unlisted ones */
} candidate;

typedef struct dir_listing {
  const char *dir;
  candidate *c;
  size_t n, cap;
  int state_found;   /* the state file exists and parsed */
  int state_problem; /* it exists but could not be read */
  int oom;
} dir_listing;

/* A data file name "<name>-<digits>.safetensors" (or an index
 * "<name>-<digits>.shards"): its step, or -1. */
int64_t scan_name_step(const char *name);
/* nonzero when path names a sharded checkpoint's index ("...shards"). */
int is_index_path(const char *path);
/* The num_shards line of an index file; 0 when it cannot be read. */
int index_num_shards(const char *index_path);
/* The state file's checkpoints, oldest first, then the other data files of
 * the directory by basename and step. @return 0, or 1 after a message. */
int list_dir(const hk_env *env, const char *dir, dir_listing *d);
void free_listing(dir_listing *d);
/* "[2, 3]": the dims of `e` (cap: SHAPE_MAX). */
void format_shape(const hk_checkpoint_entry *e, char *buf, size_t cap);

/* ---- values.c --------------------------------------------------------------- */

/* How numpy prints a float array: positional unless the magnitudes call for
 * scientific notation; positional values each with the fewest digits that
 * read back exactly, scientific ones all with the most any needs. */
typedef struct float_style {
  int sci;
  int prec; /* scientific: digits after the point, common to all */
} float_style;

/* Little-endian load of a `size`-byte element, whatever the host's order. */
uint64_t load_le(const unsigned char *p, size_t size);
/* The value of float element `bits` of `dtype` as a double. */
double float_value(hk_dtype dtype, uint64_t bits);
/* Whether `text` reads back to exactly `bits` in `dtype`. */
int reads_back(hk_dtype dtype, uint64_t bits, const char *text);
/* One element as numpy prints it in an array of style `fs`. */
void format_element(hk_dtype dtype, const unsigned char *p, const float_style *fs, char *buf, size_t cap);
/* numpy's choice of style for the n elements at `data`. */
float_style choose_float_style(hk_dtype dtype, const unsigned char *data, uint64_t n);
/* The widths before and after the decimal point of element text `s`. */
void split_widths(hk_dtype dtype, const float_style *fs, const char *s, size_t *before, size_t *after);
/* A float element as the shortest text that reads back to its bits. */
void format_shortest(hk_dtype dtype, uint64_t bits, char *buf, size_t cap);
void format_double(double v, char *buf, size_t cap);
/* One element exactly: integers in decimal, floats by format_shortest. */
void format_value(hk_dtype dtype, const unsigned char *p, char *buf, size_t cap);
/* The row-major multi-dimensional index of flat index i: "[1, 2]". */
void format_index(const hk_checkpoint_entry *e, uint64_t i, char *buf, size_t cap);

/* ---- compare.c -------------------------------------------------------------- */

/* One checkpoint being compared, its tensors read one at a time into buf. */
typedef struct ckpt_side {
  const char *arg; /* as given */
  char *latest;    /* for a directory: its latest checkpoint (hk_env_free) */
  hk_checkpoint_reader *r;
  unsigned char *buf;
  size_t cap;
} ckpt_side;

/* What the elements of two same-shaped tensors whose bytes differ have in
 * common. */
typedef struct elem_diff {
  uint64_t count;   /* elements whose bytes differ */
  uint64_t first;   /* flat index of the first of them */
  uint64_t max_at;  /* flat index of the largest difference (the first such) */
  double max_abs;   /* float dtypes: the largest |a - b|, in double */
  int nan;          /* float dtypes: some differing pair has a NaN */
  uint64_t max_int; /* the others: the largest |a - b|, exact */
} elem_diff;

enum {
  CMP_EQUAL,    /* same dtype, shape and bytes */
  CMP_DIFFERS,  /* same dtype and shape, other bytes: `d` says how */
  CMP_MISMATCH, /* another dtype or shape */
  CMP_ONLY_A,   /* a tensor of A that B lacks */
  CMP_ONLY_B
};

/* One tensor compared: entries and values borrowed for the callback. */
typedef struct tensor_cmp {
  int kind;
  const hk_checkpoint_entry *a, *b; /* NULL for the side that lacks it */
  const unsigned char *va, *vb;     /* its values on each side that has it */
  uint64_t count;                   /* CMP_DIFFERS: elements */
  elem_diff d;                      /* CMP_DIFFERS */
} tensor_cmp;

/* Called for each tensor in name order; a nonzero return ends the
 * comparison and is returned. */
typedef int (*compare_fn)(void *user, const tensor_cmp *c);

/* Open side `s` on `arg` (borrowed): a checkpoint, or a directory's latest
 * one. @return 0, or DIFF_TROUBLE after a message; side_close either way. */
int side_open(const hk_env *env, ckpt_side *s, const char *arg);
void side_close(const hk_env *env, ckpt_side *s);
/* Compare every tensor of a and b (reading and CRC-verifying each). @return
 * 0, DIFF_TROUBLE after a message, or fn's nonzero return. */
int compare_checkpoints(ckpt_side *a, ckpt_side *b, compare_fn fn, void *user);
/* The largest difference of a CMP_DIFFERS tensor as text ("nan" when a
 * differing pair holds a NaN). */
void format_max_diff(const tensor_cmp *c, char *buf, size_t cap);

/* ---- the commands (exit statuses as main.c's usage text says) --------------- */

int cmd_ls(const hk_env *env, const char *path);
int cmd_verify(const hk_env *env, const char *path, int finite);
int cmd_latest(const hk_env *env, const char *dir);
int cmd_dump(const hk_env *env, const char *path, const char *name, uint64_t limit);
int cmd_diff(const hk_env *env, const char *path_a, const char *path_b);
/* argv: the arguments after "check-resume". */
int cmd_check_resume(const hk_env *env, int argc, char **argv);

#endif /* HOOKED_TOOLS_HOOKED_CKPT_TOOL_H */
