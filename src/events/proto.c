/*
 * Hand-written protocol-buffer encoding of TensorBoard's Summary messages
 * (see proto.h for the field numbers and where they come from).
 *
 * Sizes are computed exactly before anything is written, so a caller sizes
 * its buffer once and an encoder never checks for room.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "events/proto.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* Field numbers (proto.h). */
#define SUMMARY_VALUE 1u
#define VALUE_TAG 1u
#define VALUE_SIMPLE 2u
#define VALUE_HISTO 5u
#define VALUE_TENSOR 8u
#define VALUE_METADATA 9u
#define HISTO_MIN 1u
#define HISTO_MAX 2u
#define HISTO_NUM 3u
#define HISTO_SUM 4u
#define HISTO_SUM_SQUARES 5u
#define HISTO_BUCKET_LIMIT 6u
#define HISTO_BUCKET 7u
#define META_PLUGIN_DATA 1u
#define META_DATA_CLASS 4u
#define PLUGIN_NAME 1u
#define TENSOR_DTYPE 1u
#define TENSOR_SHAPE 2u
#define TENSOR_STRING_VAL 8u
#define DT_STRING 7u
#define DATA_CLASS_TENSOR 2u
#define TEXT_PLUGIN "text"

/* ---- primitives --------------------------------------------------------------- */

size_t hk__pb_varint_len(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80u) {
    v >>= 7;
    n++;
  }
  return n;
}

unsigned char *hk__pb_varint(unsigned char *p, uint64_t v) {
  while (v >= 0x80u) {
    *p++ = (unsigned char)(v | 0x80u);
    v >>= 7;
  }
  *p++ = (unsigned char)v;
  return p;
}

unsigned char *hk__pb_key(unsigned char *p, unsigned field, unsigned wire) {
  *p++ = (unsigned char)((field << 3) | wire);
  return p;
}

static unsigned char *put_le(unsigned char *p, uint64_t v, int nbytes) {
  int i;
  for (i = 0; i < nbytes; i++) p[i] = (unsigned char)(v >> (8 * i));
  return p + nbytes;
}

unsigned char *hk__pb_double(unsigned char *p, unsigned field, double v) {
  uint64_t bits;
  memcpy(&bits, &v, sizeof bits);
  p = hk__pb_key(p, field, HK__PB_FIXED64);
  return put_le(p, bits, 8);
}

unsigned char *hk__pb_float(unsigned char *p, unsigned field, float v) {
  uint32_t bits;
  memcpy(&bits, &v, sizeof bits);
  p = hk__pb_key(p, field, HK__PB_FIXED32);
  return put_le(p, bits, 4);
}

unsigned char *hk__pb_len(unsigned char *p, unsigned field, size_t n) {
  p = hk__pb_key(p, field, HK__PB_LEN);
  return hk__pb_varint(p, (uint64_t)n);
}

unsigned char *hk__pb_bytes(unsigned char *p, unsigned field, const void *data, size_t n) {
  p = hk__pb_len(p, field, n);
  if (n > 0) memcpy(p, data, n);
  return p + n;
}

size_t hk__pb_len_size(size_t n) { return 1 + hk__pb_varint_len((uint64_t)n) + n; }

/* ---- numbers out of tensors -------------------------------------------------------- */

static double f16_to_double(uint16_t h) {
  unsigned exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  double v;
  if (exp == 0)
    v = ldexp((double)mant, -24);
  else if (exp == 31)
    v = mant ? NAN : INFINITY;
  else
    v = ldexp((double)(mant + 1024u), (int)exp - 25);
  return (h & 0x8000u) ? -v : v;
}

static double bf16_to_double(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

double hk__element_as_double(hk_dtype dtype, const void *data, size_t i) {
  const unsigned char *b = data;
#define LOAD(type)                              \
  do {                                          \
    type x;                                     \
    memcpy(&x, b + i * sizeof(type), sizeof x); \
    return (double)x;                           \
  } while (0)
  switch (dtype) {
    case HK_DTYPE_F16: {
      uint16_t x;
      memcpy(&x, b + 2 * i, 2);
      return f16_to_double(x);
    }
    case HK_DTYPE_BF16: {
      uint16_t x;
      memcpy(&x, b + 2 * i, 2);
      return bf16_to_double(x);
    }
    case HK_DTYPE_F32: LOAD(float);
    case HK_DTYPE_F64: LOAD(double);
    case HK_DTYPE_I8: LOAD(int8_t);
    case HK_DTYPE_I16: LOAD(int16_t);
    case HK_DTYPE_I32: LOAD(int32_t);
    case HK_DTYPE_I64: LOAD(int64_t);
    case HK_DTYPE_U8: LOAD(uint8_t);
    case HK_DTYPE_U16: LOAD(uint16_t);
    case HK_DTYPE_U32: LOAD(uint32_t);
    case HK_DTYPE_U64: LOAD(uint64_t);
    default: return NAN;
  }
#undef LOAD
}

/* ---- histograms ------------------------------------------------------------------- */

void hk__histo_default_limits(double *out) {
  /* histogram.cc's InitDefaultBucketsInner: magnitudes grow by 10% from
   * 1e-12 while below 1e20 (774 of them), mirrored, 0 in the middle, and
   * +-DBL_MAX at the ends. The multiplication is repeated, not computed
   * as a power, so the limits are TensorFlow's to the last bit. */
  const size_t half = (HK__HISTO_LIMITS - 1) / 2; /* 775: 774 magnitudes and DBL_MAX */
  double v = 1.0e-12;
  size_t k = 0;
  while (v < 1.0e20 && k < half - 1) {
    out[half + 1 + k] = v;
    out[half - 1 - k] = -v;
    v *= 1.1;
    k++;
  }
  out[HK__HISTO_LIMITS - 1] = DBL_MAX;
  out[0] = -DBL_MAX;
  out[half] = 0.0;
}

void hk__histo_clear(hk__histo *h) {
  h->min = DBL_MAX;
  h->max = -DBL_MAX;
  h->num = 0;
  h->sum = 0;
  h->sum_squares = 0;
  memset(h->counts, 0, HK__HISTO_LIMITS * sizeof *h->counts);
}

/* std::upper_bound: the first limit greater than v. v is finite, and the
 * last limit is DBL_MAX, so the index is at most HK__HISTO_LIMITS - 1 for
 * every finite v below DBL_MAX; DBL_MAX itself lands past the end and is
 * kept in the last bucket. */
static size_t bucket_of(const double *limits, double v) {
  size_t lo = 0, hi = HK__HISTO_LIMITS;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (limits[mid] > v)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo < HK__HISTO_LIMITS ? lo : HK__HISTO_LIMITS - 1;
}

hk_code hk__histo_add_tensor(hk__histo *h, const hk_tensor *t, const char *tag, hk_status *st) {
  int64_t n = hk_tensor_num_elements(t);
  size_t esize;
  int64_t i;

  if (n < 0)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "histogram '%s': the values tensor has an invalid shape", tag);
  if (t->dtype == HK_DTYPE_BOOL || t->dtype == HK_DTYPE_STRING || hk_dtype_size(t->dtype) == 0)
    return hk_status_set(
        st, HK_INVALID_ARGUMENT,
        "histogram '%s': values of dtype %s cannot be summarized (an integer or floating dtype is needed)", tag,
        hk_dtype_name(t->dtype));
  esize = hk_dtype_size(t->dtype);
  if ((uint64_t)n > SIZE_MAX / esize || t->nbytes != (size_t)n * esize)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "histogram '%s': the values tensor has nbytes %zu, its shape needs %lld", tag, t->nbytes,
                         (long long)n * (long long)esize);
  if (n > 0 && t->data == NULL)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "histogram '%s': the values tensor has no data", tag);
  for (i = 0; i < n; i++) {
    double v = hk__element_as_double(t->dtype, t->data, (size_t)i);
    if (isnan(v)) return hk_status_set(st, HK_INVALID_ARGUMENT, "Nan in summary histogram for: %s", tag);
    if (isinf(v)) return hk_status_set(st, HK_INVALID_ARGUMENT, "Infinity in summary histogram for: %s", tag);
    h->counts[bucket_of(h->limits, v)] += 1.0;
    if (h->min > v) h->min = v;
    if (h->max < v) h->max = v;
    h->num += 1.0;
    h->sum += v;
    h->sum_squares += v * v;
  }
  return HK_OK;
}

/* EncodeToProto(preserve_zero_buckets = false): a bucket with a count is
 * written as (its limit, count); a run of empty buckets as one (the run's
 * last limit, 0). This counts the buckets written; put_packed writes them. */
static size_t encode_buckets(const hk__histo *h) {
  size_t i = 0, k = 0;
  while (i < HK__HISTO_LIMITS) {
    double count = h->counts[i++];
    if (count <= 0.0)
      while (i < HK__HISTO_LIMITS && h->counts[i] <= 0.0) i++;
    k++;
  }
  return k; /* >= 1: the limits are never empty */
}

static size_t histo_size(size_t k) { return 5 * 9 + 2 * hk__pb_len_size(8 * k); }

static size_t value_with(size_t taglen, size_t payload_field_size) {
  return hk__pb_len_size(taglen) + payload_field_size;
}

size_t hk__summary_histogram_size(size_t taglen, const hk__histo *h) {
  size_t value = value_with(taglen, hk__pb_len_size(histo_size(encode_buckets(h))));
  return hk__pb_len_size(value);
}

size_t hk__summary_histogram_max_size(size_t taglen) {
  return hk__pb_len_size(value_with(taglen, hk__pb_len_size(histo_size(HK__HISTO_LIMITS))));
}

static unsigned char *put_packed(unsigned char *p, unsigned field, const hk__histo *h, int counts) {
  size_t i = 0, k = encode_buckets(h);
  p = hk__pb_len(p, field, 8 * k);
  /* Walk the runs again, writing one side at a time. */
  while (i < HK__HISTO_LIMITS) {
    double end = h->limits[i], count = h->counts[i];
    uint64_t bits;
    i++;
    if (count <= 0.0) {
      while (i < HK__HISTO_LIMITS && h->counts[i] <= 0.0) {
        end = h->limits[i];
        count = h->counts[i];
        i++;
      }
    }
    memcpy(&bits, counts ? &count : &end, sizeof bits);
    p = put_le(p, bits, 8);
  }
  return p;
}

unsigned char *hk__summary_histogram(unsigned char *p, const char *tag, size_t taglen, const hk__histo *h) {
  size_t histo = histo_size(encode_buckets(h));
  p = hk__pb_len(p, SUMMARY_VALUE, value_with(taglen, hk__pb_len_size(histo)));
  p = hk__pb_bytes(p, VALUE_TAG, tag, taglen);
  p = hk__pb_len(p, VALUE_HISTO, histo);
  p = hk__pb_double(p, HISTO_MIN, h->min);
  p = hk__pb_double(p, HISTO_MAX, h->max);
  p = hk__pb_double(p, HISTO_NUM, h->num);
  p = hk__pb_double(p, HISTO_SUM, h->sum);
  p = hk__pb_double(p, HISTO_SUM_SQUARES, h->sum_squares);
  p = put_packed(p, HISTO_BUCKET_LIMIT, h, 0);
  return put_packed(p, HISTO_BUCKET, h, 1);
}

/* ---- scalars and text ----------------------------------------------------------------- */

size_t hk__summary_scalar_size(size_t taglen) { return hk__pb_len_size(value_with(taglen, 5)); }

unsigned char *hk__summary_scalar(unsigned char *p, const char *tag, size_t taglen, float value) {
  p = hk__pb_len(p, SUMMARY_VALUE, value_with(taglen, 5));
  p = hk__pb_bytes(p, VALUE_TAG, tag, taglen);
  return hk__pb_float(p, VALUE_SIMPLE, value);
}

static size_t text_metadata_size(void) {
  return hk__pb_len_size(hk__pb_len_size(sizeof TEXT_PLUGIN - 1)) + 2; /* plugin_data, data_class */
}

static size_t text_tensor_size(size_t textlen) {
  return 2 + 2 + hk__pb_len_size(textlen); /* dtype, empty shape, string_val */
}

static size_t text_value_size(size_t taglen, size_t textlen) {
  return value_with(taglen, hk__pb_len_size(text_tensor_size(textlen)) + hk__pb_len_size(text_metadata_size()));
}

size_t hk__summary_text_size(size_t taglen, size_t textlen) {
  return hk__pb_len_size(text_value_size(taglen, textlen));
}

unsigned char *hk__summary_text(unsigned char *p, const char *tag, size_t taglen, const void *text, size_t textlen) {
  p = hk__pb_len(p, SUMMARY_VALUE, text_value_size(taglen, textlen));
  p = hk__pb_bytes(p, VALUE_TAG, tag, taglen);
  p = hk__pb_len(p, VALUE_TENSOR, text_tensor_size(textlen));
  p = hk__pb_key(p, TENSOR_DTYPE, HK__PB_VARINT);
  p = hk__pb_varint(p, DT_STRING);
  p = hk__pb_len(p, TENSOR_SHAPE, 0); /* a scalar: a shape with no dims */
  p = hk__pb_bytes(p, TENSOR_STRING_VAL, text, textlen);
  p = hk__pb_len(p, VALUE_METADATA, text_metadata_size());
  p = hk__pb_len(p, META_PLUGIN_DATA, hk__pb_len_size(sizeof TEXT_PLUGIN - 1));
  p = hk__pb_bytes(p, PLUGIN_NAME, TEXT_PLUGIN, sizeof TEXT_PLUGIN - 1);
  p = hk__pb_key(p, META_DATA_CLASS, HK__PB_VARINT);
  return hk__pb_varint(p, DATA_CLASS_TENSOR);
}

/* ---- reading ---------------------------------------------------------------------------- */

static int read_varint(const unsigned char **p, const unsigned char *end, uint64_t *out) {
  uint64_t v = 0;
  int shift;
  for (shift = 0; shift < 70; shift += 7) {
    unsigned char b;
    if (*p >= end) return -1;
    b = *(*p)++;
    if (shift == 63 && b > 1) return -1;
    v |= (uint64_t)(b & 0x7fu) << shift;
    if (!(b & 0x80u)) {
      *out = v;
      return 0;
    }
  }
  return -1;
}

/* Read one field's key and skip its payload; a length-delimited payload is
 * returned in [*data, *data + *n). */
static int next_field(const unsigned char **p, const unsigned char *end, uint64_t *field, const unsigned char **data,
                      size_t *n) {
  uint64_t key, len;
  if (read_varint(p, end, &key) != 0) return -1;
  *field = key >> 3;
  if (*field == 0) return -1;
  *data = NULL;
  *n = 0;
  switch (key & 7u) {
    case HK__PB_VARINT: return read_varint(p, end, &len);
    case HK__PB_FIXED64:
      if (end - *p < 8) return -1;
      *p += 8;
      return 0;
    case HK__PB_FIXED32:
      if (end - *p < 4) return -1;
      *p += 4;
      return 0;
    case HK__PB_LEN:
      if (read_varint(p, end, &len) != 0 || len > (uint64_t)(end - *p)) return -1;
      *data = *p;
      *n = (size_t)len;
      *p += len;
      return 0;
    default: return -1; /* groups: never in a Summary */
  }
}

int hk__summary_next_value(const unsigned char **p, const unsigned char *end, const unsigned char **tag,
                           size_t *taglen) {
  while (*p < end) {
    uint64_t field;
    const unsigned char *data, *q, *qend;
    size_t n;
    unsigned char key = **p;
    if (next_field(p, end, &field, &data, &n) != 0) return -1;
    if (field != SUMMARY_VALUE || (key & 7u) != HK__PB_LEN) continue;
    /* A Value: every field must parse; the last tag wins, as in protobuf. */
    *tag = (const unsigned char *)"";
    *taglen = 0;
    q = data;
    qend = data + n;
    while (q < qend) {
      uint64_t f;
      const unsigned char *d;
      size_t dn;
      unsigned char k = *q;
      if (next_field(&q, qend, &f, &d, &dn) != 0) return -1;
      if (f == VALUE_TAG && (k & 7u) == HK__PB_LEN) {
        *tag = d;
        *taglen = dn;
      }
    }
    return 1;
  }
  return 0;
}

hk_code hk__summary_check(const void *data, size_t n, const char *what, size_t *nvalues, hk_status *st) {
  const unsigned char *p = data, *end, *tag;
  size_t taglen, count = 0;
  int r;

  if (nvalues) *nvalues = 0;
  if (n == 0) return HK_OK; /* an empty Summary (data may be NULL) */
  if (data == NULL) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: NULL with %zu bytes", what, n);
  end = p + n;
  while ((r = hk__summary_next_value(&p, end, &tag, &taglen)) == 1) count++;
  if (r < 0)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "%s: not a serialized Summary protocol buffer (malformed field at byte %zu of %zu)", what,
                         (size_t)(p - (const unsigned char *)data), n);
  if (nvalues) *nvalues = count;
  return HK_OK;
}

int hk__utf8_valid(const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s, *end = p + n;
  while (p < end) {
    unsigned c = *p++;
    size_t more;
    uint32_t cp, min;
    if (c < 0x80u) continue;
    if ((c & 0xe0u) == 0xc0u) {
      more = 1;
      cp = c & 0x1fu;
      min = 0x80u;
    } else if ((c & 0xf0u) == 0xe0u) {
      more = 2;
      cp = c & 0x0fu;
      min = 0x800u;
    } else if ((c & 0xf8u) == 0xf0u) {
      more = 3;
      cp = c & 0x07u;
      min = 0x10000u;
    } else {
      return 0;
    }
    if ((size_t)(end - p) < more) return 0;
    while (more--) {
      if ((*p & 0xc0u) != 0x80u) return 0;
      cp = (cp << 6) | (*p++ & 0x3fu);
    }
    if (cp < min || cp > 0x10ffffu || (cp >= 0xd800u && cp <= 0xdfffu)) return 0;
  }
  return 1;
}

/* ---- RunMetadata (proto.h) --------------------------------------------------------- */

#define RUN_METADATA_STEP_STATS 1u
#define STEP_STATS_DEV_STATS 1u
#define DEVICE_STATS_DEVICE 1u
#define DEVICE_STATS_NODE_STATS 2u
#define NODE_NAME 1u
#define NODE_ALL_START_MICROS 2u
#define NODE_OP_END_REL_MICROS 4u
#define NODE_ALL_END_REL_MICROS 5u
#define NODE_TIMELINE_LABEL 8u
#define NODE_THREAD_ID 10u

static size_t node_name_len(const hk__node_stats *s) { return strlen(s->name) + (s->part ? 1 + strlen(s->part) : 0); }

/* An int64 field; proto3 leaves zero out. */
static size_t int_field_size(uint64_t v) { return v ? 1 + hk__pb_varint_len(v) : 0; }

static unsigned char *put_int_field(unsigned char *p, unsigned field, uint64_t v) {
  if (!v) return p;
  p = hk__pb_key(p, field, HK__PB_VARINT);
  return hk__pb_varint(p, v);
}

static size_t node_size(const hk__node_stats *s) {
  size_t name = node_name_len(s), label = name + strlen(" = ") + strlen(s->kind) + strlen("()");
  uint64_t dur = (uint64_t)(s->dur_micros > 0 ? s->dur_micros : 0);
  return hk__pb_len_size(name) + int_field_size((uint64_t)s->start_micros) + 2 * int_field_size(dur) +
         hk__pb_len_size(label) + int_field_size(s->thread_id);
}

static unsigned char *put_node_name(unsigned char *p, const hk__node_stats *s) {
  size_t n = strlen(s->name);
  memcpy(p, s->name, n);
  p += n;
  if (s->part) {
    *p++ = '.';
    n = strlen(s->part);
    memcpy(p, s->part, n);
    p += n;
  }
  return p;
}

static unsigned char *put_node(unsigned char *p, const hk__node_stats *s) {
  size_t name = node_name_len(s), kind = strlen(s->kind);
  uint64_t dur = (uint64_t)(s->dur_micros > 0 ? s->dur_micros : 0);
  p = hk__pb_len(p, DEVICE_STATS_NODE_STATS, node_size(s));
  p = hk__pb_len(p, NODE_NAME, name);
  p = put_node_name(p, s);
  p = put_int_field(p, NODE_ALL_START_MICROS, (uint64_t)s->start_micros);
  p = put_int_field(p, NODE_OP_END_REL_MICROS, dur);
  p = put_int_field(p, NODE_ALL_END_REL_MICROS, dur);
  p = hk__pb_len(p, NODE_TIMELINE_LABEL, name + 3 + kind + 2);
  p = put_node_name(p, s);
  memcpy(p, " = ", 3);
  memcpy(p + 3, s->kind, kind);
  memcpy(p + 3 + kind, "()", 2);
  p += 3 + kind + 2;
  return put_int_field(p, NODE_THREAD_ID, s->thread_id);
}

static size_t device_size(const hk__device_stats *d) {
  size_t n = hk__pb_len_size(strlen(d->device));
  for (size_t i = 0; i < d->n; i++) n += hk__pb_len_size(node_size(&d->nodes[i]));
  return n;
}

static size_t step_stats_size(const hk__device_stats *devs, size_t ndevs) {
  size_t n = 0;
  for (size_t i = 0; i < ndevs; i++) n += hk__pb_len_size(device_size(&devs[i]));
  return n;
}

size_t hk__run_metadata_size(const hk__device_stats *devs, size_t ndevs) {
  return hk__pb_len_size(step_stats_size(devs, ndevs));
}

unsigned char *hk__run_metadata(unsigned char *p, const hk__device_stats *devs, size_t ndevs) {
  p = hk__pb_len(p, RUN_METADATA_STEP_STATS, step_stats_size(devs, ndevs));
  for (size_t i = 0; i < ndevs; i++) {
    p = hk__pb_len(p, STEP_STATS_DEV_STATS, device_size(&devs[i]));
    p = hk__pb_bytes(p, DEVICE_STATS_DEVICE, devs[i].device, strlen(devs[i].device));
    for (size_t k = 0; k < devs[i].n; k++) p = put_node(p, &devs[i].nodes[k]);
  }
  return p;
}
