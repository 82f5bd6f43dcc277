/*
 * Tests of AsyncCheckpointSaverHook (contract group L: C104–C109, D3; D12
 * for the final save after a signal stop), through real sessions and real
 * temporary directories.
 *
 * Determinism: the background write is held by a "gate" file system that
 * blocks writes to chosen checkpoint files until the test opens it, and
 * reports when the writer thread has arrived there. Nothing here asserts on
 * timing; where a test must wait for the writer thread it waits on the gate
 * or polls (bounded) for an outcome that must come. Run under TSan
 * (-DHOOKED_SANITIZE=thread) as well.
 */
#include "session_fixture.h"
#include "tmpdir.h"
#include "ckpt_fixture.h"
#include "faulty_fs.h"
#include "gate_fs.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STEPS 64
#define POLL_LIMIT 100000 /* polls of >= 1 ms: only bounds a hung writer (each wait ends with the write) */

/* ---- the gate file system (tests/support/gate_fs.h) ---------------------------------- */

/* Opens the gate from another thread after a short real-time pause, for the
 * calls that block the test's own thread until the write completes. */
static void *open_later(void *arg) {
  test_sleep_real_ms(50);
  gate_fs_open(arg);
  return NULL;
}

/* ---- a spy listener ---------------------------------------------------------------- */

typedef struct spy_listener {
  int begin, before, after, end;
  int64_t after_steps[MAX_STEPS];
  int64_t end_step;
  int64_t stop_at;
  pthread_t thread; /* where after_save last ran (D3.6) */
} spy_listener;

static hk_code l_begin(void *user, hk_status *st) {
  (void)st;
  ((spy_listener *)user)->begin++;
  return HK_OK;
}

static hk_code l_before(void *user, hk_raw_session *rs, int64_t step, hk_status *st) {
  (void)rs;
  (void)step;
  (void)st;
  ((spy_listener *)user)->before++;
  return HK_OK;
}

static hk_code l_after(void *user, hk_raw_session *rs, int64_t step, int *stop, hk_status *st) {
  spy_listener *l = user;
  (void)rs;
  (void)st;
  if (l->after < MAX_STEPS) l->after_steps[l->after] = step;
  l->after++;
  l->thread = pthread_self();
  if (step == l->stop_at) *stop = 1;
  return HK_OK;
}

static hk_code l_end(void *user, hk_raw_session *rs, int64_t step, hk_status *st) {
  spy_listener *l = user;
  (void)rs;
  (void)st;
  l->end++;
  l->end_step = step;
  return HK_OK;
}

static const hk_checkpoint_listener_vtable spy_vtable = {
    HK_CHECKPOINT_LISTENER_VTABLE_VERSION, l_begin, l_before, l_after, l_end,
};

/* ---- fixture ----------------------------------------------------------------------- */

typedef struct fixture {
  test_env *te;
  char *tmp;
  char *dir;
  fake_executor *fx;
  hk_handle gs, train, v, bump;
  hk_hook *hook;
  hk_session *s;
  hk_saver *saver;
  hk_scaffold *scaffold;
  spy_listener l;
  hk_checkpoint_listener ls;
  gate_fs gate;
  faulty_fs ff;
  hk_checkpoint_saver_options o;
  hk_status st;
  int preempt; /* preempt the next run of the train op (open_preemptible) */
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof(*f));
  assert_non_null(f);
  f->te = test_env_new();
  f->tmp = test_tmpdir_new("async-ckpt");
  f->dir = test_path(f->tmp, "ckpt");
  f->fx = fake_training_executor(f->te, NULL, &f->gs, &f->train);
  f->v = fake_executor_add_variable(f->fx, "v", HK_DTYPE_I64, 0, NULL, HK_VAR_TRAINABLE, NULL);
  f->bump = fake_executor_add_op(f->fx, "bump");
  fake_executor_op_increments(f->fx, f->bump, f->v, 5);
  f->l.stop_at = -1;
  f->ls.vtable = &spy_vtable;
  f->ls.user = &f->l;
  f->ls.name = "spy";
  /* env -> gate -> faulty -> POSIX: the gate holds writes, faulty injects errors. */
  faulty_fs_init(&f->ff);
  gate_fs_init(&f->gate, faulty_fs_vtable(), &f->ff);
  f->te->env.fs = gate_fs_vtable();
  f->te->env.fs_user = &f->gate;
  hk_checkpoint_saver_options_init(&f->o, HK_CHECKPOINT_SAVER_OPTIONS_VERSION);
  f->o.env = &f->te->env;
  f->o.checkpoint_dir = f->dir;
  f->o.save_steps = 1;
  f->o.listeners = &f->ls;
  f->o.nlisteners = 1;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  gate_fs_open(&f->gate);
  session_close_and_free(f->s);
  hk_hook_free(f->hook);
  hk_scaffold_free(f->scaffold);
  hk_saver_free(f->saver);
  assert_int_equal(faulty_fs_open_handles(&f->ff), 0);
  gate_fs_destroy(&f->gate);
  faulty_fs_destroy(&f->ff);
  test_tmpdir_free(f->tmp);
  free(f->dir);
  return fixture_release(f, f->fx, f->te);
}

static void make_hook(fixture *f) { assert_ok(hk_async_checkpoint_saver_hook_new(&f->hook, &f->o, &f->st), &f->st); }

static void open_ok(fixture *f) {
  make_hook(f);
  assert_ok(one_hook_session_new(&f->s, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(f->fx), &f->hook,
                                 NULL, &f->st),
            &f->st);
}

static hk_code step(fixture *f) {
  hk_handle targets[2];
  hk_run_args args;
  targets[0] = f->train;
  targets[1] = f->bump;
  memset(&args, 0, sizeof args);
  args.targets = targets;
  args.ntargets = 2;
  return hk_session_run(f->s, &args, NULL, NULL, &f->st);
}

static hk_code noop(fixture *f) { return hk_session_run(f->s, NULL, NULL, NULL, &f->st); }

static hk_code close_session(fixture *f) {
  hk_code rc = hk_session_close(f->s, HK_OK, &f->st);
  hk_session_free(f->s);
  f->s = NULL;
  return rc;
}

static int64_t live(fixture *f, hk_handle var) { return fake_executor_get_i64(f->fx, NULL, var); }

static int logged(fixture *f, const char *fmt, long long n) {
  char line[256];
  snprintf(line, sizeof line, fmt, n);
  return test_log_count(&f->te->log, -1, line); /* "Saving checkpoints" is DEBUG, "finished" INFO */
}

static int ckpt_exists(fixture *f, int64_t step) { return ckpt_data_exists(f->dir, "model.ckpt", step); }

/* The step and value of "v" recorded in checkpoint model.ckpt-<step>, verified first. */
static void read_ckpt(fixture *f, int64_t step, int64_t *gs, int64_t *v) {
  ckpt_read_i64(&f->te->env, f->dir, step, 1, "v", gs, v, &f->st);
}

/* Run no-op steps until `fmt`/n is logged (the writer finished and its
 * completion was processed). */
static void poll_until_logged(fixture *f, const char *fmt, long long n) {
  int i;
  for (i = 0; i < POLL_LIMIT && logged(f, fmt, n) == 0; i++) {
    test_sleep_real_ms(1);
    assert_ok(noop(f), &f->st);
  }
  assert_true(logged(f, fmt, n) > 0);
}

/* ---- C104: options and the creation line ------------------------------------------ */

/* C104: the asynchronous hook takes the synchronous hook's options, refuses the same bad ones and logs its creation
 * line. */
static void test_async_checkpoint_saver_hook__validates_options_and_logs_its_creation(void **state) {
  fixture *f = *state;
  hk_hook *h = (hk_hook *)1;
  char line[600];
  char *save_path = test_path(f->dir, "model.ckpt");

  f->o.save_secs = 5; /* with save_steps 1 */
  assert_status(hk_async_checkpoint_saver_hook_new(&h, &f->o, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "Can not provide both save_secs and save_steps.");
  assert_null(h);
  f->o.save_secs = HK_UNSET_SECS;
  f->o.save_steps = 0;
  assert_status(hk_async_checkpoint_saver_hook_new(&h, &f->o, &f->st), &f->st, HK_INVALID_ARGUMENT, "save_steps");
  f->o.save_steps = HK_UNSET_STEPS;
  assert_status(hk_async_checkpoint_saver_hook_new(&h, &f->o, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "Either save_secs or save_steps should be provided.");
  f->o.save_steps = 1;
  f->o.checkpoint_basename = "x\001y";
  assert_status(hk_async_checkpoint_saver_hook_new(&h, &f->o, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "checkpoint_basename");
  f->o.checkpoint_basename = NULL;
  assert_false(test_path_exists(f->dir));

  make_hook(f);
  snprintf(line, sizeof line, "Create AsyncCheckpointSaverHook saving to path\n%s with 1 listener(s).", save_path);
  assert_logged(f->te, HK_LOG_INFO, line);
  hk_hook_free(f->hook);
  f->hook = NULL;
  f->o.nlisteners = 0;
  test_log_clear(&f->te->log);
  make_hook(f);
  snprintf(line, sizeof line, "Create AsyncCheckpointSaverHook saving to path\n%s", save_path);
  assert_logged(f->te, HK_LOG_INFO, line);
  assert_int_equal(test_log_count(&f->te->log, -1, "listener(s)"), 0);
  assert_false(test_path_exists(f->dir)); /* H3: nothing created, no thread started by construction */
  free(save_path);
}

/* ---- C105, C106, C108, C109: saves, completions, listeners ----------------------- */

/* C105: the save at creation and each later save are written in the background, with the listeners and log lines of
 * a synchronous save. */
static void test_async_checkpoint_saver_hook__saves_in_the_background_with_listeners_and_log_lines(void **state) {
  fixture *f = *state;
  char *save_path = test_path(f->dir, "model.ckpt");
  char line[600];
  int64_t gs, v;

  f->o.block_when_busy = 1; /* every trigger saves: C101's example, asynchronously */
  open_ok(f);
  assert_ok(step(f), &f->st);
  assert_ok(step(f), &f->st);
  assert_ok(close_session(f), &f->st);

  assert_true(ckpt_exists(f, 0) && ckpt_exists(f, 1) && ckpt_exists(f, 2));
  assert_int_equal(f->l.begin, 1);
  assert_int_equal(f->l.before, 3);
  assert_int_equal(f->l.after, 3);
  assert_int_equal(f->l.end, 1);
  assert_true(f->l.after_steps[0] == 0 && f->l.after_steps[1] == 1 && f->l.after_steps[2] == 2);
  assert_true(f->l.end_step == 2);
  assert_true(pthread_equal(f->l.thread, pthread_self())); /* D3.6: on the training thread */
  /* C108's lines, C109's wait, and no second save of step 2 at end (D3.5). */
  /* One INFO line per checkpoint, "Checkpoint finished"; the rest DEBUG (H62). */
  snprintf(line, sizeof line, "Saving checkpoints for 2 into %s.", save_path);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_DEBUG, line), 1);
  snprintf(line, sizeof line, "Checkpoint finished for 2 into %s.", save_path);
  assert_logged(f->te, HK_LOG_INFO, line);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_DEBUG, "Checkpoint actual writing time: ("), 3);
  assert_logged(f->te, HK_LOG_INFO, "Waiting for any pending checkpoints to finish.");
  assert_int_equal(test_log_count(&f->te->log, -1, "deferring"), 0);
  /* graph.txt once, nothing beside each checkpoint (C102 applies, C104). */
  assert_int_equal(test_dir_count_matching(f->dir, "graph.txt"), 1);
  assert_int_equal(test_dir_count_matching(f->dir, ".meta"), 0);
  assert_int_equal(test_dir_count_matching(f->dir, "graph.pbtxt"), 0);
  assert_int_equal(test_dir_count_matching(f->dir, "tfevents"), 1);
  read_ckpt(f, 2, &gs, &v);
  assert_true(gs == 2 && v == 10);
  free(save_path);
}

/* ---- D3.1: the checkpoint for step N holds exactly step N's values ---------------- */

/* D3: checkpoint -N holds exactly the values the variables had at step N, though training goes on while it is
 * written. */
static void test_async_checkpoint_saver_hook__a_checkpoint_holds_the_values_of_its_step(void **state) {
  fixture *f = *state;
  int64_t n = -1, v_at_n = -1, gs, v, m;
  int i, reads, deferrals, before;

  /* Hold every checkpoint write after the creation one. */
  gate_fs_close(&f->gate, ".safetensors", "model.ckpt-0.");
  open_ok(f);
  /* Step until a save after the creation one starts (while the creation
   * write is in flight the trigger is deferred), and record v at that step. */
  for (i = 0; i < POLL_LIMIT && n < 0; i++) {
    assert_ok(step(f), &f->st);
    if (logged(f, "Saving checkpoints for %lld into", (long long)live(f, f->gs)) > 0) {
      n = live(f, f->gs);
      v_at_n = live(f, f->v);
    } else {
      test_sleep_real_ms(1);
    }
  }
  assert_true(n > 0);
  assert_true(v_at_n == 5 * n);
  gate_fs_wait_arrival(&f->gate);

  /* Training continues while the write of N is held: no snapshot (no
   * variable read), one deferral line for the whole run of deferrals. */
  reads = fake_executor_calls(f->fx, FAKE_VARIABLE_READ);
  before = f->l.before;
  deferrals = test_log_count(&f->te->log, HK_LOG_INFO, "Saver thread still in progress, deferring checkpoint.");
  for (i = 0; i < 3; i++) assert_ok(step(f), &f->st);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_VARIABLE_READ), reads);
  assert_int_equal(f->l.before, before);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "Saver thread still in progress, deferring checkpoint."),
                   deferrals + 1);
  assert_false(ckpt_exists(f, n));
  assert_true(live(f, f->v) == v_at_n + 15);

  /* Released: the completion is processed at the next after_run, which
   * also takes the deferred snapshot at the current step (the timer did
   * not move while deferring). */
  m = live(f, f->gs);
  gate_fs_open(&f->gate);
  poll_until_logged(f, "Checkpoint finished for %lld into", (long long)n);
  assert_int_equal(logged(f, "Saving checkpoints for %lld into", (long long)m), 1);
  assert_ok(close_session(f), &f->st);

  read_ckpt(f, n, &gs, &v);
  assert_true(gs == n);
  assert_true(v == v_at_n);
  read_ckpt(f, m, &gs, &v);
  assert_true(gs == m && v == 5 * m);
}

/* ---- D3.3: block_when_busy ------------------------------------------------------- */

/* D3: with block_when_busy a save that falls due during a write waits for it instead of being deferred. */
static void test_async_checkpoint_saver_hook__block_when_busy_waits_for_the_write_in_flight(void **state) {
  fixture *f = *state;
  pthread_t opener;

  f->o.block_when_busy = 1;
  gate_fs_close(&f->gate, ".safetensors", "model.ckpt-0.");
  open_ok(f);
  assert_ok(step(f), &f->st); /* snapshot at 1; its write is held */
  gate_fs_wait_arrival(&f->gate);
  assert_int_equal(pthread_create(&opener, NULL, open_later, &f->gate), 0);
  /* This run's trigger waits for the write of 1, processes it, then snapshots 2. */
  assert_ok(step(f), &f->st);
  pthread_join(opener, NULL);
  assert_int_equal(logged(f, "Checkpoint finished for %lld into", 1), 1);
  assert_int_equal(logged(f, "Saving checkpoints for %lld into", 2), 1);
  assert_int_equal(test_log_count(&f->te->log, -1, "deferring"), 0);
  assert_int_equal(f->l.after, 2); /* 0 and 1 */
  assert_ok(close_session(f), &f->st);
  assert_true(ckpt_exists(f, 1) && ckpt_exists(f, 2));
}

/* ---- D3.4: background errors ----------------------------------------------------- */

/* D3: a background write error is returned by the first after_run on the training thread after the write ended. */
static void test_async_checkpoint_saver_hook__a_write_error_reaches_the_next_after_run(void **state) {
  fixture *f = *state;
  int i, before;
  hk_code rc = HK_OK;

  f->o.save_steps = HK_UNSET_STEPS;
  f->o.save_secs = 10;
  open_ok(f);
  poll_until_logged(f, "Checkpoint finished for %lld into", 0);
  faulty_fs_match(&f->ff, "model.ckpt-1.safetensors");
  faulty_fs_fail_errno(&f->ff, FAULTY_FS_WRITE, 0, ENOSPC, 1);
  test_clock_advance(&f->te->clock, 10);
  assert_ok(step(f), &f->st); /* snapshot at 1; the write will fail */
  assert_int_equal(logged(f, "Saving checkpoints for %lld into", 1), 1);
  /* The first after_run after the write finished returns its error. */
  for (i = 0; i < POLL_LIMIT; i++) {
    rc = noop(f);
    if (rc != HK_OK) break;
    test_sleep_real_ms(1);
  }
  assert_status(rc, &f->st, HK_RESOURCE_EXHAUSTED, "model.ckpt");
  assert_non_null(strstr(f->st.message, "step 1"));
  assert_false(ckpt_exists(f, 1));
  assert_true(f->l.after == 1 && f->l.after_steps[0] == 0); /* no after_save for it */
  /* The timer was not rolled back: no new save before the next 10 s. */
  before = test_log_count(&f->te->log, -1, "Saving checkpoints for");
  assert_ok(step(f), &f->st);
  assert_int_equal(test_log_count(&f->te->log, -1, "Saving checkpoints for"), before);
  faulty_fs_reset(&f->ff);
  test_clock_advance(&f->te->clock, 10);
  assert_ok(step(f), &f->st);
  assert_int_equal(logged(f, "Saving checkpoints for %lld into", 3), 1);
  assert_ok(close_session(f), &f->st);
  assert_true(ckpt_exists(f, 3));
}

/* D3: the after_run that meets a write error fails with it, names the checkpoint and starts no new save. */
static void test_async_checkpoint_saver_hook__a_write_error_fails_that_after_run_and_starts_no_save(void **state) {
  fixture *f = *state;

  f->o.block_when_busy = 1;
  open_ok(f);
  faulty_fs_match(&f->ff, "model.ckpt-1.safetensors");
  faulty_fs_fail_errno(&f->ff, FAULTY_FS_WRITE, 0, ENOSPC, 1);
  assert_ok(step(f), &f->st);
  assert_status(step(f), &f->st, HK_RESOURCE_EXHAUSTED, "Checkpoint for step 1 into");
  assert_int_equal(logged(f, "Saving checkpoints for %lld into", 2), 0); /* no new save in that call */
  assert_false(hk_session_should_stop(f->s));
  assert_ok(close_session(f), &f->st); /* end: GS 2 was never written, so it is saved now */
  assert_true(ckpt_exists(f, 2));
  assert_false(ckpt_exists(f, 1));
}

/* D3.5: end() returns the error of the write in flight and still saves the final step. */
static void test_async_checkpoint_saver_hook__a_write_error_reaches_end_and_the_final_save_runs(void **state) {
  fixture *f = *state;

  f->o.block_when_busy = 1;
  open_ok(f);
  assert_ok(step(f), &f->st);
  assert_ok(step(f), &f->st);
  /* Hold and fail the write of 3: one failure only, so end()'s own save of
   * GS 3 succeeds; end() still returns the first error. */
  gate_fs_close(&f->gate, "model.ckpt-3.safetensors", NULL);
  faulty_fs_match(&f->ff, "model.ckpt-3.safetensors");
  faulty_fs_fail_errno(&f->ff, FAULTY_FS_WRITE, 0, ENOSPC, 0);
  assert_ok(step(f), &f->st);
  gate_fs_wait_arrival(&f->gate);
  gate_fs_open(&f->gate);
  assert_status(close_session(f), &f->st, HK_RESOURCE_EXHAUSTED, "Checkpoint for step 3 into");
  assert_true(ckpt_exists(f, 3)); /* the synchronous save at end */
  assert_int_equal(f->l.end, 1);
  assert_true(f->l.end_step == 3);
  assert_true(f->l.after == 4 && f->l.after_steps[3] == 3);
}

/* ---- D3.5: end drains, then saves only if needed --------------------------------- */

/* D3.5: end() waits for the write in flight and does not save again a step that write holds. */
static void test_async_checkpoint_saver_hook__end_waits_for_the_write_in_flight_without_saving_again(void **state) {
  fixture *f = *state;

  f->o.block_when_busy = 1;
  gate_fs_close(&f->gate, "model.ckpt-2.safetensors", NULL);
  open_ok(f);
  assert_ok(step(f), &f->st);
  assert_ok(step(f), &f->st); /* snapshot of 2, held */
  gate_fs_wait_arrival(&f->gate);
  assert_false(ckpt_exists(f, 2));
  {
    pthread_t opener;
    assert_int_equal(pthread_create(&opener, NULL, open_later, &f->gate), 0);
    assert_ok(close_session(f), &f->st); /* waits for the held write */
    pthread_join(opener, NULL);
  }
  assert_true(ckpt_exists(f, 2));
  assert_int_equal(logged(f, "Saving checkpoints for %lld into", 2), 1);
  assert_int_equal(logged(f, "Checkpoint finished for %lld into", 2), 1);
  assert_int_equal(f->l.after, 3);
  assert_true(f->l.end_step == 2);
}

/* D3.5: end() saves the final step synchronously when no checkpoint of it was written. */
static void test_async_checkpoint_saver_hook__end_saves_the_final_step(void **state) {
  fixture *f = *state;
  int64_t gs, v;
  int i;

  f->o.save_steps = 100;
  open_ok(f);
  for (i = 0; i < 3; i++) assert_ok(step(f), &f->st);
  assert_ok(close_session(f), &f->st);
  assert_true(ckpt_exists(f, 0) && ckpt_exists(f, 3));
  assert_int_equal(f->l.before, 2);
  assert_int_equal(f->l.after, 2);
  read_ckpt(f, 3, &gs, &v);
  assert_true(gs == 3 && v == 15);
}

/* ---- D3.4, C105: a listener's stop request from the creation save is honoured ---- */

/* C105: a listener's stop request from the save at creation is honoured when its completion is processed. */
static void test_async_checkpoint_saver_hook__a_stop_request_after_the_creation_save_is_honoured(void **state) {
  fixture *f = *state;

  f->o.block_when_busy = 1;
  f->l.stop_at = 0;
  open_ok(f);
  assert_false(hk_session_should_stop(f->s));
  assert_ok(step(f), &f->st); /* processes the creation save's completion */
  assert_true(hk_session_should_stop(f->s));
  assert_logged(f->te, HK_LOG_INFO, "A CheckpointSaverListener requested that training be stopped. listener: spy");
}

/* ---- D12: a signal stop ends with the final checkpoint --------------------------- */

/* D12: a signal is a clean stop, so end() still saves the final step. */
static void test_async_checkpoint_saver_hook__a_signal_stop_still_saves_the_final_step(void **state) {
  fixture *f = *state;
  int i;

  f->o.save_steps = 1000;
  open_ok(f);
  assert_ok(hk_signal_install(&f->st), &f->st);
  for (i = 0; i < 3; i++) assert_ok(step(f), &f->st);
  raise(SIGTERM);
  assert_true(hk_session_should_stop(f->s));
  assert_ok(close_session(f), &f->st);
  assert_ok(hk_signal_uninstall(&f->st), &f->st);
  assert_true(ckpt_exists(f, 3));
  assert_true(f->l.end_step == 3);
}

/* ---- D3.2: the writer thread is joined by hk_hook_free without end() ------------- */

/* D3.2, H20: a session that lets go of the hook without end() (an unclean
 * close) completes the write in flight before close returns — the hook
 * uses the session's default Scaffold's Saver (C99), which the session frees
 * with itself, so the write must be over by then (under ASan a late write
 * is a use-after-free). The result is dropped: no after_save, no end. */
static void test_async_checkpoint_saver_hook__an_unclean_close_completes_the_write_in_flight(void **state) {
  fixture *f = *state;
  pthread_t opener;

  gate_fs_close(&f->gate, "model.ckpt-0.safetensors", NULL);
  open_ok(f); /* no saver, no scaffold: the session's Scaffold's Saver */
  gate_fs_wait_arrival(&f->gate);
  assert_false(ckpt_exists(f, 0));
  assert_int_equal(pthread_create(&opener, NULL, open_later, &f->gate), 0);
  assert_status(hk_session_close(f->s, HK_INTERNAL, &f->st), &f->st, HK_INTERNAL, NULL); /* no end() */
  pthread_join(opener, NULL);
  assert_true(ckpt_exists(f, 0)); /* completed during close */
  hk_session_free(f->s);          /* frees the default Scaffold and its Saver */
  f->s = NULL;
  hk_hook_free(f->hook);
  f->hook = NULL;
  assert_int_equal(gate_fs_arrivals(&f->gate), 1);
  assert_int_equal(f->l.after, 0);
  assert_int_equal(f->l.end, 0);
}

/* D3.2: freed without close (H20): the implicit close detaches the hook, which
 * finishes the write before the session's Saver goes away. */
static void test_async_checkpoint_saver_hook__free_without_close_completes_the_write_in_flight(void **state) {
  fixture *f = *state;
  pthread_t opener;

  gate_fs_close(&f->gate, "model.ckpt-0.safetensors", NULL);
  open_ok(f);
  gate_fs_wait_arrival(&f->gate);
  assert_int_equal(pthread_create(&opener, NULL, open_later, &f->gate), 0);
  hk_session_free(f->s);
  f->s = NULL;
  pthread_join(opener, NULL);
  assert_true(ckpt_exists(f, 0));
  hk_hook_free(f->hook);
  f->hook = NULL;
}

/* ---- D3.2: one snapshot buffer, allocated once --------------------------------------- */

/* Counts allocations of at least `big` bytes made on the test's thread,
 * forwarding to the test_env allocator (which keeps counting leaks). */
typedef struct big_alloc {
  hk_allocator inner;
  size_t big;
  pthread_t main;
  pthread_mutex_t mu;
  long nbig;
} big_alloc;

static void count_big(big_alloc *b, size_t size) {
  if (size >= b->big && pthread_equal(pthread_self(), b->main)) {
    pthread_mutex_lock(&b->mu);
    b->nbig++;
    pthread_mutex_unlock(&b->mu);
  }
}

static void *ba_alloc(void *user, size_t size) {
  big_alloc *b = user;
  count_big(b, size);
  return b->inner.alloc(b->inner.user, size);
}

static void *ba_realloc(void *user, void *p, size_t size) {
  big_alloc *b = user;
  count_big(b, size);
  return b->inner.realloc(b->inner.user, p, size);
}

static void ba_free(void *user, void *p) {
  big_alloc *b = user;
  b->inner.free(b->inner.user, p);
}

static long big_count(big_alloc *b) {
  long n;
  pthread_mutex_lock(&b->mu);
  n = b->nbig;
  pthread_mutex_unlock(&b->mu);
  return n;
}

#define BIG_ELEMS 65536 /* a 256 KiB f32 variable */

static void run_big_graph(fixture *f, int async, long *at_creation, long *in_steps) {
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_variable_def def = HK_VARIABLE_DEF_INIT;
  int64_t one = 1, dims[1] = {BIG_ELEMS};
  hk_graph *g = NULL;
  hk_handle gs, one_h, train, big;
  hk_tensor t;
  big_alloc b;
  hk_env env = f->te->env;
  long base;
  int i;

  memset(&b, 0, sizeof b);
  b.inner = f->te->env.allocator;
  b.big = BIG_ELEMS * sizeof(float);
  b.main = pthread_self();
  pthread_mutex_init(&b.mu, NULL);
  env.allocator.alloc = ba_alloc;
  env.allocator.realloc = ba_realloc;
  env.allocator.free = ba_free;
  env.allocator.user = &b;

  go.env = &env;
  assert_ok(hk_graph_new(&g, &go, &f->st), &f->st);
  assert_ok(hk_graph_get_or_create_global_step(g, &gs, &f->st), &f->st);
  t = hk_tensor_scalar_i64(&one);
  assert_ok(hk_graph_constant(g, &one_h, "one", &t, &f->st), &f->st);
  assert_ok(hk_graph_assign_add(g, &train, "train", gs, one_h, &f->st), &f->st);
  def.name = "big";
  def.dtype = HK_DTYPE_F32;
  def.rank = 1;
  def.dims = dims;
  def.init.kind = HK_INIT_CONSTANT;
  def.init.value = 0.5;
  assert_ok(hk_graph_variable(g, &big, &def, &f->st), &f->st);

  f->o.env = &env;
  f->o.block_when_busy = 1;
  f->o.save_graph_def = 0;
  f->o.nlisteners = 0;
  if (async)
    assert_ok(hk_async_checkpoint_saver_hook_new(&f->hook, &f->o, &f->st), &f->st);
  else
    assert_ok(hk_checkpoint_saver_hook_new(&f->hook, &f->o, &f->st), &f->st);
  base = big_count(&b);
  assert_ok(one_hook_session_new(&f->s, &env, HK_SESSION_MONITORED, hk_graph_executor(g), &f->hook, NULL, &f->st),
            &f->st);
  *at_creation = big_count(&b) - base;
  base = big_count(&b);
  for (i = 0; i < 4; i++) assert_ok(session_run_train(f->s, train, &f->st), &f->st);
  *in_steps = big_count(&b) - base;
  assert_ok(close_session(f), &f->st);
  hk_hook_free(f->hook);
  f->hook = NULL;
  hk_graph_free(g);
  pthread_mutex_destroy(&b.mu);
  assert_true(ckpt_exists(f, 4));
}

/* D3.2: the snapshot buffer is allocated at the first save and reused by every later one. */
static void test_async_checkpoint_saver_hook__the_snapshot_buffer_is_allocated_once(void **state) {
  fixture *f = *state;
  long sync_creation, sync_steps, async_creation, async_steps;

  run_big_graph(f, 0, &sync_creation, &sync_steps);
  run_big_graph(f, 1, &async_creation, &async_steps);
  /* The asynchronous hook allocates the snapshot buffer at its first save
   * (one big block more than the synchronous hook), and the four later
   * saves allocate no big block on the training thread, as synchronous ones. */
  assert_int_equal(async_creation, sync_creation + 1);
  assert_int_equal(async_steps, 0);
  assert_int_equal(sync_steps, 0);
}

/* ---- C105, D3.5: the checkpoint a session just restored is not saved again ---------- */

/* A monitored session with the hook that restores from the hook's
 * directory at creation (C47, C68). */
static hk_code open_restoring(fixture *f) {
  hk_session_options o;
  test_session_options(&o, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(f->fx), &f->hook, 1);
  o.checkpoint_dir = f->dir;
  return hk_session_new(&f->s, &o, &f->st);
}

/* File-system calls that change something, made through f->ff. */
static long mutating_calls(fixture *f) {
  static const int slots[] = {FAULTY_FS_CREATE_EXCL, FAULTY_FS_WRITE,  FAULTY_FS_SYNC, FAULTY_FS_SYNC_DIR,
                              FAULTY_FS_RENAME,      FAULTY_FS_UNLINK, FAULTY_FS_MKDIR};
  long n = 0;
  for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++) n += faulty_fs_calls(&f->ff, slots[i]);
  return n;
}

/* C105 (revised), D3.5: as C94 for the synchronous hook — a session that
 * restored the checkpoint of GS from this directory starts no snapshot and
 * no write for it (a full disk does not fail the resume), runs no
 * before_save/after_save for it, and end() before any step does not save
 * GS synchronously either: it counts as written. The next save comes after
 * the cadence. */
static void test_async_checkpoint_saver_hook__restored_checkpoint_not_saved_again(void **state) {
  fixture *f = *state;
  char line[1200];
  char *save_path = test_path(f->dir, "model.ckpt");
  int i;

  f->o.save_steps = 2;
  f->o.block_when_busy = 1; /* saves exactly at 0, 2, 4 */
  make_hook(f);
  assert_ok(open_restoring(f), &f->st);
  for (i = 0; i < 4; i++) assert_ok(step(f), &f->st);
  assert_ok(close_session(f), &f->st);
  assert_true(ckpt_exists(f, 4));
  assert_int_equal(f->l.before, 3);
  assert_int_equal(f->l.after, 3);

  faulty_fs_reset(&f->ff);
  faulty_fs_space(&f->ff, 0); /* a full disk */
  test_log_clear(&f->te->log);
  assert_ok(open_restoring(f), &f->st);
  assert_int_equal(live(f, f->gs), 4);
  assert_int_equal(live(f, f->v), 20);
  assert_int_equal(mutating_calls(f), 0);
  assert_int_equal(f->l.before, 3);
  assert_int_equal(f->l.after, 3);
  snprintf(line, sizeof line, "Not saving checkpoint 4 into %s at session creation: %s-4 was just restored from it.",
           save_path, save_path);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, line), 1);
  assert_int_equal(test_log_count(&f->te->log, -1, "Saving checkpoints for"), 0);
  assert_ok(close_session(f), &f->st); /* D3.5: GS 4 counts as written */
  assert_int_equal(mutating_calls(f), 0);
  assert_int_equal(f->l.before, 3);
  assert_int_equal(f->l.after, 3);
  assert_int_equal(f->l.end, 2);
  assert_true(f->l.end_step == 4);
  assert_int_equal(test_log_count(&f->te->log, -1, "Saving checkpoints for"), 0);

  /* room again: the next save is at 6, not at 5 */
  faulty_fs_reset(&f->ff);
  assert_ok(open_restoring(f), &f->st);
  assert_ok(step(f), &f->st);
  assert_int_equal(logged(f, "Saving checkpoints for %lld into", 5), 0);
  assert_ok(step(f), &f->st);
  assert_int_equal(logged(f, "Saving checkpoints for %lld into", 6), 1);
  assert_ok(close_session(f), &f->st);
  assert_true(ckpt_exists(f, 6));
  assert_false(ckpt_exists(f, 5));
  assert_int_equal(f->l.before, 4);
  free(save_path);
}

/* ---- D3.2, D3.4, D6.1: the writer in flight at a re-creation --------------------------- */

/* The hook's options as these tests need them: no listeners, saving at
 * creation (and end()) unless a test asks for more, no graph file. */
static void recreation_options(fixture *f) {
  f->o.save_steps = 1000;
  f->o.listeners = NULL;
  f->o.nlisteners = 0;
  f->o.save_graph_def = 0;
}

/* Preempts the next run of the train op once f->preempt is set. */
static hk_code preempt_train(void *user, fake_executor *fx, const hk_run_args *args, hk_status *st) {
  fixture *f = user;
  (void)fx;
  if (!f->preempt || args->ntargets == 0 || args->targets[0] != f->train) return HK_OK;
  f->preempt = 0;
  return hk_status_set(st, HK_ABORTED, "preempted");
}

/* A monitored session with f->hook and f->scaffold that restores from
 * checkpoint_dir (NULL: none) at creation, and whose train op can be
 * preempted (f->preempt). */
static hk_code open_preemptible(fixture *f, const char *checkpoint_dir) {
  hk_session_options so;
  test_session_options(&so, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(f->fx), &f->hook, 1);
  so.scaffold = f->scaffold;
  so.checkpoint_dir = checkpoint_dir;
  fake_executor_on_run(f->fx, preempt_train, f);
  return hk_session_new(&f->s, &so, &f->st);
}

/* Opens every gate after a long pause, for a training thread that waits for
 * the writer while the writer is held: long enough that the training thread
 * reaches the point under test first (liveness only: nothing asserts on
 * timing). */
static void *open_much_later(void *arg) {
  test_sleep_real_ms(300);
  gate_fs_open(arg);
  return NULL;
}

/*
 * D3.4 "Completion is processed on the training thread at the first
 * after_run (or end()) after the write finished ... Failure: that after_run
 * returns the write's error". At a re-creation the asynchronous hook does
 * not return a finished write's error from after_create_session (C4/D2.4
 * would make the re-creation fail with a non-preemption error and put the
 * MS into the failed state, H18, with no end() and no final checkpoint,
 * D3.5): the error belongs to the next after_run, which leaves the session
 * usable.
 */
static void test_async_checkpoint_saver_hook__write_error_met_at_recreation_reaches_after_run(void **state) {
  fixture *f = *state;
  hk_code rc;

  gate_fs_exempt(&f->gate, pthread_self());
  recreation_options(f);
  make_hook(f);
  /* The creation save of step 0 fails in the background (once). */
  faulty_fs_match(&f->ff, "model.ckpt-0.safetensors");
  faulty_fs_fail_errno(&f->ff, FAULTY_FS_WRITE, 0, ENOSPC, 0);
  assert_ok(open_preemptible(f, NULL), &f->st);
  /* The first run is preempted in the executor: no after_run saw the write's
   * result before the re-creation. */
  f->preempt = 1;
  rc = session_run_train(f->s, f->train, &f->st);
  assert_status(rc, &f->st, HK_RESOURCE_EXHAUSTED, "model.ckpt");
  assert_false(hk_session_should_stop(f->s)); /* not the failed state */
  assert_ok(session_run_train(f->s, f->train, &f->st), &f->st);
  assert_ok(close_session(f), &f->st);
}

/*
 * An observer that forces the interleaving a concurrent writer thread can
 * always produce: on the test's (exempt) thread, when `race` is armed, a
 * write to a graph.txt temporary file made while the writer is held at the
 * list gate opens that gate and waits until the writer has gone past its
 * stale-temporary cleanup (it creates its data file's temporary next).
 * Fields are guarded by the gate's mutex.
 */
typedef struct graph_race {
  int race;             /* arm the graph.txt interleaving */
  int writer_made_data; /* the writer created a .safetensors temporary */
  int graph_while_held; /* the training thread wrote graph.txt while the writer was held */
} graph_race;

enum { TAG_GRAPH_TMP = 1 };

static unsigned race_created(void *user, gate_fs *g, const char *path) {
  graph_race *r = user;
  unsigned tag = 0;
  if (gate_fs_exempt_here(g) && strstr(path, "graph.txt.tmp-") != NULL) tag |= TAG_GRAPH_TMP;
  if (!gate_fs_exempt_here(g) && strstr(path, ".safetensors.tmp-") != NULL) {
    r->writer_made_data = 1;
    pthread_cond_broadcast(&g->cv);
  }
  return tag;
}

static void race_writing(void *user, gate_fs *g, unsigned tag) {
  graph_race *r = user;
  if ((tag & TAG_GRAPH_TMP) && r->race && g->list_closed && g->list_arrivals > 0) {
    r->graph_while_held = 1;
    g->list_closed = 0;
    pthread_cond_broadcast(&g->cv);
    while (!r->writer_made_data) pthread_cond_wait(&g->cv, &g->mu);
  }
}

static const gate_fs_observer graph_race_observer = {race_created, race_writing, NULL};
static graph_race the_graph_race;

/*
 * D3.2 "at most one save in flight" and D4.2's "one writer per directory is
 * assumed" (step 1 of every save removes stale "graph.txt.tmp-XXXXXX"
 * files). At a re-creation (C94: "All of this runs again"), the
 * asynchronous hook waits for the write in flight before it writes
 * graph.txt on the training thread (C105), so the writer thread's
 * stale-file cleanup never deletes the training thread's graph.txt
 * temporary (whose rename would then fail with NOT_FOUND and put the MS,
 * only recovering from a preemption, into the failed state).
 */
static void test_async_checkpoint_saver_hook__graph_txt_not_written_beside_write_in_flight(void **state) {
  fixture *f = *state;
  pthread_t opener;
  hk_code rc;

  memset(&the_graph_race, 0, sizeof the_graph_race);
  gate_fs_exempt(&f->gate, pthread_self());
  gate_fs_observe(&f->gate, &graph_race_observer, &the_graph_race);
  recreation_options(f);
  f->o.save_graph_def = 1;
  make_hook(f);
  gate_fs_close_list(&f->gate); /* hold the creation save's writer before its stale-file cleanup */
  assert_ok(open_preemptible(f, NULL), &f->st);
  gate_fs_wait_list_arrival(&f->gate);
  pthread_mutex_lock(&f->gate.mu);
  the_graph_race.race = 1;
  pthread_mutex_unlock(&f->gate.mu);
  assert_int_equal(pthread_create(&opener, NULL, open_much_later, &f->gate), 0);
  f->preempt = 1;
  rc = session_run_train(f->s, f->train, &f->st); /* preempted, re-created, run again */
  pthread_join(opener, NULL);
  assert_ok(rc, &f->st);
  assert_false(hk_session_should_stop(f->s));
  assert_false(the_graph_race.graph_while_held);
  assert_ok(close_session(f), &f->st);
}

/*
 * An allocator over the test's that never returns memory while the test
 * runs: a freed block is filled with 'Z' (NUL-terminated) and kept until
 * quarantine_release(), so a use after free reads "ZZZ...".
 */
typedef union qhdr {
  struct {
    size_t size;
    union qhdr *next;
  } h;
  max_align_t align;
} qhdr;

typedef struct quarantine {
  hk_allocator inner;
  pthread_mutex_t mu;
  qhdr *freed;
} quarantine;

static void *q_alloc(void *u, size_t size) {
  quarantine *q = u;
  qhdr *b = q->inner.alloc(q->inner.user, sizeof *b + size);
  if (b == NULL) return NULL;
  b->h.size = size;
  b->h.next = NULL;
  return b + 1;
}

static void q_free(void *u, void *p) {
  quarantine *q = u;
  qhdr *b;
  if (p == NULL) return;
  b = (qhdr *)p - 1;
  if (b->h.size > 0) {
    memset(p, 'Z', b->h.size);
    ((char *)p)[b->h.size - 1] = '\0';
  }
  pthread_mutex_lock(&q->mu);
  b->h.next = q->freed;
  q->freed = b;
  pthread_mutex_unlock(&q->mu);
}

static void *q_realloc(void *u, void *p, size_t size) {
  void *n;
  if (p == NULL) return q_alloc(u, size);
  n = q_alloc(u, size);
  if (n == NULL) return NULL;
  memcpy(n, p, ((qhdr *)p - 1)->h.size < size ? ((qhdr *)p - 1)->h.size : size);
  q_free(u, p);
  return n;
}

static void quarantine_release(quarantine *q) {
  while (q->freed != NULL) {
    qhdr *b = q->freed;
    q->freed = b->h.next;
    q->inner.free(q->inner.user, b);
  }
  pthread_mutex_destroy(&q->mu);
}

/*
 * D3.2 (the file comment of async_checkpoint_saver.c: "While a write is in flight
 * the training thread touches neither the snapshot buffer nor the Saver"),
 * H6, D6.1. With checkpoint_dir set, a re-creation restores with the
 * Scaffold's Saver — the one the asynchronous hook writes with (C99) — and
 * the restore re-reads the managed list (D6.1). It does so only once the
 * write in flight has finished (the session drains built-in asynchronous
 * hooks before a re-creation restores), so the writer never deletes a path
 * read from freed memory: with a quarantine allocator no "ZZZ...Z" path is
 * ever unlinked or logged ("Ignoring: ..."), and model.ckpt-0, which
 * retention (max_to_keep 1) has to delete, goes.
 */
static void test_async_checkpoint_saver_hook__restore_at_recreation_waits_for_the_writer(void **state) {
  fixture *f = *state;
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  hk_scaffold_options sco = HK_SCAFFOLD_OPTIONS_INIT;
  quarantine q;
  hk_env senv = f->te->env;
  pthread_t opener;
  hk_code rc;

  gate_fs_exempt(&f->gate, pthread_self());
  memset(&q, 0, sizeof q);
  q.inner = f->te->env.allocator;
  pthread_mutex_init(&q.mu, NULL);
  senv.allocator.alloc = q_alloc;
  senv.allocator.realloc = q_realloc;
  senv.allocator.free = q_free;
  senv.allocator.user = &q;
  so.env = &senv;
  so.executor = fake_executor_executor(f->fx);
  so.max_to_keep = 1;
  assert_ok(hk_saver_new(&f->saver, &so, &f->st), &f->st);
  sco.env = &f->te->env;
  sco.saver = f->saver;
  assert_ok(hk_scaffold_new(&f->scaffold, &sco, &f->st), &f->st);

  recreation_options(f);
  f->o.save_steps = 1;
  f->o.block_when_busy = 1;
  make_hook(f);
  gate_fs_close(&f->gate, "model.ckpt-1.safetensors", NULL);
  assert_ok(open_preemptible(f, f->dir), &f->st);               /* save of 0 */
  assert_ok(session_run_train(f->s, f->train, &f->st), &f->st); /* 0 processed; save of 1 planned (drops 0), held */
  gate_fs_wait_arrival(&f->gate);
  assert_int_equal(pthread_create(&opener, NULL, open_much_later, &f->gate), 0);
  f->preempt = 1;
  rc = session_run_train(f->s, f->train,
                         &f->st); /* preempted; the re-creation restores model.ckpt-0 with the same Saver */
  pthread_join(opener, NULL);
  assert_ok(rc, &f->st);
  assert_ok(close_session(f), &f->st);
  hk_hook_free(f->hook);
  f->hook = NULL;
  hk_scaffold_free(f->scaffold);
  f->scaffold = NULL;
  hk_saver_free(f->saver);
  f->saver = NULL;
  quarantine_release(&q);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, "ZZZ"), 0);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, "Ignoring:"), 0);
}

/* ---- H6: the writer thread calls only the allocator, the log and the fs -------------- */

typedef struct thread_clock {
  pthread_mutex_t mu;
  pthread_t training;
  int off_thread_wall, off_thread_monotonic;
  double now;
} thread_clock;

static double tc_monotonic(void *u) {
  thread_clock *c = u;
  double v;
  pthread_mutex_lock(&c->mu);
  if (!pthread_equal(pthread_self(), c->training)) c->off_thread_monotonic++;
  v = c->now;
  pthread_mutex_unlock(&c->mu);
  return v;
}

static double tc_wall(void *u) {
  thread_clock *c = u;
  double v;
  pthread_mutex_lock(&c->mu);
  if (!pthread_equal(pthread_self(), c->training)) c->off_thread_wall++;
  v = 1.7e9 + c->now;
  pthread_mutex_unlock(&c->mu);
  return v;
}

static void tc_sleep(void *u, double secs) {
  thread_clock *c = u;
  pthread_mutex_lock(&c->mu);
  c->now += secs;
  pthread_mutex_unlock(&c->mu);
}

/*
 * H6 ("The log sink and the allocator may be called from the background
 * saver thread") and H5 (clocks are per-session injectables, e.g. a test's
 * mock that is not thread-safe): only those two env services are called off
 * the training thread, and the fs (whose slots are documented thread-safe).
 * The writer thread reads no clock: "now" for D6.2 and D6.1 is taken on
 * the training thread at snapshot time and passed to the write, and the
 * write is timed on the training thread when its completion is processed.
 */
static void test_async_checkpoint_saver_hook__writer_thread_does_not_call_the_clock(void **state) {
  fixture *f = *state;
  thread_clock tc;
  hk_env env;
  hk_checkpoint_saver_options o;
  hk_status st = HK_STATUS_INIT;

  memset(&tc, 0, sizeof tc);
  pthread_mutex_init(&tc.mu, NULL);
  tc.training = pthread_self();
  env = f->te->env;
  env.fs = NULL; /* POSIX */
  env.fs_user = NULL;
  env.clock.monotonic = tc_monotonic;
  env.clock.wall = tc_wall;
  env.clock.sleep = tc_sleep;
  env.clock.user = &tc;
  assert_ok(hk_checkpoint_saver_options_init(&o, HK_CHECKPOINT_SAVER_OPTIONS_VERSION), NULL);
  o.env = &env;
  o.checkpoint_dir = f->dir;
  o.save_steps = 1;
  o.save_graph_def = 0;
  o.block_when_busy = 1;
  assert_ok(hk_async_checkpoint_saver_hook_new(&f->hook, &o, &st), &st);
  assert_ok(one_hook_session_new(&f->s, &env, HK_SESSION_MONITORED, fake_executor_executor(f->fx), &f->hook, NULL, &st),
            &st);
  for (int i = 0; i < 4; i++) assert_ok(session_run_train(f->s, f->train, &st), &st);
  assert_ok(hk_session_close(f->s, HK_OK, &st), &st);
  hk_session_free(f->s);
  f->s = NULL;
  hk_hook_free(f->hook);
  f->hook = NULL;
  {
    char *state_file = test_path(f->dir, "checkpoint");
    assert_true(test_path_exists(state_file)); /* the writer thread did write */
    free(state_file);
  }
  pthread_mutex_destroy(&tc.mu);
  assert_int_equal(tc.off_thread_wall, 0);
  assert_int_equal(tc.off_thread_monotonic, 0);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_async_checkpoint_saver_hook__validates_options_and_logs_its_creation),
      T(test_async_checkpoint_saver_hook__saves_in_the_background_with_listeners_and_log_lines),
      T(test_async_checkpoint_saver_hook__a_checkpoint_holds_the_values_of_its_step),
      T(test_async_checkpoint_saver_hook__block_when_busy_waits_for_the_write_in_flight),
      T(test_async_checkpoint_saver_hook__a_write_error_reaches_the_next_after_run),
      T(test_async_checkpoint_saver_hook__a_write_error_fails_that_after_run_and_starts_no_save),
      T(test_async_checkpoint_saver_hook__a_write_error_reaches_end_and_the_final_save_runs),
      T(test_async_checkpoint_saver_hook__end_waits_for_the_write_in_flight_without_saving_again),
      T(test_async_checkpoint_saver_hook__end_saves_the_final_step),
      T(test_async_checkpoint_saver_hook__a_stop_request_after_the_creation_save_is_honoured),
      T(test_async_checkpoint_saver_hook__a_signal_stop_still_saves_the_final_step),
      T(test_async_checkpoint_saver_hook__an_unclean_close_completes_the_write_in_flight),
      T(test_async_checkpoint_saver_hook__free_without_close_completes_the_write_in_flight),
      T(test_async_checkpoint_saver_hook__the_snapshot_buffer_is_allocated_once),
      T(test_async_checkpoint_saver_hook__restored_checkpoint_not_saved_again),
      T(test_async_checkpoint_saver_hook__writer_thread_does_not_call_the_clock),
      T(test_async_checkpoint_saver_hook__write_error_met_at_recreation_reaches_after_run),
      T(test_async_checkpoint_saver_hook__graph_txt_not_written_beside_write_in_flight),
      T(test_async_checkpoint_saver_hook__restore_at_recreation_waits_for_the_writer),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
