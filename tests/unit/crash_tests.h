/*
 * What test_crash.c's scenarios share with their checker (crash_tests.c):
 * the model the scenarios save, and the checker that replays every crash
 * point of a recording and checks each state.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_TESTS_UNIT_CRASH_TESTS_H
#define HOOKED_TESTS_UNIT_CRASH_TESTS_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <hooked/hooked.h>
#include <hooked/checkpoint.h>

#include "test_env.h"
#include "tmpdir.h"
#include "fake_executor.h"
#include "session_fixture.h"
#include "crash_fs.h"

#define W_N 64     /* "w" is F32[64]: 256 bytes, the fake executor's limit */
#define MAX_MSGS 6 /* violations printed per scenario */
#define MAX_ALLOWED 64

/* ---- the model: global_step, v = 5 * step, w a fixed pattern ------------------------- */

typedef struct model_vars {
  fake_executor *fx;
  hk_executor *ex;
  hk_handle gs, train, v, bump, w;
} model_vars;

/* global_step, "v" (+= 5 by the op bump) and "w" on a fake executor of te. */
void make_executor(test_env *te, model_vars *mv);
/* What a training program holds at `step`. */
void assign_step(hk_raw_session *rs, hk_executor *ex, int64_t step);
hk_saver *saver_new(const hk_env *env, hk_executor *ex, int64_t max_to_keep);
/* A fresh directory, in /dev/shm when there is one ($HOOKED_CRASH_DIR
 * overrides); free it with test_tmpdir_free(). */
char *fast_tmpdir(const char *tag);
double now_secs(void);

/* ---- the checker ------------------------------------------------------------------- */

typedef struct expect {
  const char *ck;          /* the checkpoint directory, relative to the root */
  int64_t prev;            /* newest checkpoint before the recording; -1: none */
  int64_t max_to_keep;     /* of the Saver that makes the next save */
  int64_t next;            /* step of the next save */
  const char *const *keep; /* files (relative to the root) no save may touch (D6.4) */
  size_t nkeep;
  int64_t vanish; /* D6.5: model.ckpt-<vanish> is gone after the next save; -1: unchecked */
  /* model.ckpt-<survive>, an old step saved again: it stays once its save
   * was acknowledged, is newer than its step says, and is retention's only
   * when listed (an older step than the oldest listed is never adopted,
   * H60); -1: none */
  int64_t survive;
  int survive_kept; /* model.ckpt-<survive> is unlisted: no later save may delete it either */
  int survived;     /* nested: the crashed run had acknowledged the save of model.ckpt-<survive> */
  int nest;         /* explore the crash points of the next save too, where D6.5 has work (nests()) */
} expect;

typedef struct checker {
  test_env *te;  /* env of the checks: its fs is replaced per use */
  model_vars mv; /* an executor with the model's variables, to restore into */
  char *scratch; /* states are materialized below it */
  unsigned long seq;
  long checked;     /* states checked, nested ones included */
  long nested;      /* of which in a nested exploration */
  long bad;         /* states with at least one violation */
  long windows;     /* first-level states in D6.5's window */
  const char *want; /* count the violations whose message contains this */
  long want_hits;
  int nmsgs;
  char msgs[MAX_MSGS][1536];
  crash_explore_opts opts, nested_opts;
} checker;

checker *checker_new(void);
void checker_free(checker *ck);
/* Check every crash state of the recording cf as ex expects (crash_tests.c's
 * file comment); depth 1 also explores the next saves where ex->nest says. */
void explore(checker *ck, const crash_fs *cf, const expect *ex, int depth, const crash_explore_opts *opts,
             crash_explore_stats *stats);
/* The violations kept, and how many states had one. */
void print_msgs(const checker *ck);

#endif
