/*
 * hooked.hpp — a thin, header-only C++17 wrapper over hooked's C API.
 *
 * It adds RAII ownership, exceptions and lambdas to the host loop
 * (hooked/loop.h) and to hooks (hooked/sys/hook.h); everything else stays the
 * C API, which is always available through get():
 *
 *     std::vector<float> w(64 * 32);
 *     std::mt19937 rng(7);
 *     hooked::Hook logger = hooked::Hook::from(hooked::HookFunctions{}
 *         .on_after_run([&](hk_run_context *, const hk_run_values *) { ... }), "logger");
 *     hk_loop_options o = hooked::loop_options();
 *     o.checkpoint_dir = "ckpt";
 *     o.save_steps = 500;
 *     o.last_step = 3000;
 *     hooked::Loop loop(o, {logger});                  // hooks first: they outlive the loop
 *     loop.add_array("w", w.data(), {64, 32});         // dtype F32 deduced from float*
 *     loop.add_state("rng", sizeof rng, save_fn, restore_fn);
 *     int64_t step = loop.start();                     // restores w and rng, or keeps them
 *     loop.run([&](int64_t step) { train_one_step(w, rng); });
 *     loop.finish();                                   // final checkpoint, every end()
 *
 * ERROR MODEL: EXCEPTIONS. Every wrapper call that can fail throws
 * hooked::Error (a std::runtime_error) carrying the hk_code and the library's
 * message unchanged (what() is the message, code() the code). Exceptions were
 * chosen over an expected-like result because the C API's errors are
 * already exceptional and sticky (a failed loop stays failed and every later
 * call repeats the first error): a trainer has nothing to do with them but
 * unwind to the place that reports them, and constructors (Loop, Hook) can
 * only report through exceptions. hooked::Status and hooked::check() serve
 * code that calls the C API directly. The wrapper is therefore not usable
 * with -fno-exceptions.
 *
 * EXCEPTIONS NEVER CROSS THE C BOUNDARY. Every callback the wrapper hands to
 * the library (hook slots, state save/restore, the step function) is a
 * noexcept trampoline that catches everything and converts it into a code
 * and a status message, which then travel through the library as any C
 * callback's error would and come back out as a hooked::Error from the
 * wrapper call that triggered them:
 *   - hooked::Error            its code and message, unchanged (HK_OK is
 *                              never an error code: it becomes HK_UNKNOWN);
 *   - std::bad_alloc           HK_RESOURCE_EXHAUSTED;
 *   - any other std::exception HK_UNKNOWN, "<where>: C++ exception: <what()>";
 *   - anything else            HK_UNKNOWN, "<where>: unknown C++ exception".
 * <where> names the callback: "hook 'name' before_run", "state 'rng' save",
 * "step". The original exception object is not preserved.
 *
 * OWNERSHIP. Loop and Hook own their C handle (hk_loop_free(), hk_hook_free()
 * in the destructor); they are move-only, never copied, and a moved-from
 * object is empty (get() == nullptr): it may only be destroyed or assigned
 * to. Destructors never throw. get() lends the raw handle; release() gives
 * it up. As in C, a loop borrows its hooks: declare the Hooks before the
 * Loop, so that the Loop is destroyed first.
 *
 * CALL finish(). Loop's destructor calls hk_loop_free(), which finishes a
 * started but unfinished loop AS AFTER AN ERROR: no hook's end() runs and no
 * final checkpoint is written (with a WARNING "loop freed without
 * hk_loop_finish()"). That is the right thing when an exception unwinds
 * through the training code, and the wrong one at the end of a successful
 * run: call finish() there.
 *
 * Threads: as the C objects (hooked/loop.h): one thread at a time uses a
 * Loop, the training thread, on which every callback runs;
 * Loop::request_stop() may be called from any thread.
 *
 * This header includes only hooked/hooked.h and the standard library, and
 * compiles warning-free as C++17 with -Wall -Wextra -Wpedantic.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_HOOKED_HPP
#define HOOKED_HOOKED_HPP

#include "hooked/hooked.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace hooked {

/* ======================================================================= */
/* Errors                                                                    */
/* ======================================================================= */

/**
 * The exception every failing wrapper call throws: an hk_code and the
 * library's message. what() is the message exactly as the library (or the
 * callback that failed) wrote it; it is never empty (an empty message
 * becomes hk_code_name(code)).
 */
class Error : public std::runtime_error {
 public:
  /** @param code  HK_OK is not an error: it is stored as HK_UNKNOWN. */
  Error(hk_code code, const std::string &message)
      : std::runtime_error(message.empty() ? std::string(hk_code_name(normalize(code))) : message),
        code_(normalize(code)) {}
  /** From a failed status: its code and message. */
  explicit Error(const hk_status &status) : Error(status.code, std::string(status.message)) {}

  /** @return the code, never HK_OK. */
  hk_code code() const noexcept { return code_; }
  /** @return hk_code_name(code()): "INVALID_ARGUMENT", ... */
  const char *code_name() const noexcept { return hk_code_name(code_); }

 private:
  static hk_code normalize(hk_code code) noexcept { return code == HK_OK ? HK_UNKNOWN : code; }
  hk_code code_;
};

/**
 * Throw Error when `rc` is not HK_OK: with `status`'s message when the
 * status holds that failure, otherwise with hk_code_name(rc) (the C status
 * rule: test the returned code, read the status only after a failure).
 */
inline void check(hk_code rc, const hk_status &status) {
  if (rc == HK_OK) return;
  if (status.code == rc && status.message[0] != '\0') throw Error(rc, std::string(status.message));
  throw Error(rc, std::string(hk_code_name(rc)));
}

/**
 * A caller-owned hk_status for code that calls the C API directly:
 *
 *     hooked::Status st;
 *     st.check(hk_executor_resolve_tensor(&h, graph, "w", st.get()));
 */
class Status {
 public:
  Status() noexcept = default;

  /** @return the C status to pass as the trailing `hk_status *status`. */
  hk_status *get() noexcept { return &st_; }
  const hk_status &raw() const noexcept { return st_; }
  hk_code code() const noexcept { return st_.code; }
  const char *message() const noexcept { return st_.message; }
  bool ok() const noexcept { return st_.code == HK_OK; }
  /** Back to OK with an empty message. */
  void clear() noexcept { hk_status_clear(&st_); }
  /** hooked::check(rc, *this): throw Error unless rc is HK_OK. */
  void check(hk_code rc) const { hooked::check(rc, st_); }

 private:
  hk_status st_ = HK_STATUS_INIT;
};

namespace detail {

/* Converts the exception being handled into a code and a status message. Only
 * ever called from inside a catch handler. Never allocates on its own (the
 * message is formatted into the caller's inline status). */
inline hk_code convert_current_exception(hk_status *status, const char *where) noexcept {
  try {
    throw;
  } catch (const Error &e) {
    return hk_status_set(status, e.code(), "%s", e.what());
  } catch (const std::bad_alloc &) {
    return hk_status_set(status, HK_RESOURCE_EXHAUSTED, "%s: out of memory (std::bad_alloc)", where);
  } catch (const std::exception &e) {
    return hk_status_set(status, HK_UNKNOWN, "%s: C++ exception: %s", where, e.what());
  } catch (...) {
    return hk_status_set(status, HK_UNKNOWN, "%s: unknown C++ exception", where);
  }
}

/* Runs `body` (returning hk_code) for a C callback: nothing escapes. */
template <class Body>
hk_code guard(hk_status *status, const char *where, Body &&body) noexcept {
  try {
    return std::forward<Body>(body)();
  } catch (...) {
    return convert_current_exception(status, where);
  }
}

/* As guard(), with a "<kind> '<name>' <slot>" location built only on failure. */
template <class Body>
hk_code guard_named(hk_status *status, const char *kind, const char *name, const char *slot, Body &&body) noexcept {
  try {
    return std::forward<Body>(body)();
  } catch (...) {
    char where[320];
    std::snprintf(where, sizeof where, "%s '%s' %s", kind, name ? name : "", slot);
    return convert_current_exception(status, where);
  }
}

}  // namespace detail

/* ======================================================================= */
/* Hooks                                                                     */
/* ======================================================================= */

/**
 * Base class of a hook written in C++ (TensorFlow's SessionRunHook): override
 * the callbacks you need, each a no-op by default. A callback fails by
 * throwing (hooked::Error to choose the code); see the file comment for how
 * exceptions become codes. The arguments are the C API's (hooked/sys/hook.h),
 * borrowed for the call as documented there. Wrap an instance with
 * Hook::from() or Hook::make(), which hands it to the hk_hook: the hook
 * deletes it when it is freed.
 */
namespace detail {
struct HookTrampolines;
}

class SessionRunHook {
 public:
  SessionRunHook() = default;
  SessionRunHook(const SessionRunHook &) = delete;
  SessionRunHook &operator=(const SessionRunHook &) = delete;
  virtual ~SessionRunHook() = default;

  /** Once per session, before the graph is finalized: resolve names. */
  virtual void begin(hk_executor * /*graph*/) {}
  /** After every raw-session creation. */
  virtual void after_create_session(hk_raw_session * /*session*/, hk_coordinator * /*coord*/,
                                    hk_creation_context * /*ctx*/) {}
  /** Before each run (for a loop: each step_begin()); fill `request` to fetch. */
  virtual void before_run(hk_run_context * /*ctx*/, hk_run_request * /*request*/) {}
  /** After each successful run (for a loop: each step_end()). */
  virtual void after_run(hk_run_context * /*ctx*/, const hk_run_values * /*values*/) {}
  /** At a clean close. */
  virtual void end(hk_raw_session * /*session*/) {}

 protected:
  /** @return the hk_hook wrapping this object (for hk_hook_log(),
   *  hk_hook_env(), hk_hook_name()); nullptr before it is wrapped. */
  hk_hook *hook() const noexcept { return hook_; }

 private:
  friend class Hook;
  friend struct detail::HookTrampolines;
  hk_hook *hook_ = nullptr;
};

namespace detail {

/* The static const vtable every C++ hook shares (conventions: "Vtables"). */
struct HookTrampolines {
  static SessionRunHook *self(void *user) noexcept { return static_cast<SessionRunHook *>(user); }
  static const char *name(void *user) noexcept { return hk_hook_name(self(user)->hook_); }

  static hk_code begin(void *user, hk_executor *graph, hk_status *status) noexcept {
    return guard_named(status, "hook", name(user), "begin", [&] {
      self(user)->begin(graph);
      return HK_OK;
    });
  }
  static hk_code after_create_session(void *user, hk_raw_session *session, hk_coordinator *coord,
                                      hk_creation_context *ctx, hk_status *status) noexcept {
    return guard_named(status, "hook", name(user), "after_create_session", [&] {
      self(user)->after_create_session(session, coord, ctx);
      return HK_OK;
    });
  }
  static hk_code before_run(void *user, hk_run_context *ctx, hk_run_request *request, hk_status *status) noexcept {
    return guard_named(status, "hook", name(user), "before_run", [&] {
      self(user)->before_run(ctx, request);
      return HK_OK;
    });
  }
  static hk_code after_run(void *user, hk_run_context *ctx, const hk_run_values *values, hk_status *status) noexcept {
    return guard_named(status, "hook", name(user), "after_run", [&] {
      self(user)->after_run(ctx, values);
      return HK_OK;
    });
  }
  static hk_code end(void *user, hk_raw_session *session, hk_status *status) noexcept {
    return guard_named(status, "hook", name(user), "end", [&] {
      self(user)->end(session);
      return HK_OK;
    });
  }
  static void destroy(void *user) noexcept { delete self(user); }
};

inline constexpr hk_hook_vtable hook_vtable = {
    HK_HOOK_VTABLE_VERSION,       &HookTrampolines::begin,     &HookTrampolines::after_create_session,
    &HookTrampolines::before_run, &HookTrampolines::after_run, &HookTrampolines::end,
    &HookTrampolines::destroy,
};

}  // namespace detail

/**
 * A hook made of callables, for Hook::from(HookFunctions). Unset members are
 * no-ops. Set them directly or with the chainable on_*() setters:
 *
 *     hooked::Hook h = hooked::Hook::from(hooked::HookFunctions{}
 *         .on_before_run([&](hk_run_context *, hk_run_request *) { log.push_back("before"); })
 *         .on_after_run([&](hk_run_context *, const hk_run_values *) { log.push_back("after"); }),
 *         "recorder");
 */
struct HookFunctions {
  std::function<void(hk_executor *)> begin;
  std::function<void(hk_raw_session *, hk_coordinator *, hk_creation_context *)> after_create_session;
  std::function<void(hk_run_context *, hk_run_request *)> before_run;
  std::function<void(hk_run_context *, const hk_run_values *)> after_run;
  std::function<void(hk_raw_session *)> end;

  /* On a temporary (HookFunctions{}.on_...) they return it as an rvalue, so
   * the chain moves into Hook::from(); on a named object, a reference. */
  template <class F>
  HookFunctions &on_begin(F &&f) & {
    begin = std::forward<F>(f);
    return *this;
  }
  template <class F>
  HookFunctions &on_after_create_session(F &&f) & {
    after_create_session = std::forward<F>(f);
    return *this;
  }
  template <class F>
  HookFunctions &on_before_run(F &&f) & {
    before_run = std::forward<F>(f);
    return *this;
  }
  template <class F>
  HookFunctions &on_after_run(F &&f) & {
    after_run = std::forward<F>(f);
    return *this;
  }
  template <class F>
  HookFunctions &on_end(F &&f) & {
    end = std::forward<F>(f);
    return *this;
  }
  template <class F>
  HookFunctions &&on_begin(F &&f) && {
    return std::move(on_begin(std::forward<F>(f)));
  }
  template <class F>
  HookFunctions &&on_after_create_session(F &&f) && {
    return std::move(on_after_create_session(std::forward<F>(f)));
  }
  template <class F>
  HookFunctions &&on_before_run(F &&f) && {
    return std::move(on_before_run(std::forward<F>(f)));
  }
  template <class F>
  HookFunctions &&on_after_run(F &&f) && {
    return std::move(on_after_run(std::forward<F>(f)));
  }
  template <class F>
  HookFunctions &&on_end(F &&f) && {
    return std::move(on_end(std::forward<F>(f)));
  }
};

namespace detail {

class FunctionHook final : public SessionRunHook {
 public:
  explicit FunctionHook(HookFunctions fns) : fns_(std::move(fns)) {}
  void begin(hk_executor *graph) override {
    if (fns_.begin) fns_.begin(graph);
  }
  void after_create_session(hk_raw_session *session, hk_coordinator *coord, hk_creation_context *ctx) override {
    if (fns_.after_create_session) fns_.after_create_session(session, coord, ctx);
  }
  void before_run(hk_run_context *ctx, hk_run_request *request) override {
    if (fns_.before_run) fns_.before_run(ctx, request);
  }
  void after_run(hk_run_context *ctx, const hk_run_values *values) override {
    if (fns_.after_run) fns_.after_run(ctx, values);
  }
  void end(hk_raw_session *session) override {
    if (fns_.end) fns_.end(session);
  }

 private:
  HookFunctions fns_;
};

}  // namespace detail

/**
 * Owns an hk_hook (hk_hook_free() in the destructor). Move-only.
 * A session or loop borrows its hooks: a Hook must outlive the Loop it is
 * given to.
 */
class Hook {
 public:
  /** An empty Hook (get() == nullptr). */
  Hook() noexcept = default;
  /** Adopt a hook created through the C API (owned from now on). */
  explicit Hook(hk_hook *adopted) noexcept : hook_(adopted) {}

  Hook(const Hook &) = delete;
  Hook &operator=(const Hook &) = delete;
  Hook(Hook &&other) noexcept
      : hook_(std::exchange(other.hook_, nullptr)), impl_(std::exchange(other.impl_, nullptr)) {}
  Hook &operator=(Hook &&other) noexcept {
    if (this != &other) {
      reset();
      hook_ = std::exchange(other.hook_, nullptr);
      impl_ = std::exchange(other.impl_, nullptr);
    }
    return *this;
  }
  ~Hook() { reset(); }

  /**
   * Wrap a C++ hook object. On success the hk_hook owns it and deletes it
   * when freed; on failure it is deleted with the unique_ptr.
   * @param name  copied; nullptr: "hook". @param env  copied; nullptr: the
   *              default allocator, and the env of the session served.
   * @throws Error INVALID_ARGUMENT for a null impl or a bad env,
   *         RESOURCE_EXHAUSTED.
   */
  static Hook from(std::unique_ptr<SessionRunHook> impl, const char *name = nullptr, const hk_env *env = nullptr) {
    if (!impl) throw Error(HK_INVALID_ARGUMENT, "hooked::Hook::from: impl is null");
    hk_status st = HK_STATUS_INIT;
    hk_hook *h = nullptr;
    check(hk_hook_new(&h, &detail::hook_vtable, impl.get(), name, env, &st), st);
    impl->hook_ = h;
    Hook out(h);
    out.impl_ = impl.release();
    return out;
  }
  /** A hook made of callables (HookFunctions); same rules. */
  static Hook from(HookFunctions fns, const char *name = nullptr, const hk_env *env = nullptr) {
    return from(std::make_unique<detail::FunctionHook>(std::move(fns)), name, env);
  }
  /** Hook::from(std::make_unique<T>(args...), name): T derives from SessionRunHook. */
  template <class T, class... Args>
  static Hook make(const char *name, Args &&...args) {
    static_assert(std::is_base_of_v<SessionRunHook, T>, "hooked::Hook::make<T>: T must derive from SessionRunHook");
    return from(std::unique_ptr<SessionRunHook>(new T(std::forward<Args>(args)...)), name);
  }

  /** @return the hook, borrowed (nullptr when empty). */
  hk_hook *get() const noexcept { return hook_; }
  /** Give up ownership: @return the hook, now the caller's to hk_hook_free(). */
  hk_hook *release() noexcept {
    impl_ = nullptr;
    return std::exchange(hook_, nullptr);
  }
  /** Free the hook now (no-op when empty). */
  void reset() noexcept {
    hk_hook_free(std::exchange(hook_, nullptr));
    impl_ = nullptr;
  }
  explicit operator bool() const noexcept { return hook_ != nullptr; }
  /** @return hk_hook_name() ("(null hook)" when empty). */
  const char *name() const noexcept { return hk_hook_name(hook_); }
  /** @return the C++ object of a hook built with from()/make(), nullptr otherwise.
   *  Borrowed: it lives as long as the hook. */
  SessionRunHook *impl() const noexcept { return impl_; }

 private:
  hk_hook *hook_ = nullptr;
  SessionRunHook *impl_ = nullptr;
};

/* ======================================================================= */
/* The host loop                                                             */
/* ======================================================================= */

/** @return HK_LOOP_OPTIONS_INIT, to fill in and pass to Loop's constructor. */
inline hk_loop_options loop_options() noexcept {
  hk_loop_options o = HK_LOOP_OPTIONS_INIT;
  return o;
}
/** @return HK_CHECKPOINT_SAVER_OPTIONS_INIT. */
inline hk_checkpoint_saver_options checkpoint_saver_options() noexcept {
  hk_checkpoint_saver_options o = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
  return o;
}

/**
 * The hk_dtype of element type T: float F32, double F64, bool BOOL, and every
 * other integer type by its size and signedness (int32_t I32, int64_t I64,
 * uint8_t U8, std::size_t U64 on LP64, ...). Character types (char,
 * wchar_t, char16_t, char32_t) have none: use the untyped add_array()
 * overload with an explicit dtype. F16 and BF16 too.
 */
template <class T>
constexpr hk_dtype dtype_of() noexcept {
  using U = std::remove_cv_t<T>;
  static_assert(!std::is_same_v<U, char> && !std::is_same_v<U, wchar_t> && !std::is_same_v<U, char16_t> &&
                    !std::is_same_v<U, char32_t>,
                "hooked::dtype_of: no dtype for a character type; pass one explicitly");
  static_assert(std::is_arithmetic_v<U>, "hooked::dtype_of: T must be an arithmetic type");
  if constexpr (std::is_same_v<U, bool>) {
    static_assert(sizeof(bool) == 1, "hooked::dtype_of: BOOL needs a one-byte bool");
    return HK_DTYPE_BOOL;
  } else if constexpr (std::is_floating_point_v<U>) {
    static_assert(std::is_same_v<U, float> || std::is_same_v<U, double>,
                  "hooked::dtype_of: only float (F32) and double (F64)");
    return std::is_same_v<U, float> ? HK_DTYPE_F32 : HK_DTYPE_F64;
  } else {
    static_assert(sizeof(U) == 1 || sizeof(U) == 2 || sizeof(U) == 4 || sizeof(U) == 8,
                  "hooked::dtype_of: no dtype of this size");
    if constexpr (std::is_signed_v<U>) {
      return sizeof(U) == 1   ? HK_DTYPE_I8
             : sizeof(U) == 2 ? HK_DTYPE_I16
             : sizeof(U) == 4 ? HK_DTYPE_I32
                              : HK_DTYPE_I64;
    } else {
      return sizeof(U) == 1   ? HK_DTYPE_U8
             : sizeof(U) == 2 ? HK_DTYPE_U16
             : sizeof(U) == 4 ? HK_DTYPE_U32
                              : HK_DTYPE_U64;
    }
  }
}

namespace detail {

/* Calls the program's step callable: with the step when it takes one; its
 * result is void (HK_OK) or an hk_code (HK_OUT_OF_RANGE ends the loop
 * cleanly). */
template <class F>
hk_code invoke_step(F &fn, int64_t step) {
  if constexpr (std::is_invocable_v<F &, int64_t>) {
    using R = std::invoke_result_t<F &, int64_t>;
    static_assert(std::is_void_v<R> || std::is_same_v<R, hk_code>,
                  "hooked::Loop::step: the callable returns void or hk_code");
    if constexpr (std::is_void_v<R>) {
      fn(step);
      return HK_OK;
    } else {
      return fn(step);
    }
  } else {
    static_assert(std::is_invocable_v<F &>, "hooked::Loop::step: the callable takes (int64_t step) or ()");
    using R = std::invoke_result_t<F &>;
    static_assert(std::is_void_v<R> || std::is_same_v<R, hk_code>,
                  "hooked::Loop::step: the callable returns void or hk_code");
    if constexpr (std::is_void_v<R>) {
      fn();
      return HK_OK;
    } else {
      return fn();
    }
  }
}

template <class F>
hk_code step_trampoline(void *user, int64_t step, hk_status *status) noexcept {
  return guard(status, "step", [&] {
    hk_code rc = invoke_step(*static_cast<F *>(user), step);
    /* A bare code gets a message naming it (a clean OUT_OF_RANGE included). */
    if (rc != HK_OK)
      return hk_status_set(status, rc, "step %lld returned %s", static_cast<long long>(step), hk_code_name(rc));
    return HK_OK;
  });
}

/* An opaque state's callables; heap-allocated so that the address the loop
 * keeps survives moves of the Loop. */
struct State {
  std::string name;
  std::function<void(void *dst, std::size_t size)> save;
  std::function<void(const void *src, std::size_t size)> restore;

  static hk_code save_trampoline(void *user, void *dst, std::size_t size, hk_status *status) noexcept {
    auto *s = static_cast<State *>(user);
    return guard_named(status, "state", s->name.c_str(), "save", [&] {
      s->save(dst, size);
      return HK_OK;
    });
  }
  static hk_code restore_trampoline(void *user, const void *src, std::size_t size, hk_status *status) noexcept {
    auto *s = static_cast<State *>(user);
    return guard_named(status, "state", s->name.c_str(), "restore", [&] {
      s->restore(src, size);
      return HK_OK;
    });
  }
};

}  // namespace detail

/**
 * Owns an hk_loop (hooked/loop.h), the host loop: the program registers its
 * arrays and opaque state, start() restores the newest checkpoint into them,
 * each step is bracketed by every hook's before_run/after_run, checkpoints
 * are written on the configured cadence, and finish() ends it cleanly.
 * Move-only; a moved-from Loop is empty. Every method throws Error when the
 * C call fails; errors are sticky (hooked/loop.h): after one, every call
 * throws that first error again and should_stop() is true.
 *
 * Lifetime: the registered arrays and state objects, and the hooks, are
 * borrowed until the Loop is destroyed; the state callables are kept by the
 * Loop. Call finish() on success (see the file comment).
 */
class Loop {
 public:
  /** A loop with the default options (hk_loop_new(opts NULL)): no
   *  checkpoints, no stop condition. @throws Error RESOURCE_EXHAUSTED. */
  Loop() { create(nullptr, {}); }
  /**
   * hk_loop_new(): `opts` is borrowed for the call (everything it points to
   * is copied, except the hooks, which are borrowed).
   * @param hooks  the program's hooks, run after opts.hooks, in order;
   *               borrowed: they must outlive the Loop.
   * @throws Error INVALID_ARGUMENT naming a bad option (no side effect),
   *         RESOURCE_EXHAUSTED.
   */
  explicit Loop(const hk_loop_options &opts, std::initializer_list<std::reference_wrapper<const Hook>> hooks = {}) {
    create(&opts, hooks);
  }

  Loop(const Loop &) = delete;
  Loop &operator=(const Loop &) = delete;
  Loop(Loop &&other) noexcept : loop_(std::exchange(other.loop_, nullptr)), states_(std::move(other.states_)) {}
  Loop &operator=(Loop &&other) noexcept {
    if (this != &other) {
      reset();
      loop_ = std::exchange(other.loop_, nullptr);
      states_ = std::move(other.states_);
    }
    return *this;
  }
  /** hk_loop_free(): an unfinished loop is finished as after an error. */
  ~Loop() { reset(); }

  /** @return the loop, borrowed (nullptr when empty). */
  hk_loop *get() const noexcept { return loop_; }
  explicit operator bool() const noexcept { return loop_ != nullptr; }

  /* ---- registration (before start()) ---------------------------------- */

  /**
   * Register an array in place (zero copy), its dtype deduced from T
   * (dtype_of<T>()). `data` holds product(dims) elements and is borrowed
   * until the Loop is destroyed; it is written by restores, so T is not const.
   * @param dims   its shape: {} for a scalar, {n} for a vector, ...
   * @param flags  hk_loop_flags (HK_LOOP_NO_CHECKPOINT, HK_LOOP_OPTIONAL,
   *               HK_LOOP_GLOBAL_STEP).
   * @throws Error as hk_loop_add_array().
   */
  template <class T>
  Loop &add_array(const char *name, T *data, std::initializer_list<int64_t> dims = {},
                  unsigned flags = HK_LOOP_DEFAULT) {
    static_assert(!std::is_const_v<T>,
                  "hooked::Loop::add_array: restores write into the array: pass a non-const pointer");
    return add_array_raw(name, dtype_of<T>(), dims.begin(), dims.size(), static_cast<void *>(data), flags);
  }
  /** As above, with the shape in a container of integers (std::vector<size_t>,
   *  std::array<int, 2>, ...). @throws Error INVALID_ARGUMENT for a negative
   *  dimension, one beyond INT64_MAX, or more than HK_MAX_RANK of them. */
  template <class T, class Dims, class = decltype(std::begin(std::declval<const Dims &>()))>
  Loop &add_array(const char *name, T *data, const Dims &dims, unsigned flags = HK_LOOP_DEFAULT) {
    static_assert(!std::is_const_v<T>,
                  "hooked::Loop::add_array: restores write into the array: pass a non-const pointer");
    int64_t buf[HK_MAX_RANK] = {0};
    std::size_t rank = 0;
    for (const auto &d : dims) {
      using D = std::remove_cv_t<std::remove_reference_t<decltype(d)>>;
      static_assert(std::is_integral_v<D>, "hooked::Loop::add_array: dims must be integers");
      if (rank == HK_MAX_RANK)
        throw Error(HK_INVALID_ARGUMENT, std::string("add_array '") + (name ? name : "(null)") +
                                             "': more than HK_MAX_RANK (" + std::to_string(HK_MAX_RANK) + ") dims");
      bool fits;
      if constexpr (std::is_signed_v<D>) {
        fits = d >= 0;
      } else {
        fits =
            static_cast<unsigned long long>(d) <= static_cast<unsigned long long>(std::numeric_limits<int64_t>::max());
      }
      if (!fits)
        throw Error(HK_INVALID_ARGUMENT, std::string("add_array '") + (name ? name : "(null)") + "': dims[" +
                                             std::to_string(rank) + "] is out of range");
      buf[rank++] = static_cast<int64_t>(d);
    }
    return add_array_raw(name, dtype_of<T>(), buf, rank, static_cast<void *>(data), flags);
  }
  /** Untyped: hk_loop_add_array() with an explicit dtype (F16, BF16, ...). */
  Loop &add_array(const char *name, hk_dtype dtype, std::initializer_list<int64_t> dims, void *data,
                  unsigned flags = HK_LOOP_DEFAULT) {
    return add_array_raw(name, dtype, dims.begin(), dims.size(), data, flags);
  }

  /**
   * Register opaque state (hk_loop_add_state()): `size` bytes written by
   * `save(dst, size)` into every checkpoint and read back by
   * `restore(src, size)` when start() restores one. The callables are kept
   * by the Loop; they fail by throwing.
   * @throws Error as hk_loop_add_state().
   */
  Loop &add_state(const char *name, std::size_t size, std::function<void(void *dst, std::size_t size)> save,
                  std::function<void(const void *src, std::size_t size)> restore, unsigned flags = HK_LOOP_DEFAULT) {
    auto s = std::make_unique<detail::State>();
    s->name = name ? name : "";
    s->save = std::move(save);
    s->restore = std::move(restore);
    /* An empty std::function is passed to C as a NULL callback, which the
     * loop refuses with its own message. */
    hk_status st = HK_STATUS_INIT;
    check(hk_loop_add_state(loop_, name, size, s->save ? &detail::State::save_trampoline : nullptr,
                            s->restore ? &detail::State::restore_trampoline : nullptr, s.get(), flags, &st),
          st);
    states_.push_back(std::move(s));
    return *this;
  }
  /**
   * Register a trivially copyable object as opaque state by its bytes
   * (memcpy both ways). Its object representation is then the checkpoint
   * format: a checkpoint written by a build with another layout (compiler,
   * standard library, ABI) restores garbage of the right size. Prefer an
   * explicit serialization for library types such as std::mt19937.
   */
  template <class T>
  Loop &add_state(const char *name, T *object, unsigned flags = HK_LOOP_DEFAULT) {
    static_assert(std::is_trivially_copyable_v<T> && !std::is_const_v<T>,
                  "hooked::Loop::add_state(name, T*): T must be trivially copyable and not const");
    return add_state(
        name, sizeof(T), [object](void *dst, std::size_t n) { std::memcpy(dst, static_cast<const void *>(object), n); },
        [object](const void *src, std::size_t n) { std::memcpy(static_cast<void *>(object), src, n); }, flags);
  }

  /* ---- running ---------------------------------------------------------- */

  /** hk_loop_start(): restore or keep, build the session.
   *  @return the global step to resume at. @throws Error. */
  int64_t start() {
    hk_status st = HK_STATUS_INIT;
    int64_t step = 0;
    check(hk_loop_start(loop_, &step, &st), st);
    return step;
  }
  /** hk_loop_should_stop(): true also when failed, finished, not started or empty. */
  bool should_stop() const noexcept { return hk_loop_should_stop(loop_) != 0; }
  /** hk_loop_step_begin(): every hook's before_run. @return the step it starts at. */
  int64_t step_begin() {
    hk_status st = HK_STATUS_INIT;
    int64_t step = 0;
    check(hk_loop_step_begin(loop_, &step, &st), st);
    return step;
  }
  /** hk_loop_updates_begin(): the step's read-only work is over; the copy of
   *  the last asynchronous checkpoint ends here, before the program writes. */
  void updates_begin() {
    hk_status st = HK_STATUS_INIT;
    check(hk_loop_updates_begin(loop_, &st), st);
  }
  /** hk_loop_step_end(): the global step moves, every hook's after_run, a due save. */
  void step_end() {
    hk_status st = HK_STATUS_INIT;
    check(hk_loop_step_end(loop_, &st), st);
  }
  /**
   * One bracketed step (hk_loop_step()): `fn(step)` or `fn()`, returning
   * void or an hk_code. Return HK_OUT_OF_RANGE (or throw
   * Error(HK_OUT_OF_RANGE, ...)) when the data is exhausted: the loop then
   * stops cleanly.
   * @return true when the step ran; false when it returned OUT_OF_RANGE (the
   *         loop stops; finish() reports OK unless something else failed).
   * @throws Error with fn's code and message, or a hook's or save's error.
   */
  template <class F>
  bool step(F &&fn) {
    using Fn = std::remove_reference_t<F>;
    hk_status st = HK_STATUS_INIT;
    hk_code rc = hk_loop_step(loop_, &detail::step_trampoline<Fn>,
                              const_cast<void *>(static_cast<const void *>(std::addressof(fn))), &st);
    if (rc == HK_OUT_OF_RANGE) return false;
    check(rc, st);
    return true;
  }
  /** hk_loop_run(): step(fn) until should_stop(). Returns on a clean stop
   *  (a stop request, the last step, a signal, OUT_OF_RANGE from fn).
   *  @throws Error the first error. */
  template <class F>
  void run(F &&fn) {
    using Fn = std::remove_reference_t<F>;
    hk_status st = HK_STATUS_INIT;
    check(hk_loop_run(loop_, &detail::step_trampoline<Fn>,
                      const_cast<void *>(static_cast<const void *>(std::addressof(fn))), &st),
          st);
  }
  /**
   * hk_loop_save(), between steps, synchronously.
   * @param name  nullptr: a managed checkpoint at the current step; else an
   *              unmanaged one "<dir>/<name>" (e.g. "best").
   * @return the checkpoint's prefix. @throws Error.
   */
  std::string save(const char *name = nullptr) {
    hk_status st = HK_STATUS_INIT;
    const char *prefix = nullptr;
    check(hk_loop_save(&prefix, loop_, name, &st), st);
    return prefix ? std::string(prefix) : std::string();
  }
  /** hk_loop_request_stop(): stop after the step in progress. Any thread. */
  void request_stop() noexcept { hk_loop_request_stop(loop_); }
  /** hk_loop_finish(): final checkpoint and every end() after a clean run.
   *  Idempotent. @throws Error the loop's first error, else an end() error. */
  void finish() {
    hk_status st = HK_STATUS_INIT;
    check(hk_loop_finish(loop_, &st), st);
  }

  /* ---- queries ---------------------------------------------------------- */

  /** @return hk_loop_global_step(): the step a checkpoint would record. */
  int64_t global_step() const noexcept { return hk_loop_global_step(loop_); }
  /** @return the checkpoint prefix start() restored, nullptr when it kept
   *  the program's values; borrowed until the Loop is destroyed. */
  const char *restored_checkpoint() const noexcept { return hk_loop_restored_checkpoint(loop_); }
  /** @return hk_loop_executor(), borrowed. */
  hk_executor *executor() const noexcept { return hk_loop_executor(loop_); }
  /** @return hk_loop_session() after start, borrowed; do not run, close or free it. */
  hk_session *session() const noexcept { return hk_loop_session(loop_); }

 private:
  void create(const hk_loop_options *opts, std::initializer_list<std::reference_wrapper<const Hook>> hooks) {
    hk_status st = HK_STATUS_INIT;
    std::vector<hk_hook *> all;
    hk_loop_options o = loop_options();
    if (hooks.size() != 0) {
      o = opts ? *opts : loop_options();
      if (o.hooks && o.nhooks) all.assign(o.hooks, o.hooks + o.nhooks);
      for (const Hook &h : hooks) all.push_back(h.get());
      o.hooks = all.data();
      o.nhooks = all.size();
      opts = &o;
    }
    check(hk_loop_new(&loop_, opts, &st), st);
  }
  Loop &add_array_raw(const char *name, hk_dtype dtype, const int64_t *dims, std::size_t rank, void *data,
                      unsigned flags) {
    if (rank > HK_MAX_RANK)
      throw Error(HK_INVALID_ARGUMENT, std::string("add_array '") + (name ? name : "(null)") +
                                           "': more than HK_MAX_RANK (" + std::to_string(HK_MAX_RANK) + ") dims");
    hk_status st = HK_STATUS_INIT;
    check(hk_loop_add_array(loop_, name, dtype, static_cast<int32_t>(rank), rank ? dims : nullptr, data, flags, &st),
          st);
    return *this;
  }
  void reset() noexcept {
    /* The loop first: it may still hold the states' addresses. */
    hk_loop_free(std::exchange(loop_, nullptr));
    states_.clear();
  }

  hk_loop *loop_ = nullptr;
  std::vector<std::unique_ptr<detail::State>> states_;
};

}  // namespace hooked

/* The built-in hooks' constructors (hooked::stop_at_last_step(), ...). */
#include "hooked/hooks.hpp"

#endif /* HOOKED_HOOKED_HPP */
