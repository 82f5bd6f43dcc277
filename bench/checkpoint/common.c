/*
 * The checkpoint benchmark's helpers, the file system hooked uses here
 * (POSIX, its fsyncs counted), and the state: the graph of many variables
 * and the sessions and Savers over it.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "bench.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define ASYNC_SAVE_STEPS 100000 /* room for every step run while a write finishes */

/* ---- helpers --------------------------------------------------------------- */

double now_secs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void sleep_secs(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

int hk_fail(const char *what, const hk_status *st) {
  fprintf(stderr, PROG ": %s: %s: %s\n", what, hk_code_name(st->code), st->message);
  return 1;
}

int os_fail(const char *what, const char *path) {
  fprintf(stderr, PROG ": %s %s: %s\n", what, path, strerror(errno));
  return 1;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double median(double *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

spread spread_of(const double *v, size_t n) {
  spread s = {0, 0, 0};
  double *c = n > 0 ? malloc(n * sizeof *c) : NULL;
  if (c == NULL) return s;
  memcpy(c, v, n * sizeof *c);
  qsort(c, n, sizeof *c, cmp_double);
  s.min = c[0];
  s.max = c[n - 1];
  s.med = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
  free(c);
  return s;
}

/* Incompressible, non-zero data: no file system shortcut applies. Each
 * 32-bit word, an F32 of the state, has the top bit of its exponent clear:
 * finite (|x| < 2), as a training state is, since a checkpoint refuses NaN
 * and infinities and scans every float for them. */
void fill_state(unsigned char *p, size_t n) {
  uint64_t x = 0x9E3779B97F4A7C15u;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v;
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    v = x & ~(((uint64_t)1 << 30) | ((uint64_t)1 << 62));
    memcpy(p + i, &v, 8);
  }
  for (; i < n; i++) p[i] = 0x11;
}

/* The first line of `path` starting with `key`, its value after ": ". */
static int file_field(const char *path, const char *key, char *out, size_t cap) {
  FILE *f = fopen(path, "r");
  char line[512];
  int found = 0;
  if (f == NULL) return 0;
  while (!found && fgets(line, sizeof line, f) != NULL) {
    char *colon = strchr(line, ':');
    if (strncmp(line, key, strlen(key)) != 0 || colon == NULL) continue;
    colon++;
    while (*colon == ' ' || *colon == '\t') colon++;
    colon[strcspn(colon, "\n")] = '\0';
    snprintf(out, cap, "%s", colon);
    found = 1;
  }
  fclose(f);
  return found;
}

/* The file system holding `dir`: the mount point in /proc/self/mountinfo
 * that is the longest prefix of its real path. */
static void file_system_of(const char *dir, char *out, size_t cap) {
  char real[4096], line[4096], best_mount[1024] = "";
  FILE *f;
  size_t best = 0;
  snprintf(out, cap, "unknown");
  if (realpath(dir, real) == NULL || (f = fopen("/proc/self/mountinfo", "r")) == NULL) return;
  while (fgets(line, sizeof line, f) != NULL) {
    char mount[1024], fstype[64], source[512];
    const char *dash = strstr(line, " - ");
    size_t n;
    if (dash == NULL || sscanf(line, "%*s %*s %*s %*s %1023s", mount) != 1 ||
        sscanf(dash + 3, "%63s %511s", fstype, source) != 2)
      continue;
    n = strlen(mount);
    if (strncmp(real, mount, n) != 0 || (real[n] != '/' && real[n] != '\0' && strcmp(mount, "/") != 0)) continue;
    if (n >= best) {
      best = n;
      snprintf(best_mount, sizeof best_mount, "%s", mount);
      snprintf(out, cap, "%s on %s", fstype, source);
    }
  }
  fclose(f);
  if (best_mount[0] != '\0') {
    size_t used = strlen(out);
    snprintf(out + used, cap - used, " (mounted at %s)", best_mount);
  }
}

void print_machine(const char *dir) {
  char cpu[256] = "unknown", fs[1200], load[128] = "unknown";
  struct utsname u;
  FILE *f;
  if (!file_field("/proc/cpuinfo", "model name", cpu, sizeof cpu))
    file_field("/proc/cpuinfo", "CPU part", cpu, sizeof cpu);
  file_system_of(dir, fs, sizeof fs);
  if ((f = fopen("/proc/loadavg", "r")) != NULL) {
    if (fgets(load, sizeof load, f) != NULL) load[strcspn(load, "\n")] = '\0';
    fclose(f);
  }
  printf("machine: %s, %ld cores online; ", cpu, sysconf(_SC_NPROCESSORS_ONLN));
  if (uname(&u) == 0)
    printf("%s %s %s\n", u.sysname, u.release, u.machine);
  else
    printf("kernel unknown\n");
  printf("bench directory's file system: %s; load average at start: %s; CRC-32C: %s\n", fs, load,
         hk_crc32c_implementation());
}

char *path_join(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  if (p != NULL) snprintf(p, n, "%s/%s", dir, name);
  return p;
}

/* Remove the files of `dir` (one level: what the bench and hooked create)
 * and the directory. */
void remove_tree(const char *dir) {
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

int fsync_dir(const char *dir) {
  int fd = open(dir, O_RDONLY);
  int rc;
  if (fd < 0) return os_fail("opening directory", dir);
  rc = fsync(fd);
  close(fd);
  if (rc != 0) return os_fail("fsync of directory", dir);
  return 0;
}

/* ---- the file system hooked uses here: POSIX, its fsyncs counted ------------------ */

static hk_code cf_open_read(void *u, const char *path, hk_fs_file **out, hk_status *st) {
  (void)u;
  return hk_fs_posix()->open_read(NULL, path, out, st);
}
static hk_code cf_create_excl(void *u, const char *path, hk_fs_file **out, hk_status *st) {
  (void)u;
  return hk_fs_posix()->create_excl(NULL, path, out, st);
}
static hk_code cf_read_at(void *u, hk_fs_file *f, void *buf, size_t len, uint64_t off, size_t *n, hk_status *st) {
  (void)u;
  return hk_fs_posix()->read_at(NULL, f, buf, len, off, n, st);
}
static hk_code cf_write(void *u, hk_fs_file *f, const void *buf, size_t len, size_t *n, hk_status *st) {
  (void)u;
  return hk_fs_posix()->write(NULL, f, buf, len, n, st);
}
static hk_code cf_write_at(void *u, hk_fs_file *f, const void *buf, size_t len, uint64_t off, size_t *n,
                           hk_status *st) {
  (void)u;
  return hk_fs_posix()->write_at(NULL, f, buf, len, off, n, st);
}
static hk_code cf_write_at_v(void *u, hk_fs_file *f, const hk_fs_piece *pieces, size_t n, uint64_t off, size_t *w,
                             hk_status *st) {
  (void)u;
  return hk_fs_posix()->write_at_v(NULL, f, pieces, n, off, w, st);
}
static hk_code cf_size(void *u, hk_fs_file *f, uint64_t *size, hk_status *st) {
  (void)u;
  return hk_fs_posix()->size(NULL, f, size, st);
}
static hk_code cf_sync(void *u, hk_fs_file *f, hk_status *st) {
  atomic_fetch_add(&((fs_counts *)u)->syncs, 1);
  return hk_fs_posix()->sync(NULL, f, st);
}
static hk_code cf_close(void *u, hk_fs_file *f, hk_status *st) {
  (void)u;
  return hk_fs_posix()->close(NULL, f, st);
}
static hk_code cf_sync_dir(void *u, const char *path, hk_status *st) {
  atomic_fetch_add(&((fs_counts *)u)->dir_syncs, 1);
  return hk_fs_posix()->sync_dir(NULL, path, st);
}
static hk_code cf_rename(void *u, const char *from, const char *to, hk_status *st) {
  (void)u;
  return hk_fs_posix()->rename(NULL, from, to, st);
}
static hk_code cf_unlink(void *u, const char *path, hk_status *st) {
  (void)u;
  return hk_fs_posix()->unlink(NULL, path, st);
}
static hk_code cf_stat(void *u, const char *path, hk_fs_stat *out, hk_status *st) {
  (void)u;
  return hk_fs_posix()->stat(NULL, path, out, st);
}
static hk_code cf_list(void *u, const char *path, hk_fs_list_fn fn, void *fn_user, hk_status *st) {
  (void)u;
  return hk_fs_posix()->list(NULL, path, fn, fn_user, st);
}
static hk_code cf_mkdir(void *u, const char *path, hk_status *st) {
  (void)u;
  return hk_fs_posix()->mkdir(NULL, path, st);
}
static hk_code cf_map(void *u, hk_fs_file *f, uint64_t off, size_t len, const void **addr, void **token,
                      hk_status *st) {
  (void)u;
  return hk_fs_posix()->map(NULL, f, off, len, addr, token, st);
}
static hk_code cf_unmap(void *u, void *token, hk_status *st) {
  (void)u;
  return hk_fs_posix()->unmap(NULL, token, st);
}

const hk_fs_vtable counting_fs = {
    .version = HK_FS_VTABLE_VERSION,
    .open_read = cf_open_read,
    .create_excl = cf_create_excl,
    .read_at = cf_read_at,
    .write = cf_write,
    .size = cf_size,
    .sync = cf_sync,
    .close = cf_close,
    .sync_dir = cf_sync_dir,
    .rename = cf_rename,
    .unlink = cf_unlink,
    .stat = cf_stat,
    .list = cf_list,
    .mkdir = cf_mkdir,
    .map = cf_map,
    .unmap = cf_unmap,
    .write_at = cf_write_at,
    .write_at_v = cf_write_at_v,
};

/* ---- the state --------------------------------------------------------------- */

/* A few large, many medium, many small: 60% / 30% / 10% of the bytes. */
const tensor_class classes[NCLASSES] = {
    {"large", 4, 0.60},
    {"medium", 64, 0.30},
    {"small", 512, 0.10},
};

int build_graph(bench *b) {
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
int open_sessions(bench *b) {
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
      hk_executor_global_step(NULL, &gs_index, hk_graph_executor(b->g), &st) != HK_OK ||
      hk_raw_session_assign_variable(b->rs, gs_index, &zero_t, &st) != HK_OK)
    return hk_fail("opening the raw session", &st);
  return 0;
}
