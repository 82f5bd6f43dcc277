/*
 * step_overhead — what a session and its hooks add to one executor run.
 *
 * Times, in one process, a tight loop of runs of a trivial op (a no-op
 * group):
 *   - the floor: hk_raw_session_run on a raw session, no session, no hooks;
 *   - the floor fetching global_step (what StopAtStep adds to the run itself);
 *   - hk_session_run with 0, 1 and 10 no-op hooks, both hooks whose slots
 *     are all NULL and hooks with empty before_run/after_run callbacks;
 *   - hk_session_run with the StopAtStep hook (last_step never reached),
 *     and with a TimeLimitHook (its limit never reached), on a session
 *     and on the host loop;
 *   - the host loop (hooked/loop.h) around a program's own step: the bare
 *     step alone in a plain loop (its floor), then hk_loop_step_begin/end
 *     around the same step with 0, 1 and 10 empty hooks;
 *   - the LearningRateHook (hooked/learning_rate.h), a cosine schedule after
 *     a warmup, writing a rate variable before every step: on a session
 *     (over the 0-hook session), and on the host loop with reduce-on-plateau
 *     on a registered value every 100 steps and its state registered (over
 *     the 0-hook loop).
 *   - the MetricsLogHook (hooked/metrics_log.h), a CSV row of the global
 *     step every 100 steps, in a session running a train op that increments
 *     the global step (against the same session with no hooks) and in the
 *     host loop (against the host loop with no hooks).
 *   - an ExponentialMovingAverage hook (hooked/ema.h): on a session over
 *     the graph averaging 16 floats, and on the host loop averaging the
 *     program's 16 floats and 65536 floats, against the 0-hook session and
 *     loop.
 * Every case is measured --reps times, interleaved so that clock drift hits
 * all cases alike; the best repetition is reported. Allocations are counted
 * by a counting allocator in the env of the graph and of every session,
 * over the timed loops only (after a warm-up).
 *
 * Goals (issue): at most 50 ns per hook per step over the floor, and no
 * allocation. Exit status: 0 when no timed loop allocated, 1 otherwise or on
 * error, 2 for a usage error. The timing goal is reported, not enforced:
 * timings depend on the machine and its load.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#if !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif

#include <hooked/hooked.h>

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dirent.h>
#include <unistd.h>

#ifndef HOOKED_BENCH_BUILD_TYPE
#define HOOKED_BENCH_BUILD_TYPE ""
#endif

#define WARMUP_RUNS 16
#define GOAL_NS_PER_HOOK 50.0
#define MAX_HOOKS 10

/* ---- counting allocator -------------------------------------------------- */

typedef struct counter {
  atomic_ullong allocs; /* alloc and realloc calls */
} counter;

static void *count_alloc(void *user, size_t size) {
  atomic_fetch_add(&((counter *)user)->allocs, 1);
  return malloc(size);
}

static void *count_realloc(void *user, void *ptr, size_t size) {
  atomic_fetch_add(&((counter *)user)->allocs, 1);
  return realloc(ptr, size);
}

static void count_free(void *user, void *ptr) {
  (void)user;
  free(ptr);
}

/* ---- hooks --------------------------------------------------------------- */

static const hk_hook_vtable null_hook_vtable = {
    HK_HOOK_VTABLE_VERSION, NULL, NULL, NULL, NULL, NULL, NULL,
};

static hk_code empty_before_run(void *user, hk_run_context *ctx, hk_run_request *request, hk_status *status) {
  (void)user;
  (void)ctx;
  (void)request;
  (void)status;
  return HK_OK;
}

static hk_code empty_after_run(void *user, hk_run_context *ctx, const hk_run_values *values, hk_status *status) {
  (void)user;
  (void)ctx;
  (void)values;
  (void)status;
  return HK_OK;
}

static const hk_hook_vtable empty_hook_vtable = {
    HK_HOOK_VTABLE_VERSION, NULL, NULL, empty_before_run, empty_after_run, NULL, NULL,
};

/* ---- cases --------------------------------------------------------------- */

typedef enum hook_kind {
  HOOKS_NONE, HOOKS_NULL, HOOKS_EMPTY, HOOKS_STOP, HOOKS_LR, HOOKS_INC, HOOKS_METRICS, HOOKS_EMA, HOOKS_EMA_BIG,
  HOOKS_TIME_LIMIT
} hook_kind;
/* HOOKS_INC: no hooks, the session runs the train op that increments the
 * global step (the metrics log's fair reference); HOOKS_METRICS: one
 * MetricsLogHook, running that op too (in the host loop: added with
 * hk_loop_add_metrics_log). */

#define EMA_BIG 65536 /* floats of the large host-loop average */

/* A TimeLimitHook that never fires during the bench (hooked/time_limit.h). */
static hk_code time_limit_hook(hk_hook **out, hk_status *st) {
  hk_time_limit_options o = HK_TIME_LIMIT_OPTIONS_INIT;
  o.duration_secs = 1e9;
  return hk_time_limit_hook_new(out, &o, st);
}

typedef enum case_kind { SESSION = 0, RAW = 1, BARE_STEP = 2, HOST_LOOP = 3, MTS = 4 } case_kind;

typedef struct bench_case {
  const char *label;
  int raw;      /* a case_kind: 1 (RAW) is hk_raw_session_run, no session */
  int fetch_gs; /* raw only: also fetch global_step */
  hook_kind kind;
  size_t nhooks;
  /* state */
  hk_raw_session *rs;
  hk_session *s;
  hk_hook *hooks[MAX_HOOKS];
  hk_loop *loop;
  float user[16]; /* the program's own state, stepped by user_step */
  double best_ns;
  unsigned long long allocs;
  float lr, val; /* HOOKS_LR on the host loop: the rate it writes, the value it watches */
  float *big; /* HOOKS_EMA_BIG: the program's EMA_BIG floats */
} bench_case;

typedef struct bench {
  counter count;
  hk_env env;
  hk_graph *g;
  hk_handle noop, gs, inc; /* inc: the global step + 1, the MTS case's train op */
  char dir[64];            /* the MTS case's checkpoint and summary directory */
  char mdir[64];           /* the metrics log cases' directory */
  hk_hook *graph_ema;      /* the session case's average of "ema_w" */
  float ema_w[16];         /* its variable, the graph's external memory */
  bench_case *cases;
  size_t ncases;
  unsigned long long setup_allocs; /* before the timed loops: proves the counter is wired */
} bench;

/* Remove the MTS case's directory (the files hooked wrote, then it). */
static void remove_tree(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char path[512];
  if (!d) return;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    unlink(path);
  }
  closedir(d);
  rmdir(dir);
}

static double now_secs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int fail(const char *what, const hk_status *st) {
  fprintf(stderr, "step_overhead: %s: %s: %s\n", what, hk_code_name(st->code), st->message);
  return 1;
}

static int build_graph(bench *b) {
  hk_graph_options gopts = HK_GRAPH_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  gopts.env = &b->env;
  if (hk_graph_new(&b->g, &gopts, &st) != HK_OK || hk_graph_get_or_create_global_step(b->g, &b->gs, &st) != HK_OK ||
      hk_graph_group(b->g, &b->noop, "noop", NULL, 0, &st) != HK_OK)
    return fail("building the graph", &st);
  int64_t one_value = 1;
  hk_tensor one_tensor = hk_tensor_scalar_i64(&one_value);
  hk_handle one;
  if (hk_graph_constant(b->g, &one, "one", &one_tensor, &st) != HK_OK ||
      hk_graph_assign_add(b->g, &b->inc, "increment_global_step", b->gs, one, &st) != HK_OK)
    return fail("building the graph", &st);
  /* "ema_w", averaged by the EMA session case, and its shadows. */
  static const int64_t dims[1] = {16};
  static const char *const averaged[1] = {"ema_w"};
  hk_variable_def vd = HK_VARIABLE_DEF_INIT;
  hk_handle h;
  hk_ema_options eo = HK_EMA_OPTIONS_INIT;
  vd.name = "ema_w";
  vd.dtype = HK_DTYPE_F32;
  vd.rank = 1;
  vd.dims = dims;
  vd.external_data = b->ema_w;
  eo.variables = averaged;
  eo.nvariables = 1;
  eo.decay = 0.99;
  if (hk_graph_variable(b->g, &h, &vd, &st) != HK_OK || hk_ema_hook_new(&b->graph_ema, &eo, &st) != HK_OK ||
      hk_ema_hook_add_graph_variables(b->graph_ema, b->g, &st) != HK_OK)
    return fail("building the graph's average", &st);
  hk_variable_def lr = HK_VARIABLE_DEF_INIT; /* what the LearningRateHook writes */
  hk_handle lr_handle;
  lr.name = "learning_rate";
  lr.dtype = HK_DTYPE_F32;
  lr.flags = HK_VAR_LOCAL;
  lr.init.kind = HK_INIT_CONSTANT;
  if (hk_graph_variable(b->g, &lr_handle, &lr, &st) != HK_OK) return fail("building the graph", &st);
  return 0;
}

/* The LearningRateHook of the HOOKS_LR cases: cosine after a warmup; on the
 * host loop, reduce-on-plateau on "val" every 100 steps too. */
static int new_lr_hook(hk_hook **out, int plateau) {
  hk_learning_rate_options o = HK_LEARNING_RATE_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  o.variable = "learning_rate";
  o.schedule = HK_LEARNING_RATE_COSINE;
  o.rate = 0.1;
  o.warmup_steps = 1000;
  o.decay_steps = 1000000;
  if (plateau) {
    o.monitor = "val";
    o.every_n_steps = 100;
    o.state = "learning_rate_state";
  }
  if (hk_learning_rate_hook_new(out, &o, &st) != HK_OK) return fail("creating a LearningRateHook", &st);
  return 0;
}

/* A MetricsLogHook writing the global step every 100 steps into
 * b->mdir/<name>. */
static int metrics_hook(bench *b, hk_hook **out, const char *name) {
  static const char *const gs[] = {"global_step"};
  hk_metrics_log_options mo = HK_METRICS_LOG_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  char path[128];
  if (!b->mdir[0]) {
    snprintf(b->mdir, sizeof b->mdir, "/tmp/hooked-bench-metrics-XXXXXX");
    if (!mkdtemp(b->mdir)) {
      fprintf(stderr, "step_overhead: mkdtemp: %s\n", strerror(errno));
      b->mdir[0] = '\0';
      return 1;
    }
  }
  snprintf(path, sizeof path, "%s/%s", b->mdir, name);
  mo.path = path;
  mo.tensors = gs;
  mo.ntensors = 1;
  mo.every_n_steps = 100;
  if (hk_metrics_log_hook_new(out, &mo, &st) != HK_OK) return fail("creating a MetricsLogHook", &st);
  return 0;
}

/* The host-loop EMA cases: an ExponentialMovingAverage hook on the
 * program's array, one of the loop's own hooks. */
static int add_loop_ema(bench_case *c, hk_status *st) {
  static const char *const user[1] = {"user"}, *const big[1] = {"big"};
  static const int64_t dims[1] = {EMA_BIG};
  hk_ema_options eo = HK_EMA_OPTIONS_INIT;
  eo.variables = c->kind == HOOKS_EMA_BIG ? big : user;
  eo.nvariables = 1;
  eo.decay = 0.99;
  if (c->kind == HOOKS_EMA_BIG) {
    if (!(c->big = calloc(EMA_BIG, sizeof *c->big))) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory");
    if (hk_loop_add_array(c->loop, "big", HK_DTYPE_F32, 1, dims, c->big, 0, st) != HK_OK) return st->code;
  }
  if (hk_ema_hook_new(&c->hooks[0], &eo, st) != HK_OK) return st->code;
  return hk_loop_add_ema(c->loop, c->hooks[0], st);
}

static int open_case(bench *b, bench_case *c) {
  hk_status st = HK_STATUS_INIT;
  hk_session_options so = HK_SESSION_OPTIONS_INIT;

  if (c->raw == BARE_STEP) return 0;
  if (c->raw == MTS) {
    /* MonitoredTrainingSession with its defaults: StepCounter every 100
     * steps and SummarySaver every 100 (both writing into dir), and a
     * CheckpointSaver every 600 s (one save at creation). */
    hk_training_session_options to = HK_TRAINING_SESSION_OPTIONS_INIT;
    snprintf(b->dir, sizeof b->dir, "/tmp/hooked-bench-XXXXXX");
    if (!mkdtemp(b->dir)) {
      fprintf(stderr, "step_overhead: mkdtemp: %s\n", strerror(errno));
      return 1;
    }
    to.env = &b->env;
    to.executor = hk_graph_executor(b->g);
    to.checkpoint_dir = b->dir;
    if (hk_training_session_new(&c->s, &to, &st) != HK_OK) return fail("creating a MonitoredTrainingSession", &st);
    return 0;
  }
  if (c->raw == HOST_LOOP) {
    hk_loop_options lo = HK_LOOP_OPTIONS_INIT;
    static const int64_t dims[1] = {16};
    const int ema = c->kind == HOOKS_EMA || c->kind == HOOKS_EMA_BIG;
    for (size_t i = 0; i < c->nhooks && c->kind != HOOKS_METRICS && !ema; i++)
      if ((c->kind == HOOKS_TIME_LIMIT ? time_limit_hook(&c->hooks[i], &st)
                                       : hk_hook_new(&c->hooks[i], &empty_hook_vtable, NULL, "empty", NULL, &st)) !=
          HK_OK)
        return fail("creating a hook", &st);
    if (c->kind == HOOKS_METRICS && metrics_hook(b, &c->hooks[0], "loop.csv") != 0) return 1;
    lo.env = &b->env;
    lo.hooks = ema ? NULL : c->hooks;
    lo.nhooks = c->kind == HOOKS_METRICS || ema ? 0 : c->nhooks;
    lo.handle_signals = 0;
    if (hk_loop_new(&c->loop, &lo, &st) != HK_OK ||
        hk_loop_add_array(c->loop, "user", HK_DTYPE_F32, 1, dims, c->user, 0, &st) != HK_OK ||
        (c->kind == HOOKS_METRICS && hk_loop_add_metrics_log(c->loop, c->hooks[0], &st) != HK_OK) ||
        (ema && add_loop_ema(c, &st) != HK_OK))
      return fail("starting a host loop", &st);
    if (c->kind == HOOKS_LR &&
        (new_lr_hook(&c->hooks[MAX_HOOKS - 1], 1) != 0 ||
         hk_loop_add_array(c->loop, "learning_rate", HK_DTYPE_F32, 0, NULL, &c->lr, HK_LOOP_NO_CHECKPOINT, &st) !=
             HK_OK ||
         hk_loop_add_array(c->loop, "val", HK_DTYPE_F32, 0, NULL, &c->val, HK_LOOP_NO_CHECKPOINT, &st) != HK_OK ||
         hk_loop_add_learning_rate(c->loop, c->hooks[MAX_HOOKS - 1], &st) != HK_OK))
      return st.code != HK_OK ? fail("adding the LearningRateHook", &st) : 1;
    if (hk_loop_start(c->loop, NULL, &st) != HK_OK) return fail("starting a host loop", &st);
    return 0;
  }
  if (c->raw) {
    /* The sessions opened before finalized the graph and initialized
     * nothing this raw session needs: the no-op reads no variable; the
     * global step is initialized by hand for the fetching case. */
    int64_t zero = 0;
    hk_tensor v = hk_tensor_scalar_i64(&zero);
    size_t index;
    if (hk_raw_session_open(&c->rs, hk_graph_executor(b->g), &st) != HK_OK) return fail("opening a raw session", &st);
    if (hk_executor_global_step(NULL, &index, hk_graph_executor(b->g), &st) != HK_OK ||
        hk_raw_session_assign_variable(c->rs, index, &v, &st) != HK_OK)
      return fail("initializing global_step", &st);
    return 0;
  }
  for (size_t i = 0; i < c->nhooks; i++) {
    hk_code rc = HK_OK;
    if (c->kind == HOOKS_NULL) {
      rc = hk_hook_new(&c->hooks[i], &null_hook_vtable, NULL, "null", NULL, &st);
    } else if (c->kind == HOOKS_EMPTY) {
      rc = hk_hook_new(&c->hooks[i], &empty_hook_vtable, NULL, "empty", NULL, &st);
    } else if (c->kind == HOOKS_EMA) {
      c->hooks[i] = b->graph_ema; /* the case frees it from here on */
      b->graph_ema = NULL;
    } else if (c->kind == HOOKS_STOP) {
      hk_stop_at_step_options o = HK_STOP_AT_STEP_OPTIONS_INIT;
      o.last_step = INT64_MAX / 2;
      rc = hk_stop_at_step_hook_new(&c->hooks[i], &o, &st);
    } else if (c->kind == HOOKS_LR) {
      if (new_lr_hook(&c->hooks[i], 0) != 0) return 1;
    } else if (c->kind == HOOKS_METRICS) {
      if (metrics_hook(b, &c->hooks[i], "session.csv") != 0) return 1;
    } else if (c->kind == HOOKS_TIME_LIMIT) {
      rc = time_limit_hook(&c->hooks[i], &st);
    }
    if (rc != HK_OK) return fail("creating a hook", &st);
  }
  so.env = &b->env;
  so.executor = hk_graph_executor(b->g);
  so.hooks = c->hooks;
  so.nhooks = c->nhooks;
  if (hk_session_new(&c->s, &so, &st) != HK_OK) return fail("creating a session", &st);
  return 0;
}

static void close_case(bench_case *c) {
  if (c->loop != NULL) {
    hk_loop_finish(c->loop, NULL);
    hk_loop_free(c->loop);
    c->loop = NULL;
  }
  if (c->s != NULL) {
    hk_session_close(c->s, HK_OK, NULL);
    hk_session_free(c->s);
    c->s = NULL;
  }
  hk_raw_session_free(c->rs);
  c->rs = NULL;
  for (size_t i = 0; i < MAX_HOOKS; i++) {
    hk_hook_free(c->hooks[i]);
    c->hooks[i] = NULL;
  }
  free(c->big);
  c->big = NULL;
}

/* The program's own step of the host-loop cases: a few dozen ns of work the
 * compiler cannot drop (the state lives in the case and is registered). */
static void user_step(float *x) {
  for (int i = 0; i < 16; i++) x[i] = x[i] * 0.999f + 0.001f * (float)i;
}

/* `n` runs of the case. @return 0 or 1 after printing the error. */
static int run_case(bench *b, bench_case *c, uint64_t n) {
  hk_status st = HK_STATUS_INIT;
  if (c->raw == BARE_STEP) {
    for (uint64_t i = 0; i < n; i++) {
      user_step(c->user);
      __asm__ volatile("" ::: "memory"); /* as opaque as the loop's calls */
    }
    return 0;
  }
  if (c->raw == HOST_LOOP) {
    for (uint64_t i = 0; i < n; i++) {
      if (hk_loop_step_begin(c->loop, NULL, &st) != HK_OK) return fail(c->label, &st);
      user_step(c->user);
      c->val = c->user[(i & 7)] * c->lr; /* the value the plateau watches, read by the hook every 100 steps */
      if (c->big) user_step(c->big);
      if (hk_loop_step_end(c->loop, &st) != HK_OK) return fail(c->label, &st);
    }
    return 0;
  }
  const int inc = c->raw == MTS || c->kind == HOOKS_INC || c->kind == HOOKS_METRICS;
  hk_run_args args = {NULL, 0, NULL, 0, inc ? &b->inc : &b->noop, 1, NULL};
  hk_tensor result;
  if (c->raw == RAW && c->fetch_gs) {
    args.fetches = &b->gs;
    args.nfetches = 1;
  }
  for (uint64_t i = 0; i < n; i++) {
    hk_code rc =
        c->raw == RAW ? hk_raw_session_run(c->rs, &args, &result, NULL, &st) : hk_session_run(c->s, &args, NULL, NULL, &st);
    if (rc != HK_OK) return fail(c->label, &st);
  }
  return 0;
}

static int time_case(bench *b, bench_case *c, uint64_t iters) {
  unsigned long long a0 = atomic_load(&b->count.allocs);
  double t0 = now_secs(), ns;
  if (run_case(b, c, iters) != 0) return 1;
  ns = (now_secs() - t0) * 1e9 / (double)iters;
  c->allocs += atomic_load(&b->count.allocs) - a0;
  if (c->best_ns < 0 || ns < c->best_ns) c->best_ns = ns;
  return 0;
}

static int parse_u64(const char *flag, const char *text, uint64_t *out) {
  char *end;
  unsigned long long v;
  errno = 0;
  v = strtoull(text, &end, 10);
  if (*text == '-' || end == text || *end != '\0' || errno == ERANGE || v == 0) {
    fprintf(stderr, "step_overhead: invalid value '%s' for %s: expected a positive integer\n", text, flag);
    return 2;
  }
  *out = v;
  return 0;
}

static const bench_case *find(const bench *b, const char *label) {
  for (size_t i = 0; i < b->ncases; i++)
    if (strcmp(b->cases[i].label, label) == 0) return &b->cases[i];
  return NULL;
}

static void report(const bench *b, uint64_t iters, uint64_t reps) {
  const double floor_ns = find(b, "floor")->best_ns;
  const double s0 = find(b, "session, 0 hooks")->best_ns;
  const double n10 = find(b, "session, 10 NULL-slot hooks")->best_ns;
  const double e10 = find(b, "session, 10 empty hooks")->best_ns;
  const double per_null = (n10 - s0) / 10.0, per_empty = (e10 - s0) / 10.0;
  unsigned long long allocs = 0;
  const char *bt = HOOKED_BENCH_BUILD_TYPE;

  printf("hooked %s step_overhead: %" PRIu64 " runs x %" PRIu64
         " repetitions per case, best "
         "repetition; build type %s\n",
         hk_version(), iters, reps, *bt ? bt : "(none: unoptimized)");
  printf("%-30s %9s %9s %12s %12s %7s\n", "case", "ns/step", "x floor", "ns/hook", "ns/hook", "allocs");
  printf("%-30s %9s %9s %12s %12s %7s\n", "", "", "", "over floor", "over 0 hooks", "");
  for (size_t i = 0; i < b->ncases; i++) {
    const bench_case *c = &b->cases[i];
    char over_floor[32] = "-", over_s0[32] = "-";
    if (c->raw == SESSION && c->nhooks > 0) {
      snprintf(over_floor, sizeof over_floor, "%.1f", (c->best_ns - floor_ns) / (double)c->nhooks);
      snprintf(over_s0, sizeof over_s0, "%.1f", (c->best_ns - s0) / (double)c->nhooks);
    }
    printf("%-30s %9.1f %8.2fx %12s %12s %7llu\n", c->label, c->best_ns, c->best_ns / floor_ns, over_floor, over_s0,
           c->allocs);
    allocs += c->allocs;
  }
  {
    const double bare = find(b, "bare program step")->best_ns;
    const double l0 = find(b, "host loop, 0 hooks")->best_ns;
    const double l1 = find(b, "host loop, 1 empty hook")->best_ns;
    const double l10 = find(b, "host loop, 10 empty hooks")->best_ns;
    printf("\nhost loop around the program's step: %.1f ns/step with 0 hooks, %.1f with 1, %.1f with 10 "
           "(%.2fx, %.2fx, %.2fx the bare step's %.1f ns)\n",
           l0 - bare, l1 - bare, l10 - bare, l0 / bare, l1 / bare, l10 / bare, bare);
  }
  printf("MonitoredTrainingSession with its default hooks (StepCounter and SummarySaver every 100 steps, "
         "CheckpointSaver every 600 s), running a train op that increments global_step: %.1f ns/step, %.1f over a "
         "0-hook session\n",
         find(b, "MonitoredTrainingSession")->best_ns, find(b, "MonitoredTrainingSession")->best_ns - s0);
  {
    const double ref = find(b, "session, 0 hooks, train op")->best_ns;
    const double ml = find(b, "session, MetricsLog hook")->best_ns;
    const double l0 = find(b, "host loop, 0 hooks")->best_ns;
    const double lml = find(b, "host loop, MetricsLog hook")->best_ns;
    printf("MetricsLogHook (a CSV row of global_step every 100 steps): %.1f ns/step over a session running the same "
           "train op with no hooks (%.2fx), %.1f ns/step over the host loop with no hooks (%.2fx)\n",
           ml - ref, ml / ref, lml - l0, lml / l0);
  }
  {
    const double l0 = find(b, "host loop, 0 hooks")->best_ns;
    const double le = find(b, "host loop, EMA of 16 floats")->best_ns;
    const double lb = find(b, "host loop, EMA of 65536 floats")->best_ns;
    printf("ExponentialMovingAverage hook: %.1f ns/step on a session (16 floats, over 0 hooks); on the host loop "
           "%.1f ns/step for 16 floats, %.1f ns/step for %d floats (%.2f ns/float), over 0 hooks\n",
           find(b, "session, EMA of 16 floats")->best_ns - s0, le - l0, lb - l0, EMA_BIG,
           (lb - l0) / (double)EMA_BIG);
  }
  printf("session with no hooks: %.1f ns/step over the floor\n", s0 - floor_ns);
  printf("LearningRateHook (cosine after a warmup, the rate written before every step): %.1f ns/step on a session "
         "(over 0 hooks); %.1f ns/step on the host loop with reduce-on-plateau every 100 steps (over 0 hooks)\n",
         find(b, "session, LearningRate hook")->best_ns - s0,
         find(b, "host loop, LearningRate hook")->best_ns - find(b, "host loop, 0 hooks")->best_ns);
  printf("TimeLimitHook (one clock read per step): %.1f ns/step over a 0-hook session, %.1f over a 0-hook host loop\n",
         find(b, "session, TimeLimitHook")->best_ns - s0,
         find(b, "host loop, TimeLimitHook")->best_ns - find(b, "host loop, 0 hooks")->best_ns);
  printf(
      "per-hook overhead (10 hooks, over 0 hooks): %.1f ns NULL-slot, %.1f ns empty "
      "callbacks (goal <= %.0f): %s\n",
      per_null, per_empty, GOAL_NS_PER_HOOK,
      per_null <= GOAL_NS_PER_HOOK && per_empty <= GOAL_NS_PER_HOOK ? "met" : "NOT met");
  printf(
      "allocations in the timed loops: %llu (goal 0): %s; the same counter saw %llu during "
      "setup and warm-up\n",
      allocs, allocs == 0 ? "met" : "NOT met", b->setup_allocs);
  fflush(stdout);
}

int main(int argc, char **argv) {
  bench_case cases[] = {
      {"floor", 1, 0, HOOKS_NONE, 0, NULL, NULL, {NULL}, NULL, {0}, -1, 0, 0, 0, NULL},
      {"floor + fetch global_step", 1, 1, HOOKS_NONE, 0, NULL, NULL, {NULL}, NULL, {0}, -1, 0, 0, 0, NULL},
      {"session, 0 hooks", 0, 0, HOOKS_NONE, 0, NULL, NULL, {NULL}, NULL, {0}, -1, 0, 0, 0, NULL},
      {"session, 1 NULL-slot hook", 0, 0, HOOKS_NULL, 1, NULL, NULL, {NULL}, NULL, {0}, -1, 0, 0, 0, NULL},
      {"session, 10 NULL-slot hooks", 0, 0, HOOKS_NULL, 10, NULL, NULL, {NULL}, NULL, {0}, -1, 0, 0, 0, NULL},
      {"session, 1 empty hook", 0, 0, HOOKS_EMPTY, 1, NULL, NULL, {NULL}, NULL, {0}, -1, 0, 0, 0, NULL},
      {"session, 10 empty hooks", 0, 0, HOOKS_EMPTY, 10, NULL, NULL, {NULL}, NULL, {0}, -1, 0, 0, 0, NULL},
      {"session, StopAtStep hook", 0, 0, HOOKS_STOP, 1, NULL, NULL, {NULL}, NULL, {0}, -1, 0, 0, 0, NULL},
      {"MonitoredTrainingSession", MTS, 0, HOOKS_NONE, 0, NULL, NULL, {NULL}, NULL, {0}, -1, 0, 0, 0, NULL},
      {"bare program step", BARE_STEP, 0, HOOKS_NONE, 0, NULL, NULL, {NULL}, NULL, {0}, -1, 0, 0, 0, NULL},
      {"host loop, 0 hooks", HOST_LOOP, 0, HOOKS_NONE, 0, NULL, NULL, {NULL}, NULL, {0}, -1, 0, 0, 0, NULL},
      {"host loop, 1 empty hook", HOST_LOOP, 0, HOOKS_EMPTY, 1, NULL, NULL, {NULL}, NULL, {0}, -1, 0, 0, 0, NULL},
      {"host loop, 10 empty hooks", HOST_LOOP, 0, HOOKS_EMPTY, 10, NULL, NULL, {NULL}, NULL, {0}, -1, 0, 0, 0, NULL},
      {"session, LearningRate hook", 0, 0, HOOKS_LR, 1, NULL, NULL, {NULL}, NULL, {0}, -1, 0, 0, 0, NULL},
      {"host loop, LearningRate hook", HOST_LOOP, 0, HOOKS_LR, 0, NULL, NULL, {NULL}, NULL, {0}, -1, 0, 0, 0, NULL},
      {"session, 0 hooks, train op", 0, 0, HOOKS_INC, 0, NULL, NULL, {NULL}, NULL, {0}, -1, 0, 0, 0, NULL},
      {"session, MetricsLog hook", 0, 0, HOOKS_METRICS, 1, NULL, NULL, {NULL}, NULL, {0}, -1, 0, 0, 0, NULL},
      {"host loop, MetricsLog hook", HOST_LOOP, 0, HOOKS_METRICS, 1, NULL, NULL, {NULL}, NULL, {0}, -1, 0, 0, 0, NULL},
      {"session, EMA of 16 floats", 0, 0, HOOKS_EMA, 1, NULL, NULL, {NULL}, NULL, {0}, -1, 0, 0, 0, NULL},
      {"host loop, EMA of 16 floats", HOST_LOOP, 0, HOOKS_EMA, 1, NULL, NULL, {NULL}, NULL, {0}, -1, 0, 0, 0, NULL},
      {"host loop, EMA of 65536 floats", HOST_LOOP, 0, HOOKS_EMA_BIG, 1, NULL, NULL, {NULL}, NULL, {0}, -1, 0, 0, 0,
       NULL},
      {"session, TimeLimitHook", 0, 0, HOOKS_TIME_LIMIT, 1, NULL, NULL, {NULL}, NULL, {0}, -1, 0, 0, 0, NULL},
      {"host loop, TimeLimitHook", HOST_LOOP, 0, HOOKS_TIME_LIMIT, 1, NULL, NULL, {NULL}, NULL, {0}, -1, 0, 0, 0, NULL},
  };
  const size_t ncases = sizeof cases / sizeof cases[0];
  bench b;
  uint64_t iters = 2000000, reps = 5;
  int status = 1;

  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      printf(
          "usage: step_overhead [--iters N] [--reps N]\n"
          "  --iters N   runs per case and repetition (default 2000000)\n"
          "  --reps N    repetitions; the best is reported (default 5)\n");
      return 0;
    }
    if ((strcmp(a, "--iters") == 0 || strcmp(a, "--reps") == 0) && i + 1 < argc) {
      if (parse_u64(a, argv[i + 1], strcmp(a, "--iters") == 0 ? &iters : &reps) != 0) return 2;
      i++;
      continue;
    }
    fprintf(stderr, "step_overhead: unknown or incomplete option '%s'\nTry 'step_overhead --help'.\n", a);
    return 2;
  }

  memset(&b, 0, sizeof b);
  atomic_init(&b.count.allocs, 0);
  hk_env_init(&b.env, HK_ENV_VERSION);
  b.env.allocator.alloc = count_alloc;
  b.env.allocator.realloc = count_realloc;
  b.env.allocator.free = count_free;
  b.env.allocator.user = &b.count;
  b.env.log_level = HK_LOG_WARNING;
  b.cases = cases;
  b.ncases = ncases;

  if (build_graph(&b) != 0) goto out;
  /* Sessions first: the first one's Scaffold finalizes the graph, which the
   * raw sessions of the floor cases then open as is. */
  for (size_t i = 0; i < ncases; i++)
    if (cases[i].raw == SESSION && open_case(&b, &cases[i]) != 0) goto out;
  for (size_t i = 0; i < ncases; i++)
    if (cases[i].raw != SESSION && open_case(&b, &cases[i]) != 0) goto out;
  /* The metrics log cases warm up past their first two rows (at steps 100
   * and 200): a row's run fetches more, and is planned once. */
  for (size_t i = 0; i < ncases; i++)
    if (run_case(&b, &cases[i], cases[i].kind == HOOKS_METRICS ? 250 : WARMUP_RUNS) != 0) goto out;
  b.setup_allocs = atomic_load(&b.count.allocs);
  for (uint64_t r = 0; r < reps; r++)
    for (size_t i = 0; i < ncases; i++)
      if (time_case(&b, &cases[i], iters) != 0) goto out;
  report(&b, iters, reps);
  status = 0;
  for (size_t i = 0; i < ncases; i++)
    if (cases[i].allocs != 0) status = 1;

out:
  for (size_t i = 0; i < ncases; i++) close_case(&cases[i]);
  hk_graph_free(b.g);
  hk_hook_free(b.graph_ema);
  if (b.dir[0]) remove_tree(b.dir);
  if (b.mdir[0]) remove_tree(b.mdir);
  return status;
}
