/*
 * The graph as an executor (hooked/sys/executor.h): the default ops a
 * Scaffold asks for, names and handles, variables, the text description,
 * control ops and the vtable itself; runs are in run.c.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "graph/graph_internal.h"
#include "graph/summary_ops.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ---- default ops --------------------------------------------------------- */

/* `base`, or `base_<k>` for the first free k. */
static void unique_name(const hk_graph *g, const char *base, char *buf, size_t cap) {
  unsigned k;
  snprintf(buf, cap, "%s", base);
  for (k = 1; hk__graph_find_op(g, buf, strlen(buf)) >= 0; k++) snprintf(buf, cap, "%s_%u", base, k);
}

static hk_code graph_default_op(void *self, hk_default_op kind, hk_handle *out, hk_status *st) {
  hk_graph *g = self;
  char name[64];
  hk_handle op = HK_NO_HANDLE;
  hk_code rc;
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "out is NULL");
  *out = HK_NO_HANDLE;
  if (g->finalized) return hk__graph_finalized_error(st);
  switch (kind) {
    case HK_DEFAULT_INIT_OP:
      unique_name(g, "init", name, sizeof(name));
      return hk__graph_build_init(g, out, name, NULL, 0, 0, st);
    case HK_DEFAULT_LOCAL_INIT_OP:
      unique_name(g, "init_local", name, sizeof(name));
      return hk__graph_build_init(g, out, name, NULL, 0, HK_VAR_LOCAL, st);
    case HK_DEFAULT_READY_OP:
      unique_name(g, "report_uninitialized_variables", name, sizeof(name));
      rc = hk__graph_build_report(g, &op, name, NULL, 0, 0, 0, st);
      break;
    case HK_DEFAULT_READY_FOR_LOCAL_INIT_OP:
      unique_name(g, "report_uninitialized_global_variables", name, sizeof(name));
      rc = hk__graph_build_report(g, &op, name, NULL, 0, HK_VAR_LOCAL, 0, st);
      break;
    default: return hk_status_set(st, HK_INVALID_ARGUMENT, "kind %d is not an hk_default_op", (int)kind);
  }
  if (rc == HK_OK) *out = hk__graph_tensor_handle(g->ops[hk__graph_op_index(g, op)].out_base);
  return rc;
}

/* ---- names and handles ---------------------------------------------------- */

static hk_code graph_resolve_tensor(void *self, const char *name, hk_handle *out, hk_status *st) {
  hk_graph *g = self;
  const char *colon;
  size_t oplen;
  uint64_t k = 0;
  int64_t o;
  if (!name) return hk_status_set(st, HK_INVALID_ARGUMENT, "name is NULL");
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "out is NULL");
  *out = HK_NO_HANDLE;
  colon = strrchr(name, ':');
  oplen = colon ? (size_t)(colon - name) : strlen(name);
  if (colon) {
    const char *p = colon + 1;
    /* canonical decimal only: "op:01" is not "op:1" */
    if (!*p || strlen(p) > 9 || (p[0] == '0' && p[1] != '\0')) goto not_found;
    for (; *p; p++) {
      if (*p < '0' || *p > '9') goto not_found;
      k = k * 10 + (uint64_t)(*p - '0');
    }
  }
  o = hk__graph_find_op(g, name, oplen);
  if (o < 0 || k >= g->ops[o].noutputs) goto not_found;
  *out = hk__graph_tensor_handle(g->ops[o].out_base + (uint32_t)k);
  return HK_OK;
not_found:
  return hk_status_set(st, HK_NOT_FOUND, "The name '%s' refers to a Tensor which does not exist.", name);
}

static hk_code graph_resolve_op(void *self, const char *name, hk_handle *out, hk_status *st) {
  hk_graph *g = self;
  int64_t o;
  if (!name) return hk_status_set(st, HK_INVALID_ARGUMENT, "name is NULL");
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "out is NULL");
  *out = HK_NO_HANDLE;
  o = hk__graph_find_op(g, name, strlen(name));
  if (o < 0) return hk_status_set(st, HK_NOT_FOUND, "The name '%s' refers to an Operation not in the graph.", name);
  *out = hk__graph_op_handle((uint32_t)o);
  return HK_OK;
}

static const char *graph_handle_name(void *self, hk_handle h) {
  hk_graph *g = self;
  int64_t i = hk__graph_tensor_slot(g, h);
  if (i >= 0) return g->slots[i].name;
  i = hk__graph_op_index(g, h);
  if (i >= 0) return g->ops[i].name;
  return NULL;
}

static hk_code graph_finalize(void *self, hk_status *st) {
  hk_graph *g = self;
  (void)st;
  g->finalized = 1;
  return HK_OK;
}

static int graph_is_finalized(void *self) { return ((hk_graph *)self)->finalized; }

/* ---- variables through the vtable --------------------------------------- */

static size_t graph_variable_count(void *self) { return ((hk_graph *)self)->nvars; }

static hk_code graph_variable_info(void *self, size_t index, hk_variable_info *out, hk_status *st) {
  hk_graph *g = self;
  const hk__graph_var *v;
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "out is NULL");
  if (index >= g->nvars)
    return hk_status_set(st, HK_OUT_OF_RANGE, "variable index %zu is out of range (%zu variables)", index, g->nvars);
  v = &g->vars[index];
  memset(out, 0, sizeof(*out));
  out->name = g->ops[v->op].name;
  out->tensor = hk__graph_tensor_handle(g->ops[v->op].out_base);
  out->dtype = v->dtype;
  out->rank = v->rank;
  memcpy(out->dims, v->dims, sizeof(out->dims));
  out->flags = v->flags;
  return HK_OK;
}

/* ---- describe ------------------------------------------------------------- */

/* Buffers text on the stack and flushes it to the sink in chunks, so that
 * describing a graph of any size allocates nothing. */
typedef struct text_out {
  hk_text_sink sink;
  void *user;
  hk_status *st;
  hk_code rc;
  size_t len;
  char buf[1024];
} text_out;

static void text_flush(text_out *t) {
  if (t->rc == HK_OK && t->len) t->rc = t->sink(t->user, t->buf, t->len, t->st);
  t->len = 0;
}

static void text_put(text_out *t, const char *s) {
  size_t n = strlen(s);
  while (n && t->rc == HK_OK) {
    size_t room = sizeof(t->buf) - t->len, m = n < room ? n : room;
    memcpy(t->buf + t->len, s, m);
    t->len += m;
    s += m;
    n -= m;
    if (t->len == sizeof(t->buf)) text_flush(t);
  }
}

static const char *kind_name(hk__graph_op_kind k) {
  switch (k) {
    case HK__OP_VARIABLE: return "Variable";
    case HK__OP_PLACEHOLDER: return "Placeholder";
    case HK__OP_CONSTANT: return "Const";
    case HK__OP_KERNEL: return "Kernel";
    case HK__OP_NOOP: return "NoOp";
    case HK__OP_ASSIGN: return "Assign";
    case HK__OP_ASSIGN_ADD: return "AssignAdd";
    case HK__OP_INIT: return "InitVariables";
    case HK__OP_REPORT: return "ReportUninitializedVariables";
  }
  return "?";
}

static const char *init_name(hk_init_kind k) {
  switch (k) {
    case HK_INIT_NONE: return "none";
    case HK_INIT_ZEROS: return "zeros";
    case HK_INIT_CONSTANT: return "constant";
    case HK_INIT_UNIFORM: return "uniform";
    case HK_INIT_NORMAL: return "normal";
  }
  return "?";
}

static void put_list(text_out *t, const char *label, const hk_graph *g, const uint32_t *ix, size_t n,
                     int what /* 0 slots, 1 ops, 2 vars */) {
  size_t i;
  if (!n) return;
  text_put(t, " ");
  text_put(t, label);
  text_put(t, "=[");
  for (i = 0; i < n; i++) {
    if (i) text_put(t, ", ");
    if (what == 0)
      text_put(t, g->slots[ix[i]].name);
    else if (what == 1)
      text_put(t, g->ops[ix[i]].name);
    else
      text_put(t, g->ops[g->vars[ix[i]].op].name);
  }
  text_put(t, "]");
}

static hk_code graph_describe(void *self, hk_text_sink sink, void *sink_user, hk_status *st) {
  hk_graph *g = self;
  text_out t;
  char line[192], shape[128];
  size_t i, k;
  if (!sink) return hk_status_set(st, HK_INVALID_ARGUMENT, "sink is NULL");
  t.sink = sink;
  t.user = sink_user;
  t.st = st;
  t.rc = HK_OK;
  t.len = 0;
  for (i = 0; i < g->nops && t.rc == HK_OK; i++) {
    const hk__graph_op *op = &g->ops[i];
    text_put(&t, op->name);
    text_put(&t, " = ");
    text_put(&t, kind_name(op->kind));
    put_list(&t, "inputs", g, op->inputs, op->ninputs, 0);
    put_list(&t, "control", g, op->controls, op->ncontrols, 1);
    put_list(&t, "mutates", g, op->mutates, op->nmutates, 2);
    put_list(&t, "vars", g, op->aux, op->naux, 2);
    text_put(&t, " -> (");
    for (k = 0; k < op->noutputs; k++) {
      const hk__graph_slot *s = &g->slots[op->out_base + k];
      snprintf(line, sizeof(line), "%s%s %s", k ? ", " : "", hk_dtype_name(s->dtype),
               hk__graph_shape_str(s->rank, s->dims, shape, sizeof(shape)));
      text_put(&t, line);
    }
    text_put(&t, ")");
    if (op->kind == HK__OP_VARIABLE) {
      const hk__graph_var *v = &g->vars[op->var];
      snprintf(line, sizeof(line), " {%s%s%s%s, init=%s}", (v->flags & HK_VAR_LOCAL) ? "local" : "global",
               (v->flags & HK_VAR_TRAINABLE) ? ", trainable" : "", (v->flags & HK_VAR_EXTERNAL) ? ", external" : "",
               (v->flags & HK_VAR_OPTIONAL) ? ", optional" : "", init_name(v->init.kind));
      text_put(&t, line);
    }
    text_put(&t, "\n");
  }
  text_flush(&t);
  return t.rc;
}

static hk_code graph_control(void *self, int op, void *arg, hk_status *st) {
  if (op == HK_CONTROL_SNAPSHOT_ATTACH || op == HK_CONTROL_SNAPSHOT_DETACH)
    return hk__graph_snapshot_control(self, op, arg, st);
  if (op == HK_CONTROL_MERGE_SUMMARIES) return hk__graph_merge_summaries_control(self, arg, st);
  return hk_status_set(st, HK_UNIMPLEMENTED, "hooked.graph: unknown control op %d", op);
}

const hk_executor_vtable hk__graph_vtable = {
    HK_EXECUTOR_VTABLE_VERSION,
    "hooked.graph",
    graph_resolve_tensor,
    graph_resolve_op,
    graph_handle_name,
    graph_finalize,
    graph_is_finalized,
    hk__graph_open,
    hk__graph_close,
    hk__graph_run,
    graph_variable_count,
    graph_variable_info,
    hk__graph_variable_read,
    hk__graph_variable_assign,
    hk__graph_role_get,
    hk__graph_role_add,
    graph_default_op,
    graph_describe,
    graph_control,
    hk__graph_destroy,
    hk__graph_variable_storage,
};
