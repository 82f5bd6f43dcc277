/*
 * CRC-32C on 64-bit ARM (Linux): the ARMv8 CRC32 extension's crc32c
 * instructions, in one dependent chain; and where the CPU also has PMULL
 * (the 64-bit polynomial multiply of the crypto extension), three streams
 * over adjacent blocks kept in flight together and joined with PMULL, as
 * the x86 SSE4.2 + PCLMULQDQ path does. Each plain and fused with a copy.
 *
 * Every function carries its own target attribute, so the file builds with
 * the baseline -march (armv8-a, which has neither extension) and crc32c.c
 * calls a function only on a CPU whose hardware capabilities
 * (getauxval(AT_HWCAP)) list its instructions. On other architectures the
 * file compiles to nothing.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "util/crc32c_internal.h"

#ifdef HK_CRC32C_ARM
#include <arm_neon.h>
#include <string.h>
#include <sys/auxv.h>

/* GCC's <arm_acle.h> defines the crc32c intrinsics for any function whose
 * target has the extension; clang 14's only when the whole file is built
 * with it, so clang calls its builtins directly. */
#ifdef __clang__
#define CRC_TARGET __attribute__((target("crc")))
#define PMULL_TARGET __attribute__((target("crc,aes")))
#define CRC32CB(c, v) __builtin_arm_crc32cb((c), (v))
#define CRC32CD(c, v) __builtin_arm_crc32cd((c), (v))
#else
#include <arm_acle.h>
#define CRC_TARGET __attribute__((target("+crc")))
#define PMULL_TARGET __attribute__((target("+crc+crypto")))
#define CRC32CB(c, v) __crc32cb((c), (v))
#define CRC32CD(c, v) __crc32cd((c), (v))
#endif

int hk__crc32c_arm_detect(void) { return hk__crc32c_arm_path(getauxval(AT_HWCAP)); }

/* ---- the CRC32 extension alone ---- */

/* One dependent chain of crc32cx, 8 bytes per instruction. Used for short
 * inputs, for the tail after the three-stream blocks and on CPUs without
 * PMULL. */
CRC_TARGET static uint32_t crc_chain(uint32_t c, const unsigned char *p, size_t n) {
  while (n >= 32) {
    uint64_t w0, w1, w2, w3;
    memcpy(&w0, p, 8);
    memcpy(&w1, p + 8, 8);
    memcpy(&w2, p + 16, 8);
    memcpy(&w3, p + 24, 8);
    c = CRC32CD(c, w0);
    c = CRC32CD(c, w1);
    c = CRC32CD(c, w2);
    c = CRC32CD(c, w3);
    p += 32;
    n -= 32;
  }
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    c = CRC32CD(c, w);
    p += 8;
    n -= 8;
  }
  while (n-- > 0) c = CRC32CB(c, *p++);
  return c;
}

CRC_TARGET uint32_t hk__crc32c_armv8(uint32_t crc, const unsigned char *p, size_t n) {
  while (n > 0 && ((uintptr_t)p & 7) != 0) {
    crc = CRC32CB(crc, *p++);
    n--;
  }
  return crc_chain(crc, p, n);
}

/* crc_chain with a copy: each word is loaded once, folded in and stored. */
CRC_TARGET static uint32_t copy_chain(uint32_t c, unsigned char *d, const unsigned char *p, size_t n) {
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    memcpy(d, &w, 8);
    c = CRC32CD(c, w);
    p += 8;
    d += 8;
    n -= 8;
  }
  while (n-- > 0) {
    c = CRC32CB(c, *p);
    *d++ = *p++;
  }
  return c;
}

CRC_TARGET uint32_t hk__crc32c_copy_armv8(uint32_t crc, unsigned char *d, const unsigned char *p, size_t n) {
  while (n > 0 && ((uintptr_t)p & 7) != 0) {
    crc = CRC32CB(crc, *p);
    *d++ = *p++;
    n--;
  }
  return copy_chain(crc, d, p, n);
}

/* ---- with PMULL ---- */

/*
 * Three streams over adjacent blocks A B C of L bytes, B and C started from
 * 0, joined with
 *   crc(A B C) = crc(A) * x^(16L) + crc(B) * x^(8L) + crc(C)   (mod P)
 * A reflected carry-less product of two 32-bit values is the polynomial
 * product times x, and crc32cx of a 64-bit value multiplies by x^32 and
 * reduces, so crc32cx(0, pmull(a, x^(n-33) mod P)) is a * x^n mod P. The
 * instructions compute what x86's crc32q and pclmulqdq do, so the
 * constants are crc32c_x86.c's: x^(16L-33) and x^(8L-33) mod P for each
 * block size (any of them can be rebuilt by stepping x^0 = 0x80000000
 * through v = v >> 1 ^ (v & 1 ? 0x82F63B78 : 0) n-33 times); tests that
 * cross every block boundary catch a wrong one.
 */
enum { BLOCK_LONG = 8192, BLOCK_SHORT = 256 };
#define LONG_K_A 0x1dc403ccU
#define LONG_K_B 0x54a86326U
#define SHORT_K_A 0xdd7e3b0cU
#define SHORT_K_B 0xb9e02b86U

PMULL_TARGET static inline uint32_t join(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t k_a, uint32_t k_b) {
  uint64_t a = vgetq_lane_u64(vreinterpretq_u64_p128(vmull_p64((poly64_t)c0, (poly64_t)k_a)), 0);
  uint64_t b = vgetq_lane_u64(vreinterpretq_u64_p128(vmull_p64((poly64_t)c1, (poly64_t)k_b)), 0);
  return CRC32CD(0, a ^ b) ^ c2;
}

/* Inlined with a constant block so each size gets its own unrolled loop. */
PMULL_TARGET __attribute__((always_inline)) static inline uint32_t three_blocks(uint32_t c0, const unsigned char *p,
                                                                                size_t block, uint32_t k_a,
                                                                                uint32_t k_b) {
  uint32_t c1 = 0, c2 = 0;
  for (size_t i = 0; i < block; i += 8) {
    uint64_t w0, w1, w2;
    memcpy(&w0, p + i, 8);
    memcpy(&w1, p + block + i, 8);
    memcpy(&w2, p + 2 * block + i, 8);
    c0 = CRC32CD(c0, w0);
    c1 = CRC32CD(c1, w1);
    c2 = CRC32CD(c2, w2);
  }
  return join(c0, c1, c2, k_a, k_b);
}

PMULL_TARGET uint32_t hk__crc32c_armv8_pmull(uint32_t crc, const unsigned char *p, size_t n) {
  while (n > 0 && ((uintptr_t)p & 7) != 0) {
    crc = CRC32CB(crc, *p++);
    n--;
  }
  while (n >= 3 * BLOCK_LONG) {
    crc = three_blocks(crc, p, BLOCK_LONG, LONG_K_A, LONG_K_B);
    p += 3 * BLOCK_LONG;
    n -= 3 * BLOCK_LONG;
  }
  while (n >= 3 * BLOCK_SHORT) {
    crc = three_blocks(crc, p, BLOCK_SHORT, SHORT_K_A, SHORT_K_B);
    p += 3 * BLOCK_SHORT;
    n -= 3 * BLOCK_SHORT;
  }
  return crc_chain(crc, p, n);
}

/* 64 bytes from s to d in four 16-byte NEON moves (baseline on AArch64). */
__attribute__((always_inline)) static inline void copy_line(unsigned char *d, const unsigned char *s) {
  uint8x16_t a = vld1q_u8(s), b = vld1q_u8(s + 16), c = vld1q_u8(s + 32), e = vld1q_u8(s + 48);
  vst1q_u8(d, a);
  vst1q_u8(d + 16, b);
  vst1q_u8(d + 32, c);
  vst1q_u8(d + 48, e);
}

/* three_blocks with a copy, a line (64 bytes) of each stream at a time:
 * the line's words are folded in first, then the line is copied (from L1
 * by then), so each source byte is read from memory once. */
PMULL_TARGET __attribute__((always_inline)) static inline uint32_t copy_three_blocks(uint32_t c0, unsigned char *d,
                                                                                     const unsigned char *p,
                                                                                     size_t block, uint32_t k_a,
                                                                                     uint32_t k_b) {
  uint32_t c1 = 0, c2 = 0;
  for (size_t i = 0; i < block; i += 64) {
    for (size_t k = 0; k < 64; k += 8) {
      uint64_t w0, w1, w2;
      memcpy(&w0, p + i + k, 8);
      memcpy(&w1, p + block + i + k, 8);
      memcpy(&w2, p + 2 * block + i + k, 8);
      c0 = CRC32CD(c0, w0);
      c1 = CRC32CD(c1, w1);
      c2 = CRC32CD(c2, w2);
    }
    copy_line(d + i, p + i);
    copy_line(d + block + i, p + block + i);
    copy_line(d + 2 * block + i, p + 2 * block + i);
  }
  return join(c0, c1, c2, k_a, k_b);
}

PMULL_TARGET uint32_t hk__crc32c_copy_armv8_pmull(uint32_t crc, unsigned char *d, const unsigned char *p, size_t n) {
  while (n > 0 && ((uintptr_t)p & 7) != 0) {
    crc = CRC32CB(crc, *p);
    *d++ = *p++;
    n--;
  }
  while (n >= 3 * BLOCK_LONG) {
    crc = copy_three_blocks(crc, d, p, BLOCK_LONG, LONG_K_A, LONG_K_B);
    p += 3 * BLOCK_LONG;
    d += 3 * BLOCK_LONG;
    n -= 3 * BLOCK_LONG;
  }
  while (n >= 3 * BLOCK_SHORT) {
    crc = copy_three_blocks(crc, d, p, BLOCK_SHORT, SHORT_K_A, SHORT_K_B);
    p += 3 * BLOCK_SHORT;
    d += 3 * BLOCK_SHORT;
    n -= 3 * BLOCK_SHORT;
  }
  return copy_chain(crc, d, p, n);
}
#else
/* ISO C wants a translation unit to declare something. */
typedef int hk__crc32c_arm_unused;
#endif
