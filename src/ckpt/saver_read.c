/*
 * The reads of the Saver's variables that a save and the asynchronous
 * hook's snapshot make: views checked against the variables' descriptions,
 * and the snapshot's copies.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "ckpt/ckpt.h"
#include "ckpt/ckpt_internal.h"
#include "ckpt/saver_internal.h"
#include "util/common.h"

#include <string.h>

#if defined(__x86_64__) || defined(_M_X64)
#include <emmintrin.h> /* _mm_sfence after streamed snapshot copies */
#define HAVE_STREAM_COPY 1
#endif

#define SNAPSHOT_ALIGN 64

/* ---- reading variables ------------------------------------------------------------------ */

size_t hk__saver_info_nbytes(const hk_variable_info *info) {
  size_t n = hk_dtype_size(info->dtype);
  for (int32_t d = 0; d < info->rank; d++) {
    size_t dim = (size_t)info->dims[d];
    if (dim != 0 && n > SIZE_MAX / dim) return SIZE_MAX;
    n *= dim;
  }
  return n;
}

hk_code hk__saver_read_view(hk_saver *s, hk_raw_session *rs, size_t i, hk_tensor *out, hk_status *st) {
  const hk_variable_info *info = &s->var_info[i];
  hk_code rc = hk_raw_session_read_variable(out, rs, s->var_index[i], st);
  if (rc != HK_OK) return rc;
  if (out->dtype != info->dtype || out->rank != info->rank ||
      memcmp(out->dims, info->dims, (size_t)info->rank * sizeof info->dims[0]) != 0 ||
      out->nbytes != hk__saver_info_nbytes(info) || (!out->data && out->nbytes > 0))
    return hk_status_set(st, HK_INTERNAL, "the executor's value of variable %s does not match its description",
                         info->name);
  return HK_OK;
}

hk_code hk__saver_snapshot_size(hk_saver *saver, size_t *nbytes, size_t *ntensors, hk_status *st) {
  size_t total = 0;
  hk_code rc;

  if (nbytes) *nbytes = 0;
  if (ntensors) *ntensors = 0;
  if (!saver || !nbytes || !ntensors)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "saver, nbytes and ntensors are required");
  rc = hk__saver_resolve_vars(saver, st);
  if (rc != HK_OK) return rc;
  for (size_t i = 0; i < saver->nvars; i++) {
    size_t n = hk__saver_info_nbytes(&saver->var_info[i]);
    size_t padded =
        n > SIZE_MAX - (SNAPSHOT_ALIGN - 1) ? SIZE_MAX : (n + SNAPSHOT_ALIGN - 1) / SNAPSHOT_ALIGN * SNAPSHOT_ALIGN;
    if (padded == SIZE_MAX || total > SIZE_MAX - padded)
      return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "the Saver's variables do not fit in memory (at %s)",
                           saver->var_info[i].name);
    total += padded;
  }
  *nbytes = total;
  *ntensors = saver->nvars;
  return HK_OK;
}

hk_code hk__saver_snapshot(hk_saver *saver, hk_raw_session *rs, void *buf, size_t cap, hk__ckpt_tensor *tensors,
                           size_t ntensors, hk_status *st) {
  size_t off = 0;
  int streamed = 0;
  hk_code rc = HK_OK;

  if (!saver || !rs) return hk_status_set(st, HK_INVALID_ARGUMENT, "saver and rs are required");
  rc = hk__saver_resolve_vars(saver, st);
  if (rc != HK_OK) return rc;
  if (ntensors != saver->nvars || (!tensors && ntensors > 0))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "snapshot of %zu tensors into room for %zu", saver->nvars, ntensors);
  for (size_t i = 0; i < saver->nvars; i++) {
    hk_tensor v;
    rc = hk__saver_read_view(saver, rs, i, &v, st);
    if (rc != HK_OK) break;
    if (v.nbytes > cap || off > cap - v.nbytes || (!buf && v.nbytes > 0)) {
      rc = hk_status_set(st, HK_INVALID_ARGUMENT, "snapshot buffer of %zu bytes is too small (at %s)", cap,
                         saver->var_info[i].name);
      break;
    }
    if (v.nbytes > 0) streamed |= hk__snapshot_stream_copy((char *)buf + off, v.data, v.nbytes);
    tensors[i].name = saver->var_info[i].name;
    tensors[i].non_finite_ok = (saver->var_info[i].flags & HK_VAR_NON_FINITE_OK) != 0;
    tensors[i].value = v;
    tensors[i].value.data = v.nbytes > 0 ? (char *)buf + off : NULL;
    off += (v.nbytes + SNAPSHOT_ALIGN - 1) / SNAPSHOT_ALIGN * SNAPSHOT_ALIGN;
  }
#ifdef HAVE_STREAM_COPY
  /* Streaming stores are weakly ordered: make them visible before the
   * caller hands the buffer to the writer thread. */
  if (streamed) _mm_sfence();
#else
  (void)streamed;
#endif
  return rc;
}

/* The asynchronous hook's copy-before-write snapshot reads the views
 * here and copies them itself, possibly on its writer thread, with the same
 * copy as above. */
hk_code hk__saver_snapshot_views(hk_saver *saver, hk_raw_session *rs, hk__ckpt_tensor *tensors, size_t *index,
                                 size_t ntensors, hk_status *st) {
  hk_code rc;

  if (!saver || !rs) return hk_status_set(st, HK_INVALID_ARGUMENT, "saver and rs are required");
  rc = hk__saver_resolve_vars(saver, st);
  if (rc != HK_OK) return rc;
  if (ntensors != saver->nvars || ((!tensors || !index) && ntensors > 0))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "snapshot of %zu tensors into room for %zu", saver->nvars, ntensors);
  for (size_t i = 0; i < saver->nvars; i++) {
    rc = hk__saver_read_view(saver, rs, i, &tensors[i].value, st);
    if (rc != HK_OK) return rc;
    tensors[i].name = saver->var_info[i].name;
    tensors[i].non_finite_ok = (saver->var_info[i].flags & HK_VAR_NON_FINITE_OK) != 0;
    index[i] = saver->var_index[i];
  }
  return HK_OK;
}
