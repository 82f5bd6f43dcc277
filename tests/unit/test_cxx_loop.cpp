/*
 * The C++17 wrapper hooked/hooked.hpp over the host loop (hooked/loop.h):
 * RAII frees everything (counting allocator), failures become hooked::Error
 * with the C code and message, a lambda hook's before_run/after_run bracket
 * the program's step, a C++ exception thrown by a callback (hook, state,
 * step) becomes an error code instead of unwinding through C, and the owning
 * types are move-only.
 */
#include "test_env.h"
#include "tmpdir.h"

#include <hooked/hooked.hpp>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace {

/* ---- compile-time properties ------------------------------------------ */

static_assert(!std::is_copy_constructible_v<hooked::Loop> && !std::is_copy_assignable_v<hooked::Loop>);
static_assert(std::is_nothrow_move_constructible_v<hooked::Loop> && std::is_nothrow_move_assignable_v<hooked::Loop>);
static_assert(std::is_nothrow_destructible_v<hooked::Loop>);
static_assert(!std::is_copy_constructible_v<hooked::Hook> && !std::is_copy_assignable_v<hooked::Hook>);
static_assert(std::is_nothrow_move_constructible_v<hooked::Hook> && std::is_nothrow_move_assignable_v<hooked::Hook>);
static_assert(std::is_nothrow_destructible_v<hooked::Hook>);
static_assert(std::is_base_of_v<std::runtime_error, hooked::Error>);

static_assert(hooked::dtype_of<float>() == HK_DTYPE_F32);
static_assert(hooked::dtype_of<double>() == HK_DTYPE_F64);
static_assert(hooked::dtype_of<int8_t>() == HK_DTYPE_I8);
static_assert(hooked::dtype_of<int16_t>() == HK_DTYPE_I16);
static_assert(hooked::dtype_of<int32_t>() == HK_DTYPE_I32);
static_assert(hooked::dtype_of<int64_t>() == HK_DTYPE_I64);
static_assert(hooked::dtype_of<long long>() == HK_DTYPE_I64);
static_assert(hooked::dtype_of<uint8_t>() == HK_DTYPE_U8);
static_assert(hooked::dtype_of<uint16_t>() == HK_DTYPE_U16);
static_assert(hooked::dtype_of<uint32_t>() == HK_DTYPE_U32);
static_assert(hooked::dtype_of<uint64_t>() == HK_DTYPE_U64);
static_assert(hooked::dtype_of<bool>() == HK_DTYPE_BOOL);

/* ---- fixture ------------------------------------------------------------ */

struct Fixture {
  test_env *te = nullptr;
  char *dir = nullptr; /* a fresh directory; checkpoints go to <dir>/ck */
  std::string ckpt;
};

int setup(void **state) {
  auto *f = new Fixture;
  f->te = test_env_new();
  f->dir = test_tmpdir_new("cxx-loop");
  f->ckpt = std::string(f->dir) + "/ck";
  *state = f;
  return 0;
}

int teardown(void **state) {
  auto *f = static_cast<Fixture *>(*state);
  test_tmpdir_free(f->dir);
  int rc = test_env_release(f->te);
  delete f;
  return rc;
}

Fixture *fix(void **state) { return static_cast<Fixture *>(*state); }

/* Options every test starts from: the test env, no signal handling. */
hk_loop_options base_options(Fixture *f) {
  hk_loop_options o = hooked::loop_options();
  o.env = &f->te->env;
  o.handle_signals = 0;
  return o;
}

bool contains(const char *haystack, const char *needle) {
  if (haystack && std::strstr(haystack, needle)) return true;
  print_error("'%s' does not contain '%s'\n", haystack ? haystack : "(null)", needle);
  return false;
}

/* Runs fn, which must throw hooked::Error; returns it. */
template <class F>
hooked::Error expect_error(F &&fn) {
  try {
    fn();
  } catch (const hooked::Error &e) {
    return e;
  } catch (const std::exception &e) {
    fail_msg("expected hooked::Error, got another exception: %s", e.what());
  }
  fail_msg("expected hooked::Error, nothing was thrown");
  return hooked::Error(HK_UNKNOWN, "unreachable");
}

#define assert_error(e, expected_code, substr)     \
  do {                                             \
    assert_int_equal((e).code(), (expected_code)); \
    assert_true(contains((e).what(), (substr)));   \
  } while (0)

/* A hook made of lambdas that appends what it sees to `log`. */
hooked::Hook recorder(Fixture *f, std::vector<std::string> &log, const char *name = "recorder") {
  return hooked::Hook::from(
      hooked::HookFunctions{}
          .on_begin([&log](hk_executor *) { log.push_back("begin"); })
          .on_before_run([&log](hk_run_context *, hk_run_request *) { log.push_back("before_run"); })
          .on_after_run([&log](hk_run_context *, const hk_run_values *) { log.push_back("after_run"); })
          .on_end([&log](hk_raw_session *) { log.push_back("end"); }),
      name, &f->te->env);
}

/* ---- RAII ----------------------------------------------------------------- */

/* Every block allocated through the env (loop, session, executor, hooks,
 * checkpoints) is freed once the wrapper objects go out of scope: teardown
 * fails on a live block. */
void test_cxx_loop__raii_frees_everything(void **state) {
  Fixture *f = fix(state);
  float w[4] = {1, 2, 3, 4};
  std::vector<std::string> log;
  {
    std::array<uint8_t, 8> blob{};
    hooked::Hook hook = recorder(f, log);
    hk_loop_options o = base_options(f);
    o.checkpoint_dir = f->ckpt.c_str();
    o.save_steps = 2;
    o.last_step = 3;
    hooked::Loop loop(o, {hook});
    loop.add_array("w", w, {2, 2});
    loop.add_state(
        "blob", blob.size(), [](void *dst, std::size_t n) { std::memset(dst, 7, n); },
        [&blob](const void *src, std::size_t n) { std::memcpy(blob.data(), src, n); });
    assert_int_equal(loop.start(), 0);
    loop.run([&](int64_t) { w[0] += 1; });
    loop.finish();
    assert_int_equal(loop.global_step(), 3);
    assert_true(test_alloc_live(&f->te->alloc) > 0);
  }
  assert_int_equal(test_alloc_live(&f->te->alloc), 0);
  assert_true(test_path_exists((f->ckpt + "/model.ckpt-3.safetensors").c_str()));
}

/* A started loop destroyed without finish() (an exception unwinding through
 * the training code) is freed as after an error: nothing leaks, no end()
 * runs, the loop warns. */
void test_cxx_loop__destructor_without_finish_frees(void **state) {
  Fixture *f = fix(state);
  std::vector<std::string> log;
  float w = 0;
  try {
    hooked::Hook hook = recorder(f, log);
    hooked::Loop loop(base_options(f), {hook});
    loop.add_array("w", &w);
    loop.start();
    loop.step_begin();
    throw std::runtime_error("the program's own failure");
  } catch (const std::runtime_error &e) {
    assert_string_equal(e.what(), "the program's own failure");
  }
  assert_int_equal(test_alloc_live(&f->te->alloc), 0);
  assert_int_equal(log.size(), 2);
  assert_string_equal(log[0].c_str(), "begin");
  assert_string_equal(log[1].c_str(), "before_run");
  assert_logged(f->te, HK_LOG_WARNING, "loop freed without hk_loop_finish()");
}

/* ---- errors ----------------------------------------------------------------- */

/* A bad option throws hooked::Error with the C code and message, and the
 * failed constructor leaves nothing allocated (H3). */
void test_cxx_loop__bad_option_throws_invalid_argument(void **state) {
  Fixture *f = fix(state);
  hk_loop_options o = base_options(f);
  o.num_steps = 10;
  o.last_step = 10;
  hooked::Error e = expect_error([&] { hooked::Loop loop(o); });
  assert_error(e, HK_INVALID_ARGUMENT, "Only one of num_steps or last_step can be specified.");
  assert_string_equal(e.code_name(), "INVALID_ARGUMENT");

  o = base_options(f);
  o.version = 0;
  e = expect_error([&] { hooked::Loop loop(o); });
  assert_int_equal(e.code(), HK_INVALID_ARGUMENT);
  assert_int_equal(test_alloc_live(&f->te->alloc), 0);

  /* Built-in hooks too (C80). */
  hk_stop_at_step_options so = HK_STOP_AT_STEP_OPTIONS_INIT;
  e = expect_error([&] { hooked::stop_at_step_hook(so); });
  assert_error(e, HK_INVALID_ARGUMENT, "One of num_steps or last_step must be specified.");
}

/* Registration errors: the C library's (a bad name, a name taken, an empty
 * callable passed as a NULL callback) and the wrapper's own (a negative
 * dimension in a container, too many dimensions). */
void test_cxx_loop__registration_errors_throw(void **state) {
  Fixture *f = fix(state);
  float w[3] = {0, 0, 0};
  float scalar = 0;
  hooked::Loop loop(base_options(f));
  loop.add_array("w", w, {3});
  hooked::Error e = expect_error([&] { loop.add_array("w", &scalar); });
  assert_error(e, HK_ALREADY_EXISTS, "w");
  e = expect_error([&] { loop.add_array("bad name!", &scalar); });
  assert_error(e, HK_INVALID_ARGUMENT, "bad name!");
  e = expect_error([&] { loop.add_array("v", w, std::vector<int>{-3}); });
  assert_error(e, HK_INVALID_ARGUMENT, "dims[0]");
  e = expect_error([&] { loop.add_array("v", w, std::vector<std::size_t>(HK_MAX_RANK + 1, 1)); });
  assert_error(e, HK_INVALID_ARGUMENT, "HK_MAX_RANK");
  e = expect_error([&] { loop.add_state("s", 4, nullptr, [](const void *, std::size_t) {}); });
  assert_int_equal(e.code(), HK_INVALID_ARGUMENT);
  /* A container of sizes is accepted. */
  loop.add_array("v", w, std::array<std::size_t, 1>{3});
  /* None of these failures is sticky... until the loop itself fails. */
  assert_int_equal(loop.start(), 0);
  loop.finish();
}

/* ---- hooks bracket the step ------------------------------------------------- */

void test_cxx_loop__lambda_hook_brackets_step(void **state) {
  Fixture *f = fix(state);
  std::vector<std::string> log;
  hooked::Hook hook = recorder(f, log);
  hk_loop_options o = base_options(f);
  o.last_step = 3;
  hooked::Loop loop(o, {hook});
  float w = 0;
  loop.add_array("w", &w);
  loop.start();
  /* step(fn): fn sees the step it starts at. */
  assert_true(loop.step([&](int64_t step) { log.push_back("step " + std::to_string(step)); }));
  /* step_begin()/step_end() around the program's own code, updates_begin()
   * between its reads and its writes (H42). */
  int64_t s = loop.step_begin();
  log.push_back("step " + std::to_string(s));
  loop.updates_begin();
  w = 1;
  loop.step_end();
  /* run(fn) until last_step. */
  loop.run([&] { log.push_back("step"); });
  loop.finish();
  const std::vector<std::string> want = {"begin",     "before_run", "step 0", "after_run", "before_run", "step 1",
                                         "after_run", "before_run", "step",   "after_run", "end"};
  assert_int_equal(log.size(), want.size());
  for (std::size_t i = 0; i < want.size(); i++) assert_string_equal(log[i].c_str(), want[i].c_str());
  assert_int_equal(loop.global_step(), 3);
  assert_true(loop.should_stop());
}

/* A SessionRunHook subclass: every virtual runs, the hook fetches a
 * registered array by name, and the object is deleted with its hk_hook. */
struct Counts {
  int begins = 0, creates = 0, befores = 0, afters = 0, ends = 0, destroyed = 0;
  std::vector<float> seen;
};

class Watcher final : public hooked::SessionRunHook {
 public:
  explicit Watcher(Counts &c) : c_(c) {}
  ~Watcher() override { c_.destroyed++; }
  void begin(hk_executor *graph) override {
    c_.begins++;
    hooked::Status st;
    st.check(hk_executor_resolve_tensor(&w_, graph, "w", st.get()));
  }
  void after_create_session(hk_raw_session *, hk_coordinator *, hk_creation_context *) override { c_.creates++; }
  void before_run(hk_run_context *, hk_run_request *req) override {
    c_.befores++;
    req->fetches = &w_;
    req->nfetches = 1;
  }
  void after_run(hk_run_context *, const hk_run_values *v) override {
    c_.afters++;
    if (v->nresults != 1 || v->results[0].dtype != HK_DTYPE_F32) throw hooked::Error(HK_INTERNAL, "Watcher: bad fetch");
    c_.seen.push_back(*static_cast<const float *>(v->results[0].data));
  }
  void end(hk_raw_session *) override {
    c_.ends++;
    hk_hook_log(hook(), HK_LOG_INFO, "Watcher %s ends", hk_hook_name(hook()));
  }

 private:
  Counts &c_;
  hk_handle w_ = HK_NO_HANDLE;
};

void test_cxx_loop__class_hook_sees_arrays(void **state) {
  Fixture *f = fix(state);
  Counts c;
  {
    hooked::Hook hook = hooked::Hook::make<Watcher>("watcher", c);
    assert_string_equal(hook.name(), "watcher");
    assert_non_null(dynamic_cast<Watcher *>(hook.impl()));
    hk_loop_options o = base_options(f);
    o.last_step = 2;
    {
      hooked::Loop loop(o, {hook});
      float w = 10;
      loop.add_array("w", &w);
      loop.start();
      loop.run([&] { w += 1; });
      loop.finish();
    }
    assert_int_equal(c.destroyed, 0);
  }
  assert_int_equal(c.destroyed, 1);
  assert_int_equal(c.begins, 1);
  assert_int_equal(c.creates, 1);
  assert_int_equal(c.befores, 2);
  assert_int_equal(c.afters, 2);
  assert_int_equal(c.ends, 1);
  /* after_run sees the array as the step left it. */
  assert_int_equal(c.seen.size(), 2);
  assert_true(c.seen[0] == 11.0f);
  assert_true(c.seen[1] == 12.0f);
  assert_logged(f->te, HK_LOG_INFO, "Watcher watcher ends");
}

/* ---- exceptions never cross the C boundary -------------------------------- */

/* A std::exception thrown by a hook's before_run becomes UNKNOWN with a
 * message naming the hook and the slot; the program's step does not run;
 * the loop is failed and finish() reports the same error. */
void test_cxx_loop__hook_exception_becomes_code(void **state) {
  Fixture *f = fix(state);
  std::vector<std::string> log;
  hooked::Hook thrower =
      hooked::Hook::from(hooked::HookFunctions{}.on_before_run(
                             [](hk_run_context *, hk_run_request *) { throw std::runtime_error("boom"); }),
                         "thrower", &f->te->env);
  hooked::Hook rec = recorder(f, log);
  hooked::Loop loop(base_options(f), {thrower, rec});
  float w = 0;
  loop.add_array("w", &w);
  loop.start();
  bool ran = false;
  hooked::Error e = expect_error([&] { loop.step([&] { ran = true; }); });
  assert_error(e, HK_UNKNOWN, "hook 'thrower' before_run: C++ exception: boom");
  assert_false(ran);
  assert_true(loop.should_stop());
  /* Sticky: finish() repeats the first error; no end() ran (C16). */
  e = expect_error([&] { loop.finish(); });
  assert_error(e, HK_UNKNOWN, "boom");
  for (const std::string &s : log) assert_true(s != "end" && s != "after_run");
}

/* hooked::Error keeps its code and message unchanged (H1); std::bad_alloc
 * becomes RESOURCE_EXHAUSTED; anything else UNKNOWN. */
void test_cxx_loop__hook_error_keeps_code(void **state) {
  Fixture *f = fix(state);
  struct Case {
    int what;
    hk_code code;
    const char *message;
  };
  const Case cases[] = {
      {0, HK_PERMISSION_DENIED, "no entry"},
      {1, HK_RESOURCE_EXHAUSTED, "hook 'thrower' after_run: out of memory"},
      {2, HK_UNKNOWN, "hook 'thrower' after_run: unknown C++ exception"},
      {3, HK_UNKNOWN, "an error carrying OK"}, /* is not OK */
  };
  for (const Case &c : cases) {
    const int what = c.what;
    hooked::Hook thrower =
        hooked::Hook::from(hooked::HookFunctions{}.on_after_run([what](hk_run_context *, const hk_run_values *) {
          if (what == 0) throw hooked::Error(HK_PERMISSION_DENIED, "no entry");
          if (what == 1) throw std::bad_alloc();
          if (what == 2) throw 42;
          throw hooked::Error(HK_OK, "an error carrying OK");
        }),
                           "thrower", &f->te->env);
    hooked::Loop loop(base_options(f), {thrower});
    float w = 0;
    loop.add_array("w", &w);
    loop.start();
    hooked::Error e = expect_error([&] { loop.step([] {}); });
    assert_error(e, c.code, c.message);
  }
}

/* The step callable: an Error keeps its code, another exception becomes
 * UNKNOWN naming "step", HK_OUT_OF_RANGE (returned or thrown) ends the loop
 * cleanly and finish() succeeds. */
void test_cxx_loop__step_exception_becomes_code(void **state) {
  Fixture *f = fix(state);
  float w = 0;
  {
    hooked::Loop loop(base_options(f));
    loop.add_array("w", &w);
    loop.start();
    hooked::Error e =
        expect_error([&] { loop.step([](int64_t) { throw hooked::Error(HK_DATA_LOSS, "torn batch"); }); });
    assert_error(e, HK_DATA_LOSS, "torn batch");
    e = expect_error([&] { loop.finish(); });
    assert_error(e, HK_DATA_LOSS, "torn batch");
  }
  {
    hooked::Loop loop(base_options(f));
    loop.add_array("w", &w);
    loop.start();
    hooked::Error e = expect_error([&] { loop.run([](int64_t) { throw std::logic_error("bad math"); }); });
    assert_error(e, HK_UNKNOWN, "step: C++ exception: bad math");
  }
  {
    hooked::Loop loop(base_options(f));
    loop.add_array("w", &w);
    loop.start();
    assert_true(loop.step([] { return HK_OK; }));
    assert_false(loop.step([](int64_t) { return HK_OUT_OF_RANGE; }));
    assert_true(loop.should_stop());
    loop.finish();
    assert_int_equal(loop.global_step(), 1);
  }
  {
    hooked::Loop loop(base_options(f));
    loop.add_array("w", &w);
    loop.start();
    int steps = 0;
    loop.run([&](int64_t step) {
      if (step == 3) throw hooked::Error(HK_OUT_OF_RANGE, "end of data");
      steps++;
    });
    loop.finish();
    assert_int_equal(steps, 3);
    assert_int_equal(loop.global_step(), 3);
  }
}

/* A state callable that throws fails the save with a message naming the
 * state; the loop is failed. */
void test_cxx_loop__state_exception_becomes_code(void **state) {
  Fixture *f = fix(state);
  hk_loop_options o = base_options(f);
  o.checkpoint_dir = f->ckpt.c_str();
  o.save_steps = 0;
  hooked::Loop loop(o);
  float w = 0;
  loop.add_array("w", &w);
  loop.add_state(
      "rng", 16, [](void *, std::size_t) { throw std::runtime_error("cannot serialize"); },
      [](const void *, std::size_t) {});
  loop.start();
  hooked::Error e = expect_error([&] { loop.save(); });
  assert_error(e, HK_UNKNOWN, "state 'rng' save: C++ exception: cannot serialize");
  assert_true(loop.should_stop());
}

/* ---- checkpoints through the wrapper ------------------------------------- */

/* Arrays and states come back in a second loop over the same directory:
 * start() returns the step, restored_checkpoint() names it, the restore
 * callable gets the saved bytes. A restore that throws fails the start. */
void test_cxx_loop__restores_arrays_and_state(void **state) {
  Fixture *f = fix(state);
  hk_loop_options o = base_options(f);
  o.checkpoint_dir = f->ckpt.c_str();
  o.last_step = 4;
  struct Pod { /* no padding: every byte of the checkpoint is defined */
    int64_t a;
    double b;
  };
  {
    std::vector<double> w(6, 0.5);
    Pod pod{7, 2.5};
    uint32_t counter = 0;
    hooked::Loop loop(o);
    loop.add_array("w", w.data(), {2, 3});
    loop.add_state("pod", &pod);
    loop.add_state(
        "counter", sizeof counter, [&](void *dst, std::size_t n) { std::memcpy(dst, &counter, n); },
        [&](const void *src, std::size_t n) { std::memcpy(&counter, src, n); });
    assert_int_equal(loop.start(), 0);
    assert_null(loop.restored_checkpoint());
    loop.run([&](int64_t step) {
      w[0] += 1.0;
      pod.a++;
      counter += static_cast<uint32_t>(step);
    });
    loop.finish();
    assert_int_equal(counter, 0 + 1 + 2 + 3);
  }
  {
    std::vector<double> w(6, 0.0);
    Pod pod{0, 0};
    uint32_t counter = 99;
    o.last_step = 6;
    hooked::Loop loop(o);
    loop.add_array("w", w.data(), std::vector<int64_t>{2, 3});
    loop.add_state("pod", &pod);
    loop.add_state(
        "counter", sizeof counter, [&](void *dst, std::size_t n) { std::memcpy(dst, &counter, n); },
        [&](const void *src, std::size_t n) { std::memcpy(&counter, src, n); });
    assert_int_equal(loop.start(), 4);
    assert_true(contains(loop.restored_checkpoint(), "model.ckpt-4"));
    assert_true(w[0] == 4.5);
    assert_true(w[5] == 0.5);
    assert_int_equal(pod.a, 11);
    assert_true(pod.b == 2.5);
    assert_int_equal(counter, 6);
    std::string best = loop.save("best");
    assert_true(contains(best.c_str(), "best"));
    loop.finish();
  }
  {
    hooked::Loop loop(o);
    std::vector<double> w(6, 0.0);
    Pod pod{0, 0};
    loop.add_array("w", w.data(), {2, 3});
    loop.add_state("pod", &pod);
    loop.add_state(
        "counter", 4, [](void *, std::size_t) {},
        [](const void *, std::size_t) { throw hooked::Error(HK_FAILED_PRECONDITION, "counter from the future"); });
    hooked::Error e = expect_error([&] { loop.start(); });
    assert_error(e, HK_FAILED_PRECONDITION, "counter from the future");
  }
}

/* ---- move semantics ------------------------------------------------------- */

void test_cxx_loop__move_semantics(void **state) {
  Fixture *f = fix(state);
  std::vector<std::string> log;
  hooked::Hook hook = recorder(f, log);
  hk_hook *raw_hook = hook.get();
  hooked::Hook hook2 = std::move(hook);
  assert_null(hook.get());  // NOLINT(bugprone-use-after-move): a moved-from Hook is empty
  assert_false(static_cast<bool>(hook));
  assert_ptr_equal(hook2.get(), raw_hook);

  hk_loop_options o = base_options(f);
  o.checkpoint_dir = f->ckpt.c_str();
  o.last_step = 2;
  hooked::Loop a(o, {hook2});
  float w = 1;
  uint64_t st = 5;
  a.add_array("w", &w);
  a.add_state(
      "st", sizeof st, [&](void *dst, std::size_t n) { std::memcpy(dst, &st, n); },
      [&](const void *src, std::size_t n) { std::memcpy(&st, src, n); });
  hk_loop *raw = a.get();

  /* Move construction: the handle and the state callables move along. */
  hooked::Loop b(std::move(a));
  assert_null(a.get());  // NOLINT(bugprone-use-after-move)
  assert_false(static_cast<bool>(a));
  assert_ptr_equal(b.get(), raw);
  /* A moved-from loop throws on use and never crashes. */
  hooked::Error e = expect_error([&] { a.start(); });
  assert_int_equal(e.code(), HK_INVALID_ARGUMENT);
  assert_true(a.should_stop());
  assert_int_equal(a.global_step(), 0);

  b.start();
  b.run([&] { w += 1; });
  b.finish(); /* the state's save callable (moved along with b) ran */

  /* Move assignment frees the loop assigned over. */
  long live_before = test_alloc_live(&f->te->alloc);
  hooked::Loop c(base_options(f));
  assert_true(test_alloc_live(&f->te->alloc) > live_before);
  c = std::move(b);
  assert_ptr_equal(c.get(), raw);
  assert_true(test_alloc_live(&f->te->alloc) <= live_before);
  assert_int_equal(c.global_step(), 2);

  /* Hook move assignment frees the hook assigned over. */
  std::vector<std::string> log2;
  hooked::Hook other = recorder(f, log2, "other");
  hooked::Hook empty;
  empty = std::move(other);
  assert_string_equal(empty.name(), "other");
  empty = hooked::Hook();
  assert_null(empty.get());
  /* release() hands the C handle over. */
  hooked::Hook third = recorder(f, log2, "third");
  hk_hook *released = third.release();
  assert_null(third.get());
  hk_hook_free(released);
}

}  // namespace

int main() {
  const CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_cxx_loop__raii_frees_everything, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cxx_loop__destructor_without_finish_frees, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cxx_loop__bad_option_throws_invalid_argument, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cxx_loop__registration_errors_throw, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cxx_loop__lambda_hook_brackets_step, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cxx_loop__class_hook_sees_arrays, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cxx_loop__hook_exception_becomes_code, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cxx_loop__hook_error_keeps_code, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cxx_loop__step_exception_becomes_code, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cxx_loop__state_exception_becomes_code, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cxx_loop__restores_arrays_and_state, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cxx_loop__move_semantics, setup, teardown),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
