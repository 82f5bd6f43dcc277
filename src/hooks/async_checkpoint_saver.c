/*
 * hooked — AsyncCheckpointSaverHook (contract groups K and L): its
 * writer thread, its copy-before-write snapshot, its completion processing
 * and its end(). The rest of the hook (the listeners, the synchronous save,
 * the callbacks and the options) it shares with CheckpointSaverHook, in
 * checkpoint_saver.c (checkpoint_saver_internal.h).
 *
 * The asynchronous hook splits a save: on the training thread it runs
 * the listeners' before_save, lays out every variable of its Saver in one
 * snapshot buffer (allocated at the first save of a session, grown only when
 * the variables grow) and hands (snapshot, step, path) to one writer thread.
 * Where the executor takes part in copy-before-write snapshots (the
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
 * at a re-creation is kept for the next after_run or end(): an
 * error returned by after_create_session would fail the session (it
 * would enter the failed state) where an after_run's leaves it usable.
 *
 * A write still in flight when a session lets go of the hook without end()
 * (an unclean close calls no hook; a session freed without close) is
 * completed when the session detaches its hooks, before it frees its
 * Scaffold and that Scaffold's Saver; its result is then dropped.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L

#include "ckpt/ckpt.h"
#include "ckpt/snapshot.h"
#include "events/events.h"
#include "hooks/checkpoint_saver_internal.h"
#include "util/common.h"

#include <inttypes.h>
#include <pthread.h>
#include <time.h>

/* ---- the writer thread --------------------------------------------------------- */

/* The writer thread may call only the allocator, the log sink and the fs:
 * the env's clocks are the caller's and need not be thread-safe, so
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
    hk_status st = HK_STATUS_INIT, fail;
    char *prefix = NULL;
    double t0, t1;
    hk_code rc;

    /* A job handed over before quit is written first. */
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
    fail = w->fail;
    hk_status_clear(&w->fail);
    pthread_mutex_unlock(&w->mu);

    if (fail.code != HK_OK) {
      /* The other ranks' writers are in this save: fail it with them. */
      (void)hk_saver_fail_save(saver, self->save_path, step, fail.code, fail.message, &st);
      pthread_mutex_lock(&w->mu);
      w->busy = 0;
      pthread_cond_broadcast(&w->cv);
      continue;
    }
    /* The copies nobody made yet, while the training thread runs on. */
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

int hk__async_ckpt_writer_busy(ckpt_hook *self) {
  int busy;
  pthread_mutex_lock(&self->w.mu);
  busy = self->w.busy;
  pthread_mutex_unlock(&self->w.mu);
  return busy;
}

void hk__async_ckpt_writer_wait_idle(ckpt_hook *self) {
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

/* The executor forgets the snapshot once the writer is idle (every
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
              "Checkpoint snapshot for %" PRId64
              " copied in the background; the training thread copied %zu of its "
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

/* A write that succeeded, processed on the training thread: log lines,
 * event, listeners' after_save. */
static hk_code complete_ok(ckpt_hook *self, hk_raw_session *rs, int64_t step, double secs, int *stop, hk_status *st) {
  hk_code rc;

  self->have_written = 1;
  self->last_written = step;
  hk_hook_log(self->hook, HK_LOG_DEBUG, "Checkpoint actual writing time: (%.3f sec)", secs);
  hk_hook_log(self->hook, HK_LOG_INFO, "Checkpoint finished for %" PRId64 " into %s.", step, self->save_path);
  rc = hk__ckpt_hook_write_event(self, step, st);
  if (rc != HK_OK) return rc;
  return hk__ckpt_hook_listeners_after_save(self, rs, step, stop, st);
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

/* A finished write found at a re-creation (the writer is idle): nothing is processed that can
 * fail the creation. The finished result moves out of the writer's slot,
 * which the creation's own save is about to reuse, and waits for the next
 * after_run or end(). Only when a result from an earlier re-creation is
 * still waiting (no after_run came between) is that older success
 * processed here, its errors held in turn, so what is kept stays bounded. */
void hk__async_ckpt_hold_completion(ckpt_hook *self, hk_raw_session *rs, hk_creation_context *ctx) {
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

/* Process on the training thread what a re-creation held, then a
 * finished write. Nothing finished: OK. An error returns at once; what
 * remains waits for the next call. */
hk_code hk__async_ckpt_process_completion(ckpt_hook *self, hk_raw_session *rs, int *stop, hk_status *st) {
  hk_status wst = HK_STATUS_INIT;
  int64_t step = 0;
  double secs = 0;
  hk_code rc = HK_OK;

  if (self->attached != NULL && !hk__async_ckpt_writer_busy(self)) detach_snapshot(self);
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
 * than they hold: after the first save of a session this allocates nothing. */
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

static hk_code start_writer(ckpt_hook *self, hk_status *st) {
  int err;

  if (self->thread_started) return HK_OK;
  err = pthread_create(&self->tid, NULL, writer_main, self);
  if (err != 0)
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "%s: cannot start the checkpoint writer thread for %s (error %d)",
                         self->kind, self->save_path, err);
  self->thread_started = 1;
  return HK_OK;
}

/* This rank failed before handing the save of `step` over (rc, st). Over a
 * group the other ranks' writers are in that collective save: the failure
 * is handed to this rank's writer, the thread the group's saves are made
 * from, which joins the save as failed. A writer that cannot start never
 * made a save: the training thread joins instead. The writer is idle. */
static void hand_over_failure(ckpt_hook *self, int64_t step, hk_code rc, const hk_status *st) {
  hk_status why = HK_STATUS_INIT;

  if (self->gsize <= 1 || self->saver == NULL) return;
  if (start_writer(self, &why) != HK_OK) {
    hk__ckpt_hook_join_failed(self, step, rc, st);
    return;
  }
  pthread_mutex_lock(&self->w.mu);
  self->w.saver = self->saver;
  self->w.step = step;
  self->w.tensors = NULL;
  self->w.ntensors = 0;
  self->w.snap = NULL;
  hk_status_set(&self->w.fail, rc, "%s", st != NULL && st->message[0] != '\0' ? st->message : hk_code_name(rc));
  self->w.pending = 1;
  self->w.busy = 1;
  pthread_cond_broadcast(&self->w.cv);
  pthread_mutex_unlock(&self->w.mu);
}

static hk_code snapshot_and_hand_over(ckpt_hook *self, hk_raw_session *rs, int64_t step, hk_status *st);

/* Snapshot at the step boundary and hand the write over; a failure of
 * this rank before the hand-over is handed over as the rank's part of the
 * save (over a group). The writer must be idle. */
hk_code hk__async_ckpt_save(ckpt_hook *self, hk_raw_session *rs, int64_t step, hk_status *st) {
  hk_code rc = hk__ckpt_hook_resolve_saver(self, st);

  if (rc != HK_OK) return rc;
  rc = snapshot_and_hand_over(self, rs, step, st);
  if (rc != HK_OK) hand_over_failure(self, step, rc, st);
  return rc;
}

/* The training thread reads every variable's view and lays the snapshot
 * out; an executor that takes part gets it attached, and the writer copies
 * what the executor has not copied before a write; any other executor's
 * variables are all copied here, now. */
static hk_code snapshot_and_hand_over(ckpt_hook *self, hk_raw_session *rs, int64_t step, hk_status *st) {
  hk_executor *ex = hk_raw_session_executor(rs);
  hk_control_snapshot attach = HK_CONTROL_SNAPSHOT_INIT;
  hk_status why = HK_STATUS_INIT;
  size_t nbytes = 0, ntensors = 0, off = 0;
  double metric;
  hk_code rc = hk__ckpt_hook_listeners_before_save(self, rs, step, st);

  if (rc != HK_OK) return rc;
  rc = hk__saver_snapshot_size(self->saver, &nbytes, &ntensors, st);
  if (rc != HK_OK) return rc;
  rc = reserve_snapshot(self, nbytes, ntensors, st);
  if (rc != HK_OK) return rc;
  rc = hk__ckpt_hook_read_metric(self, rs, step, &metric, st); /* before the views: a run invalidates them */
  if (rc != HK_OK) return rc;
  detach_snapshot(self); /* the last one is complete: the writer is idle */
  rc = hk__snapshot_reset(self->snap, ntensors, hk_executor_variable_count(ex), st);
  if (rc != HK_OK) return rc;
  rc = hk__saver_snapshot_views(self->saver, rs, self->tensors, self->var_index, ntensors, st);
  if (rc != HK_OK) return rc;
  rc = start_writer(self, st);
  if (rc != HK_OK) return rc;
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
  attach.session = rs;
  attach.snapshot = self->snap;
  if (hk_executor_control(ex, HK_CONTROL_SNAPSHOT_ATTACH, &attach, &why) == HK_OK) {
    self->attached = ex;
    self->snap_step = step;
    self->snap_n = ntensors;
  } else {
    /* UNIMPLEMENTED is the executor's choice, said at DEBUG; any other
     * error says the attach was wrong (a wrapper forwarding its own session
     * instead of the one it wraps), said at WARNING. Once per session each. */
    unsigned kind = why.code == HK_UNIMPLEMENTED ? 1u : 2u;
    if (!((unsigned)self->overlap_refused & kind))
      hk_hook_log(self->hook, kind == 1u ? HK_LOG_DEBUG : HK_LOG_WARNING,
                  "%s: the executor copies no snapshot in the background now (%s): a snapshot of %s it declines is "
                  "copied at the step boundary (said once per session)",
                  self->kind, why.message, self->save_path);
    self->overlap_refused |= (int)kind;
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
  hk_hook_log(self->hook, HK_LOG_DEBUG, "Saving checkpoints for %" PRId64 " into %s.", step, self->save_path);
  return HK_OK;
}

/* ---- per-session resources ---------------------------------------------------- */

/* The writer's mutex and condition variable, made with the hook. */
hk_code hk__async_ckpt_writer_init(ckpt_hook *self, hk_status *status) {
  if (pthread_mutex_init(&self->w.mu, NULL) != 0)
    return hk_status_set(status, HK_RESOURCE_EXHAUSTED, "%s: cannot create a mutex", self->kind);
  if (pthread_cond_init(&self->w.cv, NULL) != 0) {
    pthread_mutex_destroy(&self->w.mu);
    return hk_status_set(status, HK_RESOURCE_EXHAUSTED, "%s: cannot create a condition variable", self->kind);
  }
  return HK_OK;
}

void hk__async_ckpt_writer_destroy(ckpt_hook *self) {
  pthread_cond_destroy(&self->w.cv);
  pthread_mutex_destroy(&self->w.mu);
}

/* The writer's part of releasing a session: a write in flight is completed
 * first and its result dropped (the session that wanted it is gone). */
void hk__async_ckpt_stop_writer(ckpt_hook *self) {
  writer_join(self);
  self->w.pending = 0;
  self->w.busy = 0;
  self->w.finished = 0;
  detach_snapshot(self);
}

/* The snapshot buffer, its tensors and copies; nothing to free
 * for the synchronous hook, which never allocates them. */
void hk__async_ckpt_free_snapshot(ckpt_hook *self) {
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
}

/* ---- end ----------------------------------------------------------------------- */

/* Remember the first error of end(). */
static void keep_first(hk_code *first, hk_status *status, hk_code rc, const hk_status *st) {
  if (rc == HK_OK || *first != HK_OK) return;
  *first = rc;
  hk__status_copy(status, st);
}

/* Drain, process, then save GS synchronously unless it was written;
 * every step runs, and the first error is returned. */
hk_code hk__async_ckpt_end(ckpt_hook *self, hk_raw_session *session, hk_status *status) {
  hk_code first = HK_OK, rc;
  hk_status st = HK_STATUS_INIT;
  int64_t gs;
  int stop = 0;

  hk_hook_log(self->hook, HK_LOG_INFO, "Waiting for any pending checkpoints to finish.");
  hk__async_ckpt_writer_wait_idle(self);
  writer_join(self);
  /* A held error, a held success and the writer's result: each call
   * processes at least one of what remains, stopping at an error. */
  for (int i = 0; i < 3; i++) {
    rc = hk__async_ckpt_process_completion(self, session, &stop, &st);
    keep_first(&first, status, rc, &st);
  }

  rc = hk_raw_session_global_step(&gs, session, &st);
  if (rc != HK_OK) {
    keep_first(&first, status, rc, &st);
    return first;
  }
  if (!self->have_written || self->last_written != gs) {
    /* The stop request of this save is moot: the session is ending. */
    rc = hk__ckpt_hook_save_sync(self, session, gs, &stop, &st);
    keep_first(&first, status, rc, &st);
  }
  rc = hk__ckpt_hook_listeners_end(self, session, gs, &st);
  keep_first(&first, status, rc, &st);
  if (self->events != NULL) { /* a follower of a group has none */
    rc = hk__event_writer_flush(self->events, &st);
    keep_first(&first, status, rc, &st);
  }
  return first;
}

/* ---- construction -------------------------------------------------------------- */

hk_code hk_async_checkpoint_saver_hook_new(hk_hook **out, const hk_checkpoint_saver_options *opts, hk_status *status) {
  return hk__ckpt_hook_new(out, opts, 1, status);
}
