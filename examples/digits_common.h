/*
 * digits_common — what train_digits.c and digits_own_loop.c share: the UCI
 * digits data (loading, checking and the fixed train/test split), the
 * shuffles of the recipe, and the command-line flags both programs take.
 *
 * The recipe, so that results compare with a PyTorch reference of the same
 * model:
 *   - split: SplitMix64 seeded 42 drives a Fisher-Yates shuffle of the row
 *     indices; the first 80% (1437 of 1797) train, the rest (360) test;
 *     inputs are divided by 16;
 *   - batches of --batch rows from a per-epoch shuffle of the training rows
 *     (the shuffle of epoch e is seeded from --seed and e), the partial last
 *     batch dropped.
 *
 * Every message goes to stderr and starts with the program's name.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_EXAMPLES_DIGITS_COMMON_H
#define HOOKED_EXAMPLES_DIGITS_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include <hooked/hooked.h>

#define NPIX 64 /* pixels of an image (8 x 8), each 0..16 in the file */
#define NCLS 10 /* classes: the digits 0..9 */

#define DIGITS_EXIT_RUNTIME 1 /* exit status: a data or runtime error */
#define DIGITS_EXIT_USAGE 2   /* exit status: bad flags */

/* ---- the recipe's random numbers ---------------------------------------- */

/* The next output of a SplitMix64 generator whose state is *state. */
uint64_t splitmix64_next(uint64_t *state);

/*
 * idx = a permutation of 0..n-1: the identity, then for i from n-1 down to 1,
 * j = next() % (i + 1) with a SplitMix64 generator whose state starts at
 * `seed`, and swap idx[i] and idx[j]. The exact variant the reference uses;
 * the modulo bias is part of the recipe, not an oversight.
 */
void fisher_yates(uint32_t *idx, size_t n, uint64_t seed);

/* Seed of the training-row shuffle of `epoch`: one SplitMix64 output of the
 * epoch, xored into the run seed, mixed again. Neighbouring epochs and seeds
 * give unrelated permutations. */
uint64_t epoch_seed(uint64_t seed, int64_t epoch);

/* ---- the flags both programs take --------------------------------------- */

/* The learning-rate flags (digits_lr_options() turns them into a
 * LearningRateHook's options). */
#define DIGITS_LR_MAX_BOUNDARIES 16
typedef struct digits_lr_flags {
  int schedule; /* hk_learning_rate_schedule; -1 when --lr-schedule is not given */
  int64_t boundaries[DIGITS_LR_MAX_BOUNDARIES];
  double values[DIGITS_LR_MAX_BOUNDARIES + 1];
  size_t nboundaries, nvalues;
  int64_t decay_steps; /* HK_UNSET_STEPS when not given */
  double decay_rate;   /* 0 when not given */
  int staircase;
  int64_t warmup_steps;  /* HK_UNSET_STEPS when not given */
  double alpha;          /* -1 when not given */
  int64_t patience;      /* -1: no --lr-plateau */
  double factor;         /* --lr-plateau's, 0.1 when not given */
  int64_t plateau_every; /* HK_UNSET_STEPS when not given: 100 */
} digits_lr_flags;

typedef struct digits_flags {
  const char *prog; /* the program's name, which starts every message */
  const char *data; /* NULL: the bundled digits.csv.gz */
  int64_t steps;
  int64_t batch;
  double lr;
  uint64_t seed;
  int64_t log_every;
  const char *checkpoint_dir; /* NULL: no checkpoints */
  int64_t save_steps;         /* HK_UNSET_STEPS when not given */
  double save_secs;           /* HK_UNSET_SECS when not given */
  int async;
  int64_t keep;
  const char *summary_dir; /* NULL when not given */
  digits_lr_flags lr_flags;
  /* --metrics-log PATH [--metrics-format csv|jsonl] [--metrics-every N]:
   * a MetricsLogHook (hooked/metrics_log.h) */
  const char *metrics_log; /* NULL: none */
  int metrics_format;      /* 0 by the suffix, 1 CSV, 2 JSON lines (hk_metrics_log_format) */
  int64_t metrics_every;   /* steps between rows, default 100 */
  /* The moving average and the best weights (hooked/ema.h, restore_best). */
  double ema_decay;       /* --ema DECAY in [0, 1]; -1 when not given */
  const char *ema_export; /* --ema-export PATH (needs --ema); NULL when not given */
  int64_t best_k;         /* --best-k K (needs --checkpoint-dir); 0 when not given */
  int restore_best;       /* --restore-best (needs --best-k) */
  /* How the run reads and when it stops (quiet defaults, issue 15). */
  int verbosity;         /* --quiet: -1 (warnings and the result line), --verbose: 1 (DEBUG), else 0 */
  double time_limit;     /* --time-limit SECS: HK_UNSET_SECS when not given */
  unsigned stop_signals; /* --stop-signals LIST: hk_signal_set bits; 0: SIGINT and SIGTERM */
} digits_flags;

/* The help lines of the flags above, the same in both programs. */
#define DIGITS_AVERAGE_USAGE                                                               \
  "  --ema DECAY      keep an exponential moving average of the weights (TensorFlow's\n"   \
  "                   ExponentialMovingAverage, decay in [0, 1], e.g. 0.99), in every\n"   \
  "                   checkpoint; the result line adds ema_test_accuracy=<z>\n"            \
  "  --ema-export PATH\n"                                                                  \
  "                   at the end, write the averaged weights as a checkpoint of their\n"   \
  "                   own at prefix PATH (PATH.safetensors, under the weights' names;\n"   \
  "                   with --async, not inside --checkpoint-dir)\n"                        \
  "  --best-k K       keep the K best checkpoints by the test metric beside the newest\n"  \
  "                   (needs --checkpoint-dir)\n"                                          \
  "  --restore-best   at the end, put the best checkpoint's weights back into the model\n" \
  "                   before it is evaluated (Keras' restore_best_weights; needs --best-k)\n"

/*
 * A program's own flags, besides the shared ones. `switches` take no value
 * (--progress), `valued` take one ("--flag value" or "--flag=value"); both
 * lists end with NULL. parse() gets each one given, in order, with value
 * NULL for a switch; it returns 0, or an exit status after printing why
 * (digits_usage_error()).
 */
typedef struct digits_extra_flags {
  const char *const *switches;
  const char *const *valued;
  int (*parse)(void *user, const char *flag, const char *value);
  void *user;
} digits_extra_flags;

/* What digits_parse_flags() returns for --help: print the usage, exit 0. */
#define DIGITS_HELP (-1)

/*
 * Parse argv into *f (the defaults first: 3000 steps, batch 32, lr 0.1, seed
 * 42, a log line every 500 steps, keep 5) and the program's own flags
 * through `extra` (may be NULL). Checks that --save-steps and --save-secs
 * are not combined and that they, --async and --keep come with
 * --checkpoint-dir; that --metrics-format and --metrics-every come with
 * --metrics-log, whose suffix (.csv, .jsonl, .json) says the format when
 * --metrics-format does not.
 * @return 0 to go on, DIGITS_HELP, or DIGITS_EXIT_USAGE after printing why.
 */
int digits_parse_flags(digits_flags *f, const char *prog, int argc, char **argv, const digits_extra_flags *extra);

/* --restore-best, after training: print "<prog>: --restore-best: the
 * weights are those of <prefix> (<metric> <value>)", the best checkpoint of
 * f->checkpoint_dir (hk_checkpoint_best()), or why there is none. */
void digits_report_best(const digits_flags *f, const char *metric);

/* Print "<prog>: <message>" and the hint to try --help. @return DIGITS_EXIT_USAGE. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
int digits_usage_error(const char *prog, const char *fmt, ...);

/* *out = `text` as an integer in [min, max]. @return 0 or DIGITS_EXIT_USAGE
 * after naming `flag` and the range. */
int digits_parse_i64(const char *prog, const char *flag, const char *text, int64_t min, int64_t max, int64_t *out);

/* *out = `text`, a path that must not be empty. @return 0 or
 * DIGITS_EXIT_USAGE after naming `flag`. */
int digits_parse_path(const char *prog, const char *flag, const char *text, const char **out);

/* ---- the learning rate -------------------------------------------------- */

/* The --help text of the learning-rate flags, the same in both programs. */
extern const char digits_lr_usage[];

/*
 * The LearningRateHook's options the flags ask for, writing the variable
 * `variable` (borrowed); the caller sets the monitor (with --lr-plateau),
 * the state and the summary directory. The base rate is --lr; a cosine's
 * decay_steps defaults to the --steps left after the warmup.
 * @return 1 when a hook is wanted (a schedule or --lr-plateau was given), 0
 *         when the rate stays --lr.
 */
struct hk_learning_rate_options;
int digits_lr_options(const digits_flags *f, const char *variable, struct hk_learning_rate_options *o);
/* The help text of the shared flags above, for both programs' usage(). */
#define DIGITS_RUN_FLAGS_HELP                                                                    \
  "  --quiet          warnings, errors and the result line only (no progress, no log lines)\n"   \
  "  --verbose        also hooked's DEBUG lines (every checkpoint step, the listeners)\n"        \
  "  --time-limit S   stop cleanly after S seconds of training, with the final checkpoint\n"     \
  "                   (hooked/time_limit.h; the result line says stop=time_limit)\n"             \
  "  --stop-signals LIST\n"                                                                      \
  "                   the signals that stop training cleanly, comma-separated from INT, TERM,\n" \
  "                   HUP, USR1, USR2 (default INT,TERM); HUP: a closed terminal, USR1: the\n"   \
  "                   warning of a batch system (Slurm: #SBATCH --signal=USR1@120)\n"

/* Set env's log level from --quiet / --verbose. */
void digits_env_levels(const digits_flags *f, hk_env *env);

/* The stop signals to install: --stop-signals, else SIGINT and SIGTERM. */
unsigned digits_stop_signals(const digits_flags *f);

/* --time-limit: a TimeLimitHook into *out (NULL without the flag).
 * @return 0, or DIGITS_EXIT_RUNTIME after printing why. */
int digits_time_limit_hook(const digits_flags *f, hk_hook **out);

/* Why training stopped as one word for the result line: "last_step",
 * "signal:SIGINT", "time_limit", "early_stopping", "end_of_input", ... */
const char *digits_stop_word(const hk_stop_info *why, char *buf, size_t cap);

/* ---- the data ----------------------------------------------------------- */

typedef struct digits_data {
  float *x;   /* n * NPIX, already divided by 16 */
  int32_t *y; /* n labels, 0..9 */
  size_t n;
} digits_data;

void digits_data_free(digits_data *d);

/* What digits_load() returns when a signal asked to stop while it read. */
#define DIGITS_STOPPED (-2)

/*
 * Read f->data (else the bundled file) and split it per the recipe into
 * `train` and `test`; print "<prog>: <path>: <n> training rows, <m> test
 * rows". Every row is checked: a fault is reported with the file and line.
 * Fewer training rows than f->batch is an error too.
 * @return 0; DIGITS_STOPPED, with nothing loaded, when hk_signal_fired()
 *         while the data was read (so a SIGINT or SIGTERM during a long load
 *         stops it there); or DIGITS_EXIT_RUNTIME after printing why.
 */
int digits_load(const digits_flags *f, digits_data *train, digits_data *test);

#endif /* HOOKED_EXAMPLES_DIGITS_COMMON_H */
