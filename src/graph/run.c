/*
 * The embedded default executor: raw sessions and runs.
 *
 * A raw session owns the values of graph-owned variables (TF semantics: each
 * new session starts with them uninitialized), one pre-sized buffer per op
 * output, and a small cache of execution plans keyed by the run's handle
 * arrays. Once a plan is cached, a run only reads and writes preallocated
 * memory: steady-state runs call no allocator.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "graph/graph_internal.h"
#include "util/common.h"

#include <string.h>

#define PLAN_CACHE_SIZE 8

typedef enum fetch_kind {
  FETCH_FEED = 1, /* the fed value */
  FETCH_SLOT,     /* an op output buffer, after the run */
  FETCH_CONST,    /* a constant's graph-owned data */
  FETCH_VAR_VIEW, /* a variable no op of the run mutates: its storage */
  FETCH_VAR_SNAP  /* a variable the run mutates: copied at run start */
} fetch_kind;

typedef struct fetch_src {
  fetch_kind kind;
  uint32_t index; /* feed index, slot, op or variable */
  void *snap;     /* FETCH_VAR_SNAP: owned copy buffer */
} fetch_src;

typedef struct plan {
  int used;
  uint64_t stamp; /* last use, for least-recently-used replacement */
  hk_handle *key; /* feeds' tensors, then fetches, then targets */
  size_t nfeeds, nfetches, ntargets;
  uint32_t *exec; /* ops to execute, in dependency (= index) order */
  size_t nexec;
  int32_t *slot_feed; /* per slot known at build: feed index or -1 */
  size_t nslots;
  fetch_src *fetch;
} plan;

typedef struct gsession {
  hk_graph *g;
  size_t nops, nslots, nvars, nin; /* graph sizes the arrays below cover */
  unsigned char *var_init;
  void **var_data;     /* graph-owned buffer or the host's external_data */
  hk_tensor *var_view; /* what hk_kernel_context_variable hands out */
  hk_tensor *out;      /* per slot: the op output after its last execution */
  void **out_buf;      /* per slot: pre-sized buffer */
  hk_tensor *in;       /* kernel input scratch */
  hk_op_trace *trace;  /* one per op at most */
  plan plans[PLAN_CACHE_SIZE];
  uint64_t clock;
} gsession;

struct hk_kernel_context {
  hk_graph *g;
  gsession *s;
  const hk__graph_op *op;
};

/* ---- kernel context ------------------------------------------------------- */

hk_tensor *hk_kernel_context_variable(hk_kernel_context *ctx, size_t i) {
  if (!ctx || !ctx->op || i >= ctx->op->nmutates) return NULL;
  return &ctx->s->var_view[ctx->op->mutates[i]];
}

const hk_env *hk_kernel_context_env(hk_kernel_context *ctx) { return ctx ? &ctx->g->env : NULL; }

const hk__graph_op *hk__kernel_op(hk_kernel_context *ctx) { return ctx->op; }

hk_graph *hk__kernel_graph(hk_kernel_context *ctx) { return ctx->g; }

int hk__kernel_var_initialized(hk_kernel_context *ctx, size_t var) { return ctx->s->var_init[var] != 0; }

/* ---- session state --------------------------------------------------------- */

static hk_code uninitialized(hk_status *st, const hk_graph *g, size_t var) {
  return hk_status_set(st, HK_FAILED_PRECONDITION, "Attempting to use uninitialized value %s",
                       g->ops[g->vars[var].op].name);
}

static void var_tensor(const hk_graph *g, const gsession *s, size_t v, hk_tensor *t) {
  const hk__graph_var *var = &g->vars[v];
  memset(t, 0, sizeof(*t));
  t->dtype = var->dtype;
  t->rank = var->rank;
  memcpy(t->dims, var->dims, sizeof(t->dims));
  t->data = s->var_data[v];
  t->nbytes = var->nbytes;
}

static void reset_output(const hk_graph *g, const gsession *s, size_t slot) {
  const hk__graph_slot *sl = &g->slots[slot];
  hk_tensor *t = &s->out[slot];
  int32_t i;
  t->dtype = sl->dtype;
  t->rank = sl->rank;
  for (i = 0; i < HK_MAX_RANK; i++) t->dims[i] = (i < sl->rank && sl->dims[i] > 0) ? sl->dims[i] : 0;
  t->data = s->out_buf[slot];
  t->nbytes = sl->buf_bytes;
}

static int grow(const hk_env *env, void **p, size_t n, size_t size) {
  void *q;
  if (n == 0) return 1;
  q = hk_env_realloc(env, *p, n * size);
  if (!q) return 0;
  *p = q;
  return 1;
}

/* Bring the session's arrays up to the graph's current size (ops may be added
 * to a graph that is not finalized while a session is open). */
static hk_code sync(gsession *s, hk_status *st) {
  hk_graph *g = s->g;
  const hk_env *env = &g->env;
  size_t v, k;
  if (s->nops == g->nops && s->nslots == g->nslots && s->nvars == g->nvars && s->nin >= g->max_inputs) return HK_OK;
  if (!grow(env, (void **)&s->var_init, g->nvars, sizeof(*s->var_init)) ||
      !grow(env, (void **)&s->var_data, g->nvars, sizeof(*s->var_data)) ||
      !grow(env, (void **)&s->var_view, g->nvars, sizeof(*s->var_view)) ||
      !grow(env, (void **)&s->out, g->nslots, sizeof(*s->out)) ||
      !grow(env, (void **)&s->out_buf, g->nslots, sizeof(*s->out_buf)) ||
      !grow(env, (void **)&s->in, g->max_inputs, sizeof(*s->in)) ||
      !grow(env, (void **)&s->trace, g->nops, sizeof(*s->trace)))
    goto oom;
  for (v = s->nvars; v < g->nvars; v++) s->var_data[v] = NULL;
  for (k = s->nslots; k < g->nslots; k++) s->out_buf[k] = NULL;
  for (v = s->nvars; v < g->nvars; v++) {
    const hk__graph_var *var = &g->vars[v];
    if (var->external) {
      s->var_data[v] = var->external;
    } else if (var->nbytes) {
      s->var_data[v] = hk_env_calloc(env, 1, var->nbytes);
      if (!s->var_data[v]) goto undo;
    }
  }
  for (k = s->nslots; k < g->nslots; k++) {
    if (g->slots[k].buf_bytes) {
      s->out_buf[k] = hk_env_calloc(env, 1, g->slots[k].buf_bytes);
      if (!s->out_buf[k]) goto undo;
    }
  }
  /* commit */
  for (v = s->nvars; v < g->nvars; v++) {
    const hk__graph_var *var = &g->vars[v];
    s->var_init[v] = var->external && var->init.kind == HK_INIT_NONE;
    var_tensor(g, s, v, &s->var_view[v]);
  }
  for (k = s->nslots; k < g->nslots; k++) reset_output(g, s, k);
  s->nops = g->nops;
  s->nslots = g->nslots;
  s->nvars = g->nvars;
  if (g->max_inputs > s->nin) s->nin = g->max_inputs;
  return HK_OK;
undo:
  for (v = s->nvars; v < g->nvars; v++) {
    if (!g->vars[v].external) hk_env_free(env, s->var_data[v]);
    s->var_data[v] = NULL;
  }
  for (k = s->nslots; k < g->nslots; k++) {
    hk_env_free(env, s->out_buf[k]);
    s->out_buf[k] = NULL;
  }
oom:
  return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hooked.graph: out of memory allocating session state");
}

static void plan_clear(const hk_graph *g, plan *p) {
  size_t i;
  if (!p->used) return;
  if (p->fetch)
    for (i = 0; i < p->nfetches; i++) hk_env_free(&g->env, p->fetch[i].snap);
  hk_env_free(&g->env, p->key);
  hk_env_free(&g->env, p->exec);
  hk_env_free(&g->env, p->slot_feed);
  hk_env_free(&g->env, p->fetch);
  memset(p, 0, sizeof(*p));
}

static void session_free(gsession *s) {
  hk_graph *g = s->g;
  size_t i;
  for (i = 0; i < PLAN_CACHE_SIZE; i++) plan_clear(g, &s->plans[i]);
  for (i = 0; i < s->nvars; i++)
    if (!g->vars[i].external) hk_env_free(&g->env, s->var_data[i]);
  for (i = 0; i < s->nslots; i++) hk_env_free(&g->env, s->out_buf[i]);
  hk_env_free(&g->env, s->var_init);
  hk_env_free(&g->env, s->var_data);
  hk_env_free(&g->env, s->var_view);
  hk_env_free(&g->env, s->out);
  hk_env_free(&g->env, s->out_buf);
  hk_env_free(&g->env, s->in);
  hk_env_free(&g->env, s->trace);
  hk_env_free(&g->env, s);
}

hk_code hk__graph_open(void *self, void **out_session, hk_status *status) {
  hk_graph *g = self;
  gsession *s;
  hk_code rc;
  if (!out_session) return hk_status_set(status, HK_INVALID_ARGUMENT, "out_session is NULL");
  *out_session = NULL;
  s = hk_env_calloc(&g->env, 1, sizeof(*s));
  if (!s) return hk_status_set(status, HK_RESOURCE_EXHAUSTED, "hooked.graph: out of memory");
  s->g = g;
  rc = sync(s, status);
  if (rc != HK_OK) {
    session_free(s);
    return rc;
  }
  *out_session = s;
  return HK_OK;
}

hk_code hk__graph_close(void *self, void *session, hk_status *status) {
  hk_graph *g = self;
  (void)status;
  if (session && g->snap && g->snap_session == session) {
    /* The snapshot's copy reads this session's storage. */
    hk_snapshot_complete(g->snap);
    g->snap = NULL;
    g->snap_session = NULL;
  }
  if (session) session_free(session);
  return HK_OK;
}

/* ---- plans ------------------------------------------------------------------- */

static int plan_matches(const plan *p, const hk_run_args *a) {
  size_t i;
  const hk_handle *k = p->key;
  if (!p->used || p->nfeeds != a->nfeeds || p->nfetches != a->nfetches || p->ntargets != a->ntargets) return 0;
  for (i = 0; i < a->nfeeds; i++)
    if (k[i] != a->feeds[i].tensor) return 0;
  k += a->nfeeds;
  if (a->nfetches && memcmp(k, a->fetches, a->nfetches * sizeof(hk_handle)) != 0) return 0;
  k += a->nfetches;
  if (a->ntargets && memcmp(k, a->targets, a->ntargets * sizeof(hk_handle)) != 0) return 0;
  return 1;
}

static hk_code handle_error(const hk_graph *g, hk_status *st, const char *what, size_t i, hk_handle h,
                            const char *expected) {
  char buf[40];
  return hk_status_set(st, HK_INVALID_ARGUMENT, "%s[%zu] (%s) is not %s of this graph", what, i,
                       hk__graph_handle_label(g, h, buf, sizeof(buf)), expected);
}

/* Work out what a run needs. On success the plan is filled (owning its arrays). */
static hk_code plan_build(hk_graph *g, const hk_run_args *a, plan *p, hk_status *st) {
  const hk_env *env = &g->env;
  unsigned char *need = NULL, *mutated = NULL;
  size_t i, k, nkey = a->nfeeds + a->nfetches + a->ntargets;
  hk_code rc = HK_OK;

  memset(p, 0, sizeof(*p));
  p->nfeeds = a->nfeeds;
  p->nfetches = a->nfetches;
  p->ntargets = a->ntargets;
  p->nslots = g->nslots;
  p->key = hk_env_alloc(env, (nkey ? nkey : 1) * sizeof(hk_handle));
  p->exec = hk_env_alloc(env, (g->nops ? g->nops : 1) * sizeof(uint32_t));
  p->slot_feed = hk_env_alloc(env, (g->nslots ? g->nslots : 1) * sizeof(int32_t));
  p->fetch = hk_env_calloc(env, a->nfetches ? a->nfetches : 1, sizeof(fetch_src));
  need = hk_env_calloc(env, g->nops ? g->nops : 1, 1);
  mutated = hk_env_calloc(env, g->nvars ? g->nvars : 1, 1);
  p->used = 1; /* so that plan_clear releases partial work */
  if (!p->key || !p->exec || !p->slot_feed || !p->fetch || !need || !mutated) goto oom;
  for (i = 0; i < g->nslots; i++) p->slot_feed[i] = -1;

  for (i = 0; i < a->nfeeds; i++) {
    int64_t s = hk__graph_tensor_slot(g, a->feeds[i].tensor);
    if (s < 0) {
      rc = handle_error(g, st, "feeds", i, a->feeds[i].tensor, "a tensor");
      goto fail;
    }
    if (p->slot_feed[s] >= 0) {
      rc = hk_status_set(st, HK_INVALID_ARGUMENT, "feeds[%zu]: tensor '%s' is fed more than once", i, g->slots[s].name);
      goto fail;
    }
    p->slot_feed[s] = (int32_t)i;
    p->key[i] = a->feeds[i].tensor;
  }
  for (i = 0; i < a->nfetches; i++) {
    int64_t s = hk__graph_tensor_slot(g, a->fetches[i]);
    if (s < 0) {
      rc = handle_error(g, st, "fetches", i, a->fetches[i], "a tensor");
      goto fail;
    }
    if (p->slot_feed[s] < 0) need[g->slots[s].op] = 1;
    p->key[a->nfeeds + i] = a->fetches[i];
  }
  for (i = 0; i < a->ntargets; i++) {
    int64_t o = hk__graph_op_index(g, a->targets[i]);
    if (o < 0) {
      int64_t s = hk__graph_tensor_slot(g, a->targets[i]);
      if (s >= 0) o = g->slots[s].op;
    }
    if (o < 0) {
      rc = handle_error(g, st, "targets", i, a->targets[i], "an op");
      goto fail;
    }
    need[o] = 1;
    p->key[a->nfeeds + a->nfetches + i] = a->targets[i];
  }

  /* Dependencies always have smaller indices, so one backward sweep closes the set. */
  for (i = g->nops; i-- > 0;) {
    const hk__graph_op *op = &g->ops[i];
    if (!need[i]) continue;
    for (k = 0; k < op->ninputs; k++)
      if (p->slot_feed[op->inputs[k]] < 0) need[g->slots[op->inputs[k]].op] = 1;
    for (k = 0; k < op->ncontrols; k++) need[op->controls[k]] = 1;
  }

  for (i = 0; i < g->nops; i++) {
    const hk__graph_op *op = &g->ops[i];
    if (!need[i]) continue;
    switch (op->kind) {
      case HK__OP_PLACEHOLDER:
        if (p->slot_feed[op->out_base] < 0) {
          const hk__graph_slot *s = &g->slots[op->out_base];
          char shape[128];
          rc = hk_status_set(st, HK_INVALID_ARGUMENT,
                             "You must feed a value for placeholder tensor '%s' with dtype %s and "
                             "shape %s",
                             op->name, hk_dtype_name(s->dtype),
                             hk__graph_shape_str(s->rank, s->dims, shape, sizeof(shape)));
          goto fail;
        }
        break;
      case HK__OP_VARIABLE:
      case HK__OP_CONSTANT: break;
      default:
        p->exec[p->nexec++] = (uint32_t)i;
        for (k = 0; k < op->nmutates; k++) mutated[op->mutates[k]] = 1;
        break;
    }
  }

  for (i = 0; i < a->nfetches; i++) {
    uint32_t s = (uint32_t)hk__graph_tensor_slot(g, a->fetches[i]);
    const hk__graph_op *op = &g->ops[g->slots[s].op];
    fetch_src *f = &p->fetch[i];
    if (p->slot_feed[s] >= 0) {
      f->kind = FETCH_FEED;
      f->index = (uint32_t)p->slot_feed[s];
    } else if (op->kind == HK__OP_VARIABLE) {
      const hk__graph_var *v = &g->vars[op->var];
      f->index = (uint32_t)op->var;
      /* A variable tensor depends on no op, so when the run mutates the
       * variable its fetched value is the one at run start */
      if (mutated[op->var]) {
        f->kind = FETCH_VAR_SNAP;
        if (v->nbytes) {
          f->snap = hk_env_alloc(env, v->nbytes);
          if (!f->snap) goto oom;
        }
      } else {
        f->kind = FETCH_VAR_VIEW;
      }
    } else if (op->kind == HK__OP_CONSTANT) {
      f->kind = FETCH_CONST;
      f->index = g->slots[s].op;
    } else {
      f->kind = FETCH_SLOT;
      f->index = s;
    }
  }
  hk_env_free(env, need);
  hk_env_free(env, mutated);
  return HK_OK;

oom:
  rc = hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hooked.graph: out of memory planning a run");
fail:
  hk_env_free(env, need);
  hk_env_free(env, mutated);
  plan_clear(g, p);
  return rc;
}

static hk_code plan_get(gsession *s, const hk_run_args *a, plan **out, hk_status *st) {
  plan *victim = &s->plans[0], fresh;
  size_t i;
  hk_code rc;
  for (i = 0; i < PLAN_CACHE_SIZE; i++) {
    plan *p = &s->plans[i];
    if (plan_matches(p, a)) {
      p->stamp = ++s->clock;
      *out = p;
      return HK_OK;
    }
    if (!p->used || (victim->used && p->stamp < victim->stamp)) victim = p;
  }
  rc = plan_build(s->g, a, &fresh, st);
  if (rc != HK_OK) return rc;
  plan_clear(s->g, victim);
  *victim = fresh;
  victim->stamp = ++s->clock;
  *out = victim;
  return HK_OK;
}

/* ---- runs ----------------------------------------------------------------------- */

static hk_code check_feed(const hk_graph *g, size_t i, const hk_feed *f, hk_status *st) {
  int64_t slot = hk__graph_tensor_slot(g, f->tensor);
  const hk__graph_slot *s = &g->slots[slot];
  const hk_tensor *v = &f->value;
  int32_t d;
  int ok = v->dtype == s->dtype && v->rank == s->rank, sized;
  size_t nbytes;
  for (d = 0; ok && d < s->rank; d++)
    if (v->dims[d] < 0 || (s->dims[d] >= 0 && v->dims[d] != s->dims[d])) ok = 0;
  if (!ok) {
    char a[128], b[128];
    int32_t r = v->rank < 0 ? 0 : v->rank > HK_MAX_RANK ? HK_MAX_RANK : v->rank;
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "feeds[%zu]: cannot feed a value of dtype %s and shape %s to tensor '%s', "
                         "which has dtype %s and shape %s",
                         i, hk_dtype_name(v->dtype), hk__graph_shape_str(r, v->dims, a, sizeof(a)), s->name,
                         hk_dtype_name(s->dtype), hk__graph_shape_str(s->rank, s->dims, b, sizeof(b)));
  }
  nbytes = hk__graph_nbytes(v->dtype, v->rank, v->dims, &sized);
  if (!sized || nbytes != v->nbytes)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "feeds[%zu]: value for tensor '%s' has nbytes %zu, its shape needs %zu", i, s->name, v->nbytes,
                         nbytes);
  if (nbytes && !v->data)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "feeds[%zu]: value for tensor '%s' has NULL data", i, s->name);
  return HK_OK;
}

static hk_code run_op(hk_graph *g, gsession *s, const plan *p, const hk_run_args *a, uint32_t o, hk_snapshot *snap,
                      hk_status *st) {
  const hk__graph_op *op = &g->ops[o];
  hk_kernel_context ctx;
  hk_status ks = HK_STATUS_INIT;
  size_t k;
  hk_code rc;
  for (k = 0; k < op->ninputs; k++) {
    uint32_t slot = op->inputs[k];
    const hk__graph_op *src = &g->ops[g->slots[slot].op];
    if (p->slot_feed[slot] >= 0) {
      s->in[k] = a->feeds[p->slot_feed[slot]].value; /* zero copy */
    } else if (src->kind == HK__OP_VARIABLE) {
      if (!s->var_init[src->var]) return uninitialized(st, g, (size_t)src->var);
      var_tensor(g, s, (size_t)src->var, &s->in[k]);
    } else if (src->kind == HK__OP_CONSTANT) {
      s->in[k] = src->constant;
    } else {
      s->in[k] = s->out[slot];
    }
  }
  for (k = 0; k < op->nmutates; k++) {
    uint32_t v = op->mutates[k];
    if (!s->var_init[v] && !op->initializes) return uninitialized(st, g, v);
    /* Copy-before-write, once a pending snapshot holds v */
    if (snap) hk_snapshot_before_write(snap, v);
    var_tensor(g, s, v, &s->var_view[v]);
  }
  for (k = 0; k < op->noutputs; k++) reset_output(g, s, op->out_base + k);
  if (!op->kernel) return HK_OK;
  ctx.g = g;
  ctx.s = s;
  ctx.op = op;
  /* s->out is NULL while the graph has no outputs at all. */
  rc = op->kernel(op->kernel_user, &ctx, s->in, op->ninputs, op->noutputs ? s->out + op->out_base : NULL, op->noutputs,
                  &ks);
  if (rc != HK_OK) {
    if (ks.code == rc && ks.message[0]) return hk_status_set(st, rc, "%s", ks.message);
    return hk_status_set(st, rc, "kernel of op '%s' failed with %s", op->name, hk_code_name(rc));
  }
  if (op->initializes)
    for (k = 0; k < op->nmutates; k++) s->var_init[op->mutates[k]] = 1;
  return HK_OK;
}

static void zero_results(hk_tensor *results, size_t n) {
  if (n) memset(results, 0, n * sizeof(*results));
}

hk_code hk__graph_run(void *self, void *session, const hk_run_args *args, hk_tensor *results, hk_run_metadata *metadata,
                      hk_status *status) {
  hk_graph *g = self;
  gsession *s = session;
  plan *p;
  size_t i, ntrace = 0;
  int traced = 0;
  hk_snapshot *snap = g->snap_session == session ? g->snap : NULL;
  hk_code rc;

  if (!s) return hk_status_set(status, HK_INVALID_ARGUMENT, "session is NULL");
  if (!args) return hk_status_set(status, HK_INVALID_ARGUMENT, "args is NULL");
  if (args->nfeeds && !args->feeds)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "args->feeds is NULL but nfeeds is %zu", args->nfeeds);
  if (args->nfetches && !args->fetches)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "args->fetches is NULL but nfetches is %zu", args->nfetches);
  if (args->ntargets && !args->targets)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "args->targets is NULL but ntargets is %zu", args->ntargets);
  if (args->nfetches && !results)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "results is NULL but nfetches is %zu", args->nfetches);
  if (args->options) {
    HK__CHECK_VERSION(args->options, HK_RUN_OPTIONS_VERSION, hk_run_options, "args->options", status);
    traced = args->options->trace_level >= 1;
  }
  if (metadata && metadata->version >= 1) {
    metadata->trace = NULL;
    metadata->ntrace = 0;
    metadata->executor_data = NULL;
  }
  zero_results(results, args->nfetches);

  rc = sync(s, status);
  if (rc != HK_OK) return rc;
  rc = plan_get(s, args, &p, status);
  if (rc != HK_OK) return rc;
  for (i = 0; i < args->nfeeds; i++) {
    rc = check_feed(g, i, &args->feeds[i], status);
    if (rc != HK_OK) return rc;
  }

  /* Fetched variables are read before any op of the run executes */
  for (i = 0; i < p->nfetches; i++) {
    const fetch_src *f = &p->fetch[i];
    if (f->kind != FETCH_VAR_VIEW && f->kind != FETCH_VAR_SNAP) continue;
    if (!s->var_init[f->index]) return uninitialized(status, g, f->index);
    if (f->kind == FETCH_VAR_SNAP && f->snap) memcpy(f->snap, s->var_data[f->index], g->vars[f->index].nbytes);
  }

  for (i = 0; i < p->nexec; i++) {
    double t0 = traced ? hk_env_monotonic(&g->env) : 0;
    rc = run_op(g, s, p, args, p->exec[i], snap, status);
    if (rc != HK_OK) {
      zero_results(results, args->nfetches);
      return rc;
    }
    if (traced) {
      hk_op_trace *t = &s->trace[ntrace++];
      t->op_name = g->ops[p->exec[i]].name;
      t->start_secs = t0;
      t->end_secs = hk_env_monotonic(&g->env);
    }
  }

  for (i = 0; i < p->nfetches; i++) {
    const fetch_src *f = &p->fetch[i];
    switch (f->kind) {
      case FETCH_FEED: results[i] = args->feeds[f->index].value; break;
      case FETCH_SLOT: results[i] = s->out[f->index]; break;
      case FETCH_CONST: results[i] = g->ops[f->index].constant; break;
      case FETCH_VAR_VIEW: var_tensor(g, s, f->index, &results[i]); break;
      case FETCH_VAR_SNAP:
        var_tensor(g, s, f->index, &results[i]);
        results[i].data = f->snap;
        break;
    }
  }
  if (metadata && metadata->version >= 1 && traced) {
    metadata->trace = ntrace ? s->trace : NULL;
    metadata->ntrace = ntrace;
  }
  return HK_OK;
}

/* ---- variables --------------------------------------------------------------------- */

hk_code hk__graph_variable_read(void *self, void *session, size_t index, hk_tensor *out, hk_status *status) {
  hk_graph *g = self;
  gsession *s = session;
  hk_code rc;
  if (!s) return hk_status_set(status, HK_INVALID_ARGUMENT, "session is NULL");
  if (!out) return hk_status_set(status, HK_INVALID_ARGUMENT, "out is NULL");
  memset(out, 0, sizeof(*out));
  if (index >= g->nvars)
    return hk_status_set(status, HK_OUT_OF_RANGE, "variable index %zu is out of range (%zu variables)", index,
                         g->nvars);
  rc = sync(s, status);
  if (rc != HK_OK) return rc;
  if (!s->var_init[index]) return uninitialized(status, g, index);
  var_tensor(g, s, index, out);
  return HK_OK;
}

hk_code hk__graph_variable_assign(void *self, void *session, size_t index, const hk_tensor *value, hk_status *status) {
  hk_graph *g = self;
  gsession *s = session;
  const hk__graph_var *v;
  hk_tensor cur;
  hk_code rc;
  if (!s) return hk_status_set(status, HK_INVALID_ARGUMENT, "session is NULL");
  if (!value) return hk_status_set(status, HK_INVALID_ARGUMENT, "value is NULL");
  if (index >= g->nvars)
    return hk_status_set(status, HK_OUT_OF_RANGE, "variable index %zu is out of range (%zu variables)", index,
                         g->nvars);
  rc = sync(s, status);
  if (rc != HK_OK) return rc;
  v = &g->vars[index];
  var_tensor(g, s, index, &cur);
  if (!hk_tensor_same_spec(value, &cur)) {
    char a[128], b[128];
    int32_t r = value->rank < 0 ? 0 : value->rank > HK_MAX_RANK ? HK_MAX_RANK : value->rank;
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         "Cannot assign a value of dtype %s and shape %s to variable '%s' of dtype "
                         "%s and shape %s",
                         hk_dtype_name(value->dtype), hk__graph_shape_str(r, value->dims, a, sizeof(a)),
                         g->ops[v->op].name, hk_dtype_name(v->dtype),
                         hk__graph_shape_str(v->rank, v->dims, b, sizeof(b)));
  }
  if (value->nbytes != v->nbytes)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "value for variable '%s' has nbytes %zu, its shape needs %zu",
                         g->ops[v->op].name, value->nbytes, v->nbytes);
  if (v->nbytes && !value->data)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "value for variable '%s' has NULL data", g->ops[v->op].name);
  /* A pending snapshot copies the variable before it is written. */
  if (g->snap && g->snap_session == s) hk_snapshot_before_write(g->snap, index);
  if (v->nbytes && value->data != s->var_data[index]) memmove(s->var_data[index], value->data, v->nbytes);
  s->var_init[index] = 1;
  return HK_OK;
}

/* The variable's own buffer (graph-owned, or the host's external_data) for
 * a restore to fill in place; the caller writes it whole. */
hk_code hk__graph_variable_storage(void *self, void *session, size_t index, hk_tensor *out, hk_status *status) {
  hk_graph *g = self;
  gsession *s = session;
  hk_code rc;
  if (!s) return hk_status_set(status, HK_INVALID_ARGUMENT, "session is NULL");
  if (!out) return hk_status_set(status, HK_INVALID_ARGUMENT, "out is NULL");
  memset(out, 0, sizeof(*out));
  if (index >= g->nvars)
    return hk_status_set(status, HK_OUT_OF_RANGE, "variable index %zu is out of range (%zu variables)", index,
                         g->nvars);
  rc = sync(s, status);
  if (rc != HK_OK) return rc;
  if (g->snap && g->snap_session == s) hk_snapshot_before_write(g->snap, index); /* the caller writes it next */
  var_tensor(g, s, index, out);
  s->var_init[index] = 1;
  return HK_OK;
}

/* ---- copy-before-write snapshots --------------------------------------------------- */

hk_code hk__graph_snapshot_control(hk_graph *g, int op, void *arg, hk_status *status) {
  const hk_control_snapshot *a = arg;
  const char *what = op == HK_CONTROL_SNAPSHOT_ATTACH ? "HK_CONTROL_SNAPSHOT_ATTACH" : "HK_CONTROL_SNAPSHOT_DETACH";
  if (!a) return hk_status_set(status, HK_INVALID_ARGUMENT, "hooked.graph: %s: arg is NULL", what);
  if (a->version != HK_CONTROL_SNAPSHOT_VERSION)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "hooked.graph: %s: arg->version %u is not %u", what,
                         (unsigned)a->version, (unsigned)HK_CONTROL_SNAPSHOT_VERSION);
  if (!a->snapshot) return hk_status_set(status, HK_INVALID_ARGUMENT, "hooked.graph: %s: arg->snapshot is NULL", what);
  if (op == HK_CONTROL_SNAPSHOT_DETACH) {
    if (g->snap == a->snapshot) {
      hk_snapshot_complete(g->snap);
      g->snap = NULL;
      g->snap_session = NULL;
    }
    return HK_OK;
  }
  if (!a->session) return hk_status_set(status, HK_INVALID_ARGUMENT, "hooked.graph: %s: arg->session is NULL", what);
  if (g->snap && g->snap != a->snapshot) hk_snapshot_complete(g->snap);
  g->snap = a->snapshot;
  g->snap_session = a->session;
  /* The host writes external buffers without telling the graph: their
   * copies cannot wait for a barrier, so they are made now. */
  for (size_t v = 0; v < g->nvars; v++)
    if (g->vars[v].external) hk_snapshot_before_write(g->snap, v);
  return HK_OK;
}
