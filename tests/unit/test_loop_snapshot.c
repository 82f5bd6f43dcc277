/*
 * Copy-before-write checkpoint snapshots on the host loop (contract H42,
 * D3.7): a program that calls hk_loop_updates_begin() before writing its
 * arrays lets the asynchronous hook's writer thread copy them while its next
 * steps run; one that does not keeps the copy at the step boundary. Every
 * checkpoint must hold exactly its step's values, whichever thread copied
 * them: the tests compare each with the program's values at that step,
 * replayed without hooked, and never assert which thread made a copy. Which
 * saves are offered to the loop is made deterministic by a mock clock that
 * makes a save due only once the writer is idle. Run under TSan as well.
 */
#include "session_fixture.h"
#include "tmpdir.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *data_file(const char *dir, int64_t step) {
  char name[64];
  snprintf(name, sizeof name, "model.ckpt-%lld.safetensors", (long long)step);
  return test_path(dir, name);
}

#define NARR 4
static const size_t arr_elems[NARR] = {3, 1024, 100000, 40000};

typedef struct program {
  float *a[NARR];
  uint64_t rng;
  int updates;         /* call hk_loop_updates_begin() */
  int read_only;       /* a step that writes nothing */
  int skip_updates_at; /* a step (0-based) that does not call it; -1: none */
  int steps;
  double checksum;   /* what the read-only phase computed */
  pthread_t trainer; /* every state callback must run here (H6) */
  int callbacks_elsewhere;
} program;

static hk_code rng_save(void *user, void *dst, size_t size, hk_status *st) {
  program *p = user;
  (void)st;
  if (!pthread_equal(pthread_self(), p->trainer)) p->callbacks_elsewhere++;
  memcpy(dst, &p->rng, size);
  return HK_OK;
}

static hk_code rng_restore(void *user, const void *src, size_t size, hk_status *st) {
  program *p = user;
  (void)st;
  memcpy(&p->rng, src, size);
  return HK_OK;
}

static void program_init(program *p, int updates) {
  memset(p, 0, sizeof *p);
  for (int k = 0; k < NARR; k++) {
    p->a[k] = malloc(arr_elems[k] * sizeof(float));
    for (size_t i = 0; i < arr_elems[k]; i++) p->a[k][i] = (float)(i % 97) * 0.25f + (float)k;
  }
  p->rng = 12345;
  p->updates = updates;
  p->skip_updates_at = -1;
  p->trainer = pthread_self();
}

static void program_free(program *p) {
  for (int k = 0; k < NARR; k++) free(p->a[k]);
}

static hk_loop *the_loop; /* the loop program_step_fn runs in */

static hk_code program_step_fn(void *user, int64_t step, hk_status *st) {
  program *p = user;
  (void)step;
  /* read-only phase: every array is read */
  double acc = 0;
  for (int k = 0; k < NARR; k++)
    for (size_t i = 0; i < arr_elems[k]; i += 7) acc += p->a[k][i];
  p->checksum += acc;
  if (p->updates && p->steps != p->skip_updates_at) {
    hk_code rc = hk_loop_updates_begin(the_loop, st);
    if (rc != HK_OK) return rc;
  }
  if (p->read_only) return HK_OK;
  /* update phase: every array is written, and the RNG moves */
  for (int k = 0; k < NARR; k++)
    for (size_t i = 0; i < arr_elems[k]; i++) p->a[k][i] = p->a[k][i] * 0.75f + (float)(p->rng % 13);
  p->rng = p->rng * 6364136223846793005ull + 1442695040888963407ull;
  p->steps++;
  return HK_OK;
}

static void add_program(hk_loop *l, program *p) {
  hk_status st = HK_STATUS_INIT;
  char name[16];
  for (int k = 0; k < NARR; k++) {
    int64_t dims[1] = {(int64_t)arr_elems[k]};
    snprintf(name, sizeof name, "a%d", k);
    assert_ok(hk_loop_add_array(l, name, HK_DTYPE_F32, 1, dims, p->a[k], 0, &st), &st);
  }
  assert_ok(hk_loop_add_state(l, "rng", sizeof p->rng, rng_save, rng_restore, p, 0, &st), &st);
}

static void run_program(test_env *te, program *p, const char *dir, int async, int64_t last_step) {
  hk_loop_options o = HK_LOOP_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_loop *l = NULL;

  o.env = &te->env;
  o.checkpoint_dir = dir;
  o.save_steps = 1;
  o.max_to_keep = 0;
  o.async_checkpoint = async;
  o.last_step = last_step;
  o.handle_signals = 0;
  assert_ok(hk_loop_new(&l, &o, &st), &st);
  add_program(l, p);
  assert_ok(hk_loop_start(l, NULL, &st), &st);
  the_loop = l;
  while (!hk_loop_should_stop(l)) assert_ok(hk_loop_step(l, program_step_fn, p, &st), &st);
  assert_ok(hk_loop_finish(l, &st), &st);
  hk_loop_free(l);
  the_loop = NULL;
}

/* Bounds a hung writer (each waiting step sleeps 1 ms): the waits below end
 * when the write is done, however long that takes on a loaded machine. */
#define WAIT_STEPS 100000

/* Step the program until the completion of the save of `step` has been
 * processed ("Checkpoint finished for <step> into"): the writer is idle. */
static void step_until_finished(test_env *te, hk_loop *l, program *p, int64_t step) {
  hk_status st = HK_STATUS_INIT;
  char line[64];
  snprintf(line, sizeof line, "Checkpoint finished for %lld into", (long long)step);
  for (int i = 0; i < WAIT_STEPS && test_log_count(&te->log, HK_LOG_INFO, line) == 0; i++) {
    assert_ok(hk_loop_step(l, program_step_fn, p, &st), &st);
    test_sleep_real_ms(1);
  }
  assert_logged(te, HK_LOG_INFO, line);
}

/* Every checkpoint saved[0..n) (ascending steps) of dir holds exactly the
 * arrays and the RNG state the program had after that many steps, replayed
 * here without hooked. */
static void check_checkpoints_hold_their_steps(test_env *te, const char *dir, const int64_t *saved, int n) {
  hk_status st = HK_STATUS_INIT;
  program ref;
  int64_t done = 0;
  char name[16];
  program_init(&ref, 0);
  for (int i = 0; i < n; i++) {
    hk_checkpoint_reader *r = NULL;
    char *path = data_file(dir, saved[i]);
    size_t index;
    uint64_t rng = 0;
    while (done < saved[i]) assert_ok(program_step_fn(&ref, done++, &st), &st);
    assert_ok(hk_checkpoint_reader_open(&r, &te->env, path, &st), &st);
    assert_true(hk_checkpoint_reader_step(r) == saved[i]);
    for (int k = 0; k < NARR; k++) {
      float *got = malloc(arr_elems[k] * sizeof(float));
      snprintf(name, sizeof name, "a%d", k);
      assert_ok(hk_checkpoint_reader_find(r, name, &index, &st), &st);
      assert_ok(hk_checkpoint_reader_read(r, index, got, arr_elems[k] * sizeof(float), &st), &st);
      if (memcmp(got, ref.a[k], arr_elems[k] * sizeof(float)) != 0)
        fprintf(stderr, "checkpoint %lld: %s differs from the program's after that step\n", (long long)saved[i], name);
      assert_memory_equal(got, ref.a[k], arr_elems[k] * sizeof(float));
      free(got);
    }
    assert_ok(hk_checkpoint_reader_find(r, "rng", &index, &st), &st);
    assert_ok(hk_checkpoint_reader_read(r, index, &rng, sizeof rng, &st), &st);
    assert_true(rng == ref.rng);
    hk_checkpoint_reader_free(r);
    free(path);
  }
  program_free(&ref);
}

#define ROUNDS 4

/* H42: the program reads every array, calls hk_loop_updates_begin(), then writes
 * every array. Each save after the first starts with the writer idle (the
 * mock clock makes it due once the save before has completed), so its
 * snapshot is attached and copied while the next steps write every array:
 * each checkpoint holds exactly its step's arrays and RNG state, every
 * array copied once and before the write that follows, whichever thread
 * copied it; the state's callback ran on the training thread only. */
static void test_loop_snapshot__with_updates_begin_checkpoints_hold_their_steps(void **state) {
  test_env *te = test_env_new();
  char *tmp = test_tmpdir_new("snap-loop");
  char *dir = test_path(tmp, "async");
  hk_loop_options o = HK_LOOP_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_loop *l = NULL;
  program p, ref;
  int64_t saved[ROUNDS + 2];
  int n = 0;
  char line[64];

  (void)state;
  program_init(&p, 1);
  o.env = &te->env;
  o.checkpoint_dir = dir;
  o.save_secs = 10;
  o.max_to_keep = 0;
  o.async_checkpoint = 1;
  o.handle_signals = 0;
  assert_ok(hk_loop_new(&l, &o, &st), &st);
  add_program(l, &p);
  assert_ok(hk_loop_start(l, NULL, &st), &st); /* saves step 0, copied at the boundary */
  the_loop = l;
  saved[n++] = 0;
  for (int r = 0; r < ROUNDS; r++) {
    step_until_finished(te, l, &p, saved[n - 1]);
    test_clock_advance(&te->clock, 10);
    assert_ok(hk_loop_step(l, program_step_fn, &p, &st), &st); /* saves, attached */
    saved[n++] = p.steps;
    snprintf(line, sizeof line, "Saving checkpoints for %lld into", (long long)p.steps);
    assert_logged(te, HK_LOG_DEBUG, line); /* the asynchronous saver's INFO line is "Checkpoint finished" */
  }
  step_until_finished(te, l, &p, saved[n - 1]); /* those steps wrote every array during the copy */
  assert_ok(hk_loop_finish(l, &st), &st);       /* the final step, saved synchronously */
  hk_loop_free(l);
  the_loop = NULL;
  saved[n++] = p.steps;

  check_checkpoints_hold_their_steps(te, dir, saved, n);
  assert_int_equal(test_log_count(&te->log, HK_LOG_DEBUG, "copied in the background"), ROUNDS);
  assert_int_equal(test_log_count(&te->log, HK_LOG_WARNING, "hk_loop_updates_begin"), 0);
  assert_int_equal(p.callbacks_elsewhere, 0);
  program_init(&ref, 0);
  for (int64_t k = 0; k < p.steps; k++) assert_ok(program_step_fn(&ref, k, &st), &st);
  assert_true(ref.checksum == p.checksum);
  program_free(&ref);
  program_free(&p);
  free(dir);
  test_tmpdir_free(tmp);
  assert_int_equal(test_env_release(te), 0);
}

/* H42: without hk_loop_updates_begin() the loop keeps the copy at the step
 * boundary: nothing is copied in the background. */
static void test_loop_snapshot__without_updates_begin_the_copy_is_at_the_boundary(void **state) {
  test_env *te = test_env_new();
  char *tmp = test_tmpdir_new("snap-loop0");
  char *dir = test_path(tmp, "ck");
  program p;

  (void)state;
  program_init(&p, 0);
  run_program(te, &p, dir, 1, 6);
  assert_int_equal(test_log_count(&te->log, -1, "copied in the background"), 0);
  assert_logged(te, HK_LOG_DEBUG, "unless the program calls hk_loop_updates_begin()");
  program_free(&p);
  free(dir);
  test_tmpdir_free(tmp);
  assert_int_equal(test_env_release(te), 0);
}

/* One step of the program's, bracketed by hand; `writes` 0: it only reads. */
static void manual_step(hk_loop *l, program *p, int with_updates, int writes) {
  hk_status st = HK_STATUS_INIT;
  int saved = p->updates;
  assert_ok(hk_loop_step_begin(l, NULL, &st), &st);
  p->updates = with_updates;
  p->read_only = !writes;
  assert_ok(program_step_fn(p, 0, &st), &st);
  p->updates = saved;
  p->read_only = 0;
  assert_ok(hk_loop_step_end(l, &st), &st);
}

/* H42: a step that ends without the call after one that made it: a WARNING,
 * once (that checkpoint may hold values of the later step), the copy is
 * completed then, and the loop goes back to copying at the boundary. The
 * mock clock decides which step saves (save_secs), and the step that saves
 * starts with the writer idle, so its snapshot is attached. */
static void test_loop_snapshot__a_step_without_updates_begin_after_one_with_warns(void **state) {
  test_env *te = test_env_new();
  char *tmp = test_tmpdir_new("snap-loop1");
  char *dir = test_path(tmp, "ck");
  hk_loop_options o = HK_LOOP_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_loop *l = NULL;
  program p;
  int i;

  (void)state;
  program_init(&p, 1);
  o.env = &te->env;
  o.checkpoint_dir = dir;
  o.save_secs = 10;
  o.async_checkpoint = 1;
  o.handle_signals = 0;
  assert_ok(hk_loop_new(&l, &o, &st), &st);
  add_program(l, &p);
  assert_ok(hk_loop_start(l, NULL, &st), &st); /* saves step 0 */
  the_loop = l;
  for (i = 0; i < WAIT_STEPS && test_log_count(&te->log, HK_LOG_INFO, "Checkpoint finished for 0 ") == 0; i++) {
    manual_step(l, &p, 1, 1);
    test_sleep_real_ms(1);
  }
  assert_logged(te, HK_LOG_INFO, "Checkpoint finished for 0 ");
  test_clock_advance(&te->clock, 10);
  manual_step(l, &p, 1, 1); /* saves, attached: this step called it */
  assert_int_equal(test_log_count(&te->log, HK_LOG_WARNING, "hk_loop_updates_begin() was not called"), 0);
  /* Without it. This step writes nothing: a program that wrote here would
   * race with the writer thread's copy, which is the misuse the WARNING
   * reports (and TSan would too). */
  manual_step(l, &p, 0, 0);
  assert_int_equal(test_log_count(&te->log, HK_LOG_WARNING, "hk_loop_updates_begin() was not called"), 1);
  test_clock_advance(&te->clock, 10);
  manual_step(l, &p, 0, 1); /* saves, copied at the boundary */
  manual_step(l, &p, 0, 1);
  assert_int_equal(test_log_count(&te->log, HK_LOG_WARNING, "hk_loop_updates_begin() was not called"), 1);
  assert_ok(hk_loop_finish(l, &st), &st);
  hk_loop_free(l);
  the_loop = NULL;
  assert_int_equal(p.callbacks_elsewhere, 0);
  program_free(&p);
  free(dir);
  test_tmpdir_free(tmp);
  assert_int_equal(test_env_release(te), 0);
}

/* H42: misuse is refused without failing the loop; a second call does nothing. */
static void test_loop_snapshot__updates_begin_misuse_is_refused(void **state) {
  test_env *te = test_env_new();
  hk_loop_options o = HK_LOOP_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_loop *l = NULL;
  float w[4] = {1, 2, 3, 4};
  int64_t dims[1] = {4};

  (void)state;
  o.env = &te->env;
  o.handle_signals = 0;
  assert_status(hk_loop_updates_begin(NULL, &st), &st, HK_INVALID_ARGUMENT, "loop");
  assert_ok(hk_loop_new(&l, &o, &st), &st);
  assert_ok(hk_loop_add_array(l, "w", HK_DTYPE_F32, 1, dims, w, 0, &st), &st);
  assert_status(hk_loop_updates_begin(l, &st), &st, HK_FAILED_PRECONDITION, "not started");
  assert_ok(hk_loop_start(l, NULL, &st), &st);
  assert_status(hk_loop_updates_begin(l, &st), &st, HK_FAILED_PRECONDITION, "no step is open");
  assert_ok(hk_loop_step_begin(l, NULL, &st), &st);
  assert_ok(hk_loop_updates_begin(l, &st), &st);
  assert_ok(hk_loop_updates_begin(l, &st), &st);
  w[0] = 5;
  assert_ok(hk_loop_step_end(l, &st), &st);
  assert_false(hk_loop_should_stop(l));
  assert_ok(hk_loop_finish(l, &st), &st);
  assert_status(hk_loop_updates_begin(l, &st), &st, HK_FAILED_PRECONDITION, "finished");
  hk_loop_free(l);
  assert_int_equal(test_env_release(te), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_loop_snapshot__with_updates_begin_checkpoints_hold_their_steps),
      cmocka_unit_test(test_loop_snapshot__without_updates_begin_the_copy_is_at_the_boundary),
      cmocka_unit_test(test_loop_snapshot__a_step_without_updates_begin_after_one_with_warns),
      cmocka_unit_test(test_loop_snapshot__updates_begin_misuse_is_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
