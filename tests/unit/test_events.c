/*
 * Tests of the event files checkpoint hooks write (contract H26; the
 * SessionLog CHECKPOINT event of C98). The files are produced through a
 * CheckpointSaverHook in a real session and decoded here independently of
 * the library by tests/support/event_file (TensorFlow's record framing with
 * both CRCs recomputed bitwise, and the Event protocol buffer by field
 * number: wall_time 1, step 2, file_version 3, session_log 7 {status 1,
 * checkpoint_path 2}; any other field, log_message 6 included, fails).
 */
#include "session_fixture.h"
#include "event_file.h"
#include "tmpdir.h"
#include "faulty_fs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- fixture ---------------------------------------------------------------------- */

typedef struct fixture {
  test_env *te;
  char *tmp;
  char *dir;
  fake_executor *fx;
  hk_handle gs, train;
  hk_hook *hook;
  hk_session *s;
  hk_checkpoint_saver_options o;
  hk_status st;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof(*f));
  assert_non_null(f);
  f->te = test_env_new();
  f->tmp = test_tmpdir_new("events");
  f->dir = test_path(f->tmp, "ckpt");
  f->fx = fake_training_executor(f->te, NULL, &f->gs, &f->train);
  hk_checkpoint_saver_options_init(&f->o, HK_CHECKPOINT_SAVER_OPTIONS_VERSION);
  f->o.env = &f->te->env;
  f->o.checkpoint_dir = f->dir;
  f->o.save_steps = 1;
  f->o.save_graph_def = 0;
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
  assert_ok(hk_checkpoint_saver_hook_new(&f->hook, &f->o, &f->st), &f->st);
  assert_ok(one_hook_session_new(&f->s, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(f->fx), &f->hook,
                                 NULL, &f->st),
            &f->st);
}

static void close_ok(fixture *f) {
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  hk_session_free(f->s);
  f->s = NULL;
}

/* "events.out.tfevents.<secs>.<host>" as the mock wall clock (1.7e9) gives it. */
static char *expected_name(void) {
  char host[256];
  char *name = malloc(600);
  assert_non_null(name);
  assert_int_equal(gethostname(host, sizeof host), 0);
  host[sizeof host - 1] = '\0';
  snprintf(name, 600, "events.out.tfevents.1700000000.%s", host);
  return name;
}

/* ---- tests ------------------------------------------------------------------------- */

/* H26: event files are named as TensorBoard's, framed with checksums, and hold the CHECKPOINT events. */
static void test_events__files_are_named_framed_and_hold_checkpoint_events(void **state) {
  fixture *f = *state;
  char names[4][600];
  char *expect = expected_name();
  char *save_path = test_path(f->dir, "model.ckpt");
  char *path;
  ev_file *ef;
  const ev_event *ev;
  int i;

  open_ok(f);
  assert_ok(session_run_train(f->s, f->train, &f->st), &f->st);
  assert_ok(session_run_train(f->s, f->train, &f->st), &f->st);
  close_ok(f);

  assert_int_equal(event_file_list(f->dir, names, 4), 1);
  assert_string_equal(names[0], expect);
  path = test_path(f->dir, names[0]);
  ef = event_file_read(path, 0);
  ev = ef->events;
  /* file_version first, then one CHECKPOINT per save: 0, 1, 2 (C101). */
  assert_int_equal(ef->n, 4);
  assert_true(ev[0].kind == EV_FILE_VERSION && ev[0].has_wall);
  assert_string_equal(ev[0].version, "brain.Event:2");
  assert_true(ev[0].wall == 1.7e9);
  for (i = 1; i < 4; i++) {
    assert_true(ev[i].kind == EV_SESSION_LOG && ev[i].has_step && ev[i].has_wall);
    assert_true(ev[i].step == i - 1);
    assert_true(ev[i].status == 3);             /* SessionLog.CHECKPOINT */
    assert_string_equal(ev[i].path, save_path); /* no step suffix (C98) */
  }
  event_file_free(ef);
  free(path);
  free(save_path);
  free(expect);
}

/* H26: created at the first write: a session whose first save never comes
 * leaves no event file. */
static hk_code failing_before_save(void *user, hk_raw_session *rs, int64_t step, hk_status *st) {
  (void)user;
  (void)rs;
  (void)step;
  return hk_status_set(st, HK_CANCELLED, "not now");
}

/* H26: an event file is created at its first write, not before. */
static void test_events__an_event_file_is_created_at_its_first_write(void **state) {
  fixture *f = *state;
  static const hk_checkpoint_listener_vtable vt = {HK_CHECKPOINT_LISTENER_VTABLE_VERSION, NULL, failing_before_save,
                                                   NULL, NULL};
  hk_checkpoint_listener l = {&vt, NULL, "refuser"};
  char names[4][600];

  f->o.listeners = &l;
  f->o.nlisteners = 1;
  assert_ok(hk_checkpoint_saver_hook_new(&f->hook, &f->o, &f->st), &f->st);
  assert_status(one_hook_session_new(&f->s, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(f->fx), &f->hook,
                                     NULL, &f->st),
                &f->st, HK_CANCELLED, "not now");
  assert_true(test_path_exists(f->dir)); /* begin() ran */
  assert_int_equal(event_file_list(f->dir, names, 4), 0);
}

/* H26: an existing file of the same name is left alone; the writer appends
 * ".1" to its name. */
static void test_events__a_taken_file_name_gets_a_suffix(void **state) {
  fixture *f = *state;
  char names[4][600];
  char *expect = expected_name();
  char *taken, *mine;
  char want[700];
  ev_file *ef;
  size_t n = 0;
  char *data;

  assert_int_equal(mkdir(f->dir, 0755), 0);
  taken = test_path(f->dir, expect);
  assert_int_equal(test_write_file(taken, "other", 5), 0);
  open_ok(f);
  close_ok(f);

  assert_int_equal(event_file_list(f->dir, names, 4), 2);
  snprintf(want, sizeof want, "%s.1", expect);
  assert_string_equal(names[1], want);
  data = test_read_file(taken, &n);
  assert_true(n == 5 && memcmp(data, "other", 5) == 0);
  free(data);
  mine = test_path(f->dir, want);
  ef = event_file_read(mine, 0);
  assert_int_equal(ef->n, 2);
  assert_string_equal(ef->events[0].version, "brain.Event:2");
  assert_true(ef->events[1].status == 3 && ef->events[1].step == 0);
  event_file_free(ef);
  free(mine);
  free(taken);
  free(expect);
}

/* H26: a failed write is reported (H9 code, naming the file), and nothing is
 * appended after the torn record: the next event starts a new file, which
 * again begins with file_version. */
static void test_events__a_write_error_starts_a_new_file(void **state) {
  fixture *f = *state;
  faulty_fs ff;
  char names[4][600];
  ev_file *ef;
  char *path;

  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &f->te->env);
  open_ok(f);
  faulty_fs_match(&ff, "tfevents");
  faulty_fs_short_writes(&ff, 7);
  faulty_fs_fail_errno(&ff, FAULTY_FS_WRITE, 1, ENOSPC, 0); /* the second piece of the step-1 record */
  assert_status(session_run_train(f->s, f->train, &f->st), &f->st, HK_RESOURCE_EXHAUSTED, "tfevents");
  faulty_fs_reset(&ff);
  assert_ok(session_run_train(f->s, f->train, &f->st), &f->st);
  close_ok(f);
  assert_int_equal(faulty_fs_open_handles(&ff), 0);

  assert_int_equal(event_file_list(f->dir, names, 4), 2);
  /* The first file: file_version, step 0, then a torn record (not parsed),
   * and nothing after it. */
  path = test_path(f->dir, names[0]);
  ef = event_file_read(path, 1);
  assert_int_equal(ef->n, 2);
  assert_true(ef->torn);
  event_file_free(ef);
  free(path);
  path = test_path(f->dir, names[1]);
  ef = event_file_read(path, 0);
  assert_int_equal(ef->n, 2);
  assert_string_equal(ef->events[0].version, "brain.Event:2");
  assert_true(ef->events[1].step == 2 && ef->events[1].status == 3);
  event_file_free(ef);
  free(path);
  faulty_fs_destroy(&ff);
}

/* A create failure is returned with the path and H9's code. */
static void test_events__a_failed_create_returns_the_file_system_s_error(void **state) {
  fixture *f = *state;
  faulty_fs ff;

  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &f->te->env);
  faulty_fs_match(&ff, "tfevents");
  faulty_fs_fail_errno(&ff, FAULTY_FS_CREATE_EXCL, 0, EACCES, 1);
  assert_ok(hk_checkpoint_saver_hook_new(&f->hook, &f->o, &f->st), &f->st);
  assert_status(one_hook_session_new(&f->s, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(f->fx), &f->hook,
                                     NULL, &f->st),
                &f->st, HK_PERMISSION_DENIED, "events.out.tfevents.");
  hk_hook_free(f->hook);
  f->hook = NULL;
  assert_int_equal(faulty_fs_open_handles(&ff), 0);
  faulty_fs_destroy(&ff);
}

/* H9: a file system that answers ABORTED or UNAVAILABLE for an event file
 * must not trigger session recovery: the event writer reports UNKNOWN,
 * naming the file, as every other checkpoint file does. */
static void test_events__a_preemption_code_from_the_file_system_becomes_unknown(void **state) {
  fixture *f = *state;
  faulty_fs ff;

  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &f->te->env);
  faulty_fs_match(&ff, "tfevents");
  faulty_fs_fail_code(&ff, FAULTY_FS_CREATE_EXCL, 0, HK_ABORTED, 0);
  assert_ok(hk_checkpoint_saver_hook_new(&f->hook, &f->o, &f->st), &f->st);
  assert_status(one_hook_session_new(&f->s, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(f->fx), &f->hook,
                                     NULL, &f->st),
                &f->st, HK_UNKNOWN, "events.out.tfevents.");
  assert_non_null(strstr(f->st.message, "ABORTED"));
  hk_hook_free(f->hook);
  f->hook = NULL;
  assert_int_equal(faulty_fs_open_handles(&ff), 0);
  faulty_fs_destroy(&ff);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_events__files_are_named_framed_and_hold_checkpoint_events),
      T(test_events__an_event_file_is_created_at_its_first_write),
      T(test_events__a_taken_file_name_gets_a_suffix),
      T(test_events__a_write_error_starts_a_new_file),
      T(test_events__a_failed_create_returns_the_file_system_s_error),
      T(test_events__a_preemption_code_from_the_file_system_becomes_unknown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
