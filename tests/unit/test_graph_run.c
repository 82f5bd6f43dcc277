/*
 * Tests of the embedded default executor (hooked/graph.h): contract H29,
 * H30, C3, C61/C62 defaults, C72 readiness reports, C143/C144 global step,
 * H7 (steady-state runs allocate nothing). Everything goes through the
 * public API: the graph builders, the hk_executor wrappers and raw sessions.
 */
#include "graph_fixture.h"
#include "test_env.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- fixture ------------------------------------------------------------- */

typedef graph_fixture fx;

static void open_rs(fx *f) {
  hk_status st = HK_STATUS_INIT;
  if (f->rs) hk_raw_session_free(f->rs);
  f->rs = NULL;
  assert_ok(hk_raw_session_open(&f->rs, f->ex, &st), &st);
}

static hk_handle var_full(fx *f, const char *name, hk_dtype dt, int32_t rank, const int64_t *dims,
                          hk_init_kind kind, double value, uint32_t flags, void *ext) {
  hk_variable_def d = HK_VARIABLE_DEF_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_handle h = HK_NO_HANDLE;
  d.name = name;
  d.dtype = dt;
  d.rank = rank;
  d.dims = dims;
  d.init.kind = kind;
  d.init.value = value;
  d.flags = flags;
  d.external_data = ext;
  assert_ok(hk_graph_variable(f->g, &h, &d, &st), &st);
  assert_int_not_equal(h, HK_NO_HANDLE);
  return h;
}

static hk_handle var_f32(fx *f, const char *name, double value) {
  return var_full(f, name, HK_DTYPE_F32, 0, NULL, HK_INIT_CONSTANT, value, HK_VAR_TRAINABLE, NULL);
}

static hk_handle const_f32(fx *f, const char *name, float v) {
  hk_status st = HK_STATUS_INIT;
  hk_tensor t = hk_tensor_scalar_f32(&v);
  hk_handle h;
  assert_ok(hk_graph_constant(f->g, &h, name, &t, &st), &st);
  return h;
}

static hk_code run(fx *f, const hk_feed *feeds, size_t nfeeds, const hk_handle *fetches,
                   size_t nfetches, const hk_handle *targets, size_t ntargets, hk_tensor *results,
                   hk_status *st) {
  hk_run_args a;
  memset(&a, 0, sizeof(a));
  a.feeds = feeds;
  a.nfeeds = nfeeds;
  a.fetches = fetches;
  a.nfetches = nfetches;
  a.targets = targets;
  a.ntargets = ntargets;
  return hk_raw_session_run(f->rs, &a, results, NULL, st);
}

static void run_target(fx *f, hk_handle op) {
  hk_status st = HK_STATUS_INIT;
  assert_ok(run(f, NULL, 0, NULL, 0, &op, 1, NULL, &st), &st);
}

static float fetch_f32(fx *f, hk_handle t) {
  hk_status st = HK_STATUS_INIT;
  hk_tensor r;
  assert_ok(run(f, NULL, 0, &t, 1, NULL, 0, &r, &st), &st);
  assert_int_equal(r.dtype, HK_DTYPE_F32);
  return *(float *)r.data;
}

static hk_handle init_all(fx *f, const char *name) {
  hk_status st = HK_STATUS_INIT;
  hk_handle op;
  assert_ok(hk_graph_init_op(f->g, &op, name, NULL, 0, &st), &st);
  return op;
}

/* ---- kernels for tests ---------------------------------------------------- */

#define LOG_MAX 64

typedef struct recorder {
  int calls[16];
  int order[LOG_MAX];
  int norder;
  const void *input_data[16];
  hk_tensor *var_view[16];
} recorder;

typedef struct counting_op {
  recorder *rec;
  int id;
  float add; /* output 0 = sum of f32 inputs + add */
} counting_op;

static hk_code counting_kernel(void *user, hk_kernel_context *ctx, const hk_tensor *inputs,
                               size_t ninputs, hk_tensor *outputs, size_t noutputs,
                               hk_status *status) {
  counting_op *op = user;
  float sum = op->add;
  size_t i;
  (void)status;
  op->rec->calls[op->id]++;
  if (op->rec->norder < LOG_MAX) op->rec->order[op->rec->norder++] = op->id;
  op->rec->input_data[op->id] = ninputs ? inputs[0].data : NULL;
  op->rec->var_view[op->id] = hk_kernel_variable(ctx, 0);
  for (i = 0; i < ninputs; i++)
    if (inputs[i].dtype == HK_DTYPE_F32 && inputs[i].rank == 0) sum += *(const float *)inputs[i].data;
  if (noutputs) *(float *)outputs[0].data = sum;
  return HK_OK;
}

static hk_handle counting(fx *f, const char *name, counting_op *op, const hk_handle *in, size_t nin,
                          const hk_handle *ctl, size_t nctl) {
  hk_op_def d = HK_OP_DEF_INIT;
  hk_output_spec out = {HK_DTYPE_F32, 0, {0}};
  hk_status st = HK_STATUS_INIT;
  hk_handle h;
  d.name = name;
  d.kernel = counting_kernel;
  d.kernel_user = op;
  d.inputs = in;
  d.ninputs = nin;
  d.control_inputs = ctl;
  d.ncontrol_inputs = nctl;
  d.outputs = &out;
  d.noutputs = 1;
  assert_ok(hk_graph_op(f->g, &h, &d, &st), &st);
  return h;
}

static hk_handle out0(fx *f, hk_handle op) {
  hk_status st = HK_STATUS_INIT;
  hk_handle t;
  assert_ok(hk_graph_op_output(f->g, op, 0, &t, &st), &st);
  return t;
}

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

static void test_graph__h30_resolve_names_and_handles(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_handle v = var_f32(f, "scope/v", 0), h, vop, two;
  hk_op_def d = HK_OP_DEF_INIT;
  hk_output_spec outs[2] = {{HK_DTYPE_F32, 0, {0}}, {HK_DTYPE_I64, 1, {3}}};
  counting_op c = {NULL, 0, 0};
  recorder rec;
  memset(&rec, 0, sizeof(rec));
  c.rec = &rec;

  assert_ok(hk_executor_resolve_tensor(f->ex, "scope/v:0", &h, &st), &st);
  assert_true(h == v);
  assert_ok(hk_executor_resolve_tensor(f->ex, "scope/v", &h, &st), &st);
  assert_true(h == v);
  assert_ok(hk_executor_resolve_op(f->ex, "scope/v", &vop, &st), &st);
  assert_true(vop != HK_NO_HANDLE && vop != v);
  assert_string_equal(hk_executor_handle_name(f->ex, v), "scope/v:0");
  assert_string_equal(hk_executor_handle_name(f->ex, vop), "scope/v");

  d.name = "two";
  d.kernel = counting_kernel;
  d.kernel_user = &c;
  d.outputs = outs;
  d.noutputs = 2;
  assert_ok(hk_graph_op(f->g, &two, &d, &st), &st);
  assert_ok(hk_executor_resolve_tensor(f->ex, "two:1", &h, &st), &st);
  assert_string_equal(hk_executor_handle_name(f->ex, h), "two:1");
  {
    hk_handle o1;
    assert_ok(hk_graph_op_output(f->g, two, 1, &o1, &st), &st);
    assert_true(o1 == h);
    assert_status(hk_graph_op_output(f->g, two, 2, &o1, &st), &st, HK_OUT_OF_RANGE, "two");
    assert_status(hk_graph_op_output(f->g, two, -1, &o1, &st), &st, HK_OUT_OF_RANGE, "index");
    assert_status(hk_graph_op_output(f->g, v, 0, &o1, &st), &st, HK_NOT_FOUND, "op");
    assert_status(hk_graph_op_output(f->g, two, 0, NULL, &st), &st, HK_INVALID_ARGUMENT, "out");
  }

  assert_status(hk_executor_resolve_tensor(f->ex, "nope", &h, &st), &st, HK_NOT_FOUND, "'nope'");
  assert_true(h == HK_NO_HANDLE);
  assert_status(hk_executor_resolve_tensor(f->ex, "scope/v:1", &h, &st), &st, HK_NOT_FOUND,
                "'scope/v:1'");
  assert_status(hk_executor_resolve_tensor(f->ex, "two:2", &h, &st), &st, HK_NOT_FOUND, "'two:2'");
  assert_status(hk_executor_resolve_tensor(f->ex, "two:x", &h, &st), &st, HK_NOT_FOUND, "'two:x'");
  assert_status(hk_executor_resolve_tensor(f->ex, "two:", &h, &st), &st, HK_NOT_FOUND, "'two:'");
  assert_status(hk_executor_resolve_tensor(f->ex, "two:01", &h, &st), &st, HK_NOT_FOUND, "'two:01'");
  assert_status(hk_executor_resolve_tensor(f->ex, "two:-1", &h, &st), &st, HK_NOT_FOUND, "'two:-1'");
  assert_status(hk_executor_resolve_op(f->ex, "scope", &h, &st), &st, HK_NOT_FOUND, "'scope'");
  /* an op without outputs has no tensor "grp:0" */
  assert_ok(hk_graph_group(f->g, &h, "grp", NULL, 0, &st), &st);
  assert_status(hk_executor_resolve_tensor(f->ex, "grp", &h, &st), &st, HK_NOT_FOUND, "'grp'");
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

  assert_status(hk_graph_placeholder(NULL, &h, "p", HK_DTYPE_F32, 0, NULL, &st), &st,
                HK_INVALID_ARGUMENT, "g");
  assert_status(hk_graph_placeholder(f->g, NULL, "p", HK_DTYPE_F32, 0, NULL, &st), &st,
                HK_INVALID_ARGUMENT, "out");
  assert_status(hk_graph_placeholder(f->g, &h, NULL, HK_DTYPE_F32, 0, NULL, &st), &st,
                HK_INVALID_ARGUMENT, "name");
  assert_status(hk_graph_placeholder(f->g, &h, "p", HK_DTYPE_INVALID, 0, NULL, &st), &st,
                HK_INVALID_ARGUMENT, "dtype");
  assert_status(hk_graph_placeholder(f->g, &h, "p", HK_DTYPE_F32, 9, dims, &st), &st,
                HK_INVALID_ARGUMENT, "rank");
  assert_status(hk_graph_placeholder(f->g, &h, "p", HK_DTYPE_F32, 1, NULL, &st), &st,
                HK_INVALID_ARGUMENT, "dims");
  assert_status(hk_graph_placeholder(f->g, &h, "p", HK_DTYPE_F32, 1, bad, &st), &st,
                HK_INVALID_ARGUMENT, "dims[0]");
  assert_status(hk_graph_placeholder(f->g, &h, "v", HK_DTYPE_F32, 0, NULL, &st), &st,
                HK_ALREADY_EXISTS, "'v'");
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

  assert_status(hk_graph_assign_add(f->g, &h, "aa", flag, flag, &st), &st, HK_INVALID_ARGUMENT,
                "'flag'");
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
  assert_status(hk_graph_report_uninitialized(f->g, &h, "r", &junk, 1, &st), &st, HK_INVALID_ARGUMENT,
                "vars[0]");
  assert_status(hk_graph_report_uninitialized(f->g, NULL, "r", NULL, 0, &st), &st, HK_INVALID_ARGUMENT,
                "out_op");
  assert_status(hk_graph_create_global_step(f->g, NULL, &st), &st, HK_INVALID_ARGUMENT, "out");
  assert_status(hk_graph_get_or_create_global_step(NULL, &h, &st), &st, HK_INVALID_ARGUMENT, "g");
}

/* ---- C3: after finalize ------------------------------------------------------ */

static void test_graph__c3_finalized_graph_rejects_mutations(void **state) {
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
  assert_status(hk_graph_placeholder(f->g, &h, "p", HK_DTYPE_F32, 0, NULL, &st), &st,
                HK_FAILED_PRECONDITION, msg);
  assert_status(hk_graph_constant(f->g, &h, "k", &t, &st), &st, HK_FAILED_PRECONDITION, msg);
  assert_status(hk_graph_op(f->g, &h, &od, &st), &st, HK_FAILED_PRECONDITION, msg);
  assert_status(hk_graph_assign(f->g, &h, "a", v, c, &st), &st, HK_FAILED_PRECONDITION, msg);
  assert_status(hk_graph_assign_add(f->g, &h, "aa", v, c, &st), &st, HK_FAILED_PRECONDITION, msg);
  assert_status(hk_graph_group(f->g, &h, "grp", NULL, 0, &st), &st, HK_FAILED_PRECONDITION, msg);
  assert_status(hk_graph_init_op(f->g, &h, "init", NULL, 0, &st), &st, HK_FAILED_PRECONDITION, msg);
  assert_status(hk_graph_report_uninitialized(f->g, &h, "r", NULL, 0, &st), &st,
                HK_FAILED_PRECONDITION, msg);
  assert_status(hk_executor_role_add(f->ex, HK_ROLE_INIT_OP, v, &st), &st, HK_FAILED_PRECONDITION,
                msg);
  assert_status(hk_executor_default_op(f->ex, HK_DEFAULT_INIT_OP, &h, &st), &st,
                HK_FAILED_PRECONDITION, msg);
  /* nothing was added; reads still work */
  assert_int_equal(hk_executor_variable_count(f->ex), 1);
  assert_status(hk_executor_resolve_op(f->ex, "grp", &h, &st), &st, HK_NOT_FOUND, "grp");
  open_rs(f);
  assert_status(run(f, NULL, 0, &v, 1, NULL, 0, &t, &st), &st, HK_FAILED_PRECONDITION,
                "uninitialized");
}

/* ---- runs: what executes, once, in order (H30) ----------------------------------- */

static void test_graph__h30_diamond_each_op_once_in_order(void **state) {
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

static void test_graph__h30_control_dependencies_run_first(void **state) {
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

/* A fed tensor replaces its computation, and the kernel sees the caller's buffer. */
static void test_graph__h30_feeds_replace_computation_zero_copy(void **state) {
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

static void test_graph__h30_placeholders_and_feed_errors(void **state) {
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

static void test_graph__h29_fetched_variable_read_at_run_start(void **state) {
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
  assert_ok(hk_raw_session_global_step(f->rs, &gsv, &st), &st);
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
  assert_ok(hk_raw_session_global_step(f->rs, &gsv, &st), &st);
  assert_int_equal(gsv, 2);

  /* without a mutator in the run, the fetch is simply the current value */
  fetch[0] = gs;
  assert_ok(run(f, NULL, 0, fetch, 1, NULL, 0, r, &st), &st);
  assert_int_equal(*(int64_t *)r[0].data, 2);
}

static void test_graph__h30_uninitialized_reads_fail(void **state) {
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
  assert_status(hk_raw_session_read_variable(f->rs, idx, &r, &st), &st, HK_FAILED_PRECONDITION, msg);

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
    assert_status(hk_raw_session_run(other, &a, &r, NULL, &st), &st, HK_FAILED_PRECONDITION,
                  "uninitialized value v");
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

static hk_code touch_kernel(void *user, hk_kernel_context *ctx, const hk_tensor *inputs,
                            size_t ninputs, hk_tensor *outputs, size_t noutputs, hk_status *status) {
  hk_tensor *v = hk_kernel_variable(ctx, 0);
  (void)inputs;
  (void)ninputs;
  (void)outputs;
  (void)noutputs;
  (void)status;
  *(void **)user = v->data;
  ((float *)v->data)[1] += 10;
  assert_null(hk_kernel_variable(ctx, 1));
  assert_non_null(hk_kernel_env(ctx));
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
  assert_ok(hk_executor_variable_info(f->ex, i1, &info, &st), &st);
  assert_true(info.flags & HK_VAR_EXTERNAL);
  assert_true(info.flags & HK_VAR_TRAINABLE);
  open_rs(f);

  /* no initializer: initialized from the start, in place */
  assert_ok(hk_raw_session_read_variable(f->rs, i1, &r, &st), &st);
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
  assert_status(hk_raw_session_read_variable(f->rs, i2, &r, &st), &st, HK_FAILED_PRECONDITION,
                "uninitialized value ext2");
  run_target(f, init);
  assert_true(host2[0] == 3.0f && host2[1] == 3.0f);
  assert_true(host[0] == 8.0f); /* init does not touch an external variable without initializer */
  assert_ok(hk_raw_session_read_variable(f->rs, i2, &r, &st), &st);
  assert_ptr_equal(r.data, host2);
  assert_ok(run(f, NULL, 0, &ext2, 1, NULL, 0, &r, &st), &st);
  assert_ptr_equal(r.data, host2);

  /* a new session shares the host buffers but not the initialized flags */
  assert_ok(hk_raw_session_open(&other, f->ex, &st), &st);
  assert_status(hk_raw_session_read_variable(other, i2, &r, &st), &st, HK_FAILED_PRECONDITION,
                "ext2");
  assert_ok(hk_raw_session_read_variable(other, i1, &r, &st), &st);
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
  assert_ok(hk_executor_variable_info(f->ex, 0, &info, &st), &st);
  assert_string_equal(info.name, "w");
  assert_true(info.tensor == w);
  assert_int_equal(info.dtype, HK_DTYPE_F32);
  assert_int_equal(info.rank, 2);
  assert_int_equal(info.dims[0], 2);
  assert_int_equal(info.dims[1], 3);
  assert_int_equal(info.flags, HK_VAR_TRAINABLE);
  assert_ok(hk_executor_variable_info(f->ex, 1, &info, &st), &st);
  assert_true(info.tensor == l);
  assert_int_equal(info.flags, HK_VAR_LOCAL);
  assert_status(hk_executor_variable_info(f->ex, 2, &info, &st), &st, HK_OUT_OF_RANGE, "2");
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
  assert_ok(hk_raw_session_read_variable(f->rs, 0, &r, &st), &st);
  assert_true(((float *)r.data)[0] == 1.0f && ((float *)r.data)[5] == 6.0f);
  assert_int_equal(r.nbytes, 24);
  assert_status(hk_raw_session_read_variable(f->rs, 1, &r, &st), &st, HK_FAILED_PRECONDITION,
                "uninitialized value l");
}

/* ---- trace (H30) ----------------------------------------------------------------- */

static void test_graph__h30_trace_lists_executed_ops(void **state) {
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

/* ---- roles, global step, defaults (C61, C62, C143, C144) ---------------------------- */

static void test_graph__role_registry(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_handle v = var_f32(f, "v", 0), a, b, out[4] = {0};
  size_t n = 99;
  assert_ok(hk_graph_group(f->g, &a, "a", NULL, 0, &st), &st);
  assert_ok(hk_graph_group(f->g, &b, "b", NULL, 0, &st), &st);
  assert_ok(hk_executor_role_get(f->ex, HK_ROLE_INIT_OP, out, 4, &n, &st), &st);
  assert_int_equal(n, 0);
  assert_ok(hk_executor_role_add(f->ex, HK_ROLE_INIT_OP, a, &st), &st);
  assert_ok(hk_executor_role_add(f->ex, HK_ROLE_INIT_OP, b, &st), &st);
  assert_ok(hk_executor_role_add(f->ex, "summary_op", v, &st), &st);
  assert_ok(hk_executor_role_get(f->ex, HK_ROLE_INIT_OP, out, 4, &n, &st), &st);
  assert_int_equal(n, 2);
  assert_true(out[0] == a && out[1] == b);
  out[0] = out[1] = 0;
  assert_ok(hk_executor_role_get(f->ex, HK_ROLE_INIT_OP, out, 1, &n, &st), &st);
  assert_int_equal(n, 2); /* the total, even when cap is smaller */
  assert_true(out[0] == a && out[1] == 0);
  assert_ok(hk_executor_role_get(f->ex, "summary_op", NULL, 0, &n, &st), &st);
  assert_int_equal(n, 1);
  assert_status(hk_executor_role_add(f->ex, HK_ROLE_INIT_OP, (hk_handle)42, &st), &st,
                HK_INVALID_ARGUMENT, "handle");
  assert_status(hk_executor_role_add(f->ex, "", a, &st), &st, HK_INVALID_ARGUMENT, "role");
  assert_status(hk_executor_role_get(f->ex, HK_ROLE_INIT_OP, NULL, 2, &n, &st), &st,
                HK_INVALID_ARGUMENT, "out");
}

static void test_graph__c144_global_step(void **state) {
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
  assert_ok(hk_executor_role_get(f->ex, HK_ROLE_GLOBAL_STEP, h, 2, &n, &st), &st);
  assert_int_equal(n, 1);
  assert_true(h[0] == gs);
  assert_ok(hk_executor_global_step(f->ex, &info, &idx, &st), &st);
  assert_string_equal(info.name, "global_step");
  assert_true(info.tensor == gs);
  assert_int_equal(info.dtype, HK_DTYPE_I64);
  assert_int_equal(info.rank, 0);
  assert_int_equal(info.flags, 0); /* global, not trainable */
  open_rs(f);
  run_target(f, init_all(f, "init"));
  assert_ok(hk_raw_session_global_step(f->rs, &v, &st), &st);
  assert_int_equal(v, 0);
}

static void test_graph__c143_existing_global_step_checked(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  int64_t d1[1] = {1};
  hk_handle h;
  var_full(f, "global_step", HK_DTYPE_F32, 0, NULL, HK_INIT_ZEROS, 0, 0, NULL);
  assert_status(hk_graph_get_or_create_global_step(f->g, &h, &st), &st, HK_INVALID_ARGUMENT,
                "Existing \"global_step\" does not have integer type: f32");
  assert_status(hk_graph_create_global_step(f->g, &h, &st), &st, HK_ALREADY_EXISTS,
                "\"global_step\" already exists.");
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

static void test_graph__c62_default_ops(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_handle init, local_init, ready, ready_local, again, fetch[2];
  hk_tensor r[2];
  var_f32(f, "g1", 1);
  var_full(f, "l1", HK_DTYPE_F32, 0, NULL, HK_INIT_CONSTANT, 2, HK_VAR_LOCAL, NULL);
  var_f32(f, "g2", 3);
  assert_ok(hk_executor_default_op(f->ex, HK_DEFAULT_INIT_OP, &init, &st), &st);
  assert_ok(hk_executor_default_op(f->ex, HK_DEFAULT_LOCAL_INIT_OP, &local_init, &st), &st);
  assert_ok(hk_executor_default_op(f->ex, HK_DEFAULT_READY_OP, &ready, &st), &st);
  assert_ok(hk_executor_default_op(f->ex, HK_DEFAULT_READY_FOR_LOCAL_INIT_OP, &ready_local, &st), &st);
  /* op handles for the init kinds, tensor handles for the readiness kinds */
  assert_string_equal(hk_executor_handle_name(f->ex, init), "init");
  assert_string_equal(hk_executor_handle_name(f->ex, local_init), "init_local");
  assert_string_equal(hk_executor_handle_name(f->ex, ready), "report_uninitialized_variables:0");
  assert_string_equal(hk_executor_handle_name(f->ex, ready_local),
                      "report_uninitialized_global_variables:0");
  /* a second build gets a fresh name */
  assert_ok(hk_executor_default_op(f->ex, HK_DEFAULT_INIT_OP, &again, &st), &st);
  assert_string_equal(hk_executor_handle_name(f->ex, again), "init_1");
  assert_status(hk_executor_default_op(f->ex, (hk_default_op)9, &again, &st), &st,
                HK_INVALID_ARGUMENT, "kind");
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

static void test_graph__h30_describe_and_control(void **state) {
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

/* ---- PRNG golden values ------------------------------------------------------------- */

static void read_var(fx *f, size_t idx, hk_tensor *out) {
  hk_status st = HK_STATUS_INIT;
  assert_ok(hk_raw_session_read_variable(f->rs, idx, out, &st), &st);
}

static size_t random_var(fx *f, const char *name, hk_dtype dt, int64_t n, hk_init_kind kind,
                         double a, double b, uint64_t seed) {
  hk_variable_def d = HK_VARIABLE_DEF_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_handle h;
  size_t idx;
  d.name = name;
  d.dtype = dt;
  d.rank = 1;
  d.dims = &n;
  d.init.kind = kind;
  d.init.minval = d.init.mean = a;
  d.init.maxval = d.init.stddev = b;
  d.init.seed = seed;
  assert_ok(hk_graph_variable(f->g, &h, &d, &st), &st);
  assert_ok(hk_executor_find_variable(f->ex, name, &idx, &st), &st);
  return idx;
}

static uint32_t f32_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  return u;
}

static void test_graph__prng_golden_values(void **state) {
  fx *f = *state;
  /* Vigna's splitmix64.c seeded with 0 outputs these first three values. */
  static const uint64_t splitmix0[3] = {0xE220A8397B1DCDAFull, 0x6E789E6AA1B965F4ull,
                                        0x06C45D188009454Full};
  static const uint32_t uni_f32[4] = {0x3ef75cc8u, 0xbf2e203au, 0xbee2b664u, 0xbe9f8c7cu};
  static const double uni_f64[4] = {0x1.f2fb6975bdfa2p+1, 0x1.57d3037c52de0p-3,
                                    0x1.203e50a0e95d7p+3, 0x1.75134c99021b6p+2};
  static const uint32_t norm_f32[4] = {0x40298c9eu, 0x3f131a4eu, 0x3e0b3906u, 0x3f7a6862u};
  size_t raw = random_var(f, "raw", HK_DTYPE_F64, 3, HK_INIT_UNIFORM, 0, 1, 0);
  size_t u32 = random_var(f, "u32", HK_DTYPE_F32, 4, HK_INIT_UNIFORM, -1, 1, 42);
  size_t u64 = random_var(f, "u64", HK_DTYPE_F64, 4, HK_INIT_UNIFORM, 0, 10, 7);
  size_t n32 = random_var(f, "n32", HK_DTYPE_F32, 4, HK_INIT_NORMAL, 1, 2, 123);
  hk_tensor r;
  int i;
  open_rs(f);
  run_target(f, init_all(f, "init"));

  read_var(f, raw, &r);
  for (i = 0; i < 3; i++)
    assert_true((uint64_t)(((double *)r.data)[i] * 0x1p53) == (splitmix0[i] >> 11));
  read_var(f, u32, &r);
  for (i = 0; i < 4; i++) assert_int_equal(f32_bits(((float *)r.data)[i]), uni_f32[i]);
  read_var(f, u64, &r);
  for (i = 0; i < 4; i++) assert_true(((double *)r.data)[i] == uni_f64[i]);
  read_var(f, n32, &r);
  for (i = 0; i < 4; i++) assert_int_equal(f32_bits(((float *)r.data)[i]), norm_f32[i]);
}

static void test_graph__prng_deterministic_and_in_range(void **state) {
  fx *f = *state;
  enum { N = 2000 };
  size_t a = random_var(f, "a", HK_DTYPE_F32, N, HK_INIT_UNIFORM, 0.25, 0.5, 99);
  size_t b = random_var(f, "b", HK_DTYPE_F32, N, HK_INIT_UNIFORM, 0.25, 0.5, 99);
  size_t c = random_var(f, "c", HK_DTYPE_F32, N, HK_INIT_UNIFORM, 0.25, 0.5, 100);
  size_t h = random_var(f, "h", HK_DTYPE_F16, N, HK_INIT_UNIFORM, -2, 2, 5);
  size_t bf = random_var(f, "bf", HK_DTYPE_BF16, N, HK_INIT_UNIFORM, 1, 1.0078125, 5);
  size_t n = random_var(f, "n", HK_DTYPE_F64, N, HK_INIT_NORMAL, 10, 0.5, 1);
  size_t z = random_var(f, "z", HK_DTYPE_F64, 4, HK_INIT_NORMAL, 3, 0, 1);
  hk_tensor ra, rb, rc;
  double sum = 0, sq = 0;
  int i, ndiff = 0;
  open_rs(f);
  run_target(f, init_all(f, "init"));
  read_var(f, a, &ra);
  read_var(f, b, &rb);
  read_var(f, c, &rc);
  assert_memory_equal(ra.data, rb.data, ra.nbytes);
  for (i = 0; i < N; i++) {
    float x = ((float *)ra.data)[i];
    assert_true(x >= 0.25f && x < 0.5f);
    ndiff += x != ((float *)rc.data)[i];
  }
  assert_true(ndiff > N - 10);
  read_var(f, h, &ra);
  for (i = 0; i < N; i++) {
    uint16_t bits = ((uint16_t *)ra.data)[i];
    /* |x| <= 2 in binary16: exponent field <= 16, and +2.0 (0x4000) excluded */
    assert_true((bits & 0x7C00u) <= 0x4000u);
    assert_true(bits != 0x4000u);
  }
  read_var(f, bf, &ra);
  for (i = 0; i < N; i++) /* [1, 1 + 2^-7): only 1.0 is representable in bfloat16 */
    assert_int_equal(((uint16_t *)ra.data)[i], 0x3F80u);
  read_var(f, n, &ra);
  for (i = 0; i < N; i++) {
    double x = ((double *)ra.data)[i];
    sum += x;
    sq += x * x;
  }
  sum /= N;
  sq = sq / N - sum * sum;
  assert_true(fabs(sum - 10) < 0.05);
  assert_true(fabs(sqrt(sq) - 0.5) < 0.05);
  read_var(f, z, &ra);
  for (i = 0; i < 4; i++) assert_true(((double *)ra.data)[i] == 3.0);
}

static void test_graph__constant_initializers_all_dtypes(void **state) {
  fx *f = *state;
  int64_t two = 2;
  size_t i8, u16, i64, bl, f16, bf16, f64;
  hk_tensor r;
  i8 = random_var(f, "i8", HK_DTYPE_I8, two, HK_INIT_ZEROS, 0, 0, 0);
  (void)i8;
  open_rs(f);
  {
    hk_status st = HK_STATUS_INIT;
    hk_variable_def d = HK_VARIABLE_DEF_INIT;
    hk_handle h;
    const struct {
      const char *name;
      hk_dtype dt;
      double v;
    } cases[] = {{"ci8", HK_DTYPE_I8, -128}, {"cu16", HK_DTYPE_U16, 65535},
                 {"ci64", HK_DTYPE_I64, -5e15}, {"cb", HK_DTYPE_BOOL, 3},
                 {"cf16", HK_DTYPE_F16, 1.5}, {"cbf16", HK_DTYPE_BF16, -2},
                 {"cf64", HK_DTYPE_F64, 0.1}};
    size_t k;
    for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
      d.name = cases[k].name;
      d.dtype = cases[k].dt;
      d.rank = 1;
      d.dims = &two;
      d.init.kind = HK_INIT_CONSTANT;
      d.init.value = cases[k].v;
      assert_ok(hk_graph_variable(f->g, &h, &d, &st), &st);
    }
    run_target(f, init_all(f, "init"));
    assert_ok(hk_executor_find_variable(f->ex, "ci8", &i8, &st), &st);
    assert_ok(hk_executor_find_variable(f->ex, "cu16", &u16, &st), &st);
    assert_ok(hk_executor_find_variable(f->ex, "ci64", &i64, &st), &st);
    assert_ok(hk_executor_find_variable(f->ex, "cb", &bl, &st), &st);
    assert_ok(hk_executor_find_variable(f->ex, "cf16", &f16, &st), &st);
    assert_ok(hk_executor_find_variable(f->ex, "cbf16", &bf16, &st), &st);
    assert_ok(hk_executor_find_variable(f->ex, "cf64", &f64, &st), &st);
  }
  read_var(f, i8, &r);
  assert_int_equal(((int8_t *)r.data)[1], -128);
  read_var(f, u16, &r);
  assert_int_equal(((uint16_t *)r.data)[1], 65535);
  read_var(f, i64, &r);
  assert_true(((int64_t *)r.data)[0] == INT64_C(-5000000000000000));
  read_var(f, bl, &r);
  assert_int_equal(((uint8_t *)r.data)[0], 1);
  read_var(f, f16, &r);
  assert_int_equal(((uint16_t *)r.data)[0], 0x3E00u);
  read_var(f, bf16, &r);
  assert_int_equal(((uint16_t *)r.data)[1], 0xC000u);
  read_var(f, f64, &r);
  assert_true(((double *)r.data)[0] == 0.1);
  read_var(f, 0, &r); /* zeros */
  assert_int_equal(((int8_t *)r.data)[0], 0);
}

/* Run an init op over `var` alone in a new raw session and fetch it. */
static hk_tensor init_and_fetch(fx *f, hk_handle var) {
  hk_status st = HK_STATUS_INIT;
  hk_handle init;
  hk_tensor r;
  assert_ok(hk_graph_init_op(f->g, &init, "init", &var, 1, &st), &st);
  open_rs(f);
  run_target(f, init);
  assert_ok(run(f, NULL, 0, &var, 1, NULL, 0, &r, &st), &st);
  return r;
}

/*
 * H3/H30: a BOOL variable accepts any finite constant (hk_graph_variable
 * validates it and the value means "nonzero"), 1e30 included: the kernel
 * looks at the dtype before any conversion to int64_t (which would be
 * undefined for 1e30; UBSan: float-cast-overflow).
 */
static void test_graph__h3_bool_constant_initializer_out_of_int64_range(void **state) {
  fx *f = *state;
  hk_handle v = var_full(f, "flag", HK_DTYPE_BOOL, 0, NULL, HK_INIT_CONSTANT, 1e30, HK_VAR_TRAINABLE, NULL);
  hk_tensor r = init_and_fetch(f, v);
  assert_int_equal(r.dtype, HK_DTYPE_BOOL);
  assert_int_equal(*(const uint8_t *)r.data, 1);
}

/*
 * H3/H30: a U64 constant up to 2^64 - 2048 is accepted by the initializer
 * check and stored exactly, above INT64_MAX too (never converted to int64_t
 * first, which would be undefined; UBSan: float-cast-overflow).
 */
static void test_graph__h3_u64_constant_initializer_above_int64_max(void **state) {
  fx *f = *state;
  hk_handle v = var_full(f, "big", HK_DTYPE_U64, 0, NULL, HK_INIT_CONSTANT, 1e19, HK_VAR_TRAINABLE, NULL);
  hk_tensor r = init_and_fetch(f, v);
  assert_int_equal(r.dtype, HK_DTYPE_U64);
  assert_true(*(const uint64_t *)r.data == UINT64_C(10000000000000000000));
}

static void test_graph__assign_add_dtypes(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  int32_t d32 = 2147483647;
  uint16_t h16 = 0x3C00; /* 1.0 in binary16 */
  hk_tensor t;
  hk_handle vi, ci, opi, vh, ch, oph, init, fetch[2];
  hk_tensor r[2];
  vi = var_full(f, "vi", HK_DTYPE_I32, 0, NULL, HK_INIT_CONSTANT, 1, 0, NULL);
  assert_ok(hk_tensor_init(&t, HK_DTYPE_I32, 0, NULL, &d32, &st), &st);
  assert_ok(hk_graph_constant(f->g, &ci, "ci", &t, &st), &st);
  assert_ok(hk_graph_assign_add(f->g, &opi, "addi", vi, ci, &st), &st);
  vh = var_full(f, "vh", HK_DTYPE_F16, 0, NULL, HK_INIT_CONSTANT, 0.5, 0, NULL);
  assert_ok(hk_tensor_init(&t, HK_DTYPE_F16, 0, NULL, &h16, &st), &st);
  assert_ok(hk_graph_constant(f->g, &ch, "ch", &t, &st), &st);
  assert_ok(hk_graph_assign_add(f->g, &oph, "addh", vh, ch, &st), &st);
  init = init_all(f, "init");
  open_rs(f);
  run_target(f, init);
  fetch[0] = out0(f, opi);
  fetch[1] = out0(f, oph);
  assert_ok(run(f, NULL, 0, fetch, 2, NULL, 0, r, &st), &st);
  assert_int_equal(*(int32_t *)r[0].data, INT32_MIN); /* wraps, no UB */
  assert_int_equal(*(uint16_t *)r[1].data, 0x3E00u); /* 1.5 */
}

/* ---- errors from kernels, closed sessions, late ops ----------------------------------- */

static hk_code failing_kernel(void *user, hk_kernel_context *ctx, const hk_tensor *inputs,
                              size_t ninputs, hk_tensor *outputs, size_t noutputs,
                              hk_status *status) {
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
static void test_graph__h30_assign_from_kernel_output_with_rank_over_max(void **state) {
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
  assert_ok(hk_graph_op_output(f->g, op, 0, &t, &st), &st);
  assert_ok(hk_graph_assign(f->g, &assign, "assign", var, t, &st), &st);
  assert_ok(hk_graph_init_op(f->g, &init, "init", &var, 1, &st), &st);
  open_rs(f);
  run_target(f, init);
  assert_status(run(f, NULL, 0, NULL, 0, &assign, 1, NULL, &st), &st, HK_INVALID_ARGUMENT, "assign");
}

static void test_graph__h30_run_after_close_fails(void **state) {
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

static void test_graph__h7_steady_state_runs_allocate_nothing(void **state) {
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
    assert_true(*(float *)r[0].data == 6.0f);        /* 3 + 2 + 1 */
    assert_int_equal(r[2].dims[0], 0);
    assert_int_equal(md.ntrace, 3); /* loss, train, ready */
    assert_ok(hk_raw_session_run(f->rs, &args2, r, NULL, &st), &st);
    assert_int_equal(*(int64_t *)r[0].data, 3 + i);
  }
  assert_int_equal(test_alloc_count(&f->te->alloc), 0);
  assert_int_equal(rec.calls[0], 102);
}

/* ---- house style 22a: OOM loop -------------------------------------------------------- */

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
      (rc = hk_executor_default_op(hk_graph_executor(g), HK_DEFAULT_INIT_OP, &init, st)) != HK_OK ||
      (rc = hk_executor_role_add(hk_graph_executor(g), HK_ROLE_INIT_OP, init, st)) != HK_OK ||
      (rc = hk_graph_finalize(g, st)) != HK_OK ||
      (rc = hk_raw_session_open(&rs, hk_graph_executor(g), st)) != HK_OK)
    goto done;
  memset(&a, 0, sizeof(a));
  a.targets = &init;
  a.ntargets = 1;
  if ((rc = hk_raw_session_run(rs, &a, NULL, NULL, st)) != HK_OK) goto done;
  a.targets = &inc;
  a.fetches = &gs;
  a.nfetches = 1;
  if ((rc = hk_raw_session_run(rs, &a, r, NULL, st)) != HK_OK) goto done;
  rc = hk_raw_session_global_step(rs, gs_out, st);
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
    T(test_graph__new_validates_arguments),
    T(test_graph__free_releases_everything),
    T(test_graph__h30_resolve_names_and_handles),
    T(test_graph__variable_validates_every_argument),
    T(test_graph__placeholder_constant_op_validate_arguments),
    T(test_graph__stock_ops_validate_arguments),
    T(test_graph__c3_finalized_graph_rejects_mutations),
    T(test_graph__h30_diamond_each_op_once_in_order),
    T(test_graph__h30_control_dependencies_run_first),
    T(test_graph__h30_feeds_replace_computation_zero_copy),
    T(test_graph__h30_placeholders_and_feed_errors),
    T(test_graph__h29_fetched_variable_read_at_run_start),
    T(test_graph__h30_uninitialized_reads_fail),
    T(test_graph__variables_live_per_raw_session),
    T(test_graph__external_variables_zero_copy),
    T(test_graph__variables_enumerate_read_assign),
    T(test_graph__h30_trace_lists_executed_ops),
    T(test_graph__role_registry),
    T(test_graph__c144_global_step),
    T(test_graph__c143_existing_global_step_checked),
    T(test_graph__c62_default_ops),
    T(test_graph__init_op_over_chosen_variables),
    T(test_graph__h30_describe_and_control),
    T(test_graph__prng_golden_values),
    T(test_graph__prng_deterministic_and_in_range),
    T(test_graph__constant_initializers_all_dtypes),
    T(test_graph__assign_add_dtypes),
    T(test_graph__kernel_errors_reach_the_caller),
    T(test_graph__h3_bool_constant_initializer_out_of_int64_range),
    T(test_graph__h3_u64_constant_initializer_above_int64_max),
    T(test_graph__h30_assign_from_kernel_output_with_rank_over_max),
    T(test_graph__h30_run_after_close_fails),
    T(test_graph__ops_added_after_open_are_runnable),
    T(test_graph__h7_steady_state_runs_allocate_nothing),
    T(test_graph__oom_loop_reports_and_leaks_nothing),
#undef T
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
