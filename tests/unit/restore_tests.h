/*
 * What the restore test programs (test_restore_*.c) share: the model (a
 * graph whose variables hold values derived from a seed, so a restored
 * session shows which checkpoint it came from), the fixture (a session
 * manager, a writer raw session and its Saver) and their helpers.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_TESTS_UNIT_RESTORE_TESTS_H
#define HOOKED_TESTS_UNIT_RESTORE_TESTS_H

#include <stdarg.h>
#include <errno.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <hooked/hooked.h>
#include <hooked/checkpoint.h>
#include <hooked/graph.h>
#include <hooked/hooks.h>

#include "test_env.h"
#include "tmpdir.h"
#include "ckpt_fixture.h"
#include "spy_hook.h"
#include "faulty_fs.h"
#include "fake_executor.h"

#define WAIT_LINE "Waiting for checkpoint to be available."
#define NW 6 /* elements of w */

/* Variants of "b", for H27's mismatches, optional variables and tensors
 * no variable asks for: a shape, or no "b" at all, OR'ed with flags. */
enum { B_F64_4, B_F64_5, B_F32_4, B_NONE, B_SHAPE = 0x0f, B_OPTIONAL = 0x10, B_EXTERNAL = 0x20 };

#define B_EXTERNAL_VALUE 7.5 /* what an external "b" holds before any restore */

typedef struct model {
  hk_graph *g;
  hk_executor *ex;
  hk_handle w, b, gs, loc;
  hk_handle init, local_init, ready, train;
  double b_ext[5]; /* B_EXTERNAL (F64 only): the host's storage of "b" */
} model;

void model_build(model *m, test_env *te, int b_variant, uint64_t seed);
size_t var_index(model *m, const char *name);
float w_of(int seed, size_t k);
double b_of(int seed, size_t k);
void set_values(model *m, hk_raw_session *rs, int seed);
int read_var(model *m, hk_raw_session *rs, const char *name, void *out, size_t n);
int64_t gs_of(model *m, hk_raw_session *rs);
int holds(model *m, hk_raw_session *rs, int seed);
void initial_w(model *m, float *w);
int initialized_by_init_op(model *m, hk_raw_session *rs);

/* A log sink in front of the capture: at the `at`-th C68 wait line it
 * renames `from` to `to` (a state file appearing) or cancels `sm`. */
typedef struct wait_hook {
  test_env *te;
  int count, at;
  const char *from, *to;
  hk_session_manager *sm;
} wait_hook;

void wait_log(void *user, hk_log_level level, const char *msg);

typedef struct fx {
  test_env *te;
  model m, m2;
  hk_raw_session *rs, *rs2; /* writers of m and m2 */
  char *root, *dir, *save_path;
  hk_saver *writer, *writer2, *saver;
  hk_env wenv; /* te->env with wait_log */
  wait_hook wh;
  hk_session_manager_options mo;
  hk_session_manager *sm;
  hk_prepare_options po;
  hk_raw_session *out;
  /* sessions */
  hk_scaffold *scaffold;
  hk_session *s;
  hk_hook *hooks[2];
  spy_hook *spy;
  hk_status st;
} fx;

hk_saver *saver_new(fx *f, model *m, int64_t max_to_keep, const char *const *names, size_t n);
extern const char *const all_vars[3];
int setup(void **state);
int teardown(void **state);
void make_sm(fx *f);
void save_with(fx *f, hk_saver *s, model *m, hk_raw_session *rs, int step);
void save(fx *f, int step);
char *prefix_of(fx *f, int step);
char *data_of(fx *f, int step);
void corrupt(fx *f, int step);
void remove_data(fx *f, int step);
int ckpt_exists(fx *f, int step);
void assert_managed(fx *f, hk_saver *s, const int *steps, size_t n);
void assert_state_lists(fx *f, const int *steps, size_t n);
hk_code prepare(fx *f);
void drop_out(fx *f);
int skipped_logged(fx *f);
void session_options(fx *f, hk_session_options *o, hk_session_kind kind, size_t nhooks);

#endif /* HOOKED_TESTS_UNIT_RESTORE_TESTS_H */
