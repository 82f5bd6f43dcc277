/*
 * train_digits_mpi — train_digits --distributed sync|ps under mpirun
 * (hooked/mpi.h): the start of the job (MPI, the signal hand-over of a
 * synchronous job, its batch agreement), the distributed hooks, a worker's
 * set-up, and the end. Built only with hooked::mpi.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#if !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* pthread_sigmask, sigset_t */
#endif

#include "train_digits.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int dist_log_env(run *r, hk_status *st) {
  if (g_dist.mode == DIST_NONE) return 0;
  if (hk_mpi_log_env(&r->env, g_dist.mpi, &r->env, st) != HK_OK) return fail_status("the log's rank prefix", st);
  return 0;
}

/* The distributed hooks: the broadcast (sync) or the worker's push (ps)
 * first, so every later hook sees the chief's variables and step; the stop
 * agreement (sync) last, so it sees every other stop request. */
int add_dist_hooks(run *r, hk_status *st) {
  if (g_dist.mode == DIST_SYNC) {
    if (hk_mpi_broadcast_hook_new(&r->dist_first, g_dist.mpi, st) != HK_OK)
      return fail_status("creating the MPI hooks", st);
    r->dist_last = g_dist.stop; /* made at start-up, freed by dist_end() */
  } else if (r->ps_worker) {
    /* TensorFlow's recipe: worker task k starts at step int(K log(k + 1)).
     * Here the chief serves and does not train, so the workers are tasks
     * 0, 1, ... (ranks 1, 2, ...) and the first starts at once. */
    hk_global_step_waiter_options wo = HK_GLOBAL_STEP_WAITER_OPTIONS_INIT;
    wo.wait_until_step = (int64_t)((double)r->o->ps_wait_k * log((double)g_dist.rank));
    wo.poll_interval_secs = 0.05;
    if (hk_mpi_ps_worker_hook_new(&r->dist_first, g_dist.ps, st) != HK_OK ||
        hk_global_step_waiter_hook_new(&r->waiter, &wo, st) != HK_OK)
      return fail_status("creating the parameter-server hooks", st);
  } else if (r->ps_chief) {
    if (hk_mpi_ps_chief_hook_new(&r->ps_serve, g_dist.ps, st) != HK_OK)
      return fail_status("creating the parameter-server hook", st);
    /* Before the checkpoint saver's end(): the final checkpoint is the
     * state the workers were told to stop at. */
    r->chief_hooks[r->nchief++] = r->ps_serve;
  }
  return 0;
}

/* A worker's Scaffold: its ready check (in sync mode its own initial values,
 * replaced by the chief's through the broadcast; on a parameter server the
 * chief's variables, once it serves them), and a parameter-server worker's
 * executor. The parameter server's chief gets its serving op. */
int setup_distributed(run *r, hk_status *st) {
  hk_scaffold_options sco = HK_SCAFFOLD_OPTIONS_INIT;
  hk_code rc;
  if (r->ps_chief && hk_mpi_ps_serve_op(&r->serve, g_dist.ps, r->m.g, "ps_serve", st) != HK_OK)
    return fail_status("building the parameter server", st);
  if (g_dist.chief) return 0;
  sco.env = &r->env;
  rc = g_dist.mode == DIST_SYNC ? hk_mpi_sync_worker_ops(g_dist.mpi, r->m.g, &sco.ready_op,
                                                         &sco.ready_for_local_init_op, &sco.local_init_op, st)
                                : hk_mpi_ps_worker_ready_ops(g_dist.ps, r->m.g, &sco.ready_op,
                                                             &sco.ready_for_local_init_op, &sco.local_init_op, st);
  if (rc != HK_OK || hk_scaffold_new(&r->scaffold, &sco, st) != HK_OK) return fail_status("setting up the worker", st);
  if (r->ps_worker && hk_mpi_ps_worker_executor_new(&r->ps_executor, g_dist.ps, hk_graph_executor(r->m.g), st) != HK_OK)
    return fail_status("setting up the worker", st);
  return 0;
}

/* ---- sharded checkpoints (--distributed sync --checkpoint-dir) ------------------ */

/* The cadence of a sharded job: --save-steps, or 1000 steps (a clock's
 * cadence would differ between ranks). */
static int64_t shard_save_steps(const options *o) { return o->f.save_steps != HK_UNSET_STEPS ? o->f.save_steps : 1000; }

/* Every rank's Saver over the job (hk_mpi_group()): each writes its shard
 * of every checkpoint, the chief commits (docs/distributed.md). Every rank
 * saves through a CheckpointSaverHook given that Saver (with --async an
 * AsyncCheckpointSaverHook, whose writer thread makes the exchanges on a
 * context of their own), right after the
 * broadcast hook (so it sees the chief's variables and global step): the
 * hook saves on every rank at the same steps, and the chief's alone locks
 * the directory and writes the events. The chief restores through its own
 * Saver (the Scaffold's): the model it restores is the whole one whatever
 * rank count saved it, and the broadcast gives it to every rank. */
int setup_sharded_checkpoints(run *r, hk_status *st) {
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  hk_checkpoint_saver_options co = HK_CHECKPOINT_SAVER_OPTIONS_INIT;
  const digits_flags *f = &r->o->f;
  if (g_dist.mode != DIST_SYNC || !f->checkpoint_dir) return 0;
  so.env = &r->env;
  so.executor = hk_graph_executor(r->m.g);
  so.max_to_keep = f->keep;
  so.group = hk_mpi_group();
  so.group_user = g_dist.ckpt_mpi ? g_dist.ckpt_mpi : g_dist.mpi; /* --async: the writer thread's own */
  if (hk_saver_new(&r->shard_saver, &so, st) != HK_OK) return fail_status("creating the sharded saver", st);
  co.checkpoint_dir = f->checkpoint_dir;
  co.save_steps = shard_save_steps(r->o);
  co.saver = r->shard_saver;
  if (g_dist.chief && r->metrics) { /* the log is fsynced before each checkpoint */
    co.listeners = &r->metrics_listener;
    co.nlisteners = 1;
  }
  if ((f->async ? hk_async_checkpoint_saver_hook_new(&r->shard_hook, &co, st)
                : hk_checkpoint_saver_hook_new(&r->shard_hook, &co, st)) != HK_OK)
    return fail_status("creating the checkpoint hook", st);
  return 0;
}

/* A synchronous job: the stop hook takes the stop signals (--stop-signals,
 * default SIGINT and SIGTERM) over from hooked's helper (*installed), with
 * them blocked meanwhile, so there is no moment without a handler; a
 * signal the helper caught already becomes the stop hook's request. Either
 * way every rank stops when the session starts. */
static hk_code take_signals(const options *o, int *installed, hk_status *st) {
  static const int numbers[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2}; /* hk_signal_set's bits, in order */
  hk_mpi_stop_options mso = HK_MPI_STOP_OPTIONS_INIT;
  sigset_t set, old;
  mso.stop_signals = digits_stop_signals(&o->f);
  sigemptyset(&set);
  for (unsigned i = 0; i < sizeof numbers / sizeof *numbers; i++)
    if (mso.stop_signals & (1u << i)) sigaddset(&set, numbers[i]);
  pthread_sigmask(SIG_BLOCK, &set, &old);
  const int fired = *installed && hk_signal_fired() != 0;
  if (*installed) hk_signal_uninstall(NULL);
  *installed = 0;
  hk_code rc = hk_mpi_stop_hook_new(&g_dist.stop, g_dist.mpi, &mso, st);
  if (rc == HK_OK && fired) hk_mpi_stop_hook_request(g_dist.stop);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc;
}

/* --distributed, under mpirun: rank 0 is the chief. hooked makes MPI calls
 * from this thread only, except a sharded --async job's background
 * checkpoint writer, on a context of its own (MPI_THREAD_MULTIPLE).
 * @return 0, or the exit status. */
int dist_start(const options *o, int *argc, char ***argv, int *installed) {
  hk_status st = HK_STATUS_INIT;
  hk_mpi_options mo = HK_MPI_OPTIONS_INIT;
  const int shard_async = o->distributed == DIST_SYNC && o->f.checkpoint_dir && o->f.async;
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(argc, argv, shard_async ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
  if (shard_async && provided < MPI_THREAD_MULTIPLE) {
    fprintf(stderr, PROG ": --async with --distributed sync needs an MPI library with MPI_THREAD_MULTIPLE\n");
    MPI_Abort(MPI_COMM_WORLD, DIGITS_EXIT_RUNTIME);
  }
  g_dist.mode = o->distributed;
  mo.collective_timeout_secs = o->collective_timeout;
  /* A synchronous job's stop hook first: its signal handlers make a stop
   * signal during the rest of the start-up a stop of every rank, agreed on
   * when the session starts. */
  if (hk_mpi_new(&g_dist.mpi, &mo, &st) != HK_OK ||
      (o->distributed == DIST_SYNC && take_signals(o, installed, &st) != HK_OK) ||
      (o->distributed == DIST_PS && hk_mpi_ps_new(&g_dist.ps, g_dist.mpi, &st) != HK_OK) ||
      (shard_async && hk_mpi_new(&g_dist.ckpt_mpi, &mo, &st) != HK_OK)) {
    fprintf(stderr, PROG ": --distributed: %s\n", st.message);
    MPI_Abort(MPI_COMM_WORLD, DIGITS_EXIT_RUNTIME);
  }
  g_dist.rank = hk_mpi_rank(g_dist.mpi);
  g_dist.size = hk_mpi_size(g_dist.mpi);
  g_dist.chief = hk_mpi_is_chief(g_dist.mpi);
  snprintf(g_dist.tag, sizeof g_dist.tag, "rank %d/%d: ", g_dist.rank, g_dist.size);
  snprintf(g_dist.who, sizeof g_dist.who, PROG ": rank %d/%d", g_dist.rank, g_dist.size);
  if (o->distributed == DIST_SYNC && !digits_batch_agrees(g_dist.mpi, PROG, g_dist.tag, o->f.batch)) {
    hk_hook_free(g_dist.stop);
    hk_mpi_free(g_dist.ckpt_mpi);
    hk_mpi_free(g_dist.mpi);
    MPI_Finalize();
    return DIGITS_EXIT_USAGE;
  }
  return 0;
}

/* A rank that failed ends the job: none is left waiting for it. */
void dist_end(int rc) {
  if (rc != 0) MPI_Abort(MPI_COMM_WORLD, rc);
  hk_hook_free(g_dist.stop);
  hk_mpi_ps_free(g_dist.ps);
  hk_mpi_free(g_dist.ckpt_mpi);
  hk_mpi_free(g_dist.mpi);
  MPI_Finalize();
}
