/*
 * Tests of summaries pushed from the program's code in a host loop
 * (hooked/loop.h: hk_loop_summary_writer, hk_loop_summary_scalar; H26, H43,
 * H7): the loop's session shares one writer per directory with the hooks
 * (StepCounterHook, the checkpoint hook's CHECKPOINT events), values are
 * written at once at the loop's global step, and a steady stream of them
 * allocates nothing. Files are decoded by tests/support/event_file.c.
 */
#include "event_file.h"
#include "test_env.h"
#include "tmpdir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fixture {
  test_env *te;
  char *tmp, *ckpt;
  float w[8];
  float loss;
  hk_hook *counter;
  hk_loop *loop;
  hk_loop_options o;
  hk_status st;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  int i;
  assert_non_null(f);
  f->te = test_env_new();
  f->tmp = test_tmpdir_new("loop-summary");
  f->ckpt = test_path(f->tmp, "run");
  for (i = 0; i < 8; i++) f->w[i] = (float)i / 8.0f;
  f->o = (hk_loop_options)HK_LOOP_OPTIONS_INIT;
  f->o.env = &f->te->env;
  f->o.handle_signals = 0;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  hk_loop_free(f->loop);
  hk_hook_free(f->counter);
  test_tmpdir_free(f->tmp);
  free(f->ckpt);
  return test_env_release(f->te) == 0 ? (free(f), 0) : (free(f), -1);
}

static void start(fixture *f) {
  int64_t dims[1] = {8};
  assert_ok(hk_loop_new(&f->loop, &f->o, &f->st), &f->st);
  assert_ok(hk_loop_add_array(f->loop, "w", HK_DTYPE_F32, 1, dims, f->w, 0, &f->st), &f->st);
  assert_ok(hk_loop_add_array(f->loop, "loss", HK_DTYPE_F32, 0, NULL, &f->loss, HK_LOOP_NO_CHECKPOINT, &f->st), &f->st);
  assert_ok(hk_loop_start(f->loop, NULL, &f->st), &f->st);
}

static void one_step(fixture *f) {
  int i;
  assert_ok(hk_loop_step_begin(f->loop, NULL, &f->st), &f->st);
  for (i = 0; i < 8; i++) f->w[i] *= 0.5f;
  f->loss = f->w[7];
  assert_ok(hk_loop_step_end(f->loop, &f->st), &f->st);
  test_clock_advance(&f->te->clock, 0.5);
}

/* H43: summary calls before start, after finish or with bad arguments are refused naming the problem. */
static void test_loop_summary__bad_summary_calls_are_refused_naming_the_problem(void **state) {
  fixture *f = *state;
  hk_summary_writer *w = (hk_summary_writer *)f;
  assert_status(hk_loop_summary_scalar(NULL, f->ckpt, "loss", 1, &f->st), &f->st, HK_INVALID_ARGUMENT, "loop");
  assert_status(hk_loop_summary_writer(&w, NULL, f->ckpt, &f->st), &f->st, HK_INVALID_ARGUMENT, "loop");
  assert_null(w);
  assert_ok(hk_loop_new(&f->loop, &f->o, &f->st), &f->st);
  assert_status(hk_loop_summary_scalar(f->loop, f->ckpt, "loss", 1, &f->st), &f->st, HK_FAILED_PRECONDITION,
                "not started");
  assert_ok(hk_loop_start(f->loop, NULL, &f->st), &f->st);
  assert_status(hk_loop_summary_writer(NULL, f->loop, f->ckpt, &f->st), &f->st, HK_INVALID_ARGUMENT, "out");
  assert_status(hk_loop_summary_scalar(f->loop, NULL, "loss", 1, &f->st), &f->st, HK_INVALID_ARGUMENT, "logdir");
  assert_status(hk_loop_summary_scalar(f->loop, "", "loss", 1, &f->st), &f->st, HK_INVALID_ARGUMENT, "logdir");
  assert_status(hk_loop_summary_scalar(f->loop, f->ckpt, "", 1, &f->st), &f->st, HK_INVALID_ARGUMENT, "tag");
  assert_false(hk_loop_should_stop(f->loop)); /* not failed by them */
  assert_ok(hk_loop_finish(f->loop, &f->st), &f->st);
  assert_status(hk_loop_summary_scalar(f->loop, f->ckpt, "loss", 1, &f->st), &f->st, HK_FAILED_PRECONDITION,
                "finished");
  assert_false(test_path_exists(f->ckpt));
}

/* H26: the program's values, StepCounter's rate and the checkpoint hook's
 * CHECKPOINT events share one file; values land at the step they follow. */
static void test_loop_summary__the_program_and_the_hooks_share_one_event_file(void **state) {
  fixture *f = *state;
  hk_step_counter_options sco = HK_STEP_COUNTER_OPTIONS_INIT;
  hk_summary_writer *w = NULL, *again = NULL;
  hk_hook *hooks[1];
  int64_t dims[1] = {8};
  hk_tensor view;
  ev_file *ef;
  const ev_event *e;
  const ev_value *v;
  size_t k;
  int i, checkpoints = 0;

  sco.env = &f->te->env;
  sco.every_n_steps = 2;
  sco.output_dir = f->ckpt;
  assert_ok(hk_step_counter_hook_new(&f->counter, &sco, &f->st), &f->st);
  hooks[0] = f->counter;
  f->o.hooks = hooks;
  f->o.nhooks = 1;
  f->o.checkpoint_dir = f->ckpt;
  f->o.save_steps = 100;
  start(f);
  assert_ok(hk_loop_summary_writer(&w, f->loop, f->ckpt, &f->st), &f->st);
  assert_ok(hk_summary_writer_text(w, "config", 0, "lr = 0.5", &f->st), &f->st);
  for (i = 0; i < 4; i++) {
    one_step(f);
    assert_ok(hk_loop_summary_scalar(f->loop, f->ckpt, "loss", f->loss, &f->st), &f->st);
  }
  assert_ok(hk_loop_summary_writer(&again, f->loop, f->ckpt, &f->st), &f->st);
  assert_ptr_equal(again, w);
  assert_ok(hk_tensor_init(&view, HK_DTYPE_F32, 1, dims, f->w, &f->st), &f->st);
  assert_ok(hk_summary_writer_histogram(w, "w", hk_loop_global_step(f->loop), &view, &f->st), &f->st);
  assert_ok(hk_loop_finish(f->loop, &f->st), &f->st);

  ef = event_file_only(f->ckpt);
  for (k = 0; k < ef->n; k++)
    if (ef->events[k].kind == EV_SESSION_LOG && ef->events[k].status == 3) checkpoints++;
  assert_int_equal(checkpoints, 2); /* at the start (0) and the final one (4) */
  assert_non_null(event_file_find(ef, "config", 0, NULL));
  assert_int_equal(event_file_count_tag(ef, "loss"), 4);
  v = event_file_find(ef, "loss", 0, &e);
  assert_true(e->step == 1); /* after the first step */
  assert_true(v->simple == 0.5f * 7.0f / 8.0f);
  assert_int_equal(event_file_count_tag(ef, "global_step/sec"), 1); /* GS 3: 2 steps in 1 s */
  v = event_file_find(ef, "global_step/sec", 0, &e);
  assert_true(e->step == 3 && v->simple == 2.0f);
  v = event_file_find(ef, "w", 0, &e);
  assert_true(e->step == 4 && v->num == 8);
  event_file_free(ef);
}

/* H7: pushing the same values step after step allocates nothing. */
static void test_loop_summary__steady_steps_allocate_nothing(void **state) {
  fixture *f = *state;
  char *logs = test_path(f->tmp, "logs");
  int i;
  start(f);
  for (i = 0; i < 3; i++) {
    one_step(f);
    assert_ok(hk_loop_summary_scalar(f->loop, logs, "loss", f->loss, &f->st), &f->st);
    assert_ok(hk_loop_summary_scalar(f->loop, logs, "step_time", 0.5, &f->st), &f->st);
  }
  test_alloc_reset_counts(&f->te->alloc);
  for (i = 0; i < 50; i++) {
    one_step(f);
    assert_ok(hk_loop_summary_scalar(f->loop, logs, "loss", f->loss, &f->st), &f->st);
    assert_ok(hk_loop_summary_scalar(f->loop, logs, "step_time", 0.5, &f->st), &f->st);
  }
  assert_int_equal(test_alloc_count(&f->te->alloc), 0);
  assert_ok(hk_loop_finish(f->loop, &f->st), &f->st);
  {
    ev_file *ef = event_file_only(logs);
    assert_int_equal(event_file_count_tag(ef, "loss"), 53);
    assert_int_equal(event_file_count_tag(ef, "step_time"), 53);
    event_file_free(ef);
  }
  free(logs);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_loop_summary__bad_summary_calls_are_refused_naming_the_problem),
      T(test_loop_summary__the_program_and_the_hooks_share_one_event_file),
      T(test_loop_summary__steady_steps_allocate_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
