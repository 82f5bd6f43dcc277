/*
 * shard_stall — what a sharded checkpoint costs each rank's training
 * thread (issue 16: "the async saver's per-rank stall stays at
 * copy-before-write levels").
 *
 * Run under mpirun, e.g. `mpirun --oversubscribe -np 2 build/bench/shard_stall`
 * and `-np 4`; rank 0 prints. Every rank runs host loops (hooked/loop.h)
 * over the group of the job (hk_mpi_group()), with the same registered
 * f32 arrays: --bytes of state (default 64 MiB) in --arrays arrays (default
 * 32, of mixed sizes), half of the bytes replicated (every rank holds the
 * whole array) and half partitioned (HK_LOOP_PARTITIONED: each rank holds
 * its block, hk_group_block(), of a flat global array). Two loops over the
 * same arrays, each saving every --save-steps steps into a directory of
 * its own:
 *   - async: async_checkpoint on, its group a second hk_mpi context (the
 *     writer thread makes the collective save), MPI initialized with
 *     MPI_THREAD_MULTIPLE (the bench refuses to run without it, unless
 *     --sync-only);
 *   - sync: the synchronous hook, its group the program's context.
 * The stall of a save is the save step's hk_loop_step_end() (the step's
 * end, where the hook snapshots or writes) minus the median of the plain
 * step_ends of the same loop just before it, in the same round. Its
 * reference is a memcpy of exactly the bytes the rank's save snapshots
 * (every variable the rank's Saver saves: the replicated arrays whole, the
 * rank's blocks, the global step), array by array into a pre-faulted
 * buffer laid out as the snapshot is. A round times the copy, the async
 * save step and the sync save step, each from an MPI_Barrier, the order
 * rotated by one each round; before the async save step its previous write
 * has finished (the loop's plain steps in between, with sleeps, until its
 * completion is logged), and after it nothing else is timed until that
 * write has finished. The program never calls hk_loop_updates_begin(), so
 * the async snapshot is copied at the step boundary, on the training
 * thread. Beside the async stall: its part until the training thread hands
 * the snapshot to the writer (when the hook says so at DEBUG), and the
 * stall against the copy in the training thread's CPU time
 * (CLOCK_THREAD_CPUTIME_ID), which preemption by other threads and
 * processes does not inflate. Ratios are per rank and per round (time, the
 * copy in the denominator) and printed as min / median / max; the goal line
 * pools every rank's rounds:
 *   goal async_stall_vs_copy min=X median=Y max=Z     goal: median <= 1.2
 * The sync save's stall against the same copy is printed for contrast
 * (it includes the write, the fsyncs and the commit).
 *
 * Options: --bytes N[KMG], --arrays N, --rounds N (default 15, after one
 * warm-up round), --save-steps N (default 40), --dir DIR (the parent of
 * the bench's own directory, made fresh and removed at the end; default
 * /var/tmp), --sync-only (no second context, no MPI_THREAD_MULTIPLE
 * needed; no goal line), --quick (tiny sizes and 3 rounds: a smoke test).
 * Exit status: 0 when every case ran, 1 on an error (every rank's error
 * is printed; MPI_Abort ends the job), 2 for a usage error.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#if !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* clock_gettime, nanosleep, mkdtemp, nftw */
#endif
#if !defined(_XOPEN_SOURCE)
#define _XOPEN_SOURCE 700 /* nftw */
#endif

#include <errno.h>
#include <ftw.h>
#include <mpi.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hooked/loop.h"
#include "hooked/mpi.h"

#ifndef HOOKED_BENCH_BUILD_TYPE
#define HOOKED_BENCH_BUILD_TYPE ""
#endif

#define PROG "shard_stall"
#define GOAL_ASYNC_STALL 1.2
#define DEFAULT_BYTES ((size_t)64 << 20)
#define DEFAULT_ARRAYS 32
#define DEFAULT_ROUNDS 15
#define DEFAULT_SAVE_STEPS 40
#define MAX_ROUNDS 1000
#define BASE_STEPS 8 /* plain steps timed before each save step */
#define MIN_SAVE_STEPS (BASE_STEPS + 4)
#define DEADLINE_SECS 3600.0 /* every collective's: generous, the writes are slow on a loaded disk */
#define SNAP_ALIGN 64        /* the snapshot's layout: each variable at a multiple of 64 bytes */
#define DRAIN_SLEEP_MAX_NS 200000000L
/* Per round and rank: wall times, and the training thread's CPU times. */
enum { S_COPY, S_ASYNC, S_HANDOFF, S_SYNC, S_COPY_CPU, S_ASYNC_CPU, NSERIES };

static int g_rank, g_size;

static double now_secs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* This thread's CPU time: what it spent, not what other threads took from it. */
static double cpu_secs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct timing {
  double wall, cpu;
} timing;

static void sleep_ns(long ns) {
  struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

static void die(const char *what, const hk_status *st) {
  fprintf(stderr, PROG " (rank %d): %s: %s: %s\n", g_rank, what, st ? hk_code_name(st->code) : "error",
          st ? st->message : "");
  MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1);
}

static void die_msg(const char *what) {
  fprintf(stderr, PROG " (rank %d): %s\n", g_rank, what);
  MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1);
}

/* ---- a loop, its log lines counted -------------------------------------------------- */

typedef struct bench_loop {
  hk_env env;
  const char *kind;          /* "async" or "sync" */
  atomic_ulong saves;        /* "Saving checkpoints for": a save started, either hook */
  atomic_ulong async_saves;  /* the same at DEBUG: the asynchronous hook's snapshots */
  atomic_ulong finished;     /* "Checkpoint finished for": a write of the asynchronous hook processed */
  _Atomic double handoff_at; /* when the training thread said it handed a snapshot to the writer */
  double end_began;          /* when the last step's hk_loop_step_end began */
  hk_loop *loop;
  hk_mpi *ctx;      /* the loop's group */
  long since_save;  /* steps since the last save step */
  int busy_at_save; /* rounds whose save found the previous write unfinished */
} bench_loop;

static void count_sink(void *user, hk_log_level level, const char *msg) {
  bench_loop *b = user;
  if (strstr(msg, "Saving checkpoints for ") != NULL) {
    atomic_fetch_add(&b->saves, 1);
    if (level == HK_LOG_DEBUG) { /* said on the training thread right after the handoff */
      atomic_store(&b->handoff_at, now_secs());
      atomic_fetch_add(&b->async_saves, 1);
    }
  }
  if (strstr(msg, "Checkpoint finished for ") != NULL) atomic_fetch_add(&b->finished, 1);
  if (level >= HK_LOG_WARNING) fprintf(stderr, PROG " (rank %d, %s loop): %s\n", g_rank, b->kind, msg);
}

/* The state: every rank's arrays, the same names and order everywhere. */
typedef struct state {
  size_t narrays;
  float **data;
  int64_t *count; /* elements this rank holds */
  int *partitioned;
  size_t snap_bytes;   /* what a save snapshots on this rank, laid out as the snapshot */
  size_t raw_bytes;    /* the same without the layout's padding */
  size_t shard_bytes;  /* what this rank's shard holds */
  unsigned char *copy; /* the reference's destination, pre-faulted */
} state;

static void state_new(state *s, size_t bytes, size_t narrays) {
  size_t half = bytes / 2 / sizeof(float), nrep = narrays / 2, npart = narrays - nrep, wrep = 0, wpart = 0;
  size_t left_rep = half, left_part = half, rep_i = 0, part_i = 0;
  hk_status st = HK_STATUS_INIT;

  memset(s, 0, sizeof *s);
  s->narrays = narrays;
  s->data = calloc(narrays, sizeof *s->data);
  s->count = calloc(narrays, sizeof *s->count);
  s->partitioned = calloc(narrays, sizeof *s->partitioned);
  if (!s->data || !s->count || !s->partitioned) die_msg("out of memory for the state's tables");
  for (size_t i = 0; i < nrep; i++) wrep += 1 + i % 4;
  for (size_t i = 0; i < npart; i++) wpart += 1 + i % 4;
  /* Alternate replicated and partitioned; sizes weighted 1..4, the last of each kind takes what is left. */
  for (size_t i = 0; i < narrays; i++) {
    int part = (i % 2 == 1 && part_i < npart) || rep_i >= nrep;
    size_t k = part ? part_i++ : rep_i++, n;
    size_t *left = part ? &left_part : &left_rep;
    size_t w = part ? wpart : wrep, last = part ? npart - 1 : nrep - 1;
    n = k == last ? *left : half * (1 + k % 4) / w;
    *left -= n;
    s->partitioned[i] = part;
    if (part) {
      size_t first = 0, len = 0;
      if (hk_group_block(&first, &len, n, g_size, g_rank, &st) != HK_OK) die("hk_group_block", &st);
      s->count[i] = (int64_t)len;
      s->shard_bytes += len * sizeof(float);
    } else {
      size_t first = 0, len = 0;
      s->count[i] = (int64_t)n;
      if (hk_group_block(&first, &len, n, g_size, g_rank, &st) != HK_OK) die("hk_group_block", &st);
      s->shard_bytes += len * sizeof(float); /* a replicated array is cut across the shards */
    }
    s->data[i] = malloc((size_t)s->count[i] * sizeof(float) + 1);
    if (s->data[i] == NULL) die_msg("out of memory for the arrays");
    for (int64_t e = 0; e < s->count[i]; e++) s->data[i][e] = 0.001f * (float)((e + (int64_t)i) % 1000);
    s->raw_bytes += (size_t)s->count[i] * sizeof(float);
    s->snap_bytes += ((size_t)s->count[i] * sizeof(float) + SNAP_ALIGN - 1) / SNAP_ALIGN * SNAP_ALIGN;
  }
  /* The loop's global step (int64) is saved and snapshotted too. */
  s->raw_bytes += sizeof(int64_t);
  s->snap_bytes += SNAP_ALIGN;
  s->copy = malloc(s->snap_bytes);
  if (s->copy == NULL) die_msg("out of memory for the copy's buffer");
  memset(s->copy, 1, s->snap_bytes); /* pre-faulted */
}

static void state_free(state *s) {
  for (size_t i = 0; i < s->narrays; i++) free(s->data[i]);
  free(s->data), free(s->count), free(s->partitioned), free(s->copy);
}

/* The reference: what the rank's save snapshots, array by array, in the snapshot's layout. */
static timing copy_once(state *s, const int64_t *global_step) {
  size_t off = 0;
  double c0 = cpu_secs(), t0 = now_secs();
  timing t;
  for (size_t i = 0; i < s->narrays; i++) {
    size_t n = (size_t)s->count[i] * sizeof(float);
    memcpy(s->copy + off, s->data[i], n);
    off += (n + SNAP_ALIGN - 1) / SNAP_ALIGN * SNAP_ALIGN;
  }
  memcpy(s->copy + off, global_step, sizeof *global_step);
  t.wall = now_secs() - t0;
  t.cpu = cpu_secs() - c0;
  return t;
}

static void loop_open(bench_loop *b, const char *kind, hk_mpi *ctx, const char *dir, state *s, long save_steps,
                      int async) {
  hk_loop_options o = HK_LOOP_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  char name[64];

  b->kind = kind;
  b->ctx = ctx;
  hk_env_init(&b->env, HK_ENV_VERSION);
  b->env.log = count_sink;
  b->env.log_user = b;
  b->env.log_level = HK_LOG_DEBUG; /* the asynchronous hook's snapshots are said at DEBUG */
  o.env = &b->env;
  o.checkpoint_dir = dir;
  o.save_steps = save_steps;
  o.max_to_keep = 2;
  o.async_checkpoint = async;
  o.handle_signals = 0;
  o.log_step_count_steps = 0; /* rank 0's plain steps as the others' */
  o.group = hk_mpi_group();
  o.group_user = ctx;
  if (hk_loop_new(&b->loop, &o, &st) != HK_OK) die("hk_loop_new", &st);
  for (size_t i = 0; i < s->narrays; i++) {
    int64_t dims[1] = {s->count[i]};
    snprintf(name, sizeof name, "%s/%03zu", s->partitioned[i] ? "part" : "rep", i);
    if (hk_loop_add_array(b->loop, name, HK_DTYPE_F32, 1, dims, s->data[i],
                          s->partitioned[i] ? HK_LOOP_PARTITIONED : HK_LOOP_DEFAULT, &st) != HK_OK)
      die(name, &st);
  }
  if (hk_loop_start(b->loop, NULL, &st) != HK_OK) die("hk_loop_start", &st);
  b->since_save = 0;
}

/* One step; returns its step_end's time. */
static timing loop_step(bench_loop *b) {
  hk_status st = HK_STATUS_INIT;
  double t0, c0;
  timing t;
  if (hk_loop_step_begin(b->loop, NULL, &st) != HK_OK) die("hk_loop_step_begin", &st);
  c0 = cpu_secs();
  t0 = b->end_began = now_secs();
  if (hk_loop_step_end(b->loop, &st) != HK_OK) die("hk_loop_step_end", &st);
  t.wall = now_secs() - t0;
  t.cpu = cpu_secs() - c0;
  b->since_save++;
  return t;
}

/* Plain steps of the async loop, with sleeps between them, until its last
 * write's completion is processed (it is, at a step's end, once the writer
 * is done), within `budget` steps. */
static void drain(bench_loop *b, long budget) {
  long ns = 1000000L;
  while (atomic_load(&b->finished) < atomic_load(&b->async_saves) && budget-- > 0) {
    sleep_ns(ns);
    if (ns < DRAIN_SLEEP_MAX_NS) ns *= 2;
    loop_step(b);
  }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median_of(double *v, size_t n) { /* sorts v */
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The plain steps before a save step (the last BASE_STEPS timed), then the
 * save step, from an MPI_Barrier; returns the save step's stall and, for
 * the asynchronous hook, in *to_handoff the part of it until the snapshot
 * was handed to the writer thread. */
static timing save_round(bench_loop *b, long save_steps, double *to_handoff) {
  double base[BASE_STEPS], base_cpu[BASE_STEPS];
  timing t;
  unsigned long before;
  while (b->since_save < save_steps - 1 - BASE_STEPS) loop_step(b);
  before = atomic_load(&b->saves);
  for (int k = 0; k < BASE_STEPS; k++) {
    t = loop_step(b);
    base[k] = t.wall, base_cpu[k] = t.cpu;
  }
  if (atomic_load(&b->saves) != before)
    die_msg("a plain step of the bench saved: the loop's cadence is not the bench's");
  MPI_Barrier(MPI_COMM_WORLD);
  {
    unsigned long done = atomic_load(&b->finished), saves = atomic_load(&b->async_saves);
    if (done < saves) b->busy_at_save++;
  }
  t = loop_step(b);
  if (b->since_save != save_steps) die_msg("the bench lost count of the loop's steps");
  if (atomic_load(&b->saves) != before + 1) die_msg("the save step of the bench did not save");
  b->since_save = 0;
  if (to_handoff != NULL) *to_handoff = atomic_load(&b->handoff_at) - b->end_began;
  t.wall -= median_of(base, BASE_STEPS);
  t.cpu -= median_of(base_cpu, BASE_STEPS);
  return t;
}

/* ---- the report ------------------------------------------------------------------- */

typedef struct spread {
  double min, med, max;
} spread;

static spread spread_of(const double *v, size_t n) {
  double *tmp = malloc(n * sizeof *tmp);
  spread s;
  if (tmp == NULL) die_msg("out of memory for the report");
  memcpy(tmp, v, n * sizeof *v);
  s.med = median_of(tmp, n);
  s.min = tmp[0], s.max = tmp[n - 1];
  free(tmp);
  return s;
}

static void print_secs(const char *what, const double *v, size_t n, size_t bytes) {
  spread s = spread_of(v, n);
  printf("    %-34s %9.5f %9.5f %9.5f s   %8.0f MB/s at the median\n", what, s.min, s.med, s.max,
         s.med > 0 ? (double)bytes / s.med / 1e6 : 0.0);
}

static void print_ratio(const char *what, const double *num, const double *den, size_t n) {
  double *r = malloc(n * sizeof *r);
  spread s;
  if (r == NULL) die_msg("out of memory for the report");
  for (size_t i = 0; i < n; i++) r[i] = num[i] / den[i];
  s = spread_of(r, n);
  printf("    %-34s %9.3f %9.3f %9.3f x\n", what, s.min, s.med, s.max);
  free(r);
}

static void print_header(size_t bytes, size_t narrays, size_t rounds, size_t save_steps, const char *dir,
                         int sync_only) {
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  const char *bt = HOOKED_BENCH_BUILD_TYPE;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  MPI_Get_library_version(lib, &len);
  lib[strcspn(lib, ",\n")] = '\0';
  printf("hooked %s " PROG ": %d ranks, %s; %ld cores online on rank 0's host%s; build type %s\n", hk_version(), g_size,
         lib, cores, cores < g_size ? " (ranks outnumber cores: timings include their time-sharing)" : "",
         *bt ? bt : "(none: unoptimized)");
  printf(
      "state: %.2f MiB of f32 in %zu arrays: %zu replicated (%.2f MiB on every rank), %zu partitioned "
      "(HK_LOOP_PARTITIONED, %.2f MiB across the ranks)\n",
      (double)bytes / 1048576.0, narrays, narrays / 2, (double)(bytes / 2) / 1048576.0, narrays - narrays / 2,
      (double)(bytes / 2) / 1048576.0);
  printf("checkpoints: host loops over hk_mpi_group(), every %zu steps, into %s\n", save_steps, dir);
  printf(
      "%zu rounds after one warm-up; each round times, from an MPI_Barrier each, the order rotated: the copy "
      "(reference),%s the sync save step\n",
      rounds, sync_only ? "" : " the async save step (its previous write finished first),");
  printf(
      "stall: the save step's hk_loop_step_end minus the median of the %d plain step_ends just before it; "
      "copy: memcpy of the bytes\nthe rank's save snapshots, array by array, into a pre-faulted buffer; cpu: the "
      "training thread's CPU time (CLOCK_THREAD_CPUTIME_ID)\nof the same, which time-sharing with other threads "
      "and processes does not inflate\n\n",
      BASE_STEPS);
  fflush(stdout);
}

/* The rounds (round 0: a warm-up, not kept): each times the copy, the
 * sync save step and (async != NULL) the async save step, the order
 * rotated. */
static void run_rounds(state *s, bench_loop *sync, bench_loop *async, size_t rounds, long save_steps,
                       double *t[NSERIES]) {
  const size_t nitems = async != NULL ? 3 : 2;
  int64_t gs_copy = 0;
  for (size_t r = 0; r <= rounds; r++) {
    timing c = {0, 0}, a = {0, 0}, y = {0, 0};
    double h = 0;
    /* The async loop's previous write drained before anything is timed. */
    if (async != NULL) drain(async, save_steps - 1 - BASE_STEPS - async->since_save);
    for (size_t k = 0; k < nitems; k++) {
      size_t which = (r + k) % nitems;
      if (which == 0) {
        MPI_Barrier(MPI_COMM_WORLD);
        gs_copy = (int64_t)r;
        c = copy_once(s, &gs_copy);
      } else if (which == 1) {
        y = save_round(sync, save_steps, NULL);
      } else {
        a = save_round(async, save_steps, &h);
        /* Nothing else is timed while its write runs. */
        drain(async, save_steps - 1 - BASE_STEPS);
      }
    }
    if (r == 0) continue;
    t[S_COPY][r - 1] = c.wall, t[S_COPY_CPU][r - 1] = c.cpu;
    t[S_ASYNC][r - 1] = a.wall, t[S_ASYNC_CPU][r - 1] = a.cpu, t[S_HANDOFF][r - 1] = h;
    t[S_SYNC][r - 1] = y.wall;
  }
}

/* Rank 0: every rank's rows, the pooled ratios, the goal line. `all`
 * holds each rank's NSERIES series of `rounds`; sums: the snapshot bytes,
 * the shard bytes and the busy saves, summed over the ranks. */
static void report(const double *all, size_t rounds, const state *s, const unsigned long long sums[3], int sync_only) {
  const size_t n = (size_t)g_size * rounds;
  double *pool = malloc(3 * n * sizeof *pool); /* async / copy, async cpu / copy cpu, sync / copy */
  spread ga, gc, gy;
  if (pool == NULL) die_msg("out of memory for the report");
  printf("per rank, min / median / max over the rounds:\n");
  for (int k = 0; k < g_size; k++) {
    const double *t = all + (size_t)k * rounds * NSERIES;
    const double *c = t + S_COPY * rounds, *a = t + S_ASYNC * rounds, *h = t + S_HANDOFF * rounds,
                 *y = t + S_SYNC * rounds, *cc = t + S_COPY_CPU * rounds, *ac = t + S_ASYNC_CPU * rounds;
    printf("  rank %d\n", k);
    print_secs("copy (reference)", c, rounds, s->raw_bytes);
    if (!sync_only) {
      print_secs("async save step: stall", a, rounds, s->raw_bytes);
      print_secs("  of it, until the handoff", h, rounds, s->raw_bytes);
    }
    print_secs("sync save step: stall", y, rounds, s->raw_bytes);
    if (!sync_only) {
      print_ratio("async stall / copy (time)", a, c, rounds);
      print_ratio("  cpu: async stall / copy", ac, cc, rounds);
    }
    print_ratio("sync stall / copy (time)", y, c, rounds);
    for (size_t i = 0; i < rounds; i++) {
      pool[(size_t)k * rounds + i] = a[i] / c[i];
      pool[n + (size_t)k * rounds + i] = ac[i] / cc[i];
      pool[2 * n + (size_t)k * rounds + i] = y[i] / c[i];
    }
  }
  printf(
      "\nbytes per rank (mean of the ranks): a save snapshots %.2f MiB (every array the rank's Saver saves: the "
      "replicated\narrays whole, its partitioned blocks, the global step); its shard holds %.2f MiB\n",
      (double)sums[0] / g_size / 1048576.0, (double)sums[1] / g_size / 1048576.0);
  if (!sync_only)
    printf("async save steps that found the previous write unfinished (their stall includes a wait): %llu\n", sums[2]);
  ga = spread_of(pool, n), gc = spread_of(pool + n, n), gy = spread_of(pool + 2 * n, n);
  printf("\ngoals (per-round ratios of every rank, pooled):\n");
  if (!sync_only) {
    printf("  %-40s min %.3f median %.3f max %.3f (goal: median <= %.2f): %s\n", "async stall vs copy (time)", ga.min,
           ga.med, ga.max, GOAL_ASYNC_STALL, ga.med <= GOAL_ASYNC_STALL ? "MET" : "NOT MET");
    printf("  %-40s min %.3f median %.3f max %.3f (context)\n", "  the same in the training thread's cpu", gc.min,
           gc.med, gc.max);
  } else {
    printf("  %-40s not measured: --sync-only\n", "async stall vs copy (time)");
  }
  printf("  %-40s min %.3f median %.3f max %.3f (contrast: the write, fsyncs and commit included)\n",
         "sync stall vs copy (time)", gy.min, gy.med, gy.max);
  printf("\n");
  if (!sync_only) printf("goal async_stall_vs_copy min=%.3f median=%.3f max=%.3f\n", ga.min, ga.med, ga.max);
  fflush(stdout);
  free(pool);
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(path);
}

static int parse_count(const char *opt, const char *text, size_t lo, size_t hi, size_t *out) {
  char *end;
  unsigned long long v;
  unsigned shift = 0;
  errno = 0;
  v = strtoull(text, &end, 10);
  if (*end == 'K' || *end == 'k')
    shift = 10, end++;
  else if (*end == 'M' || *end == 'm')
    shift = 20, end++;
  else if (*end == 'G' || *end == 'g')
    shift = 30, end++;
  if (shift != 0 && *end == 'i') end++;
  if (shift != 0 && *end == 'B') end++;
  if (*text == '-' || end == text || *end != '\0' || errno == ERANGE || v > (hi >> shift) || (v << shift) < lo) {
    if (g_rank == 0) fprintf(stderr, PROG ": %s must be %zu..%zu, got '%s'\n", opt, lo, hi, text);
    return 2;
  }
  *out = (size_t)(v << shift);
  return 0;
}

static void usage(void) {
  printf("usage: mpirun --oversubscribe -np N " PROG
         " [--bytes N[KMG]] [--arrays N] [--rounds N] [--save-steps N] [--dir DIR] [--sync-only] [--quick]\n"
         "  --bytes N       the state: replicated arrays of N/2 bytes on every rank and partitioned arrays of N/2\n"
         "                  bytes across the ranks (default 64M)\n"
         "  --arrays N      f32 arrays, half of each kind (default %d)\n"
         "  --rounds N      timed rounds, after one warm-up round (default %d)\n"
         "  --save-steps N  the loops' cadence, at least %d (default %d)\n"
         "  --dir DIR       where the bench makes (and at the end removes) its directory (default /var/tmp)\n"
         "  --sync-only     synchronous saves alone: no second context, no MPI_THREAD_MULTIPLE\n"
         "  --quick         tiny sizes, 3 rounds: a smoke test\n",
         DEFAULT_ARRAYS, DEFAULT_ROUNDS, MIN_SAVE_STEPS, DEFAULT_SAVE_STEPS);
}

int main(int argc, char **argv) {
  size_t bytes = DEFAULT_BYTES, narrays = DEFAULT_ARRAYS, rounds = DEFAULT_ROUNDS, save_steps = DEFAULT_SAVE_STEPS;
  const char *parent = "/var/tmp";
  int sync_only = 0, quick = 0, provided = MPI_THREAD_SINGLE, rc = 0;
  char dir[4096] = {0}, sub[4200];
  hk_mpi_options mo = HK_MPI_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_env env;
  hk_mpi *train = NULL, *ckpt = NULL;
  bench_loop sync_loop, async_loop;
  state s;

  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  for (int i = 1; i < argc && rc == 0; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      if (g_rank == 0) usage();
      MPI_Finalize();
      return 0;
    } else if (strcmp(a, "--sync-only") == 0) {
      sync_only = 1;
    } else if (strcmp(a, "--quick") == 0) {
      quick = 1;
    } else if (strcmp(a, "--bytes") == 0 && i + 1 < argc) {
      rc = parse_count(a, argv[++i], 1024, (size_t)1 << 40, &bytes);
    } else if (strcmp(a, "--arrays") == 0 && i + 1 < argc) {
      rc = parse_count(a, argv[++i], 2, 10000, &narrays);
    } else if (strcmp(a, "--rounds") == 0 && i + 1 < argc) {
      rc = parse_count(a, argv[++i], 1, MAX_ROUNDS, &rounds);
    } else if (strcmp(a, "--save-steps") == 0 && i + 1 < argc) {
      rc = parse_count(a, argv[++i], MIN_SAVE_STEPS, 1000000, &save_steps);
    } else if (strcmp(a, "--dir") == 0 && i + 1 < argc) {
      parent = argv[++i];
    } else {
      if (g_rank == 0) fprintf(stderr, PROG ": unknown or incomplete option '%s'\nTry '" PROG " --help'.\n", a);
      rc = 2;
    }
  }
  if (rc != 0) {
    MPI_Finalize();
    return rc;
  }
  if (quick) bytes = (size_t)1 << 20, narrays = 8, rounds = 3, save_steps = MIN_SAVE_STEPS;
  if (!sync_only && provided < MPI_THREAD_MULTIPLE) {
    if (g_rank == 0)
      fprintf(stderr,
              PROG
              ": asynchronous checkpoints over a group make their collective saves on the writer thread, which "
              "needs MPI_THREAD_MULTIPLE; this MPI library provides thread level %d only. Run with --sync-only to "
              "measure synchronous saves alone.\n",
              provided);
    MPI_Finalize();
    return 1;
  }

  /* The bench's directory: rank 0's, made fresh, every rank names it. */
  if (g_rank == 0) {
    snprintf(dir, sizeof dir, "%s/" PROG ".XXXXXX", parent);
    if (mkdtemp(dir) == NULL) {
      fprintf(stderr, PROG ": cannot make a directory under %s: %s\n", parent, strerror(errno));
      dir[0] = '\0';
    }
  }
  MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (dir[0] == '\0') {
    MPI_Finalize();
    return 1;
  }

  hk_env_init(&env, HK_ENV_VERSION);
  env.log_level = HK_LOG_WARNING;
  mo.env = &env;
  mo.collective_timeout_secs = DEADLINE_SECS;
  if (hk_mpi_new(&train, &mo, &st) != HK_OK) die("hk_mpi_new (the program's context)", &st);
  if (!sync_only && hk_mpi_new(&ckpt, &mo, &st) != HK_OK) die("hk_mpi_new (the async loop's context)", &st);

  state_new(&s, bytes, narrays);
  memset(&sync_loop, 0, sizeof sync_loop);
  memset(&async_loop, 0, sizeof async_loop);
  snprintf(sub, sizeof sub, "%s/sync", dir);
  loop_open(&sync_loop, "sync", train, sub, &s, (long)save_steps, 0);
  if (!sync_only) {
    snprintf(sub, sizeof sub, "%s/async", dir);
    loop_open(&async_loop, "async", ckpt, sub, &s, (long)save_steps, 1);
  }

  {
    double *t[NSERIES], *all = NULL;
    unsigned long long mine[3], sums[3] = {0, 0, 0};
    for (int k = 0; k < NSERIES; k++)
      if ((t[k] = calloc(rounds, sizeof(double))) == NULL) die_msg("out of memory for the timings");
    if (g_rank == 0) print_header(bytes, narrays, rounds, save_steps, dir, sync_only);
    run_rounds(&s, &sync_loop, sync_only ? NULL : &async_loop, rounds, (long)save_steps, t);

    /* Every rank's rounds to rank 0. */
    if (g_rank == 0 && (all = calloc((size_t)g_size * rounds * NSERIES, sizeof *all)) == NULL)
      die_msg("out of memory for the report");
    {
      double *mine_t = malloc(rounds * NSERIES * sizeof *mine_t);
      if (mine_t == NULL) die_msg("out of memory for the report");
      for (int k = 0; k < NSERIES; k++) memcpy(mine_t + (size_t)k * rounds, t[k], rounds * sizeof(double));
      MPI_Gather(mine_t, (int)(rounds * NSERIES), MPI_DOUBLE, all, (int)(rounds * NSERIES), MPI_DOUBLE, 0,
                 MPI_COMM_WORLD);
      free(mine_t);
    }
    mine[0] = s.snap_bytes, mine[1] = s.shard_bytes, mine[2] = (unsigned long long)async_loop.busy_at_save;
    MPI_Reduce(mine, sums, 3, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (g_rank == 0) report(all, rounds, &s, sums, sync_only);
    free(all);
    for (int k = 0; k < NSERIES; k++) free(t[k]);
  }

  if (!sync_only) {
    /* The drains took as many steps as each rank needed: the final
     * checkpoint is collective, so every rank first reaches the same step
     * (short of the next save step: a drain stays BASE_STEPS short of it). */
    int64_t mine = hk_loop_global_step(async_loop.loop), most = 0;
    MPI_Allreduce(&mine, &most, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    while (hk_loop_global_step(async_loop.loop) < most) loop_step(&async_loop);
  }
  if (hk_loop_finish(sync_loop.loop, &st) != HK_OK) die("hk_loop_finish (sync)", &st);
  hk_loop_free(sync_loop.loop);
  if (!sync_only) {
    if (hk_loop_finish(async_loop.loop, &st) != HK_OK) die("hk_loop_finish (async)", &st);
    hk_loop_free(async_loop.loop);
  }
  hk_mpi_free(ckpt);
  hk_mpi_free(train);
  state_free(&s);
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank == 0 && nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
    fprintf(stderr, PROG ": could not remove %s: %s\n", dir, strerror(errno));
  MPI_Finalize();
  return 0;
}
