/*
 * Tensor views: dtype table, shape validation and formatting.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "util/common.h"

#include <stdio.h>
#include <string.h>

static size_t table_size(hk_dtype dtype) {
  switch (dtype) {
#define HK__DTYPE_SIZE(lc, uc, size, st) \
  case HK_DTYPE_##uc: return (size_t)(size);
    HK_DTYPE_TABLE(HK__DTYPE_SIZE)
#undef HK__DTYPE_SIZE
    default: return 0;
  }
}

/* The table gives STRING size 0 so the X-macro stays integral; its elements
 * are `const char *`. */
static size_t elem_size(hk_dtype dtype) { return dtype == HK_DTYPE_STRING ? sizeof(const char *) : table_size(dtype); }

size_t hk_dtype_size(hk_dtype dtype) { return elem_size(dtype); }

const char *hk_dtype_name(hk_dtype dtype) {
  switch (dtype) {
#define HK__DTYPE_NAME(lc, uc, size, st) \
  case HK_DTYPE_##uc: return #lc;
    HK_DTYPE_TABLE(HK__DTYPE_NAME)
#undef HK__DTYPE_NAME
    default: return "invalid";
  }
}

int hk_dtype_is_float(hk_dtype d) {
  return d == HK_DTYPE_F16 || d == HK_DTYPE_BF16 || d == HK_DTYPE_F32 || d == HK_DTYPE_F64;
}

int hk_dtype_is_integer(hk_dtype d) {
  switch (d) {
    case HK_DTYPE_I8:
    case HK_DTYPE_I16:
    case HK_DTYPE_I32:
    case HK_DTYPE_I64:
    case HK_DTYPE_U8:
    case HK_DTYPE_U16:
    case HK_DTYPE_U32:
    case HK_DTYPE_U64: return 1;
    default: return 0;
  }
}

static int dtype_valid(hk_dtype d) { return (int)d > (int)HK_DTYPE_INVALID && (int)d < (int)HK_DTYPE__COUNT; }

hk_code hk_tensor_init(hk_tensor *out, hk_dtype dtype, int32_t rank, const int64_t *dims, void *data, hk_status *st) {
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_tensor_init: out is NULL");
  memset(out, 0, sizeof *out);
  if (!dtype_valid(dtype))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_tensor_init: dtype %d is not a valid hk_dtype", (int)dtype);
  if (rank < 0 || rank > HK_MAX_RANK)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_tensor_init: rank %d outside [0, %d]", (int)rank, HK_MAX_RANK);
  if (rank > 0 && !dims)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_tensor_init: dims is NULL with rank %d", (int)rank);
  size_t n = 1;
  for (int32_t i = 0; i < rank; i++) {
    if (dims[i] < 0)
      return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_tensor_init: dimension %d is negative (%lld)", (int)i,
                           (long long)dims[i]);
    if (dims[i] != 0 && n > SIZE_MAX / (size_t)dims[i])
      return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_tensor_init: shape overflows size_t");
    n *= (size_t)dims[i];
  }
  size_t es = elem_size(dtype);
  if (n != 0 && n > SIZE_MAX / es)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_tensor_init: byte size overflows size_t");
  if (n != 0 && !data)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_tensor_init: data is NULL for a shape of %zu elements", n);
  out->dtype = dtype;
  out->rank = rank;
  for (int32_t i = 0; i < rank; i++) out->dims[i] = dims[i];
  out->data = data;
  out->nbytes = n * es;
  return HK_OK;
}

int64_t hk_tensor_num_elements(const hk_tensor *t) {
  if (!t || t->rank < 0 || t->rank > HK_MAX_RANK) return -1;
  int64_t n = 1;
  for (int32_t i = 0; i < t->rank; i++) {
    if (t->dims[i] < 0) return -1;
    if (t->dims[i] != 0 && n > INT64_MAX / t->dims[i]) return -1;
    n *= t->dims[i];
  }
  return n;
}

int hk_tensor_same_spec(const hk_tensor *a, const hk_tensor *b) {
  if (!a || !b || a->dtype != b->dtype || a->rank != b->rank) return 0;
  if (a->rank < 0 || a->rank > HK_MAX_RANK) return 0;
  for (int32_t i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return 0;
  return 1;
}

const char *hk_tensor_shape_str(const hk_tensor *t, char *buf, size_t cap) {
  if (!buf || cap == 0) return buf;
  buf[0] = '\0';
  if (!t) return buf;
  size_t used = 0;
  int n = snprintf(buf, cap, "[");
  if (n < 0) return buf;
  used = (size_t)n;
  int32_t rank = t->rank < 0 ? 0 : (t->rank > HK_MAX_RANK ? HK_MAX_RANK : t->rank);
  for (int32_t i = 0; i < rank && used < cap; i++) {
    n = snprintf(buf + used, cap - used, "%s%lld", i ? ", " : "", (long long)t->dims[i]);
    if (n < 0) return buf;
    used += (size_t)n;
  }
  if (used < cap) snprintf(buf + used, cap - used, "]");
  return buf;
}

hk_tensor hk_tensor_scalar_i64(int64_t *value) {
  hk_tensor t;
  memset(&t, 0, sizeof t);
  t.dtype = HK_DTYPE_I64;
  t.data = value;
  t.nbytes = sizeof(int64_t);
  return t;
}

hk_tensor hk_tensor_scalar_f32(float *value) {
  hk_tensor t;
  memset(&t, 0, sizeof t);
  t.dtype = HK_DTYPE_F32;
  t.data = value;
  t.nbytes = sizeof(float);
  return t;
}

hk_code hk_tensor_to_i64(int64_t *out, const hk_tensor *t, const char *what, hk_status *st) {
  if (!what) what = "tensor";
  if (!t || !out) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_tensor_to_i64: NULL %s", !t ? "tensor" : "out");
  if (t->rank != 0) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s is not scalar (rank %d)", what, (int)t->rank);
  if (!t->data || t->nbytes < hk_dtype_size(t->dtype) || hk_dtype_size(t->dtype) == 0)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s has no data", what);
  /* memcpy: an executor's view need not be aligned for its dtype. */
  switch (t->dtype) {
#define HK__READ(type)             \
  {                                \
    type v;                        \
    memcpy(&v, t->data, sizeof v); \
    *out = (int64_t)v;             \
    break;                         \
  }
    case HK_DTYPE_I8: HK__READ(int8_t)
    case HK_DTYPE_I16: HK__READ(int16_t)
    case HK_DTYPE_I32: HK__READ(int32_t)
    case HK_DTYPE_I64: HK__READ(int64_t)
    case HK_DTYPE_U8: HK__READ(uint8_t)
    case HK_DTYPE_U16: HK__READ(uint16_t)
    case HK_DTYPE_U32: HK__READ(uint32_t)
#undef HK__READ
    case HK_DTYPE_U64: {
      uint64_t v;
      memcpy(&v, t->data, sizeof v);
      if (v > (uint64_t)INT64_MAX)
        return hk_status_set(st, HK_OUT_OF_RANGE, "%s value %llu exceeds int64", what, (unsigned long long)v);
      *out = (int64_t)v;
      break;
    }
    default:
      return hk_status_set(st, HK_INVALID_ARGUMENT, "%s does not have integer type: %s", what, hk_dtype_name(t->dtype));
  }
  return HK_OK;
}

/* IEEE half to double, exactly (subnormals, infinities, NaN). */
static double half_to_double(uint16_t h) {
  int e = (h >> 10) & 0x1f;
  double m = (double)(h & 0x3ff), v;
  v = e == 0 ? ldexp(m, -24) : e == 31 ? (m == 0 ? HUGE_VAL : NAN) : ldexp(m + 1024.0, e - 25);
  return (h & 0x8000u) ? -v : v;
}

hk_code hk_tensor_to_f64(double *out, const hk_tensor *t, const char *what, hk_status *st) {
  size_t size;
  if (!what) what = "tensor";
  if (!t || !out) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_tensor_to_f64: NULL %s", !t ? "tensor" : "out");
  if (t->rank < 0 || t->rank > HK_MAX_RANK || hk_tensor_num_elements(t) != 1)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s is not a single number (%lld elements)", what,
                         (long long)hk_tensor_num_elements(t));
  if (!(hk_dtype_is_float(t->dtype) || hk_dtype_is_integer(t->dtype)))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s has dtype %s, not a number", what, hk_dtype_name(t->dtype));
  size = hk_dtype_size(t->dtype);
  if (!t->data || t->nbytes < size) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s has no data", what);
  /* memcpy: an executor's view need not be aligned for its dtype. */
  switch (t->dtype) {
    case HK_DTYPE_F16: {
      uint16_t h;
      memcpy(&h, t->data, 2);
      *out = half_to_double(h);
      return HK_OK;
    }
    case HK_DTYPE_BF16: {
      uint16_t h;
      uint32_t bits;
      float f;
      memcpy(&h, t->data, 2);
      bits = (uint32_t)h << 16;
      memcpy(&f, &bits, 4);
      *out = f;
      return HK_OK;
    }
    case HK_DTYPE_F32: {
      float f;
      memcpy(&f, t->data, 4);
      *out = f;
      return HK_OK;
    }
    case HK_DTYPE_F64: memcpy(out, t->data, 8); return HK_OK;
    case HK_DTYPE_U64: {
      uint64_t u;
      memcpy(&u, t->data, 8);
      *out = (double)u;
      return HK_OK;
    }
    default: break;
  }
  {
    hk_tensor scalar = *t;
    int64_t v;
    hk_code rc;
    scalar.rank = 0; /* one element: read it as the scalar it is */
    rc = hk_tensor_to_i64(&v, &scalar, what, st);
    if (rc == HK_OK) *out = (double)v;
    return rc;
  }
}
