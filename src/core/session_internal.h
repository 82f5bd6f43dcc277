/*
 * What the session's files share among themselves (hk__session_ names; not
 * API): the session's struct and the helpers one file calls in another.
 *
 *   session.c         construction, creation and recovery, close and free
 *   session_run.c     runs, split runs, should_stop, step_fn, traced runs
 *   session_shared.c  what a session shares with its hooks: event writers
 *                     and checkpoint-directory locks
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_CORE_SESSION_INTERNAL_H
#define HOOKED_CORE_SESSION_INTERNAL_H

#include "core/core_internal.h"

#define BUSY_MESSAGE "session is busy: called from a hook callback"
#define CLOSED_MESSAGE "Session is closed."

/* The merged arguments of one run, between its two halves. */
typedef struct merged_run {
  hk_run_context ctx;
  hk_run_args args;
  hk_run_options opts;
} merged_run;

/* One event writer per directory, shared by the hooks writing there. */
typedef struct event_dir {
  char *dir;
  hk__event_writer *w;
} event_dir;

struct hk_session {
  hk_env env;
  hk_session_kind kind;
  hk_executor *ex;
  hk_hook **hooks;
  size_t nhooks;
  hk_scaffold *scaffold;
  int owns_scaffold;
  hk_session_manager *sm;
  const hk_session_creator_vtable *creator;
  void *creator_user;
  int owns_creator;
  void (*on_free)(void *user); /* options v2 */
  void *on_free_user;
  int is_chief;
  char *ckpt_dir, *ckpt_path; /* copied restore options */
  double grace_secs, max_wait_secs;
  double rec_initial, rec_max_delay, rec_max_secs;
  int64_t rec_max_attempts;

  hk_raw_session *rs;
  hk_coordinator *coord;       /* current; NULL before the first creation */
  hk_coordinator **old_coords; /* kept until free */
  size_t nold, capold;

  int hook_stop; /* a hook requested a stop; sticky for the session's life */
  /* Why training stopped: `stop` once a cause is known (the first wins);
   * `pending` the last run's failure (an error, OUT_OF_RANGE), cleared by
   * a run that succeeds, and made the cause at close. */
  hk_stop_info stop;
  hk_stop_info pending;
  int closed;
  int failed; /* the failed state: no raw session left; run() returns its error */
  hk_status failed_status;
  int busy; /* inside a hook callback or init_fn: run(), run_step_fn() and close() are refused */
  /* A run split by hk_session_run_begin/run_end: its caller's arguments
   * (borrowed until run_end) and merged arguments. */
  int open;
  const hk_run_args *open_args;
  merged_run open_run;

  /* per-run scratch, grown on demand */
  hk_handle *fetches;
  size_t cap_fetches;
  hk_handle *targets;
  size_t cap_targets;
  hk_feed *feeds;
  size_t cap_feeds;
  hk_tensor *results;
  size_t cap_results;
  /* Spans of traced runs, two buffers of 2 * nhooks + 2: the run being
   * traced and the last completed one. */
  hk_span *spans[2];
  size_t nspans[2];
  int span_cur;             /* the buffer the current run writes */
  int span_last;            /* the last completed traced run's buffer, -1: none */
  int tracing;              /* the current run is traced */
  double trace_t0;          /* when its tracing began */
  uint64_t tid;             /* the training thread, for spans */
  hk_run_request *requests; /* nhooks */
  size_t *offsets;          /* nhooks: where each hook's results start */
  hk_run_metadata own_md;

  event_dir *evw; /* made at the hooks' requests, freed with the session */
  size_t nevw, capevw;
  /* The checkpoint directories its hooks write, locked at their
   * request, released at close (or free) once nothing writes there. */
  hk__dir_locks locks;
};

/* One recovery episode: its attempts so far and when it began. */
typedef struct episode {
  int64_t attempts;
  double start;
  int active;
} episode;

/* ---- session.c ------------------------------------------------------------- */

/** Grow *arr (elements of `elem` bytes, through the session's env) to hold
 *  at least `need`; 0 when out of memory. */
int hk__session_grow(hk_session *s, void **arr, size_t *cap, size_t need, size_t elem);
/** The end of a public entry point: copy the local status out (st may be
 *  NULL). @return rc. */
hk_code hk__session_finish(hk_code rc, const hk_status *local, hk_status *st);
/** Log `st` at `lvl` through the session's env, prefixed by `what`. */
void hk__session_log_status(hk_session *s, hk_log_level lvl, const char *what, const hk_status *st);
/** The failed state's error, copied into st. */
hk_code hk__session_report_failed(hk_session *s, hk_status *st);
/** Re-create the raw session after the preemption error in `err`;
 *  session.c says how. */
hk_code hk__session_recover(hk_session *s, episode *ep, const char *text, hk_code code, hk_status *err);

/** Record why training stopped unless a cause is already known. */
void hk__session_note_stop(hk_session *s, hk_stop_reason reason, hk_code code, int sig, const char *detail);
/** A hook's stop request (its name, and the reason it gave if any). */
void hk__session_note_hook_stop(hk_session *s, const hk_hook *h, const hk__stop_note *note);
/** The cause a stopped coordinator or the signal helper gives. */
void hk__session_note_coordinator_stop(hk_session *s);
/** A failed run: the cause at close unless a later run succeeds. */
void hk__session_note_run_failure(hk_session *s, hk_code rc, const hk_status *st, const hk_run_context *ctx);

/* ---- session_shared.c -------------------------------------------------------- */

/** Flush every event writer the session made (errors are logged). */
void hk__session_flush_event_writers(hk_session *s);
/** Free them. */
void hk__session_free_event_writers(hk_session *s);

#endif /* HOOKED_CORE_SESSION_INTERNAL_H */
