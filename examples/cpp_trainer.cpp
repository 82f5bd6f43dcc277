/*
 * cpp_trainer — a small C++17 trainer on hooked's host loop through the
 * header-only wrapper hooked/hooked.hpp.
 *
 * Linear regression, y = w.x + b, on an endless stream of synthetic
 * examples drawn from a std::mt19937, trained by minibatch SGD with
 * momentum. Everything the program owns is registered with the loop in
 * place: the parameters and the optimizer's velocity as arrays, and the
 * data stream's RNG as opaque state, so a run resumed from a checkpoint
 * draws exactly the batches an uninterrupted run would have drawn and ends
 * with bit-identical parameters (and a byte-identical final checkpoint).
 *
 *   cpp_trainer [--checkpoint-dir DIR] [--steps N] [--save-steps K]
 *               [--log-every L] [--seed S] [--lr X]
 *
 * --steps is the last global step: run it again with a larger --steps on
 * the same --checkpoint-dir to continue. stdout gets one line about the
 * start ("fresh start at step 0" or "resumed at step N from PREFIX") and one
 * result line "result: step=N eval_loss=X w_error=Y" (evaluated on a fixed
 * held-out set, so a run that resumes at its last step prints the same
 * line). Progress goes to stderr. SIGINT/SIGTERM stop cleanly after the
 * step in progress, with a final checkpoint. Exit status: 0, 1 for a
 * training error, 2 for bad flags.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include <hooked/hooked.hpp>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <locale>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr int kFeatures = 8;
constexpr int kBatch = 32;
constexpr int kEval = 256;
constexpr double kMomentum = 0.9;

struct Flags {
  std::string checkpoint_dir;
  int64_t steps = 1000;
  int64_t save_steps = 100;
  int64_t log_every = 100;
  int64_t seed = 1;
  double lr = 0.05;
};

void usage(std::FILE *to) {
  std::fprintf(to,
               "usage: cpp_trainer [--checkpoint-dir DIR] [--steps N] [--save-steps K] [--log-every L]\n"
               "                   [--seed S] [--lr X]\n"
               "\n"
               "Fit y = w.x + b (8 features) by SGD with momentum on a synthetic stream, on hooked's\n"
               "host loop through its C++17 wrapper hooked/hooked.hpp.\n"
               "\n"
               "  --checkpoint-dir DIR  restore from and save to DIR (default: no checkpoints)\n"
               "  --steps N             train until global step N (default 1000)\n"
               "  --save-steps K        checkpoint every K steps, 0: only on demand (default 100)\n"
               "  --log-every L         log the training loss every L steps, 0: never (default 100)\n"
               "  --seed S              seed of the data stream, >= 0 (default 1)\n"
               "  --lr X                learning rate, > 0 (default 0.05)\n");
}

bool parse_i64(const char *s, int64_t min, int64_t *out) {
  if (!s || !*s) return false;
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(s, &end, 10);
  if (errno || *end || v < min) return false;
  *out = v;
  return true;
}

bool parse_positive(const char *s, double *out) {
  if (!s || !*s) return false;
  char *end = nullptr;
  double v = std::strtod(s, &end);
  if (*end || !std::isfinite(v) || v <= 0) return false;
  *out = v;
  return true;
}

/* @return 0 to run, 1 for --help, -1 for a bad flag (reported). */
int parse_flags(int argc, char **argv, Flags &fl) {
  for (int i = 1; i < argc; i++) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") return 1;
    std::string name = arg, value;
    bool has_value = false;
    if (std::size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    } else if (i + 1 < argc) {
      value = argv[i + 1];
    }
    bool ok = true;
    bool known = name == "--checkpoint-dir" || name == "--steps" || name == "--save-steps" || name == "--log-every" ||
                 name == "--seed" || name == "--lr";
    if (!known) {
      std::fprintf(stderr, "cpp_trainer: unknown argument '%s'\n", arg.c_str());
      return -1;
    }
    if (!has_value) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "cpp_trainer: %s needs a value\n", name.c_str());
        return -1;
      }
      i++;
    }
    if (name == "--checkpoint-dir") {
      fl.checkpoint_dir = value;
      ok = !value.empty();
    } else if (name == "--steps") {
      ok = parse_i64(value.c_str(), 0, &fl.steps);
    } else if (name == "--save-steps") {
      ok = parse_i64(value.c_str(), 0, &fl.save_steps);
    } else if (name == "--log-every") {
      ok = parse_i64(value.c_str(), 0, &fl.log_every);
    } else if (name == "--seed") {
      ok = parse_i64(value.c_str(), 0, &fl.seed);
    } else {
      ok = parse_positive(value.c_str(), &fl.lr);
    }
    if (!ok) {
      std::fprintf(stderr, "cpp_trainer: bad value '%s' for %s\n", value.c_str(), name.c_str());
      return -1;
    }
  }
  return 0;
}

/* A uniform double in [-1, 1) from one engine output: the engine's output
 * sequence is fixed by the standard, this transform by us, so the data is
 * the same with every standard library (std::uniform_real_distribution's
 * algorithm is not specified). */
double uniform(std::mt19937 &rng) { return static_cast<double>(rng()) * (2.0 / 4294967296.0) - 1.0; }

/* The model to recover. */
double true_w(int i) { return (i % 2 ? -0.25 : 0.25) * (i + 1); }
constexpr double kTrueB = 0.5;

struct Example {
  double x[kFeatures];
  double y;
};

Example draw(std::mt19937 &rng) {
  Example e{};
  e.y = kTrueB;
  for (int i = 0; i < kFeatures; i++) {
    e.x[i] = uniform(rng);
    e.y += true_w(i) * e.x[i];
  }
  e.y += 0.1 * uniform(rng);  // noise
  return e;
}

/*
 * Opaque state through text: the standard specifies the textual
 * representation operator<< writes for a random-number engine (its state
 * words in decimal), so these bytes mean the same thing to every compiler
 * and standard library, unlike the engine's object representation. The text
 * is NUL-padded into a fixed-size slot (the state's size must be the same
 * in every run). mt19937 needs at most 624 * 11 bytes.
 */
template <class T>
void add_text_state(hooked::Loop &loop, const char *name, T &object, std::size_t slot) {
  std::string what = name;
  loop.add_state(
      name, slot,
      [&object, what](void *dst, std::size_t n) {
        std::ostringstream os;
        os.imbue(std::locale::classic());
        os << object;
        const std::string text = os.str();
        if (text.size() >= n)
          throw hooked::Error(HK_INTERNAL, "state '" + what + "': " + std::to_string(text.size()) +
                                               " bytes of text do not fit its " + std::to_string(n) + "-byte slot");
        std::memset(dst, 0, n);
        std::memcpy(dst, text.data(), text.size());
      },
      [&object, what](const void *src, std::size_t n) {
        const char *text = static_cast<const char *>(src);
        std::size_t len = 0;
        while (len < n && text[len] != '\0') len++;
        std::istringstream is(std::string(text, len));
        is.imbue(std::locale::classic());
        T restored;
        is >> restored;
        if (len == n || is.fail())
          throw hooked::Error(HK_DATA_LOSS, "state '" + what + "': the checkpoint's text does not parse");
        object = restored;
      });
}

/* Mean squared error of (w, b) on a fixed held-out set. */
double eval_loss(const float *w, float b) {
  std::mt19937 held_out(20260101u);  // independent of --seed and of training
  double sum = 0;
  for (int k = 0; k < kEval; k++) {
    Example e = draw(held_out);
    double pred = b;
    for (int i = 0; i < kFeatures; i++) pred += w[i] * e.x[i];
    sum += (pred - e.y) * (pred - e.y);
  }
  return sum / kEval;
}

}  // namespace

int main(int argc, char **argv) {
  Flags fl;
  switch (parse_flags(argc, argv, fl)) {
    case 1: usage(stdout); return 0;
    case -1: usage(stderr); return 2;
    default: break;
  }

  /* The program's own state: parameters, optimizer slots, data stream. */
  float w[kFeatures] = {0};
  float b = 0;
  float velocity[kFeatures + 1] = {0};  // momentum of w, then of b
  float loss = 0;                       // of the last batch, for the log hook
  std::mt19937 data_rng(static_cast<std::mt19937::result_type>(fl.seed));

  try {
    /* A hook from lambdas: fetches "global_step" and "loss" by name, as any
     * hook can fetch a registered array, and logs every --log-every steps.
     * Declared before the Loop, which borrows it. */
    hk_handle fetches[2] = {HK_NO_HANDLE, HK_NO_HANDLE};
    hooked::Hook logger = hooked::Hook::from(
        hooked::HookFunctions{}
            .on_begin([&](hk_executor *graph) {
              hooked::Status st;
              st.check(hk_executor_resolve_tensor(&fetches[0], graph, "global_step", st.get()));
              st.check(hk_executor_resolve_tensor(&fetches[1], graph, "loss", st.get()));
            })
            .on_before_run([&](hk_run_context *, hk_run_request *request) {
              request->fetches = fetches;
              request->nfetches = 2;
            })
            .on_after_run([&](hk_run_context *, const hk_run_values *values) {
              if (values->nresults != 2) throw hooked::Error(HK_INTERNAL, "loss_logger: expected 2 fetched values");
              hooked::Status st;
              int64_t step = 0;
              st.check(hk_tensor_to_i64(&step, &values->results[0], "global_step", st.get()));
              const float batch_loss = *static_cast<const float *>(values->results[1].data);
              if (fl.log_every > 0 && step % fl.log_every == 0)
                std::fprintf(stderr, "step %lld: loss = %.6f\n", static_cast<long long>(step), batch_loss);
            }),
        "loss_logger");

    hk_loop_options opts = hooked::loop_options();
    if (!fl.checkpoint_dir.empty()) {
      opts.checkpoint_dir = fl.checkpoint_dir.c_str();
      opts.save_steps = fl.save_steps;
    }
    opts.last_step = fl.steps;
    hooked::Loop loop(opts, {logger});
    loop.add_array("w", w, {kFeatures})
        .add_array("b", &b)
        .add_array("velocity", velocity, {kFeatures + 1})
        .add_array("loss", &loss, {}, HK_LOOP_NO_CHECKPOINT);
    add_text_state(loop, "data_rng", data_rng, 8192);

    const int64_t first = loop.start();
    if (const char *prefix = loop.restored_checkpoint())
      std::printf("resumed at step %lld from %s\n", static_cast<long long>(first), prefix);
    else
      std::printf("fresh start at step %lld\n", static_cast<long long>(first));
    std::fflush(stdout);

    const double lr = fl.lr;
    loop.run([&] {
      double grad[kFeatures + 1] = {0};
      double sum = 0;
      for (int k = 0; k < kBatch; k++) {
        const Example e = draw(data_rng);
        double pred = b;
        for (int i = 0; i < kFeatures; i++) pred += w[i] * e.x[i];
        const double err = pred - e.y;
        sum += err * err;
        for (int i = 0; i < kFeatures; i++) grad[i] += 2 * err * e.x[i] / kBatch;
        grad[kFeatures] += 2 * err / kBatch;
      }
      for (int i = 0; i <= kFeatures; i++) velocity[i] = static_cast<float>(kMomentum * velocity[i] - lr * grad[i]);
      for (int i = 0; i < kFeatures; i++) w[i] += velocity[i];
      b += velocity[kFeatures];
      loss = static_cast<float>(sum / kBatch);
    });
    loop.finish();

    double w_error = 0;
    for (int i = 0; i < kFeatures; i++) w_error += (w[i] - true_w(i)) * (w[i] - true_w(i));
    w_error += (b - kTrueB) * (b - kTrueB);
    std::printf("result: step=%lld eval_loss=%.6f w_error=%.6f\n", static_cast<long long>(loop.global_step()),
                eval_loss(w, b), std::sqrt(w_error));
    return 0;
  } catch (const hooked::Error &e) {
    std::fprintf(stderr, "cpp_trainer: %s: %s\n", e.code_name(), e.what());
    return 1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "cpp_trainer: %s\n", e.what());
    return 1;
  }
}
