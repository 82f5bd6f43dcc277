/*
 * What the pending-deletion test programs share (test_pending_deletions.c:
 * the state file's pending-deletion lines; test_pending_record.c: the record
 * earlier versions wrote): a graph of one variable and the global step, a
 * Saver over it in a fresh checkpoint directory, saves that play a crash
 * between the state file and the deletions, and the directory's listing.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_TESTS_UNIT_PENDING_TESTS_H
#define HOOKED_TESTS_UNIT_PENDING_TESTS_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include <hooked/hooked.h>
#include <hooked/checkpoint.h>
#include <hooked/graph.h>

#include "test_env.h"
#include "tmpdir.h"
#include "ckpt_fixture.h"
#include "faulty_fs.h"

#define RECORD "checkpoint.pending-deletions"
#define MAGIC "# hooked pending checkpoint deletions 1\n"

typedef struct fx {
  test_env *te;
  faulty_fs ff;
  hk_graph *g;
  hk_executor *ex;
  hk_raw_session *rs;
  char *root, *dir, *save_path;
} fx;

/* cmocka setup and teardown: *state is an fx. */
int setup(void **state);
int teardown(void **state);
/* Assign w and global_step the values of `step`. */
void set_step(fx *f, int64_t step);
hk_saver *make_saver(fx *f, int64_t max_to_keep, double hours);
/* Save `step` and assert it succeeded. */
void save(fx *f, hk_saver *s, int64_t step, unsigned flags);
/* The save of `step` runs as if the machine died right after its state file
 * became durable: no unlink of it happens. */
void save_then_crash(fx *f, hk_saver *s, int64_t step);
/* Paths and files in the checkpoint directory (malloc'd results). */
char *file_in(fx *f, const char *name);
int exists(fx *f, const char *name);
char *read_in(fx *f, const char *name, size_t *n);
void write_in(fx *f, const char *name, const char *text, size_t n);
/* The directory's entries, sorted, joined with ','. */
void assert_listing(fx *f, const char *want);
/* The state file lists `name` alone. */
void assert_state_lists_only(fx *f, const char *name);
/* An earlier version's record bound to the state file as it is now. */
void write_record_for_current_state(fx *f, const char *const *names, size_t n);
/* The names the state file records as pending deletions, joined with ','. */
void recorded(fx *f, char *out, size_t cap);
/* What an earlier version left where save_then_crash() leaves the state
 * file recording names: that state file without those lines and the
 * record naming them. */
void as_an_earlier_version_left_it(fx *f);
/* File and directory fsyncs so far. */
long syncs(fx *f);

#endif /* HOOKED_TESTS_UNIT_PENDING_TESTS_H */
