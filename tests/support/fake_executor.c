/*
 * fake_executor — see fake_executor.h. Written only against
 * hooked/sys/executor.h: nothing here knows the embedded graph.
 */
#include "fake_executor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ENTITIES 64
#define MAX_ROLES 64
#define NAME_MAX_LEN 96

enum entity_kind { K_TENSOR = 1, K_VAR, K_OP, K_REPORT };

typedef struct entity {
  int kind;
  char name[NAME_MAX_LEN];     /* tensors: "x:0"; ops: "x" */
  char var_name[NAME_MAX_LEN]; /* variables: "x" */
  hk_dtype dtype;
  int32_t rank;
  int64_t dims[HK_MAX_RANK];
  size_t nbytes;
  _Alignas(16) unsigned char value[FAKE_MAX_VALUE_BYTES]; /* tensor value or variable's initial value */
  uint32_t flags;
  size_t var_index;
  /* ops */
  hk_handle inc_var;
  int64_t delta;
  unsigned inits;
  hk_code fail_code;
  char fail_msg[160];
  int runs;
  /* reports */
  fake_report_kind report_kind;
  char script[FAKE_MAX_NAMES][NAME_MAX_LEN];
  size_t nscript;
  int script_times;
  int evals;
} entity;

typedef struct fsession {
  /* Buffers first and 16-aligned: results are handed out as typed views. */
  _Alignas(16) unsigned char values[MAX_ENTITIES][FAKE_MAX_VALUE_BYTES];
  _Alignas(16) unsigned char results[FAKE_MAX_RECORD][FAKE_MAX_VALUE_BYTES];
  int id;
  int init[MAX_ENTITIES];
  const char *names[FAKE_MAX_RECORD][FAKE_MAX_NAMES];
  struct fsession *next;
} fsession;

typedef struct fault {
  int active;
  long start;
  int remaining;
  hk_code code;
  char message[HK_STATUS_MESSAGE_MAX];
} fault;

typedef struct role_entry {
  char role[NAME_MAX_LEN];
  hk_handle handle;
} role_entry;

struct fake_executor {
  hk_executor *ex;
  entity ents[MAX_ENTITIES];
  size_t nents;
  size_t nvars;
  role_entry roles[MAX_ROLES];
  size_t nroles;
  int finalized;
  int calls[FAKE__NSLOTS];
  long total[FAKE__NSLOTS];
  fault faults[FAKE__NSLOTS];
  fake_run_record last;
  fsession *sessions; /* open ones, newest first */
  int nopen;
  int nopened;
  fake_run_fn on_run;
  void *on_run_user;
  int unimplemented_defaults;
  hk_handle defaults[5];
};

/* ---- helpers ------------------------------------------------------------ */

static entity *ent(fake_executor *fx, hk_handle h) {
  if (h == HK_NO_HANDLE || h > fx->nents) return NULL;
  return &fx->ents[h - 1];
}

static const entity *cent(const fake_executor *fx, hk_handle h) {
  if (h == HK_NO_HANDLE || h > fx->nents) return NULL;
  return &fx->ents[h - 1];
}

static void tensor_name(char *out, const char *name) {
  if (strchr(name, ':'))
    snprintf(out, NAME_MAX_LEN, "%s", name);
  else
    snprintf(out, NAME_MAX_LEN, "%s:0", name);
}

static hk_handle new_entity(fake_executor *fx, int kind, const char *name) {
  entity *e;
  if (fx->nents >= MAX_ENTITIES) {
    fprintf(stderr, "fake_executor: too many entities\n");
    abort();
  }
  e = &fx->ents[fx->nents++];
  memset(e, 0, sizeof(*e));
  e->kind = kind;
  if (kind == K_OP)
    snprintf(e->name, sizeof(e->name), "%s", name);
  else
    tensor_name(e->name, name);
  return (hk_handle)fx->nents;
}

static size_t shape_bytes(hk_dtype dtype, int32_t rank, const int64_t *dims) {
  size_t n = hk_dtype_size(dtype);
  int32_t i;
  if (dtype == HK_DTYPE_STRING) n = sizeof(const char *);
  for (i = 0; i < rank; i++) n *= (size_t)dims[i];
  return n;
}

static void set_shape(entity *e, hk_dtype dtype, int32_t rank, const int64_t *dims) {
  int32_t i;
  e->dtype = dtype;
  e->rank = rank;
  for (i = 0; i < rank && i < HK_MAX_RANK; i++) e->dims[i] = dims[i];
  e->nbytes = shape_bytes(dtype, rank, dims);
  if (e->nbytes > FAKE_MAX_VALUE_BYTES) {
    fprintf(stderr, "fake_executor: value of %s too large\n", e->name);
    abort();
  }
}

static int64_t int_get(hk_dtype dt, const void *p) {
  switch (dt) {
    case HK_DTYPE_I8: {
      int8_t v;
      memcpy(&v, p, 1);
      return v;
    }
    case HK_DTYPE_I16: {
      int16_t v;
      memcpy(&v, p, 2);
      return v;
    }
    case HK_DTYPE_I32: {
      int32_t v;
      memcpy(&v, p, 4);
      return v;
    }
    case HK_DTYPE_I64: {
      int64_t v;
      memcpy(&v, p, 8);
      return v;
    }
    case HK_DTYPE_U8: {
      uint8_t v;
      memcpy(&v, p, 1);
      return v;
    }
    case HK_DTYPE_U16: {
      uint16_t v;
      memcpy(&v, p, 2);
      return v;
    }
    case HK_DTYPE_U32: {
      uint32_t v;
      memcpy(&v, p, 4);
      return v;
    }
    case HK_DTYPE_U64: {
      uint64_t v;
      memcpy(&v, p, 8);
      return (int64_t)v;
    }
    default: return 0;
  }
}

static void int_set(hk_dtype dt, void *p, int64_t x) {
  switch (dt) {
    case HK_DTYPE_I8:
    case HK_DTYPE_U8: {
      int8_t v = (int8_t)x;
      memcpy(p, &v, 1);
      break;
    }
    case HK_DTYPE_I16:
    case HK_DTYPE_U16: {
      int16_t v = (int16_t)x;
      memcpy(p, &v, 2);
      break;
    }
    case HK_DTYPE_I32:
    case HK_DTYPE_U32: {
      int32_t v = (int32_t)x;
      memcpy(p, &v, 4);
      break;
    }
    case HK_DTYPE_I64:
    case HK_DTYPE_U64: memcpy(p, &x, 8); break;
    default: break;
  }
}

static fsession *find_session(const fake_executor *fx, void *s) {
  fsession *it;
  if (s == NULL) return fx->sessions;
  for (it = fx->sessions; it; it = it->next)
    if ((void *)it == s) return it;
  return NULL;
}

/* Returns nonzero (and fills status) when a scripted failure applies. */
static int scripted(fake_executor *fx, fake_slot slot, hk_status *status, hk_code *rc) {
  fault *f = &fx->faults[slot];
  long n = ++fx->total[slot];
  fx->calls[slot]++;
  if (!f->active || n < f->start || f->remaining == 0) return 0;
  if (f->remaining > 0) f->remaining--;
  *rc = hk_status_set(status, f->code, "%s", f->message);
  return 1;
}

static void init_vars(fake_executor *fx, fsession *s, unsigned which) {
  size_t i;
  for (i = 0; i < fx->nents; i++) {
    entity *e = &fx->ents[i];
    int local;
    if (e->kind != K_VAR) continue;
    local = (e->flags & HK_VAR_LOCAL) != 0;
    if ((local && (which & FAKE_INIT_LOCAL)) || (!local && (which & FAKE_INIT_GLOBAL))) {
      memcpy(s->values[i], e->value, e->nbytes);
      s->init[i] = 1;
    }
  }
}

/* ---- vtable slots ------------------------------------------------------- */

static hk_code v_resolve_tensor(void *self, const char *name, hk_handle *out, hk_status *status) {
  fake_executor *fx = self;
  char full[NAME_MAX_LEN];
  hk_code rc;
  size_t i;
  if (scripted(fx, FAKE_RESOLVE_TENSOR, status, &rc)) return rc;
  tensor_name(full, name);
  for (i = 0; i < fx->nents; i++) {
    if (fx->ents[i].kind != K_OP && strcmp(fx->ents[i].name, full) == 0) {
      *out = (hk_handle)(i + 1);
      return HK_OK;
    }
  }
  return hk_status_set(status, HK_NOT_FOUND, "The name '%s' refers to a Tensor which does not exist.", full);
}

static hk_code v_resolve_op(void *self, const char *name, hk_handle *out, hk_status *status) {
  fake_executor *fx = self;
  hk_code rc;
  size_t i;
  if (scripted(fx, FAKE_RESOLVE_OP, status, &rc)) return rc;
  for (i = 0; i < fx->nents; i++) {
    if (fx->ents[i].kind == K_OP && strcmp(fx->ents[i].name, name) == 0) {
      *out = (hk_handle)(i + 1);
      return HK_OK;
    }
  }
  return hk_status_set(status, HK_NOT_FOUND, "The name '%s' refers to an Operation not in the graph.", name);
}

static const char *v_handle_name(void *self, hk_handle handle) {
  fake_executor *fx = self;
  const entity *e = cent(fx, handle);
  fx->calls[FAKE_HANDLE_NAME]++;
  return e ? e->name : NULL;
}

static hk_code v_finalize(void *self, hk_status *status) {
  fake_executor *fx = self;
  hk_code rc;
  if (scripted(fx, FAKE_FINALIZE, status, &rc)) return rc;
  fx->finalized = 1;
  return HK_OK;
}

static int v_is_finalized(void *self) {
  fake_executor *fx = self;
  fx->calls[FAKE_IS_FINALIZED]++;
  return fx->finalized;
}

static hk_code v_open(void *self, void **out_session, hk_status *status) {
  fake_executor *fx = self;
  fsession *s;
  hk_code rc;
  if (scripted(fx, FAKE_OPEN, status, &rc)) return rc;
  s = calloc(1, sizeof(*s));
  if (s == NULL) return hk_status_set(status, HK_RESOURCE_EXHAUSTED, "fake_executor: out of memory opening a session");
  s->id = ++fx->nopened;
  /* Host-owned memory (HK_VAR_EXTERNAL) holds its value in every session. */
  for (size_t i = 0; i < fx->nents; i++) {
    const entity *e = &fx->ents[i];
    if (e->kind == K_VAR && (e->flags & HK_VAR_EXTERNAL)) {
      memcpy(s->values[i], e->value, e->nbytes);
      s->init[i] = 1;
    }
  }
  s->next = fx->sessions;
  fx->sessions = s;
  fx->nopen++;
  *out_session = s;
  return HK_OK;
}

static hk_code v_close(void *self, void *session, hk_status *status) {
  fake_executor *fx = self;
  fsession **pp;
  hk_code rc = HK_OK;
  int failed = scripted(fx, FAKE_CLOSE, status, &rc);
  /* Close always releases, even when it reports an error (vtable contract). */
  for (pp = &fx->sessions; *pp; pp = &(*pp)->next) {
    if ((void *)*pp == session) {
      fsession *s = *pp;
      *pp = s->next;
      free(s);
      fx->nopen--;
      break;
    }
  }
  return failed ? rc : HK_OK;
}

static hk_code eval_report(fake_executor *fx, fsession *s, entity *e, size_t slot, hk_tensor *out) {
  const char **names = s->names[slot];
  size_t n = 0, i;
  e->evals++;
  if (e->script_times != 0) {
    for (i = 0; i < e->nscript; i++) names[n++] = e->script[i];
    if (e->script_times > 0) e->script_times--;
  } else {
    for (i = 0; i < fx->nents && n < FAKE_MAX_NAMES; i++) {
      const entity *v = &fx->ents[i];
      if (v->kind != K_VAR || s->init[i]) continue;
      if (e->report_kind == FAKE_REPORT_GLOBAL && (v->flags & HK_VAR_LOCAL)) continue;
      names[n++] = v->var_name;
    }
  }
  memset(out, 0, sizeof(*out));
  out->dtype = HK_DTYPE_STRING;
  out->rank = 1;
  out->dims[0] = (int64_t)n;
  out->data = (void *)names;
  out->nbytes = n * sizeof(const char *);
  return HK_OK;
}

static void view(hk_tensor *out, const entity *e, void *data) {
  int32_t i;
  memset(out, 0, sizeof(*out));
  out->dtype = e->dtype;
  out->rank = e->rank;
  for (i = 0; i < e->rank; i++) out->dims[i] = e->dims[i];
  out->data = data;
  out->nbytes = e->nbytes;
}

static void record_run(fake_executor *fx, void *session, const hk_run_args *args, hk_run_metadata *metadata) {
  fake_run_record *r = &fx->last;
  size_t i;
  memset(r, 0, sizeof(*r));
  r->session = session;
  r->metadata = metadata;
  r->options = (hk_run_options)HK_RUN_OPTIONS_INIT;
  if (args == NULL) return;
  r->nfeeds = args->nfeeds;
  r->nfetches = args->nfetches;
  r->ntargets = args->ntargets;
  r->feeds_ptr = args->feeds;
  r->fetches_ptr = args->fetches;
  r->targets_ptr = args->targets;
  for (i = 0; args->feeds && i < args->nfeeds && i < FAKE_MAX_RECORD; i++) {
    r->feeds[i] = args->feeds[i];
    if (args->feeds[i].value.data && args->feeds[i].value.nbytes >= 8)
      memcpy(&r->feed_i64[i], args->feeds[i].value.data, 8);
    else if (args->feeds[i].value.data && hk_dtype_is_integer(args->feeds[i].value.dtype))
      r->feed_i64[i] = int_get(args->feeds[i].value.dtype, args->feeds[i].value.data);
  }
  for (i = 0; args->fetches && i < args->nfetches && i < FAKE_MAX_RECORD; i++) r->fetches[i] = args->fetches[i];
  for (i = 0; args->targets && i < args->ntargets && i < FAKE_MAX_RECORD; i++) r->targets[i] = args->targets[i];
  if (args->options) {
    r->had_options = 1;
    r->options_ptr = args->options;
    r->options = *args->options;
  }
}

static const hk_feed *find_feed(const hk_run_args *args, hk_handle h) {
  size_t i;
  for (i = 0; args->feeds && i < args->nfeeds; i++)
    if (args->feeds[i].tensor == h) return &args->feeds[i];
  return NULL;
}

static int same_shape(const entity *e, const hk_tensor *t) {
  int32_t i;
  if (e->dtype != t->dtype || e->rank != t->rank) return 0;
  for (i = 0; i < e->rank; i++)
    if (e->dims[i] != t->dims[i]) return 0;
  return 1;
}

static hk_code run_body(fake_executor *fx, fsession *s, const hk_run_args *args, hk_tensor *results,
                        hk_status *status) {
  size_t i, j;
  if (args->nfetches > FAKE_MAX_RECORD)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "fake_executor: more than %d fetches", FAKE_MAX_RECORD);
  for (i = 0; i < args->nfeeds; i++) {
    const entity *e = cent(fx, args->feeds[i].tensor);
    if (e == NULL || e->kind == K_OP)
      return hk_status_set(status, HK_INVALID_ARGUMENT, "fake_executor: feed %zu is not a tensor", i);
    if (!same_shape(e, &args->feeds[i].value))
      return hk_status_set(status, HK_INVALID_ARGUMENT, "fake_executor: feed for %s does not match its dtype or shape",
                           e->name);
  }
  for (i = 0; i < args->nfetches; i++) {
    entity *e = ent(fx, args->fetches[i]);
    const hk_feed *fd;
    if (e == NULL || e->kind == K_OP)
      return hk_status_set(status, HK_INVALID_ARGUMENT, "fake_executor: fetch %zu is not a tensor", i);
    fd = find_feed(args, args->fetches[i]);
    if (fd && e->kind != K_REPORT) {
      if (fd->value.nbytes > 0) memcpy(s->results[i], fd->value.data, fd->value.nbytes);
      view(&results[i], e, s->results[i]);
      continue;
    }
    switch (e->kind) {
      case K_TENSOR:
        memcpy(s->results[i], e->value, e->nbytes);
        view(&results[i], e, s->results[i]);
        break;
      case K_VAR:
        if (!s->init[e - fx->ents])
          return hk_status_set(status, HK_FAILED_PRECONDITION, "Attempting to use uninitialized value %s", e->var_name);
        memcpy(s->results[i], s->values[e - fx->ents], e->nbytes);
        view(&results[i], e, s->results[i]);
        break;
      default: eval_report(fx, s, e, i, &results[i]); break;
    }
  }
  for (i = 0; i < args->ntargets; i++) {
    entity *e = ent(fx, args->targets[i]);
    int dup = 0;
    if (e == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "fake_executor: target %zu is unknown", i);
    for (j = 0; j < i; j++) dup |= args->targets[j] == args->targets[i];
    if (dup || e->kind != K_OP) continue;
    e->runs++;
    if (e->fail_code != HK_OK) return hk_status_set(status, e->fail_code, "%s", e->fail_msg);
    if (e->inits) init_vars(fx, s, e->inits);
    if (e->inc_var != HK_NO_HANDLE) {
      entity *v = ent(fx, e->inc_var);
      size_t vi = (size_t)(v - fx->ents);
      if (!s->init[vi])
        return hk_status_set(status, HK_FAILED_PRECONDITION, "Attempting to use uninitialized value %s", v->var_name);
      int_set(v->dtype, s->values[vi], int_get(v->dtype, s->values[vi]) + e->delta);
    }
  }
  return HK_OK;
}

static hk_code v_run(void *self, void *session, const hk_run_args *args, hk_tensor *results, hk_run_metadata *metadata,
                     hk_status *status) {
  static const hk_run_args no_args = {NULL, 0, NULL, 0, NULL, 0, NULL};
  fake_executor *fx = self;
  fsession *s = find_session(fx, session);
  hk_code rc;
  if (args == NULL) args = &no_args;
  record_run(fx, session, args, metadata);
  if (fx->on_run) {
    rc = fx->on_run(fx->on_run_user, fx, args, status);
    if (rc != HK_OK) {
      fx->calls[FAKE_RUN]++;
      fx->total[FAKE_RUN]++;
      fx->last.code = rc;
      return rc;
    }
  }
  if (scripted(fx, FAKE_RUN, status, &rc)) {
    fx->last.code = rc;
    return rc;
  }
  if (s == NULL || session == NULL)
    rc = hk_status_set(status, HK_FAILED_PRECONDITION, "fake_executor: run on a closed session");
  else
    rc = run_body(fx, s, args, results, status);
  if (rc == HK_OK && metadata) {
    metadata->trace = NULL;
    metadata->ntrace = 0;
    metadata->executor_data = fx;
  }
  fx->last.code = rc;
  return rc;
}

static entity *var_by_index(fake_executor *fx, size_t index) {
  size_t i;
  for (i = 0; i < fx->nents; i++)
    if (fx->ents[i].kind == K_VAR && fx->ents[i].var_index == index) return &fx->ents[i];
  return NULL;
}

static size_t v_variable_count(void *self) {
  fake_executor *fx = self;
  fx->calls[FAKE_VARIABLE_COUNT]++;
  return fx->nvars;
}

static hk_code v_variable_info(void *self, size_t index, hk_variable_info *out, hk_status *status) {
  fake_executor *fx = self;
  entity *e;
  hk_code rc;
  int32_t i;
  if (scripted(fx, FAKE_VARIABLE_INFO, status, &rc)) return rc;
  e = var_by_index(fx, index);
  if (e == NULL) return hk_status_set(status, HK_OUT_OF_RANGE, "fake_executor: no variable %zu", index);
  memset(out, 0, sizeof(*out));
  out->name = e->var_name;
  out->tensor = (hk_handle)(e - fx->ents) + 1;
  out->dtype = e->dtype;
  out->rank = e->rank;
  for (i = 0; i < e->rank; i++) out->dims[i] = e->dims[i];
  out->flags = e->flags;
  return HK_OK;
}

static hk_code v_variable_read(void *self, void *session, size_t index, hk_tensor *out, hk_status *status) {
  fake_executor *fx = self;
  fsession *s = find_session(fx, session);
  entity *e;
  hk_code rc;
  if (scripted(fx, FAKE_VARIABLE_READ, status, &rc)) return rc;
  e = var_by_index(fx, index);
  if (e == NULL || s == NULL || session == NULL)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "fake_executor: bad variable %zu or session", index);
  if (!s->init[e - fx->ents])
    return hk_status_set(status, HK_FAILED_PRECONDITION, "Attempting to use uninitialized value %s", e->var_name);
  view(out, e, s->values[e - fx->ents]);
  return HK_OK;
}

static hk_code v_variable_assign(void *self, void *session, size_t index, const hk_tensor *value, hk_status *status) {
  fake_executor *fx = self;
  fsession *s = find_session(fx, session);
  entity *e;
  hk_code rc;
  if (scripted(fx, FAKE_VARIABLE_ASSIGN, status, &rc)) return rc;
  e = var_by_index(fx, index);
  if (e == NULL || s == NULL || session == NULL)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "fake_executor: bad variable %zu or session", index);
  if (!same_shape(e, value))
    return hk_status_set(status, HK_INVALID_ARGUMENT, "fake_executor: value for %s does not match", e->var_name);
  memcpy(s->values[e - fx->ents], value->data, e->nbytes);
  s->init[e - fx->ents] = 1;
  return HK_OK;
}

static hk_code v_variable_storage(void *self, void *session, size_t index, hk_tensor *out, hk_status *status) {
  fake_executor *fx = self;
  fsession *s = find_session(fx, session);
  entity *e;
  hk_code rc;
  if (scripted(fx, FAKE_VARIABLE_STORAGE, status, &rc)) return rc;
  e = var_by_index(fx, index);
  if (e == NULL || s == NULL || session == NULL)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "fake_executor: bad variable %zu or session", index);
  view(out, e, s->values[e - fx->ents]);
  s->init[e - fx->ents] = 1;
  return HK_OK;
}

static hk_code v_role_get(void *self, const char *role, hk_handle *out, size_t cap, size_t *count, hk_status *status) {
  fake_executor *fx = self;
  size_t i, n = 0;
  hk_code rc;
  if (scripted(fx, FAKE_ROLE_GET, status, &rc)) return rc;
  for (i = 0; i < fx->nroles; i++) {
    if (strcmp(fx->roles[i].role, role) != 0) continue;
    if (out && n < cap) out[n] = fx->roles[i].handle;
    n++;
  }
  *count = n;
  return HK_OK;
}

/* What a finalized graph answers to every slot that would add to it. */
static hk_code refuse_finalized(hk_status *status) {
  return hk_status_set(status, HK_FAILED_PRECONDITION, "Graph is finalized and cannot be modified.");
}

static hk_code v_role_add(void *self, const char *role, hk_handle handle, hk_status *status) {
  fake_executor *fx = self;
  hk_code rc;
  if (scripted(fx, FAKE_ROLE_ADD, status, &rc)) return rc;
  if (fx->finalized) return refuse_finalized(status);
  fake_executor_role_register(fx, role, handle);
  return HK_OK;
}

static hk_code v_default_op(void *self, hk_default_op kind, hk_handle *out, hk_status *status) {
  fake_executor *fx = self;
  hk_handle h;
  hk_code rc;
  if (scripted(fx, FAKE_DEFAULT_OP, status, &rc)) return rc;
  if (fx->unimplemented_defaults) return hk_status_set(status, HK_UNIMPLEMENTED, "fake_executor: no default ops");
  if (fx->finalized) return refuse_finalized(status);
  if ((int)kind < 1 || (int)kind > 4)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "fake_executor: bad default op kind %d", (int)kind);
  if (fx->defaults[kind] != HK_NO_HANDLE) {
    *out = fx->defaults[kind];
    return HK_OK;
  }
  switch (kind) {
    case HK_DEFAULT_INIT_OP:
      h = fake_executor_add_op(fx, "fake/default_init_op");
      fake_executor_op_initializes(fx, h, FAKE_INIT_GLOBAL);
      break;
    case HK_DEFAULT_READY_OP: h = fake_executor_add_report(fx, "fake/default_ready_op", FAKE_REPORT_ALL); break;
    case HK_DEFAULT_READY_FOR_LOCAL_INIT_OP:
      h = fake_executor_add_report(fx, "fake/default_ready_for_local_init_op", FAKE_REPORT_GLOBAL);
      break;
    default:
      h = fake_executor_add_op(fx, "fake/default_local_init_op");
      fake_executor_op_initializes(fx, h, FAKE_INIT_LOCAL);
      break;
  }
  fx->defaults[kind] = h;
  *out = h;
  return HK_OK;
}

static hk_code v_describe(void *self, hk_text_sink sink, void *sink_user, hk_status *status) {
  fake_executor *fx = self;
  hk_code rc;
  size_t i;
  if (scripted(fx, FAKE_DESCRIBE, status, &rc)) return rc;
  if (fx->unimplemented_defaults) return hk_status_set(status, HK_UNIMPLEMENTED, "fake_executor: no description");
  for (i = 0; i < fx->nents; i++) {
    char line[NAME_MAX_LEN + 16];
    int n = snprintf(line, sizeof(line), "node { name: \"%s\" }\n", fx->ents[i].name);
    rc = sink(sink_user, line, (size_t)n, status);
    if (rc != HK_OK) return rc;
  }
  return HK_OK;
}

static hk_code v_control(void *self, int op, void *arg, hk_status *status) {
  fake_executor *fx = self;
  hk_code rc;
  (void)arg;
  if (scripted(fx, FAKE_CONTROL, status, &rc)) return rc;
  return hk_status_set(status, HK_UNIMPLEMENTED, "fake_executor: unknown control op %d", op);
}

static void v_destroy(void *self) {
  fake_executor *fx = self;
  fx->calls[FAKE_DESTROY]++;
}

/* Two vtables that differ only in variable_storage (version 2): without it
 * a restore assigns every variable. */
#define FAKE_VTABLE(storage)                                                                                           \
  {                                                                                                                    \
    HK_EXECUTOR_VTABLE_VERSION, "fake_executor", v_resolve_tensor, v_resolve_op, v_handle_name, v_finalize,            \
        v_is_finalized, v_open, v_close, v_run, v_variable_count, v_variable_info, v_variable_read, v_variable_assign, \
        v_role_get, v_role_add, v_default_op, v_describe, v_control, v_destroy, storage                                \
  }

static const hk_executor_vtable fake_vtable = FAKE_VTABLE(NULL);
static const hk_executor_vtable fake_vtable_storage = FAKE_VTABLE(v_variable_storage);

const hk_executor_vtable *fake_executor_vtable(void) { return &fake_vtable; }

static fake_executor *fake_new(const hk_env *env, const hk_executor_vtable *vt) {
  hk_status st = HK_STATUS_INIT;
  fake_executor *fx = calloc(1, sizeof(*fx));
  if (fx == NULL) return NULL;
  if (hk_executor_new(&fx->ex, vt, fx, env, &st) != HK_OK) {
    fprintf(stderr, "fake_executor_new: %s: %s\n", hk_code_name(st.code), st.message);
    free(fx);
    return NULL;
  }
  return fx;
}

fake_executor *fake_executor_new(const hk_env *env) { return fake_new(env, &fake_vtable); }

fake_executor *fake_executor_new_with_storage(const hk_env *env) { return fake_new(env, &fake_vtable_storage); }

void fake_executor_free(fake_executor *fx) {
  if (fx == NULL) return;
  hk_executor_free(fx->ex);
  while (fx->sessions) {
    fsession *s = fx->sessions;
    fx->sessions = s->next;
    free(s);
  }
  free(fx);
}

hk_executor *fake_executor_executor(fake_executor *fx) { return fx->ex; }

hk_handle fake_executor_add_tensor(fake_executor *fx, const char *name, hk_dtype dtype, int32_t rank,
                                   const int64_t *dims) {
  hk_handle h = new_entity(fx, K_TENSOR, name);
  set_shape(ent(fx, h), dtype, rank, dims);
  return h;
}

void fake_executor_set_value(fake_executor *fx, hk_handle tensor, const void *data) {
  entity *e = ent(fx, tensor);
  if (e && data) memcpy(e->value, data, e->nbytes);
}

hk_handle fake_executor_add_i64(fake_executor *fx, const char *name, int64_t value) {
  hk_handle h = fake_executor_add_tensor(fx, name, HK_DTYPE_I64, 0, NULL);
  fake_executor_set_value(fx, h, &value);
  return h;
}

hk_handle fake_executor_add_variable(fake_executor *fx, const char *name, hk_dtype dtype, int32_t rank,
                                     const int64_t *dims, uint32_t flags, const void *initial) {
  hk_handle h = new_entity(fx, K_VAR, name);
  entity *e = &fx->ents[h - 1]; /* new_entity never fails (ent() may return NULL) */
  snprintf(e->var_name, sizeof(e->var_name), "%s", name);
  set_shape(e, dtype, rank, dims);
  e->flags = flags;
  e->var_index = fx->nvars++;
  if (initial) memcpy(e->value, initial, e->nbytes);
  return h;
}

hk_handle fake_executor_add_global_step(fake_executor *fx) {
  int64_t zero = 0;
  hk_handle h = fake_executor_add_variable(fx, "global_step", HK_DTYPE_I64, 0, NULL, 0, &zero);
  fake_executor_role_register(fx, HK_ROLE_GLOBAL_STEP, h);
  return h;
}

hk_handle fake_executor_add_op(fake_executor *fx, const char *name) { return new_entity(fx, K_OP, name); }

void fake_executor_op_increments(fake_executor *fx, hk_handle op, hk_handle var, int64_t delta) {
  entity *e = ent(fx, op);
  if (e) {
    e->inc_var = var;
    e->delta = delta;
  }
}

void fake_executor_op_initializes(fake_executor *fx, hk_handle op, unsigned which) {
  entity *e = ent(fx, op);
  if (e) e->inits = which;
}

void fake_executor_op_fails(fake_executor *fx, hk_handle op, hk_code code, const char *message) {
  entity *e = ent(fx, op);
  if (e) {
    e->fail_code = code;
    snprintf(e->fail_msg, sizeof(e->fail_msg), "%s", message ? message : "op failed");
  }
}

int fake_executor_op_runs(const fake_executor *fx, hk_handle op) {
  const entity *e = cent(fx, op);
  return e ? e->runs : -1;
}

hk_handle fake_executor_add_train_op(fake_executor *fx) {
  size_t n;
  hk_handle gs = HK_NO_HANDLE, op;
  n = fake_executor_role_count(fx, HK_ROLE_GLOBAL_STEP, &gs);
  if (n == 0) gs = fake_executor_add_global_step(fx);
  op = fake_executor_add_op(fx, "train");
  fake_executor_op_increments(fx, op, gs, 1);
  return op;
}

hk_handle fake_executor_add_report(fake_executor *fx, const char *name, fake_report_kind kind) {
  int64_t zero = 0;
  hk_handle h = new_entity(fx, K_REPORT, name);
  entity *e = ent(fx, h);
  set_shape(e, HK_DTYPE_STRING, 1, &zero);
  e->report_kind = kind;
  return h;
}

void fake_executor_script_report(fake_executor *fx, hk_handle report, const char *const *names, size_t n, int times) {
  entity *e = ent(fx, report);
  size_t i;
  if (e == NULL) return;
  e->nscript = 0;
  for (i = 0; i < n && i < FAKE_MAX_NAMES; i++) snprintf(e->script[e->nscript++], NAME_MAX_LEN, "%s", names[i]);
  e->script_times = times;
}

int fake_executor_report_evals(const fake_executor *fx, hk_handle report) {
  const entity *e = cent(fx, report);
  return e ? e->evals : -1;
}

void fake_executor_role_register(fake_executor *fx, const char *role, hk_handle handle) {
  if (fx->nroles >= MAX_ROLES) {
    fprintf(stderr, "fake_executor: too many role entries\n");
    abort();
  }
  snprintf(fx->roles[fx->nroles].role, NAME_MAX_LEN, "%s", role);
  fx->roles[fx->nroles].handle = handle;
  fx->nroles++;
}

size_t fake_executor_role_count(const fake_executor *fx, const char *role, hk_handle *first) {
  size_t i, n = 0;
  for (i = 0; i < fx->nroles; i++) {
    if (strcmp(fx->roles[i].role, role) != 0) continue;
    if (n == 0 && first) *first = fx->roles[i].handle;
    n++;
  }
  return n;
}

hk_handle fake_executor_default_handle(const fake_executor *fx, hk_default_op kind) {
  if ((int)kind < 1 || (int)kind > 4) return HK_NO_HANDLE;
  return fx->defaults[kind];
}

void fake_executor_fail(fake_executor *fx, fake_slot slot, int nth, int count, hk_code code, const char *message) {
  fault *f = &fx->faults[slot];
  memset(f, 0, sizeof(*f));
  if (nth <= 0) return;
  f->active = 1;
  f->start = fx->total[slot] + nth;
  f->remaining = count;
  f->code = code;
  snprintf(f->message, sizeof(f->message), "%s", message ? message : "scripted failure");
}

void fake_executor_on_run(fake_executor *fx, fake_run_fn fn, void *user) {
  fx->on_run = fn;
  fx->on_run_user = user;
}

void fake_executor_set_unimplemented_defaults(fake_executor *fx, int yes) { fx->unimplemented_defaults = yes; }

int fake_executor_calls(const fake_executor *fx, fake_slot slot) { return fx->calls[slot]; }

void fake_executor_reset_calls(fake_executor *fx) { memset(fx->calls, 0, sizeof(fx->calls)); }

const fake_run_record *fake_executor_last_run(const fake_executor *fx) { return &fx->last; }

int fake_executor_open_sessions(const fake_executor *fx) { return fx->nopen; }

int fake_executor_sessions_opened(const fake_executor *fx) { return fx->nopened; }

void *fake_executor_last_session(const fake_executor *fx) { return fx->sessions; }

int fake_executor_finalized(const fake_executor *fx) { return fx->finalized; }

int64_t fake_executor_get_i64(const fake_executor *fx, void *session, hk_handle var) {
  const fsession *s = find_session(fx, session);
  const entity *e = cent(fx, var);
  size_t i;
  if (s == NULL || e == NULL || e->kind != K_VAR) return INT64_MIN;
  i = (size_t)(e - fx->ents);
  if (!s->init[i]) return INT64_MIN;
  return int_get(e->dtype, s->values[i]);
}

void fake_executor_set_i64(fake_executor *fx, void *session, hk_handle var, int64_t value) {
  fsession *s = find_session(fx, session);
  entity *e = ent(fx, var);
  size_t i;
  if (s == NULL || e == NULL || e->kind != K_VAR) return;
  i = (size_t)(e - fx->ents);
  int_set(e->dtype, s->values[i], value);
  s->init[i] = 1;
}

int fake_executor_is_initialized(const fake_executor *fx, void *session, hk_handle var) {
  const fsession *s = find_session(fx, session);
  const entity *e = cent(fx, var);
  if (s == NULL || e == NULL || e->kind != K_VAR) return 0;
  return s->init[e - fx->ents];
}
