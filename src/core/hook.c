/*
 * Hook objects, run contexts and creation contexts.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "core/core.h"
#include "core/core_internal.h"
#include "util/common.h"

#include <string.h>

hk_code hk_hook_new(hk_hook **out, const hk_hook_vtable *vt, void *user, const char *name, const hk_env *env,
                    hk_status *st) {
  if (out) *out = NULL;
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_hook_new: out is NULL");
  if (!vt) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_hook_new: vtable is NULL");
  if (vt->version == 0 || vt->version > HK_HOOK_VTABLE_VERSION)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "hk_hook_new: hook vtable of '%s' has version %u; this library supports 1..%u",
                         name ? name : "hook", (unsigned)vt->version, (unsigned)HK_HOOK_VTABLE_VERSION);
  hk_code rc = hk_env_check(env, "hk_hook_new: env", st);
  if (rc != HK_OK) return rc;
  hk_hook *h = hk_env_calloc(env, 1, sizeof *h);
  if (!h) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_hook_new: out of memory");
  h->name = hk_env_strdup(env, name ? name : "hook");
  if (!h->name) {
    hk_env_free(env, h);
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_hook_new: out of memory");
  }
  h->vt = vt;
  h->user = user;
  if (env) {
    hk_env_copy(&h->env, env);
    h->has_env = 1;
  }
  *out = h;
  return HK_OK;
}

void hk_hook_free(hk_hook *h) {
  if (!h) return;
  hk_env env = *hk__env_or_default(h->has_env ? &h->env : NULL);
  if (h->vt->destroy) h->vt->destroy(h->user);
  hk_env_free(&env, h->name);
  hk_env_free(&env, h);
}

const char *hk_hook_name(const hk_hook *h) { return h ? h->name : "(null hook)"; }
void *hk_hook_user(const hk_hook *h) { return h ? h->user : NULL; }
void *hk_hook_user_if(const hk_hook *h, const hk_hook_vtable *vt) { return h && vt && h->vt == vt ? h->user : NULL; }

const hk_env *hk_hook_env(const hk_hook *h) {
  if (!h) return hk__env_or_default(NULL);
  if (h->has_env) return &h->env;
  return hk__env_or_default(h->session_env);
}

void hk__hook_set_on_detach(hk_hook *h, void (*fn)(void *user)) {
  if (h) h->on_detach = fn;
}

void hk__hook_set_on_quiesce(hk_hook *h, void (*fn)(void *user)) {
  if (h) h->on_quiesce = fn;
}

void hk__hook_set_on_traced_run(hk_hook *h, hk_code (*fn)(void *user, hk_status *status)) {
  if (h) h->on_traced_run = fn;
}

const hk_hook_vtable *hk__hook_vtable(const hk_hook *h) { return h ? h->vt : NULL; }
int hk__hook_serves_session(const hk_hook *h) { return h && h->owner != NULL; }

hk_scaffold *hk_hook_scaffold(const hk_hook *h) { return h ? h->session_scaffold : NULL; }

void hk_hook_log(const hk_hook *h, hk_log_level level, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  hk__env_vlog(hk_hook_env(h), level, fmt, ap);
  va_end(ap);
}

const hk_run_args *hk_run_context_args(const hk_run_context *ctx) { return ctx ? ctx->args : NULL; }
hk_raw_session *hk_run_context_session(const hk_run_context *ctx) { return ctx ? ctx->session : NULL; }
void hk_run_context_request_stop(hk_run_context *ctx) {
  if (ctx) ctx->stop_requested = 1;
}
int hk_run_context_stop_requested(const hk_run_context *ctx) { return ctx ? ctx->stop_requested : 0; }

static void note_reason(hk__stop_note *note, hk_stop_reason reason, const char *detail) {
  if (note->reason != HK_STOP_NONE || reason == HK_STOP_NONE) return;
  note->reason = reason;
  note->detail[0] = '\0';
  if (detail) {
    size_t n = strlen(detail);
    if (n >= sizeof note->detail) n = sizeof note->detail - 1;
    memcpy(note->detail, detail, n);
    note->detail[n] = '\0';
  }
}

void hk_run_context_request_stop_with_reason(hk_run_context *ctx, hk_stop_reason reason, const char *detail) {
  if (!ctx) return;
  ctx->stop_requested = 1;
  note_reason(&ctx->note, reason, detail);
}

const hk_span *hk_hook_last_traced_spans(const hk_hook *hook, size_t *n) {
  if (n) *n = 0;
  if (!hook || !n || !hook->owner) return NULL;
  return hk__session_last_spans(hook->owner, n);
}

hk_code hk_hook_stop_reason(hk_stop_info *out, const hk_hook *hook, hk_status *st) {
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_hook_stop_reason: out is NULL");
  memset(out, 0, sizeof *out);
  if (!hook) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_hook_stop_reason: hook is NULL");
  if (hook->owner) hk__session_stop_info(hook->owner, out);
  hk_status_clear(st);
  return HK_OK;
}

const hk_span *hk_run_context_last_traced_spans(const hk_run_context *ctx, size_t *n) {
  if (n) *n = 0;
  if (!ctx || !n || !ctx->owner) return NULL;
  return hk__session_last_spans(ctx->owner, n);
}

void hk_creation_context_request_stop(hk_creation_context *ctx) {
  if (ctx) ctx->stop_requested = 1;
}
int hk_creation_context_stop_requested(const hk_creation_context *ctx) { return ctx ? ctx->stop_requested : 0; }
void hk_creation_context_request_stop_with_reason(hk_creation_context *ctx, hk_stop_reason reason, const char *detail) {
  if (!ctx) return;
  ctx->stop_requested = 1;
  note_reason(&ctx->note, reason, detail);
}
const char *hk_creation_context_restored_checkpoint(const hk_creation_context *ctx) {
  return ctx ? ctx->restored_checkpoint : NULL;
}
