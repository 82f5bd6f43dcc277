/*
 * hooks.hpp — hooked.hpp's constructors of the built-in hooks.
 *
 * One function per hook constructor of the C API, named after it without
 * the hk_ prefix and the _new suffix: hooked::early_stopping_hook(opts) is
 * hk_early_stopping_hook_new(&h, &opts, &st) returning a hooked::Hook that
 * owns the hook. Each takes the C options struct (start from its
 * HK_..._OPTIONS_INIT) and throws hooked::Error with the C constructor's
 * code and message when it fails (INVALID_ARGUMENT naming the option,
 * RESOURCE_EXHAUSTED). What the options mean, and what each hook does, is
 * documented in the C headers: hooked/hooks.h, hooked/learning_rate.h,
 * hooked/ema.h, hooked/metrics_log.h and hooked/time_limit.h.
 *
 * The host loop has its own StopAtStep and checkpoint saver (loop options
 * last_step/num_steps and checkpoint_dir); the ones here are for sessions,
 * or a second saver into another directory.
 *
 * hooked.hpp includes this header, and this header includes hooked.hpp:
 * either may be included first. Same rules as hooked.hpp (C++17,
 * exceptions); every function allocates the hook (and what its C
 * constructor allocates) and may be called from any thread.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_HOOKS_HPP
#define HOOKED_HOOKS_HPP

#include "hooked/hooked.hpp"

namespace hooked {

namespace detail {
/* Call a C hook constructor; throw its failure. */
template <class Options>
Hook make_builtin_hook(hk_code (*ctor)(hk_hook **, const Options *, hk_status *), const Options &opts) {
  hk_status st = HK_STATUS_INIT;
  hk_hook *h = nullptr;
  check(ctor(&h, &opts, &st), st);
  return Hook(h);
}
}  // namespace detail

/* ---- hooked/hooks.h ------------------------------------------------------ */

/** StopAtStepHook. */
inline Hook stop_at_step_hook(const hk_stop_at_step_options &opts) {
  return detail::make_builtin_hook(hk_stop_at_step_hook_new, opts);
}
/** StopAtStepHook stopping once the global step reaches `last_step`. */
inline Hook stop_at_last_step(int64_t last_step) {
  hk_stop_at_step_options o = HK_STOP_AT_STEP_OPTIONS_INIT;
  o.last_step = last_step;
  return stop_at_step_hook(o);
}
/** StopAtStepHook stopping `num_steps` steps after the step it starts at. */
inline Hook stop_after_steps(int64_t num_steps) {
  hk_stop_at_step_options o = HK_STOP_AT_STEP_OPTIONS_INIT;
  o.num_steps = num_steps;
  return stop_at_step_hook(o);
}
/** ProgressHook: a progress display, like tqdm, for a terminal or a log. */
inline Hook progress_hook(const hk_progress_options &opts) {
  return detail::make_builtin_hook(hk_progress_hook_new, opts);
}
/** GlobalStepWaiterHook. */
inline Hook global_step_waiter_hook(const hk_global_step_waiter_options &opts) {
  return detail::make_builtin_hook(hk_global_step_waiter_hook_new, opts);
}
/** LoggingTensorHook. */
inline Hook logging_tensor_hook(const hk_logging_tensor_options &opts) {
  return detail::make_builtin_hook(hk_logging_tensor_hook_new, opts);
}
/** NanTensorHook. */
inline Hook nan_tensor_hook(const hk_nan_tensor_options &opts) {
  return detail::make_builtin_hook(hk_nan_tensor_hook_new, opts);
}
/** FinalOpsHook. */
inline Hook final_ops_hook(const hk_final_ops_options &opts) {
  return detail::make_builtin_hook(hk_final_ops_hook_new, opts);
}
/** FeedFnHook. */
inline Hook feed_fn_hook(const hk_feed_fn_options &opts) {
  return detail::make_builtin_hook(hk_feed_fn_hook_new, opts);
}
/** CheckpointSaverHook. */
inline Hook checkpoint_saver_hook(const hk_checkpoint_saver_options &opts) {
  return detail::make_builtin_hook(hk_checkpoint_saver_hook_new, opts);
}
/** AsyncCheckpointSaverHook. */
inline Hook async_checkpoint_saver_hook(const hk_checkpoint_saver_options &opts) {
  return detail::make_builtin_hook(hk_async_checkpoint_saver_hook_new, opts);
}
/** StepCounterHook. */
inline Hook step_counter_hook(const hk_step_counter_options &opts) {
  return detail::make_builtin_hook(hk_step_counter_hook_new, opts);
}
/** SummarySaverHook. */
inline Hook summary_saver_hook(const hk_summary_saver_options &opts) {
  return detail::make_builtin_hook(hk_summary_saver_hook_new, opts);
}
/** EarlyStoppingHook. */
inline Hook early_stopping_hook(const hk_early_stopping_options &opts) {
  return detail::make_builtin_hook(hk_early_stopping_hook_new, opts);
}
/** ProfilerHook. */
inline Hook profiler_hook(const hk_profiler_options &opts) {
  return detail::make_builtin_hook(hk_profiler_hook_new, opts);
}

/* ---- hooked/learning_rate.h, ema.h, metrics_log.h, time_limit.h ---------- */

/** LearningRateHook: a schedule written into a rate variable each step. */
inline Hook learning_rate_hook(const hk_learning_rate_options &opts) {
  return detail::make_builtin_hook(hk_learning_rate_hook_new, opts);
}
/** The exponential-moving-average hook. */
inline Hook ema_hook(const hk_ema_options &opts) { return detail::make_builtin_hook(hk_ema_hook_new, opts); }
/** MetricsLogHook: a CSV or JSON-lines file of the run's values (Keras' CSVLogger). */
inline Hook metrics_log_hook(const hk_metrics_log_options &opts) {
  return detail::make_builtin_hook(hk_metrics_log_hook_new, opts);
}
/** TimeLimitHook: stop cleanly before a wall-clock budget runs out. */
inline Hook time_limit_hook(const hk_time_limit_options &opts) {
  return detail::make_builtin_hook(hk_time_limit_hook_new, opts);
}

}  // namespace hooked

#endif /* HOOKED_HOOKS_HPP */
