/*
 * Internal declarations shared by CheckpointSaverHook and
 * AsyncCheckpointSaverHook (hk__ names; not API). The two hooks are one
 * implementation: one struct, one vtable, one constructor, parted by
 * `async`.
 *
 *   checkpoint_saver.c        per-session resources, the hook callbacks,
 *                             the options and construction, and saves on
 *                             demand (hk_checkpoint_saver_hook_save)
 *   checkpoint_saver_save.c   what a save runs: the listeners, the Saver,
 *                             the metric, the graph file, the event, the
 *                             synchronous save
 *   async_checkpoint_saver.c  the asynchronous hook's writer thread,
 *                             snapshot, completion processing and end(),
 *                             and hk_async_checkpoint_saver_hook_new
 *   checkpoint_check_resume.c the check-resume mode (HOOKED_CHECK_RESUME):
 *                             the stop at a step, keeping every checkpoint
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_HOOKS_CHECKPOINT_SAVER_INTERNAL_H
#define HOOKED_HOOKS_CHECKPOINT_SAVER_INTERNAL_H

#include "hooked/checkpoint_saver.h"
#include "ckpt/ckpt.h"
#include "core/core.h"
#include "events/events.h"
#include "util/dir_lock.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* hooked's own text description of the graph: not a TensorFlow
 * GraphDef, so not named like one. */
#define GRAPH_FILE "graph.txt"

/* The graph description, captured once per session: the graph is finalized,
 * so every creation of the session writes the same graph.txt. */
enum { GRAPH_UNKNOWN = 0, GRAPH_CAPTURED, GRAPH_UNDESCRIBED };

typedef struct listener {
  const hk_checkpoint_listener_vtable *vt;
  void *user;
  char *name; /* NULL: "listener <index>" */
} listener;

/*
 * What the training thread and the writer thread share. Every field
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
  hk_snapshot *snap; /* copied by the writer before the write */
  /* A failed job (code not OK): this rank failed before its part of the
   * save of `step`, and the writer joins that collective save as failed
   * (hk_saver_fail_save()) instead of writing; its result is dropped, as
   * the training thread returned the failure already. */
  hk_status fail;
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
  int64_t best_k;    /* best-k retention: 0 off */
  char *best_metric; /* NULL without best_k */
  int best_mode;
  int restore_best; /* at a clean end(), the best checkpoint into the variables */
  /* Created without an env: the creation line waits for the first begin(),
   * to go through the session's env (its sink and log level). */
  int creation_unlogged;

  /* Per-session state, reset by begin(). */
  int in_session; /* begin() ran and its resources are held */
  hk_env senv;    /* the env in force at begin(), for per-session resources */
  hk_executor *graph;
  hk_handle gs;
  hk_handle metric; /* best_metric's tensor */
  hk_timer timer;
  hk_saver *saver; /* resolved at the first save */
  /* The place of the Saver in its group (hk_saver_group_place()), read in
   * begin(): with gsize > 1 every rank saves at the same steps and rank 0
   * alone (the chief) locks the directory, writes graph.txt and the
   * events. 0 and 1 without a group. */
  int grank, gsize;
  hk__event_writer *events;
  int owns_events;        /* no session: a writer of our own */
  hk__dir_lock *own_lock; /* no session: the directory's lock is ours */
  int graph_state;
  char *graph_text;
  size_t graph_len, graph_cap;

  /* Asynchronous hook only. */
  writer w;
  int thread_started;
  pthread_t tid;
  unsigned char *buf; /* snapshot buffer */
  size_t buf_cap;
  hk__ckpt_tensor *tensors;
  size_t tensors_cap;
  /* Copy-before-write: the copies of the snapshot in flight, each
   * tensor's executor index, and the executor the snapshot is attached to
   * (NULL: not attached). Detached on the training thread once the writer
   * is idle, so every copy is made. */
  hk_snapshot *snap;
  size_t *var_index;
  size_t var_index_cap;
  hk_executor *attached;
  int64_t snap_step; /* the attached snapshot's step and tensor count */
  size_t snap_n;
  int overlap_refused; /* the executor declined (1) or refused (2): each logged once per session */
  int have_written;    /* a checkpoint was written successfully this session */
  int64_t last_written;
  int deferring; /* the deferral line was logged for the current run of deferrals */
  /* Results met at re-creations, kept for the next after_run or end()
   * apart from the writer's slot, which the creation's own save reuses. */
  int held_ok; /* a successful write whose completion is not processed yet */
  int64_t held_ok_step;
  double held_ok_secs;
  hk_status held_err; /* code HK_OK: none; else the first error to return */

  /* The check-resume mode, read by begin() (report is not kept). */
  hk__check_resume check;
  int check_stopped; /* the stop was requested (and logged) */

  /* For saves on demand (hk_checkpoint_saver_hook_save). */
  hk_raw_session *rs; /* of the last after_create_session; NULL outside a session */
  char *last_prefix;  /* the last save on demand's prefix (senv) */
} ckpt_hook;

/* ---- checkpoint_saver_save.c --------------------------------------------------- */

/* The listeners' begin callbacks, in order. */
hk_code hk__ckpt_hook_listeners_begin(ckpt_hook *self, hk_status *st);
/* Capture the graph description once per session (graph_state says what
 * came of it), and write it to graph.txt when captured. */
hk_code hk__ckpt_hook_capture_graph(ckpt_hook *self, hk_status *st);
hk_code hk__ckpt_hook_write_graph_file(ckpt_hook *self, hk_status *st);

/* The listeners' callbacks, in order; every listener's
 * after_save is called even after one asked to stop. */
/* This rank failed before its part of the save of `step`: over a group of
 * more than one rank it joins that collective save as failed (on the
 * calling thread), so every rank fails it; rc and st stay the caller's. */
void hk__ckpt_hook_join_failed(ckpt_hook *self, int64_t step, hk_code rc, const hk_status *st);
hk_code hk__ckpt_hook_listeners_before_save(ckpt_hook *self, hk_raw_session *rs, int64_t step, hk_status *st);
hk_code hk__ckpt_hook_listeners_after_save(ckpt_hook *self, hk_raw_session *rs, int64_t step, int *stop, hk_status *st);
hk_code hk__ckpt_hook_listeners_end(ckpt_hook *self, hk_raw_session *rs, int64_t step, hk_status *st);
/* The explicit saver, the given scaffold's, the session's Scaffold's. */
hk_code hk__ckpt_hook_resolve_saver(ckpt_hook *self, hk_status *st);
/* That Saver without resolving it (NULL: none yet). */
hk_saver *hk__ckpt_hook_peek_saver(const ckpt_hook *self);
/* Whether this rank is a follower: a rank of a group other than rank 0,
 * which saves its shard and writes nothing of the job's. */
int hk__ckpt_hook_follower(const ckpt_hook *self);

/* best_metric's value now, for the checkpoint of `step`; NaN without
 * best_k. */
hk_code hk__ckpt_hook_read_metric(ckpt_hook *self, hk_raw_session *rs, int64_t step, double *out, hk_status *st);
/* The SessionLog CHECKPOINT event of `step`. */
hk_code hk__ckpt_hook_write_event(ckpt_hook *self, int64_t step, hk_status *st);
/* restore_best: the best checkpoint of the directory's record into every
 * global variable but the global step, through `rs`. */
hk_code hk__ckpt_hook_restore_best(ckpt_hook *self, hk_raw_session *rs, hk_status *st);
/* One synchronous save at `step`. */
hk_code hk__ckpt_hook_save_sync(ckpt_hook *self, hk_raw_session *rs, int64_t step, int *stop, hk_status *st);

/* ---- checkpoint_saver.c -------------------------------------------------------- */

/* Either hook, by `async`. */
hk_code hk__ckpt_hook_new(hk_hook **out, const hk_checkpoint_saver_options *opts, int async, hk_status *status);

/* ---- async_checkpoint_saver.c -------------------------------------------------- */

/* The writer's mutex and condition variable: made with the hook, destroyed
 * with it. */
hk_code hk__async_ckpt_writer_init(ckpt_hook *self, hk_status *status);
void hk__async_ckpt_writer_destroy(ckpt_hook *self);
/* Whether a write is handed over and not finished. */
int hk__async_ckpt_writer_busy(ckpt_hook *self);
/* Wait until no write is in flight. */
void hk__async_ckpt_writer_wait_idle(ckpt_hook *self);
/* Releasing a session: stop_writer joins the writer (a write in flight is
 * completed, its result dropped); free_snapshot frees the snapshot buffer,
 * its tensors and copies (nothing for the synchronous hook). */
void hk__async_ckpt_stop_writer(ckpt_hook *self);
void hk__async_ckpt_free_snapshot(ckpt_hook *self);
/* A write finished at a re-creation (the writer idle): keep its result
 * for the next after_run or end(). */
void hk__async_ckpt_hold_completion(ckpt_hook *self, hk_raw_session *rs, hk_creation_context *ctx);
/* Process what a re-creation held, then a finished write. */
hk_code hk__async_ckpt_process_completion(ckpt_hook *self, hk_raw_session *rs, int *stop, hk_status *st);
/* Snapshot at the step boundary and hand the write over; the
 * writer must be idle. */
hk_code hk__async_ckpt_save(ckpt_hook *self, hk_raw_session *rs, int64_t step, hk_status *st);
/* The asynchronous hook's end(). */
hk_code hk__async_ckpt_end(ckpt_hook *self, hk_raw_session *session, hk_status *status);

/* ---- checkpoint_check_resume.c --------------------------------------------------- */

/* begin(): read HOOKED_CHECK_RESUME (INVALID_ARGUMENT for a malformed value)
 * and log what the mode changes. */
hk_code hk__ckpt_hook_check_begin(ckpt_hook *self, hk_status *st);
/* The Saver just resolved: keep_all makes it keep every checkpoint. */
void hk__ckpt_hook_check_saver(ckpt_hook *self, hk_saver *saver);
/* after_create_session at `gs`: at or past stop_at, stop before the first step. */
void hk__ckpt_hook_check_created(ckpt_hook *self, int64_t gs, hk_creation_context *ctx);
/* after_run, after the save part: a run that reached stop_at requests a stop. */
hk_code hk__ckpt_hook_check_after_run(ckpt_hook *self, hk_run_context *ctx, const hk_run_values *values, hk_status *st);

#endif /* HOOKED_HOOKS_CHECKPOINT_SAVER_INTERNAL_H */
