/*
 * The checkpoint benchmark's cases: the raw references (unpaced and paced
 * writes, read(), the chunked pread restore's reads are compared with),
 * hooked's saves and restores, memcpy, the asynchronous hook's stall, and
 * dropping a file from the page cache for the cold reads.
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

#define CHUNK ((size_t)8 << 20)          /* the unpaced write's and read()'s calls */
#define PACED_PIECE ((size_t)4 << 20)    /* hooked's pwrite pieces of a checkpoint's data */
#define PACED_WINDOW ((uint64_t)8 << 20) /* hooked's POSIX fs starts the writeback of each whole 8 MiB window */
#define PREAD_CHUNK ((size_t)1 << 20)    /* restore's pread chunks */
#define WAIT_SLICE_SECS 0.002

/* ---- cases --------------------------------------------------------------------- */

/* The paced write's early writeback, as hooked's POSIX fs does after each
 * positional write: the whole 8 MiB windows [start, end) that the write
 * [offset, offset + len) completed are handed to the disk at once. */
static void start_writeback(int fd, uint64_t offset, size_t len) {
#if defined(__linux__) && defined(SYNC_FILE_RANGE_WRITE)
  uint64_t start = offset / PACED_WINDOW * PACED_WINDOW, end = (offset + len) / PACED_WINDOW * PACED_WINDOW;
  if (end > start) (void)sync_file_range(fd, (off_t)start, (off_t)(end - start), SYNC_FILE_RANGE_WRITE);
#else
  (void)fd, (void)offset, (void)len;
#endif
}

int raw_write_file(const char *dir, const char *tmp, const char *final, const unsigned char *data, size_t n,
                   write_pacing pacing, double *secs) {
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
    size_t piece = pacing == PACED ? PACED_PIECE : CHUNK;
    size_t k = n - done < piece ? n - done : piece;
    ssize_t w = pacing == PACED ? pwrite(fd, data + done, k, (off_t)done) : write(fd, data + done, k);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      close(fd);
      return os_fail("writing", tmp);
    }
    if (pacing == PACED) start_writeback(fd, done, (size_t)w);
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

int raw_write(bench *b, write_pacing pacing, double *secs) {
  return raw_write_file(b->dir, b->raw_tmp, b->raw_path, b->arena, b->bytes, pacing, secs);
}

int sync_save(bench *b, const char **prefix, double *secs) {
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
  rc = hk_saver_save(prefix, b->sync_saver, b->rs, path, b->next_step++, HK_SAVE_DEFAULT, &st);
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

int restore_with(bench *b, hk_saver *saver, hk_raw_session *rs, const char *prefix, double *secs) {
  hk_status st = HK_STATUS_INIT;
  double t0 = now_secs();
  hk_code rc = hk_saver_restore(saver, rs, prefix, &st);
  (void)b;
  *secs = now_secs() - t0;
  return rc != HK_OK ? hk_fail("hk_saver_restore", &st) : 0;
}

int restore(bench *b, const char *prefix, double *secs) { return restore_with(b, b->sync_saver, b->rs, prefix, secs); }

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

int pread_data(bench *b, const char *path, double *secs) {
  double t0 = now_secs();
  int fd = open(path, O_RDONLY);
  unsigned char len8[8];
  uint64_t header = 0, off;
  size_t done = 0;
  if (fd < 0) return os_fail("opening", path);
  if (pread(fd, len8, 8, 0) != 8) {
    close(fd);
    return os_fail("reading the header length of", path);
  }
  for (int i = 7; i >= 0; i--) header = header << 8 | len8[i];
  off = 8 + header;
  for (;;) {
    ssize_t r;
    if (done == b->copy_cap) {
      close(fd);
      fprintf(stderr, PROG ": %s is larger than its %zu-byte read buffer\n", path, b->copy_cap);
      return 1;
    }
    r = pread(fd, b->copy + done, b->copy_cap - done < PREAD_CHUNK ? b->copy_cap - done : PREAD_CHUNK,
              (off_t)(off + done));
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
