/*
 * The ops a program adds to a graph (hooked/graph.h): placeholders,
 * constants, custom ops with their kernels, and the stock ops (assign,
 * assign_add, group, the initializer and the uninitialized-variables
 * report), each through the builder in graph.c.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "graph/graph_internal.h"
#include "util/common.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ---- placeholders and constants ------------------------------------------ */

hk_code hk_graph_placeholder(hk_graph *g, hk_handle *out, const char *name, hk_dtype dtype, int32_t rank,
                             const int64_t *dims, hk_status *status) {
  hk__graph_out_decl od;
  hk__graph_op_spec sp;
  uint32_t opi;
  hk_code rc;
  if (out) *out = HK_NO_HANDLE;
  rc = hk__graph_builder_entry(g, out, "out", name, "name", status);
  if (rc != HK_OK) return rc;
  if (!hk__graph_dtype_valid(dtype))
    return hk_status_set(status, HK_INVALID_ARGUMENT, "dtype (%d) of placeholder '%s' is invalid", (int)dtype, name);
  /* -1 is TF's unknown dimension: the feed decides */
  rc = hk__graph_check_shape(rank, dims, -1, "placeholder", status);
  if (rc != HK_OK) return rc;
  memset(&od, 0, sizeof(od));
  od.dtype = dtype;
  od.rank = rank;
  if (rank > 0) memcpy(od.dims, dims, (size_t)rank * sizeof(int64_t));
  memset(&sp, 0, sizeof(sp));
  sp.name = name;
  sp.kind = HK__OP_PLACEHOLDER;
  sp.outputs = &od;
  sp.noutputs = 1;
  sp.var = -1;
  rc = hk__graph_add_op(g, &sp, &opi, status);
  if (rc != HK_OK) return rc;
  *out = hk__graph_tensor_handle(g->ops[opi].out_base);
  return HK_OK;
}

hk_code hk_graph_constant(hk_graph *g, hk_handle *out, const char *name, const hk_tensor *value, hk_status *status) {
  hk__graph_out_decl od;
  hk__graph_op_spec sp;
  uint32_t opi;
  hk_code rc;
  size_t nbytes;
  void *copy = NULL;
  int ok;
  if (out) *out = HK_NO_HANDLE;
  rc = hk__graph_builder_entry(g, out, "out", name, "name", status);
  if (rc != HK_OK) return rc;
  if (!value) return hk_status_set(status, HK_INVALID_ARGUMENT, "value is NULL");
  if (!hk__graph_dtype_valid(value->dtype) || value->dtype == HK_DTYPE_STRING)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "value->dtype (%d) of constant '%s' is not supported",
                         (int)value->dtype, name);
  rc = hk__graph_check_shape(value->rank, value->dims, 0, "value", status);
  if (rc != HK_OK) return rc;
  nbytes = hk__graph_nbytes(value->dtype, value->rank, value->dims, &ok);
  if (!ok) return hk_status_set(status, HK_INVALID_ARGUMENT, "value: byte size overflows");
  if (value->nbytes != nbytes)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "value->nbytes is %zu but dtype and shape need %zu",
                         value->nbytes, nbytes);
  if (nbytes && !value->data) return hk_status_set(status, HK_INVALID_ARGUMENT, "value->data is NULL");
  if (hk__graph_find_op(g, name, strlen(name)) >= 0)
    return hk_status_set(status, HK_ALREADY_EXISTS, "An op named '%s' already exists in the graph.", name);
  if (nbytes) {
    copy = hk_env_alloc(&g->env, nbytes);
    if (!copy) return hk__graph_oom(status, name);
    memcpy(copy, value->data, nbytes);
  }
  memset(&od, 0, sizeof(od));
  od.dtype = value->dtype;
  od.rank = value->rank;
  if (value->rank > 0) memcpy(od.dims, value->dims, (size_t)value->rank * sizeof(int64_t));
  memset(&sp, 0, sizeof(sp));
  sp.name = name;
  sp.kind = HK__OP_CONSTANT;
  sp.outputs = &od;
  sp.noutputs = 1;
  sp.var = -1;
  rc = hk__graph_add_op(g, &sp, &opi, status);
  if (rc != HK_OK) {
    hk_env_free(&g->env, copy);
    return rc;
  }
  g->ops[opi].constant = *value;
  g->ops[opi].constant.data = copy;
  g->ops[opi].constant.nbytes = nbytes;
  *out = hk__graph_tensor_handle(g->ops[opi].out_base);
  return HK_OK;
}

/* ---- custom ops ---------------------------------------------------------- */

hk_code hk_graph_op(hk_graph *g, hk_handle *out, const hk_op_def *def, hk_status *status) {
  uint32_t *in = NULL, *ctl = NULL, *mut = NULL, opi;
  hk__graph_out_decl *od = NULL;
  hk__graph_op_spec sp;
  size_t i;
  hk_code rc;
  if (out) *out = HK_NO_HANDLE;
  rc = hk__graph_builder_entry(g, out, "out", NULL, NULL, status);
  if (rc != HK_OK) return rc;
  if (!def) return hk_status_set(status, HK_INVALID_ARGUMENT, "def is NULL");
  HK__CHECK_VERSION(def, HK_OP_DEF_VERSION, hk_op_def, "hk_graph_op: def", status);
  rc = hk__graph_check_name(def->name, "def->name", status);
  if (rc != HK_OK) return rc;
  if (!def->kernel && (def->noutputs || def->nmutates))
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         "def->kernel is NULL (a no-op) but op '%s' declares %zu outputs and %zu "
                         "mutated variables",
                         def->name, def->noutputs, def->nmutates);
  if (def->noutputs && !def->outputs)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "def->outputs is NULL but def->noutputs is %zu", def->noutputs);
  if (def->noutputs > 65535)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "def->noutputs %zu is more than 65535", def->noutputs);
  if (def->ninputs > ((size_t)1 << 24) || def->ncontrol_inputs > ((size_t)1 << 24) || def->nmutates > ((size_t)1 << 24))
    return hk_status_set(status, HK_INVALID_ARGUMENT, "op '%s' has too many inputs", def->name);

  in = hk__graph_scratch(g, def->ninputs);
  ctl = hk__graph_scratch(g, def->ncontrol_inputs);
  mut = hk__graph_scratch(g, def->nmutates);
  od = hk_env_calloc(&g->env, def->noutputs ? def->noutputs : 1, sizeof(*od));
  if (!in || !ctl || !mut || !od) {
    rc = hk__graph_oom(status, def->name);
    goto done;
  }
  rc = hk__graph_tensor_slots(g, def->inputs, def->ninputs, "def->inputs", in, status);
  if (rc != HK_OK) goto done;
  rc = hk__graph_op_indices(g, def->control_inputs, def->ncontrol_inputs, "def->control_inputs", ctl, status);
  if (rc != HK_OK) goto done;
  rc = hk__graph_var_indices(g, def->mutates, def->nmutates, "def->mutates", mut, status);
  if (rc != HK_OK) goto done;
  for (i = 0; i < def->noutputs; i++) {
    const hk_output_spec *os = &def->outputs[i];
    char what[48];
    int ok;
    snprintf(what, sizeof(what), "def->outputs[%zu]", i);
    if (!hk__graph_dtype_valid(os->dtype)) {
      rc = hk_status_set(status, HK_INVALID_ARGUMENT, "%s.dtype (%d) is invalid", what, (int)os->dtype);
      goto done;
    }
    rc = hk__graph_check_shape(os->rank, os->dims, 0, what, status);
    if (rc != HK_OK) goto done;
    od[i].dtype = os->dtype;
    od[i].rank = os->rank;
    memcpy(od[i].dims, os->dims, sizeof(od[i].dims));
    for (int32_t d = os->rank; d < HK_MAX_RANK; d++) od[i].dims[d] = 0;
    od[i].buf_bytes = hk__graph_nbytes(os->dtype, os->rank, os->dims, &ok);
    if (!ok) {
      rc = hk_status_set(status, HK_INVALID_ARGUMENT, "%s: byte size overflows", what);
      goto done;
    }
  }
  memset(&sp, 0, sizeof(sp));
  sp.name = def->name;
  sp.kind = def->kernel ? HK__OP_KERNEL : HK__OP_NOOP;
  sp.kernel = def->kernel;
  sp.kernel_user = def->kernel_user;
  sp.inputs = in;
  sp.ninputs = def->ninputs;
  sp.controls = ctl;
  sp.ncontrols = def->ncontrol_inputs;
  sp.mutates = mut;
  sp.nmutates = def->nmutates;
  sp.initializes = def->initializes != 0;
  sp.outputs = od;
  sp.noutputs = def->noutputs;
  sp.var = -1;
  rc = hk__graph_add_op(g, &sp, &opi, status);
  if (rc == HK_OK) *out = hk__graph_op_handle(opi);
done:
  hk_env_free(&g->env, in);
  hk_env_free(&g->env, ctl);
  hk_env_free(&g->env, mut);
  hk_env_free(&g->env, od);
  return rc;
}

hk_code hk_graph_op_output(hk_graph *g, hk_handle *out, hk_handle op, int32_t index, hk_status *status) {
  int64_t o;
  if (out) *out = HK_NO_HANDLE;
  if (!g) return hk_status_set(status, HK_INVALID_ARGUMENT, "g is NULL");
  if (!out) return hk_status_set(status, HK_INVALID_ARGUMENT, "out is NULL");
  o = hk__graph_op_index(g, op);
  if (o < 0) return hk_status_set(status, HK_NOT_FOUND, "op #%" PRIx64 " is not an op of this graph", (uint64_t)op);
  if (index < 0 || (uint32_t)index >= g->ops[o].noutputs)
    return hk_status_set(status, HK_OUT_OF_RANGE, "index %d is out of range: op '%s' has %u outputs", (int)index,
                         g->ops[o].name, (unsigned)g->ops[o].noutputs);
  *out = hk__graph_tensor_handle(g->ops[o].out_base + (uint32_t)index);
  return HK_OK;
}

/* ---- stock ops ----------------------------------------------------------- */

static int shapes_compatible(const hk__graph_slot *s, const hk__graph_var *v) {
  int32_t i;
  if (s->rank != v->rank) return 0;
  for (i = 0; i < s->rank; i++)
    if (s->dims[i] >= 0 && s->dims[i] != v->dims[i]) return 0;
  return 1;
}

static hk_code add_assign(hk_graph *g, hk_handle *out_op, const char *name, hk_handle var, hk_handle value, int add,
                          hk_status *st) {
  const char *vname = add ? "delta" : "value";
  uint32_t slot, vi, opi;
  const hk__graph_var *v;
  const hk__graph_slot *s;
  hk__graph_out_decl od;
  hk__graph_op_spec sp;
  int64_t t;
  hk_code rc;
  if (out_op) *out_op = HK_NO_HANDLE;
  rc = hk__graph_builder_entry(g, out_op, "out_op", name, "name", st);
  if (rc != HK_OK) return rc;
  t = hk__graph_var_of_handle(g, var);
  if (t < 0) {
    char buf[40];
    return hk_status_set(st, HK_INVALID_ARGUMENT, "var (%s) is not a variable of this graph",
                         hk__graph_handle_label(g, var, buf, sizeof(buf)));
  }
  vi = (uint32_t)t;
  t = hk__graph_tensor_slot(g, value);
  if (t < 0) {
    char buf[40];
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s (%s) is not a tensor of this graph", vname,
                         hk__graph_handle_label(g, value, buf, sizeof(buf)));
  }
  slot = (uint32_t)t;
  v = &g->vars[vi];
  s = &g->slots[slot];
  if (add && !hk__graph_dtype_addable(v->dtype))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "var '%s' has dtype %s, which assign_add cannot add",
                         g->ops[v->op].name, hk_dtype_name(v->dtype));
  if (s->dtype != v->dtype || !shapes_compatible(s, v)) {
    char a[96], b[96];
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s '%s' (%s %s) does not match var '%s' (%s %s)", vname, s->name,
                         hk_dtype_name(s->dtype), hk__graph_shape_str(s->rank, s->dims, a, sizeof(a)),
                         g->ops[v->op].name, hk_dtype_name(v->dtype),
                         hk__graph_shape_str(v->rank, v->dims, b, sizeof(b)));
  }
  memset(&od, 0, sizeof(od));
  od.dtype = v->dtype;
  od.rank = v->rank;
  memcpy(od.dims, v->dims, sizeof(od.dims));
  od.buf_bytes = v->nbytes;
  memset(&sp, 0, sizeof(sp));
  sp.name = name;
  sp.kind = add ? HK__OP_ASSIGN_ADD : HK__OP_ASSIGN;
  sp.kernel = add ? hk__kernel_assign_add : hk__kernel_assign;
  sp.inputs = &slot;
  sp.ninputs = 1;
  sp.mutates = &vi;
  sp.nmutates = 1;
  sp.initializes = !add;
  sp.outputs = &od;
  sp.noutputs = 1;
  sp.var = -1;
  rc = hk__graph_add_op(g, &sp, &opi, st);
  if (rc == HK_OK) *out_op = hk__graph_op_handle(opi);
  return rc;
}

hk_code hk_graph_assign(hk_graph *g, hk_handle *out_op, const char *name, hk_handle var, hk_handle value,
                        hk_status *status) {
  return add_assign(g, out_op, name, var, value, 0, status);
}

hk_code hk_graph_assign_add(hk_graph *g, hk_handle *out_op, const char *name, hk_handle var, hk_handle delta,
                            hk_status *status) {
  return add_assign(g, out_op, name, var, delta, 1, status);
}

hk_code hk_graph_group(hk_graph *g, hk_handle *out_op, const char *name, const hk_handle *ops, size_t n,
                       hk_status *status) {
  uint32_t *ctl, opi;
  hk__graph_op_spec sp;
  hk_code rc;
  if (out_op) *out_op = HK_NO_HANDLE;
  rc = hk__graph_builder_entry(g, out_op, "out_op", name, "name", status);
  if (rc != HK_OK) return rc;
  if (n && !ops) return hk_status_set(status, HK_INVALID_ARGUMENT, "ops is NULL but n is %zu", n);
  if (n > ((size_t)1 << 24)) return hk_status_set(status, HK_INVALID_ARGUMENT, "n %zu is too large", n);
  ctl = hk__graph_scratch(g, n);
  if (!ctl) return hk__graph_oom(status, name);
  rc = hk__graph_op_indices(g, ops, n, "ops", ctl, status);
  if (rc == HK_OK) {
    memset(&sp, 0, sizeof(sp));
    sp.name = name;
    sp.kind = HK__OP_NOOP;
    sp.controls = ctl;
    sp.ncontrols = n;
    sp.var = -1;
    rc = hk__graph_add_op(g, &sp, &opi, status);
    if (rc == HK_OK) *out_op = hk__graph_op_handle(opi);
  }
  hk_env_free(&g->env, ctl);
  return rc;
}

/* Variable selection for init/report ops: explicit list (deduplicated, in
 * order) or, when empty, every variable matching `all_mask`/`all_want`. */
static hk_code select_vars(hk_graph *g, const hk_handle *vars, size_t n, uint32_t all_mask, uint32_t all_want,
                           uint32_t **out, size_t *nout, hk_status *st) {
  uint32_t *sel;
  size_t i, j, k = 0;
  hk_code rc;
  *out = NULL;
  *nout = 0;
  if (n && !vars) return hk_status_set(st, HK_INVALID_ARGUMENT, "vars is NULL but n is %zu", n);
  if (n > ((size_t)1 << 24)) return hk_status_set(st, HK_INVALID_ARGUMENT, "n %zu is too large", n);
  sel = hk__graph_scratch(g, n ? n : g->nvars);
  if (!sel) return hk__graph_oom(st, "a variable list");
  if (n) {
    rc = hk__graph_var_indices(g, vars, n, "vars", sel, st);
    if (rc != HK_OK) {
      hk_env_free(&g->env, sel);
      return rc;
    }
    for (i = 0; i < n; i++) {
      for (j = 0; j < k && sel[j] != sel[i]; j++) {}
      if (j == k) sel[k++] = sel[i];
    }
  } else {
    for (i = 0; i < g->nvars; i++)
      if ((g->vars[i].flags & all_mask) == all_want) sel[k++] = (uint32_t)i;
  }
  *out = sel;
  *nout = k;
  return HK_OK;
}

hk_code hk__graph_build_init(hk_graph *g, hk_handle *out_op, const char *name, const hk_handle *vars, size_t n,
                             uint32_t local_want, hk_status *st) {
  uint32_t *sel, opi;
  size_t i, k = 0, nsel;
  hk__graph_op_spec sp;
  hk_code rc = select_vars(g, vars, n, HK_VAR_LOCAL, local_want, &sel, &nsel, st);
  if (rc != HK_OK) return rc;
  for (i = 0; i < nsel; i++) {
    const hk__graph_var *v = &g->vars[sel[i]];
    if (v->init.kind == HK_INIT_NONE) {
      /* external variables without initializer are always initialized;
       * graph-owned ones can only be assigned */
      if (n && !v->external) {
        rc = hk_status_set(st, HK_INVALID_ARGUMENT, "vars: variable '%s' has no initializer (HK_INIT_NONE)",
                           g->ops[v->op].name);
        hk_env_free(&g->env, sel);
        return rc;
      }
      continue;
    }
    sel[k++] = sel[i];
  }
  memset(&sp, 0, sizeof(sp));
  sp.name = name;
  sp.kind = HK__OP_INIT;
  sp.kernel = hk__kernel_init;
  sp.mutates = sel;
  sp.nmutates = k;
  sp.initializes = 1;
  sp.var = -1;
  rc = hk__graph_add_op(g, &sp, &opi, st);
  if (rc == HK_OK) *out_op = hk__graph_op_handle(opi);
  hk_env_free(&g->env, sel);
  return rc;
}

hk_code hk_graph_init_op(hk_graph *g, hk_handle *out_op, const char *name, const hk_handle *vars, size_t n,
                         hk_status *status) {
  hk_code rc;
  if (out_op) *out_op = HK_NO_HANDLE;
  rc = hk__graph_builder_entry(g, out_op, "out_op", name, "name", status);
  if (rc != HK_OK) return rc;
  return hk__graph_build_init(g, out_op, name, vars, n, 0, status);
}

hk_code hk__graph_build_report(hk_graph *g, hk_handle *out_op, const char *name, const hk_handle *vars, size_t n,
                               uint32_t mask, uint32_t want, hk_status *st) {
  uint32_t *sel, opi;
  size_t nsel;
  hk__graph_out_decl od;
  hk__graph_op_spec sp;
  hk_code rc = select_vars(g, vars, n, mask, want, &sel, &nsel, st);
  if (rc != HK_OK) return rc;
  memset(&od, 0, sizeof(od));
  od.dtype = HK_DTYPE_STRING;
  od.rank = 1;
  od.dims[0] = -1;
  od.buf_bytes = nsel * sizeof(const char *);
  memset(&sp, 0, sizeof(sp));
  sp.name = name;
  sp.kind = HK__OP_REPORT;
  sp.kernel = hk__kernel_report;
  sp.aux = sel;
  sp.naux = nsel;
  sp.outputs = &od;
  sp.noutputs = 1;
  sp.var = -1;
  rc = hk__graph_add_op(g, &sp, &opi, st);
  if (rc == HK_OK) *out_op = hk__graph_op_handle(opi);
  hk_env_free(&g->env, sel);
  return rc;
}

hk_code hk_graph_report_uninitialized(hk_graph *g, hk_handle *out_op, const char *name, const hk_handle *vars, size_t n,
                                      hk_status *status) {
  hk_code rc;
  if (out_op) *out_op = HK_NO_HANDLE;
  rc = hk__graph_builder_entry(g, out_op, "out_op", name, "name", status);
  if (rc != HK_OK) return rc;
  return hk__graph_build_report(g, out_op, name, vars, n, 0, 0, status);
}
