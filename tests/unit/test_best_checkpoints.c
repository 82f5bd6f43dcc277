/*
 * Tests of best-k retention (contract H45, with D4, D6): the checkpoint
 * saver hooks' best_k, best_metric and best_mode keep the k best managed
 * checkpoints by a metric beside the max_to_keep newest; a best one leaves
 * when it falls out of the best k (unless still among the newest); the
 * ranking is recorded in "checkpoint.best" before the state file and read
 * back by the next Saver, so it survives a restart; every file-system
 * failure of a save leaves the directory as it was (faulty_fs). On the
 * embedded graph executor, synchronous and asynchronous hooks, through the
 * public headers only.
 */
#include "faulty_fs.h"
#include "session_fixture.h"
#include "tmpdir.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fixture {
  test_env *te;
  faulty_fs ff;
  hk_graph *g;
  hk_handle gs, train;
  double metric; /* what the ranked variable holds: the test sets it */
  float w[3];
  float vec[2];
  hk_saver *saver;
  hk_hook *hook;
  hk_session *s;
  char *root, *dir;
  hk_status st;
} fixture;

static void build_graph(fixture *f) {
  static const int64_t three[1] = {3}, two[1] = {2};
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_variable_def vd = HK_VARIABLE_DEF_INIT;
  hk_handle one_h, h;
  int64_t one = 1;
  hk_tensor t;
  go.env = &f->te->env;
  assert_ok(hk_graph_new(&f->g, &go, &f->st), &f->st);
  assert_ok(hk_graph_get_or_create_global_step(f->g, &f->gs, &f->st), &f->st);
  t = hk_tensor_scalar_i64(&one);
  assert_ok(hk_graph_constant(f->g, &one_h, "one", &t, &f->st), &f->st);
  assert_ok(hk_graph_assign_add(f->g, &f->train, "train", f->gs, one_h, &f->st), &f->st);
  vd.name = "w";
  vd.dtype = HK_DTYPE_F32;
  vd.rank = 1;
  vd.dims = three;
  vd.external_data = f->w;
  assert_ok(hk_graph_variable(f->g, &h, &vd, &f->st), &f->st);
  vd.name = "metric";
  vd.dtype = HK_DTYPE_F64;
  vd.rank = 0;
  vd.dims = NULL;
  vd.flags = HK_VAR_LOCAL;
  vd.external_data = &f->metric;
  assert_ok(hk_graph_variable(f->g, &h, &vd, &f->st), &f->st);
  vd.name = "vec";
  vd.dtype = HK_DTYPE_F32;
  vd.rank = 1;
  vd.dims = two;
  vd.external_data = f->vec;
  assert_ok(hk_graph_variable(f->g, &h, &vd, &f->st), &f->st);
}

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  assert_non_null(f);
  f->te = test_env_new();
  faulty_fs_init(&f->ff);
  faulty_fs_bind(&f->ff, &f->te->env); /* passes through until armed */
  build_graph(f);
  f->root = test_tmpdir_new("best");
  *state = f;
  return 0;
}

static void close_session(fixture *f, hk_code with) {
  if (!f->s) return;
  (void)hk_session_close(f->s, with, NULL);
  hk_session_free(f->s);
  f->s = NULL;
}

static void drop_hook(fixture *f) {
  hk_hook_free(f->hook);
  f->hook = NULL;
  hk_saver_free(f->saver);
  f->saver = NULL;
}

static int teardown(void **state) {
  fixture *f = *state;
  close_session(f, HK_OK);
  drop_hook(f);
  hk_graph_free(f->g);
  free(f->dir);
  test_tmpdir_free(f->root);
  test_env *te = f->te;
  faulty_fs_destroy(&f->ff);
  free(f);
  return test_env_release(te);
}

static void use_dir(fixture *f, const char *name) {
  free(f->dir);
  f->dir = test_path(f->root, name);
}

/* A Saver keeping max_to_keep, and a hook ranking by "metric". */
static void make_hook(fixture *f, int async, int64_t max_to_keep, int64_t best_k, hk_monitor_mode mode) {
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  hk_checkpoint_saver_options co = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
  drop_hook(f);
  so.executor = hk_graph_executor(f->g);
  so.max_to_keep = max_to_keep;
  assert_ok(hk_saver_new(&f->saver, &so, &f->st), &f->st);
  co.checkpoint_dir = f->dir;
  co.save_steps = 1;
  co.save_graph_def = 0;
  co.saver = f->saver;
  co.best_k = best_k;
  co.best_metric = best_k > 0 ? "metric" : NULL;
  co.best_mode = mode;
  co.block_when_busy = 1; /* every step's save happens, in order */
  assert_ok(async ? hk_async_checkpoint_saver_hook_new(&f->hook, &co, &f->st)
                  : hk_checkpoint_saver_hook_new(&f->hook, &co, &f->st),
            &f->st);
}

/* A singular session restoring from f->dir; its creation saves GS 0 (or
 * restores) with f->metric as it is. */
static void open_session(fixture *f) {
  hk_session_options so;
  test_session_options(&so, &f->te->env, HK_SESSION_SINGULAR, hk_graph_executor(f->g), &f->hook, 1);
  so.checkpoint_dir = f->dir;
  assert_ok(hk_session_new(&f->s, &so, &f->st), &f->st);
}

static hk_code step(fixture *f, double metric) {
  f->metric = metric;
  f->w[0] += 1;
  return session_run_train(f->s, f->train, &f->st);
}

/* The asynchronous hook's writes finish at its next after_run or end():
 * a save on demand waits for them. */
static void settle(fixture *f) { assert_ok(hk_checkpoint_saver_hook_save(NULL, f->hook, "settled", &f->st), &f->st); }

static int exists(fixture *f, int step) {
  char name[64];
  snprintf(name, sizeof name, "model.ckpt-%d.safetensors", step);
  char *p = test_path(f->dir, name);
  int yes = test_path_exists(p);
  free(p);
  return yes;
}

/* The steps whose data files exist, as "0 3 6". */
static void existing(fixture *f, int upto, char *out, size_t cap) {
  size_t len = 0;
  out[0] = '\0';
  for (int s = 0; s <= upto; s++)
    if (exists(f, s)) len += (size_t)snprintf(out + len, cap - len, "%s%d", len ? " " : "", s);
}

static char *read_in_dir(fixture *f, const char *name) {
  char *p = test_path(f->dir, name);
  char *text = test_read_file(p, NULL);
  free(p);
  return text;
}

/* The state file's list, as "3 6 7". */
static void listed(fixture *f, char *out, size_t cap) {
  hk_checkpoint_state *cs = NULL;
  size_t len = 0;
  out[0] = '\0';
  assert_ok(hk_checkpoint_state_get(&cs, &f->te->env, f->dir, NULL, &f->st), &f->st);
  for (size_t i = 0; i < hk_checkpoint_state_count(cs); i++) {
    const char *dash = strrchr(hk_checkpoint_state_path(cs, i), '-');
    len += (size_t)snprintf(out + len, cap - len, "%s%s", len ? " " : "", dash + 1);
  }
  hk_checkpoint_state_free(cs);
}

#define EXPECT_FILES(f, upto, want)           \
  do {                                        \
    char got_[128];                           \
    existing((f), (upto), got_, sizeof got_); \
    assert_string_equal(got_, (want));        \
  } while (0)

#define EXPECT_LISTED(f, want)         \
  do {                                 \
    char got_[128];                    \
    listed((f), got_, sizeof got_);    \
    assert_string_equal(got_, (want)); \
  } while (0)

/* ---- H45: the k best beside the max_to_keep newest --------------------------------- */

/* max_to_keep 2, best_k 2, lower is better. Metrics by step: 0:9 1:5 2:7
 * 3:3 4:8 5:6 6:4 7:10. After step 3, checkpoint 1 (5) is kept though two
 * newer ones exist; at step 6 it leaves the best two (3, 4) and is deleted,
 * and the ranking is in the record, best first. */
static void keeps_the_best(fixture *f, int async) {
  static const double m[8] = {9, 5, 7, 3, 8, 6, 4, 10};
  static const char *const files[8] = {"0", "0 1", "1 2", "1 2 3", "1 3 4", "1 3 4 5", "3 5 6", "3 6 7"};
  use_dir(f, async ? "async" : "sync");
  make_hook(f, async, 2, 2, HK_MONITOR_MIN);
  f->metric = m[0];
  open_session(f);
  if (async) settle(f);
  EXPECT_FILES(f, 7, files[0]);
  for (int s = 1; s < 8; s++) {
    assert_ok(step(f, m[s]), &f->st);
    if (async) settle(f);
    EXPECT_FILES(f, 7, files[s]);
  }
  EXPECT_LISTED(f, "3 6 7");
  char *rec = read_in_dir(f, "checkpoint.best");
  assert_non_null(rec);
  assert_string_equal(rec,
                      "# hooked best checkpoints 1\nmode: min\nbest: \"model.ckpt-3\" 3\nbest: \"model.ckpt-6\" 4\n");
  free(rec);
  /* The state file keeps TensorFlow's fields only. */
  char *state = read_in_dir(f, "checkpoint");
  assert_non_null(state);
  assert_null(strstr(state, "best"));
  assert_non_null(strstr(state, "model_checkpoint_path: \"model.ckpt-7\""));
  free(state);
  close_session(f, HK_OK);
  assert_true(exists(f, 7)); /* end() had nothing new to save */
}

/* H45: retention keeps the best_k checkpoints by the metric besides the max_to_keep newest. */
static void test_best_checkpoints__keeps_the_k_best_beside_the_newest(void **state) { keeps_the_best(*state, 0); }

/* H45: the asynchronous hook keeps the best_k checkpoints as the synchronous one does. */
static void test_best_checkpoints__the_async_hook_keeps_the_k_best_too(void **state) { keeps_the_best(*state, 1); }

/* H45: a new Saver and hook (a restarted program) read the ranking back: step 3
 * stays the best, step 6 leaves it at the first save and is deleted. */
static void test_best_checkpoints__ranking_survives_a_restart(void **state) {
  fixture *f = *state;
  keeps_the_best(f, 0);
  make_hook(f, 0, 2, 2, HK_MONITOR_MIN);
  test_log_clear(&f->te->log);
  open_session(f); /* restores 7; that checkpoint is not saved again (C94) */
  assert_logged(f->te, HK_LOG_INFO, "Restoring parameters from");
  EXPECT_FILES(f, 9, "3 6 7");
  assert_ok(step(f, 3.5), &f->st); /* 8: the best two are now 3 and 8 */
  EXPECT_FILES(f, 9, "3 7 8");
  EXPECT_LISTED(f, "3 7 8");
  assert_ok(step(f, 20), &f->st); /* 9: 7 leaves the newest two */
  EXPECT_FILES(f, 9, "3 8 9");
  char *rec = read_in_dir(f, "checkpoint.best");
  assert_string_equal(rec,
                      "# hooked best checkpoints 1\nmode: min\nbest: \"model.ckpt-3\" 3\nbest: \"model.ckpt-8\" 3.5\n");
  free(rec);

  /* Without best_k, the record is ignored: the oldest go as max_to_keep says. */
  close_session(f, HK_OK);
  make_hook(f, 0, 2, 0, HK_MONITOR_MIN);
  open_session(f);
  assert_ok(step(f, 0), &f->st); /* 10 */
  EXPECT_FILES(f, 10, "9 10");
}

/* H45: MAX, k 1, max_to_keep 1: NaN is never ranked; the best one stays until a
 * better one comes, then goes. */
static void test_best_checkpoints__max_mode_ranks_high_first_and_nan_never_ranks(void **state) {
  fixture *f = *state;
  use_dir(f, "max");
  make_hook(f, 0, 1, 1, HK_MONITOR_MAX);
  f->metric = 0.5;
  open_session(f);
  assert_ok(step(f, NAN), &f->st);
  EXPECT_FILES(f, 3, "0 1");
  assert_ok(step(f, 0.4), &f->st);
  EXPECT_FILES(f, 3, "0 2");
  assert_ok(step(f, 0.9), &f->st);
  EXPECT_FILES(f, 3, "3");
  char *rec = read_in_dir(f, "checkpoint.best");
  assert_string_equal(rec, "# hooked best checkpoints 1\nmode: max\nbest: \"model.ckpt-3\" 0.90000000000000002\n");
  free(rec);
}

/* H45: a record that is refused is ignored with a WARNING (its checkpoints are
 * ordinary ones) and rewritten; one of the other mode starts a new ranking. */
static void test_best_checkpoints__refused_record_is_rewritten(void **state) {
  fixture *f = *state;
  use_dir(f, "refused");
  make_hook(f, 0, 1, 1, HK_MONITOR_MIN);
  f->metric = 1;
  open_session(f);
  assert_ok(step(f, 5), &f->st);
  EXPECT_FILES(f, 3, "0 1");
  close_session(f, HK_OK);
  char *p = test_path(f->dir, "checkpoint.best");
  static const char bad[] = "# hooked best checkpoints 1\nmode: min\nbest: \"model.ckpt-0\"\n";
  assert_int_equal(test_write_file(p, bad, strlen(bad)), 0);
  make_hook(f, 0, 1, 1, HK_MONITOR_MIN);
  open_session(f);
  assert_ok(step(f, 7), &f->st); /* 2: nothing ranked any more, so 0 and 1 go */
  assert_logged(f->te, HK_LOG_WARNING, "Ignoring the best-checkpoint record");
  assert_logged(f->te, HK_LOG_WARNING, "line 3 is not 'best: \"<name>\" <value>'");
  EXPECT_FILES(f, 3, "2");
  char *rec = test_read_file(p, NULL);
  assert_string_equal(rec, "# hooked best checkpoints 1\nmode: min\nbest: \"model.ckpt-2\" 7\n");
  free(rec);
  close_session(f, HK_OK);
  make_hook(f, 0, 1, 1, HK_MONITOR_MAX);
  test_log_clear(&f->te->log);
  open_session(f);
  assert_ok(step(f, 1), &f->st); /* 3 */
  assert_logged(f->te, HK_LOG_WARNING, "ranks checkpoints for mode min, this Saver keeps the best for mode max");
  EXPECT_FILES(f, 3, "3");
  free(p);
}

/* ---- H45 + D4, D6.5: every failure leaves the directory as it was ------------------- */

/* H45: max_to_keep 1, best_k 1: after steps 0 (metric 5) and 1 (7) the directory
 * holds 0 (the best) and 1 (the newest). The save of step 2 (metric 3)
 * changes the record and deletes both. Each file-system call of it fails
 * in turn: a failed save leaves the state file and the record as they
 * were, with 0 and 1; a deletion that failed is finished by the next save
 * (D6.5). */
static void test_best_checkpoints__a_save_failing_at_any_call_leaves_record_and_state_as_they_were(void **state) {
  fixture *f = *state;
  long n;
  for (n = 0; n < 400; n++) {
    char name[32];
    snprintf(name, sizeof name, "fault-%ld", n);
    use_dir(f, name);
    make_hook(f, 0, 1, 1, HK_MONITOR_MIN);
    f->metric = 5;
    open_session(f);
    assert_ok(step(f, 7), &f->st);
    char *state_before = read_in_dir(f, "checkpoint"), *rec_before = read_in_dir(f, "checkpoint.best");
    assert_non_null(state_before);
    assert_non_null(rec_before);
    EXPECT_FILES(f, 3, "0 1");

    faulty_fs_fail_errno(&f->ff, FAULTY_FS_ANY, n, EIO, 0);
    hk_code rc = step(f, 3);
    long injected = faulty_fs_injected(&f->ff);
    int in_events = strstr(f->ff.last_path, "tfevents") != NULL;
    faulty_fs_reset(&f->ff);
    if (injected == 0) {
      /* The save made fewer calls than n + 1: the sweep is complete. */
      assert_ok(rc, &f->st);
      EXPECT_FILES(f, 3, "2");
      free(state_before);
      free(rec_before);
      close_session(f, HK_OK);
      break;
    }
    assert_int_equal(test_dir_count_matching(f->dir, ".tmp-"), 0);
    if (rc != HK_OK && !in_events) {
      char *state_after = read_in_dir(f, "checkpoint"), *rec_after = read_in_dir(f, "checkpoint.best");
      assert_string_equal(state_after, state_before);
      assert_string_equal(rec_after, rec_before);
      assert_true(exists(f, 0));
      assert_true(exists(f, 1));
      free(state_after);
      free(rec_after);
      close_session(f, rc);
    } else {
      /* Saved; only a deletion, the record's removal or the event failed
       * (logged, D6.2). The next save finishes what is left. */
      EXPECT_LISTED(f, "2");
      assert_ok(step(f, 9), &f->st);
      EXPECT_FILES(f, 3, "2 3");
      assert_int_equal(test_dir_count_matching(f->dir, "pending-deletions"), 0);
      close_session(f, HK_OK);
    }
    free(state_before);
    free(rec_before);
    /* Every file the save opened was closed (the session's event file
     * stays open until it closes). */
    assert_int_equal(faulty_fs_open_handles(&f->ff), 0);
  }
  assert_true(n > 30 && n < 400); /* the record, the data, the best record, the state, 6 unlinks, ... */
}

/* ---- options and errors -------------------------------------------------------------- */

/* H45: bad best_k, best_metric or best_mode options are INVALID_ARGUMENT naming the option. */
static void test_best_checkpoints__bad_options_are_named(void **state) {
  fixture *f = *state;
  hk_checkpoint_saver_options co = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
  hk_hook *h = NULL;
  co.checkpoint_dir = f->root;
  co.save_steps = 1;
  co.best_k = -1;
  assert_status(hk_checkpoint_saver_hook_new(&h, &co, &f->st), &f->st, HK_INVALID_ARGUMENT, "best_k: must be >= 0");
  co.best_k = 2;
  assert_status(hk_checkpoint_saver_hook_new(&h, &co, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "best_metric: best_k 2 needs the name of a tensor");
  co.best_metric = "";
  assert_status(hk_async_checkpoint_saver_hook_new(&h, &co, &f->st), &f->st, HK_INVALID_ARGUMENT, "best_metric");
  co.best_metric = "metric";
  co.best_k = 0;
  assert_status(hk_checkpoint_saver_hook_new(&h, &co, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "best_metric: 'metric' is given but best_k is 0");
  co.best_k = 1;
  co.best_mode = (hk_monitor_mode)7;
  assert_status(hk_checkpoint_saver_hook_new(&h, &co, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "best_mode: 7 is neither HK_MONITOR_MIN nor HK_MONITOR_MAX");
  assert_null(h);
  assert_int_equal(test_dir_count(f->root), 0);

  /* The one version rule: 0 and a version above the library's are refused,
   * naming the struct, before any field is read. */
  co.best_k = 1;
  co.best_mode = HK_MONITOR_MIN;
  co.version = 0;
  assert_status(hk_checkpoint_saver_hook_new(&h, &co, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "version 0 of hk_checkpoint_saver_options");
  co.version = HK_CHECKPOINT_SAVER_OPTIONS_VERSION + 1;
  assert_status(hk_checkpoint_saver_hook_new(&h, &co, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "hk_checkpoint_saver_options");
  assert_null(h);
  assert_int_equal(test_dir_count(f->root), 0);

  /* options_init fills every field, best ones included, for the current
   * version and writes nothing for another. */
  memset(&co, 0x5a, sizeof co);
  assert_int_equal(hk_checkpoint_saver_options_init(&co, 0), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_checkpoint_saver_options_init(&co, HK_CHECKPOINT_SAVER_OPTIONS_VERSION + 1), HK_INVALID_ARGUMENT);
  assert_int_equal(co.best_k, 0x5a5a5a5a5a5a5a5a);
  assert_int_equal(hk_checkpoint_saver_options_init(&co, HK_CHECKPOINT_SAVER_OPTIONS_VERSION), HK_OK);
  assert_int_equal(co.version, HK_CHECKPOINT_SAVER_OPTIONS_VERSION);
  assert_int_equal(co.steps_per_run, 1);
  assert_int_equal(co.best_k, 0);
  assert_null(co.best_metric);
  assert_int_equal(co.best_mode, HK_MONITOR_MIN);
  assert_int_equal(co.restore_best, 0);
}

/* H45: an unknown best_metric fails begin(); one that is not a number fails the
 * save, named, and writes nothing. */
static void test_best_checkpoints__an_unknown_or_non_numeric_metric_is_refused_naming_it(void **state) {
  fixture *f = *state;
  hk_checkpoint_saver_options co = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
  hk_session_options so;
  use_dir(f, "errors");
  co.checkpoint_dir = f->dir;
  co.save_steps = 1;
  co.best_k = 1;
  co.best_metric = "nope";
  assert_ok(hk_checkpoint_saver_hook_new(&f->hook, &co, &f->st), &f->st);
  test_session_options(&so, &f->te->env, HK_SESSION_SINGULAR, hk_graph_executor(f->g), &f->hook, 1);
  assert_status(hk_session_new(&f->s, &so, &f->st), &f->st, HK_NOT_FOUND, "best_metric 'nope'");
  hk_hook_free(f->hook);
  co.best_metric = "vec";
  assert_ok(hk_checkpoint_saver_hook_new(&f->hook, &co, &f->st), &f->st);
  assert_status(hk_session_new(&f->s, &so, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "best_metric 'vec' for the checkpoint of step 0: vec is not a single number (2 elements)");
  EXPECT_FILES(f, 1, "");
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_best_checkpoints__keeps_the_k_best_beside_the_newest),
      T(test_best_checkpoints__the_async_hook_keeps_the_k_best_too),
      T(test_best_checkpoints__ranking_survives_a_restart),
      T(test_best_checkpoints__max_mode_ranks_high_first_and_nan_never_ranks),
      T(test_best_checkpoints__refused_record_is_rewritten),
      T(test_best_checkpoints__a_save_failing_at_any_call_leaves_record_and_state_as_they_were),
      T(test_best_checkpoints__bad_options_are_named),
      T(test_best_checkpoints__an_unknown_or_non_numeric_metric_is_refused_naming_it),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
