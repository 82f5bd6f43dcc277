/*
 * The CRC-32C implementations behind crc32c.c's dispatch, one file per
 * family: crc32c_portable.c (slicing-by-8 tables, any CPU), crc32c_x86.c
 * (SSE4.2, PCLMULQDQ, AVX-512 with VPCLMULQDQ), crc32c_arm.c (the ARMv8
 * CRC32 extension, with PMULL). Private to util/.
 *
 * Each function takes and returns the CRC register itself (the caller
 * applies the pre- and post-inversion), and n > 0 with valid pointers.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_UTIL_CRC32C_INTERNAL_H
#define HOOKED_UTIL_CRC32C_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "util/crc32c.h" /* enum hk__crc32c_path */

/* Build with -DHK_CRC32C_FORCE_PORTABLE to compile the portable path only
 * (the test_crc32c_portable executable does, to test it on any CPU). */
#if !defined(HK_CRC32C_FORCE_PORTABLE) && defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HK_CRC32C_X86 1
#endif
#if !defined(HK_CRC32C_FORCE_PORTABLE) && defined(__aarch64__) && defined(__linux__) && \
    (defined(__GNUC__) || defined(__clang__))
#define HK_CRC32C_ARM 1
#endif

uint32_t hk__crc32c_portable(uint32_t crc, const unsigned char *p, size_t n);
uint32_t hk__crc32c_copy_portable(uint32_t crc, unsigned char *d, const unsigned char *p, size_t n);

#ifdef HK_CRC32C_X86
/* The fastest x86 path this CPU has instructions for (an enum
 * hk__crc32c_path; HK__CRC32C_PORTABLE without SSE4.2). */
int hk__crc32c_x86_detect(void);
uint32_t hk__crc32c_sse42(uint32_t crc, const unsigned char *p, size_t n);
uint32_t hk__crc32c_sse42_pclmul(uint32_t crc, const unsigned char *p, size_t n);
uint32_t hk__crc32c_vpclmul(uint32_t crc, const unsigned char *p, size_t n);
uint32_t hk__crc32c_copy_sse42(uint32_t crc, unsigned char *d, const unsigned char *p, size_t n);
uint32_t hk__crc32c_copy_sse42_pclmul(uint32_t crc, unsigned char *d, const unsigned char *p, size_t n);
uint32_t hk__crc32c_copy_vpclmul(uint32_t crc, unsigned char *d, const unsigned char *p, size_t n);
#endif

#ifdef HK_CRC32C_ARM
/* The fastest ARM path this CPU has instructions for, from its hardware
 * capabilities (HK__CRC32C_PORTABLE without the CRC32 extension). */
int hk__crc32c_arm_detect(void);
uint32_t hk__crc32c_armv8(uint32_t crc, const unsigned char *p, size_t n);
uint32_t hk__crc32c_armv8_pmull(uint32_t crc, const unsigned char *p, size_t n);
uint32_t hk__crc32c_copy_armv8(uint32_t crc, unsigned char *d, const unsigned char *p, size_t n);
uint32_t hk__crc32c_copy_armv8_pmull(uint32_t crc, unsigned char *d, const unsigned char *p, size_t n);
#endif

#endif /* HOOKED_UTIL_CRC32C_INTERNAL_H */
