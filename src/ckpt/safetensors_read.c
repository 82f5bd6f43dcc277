/*
 * The public checkpoint reader (hooked/checkpoint.h): open (the header is
 * read and checked by safetensors_json.c), entries, reads checked against
 * their CRC-32C, the views a restore assigns from (mapped where the file
 * system can), and reads straight into the caller's memory: positional
 * reads of 1 MiB pieces shared out between two threads, each piece CRC'd
 * by the thread that read it while it is still in the cache.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "ckpt/ckpt_internal.h"
#include "ckpt/safetensors_internal.h"
#include "ckpt/shard.h"
#include "util/crc32c.h"
#include "util/fs.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Reads into a caller's memory go in pieces small enough to stay in cache
 * for the CRC that follows each one. */
#define READ_PIECE ((size_t)1 << 20)
/* From this much data on, a restore reads on a second thread as well
 * (creating one costs tens of microseconds, reading 4 MiB about a
 * millisecond). */
#define RESTORE_THREAD_MIN ((size_t)4 << 20)

hk__reader_entry *hk__reader_find_entry(const hk_checkpoint_reader *r, const char *name) {
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
  rc = hk__reader_load(r, status);
  if (rc == HK_NOT_FOUND && strcmp(r->path, path) != 0) {
    /* No data file for a prefix: a sharded checkpoint, when it has an index. */
    hk_status why = HK_STATUS_INIT;
    if (r->f) hk__fs_close(&r->fs, r->f, r->path, NULL);
    r->f = NULL;
    rc = hk__reader_open_sharded(r, path, &why);
    if (rc != HK_NOT_FOUND) hk__status_copy(status, &why);
  }
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
  if (r->sharded) {
    hk__sharded_close(r->sharded);
    hk_env_free(&r->env, r->sharded);
  }
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

hk_code hk_checkpoint_reader_entry(hk_checkpoint_entry *out, const hk_checkpoint_reader *r, size_t i,
                                   hk_status *status) {
  if (!r) return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_checkpoint_reader_entry: 'r' is NULL");
  if (!out) return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_checkpoint_reader_entry: 'out' is NULL");
  if (i >= r->n)
    return hk_status_set(status, HK_OUT_OF_RANGE, "entry %zu of checkpoint %s: it has %zu tensors", i, r->path, r->n);
  const hk__reader_entry *e = &r->entries[i];
  memset(out, 0, sizeof *out);
  out->name = e->name;
  out->dtype = e->dtype;
  out->rank = e->rank;
  memcpy(out->dims, e->dims, sizeof out->dims);
  out->offset = r->sharded ? 0 : r->data_start + e->begin;
  out->nbytes = e->end - e->begin;
  out->crc32c = e->crc;
  return HK_OK;
}

hk_code hk_checkpoint_reader_find(const hk_checkpoint_reader *r, const char *name, size_t *index, hk_status *status) {
  if (!r) return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_checkpoint_reader_find: 'r' is NULL");
  if (!name) return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_checkpoint_reader_find: 'name' is NULL");
  if (!index) return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_checkpoint_reader_find: 'index' is NULL");
  const hk__reader_entry *e = hk__reader_find_entry(r, name);
  if (!e) return hk_status_set(status, HK_NOT_FOUND, "Key %s not found in checkpoint %s", name, r->path);
  *index = (size_t)(e - r->entries);
  return HK_OK;
}

static hk_code crc_mismatch(const hk_checkpoint_reader *r, const hk__reader_entry *e, uint32_t crc, hk_status *status) {
  return hk_status_set(status, HK_DATA_LOSS,
                       "Checkpoint %s is corrupt: tensor '%.200s': CRC-32C mismatch (recorded %08" PRIx32
                       ", computed %08" PRIx32 ")",
                       r->path, e->name, e->crc, crc);
}

/* DATA_LOSS for a file that ends `have` bytes into entry e's data. */
static hk_code short_file(const hk_checkpoint_reader *r, const hk__reader_entry *e, uint64_t have, hk_status *status) {
  return hk_status_set(status, HK_DATA_LOSS,
                       "Checkpoint %s is corrupt: tensor '%.200s': the file ends %" PRIu64 " bytes into its %" PRIu64
                       " bytes",
                       r->path, e->name, have, e->end - e->begin);
}

/* Read entry e's bytes in pieces of at most `piece`, checking the CRC:
 * into consecutive parts of buf, or (reuse) each piece into buf itself. */
hk_code hk__reader_read_checked(hk_checkpoint_reader *r, const hk__reader_entry *e, unsigned char *buf, size_t piece,
                                int reuse, hk_status *status) {
  uint64_t total = e->end - e->begin, done = 0;
  uint32_t crc = 0;
  while (done < total) {
    size_t want = total - done < piece ? (size_t)(total - done) : piece, got = 0;
    unsigned char *dst = reuse ? buf : buf + done;
    hk_code rc = hk__fs_read_full(&r->fs, r->f, r->path, dst, want, r->data_start + e->begin + done, &got, status);
    if (rc != HK_OK) return rc;
    if (got < want) return short_file(r, e, done + got, status);
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
  const hk__reader_entry *e = &r->entries[i];
  uint64_t nbytes = e->end - e->begin;
  if (nbytes > cap)
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         "hk_checkpoint_reader_read: tensor '%s' of %s needs %" PRIu64 " bytes, 'cap' is %zu", e->name,
                         r->path, nbytes, cap);
  if (!dst && nbytes > 0) return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_checkpoint_reader_read: 'dst' is NULL");
  if (r->sharded) return hk__sharded_read_var(r->sharded, &r->sharded->vars[i], dst, status);
  return hk__reader_read_checked(r, e, dst, READ_PIECE, 0, status);
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
  const hk__reader_entry *e;
  uint64_t nbytes;
  hk_code rc;

  memset(v, 0, sizeof *v);
  if (r->sharded) return hk_status_set(st, HK_INTERNAL, "%s is a sharded checkpoint: no view of one file", r->path);
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
  rc = hk__reader_read_checked(r, e, r->scratch, READ_PIECE, 0, st);
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

/* The pieces of one restore and what the threads reading them found. A
 * thread that fails records its piece and status here and the others stop
 * taking pieces; the failure of the earliest piece is the one reported. */
typedef struct read_job {
  hk_checkpoint_reader *r;
  const hk__reader_entry *const *e; /* per target */
  const hk__read_target *targets;
  piece *pieces;
  size_t npieces;
  atomic_size_t next;
  atomic_int failed;
  pthread_mutex_t mu; /* guards the three fields below */
  size_t failed_piece;
  hk_code failed_code;
  hk_status failed_status;
} read_job;

static void record_failure(read_job *j, size_t k, hk_code rc, const hk_status *why) {
  pthread_mutex_lock(&j->mu);
  if (j->failed_code == HK_OK || k < j->failed_piece) {
    j->failed_piece = k;
    j->failed_code = rc;
    j->failed_status = *why;
  }
  pthread_mutex_unlock(&j->mu);
  atomic_store_explicit(&j->failed, 1, memory_order_relaxed);
}

/* Take the next piece until none is left (or a thread failed): read it
 * straight into the destination, then CRC it while the read has just left
 * it in the cache. The two threads move through the file together, so the
 * page cache (or the disk, on a miss) sees one forward sweep. */
static void *read_worker(void *arg) {
  read_job *j = arg;
  hk_checkpoint_reader *r = j->r;
  for (;;) {
    if (atomic_load_explicit(&j->failed, memory_order_relaxed)) return NULL;
    size_t k = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
    if (k >= j->npieces) return NULL;
    piece *p = &j->pieces[k];
    const hk__reader_entry *e = j->e[p->t];
    unsigned char *dst = (unsigned char *)j->targets[p->t].dst + p->off;
    hk_status why = HK_STATUS_INIT;
    size_t got = 0;
    hk_code rc = hk__fs_read_full(&r->fs, r->f, r->path, dst, p->len, r->data_start + e->begin + p->off, &got, &why);
    if (rc == HK_OK && got < p->len) rc = short_file(r, e, (uint64_t)(p->off + got), &why);
    if (rc != HK_OK) {
      record_failure(j, k, rc, &why);
      return NULL;
    }
    p->crc = hk_crc32c_extend(0, dst, p->len);
  }
}

/* A target's entry and its index in the caller's array, sorted into file
 * order (zero-byte tensors may share an offset: the index breaks ties). */
typedef struct placed {
  const hk__reader_entry *e;
  size_t t;
} placed;

static int cmp_placed(const void *a, const void *b) {
  const placed *x = a, *y = b;
  if (x->e->begin != y->e->begin) return x->e->begin < y->e->begin ? -1 : 1;
  return (x->t > y->t) - (x->t < y->t);
}

/* A file that shrank since it was opened is refused before anything is
 * written: every variable keeps its value (a CRC mismatch is only seen
 * once read). */
static hk_code check_not_shrunk(hk_checkpoint_reader *r, const placed *order, size_t n, hk_status *st) {
  uint64_t size = 0;
  hk_code rc = hk__fs_size(&r->fs, r->f, r->path, &size, st);
  for (size_t k = 0; k < n && rc == HK_OK; k++) {
    const hk__reader_entry *e = order[k].e;
    uint64_t have = size > r->data_start + e->begin ? size - (r->data_start + e->begin) : 0;
    if (e->end > e->begin && have < e->end - e->begin) rc = short_file(r, e, have, st);
  }
  return rc;
}

/* Cut every target into pieces of at most READ_PIECE, in file order. */
static void cut_pieces(piece *pieces, const placed *order, size_t n) {
  size_t at = 0;
  for (size_t k = 0; k < n; k++) {
    size_t len = (size_t)(order[k].e->end - order[k].e->begin);
    for (size_t off = 0; off < len; off += READ_PIECE) {
      pieces[at].t = order[k].t;
      pieces[at].off = off;
      pieces[at].len = len - off < READ_PIECE ? len - off : READ_PIECE;
      at++;
    }
  }
}

/* Join each tensor's piece CRCs (in file order) and compare: the first
 * mismatch in file order is reported. */
static hk_code check_crcs(const hk_checkpoint_reader *r, const read_job *j, const placed *order, size_t n,
                          hk_status *st) {
  size_t at = 0;
  for (size_t k = 0; k < n; k++) {
    const hk__reader_entry *e = order[k].e;
    uint64_t len = e->end - e->begin;
    uint32_t crc = 0;
    for (uint64_t off = 0; off < len; off += READ_PIECE, at++)
      crc = off == 0 ? j->pieces[at].crc : hk__crc32c_combine(crc, j->pieces[at].crc, j->pieces[at].len);
    if (crc != e->crc) return crc_mismatch(r, e, crc, st);
  }
  return HK_OK;
}

hk_code hk__reader_read_into(hk_checkpoint_reader *r, const hk__read_target *targets, size_t n, int may_use_thread,
                             hk_status *st) {
  if (r->sharded) return hk_status_set(st, HK_INTERNAL, "%s is a sharded checkpoint: no reads of one file", r->path);
  placed *order = NULL; /* the targets in file order */
  const hk__reader_entry **by_target = NULL;
  read_job job;
  uint64_t total = 0;
  size_t npieces = 0;
  hk_code rc = HK_OK;

  memset(&job, 0, sizeof job);
  if (n == 0) return HK_OK;
  for (size_t i = 0; i < n; i++) {
    if (targets[i].entry >= r->n)
      return hk_status_set(st, HK_OUT_OF_RANGE, "entry %zu of checkpoint %s: it has %zu tensors", targets[i].entry,
                           r->path, r->n);
    const hk__reader_entry *e = &r->entries[targets[i].entry];
    if (e->end - e->begin > SIZE_MAX)
      return hk_status_set(st, HK_RESOURCE_EXHAUSTED,
                           "tensor '%.200s' of %s (%" PRIu64 " bytes) does not fit in memory", e->name, r->path,
                           e->end - e->begin);
    if (e->end > e->begin && !targets[i].dst)
      return hk_status_set(st, HK_INVALID_ARGUMENT, "reading tensor '%.200s' of %s: no destination", e->name, r->path);
    total += e->end - e->begin;
    npieces += (size_t)((e->end - e->begin + READ_PIECE - 1) / READ_PIECE);
  }
  order = hk_env_calloc(&r->env, n, sizeof *order);
  by_target = hk_env_calloc(&r->env, n, sizeof *by_target);
  job.pieces = npieces > 0 ? hk_env_calloc(&r->env, npieces, sizeof *job.pieces) : NULL;
  if (!order || !by_target || (npieces > 0 && !job.pieces)) {
    rc = hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory restoring from %s", r->path);
    goto done;
  }
  for (size_t i = 0; i < n; i++) {
    by_target[i] = &r->entries[targets[i].entry];
    order[i].e = by_target[i];
    order[i].t = i;
  }
  qsort(order, n, sizeof *order, cmp_placed);
  if (total > 0) rc = check_not_shrunk(r, order, n, st);
  if (rc != HK_OK) goto done;
  cut_pieces(job.pieces, order, n);

  job.r = r;
  job.e = by_target;
  job.targets = targets;
  job.npieces = npieces;
  atomic_init(&job.next, 0);
  atomic_init(&job.failed, 0);
  if (pthread_mutex_init(&job.mu, NULL) != 0) {
    rc = hk_status_set(st, HK_RESOURCE_EXHAUSTED, "cannot create a mutex restoring from %s", r->path);
    goto done;
  }
  {
    pthread_t helper;
    int threaded = 0;
    if (may_use_thread && total >= RESTORE_THREAD_MIN) threaded = pthread_create(&helper, NULL, read_worker, &job) == 0;
    hk_env_log(&r->env, HK_LOG_DEBUG, "Reading %" PRIu64 " bytes of %s in place, %s", total, r->path,
               threaded ? "on two threads" : "on one thread");
    read_worker(&job);
    if (threaded) pthread_join(helper, NULL);
  }
  pthread_mutex_destroy(&job.mu);
  if (job.failed_code != HK_OK) {
    if (st) *st = job.failed_status;
    rc = job.failed_code;
  } else {
    rc = check_crcs(r, &job, order, n, st);
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
  if (r->sharded) return hk__sharded_verify(r->sharded, status);
  for (size_t i = 0; i < r->n; i++)
    if (r->entries[i].end - r->entries[i].begin > biggest) biggest = r->entries[i].end - r->entries[i].begin;
  piece = biggest < IO_CHUNK ? (size_t)biggest : IO_CHUNK;
  if (piece == 0) piece = 1;
  buf = hk_env_alloc(&r->env, piece);
  if (!buf) return hk_status_set(status, HK_RESOURCE_EXHAUSTED, "out of memory verifying %s", r->path);
  for (size_t i = 0; i < r->n && rc == HK_OK; i++)
    rc = hk__reader_read_checked(r, &r->entries[i], buf, piece, 1, status);
  hk_env_free(&r->env, buf);
  return rc;
}
