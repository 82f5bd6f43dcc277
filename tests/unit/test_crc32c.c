/*
 * Tests of CRC-32C (checkpoint-format.md "__metadata__": Castagnoli,
 * reflected, init and final xor 0xFFFFFFFF) against the published check
 * value, RFC 3720 B.4 vectors and a bitwise reference over random buffers,
 * whichever implementation this CPU selects. tests/unit/crc32c_portable_main.c
 * includes this file with HK_CRC32C_TEST_PORTABLE to run the same tests
 * against the portable path compiled on its own.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <hooked/checkpoint.h>

/* One bit at a time, straight from the definition. */
static uint32_t reference_crc(uint32_t crc, const unsigned char *p, size_t n) {
  crc = ~crc;
  for (size_t i = 0; i < n; i++) {
    crc ^= p[i];
    for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0x82F63B78U & (0U - (crc & 1U)));
  }
  return ~crc;
}

/* A byte table built from reference_crc, for the multi-MiB cases where the
 * bitwise loop would dominate the run time under sanitizers. */
static uint32_t reference_table_crc(uint32_t crc, const unsigned char *p, size_t n) {
  uint32_t table[256];
  for (uint32_t i = 0; i < 256; i++) {
    unsigned char b = (unsigned char)i;
    /* one byte from a pre-inverted zero state: the classic table entry */
    table[i] = ~reference_crc(0xffffffffU, &b, 1);
  }
  crc = ~crc;
  for (size_t i = 0; i < n; i++) crc = (crc >> 8) ^ table[(crc ^ p[i]) & 0xff];
  return ~crc;
}

static uint64_t rng_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void fill_random(unsigned char *p, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(rng_next(&seed) >> 24);
}

static void test_crc32c__check_value(void **state) {
  (void)state;
  assert_int_equal(hk_crc32c_extend(0, "123456789", 9), 0xe3069283U);
  assert_int_equal(reference_crc(0, (const unsigned char *)"123456789", 9), 0xe3069283U);
}

static void test_crc32c__empty_input(void **state) {
  (void)state;
  assert_int_equal(hk_crc32c_extend(0, "", 0), 0);
  assert_int_equal(hk_crc32c_extend(0, NULL, 0), 0);
  assert_int_equal(hk_crc32c_extend(0xe3069283U, NULL, 0), 0xe3069283U);
}

static void test_crc32c__rfc3720_vectors(void **state) {
  unsigned char buf[32];
  (void)state;
  memset(buf, 0, sizeof buf);
  assert_int_equal(hk_crc32c_extend(0, buf, sizeof buf), 0x8a9136aaU);
  memset(buf, 0xff, sizeof buf);
  assert_int_equal(hk_crc32c_extend(0, buf, sizeof buf), 0x62a8ab43U);
  for (int i = 0; i < 32; i++) buf[i] = (unsigned char)i;
  assert_int_equal(hk_crc32c_extend(0, buf, sizeof buf), 0x46dd794eU);
  for (int i = 0; i < 32; i++) buf[i] = (unsigned char)(31 - i);
  assert_int_equal(hk_crc32c_extend(0, buf, sizeof buf), 0x113fdb5cU);
}

static void test_crc32c__matches_bitwise_reference(void **state) {
  enum { MAX = 4099 };
  unsigned char *buf = malloc(MAX + 16);
  (void)state;
  assert_non_null(buf);
  fill_random(buf, MAX + 16, 0x9e3779b97f4a7c15ULL);
  for (size_t n = 0; n <= MAX; n = n < 80 ? n + 1 : n * 3 / 2 + 1) {
    /* every start alignment */
    for (size_t off = 0; off < 16; off++)
      assert_int_equal(hk_crc32c_extend(0, buf + off, n), reference_crc(0, buf + off, n));
  }
  free(buf);
}

static void test_crc32c__pieces_equal_one_shot_at_every_split(void **state) {
  enum { N = 301 };
  unsigned char buf[N + 7];
  (void)state;
  fill_random(buf, sizeof buf, 42);
  for (size_t off = 0; off < 8; off++) {
    uint32_t whole = hk_crc32c_extend(0, buf + off, N);
    assert_int_equal(whole, reference_crc(0, buf + off, N));
    for (size_t split = 0; split <= N; split++) {
      uint32_t c = hk_crc32c_extend(0, buf + off, split);
      c = hk_crc32c_extend(c, buf + off + split, N - split);
      assert_int_equal(c, whole);
    }
  }
  /* three pieces */
  uint32_t whole = hk_crc32c_extend(0, buf, N);
  for (size_t a = 0; a <= N; a += 7)
    for (size_t b = a; b <= N; b += 11) {
      uint32_t c = hk_crc32c_extend(0, buf, a);
      c = hk_crc32c_extend(c, buf + a, b - a);
      c = hk_crc32c_extend(c, buf + b, N - b);
      assert_int_equal(c, whole);
    }
}

static void test_crc32c__large_buffer(void **state) {
  size_t n = (size_t)1 << 20;
  unsigned char *buf = malloc(n);
  (void)state;
  assert_non_null(buf);
  fill_random(buf, n, 7);
  assert_int_equal(hk_crc32c_extend(0, buf, n), reference_crc(0, buf, n));
  free(buf);
}

static void test_crc32c__every_small_length_at_every_offset(void **state) {
  enum { MAX = 1024 };
  unsigned char *buf = malloc(MAX + 16);
  (void)state;
  assert_non_null(buf);
  fill_random(buf, MAX + 16, 0xc0ffee);
  for (size_t off = 0; off < 16; off++)
    for (size_t n = 0; n <= MAX; n++)
      assert_int_equal(hk_crc32c_extend(0, buf + off, n), reference_crc(0, buf + off, n));
  free(buf);
}

/* The SSE4.2 path switches from one crc32q chain to three streams over
 * blocks of 3 x 256 and 3 x 8192 bytes after aligning the start to 8 bytes:
 * lengths just around one or more of each block group, at every start
 * alignment, with a nonzero incoming crc so the first stream's start value
 * matters. */
static void test_crc32c__lengths_around_block_thresholds(void **state) {
  static const size_t bases[] = {768, 2 * 768, 5 * 768, 24576, 2 * 24576, 24576 + 768, 2 * 24576 + 3 * 768, 65536};
  static const int deltas[] = {-9, -8, -7, -1, 0, 1, 7, 8, 9, 15, 16, 17};
  size_t max = 65536 + 32;
  unsigned char *buf = malloc(max);
  (void)state;
  assert_non_null(buf);
  fill_random(buf, max, 0xdecafbad);
  for (size_t b = 0; b < sizeof bases / sizeof bases[0]; b++)
    for (size_t d = 0; d < sizeof deltas / sizeof deltas[0]; d++) {
      size_t n = (size_t)((long)bases[b] + deltas[d]);
      for (size_t off = 0; off < 9; off++) {
        uint32_t want = reference_table_crc(0x12345678U, buf + off, n);
        assert_int_equal(hk_crc32c_extend(0x12345678U, buf + off, n), want);
      }
    }
  free(buf);
}

static void test_crc32c__multi_mebibyte_buffers(void **state) {
  size_t n = ((size_t)5 << 20) + 12345;
  unsigned char *buf = malloc(n + 8);
  (void)state;
  assert_non_null(buf);
  fill_random(buf, n + 8, 0x5eed);
  for (size_t off = 0; off < 8; off += 3) {
    uint32_t want = reference_table_crc(0, buf + off, n);
    assert_int_equal(hk_crc32c_extend(0, buf + off, n), want);
    /* the same bytes in pieces that each cross block boundaries */
    uint32_t c = 0;
    for (size_t at = 0, piece = 1; at < n; piece = piece * 7 + 3) {
      size_t len = piece % 100003 < n - at ? piece % 100003 : n - at;
      c = hk_crc32c_extend(c, buf + off + at, len);
      at += len;
    }
    assert_int_equal(c, want);
  }
  /* a one-bit change anywhere changes the result */
  uint32_t before = hk_crc32c_extend(0, buf, n);
  buf[n / 2 + 1] ^= 0x10;
  assert_int_not_equal(hk_crc32c_extend(0, buf, n), before);
  assert_int_equal(hk_crc32c_extend(0, buf, n), reference_table_crc(0, buf, n));
  free(buf);
}

static void test_crc32c__implementation_name(void **state) {
  const char *impl = hk_crc32c_implementation();
  (void)state;
  assert_non_null(impl);
#ifdef HK_CRC32C_TEST_PORTABLE
  assert_string_equal(impl, "portable");
#else
  assert_true(strcmp(impl, "sse4.2") == 0 || strcmp(impl, "portable") == 0);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  assert_string_equal(impl, __builtin_cpu_supports("sse4.2") ? "sse4.2" : "portable");
#endif
#endif
  /* stable across calls */
  assert_ptr_equal(hk_crc32c_implementation(), impl);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_crc32c__check_value),
      cmocka_unit_test(test_crc32c__empty_input),
      cmocka_unit_test(test_crc32c__rfc3720_vectors),
      cmocka_unit_test(test_crc32c__matches_bitwise_reference),
      cmocka_unit_test(test_crc32c__pieces_equal_one_shot_at_every_split),
      cmocka_unit_test(test_crc32c__large_buffer),
      cmocka_unit_test(test_crc32c__every_small_length_at_every_offset),
      cmocka_unit_test(test_crc32c__lengths_around_block_thresholds),
      cmocka_unit_test(test_crc32c__multi_mebibyte_buffers),
      cmocka_unit_test(test_crc32c__implementation_name),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
