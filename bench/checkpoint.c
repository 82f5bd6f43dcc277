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
 *       retention of the previous checkpoint);
 *   (3) memcpy of the same bytes into a preallocated, pre-faulted buffer;
 *   (4) the training thread's stall per save with the asynchronous hook
 *       (AsyncCheckpointSaverHook in a session): hk_session_run() of the
 *       step that takes the snapshot minus the median step that does not,
 *       with the previous write finished first (a listener's after_save
 *       says so), so it measures the copy and never a deferral;
 *   (5) restore, hk_saver_restore(), of the file (2) wrote, against
 *   (6) a raw read of that same file (open, read in 8 MiB chunks into a
 *       pre-faulted buffer, close).
 * Reads are warm-cache for both (5) and (6): dropping the page cache needs
 * root, so the file is read once before timing and the two alternate.
 *
 * Goals (issue 3): sync save >= 0.9x raw write+fsync; async stall <= 1.25x
 * memcpy; restore >= 0.8x raw read. They are reported, not enforced: disk
 * and memory speeds depend on the machine and its load.
 * Exit status: 0 when every case ran, 1 on error, 2 for a usage error.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#if !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* clock_gettime, mkdtemp, fsync, posix_memalign */
#endif

#include <hooked/hooked.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef HOOKED_BENCH_BUILD_TYPE
#define HOOKED_BENCH_BUILD_TYPE ""
#endif

#define PROG "checkpoint"
#define CHUNK ((size_t)8 << 20)
#define MAX_REPEAT 1000
#define ASYNC_SAVE_STEPS 100000 /* room for every step run while a write finishes */
#define WAIT_SLICE_SECS 0.002

#define GOAL_SAVE 0.9
#define GOAL_STALL 1.25
#define GOAL_RESTORE 0.8

/* ---- helpers --------------------------------------------------------------- */

static double now_secs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_secs(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

static int hk_fail(const char *what, const hk_status *st) {
  fprintf(stderr, PROG ": %s: %s: %s\n", what, hk_code_name(st->code), st->message);
  return 1;
}

static int os_fail(const char *what, const char *path) {
  fprintf(stderr, PROG ": %s %s: %s\n", what, path, strerror(errno));
  return 1;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static char *path_join(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  if (p != NULL) snprintf(p, n, "%s/%s", dir, name);
  return p;
}

/* Remove the files of `dir` (one level: what the bench and hooked create)
 * and the directory. */
static void remove_tree(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  if (d != NULL) {
    while ((e = readdir(d)) != NULL) {
      char *p;
      struct stat s;
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      p = path_join(dir, e->d_name);
      if (p == NULL) continue;
      if (lstat(p, &s) == 0 && S_ISDIR(s.st_mode)) {
        remove_tree(p);
      } else {
        unlink(p);
      }
      free(p);
    }
    closedir(d);
  }
  rmdir(dir);
}

static int fsync_dir(const char *dir) {
  int fd = open(dir, O_RDONLY);
  int rc;
  if (fd < 0) return os_fail("opening directory", dir);
  rc = fsync(fd);
  close(fd);
  if (rc != 0) return os_fail("fsync of directory", dir);
  return 0;
}

/* ---- the state --------------------------------------------------------------- */

typedef struct tensor_class {
  const char *label;
  size_t count;
  double share; /* of S */
} tensor_class;

/* A few large, many medium, many small: 60% / 30% / 10% of the bytes. */
static const tensor_class classes[] = {
    {"large", 4, 0.60},
    {"medium", 64, 0.30},
    {"small", 512, 0.10},
};
#define NCLASSES (sizeof classes / sizeof classes[0])

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
} bench;

static int build_graph(bench *b) {
  hk_graph_options gopts = HK_GRAPH_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_handle one;
  int64_t one_value = 1;
  hk_tensor one_t = hk_tensor_scalar_i64(&one_value);
  size_t used = 0, k = 0;
  char name[64];

  gopts.env = &b->env;
  if (hk_graph_new(&b->g, &gopts, &st) != HK_OK) return hk_fail("creating the graph", &st);
  for (size_t c = 0; c < NCLASSES; c++) {
    for (size_t i = 0; i < classes[c].count; i++, k++) {
      hk_variable_def def = HK_VARIABLE_DEF_INIT;
      hk_handle h;
      size_t nbytes = b->class_bytes[c];
      int64_t dims[1];
      if (k == b->ntensors - 1) nbytes = b->bytes - used; /* the last one takes the rounding */
      dims[0] = (int64_t)(nbytes / 4);
      snprintf(name, sizeof name, "%s/%04zu", classes[c].label, i);
      def.name = name;
      def.dtype = HK_DTYPE_F32;
      def.rank = 1;
      def.dims = dims;
      def.external_data = b->arena + used;
      if (hk_graph_variable(b->g, &h, &def, &st) != HK_OK) return hk_fail(name, &st);
      used += nbytes;
    }
  }
  if (hk_graph_create_global_step(b->g, &b->gs, &st) != HK_OK ||
      hk_graph_constant(b->g, &one, "one", &one_t, &st) != HK_OK ||
      hk_graph_assign_add(b->g, &b->train, "train", b->gs, one, &st) != HK_OK)
    return hk_fail("building the train op", &st);
  return 0;
}

static hk_code on_before_save(void *user, hk_raw_session *session, int64_t step, hk_status *status) {
  (void)session, (void)step, (void)status;
  ((bench *)user)->before_saves++;
  return HK_OK;
}

static hk_code on_after_save(void *user, hk_raw_session *session, int64_t step, int *stop, hk_status *status) {
  (void)session, (void)step, (void)stop, (void)status;
  ((bench *)user)->after_saves++;
  return HK_OK;
}

static const hk_checkpoint_listener_vtable listener_vtable = {
    HK_CHECKPOINT_LISTENER_VTABLE_VERSION, NULL, on_before_save, on_after_save, NULL,
};

/* The asynchronous hook in a session (which finalizes the graph), then a raw
 * session for the synchronous cases. */
static int open_sessions(bench *b) {
  hk_status st = HK_STATUS_INIT;
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  hk_checkpoint_saver_options co = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
  hk_checkpoint_listener listener = {&listener_vtable, NULL, "bench"};
  hk_session_options sess = HK_SESSION_OPTIONS_INIT;
  int64_t zero = 0;
  hk_tensor zero_t = hk_tensor_scalar_i64(&zero);
  size_t gs_index;

  listener.user = b;
  so.executor = hk_graph_executor(b->g);
  so.max_to_keep = 1; /* one state-sized file per directory on disk */
  if (hk_saver_new(&b->async_saver, &so, &st) != HK_OK) return hk_fail("creating the savers", &st);
  /* The timed sync save must do the work of the raw write (a new file made
   * durable) and not, on top, retention freeing the previous 256 MiB file:
   * sync_save() removes that one before the clock starts. */
  so.max_to_keep = 0;
  if (hk_saver_new(&b->sync_saver, &so, &st) != HK_OK) return hk_fail("creating the savers", &st);

  co.env = &b->env;
  co.checkpoint_dir = b->async_dir;
  co.save_steps = ASYNC_SAVE_STEPS;
  co.saver = b->async_saver;
  co.listeners = &listener;
  co.nlisteners = 1;
  co.save_graph_def = 0;
  if (hk_async_checkpoint_saver_hook_new(&b->hook, &co, &st) != HK_OK) return hk_fail("creating the async hook", &st);

  sess.env = &b->env;
  sess.executor = hk_graph_executor(b->g);
  sess.hooks = &b->hook;
  sess.nhooks = 1;
  if (hk_session_new(&b->session, &sess, &st) != HK_OK) return hk_fail("creating the session", &st);
  if (hk_raw_session_open(&b->rs, hk_graph_executor(b->g), &st) != HK_OK ||
      hk_executor_global_step(hk_graph_executor(b->g), NULL, &gs_index, &st) != HK_OK ||
      hk_raw_session_assign_variable(b->rs, gs_index, &zero_t, &st) != HK_OK)
    return hk_fail("opening the raw session", &st);
  return 0;
}

/* ---- cases --------------------------------------------------------------------- */

static int raw_write(bench *b, double *secs) {
  double t0;
  /* The hooked save writes a new file each time (a new step, retention
   * deletes nothing inside the timed window); replacing the previous raw
   * file would make the reference also free 256 MiB of blocks. */
  if (unlink(b->raw_path) != 0 && errno != ENOENT) return os_fail("removing", b->raw_path);
  if (fsync_dir(b->dir) != 0) return 1;
  t0 = now_secs();
  int fd = open(b->raw_tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
  size_t done = 0;
  if (fd < 0) return os_fail("creating", b->raw_tmp);
  while (done < b->bytes) {
    size_t n = b->bytes - done < CHUNK ? b->bytes - done : CHUNK;
    ssize_t w = write(fd, b->arena + done, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      close(fd);
      return os_fail("writing", b->raw_tmp);
    }
    done += (size_t)w;
  }
  if (fsync(fd) != 0) {
    close(fd);
    return os_fail("fsync of", b->raw_tmp);
  }
  if (close(fd) != 0) return os_fail("closing", b->raw_tmp);
  if (rename(b->raw_tmp, b->raw_path) != 0) return os_fail("renaming", b->raw_tmp);
  if (fsync_dir(b->dir) != 0) return 1;
  *secs = now_secs() - t0;
  return 0;
}

static int sync_save(bench *b, int64_t step, const char **prefix, double *secs) {
  hk_status st = HK_STATUS_INIT;
  char *path = path_join(b->sync_dir, "model.ckpt");
  double t0;
  hk_code rc;
  if (path == NULL) return os_fail("allocating", "a path");
  {
    size_t n = 0;
    const char *const *kept = hk_saver_checkpoints(b->sync_saver, &n);
    for (size_t i = 0; i < n; i++)
      if (hk_checkpoint_exists(&b->env, kept[i]) && hk_remove_checkpoint(&b->env, kept[i], &st) != HK_OK) {
        free(path);
        return hk_fail("removing the previous checkpoint", &st);
      }
    if (fsync_dir(b->sync_dir) != 0) {
      free(path);
      return 1;
    }
  }
  t0 = now_secs();
  rc = hk_saver_save(b->sync_saver, b->rs, path, step, HK_SAVE_DEFAULT, prefix, &st);
  *secs = now_secs() - t0;
  free(path);
  return rc != HK_OK ? hk_fail("hk_saver_save", &st) : 0;
}

static int ensure_copy(bench *b, size_t n) {
  if (b->copy_cap >= n) return 0;
  free(b->copy);
  b->copy = NULL;
  if (posix_memalign((void **)&b->copy, 64, n) != 0) {
    fprintf(stderr, PROG ": out of memory for a %zu-byte buffer\n", n);
    return 1;
  }
  memset(b->copy, 1, n); /* fault every page in before timing */
  b->copy_cap = n;
  return 0;
}

static double copy_once(bench *b) {
  double t0 = now_secs();
  memcpy(b->copy, b->arena, b->bytes);
  return now_secs() - t0;
}

/* (3) again, one memcpy per tensor into 64-byte-aligned slots, as a
 * snapshot lays them out: not a goal's reference, but it tells how much of
 * (4) is the split into many copies (small ones cannot use the streaming
 * stores a single large memcpy gets). */
static double copy_per_tensor(bench *b) {
  size_t src = 0, dst = 0, k = 0;
  double t0 = now_secs();
  for (size_t c = 0; c < NCLASSES; c++) {
    for (size_t i = 0; i < classes[c].count; i++, k++) {
      size_t n = k == b->ntensors - 1 ? b->bytes - src : b->class_bytes[c];
      memcpy(b->copy + dst, b->arena + src, n);
      src += n;
      dst += (n + 63) / 64 * 64;
    }
  }
  return now_secs() - t0;
}

static int run_step(bench *b, double *secs) {
  hk_status st = HK_STATUS_INIT;
  hk_run_args args = {NULL, 0, NULL, 0, &b->train, 1, NULL};
  double t0 = now_secs();
  if (hk_session_run(b->session, &args, NULL, NULL, &st) != HK_OK) return hk_fail("hk_session_run", &st);
  *secs = now_secs() - t0;
  return 0;
}

/* Run steps until the writer's completion has been processed (after_save),
 * keeping the times of the steps that neither snapshot nor complete. */
static int drain_async(bench *b, double *plain, size_t *nplain, size_t cap) {
  uint64_t want = b->before_saves;
  while (b->after_saves < want) {
    uint64_t a0 = b->after_saves, s0 = b->before_saves;
    double t;
    sleep_secs(WAIT_SLICE_SECS);
    if (run_step(b, &t) != 0) return 1;
    if (b->before_saves != s0) {
      fprintf(stderr, PROG ": the async hook saved again before its write was processed; raise ASYNC_SAVE_STEPS\n");
      return 1;
    }
    if (b->after_saves == a0 && *nplain < cap) plain[(*nplain)++] = t;
  }
  return 0;
}

/* One snapshot step of the async hook: steps at full speed up to the one
 * whose after_run triggers, which is returned in *stall (its time). */
static int async_save(bench *b, double *plain, size_t *nplain, size_t cap, double *stall) {
  uint64_t s0 = b->before_saves;
  if (drain_async(b, plain, nplain, cap) != 0) return 1;
  for (;;) {
    double t;
    if (run_step(b, &t) != 0) return 1;
    if (b->before_saves != s0) {
      *stall = t;
      return 0;
    }
    if (*nplain < cap) plain[(*nplain)++] = t;
  }
}

static int restore(bench *b, const char *prefix, double *secs) {
  hk_status st = HK_STATUS_INIT;
  double t0 = now_secs();
  hk_code rc = hk_saver_restore(b->sync_saver, b->rs, prefix, &st);
  *secs = now_secs() - t0;
  return rc != HK_OK ? hk_fail("hk_saver_restore", &st) : 0;
}

static int raw_read(bench *b, const char *path, double *secs, size_t *file_bytes) {
  double t0 = now_secs();
  int fd = open(path, O_RDONLY);
  size_t done = 0;
  if (fd < 0) return os_fail("opening", path);
  for (;;) {
    ssize_t r;
    if (done == b->copy_cap) {
      close(fd);
      fprintf(stderr, PROG ": %s is larger than its %zu-byte read buffer\n", path, b->copy_cap);
      return 1;
    }
    r = read(fd, b->copy + done, b->copy_cap - done < CHUNK ? b->copy_cap - done : CHUNK);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      close(fd);
      return os_fail("reading", path);
    }
    if (r == 0) break;
    done += (size_t)r;
  }
  close(fd);
  *secs = now_secs() - t0;
  *file_bytes = done;
  return 0;
}

/* Keep the prefix the Saver lends until its next call, and its data file. */
static int set_data_path(char **data_path, char **prefix_copy, const char *prefix) {
  size_t n = strlen(prefix);
  free(*data_path);
  free(*prefix_copy);
  *data_path = malloc(n + sizeof ".safetensors");
  *prefix_copy = malloc(n + 1);
  if (*data_path == NULL || *prefix_copy == NULL) {
    fprintf(stderr, PROG ": out of memory\n");
    return 1;
  }
  memcpy(*prefix_copy, prefix, n + 1);
  memcpy(*data_path, prefix, n);
  memcpy(*data_path + n, ".safetensors", sizeof ".safetensors");
  return 0;
}

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
             " [--bytes N] [--dir DIR] [--repeat R]\n"
             "  --bytes N    state size, with an optional K, M or G suffix (binary; default 256M)\n"
             "  --dir DIR    where to write: a fresh directory is made inside it and removed at the\n"
             "               end (default $TMPDIR, else /var/tmp)\n"
             "  --repeat R   repetitions of every case; the median is reported (default 3)\n");
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
  int status = 1;

  memset(&b, 0, sizeof b);
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
    /* Incompressible, non-zero data: no file system shortcut applies. */
    uint64_t x = 0x9E3779B97F4A7C15u;
    for (size_t i = 0; i + 8 <= b.bytes; i += 8) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      memcpy(b.arena + i, &x, 8);
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

  /* Warm-up: every code path and buffer once (the async snapshot buffer is
   * allocated at its first save; the session's creation save is drained),
   * and the page cache holds the data file for the reads. */
  {
    double t;
    if (raw_write(&b, &t) != 0 || sync_save(&b, 0, &prefix, &t) != 0) goto out;
    if (set_data_path(&data_path, &prefix_copy, prefix) != 0) goto out;
    copy_once(&b);
    copy_per_tensor(&b);
    if (async_save(&b, plain, &nplain, 0, &t) != 0) goto out;
    if (raw_read(&b, data_path, &t, &file_bytes) != 0 || restore(&b, prefix_copy, &t) != 0) goto out;
  }
  for (size_t r = 0; r < repeat; r++) {
    /* Alternate the order of the writes, as of the reads below. */
    if (r % 2 == 0) {
      if (raw_write(&b, &t_raw[r]) != 0 || sync_save(&b, (int64_t)r + 1, &prefix, &t_save[r]) != 0) goto out;
    } else {
      if (sync_save(&b, (int64_t)r + 1, &prefix, &t_save[r]) != 0 || raw_write(&b, &t_raw[r]) != 0) goto out;
    }
    if (set_data_path(&data_path, &prefix_copy, prefix) != 0) goto out;
    t_copy[r] = copy_once(&b);
    t_split[r] = copy_per_tensor(&b);
    if (async_save(&b, plain, &nplain, plain_cap, &t_stall[r]) != 0) goto out;
    /* Alternate the order of the reads so neither always goes first. */
    if (r % 2 == 0) {
      if (raw_read(&b, data_path, &t_read[r], &file_bytes) != 0 || restore(&b, prefix_copy, &t_restore[r]) != 0)
        goto out;
    } else {
      if (restore(&b, prefix_copy, &t_restore[r]) != 0 || raw_read(&b, data_path, &t_read[r], &file_bytes) != 0)
        goto out;
    }
  }
  {
    const double step = nplain > 0 ? median(plain, nplain) : 0;
    double raw, save, copy, split, stall, rd, rest;
    char label[96], ratio[64];
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
    snprintf(ratio, sizeof ratio, "%.2fx the speed of (1)", raw / save);
    row("(2) hooked sync save (hk_saver_save)", save, b.bytes, ratio);
    row("(3) memcpy into a pre-faulted buffer", copy, b.bytes, "reference for (4)");
    snprintf(ratio, sizeof ratio, "%.2fx the time of (3)", stall / copy);
    row("(4) async hook: training-thread stall", stall, b.bytes, ratio);
    snprintf(ratio, sizeof ratio, "%.2fx the time of (3); (4) is %.2fx this", split / copy, stall / split);
    row("    memcpy per tensor (snapshot layout)", split, b.bytes, ratio);
    row("(6) raw read, warm cache (POSIX)", rd, file_bytes, "reference for (5)");
    snprintf(ratio, sizeof ratio, "%.2fx the speed of (6)", rd / rest);
    row("(5) hooked restore (hk_saver_restore)", rest, b.bytes, ratio);
    printf(
        "\n(4) is the snapshot step's hk_session_run minus the median of %zu steps that took no snapshot\n"
        "(%.2f us); every save it measures started with the previous write finished (no deferral).\n"
        "Reads are warm-cache for both (5) and (6): the file is read once before timing.\n",
        nplain, step * 1e6);
    printf("\ngoals:\n");
    goal("sync save vs raw write+fsync (speed)", raw / save, GOAL_SAVE, 1);
    goal("async stall vs memcpy (time)", stall / copy, GOAL_STALL, 0);
    goal("restore vs raw read (speed)", rd / rest, GOAL_RESTORE, 1);
    fflush(stdout);
  }
  status = 0;
out:
  close_all(&b);
  if (b.dir != NULL) remove_tree(b.dir);
  free(b.sync_dir), free(b.async_dir), free(b.raw_path), free(b.raw_tmp);
  free(tmpl);
  free(b.arena), free(b.copy);
  free(t_raw), free(t_save), free(t_copy), free(t_split), free(t_stall), free(t_restore), free(t_read), free(plain);
  free(data_path), free(prefix_copy);
  return status;
}
