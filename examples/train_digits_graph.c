/*
 * train_digits_graph — the model of train_digits.c as a hooked graph (see
 * train_digits_graph.h).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "train_digits_graph.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

/* ---- the model's kernels ------------------------------------------------ */

/* The layer parameters w1, b1, w2, b2 the train op mutates, into p. */
static hk_code check_params(hk_kernel_context *ctx, float *p[4], hk_status *status) {
  static const int64_t sizes[4] = {NPIX * NHID, NHID, NHID * NCLS, NCLS};
  for (size_t i = 0; i < 4; i++) {
    hk_tensor *v = hk_kernel_context_variable(ctx, i);
    if (v == NULL || v->dtype != HK_DTYPE_F32 || hk_tensor_num_elements(v) != sizes[i])
      return hk_status_set(status, HK_INTERNAL,
                           "train: mutated variable %zu is not the f32 layer "
                           "parameter it should be",
                           i);
    p[i] = v->data;
  }
  return HK_OK;
}

/* One row through the model: hpre = x w1 + b1, h = relu(hpre), logits =
 * h w2 + b2. Shared by training and evaluation so both see the same model.
 * Most pixels are 0, and skipping them halves the first layer's work. */
static void forward_row(const float *x, const float *w1, const float *b1, const float *w2, const float *b2,
                        float hpre[NHID], float h[NHID], float logits[NCLS]) {
  memcpy(hpre, b1, sizeof(float) * NHID);
  for (int i = 0; i < NPIX; i++) {
    const float xi = x[i];
    const float *wr = w1 + i * NHID;
    if (xi == 0.0f) continue;
    for (int j = 0; j < NHID; j++) hpre[j] += xi * wr[j];
  }
  for (int j = 0; j < NHID; j++) h[j] = hpre[j] > 0.0f ? hpre[j] : 0.0f;
  memcpy(logits, b2, sizeof(float) * NCLS);
  for (int j = 0; j < NHID; j++) {
    const float hj = h[j];
    const float *wr = w2 + j * NCLS;
    for (int k = 0; k < NCLS; k++) logits[k] += hj * wr[k];
  }
}

/* 1 iff no element of v[0..n) is NaN or infinite. Tests the exponent bits,
 * so the loop has no branch and no floating-point compare. */
static int all_finite(const float *v, size_t n) {
  uint32_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t bits;
    memcpy(&bits, &v[i], sizeof bits);
    bad |= (uint32_t)((bits & 0x7f800000u) == 0x7f800000u);
  }
  return bad == 0;
}

/* The batch forward, row by row, into t->hpre and t->h, and the softmax
 * cross-entropy: t->dl = d loss / d logits = (p - onehot) / batch, and the
 * summed loss added to *loss. */
static hk_code forward_batch(trainer *t, const float *x, const int32_t *y, float *const p[4], double *loss,
                             hk_status *status) {
  const int64_t B = t->batch;
  for (int64_t n = 0; n < B; n++) {
    float *hp = t->hpre + n * NHID, *hn = t->h + n * NHID, *dl = t->dl + n * NCLS;
    float logits[NCLS], mx, sum = 0.0f;
    int32_t label = y[n];

    if (label < 0 || label >= NCLS)
      return hk_status_set(status, HK_INVALID_ARGUMENT,
                           "train: label %" PRId32 " of row %" PRId64 " in y is outside 0..%d", label, n, NCLS - 1);
    forward_row(x + n * NPIX, p[0], p[1], p[2], p[3], hp, hn, logits);
    mx = logits[0];
    for (int k = 1; k < NCLS; k++) mx = logits[k] > mx ? logits[k] : mx;
    for (int k = 0; k < NCLS; k++) {
      dl[k] = expf(logits[k] - mx);
      sum += dl[k];
    }
    /* -log softmax(logits)[label], computed stably. */
    *loss += (double)(logf(sum) + mx - logits[label]);
    for (int k = 0; k < NCLS; k++) dl[k] = (dl[k] / sum - (k == label ? 1.0f : 0.0f)) / (float)B;
  }
  return HK_OK;
}

/* The gradients of the batch into t->grad. Every one is taken before any
 * parameter moves: dh needs the old w2. */
static void backward_batch(trainer *t, const float *x, const float *w2) {
  memset(t->grad, 0, sizeof t->grad);
  for (int64_t n = 0; n < t->batch; n++) {
    const float *hn = t->h + n * NHID, *hp = t->hpre + n * NHID, *dl = t->dl + n * NCLS;
    const float *xn = x + n * NPIX;
    float *dh = t->dh + n * NHID;
    for (int j = 0; j < NHID; j++) {
      float *g = t->gw2 + j * NCLS;
      const float *wr = w2 + j * NCLS;
      float acc = 0.0f;
      for (int k = 0; k < NCLS; k++) {
        g[k] += hn[j] * dl[k];
        acc += dl[k] * wr[k];
      }
      dh[j] = hp[j] > 0.0f ? acc : 0.0f;
    }
    for (int k = 0; k < NCLS; k++) t->gb2[k] += dl[k];
    for (int i = 0; i < NPIX; i++) {
      const float xi = xn[i];
      float *g = t->gw1 + i * NHID;
      if (xi == 0.0f) continue;
      for (int j = 0; j < NHID; j++) g[j] += xi * dh[j];
    }
    for (int j = 0; j < NHID; j++) t->gb1[j] += dh[j];
  }
}

#ifdef HK_EXAMPLE_MPI
/* Synchronous data parallel: every rank applies the mean of the ranks'
 * gradients (hk_mpi_average sums in an order fixed by the rank count: the
 * same bits on every rank,
 * and on every run with this many ranks), and reports the mean loss of the
 * global batch in *loss (the batch's summed loss). */
static hk_code average_across_ranks(trainer *t, double *loss, hk_status *status) {
  hk_code rc;
  /* A rank with more rows than another weighs more (share: 1 on an even
   * split, where this changes no bit). */
  if (t->share != 1.0)
    for (int i = 0; i < NGRAD; i++) t->grad[i] *= (float)t->share;
  t->grad[NGRAD] = (float)(*loss / (double)t->batch * t->share);
  if ((rc = hk_mpi_average(t->mpi, HK_DTYPE_F32, t->grad, NGRAD + 1, status)) != HK_OK) return rc;
  *loss = (double)t->grad[NGRAD] * (double)t->batch;
  return HK_OK;
}
#endif

static void sgd_update(const trainer *t, float lr, float *const p[4]) {
  for (int i = 0; i < NPIX * NHID; i++) p[0][i] -= lr * t->gw1[i];
  for (int j = 0; j < NHID; j++) p[1][j] -= lr * t->gb1[j];
  for (int i = 0; i < NHID * NCLS; i++) p[2][i] -= lr * t->gw2[i];
  for (int k = 0; k < NCLS; k++) p[3][k] -= lr * t->gb2[k];
}

/*
 * The train op: forward, backward and the SGD update, in place, at the
 * trainer's rate or, given a third input, at that f32 scalar's (the
 * "learning_rate" variable a LearningRateHook writes). Output 0:
 * the batch's mean loss, computed before the update. Output 1: the same loss
 * guarded by the update, NaN when the update left a non-finite weight: the
 * NanTensorHook watches it, because a loss computed before the update
 * reaches the guard one step late (hooked/hooks.h), after the checkpoint
 * saver may have saved those weights.
 */
static hk_code train_kernel(void *user, hk_kernel_context *ctx, const hk_tensor *inputs, size_t ninputs,
                            hk_tensor *outputs, size_t noutputs, hk_status *status) {
  trainer *t = user;
  const int64_t B = t->batch;
  float *p[4];
  double loss = 0.0;
  hk_code rc;

  if ((ninputs != 2 && ninputs != 3) || noutputs != 2 || inputs[0].dtype != HK_DTYPE_F32 ||
      inputs[1].dtype != HK_DTYPE_I32 || hk_tensor_num_elements(&inputs[0]) != B * NPIX ||
      hk_tensor_num_elements(&inputs[1]) != B ||
      (ninputs == 3 && (inputs[2].dtype != HK_DTYPE_F32 || hk_tensor_num_elements(&inputs[2]) != 1)))
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         "train: expected inputs x [%" PRId64 ", %d] f32, y [%" PRId64 "] i32 and an f32 rate", B, NPIX,
                         B);
  if ((rc = check_params(ctx, p, status)) != HK_OK) return rc;
  if ((rc = forward_batch(t, inputs[0].data, inputs[1].data, p, &loss, status)) != HK_OK) return rc;
  backward_batch(t, inputs[0].data, p[2]);
#ifdef HK_EXAMPLE_MPI
  if (t->mpi && (rc = average_across_ranks(t, &loss, status)) != HK_OK) return rc;
#endif
  sgd_update(t, ninputs == 3 ? *(const float *)inputs[2].data : t->lr, p);
  {
    const float mean = (float)(loss / (double)B);
    const int finite = all_finite(p[0], NPIX * NHID) && all_finite(p[1], NHID) && all_finite(p[2], NHID * NCLS) &&
                       all_finite(p[3], NCLS);
    *(float *)outputs[0].data = mean;
    *(float *)outputs[1].data = finite ? mean : NAN;
    if (!finite || !isfinite(mean)) t->diverged = 1;
  }
  return HK_OK;
}

/* Increments the global step. Its control input on "train" orders it after
 * the update and keeps the step uncounted when the update failed; the stock
 * hk_graph_assign_add takes no control inputs. */
static hk_code increment_kernel(void *user, hk_kernel_context *ctx, const hk_tensor *inputs, size_t ninputs,
                                hk_tensor *outputs, size_t noutputs, hk_status *status) {
  hk_tensor *gs = hk_kernel_context_variable(ctx, 0);
  (void)user;
  (void)inputs;
  (void)ninputs;
  (void)outputs;
  (void)noutputs;
  if (gs == NULL || gs->dtype != HK_DTYPE_I64 || gs->data == NULL)
    return hk_status_set(status, HK_INTERNAL,
                         "global_step_increment: global_step is not an "
                         "int64 variable");
  *(int64_t *)gs->data += 1;
  return HK_OK;
}

/* Test-set accuracy of the current parameters: inputs w1, b1, w2, b2, x_test,
 * y_test; output 0 the fraction classified right (ties go to the lowest
 * class), output 1 the mean cross-entropy loss. Works row by row on the
 * stack: no scratch needed. */
static hk_code accuracy_kernel(void *user, hk_kernel_context *ctx, const hk_tensor *inputs, size_t ninputs,
                               hk_tensor *outputs, size_t noutputs, hk_status *status) {
  const float *w1, *b1, *w2, *b2, *x;
  const int32_t *y;
  int64_t n, correct = 0;
  double loss = 0.0;
  (void)user;
  (void)ctx;
  if (ninputs != 6 || noutputs != 2 || hk_tensor_num_elements(&inputs[0]) != NPIX * NHID ||
      hk_tensor_num_elements(&inputs[1]) != NHID || hk_tensor_num_elements(&inputs[2]) != NHID * NCLS ||
      hk_tensor_num_elements(&inputs[3]) != NCLS || inputs[5].rank != 1 ||
      hk_tensor_num_elements(&inputs[4]) != inputs[5].dims[0] * NPIX || inputs[5].dims[0] < 1)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "accuracy: inputs do not match the model");
  w1 = inputs[0].data;
  b1 = inputs[1].data;
  w2 = inputs[2].data;
  b2 = inputs[3].data;
  x = inputs[4].data;
  y = inputs[5].data;
  n = inputs[5].dims[0];
  for (int64_t r = 0; r < n; r++) {
    const float *xr = x + r * NPIX;
    float hpre[NHID], h[NHID], logits[NCLS], sum = 0.0f;
    int best = 0;
    forward_row(xr, w1, b1, w2, b2, hpre, h, logits);
    for (int k = 1; k < NCLS; k++)
      if (logits[k] > logits[best]) best = k;
    correct += best == y[r];
    for (int k = 0; k < NCLS; k++) sum += expf(logits[k] - logits[best]);
    if (y[r] >= 0 && y[r] < NCLS) loss += (double)(logf(sum) + logits[best] - logits[y[r]]);
  }
  *(float *)outputs[0].data = (float)((double)correct / (double)n);
  *(float *)outputs[1].data = (float)(loss / (double)n);
  return HK_OK;
}

float host_accuracy(const float *w1, const float *b1, const float *w2, const float *b2, const digits_data *test) {
  int64_t correct = 0;
  for (size_t r = 0; r < test->n; r++) {
    float hpre[NHID], h[NHID], logits[NCLS];
    int best = 0;
    forward_row(test->x + r * NPIX, w1, b1, w2, b2, hpre, h, logits);
    for (int k = 1; k < NCLS; k++)
      if (logits[k] > logits[best]) best = k;
    correct += best == test->y[r];
  }
  return test->n ? (float)((double)correct / (double)test->n) : 0.0f;
}

double host_loss(const float *w1, const float *b1, const float *w2, const float *b2, const float *x, const int32_t *y,
                 size_t n) {
  double loss = 0.0;
  for (size_t r = 0; r < n; r++) {
    float hpre[NHID], h[NHID], logits[NCLS], sum = 0.0f;
    int best = 0;
    forward_row(x + r * NPIX, w1, b1, w2, b2, hpre, h, logits);
    for (int k = 1; k < NCLS; k++)
      if (logits[k] > logits[best]) best = k;
    for (int k = 0; k < NCLS; k++) sum += expf(logits[k] - logits[best]);
    if (y[r] >= 0 && y[r] < NCLS) loss += (double)(logf(sum) + logits[best] - logits[y[r]]);
  }
  return n ? loss / (double)n : NAN;
}

/* Output 0 = input 0, a scalar f32: gives a tensor a name of its own
 * ("test_loss:0"), which the EarlyStoppingHook's messages show. */
static hk_code copy_kernel(void *user, hk_kernel_context *ctx, const hk_tensor *inputs, size_t ninputs,
                           hk_tensor *outputs, size_t noutputs, hk_status *status) {
  (void)user;
  (void)ctx;
  if (ninputs != 1 || noutputs != 1 || inputs[0].dtype != HK_DTYPE_F32 || hk_tensor_num_elements(&inputs[0]) != 1)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "copy: expected one f32 scalar");
  *(float *)outputs[0].data = *(const float *)inputs[0].data;
  return HK_OK;
}

/* ---- the feeding hook --------------------------------------------------- */

static hk_code feeder_after_create_session(void *user, hk_raw_session *session, hk_coordinator *coord,
                                           hk_creation_context *ctx, hk_status *status) {
  feeder *f = user;
  (void)coord;
  (void)ctx;
  return hk_raw_session_global_step(&f->gs, session, status);
}

static hk_code feeder_before_run(void *user, hk_run_context *ctx, hk_run_request *request, hk_status *status) {
  feeder *f = user;
  int64_t epoch, first;
  (void)ctx;
  if (f->gs < 0) return hk_status_set(status, HK_OUT_OF_RANGE, "digits_feeder: negative global step %" PRId64, f->gs);
  if (f->no_feeds) return HK_OK;
  epoch = f->gs / f->batches_per_epoch;
  first = (f->gs % f->batches_per_epoch) * f->stride + f->offset;
  if (epoch != f->cached_epoch) {
    fisher_yates(f->perm, f->ntrain, epoch_seed(f->seed, epoch));
    f->cached_epoch = epoch;
  }
  for (int64_t r = 0; r < f->batch; r++) {
    size_t row = f->perm[first + r];
    memcpy(f->xbuf + r * NPIX, f->train_x + row * NPIX, sizeof(float) * NPIX);
    f->ybuf[r] = f->train_y[row];
  }
  request->feeds = f->feeds;
  request->nfeeds = 2;
  return HK_OK;
}

static hk_code feeder_after_run(void *user, hk_run_context *ctx, const hk_run_values *values, hk_status *status) {
  feeder *f = user;
  (void)ctx;
  (void)values;
  (void)status;
  f->gs++;
  return HK_OK;
}

static hk_code feeder_end(void *user, hk_raw_session *session, hk_status *status) {
  feeder *f = user;
  hk_run_args args = {NULL, 0, &f->accuracy, 1, NULL, 0, NULL};
  hk_tensor acc;
  hk_code rc;
  if ((rc = hk_raw_session_global_step(&f->final_step, session, status)) != HK_OK) return rc;
  if ((rc = hk_raw_session_run(session, &args, &acc, NULL, status)) != HK_OK) return rc;
  f->test_accuracy = *(const float *)acc.data;
  if (f->no_feeds) {
    /* The parameter server's chief trains on no batch: the loss it knows
     * is the final shared model's, over the whole training set. */
    hk_run_args pargs = {NULL, 0, f->params, 4, NULL, 0, NULL};
    hk_tensor p[4];
    if ((rc = hk_raw_session_run(session, &pargs, p, NULL, status)) != HK_OK) return rc;
    f->final_loss = host_loss(p[0].data, p[1].data, p[2].data, p[3].data, f->train_x, f->train_y, f->ntrain);
  }
  f->have_result = 1;
  return HK_OK;
}

const hk_hook_vtable feeder_vtable = {
    HK_HOOK_VTABLE_VERSION, NULL, feeder_after_create_session, feeder_before_run, feeder_after_run, feeder_end, NULL,
};

/* ---- the graph ---------------------------------------------------------- */

static hk_code add_param(hk_graph *g, hk_handle *out, const char *name, int32_t rank, const int64_t *dims,
                         int64_t fan_in, uint64_t seed, hk_status *st) {
  hk_variable_def def = HK_VARIABLE_DEF_INIT;
  double bound = 1.0 / sqrt((double)fan_in);
  def.name = name;
  def.dtype = HK_DTYPE_F32;
  def.rank = rank;
  def.dims = dims;
  def.init.kind = HK_INIT_UNIFORM;
  def.init.minval = -bound;
  def.init.maxval = bound;
  def.init.seed = seed;
  return hk_graph_variable(g, out, &def, st);
}

/* w1, b1, w2, b2 with four SplitMix64 outputs of --seed as the seeds of
 * their initializers: one independent stream per tensor. */
static hk_code add_params(model *m, uint64_t seed, hk_status *st) {
  static const int64_t d_w1[2] = {NPIX, NHID}, d_b1[1] = {NHID};
  static const int64_t d_w2[2] = {NHID, NCLS}, d_b2[1] = {NCLS};
  uint64_t s = seed;
  hk_code rc;
  if ((rc = add_param(m->g, &m->params[0], "w1", 2, d_w1, NPIX, splitmix64_next(&s), st)) != HK_OK ||
      (rc = add_param(m->g, &m->params[1], "b1", 1, d_b1, NPIX, splitmix64_next(&s), st)) != HK_OK ||
      (rc = add_param(m->g, &m->params[2], "w2", 2, d_w2, NHID, splitmix64_next(&s), st)) != HK_OK ||
      (rc = add_param(m->g, &m->params[3], "b2", 1, d_b2, NHID, splitmix64_next(&s), st)) != HK_OK)
    return rc;
  return HK_OK;
}

/* The EarlyStoppingHook's state, checkpointed with the model so that a
 * restart goes on counting; optional, so that a checkpoint written without
 * --early-stop-patience still restores (the state then starts fresh). */
static hk_code add_early_state(model *m, hk_status *st) {
  static const int64_t d_state[1] = {HK_EARLY_STOPPING_STATE_SIZE};
  hk_variable_def def = HK_VARIABLE_DEF_INIT;
  hk_handle state;
  def.name = EARLY_STATE_NAME;
  def.dtype = HK_DTYPE_F64;
  def.rank = 1;
  def.dims = d_state;
  def.flags = HK_VAR_OPTIONAL;
  def.external_data = m->early_state;
  return hk_graph_variable(m->g, &state, &def, st);
}

/* --lr-*: the rate the train op reads, local (the LearningRateHook writes
 * it before every step, so no checkpoint needs it), and with --lr-plateau
 * the hook's plateau state, checkpointed and optional like the
 * early-stopping state. */
static hk_code add_learning_rate(model *m, const trainer *t, int learning_rate, hk_status *st) {
  static const int64_t d_state[1] = {HK_LEARNING_RATE_STATE_SIZE};
  hk_variable_def def = HK_VARIABLE_DEF_INIT, sdef = HK_VARIABLE_DEF_INIT;
  hk_handle state;
  hk_code rc;
  def.name = LR_NAME;
  def.dtype = HK_DTYPE_F32;
  def.flags = HK_VAR_LOCAL;
  def.init.kind = HK_INIT_CONSTANT;
  def.init.value = t->lr;
  if ((rc = hk_graph_variable(m->g, &m->learning_rate, &def, st)) != HK_OK || !(learning_rate & MODEL_LR_STATE))
    return rc;
  sdef.name = LR_STATE_NAME;
  sdef.dtype = HK_DTYPE_F64;
  sdef.rank = 1;
  sdef.dims = d_state;
  sdef.flags = HK_VAR_OPTIONAL | HK_VAR_NON_FINITE_OK;
  sdef.external_data = m->lr_state;
  return hk_graph_variable(m->g, &state, &sdef, st);
}

/* The placeholders x and y the feeder fills, and the test set as constants. */
static hk_code add_inputs(model *m, feeder *f, int64_t batch, const digits_data *test, hk_status *st) {
  int64_t xdims[2] = {batch, NPIX}, ydims[1] = {batch};
  int64_t txdims[2] = {(int64_t)test->n, NPIX}, tydims[1] = {(int64_t)test->n};
  hk_tensor tx, ty;
  hk_code rc;
  if ((rc = hk_graph_placeholder(m->g, &f->x, "x", HK_DTYPE_F32, 2, xdims, st)) != HK_OK ||
      (rc = hk_graph_placeholder(m->g, &f->y, "y", HK_DTYPE_I32, 1, ydims, st)) != HK_OK ||
      (rc = hk_tensor_init(&tx, HK_DTYPE_F32, 2, txdims, test->x, st)) != HK_OK ||
      (rc = hk_tensor_init(&ty, HK_DTYPE_I32, 1, tydims, test->y, st)) != HK_OK ||
      (rc = hk_graph_constant(m->g, &m->x_test, "x_test", &tx, st)) != HK_OK ||
      (rc = hk_graph_constant(m->g, &m->y_test, "y_test", &ty, st)) != HK_OK)
    return rc;
  return HK_OK;
}

static const hk_output_spec scalar_f32[2] = {{HK_DTYPE_F32, 0, {0}}, {HK_DTYPE_F32, 0, {0}}};

/* "train" (train_kernel on x and y, mutating the parameters), the global
 * step's increment after it, and train_op, the group of the two. */
static hk_code add_train_op(model *m, trainer *t, const feeder *f, hk_status *st) {
  hk_op_def def = HK_OP_DEF_INIT, inc_def = HK_OP_DEF_INIT;
  hk_handle in[3] = {f->x, f->y, m->learning_rate}, ops[2];
  hk_code rc;
  def.name = "train";
  def.kernel = train_kernel;
  def.kernel_user = t;
  def.inputs = in;
  def.ninputs = m->learning_rate != HK_NO_HANDLE ? 3 : 2;
  def.mutates = m->params;
  def.nmutates = 4;
  def.outputs = scalar_f32;
  def.noutputs = 2;
  if ((rc = hk_graph_op(m->g, &ops[0], &def, st)) != HK_OK ||
      (rc = hk_graph_op_output(m->g, &m->loss, ops[0], 0, st)) != HK_OK)
    return rc;
  inc_def.name = "global_step_increment";
  inc_def.kernel = increment_kernel;
  inc_def.control_inputs = &ops[0];
  inc_def.ncontrol_inputs = 1;
  inc_def.mutates = &m->global_step;
  inc_def.nmutates = 1;
  if ((rc = hk_graph_op(m->g, &ops[1], &inc_def, st)) != HK_OK) return rc;
  return hk_graph_group(m->g, &m->train_op, "train_op", ops, 2, st);
}

/* "accuracy" on the test set (outputs: the accuracy, which the feeder
 * fetches at the end, and the loss) and "test_loss", a copy of its loss
 * under a name of its own. */
static hk_code add_eval_ops(model *m, feeder *f, hk_status *st) {
  hk_op_def def = HK_OP_DEF_INIT, copy_def = HK_OP_DEF_INIT;
  hk_handle in[6] = {m->params[0], m->params[1], m->params[2], m->params[3], m->x_test, m->y_test};
  hk_handle op, loss;
  hk_code rc;
  for (int i = 0; i < 4; i++) f->params[i] = m->params[i];
  def.name = "accuracy";
  def.kernel = accuracy_kernel;
  def.inputs = in;
  def.ninputs = 6;
  def.outputs = scalar_f32;
  def.noutputs = 2;
  if ((rc = hk_graph_op(m->g, &op, &def, st)) != HK_OK ||
      (rc = hk_graph_op_output(m->g, &f->accuracy, op, 0, st)) != HK_OK ||
      (rc = hk_graph_op_output(m->g, &loss, op, 1, st)) != HK_OK)
    return rc;
  copy_def.name = "test_loss";
  copy_def.kernel = copy_kernel;
  copy_def.inputs = &loss;
  copy_def.ninputs = 1;
  copy_def.outputs = scalar_f32;
  copy_def.noutputs = 1;
  if ((rc = hk_graph_op(m->g, &op, &copy_def, st)) != HK_OK) return rc;
  return hk_graph_op_output(m->g, &m->test_loss, op, 0, st);
}

/* The summary ops, which the Scaffold's default summary_op merges and the
 * SummarySaverHook fetches on its cadence: they run only then, and read the
 * variables after the step's update (ops run in the order they were added),
 * so a value written at global step N is that of the model the step N left. */
static hk_code add_summaries(model *m, const feeder *f, hk_status *st) {
  hk_handle out;
  hk_code rc;
  if ((rc = hk_graph_scalar_summary(m->g, &out, "loss_summary", "loss", m->loss, st)) != HK_OK ||
      (rc = hk_graph_scalar_summary(m->g, &out, "test_accuracy_summary", "test_accuracy", f->accuracy, st)) != HK_OK ||
      (rc = hk_graph_scalar_summary(m->g, &out, "test_loss_summary", "test_loss", m->test_loss, st)) != HK_OK ||
      (rc = hk_graph_histogram_summary(m->g, &out, "w1_summary", "w1", m->params[0], st)) != HK_OK)
    return rc;
  return HK_OK;
}

hk_code build_model(model *m, trainer *t, feeder *f, const digits_data *test, uint64_t seed, int early_stopping,
                    int learning_rate, const hk_env *env, int summaries, hk_status *st) {
  hk_graph_options gopts = HK_GRAPH_OPTIONS_INIT;
  hk_code rc;
  gopts.env = env;
  m->learning_rate = HK_NO_HANDLE;
  if ((rc = hk_graph_new(&m->g, &gopts, st)) != HK_OK || (rc = add_params(m, seed, st)) != HK_OK) return rc;
  if (early_stopping && (rc = add_early_state(m, st)) != HK_OK) return rc;
  if (learning_rate && (rc = add_learning_rate(m, t, learning_rate, st)) != HK_OK) return rc;
  if ((rc = hk_graph_get_or_create_global_step(m->g, &m->global_step, st)) != HK_OK ||
      (rc = add_inputs(m, f, t->batch, test, st)) != HK_OK || (rc = add_train_op(m, t, f, st)) != HK_OK ||
      (rc = add_eval_ops(m, f, st)) != HK_OK)
    return rc;
  return summaries ? add_summaries(m, f, st) : HK_OK;
}
