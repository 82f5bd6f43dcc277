/*
 * ProfilerHook: every save_steps steps (or
 * save_secs seconds) it asks for a traced run and writes
 * "<output_dir>/timeline-<GS>.json", a Chrome trace-event file that
 * Perfetto and chrome://tracing open: one span for the whole run, one per
 * hook callback and for the executor run (the session's spans), and one
 * per op the executor traced (the graph executor's ops; the host loop's
 * "step", the program's own math), all on the training thread's id. Beside
 * it, as TensorFlow's hook does, it writes a tagged_run_metadata event
 * "step_<GS>" into the event file of output_dir (the writer the session
 * shares for that directory): a RunMetadata whose step_stats hold the
 * same spans and ops as NodeExecStats.
 *
 * TensorFlow writes both in the traced run's after_run. Here the spans of a
 * run are complete only once every after_run of it has run, and this hook's
 * after_run comes first when it is placed first (so that its trace covers
 * every other hook): the session calls back once every after_run of the
 * traced run has run, before run() returns, and both are written then (a
 * deliberate departure). Driven without a session (no callback), the
 * hook writes at its next before_run or at end().
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "core/core.h"
#include "events/events.h"
#include "events/proto.h"
#include "util/common.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* The devices of the run metadata: the session's spans, the executor's ops. */
#define SESSION_DEVICE "/hooked/session"
#define OPS_DEVICE "/job:localhost/replica:0/task:0/device:CPU:0"

typedef struct profiler {
  hk_hook *hook;
  hk_env env; /* the options' env (has_env), for the struct itself */
  int has_env;
  char *dir; /* output_dir; "" = the current directory */
  double save_secs;
  int64_t save_steps;

  /* per session */
  hk_env senv; /* the env in force at begin(): buf and ops are allocated through it */
  int have_senv;
  hk_handle gs;
  hk_timer timer;
  int have_next; /* next_step is known (not on the first run) */
  int64_t next_step;
  int requested; /* this run asked for a trace */
  /* a traced run waiting to be written */
  int pending;
  int64_t pending_step;
  hk_op_trace *ops; /* copies of the executor's trace (names borrowed from the executor) */
  size_t nops, cap_ops;
  char *buf; /* the JSON being built */
  size_t len, cap;
  hk__node_stats *nodes; /* the run metadata's, spans then ops */
  size_t cap_nodes;
  unsigned char *pb; /* the serialized RunMetadata */
  size_t cap_pb;
  char step_name[32];       /* "step <GS>", the whole run's span */
  hk__event_writer *events; /* output_dir's */
  int owns_events;          /* driven outside a session: a writer of our own */
} profiler;

static const hk_env *own_env(const profiler *p) { return p->has_env ? &p->env : NULL; }

/* ---- JSON ------------------------------------------------------------------------------ */

static int reserve(profiler *p, size_t more) {
  if (p->len + more + 1 <= p->cap) return 1;
  size_t cap = p->cap ? p->cap : 4096;
  while (cap < p->len + more + 1) cap *= 2;
  char *b = hk_env_realloc(&p->senv, p->buf, cap);
  if (!b) return 0;
  p->buf = b;
  p->cap = cap;
  return 1;
}

static int put(profiler *p, const char *s, size_t n) {
  if (!reserve(p, n)) return 0;
  memcpy(p->buf + p->len, s, n);
  p->len += n;
  p->buf[p->len] = '\0';
  return 1;
}

static int putf(profiler *p, const char *fmt, ...) HK_PRINTF(2, 3);
static int putf(profiler *p, const char *fmt, ...) {
  char tmp[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  return n >= 0 && (size_t)n < sizeof tmp && put(p, tmp, (size_t)n);
}

/* A JSON string: quotes, backslashes and control bytes escaped. */
static int put_string(profiler *p, const char *s) {
  if (!put(p, "\"", 1)) return 0;
  for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++) {
    if (*c == '"' || *c == '\\') {
      char e[2] = {'\\', (char)*c};
      if (!put(p, e, 2)) return 0;
    } else if (*c < 0x20) {
      if (!putf(p, "\\u%04x", *c)) return 0;
    } else if (!put(p, (const char *)c, 1)) {
      return 0;
    }
  }
  return put(p, "\"", 1);
}

/* One complete ("X") event; times in microseconds from t0. */
static int put_event(profiler *p, int first, const char *name, const char *suffix, const char *cat, double start,
                     double end, double t0, uint64_t tid) {
  double ts = (start - t0) * 1e6, dur = (end - start) * 1e6;
  if (dur < 0) dur = 0;
  if (!first && !put(p, ",\n", 2)) return 0;
  if (!put(p, "{\"name\":", 8)) return 0;
  if (suffix) {
    char both[512];
    snprintf(both, sizeof both, "%s.%s", name ? name : "", suffix);
    if (!put_string(p, both)) return 0;
  } else if (!put_string(p, name)) {
    return 0;
  }
  if (!put(p, ",\"cat\":", 7) || !put_string(p, cat)) return 0;
  return putf(p, ",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":1,\"tid\":%" PRIu64 "}", ts, dur, tid);
}

/* The timeline of the pending traced run: the whole run, its hook and
 * executor spans, and the executor's ops (inside the executor span). */
static hk_code build_timeline(profiler *p, const hk_span *spans, size_t n, hk_status *st) {
  const hk_span *whole = NULL;
  uint64_t tid = 0;
  double t0 = 0;
  for (size_t i = 0; i < n; i++)
    if (strcmp(spans[i].what, "session.run") == 0) whole = &spans[i];
  if (whole) {
    t0 = whole->start_secs;
    tid = whole->thread;
  } else if (p->nops) {
    t0 = p->ops[0].start_secs;
  }
  p->len = 0;
  int ok =
      putf(
          p,
          "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"generator\":\"hooked %s ProfilerHook\",\"global_step\":%" PRId64
          "},\n\"traceEvents\":[\n",
          hk_version(), p->pending_step) &&
      putf(p, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":\"hooked\"}},\n") &&
      putf(p,
           "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%" PRIu64
           ",\"args\":{\"name\":\"training thread\"}}",
           tid);
  if (ok && whole) ok = put_event(p, 0, p->step_name, NULL, "step", whole->start_secs, whole->end_secs, t0, tid);
  for (size_t i = 0; ok && i < n; i++) {
    if (&spans[i] == whole) continue;
    int exec = strcmp(spans[i].hook, "executor") == 0;
    ok = put_event(p, 0, exec ? "executor" : spans[i].hook, exec ? "run" : spans[i].what, exec ? "executor" : "hook",
                   spans[i].start_secs, spans[i].end_secs, t0, spans[i].thread);
  }
  for (size_t i = 0; ok && i < p->nops; i++)
    ok = put_event(p, 0, p->ops[i].op_name, NULL, "op", p->ops[i].start_secs, p->ops[i].end_secs, t0, tid);
  if (ok) ok = put(p, "\n]}\n", 4);
  if (!ok) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "ProfilerHook: out of memory building the timeline");
  return HK_OK;
}

/* ---- run metadata ----------------------------------------------------------------------- */

static int64_t micros(double secs) { return isfinite(secs) ? (int64_t)llround(secs * 1e6) : 0; }

/* The pending traced run as a RunMetadata: the session's spans on one
 * device, the executor's ops on another, named as in the timeline, their
 * start times moved to the wall clock as TensorFlow's are. */
static hk_code build_run_metadata(profiler *p, const hk_span *spans, size_t n, size_t *size, hk_status *st) {
  const hk_env *env = hk_hook_env(p->hook);
  double to_wall = hk_env_wall(env) - hk_env_monotonic(env);
  uint32_t tid = 0;
  size_t k = 0;
  if (n + p->nops > p->cap_nodes) {
    hk__node_stats *nodes = hk_env_realloc(&p->senv, p->nodes, (n + p->nops) * sizeof *nodes);
    if (!nodes) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "ProfilerHook: out of memory for the run metadata");
    p->nodes = nodes;
    p->cap_nodes = n + p->nops;
  }
  /* In the timeline's order: the whole run first, then the others. */
  size_t first = n;
  for (size_t i = 0; i < n; i++)
    if (strcmp(spans[i].what, "session.run") == 0) first = i;
  for (size_t j = 0; j < n; j++) {
    size_t i = first == n ? j : j == 0 ? first : j - (j <= first);
    hk__node_stats *s = &p->nodes[k++];
    int whole = strcmp(spans[i].what, "session.run") == 0, exec = strcmp(spans[i].hook, "executor") == 0;
    s->name = whole ? p->step_name : exec ? "executor" : spans[i].hook;
    s->part = whole ? NULL : exec ? "run" : spans[i].what;
    s->kind = whole ? "step" : exec ? "executor" : "hook";
    s->start_micros = micros(spans[i].start_secs + to_wall);
    s->dur_micros = micros(spans[i].end_secs - spans[i].start_secs);
    s->thread_id = (uint32_t)spans[i].thread;
    if (whole) tid = s->thread_id;
  }
  for (size_t i = 0; i < p->nops; i++) {
    hk__node_stats *s = &p->nodes[k++];
    s->name = p->ops[i].op_name ? p->ops[i].op_name : "";
    s->part = NULL;
    s->kind = "op";
    s->start_micros = micros(p->ops[i].start_secs + to_wall);
    s->dur_micros = micros(p->ops[i].end_secs - p->ops[i].start_secs);
    s->thread_id = tid;
  }
  hk__device_stats devs[2] = {{SESSION_DEVICE, p->nodes, n}, {OPS_DEVICE, p->nodes + n, p->nops}};
  *size = hk__run_metadata_size(devs, 2);
  if (*size > p->cap_pb) {
    unsigned char *pb = hk_env_realloc(&p->senv, p->pb, *size);
    if (!pb) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "ProfilerHook: out of memory for the run metadata");
    p->pb = pb;
    p->cap_pb = *size;
  }
  hk__run_metadata(p->pb, devs, 2);
  return HK_OK;
}

/* Write the pending timeline (atomically: temporary name, fsync, rename),
 * then the run-metadata event. */
static hk_code flush_pending(profiler *p, hk_status *st) {
  if (!p->pending) return HK_OK;
  p->pending = 0;
  size_t n = 0, size = 0;
  const hk_span *spans = hk_hook_last_traced_spans(p->hook, &n);
  snprintf(p->step_name, sizeof p->step_name, "step %" PRId64, p->pending_step);
  hk_code rc = build_timeline(p, spans, n, st);
  if (rc != HK_OK) return rc;
  char path[4096];
  int w = snprintf(path, sizeof path, "%s%stimeline-%" PRId64 ".json", p->dir, p->dir[0] ? "/" : "", p->pending_step);
  if (w < 0 || (size_t)w >= sizeof path)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "ProfilerHook: output_dir '%s' is too long", p->dir);
  hk_hook_log(p->hook, HK_LOG_INFO, "Saving timeline for %" PRId64 " into '%s'.", p->pending_step, path);
  rc = hk_fs_write_file_atomic(hk_hook_env(p->hook), path, p->buf, p->len, st);
  if (rc != HK_OK) return rc;
  rc = build_run_metadata(p, spans, n, &size, st);
  if (rc != HK_OK) return rc;
  char tag[32];
  snprintf(tag, sizeof tag, "step_%" PRId64, p->pending_step);
  return hk__event_writer_run_metadata(p->events, p->pending_step, tag, p->pb, size, st);
}

/* The session's callback once every after_run of a traced run has run. */
static hk_code prof_traced_run(void *user, hk_status *st) { return flush_pending(user, st); }

/* ---- callbacks ------------------------------------------------------------------------- */

/* Per-session buffers go back to the env they came from; the event
 * writer a session lent is forgotten, one of our own freed. */
static void release_buffers(profiler *p) {
  hk__hook_event_writer_release(p->hook, "ProfilerHook", &p->events, &p->owns_events);
  if (!p->have_senv) return;
  hk_env_free(&p->senv, p->buf);
  hk_env_free(&p->senv, p->ops);
  hk_env_free(&p->senv, p->nodes);
  hk_env_free(&p->senv, p->pb);
  p->buf = NULL;
  p->ops = NULL;
  p->nodes = NULL;
  p->pb = NULL;
  p->len = p->cap = p->nops = p->cap_ops = p->cap_nodes = p->cap_pb = 0;
  p->have_senv = 0;
}

static void prof_detach(void *user) { release_buffers(user); }

static hk_code prof_begin(void *user, hk_executor *graph, hk_status *st) {
  profiler *p = user;
  hk_variable_info info;
  release_buffers(p);
  hk_env_copy(&p->senv, hk_hook_env(p->hook));
  p->have_senv = 1;
  p->have_next = 0;
  p->requested = 0;
  p->pending = 0;
  hk_code rc = hk_timer_init(&p->timer, p->save_secs, p->save_steps, "save_secs", "save_steps",
                             &hk_hook_env(p->hook)->clock, st);
  if (rc != HK_OK) return rc;
  rc = hk_executor_global_step(&info, NULL, graph, st);
  if (rc == HK_NOT_FOUND)
    return hk_status_set(st, HK_FAILED_PRECONDITION, "Global step should be created to use ProfilerHook.");
  if (rc != HK_OK) return rc;
  p->gs = info.tensor;
  if (p->dir[0]) {
    rc = hk_fs_make_dirs(hk_hook_env(p->hook), p->dir, st); /* output_dir, with any missing parents */
    if (rc != HK_OK) return rc;
  }
  return hk__hook_event_writer(p->hook, p->dir, &p->events, &p->owns_events, st);
}

static hk_code prof_before_run(void *user, hk_run_context *ctx, hk_run_request *request, hk_status *st) {
  profiler *p = user;
  (void)ctx;
  /* In a session the traced run was written when it completed: a run still
   * pending failed after this hook's after_run and left no spans. */
  if (hk__hook_serves_session(p->hook)) p->pending = 0;
  hk_code rc = flush_pending(p, st);
  if (rc != HK_OK) return rc;
  /* The first run is never traced. */
  p->requested = p->have_next && hk_timer_should_trigger(&p->timer, p->next_step);
  request->fetches = &p->gs;
  request->nfetches = 1;
  request->trace_level = p->requested ? 3 : 0;
  return HK_OK;
}

static hk_code prof_after_run(void *user, hk_run_context *ctx, const hk_run_values *values, hk_status *st) {
  profiler *p = user;
  int64_t stale, gs;
  if (!values || values->nresults < 1)
    return hk_status_set(st, HK_INTERNAL, "ProfilerHook: the global step it fetched is missing from its run values");
  hk_code rc = hk_tensor_to_i64(&stale, &values->results[0], "global_step", st);
  if (rc != HK_OK) return rc;
  if (!p->have_next) hk_timer_update(&p->timer, stale, NULL, NULL);
  gs = stale + 1;
  if (p->requested) {
    /* Read GS again, keep the executor's trace until the spans of
     * this run are complete (every after_run of it has run). */
    rc = hk_raw_session_global_step(&gs, hk_run_context_session(ctx), st);
    if (rc != HK_OK) return rc;
    hk_timer_update(&p->timer, gs, NULL, NULL);
    const hk_run_metadata *md = values->metadata;
    size_t n = md ? md->ntrace : 0;
    if (n > p->cap_ops) {
      hk_op_trace *ops = hk_env_realloc(&p->senv, p->ops, n * sizeof *ops);
      if (!ops) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "ProfilerHook: out of memory for %zu traced ops", n);
      p->ops = ops;
      p->cap_ops = n;
    }
    if (n) memcpy(p->ops, md->trace, n * sizeof *p->ops);
    p->nops = n;
    p->pending = 1;
    p->pending_step = gs;
  }
  p->next_step = gs + 1;
  p->have_next = 1;
  return HK_OK;
}

static hk_code prof_end(void *user, hk_raw_session *session, hk_status *st) {
  profiler *p = user;
  (void)session;
  if (hk__hook_serves_session(p->hook)) p->pending = 0; /* as in before_run */
  return flush_pending(p, st);
}

static void prof_destroy(void *user) {
  profiler *p = user;
  hk_env env = p->env;
  const hk_env *e = p->has_env ? &env : NULL;
  release_buffers(p);
  hk_env_free(e, p->dir);
  hk_env_free(e, p);
}

static const hk_hook_vtable profiler_vtable = {
    .version = HK_HOOK_VTABLE_VERSION,
    .begin = prof_begin,
    .before_run = prof_before_run,
    .after_run = prof_after_run,
    .end = prof_end,
    .destroy = prof_destroy,
};

/* ---- construction ---------------------------------------------------------------------- */

hk_code hk_profiler_options_init(hk_profiler_options *opts, uint32_t version) {
  return HK__STRUCT_INIT(opts, version, hk_profiler_options, HK_PROFILER_OPTIONS_INIT);
}

hk_code hk_profiler_hook_new(hk_hook **out, const hk_profiler_options *opts, hk_status *st) {
  hk_timer probe;
  if (out) *out = NULL;
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_profiler_hook_new: out is NULL");
  if (!opts)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_profiler_hook_new: opts is NULL (a cadence is required)");
  HK__CHECK_VERSION(opts, HK_PROFILER_OPTIONS_VERSION, hk_profiler_options, "hk_profiler_hook_new: opts", st);
  hk_code rc = hk_env_check(opts->env, "hk_profiler_hook_new: env", st);
  if (rc != HK_OK) return rc;
  rc = hk_timer_init(&probe, opts->save_secs, opts->save_steps, "save_secs", "save_steps", NULL, st);
  if (rc != HK_OK) return rc;
  profiler *p = hk_env_calloc(opts->env, 1, sizeof *p);
  if (!p) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_profiler_hook_new: out of memory");
  p->has_env = opts->env != NULL;
  hk_env_copy(&p->env, opts->env);
  p->save_secs = opts->save_secs;
  p->save_steps = opts->save_steps;
  p->dir = hk_env_strdup(own_env(p), opts->output_dir ? opts->output_dir : "");
  if (!p->dir) {
    hk_env_free(own_env(p), p);
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_profiler_hook_new: out of memory");
  }
  rc = hk_hook_new(&p->hook, &profiler_vtable, p, "ProfilerHook", own_env(p), st);
  if (rc != HK_OK) {
    hk_env_free(own_env(p), p->dir);
    hk_env_free(own_env(p), p);
    return rc;
  }
  hk__hook_set_on_traced_run(p->hook, prof_traced_run);
  hk__hook_set_on_detach(p->hook, prof_detach);
  *out = p->hook;
  return HK_OK;
}
