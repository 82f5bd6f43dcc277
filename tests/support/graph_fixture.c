#include "graph_fixture.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <cmocka.h>

int graph_fixture_setup(void **state) {
  graph_fixture *f = calloc(1, sizeof(*f));
  hk_graph_options o = HK_GRAPH_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  assert_non_null(f);
  f->te = test_env_new();
  o.env = &f->te->env;
  assert_ok(hk_graph_new(&f->g, &o, &st), &st);
  f->ex = hk_graph_executor(f->g);
  assert_non_null(f->ex);
  *state = f;
  return 0;
}

int graph_fixture_teardown(void **state) {
  graph_fixture *f = *state;
  hk_raw_session_free(f->rs);
  hk_graph_free(f->g);
  /* every block the graph and its sessions allocated was freed */
  assert_int_equal(test_alloc_live(&f->te->alloc), 0);
  test_env_free(f->te);
  free(f);
  return 0;
}

void graph_fixture_variable(hk_graph *g, const char *name, hk_dtype dtype, int32_t rank, const int64_t *dims) {
  hk_variable_def d = HK_VARIABLE_DEF_INIT;
  hk_handle h;
  hk_status st = HK_STATUS_INIT;
  d.name = name;
  d.dtype = dtype;
  d.rank = rank;
  d.dims = dims;
  assert_ok(hk_graph_variable(g, &h, &d, &st), &st);
}
