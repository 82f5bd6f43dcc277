/*
 * Tests of the MetricsLogHook (contract H78–H81) on the host loop: the rows
 * of a loop's own arrays and of reported values, its place before the
 * loop's checkpoint saver (hk_loop_add_metrics_log), a process killed mid
 * run and resumed (each step once), every power loss a run can meet (the
 * crash_fs model: the log resumes to each step once and keeps every row up
 * to the restored checkpoint), and a step that allocates nothing.
 */
#include "crash_fs.h"
#include "test_env.h"
#include "tmpdir.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct model {
  float w[2];
  float loss;
} model;

typedef struct fixture {
  test_env *te;
  char *dir, *ck, *path;
  hk_status st;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  assert_non_null(f);
  f->te = test_env_new();
  f->dir = test_tmpdir_new("metrics_log_loop");
  f->ck = test_path(f->dir, "ck");
  f->path = test_path(f->dir, "metrics.jsonl");
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  test_tmpdir_free(f->dir);
  free(f->ck);
  free(f->path);
  test_env *te = f->te;
  free(f);
  return test_env_release(te);
}

static const char *const cols[] = {"loss", "w"};
static const char *const reported[] = {"val"};

/* A loop over the model with a metrics log (every 2 steps of "loss" and
 * the reported "val"), checkpoints every `save_steps` into dir/ck. */
typedef struct run {
  hk_loop *loop;
  hk_hook *ml;
  model m;
} run;

static hk_code run_new(run *r, const hk_env *env, const char *ck, const char *path, int64_t save_steps,
                       int64_t last_step, int w_column, hk_status *st) {
  static const int64_t two[1] = {2};
  hk_metrics_log_options mo = HK_METRICS_LOG_OPTIONS_INIT;
  hk_loop_options lo = HK_LOOP_OPTIONS_INIT;
  hk_code rc;
  memset(r, 0, sizeof *r);
  mo.path = path;
  mo.tensors = cols;
  mo.ntensors = 1 + (w_column != 0); /* "w" is not one number: only where a test wants the error */
  mo.reported = reported;
  mo.nreported = 1;
  mo.every_n_steps = 2;
  rc = hk_metrics_log_hook_new(&r->ml, &mo, st);
  if (rc != HK_OK) return rc;
  lo.env = env;
  lo.checkpoint_dir = ck;
  lo.save_steps = save_steps;
  lo.last_step = last_step;
  lo.log_step_count_steps = 0;
  lo.handle_signals = 0;
  rc = hk_loop_new(&r->loop, &lo, st);
  if (rc == HK_OK) rc = hk_loop_add_array(r->loop, "w", HK_DTYPE_F32, 1, two, r->m.w, 0, st);
  if (rc == HK_OK)
    rc = hk_loop_add_array(r->loop, "loss", HK_DTYPE_F32, 0, NULL, &r->m.loss, HK_LOOP_NO_CHECKPOINT, st);
  if (rc == HK_OK) rc = hk_loop_add_metrics_log(r->loop, r->ml, st);
  return rc;
}

static void run_free(run *r) {
  hk_loop_free(r->loop);
  hk_hook_free(r->ml);
}

/* One step of the program: w moves, the loss is the step's end / 4. */
static hk_code one_step(run *r, hk_status *st) {
  int64_t step;
  hk_code rc = hk_loop_step_begin(r->loop, &step, st);
  if (rc != HK_OK) return rc;
  r->m.w[0] += 1;
  r->m.loss = (float)(step + 1) / 4;
  if ((step + 1) % 4 == 0) {
    rc = hk_metrics_log_report(r->ml, "val", (double)(step + 1), st);
    if (rc != HK_OK) return rc;
  }
  return hk_loop_step_end(r->loop, st);
}

/* Start (or resume) and step until the loop stops. */
static hk_code train(run *r, int64_t *resumed, hk_status *st) {
  hk_code rc = hk_loop_start(r->loop, resumed, st);
  while (rc == HK_OK && !hk_loop_should_stop(r->loop)) rc = one_step(r, st);
  if (rc != HK_OK) return rc;
  return hk_loop_finish(r->loop, st);
}

static char *slurp(const char *path) {
  size_t n = 0;
  char *text = test_read_file(path, &n);
  assert_non_null(text);
  return text;
}

/* The steps of a JSON-lines log's rows; -1 for a line that is no row. */
static size_t steps_of(const char *text, int64_t *steps, size_t cap) {
  size_t n = 0;
  for (const char *p = text; *p && n < cap;) {
    const char *nl = strchr(p, '\n');
    if (!nl) break;
    steps[n++] = strncmp(p, "{\"step\":", 8) == 0 ? strtoll(p + 8, NULL, 10) : -1;
    p = nl + 1;
  }
  return n;
}

/* Rows at exactly 2, 4, ..., last (each once, in order). */
static int every_second_step_once(const char *text, int64_t last) {
  int64_t steps[64];
  size_t n = steps_of(text, steps, 64);
  if (n != (size_t)(last / 2)) return 0;
  for (size_t i = 0; i < n; i++)
    if (steps[i] != 2 * (int64_t)(i + 1)) return 0;
  return text[strlen(text) - 1] == '\n';
}

/* ---- H78, H80: the host loop's rows and its place before the saver ---------------- */

/* H78: rows of a registered array and a reported value every 2 steps;
 * H80: the hook runs before the loop's checkpoint saver. */
static void test_metrics_log__writes_rows_of_a_host_loops_arrays(void **state) {
  fixture *f = *state;
  run r;
  assert_ok(run_new(&r, &f->te->env, f->ck, f->path, 4, 4, 0, &f->st), &f->st);
  assert_ok(train(&r, NULL, &f->st), &f->st);
  run_free(&r);
  char *text = slurp(f->path);
  assert_string_equal(text,
                      "{\"step\":2,\"wall_time\":1700000000,\"loss\":0.5,\"val\":null}\n"
                      "{\"step\":4,\"wall_time\":1700000000,\"loss\":1,\"val\":4}\n");
  free(text);
}

static void test_metrics_log__runs_before_the_loops_checkpoint_saver(void **state) {
  fixture *f = *state;
  run r;
  size_t ml = SIZE_MAX, ck = SIZE_MAX;
  assert_ok(run_new(&r, &f->te->env, f->ck, f->path, 4, 4, 0, &f->st), &f->st);
  assert_ok(hk_loop_start(r.loop, NULL, &f->st), &f->st);
  hk_session *s = hk_loop_session(r.loop);
  for (size_t i = 0; i < hk_session_hook_count(s); i++) {
    const char *name = hk_hook_name(hk_session_hook(s, i));
    if (strcmp(name, "MetricsLogHook") == 0) ml = i;
    if (strcmp(name, "CheckpointSaverHook") == 0) ck = i;
  }
  assert_true(ml < ck && ck != SIZE_MAX);
  assert_ok(hk_loop_finish(r.loop, &f->st), &f->st);
  run_free(&r);
}

static void test_metrics_log__loop_refuses_a_second_log_and_other_hooks(void **state) {
  fixture *f = *state;
  run r;
  hk_hook *other = NULL;
  hk_stop_at_step_options so = HK_STOP_AT_STEP_OPTIONS_INIT;
  so.last_step = 3;
  assert_ok(run_new(&r, &f->te->env, f->ck, f->path, 4, 4, 0, &f->st), &f->st);
  assert_status(hk_loop_add_metrics_log(r.loop, r.ml, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "has a metrics log already");
  assert_ok(hk_stop_at_step_hook_new(&other, &so, &f->st), &f->st);
  assert_status(hk_loop_add_metrics_log(r.loop, other, &f->st), &f->st, HK_INVALID_ARGUMENT, "is not a MetricsLogHook");
  assert_status(hk_loop_add_metrics_log(r.loop, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "hook is NULL");
  assert_ok(hk_loop_start(r.loop, NULL, &f->st), &f->st);
  assert_status(hk_loop_add_metrics_log(r.loop, r.ml, &f->st), &f->st, HK_FAILED_PRECONDITION, "after hk_loop_start");
  assert_ok(hk_loop_finish(r.loop, &f->st), &f->st);
  run_free(&r);
  hk_hook_free(other);
}

/* A registered array of two numbers is no column: the step that writes
 * fails the loop, naming it. */
static void test_metrics_log__loop_names_an_array_that_is_no_number(void **state) {
  fixture *f = *state;
  run r;
  assert_ok(run_new(&r, &f->te->env, f->ck, f->path, 4, 4, 1, &f->st), &f->st);
  assert_status(train(&r, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "column 'w' is f32 of 2 element(s)");
  run_free(&r);
}

/* ---- H80: a killed process, resumed ------------------------------------------------ */

/* The child: train to step 10 with checkpoints every 4, then die by
 * SIGKILL before its final checkpoint (the rows of steps 10 and the
 * checkpoint of 8 are on disk). */
static void child_killed_at_10(const char *ck, const char *path) {
  run r;
  hk_status st = HK_STATUS_INIT;
  hk_env quiet = HK_ENV_INIT;
  quiet.log_level = HK_LOG_WARNING;
  if (run_new(&r, &quiet, ck, path, 4, HK_UNSET_STEPS, 0, &st) != HK_OK || hk_loop_start(r.loop, NULL, &st) != HK_OK)
    _exit(3);
  for (int i = 0; i < 10; i++)
    if (one_step(&r, &st) != HK_OK) _exit(4);
  raise(SIGKILL);
  _exit(5);
}

/* H80: a run killed after the checkpoint of step 8 wrote the row of step
 * 10; the resumed run drops it and writes its own: each step once. */
static void test_metrics_log__a_killed_run_resumed_logs_each_step_once(void **state) {
  fixture *f = *state;
  run r;
  int64_t resumed = -1;
  int wstatus = 0;
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) child_killed_at_10(f->ck, f->path);
  assert_int_equal(waitpid(pid, &wstatus, 0), pid);
  assert_true(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL);
  char *text = slurp(f->path);
  assert_true(every_second_step_once(text, 10)); /* what the killed run left */
  free(text);

  assert_ok(run_new(&r, &f->te->env, f->ck, f->path, 4, 14, 0, &f->st), &f->st);
  assert_ok(train(&r, &resumed, &f->st), &f->st);
  run_free(&r);
  assert_int_equal(resumed, 8);
  assert_logged(f->te, HK_LOG_INFO, "resumed at step 8: kept 4 row(s), dropped 1 row(s) past that step.");
  text = slurp(f->path);
  assert_true(every_second_step_once(text, 14));
  free(text);
}

/* ---- H81: power losses (crash_fs) --------------------------------------------------- */

typedef struct crash_check {
  fixture *f;
  char *scratch;
  unsigned long seq, checked;
} crash_check;

/* Every crash state: resume it to step 12 on POSIX; the log then holds
 * the rows of 2, 4, ..., 12 once each — the rows up to the restored
 * checkpoint survived the power loss (the log is fsynced before each
 * checkpoint), the later ones were written again. */
static int visit(void *user, const crash_state *cs) {
  crash_check *cc = user;
  run r;
  hk_status st = HK_STATUS_INIT;
  char name[32];
  char *root, *ck, *path, *text;
  int64_t resumed = -1;
  hk_env env = cc->f->te->env;
  crash_fs *next;
  hk_code rc;

  snprintf(name, sizeof name, "s%lu", cc->seq++);
  root = test_path(cc->scratch, name);
  assert_int_equal(mkdir(root, 0755), 0);
  crash_state_materialize(cs, root);
  next = crash_fs_new(root); /* POSIX without real fsyncs: fast */
  crash_fs_bind(next, &env);
  ck = test_path(root, "ck");
  path = test_path(root, "metrics.jsonl");
  assert_ok(run_new(&r, &env, ck, path, 4, 12, 0, &st), &st);
  rc = train(&r, &resumed, &st);
  run_free(&r);
  crash_fs_free(next);
  if (rc != HK_OK) fail_msg("%s: the resume failed: %s", crash_state_describe(cs), st.message);
  text = slurp(path);
  if (!every_second_step_once(text, 12))
    fail_msg("%s (resumed at %lld): the log is not 2, 4, ..., 12 once each:\n%s", crash_state_describe(cs),
             (long long)resumed, text);
  free(text);
  free(path);
  free(ck);
  test_tmpdir_remove(root);
  free(root);
  cc->checked++;
  return 0;
}

static void test_metrics_log__every_power_loss_resumes_to_each_step_once(void **state) {
  fixture *f = *state;
  char *root = test_path(f->dir, "root");
  crash_check cc;
  crash_explore_stats stats;
  crash_fs *cf;
  run r;
  hk_env env = f->te->env;
  char *ck, *path;

  assert_int_equal(mkdir(root, 0755), 0);
  ck = test_path(root, "ck");
  path = test_path(root, "metrics.jsonl");
  cf = crash_fs_new(root);
  crash_fs_append_only(cf, 1);
  crash_fs_bind(cf, &env);
  assert_ok(run_new(&r, &env, ck, path, 4, 10, 0, &f->st), &f->st);
  assert_ok(train(&r, NULL, &f->st), &f->st);
  run_free(&r);

  memset(&cc, 0, sizeof cc);
  cc.f = f;
  cc.scratch = test_path(f->dir, "states");
  assert_int_equal(mkdir(cc.scratch, 0755), 0);
  crash_fs_explore(cf, NULL, visit, &cc, &stats);
  print_message("%lu crash states resumed\n", cc.checked);
  assert_true(cc.checked > 20);
  assert_int_equal(cc.checked, stats.distinct);
  crash_fs_free(cf);
  free(cc.scratch);
  free(ck);
  free(path);
  free(root);
}

/* ---- H81: no allocation in steady state ------------------------------------------- */

static void test_metrics_log__a_loop_step_allocates_nothing(void **state) {
  fixture *f = *state;
  run r;
  assert_ok(run_new(&r, &f->te->env, f->ck, f->path, 1000, HK_UNSET_STEPS, 0, &f->st), &f->st);
  assert_ok(hk_loop_start(r.loop, NULL, &f->st), &f->st);
  for (int i = 0; i < 9; i++) assert_ok(one_step(&r, &f->st), &f->st); /* caches: past the first rows and reports */
  test_alloc_reset_counts(&f->te->alloc);
  for (int i = 0; i < 40; i++) assert_ok(one_step(&r, &f->st), &f->st); /* 20 rows */
  assert_int_equal(test_alloc_count(&f->te->alloc), 0);
  assert_ok(hk_loop_finish(r.loop, &f->st), &f->st);
  run_free(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_metrics_log__writes_rows_of_a_host_loops_arrays, setup, teardown),
      cmocka_unit_test_setup_teardown(test_metrics_log__runs_before_the_loops_checkpoint_saver, setup, teardown),
      cmocka_unit_test_setup_teardown(test_metrics_log__loop_refuses_a_second_log_and_other_hooks, setup, teardown),
      cmocka_unit_test_setup_teardown(test_metrics_log__loop_names_an_array_that_is_no_number, setup, teardown),
      cmocka_unit_test_setup_teardown(test_metrics_log__a_killed_run_resumed_logs_each_step_once, setup, teardown),
      cmocka_unit_test_setup_teardown(test_metrics_log__every_power_loss_resumes_to_each_step_once, setup, teardown),
      cmocka_unit_test_setup_teardown(test_metrics_log__a_loop_step_allocates_nothing, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
