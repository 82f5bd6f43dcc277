/*
 * Scaffold (group F): C58–C64 over the fake executor's role registry.
 */
#include "session_fixture.h"
#include "tmpdir.h"
#include "ckpt_fixture.h"

#include <hooked/graph.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fixture {
  test_env *te;
  fake_executor *fx;
  hk_executor *ex;
  hk_handle gs, local, p, my_init, my_local, my_ready;
  hk_scaffold_options so;
  hk_scaffold *s, *s2;
  hk_status st;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof(*f));
  float zero = 0;
  f->te = test_env_new();
  f->fx = fake_gs_executor(f->te, &f->ex, &f->gs);
  f->local = fake_executor_add_variable(f->fx, "local_v", HK_DTYPE_F32, 0, NULL, HK_VAR_LOCAL, &zero);
  f->p = fake_executor_add_i64(f->fx, "p", 0);
  f->my_init = fake_executor_add_op(f->fx, "my_init");
  f->my_local = fake_executor_add_op(f->fx, "my_local_init");
  f->my_ready = fake_executor_add_report(f->fx, "my_ready", FAKE_REPORT_ALL);
  hk_scaffold_options_init(&f->so, HK_SCAFFOLD_OPTIONS_VERSION);
  f->so.env = &f->te->env;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  hk_scaffold_free(f->s);
  hk_scaffold_free(f->s2);
  return fixture_release(f, f->fx, f->te);
}

static hk_code my_init_fn(void *user, const hk_scaffold *scaffold, hk_raw_session *session, hk_status *st) {
  (void)user;
  (void)scaffold;
  (void)session;
  (void)st;
  return HK_OK;
}

static hk_code other_init_fn(void *user, const hk_scaffold *scaffold, hk_raw_session *session, hk_status *st) {
  return my_init_fn(user, scaffold, session, st);
}

/* ---- options ---------------------------------------------------------- */

static void test_scaffold__options_init(void **state) {
  fixture *f = *state;
  hk_scaffold_options o;
  assert_int_equal(hk_scaffold_options_init(NULL, HK_SCAFFOLD_OPTIONS_VERSION), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_scaffold_options_init(&o, 0), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_scaffold_options_init(&o, HK_SCAFFOLD_OPTIONS_VERSION + 1), HK_INVALID_ARGUMENT);
  memset(&o, 0x33, sizeof(o));
  assert_int_equal(hk_scaffold_options_init(&o, HK_SCAFFOLD_OPTIONS_VERSION), HK_OK);
  assert_int_equal(o.init_op, HK_NO_HANDLE);
  assert_null(o.init_fn);
  assert_null(o.copy_from);
  assert_int_equal(o.ninit_feed, 0);
  (void)f;
}

/* H3: a NULL output, a NULL feed array with a count or a bad option is INVALID_ARGUMENT naming it. */
static void test_scaffold__new_refuses_bad_arguments(void **state) {
  fixture *f = *state;
  assert_status(hk_scaffold_new(NULL, &f->so, &f->st), &f->st, HK_INVALID_ARGUMENT, NULL);
  f->so.ninit_feed = 2; /* NULL array with a count */
  assert_status(hk_scaffold_new(&f->s, &f->so, &f->st), &f->st, HK_INVALID_ARGUMENT, "init_feed");
  assert_null(f->s);
  f->so.ninit_feed = 0;
  f->so.nlocal_init_feed = 1;
  assert_status(hk_scaffold_new(&f->s, &f->so, &f->st), &f->st, HK_INVALID_ARGUMENT, "local_init_feed");
  assert_null(f->s);
  f->so.nlocal_init_feed = 0;
  f->so.version = 0;
  assert_status(hk_scaffold_new(&f->s, &f->so, &f->st), &f->st, HK_INVALID_ARGUMENT, NULL);
  f->so.version = HK_SCAFFOLD_OPTIONS_VERSION;
  assert_ok(hk_scaffold_new(&f->s, &f->so, &f->st), &f->st);
  assert_status(hk_scaffold_finalize(NULL, f->ex, &f->st), &f->st, HK_INVALID_ARGUMENT, NULL);
  assert_status(hk_scaffold_finalize(f->s, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, NULL);
  hk_scaffold_free(NULL);
}

/* ---- C60: unset before finalization ------------------------------------ */

/* C60: every field not given to the constructor is unset until finalization. */
static void test_scaffold__fields_not_given_stay_unset_until_finalized(void **state) {
  fixture *f = *state;
  size_t n = 99;
  void *user = f;
  assert_ok(hk_scaffold_new(&f->s, NULL, &f->st), &f->st);
  assert_false(hk_scaffold_is_finalized(f->s));
  assert_int_equal(hk_scaffold_init_op(f->s), HK_NO_HANDLE);
  assert_int_equal(hk_scaffold_ready_op(f->s), HK_NO_HANDLE);
  assert_int_equal(hk_scaffold_ready_for_local_init_op(f->s), HK_NO_HANDLE);
  assert_int_equal(hk_scaffold_local_init_op(f->s), HK_NO_HANDLE);
  assert_null(hk_scaffold_init_feed(f->s, &n));
  assert_int_equal(n, 0);
  n = 99;
  assert_null(hk_scaffold_local_init_feed(f->s, &n));
  assert_int_equal(n, 0);
  assert_null(hk_scaffold_init_fn(&user, f->s));
  assert_null(user);
}

/* ---- C58: fields, copies, copy_from ------------------------------------- */

/* C58: the fields given to the constructor are copied and returned as given. */
static void test_scaffold__given_fields_are_copied(void **state) {
  fixture *f = *state;
  int64_t v = 42;
  hk_feed feed[1];
  const hk_feed *got;
  size_t n = 0;
  void *user = NULL;
  int marker;
  memset(feed, 0, sizeof(feed));
  feed[0].tensor = f->p;
  feed[0].value = hk_tensor_scalar_i64(&v);
  f->so.init_op = f->my_init;
  f->so.init_feed = feed;
  f->so.ninit_feed = 1;
  f->so.init_fn = my_init_fn;
  f->so.init_fn_user = &marker;
  f->so.ready_op = f->my_ready;
  f->so.local_init_op = f->my_local;
  f->so.local_init_feed = feed;
  f->so.nlocal_init_feed = 1;
  assert_ok(hk_scaffold_new(&f->s, &f->so, &f->st), &f->st);
  /* Copied, values included: changing the source afterwards changes nothing. */
  v = -1;
  feed[0].tensor = f->gs;
  got = hk_scaffold_init_feed(f->s, &n);
  assert_int_equal(n, 1);
  assert_int_equal(got[0].tensor, f->p);
  assert_int_equal(got[0].value.dtype, HK_DTYPE_I64);
  assert_ptr_not_equal(got[0].value.data, &v);
  assert_int_equal(*(int64_t *)got[0].value.data, 42);
  got = hk_scaffold_local_init_feed(f->s, &n);
  assert_int_equal(n, 1);
  assert_int_equal(*(int64_t *)got[0].value.data, 42);
  assert_int_equal(hk_scaffold_init_op(f->s), f->my_init);
  assert_int_equal(hk_scaffold_ready_op(f->s), f->my_ready);
  assert_int_equal(hk_scaffold_local_init_op(f->s), f->my_local);
  assert_int_equal(hk_scaffold_ready_for_local_init_op(f->s), HK_NO_HANDLE);
  assert_ptr_equal(hk_scaffold_init_fn(&user, f->s), my_init_fn);
  assert_ptr_equal(user, &marker);
}

/* C58: copy_from takes another Scaffold's fields for the ones not given. */
static void test_scaffold__copy_from_takes_the_fields_not_given(void **state) {
  fixture *f = *state;
  hk_scaffold_options o;
  int marker;
  void *user = NULL;
  f->so.init_op = f->my_init;
  f->so.init_fn = my_init_fn;
  f->so.init_fn_user = &marker;
  f->so.ready_op = f->my_ready;
  assert_ok(hk_scaffold_new(&f->s, &f->so, &f->st), &f->st);

  hk_scaffold_options_init(&o, HK_SCAFFOLD_OPTIONS_VERSION);
  o.env = &f->te->env;
  o.copy_from = f->s;
  o.local_init_op = f->my_local;
  assert_ok(hk_scaffold_new(&f->s2, &o, &f->st), &f->st);
  /* Not given: copied (init_fn included); given: wins. */
  assert_int_equal(hk_scaffold_init_op(f->s2), f->my_init);
  assert_int_equal(hk_scaffold_ready_op(f->s2), f->my_ready);
  assert_int_equal(hk_scaffold_local_init_op(f->s2), f->my_local);
  assert_ptr_equal(hk_scaffold_init_fn(&user, f->s2), my_init_fn);
  assert_ptr_equal(user, &marker);
  hk_scaffold_free(f->s2);
  f->s2 = NULL;

  o.local_init_op = HK_NO_HANDLE;
  o.init_op = f->my_local;
  o.init_fn = other_init_fn;
  o.init_fn_user = NULL;
  assert_ok(hk_scaffold_new(&f->s2, &o, &f->st), &f->st);
  assert_int_equal(hk_scaffold_init_op(f->s2), f->my_local);
  assert_ptr_equal(hk_scaffold_init_fn(&user, f->s2), other_init_fn);
  assert_int_equal(hk_scaffold_local_init_op(f->s2), HK_NO_HANDLE);
  /* The copy is independent of its source. */
  hk_scaffold_free(f->s);
  f->s = NULL;
  assert_int_equal(hk_scaffold_ready_op(f->s2), f->my_ready);
}

/* ---- C61, C62, C64: finalization ---------------------------------------- */

/* C61, C62: finalization builds the executor's default ops for unset fields and registers them under their roles. */
static void test_scaffold__finalize_builds_and_registers_the_default_ops(void **state) {
  fixture *f = *state;
  hk_handle h = HK_NO_HANDLE;
  assert_ok(hk_scaffold_new(&f->s, &f->so, &f->st), &f->st);
  assert_ok(hk_scaffold_finalize(f->s, f->ex, &f->st), &f->st);
  assert_true(hk_scaffold_is_finalized(f->s));
  assert_int_equal(fake_executor_calls(f->fx, FAKE_DEFAULT_OP), 4);
  assert_int_equal(hk_scaffold_init_op(f->s), fake_executor_default_handle(f->fx, HK_DEFAULT_INIT_OP));
  assert_int_equal(hk_scaffold_ready_op(f->s), fake_executor_default_handle(f->fx, HK_DEFAULT_READY_OP));
  assert_int_equal(hk_scaffold_ready_for_local_init_op(f->s),
                   fake_executor_default_handle(f->fx, HK_DEFAULT_READY_FOR_LOCAL_INIT_OP));
  assert_int_equal(hk_scaffold_local_init_op(f->s), fake_executor_default_handle(f->fx, HK_DEFAULT_LOCAL_INIT_OP));
  assert_int_not_equal(hk_scaffold_init_op(f->s), HK_NO_HANDLE);
  /* Registered under their roles. */
  assert_int_equal(fake_executor_role_count(f->fx, HK_ROLE_INIT_OP, &h), 1);
  assert_int_equal(h, hk_scaffold_init_op(f->s));
  assert_int_equal(fake_executor_role_count(f->fx, HK_ROLE_READY_OP, &h), 1);
  assert_int_equal(h, hk_scaffold_ready_op(f->s));
  assert_int_equal(fake_executor_role_count(f->fx, HK_ROLE_READY_FOR_LOCAL_INIT_OP, NULL), 1);
  assert_int_equal(fake_executor_role_count(f->fx, HK_ROLE_LOCAL_INIT_OP, NULL), 1);
  /* C64: the graph is finalized and it was logged. */
  assert_true(fake_executor_finalized(f->fx));
  assert_logged(f->te, HK_LOG_INFO, "Graph was finalized.");
}

/* C61: an unset field takes the one op registered under its role. */
static void test_scaffold__a_single_registered_op_is_used(void **state) {
  fixture *f = *state;
  fake_executor_role_register(f->fx, HK_ROLE_INIT_OP, f->my_init);
  fake_executor_role_register(f->fx, HK_ROLE_LOCAL_INIT_OP, f->my_local);
  assert_ok(hk_scaffold_new(&f->s, &f->so, &f->st), &f->st);
  assert_ok(hk_scaffold_finalize(f->s, f->ex, &f->st), &f->st);
  assert_int_equal(hk_scaffold_init_op(f->s), f->my_init);
  assert_int_equal(hk_scaffold_local_init_op(f->s), f->my_local);
  assert_int_equal(fake_executor_default_handle(f->fx, HK_DEFAULT_INIT_OP), HK_NO_HANDLE);
  assert_int_equal(fake_executor_default_handle(f->fx, HK_DEFAULT_LOCAL_INIT_OP), HK_NO_HANDLE);
  assert_int_equal(fake_executor_role_count(f->fx, HK_ROLE_INIT_OP, NULL), 1);
}

/* C61: more than one op registered under a role fails finalization. */
static void test_scaffold__several_registered_ops_fail_finalize(void **state) {
  fixture *f = *state;
  fake_executor_role_register(f->fx, HK_ROLE_READY_OP, f->my_ready);
  fake_executor_role_register(f->fx, HK_ROLE_READY_OP, f->p);
  assert_ok(hk_scaffold_new(&f->s, &f->so, &f->st), &f->st);
  assert_status(hk_scaffold_finalize(f->s, f->ex, &f->st), &f->st, HK_FAILED_PRECONDITION,
                "More than one item in the collection \"ready_op\". Please indicate which one to use by passing it "
                "to the Scaffold constructor as: ready_op=");
  assert_false(hk_scaffold_is_finalized(f->s));
  /* The message is formatted: no raw placeholder is left. */
  assert_null(strstr(f->st.message, "<role>"));
  assert_null(strstr(f->st.message, "{}"));
}

/* C61: ops given to the constructor are used as they are and never registered. */
static void test_scaffold__given_fields_are_not_registered(void **state) {
  fixture *f = *state;
  f->so.init_op = f->my_init;
  f->so.ready_op = f->my_ready;
  assert_ok(hk_scaffold_new(&f->s, &f->so, &f->st), &f->st);
  assert_ok(hk_scaffold_finalize(f->s, f->ex, &f->st), &f->st);
  assert_int_equal(hk_scaffold_init_op(f->s), f->my_init);
  assert_int_equal(hk_scaffold_ready_op(f->s), f->my_ready);
  assert_int_equal(fake_executor_role_count(f->fx, HK_ROLE_INIT_OP, NULL), 0);
  assert_int_equal(fake_executor_role_count(f->fx, HK_ROLE_READY_OP, NULL), 0);
  assert_int_equal(fake_executor_default_handle(f->fx, HK_DEFAULT_INIT_OP), HK_NO_HANDLE);
  /* The unset ones still got defaults. */
  assert_int_not_equal(hk_scaffold_local_init_op(f->s), HK_NO_HANDLE);
}

/* C64: a second finalization changes nothing. */
static void test_scaffold__finalize_is_idempotent(void **state) {
  fixture *f = *state;
  hk_handle init;
  assert_ok(hk_scaffold_new(&f->s, &f->so, &f->st), &f->st);
  assert_ok(hk_scaffold_finalize(f->s, f->ex, &f->st), &f->st);
  init = hk_scaffold_init_op(f->s);
  fake_executor_reset_calls(f->fx);
  assert_ok(hk_scaffold_finalize(f->s, f->ex, &f->st), &f->st);
  assert_int_equal(hk_scaffold_init_op(f->s), init);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_DEFAULT_OP), 0);
  assert_int_equal(fake_executor_calls(f->fx, FAKE_ROLE_ADD), 0);
  assert_int_equal(fake_executor_role_count(f->fx, HK_ROLE_INIT_OP, NULL), 1);
}

/* C64: a second Scaffold finalized on the same executor finds and uses the registered defaults. */
static void test_scaffold__two_scaffolds_share_the_same_default_ops(void **state) {
  fixture *f = *state;
  assert_ok(hk_scaffold_new(&f->s, &f->so, &f->st), &f->st);
  assert_ok(hk_scaffold_new(&f->s2, &f->so, &f->st), &f->st);
  assert_ok(hk_scaffold_finalize(f->s, f->ex, &f->st), &f->st);
  /* The graph is finalized now; the second Scaffold finds the registered defaults. */
  assert_ok(hk_scaffold_finalize(f->s2, f->ex, &f->st), &f->st);
  assert_int_equal(hk_scaffold_init_op(f->s2), hk_scaffold_init_op(f->s));
  assert_int_equal(hk_scaffold_ready_op(f->s2), hk_scaffold_ready_op(f->s));
  assert_int_equal(hk_scaffold_ready_for_local_init_op(f->s2), hk_scaffold_ready_for_local_init_op(f->s));
  assert_int_equal(hk_scaffold_local_init_op(f->s2), hk_scaffold_local_init_op(f->s));
  assert_int_equal(fake_executor_calls(f->fx, FAKE_DEFAULT_OP), 4);
  assert_int_equal(fake_executor_role_count(f->fx, HK_ROLE_INIT_OP, NULL), 1);
}

/* C64: a Scaffold finalized for one executor is refused by another. */
static void test_scaffold__finalizing_against_another_executor_is_refused(void **state) {
  fixture *f = *state;
  fake_executor *other = fake_executor_new(&f->te->env);
  assert_ok(hk_scaffold_new(&f->s, &f->so, &f->st), &f->st);
  assert_ok(hk_scaffold_finalize(f->s, f->ex, &f->st), &f->st);
  assert_status(hk_scaffold_finalize(f->s, fake_executor_executor(other), &f->st), &f->st, HK_INVALID_ARGUMENT, NULL);
  fake_executor_free(other);
}

/* C61: an error from the executor while building a default op fails finalization with it. */
static void test_scaffold__an_executor_error_fails_finalize(void **state) {
  fixture *f = *state;
  assert_ok(hk_scaffold_new(&f->s, &f->so, &f->st), &f->st);
  fake_executor_fail(f->fx, FAKE_ROLE_GET, 1, 1, HK_INTERNAL, "registry unavailable");
  assert_status(hk_scaffold_finalize(f->s, f->ex, &f->st), &f->st, HK_INTERNAL, "registry unavailable");
  assert_false(hk_scaffold_is_finalized(f->s));
  /* A later attempt succeeds. */
  assert_ok(hk_scaffold_finalize(f->s, f->ex, &f->st), &f->st);
  assert_true(hk_scaffold_is_finalized(f->s));
}

static void test_scaffold__oom_loop(void **state) {
  fixture *f = *state;
  int64_t v = 1;
  hk_feed feed[1];
  long n, base = test_alloc_live(&f->te->alloc);
  memset(feed, 0, sizeof(feed));
  feed[0].tensor = f->p;
  feed[0].value = hk_tensor_scalar_i64(&v);
  f->so.init_feed = feed;
  f->so.ninit_feed = 1;
  f->so.local_init_feed = feed;
  f->so.nlocal_init_feed = 1;
  for (n = 0; n < 100; n++) {
    hk_code rc;
    test_alloc_fail_at(&f->te->alloc, n, 0);
    rc = hk_scaffold_new(&f->s, &f->so, &f->st);
    if (rc == HK_OK) break;
    assert_status(rc, &f->st, HK_RESOURCE_EXHAUSTED, NULL);
    assert_null(f->s);
    assert_int_equal(test_alloc_live(&f->te->alloc), base);
  }
  assert_true(n > 0);
  assert_true(n < 100);
  test_alloc_fail_at(&f->te->alloc, -1, 0);
}

/*
 * H1 (the message names the offending tensor and says what is wrong) and
 * C11 7.21.6.12 (vsnprintf's buffer and arguments must not overlap): a bad
 * init_feed is refused with a message that names the feed ("init_feed[0]")
 * and keeps the reason hk_tensor_init gave (hk__feeds_copy never formats
 * st->message into itself).
 */
static void test_scaffold__a_bad_init_feed_keeps_the_executor_s_reason(void **state) {
  fixture *f = *state;
  hk_feed feed;
  int64_t v = 1;
  memset(&feed, 0, sizeof(feed));
  feed.tensor = f->p;
  feed.value = hk_tensor_scalar_i64(&v);
  feed.value.rank = HK_MAX_RANK + 1; /* invalid */
  f->so.init_feed = &feed;
  f->so.ninit_feed = 1;
  assert_status(hk_scaffold_new(&f->s, &f->so, &f->st), &f->st, HK_INVALID_ARGUMENT, "init_feed[0]");
  assert_null(f->s);
  /* The reason hk_tensor_init gave ("rank 9 outside [0, 8]") survives. */
  assert_non_null(strstr(f->st.message, "rank"));
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

/* ---- C63: a default Saver with no variables ----------------------------- */

/* C63: an executor without a single variable gets a default Saver all the same:
 * it saves a checkpoint that holds no tensor (a valid one, with its global
 * step), lists it, verifies and restores it. */
static void test_scaffold__a_graph_without_variables_still_gets_a_working_default_saver(void **state) {
  fixture *f = *state;
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_graph *g = NULL;
  hk_raw_session *rs = NULL;
  hk_checkpoint_reader *r = NULL;
  hk_saver *saver;
  char *root, *dir, *save_path, *latest = NULL;
  const char *prefix = NULL;

  go.env = &f->te->env;
  assert_ok(hk_graph_new(&g, &go, &f->st), &f->st);
  assert_int_equal(hk_executor_variable_count(hk_graph_executor(g)), 0);
  assert_ok(hk_scaffold_new(&f->s, &f->so, &f->st), &f->st);
  assert_null(hk_scaffold_saver(f->s)); /* C60: unset before finalization */
  assert_ok(hk_scaffold_finalize(f->s, hk_graph_executor(g), &f->st), &f->st);
  saver = hk_scaffold_saver(f->s);
  assert_non_null(saver);

  ckpt_dir_new("scaffold-empty", &root, &dir, &save_path);
  assert_ok(hk_raw_session_open(&rs, hk_graph_executor(g), &f->st), &f->st);
  assert_ok(hk_saver_save(&prefix, saver, rs, save_path, 7, HK_SAVE_DEFAULT, &f->st), &f->st);
  assert_ok(hk_checkpoint_reader_open(&r, &f->te->env, prefix, &f->st), &f->st);
  assert_int_equal(hk_checkpoint_reader_count(r), 0);
  assert_int_equal(hk_checkpoint_reader_step(r), 7);
  assert_ok(hk_checkpoint_reader_verify(r, &f->st), &f->st);
  hk_checkpoint_reader_free(r);
  assert_ok(hk_checkpoint_latest(&latest, &f->te->env, dir, NULL, &f->st), &f->st);
  assert_string_equal(latest, prefix);
  hk_env_free(&f->te->env, latest);
  assert_ok(hk_saver_restore(saver, rs, prefix, &f->st), &f->st);

  hk_raw_session_free(rs);
  hk_scaffold_free(f->s);
  f->s = NULL;
  hk_graph_free(g);
  ckpt_dir_free(root, dir, save_path);
}

/* C63: a session over such an executor restores from checkpoint_dir as any other
 * (C68): the Scaffold's default Saver reads the empty checkpoint. */
static void test_scaffold__session_without_variables_restores(void **state) {
  fixture *f = *state;
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_session_options o = HK_SESSION_OPTIONS_INIT;
  hk_graph *g = NULL;
  hk_session *s = NULL;
  hk_raw_session *rs = NULL;
  char *root, *dir, *save_path, line[1200];
  const char *prefix = NULL;

  go.env = &f->te->env;
  assert_ok(hk_graph_new(&g, &go, &f->st), &f->st);
  ckpt_dir_new("scaffold-empty-session", &root, &dir, &save_path);
  assert_ok(hk_scaffold_new(&f->s, &f->so, &f->st), &f->st);
  assert_ok(hk_scaffold_finalize(f->s, hk_graph_executor(g), &f->st), &f->st);
  assert_ok(hk_raw_session_open(&rs, hk_graph_executor(g), &f->st), &f->st);
  assert_ok(hk_saver_save(&prefix, hk_scaffold_saver(f->s), rs, save_path, 3, HK_SAVE_DEFAULT, &f->st), &f->st);
  hk_raw_session_free(rs);

  o.env = &f->te->env;
  o.executor = hk_graph_executor(g);
  o.scaffold = f->s;
  o.checkpoint_dir = dir;
  assert_ok(hk_session_new(&s, &o, &f->st), &f->st);
  snprintf(line, sizeof line, "Restoring parameters from %s", prefix);
  assert_logged(f->te, HK_LOG_INFO, line);
  assert_ok(hk_session_close(s, HK_OK, &f->st), &f->st);
  hk_session_free(s);
  hk_scaffold_free(f->s);
  f->s = NULL;
  hk_graph_free(g);
  ckpt_dir_free(root, dir, save_path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_scaffold__options_init),
      T(test_scaffold__new_refuses_bad_arguments),
      T(test_scaffold__fields_not_given_stay_unset_until_finalized),
      T(test_scaffold__given_fields_are_copied),
      T(test_scaffold__copy_from_takes_the_fields_not_given),
      T(test_scaffold__finalize_builds_and_registers_the_default_ops),
      T(test_scaffold__a_single_registered_op_is_used),
      T(test_scaffold__several_registered_ops_fail_finalize),
      T(test_scaffold__given_fields_are_not_registered),
      T(test_scaffold__finalize_is_idempotent),
      T(test_scaffold__two_scaffolds_share_the_same_default_ops),
      T(test_scaffold__finalizing_against_another_executor_is_refused),
      T(test_scaffold__an_executor_error_fails_finalize),
      T(test_scaffold__oom_loop),
      T(test_scaffold__a_bad_init_feed_keeps_the_executor_s_reason),
      T(test_scaffold__a_graph_without_variables_still_gets_a_working_default_saver),
      T(test_scaffold__session_without_variables_restores),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
