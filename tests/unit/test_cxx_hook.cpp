/*
 * A hook written as a C++17 class with virtual methods, adapted to the C API
 * with one static const hk_hook_vtable of trampolines: the vtable lives in
 * read-only static storage, so the adapter needs no table per instance. Runs a session through the C
 * API over the fake executor and checks the calls and a stop request.
 */
#include "test_env.h"
#include "fake_executor.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace {

/* The C++ side: a base class whose virtuals mirror the vtable slots. */
class Hook {
 public:
  virtual ~Hook() = default;
  virtual hk_code begin(hk_executor *, hk_status *) { return HK_OK; }
  virtual hk_code after_create_session(hk_raw_session *, hk_coordinator *, hk_creation_context *, hk_status *) {
    return HK_OK;
  }
  virtual hk_code before_run(hk_run_context *, hk_run_request *, hk_status *) { return HK_OK; }
  virtual hk_code after_run(hk_run_context *, const hk_run_values *, hk_status *) { return HK_OK; }
  virtual hk_code end(hk_raw_session *, hk_status *) { return HK_OK; }

  /* Wrap `self` (ownership passes to the hk_hook: destroy deletes it). */
  static hk_hook *adapt(std::unique_ptr<Hook> self, const char *name, hk_status *st);

 private:
  static hk_code t_begin(void *u, hk_executor *g, hk_status *st) { return static_cast<Hook *>(u)->begin(g, st); }
  static hk_code t_after_create(void *u, hk_raw_session *s, hk_coordinator *c, hk_creation_context *ctx,
                                hk_status *st) {
    return static_cast<Hook *>(u)->after_create_session(s, c, ctx, st);
  }
  static hk_code t_before_run(void *u, hk_run_context *ctx, hk_run_request *req, hk_status *st) {
    return static_cast<Hook *>(u)->before_run(ctx, req, st);
  }
  static hk_code t_after_run(void *u, hk_run_context *ctx, const hk_run_values *v, hk_status *st) {
    return static_cast<Hook *>(u)->after_run(ctx, v, st);
  }
  static hk_code t_end(void *u, hk_raw_session *s, hk_status *st) { return static_cast<Hook *>(u)->end(s, st); }
  static void t_destroy(void *u) { delete static_cast<Hook *>(u); }

  static const hk_hook_vtable vtable;
};

const hk_hook_vtable Hook::vtable = {
    HK_HOOK_VTABLE_VERSION, &Hook::t_begin, &Hook::t_after_create, &Hook::t_before_run,
    &Hook::t_after_run,     &Hook::t_end,   &Hook::t_destroy,
};

hk_hook *Hook::adapt(std::unique_ptr<Hook> self, const char *name, hk_status *st) {
  hk_hook *h = nullptr;
  if (hk_hook_new(&h, &vtable, self.get(), name, nullptr, st) != HK_OK) return nullptr;
  self.release();
  return h;
}

/* Counters outlive the hook object (destroy deletes it). */
struct Record {
  int begins = 0, creates = 0, befores = 0, afters = 0, ends = 0, destroyed = 0;
  std::vector<int64_t> steps;
  std::string graph_name;
};

/* Fetches the global step, records each value and stops once it reaches a limit. */
class StepWatcher final : public Hook {
 public:
  StepWatcher(Record &rec, int64_t stop_at) : rec_(rec), stop_at_(stop_at) {}
  ~StepWatcher() override { rec_.destroyed++; }

  hk_code begin(hk_executor *graph, hk_status *st) override {
    rec_.begins++;
    if (hk_executor_resolve_tensor(&gs_, graph, "global_step", st) != HK_OK) return st->code;
    rec_.graph_name = hk_executor_handle_name(graph, gs_);
    return HK_OK;
  }
  hk_code after_create_session(hk_raw_session *, hk_coordinator *, hk_creation_context *, hk_status *) override {
    rec_.creates++;
    return HK_OK;
  }
  hk_code before_run(hk_run_context *, hk_run_request *req, hk_status *) override {
    rec_.befores++;
    req->fetches = &gs_;
    req->nfetches = 1;
    return HK_OK;
  }
  hk_code after_run(hk_run_context *ctx, const hk_run_values *v, hk_status *st) override {
    rec_.afters++;
    if (v->nresults != 1) return hk_status_set(st, HK_INTERNAL, "StepWatcher: expected 1 result");
    int64_t step = 0;
    hk_code rc = hk_tensor_to_i64(&step, &v->results[0], "global_step", st);
    if (rc != HK_OK) return rc;
    rec_.steps.push_back(step);
    /* The fetched value is the one before this step's increment. */
    if (step + 1 >= stop_at_) hk_run_context_request_stop(ctx);
    return HK_OK;
  }
  hk_code end(hk_raw_session *, hk_status *) override {
    rec_.ends++;
    return HK_OK;
  }

 private:
  Record &rec_;
  int64_t stop_at_;
  hk_handle gs_ = HK_NO_HANDLE;
};

/* A hook that fails begin() with a C++-built message. */
class Refuser final : public Hook {
 public:
  hk_code begin(hk_executor *, hk_status *st) override {
    std::string why = std::string("refused by ") + "C++";
    return hk_status_set(st, HK_PERMISSION_DENIED, "%s", why.c_str());
  }
};

struct Fixture {
  test_env *te = nullptr;
  fake_executor *fx = nullptr;
  hk_handle train = HK_NO_HANDLE;
};

int setup(void **state) {
  auto *f = new Fixture;
  f->te = test_env_new();
  f->fx = fake_executor_new(&f->te->env);
  f->train = fake_executor_add_train_op(f->fx);
  *state = f;
  return 0;
}

int teardown(void **state) {
  auto *f = static_cast<Fixture *>(*state);
  fake_executor_free(f->fx);
  long live = test_alloc_live(&f->te->alloc);
  test_env_free(f->te);
  delete f;
  return live == 0 ? 0 : -1;
}

void test_cxx_hook__class_hook_runs_and_stops(void **state) {
  auto *f = static_cast<Fixture *>(*state);
  Record rec;
  hk_status st = HK_STATUS_INIT;
  hk_hook *hook = Hook::adapt(std::make_unique<StepWatcher>(rec, 3), "step_watcher", &st);
  assert_non_null(hook);
  assert_string_equal(hk_hook_name(hook), "step_watcher");

  hk_session_options opts;
  assert_int_equal(hk_session_options_init(&opts, HK_SESSION_OPTIONS_VERSION), HK_OK);
  opts.env = &f->te->env;
  opts.executor = fake_executor_executor(f->fx);
  hk_hook *hooks[] = {hook};
  opts.hooks = hooks;
  opts.nhooks = 1;
  hk_session *s = nullptr;
  assert_ok(hk_session_new(&s, &opts, &st), &st);
  assert_int_equal(rec.begins, 1);
  assert_int_equal(rec.creates, 1);
  assert_string_equal(rec.graph_name.c_str(), "global_step:0");

  hk_run_args args = {nullptr, 0, nullptr, 0, &f->train, 1, nullptr};
  int steps = 0;
  while (!hk_session_should_stop(s)) {
    assert_ok(hk_session_run(s, &args, nullptr, nullptr, &st), &st);
    steps++;
    assert_true(steps <= 10);
  }
  /* C19/C20: the stop requested in after_run of the third step ends the loop. */
  assert_int_equal(steps, 3);
  assert_int_equal(rec.befores, 3);
  assert_int_equal(rec.afters, 3);
  assert_int_equal(rec.steps.size(), 3);
  assert_int_equal(rec.steps[0], 0);
  assert_int_equal(rec.steps[2], 2);
  assert_status(hk_session_run(s, &args, nullptr, nullptr, &st), &st, HK_FAILED_PRECONDITION,
                "Run called even after should_stop requested.");
  assert_ok(hk_session_close(s, HK_OK, &st), &st);
  assert_int_equal(rec.ends, 1);
  hk_session_free(s);
  assert_int_equal(rec.destroyed, 0);
  hk_hook_free(hook);
  assert_int_equal(rec.destroyed, 1);
}

void test_cxx_hook__begin_error_passes_through(void **state) {
  auto *f = static_cast<Fixture *>(*state);
  hk_status st = HK_STATUS_INIT;
  hk_hook *hook = Hook::adapt(std::make_unique<Refuser>(), "refuser", &st);
  assert_non_null(hook);
  hk_session_options opts;
  hk_session_options_init(&opts, HK_SESSION_OPTIONS_VERSION);
  opts.env = &f->te->env;
  opts.executor = fake_executor_executor(f->fx);
  hk_hook *hooks[] = {hook};
  opts.hooks = hooks;
  opts.nhooks = 1;
  hk_session *s = nullptr;
  /* H1: the callback's code and message reach the caller unchanged. */
  assert_status(hk_session_new(&s, &opts, &st), &st, HK_PERMISSION_DENIED, "refused by C++");
  assert_null(s);
  assert_int_equal(fake_executor_sessions_opened(f->fx), 0);
  hk_hook_free(hook);
}

}  // namespace

int main() {
  const CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_cxx_hook__class_hook_runs_and_stops, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cxx_hook__begin_error_passes_through, setup, teardown),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
