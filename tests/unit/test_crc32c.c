/*
 * Tests of CRC-32C (checkpoint-format.md "__metadata__": Castagnoli,
 * reflected, init and final xor 0xFFFFFFFF) against the published check
 * value, RFC 3720 B.4 vectors and a bitwise reference over random buffers;
 * and the fused copy+CRC a restore reads tensors with (hk__crc32c_copy, H27:
 * it must give exactly the plain CRC) and the join of piece CRCs
 * (hk__crc32c_combine). The whole group runs once with the implementation
 * the library picks by itself, then once for every implementation this CPU
 * can run, each forced with hk__crc32c_force (on an AVX-512 machine with
 * VPCLMULQDQ: vpclmulqdq, sse4.2+pclmul, sse4.2 and portable; on 64-bit ARM
 * with PMULL: armv8-crc+pmull, armv8-crc and portable).
 * tests/unit/crc32c_portable_main.c includes this file with
 * HK_CRC32C_TEST_PORTABLE to run the same tests against the portable path
 * compiled on its own.
 *
 * HK_CRC32C_TEST_EXPECT, when set, names the implementation the library
 * must pick by itself on this machine (CI sets it where it knows the CPU,
 * as under qemu-aarch64, so that a detection falling back to the table
 * fails); the portable-only build ignores it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <hooked/checkpoint.h>

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

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

/* Every length up to 4096 (each tail, chain and three-stream block count
 * below the long blocks) at odd start alignments, against a byte table
 * built from the definition, with a nonzero incoming CRC. */
static void test_crc32c__every_length_to_4096_at_odd_alignments(void **state) {
  enum { MAX = 4096 };
  static const size_t offs[] = {1, 3, 5, 7, 9, 13};
  unsigned char *buf = malloc(MAX + 16);
  (void)state;
  assert_non_null(buf);
  fill_random(buf, MAX + 16, 0x4096);
  for (size_t o = 0; o < sizeof offs / sizeof offs[0]; o++)
    for (size_t n = 0; n <= MAX; n++)
      assert_int_equal(hk_crc32c_extend(0xdeadbeefU, buf + offs[o], n),
                       reference_table_crc(0xdeadbeefU, buf + offs[o], n));
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

/* The path hk__crc32c_force set for this run of the group; HK__CRC32C_AUTO
 * in the run with the library's own choice. */
static int forced_path;

static const char *const path_names[HK__CRC32C_PATH_COUNT] = {
    [HK__CRC32C_AUTO] = "(auto)",
    [HK__CRC32C_PORTABLE] = "portable",
    [HK__CRC32C_SSE42] = "sse4.2",
    [HK__CRC32C_SSE42_PCLMUL] = "sse4.2+pclmul",
    [HK__CRC32C_VPCLMULQDQ] = "vpclmulqdq",
    [HK__CRC32C_ARMV8_CRC] = "armv8-crc",
    [HK__CRC32C_ARMV8_CRC_PMULL] = "armv8-crc+pmull",
};

/* What the library must pick by itself here, from the CPU's own report. */
static const char *expected_auto_name(void) {
#ifdef HK_CRC32C_TEST_PORTABLE
  return "portable";
#elif defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("sse4.2")) return "portable";
  if (!__builtin_cpu_supports("pclmul")) return "sse4.2";
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vpclmulqdq")) return "vpclmulqdq";
  return "sse4.2+pclmul";
#elif defined(__aarch64__) && defined(__linux__)
  unsigned long hwcap = getauxval(AT_HWCAP);
  if (!(hwcap & HWCAP_CRC32)) return "portable";
  return (hwcap & HWCAP_PMULL) ? "armv8-crc+pmull" : "armv8-crc";
#else
  return "portable";
#endif
}

/* The name says the path the CRC runs: the CPU's best when nothing is
 * forced (and what HK_CRC32C_TEST_EXPECT says, when set), else the forced
 * one. */
static void test_crc32c__implementation_names_the_path_in_use(void **state) {
  const char *impl = hk_crc32c_implementation();
  (void)state;
  assert_non_null(impl);
  if (forced_path == HK__CRC32C_AUTO) {
    assert_string_equal(impl, expected_auto_name());
#ifndef HK_CRC32C_TEST_PORTABLE
    const char *expect = getenv("HK_CRC32C_TEST_EXPECT");
    if (expect && *expect) assert_string_equal(impl, expect);
#endif
  } else {
    assert_string_equal(impl, path_names[forced_path]);
  }
  /* stable across calls */
  assert_ptr_equal(hk_crc32c_implementation(), impl);
}

/* An ARM CPU gets the CRC32 extension's path only when its hardware
 * capabilities list the extension, and PMULL's only with PMULL too (the
 * bits the kernel reports; checked on every architecture, as qemu emulates
 * no ARM CPU without PMULL). */
static void test_crc32c__arm_path_follows_the_hardware_capabilities(void **state) {
  const unsigned long pmull = 1UL << 4, crc32 = 1UL << 7, aes = 1UL << 3, fp = 1UL << 0;
  (void)state;
  assert_int_equal(hk__crc32c_arm_path(0), HK__CRC32C_PORTABLE);
  assert_int_equal(hk__crc32c_arm_path(fp | aes | pmull), HK__CRC32C_PORTABLE);
  assert_int_equal(hk__crc32c_arm_path(crc32), HK__CRC32C_ARMV8_CRC);
  assert_int_equal(hk__crc32c_arm_path(fp | aes | crc32), HK__CRC32C_ARMV8_CRC);
  assert_int_equal(hk__crc32c_arm_path(crc32 | pmull), HK__CRC32C_ARMV8_CRC_PMULL);
  assert_int_equal(hk__crc32c_arm_path(~0UL), HK__CRC32C_ARMV8_CRC_PMULL);
#if defined(__aarch64__) && defined(__linux__)
  assert_int_equal(pmull, HWCAP_PMULL);
  assert_int_equal(crc32, HWCAP_CRC32);
#endif
}

/* Paths this build or CPU cannot run are refused and change nothing. */
static void test_crc32c__force_refuses_paths_the_cpu_lacks(void **state) {
  const char *before = hk_crc32c_implementation();
  (void)state;
  assert_int_equal(hk__crc32c_force(HK__CRC32C_PATH_COUNT), 0);
  assert_int_equal(hk__crc32c_force(-1), 0);
#if !defined(__aarch64__) || defined(HK_CRC32C_TEST_PORTABLE)
  assert_int_equal(hk__crc32c_force(HK__CRC32C_ARMV8_CRC), 0);
  assert_int_equal(hk__crc32c_force(HK__CRC32C_ARMV8_CRC_PMULL), 0);
#endif
#if !defined(__x86_64__) || defined(HK_CRC32C_TEST_PORTABLE)
  assert_int_equal(hk__crc32c_force(HK__CRC32C_SSE42), 0);
  assert_int_equal(hk__crc32c_force(HK__CRC32C_VPCLMULQDQ), 0);
#endif
  assert_ptr_equal(hk_crc32c_implementation(), before);
}

/* Every path this CPU can run gives the same CRC and the same copy as the
 * portable one, on a buffer long enough for each folding and block step. */
static void test_crc32c__every_path_agrees_with_the_portable_one(void **state) {
  size_t n = ((size_t)1 << 18) + 4093;
  unsigned char *buf = malloc(n + 8), *dst = malloc(n + 8);
  uint32_t want, want_part;
  int ran = 0;
  (void)state;
  assert_non_null(buf);
  assert_non_null(dst);
  fill_random(buf, n + 8, 0xa9e);
  assert_int_equal(hk__crc32c_force(HK__CRC32C_PORTABLE), 1);
  want = hk_crc32c_extend(0x31415926U, buf + 3, n);
  want_part = hk_crc32c_extend(0, buf + 1, 777);
  for (int p = HK__CRC32C_PORTABLE; p < HK__CRC32C_PATH_COUNT; p++) {
    if (!hk__crc32c_force(p)) continue;
    ran++;
    assert_string_equal(hk_crc32c_implementation(), path_names[p]);
    assert_int_equal(hk_crc32c_extend(0x31415926U, buf + 3, n), want);
    assert_int_equal(hk_crc32c_extend(0, buf + 1, 777), want_part);
    memset(dst, 0, n + 8);
    assert_int_equal(hk__crc32c_copy(0x31415926U, dst + 5, buf + 3, n), want);
    assert_memory_equal(dst + 5, buf + 3, n);
  }
  assert_true(ran >= 1);
  free(buf);
  free(dst);
}

/* Before each test: the run's path (a test that forces others, and fails
 * before it puts the run's back, must not change the tests after it). */
static int use_forced_path(void **state) {
  (void)state;
  return hk__crc32c_force(forced_path) ? 0 : -1;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_crc32c__check_value, use_forced_path),
      cmocka_unit_test_setup(test_crc32c__empty_input, use_forced_path),
      cmocka_unit_test_setup(test_crc32c__rfc3720_vectors, use_forced_path),
      cmocka_unit_test_setup(test_crc32c__matches_bitwise_reference, use_forced_path),
      cmocka_unit_test_setup(test_crc32c__pieces_equal_one_shot_at_every_split, use_forced_path),
      cmocka_unit_test_setup(test_crc32c__large_buffer, use_forced_path),
      cmocka_unit_test_setup(test_crc32c__every_small_length_at_every_offset, use_forced_path),
      cmocka_unit_test_setup(test_crc32c__every_length_to_4096_at_odd_alignments, use_forced_path),
      cmocka_unit_test_setup(test_crc32c__lengths_around_block_thresholds, use_forced_path),
      cmocka_unit_test_setup(test_crc32c__multi_mebibyte_buffers, use_forced_path),
      cmocka_unit_test_setup(test_crc32c__implementation_names_the_path_in_use, use_forced_path),
      cmocka_unit_test_setup(test_crc32c__force_refuses_paths_the_cpu_lacks, use_forced_path),
      cmocka_unit_test_setup(test_crc32c__arm_path_follows_the_hardware_capabilities, use_forced_path),
      cmocka_unit_test_setup(test_crc32c__every_path_agrees_with_the_portable_one, use_forced_path),
      cmocka_unit_test_setup(test_crc32c__copy_equals_plain_crc_for_every_small_length_and_alignment, use_forced_path),
      cmocka_unit_test_setup(test_crc32c__copy_equals_plain_crc_around_block_thresholds, use_forced_path),
      cmocka_unit_test_setup(test_crc32c__copy_equals_plain_crc_at_every_fold_boundary, use_forced_path),
      cmocka_unit_test_setup(test_crc32c__copy_of_multi_mebibyte_buffers_and_a_flipped_bit, use_forced_path),
      cmocka_unit_test_setup(test_crc32c__combine_of_pieces_equals_the_whole, use_forced_path),
      cmocka_unit_test_setup(test_crc32c__combine_of_mebibyte_pieces, use_forced_path),
  };
  int failed = 0;
  /* First the library's own choice, then each path this CPU can run. */
  for (int p = HK__CRC32C_AUTO; p < HK__CRC32C_PATH_COUNT; p++) {
    char name[64];
    if (!hk__crc32c_force(p)) {
      printf("crc32c: %s: not on this CPU or build, skipped\n", path_names[p]);
      continue;
    }
    forced_path = p;
    snprintf(name, sizeof name, "crc32c with %s%s", hk_crc32c_implementation(),
             p == HK__CRC32C_AUTO ? " (the library's own choice)" : "");
    printf("%s\n", name);
    failed += cmocka_run_group_tests_name(name, tests, NULL, NULL);
  }
  return failed != 0;
}
