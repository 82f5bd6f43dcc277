/*
 * hooked — the checkpoint hooks: CheckpointSaverHook, which saves on a
 * cadence of steps or seconds and at the end of the session, its
 * asynchronous twin AsyncCheckpointSaverHook, which copies the variables
 * on the training thread and writes them on a background thread, and the
 * listeners both call around each save (TensorFlow's
 * CheckpointSaverListener). hooked/hooks.h includes this header; the host
 * loop runs the hook as its own checkpoint saver (hooked/loop.h).
 *
 * Modules: checkpoint_saver, async_checkpoint_saver, checkpoint_listener.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_CHECKPOINT_SAVER_H
#define HOOKED_CHECKPOINT_SAVER_H

#include "hooked/common.h"
#include "hooked/sys/hook.h"
#include "hooked/checkpoint.h"
#include "hooked/scaffold.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- CheckpointSaverListener ----------------------------------- */
#define HK_CHECKPOINT_LISTENER_VTABLE_VERSION 1
/**
 * Listener of a checkpoint saver hook. Every slot may be NULL (no-op
 * returning OK). Callbacks run on the training thread, also for
 * the asynchronous hook. `session` is borrowed for the call. A non-OK
 * return stops that sequence and fails the hook callback that ran it.
 */
typedef struct hk_checkpoint_listener_vtable {
  uint32_t version; /**< HK_CHECKPOINT_LISTENER_VTABLE_VERSION */
  /* slots below: version 1 */
  hk_code (*begin)(void *user, hk_status *status);
  hk_code (*before_save)(void *user, hk_raw_session *session, int64_t step, hk_status *status);
  /** Set *stop nonzero to request that training stop. */
  hk_code (*after_save)(void *user, hk_raw_session *session, int64_t step, int *stop, hk_status *status);
  hk_code (*end)(void *user, hk_raw_session *session, int64_t step, hk_status *status);
} hk_checkpoint_listener_vtable;

/** A listener: vtable and user, both borrowed for the hook's life. */
typedef struct hk_checkpoint_listener {
  const hk_checkpoint_listener_vtable *vtable; /**< required */
  void *user;
  const char *name; /**< copied; NULL: "listener <index>" in messages */
} hk_checkpoint_listener;

/* ---- CheckpointSaverHook / AsyncCheckpointSaverHook (groups K, L) - */
#define HK_CHECKPOINT_SAVER_OPTIONS_VERSION 1
typedef struct hk_checkpoint_saver_options {
  uint32_t version;                        /**< HK_CHECKPOINT_SAVER_OPTIONS_VERSION */
  const hk_env *env;                       /**< NULL: the session's (clock, log, fs) */
  const char *checkpoint_dir;              /**< required; copied; created with parents in begin() */
  double save_secs;                        /**< HK_UNSET_SECS or finite > 0 (exactly one of the two cadences) */
  int64_t save_steps;                      /**< HK_UNSET_STEPS or >= 1 */
  hk_saver *saver;                         /**< borrowed; NULL: the scaffold's, else the session's Scaffold's */
  hk_scaffold *scaffold;                   /**< borrowed; not together with saver */
  const char *checkpoint_basename;         /**< copied; NULL: "model.ckpt"; a valid name */
  const hk_checkpoint_listener *listeners; /**< array copied; vtables and users borrowed */
  size_t nlisteners;
  int save_graph_def;    /**< default 1: graph.txt in checkpoint_dir at each creation */
  int64_t steps_per_run; /**< >= 1, default 1 */
  int block_when_busy;   /**< asynchronous hook only: default 0 defers */
  /**
   * Best-k retention (Lightning's save_top_k): 0 (the default) is off;
   * k >= 1 keeps, beside the max_to_keep newest managed checkpoints, the k
   * best by best_metric: max_to_keep never deletes one of them, and one that
   * leaves the best k is deleted then, unless it is still among the newest
   * (durably, as retention deletes). Needs best_metric.
   */
  int64_t best_k;
  /**
   * Copied. The tensor whose value ranks a checkpoint: fetched through the
   * raw session at every managed save, just before the variables are read
   * (a variable, a host loop's array such as "val_loss", a tensor computed
   * from variables; one number of any float or integer dtype). NaN is never
   * among the best. Only with best_k.
   */
  const char *best_metric;
  hk_monitor_mode best_mode; /**< HK_MONITOR_MIN (default: lower is better) or HK_MONITOR_MAX */
  /**
   * Keras' restore_best_weights (needs best_k). 0 (default): off. Nonzero:
   * a clean end(), after its final save (the final checkpoint is ranked
   * too; the asynchronous hook's write is finished first), restores the
   * best checkpoint of the directory's best-checkpoint record
   * (hk_checkpoint_best(), hooked/checkpoint.h) into every global variable
   * of the executor but the global step, through end()'s raw session, and
   * logs "Restored the best checkpoint <prefix> (step S, <best_metric> = V)
   * into the variables." at INFO: hooks whose end() runs after this one
   * (a FinalOpsHook listed after it; in a MonitoredTrainingSession, any of
   * `hooks`) evaluate the best model. With no best checkpoint (every ranked
   * value was NaN) end() fails with NOT_FOUND naming the record, and the
   * variables keep their values.
   */
  int restore_best;
} hk_checkpoint_saver_options;
#define HK_CHECKPOINT_SAVER_OPTIONS_INIT                                                                             \
  {                                                                                                                  \
    HK_CHECKPOINT_SAVER_OPTIONS_VERSION, NULL, NULL, HK_UNSET_SECS, HK_UNSET_STEPS, NULL, NULL, NULL, NULL, 0, 1, 1, \
        0, 0, NULL, HK_MONITOR_MIN, 0                                                                                \
  }

/**
 * Initialize options to HK_CHECKPOINT_SAVER_OPTIONS_INIT.
 * @param version  HK_CHECKPOINT_SAVER_OPTIONS_VERSION, the version the program is compiled with.
 * @return HK_OK; INVALID_ARGUMENT (no message: there is no status), writing
 *         nothing, for a NULL opts or a version that is 0 or above
 *         HK_CHECKPOINT_SAVER_OPTIONS_VERSION.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_checkpoint_saver_options_init(hk_checkpoint_saver_options *opts, uint32_t version);

/**
 * CheckpointSaverHook (group K): saves at session creation, when the
 * timer fires after a run and at end() when the final step was not
 * just saved, each save running the listeners and logging TF's lines,
 * and writing a SessionLog CHECKPOINT event into the event file of
 * checkpoint_dir (in a session, one file per directory, shared by the
 * hooks writing there and flushed by end() and at close, clean or not).
 * A creation that restored the checkpoint of the current step from
 * checkpoint_dir (hk_creation_context_restored_checkpoint()) is not saved
 * again: nothing is written and no listener runs for it, so a resume works
 * on a full disk; it counts as the step just saved.
 * Logs "Create CheckpointSaverHook.": at construction through
 * opts->env when it is given; otherwise at the hook's first begin(),
 * through the env of the session it serves, so that session's log sink and
 * log_level apply.
 * **Best checkpoints.** With best_k, every managed save (timer,
 * creation, end(), hk_checkpoint_saver_hook_save() with no name) first
 * fetches best_metric and hands its value to the Saver with the
 * checkpoint; the Saver keeps the best_k best beside the max_to_keep
 * newest, listed in the state file like them (so TensorFlow and
 * hk_checkpoint_latest() see ordinary checkpoints), and records the best
 * ones and their values in "<latest_filename>.best" beside the state file
 * (checkpoint-format.md), written atomically before the state file, and
 * read back when the Saver next saves into the directory, so the ranking
 * survives a restart. An unmanaged save (a name) is never ranked. The
 * Saver is configured by the hook at its first save: a Saver shared by
 * two hooks follows the last one's best_k.
 * **One trainer per directory:** every save first removes
 * stale "<file>.tmp-XXXXXX" temporaries of checkpoint_dir (data, graph
 * descriptions, state file), and each Saver's retention deletes what its
 * state file no longer lists, so two trainers writing one directory would
 * delete each other's checkpoints. begin() therefore locks the directory
 * (after creating it, before writing anything there): the lock file
 * "<checkpoint_dir>/hooked.lock" holds the holder's line "pid <pid> on
 * host <host> since <UTC time> (hooked <version>)", and while another
 * session (of this process or another) holds it, begin() fails with
 * FAILED_PRECONDITION "Checkpoint directory <dir> is in use by another
 * trainer (<its line>; lock file <dir>/hooked.lock). Two trainers writing
 * one directory delete each other's checkpoints: give each run its own
 * directory, or stop the other one." and nothing in the directory is
 * touched. The hooks of one session share the lock of a directory ("a/b"
 * and "a/b/" are one; "./a/b" is another name and would be refused): the
 * session takes it for the first of them and releases it when it closes,
 * or is freed; a hook driven without a session holds its own until end(),
 * its next begin() or hk_hook_free(). A re-creation keeps it. The lock is
 * the operating system's (hooked/sys/fs.h): a process killed while holding
 * it leaves the file, and the next trainer takes it over; a clean end
 * removes it. A file system that cannot lock (hk_fs version 1 or 2, a NULL
 * lock slot) writes unlocked, logged at DEBUG. Not covered: a
 * hk_saver_save() into the directory outside these hooks, which still
 * removes the hooks' temporaries. Hooks of one session with different
 * basenames in one directory are safe only while no two of their saves
 * overlap, which the asynchronous hook does not ensure.
 * **The check-resume mode.** `hooked-ckpt check-resume` proves that a
 * program resumes exactly by running it to its end, then stopped at a step
 * K and resumed, without changing the program: it asks the library, through
 * the environment variable HOOKED_CHECK_RESUME, which is meant for that
 * tool alone. Its value is a comma-separated list of key=value, each key at
 * most once: `stop_at=K` (a decimal global step >= 0), `keep_all=0|1`,
 * `report=DIR` (a directory the tool made, for the host loop's reports,
 * hooked/loop.h). Every checkpoint saver hook reads it once, in begin() —
 * a program with several checkpoint hooks gets it in each — and logs at
 * INFO what it changes:
 *   - stop_at=K: after a run that leaves the global step >= K the hook
 *     requests a stop, so the session stops after that step and end()
 *     writes the final checkpoint at it; a session created at a step
 *     already >= K stops before its first step, as StopAtStep does;
 *   - keep_all=1: the hook's Saver keeps every managed checkpoint, as with
 *     max_to_keep 0, so every step can be compared;
 *   - the asynchronous hook waits for a write in flight instead of
 *     deferring a due save (as with block_when_busy), so its checkpoints
 *     land on the same steps in every run.
 * Unset or empty, nothing changes. A value that is not such a list fails
 * begin() with INVALID_ARGUMENT naming HOOKED_CHECK_RESUME and the bad item
 * (never ignored: a run that silently skipped the stop would pass for a
 * resumed one).
 * **A Saver over a group.** Given a Saver whose group has more than one
 * rank (hk_saver_options.group, hk_saver_group_place() in
 * hooked/checkpoint.h), the hook runs on every rank of the job, each with
 * its own rank's Saver, and every rank saves at the same steps (each save
 * is collective): at creation, at the cadence's steps (save_steps: a
 * clock's cadence is refused, since a clock differs between ranks) and at
 * end(). Rank 0 alone takes the directory lock, writes graph.txt and the
 * CHECKPOINT events; the other ranks write only their shards (their
 * listeners run as rank 0's). The creation save is skipped on every rank
 * when checkpoint_dir already holds the committed checkpoint of the global
 * step (a rank restored it: rank 0 alone, through a Saver of its own that
 * reads the whole model, with a broadcast hook placed before this one
 * giving it to the other ranks; or every rank through the grouped Saver):
 * every rank sees the same, since no rank has saved in the session yet.
 * A rank that fails before its part of a save (a listener's before_save,
 * reading best_metric) joins that save as failed (hk_saver_fail_save()),
 * so every rank fails it together instead of waiting for this one: the
 * failing rank returns its own error, the others the save's ("rank <r> of
 * <N>: <its message>"), and the previous checkpoint stays the latest.
 * best_k is refused with such a Saver.
 * @param opts  required (checkpoint_dir is); borrowed for the call.
 * **Ownership:** *out owned, hk_hook_free().
 * **Errors:** INVALID_ARGUMENT: no checkpoint_dir; "You cannot
 * provide both saver and scaffold."; "Either save_secs or save_steps should
 * be provided." / "Can not provide both save_secs and save_steps."; an
 * invalid cadence, steps_per_run < 1, a checkpoint_basename that is
 * not a valid name, a listener without vtable or with a bad version,
 * a negative best_k, best_k without best_metric (or an empty one),
 * best_metric without best_k, a best_mode other than HK_MONITOR_MIN or
 * HK_MONITOR_MAX, restore_best without best_k; save_secs or best_k with a
 * Saver over a group of more than one rank (named); RESOURCE_EXHAUSTED.
 * Nothing is created on failure.
 * Later: begin() fails with FAILED_PRECONDITION "Global step should
 * be created to use CheckpointSaverHook.", with FAILED_PRECONDITION
 * "Checkpoint directory ... is in use by another trainer ...",
 * INVALID_ARGUMENT naming HOOKED_CHECK_RESUME for a malformed value of it,
 * NOT_FOUND naming a best_metric the executor does not know, or a
 * file-system error creating or locking the directory; the first save
 * without any saver with FAILED_PRECONDITION
 * "No saver available: provide a saver or a scaffold."; save_secs or
 * best_k with a Scaffold's Saver over a group (begin(), INVALID_ARGUMENT
 * naming it); a Saver with a group found only after begin()
 * (FAILED_PRECONDITION at its first save); a save whose
 * best_metric cannot be read or is not one number fails with that error,
 * naming best_metric, and writes nothing.
 * **Threads:** any; callbacks on the training thread. **Allocates:** yes
 * (and at every save).
 */
HK_API hk_code hk_checkpoint_saver_hook_new(hk_hook **out, const hk_checkpoint_saver_options *opts, hk_status *status);

/**
 * AsyncCheckpointSaverHook (group L): as the synchronous hook, but a
 * save snapshots every variable of its Saver into one reusable buffer and
 * one background thread writes it. Where the executor takes
 * part in copy-before-write (the embedded executor for the variables
 * it owns, the host loop when the program calls hk_loop_updates_begin()),
 * the background thread makes the copy while the next step runs, and a
 * variable about to be written is copied first; elsewhere the copy is made
 * on the training thread at the step boundary, and is its stall. At most
 * one save is in flight; when the timer fires during one, the save is
 * deferred to the next after_run ("Saver thread still in progress,
 * deferring checkpoint.") or, with block_when_busy, waited for. The
 * completion (log lines, CHECKPOINT event, listeners' after_save and their
 * stop requests) is processed on the training thread at the next after_run
 * or end(); a background error is returned from there, naming the
 * checkpoint. end() waits for the write in flight, then saves the
 * final step synchronously unless it was already written, or restored at
 * creation (like the synchronous hook, it does not save again the
 * checkpoint a creation just restored). With a Saver over a group of more
 * than one rank it saves as the synchronous hook does (every rank, rank 0
 * alone locking and writing events) and a save that falls due during a
 * write waits for it, as with block_when_busy, so every rank saves at
 * exactly the cadence's steps; the snapshot is made as without a group
 * (above), and the writer thread makes the collective save: the group must accept calls from that thread while the
 * training thread makes collectives of its own. A rank that fails before it hands a save over (a listener, its snapshot
 * running out of memory) hands the failure to the writer thread, which joins that save as failed, and returns its error
 * at once. Over MPI, give the Saver a second hk_mpi context (hk_mpi_new()) for its group, with MPI initialized by
 * MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...). Logs
 * "Create AsyncCheckpointSaverHook saving to path\n%s", followed by
 * " with %zu listener(s)." when it has listeners, when and where
 * the synchronous hook logs its line.
 * **Ownership**, **Errors:** as hk_checkpoint_saver_hook_new(); write
 * errors of the background thread are returned by the after_run or end()
 * that processes them. The writer thread is joined by end(), when the
 * session lets go of the hook (close or free without end()), or by
 * hk_hook_free() (completing the write in flight first; a result no end()
 * processed is then dropped).
 * **Threads:** any; callbacks on the training thread; the writer thread
 * only copies variables' bytes, does file I/O, allocates and
 * logs through the env, and, with a Saver over a group, calls the group.
 * **Allocates:** the snapshot buffer and its copy list at the first save
 * (they grow only if the variables grow); after that a save allocates
 * nothing for the snapshot.
 */
HK_API hk_code hk_async_checkpoint_saver_hook_new(hk_hook **out, const hk_checkpoint_saver_options *opts,
                                                  hk_status *status);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_CHECKPOINT_SAVER_H */
