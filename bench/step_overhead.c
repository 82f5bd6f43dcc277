/*
 * step_overhead — what a session and its hooks add to one executor run.
 *
 * Times, in one process, tight loops of runs of a trivial op (a no-op group,
 * or a train op that increments the global step), each case against its
 * fair reference (the same loop without what the case adds):
 *   - the floor: hk_raw_session_run of the no-op on a raw session, no
 *     session, no hooks; the floor fetching global_step (what StopAtStep
 *     adds to the run itself) and the floor running the train op, both
 *     against the floor;
 *   - hk_session_run with no hooks, against the floor; with 1 and 10 no-op
 *     hooks, both hooks whose slots are all NULL and hooks with empty
 *     before_run/after_run callbacks, against the session with no hooks;
 *   - the StopAtStep hook (last_step never reached), the LearningRateHook
 *     (hooked/learning_rate.h: a cosine schedule after a warmup, writing a
 *     rate variable before every step) and the TimeLimitHook
 *     (hooked/time_limit.h, its limit never reached), against the session
 *     with no hooks;
 *   - the session running the train op, against the floor running it; the
 *     MetricsLogHook (hooked/metrics_log.h: a CSV row of the global step
 *     every 100 steps) and MonitoredTrainingSession with its default hooks,
 *     against the session running the train op with no hooks;
 *   - the host loop (hooked/loop.h) around a program's own step: the bare
 *     step alone in a plain loop is the reference of hk_loop_step_begin/end
 *     around the same step with no hooks, which is the reference of the same
 *     loop with 1 and 10 empty hooks, the LearningRateHook (reduce-on-plateau
 *     on a registered value every 100 steps, its state registered), the
 *     MetricsLogHook and the TimeLimitHook;
 *   - an ExponentialMovingAverage hook (hooked/ema.h): on a session over the
 *     graph averaging 16 floats, against the session with no hooks; on the
 *     host loop averaging the program's 16 floats, against the loop with no
 *     hooks, and averaging 65536 floats, against the loop with no hooks and
 *     the same 65536 floats registered (itself against the loop with no
 *     hooks).
 * The run has --rounds rounds; in each round every case runs --iters times,
 * in an order rotated by one each round (round r starts at case r mod the
 * number of cases), so that drift and position hit every case alike. Each
 * case reports, over the rounds, min / median / max of its time per step
 * divided by its reference's in the same round, and of the difference in
 * ns per step, on two clocks: the wall clock (CLOCK_MONOTONIC) and the
 * thread's CPU time (CLOCK_THREAD_CPUTIME_ID), which time the other
 * processes of a loaded machine take from the bench does not inflate. Every
 * round's time per step of every case is printed as well (no best-of-N: a
 * best time hides what load did to the run). Allocations are counted by a counting allocator in the env
 * of the graph and of every session, over the timed loops only (after a
 * warm-up).
 *
 * Goals (issue): at most 50 ns per hook per step, and no allocation. Exit
 * status: 0 when no timed loop allocated, 1 otherwise or on error, 2 for a
 * usage error. The timing goal is reported, not enforced: timings depend on
 * the machine and its load.
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
  HOOKS_NONE,
  HOOKS_NULL,
  HOOKS_EMPTY,
  HOOKS_STOP,
  HOOKS_LR,
  HOOKS_METRICS,
  HOOKS_EMA,
  HOOKS_TIME_LIMIT
} hook_kind;

#define EMA_BIG 65536   /* floats of the large host-loop array */
#define BIG_DIVISOR 100 /* the big_array cases run --iters / this per round: their steps take microseconds */

/* A TimeLimitHook that never fires during the bench (hooked/time_limit.h). */
static hk_code time_limit_hook(hk_hook **out, hk_status *st) {
  hk_time_limit_options o = HK_TIME_LIMIT_OPTIONS_INIT;
  o.duration_secs = 1e9;
  return hk_time_limit_hook_new(out, &o, st);
}

typedef enum case_kind { SESSION = 0, RAW = 1, BARE_STEP = 2, HOST_LOOP = 3, MTS = 4 } case_kind;

typedef struct bench_case {
  const char *label;
  case_kind where;
  int fetch_gs; /* raw only: also fetch global_step */
  int train_op; /* run the op that increments global_step, not the no-op */
  hook_kind kind;
  size_t nhooks;
  int big_array;   /* host loop: also register EMA_BIG floats (averaged by HOOKS_EMA) */
  const char *ref; /* the label of its reference, NULL for none */
  /* state */
  const struct bench_case *reference;
  hk_raw_session *rs;
  hk_session *s;
  hk_hook *hooks[MAX_HOOKS];
  hk_loop *loop;
  float user[16]; /* the program's own state, stepped by user_step */
  float lr, val;  /* the host loop's registered rate and watched value */
  float *big;     /* big_array: the program's EMA_BIG floats */
  double *ns;     /* wall-clock ns per step, one per round */
  double *cpu;    /* the thread's CPU ns per step, one per round */
  unsigned long long allocs;
} bench_case;

/* Every case, in the order of the first round. A case's reference is the
 * same loop without what the case adds. */
#define CASE(l, w, f, t, k, n, r) \
  { .label = l, .where = w, .fetch_gs = f, .train_op = t, .kind = k, .nhooks = n, .ref = r }
#define BIG_CASE(l, k, n, r) \
  { .label = l, .where = HOST_LOOP, .kind = k, .nhooks = n, .big_array = 1, .ref = r }
static const bench_case case_table[] = {
    CASE("floor", RAW, 0, 0, HOOKS_NONE, 0, NULL),
    CASE("floor + fetch global_step", RAW, 1, 0, HOOKS_NONE, 0, "floor"),
    CASE("floor, train op", RAW, 0, 1, HOOKS_NONE, 0, "floor"),
    CASE("session, 0 hooks", SESSION, 0, 0, HOOKS_NONE, 0, "floor"),
    CASE("session, 1 NULL-slot hook", SESSION, 0, 0, HOOKS_NULL, 1, "session, 0 hooks"),
    CASE("session, 10 NULL-slot hooks", SESSION, 0, 0, HOOKS_NULL, 10, "session, 0 hooks"),
    CASE("session, 1 empty hook", SESSION, 0, 0, HOOKS_EMPTY, 1, "session, 0 hooks"),
    CASE("session, 10 empty hooks", SESSION, 0, 0, HOOKS_EMPTY, 10, "session, 0 hooks"),
    CASE("session, StopAtStep hook", SESSION, 0, 0, HOOKS_STOP, 1, "session, 0 hooks"),
    CASE("session, LearningRate hook", SESSION, 0, 0, HOOKS_LR, 1, "session, 0 hooks"),
    CASE("session, TimeLimitHook", SESSION, 0, 0, HOOKS_TIME_LIMIT, 1, "session, 0 hooks"),
    CASE("session, 0 hooks, train op", SESSION, 0, 1, HOOKS_NONE, 0, "floor, train op"),
    CASE("session, MetricsLog hook", SESSION, 0, 1, HOOKS_METRICS, 1, "session, 0 hooks, train op"),
    CASE("MonitoredTrainingSession", MTS, 0, 1, HOOKS_NONE, 0, "session, 0 hooks, train op"),
    CASE("bare program step", BARE_STEP, 0, 0, HOOKS_NONE, 0, NULL),
    CASE("host loop, 0 hooks", HOST_LOOP, 0, 0, HOOKS_NONE, 0, "bare program step"),
    CASE("host loop, 1 empty hook", HOST_LOOP, 0, 0, HOOKS_EMPTY, 1, "host loop, 0 hooks"),
    CASE("host loop, 10 empty hooks", HOST_LOOP, 0, 0, HOOKS_EMPTY, 10, "host loop, 0 hooks"),
    CASE("host loop, LearningRate hook", HOST_LOOP, 0, 0, HOOKS_LR, 1, "host loop, 0 hooks"),
    CASE("host loop, MetricsLog hook", HOST_LOOP, 0, 0, HOOKS_METRICS, 1, "host loop, 0 hooks"),
    CASE("host loop, TimeLimitHook", HOST_LOOP, 0, 0, HOOKS_TIME_LIMIT, 1, "host loop, 0 hooks"),
    CASE("session, EMA of 16 floats", SESSION, 0, 0, HOOKS_EMA, 1, "session, 0 hooks"),
    CASE("host loop, EMA of 16 floats", HOST_LOOP, 0, 0, HOOKS_EMA, 1, "host loop, 0 hooks"),
    BIG_CASE("host loop, 0 hooks, 65536 floats", HOOKS_NONE, 0, "host loop, 0 hooks"),
    BIG_CASE("host loop, EMA of 65536 floats", HOOKS_EMA, 1, "host loop, 0 hooks, 65536 floats"),
};
#undef CASE
#undef BIG_CASE
#define NCASES (sizeof case_table / sizeof case_table[0])

typedef struct bench {
  counter count;
  hk_env env;
  hk_graph *g;
  hk_handle noop, gs, inc; /* inc: the global step + 1, the train op */
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

/* The calling thread's CPU time: what the case itself used, whatever the
 * rest of the machine was doing. */
static double thread_cpu_secs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
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
 * program's array ("big" when the case has one, else "user"). */
static hk_code add_loop_ema(bench_case *c, hk_status *st) {
  static const char *const user[1] = {"user"}, *const big[1] = {"big"};
  hk_ema_options eo = HK_EMA_OPTIONS_INIT;
  eo.variables = c->big_array ? big : user;
  eo.nvariables = 1;
  eo.decay = 0.99;
  if (hk_ema_hook_new(&c->hooks[0], &eo, st) != HK_OK) return st->code;
  return hk_loop_add_ema(c->loop, c->hooks[0], st);
}

static int open_case(bench *b, bench_case *c) {
  hk_status st = HK_STATUS_INIT;
  hk_session_options so = HK_SESSION_OPTIONS_INIT;

  if (c->where == BARE_STEP) return 0;
  if (c->where == MTS) {
    /* MonitoredTrainingSession with its defaults: StepCounter every 100
     * steps and SummarySaver every 100 (both writing into dir), and a
     * CheckpointSaver every 600 s (one save at creation). */
    hk_training_session_options to = HK_TRAINING_SESSION_OPTIONS_INIT;
    snprintf(b->dir, sizeof b->dir, "/tmp/hooked-bench-XXXXXX");
    if (!mkdtemp(b->dir)) {
      fprintf(stderr, "step_overhead: mkdtemp: %s\n", strerror(errno));
      b->dir[0] = '\0';
      return 1;
    }
    to.env = &b->env;
    to.executor = hk_graph_executor(b->g);
    to.checkpoint_dir = b->dir;
    if (hk_training_session_new(&c->s, &to, &st) != HK_OK) return fail("creating a MonitoredTrainingSession", &st);
    return 0;
  }
  if (c->where == HOST_LOOP) {
    /* Every host-loop case registers the same arrays (the program's state,
     * the rate and the watched value), so that each differs from its
     * reference only by its hooks. */
    hk_loop_options lo = HK_LOOP_OPTIONS_INIT;
    static const int64_t dims[1] = {16}, big_dims[1] = {EMA_BIG};
    if (c->big_array && !(c->big = calloc(EMA_BIG, sizeof *c->big))) {
      fprintf(stderr, "step_overhead: %s: out of memory\n", c->label);
      return 1;
    }
    if (c->kind == HOOKS_EMPTY)
      for (size_t i = 0; i < c->nhooks; i++)
        if (hk_hook_new(&c->hooks[i], &empty_hook_vtable, NULL, "empty", NULL, &st) != HK_OK)
          return fail("creating a hook", &st);
    if (c->kind == HOOKS_METRICS && metrics_hook(b, &c->hooks[0], "loop.csv") != 0) return 1;
    if (c->kind == HOOKS_LR && new_lr_hook(&c->hooks[0], 1) != 0) return 1;
    if (c->kind == HOOKS_TIME_LIMIT && time_limit_hook(&c->hooks[0], &st) != HK_OK)
      return fail("creating a TimeLimitHook", &st);
    lo.env = &b->env;
    lo.hooks = c->hooks;
    lo.nhooks = c->kind == HOOKS_EMPTY || c->kind == HOOKS_TIME_LIMIT ? c->nhooks : 0;
    lo.handle_signals = 0;
    if (hk_loop_new(&c->loop, &lo, &st) != HK_OK ||
        hk_loop_add_array(c->loop, "user", HK_DTYPE_F32, 1, dims, c->user, 0, &st) != HK_OK ||
        hk_loop_add_array(c->loop, "learning_rate", HK_DTYPE_F32, 0, NULL, &c->lr, HK_LOOP_NO_CHECKPOINT, &st) !=
            HK_OK ||
        hk_loop_add_array(c->loop, "val", HK_DTYPE_F32, 0, NULL, &c->val, HK_LOOP_NO_CHECKPOINT, &st) != HK_OK ||
        (c->big_array && hk_loop_add_array(c->loop, "big", HK_DTYPE_F32, 1, big_dims, c->big, 0, &st) != HK_OK) ||
        (c->kind == HOOKS_EMA && add_loop_ema(c, &st) != HK_OK) ||
        (c->kind == HOOKS_METRICS && hk_loop_add_metrics_log(c->loop, c->hooks[0], &st) != HK_OK) ||
        (c->kind == HOOKS_LR && hk_loop_add_learning_rate(c->loop, c->hooks[0], &st) != HK_OK) ||
        hk_loop_start(c->loop, NULL, &st) != HK_OK)
      return fail("starting a host loop", &st);
    return 0;
  }
  if (c->where == RAW) {
    /* The sessions opened before finalized the graph and initialized
     * nothing this raw session needs: the no-op reads no variable; the
     * global step is initialized by hand for the fetch and train-op cases. */
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
  free(c->ns);
  free(c->cpu);
  c->ns = NULL;
  c->cpu = NULL;
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
  if (c->where == BARE_STEP) {
    for (uint64_t i = 0; i < n; i++) {
      user_step(c->user);
      c->val = c->user[(i & 7)] * c->lr;
      __asm__ volatile("" ::: "memory"); /* as opaque as the loop's calls */
    }
    return 0;
  }
  if (c->where == HOST_LOOP) {
    for (uint64_t i = 0; i < n; i++) {
      if (hk_loop_step_begin(c->loop, NULL, &st) != HK_OK) return fail(c->label, &st);
      user_step(c->user);
      c->val = c->user[(i & 7)] * c->lr; /* the value the plateau watches, read by the hook every 100 steps */
      if (c->big) user_step(c->big);
      if (hk_loop_step_end(c->loop, &st) != HK_OK) return fail(c->label, &st);
    }
    return 0;
  }
  hk_run_args args = {NULL, 0, NULL, 0, c->train_op ? &b->inc : &b->noop, 1, NULL};
  hk_tensor result;
  if (c->where == RAW && c->fetch_gs) {
    args.fetches = &b->gs;
    args.nfetches = 1;
  }
  for (uint64_t i = 0; i < n; i++) {
    hk_code rc = c->where == RAW ? hk_raw_session_run(c->rs, &args, &result, NULL, &st)
                                 : hk_session_run(c->s, &args, NULL, NULL, &st);
    if (rc != HK_OK) return fail(c->label, &st);
  }
  return 0;
}

/* Runs of the case per round. */
static uint64_t runs_of(const bench_case *c, uint64_t iters) {
  return c->big_array ? (iters + BIG_DIVISOR - 1) / BIG_DIVISOR : iters;
}

/* One timed loop of the case in round `round`. */
static int time_case(bench *b, bench_case *c, uint64_t iters, uint64_t round) {
  const uint64_t n = runs_of(c, iters);
  unsigned long long a0 = atomic_load(&b->count.allocs);
  double t0 = now_secs(), c0 = thread_cpu_secs();
  if (run_case(b, c, n) != 0) return 1;
  c->cpu[round] = (thread_cpu_secs() - c0) * 1e9 / (double)n;
  c->ns[round] = (now_secs() - t0) * 1e9 / (double)n;
  c->allocs += atomic_load(&b->count.allocs) - a0;
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

static int cmp_double(const void *x, const void *y) {
  const double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

/* min, median and max of v[0..n), sorted in place. */
typedef struct spread {
  double min, med, max;
} spread;

static spread spread_of(double *v, size_t n) {
  spread s;
  qsort(v, n, sizeof *v, cmp_double);
  s.min = v[0];
  s.max = v[n - 1];
  s.med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
  return s;
}

/* The per-round ratios to the reference and differences from it, in
 * `ratio` and `diff` (each `rounds` long), on the wall clock or (cpu) the
 * thread's CPU clock. */
static void against_reference(const bench_case *c, int cpu, uint64_t rounds, double *ratio, double *diff, spread *r,
                              spread *d) {
  const double *mine = cpu ? c->cpu : c->ns, *ref = cpu ? c->reference->cpu : c->reference->ns;
  for (uint64_t k = 0; k < rounds; k++) {
    ratio[k] = mine[k] / ref[k];
    diff[k] = mine[k] - ref[k];
  }
  *r = spread_of(ratio, (size_t)rounds);
  *d = spread_of(diff, (size_t)rounds);
}

/* One table: every case against its reference on one clock (cpu: the
 * thread's CPU time). On the wall clock each line ends with the case's
 * allocation count. `per_hook_10` gets the median ns per hook of the
 * session's 10 NULL-slot and 10 empty hooks. */
static void table(const bench *b, int cpu, uint64_t rounds, double *ratio, double *diff, double per_hook_10[2]) {
  printf("%-33s %8s  %-33s %-22s %-26s %8s%s\n", "case", cpu ? "cpu ns" : "ns/step", "reference", "ratio min/med/max",
         "diff ns min/med/max", "ns/hook", cpu ? "" : " allocs");
  for (size_t i = 0; i < b->ncases; i++) {
    const bench_case *c = &b->cases[i];
    const double *mine = cpu ? c->cpu : c->ns;
    double own;
    char rtext[32] = "-", dtext[40] = "-", ptext[16] = "-";
    for (uint64_t k = 0; k < rounds; k++) ratio[k] = mine[k];
    own = spread_of(ratio, (size_t)rounds).med;
    if (c->reference != NULL) {
      spread r, d;
      against_reference(c, cpu, rounds, ratio, diff, &r, &d);
      snprintf(rtext, sizeof rtext, "%.2f %.2f %.2f", r.min, r.med, r.max);
      snprintf(dtext, sizeof dtext, "%.1f %.1f %.1f", d.min, d.med, d.max);
      if (c->nhooks > 0) {
        double per_hook = d.med / (double)c->nhooks;
        snprintf(ptext, sizeof ptext, "%.1f", per_hook);
        if (c->nhooks == MAX_HOOKS && c->where == SESSION) per_hook_10[c->kind == HOOKS_EMPTY] = per_hook;
      }
    }
    if (cpu)
      printf("%-33s %8.1f  %-33s %-22s %-26s %8s\n", c->label, own, c->ref ? c->ref : "-", rtext, dtext, ptext);
    else
      printf("%-33s %8.1f  %-33s %-22s %-26s %8s %6llu\n", c->label, own, c->ref ? c->ref : "-", rtext, dtext, ptext,
             c->allocs);
  }
}

static void report(const bench *b, uint64_t iters, uint64_t rounds, double *ratio, double *diff) {
  const char *bt = HOOKED_BENCH_BUILD_TYPE;
  unsigned long long allocs = 0;
  double wall_hook[2] = {0, 0}, cpu_hook[2] = {0, 0}; /* median ns per hook: NULL slots, empty callbacks */

  printf("hooked %s step_overhead: iters=%" PRIu64 " rounds=%" PRIu64 " cases=%zu build_type=%s\n", hk_version(), iters,
         rounds, b->ncases, *bt ? bt : "none");
  printf("%" PRIu64 " runs per case and round (the %d-float cases: %" PRIu64
         "), the order rotated by one each round;\n"
         "ratio = ns/step of the case over its reference's in the same round, diff = the difference in ns/step;\n"
         "min / median / max over the rounds\n\n",
         iters, EMA_BIG, (iters + BIG_DIVISOR - 1) / BIG_DIVISOR);
  printf("wall clock (CLOCK_MONOTONIC):\n");
  table(b, 0, rounds, ratio, diff, wall_hook);
  printf("\nthe thread's CPU time (CLOCK_THREAD_CPUTIME_ID: time other processes take is not counted):\n");
  table(b, 1, rounds, ratio, diff, cpu_hook);
  printf("\nevery round, ns/step as wall clock/thread CPU time, rounds in the order they ran:\n");
  for (size_t i = 0; i < b->ncases; i++) {
    const bench_case *c = &b->cases[i];
    printf("  %-33s", c->label);
    for (uint64_t k = 0; k < rounds; k++) printf(" %.1f/%.1f", c->ns[k], c->cpu[k]);
    printf("\n");
    allocs += c->allocs;
  }
  printf(
      "\nper-hook overhead (session, 10 hooks, median over 0 hooks): %.1f ns NULL-slot, %.1f ns empty callbacks "
      "(goal <= %.0f): %s\n",
      wall_hook[0], wall_hook[1], GOAL_NS_PER_HOOK,
      wall_hook[0] <= GOAL_NS_PER_HOOK && wall_hook[1] <= GOAL_NS_PER_HOOK ? "met" : "NOT met");
  printf("  on the thread's CPU time: %.1f ns NULL-slot, %.1f ns empty callbacks\n", cpu_hook[0], cpu_hook[1]);
  printf("allocations in the timed loops: %llu (goal 0): %s; the same counter saw %llu during setup and warm-up\n",
         allocs, allocs == 0 ? "met" : "NOT met", b->setup_allocs);
  fflush(stdout);
}

int main(int argc, char **argv) {
  bench_case cases[NCASES];
  bench b;
  uint64_t iters = 1000000, rounds = 15;
  double *ratio = NULL, *diff = NULL;
  int status = 1;

  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      printf(
          "usage: step_overhead [--iters N] [--rounds N] [--list]\n"
          "  --iters N    runs per case and round (default 1000000)\n"
          "  --rounds N   rounds; every case runs once a round, the order rotated by one each\n"
          "               round; min / median / max over the rounds are reported (default 15)\n"
          "  --list       print the case labels, one a line, and exit\n");
      return 0;
    }
    if (strcmp(a, "--list") == 0) {
      for (size_t k = 0; k < NCASES; k++) printf("%s\n", case_table[k].label);
      return 0;
    }
    if ((strcmp(a, "--iters") == 0 || strcmp(a, "--rounds") == 0) && i + 1 < argc) {
      if (parse_u64(a, argv[i + 1], strcmp(a, "--iters") == 0 ? &iters : &rounds) != 0) return 2;
      i++;
      continue;
    }
    fprintf(stderr, "step_overhead: unknown or incomplete option '%s'\nTry 'step_overhead --help'.\n", a);
    return 2;
  }

  memset(&b, 0, sizeof b);
  memcpy(cases, case_table, sizeof cases);
  atomic_init(&b.count.allocs, 0);
  hk_env_init(&b.env, HK_ENV_VERSION);
  b.env.allocator.alloc = count_alloc;
  b.env.allocator.realloc = count_realloc;
  b.env.allocator.free = count_free;
  b.env.allocator.user = &b.count;
  b.env.log_level = HK_LOG_WARNING;
  b.cases = cases;
  b.ncases = NCASES;

  /* The bench's own buffers, outside the counted env. */
  ratio = calloc((size_t)rounds, sizeof *ratio);
  diff = calloc((size_t)rounds, sizeof *diff);
  if (ratio == NULL || diff == NULL) {
    fprintf(stderr, "step_overhead: out of memory for %" PRIu64 " rounds\n", rounds);
    goto out;
  }
  for (size_t i = 0; i < NCASES; i++) {
    cases[i].ns = calloc((size_t)rounds, sizeof *cases[i].ns);
    cases[i].cpu = calloc((size_t)rounds, sizeof *cases[i].cpu);
    if (cases[i].ns == NULL || cases[i].cpu == NULL) {
      fprintf(stderr, "step_overhead: out of memory for %" PRIu64 " rounds\n", rounds);
      goto out;
    }
    for (size_t k = 0; k < NCASES && cases[i].ref != NULL; k++)
      if (strcmp(cases[k].label, cases[i].ref) == 0) cases[i].reference = &cases[k];
    if (cases[i].ref != NULL && cases[i].reference == NULL) {
      fprintf(stderr, "step_overhead: case '%s': no case '%s' for its reference\n", cases[i].label, cases[i].ref);
      goto out;
    }
  }

  if (build_graph(&b) != 0) goto out;
  /* Sessions first: the first one's Scaffold finalizes the graph, which the
   * raw sessions of the floor cases then open as is. */
  for (size_t i = 0; i < NCASES; i++)
    if (cases[i].where == SESSION && open_case(&b, &cases[i]) != 0) goto out;
  for (size_t i = 0; i < NCASES; i++)
    if (cases[i].where != SESSION && open_case(&b, &cases[i]) != 0) goto out;
  /* The metrics log cases warm up past their first two rows (at steps 100
   * and 200): a row's run fetches more, and is planned once. */
  for (size_t i = 0; i < NCASES; i++)
    if (run_case(&b, &cases[i], cases[i].kind == HOOKS_METRICS ? 250 : WARMUP_RUNS) != 0) goto out;
  b.setup_allocs = atomic_load(&b.count.allocs);
  for (uint64_t r = 0; r < rounds; r++)
    for (size_t k = 0; k < NCASES; k++)
      if (time_case(&b, &cases[(r + k) % NCASES], iters, r) != 0) goto out;
  report(&b, iters, rounds, ratio, diff);
  status = 0;
  for (size_t i = 0; i < NCASES; i++)
    if (cases[i].allocs != 0) status = 1;

out:
  for (size_t i = 0; i < NCASES; i++) close_case(&cases[i]);
  hk_graph_free(b.g);
  hk_hook_free(b.graph_ema);
  if (b.dir[0]) remove_tree(b.dir);
  if (b.mdir[0]) remove_tree(b.mdir);
  free(ratio);
  free(diff);
  return status;
}
