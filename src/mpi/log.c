/*
 * hooked::mpi — log lines that say which rank wrote them.
 *
 * Under mpirun every rank's stderr ends up in one stream, so a line that
 * does not name its rank cannot be told from the same line of another
 * rank. The context wraps its env's log sink in one that writes "rank R/N: "
 * before each line of each message, and hands the same wrapping to the program for its
 * session, hooks and own lines (hk_mpi_log_env()). Each wrapped sink keeps
 * its base sink in a record the context owns; wrapping the same base again
 * reuses it, so a program may call hk_mpi_log_env() as often as it likes.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h>
#include <string.h>

#include "mpi_internal.h"

struct hk__mpi_sink {
  hk__mpi_sink *next;
  hk_log_fn log; /* the base sink; NULL: hooked's stderr sink */
  void *user;
  char prefix[32]; /* "rank R/N: " */
};

/* The prefixed sink: one message through the base sink, "rank R/N: "
 * before each of its lines (a message of several lines, as TensorFlow's
 * "Create AsyncCheckpointSaverHook saving to path\n<path>", names the rank
 * on each), allocating nothing (the saver's thread calls it too). hooked
 * cuts a message at 1023 bytes; the room for prefixes covers eight lines,
 * and a message of more lines than fit is cut at the last whole prefix. */
static void prefixed(void *user, hk_log_level level, const char *msg) {
  const hk__mpi_sink *s = user;
  char line[1024 + 8 * sizeof s->prefix];
  const size_t plen = strlen(s->prefix);
  size_t n = plen;
  memcpy(line, s->prefix, plen);
  for (const char *p = msg ? msg : ""; *p != '\0' && n + 1 < sizeof line; p++) {
    line[n++] = *p;
    if (*p == '\n' && p[1] != '\0') {
      if (n + plen + 1 >= sizeof line) break;
      memcpy(line + n, s->prefix, plen);
      n += plen;
    }
  }
  line[n] = '\0';
  if (s->log)
    s->log(s->user, level, line);
  else
    hk_log_stderr(NULL, level, line);
}

hk_code hk__mpi_log_wrap(hk_mpi *m, hk_env *out, const hk_env *base, hk_status *st) {
  hk_env copy;
  hk_env_copy(&copy, base);
  if (copy.log != prefixed) {
    hk__mpi_sink *s = m->sinks;
    while (s && (s->log != copy.log || s->user != copy.log_user)) s = s->next;
    if (!s) {
      /* The context's own env (set before any record exists) allocates. */
      s = hk_env_calloc(&m->env, 1, sizeof *s);
      if (!s) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "hk_mpi_log_env: out of memory");
      s->log = copy.log;
      s->user = copy.log_user;
      snprintf(s->prefix, sizeof s->prefix, "rank %d/%d: ", m->rank, m->size);
      s->next = m->sinks;
      m->sinks = s;
    }
    copy.log = prefixed;
    copy.log_user = s;
  }
  *out = copy;
  return HK_OK;
}

void hk__mpi_log_free(hk_mpi *m, const hk_env *env) {
  hk__mpi_sink *s = m->sinks;
  while (s) {
    hk__mpi_sink *next = s->next;
    hk_env_free(env, s);
    s = next;
  }
  m->sinks = NULL;
}

hk_code hk_mpi_log_env(hk_env *out, hk_mpi *mpi, const hk_env *base, hk_status *st) {
  if (!out || !mpi) return hk_status_set(st, HK_INVALID_ARGUMENT, "hk_mpi_log_env: %s is NULL", !out ? "out" : "mpi");
  hk_code rc = hk_env_check(base, "hk_mpi_log_env: base", st);
  if (rc != HK_OK) return rc;
  return hk__mpi_log_wrap(mpi, out, base, st);
}
