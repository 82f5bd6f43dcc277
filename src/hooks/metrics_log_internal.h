/*
 * hooked — what the two files of the MetricsLogHook share: its state, and
 * the file functions (metrics_log_file.c) the callbacks (metrics_log.c)
 * call. Private to src/hooks/.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_SRC_HOOKS_METRICS_LOG_INTERNAL_H
#define HOOKED_SRC_HOOKS_METRICS_LOG_INTERNAL_H

#include "hooked/metrics_log.h"
#include "hooked/sys/fs.h"
#include "hooked/timer.h"

#define HK__METRICS_LOG_NAME "MetricsLogHook"
/* The longest text of one value: "-2.2250738585072014e-308" is 24 bytes,
 * an int64 20, "\"-Infinity\"" 11. */
#define HK__METRICS_LOG_CELL_MAX 32

typedef struct metrics_log {
  hk_hook *hook; /* the wrapper, for its env and log */
  hk_env env;    /* what the struct was allocated with */
  int has_env;
  /* Options, copied. */
  char *path, *tmp_path, *dir;
  int format; /* HK_METRICS_LOG_CSV or HK_METRICS_LOG_JSONL */
  size_t ntensors, nreported, ncols;
  char **names;   /* ncols: the tensors' columns, then the reported ones */
  char **tensors; /* ntensors: the tensors' names */
  char **keys;    /* JSON: ",\"<name>\":" of each column */
  size_t *key_len;
  char *header; /* CSV: the header line, '\n' included; JSON: NULL */
  size_t header_len;
  int64_t every_steps; /* HK_UNSET_STEPS with every_secs */
  double every_secs;
  hk_timer timer; /* every_secs; initialized by begin() */
  /* Buffers, allocated at construction. */
  hk_handle *fetch; /* 1 + ntensors: the global step, then the tensors */
  double *rep;      /* nreported: the values reported since the last row */
  unsigned char *has_rep;
  char *line;
  size_t line_cap;
  /* Per session. */
  int created;       /* an after_create_session (or a first before_run) opened the log */
  int64_t last_seen; /* the global step fetched by the last run (or read at creation) */
  int64_t bucket;    /* every_steps: floor(GS / every_steps) of the last row or the creation */
  int fetched;       /* the open run fetches the tensors */
  hk_fs_file *file;  /* the log, open for appending; NULL: none */
  const hk_fs_vtable *file_fs;
  void *file_fs_user;
  int broken; /* a row write failed: nothing more is written */
  hk_code broken_code;
  /* hk_metrics_log_hook_info() */
  int64_t rows, kept_rows, dropped_rows;
  int dropped_torn;
} metrics_log;

static inline const hk_env *hk__metrics_log_env(const metrics_log *self) { return self->has_env ? &self->env : NULL; }

/* Keep the file's rows up to global step `gs` (the header and the rows up
 * to it; the rows past it and a last line cut short are dropped and
 * counted) and open it for the rows to come. */
hk_code hk__metrics_log_open(metrics_log *self, int64_t gs, hk_status *status);
/* Close the file, if open (no fsync). */
void hk__metrics_log_close(metrics_log *self);
/* fsync the file, if open. */
hk_code hk__metrics_log_sync(metrics_log *self, hk_status *status);
/* Write the row of global step `gs`: `values` holds the tensors' values
 * (NULL: those columns empty), then the values reported since the last
 * row, which it forgets. A failure stops the log (self->broken). */
hk_code hk__metrics_log_write_row(metrics_log *self, int64_t gs, const hk_tensor *values, hk_status *status);

#endif /* HOOKED_SRC_HOOKS_METRICS_LOG_INTERNAL_H */
