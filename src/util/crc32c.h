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

/**
 * Copy n bytes from src to dst (which must not overlap) and return
 * hk_crc32c_extend(crc, src, n), in one pass over src: each word is folded
 * into the CRC on its way to dst. With AVX-512 and VPCLMULQDQ the message
 * is folded 64 bytes at a time (about a copy's cost); else the
 * implementations of hk_crc32c_extend (SSE4.2 with PCLMULQDQ, SSE4.2,
 * portable), chosen the same way.
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
 * A CRC in the text form hooked's files write it ("%08x": exactly 8
 * lowercase hex digits): s[0, n) into *out. @return 1, or 0 for any other
 * text (*out untouched).
 */
int hk__crc32c_from_hex(const char *s, size_t n, uint32_t *out);

#endif /* HOOKED_CKPT_CRC32C_H */
