/*
 * test_graph — running the embedded executor's graph: what executes, once
 * and in order (H30), variables and their initialization (H29), traces,
 * errors from kernels, closed sessions and late ops, a steady state that
 * allocates nothing (H7) and an OOM loop.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "graph_tests.h"

/* ---- runs: what executes, once, in order (H30) ----------------------------------- */

/* H30: a run executes exactly the ops the fetches and targets need, each once, in dependency order. */
static void test_graph__a_diamond_runs_each_op_once_in_order(void **state) {
  fx *f = *state;
  recorder rec;
  counting_op ops[5];
  hk_handle src, left, right, join, other, fetch[3], t[2], ins[2];
  hk_tensor r[3];
  hk_status st = HK_STATUS_INIT;
  int i;
  memset(&rec, 0, sizeof(rec));
  for (i = 0; i < 5; i++) {
    ops[i].rec = &rec;
    ops[i].id = i;
    ops[i].add = (float)(i + 1);
  }
  src = counting(f, "src", &ops[0], NULL, 0, NULL, 0);
  ins[0] = out0(f, src);
  left = counting(f, "left", &ops[1], ins, 1, NULL, 0);
  right = counting(f, "right", &ops[2], ins, 1, NULL, 0);
  ins[0] = out0(f, left);
  ins[1] = out0(f, right);
  join = counting(f, "join", &ops[3], ins, 2, NULL, 0);
  other = counting(f, "other", &ops[4], NULL, 0, NULL, 0);
  (void)other;
  open_rs(f);

  /* the same op reached through two paths, fetched twice and targeted twice */
  fetch[0] = out0(f, join);
  fetch[1] = out0(f, left);
  fetch[2] = out0(f, join);
  t[0] = join;
  t[1] = join;
  assert_ok(run(f, NULL, 0, fetch, 3, t, 2, r, &st), &st);
  for (i = 0; i < 4; i++) assert_int_equal(rec.calls[i], 1);
  assert_int_equal(rec.calls[4], 0); /* not needed, not run */
  assert_int_equal(rec.norder, 4);
  assert_int_equal(rec.order[0], 0);
  assert_int_equal(rec.order[3], 3);
  /* src = 1; left = 1 + 2 = 3; right = 1 + 3 = 4; join = 3 + 4 + 4 = 11 */
  assert_true(*(float *)r[0].data == 11.0f);
  assert_true(*(float *)r[1].data == 3.0f);
  assert_ptr_equal(r[0].data, r[2].data);
  assert_int_equal(r[0].dtype, HK_DTYPE_F32);
  assert_int_equal(r[0].rank, 0);
  assert_int_equal(r[0].nbytes, sizeof(float));

  assert_ok(run(f, NULL, 0, fetch + 1, 1, NULL, 0, r, &st), &st);
  assert_int_equal(rec.calls[0], 2);
  assert_int_equal(rec.calls[1], 2);
  assert_int_equal(rec.calls[2], 1);
  assert_int_equal(rec.calls[3], 1);
}

/* H30: control dependencies run before the op that depends on them. */
static void test_graph__control_dependencies_run_first(void **state) {
  fx *f = *state;
  recorder rec;
  counting_op a = {&rec, 0, 0}, b = {&rec, 1, 0}, c = {&rec, 2, 0};
  hk_handle ha, hb, hc, grp, ctl[2];
  hk_status st = HK_STATUS_INIT;
  memset(&rec, 0, sizeof(rec));
  ha = counting(f, "a", &a, NULL, 0, NULL, 0);
  hb = counting(f, "b", &b, NULL, 0, &ha, 1);
  ctl[0] = hb;
  ctl[1] = out0(f, ha); /* a tensor handle stands for its op */
  hc = counting(f, "c", &c, NULL, 0, ctl, 2);
  assert_ok(hk_graph_group(f->g, &grp, "grp", &hc, 1, &st), &st);
  open_rs(f);
  run_target(f, grp);
  assert_int_equal(rec.norder, 3);
  assert_int_equal(rec.order[0], 0);
  assert_int_equal(rec.order[1], 1);
  assert_int_equal(rec.order[2], 2);
  /* a target given as a tensor handle runs its op */
  ctl[0] = out0(f, hb);
  assert_ok(run(f, NULL, 0, NULL, 0, ctl, 1, NULL, &st), &st);
  assert_int_equal(rec.calls[0], 2);
  assert_int_equal(rec.calls[1], 2);
  assert_int_equal(rec.calls[2], 1);
}

/* H30: a fed tensor replaces its computation, and the kernel sees the caller's buffer. */
static void test_graph__feeds_replace_computation_zero_copy(void **state) {
  fx *f = *state;
  recorder rec;
  counting_op a = {&rec, 0, 5}, b = {&rec, 1, 0};
  hk_handle ha, hb, in, fetch[2];
  hk_feed feed;
  hk_tensor r[2];
  hk_status st = HK_STATUS_INIT;
  float fed = 40;
  memset(&rec, 0, sizeof(rec));
  ha = counting(f, "a", &a, NULL, 0, NULL, 0);
  in = out0(f, ha);
  hb = counting(f, "b", &b, &in, 1, NULL, 0);
  open_rs(f);
  feed.tensor = in;
  feed.value = hk_tensor_scalar_f32(&fed);
  fetch[0] = out0(f, hb);
  fetch[1] = in;
  assert_ok(run(f, &feed, 1, fetch, 2, NULL, 0, r, &st), &st);
  assert_int_equal(rec.calls[0], 0);
  assert_int_equal(rec.calls[1], 1);
  assert_ptr_equal(rec.input_data[1], &fed);
  assert_true(*(float *)r[0].data == 40.0f);
  assert_ptr_equal(r[1].data, &fed); /* fetching a fed tensor returns the feed */
  /* a fed op still runs when it is a target in its own right */
  assert_ok(run(f, &feed, 1, fetch, 1, &ha, 1, r, &st), &st);
  assert_int_equal(rec.calls[0], 1);
  assert_true(*(float *)r[0].data == 40.0f);
}

/* H30: a placeholder must be fed a tensor of its dtype and shape, and a bad feed is refused naming it. */
static void test_graph__placeholders_need_feeds_of_their_dtype_and_shape(void **state) {
  fx *f = *state;
  recorder rec;
  counting_op a = {&rec, 0, 0};
  int64_t d2[1] = {2}, any[2] = {-1, 3}, d3[1] = {3};
  hk_handle p, pa, ha, fetch, junk = 0x5400000000000999ull;
  hk_feed feed[2];
  hk_tensor r, val;
  hk_status st = HK_STATUS_INIT;
  float data[6] = {1, 2, 3, 4, 5, 6}, scalar = 2;
  double dd[2] = {0, 0};
  memset(&rec, 0, sizeof(rec));
  assert_ok(hk_graph_placeholder(f->g, &p, "x", HK_DTYPE_F32, 0, NULL, &st), &st);
  assert_ok(hk_graph_placeholder(f->g, &pa, "batch", HK_DTYPE_F32, 2, any, &st), &st);
  ha = counting(f, "a", &a, &p, 1, NULL, 0);
  fetch = out0(f, ha);
  open_rs(f);

  assert_status(run(f, NULL, 0, &fetch, 1, NULL, 0, &r, &st), &st, HK_INVALID_ARGUMENT,
                "You must feed a value for placeholder tensor 'x'");
  assert_int_equal(rec.calls[0], 0);
  assert_status(run(f, NULL, 0, &pa, 1, NULL, 0, &r, &st), &st, HK_INVALID_ARGUMENT,
                "You must feed a value for placeholder tensor 'batch'");

  feed[0].tensor = p;
  assert_ok(hk_tensor_init(&feed[0].value, HK_DTYPE_F64, 1, d2, dd, &st), &st);
  assert_status(run(f, feed, 1, &fetch, 1, NULL, 0, &r, &st), &st, HK_INVALID_ARGUMENT, "'x:0'");
  assert_ok(hk_tensor_init(&feed[0].value, HK_DTYPE_F32, 1, d2, data, &st), &st);
  assert_status(run(f, feed, 1, &fetch, 1, NULL, 0, &r, &st), &st, HK_INVALID_ARGUMENT, "'x:0'");
  feed[0].value = hk_tensor_scalar_f32(&scalar);
  feed[0].value.nbytes = 3;
  assert_status(run(f, feed, 1, &fetch, 1, NULL, 0, &r, &st), &st, HK_INVALID_ARGUMENT, "nbytes");
  feed[0].value = hk_tensor_scalar_f32(&scalar);
  feed[0].value.data = NULL;
  assert_status(run(f, feed, 1, &fetch, 1, NULL, 0, &r, &st), &st, HK_INVALID_ARGUMENT, "NULL data");
  feed[0].value = hk_tensor_scalar_f32(&scalar);
  assert_ok(run(f, feed, 1, &fetch, 1, NULL, 0, &r, &st), &st);
  assert_true(*(float *)r.data == 2.0f);
  assert_int_equal(rec.calls[0], 1);

  /* the same tensor fed twice */
  feed[1] = feed[0];
  assert_status(run(f, feed, 2, &fetch, 1, NULL, 0, &r, &st), &st, HK_INVALID_ARGUMENT, "'x:0'");

  /* -1 dims accept any size; the others must match */
  feed[0].tensor = pa;
  {
    int64_t s23[2] = {2, 3}, s22[2] = {2, 2};
    assert_ok(hk_tensor_init(&val, HK_DTYPE_F32, 2, s23, data, &st), &st);
    feed[0].value = val;
    assert_ok(run(f, feed, 1, &pa, 1, NULL, 0, &r, &st), &st);
    assert_int_equal(r.dims[0], 2);
    assert_ptr_equal(r.data, data);
    assert_ok(hk_tensor_init(&val, HK_DTYPE_F32, 2, s22, data, &st), &st);
    feed[0].value = val;
    assert_status(run(f, feed, 1, &pa, 1, NULL, 0, &r, &st), &st, HK_INVALID_ARGUMENT, "'batch:0'");
    assert_ok(hk_tensor_init(&val, HK_DTYPE_F32, 1, d3, data, &st), &st);
    feed[0].value = val;
    assert_status(run(f, feed, 1, &pa, 1, NULL, 0, &r, &st), &st, HK_INVALID_ARGUMENT, "'batch:0'");
  }

  /* unknown handles are named */
  feed[0].tensor = junk;
  assert_status(run(f, feed, 1, NULL, 0, NULL, 0, NULL, &st), &st, HK_INVALID_ARGUMENT, "feeds[0]");
  assert_status(run(f, NULL, 0, &junk, 1, NULL, 0, &r, &st), &st, HK_INVALID_ARGUMENT,
                "fetches[0] (#5400000000000999)");
  assert_status(run(f, NULL, 0, &ha, 1, NULL, 0, &r, &st), &st, HK_INVALID_ARGUMENT, "fetches[0] (a)");
  assert_status(run(f, NULL, 0, NULL, 0, &junk, 1, NULL, &st), &st, HK_INVALID_ARGUMENT, "targets[0]");
}

/* ---- variables and H29 -------------------------------------------------------------- */

/* H29: within one run a fetched variable is read as it was when the run started. */
static void test_graph__fetched_variable_read_at_run_start(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_handle gs, inc, one, init, fetch[3];
  hk_tensor r[3];
  int64_t v1 = 1, gsv = -1;
  hk_tensor t1 = hk_tensor_scalar_i64(&v1);
  assert_ok(hk_graph_create_global_step(f->g, &gs, &st), &st);
  assert_ok(hk_graph_constant(f->g, &one, "one", &t1, &st), &st);
  assert_ok(hk_graph_assign_add(f->g, &inc, "train", gs, one, &st), &st);
  init = init_all(f, "init");
  open_rs(f);
  run_target(f, init);

  /* stale GS: the fetched variable shows the value at run start... */
  fetch[0] = gs;
  assert_ok(run(f, NULL, 0, fetch, 1, &inc, 1, r, &st), &st);
  assert_int_equal(*(int64_t *)r[0].data, 0);
  /* ...and the variable moved on */
  assert_ok(hk_raw_session_global_step(&gsv, f->rs, &st), &st);
  assert_int_equal(gsv, 1);
  assert_int_equal(*(int64_t *)r[0].data, 0); /* the result is a copy, still valid */

  /* fetching the increment's own output yields the new value */
  fetch[0] = out0(f, inc);
  fetch[1] = gs;
  fetch[2] = one;
  assert_ok(run(f, NULL, 0, fetch, 3, NULL, 0, r, &st), &st);
  assert_int_equal(*(int64_t *)r[0].data, 2);
  assert_int_equal(*(int64_t *)r[1].data, 1);
  assert_int_equal(*(int64_t *)r[2].data, 1);
  assert_ok(hk_raw_session_global_step(&gsv, f->rs, &st), &st);
  assert_int_equal(gsv, 2);

  /* without a mutator in the run, the fetch is simply the current value */
  fetch[0] = gs;
  assert_ok(run(f, NULL, 0, fetch, 1, NULL, 0, r, &st), &st);
  assert_int_equal(*(int64_t *)r[0].data, 2);
}

/* H30: reading an uninitialized variable fails with "Attempting to use uninitialized value". */
static void test_graph__uninitialized_reads_fail(void **state) {
  fx *f = *state;
  const char *msg = "Attempting to use uninitialized value v";
  recorder rec;
  counting_op reader = {&rec, 0, 0};
  hk_status st = HK_STATUS_INIT;
  hk_handle v = var_f32(f, "v", 3), c = const_f32(f, "c", 1), inc, rd, asg, rep, rept, fetch;
  hk_tensor r;
  size_t idx;
  memset(&rec, 0, sizeof(rec));
  assert_ok(hk_graph_assign_add(f->g, &inc, "inc", v, c, &st), &st);
  assert_ok(hk_graph_assign(f->g, &asg, "asg", v, c, &st), &st);
  rd = counting(f, "reader", &reader, &v, 1, NULL, 0);
  assert_ok(hk_graph_report_uninitialized(f->g, &rep, "report", NULL, 0, &st), &st);
  rept = out0(f, rep);
  assert_ok(hk_executor_find_variable(f->ex, "v", &idx, &st), &st);
  open_rs(f);

  assert_status(run(f, NULL, 0, &v, 1, NULL, 0, &r, &st), &st, HK_FAILED_PRECONDITION, msg);
  assert_status(run(f, NULL, 0, NULL, 0, &rd, 1, NULL, &st), &st, HK_FAILED_PRECONDITION, msg);
  assert_int_equal(rec.calls[0], 0);
  assert_status(run(f, NULL, 0, NULL, 0, &inc, 1, NULL, &st), &st, HK_FAILED_PRECONDITION, msg);
  assert_status(hk_raw_session_read_variable(&r, f->rs, idx, &st), &st, HK_FAILED_PRECONDITION, msg);

  /* the readiness report names it (C72) */
  assert_ok(run(f, NULL, 0, &rept, 1, NULL, 0, &r, &st), &st);
  assert_int_equal(r.dtype, HK_DTYPE_STRING);
  assert_int_equal(r.rank, 1);
  assert_int_equal(r.dims[0], 1);
  assert_string_equal(((const char **)r.data)[0], "v");

  /* assign initializes */
  fetch = out0(f, asg);
  assert_ok(run(f, NULL, 0, &fetch, 1, NULL, 0, &r, &st), &st);
  assert_true(*(float *)r.data == 1.0f);
  assert_ok(run(f, NULL, 0, &rept, 1, NULL, 0, &r, &st), &st);
  assert_int_equal(r.dims[0], 0);
  assert_int_equal(r.nbytes, 0);
  assert_true(fetch_f32(f, v) == 1.0f);
  run_target(f, rd);
  assert_int_equal(rec.calls[0], 1);
}

static void test_graph__variables_live_per_raw_session(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_handle v = var_f32(f, "v", 5), c = const_f32(f, "c", 1), inc, init;
  hk_raw_session *other = NULL;
  hk_tensor r;
  assert_ok(hk_graph_assign_add(f->g, &inc, "inc", v, c, &st), &st);
  init = init_all(f, "init");
  open_rs(f);
  run_target(f, init);
  run_target(f, inc);
  assert_true(fetch_f32(f, v) == 6.0f);

  assert_ok(hk_raw_session_open(&other, f->ex, &st), &st);
  {
    hk_run_args a = {NULL, 0, &v, 1, NULL, 0, NULL};
    assert_status(hk_raw_session_run(other, &a, &r, NULL, &st), &st, HK_FAILED_PRECONDITION, "uninitialized value v");
    a.fetches = NULL;
    a.nfetches = 0;
    a.targets = &init;
    a.ntargets = 1;
    assert_ok(hk_raw_session_run(other, &a, NULL, NULL, &st), &st);
    a.fetches = &v;
    a.nfetches = 1;
    a.ntargets = 0;
    assert_ok(hk_raw_session_run(other, &a, &r, NULL, &st), &st);
    assert_true(*(float *)r.data == 5.0f);
  }
  assert_true(fetch_f32(f, v) == 6.0f);
  hk_raw_session_free(other);
}

static hk_code touch_kernel(void *user, hk_kernel_context *ctx, const hk_tensor *inputs, size_t ninputs,
                            hk_tensor *outputs, size_t noutputs, hk_status *status) {
  hk_tensor *v = hk_kernel_context_variable(ctx, 0);
  (void)inputs;
  (void)ninputs;
  (void)outputs;
  (void)noutputs;
  (void)status;
  *(void **)user = v->data;
  ((float *)v->data)[1] += 10;
  assert_null(hk_kernel_context_variable(ctx, 1));
  assert_non_null(hk_kernel_context_env(ctx));
  return HK_OK;
}

static void test_graph__external_variables_zero_copy(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  int64_t d2[1] = {2};
  float host[2] = {1, 2}, host2[2] = {7, 7}, nv[2] = {8, 9};
  void *seen = NULL;
  hk_handle ext, ext2, touch, init, rep;
  hk_op_def d = HK_OP_DEF_INIT;
  hk_tensor r, val;
  hk_variable_info info;
  size_t i1, i2;
  hk_raw_session *other = NULL;

  ext = var_full(f, "ext", HK_DTYPE_F32, 1, d2, HK_INIT_NONE, 0, HK_VAR_TRAINABLE, host);
  ext2 = var_full(f, "ext2", HK_DTYPE_F32, 1, d2, HK_INIT_CONSTANT, 3, 0, host2);
  d.name = "touch";
  d.kernel = touch_kernel;
  d.kernel_user = &seen;
  d.mutates = &ext;
  d.nmutates = 1;
  assert_ok(hk_graph_op(f->g, &touch, &d, &st), &st);
  init = init_all(f, "init");
  assert_ok(hk_graph_report_uninitialized(f->g, &rep, "report", NULL, 0, &st), &st);
  rep = out0(f, rep);
  assert_ok(hk_executor_find_variable(f->ex, "ext", &i1, &st), &st);
  assert_ok(hk_executor_find_variable(f->ex, "ext2", &i2, &st), &st);
  assert_ok(hk_executor_variable_info(&info, f->ex, i1, &st), &st);
  assert_true(info.flags & HK_VAR_EXTERNAL);
  assert_true(info.flags & HK_VAR_TRAINABLE);
  open_rs(f);

  /* no initializer: initialized from the start, in place */
  assert_ok(hk_raw_session_read_variable(&r, f->rs, i1, &st), &st);
  assert_ptr_equal(r.data, host);
  assert_ok(run(f, NULL, 0, &ext, 1, NULL, 0, &r, &st), &st);
  assert_ptr_equal(r.data, host);
  run_target(f, touch);
  assert_ptr_equal(seen, host);
  assert_true(host[1] == 12.0f);
  assert_ok(hk_tensor_init(&val, HK_DTYPE_F32, 1, d2, nv, &st), &st);
  assert_ok(hk_raw_session_assign_variable(f->rs, i1, &val, &st), &st);
  assert_true(host[0] == 8.0f && host[1] == 9.0f);

  /* with an initializer: uninitialized per session; the initializer writes the host buffer */
  assert_ok(run(f, NULL, 0, &rep, 1, NULL, 0, &r, &st), &st);
  assert_int_equal(r.dims[0], 1);
  assert_string_equal(((const char **)r.data)[0], "ext2");
  assert_status(hk_raw_session_read_variable(&r, f->rs, i2, &st), &st, HK_FAILED_PRECONDITION,
                "uninitialized value ext2");
  run_target(f, init);
  assert_true(host2[0] == 3.0f && host2[1] == 3.0f);
  assert_true(host[0] == 8.0f); /* init does not touch an external variable without initializer */
  assert_ok(hk_raw_session_read_variable(&r, f->rs, i2, &st), &st);
  assert_ptr_equal(r.data, host2);
  assert_ok(run(f, NULL, 0, &ext2, 1, NULL, 0, &r, &st), &st);
  assert_ptr_equal(r.data, host2);

  /* a new session shares the host buffers but not the initialized flags */
  assert_ok(hk_raw_session_open(&other, f->ex, &st), &st);
  assert_status(hk_raw_session_read_variable(&r, other, i2, &st), &st, HK_FAILED_PRECONDITION, "ext2");
  assert_ok(hk_raw_session_read_variable(&r, other, i1, &st), &st);
  assert_true(((float *)r.data)[0] == 8.0f);
  hk_raw_session_free(other);
}

static void test_graph__variables_enumerate_read_assign(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  int64_t d23[2] = {2, 3}, d32[2] = {3, 2};
  float data[6] = {1, 2, 3, 4, 5, 6};
  double dd[6] = {0};
  hk_handle w = var_full(f, "w", HK_DTYPE_F32, 2, d23, HK_INIT_ZEROS, 0, HK_VAR_TRAINABLE, NULL);
  hk_handle l = var_full(f, "l", HK_DTYPE_I32, 0, NULL, HK_INIT_CONSTANT, -4, HK_VAR_LOCAL, NULL);
  hk_variable_info info;
  hk_tensor val, r;
  assert_int_equal(hk_executor_variable_count(f->ex), 2);
  assert_ok(hk_executor_variable_info(&info, f->ex, 0, &st), &st);
  assert_string_equal(info.name, "w");
  assert_true(info.tensor == w);
  assert_int_equal(info.dtype, HK_DTYPE_F32);
  assert_int_equal(info.rank, 2);
  assert_int_equal(info.dims[0], 2);
  assert_int_equal(info.dims[1], 3);
  assert_int_equal(info.flags, HK_VAR_TRAINABLE);
  assert_ok(hk_executor_variable_info(&info, f->ex, 1, &st), &st);
  assert_true(info.tensor == l);
  assert_int_equal(info.flags, HK_VAR_LOCAL);
  assert_status(hk_executor_variable_info(&info, f->ex, 2, &st), &st, HK_OUT_OF_RANGE, "2");
  open_rs(f);

  assert_ok(hk_tensor_init(&val, HK_DTYPE_F64, 2, d23, dd, &st), &st);
  assert_status(hk_raw_session_assign_variable(f->rs, 0, &val, &st), &st, HK_INVALID_ARGUMENT,
                "dtype f64 and shape [2, 3] to variable 'w' of dtype f32 and shape [2, 3]");
  assert_ok(hk_tensor_init(&val, HK_DTYPE_F32, 2, d32, data, &st), &st);
  assert_status(hk_raw_session_assign_variable(f->rs, 0, &val, &st), &st, HK_INVALID_ARGUMENT,
                "shape [3, 2] to variable 'w' of dtype f32 and shape [2, 3]");
  assert_ok(hk_tensor_init(&val, HK_DTYPE_F32, 2, d23, data, &st), &st);
  assert_ok(hk_raw_session_assign_variable(f->rs, 0, &val, &st), &st);
  data[0] = 100; /* assign copied */
  assert_ok(hk_raw_session_read_variable(&r, f->rs, 0, &st), &st);
  assert_true(((float *)r.data)[0] == 1.0f && ((float *)r.data)[5] == 6.0f);
  assert_int_equal(r.nbytes, 24);
  assert_status(hk_raw_session_read_variable(&r, f->rs, 1, &st), &st, HK_FAILED_PRECONDITION, "uninitialized value l");
}

/* ---- trace (H30) ----------------------------------------------------------------- */

/* H30: a traced run lists the ops it executed in the run metadata. */
static void test_graph__trace_lists_executed_ops(void **state) {
  fx *f = *state;
  recorder rec;
  counting_op a = {&rec, 0, 0}, b = {&rec, 1, 0};
  hk_handle ha, hb, fetch;
  hk_run_options opt = HK_RUN_OPTIONS_INIT;
  hk_run_metadata md = HK_RUN_METADATA_INIT;
  hk_run_args args;
  hk_tensor r;
  hk_status st = HK_STATUS_INIT;
  memset(&rec, 0, sizeof(rec));
  ha = counting(f, "first", &a, NULL, 0, NULL, 0);
  fetch = out0(f, ha);
  hb = counting(f, "second", &b, &fetch, 1, NULL, 0);
  fetch = out0(f, hb);
  open_rs(f);
  memset(&args, 0, sizeof(args));
  args.fetches = &fetch;
  args.nfetches = 1;
  args.options = &opt;

  assert_ok(hk_raw_session_run(f->rs, &args, &r, &md, &st), &st);
  assert_null(md.trace);
  assert_int_equal(md.ntrace, 0);

  opt.trace_level = 1;
  assert_ok(hk_raw_session_run(f->rs, &args, &r, &md, &st), &st);
  assert_int_equal(md.ntrace, 2);
  assert_string_equal(md.trace[0].op_name, "first");
  assert_string_equal(md.trace[1].op_name, "second");
  assert_true(md.trace[0].start_secs >= 1000.0); /* the mock monotonic clock */
  assert_true(md.trace[0].start_secs <= md.trace[0].end_secs);
  assert_true(md.trace[0].end_secs <= md.trace[1].start_secs);

  opt.trace_level = 0;
  assert_ok(hk_raw_session_run(f->rs, &args, &r, &md, &st), &st);
  assert_null(md.trace);
  assert_int_equal(md.ntrace, 0);
}

/* ---- errors from kernels, closed sessions, late ops ----------------------------------- */

static hk_code failing_kernel(void *user, hk_kernel_context *ctx, const hk_tensor *inputs, size_t ninputs,
                              hk_tensor *outputs, size_t noutputs, hk_status *status) {
  (void)ctx;
  (void)inputs;
  (void)ninputs;
  (void)outputs;
  (void)noutputs;
  if (user) return hk_status_set(status, HK_ABORTED, "preempted by the test");
  return HK_INTERNAL; /* no message */
}

static void test_graph__kernel_errors_reach_the_caller(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_op_def d = HK_OP_DEF_INIT;
  hk_handle a, b;
  int flag = 1;
  d.name = "abort";
  d.kernel = failing_kernel;
  d.kernel_user = &flag;
  assert_ok(hk_graph_op(f->g, &a, &d, &st), &st);
  d.name = "silent";
  d.kernel_user = NULL;
  assert_ok(hk_graph_op(f->g, &b, &d, &st), &st);
  open_rs(f);
  assert_status(run(f, NULL, 0, NULL, 0, &a, 1, NULL, &st), &st, HK_ABORTED, "preempted by the test");
  assert_status(run(f, NULL, 0, NULL, 0, &b, 1, NULL, &st), &st, HK_INTERNAL, "'silent'");
}

/* A kernel that reports an output of an impossible rank. */
static hk_code bad_rank_kernel(void *user, hk_kernel_context *ctx, const hk_tensor *inputs, size_t ninputs,
                               hk_tensor *outputs, size_t noutputs, hk_status *status) {
  int i;
  (void)user;
  (void)ctx;
  (void)inputs;
  (void)ninputs;
  (void)noutputs;
  (void)status;
  outputs[0].rank = 1000;
  for (i = 0; i < HK_MAX_RANK; i++) outputs[0].dims[i] = 0;
  return HK_OK;
}

/*
 * H3/H30: a kernel may change the shape of its output (graph.h); when that
 * output feeds an assign whose variable it no longer matches, the run fails
 * with INVALID_ARGUMENT naming the assign. The operand check formats the
 * input's shape with its rank clamped to HK_MAX_RANK (like check_feed() and
 * variable_assign()), so it never reads past dims[] or the session's input
 * scratch (ASan: heap-buffer-overflow).
 */
static void test_graph__an_assign_of_a_kernel_output_that_no_longer_fits_fails(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_op_def d = HK_OP_DEF_INIT;
  hk_output_spec out;
  hk_handle var, op, t, assign, init;

  var = var_f32(f, "v", 1.0);
  memset(&out, 0, sizeof(out));
  out.dtype = HK_DTYPE_F32;
  out.rank = 0;
  d.name = "bad";
  d.kernel = bad_rank_kernel;
  d.outputs = &out;
  d.noutputs = 1;
  assert_ok(hk_graph_op(f->g, &op, &d, &st), &st);
  assert_ok(hk_graph_op_output(f->g, &t, op, 0, &st), &st);
  assert_ok(hk_graph_assign(f->g, &assign, "assign", var, t, &st), &st);
  assert_ok(hk_graph_init_op(f->g, &init, "init", &var, 1, &st), &st);
  open_rs(f);
  run_target(f, init);
  assert_status(run(f, NULL, 0, NULL, 0, &assign, 1, NULL, &st), &st, HK_INVALID_ARGUMENT, "assign");
}

/* H30: a run on a closed raw session fails. */
static void test_graph__run_after_close_fails(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_handle c = const_f32(f, "c", 1);
  hk_tensor r;
  open_rs(f);
  assert_true(fetch_f32(f, c) == 1.0f);
  assert_ok(hk_raw_session_close(f->rs, &st), &st);
  assert_false(hk_raw_session_is_open(f->rs));
  assert_status(run(f, NULL, 0, &c, 1, NULL, 0, &r, &st), &st, HK_FAILED_PRECONDITION, "closed");
  assert_ok(hk_raw_session_close(f->rs, &st), &st);
}

static void test_graph__ops_added_after_open_are_runnable(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_handle a = var_f32(f, "a", 1), b, init;
  open_rs(f);
  run_target(f, init_all(f, "init_a"));
  b = var_f32(f, "b", 2);
  assert_ok(hk_graph_init_op(f->g, &init, "init_b", &b, 1, &st), &st);
  run_target(f, init);
  assert_true(fetch_f32(f, a) == 1.0f);
  assert_true(fetch_f32(f, b) == 2.0f);
}

/* ---- H7: steady state allocates nothing ----------------------------------------------- */

/* H7: the graph executor's runs allocate nothing once their plans are cached. */
static void test_graph__steady_state_runs_allocate_nothing(void **state) {
  fx *f = *state;
  recorder rec;
  counting_op a = {&rec, 0, 1};
  hk_status st = HK_STATUS_INIT;
  hk_handle gs, one, inc, w, ha, p, rep, init, fetch1[3], fetch2[1];
  int64_t v1 = 1;
  hk_tensor t1 = hk_tensor_scalar_i64(&v1), r[3];
  hk_run_options opt = HK_RUN_OPTIONS_INIT;
  hk_run_metadata md = HK_RUN_METADATA_INIT;
  hk_run_args args1, args2;
  hk_feed feed;
  float x = 3;
  int i;
  memset(&rec, 0, sizeof(rec));
  assert_ok(hk_graph_create_global_step(f->g, &gs, &st), &st);
  assert_ok(hk_graph_constant(f->g, &one, "one", &t1, &st), &st);
  assert_ok(hk_graph_assign_add(f->g, &inc, "train", gs, one, &st), &st);
  assert_ok(hk_graph_placeholder(f->g, &p, "x", HK_DTYPE_F32, 0, NULL, &st), &st);
  w = var_f32(f, "w", 2);
  {
    hk_handle ins[2] = {p, w};
    ha = counting(f, "loss", &a, ins, 2, NULL, 0);
  }
  assert_ok(hk_graph_report_uninitialized(f->g, &rep, "ready", NULL, 0, &st), &st);
  init = init_all(f, "init");
  assert_ok(hk_graph_finalize(f->g, &st), &st);
  open_rs(f);
  run_target(f, init);

  feed.tensor = p;
  feed.value = hk_tensor_scalar_f32(&x);
  fetch1[0] = out0(f, ha);
  fetch1[1] = gs;
  fetch1[2] = out0(f, rep);
  memset(&args1, 0, sizeof(args1));
  args1.feeds = &feed;
  args1.nfeeds = 1;
  args1.fetches = fetch1;
  args1.nfetches = 3;
  args1.targets = &inc;
  args1.ntargets = 1;
  args1.options = &opt;
  opt.trace_level = 1;
  fetch2[0] = gs;
  memset(&args2, 0, sizeof(args2));
  args2.fetches = fetch2;
  args2.nfetches = 1;

  for (i = 0; i < 2; i++) {
    assert_ok(hk_raw_session_run(f->rs, &args1, r, &md, &st), &st);
    assert_ok(hk_raw_session_run(f->rs, &args2, r, NULL, &st), &st);
  }
  test_alloc_reset_counts(&f->te->alloc);
  for (i = 0; i < 100; i++) {
    assert_ok(hk_raw_session_run(f->rs, &args1, r, &md, &st), &st);
    assert_int_equal(*(int64_t *)r[1].data, 2 + i); /* H29: the value at run start */
    assert_true(*(float *)r[0].data == 6.0f);       /* 3 + 2 + 1 */
    assert_int_equal(r[2].dims[0], 0);
    assert_int_equal(md.ntrace, 3); /* loss, train, ready */
    assert_ok(hk_raw_session_run(f->rs, &args2, r, NULL, &st), &st);
    assert_int_equal(*(int64_t *)r[0].data, 3 + i);
  }
  assert_int_equal(test_alloc_count(&f->te->alloc), 0);
  assert_int_equal(rec.calls[0], 102);
}

/* ---- OOM loop: allocation N fails, for N = 0, 1, 2, ... until the call succeeds --------- */

static hk_code build_and_run(test_env *te, int64_t *gs_out, hk_status *st) {
  hk_graph_options o = HK_GRAPH_OPTIONS_INIT;
  hk_graph *g = NULL;
  hk_raw_session *rs = NULL;
  hk_handle gs, one, inc, init, rep;
  int64_t v1 = 1;
  hk_tensor t1 = hk_tensor_scalar_i64(&v1), r[2];
  hk_run_args a;
  hk_code rc;
  o.env = &te->env;
  rc = hk_graph_new(&g, &o, st);
  if (rc != HK_OK) return rc;
  if ((rc = hk_graph_create_global_step(g, &gs, st)) != HK_OK ||
      (rc = hk_graph_constant(g, &one, "one", &t1, st)) != HK_OK ||
      (rc = hk_graph_assign_add(g, &inc, "train", gs, one, st)) != HK_OK ||
      (rc = hk_graph_report_uninitialized(g, &rep, "rep", NULL, 0, st)) != HK_OK ||
      (rc = hk_executor_default_op(&init, hk_graph_executor(g), HK_DEFAULT_INIT_OP, st)) != HK_OK ||
      (rc = hk_executor_role_add(hk_graph_executor(g), HK_ROLE_INIT_OP, init, st)) != HK_OK ||
      (rc = hk_graph_finalize(g, st)) != HK_OK || (rc = hk_raw_session_open(&rs, hk_graph_executor(g), st)) != HK_OK)
    goto done;
  memset(&a, 0, sizeof(a));
  a.targets = &init;
  a.ntargets = 1;
  if ((rc = hk_raw_session_run(rs, &a, NULL, NULL, st)) != HK_OK) goto done;
  a.targets = &inc;
  a.fetches = &gs;
  a.nfetches = 1;
  if ((rc = hk_raw_session_run(rs, &a, r, NULL, st)) != HK_OK) goto done;
  rc = hk_raw_session_global_step(gs_out, rs, st);
done:
  hk_raw_session_free(rs);
  hk_graph_free(g);
  return rc;
}

static void test_graph__oom_loop_reports_and_leaks_nothing(void **state) {
  fx *f = *state;
  test_env *te = test_env_new();
  long n;
  int64_t gsv = 0;
  (void)f;
  for (n = 0;; n++) {
    hk_status st = HK_STATUS_INIT;
    hk_code rc;
    test_alloc_reset_counts(&te->alloc);
    test_alloc_fail_at(&te->alloc, n, 0);
    rc = build_and_run(te, &gsv, &st);
    assert_int_equal(test_alloc_live(&te->alloc), 0);
    if (rc == HK_OK) break;
    assert_status(rc, &st, HK_RESOURCE_EXHAUSTED, NULL);
    assert_true(n < 500);
  }
  assert_true(n > 10);
  assert_int_equal(gsv, 1);
  test_env_free(te);
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, graph_fixture_setup, graph_fixture_teardown)
      T(test_graph__a_diamond_runs_each_op_once_in_order),
      T(test_graph__control_dependencies_run_first),
      T(test_graph__feeds_replace_computation_zero_copy),
      T(test_graph__placeholders_need_feeds_of_their_dtype_and_shape),
      T(test_graph__fetched_variable_read_at_run_start),
      T(test_graph__uninitialized_reads_fail),
      T(test_graph__variables_live_per_raw_session),
      T(test_graph__external_variables_zero_copy),
      T(test_graph__variables_enumerate_read_assign),
      T(test_graph__trace_lists_executed_ops),
      T(test_graph__kernel_errors_reach_the_caller),
      T(test_graph__an_assign_of_a_kernel_output_that_no_longer_fits_fails),
      T(test_graph__run_after_close_fails),
      T(test_graph__ops_added_after_open_are_runnable),
      T(test_graph__steady_state_runs_allocate_nothing),
      T(test_graph__oom_loop_reports_and_leaks_nothing),
#undef T
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
