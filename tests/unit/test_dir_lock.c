/*
 * One trainer per checkpoint directory (contract H58): the POSIX file
 * system's lock (hooked/sys/fs.h, version 3), the checkpoint saver hooks'
 * lock of their directory in host loops, MonitoredTrainingSessions and
 * sessions over the fake executor, a lock left by a SIGKILLed process, and
 * file systems that cannot lock or fail to.
 *
 * Every "nothing was touched" check lists the directory and compares every
 * file's bytes before and after, with the C library (tests/support/tmpdir,
 * never through an hk_fs).
 */
#include "session_fixture.h"
#include "faulty_fs.h"
#include "tmpdir.h"

/* A hook driven without a session: the hook struct (no library symbol)
 * comes from core's internal header, as in test_checkpoint_saver_hook_*. */
#include "../../src/core/core_internal.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define LOCK_NAME "hooked.lock"
#define SNAP_MAX 64

typedef struct fx {
  test_env *te;
  char *tmp;
  char *ck;   /* tmp/ck: the checkpoint directory */
  char *lock; /* tmp/ck/hooked.lock */
  char host[256];
  hk_status st;
} fx;

static int setup(void **state) {
  fx *f = calloc(1, sizeof *f);
  assert_non_null(f);
  f->te = test_env_new();
  f->tmp = test_tmpdir_new("dir-lock");
  f->ck = test_path(f->tmp, "ck");
  f->lock = test_path(f->ck, LOCK_NAME);
  assert_int_equal(gethostname(f->host, sizeof f->host), 0);
  f->host[sizeof f->host - 1] = '\0';
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fx *f = *state;
  free(f->lock);
  free(f->ck);
  test_tmpdir_free(f->tmp);
  return fixture_release(f, NULL, f->te);
}

/* The line a holder of this process writes under the mock wall clock
 * (1.7e9 s: 2023-11-14T22:13:20Z). */
static void own_line(fx *f, char *out, size_t cap) {
  snprintf(out, cap, "pid %ld on host %s since 2023-11-14T22:13:20Z (hooked %s)\n", (long)getpid(), f->host,
           hk_version());
}

static char *lock_content(fx *f) { return test_read_file(f->lock, NULL); }

/* ---- directory snapshots ----------------------------------------------------------- */

typedef struct snap {
  int n;
  char names[SNAP_MAX][256];
  char *data[SNAP_MAX];
  size_t len[SNAP_MAX];
} snap;

static int by_name(const void *a, const void *b) { return strcmp(a, b); }

/* Every entry of dir, sorted, with the bytes of each file. */
static void snap_take(const char *dir, snap *s) {
  DIR *d = opendir(dir);
  struct dirent *e;
  memset(s, 0, sizeof *s);
  assert_non_null(d);
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    assert_true(s->n < SNAP_MAX);
    snprintf(s->names[s->n++], sizeof s->names[0], "%s", e->d_name);
  }
  closedir(d);
  qsort(s->names, (size_t)s->n, sizeof s->names[0], by_name);
  for (int i = 0; i < s->n; i++) {
    char *p = test_path(dir, s->names[i]);
    s->data[i] = test_read_file(p, &s->len[i]);
    assert_non_null(s->data[i]);
    free(p);
  }
}

static void snap_free(snap *s) {
  for (int i = 0; i < s->n; i++) free(s->data[i]);
}

static void assert_snap_equal(const snap *a, const snap *b) {
  assert_int_equal(a->n, b->n);
  for (int i = 0; i < a->n; i++) {
    assert_string_equal(a->names[i], b->names[i]);
    assert_int_equal(a->len[i], b->len[i]);
    assert_memory_equal(a->data[i], b->data[i], a->len[i]);
  }
}

/* Every checkpoint data file of dir verifies; @return how many there are. */
static int verify_all(const char *dir) {
  snap s;
  int n = 0;
  snap_take(dir, &s);
  for (int i = 0; i < s.n; i++) {
    size_t k = strlen(s.names[i]);
    hk_checkpoint_reader *r = NULL;
    hk_status st = HK_STATUS_INIT;
    char *p;
    if (k < 12 || strcmp(s.names[i] + k - 12, ".safetensors") != 0) continue;
    p = test_path(dir, s.names[i]);
    assert_ok(hk_checkpoint_reader_open(&r, NULL, p, &st), &st);
    assert_ok(hk_checkpoint_reader_verify(r, &st), &st);
    hk_checkpoint_reader_free(r);
    free(p);
    n++;
  }
  snap_free(&s);
  return n;
}

/* ---- host loops -------------------------------------------------------------------- */

static hk_loop_options loop_options(fx *f, const hk_env *env) {
  hk_loop_options o = HK_LOOP_OPTIONS_INIT;
  o.env = env;
  o.checkpoint_dir = f->ck;
  o.save_steps = 2;
  o.handle_signals = 0;
  return o;
}

/* A loop over `w` (4 floats), started; @return hk_loop_start()'s code (the
 * loop is freed when it fails). */
static hk_code loop_start(const hk_loop_options *o, float *w, hk_loop **out, hk_status *st) {
  static const int64_t dims[1] = {4};
  hk_code rc;
  *out = NULL;
  rc = hk_loop_new(out, o, st);
  if (rc != HK_OK) return rc;
  rc = hk_loop_add_array(*out, "w", HK_DTYPE_F32, 1, dims, w, 0, st);
  if (rc == HK_OK) rc = hk_loop_start(*out, NULL, st);
  if (rc != HK_OK) {
    hk_loop_free(*out);
    *out = NULL;
  }
  return rc;
}

static hk_code loop_steps(hk_loop *l, float *w, int n, hk_status *st) {
  for (int k = 0; k < n; k++) {
    hk_code rc = hk_loop_step_begin(l, NULL, st);
    if (rc != HK_OK) return rc;
    for (int i = 0; i < 4; i++) w[i] = w[i] * 0.5f + (float)(i + 1);
    rc = hk_loop_step_end(l, st);
    if (rc != HK_OK) return rc;
  }
  return HK_OK;
}

/* The message of a start refused because this process holds the directory. */
static void assert_refused_by_us(fx *f, hk_code rc, const hk_status *st) {
  char want[1024];
  assert_int_equal(rc, HK_FAILED_PRECONDITION);
  snprintf(want, sizeof want, "Checkpoint directory %s is in use by another trainer (pid %ld on host %s since ", f->ck,
           (long)getpid(), f->host);
  assert_non_null(strstr(st->message, want));
  snprintf(want, sizeof want, "; lock file %s). Two trainers writing one directory delete each other's checkpoints",
           f->lock);
  assert_non_null(strstr(st->message, want));
}

/* H58: while a loop trains into a directory, a second loop (another
 * session of this process; another process is the examples' check) fails
 * at start with FAILED_PRECONDITION naming the directory, the holder (pid,
 * host) and the lock file, and touches nothing there: no file created,
 * changed, renamed or deleted, no event file of its own. The first loop
 * then trains on, saves, rotates (max_to_keep: its stale-temporary cleanup
 * and retention leave the lock alone) and finishes; its checkpoints verify
 * and the lock file is gone. Sync and async checkpoints. */
static void second_loop_refused(fx *f, int async) {
  float w1[4] = {1, 2, 3, 4}, w2[4] = {9, 9, 9, 9};
  hk_loop_options o = loop_options(f, &f->te->env);
  hk_loop *first = NULL, *second = NULL;
  char line[512];
  char *content;
  snap before, after;

  o.async_checkpoint = async;
  o.max_to_keep = 2;
  assert_ok(loop_start(&o, w1, &first, &f->st), &f->st);
  own_line(f, line, sizeof line);
  content = lock_content(f);
  assert_non_null(content);
  assert_string_equal(content, line);
  free(content);
  assert_ok(loop_steps(first, w1, 3, &f->st), &f->st);
  assert_ok(hk_loop_summary_scalar(first, f->ck, "loss", 0.5, &f->st), &f->st); /* the event file exists */
  if (async) assert_ok(hk_loop_save(NULL, first, NULL, &f->st), &f->st);        /* no write in flight below */

  snap_take(f->ck, &before);
  assert_true(before.n >= 4); /* state file, checkpoints, event file, lock file */
  hk_code rc = loop_start(&o, w2, &second, &f->st);
  assert_null(second);
  assert_refused_by_us(f, rc, &f->st);
  snap_take(f->ck, &after);
  assert_snap_equal(&before, &after);
  snap_free(&before);
  snap_free(&after);
  assert_memory_equal(w2, ((float[4]){9, 9, 9, 9}), sizeof w2); /* nothing was restored into it either */

  /* The first run goes on, rotating its checkpoints; the lock stays its own. */
  assert_ok(loop_steps(first, w1, 6, &f->st), &f->st);
  content = lock_content(f);
  assert_non_null(content);
  assert_string_equal(content, line);
  free(content);
  assert_ok(hk_loop_finish(first, &f->st), &f->st);
  hk_loop_free(first);
  assert_false(test_path_exists(f->lock));
  assert_true(verify_all(f->ck) >= 2);
  assert_int_equal(test_dir_count_matching(f->ck, "tfevents"), 1);
}

static void test_dir_lock__second_loop_on_a_held_directory_fails_at_start_and_touches_nothing(void **state) {
  second_loop_refused(*state, 0);
}

static void test_dir_lock__second_async_loop_on_a_held_directory_fails_at_start_and_touches_nothing(void **state) {
  second_loop_refused(*state, 1);
}

/* H58: a trailing slash names the same directory, and the host loop's
 * StepCounter shares it: the refusal is the same, and the refused loop's
 * event file is not created (StepCounter's begin() ran before the
 * checkpoint hook's, and created nothing). After the first loop's clean
 * finish the directory is free: the next loop starts and resumes. */
static void test_dir_lock__directory_is_free_again_after_a_clean_finish(void **state) {
  fx *f = *state;
  float w[4] = {1, 2, 3, 4};
  hk_loop_options o = loop_options(f, &f->te->env);
  hk_loop *first = NULL, *second = NULL;
  char *slashed = malloc(strlen(f->ck) + 2);
  int64_t step = -1;

  assert_non_null(slashed);
  sprintf(slashed, "%s/", f->ck);
  assert_ok(loop_start(&o, w, &first, &f->st), &f->st);
  assert_ok(loop_steps(first, w, 2, &f->st), &f->st);
  hk_loop_options o2 = o;
  o2.checkpoint_dir = slashed;
  assert_int_equal(loop_start(&o2, w, &second, &f->st), HK_FAILED_PRECONDITION);
  assert_non_null(strstr(f->st.message, "is in use by another trainer"));
  assert_ok(hk_loop_finish(first, &f->st), &f->st);
  hk_loop_free(first);
  assert_false(test_path_exists(f->lock));

  assert_ok(hk_loop_new(&second, &o2, &f->st), &f->st);
  assert_ok(hk_loop_add_array(second, "w", HK_DTYPE_F32, 1, ((int64_t[1]){4}), w, 0, &f->st), &f->st);
  assert_ok(hk_loop_start(second, &step, &f->st), &f->st);
  assert_int_equal(step, 2);
  assert_true(test_path_exists(f->lock));
  assert_ok(hk_loop_finish(second, &f->st), &f->st);
  hk_loop_free(second);
  assert_false(test_path_exists(f->lock));
  free(slashed);
}

/* ---- a lock left by a killed process ----------------------------------------------- */

/* The child: train two steps into dir (checkpoints 0 and 2), say so on
 * `ready`, and wait to be killed — or for the end of `hold` (the test
 * process ended without killing it: a failed assertion must not leave it
 * behind). Never returns; no cmocka here. */
static void child_holds_the_directory(const char *dir, int ready, int hold) {
  static const int64_t dims[1] = {4};
  float w[4] = {1, 2, 3, 4};
  hk_loop_options o = HK_LOOP_OPTIONS_INIT;
  hk_env quiet = HK_ENV_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_loop *l = NULL;
  quiet.log_level = HK_LOG_ERROR;
  o.env = &quiet;
  o.checkpoint_dir = dir;
  o.save_steps = 2;
  o.handle_signals = 0;
  if (hk_loop_new(&l, &o, &st) != HK_OK || hk_loop_add_array(l, "w", HK_DTYPE_F32, 1, dims, w, 0, &st) != HK_OK ||
      hk_loop_start(l, NULL, &st) != HK_OK || loop_steps(l, w, 2, &st) != HK_OK)
    _exit(1);
  if (write(ready, "r", 1) != 1) _exit(1);
  for (;;) {
    char c;
    ssize_t n = read(hold, &c, 1);
    if (n == 0 || (n < 0 && errno != EINTR)) _exit(0);
  }
}

/* H58: a trainer SIGKILLed while it holds the directory leaves its lock
 * file behind, and no lock: while it ran, a start here was refused naming
 * its pid; once it is dead the next start takes the directory over (its
 * own line replaces the stale one), resumes from the dead trainer's last
 * checkpoint and finishes, and the lock file goes. */
static void test_dir_lock__lock_of_a_sigkilled_trainer_does_not_block_the_restart(void **state) {
  fx *f = *state;
  float w[4] = {0, 0, 0, 0};
  hk_loop_options o = loop_options(f, &f->te->env);
  hk_loop *l = NULL;
  char want[512], line[512], *content;
  int ready[2], hold[2], status = 0;
  int64_t step = -1;
  pid_t child;
  char r;

  assert_int_equal(pipe(ready), 0);
  assert_int_equal(pipe(hold), 0);
  child = fork();
  assert_true(child >= 0);
  if (child == 0) {
    close(ready[0]);
    close(hold[1]);
    child_holds_the_directory(f->ck, ready[1], hold[0]);
  }
  close(ready[1]);
  close(hold[0]);
  assert_int_equal(read(ready[0], &r, 1), 1); /* the child holds the directory, checkpoint 2 is written */
  close(ready[0]);

  assert_int_equal(loop_start(&o, w, &l, &f->st), HK_FAILED_PRECONDITION);
  snprintf(want, sizeof want, "Checkpoint directory %s is in use by another trainer (pid %ld on host %s since ", f->ck,
           (long)child, f->host);
  assert_non_null(strstr(f->st.message, want));

  assert_int_equal(kill(child, SIGKILL), 0);
  assert_int_equal(waitpid(child, &status, 0), child);
  close(hold[1]);
  assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  content = lock_content(f); /* left behind, naming the dead trainer */
  snprintf(want, sizeof want, "pid %ld on host %s since ", (long)child, f->host);
  assert_true(content != NULL && strncmp(content, want, strlen(want)) == 0);
  free(content);

  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  assert_ok(hk_loop_add_array(l, "w", HK_DTYPE_F32, 1, ((int64_t[1]){4}), w, 0, &f->st), &f->st);
  assert_ok(hk_loop_start(l, &step, &f->st), &f->st);
  assert_int_equal(step, 2);
  own_line(f, line, sizeof line);
  content = lock_content(f);
  assert_non_null(content);
  assert_string_equal(content, line);
  free(content);
  assert_ok(loop_steps(l, w, 2, &f->st), &f->st);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  assert_false(test_path_exists(f->lock));
  assert_int_equal(verify_all(f->ck), 3); /* 0 and 2 of the dead trainer, 4 of ours */
}

/* ---- the POSIX lock slot ----------------------------------------------------------- */

/* hooked/sys/fs.h: a second lock of the same file (another open, here in
 * this process) is refused with FAILED_PRECONDITION quoting the holder's
 * line, and replaces nothing; unlock removes the file and frees the lock for
 * the next holder; an unlock removes only the file it holds (one deleted by
 * hand and made again by another holder is that holder's). */
static void test_dir_lock__posix_lock_refuses_a_second_holder_and_unlock_frees_it(void **state) {
  fx *f = *state;
  const hk_fs_vtable *posix = hk_fs_posix();
  hk_fs_lock *a = NULL, *b = (hk_fs_lock *)f, *c = NULL;
  char *content;

  assert_true(posix->version >= 3 && posix->lock != NULL && posix->unlock != NULL);
  assert_int_equal(mkdir(f->ck, 0755), 0);
  assert_ok(posix->lock(NULL, f->lock, "holder A\n", &a, &f->st), &f->st);
  assert_status(posix->lock(NULL, f->lock, "holder B\n", &b, &f->st), &f->st, HK_FAILED_PRECONDITION, "holder A");
  assert_null(b);
  content = lock_content(f);
  assert_string_equal(content, "holder A\n");
  free(content);
  assert_ok(posix->unlock(NULL, a, &f->st), &f->st);
  assert_false(test_path_exists(f->lock));

  assert_ok(posix->lock(NULL, f->lock, "holder B\n", &b, &f->st), &f->st);
  assert_int_equal(unlink(f->lock), 0); /* by hand, while B holds it */
  assert_ok(posix->lock(NULL, f->lock, "holder C\n", &c, &f->st), &f->st);
  assert_ok(posix->unlock(NULL, b, &f->st), &f->st);
  content = lock_content(f); /* C's file is still there */
  assert_string_equal(content, "holder C\n");
  free(content);
  assert_ok(posix->unlock(NULL, c, &f->st), &f->st);
  assert_false(test_path_exists(f->lock));
}

/* ---- file systems that cannot lock, or fail to --------------------------------------- */

/* H58, H9: a lock that fails (here EACCES) fails the start with the file
 * system's error naming the lock file; nothing is left in the directory and
 * no lock is held. */
static void test_dir_lock__failing_lock_fails_the_start_with_its_error(void **state) {
  fx *f = *state;
  float w[4] = {1, 2, 3, 4};
  faulty_fs ff;
  hk_loop *l = NULL;
  hk_loop_options o;

  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &f->te->env);
  o = loop_options(f, &f->te->env);
  faulty_fs_fail_errno(&ff, FAULTY_FS_LOCK, 0, EACCES, 0);
  assert_status(loop_start(&o, w, &l, &f->st), &f->st, HK_PERMISSION_DENIED, f->lock);
  assert_int_equal(faulty_fs_injected(&ff), 1);
  assert_int_equal(faulty_fs_open_locks(&ff), 0);
  assert_int_equal(faulty_fs_open_handles(&ff), 0);
  assert_int_equal(test_dir_count(f->ck), 0);

  /* The next start, the file system healed, locks and unlocks once. */
  faulty_fs_reset(&ff);
  assert_ok(loop_start(&o, w, &l, &f->st), &f->st);
  assert_int_equal(faulty_fs_open_locks(&ff), 1);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  assert_int_equal(faulty_fs_calls(&ff, FAULTY_FS_LOCK), 1);
  assert_int_equal(faulty_fs_calls(&ff, FAULTY_FS_UNLOCK), 1);
  assert_int_equal(faulty_fs_open_locks(&ff), 0);
  faulty_fs_destroy(&ff);
}

/* H58: an error releasing the lock is logged as a WARNING naming the lock
 * file and fails nothing (the lock goes with the release anyway). */
static void test_dir_lock__failing_unlock_is_a_warning(void **state) {
  fx *f = *state;
  float w[4] = {1, 2, 3, 4};
  faulty_fs ff;
  hk_loop *l = NULL;
  hk_loop_options o;

  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &f->te->env);
  o = loop_options(f, &f->te->env);
  assert_ok(loop_start(&o, w, &l, &f->st), &f->st);
  faulty_fs_fail_errno(&ff, FAULTY_FS_UNLOCK, 0, EIO, 0);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  assert_int_equal(faulty_fs_injected(&ff), 1);
  assert_int_equal(faulty_fs_open_locks(&ff), 0);
  assert_logged(f->te, HK_LOG_WARNING, f->lock);
  faulty_fs_destroy(&ff);
}

/* H10, H58: a version-2 file system has no lock slot, and a slot past a
 * table's version is never read (this one is there, and unused); a
 * version-3 one whose lock answers UNIMPLEMENTED cannot lock either. The
 * loop then trains unlocked, saying so at DEBUG, and no lock file appears. */
static void test_dir_lock__file_system_without_a_lock_trains_unlocked(void **state) {
  fx *f = *state;
  float w[4] = {1, 2, 3, 4};
  hk_fs_vtable v2 = *faulty_fs_vtable();
  faulty_fs ff;
  hk_loop *l = NULL;
  hk_loop_options o;

  v2.version = 2;
  faulty_fs_init(&ff);
  for (int round = 0; round < 2; round++) {
    faulty_fs_reset(&ff);
    f->te->env.fs = round == 0 ? &v2 : faulty_fs_vtable();
    f->te->env.fs_user = &ff;
    faulty_fs_no_lock(&ff, round == 1);
    test_log_clear(&f->te->log);
    o = loop_options(f, &f->te->env);
    assert_ok(loop_start(&o, w, &l, &f->st), &f->st);
    assert_false(test_path_exists(f->lock));
    assert_ok(loop_steps(l, w, 2, &f->st), &f->st);
    assert_ok(hk_loop_finish(l, &f->st), &f->st);
    hk_loop_free(l);
    assert_int_equal(faulty_fs_calls(&ff, FAULTY_FS_LOCK), 0);
    assert_int_equal(faulty_fs_open_locks(&ff), 0);
    assert_logged(f->te, HK_LOG_DEBUG, "is not locked against other trainers");
  }
  faulty_fs_destroy(&ff);
}

/* H10, H58: a version-3 table that sets one of lock and unlock is refused
 * at creation, naming the pair. */
static void test_dir_lock__half_a_lock_pair_is_refused(void **state) {
  fx *f = *state;
  hk_fs_vtable half = *faulty_fs_vtable();
  hk_loop *l = (hk_loop *)f;
  hk_loop_options o;
  faulty_fs ff;

  faulty_fs_init(&ff);
  half.unlock = NULL;
  f->te->env.fs = &half;
  f->te->env.fs_user = &ff;
  o = loop_options(f, &f->te->env);
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "lock and unlock");
  assert_null(l);
  faulty_fs_destroy(&ff);
}

/* ---- sessions and hooks ------------------------------------------------------------ */

static hk_checkpoint_saver_options hook_options(fx *f, const char *dir, const char *basename) {
  hk_checkpoint_saver_options o;
  hk_checkpoint_saver_options_init(&o, HK_CHECKPOINT_SAVER_OPTIONS_VERSION);
  o.env = &f->te->env;
  o.checkpoint_dir = dir;
  o.checkpoint_basename = basename;
  o.save_steps = 1;
  o.save_graph_def = 0;
  return o;
}

/* H58, H26: two checkpoint hooks of one session writing one directory
 * ("ck" and "ck/", two basenames) share the session's lock of it: the
 * session starts, both save, and the lock goes at close. */
static void test_dir_lock__two_hooks_of_one_session_share_the_directory(void **state) {
  fx *f = *state;
  char *slashed = malloc(strlen(f->ck) + 2);
  hk_handle gs, train;
  fake_executor *fx1 = fake_training_executor(f->te, NULL, &gs, &train);
  hk_hook *hooks[2] = {NULL, NULL};
  hk_checkpoint_saver_options o;
  hk_session_options so;
  hk_session *s = NULL;

  assert_non_null(slashed);
  sprintf(slashed, "%s/", f->ck);
  o = hook_options(f, f->ck, "a.ckpt");
  assert_ok(hk_checkpoint_saver_hook_new(&hooks[0], &o, &f->st), &f->st);
  o = hook_options(f, slashed, "b.ckpt");
  assert_ok(hk_checkpoint_saver_hook_new(&hooks[1], &o, &f->st), &f->st);
  test_session_options(&so, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(fx1), hooks, 2);
  assert_ok(hk_session_new(&s, &so, &f->st), &f->st);
  assert_true(test_path_exists(f->lock));
  assert_ok(session_run_train(s, train, &f->st), &f->st);
  assert_ok(hk_session_close(s, HK_OK, &f->st), &f->st);
  assert_false(test_path_exists(f->lock));
  hk_session_free(s);
  assert_int_equal(test_dir_count_matching(f->ck, "a.ckpt-1.safetensors"), 1);
  assert_int_equal(test_dir_count_matching(f->ck, "b.ckpt-1.safetensors"), 1);
  hk_hook_free(hooks[0]);
  hk_hook_free(hooks[1]);
  fake_executor_free(fx1);
  free(slashed);
}

/* The session of one checkpoint hook over fx1 (MS). */
static hk_code hook_session(fx *f, fake_executor *fx1, hk_hook **hook, hk_session **s) {
  return one_hook_session_new(s, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(fx1), hook, NULL, &f->st);
}

static int preempted;
static hk_handle preempt_target;

static hk_code preempt_once(void *user, fake_executor *fx1, const hk_run_args *args, hk_status *st) {
  (void)user;
  (void)fx1;
  if (args->ntargets == 0 || args->targets[0] != preempt_target || preempted) return HK_OK;
  preempted = 1;
  return hk_status_set(st, HK_ABORTED, "preempted");
}

/* H58, D2: a MonitoredSession's re-creation keeps the lock: it is neither
 * taken again nor released (one lock call in all, the holder's line
 * unchanged, a second session still refused), and it goes at close. */
static void test_dir_lock__recreation_keeps_the_lock(void **state) {
  fx *f = *state;
  hk_handle gs, train;
  fake_executor *fx1 = fake_training_executor(f->te, NULL, &gs, &train);
  hk_handle gs2, train2;
  fake_executor *fx2 = fake_training_executor(f->te, NULL, &gs2, &train2);
  hk_checkpoint_saver_options o = hook_options(f, f->ck, NULL);
  hk_hook *hook = NULL, *other = NULL;
  hk_session *s = NULL, *s2 = NULL;
  char line[512], *content;
  faulty_fs ff;

  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &f->te->env);
  assert_ok(hk_checkpoint_saver_hook_new(&hook, &o, &f->st), &f->st);
  assert_ok(hk_checkpoint_saver_hook_new(&other, &o, &f->st), &f->st);
  assert_ok(hook_session(f, fx1, &hook, &s), &f->st);
  preempted = 0;
  preempt_target = train;
  fake_executor_on_run(fx1, preempt_once, NULL);
  assert_ok(session_run_train(s, train, &f->st), &f->st); /* preempted, re-created, run again */
  fake_executor_on_run(fx1, NULL, NULL);
  assert_int_equal(fake_executor_sessions_opened(fx1), 2);
  assert_int_equal(faulty_fs_calls(&ff, FAULTY_FS_LOCK), 1);
  assert_int_equal(faulty_fs_calls(&ff, FAULTY_FS_UNLOCK), 0);
  own_line(f, line, sizeof line);
  content = lock_content(f);
  assert_non_null(content);
  assert_string_equal(content, line);
  free(content);
  assert_int_equal(hook_session(f, fx2, &other, &s2), HK_FAILED_PRECONDITION);
  assert_null(s2);
  assert_ok(hk_session_close(s, HK_OK, &f->st), &f->st);
  assert_int_equal(faulty_fs_calls(&ff, FAULTY_FS_UNLOCK), 1);
  assert_false(test_path_exists(f->lock));
  hk_session_free(s);
  hk_hook_free(hook);
  hk_hook_free(other);
  fake_executor_free(fx1);
  fake_executor_free(fx2);
  assert_int_equal(faulty_fs_open_locks(&ff), 0);
  faulty_fs_destroy(&ff);
}

/* H58: every way a session lets go releases the lock — freed without
 * close, and a construction that fails after the checkpoint hook's begin()
 * (a later hook's begin() fails): the directory is free at once. */
static void test_dir_lock__session_freed_without_close_or_failed_releases_the_lock(void **state) {
  fx *f = *state;
  hk_handle gs, train;
  fake_executor *fx1 = fake_training_executor(f->te, NULL, &gs, &train);
  hk_checkpoint_saver_options o = hook_options(f, f->ck, NULL);
  spy_hook *spy = spy_hook_new("after", NULL, &f->te->env);
  hk_hook *hooks[2] = {NULL, NULL};
  hk_session_options so;
  hk_session *s = NULL;

  assert_non_null(spy);
  assert_ok(hk_checkpoint_saver_hook_new(&hooks[0], &o, &f->st), &f->st);
  assert_ok(hook_session(f, fx1, &hooks[0], &s), &f->st);
  assert_true(test_path_exists(f->lock));
  hk_session_free(s); /* without close */
  assert_false(test_path_exists(f->lock));

  hooks[1] = spy->hook;
  spy_hook_fail(spy, SPY_BEGIN, 1, 1, HK_INTERNAL, "the later hook's begin failed");
  test_session_options(&so, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(fx1), hooks, 2);
  s = (hk_session *)f;
  assert_status(hk_session_new(&s, &so, &f->st), &f->st, HK_INTERNAL, "the later hook's begin failed");
  assert_null(s);
  assert_false(test_path_exists(f->lock));
  assert_ok(hook_session(f, fx1, &hooks[0], &s), &f->st); /* free again */
  assert_ok(hk_session_close(s, HK_OK, &f->st), &f->st);
  hk_session_free(s);
  hk_hook_free(hooks[0]);
  spy_hook_free(spy);
  fake_executor_free(fx1);
}

/* H58: a checkpoint hook driven without a session (a harness calling its
 * begin(), C100) holds a lock of its own, which refuses a session on the
 * directory, and releases it when it is freed (as at end() or its next
 * begin()). */
static void test_dir_lock__hook_without_a_session_holds_its_own_lock_until_freed(void **state) {
  fx *f = *state;
  hk_handle gs, train;
  fake_executor *fx1 = fake_training_executor(f->te, NULL, &gs, &train);
  hk_handle gs2, train2;
  fake_executor *fx2 = fake_training_executor(f->te, NULL, &gs2, &train2);
  hk_checkpoint_saver_options o = hook_options(f, f->ck, NULL);
  hk_hook *alone = NULL, *hook = NULL;
  hk_session *s = NULL;

  assert_ok(hk_checkpoint_saver_hook_new(&alone, &o, &f->st), &f->st);
  assert_ok(hk_checkpoint_saver_hook_new(&hook, &o, &f->st), &f->st);
  assert_ok(alone->vt->begin(alone->user, fake_executor_executor(fx1), &f->st), &f->st);
  assert_true(test_path_exists(f->lock));
  assert_refused_by_us(f, hook_session(f, fx2, &hook, &s), &f->st);
  hk_hook_free(alone);
  assert_false(test_path_exists(f->lock));
  assert_ok(hook_session(f, fx2, &hook, &s), &f->st);
  assert_ok(hk_session_close(s, HK_OK, &f->st), &f->st);
  hk_session_free(s);
  hk_hook_free(hook);
  fake_executor_free(fx1);
  fake_executor_free(fx2);
}

/* H58, C49: MonitoredTrainingSession gets the lock through its checkpoint
 * hook: a second one on the directory is refused, naming it and us. */
static void test_dir_lock__second_training_session_is_refused(void **state) {
  fx *f = *state;
  hk_handle gs, train;
  fake_executor *fx1 = fake_training_executor(f->te, NULL, &gs, &train);
  hk_handle gs2, train2;
  fake_executor *fx2 = fake_training_executor(f->te, NULL, &gs2, &train2);
  hk_training_session_options o = HK_TRAINING_SESSION_OPTIONS_INIT;
  hk_session *s1 = NULL, *s2 = (hk_session *)f;

  o.env = &f->te->env;
  o.executor = fake_executor_executor(fx1);
  o.checkpoint_dir = f->ck;
  assert_ok(hk_training_session_new(&s1, &o, &f->st), &f->st);
  o.executor = fake_executor_executor(fx2);
  assert_refused_by_us(f, hk_training_session_new(&s2, &o, &f->st), &f->st);
  assert_null(s2);
  assert_ok(hk_session_close(s1, HK_OK, &f->st), &f->st);
  hk_session_free(s1);
  assert_false(test_path_exists(f->lock));
  fake_executor_free(fx1);
  fake_executor_free(fx2);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_dir_lock__second_loop_on_a_held_directory_fails_at_start_and_touches_nothing),
      T(test_dir_lock__second_async_loop_on_a_held_directory_fails_at_start_and_touches_nothing),
      T(test_dir_lock__directory_is_free_again_after_a_clean_finish),
      T(test_dir_lock__lock_of_a_sigkilled_trainer_does_not_block_the_restart),
      T(test_dir_lock__posix_lock_refuses_a_second_holder_and_unlock_frees_it),
      T(test_dir_lock__failing_lock_fails_the_start_with_its_error),
      T(test_dir_lock__failing_unlock_is_a_warning),
      T(test_dir_lock__file_system_without_a_lock_trains_unlocked),
      T(test_dir_lock__half_a_lock_pair_is_refused),
      T(test_dir_lock__two_hooks_of_one_session_share_the_directory),
      T(test_dir_lock__recreation_keeps_the_lock),
      T(test_dir_lock__session_freed_without_close_or_failed_releases_the_lock),
      T(test_dir_lock__hook_without_a_session_holds_its_own_lock_until_freed),
      T(test_dir_lock__second_training_session_is_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
