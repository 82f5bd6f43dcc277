/*
 * The C++17 constructors of the built-in hooks (hooked/hooks.hpp): each
 * throws the C constructor's code and message unchanged, returns a Hook
 * that owns the C hook, and the hook it returns works in a Loop.
 */
#include "test_env.h"

#include <hooked/hooks.hpp>

#include <cstring>
#include <stdexcept>
#include <string>

namespace {

struct Fixture {
  test_env *te = nullptr;
};

int setup(void **state) {
  auto *f = new Fixture;
  f->te = test_env_new();
  *state = f;
  return 0;
}

int teardown(void **state) {
  auto *f = static_cast<Fixture *>(*state);
  int rc = test_env_release(f->te);
  delete f;
  return rc;
}

/* The wrapper `make` must throw exactly what the C constructor `ctor`
 * returns for the same options: its code and its message. */
template <class Options, class Make>
void throws_what_c_returns(const char *what, hk_code (*ctor)(hk_hook **, const Options *, hk_status *),
                           const Options &opts, Make make) {
  hk_status st = HK_STATUS_INIT;
  hk_hook *h = nullptr;
  hk_code rc = ctor(&h, &opts, &st);
  if (rc == HK_OK) {
    hk_hook_free(h);
    fail_msg("%s: the C constructor accepted the options the test expects it to refuse", what);
  }
  try {
    hooked::Hook hook = make(opts);
    fail_msg("%s: nothing was thrown", what);
  } catch (const hooked::Error &e) {
    if (e.code() != rc || std::strcmp(e.what(), st.message) != 0)
      fail_msg("%s: threw %s \"%s\", the C constructor returned %s \"%s\"", what, e.code_name(), e.what(),
               hk_code_name(rc), st.message);
  }
}

#define REFUSED_LIKE_C(ctor, INIT, type, wrapper)                                               \
  do {                                                                                          \
    type o = INIT;                                                                              \
    throws_what_c_returns(#wrapper, ctor, o, [](const type &x) { return hooked::wrapper(x); }); \
  } while (0)

/* Options each C constructor refuses (their defaults leave a required
 * field unset), and the same through the wrapper. */
void test_cxx_hooks__every_constructor_throws_the_c_constructors_code_and_message(void **) {
  REFUSED_LIKE_C(hk_stop_at_step_hook_new, HK_STOP_AT_STEP_OPTIONS_INIT, hk_stop_at_step_options, stop_at_step_hook);
  REFUSED_LIKE_C(hk_logging_tensor_hook_new, HK_LOGGING_TENSOR_OPTIONS_INIT, hk_logging_tensor_options,
                 logging_tensor_hook);
  REFUSED_LIKE_C(hk_nan_tensor_hook_new, HK_NAN_TENSOR_OPTIONS_INIT, hk_nan_tensor_options, nan_tensor_hook);
  REFUSED_LIKE_C(hk_final_ops_hook_new, HK_FINAL_OPS_OPTIONS_INIT, hk_final_ops_options, final_ops_hook);
  REFUSED_LIKE_C(hk_feed_fn_hook_new, HK_FEED_FN_OPTIONS_INIT, hk_feed_fn_options, feed_fn_hook);
  REFUSED_LIKE_C(hk_checkpoint_saver_hook_new, HK_CHECKPOINT_SAVER_OPTIONS_INIT, hk_checkpoint_saver_options,
                 checkpoint_saver_hook);
  REFUSED_LIKE_C(hk_async_checkpoint_saver_hook_new, HK_CHECKPOINT_SAVER_OPTIONS_INIT, hk_checkpoint_saver_options,
                 async_checkpoint_saver_hook);
  REFUSED_LIKE_C(hk_summary_saver_hook_new, HK_SUMMARY_SAVER_OPTIONS_INIT, hk_summary_saver_options,
                 summary_saver_hook);
  REFUSED_LIKE_C(hk_early_stopping_hook_new, HK_EARLY_STOPPING_OPTIONS_INIT, hk_early_stopping_options,
                 early_stopping_hook);
  REFUSED_LIKE_C(hk_profiler_hook_new, HK_PROFILER_OPTIONS_INIT, hk_profiler_options, profiler_hook);
  REFUSED_LIKE_C(hk_ema_hook_new, HK_EMA_OPTIONS_INIT, hk_ema_options, ema_hook);
  REFUSED_LIKE_C(hk_learning_rate_hook_new, HK_LEARNING_RATE_OPTIONS_INIT, hk_learning_rate_options,
                 learning_rate_hook);
  REFUSED_LIKE_C(hk_metrics_log_hook_new, HK_METRICS_LOG_OPTIONS_INIT, hk_metrics_log_options, metrics_log_hook);
  REFUSED_LIKE_C(hk_time_limit_hook_new, HK_TIME_LIMIT_OPTIONS_INIT, hk_time_limit_options, time_limit_hook);
  /* A version the library does not know is refused by every constructor the same way. */
  {
    hk_progress_options o = HK_PROGRESS_OPTIONS_INIT;
    o.version = 0;
    throws_what_c_returns("progress_hook", hk_progress_hook_new, o,
                          [](const hk_progress_options &x) { return hooked::progress_hook(x); });
  }
  {
    hk_step_counter_options o = HK_STEP_COUNTER_OPTIONS_INIT;
    o.version = 0;
    throws_what_c_returns("step_counter_hook", hk_step_counter_hook_new, o,
                          [](const hk_step_counter_options &x) { return hooked::step_counter_hook(x); });
  }
  {
    hk_global_step_waiter_options o = HK_GLOBAL_STEP_WAITER_OPTIONS_INIT;
    o.version = 0;
    throws_what_c_returns("global_step_waiter_hook", hk_global_step_waiter_hook_new, o,
                          [](const hk_global_step_waiter_options &x) { return hooked::global_step_waiter_hook(x); });
  }
}

/* Accepted options give a Hook that owns the C hook, named as the C
 * constructor names it. */
void test_cxx_hooks__constructors_return_hooks_named_like_the_c_ones(void **) {
  hk_progress_options p = HK_PROGRESS_OPTIONS_INIT;
  hk_step_counter_options sc = HK_STEP_COUNTER_OPTIONS_INIT;
  hk_global_step_waiter_options gw = HK_GLOBAL_STEP_WAITER_OPTIONS_INIT;
  hk_time_limit_options tl = HK_TIME_LIMIT_OPTIONS_INIT;
  hk_early_stopping_options es = HK_EARLY_STOPPING_OPTIONS_INIT;
  tl.duration_secs = 60;
  es.monitor = "loss";
  assert_string_equal(hooked::progress_hook(p).name(), "ProgressHook");
  assert_string_equal(hooked::step_counter_hook(sc).name(), "StepCounterHook");
  assert_string_equal(hooked::global_step_waiter_hook(gw).name(), "GlobalStepWaiterHook");
  assert_string_equal(hooked::stop_at_last_step(5).name(), "StopAtStepHook");
  assert_string_equal(hooked::time_limit_hook(tl).name(), "TimeLimitHook");
  assert_string_equal(hooked::early_stopping_hook(es).name(), "EarlyStoppingHook");
}

/* A StopAtStep hook made by stop_after_steps() stops a session-level Loop
 * (one without a stop condition of its own) after exactly that many steps. */
void test_cxx_hooks__stop_after_steps_stops_a_loop_after_that_many_steps(void **state) {
  auto *f = static_cast<Fixture *>(*state);
  float w[2] = {0, 0};
  int steps = 0;
  hooked::Hook stop = hooked::stop_after_steps(3);
  hk_loop_options o = hooked::loop_options();
  o.env = &f->te->env;
  o.handle_signals = 0;
  hooked::Loop loop(o, {stop});
  loop.add_array("w", w, {2});
  assert_int_equal(loop.start(), 0);
  loop.run([&](int64_t) {
    steps++;
    w[0] += 1;
    if (steps > 10) throw std::runtime_error("the hook did not stop the loop");
  });
  loop.finish();
  assert_int_equal(steps, 3);
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cxx_hooks__every_constructor_throws_the_c_constructors_code_and_message),
      cmocka_unit_test(test_cxx_hooks__constructors_return_hooks_named_like_the_c_ones),
      cmocka_unit_test_setup_teardown(test_cxx_hooks__stop_after_steps_stops_a_loop_after_that_many_steps, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
