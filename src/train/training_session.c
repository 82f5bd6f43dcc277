/*
 * MonitoredTrainingSession (contract group E): the default hooks in TF's
 * order around a monitored session, built from the public headers only. The
 * hooks and the default Scaffold it makes live in one block that the
 * session frees with itself (its on_free).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "hooked/hooked.h"

#include <stddef.h>
#include <string.h>

/* What the MTS made for one session. */
typedef struct owned {
  hk_env env;
  hk_hook *step_counter, *summary_saver, *checkpoint_saver;
  hk_scaffold *scaffold;
  hk_hook **hooks; /* the order handed to the session */
} owned;

static void owned_free(void *user) {
  owned *o = user;
  if (!o) return;
  hk_hook_free(o->step_counter);
  hk_hook_free(o->summary_saver);
  hk_hook_free(o->checkpoint_saver);
  hk_scaffold_free(o->scaffold);
  hk_env env = o->env;
  hk_env_free(&env, o->hooks);
  hk_env_free(&env, o);
}

hk_code hk_training_session_options_init(hk_training_session_options *opts, uint32_t version) {
  return hk_struct_init(opts, sizeof(hk_training_session_options),
                        &(const hk_training_session_options)HK_TRAINING_SESSION_OPTIONS_INIT, version);
}

static int block_when_busy(const hk_training_session_options *o) { return o->async_checkpoint_block_when_busy != 0; }

/* The checkpoint saver's listeners. */
static size_t nlisteners(const hk_training_session_options *o) { return o->ncheckpoint_listeners; }
/* The checkpoint hook's best-k options. */
static void best_options(const hk_training_session_options *o, hk_checkpoint_saver_options *cs) {
  cs->best_k = o->best_k;
  cs->best_metric = o->best_metric;
  cs->best_mode = o->best_mode;
  cs->restore_best = o->restore_best;
}
static size_t nhooks_first(const hk_training_session_options *o) { return o->nhooks_first; }
static hk_hook *const *hooks_first(const hk_training_session_options *o) { return o->hooks_first; }
static double log_secs(const hk_training_session_options *o) { return o->log_step_count_secs; }

/* A given cadence is finite and >= 0. */
static hk_code check_secs(double v, const char *name, hk_status *st) {
  if (hk_secs_is_unset(v) || (isfinite(v) && v >= 0)) return HK_OK;
  return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_training_session_new: %s must be >= 0, got %g", name, v);
}

static hk_code check_steps(int64_t v, const char *name, hk_status *st) {
  if (v == HK_UNSET_STEPS || v >= 0) return HK_OK;
  return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_training_session_new: %s must be >= 0, got %lld", name,
                       (long long)v);
}

static hk_code check_hooks(hk_hook *const *a, size_t n, const char *name, hk_status *st) {
  if (!a && n)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_training_session_new: %s is NULL with a count of %zu", name, n);
  for (size_t i = 0; i < n; i++)
    if (!a[i]) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_training_session_new: %s[%zu] is NULL", name, i);
  return HK_OK;
}

/* Everything the options say, before any side effect. */
static hk_code validate(const hk_training_session_options *o, hk_status *st) {
  hk_code rc;
  if (hk_struct_check_version(o, HK_TRAINING_SESSION_OPTIONS_VERSION, "hk_training_session_options",
                              "hk_training_session_new: opts", st) != HK_OK)
    return HK_INVALID_ARGUMENT;
  if (!o->executor) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_training_session_new: executor is NULL");
  rc = hk_env_check(o->env, "hk_training_session_new: env", st);
  if (rc != HK_OK) return rc;
  if (!hk_secs_is_unset(o->save_checkpoint_secs) && o->save_checkpoint_steps != HK_UNSET_STEPS)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "Can not provide both save_checkpoint_secs and save_checkpoint_steps.");
  if (!hk_secs_is_unset(o->save_summaries_secs) && o->save_summaries_steps != HK_UNSET_STEPS)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "Can not provide both save_summaries_secs and save_summaries_steps.");
  if ((rc = check_secs(o->save_checkpoint_secs, "save_checkpoint_secs", st)) != HK_OK ||
      (rc = check_steps(o->save_checkpoint_steps, "save_checkpoint_steps", st)) != HK_OK ||
      (rc = check_secs(o->save_summaries_secs, "save_summaries_secs", st)) != HK_OK ||
      (rc = check_steps(o->save_summaries_steps, "save_summaries_steps", st)) != HK_OK ||
      (rc = check_steps(o->log_step_count_steps, "log_step_count_steps", st)) != HK_OK ||
      (rc = check_hooks(o->hooks, o->nhooks, "hooks", st)) != HK_OK ||
      (rc = check_hooks(o->chief_only_hooks, o->nchief_only_hooks, "chief_only_hooks", st)) != HK_OK ||
      (rc = check_hooks(hooks_first(o), nhooks_first(o), "hooks_first", st)) != HK_OK ||
      (rc = check_secs(log_secs(o), "log_step_count_secs", st)) != HK_OK)
    return rc;
  if (o->log_step_count_steps == HK_UNSET_STEPS)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "hk_training_session_new: log_step_count_steps must be >= 0 (0 disables)");
  if (nlisteners(o) > 0 && !o->checkpoint_listeners)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "hk_training_session_new: checkpoint_listeners is NULL with a count of %zu", nlisteners(o));
  if (block_when_busy(o) && !o->async_checkpoint)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "hk_training_session_new: async_checkpoint_block_when_busy is set without async_checkpoint");
  int ckpt_hook = o->checkpoint_dir && o->is_chief && o->save_checkpoint_secs != 0 && o->save_checkpoint_steps != 0;
  if (!ckpt_hook && (o->best_k || o->best_metric || o->restore_best))
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "hk_training_session_new: best_k, best_metric and restore_best configure the checkpoint hook, "
                         "and there is none (no checkpoint_dir, a cadence of 0, or not the chief)");
  if ((o->checkpoint_dir && !*o->checkpoint_dir) || (o->summary_dir && !*o->summary_dir))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_training_session_new: %s is empty",
                         o->checkpoint_dir && !*o->checkpoint_dir ? "checkpoint_dir" : "summary_dir");
  return HK_OK;
}

/* The session options that carry the MTS's own. */
static void session_options(const hk_training_session_options *o, hk_session_options *so) {
  hk_session_options_init(so, HK_SESSION_OPTIONS_VERSION);
  so->env = o->env;
  so->kind = HK_SESSION_MONITORED;
  so->executor = o->executor;
  so->is_chief = o->is_chief != 0;
  so->checkpoint_dir = o->is_chief ? o->checkpoint_dir : NULL;
  so->stop_grace_period_secs = o->stop_grace_period_secs;
  so->max_wait_secs = o->max_wait_secs;
  so->recovery_wait_secs = o->recovery_wait_secs;
  so->recovery_initial_delay_secs = o->recovery_initial_delay_secs;
  so->recovery_max_delay_secs = o->recovery_max_delay_secs;
  so->recovery_max_attempts = o->recovery_max_attempts;
  so->recovery_max_secs = o->recovery_max_secs;
}

/* The chief's default hooks. */
static hk_code make_default_hooks(const hk_training_session_options *o, owned *w, hk_status *st) {
  const char *summary_dir = o->summary_dir ? o->summary_dir : o->checkpoint_dir;
  hk_code rc;
  if (summary_dir && o->log_step_count_steps > 0) {
    hk_step_counter_options sc = HK_STEP_COUNTER_OPTIONS_INIT;
    sc.env = o->env;
    sc.every_n_steps = o->log_step_count_steps;
    sc.log_every_secs = log_secs(o); /* a log line a person reads */
    sc.output_dir = summary_dir;
    rc = hk_step_counter_hook_new(&w->step_counter, &sc, st);
    if (rc != HK_OK) return rc;
  }
  int summary_both_unset = hk_secs_is_unset(o->save_summaries_secs) && o->save_summaries_steps == HK_UNSET_STEPS;
  int summary_off = o->save_summaries_secs == 0 || o->save_summaries_steps == 0;
  if (summary_dir && !summary_off) {
    hk_summary_saver_options ss = HK_SUMMARY_SAVER_OPTIONS_INIT;
    ss.env = o->env;
    ss.save_steps = summary_both_unset ? 100 : o->save_summaries_steps; /* default: every 100 steps */
    ss.save_secs = o->save_summaries_secs;
    ss.output_dir = summary_dir;
    ss.scaffold = w->scaffold ? w->scaffold : o->scaffold;
    rc = hk_summary_saver_hook_new(&w->summary_saver, &ss, st);
    if (rc != HK_OK) return rc;
  }
  int ckpt_both_unset = hk_secs_is_unset(o->save_checkpoint_secs) && o->save_checkpoint_steps == HK_UNSET_STEPS;
  int ckpt_off = o->save_checkpoint_secs == 0 || o->save_checkpoint_steps == 0;
  if (o->checkpoint_dir && !ckpt_off) {
    hk_checkpoint_saver_options cs = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
    cs.env = o->env;
    cs.checkpoint_dir = o->checkpoint_dir;
    cs.save_secs = ckpt_both_unset ? 600.0 : o->save_checkpoint_secs; /* default: every 600 s */
    cs.save_steps = o->save_checkpoint_steps;
    cs.scaffold = w->scaffold ? w->scaffold : o->scaffold;
    cs.save_graph_def = o->save_graph_def != 0;
    cs.block_when_busy = block_when_busy(o);
    cs.listeners = nlisteners(o) > 0 ? o->checkpoint_listeners : NULL;
    cs.nlisteners = nlisteners(o);
    best_options(o, &cs);
    rc = o->async_checkpoint ? hk_async_checkpoint_saver_hook_new(&w->checkpoint_saver, &cs, st)
                             : hk_checkpoint_saver_hook_new(&w->checkpoint_saver, &cs, st);
    if (rc != HK_OK) return rc;
  }
  return HK_OK;
}

hk_code hk_training_session_new(hk_session **out, const hk_training_session_options *o, hk_status *st) {
  if (out) *out = NULL;
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_training_session_new: out is NULL");
  if (!o)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_training_session_new: options is NULL (executor is required)");
  hk_code rc = validate(o, st);
  if (rc != HK_OK) return rc;
  hk_session_options so;
  session_options(o, &so);

  const hk_env *env = o->env ? o->env : hk_executor_env(o->executor);
  owned *w = hk_env_calloc(env, 1, sizeof *w);
  if (!w) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_training_session_new: out of memory");
  hk_env_copy(&w->env, env);
  size_t n = 0, cap = nhooks_first(o) + o->nhooks + (o->is_chief ? o->nchief_only_hooks + 3 : 0);
  if (cap && !(w->hooks = hk_env_calloc(&w->env, cap, sizeof *w->hooks))) {
    owned_free(w);
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_training_session_new: out of memory");
  }
  if (!o->scaffold) {
    /* One Scaffold for the session and the hooks that need its ops. */
    hk_scaffold_options fo = HK_SCAFFOLD_OPTIONS_INIT;
    fo.env = env;
    rc = hk_scaffold_new(&w->scaffold, &fo, st);
    if (rc != HK_OK) {
      owned_free(w);
      return rc;
    }
  }
  for (size_t i = 0; i < nhooks_first(o); i++) w->hooks[n++] = hooks_first(o)[i];
  if (o->is_chief) {
    rc = make_default_hooks(o, w, st);
    if (rc != HK_OK) {
      owned_free(w);
      return rc;
    }
    for (size_t i = 0; i < o->nchief_only_hooks; i++) w->hooks[n++] = o->chief_only_hooks[i];
    if (w->step_counter) w->hooks[n++] = w->step_counter;
    if (w->summary_saver) w->hooks[n++] = w->summary_saver;
    if (w->checkpoint_saver) w->hooks[n++] = w->checkpoint_saver;
  }
  for (size_t i = 0; i < o->nhooks; i++) w->hooks[n++] = o->hooks[i];
  so.hooks = w->hooks;
  so.nhooks = n;
  so.scaffold = w->scaffold ? w->scaffold : o->scaffold;
  so.on_free = owned_free;
  so.on_free_user = w;
  rc = hk_session_new(out, &so, st);
  if (rc != HK_OK) owned_free(w); /* on_free runs only for a created session */
  return rc;
}
