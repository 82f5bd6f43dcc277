/*
 * hooked — the host loop's moving averages: an ExponentialMovingAverage
 * hook (hooked/ema.h) run as one of the loop's own hooks, its shadows and
 * count registered in the loop's memory (hk_loop_add_ema()).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "loop/host_executor.h"
#include "loop/loop_internal.h"

#include <string.h>

/* Keep `p` until hk_loop_free(). */
static hk_code own(hk_loop *l, void *p, const char *fn, hk_status *st) {
  if (l->nowned == l->owned_cap) {
    size_t cap = l->owned_cap ? l->owned_cap * 2 : 8;
    void **owned = hk_env_realloc(&l->env, l->owned, cap * sizeof *owned);
    if (!owned) {
      hk_env_free(&l->env, p);
      return hk__loop_fail(l, hk_status_set(st, HK_RESOURCE_EXHAUSTED, "%s: out of memory", fn), st);
    }
    l->owned = owned;
    l->owned_cap = cap;
  }
  l->owned[l->nowned++] = p;
  return HK_OK;
}

/* Every averaged variable a registered, checkpointed F32 or F64 array, and
 * every name the hook's state takes still free: checked before anything is
 * registered, so a refusal leaves the loop as it was. */
static hk_code check_names(hk_loop *l, const hk_ema_info *info, const char *fn, hk_status *st) {
  hk_tensor spec;
  uint32_t flags;
  int is_state;
  for (size_t i = 0; i < info->nvariables; i++) {
    const char *v = info->variables[i];
    if (!hk__host_spec(l->host, v, &spec, &flags, &is_state))
      return hk_status_set(st, HK_FAILED_PRECONDITION,
                           "%s: '%s' names no registered array (register the arrays the hook averages before "
                           "hk_loop_add_ema())",
                           fn, v);
    if (is_state || (spec.dtype != HK_DTYPE_F32 && spec.dtype != HK_DTYPE_F64) || (flags & HK_VAR_LOCAL))
      return hk_status_set(st, HK_INVALID_ARGUMENT,
                           "%s: '%s' is %s; the hook averages checkpointed arrays of dtype f32 or f64", fn, v,
                           is_state                 ? "an opaque state"
                           : (flags & HK_VAR_LOCAL) ? "not checkpointed (HK_LOOP_NO_CHECKPOINT)"
                                                    : hk_dtype_name(spec.dtype));
    if (hk__host_spec(l->host, info->shadows[i], &spec, &flags, &is_state))
      return hk_status_set(st, HK_ALREADY_EXISTS, "%s: the shadow '%s' of '%s' is already registered", fn,
                           info->shadows[i], v);
  }
  if (hk__host_spec(l->host, info->count, &spec, &flags, &is_state))
    return hk_status_set(st, HK_ALREADY_EXISTS, "%s: the count '%s' is already registered", fn, info->count);
  return HK_OK;
}

hk_code hk_loop_add_ema(hk_loop *l, hk_hook *hook, hk_status *st) {
  static const char fn[] = "hk_loop_add_ema";
  hk_ema_info info;
  hk_status why = HK_STATUS_INIT;
  if (!l) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: loop is NULL", fn);
  if (l->failed) return hk__loop_report(l, st);
  if (l->started || l->finished)
    return MISUSE(st, "%s: called after hk_loop_start(): add averages before the start", fn);
  if (!hook) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: hook is NULL", fn);
  if (hk_ema_hook_info(&info, hook, &why) != HK_OK)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: hook '%s' is not an ExponentialMovingAverage hook", fn,
                         hk_hook_name(hook));
  for (size_t i = 0; i < l->nema; i++)
    if (l->ema[i] == hook)
      return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: hook '%s' was already added", fn, hk_hook_name(hook));
  for (size_t i = 0; i < l->nhooks; i++)
    if (l->hooks[i] == hook)
      return hk_status_set(st, HK_INVALID_ARGUMENT,
                           "%s: hook '%s' is hooks[%zu] of the loop's options: a hook runs once, added or listed", fn,
                           hk_hook_name(hook), i);
  hk_code rc = check_names(l, &info, fn, st);
  if (rc != HK_OK) return rc;
  if (l->nema == l->ema_cap) {
    size_t cap = l->ema_cap ? l->ema_cap * 2 : 2;
    hk_hook **ema = hk_env_realloc(&l->env, l->ema, cap * sizeof *ema);
    if (!ema) return hk__loop_fail(l, hk_status_set(st, HK_RESOURCE_EXHAUSTED, "%s: out of memory", fn), st);
    l->ema = ema;
    l->ema_cap = cap;
  }
  for (size_t i = 0; i < info.nvariables; i++) {
    hk_tensor spec;
    uint32_t flags;
    int is_state;
    hk__host_spec(l->host, info.variables[i], &spec, &flags, &is_state);
    void *mem = hk_env_calloc(&l->env, spec.nbytes ? spec.nbytes : 1, 1);
    if (!mem) return hk__loop_fail(l, hk_status_set(st, HK_RESOURCE_EXHAUSTED, "%s: out of memory", fn), st);
    rc = own(l, mem, fn, st);
    if (rc != HK_OK) return rc;
    /* Optional: a checkpoint written before the average restores, and the
     * average starts over (a count of zero). */
    unsigned lf = HK_LOOP_OPTIONAL | ((flags & HK_VAR_NON_FINITE_OK) ? HK_LOOP_NON_FINITE_OK : 0);
    rc = hk_loop_add_array(l, info.shadows[i], spec.dtype, spec.rank, spec.dims, mem, lf, st);
    if (rc != HK_OK) return rc;
  }
  int64_t *count = hk_env_calloc(&l->env, 1, sizeof *count);
  if (!count) return hk__loop_fail(l, hk_status_set(st, HK_RESOURCE_EXHAUSTED, "%s: out of memory", fn), st);
  rc = own(l, count, fn, st);
  if (rc == HK_OK) rc = hk_loop_add_array(l, info.count, HK_DTYPE_I64, 0, NULL, count, HK_LOOP_OPTIONAL, st);
  if (rc != HK_OK) return rc;
  l->ema[l->nema++] = hook;
  return HK_OK;
}
