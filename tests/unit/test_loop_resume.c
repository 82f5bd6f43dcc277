/*
 * Tests of the host loop (hooked/loop.h): a program's own arrays and
 * opaque state, restored and checkpointed in place, its step bracketed by
 * every hook's before_run and after_run; checkpoints through the ordinary
 * Saver and hooks (C50, C54, C80, C94, C97, C105, D3, D5.2, D12, D13, H7,
 * H27); the loop's own hooks and their order (H46, H47). Everything goes
 * through the public headers; event files are decoded by
 * tests/support/event_file.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hooked/hooked.h>

#include "event_file.h"
#include "faulty_fs.h"
#include "spy_hook.h"
#include "test_env.h"
#include "tmpdir.h"

/* ---- a tiny trainer ------------------------------------------------------------ */

/* The program's RNG: opaque state that is not a flat array. */
typedef struct rng {
  uint64_t s;
  uint32_t calls;
} rng;

static uint64_t rng_next(rng *r) {
  r->calls++;
  r->s += 0x9e3779b97f4a7c15ull;
  uint64_t z = r->s;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static hk_code rng_save(void *user, void *dst, size_t size, hk_status *st) {
  (void)st;
  memcpy(dst, user, size);
  return HK_OK;
}

static hk_code rng_restore(void *user, const void *src, size_t size, hk_status *st) {
  (void)st;
  memcpy(user, src, size);
  return HK_OK;
}

typedef struct model {
  float w[6];
  double b[2];
  float loss;
  rng r;
  int64_t my_step; /* a program-owned global step, when registered */
  int advance;     /* advance my_step in each step */
  int steps_run;
  spy_log *log;    /* "step" markers between the hooks' events */
} model;

static void model_init(model *m) {
  memset(m, 0, sizeof *m);
  for (int i = 0; i < 6; i++) m->w[i] = 0.5f + (float)i;
  m->b[0] = -1.0;
  m->b[1] = 2.0;
  m->r.s = 42;
  m->advance = 1;
}

/* One step of the program's own math, driven by its RNG. */
static void model_step(model *m) {
  for (int i = 0; i < 6; i++) m->w[i] = m->w[i] * 0.9f + (float)(rng_next(&m->r) % 100) / 1000.0f;
  m->b[0] += 0.25;
  m->b[1] *= 0.5;
  m->loss = m->w[0] + (float)m->b[0];
  if (m->advance) m->my_step++;
  m->steps_run++;
  if (m->log) spy_log_add(m->log, "step", 0);
}

static hk_code step_fn(void *user, int64_t step, hk_status *st) {
  (void)step;
  (void)st;
  model_step(user);
  return HK_OK;
}

/* ---- fixture ------------------------------------------------------------------------ */

typedef struct fx {
  test_env *te;
  char *dir;
  char *ck; /* dir/ck */
  hk_status st;
} fx;

static int setup(void **state) {
  fx *f = calloc(1, sizeof *f);
  f->te = test_env_new();
  f->dir = test_tmpdir_new("loop");
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

static hk_loop_options opts_for(fx *f) {
  hk_loop_options o = HK_LOOP_OPTIONS_INIT;
  o.env = &f->te->env;
  o.checkpoint_dir = f->ck;
  o.save_steps = 2;
  o.handle_signals = 0;
  return o;
}

/* Register w, b, loss (not checkpointed) and the RNG. */
static void add_model(hk_loop *l, model *m, fx *f) {
  static const int64_t dw[2] = {2, 3}, db[1] = {2};
  assert_ok(hk_loop_add_array(l, "w", HK_DTYPE_F32, 2, dw, m->w, 0, &f->st), &f->st);
  assert_ok(hk_loop_add_array(l, "b", HK_DTYPE_F64, 1, db, m->b, 0, &f->st), &f->st);
  assert_ok(hk_loop_add_array(l, "loss", HK_DTYPE_F32, 0, NULL, &m->loss, HK_LOOP_NO_CHECKPOINT, &f->st), &f->st);
  assert_ok(hk_loop_add_state(l, "rng", sizeof m->r, rng_save, rng_restore, &m->r, 0, &f->st), &f->st);
}

/* Run a loop from start to finish with `last_step`, begin/end form. */
static int64_t run_to(fx *f, model *m, const hk_loop_options *o) {
  hk_loop *l = NULL;
  int64_t step = -1;
  assert_ok(hk_loop_new(&l, o, &f->st), &f->st);
  add_model(l, m, f);
  assert_ok(hk_loop_start(l, &step, &f->st), &f->st);
  while (!hk_loop_should_stop(l)) {
    assert_ok(hk_loop_step_begin(l, NULL, &f->st), &f->st);
    model_step(m);
    assert_ok(hk_loop_step_end(l, &f->st), &f->st);
  }
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  return step;
}

static char *ckpt_file(fx *f, const char *name) {
  char buf[512];
  snprintf(buf, sizeof buf, "%s/%s.safetensors", f->ck, name);
  return strdup(buf);
}

static int files_equal(const char *a, const char *b) {
  size_t na = 0, nb = 0;
  char *x = test_read_file(a, &na), *y = test_read_file(b, &nb);
  int eq = x && y && na == nb && memcmp(x, y, na) == 0;
  free(x);
  free(y);
  return eq;
}

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
  assert_ok(hk_checkpoint_reader_entry(r, i, &e, &f->st), &f->st);
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
static void test_loop__arrays_are_storage_states_are_not_H30(void **state) {
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
  assert_ok(hk_raw_session_variable_storage(rs, iw, &t, &f->st), &f->st);
  assert_ptr_equal(t.data, m.w);
  assert_int_equal(t.nbytes, sizeof m.w);
  assert_int_equal(t.dtype, HK_DTYPE_F32);
  assert_int_equal(t.rank, 2);
  assert_ok(hk_raw_session_variable_storage(rs, ib, &t, &f->st), &f->st);
  assert_ptr_equal(t.data, m.b);
  assert_status(hk_raw_session_variable_storage(rs, ir, &t, &f->st), &f->st, HK_UNIMPLEMENTED, "rng");
  assert_null(t.data);
  hk_raw_session_free(rs);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
}

/* H27 through the storage: a restore writes the program's arrays in place
 * and the state through its restore callback, bit for bit; a tensor whose
 * bytes no longer match their CRC fails the start with DATA_LOSS naming
 * the file and the tensor. */
static void test_loop__restore_in_place_and_corrupt_tensor_H27(void **state) {
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
  assert_ok(hk_loop_add_state(l, "rng", sizeof m.r, rng_save, failing_restore, &m.r, HK_LOOP_OPTIONAL, &f->st),
            &f->st);
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

/* ---- the step bracket ------------------------------------------------------------- */

/* Every hook's before_run runs before the program's step and every after_run
 * after it, in both forms; after_run sees the values the step produced. */
static void test_loop__hooks_bracket_the_step(void **state) {
  fx *f = *state;
  spy_log log;
  spy_log_clear(&log);
  spy_hook *h1 = spy_hook_new("h1", &log, NULL);
  spy_hook *h2 = spy_hook_new("h2", &log, NULL);
  hk_hook *hooks[2] = {h1->hook, h2->hook};
  model m;
  model_init(&m);
  m.log = &log;
  hk_loop_options o = opts_for(f);
  o.checkpoint_dir = NULL;
  o.save_steps = HK_UNSET_STEPS;
  o.hooks = hooks;
  o.nhooks = 2;
  hk_loop *l = NULL;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &m, f);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  hk_handle loss = HK_NO_HANDLE, gs = HK_NO_HANDLE;
  assert_ok(hk_executor_resolve_tensor(hk_loop_executor(l), "loss:0", &loss, &f->st), &f->st);
  assert_ok(hk_executor_resolve_tensor(hk_loop_executor(l), "global_step", &gs, &f->st), &f->st);
  spy_hook_fetch(h2, loss);
  spy_hook_fetch(h2, gs);
  spy_log_clear(&log);

  int64_t step = -1;
  assert_ok(hk_loop_step_begin(l, &step, &f->st), &f->st);
  assert_int_equal(step, 0);
  model_step(&m);
  assert_ok(hk_loop_step_end(l, &f->st), &f->st);
  assert_ok(hk_loop_step(l, step_fn, &m, &f->st), &f->st);
  static const char *const want[] = {"h1.before_run", "h2.before_run", "step", "h1.after_run", "h2.after_run",
                                     "h1.before_run", "h2.before_run", "step", "h1.after_run", "h2.after_run"};
  assert_true(spy_log_equals(&log, want, 10));
  assert_int_equal(h2->last_nresults, 2);
  assert_true(*(const float *)h2->last_results[0].data == m.loss);
  assert_int_equal(h2->last_i64[1], 2); /* the global step after the step */
  assert_int_equal(hk_loop_global_step(l), 2);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  spy_hook_free(h1);
  spy_hook_free(h2);
}

/* A hook asking for a trace gets the program's step as one traced "step"
 * op with its start and end times, so a profiler can time the user's math. */
static void test_loop__trace_times_the_program_step(void **state) {
  fx *f = *state;
  spy_hook *h = spy_hook_new("prof", NULL, NULL);
  hk_hook *hooks[1] = {h->hook};
  model m;
  model_init(&m);
  hk_loop_options o = HK_LOOP_OPTIONS_INIT;
  o.env = &f->te->env;
  o.handle_signals = 0;
  o.hooks = hooks;
  o.nhooks = 1;
  hk_loop *l = NULL;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &m, f);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  spy_hook_options(h, 3, 0);
  assert_ok(hk_loop_step_begin(l, NULL, &f->st), &f->st);
  test_clock_advance(&f->te->clock, 0.25);
  model_step(&m);
  assert_ok(hk_loop_step_end(l, &f->st), &f->st);
  assert_non_null(h->last_metadata);
  assert_int_equal(h->last_metadata->ntrace, 1);
  assert_string_equal(h->last_metadata->trace[0].op_name, "step");
  double d = h->last_metadata->trace[0].end_secs - h->last_metadata->trace[0].start_secs;
  assert_true(d >= 0.25 && d < 0.26);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  spy_hook_free(h);
}

static hk_code failing_step(void *user, int64_t step, hk_status *st) {
  (void)user;
  return hk_status_set(st, HK_UNKNOWN, "the program's step failed at %lld", (long long)step);
}

/* A failing step skips the step's after_run (C13), fails the loop (sticky),
 * and finish writes no final checkpoint (C16) and returns the error. */
static void test_loop__step_error_is_sticky_and_writes_nothing(void **state) {
  fx *f = *state;
  spy_hook *h = spy_hook_new("h", NULL, NULL);
  hk_hook *hooks[1] = {h->hook};
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  o.save_steps = 100;
  o.hooks = hooks;
  o.nhooks = 1;
  hk_loop *l = NULL;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &m, f);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  assert_ok(hk_loop_step(l, step_fn, &m, &f->st), &f->st);
  assert_status(hk_loop_step(l, failing_step, &m, &f->st), &f->st, HK_UNKNOWN, "failed at 1");
  assert_int_equal(h->calls[SPY_BEFORE_RUN], 2);
  assert_int_equal(h->calls[SPY_AFTER_RUN], 1);
  assert_true(hk_loop_should_stop(l));
  assert_status(hk_loop_step_begin(l, NULL, &f->st), &f->st, HK_UNKNOWN, "failed at 1");
  assert_status(hk_loop_finish(l, &f->st), &f->st, HK_UNKNOWN, "failed at 1");
  assert_int_equal(h->calls[SPY_END], 0);
  char *p = ckpt_file(f, "model.ckpt-1");
  assert_false(test_path_exists(p));
  free(p);
  assert_status(hk_loop_finish(l, &f->st), &f->st, HK_UNKNOWN, "failed at 1");
  hk_loop_free(l);
  spy_hook_free(h);
}

static hk_code three_then_done(void *user, int64_t step, hk_status *st) {
  if (step >= 3) return hk_status_set(st, HK_OUT_OF_RANGE, "no more data");
  model_step(user);
  return HK_OK;
}

/* OUT_OF_RANGE from the step ends the loop cleanly (C35, H15): run returns
 * OK, finish writes the final checkpoint. */
static void test_loop__out_of_range_ends_cleanly(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  o.save_steps = 100;
  hk_loop *l = NULL;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &m, f);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  assert_ok(hk_loop_run(l, three_then_done, &m, &f->st), &f->st);
  assert_int_equal(m.steps_run, 3);
  assert_true(hk_loop_should_stop(l));
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  char *p = ckpt_file(f, "model.ckpt-3");
  assert_true(test_path_exists(p));
  free(p);
}

/* num_steps counts from the step the start resumed at (D13). */
static void test_loop__num_steps_counts_from_resume(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  o.num_steps = 3;
  assert_int_equal(run_to(f, &m, &o), 0);
  assert_int_equal(run_to(f, &m, &o), 3);
  assert_int_equal(m.steps_run, 6);
}

/* ---- the global step ------------------------------------------------------------- */

/* A program-owned global step is restored into the program's variable and
 * drives the stop condition. */
static void test_loop__program_owned_global_step(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  m.my_step = 10;
  hk_loop_options o = opts_for(f);
  o.last_step = 13;
  hk_loop *l = NULL;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &m, f);
  assert_ok(hk_loop_add_array(l, "step", HK_DTYPE_I64, 0, NULL, &m.my_step, HK_LOOP_GLOBAL_STEP, &f->st), &f->st);
  int64_t step = 0;
  assert_ok(hk_loop_start(l, &step, &f->st), &f->st);
  assert_int_equal(step, 10);
  assert_ok(hk_loop_run(l, step_fn, &m, &f->st), &f->st);
  assert_int_equal(m.my_step, 13);
  assert_int_equal(m.steps_run, 3);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  char *p = ckpt_file(f, "model.ckpt-13");
  assert_true(test_path_exists(p));
  free(p);
}

/* A global step that never moves is a warning within the first step, and
 * 100 such steps fail the loop instead of looping forever. */
static void test_loop__global_step_that_never_moves(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  m.advance = 0;
  hk_loop_options o = opts_for(f);
  o.checkpoint_dir = NULL;
  o.save_steps = HK_UNSET_STEPS;
  o.last_step = 5;
  hk_loop *l = NULL;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  assert_ok(hk_loop_add_array(l, "my_step", HK_DTYPE_I64, 0, NULL, &m.my_step, HK_LOOP_GLOBAL_STEP, &f->st), &f->st);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  assert_ok(hk_loop_step(l, step_fn, &m, &f->st), &f->st);
  assert_logged(f->te, HK_LOG_WARNING, "global step did not move");
  hk_code rc = HK_OK;
  int steps = 1;
  while (!hk_loop_should_stop(l) && steps < 1000) {
    rc = hk_loop_step(l, step_fn, &m, &f->st);
    steps++;
  }
  assert_status(rc, &f->st, HK_FAILED_PRECONDITION, "has not moved in 100 steps");
  assert_int_equal(steps, 100);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, "did not move"), 5);
  assert_status(hk_loop_finish(l, &f->st), &f->st, HK_FAILED_PRECONDITION, "has not moved");
  hk_loop_free(l);
}

/* ---- checkpoints -------------------------------------------------------------------- */

/* C94: a restarted run does not rewrite the checkpoint it just restored —
 * on a disk that refuses every write, the resume starts, and a finish with
 * no step in between writes nothing. */
static void test_loop__no_resave_after_restore(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
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
  assert_ok(hk_loop_save(l, "best", &prefix, &f->st), &f->st);
  assert_non_null(strstr(prefix, "/best"));
  assert_ok(hk_loop_step(l, step_fn, &m, &f->st), &f->st);
  assert_ok(hk_loop_save(l, NULL, &prefix, &f->st), &f->st);
  assert_non_null(strstr(prefix, "model.ckpt-2"));
  /* inside a step: refused, and the loop carries on */
  assert_ok(hk_loop_step_begin(l, NULL, &f->st), &f->st);
  assert_status(hk_loop_save(l, "x", NULL, &f->st), &f->st, HK_FAILED_PRECONDITION, "step is open");
  model_step(&m);
  assert_ok(hk_loop_step_end(l, &f->st), &f->st);
  assert_status(hk_loop_save(l, "bad/name", NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "bad/name");
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
  assert_status(hk_checkpoint_saver_hook_save(NULL, NULL, &prefix, &f->st), &f->st, HK_INVALID_ARGUMENT, "hook");
  assert_null(prefix);
  spy_hook *h = spy_hook_new("not-a-saver", NULL, NULL);
  assert_status(hk_checkpoint_saver_hook_save(h->hook, NULL, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "not-a-saver");
  spy_hook_free(h);
  hk_hook *ck = NULL;
  hk_checkpoint_saver_options co = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
  co.checkpoint_dir = f->ck;
  co.save_steps = 1;
  for (int async = 0; async <= 1; async++) {
    assert_ok(async ? hk_async_checkpoint_saver_hook_new(&ck, &co, &f->st) : hk_checkpoint_saver_hook_new(&ck, &co, &f->st),
              &f->st);
    assert_status(hk_checkpoint_saver_hook_save(ck, NULL, NULL, &f->st), &f->st, HK_FAILED_PRECONDITION,
                  "serves no session");
    assert_status(hk_checkpoint_saver_hook_save(ck, "../x", NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "../x");
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

/* ---- signals, stop requests ------------------------------------------------------------- */

static hk_code term_at_2(void *user, int64_t step, hk_status *st) {
  (void)st;
  model_step(user);
  if (step == 2) raise(SIGTERM);
  return HK_OK;
}

/* D12: SIGTERM stops the loop after the step in progress; finish writes the
 * final checkpoint and returns OK. */
static void test_loop__sigterm_stops_cleanly(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  o.save_steps = 100;
  o.handle_signals = 1;
  hk_loop *l = NULL;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &m, f);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  assert_ok(hk_loop_run(l, term_at_2, &m, &f->st), &f->st);
  assert_int_equal(m.steps_run, 3);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  char *p = ckpt_file(f, "model.ckpt-3");
  assert_true(test_path_exists(p));
  free(p);
  assert_int_equal(hk_signal_fired(), 0); /* uninstalled, flag cleared */
}

static void *stopper(void *arg) {
  hk_loop_request_stop(arg);
  return NULL;
}

/* hk_loop_request_stop() from another thread stops after the step. */
static void test_loop__request_stop_from_another_thread(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  hk_loop *l = NULL;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &m, f);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  assert_ok(hk_loop_step(l, step_fn, &m, &f->st), &f->st);
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, stopper, l), 0);
  pthread_join(t, NULL);
  assert_true(hk_loop_should_stop(l));
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  char *p = ckpt_file(f, "model.ckpt-1");
  assert_true(test_path_exists(p));
  free(p);
}

/* ---- log level ------------------------------------------------------------------------ */

/* One log level reaches everything the loop creates, and hooks the program
 * creates with env NULL: at WARNING, a whole run with checkpoints logs no
 * INFO line at all. */
static void test_loop__log_level_reaches_every_hook(void **state) {
  fx *f = *state;
  f->te->env.log_level = HK_LOG_WARNING;
  hk_hook *ck = NULL;
  hk_checkpoint_saver_options co = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
  char *other = test_path(f->dir, "user_ck");
  co.checkpoint_dir = other;
  co.save_steps = 1;
  assert_ok(hk_checkpoint_saver_hook_new(&ck, &co, &f->st), &f->st);
  hk_hook *hooks[1] = {ck};
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  o.last_step = 3;
  o.hooks = hooks;
  o.nhooks = 1;
  run_to(f, &m, &o);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, ""), 0);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_DEBUG, ""), 0);
  hk_hook_free(ck);
  test_tmpdir_remove(other);
  free(other);
}

/* ---- the loop's own hooks ------------------------------------------------------------- */

/* The index of the first of the loop's session's hooks named `name`, -1
 * when there is none. */
static int hook_index(hk_loop *l, const char *name) {
  hk_session *s = hk_loop_session(l);
  for (size_t i = 0; i < hk_session_hook_count(s); i++)
    if (strcmp(hk_hook_name(hk_session_hook(s, i)), name) == 0) return (int)i;
  return -1;
}

/* Start a loop over the model with `o`, run `n` steps 0.5 s apart on the
 * mock clock (2 steps/s), and return it, started. */
static hk_loop *run_half_second_steps(fx *f, model *m, const hk_loop_options *o, int n) {
  hk_loop *l = NULL;
  assert_ok(hk_loop_new(&l, o, &f->st), &f->st);
  add_model(l, m, f);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  for (int i = 0; i < n; i++) {
    assert_ok(hk_loop_step(l, step_fn, m, &f->st), &f->st);
    test_clock_advance(&f->te->clock, 0.5);
  }
  return l;
}

/* C52, C53, H47: with summary_dir NULL the loop's StepCounter writes
 * global_step/sec every 100 steps into the checkpoint directory (and logs
 * it), into the one event file the session shares for it (H26) with the
 * checkpoint hook's CHECKPOINT events and the program's own scalars. */
static void test_loop__h47_step_counter_writes_into_checkpoint_dir_by_default(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  o.save_steps = 1000;
  hk_loop *l = run_half_second_steps(f, &m, &o, 201);
  assert_ok(hk_loop_summary_scalar(l, f->ck, "loss", m.loss, &f->st), &f->st);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  assert_logged(f->te, HK_LOG_INFO, "global_step/sec: 2");
  ev_file *ef = event_file_only(f->ck); /* one file: the writer is shared */
  const ev_event *e = NULL;
  assert_int_equal(event_file_count_tag(ef, "global_step/sec"), 2);
  const ev_value *v = event_file_find(ef, "global_step/sec", 0, &e);
  assert_true(e->step == 101 && v->simple == 2.0f); /* 100 steps in 50 s */
  v = event_file_find(ef, "global_step/sec", (size_t)(e - ef->events) + 1, &e);
  assert_true(e->step == 201 && v->simple == 2.0f);
  v = event_file_find(ef, "loss", 0, &e);
  assert_true(v != NULL && e->step == 201);
  int checkpoints = 0;
  for (size_t k = 0; k < ef->n; k++)
    if (ef->events[k].kind == EV_SESSION_LOG && ef->events[k].status == 3) checkpoints++;
  assert_int_equal(checkpoints, 2); /* at the start (0) and the final one (201) */
  event_file_free(ef);
}

/* C52, H47: a summary_dir takes the StepCounter's rate away from the
 * checkpoint directory; the program's scalars there share its file (H26). */
static void test_loop__h47_summary_dir_overrides_checkpoint_dir(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  char *tb = test_path(f->dir, "tb");
  hk_loop_options o = opts_for(f);
  o.save_steps = 1000;
  o.summary_dir = tb;
  o.log_step_count_steps = 10;
  hk_loop *l = run_half_second_steps(f, &m, &o, 21);
  assert_ok(hk_loop_summary_scalar(l, tb, "loss", m.loss, &f->st), &f->st);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  ev_file *ef = event_file_only(tb);
  const ev_event *e = NULL;
  assert_int_equal(event_file_count_tag(ef, "global_step/sec"), 2); /* at 11 and 21 */
  assert_non_null(event_file_find(ef, "global_step/sec", 0, &e));
  assert_true(e->step == 11);
  assert_non_null(event_file_find(ef, "loss", 0, &e));
  assert_true(e->step == 21);
  event_file_free(ef);
  ef = event_file_only(f->ck); /* the checkpoint hook's events only */
  assert_int_equal(event_file_count_tag(ef, "global_step/sec"), 0);
  event_file_free(ef);
  free(tb);
}

/* C54, H47: log_step_count_steps 0 runs no StepCounter, so a loop whose
 * checkpoint saves are off too writes no event file; the default one does. */
static void test_loop__h47_zero_log_step_count_steps_runs_no_step_counter(void **state) {
  fx *f = *state;
  for (int off = 0; off <= 1; off++) {
    model m;
    model_init(&m);
    test_tmpdir_remove(f->ck);
    assert_int_equal(mkdir(f->ck, 0700), 0);
    hk_loop_options o = opts_for(f);
    o.save_steps = 0;
    if (off) o.log_step_count_steps = 0;
    hk_loop *l = run_half_second_steps(f, &m, &o, 101);
    assert_int_equal(hook_index(l, "StepCounterHook") >= 0, !off);
    assert_ok(hk_loop_finish(l, &f->st), &f->st);
    hk_loop_free(l);
    assert_int_equal(test_dir_count_matching(f->ck, "tfevents"), !off);
  }
  /* No directory at all: no StepCounter either. */
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  o.checkpoint_dir = NULL;
  o.save_steps = HK_UNSET_STEPS;
  hk_loop *l = run_half_second_steps(f, &m, &o, 1);
  assert_int_equal(hook_index(l, "StepCounterHook"), -1);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
}

/* H46, H47: the loop's own hooks run in this order — its watch, the NaN
 * guard, the early stopping, StopAtStep, the StepCounter, the checkpoint
 * saver — and then the program's. */
static void test_loop__h47_own_hooks_run_in_order_step_counter_before_saver(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  spy_hook *spy = spy_hook_new("spy", NULL, NULL);
  hk_hook *hooks[1] = {spy->hook};
  hk_hook *es = NULL;
  hk_early_stopping_options eo = HK_EARLY_STOPPING_OPTIONS_INIT;
  eo.monitor = "loss";
  eo.every_n_steps = 1000;
  assert_ok(hk_early_stopping_hook_new(&es, &eo, &f->st), &f->st);
  for (int async = 0; async <= 1; async++) {
    hk_loop_options o = opts_for(f);
    o.async_checkpoint = async;
    o.nan_guard = "loss";
    o.last_step = 10;
    o.hooks = hooks;
    o.nhooks = 1;
    hk_loop *l = NULL;
    assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
    add_model(l, &m, f);
    assert_ok(hk_loop_add_early_stopping(l, es, &f->st), &f->st);
    assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
    const char *want[] = {"host loop",       "NanTensorHook",
                          "EarlyStoppingHook", "StopAtStepHook",
                          "StepCounterHook", async ? "AsyncCheckpointSaverHook" : "CheckpointSaverHook",
                          "spy"};
    hk_session *s = hk_loop_session(l);
    assert_int_equal(hk_session_hook_count(s), 7);
    for (size_t i = 0; i < 7; i++) assert_string_equal(hk_hook_name(hk_session_hook(s, i)), want[i]);
    assert_ok(hk_loop_finish(l, &f->st), &f->st);
    hk_loop_free(l);
    test_tmpdir_remove(f->ck);
  }
  hk_hook_free(es);
  spy_hook_free(spy);
}

/* H47: a version-2 options struct (a program built against that header)
 * ends before summary_dir: the loop reads nothing past it and runs the
 * default StepCounter into the checkpoint directory. */
static void test_loop__h47_version_2_options_get_the_default_step_counter(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  hk_loop_options o;
  memset(&o, 0x5a, sizeof o);
  assert_int_equal(hk_loop_options_init(&o, 2), HK_OK);
  assert_int_equal(o.version, 2);
  assert_int_equal(o.best_mode, HK_MONITOR_MIN);
  assert_true(o.summary_dir == (const char *)(uintptr_t)0x5a5a5a5a5a5a5a5aull); /* not written */
  assert_true(o.log_step_count_steps == (int64_t)0x5a5a5a5a5a5a5a5aull);
  o.log_step_count_steps = -5; /* past the version-2 struct: not read */
  o.summary_dir = "";
  o.env = &f->te->env;
  o.checkpoint_dir = f->ck;
  o.save_steps = 1000;
  o.handle_signals = 0;
  hk_loop *l = run_half_second_steps(f, &m, &o, 101);
  assert_int_equal(hook_index(l, "StepCounterHook"), 1);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  ev_file *ef = event_file_only(f->ck);
  const ev_event *e = NULL;
  assert_non_null(event_file_find(ef, "global_step/sec", 0, &e));
  assert_true(e->step == 101);
  event_file_free(ef);
  assert_int_equal(hk_loop_options_init(&o, HK_LOOP_OPTIONS_VERSION), HK_OK);
  assert_null(o.summary_dir);
  assert_int_equal(o.log_step_count_steps, 100);
}

/* ---- allocation (H7) -------------------------------------------------------------------- */

/* extras: the loop's NaN guard on "loss", an EarlyStoppingHook among its
 * own hooks (evaluating far apart) and best-k retention by "loss" (H45,
 * H46): none of them allocates on a step where nothing triggers. */
static void steady_state_allocates_nothing(fx *f, int async, int nhooks, int extras) {
  spy_hook *spies[10];
  hk_hook *hooks[10];
  hk_hook *es = NULL;
  for (int i = 0; i < nhooks; i++) {
    char name[16];
    snprintf(name, sizeof name, "spy%d", i);
    spies[i] = spy_hook_new(name, NULL, NULL);
    hooks[i] = spies[i]->hook;
  }
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  o.save_steps = 5;
  o.async_checkpoint = async;
  o.hooks = hooks;
  o.nhooks = (size_t)nhooks;
  if (extras) {
    hk_early_stopping_options eo = HK_EARLY_STOPPING_OPTIONS_INIT;
    eo.monitor = "loss";
    eo.every_n_steps = 1000;
    eo.state = "early_stopping";
    assert_ok(hk_early_stopping_hook_new(&es, &eo, &f->st), &f->st);
    o.nan_guard = "loss";
    o.best_k = 2;
    o.best_metric = "loss";
  }
  hk_loop *l = NULL;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &m, f);
  if (es) assert_ok(hk_loop_add_early_stopping(l, es, &f->st), &f->st);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  /* H47: the default StepCounter (every 100 steps into the checkpoint
   * directory) is attached; it triggers at step 1 and 101, not at 7..9. */
  assert_true(hook_index(l, "StepCounterHook") >= 0);
  /* Past the first saves (at 0 and 5: the snapshot buffer and writer exist). */
  for (int i = 0; i < 6; i++) assert_ok(hk_loop_step(l, step_fn, &m, &f->st), &f->st);
  /* The asynchronous save of step 5 may have been deferred while the writer
   * was busy (D3.3, a slow machine or a sanitizer), and processing its
   * completion is the hook triggering (it may allocate), at whichever step
   * finds it done: a managed save now waits for the writer, processes its
   * result and restarts the cadence from step 6. */
  if (async) assert_ok(hk_loop_save(l, NULL, NULL, &f->st), &f->st);
  test_alloc_reset_counts(&f->te->alloc);
  for (int i = 0; i < 3; i++) { /* steps 7..9: no save triggers */
    assert_ok(hk_loop_step_begin(l, NULL, &f->st), &f->st);
    model_step(&m);
    assert_ok(hk_loop_step_end(l, &f->st), &f->st);
  }
  assert_int_equal(test_alloc_count(&f->te->alloc), 0);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  hk_hook_free(es);
  for (int i = 0; i < nhooks; i++) spy_hook_free(spies[i]);
}

static void test_loop__steady_state_steps_allocate_nothing(void **state) {
  fx *f = *state;
  steady_state_allocates_nothing(f, 0, 0, 0);
  steady_state_allocates_nothing(f, 0, 10, 0);
  test_tmpdir_remove(f->ck);
  steady_state_allocates_nothing(f, 1, 1, 0);
  test_tmpdir_remove(f->ck);
  steady_state_allocates_nothing(f, 0, 1, 1);
  test_tmpdir_remove(f->ck);
  steady_state_allocates_nothing(f, 1, 1, 1);
}

/* House style 22a: every allocation failure from new to finish is
 * RESOURCE_EXHAUSTED (or a clean finish) and leaks nothing. */
static void test_loop__oom_anywhere_is_clean(void **state) {
  fx *f = *state;
  for (long n = 0;; n++) {
    test_tmpdir_remove(f->ck);
    model m;
    model_init(&m);
    hk_loop_options o = opts_for(f);
    o.last_step = 3;
    long live = test_alloc_live(&f->te->alloc), failed_before = f->te->alloc.nfailed;
    test_alloc_fail_at(&f->te->alloc, n, 0);
    hk_loop *l = NULL;
    hk_code rc = hk_loop_new(&l, &o, &f->st);
    if (rc == HK_OK) rc = hk_loop_add_array(l, "w", HK_DTYPE_F32, 1, (const int64_t[]){6}, m.w, 0, &f->st);
    if (rc == HK_OK) rc = hk_loop_add_state(l, "rng", sizeof m.r, rng_save, rng_restore, &m.r, 0, &f->st);
    if (rc == HK_OK) rc = hk_loop_start(l, NULL, &f->st);
    if (rc == HK_OK) rc = hk_loop_run(l, step_fn, &m, &f->st);
    hk_code frc = l ? hk_loop_finish(l, &f->st) : rc;
    if (rc == HK_OK) rc = frc;
    hk_loop_free(l);
    long injected = f->te->alloc.nfailed - failed_before;
    test_alloc_fail_at(&f->te->alloc, -1, 0);
    assert_int_equal(test_alloc_live(&f->te->alloc), live);
    if (injected == 0) {
      assert_ok(rc, &f->st);
      break;
    }
    assert_status(rc, &f->st, HK_RESOURCE_EXHAUSTED, NULL);
  }
}

/* ---- the NaN guard (H46) ----------------------------------------------------------------- */

/* Every checkpoint of f->ck verifies, names a listed step, and holds finite
 * values of "w"; @return how many, *newest the newest one's step. */
static int checkpoints_finite(fx *f, int64_t *newest) {
  hk_checkpoint_state *cs = NULL;
  assert_ok(hk_get_checkpoint_state(&f->te->env, f->ck, NULL, &cs, &f->st), &f->st);
  size_t n = hk_checkpoint_state_count(cs);
  for (size_t i = 0; i < n; i++) {
    hk_checkpoint_reader *r = NULL;
    size_t index;
    float w[6];
    assert_ok(hk_checkpoint_reader_open(&r, &f->te->env, hk_checkpoint_state_path(cs, i), &f->st), &f->st);
    assert_ok(hk_checkpoint_reader_verify(r, &f->st), &f->st);
    assert_ok(hk_checkpoint_reader_find(r, "w", &index, &f->st), &f->st);
    assert_ok(hk_checkpoint_reader_read(r, index, w, sizeof w, &f->st), &f->st);
    for (int k = 0; k < 6; k++) assert_true(isfinite(w[k]));
    *newest = hk_checkpoint_reader_step(r);
    hk_checkpoint_reader_free(r);
  }
  hk_checkpoint_state_free(cs);
  return (int)n;
}

/* A step that leaves the loss NaN on a save step (6, save_steps 2) fails
 * the loop before the loop's own checkpoint hook saves it: no checkpoint 6,
 * no final one, every checkpoint finite, the newest the last good step, and
 * hk_loop_finish() returns the guard's error (C134, H2). A new run resumes
 * there. */
static void nan_guard_case(fx *f, int async) {
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  o.max_to_keep = 3;
  o.async_checkpoint = async;
  o.nan_guard = "loss";
  hk_loop *l = NULL;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &m, f);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  /* The guard runs before the loop's StepCounter (H47) and checkpoint hook. */
  hk_session *s = hk_loop_session(l);
  assert_string_equal(hk_hook_name(hk_session_hook(s, 1)), "NanTensorHook");
  assert_string_equal(hk_hook_name(hk_session_hook(s, 2)), "StepCounterHook");
  assert_string_equal(hk_hook_name(hk_session_hook(s, 3)), async ? "AsyncCheckpointSaverHook" : "CheckpointSaverHook");
  for (int i = 1; i <= 5; i++) assert_ok(hk_loop_step(l, step_fn, &m, &f->st), &f->st);
  model good = m;
  assert_ok(hk_loop_step_begin(l, NULL, &f->st), &f->st);
  model_step(&m);
  m.loss = NAN;
  for (int i = 0; i < 6; i++) m.w[i] = NAN; /* the divergent step wrecked the weights too */
  assert_status(hk_loop_step_end(l, &f->st), &f->st, HK_INVALID_ARGUMENT, "NaN loss during training.");
  assert_true(hk_loop_should_stop(l));
  assert_status(hk_loop_finish(l, &f->st), &f->st, HK_INVALID_ARGUMENT, "NaN loss during training.");
  hk_loop_free(l);
  assert_logged(f->te, HK_LOG_ERROR, "Model diverged with loss = NaN.");
  char *six = ckpt_file(f, "model.ckpt-6");
  assert_false(test_path_exists(six));
  free(six);
  int64_t newest = -1;
  int n = checkpoints_finite(f, &newest);
  if (!async) {
    assert_int_equal(n, 3); /* 0, 2, 4 */
    assert_int_equal(newest, 4);
  } else {
    /* A save may be deferred while the writer is busy (D3.3): which steps
     * are saved varies, never 6. */
    assert_true(n >= 1 && newest <= 5);
  }

  model r;
  model_init(&r);
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &r, f);
  int64_t step = -1;
  assert_ok(hk_loop_start(l, &step, &f->st), &f->st);
  assert_int_equal(step, newest);
  assert_true(isfinite(r.w[0]));
  if (newest < 5) assert_false(memcmp(r.w, good.w, sizeof r.w) == 0); /* the newest checkpoint, not step 5 */
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
}

static void test_loop__h46_nan_guard_keeps_nan_out_of_checkpoints(void **state) {
  fx *f = *state;
  nan_guard_case(f, 0);
  test_tmpdir_remove(f->ck);
  test_log_clear(&f->te->log);
  nan_guard_case(f, 1);
}

/* What nan_guard and best_metric name is checked at the start, before
 * anything is built or created, naming the option. */
static void test_loop__h46_named_arrays_checked_at_start(void **state) {
  fx *f = *state;
  static const struct {
    const char *nan_guard, *best_metric;
    hk_code code;
    const char *msg;
  } cases[] = {
      {"nope", NULL, HK_FAILED_PRECONDITION, "nan_guard 'nope' names no registered array"},
      {"rng", NULL, HK_INVALID_ARGUMENT, "nan_guard 'rng' is an opaque state"},
      {"step", NULL, HK_INVALID_ARGUMENT, "nan_guard 'step' is i64"},
      {NULL, "nope", HK_FAILED_PRECONDITION, "best_metric 'nope' names no registered array"},
      {NULL, "w", HK_INVALID_ARGUMENT, "best_metric 'w' is an array of more than one element"},
      {NULL, "rng", HK_INVALID_ARGUMENT, "best_metric 'rng' is an opaque state"},
      {"loss", "loss", HK_OK, NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    model m;
    model_init(&m);
    hk_loop_options o = opts_for(f);
    o.nan_guard = cases[i].nan_guard;
    o.best_metric = cases[i].best_metric;
    o.best_k = cases[i].best_metric ? 1 : 0;
    hk_loop *l = NULL;
    assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
    add_model(l, &m, f);
    assert_ok(hk_loop_add_array(l, "step", HK_DTYPE_I64, 0, NULL, &m.my_step, HK_LOOP_NO_CHECKPOINT, &f->st), &f->st);
    hk_code rc = hk_loop_start(l, NULL, &f->st);
    if (cases[i].code == HK_OK) {
      assert_ok(rc, &f->st);
      assert_ok(hk_loop_finish(l, &f->st), &f->st);
      assert_true(test_path_exists(f->ck));
    } else {
      assert_status(rc, &f->st, cases[i].code, cases[i].msg);
      assert_true(hk_loop_should_stop(l));
      assert_status(hk_loop_finish(l, &f->st), &f->st, cases[i].code, cases[i].msg);
      assert_false(test_path_exists(f->ck)); /* nothing created */
    }
    hk_loop_free(l);
  }
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

/* max_to_keep 1, best_k 1, the lowest val: step 2 (3) outlives the newer
 * ones until step 5 (2.5) beats it — across a restart in between. (The
 * asynchronous hook may defer a save while its writer is busy, D3.3, so
 * which steps it saves is not fixed; test_best_checkpoints ranks its saves
 * with block_when_busy.) */
static void test_loop__h45_best_k_keeps_the_best_checkpoint(void **state) {
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

/* ---- bad arguments and misuse ---------------------------------------------------------- */

static void test_loop__bad_options_have_no_side_effect(void **state) {
  fx *f = *state;
  hk_loop *l = (hk_loop *)1;
  hk_loop_options o = opts_for(f);
  o.save_secs = 10;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "Can not provide both save_secs and save_steps.");
  assert_null(l);
  o = opts_for(f);
  o.save_steps = -1;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "save_steps");
  o = opts_for(f);
  o.num_steps = 1;
  o.last_step = 2;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "Only one of num_steps or last_step");
  o = opts_for(f);
  o.checkpoint_basename = "a/b";
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "checkpoint_basename");
  o = opts_for(f);
  o.checkpoint_dir = NULL;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "checkpoint_dir");
  o = opts_for(f);
  o.max_to_keep = -1;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "max_to_keep");
  o = opts_for(f);
  o.nhooks = 1;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "hooks");
  spy_hook *h = spy_hook_new("h", NULL, NULL);
  hk_hook *twice[2] = {h->hook, h->hook};
  o = opts_for(f);
  o.hooks = twice;
  o.nhooks = 2;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "twice");
  spy_hook_free(h);
  o = opts_for(f);
  o.version = 99;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "version");
  assert_status(hk_loop_new(NULL, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "out");
  assert_int_equal(hk_loop_options_init(NULL, HK_LOOP_OPTIONS_VERSION), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_loop_options_init(&o, 0), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_loop_options_init(&o, 99), HK_INVALID_ARGUMENT);
  /* H45, H46: the version-2 options, each named. */
  o = opts_for(f);
  o.nan_guard = "";
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "nan_guard '' is not an array name");
  o.nan_guard = "a b";
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "nan_guard 'a b'");
  o = opts_for(f);
  o.best_k = -1;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "best_k must be >= 0");
  o.best_k = 2;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "best_k 2 needs best_metric");
  o.best_metric = "a b";
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "best_metric 'a b'");
  o.best_metric = "loss";
  o.best_mode = (hk_monitor_mode)-1;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "best_mode -1");
  o.best_mode = HK_MONITOR_MAX;
  o.save_steps = 0;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "best_k needs the loop's checkpoint saves");
  o.save_steps = HK_UNSET_STEPS;
  o.checkpoint_dir = NULL;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "there is no checkpoint_dir");
  o = opts_for(f);
  o.best_metric = "loss";
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "best_metric 'loss' is given but best_k is 0");
  /* C54, H47: the version-3 options, each named. */
  o = opts_for(f);
  o.log_step_count_steps = -1;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "hk_loop_new: log_step_count_steps must be >= 0, got -1");
  o.log_step_count_steps = HK_UNSET_STEPS;
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "log_step_count_steps must be >= 0");
  o = opts_for(f);
  o.summary_dir = "";
  assert_status(hk_loop_new(&l, &o, &f->st), &f->st, HK_INVALID_ARGUMENT, "hk_loop_new: summary_dir is empty");
  /* A version-1 struct ends before nan_guard: what follows is not read. */
  o = opts_for(f);
  o.version = 1;
  o.best_k = -3;
  o.nan_guard = "";
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  hk_loop_free(l);
  memset(&o, 0x5a, sizeof o);
  assert_int_equal(hk_loop_options_init(&o, 1), HK_OK);
  assert_int_equal(o.version, 1);
  assert_int_equal(o.handle_signals, 1);
  assert_true(o.nan_guard == (const char *)(uintptr_t)0x5a5a5a5a5a5a5a5aull);
  assert_int_equal(hk_loop_options_init(&o, HK_LOOP_OPTIONS_VERSION), HK_OK);
  assert_null(o.nan_guard);
  assert_int_equal(o.best_k, 0);
  assert_null(o.best_metric);
  assert_int_equal(o.best_mode, HK_MONITOR_MIN);
  assert_false(test_path_exists(f->ck));
}

static void test_loop__bad_registrations_name_the_array(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  hk_loop *l = NULL;
  hk_loop_options o = opts_for(f);
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  static const int64_t d[1] = {6}, neg[1] = {-1};
  assert_status(hk_loop_add_array(NULL, "w", HK_DTYPE_F32, 1, d, m.w, 0, &f->st), &f->st, HK_INVALID_ARGUMENT, "loop");
  assert_status(hk_loop_add_array(l, NULL, HK_DTYPE_F32, 1, d, m.w, 0, &f->st), &f->st, HK_INVALID_ARGUMENT, "name");
  assert_status(hk_loop_add_array(l, "a b", HK_DTYPE_F32, 1, d, m.w, 0, &f->st), &f->st, HK_INVALID_ARGUMENT, "a b");
  assert_status(hk_loop_add_array(l, "", HK_DTYPE_F32, 1, d, m.w, 0, &f->st), &f->st, HK_INVALID_ARGUMENT, "name");
  assert_status(hk_loop_add_array(l, "w", HK_DTYPE_STRING, 1, d, m.w, 0, &f->st), &f->st, HK_INVALID_ARGUMENT, "'w'");
  assert_status(hk_loop_add_array(l, "w", (hk_dtype)99, 1, d, m.w, 0, &f->st), &f->st, HK_INVALID_ARGUMENT, "'w'");
  assert_status(hk_loop_add_array(l, "w", HK_DTYPE_F32, 9, d, m.w, 0, &f->st), &f->st, HK_INVALID_ARGUMENT, "'w'");
  assert_status(hk_loop_add_array(l, "w", HK_DTYPE_F32, 1, neg, m.w, 0, &f->st), &f->st, HK_INVALID_ARGUMENT, "'w'");
  assert_status(hk_loop_add_array(l, "w", HK_DTYPE_F32, 1, d, NULL, 0, &f->st), &f->st, HK_INVALID_ARGUMENT, "'w'");
  assert_status(hk_loop_add_array(l, "w", HK_DTYPE_F32, 1, d, m.w, 0x100, &f->st), &f->st, HK_INVALID_ARGUMENT, "flags");
  assert_status(hk_loop_add_array(l, "w", HK_DTYPE_F32, 1, d, m.w, HK_LOOP_GLOBAL_STEP, &f->st), &f->st,
                HK_INVALID_ARGUMENT, "integer scalar");
  assert_status(hk_loop_add_array(l, "global_step", HK_DTYPE_I64, 0, NULL, &m.my_step, 0, &f->st), &f->st,
                HK_INVALID_ARGUMENT, "global_step");
  assert_ok(hk_loop_add_array(l, "w", HK_DTYPE_F32, 1, d, m.w, 0, &f->st), &f->st);
  assert_status(hk_loop_add_array(l, "w", HK_DTYPE_F32, 1, d, m.w, 0, &f->st), &f->st, HK_ALREADY_EXISTS, "'w'");
  assert_status(hk_loop_add_state(l, "w", 4, rng_save, rng_restore, NULL, 0, &f->st), &f->st, HK_ALREADY_EXISTS, "'w'");
  assert_status(hk_loop_add_state(l, "r", 4, NULL, rng_restore, NULL, 0, &f->st), &f->st, HK_INVALID_ARGUMENT, "save");
  assert_status(hk_loop_add_state(l, "r", 4, rng_save, NULL, NULL, 0, &f->st), &f->st, HK_INVALID_ARGUMENT, "restore");
  assert_status(hk_loop_add_state(l, "r", 0, rng_save, rng_restore, NULL, 0, &f->st), &f->st, HK_INVALID_ARGUMENT, "size");
  assert_status(hk_loop_add_state(l, "r", 4, rng_save, rng_restore, NULL, HK_LOOP_NO_CHECKPOINT, &f->st), &f->st,
                HK_INVALID_ARGUMENT, "'r'");
  assert_ok(hk_loop_add_array(l, "s", HK_DTYPE_I64, 0, NULL, &m.my_step, HK_LOOP_GLOBAL_STEP, &f->st), &f->st);
  int64_t other = 0;
  assert_status(hk_loop_add_array(l, "s2", HK_DTYPE_I64, 0, NULL, &other, HK_LOOP_GLOBAL_STEP, &f->st), &f->st,
                HK_ALREADY_EXISTS, "global step");
  /* misuse before start */
  assert_status(hk_loop_step_begin(l, NULL, &f->st), &f->st, HK_FAILED_PRECONDITION, "not started");
  assert_status(hk_loop_step_end(l, &f->st), &f->st, HK_FAILED_PRECONDITION, "not started");
  assert_status(hk_loop_save(l, NULL, NULL, &f->st), &f->st, HK_FAILED_PRECONDITION, "not started");
  assert_true(hk_loop_should_stop(l));
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  /* misuse after start: refused, the loop carries on */
  assert_status(hk_loop_add_array(l, "late", HK_DTYPE_F32, 1, d, m.w, 0, &f->st), &f->st, HK_FAILED_PRECONDITION,
                "after hk_loop_start");
  assert_status(hk_loop_start(l, NULL, &f->st), &f->st, HK_FAILED_PRECONDITION, "already started");
  assert_status(hk_loop_step_end(l, &f->st), &f->st, HK_FAILED_PRECONDITION, "no step is open");
  assert_ok(hk_loop_step_begin(l, NULL, &f->st), &f->st);
  assert_status(hk_loop_step_begin(l, NULL, &f->st), &f->st, HK_FAILED_PRECONDITION, "already open");
  m.my_step++;
  assert_ok(hk_loop_step_end(l, &f->st), &f->st);
  assert_status(hk_loop_step(l, NULL, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "fn");
  assert_status(hk_loop_run(l, NULL, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "fn");
  assert_false(hk_loop_should_stop(l));
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  assert_status(hk_loop_step_begin(l, NULL, &f->st), &f->st, HK_FAILED_PRECONDITION, "finished");
  hk_loop_free(l);
  /* NULL everywhere */
  assert_status(hk_loop_start(NULL, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "loop");
  assert_status(hk_loop_step_begin(NULL, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "loop");
  assert_status(hk_loop_step_end(NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "loop");
  assert_status(hk_loop_save(NULL, NULL, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "loop");
  assert_status(hk_loop_finish(NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "loop");
  assert_true(hk_loop_should_stop(NULL));
  hk_loop_request_stop(NULL);
  hk_loop_free(NULL);
  assert_int_equal(hk_loop_global_step(NULL), 0);
  assert_null(hk_loop_restored_checkpoint(NULL));
  assert_null(hk_loop_executor(NULL));
  assert_null(hk_loop_session(NULL));
}

/* Freeing a started loop without finish logs a warning and writes no final
 * checkpoint (it is not a clean end). */
static void test_loop__free_without_finish(void **state) {
  fx *f = *state;
  model m;
  model_init(&m);
  hk_loop_options o = opts_for(f);
  o.save_steps = 100;
  hk_loop *l = NULL;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  add_model(l, &m, f);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  assert_ok(hk_loop_step(l, step_fn, &m, &f->st), &f->st);
  hk_loop_free(l);
  assert_logged(f->te, HK_LOG_WARNING, "without hk_loop_finish");
  char *p = ckpt_file(f, "model.ckpt-1");
  assert_false(test_path_exists(p));
  free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_loop__resume_is_bit_exact, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__fresh_start_keeps_program_values, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__opaque_state_round_trips, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__arrays_are_storage_states_are_not_H30, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__restore_in_place_and_corrupt_tensor_H27, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__state_callback_errors_propagate, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__optional_state_missing_keeps_value, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__unrestored_tensor_is_named, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__shape_mismatch_fails_start, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__hooks_bracket_the_step, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__trace_times_the_program_step, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__step_error_is_sticky_and_writes_nothing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__out_of_range_ends_cleanly, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__num_steps_counts_from_resume, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__program_owned_global_step, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__global_step_that_never_moves, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__no_resave_after_restore, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__missing_state_file_restores_newest, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__async_checkpoints_equal_sync, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__save_now, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__hook_save_refuses_bad_calls, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__zero_cadence_saves_nothing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__sigterm_stops_cleanly, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__request_stop_from_another_thread, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__log_level_reaches_every_hook, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__h47_step_counter_writes_into_checkpoint_dir_by_default, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_loop__h47_summary_dir_overrides_checkpoint_dir, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__h47_zero_log_step_count_steps_runs_no_step_counter, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__h47_own_hooks_run_in_order_step_counter_before_saver, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_loop__h47_version_2_options_get_the_default_step_counter, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__steady_state_steps_allocate_nothing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__oom_anywhere_is_clean, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__h46_nan_guard_keeps_nan_out_of_checkpoints, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__h46_named_arrays_checked_at_start, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__h45_best_k_keeps_the_best_checkpoint, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__bad_options_have_no_side_effect, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__bad_registrations_name_the_array, setup, teardown),
      cmocka_unit_test_setup_teardown(test_loop__free_without_finish, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
