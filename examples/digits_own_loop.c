/*
 * digits_own_loop — the digits MLP of train_digits.c written the way most
 * trainers are written: the program owns its parameter arrays, its math
 * (forward, backward and the SGD update in plain C on float arrays), its
 * random number generator, its data iterator and its training loop. hooked
 * comes in through the host loop (hooked/loop.h), which borrows that memory
 * in place: restore at start, periodic and final checkpoints, --steps as the
 * last global step, a clean stop on SIGINT/SIGTERM, and TensorBoard event
 * files: global_step/sec every 100 steps into --summary-dir, by default the
 * checkpoint directory (as MonitoredTrainingSession does), with the loss
 * and the test accuracy when --summary-dir is given.
 *
 * THE HOOKED CHANGE is the #include and 22 lines of train(), marked
 * HOOKED (alone or inside a HOOKED block). 17 are the loop: 10 call it
 * (hk_loop_new; hk_loop_add_array for w1, b1, w2, b2 in one two-line loop
 * and for the loss; hk_loop_add_state for the data iterator; hk_loop_start;
 * the step bracketing, 2 lines; hk_loop_finish; hk_loop_free), 6 declare the
 * loop, its status and its options (copied from the flags), 1 prints its
 * error. 5 are --summary-dir, for TensorBoard: 1 points the loop's own
 * StepCounterHook (global_step/sec every 100 steps, by default into the
 * checkpoint directory) at it, and one 4-line statement records the loss
 * and the test accuracy every 100 steps with hk_loop_summary_scalar(). Add
 * the two callbacks iter_save and iter_restore (9 lines) that hand the data
 * iterator's own tell and seek to hk_loop_add_state(). Take all that out,
 * loop `while (step < o->steps)`, and what is left is the plain C trainer it
 * started as.
 *
 * The recipe is train_digits.c's, so the two compare:
 *   - split: SplitMix64 seeded 42 drives a Fisher-Yates shuffle of the row
 *     indices; the first 80% (1437 of 1797) train, the rest (360) test;
 *     inputs are divided by 16;
 *   - batches of --batch rows from a per-epoch shuffle of the training rows
 *     (the shuffle of epoch e is seeded from --seed and e), the partial last
 *     batch dropped;
 *   - weights and biases ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)), drawn here
 *     from the program's own SplitMix64 seeded --seed (w1, b1, w2, b2 in
 *     order), not by the executor's initializers: same distribution,
 *     other numbers than train_digits'; plain SGD with learning rate --lr.
 *
 * The data iterator is the program's opaque state: its position (epoch and
 * next row) moves with every step and is nowhere else. It is checkpointed
 * through hk_loop_add_state(), and restoring it rebuilds the epoch's
 * shuffle, so a resumed run — even one resumed after a SIGKILL — feeds the
 * batches an uninterrupted run would have fed and reaches bit-identical
 * parameters. Left unregistered, a resumed run would start over at epoch 0
 * and diverge; check_own_loop.sh (kill) compares the final checkpoints of
 * an interrupted and an uninterrupted run byte for byte to catch that.
 *
 * Exit status: 0 success (also after SIGINT/SIGTERM), 1 data or runtime
 * error, 2 usage error.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#if !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif

#include <hooked/hooked.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#define PROG "digits_own_loop"
#define NPIX 64
#define NHID 32
#define NCLS 10
#define NFIELDS (NPIX + 1)
#define NPARAMS 4
#define PIXEL_MAX 16
#define SPLIT_SEED 42u
#define MAX_ROWS 1000000u
#define LINE_MAX_BYTES 1024
#define DATA_FILE_NAME "digits.csv.gz"

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

/* ---- SplitMix64: the split, the shuffles and the initialization --------- */

#define SPLITMIX64_GAMMA UINT64_C(0x9E3779B97F4A7C15)

static uint64_t splitmix64_next(uint64_t *state) {
  uint64_t z = (*state += SPLITMIX64_GAMMA);
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

/* A float uniform in [0, 1): the top 24 bits of one output. */
static double uniform01(uint64_t *state) { return (double)(splitmix64_next(state) >> 40) * 0x1p-24; }

/*
 * The reference variant (train_digits.c): idx starts as the identity; for i
 * from n-1 down to 1, j = next() % (i + 1), then swap idx[i] and idx[j]. The
 * modulo bias is part of the recipe.
 */
static void fisher_yates(uint32_t *idx, size_t n, uint64_t seed) {
  uint64_t state = seed;
  for (size_t i = 0; i < n; i++) idx[i] = (uint32_t)i;
  for (size_t i = n; i-- > 1;) {
    size_t j = (size_t)(splitmix64_next(&state) % (uint64_t)(i + 1));
    uint32_t tmp = idx[i];
    idx[i] = idx[j];
    idx[j] = tmp;
  }
}

/* Seed of the training-row shuffle of `epoch` (as train_digits.c). */
static uint64_t epoch_seed(uint64_t seed, int64_t epoch) {
  uint64_t e = (uint64_t)epoch;
  uint64_t s = seed ^ splitmix64_next(&e);
  return splitmix64_next(&s);
}

/* ---- command line ------------------------------------------------------- */

typedef struct options {
  const char *data;
  int64_t steps;
  int64_t batch;
  double lr;
  uint64_t seed;
  int64_t log_every;
  const char *checkpoint_dir; /* NULL: no checkpoints */
  int64_t save_steps;         /* 0 when not given */
  double save_secs;           /* 0 when not given */
  int async;
  int64_t keep;
  const char *summary_dir; /* NULL: global_step/sec into checkpoint_dir only */
} options;

static void usage(FILE *out) {
  fprintf(out,
          "usage: digits_own_loop [--data PATH] [--steps N] [--batch N] [--lr X] [--seed N]\n"
          "                       [--log-every N] [--checkpoint-dir DIR [--save-steps N | --save-secs S]\n"
          "                       [--async] [--keep N]] [--summary-dir DIR] [--help]\n"
          "\n"
          "Train a 64-32-10 MLP on the UCI digits data with the program's own loop and math,\n"
          "checkpointed and stopped by hooked's host loop.\n"
          "\n"
          "  --data PATH      digits CSV, gzip-compressed or plain (default: the bundled\n"
          "                   " DATA_FILE_NAME " of the source tree)\n"
          "  --steps N        last global step: stop when it is reached (default 3000)\n"
          "  --batch N        rows per step (default 32)\n"
          "  --lr X           SGD learning rate, > 0 (default 0.1)\n"
          "  --seed N         seed of the initialization and the per-epoch shuffle (default 42)\n"
          "  --log-every N    log the loss to stderr every N steps, 0 for never (default 500)\n"
          "  --checkpoint-dir DIR\n"
          "                   restore the newest checkpoint of DIR that verifies (if any),\n"
          "                   save during training and at the end; global_step/sec\n"
          "                   goes there every 100 steps unless --summary-dir is given\n"
          "  --save-steps N   save every N global steps (default: every 600 s, as TensorFlow)\n"
          "  --save-secs S    save every S seconds instead\n"
          "  --async          write checkpoints on a background thread\n"
          "  --keep N         checkpoints to keep, 0 for all (default 5)\n"
          "  --summary-dir DIR\n"
          "                   write TensorBoard event files into DIR: loss and test_accuracy\n"
          "                   every 100 steps, and global_step/sec\n"
          "  --help           show this text\n"
          "\n"
          "SIGINT or SIGTERM stops training after the current step; with --checkpoint-dir\n"
          "the final checkpoint is written. The result line is printed either way.\n"
          "\n"
          "Prints one line on stdout: result: step=<N> loss=<x> test_accuracy=<y>\n");
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 1, 2)))
#endif
static int
usage_error(const char *fmt, ...) {
  va_list ap;
  fputs(PROG ": ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputs("\nTry '" PROG " --help'.\n", stderr);
  return EXIT_USAGE;
}

static int parse_i64(const char *flag, const char *text, int64_t min, int64_t max, int64_t *out) {
  char *end;
  long long v;
  errno = 0;
  v = strtoll(text, &end, 10);
  if (end == text || *end != '\0' || errno == ERANGE || v < min || v > max)
    return usage_error("invalid value '%s' for %s: expected an integer in [%" PRId64 ", %" PRId64 "]", text, flag, min,
                       max);
  *out = (int64_t)v;
  return 0;
}

/* A finite double > 0 for `flag`. */
static int parse_positive(const char *flag, const char *text, double *out) {
  char *end;
  double v;
  errno = 0;
  v = strtod(text, &end);
  if (end == text || *end != '\0' || errno == ERANGE || !isfinite(v) || v <= 0.0)
    return usage_error("invalid value '%s' for %s: expected a finite number > 0", text, flag);
  *out = v;
  return 0;
}

/* @return 0 to go on, -1 after --help, or an exit status. */
static int parse_args(int argc, char **argv, options *o) {
  static const char *const with_value[] = {"--data",      "--steps",     "--batch",          "--lr",
                                           "--seed",      "--log-every", "--checkpoint-dir", "--save-steps",
                                           "--save-secs", "--keep",      "--summary-dir"};
  int keep_given = 0;

  o->data = NULL;
  o->steps = 3000;
  o->batch = 32;
  o->lr = 0.1;
  o->seed = 42;
  o->log_every = 500;
  o->checkpoint_dir = NULL;
  o->save_steps = 0;
  o->save_secs = 0.0;
  o->async = 0;
  o->keep = 5;
  o->summary_dir = NULL;

  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    const char *value = NULL;
    char flag[32];
    const char *eq;
    int rc, known = 0;

    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      usage(stdout);
      return -1;
    }
    if (strcmp(arg, "--async") == 0) {
      o->async = 1;
      continue;
    }
    if (strncmp(arg, "--", 2) != 0) return usage_error("unexpected argument '%s'", arg);
    /* Both "--flag value" and "--flag=value". */
    eq = strchr(arg, '=');
    if (eq != NULL) {
      size_t len = (size_t)(eq - arg);
      if (len >= sizeof flag) return usage_error("unknown option '%s'", arg);
      memcpy(flag, arg, len);
      flag[len] = '\0';
      value = eq + 1;
    } else {
      if (strlen(arg) >= sizeof flag) return usage_error("unknown option '%s'", arg);
      strcpy(flag, arg);
    }
    for (size_t k = 0; k < sizeof with_value / sizeof with_value[0]; k++) known |= strcmp(flag, with_value[k]) == 0;
    if (!known) return usage_error("unknown option '%s'", flag);
    if (value == NULL) {
      if (i + 1 >= argc) return usage_error("option '%s' needs a value", flag);
      value = argv[++i];
    }

    if (strcmp(flag, "--data") == 0) {
      if (*value == '\0') return usage_error("option '%s' needs a non-empty path", flag);
      o->data = value;
    } else if (strcmp(flag, "--checkpoint-dir") == 0) {
      if (*value == '\0') return usage_error("option '%s' needs a non-empty path", flag);
      o->checkpoint_dir = value;
    } else if (strcmp(flag, "--summary-dir") == 0) {
      if (*value == '\0') return usage_error("option '%s' needs a non-empty path", flag);
      o->summary_dir = value;
    } else if (strcmp(flag, "--steps") == 0) {
      if ((rc = parse_i64(flag, value, 0, INT64_MAX / 2, &o->steps)) != 0) return rc;
    } else if (strcmp(flag, "--batch") == 0) {
      if ((rc = parse_i64(flag, value, 1, 65536, &o->batch)) != 0) return rc;
    } else if (strcmp(flag, "--log-every") == 0) {
      if ((rc = parse_i64(flag, value, 0, INT64_MAX, &o->log_every)) != 0) return rc;
    } else if (strcmp(flag, "--save-steps") == 0) {
      if ((rc = parse_i64(flag, value, 1, INT64_MAX, &o->save_steps)) != 0) return rc;
    } else if (strcmp(flag, "--keep") == 0) {
      if ((rc = parse_i64(flag, value, 0, INT64_MAX, &o->keep)) != 0) return rc;
      keep_given = 1;
    } else if (strcmp(flag, "--save-secs") == 0) {
      if ((rc = parse_positive(flag, value, &o->save_secs)) != 0) return rc;
    } else if (strcmp(flag, "--lr") == 0) {
      if ((rc = parse_positive(flag, value, &o->lr)) != 0) return rc;
    } else { /* --seed */
      char *end;
      unsigned long long v;
      errno = 0;
      v = strtoull(value, &end, 10);
      if (*value == '-' || *value == '+' || end == value || *end != '\0' || errno == ERANGE)
        return usage_error("invalid value '%s' for --seed: expected an unsigned 64-bit integer", value);
      o->seed = (uint64_t)v;
    }
  }
  if (o->save_steps > 0 && o->save_secs > 0.0) return usage_error("--save-steps and --save-secs cannot be combined");
  if (!o->checkpoint_dir && (o->save_steps > 0 || o->save_secs > 0.0 || o->async || keep_given))
    return usage_error("--save-steps, --save-secs, --async and --keep need --checkpoint-dir");
  return 0;
}

/* ---- locating the bundled data (as train_digits.c) ---------------------- */

/* The bundled file in the source tree this program was built from
 * (examples/CMakeLists.txt says where), when it is there: the examples are
 * not installed, and neither is their data. */
static const char *find_data(void) {
#ifdef HOOKED_EXAMPLE_DATA_SOURCE
  FILE *f = fopen(HOOKED_EXAMPLE_DATA_SOURCE, "rb");
  if (f != NULL) {
    fclose(f);
    return HOOKED_EXAMPLE_DATA_SOURCE;
  }
#endif
  return NULL;
}

/* ---- loading and splitting the data (as train_digits.c) ----------------- */

typedef struct dataset {
  float *x;   /* n * NPIX, already divided by 16 */
  int32_t *y; /* n */
  size_t n;
} dataset;

static void dataset_free(dataset *d) {
  free(d->x);
  free(d->y);
  d->x = NULL;
  d->y = NULL;
  d->n = 0;
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
    if (k < NPIX && v > PIXEL_MAX) {
      snprintf(why, cap, "pixel value %s%ld in field %d is outside 0..%d", v >= 1000 ? ">=" : "", v, k + 1, PIXEL_MAX);
      return why;
    }
    if (k == NPIX && v > NCLS - 1) {
      snprintf(why, cap, "label %s%ld in field %d is outside 0..%d", v >= 1000 ? ">=" : "", v, k + 1, NCLS - 1);
      return why;
    }
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

static int grow(dataset *d, size_t *cap) {
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

/* Read and validate every row. Prints an error naming the file (and line) and
 * returns nonzero on failure. */
static int load_digits(const char *path, dataset *d) {
  char line[LINE_MAX_BYTES];
  char why[160];
  size_t cap = 0;
  size_t lineno = 0;
  int err;
  const char *zmsg;
  gzFile f;

  memset(d, 0, sizeof *d);
  errno = 0;
  f = gzopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, PROG ": cannot open data file '%s': %s\n", path, errno ? strerror(errno) : "out of memory");
    return -1;
  }
  while (gzgets(f, line, (int)sizeof line) != NULL) {
    int vals[NFIELDS];
    size_t len = strlen(line);
    lineno++;
    if (len == sizeof line - 1 && line[len - 1] != '\n' && !gzeof(f)) {
      fprintf(stderr, PROG ": %s:%zu: malformed data: line longer than %d bytes\n", path, lineno, LINE_MAX_BYTES - 2);
      goto fail;
    }
    if (parse_row(line, vals, why, sizeof why) != NULL) {
      fprintf(stderr, PROG ": %s:%zu: malformed data: %s\n", path, lineno, why);
      goto fail;
    }
    if (d->n == cap) {
      if (cap == MAX_ROWS) {
        fprintf(stderr, PROG ": %s: more than %u rows\n", path, MAX_ROWS);
        goto fail;
      }
      if (grow(d, &cap) != 0) {
        fprintf(stderr, PROG ": %s: out of memory\n", path);
        goto fail;
      }
    }
    for (int k = 0; k < NPIX; k++) d->x[d->n * NPIX + (size_t)k] = (float)vals[k] / (float)PIXEL_MAX;
    d->y[d->n] = vals[NPIX];
    d->n++;
  }
  zmsg = gzerror(f, &err);
  if (err != Z_OK && err != Z_STREAM_END) {
    fprintf(stderr, PROG ": %s: read error after line %zu: %s\n", path, lineno,
            err == Z_ERRNO ? strerror(errno) : zmsg);
    goto fail;
  }
  gzclose(f);
  if (d->n == 0) {
    fprintf(stderr, PROG ": %s: malformed data: no rows\n", path);
    dataset_free(d);
    return -1;
  }
  return 0;

fail:
  gzclose(f);
  dataset_free(d);
  return -1;
}

/* Split per the recipe into train (first 80%, rounded down) and test rows. */
static int split(const dataset *all, dataset *train, dataset *test) {
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
    dataset_free(train);
    dataset_free(test);
    return -1;
  }
  fisher_yates(idx, all->n, SPLIT_SEED);
  for (size_t i = 0; i < all->n; i++) {
    dataset *dst = i < train->n ? train : test;
    size_t r = i < train->n ? i : i - train->n;
    memcpy(dst->x + r * NPIX, all->x + (size_t)idx[i] * NPIX, sizeof(float) * NPIX);
    dst->y[r] = all->y[idx[i]];
  }
  free(idx);
  return 0;
}

/* ---- the data iterator: the program's state across steps ---------------- */

/*
 * Hands out the training rows batch by batch in the order of a per-epoch
 * shuffle; a new epoch (and shuffle) starts when fewer than `batch` rows
 * are left, so the partial last batch is dropped. Its position is saved as
 * ITER_STATE_BYTES bytes (epoch and next row, little-endian), and seeking
 * to a saved position rebuilds that epoch's shuffle.
 */
#define ITER_STATE_BYTES 16

typedef struct data_iter {
  const dataset *train;
  int64_t batch;
  uint64_t seed;
  int64_t epoch;  /* the epoch `perm` shuffles */
  int64_t next;   /* index into perm of the next batch's first row */
  uint32_t *perm; /* train->n */
} data_iter;

static void iter_seek_to(data_iter *it, int64_t epoch, int64_t next) {
  it->epoch = epoch;
  it->next = next;
  fisher_yates(it->perm, it->train->n, epoch_seed(it->seed, epoch));
}

/* Copy the next batch into x (batch * NPIX) and y (batch). */
static void iter_next(data_iter *it, float *x, int32_t *y) {
  if (it->next + it->batch > (int64_t)it->train->n) iter_seek_to(it, it->epoch + 1, 0);
  for (int64_t r = 0; r < it->batch; r++) {
    size_t row = it->perm[it->next + r];
    memcpy(x + r * NPIX, it->train->x + row * NPIX, sizeof(float) * NPIX);
    y[r] = it->train->y[row];
  }
  it->next += it->batch;
}

static void put_le64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static void iter_tell(const data_iter *it, unsigned char out[ITER_STATE_BYTES]) {
  put_le64(out, (uint64_t)it->epoch);
  put_le64(out + 8, (uint64_t)it->next);
}

/* @return NULL, or why `in` is not a position in this data. */
static const char *iter_seek(data_iter *it, const unsigned char in[ITER_STATE_BYTES]) {
  int64_t epoch = (int64_t)get_le64(in), next = (int64_t)get_le64(in + 8);
  if (epoch < 0 || next < 0 || next > (int64_t)it->train->n) return "position outside the training data";
  iter_seek_to(it, epoch, next);
  return NULL;
}

/* HOOKED: the iterator's tell and seek as the callbacks of hk_loop_add_state(). */
static hk_code iter_save(void *it, void *dst, size_t size, hk_status *status) {
  (void)size, (void)status;
  iter_tell(it, dst);
  return HK_OK;
}

static hk_code iter_restore(void *it, const void *src, size_t size, hk_status *status) {
  const char *why = iter_seek(it, src);
  (void)size;
  return why ? hk_status_set(status, HK_INVALID_ARGUMENT, "data_iter: %s", why) : HK_OK;
}

/* ---- the model ---------------------------------------------------------- */

typedef struct model {
  float w1[NPIX * NHID], b1[NHID]; /* hpre = x w1 + b1, h = relu(hpre) */
  float w2[NHID * NCLS], b2[NCLS]; /* logits = h w2 + b2 */
} model;

/* One entry per parameter array: what the initialization and the
 * checkpoints go through. */
typedef struct param {
  const char *name;
  int32_t rank;
  int64_t dims[2];
  int64_t fan_in;
  float *data;
} param;

static int64_t param_size(const param *p) { return p->rank == 1 ? p->dims[0] : p->dims[0] * p->dims[1]; }

/* U(-1/sqrt(fan_in), 1/sqrt(fan_in)) from one SplitMix64 stream seeded `seed`. */
static void init_params(const param *params, size_t n, uint64_t seed) {
  uint64_t rng = seed;
  for (size_t i = 0; i < n; i++) {
    double bound = 1.0 / sqrt((double)params[i].fan_in);
    for (int64_t k = 0; k < param_size(&params[i]); k++)
      params[i].data[k] = (float)(-bound + 2.0 * bound * uniform01(&rng));
  }
}

/* Scratch of a step, sized once for the batch: a step allocates nothing. */
typedef struct scratch {
  float *x;    /* batch * NPIX */
  int32_t *y;  /* batch */
  float *hpre; /* batch * NHID, pre-activation */
  float *h;    /* batch * NHID */
  float *dl;   /* batch * NCLS, d loss / d logits */
  float *dh;   /* batch * NHID, d loss / d hpre */
  float gw1[NPIX * NHID], gb1[NHID], gw2[NHID * NCLS], gb2[NCLS];
} scratch;

/* One row through the model. Most pixels are 0, and skipping them halves
 * the first layer's work. */
static void forward_row(const model *m, const float *x, float hpre[NHID], float h[NHID], float logits[NCLS]) {
  memcpy(hpre, m->b1, sizeof(float) * NHID);
  for (int i = 0; i < NPIX; i++) {
    const float xi = x[i];
    const float *wr = m->w1 + i * NHID;
    if (xi == 0.0f) continue;
    for (int j = 0; j < NHID; j++) hpre[j] += xi * wr[j];
  }
  for (int j = 0; j < NHID; j++) h[j] = hpre[j] > 0.0f ? hpre[j] : 0.0f;
  memcpy(logits, m->b2, sizeof(float) * NCLS);
  for (int j = 0; j < NHID; j++) {
    const float hj = h[j];
    const float *wr = m->w2 + j * NCLS;
    for (int k = 0; k < NCLS; k++) logits[k] += hj * wr[k];
  }
}

/* Forward, backward (softmax cross-entropy: d loss / d logits = (p - onehot)
 * / batch) and the SGD update of s->x, s->y, in place.
 * @return the batch's mean loss. */
static float train_step(model *m, scratch *s, int64_t B, float lr) {
  double loss = 0.0;

  for (int64_t n = 0; n < B; n++) {
    float *hp = s->hpre + n * NHID, *hn = s->h + n * NHID, *dl = s->dl + n * NCLS;
    float logits[NCLS], mx, sum = 0.0f;
    int32_t label = s->y[n];

    forward_row(m, s->x + n * NPIX, hp, hn, logits);
    mx = logits[0];
    for (int k = 1; k < NCLS; k++) mx = logits[k] > mx ? logits[k] : mx;
    for (int k = 0; k < NCLS; k++) {
      dl[k] = expf(logits[k] - mx);
      sum += dl[k];
    }
    /* -log softmax(logits)[label], computed stably. */
    loss += (double)(logf(sum) + mx - logits[label]);
    for (int k = 0; k < NCLS; k++) dl[k] = (dl[k] / sum - (k == label ? 1.0f : 0.0f)) / (float)B;
  }

  /* Every gradient is taken before any parameter moves: dh needs the old w2. */
  memset(s->gw2, 0, sizeof s->gw2);
  memset(s->gb2, 0, sizeof s->gb2);
  memset(s->gw1, 0, sizeof s->gw1);
  memset(s->gb1, 0, sizeof s->gb1);
  for (int64_t n = 0; n < B; n++) {
    const float *hn = s->h + n * NHID, *hp = s->hpre + n * NHID, *dl = s->dl + n * NCLS;
    const float *xn = s->x + n * NPIX;
    float *dh = s->dh + n * NHID;
    for (int j = 0; j < NHID; j++) {
      float *g = s->gw2 + j * NCLS;
      const float *wr = m->w2 + j * NCLS;
      float acc = 0.0f;
      for (int k = 0; k < NCLS; k++) {
        g[k] += hn[j] * dl[k];
        acc += dl[k] * wr[k];
      }
      dh[j] = hp[j] > 0.0f ? acc : 0.0f;
    }
    for (int k = 0; k < NCLS; k++) s->gb2[k] += dl[k];
    for (int i = 0; i < NPIX; i++) {
      const float xi = xn[i];
      float *g = s->gw1 + i * NHID;
      if (xi == 0.0f) continue;
      for (int j = 0; j < NHID; j++) g[j] += xi * dh[j];
    }
    for (int j = 0; j < NHID; j++) s->gb1[j] += dh[j];
  }

  for (int i = 0; i < NPIX * NHID; i++) m->w1[i] -= lr * s->gw1[i];
  for (int j = 0; j < NHID; j++) m->b1[j] -= lr * s->gb1[j];
  for (int i = 0; i < NHID * NCLS; i++) m->w2[i] -= lr * s->gw2[i];
  for (int k = 0; k < NCLS; k++) m->b2[k] -= lr * s->gb2[k];
  return (float)(loss / (double)B);
}

/* The fraction of `test` classified right (ties go to the lowest class). */
static float accuracy(const model *m, const dataset *test) {
  int64_t correct = 0;
  for (size_t r = 0; r < test->n; r++) {
    float hpre[NHID], h[NHID], logits[NCLS];
    int best = 0;
    forward_row(m, test->x + r * NPIX, hpre, h, logits);
    for (int k = 1; k < NCLS; k++)
      if (logits[k] > logits[best]) best = k;
    correct += best == test->y[r];
  }
  return (float)((double)correct / (double)test->n);
}

/* ---- training ----------------------------------------------------------- */

static double now_secs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int train(const options *o, const dataset *trn, const dataset *tst) {
  model m;
  param params[NPARAMS] = {{"w1", 2, {NPIX, NHID}, NPIX, m.w1},
                           {"b1", 1, {NHID, 0}, NPIX, m.b1},
                           {"w2", 2, {NHID, NCLS}, NHID, m.w2},
                           {"b2", 1, {NCLS, 0}, NHID, m.b2}};
  scratch *s = calloc(1, sizeof *s);
  data_iter it = {trn, o->batch, o->seed, 0, 0, NULL};
  float loss = NAN; /* of the last step */
  int64_t step = 0, steps_run = 0;
  int status = EXIT_RUNTIME;
  double t0, secs;
  hk_status st = HK_STATUS_INIT; /* HOOKED */
  hk_loop *loop = NULL;          /* HOOKED */

  it.perm = malloc(trn->n * sizeof *it.perm);
  if (s == NULL || it.perm == NULL || !(s->x = malloc((size_t)o->batch * NPIX * sizeof(float))) ||
      !(s->y = malloc((size_t)o->batch * sizeof(int32_t))) ||
      !(s->hpre = malloc((size_t)o->batch * NHID * sizeof(float))) ||
      !(s->h = malloc((size_t)o->batch * NHID * sizeof(float))) ||
      !(s->dl = malloc((size_t)o->batch * NCLS * sizeof(float))) ||
      !(s->dh = malloc((size_t)o->batch * NHID * sizeof(float)))) {
    fputs(PROG ": out of memory\n", stderr);
    goto out;
  }
  init_params(params, NPARAMS, o->seed);
  iter_seek_to(&it, 0, 0);

  /* ==== HOOKED: the loop, its options from the flags, the program's memory registered in place ==== */
  hk_loop_options lo = HK_LOOP_OPTIONS_INIT;
  lo.checkpoint_dir = o->checkpoint_dir, lo.max_to_keep = o->keep, lo.async_checkpoint = o->async;
  lo.last_step = o->steps, lo.save_steps = o->save_steps > 0 ? o->save_steps : HK_UNSET_STEPS;
  lo.save_secs = o->save_secs > 0.0 ? o->save_secs : HK_UNSET_SECS; /* neither given: every 600 s */
  lo.summary_dir = o->summary_dir; /* global_step/sec every 100 steps; NULL: into the checkpoint dir */
  if (hk_loop_new(&loop, &lo, &st) != HK_OK) goto failed;
  for (int i = 0; i < NPARAMS; i++) /* w1, b1, w2, b2 */
    hk_loop_add_array(loop, params[i].name, HK_DTYPE_F32, params[i].rank, params[i].dims, params[i].data, 0, &st);
  hk_loop_add_array(loop, "loss", HK_DTYPE_F32, 0, NULL, &loss, HK_LOOP_NO_CHECKPOINT, &st);
  hk_loop_add_state(loop, "data_iter", ITER_STATE_BYTES, iter_save, iter_restore, &it, HK_LOOP_DEFAULT, &st);
  hk_loop_start(loop, &step, &st); /* restores into m, it (and step), or keeps them */
  /* ==== end HOOKED (errors are sticky: hk_loop_finish() below returns the first) ==== */

  if (step > 0) fprintf(stderr, PROG ": resumed at step %" PRId64 "\n", step);
  t0 = now_secs();
  while (!hk_loop_should_stop(loop) && hk_loop_step_begin(loop, NULL, &st) == HK_OK) { /* HOOKED */
    iter_next(&it, s->x, s->y);
    loss = train_step(&m, s, o->batch, (float)o->lr);
    hk_loop_step_end(loop, &st); /* HOOKED: the global step moves, a checkpoint due is saved */
    step++;
    steps_run++;
    if (o->log_every > 0 && step % o->log_every == 0)
      fprintf(stderr, "step %" PRId64 ": loss = %.4f\n", step, (double)loss);
    if (o->summary_dir && step % 100 == 0 && /* HOOKED: TensorBoard scalars at the loop's global step */
        (hk_loop_summary_scalar(loop, o->summary_dir, "loss", loss, &st) != HK_OK ||
         hk_loop_summary_scalar(loop, o->summary_dir, "test_accuracy", accuracy(&m, tst), &st) != HK_OK))
      goto failed; /* HOOKED */
  }
  secs = now_secs() - t0;
  if (hk_loop_finish(loop, &st) != HK_OK) goto failed; /* HOOKED: the final checkpoint */

  if (step < o->steps) fprintf(stderr, PROG ": stopped by a signal at step %" PRId64 "\n", step);
  fprintf(stderr, "training time: %.3f s for %" PRId64 " steps (%.1f us/step)\n", secs, steps_run,
          steps_run ? secs * 1e6 / (double)steps_run : 0.0);
  printf("result: step=%" PRId64 " loss=%.6f test_accuracy=%.6f\n", step, (double)loss, (double)accuracy(&m, tst));
  status = fflush(stdout) == 0 ? 0 : EXIT_RUNTIME;
  goto out;

failed:
  fprintf(stderr, PROG ": %s: %s\n", hk_code_name(st.code), st.message); /* HOOKED */
out:
  hk_loop_free(loop); /* HOOKED */
  if (s != NULL) {
    free(s->x);
    free(s->y);
    free(s->hpre);
    free(s->h);
    free(s->dl);
    free(s->dh);
  }
  free(s);
  free(it.perm);
  return status;
}

int main(int argc, char **argv) {
  options o;
  dataset all, trn, tst;
  int rc = parse_args(argc, argv, &o);

  if (rc == -1) return 0;
  if (rc != 0) return rc;
  if (o.data == NULL) {
    o.data = find_data();
    if (o.data == NULL) {
      fputs(PROG ": cannot find the bundled " DATA_FILE_NAME " in the source tree it was built from; pass --data PATH\n",
            stderr);
      return EXIT_RUNTIME;
    }
  }
  if (load_digits(o.data, &all) != 0) return EXIT_RUNTIME;
  if (split(&all, &trn, &tst) != 0) {
    fputs(PROG ": out of memory\n", stderr);
    dataset_free(&all);
    return EXIT_RUNTIME;
  }
  dataset_free(&all);
  if ((int64_t)trn.n < o.batch) {
    fprintf(stderr, PROG ": %s: %zu training rows, fewer than --batch %" PRId64 "\n", o.data, trn.n, o.batch);
    dataset_free(&trn);
    dataset_free(&tst);
    return EXIT_RUNTIME;
  }
  fprintf(stderr, PROG ": %s: %zu training rows, %zu test rows\n", o.data, trn.n, tst.n);
  rc = train(&o, &trn, &tst);
  dataset_free(&trn);
  dataset_free(&tst);
  return rc;
}
