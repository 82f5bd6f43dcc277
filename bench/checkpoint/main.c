/*
 * checkpoint — what hooked's checkpoints cost against the disk and memory.
 *
 * For a state of S bytes (default 256 MiB) in many variables of mixed sizes
 * (a few large, many medium, many small; host-owned buffers of the embedded
 * executor), measures in one run, each case --repeat times (median):
 *   (1) raw write+fsync of the same bytes to the same directory with plain
 *       POSIX calls, doing the same durability work as a checkpoint: open a
 *       temporary file, write in 8 MiB chunks, fsync, close, rename, fsync
 *       the directory;
 *   (2) hooked's synchronous save, hk_saver_save() (data file, state file,
 *       retention of the previous checkpoint), its fsyncs counted through
 *       an hk_fs that forwards to POSIX (hooked does all its I/O here
 *       through it);
 *   (3) memcpy of the same bytes into a preallocated, pre-faulted buffer;
 *   (4) the training thread's stall per save with the asynchronous hook
 *       (AsyncCheckpointSaverHook in a session): hk_session_run() of the
 *       step that takes the snapshot minus the median step that does not,
 *       with the previous write finished first (a listener's after_save
 *       says so), so it measures the copy and never a deferral;
 *   (5) restore, hk_saver_restore(), of the file (2) wrote, against
 *   (6) a raw read of that same file (open, read in 8 MiB chunks into a
 *       pre-faulted buffer, close); restore writes straight into the
 *       variables (host buffers: the executor's variable storage);
 *   (5c), (6c) the same two from the disk: the data file is dropped from the
 *       page cache before each (posix_fadvise DONTNEED needs no root for a
 *       clean file; mincore checks that it worked);
 *   (1s), (2s) (1) and (2) for a small model, 11 KiB in four tensors and the
 *       global step: fixed costs only;
 *   (1e) (1) again, each 8 MiB chunk handed to the disk as soon as it is
 *       written (sync_file_range, Linux), as hooked's POSIX fs does for a
 *       checkpoint's data: (2) against a raw write doing the same;
 *   (7) the training thread's stall per save with copy-before-write
 *       on the embedded executor: a synthetic step reads every variable
 *       (its read-only phase: READ_WORK_MIN multiply-adds per element or
 *       more, compute-bound like a forward pass, and at least
 *       READ_OVER_COPY times (3); --read-work sets it) then an op rewrites
 *       every variable. The stall is the training thread's time in
 *       hooked (outside those two phases: taking the snapshot, copying a
 *       variable or waiting for its copy) in the snapshot step and the next
 *       one, over the plain steps just before; the next step's own work,
 *       slowed by sharing memory and cores with the writer's copy, and the
 *       whole steps are printed apart. The writer's file I/O (its CRC pass
 *       and write) is held until that next step is timed, as (4) leaves it
 *       out too: it competes with training alike with or without overlap;
 *   (8) the same with the host loop, the program calling
 *       hk_loop_updates_begin() between its reads and its writes, and
 *       (8b) without that call (the copy at the step boundary, for
 *       comparison).
 * Reads (5) and (6) are warm-cache: the file is read once before timing,
 * and the two alternate. The asynchronous hook's write is finished before
 * anything else is timed.
 *
 * Goals (issue 9): sync save >= 0.95x raw write+fsync; restore >= 0.9x raw
 * warm read and >= 0.95x raw cold read; async stall <= 1.25x memcpy (issue
 * 3); the small save's ratio is printed without a goal (it makes two fsync
 * pairs where the raw write makes one). Also issue 9: the stall with copy-before-write
 * (7, 8) <= 0.25x memcpy when the read-only phase is at least as long as
 * the copy. They are reported, not enforced: disk
 * and memory speeds depend on the machine and its load.
 * Exit status: 0 when every case ran, 1 on error, 2 for a usage error.
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

#define GOAL_SAVE 0.95
#define GOAL_STALL 1.25
#define GOAL_RESTORE 0.9
#define GOAL_RESTORE_COLD 0.95 /* within 5% of a cold raw read */
#define COLD_MAX_RESIDENT 0.05 /* a read is cold when at most this much of the file was cached */
#define SMALL_REPEAT 5         /* small saves per --repeat: their time is a few fsyncs, and noisy */
#define GOAL_OVERLAP 0.25

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

static void row(const char *label, double secs, size_t bytes, const char *ratio) {
  printf("%-44s %9.4f %8.2f  %s\n", label, secs, (double)bytes / secs / 1e9, ratio);
}

static void goal(const char *what, double value, double target, int at_least) {
  int met = at_least ? value >= target : value <= target;
  printf("  %-46s %5.2fx (goal %s %.2fx): %s\n", what, value, at_least ? ">=" : "<=", target, met ? "MET" : "NOT MET");
}

static void usage(FILE *f) {
  fprintf(f, "usage: " PROG
             " [--bytes N] [--dir DIR] [--repeat R] [--read-work K]\n"
             "  --bytes N    state size, with an optional K, M or G suffix (binary; default 256M)\n"
             "  --dir DIR    where to write: a fresh directory is made inside it and removed at the\n"
             "               end (default $TMPDIR, else /var/tmp)\n"
             "  --repeat R   repetitions of every case; the median is reported (default 3; 3R saves\n"
             "               for (7), (8) and (8b))\n"
             "  --read-work K  multiply-adds per element in the read-only phase of (7) and (8)\n"
             "               (default: calibrated, at least 16, to take 1.5x (3); 1 or 2 make it\n"
             "               stream memory as fast as it can, competing with the copy)\n");
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

int main(int argc, char **argv) {
  bench b;
  size_t repeat = 3, nplain = 0, plain_cap, file_bytes = 0;
  const char *parent = getenv("TMPDIR");
  double *t_raw = NULL, *t_save = NULL, *t_copy = NULL, *t_split = NULL, *t_stall = NULL, *t_restore = NULL,
         *t_read = NULL;
  double *plain = NULL;
  const char *prefix = NULL;
  char *tmpl = NULL, *data_path = NULL, *prefix_copy = NULL, sizes[NCLASSES][32];
  overlap_result ov[3];
  int ov_work = 0;
  double ov_read = 0;
  /* (5c), (6c), (1s), (2s) */
  double *t_read_cold = NULL, *t_restore_cold = NULL, *t_small_raw = NULL, *t_small_save = NULL, *t_raw_early = NULL;
  double cold_resident = 0; /* the most of the file a drop left cached */
  int cold_known = 1;       /* every drop was checked */
  unsigned long small_syncs = 0, small_dir_syncs = 0;
  int status = 1;

  memset(&b, 0, sizeof b);
  memset(ov, 0, sizeof ov);
  b.bytes = (size_t)256 << 20;
  if (parent == NULL || *parent == '\0') parent = "/var/tmp";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    }
    if (i + 1 < argc && strcmp(a, "--bytes") == 0) {
      if (parse_size(argv[++i], &b.bytes) != 0) {
        fprintf(stderr, PROG ": invalid --bytes '%s': expected a positive size such as 256M\n", argv[i]);
        return 2;
      }
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
  t_read_cold = calloc(repeat, sizeof(double));
  t_raw_early = calloc(repeat, sizeof(double));
  t_restore_cold = calloc(repeat, sizeof(double));
  t_small_raw = calloc(repeat * SMALL_REPEAT, sizeof(double));
  t_small_save = calloc(repeat * SMALL_REPEAT, sizeof(double));
  if (!t_read_cold || !t_restore_cold || !t_small_raw || !t_small_save || !t_raw_early) {
    fprintf(stderr, PROG ": out of memory\n");
    goto out;
  }
  plain_cap = repeat * 4096;
  t_raw = calloc(repeat, sizeof(double));
  t_save = calloc(repeat, sizeof(double));
  t_copy = calloc(repeat, sizeof(double));
  t_split = calloc(repeat, sizeof(double));
  t_stall = calloc(repeat, sizeof(double));
  t_restore = calloc(repeat, sizeof(double));
  t_read = calloc(repeat, sizeof(double));
  plain = calloc(plain_cap, sizeof(double));
  tmpl = path_join(parent, "hooked-bench-XXXXXX");
  if (!t_raw || !t_save || !t_copy || !t_split || !t_stall || !t_restore || !t_read || !plain || !tmpl) {
    fprintf(stderr, PROG ": out of memory\n");
    goto out;
  }
  if (posix_memalign((void **)&b.arena, 64, b.bytes) != 0) {
    fprintf(stderr, PROG ": out of memory for the %zu-byte state\n", b.bytes);
    goto out;
  }
  {
    /* Incompressible, non-zero data: no file system shortcut applies. Each
     * 32-bit word, an F32 of the state, has the top bit of its exponent
     * clear: finite (|x| < 2), as a training state is, since a checkpoint
     * refuses NaN and infinities and scans every float for them. */
    uint64_t x = 0x9E3779B97F4A7C15u;
    for (size_t i = 0; i + 8 <= b.bytes; i += 8) {
      uint64_t v;
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      v = x & ~(((uint64_t)1 << 30) | ((uint64_t)1 << 62));
      memcpy(b.arena + i, &v, 8);
    }
  }
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
  /* (3) and (6) share one buffer, as large as a data file can be. */
  if (ensure_copy(&b, b.bytes + ((size_t)64 << 20)) != 0) goto out;
  if (build_graph(&b) != 0 || open_sessions(&b) != 0) goto out;
  if (open_small(&b) != 0) goto out;

  /* Warm-up: every code path and buffer once (the async snapshot buffer is
   * allocated at its first save; the session's creation save is drained),
   * and the page cache holds the data file for the reads. */
  {
    double t;
    if (raw_write(&b, 0, &t) != 0 || sync_save(&b, 0, &prefix, &t) != 0) goto out;
    if (set_data_path(&data_path, &prefix_copy, prefix) != 0) goto out;
    copy_once(&b);
    copy_per_tensor(&b);
    if (async_save(&b, plain, &nplain, 0, &t) != 0) goto out;
    if (drain_async(&b, plain, &nplain, 0) != 0) goto out;
    if (raw_read(&b, data_path, &t, &file_bytes) != 0 || restore(&b, prefix_copy, &t) != 0) goto out;
    {
      unsigned long a, d;
      if (small_save(&b, 0, &t, &a, &d) != 0 ||
          raw_write_file(b.dir, b.small_raw_tmp, b.small_raw_path, b.small_arena, b.small_bytes, 0, &t) != 0)
        goto out;
    }
  }
  for (size_t r = 0; r < repeat; r++) {
    /* Alternate the order of the writes, as of the reads below. */
    if (r % 2 == 0) {
      if (raw_write(&b, 0, &t_raw[r]) != 0 || sync_save(&b, (int64_t)r + 1, &prefix, &t_save[r]) != 0) goto out;
    } else {
      if (sync_save(&b, (int64_t)r + 1, &prefix, &t_save[r]) != 0 || raw_write(&b, 0, &t_raw[r]) != 0) goto out;
    }
    if (raw_write(&b, 1, &t_raw_early[r]) != 0) goto out; /* (1e) */
    if (set_data_path(&data_path, &prefix_copy, prefix) != 0) goto out;
    t_copy[r] = copy_once(&b);
    t_split[r] = copy_per_tensor(&b);
    if (async_save(&b, plain, &nplain, plain_cap, &t_stall[r]) != 0) goto out;
    /* Its write is finished before anything else is timed. */
    if (drain_async(&b, plain, &nplain, plain_cap) != 0) goto out;
    /* Alternate the order of the reads so neither always goes first. */
    if (r % 2 == 0) {
      if (raw_read(&b, data_path, &t_read[r], &file_bytes) != 0 || restore(&b, prefix_copy, &t_restore[r]) != 0)
        goto out;
    } else {
      if (restore(&b, prefix_copy, &t_restore[r]) != 0 || raw_read(&b, data_path, &t_read[r], &file_bytes) != 0)
        goto out;
    }
    /* (6c), (5c): the same two from the disk, the file dropped from the page
     * cache before each. */
    for (int k = 0; k < 2; k++) {
      double res = drop_cache(data_path);
      if (res < 0)
        cold_known = 0;
      else if (res > cold_resident)
        cold_resident = res;
      if ((k + (int)r) % 2 == 0 ? raw_read(&b, data_path, &t_read_cold[r], &file_bytes) != 0
                                : restore(&b, prefix_copy, &t_restore_cold[r]) != 0)
        goto out;
    }
    /* (1s), (2s), alternating */
    for (size_t k = 0; k < SMALL_REPEAT; k++) {
      size_t i = r * SMALL_REPEAT + k;
      int raw_first = (int)(i % 2);
      if (raw_first && raw_write_file(b.dir, b.small_raw_tmp, b.small_raw_path, b.small_arena, b.small_bytes, 0,
                                      &t_small_raw[i]) != 0)
        goto out;
      if (small_save(&b, (int64_t)i + 1, &t_small_save[i], &small_syncs, &small_dir_syncs) != 0) goto out;
      if (!raw_first && raw_write_file(b.dir, b.small_raw_tmp, b.small_raw_path, b.small_arena, b.small_bytes, 0,
                                       &t_small_raw[i]) != 0)
        goto out;
    }
  }
  {
    /* (7), (8), (8b), against the medians of (3) and (1) so far */
    double c = median(t_copy, repeat), w = median(t_raw, repeat);
    if (run_overlap_cases(&b, c, w, 3 * repeat, ov, &ov_work, &ov_read) != 0) goto out;
  }
  {
    const double step = nplain > 0 ? median(plain, nplain) : 0;
    double raw, save, copy, split, stall, rd, rest;
    double rdc = median(t_read_cold, repeat), restc = median(t_restore_cold, repeat),
           rawe = median(t_raw_early, repeat);
    double sraw = median(t_small_raw, repeat * SMALL_REPEAT), ssave = median(t_small_save, repeat * SMALL_REPEAT);
    char label[96], ratio[64], small_label[32];
    const char *bt = HOOKED_BENCH_BUILD_TYPE;
    for (size_t r = 0; r < repeat; r++) t_stall[r] -= step;
    raw = median(t_raw, repeat), save = median(t_save, repeat), copy = median(t_copy, repeat);
    split = median(t_split, repeat);
    stall = median(t_stall, repeat), rd = median(t_read, repeat), rest = median(t_restore, repeat);
    for (size_t c = 0; c < NCLASSES; c++) human(b.class_bytes[c], sizes[c], sizeof sizes[c]);
    human(b.bytes, label, sizeof label);

    printf(
        "hooked %s checkpoint bench: %zu bytes (%s) in %zu f32 tensors (%zu x %s, %zu x %s, %zu x %s) + global_step;\n",
        hk_version(), b.bytes, label, b.ntensors, classes[0].count, sizes[0], classes[1].count, sizes[1],
        classes[2].count, sizes[2]);
    printf("data file %zu bytes; directory %s (removed at exit); median of %zu; build type %s; CRC-32C %s\n",
           file_bytes, b.dir, repeat, *bt ? bt : "(none: unoptimized)", hk_crc32c_implementation());
    printf("\n%-44s %9s %8s  %s\n", "case", "seconds", "GB/s", "ratio");
    row("(1) raw write+fsync+rename+fsync dir (POSIX)", raw, b.bytes, "reference for (2)");
    snprintf(ratio, sizeof ratio, "%.2fx the speed of (1), %.2fx of (1e)", raw / save, rawe / save);
    row("(2) hooked sync save (hk_saver_save)", save, b.bytes, ratio);
    row("(1e) (1), each 8 MiB handed to the disk", rawe, b.bytes, "at once, as hooked's POSIX fs does");
    row("(3) memcpy into a pre-faulted buffer", copy, b.bytes, "reference for (4)");
    snprintf(ratio, sizeof ratio, "%.2fx the time of (3)", stall / copy);
    row("(4) async hook: training-thread stall", stall, b.bytes, ratio);
    snprintf(ratio, sizeof ratio, "%.2fx the time of (3); (4) is %.2fx this", split / copy, stall / split);
    row("    memcpy per tensor (snapshot layout)", split, b.bytes, ratio);
    row("(6) raw read, warm cache (POSIX)", rd, file_bytes, "reference for (5)");
    snprintf(ratio, sizeof ratio, "%.2fx the speed of (6)", rd / rest);
    row("(5) hooked restore (hk_saver_restore)", rest, b.bytes, ratio);
    row("(6c) raw read, cold cache (POSIX)", rdc, file_bytes, "reference for (5c)");
    snprintf(ratio, sizeof ratio, "%.2fx the speed of (6c)", rdc / restc);
    row("(5c) hooked restore, cold cache", restc, b.bytes, ratio);
    human(b.small_bytes, small_label, sizeof small_label);
    snprintf(label, sizeof label, "(1s) as (1), a %s state", small_label);
    row(label, sraw, b.small_bytes, "reference for (2s)");
    snprintf(label, sizeof label, "(2s) as (2), a %s state", small_label);
    snprintf(ratio, sizeof ratio, "%.2fx the speed of (1s)", sraw / ssave);
    row(label, ssave, b.small_bytes, ratio);
    snprintf(ratio, sizeof ratio, "%.3fx the time of (3)", ov[0].stall / copy);
    row("(7) copy-before-write, embedded executor", ov[0].stall, b.bytes, ratio);
    snprintf(ratio, sizeof ratio, "%.3fx the time of (3)", ov[1].stall / copy);
    row("(8) copy-before-write, host loop", ov[1].stall, b.bytes, ratio);
    snprintf(ratio, sizeof ratio, "%.3fx the time of (3)", ov[2].stall / copy);
    row("(8b) host loop without updates_begin", ov[2].stall, b.bytes, ratio);
    printf(
        "\n(4) is the snapshot step's hk_session_run minus the median of %zu steps that took no snapshot\n"
        "(%.2f us); every save it measures started with the previous write finished (no deferral).\n"
        "Reads are warm-cache for both (5) and (6): the file is read once before timing.\n",
        nplain, step * 1e6);
    if (cold_known)
      printf(
          "(5c), (6c): the data file dropped from the page cache before each (posix_fadvise DONTNEED; at most\n"
          "%.1f%% of its pages were still cached, mincore).\n",
          100 * cold_resident);
    else
      printf(
          "(5c), (6c): the data file dropped from the page cache before each (posix_fadvise DONTNEED), which\n"
          "could not be checked here: they may be warm reads.\n");
    printf("(1s), (2s): a model of %zu f32 tensors, %zu bytes, and the global step; median of %zu saves.\n",
           nsmall_tensors, b.small_bytes, repeat * SMALL_REPEAT);
    printf(
        "fsyncs of one save, counted through a counting hk_fs: (2) %lu of files + %lu of directories, (2s) %lu + "
        "%lu\n(the data file, its directory, the state file, its directory); (1) and (1s) 1 + 1.\n",
        b.save_syncs, b.save_dir_syncs, small_syncs, small_dir_syncs);
    printf(
        "(7), (8), (8b): a step reads every variable (%d multiply-adds per element, %.4f s alone: %.2fx (3),\n"
        "%.1f GB/s), then rewrites every variable. The stall is the training thread's time outside the program's\n"
        "own work (in hooked: taking the snapshot, copying a variable or waiting for its copy) in the snapshot\n"
        "step and the next one, over the plain steps just before (medians of %zu saves; the writer's file I/O\n"
        "is held until the next step is timed). The program's own work in the next step is reported apart: it\n"
        "shares the memory and the cores with the writer's copy.\n",
        ov_work, ov_read, ov_read / copy, (double)b.bytes / ov_read / 1e9, 3 * repeat);
    for (int v = 0; v < 3; v++) {
      char copied[64] = "all, at the step boundary";
      if (ov[v].copied_here >= 0) snprintf(copied, sizeof copied, "%.1f of %zu", ov[v].copied_here, b.ntensors + 1);
      printf(
          "  %-5s stall: snapshot step %+.4f s, next step %+.4f s; the program's work in the next step %+.4f s;\n"
          "        whole steps %+.4f s (plain step %.4f s); tensors the training thread copied per save: %s\n",
          v == 0   ? "(7)"
          : v == 1 ? "(8)"
                   : "(8b)",
          ov[v].snap, ov[v].next, ov[v].contention, ov[v].whole, ov[v].plain, copied);
    }
    printf("\ngoals:\n");
    goal("sync save vs raw write+fsync (speed)", raw / save, GOAL_SAVE, 1);
    goal("async stall vs memcpy (time)", stall / copy, GOAL_STALL, 0);
    goal("restore vs raw read, warm cache (speed)", rd / rest, GOAL_RESTORE, 1);
    if (cold_known && cold_resident <= COLD_MAX_RESIDENT)
      goal("restore vs raw read, cold cache (speed)", rdc / restc, GOAL_RESTORE_COLD, 1);
    else
      printf("  %-46s not measured: the page cache could not be dropped\n", "restore vs raw read, cold cache (speed)");
    printf("  %-46s %5.2fx (no goal: (2s) makes two fsync pairs, (1s) one)\n", "small save vs raw write+fsync (speed)",
           sraw / ssave);
    goal("copy-before-write stall vs memcpy, graph (time)", ov[0].stall / copy, GOAL_OVERLAP, 0);
    goal("copy-before-write stall vs memcpy, loop (time)", ov[1].stall / copy, GOAL_OVERLAP, 0);
    fflush(stdout);
  }
  status = 0;
out:
  close_small(&b);
  close_all(&b);
  if (b.dir != NULL) remove_tree(b.dir);
  free(b.sync_dir), free(b.async_dir), free(b.raw_path), free(b.raw_tmp);
  free(tmpl);
  free(b.arena), free(b.copy);
  free(t_raw), free(t_save), free(t_copy), free(t_split), free(t_stall), free(t_restore), free(t_read), free(plain);
  free(data_path), free(prefix_copy);
  free(t_read_cold), free(t_restore_cold), free(t_small_raw), free(t_small_save), free(t_raw_early);
  return status;
}
