/*
 * A custom hook in C: stop training once the loss falls below a threshold.
 * The README shows the hook part of this file; the install test builds and
 * runs it against the installed library.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include <math.h>
#include <stdio.h>

#include "model.h"

/* The hook's state; one per hook object. */
typedef struct loss_stop {
  const char *loss_name; /* the tensor to watch, resolved in begin() */
  float threshold;
  hk_handle loss;
  float last_loss;
  int64_t runs;
} loss_stop;

/* begin(): once per session, before the graph is finalized. Resolve names
 * here, never per step, and reset per-session state. */
static hk_code loss_stop_begin(void *user, hk_executor *graph, hk_status *status) {
  loss_stop *h = user;
  h->runs = 0;
  return hk_executor_resolve_tensor(&h->loss, graph, h->loss_name, status);
}

/* before_run(): ask the session to fetch the loss along with the caller's
 * fetches. The array stays ours; it must live until after_run returns. */
static hk_code loss_stop_before_run(void *user, hk_run_context *ctx, hk_run_request *request, hk_status *status) {
  loss_stop *h = user;
  (void)ctx;
  (void)status;
  request->fetches = &h->loss;
  request->nfetches = 1;
  return HK_OK;
}

/* after_run(): values->results holds exactly our fetches, valid only during
 * this call. A non-OK return reaches the caller of hk_session_run(). */
static hk_code loss_stop_after_run(void *user, hk_run_context *ctx, const hk_run_values *values, hk_status *status) {
  loss_stop *h = user;
  h->last_loss = *(const float *)values->results[0].data;
  h->runs++;
  if (isnan(h->last_loss)) return hk_status_set(status, HK_INVALID_ARGUMENT, "loss_stop: %s is NaN", h->loss_name);
  if (h->last_loss < h->threshold) hk_run_context_request_stop(ctx); /* takes effect after this step */
  return HK_OK;
}

static const hk_hook_vtable loss_stop_vtable = {
    HK_HOOK_VTABLE_VERSION,
    loss_stop_begin,
    NULL, /* after_create_session */
    loss_stop_before_run,
    loss_stop_after_run,
    NULL, /* end */
    NULL, /* destroy: the state is on the caller's stack */
};

static int fail(hk_code rc, const hk_status *st) {
  fprintf(stderr, "error: %s: %s\n", hk_code_name(rc), st->message);
  return 1;
}

int main(void) {
  hk_status st = HK_STATUS_INIT;
  hk_graph *g = NULL;
  hk_session *sess = NULL;
  hk_handle loss, train;
  hk_code rc;

  if ((rc = hk_graph_new(&g, NULL, &st)) != HK_OK || (rc = consumer_build_model(g, &loss, &train, &st)) != HK_OK)
    return fail(rc, &st);

  hk_hook *hooks[2] = {NULL, NULL};
  loss_stop state = {"sgd:0", 1e-3f, HK_NO_HANDLE, 0.0f, 0};
  hk_stop_at_step_options stop_opts = HK_STOP_AT_STEP_OPTIONS_INIT;
  stop_opts.last_step = 100; /* a safety net: the loss hook should stop first */
  if ((rc = hk_stop_at_step_hook_new(&hooks[0], &stop_opts, &st)) != HK_OK ||
      (rc = hk_hook_new(&hooks[1], &loss_stop_vtable, &state, "loss_stop", NULL, &st)) != HK_OK)
    return fail(rc, &st);

  hk_session_options opts = HK_SESSION_OPTIONS_INIT;
  opts.executor = hk_graph_executor(g);
  opts.hooks = hooks; /* called in this order: StopAtStep, then loss_stop */
  opts.nhooks = 2;
  if ((rc = hk_session_new(&sess, &opts, &st)) != HK_OK) return fail(rc, &st);

  hk_run_args args = {NULL, 0, NULL, 0, &train, 1, NULL};
  int64_t steps = 0;
  rc = HK_OK;
  while (rc == HK_OK && !hk_session_should_stop(sess)) {
    rc = hk_session_run(sess, &args, NULL, NULL, &st);
    steps += rc == HK_OK;
  }
  rc = hk_session_close(sess, rc, &st);
  hk_session_free(sess);
  hk_hook_free(hooks[1]);
  hk_hook_free(hooks[0]);
  hk_graph_free(g);
  if (rc != HK_OK) return fail(rc, &st);

  /* 9 * 0.64^k first drops below 1e-3 at k = 21, the 22nd step. */
  int ok = steps == 22 && state.runs == steps && state.last_loss < state.threshold;
  printf("custom hook: stopped after %lld steps at loss %g\n", (long long)steps, state.last_loss);
  return ok ? 0 : 1;
}
