/*
 * The embedded default executor, shared between its files (hk__graph_ names).
 * Written only against the public headers.
 *
 * Layout: every node of the graph is an "op" (variables, placeholders and
 * constants included). Ops are stored in creation order, and a builder only
 * accepts handles of ops that already exist, so creation order is a
 * topological order: a run executes its needed ops by increasing index.
 * Every op output is a "slot" with a global index; tensor handles encode the
 * slot, op handles the op index, with distinct tags so the two never mix.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_GRAPH_INTERNAL_H
#define HOOKED_GRAPH_INTERNAL_H

#include "hooked/graph.h"

#include <stddef.h>
#include <stdint.h>

#define HK__GRAPH_NAME_MAX 255
#define HK__GRAPH_OP_TAG ((uint64_t)0x4F << 56)     /* 'O' */
#define HK__GRAPH_TENSOR_TAG ((uint64_t)0x54 << 56) /* 'T' */
#define HK__GRAPH_TAG_MASK ((uint64_t)0xFF << 56)

typedef enum hk__graph_op_kind {
  HK__OP_VARIABLE = 1,
  HK__OP_PLACEHOLDER,
  HK__OP_CONSTANT,
  HK__OP_KERNEL, /* custom op with a C kernel */
  HK__OP_NOOP,   /* group, or a custom op without kernel */
  HK__OP_ASSIGN,
  HK__OP_ASSIGN_ADD,
  HK__OP_INIT,
  HK__OP_REPORT
} hk__graph_op_kind;

typedef struct hk__graph_op {
  char *name;
  hk__graph_op_kind kind;
  hk_kernel_fn kernel;
  void *kernel_user;
  uint32_t *inputs; /* slot indices */
  size_t ninputs;
  uint32_t *controls; /* op indices */
  size_t ncontrols;
  uint32_t *mutates; /* variable indices */
  size_t nmutates;
  int initializes;
  uint32_t out_base; /* first slot */
  uint32_t noutputs;
  int64_t var;   /* variable index for HK__OP_VARIABLE, else -1 */
  uint32_t *aux; /* variable indices checked by HK__OP_REPORT */
  size_t naux;
  hk_tensor constant; /* HK__OP_CONSTANT: owns its data */
} hk__graph_op;

typedef struct hk__graph_slot {
  uint32_t op;
  uint32_t index;
  /* Declared spec; a dim of -1 means "any" (placeholders, readiness reports). */
  hk_dtype dtype;
  int32_t rank;
  int64_t dims[HK_MAX_RANK];
  size_t buf_bytes; /* per-session buffer pre-sized for the kernel */
  char *name;       /* "op:k" */
} hk__graph_slot;

typedef struct hk__graph_var {
  uint32_t op;
  hk_dtype dtype;
  int32_t rank;
  int64_t dims[HK_MAX_RANK];
  size_t nbytes;
  hk_initializer init;
  uint32_t flags; /* hk_variable_flags, EXTERNAL included */
  void *external;
} hk__graph_var;

typedef struct hk__graph_role {
  char *name;
  hk_handle *handles;
  size_t n, cap;
} hk__graph_role;

struct hk_graph {
  hk_env env;
  hk_executor *executor;
  int finalized;

  hk__graph_op *ops;
  size_t nops, capops;
  hk__graph_slot *slots;
  size_t nslots, capslots;
  hk__graph_var *vars;
  size_t nvars, capvars;
  hk__graph_role *roles;
  size_t nroles, caproles;

  /* open-addressing name table: op index + 1, 0 = empty */
  uint32_t *names;
  size_t capnames; /* power of two */

  size_t max_inputs; /* largest ninputs, for the session's input scratch */

  /* The checkpoint snapshot attached to one raw session (control ops
   * HK_CONTROL_SNAPSHOT_*): ops that mutate a variable of that session, and
   * assignments to it, copy the variable into it first. NULL: none. */
  hk_snapshot *snap;
  void *snap_session; /* the gsession it was attached to */
};

/* ---- graph.c: handles and names --------------------------------------- */
/** The op index named `name` (length len), or -1. */
int64_t hk__graph_find_op(const hk_graph *g, const char *name, size_t len);
/** Decode a tensor handle to a slot index; -1 when it is not one of g's. */
int64_t hk__graph_tensor_slot(const hk_graph *g, hk_handle h);
/** Decode an op handle to an op index; -1 when it is not one of g's. */
int64_t hk__graph_op_index(const hk_graph *g, hk_handle h);
hk_handle hk__graph_tensor_handle(uint32_t slot);
hk_handle hk__graph_op_handle(uint32_t op);
/** A name for any handle, for messages: the resolved name or "#<hex>". */
const char *hk__graph_handle_label(const hk_graph *g, hk_handle h, char *buf, size_t cap);
/** Shape text "[2, 3]" ("?" for -1 dims) of a dtype-less spec. */
const char *hk__graph_shape_str(int32_t rank, const int64_t *dims, char *buf, size_t cap);
/** Byte size of a shape with non-negative dims; 0 and *ok = 0 on overflow. */
size_t hk__graph_nbytes(hk_dtype dtype, int32_t rank, const int64_t *dims, int *ok);

/* ---- graph.c: the builder every op is added through ---------------------- */
typedef struct hk__graph_out_decl {
  hk_dtype dtype;
  int32_t rank;
  int64_t dims[HK_MAX_RANK];
  size_t buf_bytes;
} hk__graph_out_decl;

typedef struct hk__graph_op_spec {
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
  const hk__graph_out_decl *outputs;
  size_t noutputs;
  const uint32_t *aux;
  size_t naux;
  int64_t var;
} hk__graph_op_spec;

/** Check that the name is free, then add the op; nothing changes on failure. */
hk_code hk__graph_add_op(hk_graph *g, const hk__graph_op_spec *sp, uint32_t *out_index, hk_status *st);
/** Common entry checks of every builder: graph, finalization, out, name
 *  (name_what NULL: no name to check). */
hk_code hk__graph_builder_entry(hk_graph *g, const void *out, const char *out_name, const char *name,
                                const char *name_what, hk_status *st);
/** 1..HK__GRAPH_NAME_MAX bytes of [A-Za-z0-9_./-]; INVALID_ARGUMENT naming `what`. */
hk_code hk__graph_check_name(const char *name, const char *what, hk_status *st);
/** Validate a shape given as rank + dims; `min_dim` is 0, or -1 where "any" is allowed. */
hk_code hk__graph_check_shape(int32_t rank, const int64_t *dims, int64_t min_dim, const char *what, hk_status *st);
int hk__graph_dtype_valid(hk_dtype d);
/** FAILED_PRECONDITION: the graph is finalized. */
hk_code hk__graph_finalized_error(hk_status *st);
/** RESOURCE_EXHAUSTED adding `what`. */
hk_code hk__graph_oom(hk_status *st, const char *what);
/** Handles → indices (slots, ops, variables); INVALID_ARGUMENT naming the
 *  array and the entry that is not one. */
hk_code hk__graph_tensor_slots(const hk_graph *g, const hk_handle *hs, size_t n, const char *what, uint32_t *slots,
                               hk_status *st);
hk_code hk__graph_op_indices(const hk_graph *g, const hk_handle *hs, size_t n, const char *what, uint32_t *ops,
                             hk_status *st);
hk_code hk__graph_var_indices(const hk_graph *g, const hk_handle *hs, size_t n, const char *what, uint32_t *vars,
                              hk_status *st);
/** A variable's value handle or op handle → variable index, or -1. */
int64_t hk__graph_var_of_handle(const hk_graph *g, hk_handle h);
/** Scratch for handle → index conversions during a build (hk_env_free it). */
uint32_t *hk__graph_scratch(hk_graph *g, size_t n);
/** The role registry (the vtable's role_get and role_add slots). */
hk_code hk__graph_role_get(void *self, const char *role, hk_handle *out, size_t cap, size_t *count, hk_status *st);
hk_code hk__graph_role_add(void *self, const char *role, hk_handle handle, hk_status *st);
/** The vtable's destroy slot: frees the graph. */
void hk__graph_destroy(void *self);

/* ---- graph_ops.c -------------------------------------------------------- */
/** The initializer op of `vars`; n 0: of every variable whose
 *  HK_VAR_LOCAL flag is `local_want`. */
hk_code hk__graph_build_init(hk_graph *g, hk_handle *out_op, const char *name, const hk_handle *vars, size_t n,
                             uint32_t local_want, hk_status *st);
/** The op reporting which of `vars` are uninitialized; n 0: of every
 *  variable whose flags & mask are `want`. */
hk_code hk__graph_build_report(hk_graph *g, hk_handle *out_op, const char *name, const hk_handle *vars, size_t n,
                               uint32_t mask, uint32_t want, hk_status *st);

/* ---- graph_vtable.c ----------------------------------------------------- */
extern const hk_executor_vtable hk__graph_vtable;

/* ---- run.c -------------------------------------------------------------- */
hk_code hk__graph_open(void *self, void **out_session, hk_status *status);
hk_code hk__graph_close(void *self, void *session, hk_status *status);
hk_code hk__graph_run(void *self, void *session, const hk_run_args *args, hk_tensor *results, hk_run_metadata *metadata,
                      hk_status *status);
hk_code hk__graph_variable_read(void *self, void *session, size_t index, hk_tensor *out, hk_status *status);
hk_code hk__graph_variable_assign(void *self, void *session, size_t index, const hk_tensor *value, hk_status *status);
/** The executor's variable_storage slot (version 2): the variable's buffer,
 *  marked initialized. */
hk_code hk__graph_variable_storage(void *self, void *session, size_t index, hk_tensor *out, hk_status *status);
/** HK_CONTROL_SNAPSHOT_ATTACH and _DETACH (hooked/sys/executor.h). */
hk_code hk__graph_snapshot_control(hk_graph *g, int op, void *arg, hk_status *status);

/** What a stock kernel may see of its context. */
const hk__graph_op *hk__kernel_op(hk_kernel_context *ctx);
hk_graph *hk__kernel_graph(hk_kernel_context *ctx);
/** Nonzero when variable `var` is initialized in the running session. */
int hk__kernel_var_initialized(hk_kernel_context *ctx, size_t var);

/* ---- kernels.c ---------------------------------------------------------- */
hk_code hk__kernel_assign(void *user, hk_kernel_context *ctx, const hk_tensor *inputs, size_t ninputs,
                          hk_tensor *outputs, size_t noutputs, hk_status *status);
hk_code hk__kernel_assign_add(void *user, hk_kernel_context *ctx, const hk_tensor *inputs, size_t ninputs,
                              hk_tensor *outputs, size_t noutputs, hk_status *status);
hk_code hk__kernel_init(void *user, hk_kernel_context *ctx, const hk_tensor *inputs, size_t ninputs, hk_tensor *outputs,
                        size_t noutputs, hk_status *status);
hk_code hk__kernel_report(void *user, hk_kernel_context *ctx, const hk_tensor *inputs, size_t ninputs,
                          hk_tensor *outputs, size_t noutputs, hk_status *status);

/** Write the initial value of `var` into `data` (var->nbytes bytes). */
void hk__graph_initialize(const hk__graph_var *var, void *data);
/** Validate an initializer for `dtype`; INVALID_ARGUMENT naming `what`. */
hk_code hk__graph_check_initializer(const hk_initializer *init, hk_dtype dtype, const char *what, hk_status *status);
/** Nonzero for dtypes assign_add can add. */
int hk__graph_dtype_addable(hk_dtype dtype);

#endif /* HOOKED_GRAPH_INTERNAL_H */
