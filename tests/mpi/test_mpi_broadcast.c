/*
 * hooked::mpi — BroadcastGlobalVariablesHook (H48) and the synchronous
 * worker's ready ops.
 *
 * Every rank builds the same model with rank-dependent initial values. On
 * the graph executor (MonitoredTrainingSession, the chief initializing with
 * a global step of 7, the workers with hk_mpi_sync_worker_ops()) and on the
 * host loop (hk_loop_add_array of per-rank arrays, a program-owned global
 * step), every rank holds the chief's values after the session's creation,
 * the global step included, while local variables (HK_VAR_LOCAL, the
 * loop's HK_LOOP_NO_CHECKPOINT arrays) and opaque states stay per rank. A
 * StopAtStep whose last step the chief's restored step already reached
 * stops every rank at creation without an agreement. A rank whose model
 * differs fails on every rank with FAILED_PRECONDITION naming that rank.
 *
 * loop.h has no `first_hooks` option (yet): the broadcast hook is the first
 * of the program's hooks, after the loop's own, which these loops do not
 * have (no checkpoint_dir, no stop condition).
 */
#include "mpi_test.h"

#include <stdio.h>
#include <string.h>

#include "hooked/graph.h"
#include "hooked/hooks.h"
#include "hooked/loop.h"
#include "hooked/training_session.h"

#define CHIEF_STEP 7

/* ---- the graph model ---------------------------------------------------------- */

typedef struct model {
  test_env *te;
  hk_env env; /* the test_env's allocator and log, the system clock */
  hk_mpi *mpi;
  hk_graph *g;
  hk_handle gs, w, v, l, train;
  hk_scaffold *scaffold;
  hk_hook *bcast;
  hk_hook *stop_at;
  hk_session *s;
} model;

static hk_code chief_init_fn(void *user, const hk_scaffold *scaffold, hk_raw_session *rs, hk_status *st) {
  (void)user, (void)scaffold;
  size_t index;
  hk_variable_info info;
  hk_code rc = hk_executor_global_step(&info, &index, hk_raw_session_executor(rs), st);
  if (rc != HK_OK) return rc;
  int64_t v = CHIEF_STEP;
  hk_tensor t = hk_tensor_scalar_i64(&v);
  return hk_raw_session_assign_variable(rs, index, &t, st);
}

static void add_variable(model *m, hk_handle *out, const char *name, hk_dtype dtype, int32_t rank, const int64_t *dims,
                         double value, uint32_t flags) {
  hk_variable_def def = HK_VARIABLE_DEF_INIT;
  hk_status st = HK_STATUS_INIT;
  def.name = name;
  def.dtype = dtype;
  def.rank = rank;
  def.dims = dims;
  def.init.kind = HK_INIT_CONSTANT;
  def.init.value = value;
  def.flags = flags;
  assert_ok(hk_graph_variable(m->g, out, &def, &st), &st);
}

/* w f32[3] = 1.5 (rank + 1), v f64[2] = -(rank + 1), a local l = 100 + rank,
 * the global step; rank `odd_rank` gets a w of shape [4]. */
static void model_build(model *m, int odd_rank) {
  hk_status st = HK_STATUS_INIT;
  int r = mpi_rank();
  memset(m, 0, sizeof *m);
  m->te = mpi_test_env(&m->env);
  m->mpi = mpi_test_context(&m->env);
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  go.env = &m->env;
  assert_ok(hk_graph_new(&m->g, &go, &st), &st);
  assert_ok(hk_graph_get_or_create_global_step(m->g, &m->gs, &st), &st);
  int64_t three[1] = {r == odd_rank ? 4 : 3}, two[1] = {2};
  add_variable(m, &m->w, "w", HK_DTYPE_F32, 1, three, 1.5 * (r + 1), HK_VAR_TRAINABLE);
  add_variable(m, &m->v, "v", HK_DTYPE_F64, 1, two, -(r + 1), HK_VAR_TRAINABLE);
  add_variable(m, &m->l, "l", HK_DTYPE_F32, 0, NULL, 100 + r, HK_VAR_LOCAL);
  int64_t one = 1;
  hk_tensor t = hk_tensor_scalar_i64(&one);
  hk_handle c;
  assert_ok(hk_graph_constant(m->g, &c, "one", &t, &st), &st);
  assert_ok(hk_graph_assign_add(m->g, &m->train, "train", m->gs, c, &st), &st);

  hk_scaffold_options so;
  assert_int_equal(hk_scaffold_options_init(&so, HK_SCAFFOLD_OPTIONS_VERSION), HK_OK);
  so.env = &m->env;
  if (hk_mpi_is_chief(m->mpi)) {
    so.init_fn = chief_init_fn;
  } else {
    assert_ok(hk_mpi_sync_worker_ops(m->mpi, m->g, &so.ready_op, &so.ready_for_local_init_op, &so.local_init_op, &st),
              &st);
  }
  assert_ok(hk_scaffold_new(&m->scaffold, &so, &st), &st);
  assert_ok(hk_mpi_broadcast_hook_new(&m->bcast, m->mpi, &st), &st);
}

static hk_code model_session(model *m, hk_hook **hooks, size_t nhooks, hk_status *st) {
  hk_training_session_options o;
  assert_int_equal(hk_training_session_options_init(&o, HK_TRAINING_SESSION_OPTIONS_VERSION), HK_OK);
  o.env = &m->env;
  o.executor = hk_graph_executor(m->g);
  o.is_chief = hk_mpi_is_chief(m->mpi);
  o.scaffold = m->scaffold;
  o.hooks = hooks;
  o.nhooks = nhooks;
  o.recovery_wait_secs = 0.1;
  o.max_wait_secs = 20; /* a worker that never becomes ready fails instead of hanging */
  return hk_training_session_new(&m->s, &o, st);
}

static void model_free(model *m) {
  hk_session_free(m->s);
  hk_scaffold_free(m->scaffold);
  hk_hook_free(m->bcast);
  hk_hook_free(m->stop_at);
  hk_graph_free(m->g);
  hk_mpi_free(m->mpi);
  assert_int_equal(test_env_release(m->te), 0);
}

static void test_graph_session_starts_every_rank_from_the_chiefs_variables(void) {
  model m;
  hk_status st = HK_STATUS_INIT;
  model_build(&m, -1);
  hk_hook *hooks[1] = {m.bcast};
  hk_code rc = model_session(&m, hooks, 1, &st);
  if (rc != HK_OK) test_log_dump(&m.te->log);
  assert_ok(rc, &st);
  hk_handle fetches[4] = {m.w, m.v, m.l, m.gs};
  hk_tensor out[4];
  hk_run_args args;
  memset(&args, 0, sizeof args);
  args.fetches = fetches;
  args.nfetches = 4;
  assert_ok(hk_session_run(m.s, &args, out, NULL, &st), &st);
  const float *w = out[0].data;
  const double *v = out[1].data;
  for (int i = 0; i < 3; i++) assert_true(w[i] == 1.5f);
  for (int i = 0; i < 2; i++) assert_true(v[i] == -1.0);
  assert_true(*(const float *)out[2].data == (float)(100 + mpi_rank())); /* local: per rank */
  assert_int_equal(*(const int64_t *)out[3].data, CHIEF_STEP);
  if (hk_mpi_is_chief(m.mpi)) assert_logged(m.te, HK_LOG_INFO, "Broadcast 3 variables");

  /* Training steps from there keep every rank's global step equal. */
  memset(&args, 0, sizeof args);
  args.targets = &m.train;
  args.ntargets = 1;
  for (int i = 0; i < 3; i++) assert_ok(hk_session_run(m.s, &args, NULL, NULL, &st), &st);
  memset(&args, 0, sizeof args);
  args.fetches = &m.gs;
  args.nfetches = 1;
  assert_ok(hk_session_run(m.s, &args, out, NULL, &st), &st);
  assert_int_equal(*(const int64_t *)out[0].data, CHIEF_STEP + 3);
  assert_ok(hk_session_close(m.s, HK_OK, &st), &st);
  model_free(&m);
}

/* H50: a StopAtStep after the broadcast decides on the chief's step on every
 * rank, so a job whose restored step is already the last stops at creation,
 * everywhere, with no step run. */
static void test_stop_at_step_after_the_broadcast_stops_every_rank_at_creation(void) {
  model m;
  hk_status st = HK_STATUS_INIT;
  model_build(&m, -1);
  hk_stop_at_step_options so = HK_STOP_AT_STEP_OPTIONS_INIT;
  so.last_step = CHIEF_STEP;
  assert_ok(hk_stop_at_step_hook_new(&m.stop_at, &so, &st), &st);
  hk_hook *hooks[2] = {m.bcast, m.stop_at};
  assert_ok(model_session(&m, hooks, 2, &st), &st);
  assert_true(hk_session_should_stop(m.s));
  assert_logged(m.te, HK_LOG_INFO, "already reached last step");
  assert_ok(hk_session_close(m.s, HK_OK, &st), &st);
  model_free(&m);
}

static void test_a_rank_with_another_variable_shape_fails_every_rank_naming_it(void) {
  model m;
  hk_status st = HK_STATUS_INIT;
  model_build(&m, 1);
  hk_hook *hooks[1] = {m.bcast};
  assert_status(model_session(&m, hooks, 1, &st), &st, HK_FAILED_PRECONDITION, "rank 1");
  assert_null(m.s);
  if (mpi_rank() == 1) assert_non_null(strstr(st.message, "'w'")); /* its first variable that differs */
  model_free(&m);
}

static void test_constructors_reject_null_arguments_and_the_chief_as_a_worker(void) {
  hk_mpi *mpi = mpi_test_context(NULL);
  hk_status st = HK_STATUS_INIT;
  hk_hook *h = (hk_hook *)&st;
  assert_status(hk_mpi_broadcast_hook_new(&h, NULL, &st), &st, HK_INVALID_ARGUMENT, "mpi");
  assert_null(h);
  assert_status(hk_mpi_broadcast_hook_new(NULL, mpi, &st), &st, HK_INVALID_ARGUMENT, "out");
  hk_graph *g = NULL;
  assert_ok(hk_graph_new(&g, NULL, &st), &st);
  hk_handle a, b, c;
  hk_code rc = hk_mpi_sync_worker_ops(mpi, g, &a, &b, &c, &st);
  if (hk_mpi_is_chief(mpi))
    assert_status(rc, &st, HK_INVALID_ARGUMENT, "chief");
  else
    assert_ok(rc, &st);
  assert_status(hk_mpi_sync_worker_ops(mpi, NULL, &a, &b, &c, &st), &st, HK_INVALID_ARGUMENT, NULL);
  hk_graph_free(g);
  hk_mpi_free(mpi);
}

/* ---- the host loop ---------------------------------------------------------------- */

typedef struct program {
  float w[4];
  double b[2];
  float loss;     /* HK_LOOP_NO_CHECKPOINT: per rank */
  int64_t step;   /* program-owned global step */
  uint64_t rng;   /* opaque state: per rank */
  float extra[2]; /* only on the rank with another model */
} program;

static hk_code state_save(void *user, void *dst, size_t size, hk_status *st) {
  (void)st;
  memcpy(dst, user, size);
  return HK_OK;
}

static hk_code state_restore(void *user, const void *src, size_t size, hk_status *st) {
  (void)st;
  memcpy(user, src, size);
  return HK_OK;
}

static void program_init(program *p, int rank) {
  memset(p, 0, sizeof *p);
  for (int i = 0; i < 4; i++) p->w[i] = (float)(rank * 10 + i) + 0.25f;
  p->b[0] = rank == 0 ? -3.5 : 1e9 + rank;
  p->b[1] = 1.0 / (rank + 3);
  p->loss = 2.0f + (float)rank;
  p->step = rank == 0 ? 10 : rank;
  p->rng = 0x1234u + (uint64_t)rank;
}

static hk_loop *program_loop(program *p, hk_env *env, hk_hook **hooks, size_t nhooks, int extra) {
  hk_loop_options o;
  hk_status st = HK_STATUS_INIT;
  hk_loop *loop = NULL;
  assert_int_equal(hk_loop_options_init(&o, HK_LOOP_OPTIONS_VERSION), HK_OK);
  o.env = env;
  o.hooks = hooks;
  o.nhooks = nhooks;
  o.handle_signals = 0;
  assert_ok(hk_loop_new(&loop, &o, &st), &st);
  int64_t four[1] = {4}, two[1] = {2};
  assert_ok(hk_loop_add_array(loop, "w", HK_DTYPE_F32, 1, four, p->w, 0, &st), &st);
  assert_ok(hk_loop_add_array(loop, "b", HK_DTYPE_F64, 1, two, p->b, 0, &st), &st);
  assert_ok(hk_loop_add_array(loop, "loss", HK_DTYPE_F32, 0, NULL, &p->loss, HK_LOOP_NO_CHECKPOINT, &st), &st);
  assert_ok(hk_loop_add_array(loop, "step", HK_DTYPE_I64, 0, NULL, &p->step, HK_LOOP_GLOBAL_STEP, &st), &st);
  assert_ok(hk_loop_add_state(loop, "rng", sizeof p->rng, state_save, state_restore, &p->rng, 0, &st), &st);
  if (extra) assert_ok(hk_loop_add_array(loop, "extra", HK_DTYPE_F32, 1, two, p->extra, 0, &st), &st);
  return loop;
}

static void test_host_loop_starts_every_rank_from_rank_0s_arrays(void) {
  hk_env env;
  test_env *te = mpi_test_env(&env);
  hk_mpi *mpi = mpi_test_context(&env);
  hk_status st = HK_STATUS_INIT;
  hk_hook *bcast = NULL;
  assert_ok(hk_mpi_broadcast_hook_new(&bcast, mpi, &st), &st);
  program p, chief;
  program_init(&p, mpi_rank());
  program_init(&chief, 0);
  hk_loop *loop = program_loop(&p, &env, &bcast, 1, 0);
  int64_t step = -1;
  assert_ok(hk_loop_start(loop, &step, &st), &st);
  /* The chief's arrays and global step, on every rank. */
  assert_int_equal(step, 10);
  assert_int_equal(hk_loop_global_step(loop), 10);
  assert_memory_equal(p.w, chief.w, sizeof p.w);
  assert_memory_equal(p.b, chief.b, sizeof p.b);
  assert_int_equal(p.step, 10);
  /* Not checkpointed, opaque: per rank. */
  assert_true(p.loss == 2.0f + (float)mpi_rank());
  assert_true(p.rng == 0x1234u + (uint64_t)mpi_rank());
  /* A few steps: every rank moves alike. */
  for (int i = 0; i < 3; i++) {
    assert_ok(hk_loop_step_begin(loop, &step, &st), &st);
    p.step++;
    p.w[0] += 1.0f;
    assert_ok(hk_loop_step_end(loop, &st), &st);
  }
  assert_int_equal(hk_loop_global_step(loop), 13);
  assert_true(mpi_same_bytes_everywhere(p.w, sizeof p.w));
  assert_ok(hk_loop_finish(loop, &st), &st);
  hk_loop_free(loop);
  hk_hook_free(bcast);
  hk_mpi_free(mpi);
  assert_int_equal(test_env_release(te), 0);
}

/* A rank with an extra array: every rank's start fails, naming rank 1. */
static void test_host_loop_rank_with_an_extra_array_fails_every_rank_naming_it(void) {
  hk_env env;
  test_env *te = mpi_test_env(&env);
  hk_mpi *mpi = mpi_test_context(&env);
  hk_status st = HK_STATUS_INIT;
  hk_hook *bcast = NULL;
  assert_ok(hk_mpi_broadcast_hook_new(&bcast, mpi, &st), &st);
  program p;
  program_init(&p, mpi_rank());
  hk_loop *loop = program_loop(&p, &env, &bcast, 1, mpi_rank() == 1);
  assert_status(hk_loop_start(loop, NULL, &st), &st, HK_FAILED_PRECONDITION, "rank 1");
  if (mpi_rank() == 1) assert_non_null(strstr(st.message, "'extra'"));
  /* Nothing was overwritten. */
  program mine;
  program_init(&mine, mpi_rank());
  assert_memory_equal(p.w, mine.w, sizeof p.w);
  assert_status(hk_loop_finish(loop, &st), &st, HK_FAILED_PRECONDITION, "rank 1");
  hk_loop_free(loop);
  hk_hook_free(bcast);
  hk_mpi_free(mpi);
  assert_int_equal(test_env_release(te), 0);
}

/* The chief with an extra array: every worker lacks one of its variables. */
static void test_host_loop_chief_with_an_extra_array_fails_every_rank(void) {
  hk_env env;
  test_env *te = mpi_test_env(&env);
  hk_mpi *mpi = mpi_test_context(&env);
  hk_status st = HK_STATUS_INIT;
  hk_hook *bcast = NULL;
  assert_ok(hk_mpi_broadcast_hook_new(&bcast, mpi, &st), &st);
  program p;
  program_init(&p, mpi_rank());
  hk_loop *loop = program_loop(&p, &env, &bcast, 1, mpi_rank() == 0);
  char mine[32];
  snprintf(mine, sizeof mine, "rank %d", mpi_rank() == 0 ? 1 : mpi_rank());
  assert_status(hk_loop_start(loop, NULL, &st), &st, HK_FAILED_PRECONDITION, mine);
  if (mpi_rank() == 0) {
    char n[32];
    snprintf(n, sizeof n, "%d rank(s)", mpi_size() - 1);
    assert_non_null(strstr(st.message, n));
  } else {
    assert_non_null(strstr(st.message, "lacks"));
  }
  assert_int_equal(hk_loop_finish(loop, &st), HK_FAILED_PRECONDITION);
  hk_loop_free(loop);
  hk_hook_free(bcast);
  hk_mpi_free(mpi);
  assert_int_equal(test_env_release(te), 0);
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      MPI_CASE(test_graph_session_starts_every_rank_from_the_chiefs_variables),
      MPI_CASE(test_stop_at_step_after_the_broadcast_stops_every_rank_at_creation),
      MPI_CASE(test_a_rank_with_another_variable_shape_fails_every_rank_naming_it),
      MPI_CASE(test_constructors_reject_null_arguments_and_the_chief_as_a_worker),
      MPI_CASE(test_host_loop_starts_every_rank_from_rank_0s_arrays),
      MPI_CASE(test_host_loop_rank_with_an_extra_array_fails_every_rank_naming_it),
      MPI_CASE(test_host_loop_chief_with_an_extra_array_fails_every_rank),
  };
  return mpi_test_main(argc, argv, "mpi_broadcast", tests, sizeof tests / sizeof tests[0], 2);
}
