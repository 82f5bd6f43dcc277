/*
 * hooked-ckpt check-resume — declarations its three files share:
 *
 *   check_resume.c  the command: its arguments, the runs it makes, the
 *                   stop step, the verdict and the exit status
 *   runs.c          running the program (its output into a log per run),
 *                   the work directory, the checkpoints a run left, the
 *                   report files of states that are not stable
 *   judge.c         comparing two runs' shared checkpoints and writing what
 *                   the differences say
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_TOOLS_HOOKED_CKPT_CHECK_RESUME_H
#define HOOKED_TOOLS_HOOKED_CKPT_CHECK_RESUME_H

#include "tool.h"

#define CHECK_RESUME_VAR "HOOKED_CHECK_RESUME"
#define DIR_PLACEHOLDER "{dir}"
/* Exit statuses: identical, different, could not tell (usage, a failed run). */
#define CR_SAME 0
#define CR_DIFFERENT 1
#define CR_TROUBLE 2

/* ---- runs.c ----------------------------------------------------------------- */

/* One run of the program: its checkpoint directory ({dir}), its log, and
 * the directory the library writes its reports into. */
typedef struct run {
  const char *label; /* "reference", "stopped", ... */
  char *dir, *log, *report;
} run;

/* A checkpoint a run left: "<key>-<step>.safetensors" under the run's
 * directory, `key` relative to it ("model.ckpt", "ckpt/model.ckpt"). */
typedef struct ckpt_file {
  char *key;
  int64_t step;                           /* the global step the checkpoint holds */
  char *prefix;                           /* the full prefix, for the reader */
  unsigned long long ino, mtime_ns, size; /* to tell a rewrite */
} ckpt_file;

typedef struct ckpt_set {
  ckpt_file *f; /* by step, then key */
  size_t n, cap;
} ckpt_set;

/* A state the library named as not stable (two reads, other bytes). */
typedef struct unstable {
  char *name, *bytes, *runs; /* runs: the labels of the runs that named it */
  unsigned long long size;
} unstable;

typedef struct unstable_list {
  unstable *u;
  size_t n, cap;
} unstable_list;

/* SIGINT and SIGTERM end the run in progress and mark the check as
 * interrupted; @return nonzero once one came. */
void runs_handle_signals(void);
int runs_interrupted(void);
/* Make the work directory: `given` (created, or empty) or a fresh
 * $TMPDIR/hooked-check-resume.XXXXXX. *made: it did not exist before.
 * @return its path (malloc), NULL after a message. */
char *make_work_dir(const char *given, int *made);
/* Remove `path` and everything under it (`keep_top`: empty it only). */
void remove_tree(const char *path, int keep_top);
/* Set up run `label` under `work`: its log "<label>.log", its report
 * directory "reports/<label>" and its checkpoint directory `dir` (made
 * unless it exists). @return 0, or CR_TROUBLE after a message. */
int run_init(run *r, const char *work, const char *label, const char *dir);
void run_free(run *r);
/* Run args (with {dir} made r->dir) with HOOKED_CHECK_RESUME=`var`, its
 * output into r->log. @return 0 when it exited 0; else CR_TROUBLE after a
 * message naming the run and the tail of its output. */
int run_program(const run *r, char *const *args, size_t nargs, const char *var, const char *what);
/* Print the last lines of r->log on stderr, under a line naming it. */
void print_log_tail(const run *r);
/* Every checkpoint under `dir` (a few levels of subdirectories included).
 * @return 0, or CR_TROUBLE after a message. */
int list_checkpoints(const hk_env *env, const char *dir, ckpt_set *out);
void free_checkpoints(ckpt_set *s);
/* The checkpoint of (key, step) in s, or NULL. */
const ckpt_file *find_checkpoint(const ckpt_set *s, const char *key, int64_t step);
/* Add the states r's report directory names to `list`. @return 0, or
 * CR_TROUBLE after a message. */
int read_reports(const run *r, unstable_list *list);
void free_unstable(unstable_list *list);

/* ---- judge.c ---------------------------------------------------------------- */

/* Labels of the two sides of a comparison: "the uninterrupted run", ... */
typedef struct sides {
  const char *a, *b;
} sides;

/* What a comparison of two runs' shared checkpoints found. */
typedef struct verdict {
  size_t shared;      /* checkpoints both runs hold */
  size_t tensors;     /* tensors compared, summed over them */
  size_t differ;      /* checkpoints that differ */
  int64_t first_step; /* the first step that differs (differ > 0) */
  const char *first_key;
  int64_t last_equal;         /* the last step before first_step whose checkpoints are identical; -1: none */
  size_t equal_before;        /* identical checkpoints before first_step */
  size_t shared_after_first;  /* shared checkpoints after first_step (of which differ - 1 differ) */
  size_t last_differ_tensors; /* tensors that differ in the last checkpoint compared */
  int64_t lo, hi;             /* the steps compared (shared > 0) */
} verdict;

/* Compare every checkpoint a and b share, by key and step, from step `from`
 * to step `to` (inclusive). @return 0, or CR_TROUBLE after a message. */
int judge_runs(const hk_env *env, const ckpt_set *a, const ckpt_set *b, int64_t from, int64_t to, verdict *v);
/* Names, ", "-separated: the first few (malloc), and how many in all. */
typedef struct name_list {
  char *text;
  size_t n;
} name_list;

/* What one step's tensors say, beyond the lines print_step writes. */
typedef struct step_summary {
  int states_only;         /* only opaque-looking states (U8 vectors) differ */
  name_list equal_arrays;  /* tensors still equal, states apart */
  name_list equal_states;  /* states still equal */
  name_list differ_states; /* states whose bytes differ */
} step_summary;

/* Print, on stdout, the tensors of a's and b's checkpoint of (key, step):
 * those that differ (how, where, by how much), those only one holds, then
 * the names of those still equal. @return 0, or CR_TROUBLE after a
 * message; free_step_summary(out) either way. */
int print_step(const hk_env *env, const ckpt_set *a, const ckpt_set *b, const char *key, int64_t step,
               const sides *labels, step_summary *out);
void free_step_summary(step_summary *s);
/* The usual causes of a run that depends on state outside its checkpoint. */
void print_causes(void);

#endif /* HOOKED_TOOLS_HOOKED_CKPT_CHECK_RESUME_H */
