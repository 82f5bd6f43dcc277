/*
 * test_non_finite — no NaN or infinity is checkpointed unless a program
 * allows it (contract H59, C113, C115; D3.4 for the asynchronous hook; H39
 * for the host loop): the Saver refuses, before anything is renamed into
 * place, with a message naming the variable, the element and its value;
 * the opt-outs (the Saver's allow_non_finite, HK_VAR_NON_FINITE_OK, the
 * loop's flag and option) write such values as they are; every write path
 * (write_at with and without the CRC thread, appends, the writer thread)
 * scans; and a run that diverges keeps its last finite checkpoints.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <math.h>
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

/* ---- a graph whose variables are the test's own arrays -------------------------------- */

typedef struct vals {
  float w[3][4];
  double d[5];
  uint16_t h[4];  /* F16 bits */
  uint16_t bf[4]; /* BF16 bits */
  int32_t n[2];
  float ok[2]; /* HK_VAR_NON_FINITE_OK */
} vals;

typedef struct fx {
  test_env *te;
  hk_graph *g;
  hk_executor *ex;
  hk_raw_session *rs;
  char *root, *dir, *save_path;
  vals v;
  hk_status st;
} fx;

static void reset_vals(vals *v) {
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++) v->w[i][j] = (float)(i * 4 + j) * 0.5f - 2.0f;
  for (int i = 0; i < 5; i++) v->d[i] = 1e300 * (i - 2);
  for (int i = 0; i < 4; i++) v->h[i] = (uint16_t)(0x3C00 + i); /* 1, and just above */
  v->h[3] = 0x7BFF;                                             /* the largest finite half */
  for (int i = 0; i < 4; i++) v->bf[i] = (uint16_t)(0x3F80 + i);
  v->n[0] = 0x7fc00000; /* a NaN's bits, but an integer */
  v->n[1] = -1;
  v->ok[0] = HUGE_VALF;
  v->ok[1] = -HUGE_VALF;
}

static void add_ext(fx *f, const char *name, hk_dtype dt, int32_t rank, const int64_t *dims, void *data,
                    uint32_t flags) {
  hk_variable_def d = HK_VARIABLE_DEF_INIT;
  hk_handle h;
  d.name = name;
  d.dtype = dt;
  d.rank = rank;
  d.dims = dims;
  d.flags = flags;
  d.external_data = data;
  assert_ok(hk_graph_variable(f->g, &h, &d, &f->st), &f->st);
}

static int setup(void **state) {
  static const int64_t wd[2] = {3, 4}, dd[1] = {5}, hd[1] = {4}, nd[1] = {2};
  fx *f = calloc(1, sizeof *f);
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  assert_non_null(f);
  f->te = test_env_new();
  go.env = &f->te->env;
  assert_ok(hk_graph_new(&f->g, &go, &f->st), &f->st);
  f->ex = hk_graph_executor(f->g);
  reset_vals(&f->v);
  add_ext(f, "w", HK_DTYPE_F32, 2, wd, f->v.w, HK_VAR_TRAINABLE);
  add_ext(f, "d", HK_DTYPE_F64, 1, dd, f->v.d, 0);
  add_ext(f, "h", HK_DTYPE_F16, 1, hd, f->v.h, 0);
  add_ext(f, "bf", HK_DTYPE_BF16, 1, hd, f->v.bf, 0);
  add_ext(f, "n", HK_DTYPE_I32, 1, nd, f->v.n, 0);
  add_ext(f, "ok", HK_DTYPE_F32, 1, nd, f->v.ok, HK_VAR_NON_FINITE_OK);
  assert_ok(hk_raw_session_open(&f->rs, f->ex, &f->st), &f->st);
  ckpt_dir_new("non-finite", &f->root, &f->dir, &f->save_path);
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

static hk_saver *saver_with(fx *f, uint32_t version, int allow, const hk_env *env) {
  hk_saver_options o;
  hk_saver *s = NULL;
  assert_int_equal(hk_saver_options_init(&o, version), HK_OK);
  o.env = env ? env : &f->te->env;
  o.executor = f->ex;
  o.max_to_keep = 2;
  o.allow_non_finite = allow;
  assert_ok(hk_saver_new(&s, &o, &f->st), &f->st);
  return s;
}

static hk_code save(fx *f, hk_saver *s, int64_t step) {
  hk_status_clear(&f->st);
  return hk_saver_save(NULL, s, f->rs, f->save_path, step, HK_SAVE_DEFAULT, &f->st);
}

/* The directory's names and the state file's bytes, to compare before and after. */
static char *snapshot_dir(const char *dir) {
  char *state = test_path(dir, "checkpoint");
  size_t n = 0;
  char *bytes = test_read_file(state, &n);
  char *out = calloc(1, 64 + n);
  assert_non_null(out);
  snprintf(out, 64, "%d entries;", test_dir_count(dir));
  if (bytes) memcpy(out + strlen(out), bytes, n);
  free(bytes);
  free(state);
  return out;
}

/* A tensor of checkpoint <dir>/model.ckpt-<step>, read and CRC-checked. */
static void read_tensor(fx *f, int64_t step, const char *name, void *dst, size_t n) {
  char prefix[64];
  char *path;
  hk_checkpoint_reader *r = NULL;
  size_t i;
  snprintf(prefix, sizeof prefix, "model.ckpt-%lld", (long long)step);
  path = test_path(f->dir, prefix);
  assert_ok(hk_checkpoint_reader_open(&r, &f->te->env, path, &f->st), &f->st);
  assert_ok(hk_checkpoint_reader_find(r, name, &i, &f->st), &f->st);
  assert_ok(hk_checkpoint_reader_read(r, i, dst, n, &f->st), &f->st);
  hk_checkpoint_reader_free(r);
  free(path);
}

/* ---- the Saver ------------------------------------------------------------------------------ */

/* H59: a NaN in w makes the save of step 3 fail with INVALID_ARGUMENT naming
 * the variable, the element (coordinates and flat index), its value, the
 * file and the opt-outs, and the directory is exactly as it was: no data
 * file, no temporary, the state file byte for byte, nothing rotated out —
 * the finite checkpoints 1 and 2 are kept. Made finite again, step 3 saves
 * and retention goes on as before. */
static void test_non_finite__saver_refuses_nan_and_changes_nothing(void **state) {
  fx *f = *state;
  hk_saver *s = saver_with(f, HK_SAVER_OPTIONS_VERSION, 0, NULL);
  char *before, *after;
  size_t n = 0;
  const char *const *list;

  assert_ok(save(f, s, 1), &f->st);
  assert_ok(save(f, s, 2), &f->st);
  before = snapshot_dir(f->dir);
  f->v.w[1][2] = NAN;
  assert_status(save(f, s, 3), &f->st, HK_INVALID_ARGUMENT,
                "Refusing to checkpoint a non-finite value: variable 'w' holds NaN at element [1, 2] (flat index 6)");
  assert_non_null(strstr(f->st.message, "model.ckpt-3.safetensors"));
  assert_non_null(strstr(f->st.message, "allow_non_finite"));
  assert_non_null(strstr(f->st.message, "HK_VAR_NON_FINITE_OK"));
  after = snapshot_dir(f->dir);
  assert_string_equal(before, after);
  assert_int_equal(test_dir_count_matching(f->dir, ".tmp-"), 0);
  assert_false(ckpt_data_exists(f->dir, "model.ckpt", 3));
  list = hk_saver_checkpoints(s, &n);
  assert_int_equal(n, 2);
  assert_non_null(strstr(list[1], "model.ckpt-2"));
  free(before);
  free(after);

  f->v.w[1][2] = 0.25f;
  assert_ok(save(f, s, 3), &f->st);
  assert_false(ckpt_data_exists(f->dir, "model.ckpt", 1));
  assert_true(ckpt_data_exists(f->dir, "model.ckpt", 2));
  assert_true(ckpt_data_exists(f->dir, "model.ckpt", 3));
  hk_saver_free(s);
}

/* H59 for every floating dtype and every kind of non-finite value, each
 * named as it is; an integer holding a NaN's bits, the largest finite half
 * and a flagged variable's infinities are written as they are. */
static void test_non_finite__every_floating_dtype_is_scanned(void **state) {
  fx *f = *state;
  hk_saver *s = saver_with(f, HK_SAVER_OPTIONS_VERSION, 0, NULL);
  struct {
    int which;
    size_t at;
    uint64_t bits;
    const char *want;
  } cases[] = {
      {0, 0, 0x7f800000u, "variable 'w' holds Inf at element [0, 0] (flat index 0)"},
      {0, 11, 0xff800000u, "variable 'w' holds -Inf at element [2, 3] (flat index 11)"},
      {0, 5, 0x7fffffffu, "variable 'w' holds NaN at element [1, 1] (flat index 5)"},
      {1, 4, UINT64_C(0xfff0000000000000), "variable 'd' holds -Inf at element 4"},
      {1, 0, UINT64_C(0x7ff0000000000001), "variable 'd' holds NaN at element 0"},
      {2, 0, 0x7c00u, "variable 'h' holds Inf at element 0"},
      {2, 3, 0xfe00u, "variable 'h' holds NaN at element 3"},
      {3, 2, 0xff80u, "variable 'bf' holds -Inf at element 2"},
      {3, 1, 0x7fc1u, "variable 'bf' holds NaN at element 1"},
  };
  int64_t step = 1;
  assert_ok(save(f, s, step++), &f->st); /* n holds a NaN's bits, ok two infinities, h a large half */
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    reset_vals(&f->v);
    if (cases[c].which == 0) {
      uint32_t b = (uint32_t)cases[c].bits;
      memcpy(&f->v.w[cases[c].at / 4][cases[c].at % 4], &b, 4);
    } else if (cases[c].which == 1) {
      memcpy(&f->v.d[cases[c].at], &cases[c].bits, 8);
    } else if (cases[c].which == 2) {
      f->v.h[cases[c].at] = (uint16_t)cases[c].bits;
    } else {
      f->v.bf[cases[c].at] = (uint16_t)cases[c].bits;
    }
    assert_status(save(f, s, step), &f->st, HK_INVALID_ARGUMENT, cases[c].want);
    assert_false(ckpt_data_exists(f->dir, "model.ckpt", step));
  }
  reset_vals(&f->v);
  assert_ok(save(f, s, step), &f->st);
  {
    float ok[2];
    int32_t n[2];
    read_tensor(f, step, "ok", ok, sizeof ok);
    read_tensor(f, step, "n", n, sizeof n);
    assert_true(isinf(ok[0]) && ok[0] > 0);
    assert_true(isinf(ok[1]) && ok[1] < 0);
    assert_int_equal(n[0], 0x7fc00000);
  }
  hk_saver_free(s);
}

/* The opt-out: allow_non_finite writes NaN and infinities of every
 * variable as they are (TensorFlow's behaviour); the default refuses. */
static void test_non_finite__allow_option_and_the_default_refusal(void **state) {
  fx *f = *state;
  hk_saver *allow = saver_with(f, HK_SAVER_OPTIONS_VERSION, 1, NULL);
  hk_saver *v1 = saver_with(f, HK_SAVER_OPTIONS_VERSION, 0, NULL);
  hk_saver_options o;
  float w[12];
  uint32_t bits;

  f->v.w[0][1] = NAN;
  f->v.d[2] = -HUGE_VAL;
  assert_ok(save(f, allow, 1), &f->st);
  read_tensor(f, 1, "w", w, sizeof w);
  assert_true(isnan(w[1]));
  /* The first in the file's (bytewise name) order is named. */
  assert_status(save(f, v1, 2), &f->st, HK_INVALID_ARGUMENT, "variable 'd' holds -Inf at element 2");
  /* _init fills every field, allow_non_finite's default included; another
   * version writes nothing. */
  memset(&o, 0xAB, sizeof o);
  assert_int_equal(hk_saver_options_init(&o, HK_SAVER_OPTIONS_VERSION + 1), HK_INVALID_ARGUMENT);
  memcpy(&bits, &o.allow_non_finite, sizeof bits);
  assert_int_equal(bits, 0xABABABABu);
  assert_int_equal(hk_saver_options_init(&o, HK_SAVER_OPTIONS_VERSION), HK_OK);
  assert_int_equal(o.allow_non_finite, 0);
  hk_saver_free(allow);
  hk_saver_free(v1);
}

/* Every write path scans, and names the right element: a 9 MiB tensor
 * (its CRCs on a second thread beside write_at), and file systems without
 * write_at (appends, after a CRC pass) and of vtable version 1; the value
 * in the first piece, in the middle and as the very last element. */
static void test_non_finite__every_write_path_refuses(void **state) {
  fx *f = *state;
  static const size_t n = ((size_t)9 << 20) / sizeof(float);
  static hk_fs_vtable append_only, v1;
  const size_t where[3] = {3, n / 2 + 1, n - 1};
  float *big = calloc(n, sizeof *big);
  int64_t dims[1];
  hk_graph *g;
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_variable_def d = HK_VARIABLE_DEF_INIT;
  hk_raw_session *rs = NULL;
  hk_handle h;

  assert_non_null(big);
  dims[0] = (int64_t)n;
  go.env = &f->te->env;
  assert_ok(hk_graph_new(&g, &go, &f->st), &f->st);
  d.name = "big";
  d.dtype = HK_DTYPE_F32;
  d.rank = 1;
  d.dims = dims;
  d.external_data = big;
  assert_ok(hk_graph_variable(g, &h, &d, &f->st), &f->st);
  assert_ok(hk_raw_session_open(&rs, hk_graph_executor(g), &f->st), &f->st);
  append_only = *hk_fs_posix();
  append_only.write_at = NULL;
  v1 = *hk_fs_posix();
  v1.version = 1;
  for (int fs = 0; fs < 3; fs++) {
    hk_env env = f->te->env;
    hk_saver_options o = HK_SAVER_OPTIONS_INIT;
    hk_saver *s = NULL;
    if (fs == 1) env.fs = &append_only;
    if (fs == 2) env.fs = &v1;
    o.env = &env;
    o.executor = hk_graph_executor(g);
    assert_ok(hk_saver_new(&s, &o, &f->st), &f->st);
    for (int k = 0; k < 3; k++) {
      char want[96];
      memset(big, 0, n * sizeof *big);
      big[where[k]] = k == 1 ? -HUGE_VALF : NAN;
      snprintf(want, sizeof want, "variable 'big' holds %s at element %zu,", k == 1 ? "-Inf" : "NaN", where[k]);
      hk_status_clear(&f->st);
      assert_status(hk_saver_save(NULL, s, rs, f->save_path, 5, HK_SAVE_DEFAULT, &f->st), &f->st, HK_INVALID_ARGUMENT,
                    want);
      assert_int_equal(test_dir_count(f->dir), 0);
    }
    big[where[2]] = 1.0f;
    assert_ok(hk_saver_save(NULL, s, rs, f->save_path, 5, HK_SAVE_DEFAULT, &f->st), &f->st);
    assert_true(ckpt_data_exists(f->dir, "model.ckpt", 5));
    hk_saver_free(s);
    assert_int_equal(test_tmpdir_remove(f->dir), 0);
    assert_int_equal(mkdir(f->dir, 0755), 0);
  }
  hk_raw_session_free(rs);
  hk_graph_free(g);
  free(big);
}

/* ---- the checkpoint hooks ------------------------------------------------------------------- */

/* A session over a fake executor with "w" (F32 [4]) and one checkpoint hook
 * saving every step. */
typedef struct hooked_run {
  fake_executor *fx;
  hk_executor *ex;
  hk_handle gs, train, w;
  hk_hook *hook;
  hk_session *s;
} hooked_run;

static void hooked_run_open(fx *f, hooked_run *r, int async) {
  static const int64_t dims[1] = {4};
  static const float w0[4] = {1, 2, 3, 4};
  hk_checkpoint_saver_options o = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
  memset(r, 0, sizeof *r);
  r->fx = fake_training_executor(f->te, &r->ex, &r->gs, &r->train);
  r->w = fake_executor_add_variable(r->fx, "w", HK_DTYPE_F32, 1, dims, HK_VAR_TRAINABLE, w0);
  o.env = &f->te->env;
  o.checkpoint_dir = f->dir;
  o.save_steps = 1;
  o.block_when_busy = 1; /* every step's save is taken, the one in flight awaited first (D3.3) */
  if (async)
    assert_ok(hk_async_checkpoint_saver_hook_new(&r->hook, &o, &f->st), &f->st);
  else
    assert_ok(hk_checkpoint_saver_hook_new(&r->hook, &o, &f->st), &f->st);
  assert_ok(one_hook_session_new(&r->s, &f->te->env, HK_SESSION_SINGULAR, r->ex, &r->hook, NULL, &f->st), &f->st);
}

static hk_code hooked_step(hooked_run *r, hk_status *st) {
  hk_run_args args;
  memset(&args, 0, sizeof args);
  args.targets = &r->train;
  args.ntargets = 1;
  return hk_session_run(r->s, &args, NULL, NULL, st);
}

static void hooked_set_nan(fx *f, hooked_run *r) {
  static const int64_t dims[1] = {4};
  float w[4] = {1, 2, NAN, 4};
  hk_tensor t;
  size_t idx;
  assert_ok(hk_executor_find_variable(r->ex, "w", &idx, &f->st), &f->st);
  assert_ok(hk_tensor_init(&t, HK_DTYPE_F32, 1, dims, w, &f->st), &f->st);
  assert_ok(hk_raw_session_assign_variable(hk_session_raw_session(r->s), idx, &t, &f->st), &f->st);
}

static void hooked_run_close(hooked_run *r, hk_code with) {
  (void)hk_session_close(r->s, with, NULL);
  hk_session_free(r->s);
  hk_hook_free(r->hook);
  fake_executor_free(r->fx);
}

/* CheckpointSaverHook: the save of the step that left w NaN fails that
 * step's after_run with the refusal, unchanged (C98, C115); checkpoint 1
 * stays the newest. */
static void test_non_finite__checkpoint_hook_fails_the_step(void **state) {
  fx *f = *state;
  hooked_run r;
  hooked_run_open(f, &r, 0);
  assert_ok(hooked_step(&r, &f->st), &f->st); /* saves 1 */
  hooked_set_nan(f, &r);
  assert_status(hooked_step(&r, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "Refusing to checkpoint a non-finite value: variable 'w' holds NaN at element 2");
  hooked_run_close(&r, HK_INVALID_ARGUMENT);
  assert_true(ckpt_data_exists(f->dir, "model.ckpt", 1));
  assert_false(ckpt_data_exists(f->dir, "model.ckpt", 2));
}

/* AsyncCheckpointSaverHook: its writer thread refuses the snapshot of step
 * 2, and the refusal comes back at the next after_run, as its other write
 * errors do (D3.4); nothing of step 2 is in the directory. */
static void test_non_finite__async_hook_returns_the_refusal_at_the_next_run(void **state) {
  fx *f = *state;
  hooked_run r;
  hk_checkpoint_state *cs = NULL;
  hooked_run_open(f, &r, 1);
  assert_ok(hooked_step(&r, &f->st), &f->st); /* snapshot 1 */
  hooked_set_nan(f, &r);
  assert_ok(hooked_step(&r, &f->st), &f->st); /* 1 written; snapshot 2, NaN, to the writer */
  assert_status(hooked_step(&r, &f->st), &f->st, HK_INVALID_ARGUMENT, "Checkpoint for step 2 into ");
  assert_non_null(strstr(f->st.message, "Refusing to checkpoint a non-finite value: variable 'w' holds NaN"));
  hooked_run_close(&r, HK_INVALID_ARGUMENT);
  assert_true(ckpt_data_exists(f->dir, "model.ckpt", 1));
  assert_false(ckpt_data_exists(f->dir, "model.ckpt", 2));
  assert_int_equal(test_dir_count_matching(f->dir, ".tmp-"), 0);
  assert_ok(hk_checkpoint_state_get(&cs, &f->te->env, f->dir, NULL, &f->st), &f->st);
  assert_non_null(strstr(hk_checkpoint_state_model_path(cs), "model.ckpt-1"));
  hk_checkpoint_state_free(cs);
}

/* ---- the host loop --------------------------------------------------------------------------- */

typedef struct prog {
  float w[4];
  float loss;
  float val;  /* what the early stopping watches */
  int bad_at; /* the step (from 1) that makes w[1] NaN; 0: never */
  int steps;
} prog;

static hk_code prog_step(void *user, int64_t step, hk_status *st) {
  prog *p = user;
  (void)step;
  (void)st;
  p->steps++;
  for (int i = 0; i < 4; i++) p->w[i] += 0.5f;
  if (p->steps == p->bad_at) p->w[1] = NAN;
  p->loss = p->w[0];
  return HK_OK;
}

static hk_loop *loop_with(fx *f, prog *p, uint32_t version, int allow, int keep, unsigned wflags) {
  static const int64_t dims[1] = {4};
  hk_loop_options o;
  hk_loop *l = NULL;
  assert_int_equal(hk_loop_options_init(&o, version), HK_OK);
  o.env = &f->te->env;
  o.checkpoint_dir = f->dir;
  o.save_steps = 1;
  o.max_to_keep = keep;
  o.last_step = 10; /* bounded, with or without a refusal */
  o.handle_signals = 0;
  o.allow_non_finite = allow;
  assert_ok(hk_loop_new(&l, &o, &f->st), &f->st);
  assert_ok(hk_loop_add_array(l, "w", HK_DTYPE_F32, 1, dims, p->w, wflags, &f->st), &f->st);
  assert_ok(hk_loop_add_array(l, "loss", HK_DTYPE_F32, 0, NULL, &p->loss, HK_LOOP_NO_CHECKPOINT, &f->st), &f->st);
  return l;
}

/* The run: no guard, a checkpoint every step, max_to_keep 2, and
 * step 4 leaves w NaN. Its save is refused, which fails the loop (H39):
 * step_end returns the refusal, every later call returns it again,
 * hk_loop_finish() too and writes nothing more; the newest checkpoint is
 * step 3's, and 2 and 3 (both finite) are there and verify. */
static void test_non_finite__host_loop_keeps_its_last_finite_checkpoints(void **state) {
  fx *f = *state;
  prog p;
  hk_loop *l;
  char *latest = NULL;
  hk_code rc = HK_OK;
  memset(&p, 0, sizeof p);
  p.bad_at = 4;
  l = loop_with(f, &p, HK_LOOP_OPTIONS_VERSION, 0, 2, 0);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  while (!hk_loop_should_stop(l) && rc == HK_OK) rc = hk_loop_step(l, prog_step, &p, &f->st);
  assert_status(rc, &f->st, HK_INVALID_ARGUMENT, "variable 'w' holds NaN at element 1");
  assert_int_equal(p.steps, 4);
  assert_true(hk_loop_should_stop(l));
  assert_status(hk_loop_step(l, prog_step, &p, &f->st), &f->st, HK_INVALID_ARGUMENT, "holds NaN at element 1");
  assert_status(hk_loop_finish(l, &f->st), &f->st, HK_INVALID_ARGUMENT, "model.ckpt-4.safetensors");
  hk_loop_free(l);
  assert_int_equal(p.steps, 4);
  assert_false(ckpt_data_exists(f->dir, "model.ckpt", 4));
  assert_false(ckpt_data_exists(f->dir, "model.ckpt", 1));
  assert_ok(hk_checkpoint_latest(&latest, &f->te->env, f->dir, NULL, &f->st), &f->st);
  assert_non_null(strstr(latest, "model.ckpt-3"));
  hk_env_free(&f->te->env, latest);
  for (int64_t step = 2; step <= 3; step++) {
    float w[4];
    read_tensor(f, step, "w", w, sizeof w);
    for (int i = 0; i < 4; i++) assert_true(isfinite(w[i]));
  }
}

/* The loop's opt-outs: an array flagged HK_LOOP_NON_FINITE_OK, and the
 * option allow_non_finite, write NaN as it is and the loop goes on; the
 * default refuses. */
static void test_non_finite__host_loop_flag_and_option(void **state) {
  fx *f = *state;
  for (int variant = 0; variant < 3; variant++) {
    prog p;
    hk_loop *l;
    float w[4];
    memset(&p, 0, sizeof p);
    p.bad_at = 1;
    l = variant == 0   ? loop_with(f, &p, HK_LOOP_OPTIONS_VERSION, 0, 5, HK_LOOP_NON_FINITE_OK)
        : variant == 1 ? loop_with(f, &p, HK_LOOP_OPTIONS_VERSION, 1, 5, 0)
                       : loop_with(f, &p, HK_LOOP_OPTIONS_VERSION, 0, 5, 0);
    assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
    if (variant < 2) {
      for (int i = 0; i < 3; i++) assert_ok(hk_loop_step(l, prog_step, &p, &f->st), &f->st);
      assert_ok(hk_loop_finish(l, &f->st), &f->st);
      read_tensor(f, 3, "w", w, sizeof w);
      assert_true(isnan(w[1]));
    } else {
      assert_status(hk_loop_step(l, prog_step, &p, &f->st), &f->st, HK_INVALID_ARGUMENT, "variable 'w' holds NaN");
      assert_status(hk_loop_finish(l, &f->st), &f->st, HK_INVALID_ARGUMENT, "variable 'w' holds NaN");
    }
    hk_loop_free(l);
    assert_int_equal(test_tmpdir_remove(f->dir), 0);
    assert_int_equal(mkdir(f->dir, 0755), 0);
  }
}

/* The early-stopping state the loop registers holds +Inf as its best value
 * while no evaluation has improved (a NaN monitor never does): the loop
 * registers it as allowed to (H46, H59), so the run checkpoints normally
 * and the checkpoint holds the infinity. */
static void test_non_finite__early_stopping_state_is_checkpointed_with_its_infinity(void **state) {
  fx *f = *state;
  prog p;
  hk_loop *l;
  hk_hook *es = NULL;
  hk_early_stopping_options eo = HK_EARLY_STOPPING_OPTIONS_INIT;
  double es_state[HK_EARLY_STOPPING_STATE_SIZE];
  memset(&p, 0, sizeof p);
  p.val = NAN;
  l = loop_with(f, &p, HK_LOOP_OPTIONS_VERSION, 0, 5, 0);
  assert_ok(hk_loop_add_array(l, "val", HK_DTYPE_F32, 0, NULL, &p.val, HK_LOOP_NO_CHECKPOINT, &f->st), &f->st);
  eo.env = &f->te->env;
  eo.monitor = "val";
  eo.patience = 100;
  eo.state = "early_stopping";
  assert_ok(hk_early_stopping_hook_new(&es, &eo, &f->st), &f->st);
  assert_ok(hk_loop_add_early_stopping(l, es, &f->st), &f->st);
  assert_ok(hk_loop_start(l, NULL, &f->st), &f->st);
  for (int i = 0; i < 2; i++) assert_ok(hk_loop_step(l, prog_step, &p, &f->st), &f->st);
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  hk_hook_free(es);
  read_tensor(f, 2, "early_stopping", es_state, sizeof es_state);
  assert_true(es_state[0] >= 1);                      /* evaluations */
  assert_true(isinf(es_state[1]) && es_state[1] > 0); /* no best yet */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_non_finite__saver_refuses_nan_and_changes_nothing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_non_finite__every_floating_dtype_is_scanned, setup, teardown),
      cmocka_unit_test_setup_teardown(test_non_finite__allow_option_and_the_default_refusal, setup, teardown),
      cmocka_unit_test_setup_teardown(test_non_finite__every_write_path_refuses, setup, teardown),
      cmocka_unit_test_setup_teardown(test_non_finite__checkpoint_hook_fails_the_step, setup, teardown),
      cmocka_unit_test_setup_teardown(test_non_finite__async_hook_returns_the_refusal_at_the_next_run, setup, teardown),
      cmocka_unit_test_setup_teardown(test_non_finite__host_loop_keeps_its_last_finite_checkpoints, setup, teardown),
      cmocka_unit_test_setup_teardown(test_non_finite__host_loop_flag_and_option, setup, teardown),
      cmocka_unit_test_setup_teardown(test_non_finite__early_stopping_state_is_checkpointed_with_its_infinity, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
