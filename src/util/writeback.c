/*
 * Early writeback for the POSIX file system's positional writes: a large
 * file written front to back (a checkpoint's data) has each completed 8 MiB
 * window handed to the disk at once, so the disk works while the rest is
 * still being written and the fsync that follows has little left to do.
 * Only a start: durability still comes from that fsync. Linux's
 * sync_file_range(SYNC_FILE_RANGE_WRITE); elsewhere nothing. In a file of
 * its own because it needs _GNU_SOURCE, which fs.c must not define (it
 * would give it the GNU strerror_r).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE 1
#endif
#include "util/fs.h"

#include <fcntl.h>

#define WINDOW ((uint64_t)8 << 20)

void hk__start_writeback(int fd, uint64_t offset, size_t len) {
#if defined(__linux__) && defined(SYNC_FILE_RANGE_WRITE)
  /* The windows this write completed: [start, end), whole windows only. */
  uint64_t start = offset / WINDOW * WINDOW, end = (offset + len) / WINDOW * WINDOW;
  if (end > start && end <= (uint64_t)INT64_MAX)
    (void)sync_file_range(fd, (off64_t)start, (off64_t)(end - start), SYNC_FILE_RANGE_WRITE);
#else
  (void)fd;
  (void)offset;
  (void)len;
#endif
}
