/*
 * libFuzzer target for the checkpoint reader (checkpoint-format.md
 * "Reading"): the input is served as "ckpt/model.safetensors" by an
 * in-memory, read-only hk_fs, opened with hk_checkpoint_reader_open(),
 * every entry is looked up and read, and the file is verified. Besides
 * memory errors (ASan/UBSan), it aborts when an accepted file breaks what
 * the format promises (entries in strict name order, found by name, tiling
 * the data exactly, byte sizes matching shapes) or when a refusal is not
 * DATA_LOSS / FAILED_PRECONDITION naming the file.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "mem_fs.h"

#include <hooked/hooked.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_PATH "ckpt/model.safetensors"
/* Reads of tensors larger than this are skipped (verify still covers them). */
#define FUZZ_READ_MAX ((size_t)1 << 20)

static void quiet(void *user, hk_log_level level, const char *msg) {
  (void)user;
  (void)level;
  (void)msg;
}

static void check(int ok) {
  if (!ok) abort();
}

static int is_refusal(hk_code rc, const hk_status *st) {
  return (rc == HK_DATA_LOSS || rc == HK_FAILED_PRECONDITION) && st->code == rc && strstr(st->message, FUZZ_PATH);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mem_fs m = {FUZZ_PATH, data, size};
  hk_env env = HK_ENV_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_checkpoint_reader *r = NULL;
  hk_code rc;

  env.log = quiet;
  env.fs = mem_fs_vtable();
  env.fs_user = &m;
  rc = hk_checkpoint_reader_open(&r, &env, FUZZ_PATH, &st);
  if (rc != HK_OK) {
    check(r == NULL);
    check(is_refusal(rc, &st));
    return 0;
  }
  check(strcmp(hk_checkpoint_reader_path(r), FUZZ_PATH) == 0);

  size_t n = hk_checkpoint_reader_count(r);
  uint64_t total = 0, data_start = UINT64_MAX;
  const char *prev = NULL;
  unsigned char *buf = NULL;
  for (size_t i = 0; i < n; i++) {
    hk_checkpoint_entry e;
    size_t found = SIZE_MAX;
    check(hk_checkpoint_reader_entry(&e, r, i, &st) == HK_OK);
    check(e.name != NULL && e.name[0] != '\0');
    check(prev == NULL || strcmp(prev, e.name) < 0);
    prev = e.name;
    check(hk_checkpoint_reader_find(r, e.name, &found, &st) == HK_OK && found == i);
    check(e.rank >= 0 && e.rank <= HK_MAX_RANK);
    uint64_t expect = hk_dtype_size(e.dtype);
    check(expect > 0 && e.dtype != HK_DTYPE_STRING);
    for (int32_t d = 0; d < e.rank; d++) {
      check(e.dims[d] >= 0);
      expect *= (uint64_t)e.dims[d]; /* cannot wrap: the reader checked the product */
    }
    check(expect == e.nbytes);
    check(e.offset <= size && e.nbytes <= size - e.offset);
    if (e.offset < data_start) data_start = e.offset;
    total += e.nbytes;
    if (e.nbytes <= FUZZ_READ_MAX) {
      unsigned char *grown = realloc(buf, e.nbytes ? (size_t)e.nbytes : 1);
      check(grown != NULL);
      buf = grown;
      rc = hk_checkpoint_reader_read(r, i, buf, (size_t)e.nbytes, &st);
      check(rc == HK_OK || is_refusal(rc, &st));
      if (rc == HK_OK) check(memcmp(buf, data + e.offset, (size_t)e.nbytes) == 0);
    }
  }
  /* the tensors tile everything after the header */
  if (n > 0) check(data_start + total == size);
  hk_checkpoint_entry none;
  check(hk_checkpoint_reader_entry(&none, r, n, &st) == HK_OUT_OF_RANGE);
  rc = hk_checkpoint_reader_verify(r, &st);
  check(rc == HK_OK || is_refusal(rc, &st));
  free(buf);
  hk_checkpoint_reader_free(r);
  return 0;
}
