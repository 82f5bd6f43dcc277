/*
 * The host loop's start and steps: the built-in hooks made in their order,
 * the session opened (restoring or initializing), and each step split by
 * hk_session_run_begin/run_end around the program's own math.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "loop/host_executor.h"
#include "loop/loop_internal.h"
#include "util/fs.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* A program-owned global step that stays put for this many consecutive
 * steps fails the loop: it would never reach a step-based stop. */
#define STALL_LIMIT 100
#define STALL_WARNINGS 5

/* ---- the loop's own hook: what each creation restored -------------------------------- */

static hk_code watch_after_create_session(void *user, hk_raw_session *session, hk_coordinator *coord,
                                          hk_creation_context *ctx, hk_status *st) {
  hk_loop *l = user;
  (void)session;
  atomic_store(&l->coord, coord);
  if (atomic_load(&l->stop_requested)) hk_coordinator_request_stop(coord, HK_OK, NULL);
  const char *from = hk_creation_context_restored_checkpoint(ctx);
  hk_env_free(&l->env, l->restored);
  l->restored = NULL;
  if (from && !(l->restored = hk_env_strdup(&l->env, from)))
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "host loop: out of memory");
  return HK_OK;
}

static const hk_hook_vtable watch_vtable = {
    .version = HK_HOOK_VTABLE_VERSION,
    .after_create_session = watch_after_create_session,
};

/* ---- start -------------------------------------------------------------------------- */

static hk_code make_hooks(hk_loop *l, hk_status *st) {
  hk_code rc = hk_hook_new(&l->watch, &watch_vtable, l, "host loop", &l->env, st);
  if (rc != HK_OK) return rc;
  if (l->nan_guard) {
    /* Fail mode, before the checkpoint hook. */
    hk_nan_tensor_options no = HK_NAN_TENSOR_OPTIONS_INIT;
    no.env = &l->env;
    no.loss = l->nan_guard;
    no.fail_on_nan_loss = 1;
    no.non_finite = 1;
    rc = hk_nan_tensor_hook_new(&l->nan_hook, &no, st);
    if (rc != HK_OK) return rc;
  }
  if (l->num_steps != HK_UNSET_STEPS || l->last_step != HK_UNSET_STEPS) {
    hk_stop_at_step_options so = HK_STOP_AT_STEP_OPTIONS_INIT;
    so.env = &l->env;
    so.num_steps = l->num_steps;
    so.last_step = l->last_step;
    rc = hk_stop_at_step_hook_new(&l->stop_hook, &so, st);
    if (rc != HK_OK) return rc;
  }
  /* StepCounter: after StopAtStep, before the checkpoint hook, as MTS
   * orders its defaults. Over a group, rank 0's alone: the job's events. */
  if (l->summary_dir && !hk__loop_follower(l)) {
    hk_step_counter_options sc = HK_STEP_COUNTER_OPTIONS_INIT;
    sc.env = &l->env;
    sc.every_n_steps = l->log_step_count_steps;
    sc.log_every_secs = l->log_step_count_secs; /* a log line a person reads */
    sc.output_dir = l->summary_dir;
    rc = hk_step_counter_hook_new(&l->counter_hook, &sc, st);
    if (rc != HK_OK) return rc;
  }
  int disabled = l->save_secs == 0 || l->save_steps == 0; /* a zero cadence disables saving */
  if (l->ckpt_dir && !disabled) {
    hk_checkpoint_saver_options co = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
    co.env = &l->env;
    co.checkpoint_dir = l->ckpt_dir;
    co.save_secs = l->save_secs;
    co.save_steps = l->save_steps;
    if (hk_secs_is_unset(co.save_secs) && co.save_steps == HK_UNSET_STEPS) co.save_secs = 600; /* default */
    co.saver = l->saver;
    co.checkpoint_basename = l->basename;
    co.save_graph_def = 0; /* nothing per save that was not asked for */
    co.best_k = l->best_k;
    co.best_metric = l->best_metric;
    co.best_mode = l->best_mode;
    if (l->mlog) { /* the log is fsynced before each checkpoint */
      co.listeners = &l->mlog_listener;
      co.nlisteners = 1;
    }
    co.block_when_busy = l->block_when_busy;
    rc = l->async ? hk_async_checkpoint_saver_hook_new(&l->ckpt_hook, &co, st)
                  : hk_checkpoint_saver_hook_new(&l->ckpt_hook, &co, st);
    if (rc != HK_OK) return rc;
  }
  l->all = hk_env_calloc(&l->env, 6 + l->nes + l->nema + l->nhooks_first + l->nhooks, sizeof *l->all);
  if (!l->all) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_loop_start: out of memory");
  return HK_OK;
}

/* What nan_guard and best_metric name must be registered, and fit,
 * before anything is built or created. */
static hk_code check_named(hk_loop *l, hk_status *st) {
  hk_dtype dtype;
  int64_t elements;
  int is_state;
  if (l->nan_guard) {
    if (!hk__host_describe(l->host, l->nan_guard, &dtype, &elements, &is_state))
      return hk_status_set(st, HK_FAILED_PRECONDITION,
                           "hk_loop_start: nan_guard '%s' names no registered array (register it with "
                           "hk_loop_add_array() before the start)",
                           l->nan_guard);
    if (is_state || !hk_dtype_is_float(dtype))
      return hk_status_set(st, HK_INVALID_ARGUMENT,
                           "hk_loop_start: nan_guard '%s' is %s; it must be an array of a floating dtype (f16, bf16, "
                           "f32, f64)",
                           l->nan_guard, is_state ? "an opaque state" : hk_dtype_name(dtype));
  }
  if (l->best_metric) {
    if (!hk__host_describe(l->host, l->best_metric, &dtype, &elements, &is_state))
      return hk_status_set(st, HK_FAILED_PRECONDITION,
                           "hk_loop_start: best_metric '%s' names no registered array (register it with "
                           "hk_loop_add_array() before the start)",
                           l->best_metric);
    if (is_state || elements != 1 || !(hk_dtype_is_float(dtype) || hk_dtype_is_integer(dtype)))
      return hk_status_set(st, HK_INVALID_ARGUMENT,
                           "hk_loop_start: best_metric '%s' is %s; it must be an array of one number", l->best_metric,
                           is_state        ? "an opaque state"
                           : elements != 1 ? "an array of more than one element"
                                           : hk_dtype_name(dtype));
  }
  return HK_OK;
}

/* ---- SessionLog START ------------------------------------------------------------------ */

static hk_code find_event_file(void *user, const char *name, hk_status *st) {
  (void)st;
  if (strncmp(name, "events.out.tfevents.", 20) == 0) *(int *)user = 1;
  return HK_OK;
}

/* A restart: TensorBoard drops what an earlier run wrote into the directory
 * at steps from this run's start on (steps a crash left past the restored
 * checkpoint), once the event file says the run (re)starts here. Written
 * when an earlier run left an event file (otherwise there is nothing to
 * drop, and the file appears at the first event, as before). A failure is
 * a WARNING: no data is at stake, only how TensorBoard draws the curves. */
static int earlier_events(hk_loop *l) {
  if (!l->events_dir || hk__loop_follower(l)) return 0; /* over a group, rank 0 writes the events */
  hk__fs fs;
  hk__fs_init(&fs, &l->env);
  int found = 0;
  hk_status st = HK_STATUS_INIT;
  return hk__fs_list(&fs, l->events_dir, find_event_file, &found, &st) == HK_OK && found;
}

static void write_session_start(hk_loop *l, int64_t gs) {
  hk_status st = HK_STATUS_INIT;
  hk_summary_writer *w = NULL;
  hk_code rc = hk_summary_writer_from_session(&w, l->session, l->events_dir, &st);
  if (rc == HK_OK) rc = hk_summary_writer_session_start(w, gs, &st);
  if (rc != HK_OK)
    hk_env_log(&l->env, HK_LOG_WARNING,
               "host loop: could not write SessionLog START at step %lld into %s (TensorBoard may show the steps "
               "after it twice): %s",
               (long long)gs, l->events_dir, st.message);
}

static hk_code start(hk_loop *l, hk_status *st) {
  hk_code rc = check_named(l, st);
  if (rc != HK_OK) return rc;
  if (!l->program_gs) {
    size_t index = hk__host_count(l->host);
    rc = hk__host_add(l->host, "global_step", HK_DTYPE_I64, 0, NULL, &l->own_gs, sizeof l->own_gs, 0, NULL, NULL, NULL,
                      st);
    if (rc != HK_OK) return rc;
    hk__host_set_global_step(l->host, index);
    l->gs_index = index;
  }
  int check = 0;
  rc = hk__host_check_resume(l->host, &check, st);
  if (rc != HK_OK) return rc;
  if (check)
    hk_env_log(&l->env, HK_LOG_INFO,
               "host loop: check-resume mode (HOOKED_CHECK_RESUME): each read of an opaque state calls its save "
               "callback twice and names a state whose two reads differ");
  hk__host *host = l->host;
  l->host = NULL; /* the executor owns it from here, also on failure */
  rc = hk__host_executor_new(&l->ex, host, &l->env, st);
  if (rc != HK_OK) return rc;

  hk_saver_options vo = HK_SAVER_OPTIONS_INIT;
  vo.env = &l->env;
  vo.executor = l->ex;
  vo.max_to_keep = l->max_to_keep;
  vo.keep_checkpoint_every_n_hours = l->keep_hours;
  vo.allow_non_finite = l->allow_non_finite;
  hk__loop_group_saver_options(l, &vo); /* sharded checkpoints over the group */
  rc = hk_saver_new(&l->saver, &vo, st);
  if (rc != HK_OK) return rc;
  hk_scaffold_options fo = HK_SCAFFOLD_OPTIONS_INIT;
  fo.env = &l->env;
  fo.saver = l->saver;
  rc = hk_scaffold_new(&l->scaffold, &fo, st);
  if (rc != HK_OK) return rc;
  rc = make_hooks(l, st);
  if (rc != HK_OK) return rc;

  size_t n = 0;
  l->all[n++] = l->watch;
  for (size_t i = 0; i < l->nhooks_first; i++) l->all[n++] = l->hooks_first[i];
  if (l->nan_hook) l->all[n++] = l->nan_hook;
  for (size_t i = 0; i < l->nes; i++) l->all[n++] = l->es[i];
  for (size_t i = 0; i < l->nema; i++) l->all[n++] = l->ema[i];
  if (l->mlog) l->all[n++] = l->mlog;
  if (l->stop_hook) l->all[n++] = l->stop_hook;
  if (l->counter_hook) l->all[n++] = l->counter_hook;
  if (l->ckpt_hook) l->all[n++] = l->ckpt_hook;
  for (size_t i = 0; i < l->nhooks; i++) l->all[n++] = l->hooks[i];
  hk_session_options so = HK_SESSION_OPTIONS_INIT;
  so.env = &l->env;
  so.kind = HK_SESSION_SINGULAR; /* the program's step cannot be replayed by a recovery */
  so.executor = l->ex;
  so.hooks = l->all;
  so.nhooks = n;
  so.scaffold = l->scaffold;
  so.checkpoint_dir = l->ckpt_dir;
  int restart = earlier_events(l); /* looked at before this run's hooks write */
  rc = hk_session_new(&l->session, &so, st);
  if (rc != HK_OK) return rc;

  if (l->handle_signals) {
    hk_status sst = HK_STATUS_INIT;
    hk_code src = hk_signal_install_set(l->stop_signals, &sst);
    if (src == HK_OK)
      l->installed_signals = 1;
    else
      hk_env_log(&l->env, HK_LOG_DEBUG, "host loop: using the signal helper as it is (%s: %s)", hk_code_name(src),
                 sst.message);
  }
  int64_t gs = hk__host_global_step(hk_executor_self(l->ex));
  if (restart) write_session_start(l, gs);
  if (l->restored)
    hk_env_log(&l->env, HK_LOG_INFO, "Host loop resumes at global step %lld from %s", (long long)gs, l->restored);
  else
    hk_env_log(&l->env, HK_LOG_INFO, "Host loop starts at global step %lld with the program's own values",
               (long long)gs);
  return HK_OK;
}

hk_code hk_loop_start(hk_loop *l, int64_t *step, hk_status *st) {
  if (step) *step = 0;
  if (!l) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_loop_start: loop is NULL");
  if (l->failed) return hk__loop_report(l, st);
  if (l->started || l->finished) return MISUSE(st, "hk_loop_start: the loop was already started");
  hk_status local = HK_STATUS_INIT;
  hk_code rc = start(l, &local);
  l->started = 1;
  if (rc != HK_OK) {
    hk__loop_fail(l, rc, &local);
    return hk__loop_report(l, st);
  }
  if (step) *step = hk__host_global_step(hk_executor_self(l->ex));
  hk_status_clear(st);
  return HK_OK;
}

/* ---- steps --------------------------------------------------------------------------- */

int hk_loop_should_stop(hk_loop *l) {
  if (!l || !l->started || l->finished || l->failed || l->ended_by_range) return 1;
  if (atomic_load(&l->stop_requested)) {
    hk__loop_note_stop(l, HK_STOP_REQUESTED, HK_OK, "hk_loop_request_stop() was called");
    return 1;
  }
  return hk_session_should_stop(l->session);
}

hk_code hk__loop_check_running(hk_loop *l, const char *fn, hk_status *st) {
  if (!l) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: loop is NULL", fn);
  if (l->failed) return hk__loop_report(l, st);
  if (l->finished) return MISUSE(st, "%s: the loop is finished", fn);
  if (!l->started) return MISUSE(st, "%s: the loop is not started (call hk_loop_start first)", fn);
  return HK_OK;
}

static hk_code step_begin(hk_loop *l, int64_t *step, hk_status *st) {
  if (l->step_open) return MISUSE(st, "hk_loop_step_begin: a step is already open (call hk_loop_step_end first)");
  if (l->ended_by_range)
    return hk_status_set(st, HK_FAILED_PRECONDITION, "Run called even after should_stop requested.");
  l->gs_at_begin = hk__loop_global_step(l);
  l->updates_called = 0;
  STEP_STATUS(local);
  hk_code rc = hk_session_run_begin(l->session, NULL, &local);
  if (rc != HK_OK) {
    hk__loop_fail(l, rc, &local);
    return hk__loop_report(l, st);
  }
  l->step_open = 1;
  if (step) *step = l->gs_at_begin;
  /* A clock read costs more than the rest of the bracket on some machines:
   * the step is timed only when a hook asked for a trace. */
  const hk_run_options *ro = hk_session_open_run_options(l->session);
  l->traced = ro && ro->trace_level >= 1;
  if (l->traced) l->step_start = hk_env_monotonic(&l->env);
  return HK_OK;
}

hk_code hk_loop_step_begin(hk_loop *l, int64_t *step, hk_status *st) {
  if (step) *step = 0;
  hk_code rc = hk__loop_check_running(l, "hk_loop_step_begin", st);
  if (rc != HK_OK) return rc;
  return step_begin(l, step, st);
}

hk_code hk_loop_updates_begin(hk_loop *l, hk_status *st) {
  hk_code rc = hk__loop_check_running(l, "hk_loop_updates_begin", st);
  if (rc != HK_OK) return rc;
  if (!l->step_open)
    return MISUSE(st, "hk_loop_updates_begin: no step is open (call it inside a step, before writing its arrays)");
  /* The snapshot of the step before is copied in full before the
   * program writes: what the writer thread has not copied, this thread does. */
  hk__host_updates_begin(hk_executor_self(l->ex));
  l->updates_called = 1;
  return HK_OK;
}

/* At the end of a step (or when it is abandoned): a snapshot still
 * attached means the program wrote without hk_loop_updates_begin(), which
 * the step before promised; it is completed now, and the step's end says
 * whether the next snapshot may be copied in the background. */
void hk__loop_settle_snapshot(hk_loop *l) {
  hk__host *h = hk_executor_self(l->ex);
  if (!l->updates_called && hk__host_snapshot_attached(h)) {
    if (!l->overlap_warned) {
      l->overlap_warned = 1;
      hk_env_log(&l->env, HK_LOG_WARNING,
                 "hk_loop_updates_begin() was not called in the step from global step %lld, after the step before "
                 "called it: the checkpoint of global step %lld was still being copied and may hold values this "
                 "step wrote. A program that calls it must call it in every step, before writing its arrays.",
                 (long long)l->gs_at_begin, (long long)l->gs_at_begin);
    }
    hk__host_updates_begin(h);
  }
  hk__host_allow_overlap(h, l->updates_called);
}

/* A program-owned global step must move in every step. */
static hk_code check_moved(hk_loop *l, int64_t gs, hk_status *st) {
  if (gs != l->gs_at_begin) {
    l->stalled = 0;
    return HK_OK;
  }
  l->stalled++;
  if (l->stall_warnings < STALL_WARNINGS) {
    l->stall_warnings++;
    hk_env_log(&l->env, HK_LOG_WARNING,
               "The global step did not move during this step (still %lld): a program that registers its own global "
               "step (HK_LOOP_GLOBAL_STEP) must advance it in every step.",
               (long long)gs);
  }
  if (l->stalled >= STALL_LIMIT)
    return hk_status_set(st, HK_FAILED_PRECONDITION,
                         "the global step has not moved in %d steps (still %lld): advance the program's global step "
                         "in every step, or let the loop own it",
                         STALL_LIMIT, (long long)gs);
  return HK_OK;
}

static hk_code step_end(hk_loop *l, hk_status *st) {
  if (l->traced)
    hk__host_set_step_times(hk_executor_self(l->ex), l->step_start, hk_env_monotonic(&l->env));
  else
    hk__host_clear_step_times(hk_executor_self(l->ex));
  l->step_open = 0;
  hk__loop_settle_snapshot(l);
  STEP_STATUS(local);
  hk_code rc = HK_OK;
  if (l->program_gs) {
    rc = check_moved(l, hk__loop_global_step(l), &local);
  } else {
    hk__host_before_write(hk_executor_self(l->ex), l->gs_index); /* a pending snapshot copies GS first */
    l->own_gs++;
  }
  if (rc != HK_OK) {
    hk_session_run_abandon(l->session);
  } else {
    rc = hk_session_run_end(l->session, NULL, NULL, &local);
  }
  if (rc != HK_OK) {
    hk__loop_fail(l, rc, &local);
    return hk__loop_report(l, st);
  }
  return HK_OK;
}

hk_code hk_loop_step_end(hk_loop *l, hk_status *st) {
  hk_code rc = hk__loop_check_running(l, "hk_loop_step_end", st);
  if (rc != HK_OK) return rc;
  if (!l->step_open) return MISUSE(st, "hk_loop_step_end: no step is open (call hk_loop_step_begin first)");
  return step_end(l, st);
}

hk_code hk_loop_step(hk_loop *l, hk_loop_step_fn fn, void *user, hk_status *st) {
  hk_code rc = hk__loop_check_running(l, "hk_loop_step", st);
  if (rc != HK_OK) return rc;
  if (!fn) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_loop_step: fn is NULL");
  int64_t step = 0;
  rc = step_begin(l, &step, st);
  if (rc != HK_OK) return rc;
  STEP_STATUS(local);
  rc = fn(user, step, &local);
  if (rc == HK_OK) return step_end(l, st);
  l->step_open = 0;
  hk__loop_settle_snapshot(l);
  hk_session_run_abandon(l->session); /* no after_run for a failed step */
  if (local.code != rc || local.message[0] == '\0')
    hk_status_set(&local, rc, "the step function failed with %s at global step %lld", hk_code_name(rc),
                  (long long)step);
  if (rc == HK_OUT_OF_RANGE) { /* the end of the data is a clean end */
    l->ended_by_range = 1;
    hk__loop_note_stop(l, HK_STOP_END_OF_INPUT, HK_OUT_OF_RANGE, local.message);
    if (st) *st = local;
    return rc;
  }
  hk__loop_fail(l, rc, &local);
  return hk__loop_report(l, st);
}

hk_code hk_loop_run(hk_loop *l, hk_loop_step_fn fn, void *user, hk_status *st) {
  hk_code rc = hk__loop_check_running(l, "hk_loop_run", st);
  if (rc != HK_OK) return rc;
  if (!fn) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_loop_run: fn is NULL");
  while (!hk_loop_should_stop(l)) {
    rc = hk_loop_step(l, fn, user, st);
    if (rc == HK_OUT_OF_RANGE) break;
    if (rc != HK_OK) return rc;
  }
  if (l->failed) return hk__loop_report(l, st);
  hk_status_clear(st);
  return HK_OK;
}
