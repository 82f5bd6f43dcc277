/*
 * hooked::mpi — averages in flight: a request's units through the
 * reduce-scatter and the all-gather, as point-to-point messages.
 *
 * A unit goes through its phases in order, each a few steps of messages
 * (average_schedule.c says which blocks go where, and adds them): its
 * reduce-scatter's first step is posted at the start; when a step's
 * messages have all completed, the unit adds what arrived and posts its
 * next step, then the all-gather's steps, and when the last completes, a
 * fused unit is unpacked into its arrays. Every message of a unit's phase
 * has the phase's own tag, so two units in flight never take each other's
 * messages, whatever order the ranks reach them in. A unit moves on only
 * once the earlier units of its request are past their reduce-scatter, so
 * each rank posts a request's messages in one order.
 *
 * Only bytes move through MPI; every addition is hooked's, in an order
 * fixed by the rank count, so the bits depend on the rank count alone.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mpi_internal.h"

enum { PHASE_SCATTER = 1, PHASE_GATHER, PHASE_DONE };

/* Move every unit as far as it goes without waiting; *done: all are done;
 * *moved counts the steps that completed. */
static hk_code advance(hk_mpi_average_request *r, int *done, int *moved, hk_status *st) {
  const int per = 2 * (r->mpi->size - 1), steps = hk__avg_steps(r->mpi->size);
  int all = 1;
  *done = 0;
  for (size_t k = 0; k < r->nunits; k++) {
    hk__avg_unit *u = &r->units[k];
    int complete = 1, err;
    if (u->phase == PHASE_DONE) continue;
    if ((err = MPI_Testall(per, hk__avg_unit_reqs(r, k), &complete, MPI_STATUSES_IGNORE)) != MPI_SUCCESS)
      return hk__mpi_error(st, err, "averaging: MPI_Testall");
    if (!complete) {
      if (u->phase == PHASE_SCATTER) return HK_OK; /* the later units wait for this one's reduce-scatter */
      all = 0;
      continue;
    }
    /* The step's messages have all completed: on to the next step, or phase. */
    hk_code rc = HK_OK;
    (*moved)++;
    if (u->phase == PHASE_SCATTER) {
      hk__avg_sum(r, k);
      if (++u->step < steps) {
        rc = hk__avg_post_scatter(r, k, st);
      } else if (r->mode & HK__AVG_ALL_GATHER) {
        u->phase = PHASE_GATHER;
        u->step = 0;
        rc = hk__avg_post_gather(r, k, st);
      } else {
        u->phase = PHASE_DONE;
      }
    } else if (++u->step < steps) {
      rc = hk__avg_post_gather(r, k, st);
    } else {
      u->phase = PHASE_DONE;
    }
    if (rc != HK_OK) return rc;
    if (u->phase != PHASE_DONE) {
      k--; /* look at it again: a step with nothing to move is complete at once */
      continue;
    }
    if (u->fused && (r->mode & HK__AVG_ALL_GATHER)) hk__avg_unpack(r, u);
    r->mpi->avg_inflight--;
  }
  *done = all;
  return HK_OK;
}

/* The context's requests in flight, in start order. */
static void link_active(hk_mpi_average_request *r) {
  hk_mpi *m = r->mpi;
  r->prev_active = m->last_active;
  r->next_active = NULL;
  if (m->last_active)
    m->last_active->next_active = r;
  else
    m->first_active = r;
  m->last_active = r;
}

static void unlink_active(hk_mpi_average_request *r) {
  hk_mpi *m = r->mpi;
  if (r->prev_active)
    r->prev_active->next_active = r->next_active;
  else if (m->first_active == r)
    m->first_active = r->next_active;
  if (r->next_active)
    r->next_active->prev_active = r->prev_active;
  else if (m->last_active == r)
    m->last_active = r->prev_active;
  r->prev_active = r->next_active = NULL;
}

/* Move every request in flight on the context forward, in start order;
 * *done: whether `r` is done. Another rank may be waiting for a message
 * of any of them (it finishes them in another order), so a wait for one
 * must post the others' messages too. */
static hk_code advance_all(hk_mpi_average_request *r, int *done, int *moved, hk_status *st) {
  *done = 0;
  *moved = 0;
  for (hk_mpi_average_request *q = r->mpi->first_active; q; q = q->next_active) {
    int d = 0;
    hk_code rc = advance(q, &d, moved, st);
    if (rc != HK_OK) return rc;
    if (q == r) *done = d;
  }
  return HK_OK;
}

/* ---- the request ------------------------------------------------------------------ */

hk_code hk__avg_request_create(hk_mpi_average_request **out, hk_mpi *m, hk_status *st) {
  hk_mpi_average_request *r = hk_env_calloc(&m->env, 1, sizeof *r);
  *out = NULL;
  if (!r) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_mpi_average_request_new: out of memory");
  r->mpi = m;
  r->who = "hk_mpi_average";
  /* One unit of one array, for the blocking calls of one buffer. */
  r->arrays = hk_env_calloc(&m->env, 1, sizeof *r->arrays);
  r->units = hk_env_calloc(&m->env, 1, sizeof *r->units);
  r->reqs = hk_env_calloc(&m->env, 2 * (size_t)m->size, sizeof *r->reqs);
  if (!r->arrays || !r->units || !r->reqs) {
    hk__avg_request_destroy(r);
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_mpi_average_request_new: out of memory");
  }
  r->arrays_cap = r->units_cap = 1;
  r->reqs_cap = 2 * (size_t)m->size;
  *out = r;
  return HK_OK;
}

void hk__avg_request_destroy(hk_mpi_average_request *r) {
  if (!r) return;
  hk_mpi *m = r->mpi;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (r->active && !finalized) {
    /* Left in flight (a deadline, or never finished): MPI must let go of
     * the buffers before they are freed. */
    for (size_t i = 0; i < r->nunits * 2 * (size_t)(m->size - 1) && i < r->reqs_cap; i++)
      if (r->reqs[i] != MPI_REQUEST_NULL) {
        MPI_Cancel(&r->reqs[i]);
        MPI_Request_free(&r->reqs[i]);
      }
    for (size_t k = 0; k < r->nunits; k++)
      if (r->units[k].phase != PHASE_DONE) m->avg_inflight--;
  }
  if (r->active) unlink_active(r);
  hk_env_free(&m->env, r->arrays);
  hk_env_free(&m->env, r->units);
  hk_env_free(&m->env, r->reqs);
  hk_env_free(&m->env, r->fused);
  hk_env_free(&m->env, r->scratch);
  hk_env_free(&m->env, r);
}

hk_code hk_mpi_average_request_new(hk_mpi_average_request **out, hk_mpi *m, hk_status *st) {
  if (out) *out = NULL;
  if (!out || !m)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_mpi_average_request_new: %s is NULL", !out ? "out" : "mpi");
  return hk__avg_request_create(out, m, st);
}

void hk_mpi_average_request_free(hk_mpi_average_request *r) { hk__avg_request_destroy(r); }

hk_code hk__avg_check_arrays(const hk_mpi *m, const char *who, const hk_mpi_array *arrays, size_t n, int named,
                             hk_status *st) {
  if (!arrays && n) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: arrays is NULL with n %zu", who, n);
  for (size_t i = 0; i < n; i++) {
    const hk_mpi_array *a = &arrays[i];
    char name[40] = "";
    if (named) snprintf(name, sizeof name, "arrays[%zu]: ", i);
    if (a->dtype != HK_DTYPE_F32 && a->dtype != HK_DTYPE_F64)
      return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: %sdtype %s is not f32 or f64", who, name,
                           hk_dtype_name(a->dtype));
    if (!a->data && a->count)
      return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: %sdata is NULL with count %zu", who, name, a->count);
    size_t first, len;
    hk_mpi_block(&first, &len, a->count, m->size, 0, NULL);
    if (len > (size_t)INT_MAX || a->count > SIZE_MAX / 8)
      return hk_status_set(st, HK_INVALID_ARGUMENT,
                           "%s: %scount %zu over %d ranks makes blocks of %zu elements, more than MPI's int counts "
                           "reach (%d)",
                           who, name, a->count, m->size, len, INT_MAX);
  }
  return HK_OK;
}

hk_code hk__avg_start(hk_mpi_average_request *r, int mode, const char *who, const hk_mpi_array *arrays, size_t n,
                      hk_status *st) {
  hk_mpi *m = r->mpi;
  if (r->active)
    return hk_status_set(st, HK_FAILED_PRECONDITION, "%s: the request is already in flight; finish it first", who);
  hk_code rc = hk__mpi_check_usable(m, who, st);
  if (rc != HK_OK) return rc;
  if (n > r->arrays_cap) {
    hk_mpi_array *a = hk_env_calloc(&m->env, n, sizeof *a);
    if (!a) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "%s: out of memory for %zu arrays", who, n);
    hk_env_free(&m->env, r->arrays);
    r->arrays = a;
    r->arrays_cap = n;
  }
  if (n) memcpy(r->arrays, arrays, n * sizeof *arrays);
  r->narrays = n;
  r->who = who;
  r->mode = mode;
  if ((rc = hk__avg_plan(r, st)) != HK_OK) return rc;
  /* Tags repeat after avg_span units: more in flight could mix two up. */
  if (m->avg_inflight + (int64_t)r->nunits > m->avg_span)
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED,
                         "%s: %zu more fused buffers or arrays would make more than %lld in flight on the context "
                         "(the MPI library's tags tell them apart); finish some first",
                         who, r->nunits, (long long)m->avg_span);
  if ((rc = hk__mpi_collective_begin(m, HK__MPI_OP_AVERAGE, who, st)) != HK_OK) return rc;
  r->seq = m->seq;
  r->t0 = hk__mpi_now();
  r->active = 1;
  link_active(r);
  for (size_t k = 0; k < r->nunits; k++) {
    hk__avg_unit *u = &r->units[k];
    /* Unit k's tags: TAG_BASE + 2 (k mod span) (reduce-scatter) and one more (all-gather). */
    u->tag = HK__AVG_TAG_BASE + 2 * (int)(m->avg_units++ % m->avg_span);
    u->phase = mode & HK__AVG_REDUCE_SCATTER ? PHASE_SCATTER : PHASE_GATHER;
    u->step = 0;
    m->avg_inflight++;
  }
  for (size_t k = 0; k < r->nunits; k++) {
    hk__avg_unit *u = &r->units[k];
    if (u->fused) hk__avg_pack(r, u);
    rc = u->phase == PHASE_SCATTER ? hk__avg_post_scatter(r, k, st) : hk__avg_post_gather(r, k, st);
    if (rc != HK_OK) return rc;
  }
  return HK_OK;
}

/* Give up the request: its deadline passed, or another rank gave up. */
static hk_code request_give_up(hk_mpi_average_request *r, int from, hk_status *st) {
  return hk__mpi_give_up(r->mpi, r->seq, HK__MPI_OP_AVERAGE, r->who, from, st);
}

hk_code hk__avg_finish(hk_mpi_average_request *r, hk_status *st) {
  hk__mpi_poll p;
  int done = 0, moved = 0, from = -1;
  hk__mpi_poll_start(&p, r->t0);
  for (;;) {
    hk_code rc = advance_all(r, &done, &moved, st);
    if (rc != HK_OK) return rc;
    if (done) break;
    /* Most transports move a message only while this rank is inside MPI:
     * while steps keep completing, keep looking without a pause. */
    if (moved) hk__mpi_poll_moved(&p);
    if (hk__mpi_poll_pause(r->mpi, &p, &from)) return request_give_up(r, from, st);
  }
  r->active = 0;
  unlink_active(r);
  return HK_OK;
}

static hk_code check_request(const hk_mpi_average_request *r, const char *who, hk_status *st) {
  if (!r) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: req is NULL", who);
  if (!r->active)
    return hk_status_set(st, HK_FAILED_PRECONDITION, "%s: the request is not in flight (start it first)", who);
  return hk__mpi_check_usable(r->mpi, who, st);
}

hk_code hk_mpi_average_start(hk_mpi_average_request *r, const hk_mpi_array *arrays, size_t n, hk_status *st) {
  if (!r) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_mpi_average_start: req is NULL");
  hk_code rc = hk__avg_check_arrays(r->mpi, "hk_mpi_average_start", arrays, n, 1, st);
  if (rc != HK_OK) return rc;
  return hk__avg_start(r, HK__AVG_FULL, "hk_mpi_average_start", arrays, n, st);
}

hk_code hk_mpi_average_test(hk_mpi_average_request *r, int *done, hk_status *st) {
  if (!done) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_mpi_average_test: done is NULL");
  *done = 0;
  hk_code rc = check_request(r, "hk_mpi_average_test", st);
  if (rc != HK_OK) return rc;
  int moved = 0;
  if ((rc = advance_all(r, done, &moved, st)) != HK_OK || *done) return rc;
  int from = -1;
  if (hk__mpi_heard_give_up(r->mpi, &from) || hk__mpi_now() - r->t0 >= r->mpi->timeout)
    return request_give_up(r, from, st);
  return HK_OK;
}

hk_code hk_mpi_average_finish(hk_mpi_average_request *r, hk_status *st) {
  hk_code rc = check_request(r, "hk_mpi_average_finish", st);
  if (rc != HK_OK) return rc;
  return hk__avg_finish(r, st);
}
