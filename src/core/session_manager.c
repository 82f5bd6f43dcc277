/*
 * Session manager (contract group G): create a raw session and make the
 * model ready — restore or initialize, local init, ready check — or wait for
 * another process (the chief) to do so.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "ckpt/ckpt.h"
#include "core/core_internal.h"
#include "util/common.h"
#include "util/fs.h"
#include "util/path.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

struct hk_session_manager {
  hk_env env;
  hk_executor *ex;
  hk_handle local_init_op;
  hk_handle ready_op;
  hk_handle ready_for_local_init_op;
  hk_feed *local_init_feed;
  size_t nlocal_init_feed;
  double recovery_wait_secs;
  atomic_int cancelled;
  /* The prefix the last prepare/recover call restored (owned), NULL when it
   * initialized or failed: hk_session_manager_restored_checkpoint(). */
  char *restored;
};

hk_code hk_session_manager_options_init(hk_session_manager_options *o, uint32_t version) {
  return HK__STRUCT_INIT(o, version, hk_session_manager_options, HK_SESSION_MANAGER_OPTIONS_INIT);
}

hk_code hk_prepare_options_init(hk_prepare_options *opts, uint32_t version) {
  return HK__STRUCT_INIT(opts, version, hk_prepare_options, HK_PREPARE_OPTIONS_INIT);
}

hk_code hk_session_manager_new(hk_session_manager **out, const hk_session_manager_options *o, hk_status *st) {
  if (out) *out = NULL;
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_manager_new: out is NULL");
  if (!o)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_manager_new: options is NULL (executor is required)");
  HK__CHECK_VERSION(o, HK_SESSION_MANAGER_OPTIONS_VERSION, hk_session_manager_options, "hk_session_manager_new: opts",
                    st);
  if (!o->executor) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_manager_new: executor is NULL");
  hk_code rc = hk_env_check(o->env, "hk_session_manager_new: env", st);
  if (rc != HK_OK) return rc;
  if (!(isfinite(o->recovery_wait_secs) && o->recovery_wait_secs > 0))
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "hk_session_manager_new: recovery_wait_secs must be finite and > 0, got %g",
                         o->recovery_wait_secs);
  if (o->ready_for_local_init_op != HK_NO_HANDLE && o->local_init_op == HK_NO_HANDLE)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "If you pass a ready_for_local_init_op you must also pass a local_init_op, "
                         "ready_for_local_init_op [%s]",
                         hk_executor_handle_name(o->executor, o->ready_for_local_init_op));
  if (!o->local_init_feed && o->nlocal_init_feed)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_manager_new: local_init_feed is NULL with a count of %zu",
                         o->nlocal_init_feed);
  const hk_env *env = o->env ? o->env : hk_executor_env(o->executor);
  hk_session_manager *sm = hk_env_calloc(env, 1, sizeof *sm);
  if (!sm) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_session_manager_new: out of memory");
  hk_env_copy(&sm->env, env);
  sm->ex = o->executor;
  sm->local_init_op = o->local_init_op;
  sm->ready_op = o->ready_op;
  sm->ready_for_local_init_op = o->ready_for_local_init_op;
  sm->recovery_wait_secs = o->recovery_wait_secs;
  atomic_init(&sm->cancelled, 0);
  rc = hk__feeds_copy(&sm->env, o->local_init_feed, o->nlocal_init_feed, &sm->local_init_feed,
                      "hk_session_manager_new: local_init_feed", st);
  if (rc != HK_OK) {
    hk_env_free(&sm->env, sm);
    return rc;
  }
  sm->nlocal_init_feed = o->nlocal_init_feed;
  *out = sm;
  return HK_OK;
}

void hk_session_manager_free(hk_session_manager *sm) {
  if (!sm) return;
  hk_env env = sm->env;
  hk_env_free(&env, sm->restored);
  hk_env_free(&env, sm->local_init_feed);
  hk_env_free(&env, sm);
}

const char *hk_session_manager_restored_checkpoint(const hk_session_manager *sm) { return sm ? sm->restored : NULL; }

/* A new prepare/recover/wait call forgets what the previous one restored. */
static void forget_restored(hk_session_manager *sm) {
  hk_env_free(&sm->env, sm->restored);
  sm->restored = NULL;
}

void hk_session_manager_cancel(hk_session_manager *sm) {
  if (sm) atomic_store(&sm->cancelled, 1);
}
void hk_session_manager_reset_cancel(hk_session_manager *sm) {
  if (sm) atomic_store(&sm->cancelled, 0);
}

static int cancel_requested(hk_session_manager *sm) { return atomic_load(&sm->cancelled) || hk_signal_fired(); }

/* Sleep `secs`, ending early (within one recovery_wait_secs at most)
 * when cancelled. A host clock sleeps in one piece; the system clock sleeps
 * in short slices so a cancel from another thread is seen promptly. */
static hk_code interruptible_sleep(hk_session_manager *sm, double secs, hk_status *st) {
  if (cancel_requested(sm)) return hk_status_set(st, HK_CANCELLED, "wait cancelled: stop requested");
  if (sm->env.clock.sleep) {
    hk_env_sleep(&sm->env, secs);
  } else {
    double end = hk_env_monotonic(&sm->env) + secs;
    for (;;) {
      double left = end - hk_env_monotonic(&sm->env);
      if (left <= 0 || cancel_requested(sm)) break;
      hk_env_sleep(&sm->env, left < 0.05 ? left : 0.05);
    }
  }
  if (cancel_requested(sm)) return hk_status_set(st, HK_CANCELLED, "wait cancelled: stop requested");
  return HK_OK;
}

hk_code hk_session_manager_model_ready(hk_session_manager *sm, hk_raw_session *rs, hk_handle ready_op, int *ready,
                                       hk_status *reason, hk_status *st) {
  if (!sm || !rs || !ready)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_manager_model_ready: %s is NULL",
                         !sm   ? "manager"
                         : !rs ? "session"
                               : "ready");
  *ready = 1;
  hk_status_clear(reason);
  if (ready_op == HK_NO_HANDLE) return HK_OK;
  hk_run_args args = {NULL, 0, &ready_op, 1, NULL, 0, NULL};
  hk_tensor result;
  hk_status tmp = HK_STATUS_INIT;
  hk_code rc = hk_raw_session_run(rs, &args, &result, NULL, &tmp);
  if (rc != HK_OK) {
    if (rc == HK_FAILED_PRECONDITION && strstr(tmp.message, "uninitialized")) {
      *ready = 0;
      hk__status_copy(reason, &tmp);
      return HK_OK;
    }
    hk_env_log(&sm->env, HK_LOG_ERROR, "Error running ready op %s: %s", hk_executor_handle_name(sm->ex, ready_op),
               tmp.message);
    hk__status_copy(st, &tmp);
    return rc;
  }
  if (result.dtype != HK_DTYPE_STRING || result.rank != 1)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "ready op %s must produce a 1-D string tensor, got %s of rank %d",
                         hk_executor_handle_name(sm->ex, ready_op), hk_dtype_name(result.dtype), (int)result.rank);
  if (result.dims[0] == 0) return HK_OK;
  *ready = 0;
  if (reason) {
    reason->code = HK_FAILED_PRECONDITION;
    size_t used = (size_t)snprintf(reason->message, sizeof reason->message, "Variables not initialized: ");
    const char *const *names = (const char *const *)result.data;
    for (int64_t i = 0; i < result.dims[0] && used < sizeof reason->message; i++)
      used += (size_t)snprintf(reason->message + used, sizeof reason->message - used, "%s%s", i ? ", " : "",
                               names[i] ? names[i] : "");
  }
  return HK_OK;
}

/* Local init: runs local_init_op once ready_for_local_init_op allows it.
 * *ok tells whether local init could run; when not, `why` says why.
 * Run errors are returned. */
static hk_code try_local_init(hk_session_manager *sm, hk_raw_session *rs, int *ok, hk_status *why, hk_status *st) {
  *ok = 1;
  if (sm->ready_for_local_init_op != HK_NO_HANDLE) {
    int ready = 0;
    hk_code rc = hk_session_manager_model_ready(sm, rs, sm->ready_for_local_init_op, &ready, why, st);
    if (rc != HK_OK) return rc;
    if (!ready) {
      *ok = 0;
      return HK_OK;
    }
  }
  if (sm->local_init_op != HK_NO_HANDLE) {
    hk_env_log(&sm->env, HK_LOG_INFO, "Running local_init_op.");
    hk_run_args args = {sm->local_init_feed, sm->nlocal_init_feed, NULL, 0, &sm->local_init_op, 1, NULL};
    hk_code rc = hk_raw_session_run(rs, &args, NULL, NULL, st);
    if (rc != HK_OK) return rc;
    hk_env_log(&sm->env, HK_LOG_INFO, "Done running local_init_op.");
  }
  return HK_OK;
}

static const hk_prepare_options default_prepare = HK_PREPARE_OPTIONS_INIT;

static hk_code check_prepare(const hk_prepare_options *o, hk_status *st) {
  HK__CHECK_VERSION(o, HK_PREPARE_OPTIONS_VERSION, hk_prepare_options, "opts", st);
  if (!o->init_feed && o->ninit_feed)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "prepare options: init_feed is NULL with a count of %zu",
                         o->ninit_feed);
  if (o->checkpoint_dir && o->checkpoint_filename_with_path)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "Can not provide both checkpoint_dir and checkpoint_filename_with_path.");
  if (!(hk_secs_is_unset(o->max_wait_secs) || hk__secs_valid(o->max_wait_secs)))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "prepare options: max_wait_secs must be finite and >= 0, got %g",
                         o->max_wait_secs);
  return HK_OK;
}

static hk_code fail_closing(hk_raw_session **rs, hk_code rc);

/* The Saver of the options, when restoring is configured at all. */
static hk_saver *restore_saver(const hk_prepare_options *o) {
  hk_saver *saver = o->saver;
  if (!saver || (!o->checkpoint_dir && !o->checkpoint_filename_with_path)) return NULL;
  return saver;
}

/* While checkpoint_dir has neither a state file nor a checkpoint data
 * file, wait for one if asked. *present tells whether either exists
 * now. Only existence matters here (the restore reads and verifies), so
 * each poll is a stat, and a listing when there is no state file. */
static hk_code wait_for_checkpoint_files(hk_session_manager *sm, const hk_prepare_options *o, hk_saver *saver,
                                         int *present, hk_status *st) {
  const hk_env *env = hk__saver_env(saver);
  char *path = hk__path_join(env, o->checkpoint_dir, hk_saver_latest_filename(saver));
  double waited = 0;
  hk_code rc = HK_OK;
  hk__fs fs;

  if (!path)
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "session manager: out of memory looking for the state file in %s",
                         o->checkpoint_dir);
  hk__fs_init(&fs, env);
  for (;;) {
    hk_fs_stat sb;
    /* Malformed or unreadable: present, and the restore scans. */
    *present = hk__fs_stat(&fs, path, &sb, NULL) != HK_NOT_FOUND;
    if (!*present) {
      /* No state file but checkpoints: the restore scans, with a
       * WARNING. A directory it cannot list counts as present, so the
       * restore reports why; running out of memory is reported now. */
      int found = 0;
      hk_status why = HK_STATUS_INIT;
      rc = hk__dir_has_checkpoints(env, o->checkpoint_dir, &found, &why);
      if (rc == HK_RESOURCE_EXHAUSTED) {
        hk__status_copy(st, &why);
        break;
      }
      *present = rc != HK_OK || found;
      rc = HK_OK;
    }
    if (*present) break;
    int forever = hk_secs_is_unset(o->max_wait_secs);
    if (!o->wait_for_checkpoint || !(forever || waited < o->max_wait_secs)) break;
    hk_env_log(&sm->env, HK_LOG_INFO, "Waiting for checkpoint to be available.");
    rc = interruptible_sleep(sm, sm->recovery_wait_secs, st);
    if (rc != HK_OK) break;
    waited += sm->recovery_wait_secs;
  }
  hk_env_free(env, path);
  return rc;
}

/* Create a raw session and restore it when a checkpoint is configured
 * (the first step of prepare_session). *restored_from receives the prefix that was
 * restored (owned, sm->env), NULL when nothing was. A session whose restore
 * failed is never handed out. */
static hk_code create_and_restore(hk_session_manager *sm, const hk_prepare_options *o, hk_raw_session **out,
                                  char **restored_from, hk_status *st) {
  *restored_from = NULL;
  hk_saver *saver = restore_saver(o);
  int present = 0;
  hk_code rc;
  /* Waiting needs no raw session; do it first so none is held meanwhile. */
  if (saver && o->checkpoint_dir) {
    rc = wait_for_checkpoint_files(sm, o, saver, &present, st);
    if (rc != HK_OK) return rc;
  }
  rc = hk_raw_session_open(out, sm->ex, st);
  if (rc != HK_OK || !saver) return rc;
  if (o->checkpoint_filename_with_path) {
    /* Restored unconditionally, no fallback. */
    rc = hk_saver_restore(saver, *out, o->checkpoint_filename_with_path, st);
    if (rc != HK_OK) return fail_closing(out, rc);
    *restored_from = hk_env_strdup(&sm->env, o->checkpoint_filename_with_path);
    if (!*restored_from)
      return fail_closing(out, hk_status_set(st, HK_RESOURCE_EXHAUSTED, "session manager: out of memory"));
    return HK_OK;
  }
  if (!present) return HK_OK;
  char *from = NULL;
  rc = hk__saver_restore_latest(saver, *out, o->checkpoint_dir, &from, st);
  if (rc != HK_OK) return fail_closing(out, rc);
  if (from) {
    /* restore_latest allocates through the Saver's env; hand back a copy of ours. */
    *restored_from = hk_env_strdup(&sm->env, from);
    hk_env_free(hk__saver_env(saver), from);
    if (!*restored_from)
      return fail_closing(out, hk_status_set(st, HK_RESOURCE_EXHAUSTED, "session manager: out of memory"));
  }
  return HK_OK;
}

static hk_code fail_closing(hk_raw_session **rs, hk_code rc) {
  hk_raw_session_free(*rs);
  *rs = NULL;
  return rc;
}

/* *needs is 0 when no variable of the executor needs initializing:
 * every one is host-owned (HK_VAR_EXTERNAL: the host's memory counts as
 * initialized), or there is none. */
static hk_code needs_init(hk_session_manager *sm, int *needs, hk_status *st) {
  size_t n = hk_executor_variable_count(sm->ex);
  *needs = 0;
  for (size_t i = 0; i < n; i++) {
    hk_variable_info info;
    hk_code rc = hk_executor_variable_info(&info, sm->ex, i, st);
    if (rc != HK_OK) return rc;
    if (!(info.flags & HK_VAR_EXTERNAL)) {
      *needs = 1;
      return HK_OK;
    }
  }
  return HK_OK;
}

/* prepare_session after the checks: restore, else init_op and init_fn;
 * local init; the ready check. *restored_from as create_and_restore's, owned by
 * the caller whatever the result. */
static hk_code prepare_impl(hk_session_manager *sm, hk_raw_session **out, const hk_prepare_options *o,
                            char **restored_from, hk_status *st) {
  hk_raw_session *rs = NULL;
  hk_code rc = create_and_restore(sm, o, &rs, restored_from, st);
  if (rc != HK_OK) return rc;
  if (!*restored_from) {
    if (o->init_op == HK_NO_HANDLE && !o->init_fn && sm->local_init_op == HK_NO_HANDLE) {
      int needs = 1;
      rc = needs_init(sm, &needs, st);
      if (rc != HK_OK) return fail_closing(&rs, rc);
      if (needs)
        return fail_closing(
            &rs, hk_status_set(st, HK_FAILED_PRECONDITION,
                               "Model is not initialized and no init_op or init_fn or local_init_op was given"));
      hk_env_log(&sm->env, HK_LOG_DEBUG,
                 "No init_op, init_fn or local_init_op, and none needed: every variable of the executor is "
                 "host-owned (HK_VAR_EXTERNAL), so the model counts as initialized.");
    }
    if (o->init_op != HK_NO_HANDLE) {
      hk_run_args args = {o->init_feed, o->ninit_feed, NULL, 0, &o->init_op, 1, NULL};
      rc = hk_raw_session_run(rs, &args, NULL, NULL, st);
      if (rc != HK_OK) return fail_closing(&rs, rc);
    }
    if (o->init_fn) {
      /* A local status: init_fn may leave it unfilled, and st may be NULL. */
      hk_status fn_st = HK_STATUS_INIT;
      rc = hk__callback_result(o->init_fn(o->init_fn_user, o->scaffold, rs, &fn_st), &fn_st, "init_fn", "Scaffold");
      if (rc != HK_OK) {
        hk__status_copy(st, &fn_st);
        return fail_closing(&rs, rc);
      }
    }
  }
  int ok = 1;
  hk_status why = HK_STATUS_INIT;
  rc = try_local_init(sm, rs, &ok, &why, st);
  if (rc != HK_OK) return fail_closing(&rs, rc);
  if (!ok)
    return fail_closing(
        &rs, hk_status_set(st, HK_FAILED_PRECONDITION,
                           "Init operations did not make model ready for local_init.  Init op: %s, "
                           "init fn: %s, error: %s",
                           hk__handle_label(sm->ex, o->init_op), o->init_fn ? "<init_fn>" : "None", why.message));
  int ready = 0;
  rc = hk_session_manager_model_ready(sm, rs, sm->ready_op, &ready, &why, st);
  if (rc != HK_OK) return fail_closing(&rs, rc);
  if (!ready) {
    char init_name[128];
    snprintf(init_name, sizeof init_name, "%s", hk__handle_label(sm->ex, o->init_op));
    return fail_closing(&rs, hk_status_set(st, HK_FAILED_PRECONDITION,
                                           "Init operations did not make model ready.  Init op: %s, init fn: %s, "
                                           "local_init_op: %s, error: %s",
                                           init_name, o->init_fn ? "<init_fn>" : "None",
                                           hk__handle_label(sm->ex, sm->local_init_op), why.message));
  }
  *out = rs;
  return HK_OK;
}

hk_code hk_session_manager_prepare_session(hk_raw_session **out, hk_session_manager *sm, const hk_prepare_options *o,
                                           hk_status *st) {
  if (out) *out = NULL;
  if (!sm) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_manager_prepare_session: manager is NULL");
  forget_restored(sm);
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_manager_prepare_session: out is NULL");
  if (!o) o = &default_prepare;
  hk_code rc = check_prepare(o, st);
  if (rc != HK_OK) return rc;
  char *restored_from = NULL;
  rc = prepare_impl(sm, out, o, &restored_from, st);
  if (rc == HK_OK) {
    sm->restored = restored_from;
  } else {
    hk_env_free(&sm->env, restored_from);
  }
  return rc;
}

hk_code hk_session_manager_recover_session(hk_raw_session **out, int *initialized, hk_session_manager *sm,
                                           const hk_prepare_options *o, hk_status *st) {
  if (out) *out = NULL;
  if (initialized) *initialized = 0;
  if (!sm) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_manager_recover_session: manager is NULL");
  forget_restored(sm);
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_manager_recover_session: out is NULL");
  if (!initialized)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_manager_recover_session: initialized is NULL");
  if (!o) o = &default_prepare;
  hk_code rc = check_prepare(o, st);
  if (rc != HK_OK) return rc;
  hk_raw_session *rs = NULL;
  char *from = NULL;
  rc = create_and_restore(sm, o, &rs, &from, st);
  if (rc != HK_OK) return rc;
  /* Local init always runs, restored or not. */
  int ok = 1;
  hk_status why = HK_STATUS_INIT;
  rc = try_local_init(sm, rs, &ok, &why, st);
  if (rc != HK_OK) {
    hk_env_free(&sm->env, from);
    return fail_closing(&rs, rc);
  }
  if (from) {
    if (!ok) {
      hk_env_log(&sm->env, HK_LOG_INFO, "Restoring model from %s did not make model ready for local init: %s", from,
                 why.message);
    } else {
      int ready = 0;
      rc = hk_session_manager_model_ready(sm, rs, sm->ready_op, &ready, &why, st);
      if (rc != HK_OK) {
        hk_env_free(&sm->env, from);
        return fail_closing(&rs, rc);
      }
      if (ready)
        hk_env_log(&sm->env, HK_LOG_INFO, "Restored model from %s", from);
      else
        hk_env_log(&sm->env, HK_LOG_INFO, "Restoring model from %s did not make model ready: %s", from, why.message);
      *initialized = ready;
    }
    /* Only a session that holds what was restored reports it: when
     * *initialized is 0 the caller initializes the model itself. */
    if (*initialized) {
      sm->restored = from;
    } else {
      hk_env_free(&sm->env, from);
    }
  }
  *out = rs;
  return HK_OK;
}

hk_code hk_session_manager_wait_for_session(hk_raw_session **out, hk_session_manager *sm, double max_wait_secs,
                                            hk_status *st) {
  if (out) *out = NULL;
  if (!sm) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_manager_wait_for_session: manager is NULL");
  forget_restored(sm); /* a worker never restores */
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_session_manager_wait_for_session: out is NULL");
  int unlimited = hk_secs_is_unset(max_wait_secs);
  if (!unlimited && !hk__secs_valid(max_wait_secs))
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "hk_session_manager_wait_for_session: max_wait_secs must be finite "
                         "and >= 0 (or HK_UNSET_SECS), got %g",
                         max_wait_secs);
  double start = hk_env_monotonic(&sm->env);
  int waited = 0;
  for (;;) {
    if (cancel_requested(sm)) return hk_status_set(st, HK_CANCELLED, "wait cancelled: stop requested");
    hk_raw_session *rs = NULL;
    hk_code rc = hk_raw_session_open(&rs, sm->ex, st);
    if (rc != HK_OK) return rc;
    int ok = 1, ready = 0;
    hk_status local_why = HK_STATUS_INIT, ready_why = HK_STATUS_INIT;
    rc = try_local_init(sm, rs, &ok, &local_why, st);
    if (rc != HK_OK) return fail_closing(&rs, rc);
    if (ok) {
      rc = hk_session_manager_model_ready(sm, rs, sm->ready_op, &ready, &ready_why, st);
      if (rc != HK_OK) return fail_closing(&rs, rc);
      if (ready) {
        /* A worker that waited for the chief says when the wait ended. */
        if (waited)
          hk_env_log(&sm->env, HK_LOG_INFO, "Model is ready after waiting %g secs.",
                     hk_env_monotonic(&sm->env) - start);
        *out = rs;
        return HK_OK;
      }
    }
    hk_raw_session_free(rs); /* close errors are ignored (and logged) */
    if (!unlimited) {
      double remaining = max_wait_secs - (hk_env_monotonic(&sm->env) - start);
      if (remaining - sm->recovery_wait_secs < 0)
        return hk_status_set(st, HK_DEADLINE_EXCEEDED, "Session was not ready after waiting %.0f secs.",
                             floor(max_wait_secs));
    }
    hk_env_log(&sm->env, HK_LOG_INFO, "Waiting for model to be ready.  Ready_for_local_init_op:  %s, ready: %s",
               ok ? "None" : local_why.message, ok ? ready_why.message : "None");
    waited = 1;
    rc = interruptible_sleep(sm, sm->recovery_wait_secs, st);
    if (rc != HK_OK) return rc;
  }
}
