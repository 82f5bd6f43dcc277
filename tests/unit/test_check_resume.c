/*
 * Tests of the check-resume mode (H57): HOOKED_CHECK_RESUME, which
 * `hooked-ckpt check-resume` sets for the runs it makes, read by the
 * checkpoint saver hooks (sync and async) in begin() — stop_at stops after
 * the step that reaches it with a final checkpoint there, or at creation
 * when the session starts past it; keep_all keeps every checkpoint; a
 * malformed value is INVALID_ARGUMENT naming the variable — and by the host
 * loop, which reads every opaque state twice and names one whose two reads
 * differ (uninitialized padding), in a WARNING and a report file, and does
 * nothing of the kind outside the mode. Each test sets the variable itself
 * and the teardown restores what the process had.
 */
#include "session_fixture.h"
#include "tmpdir.h"
#include "ckpt_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define VAR "HOOKED_CHECK_RESUME"

typedef struct fixture {
  test_env *te;
  char *tmp;
  char *dir;    /* tmp/ckpt: the checkpoint directory */
  char *report; /* tmp/report: the report directory */
  char *saved;  /* the process's HOOKED_CHECK_RESUME, restored by teardown; NULL: unset */
  fake_executor *fx;
  hk_handle gs, train;
  hk_hook *hook;
  hk_session *s;
  hk_status st;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  const char *old = getenv(VAR);
  assert_non_null(f);
  f->saved = old ? strdup(old) : NULL;
  unsetenv(VAR);
  f->te = test_env_new();
  f->tmp = test_tmpdir_new("check-resume");
  f->dir = test_path(f->tmp, "ckpt");
  f->report = test_path(f->tmp, "report");
  f->fx = fake_training_executor(f->te, NULL, &f->gs, &f->train);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  session_close_and_free(f->s);
  hk_hook_free(f->hook);
  test_tmpdir_free(f->tmp);
  free(f->dir);
  free(f->report);
  if (f->saved) {
    setenv(VAR, f->saved, 1);
    free(f->saved);
  } else {
    unsetenv(VAR);
  }
  return fixture_release(f, f->fx, f->te);
}

/* ---- the hooks, in a monitored session over the fake executor ------------------- */

static void make_hook(fixture *f, int async, int64_t save_steps) {
  hk_checkpoint_saver_options o = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
  hk_hook_free(f->hook);
  f->hook = NULL;
  o.env = &f->te->env;
  o.checkpoint_dir = f->dir;
  o.save_steps = save_steps;
  assert_ok(async ? hk_async_checkpoint_saver_hook_new(&f->hook, &o, &f->st)
                  : hk_checkpoint_saver_hook_new(&f->hook, &o, &f->st),
            &f->st);
}

/* A monitored session with the hook, restoring from the hook's directory. */
static hk_code open_session(fixture *f) {
  hk_session_options o;
  hk_session_options_init(&o, HK_SESSION_OPTIONS_VERSION);
  test_session_options(&o, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(f->fx), &f->hook, 1);
  o.checkpoint_dir = f->dir;
  return hk_session_new(&f->s, &o, &f->st);
}

/* Run until the session says stop, at most `max` steps. @return the runs. */
static int run_until_stop(fixture *f, int max) {
  int n = 0;
  while (n < max && !hk_session_should_stop(f->s)) {
    assert_ok(session_run_train(f->s, f->train, &f->st), &f->st);
    n++;
  }
  return n;
}

static void close_session(fixture *f) {
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  hk_session_free(f->s);
  f->s = NULL;
}

static int checkpoints(fixture *f) { return test_dir_count_matching(f->dir, ".safetensors"); }

/* stop_at=K: the run that reaches K is the last one, and end() writes the
 * checkpoint of K (here not on the save_steps cadence of 3: 0, 3, then K). */
static void stops_after_the_step_reaching_k(fixture *f, int async) {
  make_hook(f, async, 3);
  setenv(VAR, "stop_at=5", 1);
  assert_ok(open_session(f), &f->st);
  assert_int_equal(run_until_stop(f, 20), 5);
  close_session(f);
  assert_true(ckpt_data_exists(f->dir, "model.ckpt", 5));
  assert_true(ckpt_data_exists(f->dir, "model.ckpt", 3));
  assert_false(ckpt_data_exists(f->dir, "model.ckpt", 6));
  assert_true(test_log_has(&f->te->log, HK_LOG_INFO, "reached the stop step 5"));
  test_tmpdir_remove(f->dir);
}

static void test_check_resume__stop_at_stops_after_the_step_that_reaches_it(void **state) {
  fixture *f = *state;
  stops_after_the_step_reaching_k(f, 0);
  stops_after_the_step_reaching_k(f, 1);
}

/* A session created at a step already >= K stops before its first step
 * (as StopAtStep does through the creation context), and writes nothing new. */
static void stops_at_creation(fixture *f, int async) {
  make_hook(f, async, 100);
  assert_ok(open_session(f), &f->st);
  assert_int_equal(run_until_stop(f, 7), 7);
  close_session(f);
  assert_true(ckpt_data_exists(f->dir, "model.ckpt", 7));
  setenv(VAR, "stop_at=5", 1);
  make_hook(f, async, 100);
  assert_ok(open_session(f), &f->st);
  assert_true(hk_session_should_stop(f->s));
  close_session(f);
  assert_int_equal(checkpoints(f), 2); /* 0 and 7, nothing after */
  assert_true(test_log_has(&f->te->log, HK_LOG_INFO, "stopping before the first step"));
  unsetenv(VAR);
  test_tmpdir_remove(f->dir);
}

static void test_check_resume__stop_at_stops_at_creation_when_resumed_past_it(void **state) {
  fixture *f = *state;
  stops_at_creation(f, 0);
  stops_at_creation(f, 1);
}

/* keep_all=1: the Saver keeps every managed checkpoint (its max_to_keep, 5
 * by default, no longer applies); unset, retention is as always. */
static void test_check_resume__keep_all_keeps_every_checkpoint(void **state) {
  fixture *f = *state;
  for (int keep_all = 0; keep_all < 2; keep_all++) {
    if (keep_all) setenv(VAR, "keep_all=1", 1);
    make_hook(f, keep_all, 1); /* the async hook in the mode: its saves wait, none is deferred */
    assert_ok(open_session(f), &f->st);
    assert_int_equal(run_until_stop(f, 8), 8);
    close_session(f);
    assert_int_equal(checkpoints(f), keep_all ? 9 : 5);
    test_tmpdir_remove(f->dir);
  }
  assert_true(test_log_has(&f->te->log, HK_LOG_INFO, "every checkpoint is kept"));
}

/* Anything but a comma-separated list of report=DIR, stop_at=K, keep_all=0|1
 * (each once) fails begin() with INVALID_ARGUMENT naming the variable and the
 * bad item, before the checkpoint directory is created; the loop's start
 * fails the same way. */
static void test_check_resume__malformed_values_are_invalid_argument_naming_the_variable(void **state) {
  fixture *f = *state;
  static const char *const bad[][2] = {
      {"stop_at=", "'stop_at='"},         {"stop_at=-1", "'stop_at=-1'"},
      {"stop_at=1x", "'stop_at=1x'"},     {"stop_at=99999999999999999999", "stop_at"},
      {"keep_all=2", "'keep_all=2'"},     {"keep_all=yes", "'keep_all=yes'"},
      {"resume=1", "unknown key"},        {"stop_at", "not key=value"},
      {"report=", "'report='"},           {"stop_at=1,,keep_all=1", "empty item"},
      {"stop_at=1,", "empty item"},       {"stop_at=1,stop_at=2", "twice"},
      {"keep_all=1,keep_all=1", "twice"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    hk_loop_options lo = HK_LOOP_OPTIONS_INIT;
    hk_loop *l = NULL;
    int64_t gs = 0;
    setenv(VAR, bad[i][0], 1);
    for (int async = 0; async < 2; async++) {
      make_hook(f, async, 1);
      assert_status(open_session(f), &f->st, HK_INVALID_ARGUMENT, VAR);
      assert_true(strstr(f->st.message, bad[i][1]) != NULL);
      assert_false(test_path_exists(f->dir));
      hk_session_free(f->s);
      f->s = NULL;
    }
    lo.env = &f->te->env;
    lo.checkpoint_dir = f->dir;
    lo.handle_signals = 0;
    assert_ok(hk_loop_new(&l, &lo, &f->st), &f->st);
    assert_ok(hk_loop_add_array(l, "w", HK_DTYPE_I64, 0, NULL, &gs, 0, &f->st), &f->st);
    assert_status(hk_loop_start(l, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, VAR);
    assert_true(strstr(f->st.message, bad[i][1]) != NULL);
    hk_loop_free(l);
  }
  /* Empty is unset: nothing changes. */
  setenv(VAR, "", 1);
  make_hook(f, 0, 1);
  assert_ok(open_session(f), &f->st);
  close_session(f);
}

/* ---- the host loop's double read --------------------------------------------------- */

typedef struct states {
  uint64_t value;
  int half_reads, whole_reads;
} states;

/* Writes the first half of dst only: the other half is whatever dst held. */
static hk_code half_save(void *user, void *dst, size_t size, hk_status *st) {
  states *s = user;
  (void)st;
  s->half_reads++;
  memcpy(dst, &s->value, size / 2);
  return HK_OK;
}

static hk_code whole_save(void *user, void *dst, size_t size, hk_status *st) {
  states *s = user;
  (void)st;
  s->whole_reads++;
  memcpy(dst, &s->value, size);
  return HK_OK;
}

/* An RNG kept as many programs keep it: a kind byte, 7 bytes of padding,
 * the state; filled field by field on the stack and copied whole. */
typedef struct tagged {
  unsigned char kind;
  uint64_t s;
} tagged;

static hk_code padded_save(void *user, void *dst, size_t size, hk_status *st) {
  states *s = user;
  tagged t;
  (void)st;
  t.kind = 1;
  t.s = s->value;
  memcpy(dst, &t, size);
  return HK_OK;
}

static hk_code any_restore(void *user, const void *src, size_t size, hk_status *st) {
  (void)user, (void)src, (void)size, (void)st;
  return HK_OK;
}

static hk_loop *loop_with_states(fixture *f, states *s, int64_t save_steps) {
  hk_loop_options lo = HK_LOOP_OPTIONS_INIT;
  hk_loop *l = NULL;
  lo.env = &f->te->env;
  lo.checkpoint_dir = f->dir;
  lo.save_steps = save_steps;
  lo.handle_signals = 0;
  assert_ok(hk_loop_new(&l, &lo, &f->st), &f->st);
  assert_ok(hk_loop_add_state(l, "opt/half", sizeof s->value, half_save, any_restore, s, 0, &f->st), &f->st);
  assert_ok(hk_loop_add_state(l, "whole", sizeof s->value, whole_save, any_restore, s, 0, &f->st), &f->st);
  assert_ok(hk_loop_add_state(l, "rng", sizeof(tagged), padded_save, any_restore, s, 0, &f->st), &f->st);
  return l;
}

static void steps(fixture *f, hk_loop *l, int n) {
  for (int i = 0; i < n; i++) {
    assert_ok(hk_loop_step_begin(l, NULL, &f->st), &f->st);
    assert_ok(hk_loop_step_end(l, &f->st), &f->st);
  }
}

/* In the mode, a state whose save callback leaves bytes of dst unwritten,
 * and one that copies a struct with uninitialized padding from the stack,
 * are named once each, with the differing bytes, in a WARNING and in a
 * report file; a stable state is not. Each read calls the save callback
 * twice. */
static void test_check_resume__loop_names_a_state_whose_two_reads_differ(void **state) {
  fixture *f = *state;
  states s = {UINT64_C(0x0123456789abcdef), 0, 0};
  char var[4200], name[64], *text, *path;
  size_t n = 0;
  assert_int_equal(mkdir(f->report, 0777), 0);
  snprintf(var, sizeof var, "report=%s,keep_all=1", f->report);
  setenv(VAR, var, 1);
  hk_loop *l = loop_with_states(f, &s, 2);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st); /* saves step 0 */
  steps(f, l, 4);                                    /* saves 2 and 4 */
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  assert_int_equal(s.half_reads, 6);
  assert_int_equal(s.whole_reads, 6);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, "gave different bytes in two reads"), 2);
  assert_true(test_log_has(&f->te->log, HK_LOG_WARNING, "state 'opt/half'"));
  assert_true(test_log_has(&f->te->log, HK_LOG_WARNING, "bytes 4-7 of 8"));
  assert_true(test_log_has(&f->te->log, HK_LOG_WARNING, "state 'rng'"));
  assert_true(test_log_has(&f->te->log, HK_LOG_WARNING, "bytes 1-7 of 16"));
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, "'whole'"), 0);
  assert_int_equal(test_dir_count(f->report), 2);
  snprintf(name, sizeof name, "unstable-%ld-opt%%half", (long)getpid());
  path = test_path(f->report, name);
  text = test_read_file(path, &n);
  assert_non_null(text);
  assert_string_equal(text, "state opt/half\nsize 8\nbytes 4-7\n");
  free(text);
  free(path);
}

/* Outside the mode: one read per checkpoint, nothing named, no report, and
 * steps on which nothing is saved allocate nothing. */
static void test_check_resume__loop_reads_each_state_once_outside_the_mode(void **state) {
  fixture *f = *state;
  states s = {42, 0, 0};
  hk_loop *l = loop_with_states(f, &s, 100);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st); /* saves step 0 */
  steps(f, l, 2);
  test_alloc_reset_counts(&f->te->alloc);
  steps(f, l, 3);
  assert_int_equal(test_alloc_count(&f->te->alloc), 0);
  assert_ok(hk_loop_finish(l, &f->st), &f->st); /* saves step 5 */
  hk_loop_free(l);
  assert_int_equal(s.half_reads, 2);
  assert_int_equal(s.whole_reads, 2);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, "two reads"), 0);
  assert_false(test_path_exists(f->report));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_check_resume__stop_at_stops_after_the_step_that_reaches_it, setup, teardown),
      cmocka_unit_test_setup_teardown(test_check_resume__stop_at_stops_at_creation_when_resumed_past_it, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_check_resume__keep_all_keeps_every_checkpoint, setup, teardown),
      cmocka_unit_test_setup_teardown(test_check_resume__malformed_values_are_invalid_argument_naming_the_variable,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_check_resume__loop_names_a_state_whose_two_reads_differ, setup, teardown),
      cmocka_unit_test_setup_teardown(test_check_resume__loop_reads_each_state_once_outside_the_mode, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
