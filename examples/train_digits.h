/*
 * train_digits — what the files of train_digits.c share: its options, its
 * part in an MPI job, and the objects of one training run; and the steps
 * of a run that live in the other files: the hooks (train_digits_hooks.c)
 * and the start, set-up and end of a distributed job (train_digits_mpi.c).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_EXAMPLES_TRAIN_DIGITS_H
#define HOOKED_EXAMPLES_TRAIN_DIGITS_H

#include "digits_common.h"
#include "digits_dist.h"
#include "train_digits_graph.h"

#include <hooked/hooked.h>
#ifdef HK_EXAMPLE_MPI
#include <hooked/mpi.h>
#endif

#include <stddef.h>
#include <stdint.h>

#define PROG "train_digits"

typedef struct options {
  digits_flags f;            /* the flags both digits programs take */
  const char *profile_dir;   /* NULL: no ProfilerHook */
  int64_t profile_steps;     /* HK_UNSET_STEPS when not given: 1000 */
  int progress;              /* -1: when stderr is a terminal; 0 or 1 as given */
  int64_t early_patience;    /* 0: no EarlyStoppingHook */
  int64_t early_every;       /* HK_UNSET_STEPS when not given: 100 */
  int distributed;           /* DIST_NONE, DIST_SYNC or DIST_PS */
  int64_t ps_wait_k;         /* K of the workers' wait_until_step = int(K log(task + 1)) */
  double collective_timeout; /* --collective-timeout; HK_UNSET_SECS: hooked::mpi's default */
} options;

/* --distributed: this process's part in an MPI job (hooked/mpi.h). */
enum { DIST_NONE, DIST_SYNC, DIST_PS };
typedef struct dist {
  int mode;
  int rank, size, chief;
  /* What starts each line of a rank of a distributed job: "rank R/N: "
   * ("" in a single process), and PROG ": rank R/N", the name the shared
   * code's messages start with. */
  char tag[32];
  char who[48];
#ifdef HK_EXAMPLE_MPI
  hk_mpi *mpi;
  hk_mpi_ps *ps;
  hk_hook *stop; /* sync: the stop agreement, made at start-up (it owns the signals from then on) */
  /* sync with --async --checkpoint-dir: the sharded checkpoints' own
   * context, for the background writer's exchanges (MPI_THREAD_MULTIPLE) */
  hk_mpi *ckpt_mpi;
#endif
} dist;
extern dist g_dist;

/* Everything train() makes, in the order it makes it; run_free() frees it. */
typedef struct run {
  const options *o;
  int summaries; /* the session writes summaries (the graph has summary ops) */
  int ps_chief;  /* --distributed ps, rank 0: serves the variables, trains nothing */
  int ps_worker; /* --distributed ps, other ranks */
  hk_env env;    /* with --progress, its log sink erases the progress line first */
  trainer t;
  feeder f;
  model m;
  hk_hook *progress, *profiler, *nan_guard, *early_stop, *learning_rate, *feed, *stop, *time_limit;
  hk_hook *dist_first, *dist_last, *waiter, *ps_serve; /* --distributed */
  hk_hook *metrics;                                    /* --metrics-log */
  hk_checkpoint_listener metrics_listener;
  hk_hook *ema;                        /* --ema */
  const digits_data *tst;              /* the test set, for --ema's accuracy */
  hk_hook *chief_hooks[7], *hooks[10]; /* the session's two lists */
  size_t nchief, nhooks;
  hk_saver *saver;
  hk_scaffold *scaffold;
  /* --distributed sync with --checkpoint-dir: every rank's Saver over the
   * job's group (sharded checkpoints), and the CheckpointSaverHook that
   * saves through it on every rank. */
  hk_saver *shard_saver;
  hk_hook *shard_hook;
  hk_executor *ps_executor; /* a parameter-server worker's: the chief's variables */
  hk_handle serve;          /* the parameter server's op */
  hk_session *s;
  /* what the training loop saw */
  float last_loss;
  int64_t steps_run;
  double secs;
} run;

/* Prints "train_digits: <what>: <code>: <message>". @return the exit status
 * of a runtime error. */
int fail_status(const char *what, const hk_status *st);

/* ---- the hooks (train_digits_hooks.c); each @return 0 or the exit status */

/* --progress (or a terminal): the progress line, made before everything
 * that logs. */
int add_progress_hook(run *r, hk_status *st);
/* The chief-only hooks, in the order they run. */
int add_chief_hooks(run *r, hk_status *st);
/* The hooks of every rank, in the order they run. */
int add_hooks(run *r, hk_status *st);

#ifdef HK_EXAMPLE_MPI
/* ---- --distributed (train_digits_mpi.c) --------------------------------- */

/* --distributed: the run's env names the rank in every line it logs
 * (hk_mpi_log_env()); a single process's is left as it is. */
int dist_log_env(run *r, hk_status *st);
/* The distributed hooks (called by add_hooks()). */
int add_dist_hooks(run *r, hk_status *st);
int setup_sharded_checkpoints(run *r, hk_status *st);
/* A worker's Scaffold and executor, the parameter server's op. */
int setup_distributed(run *r, hk_status *st);
/* MPI and g_dist, under mpirun; *installed: hooked's signal helper is
 * installed (a synchronous job takes the signals over from it). @return 0,
 * or the exit status. */
int dist_start(const options *o, int *argc, char ***argv, int *installed);
/* The end of the job; a nonzero rc aborts it. */
void dist_end(int rc);
#endif

#endif
