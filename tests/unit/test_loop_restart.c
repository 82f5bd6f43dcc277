/*
 * Tests of a host loop started again on the directory a finished run left:
 * a restart within the same second as the previous run (contract H26's
 * event-file names, H1's rule that a callback's OK is OK). Everything goes
 * through the public headers; event files are decoded by
 * tests/support/event_file.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hooked/hooked.h>

#include "event_file.h"
#include "test_env.h"
#include "tmpdir.h"

typedef struct fx {
  test_env *te;
  char *dir;
  char *ck; /* dir/ck */
  hk_status st;
} fx;

static int setup(void **state) {
  fx *f = calloc(1, sizeof *f);
  assert_non_null(f);
  f->te = test_env_new();
  f->dir = test_tmpdir_new("loop-restart");
  f->ck = test_path(f->dir, "ck");
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fx *f = *state;
  free(f->ck);
  test_tmpdir_free(f->dir);
  int rc = test_env_release(f->te);
  free(f);
  return rc;
}

/* A loop over one array to `last_step`, started, stepped and finished;
 * @return what hk_loop_finish() returned. */
static hk_code run_to(fx *f, float *w, int64_t last_step) {
  static const int64_t dims[1] = {4};
  hk_loop_options o = HK_LOOP_OPTIONS_INIT;
  hk_loop *l = NULL;
  hk_code rc;
  o.env = &f->te->env;
  o.checkpoint_dir = f->ck;
  o.save_steps = 2;
  o.last_step = last_step;
  o.handle_signals = 0;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  assert_ok(hk_loop_add_array(l, "w", HK_DTYPE_F32, 1, dims, w, 0, &f->st), &f->st);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  while (!hk_loop_should_stop(l)) {
    assert_ok(hk_loop_step_begin(l, NULL, &f->st), &f->st);
    for (int i = 0; i < 4; i++) w[i] = w[i] * 0.5f + 1.0f;
    assert_ok(hk_loop_step_end(l, &f->st), &f->st);
  }
  rc = hk_loop_finish(l, &f->st);
  hk_loop_free(l);
  return rc;
}

/* The CHECKPOINT events (SessionLog status 3) of an event file, by step. */
static int checkpoint_event_at(const ev_file *ef, int64_t step) {
  for (size_t k = 0; k < ef->n; k++)
    if (ef->events[k].kind == EV_SESSION_LOG && ef->events[k].status == 3 && ef->events[k].step == step) return 1;
  return 0;
}

/* H26, H1: the mock wall clock never moves, so the second run's event file
 * wants the first one's name in the same second; it takes the next free
 * name (".1"), and the failed attempt at the taken name leaves no error
 * behind: both runs finish OK, and each left an event file of its own whose
 * every record reads back. */
static void test_loop_restart__two_runs_in_one_second_both_succeed_with_two_event_files(void **state) {
  fx *f = *state;
  float w[4] = {1, 2, 3, 4};
  char names[4][600];

  assert_int_equal(run_to(f, w, 3), HK_OK);
  /* Resumes at 3; its first event is the final checkpoint's, written by
   * the checkpoint hook's end() at session close. */
  assert_int_equal(run_to(f, w, 4), HK_OK);
  assert_int_equal(f->st.code, HK_OK);
  assert_string_equal(f->st.message, "");
  assert_int_equal(event_file_list(f->ck, names, 4), 2);
  assert_string_not_equal(names[0], names[1]);
  /* Sorted: the plain name first, then the one with ".1" before the end. */
  assert_non_null(strstr(names[1], names[0] + strlen(names[0]) - 4));
  for (int i = 0; i < 2; i++) {
    char *path = test_path(f->ck, names[i]);
    ev_file *ef = event_file_read(path, 0);
    assert_true(ef->n >= 2);
    assert_int_equal(ef->events[0].kind, EV_FILE_VERSION);
    assert_true(i == 0 ? checkpoint_event_at(ef, 3) : checkpoint_event_at(ef, 4));
    event_file_free(ef);
    free(path);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_loop_restart__two_runs_in_one_second_both_succeed_with_two_event_files,
                                      setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
