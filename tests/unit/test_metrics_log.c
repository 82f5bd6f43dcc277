/*
 * Tests of the MetricsLogHook (contract H78–H81) on the embedded graph
 * executor: the rows and their cadence, the CSV and JSON-lines formats
 * (quoting, numbers that read back exactly, NaN and infinities, missing
 * values), reported values, a restart that drops the rows past the
 * restored checkpoint and a last line cut short, a CSV file of other
 * columns refused, a failed write, the fsync before each checkpoint,
 * option validation and a step that allocates nothing. The host loop's
 * side (and a killed process, and power losses) is in
 * test_metrics_log_restarts.c. Everything goes through the public headers.
 */
#include "faulty_fs.h"
#include "session_fixture.h"
#include "tmpdir.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct model {
  hk_graph *g;
  hk_handle gs, train;
  float loss; /* the test sets it before each step */
  int64_t hits;
  float vec[2]; /* not one number */
} model;

typedef struct fixture {
  test_env *te;
  model m;
  hk_hook *ml, *ck;
  hk_session *s;
  char *dir, *ckdir, *path;
  hk_status st;
} fixture;

static void add_var(fixture *f, const char *name, hk_dtype dtype, void *data) {
  static const int64_t two[1] = {2};
  hk_variable_def vd = HK_VARIABLE_DEF_INIT;
  hk_handle h;
  vd.name = name;
  vd.dtype = dtype;
  if (data == f->m.vec) {
    vd.rank = 1;
    vd.dims = two;
  }
  vd.flags = HK_VAR_LOCAL;
  vd.external_data = data;
  assert_ok(hk_graph_variable(f->m.g, &h, &vd, &f->st), &f->st);
}

static void build(fixture *f) {
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_handle one_h;
  int64_t one = 1;
  hk_tensor t;
  go.env = &f->te->env;
  assert_ok(hk_graph_new(&f->m.g, &go, &f->st), &f->st);
  assert_ok(hk_graph_get_or_create_global_step(f->m.g, &f->m.gs, &f->st), &f->st);
  t = hk_tensor_scalar_i64(&one);
  assert_ok(hk_graph_constant(f->m.g, &one_h, "one", &t, &f->st), &f->st);
  assert_ok(hk_graph_assign_add(f->m.g, &f->m.train, "train", f->m.gs, one_h, &f->st), &f->st);
  add_var(f, "loss", HK_DTYPE_F32, &f->m.loss);
  add_var(f, "hits", HK_DTYPE_I64, &f->m.hits);
  add_var(f, "vec", HK_DTYPE_F32, f->m.vec);
}

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  assert_non_null(f);
  f->te = test_env_new();
  f->dir = test_tmpdir_new("metrics_log");
  f->ckdir = test_path(f->dir, "ck");
  f->path = test_path(f->dir, "logs/metrics.csv");
  build(f);
  *state = f;
  return 0;
}

static void close_session(fixture *f, hk_code exit_code) {
  if (!f->s) return;
  (void)hk_session_close(f->s, exit_code, NULL);
  hk_session_free(f->s);
  f->s = NULL;
}

static int teardown(void **state) {
  fixture *f = *state;
  close_session(f, HK_OK);
  hk_hook_free(f->ml);
  hk_hook_free(f->ck);
  hk_graph_free(f->m.g);
  test_tmpdir_free(f->dir);
  free(f->ckdir);
  free(f->path);
  test_env *te = f->te;
  free(f);
  return test_env_release(te);
}

static const char *const cols[] = {"loss", "hits"};
static const char *const reported[] = {"val_loss"};

static hk_metrics_log_options ml_opts(fixture *f, int64_t every) {
  hk_metrics_log_options o = HK_METRICS_LOG_OPTIONS_INIT;
  o.path = f->path;
  o.tensors = cols;
  o.ntensors = 2;
  o.reported = reported;
  o.nreported = 1;
  o.every_n_steps = every;
  return o;
}

static void make_ml(fixture *f, const hk_metrics_log_options *o) {
  hk_hook_free(f->ml);
  f->ml = NULL;
  assert_ok(hk_metrics_log_hook_new(&f->ml, o, &f->st), &f->st);
}

/* A checkpoint saver every `save_steps`, after the metrics log, with the
 * log's listener. */
static void make_ck(fixture *f, int64_t save_steps) {
  hk_checkpoint_saver_options co = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
  hk_checkpoint_listener l;
  assert_ok(hk_metrics_log_checkpoint_listener(&l, f->ml, &f->st), &f->st);
  co.checkpoint_dir = f->ckdir;
  co.save_steps = save_steps;
  co.save_graph_def = 0;
  co.listeners = &l;
  co.nlisteners = 1;
  hk_hook_free(f->ck);
  f->ck = NULL;
  assert_ok(hk_checkpoint_saver_hook_new(&f->ck, &co, &f->st), &f->st);
}

static hk_code open_session(fixture *f) {
  hk_hook *hooks[2] = {f->ml, f->ck};
  hk_session_options so;
  test_session_options(&so, &f->te->env, HK_SESSION_SINGULAR, hk_graph_executor(f->m.g), hooks, f->ck ? 2 : 1);
  if (f->ck) so.checkpoint_dir = f->ckdir;
  return hk_session_new(&f->s, &so, &f->st);
}

/* Steps until the global step is `to`; the loss is the step's end / 4. */
static void run_to(fixture *f, int64_t from, int64_t to) {
  for (int64_t s = from + 1; s <= to; s++) {
    f->m.loss = (float)s / 4;
    f->m.hits = s * 10;
    assert_ok(session_run_train(f->s, f->m.train, &f->st), &f->st);
  }
}

static char *slurp(const char *path) {
  size_t n = 0;
  char *text = test_read_file(path, &n);
  assert_non_null(text);
  return text;
}

/* The steps of the rows, in file order (CSV: after the header). */
static size_t steps_of(const char *text, int json, int64_t *steps, size_t cap) {
  size_t n = 0;
  const char *p = text;
  if (!json) p = strchr(p, '\n') + 1;
  while (*p && n < cap) {
    steps[n++] = strtoll(json ? p + strlen("{\"step\":") : p, NULL, 10);
    p = strchr(p, '\n');
    assert_non_null(p);
    p++;
  }
  return n;
}

/* ---- H78: the rows, their cadence and the CSV format ----------------------------- */

/* H78: a row after each step that brings the global step to a multiple of
 * every_n_steps, with the step, the wall time, the fetched tensors and the
 * reported value (empty when none was reported since the previous row). */
static void test_metrics_log__writes_a_csv_row_every_n_steps(void **state) {
  fixture *f = *state;
  hk_metrics_log_options o = ml_opts(f, 2);
  make_ml(f, &o);
  assert_ok(open_session(f), &f->st);
  run_to(f, 0, 3);
  assert_ok(hk_metrics_log_report(f->ml, "val_loss", 0.1, &f->st), &f->st);
  run_to(f, 3, 5);
  close_session(f, HK_OK);
  char *text = slurp(f->path);
  assert_string_equal(text,
                      "step,wall_time,loss,hits,val_loss\n"
                      "2,1700000000,0.5,20,\n"
                      "4,1700000000,1,40,0.1\n");
  free(text);
}

/* H79: JSON lines: one object a line, null for a value not reported, NaN
 * and infinities as the strings NaN, Infinity, -Infinity; numbers read back
 * as the same double. */
static void test_metrics_log__writes_json_lines_with_exact_numbers_and_named_non_finite(void **state) {
  fixture *f = *state;
  hk_metrics_log_options o = ml_opts(f, 1);
  free(f->path);
  f->path = test_path(f->dir, "metrics.jsonl");
  o.path = f->path;
  make_ml(f, &o);
  assert_ok(open_session(f), &f->st);
  f->m.loss = NAN;
  assert_ok(session_run_train(f->s, f->m.train, &f->st), &f->st);
  f->m.loss = -INFINITY;
  assert_ok(hk_metrics_log_report(f->ml, "val_loss", INFINITY, &f->st), &f->st);
  assert_ok(session_run_train(f->s, f->m.train, &f->st), &f->st);
  f->m.loss = 0.1f;
  f->m.hits = -7;
  assert_ok(hk_metrics_log_report(f->ml, "val_loss", 0.1 + 0.2, &f->st), &f->st);
  assert_ok(session_run_train(f->s, f->m.train, &f->st), &f->st);
  close_session(f, HK_OK);
  char *text = slurp(f->path);
  assert_string_equal(
      text,
      "{\"step\":1,\"wall_time\":1700000000,\"loss\":\"NaN\",\"hits\":0,\"val_loss\":null}\n"
      "{\"step\":2,\"wall_time\":1700000000,\"loss\":\"-Infinity\",\"hits\":0,\"val_loss\":\"Infinity\"}\n"
      "{\"step\":3,\"wall_time\":1700000000,\"loss\":0.1,\"hits\":-7,\"val_loss\":0.30000000000000004}\n");
  /* Round trip: the text of 0.1 + 0.2 reads back as that double. */
  assert_true(strtod("0.30000000000000004", NULL) == 0.1 + 0.2);
  free(text);
}

/* H79: CSV names with a comma, a quote or a newline are quoted (RFC 4180),
 * NaN and infinities are nan, inf, -inf. */
static void test_metrics_log__quotes_csv_names_and_writes_non_finite_as_python_reads_them(void **state) {
  fixture *f = *state;
  static const char *const odd[] = {"a,b", "say \"hi\"", "two\nlines"};
  hk_metrics_log_options o = ml_opts(f, 1);
  o.tensors = NULL;
  o.ntensors = 0;
  o.reported = odd;
  o.nreported = 3;
  make_ml(f, &o);
  assert_ok(open_session(f), &f->st);
  assert_ok(hk_metrics_log_report(f->ml, "a,b", NAN, &f->st), &f->st);
  assert_ok(hk_metrics_log_report(f->ml, "say \"hi\"", INFINITY, &f->st), &f->st);
  assert_ok(hk_metrics_log_report(f->ml, "two\nlines", -INFINITY, &f->st), &f->st);
  run_to(f, 0, 1);
  close_session(f, HK_OK);
  char *text = slurp(f->path);
  assert_string_equal(text, "step,wall_time,\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\"\n1,1700000000,nan,inf,-inf\n");
  free(text);
}

/* H78: every_n_secs: the first step writes, then a step at least that many
 * seconds after the previous row. */
static void test_metrics_log__every_n_secs_writes_after_the_time_has_come(void **state) {
  fixture *f = *state;
  hk_metrics_log_options o = ml_opts(f, HK_UNSET_STEPS);
  int64_t steps[8];
  o.every_n_secs = 10;
  make_ml(f, &o);
  assert_ok(open_session(f), &f->st);
  run_to(f, 0, 3);                       /* row at 1 */
  test_clock_advance(&f->te->clock, 10); /* the time has come: row at 4 */
  run_to(f, 3, 6);
  close_session(f, HK_OK);
  char *text = slurp(f->path);
  assert_int_equal(steps_of(text, 0, steps, 8), 2);
  assert_int_equal(steps[0], 1);
  assert_int_equal(steps[1], 4);
  free(text);
}

/* H78: columns name the tensors' columns ("loss" for a tensor "train:0"). */
static void test_metrics_log__names_tensor_columns_as_asked(void **state) {
  fixture *f = *state;
  static const char *const named[] = {"train_loss", "hit_count"};
  hk_metrics_log_options o = ml_opts(f, 1);
  o.columns = named;
  make_ml(f, &o);
  assert_ok(open_session(f), &f->st);
  run_to(f, 0, 1);
  close_session(f, HK_OK);
  char *text = slurp(f->path);
  assert_string_equal(text, "step,wall_time,train_loss,hit_count,val_loss\n1,1700000000,0.25,10,\n");
  free(text);
}

/* Out of memory at each allocation of the construction: RESOURCE_EXHAUSTED,
 * nothing leaked (the teardown checks), then success. */
static void test_metrics_log__construction_fails_cleanly_out_of_memory(void **state) {
  fixture *f = *state;
  hk_metrics_log_options o = ml_opts(f, 1);
  hk_env env = f->te->env;
  long n;
  o.env = &env;
  for (n = 0;; n++) {
    hk_hook *h = NULL;
    hk_code rc;
    test_alloc_fail_at(&f->te->alloc, n, 0);
    rc = hk_metrics_log_hook_new(&h, &o, &f->st);
    test_alloc_fail_at(&f->te->alloc, -1, 0);
    if (rc == HK_OK) {
      hk_hook_free(h);
      break;
    }
    assert_status(rc, &f->st, HK_RESOURCE_EXHAUSTED, "out of memory");
    assert_null(h);
  }
  assert_true(n > 10);
}

/* ---- H80: restarts ------------------------------------------------------------------ */

/* H80: a run that stops without its final checkpoint (a crash) leaves rows
 * past its newest checkpoint; the restart from that checkpoint drops them
 * (and a last line cut short), keeps the header once and goes on, so every
 * step has one row. */
static void test_metrics_log__restart_drops_rows_past_the_restored_step(void **state) {
  fixture *f = *state;
  hk_metrics_log_options o = ml_opts(f, 2);
  hk_metrics_log_info info;
  int64_t steps[16];
  make_ml(f, &o);
  make_ck(f, 4);
  assert_ok(open_session(f), &f->st);
  run_to(f, 0, 10);              /* rows 2..10, checkpoints 0, 4, 8 */
  close_session(f, HK_INTERNAL); /* not clean: no end(), no final checkpoint */
  {
    FILE *fp = fopen(f->path, "a"); /* a write cut short by the crash */
    assert_non_null(fp);
    fputs("12,17000", fp);
    fclose(fp);
  }
  assert_ok(open_session(f), &f->st); /* restores step 8 */
  assert_ok(hk_metrics_log_hook_info(&info, f->ml, &f->st), &f->st);
  assert_int_equal(info.kept_rows, 4);
  assert_int_equal(info.dropped_rows, 1);
  assert_true(info.dropped_torn);
  assert_logged(f->te, HK_LOG_INFO, "dropped 1 row(s) past that step and a last line cut short");
  run_to(f, 8, 14);
  close_session(f, HK_OK);
  char *text = slurp(f->path);
  assert_int_equal(steps_of(text, 0, steps, 16), 7);
  for (int i = 0; i < 7; i++) assert_int_equal(steps[i], 2 * (i + 1));
  assert_ptr_equal(strstr(text, "step,"), text);
  assert_null(strstr(text + 1, "step,"));
  assert_non_null(strstr(text, "\n10,1700000000,2.5,100,\n")); /* the resumed run's row 10 */
  free(text);
}

/* A hook whose after_run fails with ABORTED once, at global step 10. */
static hk_code abort_at_10(void *user, hk_run_context *ctx, const hk_run_values *values, hk_status *status) {
  int *done = user;
  int64_t gs = 0;
  (void)values;
  if (*done || hk_raw_session_global_step(&gs, hk_run_context_session(ctx), status) != HK_OK || gs != 10) return HK_OK;
  *done = 1;
  return hk_status_set(status, HK_ABORTED, "abort_at_10: a preemption");
}

static const hk_hook_vtable abort_vtable = {HK_HOOK_VTABLE_VERSION, NULL, NULL, NULL, abort_at_10, NULL, NULL};

/* H80: a monitored session that recovers from a preemption re-creates its
 * raw session from the newest checkpoint (step 8); the hook's creation
 * drops the rows past it (step 10), and the retried run writes them again:
 * each step once. */
static void test_metrics_log__a_recovered_session_logs_each_step_once(void **state) {
  fixture *f = *state;
  hk_metrics_log_options o = ml_opts(f, 2);
  hk_session_options so;
  hk_hook *aborter = NULL;
  int done = 0;
  int64_t steps[16];
  make_ml(f, &o);
  make_ck(f, 4);
  assert_ok(hk_hook_new(&aborter, &abort_vtable, &done, "aborter", NULL, &f->st), &f->st);
  hk_hook *hooks[3] = {f->ml, f->ck, aborter};
  test_session_options(&so, &f->te->env, HK_SESSION_MONITORED, hk_graph_executor(f->m.g), hooks, 3);
  so.checkpoint_dir = f->ckdir;
  so.recovery_initial_delay_secs = 0;
  assert_ok(hk_session_new(&f->s, &so, &f->st), &f->st);
  /* 15 runs: the 10th is retried from step 8, so the global step ends at 14. */
  for (int i = 0; i < 15; i++) assert_ok(session_run_train(f->s, f->m.train, &f->st), &f->st);
  assert_true(done);
  assert_logged(f->te, HK_LOG_INFO, "resumed at step 8: kept 4 row(s), dropped 1 row(s) past that step.");
  close_session(f, HK_OK);
  hk_hook_free(aborter);
  char *text = slurp(f->path);
  assert_int_equal(steps_of(text, 0, steps, 16), 7);
  for (int i = 0; i < 7; i++) assert_int_equal(steps[i], 2 * (i + 1));
  free(text);
}

/* H80: a CSV file whose header names other columns is refused, naming both
 * lists, and left as it was. */
static void test_metrics_log__refuses_a_csv_file_of_other_columns(void **state) {
  fixture *f = *state;
  static const char other[] = "step,wall_time,acc\n2,1700000000,0.5\n";
  hk_metrics_log_options o = ml_opts(f, 2);
  char *logs = test_path(f->dir, "logs");
  assert_int_equal(mkdir(logs, 0755), 0);
  free(logs);
  assert_int_equal(test_write_file(f->path, other, strlen(other)), 0);
  make_ml(f, &o);
  assert_status(open_session(f), &f->st, HK_FAILED_PRECONDITION,
                "has the columns \"step,wall_time,acc\", this run's are \"step,wall_time,loss,hits,val_loss\"");
  char *text = slurp(f->path);
  assert_string_equal(text, other);
  free(text);
}

/* H80: a file whose first line is no row is refused and left as it was; a
 * JSON-lines log takes rows of other columns (each row names its keys). */
static void test_metrics_log__refuses_a_foreign_file_and_lets_json_lines_change_columns(void **state) {
  fixture *f = *state;
  static const char foreign[] = "hello\n", one_line[] = "hello";
  static const char old[] = "{\"step\":0,\"wall_time\":1,\"acc\":0.5}\n";
  hk_metrics_log_options o = ml_opts(f, 1);
  free(f->path);
  f->path = test_path(f->dir, "metrics.jsonl");
  o.path = f->path;
  assert_int_equal(test_write_file(f->path, foreign, strlen(foreign)), 0);
  make_ml(f, &o);
  assert_status(open_session(f), &f->st, HK_FAILED_PRECONDITION, "is no metrics log");
  char *text = slurp(f->path);
  assert_string_equal(text, foreign);
  free(text);
  /* Nor is a line without its newline, unless it starts as a row does. */
  assert_int_equal(test_write_file(f->path, one_line, strlen(one_line)), 0);
  assert_status(open_session(f), &f->st, HK_FAILED_PRECONDITION, "is no metrics log");
  text = slurp(f->path);
  assert_string_equal(text, one_line);
  free(text);
  assert_int_equal(test_write_file(f->path, old, strlen(old)), 0);
  assert_ok(open_session(f), &f->st);
  run_to(f, 0, 1);
  close_session(f, HK_OK);
  text = slurp(f->path);
  assert_string_equal(text,
                      "{\"step\":0,\"wall_time\":1,\"acc\":0.5}\n"
                      "{\"step\":1,\"wall_time\":1700000000,\"loss\":0.25,\"hits\":10,\"val_loss\":null}\n");
  free(text);
}

/* H81: a row whose write fails fails the run, naming the file, and the
 * hook writes nothing more; the next start drops the line cut short. */
static void test_metrics_log__a_failed_write_stops_the_log_and_the_restart_drops_its_line(void **state) {
  fixture *f = *state;
  faulty_fs ff;
  hk_metrics_log_options o = ml_opts(f, 1);
  hk_metrics_log_info info;
  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &f->te->env);
  make_ml(f, &o);
  assert_ok(open_session(f), &f->st);
  run_to(f, 0, 1);
  faulty_fs_short_writes(&ff, 5);                           /* the row goes out 5 bytes at a time ... */
  faulty_fs_fail_errno(&ff, FAULTY_FS_WRITE, 2, ENOSPC, 0); /* ... and the disk fills after 10 */
  f->m.loss = 1;
  assert_status(session_run_train(f->s, f->m.train, &f->st), &f->st, HK_RESOURCE_EXHAUSTED, "metrics.csv");
  close_session(f, HK_INTERNAL);
  faulty_fs_reset(&ff);
  char *text = slurp(f->path);
  assert_string_equal(text, "step,wall_time,loss,hits,val_loss\n1,1700000000,0.25,10,\n2,17000000");
  free(text);
  assert_ok(open_session(f), &f->st);
  assert_ok(hk_metrics_log_hook_info(&info, f->ml, &f->st), &f->st);
  assert_true(info.dropped_torn);
  close_session(f, HK_OK);
  text = slurp(f->path);
  assert_string_equal(text, "step,wall_time,loss,hits,val_loss\n");
  free(text);
  hk_hook_free(f->ml); /* its log file was opened through ff: closed before ff goes */
  f->ml = NULL;
  faulty_fs_destroy(&ff);
}

/* H81: a file-system failure at any call of a creation's rewrite fails
 * the creation (a failed close of the file it read is only ignored),
 * closes every handle, and leaves the old file or the new one, whole; once
 * the failures stop, the creation works and leaves no temporary file. */
static void test_metrics_log__a_failed_rewrite_leaves_the_old_file_or_the_new_one(void **state) {
  fixture *f = *state;
  static faulty_fs ff;
  static const char old[] = "step,wall_time,loss,hits,val_loss\n2,1,0.5,20,\n4,1,1,40,\n6,1,1.5,";
  static const char header[] = "step,wall_time,loss,hits,val_loss\n"; /* what a creation at step 0 keeps */
  hk_metrics_log_options o = ml_opts(f, 2);
  char *logs = test_path(f->dir, "logs"), *tmp = test_path(f->dir, "logs/metrics.csv.tmp");
  long n, failed = 0;
  assert_int_equal(mkdir(logs, 0755), 0);
  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &f->te->env);
  make_ml(f, &o);
  for (n = 0;; n++) {
    hk_code rc;
    char *text;
    assert_int_equal(test_write_file(f->path, old, strlen(old)), 0);
    faulty_fs_fail_errno(&ff, FAULTY_FS_ANY, n, EIO, 0);
    rc = open_session(f);
    if (faulty_fs_injected(&ff) == 0) {
      assert_ok(rc, &f->st);
      close_session(f, HK_OK);
      break;
    }
    if (rc == HK_OK) {
      close_session(f, HK_OK);
    } else {
      assert_int_equal(faulty_fs_open_handles(&ff), 0);
      failed++;
    }
    faulty_fs_reset(&ff);
    text = slurp(f->path);
    if (rc == HK_OK || strcmp(text, old) != 0) assert_string_equal(text, header);
    free(text);
  }
  assert_true(failed >= 8); /* stat, open, size, read, unlink, create, write, sync, rename, sync_dir */
  assert_false(test_path_exists(tmp));
  char *text = slurp(f->path);
  assert_string_equal(text, header);
  free(text);
  hk_hook_free(f->ml); /* its log file was opened through ff: closed before ff goes */
  f->ml = NULL;
  faulty_fs_destroy(&ff);
  free(logs);
  free(tmp);
}

/* H81: the listener fsyncs the log before each checkpoint, and end()
 * fsyncs it once more. */
static void test_metrics_log__fsyncs_the_log_before_each_checkpoint(void **state) {
  fixture *f = *state;
  static faulty_fs ff; /* static: a failed assertion leaves the session bound to it until teardown */
  hk_metrics_log_options o = ml_opts(f, 1);
  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &f->te->env);
  faulty_fs_match(&ff, "metrics.csv"); /* only the log's calls fail */
  make_ml(f, &o);
  make_ck(f, 3);
  assert_ok(open_session(f), &f->st);
  faulty_fs_fail_errno(&ff, FAULTY_FS_SYNC, 0, EIO, 1); /* every fsync of the log fails from now on */
  run_to(f, 0, 2);                                      /* rows, no fsync */
  f->m.loss = 3;
  assert_status(session_run_train(f->s, f->m.train, &f->st), &f->st, HK_UNKNOWN, "fsync of"); /* a checkpoint */
  assert_int_equal(faulty_fs_injected(&ff), 1);
  assert_status(hk_metrics_log_sync(f->ml, &f->st), &f->st, HK_UNKNOWN, "metrics.csv");
  close_session(f, HK_INTERNAL);
  faulty_fs_reset(&ff);
  /* end() fsyncs too. */
  assert_ok(open_session(f), &f->st);
  faulty_fs_fail_errno(&ff, FAULTY_FS_SYNC, 0, EIO, 1);
  (void)hk_session_close(f->s, HK_OK, &f->st);
  assert_int_equal(faulty_fs_injected(&ff), 1);
  hk_session_free(f->s);
  f->s = NULL;
  hk_hook_free(f->ml); /* its log file was opened through ff: closed before ff goes */
  f->ml = NULL;
  faulty_fs_destroy(&ff);
}

/* H81: a MonitoredTrainingSession hands its checkpoint listeners to its
 * checkpoint saver: the log (in chief_only_hooks, before the saver) is
 * fsynced before each checkpoint. */
static void test_metrics_log__training_session_fsyncs_the_log_before_each_checkpoint(void **state) {
  fixture *f = *state;
  static faulty_fs ff;
  hk_metrics_log_options o = ml_opts(f, 1);
  hk_training_session_options to = HK_TRAINING_SESSION_OPTIONS_INIT;
  hk_checkpoint_listener l;
  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &f->te->env);
  faulty_fs_match(&ff, "metrics.csv");
  make_ml(f, &o);
  assert_ok(hk_metrics_log_checkpoint_listener(&l, f->ml, &f->st), &f->st);
  to.env = &f->te->env;
  to.executor = hk_graph_executor(f->m.g);
  to.checkpoint_dir = f->ckdir;
  to.save_checkpoint_steps = 3;
  to.save_summaries_steps = 0;
  to.log_step_count_steps = 0;
  to.chief_only_hooks = &f->ml;
  to.nchief_only_hooks = 1;
  to.ncheckpoint_listeners = 1;
  assert_status(hk_training_session_new(&f->s, &to, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "checkpoint_listeners is NULL with a count of 1");
  to.checkpoint_listeners = &l;
  assert_ok(hk_training_session_new(&f->s, &to, &f->st), &f->st);
  faulty_fs_fail_errno(&ff, FAULTY_FS_SYNC, 0, EIO, 1);
  run_to(f, 0, 2);
  assert_status(session_run_train(f->s, f->m.train, &f->st), &f->st, HK_UNKNOWN, "fsync of");
  close_session(f, HK_INTERNAL);
  hk_hook_free(f->ml); /* its log file was opened through ff: closed before ff goes */
  f->ml = NULL;
  faulty_fs_destroy(&ff);
}

/* ---- options and misuse --------------------------------------------------------------- */

static void test_metrics_log__refuses_bad_options_naming_them(void **state) {
  fixture *f = *state;
  static const char *const dup[] = {"loss", "loss"};
  static const char *const step_col[] = {"step"};
  static const char *const empty[] = {""};
  hk_hook *h = NULL;
  hk_metrics_log_options o = ml_opts(f, 2);
  assert_status(hk_metrics_log_hook_new(&h, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "opts is NULL");
  o.path = NULL;
  assert_status(hk_metrics_log_hook_new(&h, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "path is required");
  o.path = "m.txt";
  assert_status(hk_metrics_log_hook_new(&h, &o, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "ends in neither .csv nor .jsonl");
  o.format = HK_METRICS_LOG_JSONL;
  assert_ok(hk_metrics_log_hook_new(&h, &o, &f->st), &f->st);
  hk_hook_free(h);
  h = NULL;
  o.format = (hk_metrics_log_format)7;
  assert_status(hk_metrics_log_hook_new(&h, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "format 7");
  o = ml_opts(f, 2);
  o.tensors = dup;
  assert_status(hk_metrics_log_hook_new(&h, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "'loss' is given twice");
  o.tensors = step_col;
  o.ntensors = 1;
  assert_status(hk_metrics_log_hook_new(&h, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "tensors[0] is 'step'");
  o.tensors = empty;
  assert_status(hk_metrics_log_hook_new(&h, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "tensors[0] is an empty name");
  o.tensors = NULL;
  assert_status(hk_metrics_log_hook_new(&h, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "tensors is NULL");
  o = ml_opts(f, HK_UNSET_STEPS);
  assert_status(hk_metrics_log_hook_new(&h, &o, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "Either every_n_secs or every_n_steps should be provided.");
  o.every_n_steps = 0;
  assert_status(hk_metrics_log_hook_new(&h, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "every_n_steps");
  o.every_n_steps = 1;
  o.every_n_secs = 5;
  assert_status(hk_metrics_log_hook_new(&h, &o, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "Can not provide both every_n_secs and every_n_steps.");
  assert_null(h);
  /* Reports name a reported column. */
  o = ml_opts(f, 2);
  make_ml(f, &o);
  assert_status(hk_metrics_log_report(f->ml, "loss", 1, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "'loss' is not a reported column");
  assert_status(hk_metrics_log_report(NULL, "x", 1, &f->st), &f->st, HK_INVALID_ARGUMENT, "hook is NULL");
  assert_status(hk_metrics_log_sync(NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "is NULL");
}

/* begin() refuses an executor without a global step and names a tensor the
 * executor does not know; a row names a column that is not one number. */
static void test_metrics_log__names_an_unknown_tensor_and_a_column_that_is_no_number(void **state) {
  fixture *f = *state;
  static const char *const missing[] = {"nope"};
  static const char *const gs[] = {"one"};
  static const char *const vec[] = {"vec"};
  hk_metrics_log_options o = ml_opts(f, 1);
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_graph *no_gs = NULL;
  hk_session *s = NULL;
  hk_session_options so;
  make_ml(f, &o);
  go.env = &f->te->env;
  assert_ok(hk_graph_new(&no_gs, &go, &f->st), &f->st);
  test_session_options(&so, &f->te->env, HK_SESSION_SINGULAR, hk_graph_executor(no_gs), &f->ml, 1);
  assert_status(hk_session_new(&s, &so, &f->st), &f->st, HK_FAILED_PRECONDITION,
                "Global step should be created to use MetricsLogHook.");
  hk_graph_free(no_gs);
  o.tensors = missing;
  o.ntensors = 1;
  make_ml(f, &o);
  assert_status(open_session(f), &f->st, HK_NOT_FOUND, "column 'nope'");
  o.tensors = gs; /* a constant: one number, fine */
  make_ml(f, &o);
  assert_ok(open_session(f), &f->st);
  run_to(f, 0, 1);
  close_session(f, HK_OK);
  o.tensors = vec;
  o.path = f->path = strcat(realloc(f->path, strlen(f->path) + 8), ".2.csv"); /* other columns: another file */
  make_ml(f, &o);
  assert_ok(open_session(f), &f->st);
  assert_status(session_run_train(f->s, f->m.train, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "column 'vec' is f32 of 2 element(s); a metrics column is one number");
  close_session(f, HK_INTERNAL);
}

/* H81: a step allocates nothing, also when it writes a row (rows every 4
 * steps, so runs that fetch the tensors and runs that do not alternate;
 * values reported). */
static void test_metrics_log__a_step_allocates_nothing(void **state) {
  fixture *f = *state;
  hk_metrics_log_options o = ml_opts(f, 4);
  make_ml(f, &o);
  make_ck(f, 1000);
  assert_ok(open_session(f), &f->st);
  run_to(f, 0, 9); /* caches: past the first two rows */
  test_alloc_reset_counts(&f->te->alloc);
  for (int64_t s = 9; s < 50; s++) {
    assert_ok(hk_metrics_log_report(f->ml, "val_loss", (double)s, &f->st), &f->st);
    run_to(f, s, s + 1);
  }
  assert_int_equal(test_alloc_count(&f->te->alloc), 0);
  close_session(f, HK_OK);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_metrics_log__writes_a_csv_row_every_n_steps, setup, teardown),
      cmocka_unit_test_setup_teardown(test_metrics_log__writes_json_lines_with_exact_numbers_and_named_non_finite,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_metrics_log__quotes_csv_names_and_writes_non_finite_as_python_reads_them,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_metrics_log__every_n_secs_writes_after_the_time_has_come, setup, teardown),
      cmocka_unit_test_setup_teardown(test_metrics_log__names_tensor_columns_as_asked, setup, teardown),
      cmocka_unit_test_setup_teardown(test_metrics_log__construction_fails_cleanly_out_of_memory, setup, teardown),
      cmocka_unit_test_setup_teardown(test_metrics_log__restart_drops_rows_past_the_restored_step, setup, teardown),
      cmocka_unit_test_setup_teardown(test_metrics_log__a_recovered_session_logs_each_step_once, setup, teardown),
      cmocka_unit_test_setup_teardown(test_metrics_log__refuses_a_csv_file_of_other_columns, setup, teardown),
      cmocka_unit_test_setup_teardown(test_metrics_log__refuses_a_foreign_file_and_lets_json_lines_change_columns,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_metrics_log__a_failed_write_stops_the_log_and_the_restart_drops_its_line,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_metrics_log__a_failed_rewrite_leaves_the_old_file_or_the_new_one, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_metrics_log__fsyncs_the_log_before_each_checkpoint, setup, teardown),
      cmocka_unit_test_setup_teardown(test_metrics_log__training_session_fsyncs_the_log_before_each_checkpoint, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_metrics_log__refuses_bad_options_naming_them, setup, teardown),
      cmocka_unit_test_setup_teardown(test_metrics_log__names_an_unknown_tensor_and_a_column_that_is_no_number, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_metrics_log__a_step_allocates_nothing, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
