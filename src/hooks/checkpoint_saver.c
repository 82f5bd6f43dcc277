/*
 * hooked — CheckpointSaverHook, and the code it shares with
 * AsyncCheckpointSaverHook (contract groups K and L): one implementation,
 * whose asynchronous part (the writer thread, the snapshot) is in
 * async_checkpoint_saver.c and whose shared declarations are in
 * checkpoint_saver_internal.h. What a save runs (listeners, the graph
 * file, the event, the synchronous save) is in checkpoint_saver_save.c.
 *
 * Both hooks fetch GS in every before_run, save at every session
 * creation, when the timer fires after a run and at
 * end() when the final step was not saved yet. A save runs the
 * listeners around the Saver and appends a SessionLog CHECKPOINT event to the
 * event file of checkpoint_dir, through the writer the session keeps
 * for that directory and shares with every hook writing there.
 *
 * How the asynchronous hook splits a save is told in the file comment
 * of async_checkpoint_saver.c.
 *
 * Per-session resources (snapshot buffer, graph text, writer thread, and
 * the event writer and directory lock of a hook driven outside a session)
 * are allocated through a copy of the env in force at begin() (the hook's
 * own, or the session's) and released by end(), when the session detaches
 * the hook, by the next begin(), or by hk_hook_free(). A session's event
 * writers and directory locks are its own.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L

#include "ckpt/ckpt.h"
#include "core/core.h"
#include "events/events.h"
#include "hooks/checkpoint_saver_internal.h"
#include "util/common.h"
#include "util/dir_lock.h"
#include "util/fs.h"
#include "util/path.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define DEFAULT_BASENAME "model.ckpt"

static const hk_env *own_env(const ckpt_hook *self) { return self->has_env ? &self->env : NULL; }

static int64_t add_sat(int64_t a, int64_t b) { return a > INT64_MAX - b ? INT64_MAX : a + b; }

/* ---- per-session resources ---------------------------------------------------- */

/* Release what begin() acquired. A write in flight is completed first and
 * its result dropped (the session that wanted it is gone). */
static void release_session(ckpt_hook *self) {
  if (!self->in_session) return;
  if (self->async) hk__async_ckpt_stop_writer(self);
  self->held_ok = 0;
  hk_status_clear(&self->held_err);
  hk__hook_event_writer_release(self->hook, self->kind, &self->events, &self->owns_events);
  hk__async_ckpt_free_snapshot(self);
  hk_env_free(&self->senv, self->graph_text);
  self->graph_text = NULL;
  self->graph_len = self->graph_cap = 0;
  hk_env_free(&self->senv, self->last_prefix);
  self->last_prefix = NULL;
  /* Last: nothing of this hook writes the directory any more. */
  hk__dir_lock_release(self->own_lock);
  self->own_lock = NULL;
  self->rs = NULL;
  self->in_session = 0;
}

/* ---- hook callbacks ----------------------------------------------------------- */

/* "Create ..." through hk_hook_env(): the hook's own env, or in
 * begin() the session's. */
static void log_created(ckpt_hook *self) {
  if (!self->async)
    hk_hook_log(self->hook, HK_LOG_INFO, "Create CheckpointSaverHook.");
  else if (self->nlisteners > 0)
    hk_hook_log(self->hook, HK_LOG_INFO, "Create AsyncCheckpointSaverHook saving to path\n%s with %zu listener(s).",
                self->save_path, self->nlisteners);
  else
    hk_hook_log(self->hook, HK_LOG_INFO, "Create AsyncCheckpointSaverHook saving to path\n%s", self->save_path);
}

/* What a Saver with a group of `size` ranks refuses: every rank must save
 * at the same steps, which a clock cannot promise, and best-k retention
 * ranks the checkpoints of one writer. */
static hk_code check_group(const char *kind, int size, double save_secs, int64_t best_k, hk_status *st) {
  if (size <= 1) return HK_OK;
  if (!hk_secs_is_unset(save_secs))
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "save_secs: %s with a Saver over a group of %d ranks saves at the same steps on every rank, "
                         "and a clock differs between ranks: give save_steps",
                         kind, size);
  if (best_k > 0)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "best_k: %s does not rank the sharded checkpoints of a Saver over a group of %d ranks", kind,
                         size);
  return HK_OK;
}

static hk_code cs_begin(void *user, hk_executor *graph, hk_status *status) {
  ckpt_hook *self = user;
  hk_variable_info info;
  hk_code rc;

  if (self->creation_unlogged) {
    self->creation_unlogged = 0;
    log_created(self);
  }
  release_session(self);
  hk_env_copy(&self->senv, hk_hook_env(self->hook));
  self->in_session = 1;
  self->graph = graph;
  self->gs = HK_NO_HANDLE;
  self->saver = NULL;
  self->graph_state = GRAPH_UNKNOWN;
  self->have_written = 0;
  self->last_written = 0;
  self->deferring = 0;
  hk_saver_group_place(hk__ckpt_hook_peek_saver(self), &self->grank, &self->gsize);
  rc = check_group(self->kind, self->gsize, self->save_secs, self->best_k, status);
  if (rc != HK_OK) return rc;
  rc = hk_timer_init(&self->timer, self->save_secs, self->save_steps, "save_secs", "save_steps", &self->senv.clock,
                     status);
  if (rc != HK_OK) return rc;
  rc = hk__ckpt_hook_check_begin(self, status); /* before anything is created */
  if (rc != HK_OK) return rc;

  rc = hk__mkdirs(&self->senv, self->dir, status);
  if (rc != HK_OK) return rc;
  /* Before anything is written into the directory. The session's
   * other hooks created nothing there yet: event files are created at the
   * first write, after every begin(). A follower of a group leaves the
   * lock and the events to rank 0: it writes only its shards. */
  if (!hk__ckpt_hook_follower(self)) {
    rc = hk__hook_dir_lock(self->hook, self->dir, &self->own_lock, status);
    if (rc != HK_OK) return rc;
    rc = hk__hook_event_writer(self->hook, self->dir, &self->events, &self->owns_events, status);
    if (rc != HK_OK) return rc;
  }
  rc = hk_executor_global_step(&info, NULL, graph, status);
  if (rc == HK_NOT_FOUND)
    return hk_status_set(status, HK_FAILED_PRECONDITION, "Global step should be created to use %s.", self->kind);
  if (rc != HK_OK) return rc;
  self->gs = info.tensor;
  self->metric = HK_NO_HANDLE;
  if (self->best_k > 0) {
    hk_status why = HK_STATUS_INIT;
    rc = hk_executor_resolve_tensor(&self->metric, graph, self->best_metric, &why);
    if (rc != HK_OK)
      return hk_status_set(status, rc, "%s: best_metric '%s': %s", self->kind, self->best_metric, why.message);
  }
  return hk__ckpt_hook_listeners_begin(self, status);
}

/* The length of a directory name without its trailing slashes ("a/b",
 * "a/b/" and "a/b//" name one directory; "/" stays "/"). */
static size_t dir_len(const char *dir, size_t n) {
  while (n > 1 && dir[n - 1] == '/') n--;
  return n;
}

/* *out: the prefix the hook's Saver gives the checkpoint of `step`
 * (hk_env_free() with the Saver's env). */
static hk_code own_prefix(ckpt_hook *self, int64_t step, char **out, hk_status *st) {
  hk_code rc = hk__ckpt_hook_resolve_saver(self, st);
  if (rc != HK_OK) return rc;
  *out = hk__saver_prefix(self->saver, self->save_path, step);
  if (*out == NULL)
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "%s: out of memory naming the checkpoint of %s", self->kind,
                         self->save_path);
  return HK_OK;
}

/* Whether this creation restored the very checkpoint the hook
 * would write for `step`: `restored`'s directory is checkpoint_dir (trailing
 * slashes aside) and its name is the one the Saver gives step, so
 * the checkpoint holds step. */
static hk_code restored_own_checkpoint(ckpt_hook *self, const char *restored, int64_t step, int *same, hk_status *st) {
  static const char data_ext[] = ".safetensors";
  size_t n = strlen(restored), k = sizeof data_ext - 1, cut, dn;
  const char *slash;
  char *mine;
  hk_code rc;

  *same = 0;
  rc = own_prefix(self, step, &mine, st);
  if (rc != HK_OK) return rc;
  /* A checkpoint_filename_with_path may name the data file itself. */
  if (n > k && strcmp(restored + n - k, data_ext) == 0) n -= k;
  for (cut = n; cut > 0 && restored[cut - 1] != '/'; cut--) {}
  slash = strrchr(mine, '/');
  if (slash != NULL && cut > 0 && strlen(slash + 1) == n - cut && memcmp(slash + 1, restored + cut, n - cut) == 0) {
    dn = dir_len(self->dir, strlen(self->dir));
    /* restored[0, cut) is its directory with the separating slash. */
    *same = dir_len(restored, cut) == dn && memcmp(restored, self->dir, dn) == 0;
  }
  hk_env_free(hk__saver_env(self->saver), mine);
  return HK_OK;
}

/* Over a group: *exists when checkpoint_dir holds the committed
 * checkpoint of `step` at session creation. Every rank sees the same: no
 * rank has saved in this session yet, a save commits only after every rank
 * took part in it, and a rank's save returns only once rank 0 committed
 * (or failed) it. It is there when a rank restored it (rank 0 through a
 * Saver of its own, or every rank through the grouped one); then the
 * creation save is skipped on every rank. */
static hk_code group_checkpoint_exists(ckpt_hook *self, int64_t step, int *exists, hk_status *st) {
  char *mine;
  hk_code rc;

  *exists = 0;
  rc = own_prefix(self, step, &mine, st);
  if (rc != HK_OK) return rc;
  *exists = hk_checkpoint_exists(&self->senv, mine);
  hk_env_free(hk__saver_env(self->saver), mine);
  return HK_OK;
}

/* *same: the graph file already holds this session's description, read
 * back, so a resume that rewrites nothing needs no room on the disk.
 * A file that is missing, larger or unreadable is not the same; running
 * out of memory is an error. */
static hk_code graph_file_current(ckpt_hook *self, int *same, hk_status *st) {
  hk_status why = HK_STATUS_INIT;
  char *text = NULL;
  size_t len = 0;
  hk_code rc = hk__read_file(&self->senv, self->graph_path, self->graph_len, &text, &len, &why);

  *same = 0;
  if (rc == HK_RESOURCE_EXHAUSTED) {
    hk__status_copy(st, &why);
    return rc;
  }
  if (rc != HK_OK) return HK_OK;
  *same = len == self->graph_len && (len == 0 || memcmp(text, self->graph_text, len) == 0);
  hk_env_free(&self->senv, text);
  return HK_OK;
}

static hk_code cs_after_create_session(void *user, hk_raw_session *session, hk_coordinator *coord,
                                       hk_creation_context *ctx, hk_status *status) {
  ckpt_hook *self = user;
  const char *restored = hk_creation_context_restored_checkpoint(ctx);
  int64_t gs;
  int stop = 0, skip = 0;
  hk_code rc;

  (void)coord;
  self->rs = session;
  rc = hk_raw_session_global_step(&gs, session, status);
  if (rc != HK_OK) return rc;
  if (self->async) {
    /* A re-creation while a write is in flight (a hook driven outside a
     * session; a session has quiesced it already): finish it first, so at
     * most one save is in flight and the writer's stale-temporary
     * cleanup cannot remove graph.txt's temporary file below. */
    hk__async_ckpt_writer_wait_idle(self);
    hk__async_ckpt_hold_completion(self, session, ctx);
  }
  /* Over a group the save is collective, so every rank must decide alike,
   * whatever it restored (rank 0 alone may have). */
  if (self->gsize > 1)
    rc = group_checkpoint_exists(self, gs, &skip, status);
  else if (restored != NULL)
    rc = restored_own_checkpoint(self, restored, gs, &skip, status);
  if (rc != HK_OK) return rc;
  if (self->save_graph_def && !hk__ckpt_hook_follower(self)) {
    if (skip) {
      int same = 0;
      rc = hk__ckpt_hook_capture_graph(self, status);
      if (rc == HK_OK && self->graph_state == GRAPH_CAPTURED) rc = graph_file_current(self, &same, status);
      if (rc == HK_OK && self->graph_state == GRAPH_CAPTURED && !same)
        rc = hk__ckpt_hook_write_graph_file(self, status);
    } else {
      rc = hk__ckpt_hook_write_graph_file(self, status);
    }
    if (rc != HK_OK) return rc;
  }
  if (skip) {
    /* The checkpoint of GS is the one just read: rewriting it
     * would change nothing but could fail (a resume on a full disk), and
     * its listeners' callbacks would announce a save that did not happen.
     * It counts as written for end(). */
    if (restored != NULL)
      hk_hook_log(self->hook, HK_LOG_INFO,
                  "Not saving checkpoint %" PRId64 " into %s at session creation: %s was just restored from it.", gs,
                  self->save_path, restored);
    else /* a rank of a group: another rank restored it */
      hk_hook_log(self->hook, HK_LOG_INFO,
                  "Not saving checkpoint %" PRId64 " into %s at session creation: the job holds it already.", gs,
                  self->save_path);
    if (self->async) {
      self->deferring = 0;
      self->have_written = 1;
      self->last_written = gs;
    }
  } else if (self->async) {
    self->deferring = 0;
    rc = hk__async_ckpt_save(self, session, gs, status);
  } else {
    /* The listeners' stop request from this save is ignored. */
    rc = hk__ckpt_hook_save_sync(self, session, gs, &stop, status);
  }
  if (rc != HK_OK) return rc;
  hk_timer_update(&self->timer, gs, NULL, NULL);
  hk__ckpt_hook_check_created(self, gs, ctx);
  return HK_OK;
}

static hk_code cs_before_run(void *user, hk_run_context *ctx, hk_run_request *request, hk_status *status) {
  ckpt_hook *self = user;

  (void)ctx;
  (void)status;
  request->fetches = &self->gs;
  request->nfetches = 1;
  return HK_OK;
}

static hk_code after_run_save(ckpt_hook *self, hk_run_context *ctx, const hk_run_values *values, hk_status *status) {
  hk_raw_session *rs = hk_run_context_session(ctx);
  int64_t stale, gs;
  int stop = 0;
  hk_code rc;

  if (values == NULL || values->nresults < 1 || values->results == NULL)
    return hk_status_set(status, HK_INTERNAL, "%s: the global step it fetched is missing from its run values",
                         self->kind);
  rc = hk_tensor_to_i64(&stale, &values->results[0], "global_step", status);
  if (rc != HK_OK) return rc;

  if (self->async) {
    /* A failed write fails this call, and no new save starts. */
    rc = hk__async_ckpt_process_completion(self, rs, &stop, status);
    if (stop) hk_run_context_request_stop(ctx);
    if (rc != HK_OK) return rc;
  }
  /* Stale GS + steps_per_run is the post-run GS when every run adds
   * steps_per_run; the raw-session read confirms it. */
  if (!hk_timer_should_trigger(&self->timer, add_sat(stale, self->steps_per_run))) return HK_OK;
  rc = hk_raw_session_global_step(&gs, rs, status);
  if (rc != HK_OK) return rc;
  if (!hk_timer_should_trigger(&self->timer, gs)) return HK_OK;

  if (!self->async) {
    hk_timer_update(&self->timer, gs, NULL, NULL);
    rc = hk__ckpt_hook_save_sync(self, rs, gs, &stop, status);
    if (rc != HK_OK) return rc;
    if (stop) hk_run_context_request_stop(ctx);
    return HK_OK;
  }

  if (hk__async_ckpt_writer_busy(self)) {
    /* The check-resume mode waits: a deferred save would land on a step
     * that depends on timing, and two runs would share fewer checkpoints. */
    if (!self->block_when_busy && !self->check.on && self->gsize <= 1) {
      /* No snapshot, timer unchanged, so the next after_run tries again. */
      if (!self->deferring)
        hk_hook_log(self->hook, HK_LOG_INFO, "Saver thread still in progress, deferring checkpoint.");
      self->deferring = 1;
      return HK_OK;
    }
    hk__async_ckpt_writer_wait_idle(self);
  }
  /* The writer is idle, but it may have finished since the top of this
   * call: its result is processed before a new job replaces it. */
  stop = 0;
  rc = hk__async_ckpt_process_completion(self, rs, &stop, status);
  if (stop) hk_run_context_request_stop(ctx);
  if (rc != HK_OK) return rc;
  self->deferring = 0;
  hk_timer_update(&self->timer, gs, NULL, NULL);
  return hk__async_ckpt_save(self, rs, gs, status);
}

static hk_code cs_after_run(void *user, hk_run_context *ctx, const hk_run_values *values, hk_status *status) {
  ckpt_hook *self = user;
  hk_code rc = after_run_save(self, ctx, values, status);
  if (rc != HK_OK || !self->check.has_stop_at) return rc;
  return hk__ckpt_hook_check_after_run(self, ctx, values, status);
}

/* Save unless the final step was just saved; listeners' end always. */
static hk_code end_sync(ckpt_hook *self, hk_raw_session *session, hk_status *status) {
  int64_t gs, last;
  int stop = 0;
  hk_code rc;

  rc = hk_raw_session_global_step(&gs, session, status);
  if (rc != HK_OK) return rc;
  if (!hk_timer_last_triggered_step(&self->timer, &last) || last != gs) {
    rc = hk__ckpt_hook_save_sync(self, session, gs, &stop, status);
    if (rc != HK_OK) return rc;
  }
  rc = hk__ckpt_hook_listeners_end(self, session, gs, status);
  if (rc != HK_OK || self->events == NULL) return rc;
  return hk__event_writer_flush(self->events, status);
}

static hk_code cs_end(void *user, hk_raw_session *session, hk_status *status) {
  ckpt_hook *self = user;
  hk_code rc = self->async ? hk__async_ckpt_end(self, session, status) : end_sync(self, session, status);

  /* Keras' restore_best_weights: once the final checkpoint is ranked. */
  if (rc == HK_OK && self->restore_best) rc = hk__ckpt_hook_restore_best(self, session, status);
  release_session(self);
  return rc;
}

static void free_options(ckpt_hook *self) {
  const hk_env *env = own_env(self);
  size_t i;

  for (i = 0; i < self->nlisteners; i++) hk_env_free(env, self->listeners[i].name);
  hk_env_free(env, self->listeners);
  hk_env_free(env, self->dir);
  hk_env_free(env, self->save_path);
  hk_env_free(env, self->graph_path);
  hk_env_free(env, self->best_metric);
}

static void cs_destroy(void *user) {
  ckpt_hook *self = user;
  hk_env env;
  int has_env = self->has_env;

  release_session(self);
  if (self->async) hk__async_ckpt_writer_destroy(self);
  free_options(self);
  if (has_env) env = self->env;
  hk_env_free(has_env ? &env : NULL, self);
}

/* The session is letting go: its Scaffold and Saver may be freed next, so a
 * write in flight must finish now (its result is dropped when end() did not
 * process it: the session that wanted it is gone). */
static void cs_detach(void *user) { release_session(user); }

/* A re-creation is about to restore through the Saver the writer may be
 * using: wait for it. Its result stays in the writer's slot
 * for after_create_session to hold. */
static void cs_quiesce(void *user) {
  ckpt_hook *self = user;
  if (self->async && self->in_session) hk__async_ckpt_writer_wait_idle(self);
}

static const hk_hook_vtable checkpoint_saver_vtable = {
    HK_HOOK_VTABLE_VERSION, cs_begin, cs_after_create_session, cs_before_run, cs_after_run, cs_end, cs_destroy,
};

/* ---- construction -------------------------------------------------------------- */

hk_code hk_checkpoint_saver_options_init(hk_checkpoint_saver_options *opts, uint32_t version) {
  return HK__STRUCT_INIT(opts, version, hk_checkpoint_saver_options, HK_CHECKPOINT_SAVER_OPTIONS_INIT);
}

/* Everything the options say, checked before anything is allocated. */
static hk_code validate(const hk_checkpoint_saver_options *opts, const char *kind, hk_status *st) {
  hk_timer probe;
  size_t i;
  hk_code rc;

  if (opts == NULL) return hk_status_set(st, HK_INVALID_ARGUMENT, "opts is NULL: %s needs a checkpoint_dir", kind);
  HK__CHECK_VERSION(opts, HK_CHECKPOINT_SAVER_OPTIONS_VERSION, hk_checkpoint_saver_options, "opts", st);
  rc = hk_env_check(opts->env, "opts->env", st);
  if (rc != HK_OK) return rc;
  if (opts->best_k < 0)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "best_k: must be >= 0 (0: off), got %" PRId64, opts->best_k);
  if (opts->best_k > 0 && (opts->best_metric == NULL || opts->best_metric[0] == '\0'))
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "best_metric: best_k %" PRId64 " needs the name of a tensor to rank by", opts->best_k);
  if (opts->best_k == 0 && opts->best_metric != NULL)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "best_metric: '%s' is given but best_k is 0 (best-k retention is off)", opts->best_metric);
  if (opts->best_mode != HK_MONITOR_MIN && opts->best_mode != HK_MONITOR_MAX)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "best_mode: %d is neither HK_MONITOR_MIN nor HK_MONITOR_MAX",
                         (int)opts->best_mode);
  if (opts->restore_best && opts->best_k == 0)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "restore_best: needs best_k (and best_metric): the best checkpoint is the first of best-k "
                         "retention's record");
  if (opts->checkpoint_dir == NULL || opts->checkpoint_dir[0] == '\0')
    return hk_status_set(st, HK_INVALID_ARGUMENT, "checkpoint_dir: required by %s", kind);
  if (opts->saver != NULL && opts->scaffold != NULL)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "You cannot provide both saver and scaffold.");
  if (opts->saver != NULL) {
    int size = 1;
    hk_saver_group_place(opts->saver, NULL, &size);
    rc = check_group(kind, size, opts->save_secs, opts->best_k, st);
    if (rc != HK_OK) return rc;
  }
  rc = hk_timer_init(&probe, opts->save_secs, opts->save_steps, "save_secs", "save_steps", NULL, st);
  if (rc != HK_OK) return rc;
  if (opts->steps_per_run < 1)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "steps_per_run: must be >= 1, got %" PRId64, opts->steps_per_run);
  if (opts->checkpoint_basename != NULL && !hk__valid_name(opts->checkpoint_basename))
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "checkpoint_basename: '%s' is not a valid checkpoint name (1-255 bytes, no '/', '\\', "
                         "'\"', control bytes or \"..\", not \".\")",
                         opts->checkpoint_basename);
  if (opts->listeners == NULL && opts->nlisteners > 0)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "listeners: NULL with nlisteners %zu", opts->nlisteners);
  for (i = 0; i < opts->nlisteners; i++) {
    const hk_checkpoint_listener_vtable *vt = opts->listeners[i].vtable;
    if (vt == NULL) return hk_status_set(st, HK_INVALID_ARGUMENT, "listeners[%zu].vtable: must not be NULL", i);
    if (vt->version == 0 || vt->version > HK_CHECKPOINT_LISTENER_VTABLE_VERSION)
      return hk_status_set(st, HK_INVALID_ARGUMENT,
                           "listeners[%zu].vtable->version: %u is not a listener vtable version this library knows "
                           "(1..%u)",
                           i, (unsigned)vt->version, (unsigned)HK_CHECKPOINT_LISTENER_VTABLE_VERSION);
  }
  return HK_OK;
}

static hk_code copy_options(ckpt_hook *self, const hk_checkpoint_saver_options *opts) {
  const hk_env *env = own_env(self);
  const char *base = opts->checkpoint_basename ? opts->checkpoint_basename : DEFAULT_BASENAME;
  size_t i;

  self->dir = hk_env_strdup(env, opts->checkpoint_dir);
  self->save_path = hk__path_join(env, opts->checkpoint_dir, base);
  self->graph_path = hk__path_join(env, opts->checkpoint_dir, GRAPH_FILE);
  if (self->dir == NULL || self->save_path == NULL || self->graph_path == NULL) return HK_RESOURCE_EXHAUSTED;
  if (opts->nlisteners > 0) {
    self->listeners = hk_env_calloc(env, opts->nlisteners, sizeof(*self->listeners));
    if (self->listeners == NULL) return HK_RESOURCE_EXHAUSTED;
    self->nlisteners = opts->nlisteners;
    for (i = 0; i < opts->nlisteners; i++) {
      self->listeners[i].vt = opts->listeners[i].vtable;
      self->listeners[i].user = opts->listeners[i].user;
      if (opts->listeners[i].name != NULL) {
        self->listeners[i].name = hk_env_strdup(env, opts->listeners[i].name);
        if (self->listeners[i].name == NULL) return HK_RESOURCE_EXHAUSTED;
      }
    }
  }
  self->save_secs = opts->save_secs;
  self->save_steps = opts->save_steps;
  self->opt_saver = opts->saver;
  self->opt_scaffold = opts->scaffold;
  self->save_graph_def = opts->save_graph_def != 0;
  self->steps_per_run = opts->steps_per_run;
  self->block_when_busy = opts->block_when_busy != 0;
  self->best_k = opts->best_k;
  self->best_mode = opts->best_mode;
  self->restore_best = opts->restore_best != 0;
  if (opts->best_k > 0 && (self->best_metric = hk_env_strdup(env, opts->best_metric)) == NULL)
    return HK_RESOURCE_EXHAUSTED;
  return HK_OK;
}

hk_code hk__ckpt_hook_new(hk_hook **out, const hk_checkpoint_saver_options *opts, int async, hk_status *status) {
  const char *kind = async ? "AsyncCheckpointSaverHook" : "CheckpointSaverHook";
  ckpt_hook *self;
  hk_code rc;

  if (out == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "out: must not be NULL");
  *out = NULL;
  rc = validate(opts, kind, status);
  if (rc != HK_OK) return rc;

  self = hk_env_calloc(opts->env, 1, sizeof(*self));
  if (self == NULL) return hk_status_set(status, HK_RESOURCE_EXHAUSTED, "%s: out of memory", kind);
  if (opts->env != NULL) {
    hk_env_copy(&self->env, opts->env);
    self->has_env = 1;
  }
  self->async = async;
  self->kind = kind;
  self->gs = HK_NO_HANDLE;
  self->gsize = 1; /* begin() reads the Saver's place */
  if (copy_options(self, opts) != HK_OK) {
    rc = hk_status_set(status, HK_RESOURCE_EXHAUSTED, "%s: out of memory", kind);
    goto fail;
  }
  if (async) {
    rc = hk__async_ckpt_writer_init(self, status);
    if (rc != HK_OK) goto fail;
  }
  rc = hk_hook_new(out, &checkpoint_saver_vtable, self, kind, opts->env, status);
  if (rc != HK_OK) {
    if (async) hk__async_ckpt_writer_destroy(self);
    goto fail;
  }
  self->hook = *out;
  hk__hook_set_on_detach(*out, cs_detach);
  hk__hook_set_on_quiesce(*out, cs_quiesce);
  /* With an env, it says how to log now; without one, the session's env
   * will, at the first begin(): logging through the default stderr sink
   * here would ignore the log level the session is given. */
  if (opts->env != NULL)
    log_created(self);
  else
    self->creation_unlogged = 1;
  hk_status_clear(status);
  return HK_OK;

fail:
  free_options(self);
  hk_env_free(own_env(self), self);
  return rc;
}

hk_code hk_checkpoint_saver_hook_new(hk_hook **out, const hk_checkpoint_saver_options *opts, hk_status *status) {
  return hk__ckpt_hook_new(out, opts, 0, status);
}

/* ---- saves on demand ----------------------------------------------------------- */

/* Keep a copy of `prefix` for the caller to borrow until the next call. */
static hk_code keep_prefix(ckpt_hook *self, const char *prefix, const char **out, hk_status *st) {
  char *copy = hk_env_strdup(&self->senv, prefix);
  if (copy == NULL) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "%s: out of memory", self->kind);
  hk_env_free(&self->senv, self->last_prefix);
  self->last_prefix = copy;
  if (out != NULL) *out = copy;
  return HK_OK;
}

static hk_code save_now(ckpt_hook *self, const char *name, const char **prefix, hk_status *st) {
  hk_raw_session *rs = self->rs;
  int stop = 0;
  int64_t gs;
  hk_code rc;

  if (self->async) {
    /* The Saver is the writer's while a write is in flight. */
    hk__async_ckpt_writer_wait_idle(self);
    rc = hk__async_ckpt_process_completion(self, rs, &stop, st);
    if (rc != HK_OK) return rc;
  }
  rc = hk__ckpt_hook_resolve_saver(self, st);
  if (rc != HK_OK) return rc;
  rc = hk_raw_session_global_step(&gs, rs, st);
  if (rc != HK_OK) return rc;
  if (name == NULL) {
    char *mine;
    /* A managed save at GS, as the timer's; the cadence restarts. */
    hk_timer_update(&self->timer, gs, NULL, NULL);
    rc = hk__ckpt_hook_save_sync(self, rs, gs, &stop, st);
    if (rc != HK_OK) return rc;
    if (self->async) {
      self->have_written = 1;
      self->last_written = gs;
    }
    mine = hk__saver_prefix(self->saver, self->save_path, gs);
    if (mine == NULL) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "%s: out of memory", self->kind);
    rc = keep_prefix(self, mine, prefix, st);
    hk_env_free(hk__saver_env(self->saver), mine);
    return rc;
  } else {
    const char *written = NULL;
    char *path = hk__path_join(&self->senv, self->dir, name);
    if (path == NULL) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "%s: out of memory", self->kind);
    hk_hook_log(self->hook, HK_LOG_INFO, "Saving unmanaged checkpoint %s at step %" PRId64 ".", path, gs);
    rc = hk_saver_save(&written, self->saver, rs, path, HK_UNSET_STEPS, HK_SAVE_NO_STATE, st);
    hk_env_free(&self->senv, path);
    if (rc != HK_OK) return rc;
    return keep_prefix(self, written, prefix, st);
  }
}

hk_code hk_checkpoint_saver_hook_save(const char **prefix, hk_hook *hook, const char *name, hk_status *status) {
  ckpt_hook *self;

  if (prefix != NULL) *prefix = NULL;
  if (hook == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_checkpoint_saver_hook_save: hook is NULL");
  if (hk__hook_vtable(hook) != &checkpoint_saver_vtable)
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         "hk_checkpoint_saver_hook_save: hook '%s' is not a checkpoint saver hook", hk_hook_name(hook));
  self = hk_hook_user(hook);
  if (name != NULL && !hk__valid_name(name))
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         "hk_checkpoint_saver_hook_save: '%s' is not a valid checkpoint name", name);
  if (name != NULL && hk__managed_step(name, hk__path_basename(self->save_path), NULL))
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         "hk_checkpoint_saver_hook_save: '%s' has the form '%s-<step>', which is reserved for the "
                         "checkpoints retention manages (an unmanaged checkpoint of that name would be adopted and "
                         "deleted by it): choose another name",
                         name, hk__path_basename(self->save_path));
  if (!self->in_session || self->rs == NULL)
    return hk_status_set(status, HK_FAILED_PRECONDITION,
                         "hk_checkpoint_saver_hook_save: %s '%s' serves no session with a raw session", self->kind,
                         hk_hook_name(hook));
  return save_now(self, name, prefix, status);
}
