/*
 * checkpoint — what hooked's checkpoints cost against the disk and memory.
 *
 * For a state of S bytes (default 256 MiB) in many variables of mixed sizes
 * (a few large, many medium, many small; host-owned buffers of the embedded
 * executor), measures in rounds (--repeat, default 15). In every round each
 * reference and hooked's case run once, interleaved, the order rotated by
 * one each round, and every ratio is computed per round (as speed: above 1
 * = hooked faster than its reference, unless it says "time") and printed as
 * min / median / max over the rounds, beside the times:
 *   (1p) the raw write of the same bytes paced as hooked's POSIX fs paces a
 *        checkpoint's data: pwrite in 4 MiB pieces, each completed 8 MiB
 *        window handed to the disk at once (sync_file_range), then fsync,
 *        close, rename, fsync of the directory: the reference of
 *   (2)  hooked's synchronous save, hk_saver_save() (data file and state
 *        file made durable; the previous checkpoint is removed before the
 *        clock starts, so it deletes nothing), its fsyncs counted through
 *        an hk_fs that forwards to POSIX; and, for context,
 *   (1)  the same raw write unpaced (write() in 8 MiB chunks, then fsync);
 *   (3)  memcpy of the same bytes into a pre-faulted buffer, the reference
 *        of (4) the training thread's stall per save with the asynchronous
 *        hook (the snapshot step's hk_session_run minus the median step
 *        that took none; the previous write finished first);
 *   (6)  read() of the data file (8 MiB calls) into pre-faulted memory,
 *        warm (the file is in the page cache): the reference of (5)
 *        restore, hk_saver_restore(), straight into the variables;
 *   (6c) cold: the file dropped from the page cache before each read
 *        (posix_fadvise DONTNEED, checked with mincore), read the way
 *        restore reads: the header's length, then the data region with
 *        pread in 1 MiB chunks, one stream, no CRC: the reference of (5c)
 *        restore from the disk; (6r) plain read() of the cold file beside
 *        it for context;
 *   (2k) retention: a Saver with max_to_keep 5 over many saves (every save
 *        deletes the oldest) against (2) deleting nothing, and the fsyncs
 *        per save of each;
 *   (1s), (2s) small models (11 KiB and 64 KiB in four tensors and the
 *        global step): hooked's save against plain POSIX writing the same
 *        bytes as torch.save would be made durable (one file written,
 *        fsync, rename, fsync of the directory), with the fsyncs of each
 *        and the ratio per fsync;
 *   (7), (8), (8b) the stall with copy-before-write on the executor and the
 *        host loop (overlap.c says how), per save against the median (3);
 *   scaling: save and restore at 1 MiB, 64 MiB, 256 MiB and 1 GiB, and at
 *        10, 1,000 and 100,000 tensors (us per tensor).
 * It starts with the machine (CPU, cores, kernel, the file system of the
 * bench directory, the CRC-32C path) and ends with one machine-readable
 * line per goal:
 *   goal restore_vs_warm_read min=X median=Y max=Z      (5) vs (6), goal >= 0.9
 *   goal restore_vs_cold_read min=X median=Y max=Z      (5c) vs (6c), goal >= 0.95
 *   goal save_vs_paced_write min=X median=Y max=Z       (2) vs (1p), goal >= 0.95
 *   goal small_save_vs_posix min=X median=Y max=Z       (2s) vs (1s), both sizes, goal >= 0.8
 *   goal fsyncs_per_save_with_retention value=N         the most of (2k), goal <= 4
 * They are reported, not enforced: disk and memory speeds depend on the
 * machine and its load. --quick runs everything at tiny sizes in 3 rounds
 * (a smoke test: seconds). Exit status: 0 when every case ran, 1 on error,
 * 2 for a usage error.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "bench.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef HOOKED_BENCH_BUILD_TYPE
#define HOOKED_BENCH_BUILD_TYPE ""
#endif

#define MAX_REPEAT 1000
#define DEFAULT_REPEAT 15
#define QUICK_REPEAT 3
#define QUICK_BYTES ((size_t)4 << 20)

#define GOAL_SAVE 0.95
#define GOAL_STALL 1.25
#define GOAL_RESTORE 0.9
#define GOAL_RESTORE_COLD 0.95 /* within 5% of a cold read made the way restore reads */
#define GOAL_SMALL 0.8
#define GOAL_FSYNCS 4
#define COLD_MAX_RESIDENT 0.05 /* a read is cold when at most this much of the file was cached */
#define GOAL_OVERLAP 0.25

/* Every per-round series of the main state. */
enum {
  T_RAW,        /* (1) */
  T_PACED,      /* (1p) */
  T_SAVE,       /* (2) */
  T_COPY,       /* (3) */
  T_SPLIT,      /* (3), one memcpy per tensor */
  T_STALL,      /* (4) */
  T_READ,       /* (6) */
  T_RESTORE,    /* (5) */
  T_PREAD_COLD, /* (6c) */
  T_READ_COLD,  /* (6r) */
  T_REST_COLD,  /* (5c) */
  NSERIES
};

/* ---- setup and report ------------------------------------------------------------ */

static int parse_size(const char *text, size_t *out) {
  char *end;
  unsigned long long v;
  unsigned shift = 0;
  errno = 0;
  v = strtoull(text, &end, 10);
  if (*text == '-' || end == text || errno == ERANGE) return 1;
  if (*end == 'K' || *end == 'k')
    shift = 10, end++;
  else if (*end == 'M' || *end == 'm')
    shift = 20, end++;
  else if (*end == 'G' || *end == 'g')
    shift = 30, end++;
  if (*end == 'i' && shift != 0) end++;
  if (*end == 'B' && shift != 0) end++;
  if (*end != '\0' || v == 0 || v > (SIZE_MAX >> shift)) return 1;
  *out = (size_t)v << shift;
  return 0;
}

static int parse_repeat(const char *text, size_t *out) {
  char *end;
  unsigned long v;
  errno = 0;
  v = strtoul(text, &end, 10);
  if (*text == '-' || end == text || *end != '\0' || errno == ERANGE || v == 0 || v > MAX_REPEAT) return 1;
  *out = v;
  return 0;
}

/* Whole f32 elements per tensor; the last tensor takes what rounding left. */
static void size_tensors(bench *b) {
  b->ntensors = 0;
  for (size_t c = 0; c < NCLASSES; c++) {
    b->class_bytes[c] = (size_t)((double)b->bytes * classes[c].share / (double)classes[c].count) / 4 * 4;
    b->ntensors += classes[c].count;
  }
}

static void human(size_t n, char *buf, size_t cap) {
  if (n >= ((size_t)1 << 30))
    snprintf(buf, cap, "%.1f GiB", (double)n / (double)(1u << 30));
  else if (n >= ((size_t)1 << 20))
    snprintf(buf, cap, "%.1f MiB", (double)n / (double)(1u << 20));
  else
    snprintf(buf, cap, "%.1f KiB", (double)n / 1024.0);
}

static void goal_line(const char *name, spread s) {
  printf("goal %s min=%.3f median=%.3f max=%.3f\n", name, s.min, s.med, s.max);
}

static void verdict(const char *what, spread s, double target, int at_least) {
  int met = at_least ? s.med >= target : s.med <= target;
  printf("  %-46s median %5.2fx (goal %s %.2fx): %s\n", what, s.med, at_least ? ">=" : "<=", target,
         met ? "MET" : "NOT MET");
}

static void usage(FILE *f) {
  fprintf(f, "usage: " PROG
             " [--bytes N] [--dir DIR] [--repeat R] [--read-work K] [--quick]\n"
             "  --bytes N    state size, with an optional K, M or G suffix (binary; default 256M)\n"
             "  --dir DIR    where to write: a fresh directory is made inside it and removed at the\n"
             "               end (default $TMPDIR, else /var/tmp)\n"
             "  --repeat R   rounds: every case runs once a round, interleaved with its reference,\n"
             "               the order rotated each round; min / median / max of the per-round\n"
             "               ratios are reported (default 15; 3 at 1 GiB and 100,000 tensors)\n"
             "  --read-work K  multiply-adds per element in the read-only phase of (7) and (8)\n"
             "               (default: calibrated, at least 16, to take 1.5x (3); 1 or 2 make it\n"
             "               stream memory as fast as it can, competing with the copy)\n"
             "  --quick      a smoke test: every case at tiny sizes (4 MiB unless --bytes), 3 rounds\n"
             "               unless --repeat; the figures mean nothing\n");
}

static void close_all(bench *b) {
  if (b->session != NULL) {
    hk_session_close(b->session, HK_OK, NULL);
    hk_session_free(b->session);
  }
  hk_hook_free(b->hook);
  hk_raw_session_free(b->rs);
  hk_saver_free(b->sync_saver);
  hk_saver_free(b->async_saver);
  hk_graph_free(b->g);
}

/* The rounds of the main state: the writes, memcpy and the async stall,
 * the warm reads, the cold reads. */
static int run_rounds(bench *b, size_t repeat, double *t[NSERIES], double *plain, size_t *nplain, size_t plain_cap,
                      char **data_path, char **prefix_copy, size_t *file_bytes, double *cold_resident,
                      int *cold_known) {
  const char *prefix = NULL;
  for (size_t r = 0; r < repeat; r++) {
    /* (1), (1p), (2), the order rotated */
    for (size_t k = 0; k < 3; k++) {
      size_t which = (r + k) % 3;
      int rc = which == 0   ? raw_write(b, UNPACED, &t[T_RAW][r])
               : which == 1 ? raw_write(b, PACED, &t[T_PACED][r])
                            : sync_save(b, &prefix, &t[T_SAVE][r]);
      if (rc != 0) return 1;
      if (which == 2 && set_data_path(data_path, prefix_copy, prefix) != 0) return 1;
    }
    t[T_COPY][r] = copy_once(b);
    t[T_SPLIT][r] = copy_per_tensor(b);
    if (async_save(b, plain, nplain, plain_cap, &t[T_STALL][r]) != 0) return 1;
    /* Its write is finished before anything else is timed. */
    if (drain_async(b, plain, nplain, plain_cap) != 0) return 1;
    /* (6), (5), warm, alternating */
    for (size_t k = 0; k < 2; k++)
      if ((r + k) % 2 == 0 ? raw_read(b, *data_path, &t[T_READ][r], file_bytes) != 0
                           : restore(b, *prefix_copy, &t[T_RESTORE][r]) != 0)
        return 1;
    /* (6c), (6r), (5c): from the disk, the file dropped before each */
    for (size_t k = 0; k < 3; k++) {
      size_t which = (r + k) % 3;
      double res = drop_cache(*data_path);
      int rc;
      if (res < 0)
        *cold_known = 0;
      else if (res > *cold_resident)
        *cold_resident = res;
      rc = which == 0   ? pread_data(b, *data_path, &t[T_PREAD_COLD][r])
           : which == 1 ? raw_read(b, *data_path, &t[T_READ_COLD][r], file_bytes)
                        : restore(b, *prefix_copy, &t[T_REST_COLD][r]);
      if (rc != 0) return 1;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  bench b;
  size_t repeat = 0, nplain = 0, plain_cap, file_bytes = 0;
  const char *parent = getenv("TMPDIR");
  double *t[NSERIES], *plain = NULL;
  const char *prefix = NULL;
  char *tmpl = NULL, *data_path = NULL, *prefix_copy = NULL, sizes[NCLASSES][32];
  overlap_result ov[3];
  int ov_work = 0, quick = 0, bytes_given = 0;
  double ov_read = 0;
  double cold_resident = 0; /* the most of the file a drop left cached */
  int cold_known = 1;       /* every drop was checked */
  retention_result ret;
  small_result small[NSMALL_MODELS];
  int status = 1;

  memset(&b, 0, sizeof b);
  memset(ov, 0, sizeof ov);
  memset(t, 0, sizeof t);
  memset(&ret, 0, sizeof ret);
  memset(small, 0, sizeof small);
  b.bytes = (size_t)256 << 20;
  b.next_step = 1;
  if (parent == NULL || *parent == '\0') parent = "/var/tmp";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    }
    if (strcmp(a, "--quick") == 0) {
      quick = 1;
    } else if (i + 1 < argc && strcmp(a, "--bytes") == 0) {
      if (parse_size(argv[++i], &b.bytes) != 0) {
        fprintf(stderr, PROG ": invalid --bytes '%s': expected a positive size such as 256M\n", argv[i]);
        return 2;
      }
      bytes_given = 1;
    } else if (i + 1 < argc && strcmp(a, "--repeat") == 0) {
      if (parse_repeat(argv[++i], &repeat) != 0) {
        fprintf(stderr, PROG ": invalid --repeat '%s': expected an integer in 1..%d\n", argv[i], MAX_REPEAT);
        return 2;
      }
    } else if (i + 1 < argc && strcmp(a, "--dir") == 0) {
      parent = argv[++i];
    } else if (i + 1 < argc && strcmp(a, "--read-work") == 0) {
      size_t k = 0;
      if (parse_repeat(argv[++i], &k) != 0) {
        fprintf(stderr, PROG ": invalid --read-work '%s': expected an integer in 1..%d\n", argv[i], MAX_REPEAT);
        return 2;
      }
      ov_work = (int)k;
    } else {
      fprintf(stderr, PROG ": unknown or incomplete option '%s'\nTry '" PROG " --help'.\n", a);
      return 2;
    }
  }
  if (quick && !bytes_given) b.bytes = QUICK_BYTES;
  if (repeat == 0) repeat = quick ? QUICK_REPEAT : DEFAULT_REPEAT;
  b.bytes = b.bytes / 4 * 4;
  size_tensors(&b);
  if (b.bytes < 4 * b.ntensors * 2) {
    fprintf(stderr, PROG ": --bytes must be at least %zu for %zu tensors\n", 8 * b.ntensors, b.ntensors);
    return 2;
  }

  hk_env_init(&b.env, HK_ENV_VERSION);
  b.env.log_level = HK_LOG_WARNING;
  atomic_init(&b.counts.syncs, 0);
  atomic_init(&b.counts.dir_syncs, 0);
  b.env.fs = &counting_fs; /* POSIX, its fsyncs counted */
  b.env.fs_user = &b.counts;
  plain_cap = repeat * 4096;
  plain = calloc(plain_cap, sizeof(double));
  tmpl = path_join(parent, "hooked-bench-XXXXXX");
  {
    int ok = plain != NULL && tmpl != NULL;
    for (int s = 0; s < NSERIES; s++) ok = (t[s] = calloc(repeat, sizeof(double))) != NULL && ok;
    if (!ok) {
      fprintf(stderr, PROG ": out of memory\n");
      goto out;
    }
  }
  if (posix_memalign((void **)&b.arena, 64, b.bytes) != 0) {
    fprintf(stderr, PROG ": out of memory for the %zu-byte state\n", b.bytes);
    goto out;
  }
  fill_state(b.arena, b.bytes);
  if (mkdtemp(tmpl) == NULL) {
    os_fail("creating a directory in", parent);
    goto out;
  }
  b.dir = tmpl;
  b.sync_dir = path_join(b.dir, "sync");
  b.async_dir = path_join(b.dir, "async");
  b.raw_path = path_join(b.dir, "raw.bin");
  b.raw_tmp = path_join(b.dir, "raw.bin.tmp");
  if (!b.sync_dir || !b.async_dir || !b.raw_path || !b.raw_tmp) goto out;
  if (mkdir(b.sync_dir, 0755) != 0) {
    os_fail("creating", b.sync_dir);
    goto out;
  }
  {
    const char *bt = HOOKED_BENCH_BUILD_TYPE;
    char total[32];
    for (size_t c = 0; c < NCLASSES; c++) human(b.class_bytes[c], sizes[c], sizeof sizes[c]);
    human(b.bytes, total, sizeof total);
    printf(
        "hooked %s checkpoint bench%s: build type %s; %zu rounds\n"
        "(reference and hooked interleaved, the order rotated each round; ratios per round as speed,\n"
        "above 1 = hooked faster, unless they say time)\n",
        hk_version(), quick ? " --quick (a smoke test: the figures mean nothing)" : "",
        *bt ? bt : "(none: unoptimized)", repeat);
    print_machine(b.dir);
    printf("state: %zu bytes (%s) in %zu f32 tensors (%zu x %s, %zu x %s, %zu x %s) + global_step; directory %s\n",
           b.bytes, total, b.ntensors, classes[0].count, sizes[0], classes[1].count, sizes[1], classes[2].count,
           sizes[2], b.dir);
    fflush(stdout);
  }
  /* (3), (6) and the cold reads share one buffer, as large as a data file can be. */
  if (ensure_copy(&b, b.bytes + ((size_t)64 << 20)) != 0) goto out;
  if (build_graph(&b) != 0 || open_sessions(&b) != 0) goto out;

  /* Warm-up: every code path and buffer once (the async snapshot buffer is
   * allocated at its first save; the session's creation save is drained),
   * and the page cache holds the data file for the warm reads. */
  {
    double w;
    if (raw_write(&b, UNPACED, &w) != 0 || raw_write(&b, PACED, &w) != 0 || sync_save(&b, &prefix, &w) != 0) goto out;
    if (set_data_path(&data_path, &prefix_copy, prefix) != 0) goto out;
    copy_once(&b);
    copy_per_tensor(&b);
    if (async_save(&b, plain, &nplain, 0, &w) != 0) goto out;
    if (drain_async(&b, plain, &nplain, 0) != 0) goto out;
    if (raw_read(&b, data_path, &w, &file_bytes) != 0 || pread_data(&b, data_path, &w) != 0 ||
        restore(&b, prefix_copy, &w) != 0)
      goto out;
  }
  if (run_rounds(&b, repeat, t, plain, &nplain, plain_cap, &data_path, &prefix_copy, &file_bytes, &cold_resident,
                 &cold_known) != 0)
    goto out;
  /* (7), (8), (8b), against the medians of (3) and (1) */
  if (run_overlap_cases(&b, spread_of(t[T_COPY], repeat).med, spread_of(t[T_RAW], repeat).med, repeat, ov, &ov_work,
                        &ov_read) != 0)
    goto out;
  {
    const double step = nplain > 0 ? median(plain, nplain) : 0;
    double copy = spread_of(t[T_COPY], repeat).med;
    for (size_t r = 0; r < repeat; r++) t[T_STALL][r] -= step;
    printf(
        "data file %zu bytes; fsyncs of one (2), counted through a counting hk_fs: %lu of files + %lu of\n"
        "directories (the data file, the state file, the directory after each rename)\n\n",
        file_bytes, b.save_syncs, b.save_dir_syncs);
    print_header();
    print_row("(1p) raw write, paced like hooked", t[T_PACED], repeat, b.bytes, "reference for (2)");
    print_row("(2) hooked sync save (hk_saver_save)", t[T_SAVE], repeat, b.bytes, "");
    print_row("(1) raw write, unpaced (context)", t[T_RAW], repeat, b.bytes, "");
    print_ratio("(2) speed vs (1p)", t[T_PACED], t[T_SAVE], repeat, 0);
    print_ratio("(2) speed vs (1), unpaced", t[T_RAW], t[T_SAVE], repeat, 0);
    print_row("(3) memcpy into a pre-faulted buffer", t[T_COPY], repeat, b.bytes, "reference for (4)");
    print_row("(4) async hook: training-thread stall", t[T_STALL], repeat, b.bytes, "");
    print_row("    memcpy per tensor (snapshot layout)", t[T_SPLIT], repeat, b.bytes, "");
    print_ratio("(4) time vs (3)", t[T_COPY], t[T_STALL], repeat, 1);
    print_ratio("memcpy per tensor, time vs (3)", t[T_COPY], t[T_SPLIT], repeat, 1);
    print_row("(6) read(), warm, into pre-faulted memory", t[T_READ], repeat, file_bytes, "reference for (5)");
    print_row("(5) hooked restore (hk_saver_restore)", t[T_RESTORE], repeat, b.bytes, "");
    print_ratio("(5) speed vs (6)", t[T_READ], t[T_RESTORE], repeat, 0);
    print_row("(6c) cold, chunked pread of the data region", t[T_PREAD_COLD], repeat, b.bytes, "reference for (5c)");
    print_row("(5c) hooked restore, cold", t[T_REST_COLD], repeat, b.bytes, "");
    print_row("(6r) cold, read() of the file (context)", t[T_READ_COLD], repeat, file_bytes, "");
    print_ratio("(5c) speed vs (6c)", t[T_PREAD_COLD], t[T_REST_COLD], repeat, 0);
    print_ratio("(5c) speed vs (6r)", t[T_READ_COLD], t[T_REST_COLD], repeat, 0);
    if (cold_known)
      printf(
          "  cold: the data file dropped from the page cache before each read (posix_fadvise DONTNEED);\n"
          "  at most %.2f%% of its pages were still cached (mincore)\n",
          100 * cold_resident);
    else
      printf("  cold: the page cache drop could not be checked here: they may be warm reads\n");
    printf(
        "  (4) is the snapshot step's hk_session_run minus the median of %zu steps that took no snapshot (%.2f us)\n",
        nplain, step * 1e6);
    printf(
        "\ncopy-before-write: a step reads every variable (%d multiply-adds per element, %.4f s alone: %.2fx (3)),\n"
        "then rewrites every variable; the stall is the training thread's time in hooked in the snapshot step and\n"
        "the next one over the plain steps just before (%zu saves; time vs the median (3)):\n",
        ov_work, ov_read, ov_read / copy, repeat);
    for (int v = 0; v < 3; v++) {
      static const char *const names[3] = {"(7) embedded executor", "(8) host loop",
                                           "(8b) host loop, no updates_begin"};
      char copied[64] = "all, at the step boundary";
      if (ov[v].copied_here >= 0) snprintf(copied, sizeof copied, "%.1f of %zu", ov[v].copied_here, b.ntensors + 1);
      printf("  %-34s stall min %+.4f  median %+.4f  max %+.4f s: %.3fx (3) at the median\n", names[v], ov[v].stall_min,
             ov[v].stall, ov[v].stall_max, ov[v].stall / copy);
      printf("  %-34s snapshot step %+.4f s, next %+.4f s, the program's work next %+.4f s, whole steps %+.4f s\n", "",
             ov[v].snap, ov[v].next, ov[v].contention, ov[v].whole);
      printf("  %-34s tensors the training thread copied per save: %s\n", "", copied);
    }
    fflush(stdout);
  }
  printf("\nretention: a Saver with max_to_keep 5, every save deleting the oldest, vs (2) deleting nothing\n");
  print_header();
  if (run_retention(&b, repeat, &ret) != 0) goto out;
  printf(
      "\nsmall models: hooked's sync save vs plain POSIX of the same bytes made durable as torch.save + fsync +\n"
      "rename + fsync of the directory would be (%zu saves of each, alternating)\n",
      repeat * SMALL_PER_ROUND);
  print_header();
  if (run_small(&b, repeat, small) != 0) goto out;
  fflush(stdout);
  if (run_scaling(&b, quick, repeat, t[T_SAVE], t[T_PACED], t[T_RESTORE], t[T_READ]) != 0) goto out;
  {
    spread warm, cold, save, stall, sm;
    double *all = NULL;
    size_t nall = 0;
    printf("\ngoals (medians of the per-round ratios):\n");
    {
      double *r = calloc(repeat * 3, sizeof *r);
      if (r == NULL) goto out;
      for (size_t i = 0; i < repeat; i++) {
        r[i] = t[T_PACED][i] / t[T_SAVE][i];
        r[repeat + i] = t[T_READ][i] / t[T_RESTORE][i];
        r[2 * repeat + i] = t[T_PREAD_COLD][i] / t[T_REST_COLD][i];
      }
      save = spread_of(r, repeat), warm = spread_of(r + repeat, repeat), cold = spread_of(r + 2 * repeat, repeat);
      for (size_t i = 0; i < repeat; i++) r[i] = t[T_STALL][i] / t[T_COPY][i];
      stall = spread_of(r, repeat);
      free(r);
    }
    for (int s = 0; s < NSMALL_MODELS; s++) nall += small[s].n;
    all = calloc(nall > 0 ? nall : 1, sizeof *all);
    if (all == NULL) goto out;
    nall = 0;
    for (int s = 0; s < NSMALL_MODELS; s++)
      for (size_t i = 0; i < small[s].n; i++) all[nall++] = small[s].posix[i] / small[s].hooked[i];
    sm = spread_of(all, nall);
    free(all);
    verdict("sync save vs the paced raw write (speed)", save, GOAL_SAVE, 1);
    verdict("async stall vs memcpy (time)", stall, GOAL_STALL, 0);
    verdict("restore vs read(), warm (speed)", warm, GOAL_RESTORE, 1);
    if (cold_known && cold_resident <= COLD_MAX_RESIDENT)
      verdict("restore vs the chunked pread, cold (speed)", cold, GOAL_RESTORE_COLD, 1);
    else
      printf("  %-46s not measured: the page cache could not be dropped\n", "restore vs the chunked pread, cold");
    verdict("small save vs POSIX, 11 and 64 KiB (speed)", sm, GOAL_SMALL, 1);
    if (sm.med < GOAL_SMALL && small[0].posix_fsyncs > 0)
      printf(
          "  %-46s %lu fsyncs per save against %lu (the data file and the state file, each with its\n"
          "  %-46s directory, against one file and its directory): %.2fx per fsync\n",
          "  the reason:", small[0].hooked_fsyncs, small[0].posix_fsyncs, "",
          sm.med * (double)small[0].hooked_fsyncs / (double)small[0].posix_fsyncs);
    printf("  %-46s %lu (goal <= %d): %s\n", "fsyncs per save with retention (keep 5)", ret.keep_max, GOAL_FSYNCS,
           ret.keep_max <= GOAL_FSYNCS ? "MET" : "NOT MET");
    printf("  %-46s (7) %.3fx, (8) %.3fx (goal <= %.2fx)\n", "copy-before-write stall vs memcpy (time)",
           ov[0].stall / spread_of(t[T_COPY], repeat).med, ov[1].stall / spread_of(t[T_COPY], repeat).med,
           GOAL_OVERLAP);
    printf("\n");
    goal_line("restore_vs_warm_read", warm);
    goal_line("restore_vs_cold_read", cold);
    goal_line("save_vs_paced_write", save);
    goal_line("small_save_vs_posix", sm);
    printf("goal fsyncs_per_save_with_retention value=%lu\n", ret.keep_max);
    fflush(stdout);
  }
  status = 0;
out:
  close_all(&b);
  if (b.dir != NULL) remove_tree(b.dir);
  free(b.sync_dir), free(b.async_dir), free(b.raw_path), free(b.raw_tmp);
  free(tmpl);
  free(b.arena), free(b.copy);
  for (int s = 0; s < NSERIES; s++) free(t[s]);
  free(plain);
  free(data_path), free(prefix_copy);
  free(ret.keep), free(ret.plain);
  for (int s = 0; s < NSMALL_MODELS; s++) free(small[s].posix), free(small[s].hooked);
  return status;
}
