/*
 * What the Saver's files share among themselves (hk__ names; not API): the
 * Saver's struct, the names of a checkpoint's files, and the helpers one
 * part calls in another.
 *
 *   saver.c          options, lifetime, the variables, the checkpoint helpers
 *   saver_recover.c  the managed list: recovery and best-k retention
 *   saver_save.c     hk_saver_save and the write path the asynchronous hook
 *                    shares
 *   saver_read.c     the reads of the variables, for a save and a snapshot
 *   shard_*.c        sharded checkpoints (shard.h)
 *   saver_restore.c  restore, latest_checkpoint, the fallback over a
 *                    directory's candidates
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_CKPT_SAVER_INTERNAL_H
#define HOOKED_CKPT_SAVER_INTERNAL_H

#include "ckpt/ckpt_internal.h"

#define DEFAULT_LATEST "checkpoint"
#define DATA_EXT ".safetensors"
/* HK_SAVE_META's companion: hooked's own text description of the graph (not
 * a TensorFlow MetaGraphDef, so not named like one). */
#define GRAPH_EXT ".graph.txt"
/* What that companion was called before; retention and
 * hk_checkpoint_remove still remove it. */
#define LEGACY_META_EXT ".meta"

struct hk_saver {
  hk_env env;
  hk_executor *ex;
  int64_t max_to_keep;
  int keep_all;      /* the check-resume mode: max_to_keep 0 for every save */
  double keep_hours; /* 0: off */
  int pad_step_number;
  int allow_non_finite; /* write NaN and infinities of every variable as they are */
  char *latest_filename;
  /* Variables: resolved at hk_saver_new for a var_list, else at first use. */
  int resolved;
  size_t nvars;
  size_t *var_index;
  hk_variable_info *var_info;
  hk__ckpt_tensor *views; /* scratch of nvars for hk_saver_save */
  /* The managed list of directory `dir`; dir NULL until recovered. */
  char *dir;
  char **paths; /* "<dir>/<name>", oldest first */
  double *stamps;
  size_t n;
  double last_preserved;
  int state_seen;    /* recovery found a state file, readable or not */
  int adopt_pending; /* recovered without a save path: the next managed save adopts the unlisted */
  int explicit_vars; /* a var_list was given: checkpoint tensors it leaves unread are logged at DEBUG */
  char *prefix;      /* the last hk_saver_save's prefix */
  int graph_logged;  /* "cannot describe its graph" was logged */
  /* The executor's global step when it is one of the variables:
   * its name (var_info's), which a checkpoint's header names as the tensor
   * holding its step (checkpoint-format.md); NULL otherwise. */
  const char *gs_name;
  /* Best-k retention: k (0: off) and mode; the best managed
   * checkpoints of `dir`, best first ("<dir>/<name>", each also in paths),
   * with their metrics, read from the best record at the first save after
   * a recovery (best_loaded); best_dirty: the record on disk differs. */
  int64_t best_k;
  int best_mode;
  int best_loaded;
  int best_dirty;
  int best_on_disk; /* the record exists (as read, or written by this Saver) */
  char **best;
  double *best_metric;
  size_t nbest;
  int have_metric; /* hk__saver_note_metric: the next save's metric */
  double metric;
  /* Sharded checkpoints (shard_save.c, shard_restore.c): the group, NULL
   * without one; the per-rank and the partitioned names (owned copies) and,
   * once the variables are resolved, which of them each variable is
   * (var_per_rank[i], var_partitioned[i]). */
  const hk_group_vtable *group;
  void *group_user;
  char **per_rank;
  size_t nper_rank;
  unsigned char *var_per_rank;
  char **partitioned;
  size_t npartitioned;
  unsigned char *var_partitioned;
};

static inline const hk_env *senv(const hk_saver *s) { return &s->env; }

static inline hk_code oom(hk_status *st, const char *what) {
  return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory %s", what);
}

/* ---- saver.c ------------------------------------------------------------------------- */

/** Free the best-checkpoint list the Saver keeps (and its metrics). */
void hk__saver_free_best(hk_saver *s);
/** Free the managed list the Saver keeps. */
void hk__saver_free_list(hk_saver *s);
/** Resolve the Saver's variables (var_list or every variable), once. */
hk_code hk__saver_resolve_vars(hk_saver *s, hk_status *st);

/* ---- saver_recover.c ----------------------------------------------------------------- */

/** Recover the managed list of `dir` (saver_recover.c says how). */
hk_code hk__saver_recover_list(hk_saver *s, const char *dir, double now, const char *base, hk_status *st);
/** The adoption a recovery for a restore left to the next managed save. */
hk_code hk__saver_adopt_after_restore(hk_saver *s, const char *dir, const char *base, double now, hk_status *st);
/** Read the best-checkpoint record of `dir` into the Saver, once per recovery. */
hk_code hk__saver_best_recover(hk_saver *s, const char *dir, hk_status *st);
/** Whether metric a is better than b in `mode` (an hk_monitor_mode). */
static inline int hk__saver_better(int mode, double a, double b) { return mode == HK_MONITOR_MAX ? a > b : a < b; }

/* ---- saver_save.c -------------------------------------------------------------------- */

/* Internal flag of a save's write: the call runs on the asynchronous hook's
 * writer thread, beside training, so it computes CRCs on no second thread. */
#define HK__SAVE_ON_WRITER_THREAD 0x80000000u

/** The byte size of a variable, SIZE_MAX when it does not fit size_t. */
size_t hk__saver_info_nbytes(const hk_variable_info *info);

/**
 * How write_impl writes a checkpoint's data: NULL, the single data file;
 * else `write` writes it (a sharded save's shards and index) once the
 * directory is ready (pending deletions finished, stale temporaries
 * removed, retention planned), `remove` removes what it wrote when a later
 * step fails and the files may go, and `existed` reports whether the
 * checkpoint existed before (its files are then left alone).
 */
typedef struct hk__data_writer {
  hk_code (*write)(void *user, const char *prefix, hk_status *st);
  void (*remove)(void *user, const char *prefix);
  hk_code (*existed)(void *user, const char *prefix, int *existed, hk_status *st);
  void *user;
} hk__data_writer;

/** write_impl with the data written by `dw` (NULL: the data file). */
hk_code hk__saver_write_with(hk_saver *s, const char *save_path, int64_t name_step, int64_t record_step, unsigned flags,
                             double now, const hk__ckpt_tensor *tensors, size_t ntensors, const char *graph,
                             size_t graph_len, const hk__data_writer *dw, char **prefix_out, hk_status *st);
/** check_save_path and make_prefix of saver_save.c. */
hk_code hk__saver_check_save_path(hk_saver *s, const char *save_path, int64_t step, hk_status *st);
/** Read the Saver's variable i through rs, checked against its description. */
hk_code hk__saver_read_view(hk_saver *s, hk_raw_session *rs, size_t i, hk_tensor *out, hk_status *st);
/** save_failed of saver_save.c: the cause prefixed with the checkpoint and step. */
hk_code hk__saver_save_failed(const char *save_path, int64_t step, hk_code rc, const hk_status *why, hk_status *status);

/* ---- shard_save.c, shard_restore.c ---------------------------------------------------- */

/**
 * The write of a Saver with a group (collective over it): every rank
 * writes its shard of `tensors` (the Saver's variables), rank 0 commits.
 * pre_rc/pre: this rank's failure before the write (HK_OK/NULL: none),
 * which fails the save on every rank. The arguments as
 * hk__saver_write_with's; graph is written by rank 0 alone.
 */
hk_code hk__shard_write(hk_saver *s, const char *save_path, int64_t name_step, int64_t record_step, unsigned flags,
                        double now, const hk__ckpt_tensor *tensors, size_t ntensors, const char *graph,
                        size_t graph_len, hk_code pre_rc, const hk_status *pre, char **prefix_out, hk_status *st);
/**
 * Restore the Saver's variables from sharded checkpoint `prefix` on this
 * rank alone (the group gives the rank and the rank count; without one: 0
 * of 1). *mismatch as restore_impl's: set when no older checkpoint would do
 * better (the model differs, the executor failed).
 */
hk_code hk__shard_restore_impl(hk_saver *s, hk_raw_session *rs, const char *prefix, int *mismatch, hk_status *st);
/**
 * Where partitioned variable `info` comes from on this rank of the Saver's
 * group (the group is set): the block [*first, *first + *len) of this
 * rank's place in the group, cut from the checkpoint's global variable
 * (`whole_rank` dimensions `whole_dims`, of `path`), which must be 1-D
 * (INVALID_ARGUMENT, naming both shapes) and of `info`'s dtype (checked by
 * the caller). FAILED_PRECONDITION naming the variable, the rank and both
 * counts when the variable's element count is not the block's.
 */
hk_code hk__saver_part_block(hk_saver *s, const hk_variable_info *info, int32_t whole_rank, const int64_t *whole_dims,
                             const char *path, uint64_t *first, uint64_t *len, hk_status *st);
/**
 * Every rank's outcome of one step of a restore (collective): HK_OK when
 * every rank's rc is, else the first failing rank's code and "rank <r> of
 * <N>: <message>", *any_fatal set from that rank's `fatal`. `what`
 * identifies the checkpoint tried (a CRC of its name): ranks that tried
 * different ones fail with FAILED_PRECONDITION (fatal).
 */
hk_code hk__shard_agree(hk_saver *s, hk_code rc, int fatal, uint32_t what, const hk_status *mine, int *any_fatal,
                        hk_status *st);

#endif /* HOOKED_CKPT_SAVER_INTERNAL_H */
