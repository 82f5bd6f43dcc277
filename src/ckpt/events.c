/*
 * Event files (contract H26): the TensorBoard record stream a checkpoint hook
 * appends its SessionLog CHECKPOINT events to.
 *
 * The file "events.out.tfevents.<10-digit epoch seconds>.<hostname>" is
 * created in the directory at the first write, through the env's file system
 * (create-exclusive), and starts with the file_version "brain.Event:2" event.
 * When that name already exists (two writers in the same second), ".1",
 * ".2", ... is appended: TensorBoard picks up every file whose name contains
 * "tfevents", and the timestamp stays the true creation second.
 *
 * Records are framed as TensorFlow's RecordWriter does: the payload length as
 * uint64 little-endian, the masked CRC-32C of those 8 bytes, the payload, the
 * masked CRC-32C of the payload. The payload is an Event protocol buffer,
 * encoded here by hand (fields wall_time = 1 double, step = 2 int64,
 * file_version = 3 string, session_log = 7 SessionLog{status = 1 enum,
 * checkpoint_path = 2 string}; field 6 is log_message, which TensorBoard would
 * read a SessionLog under as a LogMessage).
 *
 * Event files are append-only and exempt from D4: each record goes out in
 * one buffer (one write call unless the file system writes short), and a
 * reader stops at a torn last record.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L /* gethostname */

#include "ckpt.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#define EVENT_FILE_PREFIX "events.out.tfevents."
#define FILE_VERSION "brain.Event:2"
#define HOST_MAX 256
/* Suffixes tried after the plain name when it exists. */
#define MAX_NAME_SUFFIX 99

/* Event and SessionLog field tags: (field << 3) | wire type. */
#define TAG_WALL_TIME 0x09u    /* 1, fixed64 */
#define TAG_STEP 0x10u         /* 2, varint */
#define TAG_FILE_VERSION 0x1au /* 3, length-delimited */
#define TAG_SESSION_LOG 0x3au  /* 7, length-delimited */
#define TAG_SL_STATUS 0x08u    /* SessionLog 1, varint */
#define TAG_SL_PATH 0x12u      /* SessionLog 2, length-delimited */

#define VARINT_MAX 10

struct hk__event_writer {
  hk_env env; /* copied: the writer outlives the call that made it */
  hk__fs fs;  /* fs.env points at env above */
  char *dir;
  char *path; /* NULL until the file exists */
  hk_fs_file *f;
  int unsynced; /* records written since the last fsync: end() and close both flush (H26) */
};

static uint32_t masked_crc(const void *data, size_t n) {
  uint32_t crc = hk_crc32c_extend(0, data, n);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

static void put_u32_le(unsigned char *p, uint32_t v) {
  int i;
  for (i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64_le(unsigned char *p, uint64_t v) {
  int i;
  for (i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static size_t varint_len(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80u) {
    v >>= 7;
    n++;
  }
  return n;
}

static unsigned char *put_varint(unsigned char *p, uint64_t v) {
  while (v >= 0x80u) {
    *p++ = (unsigned char)(v | 0x80u);
    v >>= 7;
  }
  *p++ = (unsigned char)v;
  return p;
}

static unsigned char *put_bytes_field(unsigned char *p, unsigned tag, const void *data, size_t n) {
  *p++ = (unsigned char)tag;
  p = put_varint(p, n);
  if (n > 0) memcpy(p, data, n);
  return p + n;
}

static unsigned char *put_double(unsigned char *p, double v) {
  uint64_t bits;
  memcpy(&bits, &v, sizeof(bits));
  *p++ = TAG_WALL_TIME;
  put_u64_le(p, bits);
  return p + 8;
}

/* Append all of buf, looping over short writes. */
static hk_code write_all(hk__event_writer *w, const unsigned char *buf, size_t n, hk_status *st) {
  while (n > 0) {
    size_t wrote = 0;
    hk_code rc = hk__fs_write(&w->fs, w->f, w->path, buf, n, &wrote, st);
    if (rc != HK_OK) return rc;
    if (wrote == 0) return hk_status_set(st, HK_UNKNOWN, "write %s: no progress", w->path);
    buf += wrote;
    n -= wrote;
  }
  return HK_OK;
}

/* A record: length, its CRC, payload, payload CRC. Payloads are encoded
 * straight into a record buffer at RECORD_HEAD, which leaves RECORD_TAIL
 * bytes after them for the CRC, so a record costs no copy. */
#define RECORD_HEAD 12
#define RECORD_TAIL 4

/* Frame the `len`-byte payload at rec + RECORD_HEAD and append the record. */
static hk_code write_record(hk__event_writer *w, unsigned char *rec, size_t len, hk_status *st) {
  put_u64_le(rec, (uint64_t)len);
  put_u32_le(rec + 8, masked_crc(rec, 8));
  put_u32_le(rec + RECORD_HEAD + len, masked_crc(rec + RECORD_HEAD, len));
  w->unsynced = 1;
  return write_all(w, rec, RECORD_HEAD + len + RECORD_TAIL, st);
}

/* The host name as it goes into a file name: '/' (impossible in practice, but
 * it would change the directory) becomes '_'; "localhost" when unknown. */
static void host_name(char *out, size_t cap) {
  size_t i;
  if (gethostname(out, cap) != 0 || out[0] == '\0') {
    strcpy(out, "localhost");
    return;
  }
  out[cap - 1] = '\0';
  for (i = 0; out[i] != '\0'; i++)
    if (out[i] == '/') out[i] = '_';
}

static hk_code write_file_version(hk__event_writer *w, hk_status *st) {
  unsigned char rec[RECORD_HEAD + 9 + 1 + VARINT_MAX + sizeof(FILE_VERSION) + RECORD_TAIL];
  unsigned char *p = rec + RECORD_HEAD;

  p = put_double(p, hk_env_wall(&w->env));
  p = put_bytes_field(p, TAG_FILE_VERSION, FILE_VERSION, strlen(FILE_VERSION));
  return write_record(w, rec, (size_t)(p - rec) - RECORD_HEAD, st);
}

/* A reader stops at the first torn record, so nothing may follow one: after
 * a failed write the file is closed (and left in place, append-only), and
 * the next event starts a new file. */
static void close_after_error(hk__event_writer *w) {
  hk__fs_close(&w->fs, w->f, w->path, NULL);
  w->f = NULL;
  hk_env_free(&w->env, w->path);
  w->path = NULL;
}

/* Create the file at the first write (H26). */
static hk_code open_file(hk__event_writer *w, hk_status *st) {
  char host[HOST_MAX];
  double wall = hk_env_wall(&w->env);
  int64_t secs = isfinite(wall) && wall > 0 && wall < 9e18 ? (int64_t)floor(wall) : 0;
  int k;
  hk_code rc;

  host_name(host, sizeof(host));
  for (k = 0; k <= MAX_NAME_SUFFIX; k++) {
    char *name = k == 0 ? hk__asprintf(&w->env, "%s%010" PRId64 ".%s", EVENT_FILE_PREFIX, secs, host)
                        : hk__asprintf(&w->env, "%s%010" PRId64 ".%s.%d", EVENT_FILE_PREFIX, secs, host, k);
    char *path = name == NULL ? NULL : hk__path_join(&w->env, w->dir, name);

    hk_env_free(&w->env, name);
    if (path == NULL) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "event file in %s: out of memory", w->dir);
    rc = hk__fs_create_excl(&w->fs, path, &w->f, st);
    if (rc == HK_OK) {
      w->path = path;
      break;
    }
    if (rc != HK_ALREADY_EXISTS || k == MAX_NAME_SUFFIX) {
      hk_env_free(&w->env, path);
      return rc;
    }
    hk_env_free(&w->env, path);
  }
  rc = write_file_version(w, st);
  if (rc != HK_OK) close_after_error(w);
  return rc;
}

hk_code hk__event_writer_new(hk__event_writer **out, const hk_env *env, const char *dir, hk_status *st) {
  hk__event_writer *w;

  if (out == NULL) return hk_status_set(st, HK_INVALID_ARGUMENT, "out: must not be NULL");
  *out = NULL;
  if (dir == NULL) return hk_status_set(st, HK_INVALID_ARGUMENT, "dir: must not be NULL");
  w = hk_env_calloc(env, 1, sizeof(*w));
  if (w == NULL) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "event writer for %s: out of memory", dir);
  hk_env_copy(&w->env, env);
  hk__fs_init(&w->fs, &w->env);
  w->dir = hk_env_strdup(&w->env, dir);
  if (w->dir == NULL) {
    hk_env_free(&w->env, w);
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "event writer for %s: out of memory", dir);
  }
  *out = w;
  return HK_OK;
}

hk_code hk__event_writer_session_log(hk__event_writer *w, int64_t step, int status, const char *checkpoint_path,
                                     hk_status *st) {
  size_t path_len, sl_len, len;
  unsigned char *buf, *p;
  hk_code rc;

  if (w == NULL) return hk_status_set(st, HK_INVALID_ARGUMENT, "event writer: must not be NULL");
  if (status < 0) return hk_status_set(st, HK_INVALID_ARGUMENT, "SessionLog status: %d is negative", status);
  if (w->f == NULL) {
    rc = open_file(w, st);
    if (rc != HK_OK) return rc;
  }
  path_len = checkpoint_path == NULL ? 0 : strlen(checkpoint_path);
  sl_len = 1 + varint_len((uint64_t)status);
  if (checkpoint_path != NULL) sl_len += 1 + varint_len(path_len) + path_len;
  len = RECORD_HEAD + 9 + 1 + VARINT_MAX + 1 + VARINT_MAX + sl_len + RECORD_TAIL;
  buf = hk_env_alloc(&w->env, len);
  if (buf == NULL) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "event file %s: out of memory", w->path);

  p = put_double(buf + RECORD_HEAD, hk_env_wall(&w->env));
  *p++ = TAG_STEP;
  p = put_varint(p, (uint64_t)step);
  *p++ = TAG_SESSION_LOG;
  p = put_varint(p, sl_len);
  *p++ = TAG_SL_STATUS;
  p = put_varint(p, (uint64_t)status);
  if (checkpoint_path != NULL) p = put_bytes_field(p, TAG_SL_PATH, checkpoint_path, path_len);

  rc = write_record(w, buf, (size_t)(p - buf) - RECORD_HEAD, st);
  hk_env_free(&w->env, buf);
  if (rc != HK_OK) close_after_error(w);
  return rc;
}

hk_code hk__event_writer_flush(hk__event_writer *w, hk_status *st) {
  hk_code rc;

  if (w == NULL) return hk_status_set(st, HK_INVALID_ARGUMENT, "event writer: must not be NULL");
  /* Records are handed to the file system as they are made; flushing makes
   * them durable. Nothing written yet: nothing to do, no file created.
   * Nothing written since the last flush: the close after end() costs no
   * second fsync. */
  if (w->f == NULL || !w->unsynced) return HK_OK;
  rc = hk__fs_sync(&w->fs, w->f, w->path, st);
  if (rc == HK_OK) w->unsynced = 0;
  return rc;
}

void hk__event_writer_free(hk__event_writer *w) {
  hk_env env;

  if (w == NULL) return;
  if (w->f != NULL) hk__fs_close(&w->fs, w->f, w->path, NULL);
  env = w->env;
  hk_env_free(&env, w->path);
  hk_env_free(&env, w->dir);
  hk_env_free(&env, w);
}
