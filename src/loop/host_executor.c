/*
 * The host loop's executor (see host_executor.h). Every variable is memory
 * the program owns: an array is viewed in place (and handed out as storage,
 * so a restore reads the checkpoint straight into it), an opaque state passes
 * through a buffer of its own that its save callback fills whenever the
 * state is read and its restore callback empties whenever it is assigned.
 * There are no ops: a run only fetches, after the program's step, so hooks
 * see the values the step produced. Written against hooked/sys/executor.h
 * alone.
 *
 * Copy-before-write snapshots: the executor accepts one only
 * when the loop allows it (the program called hk_loop_updates_begin() in
 * the step just ended). Opaque states and the global step are copied at
 * attach, on the training thread (a state's bytes come from its save
 * callback); arrays are copied by the writer thread until the program's
 * next hk_loop_updates_begin() completes the copy, before its writes.
 *
 * The check-resume mode (HOOKED_CHECK_RESUME, hooked/checkpoint_saver.h): every read
 * of an opaque state calls its save callback twice, the destination and
 * the stack below filled with other bytes each time, and a state whose two
 * reads differ is named (uninitialized padding in the struct it copies, or
 * bytes it does not write), once per state, in a WARNING and in a report
 * file for hooked-ckpt check-resume. Outside the mode nothing of this runs
 * or is allocated. Reading the variable is the one thing here beyond
 * hooked/sys/executor.h (core.h's parser, shared with the checkpoint
 * hooks).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "loop/host_executor.h"
#include "core/core.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct entry {
  char *name;
  hk_dtype dtype;
  int32_t rank;
  int64_t dims[HK_MAX_RANK];
  void *data; /* the program's array, or `buf` for a state */
  size_t nbytes;
  uint32_t flags;             /* hk_variable_flags */
  hk_loop_state_save_fn save; /* NULL for an array */
  hk_loop_state_restore_fn restore;
  void *user;
  int unstable; /* the check-resume mode named it already */
} entry;

struct hk__host {
  hk_env env;
  entry *e;
  size_t n, cap;
  size_t gs; /* index of the global step */
  int has_gs;
  int finalized;
  hk_op_trace trace; /* the last step, for traced runs */
  int has_trace;
  int overlap;       /* the loop allows a snapshot to be attached */
  hk_snapshot *snap; /* the attached snapshot, NULL: none */
  /* The check-resume mode: states are read twice, the second time into
   * check_buf (as large as the largest state); report: the directory for
   * report files, NULL: none. */
  int check;
  unsigned char *check_buf;
  char *report;
};

/* Handles: tensor handle of entry i is i + 1; there are no op handles. */
#define HANDLE_OF(i) ((hk_handle)(i) + 1)

hk__host *hk__host_new(const hk_env *env) {
  hk__host *h = hk_env_calloc(env, 1, sizeof *h);
  if (!h) return NULL;
  hk_env_copy(&h->env, env);
  h->trace.op_name = "step";
  return h;
}

void hk__host_free(hk__host *h) {
  if (!h) return;
  hk_env env = h->env;
  for (size_t i = 0; i < h->n; i++) {
    hk_env_free(&env, h->e[i].name);
    if (h->e[i].save) hk_env_free(&env, h->e[i].data);
  }
  hk_env_free(&env, h->e);
  hk_env_free(&env, h->check_buf);
  hk_env_free(&env, h->report);
  hk_env_free(&env, h);
}

static entry *find(const hk__host *h, const char *name, size_t len) {
  for (size_t i = 0; i < h->n; i++)
    if (strlen(h->e[i].name) == len && memcmp(h->e[i].name, name, len) == 0) return &h->e[i];
  return NULL;
}

hk_code hk__host_add(hk__host *h, const char *name, hk_dtype dtype, int32_t rank, const int64_t *dims, void *data,
                     size_t nbytes, uint32_t var_flags, hk_loop_state_save_fn save, hk_loop_state_restore_fn restore,
                     void *user, hk_status *st) {
  if (find(h, name, strlen(name)))
    return hk_status_set(st, HK_ALREADY_EXISTS, "the loop already has an array or state named '%s'", name);
  if (h->n == h->cap) {
    size_t cap = h->cap ? h->cap * 2 : 8;
    entry *e = hk_env_realloc(&h->env, h->e, cap * sizeof *e);
    if (!e) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory registering '%s'", name);
    h->e = e;
    h->cap = cap;
  }
  entry *e = &h->e[h->n];
  memset(e, 0, sizeof *e);
  e->name = hk_env_strdup(&h->env, name);
  if (!e->name) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory registering '%s'", name);
  if (save) {
    /* Allocated as doubles so the callbacks may store any type there. */
    size_t words = (nbytes + sizeof(double) - 1) / sizeof(double);
    data = hk_env_calloc(&h->env, words, sizeof(double));
    if (!data) {
      hk_env_free(&h->env, e->name);
      return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory for the %zu-byte buffer of state '%s'", nbytes,
                           name);
    }
  }
  e->dtype = dtype;
  e->rank = rank;
  for (int32_t d = 0; d < rank; d++) e->dims[d] = dims[d];
  e->data = data;
  e->nbytes = nbytes;
  e->flags = var_flags | HK_VAR_EXTERNAL;
  e->save = save;
  e->restore = restore;
  e->user = user;
  h->n++;
  return HK_OK;
}

int hk__host_describe(const hk__host *h, const char *name, hk_dtype *dtype, int64_t *elements, int *is_state) {
  size_t len = strlen(name);
  if (len >= 2 && strcmp(name + len - 2, ":0") == 0) len -= 2;
  const entry *e = find(h, name, len);
  if (!e) return 0;
  int64_t n = 1;
  for (int32_t d = 0; d < e->rank; d++) n *= e->dims[d];
  *dtype = e->dtype;
  *elements = n;
  *is_state = e->save != NULL;
  return 1;
}

static hk_tensor spec_of(const entry *e);

int hk__host_spec(const hk__host *h, const char *name, hk_tensor *spec, uint32_t *flags, int *is_state) {
  size_t len = strlen(name);
  if (len >= 2 && strcmp(name + len - 2, ":0") == 0) len -= 2;
  const entry *e = find(h, name, len);
  if (!e) return 0;
  *spec = spec_of(e);
  spec->data = NULL;
  spec->nbytes = e->nbytes;
  *flags = e->flags;
  *is_state = e->save != NULL;
  return 1;
}

void hk__host_set_global_step(hk__host *h, size_t index) {
  h->gs = index;
  h->has_gs = 1;
}

size_t hk__host_count(const hk__host *h) { return h->n; }

int64_t hk__host_global_step(const hk__host *h) {
  if (!h || !h->has_gs) return 0;
  const entry *e = &h->e[h->gs];
  hk_tensor t;
  if (hk_tensor_init(&t, e->dtype, 0, NULL, e->data, NULL) != HK_OK) return 0;
  int64_t v = 0;
  (void)hk_tensor_to_i64(&v, &t, e->name, NULL);
  return v;
}

void hk__host_set_step_times(hk__host *h, double start, double end) {
  h->trace.start_secs = start;
  h->trace.end_secs = end;
  h->has_trace = 1;
}

void hk__host_clear_step_times(hk__host *h) { h->has_trace = 0; }

/* ---- reading and writing entries ----------------------------------------------- */

/* A callback may fail without a message: name it. */
static hk_code callback_status(hk_code rc, hk_status *st, const char *what, const char *name) {
  if (rc == HK_OK) return HK_OK;
  if (st && (st->code != rc || st->message[0] == '\0'))
    hk_status_set(st, rc, "the %s callback of state '%s' failed with %s", what, name, hk_code_name(rc));
  return rc;
}

/* The entry's dtype and shape as a tensor without data, for messages. */
static hk_tensor spec_of(const entry *e) {
  hk_tensor t;
  memset(&t, 0, sizeof t);
  t.dtype = e->dtype;
  t.rank = e->rank;
  for (int32_t d = 0; d < e->rank; d++) t.dims[d] = e->dims[d];
  return t;
}

/* ---- the check-resume mode's double read ---------------------------------------- */

#define SCRIBBLE_BYTES 16384
#define SHOWN_RANGES 8

/* AddressSanitizer would put redzones around the array below, which it
 * never writes: the callback's frame can fall in them. Uninstrumented, the
 * array reaches up to the caller's frame. (With its use-after-return
 * detection on, the callback's locals live on a separate fake stack that
 * no fill reaches; only bytes of dst it leaves unwritten are seen then.) */
#if defined(__has_attribute)
#if __has_attribute(no_sanitize_address)
#define NO_ASAN __attribute__((no_sanitize_address))
#endif
#endif
#ifndef NO_ASAN
#define NO_ASAN
#endif

/* Fill SCRIBBLE_BYTES of the stack below the caller with `byte`: what a save
 * callback called next finds in the locals it leaves uninitialized. */
NO_ASAN static void scribble_stack(unsigned char byte) {
  volatile unsigned char junk[SCRIBBLE_BYTES];
  for (size_t i = 0; i < sizeof junk; i++) junk[i] = byte;
}

/* Called through a volatile pointer so it is never inlined: its array must
 * lie where the callback's frame will. */
static void (*const volatile scribble)(unsigned char) = scribble_stack;

/* "1-7, 9-15" (inclusive byte offsets) of the bytes where a and b differ,
 * the first SHOWN_RANGES ranges and how many more. */
static void differing_ranges(const unsigned char *a, const unsigned char *b, size_t n, char *buf, size_t cap) {
  size_t len = 0, ranges = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < n;) {
    if (a[i] == b[i]) {
      i++;
      continue;
    }
    size_t start = i;
    while (i < n && a[i] != b[i]) i++;
    if (ranges++ < SHOWN_RANGES && len < cap) {
      int k = snprintf(buf + len, cap - len, "%s%zu-%zu", len ? ", " : "", start, i - 1);
      if (k > 0) len += (size_t)k;
    }
  }
  if (ranges > SHOWN_RANGES && len < cap) snprintf(buf + len, cap - len, " and %zu more", ranges - SHOWN_RANGES);
}

/* Name state `e`, whose two reads differ in `ranges`: a WARNING, and a
 * report file "unstable-<pid>-<name>" ('/' made '%', which no name holds,
 * so two states never share a file) in the report directory for
 * hooked-ckpt check-resume. */
static hk_code report_unstable(hk__host *h, entry *e, const char *ranges, hk_status *st) {
  hk_env_log(&h->env, HK_LOG_WARNING,
             "check-resume mode: state '%s' gave different bytes in two reads of the same state (bytes %s of %zu "
             "differ): uninitialized padding in the struct its save callback copies, or bytes of dst it does not "
             "write? Its checkpoints are not reproducible.",
             e->name, ranges, e->nbytes);
  e->unstable = 1;
  if (!h->report) return HK_OK;
  size_t cap = strlen(h->report) + strlen(e->name) + 64;
  char *path = hk_env_alloc(&h->env, cap);
  size_t tcap = strlen(e->name) + strlen(ranges) + 64;
  char *text = hk_env_alloc(&h->env, tcap);
  hk_code rc = HK_OK;
  if (!path || !text) {
    rc = hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory reporting state '%s' (check-resume mode)", e->name);
  } else {
    int n = snprintf(path, cap, "%s/unstable-%ld-", h->report, (long)getpid());
    for (const char *c = e->name; *c && (size_t)n + 1 < cap; c++) path[n++] = *c == '/' ? '%' : *c;
    path[n] = '\0';
    int len = snprintf(text, tcap, "state %s\nsize %zu\nbytes %s\n", e->name, e->nbytes, ranges);
    rc = hk_fs_write_file_atomic(&h->env, path, text, (size_t)len, st);
  }
  hk_env_free(&h->env, path);
  hk_env_free(&h->env, text);
  return rc;
}

/* Read state `e` twice, into its buffer and into check_buf, each filled
 * with other bytes first and with other bytes on the stack below: a state
 * whose bytes all come from the state reads the same twice. The first read
 * is the one kept. */
static hk_code read_twice(hk__host *h, entry *e, hk_status *st) {
  memset(e->data, 0xa5, e->nbytes);
  scribble(0xa5);
  hk_code rc = callback_status(e->save(e->user, e->data, e->nbytes, st), st, "save", e->name);
  if (rc != HK_OK) return rc;
  memset(h->check_buf, 0x5a, e->nbytes);
  scribble(0x5a);
  rc = callback_status(e->save(e->user, h->check_buf, e->nbytes, st), st, "save", e->name);
  if (rc != HK_OK || e->unstable || memcmp(e->data, h->check_buf, e->nbytes) == 0) return rc;
  char ranges[256];
  differing_ranges(e->data, h->check_buf, e->nbytes, ranges, sizeof ranges);
  return report_unstable(h, e, ranges, st);
}

hk_code hk__host_check_resume(hk__host *h, int *on, hk_status *st) {
  hk__check_resume cr;
  size_t largest = 0;
  *on = 0;
  hk_code rc = hk__check_resume_read(&cr, st);
  if (rc != HK_OK || !cr.on) return rc;
  for (size_t i = 0; i < h->n; i++)
    if (h->e[i].save && h->e[i].nbytes > largest) largest = h->e[i].nbytes;
  if (largest > 0 && !(h->check_buf = hk_env_alloc(&h->env, largest)))
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory for the check-resume mode's second reads");
  if (cr.report) {
    if (!(h->report = hk_env_alloc(&h->env, cr.report_len + 1)))
      return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory for the check-resume mode's report directory");
    memcpy(h->report, cr.report, cr.report_len);
    h->report[cr.report_len] = '\0';
  }
  h->check = largest > 0;
  *on = 1;
  return HK_OK;
}

/* A state's save callback rewrites its buffer: copy-before-write first. */
static hk_code view(hk__host *h, size_t index, hk_tensor *out, hk_status *st) {
  entry *e = &h->e[index];
  if (e->save) {
    hk_snapshot_before_write(h->snap, index);
    hk_code rc = h->check ? read_twice(h, e, st)
                          : callback_status(e->save(e->user, e->data, e->nbytes, st), st, "save", e->name);
    if (rc != HK_OK) return rc;
  }
  *out = spec_of(e);
  out->data = e->data;
  out->nbytes = e->nbytes;
  return HK_OK;
}

/* ---- the vtable -------------------------------------------------------------------- */

static hk_code x_resolve_tensor(void *self, const char *name, hk_handle *out, hk_status *st) {
  hk__host *h = self;
  size_t len = strlen(name);
  const char *colon = strrchr(name, ':');
  if (colon) {
    if (strcmp(colon, ":0") != 0)
      return hk_status_set(st, HK_NOT_FOUND, "the host loop has no tensor '%s' (each array has only output 0)", name);
    len = (size_t)(colon - name);
  }
  entry *e = find(h, name, len);
  if (!e) return hk_status_set(st, HK_NOT_FOUND, "the host loop has no array or state named '%s'", name);
  *out = HANDLE_OF(e - h->e);
  return HK_OK;
}

static hk_code x_resolve_op(void *self, const char *name, hk_handle *out, hk_status *st) {
  (void)self;
  (void)out;
  return hk_status_set(st, HK_NOT_FOUND,
                       "the host loop has no op '%s': the program's step is its only work, and it is not an op", name);
}

static entry *entry_of(hk__host *h, hk_handle handle) {
  return handle >= 1 && handle <= h->n ? &h->e[handle - 1] : NULL;
}

static const char *x_handle_name(void *self, hk_handle handle) {
  entry *e = entry_of(self, handle);
  return e ? e->name : NULL;
}

static hk_code x_finalize(void *self, hk_status *st) {
  (void)st;
  ((hk__host *)self)->finalized = 1;
  return HK_OK;
}

static int x_is_finalized(void *self) { return ((hk__host *)self)->finalized; }

/* The program's memory is the only state, so every raw session is a view
 * of it: the executor itself stands for the session. */
static hk_code x_open(void *self, void **out, hk_status *st) {
  (void)st;
  *out = self;
  return HK_OK;
}

static hk_code x_run(void *self, void *session, const hk_run_args *args, hk_tensor *results, hk_run_metadata *md,
                     hk_status *st) {
  hk__host *h = self;
  (void)session;
  if (md) {
    md->trace = NULL;
    md->ntrace = 0;
    md->executor_data = NULL;
  }
  if (args->nfeeds) {
    entry *e = entry_of(h, args->feeds[0].tensor);
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "the host loop takes no feeds (tensor '%s' is fed): its arrays are the program's, written "
                         "by the program's step",
                         e ? e->name : "?");
  }
  if (args->ntargets)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "the host loop has no ops to run (target #%llu)",
                         (unsigned long long)args->targets[0]);
  for (size_t i = 0; i < args->nfetches; i++) {
    entry *e = entry_of(h, args->fetches[i]);
    if (!e)
      return hk_status_set(st, HK_INVALID_ARGUMENT, "fetch %zu: #%llu is not a tensor of the host loop", i,
                           (unsigned long long)args->fetches[i]);
    hk_code rc = view(h, (size_t)(e - h->e), &results[i], st);
    if (rc != HK_OK) return rc;
  }
  if (md && h->has_trace && args->options && args->options->trace_level >= 1) {
    md->trace = &h->trace;
    md->ntrace = 1;
  }
  return HK_OK;
}

static size_t x_variable_count(void *self) { return ((hk__host *)self)->n; }

static hk_code x_variable_info(void *self, size_t index, hk_variable_info *out, hk_status *st) {
  (void)st;
  entry *e = &((hk__host *)self)->e[index];
  out->name = e->name;
  out->tensor = HANDLE_OF(index);
  out->dtype = e->dtype;
  out->rank = e->rank;
  for (int32_t d = 0; d < e->rank; d++) out->dims[d] = e->dims[d];
  out->flags = e->flags;
  return HK_OK;
}

static hk_code x_variable_read(void *self, void *session, size_t index, hk_tensor *out, hk_status *st) {
  (void)session;
  return view(self, index, out, st);
}

static hk_code x_variable_assign(void *self, void *session, size_t index, const hk_tensor *value, hk_status *st) {
  entry *e = &((hk__host *)self)->e[index];
  (void)session;
  int same = value->dtype == e->dtype && value->rank == e->rank && value->nbytes == e->nbytes;
  for (int32_t d = 0; same && d < e->rank; d++) same = value->dims[d] == e->dims[d];
  if (!same) {
    char want[96], got[96];
    hk_tensor spec = spec_of(e);
    return hk_status_set(st, HK_INVALID_ARGUMENT, "cannot assign a %s%s value to '%s', a %s%s",
                         hk_dtype_name(value->dtype), hk_tensor_shape_str(value, got, sizeof got), e->name,
                         hk_dtype_name(e->dtype), hk_tensor_shape_str(&spec, want, sizeof want));
  }
  hk_snapshot_before_write(((hk__host *)self)->snap, index); /* a pending snapshot copies it first */
  if (e->save) return callback_status(e->restore(e->user, value->data, e->nbytes, st), st, "restore", e->name);
  if (e->nbytes && value->data != e->data) memcpy(e->data, value->data, e->nbytes);
  return HK_OK;
}

/* An array is the program's own memory: a restore reads the checkpoint
 * straight into it. A state has only its callbacks: no storage, so it is
 * assigned, and its restore callback runs. */
static hk_code x_variable_storage(void *self, void *session, size_t index, hk_tensor *out, hk_status *st) {
  hk__host *h = self;
  entry *e = &h->e[index];
  (void)session;
  if (e->save)
    return hk_status_set(st, HK_UNIMPLEMENTED, "'%s' is a state: its bytes go through its restore callback", e->name);
  hk_snapshot_before_write(h->snap, index); /* the caller writes it next */
  *out = spec_of(e);
  out->data = e->data;
  out->nbytes = e->nbytes;
  return HK_OK;
}

static hk_code x_role_get(void *self, const char *role, hk_handle *out, size_t cap, size_t *count, hk_status *st) {
  hk__host *h = self;
  (void)st;
  *count = 0;
  if (h->has_gs && strcmp(role, HK_ROLE_GLOBAL_STEP) == 0) {
    if (cap > 0) out[0] = HANDLE_OF(h->gs);
    *count = 1;
  }
  return HK_OK;
}

static hk_code x_describe(void *self, hk_text_sink sink, void *sink_user, hk_status *st) {
  hk__host *h = self;
  for (size_t i = 0; i < h->n; i++) {
    const entry *e = &h->e[i];
    char line[512], shape[96];
    hk_tensor t = spec_of(e);
    int len =
        snprintf(line, sizeof line, "%s %s %s%s%s%s\n", e->save ? "state" : "array", e->name, hk_dtype_name(e->dtype),
                 hk_tensor_shape_str(&t, shape, sizeof shape), (e->flags & HK_VAR_LOCAL) ? " not-checkpointed" : "",
                 (e->flags & HK_VAR_OPTIONAL) ? " optional" : "");
    if (len < 0) continue;
    hk_code rc = sink(sink_user, line, (size_t)len < sizeof line ? (size_t)len : sizeof line - 1, st);
    if (rc != HK_OK) return rc;
  }
  return HK_OK;
}

/* HK_CONTROL_SNAPSHOT_ATTACH and _DETACH. */
static hk_code x_control(void *self, int op, void *arg, hk_status *st) {
  hk__host *h = self;
  const hk_control_snapshot *a = arg;
  if (op != HK_CONTROL_SNAPSHOT_ATTACH && op != HK_CONTROL_SNAPSHOT_DETACH)
    return hk_status_set(st, HK_UNIMPLEMENTED, "the host loop has no control op %d", op);
  if (!a || a->version != HK_CONTROL_SNAPSHOT_VERSION || !a->snapshot)
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "the host loop's control op %d needs an hk_control_snapshot (version %u) "
                         "with a snapshot",
                         op, (unsigned)HK_CONTROL_SNAPSHOT_VERSION);
  if (op == HK_CONTROL_SNAPSHOT_DETACH) {
    if (h->snap == a->snapshot) {
      hk_snapshot_complete(h->snap);
      h->snap = NULL;
    }
    return HK_OK;
  }
  if (!h->overlap)
    return hk_status_set(st, HK_UNIMPLEMENTED,
                         "the host loop copies a checkpoint at the step boundary unless the program calls "
                         "hk_loop_updates_begin() in its steps");
  if (h->snap && h->snap != a->snapshot) hk_snapshot_complete(h->snap);
  h->snap = a->snapshot;
  /* A state's bytes are its save callback's, on this thread; the
   * global step is cheap, and a program may advance it early in a step. */
  for (size_t i = 0; i < h->n; i++)
    if (h->e[i].save || (h->has_gs && i == h->gs)) hk_snapshot_before_write(h->snap, i);
  return HK_OK;
}

static void x_destroy(void *self) { hk__host_free(self); }

static const hk_executor_vtable host_vtable = {
    .version = HK_EXECUTOR_VTABLE_VERSION,
    .name = "host loop",
    .resolve_tensor = x_resolve_tensor,
    .resolve_op = x_resolve_op,
    .handle_name = x_handle_name,
    .finalize = x_finalize,
    .is_finalized = x_is_finalized,
    .open = x_open,
    .close = NULL,
    .run = x_run,
    .variable_count = x_variable_count,
    .variable_info = x_variable_info,
    .variable_read = x_variable_read,
    .variable_assign = x_variable_assign,
    .role_get = x_role_get,
    .role_add = NULL,
    .default_op = NULL,
    .describe = x_describe,
    .control = x_control,
    .destroy = x_destroy,
    .variable_storage = x_variable_storage,
};

void hk__host_allow_overlap(hk__host *h, int allow) { h->overlap = allow != 0; }

int hk__host_snapshot_attached(const hk__host *h) { return h->snap != NULL; }

void hk__host_updates_begin(hk__host *h) {
  hk_snapshot_complete(h->snap);
  h->snap = NULL;
}

void hk__host_before_write(hk__host *h, size_t index) { hk_snapshot_before_write(h->snap, index); }

hk_code hk__host_executor_new(hk_executor **out, hk__host *h, const hk_env *env, hk_status *st) {
  hk_code rc = hk_executor_new(out, &host_vtable, h, env, st);
  if (rc != HK_OK) hk__host_free(h);
  return rc;
}
