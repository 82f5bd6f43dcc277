/*
 * libFuzzer target for the checkpoint state-file parser: the
 * input is served as "<dir>/checkpoint" by an in-memory, read-only hk_fs and
 * read with hk_checkpoint_state_get(). Besides memory errors (ASan/UBSan),
 * it aborts when a parsed state breaks what the contract promises: every
 * path is "<dir>/<valid name>" (nothing outside the directory), the
 * model path is the newest entry, no name twice, timestamps finite
 * and non-negative, and a refusal is DATA_LOSS naming the file.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "mem_fs.h"

#include <hooked/hooked.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_DIR "ckpt"
#define FUZZ_STATE_PATH FUZZ_DIR "/checkpoint"

static void quiet_log(void *user, hk_log_level level, const char *msg) {
  (void)user;
  (void)level;
  (void)msg;
}

/* A valid checkpoint name (1-255 bytes, no "/", "\\", quote or control
 * byte, no "..", not "."), restated independently of the library. */
static int valid_name(const char *s) {
  size_t n = strlen(s);
  if (n < 1 || n > 255 || strcmp(s, ".") == 0 || strstr(s, "..")) return 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '/' || c == '\\' || c == '"' || c < 0x20 || c == 0x7f) return 0;
  }
  return 1;
}

static const char *name_in_dir(const char *path) {
  static const char prefix[] = FUZZ_DIR "/";
  if (!path || strncmp(path, prefix, sizeof prefix - 1) != 0) abort();
  if (!valid_name(path + sizeof prefix - 1)) abort();
  return path + sizeof prefix - 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mem_fs m = {FUZZ_STATE_PATH, data, size};
  hk_env env = HK_ENV_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_checkpoint_state *cs = NULL;
  hk_code rc;

  env.log = quiet_log;
  env.fs = mem_fs_vtable();
  env.fs_user = &m;
  rc = hk_checkpoint_state_get(&cs, &env, FUZZ_DIR, NULL, &st);
  if (rc != HK_OK) {
    if (cs) abort();
    if (rc != HK_DATA_LOSS && rc != HK_RESOURCE_EXHAUSTED) abort();
    if (rc == HK_DATA_LOSS && !strstr(st.message, "Invalid checkpoint state loaded from " FUZZ_STATE_PATH ": "))
      abort();
    return 0;
  }

  size_t n = hk_checkpoint_state_count(cs);
  if (n == 0) abort();
  const char *model = name_in_dir(hk_checkpoint_state_model_path(cs));
  if (strcmp(model, name_in_dir(hk_checkpoint_state_path(cs, n - 1))) != 0) abort();
  for (size_t i = 0; i < n; i++) {
    const char *name = name_in_dir(hk_checkpoint_state_path(cs, i));
    double t = hk_checkpoint_state_timestamp(cs, i);
    if (!isnan(t) && !(isfinite(t) && t >= 0)) abort();
    for (size_t j = 0; j < i && n <= 4096; j++)
      if (strcmp(name, name_in_dir(hk_checkpoint_state_path(cs, j))) == 0) abort();
  }
  if (hk_checkpoint_state_path(cs, n) != NULL) abort();
  double lp = hk_checkpoint_state_last_preserved(cs);
  if (!isnan(lp) && !(isfinite(lp) && lp >= 0)) abort();
  hk_checkpoint_state_free(cs);
  return 0;
}
