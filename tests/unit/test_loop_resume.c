/*
 * test_loop — the host loop's checkpoints: restore and bit-exact resume,
 * saves (periodic, on demand, at the end), and best-k retention through
 * the loop (H45).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "loop_tests.h"

/* ---- restore and resume ----------------------------------------------------------- */

/* The loop restores the newest checkpoint into the program's own memory, bit
 * for bit, and a run resumed at any step ends exactly as an uninterrupted one. */
static void test_loop__resume_is_bit_exact(void **state) {
  fx *f = *state;
  model a, b;
  model_init(&a);
  hk_loop_options o = opts_for(f);
  o.last_step = 7;
  char *other = test_path(f->dir, "other");
  o.checkpoint_dir = other;
  assert_int_equal(run_to(f, &a, &o), 0);
  assert_int_equal(a.steps_run, 7);

  /* The same run in two pieces: to 4, then to 7 with fresh program memory. */
  model_init(&b);
  o.checkpoint_dir = f->ck;
  o.last_step = 4;
  assert_int_equal(run_to(f, &b, &o), 0);
  model c;
  model_init(&c);
  c.w[0] = 1234.0f; /* whatever the program holds is replaced by the checkpoint */
  o.last_step = 7;
  assert_int_equal(run_to(f, &c, &o), 4);
  assert_int_equal(c.steps_run, 3);
  assert_memory_equal(a.w, c.w, sizeof a.w);
  assert_memory_equal(a.b, c.b, sizeof a.b);
  assert_memory_equal(&a.r, &c.r, sizeof a.r);
  char *x = test_path(other, "model.ckpt-7.safetensors");
  char *y = ckpt_file(f, "model.ckpt-7");
  assert_true(files_equal(x, y));
  free(x);
  free(y);
  test_tmpdir_remove(other);
  free(other);
}

/* Nothing to restore: the program's own initial values are kept (nothing is
 * zeroed or re-initialized), and the start reports step 0. */
static void test_loop__fresh_start_keeps_program_values(void **state) {
  fx *f = *state;
  model m, ref;
  model_init(&m);
  model_init(&ref);
  hk_loop *l = NULL;
  hk_loop_options o = opts_for(f);
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &m, f);
  int64_t step = -1;
  assert_ok(hk_loop_start(l, &step, &f->st), &f->st);
  assert_int_equal(step, 0);
  assert_null(hk_loop_restored_checkpoint(l));
  assert_memory_equal(m.w, ref.w, sizeof m.w);
  assert_memory_equal(m.b, ref.b, sizeof m.b);
  assert_memory_equal(&m.r, &ref.r, sizeof m.r);
  assert_logged(f->te, HK_LOG_INFO, "with the program's own values");
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
}

/* Opaque state round-trips through its callbacks: the checkpoint holds its
 * bytes as a U8 tensor of its own, and a restore hands them back. */
static void test_loop__opaque_state_round_trips(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  o.last_step = 3;
  run_to(f, &m, &o);
  hk_checkpoint_reader *r = NULL;
  char *p = ckpt_file(f, "model.ckpt-3");
  assert_ok(hk_checkpoint_reader_open(&r, &f->te->env, p, &f->st), &f->st);
  size_t i = 0;
  assert_ok(hk_checkpoint_reader_find(r, "rng", &i, &f->st), &f->st);
  hk_checkpoint_entry e;
  assert_ok(hk_checkpoint_reader_entry(&e, r, i, &f->st), &f->st);
  assert_int_equal(e.dtype, HK_DTYPE_U8);
  assert_int_equal(e.rank, 1);
  assert_int_equal(e.dims[0], (int64_t)sizeof(rng));
  rng saved;
  assert_ok(hk_checkpoint_reader_read(r, i, &saved, sizeof saved, &f->st), &f->st);
  assert_memory_equal(&saved, &m.r, sizeof saved);
  assert_int_equal(saved.calls, 18);
  /* not checkpointed: the loss */
  assert_status(hk_checkpoint_reader_find(r, "loss", &i, &f->st), &f->st, HK_NOT_FOUND, "loss");
  hk_checkpoint_reader_free(r);
  free(p);

  model n;
  model_init(&n);
  hk_loop *l = NULL;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &n, f);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  assert_memory_equal(&n.r, &m.r, sizeof m.r);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
}

/* H30: the loop's executor hands out each array's own memory as its
 * storage (so a restore reads the checkpoint straight into the program's
 * array), and none for an opaque state, which only its callbacks reach. */
static void test_loop__arrays_are_storage_states_are_not(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  hk_loop *l = NULL;
  hk_raw_session *rs = NULL;
  hk_tensor t;
  size_t iw = 0, ib = 0, ir = 0;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &m, f);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st); /* the executor exists from here on */
  hk_executor *ex = hk_loop_executor(l);
  assert_non_null(ex);
  assert_ok(hk_executor_find_variable(ex, "w", &iw, &f->st), &f->st);
  assert_ok(hk_executor_find_variable(ex, "b", &ib, &f->st), &f->st);
  assert_ok(hk_executor_find_variable(ex, "rng", &ir, &f->st), &f->st);
  assert_ok(hk_raw_session_open(&rs, ex, &f->st), &f->st);
  assert_ok(hk_raw_session_variable_storage(&t, rs, iw, &f->st), &f->st);
  assert_ptr_equal(t.data, m.w);
  assert_int_equal(t.nbytes, sizeof m.w);
  assert_int_equal(t.dtype, HK_DTYPE_F32);
  assert_int_equal(t.rank, 2);
  assert_ok(hk_raw_session_variable_storage(&t, rs, ib, &f->st), &f->st);
  assert_ptr_equal(t.data, m.b);
  assert_status(hk_raw_session_variable_storage(&t, rs, ir, &f->st), &f->st, HK_UNIMPLEMENTED, "rng");
  assert_null(t.data);
  hk_raw_session_free(rs);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
}

/* H27 through the storage: a restore writes the program's arrays in place
 * and the state through its restore callback, bit for bit; a tensor whose
 * bytes no longer match their CRC fails the start with DATA_LOSS naming
 * the file and the tensor. */
static void test_loop__restores_arrays_in_place_and_a_corrupt_tensor_is_data_loss(void **state) {
  fx *f = *state;
  model m, n;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  o.last_step = 4;
  run_to(f, &m, &o);

  model_init(&n);
  for (int i = 0; i < 6; i++) n.w[i] = -7.0f;
  n.b[0] = n.b[1] = 99.0;
  hk_loop *l = NULL;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &n, f);
  int64_t step = -1;
  assert_ok(hk_loop_start(l, &step, &f->st), &f->st);
  assert_int_equal(step, 4);
  assert_memory_equal(n.w, m.w, sizeof m.w);
  assert_memory_equal(n.b, m.b, sizeof m.b);
  assert_memory_equal(&n.r, &m.r, sizeof m.r);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);

  /* "w" sorts last, so the file's last byte is one of its bytes. */
  char *p = ckpt_file(f, "model.ckpt-4");
  size_t len = 0;
  char *bytes = test_read_file(p, &len);
  assert_non_null(bytes);
  bytes[len - 1] ^= 0x40;
  assert_int_equal(test_write_file(p, bytes, len), 0);
  free(bytes);
  /* Only that checkpoint: nothing to fall back to. */
  for (int k = 0; k < 4; k++) {
    char name[32];
    snprintf(name, sizeof name, "model.ckpt-%d", k);
    char *q = ckpt_file(f, name);
    unlink(q);
    free(q);
  }
  model_init(&n);
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &n, f);
  assert_status(hk_loop_start(l, NULL, &f->st), &f->st, HK_DATA_LOSS, "model.ckpt-4");
  assert_non_null(strstr(f->st.message, "'w'"));
  assert_non_null(strstr(f->st.message, "CRC-32C mismatch"));
  hk_loop_free(l);
  free(p);
}

static hk_code failing_restore(void *user, const void *src, size_t size, hk_status *st) {
  (void)user;
  (void)src;
  (void)size;
  return hk_status_set(st, HK_DATA_LOSS, "rng state from another program version");
}

static hk_code failing_save(void *user, void *dst, size_t size, hk_status *st) {
  (void)user;
  (void)dst;
  (void)size;
  (void)st;
  return HK_INTERNAL; /* without a message: the loop names the state */
}

/* A restore callback's error fails the start with its code and message; a
 * save callback's error without a message is reported naming the state. */
static void test_loop__state_callback_errors_propagate(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  o.last_step = 2;
  run_to(f, &m, &o);
  hk_loop *l = NULL;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  assert_ok(hk_loop_add_state(l, "rng", sizeof m.r, rng_save, failing_restore, &m.r, HK_LOOP_OPTIONAL, &f->st), &f->st);
  assert_status(hk_loop_start(l, NULL, &f->st), &f->st, HK_DATA_LOSS, "another program version");
  assert_true(hk_loop_should_stop(l));
  assert_status(hk_loop_finish(l, &f->st), &f->st, HK_DATA_LOSS, "another program version");
  hk_loop_free(l);

  hk_loop_options o2 = opts_for(f);
  char *d2 = test_path(f->dir, "ck2");
  o2.checkpoint_dir = d2;
  assert_ok(hk_loop_new(&l, &o2, &f->st), &f->st);
  assert_ok(hk_loop_add_state(l, "rng", sizeof m.r, failing_save, rng_restore, &m.r, 0, &f->st), &f->st);
  assert_status(hk_loop_start(l, NULL, &f->st), &f->st, HK_INTERNAL, "save callback of state 'rng'");
  hk_loop_free(l);
  free(d2);
}

/* H27: state added to a model later is optional on restore — the old
 * checkpoint restores everything else and the program's value is kept, with
 * a warning naming it. Without the flag the start fails naming it. */
static void test_loop__optional_state_missing_keeps_value(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  o.last_step = 2;
  run_to(f, &m, &o);

  float momentum[3] = {7, 8, 9};
  static const int64_t dm[1] = {3};
  model n;
  model_init(&n);
  hk_loop *l = NULL;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &n, f);
  assert_ok(hk_loop_add_array(l, "momentum", HK_DTYPE_F32, 1, dm, momentum, HK_LOOP_OPTIONAL, &f->st), &f->st);
  int64_t step = 0;
  assert_ok(hk_loop_start(l, &step, &f->st), &f->st);
  assert_int_equal(step, 2);
  assert_memory_equal(n.w, m.w, sizeof m.w);
  assert_true(momentum[0] == 7 && momentum[2] == 9);
  assert_logged(f->te, HK_LOG_WARNING, "momentum");
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);

  /* Required: the start fails naming it, and nothing is written. */
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &n, f);
  assert_ok(hk_loop_add_array(l, "adam_v", HK_DTYPE_F32, 1, dm, momentum, 0, &f->st), &f->st);
  assert_status(hk_loop_start(l, NULL, &f->st), &f->st, HK_NOT_FOUND, "adam_v");
  hk_loop_free(l);
}

/* A resumed run that does not restore a tensor the checkpoint holds says
 * so by name at start. */
static void test_loop__unrestored_tensor_is_named(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  o.last_step = 2;
  run_to(f, &m, &o);
  test_log_clear(&f->te->log);
  hk_loop *l = NULL;
  static const int64_t dw[2] = {2, 3};
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  assert_ok(hk_loop_add_array(l, "w", HK_DTYPE_F32, 2, dw, m.w, 0, &f->st), &f->st);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  assert_logged(f->te, HK_LOG_WARNING, "rng");
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
}

/* A dtype or shape that differs from the checkpoint's fails the start
 * naming the array and both shapes (H27). */
static void test_loop__shape_mismatch_fails_start(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  o.last_step = 2;
  run_to(f, &m, &o);
  hk_loop *l = NULL;
  static const int64_t dw[2] = {3, 2};
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  assert_ok(hk_loop_add_array(l, "w", HK_DTYPE_F32, 2, dw, m.w, 0, &f->st), &f->st);
  assert_status(hk_loop_start(l, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "w");
  hk_loop_free(l);
}

/* ---- checkpoints -------------------------------------------------------------------- */

/* C94: a restarted run does not rewrite the checkpoint it just restored —
 * on a disk that refuses every write, the resume starts, and a finish with
 * no step in between writes nothing. (The summaries go elsewhere: a
 * restart writes SessionLog START into an event file an earlier run left,
 * H68, and the checkpoint hook's CHECKPOINT events left one in ck.) */
static void test_loop__no_resave_after_restore(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  char *sums = test_path(f->dir, "summaries");
  o.summary_dir = sums;
  o.last_step = 4;
  run_to(f, &m, &o);
  faulty_fs ff;
  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &f->te->env);
  faulty_fs_fail_errno(&ff, FAULTY_FS_CREATE_EXCL, 0, 28 /* ENOSPC */, 1);
  hk_loop *l = NULL;
  o.last_step = 10;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &m, f);
  int64_t step = 0;
  assert_ok(hk_loop_start(l, &step, &f->st), &f->st);
  assert_int_equal(step, 4);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  assert_int_equal(faulty_fs_calls(&ff, FAULTY_FS_CREATE_EXCL), 0);
  assert_int_equal(faulty_fs_calls(&ff, FAULTY_FS_SYNC), 0);
  hk_loop_free(l);
  f->te->env.fs = NULL;
  faulty_fs_destroy(&ff);
  free(sums);
}

/* D5.2: checkpoints and no state file (deleted by hand) restore the newest
 * one that verifies, with a warning — never a silent start from step 0. */
static void test_loop__missing_state_file_restores_newest(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  o.last_step = 6;
  run_to(f, &m, &o);
  char *sf = test_path(f->ck, "checkpoint");
  assert_int_equal(unlink(sf), 0);
  free(sf);
  test_log_clear(&f->te->log);
  model n;
  model_init(&n);
  hk_loop *l = NULL;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &n, f);
  int64_t step = 0;
  assert_ok(hk_loop_start(l, &step, &f->st), &f->st);
  assert_int_equal(step, 6);
  assert_memory_equal(n.w, m.w, sizeof m.w);
  assert_logged(f->te, HK_LOG_WARNING, "state file");
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
}

/* Asynchronous checkpoints hold exactly the same bytes as synchronous ones
 * (D3.1), and retention keeps max_to_keep of them (D6). */
static void test_loop__async_checkpoints_equal_sync(void **state) {
  fx *f = *state;
  model a, b;
  model_init(&a);
  model_init(&b);
  hk_loop_options o = opts_for(f);
  o.last_step = 9;
  o.max_to_keep = 2;
  run_to(f, &a, &o);
  char *adir = test_path(f->dir, "async");
  o.checkpoint_dir = adir;
  o.async_checkpoint = 1;
  run_to(f, &b, &o);
  /* A save may be deferred while the writer is busy (D3.3), so the async
   * directory may hold other steps; every checkpoint both hold is the same,
   * and the final one is in both. */
  int common = 0;
  for (int s = 0; s <= 9; s++) {
    char name[64];
    snprintf(name, sizeof name, "model.ckpt-%d.safetensors", s);
    char *x = test_path(f->ck, name), *y = test_path(adir, name);
    if (test_path_exists(x) && test_path_exists(y)) {
      assert_true(files_equal(x, y));
      common++;
    }
    if (s == 9) assert_true(test_path_exists(y));
    free(x);
    free(y);
  }
  assert_true(common >= 1);
  assert_int_equal(test_dir_count_matching(adir, ".safetensors"), 2);
  test_tmpdir_remove(adir);
  free(adir);
}

/* Save now: a named, unmanaged checkpoint ("best") that retention never
 * deletes, and a managed one at the current step. */
static void test_loop__save_now(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  o.save_steps = 1000;
  o.max_to_keep = 1;
  hk_loop *l = NULL;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &m, f);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  assert_ok(hk_loop_step(l, step_fn, &m, &f->st), &f->st);
  const char *prefix = NULL;
  assert_ok(hk_loop_save(&prefix, l, "best", &f->st), &f->st);
  assert_non_null(strstr(prefix, "/best"));
  assert_ok(hk_loop_step(l, step_fn, &m, &f->st), &f->st);
  assert_ok(hk_loop_save(&prefix, l, NULL, &f->st), &f->st);
  assert_non_null(strstr(prefix, "model.ckpt-2"));
  /* inside a step: refused, and the loop carries on */
  assert_ok(hk_loop_step_begin(l, NULL, &f->st), &f->st);
  assert_status(hk_loop_save(NULL, l, "x", &f->st), &f->st, HK_FAILED_PRECONDITION, "step is open");
  model_step(&m);
  assert_ok(hk_loop_step_end(l, &f->st), &f->st);
  assert_status(hk_loop_save(NULL, l, "bad/name", &f->st), &f->st, HK_INVALID_ARGUMENT, "bad/name");
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  char *best = ckpt_file(f, "best"), *c3 = ckpt_file(f, "model.ckpt-3"), *c2 = ckpt_file(f, "model.ckpt-2");
  assert_true(test_path_exists(best));
  assert_true(test_path_exists(c3));
  assert_false(test_path_exists(c2)); /* max_to_keep 1 */
  free(best);
  free(c3);
  free(c2);
}

/* hk_checkpoint_saver_hook_save refuses what it cannot do, naming it. */
static void test_loop__hook_save_refuses_bad_calls(void **state) {
  fx *f = *state;
  const char *prefix = "untouched";
  assert_status(hk_checkpoint_saver_hook_save(&prefix, NULL, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "hook");
  assert_null(prefix);
  spy_hook *h = spy_hook_new("not-a-saver", NULL, NULL);
  assert_status(hk_checkpoint_saver_hook_save(NULL, h->hook, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "not-a-saver");
  spy_hook_free(h);
  hk_hook *ck = NULL;
  hk_checkpoint_saver_options co = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
  co.checkpoint_dir = f->ck;
  co.save_steps = 1;
  for (int async = 0; async <= 1; async++) {
    assert_ok(
        async ? hk_async_checkpoint_saver_hook_new(&ck, &co, &f->st) : hk_checkpoint_saver_hook_new(&ck, &co, &f->st),
        &f->st);
    assert_status(hk_checkpoint_saver_hook_save(NULL, ck, NULL, &f->st), &f->st, HK_FAILED_PRECONDITION,
                  "serves no session");
    assert_status(hk_checkpoint_saver_hook_save(NULL, ck, "../x", &f->st), &f->st, HK_INVALID_ARGUMENT, "../x");
    hk_hook_free(ck);
  }
  assert_false(test_path_exists(f->ck));
}

/* A cadence of 0 disables periodic and final saves (C54); the directory is
 * still restored from. */
static void test_loop__zero_cadence_saves_nothing(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  o.save_steps = 0;
  o.last_step = 3;
  assert_int_equal(mkdir(f->ck, 0700), 0);
  run_to(f, &m, &o);
  assert_int_equal(test_dir_count(f->ck), 0);
}

/* ---- best-k retention through the loop (H45) ------------------------------------------------ */

typedef struct ranked {
  float w;
  double val; /* the validation loss the program computes */
  const double *vals;
} ranked;

static hk_code ranked_step(void *user, int64_t step, hk_status *st) {
  ranked *r = user;
  (void)st;
  r->w += 1;
  r->val = r->vals[step + 1];
  return HK_OK;
}

static void run_ranked(fx *f, const double *vals, int64_t last_step, int async) {
  ranked r = {0, vals[0], vals};
  hk_loop_options o = opts_for(f);
  o.save_steps = 1;
  o.max_to_keep = 1;
  o.best_k = 1;
  o.best_metric = "val";
  o.last_step = last_step;
  o.async_checkpoint = async;
  hk_loop *l = NULL;
  int64_t step = 0;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  assert_ok(hk_loop_add_array(l, "w", HK_DTYPE_F32, 0, NULL, &r.w, 0, &f->st), &f->st);
  assert_ok(hk_loop_add_array(l, "val", HK_DTYPE_F64, 0, NULL, &r.val, HK_LOOP_NO_CHECKPOINT, &f->st), &f->st);
  assert_ok(hk_loop_start(l, &step, &f->st), &f->st);
  r.val = vals[step]; /* the value a restored step had */
  assert_ok(hk_loop_run(l, ranked_step, &r, &f->st), &f->st);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
}

static void expect_steps(fx *f, int upto, const char *want) {
  char got[128];
  size_t len = 0;
  got[0] = '\0';
  for (int s = 0; s <= upto; s++) {
    char name[32];
    snprintf(name, sizeof name, "model.ckpt-%d", s);
    char *p = ckpt_file(f, name);
    if (test_path_exists(p)) len += (size_t)snprintf(got + len, sizeof got - len, "%s%d", len ? " " : "", s);
    free(p);
  }
  assert_string_equal(got, want);
}

/* H45: max_to_keep 1, best_k 1, the lowest val: step 2 (3) outlives the newer
 * ones until step 5 (2.5) beats it — across a restart in between. (The
 * asynchronous hook may defer a save while its writer is busy, D3.3, so
 * which steps it saves is not fixed; test_best_checkpoints ranks its saves
 * with block_when_busy.) */
static void test_loop__best_k_keeps_the_best_checkpoint(void **state) {
  fx *f = *state;
  static const double vals[7] = {10, 5, 3, 4, 6, 2.5, 7};
  for (int async = 0; async < 1; async++) {
    test_tmpdir_remove(f->ck);
    run_ranked(f, vals, 4, async);
    expect_steps(f, 6, "2 4");
    char *p = test_path(f->ck, "checkpoint.best");
    char *rec = test_read_file(p, NULL);
    assert_string_equal(rec, "# hooked best checkpoints 1\nmode: min\nbest: \"model.ckpt-2\" 3\n");
    free(rec);
    free(p);
    run_ranked(f, vals, 6, async);
    expect_steps(f, 6, "5 6");
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_loop__resume_is_bit_exact, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__fresh_start_keeps_program_values, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__opaque_state_round_trips, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__arrays_are_storage_states_are_not, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__restores_arrays_in_place_and_a_corrupt_tensor_is_data_loss, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_loop__state_callback_errors_propagate, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__optional_state_missing_keeps_value, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__unrestored_tensor_is_named, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__shape_mismatch_fails_start, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__no_resave_after_restore, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__missing_state_file_restores_newest, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__async_checkpoints_equal_sync, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__save_now, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__hook_save_refuses_bad_calls, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__zero_cadence_saves_nothing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__best_k_keeps_the_best_checkpoint, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
