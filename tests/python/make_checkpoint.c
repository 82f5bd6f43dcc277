/*
 * make_checkpoint — write checkpoints of known values through the public API,
 * for the tests that read them from outside the library (read_checkpoint.py,
 * numpy only) and for the hooked-ckpt tool's tests.
 *
 *   make_checkpoint [--no-state] [--basename NAME] [--keep N] DIR STEP [STEP...]
 *
 * Builds an embedded graph whose variables cover every dtype of the format
 * (checkpoint-format.md "The data file"), scalars, an empty tensor and names
 * whose bytewise order differs from their creation order, then saves one
 * checkpoint per STEP into DIR with hk_saver_save() (keeping all of them, or
 * the N newest with --keep N) and prints each prefix on stdout. Every value is a function of the element
 * index and the step, spelled out next to each variable below;
 * read_checkpoint.py computes the same formulas. Change both together.
 *
 * Exit status: 0, 1 on a library error (message on stderr), 2 on bad usage.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include <hooked/hooked.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_VARS 24
#define WIDE_ROWS 3
#define WIDE_COLS 70

/* Storage of the variables, host-owned (external_data), so the values are
 * written here and saved without any op running. */
typedef struct values {
  uint8_t z_upper[8];
  uint8_t mask[7];
  double bias[4];
  float kernel[12];
  int64_t ids[6];
  int32_t counts[5];
  uint16_t half[6];
  uint16_t bhalf[3];
  float lr;
  int8_t i8[4];
  int16_t i16[3];
  uint16_t u16[2];
  uint32_t u32[2];
  uint64_t u64[2];
  double scaled[3];
  float wide[WIDE_ROWS * WIDE_COLS];
} values;

/* IEEE half-precision bit patterns and the values they stand for (exact):
 * 1, -2, the nearest half to 1/3, the largest finite half, the smallest
 * subnormal, negative zero. */
static const uint16_t half_bits[6] = {0x3C00, 0xC000, 0x3555, 0x7BFF, 0x0001, 0x8000};
/* bfloat16: 1, -3, 3.140625. */
static const uint16_t bhalf_bits[3] = {0x3F80, 0xC040, 0x4049};

/* The step-independent values. */
static void fill_constant(values *v) {
  for (int i = 0; i < 8; i++) v->z_upper[i] = (uint8_t)((i * 37 + 11) & 0xff);
  for (int i = 0; i < 7; i++) v->mask[i] = i % 3 == 0;
  /* Exact binary fractions: an optimizer may evaluate i * 0.1 - 0.15 differently from Python. */
  for (int i = 0; i < 4; i++) v->bias[i] = i * 0.125 - 0.25;
  for (int i = 0; i < 12; i++) v->kernel[i] = (float)((i - 5) * 0.25);
  for (int i = 0; i < 5; i++) v->counts[i] = i * 7919 - 20000;
  memcpy(v->half, half_bits, sizeof half_bits);
  memcpy(v->bhalf, bhalf_bits, sizeof bhalf_bits);
  v->lr = 0.125f;
  v->i8[0] = INT8_MIN, v->i8[1] = -1, v->i8[2] = 0, v->i8[3] = INT8_MAX;
  v->i16[0] = INT16_MIN, v->i16[1] = 12345, v->i16[2] = INT16_MAX;
  v->u16[0] = 0, v->u16[1] = UINT16_MAX;
  v->u32[0] = 0, v->u32[1] = UINT32_MAX;
  v->u64[0] = 0, v->u64[1] = UINT64_MAX;
  for (int i = 0; i < WIDE_ROWS * WIDE_COLS; i++) v->wide[i] = (float)(i * 0.5);
}

/* The values that change with the step, so checkpoints of one directory
 * differ beyond their global_step. */
static void fill_step(values *v, int64_t step) {
  for (int i = 0; i < 6; i++) v->ids[i] = (int64_t)(i - 3) * 4000000000 + step;
  for (int i = 0; i < 3; i++) v->scaled[i] = (double)step * (i + 1) + 0.5;
}

typedef struct var_spec {
  const char *name;
  hk_dtype dtype;
  int32_t rank;
  int64_t dims[3];
  size_t offset; /* into values; SIZE_MAX: graph-owned, zero-initialized */
} var_spec;

/* Deliberately not in bytewise name order: the file must sort them. */
static const var_spec specs[] = {
    {"dense/kernel", HK_DTYPE_F32, 2, {3, 4, 0}, offsetof(values, kernel)},
    {"dense/bias", HK_DTYPE_F64, 1, {4, 0, 0}, offsetof(values, bias)},
    {"Z_upper", HK_DTYPE_U8, 3, {2, 2, 2}, offsetof(values, z_upper)},
    {"mask", HK_DTYPE_BOOL, 1, {7, 0, 0}, offsetof(values, mask)},
    {"embedding/ids", HK_DTYPE_I64, 2, {2, 3, 0}, offsetof(values, ids)},
    {"counts", HK_DTYPE_I32, 1, {5, 0, 0}, offsetof(values, counts)},
    {"half", HK_DTYPE_F16, 1, {6, 0, 0}, offsetof(values, half)},
    {"bhalf", HK_DTYPE_BF16, 1, {3, 0, 0}, offsetof(values, bhalf)},
    {"lr", HK_DTYPE_F32, 0, {0, 0, 0}, offsetof(values, lr)},
    {"ints/i8", HK_DTYPE_I8, 1, {4, 0, 0}, offsetof(values, i8)},
    {"ints/i16", HK_DTYPE_I16, 1, {3, 0, 0}, offsetof(values, i16)},
    {"ints/u16", HK_DTYPE_U16, 1, {2, 0, 0}, offsetof(values, u16)},
    {"ints/u32", HK_DTYPE_U32, 1, {2, 0, 0}, offsetof(values, u32)},
    {"ints/u64", HK_DTYPE_U64, 1, {2, 0, 0}, offsetof(values, u64)},
    {"scaled", HK_DTYPE_F64, 1, {3, 0, 0}, offsetof(values, scaled)},
    {"wide", HK_DTYPE_F32, 2, {WIDE_ROWS, WIDE_COLS, 0}, offsetof(values, wide)},
    {"empty", HK_DTYPE_F32, 2, {0, 3, 0}, SIZE_MAX},
};
#define NSPECS (sizeof specs / sizeof specs[0])

static int fail(const char *what, const hk_status *st) {
  fprintf(stderr, "make_checkpoint: %s: %s: %s\n", what, hk_code_name(st->code), st->message);
  return 1;
}

static int usage(void) {
  fprintf(stderr, "usage: make_checkpoint [--no-state] [--basename NAME] [--keep N] DIR STEP [STEP...]\n");
  return 2;
}

static int parse_step(const char *text, int64_t *out) {
  char *end;
  long long v;
  errno = 0;
  v = strtoll(text, &end, 10);
  if (end == text || *end != '\0' || errno == ERANGE || v < 0) {
    fprintf(stderr, "make_checkpoint: invalid step '%s': expected an integer >= 0\n", text);
    return 2;
  }
  *out = (int64_t)v;
  return 0;
}

/* Variables, the global step and an op initializing the graph-owned ones. */
static int build(hk_graph *g, values *v, hk_handle *init_op) {
  hk_status st = HK_STATUS_INIT;
  hk_handle h, owned[MAX_VARS];
  size_t nowned = 0;
  for (size_t i = 0; i < NSPECS; i++) {
    hk_variable_def def = HK_VARIABLE_DEF_INIT;
    def.name = specs[i].name;
    def.dtype = specs[i].dtype;
    def.rank = specs[i].rank;
    def.dims = specs[i].dims;
    if (specs[i].offset == SIZE_MAX) {
      def.init.kind = HK_INIT_ZEROS;
    } else {
      def.external_data = (char *)v + specs[i].offset;
    }
    if (hk_graph_variable(g, &h, &def, &st) != HK_OK) return fail(specs[i].name, &st);
    if (specs[i].offset == SIZE_MAX) owned[nowned++] = h;
  }
  if (hk_graph_create_global_step(g, &h, &st) != HK_OK) return fail("global_step", &st);
  if (hk_graph_init_op(g, init_op, "init_owned", owned, nowned, &st) != HK_OK) return fail("init_owned", &st);
  if (hk_graph_finalize(g, &st) != HK_OK) return fail("finalizing the graph", &st);
  return 0;
}

static int save_all(hk_graph *g, hk_handle init_op, values *v, const char *dir, const char *basename, unsigned flags,
                    int64_t keep, char **steps, int nsteps) {
  hk_status st = HK_STATUS_INIT;
  hk_executor *ex = hk_graph_executor(g);
  hk_raw_session *rs = NULL;
  hk_saver *saver = NULL;
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  hk_run_args init = {NULL, 0, NULL, 0, &init_op, 1, NULL};
  size_t gs_index;
  char *path = NULL;
  size_t path_len = strlen(dir) + strlen(basename) + 2;
  int rc = 1;

  so.executor = ex;
  so.max_to_keep = keep; /* 0: keep every step given */
  if (hk_raw_session_open(&rs, ex, &st) != HK_OK) return fail("opening a raw session", &st);
  if (hk_raw_session_run(rs, &init, NULL, NULL, &st) != HK_OK) {
    rc = fail("initializing", &st);
    goto out;
  }
  if (hk_executor_global_step(NULL, &gs_index, ex, &st) != HK_OK) {
    rc = fail("global_step", &st);
    goto out;
  }
  if (hk_saver_new(&saver, &so, &st) != HK_OK) {
    rc = fail("creating the saver", &st);
    goto out;
  }
  path = malloc(path_len);
  if (path == NULL) {
    fprintf(stderr, "make_checkpoint: out of memory\n");
    goto out;
  }
  snprintf(path, path_len, "%s/%s", dir, basename);
  for (int i = 0; i < nsteps; i++) {
    int64_t step;
    hk_tensor gs;
    const char *prefix = NULL;
    if (parse_step(steps[i], &step) != 0) {
      rc = 2;
      goto out;
    }
    fill_step(v, step);
    gs = hk_tensor_scalar_i64(&step);
    if (hk_raw_session_assign_variable(rs, gs_index, &gs, &st) != HK_OK) {
      rc = fail("assigning global_step", &st);
      goto out;
    }
    if (hk_saver_save(&prefix, saver, rs, path, step, flags, &st) != HK_OK) {
      rc = fail(path, &st);
      goto out;
    }
    printf("%s\n", prefix);
  }
  rc = 0;
out:
  free(path);
  hk_saver_free(saver);
  hk_raw_session_free(rs);
  return rc;
}

int main(int argc, char **argv) {
  unsigned flags = HK_SAVE_DEFAULT;
  const char *basename = "model.ckpt";
  int64_t keep = 0;
  hk_graph_options gopts = HK_GRAPH_OPTIONS_INIT;
  hk_env env;
  hk_graph *g = NULL;
  hk_status st = HK_STATUS_INIT;
  hk_handle init_op;
  values *v;
  int i = 1, rc;

  for (; i < argc && argv[i][0] == '-'; i++) {
    if (strcmp(argv[i], "--no-state") == 0) {
      flags |= HK_SAVE_NO_STATE;
    } else if (strcmp(argv[i], "--basename") == 0 && i + 1 < argc) {
      basename = argv[++i];
    } else if (strcmp(argv[i], "--keep") == 0 && i + 1 < argc) {
      if (parse_step(argv[++i], &keep) != 0) return usage();
    } else {
      return usage();
    }
  }
  if (argc - i < 2) return usage();

  v = calloc(1, sizeof *v);
  if (v == NULL) {
    fprintf(stderr, "make_checkpoint: out of memory\n");
    return 1;
  }
  fill_constant(v);
  hk_env_init(&env, HK_ENV_VERSION);
  env.log_level = HK_LOG_WARNING;
  gopts.env = &env;
  if (hk_graph_new(&g, &gopts, &st) != HK_OK) {
    free(v);
    return fail("creating the graph", &st);
  }
  rc = build(g, v, &init_op);
  if (rc == 0) rc = save_all(g, init_op, v, argv[i], basename, flags, keep, argv + i + 1, argc - i - 1);
  hk_graph_free(g);
  free(v);
  return rc;
}
