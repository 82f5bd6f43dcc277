/*
 * What a save of either checkpoint saver hook runs: the listeners'
 * callbacks around it, the Saver it uses, the metric best-k retention
 * ranks it by, the graph description beside it, the SessionLog event
 * after it, and the synchronous save itself. checkpoint_saver.c holds the
 * hook's callbacks and construction.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L

#include "ckpt/ckpt.h"
#include "events/events.h"
#include "hooks/checkpoint_saver_internal.h"
#include "util/common.h"
#include "util/fs.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define SESSION_LOG_CHECKPOINT 3
static const char *listener_name(const ckpt_hook *self, size_t i, char *buf, size_t cap) {
  if (self->listeners[i].name != NULL) return self->listeners[i].name;
  snprintf(buf, cap, "listener %zu", i);
  return buf;
}

/* ---- listeners --------------------------------------------------------------- */

hk_code hk__ckpt_hook_listeners_begin(ckpt_hook *self, hk_status *st) {
  size_t i;
  for (i = 0; i < self->nlisteners; i++) {
    const listener *l = &self->listeners[i];
    char nb[32];
    hk_code rc;
    if (l->vt->begin == NULL) continue;
    rc = l->vt->begin(l->user, st);
    if (rc != HK_OK)
      return hk__callback_result(rc, st, "CheckpointSaverListener.begin", listener_name(self, i, nb, sizeof nb));
  }
  return HK_OK;
}

hk_code hk__ckpt_hook_listeners_before_save(ckpt_hook *self, hk_raw_session *rs, int64_t step, hk_status *st) {
  size_t i;
  hk_hook_log(self->hook, HK_LOG_DEBUG, "Calling checkpoint listeners before saving checkpoint %" PRId64 "...", step);
  for (i = 0; i < self->nlisteners; i++) {
    const listener *l = &self->listeners[i];
    char nb[32];
    hk_code rc;
    if (l->vt->before_save == NULL) continue;
    rc = l->vt->before_save(l->user, rs, step, st);
    if (rc != HK_OK)
      return hk__callback_result(rc, st, "CheckpointSaverListener.before_save", listener_name(self, i, nb, sizeof nb));
  }
  return HK_OK;
}

/* Every listener is called even after one asked to stop. */
hk_code hk__ckpt_hook_listeners_after_save(ckpt_hook *self, hk_raw_session *rs, int64_t step, int *stop,
                                           hk_status *st) {
  size_t i;
  hk_hook_log(self->hook, HK_LOG_DEBUG, "Calling checkpoint listeners after saving checkpoint %" PRId64 "...", step);
  for (i = 0; i < self->nlisteners; i++) {
    const listener *l = &self->listeners[i];
    char nb[32];
    int want_stop = 0;
    hk_code rc;
    if (l->vt->after_save == NULL) continue;
    rc = l->vt->after_save(l->user, rs, step, &want_stop, st);
    if (rc != HK_OK)
      return hk__callback_result(rc, st, "CheckpointSaverListener.after_save", listener_name(self, i, nb, sizeof nb));
    if (want_stop) {
      hk_hook_log(self->hook, HK_LOG_INFO, "A CheckpointSaverListener requested that training be stopped. listener: %s",
                  listener_name(self, i, nb, sizeof nb));
      *stop = 1;
    }
  }
  return HK_OK;
}

hk_code hk__ckpt_hook_listeners_end(ckpt_hook *self, hk_raw_session *rs, int64_t step, hk_status *st) {
  size_t i;
  for (i = 0; i < self->nlisteners; i++) {
    const listener *l = &self->listeners[i];
    char nb[32];
    hk_code rc;
    if (l->vt->end == NULL) continue;
    rc = l->vt->end(l->user, rs, step, st);
    if (rc != HK_OK)
      return hk__callback_result(rc, st, "CheckpointSaverListener.end", listener_name(self, i, nb, sizeof nb));
  }
  return HK_OK;
}

/* ---- shared pieces of a save ------------------------------------------------- */

hk_saver *hk__ckpt_hook_peek_saver(const ckpt_hook *self) {
  hk_saver *s = self->opt_saver;
  hk_scaffold *session_scaffold;

  if (self->saver != NULL) return self->saver;
  if (s == NULL && self->opt_scaffold != NULL) s = hk_scaffold_saver(self->opt_scaffold);
  if (s == NULL && (session_scaffold = hk_hook_scaffold(self->hook)) != NULL) s = hk_scaffold_saver(session_scaffold);
  return s;
}

int hk__ckpt_hook_follower(const ckpt_hook *self) { return self->gsize > 1 && self->grank != 0; }

/* The explicit saver, the given scaffold's, the session's Scaffold's. */
hk_code hk__ckpt_hook_resolve_saver(ckpt_hook *self, hk_status *st) {
  hk_saver *s;
  int size = 1;

  if (self->saver != NULL) return HK_OK;
  s = hk__ckpt_hook_peek_saver(self);
  if (s == NULL) return hk_status_set(st, HK_FAILED_PRECONDITION, "No saver available: provide a saver or a scaffold.");
  hk_saver_group_place(s, NULL, &size);
  if (size != self->gsize)
    return hk_status_set(st, HK_FAILED_PRECONDITION,
                         "%s: the Saver's group has %d rank(s) but begin() saw %d (no Saver, or another, was found "
                         "then): give the hook its Saver (opts->saver), or a Scaffold that has it, before the session "
                         "starts",
                         self->kind, size, self->gsize);
  self->saver = s;
  /* The Saver ranks what this hook saves (the writer is idle: no
   * save has started yet in this session). */
  if (self->best_k > 0) hk__saver_set_best(s, self->best_k, self->best_mode);
  hk__ckpt_hook_check_saver(self, s);
  return HK_OK;
}

/* best_metric's value now, for the checkpoint of `step` (the caller
 * hands it to the Saver just before the write). Read before the variables'
 * views are taken: a run would invalidate them. NaN without best_k. */
hk_code hk__ckpt_hook_read_metric(ckpt_hook *self, hk_raw_session *rs, int64_t step, double *out, hk_status *st) {
  hk_run_args args;
  hk_tensor result;
  hk_status why = HK_STATUS_INIT;
  double value;
  hk_code rc;

  *out = NAN;
  if (self->best_k <= 0) return HK_OK;
  memset(&args, 0, sizeof args);
  memset(&result, 0, sizeof result);
  args.fetches = &self->metric;
  args.nfetches = 1;
  rc = hk_raw_session_run(rs, &args, &result, NULL, &why);
  if (rc == HK_OK) rc = hk_tensor_to_f64(&value, &result, self->best_metric, &why);
  if (rc != HK_OK)
    return hk_status_set(st, rc, "%s: best_metric '%s' for the checkpoint of step %" PRId64 ": %s", self->kind,
                         self->best_metric, step, why.message);
  hk_hook_log(self->hook, HK_LOG_DEBUG, "%s: checkpoint %" PRId64 " has %s = %g.", self->kind, step, self->best_metric,
              value);
  *out = value;
  return HK_OK;
}

static hk_code graph_sink(void *user, const char *text, size_t len, hk_status *st) {
  ckpt_hook *self = user;

  if (len == 0) return HK_OK;
  if (len > SIZE_MAX / 2 - self->graph_len)
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "%s: graph description too large", self->graph_path);
  if (self->graph_len + len + 1 > self->graph_cap) {
    size_t cap = self->graph_cap ? self->graph_cap : 4096;
    char *p;
    while (cap < self->graph_len + len + 1) cap *= 2;
    p = hk_env_realloc(&self->senv, self->graph_text, cap);
    if (p == NULL)
      return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "%s: out of memory describing the graph", self->graph_path);
    self->graph_text = p;
    self->graph_cap = cap;
  }
  memcpy(self->graph_text + self->graph_len, text, len);
  self->graph_len += len;
  self->graph_text[self->graph_len] = '\0';
  return HK_OK;
}

/* Capture the graph description once per session; an executor that cannot
 * describe its graph makes graph.txt be skipped, logged once. */
hk_code hk__ckpt_hook_capture_graph(ckpt_hook *self, hk_status *st) {
  hk_status local = HK_STATUS_INIT;
  hk_code rc;

  if (self->graph_state != GRAPH_UNKNOWN) return HK_OK;
  self->graph_len = 0;
  rc = hk_executor_describe(self->graph, graph_sink, self, &local);
  if (rc == HK_UNIMPLEMENTED) {
    self->graph_state = GRAPH_UNDESCRIBED;
    hk_hook_log(self->hook, HK_LOG_INFO, "%s: the executor does not describe its graph; %s is not written (%s)",
                self->kind, GRAPH_FILE, local.message);
    return HK_OK;
  }
  if (rc != HK_OK) {
    hk__status_copy(st, &local);
    return rc;
  }
  self->graph_state = GRAPH_CAPTURED;
  return HK_OK;
}

hk_code hk__ckpt_hook_write_graph_file(ckpt_hook *self, hk_status *st) {
  hk_code rc;

  if (hk__ckpt_hook_follower(self)) return HK_OK; /* the chief's file */
  rc = hk__ckpt_hook_capture_graph(self, st);
  if (rc != HK_OK || self->graph_state != GRAPH_CAPTURED) return rc;
  return hk__write_file_atomic(&self->senv, self->graph_path, self->graph_text, self->graph_len, st);
}

hk_code hk__ckpt_hook_write_event(ckpt_hook *self, int64_t step, hk_status *st) {
  if (self->events == NULL) return HK_OK; /* a follower of a group writes no events */
  return hk__event_writer_session_log(self->events, step, SESSION_LOG_CHECKPOINT, self->save_path, st);
}

/* This rank failed before its part of the save of `step` (rc, st): over a
 * group the other ranks are in that collective save already, so the rank
 * joins it as failed and every rank fails it together instead of waiting
 * for this one. The error this rank returns stays its own. */
void hk__ckpt_hook_join_failed(ckpt_hook *self, int64_t step, hk_code rc, const hk_status *st) {
  hk_status why = HK_STATUS_INIT;

  if (self->gsize <= 1 || self->saver == NULL) return;
  (void)hk_saver_fail_save(self->saver, self->save_path, step, rc, st != NULL ? st->message : NULL, &why);
  hk_hook_log(self->hook, HK_LOG_DEBUG, "%s: rank %d of %d failed its part of checkpoint %" PRId64 " into %s: %s",
              self->kind, self->grank, self->gsize, step, self->save_path, why.message);
}

/* One synchronous save at `step`. */
hk_code hk__ckpt_hook_save_sync(ckpt_hook *self, hk_raw_session *rs, int64_t step, int *stop, hk_status *st) {
  double metric;
  hk_code rc = hk__ckpt_hook_resolve_saver(self, st);

  if (rc != HK_OK) return rc;
  rc = hk__ckpt_hook_listeners_before_save(self, rs, step, st);
  if (rc == HK_OK) {
    hk_hook_log(self->hook, HK_LOG_INFO, "Saving checkpoints for %" PRId64 " into %s.", step, self->save_path);
    rc = hk__ckpt_hook_read_metric(self, rs, step, &metric, st);
  }
  if (rc != HK_OK) {
    hk__ckpt_hook_join_failed(self, step, rc, st);
    return rc;
  }
  if (self->best_k > 0) hk__saver_note_metric(self->saver, metric);
  /* The graph is described once per creation, in graph.txt; no file
   * beside the checkpoint repeats it. */
  rc = hk_saver_save(NULL, self->saver, rs, self->save_path, step, HK_SAVE_DEFAULT, st);
  /* A save that failed before its write must not leave the value to the next. */
  if (rc != HK_OK && self->best_k > 0) hk__saver_note_metric(self->saver, NAN);
  if (rc != HK_OK) return rc;
  if (self->async) {
    self->have_written = 1;
    self->last_written = step;
  }
  rc = hk__ckpt_hook_write_event(self, step, st);
  if (rc != HK_OK) return rc;
  return hk__ckpt_hook_listeners_after_save(self, rs, step, stop, st);
}

/* ---- restore_best (Keras' restore_best_weights) ---------------------------------- */

hk_code hk__ckpt_hook_restore_best(ckpt_hook *self, hk_raw_session *rs, hk_status *st) {
  hk_executor *ex = hk_raw_session_executor(rs);
  const char *latest = self->saver ? hk_saver_latest_filename(self->saver) : NULL;
  char *prefix = NULL;
  double value = 0.0;
  hk_status why = HK_STATUS_INIT;
  hk_code rc = hk_checkpoint_best(&prefix, &value, &self->senv, self->dir, latest, &why);
  if (rc != HK_OK)
    return hk_status_set(st, rc, "%s: restore_best: %s; the variables keep their values", self->kind, why.message);
  size_t total = hk_executor_variable_count(ex), n = 0, gs = (size_t)-1;
  const char **names = hk_env_calloc(&self->senv, total ? total : 1, sizeof *names);
  if (!names) {
    hk_env_free(&self->senv, prefix);
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "%s: restore_best: out of memory", self->kind);
  }
  (void)hk_executor_global_step(NULL, &gs, ex, NULL);
  for (size_t k = 0; k < total; k++) {
    hk_variable_info vi;
    if (k != gs && hk_executor_variable_info(&vi, ex, k, NULL) == HK_OK && !(vi.flags & HK_VAR_LOCAL))
      names[n++] = vi.name;
  }
  hk_checkpoint_reader *r = NULL;
  int64_t step = 0;
  if (hk_checkpoint_reader_open(&r, &self->senv, prefix, NULL) == HK_OK) step = hk_checkpoint_reader_step(r);
  hk_checkpoint_reader_free(r);
  hk_saver *saver = NULL;
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  so.env = &self->senv;
  so.executor = ex;
  so.var_list = names;
  so.nvar_list = n;
  rc = n ? hk_saver_new(&saver, &so, &why) : HK_OK;
  if (rc == HK_OK && n) rc = hk_saver_restore(saver, rs, prefix, &why);
  if (rc != HK_OK)
    hk_status_set(st, rc, "%s: restore_best: restoring %s: %s", self->kind, prefix, why.message);
  else
    hk_hook_log(self->hook, HK_LOG_INFO,
                "Restored the best checkpoint %s (step %" PRId64 ", %s = %.9g) into the variables (%zu).", prefix, step,
                self->best_metric, value, n);
  hk_saver_free(saver);
  hk_env_free(&self->senv, names);
  hk_env_free(&self->senv, prefix);
  return rc;
}
