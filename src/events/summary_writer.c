/*
 * Event files: the TensorBoard record stream the
 * checkpoint hooks append their SessionLog CHECKPOINT events to, the
 * StepCounter and SummarySaver hooks their summaries, and programs their own
 * scalars, histograms and text (hooked/summary.h).
 *
 * The file "events.out.tfevents.<10-digit epoch seconds>.<hostname>[suffix]"
 * is created in the directory at the first write, through the env's file
 * system (create-exclusive), and starts with the file_version
 * "brain.Event:2" event. When that name already exists (two writers in the
 * same second), ".1", ".2", ... is inserted before the suffix: TensorBoard
 * picks up every file whose name contains "tfevents", and the timestamp
 * stays the true creation second. A missing directory is created (with its
 * parents) only when the create finds none, so a directory a hook already
 * made costs no extra call.
 *
 * Records are framed as TensorFlow's RecordWriter does: the payload length as
 * uint64 little-endian, the masked CRC-32C of those 8 bytes, the payload, the
 * masked CRC-32C of the payload. The payload is an Event protocol buffer
 * encoded here by hand (field numbers in proto.h; field 6 is log_message,
 * which TensorBoard would read a SessionLog under as a LogMessage, so the
 * SessionLog goes to 7). Every record is built in one buffer the writer keeps
 * and grows (a steady stream of records allocates nothing) and goes out
 * in one write call unless the file system writes short.
 *
 * Event files are append-only, never written to a temporary
 * name and renamed (TensorBoard reads them while they grow): a reader stops at a torn
 * last record, so after a failed write the file is closed and left in place,
 * and the next event starts a new file.
 *
 * One lock per writer serializes every call, so the writer a session shares
 * may be written from the program's threads as well as from hooks.
 *
 * hk__event_writer (the internal API of events.h) and hk_summary_writer (the
 * public one) are the same struct hk_summary_writer; writers made through the
 * internal API are "managed" (a session's, or a hook's own) and the public
 * close and free refuse them.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L /* gethostname */

#include "events/events.h"
#include "events/proto.h"
#include "util/common.h"
#include "util/fs.h"
#include "util/path.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#define EVENT_FILE_PREFIX "events.out.tfevents."
#define FILE_VERSION "brain.Event:2"
#define HOST_MAX 256
#define SUFFIX_MAX 255
/* Counters tried after the plain name when it exists. */
#define MAX_NAME_SUFFIX 99

/* Event fields (proto.h). */
#define EVENT_WALL_TIME 1u
#define EVENT_STEP 2u
#define EVENT_FILE_VERSION 3u
#define EVENT_SUMMARY 5u
#define EVENT_SESSION_LOG 7u
#define EVENT_TAGGED_RUN_METADATA 8u
#define TAGGED_RUN_METADATA_TAG 1u
#define TAGGED_RUN_METADATA_RUN_METADATA 2u
#define SESSION_LOG_STATUS 1u
#define SESSION_LOG_PATH 2u

/* A record: length, its CRC, payload, payload CRC. Payloads are encoded
 * straight into the record buffer at RECORD_HEAD, which leaves RECORD_TAIL
 * bytes after them for the CRC, so a record costs no copy. */
#define RECORD_HEAD 12
#define RECORD_TAIL 4
/* wall_time (key + 8), step (key + varint), the `what` field's key and
 * length. */
#define EVENT_HEAD_MAX (9 + 1 + HK__PB_VARINT_MAX + 1 + HK__PB_VARINT_MAX)

struct hk_summary_writer {
  hk_env env; /* copied: the writer outlives the call that made it */
  hk__fs fs;  /* fs.env points at env above */
  pthread_mutex_t mu;
  char *dir;
  char *suffix; /* "" when none */
  double flush_secs;
  int managed; /* a session's or a hook's: the public close/free refuse it */
  int closed;  /* hk_summary_writer_close() ran */
  char *path;  /* NULL until the file exists */
  hk_fs_file *f;
  int unsynced;     /* records written since the last fsync: end() and close both flush */
  double last_sync; /* monotonic time of the last flush, or of the file's creation */
  unsigned char *rec;
  size_t caprec;
  double *limits; /* HK__HISTO_LIMITS each, at the first histogram */
  double *counts;
};

typedef struct hk_summary_writer writer;

static writer *W(hk__event_writer *w) { return hk__summary_writer_of(w); }

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

/* Append all of buf, looping over short writes. */
static hk_code write_all(writer *w, const unsigned char *buf, size_t n, hk_status *st) {
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

/* Frame the `len`-byte payload at rec + RECORD_HEAD and append the record. */
static hk_code write_record(writer *w, unsigned char *rec, size_t len, hk_status *st) {
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

static unsigned char *put_event_head(writer *w, unsigned char *p, int has_step, int64_t step) {
  p = hk__pb_double(p, EVENT_WALL_TIME, hk_env_wall(&w->env));
  if (has_step) {
    p = hk__pb_key(p, EVENT_STEP, HK__PB_VARINT);
    p = hk__pb_varint(p, (uint64_t)step);
  }
  return p;
}

static hk_code write_file_version(writer *w, hk_status *st) {
  unsigned char rec[RECORD_HEAD + EVENT_HEAD_MAX + sizeof(FILE_VERSION) + RECORD_TAIL];
  unsigned char *p = put_event_head(w, rec + RECORD_HEAD, 0, 0);

  p = hk__pb_bytes(p, EVENT_FILE_VERSION, FILE_VERSION, strlen(FILE_VERSION));
  return write_record(w, rec, (size_t)(p - rec) - RECORD_HEAD, st);
}

/* A reader stops at the first torn record, so nothing may follow one: after
 * a failed write the file is closed (and left in place, append-only), and
 * the next event starts a new file. */
static void close_after_error(writer *w) {
  hk__fs_close(&w->fs, w->f, w->path, NULL);
  w->f = NULL;
  w->unsynced = 0;
  hk_env_free(&w->env, w->path);
  w->path = NULL;
}

static hk_code create_file(writer *w, const char *path, hk_status *st) {
  hk_code rc = hk__fs_create_excl(&w->fs, path, &w->f, st);
  if (rc != HK_NOT_FOUND) return rc;
  /* No directory yet (a writer of the program's, or a directory no hook
   * made): create it with its parents, then try again. */
  rc = hk__mkdirs(&w->env, w->dir, st);
  if (rc != HK_OK) return rc;
  return hk__fs_create_excl(&w->fs, path, &w->f, st);
}

/* Create the file at the first write. */
static hk_code open_file(writer *w, hk_status *st) {
  char host[HOST_MAX];
  double wall = hk_env_wall(&w->env);
  int64_t secs = isfinite(wall) && wall > 0 && wall < 9e18 ? (int64_t)floor(wall) : 0;
  int k;
  hk_code rc;

  host_name(host, sizeof(host));
  for (k = 0; k <= MAX_NAME_SUFFIX; k++) {
    char *name = k == 0
                     ? hk__asprintf(&w->env, "%s%010" PRId64 ".%s%s", EVENT_FILE_PREFIX, secs, host, w->suffix)
                     : hk__asprintf(&w->env, "%s%010" PRId64 ".%s.%d%s", EVENT_FILE_PREFIX, secs, host, k, w->suffix);
    char *path = name == NULL ? NULL : hk__path_join(&w->env, w->dir, name);
    /* A name taken is tried again under the next one: its ALREADY_EXISTS
     * must not stay in the caller's status once a name is found. */
    hk_status why = HK_STATUS_INIT;

    hk_env_free(&w->env, name);
    if (path == NULL) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "event file in %s: out of memory", w->dir);
    rc = create_file(w, path, &why);
    if (rc == HK_OK) {
      w->path = path;
      break;
    }
    hk_env_free(&w->env, path);
    if (rc != HK_ALREADY_EXISTS || k == MAX_NAME_SUFFIX) {
      hk__status_copy(st, &why);
      return rc;
    }
  }
  w->last_sync = hk_env_monotonic(&w->env);
  rc = write_file_version(w, st);
  if (rc != HK_OK) close_after_error(w);
  return rc;
}

/* A record buffer for an Event whose `what` field holds `what_len` bytes. */
static hk_code reserve(writer *w, size_t what_len, hk_status *st) {
  size_t need;
  unsigned char *p;
  if (what_len > SIZE_MAX - (RECORD_HEAD + EVENT_HEAD_MAX + RECORD_TAIL))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "event for %s: a record of %zu bytes is too large", w->dir, what_len);
  need = RECORD_HEAD + EVENT_HEAD_MAX + what_len + RECORD_TAIL;
  if (need <= w->caprec) return HK_OK;
  p = hk_env_realloc(&w->env, w->rec, need);
  if (p == NULL)
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "event file in %s: out of memory for a record of %zu bytes", w->dir,
                         need);
  w->rec = p;
  w->caprec = need;
  return HK_OK;
}

static hk_code sync_file(writer *w, hk_status *st) {
  hk_code rc;
  if (w->f == NULL || !w->unsynced) return HK_OK;
  rc = hk__fs_sync(&w->fs, w->f, w->path, st);
  if (rc == HK_OK) {
    w->unsynced = 0;
    w->last_sync = hk_env_monotonic(&w->env);
  }
  return rc;
}

/* Write the record whose payload ends at `end`, then flush if the cadence
 * says so. */
static hk_code commit(writer *w, const unsigned char *end, hk_status *st) {
  hk_code rc = write_record(w, w->rec, (size_t)(end - w->rec) - RECORD_HEAD, st);
  if (rc != HK_OK) {
    close_after_error(w);
    return rc;
  }
  if (hk_env_monotonic(&w->env) - w->last_sync >= w->flush_secs) return sync_file(w, st);
  return HK_OK;
}

/* Everything a write needs before its record is built: an open writer, the
 * file, room for `what_len` bytes. */
static hk_code prepare(writer *w, size_t what_len, hk_status *st) {
  hk_code rc;
  if (w->closed) return hk_status_set(st, HK_FAILED_PRECONDITION, "the summary writer of %s is closed", w->dir);
  if (w->f == NULL) {
    rc = open_file(w, st);
    if (rc != HK_OK) return rc;
  }
  return reserve(w, what_len, st);
}

static unsigned char *put_summary_head(writer *w, int64_t step, size_t summary_len) {
  unsigned char *p = put_event_head(w, w->rec + RECORD_HEAD, 1, step);
  return hk__pb_len(p, EVENT_SUMMARY, summary_len);
}

static writer *make_writer(const hk_env *env, const char *dir, double flush_secs, const char *suffix, hk_status *st) {
  writer *w = hk_env_calloc(env, 1, sizeof(*w));
  if (w == NULL) {
    hk_status_set(st, HK_RESOURCE_EXHAUSTED, "event writer for %s: out of memory", dir);
    return NULL;
  }
  hk_env_copy(&w->env, env);
  hk__fs_init(&w->fs, &w->env);
  w->flush_secs = flush_secs;
  w->dir = hk_env_strdup(&w->env, dir);
  w->suffix = hk_env_strdup(&w->env, suffix ? suffix : "");
  if (w->dir == NULL || w->suffix == NULL || pthread_mutex_init(&w->mu, NULL) != 0) {
    hk_env_free(&w->env, w->dir);
    hk_env_free(&w->env, w->suffix);
    hk_env_free(&w->env, w);
    hk_status_set(st, HK_RESOURCE_EXHAUSTED, "event writer for %s: out of memory", dir);
    return NULL;
  }
  return w;
}

static void destroy_writer(writer *w) {
  hk_env env = w->env;
  if (w->f != NULL) hk__fs_close(&w->fs, w->f, w->path, NULL);
  pthread_mutex_destroy(&w->mu);
  hk_env_free(&env, w->path);
  hk_env_free(&env, w->dir);
  hk_env_free(&env, w->suffix);
  hk_env_free(&env, w->rec);
  hk_env_free(&env, w->limits);
  hk_env_free(&env, w->counts);
  hk_env_free(&env, w);
}

/* ---- the internal API (events.h) --------------------------------------------------- */

hk_code hk__event_writer_new(hk__event_writer **out, const hk_env *env, const char *dir, hk_status *st) {
  writer *w;

  if (out == NULL) return hk_status_set(st, HK_INVALID_ARGUMENT, "out: must not be NULL");
  *out = NULL;
  if (dir == NULL) return hk_status_set(st, HK_INVALID_ARGUMENT, "dir: must not be NULL");
  w = make_writer(env, dir, HK_SUMMARY_FLUSH_SECS, NULL, st);
  if (w == NULL) return HK_RESOURCE_EXHAUSTED;
  w->managed = 1;
  *out = hk__event_writer_of(w);
  return HK_OK;
}

hk_code hk__event_writer_session_log(hk__event_writer *ew, int64_t step, int status, const char *checkpoint_path,
                                     hk_status *st) {
  writer *w = W(ew);
  size_t path_len, sl_len;
  unsigned char *p;
  hk_code rc;

  if (w == NULL) return hk_status_set(st, HK_INVALID_ARGUMENT, "event writer: must not be NULL");
  if (status < 0) return hk_status_set(st, HK_INVALID_ARGUMENT, "SessionLog status: %d is negative", status);
  path_len = checkpoint_path == NULL ? 0 : strlen(checkpoint_path);
  sl_len = 1 + hk__pb_varint_len((uint64_t)status);
  if (checkpoint_path != NULL) sl_len += hk__pb_len_size(path_len);
  pthread_mutex_lock(&w->mu);
  rc = prepare(w, sl_len, st);
  if (rc == HK_OK) {
    p = put_event_head(w, w->rec + RECORD_HEAD, 1, step);
    p = hk__pb_len(p, EVENT_SESSION_LOG, sl_len);
    p = hk__pb_key(p, SESSION_LOG_STATUS, HK__PB_VARINT);
    p = hk__pb_varint(p, (uint64_t)status);
    if (checkpoint_path != NULL) p = hk__pb_bytes(p, SESSION_LOG_PATH, checkpoint_path, path_len);
    rc = commit(w, p, st);
  }
  pthread_mutex_unlock(&w->mu);
  return rc;
}

hk_code hk__event_writer_run_metadata(hk__event_writer *ew, int64_t step, const char *tag, const void *run_metadata,
                                      size_t n, hk_status *st) {
  writer *w = W(ew);
  size_t taglen, trm_len;
  unsigned char *p;
  hk_code rc;

  if (w == NULL) return hk_status_set(st, HK_INVALID_ARGUMENT, "event writer: must not be NULL");
  if (tag == NULL || tag[0] == '\0') return hk_status_set(st, HK_INVALID_ARGUMENT, "run metadata: the tag is empty");
  if (run_metadata == NULL && n > 0)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "run metadata '%s': NULL bytes with a size of %zu", tag, n);
  taglen = strlen(tag);
  if (n > SIZE_MAX / 2 - 2 * taglen)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "run metadata '%s': %zu bytes are too many", tag, n);
  trm_len = hk__pb_len_size(taglen) + hk__pb_len_size(n);
  pthread_mutex_lock(&w->mu);
  rc = prepare(w, trm_len, st);
  if (rc == HK_OK) {
    p = put_event_head(w, w->rec + RECORD_HEAD, 1, step);
    p = hk__pb_len(p, EVENT_TAGGED_RUN_METADATA, trm_len);
    p = hk__pb_bytes(p, TAGGED_RUN_METADATA_TAG, tag, taglen);
    p = hk__pb_bytes(p, TAGGED_RUN_METADATA_RUN_METADATA, run_metadata, n);
    rc = commit(w, p, st);
  }
  pthread_mutex_unlock(&w->mu);
  return rc;
}

hk_code hk__event_writer_flush(hk__event_writer *ew, hk_status *st) {
  writer *w = W(ew);
  hk_code rc;

  if (w == NULL) return hk_status_set(st, HK_INVALID_ARGUMENT, "event writer: must not be NULL");
  /* Records are handed to the file system as they are made; flushing makes
   * them durable. Nothing written yet: nothing to do, no file created.
   * Nothing written since the last flush: the close after end() costs no
   * second fsync. */
  pthread_mutex_lock(&w->mu);
  rc = sync_file(w, st);
  pthread_mutex_unlock(&w->mu);
  return rc;
}

void hk__event_writer_free(hk__event_writer *ew) {
  if (ew == NULL) return;
  destroy_writer(W(ew));
}

/* ---- the public API (summary.h) ------------------------------------------------------ */

hk_code hk_summary_writer_options_init(hk_summary_writer_options *opts, uint32_t version) {
  return HK__STRUCT_INIT(opts, version, hk_summary_writer_options, HK_SUMMARY_WRITER_OPTIONS_INIT);
}

static int valid_suffix(const char *s) {
  size_t n = strlen(s);
  const unsigned char *p;
  if (n > SUFFIX_MAX) return 0;
  for (p = (const unsigned char *)s; *p; p++)
    if (*p < 0x20 || *p == 0x7f || *p == '/' || *p == '\\') return 0;
  return 1;
}

hk_code hk_summary_writer_new(hk_summary_writer **out, const hk_summary_writer_options *opts, hk_status *st) {
  static const char fn[] = "hk_summary_writer_new";
  double flush;
  writer *w;
  hk_code rc;

  if (out != NULL) *out = NULL;
  if (out == NULL) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: out is NULL", fn);
  if (opts == NULL) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: opts is NULL (opts->logdir is required)", fn);
  HK__CHECK_VERSION(opts, HK_SUMMARY_WRITER_OPTIONS_VERSION, hk_summary_writer_options, "hk_summary_writer_new: opts",
                    st);
  rc = hk_env_check(opts->env, "hk_summary_writer_new: opts->env", st);
  if (rc != HK_OK) return rc;
  if (opts->logdir == NULL || opts->logdir[0] == '\0')
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: opts->logdir is %s", fn, opts->logdir ? "empty" : "NULL");
  flush = opts->flush_secs;
  if (hk_secs_is_unset(flush))
    flush = HK_SUMMARY_FLUSH_SECS;
  else if (!(isfinite(flush) && flush > 0))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: opts->flush_secs must be finite and > 0, got %g", fn, flush);
  if (opts->filename_suffix != NULL && !valid_suffix(opts->filename_suffix))
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "%s: opts->filename_suffix '%s' is not a valid file-name suffix (at most %d bytes, no '/', "
                         "'\\' or control byte)",
                         fn, opts->filename_suffix, SUFFIX_MAX);
  w = make_writer(opts->env, opts->logdir, flush, opts->filename_suffix, st);
  if (w == NULL) return HK_RESOURCE_EXHAUSTED;
  *out = w;
  return HK_OK;
}

static hk_code check_tag(const char *fn, const writer *w, const char *tag, size_t *taglen, hk_status *st) {
  size_t n;
  if (w == NULL) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: the writer is NULL", fn);
  if (tag == NULL) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: tag is NULL", fn);
  n = strlen(tag);
  if (n == 0) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: tag is empty", fn);
  if (n > HK_SUMMARY_TAG_MAX)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: tag '%.40s...' is %zu bytes, more than %d", fn, tag, n,
                         HK_SUMMARY_TAG_MAX);
  if (!hk__utf8_valid(tag, n))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: tag '%s' is not valid UTF-8", fn, tag);
  *taglen = n;
  return HK_OK;
}

hk_code hk_summary_writer_scalar(hk_summary_writer *w, const char *tag, int64_t step, double value, hk_status *st) {
  size_t taglen = 0, len;
  hk_code rc = check_tag("hk_summary_writer_scalar", w, tag, &taglen, st);
  if (rc != HK_OK) return rc;
  len = hk__summary_scalar_size(taglen);
  pthread_mutex_lock(&w->mu);
  rc = prepare(w, len, st);
  if (rc == HK_OK) {
    unsigned char *p = put_summary_head(w, step, len);
    rc = commit(w, hk__summary_scalar(p, tag, taglen, (float)value), st);
  }
  pthread_mutex_unlock(&w->mu);
  return rc;
}

/* The bucket arrays, at the first histogram of the writer. */
static hk_code histo_arrays(writer *w, hk_status *st) {
  if (w->limits != NULL) return HK_OK;
  w->limits = hk_env_calloc(&w->env, HK__HISTO_LIMITS, sizeof *w->limits);
  w->counts = hk_env_calloc(&w->env, HK__HISTO_LIMITS, sizeof *w->counts);
  if (w->limits == NULL || w->counts == NULL) {
    hk_env_free(&w->env, w->limits);
    hk_env_free(&w->env, w->counts);
    w->limits = w->counts = NULL;
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "histogram for %s: out of memory", w->dir);
  }
  hk__histo_default_limits(w->limits);
  return HK_OK;
}

hk_code hk_summary_writer_histogram(hk_summary_writer *w, const char *tag, int64_t step, const hk_tensor *values,
                                    hk_status *st) {
  size_t taglen = 0, len;
  hk__histo h;
  hk_code rc = check_tag("hk_summary_writer_histogram", w, tag, &taglen, st);
  if (rc != HK_OK) return rc;
  if (values == NULL) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_summary_writer_histogram: values is NULL");
  pthread_mutex_lock(&w->mu);
  rc = w->closed ? hk_status_set(st, HK_FAILED_PRECONDITION, "the summary writer of %s is closed", w->dir)
                 : histo_arrays(w, st);
  if (rc == HK_OK) {
    h.limits = w->limits;
    h.counts = w->counts;
    hk__histo_clear(&h);
    rc = hk__histo_add_tensor(&h, values, tag, st);
  }
  if (rc == HK_OK) {
    len = hk__summary_histogram_size(taglen, &h);
    rc = prepare(w, len, st);
    if (rc == HK_OK) {
      unsigned char *p = put_summary_head(w, step, len);
      rc = commit(w, hk__summary_histogram(p, tag, taglen, &h), st);
    }
  }
  pthread_mutex_unlock(&w->mu);
  return rc;
}

hk_code hk_summary_writer_text(hk_summary_writer *w, const char *tag, int64_t step, const char *text, hk_status *st) {
  size_t taglen = 0, textlen, len;
  hk_code rc = check_tag("hk_summary_writer_text", w, tag, &taglen, st);
  if (rc != HK_OK) return rc;
  if (text == NULL) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_summary_writer_text: text is NULL");
  textlen = strlen(text);
  if (textlen > SIZE_MAX / 2)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_summary_writer_text: text of %zu bytes is too large", textlen);
  len = hk__summary_text_size(taglen, textlen);
  pthread_mutex_lock(&w->mu);
  rc = prepare(w, len, st);
  if (rc == HK_OK) {
    unsigned char *p = put_summary_head(w, step, len);
    rc = commit(w, hk__summary_text(p, tag, taglen, text, textlen), st);
  }
  pthread_mutex_unlock(&w->mu);
  return rc;
}

hk_code hk_summary_writer_session_start(hk_summary_writer *w, int64_t step, hk_status *st) {
  if (w == NULL) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_summary_writer_session_start: the writer is NULL");
  return hk__event_writer_session_log(hk__event_writer_of(w), step, HK__SESSION_LOG_START, NULL, st);
}

hk_code hk_summary_writer_summary(hk_summary_writer *w, int64_t step, const void *summary, size_t nbytes,
                                  hk_status *st) {
  hk_code rc;
  if (w == NULL) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_summary_writer_summary: the writer is NULL");
  rc = hk__summary_check(summary, nbytes, "hk_summary_writer_summary: summary", NULL, st);
  if (rc != HK_OK) return rc;
  pthread_mutex_lock(&w->mu);
  rc = prepare(w, nbytes, st);
  if (rc == HK_OK) {
    unsigned char *p = put_summary_head(w, step, nbytes);
    if (nbytes > 0) memcpy(p, summary, nbytes);
    rc = commit(w, p + nbytes, st);
  }
  pthread_mutex_unlock(&w->mu);
  return rc;
}

hk_code hk_summary_writer_flush(hk_summary_writer *w, hk_status *st) {
  if (w == NULL) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_summary_writer_flush: the writer is NULL");
  return hk__event_writer_flush(hk__event_writer_of(w), st);
}

/* Flush and close the file; the writer refuses writes afterwards. */
static hk_code close_writer(writer *w, hk_status *st) {
  hk_code rc = HK_OK;
  if (w->closed) return HK_OK;
  w->closed = 1;
  if (w->f == NULL) return HK_OK;
  rc = sync_file(w, st);
  {
    hk_status cst = HK_STATUS_INIT;
    hk_code crc = hk__fs_close(&w->fs, w->f, w->path, &cst);
    if (rc == HK_OK && crc != HK_OK) {
      if (st) *st = cst;
      rc = crc;
    }
  }
  w->f = NULL;
  w->unsynced = 0;
  hk_env_free(&w->env, w->path);
  w->path = NULL;
  return rc;
}

hk_code hk_summary_writer_close(hk_summary_writer *w, hk_status *st) {
  hk_code rc;
  if (w == NULL) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_summary_writer_close: the writer is NULL");
  if (w->managed)
    return hk_status_set(st, HK_FAILED_PRECONDITION,
                         "hk_summary_writer_close: the writer of %s is shared by a session, which closes it", w->dir);
  pthread_mutex_lock(&w->mu);
  rc = close_writer(w, st);
  pthread_mutex_unlock(&w->mu);
  return rc;
}

void hk_summary_writer_free(hk_summary_writer *w) {
  hk_status st = HK_STATUS_INIT;
  if (w == NULL) return;
  if (w->managed) {
    hk_env_log(&w->env, HK_LOG_ERROR,
               "hk_summary_writer_free: the writer of %s is shared by a session, which frees it: not freed", w->dir);
    return;
  }
  if (close_writer(w, &st) != HK_OK)
    hk_env_log(&w->env, HK_LOG_ERROR, "hk_summary_writer_free: closing the event file of %s: %s: %s", w->dir,
               hk_code_name(st.code), st.message);
  destroy_writer(w);
}

const char *hk_summary_writer_logdir(const hk_summary_writer *w) { return w ? w->dir : ""; }

const char *hk_summary_writer_path(const hk_summary_writer *w) { return w ? w->path : NULL; }
