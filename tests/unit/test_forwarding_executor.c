/*
 * Executors that wrap another (hooked/sys/executor.h "Wrappers", contract
 * H61, D3.7): a wrapper that hands the inner executor the inner raw session
 * it opened works end to end, an asynchronous checkpoint through it holding
 * each step's global step; one that forwards its own session is refused
 * with INVALID_ARGUMENT naming the executor and the op, and its checkpoints
 * are copied at the step boundary with a WARNING; every built-in executor
 * refuses a raw session that is not its own.
 *
 * The copy-before-write barrier is checked deterministically: a snapshot is
 * attached by hand and no writer thread runs, so a variable the next run
 * writes is copied by the barrier on this thread, or not at all.
 */
#include "session_fixture.h"
#include "forwarding_executor.h"
#include "tmpdir.h"

#include "../../src/ckpt/snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STEPS 5

typedef struct fx {
  test_env *te;
  hk_status st;
  hk_graph *g;
  hk_handle gs, train;
  size_t gs_index;
  hk_executor *wrapper;
  char *dir;
} fx;

static int setup(void **state) {
  fx *f = calloc(1, sizeof *f);
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_handle one;
  int64_t one_value = 1;
  hk_tensor one_t = hk_tensor_scalar_i64(&one_value);
  hk_variable_info info;
  f->te = test_env_new();
  f->dir = test_tmpdir_new("forwarding");
  go.env = &f->te->env;
  assert_ok(hk_graph_new(&f->g, &go, &f->st), &f->st);
  assert_ok(hk_graph_create_global_step(f->g, &f->gs, &f->st), &f->st);
  assert_ok(hk_graph_constant(f->g, &one, "one", &one_t, &f->st), &f->st);
  assert_ok(hk_graph_assign_add(f->g, &f->train, "train", f->gs, one, &f->st), &f->st);
  assert_ok(hk_executor_global_step(&info, &f->gs_index, hk_graph_executor(f->g), &f->st), &f->st);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fx *f = *state;
  hk_executor_free(f->wrapper);
  hk_graph_free(f->g);
  test_tmpdir_free(f->dir);
  return fixture_release(f, NULL, f->te);
}

static void wrap(fx *f, forwarding_kind kind) {
  assert_ok(forwarding_executor_new(&f->wrapper, hk_graph_executor(f->g), kind, &f->st), &f->st);
}

/* A raw session of ex with the global step set to `gs`. */
static hk_raw_session *open_at(fx *f, hk_executor *ex, int64_t gs) {
  hk_raw_session *rs = NULL;
  hk_tensor t = hk_tensor_scalar_i64(&gs);
  assert_ok(hk_raw_session_open(&rs, ex, &f->st), &f->st);
  assert_ok(hk_raw_session_assign_variable(rs, f->gs_index, &t, &f->st), &f->st);
  return rs;
}

/* A snapshot of the global step of rs, armed, copying into *copy. */
static hk_snapshot *arm_gs(fx *f, hk_raw_session *rs, int64_t *copy) {
  hk_snapshot *snap = NULL;
  hk_tensor view;
  assert_ok(hk__snapshot_new(&snap, &f->te->env, &f->st), &f->st);
  assert_ok(hk_raw_session_read_variable(&view, rs, f->gs_index, &f->st), &f->st);
  assert_ok(hk__snapshot_reset(snap, 1, hk_executor_variable_count(hk_raw_session_executor(rs)), &f->st), &f->st);
  *copy = -1;
  hk__snapshot_add(snap, f->gs_index, view.data, copy, sizeof *copy);
  hk__snapshot_arm(snap);
  return snap;
}

static hk_code attach(hk_executor *ex, void *session, hk_snapshot *snap, hk_status *st) {
  hk_control_snapshot a = HK_CONTROL_SNAPSHOT_INIT;
  a.session = session;
  a.snapshot = snap;
  return hk_executor_control(ex, HK_CONTROL_SNAPSHOT_ATTACH, &a, st);
}

static void detach(hk_executor *ex, hk_snapshot *snap) {
  hk_control_snapshot a = HK_CONTROL_SNAPSHOT_INIT;
  hk_status st = HK_STATUS_INIT;
  a.snapshot = snap;
  assert_ok(hk_executor_control(ex, HK_CONTROL_SNAPSHOT_DETACH, &a, &st), &st);
}

static void run_train(fx *f, hk_raw_session *rs) {
  hk_run_args args = {NULL, 0, NULL, 0, &f->train, 1, NULL};
  assert_ok(hk_raw_session_run(rs, &args, NULL, NULL, &f->st), &f->st);
}

static int64_t gs_of(fx *f, hk_raw_session *rs) {
  int64_t gs = -1;
  assert_ok(hk_raw_session_global_step(&gs, rs, &f->st), &f->st);
  return gs;
}

/* ---- the barrier through a wrapper ------------------------------------------------ */

/* H61, D3.7: attached through the right wrapper, the snapshot reaches the
 * embedded executor's own session, so the train op that writes the global
 * step first copies it: the snapshot holds the value from before the run. */
static void test_forwarding_executor__right_wrapper_guards_the_inner_session(void **state) {
  fx *f = *state;
  int64_t copy;
  wrap(f, FORWARDING_RIGHT);
  hk_raw_session *rs = open_at(f, f->wrapper, 41);
  hk_snapshot *snap = arm_gs(f, rs, &copy);
  assert_ok(attach(f->wrapper, rs, snap, &f->st), &f->st);
  run_train(f, rs); /* no writer thread: only the barrier can copy */
  assert_true(copy == 41);
  assert_int_equal(hk__snapshot_copied_here(snap), 1);
  assert_true(gs_of(f, rs) == 42);
  assert_int_equal(forwarding_executor_runs(f->wrapper), 2);
  detach(f->wrapper, snap);
  hk_raw_session_free(rs);
  hk__snapshot_free(snap);
}

/* H61: the wrong wrapper forwards its own session: the embedded executor's
 * hk_executor_control() refuses it, naming itself and the op, and nothing
 * is attached (the run copies nothing). */
static void test_forwarding_executor__wrong_wrapper_is_refused_naming_executor_and_op(void **state) {
  fx *f = *state;
  int64_t copy;
  wrap(f, FORWARDING_WRONG);
  hk_raw_session *rs = open_at(f, f->wrapper, 41);
  hk_snapshot *snap = arm_gs(f, rs, &copy);
  assert_status(attach(f->wrapper, rs, snap, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "executor 'hooked.graph': HK_CONTROL_SNAPSHOT_ATTACH: arg->session is not a raw session of this "
                "executor");
  run_train(f, rs);
  assert_true(copy == -1);
  assert_int_equal(hk__snapshot_copied_here(snap), 0);
  hk_raw_session_free(rs);
  hk__snapshot_free(snap);
}

/* H61: every built-in executor, and a wrapper itself, refuses a session
 * that is not one of its raw sessions (INVALID_ARGUMENT, naming it and the
 * op), and a closed one of its own (FAILED_PRECONDITION). */
static void test_forwarding_executor__executors_refuse_sessions_not_their_own(void **state) {
  fx *f = *state;
  hk_executor *graph = hk_graph_executor(f->g);
  int64_t copy;
  int not_a_session = 0;
  wrap(f, FORWARDING_RIGHT);
  hk_raw_session *mine = open_at(f, graph, 0), *wrapped = open_at(f, f->wrapper, 0);
  hk_snapshot *snap = arm_gs(f, mine, &copy);

  /* The embedded executor: the wrapper's raw session, an arbitrary pointer. */
  assert_status(attach(graph, wrapped, snap, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "executor 'hooked.graph': HK_CONTROL_SNAPSHOT_ATTACH: arg->session is not a raw session");
  assert_status(attach(graph, &not_a_session, snap, &f->st), &f->st, HK_INVALID_ARGUMENT, "hooked.graph");
  assert_status(attach(graph, NULL, snap, &f->st), &f->st, HK_INVALID_ARGUMENT, "not a raw session");
  /* The wrapper: the inner executor's raw session is not one of its own. */
  assert_status(attach(f->wrapper, mine, snap, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "executor 'forwarding (right)': HK_CONTROL_SNAPSHOT_ATTACH");
  /* The host loop. */
  {
    hk_loop *l = NULL;
    hk_loop_options o = HK_LOOP_OPTIONS_INIT;
    float w = 0;
    o.env = &f->te->env;
    o.handle_signals = 0;
    assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
    assert_ok(hk_loop_add_array(l, "w", HK_DTYPE_F32, 0, NULL, &w, 0, &f->st), &f->st);
    assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
    assert_status(attach(hk_loop_executor(l), mine, snap, &f->st), &f->st, HK_INVALID_ARGUMENT,
                  "executor 'host loop': HK_CONTROL_SNAPSHOT_ATTACH: arg->session is not a raw session");
    assert_ok(hk_loop_finish(l, &f->st), &f->st);
    hk_loop_free(l);
  }
  /* A closed raw session of its own. */
  assert_ok(hk_raw_session_close(mine, &f->st), &f->st);
  assert_status(attach(graph, mine, snap, &f->st), &f->st, HK_FAILED_PRECONDITION, "the raw session is closed");
  assert_int_equal(hk__snapshot_copied_here(snap), 0);
  hk_raw_session_free(mine);
  hk_raw_session_free(wrapped);
  hk__snapshot_free(snap);
}

/* ---- asynchronous checkpoints through a wrapper (D3.7) ---------------------------- */

static int64_t checkpoint_gs(fx *f, int64_t step) {
  char name[64];
  hk_checkpoint_reader *r = NULL;
  size_t i;
  int64_t gs = -1;
  snprintf(name, sizeof name, "model.ckpt-%lld.safetensors", (long long)step);
  char *path = test_path(f->dir, name);
  assert_ok(hk_checkpoint_reader_open(&r, &f->te->env, path, &f->st), &f->st);
  assert_ok(hk_checkpoint_reader_verify(r, &f->st), &f->st);
  assert_true(hk_checkpoint_reader_step(r) == step);
  assert_ok(hk_checkpoint_reader_find(r, "global_step", &i, &f->st), &f->st);
  assert_ok(hk_checkpoint_reader_read(r, i, &gs, sizeof gs, &f->st), &f->st);
  hk_checkpoint_reader_free(r);
  free(path);
  return gs;
}

/* A session over the wrapper with an AsyncCheckpointSaverHook saving every
 * step (block_when_busy: every save starts with the writer idle, so each one
 * is offered to the executor); STEPS steps, then a clean close. */
static void train_with_async_checkpoints(fx *f) {
  hk_checkpoint_saver_options o = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
  hk_hook *hook = NULL;
  hk_session *s = NULL;
  o.env = &f->te->env;
  o.checkpoint_dir = f->dir;
  o.save_steps = 1;
  o.block_when_busy = 1;
  o.save_graph_def = 0;
  assert_ok(hk_async_checkpoint_saver_hook_new(&hook, &o, &f->st), &f->st);
  assert_ok(one_hook_session_new(&s, &f->te->env, HK_SESSION_SINGULAR, f->wrapper, &hook, NULL, &f->st), &f->st);
  for (int i = 0; i < STEPS; i++) assert_ok(session_run_train(s, f->train, &f->st), &f->st);
  assert_ok(hk_session_close(s, HK_OK, &f->st), &f->st);
  hk_session_free(s);
  hk_hook_free(hook);
}

/* Through the right wrapper every snapshot is attached to the embedded
 * executor's session (copied in the background) and checkpoint N holds
 * global step N. */
static void test_forwarding_executor__async_checkpoint_through_right_wrapper_holds_each_step(void **state) {
  fx *f = *state;
  wrap(f, FORWARDING_RIGHT);
  train_with_async_checkpoints(f);
  for (int64_t n = 1; n <= STEPS; n++) assert_true(checkpoint_gs(f, n) == n); /* 0 rotated out (max_to_keep 5) */
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_DEBUG, "copied in the background"), STEPS + 1);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, NULL), 0);
  assert_true(forwarding_executor_runs(f->wrapper) > STEPS);
}

/* Through the wrong wrapper the attach is refused: the hook says so once, at
 * WARNING, with the executor's message, copies every snapshot at the step
 * boundary instead, and checkpoint N still holds global step N. */
static void test_forwarding_executor__async_checkpoint_through_wrong_wrapper_warns_and_holds_each_step(void **state) {
  fx *f = *state;
  wrap(f, FORWARDING_WRONG);
  train_with_async_checkpoints(f);
  for (int64_t n = 1; n <= STEPS; n++) assert_true(checkpoint_gs(f, n) == n); /* 0 rotated out (max_to_keep 5) */
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, "is not a raw session of this executor"), 1);
  assert_int_equal(test_log_count(&f->te->log, -1, "copied in the background"), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_forwarding_executor__right_wrapper_guards_the_inner_session, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_forwarding_executor__wrong_wrapper_is_refused_naming_executor_and_op, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_forwarding_executor__executors_refuse_sessions_not_their_own, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_forwarding_executor__async_checkpoint_through_right_wrapper_holds_each_step,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(
          test_forwarding_executor__async_checkpoint_through_wrong_wrapper_warns_and_holds_each_step, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
