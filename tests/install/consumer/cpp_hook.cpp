/*
 * A hook written as a C++ class: a static const vtable of trampolines that
 * forward to member functions. Exceptions never cross into hooked's C frames.
 * The README shows the class; the install test builds and runs this file.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include <cstdio>
#include <new>
#include <vector>

#include "model.h"  // includes <hooked/hooked.h>, which has extern "C" guards

class StepRecorder {
 public:
  // Registers `this` with hooked; the object must outlive the hook.
  hk_code Attach(hk_hook **out, hk_status *status) {
    return hk_hook_new(out, &kVtable, this, "step_recorder", nullptr, status);
  }
  const std::vector<int64_t> &steps() const { return steps_; }

 private:
  hk_code Begin(hk_executor *graph, hk_status *status) {
    steps_.clear();
    hk_variable_info gs;
    hk_code rc = hk_executor_global_step(&gs, nullptr, graph, status);
    global_step_ = gs.tensor;
    return rc;
  }
  hk_code BeforeRun(hk_run_request *request) {
    request->fetches = &global_step_;
    request->nfetches = 1;
    return HK_OK;
  }
  hk_code AfterRun(const hk_run_values *values, hk_status *status) {
    int64_t step = 0;
    hk_code rc = hk_tensor_to_i64(&step, &values->results[0], "global_step", status);
    if (rc == HK_OK) steps_.push_back(step);  // may throw std::bad_alloc: see Guard()
    return rc;
  }

  template <typename F>
  static hk_code Guard(hk_status *status, F &&f) {
    try {
      return f();
    } catch (const std::bad_alloc &) {
      return hk_status_set(status, HK_RESOURCE_EXHAUSTED, "step_recorder: out of memory");
    } catch (...) {
      return hk_status_set(status, HK_INTERNAL, "step_recorder: unexpected exception");
    }
  }
  static hk_code BeginThunk(void *user, hk_executor *graph, hk_status *status) {
    return Guard(status, [&] { return static_cast<StepRecorder *>(user)->Begin(graph, status); });
  }
  static hk_code BeforeRunThunk(void *user, hk_run_context *, hk_run_request *request, hk_status *status) {
    return Guard(status, [&] { return static_cast<StepRecorder *>(user)->BeforeRun(request); });
  }
  static hk_code AfterRunThunk(void *user, hk_run_context *, const hk_run_values *values, hk_status *status) {
    return Guard(status, [&] { return static_cast<StepRecorder *>(user)->AfterRun(values, status); });
  }
  static const hk_hook_vtable kVtable;

  hk_handle global_step_ = HK_NO_HANDLE;
  std::vector<int64_t> steps_;
};

const hk_hook_vtable StepRecorder::kVtable = {
    HK_HOOK_VTABLE_VERSION, &BeginThunk, nullptr, &BeforeRunThunk, &AfterRunThunk, nullptr, nullptr,
};

static int Fail(hk_code rc, const hk_status &st) {
  std::fprintf(stderr, "error: %s: %s\n", hk_code_name(rc), st.message);
  return 1;
}

int main() {
  hk_status st = HK_STATUS_INIT;
  hk_graph *g = nullptr;
  hk_handle loss, train;
  hk_code rc;
  if ((rc = hk_graph_new(&g, nullptr, &st)) != HK_OK || (rc = consumer_build_model(g, &loss, &train, &st)) != HK_OK)
    return Fail(rc, st);

  StepRecorder recorder;
  hk_hook *hooks[2] = {nullptr, nullptr};
  hk_stop_at_step_options stop_opts = HK_STOP_AT_STEP_OPTIONS_INIT;
  stop_opts.num_steps = 5;
  if ((rc = hk_stop_at_step_hook_new(&hooks[0], &stop_opts, &st)) != HK_OK ||
      (rc = recorder.Attach(&hooks[1], &st)) != HK_OK)
    return Fail(rc, st);

  hk_session_options opts = HK_SESSION_OPTIONS_INIT;
  opts.executor = hk_graph_executor(g);
  opts.hooks = hooks;
  opts.nhooks = 2;
  hk_session *sess = nullptr;
  if ((rc = hk_session_new(&sess, &opts, &st)) != HK_OK) return Fail(rc, st);

  hk_run_args args = {nullptr, 0, nullptr, 0, &train, 1, nullptr};
  rc = HK_OK;
  while (rc == HK_OK && !hk_session_should_stop(sess)) rc = hk_session_run(sess, &args, nullptr, nullptr, &st);
  rc = hk_session_close(sess, rc, &st);
  hk_session_free(sess);
  hk_hook_free(hooks[1]);
  hk_hook_free(hooks[0]);
  hk_graph_free(g);
  if (rc != HK_OK) return Fail(rc, st);

  // The hook fetches the global step in the same run as the increment, so
  // it sees the value from before each step (contract H29): 0, 1, 2, 3, 4.
  const std::vector<int64_t> &steps = recorder.steps();
  bool ok = steps.size() == 5;
  for (size_t i = 0; ok && i < steps.size(); i++) ok = steps[i] == static_cast<int64_t>(i);
  std::printf("C++ hook: recorded %zu steps\n", steps.size());
  return ok ? 0 : 1;
}
