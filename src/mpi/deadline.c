/*
 * hooked::mpi — the deadline of every wait for other ranks.
 *
 * A collective is started non-blocking and polled with MPI_Test: it spins
 * for a moment (a collective whose ranks are all there completes within
 * it), then sleeps between looks, doubling the pause up to a millisecond.
 * Between looks the rank also listens on a second duplicate of the
 * communicator, the watch, for the notice "I give up at collective #S".
 *
 * When the deadline passes, or a notice arrives, the rank gives up: it
 * sends its own notice (which collective, which operation, which step) to
 * every other rank, then listens for a short while for theirs. A rank
 * waiting in a collective of the context hears the first notice at its
 * next look and gives up too, so the ranks that are there all answer
 * within milliseconds; those that send nothing are not in any collective
 * of the context: they are the missing ones. A rank that arrives later
 * finds the notices waiting for it and gives up at once.
 *
 * Time is the system's monotonic clock, not the env's: the other ranks
 * run in real time, and a test's mock clock whose sleeps return at once
 * would make every wait "time out".
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mpi_internal.h"

#define TAG_GIVE_UP 1
/* Polling: spin this long, then sleep from IDLE_MIN up to IDLE_MAX. */
#define SPIN_SECS 0.002
#define IDLE_MIN_SECS 0.00002
#define IDLE_MAX_SECS 0.001
/* How long a rank that gives up listens for the others' notices: the ranks
 * that wait answer at their next look, within milliseconds. */
#define LISTEN_MAX_SECS 10.0
/* Ranks named one by one in a message; the rest are counted. */
#define LIST_MAX 16

static const char *const op_names[HK__MPI_OP__COUNT] = {
    "unknown",
    "average",
    "average_scalar",
    "the broadcast hook's model check",
    "the broadcast of the variables",
    "the stop agreement",
    "the parameter server's reply",
    "a parameter server request",
    "the context's creation",
    "a sharded checkpoint's exchange",
};

const char *hk__mpi_op_name(int op) { return op > 0 && op < HK__MPI_OP__COUNT ? op_names[op] : op_names[0]; }

double hk__mpi_now(void) { return hk_env_monotonic(NULL); }
static double now(void) { return hk__mpi_now(); }

void hk__mpi_set_step(hk_mpi *m, int64_t step) {
  if (m) m->step = step;
}

hk_code hk__mpi_check_usable(const hk_mpi *m, const char *who, hk_status *st) {
  if (!m->broken) return HK_OK;
  return hk_status_set(st, HK_FAILED_PRECONDITION,
                       "%s: the MPI context is broken: %s did not complete before its deadline and cannot be "
                       "completed or cancelled; end the job (MPI_Abort)",
                       who, m->broken_what);
}

static hk_code give_up(hk_mpi *m, int64_t seq, int op, const char *who, int first, hk_status *st);

int hk__mpi_heard_give_up(hk_mpi *m, int *from) {
  int flag = 0;
  MPI_Status s;
  if (MPI_Iprobe(MPI_ANY_SOURCE, TAG_GIVE_UP, m->watch, &flag, &s) != MPI_SUCCESS || !flag) return 0;
  *from = s.MPI_SOURCE;
  return 1;
}

hk_code hk__mpi_give_up(hk_mpi *m, int64_t seq, int op, const char *who, int first, hk_status *st) {
  hk_status local = HK_STATUS_INIT;
  hk_code rc = give_up(m, seq, op, who, first, st ? st : &local);
  if (!st) hk_env_log(&m->env, HK_LOG_ERROR, "%s", local.message);
  return rc;
}

hk_code hk__mpi_collective_begin(hk_mpi *m, int op, const char *who, hk_status *st) {
  hk_code rc = hk__mpi_check_usable(m, who, st);
  if (rc != HK_OK) return rc;
  m->seq++;
  /* Another rank gave up already: fail before starting a collective that
   * could complete against what that rank left behind. */
  int from = -1;
  if (hk__mpi_heard_give_up(m, &from)) rc = hk__mpi_give_up(m, m->seq, op, who, from, st);
  return rc;
}

void hk__mpi_poll_start(hk__mpi_poll *p, double t0) {
  p->t0 = t0;
  p->w0 = now();
  p->idle = IDLE_MIN_SECS;
  p->spins = 0;
}

void hk__mpi_poll_moved(hk__mpi_poll *p) {
  p->w0 = now();
  p->idle = IDLE_MIN_SECS;
}

int hk__mpi_poll_pause(hk_mpi *m, hk__mpi_poll *p, int *from) {
  *from = -1;
  p->spins++;
  const double t = now(), waited = t - p->w0;
  if (waited < SPIN_SECS && (p->spins & 63u) != 0) return 0;
  if (hk__mpi_heard_give_up(m, from)) return 1;
  if (t - p->t0 >= m->timeout) return 1;
  if (waited >= SPIN_SECS) {
    hk_env_sleep(NULL, p->idle);
    p->idle = p->idle * 2 < IDLE_MAX_SECS ? p->idle * 2 : IDLE_MAX_SECS;
  }
  return 0;
}

/* Poll `req` until it completes (1), the deadline passes or, with `listen`,
 * another rank's notice arrives (0; *from is its rank, else -1). */
static int poll_request(hk_mpi *m, MPI_Request *req, int listen, MPI_Status *status, int *from, int *err) {
  hk__mpi_poll p;
  int done = 0;
  hk__mpi_poll_start(&p, now());
  *from = -1;
  *err = MPI_SUCCESS;
  for (;;) {
    if ((*err = MPI_Test(req, &done, status)) != MPI_SUCCESS) return 0;
    if (done) return 1;
    if (listen) {
      if (hk__mpi_poll_pause(m, &p, from)) return 0;
      continue;
    }
    /* No notices: the deadline alone ends the wait. */
    const double waited = now() - p.w0;
    p.spins++;
    if (waited < SPIN_SECS && (p.spins & 63u) != 0) continue;
    if (waited >= m->timeout) return 0;
    if (waited >= SPIN_SECS) {
      hk_env_sleep(NULL, p.idle);
      p.idle = p.idle * 2 < IDLE_MAX_SECS ? p.idle * 2 : IDLE_MAX_SECS;
    }
  }
}

/* Append ranks r (where pick(r)) to buf as "2, 5, 7" (at most LIST_MAX,
 * then "and N more"); @return how many. */
typedef int (*rank_pick)(const hk_mpi *m, int r, const int64_t *mine);
static int list_ranks(char *buf, size_t cap, const hk_mpi *m, const int64_t *mine, rank_pick pick) {
  int n = 0;
  size_t len = strlen(buf);
  for (int r = 0; r < m->size; r++) {
    if (!pick(m, r, mine)) continue;
    if (n < LIST_MAX && len < cap) snprintf(buf + len, cap - len, "%s%d", n ? ", " : "", r);
    n++;
    len = strlen(buf);
  }
  if (n > LIST_MAX && len < cap) snprintf(buf + len, cap - len, " and %d more", n - LIST_MAX);
  return n;
}

static int heard(const hk_mpi *m, int r) { return m->notes[4 * r + 3] != 0; }
static int same_place(const hk_mpi *m, int r, const int64_t *mine) {
  return m->notes[4 * r] == mine[0] && m->notes[4 * r + 1] == mine[1];
}
static int pick_missing(const hk_mpi *m, int r, const int64_t *mine) {
  (void)mine;
  return !heard(m, r);
}
static int pick_waited(const hk_mpi *m, int r, const int64_t *mine) { return heard(m, r) && same_place(m, r, mine); }
static int pick_elsewhere(const hk_mpi *m, int r, const int64_t *mine) {
  return heard(m, r) && !same_place(m, r, mine);
}

/* Give up the collective of `op`: exchange notices, then the message. */
static hk_code give_up(hk_mpi *m, int64_t seq, int op, const char *who, int first, hk_status *st) {
  const int N = m->size, me = m->rank;
  int64_t mine[4] = {seq, op, m->step, 1};
  m->broken = 1;
  snprintf(m->broken_what, sizeof m->broken_what, "collective #%lld (%s)", (long long)seq, hk__mpi_op_name(op));
  for (int r = 0; r < N; r++) {
    m->notes[4 * r + 3] = 0;
    m->note_reqs[r] = m->note_rreqs[r] = MPI_REQUEST_NULL;
  }
  memcpy(m->notes + 4 * me, mine, sizeof mine);
  for (int r = 0; r < N; r++) {
    if (r == me) continue;
    MPI_Isend(m->notes + 4 * me, 4, MPI_INT64_T, r, TAG_GIVE_UP, m->watch, &m->note_reqs[r]);
    MPI_Irecv(m->notes + 4 * r, 4, MPI_INT64_T, r, TAG_GIVE_UP, m->watch, &m->note_rreqs[r]);
  }
  const double listen = m->timeout / 2 < LISTEN_MAX_SECS ? m->timeout / 2 : LISTEN_MAX_SECS;
  const double t0 = now();
  int waiting = N - 1;
  while (waiting > 0 && now() - t0 < listen) {
    for (int r = 0; r < N; r++) {
      int done = 0;
      if (m->note_rreqs[r] == MPI_REQUEST_NULL) continue;
      if (MPI_Test(&m->note_rreqs[r], &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || done) waiting--;
      if (done) m->notes[4 * r + 3] = 1;
    }
    if (waiting > 0) hk_env_sleep(NULL, IDLE_MAX_SECS);
  }
  for (int r = 0; r < N; r++) {
    if (m->note_rreqs[r] != MPI_REQUEST_NULL) {
      MPI_Cancel(&m->note_rreqs[r]);
      MPI_Request_free(&m->note_rreqs[r]);
    }
    /* The notice reaches a rank whenever it looks; nothing waits for it. */
    if (m->note_reqs[r] != MPI_REQUEST_NULL) MPI_Request_free(&m->note_reqs[r]);
  }
  char step[40] = "", missing[160] = "", waited[160] = "", elsewhere[96] = "", firstly[48] = "";
  if (m->step != HK_UNSET_STEPS) snprintf(step, sizeof step, " at step %lld", (long long)m->step);
  if (first >= 0) snprintf(firstly, sizeof firstly, " (rank %d gave up first)", first);
  int nmissing = list_ranks(missing, sizeof missing, m, mine, pick_missing);
  list_ranks(waited, sizeof waited, m, mine, pick_waited);
  for (int r = 0; r < N; r++)
    if (pick_elsewhere(m, r, mine)) { /* the first one is enough to see the mismatch */
      snprintf(elsewhere, sizeof elsewhere, "; rank %d waited in collective #%lld (%s)", r, (long long)m->notes[4 * r],
               hk__mpi_op_name((int)m->notes[4 * r + 1]));
      break;
    }
  hk_status_set(st, HK_DEADLINE_EXCEEDED,
                "%s: collective #%lld (%s)%s did not complete within %g s%s: %s%s%s; rank(s) %s waited%s", who,
                (long long)seq, hk__mpi_op_name(op), step, m->timeout, firstly, nmissing ? "rank(s) " : "",
                nmissing ? missing : "every rank was there, the last ones after the others had given up",
                nmissing ? " did not arrive" : "", waited, elsewhere);
  if (st) hk_env_log(&m->env, HK_LOG_ERROR, "%s", st->message);
  return HK_DEADLINE_EXCEEDED;
}

hk_code hk__mpi_collective_wait(hk_mpi *m, MPI_Request *req, int op, const char *who, hk_status *st) {
  int from, err;
  if (poll_request(m, req, 1, MPI_STATUS_IGNORE, &from, &err)) return HK_OK;
  if (err != MPI_SUCCESS) return hk__mpi_error(st, err, who);
  return hk__mpi_give_up(m, m->seq, op, who, from, st);
}

hk_code hk__mpi_p2p_timeout(hk_mpi *m, int op, const char *peers, const char *who, hk_status *st) {
  hk_status local = HK_STATUS_INIT;
  hk_status *s = st ? st : &local;
  char step[40] = "";
  m->broken = 1;
  snprintf(m->broken_what, sizeof m->broken_what, "%s", hk__mpi_op_name(op));
  if (m->step != HK_UNSET_STEPS) snprintf(step, sizeof step, " at step %lld", (long long)m->step);
  hk_status_set(s, HK_DEADLINE_EXCEEDED, "%s: %s%s did not come within %g s: %s did not answer", who,
                hk__mpi_op_name(op), step, m->timeout, peers);
  hk_env_log(&m->env, HK_LOG_ERROR, "%s", s->message);
  return HK_DEADLINE_EXCEEDED;
}

hk_code hk__mpi_p2p_wait(hk_mpi *m, MPI_Request *req, int op, const char *peers, const char *who, MPI_Status *status,
                         hk_status *st) {
  int from, err;
  if (poll_request(m, req, 0, status ? status : MPI_STATUS_IGNORE, &from, &err)) return HK_OK;
  if (err != MPI_SUCCESS) return hk__mpi_error(st, err, who);
  return hk__mpi_p2p_timeout(m, op, peers, who, st);
}
