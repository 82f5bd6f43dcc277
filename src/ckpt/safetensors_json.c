/*
 * The data file's header, read by a reader that trusts nothing in the file:
 * the header length is checked against the 100 MiB limit and the file size
 * before anything is allocated, the header is parsed by a fixed-grammar,
 * non-recursive JSON parser that decodes strings in place (names then point
 * into the header buffer), and the tensors must tile the data exactly.
 * Every refusal is DATA_LOSS naming the file and, when known, the tensor; a
 * newer "hooked/N" format is FAILED_PRECONDITION. This is the largest
 * parser of untrusted input in the library (fuzz/fuzz_reader.c drives it).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "ckpt/safetensors_internal.h"
#include "util/crc32c.h"
#include "util/fs.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HK__STR2(x) #x
#define HK__STR(x) HK__STR2(x)

typedef struct crc_note {
  const char *name;
  uint32_t crc;
} crc_note;

/* The parser's state; `r` receives entries, `notes` the CRCs until every
 * name is known. */
typedef struct parser {
  hk_checkpoint_reader *r;
  char *p, *end;
  hk_status *st;
  size_t cap;
  crc_note *notes;
  size_t nnotes, capnotes;
  int seen_metadata, seen_format, seen_step;
  int newer_format; /* the metadata names "hooked/N", N > FORMAT_VERSION */
  char newer[48];   /* that format, for messages */
  const char *format;
  const char *step_text; /* global_step's value as written */
  int seen_step_crc;     /* global_step_crc32c, and its value */
  uint32_t step_crc;
  const char *gs_tensor;          /* global_step_tensor, NULL when absent */
  const char *unknown_key;        /* the first metadata key the format does not define, NULL when none */
  const char *shard, *num_shards; /* a shard's keys, NULL when absent */
  hk__slice_note *slices;
  size_t nslices, capslices;
} parser;

static hk_code newer_format(parser *ps, const char *format, const char *detail) {
  return hk_status_set(ps->st, HK_FAILED_PRECONDITION,
                       "Checkpoint %s has format \"%.40s\", newer than this library reads (" FORMAT_PREFIX
                       "%d); upgrade hooked to read it%s%s",
                       ps->r->path, format, FORMAT_VERSION, detail ? ": " : "", detail ? detail : "");
}

static hk_code corrupt(parser *ps, const char *tensor, const char *fmt, ...) HK_PRINTF(3, 4);
static hk_code corrupt(parser *ps, const char *tensor, const char *fmt, ...) {
  char reason[320];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof reason, fmt, ap);
  va_end(ap);
  /* What version 1 cannot parse may be version N's grammar: not damage. */
  if (ps->newer_format) {
    char detail[400];
    if (tensor)
      snprintf(detail, sizeof detail, "tensor '%.60s': %.300s", tensor, reason);
    else
      snprintf(detail, sizeof detail, "%.300s", reason);
    return newer_format(ps, ps->newer, detail);
  }
  if (tensor)
    return hk_status_set(ps->st, HK_DATA_LOSS, "Checkpoint %s is corrupt: tensor '%.200s': %s", ps->r->path, tensor,
                         reason);
  return hk_status_set(ps->st, HK_DATA_LOSS, "Checkpoint %s is corrupt: %s", ps->r->path, reason);
}

static void skip_ws(parser *ps) {
  while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')) ps->p++;
}

/* Skip whitespace and consume `c`. */
static int eat(parser *ps, char c) {
  skip_ws(ps);
  if (ps->p < ps->end && *ps->p == c) {
    ps->p++;
    return 1;
  }
  return 0;
}

static int peek(parser *ps, char c) {
  skip_ws(ps);
  return ps->p < ps->end && *ps->p == c;
}

static int hex_val(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static int read_hex4(const char *p, const char *end, unsigned *out) {
  unsigned v = 0;
  if (end - p < 4) return 0;
  for (int i = 0; i < 4; i++) {
    int h = hex_val(p[i]);
    if (h < 0) return 0;
    v = v << 4 | (unsigned)h;
  }
  *out = v;
  return 1;
}

/* A JSON string, decoded in place and NUL-terminated (the decoded form is
 * never longer than the escaped one). `tensor` names the context. */
static hk_code parse_string(parser *ps, const char *tensor, char **out) {
  char *w, *r, *start;
  skip_ws(ps);
  if (ps->p >= ps->end || *ps->p != '"')
    return corrupt(ps, tensor, "expected a string at header byte %zu", (size_t)(ps->p - ps->r->header));
  start = r = w = ++ps->p;
  for (;;) {
    if (r >= ps->end) return corrupt(ps, tensor, "unterminated string in the header");
    unsigned char c = (unsigned char)*r;
    if (c == '"') break;
    if (c < 0x20) return corrupt(ps, tensor, "control byte 0x%02x inside a header string", c);
    if (c != '\\') {
      *w++ = *r++;
      continue;
    }
    if (r + 1 >= ps->end) return corrupt(ps, tensor, "unterminated escape in the header");
    char e = r[1];
    r += 2;
    switch (e) {
      case '"': *w++ = '"'; break;
      case '\\': *w++ = '\\'; break;
      case '/': *w++ = '/'; break;
      case 'b': *w++ = '\b'; break;
      case 'f': *w++ = '\f'; break;
      case 'n': *w++ = '\n'; break;
      case 'r': *w++ = '\r'; break;
      case 't': *w++ = '\t'; break;
      case 'u': {
        unsigned u, lo;
        unsigned long cp;
        if (!read_hex4(r, ps->end, &u)) return corrupt(ps, tensor, "bad \\u escape in the header");
        r += 4;
        if (u >= 0xD800 && u <= 0xDBFF) {
          if (ps->end - r < 6 || r[0] != '\\' || r[1] != 'u' || !read_hex4(r + 2, ps->end, &lo) || lo < 0xDC00 ||
              lo > 0xDFFF)
            return corrupt(ps, tensor, "unpaired surrogate in a header string");
          r += 6;
          cp = 0x10000UL + (((unsigned long)u - 0xD800) << 10) + (lo - 0xDC00);
        } else if (u >= 0xDC00 && u <= 0xDFFF) {
          return corrupt(ps, tensor, "unpaired surrogate in a header string");
        } else {
          cp = u;
        }
        if (cp == 0) return corrupt(ps, tensor, "NUL character in a header string");
        if (cp < 0x80) {
          *w++ = (char)cp;
        } else if (cp < 0x800) {
          *w++ = (char)(0xC0 | (cp >> 6));
          *w++ = (char)(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
          *w++ = (char)(0xE0 | (cp >> 12));
          *w++ = (char)(0x80 | ((cp >> 6) & 0x3F));
          *w++ = (char)(0x80 | (cp & 0x3F));
        } else {
          *w++ = (char)(0xF0 | (cp >> 18));
          *w++ = (char)(0x80 | ((cp >> 12) & 0x3F));
          *w++ = (char)(0x80 | ((cp >> 6) & 0x3F));
          *w++ = (char)(0x80 | (cp & 0x3F));
        }
        break;
      }
      default: return corrupt(ps, tensor, "bad escape '\\%c' in the header", e);
    }
  }
  *w = '\0'; /* w <= r, and *r is the closing quote, already recognized */
  ps->p = r + 1;
  *out = start;
  return HK_OK;
}

/* A non-negative JSON integer (no sign, fraction or exponent). */
static hk_code parse_uint(parser *ps, const char *tensor, const char *what, uint64_t max, uint64_t *out) {
  uint64_t v = 0;
  skip_ws(ps);
  if (ps->p < ps->end && *ps->p == '-') return corrupt(ps, tensor, "negative %s", what);
  if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9') return corrupt(ps, tensor, "%s is not an integer", what);
  if (*ps->p == '0' && ps->p + 1 < ps->end && ps->p[1] >= '0' && ps->p[1] <= '9')
    return corrupt(ps, tensor, "%s has a leading zero", what);
  while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
    unsigned d = (unsigned)(*ps->p - '0');
    if (v > (max - d) / 10) return corrupt(ps, tensor, "%s is too large", what);
    v = v * 10 + d;
    ps->p++;
  }
  if (ps->p < ps->end && (*ps->p == '.' || *ps->p == 'e' || *ps->p == 'E'))
    return corrupt(ps, tensor, "%s is not an integer", what);
  *out = v;
  return HK_OK;
}

static hk_code parse_uint_array(parser *ps, const char *tensor, const char *what, size_t max, const char *too_many,
                                uint64_t limit, uint64_t *vals, size_t *count) {
  hk_code rc;
  *count = 0;
  if (!eat(ps, '[')) return corrupt(ps, tensor, "%s is not an array", what);
  if (eat(ps, ']')) return HK_OK;
  for (;;) {
    if (*count == max) return corrupt(ps, tensor, "%s", too_many);
    rc = parse_uint(ps, tensor, what, limit, &vals[*count]);
    if (rc != HK_OK) return rc;
    (*count)++;
    if (eat(ps, ']')) return HK_OK;
    if (!eat(ps, ',')) return corrupt(ps, tensor, "malformed %s array", what);
  }
}

/* A new zeroed entry; NULL (status set) when out of memory. */
static hk__reader_entry *add_entry(parser *ps) {
  hk_checkpoint_reader *r = ps->r;
  hk__reader_entry *e;
  if (r->n == ps->cap) {
    size_t cap = ps->cap ? ps->cap * 2 : 16;
    hk__reader_entry *grown = hk_env_realloc(&r->env, r->entries, cap * sizeof *grown);
    if (!grown) {
      hk_status_set(ps->st, HK_RESOURCE_EXHAUSTED, "out of memory reading %s", r->path);
      return NULL;
    }
    r->entries = grown;
    ps->cap = cap;
  }
  e = &r->entries[r->n++];
  memset(e, 0, sizeof *e);
  return e;
}

/* {"dtype": "F32", "shape": [..], "data_offsets": [b, e]} in any order. */
static hk_code parse_tensor(parser *ps, char *name) {
  hk__reader_entry *e;
  hk_code rc;
  int have_dtype = 0, have_shape = 0, have_offsets = 0;

  if (!*name) return corrupt(ps, NULL, "a tensor has an empty name");
  e = add_entry(ps);
  if (!e) return HK_RESOURCE_EXHAUSTED;
  e->name = name;
  if (!eat(ps, '{')) return corrupt(ps, name, "its entry is not an object");
  if (!eat(ps, '}')) {
    for (;;) {
      char *key;
      rc = parse_string(ps, name, &key);
      if (rc != HK_OK) return rc;
      if (!eat(ps, ':')) return corrupt(ps, name, "expected ':' after \"%.40s\"", key);
      if (strcmp(key, "dtype") == 0) {
        char *dt;
        if (have_dtype++) return corrupt(ps, name, "dtype given twice");
        if (!peek(ps, '"')) return corrupt(ps, name, "dtype is not a string");
        rc = parse_string(ps, name, &dt);
        if (rc != HK_OK) return rc;
        e->dtype = hk__safetensors_dtype_from_name(dt);
        if (e->dtype == HK_DTYPE_INVALID) return corrupt(ps, name, "unknown dtype \"%.40s\"", dt);
      } else if (strcmp(key, "shape") == 0) {
        uint64_t dims[HK_MAX_RANK];
        size_t rank;
        if (have_shape++) return corrupt(ps, name, "shape given twice");
        if (!peek(ps, '[')) return corrupt(ps, name, "shape is not an array");
        rc = parse_uint_array(ps, name, "shape dimension", HK_MAX_RANK, "rank greater than " HK__STR(HK_MAX_RANK),
                              (uint64_t)INT64_MAX, dims, &rank);
        if (rc != HK_OK) return rc;
        e->rank = (int32_t)rank;
        for (size_t i = 0; i < rank; i++) e->dims[i] = (int64_t)dims[i];
      } else if (strcmp(key, "data_offsets") == 0) {
        uint64_t off[2];
        size_t k;
        if (have_offsets++) return corrupt(ps, name, "data_offsets given twice");
        rc = parse_uint_array(ps, name, "data_offsets", 2, "data_offsets has more than 2 entries", UINT64_MAX, off, &k);
        if (rc != HK_OK) return rc;
        if (k != 2) return corrupt(ps, name, "data_offsets must have 2 entries, not %zu", k);
        e->begin = off[0];
        e->end = off[1];
      } else {
        return corrupt(ps, name, "unknown field \"%.40s\"", key);
      }
      if (eat(ps, '}')) break;
      if (!eat(ps, ',')) return corrupt(ps, name, "malformed entry");
    }
  }
  if (!have_dtype) return corrupt(ps, name, "missing dtype");
  if (!have_shape) return corrupt(ps, name, "missing shape");
  if (!have_offsets) return corrupt(ps, name, "missing data_offsets");
  return HK_OK;
}

static int parse_step(const char *s, int64_t *out);
int hk__safetensors_parse_int(const char *s, int64_t *out) { return parse_step(s, out); }

static hk_code note_slice(parser *ps, const char *name, const char *val, int is_shape) {
  if (ps->nslices == ps->capslices) {
    size_t cap = ps->capslices ? ps->capslices * 2 : 16;
    hk__slice_note *grown = hk_env_realloc(&ps->r->env, ps->slices, cap * sizeof *grown);
    if (!grown) return hk_status_set(ps->st, HK_RESOURCE_EXHAUSTED, "out of memory reading %s", ps->r->path);
    ps->slices = grown;
    ps->capslices = cap;
  }
  ps->slices[ps->nslices].name = name;
  ps->slices[ps->nslices].value = val;
  ps->slices[ps->nslices].is_shape = is_shape;
  ps->nslices++;
  return HK_OK;
}

static int parse_step(const char *s, int64_t *out) {
  int neg = *s == '-';
  uint64_t v = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  if (neg) s++;
  if (*s < '0' || *s > '9') return 0;
  if (*s == '0' && s[1] != '\0') return 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return 0;
    unsigned d = (unsigned)(*s - '0');
    if (v > (limit - d) / 10) return 0;
    v = v * 10 + d;
  }
  *out = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
  return 1;
}

/* {"format": "hooked/1", "global_step": "N", "crc32c:<name>": "xxxxxxxx", ...}:
 * every value a string. A key the format does not define is kept for
 * check_format's verdict: an error in a "hooked/1" file, where it can only
 * be damage (a bit flip in "global_step_crc32c" would otherwise drop the
 * step's cross-check without a word). */
static hk_code parse_metadata(parser *ps) {
  hk_code rc;
  if (ps->seen_metadata++) return corrupt(ps, NULL, "\"" METADATA_KEY "\" appears twice");
  if (!eat(ps, '{')) return corrupt(ps, NULL, "\"" METADATA_KEY "\" is not an object");
  if (eat(ps, '}')) return HK_OK;
  for (;;) {
    char *key, *val;
    rc = parse_string(ps, NULL, &key);
    if (rc != HK_OK) return rc;
    if (!eat(ps, ':')) return corrupt(ps, NULL, "expected ':' after metadata key \"%.40s\"", key);
    if (!peek(ps, '"')) return corrupt(ps, NULL, "metadata value of \"%.60s\" is not a string", key);
    rc = parse_string(ps, NULL, &val);
    if (rc != HK_OK) return rc;
    if (strcmp(key, "format") == 0) {
      if (ps->seen_format++) return corrupt(ps, NULL, "metadata \"format\" appears twice");
      ps->format = val;
    } else if (strcmp(key, "global_step") == 0) {
      if (ps->seen_step++) return corrupt(ps, NULL, "metadata \"global_step\" appears twice");
      if (!parse_step(val, &ps->r->step))
        return corrupt(ps, NULL, "global_step \"%.40s\" is not a 64-bit integer", val);
      ps->step_text = val;
    } else if (strcmp(key, STEP_CRC_KEY) == 0) {
      if (ps->seen_step_crc++) return corrupt(ps, NULL, "metadata \"" STEP_CRC_KEY "\" appears twice");
      if (!hk__crc32c_from_hex(val, strlen(val), &ps->step_crc))
        return corrupt(ps, NULL, "metadata \"" STEP_CRC_KEY "\" \"%.40s\" is not 8 lowercase hex digits", val);
    } else if (strcmp(key, STEP_TENSOR_KEY) == 0) {
      if (ps->gs_tensor) return corrupt(ps, NULL, "metadata \"" STEP_TENSOR_KEY "\" appears twice");
      ps->gs_tensor = val;
    } else if (strncmp(key, CRC_KEY_PREFIX, sizeof CRC_KEY_PREFIX - 1) == 0) {
      const char *name = key + sizeof CRC_KEY_PREFIX - 1;
      uint32_t crc;
      if (!hk__crc32c_from_hex(val, strlen(val), &crc))
        return corrupt(ps, name, "CRC \"%.40s\" is not 8 lowercase hex digits", val);
      if (ps->nnotes == ps->capnotes) {
        size_t cap = ps->capnotes ? ps->capnotes * 2 : 16;
        crc_note *grown = hk_env_realloc(&ps->r->env, ps->notes, cap * sizeof *grown);
        if (!grown) return hk_status_set(ps->st, HK_RESOURCE_EXHAUSTED, "out of memory reading %s", ps->r->path);
        ps->notes = grown;
        ps->capnotes = cap;
      }
      ps->notes[ps->nnotes].name = name;
      ps->notes[ps->nnotes].crc = crc;
      ps->nnotes++;
    } else if (strcmp(key, SHARD_KEY) == 0) {
      if (ps->shard) return corrupt(ps, NULL, "metadata \"" SHARD_KEY "\" appears twice");
      ps->shard = val;
    } else if (strcmp(key, NUM_SHARDS_KEY) == 0) {
      if (ps->num_shards) return corrupt(ps, NULL, "metadata \"" NUM_SHARDS_KEY "\" appears twice");
      ps->num_shards = val;
    } else if (strncmp(key, SLICE_KEY_PREFIX, sizeof SLICE_KEY_PREFIX - 1) == 0) {
      rc = note_slice(ps, key + sizeof SLICE_KEY_PREFIX - 1, val, 0);
      if (rc != HK_OK) return rc;
    } else if (strncmp(key, SHAPE_KEY_PREFIX, sizeof SHAPE_KEY_PREFIX - 1) == 0) {
      rc = note_slice(ps, key + sizeof SHAPE_KEY_PREFIX - 1, val, 1);
      if (rc != HK_OK) return rc;
    } else if (!ps->unknown_key) {
      ps->unknown_key = key;
    }
    if (eat(ps, '}')) return HK_OK;
    if (!eat(ps, ',')) return corrupt(ps, NULL, "malformed \"" METADATA_KEY "\" object");
  }
}

static hk_code check_format(parser *ps) {
  const char *f = ps->format;
  if (!ps->seen_metadata) return corrupt(ps, NULL, "no \"" METADATA_KEY "\" (not a hooked checkpoint)");
  if (!f) return corrupt(ps, NULL, "metadata has no \"format\"");
  if (strncmp(f, FORMAT_PREFIX, sizeof FORMAT_PREFIX - 1) == 0) {
    int64_t v;
    const char *num = f + sizeof FORMAT_PREFIX - 1;
    if (*num != '-' && parse_step(num, &v) && v >= 1) {
      if (v == FORMAT_VERSION) return HK_OK;
      return newer_format(ps, f, NULL);
    }
  }
  return corrupt(ps, NULL, "unknown format \"%.60s\"", f);
}

static int is_newer_format(const char *f) {
  int64_t v;
  const char *num = f + sizeof FORMAT_PREFIX - 1;
  return strncmp(f, FORMAT_PREFIX, sizeof FORMAT_PREFIX - 1) == 0 && *num != '-' && parse_step(num, &v) &&
         v > FORMAT_VERSION;
}

/* ---- the format, found before the grammar is applied ------------------------ */

/*
 * A newer "hooked/N" may use fields, dtypes or metadata values version 1
 * does not know; refusing them must read "upgrade", not "corrupt". So the
 * metadata's format is found first, by a skim of the top-level object that
 * decodes nothing in place (the parse proper does) — JSON written by other
 * tools may put "__metadata__" after the tensors. Whatever the skim cannot
 * follow ends it without an answer; the parse then reports it.
 */

/* NULL (a failed skim) stays NULL. */
static const char *skim_ws(const char *p, const char *end) {
  if (!p) return NULL;
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
  return p;
}

/* The string at p: its bytes into out (NUL-terminated; *fits 0 when they
 * do not fit in cap). A \u escape past ASCII becomes 0x01: none of the
 * strings looked for has one. Returns the byte after the closing quote,
 * NULL when malformed. */
static const char *skim_string(const char *p, const char *end, char *out, size_t cap, int *fits) {
  size_t n = 0;
  *fits = 1;
  if (p >= end || *p != '"') return NULL;
  for (p++; p < end && *p != '"';) {
    char c = *p++;
    if (c == '\\') {
      unsigned u;
      if (p >= end) return NULL;
      c = *p++;
      if (c == 'u') {
        if (!read_hex4(p, end, &u)) return NULL;
        p += 4;
        c = u > 0 && u < 0x80 ? (char)u : '\x01';
      } else if (c != '"' && c != '\\' && c != '/') {
        c = '\x01';
      }
    }
    if (n + 1 < cap)
      out[n++] = c;
    else
      *fits = 0;
  }
  if (p >= end) return NULL;
  out[n] = '\0';
  return p + 1;
}

static int skim_delim(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == ':' || c == '[' || c == ']' || c == '{' ||
         c == '}' || c == '"';
}

/* Past one JSON value (brackets counted, not matched), NULL when malformed. */
static const char *skim_value(const char *p, const char *end) {
  size_t depth = 0;
  char none[1];
  int fits;
  do {
    p = skim_ws(p, end);
    if (p >= end) return NULL;
    if (*p == '"') {
      p = skim_string(p, end, none, sizeof none, &fits);
      if (!p) return NULL;
    } else if (*p == '{' || *p == '[') {
      depth++;
      p++;
    } else if (*p == '}' || *p == ']') {
      if (depth == 0) return NULL;
      depth--;
      p++;
    } else if (*p == ',' || *p == ':') {
      if (depth == 0) return NULL;
      p++;
    } else {
      while (p < end && !skim_delim(*p)) p++; /* a number or literal */
    }
  } while (depth > 0);
  return p;
}

/* In the "__metadata__" object at p: a string "format" naming a newer
 * version sets ps->newer_format. */
static void skim_metadata(parser *ps, const char *p, const char *end) {
  char key[sizeof "format" + 1];
  int fits;
  p = skim_ws(p, end);
  if (p >= end || *p != '{') return;
  p++;
  for (;;) {
    p = skim_string(skim_ws(p, end), end, key, sizeof key, &fits);
    if (!p) return;
    p = skim_ws(p, end);
    if (p >= end || *p != ':') return;
    p = skim_ws(p + 1, end);
    if (fits && strcmp(key, "format") == 0) {
      char f[sizeof ps->newer];
      if (skim_string(p, end, f, sizeof f, &fits) && fits && is_newer_format(f)) {
        memcpy(ps->newer, f, sizeof f);
        ps->newer_format = 1;
      }
      return;
    }
    p = skim_ws(skim_value(p, end), end);
    if (!p || p >= end || *p != ',') return;
    p++;
  }
}

static void find_newer_format(parser *ps) {
  const char *p = skim_ws(ps->p, ps->end), *end = ps->end;
  char key[sizeof METADATA_KEY + 1];
  int fits;
  if (p >= end || *p != '{') return;
  p = skim_ws(p + 1, end);
  if (p < end && *p == '}') return;
  for (;;) {
    p = skim_string(p, end, key, sizeof key, &fits);
    if (!p) return;
    p = skim_ws(p, end);
    if (p >= end || *p != ':') return;
    p++;
    if (fits && strcmp(key, METADATA_KEY) == 0) {
      skim_metadata(ps, p, end);
      return;
    }
    p = skim_ws(skim_value(p, end), end);
    if (!p || p >= end || *p != ',') return;
    p = skim_ws(p + 1, end);
  }
}

static int cmp_entry_name(const void *a, const void *b) {
  return strcmp(((const hk__reader_entry *)a)->name, ((const hk__reader_entry *)b)->name);
}

/* Ordering of entry indices by (begin, end), for the tiling check. */
typedef struct span {
  uint64_t begin, end;
  size_t index;
} span;

static int cmp_span(const void *a, const void *b) {
  const span *x = a, *y = b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return 0;
}

/* Everything after the syntax: shapes, sizes, names, CRCs, tiling. */
static hk_code validate(parser *ps) {
  hk_checkpoint_reader *r = ps->r;
  span *spans;
  hk_code rc = HK_OK;

  for (size_t i = 0; i < r->n; i++) {
    hk__reader_entry *e = &r->entries[i];
    int overflow;
    uint64_t nbytes = hk__safetensors_shape_bytes(e->dtype, e->rank, e->dims, &overflow);
    if (overflow) return corrupt(ps, e->name, "its shape's byte size overflows 64 bits");
    if (e->begin > e->end)
      return corrupt(ps, e->name, "data_offsets [%" PRIu64 ", %" PRIu64 "] are reversed", e->begin, e->end);
    if (e->end > r->data_size)
      return corrupt(ps, e->name, "data_offsets [%" PRIu64 ", %" PRIu64 "] lie outside the %" PRIu64 " data bytes",
                     e->begin, e->end, r->data_size);
    if (e->end - e->begin != nbytes)
      return corrupt(ps, e->name,
                     "data_offsets [%" PRIu64 ", %" PRIu64 "] hold %" PRIu64 " bytes, its shape needs %" PRIu64,
                     e->begin, e->end, e->end - e->begin, nbytes);
  }
  if (r->n > 1) qsort(r->entries, r->n, sizeof *r->entries, cmp_entry_name);
  for (size_t i = 1; i < r->n; i++)
    if (strcmp(r->entries[i - 1].name, r->entries[i].name) == 0)
      return corrupt(ps, r->entries[i].name, "the name appears twice");
  for (size_t i = 0; i < ps->nnotes; i++) {
    hk__reader_entry *e = hk__reader_find_entry(r, ps->notes[i].name);
    if (!e) {
      char shown[200];
      return corrupt(ps, NULL,
                     "metadata key \"" CRC_KEY_PREFIX "%s\" records a CRC for a tensor the file does not have",
                     hk__safetensors_escaped_name(ps->notes[i].name, shown, sizeof shown));
    }
    if (e->has_crc) return corrupt(ps, e->name, "its CRC is recorded twice");
    e->has_crc = 1;
    e->crc = ps->notes[i].crc;
  }
  for (size_t i = 0; i < r->n; i++)
    if (!r->entries[i].has_crc)
      return corrupt(ps, r->entries[i].name, "no CRC recorded (\"" CRC_KEY_PREFIX "%.200s\")", r->entries[i].name);

  /* The tensors must tile [0, data_size) exactly. */
  if (r->n == 0) {
    if (r->data_size != 0)
      return corrupt(ps, NULL, "%" PRIu64 " bytes after the header belong to no tensor", r->data_size);
    return HK_OK;
  }
  spans = hk_env_calloc(&r->env, r->n, sizeof *spans);
  if (!spans) return hk_status_set(ps->st, HK_RESOURCE_EXHAUSTED, "out of memory reading %s", r->path);
  for (size_t i = 0; i < r->n; i++) {
    spans[i].begin = r->entries[i].begin;
    spans[i].end = r->entries[i].end;
    spans[i].index = i;
  }
  qsort(spans, r->n, sizeof *spans, cmp_span);
  uint64_t at = 0;
  for (size_t i = 0; i < r->n && rc == HK_OK; i++) {
    const hk__reader_entry *e = &r->entries[spans[i].index];
    if (spans[i].begin > at)
      rc = corrupt(ps, e->name, "a gap of %" PRIu64 " bytes precedes it (it starts at %" PRIu64 ")",
                   spans[i].begin - at, spans[i].begin);
    else if (spans[i].begin < at)
      rc = corrupt(ps, e->name, "it overlaps another tensor (it starts at %" PRIu64 ", before byte %" PRIu64 ")",
                   spans[i].begin, at);
    at = spans[i].end;
  }
  if (rc == HK_OK && at != r->data_size)
    rc = corrupt(ps, NULL, "%" PRIu64 " bytes after the last tensor", r->data_size - at);
  hk_env_free(&r->env, spans);
  return rc;
}

static hk_code parse_header(parser *ps) {
  hk_code rc;
  if (!eat(ps, '{')) return corrupt(ps, NULL, "the header is not a JSON object");
  if (!eat(ps, '}')) {
    for (;;) {
      char *key;
      rc = parse_string(ps, NULL, &key);
      if (rc != HK_OK) return rc;
      if (!eat(ps, ':')) return corrupt(ps, NULL, "expected ':' after \"%.60s\"", key);
      if (strcmp(key, METADATA_KEY) == 0)
        rc = parse_metadata(ps);
      else
        rc = parse_tensor(ps, key);
      if (rc != HK_OK) return rc;
      if (eat(ps, '}')) break;
      if (!eat(ps, ',')) return corrupt(ps, NULL, "malformed header object");
    }
  }
  skip_ws(ps);
  if (ps->p != ps->end)
    return corrupt(ps, NULL, "unexpected bytes after the header object (at header byte %zu)",
                   (size_t)(ps->p - ps->r->header));
  rc = check_format(ps);
  if (rc != HK_OK) return rc;
  if (ps->unknown_key) {
    char shown[160];
    return corrupt(ps, NULL,
                   "metadata key \"%s\" is not one the format " FORMAT_PREFIX HK__STR(
                       FORMAT_VERSION) " defines (format, global_step, " STEP_CRC_KEY ", " STEP_TENSOR_KEY
                                       ", " CRC_KEY_PREFIX "<tensor>, and a shard's " SHARD_KEY ", " NUM_SHARDS_KEY
                                       ", " SLICE_KEY_PREFIX "<tensor>, " SHAPE_KEY_PREFIX "<tensor>): a damaged key",
                   hk__safetensors_escaped_name(ps->unknown_key, shown, sizeof shown));
  }
  if (!ps->seen_step) return corrupt(ps, NULL, "metadata has no \"global_step\"");
  rc = validate(ps);
  if (rc != HK_OK) return rc;
  return hk__reader_check_shard(ps->r, ps->shard, ps->num_shards, ps->slices, ps->nslices, ps->st);
}

/* The header's global step against what covers it (checkpoint-format.md):
 * its own CRC-32C when recorded, and the value of the tensor that
 * global_step_tensor names, read (and CRC-checked) here, at open, so a
 * checkpoint whose step and global-step tensor disagree never verifies and
 * never starts a restore. */

static hk_code check_global_step(parser *ps) {
  hk_checkpoint_reader *r = ps->r;
  if (ps->seen_step_crc) {
    uint32_t got = hk_crc32c_extend(0, ps->step_text, strlen(ps->step_text));
    if (got != ps->step_crc)
      return corrupt(ps, NULL,
                     "its global_step \"%.40s\" does not match its CRC-32C (recorded %08" PRIx32 ", computed %08" PRIx32
                     ")",
                     ps->step_text, ps->step_crc, got);
  }
  if (ps->gs_tensor) {
    const hk__reader_entry *e = hk__reader_find_entry(r, ps->gs_tensor);
    unsigned char buf[8];
    int64_t v = 0;
    uint64_t nbytes;
    hk_code rc;
    if (!e) return corrupt(ps, ps->gs_tensor, "\"" STEP_TENSOR_KEY "\" names it, but the file holds no such tensor");
    nbytes = e->end - e->begin;
    if (e->rank != 0 || !hk__safetensors_int_dtype(e->dtype, NULL))
      return corrupt(ps, e->name, "\"" STEP_TENSOR_KEY "\" names it, but it is not an integer scalar (%s, rank %d)",
                     hk__safetensors_dtype_name(e->dtype), (int)e->rank);
    rc = hk__reader_read_checked(r, e, buf, sizeof buf, 0, ps->st);
    if (rc != HK_OK) return rc;
    if (!hk__safetensors_int_scalar(e->dtype, buf, (size_t)nbytes, &v))
      return corrupt(ps, NULL,
                     "its global_step is %" PRId64 " but tensor '%.200s', its global-step tensor (" STEP_TENSOR_KEY
                     "), holds a value past int64",
                     r->step, e->name);
    if (v != r->step)
      return corrupt(ps, NULL,
                     "its global_step is %" PRId64 " but tensor '%.200s', its global-step tensor (" STEP_TENSOR_KEY
                     "), holds %" PRId64,
                     r->step, e->name, v);
  }
  return HK_OK;
}

hk_code hk__reader_load(hk_checkpoint_reader *r, hk_status *st) {
  unsigned char len_le[8];
  uint64_t file_size = 0, hlen = 0;
  size_t got = 0, bad = 0;
  parser ps;
  hk_code rc;

  rc = hk__fs_open_read(&r->fs, r->path, &r->f, st);
  if (rc != HK_OK) return rc;
  rc = hk__fs_size(&r->fs, r->f, r->path, &file_size, st);
  if (rc != HK_OK) return rc;
  memset(&ps, 0, sizeof ps);
  ps.r = r;
  ps.st = st;
  if (file_size < 8)
    return corrupt(&ps, NULL, "the file is %" PRIu64 " bytes, shorter than the 8-byte header length", file_size);
  rc = hk__fs_read_full(&r->fs, r->f, r->path, len_le, 8, 0, &got, st);
  if (rc != HK_OK) return rc;
  if (got < 8) return corrupt(&ps, NULL, "the file ends inside the 8-byte header length");
  for (int i = 7; i >= 0; i--) hlen = hlen << 8 | len_le[i];
  if (hlen > HEADER_MAX) return corrupt(&ps, NULL, "header length %" PRIu64 " exceeds the 100 MiB limit", hlen);
  if (hlen > file_size - 8)
    return corrupt(&ps, NULL, "header length %" PRIu64 " exceeds the %" PRIu64 " bytes after it", hlen, file_size - 8);
  r->data_start = 8 + hlen;
  r->data_size = file_size - r->data_start;
  /* Bounded by both the limit and the file, so never by a mere claim. */
  r->header = hk_env_alloc(&r->env, (size_t)hlen + 1);
  if (!r->header) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory reading the header of %s", r->path);
  rc = hk__fs_read_full(&r->fs, r->f, r->path, r->header, (size_t)hlen, 8, &got, st);
  if (rc != HK_OK) return rc;
  if (got < hlen) return corrupt(&ps, NULL, "the file ends inside its %" PRIu64 "-byte header", hlen);
  r->header[hlen] = '\0';
  /* Before the header is decoded in place: what a sharded checkpoint's
   * index records of each shard. */
  r->header_crc32c = hk_crc32c_extend(hk_crc32c_extend(0, len_le, 8), r->header, (size_t)hlen);
  if (!hk__safetensors_valid_utf8((const unsigned char *)r->header, (size_t)hlen, &bad))
    return corrupt(&ps, NULL, "the header is not valid UTF-8 (at byte %zu)", bad);
  ps.p = r->header;
  ps.end = r->header + hlen;
  find_newer_format(&ps);
  rc = parse_header(&ps);
  if (rc == HK_OK) rc = check_global_step(&ps);
  hk_env_free(&r->env, ps.notes);
  hk_env_free(&r->env, ps.slices);
  return rc;
}
