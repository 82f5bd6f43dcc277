/*
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78): the public
 * functions and the dispatch to the fastest implementation this CPU has
 * (crc32c_x86.c: SSE4.2, PCLMULQDQ, VPCLMULQDQ; else crc32c_portable.c's
 * slicing-by-8 tables), asked once at run time.
 *
 * hk__crc32c_copy() is the same CRC fused with a copy, for a restore that
 * moves a tensor from the page cache into a variable: one pass over the
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

#include <stddef.h>
#include <stdint.h>

uint32_t hk_crc32c_extend(uint32_t crc, const void *data, size_t n) {
  if (n == 0 || !data) return crc;
  crc = ~crc;
#ifdef HK_CRC32C_X86
  switch (hk__crc32c_x86_level()) {
    case 4: return ~hk__crc32c_vpclmul(crc, data, n);
    case 3: return ~hk__crc32c_sse42_pclmul(crc, data, n);
    case 2: return ~hk__crc32c_sse42(crc, data, n);
    default: break;
  }
#endif
  return ~hk__crc32c_portable(crc, data, n);
}

uint32_t hk__crc32c_copy(uint32_t crc, void *dst, const void *src, size_t n) {
  if (n == 0 || !dst || !src) return crc;
  crc = ~crc;
#ifdef HK_CRC32C_X86
  switch (hk__crc32c_x86_level()) {
    case 4: return ~hk__crc32c_copy_vpclmul(crc, dst, src, n);
    case 3: return ~hk__crc32c_copy_sse42_pclmul(crc, dst, src, n);
    case 2: return ~hk__crc32c_copy_sse42(crc, dst, src, n);
    default: break;
  }
#endif
  return ~hk__crc32c_copy_portable(crc, dst, src, n);
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

/* The PCLMULQDQ path still reports "sse4.2": include/hooked/checkpoint.h
 * documents "sse4.2" and "portable" as the only answers. */
const char *hk_crc32c_implementation(void) {
#ifdef HK_CRC32C_X86
  if (hk__crc32c_x86_level() >= 2) return "sse4.2";
#endif
  return "portable";
}

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
