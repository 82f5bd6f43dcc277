/*
 * Monitored and singular sessions (contract groups A–D, D2, D7, D10–D12).
 *
 * One hk_session is both kinds: the singular one simply never recovers. The
 * per-run path (run_once) works out of scratch arrays owned by the session
 * that only ever grow, so steady-state runs allocate nothing (H7).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "core/core.h"
#include "core/core_internal.h"
#include "events/events.h"
#include "util/common.h"
#include "util/dir_lock.h"
#include "util/thread.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define BUSY_MESSAGE "session is busy: called from a hook callback"
#define CLOSED_MESSAGE "Session is closed."
#define STEP_STOP_MESSAGE "step_fn has requested the iterations to stop."
#define OPEN_MESSAGE "a run begun with hk_session_run_begin() is still open: end or abandon it first"

struct hk_step_context {
  hk_session *s;
  int stopping;
};

/* The merged arguments of one run, between its two halves. */
typedef struct merged_run {
  hk_run_context ctx;
  hk_run_args args;
  hk_run_options opts;
} merged_run;

/* H26: one event writer per directory, shared by the hooks writing there. */
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
  char *ckpt_dir, *ckpt_path; /* copied restore options (C67) */
  double grace_secs, max_wait_secs;
  double rec_initial, rec_max_delay, rec_max_secs;
  int64_t rec_max_attempts;

  hk_raw_session *rs;
  hk_coordinator *coord;       /* current; NULL before the first creation */
  hk_coordinator **old_coords; /* kept until free (H17) */
  size_t nold, capold;

  int hook_stop; /* C20, sticky */
  int closed;
  int failed; /* H18 */
  hk_status failed_status;
  int busy; /* H19: inside a hook callback or init_fn */
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
  /* H41: spans of traced runs, two buffers of 2 * nhooks + 2: the run being
   * traced and the last completed one. */
  hk_span *spans[2];
  size_t nspans[2];
  int span_cur;     /* the buffer the current run writes */
  int span_last;    /* the last completed traced run's buffer, -1: none */
  int tracing;      /* the current run is traced */
  double trace_t0;  /* when its tracing began */
  uint64_t tid;     /* the training thread, for spans */
  hk_run_request *requests; /* nhooks */
  size_t *offsets;          /* nhooks: where each hook's results start */
  hk_run_metadata own_md;

  event_dir *evw; /* made at the hooks' requests, freed with the session */
  size_t nevw, capevw;
  /* H58: the checkpoint directories its hooks write, locked at their
   * request, released at close (or free) once nothing writes there. */
  hk__dir_locks locks;
};

/* ---- helpers --------------------------------------------------------------- */

static int grow(hk_session *s, void **arr, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 1;
  size_t n = *cap ? *cap : 8;
  while (n < need) n *= 2;
  void *p = hk_env_realloc(&s->env, *arr, n * elem);
  if (!p) return 0;
  *arr = p;
  *cap = n;
  return 1;
}

#define callback_result hk__callback_result

/* Public entry points work on a local status and copy it out at the end, so
 * internal logic can always read what went wrong even when the caller passed
 * NULL. */
static hk_code finish(hk_code rc, const hk_status *local, hk_status *st) {
  if (!st) return rc;
  if (rc == HK_OK) {
    st->code = HK_OK;
    st->message[0] = '\0';
  } else {
    hk__status_copy(st, local);
    st->code = rc;
  }
  return rc;
}

static void log_status(hk_session *s, hk_log_level lvl, const char *what, const hk_status *st) {
  hk_env_log(&s->env, lvl, "%s: %s: %s", what, hk_code_name(st->code), st->message);
}

/* C31: raw-session close errors are logged, never returned. */
static void close_raw(hk_session *s) {
  if (!s->rs) return;
  hk_status tmp = HK_STATUS_INIT;
  hk_code rc = hk_raw_session_close(s->rs, &tmp);
  if (rc != HK_OK) {
    if (hk_code_is_preemption(rc))
      hk_env_log(&s->env, HK_LOG_WARNING,
                 "An error occurred when attempting to close the session. This may be due to a preemption in a "
                 "connected worker or parameter server. Error: %s",
                 tmp.message);
    else
      hk_env_log(&s->env, HK_LOG_ERROR, "An error occurred when attempting to close the session. Error: %s",
                 tmp.message);
  }
  hk_raw_session_free(s->rs);
  s->rs = NULL;
}

/* Stop the current coordinator and join its threads (C29, C30). */
static void stop_coordinator(hk_session *s) {
  if (!s->coord) return;
  hk_coordinator_request_stop(s->coord, HK_OK, NULL);
  hk_status tmp = HK_STATUS_INIT;
  if (hk_coordinator_join(s->coord, s->grace_secs, &tmp) != HK_OK)
    log_status(s, HK_LOG_ERROR, "coordinator join", &tmp);
}

static void detach_hooks(hk_session *s) {
  for (size_t i = 0; i < s->nhooks; i++) {
    if (s->hooks[i] && s->hooks[i]->owner == s) {
      hk_hook *h = s->hooks[i];
      if (h->on_detach) h->on_detach(h->user);
      s->hooks[i]->owner = NULL;
      s->hooks[i]->session_env = NULL;
      s->hooks[i]->session_scaffold = NULL;
    }
  }
}

/* D3.2: before a re-creation restores through the Scaffold's Saver, built-in
 * hooks finish background work that uses it. */
static void quiesce_hooks(hk_session *s) {
  for (size_t i = 0; i < s->nhooks; i++) {
    hk_hook *h = s->hooks[i];
    if (h && h->owner == s && h->on_quiesce) h->on_quiesce(h->user);
  }
}

/* ---- event writers (H26) ----------------------------------------------------- */

/* "a/b", "a/b/" and "a/b//" name one directory. */
static size_t dir_key_len(const char *dir) {
  size_t n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/') n--;
  return n;
}

static hk_code session_event_writer(hk_session *s, const hk_env *env, const char *dir, hk__event_writer **out,
                                    hk_status *st) {
  size_t k = dir_key_len(dir);
  for (size_t i = 0; i < s->nevw; i++) {
    if (dir_key_len(s->evw[i].dir) == k && memcmp(s->evw[i].dir, dir, k) == 0) {
      *out = s->evw[i].w;
      return HK_OK;
    }
  }
  if (!grow(s, (void **)&s->evw, &s->capevw, s->nevw + 1, sizeof *s->evw))
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "event writer for %s: out of memory", dir);
  char *copy = hk_env_strdup(&s->env, dir);
  if (!copy) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "event writer for %s: out of memory", dir);
  hk__event_writer *w = NULL;
  hk_code rc = hk__event_writer_new(&w, env, dir, st);
  if (rc != HK_OK) {
    hk_env_free(&s->env, copy);
    return rc;
  }
  s->evw[s->nevw].dir = copy;
  s->evw[s->nevw].w = w;
  s->nevw++;
  *out = w;
  return HK_OK;
}

/* The writer the session shares for `dir`, made through `env` at the first
 * request for that directory. FAILED_PRECONDITION once it is closed. */
static hk_code shared_event_writer(hk_session *s, const hk_env *env, const char *dir, hk__event_writer **out,
                                   hk_status *st) {
  *out = NULL;
  if (s->closed) return hk_status_set(st, HK_FAILED_PRECONDITION, CLOSED_MESSAGE);
  return session_event_writer(s, env ? env : &s->env, dir, out, st);
}

hk_code hk__hook_event_writer(hk_hook *hook, const char *dir, hk__event_writer **out, int *caller_owns, hk_status *st) {
  if (out) *out = NULL;
  if (caller_owns) *caller_owns = 0;
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk__hook_event_writer: out is NULL");
  if (!caller_owns) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk__hook_event_writer: caller_owns is NULL");
  if (!hook) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk__hook_event_writer: hook is NULL");
  if (!dir) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk__hook_event_writer: dir is NULL");
  if (!hook->owner) {
    hk_code rc = hk__event_writer_new(out, hk_hook_env(hook), dir, st);
    if (rc == HK_OK) *caller_owns = 1;
    return rc;
  }
  return session_event_writer((hk_session *)hook->owner, hk_hook_env(hook), dir, out, st);
}

void hk__hook_event_writer_release(hk_hook *hook, const char *who, hk__event_writer **w, int *caller_owns) {
  if (*caller_owns) {
    hk_status st = HK_STATUS_INIT;
    if (hk__event_writer_flush(*w, &st) != HK_OK)
      hk_hook_log(hook, HK_LOG_ERROR, "%s: %s (not returned)", who, st.message);
    hk__event_writer_free(*w);
  }
  *w = NULL;
  *caller_owns = 0;
}

/* The public ways to the writers a session shares (hooked/summary.h). */
static hk_code check_dir(const char *fn, const void *obj, const char *objname, const char *logdir,
                         hk_summary_writer **out, hk_status *st) {
  if (out != NULL) *out = NULL;
  if (obj == NULL) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: %s is NULL", fn, objname);
  if (out == NULL) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: out is NULL", fn);
  if (logdir == NULL || logdir[0] == '\0')
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: logdir is %s", fn, logdir ? "empty" : "NULL");
  return HK_OK;
}

hk_code hk_session_summary_writer(hk_session *s, const char *logdir, hk_summary_writer **out, hk_status *st) {
  hk__event_writer *ew = NULL;
  hk_code rc = check_dir("hk_session_summary_writer", s, "session", logdir, out, st);
  if (rc != HK_OK) return rc;
  rc = shared_event_writer(s, NULL, logdir, &ew, st);
  if (rc == HK_OK) *out = hk__summary_writer_of(ew);
  return rc;
}

hk_code hk_hook_summary_writer(hk_hook *hook, const char *logdir, hk_summary_writer **out, hk_status *st) {
  hk__event_writer *ew = NULL;
  hk_code rc = check_dir("hk_hook_summary_writer", hook, "hook", logdir, out, st);
  if (rc != HK_OK) return rc;
  if (hook->owner == NULL)
    return hk_status_set(st, HK_FAILED_PRECONDITION,
                         "hk_hook_summary_writer: hook '%s' serves no session (use hk_summary_writer_new() for a "
                         "writer of its own)",
                         hk_hook_name(hook));
  rc = shared_event_writer((hk_session *)(uintptr_t)hook->owner, hk_hook_env(hook), logdir, &ew, st);
  if (rc == HK_OK) *out = hk__summary_writer_of(ew);
  return rc;
}

hk_code hk__hook_dir_lock(hk_hook *hook, const char *dir, hk__dir_lock **own, hk_status *st) {
  if (own) *own = NULL;
  if (!own) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk__hook_dir_lock: own is NULL");
  if (!hook) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk__hook_dir_lock: hook is NULL");
  if (!dir) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk__hook_dir_lock: dir is NULL");
  if (!hook->owner) return hk__dir_lock_take(hk_hook_env(hook), dir, own, st);
  hk_session *s = (hk_session *)hook->owner;
  if (s->closed) return hk_status_set(st, HK_FAILED_PRECONDITION, CLOSED_MESSAGE);
  return hk__dir_locks_take(&s->locks, &s->env, hk_hook_env(hook), dir, st);
}

/* H26: flushed at close, clean or not (an unclean close calls no end()).
 * Logged, not returned: the records were handed to the file system. */
static void flush_event_writers(hk_session *s) {
  for (size_t i = 0; i < s->nevw; i++) {
    hk_status tmp = HK_STATUS_INIT;
    if (hk__event_writer_flush(s->evw[i].w, &tmp) != HK_OK)
      log_status(s, HK_LOG_ERROR, "event file flush at close (not returned)", &tmp);
  }
}

static void free_event_writers(hk_session *s) {
  for (size_t i = 0; i < s->nevw; i++) {
    hk__event_writer_free(s->evw[i].w);
    hk_env_free(&s->env, s->evw[i].dir);
  }
  hk_env_free(&s->env, s->evw);
  s->evw = NULL;
  s->nevw = s->capevw = 0;
}

static void enter_failed(hk_session *s, const hk_status *why) {
  s->failed = 1;
  hk__status_copy(&s->failed_status, why);
}

static hk_code report_failed(hk_session *s, hk_status *st) {
  hk__status_copy(st, &s->failed_status);
  return s->failed_status.code;
}

/* ---- creation (C4, C47, C48, H21) ------------------------------------------ */

static hk_code make_raw_session(hk_session *s, hk_raw_session **out, hk_status *st) {
  if (s->creator) {
    *out = NULL;
    s->busy++;
    hk_code rc = callback_result(s->creator->create(s->creator_user, s->ex, out, st), st, "create", "session creator");
    s->busy--;
    if (rc == HK_OK && !*out)
      return hk_status_set(st, HK_INTERNAL, "session creator returned OK without a raw session");
    if (rc != HK_OK && *out) {
      hk_raw_session_free(*out);
      *out = NULL;
    }
    return rc;
  }
  if (!s->is_chief) return hk_session_manager_wait_for_session(s->sm, out, s->max_wait_secs, st);
  hk_prepare_options po = HK_PREPARE_OPTIONS_INIT;
  po.init_op = hk_scaffold_init_op(s->scaffold);
  po.init_feed = hk_scaffold_init_feed(s->scaffold, &po.ninit_feed);
  po.init_fn = hk_scaffold_init_fn(s->scaffold, &po.init_fn_user);
  po.scaffold = s->scaffold;
  po.checkpoint_dir = s->ckpt_dir;
  po.checkpoint_filename_with_path = s->ckpt_path;
  po.saver = hk_scaffold_saver(s->scaffold);
  s->busy++; /* init_fn runs inside (H19) */
  hk_code rc = hk_session_manager_prepare_session(s->sm, out, &po, st);
  s->busy--;
  return rc;
}

/* One creation: raw session, fresh coordinator, after_create_session on every
 * hook. On failure nothing new remains open. */
static hk_code create_once(hk_session *s, hk_status *st) {
  hk_raw_session *rs = NULL;
  hk_code rc = make_raw_session(s, &rs, st);
  if (rc != HK_OK) return rc;
  if (!grow(s, (void **)&s->old_coords, &s->capold, s->nold + 1, sizeof *s->old_coords)) {
    hk_raw_session_free(rs);
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "session: out of memory keeping coordinators");
  }
  hk_coordinator *coord = NULL;
  rc = hk_coordinator_new(&coord, &s->env, st);
  if (rc != HK_OK) {
    hk_raw_session_free(rs);
    return rc;
  }
  /* H17: old coordinators stay valid (stopped) until the session is freed. */
  if (s->coord) s->old_coords[s->nold++] = s->coord;
  s->coord = coord;
  s->rs = rs;
  hk_creation_context cctx = {0};
  /* C94, C105: what the chief's session manager restored, for hooks that
   * would otherwise save the same checkpoint again. A custom creator or a
   * worker's wait restores nothing the session knows of. */
  if (!s->creator && s->is_chief) cctx.restored_checkpoint = hk_session_manager_restored_checkpoint(s->sm);
  s->busy++;
  for (size_t i = 0; i < s->nhooks && rc == HK_OK; i++) {
    hk_hook *h = s->hooks[i];
    if (h->vt->after_create_session)
      rc = callback_result(h->vt->after_create_session(h->user, rs, coord, &cctx, st), st, "after_create_session",
                           h->name);
  }
  s->busy--;
  if (rc != HK_OK) {
    stop_coordinator(s);
    close_raw(s);
    return rc;
  }
  if (cctx.stop_requested) s->hook_stop = 1; /* H12 */
  return HK_OK;
}

/* ---- recovery (C38–C41, D2) ------------------------------------------------- */

typedef struct episode {
  int64_t attempts;
  double start;
  int active;
} episode;

static const char *const TEXT_RUN =
    "An error was raised. This may be due to a preemption in a connected worker or parameter server. The current "
    "session will be closed and a new session will be created.";
static const char *const TEXT_CREATE =
    "An error was raised while a session was being created. This may be due to a preemption of a connected worker "
    "or parameter server. A new session will be created.";
static const char *const TEXT_SHOULD_STOP =
    "An error was raised while considering whether the session is complete. This may be due to a preemption in a "
    "connected worker or parameter server. The current session will be closed and a new session will be created.";

/* Called with a preemption error in `err`. Re-creates the raw session per D2
 * until one creation succeeds (OK) or recovery gives up or meets another
 * error (returned; failed state when no raw session remains). */
static hk_code recover(hk_session *s, episode *ep, const char *text, hk_code code, hk_status *err) {
  /* The code is what counts; the status may not have been filled (H1). */
  hk__callback_result(code, err, "operation", "session");
  if (!ep->active) {
    ep->active = 1;
    ep->attempts = 0;
    ep->start = hk_env_monotonic(&s->env);
  }
  for (;;) {
    int64_t k = ep->attempts + 1;
    double d = s->rec_initial;
    for (int64_t i = 1; i < k && d < s->rec_max_delay; i++) d *= 2;
    if (d > s->rec_max_delay) d = s->rec_max_delay;
    int give_up = (s->rec_max_attempts > 0 && k > s->rec_max_attempts) ||
                  (s->rec_max_secs > 0 && (hk_env_monotonic(&s->env) - ep->start) + d > s->rec_max_secs);
    if (give_up) {
      char msg[HK_STATUS_MESSAGE_MAX];
      snprintf(msg, sizeof msg, "%s", err->message);
      hk_status_set(err, code, "%s (gave up after %lld recovery attempts)", msg, (long long)ep->attempts);
      stop_coordinator(s);
      close_raw(s);
      enter_failed(s, err);
      return code;
    }
    ep->attempts = k;
    hk_env_log(&s->env, HK_LOG_WARNING, "%s Error: %s (recovery attempt %lld, waiting %g secs)", text, err->message,
               (long long)k, d);
    hk_env_sleep(&s->env, d);
    stop_coordinator(s);
    close_raw(s);
    quiesce_hooks(s);
    hk_status cst = HK_STATUS_INIT;
    hk_code rc = create_once(s, &cst);
    if (rc == HK_OK) return HK_OK;
    hk__callback_result(rc, &cst, "session creation", "session");
    hk__status_copy(err, &cst);
    code = rc;
    if (!hk_code_is_preemption(rc)) {
      enter_failed(s, err); /* D2.4: no raw session remains */
      return rc;
    }
    text = TEXT_CREATE;
  }
}

/* ---- construction ------------------------------------------------------------ */

static const hk_session_options default_options = HK_SESSION_OPTIONS_INIT;

hk_code hk_session_options_init(hk_session_options *o, uint32_t version) {
  if (!o || version == 0 || version > HK_SESSION_OPTIONS_VERSION) return HK_INVALID_ARGUMENT;
  if (version == 1)
    memcpy(o, &default_options, offsetof(hk_session_options, on_free));
  else
    *o = default_options;
  o->version = version;
  return HK_OK;
}

static hk_code validate_options(const hk_session_options *o, hk_status *st) {
  if (o->version == 0 || o->version > HK_SESSION_OPTIONS_VERSION)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_new: options version %u is not supported",
                         (unsigned)o->version);
  hk_code rc = hk_env_check(o->env, "hk_session_new: env", st);
  if (rc != HK_OK) return rc;
  if (o->kind != HK_SESSION_MONITORED && o->kind != HK_SESSION_SINGULAR)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_new: kind %d is not a hk_session_kind", (int)o->kind);
  if (!o->executor) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_new: executor is NULL");
  if (!o->hooks && o->nhooks)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_new: hooks is NULL with nhooks %zu", o->nhooks);
  for (size_t i = 0; i < o->nhooks; i++) {
    const hk_hook *h = o->hooks[i];
    if (!h) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_new: hooks[%zu] is NULL", i);
    for (size_t j = 0; j < i; j++)
      if (o->hooks[j] == h)
        return hk_status_set(st, HK_INVALID_ARGUMENT,
                             "hk_session_new: hook '%s' appears twice (hooks[%zu] and hooks[%zu])", h->name, j, i);
    if (h->owner)
      return hk_status_set(st, HK_INVALID_ARGUMENT,
                           "hk_session_new: hook '%s' (hooks[%zu]) already serves another session", h->name, i);
  }
  if (o->creator) {
    if (o->creator->version == 0 || o->creator->version > HK_SESSION_CREATOR_VTABLE_VERSION)
      return hk_status_set(st, HK_INVALID_ARGUMENT,
                           "hk_session_new: session creator vtable has version %u; supported 1..%u",
                           (unsigned)o->creator->version, (unsigned)HK_SESSION_CREATOR_VTABLE_VERSION);
    if (!o->creator->create)
      return hk_status_set(st, HK_INVALID_ARGUMENT,
                           "hk_session_new: session creator vtable lacks required slot create");
  }
  if (!hk__secs_valid(o->stop_grace_period_secs))
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "hk_session_new: stop_grace_period_secs must be finite and >= 0, got %g",
                         o->stop_grace_period_secs);
  if (!hk_secs_is_unset(o->max_wait_secs) && !hk__secs_valid(o->max_wait_secs))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_new: max_wait_secs must be finite and >= 0, got %g",
                         o->max_wait_secs);
  if (!(isfinite(o->recovery_wait_secs) && o->recovery_wait_secs > 0))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_new: recovery_wait_secs must be finite and > 0, got %g",
                         o->recovery_wait_secs);
  if (!hk__secs_valid(o->recovery_initial_delay_secs))
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "hk_session_new: recovery_initial_delay_secs must be finite and >= 0, got %g",
                         o->recovery_initial_delay_secs);
  if (!hk__secs_valid(o->recovery_max_delay_secs) || o->recovery_max_delay_secs < o->recovery_initial_delay_secs)
    return hk_status_set(
        st, HK_INVALID_ARGUMENT,
        "hk_session_new: recovery_max_delay_secs must be finite and >= recovery_initial_delay_secs, got %g",
        o->recovery_max_delay_secs);
  if (o->recovery_max_attempts < 0)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_new: recovery_max_attempts must be >= 0, got %lld",
                         (long long)o->recovery_max_attempts);
  if (!hk__secs_valid(o->recovery_max_secs))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_new: recovery_max_secs must be finite and >= 0, got %g",
                         o->recovery_max_secs);
  if (o->scaffold && hk__scaffold_executor(o->scaffold) && hk__scaffold_executor(o->scaffold) != o->executor)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_new: scaffold was finalized with another executor");
  if (o->checkpoint_dir && o->checkpoint_filename_with_path)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "Can not provide both checkpoint_dir and checkpoint_filename_with_path.");
  return HK_OK;
}

/* Free everything; the session must not be in a hook callback. */
static void destroy(hk_session *s) {
  if (!s->closed) {
    detach_hooks(s); /* close() detached them; they may be freed since */
    flush_event_writers(s);
  }
  free_event_writers(s);
  hk__dir_locks_release(&s->locks, &s->env); /* a construction that failed */
  close_raw(s);
  if (s->coord) {
    hk_coordinator_free(s->coord);
    s->coord = NULL;
  }
  for (size_t i = 0; i < s->nold; i++) hk_coordinator_free(s->old_coords[i]);
  hk_session_manager_free(s->sm);
  if (s->owns_scaffold) hk_scaffold_free(s->scaffold);
  if (s->owns_creator && s->creator && s->creator->destroy) s->creator->destroy(s->creator_user);
  hk_env env = s->env;
  hk_env_free(&env, s->ckpt_dir);
  hk_env_free(&env, s->ckpt_path);
  hk_env_free(&env, s->old_coords);
  hk_env_free(&env, s->hooks);
  hk_env_free(&env, s->fetches);
  hk_env_free(&env, s->targets);
  hk_env_free(&env, s->feeds);
  hk_env_free(&env, s->results);
  hk_env_free(&env, s->requests);
  hk_env_free(&env, s->spans[0]);
  hk_env_free(&env, s->spans[1]);
  hk_env_free(&env, s->offsets);
  hk_env_free(&env, s);
}

static hk_code session_new(hk_session **out, const hk_session_options *o, hk_status *st);

hk_code hk_session_new(hk_session **out, const hk_session_options *o, hk_status *st) {
  hk_status local;
  local.code = HK_OK;
  local.message[0] = '\0';
  return finish(session_new(out, o, &local), &local, st);
}

static hk_code session_new(hk_session **out, const hk_session_options *o, hk_status *st) {
  if (out) *out = NULL;
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_new: out is NULL");
  if (!o) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_new: options is NULL (executor is required)");
  hk_code rc = validate_options(o, st);
  if (rc != HK_OK) return rc;

  const hk_env *env = o->env ? o->env : hk_executor_env(o->executor);
  hk_session *s = hk_env_calloc(env, 1, sizeof *s);
  if (!s) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_session_new: out of memory");
  hk_env_copy(&s->env, env);
  s->kind = o->kind;
  s->ex = o->executor;
  s->is_chief = o->kind == HK_SESSION_SINGULAR || o->is_chief != 0; /* C24: SMS always uses the chief creator */
  s->grace_secs = o->stop_grace_period_secs;
  s->max_wait_secs = o->max_wait_secs;
  s->rec_initial = o->recovery_initial_delay_secs;
  s->rec_max_delay = o->recovery_max_delay_secs;
  s->rec_max_attempts = o->recovery_max_attempts;
  s->rec_max_secs = o->recovery_max_secs;
  s->own_md.version = HK_RUN_METADATA_VERSION;
  if ((o->checkpoint_dir && !(s->ckpt_dir = hk_env_strdup(&s->env, o->checkpoint_dir))) ||
      (o->checkpoint_filename_with_path &&
       !(s->ckpt_path = hk_env_strdup(&s->env, o->checkpoint_filename_with_path)))) {
    destroy(s);
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_session_new: out of memory");
  }
  s->span_last = -1;
  for (int b = 0; b < 2; b++) {
    s->spans[b] = hk_env_calloc(&s->env, 2 * o->nhooks + 2, sizeof *s->spans[b]);
    if (!s->spans[b]) {
      destroy(s);
      return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_session_new: out of memory");
    }
  }
  if (o->nhooks) {
    s->hooks = hk_env_calloc(&s->env, o->nhooks, sizeof *s->hooks);
    s->requests = hk_env_calloc(&s->env, o->nhooks, sizeof *s->requests);
    s->offsets = hk_env_calloc(&s->env, o->nhooks, sizeof *s->offsets);
    if (!s->hooks || !s->requests || !s->offsets) {
      destroy(s);
      return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_session_new: out of memory");
    }
    memcpy(s->hooks, o->hooks, o->nhooks * sizeof *s->hooks);
  }
  s->nhooks = o->nhooks;
  if (o->scaffold) {
    s->scaffold = o->scaffold;
  } else {
    hk_scaffold_options so = HK_SCAFFOLD_OPTIONS_INIT;
    so.env = &s->env;
    rc = hk_scaffold_new(&s->scaffold, &so, st);
    if (rc != HK_OK) {
      destroy(s);
      return rc;
    }
    s->owns_scaffold = 1;
  }
  /* The creator becomes ours only when construction succeeds. */
  s->creator = o->creator;
  s->creator_user = o->creator_user;

  for (size_t i = 0; i < s->nhooks; i++) {
    s->hooks[i]->owner = s;
    s->hooks[i]->session_env = &s->env;
    s->hooks[i]->session_scaffold = s->scaffold;
  }
  /* C2: begin on every hook, in order, once. */
  s->busy++;
  for (size_t i = 0; i < s->nhooks && rc == HK_OK; i++) {
    hk_hook *h = s->hooks[i];
    if (h->vt->begin) rc = callback_result(h->vt->begin(h->user, s->ex, st), st, "begin", h->name);
  }
  s->busy--;
  /* C3, C61–C64: the Scaffold finalizes the graph after every begin(). */
  if (rc == HK_OK) rc = hk_scaffold_finalize(s->scaffold, s->ex, st);
  if (rc == HK_OK) {
    hk_session_manager_options mo = HK_SESSION_MANAGER_OPTIONS_INIT;
    mo.env = &s->env;
    mo.executor = s->ex;
    mo.local_init_op = hk_scaffold_local_init_op(s->scaffold);
    mo.ready_op = hk_scaffold_ready_op(s->scaffold);
    mo.ready_for_local_init_op = hk_scaffold_ready_for_local_init_op(s->scaffold);
    mo.local_init_feed = hk_scaffold_local_init_feed(s->scaffold, &mo.nlocal_init_feed);
    mo.recovery_wait_secs = o->recovery_wait_secs;
    rc = hk_session_manager_new(&s->sm, &mo, st);
  }
  if (rc == HK_OK) {
    rc = create_once(s, st);
    if (rc != HK_OK && hk_code_is_preemption(rc) && s->kind == HK_SESSION_MONITORED) {
      episode ep = {0, 0, 0};
      hk_status err = HK_STATUS_INIT;
      hk__status_copy(&err, st);
      rc = recover(s, &ep, TEXT_CREATE, rc, &err);
      hk__status_copy(st, &err);
    }
  }
  if (rc != HK_OK) {
    destroy(s);
    return rc;
  }
  s->owns_creator = 1;
  if (o->version >= 2) {
    s->on_free = o->on_free;
    s->on_free_user = o->on_free_user;
  }
  *out = s;
  return HK_OK;
}

/* ---- run --------------------------------------------------------------------- */

static const hk_run_args empty_args = {NULL, 0, NULL, 0, NULL, 0, NULL};

/* Index of tensor h in f[0..n), or n. */
static size_t feed_index(const hk_feed *f, size_t n, hk_handle h) {
  for (size_t i = 0; i < n; i++)
    if (f[i].tensor == h) return i;
  return n;
}

/* "prefix Conflict(s): [a:0, b:0]": the tensors of `earlier` that `later`
 * also feeds, in order of their first appearance (in `earlier`). */
static hk_code conflict_error(hk_session *s, hk_status *st, const char *prefix, const hk_feed *earlier, size_t ne,
                              const hk_feed *later, size_t nl) {
  st->code = HK_INVALID_ARGUMENT;
  size_t used = (size_t)snprintf(st->message, sizeof st->message, "%s Conflict(s): [", prefix);
  int any = 0;
  for (size_t i = 0; i < ne && used < sizeof st->message; i++) {
    if (feed_index(later, nl, earlier[i].tensor) == nl) continue;
    used += (size_t)snprintf(st->message + used, sizeof st->message - used, "%s%s", any ? ", " : "",
                             hk_executor_handle_name(s->ex, earlier[i].tensor));
    any = 1;
  }
  if (used < sizeof st->message) snprintf(st->message + used, sizeof st->message - used, "]");
  return HK_INVALID_ARGUMENT;
}

static int handles_contain(const hk_handle *a, size_t n, hk_handle h) {
  for (size_t i = 0; i < n; i++)
    if (a[i] == h) return 1;
  return 0;
}

/* H13: one list naming a tensor twice. */
static hk_code check_single_list(hk_session *s, const hk_feed *f, size_t n, const char *who, hk_status *st) {
  for (size_t i = 1; i < n; i++)
    for (size_t j = 0; j < i; j++)
      if (f[i].tensor == f[j].tensor)
        return hk_status_set(st, HK_INVALID_ARGUMENT, "%s feeds tensor %s twice", who,
                             hk_executor_handle_name(s->ex, f[i].tensor));
  return HK_OK;
}

/* C9, C10, H13: merge the hooks' feeds after the caller's. */
static hk_code merge_feeds(hk_session *s, const hk_run_args *a, size_t *nfeeds_out, const hk_feed **feeds_out,
                           hk_status *st) {
  hk_code rc = check_single_list(s, a->feeds, a->nfeeds, "the caller's feed list", st);
  if (rc != HK_OK) return rc;
  size_t hook_feeds = 0;
  for (size_t i = 0; i < s->nhooks; i++) hook_feeds += s->requests[i].nfeeds;
  if (hook_feeds == 0) {
    *feeds_out = a->feeds; /* C10: unchanged */
    *nfeeds_out = a->nfeeds;
    return HK_OK;
  }
  size_t total = a->nfeeds + hook_feeds;
  if (!grow(s, (void **)&s->feeds, &s->cap_feeds, total, sizeof *s->feeds))
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "run: out of memory merging feeds");
  /* Hook feeds first, to find hook-vs-hook conflicts (C9) in order. */
  size_t nh = 0;
  for (size_t i = 0; i < s->nhooks; i++) {
    const hk_run_request *r = &s->requests[i];
    if (!r->nfeeds) continue;
    char who[160];
    snprintf(who, sizeof who, "hook '%s'", s->hooks[i]->name);
    rc = check_single_list(s, r->feeds, r->nfeeds, who, st);
    if (rc != HK_OK) return rc;
    for (size_t k = 0; k < r->nfeeds; k++)
      if (feed_index(s->feeds, nh, r->feeds[k].tensor) < nh)
        return conflict_error(s, st, "Same tensor is fed by two hooks.", s->feeds, nh, r->feeds, r->nfeeds);
    for (size_t k = 0; k < r->nfeeds; k++) s->feeds[nh++] = r->feeds[k];
  }
  for (size_t k = 0; k < a->nfeeds; k++)
    if (feed_index(s->feeds, nh, a->feeds[k].tensor) < nh)
      return conflict_error(s, st, "Same tensor is fed by a SessionRunHook and user.", a->feeds, a->nfeeds, s->feeds,
                            nh);
  /* Caller's pairs first, then each hook's in list order (C10). */
  memmove(s->feeds + a->nfeeds, s->feeds, nh * sizeof *s->feeds);
  if (a->nfeeds) memcpy(s->feeds, a->feeds, a->nfeeds * sizeof *s->feeds);
  *feeds_out = s->feeds;
  *nfeeds_out = total;
  return HK_OK;
}

static hk_code check_request(hk_session *s, size_t i, hk_status *st) {
  const hk_run_request *r = &s->requests[i];
  const char *name = s->hooks[i]->name;
  if ((!r->fetches && r->nfetches) || (!r->feeds && r->nfeeds) || (!r->targets && r->ntargets))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hook '%s' requested %s with a NULL array", name,
                         (!r->fetches && r->nfetches) ? "fetches"
                         : (!r->feeds && r->nfeeds)   ? "feeds"
                                                      : "targets");
  if (r->trace_level < 0 || r->trace_level > 3)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hook '%s' requested trace_level %d outside [0, 3]", name,
                         (int)r->trace_level);
  if (r->timeout_ms < 0)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hook '%s' requested a negative timeout_ms %lld", name,
                         (long long)r->timeout_ms);
  return HK_OK;
}

/* C28: a non-preemption error yields to a recorded preemption error. */
static hk_code substitute(hk_session *s, hk_code rc, hk_status *st) {
  if (rc == HK_OK || hk_code_is_preemption(rc) || !s->coord) return rc;
  hk_status rec = HK_STATUS_INIT;
  hk_code c = hk_coordinator_error(s->coord, &rec);
  if (hk_code_is_preemption(c)) {
    hk__status_copy(st, &rec);
    return c;
  }
  return rc;
}

/* First half of a run (C5, C7, C8–C11, C14, H13): before_run on every hook,
 * then the merge. On failure no after_run follows and the stop flag is
 * unchanged. */
/* ---- traced runs (H41) ----------------------------------------------------- */

static void trace_begin(hk_session *s, double t0) {
  s->tracing = 1;
  s->trace_t0 = t0;
  s->nspans[s->span_cur] = 0;
  if (!s->tid) s->tid = hk__thread_id();
}

static void add_span(hk_session *s, const char *hook, const char *what, double t0, double t1) {
  hk_span *sp = &s->spans[s->span_cur][s->nspans[s->span_cur]++];
  sp->hook = hook;
  sp->what = what;
  sp->start_secs = t0;
  sp->end_secs = t1;
  sp->thread = s->tid;
}

/* The traced run completed: its buffer becomes the last one, and the
 * built-in hooks that write it (ProfilerHook) do so now, when every
 * after_run of the run has run. */
static hk_code trace_complete(hk_session *s, hk_status *st) {
  if (!s->tracing) return HK_OK;
  add_span(s, "session", "session.run", s->trace_t0, hk_env_monotonic(&s->env));
  s->tracing = 0;
  s->span_last = s->span_cur;
  s->span_cur ^= 1;
  for (size_t i = 0; i < s->nhooks; i++) {
    hk_hook *h = s->hooks[i];
    if (!h->on_traced_run) continue;
    hk_code rc = callback_result(h->on_traced_run(h->user, st), st, "after_run", h->name);
    if (rc != HK_OK) return rc; /* as a failed after_run (C14) */
  }
  return HK_OK;
}

const hk_span *hk__session_last_spans(const void *owner, size_t *n) {
  const hk_session *s = owner;
  if (s->span_last < 0) return NULL;
  *n = s->nspans[s->span_last];
  return s->spans[s->span_last];
}

/* The state checks before a run (C5, H18); their errors are never
 * substituted (C28 applies to what the hooks and the executor return). */
static hk_code run_precheck(hk_session *s, hk_status *st) {
  if (s->failed) return report_failed(s, st);
  if (s->hook_stop) return hk_status_set(st, HK_FAILED_PRECONDITION, "Run called even after should_stop requested.");
  if (!s->rs) return hk_status_set(st, HK_FAILED_PRECONDITION, "session has no raw session");
  return HK_OK;
}

static hk_code run_before(hk_session *s, const hk_run_args *a, merged_run *m, hk_status *st) {
  m->ctx.args = a;
  m->ctx.session = s->rs;
  m->ctx.stop_requested = 0;
  m->ctx.owner = s;
  hk_code rc = HK_OK;
  s->busy++;
  size_t nfetch = a->nfetches, ntarget = a->ntargets;
  int32_t trace = a->options ? a->options->trace_level : 0;
  int64_t timeout = a->options ? a->options->timeout_ms : 0;
  s->tracing = 0;
  if (trace >= 1) trace_begin(s, hk_env_monotonic(&s->env));
  for (size_t i = 0; i < s->nhooks; i++) {
    hk_hook *h = s->hooks[i];
    hk_run_request *r = &s->requests[i];
    memset(r, 0, sizeof *r);
    if (h->vt->before_run) {
      double t0 = s->tracing ? hk_env_monotonic(&s->env) : 0;
      rc = callback_result(h->vt->before_run(h->user, &m->ctx, r, st), st, "before_run", h->name);
      if (rc == HK_OK) rc = check_request(s, i, st);
      if (rc != HK_OK) {
        s->tracing = 0;
        goto done; /* C14 */
      }
      if (s->tracing)
        add_span(s, h->name, "before_run", t0, hk_env_monotonic(&s->env));
      else if (r->trace_level >= 1) /* traced from here on (H41) */
        trace_begin(s, hk_env_monotonic(&s->env));
    }
    nfetch += r->nfetches;
    ntarget += r->ntargets;
    if (r->trace_level > trace) trace = r->trace_level;
    if (r->timeout_ms > timeout) timeout = r->timeout_ms;
  }
  if (!grow(s, (void **)&s->fetches, &s->cap_fetches, nfetch, sizeof *s->fetches) ||
      !grow(s, (void **)&s->targets, &s->cap_targets, ntarget, sizeof *s->targets) ||
      !grow(s, (void **)&s->results, &s->cap_results, nfetch, sizeof *s->results)) {
    rc = hk_status_set(st, HK_RESOURCE_EXHAUSTED, "run: out of memory merging run arguments");
    goto done;
  }
  /* C8: caller's fetches, then each hook's; targets deduplicated (H30). */
  size_t nf = 0, nt = 0;
  if (a->nfetches) memcpy(s->fetches, a->fetches, a->nfetches * sizeof *s->fetches);
  nf = a->nfetches;
  for (size_t k = 0; k < a->ntargets; k++)
    if (!handles_contain(s->targets, nt, a->targets[k])) s->targets[nt++] = a->targets[k];
  for (size_t i = 0; i < s->nhooks; i++) {
    const hk_run_request *r = &s->requests[i];
    s->offsets[i] = nf;
    if (r->nfetches) memcpy(s->fetches + nf, r->fetches, r->nfetches * sizeof *s->fetches);
    nf += r->nfetches;
    for (size_t k = 0; k < r->ntargets; k++)
      if (!handles_contain(s->targets, nt, r->targets[k])) s->targets[nt++] = r->targets[k];
  }
  rc = merge_feeds(s, a, &m->args.nfeeds, &m->args.feeds, st);
  if (rc != HK_OK) {
    s->tracing = 0;
    goto done; /* H13: no after_run, stop flag unchanged */
  }
  /* C11: a session-owned merged copy of the options. */
  m->opts.version = HK_RUN_OPTIONS_VERSION;
  m->opts.trace_level = trace;
  m->opts.timeout_ms = timeout;
  m->opts.executor_options = a->options ? a->options->executor_options : NULL;
  m->args.fetches = s->fetches;
  m->args.nfetches = nf;
  m->args.targets = s->targets;
  m->args.ntargets = nt;
  m->args.options = &m->opts;
done:
  s->busy--;
  return rc;
}

/* Second half (C7, C12–C14, C19, C20): one executor run with the merged
 * arguments, then after_run on every hook, then the caller's results. */
static hk_code run_after(hk_session *s, const hk_run_args *a, merged_run *m, hk_tensor *results, hk_run_metadata *md,
                         hk_status *st) {
  hk_code rc;
  s->busy++;
  m->args.options = &m->opts; /* m may have moved since run_before */
  m->ctx.session = s->rs;
  hk_run_metadata *used_md = md ? md : &s->own_md;
  double t0 = s->tracing ? hk_env_monotonic(&s->env) : 0;
  rc = hk_raw_session_run(s->rs, &m->args, s->results, used_md, st);
  if (rc != HK_OK) goto done; /* C13 */
  if (s->tracing) add_span(s, "executor", "run", t0, hk_env_monotonic(&s->env));
  for (size_t i = 0; i < s->nhooks; i++) {
    hk_hook *h = s->hooks[i];
    if (!h->vt->after_run) continue;
    const hk_run_request *r = &s->requests[i];
    hk_run_values v = {r->nfetches ? s->results + s->offsets[i] : NULL, r->nfetches, &m->opts, used_md};
    t0 = s->tracing ? hk_env_monotonic(&s->env) : 0;
    rc = callback_result(h->vt->after_run(h->user, &m->ctx, &v, st), st, "after_run", h->name);
    if (rc != HK_OK) goto done; /* C14: this call's stop requests are dropped */
    if (s->tracing) add_span(s, h->name, "after_run", t0, hk_env_monotonic(&s->env));
  }
  rc = trace_complete(s, st);
  if (rc != HK_OK) goto done;
  if (m->ctx.stop_requested) s->hook_stop = 1; /* C19, C20 */
  if (a->nfetches) memcpy(results, s->results, a->nfetches * sizeof *results);
done:
  s->tracing = 0; /* a failed run's spans are dropped */
  s->busy--;
  return rc;
}

static hk_code run_once(hk_session *s, const hk_run_args *a, hk_tensor *results, hk_run_metadata *md, hk_status *st) {
  merged_run m;
  hk_code rc = run_precheck(s, st);
  if (rc != HK_OK) return rc;
  rc = run_before(s, a, &m, st);
  if (rc == HK_OK) rc = run_after(s, a, &m, results, md, st);
  return substitute(s, rc, st);
}

/* `results` is checked only when `check_results` is set (run_begin gets its
 * results at run_end). */
static hk_code check_run_entry(hk_session *s, const hk_run_args *a, hk_tensor *results, int check_results,
                               const char *fn, hk_status *st) {
  if (!s) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: session is NULL", fn);
  if (s->closed) return hk_status_set(st, HK_FAILED_PRECONDITION, CLOSED_MESSAGE);
  if (s->busy) return hk_status_set(st, HK_FAILED_PRECONDITION, BUSY_MESSAGE);
  if (s->open) return hk_status_set(st, HK_FAILED_PRECONDITION, "%s: " OPEN_MESSAGE, fn);
  hk_code rc = hk__run_args_check(a, fn, st);
  if (rc != HK_OK) return rc;
  if (check_results && a && a->nfetches && !results)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: results is NULL with %zu fetches", fn, a->nfetches);
  return HK_OK;
}

static hk_code session_run(hk_session *s, const hk_run_args *args, hk_tensor *results, hk_run_metadata *md,
                           hk_status *st);

hk_code hk_session_run(hk_session *s, const hk_run_args *args, hk_tensor *results, hk_run_metadata *md, hk_status *st) {
  hk_status local;
  local.code = HK_OK;
  local.message[0] = '\0';
  return finish(session_run(s, args, results, md, &local), &local, st);
}

static hk_code session_run(hk_session *s, const hk_run_args *args, hk_tensor *results, hk_run_metadata *md,
                           hk_status *st) {
  hk_code rc = check_run_entry(s, args, results, 1, "hk_session_run", st);
  if (rc != HK_OK) return rc;
  if (md && (md->version == 0 || md->version > HK_RUN_METADATA_VERSION))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_run: run metadata version %u is not supported",
                         (unsigned)md->version);
  if (!args) args = &empty_args;
  episode ep = {0, 0, 0};
  for (;;) {
    hk_status_clear(st); /* a retry must not inherit the last attempt's message */
    rc = run_once(s, args, results, md, st);
    if (s->kind != HK_SESSION_MONITORED || !hk_code_is_preemption(rc) || s->failed) return rc;
    hk_status err = HK_STATUS_INIT;
    hk__status_copy(&err, st);
    rc = recover(s, &ep, TEXT_RUN, rc, &err); /* C38, D2 */
    if (rc != HK_OK) {
      hk__status_copy(st, &err);
      return rc;
    }
  }
}

/* ---- split runs ---------------------------------------------------------------- */

static hk_code session_run_begin(hk_session *s, const hk_run_args *args, hk_status *st) {
  hk_code rc = check_run_entry(s, args, NULL, 0, "hk_session_run_begin", st);
  if (rc != HK_OK) return rc;
  if (!args) args = &empty_args;
  hk_status_clear(st);
  rc = run_precheck(s, st);
  if (rc != HK_OK) return rc;
  rc = run_before(s, args, &s->open_run, st);
  if (rc != HK_OK) return substitute(s, rc, st);
  s->open = 1;
  s->open_args = args;
  return HK_OK;
}

hk_code hk_session_run_begin(hk_session *s, const hk_run_args *args, hk_status *st) {
  hk_status local;
  local.code = HK_OK;
  local.message[0] = '\0';
  return finish(session_run_begin(s, args, &local), &local, st);
}

static hk_code session_run_end(hk_session *s, hk_tensor *results, hk_run_metadata *md, hk_status *st) {
  if (!s) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_run_end: session is NULL");
  if (s->busy) return hk_status_set(st, HK_FAILED_PRECONDITION, BUSY_MESSAGE);
  if (s->closed) return hk_status_set(st, HK_FAILED_PRECONDITION, CLOSED_MESSAGE);
  if (!s->open)
    return hk_status_set(st, HK_FAILED_PRECONDITION, "hk_session_run_end: no run is open (call hk_session_run_begin first)");
  const hk_run_args *a = s->open_args;
  if (a->nfetches && !results)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_run_end: results is NULL with %zu fetches", a->nfetches);
  if (md && (md->version == 0 || md->version > HK_RUN_METADATA_VERSION))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_run_end: run metadata version %u is not supported",
                         (unsigned)md->version);
  s->open = 0;
  s->open_args = NULL;
  hk_status_clear(st);
  if (s->failed) return report_failed(s, st);
  return substitute(s, run_after(s, a, &s->open_run, results, md, st), st);
}

hk_code hk_session_run_end(hk_session *s, hk_tensor *results, hk_run_metadata *md, hk_status *st) {
  hk_status local;
  local.code = HK_OK;
  local.message[0] = '\0';
  return finish(session_run_end(s, results, md, &local), &local, st);
}

const hk_run_options *hk_session_open_run_options(const hk_session *s) {
  return s && s->open ? &s->open_run.opts : NULL;
}

void hk_session_run_abandon(hk_session *s) {
  if (!s || !s->open || s->busy) return;
  s->open = 0;
  s->open_args = NULL;
}

/* ---- should_stop (C26, C40) -------------------------------------------------- */

int hk_session_should_stop(hk_session *s) {
  if (!s || s->closed || s->failed || s->hook_stop) return 1;
  if (!s->coord) return 1;
  if (!hk_coordinator_should_stop(s->coord)) return 0;
  hk_status rec = HK_STATUS_INIT;
  hk_code c = hk_coordinator_error(s->coord, &rec);
  if (s->kind == HK_SESSION_MONITORED && hk_code_is_preemption(c) && !s->busy && !s->open) {
    episode ep = {0, 0, 0};
    /* D8, C26: a stop requested while re-creating still counts. */
    return recover(s, &ep, TEXT_SHOULD_STOP, c, &rec) != HK_OK || s->hook_stop;
  }
  return 1;
}

/* ---- step_fn (C42–C45) ---------------------------------------------------------- */

hk_raw_session *hk_step_context_session(hk_step_context *ctx) { return ctx && ctx->s ? ctx->s->rs : NULL; }

hk_code hk_step_context_request_stop(hk_step_context *ctx, hk_status *st) {
  if (!ctx) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_step_context_request_stop: context is NULL");
  ctx->stopping = 1;
  return hk_status_set(st, HK_OUT_OF_RANGE, STEP_STOP_MESSAGE);
}

hk_code hk_step_context_run_with_hooks(hk_step_context *ctx, const hk_run_args *args, hk_tensor *results,
                                       hk_run_metadata *md, hk_status *st) {
  if (!ctx) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_step_context_run_with_hooks: context is NULL");
  if (ctx->stopping) return hk_status_set(st, HK_OUT_OF_RANGE, STEP_STOP_MESSAGE);
  hk_code rc = check_run_entry(ctx->s, args, results, 1, "hk_step_context_run_with_hooks", st);
  if (rc != HK_OK) return rc;
  if (md && (md->version == 0 || md->version > HK_RUN_METADATA_VERSION))
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "hk_step_context_run_with_hooks: run metadata version %u is not supported",
                         (unsigned)md->version);
  /* Preemption errors leave step_fn; run_step_fn recovers and calls it again (C45). */
  hk_status local;
  local.code = HK_OK;
  local.message[0] = '\0';
  return finish(run_once(ctx->s, args ? args : &empty_args, results, md, &local), &local, st);
}

static hk_code session_run_step_fn(hk_session *s, hk_step_fn fn, void *user, hk_status *st);

hk_code hk_session_run_step_fn(hk_session *s, hk_step_fn fn, void *user, hk_status *st) {
  hk_status local;
  local.code = HK_OK;
  local.message[0] = '\0';
  return finish(session_run_step_fn(s, fn, user, &local), &local, st);
}

static hk_code session_run_step_fn(hk_session *s, hk_step_fn fn, void *user, hk_status *st) {
  if (!s) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_run_step_fn: session is NULL");
  if (!fn) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_run_step_fn: step_fn is NULL");
  if (s->closed) return hk_status_set(st, HK_FAILED_PRECONDITION, CLOSED_MESSAGE);
  if (s->busy) return hk_status_set(st, HK_FAILED_PRECONDITION, BUSY_MESSAGE);
  if (s->open) return hk_status_set(st, HK_FAILED_PRECONDITION, "hk_session_run_step_fn: " OPEN_MESSAGE);
  if (s->failed) return report_failed(s, st);
  episode ep = {0, 0, 0};
  for (;;) {
    hk_step_context ctx = {s, 0};
    hk_status_clear(st);
    hk_code rc = callback_result(fn(&ctx, user, st), st, "step_fn", "run_step_fn");
    if (ctx.stopping && (rc == HK_OK || rc == HK_OUT_OF_RANGE))
      return hk_status_set(st, HK_OUT_OF_RANGE, STEP_STOP_MESSAGE);
    if (s->kind != HK_SESSION_MONITORED || !hk_code_is_preemption(rc) || s->failed || s->closed) return rc;
    hk_status err = HK_STATUS_INIT;
    hk__status_copy(&err, st);
    rc = recover(s, &ep, TEXT_RUN, rc, &err);
    if (rc != HK_OK) {
      hk__status_copy(st, &err);
      return rc;
    }
  }
}

/* ---- close and free (C29–C34, H15, H16, D7) ---------------------------------- */

static int is_clean(hk_session *s, hk_code code) {
  if (code == HK_OK || code == HK_OUT_OF_RANGE) return 1;
  if (code == HK_CANCELLED) return hk_signal_fired() || (s->coord && hk_coordinator_clean_stop_requested(s->coord));
  return 0;
}

hk_code hk_session_close(hk_session *s, hk_code exit_code, hk_status *st) {
  if (!s) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_close: session is NULL");
  if (s->closed) {
    hk_env_log(&s->env, HK_LOG_DEBUG, "close() on a closed session: nothing to do");
    hk_status_clear(st);
    return HK_OK; /* D7 */
  }
  if (s->busy) return hk_status_set(st, HK_FAILED_PRECONDITION, BUSY_MESSAGE);
  if (s->open) {
    hk_env_log(&s->env, HK_LOG_DEBUG, "close(): abandoning the open run (no after_run)");
    s->open = 0;
    s->open_args = NULL;
  }
  int clean = is_clean(s, exit_code);
  hk_status end_err = HK_STATUS_INIT;
  if (clean && !s->failed && s->rs) {
    s->busy++;
    for (size_t i = 0; i < s->nhooks; i++) {
      hk_hook *h = s->hooks[i];
      /* H1: the code is what counts. An end() that returns OK may leave
       * its status filled (an error it recovered from): that is no error. */
      hk_status why = HK_STATUS_INIT;
      if (!h->vt->end) continue;
      if (callback_result(h->vt->end(h->user, s->rs, &why), &why, "end", h->name) != HK_OK) {
        hk__status_copy(&end_err, &why);
        break; /* H16 */
      }
    }
    s->busy--;
  }
  stop_coordinator(s);
  /* After the join: a thread may report an error while it is being stopped.
   * Our own stop request is clean, so it is never mistaken for one. */
  hk_status coord_err = HK_STATUS_INIT;
  hk_code cc = s->coord ? hk_coordinator_error(s->coord, &coord_err) : HK_OK;
  close_raw(s);
  s->closed = 1;
  detach_hooks(s);
  flush_event_writers(s);
  /* H58: the hooks are done with their directories (an asynchronous write
   * in flight was completed when they were detached). */
  hk__dir_locks_release(&s->locks, &s->env);

  hk_status result = HK_STATUS_INIT;
  if (cc != HK_OK && !(s->kind == HK_SESSION_MONITORED && hk_code_is_preemption(cc))) {
    hk__status_copy(&result, &coord_err);
  } else if (cc != HK_OK) {
    hk_env_log(&s->env, HK_LOG_WARNING,
               "An error occurred when attempting to close the session. This may be due to a preemption in a "
               "connected worker or parameter server. Error: %s",
               coord_err.message);
  }
  const hk_status *candidates[3] = {&end_err, &s->failed_status, NULL};
  hk_status given = HK_STATUS_INIT;
  if (!clean) {
    given.code = exit_code;
    snprintf(given.message, sizeof given.message, "session closed with status %s", hk_code_name(exit_code));
    candidates[2] = &given;
  }
  for (int i = 0; i < 3; i++) {
    const hk_status *c = candidates[i];
    if (!c || c->code == HK_OK) continue;
    if (result.code == HK_OK)
      hk__status_copy(&result, c);
    else if (c != &given)
      log_status(s, HK_LOG_ERROR, "error during close (not returned)", c);
  }
  if (result.code == HK_OK) {
    hk_status_clear(st);
    return HK_OK;
  }
  hk__status_copy(st, &result);
  return result.code;
}

void hk_session_free(hk_session *s) {
  if (!s) return;
  if (s->busy) {
    /* Freeing from inside a callback would pull the session out from under
     * the dispatch loop; refuse loudly rather than corrupt memory. */
    hk_env_log(&s->env, HK_LOG_ERROR, "hk_session_free called from a hook callback; ignored");
    return;
  }
  if (!s->closed) {
    hk_env_log(&s->env, HK_LOG_WARNING, "session destroyed without close");
    hk_status tmp = HK_STATUS_INIT;
    if (hk_session_close(s, HK_CANCELLED, &tmp) != HK_OK) log_status(s, HK_LOG_ERROR, "close at free", &tmp);
  }
  void (*on_free)(void *) = s->on_free;
  void *on_free_user = s->on_free_user;
  destroy(s);
  if (on_free) on_free(on_free_user);
}

/* ---- accessors -------------------------------------------------------------- */

hk_raw_session *hk_session_raw_session(hk_session *s) {
  return s && !s->closed && s->kind == HK_SESSION_SINGULAR ? s->rs : NULL;
}
hk_executor *hk_session_graph(hk_session *s) { return s && !s->closed ? s->ex : NULL; }
hk_coordinator *hk_session_coordinator(hk_session *s) { return s ? s->coord : NULL; }
hk_scaffold *hk_session_scaffold(hk_session *s) { return s ? s->scaffold : NULL; }
size_t hk_session_hook_count(const hk_session *s) { return s ? s->nhooks : 0; }
hk_hook *hk_session_hook(const hk_session *s, size_t i) { return s && i < s->nhooks ? s->hooks[i] : NULL; }
