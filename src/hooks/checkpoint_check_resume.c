/*
 * hooked — the checkpoint saver hooks in the check-resume mode
 * (HOOKED_CHECK_RESUME, hooked/checkpoint_saver.h): what `hooked-ckpt check-resume`
 * asks of a program through the library rather than through its flags —
 * stop after the step that reaches global step K, so end() writes the final
 * checkpoint there, and keep every checkpoint so every step can be compared.
 * Both hooks (sync and async) share it; the asynchronous one also waits
 * for a write in flight rather than defer a due save (checkpoint_saver.c),
 * so its checkpoints land on the same steps in every run. Outside the mode
 * it costs one branch per after_run.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "ckpt/ckpt.h"
#include "core/core.h"
#include "hooks/checkpoint_saver_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

hk_code hk__ckpt_hook_check_begin(ckpt_hook *self, hk_status *st) {
  hk_code rc = hk__check_resume_read(&self->check, st);

  self->check_stopped = 0;
  if (rc != HK_OK) {
    memset(&self->check, 0, sizeof self->check);
    return rc;
  }
  self->check.report = NULL; /* the loop's concern: not kept here */
  self->check.report_len = 0;
  if (!self->check.on) return HK_OK;
  {
    char stop[160] = "";
    if (self->check.has_stop_at)
      snprintf(stop, sizeof stop,
               "training stops after the step that reaches global step %" PRId64
               " and the final checkpoint is written there; ",
               self->check.stop_at);
    hk_hook_log(self->hook, HK_LOG_INFO, "%s: check-resume mode (" HK__CHECK_RESUME_VAR "): %s%s%s.", self->kind, stop,
                self->check.keep_all ? "every checkpoint is kept (max_to_keep is ignored)" : "retention is unchanged",
                self->async ? "; a due save waits for the write in flight instead of being deferred" : "");
  }
  return HK_OK;
}

void hk__ckpt_hook_check_saver(ckpt_hook *self, hk_saver *saver) {
  if (self->check.keep_all) hk__saver_set_keep_all(saver, 1);
}

static void log_stop(ckpt_hook *self, int64_t gs, const char *when) {
  if (self->check_stopped) return;
  self->check_stopped = 1;
  hk_hook_log(self->hook, HK_LOG_INFO,
              "%s: check-resume mode: global step %" PRId64 " reached the stop step %" PRId64 " (" HK__CHECK_RESUME_VAR
              " stop_at); stopping %s.",
              self->kind, gs, self->check.stop_at, when);
}

void hk__ckpt_hook_check_created(ckpt_hook *self, int64_t gs, hk_creation_context *ctx) {
  if (!self->check.has_stop_at || gs < self->check.stop_at) return;
  log_stop(self, gs, "before the first step");
  hk_creation_context_request_stop(ctx);
}

hk_code hk__ckpt_hook_check_after_run(ckpt_hook *self, hk_run_context *ctx, const hk_run_values *values,
                                      hk_status *st) {
  int64_t stale, gs;
  hk_code rc;

  if (!self->check.has_stop_at) return HK_OK;
  /* The save part of after_run checked the fetched global step is there. */
  rc = hk_tensor_to_i64(&stale, &values->results[0], "global_step", st);
  if (rc != HK_OK) return rc;
  /* As StopAtStep: the run's own step count first, then the step as
   * the raw session has it. */
  if (stale < self->check.stop_at - self->steps_per_run) return HK_OK;
  rc = hk_raw_session_global_step(&gs, hk_run_context_session(ctx), st);
  if (rc != HK_OK) return rc;
  if (gs < self->check.stop_at) return HK_OK;
  log_stop(self, gs, "after this step; the final checkpoint is written at it");
  hk_run_context_request_stop(ctx);
  return HK_OK;
}
