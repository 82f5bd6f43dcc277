/*
 * Summaries pushed from the program's code in a host loop (hooked/loop.h:
 * hk_loop_summary_writer, hk_loop_summary_scalar): the writer the loop's
 * session shares for a directory, written at once at the loop's
 * global step. Written against the public headers (and, for a loop over a
 * group, the loop's place in it).
 *
 * The loop keeps no summary state of its own: the directory is a parameter,
 * the writer lives in the session's per-directory registry, so a lookup by
 * an existing directory allocates nothing.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "hooked/hooked.h"
#include "loop/loop_internal.h"

static hk_code loop_writer(const char *fn, hk_loop *loop, const char *logdir, hk_summary_writer **out,
                           hk_status *status) {
  hk_session *s;
  hk_code rc;
  if (out) *out = NULL;
  if (!loop) return hk_status_set(status, HK_INVALID_ARGUMENT, "%s: loop is NULL", fn);
  if (!out) return hk_status_set(status, HK_INVALID_ARGUMENT, "%s: out is NULL", fn);
  if (!logdir || !logdir[0])
    return hk_status_set(status, HK_INVALID_ARGUMENT, "%s: logdir is %s", fn, logdir ? "empty" : "NULL");
  s = hk_loop_session(loop);
  if (!s)
    return hk_status_set(status, HK_FAILED_PRECONDITION, "%s: the loop is not started (call hk_loop_start first)", fn);
  rc = hk_summary_writer_from_session(out, s, logdir, status);
  if (rc == HK_FAILED_PRECONDITION) /* its session is closed */
    return hk_status_set(status, HK_FAILED_PRECONDITION, "%s: the loop is finished", fn);
  return rc;
}

hk_code hk_loop_summary_writer(hk_summary_writer **out, hk_loop *loop, const char *logdir, hk_status *status) {
  return loop_writer("hk_loop_summary_writer", loop, logdir, out, status);
}

hk_code hk_loop_summary_scalar(hk_loop *loop, const char *logdir, const char *tag, double value, hk_status *status) {
  static const char fn[] = "hk_loop_summary_scalar";
  hk_summary_writer *w = NULL;
  hk_code rc;
  if (loop && hk__loop_follower(loop)) {
    /* Over a group rank 0 writes the job's events: another rank's call
     * checks what it can and writes nothing. */
    if (!logdir || !logdir[0])
      return hk_status_set(status, HK_INVALID_ARGUMENT, "%s: logdir is %s", fn, logdir ? "empty" : "NULL");
    if (!tag) return hk_status_set(status, HK_INVALID_ARGUMENT, "%s: tag is NULL", fn);
    if (!hk_loop_session(loop))
      return hk_status_set(status, HK_FAILED_PRECONDITION, "%s: the loop is not started (call hk_loop_start first)",
                           fn);
    if (loop->finished) return hk_status_set(status, HK_FAILED_PRECONDITION, "%s: the loop is finished", fn);
    hk_status_clear(status);
    return HK_OK;
  }
  rc = loop_writer(fn, loop, logdir, &w, status);
  if (rc != HK_OK) return rc;
  return hk_summary_writer_scalar(w, tag, hk_loop_global_step(loop), value, status);
}
