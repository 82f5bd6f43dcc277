/*
 * Tests of the checkpoint reader: the header's global step
 * (checkpoint-format.md, H31), checked against its CRC-32C and the tensor
 * global_step_tensor names. *
 * Files are built byte by byte (reader_tests.c: the internal writer is not
 * public), so every field can be mangled.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "reader_tests.h"

/* ---- the header's global step (checkpoint-format.md, H31) ---------------------------- */

/* The base data with metadata of our choosing: "b" (I64 42) may be named as
 * the global-step tensor, and the step's text may carry its CRC-32C. */
static void write_step_variant(fixture *f, const char *step, const char *step_crc, const char *gs_tensor) {
  char tmpl[1024], extra[256] = "";
  size_t k = 0;
  if (step_crc) k += (size_t)snprintf(extra + k, sizeof extra - k, ",\"global_step_crc32c\":\"%s\"", step_crc);
  if (gs_tensor) snprintf(extra + k, sizeof extra - k, ",\"global_step_tensor\":\"%s\"", gs_tensor);
  snprintf(tmpl, sizeof tmpl,
           "{\"__metadata__\":{\"format\":\"hooked/1\",\"global_step\":\"%s\"%s,\"crc32c:a\":\"{CA}\",\"crc32c:b\":"
           "\"{CB}\"}," ENT_A "," ENT_B "}",
           step, extra);
  write_variant(f->path, tmpl, 16);
}

static const char *crc_text(const char *s, char buf[9]) {
  snprintf(buf, 9, "%08" PRIx32, crc(s, strlen(s)));
  return buf;
}

/* The tensor global_step_tensor names must hold the header's step: else
 * DATA_LOSS at open, naming the file and both values. */
static void test_reader__global_step_tensor_must_hold_the_header_step(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_checkpoint_reader *r = NULL;
  char c[9], want[600];

  write_step_variant(f, "42", crc_text("42", c), "b");
  assert_ok(open_reader(f, &r, &st), &st);
  assert_int_equal(hk_checkpoint_reader_step(r), 42);
  assert_ok(hk_checkpoint_reader_verify(r, &st), &st);
  hk_checkpoint_reader_free(r);
  r = NULL;

  write_step_variant(f, "41", crc_text("41", c), "b");
  snprintf(want, sizeof want, "Checkpoint %s is corrupt: its global_step is 41 but tensor 'b', its global-step tensor",
           f->path);
  assert_status(open_reader(f, &r, &st), &st, HK_DATA_LOSS, want);
  assert_non_null(strstr(st.message, "holds 42"));
  assert_null(r);
  write_step_variant(f, "41", NULL, "b"); /* the CRC is optional; the tensor is checked alone */
  assert_status(open_reader(f, &r, &st), &st, HK_DATA_LOSS, "holds 42");

  write_step_variant(f, "42", NULL, "a");
  assert_status(open_reader(f, &r, &st), &st, HK_DATA_LOSS,
                "tensor 'a': \"global_step_tensor\" names it, but it is "
                "not an integer scalar (F32, rank 1)");
  write_step_variant(f, "42", NULL, "zz");
  assert_status(open_reader(f, &r, &st), &st, HK_DATA_LOSS,
                "tensor 'zz': \"global_step_tensor\" names it, but the "
                "file holds no such tensor");
  write_step_variant(f, "42", NULL, "b\",\"global_step_tensor\":\"b");
  assert_status(open_reader(f, &r, &st), &st, HK_DATA_LOSS, "\"global_step_tensor\" appears twice");

  /* Without the field no tensor is the global step: files of other writers
   * and of earlier versions read as before, whatever "b" holds. */
  write_step_variant(f, "41", NULL, NULL);
  assert_ok(open_reader(f, &r, &st), &st);
  assert_ok(hk_checkpoint_reader_verify(r, &st), &st);
  hk_checkpoint_reader_free(r);
}

/* global_step_crc32c covers the step's text: a changed digit is DATA_LOSS. */
static void test_reader__global_step_crc_covers_the_header_step(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_checkpoint_reader *r = NULL;
  char c[9], want[600];

  write_step_variant(f, "300", crc_text("300", c), NULL);
  assert_ok(open_reader(f, &r, &st), &st);
  hk_checkpoint_reader_free(r);
  r = NULL;
  write_step_variant(f, "308", crc_text("300", c), NULL);
  snprintf(want, sizeof want,
           "Checkpoint %s is corrupt: its global_step \"308\" does not match its CRC-32C (recorded %s, computed ",
           f->path, c);
  assert_status(open_reader(f, &r, &st), &st, HK_DATA_LOSS, want);
  write_step_variant(f, "300", "ABCDEF01", NULL);
  assert_status(open_reader(f, &r, &st), &st, HK_DATA_LOSS, "\"global_step_crc32c\" \"ABCDEF01\" is not 8 lowercase");
  write_step_variant(f, "300", "0000000", NULL);
  assert_status(open_reader(f, &r, &st), &st, HK_DATA_LOSS, "global_step_crc32c");
  assert_null(r);
}

/* The Saver names the executor's global step (C143) as the global-step
 * tensor when it saves it holding the recorded step; a save given another
 * step (C113) names none. A header step edited afterwards — its own CRC
 * fixed up too — no longer verifies: the tensor disagrees. */
static void test_reader__saver_names_its_global_step_tensor(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  saved_graph sg;
  const char *prefix = NULL;
  char *save_path = test_path(f->dir, "model.ckpt");
  char *p7 = test_path(f->dir, "model.ckpt-7.safetensors"), *p5 = test_path(f->dir, "model.ckpt-5.safetensors");
  char *bytes, *at, c[9], want[600];
  size_t n = 0;
  hk_checkpoint_reader *r = NULL;

  saved_graph_open(f, &sg, "global_step"); /* an I32 scalar holding 7 */
  assert_ok(hk_saver_save(&prefix, sg.saver, sg.rs, save_path, 7, HK_SAVE_NO_STATE, &st), &st);
  assert_ok(hk_saver_save(&prefix, sg.saver, sg.rs, save_path, 5, HK_SAVE_NO_STATE, &st), &st);
  bytes = test_read_file(p5, &n);
  assert_null(strstr(bytes + 8, "global_step_tensor"));
  assert_non_null(strstr(bytes + 8, "\"global_step\":\"5\",\"global_step_crc32c\":\""));
  free(bytes);
  assert_ok(hk_checkpoint_reader_open(&r, &f->te->env, p5, &st), &st);
  assert_ok(hk_checkpoint_reader_verify(r, &st), &st);
  hk_checkpoint_reader_free(r);
  r = NULL;

  bytes = test_read_file(p7, &n);
  assert_non_null(strstr(bytes + 8, "\"global_step_tensor\":\"global_step\""));
  assert_ok(hk_checkpoint_reader_open(&r, &f->te->env, p7, &st), &st);
  assert_ok(hk_checkpoint_reader_verify(r, &st), &st);
  hk_checkpoint_reader_free(r);
  r = NULL;
  /* "7" becomes "8", with the CRC of "8": only the tensor can tell */
  at = strstr(bytes + 8, "\"global_step\":\"7\",\"global_step_crc32c\":\"");
  assert_non_null(at);
  at[15] = '8';
  memcpy(at + 40, crc_text("8", c), 8);
  assert_int_equal(test_write_file(p7, bytes, n), 0);
  snprintf(want, sizeof want,
           "Checkpoint %s is corrupt: its global_step is 8 but tensor 'global_step', its global-step "
           "tensor (global_step_tensor), holds 7",
           p7);
  assert_status(hk_checkpoint_reader_open(&r, &f->te->env, p7, &st), &st, HK_DATA_LOSS, want);
  assert_null(r);
  free(bytes);
  free(save_path);
  free(p7);
  free(p5);
  saved_graph_close(&sg);
}

/* A variable name that needs JSON escaping survives the writer and reader
 * (the fake executor accepts any name; the embedded graph would not). */
static void test_reader__saver_escapes_names(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  const char *prefix = NULL;
  char *save_path = test_path(f->dir, "model.ckpt");
  const char *odd = "scope/q\"uote\\back\x01\x1f\x7f\xc3\xa9";
  const int32_t av = 7;
  fake_executor *fx = fake_executor_new(&f->te->env);
  hk_raw_session *rs = NULL;
  hk_saver *saver = NULL;
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;

  fake_executor_add_variable(fx, odd, HK_DTYPE_I32, 0, NULL, 0, &av);
  assert_ok(hk_raw_session_open(&rs, fake_executor_executor(fx), &st), &st);
  {
    size_t idx;
    hk_tensor t;
    assert_ok(hk_executor_find_variable(fake_executor_executor(fx), odd, &idx, &st), &st);
    assert_ok(hk_tensor_init(&t, HK_DTYPE_I32, 0, NULL, (void *)&av, &st), &st);
    assert_ok(hk_raw_session_assign_variable(rs, idx, &t, &st), &st);
  }
  so.env = &f->te->env;
  so.executor = fake_executor_executor(fx);
  assert_ok(hk_saver_new(&saver, &so, &st), &st);
  assert_ok(hk_saver_save(&prefix, saver, rs, save_path, 9, HK_SAVE_NO_STATE, &st), &st);

  hk_checkpoint_reader *r = NULL;
  size_t i;
  int32_t a = 0;
  assert_ok(hk_checkpoint_reader_open(&r, &f->te->env, prefix, &st), &st);
  assert_ok(hk_checkpoint_reader_find(r, odd, &i, &st), &st);
  assert_ok(hk_checkpoint_reader_read(r, i, &a, sizeof a, &st), &st);
  assert_int_equal(a, 7);
  assert_ok(hk_checkpoint_reader_verify(r, &st), &st);
  hk_checkpoint_reader_free(r);
  /* the header holds the escapes, never the raw control bytes */
  char *data_path = test_path(f->dir, "model.ckpt-9.safetensors");
  size_t n = 0;
  char *bytes = test_read_file(data_path, &n);
  assert_non_null(bytes);
  assert_non_null(strstr(bytes + 8, "\"scope/q\\\"uote\\\\back\\u0001\\u001f\x7f\xc3\xa9\":{"));
  assert_null(memchr(bytes + 8, '\x01', n - 8 - 4));
  free(bytes);
  free(data_path);
  free(save_path);
  hk_saver_free(saver);
  hk_raw_session_free(rs);
  fake_executor_free(fx);
}

int main(void) {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
  const struct CMUnitTest tests[] = {
      T(test_reader__saver_escapes_names),
      T(test_reader__global_step_tensor_must_hold_the_header_step),
      T(test_reader__global_step_crc_covers_the_header_step),
      T(test_reader__saver_names_its_global_step_tensor),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
