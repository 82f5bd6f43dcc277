/*
 * What the sessions' core exports to the layers above it (hk__ names;
 * not API): the built-in hooks' callbacks, the event writers and
 * directory locks a session shares with its hooks, and the check-resume
 * mode's variable. The files of core/ share core_internal.h besides.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_CORE_CORE_H
#define HOOKED_CORE_CORE_H

#include "events/events.h"
#include "util/dir_lock.h"

/* ---- hooks (hook.c, session_shared.c) ----------------------------------------- */

/** Register a built-in hook's detach callback, for hooks with background
 *  work: called when the session lets go (close, free without close,
 *  failed construction), before it frees its Scaffold, so work using the
 *  session's Saver can finish first. */
void hk__hook_set_on_detach(hk_hook *hook, void (*fn)(void *user));
/** Register a built-in hook's quiesce callback, for hooks with background
 *  work: called before every re-creation, before the session restores
 *  through the Scaffold's Saver, so no background work uses that Saver
 *  meanwhile. Results stay where the hook keeps them: the callback
 *  only waits. */
void hk__hook_set_on_quiesce(hk_hook *hook, void (*fn)(void *user));
/** Register a built-in hook's traced-run callback, for hooks that write
 *  what a traced run recorded (ProfilerHook): called once every after_run
 *  of a traced run has run, before run() returns, so the spans of every
 *  hook are complete. A non-OK code fails the run as an after_run
 *  failure does. */
void hk__hook_set_on_traced_run(hk_hook *hook, hk_code (*fn)(void *user, hk_status *status));
/** The vtable `hook` was made with; NULL for NULL. */
const hk_hook_vtable *hk__hook_vtable(const hk_hook *hook);
/** nonzero when `hook` serves a session (registered with one), 0 when it
 *  is driven directly or is NULL. */
int hk__hook_serves_session(const hk_hook *hook);

/**
 * The event writer for directory `dir` of the session `hook` serves
 * (hook->owner), shared by every hook asking for the same directory in that
 * session. The first request makes it, through hk_hook_env(hook) of the hook
 * asking; the session owns it, flushes it at close (after end(), clean or
 * not) and frees it when it is freed, so a hook must drop the pointer when
 * the session detaches it (on_detach). A hook serving no session (driven
 * directly) gets a writer of its own: *caller_owns is then 1 and the
 * hook frees it.
 */
hk_code hk__hook_event_writer(hk_hook *hook, const char *dir, hk__event_writer **out, int *caller_owns, hk_status *st);
/**
 * Drop what hk__hook_event_writer() gave: a writer the hook owns is flushed
 * (also when no end() ran; an error is logged through the hook, naming
 * `who`, not returned: the records were handed to the file system) and
 * freed; a session's is only forgotten. Sets *w to NULL and *caller_owns to 0.
 */
void hk__hook_event_writer_release(hk_hook *hook, const char *who, hk__event_writer **w, int *caller_owns);

/**
 * Lock checkpoint directory `dir` for the session `hook` serves, once
 * per session and directory (the first hook to ask takes the lock, the
 * others of that session share it; "a/b" and "a/b/" are one directory),
 * held until the session closes or is freed. A hook serving no session
 * takes a lock of its own into *own, which it releases with
 * hk__dir_lock_release() when it lets go of the directory; in a session
 * *own is NULL. A file system that cannot lock gives OK and no lock.
 * **Errors:** FAILED_PRECONDITION naming the directory and the other holder
 * when another trainer holds it, or when the session is closed; the file
 * system's errors; RESOURCE_EXHAUSTED.
 */
hk_code hk__hook_dir_lock(hk_hook *hook, const char *dir, hk__dir_lock **own, hk_status *st);

/* ---- the check-resume mode (check_resume.c) --------------------------------- */
#define HK__CHECK_RESUME_VAR "HOOKED_CHECK_RESUME"
/** HOOKED_CHECK_RESUME as read (hooked/checkpoint_saver.h says what it does). */
typedef struct hk__check_resume {
  int on;          /* the variable is set and not empty */
  int has_stop_at; /* stop_at=K given */
  int64_t stop_at;
  int keep_all;       /* keep_all=1 */
  const char *report; /* report=DIR: borrowed from the parsed value, report_len bytes (not terminated); NULL: none */
  size_t report_len;
} hk__check_resume;
/** Parse `value` (NULL or empty: the mode is off). INVALID_ARGUMENT naming
 *  HOOKED_CHECK_RESUME and the bad item for anything but a comma-separated
 *  list of report=DIR, stop_at=K (decimal, >= 0), keep_all=0|1, each at
 *  most once. Allocates nothing. */
hk_code hk__check_resume_parse(const char *value, hk__check_resume *out, hk_status *st);
/** hk__check_resume_parse of the process's HOOKED_CHECK_RESUME; out->report
 *  is borrowed from the environment: copy it before anything changes it. */
hk_code hk__check_resume_read(hk__check_resume *out, hk_status *st);

#endif /* HOOKED_CORE_CORE_H */
