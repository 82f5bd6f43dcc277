/*
 * The embedded default executor: graph building, names and handles, the
 * role registry, default ops, the text description and the vtable
 * (contract H30, C3, C61, C62, C143, C144).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "graph/graph_internal.h"
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

static int dtype_valid(hk_dtype d) { return d > HK_DTYPE_INVALID && d < HK_DTYPE__COUNT; }

static hk_code check_name(const char *name, const char *what, hk_status *st) {
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
static hk_code check_shape(int32_t rank, const int64_t *dims, int64_t min_dim, const char *what, hk_status *st) {
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

static hk_code finalized_error(hk_status *st) { return hk_status_set(st, HK_FAILED_PRECONDITION, "%s", finalized_msg); }

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

static hk_code oom(hk_status *st, const char *what) {
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

typedef struct out_decl {
  hk_dtype dtype;
  int32_t rank;
  int64_t dims[HK_MAX_RANK];
  size_t buf_bytes;
} out_decl;

typedef struct op_spec {
  const char *name;
  hk__graph_op_kind kind;
  hk_kernel_fn kernel;
  void *kernel_user;
  const uint32_t *inputs;
  size_t ninputs;
  const uint32_t *controls;
  size_t ncontrols;
  const uint32_t *mutates;
  size_t nmutates;
  int initializes;
  const out_decl *outputs;
  size_t noutputs;
  const uint32_t *aux;
  size_t naux;
  int64_t var;
} op_spec;

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
static hk_code add_op(hk_graph *g, const op_spec *sp, uint32_t *out_index, hk_status *st) {
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
    return oom(st, sp->name);

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
  return oom(st, sp->name);
}

/* Common entry checks of every builder: graph, finalization, out, name. */
static hk_code builder_entry(hk_graph *g, const void *out, const char *out_name, const char *name,
                             const char *name_what, hk_status *st) {
  if (!g) return hk_status_set(st, HK_INVALID_ARGUMENT, "g is NULL");
  if (g->finalized) return finalized_error(st);
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s is NULL", out_name);
  if (name_what) return check_name(name, name_what, st);
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
static int64_t var_of_handle(const hk_graph *g, hk_handle h) {
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

static hk_code tensor_slots(const hk_graph *g, const hk_handle *hs, size_t n, const char *what, uint32_t *slots,
                            hk_status *st) {
  return resolve_all(g, hs, n, what, tensor_of_handle, "a tensor", slots, st);
}

static hk_code op_indices(const hk_graph *g, const hk_handle *hs, size_t n, const char *what, uint32_t *ops,
                          hk_status *st) {
  return resolve_all(g, hs, n, what, op_of_handle, "an op", ops, st);
}

static hk_code var_indices(const hk_graph *g, const hk_handle *hs, size_t n, const char *what, uint32_t *vars,
                           hk_status *st) {
  return resolve_all(g, hs, n, what, var_of_handle, "a variable", vars, st);
}

/* Scratch for handle → index conversions during a build. */
static uint32_t *scratch(hk_graph *g, size_t n) { return hk_env_alloc(&g->env, (n ? n : 1) * sizeof(uint32_t)); }

/* ---- graph lifecycle ----------------------------------------------------- */

static void graph_destroy(void *self) {
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

static const hk_executor_vtable graph_vtable;

hk_code hk_graph_new(hk_graph **out, const hk_graph_options *opts, hk_status *status) {
  hk_env env;
  hk_graph *g;
  hk_code rc;
  if (out) *out = NULL;
  if (!out) return hk_status_set(status, HK_INVALID_ARGUMENT, "out is NULL");
  if (opts && (opts->version == 0 || opts->version > HK_GRAPH_OPTIONS_VERSION))
    return hk_status_set(status, HK_INVALID_ARGUMENT, "opts->version is %u, expected %u", (unsigned)opts->version,
                         (unsigned)HK_GRAPH_OPTIONS_VERSION);
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
  rc = hk_executor_new(&g->executor, &graph_vtable, g, &g->env, status);
  if (rc != HK_OK) {
    graph_destroy(g); /* destroy is not called by a failed hk_executor_new */
    return rc;
  }
  *out = g;
  return HK_OK;
}

void hk_graph_free(hk_graph *g) {
  if (!g) return;
  /* hk_executor_free calls graph_destroy(g) exactly once; g is gone after it. */
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
  out_decl od;
  op_spec sp;
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

  if (!reserve(&g->env, (void **)&g->vars, &g->capvars, g->nvars + 1, sizeof(*g->vars))) return oom(st, def->name);
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
  rc = add_op(g, &sp, &opi, st);
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
  rc = builder_entry(g, out, "out", NULL, NULL, status);
  if (rc != HK_OK) return rc;
  if (!def) return hk_status_set(status, HK_INVALID_ARGUMENT, "def is NULL");
  if (def->version == 0 || def->version > HK_VARIABLE_DEF_VERSION)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "def->version is %u, expected %u", (unsigned)def->version,
                         (unsigned)HK_VARIABLE_DEF_VERSION);
  rc = check_name(def->name, "def->name", status);
  if (rc != HK_OK) return rc;
  if (!dtype_valid(def->dtype) || def->dtype == HK_DTYPE_STRING)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "def->dtype (%d) of '%s' is not a valid variable dtype",
                         (int)def->dtype, def->name);
  rc = check_shape(def->rank, def->dims, 0, "def", status);
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

static hk_code graph_role_get(void *self, const char *role, hk_handle *out, size_t cap, size_t *count, hk_status *st) {
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

static hk_code graph_role_add(void *self, const char *role, hk_handle handle, hk_status *st) {
  hk_graph *g = self;
  hk__graph_role *r;
  if (g->finalized) return finalized_error(st);
  if (!role || !*role) return hk_status_set(st, HK_INVALID_ARGUMENT, "role is NULL or empty");
  if (hk__graph_op_index(g, handle) < 0 && hk__graph_tensor_slot(g, handle) < 0)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "handle #%" PRIx64 " for role '%s' is not an op or tensor of this graph", (uint64_t)handle,
                         role);
  r = role_reserve(g, role);
  if (!r) return oom(st, role);
  r->handles[r->n++] = handle;
  return HK_OK;
}

/* ---- global step (C143, C144) -------------------------------------------- */

hk_code hk_graph_create_global_step(hk_graph *g, hk_handle *out, hk_status *status) {
  hk_variable_def def = HK_VARIABLE_DEF_INIT;
  hk__graph_role *r;
  hk_code rc;
  if (out) *out = HK_NO_HANDLE;
  rc = builder_entry(g, out, "out", NULL, NULL, status);
  if (rc != HK_OK) return rc;
  r = find_role(g, HK_ROLE_GLOBAL_STEP);
  if ((r && r->n > 0) || hk__graph_find_op(g, "global_step", 11) >= 0)
    return hk_status_set(status, HK_ALREADY_EXISTS, "\"global_step\" already exists.");
  /* reserve the role slot first so that nothing can fail after the variable exists */
  r = role_reserve(g, HK_ROLE_GLOBAL_STEP);
  if (!r) return oom(status, "global_step");
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
    v = var_of_handle(g, r->handles[0]);
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

/* ---- placeholders and constants ------------------------------------------ */

hk_code hk_graph_placeholder(hk_graph *g, hk_handle *out, const char *name, hk_dtype dtype, int32_t rank,
                             const int64_t *dims, hk_status *status) {
  out_decl od;
  op_spec sp;
  uint32_t opi;
  hk_code rc;
  if (out) *out = HK_NO_HANDLE;
  rc = builder_entry(g, out, "out", name, "name", status);
  if (rc != HK_OK) return rc;
  if (!dtype_valid(dtype))
    return hk_status_set(status, HK_INVALID_ARGUMENT, "dtype (%d) of placeholder '%s' is invalid", (int)dtype, name);
  /* -1 is TF's unknown dimension: the feed decides */
  rc = check_shape(rank, dims, -1, "placeholder", status);
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
  rc = add_op(g, &sp, &opi, status);
  if (rc != HK_OK) return rc;
  *out = hk__graph_tensor_handle(g->ops[opi].out_base);
  return HK_OK;
}

hk_code hk_graph_constant(hk_graph *g, hk_handle *out, const char *name, const hk_tensor *value, hk_status *status) {
  out_decl od;
  op_spec sp;
  uint32_t opi;
  hk_code rc;
  size_t nbytes;
  void *copy = NULL;
  int ok;
  if (out) *out = HK_NO_HANDLE;
  rc = builder_entry(g, out, "out", name, "name", status);
  if (rc != HK_OK) return rc;
  if (!value) return hk_status_set(status, HK_INVALID_ARGUMENT, "value is NULL");
  if (!dtype_valid(value->dtype) || value->dtype == HK_DTYPE_STRING)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "value->dtype (%d) of constant '%s' is not supported",
                         (int)value->dtype, name);
  rc = check_shape(value->rank, value->dims, 0, "value", status);
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
    if (!copy) return oom(status, name);
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
  rc = add_op(g, &sp, &opi, status);
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
  out_decl *od = NULL;
  op_spec sp;
  size_t i;
  hk_code rc;
  if (out) *out = HK_NO_HANDLE;
  rc = builder_entry(g, out, "out", NULL, NULL, status);
  if (rc != HK_OK) return rc;
  if (!def) return hk_status_set(status, HK_INVALID_ARGUMENT, "def is NULL");
  if (def->version == 0 || def->version > HK_OP_DEF_VERSION)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "def->version is %u, expected %u", (unsigned)def->version,
                         (unsigned)HK_OP_DEF_VERSION);
  rc = check_name(def->name, "def->name", status);
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

  in = scratch(g, def->ninputs);
  ctl = scratch(g, def->ncontrol_inputs);
  mut = scratch(g, def->nmutates);
  od = hk_env_calloc(&g->env, def->noutputs ? def->noutputs : 1, sizeof(*od));
  if (!in || !ctl || !mut || !od) {
    rc = oom(status, def->name);
    goto done;
  }
  rc = tensor_slots(g, def->inputs, def->ninputs, "def->inputs", in, status);
  if (rc != HK_OK) goto done;
  rc = op_indices(g, def->control_inputs, def->ncontrol_inputs, "def->control_inputs", ctl, status);
  if (rc != HK_OK) goto done;
  rc = var_indices(g, def->mutates, def->nmutates, "def->mutates", mut, status);
  if (rc != HK_OK) goto done;
  for (i = 0; i < def->noutputs; i++) {
    const hk_output_spec *os = &def->outputs[i];
    char what[48];
    int ok;
    snprintf(what, sizeof(what), "def->outputs[%zu]", i);
    if (!dtype_valid(os->dtype)) {
      rc = hk_status_set(status, HK_INVALID_ARGUMENT, "%s.dtype (%d) is invalid", what, (int)os->dtype);
      goto done;
    }
    rc = check_shape(os->rank, os->dims, 0, what, status);
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
  rc = add_op(g, &sp, &opi, status);
  if (rc == HK_OK) *out = hk__graph_op_handle(opi);
done:
  hk_env_free(&g->env, in);
  hk_env_free(&g->env, ctl);
  hk_env_free(&g->env, mut);
  hk_env_free(&g->env, od);
  return rc;
}

hk_code hk_graph_op_output(hk_graph *g, hk_handle op, int32_t index, hk_handle *out, hk_status *status) {
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
  out_decl od;
  op_spec sp;
  int64_t t;
  hk_code rc;
  if (out_op) *out_op = HK_NO_HANDLE;
  rc = builder_entry(g, out_op, "out_op", name, "name", st);
  if (rc != HK_OK) return rc;
  t = var_of_handle(g, var);
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
                         g->ops[v->op].name, dtype_name(v->dtype));
  if (s->dtype != v->dtype || !shapes_compatible(s, v)) {
    char a[96], b[96];
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s '%s' (%s %s) does not match var '%s' (%s %s)", vname, s->name,
                         dtype_name(s->dtype), hk__graph_shape_str(s->rank, s->dims, a, sizeof(a)), g->ops[v->op].name,
                         dtype_name(v->dtype), hk__graph_shape_str(v->rank, v->dims, b, sizeof(b)));
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
  rc = add_op(g, &sp, &opi, st);
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
  op_spec sp;
  hk_code rc;
  if (out_op) *out_op = HK_NO_HANDLE;
  rc = builder_entry(g, out_op, "out_op", name, "name", status);
  if (rc != HK_OK) return rc;
  if (n && !ops) return hk_status_set(status, HK_INVALID_ARGUMENT, "ops is NULL but n is %zu", n);
  if (n > ((size_t)1 << 24)) return hk_status_set(status, HK_INVALID_ARGUMENT, "n %zu is too large", n);
  ctl = scratch(g, n);
  if (!ctl) return oom(status, name);
  rc = op_indices(g, ops, n, "ops", ctl, status);
  if (rc == HK_OK) {
    memset(&sp, 0, sizeof(sp));
    sp.name = name;
    sp.kind = HK__OP_NOOP;
    sp.controls = ctl;
    sp.ncontrols = n;
    sp.var = -1;
    rc = add_op(g, &sp, &opi, status);
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
  sel = scratch(g, n ? n : g->nvars);
  if (!sel) return oom(st, "a variable list");
  if (n) {
    rc = var_indices(g, vars, n, "vars", sel, st);
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

static hk_code build_init(hk_graph *g, hk_handle *out_op, const char *name, const hk_handle *vars, size_t n,
                          uint32_t local_want, hk_status *st) {
  uint32_t *sel, opi;
  size_t i, k = 0, nsel;
  op_spec sp;
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
  rc = add_op(g, &sp, &opi, st);
  if (rc == HK_OK) *out_op = hk__graph_op_handle(opi);
  hk_env_free(&g->env, sel);
  return rc;
}

hk_code hk_graph_init_op(hk_graph *g, hk_handle *out_op, const char *name, const hk_handle *vars, size_t n,
                         hk_status *status) {
  hk_code rc;
  if (out_op) *out_op = HK_NO_HANDLE;
  rc = builder_entry(g, out_op, "out_op", name, "name", status);
  if (rc != HK_OK) return rc;
  return build_init(g, out_op, name, vars, n, 0, status);
}

static hk_code build_report(hk_graph *g, hk_handle *out_op, const char *name, const hk_handle *vars, size_t n,
                            uint32_t mask, uint32_t want, hk_status *st) {
  uint32_t *sel, opi;
  size_t nsel;
  out_decl od;
  op_spec sp;
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
  rc = add_op(g, &sp, &opi, st);
  if (rc == HK_OK) *out_op = hk__graph_op_handle(opi);
  hk_env_free(&g->env, sel);
  return rc;
}

hk_code hk_graph_report_uninitialized(hk_graph *g, hk_handle *out_op, const char *name, const hk_handle *vars, size_t n,
                                      hk_status *status) {
  hk_code rc;
  if (out_op) *out_op = HK_NO_HANDLE;
  rc = builder_entry(g, out_op, "out_op", name, "name", status);
  if (rc != HK_OK) return rc;
  return build_report(g, out_op, name, vars, n, 0, 0, status);
}

/* ---- default ops (C62) --------------------------------------------------- */

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
  if (g->finalized) return finalized_error(st);
  switch (kind) {
    case HK_DEFAULT_INIT_OP:
      unique_name(g, "init", name, sizeof(name));
      return build_init(g, out, name, NULL, 0, 0, st);
    case HK_DEFAULT_LOCAL_INIT_OP:
      unique_name(g, "init_local", name, sizeof(name));
      return build_init(g, out, name, NULL, 0, HK_VAR_LOCAL, st);
    case HK_DEFAULT_READY_OP:
      unique_name(g, "report_uninitialized_variables", name, sizeof(name));
      rc = build_report(g, &op, name, NULL, 0, 0, 0, st);
      break;
    case HK_DEFAULT_READY_FOR_LOCAL_INIT_OP:
      unique_name(g, "report_uninitialized_global_variables", name, sizeof(name));
      rc = build_report(g, &op, name, NULL, 0, HK_VAR_LOCAL, 0, st);
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
      snprintf(line, sizeof(line), "%s%s %s", k ? ", " : "", dtype_name(s->dtype),
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

static const hk_executor_vtable graph_vtable = {
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
    graph_role_get,
    graph_role_add,
    graph_default_op,
    graph_describe,
    graph_control,
    graph_destroy,
    hk__graph_variable_storage,
};
