/*
 * graph_fixture — a cmocka fixture holding an embedded graph on a test_env
 * (mock clock, counting allocator, log capture) and an optional raw session.
 * Teardown frees the session and the graph and fails the test if any block
 * allocated through the env is still live.
 */
#ifndef HOOKED_TESTS_GRAPH_FIXTURE_H
#define HOOKED_TESTS_GRAPH_FIXTURE_H

#include "hooked/hooked.h"
#include "test_env.h"

typedef struct graph_fixture {
  test_env *te;
  hk_graph *g;
  hk_executor *ex;
  hk_raw_session *rs; /* set by the test when it opens one; freed by teardown */
} graph_fixture;

/** cmocka setup: *state becomes a graph_fixture with an empty graph. */
int graph_fixture_setup(void **state);
/** cmocka teardown: frees everything and asserts nothing leaked. */
int graph_fixture_teardown(void **state);

/** Add a zero-initialized variable `name` of `dtype` and shape
 *  dims[0..rank) to `g`; asserts success. */
void graph_fixture_variable(hk_graph *g, const char *name, hk_dtype dtype, int32_t rank, const int64_t *dims);

#endif
