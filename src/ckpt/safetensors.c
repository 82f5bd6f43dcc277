/*
 * Checkpoint data files (checkpoint-format.md): the writer, and the public
 * reader with its bounded JSON header parser.
 *
 * The writer streams every tensor straight from its memory into an atomic
 * file (D4.1). The header's bytes depend only on the names, dtypes, shapes,
 * contents and step, so equal states give equal files; its length does not
 * depend on the contents (each CRC is 8 hex digits), so when the file system
 * can write at an offset the data goes first, at its final place, each
 * tensor's CRC computed while its bytes are being written, and the header
 * last. Without that the CRCs take a pass of their own before the header.
 *
 * The reader trusts nothing in the file: the header length is checked
 * against the 100 MiB limit and the file size before anything is
 * allocated, the header is parsed by a fixed-grammar, non-recursive parser
 * that decodes strings in place (names then point into the header buffer),
 * and the tensors must tile the data exactly. Every refusal is DATA_LOSS
 * naming the file and, when known, the tensor; a newer "hooked/N" format is
 * FAILED_PRECONDITION.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#if defined(__linux__) && !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE 1 /* mincore(), beside _POSIX_C_SOURCE */
#endif
#include "ckpt/ckpt.h"
#include "util/common.h"
#include "util/crc32c.h"
#include "util/fs.h"
#include "util/path.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#define HAVE_MINCORE 1
#endif

#define DATA_EXT ".safetensors"
#define HEADER_MAX ((uint64_t)100 << 20)
#define FORMAT_PREFIX "hooked/"
#define FORMAT_VERSION 1
#define CRC_KEY_PREFIX "crc32c:"
#define METADATA_KEY "__metadata__"
/* Optional (checkpoint-format.md): checked when present. */
#define STEP_CRC_KEY "global_step_crc32c"
#define STEP_TENSOR_KEY "global_step_tensor"
#define DATA_ALIGN 64
/* Writes and verification reads go in pieces of this size. */
#define IO_CHUNK ((size_t)4 << 20)
/* A tensor's bytes are CRC'd and then written in pieces of this size when
 * the writing thread computes the CRCs itself: small enough that the write
 * copies them out of the cache the CRC just brought them into. */
#define CRC_PIECE ((size_t)256 << 10)
/* From this much data on, a synchronous save computes the CRCs on a second
 * thread while it writes (a thread costs tens of microseconds). */
#define CRC_THREAD_MIN ((size_t)8 << 20)
/* Bytes before the JSON in the header buffer: the length, filled last. */
#define LEN_BYTES 8
/* Reads into a caller's memory go in pieces small enough to stay in cache
 * for the CRC that follows each one. */
#define READ_PIECE ((size_t)1 << 20)
/* A mapped restore's unit of work: a piece of one tensor, copied and
 * checked in one pass; pieces are shared out between two threads. */
#define RESTORE_CHUNK ((size_t)2 << 20)
/* From this much data on, a restore from the page cache uses a second
 * thread (creating one costs tens of microseconds). */
#define RESTORE_THREAD_MIN ((size_t)16 << 20)
#define HK__STR2(x) #x
#define HK__STR(x) HK__STR2(x)

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

static const char *dtype_to_name(hk_dtype dt) {
  if (dt == HK_DTYPE_STRING) return NULL;
  for (size_t i = 0; i < sizeof dtype_names / sizeof dtype_names[0]; i++)
    if (dtype_names[i].dtype == dt) return dtype_names[i].name;
  return NULL;
}

static hk_dtype dtype_from_name(const char *s) {
  for (size_t i = 0; i < sizeof dtype_names / sizeof dtype_names[0]; i++)
    if (dtype_names[i].dtype != HK_DTYPE_STRING && strcmp(dtype_names[i].name, s) == 0) return dtype_names[i].dtype;
  return HK_DTYPE_INVALID;
}

/* Byte size of a shape, or 0 with *overflow set when it does not fit 64 bits. */
static uint64_t shape_bytes(hk_dtype dt, int32_t rank, const int64_t *dims, int *overflow) {
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
static int valid_utf8(const unsigned char *s, size_t n, size_t *bad) {
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
static const char *escaped_name(const char *name, char *buf, size_t cap) {
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

/* ---- writer ------------------------------------------------------------------------- */

typedef struct strbuf {
  const hk_env *env;
  char *p;
  size_t n, cap;
  int oom;
} strbuf;

static void sb_append(strbuf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (n > SIZE_MAX - b->n - 1) {
    b->oom = 1;
    return;
  }
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n + 1) cap = cap > SIZE_MAX / 2 ? b->n + n + 1 : cap * 2;
    char *grown = hk_env_realloc(b->env, b->p, cap);
    if (!grown) {
      b->oom = 1;
      return;
    }
    b->p = grown;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = '\0';
}

static void sb_puts(strbuf *b, const char *s) { sb_append(b, s, strlen(s)); }

static void sb_printf(strbuf *b, const char *fmt, ...) HK_PRINTF(2, 3);
static void sb_printf(strbuf *b, const char *fmt, ...) {
  char tmp[64];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof tmp) {
    b->oom = 1;
    return;
  }
  sb_append(b, tmp, (size_t)n);
}

/* A JSON string: '"' and '\\' escaped, control bytes as \u00XX; other
 * bytes (UTF-8 included) as they are. */
static void sb_json_string(strbuf *b, const char *prefix, const char *s) {
  static const char hex[] = "0123456789abcdef";
  sb_append(b, "\"", 1);
  sb_puts(b, prefix);
  for (const char *run = s;; s++) {
    unsigned char c = (unsigned char)*s;
    if (c != '\0' && c != '"' && c != '\\' && c >= 0x20) continue;
    sb_append(b, run, (size_t)(s - run));
    if (c == '\0') break;
    if (c == '"' || c == '\\') {
      char esc[2] = {'\\', (char)c};
      sb_append(b, esc, 2);
    } else {
      char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
      sb_append(b, esc, 6);
    }
    run = s + 1;
  }
  sb_append(b, "\"", 1);
}

static int cmp_tensor_name(const void *a, const void *b) {
  const hk__ckpt_tensor *x = *(const hk__ckpt_tensor *const *)a;
  const hk__ckpt_tensor *y = *(const hk__ckpt_tensor *const *)b;
  return strcmp(x->name, y->name); /* compares as unsigned char: bytewise */
}

static hk_code check_tensor(const hk__ckpt_tensor *t, size_t i, const char *path, hk_status *st) {
  const hk_tensor *v = &t->value;
  size_t bad = 0;
  int overflow;
  if (!t->name || !*t->name)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "writing %s: tensor %zu has an empty name", path, i);
  /* The header is UTF-8 JSON: a file holding another name could never be
   * read back (checkpoint-format.md). */
  if (!valid_utf8((const unsigned char *)t->name, strlen(t->name), &bad)) {
    char shown[160];
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "writing %s: tensor name '%s' is not well-formed UTF-8 (at byte %zu), which the format "
                         "requires",
                         path, escaped_name(t->name, shown, sizeof shown), bad);
  }
  if (strcmp(t->name, METADATA_KEY) == 0)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "writing %s: a tensor may not be named '%s'", path, METADATA_KEY);
  if (v->dtype == HK_DTYPE_STRING)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "writing %s: tensor '%s' has dtype string, which cannot be saved",
                         path, t->name);
  if (!dtype_to_name(v->dtype))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "writing %s: tensor '%s' has an invalid dtype %d", path, t->name,
                         (int)v->dtype);
  if (v->rank < 0 || v->rank > HK_MAX_RANK)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "writing %s: tensor '%s' has rank %d", path, t->name, (int)v->rank);
  for (int32_t d = 0; d < v->rank; d++)
    if (v->dims[d] < 0)
      return hk_status_set(st, HK_INVALID_ARGUMENT, "writing %s: tensor '%s' has a negative dimension", path, t->name);
  uint64_t nbytes = shape_bytes(v->dtype, v->rank, v->dims, &overflow);
  if (overflow || nbytes != (uint64_t)v->nbytes)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "writing %s: tensor '%s' holds %zu bytes, its shape needs %" PRIu64,
                         path, t->name, v->nbytes, nbytes);
  if (!v->data && v->nbytes > 0)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "writing %s: tensor '%s' has no data", path, t->name);
  return HK_OK;
}

/* The file's first bytes: the 8-byte length, then the header padded so
 * that 8 + its length is a multiple of DATA_ALIGN. Every CRC is written as
 * "00000000" and its position kept in crc_at[i]: the length never depends
 * on the CRCs, which set_crcs() fills in later. */
static hk_code build_header(strbuf *b, const char *path, int64_t step, const char *gs_tensor,
                            const hk__ckpt_tensor *const *sorted, size_t *crc_at, size_t n, hk_status *st) {
  static const char zero_len[LEN_BYTES] = {0};
  uint64_t offset = 0;
  char step_text[24];
  int k = snprintf(step_text, sizeof step_text, "%" PRId64, step);
  sb_append(b, zero_len, LEN_BYTES);
  sb_puts(b, "{\"" METADATA_KEY "\":{\"format\":\"" FORMAT_PREFIX "1\",\"global_step\":");
  sb_printf(b, "\"%s\"", step_text);
  /* The step's text has a CRC of its own (checkpoint-format.md), and the
   * tensor holding the global step, when there is one, is named. */
  sb_printf(b, ",\"" STEP_CRC_KEY "\":\"%08" PRIx32 "\"", hk_crc32c_extend(0, step_text, (size_t)k));
  if (gs_tensor) {
    sb_puts(b, ",\"" STEP_TENSOR_KEY "\":");
    sb_json_string(b, "", gs_tensor);
  }
  for (size_t i = 0; i < n; i++) {
    sb_append(b, ",", 1);
    sb_json_string(b, CRC_KEY_PREFIX, sorted[i]->name);
    crc_at[i] = b->n + 2; /* after :" */
    sb_puts(b, ":\"00000000\"");
  }
  sb_append(b, "}", 1);
  for (size_t i = 0; i < n; i++) {
    const hk_tensor *v = &sorted[i]->value;
    sb_append(b, ",", 1);
    sb_json_string(b, "", sorted[i]->name);
    sb_puts(b, ":{\"dtype\":\"");
    sb_puts(b, dtype_to_name(v->dtype));
    sb_puts(b, "\",\"shape\":[");
    for (int32_t d = 0; d < v->rank; d++) sb_printf(b, d ? ",%" PRId64 : "%" PRId64, v->dims[d]);
    if (v->nbytes > UINT64_MAX - offset)
      return hk_status_set(st, HK_INVALID_ARGUMENT, "writing %s: the tensors hold more than 2^64 bytes", path);
    sb_printf(b, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", offset, offset + (uint64_t)v->nbytes);
    offset += v->nbytes;
  }
  sb_append(b, "}", 1);
  while (!b->oom && b->n % DATA_ALIGN != 0) sb_append(b, " ", 1);
  if (b->oom) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory building the header of %s", path);
  if (b->n - LEN_BYTES > HEADER_MAX)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "writing %s: the header would be %zu bytes, more than 100 MiB", path,
                         b->n - LEN_BYTES);
  for (int i = 0; i < LEN_BYTES; i++) b->p[i] = (char)(unsigned char)((uint64_t)(b->n - LEN_BYTES) >> (8 * i));
  return HK_OK;
}

static void set_crcs(strbuf *b, const size_t *crc_at, const uint32_t *crcs, size_t n) {
  static const char hex[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++)
    for (int d = 0; d < 8; d++) b->p[crc_at[i] + (size_t)d] = hex[(crcs[i] >> (28 - 4 * d)) & 15];
}

/* Where the first NaN or infinity of a tensor was found. */
typedef struct bad_value {
  size_t tensor; /* index into sorted; SIZE_MAX: none found */
  size_t element;
} bad_value;

/* The CRC of one piece of a tensor, then (unless the tensor may hold them)
 * its scan for NaN and infinities, on the same cache-hot bytes. `at` is
 * the piece's byte offset in the tensor. @return 0 when the piece holds
 * one (its element index in *bad), else 1. */
static int crc_piece(const hk__ckpt_tensor *t, int check, size_t at, const char *p, size_t k, uint32_t *crc,
                     size_t *bad) {
  size_t e;
  *crc = hk_crc32c_extend(*crc, p, k);
  if (!check) return 1;
  e = hk__first_non_finite(t->value.dtype, p, k);
  if (e == SIZE_MAX) return 1;
  *bad = at / hk_dtype_size(t->value.dtype) + e;
  return 0;
}

/* Whether tensor t is scanned for non-finite values. */
static int checks(const hk__ckpt_tensor *t, unsigned flags) {
  return !(flags & HK__CKPT_WRITE_NON_FINITE) && !t->non_finite_ok && hk__dtype_can_be_non_finite(t->value.dtype);
}

/* The CRC of a whole tensor, in pieces of CRC_PIECE, each scanned after
 * its CRC when it must be. @return 0 at the first non-finite value. */
static int crc_tensor(const hk__ckpt_tensor *t, unsigned flags, uint32_t *crc, size_t *bad) {
  const char *p = t->value.data;
  int check = checks(t, flags);
  *crc = 0;
  for (size_t at = 0; at < t->value.nbytes;) {
    size_t k = t->value.nbytes - at < CRC_PIECE ? t->value.nbytes - at : CRC_PIECE;
    if (!crc_piece(t, check, at, p + at, k, crc, bad)) return 0;
    at += k;
  }
  return 1;
}

/* INVALID_ARGUMENT naming the file, the variable, the element (its
 * coordinates and flat index) and its value, and how to allow it. */
static hk_code refuse_non_finite(const char *path, const hk__ckpt_tensor *t, size_t index, hk_status *st) {
  const hk_tensor *v = &t->value;
  const char *value = hk__non_finite_text(v->dtype, (const char *)v->data + index * hk_dtype_size(v->dtype));
  char where[160];
  if (v->rank <= 1) {
    snprintf(where, sizeof where, v->rank == 0 ? "its value" : "element %zu", index);
  } else {
    size_t o = 0, rest = index;
    size_t coord[HK_MAX_RANK];
    for (int32_t d = v->rank; d > 0; d--) {
      size_t dim = (size_t)v->dims[d - 1];
      coord[d - 1] = dim ? rest % dim : 0;
      rest = dim ? rest / dim : 0;
    }
    o += (size_t)snprintf(where + o, sizeof where - o, "element [");
    for (int32_t d = 0; d < v->rank && o < sizeof where; d++)
      o += (size_t)snprintf(where + o, sizeof where - o, d ? ", %zu" : "%zu", coord[d]);
    if (o < sizeof where) snprintf(where + o, sizeof where - o, "] (flat index %zu)", index);
  }
  return hk_status_set(st, HK_INVALID_ARGUMENT,
                       "Refusing to checkpoint a non-finite value: variable '%.200s' holds %s at %s, writing %s (allow "
                       "it with allow_non_finite in the Saver's or the loop's options, or flag the variable "
                       "HK_VAR_NON_FINITE_OK / HK_LOOP_NON_FINITE_OK)",
                       t->name, value, where, path);
}

/* The CRCs of a list of tensors, computed on a second thread while the
 * first writes the same bytes (both only read them), each piece scanned
 * for NaN and infinities after its CRC. The first one found stops the job
 * and, through `stop`, the writes. */
typedef struct crc_job {
  const hk__ckpt_tensor *const *sorted;
  uint32_t *crcs;
  size_t n;
  unsigned flags;
  bad_value bad;
  atomic_int stop;
} crc_job;

static void *crc_job_main(void *arg) {
  crc_job *j = arg;
  for (size_t i = 0; i < j->n; i++) {
    if (!crc_tensor(j->sorted[i], j->flags, &j->crcs[i], &j->bad.element)) {
      j->bad.tensor = i;
      atomic_store_explicit(&j->stop, 1, memory_order_relaxed);
      break;
    }
  }
  return NULL;
}

/* Data first, at its final offsets, then the header (write_at). With a
 * helper thread the CRCs are computed beside the writes; without, each
 * piece is CRC'd just before it is written, so the write copies it from
 * the cache. */
static hk_code write_data_first(hk__atomic_file *af, strbuf *header, const size_t *crc_at,
                                const hk__ckpt_tensor *const *sorted, uint32_t *crcs, size_t n, unsigned flags,
                                int use_thread, hk_status *st) {
  crc_job job;
  pthread_t helper;
  int threaded = 0;
  uint64_t at = header->n; /* the data starts right after the padded header */
  bad_value bad = {SIZE_MAX, 0};
  hk_code rc = HK_OK;

  job.sorted = sorted;
  job.crcs = crcs;
  job.n = n;
  job.flags = flags;
  job.bad = bad;
  atomic_init(&job.stop, 0);
  if (use_thread) threaded = pthread_create(&helper, NULL, crc_job_main, &job) == 0;
  for (size_t i = 0; i < n && rc == HK_OK && bad.tensor == SIZE_MAX; i++) {
    const char *p = sorted[i]->value.data;
    size_t left = sorted[i]->value.nbytes, done = 0;
    size_t piece = threaded ? IO_CHUNK : CRC_PIECE;
    int check = !threaded && checks(sorted[i], flags);
    uint32_t crc = 0;
    while (left > 0 && rc == HK_OK) {
      size_t k = left < piece ? left : piece;
      if (threaded && atomic_load_explicit(&job.stop, memory_order_relaxed)) break;
      if (!threaded && !crc_piece(sorted[i], check, done, p, k, &crc, &bad.element)) {
        bad.tensor = i;
        break;
      }
      rc = hk__atomic_write_at(af, p, k, at, st);
      p += k;
      at += k;
      done += k;
      left -= k;
    }
    if (!threaded) crcs[i] = crc;
  }
  /* Always joined: the helper reads the caller's tensors. */
  if (threaded) {
    pthread_join(helper, NULL);
    bad = job.bad;
  }
  if (bad.tensor != SIZE_MAX) return refuse_non_finite(af->final_path, sorted[bad.tensor], bad.element, st);
  if (rc != HK_OK) return rc;
  set_crcs(header, crc_at, crcs, n);
  return hk__atomic_write_at(af, header->p, header->n, 0, st);
}

/* The file in order (write only): the CRCs first, then header and data. */
static hk_code write_in_order(hk__atomic_file *af, strbuf *header, const size_t *crc_at,
                              const hk__ckpt_tensor *const *sorted, uint32_t *crcs, size_t n, unsigned flags,
                              hk_status *st) {
  hk_code rc;
  for (size_t i = 0; i < n; i++) {
    size_t bad;
    if (!crc_tensor(sorted[i], flags, &crcs[i], &bad)) return refuse_non_finite(af->final_path, sorted[i], bad, st);
  }
  set_crcs(header, crc_at, crcs, n);
  rc = hk__atomic_write(af, header->p, header->n, st);
  for (size_t i = 0; i < n && rc == HK_OK; i++) {
    const char *p = sorted[i]->value.data;
    size_t left = sorted[i]->value.nbytes;
    while (left > 0 && rc == HK_OK) {
      size_t k = left < IO_CHUNK ? left : IO_CHUNK;
      rc = hk__atomic_write(af, p, k, st);
      p += k;
      left -= k;
    }
  }
  return rc;
}

/* The integer dtypes (a global step's, C143), and whether one is signed. */
static int int_dtype(hk_dtype dtype, int *is_signed) {
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
static int int_scalar_value(hk_dtype dtype, const unsigned char *p, size_t nbytes, int64_t *out) {
  uint64_t u = 0;
  int is_signed;
  if (!int_dtype(dtype, &is_signed)) return 0;
  if (nbytes != hk_dtype_size(dtype) || nbytes == 0 || nbytes > 8) return 0;
  for (size_t i = nbytes; i > 0; i--) u = u << 8 | p[i - 1];
  if (is_signed && nbytes < 8 && (u >> (8 * nbytes - 1)) & 1) u |= ~(uint64_t)0 << (8 * nbytes);
  if (!is_signed && u > (uint64_t)INT64_MAX) return 0;
  memcpy(out, &u, sizeof *out);
  return 1;
}

/* The tensor the header names as the global step: `gs_tensor` when it is
 * one of the tensors, an integer scalar, and holds `step` — so a reader
 * can hold the header's step against it. NULL otherwise (no such tensor,
 * or a save given another step than the variable holds, C113). */
static const char *global_step_tensor(const char *gs_tensor, int64_t step, const hk__ckpt_tensor *tensors, size_t n) {
  for (size_t i = 0; gs_tensor && i < n; i++) {
    int64_t v;
    const hk_tensor *t = &tensors[i].value;
    if (strcmp(tensors[i].name, gs_tensor) != 0) continue;
    if (t->rank != 0 || !t->data) return NULL;
    return int_scalar_value(t->dtype, t->data, t->nbytes, &v) && v == step ? tensors[i].name : NULL;
  }
  return NULL;
}

hk_code hk__ckpt_write(const hk_env *env, const char *final_path, int64_t step, const char *gs_tensor,
                       const hk__ckpt_tensor *tensors, size_t n, unsigned flags, hk_status *st) {
  const hk__ckpt_tensor **sorted = NULL;
  uint32_t *crcs = NULL;
  size_t *crc_at = NULL;
  size_t total = 0;
  strbuf header;
  hk__atomic_file af;
  hk_code rc;

  env = hk__env_or_default(env);
  if (!final_path) return hk_status_set(st, HK_INVALID_ARGUMENT, "writing a checkpoint: the path is NULL");
  if (n > 0 && !tensors)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "writing %s: NULL tensors with a count of %zu", final_path, n);
  for (size_t i = 0; i < n; i++) {
    rc = check_tensor(&tensors[i], i, final_path, st);
    if (rc != HK_OK) return rc;
    total = tensors[i].value.nbytes > SIZE_MAX - total ? SIZE_MAX : total + tensors[i].value.nbytes;
  }
  memset(&header, 0, sizeof header);
  header.env = env;
  if (n > 0) {
    sorted = hk_env_calloc(env, n, sizeof *sorted);
    crcs = hk_env_calloc(env, n, sizeof *crcs);
    crc_at = hk_env_calloc(env, n, sizeof *crc_at);
    if (!sorted || !crcs || !crc_at) {
      rc = hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory writing %s", final_path);
      goto done;
    }
    for (size_t i = 0; i < n; i++) sorted[i] = &tensors[i];
    qsort(sorted, n, sizeof *sorted, cmp_tensor_name);
    for (size_t i = 1; i < n; i++)
      if (strcmp(sorted[i - 1]->name, sorted[i]->name) == 0) {
        rc = hk_status_set(st, HK_INVALID_ARGUMENT, "writing %s: tensor name '%s' appears twice", final_path,
                           sorted[i]->name);
        goto done;
      }
  }
  rc = build_header(&header, final_path, step, global_step_tensor(gs_tensor, step, tensors, n), sorted, crc_at, n,
                    st);
  if (rc != HK_OK) goto done;

  rc = hk__atomic_begin(&af, env, final_path, st);
  if (rc != HK_OK) goto done;
  if (hk__fs_has_write_at(&af.fs))
    rc = write_data_first(&af, &header, crc_at, sorted, crcs, n, flags,
                          (flags & HK__CKPT_WRITE_THREAD) && total >= CRC_THREAD_MIN, st);
  else
    rc = write_in_order(&af, &header, crc_at, sorted, crcs, n, flags, st);
  if (rc == HK_OK)
    rc = hk__atomic_commit(&af, st);
  else
    hk__atomic_abort(&af);

done:
  hk_env_free(env, header.p);
  hk_env_free(env, sorted);
  hk_env_free(env, crcs);
  hk_env_free(env, crc_at);
  return rc;
}

/* ---- reader ---------------------------------------------------------------------------- */

typedef struct entry {
  char *name; /* points into the header buffer */
  hk_dtype dtype;
  int32_t rank;
  int64_t dims[HK_MAX_RANK];
  uint64_t begin, end; /* relative to the data */
  uint32_t crc;
  int has_crc;
} entry;

typedef struct crc_note {
  const char *name;
  uint32_t crc;
} crc_note;

struct hk_checkpoint_reader {
  hk_env env;
  hk__fs fs;
  char *path;
  hk_fs_file *f;
  char *header; /* decoded in place; owns every entry name */
  uint64_t data_start;
  uint64_t data_size;
  int64_t step;
  entry *entries; /* sorted by name */
  size_t n;
  /* hk__reader_view's: the data region mapped, or a read buffer. */
  const void *map_addr;
  void *map_token;
  int map_tried;
  unsigned char *scratch;
  size_t scratch_cap;
};

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
  const char *gs_tensor; /* global_step_tensor, NULL when absent */
  const char *unknown_key; /* the first metadata key the format does not define, NULL when none */
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
static entry *add_entry(parser *ps) {
  hk_checkpoint_reader *r = ps->r;
  entry *e;
  if (r->n == ps->cap) {
    size_t cap = ps->cap ? ps->cap * 2 : 16;
    entry *grown = hk_env_realloc(&r->env, r->entries, cap * sizeof *grown);
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
  entry *e;
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
        e->dtype = dtype_from_name(dt);
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
      if (!hk__crc32c_from_hex(val, strlen(val), &crc)) return corrupt(ps, name, "CRC \"%.40s\" is not 8 lowercase hex digits", val);
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
  return strcmp(((const entry *)a)->name, ((const entry *)b)->name);
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

static entry *find_entry(const hk_checkpoint_reader *r, const char *name) {
  size_t lo = 0, hi = r->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(name, r->entries[mid].name);
    if (c == 0) return &r->entries[mid];
    if (c < 0)
      hi = mid;
    else
      lo = mid + 1;
  }
  return NULL;
}

/* Everything after the syntax: shapes, sizes, names, CRCs, tiling. */
static hk_code validate(parser *ps) {
  hk_checkpoint_reader *r = ps->r;
  span *spans;
  hk_code rc = HK_OK;

  for (size_t i = 0; i < r->n; i++) {
    entry *e = &r->entries[i];
    int overflow;
    uint64_t nbytes = shape_bytes(e->dtype, e->rank, e->dims, &overflow);
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
    entry *e = find_entry(r, ps->notes[i].name);
    if (!e) {
      char shown[200];
      return corrupt(ps, NULL,
                     "metadata key \"" CRC_KEY_PREFIX "%s\" records a CRC for a tensor the file does not have",
                     escaped_name(ps->notes[i].name, shown, sizeof shown));
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
    const entry *e = &r->entries[spans[i].index];
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
                   "metadata key \"%s\" is not one the format " FORMAT_PREFIX HK__STR(FORMAT_VERSION)
                   " defines (format, global_step, " STEP_CRC_KEY ", " STEP_TENSOR_KEY ", " CRC_KEY_PREFIX
                   "<tensor>): a damaged key",
                   escaped_name(ps->unknown_key, shown, sizeof shown));
  }
  if (!ps->seen_step) return corrupt(ps, NULL, "metadata has no \"global_step\"");
  return validate(ps);
}

/* The header's global step against what covers it (checkpoint-format.md):
 * its own CRC-32C when recorded, and the value of the tensor that
 * global_step_tensor names, read (and CRC-checked) here, at open, so a
 * checkpoint whose step and global-step tensor disagree never verifies and
 * never starts a restore. */
static hk_code read_checked(hk_checkpoint_reader *r, const entry *e, unsigned char *buf, size_t piece, int reuse,
                            hk_status *status);

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
    const entry *e = find_entry(r, ps->gs_tensor);
    unsigned char buf[8];
    int64_t v = 0;
    uint64_t nbytes;
    hk_code rc;
    if (!e) return corrupt(ps, ps->gs_tensor, "\"" STEP_TENSOR_KEY "\" names it, but the file holds no such tensor");
    nbytes = e->end - e->begin;
    if (e->rank != 0 || !int_dtype(e->dtype, NULL))
      return corrupt(ps, e->name, "\"" STEP_TENSOR_KEY "\" names it, but it is not an integer scalar (%s, rank %d)",
                     dtype_to_name(e->dtype), (int)e->rank);
    rc = read_checked(r, e, buf, sizeof buf, 0, ps->st);
    if (rc != HK_OK) return rc;
    if (!int_scalar_value(e->dtype, buf, (size_t)nbytes, &v))
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

static hk_code reader_load(hk_checkpoint_reader *r, hk_status *st) {
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
  if (!valid_utf8((const unsigned char *)r->header, (size_t)hlen, &bad))
    return corrupt(&ps, NULL, "the header is not valid UTF-8 (at byte %zu)", bad);
  ps.p = r->header;
  ps.end = r->header + hlen;
  find_newer_format(&ps);
  rc = parse_header(&ps);
  if (rc == HK_OK) rc = check_global_step(&ps);
  hk_env_free(&r->env, ps.notes);
  return rc;
}

hk_code hk_checkpoint_reader_open(hk_checkpoint_reader **out, const hk_env *env, const char *path, hk_status *status) {
  hk_checkpoint_reader *r;
  hk_code rc;

  if (!out) return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_checkpoint_reader_open: 'out' is NULL");
  *out = NULL;
  if (!path) return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_checkpoint_reader_open: 'path' is NULL");
  rc = hk_env_check(env, "hk_checkpoint_reader_open: env", status);
  if (rc != HK_OK) return rc;
  r = hk_env_calloc(env, 1, sizeof *r);
  if (!r) return hk_status_set(status, HK_RESOURCE_EXHAUSTED, "out of memory opening checkpoint %s", path);
  hk_env_copy(&r->env, env);
  hk__fs_init(&r->fs, &r->env);
  r->path = hk__ckpt_data_path(&r->env, path);
  if (!r->path) {
    hk_env_free(env, r);
    return hk_status_set(status, HK_RESOURCE_EXHAUSTED, "out of memory opening checkpoint %s", path);
  }
  rc = reader_load(r, status);
  if (rc != HK_OK) {
    hk_checkpoint_reader_free(r);
    return rc;
  }
  *out = r;
  return HK_OK;
}

void hk_checkpoint_reader_free(hk_checkpoint_reader *r) {
  if (!r) return;
  if (r->map_addr) {
    hk_status why = HK_STATUS_INIT;
    if (hk__fs_unmap(&r->fs, r->map_token, r->path, &why) != HK_OK)
      hk_env_log(&r->env, HK_LOG_WARNING, "Releasing the mapping of checkpoint %s failed: %s", r->path, why.message);
  }
  if (r->f) hk__fs_close(&r->fs, r->f, r->path, NULL);
  hk_env_free(&r->env, r->scratch);
  hk_env_free(&r->env, r->entries);
  hk_env_free(&r->env, r->header);
  hk_env_free(&r->env, r->path);
  hk_env env = r->env; /* r lives in memory from this allocator */
  hk_env_free(&env, r);
}

const char *hk_checkpoint_reader_path(const hk_checkpoint_reader *r) { return r ? r->path : NULL; }
int64_t hk_checkpoint_reader_step(const hk_checkpoint_reader *r) { return r ? r->step : 0; }
size_t hk_checkpoint_reader_count(const hk_checkpoint_reader *r) { return r ? r->n : 0; }

hk_code hk_checkpoint_reader_entry(const hk_checkpoint_reader *r, size_t i, hk_checkpoint_entry *out,
                                   hk_status *status) {
  if (!r) return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_checkpoint_reader_entry: 'r' is NULL");
  if (!out) return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_checkpoint_reader_entry: 'out' is NULL");
  if (i >= r->n)
    return hk_status_set(status, HK_OUT_OF_RANGE, "entry %zu of checkpoint %s: it has %zu tensors", i, r->path, r->n);
  const entry *e = &r->entries[i];
  memset(out, 0, sizeof *out);
  out->name = e->name;
  out->dtype = e->dtype;
  out->rank = e->rank;
  memcpy(out->dims, e->dims, sizeof out->dims);
  out->offset = r->data_start + e->begin;
  out->nbytes = e->end - e->begin;
  out->crc32c = e->crc;
  return HK_OK;
}

hk_code hk_checkpoint_reader_find(const hk_checkpoint_reader *r, const char *name, size_t *index, hk_status *status) {
  if (!r) return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_checkpoint_reader_find: 'r' is NULL");
  if (!name) return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_checkpoint_reader_find: 'name' is NULL");
  if (!index) return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_checkpoint_reader_find: 'index' is NULL");
  const entry *e = find_entry(r, name);
  if (!e) return hk_status_set(status, HK_NOT_FOUND, "Key %s not found in checkpoint %s", name, r->path);
  *index = (size_t)(e - r->entries);
  return HK_OK;
}

static hk_code crc_mismatch(const hk_checkpoint_reader *r, const entry *e, uint32_t crc, hk_status *status) {
  return hk_status_set(status, HK_DATA_LOSS,
                       "Checkpoint %s is corrupt: tensor '%.200s': CRC-32C mismatch (recorded %08" PRIx32
                       ", computed %08" PRIx32 ")",
                       r->path, e->name, e->crc, crc);
}

/* Read entry e's bytes in pieces of at most `piece`, checking the CRC:
 * into consecutive parts of buf, or (reuse) each piece into buf itself. */
static hk_code read_checked(hk_checkpoint_reader *r, const entry *e, unsigned char *buf, size_t piece, int reuse,
                            hk_status *status) {
  uint64_t total = e->end - e->begin, done = 0;
  uint32_t crc = 0;
  while (done < total) {
    size_t want = total - done < piece ? (size_t)(total - done) : piece, got = 0;
    unsigned char *dst = reuse ? buf : buf + done;
    hk_code rc = hk__fs_read_full(&r->fs, r->f, r->path, dst, want, r->data_start + e->begin + done, &got, status);
    if (rc != HK_OK) return rc;
    if (got < want)
      return hk_status_set(status, HK_DATA_LOSS,
                           "Checkpoint %s is corrupt: tensor '%.200s': the file ends %" PRIu64
                           " bytes into its %" PRIu64 " bytes",
                           r->path, e->name, done + got, total);
    crc = hk_crc32c_extend(crc, dst, want);
    done += want;
  }
  if (crc != e->crc) return crc_mismatch(r, e, crc, status);
  return HK_OK;
}

hk_code hk_checkpoint_reader_read(hk_checkpoint_reader *r, size_t i, void *dst, size_t cap, hk_status *status) {
  if (!r) return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_checkpoint_reader_read: 'r' is NULL");
  if (i >= r->n)
    return hk_status_set(status, HK_OUT_OF_RANGE, "entry %zu of checkpoint %s: it has %zu tensors", i, r->path, r->n);
  const entry *e = &r->entries[i];
  uint64_t nbytes = e->end - e->begin;
  if (nbytes > cap)
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         "hk_checkpoint_reader_read: tensor '%s' of %s needs %" PRIu64 " bytes, 'cap' is %zu", e->name,
                         r->path, nbytes, cap);
  if (!dst && nbytes > 0) return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_checkpoint_reader_read: 'dst' is NULL");
  return read_checked(r, e, dst, READ_PIECE, 0, status);
}

/* Map the whole data region once: one mapping costs a restore far less
 * than one per tensor (a system call pair and a TLB flush each), and it is
 * address space, not memory. Tried once; a failure means reading. */
static void map_data(hk_checkpoint_reader *r) {
  hk_status why = HK_STATUS_INIT;
  r->map_tried = 1;
  if (r->data_size == 0 || r->data_size > SIZE_MAX) return;
  if (hk__fs_map(&r->fs, r->f, r->path, r->data_start, (size_t)r->data_size, &r->map_addr, &r->map_token, &why) ==
      HK_OK)
    return;
  r->map_addr = NULL;
  r->map_token = NULL;
  if (why.code != HK_UNIMPLEMENTED)
    hk_env_log(&r->env, HK_LOG_DEBUG, "Reading checkpoint %s instead of mapping it: %s", r->path, why.message);
}

hk_code hk__reader_view(hk_checkpoint_reader *r, size_t i, hk__tensor_view *v, hk_status *st) {
  const entry *e;
  uint64_t nbytes;
  hk_code rc;

  memset(v, 0, sizeof *v);
  if (i >= r->n)
    return hk_status_set(st, HK_OUT_OF_RANGE, "entry %zu of checkpoint %s: it has %zu tensors", i, r->path, r->n);
  e = &r->entries[i];
  nbytes = e->end - e->begin;
  if (nbytes == 0) return e->crc == 0 ? HK_OK : crc_mismatch(r, e, 0, st);
  if (nbytes > SIZE_MAX)
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "tensor '%.200s' of %s (%" PRIu64 " bytes) does not fit in memory",
                         e->name, r->path, nbytes);
  if (!r->map_tried) map_data(r);
  if (r->map_addr) {
    /* The parser keeps every tensor inside [0, data_size), all mapped. */
    const unsigned char *p = (const unsigned char *)r->map_addr + e->begin;
    uint32_t crc = hk_crc32c_extend(0, p, (size_t)nbytes);
    if (crc != e->crc) return crc_mismatch(r, e, crc, st);
    v->data = p;
    v->nbytes = (size_t)nbytes;
    return HK_OK;
  }
  if (nbytes > r->scratch_cap) {
    /* Grown, never shrunk: a restore views every tensor of one reader. */
    hk_env_free(&r->env, r->scratch);
    r->scratch_cap = 0;
    r->scratch = hk_env_alloc(&r->env, (size_t)nbytes);
    if (!r->scratch)
      return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory reading tensor '%.200s' of %s (%" PRIu64 " bytes)",
                           e->name, r->path, nbytes);
    r->scratch_cap = (size_t)nbytes;
  }
  rc = read_checked(r, e, r->scratch, READ_PIECE, 0, st);
  if (rc != HK_OK) return rc;
  v->data = r->scratch;
  v->nbytes = (size_t)nbytes;
  return HK_OK;
}

/* ---- restore straight into the caller's memory ---------------------------------- */

/* One piece of a target tensor: bytes [off, off + len) of target `t`. */
typedef struct piece {
  size_t t;
  size_t off, len;
  uint32_t crc;
} piece;

typedef struct fused_job {
  const unsigned char *map; /* the data region */
  const entry *const *e;    /* per target */
  const hk__read_target *targets;
  piece *pieces;
  size_t npieces;
  atomic_size_t next;
} fused_job;

/* Take the next piece until none is left: the two threads move through the
 * file together, so the page cache (or the disk, on a miss) sees one
 * forward sweep. */
static void *fused_worker(void *arg) {
  fused_job *j = arg;
  for (;;) {
    size_t k = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
    if (k >= j->npieces) return NULL;
    piece *p = &j->pieces[k];
    const entry *e = j->e[p->t];
    p->crc = hk__crc32c_copy(0, (unsigned char *)j->targets[p->t].dst + p->off, j->map + e->begin + p->off, p->len);
  }
}

/* Whether the pages of the mapped range are in memory: then a second
 * thread doubles the copy's speed. On a miss the disk sets the pace, and
 * two threads faulting in different places only break its readahead.
 * Sampled: 64 windows of 16 pages spread over the range (asking about
 * every page of 256 MiB took 4 ms, a seventh of the restore). */
static int mostly_resident(const void *addr, size_t len) {
#ifdef HAVE_MINCORE
  enum { WINDOWS = 64, WINDOW_PAGES = 16 };
  long page = sysconf(_SC_PAGESIZE);
  unsigned char vec[WINDOW_PAGES];
  uintptr_t start, end;
  size_t npages, step, looked = 0, in = 0;
  if (page <= 0 || len == 0) return 0;
  start = (uintptr_t)addr / (uintptr_t)page * (uintptr_t)page;
  end = (uintptr_t)addr + len;
  npages = (size_t)((end - start + (uintptr_t)page - 1) / (uintptr_t)page);
  step = npages / WINDOWS > WINDOW_PAGES ? npages / WINDOWS : WINDOW_PAGES;
  for (size_t at = 0; at < npages; at += step) {
    size_t n = npages - at < WINDOW_PAGES ? npages - at : WINDOW_PAGES;
    if (mincore((void *)(start + at * (uintptr_t)page), n * (size_t)page, vec) != 0) return 0;
    for (size_t i = 0; i < n; i++) in += vec[i] & 1;
    looked += n;
  }
  return looked > 0 && in * 10 >= looked * 9;
#else
  (void)addr;
  (void)len;
  return 0;
#endif
}

/* A target's entry and its index in the caller's array, sorted into file
 * order (zero-byte tensors may share an offset: the index breaks ties). */
typedef struct placed {
  const entry *e;
  size_t t;
} placed;

static int cmp_placed(const void *a, const void *b) {
  const placed *x = a, *y = b;
  if (x->e->begin != y->e->begin) return x->e->begin < y->e->begin ? -1 : 1;
  return (x->t > y->t) - (x->t < y->t);
}

hk_code hk__reader_read_into(hk_checkpoint_reader *r, const hk__read_target *targets, size_t n, int may_use_thread,
                             hk_status *st) {
  placed *order = NULL; /* the targets in file order */
  const entry **by_target = NULL;
  fused_job job;
  uint64_t total = 0;
  size_t npieces = 0;
  hk_code rc = HK_OK;

  memset(&job, 0, sizeof job);
  if (n == 0) return HK_OK;
  for (size_t i = 0; i < n; i++) {
    if (targets[i].entry >= r->n)
      return hk_status_set(st, HK_OUT_OF_RANGE, "entry %zu of checkpoint %s: it has %zu tensors", targets[i].entry,
                           r->path, r->n);
    const entry *e = &r->entries[targets[i].entry];
    if (e->end - e->begin > SIZE_MAX)
      return hk_status_set(st, HK_RESOURCE_EXHAUSTED,
                           "tensor '%.200s' of %s (%" PRIu64 " bytes) does not fit in memory", e->name, r->path,
                           e->end - e->begin);
    if (e->end > e->begin && !targets[i].dst)
      return hk_status_set(st, HK_INVALID_ARGUMENT, "reading tensor '%.200s' of %s: no destination", e->name, r->path);
    total += e->end - e->begin;
    npieces += (size_t)((e->end - e->begin + RESTORE_CHUNK - 1) / RESTORE_CHUNK);
  }
  order = hk_env_calloc(&r->env, n, sizeof *order);
  by_target = hk_env_calloc(&r->env, n, sizeof *by_target);
  if (!order || !by_target) {
    rc = hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory restoring from %s", r->path);
    goto done;
  }
  for (size_t i = 0; i < n; i++) {
    by_target[i] = &r->entries[targets[i].entry];
    order[i].e = by_target[i];
    order[i].t = i;
  }
  qsort(order, n, sizeof *order, cmp_placed);

  if (!r->map_tried) map_data(r);
  if (!r->map_addr || total == 0) {
    /* Read in pieces straight into the destination, each CRC'd while the
     * read has just brought it into the cache. A file that shrank since it
     * was opened is refused before anything is written: every variable
     * keeps its value (a CRC mismatch is only seen once read). */
    uint64_t size = 0;
    if (total > 0) {
      rc = hk__fs_size(&r->fs, r->f, r->path, &size, st);
      for (size_t k = 0; k < n && rc == HK_OK; k++) {
        const entry *e = order[k].e;
        uint64_t have = size > r->data_start + e->begin ? size - (r->data_start + e->begin) : 0;
        if (e->end > e->begin && have < e->end - e->begin)
          rc = hk_status_set(st, HK_DATA_LOSS,
                             "Checkpoint %s is corrupt: tensor '%.200s': the file ends %" PRIu64
                             " bytes into its %" PRIu64 " bytes",
                             r->path, e->name, have, e->end - e->begin);
      }
    }
    for (size_t k = 0; k < n && rc == HK_OK; k++) {
      const entry *e = order[k].e;
      if (e->end == e->begin)
        rc = e->crc == 0 ? HK_OK : crc_mismatch(r, e, 0, st);
      else
        rc = read_checked(r, e, targets[order[k].t].dst, READ_PIECE, 0, st);
    }
    goto done;
  }

  /* Mapped: every tensor in pieces, each copied and CRC'd in one pass
   * (hk__crc32c_copy), the piece CRCs joined per tensor afterwards. */
  job.map = r->map_addr;
  job.e = by_target;
  job.targets = targets;
  job.npieces = npieces;
  atomic_init(&job.next, 0);
  if (npieces > 0) {
    job.pieces = hk_env_calloc(&r->env, npieces, sizeof *job.pieces);
    if (!job.pieces) {
      rc = hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory restoring from %s", r->path);
      goto done;
    }
  }
  {
    size_t at = 0;
    for (size_t k = 0; k < n; k++) {
      const entry *e = order[k].e;
      size_t len = (size_t)(e->end - e->begin);
      for (size_t off = 0; off < len; off += RESTORE_CHUNK) {
        job.pieces[at].t = order[k].t;
        job.pieces[at].off = off;
        job.pieces[at].len = len - off < RESTORE_CHUNK ? len - off : RESTORE_CHUNK;
        at++;
      }
    }
  }
  {
    pthread_t helper;
    int threaded = 0;
    const unsigned char *lo = (const unsigned char *)r->map_addr + order[0].e->begin;
    size_t span = (size_t)(order[n - 1].e->end - order[0].e->begin);
    if (may_use_thread && total >= RESTORE_THREAD_MIN && mostly_resident(lo, span))
      threaded = pthread_create(&helper, NULL, fused_worker, &job) == 0;
    hk_env_log(&r->env, HK_LOG_DEBUG, "Reading %" PRIu64 " bytes of %s in place, %s", total, r->path,
               threaded ? "on two threads" : "on one thread");
    fused_worker(&job);
    if (threaded) pthread_join(helper, NULL);
  }
  /* Join each tensor's pieces (in file order) and compare. */
  {
    size_t at = 0;
    for (size_t k = 0; k < n && rc == HK_OK; k++) {
      const entry *e = order[k].e;
      uint64_t len = e->end - e->begin;
      uint32_t crc = 0;
      for (uint64_t off = 0; off < len; off += RESTORE_CHUNK, at++)
        crc = off == 0 ? job.pieces[at].crc : hk__crc32c_combine(crc, job.pieces[at].crc, job.pieces[at].len);
      if (crc != e->crc) rc = crc_mismatch(r, e, crc, st);
    }
  }

done:
  hk_env_free(&r->env, job.pieces);
  hk_env_free(&r->env, order);
  hk_env_free(&r->env, by_target);
  return rc;
}

hk_code hk_checkpoint_reader_verify(hk_checkpoint_reader *r, hk_status *status) {
  uint64_t biggest = 0;
  size_t piece;
  unsigned char *buf;
  hk_code rc = HK_OK;

  if (!r) return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_checkpoint_reader_verify: 'r' is NULL");
  for (size_t i = 0; i < r->n; i++)
    if (r->entries[i].end - r->entries[i].begin > biggest) biggest = r->entries[i].end - r->entries[i].begin;
  piece = biggest < IO_CHUNK ? (size_t)biggest : IO_CHUNK;
  if (piece == 0) piece = 1;
  buf = hk_env_alloc(&r->env, piece);
  if (!buf) return hk_status_set(status, HK_RESOURCE_EXHAUSTED, "out of memory verifying %s", r->path);
  for (size_t i = 0; i < r->n && rc == HK_OK; i++) rc = read_checked(r, &r->entries[i], buf, piece, 1, status);
  hk_env_free(&r->env, buf);
  return rc;
}
