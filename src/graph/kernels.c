/*
 * The embedded default executor: stock kernels (assign, assign_add, init,
 * report_uninitialized), initializers and the random generator.
 *
 * Random values. hooked's generator is SplitMix64 used in counter mode, so
 * that element i of a variable depends only on (seed, i) and the values are
 * the same on every platform and compiler:
 *
 *   draw(seed, c) = mix(seed + (c + 1) * 0x9E3779B97F4A7C15)   (mod 2^64)
 *   mix(z):  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
 *            z = (z ^ (z >> 27)) * 0x94D049BB133111EB
 *            return z ^ (z >> 31)
 *
 * draw(seed, 0), draw(seed, 1), ... is exactly the output sequence of
 * SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
 * generators", OOPSLA 2014) started from state `seed`, with its published
 * constants: the golden-ratio increment 0x9E3779B97F4A7C15 and Stafford's
 * "Mix13" finalizer above (seed 0 starts 0xE220A8397B1DCDAF).
 *
 * UNIFORM, element i uses c = i:
 *   f64:           u = (draw >> 11) * 2^-53                 (53-bit, in [0, 1))
 *   f32, f16, bf16: u = (draw >> 40) * 2^-24                (24-bit, in [0, 1))
 *   v = minval + (maxval - minval) * u in double, then rounded to nearest
 *   (ties to even) into the dtype (f16/bf16 through f32). A value that
 *   rounds to >= maxval becomes the largest representable value below
 *   maxval, so the range stays [minval, maxval).
 * NORMAL (Box-Muller, cosine branch only), element i uses c = 2i and 2i+1:
 *   u1 = ((draw(2i) >> 11) + 1) * 2^-53  in (0, 1]
 *   u2 = (draw(2i+1) >> 11) * 2^-53      in [0, 1)
 *   v  = mean + stddev * sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2)
 *   in double, then rounded into the dtype as above. sqrt is exact IEEE;
 *   the result is bit-identical wherever log and cos are correctly rounded.
 * All arithmetic assumes IEEE binary64 doubles evaluated without excess
 * precision (FLT_EVAL_METHOD 0 or 1).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "graph/graph_internal.h"

#include <math.h>
#include <string.h>

/* ---- generator ------------------------------------------------------------ */

static uint64_t draw(uint64_t seed, uint64_t c) {
  uint64_t z = seed + (c + 1) * UINT64_C(0x9E3779B97F4A7C15);
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

/* ---- 16-bit floats ---------------------------------------------------------- */

static uint16_t f32_to_f16(float f) {
  uint32_t x, sign, exp, man, h, rem;
  int32_t e;
  memcpy(&x, &f, sizeof(x));
  sign = (x >> 16) & 0x8000u;
  exp = (x >> 23) & 0xFFu;
  man = x & 0x7FFFFFu;
  if (exp == 0xFF) return (uint16_t)(sign | 0x7C00u | (man ? 0x200u | (man >> 13) : 0u));
  e = (int32_t)exp - 127 + 15;
  if (e >= 31) return (uint16_t)(sign | 0x7C00u);
  if (e <= 0) {
    uint32_t shift, mid;
    if (e < -10) return (uint16_t)sign;
    man |= 0x800000u;
    shift = (uint32_t)(14 - e);
    h = man >> shift;
    rem = man & ((1u << shift) - 1u);
    mid = 1u << (shift - 1u);
    if (rem > mid || (rem == mid && (h & 1u))) h++;
    return (uint16_t)(sign | h);
  }
  h = sign | ((uint32_t)e << 10) | (man >> 13);
  rem = man & 0x1FFFu;
  /* a carry out of the mantissa correctly bumps the exponent (up to inf) */
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
  return (uint16_t)h;
}

static float f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu, x;
  float f;
  if (exp == 0x1F) {
    x = sign | 0x7F800000u | (man << 13);
  } else if (exp == 0) {
    f = (float)man * 5.9604644775390625e-8f; /* man * 2^-24, exact */
    return sign ? -f : f;
  } else {
    x = sign | ((exp + 112u) << 23) | (man << 13);
  }
  memcpy(&f, &x, sizeof(f));
  return f;
}

static uint16_t f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof(x));
  if ((x & 0x7F800000u) == 0x7F800000u && (x & 0x7FFFFFu)) return (uint16_t)((x >> 16) | 0x40u);
  x += 0x7FFFu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

static float bf16_to_f32(uint16_t h) {
  uint32_t x = (uint32_t)h << 16;
  float f;
  memcpy(&f, &x, sizeof(f));
  return f;
}

/* The next 16-bit float toward -infinity (for finite, non-NaN bits). */
static uint16_t h16_down(uint16_t h) {
  if (h == 0x0000u) return 0x8001u;
  if (h & 0x8000u) return (uint16_t)(h + 1u);
  return (uint16_t)(h - 1u);
}

/* ---- storing values ---------------------------------------------------------- */

/* Store `v` rounded into element i of a float tensor; when `below` is finite,
 * a result that rounds to >= below is replaced by the largest value < below. */
static void store_float(hk_dtype dt, void *data, size_t i, double v, double below) {
  int clamp = isfinite(below);
  switch (dt) {
    case HK_DTYPE_F64: {
      double d = v;
      if (clamp && d >= below) d = nextafter(below, -HUGE_VAL);
      ((double *)data)[i] = d;
      break;
    }
    case HK_DTYPE_F32: {
      float f = (float)v;
      if (clamp && (double)f >= below) {
        f = (float)below;
        if ((double)f >= below) f = nextafterf(f, -HUGE_VALF);
      }
      ((float *)data)[i] = f;
      break;
    }
    case HK_DTYPE_F16:
    case HK_DTYPE_BF16: {
      int half = dt == HK_DTYPE_F16;
      uint16_t h = half ? f32_to_f16((float)v) : f32_to_bf16((float)v);
      if (clamp) {
        while ((double)(half ? f16_to_f32(h) : bf16_to_f32(h)) >= below) h = h16_down(h);
      }
      memcpy((unsigned char *)data + i * 2, &h, 2);
      break;
    }
    default: break;
  }
}

static void fill_integer(hk_dtype dt, void *data, size_t n, double value) {
  size_t i;
  /* Convert only values the target can represent (the initializer check
   * bounds them per dtype); anything else would be undefined behaviour. */
  int64_t s = value >= -9223372036854775808.0 && value < 9223372036854775808.0 ? (int64_t)value : 0;
  uint64_t u = value < 0 ? (uint64_t)s : (value < 18446744073709551616.0 ? (uint64_t)value : UINT64_MAX);
  for (i = 0; i < n; i++) {
    switch (dt) {
      case HK_DTYPE_I8: ((int8_t *)data)[i] = (int8_t)s; break;
      case HK_DTYPE_I16: ((int16_t *)data)[i] = (int16_t)s; break;
      case HK_DTYPE_I32: ((int32_t *)data)[i] = (int32_t)s; break;
      case HK_DTYPE_I64: ((int64_t *)data)[i] = s; break;
      case HK_DTYPE_U8: ((uint8_t *)data)[i] = (uint8_t)u; break;
      case HK_DTYPE_U16: ((uint16_t *)data)[i] = (uint16_t)u; break;
      case HK_DTYPE_U32: ((uint32_t *)data)[i] = (uint32_t)u; break;
      case HK_DTYPE_U64: ((uint64_t *)data)[i] = u; break;
      case HK_DTYPE_BOOL: ((uint8_t *)data)[i] = value != 0; break;
      default: break;
    }
  }
}

void hk__graph_initialize(const hk__graph_var *var, void *data) {
  const hk_initializer *in = &var->init;
  size_t esize = hk_dtype_size(var->dtype);
  size_t n = esize ? var->nbytes / esize : 0, i;
  if (!data || n == 0) return;
  switch (in->kind) {
    case HK_INIT_NONE: break;
    case HK_INIT_ZEROS: memset(data, 0, var->nbytes); break;
    case HK_INIT_CONSTANT:
      if (hk_dtype_is_float(var->dtype))
        for (i = 0; i < n; i++) store_float(var->dtype, data, i, in->value, HUGE_VAL);
      else
        fill_integer(var->dtype, data, n, in->value);
      break;
    case HK_INIT_UNIFORM: {
      double range = in->maxval - in->minval;
      for (i = 0; i < n; i++) {
        uint64_t r = draw(in->seed, (uint64_t)i);
        double u = var->dtype == HK_DTYPE_F64 ? (double)(r >> 11) * 0x1p-53 : (double)(r >> 40) * 0x1p-24;
        store_float(var->dtype, data, i, in->minval + range * u, in->maxval);
      }
      break;
    }
    case HK_INIT_NORMAL:
      for (i = 0; i < n; i++) {
        double u1 = (double)((draw(in->seed, 2 * (uint64_t)i) >> 11) + 1) * 0x1p-53;
        double u2 = (double)(draw(in->seed, 2 * (uint64_t)i + 1) >> 11) * 0x1p-53;
        double z = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
        store_float(var->dtype, data, i, in->mean + in->stddev * z, HUGE_VAL);
      }
      break;
  }
}

hk_code hk__graph_check_initializer(const hk_initializer *init, hk_dtype dtype, const char *what, hk_status *st) {
  int is_float = hk_dtype_is_float(dtype);
  switch (init->kind) {
    case HK_INIT_NONE:
    case HK_INIT_ZEROS: return HK_OK;
    case HK_INIT_CONSTANT: {
      double v = init->value, lo = 0, hi = 0;
      if (is_float) return HK_OK;
      if (!isfinite(v))
        return hk_status_set(st, HK_INVALID_ARGUMENT, "%s.value %g is not finite for dtype %s", what, v,
                             hk_dtype_name(dtype));
      if (dtype == HK_DTYPE_BOOL) return HK_OK;
      switch (dtype) {
        case HK_DTYPE_I8:
          lo = -128.0;
          hi = 127.0;
          break;
        case HK_DTYPE_I16:
          lo = -32768.0;
          hi = 32767.0;
          break;
        case HK_DTYPE_I32:
          lo = -2147483648.0;
          hi = 2147483647.0;
          break;
        case HK_DTYPE_I64:
          lo = -9223372036854775808.0;
          hi = 9223372036854774784.0;
          break;
        case HK_DTYPE_U8: hi = 255.0; break;
        case HK_DTYPE_U16: hi = 65535.0; break;
        case HK_DTYPE_U32: hi = 4294967295.0; break;
        case HK_DTYPE_U64: hi = 18446744073709549568.0; break;
        default: break;
      }
      if (v != floor(v) || v < lo || v > hi)
        return hk_status_set(st, HK_INVALID_ARGUMENT, "%s.value %g is not an integer representable in dtype %s", what,
                             v, hk_dtype_name(dtype));
      return HK_OK;
    }
    case HK_INIT_UNIFORM:
      if (!is_float)
        return hk_status_set(st, HK_INVALID_ARGUMENT, "%s.kind HK_INIT_UNIFORM needs a floating dtype, got %s", what,
                             hk_dtype_name(dtype));
      if (!isfinite(init->minval) || !isfinite(init->maxval) || !(init->minval < init->maxval) ||
          !isfinite(init->maxval - init->minval))
        return hk_status_set(st, HK_INVALID_ARGUMENT,
                             "%s: minval (%g) and maxval (%g) must be finite with minval < maxval", what, init->minval,
                             init->maxval);
      return HK_OK;
    case HK_INIT_NORMAL:
      if (!is_float)
        return hk_status_set(st, HK_INVALID_ARGUMENT, "%s.kind HK_INIT_NORMAL needs a floating dtype, got %s", what,
                             hk_dtype_name(dtype));
      if (!isfinite(init->mean) || !isfinite(init->stddev) || init->stddev < 0)
        return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: mean (%g) must be finite and stddev (%g) finite and >= 0",
                             what, init->mean, init->stddev);
      return HK_OK;
  }
  return hk_status_set(st, HK_INVALID_ARGUMENT, "%s.kind (%d) is not an hk_init_kind", what, (int)init->kind);
}

int hk__graph_dtype_addable(hk_dtype dtype) { return hk_dtype_is_float(dtype) || hk_dtype_is_integer(dtype); }

/* ---- stock kernels -------------------------------------------------------------- */

static int same_shape(const hk_tensor *a, const hk_tensor *b) {
  int32_t i;
  if (a->rank != b->rank) return 0;
  for (i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return 0;
  return 1;
}

static hk_code check_operand(hk_kernel_context *ctx, const hk_tensor *in, const hk_tensor *var, hk_status *st) {
  const hk__graph_op *op = hk__kernel_op(ctx);
  hk_graph *g = hk__kernel_graph(ctx);
  /* A kernel may reshape its outputs; never trust an input's rank. */
  if (in->rank < 0 || in->rank > HK_MAX_RANK)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: input has rank %d, outside [0, %d]", op->name, (int)in->rank,
                         HK_MAX_RANK);
  if (in->dtype != var->dtype || !same_shape(in, var)) {
    char a[96], b[96];
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: input %s %s does not match variable '%s' %s %s", op->name,
                         hk_dtype_name(in->dtype), hk__graph_shape_str(in->rank, in->dims, a, sizeof(a)),
                         g->ops[g->vars[op->mutates[0]].op].name, hk_dtype_name(var->dtype),
                         hk__graph_shape_str(var->rank, var->dims, b, sizeof(b)));
  }
  return HK_OK;
}

hk_code hk__kernel_assign(void *user, hk_kernel_context *ctx, const hk_tensor *inputs, size_t ninputs,
                          hk_tensor *outputs, size_t noutputs, hk_status *status) {
  hk_tensor *var = hk_kernel_context_variable(ctx, 0);
  hk_code rc;
  (void)user;
  (void)ninputs;
  (void)noutputs;
  rc = check_operand(ctx, &inputs[0], var, status);
  if (rc != HK_OK) return rc;
  if (var->nbytes) {
    if (var->data != inputs[0].data) memmove(var->data, inputs[0].data, var->nbytes);
    memcpy(outputs[0].data, var->data, var->nbytes);
  }
  return HK_OK;
}

static void add_elements(hk_dtype dt, void *dst, const void *src, size_t n) {
  size_t i;
#define HK__ADD_UNSIGNED(T)                                                         \
  for (i = 0; i < n; i++) ((T *)dst)[i] = (T)(((T *)dst)[i] + ((const T *)src)[i]); \
  break;
  switch (dt) {
    case HK_DTYPE_F32:
      for (i = 0; i < n; i++) ((float *)dst)[i] += ((const float *)src)[i];
      break;
    case HK_DTYPE_F64:
      for (i = 0; i < n; i++) ((double *)dst)[i] += ((const double *)src)[i];
      break;
    case HK_DTYPE_F16:
    case HK_DTYPE_BF16:
      for (i = 0; i < n; i++) {
        uint16_t a, b;
        float s;
        memcpy(&a, (unsigned char *)dst + 2 * i, 2);
        memcpy(&b, (const unsigned char *)src + 2 * i, 2);
        if (dt == HK_DTYPE_F16) {
          s = f16_to_f32(a) + f16_to_f32(b);
          a = f32_to_f16(s);
        } else {
          s = bf16_to_f32(a) + bf16_to_f32(b);
          a = f32_to_bf16(s);
        }
        memcpy((unsigned char *)dst + 2 * i, &a, 2);
      }
      break;
    /* two's complement: signed addition that wraps is unsigned addition */
    case HK_DTYPE_I8:
    case HK_DTYPE_U8: HK__ADD_UNSIGNED(uint8_t)
    case HK_DTYPE_I16:
    case HK_DTYPE_U16: HK__ADD_UNSIGNED(uint16_t)
    case HK_DTYPE_I32:
    case HK_DTYPE_U32: HK__ADD_UNSIGNED(uint32_t)
    case HK_DTYPE_I64:
    case HK_DTYPE_U64: HK__ADD_UNSIGNED(uint64_t)
    default: break;
  }
#undef HK__ADD_UNSIGNED
}

hk_code hk__kernel_assign_add(void *user, hk_kernel_context *ctx, const hk_tensor *inputs, size_t ninputs,
                              hk_tensor *outputs, size_t noutputs, hk_status *status) {
  hk_tensor *var = hk_kernel_context_variable(ctx, 0);
  size_t esize = hk_dtype_size(var->dtype);
  hk_code rc;
  (void)user;
  (void)ninputs;
  (void)noutputs;
  rc = check_operand(ctx, &inputs[0], var, status);
  if (rc != HK_OK) return rc;
  if (var->nbytes) {
    add_elements(var->dtype, var->data, inputs[0].data, var->nbytes / esize);
    memcpy(outputs[0].data, var->data, var->nbytes);
  }
  return HK_OK;
}

hk_code hk__kernel_init(void *user, hk_kernel_context *ctx, const hk_tensor *inputs, size_t ninputs, hk_tensor *outputs,
                        size_t noutputs, hk_status *status) {
  const hk__graph_op *op = hk__kernel_op(ctx);
  hk_graph *g = hk__kernel_graph(ctx);
  size_t i;
  (void)user;
  (void)inputs;
  (void)ninputs;
  (void)outputs;
  (void)noutputs;
  (void)status;
  for (i = 0; i < op->nmutates; i++)
    hk__graph_initialize(&g->vars[op->mutates[i]], hk_kernel_context_variable(ctx, i)->data);
  return HK_OK;
}

hk_code hk__kernel_report(void *user, hk_kernel_context *ctx, const hk_tensor *inputs, size_t ninputs,
                          hk_tensor *outputs, size_t noutputs, hk_status *status) {
  const hk__graph_op *op = hk__kernel_op(ctx);
  hk_graph *g = hk__kernel_graph(ctx);
  const char **names = outputs[0].data;
  size_t i, k = 0;
  (void)user;
  (void)inputs;
  (void)ninputs;
  (void)noutputs;
  (void)status;
  for (i = 0; i < op->naux; i++)
    if (!hk__kernel_var_initialized(ctx, op->aux[i])) names[k++] = g->ops[g->vars[op->aux[i]].op].name;
  outputs[0].rank = 1;
  outputs[0].dims[0] = (int64_t)k;
  outputs[0].nbytes = k * sizeof(const char *);
  return HK_OK;
}
