/*
 * The host loop (hooked/loop.h): a singular session over the host executor
 * (host_executor.c) with the built-in hooks between the program's two
 * lists — hooks_first, then the NaN guard, the early-stopping hooks,
 * StopAtStep, the StepCounter, the checkpoint saver, then hooks —
 * each step split by hk_session_run_begin/run_end around the program's own
 * math. Written against the public headers only, as any third party could.
 * This file holds options, registration, save, finish and free; start and
 * the steps are in loop_run.c.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "loop/host_executor.h"
#include "loop/loop_internal.h"
#include "util/common.h"

#include <stdio.h>
#include <string.h>

/* ---- errors --------------------------------------------------------------------- */

/* Enter the failed state with the first error; later ones are logged. */
hk_code hk__loop_fail(hk_loop *l, hk_code rc, const hk_status *st) {
  if (!l->failed) {
    l->failed = 1;
    l->error.code = rc;
    if (st && st->message[0])
      memcpy(l->error.message, st->message, sizeof l->error.message);
    else
      hk_status_set(&l->error, rc, "%s", hk_code_name(rc));
    l->error.code = rc;
  }
  return rc;
}

hk_code hk__loop_report(const hk_loop *l, hk_status *st) {
  if (st) *st = l->error;
  return l->error.code;
}

/* ---- options -------------------------------------------------------------------- */

static const hk_loop_options default_options = HK_LOOP_OPTIONS_INIT;

hk_code hk_loop_options_init(hk_loop_options *opts, uint32_t version) {
  return HK__STRUCT_INIT(opts, version, hk_loop_options, HK_LOOP_OPTIONS_INIT);
}

static int valid_tensor_name(const char *name);

static int valid_secs_option(double v) { return hk_secs_is_unset(v) || (isfinite(v) && v >= 0); }

static hk_code check_hook_list(hk_hook *const *hooks, size_t n, const char *name, hk_status *st) {
  if (!hooks && n)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_loop_new: %s is NULL with a count of %zu", name, n);
  for (size_t i = 0; i < n; i++) {
    if (!hooks[i]) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_loop_new: %s[%zu] is NULL", name, i);
    for (size_t j = 0; j < i; j++)
      if (hooks[j] == hooks[i])
        return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_loop_new: hook '%s' appears twice (%s[%zu] and %s[%zu])",
                             hk_hook_name(hooks[i]), name, j, name, i);
  }
  return HK_OK;
}

static hk_code validate(const hk_loop_options *o, hk_status *st) {
  HK__CHECK_VERSION(o, HK_LOOP_OPTIONS_VERSION, hk_loop_options, "hk_loop_new: opts", st);
  hk_code rc = hk_env_check(o->env, "hk_loop_new: env", st);
  if (rc != HK_OK) return rc;
  if (!valid_secs_option(o->save_secs))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_loop_new: save_secs must be finite and >= 0, got %g",
                         o->save_secs);
  if (o->save_steps != HK_UNSET_STEPS && o->save_steps < 0)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_loop_new: save_steps must be >= 0, got %lld",
                         (long long)o->save_steps);
  if (!hk_secs_is_unset(o->save_secs) && o->save_steps != HK_UNSET_STEPS)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "Can not provide both save_secs and save_steps.");
  if (!o->checkpoint_dir && (!hk_secs_is_unset(o->save_secs) || o->save_steps != HK_UNSET_STEPS))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_loop_new: a save cadence needs a checkpoint_dir");
  if (o->max_to_keep < 0)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_loop_new: max_to_keep must be >= 0, got %lld",
                         (long long)o->max_to_keep);
  if (!valid_secs_option(o->keep_checkpoint_every_n_hours))
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "hk_loop_new: keep_checkpoint_every_n_hours must be finite and >= 0, got %g",
                         o->keep_checkpoint_every_n_hours);
  if (o->checkpoint_dir && o->checkpoint_dir[0] == '\0')
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_loop_new: checkpoint_dir is empty");
  if (o->summary_dir && o->summary_dir[0] == '\0')
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_loop_new: summary_dir is empty");
  if (o->log_step_count_steps < 0) /* 0 turns the StepCounter off */
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_loop_new: log_step_count_steps must be >= 0, got %lld",
                         (long long)o->log_step_count_steps);
  if (o->num_steps != HK_UNSET_STEPS && o->last_step != HK_UNSET_STEPS)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "Only one of num_steps or last_step can be specified.");
  if (o->num_steps != HK_UNSET_STEPS && o->num_steps < 0)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_loop_new: num_steps must be >= 0, got %lld",
                         (long long)o->num_steps);
  if (o->last_step != HK_UNSET_STEPS && o->last_step < 0)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_loop_new: last_step must be >= 0, got %lld",
                         (long long)o->last_step);
  if (o->nan_guard && !valid_tensor_name(o->nan_guard))
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "hk_loop_new: nan_guard '%s' is not an array name (1..255 bytes of [A-Za-z0-9_./-])",
                         o->nan_guard);
  if (o->best_k < 0)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_loop_new: best_k must be >= 0 (0: off), got %lld",
                         (long long)o->best_k);
  if (o->best_k > 0 && !o->best_metric)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "hk_loop_new: best_k %lld needs best_metric, the registered array that ranks checkpoints",
                         (long long)o->best_k);
  if (o->best_k == 0 && o->best_metric)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_loop_new: best_metric '%s' is given but best_k is 0",
                         o->best_metric);
  if (o->best_metric && !valid_tensor_name(o->best_metric))
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "hk_loop_new: best_metric '%s' is not an array name (1..255 bytes of [A-Za-z0-9_./-])",
                         o->best_metric);
  if (o->best_mode != HK_MONITOR_MIN && o->best_mode != HK_MONITOR_MAX)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "hk_loop_new: best_mode %d is neither HK_MONITOR_MIN nor HK_MONITOR_MAX", (int)o->best_mode);
  if (o->best_k > 0 && (!o->checkpoint_dir || o->save_secs == 0 || o->save_steps == 0))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_loop_new: best_k needs the loop's checkpoint saves (%s)",
                         !o->checkpoint_dir ? "there is no checkpoint_dir" : "a cadence of 0 disables them");
  if (o->restore_best && o->best_k == 0)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "hk_loop_new: restore_best needs best_k (and best_metric): the best checkpoint is the first "
                         "of best-k retention's record");
  hk_code hrc = check_hook_list(o->hooks, o->nhooks, "hooks", st);
  if (hrc != HK_OK) return hrc;
  hrc = check_hook_list(o->hooks_first, o->nhooks_first, "hooks_first", st);
  if (hrc != HK_OK) return hrc;
  for (size_t i = 0; i < o->nhooks_first; i++)
    for (size_t j = 0; j < o->nhooks; j++)
      if (o->hooks_first[i] == o->hooks[j])
        return hk_status_set(st, HK_INVALID_ARGUMENT,
                             "hk_loop_new: hook '%s' is both hooks_first[%zu] and hooks[%zu]: a hook runs once",
                             hk_hook_name(o->hooks[j]), i, j);
  unsigned all_signals = HK_SIGNAL_INT | HK_SIGNAL_TERM | HK_SIGNAL_HUP | HK_SIGNAL_USR1 | HK_SIGNAL_USR2;
  if (o->stop_signals & ~all_signals)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "hk_loop_new: stop_signals 0x%x has bits 0x%x that name no hk_signal_set signal",
                         o->stop_signals, o->stop_signals & ~all_signals);
  if (o->stop_signals && !o->handle_signals)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "hk_loop_new: stop_signals is given but handle_signals is 0 (the loop installs no handler)");
  if (o->async_checkpoint_block_when_busy && !o->async_checkpoint)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "hk_loop_new: async_checkpoint_block_when_busy is set without async_checkpoint");
  if (!valid_secs_option(o->log_step_count_secs))
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "hk_loop_new: log_step_count_secs must be finite and >= 0 (0: never log), got %g",
                         o->log_step_count_secs);
  return hk__loop_group_validate(o, st);
}

/* A valid checkpoint name (1–255 bytes, no '/', '\\', '"', control byte or
 * "..", not "."), checked here so a bad basename fails before any side
 * effect. */
static int valid_file_name(const char *name) {
  size_t n = strlen(name);
  if (n == 0 || n > 255 || strcmp(name, ".") == 0 || strstr(name, "..")) return 0;
  for (const unsigned char *p = (const unsigned char *)name; *p; p++)
    if (*p < 0x20 || *p == 0x7f || *p == '/' || *p == '\\' || *p == '"') return 0;
  return 1;
}

void hk_loop_free(hk_loop *l);

hk_code hk_loop_new(hk_loop **out, const hk_loop_options *opts, hk_status *st) {
  if (out) *out = NULL;
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_loop_new: out is NULL");
  const hk_loop_options *o = opts ? opts : &default_options;
  hk_code rc = validate(o, st);
  if (rc != HK_OK) return rc;
  if (o->checkpoint_basename && !valid_file_name(o->checkpoint_basename))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_loop_new: checkpoint_basename '%s' is not a valid name",
                         o->checkpoint_basename);
  hk_loop *l = hk_env_calloc(o->env, 1, sizeof *l);
  if (!l) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_loop_new: out of memory");
  hk_env_copy(&l->env, o->env);
  l->save_secs = o->save_secs;
  l->save_steps = o->save_steps;
  l->max_to_keep = o->max_to_keep;
  l->keep_hours = o->keep_checkpoint_every_n_hours;
  l->async = o->async_checkpoint != 0;
  l->num_steps = o->num_steps;
  l->last_step = o->last_step;
  l->handle_signals = o->handle_signals != 0;
  l->stop_signals = o->stop_signals ? o->stop_signals : HK_SIGNAL_DEFAULT_SET;
  l->block_when_busy = o->async_checkpoint_block_when_busy != 0;
  l->log_step_count_secs = o->log_step_count_secs;
  hk__loop_group_init(l, o);
  atomic_init(&l->stop_requested, 0);
  atomic_init(&l->coord, NULL);
  l->host = hk__host_new(&l->env);
  int oom = !l->host;
  if (!oom && o->checkpoint_dir) oom = !(l->ckpt_dir = hk_env_strdup(&l->env, o->checkpoint_dir));
  if (!oom && o->checkpoint_basename) oom = !(l->basename = hk_env_strdup(&l->env, o->checkpoint_basename));
  if (!oom && o->nan_guard) oom = !(l->nan_guard = hk_env_strdup(&l->env, o->nan_guard));
  if (!oom && o->best_metric) oom = !(l->best_metric = hk_env_strdup(&l->env, o->best_metric));
  l->best_k = o->best_k;
  l->best_mode = o->best_mode;
  /* The StepCounter writes into summary_dir, by default the
   * checkpoint_dir; with neither, or log_step_count_steps 0, there is none. */
  l->log_step_count_steps = o->log_step_count_steps;
  l->allow_non_finite = o->allow_non_finite != 0;
  l->restore_best = o->restore_best != 0;
  const char *summary_dir = o->summary_dir ? o->summary_dir : o->checkpoint_dir;
  if (!oom && summary_dir && l->log_step_count_steps > 0) oom = !(l->summary_dir = hk_env_strdup(&l->env, summary_dir));
  if (!oom && summary_dir) oom = !(l->events_dir = hk_env_strdup(&l->env, summary_dir));
  if (!oom && o->nhooks_first) {
    l->hooks_first = hk_env_calloc(&l->env, o->nhooks_first, sizeof *l->hooks_first);
    oom = !l->hooks_first;
    if (!oom) memcpy(l->hooks_first, o->hooks_first, o->nhooks_first * sizeof *l->hooks_first);
  }
  l->nhooks_first = o->nhooks_first;
  if (!oom && o->nhooks) {
    l->hooks = hk_env_calloc(&l->env, o->nhooks, sizeof *l->hooks);
    oom = !l->hooks;
    if (!oom) memcpy(l->hooks, o->hooks, o->nhooks * sizeof *l->hooks);
  }
  l->nhooks = o->nhooks;
  if (oom) {
    hk_loop_free(l);
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_loop_new: out of memory");
  }
  *out = l;
  return HK_OK;
}

/* ---- registration ------------------------------------------------------------------ */

static int valid_tensor_name(const char *name) {
  size_t n = strlen(name);
  if (n == 0 || n > 255) return 0;
  for (const char *p = name; *p; p++) {
    char c = *p;
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
          c == '/' || c == '-'))
      return 0;
  }
  return 1;
}

static hk_code check_registration(hk_loop *l, const char *fn, const char *name, hk_status *st) {
  if (!l) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: loop is NULL", fn);
  if (l->failed) return hk__loop_report(l, st);
  if (l->started || l->finished)
    return MISUSE(st, "%s: '%s' registered after hk_loop_start(): register everything before the start", fn,
                  name ? name : "(null)");
  if (!name) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: name is NULL", fn);
  if (!valid_tensor_name(name))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: name '%s' is not 1..255 bytes of [A-Za-z0-9_./-]", fn, name);
  return HK_OK;
}

hk_code hk_loop_add_array(hk_loop *l, const char *name, hk_dtype dtype, int32_t rank, const int64_t *dims, void *data,
                          unsigned flags, hk_status *st) {
  static const char fn[] = "hk_loop_add_array";
  hk_code rc = check_registration(l, fn, name, st);
  if (rc != HK_OK) return rc;
  if (flags & ~(unsigned)(HK_LOOP_NO_CHECKPOINT | HK_LOOP_OPTIONAL | HK_LOOP_GLOBAL_STEP | HK_LOOP_NON_FINITE_OK |
                          HK_LOOP_PARTITIONED | HK_LOOP_PER_RANK))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: '%s': unknown flags 0x%x", fn, name, flags);
  if (dtype == HK_DTYPE_STRING)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: '%s': dtype string cannot be checkpointed", fn, name);
  hk_tensor t;
  hk_status why = HK_STATUS_INIT;
  if (hk_tensor_init(&t, dtype, rank, dims, data, &why) != HK_OK)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: '%s': %s", fn, name, why.message);
  int is_gs = (flags & HK_LOOP_GLOBAL_STEP) != 0;
  if (is_gs) {
    if (!hk_dtype_is_integer(dtype) || rank != 0)
      return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: global step '%s' must be an integer scalar, not %s of rank %d",
                           fn, name, hk_dtype_name(dtype), (int)rank);
    if (flags & (HK_LOOP_NO_CHECKPOINT | HK_LOOP_OPTIONAL))
      return hk_status_set(st, HK_INVALID_ARGUMENT,
                           "%s: global step '%s' is always checkpointed and required: no NO_CHECKPOINT or OPTIONAL", fn,
                           name);
    if (l->program_gs)
      return hk_status_set(st, HK_ALREADY_EXISTS, "%s: '%s': the loop already has a global step", fn, name);
  } else if (strcmp(name, "global_step") == 0) {
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "%s: 'global_step' names the loop's own global step; register a program-owned one with "
                         "HK_LOOP_GLOBAL_STEP",
                         fn);
  }
  uint32_t vf = 0;
  if (flags & HK_LOOP_NO_CHECKPOINT)
    vf |= HK_VAR_LOCAL;
  else if (!is_gs)
    vf |= HK_VAR_TRAINABLE;
  if (flags & HK_LOOP_OPTIONAL) vf |= HK_VAR_OPTIONAL;
  if (flags & HK_LOOP_NON_FINITE_OK) vf |= HK_VAR_NON_FINITE_OK;
  rc = hk__loop_group_check(fn, name, flags, rank, 0, st);
  if (rc != HK_OK) return rc;
  size_t index = hk__host_count(l->host);
  rc = hk__host_add(l->host, name, dtype, rank, dims, data, t.nbytes, vf, NULL, NULL, NULL, st);
  if (rc != HK_OK) return rc == HK_RESOURCE_EXHAUSTED ? hk__loop_fail(l, rc, st) : rc;
  rc = hk__loop_group_note(l, fn, name, flags, st);
  if (rc != HK_OK) return rc;
  if (is_gs) {
    hk__host_set_global_step(l->host, index);
    l->program_gs = 1;
  }
  return HK_OK;
}

hk_code hk_loop_add_state(hk_loop *l, const char *name, size_t size, hk_loop_state_save_fn save,
                          hk_loop_state_restore_fn restore, void *user, unsigned flags, hk_status *st) {
  static const char fn[] = "hk_loop_add_state";
  hk_code rc = check_registration(l, fn, name, st);
  if (rc != HK_OK) return rc;
  if (!save || !restore)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: state '%s': the %s callback is NULL", fn, name,
                         !save ? "save" : "restore");
  if (size == 0) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: state '%s': size is 0", fn, name);
  if (size > (size_t)INT64_MAX)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: state '%s': size %zu is too large", fn, name, size);
  if (flags & ~(unsigned)(HK_LOOP_OPTIONAL | HK_LOOP_PER_RANK))
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "%s: state '%s': only HK_LOOP_OPTIONAL and HK_LOOP_PER_RANK apply to a state (flags 0x%x)", fn,
                         name, flags);
  if (strcmp(name, "global_step") == 0)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: 'global_step' names the loop's global step", fn);
  int64_t dims[1] = {(int64_t)size};
  uint32_t vf = (flags & HK_LOOP_OPTIONAL) ? HK_VAR_OPTIONAL : 0;
  rc = hk__host_add(l->host, name, HK_DTYPE_U8, 1, dims, NULL, size, vf, save, restore, user, st);
  if (rc != HK_OK) return rc == HK_RESOURCE_EXHAUSTED ? hk__loop_fail(l, rc, st) : rc;
  return hk__loop_group_note(l, fn, name, flags, st);
}

/* ---- early stopping and learning rates as the loop's own hooks -------------------------- */

/* Make `hook` one of the loop's own hooks, run before StopAtStep and the
 * checkpoint hook in the order added, and register for it the F64 state
 * array of `size` elements named `state` (when not NULL) in the loop's own
 * memory. */
static hk_code add_own_hook(hk_loop *l, const char *fn, hk_hook *hook, const char *state, int64_t size, hk_status *st) {
  for (size_t i = 0; i < l->nes; i++)
    if (l->es[i] == hook)
      return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: hook '%s' was already added", fn, hk_hook_name(hook));
  for (size_t i = 0; i < l->nhooks; i++)
    if (l->hooks[i] == hook)
      return hk_status_set(st, HK_INVALID_ARGUMENT,
                           "%s: hook '%s' is hooks[%zu] of the loop's options: a hook runs once, added or listed", fn,
                           hk_hook_name(hook), i);
  for (size_t i = 0; i < l->nhooks_first; i++)
    if (l->hooks_first[i] == hook)
      return hk_status_set(st, HK_INVALID_ARGUMENT,
                           "%s: hook '%s' is hooks_first[%zu] of the loop's options: a hook runs once, added or listed",
                           fn, hk_hook_name(hook), i);
  if (state && !valid_tensor_name(state))
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "%s: the hook's state '%s' is not an array name (1..255 bytes of [A-Za-z0-9_./-])", fn, state);
  if (l->nes == l->es_cap) {
    size_t cap = l->es_cap ? l->es_cap * 2 : 2;
    hk_hook **es = hk_env_realloc(&l->env, l->es, cap * sizeof *es);
    if (es) l->es = es;
    double **states = es ? hk_env_realloc(&l->env, l->es_state, cap * sizeof *states) : NULL;
    if (states) l->es_state = states;
    if (!es || !states) return hk__loop_fail(l, hk_status_set(st, HK_RESOURCE_EXHAUSTED, "%s: out of memory", fn), st);
    l->es_cap = cap;
  }
  double *mem = NULL;
  if (state) {
    const int64_t dims[1] = {size};
    mem = hk_env_calloc(&l->env, (size_t)size, sizeof *mem);
    if (!mem) return hk__loop_fail(l, hk_status_set(st, HK_RESOURCE_EXHAUSTED, "%s: out of memory", fn), st);
    /* Optional: a checkpoint written before the hook restores, and its
     * progress starts over (zero is a fresh state). Its best value is
     * +-Inf until an evaluation improves: checkpointed as it is. */
    hk_code rc = hk_loop_add_array(l, state, HK_DTYPE_F64, 1, dims, mem, HK_LOOP_OPTIONAL | HK_LOOP_NON_FINITE_OK, st);
    if (rc != HK_OK) {
      hk_env_free(&l->env, mem);
      return rc;
    }
  }
  l->es[l->nes] = hook;
  l->es_state[l->nes++] = mem;
  return HK_OK;
}

/* NULL loop, failed, started: the checks both adders make first. */
static hk_code check_own_hook(hk_loop *l, const char *fn, const char *what, hk_hook *hook, hk_status *st) {
  if (!l) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: loop is NULL", fn);
  if (l->failed) return hk__loop_report(l, st);
  if (l->started || l->finished)
    return MISUSE(st, "%s: called after hk_loop_start(): add %s before the start", fn, what);
  if (!hook) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: hook is NULL", fn);
  return HK_OK;
}

hk_code hk_loop_add_early_stopping(hk_loop *l, hk_hook *hook, hk_status *st) {
  static const char fn[] = "hk_loop_add_early_stopping";
  hk_early_stopping_info info;
  hk_status why = HK_STATUS_INIT;
  hk_code rc = check_own_hook(l, fn, "early stopping", hook, st);
  if (rc != HK_OK) return rc;
  if (hk_early_stopping_hook_info(&info, hook, &why) != HK_OK)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: hook '%s' is not an EarlyStoppingHook", fn, hk_hook_name(hook));
  return add_own_hook(l, fn, hook, info.state, HK_EARLY_STOPPING_STATE_SIZE, st);
}

hk_code hk_loop_add_learning_rate(hk_loop *l, hk_hook *hook, hk_status *st) {
  static const char fn[] = "hk_loop_add_learning_rate";
  hk_learning_rate_info info;
  hk_status why = HK_STATUS_INIT;
  hk_code rc = check_own_hook(l, fn, "learning-rate hooks", hook, st);
  if (rc != HK_OK) return rc;
  if (hk_learning_rate_hook_info(&info, hook, &why) != HK_OK)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: hook '%s' is not a LearningRateHook", fn, hk_hook_name(hook));
  return add_own_hook(l, fn, hook, info.state, HK_LEARNING_RATE_STATE_SIZE, st);
}

/* ---- the metrics log as one of the loop's own hooks ------------------------------------ */

hk_code hk_loop_add_metrics_log(hk_loop *l, hk_hook *hook, hk_status *st) {
  static const char fn[] = "hk_loop_add_metrics_log";
  hk_checkpoint_listener listener;
  hk_status why = HK_STATUS_INIT;
  hk_code rc = check_own_hook(l, fn, "the metrics log", hook, st);
  if (rc != HK_OK) return rc;
  if (hk_metrics_log_checkpoint_listener(&listener, hook, &why) != HK_OK)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: hook '%s' is not a MetricsLogHook", fn, hk_hook_name(hook));
  if (l->mlog)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: the loop has a metrics log already ('%s')", fn,
                         hk_hook_name(l->mlog));
  for (size_t i = 0; i < l->nhooks; i++)
    if (l->hooks[i] == hook)
      return hk_status_set(st, HK_INVALID_ARGUMENT,
                           "%s: hook '%s' is hooks[%zu] of the loop's options: a hook runs once, added or listed", fn,
                           hk_hook_name(hook), i);
  l->mlog = hook;
  l->mlog_listener = listener;
  return HK_OK;
}

/* ---- save now, stop, finish ------------------------------------------------------------ */

/* "<base>-<digits>": the name of a managed checkpoint, which an
 * unmanaged save must not take. */
static int is_managed_name(const char *name, const char *base) {
  size_t bl = strlen(base);
  if (strncmp(name, base, bl) != 0 || name[bl] != '-' || name[bl + 1] == '\0') return 0;
  for (const char *p = name + bl + 1; *p; p++)
    if (*p < '0' || *p > '9') return 0;
  return 1;
}

hk_code hk_loop_save(const char **prefix, hk_loop *l, const char *name, hk_status *st) {
  if (prefix) *prefix = NULL;
  hk_code rc = hk__loop_check_running(l, "hk_loop_save", st);
  if (rc != HK_OK) return rc;
  if (l->step_open) return MISUSE(st, "hk_loop_save: a step is open: save between steps");
  if (!l->ckpt_dir) return MISUSE(st, "hk_loop_save: the loop has no checkpoint_dir");
  if (name && !valid_file_name(name))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_loop_save: '%s' is not a valid checkpoint name", name);
  const char *base = l->basename ? l->basename : "model.ckpt";
  if (name && is_managed_name(name, base))
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "hk_loop_save: '%s' has the form '%s-<step>', which is reserved for the checkpoints retention "
                         "manages (an unmanaged checkpoint of that name would be adopted and deleted by it): choose "
                         "another name",
                         name, base);
  hk_status local = HK_STATUS_INIT;
  if (l->ckpt_hook) {
    rc = hk_checkpoint_saver_hook_save(prefix, l->ckpt_hook, name, &local);
  } else {
    /* No hook (saves disabled): nothing runs in the background, so the
     * Saver is ours to use. */
    hk_raw_session *rs = hk_session_raw_session(l->session);
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/%s", l->ckpt_dir, name ? name : (l->basename ? l->basename : "model.ckpt"));
    if (n < 0 || (size_t)n >= sizeof path)
      return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_loop_save: the checkpoint path is too long");
    rc = hk_saver_save(prefix, l->saver, rs, path, name ? HK_UNSET_STEPS : hk__loop_global_step(l),
                       name ? HK_SAVE_NO_STATE : 0, &local);
  }
  if (rc != HK_OK) {
    hk__loop_fail(l, rc, &local);
    return hk__loop_report(l, st);
  }
  return HK_OK;
}

/* From any thread: only the flag and the coordinator (thread-safe); the
 * training thread records the cause when it sees the flag. */
void hk_loop_request_stop(hk_loop *l) {
  if (!l) return;
  atomic_store(&l->stop_requested, 1);
  hk_coordinator *c = atomic_load(&l->coord);
  if (c) hk_coordinator_request_stop(c, HK_OK, NULL);
}

hk_code hk_loop_finish(hk_loop *l, hk_status *st) {
  if (!l) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_loop_finish: loop is NULL");
  if (l->finished) {
    if (st) *st = l->finish_status;
    return l->finish_rc;
  }
  hk_status result = HK_STATUS_INIT;
  if (l->step_open) {
    hk_env_log(&l->env, HK_LOG_WARNING, "hk_loop_finish: the open step is abandoned (no after_run)");
    hk__loop_settle_snapshot(l);
    hk_session_run_abandon(l->session);
    l->step_open = 0;
  }
  if (l->session) {
    /* A clean end runs every end(), which writes the final checkpoint
     * unless the final step was just saved; after an error nothing more is written. */
    hk_code exit_code = l->failed ? l->error.code : (l->ended_by_range ? HK_OUT_OF_RANGE : HK_OK);
    hk_status cst = HK_STATUS_INIT;
    hk_code rc = hk_session_close(l->session, exit_code, &cst);
    if (rc != HK_OK && !l->failed) hk__loop_fail(l, rc, &cst);
    /* Keras' restore_best_weights: once the final checkpoint is ranked. */
    if (l->restore_best && !l->failed) {
      hk_status bst = HK_STATUS_INIT;
      if (hk__loop_restore_best(l, &bst) != HK_OK) hk__loop_fail(l, bst.code, &bst);
    }
  }
  if (l->installed_signals) {
    hk_status sst = HK_STATUS_INIT;
    if (hk_signal_uninstall(&sst) != HK_OK)
      hk_env_log(&l->env, HK_LOG_WARNING, "host loop: uninstalling the signal helper: %s", sst.message);
    l->installed_signals = 0;
  }
  if (l->failed) result = l->error;
  l->finished = 1;
  l->finish_rc = result.code;
  l->finish_status = result;
  if (st) *st = result;
  return result.code;
}

void hk_loop_free(hk_loop *l) {
  if (!l) return;
  if (l->started && !l->finished) {
    hk_env_log(&l->env, HK_LOG_WARNING, "loop freed without hk_loop_finish()");
    if (!l->failed) {
      /* Not a clean code: no end(), no final checkpoint. */
      hk_status why = HK_STATUS_INIT;
      hk_status_set(&why, HK_FAILED_PRECONDITION, "loop freed without hk_loop_finish()");
      hk__loop_fail(l, HK_FAILED_PRECONDITION, &why);
    }
    hk_loop_finish(l, NULL);
  }
  hk_env env = l->env;
  hk_session_free(l->session);
  hk_hook_free(l->watch);
  hk_hook_free(l->nan_hook);
  hk_hook_free(l->stop_hook);
  hk_hook_free(l->counter_hook);
  hk_hook_free(l->ckpt_hook);
  hk_scaffold_free(l->scaffold);
  hk_saver_free(l->saver);
  hk_executor_free(l->ex);
  hk__host_free(l->host);
  hk__loop_group_free(l);
  hk_env_free(&env, l->all);
  hk_env_free(&env, l->hooks);
  hk_env_free(&env, l->hooks_first);
  hk_env_free(&env, l->events_dir);
  hk_env_free(&env, l->restored);
  hk_env_free(&env, l->ckpt_dir);
  hk_env_free(&env, l->basename);
  hk_env_free(&env, l->nan_guard);
  hk_env_free(&env, l->summary_dir);
  hk_env_free(&env, l->best_metric);
  for (size_t i = 0; i < l->nes; i++) hk_env_free(&env, l->es_state[i]);
  hk_env_free(&env, l->es);
  hk_env_free(&env, l->es_state);
  for (size_t i = 0; i < l->nowned; i++) hk_env_free(&env, l->owned[i]);
  hk_env_free(&env, l->owned);
  hk_env_free(&env, l->ema);
  hk_env_free(&env, l);
}

/* ---- why the loop stopped ------------------------------------------------------------- */

void hk__loop_note_stop(hk_loop *l, hk_stop_reason reason, hk_code code, const char *detail) {
  if (l->stop.reason != HK_STOP_NONE) return;
  if (l->session) {
    hk_stop_info s;
    hk_session_stop_reason(&s, l->session, NULL);
    if (s.reason != HK_STOP_NONE) return; /* the session saw a cause first */
  }
  l->stop.reason = reason;
  l->stop.code = code;
  l->stop.signal = 0;
  snprintf(l->stop.detail, sizeof l->stop.detail, "%s", detail);
}

hk_code hk_loop_stop_reason(hk_stop_info *out, const hk_loop *l, hk_status *st) {
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_loop_stop_reason: out is NULL");
  memset(out, 0, sizeof *out);
  if (!l) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_loop_stop_reason: loop is NULL");
  hk_status_clear(st);
  if (l->stop.reason != HK_STOP_NONE) {
    *out = l->stop;
    return HK_OK;
  }
  hk_stop_info s;
  memset(&s, 0, sizeof s);
  if (l->session) hk_session_stop_reason(&s, l->session, NULL);
  /* The loop's own error (a step function's, a stalled global step) says
   * more than the code its session was closed with; a hook's reason (the
   * NaN guard's) says more than the loop's copy of its error. */
  if (l->failed && (s.reason == HK_STOP_NONE || s.reason == HK_STOP_ERROR || s.reason == HK_STOP_CLOSED)) {
    out->reason = HK_STOP_ERROR;
    out->code = l->error.code;
    snprintf(out->detail, sizeof out->detail, "%s", l->error.message);
    return HK_OK;
  }
  if (s.reason == HK_STOP_CLOSED) {
    if (!l->finished) return HK_OK;
    snprintf(s.detail, sizeof s.detail, "the program finished the loop (hk_loop_finish) without a stop");
  }
  *out = s;
  return HK_OK;
}

/* ---- accessors ------------------------------------------------------------------------- */

int64_t hk__loop_global_step(const hk_loop *l) {
  if (l->ex) return hk__host_global_step(hk_executor_self(l->ex));
  return l->program_gs ? hk__host_global_step(l->host) : 0;
}

int64_t hk_loop_global_step(const hk_loop *l) { return l ? hk__loop_global_step(l) : 0; }
const char *hk_loop_restored_checkpoint(const hk_loop *l) { return l ? l->restored : NULL; }
hk_executor *hk_loop_executor(hk_loop *l) { return l ? l->ex : NULL; }
hk_session *hk_loop_session(hk_loop *l) { return l ? l->session : NULL; }
