/*
 * ProfilerHook (contract C140–C142, H41, D14): cadence (never the first
 * run), validation, the Chrome trace-event timeline it writes (spans of the
 * run, of every hook callback after it, of the executor and of every op),
 * with the graph executor and with the host loop; the tagged run-metadata
 * event "step_<GS>" beside it, read back with tests/support/event_file; both
 * written before the traced run() returns.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hooked/hooked.h>

#include "event_file.h"
#include "spy_hook.h"
#include "test_env.h"
#include "tmpdir.h"

typedef struct fx {
  test_env *te;
  char *dir;
  hk_status st;
  hk_graph *g;
  hk_handle train;
} fx;

static hk_code add_one(void *user, hk_kernel_context *ctx, const hk_tensor *in, size_t nin, hk_tensor *out, size_t nout,
                       hk_status *st) {
  (void)user, (void)in, (void)nin, (void)out, (void)nout, (void)st;
  *(int64_t *)hk_kernel_context_variable(ctx, 0)->data += 1;
  return HK_OK;
}

static int setup(void **state) {
  fx *f = calloc(1, sizeof *f);
  f->te = test_env_new();
  f->dir = test_tmpdir_new("profiler");
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  go.env = &f->te->env;
  hk_handle gs;
  assert_ok(hk_graph_new(&f->g, &go, &f->st), &f->st);
  assert_ok(hk_graph_create_global_step(f->g, &gs, &f->st), &f->st);
  hk_op_def op = HK_OP_DEF_INIT;
  op.name = "train_op";
  op.kernel = add_one;
  op.mutates = &gs;
  op.nmutates = 1;
  assert_ok(hk_graph_op(f->g, &f->train, &op, &f->st), &f->st);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fx *f = *state;
  hk_graph_free(f->g);
  test_tmpdir_free(f->dir);
  int rc = test_env_release(f->te);
  free(f);
  return rc;
}

static char *timeline(fx *f, int64_t step) {
  char name[64];
  snprintf(name, sizeof name, "out/timeline-%lld.json", (long long)step);
  char *p = test_path(f->dir, name);
  char *text = test_read_file(p, NULL);
  free(p);
  return text;
}

static int timeline_exists(fx *f, int64_t step) {
  char *t = timeline(f, step);
  free(t);
  return t != NULL;
}

#define SESSION_DEVICE "/hooked/session"
#define OPS_DEVICE "/job:localhost/replica:0/task:0/device:CPU:0"

static hk_hook *profiler(fx *f, int64_t save_steps) {
  hk_hook *h = NULL;
  hk_profiler_options o = HK_PROFILER_OPTIONS_INIT;
  char *out = test_path(f->dir, "out");
  o.save_steps = save_steps;
  o.output_dir = out;
  assert_ok(hk_profiler_hook_new(&h, &o, &f->st), &f->st);
  free(out);
  return h;
}

/* C141, C142: with save_steps 2 the first run is never traced; runs whose
 * next step triggers are, and each timeline holds the run, the later hooks'
 * callbacks, the executor run and its ops, nested in time. */
static void test_profiler__traces_runs_on_its_cadence_and_writes_timelines(void **state) {
  fx *f = *state;
  hk_hook *prof = profiler(f, 2);
  spy_hook *spy = spy_hook_new("spy", NULL, NULL);
  hk_hook *hooks[2] = {prof, spy->hook};
  hk_session *s = NULL;
  hk_session_options so = HK_SESSION_OPTIONS_INIT;
  so.executor = hk_graph_executor(f->g);
  so.hooks = hooks;
  so.nhooks = 2;
  assert_ok(hk_session_new(&s, &so, &f->st), &f->st);
  hk_run_args args = {NULL, 0, NULL, 0, &f->train, 1, NULL};
  for (int i = 0; i < 5; i++) {
    test_clock_advance(&f->te->clock, 0.001);
    assert_ok(hk_session_run(s, &args, NULL, NULL, &f->st), &f->st);
  }
  assert_ok(hk_session_close(s, HK_OK, &f->st), &f->st);
  hk_session_free(s);
  /* GS 1 after the first run (timer updated at 0: not traced); the run
   * taking GS 1 to 2 is traced (next_step 2), and 3 to 4. */
  char *t1 = timeline(f, 1), *t2 = timeline(f, 2), *t3 = timeline(f, 3), *t4 = timeline(f, 4);
  assert_null(t1);
  assert_non_null(t2);
  assert_null(t3);
  assert_non_null(t4);
  assert_non_null(strstr(t2, "\"traceEvents\""));
  assert_non_null(strstr(t2, "\"name\":\"step 2\",\"cat\":\"step\",\"ph\":\"X\""));
  assert_non_null(strstr(t2, "\"name\":\"spy.before_run\",\"cat\":\"hook\""));
  assert_non_null(strstr(t2, "\"name\":\"spy.after_run\",\"cat\":\"hook\""));
  assert_non_null(strstr(t2, "\"name\":\"ProfilerHook.after_run\",\"cat\":\"hook\""));
  assert_non_null(strstr(t2, "\"name\":\"executor.run\",\"cat\":\"executor\""));
  assert_non_null(strstr(t2, "\"name\":\"train_op\",\"cat\":\"op\""));
  assert_non_null(strstr(t2, "\"tid\":"));
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "Saving timeline for"), 2);
  free(t1), free(t2), free(t3), free(t4);
  hk_hook_free(prof);
  spy_hook_free(spy);
}

/* The host loop: the program's step appears as the op "step" of the run. */
static void test_profiler__host_loop_step_is_traced(void **state) {
  fx *f = *state;
  hk_hook *prof = profiler(f, 1);
  float w = 0;
  hk_loop *l = NULL;
  hk_loop_options o = HK_LOOP_OPTIONS_INIT;
  o.env = &f->te->env;
  o.handle_signals = 0;
  o.hooks = &prof;
  o.nhooks = 1;
  o.last_step = 3;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  assert_ok(hk_loop_add_array(l, "w", HK_DTYPE_F32, 0, NULL, &w, 0, &f->st), &f->st);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  while (!hk_loop_should_stop(l)) {
    assert_ok(hk_loop_step_begin(l, NULL, &f->st), &f->st);
    test_clock_advance(&f->te->clock, 0.5);
    w += 1;
    assert_ok(hk_loop_step_end(l, &f->st), &f->st);
  }
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  char *t = timeline(f, 3);
  assert_non_null(t);
  assert_non_null(strstr(t, "\"name\":\"step\",\"cat\":\"op\",\"ph\":\"X\",\"ts\":"));
  assert_non_null(strstr(t, "\"dur\":500000.000"));
  free(t);
  hk_hook_free(prof);
}

/* C142, D14: the timeline and the run-metadata event of a traced run are
 * written once every after_run of it has run, before run() returns — not
 * at the next run — into the event file the session shares for output_dir
 * (H26), with the step and the tag "step_<GS>". */
static void test_profiler__traced_run_is_written_before_run_returns(void **state) {
  fx *f = *state;
  hk_hook *prof = profiler(f, 2);
  spy_hook *spy = spy_hook_new("spy", NULL, NULL);
  hk_hook *hooks[2] = {prof, spy->hook};
  hk_session *s = NULL;
  hk_session_options so = HK_SESSION_OPTIONS_INIT;
  hk_summary_writer *w = NULL;
  char *out = test_path(f->dir, "out");
  so.executor = hk_graph_executor(f->g);
  so.hooks = hooks;
  so.nhooks = 2;
  assert_ok(hk_session_new(&s, &so, &f->st), &f->st);
  hk_run_args args = {NULL, 0, NULL, 0, &f->train, 1, NULL};
  assert_ok(hk_session_run(s, &args, NULL, NULL, &f->st), &f->st); /* GS 1, not traced */
  assert_ok(hk_session_run(s, &args, NULL, NULL, &f->st), &f->st); /* GS 2, traced */
  assert_true(timeline_exists(f, 2));
  {
    char *t = timeline(f, 2);
    assert_non_null(strstr(t, "\"name\":\"spy.after_run\",\"cat\":\"hook\"")); /* every after_run */
    free(t);
  }
  /* The program's own summary goes to the same file (H26). */
  assert_ok(hk_summary_writer_from_session(&w, s, out, &f->st), &f->st);
  assert_ok(hk_summary_writer_scalar(w, "loss", 2, 0.5, &f->st), &f->st);
  {
    ev_file *ef = event_file_only(out);
    const ev_event *e = event_file_find_run_metadata(ef, "step_2");
    assert_non_null(e);
    assert_int_equal(e->kind, EV_RUN_METADATA);
    assert_true(e->has_step && e->step == 2);
    assert_true(e->has_wall);
    assert_int_equal(ef->events[0].kind, EV_FILE_VERSION);
    assert_non_null(event_run_metadata_node(e, SESSION_DEVICE, "spy.after_run"));
    assert_non_null(event_run_metadata_node(e, OPS_DEVICE, "train_op"));
    assert_non_null(event_file_find(ef, "loss", 0, NULL));
    event_file_free(ef);
  }
  assert_ok(hk_session_close(s, HK_OK, &f->st), &f->st);
  hk_session_free(s);
  free(out);
  hk_hook_free(prof);
  spy_hook_free(spy);
}

/* C142: the run metadata holds the spans of the timeline as NodeExecStats
 * (node_name and timeline_label "<name> = <category>()" as the timeline's
 * name and category, start on the wall clock, duration) on the session's
 * device, and the executor's ops on the CPU device: the host loop's "step"
 * took the 0.5 s of mock time the program spent. */
static void test_profiler__run_metadata_holds_the_spans_and_ops(void **state) {
  fx *f = *state;
  hk_hook *prof = profiler(f, 1);
  float w = 0;
  hk_loop *l = NULL;
  hk_loop_options o = HK_LOOP_OPTIONS_INIT;
  char *out = test_path(f->dir, "out");
  o.env = &f->te->env;
  o.handle_signals = 0;
  o.hooks = &prof;
  o.nhooks = 1;
  o.last_step = 3;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  assert_ok(hk_loop_add_array(l, "w", HK_DTYPE_F32, 0, NULL, &w, 0, &f->st), &f->st);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  double wall_begin = f->te->clock.wall;
  while (!hk_loop_should_stop(l)) {
    assert_ok(hk_loop_step_begin(l, NULL, &f->st), &f->st);
    test_clock_advance(&f->te->clock, 0.5);
    w += 1;
    assert_ok(hk_loop_step_end(l, &f->st), &f->st);
  }
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  ev_file *ef = event_file_only(out);
  /* The first run is never traced (C141): GS 2 and 3 are. */
  assert_null(event_file_find_run_metadata(ef, "step_1"));
  assert_non_null(event_file_find_run_metadata(ef, "step_2"));
  const ev_event *e = event_file_find_run_metadata(ef, "step_3");
  assert_non_null(e);
  assert_true(e->step == 3);
  assert_int_equal(e->ndevices, 2);
  assert_string_equal(e->devices[0].device, SESSION_DEVICE);
  assert_string_equal(e->devices[1].device, OPS_DEVICE);
  const ev_node *whole = event_run_metadata_node(e, SESSION_DEVICE, "step 3");
  const ev_node *op = event_run_metadata_node(e, OPS_DEVICE, "step");
  const ev_node *after = event_run_metadata_node(e, SESSION_DEVICE, "ProfilerHook.after_run");
  const ev_node *exec = event_run_metadata_node(e, SESSION_DEVICE, "executor.run");
  assert_true(whole && op && after && exec);
  assert_string_equal(whole->label, "step 3 = step()");
  assert_string_equal(op->label, "step = op()");
  assert_string_equal(after->label, "ProfilerHook.after_run = hook()");
  assert_string_equal(exec->label, "executor.run = executor()");
  assert_true(op->all_end_rel_micros == 500000 && op->op_end_rel_micros == 500000 && op->op_start_rel_micros == 0);
  assert_true(whole->all_end_rel_micros == 500000);
  /* Wall-clock microseconds, within the run. */
  assert_true(whole->all_start_micros >= (int64_t)(wall_begin * 1e6));
  assert_true(whole->all_start_micros <= (int64_t)(f->te->clock.wall * 1e6));
  assert_true(op->all_start_micros >= whole->all_start_micros);
  assert_true(op->all_start_micros + op->all_end_rel_micros <= whole->all_start_micros + whole->all_end_rel_micros);
  assert_true(op->thread_id == whole->thread_id && exec->thread_id == whole->thread_id);
  event_file_free(ef);
  free(out);
  hk_hook_free(prof);
}

/* H41, C14: a traced run that a later hook's after_run fails keeps no spans,
 * and nothing of it is written; the next traced run is written whole. */
static void test_profiler__failed_traced_run_writes_nothing(void **state) {
  fx *f = *state;
  hk_hook *prof = profiler(f, 1);
  spy_hook *spy = spy_hook_new("spy", NULL, NULL);
  hk_hook *hooks[2] = {prof, spy->hook};
  hk_session *s = NULL;
  hk_session_options so = HK_SESSION_OPTIONS_INIT;
  char *out = test_path(f->dir, "out");
  so.executor = hk_graph_executor(f->g);
  so.kind = HK_SESSION_SINGULAR;
  so.hooks = hooks;
  so.nhooks = 2;
  assert_ok(hk_session_new(&s, &so, &f->st), &f->st);
  hk_run_args args = {NULL, 0, NULL, 0, &f->train, 1, NULL};
  assert_ok(hk_session_run(s, &args, NULL, NULL, &f->st), &f->st); /* GS 1, not traced */
  spy_hook_fail(spy, SPY_AFTER_RUN, 1, 1, HK_ABORTED, "spy fails");
  assert_status(hk_session_run(s, &args, NULL, NULL, &f->st), &f->st, HK_ABORTED, "spy fails"); /* GS 2 */
  assert_ok(hk_session_run(s, &args, NULL, NULL, &f->st), &f->st);                              /* GS 3 */
  assert_ok(hk_session_close(s, HK_OK, &f->st), &f->st);
  hk_session_free(s);
  assert_false(timeline_exists(f, 2));
  assert_true(timeline_exists(f, 3));
  {
    char *t = timeline(f, 3);
    assert_non_null(strstr(t, "\"name\":\"spy.after_run\",\"cat\":\"hook\""));
    free(t);
  }
  ev_file *ef = event_file_only(out);
  assert_null(event_file_find_run_metadata(ef, "step_2"));
  assert_non_null(event_file_find_run_metadata(ef, "step_3"));
  event_file_free(ef);
  free(out);
  hk_hook_free(prof);
  spy_hook_free(spy);
}

/* C140: exactly one of save_steps and save_secs, each positive; anything else is INVALID_ARGUMENT naming it. */
static void test_profiler__bad_options_are_invalid_argument(void **state) {
  fx *f = *state;
  hk_hook *h = (hk_hook *)1;
  hk_profiler_options o = HK_PROFILER_OPTIONS_INIT;
  assert_status(hk_profiler_hook_new(&h, &o, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "Either save_secs or save_steps should be provided.");
  assert_null(h);
  o.save_secs = 1;
  o.save_steps = 1;
  assert_status(hk_profiler_hook_new(&h, &o, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "Can not provide both save_secs and save_steps.");
  o.save_secs = HK_UNSET_SECS;
  o.save_steps = 0;
  assert_status(hk_profiler_hook_new(&h, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "save_steps");
  o.save_steps = 1;
  o.version = 7;
  assert_status(hk_profiler_hook_new(&h, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "version");
  assert_status(hk_profiler_hook_new(&h, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "opts");
  assert_status(hk_profiler_hook_new(NULL, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "out");
  assert_int_equal(hk_profiler_options_init(&o, 2), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_profiler_options_init(&o, HK_PROFILER_OPTIONS_VERSION), HK_OK);
}

/* C140: begin() without a global step fails naming the hook's need. */
static void test_profiler__begin_without_a_global_step_fails(void **state) {
  fx *f = *state;
  hk_graph *g = NULL;
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  go.env = &f->te->env;
  assert_ok(hk_graph_new(&g, &go, &f->st), &f->st);
  hk_hook *prof = profiler(f, 1);
  hk_session *s = NULL;
  hk_session_options so = HK_SESSION_OPTIONS_INIT;
  so.executor = hk_graph_executor(g);
  so.hooks = &prof;
  so.nhooks = 1;
  assert_status(hk_session_new(&s, &so, &f->st), &f->st, HK_FAILED_PRECONDITION,
                "Global step should be created to use ProfilerHook.");
  hk_hook_free(prof);
  hk_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_profiler__traces_runs_on_its_cadence_and_writes_timelines, setup, teardown),
      cmocka_unit_test_setup_teardown(test_profiler__host_loop_step_is_traced, setup, teardown),
      cmocka_unit_test_setup_teardown(test_profiler__traced_run_is_written_before_run_returns, setup, teardown),
      cmocka_unit_test_setup_teardown(test_profiler__run_metadata_holds_the_spans_and_ops, setup, teardown),
      cmocka_unit_test_setup_teardown(test_profiler__failed_traced_run_writes_nothing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_profiler__bad_options_are_invalid_argument, setup, teardown),
      cmocka_unit_test_setup_teardown(test_profiler__begin_without_a_global_step_fails, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
