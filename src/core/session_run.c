/*
 * A session's runs: run, the split run_begin/run_end, should_stop,
 * run_step_fn, and the spans of traced runs.
 * The per-run path (run_once) works out of scratch arrays owned by the
 * session that only ever grow, so steady-state runs allocate nothing.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "core/core_internal.h"
#include "core/session_internal.h"
#include "util/common.h"
#include "util/thread.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define STEP_STOP_MESSAGE "step_fn has requested the iterations to stop."
#define OPEN_MESSAGE "a run begun with hk_session_run_begin() is still open: end or abandon it first"

struct hk_step_context {
  hk_session *s;
  int stopping;
};

static const char *const TEXT_RUN =
    "An error was raised. This may be due to a preemption in a connected worker or parameter server. The current "
    "session will be closed and a new session will be created.";
static const char *const TEXT_SHOULD_STOP =
    "An error was raised while considering whether the session is complete. This may be due to a preemption in a "
    "connected worker or parameter server. The current session will be closed and a new session will be created.";

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

/* One list naming a tensor twice. */
static hk_code check_single_list(hk_session *s, const hk_feed *f, size_t n, const char *who, hk_status *st) {
  for (size_t i = 1; i < n; i++)
    for (size_t j = 0; j < i; j++)
      if (f[i].tensor == f[j].tensor)
        return hk_status_set(st, HK_INVALID_ARGUMENT, "%s feeds tensor %s twice", who,
                             hk_executor_handle_name(s->ex, f[i].tensor));
  return HK_OK;
}

/* Merge the hooks' feeds after the caller's. */
static hk_code merge_feeds(hk_session *s, const hk_run_args *a, size_t *nfeeds_out, const hk_feed **feeds_out,
                           hk_status *st) {
  hk_code rc = check_single_list(s, a->feeds, a->nfeeds, "the caller's feed list", st);
  if (rc != HK_OK) return rc;
  size_t hook_feeds = 0;
  for (size_t i = 0; i < s->nhooks; i++) hook_feeds += s->requests[i].nfeeds;
  if (hook_feeds == 0) {
    *feeds_out = a->feeds; /* the caller's, unchanged */
    *nfeeds_out = a->nfeeds;
    return HK_OK;
  }
  size_t total = a->nfeeds + hook_feeds;
  if (!hk__session_grow(s, (void **)&s->feeds, &s->cap_feeds, total, sizeof *s->feeds))
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "run: out of memory merging feeds");
  /* Hook feeds first, to find hook-vs-hook conflicts in order. */
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
  /* Caller's pairs first, then each hook's in list order. */
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

/* A non-preemption error yields to a recorded preemption error. */
static hk_code substitute(hk_session *s, hk_code rc, hk_status *st) {
  if (rc == HK_OK || hk_code_is_preemption(rc) || !s->coord) return rc;
  hk_status rec = HK_STATUS_INIT;
  hk_code c = hk_coordinator_error(&rec, s->coord);
  if (hk_code_is_preemption(c)) {
    hk__status_copy(st, &rec);
    return c;
  }
  return rc;
}

/* First half of a run: before_run on every hook,
 * then the merge. On failure no after_run follows and the stop flag is
 * unchanged. */
/* ---- traced runs ----------------------------------------------------------- */

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
    hk_code rc = hk__callback_result(h->on_traced_run(h->user, st), st, "after_run", h->name);
    if (rc != HK_OK) return rc; /* as a failed after_run */
  }
  return HK_OK;
}

const hk_span *hk__session_last_spans(const void *owner, size_t *n) {
  const hk_session *s = owner;
  if (s->span_last < 0) return NULL;
  *n = s->nspans[s->span_last];
  return s->spans[s->span_last];
}

/* The state checks before a run; their errors are never
 * substituted (only what the hooks and the executor return is replaced
 * by the coordinator's preemption error). */
static hk_code run_precheck(hk_session *s, hk_status *st) {
  if (s->failed) return hk__session_report_failed(s, st);
  if (s->hook_stop) return hk_status_set(st, HK_FAILED_PRECONDITION, "Run called even after should_stop requested.");
  if (!s->rs) return hk_status_set(st, HK_FAILED_PRECONDITION, "session has no raw session");
  return HK_OK;
}

static hk_code run_before(hk_session *s, const hk_run_args *a, merged_run *m, hk_status *st) {
  m->ctx.args = a;
  m->ctx.session = s->rs;
  m->ctx.stop_requested = 0;
  m->ctx.owner = s;
  m->ctx.stop_hook = NULL;
  m->ctx.note.reason = HK_STOP_NONE;
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
      rc = hk__callback_result(h->vt->before_run(h->user, &m->ctx, r, st), st, "before_run", h->name);
      if (rc == HK_OK) rc = check_request(s, i, st);
      if (rc != HK_OK) {
        s->tracing = 0;
        goto done; /* later hooks' before_run and the executor run are skipped */
      }
      if (m->ctx.stop_requested && !m->ctx.stop_hook) m->ctx.stop_hook = h;
      if (s->tracing)
        add_span(s, h->name, "before_run", t0, hk_env_monotonic(&s->env));
      else if (r->trace_level >= 1) /* traced from here on */
        trace_begin(s, hk_env_monotonic(&s->env));
    }
    nfetch += r->nfetches;
    ntarget += r->ntargets;
    if (r->trace_level > trace) trace = r->trace_level;
    if (r->timeout_ms > timeout) timeout = r->timeout_ms;
  }
  if (!hk__session_grow(s, (void **)&s->fetches, &s->cap_fetches, nfetch, sizeof *s->fetches) ||
      !hk__session_grow(s, (void **)&s->targets, &s->cap_targets, ntarget, sizeof *s->targets) ||
      !hk__session_grow(s, (void **)&s->results, &s->cap_results, nfetch, sizeof *s->results)) {
    rc = hk_status_set(st, HK_RESOURCE_EXHAUSTED, "run: out of memory merging run arguments");
    goto done;
  }
  /* Caller's fetches, then each hook's; targets deduplicated. */
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
    goto done; /* no after_run, stop flag unchanged */
  }
  /* A session-owned merged copy of the options. */
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
  if (rc != HK_OK) hk__session_note_run_failure(s, rc, st, &m->ctx);
  s->busy--;
  return rc;
}

/* Second half: one executor run with the merged
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
  if (rc != HK_OK) goto done; /* no after_run for a failed executor run */
  if (s->tracing) add_span(s, "executor", "run", t0, hk_env_monotonic(&s->env));
  for (size_t i = 0; i < s->nhooks; i++) {
    hk_hook *h = s->hooks[i];
    if (!h->vt->after_run) continue;
    const hk_run_request *r = &s->requests[i];
    hk_run_values v = {r->nfetches ? s->results + s->offsets[i] : NULL, r->nfetches, &m->opts, used_md};
    t0 = s->tracing ? hk_env_monotonic(&s->env) : 0;
    rc = hk__callback_result(h->vt->after_run(h->user, &m->ctx, &v, st), st, "after_run", h->name);
    if (rc != HK_OK) goto done; /* this call's stop requests are dropped */
    if (m->ctx.stop_requested && !m->ctx.stop_hook) m->ctx.stop_hook = h;
    if (s->tracing) add_span(s, h->name, "after_run", t0, hk_env_monotonic(&s->env));
  }
  rc = trace_complete(s, st);
  if (rc != HK_OK) goto done;
  if (m->ctx.stop_requested) { /* after the step, and sticky */
    s->hook_stop = 1;
    hk__session_note_hook_stop(s, m->ctx.stop_hook, &m->ctx.note);
  }
  if (a->nfetches) memcpy(results, s->results, a->nfetches * sizeof *results);
done:
  if (rc != HK_OK)
    hk__session_note_run_failure(s, rc, st, &m->ctx);
  else
    s->pending.reason = HK_STOP_NONE;
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
  return hk__session_finish(session_run(s, args, results, md, &local), &local, st);
}

static hk_code session_run(hk_session *s, const hk_run_args *args, hk_tensor *results, hk_run_metadata *md,
                           hk_status *st) {
  hk_code rc = check_run_entry(s, args, results, 1, "hk_session_run", st);
  if (rc != HK_OK) return rc;
  HK__CHECK_VERSION(md, HK_RUN_METADATA_VERSION, hk_run_metadata, "hk_session_run: metadata", st);
  if (!args) args = &empty_args;
  episode ep = {0, 0, 0};
  for (;;) {
    hk_status_clear(st); /* a retry must not inherit the last attempt's message */
    rc = run_once(s, args, results, md, st);
    if (s->kind != HK_SESSION_MONITORED || !hk_code_is_preemption(rc) || s->failed) return rc;
    hk_status err = HK_STATUS_INIT;
    hk__status_copy(&err, st);
    rc = hk__session_recover(s, &ep, TEXT_RUN, rc, &err); /* a preemption error: re-create and run the call again */
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
  return hk__session_finish(session_run_begin(s, args, &local), &local, st);
}

static hk_code session_run_end(hk_session *s, hk_tensor *results, hk_run_metadata *md, hk_status *st) {
  if (!s) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_run_end: session is NULL");
  if (s->busy) return hk_status_set(st, HK_FAILED_PRECONDITION, BUSY_MESSAGE);
  if (s->closed) return hk_status_set(st, HK_FAILED_PRECONDITION, CLOSED_MESSAGE);
  if (!s->open)
    return hk_status_set(st, HK_FAILED_PRECONDITION,
                         "hk_session_run_end: no run is open (call hk_session_run_begin first)");
  const hk_run_args *a = s->open_args;
  if (a->nfetches && !results)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_run_end: results is NULL with %zu fetches", a->nfetches);
  HK__CHECK_VERSION(md, HK_RUN_METADATA_VERSION, hk_run_metadata, "hk_session_run_end: metadata", st);
  s->open = 0;
  s->open_args = NULL;
  hk_status_clear(st);
  if (s->failed) return hk__session_report_failed(s, st);
  return substitute(s, run_after(s, a, &s->open_run, results, md, st), st);
}

hk_code hk_session_run_end(hk_session *s, hk_tensor *results, hk_run_metadata *md, hk_status *st) {
  hk_status local;
  local.code = HK_OK;
  local.message[0] = '\0';
  return hk__session_finish(session_run_end(s, results, md, &local), &local, st);
}

const hk_run_options *hk_session_open_run_options(const hk_session *s) {
  return s && s->open ? &s->open_run.opts : NULL;
}

void hk_session_run_abandon(hk_session *s) {
  if (!s || !s->open || s->busy) return;
  s->open = 0;
  s->open_args = NULL;
}

/* ---- should_stop ------------------------------------------------------------- */

int hk_session_should_stop(hk_session *s) {
  if (!s || s->closed || s->failed || s->hook_stop) return 1;
  if (!s->coord) return 1;
  if (!hk_coordinator_should_stop(s->coord)) return 0;
  hk_status rec = HK_STATUS_INIT;
  hk_code c = hk_coordinator_error(&rec, s->coord);
  if (s->kind == HK_SESSION_MONITORED && hk_code_is_preemption(c)) {
    if (s->busy || s->open) return 1;
    episode ep = {0, 0, 0};
    /* A stop requested while re-creating still counts. */
    return hk__session_recover(s, &ep, TEXT_SHOULD_STOP, c, &rec) != HK_OK || s->hook_stop;
  }
  hk__session_note_coordinator_stop(s);
  return 1;
}

/* ---- step_fn -------------------------------------------------------------------- */

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
  HK__CHECK_VERSION(md, HK_RUN_METADATA_VERSION, hk_run_metadata, "hk_step_context_run_with_hooks: metadata", st);
  /* Preemption errors leave step_fn; run_step_fn recovers and calls it again. */
  hk_status local;
  local.code = HK_OK;
  local.message[0] = '\0';
  return hk__session_finish(run_once(ctx->s, args ? args : &empty_args, results, md, &local), &local, st);
}

static hk_code session_run_step_fn(hk_session *s, hk_step_fn fn, void *user, hk_status *st);

hk_code hk_session_run_step_fn(hk_session *s, hk_step_fn fn, void *user, hk_status *st) {
  hk_status local;
  local.code = HK_OK;
  local.message[0] = '\0';
  return hk__session_finish(session_run_step_fn(s, fn, user, &local), &local, st);
}

static hk_code session_run_step_fn(hk_session *s, hk_step_fn fn, void *user, hk_status *st) {
  if (!s) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_run_step_fn: session is NULL");
  if (!fn) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_run_step_fn: step_fn is NULL");
  if (s->closed) return hk_status_set(st, HK_FAILED_PRECONDITION, CLOSED_MESSAGE);
  if (s->busy) return hk_status_set(st, HK_FAILED_PRECONDITION, BUSY_MESSAGE);
  if (s->open) return hk_status_set(st, HK_FAILED_PRECONDITION, "hk_session_run_step_fn: " OPEN_MESSAGE);
  if (s->failed) return hk__session_report_failed(s, st);
  episode ep = {0, 0, 0};
  for (;;) {
    hk_step_context ctx = {s, 0};
    hk_status_clear(st);
    hk_code rc = hk__callback_result(fn(&ctx, user, st), st, "step_fn", "run_step_fn");
    if (ctx.stopping && (rc == HK_OK || rc == HK_OUT_OF_RANGE)) {
      hk__session_note_stop(s, HK_STOP_REQUESTED, HK_OK, 0, "the step function called hk_step_context_request_stop()");
      return hk_status_set(st, HK_OUT_OF_RANGE, STEP_STOP_MESSAGE);
    }
    if (s->kind != HK_SESSION_MONITORED || !hk_code_is_preemption(rc) || s->failed || s->closed) return rc;
    hk_status err = HK_STATUS_INIT;
    hk__status_copy(&err, st);
    rc = hk__session_recover(s, &ep, TEXT_RUN, rc, &err);
    if (rc != HK_OK) {
      hk__status_copy(st, &err);
      return rc;
    }
  }
}
