/*
 * What the files of core/ share among themselves (hk__ names; not API):
 * the structs behind the hook and context handles, and the helpers the
 * session, the session manager and the Scaffold call across files.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_CORE_CORE_INTERNAL_H
#define HOOKED_CORE_CORE_INTERNAL_H

#include "core/core.h"

/* ---- hooks (hook.c) ---------------------------------------------------------- */
struct hk_hook {
  const hk_hook_vtable *vt;
  void *user;
  char *name;
  hk_env env; /* valid when has_env */
  int has_env;
  const hk_env *session_env;     /* borrowed from the attached session */
  hk_scaffold *session_scaffold; /* borrowed from the attached session */
  /* The built-in hooks' callbacks (core.h says when each is called). */
  void (*on_detach)(void *user);
  void (*on_quiesce)(void *user);
  hk_code (*on_traced_run)(void *user, hk_status *status);
  const void *owner; /* the session this hook serves, or NULL */
};

/* Why a hook asked to stop, when it said (..._request_stop_with_reason):
 * the first reason of a run or a creation. */
typedef struct hk__stop_note {
  hk_stop_reason reason; /* HK_STOP_NONE: none given */
  char detail[HK_STATUS_MESSAGE_MAX];
} hk__stop_note;

struct hk_run_context {
  const hk_run_args *args;
  hk_raw_session *session;
  int stop_requested;
  const void *owner;        /* the hk_session of the run */
  const hk_hook *stop_hook; /* the hook whose call first requested the stop */
  hk__stop_note note;       /* note.reason is reset per run; detail only when set */
};

/** Why session `s` stopped (hk_session_stop_reason()). */
void hk__session_stop_info(const void *s, hk_stop_info *out);
/** The spans of the last completed traced run of session `s`. */
const hk_span *hk__session_last_spans(const void *s, size_t *n);

struct hk_creation_context {
  int stop_requested;
  const hk_hook *stop_hook;
  hk__stop_note note;
  /* The prefix this creation restored (borrowed from the session manager),
   * NULL when the model was initialized, or created by a custom creator or
   * a worker. */
  const char *restored_checkpoint;
};

/* ---- the Scaffold (scaffold.c) ----------------------------------------------- */
/** The executor a Scaffold was finalized with, or NULL. */
hk_executor *hk__scaffold_executor(const hk_scaffold *s);

/* ---- executor (executor.c) --------------------------------------------------- */
/** Check a caller's run args for NULL arrays with counts; names the field. */
hk_code hk__run_args_check(const hk_run_args *args, const char *what, hk_status *st);

/* ---- feeds (scaffold.c) ----------------------------------------------------- */
/** Deep-copy n feeds (values' data included) into one allocation. *out is
 *  NULL when n is 0. Validates each feed value. */
hk_code hk__feeds_copy(const hk_env *env, const hk_feed *src, size_t n, hk_feed **out, const char *what, hk_status *st);
/** Name of a handle for messages, "None" when unset. */
const char *hk__handle_label(hk_executor *ex, hk_handle h);

#endif /* HOOKED_CORE_CORE_INTERNAL_H */
