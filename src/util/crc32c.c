/*
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78): the public
 * functions and the dispatch to the fastest implementation this CPU has
 * (crc32c_x86.c: SSE4.2, PCLMULQDQ, VPCLMULQDQ; crc32c_arm.c: the ARMv8
 * CRC32 extension and PMULL; else crc32c_portable.c's slicing-by-8
 * tables), asked once at run time.
 *
 * hk__crc32c_copy() is the same CRC fused with a copy, for a reader that
 * moves bytes from one buffer into their destination: one pass over the
 * source, each word checked while it is in a register on its way to the
 * destination (folded 64 bytes per instruction with VPCLMULQDQ where the
 * CPU has it and AVX-512, so the copy sets the pace). hk__crc32c_combine()
 * joins the CRCs of adjacent pieces, so pieces of one tensor can be checked
 * on different threads.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "hooked/checkpoint.h"
#include "util/crc32c.h"
#include "util/crc32c_internal.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Indexed by enum hk__crc32c_path; documented in include/hooked/checkpoint.h. */
static const char *const path_names[HK__CRC32C_PATH_COUNT] = {
    [HK__CRC32C_AUTO] = "portable",
    [HK__CRC32C_PORTABLE] = "portable",
    [HK__CRC32C_SSE42] = "sse4.2",
    [HK__CRC32C_SSE42_PCLMUL] = "sse4.2+pclmul",
    [HK__CRC32C_VPCLMULQDQ] = "vpclmulqdq",
    [HK__CRC32C_ARMV8_CRC] = "armv8-crc",
    [HK__CRC32C_ARMV8_CRC_PMULL] = "armv8-crc+pmull",
};

int hk__crc32c_arm_path(unsigned long hwcap) {
  const unsigned long pmull = 1UL << 4, crc32 = 1UL << 7;
  if (!(hwcap & crc32)) return HK__CRC32C_PORTABLE;
  return (hwcap & pmull) ? HK__CRC32C_ARMV8_CRC_PMULL : HK__CRC32C_ARMV8_CRC;
}

/* The fastest path this build can run on this CPU. */
static int detect(void) {
#if defined(HK_CRC32C_X86)
  return hk__crc32c_x86_detect();
#elif defined(HK_CRC32C_ARM)
  return hk__crc32c_arm_detect();
#else
  return HK__CRC32C_PORTABLE;
#endif
}

/* The path in use, an enum hk__crc32c_path; 0 until first asked. The one
 * mutable static of the CRC: racing first callers store the same answer,
 * and only tests (hk__crc32c_force) store another. */
static atomic_int current_path;

static int path(void) {
  int v = atomic_load_explicit(&current_path, memory_order_relaxed);
  if (v == HK__CRC32C_AUTO) {
    v = detect();
    atomic_store_explicit(&current_path, v, memory_order_relaxed);
  }
  return v;
}

int hk__crc32c_force(int p) {
  int best = detect();
  int ok;
  if (p == HK__CRC32C_AUTO) {
    p = best;
    ok = 1;
  } else if (p == HK__CRC32C_PORTABLE) {
    ok = 1;
  } else if (p >= HK__CRC32C_SSE42 && p <= HK__CRC32C_VPCLMULQDQ) {
    /* each x86 path needs a subset of the next one's instructions */
    ok = best >= HK__CRC32C_SSE42 && best <= HK__CRC32C_VPCLMULQDQ && p <= best;
  } else if (p >= HK__CRC32C_ARMV8_CRC && p <= HK__CRC32C_ARMV8_CRC_PMULL) {
    ok = best >= HK__CRC32C_ARMV8_CRC && best <= HK__CRC32C_ARMV8_CRC_PMULL && p <= best;
  } else {
    ok = 0;
  }
  if (ok) atomic_store_explicit(&current_path, p, memory_order_relaxed);
  return ok;
}

uint32_t hk_crc32c_extend(uint32_t crc, const void *data, size_t n) {
  if (n == 0 || !data) return crc;
  crc = ~crc;
  switch (path()) {
#ifdef HK_CRC32C_X86
    case HK__CRC32C_VPCLMULQDQ: return ~hk__crc32c_vpclmul(crc, data, n);
    case HK__CRC32C_SSE42_PCLMUL: return ~hk__crc32c_sse42_pclmul(crc, data, n);
    case HK__CRC32C_SSE42: return ~hk__crc32c_sse42(crc, data, n);
#endif
#ifdef HK_CRC32C_ARM
    case HK__CRC32C_ARMV8_CRC_PMULL: return ~hk__crc32c_armv8_pmull(crc, data, n);
    case HK__CRC32C_ARMV8_CRC: return ~hk__crc32c_armv8(crc, data, n);
#endif
    default: return ~hk__crc32c_portable(crc, data, n);
  }
}

uint32_t hk__crc32c_copy(uint32_t crc, void *dst, const void *src, size_t n) {
  if (n == 0 || !dst || !src) return crc;
  crc = ~crc;
  switch (path()) {
#ifdef HK_CRC32C_X86
    case HK__CRC32C_VPCLMULQDQ: return ~hk__crc32c_copy_vpclmul(crc, dst, src, n);
    case HK__CRC32C_SSE42_PCLMUL: return ~hk__crc32c_copy_sse42_pclmul(crc, dst, src, n);
    case HK__CRC32C_SSE42: return ~hk__crc32c_copy_sse42(crc, dst, src, n);
#endif
#ifdef HK_CRC32C_ARM
    case HK__CRC32C_ARMV8_CRC_PMULL: return ~hk__crc32c_copy_armv8_pmull(crc, dst, src, n);
    case HK__CRC32C_ARMV8_CRC: return ~hk__crc32c_copy_armv8(crc, dst, src, n);
#endif
    default: return ~hk__crc32c_copy_portable(crc, dst, src, n);
  }
}

/* a * b modulo the polynomial, in the reflected order of the CRC register
 * (bit 31 is x^0, bit 0 is x^31). */
static uint32_t gf_multiply(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (int i = 0; i < 32; i++) {
    if (a & 0x80000000U) product ^= b;
    a <<= 1;
    b = (b >> 1) ^ (0x82F63B78U & (0U - (b & 1U))); /* b *= x */
  }
  return product;
}

/*
 * Feeding n zero bytes to the (uninverted) register multiplies it by
 * x^(8n), and the pre- and post-inversions of two CRCs cancel, so
 * crc(A B) = crc(A) * x^(8 len(B)) + crc(B). x^(8n) by squaring: at most
 * 64 squarings and 64 products, a microsecond or so, per join.
 */
uint32_t hk__crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
  uint32_t power = 0x00800000U; /* x^8 */
  uint32_t shift = 0x80000000U; /* x^0 */
  for (; len_b != 0; len_b >>= 1) {
    if (len_b & 1) shift = gf_multiply(shift, power);
    power = gf_multiply(power, power);
  }
  return gf_multiply(crc_a, shift) ^ crc_b;
}

/* Read from the same variable the two dispatches above switch on, so the
 * name is the path they run. */
const char *hk_crc32c_implementation(void) { return path_names[path()]; }

int hk__crc32c_from_hex(const char *s, size_t n, uint32_t *out) {
  uint32_t v = 0;
  if (n != 8) return 0;
  for (size_t i = 0; i < 8; i++) {
    char c = s[i];
    int h = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
    if (h < 0) return 0;
    v = v << 4 | (uint32_t)h;
  }
  *out = v;
  return 1;
}
