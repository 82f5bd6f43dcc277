/*
 * test_graph — building the embedded executor's graph: lifecycle, names and
 * handles (H30), the builders' argument errors, what finalize forbids (C3),
 * roles, the global step and default ops (C61, C62, C143, C144), the
 * description and control ops.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "graph_tests.h"

/* ---- lifecycle ------------------------------------------------------------ */

static void test_graph__new_validates_arguments(void **state) {
  fx *f = *state;
  hk_graph *g = (hk_graph *)1;
  hk_graph_options o = HK_GRAPH_OPTIONS_INIT;
  hk_env bad = HK_ENV_INIT;
  hk_status st = HK_STATUS_INIT;
  assert_status(hk_graph_new(NULL, NULL, &st), &st, HK_INVALID_ARGUMENT, "out");
  o.version = 7;
  assert_status(hk_graph_new(&g, &o, &st), &st, HK_INVALID_ARGUMENT, "opts->version");
  assert_null(g);
  o.version = HK_GRAPH_OPTIONS_VERSION;
  bad.version = 99;
  o.env = &bad;
  assert_status(hk_graph_new(&g, &o, &st), &st, HK_INVALID_ARGUMENT, "opts->env");
  assert_null(g);
  /* defaults: NULL options */
  assert_ok(hk_graph_new(&g, NULL, &st), &st);
  assert_non_null(hk_graph_executor(g));
  assert_ptr_equal(hk_executor_self(hk_graph_executor(g)), g);
  hk_graph_free(g);
  hk_graph_free(NULL);
  assert_null(hk_graph_executor(NULL));
  assert_status(hk_graph_finalize(NULL, &st), &st, HK_INVALID_ARGUMENT, "g");
  (void)f;
}

/* The graph, its executor and its sessions are freed exactly once each:
 * the fixture's teardown checks no block stays live, and the counting
 * allocator would see a double free as a negative live count. */
static void test_graph__free_releases_everything(void **state) {
  fx *f = *state;
  hk_handle v = var_f32(f, "v", 1.0), init = init_all(f, "init"), gs;
  hk_status st = HK_STATUS_INIT;
  assert_ok(hk_graph_create_global_step(f->g, &gs, &st), &st);
  assert_ok(hk_executor_role_add(f->ex, "custom", v, &st), &st);
  open_rs(f);
  run_target(f, init);
  assert_true(fetch_f32(f, v) == 1.0f);
  assert_true(test_alloc_live(&f->te->alloc) > 0);
}

/* ---- names and handles (H30) ----------------------------------------------- */

/* H30: names and handles resolve to the graph's tensors and ops, and an unknown one is NOT_FOUND naming it. */
static void test_graph__names_and_handles_resolve_or_are_not_found(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_handle v = var_f32(f, "scope/v", 0), h, vop, two;
  hk_op_def d = HK_OP_DEF_INIT;
  hk_output_spec outs[2] = {{HK_DTYPE_F32, 0, {0}}, {HK_DTYPE_I64, 1, {3}}};
  counting_op c = {NULL, 0, 0};
  recorder rec;
  memset(&rec, 0, sizeof(rec));
  c.rec = &rec;

  assert_ok(hk_executor_resolve_tensor(&h, f->ex, "scope/v:0", &st), &st);
  assert_true(h == v);
  assert_ok(hk_executor_resolve_tensor(&h, f->ex, "scope/v", &st), &st);
  assert_true(h == v);
  assert_ok(hk_executor_resolve_op(&vop, f->ex, "scope/v", &st), &st);
  assert_true(vop != HK_NO_HANDLE && vop != v);
  assert_string_equal(hk_executor_handle_name(f->ex, v), "scope/v:0");
  assert_string_equal(hk_executor_handle_name(f->ex, vop), "scope/v");

  d.name = "two";
  d.kernel = counting_kernel;
  d.kernel_user = &c;
  d.outputs = outs;
  d.noutputs = 2;
  assert_ok(hk_graph_op(f->g, &two, &d, &st), &st);
  assert_ok(hk_executor_resolve_tensor(&h, f->ex, "two:1", &st), &st);
  assert_string_equal(hk_executor_handle_name(f->ex, h), "two:1");
  {
    hk_handle o1;
    assert_ok(hk_graph_op_output(f->g, &o1, two, 1, &st), &st);
    assert_true(o1 == h);
    assert_status(hk_graph_op_output(f->g, &o1, two, 2, &st), &st, HK_OUT_OF_RANGE, "two");
    assert_status(hk_graph_op_output(f->g, &o1, two, -1, &st), &st, HK_OUT_OF_RANGE, "index");
    assert_status(hk_graph_op_output(f->g, &o1, v, 0, &st), &st, HK_NOT_FOUND, "op");
    assert_status(hk_graph_op_output(f->g, NULL, two, 0, &st), &st, HK_INVALID_ARGUMENT, "out");
  }

  assert_status(hk_executor_resolve_tensor(&h, f->ex, "nope", &st), &st, HK_NOT_FOUND, "'nope'");
  assert_true(h == HK_NO_HANDLE);
  assert_status(hk_executor_resolve_tensor(&h, f->ex, "scope/v:1", &st), &st, HK_NOT_FOUND, "'scope/v:1'");
  assert_status(hk_executor_resolve_tensor(&h, f->ex, "two:2", &st), &st, HK_NOT_FOUND, "'two:2'");
  assert_status(hk_executor_resolve_tensor(&h, f->ex, "two:x", &st), &st, HK_NOT_FOUND, "'two:x'");
  assert_status(hk_executor_resolve_tensor(&h, f->ex, "two:", &st), &st, HK_NOT_FOUND, "'two:'");
  assert_status(hk_executor_resolve_tensor(&h, f->ex, "two:01", &st), &st, HK_NOT_FOUND, "'two:01'");
  assert_status(hk_executor_resolve_tensor(&h, f->ex, "two:-1", &st), &st, HK_NOT_FOUND, "'two:-1'");
  assert_status(hk_executor_resolve_op(&h, f->ex, "scope", &st), &st, HK_NOT_FOUND, "'scope'");
  /* an op without outputs has no tensor "grp:0" */
  assert_ok(hk_graph_group(f->g, &h, "grp", NULL, 0, &st), &st);
  assert_status(hk_executor_resolve_tensor(&h, f->ex, "grp", &st), &st, HK_NOT_FOUND, "'grp'");
  /* unknown handles have no name of their own */
  assert_string_not_equal(hk_executor_handle_name(f->ex, (hk_handle)12345), "scope/v");
}

/* ---- builder argument errors ------------------------------------------------- */

static void test_graph__variable_validates_every_argument(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_variable_def d = HK_VARIABLE_DEF_INIT;
  int64_t dims[2] = {2, 3}, neg[1] = {-1}, huge[2] = {INT64_MAX, INT64_MAX};
  char longname[300];
  hk_handle h = 1;
  d.name = "w";
  d.dtype = HK_DTYPE_F32;
  d.rank = 2;
  d.dims = dims;

  assert_status(hk_graph_variable(NULL, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "g");
  assert_status(hk_graph_variable(f->g, NULL, &d, &st), &st, HK_INVALID_ARGUMENT, "out");
  assert_status(hk_graph_variable(f->g, &h, NULL, &st), &st, HK_INVALID_ARGUMENT, "def");
  assert_true(h == HK_NO_HANDLE);
  d.version = 0;
  assert_status(hk_graph_variable(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "def->version");
  d.version = HK_VARIABLE_DEF_VERSION;
  d.name = NULL;
  assert_status(hk_graph_variable(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "def->name");
  d.name = "";
  assert_status(hk_graph_variable(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "def->name");
  d.name = "bad name";
  assert_status(hk_graph_variable(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "def->name");
  d.name = "bad:0";
  assert_status(hk_graph_variable(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "def->name");
  memset(longname, 'a', sizeof(longname));
  longname[256] = '\0';
  d.name = longname;
  assert_status(hk_graph_variable(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "def->name");
  longname[255] = '\0'; /* 255 bytes is allowed */
  assert_ok(hk_graph_variable(f->g, &h, &d, &st), &st);
  d.name = "w";
  d.dtype = HK_DTYPE_INVALID;
  assert_status(hk_graph_variable(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "def->dtype");
  d.dtype = HK_DTYPE_STRING;
  assert_status(hk_graph_variable(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "def->dtype");
  d.dtype = (hk_dtype)999;
  assert_status(hk_graph_variable(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "def->dtype");
  d.dtype = HK_DTYPE_F32;
  d.rank = -1;
  assert_status(hk_graph_variable(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "rank");
  d.rank = HK_MAX_RANK + 1;
  assert_status(hk_graph_variable(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "rank");
  d.rank = 2;
  d.dims = NULL;
  assert_status(hk_graph_variable(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "dims");
  d.rank = 1;
  d.dims = neg;
  assert_status(hk_graph_variable(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "dims[0]");
  d.rank = 2;
  d.dims = huge;
  assert_status(hk_graph_variable(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "overflows");
  d.dims = dims;
  d.flags = 0x80;
  assert_status(hk_graph_variable(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "def->flags");
  d.flags = HK_VAR_EXTERNAL;
  assert_status(hk_graph_variable(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "external_data");
  d.flags = 0;
  d.init.kind = (hk_init_kind)9;
  assert_status(hk_graph_variable(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "def->init.kind");
  d.init.kind = HK_INIT_UNIFORM;
  d.init.minval = 1;
  d.init.maxval = 1;
  assert_status(hk_graph_variable(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "minval");
  d.init.maxval = INFINITY;
  assert_status(hk_graph_variable(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "maxval");
  d.init.kind = HK_INIT_NORMAL;
  d.init.stddev = -1;
  assert_status(hk_graph_variable(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "stddev");
  d.init.stddev = 1;
  d.init.mean = NAN;
  assert_status(hk_graph_variable(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "mean");
  d.dtype = HK_DTYPE_I32;
  d.init.mean = 0;
  assert_status(hk_graph_variable(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "HK_INIT_NORMAL");
  d.init.kind = HK_INIT_UNIFORM;
  d.init.minval = 0;
  d.init.maxval = 1;
  assert_status(hk_graph_variable(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "HK_INIT_UNIFORM");
  d.init.kind = HK_INIT_CONSTANT;
  d.init.value = 1.5;
  assert_status(hk_graph_variable(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "def->init.value");
  d.init.value = 3e9;
  assert_status(hk_graph_variable(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "def->init.value");
  d.init.value = -3;
  assert_ok(hk_graph_variable(f->g, &h, &d, &st), &st);
  /* the name is now taken, by a variable or any other op */
  assert_status(hk_graph_variable(f->g, &h, &d, &st), &st, HK_ALREADY_EXISTS, "'w'");
  assert_status(hk_graph_group(f->g, &h, "w", NULL, 0, &st), &st, HK_ALREADY_EXISTS, "'w'");
  assert_int_equal(hk_executor_variable_count(f->ex), 2);
}

static void test_graph__placeholder_constant_op_validate_arguments(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  int64_t dims[1] = {2}, bad[1] = {-2};
  float data[2] = {1, 2};
  hk_tensor t;
  hk_handle h, v = var_f32(f, "v", 0), p;
  hk_op_def d = HK_OP_DEF_INIT;
  hk_output_spec outs[1] = {{HK_DTYPE_F32, 1, {-1}}};
  counting_op c = {NULL, 0, 0};

  assert_status(hk_graph_placeholder(NULL, &h, "p", HK_DTYPE_F32, 0, NULL, &st), &st, HK_INVALID_ARGUMENT, "g");
  assert_status(hk_graph_placeholder(f->g, NULL, "p", HK_DTYPE_F32, 0, NULL, &st), &st, HK_INVALID_ARGUMENT, "out");
  assert_status(hk_graph_placeholder(f->g, &h, NULL, HK_DTYPE_F32, 0, NULL, &st), &st, HK_INVALID_ARGUMENT, "name");
  assert_status(hk_graph_placeholder(f->g, &h, "p", HK_DTYPE_INVALID, 0, NULL, &st), &st, HK_INVALID_ARGUMENT, "dtype");
  assert_status(hk_graph_placeholder(f->g, &h, "p", HK_DTYPE_F32, 9, dims, &st), &st, HK_INVALID_ARGUMENT, "rank");
  assert_status(hk_graph_placeholder(f->g, &h, "p", HK_DTYPE_F32, 1, NULL, &st), &st, HK_INVALID_ARGUMENT, "dims");
  assert_status(hk_graph_placeholder(f->g, &h, "p", HK_DTYPE_F32, 1, bad, &st), &st, HK_INVALID_ARGUMENT, "dims[0]");
  assert_status(hk_graph_placeholder(f->g, &h, "v", HK_DTYPE_F32, 0, NULL, &st), &st, HK_ALREADY_EXISTS, "'v'");
  assert_ok(hk_graph_placeholder(f->g, &p, "p", HK_DTYPE_F32, 1, dims, &st), &st);

  assert_ok(hk_tensor_init(&t, HK_DTYPE_F32, 1, dims, data, &st), &st);
  assert_status(hk_graph_constant(NULL, &h, "c", &t, &st), &st, HK_INVALID_ARGUMENT, "g");
  assert_status(hk_graph_constant(f->g, NULL, "c", &t, &st), &st, HK_INVALID_ARGUMENT, "out");
  assert_status(hk_graph_constant(f->g, &h, "c d", &t, &st), &st, HK_INVALID_ARGUMENT, "name");
  assert_status(hk_graph_constant(f->g, &h, "c", NULL, &st), &st, HK_INVALID_ARGUMENT, "value");
  t.data = NULL;
  assert_status(hk_graph_constant(f->g, &h, "c", &t, &st), &st, HK_INVALID_ARGUMENT, "value->data");
  t.data = data;
  t.nbytes = 4;
  assert_status(hk_graph_constant(f->g, &h, "c", &t, &st), &st, HK_INVALID_ARGUMENT, "value->nbytes");
  t.nbytes = 8;
  t.dtype = HK_DTYPE_STRING;
  assert_status(hk_graph_constant(f->g, &h, "c", &t, &st), &st, HK_INVALID_ARGUMENT, "value->dtype");
  t.dtype = HK_DTYPE_F32;
  assert_status(hk_graph_constant(f->g, &h, "p", &t, &st), &st, HK_ALREADY_EXISTS, "'p'");
  assert_ok(hk_graph_constant(f->g, &h, "c", &t, &st), &st);

  d.name = "op";
  d.kernel = counting_kernel;
  d.kernel_user = &c;
  assert_status(hk_graph_op(NULL, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "g");
  assert_status(hk_graph_op(f->g, NULL, &d, &st), &st, HK_INVALID_ARGUMENT, "out");
  assert_status(hk_graph_op(f->g, &h, NULL, &st), &st, HK_INVALID_ARGUMENT, "def");
  d.version = 2;
  assert_status(hk_graph_op(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "def->version");
  d.version = HK_OP_DEF_VERSION;
  d.name = "";
  assert_status(hk_graph_op(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "def->name");
  d.name = "op";
  d.ninputs = 1;
  assert_status(hk_graph_op(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "def->inputs");
  d.inputs = &v;
  d.ncontrol_inputs = 1;
  assert_status(hk_graph_op(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "def->control_inputs");
  {
    hk_handle junk = 0x1234;
    d.control_inputs = &junk;
    assert_status(hk_graph_op(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "def->control_inputs[0]");
    d.control_inputs = NULL;
    d.ncontrol_inputs = 0;
    d.inputs = &junk;
    assert_status(hk_graph_op(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "def->inputs[0]");
    d.inputs = &v;
  }
  d.nmutates = 1;
  assert_status(hk_graph_op(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "def->mutates");
  d.mutates = &p; /* a placeholder is not a variable */
  assert_status(hk_graph_op(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "def->mutates[0] (p:0)");
  d.mutates = &v;
  d.noutputs = 1;
  assert_status(hk_graph_op(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "def->outputs");
  d.outputs = outs; /* custom outputs need concrete dims: buffers are pre-sized */
  assert_status(hk_graph_op(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "def->outputs[0]");
  outs[0].dims[0] = 4;
  outs[0].dtype = HK_DTYPE_INVALID;
  assert_status(hk_graph_op(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "def->outputs[0].dtype");
  outs[0].dtype = HK_DTYPE_F32;
  d.kernel = NULL;
  assert_status(hk_graph_op(f->g, &h, &d, &st), &st, HK_INVALID_ARGUMENT, "def->kernel");
  d.kernel = counting_kernel;
  d.name = "c";
  assert_status(hk_graph_op(f->g, &h, &d, &st), &st, HK_ALREADY_EXISTS, "'c'");
  d.name = "op";
  assert_ok(hk_graph_op(f->g, &h, &d, &st), &st);
}

static void test_graph__stock_ops_validate_arguments(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  int64_t d2[1] = {2};
  hk_handle v = var_f32(f, "v", 0), c = const_f32(f, "c", 1), h, junk = 77;
  hk_handle vec = var_full(f, "vec", HK_DTYPE_F32, 1, d2, HK_INIT_ZEROS, 0, 0, NULL);
  hk_handle flag = var_full(f, "flag", HK_DTYPE_BOOL, 0, NULL, HK_INIT_ZEROS, 0, 0, NULL);
  hk_handle noinit = var_full(f, "noinit", HK_DTYPE_F32, 0, NULL, HK_INIT_NONE, 0, 0, NULL);
  hk_handle i64c;
  int64_t one = 1;
  hk_tensor ti = hk_tensor_scalar_i64(&one);
  assert_ok(hk_graph_constant(f->g, &i64c, "i64c", &ti, &st), &st);

  assert_status(hk_graph_assign(NULL, &h, "a", v, c, &st), &st, HK_INVALID_ARGUMENT, "g");
  assert_status(hk_graph_assign(f->g, NULL, "a", v, c, &st), &st, HK_INVALID_ARGUMENT, "out_op");
  assert_status(hk_graph_assign(f->g, &h, NULL, v, c, &st), &st, HK_INVALID_ARGUMENT, "name");
  assert_status(hk_graph_assign(f->g, &h, "a", c, c, &st), &st, HK_INVALID_ARGUMENT, "var (c:0)");
  assert_status(hk_graph_assign(f->g, &h, "a", junk, c, &st), &st, HK_INVALID_ARGUMENT, "var");
  assert_status(hk_graph_assign(f->g, &h, "a", v, junk, &st), &st, HK_INVALID_ARGUMENT, "value");
  assert_status(hk_graph_assign(f->g, &h, "a", vec, c, &st), &st, HK_INVALID_ARGUMENT, "'vec'");
  assert_status(hk_graph_assign(f->g, &h, "a", v, i64c, &st), &st, HK_INVALID_ARGUMENT, "i64");
  assert_status(hk_graph_assign(f->g, &h, "v", v, c, &st), &st, HK_ALREADY_EXISTS, "'v'");
  assert_ok(hk_graph_assign(f->g, &h, "a", v, c, &st), &st);

  assert_status(hk_graph_assign_add(f->g, &h, "aa", flag, flag, &st), &st, HK_INVALID_ARGUMENT, "'flag'");
  assert_status(hk_graph_assign_add(f->g, &h, "aa", v, junk, &st), &st, HK_INVALID_ARGUMENT, "delta");
  assert_status(hk_graph_assign_add(f->g, NULL, "aa", v, c, &st), &st, HK_INVALID_ARGUMENT, "out_op");
  assert_ok(hk_graph_assign_add(f->g, &h, "aa", v, c, &st), &st);

  assert_status(hk_graph_group(f->g, &h, "grp", NULL, 2, &st), &st, HK_INVALID_ARGUMENT, "ops");
  assert_status(hk_graph_group(f->g, &h, "grp", &junk, 1, &st), &st, HK_INVALID_ARGUMENT, "ops[0]");
  assert_status(hk_graph_group(f->g, NULL, "grp", NULL, 0, &st), &st, HK_INVALID_ARGUMENT, "out_op");

  assert_status(hk_graph_init_op(f->g, &h, "init", NULL, 3, &st), &st, HK_INVALID_ARGUMENT, "vars");
  assert_status(hk_graph_init_op(f->g, &h, "init", &c, 1, &st), &st, HK_INVALID_ARGUMENT, "vars[0]");
  assert_status(hk_graph_init_op(f->g, &h, "init", &noinit, 1, &st), &st, HK_INVALID_ARGUMENT,
                "'noinit' has no initializer");
  assert_status(hk_graph_init_op(f->g, &h, "bad name", NULL, 0, &st), &st, HK_INVALID_ARGUMENT, "name");
  assert_status(hk_graph_report_uninitialized(f->g, &h, "r", &junk, 1, &st), &st, HK_INVALID_ARGUMENT, "vars[0]");
  assert_status(hk_graph_report_uninitialized(f->g, NULL, "r", NULL, 0, &st), &st, HK_INVALID_ARGUMENT, "out_op");
  assert_status(hk_graph_create_global_step(f->g, NULL, &st), &st, HK_INVALID_ARGUMENT, "out");
  assert_status(hk_graph_get_or_create_global_step(NULL, &h, &st), &st, HK_INVALID_ARGUMENT, "g");
}

/* ---- C3: after finalize ------------------------------------------------------ */

/* C3: once finalized, every change to the graph is refused with "Graph is finalized and cannot be modified.". */
static void test_graph__finalized_graph_rejects_mutations(void **state) {
  fx *f = *state;
  const char *msg = "Graph is finalized and cannot be modified.";
  hk_status st = HK_STATUS_INIT;
  hk_variable_def d = HK_VARIABLE_DEF_INIT;
  hk_op_def od = HK_OP_DEF_INIT;
  hk_handle v = var_f32(f, "v", 1), c = const_f32(f, "c", 1), h;
  float x = 1;
  hk_tensor t = hk_tensor_scalar_f32(&x);

  assert_false(hk_executor_is_finalized(f->ex));
  assert_ok(hk_graph_finalize(f->g, &st), &st);
  assert_true(hk_executor_is_finalized(f->ex));
  assert_ok(hk_executor_finalize(f->ex, &st), &st); /* idempotent */

  d.name = "w";
  d.dtype = HK_DTYPE_F32;
  od.name = "op";
  assert_status(hk_graph_variable(f->g, &h, &d, &st), &st, HK_FAILED_PRECONDITION, msg);
  assert_status(hk_graph_create_global_step(f->g, &h, &st), &st, HK_FAILED_PRECONDITION, msg);
  assert_status(hk_graph_get_or_create_global_step(f->g, &h, &st), &st, HK_FAILED_PRECONDITION, msg);
  assert_status(hk_graph_placeholder(f->g, &h, "p", HK_DTYPE_F32, 0, NULL, &st), &st, HK_FAILED_PRECONDITION, msg);
  assert_status(hk_graph_constant(f->g, &h, "k", &t, &st), &st, HK_FAILED_PRECONDITION, msg);
  assert_status(hk_graph_op(f->g, &h, &od, &st), &st, HK_FAILED_PRECONDITION, msg);
  assert_status(hk_graph_assign(f->g, &h, "a", v, c, &st), &st, HK_FAILED_PRECONDITION, msg);
  assert_status(hk_graph_assign_add(f->g, &h, "aa", v, c, &st), &st, HK_FAILED_PRECONDITION, msg);
  assert_status(hk_graph_group(f->g, &h, "grp", NULL, 0, &st), &st, HK_FAILED_PRECONDITION, msg);
  assert_status(hk_graph_init_op(f->g, &h, "init", NULL, 0, &st), &st, HK_FAILED_PRECONDITION, msg);
  assert_status(hk_graph_report_uninitialized(f->g, &h, "r", NULL, 0, &st), &st, HK_FAILED_PRECONDITION, msg);
  assert_status(hk_executor_role_add(f->ex, HK_ROLE_INIT_OP, v, &st), &st, HK_FAILED_PRECONDITION, msg);
  assert_status(hk_executor_default_op(&h, f->ex, HK_DEFAULT_INIT_OP, &st), &st, HK_FAILED_PRECONDITION, msg);
  /* nothing was added; reads still work */
  assert_int_equal(hk_executor_variable_count(f->ex), 1);
  assert_status(hk_executor_resolve_op(&h, f->ex, "grp", &st), &st, HK_NOT_FOUND, "grp");
  open_rs(f);
  assert_status(run(f, NULL, 0, &v, 1, NULL, 0, &t, &st), &st, HK_FAILED_PRECONDITION, "uninitialized");
}

/* ---- roles, global step, defaults (C61, C62, C143, C144) ---------------------------- */

static void test_graph__role_registry(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_handle v = var_f32(f, "v", 0), a, b, out[4] = {0};
  size_t n = 99;
  assert_ok(hk_graph_group(f->g, &a, "a", NULL, 0, &st), &st);
  assert_ok(hk_graph_group(f->g, &b, "b", NULL, 0, &st), &st);
  assert_ok(hk_executor_role_get(out, 4, &n, f->ex, HK_ROLE_INIT_OP, &st), &st);
  assert_int_equal(n, 0);
  assert_ok(hk_executor_role_add(f->ex, HK_ROLE_INIT_OP, a, &st), &st);
  assert_ok(hk_executor_role_add(f->ex, HK_ROLE_INIT_OP, b, &st), &st);
  assert_ok(hk_executor_role_add(f->ex, "summary_op", v, &st), &st);
  assert_ok(hk_executor_role_get(out, 4, &n, f->ex, HK_ROLE_INIT_OP, &st), &st);
  assert_int_equal(n, 2);
  assert_true(out[0] == a && out[1] == b);
  out[0] = out[1] = 0;
  assert_ok(hk_executor_role_get(out, 1, &n, f->ex, HK_ROLE_INIT_OP, &st), &st);
  assert_int_equal(n, 2); /* the total, even when cap is smaller */
  assert_true(out[0] == a && out[1] == 0);
  assert_ok(hk_executor_role_get(NULL, 0, &n, f->ex, "summary_op", &st), &st);
  assert_int_equal(n, 1);
  assert_status(hk_executor_role_add(f->ex, HK_ROLE_INIT_OP, (hk_handle)42, &st), &st, HK_INVALID_ARGUMENT, "handle");
  assert_status(hk_executor_role_add(f->ex, "", a, &st), &st, HK_INVALID_ARGUMENT, "role");
  assert_status(hk_executor_role_get(NULL, 2, &n, f->ex, HK_ROLE_INIT_OP, &st), &st, HK_INVALID_ARGUMENT, "out");
}

/* C144: create_global_step makes one int64 scalar, initial 0, global and not trainable, under the global-step role. */
static void test_graph__the_global_step_is_one_non_trainable_int64_scalar(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_handle gs, again, h[2];
  hk_variable_info info;
  size_t idx, n;
  int64_t v = -1;
  assert_ok(hk_graph_get_or_create_global_step(f->g, &gs, &st), &st);
  assert_status(hk_graph_create_global_step(f->g, &again, &st), &st, HK_ALREADY_EXISTS,
                "\"global_step\" already exists.");
  assert_ok(hk_graph_get_or_create_global_step(f->g, &again, &st), &st);
  assert_true(again == gs);
  assert_ok(hk_executor_role_get(h, 2, &n, f->ex, HK_ROLE_GLOBAL_STEP, &st), &st);
  assert_int_equal(n, 1);
  assert_true(h[0] == gs);
  assert_ok(hk_executor_global_step(&info, &idx, f->ex, &st), &st);
  assert_string_equal(info.name, "global_step");
  assert_true(info.tensor == gs);
  assert_int_equal(info.dtype, HK_DTYPE_I64);
  assert_int_equal(info.rank, 0);
  assert_int_equal(info.flags, 0); /* global, not trainable */
  open_rs(f);
  run_target(f, init_all(f, "init"));
  assert_ok(hk_raw_session_global_step(&v, f->rs, &st), &st);
  assert_int_equal(v, 0);
}

/* C143: get_global_step adopts an integer scalar named global_step and refuses one of another dtype or shape. */
static void test_graph__an_existing_integer_global_step_is_adopted_others_refused(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  int64_t d1[1] = {1};
  hk_handle h;
  var_full(f, "global_step", HK_DTYPE_F32, 0, NULL, HK_INIT_ZEROS, 0, 0, NULL);
  assert_status(hk_graph_get_or_create_global_step(f->g, &h, &st), &st, HK_INVALID_ARGUMENT,
                "Existing \"global_step\" does not have integer type: f32");
  assert_status(hk_graph_create_global_step(f->g, &h, &st), &st, HK_ALREADY_EXISTS, "\"global_step\" already exists.");
  {
    fx *f2 = f;
    hk_graph *g2;
    hk_handle gs2, found;
    hk_variable_def d = HK_VARIABLE_DEF_INIT;
    assert_ok(hk_graph_new(&g2, NULL, &st), &st);
    d.name = "global_step";
    d.dtype = HK_DTYPE_I32;
    d.rank = 1;
    d.dims = d1;
    assert_ok(hk_graph_variable(g2, &gs2, &d, &st), &st);
    assert_status(hk_graph_get_or_create_global_step(g2, &found, &st), &st, HK_INVALID_ARGUMENT,
                  "Existing \"global_step\" is not scalar: [1]");
    hk_graph_free(g2);
    assert_ok(hk_graph_new(&g2, NULL, &st), &st);
    d.rank = 0;
    assert_ok(hk_graph_variable(g2, &gs2, &d, &st), &st);
    assert_ok(hk_graph_get_or_create_global_step(g2, &found, &st), &st);
    assert_true(found == gs2); /* an integer "global_step" is adopted */
    hk_graph_free(g2);
    (void)f2;
  }
}

/* C62: the default init and ready ops cover every global variable and each build gets a fresh name. */
static void test_graph__default_ops_are_built_under_fresh_names_and_cover_every_variable(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_handle init, local_init, ready, ready_local, again, fetch[2];
  hk_tensor r[2];
  var_f32(f, "g1", 1);
  var_full(f, "l1", HK_DTYPE_F32, 0, NULL, HK_INIT_CONSTANT, 2, HK_VAR_LOCAL, NULL);
  var_f32(f, "g2", 3);
  assert_ok(hk_executor_default_op(&init, f->ex, HK_DEFAULT_INIT_OP, &st), &st);
  assert_ok(hk_executor_default_op(&local_init, f->ex, HK_DEFAULT_LOCAL_INIT_OP, &st), &st);
  assert_ok(hk_executor_default_op(&ready, f->ex, HK_DEFAULT_READY_OP, &st), &st);
  assert_ok(hk_executor_default_op(&ready_local, f->ex, HK_DEFAULT_READY_FOR_LOCAL_INIT_OP, &st), &st);
  /* op handles for the init kinds, tensor handles for the readiness kinds */
  assert_string_equal(hk_executor_handle_name(f->ex, init), "init");
  assert_string_equal(hk_executor_handle_name(f->ex, local_init), "init_local");
  assert_string_equal(hk_executor_handle_name(f->ex, ready), "report_uninitialized_variables:0");
  assert_string_equal(hk_executor_handle_name(f->ex, ready_local), "report_uninitialized_global_variables:0");
  /* a second build gets a fresh name */
  assert_ok(hk_executor_default_op(&again, f->ex, HK_DEFAULT_INIT_OP, &st), &st);
  assert_string_equal(hk_executor_handle_name(f->ex, again), "init_1");
  assert_status(hk_executor_default_op(&again, f->ex, (hk_default_op)9, &st), &st, HK_INVALID_ARGUMENT, "kind");
  open_rs(f);

  fetch[0] = ready;
  fetch[1] = ready_local;
  assert_ok(run(f, NULL, 0, fetch, 2, NULL, 0, r, &st), &st);
  assert_int_equal(r[0].dims[0], 3);
  assert_string_equal(((const char **)r[0].data)[0], "g1");
  assert_string_equal(((const char **)r[0].data)[1], "l1");
  assert_string_equal(((const char **)r[0].data)[2], "g2");
  assert_int_equal(r[1].dims[0], 2);
  assert_string_equal(((const char **)r[1].data)[0], "g1");
  assert_string_equal(((const char **)r[1].data)[1], "g2");

  run_target(f, init);
  assert_ok(run(f, NULL, 0, fetch, 2, NULL, 0, r, &st), &st);
  assert_int_equal(r[0].dims[0], 1);
  assert_string_equal(((const char **)r[0].data)[0], "l1");
  assert_int_equal(r[1].dims[0], 0);

  run_target(f, local_init);
  assert_ok(run(f, NULL, 0, fetch, 2, NULL, 0, r, &st), &st);
  assert_int_equal(r[0].dims[0], 0);
  assert_int_equal(r[1].dims[0], 0);
}

static void test_graph__init_op_over_chosen_variables(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_handle a = var_f32(f, "a", 1), b = var_f32(f, "b", 2), list[3], init, rep;
  hk_tensor r;
  list[0] = a;
  list[1] = a; /* duplicates are harmless */
  assert_ok(hk_graph_init_op(f->g, &init, "init_a", list, 2, &st), &st);
  list[0] = b;
  list[1] = a;
  assert_ok(hk_graph_report_uninitialized(f->g, &rep, "rep", list, 2, &st), &st);
  rep = out0(f, rep);
  open_rs(f);
  run_target(f, init);
  assert_true(fetch_f32(f, a) == 1.0f);
  assert_ok(run(f, NULL, 0, &rep, 1, NULL, 0, &r, &st), &st);
  assert_int_equal(r.dims[0], 1);
  assert_string_equal(((const char **)r.data)[0], "b");
  (void)b;
}

/* ---- describe, control ------------------------------------------------------------- */

typedef struct text_buf {
  char text[4096];
  size_t len;
  int chunks;
} text_buf;

static hk_code collect(void *user, const char *text, size_t len, hk_status *status) {
  text_buf *t = user;
  (void)status;
  if (t->len + len < sizeof(t->text)) {
    memcpy(t->text + t->len, text, len);
    t->len += len;
    t->text[t->len] = '\0';
  }
  t->chunks++;
  return HK_OK;
}

static hk_code failing_sink(void *user, const char *text, size_t len, hk_status *status) {
  (void)user;
  (void)text;
  (void)len;
  return hk_status_set(status, HK_DATA_LOSS, "sink full");
}

/* H30: describe lists every op with its inputs and outputs, and an unknown control op is UNIMPLEMENTED. */
static void test_graph__describe_lists_every_op_and_unknown_control_ops_are_unimplemented(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  int64_t d2[2] = {2, -1};
  text_buf t;
  hk_handle gs, c = const_f32(f, "c", 1), p, inc;
  memset(&t, 0, sizeof(t));
  assert_ok(hk_graph_create_global_step(f->g, &gs, &st), &st);
  assert_ok(hk_graph_placeholder(f->g, &p, "x", HK_DTYPE_F32, 2, d2, &st), &st);
  var_f32(f, "w", 0);
  assert_ok(hk_graph_assign_add(f->g, &inc, "inc", var_f32(f, "v", 0), c, &st), &st);
  assert_ok(hk_executor_describe(f->ex, collect, &t, &st), &st);
  assert_non_null(strstr(t.text, "global_step = Variable -> (i64 []) {global, init=zeros}\n"));
  assert_non_null(strstr(t.text, "c = Const -> (f32 [])\n"));
  assert_non_null(strstr(t.text, "x = Placeholder -> (f32 [2, ?])\n"));
  assert_non_null(strstr(t.text, "inc = AssignAdd inputs=[c:0] mutates=[v] -> (f32 [])\n"));
  assert_non_null(strstr(t.text, "{global, trainable, init=constant}"));
  assert_status(hk_executor_describe(f->ex, failing_sink, NULL, &st), &st, HK_DATA_LOSS, "sink full");
  assert_status(hk_executor_control(f->ex, 1000, NULL, &st), &st, HK_UNIMPLEMENTED, "1000");
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, graph_fixture_setup, graph_fixture_teardown)
      T(test_graph__new_validates_arguments),
      T(test_graph__free_releases_everything),
      T(test_graph__names_and_handles_resolve_or_are_not_found),
      T(test_graph__variable_validates_every_argument),
      T(test_graph__placeholder_constant_op_validate_arguments),
      T(test_graph__stock_ops_validate_arguments),
      T(test_graph__finalized_graph_rejects_mutations),
      T(test_graph__role_registry),
      T(test_graph__the_global_step_is_one_non_trainable_int64_scalar),
      T(test_graph__an_existing_integer_global_step_is_adopted_others_refused),
      T(test_graph__default_ops_are_built_under_fresh_names_and_cover_every_variable),
      T(test_graph__init_op_over_chosen_variables),
      T(test_graph__describe_lists_every_op_and_unknown_control_ops_are_unimplemented),
#undef T
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
