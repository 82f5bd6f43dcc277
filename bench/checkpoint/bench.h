/*
 * The checkpoint benchmark's shared declarations (main.c says what it
 * measures).
 *
 *   main.c     options, the rounds of every case, the report, the goal lines
 *   common.c   helpers, per-round statistics, the machine, the counting file
 *              system, the state and its sessions
 *   cases.c    the raw references (paced and unpaced writes, read(), the
 *              chunked pread), hooked's save and restore, memcpy, the async
 *              hook's stall, dropping a file from the page cache
 *   models.c   the other states: small models, the scaling sizes and
 *              tensor counts, each in a graph of its own
 *   rows.c     the retention, small-model and scaling rows
 *   overlap.c  (7), (8): copy-before-write on the graph and the host loop
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_BENCH_CHECKPOINT_BENCH_H
#define HOOKED_BENCH_CHECKPOINT_BENCH_H

/* Every file includes this header first. */
#if !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* clock_gettime, mkdtemp, fsync, posix_memalign, posix_fadvise */
#endif
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE 1 /* mincore(), to check that a cold read is one; sync_file_range() for (1p) */
#endif

#include <hooked/hooked.h>

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define PROG "checkpoint"

/* Every slot forwards to hk_fs_posix(); sync and sync_dir are counted (the
 * asynchronous hook's writer thread uses the same env: atomics). */
typedef struct fs_counts {
  atomic_ulong syncs, dir_syncs;
} fs_counts;

typedef struct tensor_class {
  const char *label;
  size_t count;
  double share; /* of S */
} tensor_class;

/* A few large, many medium, many small (common.c). */
#define NCLASSES 3
extern const tensor_class classes[NCLASSES];

typedef struct bench {
  size_t bytes; /* S, rounded to whole f32 elements */
  size_t ntensors;
  size_t class_bytes[NCLASSES]; /* bytes of one tensor of each class */
  unsigned char *arena;         /* every variable's storage, back to back */
  unsigned char *copy;          /* (3)'s and (6)'s pre-faulted destination */
  size_t copy_cap;
  char *dir;
  char *sync_dir, *async_dir, *raw_path, *raw_tmp;
  hk_env env;
  hk_graph *g;
  hk_handle gs, train;
  hk_raw_session *rs;
  hk_saver *sync_saver, *async_saver;
  hk_session *session;
  hk_hook *hook;
  /* async listener state, written on the training thread only */
  uint64_t before_saves, after_saves;
  /* hooked's fsyncs (env.fs is counting_fs) */
  fs_counts counts;
  /* the fsyncs of the last sync_save() */
  unsigned long save_syncs, save_dir_syncs;
  int64_t next_step; /* every save of every Saver gets a step of its own */
} bench;

/* Another state in a graph of its own (models.c): a small model, or one of
 * the scaling sizes and tensor counts. Its Saver keeps every checkpoint;
 * model_save() removes the previous one before the clock starts. */
typedef struct model {
  size_t bytes, ntensors;
  unsigned char *arena;
  char *dir, *raw_path, *raw_tmp; /* its checkpoints' directory; the raw references' files (in b->dir) */
  hk_graph *g;
  hk_raw_session *rs;
  hk_saver *saver;
  char *prefix, *data_path; /* of the last save */
} model;

/* min / median / max of per-round values. */
typedef struct spread {
  double min, med, max;
} spread;

typedef struct overlap_result {
  double stall; /* median: hooked's extra time in the snapshot step and the next one */
  double stall_min, stall_max;
  double snap, next;  /* median: each of the two */
  double contention;  /* median: how much longer the program's own work took in the next step */
  double whole;       /* median: the two whole steps over two plain ones */
  double plain;       /* median plain step */
  double copied_here; /* tensors per save the training thread copied itself (the rest: the writer thread) */
} overlap_result;

/* ---- common.c ---------------------------------------------------------------- */

double now_secs(void);
void sleep_secs(double s);
/* "checkpoint: <what>: <message>" on stderr. @return 1. */
int hk_fail(const char *what, const hk_status *st);
/* "checkpoint: <what> <path>: <strerror>" on stderr. @return 1. */
int os_fail(const char *what, const char *path);
/* The median of v[0, n) (sorts v). */
double median(double *v, size_t n);
/* min / median / max of v[0, n) (v is left as it is). */
spread spread_of(const double *v, size_t n);
/* Fill n bytes with incompressible, finite f32 values. */
void fill_state(unsigned char *p, size_t n);
/* The machine: CPU model, cores, kernel, the file system holding dir, load. */
void print_machine(const char *dir);
char *path_join(const char *dir, const char *name);
void remove_tree(const char *dir);
int fsync_dir(const char *dir);
/* POSIX with hooked's fsyncs counted (b->counts). */
extern const hk_fs_vtable counting_fs;
int build_graph(bench *b);
int open_sessions(bench *b);

/* ---- cases.c ----------------------------------------------------------------- */

/* How a raw write hands its bytes to the disk. */
typedef enum write_pacing {
  UNPACED = 0, /* write() in 8 MiB chunks, then fsync */
  PACED = 1    /* pwrite() in 4 MiB pieces, each completed 8 MiB window started with sync_file_range, as hooked */
} write_pacing;

/* A new file `final` written durably: tmp created, written, fsynced,
 * closed, renamed, the directory fsynced. The previous `final` is removed
 * before the clock starts. */
int raw_write_file(const char *dir, const char *tmp, const char *final, const unsigned char *data, size_t n,
                   write_pacing pacing, double *secs);
int raw_write(bench *b, write_pacing pacing, double *secs);
int sync_save(bench *b, const char **prefix, double *secs);
int ensure_copy(bench *b, size_t n);
double copy_once(bench *b);
double copy_per_tensor(bench *b);
int drain_async(bench *b, double *plain, size_t *nplain, size_t cap);
int async_save(bench *b, double *plain, size_t *nplain, size_t cap, double *stall);
int restore_with(bench *b, hk_saver *saver, hk_raw_session *rs, const char *prefix, double *secs);
int restore(bench *b, const char *prefix, double *secs);
/* read() of the whole file in 8 MiB calls into the pre-faulted b->copy. */
int raw_read(bench *b, const char *path, double *secs, size_t *file_bytes);
/* As restore reads: the safetensors header's length, then the data region
 * with pread in 1 MiB chunks, one stream, into b->copy; no CRC. */
int pread_data(bench *b, const char *path, double *secs);
/* Drop `path` from the page cache; @return the share still resident. */
double drop_cache(const char *path);
int set_data_path(char **data_path, char **prefix_copy, const char *prefix);

/* ---- models.c ---------------------------------------------------------------- */

/* A state of `n` tensors of sizes[i] bytes each (whole f32 elements) and
 * the global step, in b->dir/<name>. */
int model_open(bench *b, model *m, const char *name, const size_t *sizes, size_t n);
/* The 580-tensor mix of the main state (a few large, many medium, many
 * small) at `bytes`. */
int model_open_mix(bench *b, model *m, const char *name, size_t bytes);
/* `n` tensors of `each` bytes. */
int model_open_uniform(bench *b, model *m, const char *name, size_t n, size_t each);
void model_close(model *m);
/* hk_saver_save of the model, its fsyncs counted (files, directories). */
int model_save(bench *b, model *m, double *secs, unsigned long *syncs, unsigned long *dir_syncs);
int model_restore(bench *b, model *m, double *secs);
/* The raw reference of model_save: the same bytes in one file. */
int model_raw_write(bench *b, model *m, write_pacing pacing, double *secs);

/* ---- rows.c ------------------------------------------------------------------ */

void print_header(void);
/* A row: min / median / max of t (seconds), GB/s at the median. */
void print_row(const char *label, const double *t, size_t n, size_t bytes, const char *note);
/* Per-round ratios, printed and returned: ref/hooked (speed, above 1 =
 * hooked faster) or, as_time, hooked/ref. */
spread print_ratio(const char *what, const double *ref, const double *hooked, size_t n, int as_time);

typedef struct retention_result {
  double *keep, *plain; /* per round: a keep-5 save that deletes, the same save deleting nothing */
  size_t n;
  unsigned long keep_min, keep_max, plain_min, plain_max; /* fsyncs (files + directories) per save */
} retention_result;

typedef struct small_result {
  size_t bytes, ntensors;
  double *posix, *hooked; /* per round */
  size_t n;
  unsigned long hooked_fsyncs, posix_fsyncs;
} small_result;

#define NSMALL_MODELS 2
#define SMALL_PER_ROUND 5 /* small saves per round: each is a few fsyncs, and noisy */

int run_retention(bench *b, size_t rounds, retention_result *r);
int run_small(bench *b, size_t rounds, small_result res[NSMALL_MODELS]);
/* Save and restore at each of the sizes and tensor counts (printed as it
 * goes); `main_rows` are the main state's save and restore times. */
int run_scaling(bench *b, int quick, size_t rounds, const double *main_save, const double *main_paced,
                const double *main_restore, const double *main_read);

/* ---- overlap.c --------------------------------------------------------------- */

/* (7), (8) and (8b): nsaves measured saves each, after a warm-up save. */
int run_overlap_cases(bench *b, double copy, double raw, size_t nsaves, overlap_result res[3], int *work,
                      double *read_secs);

#endif /* HOOKED_BENCH_CHECKPOINT_BENCH_H */
