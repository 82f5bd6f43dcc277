/*
 * CRC-32C on x86-64: the SSE4.2 crc32 instruction (three interleaved
 * streams joined with PCLMULQDQ when the CPU has that too), and with
 * AVX-512 and VPCLMULQDQ the message folded 64 bytes per instruction; each
 * plain and fused with a copy. Every function carries its own target
 * attribute, so the file builds with the baseline flags and crc32c.c calls
 * a function only on a CPU hk__crc32c_x86_detect() says has its
 * instructions. On other architectures the file compiles to nothing.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "util/crc32c_internal.h"

#ifdef HK_CRC32C_X86
#include <immintrin.h>
#include <nmmintrin.h>
#include <string.h>
#include <wmmintrin.h>

/* One dependent chain of crc32q: 8 bytes per instruction latency (3
 * cycles). Used for short inputs, for the tail after the three-stream
 * blocks and on SSE4.2 CPUs without PCLMULQDQ. */
__attribute__((target("sse4.2"))) static uint64_t crc32c_sse42_chain(uint64_t c, const unsigned char *p, size_t n) {
  while (n >= 32) {
    uint64_t w0, w1, w2, w3;
    memcpy(&w0, p, 8);
    memcpy(&w1, p + 8, 8);
    memcpy(&w2, p + 16, 8);
    memcpy(&w3, p + 24, 8);
    c = _mm_crc32_u64(c, w0);
    c = _mm_crc32_u64(c, w1);
    c = _mm_crc32_u64(c, w2);
    c = _mm_crc32_u64(c, w3);
    p += 32;
    n -= 32;
  }
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    c = _mm_crc32_u64(c, w);
    p += 8;
    n -= 8;
  }
  while (n-- > 0) c = _mm_crc32_u8((uint32_t)c, *p++);
  return c;
}

__attribute__((target("sse4.2"))) uint32_t hk__crc32c_sse42(uint32_t crc, const unsigned char *p, size_t n) {
  uint64_t c = crc;
  while (n > 0 && ((uintptr_t)p & 7) != 0) {
    c = _mm_crc32_u8((uint32_t)c, *p++);
    n--;
  }
  return (uint32_t)crc32c_sse42_chain(c, p, n);
}

/*
 * Three streams over adjacent blocks keep the crc32 unit busy every cycle
 * instead of every third. The streams are then joined with
 *   crc(A B C) = crc(A) * x^(16L) + crc(B) * x^(8L) + crc(C)   (mod P)
 * for blocks of L bytes, B and C started from 0. In the reflected bit order
 * a carry-less product of two 32-bit values is the polynomial product times
 * x, and crc32q of a 64-bit value multiplies by x^32 and reduces, so
 * crc32q(0, clmul(a, x^(n-33) mod P)) is a * x^n mod P. The constants below
 * are x^(16L-33) and x^(8L-33) mod P for each block size (any of them can
 * be rebuilt by stepping x^0 = 0x80000000 through v = v >> 1 ^ (v & 1 ?
 * 0x82F63B78 : 0) n-33 times); tests that cross every block boundary
 * catch a wrong one.
 */
enum { CRC32C_LONG = 8192, CRC32C_SHORT = 256 };
#define CRC32C_LONG_K_A 0x1dc403ccU
#define CRC32C_LONG_K_B 0x54a86326U
#define CRC32C_SHORT_K_A 0xdd7e3b0cU
#define CRC32C_SHORT_K_B 0xb9e02b86U

/* Inlined with a constant block so each size gets its own unrolled loop. */
__attribute__((target("sse4.2,pclmul"), always_inline)) static inline uint64_t crc32c_three_blocks(
    uint64_t c0, const unsigned char *p, size_t block, uint32_t k_a, uint32_t k_b) {
  uint64_t c1 = 0, c2 = 0;
  for (size_t i = 0; i < block; i += 8) {
    uint64_t w0, w1, w2;
    memcpy(&w0, p + i, 8);
    memcpy(&w1, p + block + i, 8);
    memcpy(&w2, p + 2 * block + i, 8);
    c0 = _mm_crc32_u64(c0, w0);
    c1 = _mm_crc32_u64(c1, w1);
    c2 = _mm_crc32_u64(c2, w2);
  }
  __m128i a = _mm_clmulepi64_si128(_mm_cvtsi32_si128((int)(uint32_t)c0), _mm_cvtsi32_si128((int)k_a), 0x00);
  __m128i b = _mm_clmulepi64_si128(_mm_cvtsi32_si128((int)(uint32_t)c1), _mm_cvtsi32_si128((int)k_b), 0x00);
  return _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(_mm_xor_si128(a, b))) ^ c2;
}

__attribute__((target("sse4.2,pclmul"))) uint32_t hk__crc32c_sse42_pclmul(uint32_t crc, const unsigned char *p,
                                                                          size_t n) {
  uint64_t c = crc;
  while (n > 0 && ((uintptr_t)p & 7) != 0) {
    c = _mm_crc32_u8((uint32_t)c, *p++);
    n--;
  }
  while (n >= 3 * CRC32C_LONG) {
    c = crc32c_three_blocks(c, p, CRC32C_LONG, CRC32C_LONG_K_A, CRC32C_LONG_K_B);
    p += 3 * CRC32C_LONG;
    n -= 3 * CRC32C_LONG;
  }
  while (n >= 3 * CRC32C_SHORT) {
    c = crc32c_three_blocks(c, p, CRC32C_SHORT, CRC32C_SHORT_K_A, CRC32C_SHORT_K_B);
    p += 3 * CRC32C_SHORT;
    n -= 3 * CRC32C_SHORT;
  }
  return (uint32_t)crc32c_sse42_chain(c, p, n);
}

/* ---- fused copy ---- */

/* crc32c_sse42_chain with a copy. Each word is loaded once, folded in and
 * stored. */
__attribute__((target("sse4.2"))) static uint64_t crc32c_copy_sse42_chain(uint64_t c, unsigned char *d,
                                                                          const unsigned char *p, size_t n) {
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    memcpy(d, &w, 8);
    c = _mm_crc32_u64(c, w);
    p += 8;
    d += 8;
    n -= 8;
  }
  while (n-- > 0) {
    c = _mm_crc32_u8((uint32_t)c, *p);
    *d++ = *p++;
  }
  return c;
}

__attribute__((target("sse4.2"))) uint32_t hk__crc32c_copy_sse42(uint32_t crc, unsigned char *d, const unsigned char *p,
                                                                 size_t n) {
  uint64_t c = crc;
  while (n > 0 && ((uintptr_t)p & 7) != 0) {
    c = _mm_crc32_u8((uint32_t)c, *p);
    *d++ = *p++;
    n--;
  }
  return (uint32_t)crc32c_copy_sse42_chain(c, d, p, n);
}

/* 64 bytes from s to d in four 16-byte moves (SSE2, baseline on x86-64). */
__attribute__((always_inline)) static inline void copy_line(unsigned char *d, const unsigned char *s) {
  __m128i a = _mm_loadu_si128((const __m128i *)(const void *)s);
  __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + 16));
  __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(s + 32));
  __m128i e = _mm_loadu_si128((const __m128i *)(const void *)(s + 48));
  _mm_storeu_si128((__m128i *)(void *)d, a);
  _mm_storeu_si128((__m128i *)(void *)(d + 16), b);
  _mm_storeu_si128((__m128i *)(void *)(d + 32), c);
  _mm_storeu_si128((__m128i *)(void *)(d + 48), e);
}

/*
 * crc32c_three_blocks with a copy, a line (64 bytes) of each stream at a
 * time: the line's words are folded in first, then the line is copied
 * (vector moves, from L1 by then). The loads of a line come before the
 * stores of that line: a load that follows a store to an address equal in
 * its low 12 bits waits on a false dependency (4K aliasing), and a source
 * and a destination that are both page-aligned are exactly that.
 */
__attribute__((target("sse4.2,pclmul"), always_inline)) static inline uint64_t crc32c_copy_three_blocks(
    uint64_t c0, unsigned char *d, const unsigned char *p, size_t block, uint32_t k_a, uint32_t k_b) {
  uint64_t c1 = 0, c2 = 0;
  for (size_t i = 0; i < block; i += 64) {
    for (size_t k = 0; k < 64; k += 8) {
      uint64_t w0, w1, w2;
      memcpy(&w0, p + i + k, 8);
      memcpy(&w1, p + block + i + k, 8);
      memcpy(&w2, p + 2 * block + i + k, 8);
      c0 = _mm_crc32_u64(c0, w0);
      c1 = _mm_crc32_u64(c1, w1);
      c2 = _mm_crc32_u64(c2, w2);
    }
    copy_line(d + i, p + i);
    copy_line(d + block + i, p + block + i);
    copy_line(d + 2 * block + i, p + 2 * block + i);
  }
  __m128i a = _mm_clmulepi64_si128(_mm_cvtsi32_si128((int)(uint32_t)c0), _mm_cvtsi32_si128((int)k_a), 0x00);
  __m128i b = _mm_clmulepi64_si128(_mm_cvtsi32_si128((int)(uint32_t)c1), _mm_cvtsi32_si128((int)k_b), 0x00);
  return _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(_mm_xor_si128(a, b))) ^ c2;
}

__attribute__((target("sse4.2,pclmul"))) uint32_t hk__crc32c_copy_sse42_pclmul(uint32_t crc, unsigned char *d,
                                                                               const unsigned char *p, size_t n) {
  uint64_t c = crc;
  while (n > 0 && ((uintptr_t)p & 7) != 0) {
    c = _mm_crc32_u8((uint32_t)c, *p);
    *d++ = *p++;
    n--;
  }
  while (n >= 3 * CRC32C_LONG) {
    c = crc32c_copy_three_blocks(c, d, p, CRC32C_LONG, CRC32C_LONG_K_A, CRC32C_LONG_K_B);
    p += 3 * CRC32C_LONG;
    d += 3 * CRC32C_LONG;
    n -= 3 * CRC32C_LONG;
  }
  while (n >= 3 * CRC32C_SHORT) {
    c = crc32c_copy_three_blocks(c, d, p, CRC32C_SHORT, CRC32C_SHORT_K_A, CRC32C_SHORT_K_B);
    p += 3 * CRC32C_SHORT;
    d += 3 * CRC32C_SHORT;
    n -= 3 * CRC32C_SHORT;
  }
  return (uint32_t)crc32c_copy_sse42_chain(c, d, p, n);
}

/*
 * The fused copy with AVX-512 and VPCLMULQDQ (a CPU that has both): the
 * message is folded 64 bytes per instruction instead of CRC'd 8 bytes per
 * crc32q, so a copy and its CRC cost about what the copy costs. Four
 * 64-byte accumulators each move 256 bytes forward per round:
 *   A(x) x^(8D) = lo(A) x^(64+8D) + hi(A) x^(8D)   (mod P)
 * where lo(A) holds the earlier, higher-degree half of a 16-byte lane in
 * the reflected order; a reflected carry-less product is the polynomial
 * product times x, and a 32-bit constant c stands for c(x) x^32, so the two
 * halves are multiplied by x^(8D+31) and x^(8D-33) mod P (the same
 * stepping as for the constants above; D = 16 and 64 give the published
 * CRC-32C folding constants f20c0dfe/493c7d27 and 740eef02/9e4addf8). The
 * CRC register is XORed into the first 4 bytes, the lanes are folded into
 * one 16-byte value congruent to the message, and two crc32q of it (from
 * 0) give the register; the tail goes through the crc32q chain. The plain
 * CRC (hk_crc32c_extend) uses the same folding, without the stores.
 */
#define FOLD_256_LO 0xdcb17aa4U
#define FOLD_256_HI 0xb9e02b86U
#define FOLD_64_LO 0x740eef02U
#define FOLD_64_HI 0x9e4addf8U
#define FOLD_48_LO 0x1c291d04U
#define FOLD_48_HI 0xddc0152bU
#define FOLD_32_LO 0x3da6d0cbU
#define FOLD_32_HI 0xba4fc28eU
#define FOLD_16_LO 0xf20c0dfeU
#define FOLD_16_HI 0x493c7d27U

#define VPCLMUL_TARGET __attribute__((target("avx512f,vpclmulqdq,pclmul,sse4.2")))

VPCLMUL_TARGET static inline __m512i fold512(__m512i x, __m512i k, __m512i next) {
  return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00), _mm512_clmulepi64_epi128(x, k, 0x11), next,
                                   0x96);
}

VPCLMUL_TARGET static inline __m128i fold128(__m128i x, uint32_t lo, uint32_t hi) {
  __m128i k = _mm_set_epi64x((long long)hi, (long long)lo);
  return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

/* With `copy` (a constant at each call), every block is also stored to d. */
VPCLMUL_TARGET __attribute__((always_inline)) static inline uint32_t crc32c_fold_vpclmul(uint32_t crc, unsigned char *d,
                                                                                         const unsigned char *p,
                                                                                         size_t n, int copy) {
  __m512i x0, x1, x2, x3, k;
  __m128i a;
  uint64_t c;
  x0 = _mm512_loadu_si512((const void *)p);
  x1 = _mm512_loadu_si512((const void *)(p + 64));
  x2 = _mm512_loadu_si512((const void *)(p + 128));
  x3 = _mm512_loadu_si512((const void *)(p + 192));
  if (copy) {
    _mm512_storeu_si512((void *)d, x0);
    _mm512_storeu_si512((void *)(d + 64), x1);
    _mm512_storeu_si512((void *)(d + 128), x2);
    _mm512_storeu_si512((void *)(d + 192), x3);
    d += 256;
  }
  x0 = _mm512_xor_si512(x0, _mm512_inserti32x4(_mm512_setzero_si512(), _mm_cvtsi32_si128((int)crc), 0));
  p += 256, n -= 256;
  k = _mm512_broadcast_i32x4(_mm_set_epi64x((long long)FOLD_256_HI, (long long)FOLD_256_LO));
  while (n >= 256) {
    __m512i y0 = _mm512_loadu_si512((const void *)p), y1 = _mm512_loadu_si512((const void *)(p + 64));
    __m512i y2 = _mm512_loadu_si512((const void *)(p + 128)), y3 = _mm512_loadu_si512((const void *)(p + 192));
    if (copy) {
      _mm512_storeu_si512((void *)d, y0);
      _mm512_storeu_si512((void *)(d + 64), y1);
      _mm512_storeu_si512((void *)(d + 128), y2);
      _mm512_storeu_si512((void *)(d + 192), y3);
      d += 256;
    }
    x0 = fold512(x0, k, y0);
    x1 = fold512(x1, k, y1);
    x2 = fold512(x2, k, y2);
    x3 = fold512(x3, k, y3);
    p += 256, n -= 256;
  }
  k = _mm512_broadcast_i32x4(_mm_set_epi64x((long long)FOLD_64_HI, (long long)FOLD_64_LO));
  x0 = fold512(x0, k, x1);
  x0 = fold512(x0, k, x2);
  x0 = fold512(x0, k, x3);
  while (n >= 64) {
    __m512i y = _mm512_loadu_si512((const void *)p);
    if (copy) {
      _mm512_storeu_si512((void *)d, y);
      d += 64;
    }
    x0 = fold512(x0, k, y);
    p += 64, n -= 64;
  }
  /* The four 16-byte lanes of x0, in message order, into one. */
  a = _mm_xor_si128(fold128(_mm512_extracti32x4_epi32(x0, 0), FOLD_48_LO, FOLD_48_HI),
                    fold128(_mm512_extracti32x4_epi32(x0, 1), FOLD_32_LO, FOLD_32_HI));
  a = _mm_xor_si128(a, fold128(_mm512_extracti32x4_epi32(x0, 2), FOLD_16_LO, FOLD_16_HI));
  a = _mm_xor_si128(a, _mm512_extracti32x4_epi32(x0, 3));
  while (n >= 16) {
    __m128i y = _mm_loadu_si128((const __m128i *)(const void *)p);
    if (copy) {
      _mm_storeu_si128((__m128i *)(void *)d, y);
      d += 16;
    }
    a = _mm_xor_si128(fold128(a, FOLD_16_LO, FOLD_16_HI), y);
    p += 16, n -= 16;
  }
  c = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(a));
  c = _mm_crc32_u64(c, (uint64_t)_mm_extract_epi64(a, 1));
  return copy ? (uint32_t)crc32c_copy_sse42_chain(c, d, p, n) : (uint32_t)crc32c_sse42_chain(c, p, n);
}

VPCLMUL_TARGET uint32_t hk__crc32c_copy_vpclmul(uint32_t crc, unsigned char *d, const unsigned char *p, size_t n) {
  if (n < 256) return hk__crc32c_copy_sse42_pclmul(crc, d, p, n);
  return crc32c_fold_vpclmul(crc, d, p, n, 1);
}

VPCLMUL_TARGET uint32_t hk__crc32c_vpclmul(uint32_t crc, const unsigned char *p, size_t n) {
  if (n < 256) return hk__crc32c_sse42_pclmul(crc, p, n);
  return crc32c_fold_vpclmul(crc, NULL, p, n, 0);
}

int hk__crc32c_x86_detect(void) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("sse4.2")) return HK__CRC32C_PORTABLE;
  if (!__builtin_cpu_supports("pclmul")) return HK__CRC32C_SSE42;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vpclmulqdq")) return HK__CRC32C_VPCLMULQDQ;
  return HK__CRC32C_SSE42_PCLMUL;
}
#else
/* ISO C wants a translation unit to declare something. */
typedef int hk__crc32c_x86_unused;
#endif
