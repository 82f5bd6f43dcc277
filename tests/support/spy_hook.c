/*
 * spy_hook — see spy_hook.h.
 */
#include "spy_hook.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const slot_names[SPY__NSLOTS] = {"begin",  "after_create_session", "before_run", "after_run", "end",
                                                    "destroy"};

/* ---- log ---------------------------------------------------------------- */

void spy_log_clear(spy_log *log) { log->n = 0; }

void spy_log_add(spy_log *log, const char *event, double time) {
  size_t n;
  if (log == NULL || log->n >= SPY_LOG_MAX) return;
  /* Longer events are cut: a copy, not snprintf, says so to -O2's
   * -Wformat-truncation. */
  n = strlen(event);
  if (n >= SPY_EVENT_MAX) n = SPY_EVENT_MAX - 1;
  memcpy(log->events[log->n].name, event, n);
  log->events[log->n].name[n] = '\0';
  log->events[log->n].time = time;
  log->n++;
}

int spy_log_find(const spy_log *log, const char *event, size_t from) {
  size_t i;
  for (i = from; i < log->n; i++)
    if (strcmp(log->events[i].name, event) == 0) return (int)i;
  return -1;
}

int spy_log_count(const spy_log *log, const char *event) {
  size_t i;
  int n = 0;
  for (i = 0; i < log->n; i++) n += strcmp(log->events[i].name, event) == 0;
  return n;
}

const char *spy_log_at(const spy_log *log, size_t i) { return i < log->n ? log->events[i].name : ""; }

void spy_log_dump(const spy_log *log) {
  size_t i;
  fprintf(stderr, "---- spy log (%zu events) ----\n", log->n);
  for (i = 0; i < log->n; i++) fprintf(stderr, "  %2zu %s @%.3f\n", i, log->events[i].name, log->events[i].time);
}

int spy_log_equals(const spy_log *log, const char *const *events, size_t n) {
  size_t i;
  int ok = log->n == n;
  for (i = 0; ok && i < n; i++) ok = strcmp(log->events[i].name, events[i]) == 0;
  if (!ok) {
    fprintf(stderr, "spy log mismatch; expected:\n");
    for (i = 0; i < n; i++) fprintf(stderr, "  %2zu %s\n", i, events[i]);
    spy_log_dump(log);
  }
  return ok;
}

/* ---- scripting ---------------------------------------------------------- */

static void script_set(spy_script *s, int calls_so_far, int nth, int count, hk_code code, const char *message) {
  memset(s, 0, sizeof(*s));
  if (nth <= 0) return;
  s->active = 1;
  s->start = calls_so_far + nth;
  s->remaining = count;
  s->code = code;
  snprintf(s->message, sizeof(s->message), "%s", message ? message : "spy failure");
}

/* `call` is the 1-based number of the current call of the slot. */
static int script_hit(spy_script *s, int call) {
  if (!s->active || call < s->start || s->remaining == 0) return 0;
  if (s->remaining > 0) s->remaining--;
  return 1;
}

/* Absolute per-slot call numbers survive spy_hook_reset, so scripts keep
 * meaning "the nth next call" across resets. */
typedef struct spy_private {
  spy_hook pub;
  int total[SPY__NSLOTS];
} spy_private;

static int enter(spy_hook *spy, spy_slot slot) {
  spy_private *p = (spy_private *)spy;
  /* Room for the longest event; spy_log_add cuts it to SPY_EVENT_MAX. */
  char ev[sizeof spy->name + sizeof ".after_create_session"];
  double t = 0;
  spy->calls[slot]++;
  p->total[slot]++;
  if (spy->hook) t = hk_env_monotonic(hk_hook_env(spy->hook));
  snprintf(ev, sizeof(ev), "%s.%s", spy->name, slot_names[slot]);
  spy_log_add(spy->log, ev, t);
  return p->total[slot];
}

static hk_code finish(spy_hook *spy, spy_slot slot, int call, void *arg, hk_status *status) {
  if (script_hit(&spy->fail[slot], call))
    return hk_status_set(status, spy->fail[slot].code, "%s", spy->fail[slot].message);
  if (spy->action) return spy->action(spy, slot, arg, status);
  return HK_OK;
}

/* ---- slots -------------------------------------------------------------- */

static hk_code s_begin(void *user, hk_executor *graph, hk_status *status) {
  spy_hook *spy = user;
  int call = enter(spy, SPY_BEGIN);
  spy->begin_graph = graph;
  return finish(spy, SPY_BEGIN, call, graph, status);
}

static hk_code s_after_create(void *user, hk_raw_session *session, hk_coordinator *coord, hk_creation_context *ctx,
                              hk_status *status) {
  spy_hook *spy = user;
  int call = enter(spy, SPY_AFTER_CREATE);
  spy->created_session = session;
  spy->coord = coord;
  spy->stop_seen_in_after_create = hk_creation_context_stop_requested(ctx);
  if (script_hit(&spy->stop[SPY_AFTER_CREATE], call)) hk_creation_context_request_stop(ctx);
  return finish(spy, SPY_AFTER_CREATE, call, ctx, status);
}

static hk_code s_before_run(void *user, hk_run_context *ctx, hk_run_request *request, hk_status *status) {
  spy_hook *spy = user;
  int call = enter(spy, SPY_BEFORE_RUN);
  spy->last_ctx_args = hk_run_context_args(ctx);
  spy->last_ctx_session = hk_run_context_session(ctx);
  if (spy->request_enabled) *request = spy->request;
  if (script_hit(&spy->stop[SPY_BEFORE_RUN], call)) hk_run_context_request_stop(ctx);
  return finish(spy, SPY_BEFORE_RUN, call, ctx, status);
}

static int64_t first_i64(const hk_tensor *t) {
  int64_t v = 0;
  if (t->data == NULL) return 0;
  if (t->rank == 0 && hk_dtype_is_integer(t->dtype)) {
    hk_status st = HK_STATUS_INIT;
    if (hk_tensor_to_i64(&v, t, "spy", &st) == HK_OK) return v;
    v = 0;
  }
  memcpy(&v, t->data, t->nbytes < sizeof(v) ? t->nbytes : sizeof(v));
  return v;
}

static hk_code s_after_run(void *user, hk_run_context *ctx, const hk_run_values *values, hk_status *status) {
  spy_hook *spy = user;
  int call = enter(spy, SPY_AFTER_RUN);
  size_t i;
  spy->stop_seen_in_after_run = hk_run_context_stop_requested(ctx);
  spy->last_ctx_args = hk_run_context_args(ctx);
  spy->last_ctx_session = hk_run_context_session(ctx);
  spy->last_nresults = values ? values->nresults : (size_t)-1;
  spy->last_results_ptr = values ? values->results : NULL;
  memset(spy->last_results, 0, sizeof(spy->last_results));
  memset(spy->last_i64, 0, sizeof(spy->last_i64));
  for (i = 0; values && values->results && i < values->nresults && i < SPY_MAX; i++) {
    spy->last_results[i] = values->results[i];
    spy->last_i64[i] = first_i64(&values->results[i]);
  }
  spy->have_options = values && values->options;
  spy->last_options_ptr = values ? values->options : NULL;
  if (spy->have_options) spy->last_options = *values->options;
  spy->last_metadata = values ? values->metadata : NULL;
  if (script_hit(&spy->stop[SPY_AFTER_RUN], call)) hk_run_context_request_stop(ctx);
  return finish(spy, SPY_AFTER_RUN, call, ctx, status);
}

static hk_code s_end(void *user, hk_raw_session *session, hk_status *status) {
  spy_hook *spy = user;
  int call = enter(spy, SPY_END);
  spy->end_session = session;
  return finish(spy, SPY_END, call, session, status);
}

static void s_destroy(void *user) {
  spy_hook *spy = user;
  spy->calls[SPY_DESTROY]++;
  ((spy_private *)spy)->total[SPY_DESTROY]++;
}

static const hk_hook_vtable spy_vtable = {
    HK_HOOK_VTABLE_VERSION, s_begin, s_after_create, s_before_run, s_after_run, s_end, s_destroy,
};

const hk_hook_vtable *spy_hook_vtable(void) { return &spy_vtable; }

/* ---- lifetime ----------------------------------------------------------- */

spy_hook *spy_hook_new(const char *name, spy_log *log, const hk_env *env) {
  hk_status st = HK_STATUS_INIT;
  spy_private *p = calloc(1, sizeof(*p));
  spy_hook *spy;
  if (p == NULL) return NULL;
  spy = &p->pub;
  snprintf(spy->name, sizeof(spy->name), "%s", name ? name : "spy");
  spy->log = log;
  if (hk_hook_new(&spy->hook, &spy_vtable, spy, spy->name, env, &st) != HK_OK) {
    fprintf(stderr, "spy_hook_new: %s: %s\n", hk_code_name(st.code), st.message);
    free(p);
    return NULL;
  }
  return spy;
}

void spy_hook_release(spy_hook *spy) {
  if (spy && spy->hook) {
    hk_hook_free(spy->hook);
    spy->hook = NULL;
  }
}

void spy_hook_free(spy_hook *spy) {
  if (spy == NULL) return;
  spy_hook_release(spy);
  free(spy);
}

void spy_hook_fail(spy_hook *spy, spy_slot slot, int nth, int count, hk_code code, const char *message) {
  script_set(&spy->fail[slot], ((spy_private *)spy)->total[slot], nth, count, code, message);
}

void spy_hook_stop_at(spy_hook *spy, spy_slot slot, int nth, int count) {
  script_set(&spy->stop[slot], ((spy_private *)spy)->total[slot], nth, count, HK_OK, "stop");
}

/* ---- request ------------------------------------------------------------ */

static void bind_request(spy_hook *spy) {
  spy->request_enabled = 1;
  spy->request.fetches = spy->request.nfetches ? spy->fetches : NULL;
  spy->request.feeds = spy->request.nfeeds ? spy->feeds : NULL;
  spy->request.targets = spy->request.ntargets ? spy->targets : NULL;
}

void spy_hook_fetch(spy_hook *spy, hk_handle tensor) {
  if (spy->request.nfetches < SPY_MAX) spy->fetches[spy->request.nfetches++] = tensor;
  bind_request(spy);
}

void spy_hook_feed_i64(spy_hook *spy, hk_handle tensor, int64_t value) {
  size_t i = spy->request.nfeeds;
  if (i >= SPY_MAX) return;
  spy->feed_values[i] = value;
  memset(&spy->feeds[i], 0, sizeof(spy->feeds[i]));
  spy->feeds[i].tensor = tensor;
  spy->feeds[i].value = hk_tensor_scalar_i64(&spy->feed_values[i]);
  spy->request.nfeeds++;
  bind_request(spy);
}

void spy_hook_target(spy_hook *spy, hk_handle op) {
  if (spy->request.ntargets < SPY_MAX) spy->targets[spy->request.ntargets++] = op;
  bind_request(spy);
}

void spy_hook_options(spy_hook *spy, int32_t trace_level, int64_t timeout_ms) {
  spy->request.trace_level = trace_level;
  spy->request.timeout_ms = timeout_ms;
  bind_request(spy);
}

void spy_hook_clear_request(spy_hook *spy) {
  memset(&spy->request, 0, sizeof(spy->request));
  spy->request_enabled = 0;
}

void spy_hook_reset(spy_hook *spy) {
  memset(spy->calls, 0, sizeof(spy->calls));
  spy->last_nresults = 0;
  spy->last_results_ptr = NULL;
  spy->have_options = 0;
  spy->last_metadata = NULL;
  spy->stop_seen_in_after_run = 0;
  spy->stop_seen_in_after_create = 0;
  spy->begin_graph = NULL;
  spy->created_session = NULL;
  spy->end_session = NULL;
}
