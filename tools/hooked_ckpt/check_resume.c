/*
 * hooked-ckpt check-resume — prove that a program resumes exactly, in one
 * command:
 *
 *   hooked-ckpt check-resume [--stop-at K] [--twice] [--work-dir D]
 *       [--keep-work-dir] [--program-retention] -- COMMAND [ARGS...]
 *
 * {dir} in ARGS is the run's checkpoint directory. The program runs to its
 * end (the reference); runs again into a fresh directory, stopped at step K
 * with its final checkpoint there; runs again in that directory, resuming
 * from K to the end; and every checkpoint the two directories share (same
 * name, same global step) is compared byte for byte. The stop is asked of
 * hooked, not of the program: HOOKED_CHECK_RESUME (hooked/hooks.h) in the
 * runs' environment makes the checkpoint saver hooks stop at K and keep
 * every checkpoint, and the host loop read every opaque state twice to name
 * one whose bytes are not stable (uninitialized padding). With --twice the
 * uninterrupted run is made twice first: two runs that differ say the
 * program is not deterministic even without a restart, and that, not
 * resume, is reported.
 *
 * Exit status: 0 and one line on stdout when every shared checkpoint is
 * byte-identical and no state was named; 1 with a report on stdout when
 * not; 2 for bad usage, a run that failed or did not stop at K, or runs
 * that share no checkpoint (a message on stderr).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "check_resume.h"

#include <limits.h>
#include <stdarg.h>

static const char usage[] = "usage: " TOOL
                            " check-resume [OPTIONS] -- COMMAND [ARGS...]\n"
                            "\n"
                            "Prove that COMMAND, a training program on hooked (the host loop, or a\n"
                            "MonitoredTrainingSession), resumes exactly. Write {dir} where it takes its\n"
                            "checkpoint directory, e.g. --checkpoint-dir {dir} (also inside an argument:\n"
                            "--checkpoint-dir={dir}/ckpt). COMMAND runs three times, each run's output\n"
                            "into a log whose end is shown when the run fails:\n"
                            "  1. to its end, into a fresh directory: the reference;\n"
                            "  2. into another fresh directory, stopped after step K with its final\n"
                            "     checkpoint there;\n"
                            "  3. in that directory again, resuming from K to its end.\n"
                            "Then every checkpoint the two directories share (same name, same global step)\n"
                            "is compared byte for byte. The stop, and keeping every checkpoint, are asked\n"
                            "of hooked through the environment variable " CHECK_RESUME_VAR
                            ", not of\n"
                            "COMMAND's flags; the host loop also reads each registered state twice and\n"
                            "names one whose bytes are not stable (uninitialized padding).\n"
                            "\n"
                            "options:\n"
                            "  --stop-at K          stop at global step K (default: of the reference's\n"
                            "                       checkpoint steps, the one nearest half its last step,\n"
                            "                       neither its first nor its last; none: half the last)\n"
                            "  --twice              first run COMMAND to its end twice and compare the two:\n"
                            "                       runs that differ are reported as not deterministic\n"
                            "                       even without a restart (resume is not blamed)\n"
                            "  --work-dir D         keep the runs in D (made, or an empty directory)\n"
                            "                       instead of a fresh directory under $TMPDIR or /tmp\n"
                            "  --keep-work-dir      keep it after a success too (it is always kept after\n"
                            "                       a failure, and removed after a success)\n"
                            "  --program-retention  leave COMMAND's own max_to_keep in force: compare only\n"
                            "                       the checkpoints it keeps\n"
                            "  -h, --help           show this help\n"
                            "\n"
                            "exit status: 0 every shared checkpoint is byte-identical (one line on\n"
                            "stdout); 1 they differ, or a state is not stable (a report on stdout: the\n"
                            "first step that differs, its tensors, what the data says and the usual\n"
                            "causes); 2 bad usage, a run of COMMAND that failed or did not stop at K,\n"
                            "or runs that share no checkpoint (a message on stderr)\n";

typedef struct options {
  int64_t stop_at; /* -1: the tool chooses */
  int twice, keep_work_dir, program_retention;
  const char *work_dir; /* NULL: mkdtemp */
  char *const *args;    /* the command */
  size_t nargs;
} options;

/* Everything one check holds, freed by cmd_check_resume(). */
typedef struct check {
  const hk_env *env;
  options o;
  char *work;
  int work_made;
  run ref, twin, stopped, resumed;
  ckpt_set ref_set, twin_set, stopped_set, final_set;
  unstable_list unstable;
} check;

/* ---- arguments ------------------------------------------------------------------ */

static int parse_step(const char *text, int64_t *out) {
  char *end;
  long long v;
  if (text[0] < '0' || text[0] > '9') return 1;
  v = strtoll(text, &end, 10);
  if (*end != '\0' || v < 0 || v == LLONG_MAX) return 1;
  *out = (int64_t)v;
  return 0;
}

/* A usage error of check-resume: "hooked-ckpt: check-resume: ..." and its
 * help hint. @return CR_TROUBLE. */
static int bad_usage(const char *fmt, const char *arg) {
  fprintf(stderr, TOOL ": check-resume: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\nTry '" TOOL " check-resume --help'.\n");
  return CR_TROUBLE;
}

/* `--name VALUE` or `--name=VALUE` at argv[*i]: the value, or NULL. */
static const char *option_value(int argc, char **argv, int *i, const char *name, int *missing) {
  size_t n = strlen(name);
  *missing = 0;
  if (strncmp(argv[*i], name, n) != 0) return NULL;
  if (argv[*i][n] == '=') return argv[*i] + n + 1;
  if (argv[*i][n] != '\0') return NULL;
  if (*i + 1 >= argc) {
    *missing = 1;
    return NULL;
  }
  return argv[++*i];
}

static int has_placeholder(const options *o) {
  for (size_t i = 0; i < o->nargs; i++)
    if (strstr(o->args[i], DIR_PLACEHOLDER) != NULL) return 1;
  return 0;
}

/* @return -1 to go on, else the exit status (help printed, or bad usage). */
static int parse_options(int argc, char **argv, options *o) {
  int i;
  memset(o, 0, sizeof *o);
  o->stop_at = -1;
  for (i = 0; i < argc; i++) {
    const char *a = argv[i], *v;
    int missing = 0;
    if (strcmp(a, "--") == 0) {
      i++;
      break;
    }
    if (a[0] != '-') break; /* the command */
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      fputs(usage, stdout);
      return 0;
    }
    if (strcmp(a, "--twice") == 0) {
      o->twice = 1;
    } else if (strcmp(a, "--keep-work-dir") == 0) {
      o->keep_work_dir = 1;
    } else if (strcmp(a, "--program-retention") == 0) {
      o->program_retention = 1;
    } else if ((v = option_value(argc, argv, &i, "--stop-at", &missing)) != NULL || missing) {
      if (missing) return bad_usage("option '%s' needs a value", "--stop-at");
      if (parse_step(v, &o->stop_at) != 0)
        return bad_usage("invalid --stop-at '%s': expected a global step, an integer >= 0", v);
    } else if ((v = option_value(argc, argv, &i, "--work-dir", &missing)) != NULL || missing) {
      if (missing || v[0] == '\0') return bad_usage("option '%s' needs a directory", "--work-dir");
      o->work_dir = v;
    } else {
      return bad_usage("unknown option '%s' (the program's own arguments go after '--')", a);
    }
  }
  if (i >= argc) return bad_usage("no command: %s [OPTIONS] -- COMMAND [ARGS...]", "check-resume");
  o->args = argv + i;
  o->nargs = (size_t)(argc - i);
  if (!has_placeholder(o))
    return bad_usage(
        "the command has no %s: write it where the program takes its checkpoint "
        "directory (e.g. --checkpoint-dir {dir}); each run gets a fresh directory there",
        DIR_PLACEHOLDER);
  return -1;
}

/* ---- the runs ---------------------------------------------------------------------- */

/* HOOKED_CHECK_RESUME for run r (malloc): its report directory, keep_all
 * unless --program-retention, stop_at when `stop_at` >= 0. */
static char *variable(const check *c, const run *r, int64_t stop_at) {
  char buf[64] = "";
  size_t n = strlen(r->report) + 64;
  char *v = malloc(n);
  if (v == NULL) return NULL;
  if (stop_at >= 0) snprintf(buf, sizeof buf, ",stop_at=%" PRId64, stop_at);
  snprintf(v, n, "report=%s%s%s", r->report, buf, c->o.program_retention ? "" : ",keep_all=1");
  return v;
}

/* Run r to its end (stop_at -1) or to stop_at, then list its checkpoints
 * into *set and read its reports. @return 0, or CR_TROUBLE. */
static int make_run(check *c, run *r, int64_t stop_at, const char *what, ckpt_set *set) {
  char *var = variable(c, r, stop_at);
  int rc;
  if (var == NULL) {
    out_of_memory();
    return CR_TROUBLE;
  }
  rc = run_program(r, c->o.args, c->o.nargs, var, what);
  free(var);
  if (rc != 0 && stop_at >= 0 && !runs_interrupted())
    fprintf(stderr,
            TOOL ": check-resume: the reference run ended cleanly; this one was asked to stop after step %" PRId64
                 " (" CHECK_RESUME_VAR
                 " stop_at): does the program end its loop when hk_loop_should_stop() or "
                 "hk_session_should_stop() says so?\n",
            stop_at);
  if (rc == 0) rc = read_reports(r, &c->unstable);
  if (rc == 0) rc = list_checkpoints(c->env, r->dir, set);
  return rc;
}

static int64_t max_step(const ckpt_set *s) { return s->n ? s->f[s->n - 1].step : -1; }

/* K: among the reference's checkpoint steps, the one nearest half its last
 * step, neither its first nor its last; with none, half the last step. */
static int64_t choose_stop(const ckpt_set *s) {
  int64_t first = s->f[0].step, last = max_step(s), half = last / 2, best = -1;
  for (size_t i = 0; i < s->n; i++) {
    int64_t k = s->f[i].step;
    if (k == first || k == last) continue;
    if (best < 0 || (k > half ? k - half : half - k) < (best > half ? best - half : half - best)) best = k;
  }
  return best >= 0 ? best : half;
}

/* A checkpoint of the stopped run (at or before its stop step S) that the
 * resumed run wrote again: the resumed run did not resume from S. */
static const ckpt_file *rewritten(const ckpt_set *before, const ckpt_set *after) {
  for (size_t i = 0; i < before->n; i++) {
    const ckpt_file *b = &before->f[i], *a = find_checkpoint(after, b->key, b->step);
    if (a != NULL && (a->ino != b->ino || a->mtime_ns != b->mtime_ns || a->size != b->size)) return a;
  }
  return NULL;
}

/* ---- reports --------------------------------------------------------------------- */

static void print_command(const options *o) {
  printf("  command:");
  for (size_t i = 0; i < o->nargs; i++) printf(" %s", o->args[i]);
  printf("\n");
}

#define WRAP 100
#define PARAGRAPH_MAX 2048

/* A paragraph: printf(fmt, ...) wrapped at WRAP columns, every line
 * indented by `indent` spaces (the first too), ended with a newline. */
static void paragraph(int indent, const char *fmt, ...) {
  char text[PARAGRAPH_MAX];
  const char *p = text;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  while (*p) {
    size_t room = WRAP - (size_t)indent, n = strlen(p), cut = n;
    if (n > room) {
      for (cut = room; cut > 0 && p[cut] != ' '; cut--) {}
      if (cut == 0) cut = strcspn(p, " ");
    }
    printf("%*s%.*s\n", indent, "", (int)cut, p);
    p += cut;
    while (*p == ' ') p++;
  }
}

static void print_unstable(const unstable_list *list) {
  for (size_t i = 0; i < list->n; i++) {
    const unstable *u = &list->u[i];
    char runs[128];
    const char *last = strrchr(u->runs, ',');
    /* "reference, stopped, resumed" as "reference, stopped and resumed" */
    if (last != NULL)
      snprintf(runs, sizeof runs, "%.*s and%s", (int)(last - u->runs), u->runs, last + 1);
    else
      snprintf(runs, sizeof runs, "%s", u->runs);
    paragraph(2,
              "state '%s' (%llu bytes) gave different bytes in two reads of the same state, in the %s run%s: bytes "
              "%s differ. Uninitialized padding in the struct its save callback copies, or bytes of dst it does not "
              "write: they hold whatever memory held, so its checkpoints differ from run to run. Zero the struct "
              "(memset) before filling it, or write its fields into dst one by one.",
              u->name, u->size, runs, last != NULL ? "s" : "", u->bytes ? u->bytes : "?");
  }
}

/* "identical through step X ...; first difference at step S (key-S)". */
static void print_where(const verdict *v, const char *through, const char *first) {
  if (v->equal_before > 0)
    printf("  identical through step %" PRId64 "%s (%zu checkpoint%s, steps %" PRId64 " to %" PRId64 ")\n",
           v->last_equal, through, v->equal_before, v->equal_before == 1 ? "" : "s", v->lo, v->last_equal);
  printf("  first difference at step %" PRId64 " (%s-%" PRId64 ")%s:\n", v->first_step, v->first_key, v->first_step,
         first);
}

static void print_later(const verdict *v) {
  size_t later_differ = v->differ - 1;
  if (v->shared_after_first == 0) return;
  if (later_differ == v->shared_after_first)
    printf("  every later checkpoint differs too (%zu, to step %" PRId64 ", where %zu tensor%s differ)\n", later_differ,
           v->hi, v->last_differ_tensors, v->last_differ_tensors == 1 ? "" : "s");
  else
    printf("  %zu of the %zu later checkpoints differ too\n", later_differ, v->shared_after_first);
}

static void print_kept(const check *c, const run *a, const run *b, const verdict *v) {
  printf(
      "  kept for a closer look: %s (the runs' directories and logs); compare that step with\n"
      "    " TOOL " diff %s/%s-%" PRId64 " %s/%s-%" PRId64 "\n",
      c->work, a->dir, v->first_key, v->first_step, b->dir, v->first_key, v->first_step);
}

/* The runs differ before any restart. @return CR_DIFFERENT or CR_TROUBLE. */
static int report_nondeterministic(check *c, const run *a, const ckpt_set *sa, const run *b, const ckpt_set *sb,
                                   const verdict *v, const sides *labels) {
  step_summary sum;
  printf(TOOL " check-resume: not deterministic even without a restart: %s and %s differ before any restart\n",
         labels->a, labels->b);
  print_command(&c->o);
  print_where(v, "", "");
  if (print_step(c->env, sa, sb, v->first_key, v->first_step, labels, &sum) != 0) {
    free_step_summary(&sum);
    return CR_TROUBLE;
  }
  print_later(v);
  if (sum.states_only)
    paragraph(2,
              "What the data says: at step %" PRId64
              " only the state%s %s differ%s and every array is equal: %s from something that is not the same in "
              "another process (a seed from the clock or the pid, an address, the time).",
              v->first_step, sum.differ_states.n == 1 ? "" : "s", sum.differ_states.text,
              sum.differ_states.n == 1 ? "s" : "", sum.differ_states.n == 1 ? "it starts" : "they start");
  printf(
      "  Resume is not what differs: the program computes something else each time it runs, so no restart\n"
      "  can match it. The usual causes:\n"
      "    - an RNG seeded from the clock, the pid or an address\n"
      "    - threads that race (a reduction in a varying order, a shared queue)\n"
      "    - uninitialized memory the computation reads\n"
      "    - behaviour that depends on time (a time budget, a timestamp in the state)\n"
      "  Make two uninterrupted runs agree first (--twice runs two and compares them), then check resume\n"
      "  again.\n");
  free_step_summary(&sum);
  if (c->unstable.n > 0) print_unstable(&c->unstable);
  print_kept(c, a, b, v);
  return CR_DIFFERENT;
}

/* What the first differing step after the restart says. */
static void print_resume_data(int64_t stop, const verdict *v, const step_summary *sum) {
  char start[160], rest[1024];
  if (v->last_equal == stop)
    snprintf(start, sizeof start,
             "every tensor was byte-identical at step %" PRId64 ", the checkpoint the resumed run started from", stop);
  else
    snprintf(start, sizeof start, "the runs agree until the restart at step %" PRId64, stop);
  if (sum->states_only) {
    paragraph(2,
              "What the data says: %s, and at step %" PRId64
              " only the state%s %s differ%s while every array is equal: a restore callback that does not rebuild "
              "all its save callback writes, or a state that holds something that differs from process to process "
              "(a time, an address, a pid).",
              start, v->first_step, sum->differ_states.n == 1 ? "" : "s", sum->differ_states.text,
              sum->differ_states.n == 1 ? "s" : "");
    return;
  }
  rest[0] = '\0';
  if (sum->equal_states.n > 0)
    snprintf(rest, sizeof rest,
             " The state%s %s still agree%s at step %" PRId64
             ", restored and advanced alike: look for what the step reads that is not registered.",
             sum->equal_states.n == 1 ? "" : "s", sum->equal_states.text, sum->equal_states.n == 1 ? "s" : "",
             v->first_step);
  else if (sum->differ_states.n == 0)
    snprintf(rest, sizeof rest,
             " The checkpoint holds no opaque state at all (no U8 vector, as an RNG or a data position registered "
             "with hk_loop_add_state() would be): if the program draws random numbers or walks its data, that is "
             "not in it.");
  paragraph(2,
            "What the data says: %s, and from step %" PRId64
            " on they differ: the steps after the restart computed with something the checkpoint does not hold, or "
            "that restoring it does not bring back.%s",
            start, v->first_step, rest);
}

/* The runs agree until the restart and differ after it. */
static int report_resume(check *c, int64_t stop, const verdict *v) {
  const sides labels = {"the uninterrupted run", "the resumed run"};
  step_summary sum;
  printf(TOOL " check-resume: the resumed run differs from the uninterrupted one\n");
  print_command(&c->o);
  printf("  stopped at step %" PRId64 ", then resumed to step %" PRId64 "; the uninterrupted run ended at step %" PRId64
         "\n",
         stop, max_step(&c->final_set), max_step(&c->ref_set));
  print_where(v, v->last_equal == stop ? ", the checkpoint the resumed run restored" : "",
              v->last_equal == stop ? ", the first checkpoint after the restart" : "");
  if (print_step(c->env, &c->ref_set, &c->final_set, v->first_key, v->first_step, &labels, &sum) != 0) {
    free_step_summary(&sum);
    return CR_TROUBLE;
  }
  print_later(v);
  print_resume_data(stop, v, &sum);
  free_step_summary(&sum);
  print_causes();
  printf(
      "  Register what the program carries from one step to the next: hk_loop_add_array() for its arrays,\n"
      "  hk_loop_add_state() for an RNG or a struct (in a graph: a variable).\n");
  if (c->unstable.n > 0) print_unstable(&c->unstable);
  print_kept(c, &c->ref, &c->resumed, v);
  return CR_DIFFERENT;
}

/* ---- the command -------------------------------------------------------------------- */

static int trouble(const char *fmt, int64_t a, int64_t b) {
  fprintf(stderr, TOOL ": check-resume: ");
  fprintf(stderr, fmt, a, b);
  fprintf(stderr, "\n");
  return CR_TROUBLE;
}

/* The uninterrupted run twice, compared: @return -1 when they agree. */
static int run_twice(check *c) {
  const sides labels = {"the first uninterrupted run", "the second one"};
  verdict v;
  int rc;
  if ((rc = run_init(&c->twin, c->work, "reference2", "reference2")) != 0 ||
      (rc = make_run(c, &c->twin, -1, "run 2: the uninterrupted run again (--twice)", &c->twin_set)) != 0)
    return rc;
  if ((rc = judge_runs(c->env, &c->ref_set, &c->twin_set, INT64_MIN, INT64_MAX, &v)) != 0) return rc;
  if (v.shared == 0)
    return trouble("the two uninterrupted runs share no checkpoint (newest steps %" PRId64 " and %" PRId64 ")",
                   max_step(&c->ref_set), max_step(&c->twin_set));
  if (v.differ == 0) return -1;
  return report_nondeterministic(c, &c->ref, &c->ref_set, &c->twin, &c->twin_set, &v, &labels);
}

static int check_resume(check *c) {
  const sides pre = {"the uninterrupted run", "the stopped run (not restarted yet)"};
  int64_t last, stop, stopped_at;
  const ckpt_file *again;
  verdict v;
  char what[160];
  int rc;

  if ((rc = run_init(&c->ref, c->work, "reference", "reference")) != 0 ||
      (rc = make_run(c, &c->ref, -1, "run 1: the uninterrupted reference, to its end", &c->ref_set)) != 0)
    return rc;
  if (c->ref_set.n == 0) {
    fprintf(stderr,
            TOOL
            ": check-resume: the reference run wrote no checkpoint into %s (given to it as {dir}): does the "
            "program write its checkpoints into that directory?\n",
            c->ref.dir);
    print_log_tail(&c->ref);
    return CR_TROUBLE;
  }
  last = max_step(&c->ref_set);
  if (c->o.twice && (rc = run_twice(c)) != -1) return rc;
  stop = c->o.stop_at >= 0 ? c->o.stop_at : choose_stop(&c->ref_set);
  if (stop >= last)
    return trouble("--stop-at %" PRId64 ": the uninterrupted run ends at step %" PRId64
                   ", so there is nothing to resume after it: stop before that",
                   stop, last);

  if ((rc = run_init(&c->stopped, c->work, "stopped", "resumed")) != 0) return rc;
  snprintf(what, sizeof what, "run %d: stopped at step %" PRId64, c->o.twice ? 3 : 2, stop);
  if ((rc = make_run(c, &c->stopped, stop, what, &c->stopped_set)) != 0) return rc;
  stopped_at = max_step(&c->stopped_set);
  if (stopped_at < stop || stopped_at >= last) {
    fprintf(stderr,
            TOOL ": check-resume: the stopped run did not stop at step %" PRId64
                 ": its newest checkpoint is at "
                 "step %" PRId64 "%s. The stop is asked of hooked's checkpoint saver hooks through " CHECK_RESUME_VAR
                 "; does the program save through them (the host loop, MonitoredTrainingSession, a "
                 "CheckpointSaverHook) into {dir}, and end its loop when the session says it should stop?\n",
            stop, stopped_at, stopped_at < 0 ? " (none)" : "");
    print_log_tail(&c->stopped);
    return CR_TROUBLE;
  }

  if ((rc = run_init(&c->resumed, c->work, "resumed", "resumed")) != 0) return rc;
  snprintf(what, sizeof what, "run %d: resumed from step %" PRId64 " to its end", c->o.twice ? 4 : 3, stopped_at);
  if ((rc = make_run(c, &c->resumed, -1, what, &c->final_set)) != 0) return rc;
  if ((again = rewritten(&c->stopped_set, &c->final_set)) != NULL) {
    fprintf(stderr,
            TOOL ": check-resume: the resumed run wrote checkpoint %s (step %" PRId64
                 ") again, which the stopped "
                 "run had written: it did not resume from step %" PRId64
                 " but started over. Does the program "
                 "restore from the directory given as {dir} when it starts?\n",
            again->prefix, again->step, stopped_at);
    print_log_tail(&c->resumed);
    return CR_TROUBLE;
  }
  if (max_step(&c->final_set) <= stopped_at)
    return trouble("the resumed run wrote no checkpoint after step %" PRId64 " (its newest is at step %" PRId64 ")",
                   stopped_at, max_step(&c->final_set));

  if ((rc = judge_runs(c->env, &c->ref_set, &c->final_set, INT64_MIN, INT64_MAX, &v)) != 0) return rc;
  if (v.shared == 0)
    return trouble("the uninterrupted and the resumed run share no checkpoint (newest steps %" PRId64 " and %" PRId64
                   "): with --program-retention, keep more of them",
                   last, max_step(&c->final_set));
  if (v.differ > 0 && v.first_step <= stopped_at)
    return report_nondeterministic(c, &c->ref, &c->ref_set, &c->resumed, &c->final_set, &v, &pre);
  if (v.differ > 0) return report_resume(c, stopped_at, &v);
  if (c->unstable.n > 0) {
    printf(TOOL
           " check-resume: every shared checkpoint is byte-identical, but a registered state is not "
           "reproducible (uninitialized padding)\n");
    print_command(&c->o);
    print_unstable(&c->unstable);
    printf("  kept for a closer look: %s (the runs' directories, logs and reports/)\n", c->work);
    return CR_DIFFERENT;
  }
  printf(TOOL " check-resume: exact: stopped at step %" PRId64 " and resumed to step %" PRId64
              "; %zu shared "
              "checkpoint%s (steps %" PRId64 " to %" PRId64
              ", %zu tensors) byte-identical to the uninterrupted "
              "run's%s",
         stopped_at, max_step(&c->final_set), v.shared, v.shared == 1 ? "" : "s", v.lo, v.hi, v.tensors,
         c->o.twice ? ", as were two uninterrupted runs" : "");
  /* A stop condition counted from the resume (num_steps) ends elsewhere. */
  if (max_step(&c->final_set) != last) printf(" (which ended at step %" PRId64 ")", last);
  printf("\n");
  return CR_SAME;
}

int cmd_check_resume(const hk_env *env, int argc, char **argv) {
  check c;
  int rc;

  memset(&c, 0, sizeof c);
  c.env = env;
  if ((rc = parse_options(argc, argv, &c.o)) != -1) return rc;
  if ((c.work = make_work_dir(c.o.work_dir, &c.work_made)) == NULL) return CR_TROUBLE;
  if (strchr(c.work, ',') != NULL) {
    fprintf(stderr,
            TOOL ": check-resume: the work directory %s has a ',' in its path, which " CHECK_RESUME_VAR
                 " cannot carry: choose another with --work-dir or TMPDIR\n",
            c.work);
    rc = CR_TROUBLE;
  } else {
    runs_handle_signals();
    rc = check_resume(&c);
  }
  fflush(stdout);
  if (rc == CR_SAME && !c.o.keep_work_dir) {
    remove_tree(c.work, !c.work_made);
  } else if (rc != CR_DIFFERENT || c.o.keep_work_dir) {
    fprintf(stderr, TOOL ": check-resume: the runs' directories and logs are kept in %s\n", c.work);
  }
  run_free(&c.ref);
  run_free(&c.twin);
  run_free(&c.stopped);
  run_free(&c.resumed);
  free_checkpoints(&c.ref_set);
  free_checkpoints(&c.twin_set);
  free_checkpoints(&c.stopped_set);
  free_checkpoints(&c.final_set);
  free_unstable(&c.unstable);
  free(c.work);
  return rc;
}
