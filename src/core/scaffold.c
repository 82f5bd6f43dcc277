/*
 * Scaffold (contract group F): which ops initialize and check the model,
 * defaulted from the executor's role registry at finalization.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "core/core_internal.h"
#include "util/common.h"

#include <string.h>

struct hk_scaffold {
  hk_env env;
  hk_handle init_op;
  hk_feed *init_feed;
  size_t ninit_feed;
  hk_init_fn init_fn;
  void *init_fn_user;
  hk_handle ready_op;
  hk_handle ready_for_local_init_op;
  hk_handle local_init_op;
  hk_feed *local_init_feed;
  size_t nlocal_init_feed;
  hk_executor *finalized_with;
  hk_saver *saver; /* given (borrowed) or built by finalize (owned) */
  hk_saver *given_saver;
  int owns_saver;
  hk_handle *summary_op; /* owned copy; NULL/0 = unset */
  size_t nsummary_op;
};

hk_code hk__feeds_copy(const hk_env *env, const hk_feed *src, size_t n, hk_feed **out, const char *what,
                       hk_status *st) {
  *out = NULL;
  if (n == 0) return HK_OK;
  if (!src) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s is NULL with a count of %zu", what, n);
  size_t total = n * sizeof(hk_feed);
  for (size_t i = 0; i < n; i++) {
    const hk_tensor *v = &src[i].value;
    hk_tensor check;
    hk_status why = HK_STATUS_INIT;
    hk_code rc = hk_tensor_init(&check, v->dtype, v->rank, v->dims, v->data, &why);
    if (rc != HK_OK) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s[%zu]: %s", what, i, why.message);
    if (v->dtype == HK_DTYPE_STRING)
      return hk_status_set(st, HK_INVALID_ARGUMENT, "%s[%zu]: string tensors cannot be copied into a feed", what, i);
    if (src[i].tensor == HK_NO_HANDLE)
      return hk_status_set(st, HK_INVALID_ARGUMENT, "%s[%zu]: tensor handle is unset", what, i);
    size_t pad = (16 - total % 16) % 16;
    if (check.nbytes > SIZE_MAX - total - pad) return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: too large", what);
    total += pad + check.nbytes;
  }
  unsigned char *mem = hk_env_alloc(env, total);
  if (!mem) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "%s: out of memory", what);
  hk_feed *dst = (hk_feed *)mem;
  size_t off = n * sizeof(hk_feed);
  for (size_t i = 0; i < n; i++) {
    dst[i] = src[i];
    off += (16 - off % 16) % 16;
    dst[i].value.data = src[i].value.nbytes ? mem + off : NULL;
    if (src[i].value.nbytes) memcpy(mem + off, src[i].value.data, src[i].value.nbytes);
    off += src[i].value.nbytes;
  }
  *out = dst;
  return HK_OK;
}

const char *hk__handle_label(hk_executor *ex, hk_handle h) {
  return h == HK_NO_HANDLE ? "None" : hk_executor_handle_name(ex, h);
}

static const hk_scaffold_options default_options = HK_SCAFFOLD_OPTIONS_INIT;

static hk_handle *dup_handles(const hk_env *env, const hk_handle *src, size_t n) {
  hk_handle *p = hk_env_calloc(env, n, sizeof *p);
  if (p) memcpy(p, src, n * sizeof *p);
  return p;
}

/* summary_op given, else copy_from's. */
static hk_code copy_summary_op(hk_scaffold *s, const hk_scaffold_options *o, const hk_scaffold *from, hk_status *st) {
  const hk_handle *src = NULL;
  size_t n = 0;
  if (o->nsummary_op) {
    if (!o->summary_op)
      return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_scaffold_new: summary_op is NULL with nsummary_op %zu",
                           o->nsummary_op);
    for (size_t i = 0; i < o->nsummary_op; i++)
      if (o->summary_op[i] == HK_NO_HANDLE)
        return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_scaffold_new: summary_op[%zu] is unset", i);
    src = o->summary_op;
    n = o->nsummary_op;
  } else if (from && from->nsummary_op) {
    src = from->summary_op;
    n = from->nsummary_op;
  }
  if (!n) return HK_OK;
  s->summary_op = dup_handles(&s->env, src, n);
  if (!s->summary_op) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_scaffold_new: out of memory");
  s->nsummary_op = n;
  return HK_OK;
}

hk_code hk_scaffold_options_init(hk_scaffold_options *o, uint32_t version) {
  return HK__STRUCT_INIT(o, version, hk_scaffold_options, HK_SCAFFOLD_OPTIONS_INIT);
}

hk_code hk_scaffold_new(hk_scaffold **out, const hk_scaffold_options *o, hk_status *st) {
  if (out) *out = NULL;
  if (!out) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_scaffold_new: out is NULL");
  if (!o) o = &default_options;
  HK__CHECK_VERSION(o, HK_SCAFFOLD_OPTIONS_VERSION, hk_scaffold_options, "hk_scaffold_new: opts", st);
  hk_code rc = hk_env_check(o->env, "hk_scaffold_new: env", st);
  if (rc != HK_OK) return rc;
  const hk_scaffold *from = o->copy_from;
  /* Given fields win; the others come from copy_from. */
  hk_handle init_op = o->init_op ? o->init_op : (from ? from->init_op : HK_NO_HANDLE);
  const hk_feed *init_feed = o->ninit_feed ? o->init_feed : (from ? from->init_feed : NULL);
  size_t ninit_feed = o->ninit_feed ? o->ninit_feed : (from ? from->ninit_feed : 0);
  if (o->init_feed == NULL && o->ninit_feed)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_scaffold_new: init_feed is NULL with ninit_feed %zu",
                         o->ninit_feed);
  if (o->local_init_feed == NULL && o->nlocal_init_feed)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_scaffold_new: local_init_feed is NULL with nlocal_init_feed %zu",
                         o->nlocal_init_feed);
  const hk_feed *local_feed = o->nlocal_init_feed ? o->local_init_feed : (from ? from->local_init_feed : NULL);
  size_t nlocal_feed = o->nlocal_init_feed ? o->nlocal_init_feed : (from ? from->nlocal_init_feed : 0);

  const hk_env *env = o->env ? o->env : (from ? &from->env : NULL);
  hk_scaffold *s = hk_env_calloc(env, 1, sizeof *s);
  if (!s) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_scaffold_new: out of memory");
  hk_env_copy(&s->env, env);
  s->init_op = init_op;
  s->init_fn = o->init_fn ? o->init_fn : (from ? from->init_fn : NULL);
  s->init_fn_user = o->init_fn ? o->init_fn_user : (from ? from->init_fn_user : NULL);
  s->ready_op = o->ready_op ? o->ready_op : (from ? from->ready_op : HK_NO_HANDLE);
  s->ready_for_local_init_op =
      o->ready_for_local_init_op ? o->ready_for_local_init_op : (from ? from->ready_for_local_init_op : HK_NO_HANDLE);
  s->local_init_op = o->local_init_op ? o->local_init_op : (from ? from->local_init_op : HK_NO_HANDLE);
  s->given_saver = o->saver ? o->saver : (from ? from->given_saver : NULL);
  s->saver = s->given_saver;
  rc = copy_summary_op(s, o, from, st);
  if (rc == HK_OK) rc = hk__feeds_copy(&s->env, init_feed, ninit_feed, &s->init_feed, "hk_scaffold_new: init_feed", st);
  if (rc == HK_OK)
    rc = hk__feeds_copy(&s->env, local_feed, nlocal_feed, &s->local_init_feed, "hk_scaffold_new: local_init_feed", st);
  if (rc != HK_OK) {
    hk_scaffold_free(s);
    return rc;
  }
  s->ninit_feed = ninit_feed;
  s->nlocal_init_feed = nlocal_feed;
  *out = s;
  return HK_OK;
}

void hk_scaffold_free(hk_scaffold *s) {
  if (!s) return;
  hk_env env = s->env;
  if (s->owns_saver) hk_saver_free(s->saver);
  hk_env_free(&env, s->init_feed);
  hk_env_free(&env, s->local_init_feed);
  hk_env_free(&env, s->summary_op);
  hk_env_free(&env, s);
}

/* Fill one unset field from the role registry or the executor's default. */
static hk_code fill_role(hk_scaffold *s, hk_executor *ex, hk_handle *field, const char *role, hk_default_op kind,
                         hk_status *st) {
  if (*field != HK_NO_HANDLE) return HK_OK;
  hk_handle found[2];
  size_t count = 0;
  hk_code rc = hk_executor_role_get(found, 2, &count, ex, role, st);
  if (rc != HK_OK) return rc;
  if (count > 1)
    return hk_status_set(st, HK_FAILED_PRECONDITION,
                         "More than one item in the collection \"%s\". Please indicate which one to use by passing it "
                         "to the Scaffold constructor as: %s=<item to use>",
                         role, role);
  if (count == 1) {
    *field = found[0];
    return HK_OK;
  }
  hk_status tmp = HK_STATUS_INIT;
  rc = hk_executor_default_op(field, ex, kind, &tmp);
  if (rc == HK_UNIMPLEMENTED) {
    /* An executor without defaults leaves the field unset; the session
     * manager then reports what is missing. */
    hk_env_log(&s->env, HK_LOG_DEBUG, "Scaffold: executor has no default %s: %s", role, tmp.message);
    *field = HK_NO_HANDLE;
    return HK_OK;
  }
  if (rc != HK_OK) {
    hk__status_copy(st, &tmp);
    return rc;
  }
  rc = hk_executor_role_add(ex, role, *field, &tmp);
  if (rc != HK_OK && rc != HK_UNIMPLEMENTED) {
    hk__status_copy(st, &tmp);
    return rc;
  }
  return HK_OK;
}

/* Finalization's summary_op when unset: the one op registered under the role, else a
 * merge of every registered summary (registered under the role), else —
 * an executor that cannot merge — the registered summaries themselves.
 * *out is owned (NULL with *n 0 when unset); the Scaffold is not touched. */
static hk_code fill_summary_op(hk_scaffold *s, hk_executor *ex, hk_handle **out, size_t *n, hk_status *st) {
  *out = NULL;
  *n = 0;
  if (s->nsummary_op) return HK_OK;
  hk_handle found[2];
  size_t count = 0;
  hk_code rc = hk_executor_role_get(found, 2, &count, ex, HK_ROLE_SUMMARY_OP, st);
  if (rc != HK_OK) return rc;
  if (count > 1)
    return hk_status_set(st, HK_FAILED_PRECONDITION,
                         "More than one item in the collection \"%s\". Please indicate which one to use by passing it "
                         "to the Scaffold constructor as: %s=<item to use>",
                         HK_ROLE_SUMMARY_OP, HK_ROLE_SUMMARY_OP);
  if (count == 1) {
    if (!(*out = dup_handles(&s->env, found, 1)))
      return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_scaffold_finalize: out of memory");
    *n = 1;
    return HK_OK;
  }
  rc = hk_executor_role_get(NULL, 0, &count, ex, HK_ROLE_SUMMARIES, st);
  if (rc != HK_OK || count == 0) return rc; /* no summaries: unset */
  hk_handle *all = hk_env_calloc(&s->env, count, sizeof *all);
  if (!all) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_scaffold_finalize: out of memory");
  size_t got = 0;
  rc = hk_executor_role_get(all, count, &got, ex, HK_ROLE_SUMMARIES, st);
  if (rc == HK_OK && got != count)
    rc = hk_status_set(st, HK_INTERNAL, "hk_scaffold_finalize: role \"%s\" changed size while read", HK_ROLE_SUMMARIES);
  if (rc != HK_OK) {
    hk_env_free(&s->env, all);
    return rc;
  }
  hk_merge_summaries_request req = {all, count, HK_NO_HANDLE};
  hk_status tmp = HK_STATUS_INIT;
  rc = hk_executor_control(ex, HK_CONTROL_MERGE_SUMMARIES, &req, &tmp);
  if (rc == HK_UNIMPLEMENTED) {
    hk_env_log(&s->env, HK_LOG_DEBUG, "Scaffold: executor cannot merge summaries (%s); summary_op is the %zu of them",
               tmp.message, count);
    *out = all;
    *n = count;
    return HK_OK;
  }
  if (rc == HK_OK) rc = hk_executor_role_add(ex, HK_ROLE_SUMMARY_OP, req.out, &tmp);
  if (rc != HK_OK && rc != HK_UNIMPLEMENTED) {
    hk_env_free(&s->env, all);
    hk__status_copy(st, &tmp);
    return rc;
  }
  all[0] = req.out;
  *out = all;
  *n = 1;
  return HK_OK;
}

hk_code hk_scaffold_finalize(hk_scaffold *s, hk_executor *ex, hk_status *st) {
  if (!s) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_scaffold_finalize: scaffold is NULL");
  if (!ex) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_scaffold_finalize: executor is NULL");
  if (s->finalized_with) {
    if (s->finalized_with != ex)
      return hk_status_set(st, HK_INVALID_ARGUMENT,
                           "hk_scaffold_finalize: the Scaffold was already finalized with another executor");
    return HK_OK; /* finalizing again changes nothing */
  }
  hk_handle init_op = s->init_op, ready = s->ready_op, rfli = s->ready_for_local_init_op, local = s->local_init_op;
  hk_code rc = fill_role(s, ex, &init_op, HK_ROLE_INIT_OP, HK_DEFAULT_INIT_OP, st);
  if (rc == HK_OK) rc = fill_role(s, ex, &ready, HK_ROLE_READY_OP, HK_DEFAULT_READY_OP, st);
  if (rc == HK_OK)
    rc = fill_role(s, ex, &rfli, HK_ROLE_READY_FOR_LOCAL_INIT_OP, HK_DEFAULT_READY_FOR_LOCAL_INIT_OP, st);
  if (rc == HK_OK) rc = fill_role(s, ex, &local, HK_ROLE_LOCAL_INIT_OP, HK_DEFAULT_LOCAL_INIT_OP, st);
  hk_handle *summary_op = NULL;
  size_t nsummary_op = 0;
  if (rc == HK_OK) rc = fill_summary_op(s, ex, &summary_op, &nsummary_op, st);
  /* The default Saver covers every global variable — none
   * included: an executor without variables still saves (an empty
   * checkpoint, with its global step) and restores as one with them. */
  hk_saver *saver = s->saver;
  if (rc == HK_OK && !saver) {
    hk_saver_options so = HK_SAVER_OPTIONS_INIT;
    so.env = &s->env;
    so.executor = ex;
    rc = hk_saver_new(&saver, &so, st);
  }
  if (rc == HK_OK) rc = hk_executor_finalize(ex, st);
  if (rc != HK_OK) { /* fields stay as given: a failed finalize changes nothing */
    if (saver != s->saver) hk_saver_free(saver);
    hk_env_free(&s->env, summary_op);
    return rc;
  }
  if (nsummary_op) {
    s->summary_op = summary_op;
    s->nsummary_op = nsummary_op;
  }
  if (saver != s->saver) {
    s->saver = saver;
    s->owns_saver = 1;
  }
  s->init_op = init_op;
  s->ready_op = ready;
  s->ready_for_local_init_op = rfli;
  s->local_init_op = local;
  s->finalized_with = ex;
  hk_env_log(&s->env, HK_LOG_INFO, "Graph was finalized.");
  return HK_OK;
}

hk_executor *hk__scaffold_executor(const hk_scaffold *s) { return s ? s->finalized_with : NULL; }

int hk_scaffold_is_finalized(const hk_scaffold *s) { return s && s->finalized_with != NULL; }
hk_handle hk_scaffold_init_op(const hk_scaffold *s) { return s ? s->init_op : HK_NO_HANDLE; }
const hk_feed *hk_scaffold_init_feed(const hk_scaffold *s, size_t *n) {
  if (n) *n = s ? s->ninit_feed : 0;
  return s ? s->init_feed : NULL;
}
hk_init_fn hk_scaffold_init_fn(void **user, const hk_scaffold *s) {
  if (user) *user = s ? s->init_fn_user : NULL;
  return s ? s->init_fn : NULL;
}
hk_handle hk_scaffold_ready_op(const hk_scaffold *s) { return s ? s->ready_op : HK_NO_HANDLE; }
hk_handle hk_scaffold_ready_for_local_init_op(const hk_scaffold *s) {
  return s ? s->ready_for_local_init_op : HK_NO_HANDLE;
}
hk_handle hk_scaffold_local_init_op(const hk_scaffold *s) { return s ? s->local_init_op : HK_NO_HANDLE; }
const hk_feed *hk_scaffold_local_init_feed(const hk_scaffold *s, size_t *n) {
  if (n) *n = s ? s->nlocal_init_feed : 0;
  return s ? s->local_init_feed : NULL;
}
hk_saver *hk_scaffold_saver(const hk_scaffold *s) { return s ? s->saver : NULL; }
const hk_handle *hk_scaffold_summary_op(const hk_scaffold *s, size_t *n) {
  if (n) *n = s ? s->nsummary_op : 0;
  return s && s->nsummary_op ? s->summary_op : NULL;
}
