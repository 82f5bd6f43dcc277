/*
 * hooked — tensors: dtypes, shapes and a borrowed view of data.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_TENSOR_H
#define HOOKED_TENSOR_H

#include "hooked/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(name, enum suffix, element size, safetensors name) */
#define HK_DTYPE_TABLE(X)  \
  X(f16, F16, 2, "F16")    \
  X(bf16, BF16, 2, "BF16") \
  X(f32, F32, 4, "F32")    \
  X(f64, F64, 8, "F64")    \
  X(i8, I8, 1, "I8")       \
  X(i16, I16, 2, "I16")    \
  X(i32, I32, 4, "I32")    \
  X(i64, I64, 8, "I64")    \
  X(u8, U8, 1, "U8")       \
  X(u16, U16, 2, "U16")    \
  X(u32, U32, 4, "U32")    \
  X(u64, U64, 8, "U64")    \
  X(bool, BOOL, 1, "BOOL") \
  X(string, STRING, 0, "STRING")

/**
 * Element types. HK_DTYPE_STRING is for readiness reports (a 1-D tensor of
 * variable names): its data is an array of `const char *`,
 * each NUL-terminated, and its element size is sizeof(const char *).
 * HK_DTYPE_INVALID (0) is never a valid dtype.
 */
typedef enum hk_dtype {
  HK_DTYPE_INVALID = 0,
#define HK__DTYPE_ENUM(lc, uc, size, st) HK_DTYPE_##uc,
  HK_DTYPE_TABLE(HK__DTYPE_ENUM)
#undef HK__DTYPE_ENUM
      HK_DTYPE__COUNT
} hk_dtype;

/** Maximum rank of a tensor. */
#define HK_MAX_RANK 8

/**
 * A tensor: dtype, shape and a *borrowed* pointer to row-major data.
 * hk_tensor never owns its data; who owns it is stated by the function that
 * hands the tensor out (feeds: the caller, until the call returns; results:
 * the raw session, until its next run or close). Copy the struct freely.
 * A scalar has rank 0. `nbytes` is product(dims) * element size.
 */
typedef struct hk_tensor {
  hk_dtype dtype;
  int32_t rank;
  int64_t dims[HK_MAX_RANK];
  void *data;
  size_t nbytes;
} hk_tensor;

/* The dtype queries below never fail, accept any value (invalid ones
 * included), may be called from any thread and do not allocate. */

/** @return the element size in bytes (sizeof(const char *) for STRING), 0
 *  for an invalid dtype.
 * **Threads:** any. **Allocates:** no.
 */
HK_API size_t hk_dtype_size(hk_dtype dtype);
/** @return "f32", "i64", "string", ... (the lower-case table name) or
 *  "invalid". **Ownership:** static storage.
 * **Threads:** any. **Allocates:** no.
 */
HK_API const char *hk_dtype_name(hk_dtype dtype);
/** @return nonzero for f16, bf16, f32, f64. **Threads:** any. **Allocates:** no. */
HK_API int hk_dtype_is_float(hk_dtype dtype);
/** @return nonzero for the signed and unsigned integer dtypes (BOOL is not one).
 *  **Threads:** any. **Allocates:** no. */
HK_API int hk_dtype_is_integer(hk_dtype dtype);

/**
 * Fill `out` as a view of `data` with the given dtype and shape, computing
 * `nbytes`.
 * @param out   written on success; zeroed on failure (when not NULL).
 * @param rank  0..HK_MAX_RANK; 0 is a scalar.
 * @param dims  rank entries, each >= 0, copied; may be NULL when rank is 0.
 * @param data  borrowed, not copied: the caller keeps it valid as long as
 *              the view is used. May be NULL only when the shape has zero
 *              elements.
 * @return HK_OK or INVALID_ARGUMENT.
 * **Ownership:** `out` is a plain struct that owns nothing.
 * **Errors:** INVALID_ARGUMENT for a NULL out, an invalid dtype, a rank
 * outside [0, HK_MAX_RANK], NULL dims with rank > 0, a negative dimension, a
 * byte size that overflows size_t, or NULL data with a non-empty shape.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_tensor_init(hk_tensor *out, hk_dtype dtype, int32_t rank, const int64_t *dims, void *data,
                              hk_status *status);

/* The tensor helpers below never fail, accept NULL tensors, may be called
 * from any thread and do not allocate. */

/** @return the number of elements of `t`'s shape (1 for a scalar, 0 when a
 *  dimension is 0), or -1 when t is NULL or the rank, a dimension or the
 *  product is invalid or overflows int64.
 * **Threads:** any. **Allocates:** no.
 */
HK_API int64_t hk_tensor_num_elements(const hk_tensor *t);

/** @return nonzero when a and b are both non-NULL and have the same dtype,
 *  rank and dimensions; data and nbytes are ignored.
 * **Threads:** any. **Allocates:** no.
 */
HK_API int hk_tensor_same_spec(const hk_tensor *a, const hk_tensor *b);

/**
 * Write `t`'s shape as "[64, 32]" ("[]" for a scalar, "" for a NULL t) into
 * buf, truncated to fit and NUL-terminated when cap > 0.
 * @return buf (unchanged and unwritten when buf is NULL or cap is 0).
 * **Ownership:** returns `buf`, borrowed from the caller.
 * **Threads:** any. **Allocates:** no.
 */
HK_API const char *hk_tensor_shape_str(const hk_tensor *t, char *buf, size_t cap);

/**
 * Scalar views of `*value` (rank 0, nbytes = the element size).
 * **Ownership:** `value` is borrowed by the returned view: keep it alive as
 * long as the view is used.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_tensor hk_tensor_scalar_i64(int64_t *value);
/** As hk_tensor_scalar_i64(), for f32. **Threads:** any. **Allocates:** no. */
HK_API hk_tensor hk_tensor_scalar_f32(float *value);

/**
 * Convert a scalar tensor of any integer dtype (i8..u64) to int64.
 * @param out   receives the value on success.
 * @param what  names the tensor in messages; NULL means "tensor".
 * **Errors:** INVALID_ARGUMENT, naming `what`, for a non-integer or
 * non-scalar tensor or one without data; OUT_OF_RANGE for a u64 value above
 * INT64_MAX.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_tensor_to_i64(int64_t *out, const hk_tensor *t, const char *what, hk_status *status);
/**
 * Convert a numeric tensor of exactly one element (a scalar, or any shape
 * of one element) to a double: f16, bf16, f32, f64 (NaN and infinities
 * kept), and every integer dtype (converted as C does: a 64-bit value
 * above 2^53 may round). What the EarlyStoppingHook and best-k retention
 * read.
 * @param out   receives the value on success.
 * @param what  names the tensor in messages; NULL means "tensor".
 * **Errors:** INVALID_ARGUMENT, naming `what`, for a tensor of another
 * number of elements, one without data, or of dtype BOOL or STRING.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_tensor_to_f64(double *out, const hk_tensor *t, const char *what, hk_status *status);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_TENSOR_H */
