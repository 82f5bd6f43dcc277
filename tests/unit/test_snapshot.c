/*
 * Tests of copy-before-write checkpoint snapshots (contract D3.7): the
 * asynchronous hook's writer thread copies the variables while the next
 * step runs, and nothing writes a variable before its copy is made — the
 * embedded executor's ops and assignments and its close (the host loop's
 * hk_loop_updates_begin(), H42: test_loop_snapshot.c). Checkpoint N must
 * hold exactly step N's values:
 * every integration test makes the next step mutate every variable and
 * compares the checkpoints with synchronous saves of the same steps (or
 * with the program's values at that step).
 *
 * The barrier itself is tested deterministically on the snapshot object
 * (src/ckpt/snapshot.h); the end-to-end tests cannot choose how the writer
 * thread and the training thread interleave, so they check the outcome,
 * whatever the interleaving — never which thread made a copy — and run
 * under TSan (-DHOOKED_SANITIZE=thread) as well. Which saves are offered to
 * the executor is made deterministic instead: block_when_busy, or a mock
 * clock that makes a save due only once the writer is idle.
 */
#include "session_fixture.h"
#include "tmpdir.h"

#include "../../src/ckpt/snapshot.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NVARS 7
#define STEPS 12

/* ---- helpers ------------------------------------------------------------------------ */

static int files_equal(const char *a, const char *b) {
  size_t na = 0, nb = 0;
  char *x = test_read_file(a, &na), *y = test_read_file(b, &nb);
  int same = x != NULL && y != NULL && na == nb && memcmp(x, y, na) == 0;
  free(x);
  free(y);
  return same;
}

static char *data_file(const char *dir, int64_t step) {
  char name[64];
  snprintf(name, sizeof name, "model.ckpt-%lld.safetensors", (long long)step);
  return test_path(dir, name);
}

/* Every checkpoint both directories hold for steps 0..last is the same file;
 * @return how many there were. */
static int compare_dirs(const char *sync_dir, const char *async_dir, int64_t last) {
  int common = 0;
  for (int64_t s = 0; s <= last; s++) {
    char *x = data_file(sync_dir, s), *y = data_file(async_dir, s);
    if (test_path_exists(x) && test_path_exists(y)) {
      if (!files_equal(x, y)) fprintf(stderr, "checkpoint %lld differs from the synchronous save\n", (long long)s);
      assert_true(files_equal(x, y));
      common++;
    }
    free(x);
    free(y);
  }
  return common;
}

static void fill(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(seed * 31u + i * 7u + (i >> 8));
}

static int filled(const unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != (unsigned char)(seed * 31u + i * 7u + (i >> 8))) return 0;
  return 1;
}

/* ---- the barrier (snapshot.h, hk_snapshot_* of hooked/sys/executor.h) --------------- */

typedef struct items {
  size_t n;
  size_t sizes[64];
  unsigned char *src[64], *dst[64];
} items;

static void items_new(items *it, size_t n) {
  memset(it, 0, sizeof *it);
  it->n = n;
  for (size_t i = 0; i < n; i++) {
    /* 0 bytes, small ones, and some above the streaming-copy threshold */
    it->sizes[i] = i % 9 == 0 ? 0 : i % 5 == 0 ? ((size_t)300 << 10) + i : 64 * i + 3;
    it->src[i] = malloc(it->sizes[i] + 1);
    it->dst[i] = malloc(it->sizes[i] + 1);
    assert_true(it->src[i] && it->dst[i]);
  }
}

static void items_free(items *it) {
  for (size_t i = 0; i < it->n; i++) {
    free(it->src[i]);
    free(it->dst[i]);
  }
}

/* Fill the sources with round r's values, clear the destinations and arm
 * the snapshot over them; variable index of item i is 2i + 1. */
static void items_arm(items *it, hk_snapshot *s, unsigned r) {
  hk_status st = HK_STATUS_INIT;
  assert_ok(hk__snapshot_reset(s, it->n, 2 * it->n + 1, &st), &st);
  for (size_t i = 0; i < it->n; i++) {
    fill(it->src[i], it->sizes[i], r * 100 + (unsigned)i);
    memset(it->dst[i], 0, it->sizes[i]);
    hk__snapshot_add(s, 2 * i + 1, it->src[i], it->dst[i], it->sizes[i]);
  }
  hk__snapshot_arm(s);
}

static void *run_copies(void *arg) {
  hk__snapshot_run(arg);
  return NULL;
}

/* D3.7: the barrier copies a variable into the snapshot before the training thread writes it. */
static void test_snapshot__the_barrier_copies_a_variable_before_it_is_written(void **state) {
  test_env *te = test_env_new();
  hk_snapshot *s = NULL;
  hk_status st = HK_STATUS_INIT;
  items it;
  pthread_t writer;

  (void)state;
  items_new(&it, 3);
  assert_ok(hk__snapshot_new(&s, &te->env, &st), &st);
  /* Nothing armed, NULL, an index it does not hold: nothing to do. */
  hk_snapshot_before_write(NULL, 0);
  hk_snapshot_complete(NULL);
  hk_snapshot_before_write(s, 5);
  hk_snapshot_complete(s);

  items_arm(&it, s, 1);
  /* The training thread is about to write variable 3 (item 1): it copies
   * it itself, and the write that follows does not reach the snapshot. */
  hk_snapshot_before_write(s, 3);
  assert_true(filled(it.dst[1], it.sizes[1], 101));
  assert_false(filled(it.dst[2], it.sizes[2], 102)); /* not copied yet */
  fill(it.src[1], it.sizes[1], 999);
  hk_snapshot_before_write(s, 3); /* copied once only */
  hk_snapshot_before_write(s, 2); /* not a variable of the snapshot */
  assert_int_equal(hk__snapshot_copied_here(s), 1);
  /* The writer copies the others, and the one already copied is left. */
  assert_int_equal(pthread_create(&writer, NULL, run_copies, s), 0);
  pthread_join(writer, NULL);
  for (size_t i = 0; i < it.n; i++) assert_true(filled(it.dst[i], it.sizes[i], 100 + (unsigned)i));
  hk_snapshot_complete(s); /* complete: nothing to do */
  assert_int_equal(hk__snapshot_copied_here(s), 1);

  /* Armed again: complete() copies everything on this thread, and the
   * writer then finds nothing left. */
  items_arm(&it, s, 2);
  hk_snapshot_complete(s);
  assert_int_equal(hk__snapshot_copied_here(s), it.n);
  for (size_t i = 0; i < it.n; i++) fill(it.src[i], it.sizes[i], 7);
  hk__snapshot_run(s);
  for (size_t i = 0; i < it.n; i++) assert_true(filled(it.dst[i], it.sizes[i], 200 + (unsigned)i));

  hk__snapshot_free(s);
  items_free(&it);
  assert_int_equal(test_env_release(te), 0);
}

/* D3.7: the writer thread copies while this thread writes every variable in a
 * shuffled order, each after its barrier: every round's snapshot holds the
 * values from before the writes, whoever copied each item. */
static void test_snapshot__background_copies_and_concurrent_writes_keep_each_step(void **state) {
  test_env *te = test_env_new();
  hk_snapshot *s = NULL;
  hk_status st = HK_STATUS_INIT;
  items it;
  size_t order[64];
  uint64_t x = 0x2545F4914F6CDD1Dull;

  (void)state;
  items_new(&it, 40);
  assert_ok(hk__snapshot_new(&s, &te->env, &st), &st);
  for (unsigned r = 1; r <= 60; r++) {
    pthread_t writer;
    items_arm(&it, s, r);
    for (size_t i = 0; i < it.n; i++) order[i] = i;
    for (size_t i = it.n; i > 1; i--) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      size_t j = (size_t)(x % i), t = order[i - 1];
      order[i - 1] = order[j];
      order[j] = t;
    }
    assert_int_equal(pthread_create(&writer, NULL, run_copies, s), 0);
    for (size_t k = 0; k < it.n; k++) {
      size_t i = order[k];
      if (k == it.n / 2 && r % 3 == 0) hk_snapshot_complete(s); /* sometimes finish the rest at once */
      hk_snapshot_before_write(s, 2 * i + 1);
      memset(it.src[i], 0xEE, it.sizes[i]);
    }
    pthread_join(writer, NULL);
    for (size_t i = 0; i < it.n; i++) assert_true(filled(it.dst[i], it.sizes[i], r * 100 + (unsigned)i));
  }
  hk__snapshot_free(s);
  items_free(&it);
  assert_int_equal(test_env_release(te), 0);
}

/* ---- the embedded executor (D3.7) ------------------------------------------------------ */

static const int64_t var_elems[NVARS] = {1, 16, 1000, 70000, 90000, 3, 65536};

typedef struct model {
  hk_graph *g;
  hk_saver *saver;           /* keeps every checkpoint */
  hk_handle vars[NVARS + 1]; /* the last is external */
  float *external;
  hk_handle gs, read, train, bump;
  float sum;
} model;

/* Reads every variable (a step's read-only phase). */
static hk_code read_kernel(void *user, hk_kernel_context *ctx, const hk_tensor *in, size_t nin, hk_tensor *out,
                           size_t nout, hk_status *st) {
  float acc = 0;
  (void)user, (void)ctx, (void)nout, (void)st;
  for (size_t k = 0; k < nin; k++) {
    const float *p = in[k].data;
    for (size_t i = 0; i < in[k].nbytes / sizeof(float); i++) acc += p[i];
  }
  *(float *)out[0].data = acc;
  return HK_OK;
}

/* Writes every element of every variable it mutates. */
static hk_code train_kernel(void *user, hk_kernel_context *ctx, const hk_tensor *in, size_t nin, hk_tensor *out,
                            size_t nout, hk_status *st) {
  model *m = user;
  (void)in, (void)nin, (void)out, (void)nout, (void)st, (void)m;
  for (size_t k = 0; k < NVARS + 1; k++) {
    hk_tensor *v = hk_kernel_context_variable(ctx, k);
    float *p = v->data;
    for (size_t i = 0; i < v->nbytes / sizeof(float); i++) p[i] = p[i] * 0.5f + (float)(k + 1);
  }
  return HK_OK;
}

static void model_build(model *m, test_env *te) {
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_op_def d = HK_OP_DEF_INIT;
  hk_output_spec scalar;
  hk_handle one, ctl[1];
  int64_t one_value = 1;
  hk_tensor one_t = hk_tensor_scalar_i64(&one_value);
  char name[32];

  memset(m, 0, sizeof *m);
  go.env = &te->env;
  assert_ok(hk_graph_new(&m->g, &go, &st), &st);
  for (int k = 0; k <= NVARS; k++) {
    hk_variable_def v = HK_VARIABLE_DEF_INIT;
    int64_t dims[1] = {k < NVARS ? var_elems[k] : 5000};
    snprintf(name, sizeof name, "v%d", k);
    v.name = name;
    v.dtype = HK_DTYPE_F32;
    v.rank = 1;
    v.dims = dims;
    v.init.kind = HK_INIT_UNIFORM;
    v.init.seed = (uint64_t)k + 1;
    v.init.minval = -1;
    v.init.maxval = 1;
    if (k == NVARS) {
      m->external = calloc((size_t)dims[0], sizeof(float));
      for (int64_t i = 0; i < dims[0]; i++) m->external[i] = (float)i;
      v.init.kind = HK_INIT_NONE;
      v.external_data = m->external;
    }
    assert_ok(hk_graph_variable(m->g, &m->vars[k], &v, &st), &st);
  }
  assert_ok(hk_graph_create_global_step(m->g, &m->gs, &st), &st);
  memset(&scalar, 0, sizeof scalar);
  scalar.dtype = HK_DTYPE_F32;
  d.name = "read";
  d.kernel = read_kernel;
  d.inputs = m->vars;
  d.ninputs = NVARS + 1;
  d.outputs = &scalar;
  d.noutputs = 1;
  assert_ok(hk_graph_op(m->g, &m->read, &d, &st), &st);
  memset(&d, 0, sizeof d);
  d.version = HK_OP_DEF_VERSION;
  ctl[0] = m->read;
  d.name = "train";
  d.kernel = train_kernel;
  d.kernel_user = m;
  d.control_inputs = ctl;
  d.ncontrol_inputs = 1;
  d.mutates = m->vars;
  d.nmutates = NVARS + 1;
  assert_ok(hk_graph_op(m->g, &m->train, &d, &st), &st);
  assert_ok(hk_graph_constant(m->g, &one, "one", &one_t, &st), &st);
  assert_ok(hk_graph_assign_add(m->g, &m->bump, "bump", m->gs, one, &st), &st);
}

static void model_free(model *m) {
  hk_saver_free(m->saver);
  hk_graph_free(m->g);
  free(m->external);
}

static hk_code model_step(hk_session *s, model *m, hk_status *st) {
  hk_handle targets[2] = {m->train, m->bump};
  hk_run_args a = {NULL, 0, NULL, 0, targets, 2, NULL};
  return hk_session_run(s, &a, NULL, NULL, st);
}

/* A session over a fresh model with a checkpoint hook saving every step
 * into dir (asynchronous: block_when_busy, so every step saves too). */
static void open_model(test_env *te, model *m, const char *dir, int async, hk_hook **hook, hk_session **s) {
  hk_checkpoint_saver_options o = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  model_build(m, te);
  so.env = &te->env;
  so.executor = hk_graph_executor(m->g);
  so.max_to_keep = 0;
  assert_ok(hk_saver_new(&m->saver, &so, &st), &st);
  o.saver = m->saver;
  o.env = &te->env;
  o.checkpoint_dir = dir;
  o.save_steps = 1;
  o.block_when_busy = 1;
  o.save_graph_def = 0;
  assert_ok(async ? hk_async_checkpoint_saver_hook_new(hook, &o, &st) : hk_checkpoint_saver_hook_new(hook, &o, &st),
            &st);
  assert_ok(one_hook_session_new(s, &te->env, HK_SESSION_SINGULAR, hk_graph_executor(m->g), hook, NULL, &st), &st);
}

static void close_model(model *m, hk_hook *hook, hk_session *s, hk_code exit_code) {
  hk_status st = HK_STATUS_INIT;
  hk_session_close(s, exit_code, &st);
  hk_session_free(s);
  hk_hook_free(hook);
  model_free(m);
}

/* D3.7: every step's train op rewrites every variable while the writer thread
 * copies the snapshot of the step before: each checkpoint is byte for byte
 * the synchronous hook's of the same step. */
static void test_snapshot__background_copied_checkpoints_equal_synchronous_ones(void **state) {
  test_env *te = test_env_new();
  char *tmp = test_tmpdir_new("snap-graph");
  char *sdir = test_path(tmp, "sync"), *adir = test_path(tmp, "async");
  hk_status st = HK_STATUS_INIT;
  model ms, ma;
  hk_hook *hs = NULL, *ha = NULL;
  hk_session *ss = NULL, *sa = NULL;

  (void)state;
  open_model(te, &ms, sdir, 0, &hs, &ss);
  for (int i = 0; i < STEPS; i++) assert_ok(model_step(ss, &ms, &st), &st);
  close_model(&ms, hs, ss, HK_OK);

  test_log_clear(&te->log);
  open_model(te, &ma, adir, 1, &ha, &sa);
  for (int i = 0; i < STEPS; i++) assert_ok(model_step(sa, &ma, &st), &st);
  close_model(&ma, ha, sa, HK_OK);

  assert_int_equal(compare_dirs(sdir, adir, STEPS), STEPS + 1); /* 0 .. STEPS, none deferred */
  /* The copies went to the writer thread (the external variable and any
   * the train op reached first were copied on the training thread). */
  assert_int_equal(test_log_count(&te->log, HK_LOG_DEBUG, "copied in the background"), STEPS + 1);
  assert_int_equal(test_log_count(&te->log, -1, "copies no snapshot in the background"), 0);

  free(sdir);
  free(adir);
  test_tmpdir_free(tmp);
  assert_int_equal(test_env_release(te), 0);
}

/* D3.7: an assignment right after the snapshot, and the close of the raw session
 * (an unclean close: no end(), so the writer finishes while the session
 * lets go of the hook), both wait for the copy: the checkpoint holds the
 * step's values, and the copy never reads freed storage (ASan). */
static void test_snapshot__an_assign_or_close_after_the_snapshot_keeps_it(void **state) {
  test_env *te = test_env_new();
  char *tmp = test_tmpdir_new("snap-assign");
  char *sdir = test_path(tmp, "sync"), *adir = test_path(tmp, "async");
  hk_status st = HK_STATUS_INIT;
  model ms, ma;
  hk_hook *hs = NULL, *ha = NULL;
  hk_session *ss = NULL, *sa = NULL;
  float junk[90000];

  (void)state;
  for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++) junk[i] = -7.0f;
  open_model(te, &ms, sdir, 0, &hs, &ss);
  for (int i = 0; i < 3; i++) assert_ok(model_step(ss, &ms, &st), &st);
  close_model(&ms, hs, ss, HK_OK);

  open_model(te, &ma, adir, 1, &ha, &sa);
  for (int i = 0; i < 3; i++) assert_ok(model_step(sa, &ma, &st), &st); /* the last snapshots step 3 */
  {
    hk_raw_session *rs = hk_session_raw_session(sa);
    hk_executor *ex = hk_graph_executor(ma.g);
    for (int k = 0; k <= NVARS; k++) {
      hk_variable_info info;
      size_t index;
      hk_tensor t;
      char name[32];
      snprintf(name, sizeof name, "v%d", k);
      assert_ok(hk_executor_find_variable(ex, name, &index, &st), &st);
      assert_ok(hk_executor_variable_info(&info, ex, index, &st), &st);
      assert_ok(hk_tensor_init(&t, info.dtype, info.rank, info.dims, junk, &st), &st);
      assert_ok(hk_raw_session_assign_variable(rs, index, &t, &st), &st);
    }
  }
  assert_ok(model_step(sa, &ma, &st), &st); /* snapshots step 4 */
  close_model(&ma, ha, sa, HK_CANCELLED);   /* unclean: no end() */

  {
    char *x = data_file(sdir, 3), *y = data_file(adir, 3);
    assert_true(files_equal(x, y));
    free(x);
    free(y);
  }
  {
    /* Step 4 was written from the snapshot the close completed. */
    char *y = data_file(adir, 4);
    assert_true(test_path_exists(y));
    free(y);
  }
  free(sdir);
  free(adir);
  test_tmpdir_free(tmp);
  assert_int_equal(test_env_release(te), 0);
}

/* D3.7: an executor that does not take part (the fake executor answers
 * UNIMPLEMENTED) keeps the copy at the step boundary, said once. */
static void test_snapshot__executor_without_control_op_copies_at_the_boundary(void **state) {
  test_env *te = test_env_new();
  char *tmp = test_tmpdir_new("snap-fake");
  char *dir = test_path(tmp, "ck");
  hk_handle gs, train;
  hk_executor *ex = NULL;
  fake_executor *fx = fake_training_executor(te, &ex, &gs, &train);
  hk_checkpoint_saver_options o = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_hook *hook = NULL;
  hk_session *s = NULL;

  (void)state;
  o.env = &te->env;
  o.checkpoint_dir = dir;
  o.save_steps = 1;
  o.block_when_busy = 1;
  assert_ok(hk_async_checkpoint_saver_hook_new(&hook, &o, &st), &st);
  assert_ok(one_hook_session_new(&s, &te->env, HK_SESSION_SINGULAR, ex, &hook, NULL, &st), &st);
  for (int i = 0; i < 3; i++) assert_ok(session_run_train(s, train, &st), &st);
  assert_ok(hk_session_close(s, HK_OK, &st), &st);
  hk_session_free(s);
  assert_int_equal(test_log_count(&te->log, HK_LOG_DEBUG, "copies no snapshot in the background"), 1);
  assert_int_equal(test_log_count(&te->log, -1, "copied in the background"), 0);
  {
    char *y = data_file(dir, 3);
    assert_true(test_path_exists(y));
    free(y);
  }
  hk_hook_free(hook);
  fake_executor_free(fx);
  free(dir);
  test_tmpdir_free(tmp);
  assert_int_equal(test_env_release(te), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_snapshot__the_barrier_copies_a_variable_before_it_is_written),
      cmocka_unit_test(test_snapshot__background_copies_and_concurrent_writes_keep_each_step),
      cmocka_unit_test(test_snapshot__background_copied_checkpoints_equal_synchronous_ones),
      cmocka_unit_test(test_snapshot__an_assign_or_close_after_the_snapshot_keeps_it),
      cmocka_unit_test(test_snapshot__executor_without_control_op_copies_at_the_boundary),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
