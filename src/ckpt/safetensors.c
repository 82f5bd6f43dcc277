/*
 * Checkpoint data files (checkpoint-format.md): what the writer and the
 * reader share, the format's names of the dtypes, byte sizes, the data
 * file's name, and names made safe for messages. The writer is in
 * safetensors_write.c, the reader in safetensors_json.c (its header) and
 * safetensors_read.c.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "ckpt/ckpt_internal.h"
#include "ckpt/safetensors_internal.h"
#include "util/path.h"

#include <string.h>

#define DATA_EXT ".safetensors"

/* ---- dtypes -------------------------------------------------------------------------- */

typedef struct dtype_name {
  hk_dtype dtype;
  const char *name;
} dtype_name;

/* STRING has no safetensors form: its data are pointers. */
static const dtype_name dtype_names[] = {
#define HK__DTYPE_NAME(lc, uc, size, st) {HK_DTYPE_##uc, st},
    HK_DTYPE_TABLE(HK__DTYPE_NAME)
#undef HK__DTYPE_NAME
};

const char *hk__safetensors_dtype_name(hk_dtype dt) {
  if (dt == HK_DTYPE_STRING) return NULL;
  for (size_t i = 0; i < sizeof dtype_names / sizeof dtype_names[0]; i++)
    if (dtype_names[i].dtype == dt) return dtype_names[i].name;
  return NULL;
}

hk_dtype hk__safetensors_dtype_from_name(const char *s) {
  for (size_t i = 0; i < sizeof dtype_names / sizeof dtype_names[0]; i++)
    if (dtype_names[i].dtype != HK_DTYPE_STRING && strcmp(dtype_names[i].name, s) == 0) return dtype_names[i].dtype;
  return HK_DTYPE_INVALID;
}

/* Byte size of a shape, or 0 with *overflow set when it does not fit 64 bits. */
uint64_t hk__safetensors_shape_bytes(hk_dtype dt, int32_t rank, const int64_t *dims, int *overflow) {
  uint64_t n = hk_dtype_size(dt);
  *overflow = 0;
  for (int32_t i = 0; i < rank; i++) {
    uint64_t d = (uint64_t)dims[i];
    if (d != 0 && n > UINT64_MAX / d) {
      /* A zero dimension later still makes the product 0. */
      for (int32_t j = i + 1; j < rank; j++)
        if (dims[j] == 0) return 0;
      *overflow = 1;
      return 0;
    }
    n *= d;
  }
  return n;
}

char *hk__ckpt_data_path(const hk_env *env, const char *path) {
  size_t n = strlen(path), k = sizeof DATA_EXT - 1;
  if (n >= k && strcmp(path + n - k, DATA_EXT) == 0) return hk_env_strdup(env, path);
  return hk__asprintf(env, "%s" DATA_EXT, path);
}

/* Well-formed UTF-8 (no overlongs, surrogates or code points past 0x10FFFF). */
int hk__safetensors_valid_utf8(const unsigned char *s, size_t n, size_t *bad) {
  size_t i = 0;
  while (i < n) {
    unsigned char c = s[i];
    size_t k;
    uint32_t cp, min;
    if (c < 0x80) {
      i++;
      continue;
    }
    if ((c & 0xE0) == 0xC0) {
      k = 1, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      k = 2, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      k = 3, cp = c & 0x07, min = 0x10000;
    } else {
      *bad = i;
      return 0;
    }
    if (n - i <= k) {
      *bad = i;
      return 0;
    }
    for (size_t j = 1; j <= k; j++) {
      if ((s[i + j] & 0xC0) != 0x80) {
        *bad = i;
        return 0;
      }
      cp = cp << 6 | (s[i + j] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      *bad = i;
      return 0;
    }
    i += k + 1;
  }
  return 1;
}

/* A name for a message: printable ASCII as is, every other byte as \xHH,
 * cut to fit `cap` (the name may be what is wrong with it). */
const char *hk__safetensors_escaped_name(const char *name, char *buf, size_t cap) {
  static const char hex[] = "0123456789abcdef";
  size_t n = 0;
  for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
    if (*c >= 0x20 && *c < 0x7F && *c != '\\') {
      if (n + 1 >= cap) break;
      buf[n++] = (char)*c;
    } else {
      if (n + 4 >= cap) break;
      buf[n++] = '\\';
      buf[n++] = 'x';
      buf[n++] = hex[*c >> 4];
      buf[n++] = hex[*c & 15];
    }
  }
  buf[n] = '\0';
  return buf;
}

/* The integer dtypes (a global step's), and whether one is signed. */
int hk__safetensors_int_dtype(hk_dtype dtype, int *is_signed) {
  int sign;
  switch (dtype) {
    case HK_DTYPE_I8:
    case HK_DTYPE_I16:
    case HK_DTYPE_I32:
    case HK_DTYPE_I64: sign = 1; break;
    case HK_DTYPE_U8:
    case HK_DTYPE_U16:
    case HK_DTYPE_U32:
    case HK_DTYPE_U64: sign = 0; break;
    default: return 0;
  }
  if (is_signed) *is_signed = sign;
  return 1;
}

/* An integer scalar's value, sign- or zero-extended from its little-endian
 * bytes (the file's order, checkpoint-format.md); 0 when it is not one of
 * the global step's dtypes or does not fit int64. */
int hk__safetensors_int_scalar(hk_dtype dtype, const unsigned char *p, size_t nbytes, int64_t *out) {
  uint64_t u = 0;
  int is_signed;
  if (!hk__safetensors_int_dtype(dtype, &is_signed)) return 0;
  if (nbytes != hk_dtype_size(dtype) || nbytes == 0 || nbytes > 8) return 0;
  for (size_t i = nbytes; i > 0; i--) u = u << 8 | p[i - 1];
  if (is_signed && nbytes < 8 && (u >> (8 * nbytes - 1)) & 1) u |= ~(uint64_t)0 << (8 * nbytes);
  if (!is_signed && u > (uint64_t)INT64_MAX) return 0;
  memcpy(out, &u, sizeof *out);
  return 1;
}
