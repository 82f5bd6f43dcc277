/*
 * What the Saver test programs (test_saver_*.c) share: a graph of six saved
 * variables of several dtypes and a local one, their values derived from a
 * seed, a Saver over them, and listings of a checkpoint directory.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_TESTS_UNIT_SAVER_TESTS_H
#define HOOKED_TESTS_UNIT_SAVER_TESTS_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <hooked/hooked.h>
#include <hooked/checkpoint.h>
#include <hooked/graph.h>

#include "test_env.h"
#include "tmpdir.h"
#include "ckpt_fixture.h"
#include "faulty_fs.h"
#include "session_fixture.h"

#define NVARS 6

extern const char *const var_names[NVARS];

typedef struct fx {
  test_env *te;
  faulty_fs ff;
  hk_graph *g;
  hk_executor *ex;
  hk_raw_session *rs;
  char *root; /* temp tree */
  char *dir;  /* root/ck: the checkpoint directory */
  char *save_path;
  hk_saver *saver;
} fx;

void add_var(fx *f, const char *name, hk_dtype dt, int32_t rank, const int64_t *dims, uint32_t flags);
fx *fx_build(int with_gs);
int setup(void **state);
int teardown(void **state);
unsigned char pattern(int seed, size_t v, size_t k);
unsigned char value_byte(int seed, size_t v, size_t k, hk_dtype dt);
void set_var(fx *f, const char *name, int seed, size_t v);
void set_values(fx *f, int seed);
int var_is(fx *f, const char *name, int seed, size_t v);
void assert_values(fx *f, int seed);
hk_saver *make_saver(fx *f, int64_t max_to_keep, double hours);
void save_step(fx *f, hk_saver *s, int64_t step);
int cmp_str(const void *a, const void *b);
char *listing(const char *dir);
void assert_listing(const char *dir, const char *want);
void assert_state(fx *f, const char *want);
char *ckpt_file(fx *f, const char *name);
/* Save the state of `rs` at `step` with a Saver over `ex` and `env`,
 * unmanaged (no state file); returns the data file's bytes (malloc) and
 * their count, the file removed. */
char *saved_bytes(fx *f, hk_executor *ex, hk_raw_session *rs, const hk_env *env, int64_t step, size_t *n);

#endif /* HOOKED_TESTS_UNIT_SAVER_TESTS_H */
