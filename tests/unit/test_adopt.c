/*
 * test_adopt — after a Saver's next managed save, nothing hooked wrote is
 * left outside retention (contract H60, D6.1, D6.4, C123): checkpoints of
 * the managed form that the state file does not list — a save that crashed
 * between its data file and its state file, a state file that was lost —
 * are adopted and retention handles them; preserved checkpoints and
 * unmanaged ones are never adopted, and the unmanaged saves of the hooks
 * and the loop refuse the managed form. (The crash itself, at every
 * instant, is test_crash's.)
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include <hooked/hooked.h>
#include <hooked/checkpoint.h>
#include <hooked/graph.h>
#include <hooked/loop.h>

#include "test_env.h"
#include "tmpdir.h"
#include "ckpt_fixture.h"
#include "fake_executor.h"
#include "session_fixture.h"

typedef struct fx {
  test_env *te;
  hk_graph *g;
  hk_executor *ex;
  hk_raw_session *rs;
  int64_t gs_value; /* the graph's "step" variable */
  float w[4];
  char *root, *dir, *save_path;
  hk_status st;
} fx;

static int setup(void **state) {
  static const int64_t wd[1] = {4};
  fx *f = calloc(1, sizeof *f);
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_variable_def d = HK_VARIABLE_DEF_INIT;
  hk_handle h;
  assert_non_null(f);
  f->te = test_env_new();
  go.env = &f->te->env;
  assert_ok(hk_graph_new(&f->g, &go, &f->st), &f->st);
  f->ex = hk_graph_executor(f->g);
  d.name = "w";
  d.dtype = HK_DTYPE_F32;
  d.rank = 1;
  d.dims = wd;
  d.external_data = f->w;
  assert_ok(hk_graph_variable(f->g, &h, &d, &f->st), &f->st);
  assert_ok(hk_raw_session_open(&f->rs, f->ex, &f->st), &f->st);
  ckpt_dir_new("adopt", &f->root, &f->dir, &f->save_path);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fx *f = *state;
  hk_raw_session_free(f->rs);
  hk_graph_free(f->g);
  ckpt_dir_free(f->root, f->dir, f->save_path);
  assert_int_equal(test_env_release(f->te), 0);
  free(f);
  return 0;
}

static hk_saver *saver(fx *f, int64_t keep, double hours, int pad) {
  hk_saver_options o = HK_SAVER_OPTIONS_INIT;
  hk_saver *s = NULL;
  o.env = &f->te->env;
  o.executor = f->ex;
  o.max_to_keep = keep;
  o.keep_checkpoint_every_n_hours = hours;
  o.pad_step_number = pad;
  assert_ok(hk_saver_new(&s, &o, &f->st), &f->st);
  return s;
}

static void save(fx *f, hk_saver *s, int64_t step, unsigned flags) {
  f->w[0] = (float)step;
  assert_ok(hk_saver_save(NULL, s, f->rs, f->save_path, step, flags, &f->st), &f->st);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The directory's entries, sorted, joined with ','. malloc'd. */
static char *listing(const char *dir) {
  DIR *d = opendir(dir);
  char *names[64], *out;
  size_t n = 0, len = 1;
  assert_non_null(d);
  for (struct dirent *e = readdir(d); e; e = readdir(d)) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 || strncmp(e->d_name, "events.", 7) == 0) continue;
    assert_true(n < 64);
    names[n] = strdup(e->d_name);
    len += strlen(e->d_name) + 1;
    n++;
  }
  closedir(d);
  qsort(names, n, sizeof names[0], cmp_str);
  out = calloc(1, len);
  for (size_t i = 0; i < n; i++) {
    if (i) strcat(out, ",");
    strcat(out, names[i]);
    free(names[i]);
  }
  return out;
}

static void assert_listing(const char *dir, const char *want) {
  char *got = listing(dir);
  if (strcmp(got, want) != 0) fail_msg("directory %s holds\n  %s\nexpected\n  %s", dir, got, want);
  free(got);
}

/* The state file's names, oldest first, joined with ','. */
static void assert_state(fx *f, const char *want) {
  hk_checkpoint_state *cs = NULL;
  char got[1024] = "";
  assert_ok(hk_checkpoint_state_get(&cs, &f->te->env, f->dir, NULL, &f->st), &f->st);
  for (size_t i = 0; i < hk_checkpoint_state_count(cs); i++) {
    const char *p = strrchr(hk_checkpoint_state_path(cs, i), '/') + 1;
    if (i) strcat(got, ",");
    strcat(got, p);
  }
  hk_checkpoint_state_free(cs);
  if (strcmp(got, want) != 0) fail_msg("the state file lists %s, expected %s", got, want);
}

static void remove_file(fx *f, const char *name) {
  char *p = test_path(f->dir, name);
  assert_int_equal(remove(p), 0);
  free(p);
}

static void write_file(fx *f, const char *name, const char *text) {
  char *p = test_path(f->dir, name);
  assert_int_equal(test_write_file(p, text, strlen(text)), 0);
  free(p);
}

/* The case: a state file lost (deleted by hand, or a directory
 * copied without it) with four checkpoints in the directory, and a
 * restarted program with max_to_keep 2. Its first save adopts all four, in
 * step order, logging each once at INFO, and retention leaves exactly 2;
 * what is not of the managed form (an unmanaged "best", another basename's
 * checkpoint, a foreign file) is untouched, and the stale temporary file a
 * crashed save left is removed (D4.2 step 1). */
static void test_adopt__lost_state_file_then_next_save_keeps_exactly_max_to_keep(void **state) {
  fx *f = *state;
  hk_saver *a = saver(f, 0, HK_UNSET_SECS, 0), *b;
  char *other = test_path(f->dir, "other");
  size_t n;
  for (int64_t step = 1; step <= 4; step++) save(f, a, step, HK_SAVE_DEFAULT);
  assert_ok(hk_saver_save(NULL, a, f->rs, f->save_path, HK_UNSET_STEPS, HK_SAVE_NO_STATE, &f->st), &f->st);
  assert_ok(hk_saver_save(NULL, a, f->rs, other, 3, HK_SAVE_NO_STATE, &f->st), &f->st);
  hk_saver_free(a);
  remove_file(f, "checkpoint");
  write_file(f, "notes.txt", "not a checkpoint\n");
  write_file(f, "model.ckpt-5.safetensors.tmp-Ab3dEf", "torn");

  b = saver(f, 2, HK_UNSET_SECS, 0);
  test_log_clear(&f->te->log);
  save(f, b, 5, HK_SAVE_DEFAULT);
  assert_listing(f->dir,
                 "checkpoint,model.ckpt-4.safetensors,model.ckpt-5.safetensors,model.ckpt.safetensors,"
                 "notes.txt,other-3.safetensors");
  assert_state(f, "model.ckpt-4,model.ckpt-5");
  hk_saver_checkpoints(b, &n);
  assert_int_equal(n, 2);
  for (int step = 1; step <= 4; step++) {
    char want[256];
    snprintf(want, sizeof want, "Adopting checkpoint %s/model.ckpt-%d, which the state file does not list", f->dir,
             step);
    assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, want), 1);
  }
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "Adopting checkpoint"), 4);
  /* Managed from then on like any other: the next save deletes 4. */
  save(f, b, 6, HK_SAVE_DEFAULT);
  assert_state(f, "model.ckpt-5,model.ckpt-6");
  assert_false(ckpt_data_exists(f->dir, "model.ckpt", 4));
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "Adopting checkpoint"), 4);
  hk_saver_free(b);
  free(other);
}

/* A save that crashed after renaming its data file and before its state
 * file (here: the data file of step 3 written, unlisted): a restarted
 * Saver's first save adopts it between the recovered entries by step —
 * after 2, before a newer re-saved entry — and appends its own save last;
 * the padded form (pad_step_number) too. */
static void test_adopt__orphan_of_a_crashed_save_is_adopted_in_step_order(void **state) {
  fx *f = *state;
  for (int pad = 0; pad <= 1; pad++) {
    hk_saver *a = saver(f, 0, HK_UNSET_SECS, pad), *b;
    save(f, a, 1, HK_SAVE_DEFAULT);
    save(f, a, 2, HK_SAVE_DEFAULT);
    save(f, a, 5, HK_SAVE_DEFAULT);
    save(f, a, 3, HK_SAVE_NO_STATE); /* the orphan: a data file the state file does not list */
    hk_saver_free(a);
    b = saver(f, 0, HK_UNSET_SECS, pad);
    save(f, b, 7, HK_SAVE_DEFAULT);
    if (pad)
      assert_state(f,
                   "model.ckpt-00000001,model.ckpt-00000002,model.ckpt-00000003,model.ckpt-00000005,"
                   "model.ckpt-00000007");
    else
      assert_state(f, "model.ckpt-1,model.ckpt-2,model.ckpt-3,model.ckpt-5,model.ckpt-7");
    hk_saver_free(b);
    assert_int_equal(test_tmpdir_remove(f->dir), 0);
    assert_int_equal(mkdir(f->dir, 0755), 0);
  }
}

/* A recovery for a restore (hk_saver_recover, the session manager's)
 * knows no save path: it adopts nothing, and the Saver's next managed save
 * recovers again and adopts. */
static void test_adopt__restore_recovery_leaves_adoption_to_the_next_save(void **state) {
  fx *f = *state;
  hk_saver *a = saver(f, 5, HK_UNSET_SECS, 0), *b;
  size_t n;
  save(f, a, 1, HK_SAVE_DEFAULT);
  save(f, a, 2, HK_SAVE_NO_STATE);
  hk_saver_free(a);
  b = saver(f, 5, HK_UNSET_SECS, 0);
  assert_ok(hk_saver_recover(b, f->dir, &f->st), &f->st);
  hk_saver_checkpoints(b, &n);
  assert_int_equal(n, 1);
  save(f, b, 3, HK_SAVE_DEFAULT);
  assert_state(f, "model.ckpt-1,model.ckpt-2,model.ckpt-3");
  hk_saver_free(b);
}

/* Preserved checkpoints (keep_checkpoint_every_n_hours) are unlisted but
 * never adopted, so never deleted (D6.2, D6.4): retention preserves from
 * the oldest end, so they are older than the oldest listed checkpoint, and
 * only newer unlisted ones are adopted — also by a Saver that no longer
 * preserves. Without a state file, a Saver that preserves adopts nothing
 * (it cannot tell preserved from lost) and says so. */
static void test_adopt__preserved_checkpoints_are_never_adopted(void **state) {
  fx *f = *state;
  hk_saver *a = saver(f, 1, 1.0, 0), *b, *c;
  /* Saves every 20 minutes, k = 0..7: 3 and 6 are preserved, 7 listed. */
  for (int64_t k = 0; k <= 7; k++) {
    save(f, a, k, HK_SAVE_DEFAULT);
    test_clock_advance(&f->te->clock, 1200);
  }
  hk_saver_free(a);
  assert_listing(f->dir, "checkpoint,model.ckpt-3.safetensors,model.ckpt-6.safetensors,model.ckpt-7.safetensors");
  assert_state(f, "model.ckpt-7");
  /* A restart without preservation: 3 and 6 stay, unlisted; an orphan 9 newer
   * than 7 is adopted and, with max_to_keep 1, deleted at once. */
  b = saver(f, 1, HK_UNSET_SECS, 0);
  {
    hk_saver *u = saver(f, 0, HK_UNSET_SECS, 0);
    save(f, u, 9, HK_SAVE_NO_STATE);
    hk_saver_free(u);
  }
  test_log_clear(&f->te->log);
  save(f, b, 10, HK_SAVE_DEFAULT);
  assert_listing(f->dir, "checkpoint,model.ckpt-10.safetensors,model.ckpt-3.safetensors,model.ckpt-6.safetensors");
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "Adopting checkpoint"), 1);
  assert_true(test_log_has(&f->te->log, HK_LOG_INFO, "model.ckpt-9, which the state file does not list"));
  hk_saver_free(b);
  /* The state file lost: a Saver that preserves adopts none of 3, 6, 10. */
  remove_file(f, "checkpoint");
  c = saver(f, 1, 1.0, 0);
  test_log_clear(&f->te->log);
  save(f, c, 11, HK_SAVE_DEFAULT);
  assert_listing(f->dir,
                 "checkpoint,model.ckpt-10.safetensors,model.ckpt-11.safetensors,model.ckpt-3.safetensors,"
                 "model.ckpt-6.safetensors");
  assert_state(f, "model.ckpt-11");
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "Adopting checkpoint"), 0);
  assert_true(test_log_has(&f->te->log, HK_LOG_WARNING, "Not adopting 3 checkpoint(s)"));
  hk_saver_free(c);
}

/* Unmanaged checkpoints whose names are not of the managed form (the
 * hooks' and the loop's named saves) are never adopted, whatever happens
 * to the state file. */
static void test_adopt__unmanaged_named_checkpoint_is_never_adopted(void **state) {
  fx *f = *state;
  char *best = test_path(f->dir, "best");
  char *padded = test_path(f->dir, "model.ckpt-7x");
  hk_saver *a = saver(f, 1, HK_UNSET_SECS, 0);
  save(f, a, 1, HK_SAVE_DEFAULT);
  assert_ok(hk_saver_save(NULL, a, f->rs, best, HK_UNSET_STEPS, HK_SAVE_NO_STATE, &f->st), &f->st);
  assert_ok(hk_saver_save(NULL, a, f->rs, padded, HK_UNSET_STEPS, HK_SAVE_NO_STATE, &f->st), &f->st);
  hk_saver_free(a);
  remove_file(f, "checkpoint");
  a = saver(f, 1, HK_UNSET_SECS, 0);
  save(f, a, 2, HK_SAVE_DEFAULT);
  save(f, a, 3, HK_SAVE_DEFAULT);
  assert_listing(f->dir, "best.safetensors,checkpoint,model.ckpt-3.safetensors,model.ckpt-7x.safetensors");
  hk_saver_free(a);
  free(best);
  free(padded);
}

/* The unmanaged saves of the hooks and the loop refuse a name of the
 * managed form "<basename>-<digits>" (an unmanaged checkpoint of that name
 * would be adopted, then deleted by retention), naming it and the form;
 * other names, "<basename>-" or "<basename>-7x" included, are saved. */
static void test_adopt__managed_form_refused_for_unmanaged_saves(void **state) {
  fx *f = *state;
  static const int64_t dims[1] = {4};
  hk_loop_options lo = HK_LOOP_OPTIONS_INIT;
  hk_loop *l = NULL;
  hk_checkpoint_saver_options co = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
  fake_executor *fx_ = NULL;
  hk_executor *ex = NULL;
  hk_handle gs, train;
  hk_hook *hook = NULL;
  hk_session *s = NULL;
  float w[4] = {0};

  lo.env = &f->te->env;
  lo.checkpoint_dir = f->dir;
  lo.checkpoint_basename = "net";
  lo.save_steps = 100;
  lo.handle_signals = 0;
  assert_ok(hk_loop_new(&l, &lo, &f->st), &f->st);
  assert_ok(hk_loop_add_array(l, "w", HK_DTYPE_F32, 1, dims, w, 0, &f->st), &f->st);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  assert_status(hk_loop_save(NULL, l, "net-12", &f->st), &f->st, HK_INVALID_ARGUMENT,
                "hk_loop_save: 'net-12' has the form 'net-<step>', which is reserved for the checkpoints retention "
                "manages");
  assert_status(hk_loop_save(NULL, l, "net-00000012", &f->st), &f->st, HK_INVALID_ARGUMENT, "'net-00000012'");
  assert_false(hk_loop_should_stop(l)); /* a refused name changes nothing */
  assert_ok(hk_loop_save(NULL, l, "net-12x", &f->st), &f->st);
  assert_ok(hk_loop_save(NULL, l, "net-", &f->st), &f->st);
  assert_ok(hk_loop_save(NULL, l, "model.ckpt-12", &f->st), &f->st); /* another basename's form */
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);

  fx_ = fake_training_executor(f->te, &ex, &gs, &train);
  co.env = &f->te->env;
  co.checkpoint_dir = f->dir;
  co.save_steps = 100;
  assert_ok(hk_checkpoint_saver_hook_new(&hook, &co, &f->st), &f->st);
  assert_ok(one_hook_session_new(&s, &f->te->env, HK_SESSION_SINGULAR, ex, &hook, NULL, &f->st), &f->st);
  assert_status(hk_checkpoint_saver_hook_save(NULL, hook, "model.ckpt-3", &f->st), &f->st, HK_INVALID_ARGUMENT,
                "hk_checkpoint_saver_hook_save: 'model.ckpt-3' has the form 'model.ckpt-<step>', which is reserved");
  assert_ok(hk_checkpoint_saver_hook_save(NULL, hook, "model.ckpt-best", &f->st), &f->st);
  assert_false(ckpt_data_exists(f->dir, "model.ckpt", 3));
  session_close_and_free(s);
  hk_hook_free(hook);
  fake_executor_free(fx_);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_adopt__lost_state_file_then_next_save_keeps_exactly_max_to_keep, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_adopt__orphan_of_a_crashed_save_is_adopted_in_step_order, setup, teardown),
      cmocka_unit_test_setup_teardown(test_adopt__restore_recovery_leaves_adoption_to_the_next_save, setup, teardown),
      cmocka_unit_test_setup_teardown(test_adopt__preserved_checkpoints_are_never_adopted, setup, teardown),
      cmocka_unit_test_setup_teardown(test_adopt__unmanaged_named_checkpoint_is_never_adopted, setup, teardown),
      cmocka_unit_test_setup_teardown(test_adopt__managed_form_refused_for_unmanaged_saves, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
