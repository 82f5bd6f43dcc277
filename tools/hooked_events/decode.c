/*
 * hooked-events — Event protocol buffers, decoded by hand: wall_time = 1
 * (double), step = 2 (int64), summary = 5, Summary.value = 1 (repeated
 * Value: tag = 1, simple_value = 2 float, histo = 5, tensor = 8
 * TensorProto, metadata = 9 SummaryMetadata). A scalar is a simple_value,
 * or a TensorProto of one element, unless the tag's metadata gives it to
 * another plugin (main.c's comment says which TensorProtos count).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "tool.h"

#include <math.h>
#include <string.h>

/* ---- protocol buffer wire format --------------------------------------------- */

typedef struct pb {
  const unsigned char *p, *end;
} pb;

enum { WIRE_VARINT = 0, WIRE_I64 = 1, WIRE_LEN = 2, WIRE_I32 = 5 };

static int pb_varint(pb *b, uint64_t *v) {
  uint64_t r = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    unsigned char c;
    if (b->p >= b->end) return -1;
    c = *b->p++;
    r |= (uint64_t)(c & 0x7f) << shift;
    if ((c & 0x80) == 0) {
      *v = r;
      return 0;
    }
  }
  return -1;
}

uint64_t get_le(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

/* The next field's number and wire type; for a length-delimited field also
 * its bytes, for the others its value (varint, or the fixed bits). */
typedef struct pb_field {
  uint32_t num;
  int wire;
  uint64_t u;
  pb sub;
} pb_field;

/* @return 1 for a field, 0 at the end, -1 when malformed (`why` set). */
static int pb_next(pb *b, pb_field *f, const char **why) {
  uint64_t key, len;
  if (b->p == b->end) return 0;
  if (pb_varint(b, &key) != 0) return *why = "truncated field key", -1;
  f->num = (uint32_t)(key >> 3);
  f->wire = (int)(key & 7);
  if (f->num == 0 || key >> 3 > 0x1fffffff) return *why = "invalid field number", -1;
  switch (f->wire) {
    case WIRE_VARINT:
      if (pb_varint(b, &f->u) != 0) return *why = "truncated varint", -1;
      return 1;
    case WIRE_I64:
      if (b->end - b->p < 8) return *why = "truncated 64-bit field", -1;
      f->u = get_le(b->p, 8);
      b->p += 8;
      return 1;
    case WIRE_I32:
      if (b->end - b->p < 4) return *why = "truncated 32-bit field", -1;
      f->u = get_le(b->p, 4);
      b->p += 4;
      return 1;
    case WIRE_LEN:
      if (pb_varint(b, &len) != 0) return *why = "truncated length", -1;
      if (len > (uint64_t)(b->end - b->p)) return *why = "a length-delimited field runs past its message", -1;
      f->sub.p = b->p;
      f->sub.end = b->p + len;
      b->p += len;
      return 1;
    default: return *why = "unsupported wire type (groups are not used by Event)", -1;
  }
}

static double f32_bits(uint32_t bits) {
  float f;
  memcpy(&f, &bits, sizeof f);
  return (double)f;
}

static double f64_bits(uint64_t bits) {
  double d;
  memcpy(&d, &bits, sizeof d);
  return d;
}

static double half_bits(uint32_t h) {
  int exp = (int)((h >> 10) & 0x1f);
  double mant = (double)(h & 0x3ff), v;
  if (exp == 0)
    v = ldexp(mant, -24);
  else if (exp == 31)
    v = mant == 0 ? INFINITY : NAN;
  else
    v = ldexp(mant + 1024.0, exp - 25);
  return (h & 0x8000u) ? -v : v;
}

/* ---- Summary values ------------------------------------------------------------- */

/* TensorFlow's DataType numbers. */
enum { DT_FLOAT = 1, DT_DOUBLE = 2, DT_INT32 = 3, DT_INT64 = 9, DT_BFLOAT16 = 14, DT_HALF = 19 };

typedef struct scalar {
  double value;
  int dbl;
} scalar;

/* The first element of a repeated numeric field, packed or not. */
typedef struct first_val {
  int have;
  uint64_t bits;
} first_val;

static int take_first(const pb_field *f, int fixed_bytes, first_val *fv, const char **why) {
  if (fv->have) return 0;
  if (f->wire == WIRE_LEN) { /* packed */
    pb s = f->sub;
    if (s.p == s.end) return 0;
    if (fixed_bytes > 0) {
      if (s.end - s.p < fixed_bytes) return *why = "truncated packed value", -1;
      fv->bits = get_le(s.p, fixed_bytes);
    } else if (pb_varint(&s, &fv->bits) != 0) {
      return *why = "truncated packed varint", -1;
    }
  } else {
    fv->bits = f->u;
  }
  fv->have = 1;
  return 0;
}

/* A TensorProto holding one number. @return 1 with *out set, 0 when it is
 * not a scalar this tool plots, -1 when malformed. */
static int decode_tensor(pb t, scalar *out, const char **why) {
  pb_field f;
  uint64_t dtype = 0, numel = 1;
  int r, have_content = 0, unknown_rank = 0;
  pb content = {NULL, NULL};
  first_val fl = {0, 0}, db = {0, 0}, hv = {0, 0}, iv = {0, 0}, i64 = {0, 0};

  while ((r = pb_next(&t, &f, why)) == 1) {
    switch (f.num) {
      case 1:
        if (f.wire == WIRE_VARINT) dtype = f.u;
        break;
      case 2: /* TensorShapeProto: dim = 2 { size = 1 }, unknown_rank = 3 */
        if (f.wire == WIRE_LEN) {
          pb s = f.sub;
          pb_field d;
          while ((r = pb_next(&s, &d, why)) == 1) {
            if (d.num == 3 && d.wire == WIRE_VARINT && d.u != 0) unknown_rank = 1;
            if (d.num == 2 && d.wire == WIRE_LEN) {
              pb dim = d.sub;
              pb_field sz;
              uint64_t size = 0;
              while ((r = pb_next(&dim, &sz, why)) == 1)
                if (sz.num == 1 && sz.wire == WIRE_VARINT) size = sz.u;
              if (r < 0) return -1;
              if (size != 1) numel = 0; /* -1 (unknown), 0 or > 1: not one element */
            }
          }
          if (r < 0) return -1;
        }
        break;
      case 4:
        if (f.wire == WIRE_LEN) {
          content = f.sub;
          have_content = 1;
        }
        break;
      case 5:
        if (take_first(&f, 4, &fl, why) != 0) return -1;
        break;
      case 6:
        if (take_first(&f, 8, &db, why) != 0) return -1;
        break;
      case 7:
        if (take_first(&f, 0, &iv, why) != 0) return -1;
        break;
      case 10:
        if (take_first(&f, 0, &i64, why) != 0) return -1;
        break;
      case 13:
        if (take_first(&f, 0, &hv, why) != 0) return -1;
        break;
      default: break;
    }
  }
  if (r < 0) return -1;
  if (numel != 1 || unknown_rank) return 0;
  if (have_content) {
    size_t n = (size_t)(content.end - content.p);
    const unsigned char *c = content.p;
    switch (dtype) {
      case DT_FLOAT: return n == 4 ? (out->value = f32_bits((uint32_t)get_le(c, 4)), out->dbl = 0, 1) : 0;
      case DT_DOUBLE: return n == 8 ? (out->value = f64_bits(get_le(c, 8)), out->dbl = 1, 1) : 0;
      case DT_HALF: return n == 2 ? (out->value = half_bits((uint32_t)get_le(c, 2)), out->dbl = 0, 1) : 0;
      case DT_BFLOAT16: return n == 2 ? (out->value = f32_bits((uint32_t)get_le(c, 2) << 16), out->dbl = 0, 1) : 0;
      case DT_INT32: return n == 4 ? (out->value = (double)(int32_t)(uint32_t)get_le(c, 4), out->dbl = 1, 1) : 0;
      case DT_INT64: return n == 8 ? (out->value = (double)(int64_t)get_le(c, 8), out->dbl = 1, 1) : 0;
      default: return 0;
    }
  }
  /* An empty value list means zeros, as TensorFlow's make_ndarray reads it. */
  switch (dtype) {
    case DT_FLOAT: out->value = fl.have ? f32_bits((uint32_t)fl.bits) : 0.0, out->dbl = 0; return 1;
    case DT_DOUBLE: out->value = db.have ? f64_bits(db.bits) : 0.0, out->dbl = 1; return 1;
    case DT_HALF: out->value = hv.have ? half_bits((uint32_t)hv.bits & 0xffffu) : 0.0, out->dbl = 0; return 1;
    case DT_BFLOAT16:
      out->value = hv.have ? f32_bits(((uint32_t)hv.bits & 0xffffu) << 16) : 0.0, out->dbl = 0;
      return 1;
    case DT_INT32: out->value = iv.have ? (double)(int32_t)(uint32_t)iv.bits : 0.0, out->dbl = 1; return 1;
    case DT_INT64: out->value = i64.have ? (double)(int64_t)i64.bits : 0.0, out->dbl = 1; return 1;
    default: return 0;
  }
}

/* SummaryMetadata: plugin_data = 1 { plugin_name = 1 }, data_class = 4.
 * @return 1 when it gives the tag to a plugin other than scalars, 0 if
 * not, -1 when malformed. */
static int metadata_other_plugin(pb m, const char **why) {
  pb_field f;
  int r, other = 0;
  uint64_t data_class = 0;

  while ((r = pb_next(&m, &f, why)) == 1) {
    if (f.num == 4 && f.wire == WIRE_VARINT) data_class = f.u;
    if (f.num == 1 && f.wire == WIRE_LEN) {
      pb pd = f.sub;
      pb_field g;
      while ((r = pb_next(&pd, &g, why)) == 1) {
        if (g.num == 1 && g.wire == WIRE_LEN) {
          size_t n = (size_t)(g.sub.end - g.sub.p);
          other = n > 0 && !(n == 7 && memcmp(g.sub.p, "scalars", 7) == 0);
        }
      }
      if (r < 0) return -1;
    }
  }
  if (r < 0) return -1;
  if (data_class == 1) return 0;                    /* DATA_CLASS_SCALAR */
  if (data_class == 2 || data_class == 3) return 1; /* TENSOR, BLOB_SEQUENCE */
  return other;
}

/* One Summary.Value. @return 0, -1 malformed, -2 out of memory. */
static int decode_value(dataset *ds, uint32_t run, int64_t step, double wall, pb v, const char **why) {
  pb_field f;
  int r, kind = 0; /* the oneof's last member: 0 none, 2 simple_value, 8 tensor, other */
  uint64_t simple = 0;
  pb tag = {NULL, NULL}, tensor = {NULL, NULL}, meta = {NULL, NULL};
  int have_tag = 0, have_meta = 0;
  int64_t id;
  scalar s;
  point p;

  while ((r = pb_next(&v, &f, why)) == 1) {
    switch (f.num) {
      case 1:
        if (f.wire != WIRE_LEN) return *why = "Summary.Value.tag is not a string", -1;
        tag = f.sub;
        have_tag = 1;
        break;
      case 2:
        if (f.wire != WIRE_I32) return *why = "Summary.Value.simple_value is not a 32-bit float", -1;
        simple = f.u;
        kind = 2;
        break;
      case 8:
        if (f.wire != WIRE_LEN) return *why = "Summary.Value.tensor is not a message", -1;
        tensor = f.sub;
        kind = 8;
        break;
      case 9:
        if (f.wire == WIRE_LEN) {
          meta = f.sub;
          have_meta = 1;
        }
        break;
      case 3:
      case 4:
      case 5:
      case 6: kind = (int)f.num; break; /* histogram, image, histo, audio */
      default: break;
    }
  }
  if (r < 0) return -1;
  if (!have_tag) tag.p = tag.end = (const unsigned char *)"";
  if (memchr(tag.p, '\0', (size_t)(tag.end - tag.p)) != NULL) return *why = "a tag holds a NUL byte", -1;
  if (kind != 2 && kind != 8 && !have_meta) return 0;
  id = intern_tag(ds, tag.p, (size_t)(tag.end - tag.p));
  if (id < 0) return -2;
  if (have_meta) {
    int other = metadata_other_plugin(meta, why);
    if (other < 0) return -1;
    if (other) ds->tags[id].other_plugin = 1;
  }
  if (kind == 2) {
    s.value = f32_bits((uint32_t)simple);
    s.dbl = 0;
  } else if (kind == 8) {
    int got = decode_tensor(tensor, &s, why);
    if (got < 0) return -1;
    if (got == 0) return 0;
  } else {
    return 0;
  }
  p.tag = (uint32_t)id;
  p.run = run;
  p.step = step;
  p.wall = wall;
  p.value = s.value;
  p.seq = ds->seq++;
  p.dbl = (unsigned char)s.dbl;
  p.tensor = kind == 8;
  return add_point(ds, &p) == 0 ? 0 : -2;
}

/* One Event: wall_time = 1, step = 2, summary = 5. @return as decode_value. */
int decode_event(dataset *ds, uint32_t run, const unsigned char *data, size_t n, const char **why) {
  pb b = {data, data + n};
  pb_field f;
  int r;
  double wall = 0;
  int64_t step = 0;

  /* Fields may come in any order: find wall_time and step first. */
  while ((r = pb_next(&b, &f, why)) == 1) {
    if (f.num == 1) {
      if (f.wire != WIRE_I64) return *why = "Event.wall_time is not a double", -1;
      wall = f64_bits(f.u);
    } else if (f.num == 2) {
      if (f.wire != WIRE_VARINT) return *why = "Event.step is not a varint", -1;
      step = (int64_t)f.u;
    }
  }
  if (r < 0) return -1;
  b.p = data;
  while ((r = pb_next(&b, &f, why)) == 1) {
    pb_field vf;
    pb sum;
    int rv;
    if (f.num != 5) continue;
    if (f.wire != WIRE_LEN) return *why = "Event.summary is not a message", -1;
    sum = f.sub;
    while ((rv = pb_next(&sum, &vf, why)) == 1) {
      int rc;
      if (vf.num != 1) continue;
      if (vf.wire != WIRE_LEN) return *why = "Summary.value is not a message", -1;
      rc = decode_value(ds, run, step, wall, vf.sub, why);
      if (rc != 0) return rc;
    }
    if (rv < 0) return -1;
  }
  return r < 0 ? -1 : 0;
}
