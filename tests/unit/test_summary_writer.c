/*
 * Tests of the summary writer (hooked/summary.h; contract H26, H43): a
 * program's own writer and the writer a session shares for a directory.
 * Files are decoded by tests/support/event_file.c, which shares no code with
 * the library (framing, both CRCs, every field by number).
 */
#include "session_fixture.h"
#include "event_file.h"
#include "faulty_fs.h"
#include "tmpdir.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct fixture {
  test_env *te;
  char *tmp;
  char *dir; /* tmp/logs/run1: missing until the first write */
  hk_summary_writer_options o;
  hk_summary_writer *w;
  hk_status st;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  assert_non_null(f);
  f->te = test_env_new();
  f->tmp = test_tmpdir_new("summary");
  f->dir = test_path(f->tmp, "logs/run1");
  assert_int_equal(hk_summary_writer_options_init(&f->o, HK_SUMMARY_WRITER_OPTIONS_VERSION), HK_OK);
  f->o.env = &f->te->env;
  f->o.logdir = f->dir;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  hk_summary_writer_free(f->w);
  test_tmpdir_free(f->tmp);
  free(f->dir);
  return fixture_release(f, NULL, f->te);
}

static void new_ok(fixture *f) { assert_ok(hk_summary_writer_new(&f->w, &f->o, &f->st), &f->st); }

static void close_ok(fixture *f) { assert_ok(hk_summary_writer_close(f->w, &f->st), &f->st); }

/* The file name the mock wall clock (1.7e9) gives. */
static void expected_name(char *out, size_t cap, const char *suffix) {
  char host[256];
  assert_int_equal(gethostname(host, sizeof host), 0);
  host[sizeof host - 1] = '\0';
  snprintf(out, cap, "events.out.tfevents.1700000000.%s%s", host, suffix);
}

/* ---- options (H3, H4, H43) -------------------------------------------------------- */

/* H43: options_init refuses a NULL struct or an unknown version. */
static void test_summary_writer__options_init_checks_its_arguments_and_version(void **state) {
  hk_summary_writer_options o;
  (void)state;
  assert_int_equal(hk_summary_writer_options_init(NULL, HK_SUMMARY_WRITER_OPTIONS_VERSION), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_summary_writer_options_init(&o, 0), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_summary_writer_options_init(&o, HK_SUMMARY_WRITER_OPTIONS_VERSION + 1), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_summary_writer_options_init(&o, HK_SUMMARY_WRITER_OPTIONS_VERSION), HK_OK);
  assert_int_equal(o.version, HK_SUMMARY_WRITER_OPTIONS_VERSION);
  assert_null(o.logdir);
  assert_true(hk_secs_is_unset(o.flush_secs));
  assert_null(o.filename_suffix);
}

static void expect_refused(fixture *f, const char *substr) {
  hk_summary_writer *w = (hk_summary_writer *)f;
  assert_status(hk_summary_writer_new(&w, &f->o, &f->st), &f->st, HK_INVALID_ARGUMENT, substr);
  assert_null(w);
}

/* H3: bad options are INVALID_ARGUMENT naming them, and nothing is created on disk. */
static void test_summary_writer__bad_options_are_refused_and_nothing_is_created(void **state) {
  fixture *f = *state;
  hk_env bad_env = f->te->env;
  char longsuffix[300];

  assert_status(hk_summary_writer_new(NULL, &f->o, &f->st), &f->st, HK_INVALID_ARGUMENT, "out");
  {
    hk_summary_writer *w = (hk_summary_writer *)f;
    assert_status(hk_summary_writer_new(&w, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "opts");
    assert_null(w);
  }
  f->o.version = 0;
  expect_refused(f, "version");
  f->o.version = HK_SUMMARY_WRITER_OPTIONS_VERSION + 1;
  expect_refused(f, "version");
  f->o.version = HK_SUMMARY_WRITER_OPTIONS_VERSION;
  bad_env.version = 0;
  f->o.env = &bad_env;
  expect_refused(f, "env");
  f->o.env = &f->te->env;
  f->o.logdir = NULL;
  expect_refused(f, "logdir");
  f->o.logdir = "";
  expect_refused(f, "logdir");
  f->o.logdir = f->dir;
  f->o.flush_secs = 0;
  expect_refused(f, "flush_secs");
  f->o.flush_secs = -1;
  expect_refused(f, "flush_secs");
  f->o.flush_secs = NAN;
  expect_refused(f, "flush_secs");
  f->o.flush_secs = HUGE_VAL;
  expect_refused(f, "flush_secs");
  f->o.flush_secs = HK_UNSET_SECS;
  f->o.filename_suffix = "a/b";
  expect_refused(f, "filename_suffix");
  f->o.filename_suffix = "a\nb";
  expect_refused(f, "filename_suffix");
  memset(longsuffix, 'x', sizeof longsuffix - 1);
  longsuffix[sizeof longsuffix - 1] = '\0';
  f->o.filename_suffix = longsuffix;
  expect_refused(f, "filename_suffix");
  /* H3: nothing on disk. */
  assert_false(test_path_exists(f->dir));
  assert_int_equal(test_alloc_live(&f->te->alloc), 0);
}

/* ---- files (H26, H43) --------------------------------------------------------------- */

/* H26: a writer's directory and file are created at its first write, parents included. */
static void test_summary_writer__created_at_first_write_with_parents(void **state) {
  fixture *f = *state;
  char want[700], names[4][600];
  ev_file *ef;
  const ev_value *v;

  new_ok(f);
  assert_false(test_path_exists(f->dir)); /* not by _new */
  assert_null(hk_summary_writer_path(f->w));
  assert_string_equal(hk_summary_writer_logdir(f->w), f->dir);
  test_clock_advance(&f->te->clock, 0.25);
  assert_ok(hk_summary_writer_scalar(f->w, "loss", 7, 0.5, &f->st), &f->st);
  assert_true(test_path_exists(f->dir));
  assert_non_null(hk_summary_writer_path(f->w));
  close_ok(f);

  assert_int_equal(event_file_list(f->dir, names, 4), 1);
  expected_name(want, sizeof want, "");
  assert_string_equal(names[0], want);
  ef = event_file_only(f->dir);
  assert_int_equal(ef->n, 2);
  assert_int_equal(ef->events[0].kind, EV_FILE_VERSION);
  assert_string_equal(ef->events[0].version, "brain.Event:2");
  assert_true(ef->events[0].has_wall && ef->events[0].wall == 1.7e9 + 0.25); /* the wall clock at the write */
  assert_int_equal(ef->events[1].kind, EV_SUMMARY);
  assert_true(ef->events[1].has_step && ef->events[1].step == 7);
  assert_true(ef->events[1].wall == 1.7e9 + 0.25);
  assert_int_equal(ef->events[1].nvalues, 1);
  v = &ef->events[1].values[0];
  assert_string_equal(v->tag, "loss");
  assert_int_equal(v->kind, EV_SIMPLE);
  assert_true(v->simple == 0.5f);
  assert_false(v->has_metadata);
  event_file_free(ef);
}

/* H43: filename_suffix is appended to the event file's name. */
static void test_summary_writer__filename_suffix_ends_the_file_name(void **state) {
  fixture *f = *state;
  char want[700], names[4][600];
  f->o.filename_suffix = ".eval";
  new_ok(f);
  assert_ok(hk_summary_writer_scalar(f->w, "acc", 1, 0.75, &f->st), &f->st);
  close_ok(f);
  assert_int_equal(event_file_list(f->dir, names, 4), 1);
  expected_name(want, sizeof want, ".eval");
  assert_string_equal(names[0], want);
}

/* H26: a name already taken in the same second (an earlier run's file) is
 * tried again with ".1" inserted; the attempt at the taken name leaves no
 * error in the caller's status, and the earlier file is not touched. */
static void test_summary_writer__taken_name_gets_a_counter_and_no_error(void **state) {
  fixture *f = *state;
  char taken[700], want[700], names[4][600];
  char *path;

  expected_name(taken, sizeof taken, "");
  expected_name(want, sizeof want, ".1");
  assert_ok(hk_fs_make_dirs(NULL, f->dir, &f->st), &f->st);
  path = test_path(f->dir, taken);
  assert_int_equal(test_write_file(path, "earlier run", 11), 0);
  new_ok(f);
  hk_status_clear(&f->st);
  assert_int_equal(hk_summary_writer_scalar(f->w, "loss", 1, 0.5, &f->st), HK_OK);
  assert_int_equal(f->st.code, HK_OK);
  assert_string_equal(f->st.message, "");
  close_ok(f);
  assert_int_equal(event_file_list(f->dir, names, 4), 2);
  assert_string_equal(names[0], taken);
  assert_string_equal(names[1], want);
  {
    size_t n = 0;
    char *earlier = test_read_file(path, &n);
    assert_true(earlier != NULL && n == 11 && memcmp(earlier, "earlier run", 11) == 0);
    free(earlier);
  }
  free(path);
}

/* H26: a writer that is never written creates nothing, closes and frees cleanly. */
static void test_summary_writer__unused_writer_creates_nothing(void **state) {
  fixture *f = *state;
  new_ok(f);
  assert_ok(hk_summary_writer_flush(f->w, &f->st), &f->st);
  close_ok(f);
  assert_false(test_path_exists(f->dir));
}

/* ---- scalars (H43) --------------------------------------------------------------------- */

/* H43: scalars are written as float simple values, at their step. */
static void test_summary_writer__scalars_are_written_as_float_simple_values(void **state) {
  fixture *f = *state;
  ev_file *ef;
  const ev_event *e;
  const ev_value *v;
  new_ok(f);
  assert_ok(hk_summary_writer_scalar(f->w, "train/loss", 0, 1.0 / 3.0, &f->st), &f->st);
  assert_ok(hk_summary_writer_scalar(f->w, "train/loss", -5, NAN, &f->st), &f->st);
  assert_ok(hk_summary_writer_scalar(f->w, "big", INT64_MAX, 1e300, &f->st), &f->st);
  assert_ok(hk_summary_writer_scalar(f->w, "\xc3\xa9t\xc3\xa9", 3, -2, &f->st), &f->st); /* UTF-8 "été" */
  close_ok(f);
  ef = event_file_only(f->dir);
  assert_int_equal(ef->n, 5);
  v = event_file_find(ef, "train/loss", 0, &e);
  assert_non_null(v);
  assert_true(v->simple == (float)(1.0 / 3.0));
  assert_true(e->step == 0 && e->has_step);
  v = event_file_find(ef, "train/loss", 2, &e);
  assert_true(isnan(v->simple));
  assert_true(e->step == -5); /* a negative step is a 10-byte varint */
  v = event_file_find(ef, "big", 0, &e);
  assert_true(isinf(v->simple) && v->simple > 0);
  assert_true(e->step == INT64_MAX);
  v = event_file_find(ef, "\xc3\xa9t\xc3\xa9", 0, &e);
  assert_true(v->simple == -2.0f);
  event_file_free(ef);
}

/* H43: a NULL, empty or too long tag is INVALID_ARGUMENT naming the problem. */
static void test_summary_writer__bad_tags_are_refused_naming_the_problem(void **state) {
  fixture *f = *state;
  char longtag[HK_SUMMARY_TAG_MAX + 2];
  new_ok(f);
  assert_status(hk_summary_writer_scalar(NULL, "x", 0, 1, &f->st), &f->st, HK_INVALID_ARGUMENT, "writer");
  assert_status(hk_summary_writer_scalar(f->w, NULL, 0, 1, &f->st), &f->st, HK_INVALID_ARGUMENT, "tag");
  assert_status(hk_summary_writer_scalar(f->w, "", 0, 1, &f->st), &f->st, HK_INVALID_ARGUMENT, "tag is empty");
  memset(longtag, 'a', sizeof longtag - 1);
  longtag[sizeof longtag - 1] = '\0';
  assert_status(hk_summary_writer_scalar(f->w, longtag, 0, 1, &f->st), &f->st, HK_INVALID_ARGUMENT, "tag");
  longtag[HK_SUMMARY_TAG_MAX] = '\0'; /* exactly the maximum is fine */
  assert_ok(hk_summary_writer_scalar(f->w, longtag, 0, 1, &f->st), &f->st);
  assert_status(hk_summary_writer_text(f->w, "bad\xff", 0, "x", &f->st), &f->st, HK_INVALID_ARGUMENT, "UTF-8");
  assert_status(hk_summary_writer_text(f->w, "\xed\xa0\x80", 0, "x", &f->st), &f->st, HK_INVALID_ARGUMENT,
                "UTF-8"); /* a surrogate */
  assert_status(hk_summary_writer_text(f->w, "ok", 0, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "text");
  assert_status(hk_summary_writer_histogram(f->w, "ok", 0, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "values");
  close_ok(f);
  {
    ev_file *ef = event_file_only(f->dir);
    assert_int_equal(ef->n, 2); /* file_version and the one accepted scalar */
    event_file_free(ef);
  }
}

/* ---- histograms (H43: TensorFlow's histogram.cc) --------------------------------------- */

/* The expected encoding, computed here from TensorFlow's description alone. */
typedef struct expect_histo {
  size_t n;
  double limits[1600], counts[1600];
} expect_histo;

static void tf_limits(double *out, size_t *count) {
  double pos[800], v = 1.0e-12;
  size_t k = 0, i, n = 0;
  while (v < 1.0e20) {
    pos[k++] = v;
    v *= 1.1;
  }
  out[n++] = -DBL_MAX;
  for (i = k; i-- > 0;) out[n++] = -pos[i];
  out[n++] = 0.0;
  for (i = 0; i < k; i++) out[n++] = pos[i];
  out[n++] = DBL_MAX;
  *count = n;
}

static void tf_encode(const double *values, size_t nv, expect_histo *e) {
  static double limits[1600], counts[1600];
  size_t nl, i, j;
  tf_limits(limits, &nl);
  assert_int_equal(nl, 1551);
  memset(counts, 0, sizeof counts);
  for (i = 0; i < nv; i++) {
    for (j = 0; j < nl && !(limits[j] > values[i]); j++) {}
    counts[j]++;
  }
  e->n = 0;
  for (i = 0; i < nl;) {
    double end = limits[i], c = counts[i];
    i++;
    if (c <= 0)
      while (i < nl && counts[i] <= 0) end = limits[i++];
    e->limits[e->n] = end;
    e->counts[e->n++] = c;
  }
}

static void check_histo(const ev_value *v, const double *values, size_t nv) {
  expect_histo *e = malloc(sizeof *e);
  double mn = DBL_MAX, mx = -DBL_MAX, sum = 0, sq = 0;
  size_t i;
  assert_non_null(e);
  for (i = 0; i < nv; i++) {
    if (values[i] < mn) mn = values[i];
    if (values[i] > mx) mx = values[i];
    sum += values[i];
    sq += values[i] * values[i];
  }
  assert_int_equal(v->kind, EV_HISTO);
  assert_true(v->min == mn && v->max == mx && v->num == (double)nv);
  assert_true(v->sum == sum && v->sum_squares == sq);
  tf_encode(values, nv, e);
  assert_int_equal(v->nbuckets, e->n);
  for (i = 0; i < e->n; i++) {
    assert_true(v->limits[i] == e->limits[i]);
    assert_true(v->counts[i] == e->counts[i]);
  }
  free(e);
}

/* H43: histograms use TensorFlow's bucket limits, runs of empty buckets collapsed. */
static void test_summary_writer__histograms_use_tensorflow_s_buckets(void **state) {
  fixture *f = *state;
  float data[] = {-1.0f, 0.0f, 0.5f, 0.5f, 2.0f, 1e-13f, 3e9f};
  double as_double[7];
  int64_t dims[1] = {7};
  hk_tensor t;
  ev_file *ef;
  const ev_value *v;
  size_t i;
  for (i = 0; i < 7; i++) as_double[i] = data[i];
  assert_ok(hk_tensor_init(&t, HK_DTYPE_F32, 1, dims, data, &f->st), &f->st);
  new_ok(f);
  assert_ok(hk_summary_writer_histogram(f->w, "weights", 12, &t, &f->st), &f->st);
  close_ok(f);
  ef = event_file_only(f->dir);
  v = event_file_find(ef, "weights", 0, NULL);
  assert_non_null(v);
  check_histo(v, as_double, 7);
  /* Runs of empty buckets collapsed: far fewer than 1551 entries. */
  assert_true(v->nbuckets < 20);
  event_file_free(ef);
}

/* H43: histograms take every numeric dtype and shape, an empty tensor included. */
static void test_summary_writer__histograms_take_every_numeric_dtype_and_shape(void **state) {
  fixture *f = *state;
  int64_t i64[2][3] = {{-3, 0, 7}, {7, 1000000000000LL, -2}};
  double d64[6];
  uint16_t f16[3] = {0x3c00 /* 1 */, 0xc000 /* -2 */, 0x0001 /* 2^-24 */};
  double f16d[3] = {1.0, -2.0, 5.9604644775390625e-08};
  uint16_t bf16[2] = {0x3f80 /* 1 */, 0x4040 /* 3 */};
  double bf16d[2] = {1.0, 3.0};
  int64_t d23[2] = {2, 3}, d3[1] = {3}, d2[1] = {2}, d0[1] = {0};
  hk_tensor t;
  ev_file *ef;
  const ev_value *v;
  size_t i;
  for (i = 0; i < 6; i++) d64[i] = (double)i64[i / 3][i % 3];
  new_ok(f);
  assert_ok(hk_tensor_init(&t, HK_DTYPE_I64, 2, d23, i64, &f->st), &f->st);
  assert_ok(hk_summary_writer_histogram(f->w, "i64", 1, &t, &f->st), &f->st);
  assert_ok(hk_tensor_init(&t, HK_DTYPE_F16, 1, d3, f16, &f->st), &f->st);
  assert_ok(hk_summary_writer_histogram(f->w, "f16", 1, &t, &f->st), &f->st);
  assert_ok(hk_tensor_init(&t, HK_DTYPE_BF16, 1, d2, bf16, &f->st), &f->st);
  assert_ok(hk_summary_writer_histogram(f->w, "bf16", 1, &t, &f->st), &f->st);
  assert_ok(hk_tensor_init(&t, HK_DTYPE_F32, 1, d0, NULL, &f->st), &f->st);
  assert_ok(hk_summary_writer_histogram(f->w, "empty", 1, &t, &f->st), &f->st);
  close_ok(f);
  ef = event_file_only(f->dir);
  check_histo(event_file_find(ef, "i64", 0, NULL), d64, 6);
  check_histo(event_file_find(ef, "f16", 0, NULL), f16d, 3);
  check_histo(event_file_find(ef, "bf16", 0, NULL), bf16d, 2);
  v = event_file_find(ef, "empty", 0, NULL);
  assert_true(v->num == 0 && v->min == DBL_MAX && v->max == -DBL_MAX);
  assert_int_equal(v->nbuckets, 1); /* one collapsed run ending at DBL_MAX */
  assert_true(v->limits[0] == DBL_MAX && v->counts[0] == 0);
  event_file_free(ef);
}

/* H43: a histogram of NaN, infinite or boolean values, or of a tensor not matching its shape, is refused. */
static void test_summary_writer__histograms_refuse_nan_inf_and_bool(void **state) {
  fixture *f = *state;
  double bad[3] = {1.0, NAN, 2.0};
  double inf[2] = {1.0, -HUGE_VAL};
  unsigned char flags[2] = {1, 0};
  int64_t d3[1] = {3}, d2[1] = {2};
  hk_tensor t;
  new_ok(f);
  assert_ok(hk_tensor_init(&t, HK_DTYPE_F64, 1, d3, bad, &f->st), &f->st);
  assert_status(hk_summary_writer_histogram(f->w, "w", 1, &t, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "Nan in summary histogram for: w");
  assert_ok(hk_tensor_init(&t, HK_DTYPE_F64, 1, d2, inf, &f->st), &f->st);
  assert_status(hk_summary_writer_histogram(f->w, "w", 1, &t, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "Infinity in summary histogram for: w");
  assert_ok(hk_tensor_init(&t, HK_DTYPE_BOOL, 1, d2, flags, &f->st), &f->st);
  assert_status(hk_summary_writer_histogram(f->w, "w", 1, &t, &f->st), &f->st, HK_INVALID_ARGUMENT, "bool");
  t.dtype = HK_DTYPE_F64;
  t.nbytes = 3; /* does not match the shape */
  assert_status(hk_summary_writer_histogram(f->w, "w", 1, &t, &f->st), &f->st, HK_INVALID_ARGUMENT, "nbytes");
  close_ok(f);
  /* Nothing was written: not even the file. */
  assert_false(test_path_exists(f->dir));
}

/* ---- text (H43: TensorBoard's text plugin) ------------------------------------------- */

/* H43: text is written as a scalar string tensor for TensorBoard's text plugin. */
static void test_summary_writer__text_is_a_text_plugin_string_tensor(void **state) {
  fixture *f = *state;
  ev_file *ef;
  const ev_value *v;
  const ev_event *e;
  new_ok(f);
  assert_ok(hk_summary_writer_text(f->w, "notes", 4, "**lr** halved\nnext: 0.01", &f->st), &f->st);
  assert_ok(hk_summary_writer_text(f->w, "empty", 5, "", &f->st), &f->st);
  close_ok(f);
  ef = event_file_only(f->dir);
  v = event_file_find(ef, "notes", 0, &e);
  assert_non_null(v);
  assert_true(e->step == 4);
  assert_int_equal(v->kind, EV_TENSOR);
  assert_int_equal(v->dtype, 7); /* DT_STRING */
  assert_true(v->has_shape);
  assert_int_equal(v->rank, 0); /* a scalar string */
  assert_int_equal(v->nstring_val, 1);
  assert_string_equal(v->string_val, "**lr** halved\nnext: 0.01");
  assert_true(v->has_metadata);
  assert_string_equal(v->plugin_name, "text");
  assert_int_equal(v->content_len, 0); /* TextPluginData version 0 */
  assert_int_equal(v->data_class, 2);  /* DATA_CLASS_TENSOR */
  v = event_file_find(ef, "empty", 0, NULL);
  assert_int_equal(v->nstring_val, 1);
  assert_int_equal(v->string_len, 0);
  event_file_free(ef);
}

/* ---- serialized summaries (C137, H43) ------------------------------------------------- */

/* C137: a serialized Summary is written as it is, and a malformed one refused. */
static void test_summary_writer__a_serialized_summary_is_written_verbatim(void **state) {
  fixture *f = *state;
  /* Summary{value{tag "a" simple_value 1.5}, value{tag "b" simple_value 2}} */
  static const unsigned char two[] = {0x0a, 0x08, 0x0a, 0x01, 'a', 0x15, 0x00, 0x00, 0xc0, 0x3f,
                                      0x0a, 0x08, 0x0a, 0x01, 'b', 0x15, 0x00, 0x00, 0x00, 0x40};
  static const unsigned char torn[] = {0x0a, 0x08, 0x0a, 0x01, 'a', 0x15, 0x00};
  static const unsigned char group[] = {0x0b, 0x0c};
  ev_file *ef;
  new_ok(f);
  assert_ok(hk_summary_writer_summary(f->w, 9, two, sizeof two, &f->st), &f->st);
  assert_ok(hk_summary_writer_summary(f->w, 10, NULL, 0, &f->st), &f->st);
  assert_status(hk_summary_writer_summary(f->w, 11, torn, sizeof torn, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "not a serialized Summary");
  assert_status(hk_summary_writer_summary(f->w, 11, group, sizeof group, &f->st), &f->st, HK_INVALID_ARGUMENT,
                "not a serialized Summary");
  assert_status(hk_summary_writer_summary(f->w, 11, NULL, 3, &f->st), &f->st, HK_INVALID_ARGUMENT, "summary");
  assert_status(hk_summary_writer_summary(NULL, 11, two, sizeof two, &f->st), &f->st, HK_INVALID_ARGUMENT, "writer");
  close_ok(f);
  ef = event_file_only(f->dir);
  assert_int_equal(ef->n, 3);
  assert_int_equal(ef->events[1].nvalues, 2);
  assert_true(ef->events[1].step == 9);
  assert_true(ef->events[1].values[0].simple == 1.5f && ef->events[1].values[1].simple == 2.0f);
  assert_int_equal(ef->events[2].kind, EV_SUMMARY);
  assert_int_equal(ef->events[2].nvalues, 0);
  event_file_free(ef);
}

/* ---- flushing and closing (H26, H43) --------------------------------------------------- */

/* H43: the writer flushes every flush_secs, on flush() and at close. */
static void test_summary_writer__flushes_on_its_cadence_on_flush_and_at_close(void **state) {
  fixture *f = *state;
  faulty_fs ff;
  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &f->te->env);
  f->o.flush_secs = 10;
  new_ok(f);
  faulty_fs_reset(&ff);
  assert_ok(hk_summary_writer_scalar(f->w, "x", 1, 1, &f->st), &f->st); /* creates the file: cadence starts */
  test_clock_advance(&f->te->clock, 9.5);
  assert_ok(hk_summary_writer_scalar(f->w, "x", 2, 1, &f->st), &f->st);
  assert_int_equal(faulty_fs_calls(&ff, FAULTY_FS_SYNC), 0);
  test_clock_advance(&f->te->clock, 0.5);
  assert_ok(hk_summary_writer_scalar(f->w, "x", 3, 1, &f->st), &f->st); /* 10 s: flushed */
  assert_int_equal(faulty_fs_calls(&ff, FAULTY_FS_SYNC), 1);
  test_clock_advance(&f->te->clock, 5);
  assert_ok(hk_summary_writer_scalar(f->w, "x", 4, 1, &f->st), &f->st);
  assert_int_equal(faulty_fs_calls(&ff, FAULTY_FS_SYNC), 1);
  assert_ok(hk_summary_writer_flush(f->w, &f->st), &f->st);
  assert_int_equal(faulty_fs_calls(&ff, FAULTY_FS_SYNC), 2);
  assert_ok(hk_summary_writer_flush(f->w, &f->st), &f->st); /* nothing new: no fsync */
  assert_int_equal(faulty_fs_calls(&ff, FAULTY_FS_SYNC), 2);
  test_clock_advance(&f->te->clock, 9);
  assert_ok(hk_summary_writer_scalar(f->w, "x", 5, 1, &f->st), &f->st); /* 9 s after the flush: no */
  assert_int_equal(faulty_fs_calls(&ff, FAULTY_FS_SYNC), 2);
  close_ok(f); /* flushes, closes */
  assert_int_equal(faulty_fs_calls(&ff, FAULTY_FS_SYNC), 3);
  assert_int_equal(faulty_fs_open_handles(&ff), 0);
  assert_null(hk_summary_writer_path(f->w));
  assert_status(hk_summary_writer_scalar(f->w, "x", 6, 1, &f->st), &f->st, HK_FAILED_PRECONDITION, "closed");
  assert_status(hk_summary_writer_text(f->w, "x", 6, "t", &f->st), &f->st, HK_FAILED_PRECONDITION, "closed");
  close_ok(f); /* a second close: OK, nothing */
  assert_int_equal(faulty_fs_calls(&ff, FAULTY_FS_SYNC), 3);
  assert_status(hk_summary_writer_close(NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "writer");
  assert_status(hk_summary_writer_flush(NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "writer");
  hk_summary_writer_free(f->w);
  f->w = NULL;
  {
    ev_file *ef = event_file_only(f->dir);
    assert_int_equal(ef->n, 6);
    event_file_free(ef);
  }
  faulty_fs_destroy(&ff);
}

/* A failing fsync is reported by the flush (H9); free without close logs it. */
static void test_summary_writer__a_failing_fsync_is_reported_by_flush_and_free(void **state) {
  fixture *f = *state;
  faulty_fs ff;
  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &f->te->env);
  new_ok(f);
  assert_ok(hk_summary_writer_scalar(f->w, "x", 1, 1, &f->st), &f->st);
  faulty_fs_fail_errno(&ff, FAULTY_FS_SYNC, 0, EIO, 0);
  assert_status(hk_summary_writer_flush(f->w, &f->st), &f->st, HK_UNKNOWN, "tfevents");
  faulty_fs_fail_errno(&ff, FAULTY_FS_SYNC, 0, ENOSPC, 1);
  hk_summary_writer_free(f->w); /* closes: the error is logged */
  f->w = NULL;
  assert_logged(f->te, HK_LOG_ERROR, "hk_summary_writer_free");
  assert_int_equal(faulty_fs_open_handles(&ff), 0);
  faulty_fs_destroy(&ff);
}

/* After a failed write the file is closed; the next write starts a new one
 * with file_version first (H26). */
static void test_summary_writer__write_error_starts_new_file(void **state) {
  fixture *f = *state;
  faulty_fs ff;
  char names[4][600];
  char *path;
  ev_file *ef;
  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &f->te->env);
  new_ok(f);
  assert_ok(hk_summary_writer_scalar(f->w, "x", 1, 1, &f->st), &f->st);
  faulty_fs_short_writes(&ff, 5);
  faulty_fs_fail_errno(&ff, FAULTY_FS_WRITE, 1, ENOSPC, 0);
  assert_status(hk_summary_writer_scalar(f->w, "x", 2, 2, &f->st), &f->st, HK_RESOURCE_EXHAUSTED, "tfevents");
  assert_null(hk_summary_writer_path(f->w));
  faulty_fs_reset(&ff);
  test_clock_advance(&f->te->clock, 1); /* the new file is a second later */
  assert_ok(hk_summary_writer_scalar(f->w, "x", 3, 3, &f->st), &f->st);
  close_ok(f);
  assert_int_equal(faulty_fs_open_handles(&ff), 0);
  assert_int_equal(event_file_list(f->dir, names, 4), 2);
  path = test_path(f->dir, names[0]);
  ef = event_file_read(path, 1);
  assert_true(ef->torn);
  assert_int_equal(ef->n, 2);
  event_file_free(ef);
  free(path);
  path = test_path(f->dir, names[1]);
  ef = event_file_read(path, 0);
  assert_int_equal(ef->n, 2);
  assert_string_equal(ef->events[0].version, "brain.Event:2");
  assert_true(ef->events[1].step == 3 && ef->events[1].values[0].simple == 3.0f);
  event_file_free(ef);
  free(path);
  faulty_fs_destroy(&ff);
}

/* H9: the directory cannot be made: the error names it. */
static void test_summary_writer__a_directory_that_cannot_be_made_is_named(void **state) {
  fixture *f = *state;
  faulty_fs ff;
  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &f->te->env);
  new_ok(f);
  faulty_fs_fail_errno(&ff, FAULTY_FS_MKDIR, 0, EACCES, 1);
  assert_status(hk_summary_writer_scalar(f->w, "x", 1, 1, &f->st), &f->st, HK_PERMISSION_DENIED, "logs");
  faulty_fs_reset(&ff);
  assert_ok(hk_summary_writer_scalar(f->w, "x", 1, 1, &f->st), &f->st);
  close_ok(f);
  faulty_fs_destroy(&ff);
}

/* ---- memory (H7): no allocation in steady state, and OOM loops ------------------------ */

/* H7: writing the same tags again allocates nothing. */
static void test_summary_writer__steady_writes_allocate_nothing(void **state) {
  fixture *f = *state;
  float w[64];
  int64_t d[1] = {64};
  hk_tensor t;
  int i, k;
  for (i = 0; i < 64; i++) w[i] = (float)i - 30.0f;
  assert_ok(hk_tensor_init(&t, HK_DTYPE_F32, 1, d, w, &f->st), &f->st);
  new_ok(f);
  assert_ok(hk_summary_writer_histogram(f->w, "w", 0, &t, &f->st), &f->st);
  assert_ok(hk_summary_writer_text(f->w, "t", 0, "hello", &f->st), &f->st);
  assert_ok(hk_summary_writer_scalar(f->w, "loss", 0, 1, &f->st), &f->st);
  test_alloc_reset_counts(&f->te->alloc);
  for (k = 1; k <= 50; k++) {
    w[k % 64] = (float)k;
    assert_ok(hk_summary_writer_scalar(f->w, "loss", k, 1.0 / k, &f->st), &f->st);
    assert_ok(hk_summary_writer_histogram(f->w, "w", k, &t, &f->st), &f->st);
    assert_ok(hk_summary_writer_text(f->w, "t", k, "hello", &f->st), &f->st);
  }
  assert_int_equal(test_alloc_count(&f->te->alloc), 0);
  close_ok(f);
}

/* H7: every allocation failure is RESOURCE_EXHAUSTED, leaks nothing, and leaves the writer usable. */
static void test_summary_writer__allocation_failures_leak_nothing_and_leave_it_usable(void **state) {
  fixture *f = *state;
  float w[4] = {1, 2, 3, 4};
  int64_t d[1] = {4};
  hk_tensor t;
  long n;
  hk_code rc = HK_INTERNAL;
  assert_ok(hk_tensor_init(&t, HK_DTYPE_F32, 1, d, w, &f->st), &f->st);
  for (n = 0; n < 200; n++) {
    test_clock_advance(&f->te->clock, 1); /* a file name of its own per attempt */
    test_alloc_fail_at(&f->te->alloc, n, 0);
    rc = hk_summary_writer_new(&f->w, &f->o, &f->st);
    if (rc == HK_OK) rc = hk_summary_writer_scalar(f->w, "a", 1, 1, &f->st);
    if (rc == HK_OK) rc = hk_summary_writer_histogram(f->w, "h", 1, &t, &f->st);
    if (rc == HK_OK) rc = hk_summary_writer_text(f->w, "t", 1, "a longer text than before", &f->st);
    test_alloc_fail_at(&f->te->alloc, -1, 0);
    if (rc != HK_OK) assert_status(rc, &f->st, HK_RESOURCE_EXHAUSTED, NULL);
    /* Usable after the failure: the same calls work now. */
    if (f->w) {
      assert_ok(hk_summary_writer_scalar(f->w, "a", 2, 1, &f->st), &f->st);
      assert_ok(hk_summary_writer_histogram(f->w, "h", 2, &t, &f->st), &f->st);
      close_ok(f);
    }
    hk_summary_writer_free(f->w);
    f->w = NULL;
    assert_int_equal(test_alloc_live(&f->te->alloc), 0);
    if (rc == HK_OK) break;
  }
  assert_int_equal(rc, HK_OK);
  assert_true(n > 3);
}

/* ---- threads (H43: one lock per writer) ------------------------------------------------ */

typedef struct writer_thread {
  hk_summary_writer *w;
  const char *tag;
  int failures;
} writer_thread;

static void *write_many(void *arg) {
  writer_thread *wt = arg;
  int i;
  for (i = 0; i < 200; i++) {
    hk_status st = HK_STATUS_INIT;
    if (hk_summary_writer_scalar(wt->w, wt->tag, i, i, &st) != HK_OK) wt->failures++;
  }
  return NULL;
}

/* H43: a writer may be written from several threads; no event is lost. */
static void test_summary_writer__writes_from_two_threads_are_all_kept(void **state) {
  fixture *f = *state;
  writer_thread a = {NULL, "a", 0}, b = {NULL, "b", 0};
  pthread_t ta, tb;
  ev_file *ef;
  new_ok(f);
  a.w = b.w = f->w;
  assert_int_equal(pthread_create(&ta, NULL, write_many, &a), 0);
  assert_int_equal(pthread_create(&tb, NULL, write_many, &b), 0);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  assert_int_equal(a.failures + b.failures, 0);
  close_ok(f);
  ef = event_file_only(f->dir);
  assert_int_equal(ef->n, 401);
  assert_int_equal(event_file_count_tag(ef, "a"), 200);
  assert_int_equal(event_file_count_tag(ef, "b"), 200);
  event_file_free(ef);
}

/* ---- the writer a session shares (H26) ------------------------------------------------- */

typedef struct sfix {
  fixture *f;
  fake_executor *fx;
  hk_handle gs, train;
  hk_hook *ckpt;
  spy_hook *spy;
  hk_session *s;
  hk_summary_writer *from_hook;
  hk_code hook_rc;
  hk_status hook_st;
} sfix;

static hk_code grab_writer(spy_hook *spy, spy_slot slot, void *arg, hk_status *st) {
  sfix *x = spy->action_user;
  (void)arg;
  (void)st;
  if (slot == SPY_BEGIN) x->hook_rc = hk_summary_writer_from_hook(&x->from_hook, spy->hook, x->f->dir, &x->hook_st);
  return HK_OK;
}

/* H26: a session has one writer per directory, shared by its hooks and the program. */
static void test_summary_writer__one_writer_per_directory_per_session(void **state) {
  fixture *f = *state;
  sfix x;
  hk_checkpoint_saver_options co = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
  hk_session_options so;
  hk_hook *hooks[2];
  hk_summary_writer *mine = NULL, *again = NULL;
  char *slashed;
  ev_file *ef;
  int checkpoints = 0;
  size_t i;

  memset(&x, 0, sizeof x);
  x.f = f;
  x.fx = fake_training_executor(f->te, NULL, &x.gs, &x.train);
  co.env = &f->te->env;
  co.checkpoint_dir = f->dir;
  co.save_steps = 1;
  co.save_graph_def = 0;
  assert_ok(hk_checkpoint_saver_hook_new(&x.ckpt, &co, &f->st), &f->st);
  x.spy = spy_hook_new("third_party", NULL, NULL);
  x.spy->action = grab_writer;
  x.spy->action_user = &x;
  assert_status(hk_summary_writer_from_hook(&mine, x.spy->hook, f->dir, &f->st), &f->st, HK_FAILED_PRECONDITION,
                "serves no session");
  assert_null(mine);
  hooks[0] = x.ckpt;
  hooks[1] = x.spy->hook;
  hk_session_options_init(&so, HK_SESSION_OPTIONS_VERSION);
  test_session_options(&so, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(x.fx), hooks, 2);
  assert_ok(hk_session_new(&x.s, &so, &f->st), &f->st);
  assert_ok(x.hook_rc, &x.hook_st);
  assert_non_null(x.from_hook);

  assert_ok(hk_summary_writer_from_session(&mine, x.s, f->dir, &f->st), &f->st);
  assert_ptr_equal(mine, x.from_hook);
  slashed = malloc(strlen(f->dir) + 3);
  assert_non_null(slashed);
  sprintf(slashed, "%s//", f->dir);
  assert_ok(hk_summary_writer_from_session(&again, x.s, slashed, &f->st), &f->st);
  assert_ptr_equal(again, mine);
  free(slashed);
  assert_status(hk_summary_writer_from_session(&again, x.s, "", &f->st), &f->st, HK_INVALID_ARGUMENT, "logdir");
  assert_status(hk_summary_writer_from_session(&again, NULL, f->dir, &f->st), &f->st, HK_INVALID_ARGUMENT, "session");
  assert_status(hk_summary_writer_from_session(NULL, x.s, f->dir, &f->st), &f->st, HK_INVALID_ARGUMENT, "out");
  /* Shared: the session closes and frees it, not the program. */
  assert_status(hk_summary_writer_close(mine, &f->st), &f->st, HK_FAILED_PRECONDITION, "shared");
  hk_summary_writer_free(mine);
  assert_logged(f->te, HK_LOG_ERROR, "shared by a session");

  assert_ok(hk_summary_writer_scalar(mine, "loss", 0, 2.5, &f->st), &f->st);
  assert_ok(session_run_train(x.s, x.train, &f->st), &f->st);
  assert_ok(hk_summary_writer_text(x.from_hook, "note", 1, "after one step", &f->st), &f->st);
  assert_ok(hk_session_close(x.s, HK_OK, &f->st), &f->st);
  assert_status(hk_summary_writer_from_session(&again, x.s, f->dir, &f->st), &f->st, HK_FAILED_PRECONDITION,
                "Session is closed.");
  hk_session_free(x.s);

  /* One file: the CHECKPOINT events of the hook and the program's values. */
  ef = event_file_only(f->dir);
  for (i = 0; i < ef->n; i++)
    if (ef->events[i].kind == EV_SESSION_LOG && ef->events[i].status == 3) checkpoints++;
  assert_int_equal(checkpoints, 2); /* at creation (0) and after the step (1): C101 */
  assert_non_null(event_file_find(ef, "loss", 0, NULL));
  assert_non_null(event_file_find(ef, "note", 0, NULL));
  event_file_free(ef);

  hk_hook_free(x.ckpt);
  spy_hook_free(x.spy);
  fake_executor_free(x.fx);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_summary_writer__options_init_checks_its_arguments_and_version),
      T(test_summary_writer__bad_options_are_refused_and_nothing_is_created),
      T(test_summary_writer__created_at_first_write_with_parents),
      T(test_summary_writer__filename_suffix_ends_the_file_name),
      T(test_summary_writer__unused_writer_creates_nothing),
      T(test_summary_writer__taken_name_gets_a_counter_and_no_error),
      T(test_summary_writer__scalars_are_written_as_float_simple_values),
      T(test_summary_writer__bad_tags_are_refused_naming_the_problem),
      T(test_summary_writer__histograms_use_tensorflow_s_buckets),
      T(test_summary_writer__histograms_take_every_numeric_dtype_and_shape),
      T(test_summary_writer__histograms_refuse_nan_inf_and_bool),
      T(test_summary_writer__text_is_a_text_plugin_string_tensor),
      T(test_summary_writer__a_serialized_summary_is_written_verbatim),
      T(test_summary_writer__flushes_on_its_cadence_on_flush_and_at_close),
      T(test_summary_writer__a_failing_fsync_is_reported_by_flush_and_free),
      T(test_summary_writer__write_error_starts_new_file),
      T(test_summary_writer__a_directory_that_cannot_be_made_is_named),
      T(test_summary_writer__steady_writes_allocate_nothing),
      T(test_summary_writer__allocation_failures_leak_nothing_and_leave_it_usable),
      T(test_summary_writer__writes_from_two_threads_are_all_kept),
      T(test_summary_writer__one_writer_per_directory_per_session),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
