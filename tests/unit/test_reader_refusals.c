/*
 * Tests of the checkpoint reader (checkpoint-format.md "Reading", contract
 * H31, H34 "verifies"): what it refuses — malformed headers, data errors,
 * file-system faults, and a newer format (FAILED_PRECONDITION). *
 * Files are built byte by byte (reader_tests.c: the internal writer is not
 * public), so every field can be mangled.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "reader_tests.h"

/* ---- refusals ----------------------------------------------------------------------- */

typedef struct bad_case {
  const char *what;
  const char *json;
  size_t data_len;
  hk_code code;
  const char *substr; /* besides the file name */
} bad_case;

static const bad_case bad_cases[] = {
    {"not an object", "[1,2]", 16, HK_DATA_LOSS, "not a JSON object"},
    {"a string", "\"x\"", 16, HK_DATA_LOSS, "not a JSON object"},
    {"empty header", "", 16, HK_DATA_LOSS, "not a JSON object"},
    {"unterminated", "{" META_AB "," ENT_A "," ENT_B, 16, HK_DATA_LOSS, "malformed"},
    {"trailing garbage", "{" META_AB "," ENT_A "," ENT_B "} x", 16, HK_DATA_LOSS, "after the header"},
    {"two objects", "{" META_AB "," ENT_A "," ENT_B "}{}", 16, HK_DATA_LOSS, "after the header"},
    {"missing dtype", "{" META_AB "," ENT_A ",\"b\":{\"shape\":[],\"data_offsets\":[8,16]}}", 16, HK_DATA_LOSS,
     "'b': missing dtype"},
    {"unknown dtype", "{" META_AB "," ENT_A ",\"b\":{\"dtype\":\"I65\",\"shape\":[],\"data_offsets\":[8,16]}}", 16,
     HK_DATA_LOSS, "'b': unknown dtype"},
    {"string dtype", "{" META_AB "," ENT_A ",\"b\":{\"dtype\":\"STRING\",\"shape\":[],\"data_offsets\":[8,16]}}", 16,
     HK_DATA_LOSS, "'b': unknown dtype"},
    {"dtype not a string", "{" META_AB "," ENT_A ",\"b\":{\"dtype\":8,\"shape\":[],\"data_offsets\":[8,16]}}", 16,
     HK_DATA_LOSS, "'b': dtype is not a string"},
    {"missing shape", "{" META_AB "," ENT_A ",\"b\":{\"dtype\":\"I64\",\"data_offsets\":[8,16]}}", 16, HK_DATA_LOSS,
     "'b': missing shape"},
    {"negative dim", "{" META_AB ",\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}," ENT_B "}", 16,
     HK_DATA_LOSS, "'a': negative"},
    {"fractional dim", "{" META_AB ",\"a\":{\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]}," ENT_B "}", 16,
     HK_DATA_LOSS, "'a': shape dimension is not an integer"},
    {"shape not an array", "{" META_AB ",\"a\":{\"dtype\":\"F32\",\"shape\":2,\"data_offsets\":[0,8]}," ENT_B "}", 16,
     HK_DATA_LOSS, "'a': shape is not an array"},
    {"rank 9", "{" META_AB ",\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,2],\"data_offsets\":[0,8]}," ENT_B "}",
     16, HK_DATA_LOSS, "'a': rank greater than 8"},
    {"dim too large for int64",
     "{" META_AB ",\"a\":{\"dtype\":\"F32\",\"shape\":[9223372036854775808],\"data_offsets\":[0,8]}," ENT_B "}", 16,
     HK_DATA_LOSS, "'a': shape dimension is too large"},
    {"byte size overflows",
     "{" META_AB ",\"a\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,2],\"data_offsets\":[0,8]}," ENT_B "}", 16,
     HK_DATA_LOSS, "'a': its shape's byte size overflows"},
    {"size mismatch", "{" META_AB ",\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}," ENT_B "}", 16,
     HK_DATA_LOSS, "'a': data_offsets [0, 8] hold 8 bytes, its shape needs 12"},
    {"missing offsets", "{" META_AB ",\"a\":{\"dtype\":\"F32\",\"shape\":[2]}," ENT_B "}", 16, HK_DATA_LOSS,
     "'a': missing data_offsets"},
    {"three offsets", "{" META_AB ",\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8,8]}," ENT_B "}", 16,
     HK_DATA_LOSS, "'a': data_offsets has more than 2"},
    {"one offset", "{" META_AB ",\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}," ENT_B "}", 16,
     HK_DATA_LOSS, "'a': data_offsets must have 2"},
    {"reversed offsets", "{" META_AB ",\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}," ENT_B "}", 16,
     HK_DATA_LOSS, "'a': data_offsets [8, 0] are reversed"},
    {"offset 2^64",
     "{" META_AB ",\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,18446744073709551616]}," ENT_B "}", 16,
     HK_DATA_LOSS, "'a': data_offsets is too large"},
    {"offsets outside the data",
     "{" META_AB "," ENT_A ",\"b\":{\"dtype\":\"U8\",\"shape\":[16],\"data_offsets\":[8,24]}}", 16, HK_DATA_LOSS,
     "'b': data_offsets [8, 24] lie outside the 16 data bytes"},
    {"overlap", "{" META_AB "," ENT_A ",\"b\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[4,12]}}", 16,
     HK_DATA_LOSS, "overlaps"},
    {"zero-size inside another",
     "{" META_AB
     ",\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},\"b\":{\"dtype\":\"I64\",\"shape\":[0],"
     "\"data_offsets\":[8,8]}}",
     16, HK_DATA_LOSS, "'b': it overlaps"},
    {"gap", "{" META_AB "," ENT_A ",\"b\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[9,17]}}", 17, HK_DATA_LOSS,
     "'b': a gap of 1 bytes"},
    {"gap at start", "{" META_AB ",\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[1,9]}," ENT_B "}", 17,
     HK_DATA_LOSS, "gap"},
    {"trailing bytes", "{" META_AB "," ENT_A "," ENT_B "}", 17, HK_DATA_LOSS, "1 bytes after the last tensor"},
    {"data without tensors", "{\"__metadata__\":{\"format\":\"hooked/1\",\"global_step\":\"1\"}}", 3, HK_DATA_LOSS,
     "belong to no tensor"},
    {"duplicate name",
     "{" META_AB "," ENT_A "," ENT_B ",\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[16,16]}}", 16,
     HK_DATA_LOSS, "'a': the name appears twice"},
    {"duplicate field",
     "{" META_AB ",\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}," ENT_B "}", 16,
     HK_DATA_LOSS, "'a': dtype given twice"},
    {"unknown field", "{" META_AB ",\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"x\":1}," ENT_B "}",
     16, HK_DATA_LOSS, "'a': unknown field"},
    {"entry not an object", "{" META_AB ",\"a\":[1]," ENT_B "}", 16, HK_DATA_LOSS, "'a': its entry is not an object"},
    {"empty name", "{" META_AB ",\"\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}," ENT_B "}", 16,
     HK_DATA_LOSS, "empty name"},
    {"missing metadata", "{" ENT_A "," ENT_B "}", 16, HK_DATA_LOSS, "no \"__metadata__\""},
    {"metadata not an object", "{\"__metadata__\":\"hooked/1\"," ENT_A "," ENT_B "}", 16, HK_DATA_LOSS,
     "\"__metadata__\" is not an object"},
    {"metadata twice", "{" META_AB "," META_AB "," ENT_A "," ENT_B "}", 16, HK_DATA_LOSS, "appears twice"},
    {"metadata value not a string",
     "{\"__metadata__\":{\"format\":\"hooked/1\",\"global_step\":7,\"crc32c:a\":\"{CA}\",\"crc32c:b\":\"{CB}\"}," ENT_A
     "," ENT_B "}",
     16, HK_DATA_LOSS, "metadata value of \"global_step\" is not a string"},
    {"missing format",
     "{\"__metadata__\":{\"global_step\":\"7\",\"crc32c:a\":\"{CA}\",\"crc32c:b\":\"{CB}\"}," ENT_A "," ENT_B "}", 16,
     HK_DATA_LOSS, "no \"format\""},
    {"foreign format",
     "{\"__metadata__\":{\"format\":\"pt\",\"global_step\":\"7\",\"crc32c:a\":\"{CA}\",\"crc32c:b\":\"{CB}\"}," ENT_A
     "," ENT_B "}",
     16, HK_DATA_LOSS, "unknown format \"pt\""},
    {"format hooked/0",
     "{\"__metadata__\":{\"format\":\"hooked/"
     "0\",\"global_step\":\"7\",\"crc32c:a\":\"{CA}\",\"crc32c:b\":\"{CB}\"}," ENT_A "," ENT_B "}",
     16, HK_DATA_LOSS, "unknown format"},
    {"format hooked/1.1",
     "{\"__metadata__\":{\"format\":\"hooked/"
     "1.1\",\"global_step\":\"7\",\"crc32c:a\":\"{CA}\",\"crc32c:b\":\"{CB}\"}," ENT_A "," ENT_B "}",
     16, HK_DATA_LOSS, "unknown format"},
    {"newer format",
     "{\"__metadata__\":{\"format\":\"hooked/"
     "2\",\"global_step\":\"7\",\"crc32c:a\":\"{CA}\",\"crc32c:b\":\"{CB}\"}," ENT_A "," ENT_B "}",
     16, HK_FAILED_PRECONDITION, "hooked/2"},
    {"missing step",
     "{\"__metadata__\":{\"format\":\"hooked/1\",\"crc32c:a\":\"{CA}\",\"crc32c:b\":\"{CB}\"}," ENT_A "," ENT_B "}", 16,
     HK_DATA_LOSS, "no \"global_step\""},
    {"bad step",
     "{\"__metadata__\":{\"format\":\"hooked/"
     "1\",\"global_step\":\"7x\",\"crc32c:a\":\"{CA}\",\"crc32c:b\":\"{CB}\"}," ENT_A "," ENT_B "}",
     16, HK_DATA_LOSS, "global_step"},
    {"missing crc",
     "{\"__metadata__\":{\"format\":\"hooked/1\",\"global_step\":\"7\",\"crc32c:a\":\"{CA}\"}," ENT_A "," ENT_B "}", 16,
     HK_DATA_LOSS, "'b': no CRC"},
    {"crc not hex",
     "{\"__metadata__\":{\"format\":\"hooked/"
     "1\",\"global_step\":\"7\",\"crc32c:a\":\"{CA}\",\"crc32c:b\":\"0123456g\"}," ENT_A "," ENT_B "}",
     16, HK_DATA_LOSS, "'b': CRC \"0123456g\""},
    {"crc too short",
     "{\"__metadata__\":{\"format\":\"hooked/"
     "1\",\"global_step\":\"7\",\"crc32c:a\":\"{CA}\",\"crc32c:b\":\"0123\"}," ENT_A "," ENT_B "}",
     16, HK_DATA_LOSS, "'b': CRC"},
    {"crc twice",
     "{\"__metadata__\":{\"format\":\"hooked/1\",\"global_step\":\"7\",\"crc32c:a\":\"{CA}\",\"crc32c:b\":\"{CB}\","
     "\"crc32c:a\":\"{CA}\"}," ENT_A "," ENT_B "}",
     16, HK_DATA_LOSS, "'a': its CRC is recorded twice"},
    {"crc for a stranger",
     "{\"__metadata__\":{\"format\":\"hooked/1\",\"global_step\":\"7\",\"crc32c:a\":\"{CA}\",\"crc32c:b\":\"{CB}\","
     "\"crc32c:c\":\"{CA}\"}," ENT_A "," ENT_B "}",
     16, HK_DATA_LOSS, "metadata key \"crc32c:c\" records a CRC for a tensor the file does not have"},
    {"unknown metadata key",
     "{\"__metadata__\":{\"format\":\"hooked/1\",\"global_step\":\"7\",\"crc32c:a\":\"{CA}\",\"crc32c:b\":\"{CB}\","
     "\"producer\":\"other\"}," ENT_A "," ENT_B "}",
     16, HK_DATA_LOSS, "metadata key \"producer\" is not one the format hooked/1 defines"},
    {"raw control byte in a name", "{" META_AB ",\"a\x01\":{}}", 16, HK_DATA_LOSS, "control byte"},
    {"bad escape", "{" META_AB ",\"a\\x\":{}}", 16, HK_DATA_LOSS, "bad escape"},
    {"NUL escape", "{" META_AB ",\"a\\u0000\":{}}", 16, HK_DATA_LOSS, "NUL"},
    {"lone surrogate", "{" META_AB ",\"a\\ud800\":{}}", 16, HK_DATA_LOSS, "surrogate"},
    {"invalid UTF-8", "{" META_AB ",\"a\xc0\xaf\":{}}", 16, HK_DATA_LOSS, "UTF-8"},
};

static void test_reader__refuses_each_mangled_field(void **state) {
  fixture *f = *state;
  for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
    const bad_case *c = &bad_cases[i];
    hk_status st = HK_STATUS_INIT;
    hk_checkpoint_reader *r = (hk_checkpoint_reader *)&st; /* must become NULL */
    write_variant(f->path, c->json, c->data_len);
    hk_code rc = open_reader(f, &r, &st);
    if (rc != c->code || !strstr(st.message, c->substr) || !strstr(st.message, f->path))
      fail_msg("case '%s': got %s \"%s\", want %s containing \"%s\"", c->what, hk_code_name(rc), st.message,
               hk_code_name(c->code), c->substr);
    assert_null(r);
  }
}

/* A truncated file at every length is refused cleanly. */
static void test_reader__truncated_at_every_length(void **state) {
  fixture *f = *state;
  size_t n = 0;
  write_variant(f->path, "{" META_AB "," ENT_A "," ENT_B "}", 16);
  char *whole = test_read_file(f->path, &n);
  assert_non_null(whole);
  for (size_t len = 0; len < n; len++) {
    hk_status st = HK_STATUS_INIT;
    hk_checkpoint_reader *r = NULL;
    assert_int_equal(test_write_file(f->path, whole, len), 0);
    hk_code rc = open_reader(f, &r, &st);
    if (rc == HK_OK) rc = hk_checkpoint_reader_verify(r, &st);
    if (rc != HK_DATA_LOSS || !strstr(st.message, f->path))
      fail_msg("length %zu: got %s \"%s\"", len, hk_code_name(rc), st.message);
    hk_checkpoint_reader_free(r);
  }
  free(whole);
}

static void test_reader__hostile_header_lengths(void **state) {
  fixture *f = *state;
  static const struct {
    uint64_t len;
    const char *substr;
  } cases[] = {
      {(uint64_t)1 << 63, "100 MiB"},
      {UINT64_MAX, "100 MiB"},
      {((uint64_t)100 << 20) + 1, "100 MiB"},
      {1000, "exceeds the"},
  };
  const char *json = "{}";
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    hk_status st = HK_STATUS_INIT;
    hk_checkpoint_reader *r = NULL;
    write_file_len(f->path, cases[i].len, json, NULL, 0);
    test_alloc_reset_counts(&f->te->alloc);
    assert_status(open_reader(f, &r, &st), &st, HK_DATA_LOSS, cases[i].substr);
    assert_non_null(strstr(st.message, f->path));
    assert_null(r);
    /* nothing was allocated from the claimed size: only the reader and its path */
    assert_true(test_alloc_count(&f->te->alloc) <= 2);
  }
}

static void test_reader__short_files(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_checkpoint_reader *r = NULL;
  assert_int_equal(test_write_file(f->path, "", 0), 0);
  assert_status(open_reader(f, &r, &st), &st, HK_DATA_LOSS, "shorter than the 8-byte");
  assert_int_equal(test_write_file(f->path, "\x02\0\0\0\0\0\0", 7), 0);
  assert_status(open_reader(f, &r, &st), &st, HK_DATA_LOSS, "shorter than the 8-byte");
  assert_null(r);
}

/* ---- data errors ------------------------------------------------------------------- */

static void test_reader__crc_mismatch_found_by_read_and_verify(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_checkpoint_reader *r = NULL;
  size_t n = 0;
  float a[2];
  int64_t b;

  write_variant(f->path, "{" META_AB "," ENT_A "," ENT_B "}", 16);
  char *bytes = test_read_file(f->path, &n);
  assert_non_null(bytes);
  bytes[n - 3] ^= 0x10; /* inside "b" */
  assert_int_equal(test_write_file(f->path, bytes, n), 0);
  free(bytes);

  assert_ok(open_reader(f, &r, &st), &st);
  assert_ok(hk_checkpoint_reader_read(r, 0, a, sizeof a, &st), &st);
  assert_status(hk_checkpoint_reader_read(r, 1, &b, sizeof b, &st), &st, HK_DATA_LOSS, "'b': CRC-32C mismatch");
  assert_non_null(strstr(st.message, f->path));
  assert_status(hk_checkpoint_reader_verify(r, &st), &st, HK_DATA_LOSS, "'b': CRC-32C mismatch");
  assert_non_null(strstr(st.message, f->path));
  hk_checkpoint_reader_free(r);
}

static void test_reader__recorded_crc_wrong(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_checkpoint_reader *r = NULL;
  float a[2];
  unsigned char data[16];
  base_data(data);
  char *json = subst_crcs("{" META_AB "," ENT_A "," ENT_B "}", crc(data, 8) ^ 1, crc(data + 8, 8));
  write_file(f->path, json, data, 16);
  free(json);
  assert_ok(open_reader(f, &r, &st), &st);
  assert_status(hk_checkpoint_reader_read(r, 0, a, sizeof a, &st), &st, HK_DATA_LOSS, "'a': CRC-32C mismatch");
  assert_status(hk_checkpoint_reader_verify(r, &st), &st, HK_DATA_LOSS, "'a'");
  hk_checkpoint_reader_free(r);
}

static void test_reader__file_shrinks_after_open(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_checkpoint_reader *r = NULL;
  int64_t b;
  size_t n = 0;
  write_variant(f->path, "{" META_AB "," ENT_A "," ENT_B "}", 16);
  char *bytes = test_read_file(f->path, &n);
  assert_ok(open_reader(f, &r, &st), &st);
  assert_int_equal(truncate(f->path, (off_t)(n - 4)), 0);
  assert_status(hk_checkpoint_reader_read(r, 1, &b, sizeof b, &st), &st, HK_DATA_LOSS, "'b': the file ends");
  assert_status(hk_checkpoint_reader_verify(r, &st), &st, HK_DATA_LOSS, "'b'");
  hk_checkpoint_reader_free(r);
  free(bytes);
}

/* verify reads through one buffer of at most 4 MiB, whatever the tensors' size. */
typedef struct peak_alloc {
  size_t biggest;
} peak_alloc;
static void *peak_malloc(void *u, size_t n) {
  peak_alloc *p = u;
  if (n > p->biggest) p->biggest = n;
  return malloc(n);
}
static void *peak_realloc(void *u, void *q, size_t n) {
  peak_alloc *p = u;
  if (n > p->biggest) p->biggest = n;
  return realloc(q, n);
}
static void peak_free(void *u, void *q) {
  (void)u;
  free(q);
}

static void test_reader__verify_uses_a_bounded_buffer(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_checkpoint_reader *r = NULL;
  peak_alloc peak = {0};
  hk_env env = HK_ENV_INIT;
  size_t big = (size_t)9 << 20;
  unsigned char *data = malloc(big);
  char json[512];
  assert_non_null(data);
  for (size_t i = 0; i < big; i++) data[i] = (unsigned char)(i * 7);
  snprintf(json, sizeof json,
           "{\"__metadata__\":{\"format\":\"hooked/1\",\"global_step\":\"1\",\"crc32c:big\":\"%08" PRIx32
           "\"},\"big\":{\"dtype\":\"U8\",\"shape\":[%zu],\"data_offsets\":[0,%zu]}}",
           crc(data, big), big, big);
  write_file(f->path, json, data, big);
  env.allocator.alloc = peak_malloc;
  env.allocator.realloc = peak_realloc;
  env.allocator.free = peak_free;
  env.allocator.user = &peak;
  assert_ok(hk_checkpoint_reader_open(&r, &env, f->path, &st), &st);
  assert_ok(hk_checkpoint_reader_verify(r, &st), &st);
  assert_true(peak.biggest <= ((size_t)4 << 20));
  assert_true(peak.biggest >= ((size_t)1 << 20)); /* ... but a real buffer, not byte by byte */
  /* a read of the whole tensor into a caller buffer also works */
  unsigned char *back = malloc(big);
  assert_non_null(back);
  assert_ok(hk_checkpoint_reader_read(r, 0, back, big, &st), &st);
  assert_memory_equal(back, data, big);
  free(back);
  /* corrupt the last byte: found across piece boundaries */
  hk_checkpoint_reader_free(r);
  data[big - 1] ^= 1;
  write_file(f->path, json, data, big);
  assert_ok(hk_checkpoint_reader_open(&r, &env, f->path, &st), &st);
  assert_status(hk_checkpoint_reader_verify(r, &st), &st, HK_DATA_LOSS, "'big': CRC-32C mismatch");
  hk_checkpoint_reader_free(r);
  free(data);
}

/* ---- fault injection ----------------------------------------------------------------- */

/* H7: an allocation failure anywhere is RESOURCE_EXHAUSTED with nothing leaked. */
static void test_reader__oom_loop(void **state) {
  fixture *f = *state;
  write_variant(f->path, "{" META_AB "," ENT_A "," ENT_B "}", 16);
  for (long n = 0;; n++) {
    hk_status st = HK_STATUS_INIT;
    hk_checkpoint_reader *r = NULL;
    test_alloc_reset_counts(&f->te->alloc);
    test_alloc_fail_at(&f->te->alloc, n, 0);
    hk_code rc = open_reader(f, &r, &st);
    if (rc == HK_OK) rc = hk_checkpoint_reader_verify(r, &st);
    hk_checkpoint_reader_free(r);
    long failed = f->te->alloc.nfailed;
    test_alloc_fail_at(&f->te->alloc, -1, 0);
    if (failed == 0) {
      assert_ok(rc, &st);
      assert_true(n > 2);
      break;
    }
    assert_status(rc, &st, HK_RESOURCE_EXHAUSTED, NULL);
    assert_int_equal(test_alloc_live(&f->te->alloc), 0);
  }
}

/* H9: an fs error at any call is returned as mapped, naming the file, and
 * every opened handle is closed. */
static void test_reader__fs_fault_sweep(void **state) {
  fixture *f = *state;
  faulty_fs ff;
  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &f->te->env);
  write_variant(f->path, "{" META_AB "," ENT_A "," ENT_B "}", 16);
  for (long n = 0;; n++) {
    hk_status st = HK_STATUS_INIT;
    hk_checkpoint_reader *r = NULL;
    faulty_fs_fail_errno(&ff, FAULTY_FS_ANY, n, EIO, 0);
    hk_code rc = open_reader(f, &r, &st);
    if (rc == HK_OK) rc = hk_checkpoint_reader_verify(r, &st);
    hk_checkpoint_reader_free(r);
    assert_int_equal(faulty_fs_open_handles(&ff), 0);
    if (faulty_fs_injected(&ff) == 0) {
      assert_ok(rc, &st);
      assert_true(n >= 4); /* open, size, two reads, close at least */
      break;
    }
    if (rc == HK_OK && ff.last_slot == FAULTY_FS_CLOSE) continue; /* free has no status to report it */
    if (rc != HK_UNKNOWN || !strstr(st.message, f->path))
      fail_msg("fault %ld (%s): got %s \"%s\"", n, faulty_fs_slot_name(ff.last_slot), hk_code_name(rc), st.message);
  }
  f->te->env.fs = NULL;
  faulty_fs_destroy(&ff);
}

/* ---- checkpoint-format.md: a newer format is FAILED_PRECONDITION ------------------ */

/*
 * checkpoint-format.md "a missing format or one it does not know
 * (FAILED_PRECONDITION for a newer version)"; header doc of
 * hk_checkpoint_reader_open ("FAILED_PRECONDITION for a "hooked/<n>" format
 * newer than this library"). A "hooked/2" file using anything version 1
 * lacks — here a dtype this library does not know; likewise an extra tensor
 * field or a non-string metadata value — is FAILED_PRECONDITION (it only
 * needs a newer hooked), never DATA_LOSS ("corrupt"): the format named in
 * "__metadata__" turns later grammar/dtype refusals into
 * FAILED_PRECONDITION.
 */
static void test_reader__format_newer_version_with_new_dtype_is_failed_precondition(void **state) {
  fixture *f = *state;
  hk_checkpoint_reader *r = NULL;
  hk_code rc;
  hk_status st = HK_STATUS_INIT;
  char *path = test_path(f->dir, "future-1.safetensors");
  unsigned char data[4] = {1, 2, 3, 4};
  write_file(path,
             "{\"__metadata__\":{\"format\":\"hooked/2\",\"global_step\":\"1\",\"crc32c:x\":\"00000000\"},"
             "\"x\":{\"dtype\":\"F8_E4M3\",\"shape\":[4],\"data_offsets\":[0,4]}}",
             data, sizeof data);
  rc = hk_checkpoint_reader_open(&r, &f->te->env, path, &st);
  free(path);
  hk_checkpoint_reader_free(r);
  assert_status(rc, &st, HK_FAILED_PRECONDITION, "hooked/2");
}

/* A newer format with version-1 grammar is FAILED_PRECONDITION, even without
 * the metadata this version requires (global_step). */
static void test_reader__format_newer_version_without_global_step(void **state) {
  fixture *f = *state;
  hk_checkpoint_reader *r = NULL;
  hk_status st = HK_STATUS_INIT;
  char *path = test_path(f->dir, "future-2.safetensors");
  write_file(path, "{\"__metadata__\":{\"format\":\"hooked/3\"}}", NULL, 0);
  assert_status(hk_checkpoint_reader_open(&r, &f->te->env, path, &st), &st, HK_FAILED_PRECONDITION, "hooked/3");
  assert_null(r);
  free(path);
}

/* The newer format is found wherever "__metadata__" is (here after the
 * tensors, as other tools may write it), whatever version 1 would refuse
 * before it: an unknown tensor field, a non-string metadata value. */
static void test_reader__format_newer_version_metadata_last(void **state) {
  fixture *f = *state;
  hk_checkpoint_reader *r = NULL;
  hk_status st = HK_STATUS_INIT;
  char *path = test_path(f->dir, "future-3.safetensors");
  unsigned char data[4] = {0};
  write_file(path,
             "{\"x\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[0,4],\"sparsity\":{\"k\":[1,2]}},"
             "\"__metadata__\":{\"extra\":[1,{\"a\":\"}\"}],\"format\":\"hooked/7\",\"global_step\":2}}",
             data, sizeof data);
  assert_status(hk_checkpoint_reader_open(&r, &f->te->env, path, &st), &st, HK_FAILED_PRECONDITION,
                "\"hooked/7\", newer than this library reads");
  assert_non_null(strstr(st.message, "tensor 'x': unknown field"));
  assert_null(r);
  free(path);
}

/* Version 1 (and an unknown, non-numbered format) keeps DATA_LOSS for what it
 * does not know. */
static void test_reader__format_current_version_unknown_dtype_is_data_loss(void **state) {
  fixture *f = *state;
  hk_checkpoint_reader *r = NULL;
  hk_status st = HK_STATUS_INIT;
  char *path = test_path(f->dir, "old-1.safetensors");
  unsigned char data[4] = {0};
  write_file(path,
             "{\"x\":{\"dtype\":\"F8_E4M3\",\"shape\":[4],\"data_offsets\":[0,4]},"
             "\"__metadata__\":{\"format\":\"hooked/1\",\"global_step\":\"1\",\"crc32c:x\":\"00000000\"}}",
             data, sizeof data);
  assert_status(hk_checkpoint_reader_open(&r, &f->te->env, path, &st), &st, HK_DATA_LOSS, "unknown dtype");
  write_file(path,
             "{\"__metadata__\":{\"format\":\"hooked/x2\",\"global_step\":\"1\"},"
             "\"x\":{\"dtype\":\"F8_E4M3\",\"shape\":[4],\"data_offsets\":[0,4]}}",
             data, sizeof data);
  assert_status(hk_checkpoint_reader_open(&r, &f->te->env, path, &st), &st, HK_DATA_LOSS, "unknown dtype");
  assert_null(r);
  free(path);
}

int main(void) {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
  const struct CMUnitTest tests[] = {
      T(test_reader__refuses_each_mangled_field),
      T(test_reader__truncated_at_every_length),
      T(test_reader__hostile_header_lengths),
      T(test_reader__short_files),
      T(test_reader__crc_mismatch_found_by_read_and_verify),
      T(test_reader__recorded_crc_wrong),
      T(test_reader__file_shrinks_after_open),
      T(test_reader__verify_uses_a_bounded_buffer),
      T(test_reader__oom_loop),
      T(test_reader__fs_fault_sweep),
      T(test_reader__format_newer_version_with_new_dtype_is_failed_precondition),
      T(test_reader__format_newer_version_without_global_step),
      T(test_reader__format_newer_version_metadata_last),
      T(test_reader__format_current_version_unknown_dtype_is_data_loss),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
