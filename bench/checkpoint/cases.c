/*
 * The checkpoint benchmark's cases (1)-(6) and (1e): raw writes and reads,
 * hooked's saves and restores, memcpy, the asynchronous hook's stall; the
 * cold reads (5c), (6c); and the small model's (1s), (2s).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK ((size_t)8 << 20)
#define WAIT_SLICE_SECS 0.002

/* ---- cases --------------------------------------------------------------------- */

/* Write n bytes to `final` with plain POSIX calls, as durably as a
 * checkpoint: a temporary file, written, fsynced, closed, renamed, then the
 * directory fsynced. */
int raw_write_file(const char *dir, const char *tmp, const char *final, const unsigned char *data, size_t n, int early,
                   double *secs) {
  double t0;
  /* The hooked save writes a new file each time (a new step, retention
   * deletes nothing inside the timed window); replacing the previous raw
   * file would make the reference also free its blocks. */
  if (unlink(final) != 0 && errno != ENOENT) return os_fail("removing", final);
  if (fsync_dir(dir) != 0) return 1;
  t0 = now_secs();
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
  size_t done = 0;
  if (fd < 0) return os_fail("creating", tmp);
  while (done < n) {
    size_t k = n - done < CHUNK ? n - done : CHUNK;
    ssize_t w = write(fd, data + done, k);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      close(fd);
      return os_fail("writing", tmp);
    }
#if defined(__linux__) && defined(SYNC_FILE_RANGE_WRITE)
    /* (1e): each chunk handed to the disk at once, as hooked's POSIX
     * write_at does (CHUNK is its 8 MiB window). */
    if (early) (void)sync_file_range(fd, (off_t)done, (off_t)w, SYNC_FILE_RANGE_WRITE);
#endif
    done += (size_t)w;
  }
  if (fsync(fd) != 0) {
    close(fd);
    return os_fail("fsync of", tmp);
  }
  if (close(fd) != 0) return os_fail("closing", tmp);
  if (rename(tmp, final) != 0) return os_fail("renaming", tmp);
  if (fsync_dir(dir) != 0) return 1;
  *secs = now_secs() - t0;
  return 0;
}

int raw_write(bench *b, int early, double *secs) {
  return raw_write_file(b->dir, b->raw_tmp, b->raw_path, b->arena, b->bytes, early, secs);
}

int sync_save(bench *b, int64_t step, const char **prefix, double *secs) {
  hk_status st = HK_STATUS_INIT;
  char *path = path_join(b->sync_dir, "model.ckpt");
  double t0;
  hk_code rc;
  if (path == NULL) return os_fail("allocating", "a path");
  {
    size_t n = 0;
    const char *const *kept = hk_saver_checkpoints(b->sync_saver, &n);
    for (size_t i = 0; i < n; i++)
      if (hk_checkpoint_exists(&b->env, kept[i]) && hk_checkpoint_remove(&b->env, kept[i], &st) != HK_OK) {
        free(path);
        return hk_fail("removing the previous checkpoint", &st);
      }
    if (fsync_dir(b->sync_dir) != 0) {
      free(path);
      return 1;
    }
  }
  atomic_store(&b->counts.syncs, 0);
  atomic_store(&b->counts.dir_syncs, 0);
  t0 = now_secs();
  rc = hk_saver_save(prefix, b->sync_saver, b->rs, path, step, HK_SAVE_DEFAULT, &st);
  *secs = now_secs() - t0;
  b->save_syncs = atomic_load(&b->counts.syncs);
  b->save_dir_syncs = atomic_load(&b->counts.dir_syncs);
  free(path);
  return rc != HK_OK ? hk_fail("hk_saver_save", &st) : 0;
}

int ensure_copy(bench *b, size_t n) {
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

double copy_once(bench *b) {
  double t0 = now_secs();
  memcpy(b->copy, b->arena, b->bytes);
  return now_secs() - t0;
}

/* (3) again, one memcpy per tensor into 64-byte-aligned slots, as a
 * snapshot lays them out: not a goal's reference, but it tells how much of
 * (4) is the split into many copies (small ones cannot use the streaming
 * stores a single large memcpy gets). */
double copy_per_tensor(bench *b) {
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
int drain_async(bench *b, double *plain, size_t *nplain, size_t cap) {
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
int async_save(bench *b, double *plain, size_t *nplain, size_t cap, double *stall) {
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

int restore(bench *b, const char *prefix, double *secs) {
  hk_status st = HK_STATUS_INIT;
  double t0 = now_secs();
  hk_code rc = hk_saver_restore(b->sync_saver, b->rs, prefix, &st);
  *secs = now_secs() - t0;
  return rc != HK_OK ? hk_fail("hk_saver_restore", &st) : 0;
}

int raw_read(bench *b, const char *path, double *secs, size_t *file_bytes) {
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

/* ---- cold reads ------------------------------------------------------------------ */

/* Drop `path` from the page cache (posix_fadvise DONTNEED: no root needed;
 * the file is clean, hooked fsynced it) and return the fraction of its
 * pages still cached (mincore), or -1 when that cannot be told. */
double drop_cache(const char *path) {
  int fd = open(path, O_RDONLY);
  double resident = -1;
  struct stat sb;
  if (fd < 0) return -1;
  if (posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0 || fstat(fd, &sb) != 0 || sb.st_size <= 0) {
    close(fd);
    return -1;
  }
#if defined(__linux__)
  {
    long page = sysconf(_SC_PAGESIZE);
    size_t len = (size_t)sb.st_size, pages = page > 0 ? (len + (size_t)page - 1) / (size_t)page : 0;
    unsigned char *vec = pages > 0 ? malloc(pages) : NULL;
    void *m = vec != NULL ? mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (m != MAP_FAILED) {
      if (mincore(m, len, vec) == 0) {
        size_t in = 0;
        for (size_t i = 0; i < pages; i++) in += vec[i] & 1;
        resident = (double)in / (double)pages;
      }
      munmap(m, len);
    }
    free(vec);
  }
#endif
  close(fd);
  return resident;
}

/* ---- (1s), (2s): a small model ----------------------------------------------------- */

/* A few tensors, 11 KiB in all, and the global step: a model whose save is
 * all fixed costs (file creation, renames, fsyncs). */
static const struct {
  const char *name;
  size_t floats;
} small_tensors[] = {{"embedding", 2048}, {"dense/kernel", 512}, {"dense/bias", 128}, {"norm/scale", 128}};
#define NSMALL (sizeof small_tensors / sizeof small_tensors[0])
const size_t nsmall_tensors = NSMALL;

int open_small(bench *b) {
  hk_graph_options gopts = HK_GRAPH_OPTIONS_INIT;
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_handle h, gs;
  int64_t zero = 0;
  hk_tensor zero_t = hk_tensor_scalar_i64(&zero);
  size_t used = 0, gs_index;

  b->small_bytes = 0;
  for (size_t k = 0; k < NSMALL; k++) b->small_bytes += small_tensors[k].floats * 4;
  b->small_arena = malloc(b->small_bytes);
  b->small_dir = path_join(b->dir, "small");
  b->small_raw_path = path_join(b->dir, "small-raw.bin");
  b->small_raw_tmp = path_join(b->dir, "small-raw.bin.tmp");
  if (!b->small_arena || !b->small_dir || !b->small_raw_path || !b->small_raw_tmp) {
    fprintf(stderr, PROG ": out of memory\n");
    return 1;
  }
  memcpy(b->small_arena, b->arena, b->small_bytes < b->bytes ? b->small_bytes : b->bytes);
  if (mkdir(b->small_dir, 0755) != 0) return os_fail("creating", b->small_dir);
  gopts.env = &b->env;
  if (hk_graph_new(&b->small_g, &gopts, &st) != HK_OK) return hk_fail("creating the small graph", &st);
  for (size_t k = 0; k < NSMALL; k++) {
    hk_variable_def def = HK_VARIABLE_DEF_INIT;
    int64_t dims[1];
    dims[0] = (int64_t)small_tensors[k].floats;
    def.name = small_tensors[k].name;
    def.dtype = HK_DTYPE_F32;
    def.rank = 1;
    def.dims = dims;
    def.external_data = b->small_arena + used;
    if (hk_graph_variable(b->small_g, &h, &def, &st) != HK_OK) return hk_fail(def.name, &st);
    used += small_tensors[k].floats * 4;
  }
  if (hk_graph_create_global_step(b->small_g, &gs, &st) != HK_OK ||
      hk_raw_session_open(&b->small_rs, hk_graph_executor(b->small_g), &st) != HK_OK ||
      hk_executor_global_step(NULL, &gs_index, hk_graph_executor(b->small_g), &st) != HK_OK ||
      hk_raw_session_assign_variable(b->small_rs, gs_index, &zero_t, &st) != HK_OK)
    return hk_fail("opening the small model", &st);
  so.env = &b->env;
  so.executor = hk_graph_executor(b->small_g);
  so.max_to_keep = 0; /* as (2): the previous file is removed before the clock starts */
  if (hk_saver_new(&b->small_saver, &so, &st) != HK_OK) return hk_fail("creating the small saver", &st);
  return 0;
}

void close_small(bench *b) {
  hk_saver_free(b->small_saver);
  hk_raw_session_free(b->small_rs);
  hk_graph_free(b->small_g);
  free(b->small_arena), free(b->small_dir), free(b->small_raw_path), free(b->small_raw_tmp);
}

int small_save(bench *b, int64_t step, double *secs, unsigned long *syncs, unsigned long *dir_syncs) {
  hk_status st = HK_STATUS_INIT;
  char *path = path_join(b->small_dir, "model.ckpt");
  size_t n = 0;
  const char *const *kept = hk_saver_checkpoints(b->small_saver, &n);
  double t0;
  hk_code rc;
  if (path == NULL) return os_fail("allocating", "a path");
  for (size_t i = 0; i < n; i++)
    if (hk_checkpoint_exists(&b->env, kept[i]) && hk_checkpoint_remove(&b->env, kept[i], &st) != HK_OK) {
      free(path);
      return hk_fail("removing the previous small checkpoint", &st);
    }
  if (fsync_dir(b->small_dir) != 0) {
    free(path);
    return 1;
  }
  atomic_store(&b->counts.syncs, 0);
  atomic_store(&b->counts.dir_syncs, 0);
  t0 = now_secs();
  rc = hk_saver_save(NULL, b->small_saver, b->small_rs, path, step, HK_SAVE_DEFAULT, &st);
  *secs = now_secs() - t0;
  *syncs = atomic_load(&b->counts.syncs);
  *dir_syncs = atomic_load(&b->counts.dir_syncs);
  free(path);
  return rc != HK_OK ? hk_fail("hk_saver_save (small)", &st) : 0;
}

/* Keep the prefix the Saver lends until its next call, and its data file. */
int set_data_path(char **data_path, char **prefix_copy, const char *prefix) {
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
