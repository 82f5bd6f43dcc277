/*
 * hooked — NanTensorHook (contract group N).
 *
 * Written against the public headers only. Everything is
 * allocated at construction; the callbacks allocate nothing. NaN and
 * infinity are recognised from the bits of each element, so half and
 * bfloat16 losses need no conversion and no floating-point exception flag
 * is raised.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "hooked/hooks.h"
#include "util/common.h"

#include <stdio.h>
#include <string.h>

#define HOOK_NAME "NanTensorHook"

typedef enum verdict { FINITE = 0, POS_INF, NEG_INF, IS_NAN } verdict;

typedef struct nan_tensor {
  hk_hook *hook; /* the wrapper, for its env and log */
  hk_env env;    /* what the struct was allocated with */
  int has_env;
  char *loss_name; /* NULL when a handle was given */
  hk_handle given; /* HK_NO_HANDLE when a name was given */
  int fail;        /* fail_on_nan_loss */
  int non_finite;
  /* Per-session state, reset by begin(). */
  hk_handle loss;
  char label[160]; /* the loss, for messages */
} nan_tensor;

/* Exponent all ones: infinity when the mantissa is 0, NaN otherwise. */
#define CLASSIFY(bits, exp_mask, mant_mask, sign_mask) \
  (((bits) & (exp_mask)) != (exp_mask) ? FINITE        \
   : ((bits) & (mant_mask)) != 0       ? IS_NAN        \
   : ((bits) & (sign_mask)) != 0       ? NEG_INF       \
                                       : POS_INF)

static verdict classify(hk_dtype dtype, const unsigned char *p) {
  switch (dtype) {
    case HK_DTYPE_F16: {
      uint16_t b;
      memcpy(&b, p, sizeof b);
      return CLASSIFY(b, 0x7c00u, 0x03ffu, 0x8000u);
    }
    case HK_DTYPE_BF16: {
      uint16_t b;
      memcpy(&b, p, sizeof b);
      return CLASSIFY(b, 0x7f80u, 0x007fu, 0x8000u);
    }
    case HK_DTYPE_F32: {
      uint32_t b;
      memcpy(&b, p, sizeof b);
      return CLASSIFY(b, 0x7f800000u, 0x007fffffu, 0x80000000u);
    }
    case HK_DTYPE_F64: {
      uint64_t b;
      memcpy(&b, p, sizeof b);
      return CLASSIFY(b, UINT64_C(0x7ff0000000000000), UINT64_C(0x000fffffffffffff), UINT64_C(0x8000000000000000));
    }
    default: return FINITE;
  }
}

static hk_code nt_begin(void *user, hk_executor *graph, hk_status *status) {
  nan_tensor *self = user;
  hk_status inner = HK_STATUS_INIT;
  size_t nvars;

  self->loss = self->given;
  if (self->loss_name != NULL) {
    hk_code rc = hk_executor_resolve_tensor(&self->loss, graph, self->loss_name, &inner);
    if (rc != HK_OK) return hk_status_set(status, rc, HOOK_NAME ": loss '%s': %s", self->loss_name, inner.message);
    snprintf(self->label, sizeof self->label, "%s", self->loss_name);
  } else {
    snprintf(self->label, sizeof self->label, "%s", hk_executor_handle_name(graph, self->loss));
  }
  /* A loss that is a variable has a dtype known now; any other
   * tensor's is checked on the first fetch. */
  nvars = hk_executor_variable_count(graph);
  for (size_t i = 0; i < nvars; i++) {
    hk_variable_info info;
    if (hk_executor_variable_info(&info, graph, i, NULL) != HK_OK || info.tensor != self->loss) continue;
    if (!hk_dtype_is_float(info.dtype))
      return hk_status_set(status, HK_INVALID_ARGUMENT,
                           HOOK_NAME ": loss '%s' is a %s variable; NaN needs a floating dtype (f16, bf16, f32, f64)",
                           self->label, hk_dtype_name(info.dtype));
    break;
  }
  return HK_OK;
}

static hk_code nt_before_run(void *user, hk_run_context *ctx, hk_run_request *request, hk_status *status) {
  nan_tensor *self = user;

  (void)ctx;
  (void)status;
  request->fetches = &self->loss;
  request->nfetches = 1;
  return HK_OK;
}

static hk_code nt_after_run(void *user, hk_run_context *ctx, const hk_run_values *values, hk_status *status) {
  nan_tensor *self = user;
  const hk_tensor *t;
  int64_t n;
  size_t size;
  verdict worst = FINITE;
  const char *text;

  if (values == NULL || values->nresults < 1 || values->results == NULL)
    return hk_status_set(status, HK_INTERNAL, HOOK_NAME ": the loss '%s' it fetched is missing from its run values",
                         self->label);
  t = &values->results[0];
  if (!hk_dtype_is_float(t->dtype))
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         HOOK_NAME ": loss '%s' is a %s tensor; NaN needs a floating dtype (f16, bf16, f32, f64)",
                         self->label, hk_dtype_name(t->dtype));
  n = hk_tensor_num_elements(t);
  size = hk_dtype_size(t->dtype);
  if (n < 0 || (n > 0 && (t->data == NULL || (uint64_t)n > t->nbytes / size)))
    return hk_status_set(status, HK_INTERNAL, HOOK_NAME ": the executor returned loss '%s' without its data",
                         self->label);
  for (int64_t i = 0; i < n && worst != IS_NAN; i++) {
    verdict v = classify(t->dtype, (const unsigned char *)t->data + (size_t)i * size);
    if (v == IS_NAN || (self->non_finite && worst == FINITE)) worst = v;
  }
  if (worst == FINITE) return HK_OK;

  text = worst == IS_NAN ? "NaN" : worst == NEG_INF ? "-Inf" : "Inf";
  if (self->fail) {
    hk_hook_log(self->hook, HK_LOG_ERROR, "Model diverged with loss = %s.", text);
    /* Names the cause; the stop request of a call that fails is itself dropped. */
    hk_run_context_request_stop_with_reason(ctx, HK_STOP_NON_FINITE, NULL);
    return hk_status_set(status, HK_INVALID_ARGUMENT, "%s loss during training.", text);
  }
  hk_hook_log(self->hook, HK_LOG_WARNING, "Model diverged with loss = %s.", text);
  char detail[HK_STATUS_MESSAGE_MAX];
  snprintf(detail, sizeof detail, "Model diverged with loss = %s.", text);
  hk_run_context_request_stop_with_reason(ctx, HK_STOP_NON_FINITE, detail);
  return HK_OK;
}

static void nt_free(nan_tensor *self) {
  hk_env copy;
  int has_env;
  if (self == NULL) return;
  has_env = self->has_env;
  if (has_env) copy = self->env;
  hk_env_free(has_env ? &copy : NULL, self->loss_name);
  hk_env_free(has_env ? &copy : NULL, self);
}

static void nt_destroy(void *user) { nt_free(user); }

static const hk_hook_vtable nan_tensor_vtable = {
    HK_HOOK_VTABLE_VERSION, nt_begin, NULL, nt_before_run, nt_after_run, NULL, nt_destroy,
};

hk_code hk_nan_tensor_options_init(hk_nan_tensor_options *opts, uint32_t version) {
  return HK__STRUCT_INIT(opts, version, hk_nan_tensor_options, HK_NAN_TENSOR_OPTIONS_INIT);
}

hk_code hk_nan_tensor_hook_new(hk_hook **out, const hk_nan_tensor_options *opts, hk_status *status) {
  nan_tensor *self;
  hk_code rc;

  if (out == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "out: must not be NULL");
  *out = NULL;
  if (opts == NULL)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "opts is NULL: " HOOK_NAME " needs loss or loss_tensor");
  HK__CHECK_VERSION(opts, HK_NAN_TENSOR_OPTIONS_VERSION, hk_nan_tensor_options, "hk_nan_tensor_hook_new: opts", status);
  rc = hk_env_check(opts->env, "opts->env", status);
  if (rc != HK_OK) return rc;
  if (opts->loss == NULL && opts->loss_tensor == HK_NO_HANDLE)
    return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": one of loss (a name) or loss_tensor must be given");
  if (opts->loss != NULL && opts->loss_tensor != HK_NO_HANDLE)
    return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": give loss (a name) or loss_tensor, not both");
  if (opts->loss != NULL && opts->loss[0] == '\0')
    return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": loss is an empty name");

  self = hk_env_calloc(opts->env, 1, sizeof(*self));
  if (self == NULL) return hk_status_set(status, HK_RESOURCE_EXHAUSTED, HOOK_NAME ": out of memory");
  if (opts->env != NULL) {
    hk_env_copy(&self->env, opts->env);
    self->has_env = 1;
  }
  if (opts->loss != NULL && (self->loss_name = hk_env_strdup(opts->env, opts->loss)) == NULL) {
    nt_free(self);
    return hk_status_set(status, HK_RESOURCE_EXHAUSTED, HOOK_NAME ": out of memory");
  }
  self->given = opts->loss_tensor;
  self->loss = opts->loss_tensor;
  self->fail = opts->fail_on_nan_loss != 0;
  self->non_finite = opts->non_finite != 0;

  rc = hk_hook_new(out, &nan_tensor_vtable, self, HOOK_NAME, opts->env, status);
  if (rc != HK_OK) {
    nt_free(self);
    return rc;
  }
  self->hook = *out;
  hk_status_clear(status);
  return HK_OK;
}
