/*
 * hooked — the host loop's restore_best (Keras' restore_best_weights): at a
 * clean finish, once the session closed and the final checkpoint was
 * ranked, the best checkpoint of best-k retention goes back into the
 * program's arrays.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "loop/host_executor.h"
#include "loop/loop_internal.h"

#include <inttypes.h>
#include <string.h>

/* Whether variable `name` is one the loop registered for a hook of its
 * own (an early-stopping or learning-rate state, an average's shadow or
 * count): those are the hooks' progress, not the model. */
static int loop_owned(const hk_loop *l, const char *name) {
  for (size_t i = 0; i < l->nes; i++) {
    hk_early_stopping_info es;
    hk_learning_rate_info lr;
    if (hk_early_stopping_hook_info(&es, l->es[i], NULL) == HK_OK && es.state && strcmp(es.state, name) == 0) return 1;
    if (hk_learning_rate_hook_info(&lr, l->es[i], NULL) == HK_OK && lr.state && strcmp(lr.state, name) == 0) return 1;
  }
  for (size_t i = 0; i < l->nema; i++) {
    hk_ema_info ema;
    if (hk_ema_hook_info(&ema, l->ema[i], NULL) != HK_OK) continue;
    if (strcmp(ema.count, name) == 0) return 1;
    for (size_t k = 0; k < ema.nvariables; k++)
      if (strcmp(ema.shadows[k], name) == 0) return 1;
  }
  return 0;
}

/* The names restore_best restores: the program's checkpointed arrays but
 * the global step. `names` has room for every variable. */
static size_t model_arrays(hk_loop *l, const char **names) {
  hk__host *h = hk_executor_self(l->ex);
  size_t gs = (size_t)-1, n = 0, total = hk_executor_variable_count(l->ex);
  hk_executor_global_step(NULL, &gs, l->ex, NULL);
  for (size_t k = 0; k < total; k++) {
    hk_variable_info vi;
    hk_tensor spec;
    uint32_t flags;
    int is_state = 0;
    if (k == gs || hk_executor_variable_info(&vi, l->ex, k, NULL) != HK_OK || (vi.flags & HK_VAR_LOCAL)) continue;
    if (!hk__host_spec(h, vi.name, &spec, &flags, &is_state) || is_state || loop_owned(l, vi.name)) continue;
    names[n++] = vi.name;
  }
  return n;
}

static hk_code restore_from(hk_loop *l, const char *prefix, const char **names, size_t n, hk_status *st) {
  hk_saver *saver = NULL;
  hk_raw_session *rs = NULL;
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  so.env = &l->env;
  so.executor = l->ex;
  so.var_list = names;
  so.nvar_list = n;
  hk_code rc = hk_saver_new(&saver, &so, st);
  if (rc == HK_OK) rc = hk_raw_session_open(&rs, l->ex, st);
  if (rc == HK_OK) rc = hk_saver_restore(saver, rs, prefix, st);
  hk_raw_session_free(rs);
  hk_saver_free(saver);
  return rc;
}

hk_code hk__loop_restore_best(hk_loop *l, hk_status *st) {
  char *prefix = NULL;
  double value = 0.0;
  hk_status why = HK_STATUS_INIT;
  hk_code rc = hk_checkpoint_best(&prefix, &value, &l->env, l->ckpt_dir, NULL, &why);
  if (rc != HK_OK)
    return hk_status_set(st, rc, "restore_best: %s; the arrays keep the values of the last step", why.message);
  hk_checkpoint_reader *r = NULL;
  int64_t step = 0;
  if (hk_checkpoint_reader_open(&r, &l->env, prefix, NULL) == HK_OK) step = hk_checkpoint_reader_step(r);
  hk_checkpoint_reader_free(r);
  size_t total = hk_executor_variable_count(l->ex);
  const char **names = hk_env_calloc(&l->env, total ? total : 1, sizeof *names);
  if (!names) {
    hk_env_free(&l->env, prefix);
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "restore_best: out of memory");
  }
  size_t n = model_arrays(l, names);
  rc = n ? restore_from(l, prefix, names, n, &why) : HK_OK;
  if (rc != HK_OK) {
    hk_status_set(st, rc, "restore_best: restoring %s: %s", prefix, why.message);
  } else {
    hk_env_log(&l->env, HK_LOG_INFO,
               "Restored the best checkpoint %s (step %" PRId64 ", %s = %.9g) into the program's arrays (%zu).", prefix,
               step, l->best_metric, value, n);
  }
  hk_env_free(&l->env, names);
  hk_env_free(&l->env, prefix);
  return rc;
}
