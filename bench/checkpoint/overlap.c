/*
 * The checkpoint benchmark's (7), (8) and (8b): the training thread's stall
 * per save with copy-before-write, on the embedded executor and on the
 * host loop, with and without hk_loop_updates_begin().
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "bench.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OVERLAP_SAVE_STEPS 8 /* a snapshot step, the step after it, the writer's wait, plain steps */
#define READ_OVER_COPY 1.5   /* the synthetic read-only phase takes at least this many times (3) */
#define READ_WORK_MIN 16     /* multiply-adds per element read, at least: compute-bound, as a forward pass */

/* ---- (7), (8): copy-before-write ------------------------------------------------------ */

/* What the hook logs through its env, counted (the sink runs on the
 * training thread for these lines, but the writer thread may log too). */
typedef struct overlap {
  hk_env env;
  /* The writer's file I/O is held (every path call from another thread
   * waits) until the step after the snapshot is measured: (7) and (8) time
   * the copy's overlap, and leave out the write's CRC pass and page-cache
   * copies, which compete with training alike with or without overlap and
   * which (4) does not count either. */
  hk_fs_vtable fs;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int held;
  pthread_t trainer;
  atomic_ulong snapshots;   /* "Saving checkpoints for" */
  atomic_ulong completions; /* "Checkpoint finished for" */
  atomic_ulong copied_here; /* tensors the training thread copied itself, summed over saves */
  atomic_ulong detached;    /* snapshots copied in the background */
  int work;                 /* the read phase's work per element, calibrated */
  double write_wait;        /* how long the writer needs, at most (from (1)) */
  double read_secs;         /* the calibrated read phase, alone */
  double own;               /* the program's own time (read + update phases) in the last step */
  size_t ntensors;
  volatile float sink; /* the read phase's result, so it is not optimized away */
  /* (7) */
  hk_graph *g;
  hk_handle gs, read, update, bump;
  hk_saver *saver;
  hk_hook *hook;
  hk_session *session;
  /* (8) */
  unsigned char *arena; /* the host loop's arrays */
  hk_loop *loop;
  int updates; /* the program calls hk_loop_updates_begin() */
} overlap;

static void gate_wait(overlap *o) {
  if (pthread_equal(pthread_self(), o->trainer)) return;
  pthread_mutex_lock(&o->mu);
  while (o->held) pthread_cond_wait(&o->cv, &o->mu);
  pthread_mutex_unlock(&o->mu);
}

static void gate_set(overlap *o, int held) {
  pthread_mutex_lock(&o->mu);
  o->held = held;
  pthread_cond_broadcast(&o->cv);
  pthread_mutex_unlock(&o->mu);
}

/* POSIX, with every call that names a path held by the gate. */
static hk_code g_open_read(void *u, const char *path, hk_fs_file **out, hk_status *st) {
  gate_wait(u);
  return hk_fs_posix()->open_read(u, path, out, st);
}
static hk_code g_create_excl(void *u, const char *path, hk_fs_file **out, hk_status *st) {
  gate_wait(u);
  return hk_fs_posix()->create_excl(u, path, out, st);
}
static hk_code g_sync_dir(void *u, const char *path, hk_status *st) {
  gate_wait(u);
  return hk_fs_posix()->sync_dir(u, path, st);
}
static hk_code g_rename(void *u, const char *from, const char *to, hk_status *st) {
  gate_wait(u);
  return hk_fs_posix()->rename(u, from, to, st);
}
static hk_code g_unlink(void *u, const char *path, hk_status *st) {
  gate_wait(u);
  return hk_fs_posix()->unlink(u, path, st);
}
static hk_code g_stat(void *u, const char *path, hk_fs_stat *out, hk_status *st) {
  gate_wait(u);
  return hk_fs_posix()->stat(u, path, out, st);
}
static hk_code g_list(void *u, const char *path, hk_fs_list_fn fn, void *fn_user, hk_status *st) {
  gate_wait(u);
  return hk_fs_posix()->list(u, path, fn, fn_user, st);
}
static hk_code g_mkdir(void *u, const char *path, hk_status *st) {
  gate_wait(u);
  return hk_fs_posix()->mkdir(u, path, st);
}

static void count_sink(void *user, hk_log_level level, const char *msg) {
  overlap *o = user;
  if (strstr(msg, "Saving checkpoints for ") != NULL) atomic_fetch_add(&o->snapshots, 1);
  if (strstr(msg, "Checkpoint finished for ") != NULL) atomic_fetch_add(&o->completions, 1);
  const char *c = strstr(msg, "the training thread copied ");
  if (c != NULL) {
    atomic_fetch_add(&o->copied_here, strtoul(c + strlen("the training thread copied "), NULL, 10));
    atomic_fetch_add(&o->detached, 1);
  }
  if (level >= HK_LOG_WARNING) fprintf(stderr, PROG ": %s\n", msg);
}

/* The read-only phase over n floats: `work` multiply-adds per element in
 * four independent chains, so it is compute-bound like a forward pass
 * rather than a stream of loads. */
static float read_floats(const float *p, size_t n, int work) {
  float a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    float x0 = p[i], x1 = p[i + 1], x2 = p[i + 2], x3 = p[i + 3];
    for (int k = 0; k < work; k++) {
      x0 = x0 * 0.999f + 0.25f;
      x1 = x1 * 0.999f + 0.25f;
      x2 = x2 * 0.999f + 0.25f;
      x3 = x3 * 0.999f + 0.25f;
    }
    a0 += x0, a1 += x1, a2 += x2, a3 += x3;
  }
  for (; i < n; i++) a0 += p[i];
  return a0 + a1 + a2 + a3;
}

/* The update phase: every element written. */
static void write_floats(float *p, size_t n) {
  for (size_t i = 0; i < n; i++) p[i] = p[i] * 0.999f + 0.001f;
}

/* Each tensor of the state, in order: its byte size and offset in an arena. */
static size_t tensor_bytes(const bench *b, size_t k, size_t *offset) {
  size_t off = 0, c = 0, i = k;
  while (c < NCLASSES && i >= classes[c].count) {
    off += classes[c].count * b->class_bytes[c];
    i -= classes[c].count;
    c++;
  }
  *offset = off + i * b->class_bytes[c];
  return k == b->ntensors - 1 ? b->bytes - *offset : b->class_bytes[c];
}

static void tensor_name(size_t k, char *buf, size_t cap) {
  size_t c = 0, i = k;
  while (i >= classes[c].count) i -= classes[c].count, c++;
  snprintf(buf, cap, "%s/%04zu", classes[c].label, i);
}

/* Choose the read phase's work: at least READ_WORK_MIN multiply-adds per
 * element, and enough to take READ_OVER_COPY times one memcpy of the state
 * (`forced` > 0: that, as given). */
static void calibrate_read(bench *b, overlap *o, double copy, int forced) {
  double want = READ_OVER_COPY * copy, t = 0;
  o->work = forced > 0 ? forced : READ_WORK_MIN;
  for (int round = 0; round < 8; round++) {
    double t0 = now_secs();
    o->sink = read_floats((const float *)(const void *)o->arena, b->bytes / 4, o->work);
    t = now_secs() - t0;
    if (t >= want || forced > 0) break;
    o->work = (int)((double)o->work * want / t * 1.05) + 1;
  }
  o->read_secs = t;
}

static hk_code read_kernel(void *user, hk_kernel_context *ctx, const hk_tensor *in, size_t nin, hk_tensor *out,
                           size_t nout, hk_status *st) {
  overlap *o = user;
  float acc = 0;
  double t0 = now_secs();
  (void)ctx, (void)nout, (void)st;
  for (size_t k = 0; k < nin; k++) acc += read_floats(in[k].data, in[k].nbytes / 4, o->work);
  *(float *)out[0].data = acc;
  o->own += now_secs() - t0;
  return HK_OK;
}

static hk_code update_kernel(void *user, hk_kernel_context *ctx, const hk_tensor *in, size_t nin, hk_tensor *out,
                             size_t nout, hk_status *st) {
  overlap *o = user;
  double t0 = now_secs();
  (void)in, (void)nin, (void)out, (void)nout, (void)st;
  for (size_t k = 0; k < o->ntensors; k++) {
    hk_tensor *v = hk_kernel_context_variable(ctx, k);
    write_floats(v->data, v->nbytes / 4);
  }
  o->own += now_secs() - t0;
  return HK_OK;
}

/* (7): graph-owned variables (the graph can guard them), the global step,
 * an op reading them all and one rewriting them all; the asynchronous hook
 * in a session. */
static int open_overlap_graph(bench *b, overlap *o) {
  hk_graph_options gopts = HK_GRAPH_OPTIONS_INIT;
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  hk_checkpoint_saver_options co = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
  hk_session_options sess = HK_SESSION_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_op_def d = HK_OP_DEF_INIT;
  hk_output_spec scalar;
  hk_handle *vars, one, ctl[1];
  int64_t one_value = 1;
  hk_tensor one_t = hk_tensor_scalar_i64(&one_value);
  char name[64], *dir = path_join(b->dir, "overlap-graph");
  int rc = 1;

  vars = calloc(b->ntensors, sizeof *vars);
  if (vars == NULL || dir == NULL) goto out;
  gopts.env = &o->env;
  if (hk_graph_new(&o->g, &gopts, &st) != HK_OK) {
    hk_fail("creating the overlap graph", &st);
    goto out;
  }
  for (size_t k = 0; k < b->ntensors; k++) {
    hk_variable_def def = HK_VARIABLE_DEF_INIT;
    size_t off;
    int64_t dims[1];
    dims[0] = (int64_t)(tensor_bytes(b, k, &off) / 4);
    tensor_name(k, name, sizeof name);
    def.name = name;
    def.dtype = HK_DTYPE_F32;
    def.rank = 1;
    def.dims = dims;
    def.init.kind = HK_INIT_CONSTANT; /* every page written at the init op */
    def.init.value = 0.5;
    if (hk_graph_variable(o->g, &vars[k], &def, &st) != HK_OK) {
      hk_fail(name, &st);
      goto out;
    }
  }
  memset(&scalar, 0, sizeof scalar);
  scalar.dtype = HK_DTYPE_F32;
  d.name = "read";
  d.kernel = read_kernel;
  d.kernel_user = o;
  d.inputs = vars;
  d.ninputs = b->ntensors;
  d.outputs = &scalar;
  d.noutputs = 1;
  if (hk_graph_op(o->g, &o->read, &d, &st) != HK_OK) {
    hk_fail("building the read op", &st);
    goto out;
  }
  memset(&d, 0, sizeof d);
  d.version = HK_OP_DEF_VERSION;
  ctl[0] = o->read;
  d.name = "update";
  d.kernel = update_kernel;
  d.kernel_user = o;
  d.control_inputs = ctl;
  d.ncontrol_inputs = 1;
  d.mutates = vars;
  d.nmutates = b->ntensors;
  if (hk_graph_op(o->g, &o->update, &d, &st) != HK_OK || hk_graph_create_global_step(o->g, &o->gs, &st) != HK_OK ||
      hk_graph_constant(o->g, &one, "one", &one_t, &st) != HK_OK ||
      hk_graph_assign_add(o->g, &o->bump, "bump", o->gs, one, &st) != HK_OK) {
    hk_fail("building the update op", &st);
    goto out;
  }
  so.env = &o->env;
  so.executor = hk_graph_executor(o->g);
  so.max_to_keep = 1;
  if (hk_saver_new(&o->saver, &so, &st) != HK_OK) {
    hk_fail("creating the overlap saver", &st);
    goto out;
  }
  co.env = &o->env;
  co.checkpoint_dir = dir;
  co.save_steps = OVERLAP_SAVE_STEPS;
  co.saver = o->saver;
  co.save_graph_def = 0;
  if (hk_async_checkpoint_saver_hook_new(&o->hook, &co, &st) != HK_OK) {
    hk_fail("creating the overlap hook", &st);
    goto out;
  }
  sess.env = &o->env;
  sess.executor = hk_graph_executor(o->g);
  sess.hooks = &o->hook;
  sess.nhooks = 1;
  if (hk_session_new(&o->session, &sess, &st) != HK_OK) {
    hk_fail("creating the overlap session", &st);
    goto out;
  }
  rc = 0;
out:
  free(vars);
  free(dir);
  return rc;
}

static void close_overlap_graph(overlap *o) {
  if (o->session != NULL) {
    hk_session_close(o->session, HK_OK, NULL);
    hk_session_free(o->session);
  }
  hk_hook_free(o->hook);
  hk_saver_free(o->saver);
  hk_graph_free(o->g);
  o->session = NULL, o->hook = NULL, o->saver = NULL, o->g = NULL;
}

static int graph_step(bench *b, overlap *o, double *secs) {
  hk_status st = HK_STATUS_INIT;
  hk_handle targets[2];
  hk_run_args args = {NULL, 0, NULL, 0, targets, 2, NULL};
  double t0;
  (void)b;
  targets[0] = o->update, targets[1] = o->bump;
  o->own = 0;
  t0 = now_secs();
  if (hk_session_run(o->session, &args, NULL, NULL, &st) != HK_OK) return hk_fail("hk_session_run", &st);
  *secs = now_secs() - t0;
  return 0;
}

/* (8): the program's arrays in an arena of its own, in a host loop with
 * asynchronous checkpoints. */
static int open_overlap_loop(bench *b, overlap *o, const char *subdir) {
  hk_loop_options lo = HK_LOOP_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  char name[64], *dir = path_join(b->dir, subdir);
  int rc = 1;

  if (dir == NULL) return os_fail("allocating", "a path");
  lo.env = &o->env;
  lo.checkpoint_dir = dir;
  lo.save_steps = OVERLAP_SAVE_STEPS;
  lo.max_to_keep = 1;
  lo.async_checkpoint = 1;
  lo.handle_signals = 0;
  if (hk_loop_new(&o->loop, &lo, &st) != HK_OK) {
    hk_fail("creating the host loop", &st);
    goto out;
  }
  for (size_t k = 0; k < b->ntensors; k++) {
    size_t off, n = tensor_bytes(b, k, &off);
    int64_t dims[1];
    dims[0] = (int64_t)(n / 4);
    tensor_name(k, name, sizeof name);
    if (hk_loop_add_array(o->loop, name, HK_DTYPE_F32, 1, dims, o->arena + off, 0, &st) != HK_OK) {
      hk_fail(name, &st);
      goto out;
    }
  }
  if (hk_loop_start(o->loop, NULL, &st) != HK_OK) {
    hk_fail("hk_loop_start", &st);
    goto out;
  }
  rc = 0;
out:
  free(dir);
  return rc;
}

static int close_overlap_loop(overlap *o) {
  hk_status st = HK_STATUS_INIT;
  hk_code rc = hk_loop_finish(o->loop, &st);
  hk_loop_free(o->loop);
  o->loop = NULL;
  return rc != HK_OK ? hk_fail("hk_loop_finish", &st) : 0;
}

static int loop_step(bench *b, overlap *o, double *secs) {
  hk_status st = HK_STATUS_INIT;
  double t0 = now_secs(), t1, t2, t3, t4;
  if (hk_loop_step_begin(o->loop, NULL, &st) != HK_OK) return hk_fail("hk_loop_step_begin", &st);
  t1 = now_secs();
  o->sink = read_floats((const float *)(const void *)o->arena, b->bytes / 4, o->work);
  t2 = now_secs();
  if (o->updates && hk_loop_updates_begin(o->loop, &st) != HK_OK) return hk_fail("hk_loop_updates_begin", &st);
  t3 = now_secs();
  write_floats((float *)(void *)o->arena, b->bytes / 4);
  t4 = now_secs();
  if (hk_loop_step_end(o->loop, &st) != HK_OK) return hk_fail("hk_loop_step_end", &st);
  *secs = now_secs() - t0;
  o->own = (t2 - t1) + (t4 - t3);
  return 0;
}

/* Run steps until `nsaves` saves after the first have been measured. A step
 * in which the hook took a snapshot, with the writer idle and its I/O held,
 * is a snapshot step; the step after it overlaps the copy (then the writer
 * is let go and given time to finish); a step with the I/O held that did
 * neither and processed no completion is plain. Each step's time splits
 * into the program's own work (its read and update phases) and the rest,
 * hooked's: the session or loop calls, where a snapshot is taken, and where
 * a write waits for, or makes, a copy. Each save is measured against the
 * plain steps just before it (the machine's load drifts). */
typedef int (*overlap_step_fn)(bench *b, overlap *o, double *secs);

enum { STEP_OTHER = 0, STEP_PLAIN, STEP_SNAP, STEP_NEXT };
#define BASELINE_STEPS 4

static int measure_overlap(bench *b, overlap *o, overlap_step_fn step, size_t nsaves, overlap_result *r) {
  size_t cap = (nsaves + 1) * (OVERLAP_SAVE_STEPS + 4) * 4 + 64, n = 0, nn = 0, np = 0, k = 0;
  double *t = calloc(cap, sizeof *t), *own = calloc(cap, sizeof *own), *plain = calloc(cap, sizeof *plain);
  double *v[5];
  int *kind = calloc(cap, sizeof *kind);
  int after_snap = 0, valid = 0, rc = 1;

  for (int i = 0; i < 5; i++) v[i] = calloc(nsaves + 1, sizeof(double));
  if (t == NULL || own == NULL || plain == NULL || kind == NULL || !v[0] || !v[1] || !v[2] || !v[3] || !v[4]) {
    fprintf(stderr, PROG ": out of memory\n");
    goto out;
  }
  while (nn < nsaves + 1) {
    unsigned long s0 = atomic_load(&o->snapshots), c0 = atomic_load(&o->completions);
    int held = o->held;
    if (n == cap) {
      fprintf(stderr, PROG ": the overlap case measured %zu saves in %zu steps\n", nn, n);
      goto out;
    }
    if (step(b, o, &t[n]) != 0) goto out;
    own[n] = o->own;
    int took = atomic_load(&o->snapshots) != s0, done = atomic_load(&o->completions) != c0;
    kind[n] = STEP_OTHER;
    if (after_snap) {
      if (valid) {
        kind[n - 1] = STEP_SNAP;
        kind[n] = STEP_NEXT;
        nn++;
      }
      gate_set(o, 0); /* the write goes on, alone */
      sleep_secs(o->write_wait);
    } else if (took) {
      valid = held; /* the writer was idle, and its I/O is held */
    } else if (held && !done) {
      kind[n] = STEP_PLAIN;
      plain[np++] = t[n];
    }
    if (done && !o->held) gate_set(o, 1);
    after_snap = took;
    n++;
  }
  gate_set(o, 0);
  if (np == 0) {
    fprintf(stderr, PROG ": no plain step to compare with\n");
    goto out;
  }
  r->plain = median(plain, np);
  /* The first save is a warm-up. */
  for (size_t i = 0, seen = 0; i < n; i++) {
    double bt[BASELINE_STEPS], bh[BASELINE_STEPS], bo[BASELINE_STEPS], mt, mh, mo;
    size_t nb = 0;
    if (kind[i] != STEP_SNAP || seen++ == 0) continue;
    for (size_t j = i; j-- > 0 && nb < BASELINE_STEPS;)
      if (kind[j] == STEP_PLAIN) bt[nb] = t[j], bh[nb] = t[j] - own[j], bo[nb] = own[j], nb++;
    for (size_t j = i + 2; j < n && nb < 2; j++)
      if (kind[j] == STEP_PLAIN) bt[nb] = t[j], bh[nb] = t[j] - own[j], bo[nb] = own[j], nb++;
    if (nb == 0) continue;
    mt = median(bt, nb), mh = median(bh, nb), mo = median(bo, nb);
    v[1][k] = (t[i] - own[i]) - mh;
    v[2][k] = (t[i + 1] - own[i + 1]) - mh;
    v[0][k] = v[1][k] + v[2][k];
    v[3][k] = own[i + 1] - mo;
    v[4][k] = t[i] + t[i + 1] - 2 * mt;
    k++;
  }
  if (k == 0) {
    fprintf(stderr, PROG ": no save to measure\n");
    goto out;
  }
  r->stall = median(v[0], k); /* sorts v[0] */
  r->stall_min = v[0][0];
  r->stall_max = v[0][k - 1];
  r->snap = median(v[1], k);
  r->next = median(v[2], k);
  r->contention = median(v[3], k);
  r->whole = median(v[4], k);
  rc = 0;
out:
  gate_set(o, 0);
  free(t), free(own), free(plain), free(kind);
  for (int i = 0; i < 5; i++) free(v[i]);
  return rc;
}

/* (7), (8) and (8b): nsaves measured saves each, after a warm-up save. */
int run_overlap_cases(bench *b, double copy, double raw, size_t nsaves, overlap_result res[3], int *work,
                      double *read_secs) {
  int forced = *work;
  overlap *o = calloc(1, sizeof *o);
  int rc = 1;

  if (o != NULL) {
    pthread_mutex_init(&o->mu, NULL);
    pthread_cond_init(&o->cv, NULL);
  }
  if (o == NULL || posix_memalign((void **)&o->arena, 64, b->bytes) != 0) {
    fprintf(stderr, PROG ": out of memory for the overlap cases\n");
    goto out;
  }
  {
    /* Ordinary floats in [-1, 1): the state's random bits would make
     * denormals and NaNs, which the read phase's arithmetic would pay for. */
    uint64_t x = 0x9E3779B97F4A7C15u;
    float *f = (float *)(void *)o->arena;
    for (size_t i = 0; i < b->bytes / 4; i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      f[i] = (float)(x >> 40) / (float)(1u << 23) - 1.0f;
    }
  }
  o->env = b->env;
  o->env.log = count_sink;
  o->env.log_user = o;
  o->env.log_level = HK_LOG_DEBUG; /* the hook's line on who copied what */
  o->fs = *hk_fs_posix();
  o->fs.open_read = g_open_read;
  o->fs.create_excl = g_create_excl;
  o->fs.sync_dir = g_sync_dir;
  o->fs.rename = g_rename;
  o->fs.unlink = g_unlink;
  o->fs.stat = g_stat;
  o->fs.list = g_list;
  o->fs.mkdir = g_mkdir;
  o->env.fs = &o->fs;
  o->env.fs_user = o;
  o->trainer = pthread_self();
  atomic_init(&o->snapshots, 0);
  atomic_init(&o->completions, 0);
  atomic_init(&o->copied_here, 0);
  atomic_init(&o->detached, 0);
  o->write_wait = raw + 0.05;
  calibrate_read(b, o, copy, forced);
  *work = o->work;
  *read_secs = o->read_secs;

  o->ntensors = b->ntensors;
  if (open_overlap_graph(b, o) != 0) goto out;
  atomic_store(&o->copied_here, 0), atomic_store(&o->detached, 0);
  if (measure_overlap(b, o, graph_step, nsaves, &res[0]) != 0) goto out;
  res[0].copied_here =
      atomic_load(&o->detached) ? (double)atomic_load(&o->copied_here) / (double)atomic_load(&o->detached) : -1;
  close_overlap_graph(o);
  for (int v = 0; v < 2; v++) {
    o->updates = v == 0;
    if (open_overlap_loop(b, o, v == 0 ? "overlap-loop" : "overlap-loop-boundary") != 0) goto out;
    atomic_store(&o->copied_here, 0), atomic_store(&o->detached, 0);
    if (measure_overlap(b, o, loop_step, nsaves, &res[1 + v]) != 0) goto out;
    res[1 + v].copied_here =
        atomic_load(&o->detached) ? (double)atomic_load(&o->copied_here) / (double)atomic_load(&o->detached) : -1;
    if (close_overlap_loop(o) != 0) goto out;
  }
  rc = 0;
out:
  if (o != NULL) {
    close_overlap_graph(o);
    if (o->loop != NULL) {
      hk_loop_finish(o->loop, NULL);
      hk_loop_free(o->loop);
    }
    free(o->arena);
    pthread_cond_destroy(&o->cv);
    pthread_mutex_destroy(&o->mu);
  }
  free(o);
  return rc;
}
