/*
 * What the host loop's files share among themselves (hk__loop_ names; not
 * API): the loop's struct and its error helpers. loop.c holds options,
 * registration, save, finish and free; loop_run.c, start and the steps;
 * loop_group.c, what a loop over a group adds (hk_loop_options.group).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_LOOP_LOOP_INTERNAL_H
#define HOOKED_LOOP_LOOP_INTERNAL_H

#include "loop/host_executor.h"
#include "hooked/hooked.h"

#include <stdatomic.h>

struct hk_loop {
  hk_env env;
  /* options, copied */
  char *ckpt_dir, *basename;
  double save_secs;
  int64_t save_steps, max_to_keep;
  double keep_hours;
  int async;
  int64_t num_steps, last_step;
  int handle_signals;
  hk_hook **hooks; /* the program's, after the loop's own */
  size_t nhooks;
  hk_hook **hooks_first; /* the program's, before the loop's own */
  size_t nhooks_first;
  unsigned stop_signals; /* the signal helper's set */
  int block_when_busy;   /* the asynchronous saver waits for the write in flight */
  double log_step_count_secs;
  char *events_dir;  /* where SessionLog START goes: summary_dir, else checkpoint_dir; NULL: none */
  hk_stop_info stop; /* why the loop stopped, when the loop itself knows first */
  char *nan_guard;   /* the array a NanTensorHook guards; NULL: none */
  int64_t best_k;    /* best-k retention: 0 off */
  char *best_metric;
  hk_monitor_mode best_mode;
  char *summary_dir;            /* resolved: NULL: no StepCounter */
  int64_t log_step_count_steps; /* 0: no StepCounter */
  int allow_non_finite;         /* the Saver's option of that name */
  /* The early-stopping and learning-rate hooks run as the loop's own
   * (borrowed), in the order added, and the state arrays the loop
   * registered for them (owned). */
  hk_hook **es;
  double **es_state;
  size_t nes, es_cap;
  /* The metrics log of hk_loop_add_metrics_log() (borrowed; NULL: none),
   * run before the checkpoint hook, and its listener on that hook. */
  hk_hook *mlog;
  hk_checkpoint_listener mlog_listener;

  /* ExponentialMovingAverage hooks run as the loop's own (borrowed),
   * after the early-stopping hooks; `owned` lists the memory the loop
   * registered for them (their shadows and counts). */
  hk_hook **ema;
  size_t nema, ema_cap;
  void **owned;
  size_t nowned, owned_cap;
  /* restore_best: at a clean finish, the best checkpoint's values go back
   * into the program's arrays (loop_best.c). */
  int restore_best;

  /* A loop over a group (loop_group.c): the group, borrowed, and this
   * rank's place in it (0 and 1 without one); the names registered
   * HK_LOOP_PER_RANK and HK_LOOP_PARTITIONED, copied, for the Saver. */
  const hk_group_vtable *group;
  void *group_user;
  int grank, gsize;
  char **per_rank, **partitioned;
  size_t nper_rank, per_rank_cap, npartitioned, partitioned_cap;

  hk__host *host; /* the registry, until start hands it to the executor */
  hk_executor *ex;
  int64_t own_gs; /* the loop-owned global step */
  int program_gs; /* the program registered its own */
  hk_saver *saver;
  hk_scaffold *scaffold;
  hk_hook *watch; /* the loop's own hook: what the creation restored */
  hk_hook *nan_hook, *stop_hook, *counter_hook, *ckpt_hook;
  /* watch, hooks_first, NaN guard, early stopping and learning rates,
   * averages, metrics log, stop, step counter, checkpoint, then the
   * program's hooks */
  hk_hook **all;
  hk_session *session;
  char *restored;

  int started, finished, step_open, ended_by_range;
  int failed;
  hk_status error; /* the first error (sticky) */
  hk_code finish_rc;
  hk_status finish_status;
  int installed_signals;
  atomic_int stop_requested;
  _Atomic(hk_coordinator *) coord;

  size_t gs_index;    /* the global step's entry in the executor */
  int updates_called; /* hk_loop_updates_begin() ran in the open step */
  int overlap_warned;

  int64_t gs_at_begin;
  int64_t stalled;
  int stall_warnings;
  double step_start;
  int traced; /* the open step's run asked for a trace */
};

/* A status on the per-step path: an initializer would clear its whole
 * message buffer at every step. */
#define STEP_STATUS(name) \
  hk_status name;         \
  name.code = HK_OK;      \
  name.message[0] = '\0'

/* Misuse that leaves the loop as it was (not sticky). */
#define MISUSE(st, ...) hk_status_set((st), HK_FAILED_PRECONDITION, __VA_ARGS__)

/** Enter the failed state with the first error; later ones are logged. */
hk_code hk__loop_fail(hk_loop *l, hk_code rc, const hk_status *st);
/** The failed state's error, copied into st. */
hk_code hk__loop_report(const hk_loop *l, hk_status *st);
/** Record why the loop stopped, unless the loop or its session knows a
 *  cause already. */
void hk__loop_note_stop(hk_loop *l, hk_stop_reason reason, hk_code code, const char *detail);
/** The global step: the executor's, or before start the registry's. */
int64_t hk__loop_global_step(const hk_loop *l);
/** INVALID_ARGUMENT for NULL, the loop's error when it failed,
 *  FAILED_PRECONDITION naming `fn` when it is finished or not started. */
hk_code hk__loop_check_running(hk_loop *l, const char *fn, hk_status *st);
/** Restore the best checkpoint into the program's arrays, after a clean
 *  close (restore_best; loop_best.c). */
hk_code hk__loop_restore_best(hk_loop *l, hk_status *st);
/** The options of a loop over a group that the group refuses (loop_group.c). */
hk_code hk__loop_group_validate(const hk_loop_options *o, hk_status *st);
/** Keep a group's view of hk_loop_new()'s options. */
void hk__loop_group_init(hk_loop *l, const hk_loop_options *o);
/** Check `flags`' HK_LOOP_PER_RANK and HK_LOOP_PARTITIONED for the array
 *  or state `name` (a partitioned array is 1-D: `rank`), before it is
 *  registered. */
hk_code hk__loop_group_check(const char *fn, const char *name, unsigned flags, int32_t rank, int is_state,
                             hk_status *st);
/** Note a registered name flagged per rank or partitioned for the Saver
 *  (with a group; nothing without one). */
hk_code hk__loop_group_note(hk_loop *l, const char *fn, const char *name, unsigned flags, hk_status *st);
/** The Saver's group, per-rank and partitioned lists (borrowed from the loop). */
void hk__loop_group_saver_options(const hk_loop *l, hk_saver_options *vo);
/** Whether this rank is a follower: a rank of a group other than rank 0,
 *  which writes no events of the job. */
int hk__loop_follower(const hk_loop *l);
/** Free the lists. */
void hk__loop_group_free(hk_loop *l);

/** At the end of a step (or when it is abandoned): complete a
 *  copy-before-write snapshot the step left attached (loop_run.c). */
void hk__loop_settle_snapshot(hk_loop *l);

#endif /* HOOKED_LOOP_LOOP_INTERNAL_H */
