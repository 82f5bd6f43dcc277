/*
 * What the CheckpointSaverHook test programs
 * (test_checkpoint_saver_hook_*.c) share: a spy listener (C103), the
 * fixture (a session over the fake executor, a temporary checkpoint
 * directory) and its helpers.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_TESTS_UNIT_CHECKPOINT_SAVER_HOOK_TESTS_H
#define HOOKED_TESTS_UNIT_CHECKPOINT_SAVER_HOOK_TESTS_H

#include "session_fixture.h"
#include "tmpdir.h"
#include "ckpt_fixture.h"
#include "faulty_fs.h"
#include "gate_fs.h"

/* C100 drives the callbacks without a session: the struct layouts of a hook
 * and a run context (no library symbol) come from core's internal header. */
#include "../../src/core/core_internal.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_EVENTS 64

/* The test array's entries. */
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

typedef struct spy_listener {
  const char *name;
  char *order; /* shared event log: "name.slot@step;" */
  size_t order_cap;
  int begin, before, after, end;
  int64_t before_steps[MAX_EVENTS];
  int64_t end_step;
  int64_t stop_at; /* after_save requests a stop at this step; -1 never */
  hk_code fail_before, fail_after, fail_begin, fail_end;
} spy_listener;

void note(spy_listener *l, const char *slot, int64_t step);
hk_code l_begin(void *user, hk_status *st);
hk_code l_before(void *user, hk_raw_session *rs, int64_t step, hk_status *st);
hk_code l_after(void *user, hk_raw_session *rs, int64_t step, int *stop, hk_status *st);
hk_code l_end(void *user, hk_raw_session *rs, int64_t step, hk_status *st);
extern const hk_checkpoint_listener_vtable spy_listener_vtable;

typedef struct fixture {
  test_env *te;
  char *tmp;
  char *dir; /* tmp/ckpt: the checkpoint_dir, created by begin() */
  fake_executor *fx;
  hk_handle gs, train, v, bump;
  hk_hook *hook;
  hk_session *s;
  hk_saver *saver;
  hk_scaffold *scaffold;
  spy_listener l[2];
  hk_checkpoint_listener ls[2];
  char order[2048];
  int preempted; /* preempt_first_train fired */
  hk_checkpoint_saver_options o;
  hk_status st;
} fixture;

int setup(void **state);
int teardown(void **state);
void make_hook(fixture *f);
hk_code open_session(fixture *f);
void open_ok(fixture *f);
hk_code step(fixture *f);
hk_code close_session(fixture *f);
int ckpt_exists(fixture *f, const char *base, int64_t step);
void read_ckpt(fixture *f, int64_t step, int64_t *gs, int64_t *v);
int count_files(fixture *f, const char *substr);

#endif /* HOOKED_TESTS_UNIT_CHECKPOINT_SAVER_HOOK_TESTS_H */
