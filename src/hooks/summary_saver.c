/*
 * hooked — SummarySaverHook (contract group N).
 *
 * Fetches the global step on every run and, on the first run after begin()
 * and whenever its timer may trigger at the next step, the summary ops too:
 * the handles given, or the summary_op of a Scaffold, read once the
 * Scaffold is finalized. after_run writes SessionLog START on the first run
 * and each fetched Summary verbatim on summary runs, into the writer
 * the session shares for output_dir or a writer the program gives.
 *
 * Without any writer the hook writes nothing and runs no summary op: it
 * fetches the global step alone (TF would still compute the summaries, and
 * on every run, since its step bookkeeping lives behind the writer check).
 *
 * The fetch list is built at construction (summary_op given) or when the
 * Scaffold's summary_op is first read (a session creation, or the first run
 * of a hook driven directly): a run that fetches only the global step
 * allocates nothing.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "core/core.h"
#include "events/events.h"
#include "util/fs.h"
#include "util/common.h"

#include <inttypes.h>
#include <string.h>

typedef struct summary_saver {
  hk_hook *hook;
  hk_env env; /* what the struct was allocated with */
  int has_env;
  /* options */
  double save_secs;
  int64_t save_steps;
  char *output_dir;
  hk_summary_writer *given; /* borrowed */
  hk_scaffold *scaffold;    /* borrowed */
  hk_handle *fetches;       /* [GS, summary ops...]; own env */
  size_t nops;              /* summary ops in fetches */
  int ops_known;            /* fetches[1..nops] hold the summary ops */
  /* per session, set by begin() */
  hk_env senv;
  hk_executor *graph;
  hk_timer timer;
  hk__event_writer *events;
  int owns_events;
  int have_next; /* TF's _next_step is not None */
  int64_t next_step;
  int requested; /* this run fetches the summaries */
} summary_saver;

static const hk_env *own_env(const summary_saver *self) { return self->has_env ? &self->env : NULL; }

static hk_summary_writer *writer(const summary_saver *self) {
  return self->given ? self->given : (self->events ? hk__summary_writer_of(self->events) : NULL);
}

static void release_session(summary_saver *self) {
  hk__hook_event_writer_release(self->hook, "SummarySaverHook", &self->events, &self->owns_events);
  self->graph = NULL;
}

static void ss_detach(void *user) { release_session(user); }

/* The Scaffold's summary_op, once it is finalized. */
static hk_code scaffold_ops(summary_saver *self, hk_status *status) {
  size_t n = 0;
  const hk_handle *ops;
  hk_handle *grown;
  if (self->ops_known || !self->scaffold || !hk_scaffold_is_finalized(self->scaffold)) return HK_OK;
  ops = hk_scaffold_summary_op(self->scaffold, &n);
  grown = hk_env_realloc(own_env(self), self->fetches, (1 + n) * sizeof *grown);
  if (!grown) return hk_status_set(status, HK_RESOURCE_EXHAUSTED, "SummarySaverHook: out of memory");
  self->fetches = grown;
  if (n) memcpy(self->fetches + 1, ops, n * sizeof *ops);
  self->nops = n;
  self->ops_known = 1;
  return HK_OK;
}

static hk_code ss_begin(void *user, hk_executor *graph, hk_status *status) {
  summary_saver *self = user;
  hk_variable_info info;
  hk_code rc;

  release_session(self);
  hk_env_copy(&self->senv, hk_hook_env(self->hook));
  self->graph = graph;
  self->have_next = 0;
  self->requested = 0;
  if (self->scaffold) self->ops_known = 0; /* this session's Scaffold may be finalized anew */
  rc = hk_timer_init(&self->timer, self->save_secs, self->save_steps, "save_secs", "save_steps", &self->senv.clock,
                     status);
  if (rc != HK_OK) return rc;
  rc = hk_executor_global_step(&info, NULL, graph, status);
  if (rc == HK_NOT_FOUND)
    return hk_status_set(status, HK_FAILED_PRECONDITION, "Global step should be created to use SummarySaverHook.");
  if (rc != HK_OK) return rc;
  self->fetches[0] = info.tensor;
  if (!self->given && self->output_dir) {
    rc = hk__mkdirs(&self->senv, self->output_dir, status); /* output_dir, with any missing parents */
    if (rc != HK_OK) return rc;
    rc = hk__hook_event_writer(self->hook, self->output_dir, &self->events, &self->owns_events, status);
    if (rc != HK_OK) return rc;
  }
  return HK_OK;
}

static hk_code ss_after_create_session(void *user, hk_raw_session *session, hk_coordinator *coord,
                                       hk_creation_context *ctx, hk_status *status) {
  (void)session;
  (void)coord;
  (void)ctx;
  return scaffold_ops(user, status); /* finalized by now: allocate here, not in a run */
}

static hk_code ss_before_run(void *user, hk_run_context *ctx, hk_run_request *request, hk_status *status) {
  summary_saver *self = user;
  hk_code rc;
  (void)ctx;
  /* The first run and every due one; no writer: nothing to write, so no
   * summary op runs. */
  self->requested =
      writer(self) != NULL && (!self->have_next || hk_timer_should_trigger(&self->timer, self->next_step));
  request->fetches = self->fetches;
  request->nfetches = 1;
  if (self->requested) {
    rc = scaffold_ops(self, status);
    if (rc != HK_OK) return rc;
    request->nfetches += self->nops;
  }
  return HK_OK;
}

static hk_code write_summaries(summary_saver *self, hk_summary_writer *w, const hk_run_values *values, int64_t gs,
                               hk_status *status) {
  size_t i;
  for (i = 1; i < values->nresults; i++) {
    const hk_tensor *t = &values->results[i];
    if (t->dtype != HK_DTYPE_U8 || t->rank != 1 || (t->nbytes > 0 && t->data == NULL))
      return hk_status_set(status, HK_INVALID_ARGUMENT,
                           "SummarySaverHook: summary_op[%zu] (%s) is not a serialized Summary: a 1-D u8 tensor is "
                           "needed, got %s of rank %d",
                           i - 1, hk_executor_handle_name(self->graph, self->fetches[i]), hk_dtype_name(t->dtype),
                           (int)t->rank);
    hk_code rc = hk_summary_writer_summary(w, gs, t->data, t->nbytes, status);
    if (rc != HK_OK) return rc;
  }
  return HK_OK;
}

static hk_code ss_after_run(void *user, hk_run_context *ctx, const hk_run_values *values, hk_status *status) {
  summary_saver *self = user;
  hk_summary_writer *w = writer(self);
  int64_t gs;
  hk_code rc;

  if (!w) return HK_OK; /* nothing to write without a writer */
  if (values == NULL || values->nresults < 1 || values->results == NULL)
    return hk_status_set(status, HK_INTERNAL,
                         "SummarySaverHook: the global step it fetched is missing from its run values");
  rc = hk_tensor_to_i64(&gs, &values->results[0], "global_step", status);
  if (rc != HK_OK) return rc;
  gs = gs == INT64_MAX ? gs : gs + 1; /* the stale step + 1 */
  if (!self->have_next || self->requested) {
    rc = hk_raw_session_global_step(&gs, hk_run_context_session(ctx), status);
    if (rc != HK_OK) return rc;
  }
  if (!self->have_next) {
    rc = hk__event_writer_session_log(hk__event_writer_of(w), gs, HK__SESSION_LOG_START, NULL, status);
    if (rc != HK_OK) return rc;
  }
  if (self->requested) {
    hk_timer_update(&self->timer, gs, NULL, NULL);
    rc = write_summaries(self, w, values, gs, status);
    if (rc != HK_OK) return rc;
  }
  self->next_step = gs == INT64_MAX ? gs : gs + 1;
  self->have_next = 1;
  return HK_OK;
}

static hk_code ss_end(void *user, hk_raw_session *session, hk_status *status) {
  summary_saver *self = user;
  hk_summary_writer *w = writer(self);
  (void)session;
  return w ? hk_summary_writer_flush(w, status) : HK_OK; /* end() flushes the writer */
}

static void ss_destroy(void *user) {
  summary_saver *self = user;
  hk_env env;
  int has_env = self->has_env;

  release_session(self);
  if (has_env) env = self->env;
  hk_env_free(has_env ? &env : NULL, self->fetches);
  hk_env_free(has_env ? &env : NULL, self->output_dir);
  hk_env_free(has_env ? &env : NULL, self);
}

static const hk_hook_vtable summary_saver_vtable = {
    HK_HOOK_VTABLE_VERSION, ss_begin, ss_after_create_session, ss_before_run, ss_after_run, ss_end, ss_destroy,
};

hk_code hk_summary_saver_options_init(hk_summary_saver_options *opts, uint32_t version) {
  return HK__STRUCT_INIT(opts, version, hk_summary_saver_options, HK_SUMMARY_SAVER_OPTIONS_INIT);
}

hk_code hk_summary_saver_hook_new(hk_hook **out, const hk_summary_saver_options *opts, hk_status *status) {
  static const char fn[] = "hk_summary_saver_hook_new";
  summary_saver *self;
  hk_timer probe;
  size_t i, n;
  hk_code rc;

  if (out == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "%s: out is NULL", fn);
  *out = NULL;
  if (opts == NULL)
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         "%s: opts is NULL: Exactly one of scaffold or summary_op must be provided.", fn);
  HK__CHECK_VERSION(opts, HK_SUMMARY_SAVER_OPTIONS_VERSION, hk_summary_saver_options, "hk_summary_saver_hook_new: opts",
                    status);
  rc = hk_env_check(opts->env, "hk_summary_saver_hook_new: opts->env", status);
  if (rc != HK_OK) return rc;
  n = opts->nsummary_op;
  if (n && !opts->summary_op)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "%s: summary_op is NULL with nsummary_op %zu", fn, n);
  if ((opts->scaffold != NULL) == (n > 0))
    return hk_status_set(status, HK_INVALID_ARGUMENT, "Exactly one of scaffold or summary_op must be provided.");
  for (i = 0; i < n; i++)
    if (opts->summary_op[i] == HK_NO_HANDLE)
      return hk_status_set(status, HK_INVALID_ARGUMENT, "%s: summary_op[%zu] is unset", fn, i);
  /* Both cadences given, or a zero one, are refused. */
  rc = hk_timer_init(&probe, opts->save_secs, opts->save_steps, "save_secs", "save_steps", NULL, status);
  if (rc != HK_OK) return rc;
  if (opts->output_dir != NULL && opts->output_dir[0] == '\0')
    return hk_status_set(status, HK_INVALID_ARGUMENT, "%s: output_dir is empty", fn);

  self = hk_env_calloc(opts->env, 1, sizeof(*self));
  if (self == NULL) return hk_status_set(status, HK_RESOURCE_EXHAUSTED, "SummarySaverHook: out of memory");
  if (opts->env != NULL) {
    hk_env_copy(&self->env, opts->env);
    self->has_env = 1;
  }
  self->save_secs = opts->save_secs;
  self->save_steps = opts->save_steps;
  self->given = opts->summary_writer;
  self->scaffold = opts->scaffold;
  self->fetches = hk_env_calloc(own_env(self), 1 + n, sizeof *self->fetches);
  if (self->fetches && n) {
    memcpy(self->fetches + 1, opts->summary_op, n * sizeof *opts->summary_op);
    self->nops = n;
    self->ops_known = 1;
  }
  if (!self->fetches ||
      (opts->output_dir != NULL && !(self->output_dir = hk_env_strdup(own_env(self), opts->output_dir)))) {
    hk_env_free(own_env(self), self->fetches);
    hk_env_free(own_env(self), self);
    return hk_status_set(status, HK_RESOURCE_EXHAUSTED, "SummarySaverHook: out of memory");
  }
  rc = hk_hook_new(out, &summary_saver_vtable, self, "SummarySaverHook", opts->env, status);
  if (rc != HK_OK) {
    hk_env_free(own_env(self), self->fetches);
    hk_env_free(own_env(self), self->output_dir);
    hk_env_free(own_env(self), self);
    return rc;
  }
  self->hook = *out;
  hk__hook_set_on_detach(*out, ss_detach);
  return HK_OK;
}
