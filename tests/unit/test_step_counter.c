/*
 * Tests of StepCounterHook (contract group N: C131–C133; D9, H25, H26),
 * driven through real sessions over the scripted fake executor (a fetched GS
 * is the stale value, H29) and the graph executor, with the mock clock
 * advanced by each executor run. Event files are decoded by
 * tests/support/event_file.c.
 */
#include "session_fixture.h"
#include "event_file.h"
#include "faulty_fs.h"
#include "tmpdir.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fixture {
  test_env *te;
  fake_executor *fx;
  hk_handle gs, train;
  hk_hook *hook;
  hk_session *s;
  char *tmp, *dir;
  double secs_per_run; /* the mock clock moves this much in each train run */
  hk_step_counter_options o;
  hk_status st;
} fixture;

static hk_code advance_clock(void *user, fake_executor *fx, const hk_run_args *args, hk_status *st) {
  fixture *f = user;
  (void)fx;
  (void)st;
  if (args && args->ntargets > 0 && args->targets[0] == f->train) test_clock_advance(&f->te->clock, f->secs_per_run);
  return HK_OK;
}

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  assert_non_null(f);
  f->te = test_env_new();
  f->fx = fake_training_executor(f->te, NULL, &f->gs, &f->train);
  fake_executor_on_run(f->fx, advance_clock, f);
  f->tmp = test_tmpdir_new("step-counter");
  f->dir = test_path(f->tmp, "summaries/train");
  f->secs_per_run = 0.5;
  assert_int_equal(hk_step_counter_options_init(&f->o, HK_STEP_COUNTER_OPTIONS_VERSION), HK_OK);
  f->o.env = &f->te->env;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  session_close_and_free(f->s);
  hk_hook_free(f->hook);
  test_tmpdir_free(f->tmp);
  free(f->dir);
  return fixture_release(f, f->fx, f->te);
}

static void open_ok(fixture *f) {
  assert_ok(hk_step_counter_hook_new(&f->hook, &f->o, &f->st), &f->st);
  assert_ok(one_hook_session_new(&f->s, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(f->fx), &f->hook,
                                 NULL, &f->st),
            &f->st);
}

static void run_n(fixture *f, int n) {
  int i;
  for (i = 0; i < n; i++) assert_ok(session_run_train(f->s, f->train, &f->st), &f->st);
}

static void close_ok(fixture *f) {
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  hk_session_free(f->s);
  f->s = NULL;
}

/* ---- options (C131, D9, H25) -------------------------------------------------------- */

/* C131: options_init refuses a NULL struct or an unknown version and sets every default. */
static void test_step_counter__options_init_checks_its_version_and_sets_defaults(void **state) {
  fixture *f = *state;
  hk_step_counter_options o;
  assert_int_equal(hk_step_counter_options_init(NULL, HK_STEP_COUNTER_OPTIONS_VERSION), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_step_counter_options_init(&o, HK_STEP_COUNTER_OPTIONS_VERSION + 1), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_step_counter_options_init(&o, HK_STEP_COUNTER_OPTIONS_VERSION), HK_OK);
  assert_true(o.every_n_steps == HK_UNSET_STEPS && hk_secs_is_unset(o.every_n_secs));
  assert_null(o.output_dir);
  assert_null(o.summary_writer);
  assert_int_equal(o.steps_per_run, 1);
  /* NULL options: every 100 steps (C131), logging only. */
  assert_ok(hk_step_counter_hook_new(&f->hook, NULL, &f->st), &f->st);
  assert_string_equal(hk_hook_name(f->hook), "StepCounterHook");
}

static void refused(fixture *f, const char *substr) {
  hk_hook *h = (hk_hook *)f;
  assert_status(hk_step_counter_hook_new(&h, &f->o, &f->st), &f->st, HK_INVALID_ARGUMENT, substr);
  assert_null(h);
}

/* D9, H25: both cadences, a zero or negative cadence and the other bad options are INVALID_ARGUMENT naming the
 * option. */
static void test_step_counter__bad_options_named(void **state) {
  fixture *f = *state;
  hk_env bad = f->te->env;
  long base = test_alloc_live(&f->te->alloc);
  assert_status(hk_step_counter_hook_new(NULL, &f->o, &f->st), &f->st, HK_INVALID_ARGUMENT, "out");
  f->o.every_n_secs = 1;
  f->o.every_n_steps = 10;
  refused(f, "Can not provide both every_n_secs and every_n_steps."); /* D9 */
  f->o.every_n_secs = HK_UNSET_SECS;
  f->o.every_n_steps = 0;
  refused(f, "every_n_steps"); /* H25 */
  f->o.every_n_steps = -3;
  refused(f, "every_n_steps");
  f->o.every_n_steps = HK_UNSET_STEPS;
  f->o.every_n_secs = 0;
  refused(f, "every_n_secs");
  f->o.every_n_secs = NAN;
  refused(f, "every_n_secs");
  f->o.every_n_secs = HK_UNSET_SECS;
  f->o.steps_per_run = 0;
  refused(f, "steps_per_run");
  f->o.steps_per_run = 1;
  f->o.output_dir = "";
  refused(f, "output_dir");
  f->o.output_dir = NULL;
  f->o.version = 0;
  refused(f, "version");
  f->o.version = HK_STEP_COUNTER_OPTIONS_VERSION;
  bad.log_level = (hk_log_level)9;
  f->o.env = &bad;
  refused(f, "env");
  assert_int_equal(test_alloc_live(&f->te->alloc), base); /* H3 */
}

/* C131: every_n_secs alone uses seconds (TF would raise). */
static void test_step_counter__every_n_secs_alone_counts_seconds(void **state) {
  fixture *f = *state;
  f->o.every_n_secs = 1.0;
  f->o.output_dir = f->dir;
  f->secs_per_run = 0.3;
  open_ok(f);
  run_n(f, 10);
  close_ok(f);
  {
    ev_file *ef = event_file_only(f->dir);
    const ev_event *e;
    const ev_value *v = event_file_find(ef, "global_step/sec", 0, &e);
    /* First trigger at GS 1 (t0); then GS 5 is the first at >= 1 s (4 runs, 1.2 s). */
    assert_non_null(v);
    assert_true(e->step == 5);
    assert_true(fabsf(v->simple - (float)(4 / 1.2)) < 1e-4f);
    event_file_free(ef);
  }
}

/* C131: begin() without a global step is FAILED_PRECONDITION. */
static void test_step_counter__begin_needs_a_global_step(void **state) {
  fixture *f = *state;
  fake_executor *bare = fake_executor_new(&f->te->env);
  hk_hook *hooks[1];
  hk_session_options so;
  assert_ok(hk_step_counter_hook_new(&f->hook, &f->o, &f->st), &f->st);
  hooks[0] = f->hook;
  hk_session_options_init(&so, HK_SESSION_OPTIONS_VERSION);
  test_session_options(&so, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(bare), hooks, 1);
  assert_status(hk_session_new(&f->s, &so, &f->st), &f->st, HK_FAILED_PRECONDITION,
                "Global step should be created to use StepCounterHook.");
  assert_null(f->s);
  fake_executor_free(bare);
}

/* ---- cadence and output (C132, H26) ---------------------------------------------------- */

/* C132: every_n_steps writes and logs global_step/sec, the first trigger only starting the timer. */
static void test_step_counter__writes_and_logs_the_rate_every_n_steps(void **state) {
  fixture *f = *state;
  ev_file *ef;
  const ev_event *e;
  const ev_value *v;
  size_t from = 0;
  int n = 0;
  f->o.every_n_steps = 2;
  f->o.output_dir = f->dir;
  open_ok(f);
  assert_true(test_path_exists(f->dir)); /* begin() made it (H26) */
  run_n(f, 7);
  close_ok(f);
  /* The first trigger (GS 1) only starts the timer; then GS 3, 5, 7, each
   * 2 steps in 1 s (0.5 s per run). */
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "global_step/sec: 2"), 3);
  ef = event_file_only(f->dir);
  while ((v = event_file_find(ef, "global_step/sec", from, &e)) != NULL) {
    assert_true(e->step == 3 + 2 * n);
    assert_true(v->simple == 2.0f);
    assert_int_equal(v->kind, EV_SIMPLE);
    from = (size_t)(e - ef->events) + 1;
    n++;
  }
  assert_int_equal(n, 3);
  event_file_free(ef);
}

/* C132: steps_per_run: the stale GS + steps_per_run decides whether to read GS. */
static void test_step_counter__steps_per_run_decides_when_to_read_the_global_step(void **state) {
  fixture *f = *state;
  int64_t before;
  f->o.every_n_steps = 4;
  f->o.steps_per_run = 4;
  open_ok(f);
  run_n(f, 1); /* first trigger */
  fake_executor_reset_calls(f->fx);
  run_n(f, 1); /* stale 1 + 4 = 5 >= 1 + 4: reads GS (2): no trigger */
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), 2);
  before = fake_executor_calls(f->fx, FAKE_RUN);
  f->o.steps_per_run = 1; /* copied at creation: no effect */
  run_n(f, 1);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_RUN), before + 2);
  close_ok(f);
}

/* C132: a rate over zero seconds is neither written nor logged. */
static void test_step_counter__a_rate_over_zero_seconds_is_skipped(void **state) {
  fixture *f = *state;
  f->o.every_n_steps = 1;
  f->o.output_dir = f->dir;
  f->secs_per_run = 0;
  open_ok(f);
  run_n(f, 5);
  close_ok(f);
  assert_int_equal(test_log_count(&f->te->log, -1, "global_step/sec"), 0);
  {
    char names[2][600];
    assert_int_equal(event_file_list(f->dir, names, 2), 0); /* nothing written: no file (H26) */
  }
}

/* C132: no output_dir and no writer: the log line only. */
static void test_step_counter__without_a_writer_only_logs_the_rate(void **state) {
  fixture *f = *state;
  f->o.every_n_steps = 1;
  open_ok(f);
  run_n(f, 3);
  close_ok(f);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "global_step/sec: 2"), 2);
  assert_false(test_path_exists(f->dir));
}

/* C131: a summary_writer given wins over output_dir (as in TF). */
static void test_step_counter__a_given_summary_writer_wins_over_output_dir(void **state) {
  fixture *f = *state;
  hk_summary_writer_options wo = HK_SUMMARY_WRITER_OPTIONS_INIT;
  hk_summary_writer *w = NULL;
  char *other = test_path(f->tmp, "other");
  ev_file *ef;
  wo.env = &f->te->env;
  wo.logdir = other;
  assert_ok(hk_summary_writer_new(&w, &wo, &f->st), &f->st);
  f->o.every_n_steps = 1;
  f->o.summary_writer = w;
  f->o.output_dir = f->dir;
  open_ok(f);
  run_n(f, 3);
  close_ok(f);
  assert_ok(hk_summary_writer_close(w, &f->st), &f->st);
  hk_summary_writer_free(w);
  assert_false(test_path_exists(f->dir));
  ef = event_file_only(other);
  assert_int_equal(event_file_count_tag(ef, "global_step/sec"), 2);
  event_file_free(ef);
  free(other);
}

/* C133: at most five warnings per hook when GS does not move. */
static void test_step_counter__stalled_step_warns_five_times(void **state) {
  fixture *f = *state;
  hk_run_args args;
  int i;
  memset(&args, 0, sizeof args);
  open_ok(f);
  run_n(f, 1);
  for (i = 0; i < 8; i++) assert_ok(hk_session_run(f->s, &args, NULL, NULL, &f->st), &f->st); /* no train */
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING,
                                  "It seems that global step has not been increased. Current value (could be stable): "
                                  "1 vs previous value: 1."),
                   5);
  close_ok(f);
}

/* Write errors are returned by the after_run that writes (H9). */
static void test_step_counter__a_write_error_fails_the_after_run_that_writes(void **state) {
  fixture *f = *state;
  faulty_fs ff;
  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &f->te->env);
  f->o.every_n_steps = 1;
  f->o.output_dir = f->dir;
  open_ok(f);
  run_n(f, 1);
  faulty_fs_match(&ff, "tfevents");
  faulty_fs_fail_errno(&ff, FAULTY_FS_CREATE_EXCL, 0, ENOSPC, 1);
  assert_status(session_run_train(f->s, f->train, &f->st), &f->st, HK_RESOURCE_EXHAUSTED, "tfevents");
  faulty_fs_reset(&ff);
  run_n(f, 1);
  close_ok(f);
  assert_int_equal(faulty_fs_open_handles(&ff), 0);
  faulty_fs_destroy(&ff);
}

/* H7: new with allocation N failing, for N = 0, 1, 2, ... until it succeeds: each failure is RESOURCE_EXHAUSTED and
 * leaks nothing. */
static void test_step_counter__allocation_failures_in_new_leak_nothing(void **state) {
  fixture *f = *state;
  long n, base = test_alloc_live(&f->te->alloc);
  hk_code rc = HK_INTERNAL;
  f->o.output_dir = f->dir;
  for (n = 0; n < 50; n++) {
    test_alloc_fail_at(&f->te->alloc, n, 0);
    rc = hk_step_counter_hook_new(&f->hook, &f->o, &f->st);
    test_alloc_fail_at(&f->te->alloc, -1, 0);
    if (rc == HK_OK) break;
    assert_status(rc, &f->st, HK_RESOURCE_EXHAUSTED, NULL);
    assert_null(f->hook);
    assert_int_equal(test_alloc_live(&f->te->alloc), base);
  }
  assert_int_equal(rc, HK_OK);
  assert_true(n > 0);
}

/* On the graph executor: the GS variable's name ("global_step") makes the
 * tag (C132). */
static void test_step_counter__on_the_graph_executor_the_tag_is_the_step_s_name(void **state) {
  fixture *f = *state;
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_graph *g = NULL;
  hk_handle gs, one, train;
  int64_t one_v = 1;
  hk_tensor t = hk_tensor_scalar_i64(&one_v);
  hk_hook *hooks[1];
  hk_session_options so;
  int i;
  go.env = &f->te->env;
  assert_ok(hk_graph_new(&g, &go, &f->st), &f->st);
  assert_ok(hk_graph_get_or_create_global_step(g, &gs, &f->st), &f->st);
  assert_ok(hk_graph_constant(g, &one, "one", &t, &f->st), &f->st);
  assert_ok(hk_graph_assign_add(g, &train, "train", gs, one, &f->st), &f->st);
  f->o.every_n_steps = 1;
  f->o.output_dir = f->dir;
  assert_ok(hk_step_counter_hook_new(&f->hook, &f->o, &f->st), &f->st);
  hooks[0] = f->hook;
  hk_session_options_init(&so, HK_SESSION_OPTIONS_VERSION);
  test_session_options(&so, &f->te->env, HK_SESSION_SINGULAR, hk_graph_executor(g), hooks, 1);
  assert_ok(hk_session_new(&f->s, &so, &f->st), &f->st);
  for (i = 0; i < 3; i++) {
    assert_ok(session_run_train(f->s, train, &f->st), &f->st);
    test_clock_advance(&f->te->clock, 0.25);
  }
  close_ok(f);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "global_step/sec: 4"), 2);
  {
    ev_file *ef = event_file_only(f->dir);
    assert_int_equal(event_file_count_tag(ef, "global_step/sec"), 2);
    event_file_free(ef);
  }
  hk_hook_free(f->hook);
  f->hook = NULL;
  hk_graph_free(g);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_step_counter__options_init_checks_its_version_and_sets_defaults),
      T(test_step_counter__bad_options_named),
      T(test_step_counter__every_n_secs_alone_counts_seconds),
      T(test_step_counter__begin_needs_a_global_step),
      T(test_step_counter__writes_and_logs_the_rate_every_n_steps),
      T(test_step_counter__steps_per_run_decides_when_to_read_the_global_step),
      T(test_step_counter__a_rate_over_zero_seconds_is_skipped),
      T(test_step_counter__without_a_writer_only_logs_the_rate),
      T(test_step_counter__a_given_summary_writer_wins_over_output_dir),
      T(test_step_counter__stalled_step_warns_five_times),
      T(test_step_counter__a_write_error_fails_the_after_run_that_writes),
      T(test_step_counter__allocation_failures_in_new_leak_nothing),
      T(test_step_counter__on_the_graph_executor_the_tag_is_the_step_s_name),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
