/*
 * Tests of the graph's summary ops (hooked/graph.h: hk_graph_scalar_summary,
 * hk_graph_histogram_summary, hk_graph_merge_summary) and of the Scaffold's
 * summary_op (C58, C61, C62, C64), which merges every registered summary.
 * The ops' bytes are decoded by tests/support/event_file.c (independent of
 * the library).
 */
#include "graph_fixture.h"
#include "event_file.h"
#include "fake_executor.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static hk_handle constant_f32(graph_fixture *f, const char *name, float v) {
  static float store[16];
  static int next;
  hk_tensor t;
  hk_handle h;
  hk_status st = HK_STATUS_INIT;
  store[next % 16] = v;
  t = hk_tensor_scalar_f32(&store[next++ % 16]);
  assert_ok(hk_graph_constant(f->g, &h, name, &t, &st), &st);
  return h;
}

static hk_handle placeholder_f32(graph_fixture *f, const char *name) {
  int64_t dims[1] = {-1};
  hk_handle h;
  hk_status st = HK_STATUS_INIT;
  assert_ok(hk_graph_placeholder(f->g, &h, name, HK_DTYPE_F32, 1, dims, &st), &st);
  return h;
}

static void open_session(graph_fixture *f) {
  hk_status st = HK_STATUS_INIT;
  if (!f->rs) assert_ok(hk_raw_session_open(&f->rs, f->ex, &st), &st);
}

/* Run with optional feed of a 1-D f32 vector to `ph`, fetching `what`. */
static hk_code fetch(graph_fixture *f, hk_handle what, hk_handle ph, const float *vals, int64_t n, hk_tensor *out,
                     hk_status *st) {
  hk_feed feed;
  hk_run_args args;
  memset(&args, 0, sizeof args);
  open_session(f);
  if (ph) {
    int64_t dims[1] = {n};
    assert_ok(hk_tensor_init(&feed.value, HK_DTYPE_F32, 1, dims, (void *)vals, st), st);
    feed.tensor = ph;
    args.feeds = &feed;
    args.nfeeds = 1;
  }
  args.fetches = &what;
  args.nfetches = 1;
  return hk_raw_session_run(f->rs, &args, out, NULL, st);
}

static void decode(const hk_tensor *t, ev_event *e) {
  assert_int_equal(t->dtype, HK_DTYPE_U8);
  assert_int_equal(t->rank, 1);
  assert_int_equal((size_t)t->dims[0], t->nbytes);
  event_summary_decode(t->data, t->nbytes, e);
}

static hk_scaffold *scaffold_new(graph_fixture *f, hk_scaffold_options *o) {
  hk_scaffold_options dflt = HK_SCAFFOLD_OPTIONS_INIT;
  hk_scaffold *s = NULL;
  hk_status st = HK_STATUS_INIT;
  if (!o) o = &dflt;
  o->env = &f->te->env;
  assert_ok(hk_scaffold_new(&s, o, &st), &st);
  return s;
}

static size_t role_count(graph_fixture *f, const char *role) {
  size_t n = 99;
  hk_status st = HK_STATUS_INIT;
  assert_ok(hk_executor_role_get(NULL, 0, &n, f->ex, role, &st), &st);
  return n;
}

/* ---- scalar ----------------------------------------------------------------------- */

/* C137: a scalar summary op serializes a Summary and is registered under the summaries role. */
static void test_summary_ops__a_scalar_summary_op_is_registered_as_a_summary(void **state) {
  graph_fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_handle x = constant_f32(f, "x", 2.5f), s = HK_NO_HANDLE;
  hk_handle gs = HK_NO_HANDLE, s2 = HK_NO_HANDLE;
  hk_tensor out;
  ev_event e;

  assert_ok(hk_graph_scalar_summary(f->g, &s, "loss_summary", "train/loss", x, &st), &st);
  assert_true(s != HK_NO_HANDLE);
  assert_string_equal(hk_executor_handle_name(f->ex, s), "loss_summary:0");
  assert_int_equal(role_count(f, HK_ROLE_SUMMARIES), 1);
  assert_ok(hk_graph_get_or_create_global_step(f->g, &gs, &st), &st);
  assert_ok(hk_graph_scalar_summary(f->g, &s2, "gs_summary", "step", gs, &st), &st); /* an int64 scalar */
  assert_int_equal(role_count(f, HK_ROLE_SUMMARIES), 2);

  assert_ok(fetch(f, s, HK_NO_HANDLE, NULL, 0, &out, &st), &st);
  decode(&out, &e);
  assert_int_equal(e.nvalues, 1);
  assert_string_equal(e.values[0].tag, "train/loss");
  assert_int_equal(e.values[0].kind, EV_SIMPLE);
  assert_true(e.values[0].simple == 2.5f);
  event_values_free(&e);
}

static void test_summary_ops__builders_refuse_bad_arguments_graph_unchanged(void **state) {
  graph_fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_handle x = constant_f32(f, "x", 1.0f), v = placeholder_f32(f, "v"), s = 7, op;
  unsigned char flag = 1;
  hk_tensor b;
  hk_handle bh;
  fake_executor *fx = fake_executor_new(NULL);
  hk_handle foreign = fake_executor_add_i64(fx, "foreign", 1);
  char longtag[HK_SUMMARY_TAG_MAX + 2];

  assert_ok(hk_tensor_init(&b, HK_DTYPE_BOOL, 0, NULL, &flag, &st), &st);
  assert_ok(hk_graph_constant(f->g, &bh, "b", &b, &st), &st);
  memset(longtag, 't', sizeof longtag - 1);
  longtag[sizeof longtag - 1] = '\0';

  assert_status(hk_graph_scalar_summary(NULL, &s, "s", "t", x, &st), &st, HK_INVALID_ARGUMENT, "g");
  assert_status(hk_graph_scalar_summary(f->g, NULL, "s", "t", x, &st), &st, HK_INVALID_ARGUMENT, "out");
  assert_status(hk_graph_scalar_summary(f->g, &s, "s", NULL, x, &st), &st, HK_INVALID_ARGUMENT, "tag");
  assert_true(s == HK_NO_HANDLE);
  assert_status(hk_graph_scalar_summary(f->g, &s, "s", "", x, &st), &st, HK_INVALID_ARGUMENT, "tag");
  assert_status(hk_graph_scalar_summary(f->g, &s, "s", longtag, x, &st), &st, HK_INVALID_ARGUMENT, "tag");
  assert_status(hk_graph_scalar_summary(f->g, &s, "s", "\xc0\xaf", x, &st), &st, HK_INVALID_ARGUMENT, "UTF-8");
  assert_status(hk_graph_scalar_summary(f->g, &s, "s", "t", v, &st), &st, HK_INVALID_ARGUMENT, "scalar");
  assert_status(hk_graph_scalar_summary(f->g, &s, "s", "t", bh, &st), &st, HK_INVALID_ARGUMENT, "bool");
  assert_status(hk_graph_scalar_summary(f->g, &s, "s", "t", foreign, &st), &st, HK_INVALID_ARGUMENT,
                "not a tensor of this graph");
  assert_status(hk_graph_scalar_summary(f->g, &s, "x", "t", x, &st), &st, HK_ALREADY_EXISTS, "x");
  assert_status(hk_graph_scalar_summary(f->g, &s, "bad name", "t", x, &st), &st, HK_INVALID_ARGUMENT, "name");
  assert_status(hk_graph_histogram_summary(f->g, &s, "h", "t", bh, &st), &st, HK_INVALID_ARGUMENT, "bool");
  assert_status(hk_graph_histogram_summary(f->g, &s, "h", NULL, v, &st), &st, HK_INVALID_ARGUMENT, "tag");
  assert_status(hk_graph_merge_summary(f->g, &s, "m", &x, 1, &st), &st, HK_INVALID_ARGUMENT,
                "not a serialized Summary");
  assert_status(hk_graph_merge_summary(f->g, &s, "m", NULL, 2, &st), &st, HK_INVALID_ARGUMENT, "inputs");
  assert_status(hk_graph_merge_summary(f->g, &s, "m", NULL, 0, &st), &st, HK_FAILED_PRECONDITION, "no summary");
  /* Nothing was added. */
  assert_int_equal(role_count(f, HK_ROLE_SUMMARIES), 0);
  assert_int_equal(hk_executor_resolve_op(&op, f->ex, "s", NULL), HK_NOT_FOUND);
  assert_int_equal(hk_executor_resolve_op(&op, f->ex, "h", NULL), HK_NOT_FOUND);
  assert_int_equal(hk_executor_resolve_op(&op, f->ex, "m", NULL), HK_NOT_FOUND);
  /* After finalization (C3). */
  assert_ok(hk_graph_finalize(f->g, &st), &st);
  assert_status(hk_graph_scalar_summary(f->g, &s, "s", "t", x, &st), &st, HK_FAILED_PRECONDITION,
                "Graph is finalized and cannot be modified.");
  assert_status(hk_graph_merge_summary(f->g, &s, "m", NULL, 0, &st), &st, HK_FAILED_PRECONDITION, "finalized");
  fake_executor_free(fx);
}

/* ---- histogram ---------------------------------------------------------------------- */

static void test_summary_ops__histogram_of_a_fed_tensor(void **state) {
  graph_fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_handle v = placeholder_f32(f, "v"), h = HK_NO_HANDLE;
  float a[3] = {1.0f, -1.0f, 4.0f}, b[5] = {0, 0, 0, 0, 1e-3f}, bad[2] = {1, NAN}, inf[1] = {HUGE_VALF};
  hk_tensor out;
  ev_event e;

  assert_ok(hk_graph_histogram_summary(f->g, &h, "w_hist", "weights", v, &st), &st);
  assert_ok(fetch(f, h, v, a, 3, &out, &st), &st);
  decode(&out, &e);
  assert_int_equal(e.nvalues, 1);
  assert_string_equal(e.values[0].tag, "weights");
  assert_int_equal(e.values[0].kind, EV_HISTO);
  assert_true(e.values[0].num == 3 && e.values[0].min == -1 && e.values[0].max == 4);
  assert_true(e.values[0].sum == 4 && e.values[0].sum_squares == 18);
  event_values_free(&e);
  assert_ok(fetch(f, h, v, b, 5, &out, &st), &st); /* another length, same op */
  decode(&out, &e);
  assert_true(e.values[0].num == 5 && e.values[0].min == 0);
  {
    double total = 0;
    size_t i;
    for (i = 0; i < e.values[0].nbuckets; i++) total += e.values[0].counts[i];
    assert_true(total == 5);
  }
  event_values_free(&e);
  assert_status(fetch(f, h, v, bad, 2, &out, &st), &st, HK_INVALID_ARGUMENT, "Nan in summary histogram for: weights");
  assert_status(fetch(f, h, v, inf, 1, &out, &st), &st, HK_INVALID_ARGUMENT,
                "Infinity in summary histogram for: weights");
}

/* ---- merge -------------------------------------------------------------------------- */

static void test_summary_ops__merge_explicit_all_and_duplicates(void **state) {
  graph_fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_handle x = constant_f32(f, "x", 1.0f), y = constant_f32(f, "y", 2.0f), v = placeholder_f32(f, "v");
  hk_handle sx, sy, hv, both, all, twice, dup_a, dup_b, dup;
  hk_handle pair[2], again[2];
  float vals[2] = {3, 4};
  hk_tensor out;
  ev_event e;

  assert_ok(hk_graph_scalar_summary(f->g, &sx, "sx", "x", x, &st), &st);
  assert_ok(hk_graph_scalar_summary(f->g, &sy, "sy", "y", y, &st), &st);
  assert_ok(hk_graph_histogram_summary(f->g, &hv, "hv", "v", v, &st), &st);
  pair[0] = sy;
  pair[1] = sx;
  assert_ok(hk_graph_merge_summary(f->g, &both, "both", pair, 2, &st), &st);
  assert_ok(hk_graph_merge_summary(f->g, &all, "all", NULL, 0, &st), &st); /* merge_all: sx, sy, hv */
  assert_int_equal(role_count(f, HK_ROLE_SUMMARIES), 3);                   /* merges register nothing */
  again[0] = both;
  again[1] = hv;
  assert_ok(hk_graph_merge_summary(f->g, &twice, "twice", again, 2, &st), &st); /* a merge of a merge */

  assert_ok(fetch(f, both, HK_NO_HANDLE, NULL, 0, &out, &st), &st);
  decode(&out, &e);
  assert_int_equal(e.nvalues, 2);
  assert_string_equal(e.values[0].tag, "y"); /* input order */
  assert_string_equal(e.values[1].tag, "x");
  assert_true(e.values[0].simple == 2.0f && e.values[1].simple == 1.0f);
  event_values_free(&e);

  assert_ok(fetch(f, all, v, vals, 2, &out, &st), &st);
  decode(&out, &e);
  assert_int_equal(e.nvalues, 3);
  assert_string_equal(e.values[0].tag, "x");
  assert_string_equal(e.values[1].tag, "y");
  assert_string_equal(e.values[2].tag, "v");
  assert_int_equal(e.values[2].kind, EV_HISTO);
  event_values_free(&e);

  assert_ok(fetch(f, twice, v, vals, 2, &out, &st), &st);
  decode(&out, &e);
  assert_int_equal(e.nvalues, 3);
  event_values_free(&e);

  /* Two values with one tag: refused when the merge runs. */
  assert_ok(hk_graph_scalar_summary(f->g, &dup_a, "dup_a", "same", x, &st), &st);
  assert_ok(hk_graph_scalar_summary(f->g, &dup_b, "dup_b", "same", y, &st), &st);
  pair[0] = dup_a;
  pair[1] = dup_b;
  assert_ok(hk_graph_merge_summary(f->g, &dup, "dup", pair, 2, &st), &st);
  assert_status(fetch(f, dup, HK_NO_HANDLE, NULL, 0, &out, &st), &st, HK_INVALID_ARGUMENT,
                "Duplicate tag same found in summary inputs");
}

/* H7: summary ops run from cached plans into pre-sized buffers. */
static void test_summary_ops__runs_of_summary_ops_allocate_nothing(void **state) {
  graph_fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_handle x = constant_f32(f, "x", 1.0f), v = placeholder_f32(f, "v"), m = HK_NO_HANDLE, s, h;
  float vals[4] = {1, 2, 3, 4};
  hk_tensor out;
  int i;
  assert_ok(hk_graph_scalar_summary(f->g, &s, "s", "x", x, &st), &st);
  assert_ok(hk_graph_histogram_summary(f->g, &h, "h", "v", v, &st), &st);
  assert_ok(hk_graph_merge_summary(f->g, &m, "m", NULL, 0, &st), &st);
  assert_ok(fetch(f, m, v, vals, 4, &out, &st), &st);
  assert_ok(fetch(f, m, v, vals, 4, &out, &st), &st);
  test_alloc_reset_counts(&f->te->alloc);
  for (i = 0; i < 20; i++) {
    vals[i % 4] = (float)i;
    assert_ok(fetch(f, m, v, vals, 4, &out, &st), &st);
  }
  assert_int_equal(test_alloc_count(&f->te->alloc), 0);
}

/* OOM while building: each failure is RESOURCE_EXHAUSTED and leaves the graph
 * as it was (the name free, the role unchanged); the builder then works. */
static void test_summary_ops__oom_builders_leave_graph_unchanged(void **state) {
  graph_fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_handle x = constant_f32(f, "x", 1.0f), v = placeholder_f32(f, "v"), out, op;
  const char *names[3] = {"s", "h", "m"};
  int k;
  for (k = 0; k < 3; k++) {
    long n;
    hk_code rc = HK_INTERNAL;
    for (n = 0; n < 100; n++) {
      size_t before = role_count(f, HK_ROLE_SUMMARIES);
      test_alloc_fail_at(&f->te->alloc, n, 0);
      if (k == 0) rc = hk_graph_scalar_summary(f->g, &out, "s", "x", x, &st);
      if (k == 1) rc = hk_graph_histogram_summary(f->g, &out, "h", "v", v, &st);
      if (k == 2) rc = hk_graph_merge_summary(f->g, &out, "m", NULL, 0, &st);
      test_alloc_fail_at(&f->te->alloc, -1, 0);
      if (rc == HK_OK) break;
      assert_status(rc, &st, HK_RESOURCE_EXHAUSTED, NULL);
      assert_true(out == HK_NO_HANDLE);
      assert_int_equal(hk_executor_resolve_op(&op, f->ex, names[k], NULL), HK_NOT_FOUND);
      assert_int_equal(role_count(f, HK_ROLE_SUMMARIES), before);
    }
    assert_int_equal(rc, HK_OK);
    assert_true(n > 0);
  }
  assert_int_equal(role_count(f, HK_ROLE_SUMMARIES), 2);
}

/* ---- the Scaffold's summary_op (C58, C61, C62, C64) -------------------------------- */

/* C62: an unset summary_op becomes one merge of the registered summaries at finalization. */
static void test_summary_ops__scaffold_default_merges_registered_summaries(void **state) {
  graph_fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_handle x = constant_f32(f, "x", 1.0f), y = constant_f32(f, "y", 2.0f), sx, sy, role_op[2];
  hk_scaffold *a = NULL, *b = NULL;
  const hk_handle *ops;
  size_t n = 9, count = 0;
  hk_tensor out;
  ev_event e;

  assert_ok(hk_graph_scalar_summary(f->g, &sx, "sx", "x", x, &st), &st);
  assert_ok(hk_graph_scalar_summary(f->g, &sy, "sy", "y", y, &st), &st);
  a = scaffold_new(f, NULL);
  assert_null(hk_scaffold_summary_op(a, &n)); /* C60: unset before finalization */
  assert_int_equal(n, 0);
  assert_ok(hk_scaffold_finalize(a, f->ex, &st), &st);
  ops = hk_scaffold_summary_op(a, &n);
  assert_int_equal(n, 1);
  assert_string_equal(hk_executor_handle_name(f->ex, ops[0]), "Merge/MergeSummary:0");
  assert_ok(hk_executor_role_get(role_op, 2, &count, f->ex, HK_ROLE_SUMMARY_OP, &st), &st);
  assert_int_equal(count, 1);
  assert_true(role_op[0] == ops[0]);
  /* C64: a second Scaffold on the same graph gets the same op. */
  b = scaffold_new(f, NULL);
  assert_ok(hk_scaffold_finalize(b, f->ex, &st), &st);
  assert_true(hk_scaffold_summary_op(b, &n)[0] == ops[0]);
  assert_int_equal(n, 1);
  assert_ok(fetch(f, ops[0], HK_NO_HANDLE, NULL, 0, &out, &st), &st);
  decode(&out, &e);
  assert_int_equal(e.nvalues, 2);
  assert_string_equal(e.values[0].tag, "x");
  assert_string_equal(e.values[1].tag, "y");
  event_values_free(&e);
  hk_scaffold_free(a);
  hk_scaffold_free(b);
  assert_null(hk_scaffold_summary_op(NULL, &n));
  assert_int_equal(n, 0);
}

/* C58, C62: a summary_op given is kept as it is; with no summary registered it stays unset. */
static void test_summary_ops__a_given_summary_op_is_kept_and_none_is_unset(void **state) {
  graph_fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_handle given[1], unset[1] = {HK_NO_HANDLE};
  hk_scaffold *none = NULL, *a = NULL, *copy = NULL, *bad = NULL;
  hk_scaffold_options so = HK_SCAFFOLD_OPTIONS_INIT, co = HK_SCAFFOLD_OPTIONS_INIT;
  size_t n = 9;

  given[0] = constant_f32(f, "not_registered", 0);
  /* No summary registered: unset (C62). */
  none = scaffold_new(f, NULL);
  assert_ok(hk_scaffold_finalize(none, f->ex, &st), &st);
  assert_null(hk_scaffold_summary_op(none, &n));
  assert_int_equal(n, 0);
  hk_scaffold_free(none);

  /* Given: taken as it is, whatever is registered. */
  so.summary_op = given;
  so.nsummary_op = 1;
  a = scaffold_new(f, &so);
  assert_true(hk_scaffold_summary_op(a, &n)[0] == given[0]);
  co.copy_from = a;
  copy = scaffold_new(f, &co); /* C58: copied */
  assert_true(hk_scaffold_summary_op(copy, &n)[0] == given[0]);
  assert_int_equal(n, 1);
  so.summary_op = unset;
  assert_status(hk_scaffold_new(&bad, &so, &st), &st, HK_INVALID_ARGUMENT, "summary_op[0]");
  so.summary_op = NULL;
  assert_status(hk_scaffold_new(&bad, &so, &st), &st, HK_INVALID_ARGUMENT, "summary_op");
  assert_null(bad);
  hk_scaffold_free(a);
  hk_scaffold_free(copy);
}

/* C61: more than one summary op registered fails finalization. */
static void test_summary_ops__more_than_one_registered_merge_fails_finalize(void **state) {
  graph_fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_handle x = constant_f32(f, "x", 1.0f), sx, m1, m2;
  hk_scaffold *a = NULL;
  size_t n = 9;
  assert_ok(hk_graph_scalar_summary(f->g, &sx, "sx", "x", x, &st), &st);
  assert_ok(hk_graph_merge_summary(f->g, &m1, "m1", NULL, 0, &st), &st);
  assert_ok(hk_graph_merge_summary(f->g, &m2, "m2", NULL, 0, &st), &st);
  assert_ok(hk_executor_role_add(f->ex, HK_ROLE_SUMMARY_OP, m1, &st), &st);
  a = scaffold_new(f, NULL);
  assert_ok(hk_executor_role_add(f->ex, HK_ROLE_SUMMARY_OP, m2, &st), &st);
  assert_status(hk_scaffold_finalize(a, f->ex, &st), &st, HK_FAILED_PRECONDITION,
                "More than one item in the collection \"summary_op\". Please indicate which one to use by passing it "
                "to the Scaffold constructor as: summary_op=<item to use>");
  assert_null(hk_scaffold_summary_op(a, &n));
  hk_scaffold_free(a);
}

/* C62: an executor without HK_CONTROL_MERGE_SUMMARIES: the Scaffold takes the
 * registered summaries themselves, in order, and registers nothing. */
static void test_summary_ops__without_a_merge_the_scaffold_takes_the_summaries(void **state) {
  graph_fixture *f = *state;
  fake_executor *fx = fake_executor_new(&f->te->env);
  hk_handle a = fake_executor_add_tensor(fx, "a", HK_DTYPE_U8, 1, (int64_t[]){0});
  hk_handle b = fake_executor_add_tensor(fx, "b", HK_DTYPE_U8, 1, (int64_t[]){0});
  hk_scaffold *s = NULL;
  hk_status st = HK_STATUS_INIT;
  const hk_handle *ops;
  size_t n = 0;
  fake_executor_role_register(fx, HK_ROLE_SUMMARIES, a);
  fake_executor_role_register(fx, HK_ROLE_SUMMARIES, b);
  s = scaffold_new(f, NULL);
  assert_ok(hk_scaffold_finalize(s, fake_executor_executor(fx), &st), &st);
  ops = hk_scaffold_summary_op(s, &n);
  assert_int_equal(n, 2);
  assert_true(ops[0] == a && ops[1] == b);
  assert_int_equal(fake_executor_role_count(fx, HK_ROLE_SUMMARY_OP, NULL), 0);
  hk_scaffold_free(s);
  fake_executor_free(fx);
}

static void test_summary_ops__merge_control_refuses_bad_requests(void **state) {
  graph_fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_merge_summaries_request req = {NULL, 0, HK_NO_HANDLE};
  assert_status(hk_executor_control(f->ex, HK_CONTROL_MERGE_SUMMARIES, NULL, &st), &st, HK_INVALID_ARGUMENT, "arg");
  assert_status(hk_executor_control(f->ex, HK_CONTROL_MERGE_SUMMARIES, &req, &st), &st, HK_INVALID_ARGUMENT,
                "no inputs");
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, graph_fixture_setup, graph_fixture_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_summary_ops__a_scalar_summary_op_is_registered_as_a_summary),
      T(test_summary_ops__builders_refuse_bad_arguments_graph_unchanged),
      T(test_summary_ops__histogram_of_a_fed_tensor),
      T(test_summary_ops__merge_explicit_all_and_duplicates),
      T(test_summary_ops__runs_of_summary_ops_allocate_nothing),
      T(test_summary_ops__oom_builders_leave_graph_unchanged),
      T(test_summary_ops__scaffold_default_merges_registered_summaries),
      T(test_summary_ops__a_given_summary_op_is_kept_and_none_is_unset),
      T(test_summary_ops__more_than_one_registered_merge_fails_finalize),
      T(test_summary_ops__without_a_merge_the_scaffold_takes_the_summaries),
      T(test_summary_ops__merge_control_refuses_bad_requests),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
