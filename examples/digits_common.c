/*
 * digits_common — the data, the recipe's shuffles and the shared flags of
 * train_digits.c and digits_own_loop.c (see digits_common.h).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "digits_common.h"

#include <hooked/hooked.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define NFIELDS (NPIX + 1) /* a row: the pixels, then the label */
#define PIXEL_MAX 16
#define SPLIT_SEED 42u
#define MAX_ROWS 1000000u
#define LINE_MAX_BYTES 1024
#define DATA_FILE_NAME "digits.csv.gz"

/* ---- the recipe's random numbers ---------------------------------------- */

#define SPLITMIX64_GAMMA UINT64_C(0x9E3779B97F4A7C15)

uint64_t splitmix64_next(uint64_t *state) {
  uint64_t z = (*state += SPLITMIX64_GAMMA);
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

void fisher_yates(uint32_t *idx, size_t n, uint64_t seed) {
  uint64_t state = seed;
  for (size_t i = 0; i < n; i++) idx[i] = (uint32_t)i;
  for (size_t i = n; i-- > 1;) {
    size_t j = (size_t)(splitmix64_next(&state) % (uint64_t)(i + 1));
    uint32_t tmp = idx[i];
    idx[i] = idx[j];
    idx[j] = tmp;
  }
}

uint64_t epoch_seed(uint64_t seed, int64_t epoch) {
  uint64_t e = (uint64_t)epoch;
  uint64_t s = seed ^ splitmix64_next(&e);
  return splitmix64_next(&s);
}

/* ---- the flags ---------------------------------------------------------- */

/* The shared flags that take a value. */
static const char *const shared_valued[] = {
    "--data",       "--steps",        "--batch", "--lr",          "--seed", "--log-every",  "--checkpoint-dir",
    "--save-steps", "--save-secs",    "--keep",  "--summary-dir", "--ema",  "--ema-export", "--best-k",
    "--time-limit", "--stop-signals", NULL};

int digits_usage_error(const char *prog, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "%s: ", prog);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\nTry '%s --help'.\n", prog);
  return DIGITS_EXIT_USAGE;
}

int digits_parse_i64(const char *prog, const char *flag, const char *text, int64_t min, int64_t max, int64_t *out) {
  char *end;
  long long v;
  errno = 0;
  v = strtoll(text, &end, 10);
  if (end == text || *end != '\0' || errno == ERANGE || v < min || v > max)
    return digits_usage_error(prog, "invalid value '%s' for %s: expected an integer in [%" PRId64 ", %" PRId64 "]",
                              text, flag, min, max);
  *out = (int64_t)v;
  return 0;
}

/* A finite double > 0 for `flag`. */
static int parse_positive(const char *prog, const char *flag, const char *text, double *out) {
  char *end;
  double v;
  errno = 0;
  v = strtod(text, &end);
  if (end == text || *end != '\0' || errno == ERANGE || !isfinite(v) || v <= 0.0)
    return digits_usage_error(prog, "invalid value '%s' for %s: expected a finite number > 0", text, flag);
  *out = v;
  return 0;
}

/* A decay in [0, 1] for `flag`. */
static int parse_decay(const char *prog, const char *flag, const char *text, double *out) {
  char *end;
  double v;
  errno = 0;
  v = strtod(text, &end);
  if (end == text || *end != '\0' || errno == ERANGE || !(v >= 0.0 && v <= 1.0))
    return digits_usage_error(prog, "invalid value '%s' for %s: expected a decay in [0, 1]", text, flag);
  *out = v;
  return 0;
}

static int parse_seed(const char *prog, const char *text, uint64_t *out) {
  char *end;
  unsigned long long v;
  errno = 0;
  v = strtoull(text, &end, 10);
  if (*text == '-' || *text == '+' || end == text || *end != '\0' || errno == ERANGE)
    return digits_usage_error(prog, "invalid value '%s' for --seed: expected an unsigned 64-bit integer", text);
  *out = (uint64_t)v;
  return 0;
}

int digits_parse_path(const char *prog, const char *flag, const char *text, const char **out) {
  if (*text == '\0') return digits_usage_error(prog, "option '%s' needs a non-empty path", flag);
  *out = text;
  return 0;
}

static int listed(const char *const *list, const char *s) {
  for (; list != NULL && *list != NULL; list++)
    if (strcmp(*list, s) == 0) return 1;
  return 0;
}

/* The metrics log's flags: a block of their own. */
static const char *const metrics_valued[] = {"--metrics-log", "--metrics-format", "--metrics-every", NULL};

static int parse_metrics(digits_flags *f, const char *flag, const char *value) {
  if (strcmp(flag, "--metrics-log") == 0) return digits_parse_path(f->prog, flag, value, &f->metrics_log);
  if (strcmp(flag, "--metrics-every") == 0)
    return digits_parse_i64(f->prog, flag, value, 1, INT64_MAX, &f->metrics_every);
  if (strcmp(value, "csv") == 0)
    f->metrics_format = HK_METRICS_LOG_CSV;
  else if (strcmp(value, "jsonl") == 0)
    f->metrics_format = HK_METRICS_LOG_JSONL;
  else
    return digits_usage_error(f->prog, "--metrics-format '%s' is neither csv nor jsonl", value);
  return 0;
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n > m && strcmp(s + n - m, suffix) == 0;
}

static int check_metrics(const digits_flags *f, int every_given) {
  if (!f->metrics_log && (f->metrics_format || every_given))
    return digits_usage_error(f->prog, "--metrics-format and --metrics-every need --metrics-log");
  if (f->metrics_log && !f->metrics_format && !ends_with(f->metrics_log, ".csv") &&
      !ends_with(f->metrics_log, ".jsonl") && !ends_with(f->metrics_log, ".json"))
    return digits_usage_error(f->prog, "--metrics-log '%s' ends in neither .csv nor .jsonl: add --metrics-format",
                              f->metrics_log);
  return 0;
}

/* --stop-signals INT,TERM,HUP,USR1,USR2 (any of them, at least one). */
static int parse_signals(const char *prog, const char *text, unsigned *out) {
  static const char *const names[] = {"INT", "TERM", "HUP", "USR1", "USR2"};
  static const unsigned bits[] = {HK_SIGNAL_INT, HK_SIGNAL_TERM, HK_SIGNAL_HUP, HK_SIGNAL_USR1, HK_SIGNAL_USR2};
  unsigned set = 0;
  const char *p = text;
  for (;;) {
    size_t len = strcspn(p, ",");
    int found = 0;
    if (len > 3 && strncmp(p, "SIG", 3) == 0) p += 3, len -= 3;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
      if (strlen(names[i]) == len && strncmp(p, names[i], len) == 0) set |= bits[i], found = 1;
    if (!found)
      return digits_usage_error(prog,
                                "invalid value '%s' for --stop-signals: expected a comma-separated list of INT, "
                                "TERM, HUP, USR1, USR2",
                                text);
    if (p[len] == '\0') break;
    p += len + 1;
  }
  *out = set;
  return 0;
}

/* One shared flag that takes a value. */
static int parse_shared(digits_flags *f, const char *flag, const char *value) {
  const char *prog = f->prog;
  if (listed(metrics_valued, flag)) return parse_metrics(f, flag, value);
  if (strcmp(flag, "--data") == 0) return digits_parse_path(prog, flag, value, &f->data);
  if (strcmp(flag, "--checkpoint-dir") == 0) return digits_parse_path(prog, flag, value, &f->checkpoint_dir);
  if (strcmp(flag, "--summary-dir") == 0) return digits_parse_path(prog, flag, value, &f->summary_dir);
  if (strcmp(flag, "--steps") == 0) return digits_parse_i64(prog, flag, value, 0, INT64_MAX / 2, &f->steps);
  if (strcmp(flag, "--batch") == 0) return digits_parse_i64(prog, flag, value, 1, 65536, &f->batch);
  if (strcmp(flag, "--log-every") == 0) return digits_parse_i64(prog, flag, value, 0, INT64_MAX, &f->log_every);
  if (strcmp(flag, "--save-steps") == 0) return digits_parse_i64(prog, flag, value, 1, INT64_MAX, &f->save_steps);
  if (strcmp(flag, "--keep") == 0) return digits_parse_i64(prog, flag, value, 0, INT64_MAX, &f->keep);
  if (strcmp(flag, "--save-secs") == 0) return parse_positive(prog, flag, value, &f->save_secs);
  if (strcmp(flag, "--lr") == 0) return parse_positive(prog, flag, value, &f->lr);
  if (strcmp(flag, "--ema") == 0) return parse_decay(prog, flag, value, &f->ema_decay);
  if (strcmp(flag, "--ema-export") == 0) return digits_parse_path(prog, flag, value, &f->ema_export);
  if (strcmp(flag, "--best-k") == 0) return digits_parse_i64(prog, flag, value, 1, 1000, &f->best_k);
  if (strcmp(flag, "--time-limit") == 0) return parse_positive(prog, flag, value, &f->time_limit);
  if (strcmp(flag, "--stop-signals") == 0) return parse_signals(prog, value, &f->stop_signals);
  return parse_seed(prog, value, &f->seed);
}

/* ---- the learning-rate flags -------------------------------------------- */

static const char *const lr_valued[] = {
    "--lr-schedule",  "--lr-boundaries", "--lr-values",  "--lr-decay-steps",   "--lr-decay-rate",
    "--warmup-steps", "--lr-alpha",      "--lr-plateau", "--lr-plateau-every", NULL};

const char digits_lr_usage[] =
    "  --lr-schedule constant|piecewise|exponential|cosine\n"
    "                   the learning rate as a function of the global step k, written\n"
    "                   before each step by a LearningRateHook (default constant: --lr):\n"
    "                   piecewise: --lr-values V0,..,Vn, Vi while k <= --lr-boundaries Bi;\n"
    "                   exponential: --lr * --lr-decay-rate^(k / --lr-decay-steps)\n"
    "                   (--lr-staircase floors the exponent); cosine: linear from 0 to --lr\n"
    "                   over --warmup-steps, then a cosine down to --lr-alpha * --lr over\n"
    "                   --lr-decay-steps (default: the steps left)\n"
    "  --lr-boundaries B1,..,Bn  --lr-values V0,..,Vn  --lr-decay-steps N  --lr-decay-rate X\n"
    "  --lr-staircase  --warmup-steps N  --lr-alpha X\n"
    "  --lr-plateau PATIENCE[,FACTOR]\n"
    "                   multiply the rate by FACTOR (default 0.1) when the test loss,\n"
    "                   evaluated every --lr-plateau-every steps (default 100), has not\n"
    "                   improved for PATIENCE evaluations (Keras' ReduceLROnPlateau);\n"
    "                   with --checkpoint-dir its state survives restarts\n"
    "  The rate is the summary learning_rate (every 100 steps, into --summary-dir, else\n"
    "  --checkpoint-dir).\n";

/* A finite double >= 0 (or > 0 with `positive`) for `flag`. */
static int parse_number(const char *prog, const char *flag, const char *text, int positive, double *out) {
  char *end;
  double v;
  errno = 0;
  v = strtod(text, &end);
  if (end == text || *end != '\0' || errno == ERANGE || !isfinite(v) || v < 0.0 || (positive && v == 0.0))
    return digits_usage_error(prog, "invalid value '%s' for %s: expected a finite number %s 0", text, flag,
                              positive ? ">" : ">=");
  *out = v;
  return 0;
}

/* A comma-separated list of at most `cap` integers (ints) or numbers. */
static int parse_list(const char *prog, const char *flag, const char *text, int ints, void *out, size_t cap,
                      size_t *n) {
  char item[64];
  const char *p = text;
  *n = 0;
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    int rc;
    if (*n == cap || len == 0 || len >= sizeof item)
      return digits_usage_error(prog, "invalid value '%s' for %s: expected 1 to %zu comma-separated numbers", text,
                                flag, cap);
    memcpy(item, p, len);
    item[len] = '\0';
    rc = ints ? digits_parse_i64(prog, flag, item, 0, INT64_MAX, (int64_t *)out + *n)
              : parse_number(prog, flag, item, 0, (double *)out + *n);
    if (rc != 0) return rc;
    (*n)++;
    if (!comma) return 0;
    p = comma + 1;
  }
}

static int parse_lr(digits_lr_flags *lr, const char *prog, const char *flag, const char *value) {
  static const char *const names[] = {"constant", "piecewise", "exponential", "cosine"};
  if (strcmp(flag, "--lr-schedule") == 0) {
    for (int i = 0; i < 4; i++)
      if (strcmp(value, names[i]) == 0) {
        lr->schedule = i; /* HK_LEARNING_RATE_CONSTANT .. COSINE, in that order */
        return 0;
      }
    return digits_usage_error(prog, "--lr-schedule '%s' is none of constant, piecewise, exponential, cosine", value);
  }
  if (strcmp(flag, "--lr-boundaries") == 0)
    return parse_list(prog, flag, value, 1, lr->boundaries, DIGITS_LR_MAX_BOUNDARIES, &lr->nboundaries);
  if (strcmp(flag, "--lr-values") == 0)
    return parse_list(prog, flag, value, 0, lr->values, DIGITS_LR_MAX_BOUNDARIES + 1, &lr->nvalues);
  if (strcmp(flag, "--lr-decay-steps") == 0) return digits_parse_i64(prog, flag, value, 1, INT64_MAX, &lr->decay_steps);
  if (strcmp(flag, "--lr-decay-rate") == 0) return parse_number(prog, flag, value, 1, &lr->decay_rate);
  if (strcmp(flag, "--warmup-steps") == 0) return digits_parse_i64(prog, flag, value, 0, INT64_MAX, &lr->warmup_steps);
  if (strcmp(flag, "--lr-alpha") == 0) {
    if (parse_number(prog, flag, value, 0, &lr->alpha) != 0) return DIGITS_EXIT_USAGE;
    return lr->alpha <= 1 ? 0 : digits_usage_error(prog, "invalid value '%s' for --lr-alpha: expected 0..1", value);
  }
  if (strcmp(flag, "--lr-plateau-every") == 0)
    return digits_parse_i64(prog, flag, value, 1, INT64_MAX, &lr->plateau_every);
  /* --lr-plateau PATIENCE[,FACTOR] */
  {
    char patience[32];
    const char *comma = strchr(value, ',');
    size_t len = comma ? (size_t)(comma - value) : strlen(value);
    if (len == 0 || len >= sizeof patience)
      return digits_usage_error(prog, "invalid value '%s' for --lr-plateau: expected PATIENCE[,FACTOR]", value);
    memcpy(patience, value, len);
    patience[len] = '\0';
    if (digits_parse_i64(prog, flag, patience, 0, INT64_MAX, &lr->patience) != 0) return DIGITS_EXIT_USAGE;
    if (comma && (parse_number(prog, flag, comma + 1, 1, &lr->factor) != 0 || lr->factor >= 1))
      return digits_usage_error(prog, "invalid FACTOR '%s' for --lr-plateau: expected a number > 0 and < 1", comma + 1);
    return 0;
  }
}

/* The flags that go together, and only together. */
static int check_lr(const digits_flags *f) {
  const digits_lr_flags *lr = &f->lr_flags;
  const int s = lr->schedule;
  if ((lr->nboundaries || lr->nvalues) && s != HK_LEARNING_RATE_PIECEWISE)
    return digits_usage_error(f->prog, "--lr-boundaries and --lr-values need --lr-schedule piecewise");
  if (s == HK_LEARNING_RATE_PIECEWISE && (lr->nboundaries == 0 || lr->nvalues != lr->nboundaries + 1))
    return digits_usage_error(f->prog, "--lr-schedule piecewise needs --lr-boundaries B1,..,Bn and n + 1 --lr-values");
  if ((lr->decay_rate != 0 || lr->staircase) && s != HK_LEARNING_RATE_EXPONENTIAL)
    return digits_usage_error(f->prog, "--lr-decay-rate and --lr-staircase need --lr-schedule exponential");
  if (s == HK_LEARNING_RATE_EXPONENTIAL && (lr->decay_rate == 0 || lr->decay_steps == HK_UNSET_STEPS))
    return digits_usage_error(f->prog, "--lr-schedule exponential needs --lr-decay-rate and --lr-decay-steps");
  if (lr->decay_steps != HK_UNSET_STEPS && s != HK_LEARNING_RATE_EXPONENTIAL && s != HK_LEARNING_RATE_COSINE)
    return digits_usage_error(f->prog, "--lr-decay-steps needs --lr-schedule exponential or cosine");
  if ((lr->warmup_steps != HK_UNSET_STEPS || lr->alpha >= 0) && s != HK_LEARNING_RATE_COSINE)
    return digits_usage_error(f->prog, "--warmup-steps and --lr-alpha need --lr-schedule cosine");
  if (s == HK_LEARNING_RATE_COSINE && lr->decay_steps == HK_UNSET_STEPS &&
      f->steps <= (lr->warmup_steps == HK_UNSET_STEPS ? 0 : lr->warmup_steps))
    return digits_usage_error(f->prog,
                              "--lr-schedule cosine: no steps left after --warmup-steps (give --lr-decay-steps)");
  if (lr->plateau_every != HK_UNSET_STEPS && lr->patience < 0)
    return digits_usage_error(f->prog, "--lr-plateau-every needs --lr-plateau");
  return 0;
}

int digits_lr_options(const digits_flags *f, const char *variable, struct hk_learning_rate_options *o) {
  const digits_lr_flags *lr = &f->lr_flags;
  hk_learning_rate_options_init(o, HK_LEARNING_RATE_OPTIONS_VERSION);
  o->variable = variable;
  o->schedule = lr->schedule < 0 ? HK_LEARNING_RATE_CONSTANT : (hk_learning_rate_schedule)lr->schedule;
  o->rate = o->schedule == HK_LEARNING_RATE_PIECEWISE ? 0 : f->lr;
  if (o->schedule == HK_LEARNING_RATE_PIECEWISE) {
    o->boundaries = lr->boundaries;
    o->nboundaries = lr->nboundaries;
    o->values = lr->values;
  }
  if (o->schedule == HK_LEARNING_RATE_EXPONENTIAL) {
    o->decay_steps = lr->decay_steps;
    o->decay_rate = lr->decay_rate;
    o->staircase = lr->staircase;
  }
  if (o->schedule == HK_LEARNING_RATE_COSINE) {
    o->warmup_steps = lr->warmup_steps == HK_UNSET_STEPS ? 0 : lr->warmup_steps;
    o->decay_steps = lr->decay_steps != HK_UNSET_STEPS ? lr->decay_steps : f->steps - o->warmup_steps;
    o->alpha = lr->alpha < 0 ? 0 : lr->alpha;
  }
  if (lr->patience >= 0) {
    o->patience = lr->patience;
    o->factor = lr->factor;
    o->every_n_steps = lr->plateau_every == HK_UNSET_STEPS ? 100 : lr->plateau_every;
  }
  return lr->schedule > HK_LEARNING_RATE_CONSTANT || lr->patience >= 0;
}

static void set_defaults(digits_flags *f, const char *prog) {
  memset(f, 0, sizeof *f);
  f->prog = prog;
  f->steps = 3000;
  f->batch = 32;
  f->lr = 0.1;
  f->seed = 42;
  f->log_every = 500;
  f->save_steps = HK_UNSET_STEPS;
  f->save_secs = HK_UNSET_SECS;
  f->keep = 5;
  f->lr_flags.schedule = -1;
  f->lr_flags.decay_steps = HK_UNSET_STEPS;
  f->lr_flags.warmup_steps = HK_UNSET_STEPS;
  f->lr_flags.alpha = -1;
  f->lr_flags.patience = -1;
  f->lr_flags.factor = 0.1;
  f->lr_flags.plateau_every = HK_UNSET_STEPS;
  f->metrics_every = 100;
  f->ema_decay = -1.0;
  f->time_limit = HK_UNSET_SECS;
}

/* Whether the file at prefix `path` would be in directory `dir` (as
 * written: "a/b" and "a/b/" are one, "./a/b" another). */
static int same_dir(const char *path, const char *dir) {
  const char *slash = strrchr(path, '/');
  size_t n = slash ? (size_t)(slash - path) : 1, d = strlen(dir);
  if (!slash) path = ".";
  while (d > 1 && dir[d - 1] == '/') d--;
  return n == d && strncmp(path, dir, n) == 0;
}

/* The checks across flags. Neither --save-steps nor --save-secs: the
 * programs save every 600 s, the default of hooked (and TensorFlow). */
static int check_combinations(const digits_flags *f, int keep_given) {
  const int save_steps = f->save_steps != HK_UNSET_STEPS, save_secs = !hk_secs_is_unset(f->save_secs);
  if (save_steps && save_secs) return digits_usage_error(f->prog, "--save-steps and --save-secs cannot be combined");
  if (!f->checkpoint_dir && (save_steps || save_secs || f->async || keep_given))
    return digits_usage_error(f->prog, "--save-steps, --save-secs, --async and --keep need --checkpoint-dir");
  if (f->best_k && !f->checkpoint_dir) return digits_usage_error(f->prog, "--best-k needs --checkpoint-dir");
  if (f->restore_best && !f->best_k) return digits_usage_error(f->prog, "--restore-best needs --best-k");
  if (f->ema_export && f->ema_decay < 0) return digits_usage_error(f->prog, "--ema-export needs --ema");
  if (f->ema_export && f->async && same_dir(f->ema_export, f->checkpoint_dir))
    return digits_usage_error(f->prog,
                              "--ema-export cannot go into --checkpoint-dir with --async (the background writer "
                              "and the export would each remove the other's file in flight)");
  return 0;
}

/* "--flag=value" into flag and *value; "--flag" into flag alone (*value
 * stays NULL). @return 0, or nonzero when the flag is too long to be one. */
static int split_flag(const char *arg, char *flag, size_t cap, const char **value) {
  const char *eq = strchr(arg, '=');
  size_t len = eq != NULL ? (size_t)(eq - arg) : strlen(arg);
  if (len >= cap) return -1;
  memcpy(flag, arg, len);
  flag[len] = '\0';
  if (eq != NULL) *value = eq + 1;
  return 0;
}

int digits_parse_flags(digits_flags *f, const char *prog, int argc, char **argv, const digits_extra_flags *extra) {
  static const digits_extra_flags none = {NULL, NULL, NULL, NULL};
  int keep_given = 0, metrics_every_given = 0, rc0;
  if (extra == NULL) extra = &none;
  set_defaults(f, prog);
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i], *value = NULL;
    char flag[32];
    int shared, rc;
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) return DIGITS_HELP;
    if (strcmp(arg, "--async") == 0) {
      f->async = 1;
      continue;
    }
    if (strcmp(arg, "--quiet") == 0 || strcmp(arg, "--verbose") == 0) {
      f->verbosity = arg[2] == 'q' ? -1 : 1;
      continue;
    }
    if (strcmp(arg, "--lr-staircase") == 0) {
      f->lr_flags.staircase = 1;
      continue;
    }
    if (strcmp(arg, "--restore-best") == 0) {
      f->restore_best = 1;
      continue;
    }
    if (listed(extra->switches, arg)) {
      if ((rc = extra->parse(extra->user, arg, NULL)) != 0) return rc;
      continue;
    }
    if (strncmp(arg, "--", 2) != 0) return digits_usage_error(prog, "unexpected argument '%s'", arg);
    /* Both "--flag value" and "--flag=value". */
    if (split_flag(arg, flag, sizeof flag, &value) != 0) return digits_usage_error(prog, "unknown option '%s'", arg);
    shared = listed(shared_valued, flag) || listed(lr_valued, flag) || listed(metrics_valued, flag);
    if (!shared && !listed(extra->valued, flag)) return digits_usage_error(prog, "unknown option '%s'", flag);
    if (value == NULL) {
      if (i + 1 >= argc) return digits_usage_error(prog, "option '%s' needs a value", flag);
      value = argv[++i];
    }
    rc = listed(lr_valued, flag) ? parse_lr(&f->lr_flags, prog, flag, value)
         : shared                ? parse_shared(f, flag, value)
                                 : extra->parse(extra->user, flag, value);
    if (rc != 0) return rc;
    keep_given |= strcmp(flag, "--keep") == 0;
    metrics_every_given |= strcmp(flag, "--metrics-every") == 0;
  }
  if ((rc0 = check_metrics(f, metrics_every_given)) != 0) return rc0;
  if (check_combinations(f, keep_given) != 0) return DIGITS_EXIT_USAGE;
  return check_lr(f);
}

void digits_report_best(const digits_flags *f, const char *metric) {
  hk_status st = HK_STATUS_INIT;
  char *prefix = NULL;
  double value = 0.0;
  if (hk_checkpoint_best(&prefix, &value, NULL, f->checkpoint_dir, NULL, &st) == HK_OK)
    fprintf(stderr, "%s: --restore-best: the weights are those of %s (%s %.6f)\n", f->prog, prefix, metric, value);
  else
    fprintf(stderr, "%s: --restore-best: %s\n", f->prog, st.message);
  hk_env_free(NULL, prefix);
}

/* ---- loading the data --------------------------------------------------- */

void digits_data_free(digits_data *d) {
  free(d->x);
  free(d->y);
  d->x = NULL;
  d->y = NULL;
  d->n = 0;
}

/* Where the bundled file is: the source tree the program was built from
 * (CMakeLists.txt says where). */
static const char *bundled_data(const char *prog) {
#ifdef HOOKED_EXAMPLE_DATA_SOURCE
  FILE *f = fopen(HOOKED_EXAMPLE_DATA_SOURCE, "rb");
  if (f != NULL) {
    fclose(f);
    return HOOKED_EXAMPLE_DATA_SOURCE;
  }
  fprintf(stderr,
          "%s: cannot find the bundled " DATA_FILE_NAME " at " HOOKED_EXAMPLE_DATA_SOURCE
          ", in the source tree it was built from; pass --data PATH\n",
          prog);
#else
  fprintf(stderr, "%s: built without the path of the bundled " DATA_FILE_NAME "; pass --data PATH\n", prog);
#endif
  return NULL;
}

/* Why a value of field k (0-based) of a row is out of range, or NULL. */
static const char *check_field(int k, long v, char *why, size_t cap) {
  if (k < NPIX && v > PIXEL_MAX) {
    snprintf(why, cap, "pixel value %s%ld in field %d is outside 0..%d", v >= 1000 ? ">=" : "", v, k + 1, PIXEL_MAX);
    return why;
  }
  if (k == NPIX && v > NCLS - 1) {
    snprintf(why, cap, "label %s%ld in field %d is outside 0..%d", v >= 1000 ? ">=" : "", v, k + 1, NCLS - 1);
    return why;
  }
  return NULL;
}

/* Parse one CSV row into `vals`. @return NULL or a description of the fault. */
static const char *parse_row(const char *line, int vals[NFIELDS], char *why, size_t cap) {
  const char *p = line;
  for (int k = 0; k < NFIELDS; k++) {
    long v = 0;
    int digits = 0;
    while (*p >= '0' && *p <= '9') {
      if (v < 1000) v = v * 10 + (*p - '0');
      p++;
      digits++;
    }
    if (digits == 0) {
      if (*p == '\0' || *p == '\n' || *p == '\r')
        snprintf(why, cap, "expected %d comma-separated fields, found %d", NFIELDS, k);
      else
        snprintf(why, cap, "field %d is not a non-negative integer", k + 1);
      return why;
    }
    if (check_field(k, v, why, cap) != NULL) return why;
    vals[k] = (int)v;
    if (k < NFIELDS - 1) {
      if (*p != ',') {
        if (*p == '\0' || *p == '\n' || *p == '\r')
          snprintf(why, cap, "expected %d comma-separated fields, found %d", NFIELDS, k + 1);
        else
          snprintf(why, cap, "unexpected character '%c' after field %d", *p, k + 1);
        return why;
      }
      p++;
    }
  }
  if (*p == '\r') p++;
  if (*p == '\n') p++;
  if (*p != '\0') {
    if (*p == ',')
      snprintf(why, cap, "more than %d fields", NFIELDS);
    else
      snprintf(why, cap, "unexpected character '%c' after field %d", *p, NFIELDS);
    return why;
  }
  return NULL;
}

static int grow(digits_data *d, size_t *cap) {
  size_t ncap = *cap ? *cap * 2 : 2048;
  float *x;
  int32_t *y;
  if (ncap > MAX_ROWS) ncap = MAX_ROWS;
  x = realloc(d->x, ncap * NPIX * sizeof *x);
  if (x == NULL) return -1;
  d->x = x;
  y = realloc(d->y, ncap * sizeof *y);
  if (y == NULL) return -1;
  d->y = y;
  *cap = ncap;
  return 0;
}

/* Append one line of the file (line number `lineno`) to d. @return 0, or
 * -1 after printing why. */
static int add_row(const char *prog, const char *path, size_t lineno, const char *line, digits_data *d, size_t *cap) {
  int vals[NFIELDS];
  char why[160];
  if (parse_row(line, vals, why, sizeof why) != NULL) {
    fprintf(stderr, "%s: %s:%zu: malformed data: %s\n", prog, path, lineno, why);
    return -1;
  }
  if (d->n == *cap) {
    if (*cap == MAX_ROWS) {
      fprintf(stderr, "%s: %s: more than %u rows\n", prog, path, MAX_ROWS);
      return -1;
    }
    if (grow(d, cap) != 0) {
      fprintf(stderr, "%s: %s: out of memory\n", prog, path);
      return -1;
    }
  }
  for (int k = 0; k < NPIX; k++) d->x[d->n * NPIX + (size_t)k] = (float)vals[k] / (float)PIXEL_MAX;
  d->y[d->n] = vals[NPIX];
  d->n++;
  return 0;
}

/* Read the rows of an open file into d. @return 0, DIGITS_STOPPED, or -1
 * after printing why (d is then partly filled). */
static int read_rows(const char *prog, const char *path, gzFile f, digits_data *d) {
  char line[LINE_MAX_BYTES];
  size_t cap = 0, lineno = 0;
  int err;
  const char *zmsg;
  while (gzgets(f, line, (int)sizeof line) != NULL) {
    size_t len = strlen(line);
    lineno++;
    if (hk_signal_fired()) return DIGITS_STOPPED;
    if (len == sizeof line - 1 && line[len - 1] != '\n' && !gzeof(f)) {
      fprintf(stderr, "%s: %s:%zu: malformed data: line longer than %d bytes\n", prog, path, lineno,
              LINE_MAX_BYTES - 2);
      return -1;
    }
    if (add_row(prog, path, lineno, line, d, &cap) != 0) return -1;
  }
  zmsg = gzerror(f, &err);
  if (err != Z_OK && err != Z_STREAM_END) {
    fprintf(stderr, "%s: %s: read error after line %zu: %s\n", prog, path, lineno,
            err == Z_ERRNO ? strerror(errno) : zmsg);
    return -1;
  }
  if (d->n == 0) {
    fprintf(stderr, "%s: %s: malformed data: no rows\n", prog, path);
    return -1;
  }
  return 0;
}

/* Read and check every row of `path` (gzip-compressed or plain) into d.
 * @return 0, DIGITS_STOPPED, or -1 after printing why; d is empty unless 0. */
static int read_file(const char *prog, const char *path, digits_data *d) {
  gzFile f;
  int rc;
  memset(d, 0, sizeof *d);
  errno = 0;
  f = gzopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "%s: cannot open data file '%s': %s\n", prog, path, errno ? strerror(errno) : "out of memory");
    return -1;
  }
  rc = read_rows(prog, path, f, d);
  gzclose(f);
  if (rc != 0) digits_data_free(d);
  return rc;
}

/* Split per the recipe into train (first 80%, rounded down) and test rows.
 * @return 0, or -1 when out of memory. */
static int split(const digits_data *all, digits_data *train, digits_data *test) {
  uint32_t *idx = malloc(all->n * sizeof *idx);
  size_t ntest = (all->n + 4) / 5;
  memset(train, 0, sizeof *train);
  memset(test, 0, sizeof *test);
  if (idx == NULL) return -1;
  train->n = all->n - ntest;
  test->n = ntest;
  train->x = malloc((train->n ? train->n : 1) * NPIX * sizeof(float));
  train->y = malloc((train->n ? train->n : 1) * sizeof(int32_t));
  test->x = malloc(test->n * NPIX * sizeof(float));
  test->y = malloc(test->n * sizeof(int32_t));
  if (train->x == NULL || train->y == NULL || test->x == NULL || test->y == NULL) {
    free(idx);
    digits_data_free(train);
    digits_data_free(test);
    return -1;
  }
  fisher_yates(idx, all->n, SPLIT_SEED);
  for (size_t i = 0; i < all->n; i++) {
    digits_data *dst = i < train->n ? train : test;
    size_t r = i < train->n ? i : i - train->n;
    memcpy(dst->x + r * NPIX, all->x + (size_t)idx[i] * NPIX, sizeof(float) * NPIX);
    dst->y[r] = all->y[idx[i]];
  }
  free(idx);
  return 0;
}

int digits_load(const digits_flags *f, digits_data *train, digits_data *test) {
  const char *path = f->data != NULL ? f->data : bundled_data(f->prog);
  digits_data all;
  int rc;
  memset(train, 0, sizeof *train);
  memset(test, 0, sizeof *test);
  if (path == NULL) return DIGITS_EXIT_RUNTIME;
  rc = read_file(f->prog, path, &all);
  if (rc == 0 && hk_signal_fired()) {
    digits_data_free(&all);
    rc = DIGITS_STOPPED;
  }
  if (rc != 0) return rc == DIGITS_STOPPED ? DIGITS_STOPPED : DIGITS_EXIT_RUNTIME;
  rc = split(&all, train, test);
  digits_data_free(&all);
  if (rc != 0) {
    fprintf(stderr, "%s: out of memory\n", f->prog);
    return DIGITS_EXIT_RUNTIME;
  }
  if ((int64_t)train->n < f->batch) {
    fprintf(stderr, "%s: %s: %zu training rows, fewer than --batch %" PRId64 "\n", f->prog, path, train->n, f->batch);
    digits_data_free(train);
    digits_data_free(test);
    return DIGITS_EXIT_RUNTIME;
  }
  if (f->verbosity >= 0)
    fprintf(stderr, "%s: %s: %zu training rows, %zu test rows\n", f->prog, path, train->n, test->n);
  return 0;
}

/* ---- how a run reads and stops -------------------------------------------- */

void digits_env_levels(const digits_flags *f, hk_env *env) {
  env->log_level = f->verbosity < 0 ? HK_LOG_WARNING : f->verbosity > 0 ? HK_LOG_DEBUG : HK_LOG_INFO;
}

unsigned digits_stop_signals(const digits_flags *f) {
  return f->stop_signals ? f->stop_signals : HK_SIGNAL_DEFAULT_SET;
}

int digits_time_limit_hook(const digits_flags *f, hk_hook **out) {
  hk_time_limit_options to = HK_TIME_LIMIT_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  *out = NULL;
  if (hk_secs_is_unset(f->time_limit)) return 0;
  to.duration_secs = f->time_limit;
  if (hk_time_limit_hook_new(out, &to, &st) == HK_OK) return 0;
  fprintf(stderr, "%s: --time-limit: %s\n", f->prog, st.message);
  return DIGITS_EXIT_RUNTIME;
}

const char *digits_stop_word(const hk_stop_info *why, char *buf, size_t cap) {
  size_t n;
  if (why->reason == HK_STOP_SIGNAL)
    snprintf(buf, cap, "signal:%s", why->detail);
  else
    snprintf(buf, cap, "%s", hk_stop_reason_name(why->reason));
  for (n = 0; buf[n] != '\0'; n++)
    if (buf[n] == ' ' || buf[n] == '-') buf[n] = '_';
  return buf;
}
