/*
 * Summary ops of the embedded graph (hooked/graph.h: hk_graph_scalar_summary,
 * hk_graph_histogram_summary, hk_graph_merge_summary) and the merge a
 * Scaffold asks for as its default summary_op (HK_CONTROL_MERGE_SUMMARIES).
 *
 * Each op is a kernel op made with hk_graph_op(). Its output is declared as a
 * 1-D U8 tensor as long as the largest Summary the op can make; the kernel
 * encodes into that pre-sized buffer and shrinks the view to what it wrote,
 * so a run allocates nothing. What a kernel needs besides its inputs (the
 * tag, the histogram's bucket arrays) lives in one block the op's
 * kernel_user points at; the block is handed to the graph as the op's
 * `constant.data`, which the graph frees with the op for every kind of op
 * (graph.c, free_op), and which is read only for constant ops. So the graph
 * owns it, and a builder that fails leaves nothing behind.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "graph/summary_ops.h"
#include "events/proto.h"
#include "graph/graph_internal.h"
#include "hooked/summary.h"

#include <stdio.h>
#include <string.h>

/* The block behind a summary op's kernel_user. */
typedef struct op_state {
  double *limits; /* histogram ops: HK__HISTO_LIMITS each, inside the block */
  double *counts;
  size_t taglen;
  char *tag; /* NUL-terminated, inside the block */
} op_state;

static hk_code oom(hk_status *st, const char *name) {
  return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hooked.graph: out of memory adding '%s'", name ? name : "");
}

/* ---- kernels ------------------------------------------------------------------ */

/* The kernel wrote `end - out->data` bytes: the output shows exactly them. */
static void shrink(hk_tensor *out, const unsigned char *end) {
  size_t n = (size_t)(end - (const unsigned char *)out->data);
  out->dims[0] = (int64_t)n;
  out->nbytes = n;
}

static hk_code scalar_kernel(void *user, hk_kernel_context *ctx, const hk_tensor *in, size_t nin, hk_tensor *out,
                             size_t nout, hk_status *st) {
  const op_state *s = user;
  size_t need = hk__summary_scalar_size(s->taglen);
  (void)nin;
  (void)nout;
  if (in[0].data == NULL || in[0].nbytes < hk_dtype_size(in[0].dtype))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "scalar summary '%s' (%s): its input has no value", s->tag,
                         hk__kernel_op(ctx)->name);
  if (out[0].nbytes < need)
    return hk_status_set(st, HK_INTERNAL, "scalar summary '%s': output buffer of %zu bytes, %zu needed", s->tag,
                         out[0].nbytes, need);
  shrink(&out[0],
         hk__summary_scalar(out[0].data, s->tag, s->taglen, (float)hk__element_as_double(in[0].dtype, in[0].data, 0)));
  return HK_OK;
}

static hk_code histogram_kernel(void *user, hk_kernel_context *ctx, const hk_tensor *in, size_t nin, hk_tensor *out,
                                size_t nout, hk_status *st) {
  op_state *s = user;
  hk__histo h;
  size_t need;
  hk_code rc;
  (void)ctx;
  (void)nin;
  (void)nout;
  h.limits = s->limits;
  h.counts = s->counts;
  hk__histo_clear(&h);
  rc = hk__histo_add_tensor(&h, &in[0], s->tag, st);
  if (rc != HK_OK) return rc;
  need = hk__summary_histogram_size(s->taglen, &h);
  if (out[0].nbytes < need)
    return hk_status_set(st, HK_INTERNAL, "histogram summary '%s': output buffer of %zu bytes, %zu needed", s->tag,
                         out[0].nbytes, need);
  shrink(&out[0], hk__summary_histogram(out[0].data, s->tag, s->taglen, &h));
  return HK_OK;
}

/* MergeSummary: the inputs' bytes one after the other form one Summary whose
 * Values are all of theirs; two Values with one tag are refused. */
static hk_code merge_kernel(void *user, hk_kernel_context *ctx, const hk_tensor *in, size_t nin, hk_tensor *out,
                            size_t nout, hk_status *st) {
  hk_graph *g = hk__kernel_graph(ctx);
  const hk__graph_op *op = hk__kernel_op(ctx);
  unsigned char *dst = out[0].data, *end;
  const unsigned char *p, *tag;
  size_t i, total = 0, taglen;
  int r;
  (void)user;
  (void)nout;
  for (i = 0; i < nin; i++) {
    char what[600];
    snprintf(what, sizeof what, "merge '%s': inputs[%zu] (%s)", op->name, i, g->slots[op->inputs[i]].name);
    hk_code rc = hk__summary_check(in[i].data, in[i].nbytes, what, NULL, st);
    if (rc != HK_OK) return rc;
    if (in[i].nbytes > out[0].nbytes - total)
      return hk_status_set(st, HK_INTERNAL, "merge '%s': inputs[%zu] is longer than its op declared", op->name, i);
    if (in[i].nbytes) memcpy(dst + total, in[i].data, in[i].nbytes);
    total += in[i].nbytes;
  }
  end = dst + total;
  p = dst;
  while ((r = hk__summary_next_value(&p, end, &tag, &taglen)) == 1) {
    const unsigned char *q = p, *other;
    size_t otherlen;
    while (hk__summary_next_value(&q, end, &other, &otherlen) == 1)
      if (otherlen == taglen && memcmp(other, tag, taglen) == 0)
        return hk_status_set(st, HK_INVALID_ARGUMENT, "Duplicate tag %.*s found in summary inputs", (int)taglen,
                             (const char *)tag);
  }
  shrink(&out[0], end);
  return HK_OK;
}

/* ---- building --------------------------------------------------------------------- */

static hk_code entry(hk_graph *g, hk_handle *out, hk_status *st) {
  if (out) *out = HK_NO_HANDLE;
  if (!g) return hk_status_set(st, HK_INVALID_ARGUMENT, "g is NULL");
  if (g->finalized) return hk_status_set(st, HK_FAILED_PRECONDITION, "Graph is finalized and cannot be modified.");
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "out is NULL");
  return HK_OK;
}

static hk_code check_tag(const char *fn, const char *tag, hk_status *st) {
  size_t n;
  if (!tag) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: tag is NULL", fn);
  n = strlen(tag);
  if (n == 0 || n > HK_SUMMARY_TAG_MAX)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: tag must be 1..%d bytes, got %zu", fn, HK_SUMMARY_TAG_MAX, n);
  if (!hk__utf8_valid(tag, n))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: tag '%s' is not valid UTF-8", fn, tag);
  return HK_OK;
}

/* The slot of a tensor handle of g, or -1 with INVALID_ARGUMENT. */
static int64_t input_slot(hk_graph *g, const char *fn, const char *what, hk_handle h, hk_status *st) {
  int64_t slot = hk__graph_tensor_slot(g, h);
  if (slot < 0) {
    char label[40];
    hk_status_set(st, HK_INVALID_ARGUMENT, "%s: %s (%s) is not a tensor of this graph", fn, what,
                  hk__graph_handle_label(g, h, label, sizeof label));
  }
  return slot;
}

/* One block: the histogram arrays (when asked) and the tag. */
static op_state *make_state(const hk_env *env, const char *tag, int histogram) {
  size_t taglen = strlen(tag);
  size_t arrays = histogram ? 2 * HK__HISTO_LIMITS * sizeof(double) : 0;
  size_t head = sizeof(op_state) + (sizeof(double) - sizeof(op_state) % sizeof(double)) % sizeof(double);
  unsigned char *block = hk_env_calloc(env, 1, head + arrays + taglen + 1);
  op_state *s = (op_state *)block;
  if (!s) return NULL;
  if (histogram) {
    s->limits = (double *)(block + head);
    s->counts = s->limits + HK__HISTO_LIMITS;
    hk__histo_default_limits(s->limits);
  }
  s->tag = (char *)block + head + arrays;
  memcpy(s->tag, tag, taglen + 1);
  s->taglen = taglen;
  return s;
}

/* The role entry for HK_ROLE_SUMMARIES, with room for one more handle, made
 * before the op so that nothing can fail once the op exists (as
 * hk_graph_create_global_step reserves its role). An empty role reads as
 * no role. */
static hk__graph_role *reserve_role(hk_graph *g) {
  const hk_env *env = &g->env;
  hk__graph_role *r = NULL;
  size_t i;
  for (i = 0; i < g->nroles; i++)
    if (strcmp(g->roles[i].name, HK_ROLE_SUMMARIES) == 0) r = &g->roles[i];
  if (!r) {
    char *name;
    if (g->nroles == g->caproles) {
      size_t cap = g->caproles ? 2 * g->caproles : 8;
      hk__graph_role *roles = hk_env_realloc(env, g->roles, cap * sizeof *roles);
      if (!roles) return NULL;
      g->roles = roles;
      g->caproles = cap;
    }
    name = hk_env_strdup(env, HK_ROLE_SUMMARIES);
    if (!name) return NULL;
    r = &g->roles[g->nroles++];
    memset(r, 0, sizeof *r);
    r->name = name;
  }
  if (r->n == r->cap) {
    size_t cap = r->cap ? 2 * r->cap : 8;
    hk_handle *hs = hk_env_realloc(env, r->handles, cap * sizeof *hs);
    if (!hs) return NULL;
    r->handles = hs;
    r->cap = cap;
  }
  return r;
}

/* Add the kernel op; hand `state` to the graph (it owns it from here, also
 * when this fails: then it is freed). */
static hk_code add_summary_op(hk_graph *g, hk_handle *out, const char *name, hk_kernel_fn kernel, op_state *state,
                              const hk_handle *inputs, size_t ninputs, size_t out_bytes, int register_it,
                              hk_status *st) {
  hk_op_def def = HK_OP_DEF_INIT;
  hk_output_spec spec;
  hk__graph_role *role = NULL;
  hk_handle op = HK_NO_HANDLE, tensor = HK_NO_HANDLE;
  int64_t index;
  hk_code rc;

  if (out_bytes > (uint64_t)INT64_MAX) {
    hk_env_free(&g->env, state);
    return hk_status_set(st, HK_INVALID_ARGUMENT, "summary op '%s': its output would be too large", name ? name : "");
  }
  if (register_it && !(role = reserve_role(g))) {
    hk_env_free(&g->env, state);
    return oom(st, name);
  }
  memset(&spec, 0, sizeof spec);
  spec.dtype = HK_DTYPE_U8;
  spec.rank = 1;
  spec.dims[0] = (int64_t)out_bytes;
  def.name = name;
  def.kernel = kernel;
  def.kernel_user = state;
  def.inputs = inputs;
  def.ninputs = ninputs;
  def.outputs = &spec;
  def.noutputs = 1;
  rc = hk_graph_op(g, &op, &def, st);
  if (rc == HK_OK) rc = hk_graph_op_output(g, &tensor, op, 0, st);
  if (rc != HK_OK) {
    hk_env_free(&g->env, state);
    return rc;
  }
  index = hk__graph_op_index(g, op);
  g->ops[index].constant.data = state; /* the graph frees it with the op */
  if (role) role->handles[role->n++] = tensor;
  *out = tensor;
  return HK_OK;
}

hk_code hk_graph_scalar_summary(hk_graph *g, hk_handle *out, const char *name, const char *tag, hk_handle tensor,
                                hk_status *status) {
  static const char fn[] = "hk_graph_scalar_summary";
  const hk__graph_slot *sl;
  op_state *s;
  int64_t slot;
  hk_code rc = entry(g, out, status);
  if (rc != HK_OK) return rc;
  rc = check_tag(fn, tag, status);
  if (rc != HK_OK) return rc;
  if ((slot = input_slot(g, fn, "tensor", tensor, status)) < 0) return HK_INVALID_ARGUMENT;
  sl = &g->slots[slot];
  if (sl->rank != 0 || !(hk_dtype_is_integer(sl->dtype) || hk_dtype_is_float(sl->dtype)))
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         "%s: tensor '%s' must be a scalar of an integer or floating dtype, not %s of rank %d", fn,
                         sl->name, hk_dtype_name(sl->dtype), (int)sl->rank);
  if (!(s = make_state(&g->env, tag, 0))) return oom(status, name);
  return add_summary_op(g, out, name, scalar_kernel, s, &tensor, 1, hk__summary_scalar_size(strlen(tag)), 1, status);
}

hk_code hk_graph_histogram_summary(hk_graph *g, hk_handle *out, const char *name, const char *tag, hk_handle values,
                                   hk_status *status) {
  static const char fn[] = "hk_graph_histogram_summary";
  const hk__graph_slot *sl;
  op_state *s;
  int64_t slot;
  hk_code rc = entry(g, out, status);
  if (rc != HK_OK) return rc;
  rc = check_tag(fn, tag, status);
  if (rc != HK_OK) return rc;
  if ((slot = input_slot(g, fn, "values", values, status)) < 0) return HK_INVALID_ARGUMENT;
  sl = &g->slots[slot];
  if (!(hk_dtype_is_integer(sl->dtype) || hk_dtype_is_float(sl->dtype)))
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         "%s: values '%s' has dtype %s; an integer or floating dtype is needed", fn, sl->name,
                         hk_dtype_name(sl->dtype));
  if (!(s = make_state(&g->env, tag, 1))) return oom(status, name);
  return add_summary_op(g, out, name, histogram_kernel, s, &values, 1, hk__summary_histogram_max_size(strlen(tag)), 1,
                        status);
}

/* The merge of `inputs`: each a 1-D U8 tensor of a known length. */
static hk_code add_merge(hk_graph *g, hk_handle *out, const char *fn, const char *name, const hk_handle *inputs,
                         size_t n, hk_status *st) {
  size_t i, total = 0;
  for (i = 0; i < n; i++) {
    char what[32];
    const hk__graph_slot *sl;
    int64_t slot;
    snprintf(what, sizeof what, "inputs[%zu]", i);
    if ((slot = input_slot(g, fn, what, inputs[i], st)) < 0) return HK_INVALID_ARGUMENT;
    sl = &g->slots[slot];
    if (sl->dtype != HK_DTYPE_U8 || sl->rank != 1 || sl->dims[0] < 0)
      return hk_status_set(st, HK_INVALID_ARGUMENT,
                           "%s: %s '%s' is not a serialized Summary: a 1-D u8 tensor of a known length is needed", fn,
                           what, sl->name);
    if ((uint64_t)sl->dims[0] > (uint64_t)INT64_MAX - total)
      return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: the merged summary would be too large", fn);
    total += (size_t)sl->dims[0];
  }
  return add_summary_op(g, out, name, merge_kernel, NULL, inputs, n, total, 0, st);
}

hk_code hk_graph_merge_summary(hk_graph *g, hk_handle *out, const char *name, const hk_handle *inputs, size_t n,
                               hk_status *status) {
  static const char fn[] = "hk_graph_merge_summary";
  hk_handle *all;
  size_t count = 0;
  hk_code rc = entry(g, out, status);
  if (rc != HK_OK) return rc;
  if (inputs || n) {
    if (!inputs) return hk_status_set(status, HK_INVALID_ARGUMENT, "%s: inputs is NULL but n is %zu", fn, n);
    if (!n) return hk_status_set(status, HK_INVALID_ARGUMENT, "%s: n is 0 (NULL inputs and 0: merge all)", fn);
    return add_merge(g, out, fn, name, inputs, n, status);
  }
  /* merge_all: what HK_ROLE_SUMMARIES holds now. */
  rc = hk_executor_role_get(NULL, 0, &count, g->executor, HK_ROLE_SUMMARIES, status);
  if (rc != HK_OK) return rc;
  if (count == 0)
    return hk_status_set(status, HK_FAILED_PRECONDITION, "%s: no summary is registered under \"%s\" to merge", fn,
                         HK_ROLE_SUMMARIES);
  all = hk_env_calloc(&g->env, count, sizeof *all);
  if (!all) return oom(status, name);
  rc = hk_executor_role_get(all, count, &count, g->executor, HK_ROLE_SUMMARIES, status);
  if (rc == HK_OK) rc = add_merge(g, out, fn, name, all, count, status);
  hk_env_free(&g->env, all);
  return rc;
}

/* The Scaffold's default summary_op, named as TensorFlow names
 * merge_all's op ("Merge/MergeSummary"), with a suffix when taken. */
hk_code hk__graph_merge_summaries_control(hk_graph *g, void *arg, hk_status *st) {
  hk_merge_summaries_request *req = arg;
  char name[64];
  int k;
  if (!req) return hk_status_set(st, HK_INVALID_ARGUMENT, "HK_CONTROL_MERGE_SUMMARIES: arg is NULL");
  if (!req->inputs || !req->ninputs)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "HK_CONTROL_MERGE_SUMMARIES: no inputs");
  for (k = 0; k < 1000; k++) {
    if (k == 0)
      snprintf(name, sizeof name, "Merge/MergeSummary");
    else
      snprintf(name, sizeof name, "Merge_%d/MergeSummary", k);
    if (hk__graph_find_op(g, name, strlen(name)) < 0) break;
  }
  return add_merge(g, &req->out, "HK_CONTROL_MERGE_SUMMARIES", name, req->inputs, req->ninputs, st);
}
