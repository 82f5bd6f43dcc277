/*
 * hooked — CheckpointSaverHook and AsyncCheckpointSaverHook (contract groups
 * K and L, D3), sharing one implementation.
 *
 * Both hooks fetch GS in every before_run (C95), save at every session
 * creation (C94, C105), when the timer fires after a run (C96, C106) and at
 * end() when the final step was not saved yet (C97, D3.5). A save runs the
 * listeners around the Saver and appends a SessionLog CHECKPOINT event to the
 * event file of checkpoint_dir (C98), through the writer the session keeps
 * for that directory and shares with every hook writing there (H26).
 *
 * The asynchronous hook splits a save (D3): on the training thread it runs
 * the listeners' before_save, lays out every variable of its Saver in one
 * snapshot buffer (allocated at the first save of a session, grown only when
 * the variables grow) and hands (snapshot, step, path) to one writer thread.
 * Where the executor takes part in copy-before-write snapshots (D3.7, the
 * control ops of hooked/sys/executor.h), the training thread only reads the
 * variables' views and attaches the snapshot to the executor; the writer
 * thread copies the variables while the next step runs, and the executor
 * copies a variable itself before it mutates one not copied yet. Otherwise
 * the training thread copies everything before it hands over. The writer
 * then calls hk__saver_write. The result comes back through shared
 * state guarded by one mutex and is processed on the training thread at the
 * next after_run or end(): log lines, event, listeners' after_save and their
 * stop requests, or the write's error. While a write is in flight the
 * training thread touches neither the snapshot buffer nor the Saver, and
 * the session, before it re-creates (and restores through that Saver),
 * waits for the writer through the hook's quiesce callback. A result found
 * at a re-creation is kept for the next after_run or end() (D3.4): an
 * error returned by after_create_session would fail the session (D2.4,
 * H18) where an after_run's leaves it usable.
 *
 * Per-session resources (snapshot buffer, graph text, writer thread, and
 * the event writer of a hook driven outside a session) are allocated through
 * a copy of the env in force at begin() (the hook's own, or the session's)
 * and released by end(), when the session detaches the hook, by the next
 * begin(), or by hk_hook_free(). A session's event writers are its own.
 *
 * A write still in flight when a session lets go of the hook without end()
 * (an unclean close calls no hook; a session freed without close) is
 * completed when the session detaches its hooks, before it frees its
 * Scaffold and that Scaffold's Saver; its result is then dropped.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L

#include "../ckpt/ckpt.h"
#include "../ckpt/snapshot.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define DEFAULT_BASENAME "model.ckpt"
/* hooked's own text description of the graph (H30): not a TensorFlow
 * GraphDef, so not named like one. */
#define GRAPH_FILE "graph.txt"
#define SESSION_LOG_CHECKPOINT 3

typedef struct listener {
  const hk_checkpoint_listener_vtable *vt;
  void *user;
  char *name; /* NULL: "listener <index>" */
} listener;

/* The graph description, captured once per session: the graph is finalized,
 * so every creation of the session writes the same graph.txt. */
enum { GRAPH_UNKNOWN = 0, GRAPH_CAPTURED, GRAPH_UNDESCRIBED };

/*
 * What the training thread and the writer thread share (D3). Every field
 * below `mu` is read and written under it. The job's inputs (saver, step,
 * flags, now, tensors) are set by the training thread before it sets
 * `pending`, and stay untouched until the writer reports `finished`.
 */
typedef struct writer {
  pthread_mutex_t mu;
  pthread_cond_t cv; /* broadcast when a job is handed over, finishes, or quit is set */
  int quit;
  int pending;  /* handed over, not yet taken by the writer */
  int busy;     /* handed over and not finished */
  int finished; /* finished, result not processed yet */
  hk_saver *saver;
  int64_t step;
  unsigned flags;
  double now; /* wall time at the snapshot: the checkpoint's timestamp */
  const hk__ckpt_tensor *tensors;
  size_t ntensors;
  hk_snapshot *snap; /* copied by the writer before the write (D3.7) */
  hk_code rc;
  hk_status st;
  double secs;
} writer;

typedef struct ckpt_hook {
  hk_hook *hook;
  hk_env env; /* what the struct and its options were allocated with */
  int has_env;
  int async;
  const char *kind; /* "CheckpointSaverHook" or "AsyncCheckpointSaverHook" */

  /* Options, copied. */
  char *dir;
  char *save_path;  /* dir/basename */
  char *graph_path; /* dir/graph.txt */
  double save_secs;
  int64_t save_steps;
  hk_saver *opt_saver;
  hk_scaffold *opt_scaffold;
  listener *listeners;
  size_t nlisteners;
  int save_graph_def;
  int64_t steps_per_run;
  int block_when_busy;
  int64_t best_k;    /* H45: 0 off */
  char *best_metric; /* NULL without best_k */
  int best_mode;
  /* Created without an env: the creation line waits for the first begin(),
   * to go through the session's env (its sink and log level, C92, C104). */
  int creation_unlogged;

  /* Per-session state, reset by begin(). */
  int in_session; /* begin() ran and its resources are held */
  hk_env senv;    /* the env in force at begin(), for per-session resources */
  hk_executor *graph;
  hk_handle gs;
  hk_handle metric; /* best_metric's tensor (H45) */
  hk_timer timer;
  hk_saver *saver; /* resolved at the first save (C99) */
  hk__event_writer *events;
  int owns_events; /* no session: a writer of our own (H26) */
  int graph_state;
  char *graph_text;
  size_t graph_len, graph_cap;

  /* Asynchronous hook only. */
  writer w;
  int thread_started;
  pthread_t tid;
  unsigned char *buf; /* snapshot buffer (D3.2) */
  size_t buf_cap;
  hk__ckpt_tensor *tensors;
  size_t tensors_cap;
  /* Copy-before-write (D3.7): the copies of the snapshot in flight, each
   * tensor's executor index, and the executor the snapshot is attached to
   * (NULL: not attached). Detached on the training thread once the writer
   * is idle, so every copy is made. */
  hk_snapshot *snap;
  size_t *var_index;
  size_t var_index_cap;
  hk_executor *attached;
  int64_t snap_step; /* the attached snapshot's step and tensor count */
  size_t snap_n;
  int overlap_refused; /* the executor declined: logged once per session */
  int have_written; /* a checkpoint was written successfully this session */
  int64_t last_written;
  int deferring; /* the deferral line was logged for the current run of deferrals */
  /* Results met at re-creations, kept for the next after_run or end() (D3.4)
   * apart from the writer's slot, which the creation's own save reuses. */
  int held_ok; /* a successful write whose completion is not processed yet */
  int64_t held_ok_step;
  double held_ok_secs;
  hk_status held_err; /* code HK_OK: none; else the first error to return */

  /* For saves on demand (hk_checkpoint_saver_hook_save). */
  hk_raw_session *rs; /* of the last after_create_session; NULL outside a session */
  char *last_prefix;  /* the last save on demand's prefix (senv) */
} ckpt_hook;

static const hk_env *own_env(const ckpt_hook *self) { return self->has_env ? &self->env : NULL; }

static int64_t add_sat(int64_t a, int64_t b) { return a > INT64_MAX - b ? INT64_MAX : a + b; }

static const char *listener_name(const ckpt_hook *self, size_t i, char *buf, size_t cap) {
  if (self->listeners[i].name != NULL) return self->listeners[i].name;
  snprintf(buf, cap, "listener %zu", i);
  return buf;
}

/* ---- listeners (C93, C97, C98, C103) ----------------------------------------- */

static hk_code listeners_begin(ckpt_hook *self, hk_status *st) {
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

static hk_code listeners_before_save(ckpt_hook *self, hk_raw_session *rs, int64_t step, hk_status *st) {
  size_t i;
  hk_hook_log(self->hook, HK_LOG_INFO, "Calling checkpoint listeners before saving checkpoint %" PRId64 "...", step);
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

/* Every listener is called even after one asked to stop (C98). */
static hk_code listeners_after_save(ckpt_hook *self, hk_raw_session *rs, int64_t step, int *stop, hk_status *st) {
  size_t i;
  hk_hook_log(self->hook, HK_LOG_INFO, "Calling checkpoint listeners after saving checkpoint %" PRId64 "...", step);
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

static hk_code listeners_end(ckpt_hook *self, hk_raw_session *rs, int64_t step, hk_status *st) {
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

/* C99: the explicit saver, the given scaffold's, the session's Scaffold's. */
static hk_code resolve_saver(ckpt_hook *self, hk_status *st) {
  hk_saver *s = self->opt_saver;
  hk_scaffold *session_scaffold;

  if (self->saver != NULL) return HK_OK;
  if (s == NULL && self->opt_scaffold != NULL) s = hk_scaffold_saver(self->opt_scaffold);
  if (s == NULL && (session_scaffold = hk_hook_scaffold(self->hook)) != NULL) s = hk_scaffold_saver(session_scaffold);
  if (s == NULL) return hk_status_set(st, HK_FAILED_PRECONDITION, "No saver available: provide a saver or a scaffold.");
  self->saver = s;
  /* H45: the Saver ranks what this hook saves (the writer is idle: no
   * save has started yet in this session). */
  if (self->best_k > 0) hk__saver_set_best(s, self->best_k, self->best_mode);
  return HK_OK;
}

/* H45: best_metric's value now, for the checkpoint of `step` (the caller
 * hands it to the Saver just before the write). Read before the variables'
 * views are taken: a run would invalidate them. NaN without best_k. */
static hk_code read_metric(ckpt_hook *self, hk_raw_session *rs, int64_t step, double *out, hk_status *st) {
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
  if (rc == HK_OK) rc = hk_tensor_to_f64(&result, self->best_metric, &value, &why);
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
 * describe its graph makes graph.txt be skipped (C94, C102), logged once. */
static hk_code capture_graph(ckpt_hook *self, hk_status *st) {
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

static hk_code write_graph_file(ckpt_hook *self, hk_status *st) {
  hk_code rc = capture_graph(self, st);
  if (rc != HK_OK || self->graph_state != GRAPH_CAPTURED) return rc;
  return hk__write_file_atomic(&self->senv, self->graph_path, self->graph_text, self->graph_len, st);
}

static hk_code write_event(ckpt_hook *self, int64_t step, hk_status *st) {
  return hk__event_writer_session_log(self->events, step, SESSION_LOG_CHECKPOINT, self->save_path, st);
}

/* C98: one synchronous save at `step`. */
static hk_code save_sync(ckpt_hook *self, hk_raw_session *rs, int64_t step, int *stop, hk_status *st) {
  double metric;
  hk_code rc = resolve_saver(self, st);

  if (rc != HK_OK) return rc;
  rc = listeners_before_save(self, rs, step, st);
  if (rc != HK_OK) return rc;
  hk_hook_log(self->hook, HK_LOG_INFO, "Saving checkpoints for %" PRId64 " into %s.", step, self->save_path);
  rc = read_metric(self, rs, step, &metric, st);
  if (rc != HK_OK) return rc;
  if (self->best_k > 0) hk__saver_note_metric(self->saver, metric);
  /* The graph is described once per creation, in graph.txt (C94); no file
   * beside the checkpoint repeats it (C102). */
  rc = hk_saver_save(self->saver, rs, self->save_path, step, HK_SAVE_DEFAULT, NULL, st);
  /* A save that failed before its write must not leave the value to the next. */
  if (rc != HK_OK && self->best_k > 0) hk__saver_note_metric(self->saver, NAN);
  if (rc != HK_OK) return rc;
  if (self->async) {
    self->have_written = 1;
    self->last_written = step;
  }
  rc = write_event(self, step, st);
  if (rc != HK_OK) return rc;
  return listeners_after_save(self, rs, step, stop, st);
}

/* ---- the writer thread (D3) ---------------------------------------------------- */

/* The writer thread may call only the allocator, the log sink and the fs
 * (H6): the env's clocks are the caller's and need not be thread-safe, so
 * the write is timed with the system's monotonic clock. */
static double system_monotonic(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) return 0;
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *writer_main(void *arg) {
  ckpt_hook *self = arg;
  writer *w = &self->w;

  pthread_mutex_lock(&w->mu);
  for (;;) {
    hk_saver *saver;
    int64_t step;
    unsigned flags;
    double now;
    const hk__ckpt_tensor *tensors;
    size_t ntensors;
    hk_snapshot *snap;
    hk_status st = HK_STATUS_INIT;
    char *prefix = NULL;
    double t0, t1;
    hk_code rc;

    /* A job handed over before quit is written first (D3.2). */
    while (!w->pending && !w->quit) pthread_cond_wait(&w->cv, &w->mu);
    if (!w->pending) break;
    w->pending = 0;
    saver = w->saver;
    step = w->step;
    flags = w->flags;
    now = w->now;
    tensors = w->tensors;
    ntensors = w->ntensors;
    snap = w->snap;
    pthread_mutex_unlock(&w->mu);

    /* D3.7: the copies nobody made yet, while the training thread runs on. */
    hk__snapshot_run(snap);
    t0 = system_monotonic();
    rc = hk__saver_write(saver, self->save_path, step, flags, now, tensors, ntensors, &prefix, &st);
    t1 = system_monotonic();
    hk_env_free(hk__saver_env(saver), prefix);

    pthread_mutex_lock(&w->mu);
    w->rc = rc;
    w->st = st;
    w->secs = t1 - t0;
    w->busy = 0;
    w->finished = 1;
    pthread_cond_broadcast(&w->cv);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

static int writer_busy(ckpt_hook *self) {
  int busy;
  pthread_mutex_lock(&self->w.mu);
  busy = self->w.busy;
  pthread_mutex_unlock(&self->w.mu);
  return busy;
}

static void writer_wait_idle(ckpt_hook *self) {
  pthread_mutex_lock(&self->w.mu);
  while (self->w.busy) pthread_cond_wait(&self->w.cv, &self->w.mu);
  pthread_mutex_unlock(&self->w.mu);
}

/* Stop the writer thread after the job in flight, if any, and join it. */
static void writer_join(ckpt_hook *self) {
  if (!self->thread_started) return;
  pthread_mutex_lock(&self->w.mu);
  self->w.quit = 1;
  pthread_cond_broadcast(&self->w.cv);
  pthread_mutex_unlock(&self->w.mu);
  pthread_join(self->tid, NULL);
  self->thread_started = 0;
  pthread_mutex_lock(&self->w.mu);
  self->w.quit = 0;
  pthread_mutex_unlock(&self->w.mu);
}

/* D3.7: the executor forgets the snapshot once the writer is idle (every
 * copy made; the executor would complete a pending one first anyway). */
static void detach_snapshot(ckpt_hook *self) {
  hk_control_snapshot a = HK_CONTROL_SNAPSHOT_INIT;
  hk_status st = HK_STATUS_INIT;

  if (self->attached == NULL) return;
  a.snapshot = self->snap;
  if (hk_executor_control(self->attached, HK_CONTROL_SNAPSHOT_DETACH, &a, &st) != HK_OK)
    hk_hook_log(self->hook, HK_LOG_WARNING, "%s: detaching the checkpoint snapshot of %s from the executor: %s",
                self->kind, self->save_path, st.message);
  self->attached = NULL;
  hk_hook_log(self->hook, HK_LOG_DEBUG,
              "Checkpoint snapshot for %" PRId64 " copied in the background; the training thread copied %zu of its "
              "%zu tensors itself.",
              self->snap_step, hk__snapshot_copied_here(self->snap), self->snap_n);
}

/* Take the writer's finished result, if any, out of its slot. */
static int take_finished(ckpt_hook *self, int64_t *step, double *secs, hk_code *rc, hk_status *wst) {
  writer *w = &self->w;
  int finished;

  pthread_mutex_lock(&w->mu);
  finished = w->finished;
  if (finished) {
    w->finished = 0;
    *step = w->step;
    *secs = w->secs;
    *rc = w->rc;
    *wst = w->st;
  }
  pthread_mutex_unlock(&w->mu);
  return finished;
}

static hk_code write_failed(const ckpt_hook *self, int64_t step, hk_code rc, const hk_status *wst, hk_status *st) {
  return hk_status_set(st, rc, "Checkpoint for step %" PRId64 " into %s failed: %s", step, self->save_path,
                       wst->message[0] != '\0' ? wst->message : hk_code_name(rc));
}

/* D3.4 success: log lines, event, listeners' after_save. */
static hk_code complete_ok(ckpt_hook *self, hk_raw_session *rs, int64_t step, double secs, int *stop, hk_status *st) {
  hk_code rc;

  self->have_written = 1;
  self->last_written = step;
  hk_hook_log(self->hook, HK_LOG_INFO, "Checkpoint actual writing time: (%.3f sec)", secs);
  hk_hook_log(self->hook, HK_LOG_INFO, "Checkpoint finished for %" PRId64 " into %s.", step, self->save_path);
  rc = write_event(self, step, st);
  if (rc != HK_OK) return rc;
  return listeners_after_save(self, rs, step, stop, st);
}

/* Keep the first error for the next after_run or end(); a later one is
 * logged, since a call returns one error. */
static void hold_error(ckpt_hook *self, hk_code rc, const hk_status *st) {
  if (self->held_err.code == HK_OK) {
    hk__status_copy(&self->held_err, st);
    self->held_err.code = rc;
    return;
  }
  hk_hook_log(self->hook, HK_LOG_ERROR, "%s: %s (not returned: an earlier checkpoint error of %s is pending)",
              self->kind, st->message, self->save_path);
}

/* D3.4 at a re-creation (the writer is idle): nothing is processed that can
 * fail the creation. The finished result moves out of the writer's slot,
 * which the creation's own save is about to reuse, and waits for the next
 * after_run or end(). Only when a result from an earlier re-creation is
 * still waiting (no after_run came between) is that older success
 * processed here, its errors held in turn, so what is kept stays bounded. */
static void hold_completion(ckpt_hook *self, hk_raw_session *rs, hk_creation_context *ctx) {
  hk_status wst = HK_STATUS_INIT, st = HK_STATUS_INIT;
  int64_t step = 0;
  double secs = 0;
  int stop = 0;
  hk_code rc = HK_OK;

  detach_snapshot(self); /* the writer is idle */
  if (!take_finished(self, &step, &secs, &rc, &wst)) return;
  if (rc != HK_OK) {
    write_failed(self, step, rc, &wst, &st);
    hold_error(self, rc, &st);
    return;
  }
  if (self->held_ok) {
    self->held_ok = 0;
    rc = complete_ok(self, rs, self->held_ok_step, self->held_ok_secs, &stop, &st);
    if (stop) hk_creation_context_request_stop(ctx);
    if (rc != HK_OK) hold_error(self, rc, &st);
  }
  self->held_ok = 1;
  self->held_ok_step = step;
  self->held_ok_secs = secs;
}

/* D3.4: process on the training thread what a re-creation held, then a
 * finished write. Nothing finished: OK. An error returns at once; what
 * remains waits for the next call. */
static hk_code process_completion(ckpt_hook *self, hk_raw_session *rs, int *stop, hk_status *st) {
  hk_status wst = HK_STATUS_INIT;
  int64_t step = 0;
  double secs = 0;
  hk_code rc = HK_OK;

  if (self->attached != NULL && !writer_busy(self)) detach_snapshot(self);
  if (self->held_err.code != HK_OK) {
    rc = self->held_err.code;
    hk__status_copy(st, &self->held_err);
    hk_status_clear(&self->held_err);
    return rc;
  }
  if (self->held_ok) {
    self->held_ok = 0;
    rc = complete_ok(self, rs, self->held_ok_step, self->held_ok_secs, stop, st);
    if (rc != HK_OK) return rc;
  }
  if (!take_finished(self, &step, &secs, &rc, &wst)) return HK_OK;
  if (rc != HK_OK) return write_failed(self, step, rc, &wst, st);
  return complete_ok(self, rs, step, secs, stop, st);
}

/* Grow the snapshot buffer and the tensor array when the variables need more
 * than they hold: after the first save of a session this allocates nothing
 * (D3.2). */
static hk_code reserve_snapshot(ckpt_hook *self, size_t nbytes, size_t ntensors, hk_status *st) {
  if (nbytes > self->buf_cap || self->buf == NULL) {
    size_t cap = nbytes > 0 ? nbytes : 1;
    unsigned char *p = hk_env_alloc(&self->senv, cap);
    if (p == NULL)
      return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "%s: out of memory for a %zu-byte checkpoint snapshot of %s",
                           self->kind, nbytes, self->save_path);
    hk_env_free(&self->senv, self->buf);
    self->buf = p;
    self->buf_cap = cap;
  }
  if (ntensors > self->tensors_cap || self->tensors == NULL) {
    size_t cap = ntensors > 0 ? ntensors : 1;
    hk__ckpt_tensor *t = hk_env_calloc(&self->senv, cap, sizeof(*t));
    if (t == NULL)
      return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "%s: out of memory for the checkpoint snapshot of %s", self->kind,
                           self->save_path);
    hk_env_free(&self->senv, self->tensors);
    self->tensors = t;
    self->tensors_cap = cap;
  }
  if (ntensors > self->var_index_cap || self->var_index == NULL) {
    size_t cap = ntensors > 0 ? ntensors : 1;
    size_t *ix = hk_env_calloc(&self->senv, cap, sizeof(*ix));
    if (ix == NULL)
      return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "%s: out of memory for the checkpoint snapshot of %s", self->kind,
                           self->save_path);
    hk_env_free(&self->senv, self->var_index);
    self->var_index = ix;
    self->var_index_cap = cap;
  }
  if (self->snap == NULL) {
    hk_code rc = hk__snapshot_new(&self->snap, &self->senv, st);
    if (rc != HK_OK) return rc;
  }
  return HK_OK;
}

/* D3.1, D3.7: snapshot at the step boundary and hand the write over. The
 * writer must be idle. The training thread reads every variable's view and
 * lays the snapshot out; an executor that takes part gets it attached, and
 * the writer copies what the executor has not copied before a write; any
 * other executor's variables are all copied here, now. */
static hk_code save_async(ckpt_hook *self, hk_raw_session *rs, int64_t step, hk_status *st) {
  hk_executor *ex = hk_raw_session_executor(rs);
  hk_control_snapshot attach = HK_CONTROL_SNAPSHOT_INIT;
  hk_status why = HK_STATUS_INIT;
  size_t nbytes = 0, ntensors = 0, off = 0;
  double metric;
  hk_code rc = resolve_saver(self, st);

  if (rc != HK_OK) return rc;
  rc = listeners_before_save(self, rs, step, st);
  if (rc != HK_OK) return rc;
  rc = hk__saver_snapshot_size(self->saver, &nbytes, &ntensors, st);
  if (rc != HK_OK) return rc;
  rc = reserve_snapshot(self, nbytes, ntensors, st);
  if (rc != HK_OK) return rc;
  rc = read_metric(self, rs, step, &metric, st); /* before the views: a run invalidates them */
  if (rc != HK_OK) return rc;
  detach_snapshot(self); /* the last one is complete: the writer is idle */
  rc = hk__snapshot_reset(self->snap, ntensors, hk_executor_variable_count(ex), st);
  if (rc != HK_OK) return rc;
  rc = hk__saver_snapshot_views(self->saver, rs, self->tensors, self->var_index, ntensors, st);
  if (rc != HK_OK) return rc;
  if (!self->thread_started) {
    int err = pthread_create(&self->tid, NULL, writer_main, self);
    if (err != 0)
      return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "%s: cannot start the checkpoint writer thread for %s (error %d)",
                           self->kind, self->save_path, err);
    self->thread_started = 1;
  }
  for (size_t i = 0; i < ntensors; i++) {
    hk_tensor *v = &self->tensors[i].value;
    unsigned char *dst = self->buf + off;
    if (v->nbytes > self->buf_cap - off)
      return hk_status_set(st, HK_INTERNAL, "%s: the snapshot of %s does not fit its %zu-byte buffer (at %s)",
                           self->kind, self->save_path, self->buf_cap, self->tensors[i].name);
    hk__snapshot_add(self->snap, self->var_index[i], v->data, dst, v->nbytes);
    v->data = v->nbytes > 0 ? dst : NULL;
    off += (v->nbytes + 63) / 64 * 64;
    if (off > self->buf_cap) off = self->buf_cap;
  }
  hk__snapshot_arm(self->snap);
  attach.session = hk__raw_session_impl(rs);
  attach.snapshot = self->snap;
  if (hk_executor_control(ex, HK_CONTROL_SNAPSHOT_ATTACH, &attach, &why) == HK_OK) {
    self->attached = ex;
    self->snap_step = step;
    self->snap_n = ntensors;
  } else {
    if (!self->overlap_refused)
      hk_hook_log(self->hook, HK_LOG_DEBUG,
                  "%s: the executor copies no snapshot in the background now (%s): a snapshot of %s it declines is "
                  "copied at the step boundary (said once per session)",
                  self->kind, why.message, self->save_path);
    self->overlap_refused = 1;
    hk_snapshot_complete(self->snap);
  }
  /* The writer is idle: the Saver is ours until the job is handed over. */
  if (self->best_k > 0) hk__saver_note_metric(self->saver, metric);
  pthread_mutex_lock(&self->w.mu);
  self->w.saver = self->saver;
  self->w.step = step;
  self->w.flags = HK_SAVE_DEFAULT;
  self->w.now = hk_env_wall(hk__saver_env(self->saver));
  self->w.tensors = self->tensors;
  self->w.ntensors = ntensors;
  self->w.snap = self->snap;
  self->w.pending = 1;
  self->w.busy = 1;
  pthread_cond_broadcast(&self->w.cv);
  pthread_mutex_unlock(&self->w.mu);
  hk_hook_log(self->hook, HK_LOG_INFO, "Saving checkpoints for %" PRId64 " into %s.", step, self->save_path);
  return HK_OK;
}

/* ---- per-session resources ---------------------------------------------------- */

/* Release what begin() acquired. A write in flight is completed first and
 * its result dropped (the session that wanted it is gone). */
static void release_session(ckpt_hook *self) {
  if (!self->in_session) return;
  if (self->async) {
    writer_join(self);
    self->w.pending = 0;
    self->w.busy = 0;
    self->w.finished = 0;
    detach_snapshot(self);
  }
  self->held_ok = 0;
  hk_status_clear(&self->held_err);
  if (self->owns_events) {
    /* H26: flushed at close, also when no end() ran; the session flushes
     * the writers it owns itself. */
    hk_status st = HK_STATUS_INIT;
    if (hk__event_writer_flush(self->events, &st) != HK_OK)
      hk_hook_log(self->hook, HK_LOG_ERROR, "%s: %s (not returned)", self->kind, st.message);
    hk__event_writer_free(self->events);
  }
  self->events = NULL;
  self->owns_events = 0;
  hk_env_free(&self->senv, self->buf);
  self->buf = NULL;
  self->buf_cap = 0;
  hk_env_free(&self->senv, self->tensors);
  self->tensors = NULL;
  self->tensors_cap = 0;
  hk__snapshot_free(self->snap);
  self->snap = NULL;
  hk_env_free(&self->senv, self->var_index);
  self->var_index = NULL;
  self->var_index_cap = 0;
  self->overlap_refused = 0;
  hk_env_free(&self->senv, self->graph_text);
  self->graph_text = NULL;
  self->graph_len = self->graph_cap = 0;
  hk_env_free(&self->senv, self->last_prefix);
  self->last_prefix = NULL;
  self->rs = NULL;
  self->in_session = 0;
}

/* ---- hook callbacks ----------------------------------------------------------- */

/* C92, C104: "Create ..." through hk_hook_env(): the hook's own env, or in
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
  rc = hk_timer_init(&self->timer, self->save_secs, self->save_steps, "save_secs", "save_steps", &self->senv.clock,
                     status);
  if (rc != HK_OK) return rc;

  rc = hk__mkdirs(&self->senv, self->dir, status);
  if (rc != HK_OK) return rc;
  rc = hk__hook_event_writer(self->hook, self->dir, &self->events, &self->owns_events, status);
  if (rc != HK_OK) return rc;
  rc = hk_executor_global_step(graph, &info, NULL, status);
  if (rc == HK_NOT_FOUND)
    return hk_status_set(status, HK_FAILED_PRECONDITION, "Global step should be created to use %s.", self->kind);
  if (rc != HK_OK) return rc;
  self->gs = info.tensor;
  self->metric = HK_NO_HANDLE;
  if (self->best_k > 0) {
    hk_status why = HK_STATUS_INIT;
    rc = hk_executor_resolve_tensor(graph, self->best_metric, &self->metric, &why);
    if (rc != HK_OK) return hk_status_set(status, rc, "%s: best_metric '%s': %s", self->kind, self->best_metric, why.message);
  }
  return listeners_begin(self, status);
}

/* The length of a directory name without its trailing slashes ("a/b",
 * "a/b/" and "a/b//" name one directory; "/" stays "/"). */
static size_t dir_len(const char *dir, size_t n) {
  while (n > 1 && dir[n - 1] == '/') n--;
  return n;
}

/* C94, C105: whether this creation restored the very checkpoint the hook
 * would write for `step`: `restored`'s directory is checkpoint_dir (trailing
 * slashes aside) and its name is the one the Saver gives step (C113), so
 * the checkpoint holds step. */
static hk_code restored_own_checkpoint(ckpt_hook *self, const char *restored, int64_t step, int *same, hk_status *st) {
  static const char data_ext[] = ".safetensors";
  size_t n = strlen(restored), k = sizeof data_ext - 1, cut, dn;
  const char *slash;
  char *mine;
  hk_code rc;

  *same = 0;
  rc = resolve_saver(self, st);
  if (rc != HK_OK) return rc;
  mine = hk__saver_prefix(self->saver, self->save_path, step);
  if (mine == NULL)
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "%s: out of memory naming the checkpoint of %s", self->kind,
                         self->save_path);
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

/* *same: the graph file already holds this session's description, read
 * back, so a resume that rewrites nothing (C94) needs no room on the disk.
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
  rc = hk_raw_session_global_step(session, &gs, status);
  if (rc != HK_OK) return rc;
  if (self->async) {
    /* A re-creation while a write is in flight (a hook driven outside a
     * session; a session has quiesced it already): finish it first, so at
     * most one save is in flight (D3.2) and the writer's stale-temporary
     * cleanup (D4.2) cannot remove graph.txt's temporary file below. */
    writer_wait_idle(self);
    hold_completion(self, session, ctx);
  }
  if (restored != NULL) {
    rc = restored_own_checkpoint(self, restored, gs, &skip, status);
    if (rc != HK_OK) return rc;
  }
  if (self->save_graph_def) {
    if (skip) {
      int same = 0;
      rc = capture_graph(self, status);
      if (rc == HK_OK && self->graph_state == GRAPH_CAPTURED) rc = graph_file_current(self, &same, status);
      if (rc == HK_OK && self->graph_state == GRAPH_CAPTURED && !same) rc = write_graph_file(self, status);
    } else {
      rc = write_graph_file(self, status);
    }
    if (rc != HK_OK) return rc;
  }
  if (skip) {
    /* C94, C105: the checkpoint of GS is the one just read: rewriting it
     * would change nothing but could fail (a resume on a full disk), and
     * its listeners' callbacks would announce a save that did not happen.
     * It counts as written for end() (C97, D3.5). */
    hk_hook_log(self->hook, HK_LOG_INFO,
                "Not saving checkpoint %" PRId64 " into %s at session creation: %s was just restored from it.", gs,
                self->save_path, restored);
    if (self->async) {
      self->deferring = 0;
      self->have_written = 1;
      self->last_written = gs;
    }
  } else if (self->async) {
    self->deferring = 0;
    rc = save_async(self, session, gs, status);
  } else {
    /* C94: the listeners' stop request from this save is ignored. */
    rc = save_sync(self, session, gs, &stop, status);
  }
  if (rc != HK_OK) return rc;
  hk_timer_update(&self->timer, gs, NULL, NULL);
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

static hk_code cs_after_run(void *user, hk_run_context *ctx, const hk_run_values *values, hk_status *status) {
  ckpt_hook *self = user;
  hk_raw_session *rs = hk_run_context_session(ctx);
  int64_t stale, gs;
  int stop = 0;
  hk_code rc;

  if (values == NULL || values->nresults < 1 || values->results == NULL)
    return hk_status_set(status, HK_INTERNAL, "%s: the global step it fetched is missing from its run values",
                         self->kind);
  rc = hk_tensor_to_i64(&values->results[0], "global_step", &stale, status);
  if (rc != HK_OK) return rc;

  if (self->async) {
    /* D3.4: a failed write fails this call, and no new save starts. */
    rc = process_completion(self, rs, &stop, status);
    if (stop) hk_run_context_request_stop(ctx);
    if (rc != HK_OK) return rc;
  }
  /* C96: stale GS + steps_per_run is the post-run GS when every run adds
   * steps_per_run (H29); the raw-session read confirms it. */
  if (!hk_timer_should_trigger(&self->timer, add_sat(stale, self->steps_per_run))) return HK_OK;
  rc = hk_raw_session_global_step(rs, &gs, status);
  if (rc != HK_OK) return rc;
  if (!hk_timer_should_trigger(&self->timer, gs)) return HK_OK;

  if (!self->async) {
    hk_timer_update(&self->timer, gs, NULL, NULL);
    rc = save_sync(self, rs, gs, &stop, status);
    if (rc != HK_OK) return rc;
    if (stop) hk_run_context_request_stop(ctx);
    return HK_OK;
  }

  if (writer_busy(self)) {
    if (!self->block_when_busy) {
      /* D3.3: no snapshot, timer unchanged, so the next after_run tries again. */
      if (!self->deferring)
        hk_hook_log(self->hook, HK_LOG_INFO, "Saver thread still in progress, deferring checkpoint.");
      self->deferring = 1;
      return HK_OK;
    }
    writer_wait_idle(self);
  }
  /* The writer is idle, but it may have finished since the top of this
   * call: its result is processed before a new job replaces it. */
  stop = 0;
  rc = process_completion(self, rs, &stop, status);
  if (stop) hk_run_context_request_stop(ctx);
  if (rc != HK_OK) return rc;
  self->deferring = 0;
  hk_timer_update(&self->timer, gs, NULL, NULL);
  return save_async(self, rs, gs, status);
}

/* C97: save unless the final step was just saved; listeners' end always. */
static hk_code end_sync(ckpt_hook *self, hk_raw_session *session, hk_status *status) {
  int64_t gs, last;
  int stop = 0;
  hk_code rc;

  rc = hk_raw_session_global_step(session, &gs, status);
  if (rc != HK_OK) return rc;
  if (!hk_timer_last_triggered_step(&self->timer, &last) || last != gs) {
    rc = save_sync(self, session, gs, &stop, status);
    if (rc != HK_OK) return rc;
  }
  rc = listeners_end(self, session, gs, status);
  if (rc != HK_OK) return rc;
  return hk__event_writer_flush(self->events, status);
}

/* Remember the first error of end(). */
static void keep_first(hk_code *first, hk_status *status, hk_code rc, const hk_status *st) {
  if (rc == HK_OK || *first != HK_OK) return;
  *first = rc;
  hk__status_copy(status, st);
}

/* D3.5: drain, process, then save GS synchronously unless it was written;
 * every step runs, and the first error is returned. */
static hk_code end_async(ckpt_hook *self, hk_raw_session *session, hk_status *status) {
  hk_code first = HK_OK, rc;
  hk_status st = HK_STATUS_INIT;
  int64_t gs;
  int stop = 0;

  hk_hook_log(self->hook, HK_LOG_INFO, "Waiting for any pending checkpoints to finish.");
  writer_wait_idle(self);
  writer_join(self);
  /* A held error, a held success and the writer's result: each call
   * processes at least one of what remains, stopping at an error. */
  for (int i = 0; i < 3; i++) {
    rc = process_completion(self, session, &stop, &st);
    keep_first(&first, status, rc, &st);
  }

  rc = hk_raw_session_global_step(session, &gs, &st);
  if (rc != HK_OK) {
    keep_first(&first, status, rc, &st);
    return first;
  }
  if (!self->have_written || self->last_written != gs) {
    /* The stop request of this save is moot: the session is ending. */
    rc = save_sync(self, session, gs, &stop, &st);
    keep_first(&first, status, rc, &st);
  }
  rc = listeners_end(self, session, gs, &st);
  keep_first(&first, status, rc, &st);
  rc = hk__event_writer_flush(self->events, &st);
  keep_first(&first, status, rc, &st);
  return first;
}

static hk_code cs_end(void *user, hk_raw_session *session, hk_status *status) {
  ckpt_hook *self = user;
  hk_code rc = self->async ? end_async(self, session, status) : end_sync(self, session, status);

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
  if (self->async) {
    pthread_cond_destroy(&self->w.cv);
    pthread_mutex_destroy(&self->w.mu);
  }
  free_options(self);
  if (has_env) env = self->env;
  hk_env_free(has_env ? &env : NULL, self);
}

/* The session is letting go: its Scaffold and Saver may be freed next, so a
 * write in flight must finish now (its result is dropped when end() did not
 * process it: the session that wanted it is gone). */
static void cs_detach(void *user) { release_session(user); }

/* A re-creation is about to restore through the Saver the writer may be
 * using (D3.2, D6.1): wait for it. Its result stays in the writer's slot
 * for after_create_session to hold (D3.4). */
static void cs_quiesce(void *user) {
  ckpt_hook *self = user;
  if (self->async && self->in_session) writer_wait_idle(self);
}

static const hk_hook_vtable checkpoint_saver_vtable = {
    HK_HOOK_VTABLE_VERSION, cs_begin, cs_after_create_session, cs_before_run, cs_after_run, cs_end, cs_destroy,
};

/* ---- construction (C92, C104) -------------------------------------------------- */

/* The size of each version of the options struct: a program built against
 * an older header has only that much (H10's rule, for options). */
static size_t options_size(uint32_t version) {
  return version >= 2 ? sizeof(hk_checkpoint_saver_options) : offsetof(hk_checkpoint_saver_options, best_k);
}

hk_code hk_checkpoint_saver_options_init(hk_checkpoint_saver_options *opts, uint32_t version) {
  static const hk_checkpoint_saver_options init = HK_CHECKPOINT_SAVER_OPTIONS_INIT;

  if (opts == NULL || version == 0 || version > HK_CHECKPOINT_SAVER_OPTIONS_VERSION) return HK_INVALID_ARGUMENT;
  memcpy(opts, &init, options_size(version));
  opts->version = version;
  return HK_OK;
}

/* The options as this version of the library reads them: the fields the
 * caller's version has, defaults for the rest. */
static void full_options(hk_checkpoint_saver_options *full, const hk_checkpoint_saver_options *given) {
  static const hk_checkpoint_saver_options init = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
  *full = init;
  memcpy(full, given, options_size(given->version));
}

/* Everything the options say, checked before anything is allocated (H3). */
static hk_code validate(const hk_checkpoint_saver_options *opts, const char *kind, hk_status *st) {
  hk_timer probe;
  size_t i;
  hk_code rc;

  if (opts == NULL) return hk_status_set(st, HK_INVALID_ARGUMENT, "opts is NULL: %s needs a checkpoint_dir", kind);
  if (opts->version == 0 || opts->version > HK_CHECKPOINT_SAVER_OPTIONS_VERSION)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "opts->version: %u is not HK_CHECKPOINT_SAVER_OPTIONS_VERSION (%u)",
                         (unsigned)opts->version, (unsigned)HK_CHECKPOINT_SAVER_OPTIONS_VERSION);
  rc = hk_env_check(opts->env, "opts->env", st);
  if (rc != HK_OK) return rc;
  if (opts->best_k < 0)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "best_k: must be >= 0 (0: off), got %" PRId64, opts->best_k);
  if (opts->best_k > 0 && (opts->best_metric == NULL || opts->best_metric[0] == '\0'))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "best_metric: best_k %" PRId64 " needs the name of a tensor to rank by",
                         opts->best_k);
  if (opts->best_k == 0 && opts->best_metric != NULL)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "best_metric: '%s' is given but best_k is 0 (best-k retention is off)",
                         opts->best_metric);
  if (opts->best_mode != HK_MONITOR_MIN && opts->best_mode != HK_MONITOR_MAX)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "best_mode: %d is neither HK_MONITOR_MIN nor HK_MONITOR_MAX",
                         (int)opts->best_mode);
  if (opts->checkpoint_dir == NULL || opts->checkpoint_dir[0] == '\0')
    return hk_status_set(st, HK_INVALID_ARGUMENT, "checkpoint_dir: required by %s", kind);
  if (opts->saver != NULL && opts->scaffold != NULL)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "You cannot provide both saver and scaffold.");
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
  if (opts->best_k > 0 && (self->best_metric = hk_env_strdup(env, opts->best_metric)) == NULL)
    return HK_RESOURCE_EXHAUSTED;
  return HK_OK;
}

static hk_code hook_new(hk_hook **out, const hk_checkpoint_saver_options *opts, int async, hk_status *status) {
  const char *kind = async ? "AsyncCheckpointSaverHook" : "CheckpointSaverHook";
  hk_checkpoint_saver_options full;
  ckpt_hook *self;
  hk_code rc;

  if (out == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "out: must not be NULL");
  *out = NULL;
  /* A version-1 struct ends before best_k: read what it has, the defaults
   * for the rest (validate refuses an unknown version before reading). */
  if (opts != NULL && opts->version >= 1 && opts->version <= HK_CHECKPOINT_SAVER_OPTIONS_VERSION) {
    full_options(&full, opts);
    opts = &full;
  }
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
  if (copy_options(self, opts) != HK_OK) {
    rc = hk_status_set(status, HK_RESOURCE_EXHAUSTED, "%s: out of memory", kind);
    goto fail;
  }
  if (async) {
    if (pthread_mutex_init(&self->w.mu, NULL) != 0) {
      rc = hk_status_set(status, HK_RESOURCE_EXHAUSTED, "%s: cannot create a mutex", kind);
      goto fail;
    }
    if (pthread_cond_init(&self->w.cv, NULL) != 0) {
      pthread_mutex_destroy(&self->w.mu);
      rc = hk_status_set(status, HK_RESOURCE_EXHAUSTED, "%s: cannot create a condition variable", kind);
      goto fail;
    }
  }
  rc = hk_hook_new(out, &checkpoint_saver_vtable, self, kind, opts->env, status);
  if (rc != HK_OK) {
    if (async) {
      pthread_cond_destroy(&self->w.cv);
      pthread_mutex_destroy(&self->w.mu);
    }
    goto fail;
  }
  self->hook = *out;
  hk__hook_set_on_detach(*out, cs_detach);
  hk__hook_set_on_quiesce(*out, cs_quiesce);
  /* With an env, it says how to log now; without one, the session's env
   * will, at the first begin(): logging through the default stderr sink
   * here would ignore the log level the session is given (C92, C104). */
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
  return hook_new(out, opts, 0, status);
}

hk_code hk_async_checkpoint_saver_hook_new(hk_hook **out, const hk_checkpoint_saver_options *opts, hk_status *status) {
  return hook_new(out, opts, 1, status);
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
    /* The Saver is the writer's while a write is in flight (D3.2). */
    writer_wait_idle(self);
    rc = process_completion(self, rs, &stop, st);
    if (rc != HK_OK) return rc;
  }
  rc = resolve_saver(self, st);
  if (rc != HK_OK) return rc;
  rc = hk_raw_session_global_step(rs, &gs, st);
  if (rc != HK_OK) return rc;
  if (name == NULL) {
    char *mine;
    /* A managed save at GS, as the timer's (C98); the cadence restarts. */
    hk_timer_update(&self->timer, gs, NULL, NULL);
    rc = save_sync(self, rs, gs, &stop, st);
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
    rc = hk_saver_save(self->saver, rs, path, HK_UNSET_STEPS, HK_SAVE_NO_STATE, &written, st);
    hk_env_free(&self->senv, path);
    if (rc != HK_OK) return rc;
    return keep_prefix(self, written, prefix, st);
  }
}

hk_code hk_checkpoint_saver_hook_save(hk_hook *hook, const char *name, const char **prefix, hk_status *status) {
  ckpt_hook *self;

  if (prefix != NULL) *prefix = NULL;
  if (hook == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_checkpoint_saver_hook_save: hook is NULL");
  if (hook->vt != &checkpoint_saver_vtable)
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         "hk_checkpoint_saver_hook_save: hook '%s' is not a checkpoint saver hook", hk_hook_name(hook));
  self = hook->user;
  if (name != NULL && !hk__valid_name(name))
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         "hk_checkpoint_saver_hook_save: '%s' is not a valid checkpoint name", name);
  if (!self->in_session || self->rs == NULL)
    return hk_status_set(status, HK_FAILED_PRECONDITION,
                         "hk_checkpoint_saver_hook_save: %s '%s' serves no session with a raw session", self->kind,
                         hk_hook_name(hook));
  return save_now(self, name, prefix, status);
}
