/*
 * hooked::mpi — log lines name the rank that wrote them (H91).
 *
 * The log sink is captured (tests/support/test_env.h): a line logged
 * through hk_mpi_log_env()'s env reaches the program's own sink as
 * "rank R/N: <message>" at its level; the context's own lines (the stop
 * hook's, made without an env) carry the prefix too, and so do those of a
 * stop hook given the program's unprefixed env; wrapping twice prefixes
 * once; a logged line allocates nothing and wrapping the same sink again
 * makes no new record; a line longer than hooked's buffer is cut, not
 * overrun; each line of a message of several lines names the rank.
 */
#include "mpi_test.h"

#include <stdio.h>
#include <string.h>

#include "hooked/graph.h"
#include "hooked/session.h"

/* The last line the capture holds. */
static const test_log_line *last_line(test_env *te) {
  assert_true(te->log.n > 0);
  return &te->log.lines[te->log.n - 1];
}

static void expect_prefix(char *buf, size_t cap) { snprintf(buf, cap, "rank %d/%d: ", mpi_rank(), mpi_size()); }

static void test_a_line_through_the_log_env_reaches_the_programs_sink_with_the_rank(void) {
  hk_env real, env;
  test_env *te = mpi_test_env(&real);
  hk_mpi *mpi = mpi_test_context(NULL);
  hk_status st = HK_STATUS_INIT;
  char want[64], prefix[32];
  assert_ok(hk_mpi_log_env(&env, mpi, &real, &st), &st);
  hk_env_log(&env, HK_LOG_WARNING, "loss = %.2f at step %d", 0.5, 7);
  expect_prefix(prefix, sizeof prefix);
  snprintf(want, sizeof want, "%sloss = 0.50 at step 7", prefix);
  assert_string_equal(last_line(te)->text, want);
  assert_int_equal(last_line(te)->level, HK_LOG_WARNING);
  /* The base's level still filters. */
  size_t n = te->log.n;
  real.log_level = HK_LOG_ERROR;
  assert_ok(hk_mpi_log_env(&env, mpi, &real, &st), &st);
  hk_env_log(&env, HK_LOG_WARNING, "dropped");
  assert_int_equal(te->log.n, n);
  hk_mpi_free(mpi);
  assert_int_equal(test_env_release(te), 0);
}

static void test_wrapping_an_env_twice_prefixes_its_lines_once(void) {
  hk_env env;
  test_env *te = mpi_test_env(&env);
  hk_mpi *mpi = mpi_test_context(NULL);
  hk_status st = HK_STATUS_INIT;
  char want[64], prefix[32];
  assert_ok(hk_mpi_log_env(&env, mpi, &env, &st), &st); /* out may be base */
  assert_ok(hk_mpi_log_env(&env, mpi, &env, &st), &st);
  hk_env_log(&env, HK_LOG_INFO, "once");
  expect_prefix(prefix, sizeof prefix);
  snprintf(want, sizeof want, "%sonce", prefix);
  assert_string_equal(last_line(te)->text, want);
  hk_mpi_free(mpi);
  assert_int_equal(test_env_release(te), 0);
}

/* A session over a graph with a global step, the stop hook last. */
static void open_session(hk_graph **g, hk_session **s, hk_hook *stop, const hk_env *env) {
  hk_status st = HK_STATUS_INIT;
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_handle gs;
  go.env = env;
  assert_ok(hk_graph_new(g, &go, &st), &st);
  assert_ok(hk_graph_get_or_create_global_step(*g, &gs, &st), &st);
  hk_session_options o;
  assert_int_equal(hk_session_options_init(&o, HK_SESSION_OPTIONS_VERSION), HK_OK);
  o.env = env;
  o.executor = hk_graph_executor(*g);
  o.hooks = &stop;
  o.nhooks = 1;
  assert_ok(hk_session_new(s, &o, &st), &st);
}

/* The stop hook's line at the start's agreement, made (a) with no env of
 * its own on a context given the program's env, (b) with the program's
 * unprefixed env on a context given none: both name the rank. */
static void check_stop_hook_line(int own_env) {
  hk_env real;
  test_env *te = mpi_test_env(&real);
  hk_mpi *mpi = mpi_test_context(own_env ? NULL : &real);
  hk_status st = HK_STATUS_INIT;
  hk_mpi_stop_options so = HK_MPI_STOP_OPTIONS_INIT;
  hk_hook *stop = NULL;
  hk_graph *g = NULL;
  hk_session *s = NULL;
  char want[128], prefix[32];
  so.handle_signals = 0;
  so.env = own_env ? &real : NULL;
  assert_ok(hk_mpi_stop_hook_new(&stop, mpi, &so, &st), &st);
  if (mpi_rank() == mpi_size() - 1) hk_mpi_stop_hook_request(stop);
  open_session(&g, &s, stop, &real);
  assert_true(hk_session_should_stop(s));
  expect_prefix(prefix, sizeof prefix);
  snprintf(want, sizeof want, "%sRank %d asked to stop; every rank stops before its next step.", prefix,
           mpi_size() - 1);
  assert_logged(te, HK_LOG_INFO, want);
  assert_ok(hk_session_close(s, HK_OK, &st), &st);
  hk_session_free(s);
  hk_hook_free(stop);
  hk_graph_free(g);
  hk_mpi_free(mpi);
  assert_int_equal(test_env_release(te), 0);
}

static void test_the_contexts_own_lines_name_the_rank(void) { check_stop_hook_line(0); }

static void test_a_stop_hook_given_the_programs_env_names_the_rank(void) { check_stop_hook_line(1); }

static void test_a_logged_line_allocates_nothing_and_rewrapping_makes_no_record(void) {
  hk_env real, env;
  test_env *te = mpi_test_env(&real);
  hk_mpi *mpi = mpi_test_context(&real);
  hk_status st = HK_STATUS_INIT;
  /* The context wrapped the test env's sink at creation: wrapping the same
   * sink again reuses that record. */
  long before = te->alloc.nalloc;
  assert_ok(hk_mpi_log_env(&env, mpi, &real, &st), &st);
  assert_ok(hk_mpi_log_env(&env, mpi, &real, &st), &st);
  for (int i = 0; i < 100; i++) hk_env_log(&env, HK_LOG_INFO, "step %d", i);
  assert_int_equal(te->alloc.nalloc, before);
  hk_mpi_free(mpi);
  assert_int_equal(test_env_release(te), 0); /* the records are freed with the context */
}

static void test_a_line_longer_than_the_buffer_is_cut_not_overrun(void) {
  hk_env real, env;
  test_env *te = mpi_test_env(&real);
  hk_mpi *mpi = mpi_test_context(NULL);
  hk_status st = HK_STATUS_INIT;
  static char big[3000];
  char prefix[32];
  memset(big, 'x', sizeof big - 1);
  assert_ok(hk_mpi_log_env(&env, mpi, &real, &st), &st);
  hk_env_log(&env, HK_LOG_INFO, "%s", big);
  expect_prefix(prefix, sizeof prefix);
  const char *text = last_line(te)->text;
  assert_int_equal(strncmp(text, prefix, strlen(prefix)), 0);
  assert_int_equal(strlen(text), strlen(prefix) + 1023);
  hk_mpi_free(mpi);
  assert_int_equal(test_env_release(te), 0);
}

/* A message of several lines (TensorFlow's "Create AsyncCheckpointSaverHook
 * saving to path\n<path>") names the rank on each of them; a trailing
 * newline gets no prefix after it. */
static void test_each_line_of_a_message_of_several_lines_names_the_rank(void) {
  hk_env real, env;
  test_env *te = mpi_test_env(&real);
  hk_mpi *mpi = mpi_test_context(NULL);
  hk_status st = HK_STATUS_INIT;
  char want[256], prefix[32];
  assert_ok(hk_mpi_log_env(&env, mpi, &real, &st), &st);
  expect_prefix(prefix, sizeof prefix);
  hk_env_log(&env, HK_LOG_INFO, "saving to path\n%s\nwith 1 listener(s).", "/ck/model.ckpt");
  snprintf(want, sizeof want, "%ssaving to path\n%s/ck/model.ckpt\n%swith 1 listener(s).", prefix, prefix, prefix);
  assert_string_equal(last_line(te)->text, want);
  hk_env_log(&env, HK_LOG_INFO, "ends\n");
  snprintf(want, sizeof want, "%sends\n", prefix);
  assert_string_equal(last_line(te)->text, want);
  hk_mpi_free(mpi);
  assert_int_equal(test_env_release(te), 0);
}

/* Many short lines: the prefixes outgrow their room, and the message is
 * cut at a line's end rather than overrun. */
static void test_a_message_of_many_lines_is_cut_not_overrun(void) {
  hk_env real, env;
  test_env *te = mpi_test_env(&real);
  hk_mpi *mpi = mpi_test_context(NULL);
  hk_status st = HK_STATUS_INIT;
  static char many[1000];
  char prefix[32];
  for (size_t i = 0; i + 1 < sizeof many; i++) many[i] = i % 2 ? '\n' : 'x';
  assert_ok(hk_mpi_log_env(&env, mpi, &real, &st), &st);
  expect_prefix(prefix, sizeof prefix);
  hk_env_log(&env, HK_LOG_INFO, "%s", many);
  /* The capture keeps TEST_LOG_LINE_MAX bytes of a message: every whole
   * line of those starts with the prefix, and the prefixes made room for
   * fewer lines than the message has. */
  const char *text = last_line(te)->text;
  int lines = 0;
  for (const char *line = text, *end; (end = strchr(line, '\n')) != NULL; line = end + 1, lines++)
    assert_int_equal(strncmp(line, prefix, strlen(prefix)), 0);
  assert_true(lines > 0 && lines < 499);
  hk_mpi_free(mpi);
  assert_int_equal(test_env_release(te), 0);
}

static void test_log_env_rejects_bad_arguments(void) {
  hk_mpi *mpi = mpi_test_context(NULL);
  hk_status st = HK_STATUS_INIT;
  hk_env env, bad = HK_ENV_INIT;
  assert_status(hk_mpi_log_env(NULL, mpi, NULL, &st), &st, HK_INVALID_ARGUMENT, "out is NULL");
  assert_status(hk_mpi_log_env(&env, NULL, NULL, &st), &st, HK_INVALID_ARGUMENT, "mpi is NULL");
  bad.version = 42;
  assert_status(hk_mpi_log_env(&env, mpi, &bad, &st), &st, HK_INVALID_ARGUMENT, "base");
  hk_mpi_free(mpi);
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      MPI_CASE(test_a_line_through_the_log_env_reaches_the_programs_sink_with_the_rank),
      MPI_CASE(test_each_line_of_a_message_of_several_lines_names_the_rank),
      MPI_CASE(test_a_message_of_many_lines_is_cut_not_overrun),
      MPI_CASE(test_wrapping_an_env_twice_prefixes_its_lines_once),
      MPI_CASE(test_the_contexts_own_lines_name_the_rank),
      MPI_CASE(test_a_stop_hook_given_the_programs_env_names_the_rank),
      MPI_CASE(test_a_logged_line_allocates_nothing_and_rewrapping_makes_no_record),
      MPI_CASE(test_a_line_longer_than_the_buffer_is_cut_not_overrun),
      MPI_CASE(test_log_env_rejects_bad_arguments),
  };
  return mpi_test_main(argc, argv, "mpi_log", tests, sizeof tests / sizeof tests[0], 2);
}
