/*
 * Tests of CRC-32C (checkpoint-format.md "__metadata__": Castagnoli,
 * reflected, init and final xor 0xFFFFFFFF) against the published check
 * value, RFC 3720 B.4 vectors and a bitwise reference over random buffers,
 * whichever implementation this CPU selects; and the fused copy+CRC a restore
 * reads tensors with (hk__crc32c_copy, H27: it must give exactly the plain
 * CRC) and the join of piece CRCs (hk__crc32c_combine).
 * tests/unit/crc32c_portable_main.c
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

#include "util/crc32c.h" /* hk__crc32c_copy, hk__crc32c_combine (crc32c.c is compiled in) */

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

/* ---- the fused copy + CRC (hk__crc32c_copy) ---------------------------------------- */

#define GUARD 0xA5

/* hk__crc32c_copy(seed, dst + doff, src + soff, n) against the plain CRC of
 * the same bytes; dst holds exactly the source bytes, and nothing around
 * them was written. */
static void check_copy(const unsigned char *src, size_t soff, unsigned char *dst, size_t cap, size_t doff, size_t n,
                       uint32_t seed) {
  assert_true(doff + n + 16 <= cap);
  memset(dst, GUARD, doff + n + 16);
  uint32_t got = hk__crc32c_copy(seed, dst + doff, src + soff, n);
  assert_int_equal(got, hk_crc32c_extend(seed, src + soff, n));
  assert_memory_equal(dst + doff, src + soff, n);
  for (size_t i = 0; i < doff; i++) assert_int_equal(dst[i], GUARD);
  for (size_t i = doff + n; i < doff + n + 16; i++) assert_int_equal(dst[i], GUARD);
}

static void test_crc32c__copy_equals_plain_crc_for_every_small_length_and_alignment(void **state) {
  enum { MAX = 1100 };
  unsigned char *src = malloc(MAX + 16), *dst = malloc(MAX + 48);
  (void)state;
  assert_non_null(src);
  assert_non_null(dst);
  fill_random(src, MAX + 16, 0xfeedULL);
  for (size_t soff = 0; soff < 16; soff++)
    for (size_t doff = 0; doff < 16; doff += (soff & 1) ? 5 : 1)
      for (size_t n = 0; n <= MAX; n += n < 80 ? 1 : 13) check_copy(src, soff, dst, MAX + 48, doff, n, 0);
  /* and against the bitwise definition, not only the other implementation */
  for (size_t n = 0; n <= 300; n++) {
    assert_int_equal(hk__crc32c_copy(0x1234567U, dst, src + 3, n), reference_crc(0x1234567U, src + 3, n));
    assert_memory_equal(dst, src + 3, n);
  }
  free(src);
  free(dst);
}

/* The three-stream path works on 3 x 256 and 3 x 8192 byte groups after
 * aligning the source: lengths around each, every source alignment, a few
 * destination alignments (page-aligned included: the two may alias in the
 * low 12 bits), a nonzero incoming CRC. */
static void test_crc32c__copy_equals_plain_crc_around_block_thresholds(void **state) {
  static const size_t bases[] = {768, 2 * 768, 5 * 768, 24576, 2 * 24576, 24576 + 768, 2 * 24576 + 3 * 768, 65536};
  static const int deltas[] = {-9, -8, -7, -1, 0, 1, 7, 8, 9, 15, 16, 17};
  static const size_t doffs[] = {0, 1, 7, 8, 63, 4096};
  size_t max = 65536 + 32;
  unsigned char *src = malloc(max + 16), *dst = malloc(max + 4096 + 48);
  (void)state;
  assert_non_null(src);
  assert_non_null(dst);
  fill_random(src, max + 16, 0xabcdef);
  for (size_t b = 0; b < sizeof bases / sizeof bases[0]; b++)
    for (size_t d = 0; d < sizeof deltas / sizeof deltas[0]; d++) {
      size_t n = (size_t)((long)bases[b] + deltas[d]);
      for (size_t soff = 0; soff < 9; soff++)
        for (size_t k = 0; k < sizeof doffs / sizeof doffs[0]; k++)
          check_copy(src, soff, dst, max + 4096 + 48, doffs[k], n, 0x89abcdefU);
    }
  free(src);
  free(dst);
}

/* The VPCLMULQDQ path (AVX-512 CPUs) folds 256-byte rounds, then 64- and
 * 16-byte blocks, then a tail of crc32 instructions: every length from 240
 * to 1300 bytes (each round, block and tail count), a few alignments. */
static void test_crc32c__copy_equals_plain_crc_at_every_fold_boundary(void **state) {
  enum { MAX = 1300 };
  static const size_t offs[][2] = {{0, 0}, {1, 0}, {0, 3}, {7, 9}, {13, 64}};
  unsigned char *src = malloc(MAX + 16), *dst = malloc(MAX + 96);
  (void)state;
  assert_non_null(src);
  assert_non_null(dst);
  fill_random(src, MAX + 16, 0x0f01d);
  for (size_t o = 0; o < sizeof offs / sizeof offs[0]; o++)
    for (size_t n = 240; n <= MAX; n++) check_copy(src, offs[o][0], dst, MAX + 96, offs[o][1], n, 0xa5a5a5a5U);
  free(src);
  free(dst);
}

static void test_crc32c__copy_of_multi_mebibyte_buffers_and_a_flipped_bit(void **state) {
  size_t n = ((size_t)5 << 20) + 12345;
  unsigned char *src = malloc(n + 8), *dst = malloc(n + 64);
  (void)state;
  assert_non_null(src);
  assert_non_null(dst);
  fill_random(src, n + 8, 0x5eed5);
  for (size_t off = 0; off < 8; off += 3) {
    uint32_t want = reference_table_crc(0, src + off, n);
    assert_int_equal(hk__crc32c_copy(0, dst + 5, src + off, n), want);
    assert_memory_equal(dst + 5, src + off, n);
    /* in pieces, extending the CRC */
    uint32_t c = 0;
    for (size_t at = 0, piece = 1; at < n; piece = piece * 7 + 3) {
      size_t len = piece % 100003 < n - at ? piece % 100003 : n - at;
      c = hk__crc32c_copy(c, dst + at, src + off + at, len);
      at += len;
    }
    assert_int_equal(c, want);
  }
  uint32_t before = hk__crc32c_copy(0, dst, src, n);
  src[n / 3] ^= 0x01;
  assert_int_not_equal(hk__crc32c_copy(0, dst, src, n), before);
  assert_int_equal(dst[n / 3], src[n / 3]);
  assert_int_equal(hk__crc32c_copy(0x77U, NULL, src, 0), 0x77U);
  free(src);
  free(dst);
}

/* ---- joining piece CRCs (hk__crc32c_combine) --------------------------------------- */

static void test_crc32c__combine_of_pieces_equals_the_whole(void **state) {
  enum { N = 1000 };
  unsigned char buf[N];
  (void)state;
  fill_random(buf, N, 99);
  uint32_t whole = hk_crc32c_extend(0, buf, N);
  for (size_t split = 0; split <= N; split++) {
    uint32_t a = hk_crc32c_extend(0, buf, split);
    uint32_t b = hk_crc32c_extend(0, buf + split, N - split);
    assert_int_equal(hk__crc32c_combine(a, b, N - split), whole);
  }
  /* many pieces, joined left to right */
  uint32_t c = hk_crc32c_extend(0, buf, 0);
  for (size_t at = 0, len = 1; at < N; at += len, len = len * 3 % 97 + 1) {
    size_t k = len < N - at ? len : N - at;
    c = hk__crc32c_combine(c, hk_crc32c_extend(0, buf + at, k), k);
  }
  assert_int_equal(c, whole);
}

static void test_crc32c__combine_of_mebibyte_pieces(void **state) {
  size_t n = ((size_t)9 << 20) + 77, piece = (size_t)2 << 20;
  unsigned char *buf = malloc(n);
  (void)state;
  assert_non_null(buf);
  fill_random(buf, n, 0x1badb002);
  uint32_t c = 0;
  for (size_t at = 0; at < n; at += piece) {
    size_t k = piece < n - at ? piece : n - at;
    c = at == 0 ? hk_crc32c_extend(0, buf, k) : hk__crc32c_combine(c, hk_crc32c_extend(0, buf + at, k), k);
  }
  assert_int_equal(c, reference_table_crc(0, buf, n));
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
      cmocka_unit_test(test_crc32c__copy_equals_plain_crc_for_every_small_length_and_alignment),
      cmocka_unit_test(test_crc32c__copy_equals_plain_crc_around_block_thresholds),
      cmocka_unit_test(test_crc32c__copy_equals_plain_crc_at_every_fold_boundary),
      cmocka_unit_test(test_crc32c__copy_of_multi_mebibyte_buffers_and_a_flipped_bit),
      cmocka_unit_test(test_crc32c__combine_of_pieces_equals_the_whole),
      cmocka_unit_test(test_crc32c__combine_of_mebibyte_pieces),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
