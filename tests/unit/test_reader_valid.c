/*
 * Tests of the checkpoint reader (checkpoint-format.md "Reading", contract
 * H31, H34): valid files, arguments and lookups, and the files the Saver
 * writes, which parse and are byte-identical for the same state. *
 * Files are built byte by byte (reader_tests.c: the internal writer is not
 * public), so every field can be mangled.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "reader_tests.h"

/* ---- valid files ---------------------------------------------------------------- */

static void test_reader__opens_base_file(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_checkpoint_reader *r = NULL;
  hk_checkpoint_entry e;
  float a[2];
  int64_t b = 0;
  size_t i;
  const char *tmpl = "{" META_AB "," ENT_A "," ENT_B "}";
  size_t hlen = strlen(tmpl) + 2 * 4; /* each CRC placeholder grows by 4 bytes */

  write_variant(f->path, tmpl, 16);
  assert_ok(open_reader(f, &r, &st), &st);
  assert_string_equal(hk_checkpoint_reader_path(r), f->path);
  assert_int_equal(hk_checkpoint_reader_step(r), 7);
  assert_int_equal(hk_checkpoint_reader_count(r), 2);
  assert_ok(hk_checkpoint_reader_entry(&e, r, 0, &st), &st);
  assert_string_equal(e.name, "a");
  assert_int_equal(e.dtype, HK_DTYPE_F32);
  assert_int_equal(e.rank, 1);
  assert_int_equal(e.dims[0], 2);
  assert_int_equal(e.offset, 8 + hlen);
  assert_int_equal(e.nbytes, 8);
  assert_int_equal(e.crc32c, crc(A_VALS, 8));
  assert_ok(hk_checkpoint_reader_entry(&e, r, 1, &st), &st);
  assert_string_equal(e.name, "b");
  assert_int_equal(e.rank, 0);
  assert_int_equal(e.offset, 8 + hlen + 8);
  assert_ok(hk_checkpoint_reader_find(r, "b", &i, &st), &st);
  assert_int_equal(i, 1);
  assert_ok(hk_checkpoint_reader_read(r, 0, a, sizeof a, &st), &st);
  assert_memory_equal(a, A_VALS, 8);
  assert_ok(hk_checkpoint_reader_read(r, 1, &b, sizeof b, &st), &st);
  assert_int_equal(b, 42);
  assert_ok(hk_checkpoint_reader_verify(r, &st), &st);
  hk_checkpoint_reader_free(r);
}

static void test_reader__prefix_gets_the_extension(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_checkpoint_reader *r = NULL;
  char *prefix = test_path(f->dir, "ck");

  write_variant(f->path, "{" META_AB "," ENT_A "," ENT_B "}", 16);
  assert_ok(hk_checkpoint_reader_open(&r, &f->te->env, prefix, &st), &st);
  assert_string_equal(hk_checkpoint_reader_path(r), f->path);
  hk_checkpoint_reader_free(r);
  free(prefix);
}

/* Other writers: JSON whitespace, any member order, no padding. */
static void test_reader__accepts_whitespace_and_any_order(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_checkpoint_reader *r = NULL;
  hk_checkpoint_entry e;
  const char *json =
      "\n{ \"b\" : { \"data_offsets\" : [ 8 , 16 ] ,\t\"shape\": [ ], \"dtype\": \"I64\" },\r\n"
      "  \"__metadata__\": {\"crc32c:b\": \"{CB}\", \"global_step\": \"-3\",\n"
      "     \"crc32c:a\": \"{CA}\", \"format\": \"hooked/1\"},\n"
      "  \"a\": {\"shape\": [2], \"dtype\": \"F32\", \"data_offsets\": [0, 8]}\n}      ";

  write_variant(f->path, json, 16);
  assert_ok(open_reader(f, &r, &st), &st);
  assert_int_equal(hk_checkpoint_reader_step(r), -3);
  assert_ok(hk_checkpoint_reader_entry(&e, r, 0, &st), &st);
  assert_string_equal(e.name, "a"); /* name order, not file order */
  assert_ok(hk_checkpoint_reader_verify(r, &st), &st);
  hk_checkpoint_reader_free(r);
}

/* The data may be laid out in an order other than the names'. */
static void test_reader__tensors_in_any_data_order(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_checkpoint_reader *r = NULL;
  unsigned char data[16];
  float a[2];
  int64_t b;
  memcpy(data, &B_VAL, 8);
  memcpy(data + 8, A_VALS, 8);
  char *json = subst_crcs(
      "{" META_AB
      ",\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]},\"b\":{\"dtype\":\"I64\",\"shape\":[],"
      "\"data_offsets\":[0,8]}}",
      crc(A_VALS, 8), crc(&B_VAL, 8));
  write_file(f->path, json, data, 16);
  free(json);
  assert_ok(open_reader(f, &r, &st), &st);
  assert_ok(hk_checkpoint_reader_read(r, 0, a, sizeof a, &st), &st);
  assert_memory_equal(a, A_VALS, 8);
  assert_ok(hk_checkpoint_reader_read(r, 1, &b, sizeof b, &st), &st);
  assert_int_equal(b, 42);
  hk_checkpoint_reader_free(r);
}

/* Every dtype, scalars and zero-size tensors, through a file assembled the
 * way checkpoint-format.md describes (padded, sorted, 64-byte aligned). */
static void test_reader__round_trip_every_dtype(void **state) {
  static const struct {
    const char *st;
    hk_dtype dt;
    size_t size;
  } dts[] = {
      {"BOOL", HK_DTYPE_BOOL, 1}, {"U8", HK_DTYPE_U8, 1},   {"I8", HK_DTYPE_I8, 1},     {"U16", HK_DTYPE_U16, 2},
      {"I16", HK_DTYPE_I16, 2},   {"F16", HK_DTYPE_F16, 2}, {"BF16", HK_DTYPE_BF16, 2}, {"U32", HK_DTYPE_U32, 4},
      {"I32", HK_DTYPE_I32, 4},   {"F32", HK_DTYPE_F32, 4}, {"U64", HK_DTYPE_U64, 8},   {"I64", HK_DTYPE_I64, 8},
      {"F64", HK_DTYPE_F64, 8},
  };
  enum { ND = sizeof dts / sizeof dts[0] };
  /* per dtype three tensors: "<D>_m" shape [2,3], "<D>_s" scalar, "<D>_z" shape [2,0] */
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_checkpoint_reader *r = NULL;
  char meta[8192], ents[8192], json[16384];
  unsigned char data[ND * 7 * 8];
  size_t dn = 0;
  size_t ml = 0, el = 0;
  char names[ND * 3][16];
  size_t name_count = 0;

  for (size_t i = 0; i < sizeof data; i++) data[i] = (unsigned char)(i * 37 + 11);
  /* Names sort as "<D>_m" < "<D>_s" < "<D>_z", and the dtypes' names are
   * laid out in the order of dts; the data follows that order too, which
   * is not the name order across dtypes: the reader must not care. */
  ml +=
      (size_t)snprintf(meta + ml, sizeof meta - ml, "\"__metadata__\":{\"format\":\"hooked/1\",\"global_step\":\"5\"");
  for (size_t d = 0; d < ND; d++) {
    static const char *const suffix[3] = {"_m", "_s", "_z"};
    static const size_t elems[3] = {6, 1, 0};
    static const char *const shapes[3] = {"[2,3]", "[]", "[2,0]"};
    for (int k = 0; k < 3; k++) {
      size_t nb = elems[k] * dts[d].size;
      snprintf(names[name_count], sizeof names[0], "%s%s", dts[d].st, suffix[k]);
      ml += (size_t)snprintf(meta + ml, sizeof meta - ml, ",\"crc32c:%s\":\"%08" PRIx32 "\"", names[name_count],
                             crc(data + dn, nb));
      el += (size_t)snprintf(ents + el, sizeof ents - el,
                             ",\"%s\":{\"dtype\":\"%s\",\"shape\":%s,\"data_offsets\":[%zu,%zu]}", names[name_count],
                             dts[d].st, shapes[k], dn, dn + nb);
      dn += nb;
      name_count++;
    }
  }
  assert_true(ml + el + 3 < sizeof json - 64);
  json[0] = '{';
  memcpy(json + 1, meta, ml);
  json[1 + ml] = '}';
  memcpy(json + 2 + ml, ents, el);
  json[2 + ml + el] = '}';
  size_t jl = 3 + ml + el;
  while ((8 + jl) % 64) json[jl++] = ' ';
  json[jl] = '\0';
  write_file(f->path, json, data, dn);

  assert_ok(open_reader(f, &r, &st), &st);
  assert_int_equal(hk_checkpoint_reader_count(r), ND * 3);
  assert_int_equal(hk_checkpoint_reader_step(r), 5);
  dn = 0;
  for (size_t d = 0; d < ND; d++) {
    for (int k = 0; k < 3; k++) {
      hk_checkpoint_entry e;
      size_t idx;
      unsigned char got[64];
      const char *name = names[d * 3 + (size_t)k];
      assert_ok(hk_checkpoint_reader_find(r, name, &idx, &st), &st);
      assert_ok(hk_checkpoint_reader_entry(&e, r, idx, &st), &st);
      assert_string_equal(e.name, name);
      assert_int_equal(e.dtype, dts[d].dt);
      assert_int_equal(e.rank, k == 1 ? 0 : 2);
      assert_int_equal(e.offset % 64, dn % 64);
      size_t nb = (k == 0 ? 6 : k == 1 ? 1 : 0) * dts[d].size;
      assert_int_equal(e.nbytes, nb);
      if (k == 2) assert_int_equal(e.dims[1], 0);
      memset(got, 0xEE, sizeof got);
      assert_ok(hk_checkpoint_reader_read(r, idx, nb ? (void *)got : NULL, nb, &st), &st);
      assert_memory_equal(got, data + dn, nb);
      dn += nb;
    }
  }
  /* entries come in bytewise name order */
  for (size_t i = 1; i < hk_checkpoint_reader_count(r); i++) {
    hk_checkpoint_entry p, q;
    assert_ok(hk_checkpoint_reader_entry(&p, r, i - 1, &st), &st);
    assert_ok(hk_checkpoint_reader_entry(&q, r, i, &st), &st);
    assert_true(strcmp(p.name, q.name) < 0);
  }
  assert_ok(hk_checkpoint_reader_verify(r, &st), &st);
  hk_checkpoint_reader_free(r);
}

/* Golden file: bytes assembled by hand, CRC of "123456789" is e3069283. */
static void test_reader__golden_small_checkpoint(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_checkpoint_reader *r = NULL;
  hk_checkpoint_entry e;
  char got[9];
  static const char header[] =
      "{\"__metadata__\":{\"format\":\"hooked/1\",\"global_step\":\"3000\",\"crc32c:digits\":\"e3069283\","
      "\"crc32c:empty\":\"00000000\"},\"digits\":{\"dtype\":\"U8\",\"shape\":[9],\"data_offsets\":[0,9]},"
      "\"empty\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[9,9]}}";
  unsigned char file[512];
  size_t hl = sizeof header - 1, padded = hl;
  while ((8 + padded) % 64) padded++;
  memset(file, ' ', sizeof file);
  for (int i = 0; i < 8; i++) file[i] = (unsigned char)((uint64_t)padded >> (8 * i));
  memcpy(file + 8, header, hl);
  memcpy(file + 8 + padded, "123456789", 9);
  assert_int_equal(test_write_file(f->path, file, 8 + padded + 9), 0);

  assert_ok(open_reader(f, &r, &st), &st);
  assert_int_equal(hk_checkpoint_reader_step(r), 3000);
  assert_ok(hk_checkpoint_reader_entry(&e, r, 0, &st), &st);
  assert_string_equal(e.name, "digits");
  assert_int_equal(e.crc32c, 0xe3069283U);
  assert_int_equal(e.offset, 8 + padded);
  assert_int_equal(e.offset % 64, 0);
  assert_ok(hk_checkpoint_reader_read(r, 0, got, sizeof got, &st), &st);
  assert_memory_equal(got, "123456789", 9);
  assert_ok(hk_checkpoint_reader_entry(&e, r, 1, &st), &st);
  assert_string_equal(e.name, "empty");
  assert_int_equal(e.crc32c, 0);
  assert_int_equal(e.nbytes, 0);
  assert_ok(hk_checkpoint_reader_verify(r, &st), &st);
  hk_checkpoint_reader_free(r);
}

static void test_reader__escaped_names(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_checkpoint_reader *r = NULL;
  size_t i;
  unsigned char v = 9;
  char *json = subst_crcs(
      "{\"__metadata__\":{\"format\":\"hooked/1\",\"global_step\":\"1\",\"crc32c:q\\\"b\\\\s\\u0001\\/"
      "\\u00e9\\ud83d\\ude00\":"
      "\"{CA}\"},\"q\\\"b\\\\s\\u0001/\\u00E9\\uD83D\\uDE00\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}",
      crc(&v, 1), 0);
  write_file(f->path, json, &v, 1);
  free(json);
  assert_ok(open_reader(f, &r, &st), &st);
  assert_ok(hk_checkpoint_reader_find(r, "q\"b\\s\x01/\xc3\xa9\xf0\x9f\x98\x80", &i, &st), &st);
  assert_ok(hk_checkpoint_reader_verify(r, &st), &st);
  hk_checkpoint_reader_free(r);
}

/* ---- arguments and lookups ---------------------------------------------------------- */

static void test_reader__arguments(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_checkpoint_reader *r = NULL;
  hk_checkpoint_entry e;
  size_t i;
  float small;
  char *missing = test_path(f->dir, "nope");

  assert_status(hk_checkpoint_reader_open(NULL, &f->te->env, f->path, &st), &st, HK_INVALID_ARGUMENT, "out");
  assert_status(hk_checkpoint_reader_open(&r, &f->te->env, NULL, &st), &st, HK_INVALID_ARGUMENT, "path");
  assert_status(hk_checkpoint_reader_open(&r, &f->te->env, missing, &st), &st, HK_NOT_FOUND, "nope.safetensors");
  assert_null(r);

  write_variant(f->path, "{" META_AB "," ENT_A "," ENT_B "}", 16);
  assert_ok(open_reader(f, &r, &st), &st);
  assert_status(hk_checkpoint_reader_entry(&e, r, 2, &st), &st, HK_OUT_OF_RANGE, f->path);
  assert_status(hk_checkpoint_reader_entry(&e, NULL, 0, &st), &st, HK_INVALID_ARGUMENT, NULL);
  assert_status(hk_checkpoint_reader_entry(NULL, r, 0, &st), &st, HK_INVALID_ARGUMENT, NULL);
  assert_status(hk_checkpoint_reader_find(r, "zz", &i, &st), &st, HK_NOT_FOUND, "Key zz not found in checkpoint");
  assert_non_null(strstr(st.message, f->path));
  assert_status(hk_checkpoint_reader_find(r, NULL, &i, &st), &st, HK_INVALID_ARGUMENT, "name");
  assert_status(hk_checkpoint_reader_read(r, 0, &small, sizeof small, &st), &st, HK_INVALID_ARGUMENT, "'a'");
  assert_status(hk_checkpoint_reader_read(r, 5, &small, sizeof small, &st), &st, HK_OUT_OF_RANGE, NULL);
  assert_status(hk_checkpoint_reader_verify(NULL, &st), &st, HK_INVALID_ARGUMENT, NULL);
  assert_null(hk_checkpoint_reader_path(NULL));
  assert_int_equal(hk_checkpoint_reader_count(NULL), 0);
  hk_checkpoint_reader_free(r);
  hk_checkpoint_reader_free(NULL);
  free(missing);
}

/* ---- files the Saver writes (hk__ckpt_write through hk_saver_save) -------------------- */

/* The writer's exact bytes for a known state, assembled by hand per
 * checkpoint-format.md; the second save of the same state is identical. */
static void test_reader__saver_file_is_golden_and_deterministic(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  saved_graph sg;
  const char *prefix = NULL;
  char *save_path = test_path(f->dir, "model.ckpt");
  char *data_path = test_path(f->dir, "model.ckpt-5.safetensors");
  char *copy_path = test_path(f->dir, "first.bin");
  const float bv[2] = {1.0f, 2.0f};
  const int32_t av = 7;
  char header[512], expect[1024];
  size_t hl, n1 = 0, n2 = 0;

  saved_graph_open(f, &sg, NULL);
  assert_ok(hk_saver_save(&prefix, sg.saver, sg.rs, save_path, 5, HK_SAVE_NO_STATE, &st), &st);
  char *first = test_read_file(data_path, &n1);
  assert_non_null(first);

  hl = (size_t)snprintf(
      header, sizeof header,
      "{\"__metadata__\":{\"format\":\"hooked/1\",\"global_step\":\"5\",\"global_step_crc32c\":\"%08" PRIx32
      "\",\"crc32c:a\":\"%08" PRIx32 "\",\"crc32c:b\":\"%08" PRIx32
      "\"},\"a\":{\"dtype\":\"I32\",\"shape\":[],\"data_offsets\":[0,4]},"
      "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
      crc("5", 1), crc(&av, 4), crc(bv, 8));
  while ((8 + hl) % 64) header[hl++] = ' ';
  for (int i = 0; i < 8; i++) expect[i] = (char)((uint64_t)hl >> (8 * i));
  memcpy(expect + 8, header, hl);
  memcpy(expect + 8 + hl, &av, 4);
  memcpy(expect + 8 + hl + 4, bv, 8);
  if (n1 != 8 + hl + 12 || memcmp(first, expect, n1) != 0)
    fail_msg("writer output differs from the expected bytes:\n got  %.*s\n want %.*s", (int)(n1 > 8 ? n1 - 8 : 0),
             first + 8, (int)hl, expect + 8);

  /* the same state again: byte-identical */
  assert_int_equal(rename(data_path, copy_path), 0);
  assert_ok(hk_saver_save(&prefix, sg.saver, sg.rs, save_path, 5, HK_SAVE_NO_STATE, &st), &st);
  char *second = test_read_file(data_path, &n2);
  assert_non_null(second);
  assert_int_equal(n1, n2);
  assert_memory_equal(first, second, n1);

  /* and it reads back */
  hk_checkpoint_reader *r = NULL;
  int32_t a = 0;
  assert_ok(hk_checkpoint_reader_open(&r, &f->te->env, prefix, &st), &st);
  assert_int_equal(hk_checkpoint_reader_step(r), 5);
  assert_ok(hk_checkpoint_reader_verify(r, &st), &st);
  assert_ok(hk_checkpoint_reader_read(r, 0, &a, sizeof a, &st), &st);
  assert_int_equal(a, 7);
  hk_checkpoint_reader_free(r);
  /* no temporary file is left behind */
  assert_int_equal(test_dir_count_matching(f->dir, ".tmp-"), 0);

  free(first);
  free(second);
  free(save_path);
  free(data_path);
  free(copy_path);
  saved_graph_close(&sg);
}

int main(void) {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
  const struct CMUnitTest tests[] = {
      T(test_reader__opens_base_file),
      T(test_reader__prefix_gets_the_extension),
      T(test_reader__accepts_whitespace_and_any_order),
      T(test_reader__tensors_in_any_data_order),
      T(test_reader__round_trip_every_dtype),
      T(test_reader__golden_small_checkpoint),
      T(test_reader__escaped_names),
      T(test_reader__arguments),
      T(test_reader__saver_file_is_golden_and_deterministic),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
