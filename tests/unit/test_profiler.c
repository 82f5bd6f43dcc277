/*
 * ProfilerHook (contract C140–C142, H41): cadence (never the first run),
 * validation, the Chrome trace-event timeline it writes (spans of the run,
 * of every hook callback after it, of the executor and of every op), with
 * the graph executor and with the host loop.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hooked/hooked.h>

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

static hk_code add_one(void *user, hk_kernel_context *ctx, const hk_tensor *in, size_t nin, hk_tensor *out,
                       size_t nout, hk_status *st) {
  (void)user, (void)in, (void)nin, (void)out, (void)nout, (void)st;
  *(int64_t *)hk_kernel_variable(ctx, 0)->data += 1;
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
static void test_profiler__c141_c142_cadence_and_timeline(void **state) {
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

static void test_profiler__c140_validation(void **state) {
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
static void test_profiler__c140_needs_global_step(void **state) {
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
      cmocka_unit_test_setup_teardown(test_profiler__c141_c142_cadence_and_timeline, setup, teardown),
      cmocka_unit_test_setup_teardown(test_profiler__host_loop_step_is_traced, setup, teardown),
      cmocka_unit_test_setup_teardown(test_profiler__c140_validation, setup, teardown),
      cmocka_unit_test_setup_teardown(test_profiler__c140_needs_global_step, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
