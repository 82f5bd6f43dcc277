/*
 * hooked — FeedFnHook (contract group N).
 *
 * Written against the public headers only. The hook keeps
 * nothing but the callback: the feeds are the callback's, so its
 * runs allocate nothing of their own.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "hooked/hooks.h"
#include "util/common.h"

#define HOOK_NAME "FeedFnHook"

typedef struct feed_fn_hook {
  hk_env env; /* what the struct was allocated with */
  int has_env;
  hk_feed_fn feed_fn;
  void *user;
} feed_fn_hook;

static hk_code ff_before_run(void *user, hk_run_context *ctx, hk_run_request *request, hk_status *status) {
  feed_fn_hook *self = user;
  const hk_feed *feeds = NULL;
  size_t nfeeds = 0;
  hk_code rc;

  (void)ctx;
  rc = self->feed_fn(self->user, &feeds, &nfeeds, status);
  if (rc != HK_OK) return rc; /* returned unchanged, so the step does not run */
  if (feeds == NULL && nfeeds > 0)
    return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": feed_fn returned a NULL feeds array with nfeeds %zu",
                         nfeeds);
  request->feeds = feeds;
  request->nfeeds = nfeeds;
  return HK_OK;
}

static void ff_destroy(void *user) {
  feed_fn_hook *self = user;
  hk_env copy;
  int has_env = self->has_env;
  if (has_env) copy = self->env;
  hk_env_free(has_env ? &copy : NULL, self);
}

static const hk_hook_vtable feed_fn_vtable = {
    HK_HOOK_VTABLE_VERSION, NULL, NULL, ff_before_run, NULL, NULL, ff_destroy,
};

hk_code hk_feed_fn_options_init(hk_feed_fn_options *opts, uint32_t version) {
  return HK__STRUCT_INIT(opts, version, hk_feed_fn_options, HK_FEED_FN_OPTIONS_INIT);
}

hk_code hk_feed_fn_hook_new(hk_hook **out, const hk_feed_fn_options *opts, hk_status *status) {
  feed_fn_hook *self;
  hk_code rc;

  if (out == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "out: must not be NULL");
  *out = NULL;
  if (opts == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, "opts is NULL: " HOOK_NAME " needs feed_fn");
  HK__CHECK_VERSION(opts, HK_FEED_FN_OPTIONS_VERSION, hk_feed_fn_options, "hk_feed_fn_hook_new: opts", status);
  rc = hk_env_check(opts->env, "opts->env", status);
  if (rc != HK_OK) return rc;
  if (opts->feed_fn == NULL) return hk_status_set(status, HK_INVALID_ARGUMENT, HOOK_NAME ": feed_fn must not be NULL");

  self = hk_env_calloc(opts->env, 1, sizeof(*self));
  if (self == NULL) return hk_status_set(status, HK_RESOURCE_EXHAUSTED, HOOK_NAME ": out of memory");
  if (opts->env != NULL) {
    hk_env_copy(&self->env, opts->env);
    self->has_env = 1;
  }
  self->feed_fn = opts->feed_fn;
  self->user = opts->feed_fn_user;
  rc = hk_hook_new(out, &feed_fn_vtable, self, HOOK_NAME, opts->env, status);
  if (rc != HK_OK) {
    hk_env_free(opts->env, self);
    return rc;
  }
  hk_status_clear(status);
  return HK_OK;
}
