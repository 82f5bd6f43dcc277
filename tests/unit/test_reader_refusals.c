/*
 * Tests of the checkpoint reader (checkpoint-format.md "Reading", contract
 * H31/H34 "verifies"): files are built byte by byte here (the internal
 * writer is not public), so every field can be mangled; the Saver tests at
 * the end check that the writer's files parse and are byte-identical.
 */
#include "fake_executor.h"
#include "faulty_fs.h"
#include "test_env.h"
#include "tmpdir.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct fixture {
  test_env *te;
  char *dir;
  char *path; /* <dir>/ck.safetensors */
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  assert_non_null(f);
  f->te = test_env_new();
  f->dir = test_tmpdir_new("reader");
  f->path = test_path(f->dir, "ck.safetensors");
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  int rc = test_env_release(f->te);
  test_tmpdir_free(f->dir);
  free(f->path);
  free(f);
  return rc;
}

/* ---- a test-only writer ------------------------------------------------------- */

/* 8-byte little-endian `hlen`, then the JSON, then the data. `hlen` may lie. */
static void write_file_len(const char *path, uint64_t hlen, const char *json, const void *data, size_t n) {
  size_t jl = strlen(json);
  unsigned char *buf = malloc(8 + jl + n + 1);
  assert_non_null(buf);
  for (int i = 0; i < 8; i++) buf[i] = (unsigned char)(hlen >> (8 * i));
  memcpy(buf + 8, json, jl);
  if (n) memcpy(buf + 8 + jl, data, n);
  assert_int_equal(test_write_file(path, buf, 8 + jl + n), 0);
  free(buf);
}

static void write_file(const char *path, const char *json, const void *data, size_t n) {
  write_file_len(path, strlen(json), json, data, n);
}

/* Replace every "{CA}" / "{CB}" in tmpl by the 8-hex-digit CRCs ca and cb. */
static char *subst_crcs(const char *tmpl, uint32_t ca, uint32_t cb) {
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

static uint32_t crc(const void *p, size_t n) { return hk_crc32c_extend(0, p, n); }

/* The base checkpoint: "a" F32 [2] = {1.5, -2}, "b" I64 [] = 42. */
static const float A_VALS[2] = {1.5f, -2.0f};
static const int64_t B_VAL = 42;

#define META_AB \
  "\"__metadata__\":{\"format\":\"hooked/1\",\"global_step\":\"7\",\"crc32c:a\":\"{CA}\",\"crc32c:b\":\"{CB}\"}"
#define ENT_A "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}"
#define ENT_B "\"b\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[8,16]}"

static void base_data(unsigned char out[16]) {
  memcpy(out, A_VALS, 8); /* the test assumes a little-endian host, as the format's data is */
  memcpy(out + 8, &B_VAL, 8);
}

/* Write tmpl (with CRC placeholders) over the base data plus `extra` bytes. */
static void write_variant(const char *path, const char *tmpl, size_t data_len) {
  unsigned char data[64];
  memset(data, 0, sizeof data);
  base_data(data);
  char *json = subst_crcs(tmpl, crc(data, 8), crc(data + 8, 8));
  write_file(path, json, data, data_len);
  free(json);
}

static hk_code open_reader(fixture *f, hk_checkpoint_reader **r, hk_status *st) {
  return hk_checkpoint_reader_open(r, &f->te->env, f->path, st);
}

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
  assert_ok(hk_checkpoint_reader_entry(r, 0, &e, &st), &st);
  assert_string_equal(e.name, "a");
  assert_int_equal(e.dtype, HK_DTYPE_F32);
  assert_int_equal(e.rank, 1);
  assert_int_equal(e.dims[0], 2);
  assert_int_equal(e.offset, 8 + hlen);
  assert_int_equal(e.nbytes, 8);
  assert_int_equal(e.crc32c, crc(A_VALS, 8));
  assert_ok(hk_checkpoint_reader_entry(r, 1, &e, &st), &st);
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
  assert_ok(hk_checkpoint_reader_entry(r, 0, &e, &st), &st);
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
      assert_ok(hk_checkpoint_reader_entry(r, idx, &e, &st), &st);
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
    assert_ok(hk_checkpoint_reader_entry(r, i - 1, &p, &st), &st);
    assert_ok(hk_checkpoint_reader_entry(r, i, &q, &st), &st);
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
  assert_ok(hk_checkpoint_reader_entry(r, 0, &e, &st), &st);
  assert_string_equal(e.name, "digits");
  assert_int_equal(e.crc32c, 0xe3069283U);
  assert_int_equal(e.offset, 8 + padded);
  assert_int_equal(e.offset % 64, 0);
  assert_ok(hk_checkpoint_reader_read(r, 0, got, sizeof got, &st), &st);
  assert_memory_equal(got, "123456789", 9);
  assert_ok(hk_checkpoint_reader_entry(r, 1, &e, &st), &st);
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
  assert_status(hk_checkpoint_reader_entry(r, 2, &e, &st), &st, HK_OUT_OF_RANGE, f->path);
  assert_status(hk_checkpoint_reader_entry(NULL, 0, &e, &st), &st, HK_INVALID_ARGUMENT, NULL);
  assert_status(hk_checkpoint_reader_entry(r, 0, NULL, &st), &st, HK_INVALID_ARGUMENT, NULL);
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

/* ---- files the Saver writes (hk__ckpt_write through hk_saver_save) -------------------- */

typedef struct saved_graph {
  hk_graph *g;
  hk_raw_session *rs;
  hk_saver *saver;
} saved_graph;

static void saved_graph_open(fixture *f, saved_graph *sg, const char *extra_name) {
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

static void saved_graph_close(saved_graph *sg) {
  hk_saver_free(sg->saver);
  hk_raw_session_free(sg->rs);
  hk_graph_free(sg->g);
}

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
  assert_ok(hk_saver_save(sg.saver, sg.rs, save_path, 5, HK_SAVE_NO_STATE, &prefix, &st), &st);
  char *first = test_read_file(data_path, &n1);
  assert_non_null(first);

  hl = (size_t)snprintf(header, sizeof header,
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
  assert_ok(hk_saver_save(sg.saver, sg.rs, save_path, 5, HK_SAVE_NO_STATE, &prefix, &st), &st);
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
  assert_status(open_reader(f, &r, &st), &st, HK_DATA_LOSS, "tensor 'a': \"global_step_tensor\" names it, but it is "
                                                                "not an integer scalar (F32, rank 1)");
  write_step_variant(f, "42", NULL, "zz");
  assert_status(open_reader(f, &r, &st), &st, HK_DATA_LOSS, "tensor 'zz': \"global_step_tensor\" names it, but the "
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
  assert_ok(hk_saver_save(sg.saver, sg.rs, save_path, 7, HK_SAVE_NO_STATE, &prefix, &st), &st);
  assert_ok(hk_saver_save(sg.saver, sg.rs, save_path, 5, HK_SAVE_NO_STATE, &prefix, &st), &st);
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
  snprintf(want, sizeof want, "Checkpoint %s is corrupt: its global_step is 8 but tensor 'global_step', its global-step "
           "tensor (global_step_tensor), holds 7", p7);
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
  assert_ok(hk_saver_save(saver, rs, save_path, 9, HK_SAVE_NO_STATE, &prefix, &st), &st);

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
      T(test_reader__opens_base_file),
      T(test_reader__prefix_gets_the_extension),
      T(test_reader__accepts_whitespace_and_any_order),
      T(test_reader__tensors_in_any_data_order),
      T(test_reader__round_trip_every_dtype),
      T(test_reader__golden_small_checkpoint),
      T(test_reader__escaped_names),
      T(test_reader__refuses_each_mangled_field),
      T(test_reader__truncated_at_every_length),
      T(test_reader__hostile_header_lengths),
      T(test_reader__short_files),
      T(test_reader__crc_mismatch_found_by_read_and_verify),
      T(test_reader__recorded_crc_wrong),
      T(test_reader__file_shrinks_after_open),
      T(test_reader__verify_uses_a_bounded_buffer),
      T(test_reader__arguments),
      T(test_reader__oom_loop),
      T(test_reader__fs_fault_sweep),
      T(test_reader__saver_file_is_golden_and_deterministic),
      T(test_reader__saver_escapes_names),
      T(test_reader__global_step_tensor_must_hold_the_header_step),
      T(test_reader__global_step_crc_covers_the_header_step),
      T(test_reader__saver_names_its_global_step_tensor),
      T(test_reader__format_newer_version_with_new_dtype_is_failed_precondition),
      T(test_reader__format_newer_version_without_global_step),
      T(test_reader__format_newer_version_metadata_last),
      T(test_reader__format_current_version_unknown_dtype_is_data_loss),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
