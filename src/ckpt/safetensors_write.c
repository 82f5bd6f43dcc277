/*
 * The data-file writer. It streams every tensor straight from its memory
 * into an atomic file. The header's bytes depend only on the names,
 * dtypes, shapes, contents and step, so equal states give equal files; its
 * length does not depend on the contents (each CRC is 8 hex digits), so
 * when the file system can write at an offset the data goes first, at its
 * final place, each tensor's CRC computed while its bytes are being
 * written, and the header last. Without that the CRCs take a pass of their
 * own before the header.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "ckpt/ckpt.h"
#include "ckpt/ckpt_internal.h"
#include "ckpt/safetensors_internal.h"
#include "util/common.h"
#include "util/crc32c.h"
#include "util/fs.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DATA_ALIGN 64
/* A tensor's bytes are CRC'd and then written in pieces of this size when
 * the writing thread computes the CRCs itself: small enough that the write
 * copies them out of the cache the CRC just brought them into. */
#define CRC_PIECE ((size_t)256 << 10)
/* Tensors smaller than this are gathered into writes of up to this size
 * (write_data_first). */
#define STAGE_BYTES ((size_t)1 << 20)
/* From this much data on, a synchronous save computes the CRCs on a second
 * thread while it writes (a thread costs tens of microseconds). */
#define CRC_THREAD_MIN ((size_t)8 << 20)
/* With a CRC thread and a file system that writes pieces (write_at_v),
 * the tensors' bytes go to the file straight from their memory in writes
 * of this many bytes, in at most GATHER_PIECES pieces each. */
#define GATHER_BYTES ((size_t)2 * IO_CHUNK)
#define GATHER_PIECES ((size_t)256)
/* Bytes before the JSON in the header buffer: the length, filled last. */
#define LEN_BYTES 8

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
  if (!hk__safetensors_valid_utf8((const unsigned char *)t->name, strlen(t->name), &bad)) {
    char shown[160];
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "writing %s: tensor name '%s' is not well-formed UTF-8 (at byte %zu), which the format "
                         "requires",
                         path, hk__safetensors_escaped_name(t->name, shown, sizeof shown), bad);
  }
  if (strcmp(t->name, METADATA_KEY) == 0)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "writing %s: a tensor may not be named '%s'", path, METADATA_KEY);
  if (v->dtype == HK_DTYPE_STRING)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "writing %s: tensor '%s' has dtype string, which cannot be saved",
                         path, t->name);
  if (!hk__safetensors_dtype_name(v->dtype))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "writing %s: tensor '%s' has an invalid dtype %d", path, t->name,
                         (int)v->dtype);
  if (v->rank < 0 || v->rank > HK_MAX_RANK)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "writing %s: tensor '%s' has rank %d", path, t->name, (int)v->rank);
  for (int32_t d = 0; d < v->rank; d++)
    if (v->dims[d] < 0)
      return hk_status_set(st, HK_INVALID_ARGUMENT, "writing %s: tensor '%s' has a negative dimension", path, t->name);
  uint64_t nbytes = hk__safetensors_shape_bytes(v->dtype, v->rank, v->dims, &overflow);
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
                            const hk__ckpt_meta *extra, size_t nextra, const hk__ckpt_tensor *const *sorted,
                            size_t *crc_at, size_t n, hk_status *st) {
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
  for (size_t i = 0; i < nextra; i++) {
    sb_append(b, ",", 1);
    sb_json_string(b, extra[i].key_prefix, extra[i].key_name);
    sb_append(b, ":", 1);
    sb_json_string(b, "", extra[i].value);
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
    sb_puts(b, hk__safetensors_dtype_name(v->dtype));
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
 * and, through `stop`, the writes.
 *
 * The helper runs at most CRC_LEAD bytes ahead of the writer: a CRC is
 * many times faster than a write, and a helper let loose would stream the
 * whole state from memory at once, competing with the writer's own copy
 * for memory bandwidth; kept just ahead, it brings each piece into the
 * shared cache the writer's copy then reads it from. It waits on `cv`
 * when it is ahead; the writer signals only while it waits. */
#define CRC_LEAD ((uint64_t)2 * IO_CHUNK)
typedef struct crc_job {
  const hk__ckpt_tensor *const *sorted;
  uint32_t *crcs;
  size_t n;
  unsigned flags;
  bad_value bad;
  atomic_int stop;
  /* Bytes of the tensors, in order, the writer has read so far. */
  _Atomic uint64_t written;
  atomic_int waiting, writer_done;
  pthread_mutex_t mu;
  pthread_cond_t cv;
} crc_job;

/* Wait until the writer has read up to `end - CRC_LEAD`, or has finished. */
static void crc_wait_for_writer(crc_job *j, uint64_t end) {
  if (end <= atomic_load(&j->written) + CRC_LEAD) return;
  pthread_mutex_lock(&j->mu);
  atomic_store(&j->waiting, 1);
  while (end > atomic_load(&j->written) + CRC_LEAD && !atomic_load(&j->writer_done)) pthread_cond_wait(&j->cv, &j->mu);
  atomic_store(&j->waiting, 0);
  pthread_mutex_unlock(&j->mu);
}

/* The writer has read the tensors' first `pos` bytes (or, with done, is
 * finished): let the helper go on if it waits. The helper sets `waiting`
 * before it looks at `written` again, and the writer stores `written`
 * before it looks at `waiting` (both sequentially consistent), so one of
 * them sees the other's store: no wake-up is lost. */
static void crc_writer_at(crc_job *j, uint64_t pos, int done) {
  atomic_store(&j->written, pos);
  if (done) atomic_store(&j->writer_done, 1);
  if (!done && !atomic_load(&j->waiting)) return;
  pthread_mutex_lock(&j->mu);
  pthread_cond_signal(&j->cv);
  pthread_mutex_unlock(&j->mu);
}

static void *crc_job_main(void *arg) {
  crc_job *j = arg;
  uint64_t pos = 0;
  for (size_t i = 0; i < j->n; i++) {
    const hk__ckpt_tensor *t = j->sorted[i];
    const char *p = t->value.data;
    int check = checks(t, j->flags);
    uint32_t crc = 0;
    for (size_t at = 0; at < t->value.nbytes;) {
      size_t k = t->value.nbytes - at < CRC_PIECE ? t->value.nbytes - at : CRC_PIECE;
      crc_wait_for_writer(j, pos + k);
      if (atomic_load_explicit(&j->stop, memory_order_relaxed)) return NULL; /* the writer failed */
      if (!crc_piece(t, check, at, p + at, k, &crc, &j->bad.element)) {
        j->bad.tensor = i;
        atomic_store_explicit(&j->stop, 1, memory_order_relaxed);
        return NULL;
      }
      at += k;
      pos += k;
    }
    j->crcs[i] = crc;
  }
  return NULL;
}

/* Small tensors gathered into one positional write of up to STAGE_BYTES
 * (see write_data_first). */
typedef struct stage {
  unsigned char *p; /* NULL: every tensor is written on its own */
  size_t n;         /* bytes gathered */
  uint64_t at;      /* their offset in the file */
} stage;

static hk_code stage_flush(hk__atomic_file *af, stage *sg, hk_status *st) {
  hk_code rc = HK_OK;
  if (sg->n > 0) rc = hk__atomic_write_at(af, sg->p, sg->n, sg->at, st);
  sg->n = 0;
  return rc;
}

/* What write_gathered has gathered and not yet written. */
typedef struct gather {
  hk_fs_piece *pieces;
  size_t np, span; /* pieces, and their bytes */
} gather;

/* Write the gathered pieces at *at, then tell the CRC thread. */
static hk_code gather_flush(hk__atomic_file *af, gather *g, uint64_t start, uint64_t *at, crc_job *job, hk_status *st) {
  hk_code rc = hk__atomic_write_at_v(af, g->pieces, g->np, *at, st);
  *at += g->span;
  g->np = g->span = 0;
  crc_writer_at(job, *at - start, 0);
  return rc;
}

/* The tensors' bytes from file offset *at, in writes of up to GATHER_BYTES
 * made of pieces of their own memory (write_at_v): no copy, and as few
 * write calls as a plain write of the same bytes makes. For a save with a
 * CRC thread (job): it is told after each write, and a stop it raised
 * ends the writes. `start` is the offset of the first tensor's data. */
static hk_code write_gathered(hk__atomic_file *af, const hk__ckpt_tensor *const *sorted, size_t n, uint64_t start,
                              uint64_t *at, crc_job *job, hk_fs_piece *pieces, hk_status *st) {
  gather g = {pieces, 0, 0};
  hk_code rc = HK_OK;
  for (size_t i = 0; i < n && rc == HK_OK; i++) {
    const char *p = sorted[i]->value.data;
    size_t left = sorted[i]->value.nbytes;
    while (left > 0 && rc == HK_OK) {
      size_t k = left < GATHER_BYTES - g.span ? left : GATHER_BYTES - g.span;
      g.pieces[g.np].data = p;
      g.pieces[g.np].len = k;
      g.np++;
      g.span += k;
      p += k;
      left -= k;
      if (g.span < GATHER_BYTES && g.np < GATHER_PIECES) continue;
      if (atomic_load_explicit(&job->stop, memory_order_relaxed)) return HK_OK; /* the CRC thread found a bad value */
      rc = gather_flush(af, &g, start, at, job, st);
    }
  }
  if (rc == HK_OK && g.np > 0 && !atomic_load_explicit(&job->stop, memory_order_relaxed))
    rc = gather_flush(af, &g, start, at, job, st);
  return rc;
}

/* Data first, at its final offsets, then the header (write_at). With a
 * helper thread the CRCs are computed beside the writes; without, each
 * piece is CRC'd just before it is written, so the write copies it from
 * the cache. Tensors under STAGE_BYTES are copied into one buffer and
 * written together: every write call costs the file system a fixed amount
 * (tens of microseconds on ext4, which updates the file's size and times
 * per call), which 500 tensors of 50 KiB would otherwise pay 500 times
 * where a plain write of the same bytes pays it 64 times. */
static hk_code write_data_first(const hk_env *env, hk__atomic_file *af, strbuf *header, const size_t *crc_at,
                                const hk__ckpt_tensor *const *sorted, uint32_t *crcs, size_t n, unsigned flags,
                                int use_thread, hk_status *st) {
  crc_job job;
  pthread_t helper;
  int threaded = 0;
  uint64_t at = header->n; /* the data starts right after the padded header */
  bad_value bad = {SIZE_MAX, 0};
  stage sg = {NULL, 0, 0};
  hk_fs_piece *pieces = NULL; /* with a CRC thread and write_at_v: write_gathered */
  hk_code rc = HK_OK;

  if (use_thread && hk__fs_has_write_at_v(&af->fs)) {
    pieces = hk_env_alloc(env, GATHER_PIECES * sizeof *pieces);
    if (!pieces) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory writing %s", af->final_path);
  }
  for (size_t i = 0; i + 1 < n && !sg.p; i++)
    if (sorted[i]->value.nbytes < STAGE_BYTES && sorted[i + 1]->value.nbytes < STAGE_BYTES) {
      sg.p = hk_env_alloc(env, STAGE_BYTES);
      if (!sg.p) {
        hk_env_free(env, pieces);
        return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory writing %s", af->final_path);
      }
    }
  job.sorted = sorted;
  job.crcs = crcs;
  job.n = n;
  job.flags = flags;
  job.bad = bad;
  atomic_init(&job.stop, 0);
  atomic_init(&job.written, 0);
  atomic_init(&job.waiting, 0);
  atomic_init(&job.writer_done, 0);
  if (use_thread && pthread_mutex_init(&job.mu, NULL) == 0) {
    if (pthread_cond_init(&job.cv, NULL) == 0) {
      threaded = pthread_create(&helper, NULL, crc_job_main, &job) == 0;
      if (!threaded) pthread_cond_destroy(&job.cv);
    }
    if (!threaded) pthread_mutex_destroy(&job.mu);
  }
  if (threaded && pieces) rc = write_gathered(af, sorted, n, header->n, &at, &job, pieces, st);
  for (size_t i = 0; i < n && !(threaded && pieces) && rc == HK_OK && bad.tensor == SIZE_MAX; i++) {
    const char *p = sorted[i]->value.data;
    size_t left = sorted[i]->value.nbytes, done = 0;
    size_t piece = threaded ? IO_CHUNK : CRC_PIECE;
    int check = !threaded && checks(sorted[i], flags);
    uint32_t crc = 0;
    if (threaded && atomic_load_explicit(&job.stop, memory_order_relaxed)) break;
    if (sg.p && left < STAGE_BYTES) {
      if (sg.n + left > STAGE_BYTES) rc = stage_flush(af, &sg, st);
      if (rc != HK_OK) break;
      if (sg.n == 0) sg.at = at;
      if (threaded) {
        if (left > 0) memcpy(sg.p + sg.n, p, left);
      } else {
        /* CRC'd on its way into the stage, then scanned there, in cache. */
        size_t e = SIZE_MAX;
        crcs[i] = hk__crc32c_copy(0, sg.p + sg.n, p, left);
        if (checks(sorted[i], flags)) e = hk__first_non_finite(sorted[i]->value.dtype, sg.p + sg.n, left);
        if (e != SIZE_MAX) {
          bad.tensor = i;
          bad.element = e;
          break;
        }
      }
      sg.n += left;
      at += left;
      if (threaded) crc_writer_at(&job, at - header->n, 0);
      continue;
    }
    rc = stage_flush(af, &sg, st);
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
      if (threaded) crc_writer_at(&job, at - header->n, 0);
    }
    if (!threaded) crcs[i] = crc;
  }
  if (rc == HK_OK && bad.tensor == SIZE_MAX) rc = stage_flush(af, &sg, st);
  /* Always joined: the helper reads the caller's tensors. */
  if (threaded) {
    if (rc != HK_OK) atomic_store_explicit(&job.stop, 1, memory_order_relaxed);
    crc_writer_at(&job, at - header->n, 1);
    pthread_join(helper, NULL);
    pthread_cond_destroy(&job.cv);
    pthread_mutex_destroy(&job.mu);
    bad = job.bad;
  }
  hk_env_free(env, sg.p);
  hk_env_free(env, pieces);
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

/* The tensor the header names as the global step: `gs_tensor` when it is
 * one of the tensors, an integer scalar, and holds `step` — so a reader
 * can hold the header's step against it. NULL otherwise (no such tensor,
 * or a save given another step than the variable holds). */
static const char *global_step_tensor(const char *gs_tensor, int64_t step, const hk__ckpt_tensor *tensors, size_t n) {
  for (size_t i = 0; gs_tensor && i < n; i++) {
    int64_t v;
    const hk_tensor *t = &tensors[i].value;
    if (strcmp(tensors[i].name, gs_tensor) != 0) continue;
    if (t->rank != 0 || !t->data) return NULL;
    return hk__safetensors_int_scalar(t->dtype, t->data, t->nbytes, &v) && v == step ? tensors[i].name : NULL;
  }
  return NULL;
}

hk_code hk__ckpt_write(const hk_env *env, const char *final_path, int64_t step, const char *gs_tensor,
                       const hk__ckpt_tensor *tensors, size_t n, unsigned flags, hk_status *st) {
  return hk__ckpt_write_ex(env, final_path, step, gs_tensor, tensors, n, flags, NULL, 0, NULL, st);
}

hk_code hk__ckpt_write_ex(const hk_env *env, const char *final_path, int64_t step, const char *gs_tensor,
                          const hk__ckpt_tensor *tensors, size_t n, unsigned flags, const hk__ckpt_meta *extra,
                          size_t nextra, hk__ckpt_written *written, hk_status *st) {
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
  if (written) memset(written, 0, sizeof *written);
  rc = build_header(&header, final_path, step, global_step_tensor(gs_tensor, step, tensors, n), extra, nextra, sorted,
                    crc_at, n, st);
  if (rc != HK_OK) goto done;

  rc = hk__atomic_begin(&af, env, final_path, st);
  if (rc != HK_OK) goto done;
  if (hk__fs_has_write_at(&af.fs))
    rc = write_data_first(env, &af, &header, crc_at, sorted, crcs, n, flags,
                          (flags & HK__CKPT_WRITE_THREAD) && total >= CRC_THREAD_MIN, st);
  else
    rc = write_in_order(&af, &header, crc_at, sorted, crcs, n, flags, st);
  if (rc == HK_OK && written) {
    /* The header now holds every CRC: what an index records of the file. */
    written->header_crc32c = hk_crc32c_extend(0, header.p, header.n);
    written->bytes = (uint64_t)header.n + (uint64_t)total;
  }
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
