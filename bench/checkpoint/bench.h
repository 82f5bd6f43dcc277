/*
 * The checkpoint benchmark's shared declarations (main.c says what it
 * measures).
 *
 *   main.c     options, the report, main: every case in order
 *   common.c   helpers, the counting file system, the state and its sessions
 *   cases.c    (1)-(6), the cold reads and the small model's (1s), (2s)
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
#define _GNU_SOURCE 1 /* mincore(), to check that a cold read is one; sync_file_range() for (1e) */
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
  /* (1s), (2s): a small model's state in a graph of its own */
  size_t small_bytes;
  unsigned char *small_arena;
  char *small_dir, *small_raw_path, *small_raw_tmp;
  hk_graph *small_g;
  hk_raw_session *small_rs;
  hk_saver *small_saver;
  /* the fsyncs of the last (2) */
  unsigned long save_syncs, save_dir_syncs;
} bench;

typedef struct overlap_result {
  double stall;       /* median: hooked's extra time in the snapshot step and the next one */
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
char *path_join(const char *dir, const char *name);
void remove_tree(const char *dir);
int fsync_dir(const char *dir);
/* POSIX with hooked's fsyncs counted (b->counts). */
extern const hk_fs_vtable counting_fs;
int build_graph(bench *b);
int open_sessions(bench *b);

/* ---- cases.c ----------------------------------------------------------------- */

int raw_write_file(const char *dir, const char *tmp, const char *final, const unsigned char *data, size_t n, int early,
                   double *secs);
int raw_write(bench *b, int early, double *secs);
int sync_save(bench *b, int64_t step, const char **prefix, double *secs);
int ensure_copy(bench *b, size_t n);
double copy_once(bench *b);
double copy_per_tensor(bench *b);
int drain_async(bench *b, double *plain, size_t *nplain, size_t cap);
int async_save(bench *b, double *plain, size_t *nplain, size_t cap, double *stall);
int restore(bench *b, const char *prefix, double *secs);
int raw_read(bench *b, const char *path, double *secs, size_t *file_bytes);
/* Drop `path` from the page cache; @return the share still resident. */
double drop_cache(const char *path);
extern const size_t nsmall_tensors;
int open_small(bench *b);
void close_small(bench *b);
int small_save(bench *b, int64_t step, double *secs, unsigned long *syncs, unsigned long *dir_syncs);
int set_data_path(char **data_path, char **prefix_copy, const char *prefix);

/* ---- overlap.c --------------------------------------------------------------- */

/* (7), (8) and (8b): nsaves measured saves each, after a warm-up save. */
int run_overlap_cases(bench *b, double copy, double raw, size_t nsaves, overlap_result res[3], int *work,
                      double *read_secs);

#endif /* HOOKED_BENCH_CHECKPOINT_BENCH_H */
