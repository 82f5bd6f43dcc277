/*
 * Tests of SummarySaverHook (contract group N: C135–C137; C61, C62, D9, H25,
 * H26), over the scripted fake executor (a summary is a U8 tensor whose value
 * the test sets; fetches are recorded, so C136's requests can be counted) and
 * over the graph executor with its summary ops and a Scaffold's default
 * summary_op. Event files are decoded by tests/support/event_file.c.
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

/* Summary{value{tag "<c>" simple_value 1.5}} */
#define SUMMARY_BYTES(c) \
  { 0x0a, 0x08, 0x0a, 0x01, (c), 0x15, 0x00, 0x00, 0xc0, 0x3f }

typedef struct fixture {
  test_env *te;
  fake_executor *fx;
  hk_handle gs, train, sa, sb;
  hk_hook *hook;
  hk_session *s;
  char *tmp, *dir;
  hk_summary_saver_options o;
  hk_handle ops[2];
  size_t train_nfetches; /* what the last run of the train op fetched */
  hk_status st;
} fixture;

static hk_code record_fetches(void *user, fake_executor *fx, const hk_run_args *args, hk_status *st) {
  fixture *f = user;
  (void)fx;
  (void)st;
  if (args && args->ntargets > 0 && args->targets[0] == f->train) f->train_nfetches = args->nfetches;
  return HK_OK;
}

static int setup(void **state) {
  static const unsigned char a[] = SUMMARY_BYTES('a'), b[] = SUMMARY_BYTES('b');
  fixture *f = calloc(1, sizeof *f);
  int64_t dims[1] = {(int64_t)sizeof a};
  assert_non_null(f);
  f->te = test_env_new();
  f->fx = fake_training_executor(f->te, NULL, &f->gs, &f->train);
  f->sa = fake_executor_add_tensor(f->fx, "sa", HK_DTYPE_U8, 1, dims);
  f->sb = fake_executor_add_tensor(f->fx, "sb", HK_DTYPE_U8, 1, dims);
  fake_executor_set_value(f->fx, f->sa, a);
  fake_executor_set_value(f->fx, f->sb, b);
  fake_executor_on_run(f->fx, record_fetches, f);
  f->tmp = test_tmpdir_new("summary-saver");
  f->dir = test_path(f->tmp, "logs");
  assert_int_equal(hk_summary_saver_options_init(&f->o, HK_SUMMARY_SAVER_OPTIONS_VERSION), HK_OK);
  f->o.env = &f->te->env;
  f->o.save_steps = 2;
  f->o.output_dir = f->dir;
  f->ops[0] = f->sa;
  f->ops[1] = f->sb;
  f->o.summary_op = f->ops;
  f->o.nsummary_op = 2;
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
  assert_ok(hk_summary_saver_hook_new(&f->hook, &f->o, &f->st), &f->st);
  assert_ok(one_hook_session_new(&f->s, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(f->fx), &f->hook,
                                 NULL, &f->st),
            &f->st);
}

static void close_ok(fixture *f) {
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  hk_session_free(f->s);
  f->s = NULL;
}

/* Run the train op; @return how many fetches its executor run had (the
 * hook's GS reads are runs of their own). */
static size_t train_fetches(fixture *f) {
  assert_ok(session_run_train(f->s, f->train, &f->st), &f->st);
  return f->train_nfetches;
}

/* ---- options (C135, D9, H25) ------------------------------------------------------------ */

static void refused(fixture *f, const char *substr) {
  hk_hook *h = (hk_hook *)f;
  assert_status(hk_summary_saver_hook_new(&h, &f->o, &f->st), &f->st, HK_INVALID_ARGUMENT, substr);
  assert_null(h);
}

/* C135: options_init checks its version; both cadences and the other bad options are INVALID_ARGUMENT naming them. */
static void test_summary_saver__bad_options_are_refused_naming_them(void **state) {
  fixture *f = *state;
  hk_summary_saver_options o;
  hk_scaffold *sc = NULL;
  hk_handle unset[1] = {HK_NO_HANDLE};
  long base = test_alloc_live(&f->te->alloc);

  assert_int_equal(hk_summary_saver_options_init(NULL, HK_SUMMARY_SAVER_OPTIONS_VERSION), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_summary_saver_options_init(&o, 7), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_summary_saver_options_init(&o, HK_SUMMARY_SAVER_OPTIONS_VERSION), HK_OK);
  assert_true(hk_secs_is_unset(o.save_secs) && o.save_steps == HK_UNSET_STEPS && o.nsummary_op == 0);
  assert_status(hk_summary_saver_hook_new(NULL, &f->o, &f->st), &f->st, HK_INVALID_ARGUMENT, "out");
  {
    hk_hook *h = NULL;
    assert_status(hk_summary_saver_hook_new(&h, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT,
                  "Exactly one of scaffold or summary_op must be provided.");
  }
  assert_ok(hk_scaffold_new(&sc, NULL, &f->st), &f->st);
  f->o.scaffold = sc;
  refused(f, "Exactly one of scaffold or summary_op must be provided."); /* both */
  f->o.scaffold = NULL;
  f->o.nsummary_op = 0;
  refused(f, "Exactly one of scaffold or summary_op must be provided."); /* neither */
  f->o.nsummary_op = 1;
  f->o.summary_op = NULL;
  refused(f, "summary_op");
  f->o.summary_op = unset;
  refused(f, "summary_op[0] is unset");
  f->o.summary_op = f->ops;
  f->o.save_steps = HK_UNSET_STEPS;
  refused(f, "Either save_secs or save_steps should be provided."); /* C75 */
  f->o.save_secs = 10;
  f->o.save_steps = 5;
  refused(f, "Can not provide both save_secs and save_steps."); /* D9 */
  f->o.save_secs = HK_UNSET_SECS;
  f->o.save_steps = 0;
  refused(f, "save_steps"); /* H25 */
  f->o.save_steps = HK_UNSET_STEPS;
  f->o.save_secs = NAN;
  refused(f, "save_secs");
  f->o.save_secs = HK_UNSET_SECS;
  f->o.save_steps = 1;
  f->o.output_dir = "";
  refused(f, "output_dir");
  f->o.output_dir = f->dir;
  f->o.version = 0;
  refused(f, "version");
  f->o.version = HK_SUMMARY_SAVER_OPTIONS_VERSION;
  assert_false(test_path_exists(f->dir)); /* H3 */
  hk_scaffold_free(sc);
  assert_int_equal(test_alloc_live(&f->te->alloc), base);
}

/* C135: begin() without a global step is FAILED_PRECONDITION. */
static void test_summary_saver__begin_needs_a_global_step(void **state) {
  fixture *f = *state;
  fake_executor *bare = fake_executor_new(&f->te->env);
  hk_hook *hooks[1];
  hk_session_options so;
  assert_ok(hk_summary_saver_hook_new(&f->hook, &f->o, &f->st), &f->st);
  hooks[0] = f->hook;
  hk_session_options_init(&so, HK_SESSION_OPTIONS_VERSION);
  test_session_options(&so, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(bare), hooks, 1);
  assert_status(hk_session_new(&f->s, &so, &f->st), &f->st, HK_FAILED_PRECONDITION,
                "Global step should be created to use SummarySaverHook.");
  fake_executor_free(bare);
}

/* ---- cadence and events (C136, C137) ---------------------------------------------------- */

/* C136, C137: the first run fetches the summaries and writes START, then summaries are written at the cadence. */
static void test_summary_saver__writes_start_then_summaries_at_the_cadence(void **state) {
  fixture *f = *state;
  size_t fetched[6];
  ev_file *ef;
  int i, summaries = 0, starts = 0;
  size_t k;

  open_ok(f);
  assert_true(test_path_exists(f->dir)); /* begin() (H26) */
  for (i = 0; i < 6; i++) fetched[i] = train_fetches(f);
  /* C136: the first run fetches GS and both summaries; then at GS 3 and 5
   * (next_step 3, 5 trigger with save_steps 2); the others GS alone. */
  assert_int_equal(fetched[0], 3);
  assert_int_equal(fetched[1], 1);
  assert_int_equal(fetched[2], 3);
  assert_int_equal(fetched[3], 1);
  assert_int_equal(fetched[4], 3);
  assert_int_equal(fetched[5], 1);
  close_ok(f);

  ef = event_file_only(f->dir);
  for (k = 0; k < ef->n; k++) {
    const ev_event *e = &ef->events[k];
    if (e->kind == EV_SESSION_LOG) {
      assert_int_equal(e->status, 1); /* START, at the first run's GS (read: 1) */
      assert_true(e->step == 1);
      assert_int_equal(summaries, 0);
      starts++;
    } else if (e->kind == EV_SUMMARY) {
      /* each fetched Summary verbatim, at GS 1, 3, 5 */
      int64_t want = 1 + 2 * (summaries / 2);
      assert_true(e->step == want);
      assert_int_equal(e->nvalues, 1);
      assert_string_equal(e->values[0].tag, summaries % 2 ? "b" : "a");
      assert_true(e->values[0].simple == 1.5f);
      summaries++;
    }
  }
  assert_int_equal(starts, 1);
  assert_int_equal(summaries, 6);
  event_file_free(ef);
}

/* C137: end() flushes the writer; its error is close()'s (H16). */
static void test_summary_saver__end_flushes_and_close_returns_its_error(void **state) {
  fixture *f = *state;
  faulty_fs ff;
  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &f->te->env);
  open_ok(f);
  (void)train_fetches(f);
  faulty_fs_match(&ff, "tfevents");
  faulty_fs_fail_errno(&ff, FAULTY_FS_SYNC, 0, EIO, 0);
  assert_status(hk_session_close(f->s, HK_OK, &f->st), &f->st, HK_UNKNOWN, "tfevents");
  assert_int_equal(faulty_fs_calls(&ff, FAULTY_FS_SYNC), 2); /* end()'s, failed; the session's at close */
  hk_session_free(f->s);
  f->s = NULL;
  assert_int_equal(faulty_fs_open_handles(&ff), 0);
  faulty_fs_destroy(&ff);
}

/* C137: without a writer nothing is written, and no summary op runs. */
static void test_summary_saver__without_a_writer_nothing_is_written_or_run(void **state) {
  fixture *f = *state;
  int i;
  f->o.output_dir = NULL;
  open_ok(f);
  for (i = 0; i < 4; i++) assert_int_equal(train_fetches(f), 1);
  close_ok(f);
  assert_false(test_path_exists(f->dir));
}

/* C135: a summary_writer given wins over output_dir. */
static void test_summary_saver__a_given_summary_writer_wins_over_output_dir(void **state) {
  fixture *f = *state;
  hk_summary_writer_options wo = HK_SUMMARY_WRITER_OPTIONS_INIT;
  hk_summary_writer *w = NULL;
  char *mine = test_path(f->tmp, "mine");
  ev_file *ef;
  wo.env = &f->te->env;
  wo.logdir = mine;
  assert_ok(hk_summary_writer_new(&w, &wo, &f->st), &f->st);
  f->o.summary_writer = w;
  open_ok(f);
  (void)train_fetches(f);
  close_ok(f);
  assert_false(test_path_exists(f->dir));
  assert_ok(hk_summary_writer_close(w, &f->st), &f->st);
  hk_summary_writer_free(w);
  ef = event_file_only(mine);
  assert_int_equal(ef->n, 4); /* file_version, START, a, b */
  event_file_free(ef);
  free(mine);
}

/* C137: a fetched tensor that is not a serialized Summary fails the run, naming it. */
static void test_summary_saver__a_fetch_that_is_not_a_summary_fails_the_run(void **state) {
  fixture *f = *state;
  static const unsigned char junk[] = {0x0f, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09};
  hk_handle wrong[1];
  wrong[0] = f->gs; /* an int64 scalar */
  f->o.summary_op = wrong;
  f->o.nsummary_op = 1;
  open_ok(f);
  assert_status(session_run_train(f->s, f->train, &f->st), &f->st, HK_INVALID_ARGUMENT, "global_step");
  close_ok(f);
  hk_hook_free(f->hook);
  f->hook = NULL;
  fake_executor_set_value(f->fx, f->sa, junk);
  f->o.summary_op = f->ops;
  open_ok(f);
  assert_status(session_run_train(f->s, f->train, &f->st), &f->st, HK_INVALID_ARGUMENT, "not a serialized Summary");
  close_ok(f);
}

/* H7: new with allocation N failing, for N = 0, 1, 2, ... until it succeeds: each failure is RESOURCE_EXHAUSTED and
 * leaks nothing. */
static void test_summary_saver__allocation_failures_in_new_leak_nothing(void **state) {
  fixture *f = *state;
  long n, base = test_alloc_live(&f->te->alloc);
  hk_code rc = HK_INTERNAL;
  for (n = 0; n < 50; n++) {
    test_alloc_fail_at(&f->te->alloc, n, 0);
    rc = hk_summary_saver_hook_new(&f->hook, &f->o, &f->st);
    test_alloc_fail_at(&f->te->alloc, -1, 0);
    if (rc == HK_OK) break;
    assert_status(rc, &f->st, HK_RESOURCE_EXHAUSTED, NULL);
    assert_null(f->hook);
    assert_int_equal(test_alloc_live(&f->te->alloc), base);
  }
  assert_int_equal(rc, HK_OK);
  assert_true(n > 0);
}

/* ---- with the graph executor and a Scaffold (C61, C62, C135, H26) ----------------------- */

/* C62: without a summary_op the hook uses the Scaffold's merge of the graph's summaries. */
static void test_summary_saver__the_scaffold_merges_the_graph_s_summaries(void **state) {
  fixture *f = *state;
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_graph *g = NULL;
  hk_handle gs, one, train, s_gs, h_w, w;
  hk_variable_def vd = HK_VARIABLE_DEF_INIT;
  int64_t one_v = 1, dims[1] = {4};
  hk_tensor t = hk_tensor_scalar_i64(&one_v);
  hk_scaffold_options so = HK_SCAFFOLD_OPTIONS_INIT;
  hk_scaffold *scaffold = NULL;
  hk_step_counter_options sco = HK_STEP_COUNTER_OPTIONS_INIT;
  hk_checkpoint_saver_options cko = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
  hk_hook *counter = NULL, *ckpt = NULL, *hooks[3];
  hk_session_options sess;
  ev_file *ef;
  size_t k;
  int i, starts = 0, checkpoints = 0;
  const ev_event *e;
  const ev_value *v;

  go.env = &f->te->env;
  assert_ok(hk_graph_new(&g, &go, &f->st), &f->st);
  assert_ok(hk_graph_get_or_create_global_step(g, &gs, &f->st), &f->st);
  assert_ok(hk_graph_constant(g, &one, "one", &t, &f->st), &f->st);
  assert_ok(hk_graph_assign_add(g, &train, "train", gs, one, &f->st), &f->st);
  vd.name = "w";
  vd.dtype = HK_DTYPE_F32;
  vd.rank = 1;
  vd.dims = dims;
  vd.init.kind = HK_INIT_CONSTANT;
  vd.init.value = 0.5;
  assert_ok(hk_graph_variable(g, &w, &vd, &f->st), &f->st);
  assert_ok(hk_graph_scalar_summary(g, &s_gs, "gs_summary", "step_value", gs, &f->st), &f->st);
  assert_ok(hk_graph_histogram_summary(g, &h_w, "w_summary", "w", w, &f->st), &f->st);

  so.env = &f->te->env;
  assert_ok(hk_scaffold_new(&scaffold, &so, &f->st), &f->st);
  f->o.summary_op = NULL;
  f->o.nsummary_op = 0;
  f->o.scaffold = scaffold;
  f->o.save_steps = 2;
  assert_ok(hk_summary_saver_hook_new(&f->hook, &f->o, &f->st), &f->st);
  sco.env = &f->te->env;
  sco.every_n_steps = 2;
  sco.output_dir = f->dir; /* the same directory: one writer, one file (H26) */
  assert_ok(hk_step_counter_hook_new(&counter, &sco, &f->st), &f->st);
  cko.env = &f->te->env;
  cko.checkpoint_dir = f->dir;
  cko.save_steps = 100;
  cko.save_graph_def = 0;
  assert_ok(hk_checkpoint_saver_hook_new(&ckpt, &cko, &f->st), &f->st);
  hooks[0] = f->hook;
  hooks[1] = counter;
  hooks[2] = ckpt;
  hk_session_options_init(&sess, HK_SESSION_OPTIONS_VERSION);
  test_session_options(&sess, &f->te->env, HK_SESSION_SINGULAR, hk_graph_executor(g), hooks, 3);
  sess.scaffold = scaffold;
  assert_ok(hk_session_new(&f->s, &sess, &f->st), &f->st);
  {
    size_t n = 0;
    const hk_handle *ops = hk_scaffold_summary_op(scaffold, &n);
    assert_int_equal(n, 1); /* C62: one merge of both */
    assert_string_equal(hk_executor_handle_name(hk_graph_executor(g), ops[0]), "Merge/MergeSummary:0");
  }
  for (i = 0; i < 5; i++) {
    assert_ok(session_run_train(f->s, train, &f->st), &f->st);
    test_clock_advance(&f->te->clock, 1);
  }
  close_ok(f);

  ef = event_file_only(f->dir);
  for (k = 0; k < ef->n; k++) {
    if (ef->events[k].kind != EV_SESSION_LOG) continue;
    if (ef->events[k].status == 1) starts++;
    if (ef->events[k].status == 3) checkpoints++;
  }
  assert_int_equal(starts, 1);
  assert_int_equal(checkpoints, 2); /* at creation and at end() */
  /* Merged: both values in one event, at GS 1, 3, 5; the summary op reads
   * GS as its kernel runs, after the train op created before it (H30). */
  v = event_file_find(ef, "step_value", 0, &e);
  assert_non_null(v);
  assert_true(e->step == 1);
  assert_true(v->simple == 1.0f);
  assert_int_equal(e->nvalues, 2);
  assert_string_equal(e->values[1].tag, "w");
  assert_true(e->values[1].num == 4 && e->values[1].sum == 2.0);
  assert_int_equal(event_file_count_tag(ef, "step_value"), 3);
  assert_int_equal(event_file_count_tag(ef, "w"), 3);
  assert_int_equal(event_file_count_tag(ef, "global_step/sec"), 2);
  event_file_free(ef);

  hk_hook_free(counter);
  hk_hook_free(ckpt);
  hk_hook_free(f->hook);
  f->hook = NULL;
  hk_scaffold_free(scaffold);
  hk_graph_free(g);
}

/* C62: a Scaffold without summaries: GS alone, START still written. */
static void test_summary_saver__a_scaffold_without_summaries_writes_start_only(void **state) {
  fixture *f = *state;
  hk_scaffold_options so = HK_SCAFFOLD_OPTIONS_INIT;
  hk_scaffold *scaffold = NULL;
  hk_session_options sess;
  hk_hook *hooks[1];
  ev_file *ef;
  so.env = &f->te->env;
  assert_ok(hk_scaffold_new(&scaffold, &so, &f->st), &f->st);
  f->o.summary_op = NULL;
  f->o.nsummary_op = 0;
  f->o.scaffold = scaffold;
  assert_ok(hk_summary_saver_hook_new(&f->hook, &f->o, &f->st), &f->st);
  hooks[0] = f->hook;
  hk_session_options_init(&sess, HK_SESSION_OPTIONS_VERSION);
  test_session_options(&sess, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(f->fx), hooks, 1);
  sess.scaffold = scaffold;
  assert_ok(hk_session_new(&f->s, &sess, &f->st), &f->st);
  assert_int_equal(train_fetches(f), 1);
  assert_int_equal(train_fetches(f), 1);
  close_ok(f);
  ef = event_file_only(f->dir);
  assert_int_equal(ef->n, 2);
  assert_int_equal(ef->events[1].kind, EV_SESSION_LOG);
  assert_int_equal(ef->events[1].status, 1);
  event_file_free(ef);
  hk_scaffold_free(scaffold);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_summary_saver__bad_options_are_refused_naming_them),
      T(test_summary_saver__begin_needs_a_global_step),
      T(test_summary_saver__writes_start_then_summaries_at_the_cadence),
      T(test_summary_saver__end_flushes_and_close_returns_its_error),
      T(test_summary_saver__without_a_writer_nothing_is_written_or_run),
      T(test_summary_saver__a_given_summary_writer_wins_over_output_dir),
      T(test_summary_saver__a_fetch_that_is_not_a_summary_fails_the_run),
      T(test_summary_saver__allocation_failures_in_new_leak_nothing),
      T(test_summary_saver__the_scaffold_merges_the_graph_s_summaries),
      T(test_summary_saver__a_scaffold_without_summaries_writes_start_only),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
