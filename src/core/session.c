/*
 * Monitored and singular sessions (contract groups A–D).
 *
 * One hk_session is both kinds: the singular one simply never recovers.
 * This file builds, creates, recovers, closes and frees a session; its runs
 * are in session_run.c, what it shares with its hooks in session_shared.c.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "core/core_internal.h"
#include "core/session_internal.h"
#include "util/common.h"
#include "util/dir_lock.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* ---- helpers --------------------------------------------------------------- */

int hk__session_grow(hk_session *s, void **arr, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 1;
  size_t n = *cap ? *cap : 8;
  while (n < need) n *= 2;
  void *p = hk_env_realloc(&s->env, *arr, n * elem);
  if (!p) return 0;
  *arr = p;
  *cap = n;
  return 1;
}

/* Public entry points work on a local status and copy it out at the end, so
 * internal logic can always read what went wrong even when the caller passed
 * NULL. */
hk_code hk__session_finish(hk_code rc, const hk_status *local, hk_status *st) {
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

void hk__session_log_status(hk_session *s, hk_log_level lvl, const char *what, const hk_status *st) {
  hk_env_log(&s->env, lvl, "%s: %s: %s", what, hk_code_name(st->code), st->message);
}

/* Raw-session close errors are logged, never returned. */
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

/* Stop the current coordinator and join its threads. */
static void stop_coordinator(hk_session *s) {
  if (!s->coord) return;
  hk_coordinator_request_stop(s->coord, HK_OK, NULL);
  hk_status tmp = HK_STATUS_INIT;
  if (hk_coordinator_join(s->coord, s->grace_secs, &tmp) != HK_OK)
    hk__session_log_status(s, HK_LOG_ERROR, "coordinator join", &tmp);
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

/* Before a re-creation restores through the Scaffold's Saver, built-in
 * hooks finish background work that uses it. */
static void quiesce_hooks(hk_session *s) {
  for (size_t i = 0; i < s->nhooks; i++) {
    hk_hook *h = s->hooks[i];
    if (h && h->owner == s && h->on_quiesce) h->on_quiesce(h->user);
  }
}

static void enter_failed(hk_session *s, const hk_status *why) {
  s->failed = 1;
  hk__status_copy(&s->failed_status, why);
}

hk_code hk__session_report_failed(hk_session *s, hk_status *st) {
  hk__status_copy(st, &s->failed_status);
  return s->failed_status.code;
}

/* ---- creation -------------------------------------------------------------- */

static hk_code make_raw_session(hk_session *s, hk_raw_session **out, hk_status *st) {
  if (s->creator) {
    *out = NULL;
    s->busy++;
    hk_code rc =
        hk__callback_result(s->creator->create(s->creator_user, s->ex, out, st), st, "create", "session creator");
    s->busy--;
    if (rc == HK_OK && !*out)
      return hk_status_set(st, HK_INTERNAL, "session creator returned OK without a raw session");
    if (rc != HK_OK && *out) {
      hk_raw_session_free(*out);
      *out = NULL;
    }
    return rc;
  }
  if (!s->is_chief) return hk_session_manager_wait_for_session(out, s->sm, s->max_wait_secs, st);
  hk_prepare_options po = HK_PREPARE_OPTIONS_INIT;
  po.init_op = hk_scaffold_init_op(s->scaffold);
  po.init_feed = hk_scaffold_init_feed(s->scaffold, &po.ninit_feed);
  po.init_fn = hk_scaffold_init_fn(&po.init_fn_user, s->scaffold);
  po.scaffold = s->scaffold;
  po.checkpoint_dir = s->ckpt_dir;
  po.checkpoint_filename_with_path = s->ckpt_path;
  po.saver = hk_scaffold_saver(s->scaffold);
  s->busy++; /* init_fn runs inside */
  hk_code rc = hk_session_manager_prepare_session(out, s->sm, &po, st);
  s->busy--;
  return rc;
}

/* One creation: raw session, fresh coordinator, after_create_session on every
 * hook. On failure nothing new remains open. */
static hk_code create_once(hk_session *s, hk_status *st) {
  hk_raw_session *rs = NULL;
  hk_code rc = make_raw_session(s, &rs, st);
  if (rc != HK_OK) return rc;
  if (!hk__session_grow(s, (void **)&s->old_coords, &s->capold, s->nold + 1, sizeof *s->old_coords)) {
    hk_raw_session_free(rs);
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "session: out of memory keeping coordinators");
  }
  hk_coordinator *coord = NULL;
  rc = hk_coordinator_new(&coord, &s->env, st);
  if (rc != HK_OK) {
    hk_raw_session_free(rs);
    return rc;
  }
  /* Old coordinators stay valid (stopped) until the session is freed. */
  if (s->coord) s->old_coords[s->nold++] = s->coord;
  s->coord = coord;
  s->rs = rs;
  hk_creation_context cctx;
  memset(&cctx, 0, sizeof cctx);
  /* What the chief's session manager restored, for hooks that
   * would otherwise save the same checkpoint again. A custom creator or a
   * worker's wait restores nothing the session knows of. */
  if (!s->creator && s->is_chief) cctx.restored_checkpoint = hk_session_manager_restored_checkpoint(s->sm);
  s->busy++;
  for (size_t i = 0; i < s->nhooks && rc == HK_OK; i++) {
    hk_hook *h = s->hooks[i];
    if (h->vt->after_create_session)
      rc = hk__callback_result(h->vt->after_create_session(h->user, rs, coord, &cctx, st), st, "after_create_session",
                               h->name);
    if (rc == HK_OK && cctx.stop_requested && !cctx.stop_hook) cctx.stop_hook = h;
  }
  s->busy--;
  if (rc != HK_OK) {
    stop_coordinator(s);
    close_raw(s);
    return rc;
  }
  if (cctx.stop_requested) { /* a stop from after_create_session */
    s->hook_stop = 1;
    hk__session_note_hook_stop(s, cctx.stop_hook, &cctx.note);
  }
  return HK_OK;
}

/* ---- recovery --------------------------------------------------------------- */

static const char *const TEXT_CREATE =
    "An error was raised while a session was being created. This may be due to a preemption of a connected worker "
    "or parameter server. A new session will be created.";
/* Called with a preemption error in `err`. Re-creates the raw session, with
 * back-off between attempts, until one creation succeeds (OK) or recovery
 * gives up or meets another error (returned; failed state when no raw
 * session remains). */
hk_code hk__session_recover(hk_session *s, episode *ep, const char *text, hk_code code, hk_status *err) {
  /* The code is what counts; the status may not have been filled. */
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
      enter_failed(s, err); /* no raw session remains */
      return rc;
    }
    text = TEXT_CREATE;
  }
}

/* ---- construction ------------------------------------------------------------ */

hk_code hk_session_options_init(hk_session_options *o, uint32_t version) {
  return HK__STRUCT_INIT(o, version, hk_session_options, HK_SESSION_OPTIONS_INIT);
}

static hk_code validate_options(const hk_session_options *o, hk_status *st) {
  HK__CHECK_VERSION(o, HK_SESSION_OPTIONS_VERSION, hk_session_options, "hk_session_new: opts", st);
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
    hk__session_flush_event_writers(s);
  }
  hk__session_free_event_writers(s);
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
  return hk__session_finish(session_new(out, o, &local), &local, st);
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
  /* A singular session always uses the chief creator. */
  s->is_chief = o->kind == HK_SESSION_SINGULAR || o->is_chief != 0;
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
  /* begin() on every hook, in order, once. */
  s->busy++;
  for (size_t i = 0; i < s->nhooks && rc == HK_OK; i++) {
    hk_hook *h = s->hooks[i];
    if (h->vt->begin) rc = hk__callback_result(h->vt->begin(h->user, s->ex, st), st, "begin", h->name);
  }
  s->busy--;
  /* The Scaffold finalizes the graph after every begin(). */
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
      rc = hk__session_recover(s, &ep, TEXT_CREATE, rc, &err);
      hk__status_copy(st, &err);
    }
  }
  if (rc != HK_OK) {
    destroy(s);
    return rc;
  }
  s->owns_creator = 1;
  s->on_free = o->on_free;
  s->on_free_user = o->on_free_user;
  *out = s;
  return HK_OK;
}

/* ---- close and free ---------------------------------------------------------- */

static int is_clean(hk_session *s, hk_code code) {
  if (code == HK_OK || code == HK_OUT_OF_RANGE) return 1;
  if (code == HK_CANCELLED) return hk_signal_fired() || (s->coord && hk_coordinator_clean_stop_requested(s->coord));
  return 0;
}

/* ---- why training stopped ------------------------------------------------- */

void hk__session_note_stop(hk_session *s, hk_stop_reason reason, hk_code code, int sig, const char *detail) {
  if (s->stop.reason != HK_STOP_NONE) return;
  s->stop.reason = reason;
  s->stop.code = code;
  s->stop.signal = sig;
  snprintf(s->stop.detail, sizeof s->stop.detail, "%s", detail ? detail : "");
}

void hk__session_note_hook_stop(hk_session *s, const hk_hook *h, const hk__stop_note *note) {
  if (s->stop.reason != HK_STOP_NONE) return;
  const char *name = h && h->name ? h->name : "a hook";
  if (note->reason != HK_STOP_NONE)
    hk__session_note_stop(s, note->reason, HK_OK, 0, note->detail[0] ? note->detail : name);
  else
    hk__session_note_stop(s, HK_STOP_HOOK, HK_OK, 0, name);
}

static void coordinator_cause(hk_session *s, hk_stop_info *out) {
  memset(out, 0, sizeof *out);
  int sig = hk_signal_fired();
  hk_status rec = HK_STATUS_INIT;
  hk_code c = s->coord ? hk_coordinator_error(&rec, s->coord) : HK_OK;
  if (c != HK_OK) {
    out->reason = HK_STOP_ERROR;
    out->code = c;
    snprintf(out->detail, sizeof out->detail, "%s", rec.message[0] ? rec.message : hk_code_name(c));
  } else if (sig != 0) {
    out->reason = HK_STOP_SIGNAL;
    out->signal = sig;
    snprintf(out->detail, sizeof out->detail, "%s", hk_signal_name(sig));
  } else if (s->coord && hk_coordinator_should_stop(s->coord)) {
    out->reason = HK_STOP_REQUESTED;
    snprintf(out->detail, sizeof out->detail, "a stop was requested on the session's coordinator");
  }
}

void hk__session_note_coordinator_stop(hk_session *s) {
  if (s->stop.reason != HK_STOP_NONE) return;
  hk_stop_info c;
  coordinator_cause(s, &c);
  if (c.reason != HK_STOP_NONE) s->stop = c;
}

void hk__session_note_run_failure(hk_session *s, hk_code rc, const hk_status *st, const hk_run_context *ctx) {
  hk_stop_info *p = &s->pending;
  /* A hook that gave a reason and then failed (the NaN guard) names it. */
  if (ctx && ctx->stop_requested && !ctx->stop_hook && ctx->note.reason != HK_STOP_NONE)
    p->reason = ctx->note.reason;
  else
    p->reason = rc == HK_OUT_OF_RANGE ? HK_STOP_END_OF_INPUT : HK_STOP_ERROR;
  p->code = rc;
  p->signal = 0;
  snprintf(p->detail, sizeof p->detail, "%s", st && st->message[0] ? st->message : hk_code_name(rc));
}

/* The cause when nothing was noted yet: the last run's failure, the
 * coordinator's, or (at close) the code the program closed with. */
static void current_cause(hk_session *s, hk_stop_info *out, int closing, hk_code exit_code) {
  if (s->stop.reason != HK_STOP_NONE) {
    *out = s->stop;
    return;
  }
  if (s->pending.reason != HK_STOP_NONE) {
    *out = s->pending;
    return;
  }
  coordinator_cause(s, out);
  if (out->reason != HK_STOP_NONE || !closing) return;
  if (exit_code == HK_OUT_OF_RANGE) {
    out->reason = HK_STOP_END_OF_INPUT;
    out->code = HK_OUT_OF_RANGE;
    snprintf(out->detail, sizeof out->detail, "the session was closed with OUT_OF_RANGE (the input is exhausted)");
  } else if (exit_code != HK_OK) {
    out->reason = HK_STOP_ERROR;
    out->code = exit_code;
    snprintf(out->detail, sizeof out->detail, "session closed with status %s", hk_code_name(exit_code));
  } else {
    out->reason = HK_STOP_CLOSED;
    snprintf(out->detail, sizeof out->detail, "the program closed the session");
  }
}

void hk__session_stop_info(const void *owner, hk_stop_info *out) { current_cause((hk_session *)owner, out, 0, HK_OK); }

hk_code hk_session_stop_reason(hk_stop_info *out, const hk_session *s, hk_status *st) {
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_stop_reason: out is NULL");
  memset(out, 0, sizeof *out);
  if (!s) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_stop_reason: session is NULL");
  current_cause((hk_session *)s, out, 0, HK_OK);
  hk_status_clear(st);
  return HK_OK;
}

hk_code hk_session_close(hk_session *s, hk_code exit_code, hk_status *st) {
  if (!s) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_close: session is NULL");
  if (s->closed) {
    hk_env_log(&s->env, HK_LOG_DEBUG, "close() on a closed session: nothing to do");
    hk_status_clear(st);
    return HK_OK; /* a second close() does nothing */
  }
  if (s->busy) return hk_status_set(st, HK_FAILED_PRECONDITION, BUSY_MESSAGE);
  if (s->open) {
    hk_env_log(&s->env, HK_LOG_DEBUG, "close(): abandoning the open run (no after_run)");
    s->open = 0;
    s->open_args = NULL;
  }
  int clean = is_clean(s, exit_code);
  if (s->stop.reason == HK_STOP_NONE) current_cause(s, &s->stop, 1, exit_code);
  hk_status end_err = HK_STATUS_INIT;
  if (clean && !s->failed && s->rs) {
    s->busy++;
    for (size_t i = 0; i < s->nhooks; i++) {
      hk_hook *h = s->hooks[i];
      /* The code is what counts. An end() that returns OK may leave
       * its status filled (an error it recovered from): that is no error. */
      hk_status why = HK_STATUS_INIT;
      if (!h->vt->end) continue;
      if (hk__callback_result(h->vt->end(h->user, s->rs, &why), &why, "end", h->name) != HK_OK) {
        hk__status_copy(&end_err, &why);
        break; /* a failed end() skips the later hooks' end() */
      }
    }
    s->busy--;
  }
  stop_coordinator(s);
  /* After the join: a thread may report an error while it is being stopped.
   * Our own stop request is clean, so it is never mistaken for one. */
  hk_status coord_err = HK_STATUS_INIT;
  hk_code cc = s->coord ? hk_coordinator_error(&coord_err, s->coord) : HK_OK;
  close_raw(s);
  s->closed = 1;
  detach_hooks(s);
  hk__session_flush_event_writers(s);
  /* The hooks are done with their directories (an asynchronous write
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
      hk__session_log_status(s, HK_LOG_ERROR, "error during close (not returned)", c);
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
    if (hk_session_close(s, HK_CANCELLED, &tmp) != HK_OK)
      hk__session_log_status(s, HK_LOG_ERROR, "close at free", &tmp);
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
hk_executor *hk_session_executor(hk_session *s) { return s && !s->closed ? s->ex : NULL; }
hk_coordinator *hk_session_coordinator(hk_session *s) { return s ? s->coord : NULL; }
hk_scaffold *hk_session_scaffold(hk_session *s) { return s ? s->scaffold : NULL; }
size_t hk_session_hook_count(const hk_session *s) { return s ? s->nhooks : 0; }
hk_hook *hk_session_hook(const hk_session *s, size_t i) { return s && i < s->nhooks ? s->hooks[i] : NULL; }
