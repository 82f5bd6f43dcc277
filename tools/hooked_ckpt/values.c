/*
 * hooked-ckpt — the values of tensors: little-endian elements of every dtype
 * decoded, and written as numpy writes them (dump) or as the shortest text
 * that reads back to the same bits (diff).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "tool.h"

/* Little-endian load, whatever the host's byte order. */
uint64_t load_le(const unsigned char *p, size_t size) {
  uint64_t v = 0;
  for (size_t i = size; i > 0; i--) v = v << 8 | p[i - 1];
  return v;
}

static double half_to_double(uint16_t h) {
  int exp = (h >> 10) & 0x1f;
  double mant = h & 0x3ff, v;
  if (exp == 0) {
    v = ldexp(mant, -24);
  } else if (exp == 31) {
    v = mant != 0 ? NAN : INFINITY;
  } else {
    v = ldexp(mant + 1024, exp - 25);
  }
  return h & 0x8000 ? -v : v;
}

/* Round to the nearest half, ties to even; only for the round-trip test. */
static uint16_t double_to_half(double d) {
  uint16_t sign = signbit(d) ? 0x8000 : 0;
  double a = fabs(d);
  int e;
  if (isnan(d)) return 0x7e00;
  if (a >= 65520.0) return sign | 0x7c00;
  if (a < ldexp(1, -14)) return sign | (uint16_t)nearbyint(ldexp(a, 24));
  frexp(a, &e); /* a = f * 2^e, f in [0.5, 1): the half exponent is e - 1 */
  {
    double m = nearbyint((ldexp(a, 1 - e) - 1.0) * 1024.0);
    int ex = e - 1;
    if (m >= 1024.0) m = 0, ex++;
    if (ex + 15 >= 31) return sign | 0x7c00;
    return sign | (uint16_t)((ex + 15) << 10) | (uint16_t)m;
  }
}

static float bits_to_float(uint32_t b) {
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}

static uint32_t float_to_bits(float f) {
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  return b;
}

static uint16_t float_to_bf16(float f) {
  uint32_t b = float_to_bits(f);
  if (isnan(f)) return (uint16_t)(b >> 16 | 0x40);
  return (uint16_t)((b + 0x7fff + ((b >> 16) & 1)) >> 16);
}

/* The value of float element `bits` of `dtype` as a double. */
double float_value(hk_dtype dtype, uint64_t bits) {
  double v;
  switch (dtype) {
    case HK_DTYPE_F16: return half_to_double((uint16_t)bits);
    case HK_DTYPE_BF16: return bits_to_float((uint32_t)bits << 16);
    case HK_DTYPE_F32: return bits_to_float((uint32_t)bits);
    default: memcpy(&v, &bits, sizeof v); return v;
  }
}

/* Whether `text` reads back to exactly `bits` in `dtype`. */
int reads_back(hk_dtype dtype, uint64_t bits, const char *text) {
  double back = strtod(text, NULL);
  switch (dtype) {
    case HK_DTYPE_F16: return double_to_half(back) == (uint16_t)bits;
    case HK_DTYPE_BF16: return float_to_bf16((float)back) == (uint16_t)bits;
    case HK_DTYPE_F32: return float_to_bits((float)back) == (uint32_t)bits;
    default: return back == float_value(dtype, bits);
  }
}

/* numpy's default precision: at most 8 digits after the point, fewer when
 * fewer read back exactly. */
#define MAX_DIGITS 8

static int fewest_digits(hk_dtype dtype, uint64_t bits, int sci) {
  char buf[400];
  for (int p = 0; p < MAX_DIGITS; p++) {
    snprintf(buf, sizeof buf, sci ? "%.*e" : "%.*f", p, float_value(dtype, bits));
    if (reads_back(dtype, bits, buf)) return p;
  }
  return MAX_DIGITS;
}

static void format_float(hk_dtype dtype, uint64_t bits, const float_style *fs, char *buf, size_t cap) {
  double v = float_value(dtype, bits);
  if (isnan(v) || isinf(v)) {
    snprintf(buf, cap, "%s", isnan(v) ? "nan" : v < 0 ? "-inf" : "inf");
  } else if (fs->sci) {
    snprintf(buf, cap, "%.*e", fs->prec, v);
  } else {
    size_t len;
    snprintf(buf, cap, "%.*f", fewest_digits(dtype, bits, 0), v);
    /* Rounded to MAX_DIGITS, "0.05000000" is numpy's "0.05"; "1" is "1.". */
    len = strlen(buf);
    if (strchr(buf, '.') != NULL) {
      while (buf[len - 1] == '0') buf[--len] = '\0';
    } else if (len + 1 < cap) {
      strcat(buf, ".");
    }
  }
}

void format_element(hk_dtype dtype, const unsigned char *p, const float_style *fs, char *buf, size_t cap) {
  size_t size = hk_dtype_size(dtype);
  uint64_t u = load_le(p, size);
  switch (dtype) {
    case HK_DTYPE_BOOL: snprintf(buf, cap, "%s", u ? "True" : "False"); break;
    case HK_DTYPE_I8: snprintf(buf, cap, "%d", (int)(int8_t)u); break;
    case HK_DTYPE_I16: snprintf(buf, cap, "%d", (int)(int16_t)u); break;
    case HK_DTYPE_I32: snprintf(buf, cap, "%" PRId32, (int32_t)u); break;
    case HK_DTYPE_I64: snprintf(buf, cap, "%" PRId64, (int64_t)u); break;
    case HK_DTYPE_U8:
    case HK_DTYPE_U16:
    case HK_DTYPE_U32:
    case HK_DTYPE_U64: snprintf(buf, cap, "%" PRIu64, u); break;
    default: format_float(dtype, u, fs, buf, cap); break;
  }
}

/* numpy's rule (FloatingFormat.fillFormat): scientific when the largest
 * magnitude is >= 1e8, the smallest nonzero < 1e-4, or their ratio > 1e3. */
float_style choose_float_style(hk_dtype dtype, const unsigned char *data, uint64_t n) {
  float_style fs = {0, 0};
  double lo = INFINITY, hi = 0;
  size_t size = hk_dtype_size(dtype);
  if (!hk_dtype_is_float(dtype)) return fs;
  for (uint64_t i = 0; i < n; i++) {
    double a = fabs(float_value(dtype, load_le(data + i * size, size)));
    if (!isfinite(a) || a == 0) continue;
    if (a < lo) lo = a;
    if (a > hi) hi = a;
  }
  fs.sci = hi > 0 && (hi >= 1e8 || lo < 1e-4 || hi / lo > 1e3);
  if (fs.sci) {
    for (uint64_t i = 0; i < n; i++) {
      uint64_t bits = load_le(data + i * size, size);
      int p;
      if (!isfinite(float_value(dtype, bits))) continue;
      p = fewest_digits(dtype, bits, 1);
      if (p > fs.prec) fs.prec = p;
    }
  }
  return fs;
}

/* numpy aligns positional floats on the decimal point: the text before it
 * padded on the left, the rest on the right. Everything else is
 * right-aligned (all "before"). */
void split_widths(hk_dtype dtype, const float_style *fs, const char *s, size_t *before, size_t *after) {
  const char *dot = hk_dtype_is_float(dtype) && !fs->sci ? strchr(s, '.') : NULL;
  *before = dot != NULL ? (size_t)(dot - s) : strlen(s);
  *after = dot != NULL ? strlen(dot) : 0;
}

/* A float element as the shortest text that reads back to its bits. */
void format_shortest(hk_dtype dtype, uint64_t bits, char *buf, size_t cap) {
  double v = float_value(dtype, bits);
  if (isnan(v) || isinf(v)) {
    snprintf(buf, cap, "%s", isnan(v) ? "nan" : v < 0 ? "-inf" : "inf");
    return;
  }
  for (int p = 1; p <= 17; p++) {
    snprintf(buf, cap, "%.*g", p, v);
    if (reads_back(dtype, bits, buf)) return;
  }
}

void format_double(double v, char *buf, size_t cap) {
  uint64_t bits;
  memcpy(&bits, &v, sizeof bits);
  format_shortest(HK_DTYPE_F64, bits, buf, cap);
}

void format_value(hk_dtype dtype, const unsigned char *p, char *buf, size_t cap) {
  static const float_style unused = {0, 0};
  if (hk_dtype_is_float(dtype)) {
    format_shortest(dtype, load_le(p, hk_dtype_size(dtype)), buf, cap);
  } else {
    format_element(dtype, p, &unused, buf, cap);
  }
}

/* The row-major multi-dimensional index of flat index i: "[1, 2]". */
void format_index(const hk_checkpoint_entry *e, uint64_t i, char *buf, size_t cap) {
  int64_t idx[HK_MAX_RANK];
  size_t len = 0;
  for (int32_t k = e->rank - 1; k >= 0; k--) {
    uint64_t d = (uint64_t)e->dims[k]; /* > 0: the tensor has element i */
    idx[k] = (int64_t)(i % d);
    i /= d;
  }
  len += (size_t)snprintf(buf, cap, "[");
  for (int32_t k = 0; k < e->rank && len < cap; k++)
    len += (size_t)snprintf(buf + len, cap - len, "%s%" PRId64, k ? ", " : "", idx[k]);
  if (len < cap) snprintf(buf + len, cap - len, "]");
}
