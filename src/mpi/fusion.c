/*
 * hooked::mpi — tensor fusion: how a request's arrays become averaging
 * units, and the buffers they need.
 *
 * Horovod's rule: walking the arrays in order, consecutive arrays of one
 * dtype are packed into a fused buffer until the next would take it past
 * the threshold; an array of the threshold's size or more is a unit of its
 * own, averaged in place. A fused buffer that ends up holding one array is
 * averaged in place too (packing it would only copy). Every rank plans the
 * same units from the same arrays, so the messages match.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "mpi_internal.h"

/* Offsets into the fusion buffer and the scratch keep doubles aligned. */
#define ALIGN 64

size_t hk__avg_esize(hk_dtype dtype) { return dtype == HK_DTYPE_F32 ? sizeof(float) : sizeof(double); }

static size_t align_up(size_t n) { return (n + (ALIGN - 1)) & ~(size_t)(ALIGN - 1); }

/* Grow `*p` (holding `*cap` bytes; its contents need not survive) to `need`. */
static hk_code grow_bytes(hk_mpi *m, unsigned char **p, size_t *cap, size_t need, const char *who, hk_status *st) {
  if (need <= *cap) return HK_OK;
  unsigned char *q = hk_env_alloc(&m->env, need);
  if (!q) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "%s: out of memory for %zu bytes", who, need);
  hk_env_free(&m->env, *p);
  *p = q;
  *cap = need;
  return HK_OK;
}

/* Units: at most one per array. MPI requests: 2 (N-1) per unit. */
static hk_code grow_units(hk_mpi_average_request *r, size_t narrays, hk_status *st) {
  hk_mpi *m = r->mpi;
  if (narrays <= r->units_cap) return HK_OK;
  hk__avg_unit *u = hk_env_calloc(&m->env, narrays, sizeof *u);
  if (!u) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "%s: out of memory for %zu averaging units", r->who, narrays);
  hk_env_free(&m->env, r->units);
  r->units = u;
  r->units_cap = narrays;
  return HK_OK;
}

static hk_code grow_reqs(hk_mpi_average_request *r, size_t nunits, hk_status *st) {
  hk_mpi *m = r->mpi;
  const size_t need = nunits * 2 * (size_t)(m->size - 1);
  if (need > r->reqs_cap) {
    MPI_Request *q = hk_env_calloc(&m->env, need, sizeof *q);
    if (!q) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "%s: out of memory for %zu MPI requests", r->who, need);
    hk_env_free(&m->env, r->reqs);
    r->reqs = q;
    r->reqs_cap = need;
  }
  for (size_t i = 0; i < need; i++) r->reqs[i] = MPI_REQUEST_NULL;
  return HK_OK;
}

hk_code hk__avg_reserve(hk_mpi_average_request *r, size_t scratch_bytes, size_t fused_bytes, size_t nunits,
                        hk_status *st) {
  hk_code rc = grow_bytes(r->mpi, &r->scratch, &r->scratch_cap, scratch_bytes, "hk_mpi_reserve", st);
  if (rc == HK_OK) rc = grow_bytes(r->mpi, &r->fused, &r->fused_cap, fused_bytes, "hk_mpi_reserve", st);
  if (rc == HK_OK) rc = grow_units(r, nunits, st);
  if (rc == HK_OK) rc = grow_reqs(r, nunits, st);
  return rc;
}

/* The scratch a unit of `count` elements needs (average_schedule.c): none
 * for an all-gather alone, which moves finished blocks in place. */
static size_t unit_scratch(const hk_mpi_average_request *r, size_t count, size_t esize) {
  if (!(r->mode & HK__AVG_REDUCE_SCATTER)) return 0;
  return align_up(hk__avg_unit_scratch_elems(r->mpi->size, count) * esize);
}

/* The segments a unit is averaged in. */
static size_t unit_segments(const hk__avg_unit *u) {
  const size_t bytes = u->count * hk__avg_esize(u->dtype);
  if (bytes <= HK__AVG_SEGMENT_BYTES) return 1;
  return (bytes + HK__AVG_SEGMENT_BYTES - 1) / HK__AVG_SEGMENT_BYTES;
}

/* Grow the units to `cap`, keeping the first `n`. */
static hk_code grow_units_keep(hk_mpi_average_request *r, size_t n, size_t cap, hk_status *st) {
  hk_mpi *m = r->mpi;
  if (cap <= r->units_cap) return HK_OK;
  hk__avg_unit *u = hk_env_calloc(&m->env, cap, sizeof *u);
  if (!u) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "%s: out of memory for %zu averaging units", r->who, cap);
  if (n) memcpy(u, r->units, n * sizeof *u);
  hk_env_free(&m->env, r->units);
  r->units = u;
  r->units_cap = cap;
  return HK_OK;
}

static void open_unit(hk__avg_unit *u, const hk_mpi_array *a, size_t i) {
  memset(u, 0, sizeof *u);
  u->dtype = a->dtype;
  u->buf = a->data;
  u->count = a->count;
  u->first_array = i;
  u->narrays = 1;
}

hk_code hk__avg_plan(hk_mpi_average_request *r, hk_status *st) {
  hk_mpi *m = r->mpi;
  const size_t threshold = m->fusion_bytes;
  hk_code rc = grow_units(r, r->narrays, st);
  if (rc != HK_OK) return rc;
  size_t n = 0, open = SIZE_MAX; /* open: the unit still taking arrays */
  for (size_t i = 0; i < r->narrays; i++) {
    const hk_mpi_array *a = &r->arrays[i];
    const size_t esize = hk__avg_esize(a->dtype), bytes = a->count * esize;
    if (bytes >= threshold) { /* alone, in place */
      open_unit(&r->units[n++], a, i);
      open = SIZE_MAX;
    } else if (open != SIZE_MAX && r->units[open].dtype == a->dtype &&
               (r->units[open].count + a->count) * esize <= threshold) {
      r->units[open].count += a->count;
      r->units[open].narrays++;
    } else {
      open = n;
      open_unit(&r->units[n++], a, i);
    }
  }
  /* A full average of a large array in place goes in segments of
   * HK__AVG_SEGMENT_BYTES, each a unit of its own: their reduce-scatters
   * are all posted at once, and each is summed as soon as its copies
   * have arrived, while the later ones are still on their way, from
   * copies small enough to still be in cache. The halves keep whole
   * units: their block partition is the whole array's. */
  if (r->mode == HK__AVG_FULL) {
    size_t total = 0;
    for (size_t k = 0; k < n; k++) total += unit_segments(&r->units[k]);
    if (total > n) {
      if ((rc = grow_units_keep(r, n, total, st)) != HK_OK) return rc;
      for (size_t k = n, at = total; k-- > 0;) {
        const hk__avg_unit whole = r->units[k];
        const size_t segs = unit_segments(&whole), esize = hk__avg_esize(whole.dtype);
        const size_t per = HK__AVG_SEGMENT_BYTES / esize;
        at -= segs;
        for (size_t g = 0; g < segs; g++) {
          hk__avg_unit *u = &r->units[at + g];
          *u = whole;
          u->seg_off = g * per * esize;
          u->buf = whole.buf + u->seg_off; /* a fused unit's is set below */
          u->count = g + 1 < segs ? per : whole.count - g * per;
        }
      }
      n = total;
    }
  }
  r->nunits = n;
  /* Offsets: a unit of several arrays in the fusion buffer; every unit's
   * room in the scratch. */
  size_t fused = 0, scratch = 0;
  for (size_t k = 0; k < n; k++) {
    hk__avg_unit *u = &r->units[k];
    const size_t esize = hk__avg_esize(u->dtype);
    u->fused = u->narrays > 1; /* the segments of a fused unit are consecutive in the fusion buffer */
    if (u->fused) {
      u->fused_off = fused;
      fused += align_up(u->count * esize);
    }
    u->scratch_off = scratch;
    scratch += unit_scratch(r, u->count, esize);
  }
  if ((rc = grow_reqs(r, n, st)) != HK_OK) return rc;
  if ((rc = grow_bytes(m, &r->fused, &r->fused_cap, fused, r->who, st)) != HK_OK) return rc;
  if ((rc = grow_bytes(m, &r->scratch, &r->scratch_cap, scratch, r->who, st)) != HK_OK) return rc;
  for (size_t k = 0; k < n; k++)
    if (r->units[k].fused) r->units[k].buf = r->fused + r->units[k].fused_off;
  return HK_OK;
}

void hk__avg_pack(hk_mpi_average_request *r, const hk__avg_unit *u) {
  unsigned char *p = u->buf;
  if (u->seg_off != 0) return; /* the first segment packed them all */
  for (size_t i = u->first_array; i < u->first_array + u->narrays; i++) {
    const size_t bytes = r->arrays[i].count * hk__avg_esize(r->arrays[i].dtype);
    if (bytes) memcpy(p, r->arrays[i].data, bytes);
    p += bytes;
  }
}

void hk__avg_unpack(hk_mpi_average_request *r, const hk__avg_unit *u) {
  /* This segment's bytes [lo, hi) of the fused buffer, into the arrays they belong to. */
  const unsigned char *base = u->buf - u->seg_off;
  const size_t lo = u->seg_off, hi = lo + u->count * hk__avg_esize(u->dtype);
  size_t at = 0;
  for (size_t i = u->first_array; i < u->first_array + u->narrays && at < hi; i++) {
    const size_t bytes = r->arrays[i].count * hk__avg_esize(r->arrays[i].dtype);
    const size_t from = at > lo ? at : lo, to = at + bytes < hi ? at + bytes : hi;
    if (from < to) memcpy((unsigned char *)r->arrays[i].data + (from - at), base + from, to - from);
    at += bytes;
  }
}
