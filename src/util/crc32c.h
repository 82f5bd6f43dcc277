/*
 * Internal CRC-32C helpers beside hk_crc32c_extend (crc32c.c; hk__ names,
 * not API). Kept in a header of their own so that the CRC tests, which
 * compile src/util/crc32c*.c into their own executables, can reach them in
 * a shared build too.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_CKPT_CRC32C_H
#define HOOKED_CKPT_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* The CRC-32C implementations, in the order each family prefers them
 * least to most; hk_crc32c_implementation() names each. */
enum hk__crc32c_path {
  HK__CRC32C_AUTO = 0, /* for hk__crc32c_force: the CPU's best */
  HK__CRC32C_PORTABLE,
  HK__CRC32C_SSE42,
  HK__CRC32C_SSE42_PCLMUL,
  HK__CRC32C_VPCLMULQDQ,
  HK__CRC32C_ARMV8_CRC,
  HK__CRC32C_ARMV8_CRC_PMULL,
  HK__CRC32C_PATH_COUNT
};

/**
 * Copy n bytes from src to dst (which must not overlap) and return
 * hk_crc32c_extend(crc, src, n), in one pass over src: each word is folded
 * into the CRC on its way to dst. It runs the path hk_crc32c_extend runs
 * (the one hk_crc32c_implementation() names): with AVX-512 and VPCLMULQDQ
 * the message is folded 64 bytes at a time (about a copy's cost); else
 * three crc32 streams joined with PCLMULQDQ or PMULL, one chain of crc32
 * instructions (SSE4.2 or the ARMv8 CRC32 extension), or the portable
 * tables.
 */
uint32_t hk__crc32c_copy(uint32_t crc, void *dst, const void *src, size_t n);

/**
 * The CRC-32C of the concatenation A B, from crc_a = hk_crc32c_extend(0, A,
 * len A), crc_b = hk_crc32c_extend(0, B, len_b) and len_b: so that pieces
 * of one buffer can be checked separately (on different threads) and
 * joined. Portable; about a microsecond per call.
 */
uint32_t hk__crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

/**
 * The path a 64-bit ARM Linux CPU whose getauxval(AT_HWCAP) is `hwcap`
 * gets: armv8-crc+pmull with the CRC32 extension and PMULL, armv8-crc with
 * the extension alone, else portable (bits as the kernel numbers them:
 * HWCAP_PMULL 1 << 4, HWCAP_CRC32 1 << 7). Any architecture computes it,
 * so the choice is tested everywhere.
 */
int hk__crc32c_arm_path(unsigned long hwcap);

/**
 * For tests only: make hk_crc32c_extend, hk__crc32c_copy and
 * hk_crc32c_implementation use `path` from now on in the whole process, so
 * that each implementation this CPU can run is tested against the others;
 * HK__CRC32C_AUTO goes back to the fastest one the CPU has (the one the
 * library picks by itself). @return 1, or 0 (nothing changed) for a path
 * this build or this CPU cannot run.
 */
int hk__crc32c_force(int path);

/**
 * A CRC in the text form hooked's files write it ("%08x": exactly 8
 * lowercase hex digits): s[0, n) into *out. @return 1, or 0 for any other
 * text (*out untouched).
 */
int hk__crc32c_from_hex(const char *s, size_t n, uint32_t *out);

#endif /* HOOKED_CKPT_CRC32C_H */
