/*
 * Non-finite values in a checkpoint's floating tensors: the scan the
 * data-file writer runs on each piece of a tensor right after its CRC,
 * while the piece is still in cache.
 *
 * A value is NaN or infinite exactly when its exponent bits are all ones.
 * Adding one to the exponent field then carries into the sign bit, so
 * OR-ing (bits & exponent) + exponent_lsb over a block and testing the sign
 * bit of the result tells whether the block holds one: an AND, an ADD and an
 * OR per element, which compilers turn into SIMD code at -O2 (a fixed inner
 * trip count), with no compare or branch per element. Only a block that
 * holds one is scanned again, element by element, for its index.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "ckpt/ckpt_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Bytes per block: small enough that the exact rescan costs nothing, large
 * enough that the loop over it is all SIMD. */
#define BLOCK_BYTES 256

#if defined(__SSE2__)
#include <emmintrin.h>
#define HAVE_SSE2_SCAN 1

/* The offset of the first BLOCK_BYTES block of p[0, nbytes) that holds a
 * non-finite value of lanes of `width` bits (16, 32 or 64) with the given
 * exponent mask and lowest exponent bit; the offset of the tail when none
 * does. Explicit SSE2 (every x86-64 has it), four accumulators: as fast as
 * the CRC of the same cache-hot bytes at -O2, which no compiler reaches
 * from the portable loop below for 64-bit lanes. */
static size_t sse2_blocks(const unsigned char *p, size_t nbytes, int width, uint64_t mask, uint64_t lsb) {
  __m128i m, l;
  int signs;
  size_t i = 0;
  if (width == 16) {
    m = _mm_set1_epi16((short)mask);
    l = _mm_set1_epi16((short)lsb);
    signs = 0xAAAA; /* the high byte of each 16-bit lane */
  } else if (width == 32) {
    m = _mm_set1_epi32((int)mask);
    l = _mm_set1_epi32((int)lsb);
    signs = 0x8888;
  } else {
    m = _mm_set1_epi64x((long long)mask);
    l = _mm_set1_epi64x((long long)lsb);
    signs = 0x8080;
  }
  for (; i + BLOCK_BYTES <= nbytes; i += BLOCK_BYTES) {
    __m128i a[4] = {_mm_setzero_si128(), _mm_setzero_si128(), _mm_setzero_si128(), _mm_setzero_si128()};
    for (size_t k = 0; k < BLOCK_BYTES; k += 64) {
      for (int j = 0; j < 4; j++) {
        __m128i v = _mm_and_si128(_mm_loadu_si128((const __m128i *)(const void *)(p + i + k + 16 * (size_t)j)), m);
        v = width == 16 ? _mm_add_epi16(v, l) : width == 32 ? _mm_add_epi32(v, l) : _mm_add_epi64(v, l);
        a[j] = _mm_or_si128(a[j], v);
      }
    }
    if (_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(a[0], a[1]), _mm_or_si128(a[2], a[3]))) & signs) break;
  }
  return i;
}
#endif

/* The index of the first element of p[0, n elements) that is NaN or ±Inf,
 * SIZE_MAX when none: whole blocks first (SSE2 where there is SSE2), then
 * element by element from the first block that holds one. */
#define DEFINE_SCAN(name, T, MASK, LSB, SIGN)                                         \
  static size_t name(const unsigned char *p, size_t n) {                              \
    enum { PER_BLOCK = BLOCK_BYTES / sizeof(T) };                                     \
    size_t i = 0;                                                                     \
    if (HAVE_SSE2_SCAN) {                                                             \
      i = SSE2_BLOCKS(p, n * sizeof(T), (int)(8 * sizeof(T)), MASK, LSB) / sizeof(T); \
    } else {                                                                          \
      for (; i + PER_BLOCK <= n; i += PER_BLOCK) {                                    \
        T acc = 0;                                                                    \
        for (size_t k = 0; k < PER_BLOCK; k++) {                                      \
          T w;                                                                        \
          memcpy(&w, p + (i + k) * sizeof(T), sizeof(T));                             \
          acc |= (T)((T)(w & (MASK)) + (LSB));                                        \
        }                                                                             \
        if (acc & (SIGN)) break;                                                      \
      }                                                                               \
    }                                                                                 \
    for (; i < n; i++) {                                                              \
      T w;                                                                            \
      memcpy(&w, p + i * sizeof(T), sizeof(T));                                       \
      if ((T)((T)(w & (MASK)) + (LSB)) & (SIGN)) return i;                            \
    }                                                                                 \
    return SIZE_MAX;                                                                  \
  }

#ifdef HAVE_SSE2_SCAN
#define SSE2_BLOCKS sse2_blocks
#else
#define HAVE_SSE2_SCAN 0
#define SSE2_BLOCKS(p, nbytes, width, mask, lsb) ((void)(p), (void)(nbytes), (size_t)0)
#endif

/* Exponent field, its lowest bit, and the sign bit of each format. */
DEFINE_SCAN(scan_f16, uint16_t, 0x7c00u, 0x0400u, 0x8000u)
DEFINE_SCAN(scan_bf16, uint16_t, 0x7f80u, 0x0080u, 0x8000u)
DEFINE_SCAN(scan_f32, uint32_t, 0x7f800000u, 0x00800000u, 0x80000000u)
DEFINE_SCAN(scan_f64, uint64_t, UINT64_C(0x7ff0000000000000), UINT64_C(0x0010000000000000),
            UINT64_C(0x8000000000000000))

int hk__dtype_can_be_non_finite(hk_dtype dtype) {
  return dtype == HK_DTYPE_F16 || dtype == HK_DTYPE_BF16 || dtype == HK_DTYPE_F32 || dtype == HK_DTYPE_F64;
}

size_t hk__first_non_finite(hk_dtype dtype, const void *data, size_t nbytes) {
  const unsigned char *p = data;
  if (!p || nbytes == 0) return SIZE_MAX;
  switch (dtype) {
    case HK_DTYPE_F16: return scan_f16(p, nbytes / 2);
    case HK_DTYPE_BF16: return scan_bf16(p, nbytes / 2);
    case HK_DTYPE_F32: return scan_f32(p, nbytes / 4);
    case HK_DTYPE_F64: return scan_f64(p, nbytes / 8);
    default: return SIZE_MAX;
  }
}

const char *hk__non_finite_text(hk_dtype dtype, const void *element) {
  int nan, neg;
  switch (dtype) {
    case HK_DTYPE_F16:
    case HK_DTYPE_BF16: {
      uint16_t w;
      memcpy(&w, element, sizeof w);
      nan = (w & (dtype == HK_DTYPE_F16 ? 0x03ffu : 0x007fu)) != 0;
      neg = (w & 0x8000u) != 0;
      break;
    }
    case HK_DTYPE_F32: {
      float f;
      memcpy(&f, element, sizeof f);
      nan = isnan(f);
      neg = signbit(f) != 0;
      break;
    }
    case HK_DTYPE_F64: {
      double d;
      memcpy(&d, element, sizeof d);
      nan = isnan(d);
      neg = signbit(d) != 0;
      break;
    }
    default: return "finite";
  }
  if (nan) return "NaN";
  return neg ? "-Inf" : "Inf";
}
