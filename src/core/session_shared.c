/*
 * What a session shares with its hooks: one event writer per directory,
 * made at the first hook's request and flushed at close, the public ways
 * to them (hk_summary_writer_from_session, hk_summary_writer_from_hook), and the
 * locks of the checkpoint directories its hooks write.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "core/core.h"
#include "core/session_internal.h"
#include "events/events.h"
#include "util/dir_lock.h"

#include <stdint.h>
#include <string.h>

/* ---- event writers ----------------------------------------------------------- */

/* "a/b", "a/b/" and "a/b//" name one directory. */
static size_t dir_key_len(const char *dir) {
  size_t n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/') n--;
  return n;
}

static hk_code session_event_writer(hk_session *s, const hk_env *env, const char *dir, hk__event_writer **out,
                                    hk_status *st) {
  size_t k = dir_key_len(dir);
  for (size_t i = 0; i < s->nevw; i++) {
    if (dir_key_len(s->evw[i].dir) == k && memcmp(s->evw[i].dir, dir, k) == 0) {
      *out = s->evw[i].w;
      return HK_OK;
    }
  }
  if (!hk__session_grow(s, (void **)&s->evw, &s->capevw, s->nevw + 1, sizeof *s->evw))
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "event writer for %s: out of memory", dir);
  char *copy = hk_env_strdup(&s->env, dir);
  if (!copy) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "event writer for %s: out of memory", dir);
  hk__event_writer *w = NULL;
  hk_code rc = hk__event_writer_new(&w, env, dir, st);
  if (rc != HK_OK) {
    hk_env_free(&s->env, copy);
    return rc;
  }
  s->evw[s->nevw].dir = copy;
  s->evw[s->nevw].w = w;
  s->nevw++;
  *out = w;
  return HK_OK;
}

/* The writer the session shares for `dir`, made through `env` at the first
 * request for that directory. FAILED_PRECONDITION once it is closed. */
static hk_code shared_event_writer(hk_session *s, const hk_env *env, const char *dir, hk__event_writer **out,
                                   hk_status *st) {
  *out = NULL;
  if (s->closed) return hk_status_set(st, HK_FAILED_PRECONDITION, CLOSED_MESSAGE);
  return session_event_writer(s, env ? env : &s->env, dir, out, st);
}

hk_code hk__hook_event_writer(hk_hook *hook, const char *dir, hk__event_writer **out, int *caller_owns, hk_status *st) {
  if (out) *out = NULL;
  if (caller_owns) *caller_owns = 0;
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk__hook_event_writer: out is NULL");
  if (!caller_owns) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk__hook_event_writer: caller_owns is NULL");
  if (!hook) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk__hook_event_writer: hook is NULL");
  if (!dir) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk__hook_event_writer: dir is NULL");
  if (!hook->owner) {
    hk_code rc = hk__event_writer_new(out, hk_hook_env(hook), dir, st);
    if (rc == HK_OK) *caller_owns = 1;
    return rc;
  }
  return session_event_writer((hk_session *)hook->owner, hk_hook_env(hook), dir, out, st);
}

void hk__hook_event_writer_release(hk_hook *hook, const char *who, hk__event_writer **w, int *caller_owns) {
  if (*caller_owns) {
    hk_status st = HK_STATUS_INIT;
    if (hk__event_writer_flush(*w, &st) != HK_OK)
      hk_hook_log(hook, HK_LOG_ERROR, "%s: %s (not returned)", who, st.message);
    hk__event_writer_free(*w);
  }
  *w = NULL;
  *caller_owns = 0;
}

/* The public ways to the writers a session shares (hooked/summary.h). */
static hk_code check_dir(const char *fn, const void *obj, const char *objname, const char *logdir,
                         hk_summary_writer **out, hk_status *st) {
  if (out != NULL) *out = NULL;
  if (obj == NULL) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: %s is NULL", fn, objname);
  if (out == NULL) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: out is NULL", fn);
  if (logdir == NULL || logdir[0] == '\0')
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: logdir is %s", fn, logdir ? "empty" : "NULL");
  return HK_OK;
}

hk_code hk_summary_writer_from_session(hk_summary_writer **out, hk_session *s, const char *logdir, hk_status *st) {
  hk__event_writer *ew = NULL;
  hk_code rc = check_dir("hk_summary_writer_from_session", s, "session", logdir, out, st);
  if (rc != HK_OK) return rc;
  rc = shared_event_writer(s, NULL, logdir, &ew, st);
  if (rc == HK_OK) *out = hk__summary_writer_of(ew);
  return rc;
}

hk_code hk_summary_writer_from_hook(hk_summary_writer **out, hk_hook *hook, const char *logdir, hk_status *st) {
  hk__event_writer *ew = NULL;
  hk_code rc = check_dir("hk_summary_writer_from_hook", hook, "hook", logdir, out, st);
  if (rc != HK_OK) return rc;
  if (hook->owner == NULL)
    return hk_status_set(st, HK_FAILED_PRECONDITION,
                         "hk_summary_writer_from_hook: hook '%s' serves no session (use hk_summary_writer_new() for a "
                         "writer of its own)",
                         hk_hook_name(hook));
  rc = shared_event_writer((hk_session *)(uintptr_t)hook->owner, hk_hook_env(hook), logdir, &ew, st);
  if (rc == HK_OK) *out = hk__summary_writer_of(ew);
  return rc;
}

hk_code hk__hook_dir_lock(hk_hook *hook, const char *dir, hk__dir_lock **own, hk_status *st) {
  if (own) *own = NULL;
  if (!own) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk__hook_dir_lock: own is NULL");
  if (!hook) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk__hook_dir_lock: hook is NULL");
  if (!dir) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk__hook_dir_lock: dir is NULL");
  if (!hook->owner) return hk__dir_lock_take(hk_hook_env(hook), dir, own, st);
  hk_session *s = (hk_session *)hook->owner;
  if (s->closed) return hk_status_set(st, HK_FAILED_PRECONDITION, CLOSED_MESSAGE);
  return hk__dir_locks_take(&s->locks, &s->env, hk_hook_env(hook), dir, st);
}

/* Flushed at close, clean or not (an unclean close calls no end()).
 * Logged, not returned: the records were handed to the file system. */
void hk__session_flush_event_writers(hk_session *s) {
  for (size_t i = 0; i < s->nevw; i++) {
    hk_status tmp = HK_STATUS_INIT;
    if (hk__event_writer_flush(s->evw[i].w, &tmp) != HK_OK)
      hk__session_log_status(s, HK_LOG_ERROR, "event file flush at close (not returned)", &tmp);
  }
}

void hk__session_free_event_writers(hk_session *s) {
  for (size_t i = 0; i < s->nevw; i++) {
    hk__event_writer_free(s->evw[i].w);
    hk_env_free(&s->env, s->evw[i].dir);
  }
  hk_env_free(&s->env, s->evw);
  s->evw = NULL;
  s->nevw = s->capevw = 0;
}
