/*
 * test_metadata_keys — a "hooked/1" checkpoint defines every key of its
 * "__metadata__" (checkpoint-format.md "Reading", contract H31): a key the
 * format does not define is damage, DATA_LOSS naming the file and the key,
 * never a key to skip — before, a bit flip in "global_step_crc32c" or
 * "global_step_tensor" made it an unknown key and silently dropped the
 * step's cross-check. The bit-flip campaign: every bit of every metadata
 * key name of a real checkpoint, flipped one at a time, gives a file the
 * reader refuses (a flip that yields another valid key included).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <hooked/hooked.h>
#include <hooked/checkpoint.h>
#include <hooked/graph.h>

#include "test_env.h"
#include "tmpdir.h"

typedef struct fixture {
  test_env *te;
  char *dir;
  hk_status st;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  assert_non_null(f);
  f->te = test_env_new();
  f->dir = test_tmpdir_new("metadata-keys");
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  test_tmpdir_free(f->dir);
  assert_int_equal(test_env_release(f->te), 0);
  free(f);
  return 0;
}

/* A checkpoint the Saver writes at step 12 of a graph whose global step
 * holds 12, so its header has every key the format defines: format,
 * global_step, global_step_crc32c, global_step_tensor and a crc32c:<name>
 * per tensor. @return its bytes (malloc), *n their count. */
static unsigned char *real_checkpoint(fixture *f, size_t *n) {
  static const int64_t dims[1] = {3};
  float w[3] = {0.5f, -1.0f, 2.0f};
  int64_t twelve = 12;
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_variable_def d = HK_VARIABLE_DEF_INIT;
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  hk_graph *g = NULL;
  hk_raw_session *rs = NULL;
  hk_saver *sv = NULL;
  hk_handle gs, h;
  hk_tensor t;
  size_t idx;
  char *path = test_path(f->dir, "model.ckpt");
  char *data = test_path(f->dir, "model.ckpt-12.safetensors");
  unsigned char *bytes;

  go.env = &f->te->env;
  assert_ok(hk_graph_new(&g, &go, &f->st), &f->st);
  assert_ok(hk_graph_create_global_step(g, &gs, &f->st), &f->st);
  d.name = "w";
  d.dtype = HK_DTYPE_F32;
  d.rank = 1;
  d.dims = dims;
  d.external_data = w;
  assert_ok(hk_graph_variable(g, &h, &d, &f->st), &f->st);
  assert_ok(hk_raw_session_open(&rs, hk_graph_executor(g), &f->st), &f->st);
  assert_ok(hk_executor_find_variable(hk_graph_executor(g), "global_step", &idx, &f->st), &f->st);
  t = hk_tensor_scalar_i64(&twelve);
  assert_ok(hk_raw_session_assign_variable(rs, idx, &t, &f->st), &f->st);
  so.env = &f->te->env;
  so.executor = hk_graph_executor(g);
  assert_ok(hk_saver_new(&sv, &so, &f->st), &f->st);
  assert_ok(hk_saver_save(NULL, sv, rs, path, 12, HK_SAVE_NO_STATE, &f->st), &f->st);
  bytes = (unsigned char *)test_read_file(data, n);
  assert_non_null(bytes);
  assert_int_equal(remove(data), 0);
  hk_saver_free(sv);
  hk_raw_session_free(rs);
  hk_graph_free(g);
  free(path);
  free(data);
  return bytes;
}

/* Open and verify: OK, or the reader's code. */
static hk_code read_back(fixture *f, const char *path, hk_status *st) {
  hk_checkpoint_reader *r = NULL;
  hk_code rc = hk_checkpoint_reader_open(&r, &f->te->env, path, st);
  if (rc == HK_OK) rc = hk_checkpoint_reader_verify(r, st);
  hk_checkpoint_reader_free(r);
  return rc;
}

/* The byte ranges of the metadata's key names in the file: each quoted
 * string inside "__metadata__":{...} that a ':' follows. The writer puts
 * no whitespace and no escapes there. */
static size_t metadata_keys(const unsigned char *b, size_t n, size_t (*keys)[2], size_t cap) {
  const char *open = "\"__metadata__\":{";
  size_t at = 0, k = 0;
  while (at + strlen(open) < n && memcmp(b + at, open, strlen(open)) != 0) at++;
  assert_true(at + strlen(open) < n);
  at += strlen(open);
  while (at < n && b[at] != '}') {
    size_t start, end;
    assert_int_equal(b[at], '"');
    start = at + 1;
    for (end = start; b[end] != '"'; end++) {}
    assert_true(k < cap);
    keys[k][0] = start;
    keys[k][1] = end;
    k++;
    at = end + 1;
    assert_int_equal(b[at], ':');
    at++;
    assert_int_equal(b[at], '"');
    for (at++; b[at] != '"'; at++) {}
    at++;
    if (b[at] == ',') at++;
  }
  return k;
}

/* Every bit of every metadata key name of a real checkpoint, flipped one
 * at a time: the reader refuses each file (open or verify fails), and a
 * key flipped into one the format does not define is named as such. */
static void test_metadata_keys__every_bit_flip_of_a_key_name_is_refused(void **state) {
  fixture *f = *state;
  size_t n = 0, keys[16][2], nkeys, cases = 0, named = 0;
  unsigned char *orig = real_checkpoint(f, &n);
  unsigned char *copy = malloc(n);
  char *path = test_path(f->dir, "flipped.safetensors");
  char want[6][32];
  int seen[6] = {0};
  const char *expect[6] = {"format",  "global_step", "global_step_crc32c", "global_step_tensor", "crc32c:global_step",
                           "crc32c:w"};

  assert_non_null(copy);
  assert_int_equal(test_write_file(path, orig, n), 0);
  assert_ok(read_back(f, path, &f->st), &f->st); /* the original reads */
  nkeys = metadata_keys(orig, n, keys, 16);
  assert_int_equal(nkeys, 6);
  for (size_t k = 0; k < nkeys; k++) {
    size_t len = keys[k][1] - keys[k][0];
    memcpy(want[k], orig + keys[k][0], len);
    want[k][len] = '\0';
    for (size_t e = 0; e < 6; e++)
      if (strcmp(want[k], expect[e]) == 0) seen[e] = 1;
  }
  for (size_t e = 0; e < 6; e++) assert_true(seen[e]);

  for (size_t k = 0; k < nkeys; k++) {
    for (size_t at = keys[k][0]; at < keys[k][1]; at++) {
      for (int bit = 0; bit < 8; bit++) {
        hk_status st = HK_STATUS_INIT;
        hk_code rc;
        memcpy(copy, orig, n);
        copy[at] ^= (unsigned char)(1u << bit);
        assert_int_equal(test_write_file(path, copy, n), 0);
        rc = read_back(f, path, &st);
        if (rc == HK_OK)
          fail_msg("flipping bit %d of byte %zu of metadata key \"%s\" gives a file the reader accepts", bit,
                   at - keys[k][0], want[k]);
        assert_int_equal(rc, HK_DATA_LOSS);
        assert_non_null(strstr(st.message, path));
        if (strstr(st.message, "is not one the format hooked/1 defines")) named++;
        cases++;
      }
    }
  }
  assert_int_equal(cases, 8 * (6 + 11 + 18 + 18 + 18 + 8));
  /* Most flips leave a well-formed key the format does not know. */
  assert_true(named > cases / 2);
  free(orig);
  free(copy);
  free(path);
}

/* Each kind of key the format does not define, wherever it is in the
 * object, is DATA_LOSS naming the file and the key; a CRC for a tensor the
 * file does not have names its key too. */
static void test_metadata_keys__unknown_key_names_the_file_and_the_key(void **state) {
  fixture *f = *state;
  size_t n = 0;
  unsigned char *orig = real_checkpoint(f, &n);
  char *path = test_path(f->dir, "model.ckpt-12.safetensors");
  const char *const swaps[][3] = {
      {"\"global_step_tensor\"", "\"global_step_tensoR\"", "metadata key \"global_step_tensoR\" is not one"},
      {"\"global_step_crc32c\"", "\"global_step_crc32b\"", "metadata key \"global_step_crc32b\" is not one"},
      {"\"crc32c:w\"", "\"crc32c:v\"", "metadata key \"crc32c:v\" records a CRC for a tensor the file does not have"},
      {"\"format\"", "\"Format\"", "no \"format\""},
  };
  for (size_t c = 0; c < sizeof swaps / sizeof swaps[0]; c++) {
    unsigned char *copy = malloc(n);
    unsigned char *hit;
    size_t len = strlen(swaps[c][0]);
    assert_non_null(copy);
    memcpy(copy, orig, n);
    hit = NULL;
    for (size_t i = 0; i + len <= n && !hit; i++)
      if (memcmp(copy + i, swaps[c][0], len) == 0) hit = copy + i;
    assert_non_null(hit);
    memcpy(hit, swaps[c][1], len);
    assert_int_equal(test_write_file(path, copy, n), 0);
    hk_status_clear(&f->st);
    assert_status(read_back(f, path, &f->st), &f->st, HK_DATA_LOSS, swaps[c][2]);
    assert_non_null(strstr(f->st.message, path));
    free(copy);
  }
  free(orig);
  free(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_metadata_keys__every_bit_flip_of_a_key_name_is_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_metadata_keys__unknown_key_names_the_file_and_the_key, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
