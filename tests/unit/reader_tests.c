/*
 * What the reader test programs share (reader_tests.h).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "reader_tests.h"

int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  assert_non_null(f);
  f->te = test_env_new();
  f->dir = test_tmpdir_new("reader");
  f->path = test_path(f->dir, "ck.safetensors");
  *state = f;
  return 0;
}

int teardown(void **state) {
  fixture *f = *state;
  int rc = test_env_release(f->te);
  test_tmpdir_free(f->dir);
  free(f->path);
  free(f);
  return rc;
}

/* ---- a test-only writer ------------------------------------------------------- */

/* 8-byte little-endian `hlen`, then the JSON, then the data. `hlen` may lie. */
void write_file_len(const char *path, uint64_t hlen, const char *json, const void *data, size_t n) {
  size_t jl = strlen(json);
  unsigned char *buf = malloc(8 + jl + n + 1);
  assert_non_null(buf);
  for (int i = 0; i < 8; i++) buf[i] = (unsigned char)(hlen >> (8 * i));
  memcpy(buf + 8, json, jl);
  if (n) memcpy(buf + 8 + jl, data, n);
  assert_int_equal(test_write_file(path, buf, 8 + jl + n), 0);
  free(buf);
}

void write_file(const char *path, const char *json, const void *data, size_t n) {
  write_file_len(path, strlen(json), json, data, n);
}

/* Replace every "{CA}" / "{CB}" in tmpl by the 8-hex-digit CRCs ca and cb. */
char *subst_crcs(const char *tmpl, uint32_t ca, uint32_t cb) {
  size_t n = strlen(tmpl);
  char *out = malloc(2 * n + 1), *w = out; /* each 4-byte placeholder becomes 8 bytes */
  assert_non_null(out);
  for (const char *p = tmpl; *p;) {
    if (strncmp(p, "{CA}", 4) == 0 || strncmp(p, "{CB}", 4) == 0) {
      char hex[9];
      snprintf(hex, sizeof hex, "%08" PRIx32, p[2] == 'A' ? ca : cb);
      memcpy(w, hex, 8);
      w += 8;
      p += 4;
    } else {
      *w++ = *p++;
    }
  }
  *w = '\0';
  return out;
}

uint32_t crc(const void *p, size_t n) { return hk_crc32c_extend(0, p, n); }

/* The base checkpoint: "a" F32 [2] = {1.5, -2}, "b" I64 [] = 42. */
const float A_VALS[2] = {1.5f, -2.0f};
const int64_t B_VAL = 42;

void base_data(unsigned char out[16]) {
  memcpy(out, A_VALS, 8); /* the test assumes a little-endian host, as the format's data is */
  memcpy(out + 8, &B_VAL, 8);
}

/* Write tmpl (with CRC placeholders) over the base data plus `extra` bytes. */
void write_variant(const char *path, const char *tmpl, size_t data_len) {
  unsigned char data[64];
  memset(data, 0, sizeof data);
  base_data(data);
  char *json = subst_crcs(tmpl, crc(data, 8), crc(data + 8, 8));
  write_file(path, json, data, data_len);
  free(json);
}

hk_code open_reader(fixture *f, hk_checkpoint_reader **r, hk_status *st) {
  return hk_checkpoint_reader_open(r, &f->te->env, f->path, st);
}

/* A graph of two variables ("b" F32[2], and `extra_name` or "a" I32, made
 * out of name order), an open raw session holding known values, and a
 * Saver over it: what the Saver tests save. */
void saved_graph_open(fixture *f, saved_graph *sg, const char *extra_name) {
  static const int64_t b_dims[1] = {2};
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_variable_def d = HK_VARIABLE_DEF_INIT;
  hk_handle h;
  float bv[2] = {1.0f, 2.0f};
  int32_t av = 7;
  hk_tensor t;
  size_t idx;

  go.env = &f->te->env;
  assert_ok(hk_graph_new(&sg->g, &go, &st), &st);
  /* created out of name order: the file must still be sorted */
  d.name = "b";
  d.dtype = HK_DTYPE_F32;
  d.rank = 1;
  d.dims = b_dims;
  assert_ok(hk_graph_variable(sg->g, &h, &d, &st), &st);
  d.name = extra_name ? extra_name : "a";
  d.dtype = HK_DTYPE_I32;
  d.rank = 0;
  d.dims = NULL;
  assert_ok(hk_graph_variable(sg->g, &h, &d, &st), &st);
  assert_ok(hk_raw_session_open(&sg->rs, hk_graph_executor(sg->g), &st), &st);
  assert_ok(hk_executor_find_variable(hk_graph_executor(sg->g), "b", &idx, &st), &st);
  assert_ok(hk_tensor_init(&t, HK_DTYPE_F32, 1, b_dims, bv, &st), &st);
  assert_ok(hk_raw_session_assign_variable(sg->rs, idx, &t, &st), &st);
  assert_ok(hk_executor_find_variable(hk_graph_executor(sg->g), d.name, &idx, &st), &st);
  assert_ok(hk_tensor_init(&t, HK_DTYPE_I32, 0, NULL, &av, &st), &st);
  assert_ok(hk_raw_session_assign_variable(sg->rs, idx, &t, &st), &st);
  so.env = &f->te->env;
  so.executor = hk_graph_executor(sg->g);
  assert_ok(hk_saver_new(&sg->saver, &so, &st), &st);
}

void saved_graph_close(saved_graph *sg) {
  hk_saver_free(sg->saver);
  hk_raw_session_free(sg->rs);
  hk_graph_free(sg->g);
}
