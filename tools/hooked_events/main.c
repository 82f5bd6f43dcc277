/*
 * hooked-events — read TensorBoard event files and export their scalars.
 *
 *   hooked-events csv PATH              every scalar as tag,step,wall_time,value
 *   hooked-events plot PATH -o FILE     one self-contained HTML file, a chart per tag
 *
 * PATH is a summary directory or one event file. A directory's runs are its
 * own event files (every regular file whose name contains "tfevents", as
 * TensorBoard picks them up, read in name order, which for hooked's and
 * TensorFlow's names is the order they were created in) and, for plot, each
 * subdirectory at any depth that holds event files, named by its path
 * relative to PATH.
 *
 * Records are read as TensorFlow's RecordReader frames them (H26): uint64
 * length, masked CRC-32C of the length, payload, masked CRC-32C of the
 * payload; both CRCs of every record are checked. A file may end inside its
 * last record when its writer is still appending or was killed: that record
 * is dropped with a warning. Anything else that does not verify is refused
 * with the file and the record's offset, and nothing is written.
 *
 * Payloads are Event protocol buffers, decoded here by hand: wall_time = 1
 * (double), step = 2 (int64), summary = 5, Summary.value = 1 (repeated
 * Value: tag = 1, simple_value = 2 float, histo = 5, tensor = 8
 * TensorProto, metadata = 9 SummaryMetadata). A scalar is a simple_value, or
 * a TensorProto of one element (rank 0, or every dimension 1) of dtype
 * float, double, half, bfloat16, int32 or int64, held in tensor_content or
 * in float_val, double_val, half_val, int_val or int64_val, as TensorBoard's
 * newer writers store scalars — unless the tag's metadata gives it to another
 * plugin (text, histograms, ...). Every other value is skipped.
 *
 * Written only against the public API (hk_crc32c_extend() of
 * hooked/checkpoint.h) and POSIX, as any third-party tool could be.
 *
 * Exit status: 0 success; 1 any problem (one line on stderr,
 * "hooked-events: <file>: <message>"); 2 bad usage.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#if !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <hooked/hooked.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define TOOL "hooked-events"
#define MAX_DEPTH 32

static const char usage_text[] = "usage: " TOOL
                                 " COMMAND ARGS\n"
                                 "\n"
                                 "Export the scalars of TensorBoard event files (events.out.tfevents.*), as\n"
                                 "hooked's summary writer and TensorFlow write them. PATH is a directory or one\n"
                                 "event file; a directory's event files are those directly in it whose name\n"
                                 "contains 'tfevents', read in name order.\n"
                                 "\n"
                                 "commands:\n"
                                 "  csv PATH              print every scalar of PATH as CSV: a header line\n"
                                 "                        'tag,step,wall_time,value', then one line per value,\n"
                                 "                        sorted by tag (byte order), step, wall_time and the order\n"
                                 "                        written; every value is printed, duplicates included.\n"
                                 "                        Tags holding a comma, a double quote or a line break are\n"
                                 "                        quoted (RFC 4180); values print in the fewest digits that\n"
                                 "                        read back to the same number, or nan, inf, -inf.\n"
                                 "                        Subdirectories are not read: run csv on each of them\n"
                                 "  plot PATH -o FILE     write FILE, one self-contained HTML page (inline SVG, no\n"
                                 "                        script, nothing fetched) with a line chart per scalar tag:\n"
                                 "                        step on x, value on y. Each subdirectory of PATH holding\n"
                                 "                        event files is another run, overlaid in its own colour.\n"
                                 "                        A step written twice (a resumed run) plots its last\n"
                                 "                        value; NaN and infinities are marked above the plot\n"
                                 "\n"
                                 "options:\n"
                                 "  -o, --output FILE     (plot) the HTML file to write; '-' for standard output\n"
                                 "  -h, --help            show this help\n"
                                 "  --version             show the hooked version\n"
                                 "\n"
                                 "Every record's two CRC-32Cs are checked. A file that ends inside its last\n"
                                 "record (still being written, or its writer was killed) is read up to that\n"
                                 "record with a warning; any other damage is an error naming the file and the\n"
                                 "offset of the record.\n"
                                 "\n"
                                 "exit status: 0 success, 1 any problem (a message on stderr), 2 bad usage\n";

/* ---- data ------------------------------------------------------------------ */

typedef struct point {
  uint32_t tag;
  uint32_t run;
  int64_t step;
  double wall;
  double value;
  uint64_t seq;         /* write order: files in name order, records in file order */
  unsigned char dbl;    /* printed as a double (else as the float it was) */
  unsigned char tensor; /* came from a TensorProto (dropped if the tag is another plugin's) */
} point;

typedef struct tag_info {
  char *name;
  int other_plugin; /* its metadata names a plugin other than scalars */
  uint32_t rank;    /* position in byte order */
} tag_info;

typedef struct run_info {
  char *name; /* PATH as given for PATH itself, else the path relative to PATH */
  char **files;
  size_t nfiles, cap;
} run_info;

typedef struct dataset {
  tag_info *tags;
  size_t ntags, tags_cap;
  uint32_t *slots; /* open addressing: tag index + 1; 0 is empty */
  size_t nslots;
  point *pts;
  size_t npts, pts_cap;
  run_info *runs;
  size_t nruns, runs_cap;
  uint64_t seq;
} dataset;

static int out_of_memory(void) {
  fprintf(stderr, TOOL ": out of memory\n");
  return 1;
}

static int usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, TOOL ": ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\nTry '" TOOL " --help'.\n");
  return 2;
}

static char *str_dup(const char *s) {
  size_t n = strlen(s) + 1;
  char *c = malloc(n);
  if (c != NULL) memcpy(c, s, n);
  return c;
}

static char *path_join(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  int slash = la > 0 && a[la - 1] != '/';
  char *s = malloc(la + (size_t)slash + lb + 1);
  if (s == NULL) return NULL;
  memcpy(s, a, la);
  if (slash) s[la] = '/';
  memcpy(s + la + slash, b, lb + 1);
  return s;
}

static void dataset_free(dataset *ds) {
  for (size_t i = 0; i < ds->ntags; i++) free(ds->tags[i].name);
  for (size_t i = 0; i < ds->nruns; i++) {
    for (size_t k = 0; k < ds->runs[i].nfiles; k++) free(ds->runs[i].files[k]);
    free(ds->runs[i].files);
    free(ds->runs[i].name);
  }
  free(ds->tags);
  free(ds->slots);
  free(ds->pts);
  free(ds->runs);
}

static uint64_t hash_bytes(const unsigned char *p, size_t n) {
  uint64_t h = 1469598103934665603u; /* FNV-1a */
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211u;
  return h;
}

static int rehash(dataset *ds, size_t nslots) {
  uint32_t *slots = calloc(nslots, sizeof *slots);
  if (slots == NULL) return -1;
  for (size_t i = 0; i < ds->ntags; i++) {
    const char *name = ds->tags[i].name;
    size_t h = (size_t)hash_bytes((const unsigned char *)name, strlen(name)) & (nslots - 1);
    while (slots[h] != 0) h = (h + 1) & (nslots - 1);
    slots[h] = (uint32_t)i + 1;
  }
  free(ds->slots);
  ds->slots = slots;
  ds->nslots = nslots;
  return 0;
}

/* The index of tag `name` (n bytes, no NUL), added when new. @return -1 when out of memory. */
static int64_t intern_tag(dataset *ds, const unsigned char *name, size_t n) {
  size_t h;
  char *copy;

  if (ds->nslots == 0 || (ds->ntags + 1) * 2 > ds->nslots) {
    if (rehash(ds, ds->nslots ? ds->nslots * 2 : 64) != 0) return -1;
  }
  h = (size_t)hash_bytes(name, n) & (ds->nslots - 1);
  while (ds->slots[h] != 0) {
    const char *t = ds->tags[ds->slots[h] - 1].name;
    if (strlen(t) == n && memcmp(t, name, n) == 0) return ds->slots[h] - 1;
    h = (h + 1) & (ds->nslots - 1);
  }
  if (ds->ntags == ds->tags_cap) {
    size_t cap = ds->tags_cap ? ds->tags_cap * 2 : 32;
    tag_info *t = realloc(ds->tags, cap * sizeof *t);
    if (t == NULL) return -1;
    ds->tags = t;
    ds->tags_cap = cap;
  }
  copy = malloc(n + 1);
  if (copy == NULL) return -1;
  if (n > 0) memcpy(copy, name, n);
  copy[n] = '\0';
  ds->tags[ds->ntags].name = copy;
  ds->tags[ds->ntags].other_plugin = 0;
  ds->tags[ds->ntags].rank = 0;
  ds->slots[h] = (uint32_t)ds->ntags + 1;
  return (int64_t)ds->ntags++;
}

static int add_point(dataset *ds, const point *p) {
  if (ds->npts == ds->pts_cap) {
    size_t cap = ds->pts_cap ? ds->pts_cap * 2 : 1024;
    point *pts = realloc(ds->pts, cap * sizeof *pts);
    if (pts == NULL) return -1;
    ds->pts = pts;
    ds->pts_cap = cap;
  }
  ds->pts[ds->npts++] = *p;
  return 0;
}

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

static uint64_t get_le(const unsigned char *p, int n) {
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
static int decode_event(dataset *ds, uint32_t run, const unsigned char *data, size_t n, const char **why) {
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

/* ---- record files ---------------------------------------------------------------- */

static uint32_t masked_crc(const void *data, size_t n) {
  uint32_t crc = hk_crc32c_extend(0, data, n);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

static void torn(const char *path, uint64_t off, uint64_t have, uint64_t need) {
  fprintf(stderr,
          TOOL ": warning: %s: offset %" PRIu64 ": the file ends inside its last record (%" PRIu64 " of %" PRIu64
               " bytes): still being written, or its writer stopped; read up to that record\n",
          path, off, have, need);
}

/* Read every record of one event file into ds. @return 0, or 1 after a message. */
static int read_event_file(dataset *ds, uint32_t run, const char *path) {
  FILE *f = fopen(path, "rb");
  struct stat sb;
  unsigned char head[12], *buf = NULL;
  size_t cap = 0;
  uint64_t off = 0, size;
  int rc = 0;

  if (f == NULL) {
    fprintf(stderr, TOOL ": %s: cannot open: %s\n", path, strerror(errno));
    return 1;
  }
  if (fstat(fileno(f), &sb) != 0) {
    fprintf(stderr, TOOL ": %s: cannot stat: %s\n", path, strerror(errno));
    fclose(f);
    return 1;
  }
  size = (uint64_t)sb.st_size;
  while (off < size) {
    uint64_t len, left = size - off;
    uint32_t stored;
    size_t got;
    const char *why = NULL;
    int d;

    if (left < sizeof head) {
      torn(path, off, left, sizeof head);
      break;
    }
    got = fread(head, 1, sizeof head, f);
    if (got < sizeof head) { /* shrank since fstat, or a read error */
      if (ferror(f)) goto read_error;
      torn(path, off, got, sizeof head);
      break;
    }
    len = get_le(head, 8);
    stored = (uint32_t)get_le(head + 8, 4);
    if (masked_crc(head, 8) != stored) {
      fprintf(stderr,
              TOOL ": %s: offset %" PRIu64
                   ": bad record header: the CRC-32C of the length does not match "
                   "(not a TFRecord event file, or damaged)\n",
              path, off);
      rc = 1;
      break;
    }
    if (len > left - sizeof head || left - sizeof head - len < 4) {
      torn(path, off, left, sizeof head + len + 4);
      break;
    }
    if (len + 4 > cap) {
      unsigned char *nb;
      if (len + 4 > SIZE_MAX / 2) {
        rc = out_of_memory();
        break;
      }
      nb = realloc(buf, (size_t)len + 4);
      if (nb == NULL) {
        rc = out_of_memory();
        break;
      }
      buf = nb;
      cap = (size_t)len + 4;
    }
    got = fread(buf, 1, (size_t)len + 4, f);
    if (got < len + 4) {
      if (ferror(f)) goto read_error;
      torn(path, off, sizeof head + got, sizeof head + len + 4);
      break;
    }
    if (masked_crc(buf, (size_t)len) != (uint32_t)get_le(buf + len, 4)) {
      fprintf(stderr,
              TOOL ": %s: offset %" PRIu64 ": record of %" PRIu64
                   " bytes: the CRC-32C of its data does not match (damaged)\n",
              path, off, len);
      rc = 1;
      break;
    }
    d = decode_event(ds, run, buf, (size_t)len, &why);
    if (d == -2) {
      rc = out_of_memory();
      break;
    }
    if (d != 0) {
      fprintf(stderr,
              TOOL ": %s: offset %" PRIu64 ": record of %" PRIu64 " bytes is not an Event protocol buffer: %s\n", path,
              off, len, why);
      rc = 1;
      break;
    }
    off += sizeof head + len + 4;
  }
  free(buf);
  fclose(f);
  return rc;

read_error:
  fprintf(stderr, TOOL ": %s: offset %" PRIu64 ": read error: %s\n", path, off, strerror(errno));
  free(buf);
  fclose(f);
  return 1;
}

/* ---- finding runs ----------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

typedef struct strlist {
  char **v;
  size_t n, cap;
} strlist;

static int strlist_push(strlist *l, char *s) {
  if (s == NULL) return -1;
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 16;
    char **v = realloc(l->v, cap * sizeof *v);
    if (v == NULL) {
      free(s);
      return -1;
    }
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = s;
  return 0;
}

static void strlist_free(strlist *l) {
  for (size_t i = 0; i < l->n; i++) free(l->v[i]);
  free(l->v);
}

static int is_event_file_name(const char *name) { return strstr(name, "tfevents") != NULL; }

typedef struct ancestor {
  dev_t dev;
  ino_t ino;
} ancestor;

/* Add the run of `dir` if it holds event files, then, when `recurse`, its
 * subdirectories in name order. `rel` is its path relative to PATH ("" for
 * PATH itself, whose run is named `root_name`). Symbolic links are followed
 * (runs are often linked into a comparison directory); a directory that is
 * its own ancestor is skipped. @return 0, or 1 after a message. */
static int scan_dir(dataset *ds, const char *dir, const char *rel, const char *root_name, int recurse, ancestor *chain,
                    int depth, strlist *subruns) {
  DIR *d = opendir(dir);
  struct dirent *e;
  strlist files = {NULL, 0, 0}, subdirs = {NULL, 0, 0};
  struct stat sb;
  int rc = 0;

  if (d == NULL) {
    fprintf(stderr, TOOL ": %s: cannot open directory: %s\n", dir, strerror(errno));
    return 1;
  }
  if (fstat(dirfd(d), &sb) == 0) {
    for (int i = 0; i < depth; i++)
      if (chain[i].dev == sb.st_dev && chain[i].ino == sb.st_ino) {
        closedir(d);
        return 0;
      }
    chain[depth].dev = sb.st_dev;
    chain[depth].ino = sb.st_ino;
  }
  errno = 0;
  while ((e = readdir(d)) != NULL) {
    char *path;
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    path = path_join(dir, e->d_name);
    if (path == NULL) {
      rc = out_of_memory();
      break;
    }
    if (stat(path, &sb) != 0) { /* a dangling link, or it went away */
      free(path);
      continue;
    }
    if (S_ISREG(sb.st_mode) && is_event_file_name(e->d_name)) {
      if (strlist_push(&files, path) != 0) {
        rc = out_of_memory();
        break;
      }
    } else if (S_ISDIR(sb.st_mode) && (recurse || subruns != NULL)) {
      if (strlist_push(&subdirs, str_dup(e->d_name)) != 0) {
        free(path);
        rc = out_of_memory();
        break;
      }
      free(path);
    } else {
      free(path);
    }
    errno = 0;
  }
  if (rc == 0 && errno != 0) {
    fprintf(stderr, TOOL ": %s: cannot read directory: %s\n", dir, strerror(errno));
    rc = 1;
  }
  closedir(d);
  if (rc != 0) goto done;

  if (files.n > 0) {
    run_info *r;
    if (ds->nruns == ds->runs_cap) {
      size_t cap = ds->runs_cap ? ds->runs_cap * 2 : 8;
      run_info *runs = realloc(ds->runs, cap * sizeof *runs);
      if (runs == NULL) {
        rc = out_of_memory();
        goto done;
      }
      ds->runs = runs;
      ds->runs_cap = cap;
    }
    r = &ds->runs[ds->nruns];
    r->name = str_dup(rel[0] != '\0' ? rel : root_name);
    if (r->name == NULL) {
      rc = out_of_memory();
      goto done;
    }
    qsort(files.v, files.n, sizeof *files.v, cmp_str);
    r->files = files.v;
    r->nfiles = files.n;
    r->cap = files.cap;
    files.v = NULL;
    files.n = 0;
    ds->nruns++;
  }
  if (subdirs.n > 0) qsort(subdirs.v, subdirs.n, sizeof *subdirs.v, cmp_str);
  for (size_t i = 0; i < subdirs.n && rc == 0; i++) {
    char *sub = path_join(dir, subdirs.v[i]);
    char *subname = rel[0] == '\0' ? str_dup(subdirs.v[i]) : path_join(rel, subdirs.v[i]);
    if (sub == NULL || subname == NULL) {
      free(sub);
      free(subname);
      rc = out_of_memory();
      break;
    }
    if (recurse) {
      if (depth + 1 < MAX_DEPTH) rc = scan_dir(ds, sub, subname, root_name, 1, chain, depth + 1, NULL);
      free(subname);
    } else if (strlist_push(subruns, subname) != 0) {
      rc = out_of_memory();
    }
    free(sub);
  }
done:
  strlist_free(&files);
  strlist_free(&subdirs);
  return rc;
}

/* Fill ds->runs from PATH: one file, or a directory (and, when `recurse`,
 * its subdirectories). @return 0, or 1 after a message. */
static int find_runs(dataset *ds, const char *path, int recurse) {
  struct stat sb;
  ancestor chain[MAX_DEPTH];
  strlist subdirs = {NULL, 0, 0};
  int rc;

  if (stat(path, &sb) != 0) {
    fprintf(stderr, TOOL ": %s: %s\n", path, strerror(errno));
    return 1;
  }
  if (S_ISREG(sb.st_mode)) {
    const char *base = strrchr(path, '/');
    ds->runs = calloc(1, sizeof *ds->runs);
    if (ds->runs == NULL) return out_of_memory();
    ds->runs_cap = 1;
    ds->runs[0].name = str_dup(base ? base + 1 : path);
    ds->runs[0].files = calloc(1, sizeof(char *));
    if (ds->runs[0].name == NULL || ds->runs[0].files == NULL || (ds->runs[0].files[0] = str_dup(path)) == NULL) {
      ds->nruns = 1;
      return out_of_memory();
    }
    ds->runs[0].nfiles = 1;
    ds->nruns = 1;
    return 0;
  }
  if (!S_ISDIR(sb.st_mode)) {
    fprintf(stderr, TOOL ": %s: neither a directory nor a regular file\n", path);
    return 1;
  }
  rc = scan_dir(ds, path, "", path, recurse, chain, 0, recurse ? NULL : &subdirs);
  if (rc == 0 && ds->nruns == 0) {
    if (recurse) {
      fprintf(stderr, TOOL ": %s: no event files (names containing 'tfevents') in it or its subdirectories\n", path);
    } else {
      fprintf(stderr, TOOL ": %s: no event files (names containing 'tfevents') in it", path);
      if (subdirs.n > 0) {
        fprintf(stderr, "; csv does not read subdirectories (%s%s): give one of them as PATH", subdirs.v[0],
                subdirs.n > 1 ? ", ..." : "");
      }
      fprintf(stderr, "\n");
    }
    rc = 1;
  }
  strlist_free(&subdirs);
  return rc;
}

/* Read every run's files, then drop the tensor values of tags that belong to
 * another plugin (their metadata may come after their first value), and
 * rank the tags in byte order. @return 0, or 1 after a message. */
static int cmp_tag_ptr(const void *a, const void *b) {
  const tag_info *x = *(tag_info *const *)a, *y = *(tag_info *const *)b;
  return strcmp(x->name, y->name);
}

static int load(dataset *ds) {
  tag_info **order;
  size_t k = 0;

  for (size_t r = 0; r < ds->nruns; r++)
    for (size_t i = 0; i < ds->runs[r].nfiles; i++)
      if (read_event_file(ds, (uint32_t)r, ds->runs[r].files[i]) != 0) return 1;
  for (size_t i = 0; i < ds->npts; i++)
    if (!(ds->pts[i].tensor && ds->tags[ds->pts[i].tag].other_plugin)) ds->pts[k++] = ds->pts[i];
  ds->npts = k;
  if (ds->ntags == 0) return 0;
  order = malloc(ds->ntags * sizeof *order);
  if (order == NULL) return out_of_memory();
  for (size_t i = 0; i < ds->ntags; i++) order[i] = &ds->tags[i];
  qsort(order, ds->ntags, sizeof *order, cmp_tag_ptr);
  for (size_t i = 0; i < ds->ntags; i++) order[i]->rank = (uint32_t)i;
  free(order);
  return 0;
}

/* ---- formatting ------------------------------------------------------------------- */

/* The fewest significant digits that read back to the same float (or double). */
static void fmt_num(char *buf, size_t cap, double v, int dbl) {
  if (isnan(v)) {
    snprintf(buf, cap, "nan");
    return;
  }
  if (isinf(v)) {
    snprintf(buf, cap, v > 0 ? "inf" : "-inf");
    return;
  }
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, cap, "%.*g", prec, v);
    if (dbl ? strtod(buf, NULL) == v : strtof(buf, NULL) == (float)v) {
      /* %g writes 10 in one digit as "1e+01": give an integer part its digits. */
      int x = v == 0 ? 0 : (int)floor(log10(fabs(v)));
      if (x >= prec && x < 17) snprintf(buf, cap, "%.*g", x + 1, v);
      return;
    }
  }
}

static void csv_field(FILE *out, const char *s) {
  if (strpbrk(s, ",\"\r\n") == NULL) {
    fputs(s, out);
    return;
  }
  fputc('"', out);
  for (; *s; s++) {
    if (*s == '"') fputc('"', out);
    fputc(*s, out);
  }
  fputc('"', out);
}

/* ---- csv ------------------------------------------------------------------------------ */

static const dataset *sort_ds; /* qsort has no user pointer */

static int cmp_csv(const void *pa, const void *pb) {
  const point *a = pa, *b = pb;
  uint32_t ra = sort_ds->tags[a->tag].rank, rb = sort_ds->tags[b->tag].rank;
  if (ra != rb) return ra < rb ? -1 : 1;
  if (a->step != b->step) return a->step < b->step ? -1 : 1;
  if (a->wall != b->wall) return a->wall < b->wall ? -1 : 1; /* NaN wall times fall back to seq */
  return (a->seq > b->seq) - (a->seq < b->seq);
}

static int cmd_csv(const char *path) {
  dataset ds;
  char v[40], w[40];
  int rc;

  memset(&ds, 0, sizeof ds);
  rc = find_runs(&ds, path, 0);
  if (rc == 0) rc = load(&ds);
  if (rc == 0) {
    sort_ds = &ds;
    if (ds.npts > 0) qsort(ds.pts, ds.npts, sizeof *ds.pts, cmp_csv);
    fputs("tag,step,wall_time,value\n", stdout);
    for (size_t i = 0; i < ds.npts; i++) {
      const point *p = &ds.pts[i];
      csv_field(stdout, ds.tags[p->tag].name);
      fmt_num(w, sizeof w, p->wall, 1);
      fmt_num(v, sizeof v, p->value, p->dbl);
      printf(",%" PRId64 ",%s,%s\n", p->step, w, v);
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
      fprintf(stderr, TOOL ": standard output: write error: %s\n", strerror(errno));
      rc = 1;
    }
  }
  dataset_free(&ds);
  return rc;
}

/* ---- plot ------------------------------------------------------------------------------ */

/* Chart geometry, in SVG user units (= CSS pixels). */
#define SVG_W 540.0
#define SVG_H 300.0
#define PAD_RIGHT 14.0
#define PAD_TOP 12.0
#define STRIP_H 18.0 /* the band above the plot that holds NaN and infinity markers */
#define PAD_BOTTOM 40.0
#define Y_TICKS 5
#define X_TICKS 6
#define DOTS_MAX 60 /* a run with at most this many points also gets a dot per point */

static const char *const palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
#define NCOLORS (sizeof palette / sizeof palette[0])

static void html_escape(FILE *out, const char *s) {
  for (; *s; s++) {
    switch (*s) {
      case '&': fputs("&amp;", out); break;
      case '<': fputs("&lt;", out); break;
      case '>': fputs("&gt;", out); break;
      case '"': fputs("&quot;", out); break;
      case '\'': fputs("&#39;", out); break;
      default: fputc(*s, out);
    }
  }
}

static int cmp_plot(const void *pa, const void *pb) {
  const point *a = pa, *b = pb;
  uint32_t ra = sort_ds->tags[a->tag].rank, rb = sort_ds->tags[b->tag].rank;
  if (ra != rb) return ra < rb ? -1 : 1;
  if (a->run != b->run) return a->run < b->run ? -1 : 1;
  if (a->step != b->step) return a->step < b->step ? -1 : 1;
  return (a->seq > b->seq) - (a->seq < b->seq);
}

/* A "nice" tick spacing (1, 2 or 5 times a power of ten) for about `n` ticks over `range`. */
static double nice_spacing(double range, int n) {
  double raw = range / n, mag = pow(10.0, floor(log10(raw))), f = raw / mag;
  return (f < 1.5 ? 1.0 : f < 3.0 ? 2.0 : f < 7.0 ? 5.0 : 10.0) * mag;
}

typedef struct axis {
  double lo, hi, spacing; /* in axis units: log10 of the value on a log axis */
  int decimals;           /* y: fixed decimals, or -1 for %g */
  int log;                /* y: a log10 scale */
} axis;

/* Positive values spanning this many decades or more get a log scale: a
 * loss falling from 10 to 0.001 is a flat line on a linear one. */
#define LOG_DECADES 3.0

static void y_axis(axis *a, double lo, double hi) {
  double span;
  a->log = 0;
  if (lo > 0 && log10(hi) - log10(lo) >= LOG_DECADES) {
    a->log = 1;
    a->lo = floor(log10(lo));
    a->hi = ceil(log10(hi));
    a->spacing = ceil((a->hi - a->lo) / 6.0);
    a->decimals = -1;
    return;
  }
  if (!(hi > lo)) { /* one value (or none): a band around it */
    double pad = lo == 0 ? 1.0 : fabs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  span = hi - lo;
  a->spacing = nice_spacing(span, Y_TICKS);
  if (!isfinite(a->spacing) || a->spacing <= 0) a->spacing = span / Y_TICKS;
  /* A float's rounding (0.1f is 0.100000001) must not add a whole tick. */
  a->lo = floor(lo / a->spacing + 1e-6) * a->spacing;
  a->hi = ceil(hi / a->spacing - 1e-6) * a->spacing;
  if (!(a->hi > a->lo)) a->hi = a->lo + a->spacing;
  {
    double big = fmax(fabs(a->lo), fabs(a->hi));
    int dec = (int)-floor(log10(a->spacing) + 1e-9);
    a->decimals = big >= 1e6 || a->spacing < 1e-4 ? -1 : dec > 0 ? dec : 0;
  }
}

static void x_axis(axis *a, int64_t lo, int64_t hi) {
  double span;
  if (hi <= lo) {
    lo = lo > INT64_MIN + 1 ? lo - 1 : lo;
    hi = lo + 2;
  }
  span = (double)hi - (double)lo;
  a->spacing = nice_spacing(span, X_TICKS);
  if (a->spacing < 1) a->spacing = 1;
  a->lo = floor((double)lo / a->spacing) * a->spacing;
  a->hi = ceil((double)hi / a->spacing) * a->spacing;
  a->decimals = 0;
  a->log = 0;
}

static void fmt_y_tick(char *buf, size_t cap, const axis *a, double v) {
  if (a->log) {
    snprintf(buf, cap, "%g", pow(10.0, v));
    return;
  }
  if (fabs(v) < a->spacing * 1e-9) v = 0; /* no "-0.00" */
  if (a->decimals < 0)
    snprintf(buf, cap, "%.3g", v);
  else
    snprintf(buf, cap, "%.*f", a->decimals, v);
}

static void fmt_x_tick(char *buf, size_t cap, double v) {
  double m = fabs(v);
  if (m >= 1e9)
    snprintf(buf, cap, "%gG", v / 1e9);
  else if (m >= 1e6)
    snprintf(buf, cap, "%gM", v / 1e6);
  else if (m >= 1e4)
    snprintf(buf, cap, "%gk", v / 1e3);
  else
    snprintf(buf, cap, "%.0f", v);
}

typedef struct frame {
  double x0, x1, y0, y1; /* plot area */
  axis xa, ya;
  double strip_y; /* centre of the non-finite band, when there is one */
} frame;

/* Data stay this far inside the frame, so no point sits on it. */
#define INSET 6.0

static double px_u(const frame *fr, double u) {
  return fr->x0 + INSET + (u - fr->xa.lo) / (fr->xa.hi - fr->xa.lo) * (fr->x1 - fr->x0 - 2 * INSET);
}

static double px(const frame *fr, int64_t step) { return px_u(fr, (double)step); }

static double py_u(const frame *fr, double u) {
  return fr->y1 - INSET - (u - fr->ya.lo) / (fr->ya.hi - fr->ya.lo) * (fr->y1 - fr->y0 - 2 * INSET);
}

static double py(const frame *fr, double v) { return py_u(fr, fr->ya.log ? log10(v) : v); }

/* One run's line: segments between non-finite values, each reduced to at
 * most four points per pixel column (the first, lowest, highest and last,
 * in step order), which draws the same envelope as every point would. */
typedef struct pathw {
  FILE *out;
  const frame *fr;
  int started; /* a segment is open */
  long col;
  size_t first, lo, hi, last; /* indices of the open column */
  int have;
  const point *p;
} pathw;

static void emit_pt(pathw *w, size_t i) {
  fprintf(w->out, "%s%.1f %.1f", w->started ? " L" : " M", px(w->fr, w->p[i].step), py(w->fr, w->p[i].value));
  w->started = 1;
}

static void flush_col(pathw *w) {
  size_t idx[4] = {w->first, w->lo, w->hi, w->last};
  size_t prev = (size_t)-1;
  if (!w->have) return;
  /* Emit in step order, each index once. */
  for (int a = 0; a < 4; a++)
    for (int b = a + 1; b < 4; b++)
      if (idx[b] < idx[a]) {
        size_t t = idx[a];
        idx[a] = idx[b];
        idx[b] = t;
      }
  for (int a = 0; a < 4; a++) {
    if (idx[a] != prev) emit_pt(w, idx[a]);
    prev = idx[a];
  }
  w->have = 0;
}

static void path_add(pathw *w, size_t i) {
  long col = lround(px(w->fr, w->p[i].step));
  if (w->have && col != w->col) flush_col(w);
  if (!w->have) {
    w->col = col;
    w->first = w->lo = w->hi = w->last = i;
    w->have = 1;
    return;
  }
  if (w->p[i].value < w->p[w->lo].value) w->lo = i;
  if (w->p[i].value > w->p[w->hi].value) w->hi = i;
  w->last = i;
}

static void path_break(pathw *w) {
  flush_col(w);
  w->started = 0;
}

typedef struct run_stats {
  size_t n, nan, pinf, ninf;
  int64_t first_bad[3]; /* the first step of each: NaN, +Inf, -Inf */
  size_t imin, imax;    /* finite extremes; valid when n > nan + pinf + ninf */
  int have_finite;
} run_stats;

static void stats_of(const point *p, size_t n, run_stats *s) {
  memset(s, 0, sizeof *s);
  s->n = n;
  for (size_t i = 0; i < n; i++) {
    double v = p[i].value;
    if (!isfinite(v)) {
      size_t *count = isnan(v) ? &s->nan : v > 0 ? &s->pinf : &s->ninf;
      if ((*count)++ == 0) s->first_bad[isnan(v) ? 0 : v > 0 ? 1 : 2] = p[i].step;
    } else if (!s->have_finite) {
      s->imin = s->imax = i;
      s->have_finite = 1;
    } else {
      if (v < p[s->imin].value) s->imin = i;
      if (v > p[s->imax].value) s->imax = i;
    }
  }
}

/* Markers of the non-finite values of one run: one per kind and pixel column. */
static void draw_nonfinite(FILE *out, const frame *fr, const run_info *run, const point *p, size_t n,
                           const char *color) {
  long last_col[3] = {LONG_MIN, LONG_MIN, LONG_MIN};
  for (size_t i = 0; i < n; i++) {
    double v = p[i].value, x = px(fr, p[i].step), y = fr->strip_y;
    int kind;
    long col = lround(x);
    if (isfinite(v)) continue;
    kind = isnan(v) ? 0 : v > 0 ? 1 : 2;
    if (col == last_col[kind]) continue;
    last_col[kind] = col;
    if (kind == 0)
      fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.2\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\">", x, y,
              color);
    else if (kind == 1)
      fprintf(out, "<path d=\"M%.1f %.1f l4 7 h-8 z\" fill=\"%s\">", x, y - 4, color);
    else
      fprintf(out, "<path d=\"M%.1f %.1f l4 -7 h-8 z\" fill=\"%s\">", x, y + 4, color);
    fputs("<title>", out);
    html_escape(out, run->name);
    fprintf(out, ": step %" PRId64 ": %s</title>%s\n", p[i].step,
            kind == 0   ? "NaN"
            : kind == 1 ? "+Inf"
                        : "-Inf",
            kind == 0 ? "</circle>" : "</path>");
  }
}

/* One chart: the points of tag `tag` of every run, sorted by run then step,
 * one value per step. */
static void draw_chart(FILE *out, const dataset *ds, size_t chart, const point *p, size_t n, const size_t *run_start,
                       const size_t *run_n) {
  frame fr;
  int any_nonfinite = 0, any_finite = 0;
  double ymin = 0, ymax = 0, label_w = 0;
  int64_t xmin = INT64_MAX, xmax = INT64_MIN;
  char buf[64];
  const char *tag = ds->tags[p[0].tag].name;

  for (size_t i = 0; i < n; i++) {
    double v = p[i].value;
    if (p[i].step < xmin) xmin = p[i].step;
    if (p[i].step > xmax) xmax = p[i].step;
    if (!isfinite(v)) {
      any_nonfinite = 1;
    } else if (!any_finite) {
      ymin = ymax = v;
      any_finite = 1;
    } else {
      ymin = fmin(ymin, v);
      ymax = fmax(ymax, v);
    }
  }
  x_axis(&fr.xa, xmin, xmax);
  y_axis(&fr.ya, ymin, ymax);
  /* The left margin fits the widest y label (about 6.2 units per glyph at 11px). */
  for (double v = fr.ya.lo; v <= fr.ya.hi + fr.ya.spacing * 0.5; v += fr.ya.spacing) {
    fmt_y_tick(buf, sizeof buf, &fr.ya, v);
    if (strlen(buf) * 6.2 > label_w) label_w = (double)strlen(buf) * 6.2;
  }
  fr.x0 = 22.0 + label_w + 8.0;
  fr.x1 = SVG_W - PAD_RIGHT;
  fr.y0 = PAD_TOP + (any_nonfinite ? STRIP_H + 6.0 : 0.0);
  fr.y1 = SVG_H - PAD_BOTTOM;
  fr.strip_y = PAD_TOP + STRIP_H / 2.0;

  fprintf(out, "<section class=\"chart\" id=\"chart-%zu\">\n<h2>", chart);
  html_escape(out, tag);
  fputs("</h2>\n", out);
  fprintf(out,
          "<svg class=\"plot\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" role=\"img\" aria-label=\"",
          SVG_W, SVG_H, SVG_W, SVG_H);
  html_escape(out, tag);
  fputs(": value by step\">\n<title>", out);
  html_escape(out, tag);
  fputs("</title>\n", out);
  fprintf(out, "<rect class=\"area\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>\n", fr.x0, fr.y0,
          fr.x1 - fr.x0, fr.y1 - fr.y0);

  /* Grid and tick labels. */
  fputs("<g class=\"grid\">", out);
  for (double v = fr.ya.lo; v <= fr.ya.hi + fr.ya.spacing * 0.5; v += fr.ya.spacing)
    fprintf(out, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>", fr.x0, fr.x1, py_u(&fr, v), py_u(&fr, v));
  for (double v = fr.xa.lo; v <= fr.xa.hi + fr.xa.spacing * 0.5; v += fr.xa.spacing)
    fprintf(out, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>", px_u(&fr, v), px_u(&fr, v), fr.y0, fr.y1);
  fputs("</g>\n<g class=\"ticks y\">", out);
  for (double v = fr.ya.lo; v <= fr.ya.hi + fr.ya.spacing * 0.5; v += fr.ya.spacing) {
    fmt_y_tick(buf, sizeof buf, &fr.ya, v);
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">%s</text>", fr.x0 - 6, py_u(&fr, v) + 3.8, buf);
  }
  fputs("</g>\n<g class=\"ticks x\">", out);
  for (double v = fr.xa.lo; v <= fr.xa.hi + fr.xa.spacing * 0.5; v += fr.xa.spacing) {
    fmt_x_tick(buf, sizeof buf, v);
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">%s</text>", px_u(&fr, v), fr.y1 + 15, buf);
  }
  fputs("</g>\n", out);
  fprintf(out, "<text class=\"label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">step</text>\n", (fr.x0 + fr.x1) / 2,
          SVG_H - 6);
  fprintf(
      out,
      "<text class=\"label\" x=\"12\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 12 %.1f)\">%s</text>\n",
      (fr.y0 + fr.y1) / 2, (fr.y0 + fr.y1) / 2, fr.ya.log ? "value (log scale)" : "value");
  if (any_nonfinite) {
    fprintf(out, "<rect class=\"strip\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>\n", fr.x0, PAD_TOP,
            fr.x1 - fr.x0, STRIP_H);
    fprintf(out, "<text class=\"strip-label\" x=\"%.1f\" y=\"%.1f\">NaN/Inf</text>\n", fr.x0 - 6, fr.strip_y + 3.8);
  }
  fprintf(out, "<rect class=\"frame\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>\n", fr.x0, fr.y0,
          fr.x1 - fr.x0, fr.y1 - fr.y0);

  /* Lines, dots and non-finite markers, run by run. */
  for (size_t r = 0; r < ds->nruns; r++) {
    const point *rp = p + run_start[r];
    const char *color = palette[r % NCOLORS];
    pathw w;
    if (run_n[r] == 0) continue;
    memset(&w, 0, sizeof w);
    w.out = out;
    w.fr = &fr;
    w.p = rp;
    fprintf(out, "<path class=\"line\" stroke=\"%s\" d=\"", color);
    for (size_t i = 0; i < run_n[r]; i++) {
      if (isfinite(rp[i].value))
        path_add(&w, i);
      else
        path_break(&w);
    }
    flush_col(&w);
    fputs("\"/>\n", out);
    /* Isolated points (and every point of a short run) get a dot: a path of one point draws nothing. */
    for (size_t i = 0; i < run_n[r]; i++) {
      int lonely = (i == 0 || !isfinite(rp[i - 1].value)) && (i + 1 == run_n[r] || !isfinite(rp[i + 1].value));
      if (!isfinite(rp[i].value) || !(run_n[r] <= DOTS_MAX || lonely)) continue;
      fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.2\" fill=\"%s\"/>", px(&fr, rp[i].step), py(&fr, rp[i].value),
              color);
    }
    if (run_n[r] <= DOTS_MAX) fputs("\n", out);
    draw_nonfinite(out, &fr, &ds->runs[r], rp, run_n[r], color);
  }
  fputs("</svg>\n", out);

  /* The numbers behind the chart, one row per run: a legend too. */
  fputs(
      "<table class=\"stats\">\n<tr><th class=\"run\">run</th><th>values</th><th>steps</th><th>last</th>"
      "<th>min</th><th>max</th><th>NaN/Inf</th></tr>\n",
      out);
  for (size_t r = 0; r < ds->nruns; r++) {
    const point *rp = p + run_start[r];
    run_stats s;
    char a[40], b[40];
    if (run_n[r] == 0) continue;
    stats_of(rp, run_n[r], &s);
    fprintf(out, "<tr><td class=\"run\"><span class=\"swatch\" style=\"background:%s\"></span>", palette[r % NCOLORS]);
    html_escape(out, ds->runs[r].name);
    fmt_num(a, sizeof a, rp[run_n[r] - 1].value, rp[run_n[r] - 1].dbl);
    fprintf(out, "</td><td>%zu</td><td>%" PRId64, s.n, rp[0].step);
    if (rp[run_n[r] - 1].step != rp[0].step) fprintf(out, "&ndash;%" PRId64, rp[run_n[r] - 1].step);
    fprintf(out, "</td><td>%s</td>", a);
    if (s.have_finite) {
      fmt_num(a, sizeof a, rp[s.imin].value, rp[s.imin].dbl);
      fmt_num(b, sizeof b, rp[s.imax].value, rp[s.imax].dbl);
      fprintf(out, "<td title=\"step %" PRId64 "\">%s</td><td title=\"step %" PRId64 "\">%s</td>", rp[s.imin].step, a,
              rp[s.imax].step, b);
    } else {
      fputs("<td>&ndash;</td><td>&ndash;</td>", out);
    }
    fprintf(out, "<td%s>%zu</td></tr>\n", s.nan + s.pinf + s.ninf ? " class=\"bad\"" : "", s.nan + s.pinf + s.ninf);
  }
  fputs("</table>\n", out);
  /* Where the non-finite values are, run by run, and what their markers mean. */
  for (size_t r = 0; r < ds->nruns; r++) {
    static const char *const what[3] = {"&#9675; NaN", "&#9650; +Inf", "&#9660; &minus;Inf"};
    const point *rp = p + run_start[r];
    run_stats s;
    const char *sep = "";
    if (run_n[r] == 0) continue;
    stats_of(rp, run_n[r], &s);
    if (s.nan + s.pinf + s.ninf == 0) continue;
    fputs("<p class=\"bad\">", out);
    html_escape(out, ds->runs[r].name);
    fputs(": ", out);
    for (int kind = 0; kind < 3; kind++) {
      size_t c = kind == 0 ? s.nan : kind == 1 ? s.pinf : s.ninf;
      if (c == 0) continue;
      if (c == 1)
        fprintf(out, "%s%s at step %" PRId64, sep, what[kind], s.first_bad[kind]);
      else
        fprintf(out, "%s%s &times; %zu, the first at step %" PRId64, sep, what[kind], c, s.first_bad[kind]);
      sep = "; ";
    }
    fputs("</p>\n", out);
  }
  fputs("</section>\n", out);
}

static const char style[] =
    "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,'Helvetica Neue',Arial,sans-serif;margin:16px 16px "
    "32px;color:#222;background:#f6f7f9}\n"
    "h1{font-size:20px;font-weight:600;margin:0 0 4px;word-break:break-all}\n"
    "p.meta{margin:0 0 12px;color:#555;font-size:13px}\n"
    "nav{font-size:13px;margin:0 0 14px;line-height:1.7}\n"
    "nav a{color:#1f5fa8;text-decoration:none;margin-right:14px;white-space:nowrap}\n"
    ".legend{font-size:13px;margin:0 0 14px}\n"
    ".legend span.item{margin-right:16px;white-space:nowrap}\n"
    ".swatch{display:inline-block;width:14px;height:4px;border-radius:2px;vertical-align:middle;margin-right:6px}\n"
    ".charts{display:flex;flex-wrap:wrap;gap:16px}\n"
    ".chart{background:#fff;border:1px solid #dcdfe4;border-radius:6px;padding:10px 12px;width:540px}\n"
    ".chart h2{font-size:14px;font-weight:600;margin:0 0 2px;word-break:break-all}\n"
    "svg.plot{display:block}\n"
    "svg.plot text{font-size:11px;fill:#555}\n"
    "svg.plot .ticks.y text,svg.plot .strip-label{text-anchor:end}\n"
    "svg.plot .ticks.x text{text-anchor:middle}\n"
    "svg.plot text.label{font-size:12px;fill:#333}\n"
    "svg.plot .strip-label{fill:#b22;font-size:10px}\n"
    "svg.plot .area{fill:#fff}\n"
    "svg.plot .strip{fill:#fdf1f1}\n"
    "svg.plot .frame{fill:none;stroke:#bbb}\n"
    "svg.plot .grid line{stroke:#ececec}\n"
    "svg.plot .line{fill:none;stroke-width:1.6;stroke-linejoin:round;stroke-linecap:round}\n"
    "table.stats{border-collapse:collapse;font-size:12px;margin-top:4px;width:100%}\n"
    "table.stats th{font-weight:600;color:#555;text-align:right;padding:2px 6px;border-bottom:1px solid #e3e5e8}\n"
    "table.stats td{text-align:right;padding:2px 6px;font-variant-numeric:tabular-nums}\n"
    "table.stats .run{text-align:left;white-space:normal;overflow-wrap:anywhere;width:40%}\n"
    "table.stats td,table.stats th{white-space:nowrap}\n"
    "table.stats td.bad,p.bad{color:#b22}\n"
    "p.bad{font-size:12px;margin:4px 6px 0}\n"
    "p.none{color:#555}\n";

static int write_html(FILE *out, const char *path, dataset *ds) {
  size_t ncharts = 0, i = 0, kept = 0, k;
  size_t *run_start, *run_n;

  /* One value per (tag, run, step): the last one written. */
  sort_ds = ds;
  if (ds->npts > 0) qsort(ds->pts, ds->npts, sizeof *ds->pts, cmp_plot);
  for (k = 0; k < ds->npts; k++) {
    const point *p = &ds->pts[k], *q = k + 1 < ds->npts ? &ds->pts[k + 1] : NULL;
    if (q != NULL && q->tag == p->tag && q->run == p->run && q->step == p->step) continue;
    ds->pts[kept++] = *p;
  }
  ds->npts = kept;
  run_start = calloc(ds->nruns, sizeof *run_start);
  run_n = calloc(ds->nruns, sizeof *run_n);
  if (run_start == NULL || run_n == NULL) {
    free(run_start);
    free(run_n);
    return out_of_memory();
  }
  for (k = 0; k < ds->npts; k++)
    if (k == 0 || ds->pts[k].tag != ds->pts[k - 1].tag) ncharts++;

  fputs(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>",
      out);
  html_escape(out, path);
  fputs(" \xe2\x80\x94 scalars</title>\n<style>\n", out);
  fputs(style, out);
  fputs("</style>\n</head>\n<body>\n<h1>Scalars of ", out);
  html_escape(out, path);
  fputs("</h1>\n", out);
  fprintf(out, "<p class=\"meta\">%zu tag%s, %zu run%s, %zu value%s &middot; written by " TOOL " (hooked %s)</p>\n",
          ncharts, ncharts == 1 ? "" : "s", ds->nruns, ds->nruns == 1 ? "" : "s", ds->npts, ds->npts == 1 ? "" : "s",
          hk_version());
  if (ncharts > 1) {
    size_t c = 0;
    fputs("<nav>", out);
    for (k = 0; k < ds->npts; k++) {
      if (k > 0 && ds->pts[k].tag == ds->pts[k - 1].tag) continue;
      fprintf(out, "<a href=\"#chart-%zu\">", c++);
      html_escape(out, ds->tags[ds->pts[k].tag].name);
      fputs("</a> ", out);
    }
    fputs("</nav>\n", out);
  }
  if (ds->nruns > 1) {
    fputs("<div class=\"legend\">runs: ", out);
    for (size_t r = 0; r < ds->nruns; r++) {
      fprintf(out, "<span class=\"item\"><span class=\"swatch\" style=\"background:%s\"></span>", palette[r % NCOLORS]);
      html_escape(out, ds->runs[r].name);
      fputs("</span>", out);
    }
    fputs("</div>\n", out);
  }
  if (ncharts == 0) fputs("<p class=\"none\">No scalar values in these event files.</p>\n", out);
  fputs("<div class=\"charts\">\n", out);
  for (size_t chart = 0; chart < ncharts; chart++) {
    size_t start = i;
    memset(run_start, 0, ds->nruns * sizeof *run_start);
    memset(run_n, 0, ds->nruns * sizeof *run_n);
    while (i < ds->npts && ds->pts[i].tag == ds->pts[start].tag) {
      if (run_n[ds->pts[i].run]++ == 0) run_start[ds->pts[i].run] = i - start;
      i++;
    }
    draw_chart(out, ds, chart, ds->pts + start, i - start, run_start, run_n);
  }
  fputs("</div>\n</body>\n</html>\n", out);
  free(run_start);
  free(run_n);
  return 0;
}

static int cmd_plot(const char *path, const char *output) {
  dataset ds;
  FILE *out;
  int rc, to_stdout = strcmp(output, "-") == 0;

  memset(&ds, 0, sizeof ds);
  rc = find_runs(&ds, path, 1);
  if (rc == 0) rc = load(&ds);
  if (rc != 0) {
    dataset_free(&ds);
    return rc;
  }
  if (ds.npts == 0) fprintf(stderr, TOOL ": warning: %s: no scalar values in its event files\n", path);
  out = to_stdout ? stdout : fopen(output, "w");
  if (out == NULL) {
    fprintf(stderr, TOOL ": %s: cannot create: %s\n", output, strerror(errno));
    dataset_free(&ds);
    return 1;
  }
  rc = write_html(out, path, &ds);
  if (rc == 0 && (fflush(out) != 0 || ferror(out))) {
    fprintf(stderr, TOOL ": %s: write error: %s\n", to_stdout ? "standard output" : output, strerror(errno));
    rc = 1;
  }
  if (!to_stdout && fclose(out) != 0 && rc == 0) {
    fprintf(stderr, TOOL ": %s: write error: %s\n", output, strerror(errno));
    rc = 1;
  }
  if (rc != 0 && !to_stdout) remove(output);
  dataset_free(&ds);
  return rc;
}

/* ---- main ------------------------------------------------------------------------------ */

int main(int argc, char **argv) {
  const char *cmd, *path = NULL, *output = NULL;
  int only_args = 0;

  for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      fputs(usage_text, stdout);
      return 0;
    }
    if (strcmp(argv[i], "--version") == 0) {
      printf(TOOL " (hooked %s)\n", hk_version());
      return 0;
    }
  }
  if (argc < 2) {
    fputs(usage_text, stderr);
    return 2;
  }
  cmd = argv[1];
  if (strcmp(cmd, "csv") != 0 && strcmp(cmd, "plot") != 0) return usage_error("unknown command '%s'", cmd);
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    if (!only_args && strcmp(a, "--") == 0) {
      only_args = 1;
      continue;
    }
    if (!only_args && (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0 || strncmp(a, "--output=", 9) == 0 ||
                       (strncmp(a, "-o", 2) == 0 && a[2] != '\0'))) {
      const char *v = a[1] == 'o' ? (a[2] != '\0' ? a + 2 : NULL) : a[8] == '=' ? a + 9 : NULL;
      if (strcmp(cmd, "plot") != 0) return usage_error("option '%s' is for plot only", a);
      if (v == NULL) {
        if (i + 1 >= argc) return usage_error("option '%s' needs a file name", a);
        v = argv[++i];
      }
      if (output != NULL) return usage_error("option '%s' given twice", "-o");
      if (v[0] == '\0') return usage_error("option '%s' needs a file name", "-o");
      output = v;
      continue;
    }
    if (!only_args && a[0] == '-' && a[1] != '\0') return usage_error("unknown option '%s'", a);
    if (path != NULL) return usage_error("too many arguments for '%s': one PATH", cmd);
    path = a;
  }
  if (path == NULL) return usage_error("'%s' needs a PATH (a directory or an event file)", cmd);
  if (strcmp(cmd, "csv") == 0) return cmd_csv(path);
  if (output == NULL) return usage_error("'%s' needs -o FILE (the HTML file to write; '-' for standard output)", cmd);
  return cmd_plot(path, output);
}
