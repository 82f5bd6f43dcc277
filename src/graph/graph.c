/*
 * The embedded default executor:
 * the graph itself, the builder every op is added through, names and
 * handles, variables, the role registry and the global step. The ops a
 * program adds are in graph_ops.c, the executor's vtable in
 * graph_vtable.c, runs in run.c.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "graph/graph_internal.h"
#include "util/common.h"
#include "graph/summary_ops.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const char finalized_msg[] = "Graph is finalized and cannot be modified.";

/* ---- small helpers ------------------------------------------------------- */

hk_handle hk__graph_tensor_handle(uint32_t slot) { return HK__GRAPH_TENSOR_TAG | ((uint64_t)slot + 1); }

hk_handle hk__graph_op_handle(uint32_t op) { return HK__GRAPH_OP_TAG | ((uint64_t)op + 1); }

int64_t hk__graph_tensor_slot(const hk_graph *g, hk_handle h) {
  uint64_t v;
  if ((h & HK__GRAPH_TAG_MASK) != HK__GRAPH_TENSOR_TAG) return -1;
  v = h & ~HK__GRAPH_TAG_MASK;
  if (v == 0 || v > g->nslots) return -1;
  return (int64_t)(v - 1);
}

int64_t hk__graph_op_index(const hk_graph *g, hk_handle h) {
  uint64_t v;
  if ((h & HK__GRAPH_TAG_MASK) != HK__GRAPH_OP_TAG) return -1;
  v = h & ~HK__GRAPH_TAG_MASK;
  if (v == 0 || v > g->nops) return -1;
  return (int64_t)(v - 1);
}

const char *hk__graph_handle_label(const hk_graph *g, hk_handle h, char *buf, size_t cap) {
  int64_t i = hk__graph_tensor_slot(g, h);
  if (i >= 0) return g->slots[i].name;
  i = hk__graph_op_index(g, h);
  if (i >= 0) return g->ops[i].name;
  snprintf(buf, cap, "#%" PRIx64, (uint64_t)h);
  return buf;
}

const char *hk__graph_shape_str(int32_t rank, const int64_t *dims, char *buf, size_t cap) {
  size_t len = 0;
  int32_t i;
  if (cap == 0) return buf;
  buf[0] = '\0';
  len += (size_t)snprintf(buf + len, cap - len, "[");
  for (i = 0; i < rank && len < cap; i++) {
    if (dims[i] < 0)
      len += (size_t)snprintf(buf + len, cap - len, "%s?", i ? ", " : "");
    else
      len += (size_t)snprintf(buf + len, cap - len, "%s%" PRId64, i ? ", " : "", dims[i]);
  }
  if (len < cap) snprintf(buf + len, cap - len, "]");
  return buf;
}

size_t hk__graph_nbytes(hk_dtype dtype, int32_t rank, const int64_t *dims, int *ok) {
  size_t n = dtype == HK_DTYPE_STRING ? sizeof(const char *) : hk_dtype_size(dtype);
  int32_t i;
  *ok = 1;
  for (i = 0; i < rank; i++) {
    uint64_t d = dims[i] < 0 ? 0 : (uint64_t)dims[i];
    if (d != 0 && n > SIZE_MAX / d) {
      *ok = 0;
      return 0;
    }
    n *= (size_t)d;
  }
  return n;
}

static const char *dtype_name(hk_dtype d) { return hk_dtype_name(d); }

int hk__graph_dtype_valid(hk_dtype d) { return d > HK_DTYPE_INVALID && d < HK_DTYPE__COUNT; }

hk_code hk__graph_check_name(const char *name, const char *what, hk_status *st) {
  size_t i, len;
  if (!name) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s is NULL", what);
  len = strlen(name);
  if (len == 0 || len > HK__GRAPH_NAME_MAX)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s must be 1..%d bytes, got %zu", what, HK__GRAPH_NAME_MAX, len);
  for (i = 0; i < len; i++) {
    char c = name[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
             c == '/' || c == '-';
    if (!ok)
      return hk_status_set(st, HK_INVALID_ARGUMENT,
                           "%s '%s' has an invalid character at byte %zu (allowed: [A-Za-z0-9_./-])", what, name, i);
  }
  return HK_OK;
}

/* Validate a shape given as rank + dims; `min_dim` is 0, or -1 where "any" is allowed. */
hk_code hk__graph_check_shape(int32_t rank, const int64_t *dims, int64_t min_dim, const char *what, hk_status *st) {
  int32_t i;
  if (rank < 0 || rank > HK_MAX_RANK)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s rank %d is outside [0, %d]", what, (int)rank, HK_MAX_RANK);
  if (rank > 0 && !dims)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s dims is NULL but rank is %d", what, (int)rank);
  for (i = 0; i < rank; i++)
    if (dims[i] < min_dim)
      return hk_status_set(st, HK_INVALID_ARGUMENT, "%s dims[%d] is %" PRId64 ", must be >= %" PRId64, what, (int)i,
                           dims[i], min_dim);
  return HK_OK;
}

hk_code hk__graph_finalized_error(hk_status *st) {
  return hk_status_set(st, HK_FAILED_PRECONDITION, "%s", finalized_msg);
}

/* Grow `*arr` (element size `size`) so that it holds at least `need` elements. */
static int reserve(const hk_env *env, void **arr, size_t *cap, size_t need, size_t size) {
  size_t ncap;
  void *p;
  if (need <= *cap) return 1;
  ncap = *cap ? *cap : 8;
  while (ncap < need) {
    if (ncap > SIZE_MAX / 2 / size) return 0;
    ncap *= 2;
  }
  p = hk_env_realloc(env, *arr, ncap * size);
  if (!p) return 0;
  *arr = p;
  *cap = ncap;
  return 1;
}

hk_code hk__graph_oom(hk_status *st, const char *what) {
  return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hooked.graph: out of memory adding %s", what);
}

/* ---- name table (FNV-1a, linear probing) --------------------------------- */

static uint64_t hash_name(const char *s, size_t len) {
  uint64_t h = 1469598103934665603ull;
  size_t i;
  for (i = 0; i < len; i++) {
    h ^= (unsigned char)s[i];
    h *= 1099511628211ull;
  }
  return h;
}

int64_t hk__graph_find_op(const hk_graph *g, const char *name, size_t len) {
  size_t mask, i;
  if (g->capnames == 0) return -1;
  mask = g->capnames - 1;
  for (i = (size_t)hash_name(name, len) & mask;; i = (i + 1) & mask) {
    uint32_t e = g->names[i];
    const char *n;
    if (e == 0) return -1;
    n = g->ops[e - 1].name;
    if (strncmp(n, name, len) == 0 && n[len] == '\0') return (int64_t)e - 1;
  }
}

static void names_insert(uint32_t *table, size_t cap, const char *name, uint32_t op) {
  size_t mask = cap - 1, i;
  for (i = (size_t)hash_name(name, strlen(name)) & mask; table[i] != 0; i = (i + 1) & mask) {}
  table[i] = op + 1;
}

/* Keep the table at most half full, so probing always ends. */
static int names_reserve(hk_graph *g, size_t nops) {
  size_t ncap = g->capnames ? g->capnames : 16, i;
  uint32_t *t;
  if (nops * 2 <= g->capnames) return 1;
  while (nops * 2 > ncap) ncap *= 2;
  t = hk_env_calloc(&g->env, ncap, sizeof(*t));
  if (!t) return 0;
  for (i = 0; i < g->nops; i++) names_insert(t, ncap, g->ops[i].name, (uint32_t)i);
  hk_env_free(&g->env, g->names);
  g->names = t;
  g->capnames = ncap;
  return 1;
}

/* ---- adding ops ---------------------------------------------------------- */

static uint32_t *dup_u32(const hk_env *env, const uint32_t *src, size_t n, int *ok) {
  uint32_t *p;
  *ok = 1;
  if (n == 0) return NULL;
  p = hk_env_alloc(env, n * sizeof(*p));
  if (!p) {
    *ok = 0;
    return NULL;
  }
  memcpy(p, src, n * sizeof(*p));
  return p;
}

static void free_op(const hk_env *env, hk__graph_op *op) {
  hk_env_free(env, op->name);
  hk_env_free(env, op->inputs);
  hk_env_free(env, op->controls);
  hk_env_free(env, op->mutates);
  hk_env_free(env, op->aux);
  hk_env_free(env, op->constant.data);
}

/* Checks that the name is free, then adds. Nothing is changed on failure. */
hk_code hk__graph_add_op(hk_graph *g, const hk__graph_op_spec *sp, uint32_t *out_index, hk_status *st) {
  hk__graph_op op;
  char **slot_names = NULL;
  size_t i, namelen = strlen(sp->name);
  int ok1, ok2, ok3, ok4;

  if (hk__graph_find_op(g, sp->name, namelen) >= 0)
    return hk_status_set(st, HK_ALREADY_EXISTS, "An op named '%s' already exists in the graph.", sp->name);
  if (g->nops >= UINT32_MAX - 1 || g->nslots + sp->noutputs >= UINT32_MAX - 1)
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hooked.graph: too many ops adding '%s'", sp->name);
  if (!reserve(&g->env, (void **)&g->ops, &g->capops, g->nops + 1, sizeof(*g->ops)) ||
      !reserve(&g->env, (void **)&g->slots, &g->capslots, g->nslots + sp->noutputs, sizeof(*g->slots)) ||
      !names_reserve(g, g->nops + 1))
    return hk__graph_oom(st, sp->name);

  memset(&op, 0, sizeof(op));
  op.kind = sp->kind;
  op.kernel = sp->kernel;
  op.kernel_user = sp->kernel_user;
  op.ninputs = sp->ninputs;
  op.ncontrols = sp->ncontrols;
  op.nmutates = sp->nmutates;
  op.naux = sp->naux;
  op.initializes = sp->initializes;
  op.var = sp->var;
  op.out_base = (uint32_t)g->nslots;
  op.noutputs = (uint32_t)sp->noutputs;
  op.name = hk_env_strdup(&g->env, sp->name);
  op.inputs = dup_u32(&g->env, sp->inputs, sp->ninputs, &ok1);
  op.controls = dup_u32(&g->env, sp->controls, sp->ncontrols, &ok2);
  op.mutates = dup_u32(&g->env, sp->mutates, sp->nmutates, &ok3);
  op.aux = dup_u32(&g->env, sp->aux, sp->naux, &ok4);
  if (sp->noutputs) slot_names = hk_env_calloc(&g->env, sp->noutputs, sizeof(*slot_names));
  if (!op.name || !ok1 || !ok2 || !ok3 || !ok4 || (sp->noutputs && !slot_names)) goto fail;
  for (i = 0; i < sp->noutputs; i++) {
    size_t cap = namelen + 24;
    slot_names[i] = hk_env_alloc(&g->env, cap);
    if (!slot_names[i]) goto fail;
    snprintf(slot_names[i], cap, "%s:%zu", sp->name, i);
  }

  /* commit: nothing below can fail */
  for (i = 0; i < sp->noutputs; i++) {
    hk__graph_slot *s = &g->slots[g->nslots + i];
    memset(s, 0, sizeof(*s));
    s->op = (uint32_t)g->nops;
    s->index = (uint32_t)i;
    s->dtype = sp->outputs[i].dtype;
    s->rank = sp->outputs[i].rank;
    memcpy(s->dims, sp->outputs[i].dims, sizeof(s->dims));
    s->buf_bytes = sp->outputs[i].buf_bytes;
    s->name = slot_names[i];
  }
  hk_env_free(&g->env, slot_names);
  g->nslots += sp->noutputs;
  g->ops[g->nops] = op;
  names_insert(g->names, g->capnames, op.name, (uint32_t)g->nops);
  if (sp->ninputs > g->max_inputs) g->max_inputs = sp->ninputs;
  *out_index = (uint32_t)g->nops;
  g->nops++;
  return HK_OK;

fail:
  if (slot_names) {
    for (i = 0; i < sp->noutputs; i++) hk_env_free(&g->env, slot_names[i]);
    hk_env_free(&g->env, slot_names);
  }
  free_op(&g->env, &op);
  return hk__graph_oom(st, sp->name);
}

/* Common entry checks of every builder: graph, finalization, out, name. */
hk_code hk__graph_builder_entry(hk_graph *g, const void *out, const char *out_name, const char *name,
                                const char *name_what, hk_status *st) {
  if (!g) return hk_status_set(st, HK_INVALID_ARGUMENT, "g is NULL");
  if (g->finalized) return hk__graph_finalized_error(st);
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s is NULL", out_name);
  if (name_what) return hk__graph_check_name(name, name_what, st);
  return HK_OK;
}

/* Handle → index lookups, -1 when the handle is not of that kind. */
static int64_t tensor_of_handle(const hk_graph *g, hk_handle h) { return hk__graph_tensor_slot(g, h); }

/* An op handle, or a tensor handle standing for the op that produces it. */
static int64_t op_of_handle(const hk_graph *g, hk_handle h) {
  int64_t o = hk__graph_op_index(g, h);
  if (o < 0) {
    int64_t s = hk__graph_tensor_slot(g, h);
    if (s >= 0) o = g->slots[s].op;
  }
  return o;
}

/* A variable's value handle or op handle → variable index, or -1. */
int64_t hk__graph_var_of_handle(const hk_graph *g, hk_handle h) {
  int64_t o = op_of_handle(g, h);
  return o >= 0 && g->ops[o].kind == HK__OP_VARIABLE ? g->ops[o].var : -1;
}

/* Resolve n handles with `lookup`; the error names the array, the entry and
 * the kind of object (`noun`) it should have been. */
static hk_code resolve_all(const hk_graph *g, const hk_handle *hs, size_t n, const char *what,
                           int64_t (*lookup)(const hk_graph *, hk_handle), const char *noun, uint32_t *out,
                           hk_status *st) {
  size_t i;
  if (n && !hs) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s is NULL but its count is %zu", what, n);
  for (i = 0; i < n; i++) {
    int64_t x = lookup(g, hs[i]);
    if (x < 0) {
      char buf[40];
      return hk_status_set(st, HK_INVALID_ARGUMENT, "%s[%zu] (%s) is not %s of this graph", what, i,
                           hk__graph_handle_label(g, hs[i], buf, sizeof(buf)), noun);
    }
    out[i] = (uint32_t)x;
  }
  return HK_OK;
}

hk_code hk__graph_tensor_slots(const hk_graph *g, const hk_handle *hs, size_t n, const char *what, uint32_t *slots,
                               hk_status *st) {
  return resolve_all(g, hs, n, what, tensor_of_handle, "a tensor", slots, st);
}

hk_code hk__graph_op_indices(const hk_graph *g, const hk_handle *hs, size_t n, const char *what, uint32_t *ops,
                             hk_status *st) {
  return resolve_all(g, hs, n, what, op_of_handle, "an op", ops, st);
}

hk_code hk__graph_var_indices(const hk_graph *g, const hk_handle *hs, size_t n, const char *what, uint32_t *vars,
                              hk_status *st) {
  return resolve_all(g, hs, n, what, hk__graph_var_of_handle, "a variable", vars, st);
}

/* Scratch for handle → index conversions during a build. */
uint32_t *hk__graph_scratch(hk_graph *g, size_t n) { return hk_env_alloc(&g->env, (n ? n : 1) * sizeof(uint32_t)); }

/* ---- graph lifecycle ----------------------------------------------------- */

void hk__graph_destroy(void *self) {
  hk_graph *g = self;
  hk_env env;
  size_t i;
  if (!g) return;
  env = g->env;
  for (i = 0; i < g->nops; i++) free_op(&env, &g->ops[i]);
  for (i = 0; i < g->nslots; i++) hk_env_free(&env, g->slots[i].name);
  for (i = 0; i < g->nroles; i++) {
    hk_env_free(&env, g->roles[i].name);
    hk_env_free(&env, g->roles[i].handles);
  }
  hk_env_free(&env, g->ops);
  hk_env_free(&env, g->slots);
  hk_env_free(&env, g->vars);
  hk_env_free(&env, g->roles);
  hk_env_free(&env, g->names);
  hk_env_free(&env, g);
}

hk_code hk_graph_options_init(hk_graph_options *opts, uint32_t version) {
  return HK__STRUCT_INIT(opts, version, hk_graph_options, HK_GRAPH_OPTIONS_INIT);
}

hk_code hk_graph_new(hk_graph **out, const hk_graph_options *opts, hk_status *status) {
  hk_env env;
  hk_graph *g;
  hk_code rc;
  if (out) *out = NULL;
  if (!out) return hk_status_set(status, HK_INVALID_ARGUMENT, "out is NULL");
  HK__CHECK_VERSION(opts, HK_GRAPH_OPTIONS_VERSION, hk_graph_options, "hk_graph_new: opts", status);
  if (opts && opts->env) {
    rc = hk_env_check(opts->env, "opts->env", status);
    if (rc != HK_OK) return rc;
    hk_env_copy(&env, opts->env);
  } else {
    hk_env_init(&env, HK_ENV_VERSION);
  }
  g = hk_env_calloc(&env, 1, sizeof(*g));
  if (!g) return hk_status_set(status, HK_RESOURCE_EXHAUSTED, "hooked.graph: out of memory");
  g->env = env;
  rc = hk_executor_new(&g->executor, &hk__graph_vtable, g, &g->env, status);
  if (rc != HK_OK) {
    hk__graph_destroy(g); /* destroy is not called by a failed hk_executor_new */
    return rc;
  }
  *out = g;
  return HK_OK;
}

void hk_graph_free(hk_graph *g) {
  if (!g) return;
  /* hk_executor_free calls hk__graph_destroy(g) exactly once; g is gone after it. */
  hk_executor_free(g->executor);
}

hk_executor *hk_graph_executor(hk_graph *g) { return g ? g->executor : NULL; }

hk_code hk_graph_finalize(hk_graph *g, hk_status *status) {
  if (!g) return hk_status_set(status, HK_INVALID_ARGUMENT, "g is NULL");
  return hk_executor_finalize(g->executor, status);
}

/* ---- variables ----------------------------------------------------------- */

static hk_code add_variable(hk_graph *g, hk_handle *out, const hk_variable_def *def, hk_status *st) {
  hk__graph_var var;
  hk__graph_out_decl od;
  hk__graph_op_spec sp;
  uint32_t opi;
  int ok;
  hk_code rc;

  memset(&var, 0, sizeof(var));
  var.dtype = def->dtype;
  var.rank = def->rank;
  if (def->rank > 0) memcpy(var.dims, def->dims, (size_t)def->rank * sizeof(int64_t));
  var.nbytes = hk__graph_nbytes(def->dtype, def->rank, def->dims, &ok);
  if (!ok) return hk_status_set(st, HK_INVALID_ARGUMENT, "def->dims: the byte size of '%s' overflows", def->name);
  var.init = def->init;
  var.flags = def->flags & (HK_VAR_LOCAL | HK_VAR_TRAINABLE | HK_VAR_OPTIONAL | HK_VAR_NON_FINITE_OK);
  if (def->external_data) var.flags |= HK_VAR_EXTERNAL;
  var.external = def->external_data;

  if (!reserve(&g->env, (void **)&g->vars, &g->capvars, g->nvars + 1, sizeof(*g->vars)))
    return hk__graph_oom(st, def->name);
  memset(&od, 0, sizeof(od));
  od.dtype = var.dtype;
  od.rank = var.rank;
  memcpy(od.dims, var.dims, sizeof(od.dims));
  memset(&sp, 0, sizeof(sp));
  sp.name = def->name;
  sp.kind = HK__OP_VARIABLE;
  sp.outputs = &od;
  sp.noutputs = 1;
  sp.var = (int64_t)g->nvars;
  rc = hk__graph_add_op(g, &sp, &opi, st);
  if (rc != HK_OK) return rc;
  var.op = opi;
  g->vars[g->nvars++] = var;
  *out = hk__graph_tensor_handle(g->ops[opi].out_base);
  return HK_OK;
}

hk_code hk_graph_variable(hk_graph *g, hk_handle *out, const hk_variable_def *def, hk_status *status) {
  hk_code rc;
  int ok;
  if (out) *out = HK_NO_HANDLE;
  rc = hk__graph_builder_entry(g, out, "out", NULL, NULL, status);
  if (rc != HK_OK) return rc;
  if (!def) return hk_status_set(status, HK_INVALID_ARGUMENT, "def is NULL");
  HK__CHECK_VERSION(def, HK_VARIABLE_DEF_VERSION, hk_variable_def, "hk_graph_variable: def", status);
  rc = hk__graph_check_name(def->name, "def->name", status);
  if (rc != HK_OK) return rc;
  if (!hk__graph_dtype_valid(def->dtype) || def->dtype == HK_DTYPE_STRING)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "def->dtype (%d) of '%s' is not a valid variable dtype",
                         (int)def->dtype, def->name);
  rc = hk__graph_check_shape(def->rank, def->dims, 0, "def", status);
  if (rc != HK_OK) return rc;
  if (def->flags &
      ~(uint32_t)(HK_VAR_LOCAL | HK_VAR_TRAINABLE | HK_VAR_EXTERNAL | HK_VAR_OPTIONAL | HK_VAR_NON_FINITE_OK))
    return hk_status_set(status, HK_INVALID_ARGUMENT, "def->flags 0x%x of '%s' has unknown bits", (unsigned)def->flags,
                         def->name);
  if ((def->flags & HK_VAR_EXTERNAL) && !def->external_data)
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         "def->flags has HK_VAR_EXTERNAL but def->external_data is NULL for '%s'", def->name);
  (void)hk__graph_nbytes(def->dtype, def->rank, def->dims, &ok);
  if (!ok) return hk_status_set(status, HK_INVALID_ARGUMENT, "def->dims: the byte size of '%s' overflows", def->name);
  rc = hk__graph_check_initializer(&def->init, def->dtype, "def->init", status);
  if (rc != HK_OK) return rc;
  return add_variable(g, out, def, status);
}

/* ---- roles --------------------------------------------------------------- */

static hk__graph_role *find_role(const hk_graph *g, const char *name) {
  size_t i;
  for (i = 0; i < g->nroles; i++)
    if (strcmp(g->roles[i].name, name) == 0) return &g->roles[i];
  return NULL;
}

/* Make room for one more handle under `name`, creating the role if needed. */
static hk__graph_role *role_reserve(hk_graph *g, const char *name) {
  hk__graph_role *r = find_role(g, name);
  if (!r) {
    char *copy;
    if (!reserve(&g->env, (void **)&g->roles, &g->caproles, g->nroles + 1, sizeof(*g->roles))) return NULL;
    copy = hk_env_strdup(&g->env, name);
    if (!copy) return NULL;
    r = &g->roles[g->nroles++];
    memset(r, 0, sizeof(*r));
    r->name = copy;
  }
  if (!reserve(&g->env, (void **)&r->handles, &r->cap, r->n + 1, sizeof(*r->handles))) return NULL;
  return r;
}

hk_code hk__graph_role_get(void *self, const char *role, hk_handle *out, size_t cap, size_t *count, hk_status *st) {
  hk_graph *g = self;
  hk__graph_role *r;
  size_t i;
  if (!role) return hk_status_set(st, HK_INVALID_ARGUMENT, "role is NULL");
  if (!count) return hk_status_set(st, HK_INVALID_ARGUMENT, "count is NULL");
  if (cap && !out) return hk_status_set(st, HK_INVALID_ARGUMENT, "out is NULL but cap is %zu", cap);
  r = find_role(g, role);
  *count = r ? r->n : 0;
  for (i = 0; r && i < r->n && i < cap; i++) out[i] = r->handles[i];
  return HK_OK;
}

hk_code hk__graph_role_add(void *self, const char *role, hk_handle handle, hk_status *st) {
  hk_graph *g = self;
  hk__graph_role *r;
  if (g->finalized) return hk__graph_finalized_error(st);
  if (!role || !*role) return hk_status_set(st, HK_INVALID_ARGUMENT, "role is NULL or empty");
  if (hk__graph_op_index(g, handle) < 0 && hk__graph_tensor_slot(g, handle) < 0)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "handle #%" PRIx64 " for role '%s' is not an op or tensor of this graph", (uint64_t)handle,
                         role);
  r = role_reserve(g, role);
  if (!r) return hk__graph_oom(st, role);
  r->handles[r->n++] = handle;
  return HK_OK;
}

/* ---- global step --------------------------------------------------------- */

hk_code hk_graph_create_global_step(hk_graph *g, hk_handle *out, hk_status *status) {
  hk_variable_def def = HK_VARIABLE_DEF_INIT;
  hk__graph_role *r;
  hk_code rc;
  if (out) *out = HK_NO_HANDLE;
  rc = hk__graph_builder_entry(g, out, "out", NULL, NULL, status);
  if (rc != HK_OK) return rc;
  r = find_role(g, HK_ROLE_GLOBAL_STEP);
  if ((r && r->n > 0) || hk__graph_find_op(g, "global_step", 11) >= 0)
    return hk_status_set(status, HK_ALREADY_EXISTS, "\"global_step\" already exists.");
  /* reserve the role slot first so that nothing can fail after the variable exists */
  r = role_reserve(g, HK_ROLE_GLOBAL_STEP);
  if (!r) return hk__graph_oom(status, "global_step");
  def.name = "global_step";
  def.dtype = HK_DTYPE_I64;
  def.rank = 0;
  def.init.kind = HK_INIT_ZEROS;
  def.flags = 0;
  rc = add_variable(g, out, &def, status);
  if (rc != HK_OK) return rc;
  r->handles[r->n++] = *out;
  return HK_OK;
}

hk_code hk_graph_get_or_create_global_step(hk_graph *g, hk_handle *out, hk_status *status) {
  hk__graph_role *r;
  int64_t v = -1;
  if (out) *out = HK_NO_HANDLE;
  if (!g) return hk_status_set(status, HK_INVALID_ARGUMENT, "g is NULL");
  if (!out) return hk_status_set(status, HK_INVALID_ARGUMENT, "out is NULL");
  r = find_role(g, HK_ROLE_GLOBAL_STEP);
  if (r && r->n == 1) {
    v = hk__graph_var_of_handle(g, r->handles[0]);
  } else if (r && r->n > 1) {
    hk_env_log(&g->env, HK_LOG_WARNING, "Multiple tensors in global_step collection.");
  } else {
    int64_t o = hk__graph_find_op(g, "global_step", 11);
    if (o >= 0 && g->ops[o].kind == HK__OP_VARIABLE) v = g->ops[o].var;
  }
  if (v >= 0) {
    const hk__graph_var *var = &g->vars[v];
    char shape[96];
    if (!hk_dtype_is_integer(var->dtype))
      return hk_status_set(status, HK_INVALID_ARGUMENT, "Existing \"global_step\" does not have integer type: %s",
                           dtype_name(var->dtype));
    if (var->rank != 0)
      return hk_status_set(status, HK_INVALID_ARGUMENT, "Existing \"global_step\" is not scalar: %s",
                           hk__graph_shape_str(var->rank, var->dims, shape, sizeof(shape)));
    *out = hk__graph_tensor_handle(g->ops[var->op].out_base);
    return HK_OK;
  }
  return hk_graph_create_global_step(g, out, status);
}
