/*
 * mem_fs — the fuzz targets' in-memory, read-only hk_fs (hooked/sys/fs.h).
 * It serves one file, the fuzzer's input, under one path; every other path
 * is NOT_FOUND, and everything that would write, list or remove is
 * PERMISSION_DENIED naming the path (what is fuzzed must never try). map and
 * unmap are not offered (NULL), so readers take their read path, which is
 * what gets fuzzed.
 *
 *   mem_fs m = {FUZZ_PATH, data, size};
 *   env.fs = mem_fs_vtable();
 *   env.fs_user = &m;
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_FUZZ_MEM_FS_H
#define HOOKED_FUZZ_MEM_FS_H

#include <hooked/hooked.h>
#include <hooked/sys/fs.h>

#include <stddef.h>
#include <stdint.h>

typedef struct mem_fs {
  const char *path;    /* the one file's path, as the library will ask for it */
  const uint8_t *data; /* its bytes (borrowed) */
  size_t size;
} mem_fs;

/** The vtable to put in hk_env.fs, with a mem_fs as hk_env.fs_user. */
const hk_fs_vtable *mem_fs_vtable(void);

#endif
