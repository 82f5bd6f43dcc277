/*
 * hooked::mpi — the stop agreement (H50, H51).
 *
 * Every rank runs a monitored session over its own graph (a global step and
 * a train op adding 1 to it) with the MPI stop hook last. A stop requested on
 * one rank only — StopAtStep, a custom hook placed before the stop hook,
 * hk_mpi_stop_hook_request() (from the training thread or another thread),
 * SIGTERM raised on one rank inside its step, SIGUSR1 when the hook's
 * stop_signals name it — stops every rank after the
 * same step: every rank's global step is equal at the end and every session
 * closes cleanly. The agreement costs one MPI_Iallreduce per step and no other
 * collective (counted through MPI's profiling interface, H51). hooked's own
 * signal helper installed refuses the hook's begin(); a host loop with
 * handle_signals 1 replaces the hook's handlers and fails its first step end;
 * a host loop with handle_signals 0 and its last_step on one rank stops every
 * rank. A stop requested at session creation on one rank (a host loop's chief
 * restored at its last step) stops every rank before any step.
 */
#include "mpi_test.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "hooked/graph.h"
#include "hooked/hooks.h"
#include "hooked/loop.h"
#include "spy_hook.h"
#include "tmpdir.h"

/* ---- MPI's profiling interface: count the collectives hooked makes --------- */

static int g_counting;
static long g_allreduce, g_other_collectives;

int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                   MPI_Request *request) {
  if (g_counting) g_allreduce++;
  return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
}
int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  if (g_counting) g_other_collectives++;
  return PMPI_Bcast(buffer, count, datatype, root, comm);
}
int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm) {
  if (g_counting) g_other_collectives++;
  return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}
int MPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Request *request) {
  if (g_counting) g_other_collectives++;
  return PMPI_Ibcast(buffer, count, datatype, root, comm, request);
}
int MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                   MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
  if (g_counting) g_other_collectives++;
  return PMPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request);
}
int MPI_Barrier(MPI_Comm comm) {
  if (g_counting) g_other_collectives++;
  return PMPI_Barrier(comm);
}
int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
               MPI_Comm comm) {
  if (g_counting) g_other_collectives++;
  return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
}

/* ---- one rank's trainer ------------------------------------------------------- */

typedef struct trainer {
  test_env *te;
  hk_env env; /* counting allocator, log capture, system clock */
  hk_mpi *mpi;
  hk_graph *g;
  hk_handle gs, train, new_gs;
  hk_hook *stop;    /* the MPI stop hook */
  hk_hook *stop_at; /* StopAtStep, on some ranks */
  spy_hook *spy;    /* a custom hook, on some ranks */
  hk_hook *hooks[3];
  size_t nhooks;
  hk_session *s;
  int64_t last_gs; /* the global step after the last run */
  int steps;
} trainer;

static void trainer_init_signals(trainer *t, int handle_signals, unsigned stop_signals) {
  hk_status st = HK_STATUS_INIT;
  memset(t, 0, sizeof *t);
  t->te = mpi_test_env(&t->env);
  t->mpi = mpi_test_context(&t->env);
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  go.env = &t->env;
  assert_ok(hk_graph_new(&t->g, &go, &st), &st);
  assert_ok(hk_graph_get_or_create_global_step(t->g, &t->gs, &st), &st);
  int64_t one = 1;
  hk_tensor c1 = hk_tensor_scalar_i64(&one);
  hk_handle c;
  assert_ok(hk_graph_constant(t->g, &c, "one", &c1, &st), &st);
  assert_ok(hk_graph_assign_add(t->g, &t->train, "train", t->gs, c, &st), &st);
  assert_ok(hk_graph_op_output(t->g, &t->new_gs, t->train, 0, &st), &st);
  hk_mpi_stop_options so = HK_MPI_STOP_OPTIONS_INIT;
  so.handle_signals = handle_signals;
  so.stop_signals = stop_signals;
  assert_ok(hk_mpi_stop_hook_new(&t->stop, t->mpi, &so, &st), &st);
}

static void trainer_init(trainer *t, int handle_signals) { trainer_init_signals(t, handle_signals, 0); }

static void trainer_stop_at(trainer *t, int64_t last_step) {
  hk_status st = HK_STATUS_INIT;
  hk_stop_at_step_options o = HK_STOP_AT_STEP_OPTIONS_INIT;
  o.last_step = last_step;
  assert_ok(hk_stop_at_step_hook_new(&t->stop_at, &o, &st), &st);
}

/* The hooks: StopAtStep and the spy when set, then the stop hook last. */
static hk_code trainer_open(trainer *t, hk_status *st) {
  t->nhooks = 0;
  if (t->stop_at) t->hooks[t->nhooks++] = t->stop_at;
  if (t->spy) t->hooks[t->nhooks++] = t->spy->hook;
  t->hooks[t->nhooks++] = t->stop;
  hk_session_options o;
  assert_int_equal(hk_session_options_init(&o, HK_SESSION_OPTIONS_VERSION), HK_OK);
  o.env = &t->env;
  o.executor = hk_graph_executor(t->g);
  o.hooks = t->hooks;
  o.nhooks = t->nhooks;
  return hk_session_new(&t->s, &o, st);
}

/* One step: run the train op, keep the new global step. */
static hk_code trainer_step(trainer *t, hk_status *st) {
  hk_run_args args;
  hk_tensor out;
  memset(&args, 0, sizeof args);
  args.fetches = &t->new_gs;
  args.nfetches = 1;
  hk_code rc = hk_session_run(t->s, &args, &out, NULL, st);
  if (rc == HK_OK) {
    t->last_gs = *(const int64_t *)out.data;
    t->steps++;
  }
  return rc;
}

/* Train until the session stops (at most `cap` steps: a broken agreement
 * then shows as unequal steps instead of a hang), close, check OK. */
static void trainer_run(trainer *t, int cap) {
  hk_status st = HK_STATUS_INIT;
  while (!hk_session_should_stop(t->s) && t->steps < cap) assert_ok(trainer_step(t, &st), &st);
  assert_ok(hk_session_close(t->s, HK_OK, &st), &st);
}

static void trainer_free(trainer *t) {
  hk_session_free(t->s);
  hk_hook_free(t->stop);
  hk_hook_free(t->stop_at);
  spy_hook_free(t->spy);
  hk_graph_free(t->g);
  hk_mpi_free(t->mpi);
  assert_int_equal(test_env_release(t->te), 0);
}

/* Every rank ended at global step `want`, after `want` steps. */
static void assert_every_rank_at(trainer *t, int64_t want) {
  int64_t all[64];
  assert_true(mpi_size() <= 64);
  mpi_allgather_i64(t->last_gs, all);
  for (int r = 0; r < mpi_size(); r++)
    if (all[r] != want)
      fail_msg("rank %d stopped at global step %lld, not %lld", r, (long long)all[r], (long long)want);
  assert_int_equal(t->steps, want);
}

/* ---- requests on one rank --------------------------------------------------------- */

static void test_stop_at_step_on_rank_1_only_stops_every_rank_after_step_5(void) {
  trainer t;
  trainer_init(&t, 1);
  if (mpi_rank() == 1) trainer_stop_at(&t, 5);
  hk_status st = HK_STATUS_INIT;
  assert_ok(trainer_open(&t, &st), &st);
  trainer_run(&t, 50);
  assert_every_rank_at(&t, 5);
  assert_logged(t.te, HK_LOG_INFO, "Rank 1 asked to stop; every rank stops after this step.");
  trainer_free(&t);
}

static void test_a_custom_hooks_stop_request_on_the_last_rank_stops_every_rank(void) {
  trainer t;
  trainer_init(&t, 0);
  if (mpi_rank() == mpi_size() - 1) {
    t.spy = spy_hook_new("requester", NULL, NULL);
    assert_non_null(t.spy);
    spy_hook_stop_at(t.spy, SPY_AFTER_RUN, 5, 1);
  }
  hk_status st = HK_STATUS_INIT;
  assert_ok(trainer_open(&t, &st), &st);
  trainer_run(&t, 50);
  assert_every_rank_at(&t, 5);
  trainer_free(&t);
}

/* A stop requested at creation on the last rank alone (StopAtStep on a
 * restored last step, say) is agreed on in after_create_session: every rank
 * stops before its first step, none runs one. */
static void test_a_stop_at_creation_on_the_last_rank_stops_every_rank_before_any_step(void) {
  trainer t;
  trainer_init(&t, 0);
  if (mpi_rank() == mpi_size() - 1) {
    t.spy = spy_hook_new("requester", NULL, NULL);
    assert_non_null(t.spy);
    spy_hook_stop_at(t.spy, SPY_AFTER_CREATE, 1, 1);
  }
  hk_status st = HK_STATUS_INIT;
  assert_ok(trainer_open(&t, &st), &st);
  assert_true(hk_session_should_stop(t.s));
  trainer_run(&t, 50);
  assert_every_rank_at(&t, 0);
  char want[96];
  snprintf(want, sizeof want, "Rank %d asked to stop; every rank stops before its next step.", mpi_size() - 1);
  assert_logged(t.te, HK_LOG_INFO, want);
  trainer_free(&t);
}

/* hk_mpi_stop_hook_request() between two steps on the last rank: every rank
 * stops after the next step; none stopped before (no spurious agreement). */
static void test_stop_hook_request_on_the_last_rank_stops_every_rank_after_the_next_step(void) {
  trainer t;
  hk_status st = HK_STATUS_INIT;
  trainer_init(&t, 0);
  assert_ok(trainer_open(&t, &st), &st);
  for (int i = 0; i < 3; i++) {
    assert_false(hk_session_should_stop(t.s));
    assert_ok(trainer_step(&t, &st), &st);
  }
  if (mpi_rank() == mpi_size() - 1) hk_mpi_stop_hook_request(t.stop);
  assert_false(hk_session_should_stop(t.s)); /* takes effect at the next step's end */
  trainer_run(&t, 50);
  assert_every_rank_at(&t, 4);
  /* A NULL hook or another kind of hook: no-op. */
  hk_mpi_stop_hook_request(NULL);
  trainer_free(&t);
}

static void *request_later(void *arg) {
  struct timespec ts = {0, 50 * 1000 * 1000};
  nanosleep(&ts, NULL);
  hk_mpi_stop_hook_request(arg);
  return NULL;
}

/* From another thread, at any moment: every rank still stops after the same
 * step. */
static void test_stop_hook_request_from_another_thread_stops_every_rank_together(void) {
  trainer t;
  hk_status st = HK_STATUS_INIT;
  pthread_t th;
  trainer_init(&t, 0);
  assert_ok(trainer_open(&t, &st), &st);
  int mine = mpi_rank() == mpi_size() - 1;
  if (mine) assert_int_equal(pthread_create(&th, NULL, request_later, t.stop), 0);
  trainer_run(&t, 1000000);
  if (mine) pthread_join(th, NULL);
  int64_t all[64];
  mpi_allgather_i64(t.last_gs, all);
  for (int r = 0; r < mpi_size(); r++) assert_int_equal(all[r], all[0]);
  assert_true(t.last_gs > 0 && t.last_gs < 1000000);
  trainer_free(&t);
}

/* ---- signals ------------------------------------------------------------------------ */

typedef struct raiser {
  int runs;
  int at;
  int signal; /* 0: SIGTERM */
} raiser;

static hk_code raise_in_step(spy_hook *spy, spy_slot slot, void *arg, hk_status *st) {
  raiser *r = spy->action_user;
  (void)arg, (void)st;
  if (slot == SPY_BEFORE_RUN && ++r->runs == r->at) raise(r->signal ? r->signal : SIGTERM);
  return HK_OK;
}

/* The session's stop reason is the signal, by name. */
static void assert_stopped_by(trainer *t, const char *signal) {
  hk_stop_info why;
  hk_status st = HK_STATUS_INIT;
  assert_ok(hk_session_stop_reason(&why, t->s, &st), &st);
  if (why.reason != HK_STOP_SIGNAL || strcmp(why.detail, signal) != 0)
    fail_msg("rank %d: stop reason %s (%s), not signal (%s)", mpi_rank(), hk_stop_reason_name(why.reason), why.detail,
             signal);
}

/* SIGTERM delivered to rank 1 alone, inside its 4th step: the hook's
 * handler only notes it, the agreement at that step's end stops every rank,
 * every session closes cleanly and the process goes on (the default action
 * would have killed it). The handlers are the previous ones after close. */
static void test_sigterm_on_one_rank_stops_every_rank_after_the_same_step(void) {
  trainer t;
  raiser r = {0, 4, 0};
  hk_status st = HK_STATUS_INIT;
  struct sigaction before, after;
  sigaction(SIGTERM, NULL, &before);
  trainer_init(&t, 1);
  if (mpi_rank() == 1) {
    t.spy = spy_hook_new("raiser", NULL, NULL);
    assert_non_null(t.spy);
    t.spy->action = raise_in_step;
    t.spy->action_user = &r;
  }
  assert_ok(trainer_open(&t, &st), &st);
  trainer_run(&t, 50);
  assert_every_rank_at(&t, 4);
  assert_logged(t.te, HK_LOG_INFO, "Rank 1 asked to stop (SIGTERM); every rank stops after this step.");
  assert_stopped_by(&t, "SIGTERM");
  sigaction(SIGTERM, NULL, &after);
  assert_true(after.sa_handler == before.sa_handler);
  trainer_free(&t);
}

/* SIGUSR1 — the warning Slurm sends before the time limit
 * (--signal=USR1@60) — in stop_signals, delivered to the last rank alone
 * inside its 3rd step: the process lives (SIGUSR1's default action ends
 * it), every rank stops after that same step with the stop reason "signal"
 * naming SIGUSR1, and SIGUSR1's previous disposition is back after close.
 * (Contract H90.) */
static void test_sigusr1_in_stop_signals_on_one_rank_stops_every_rank_after_the_same_step(void) {
  trainer t;
  raiser r = {0, 3, SIGUSR1};
  hk_status st = HK_STATUS_INIT;
  struct sigaction before, after;
  sigaction(SIGUSR1, NULL, &before);
  trainer_init_signals(&t, 1, HK_SIGNAL_DEFAULT_SET | HK_SIGNAL_USR1);
  if (mpi_rank() == mpi_size() - 1) {
    t.spy = spy_hook_new("raiser", NULL, NULL);
    assert_non_null(t.spy);
    t.spy->action = raise_in_step;
    t.spy->action_user = &r;
  }
  assert_ok(trainer_open(&t, &st), &st);
  trainer_run(&t, 50);
  assert_every_rank_at(&t, 3);
  char line[96];
  snprintf(line, sizeof line, "Rank %d asked to stop (SIGUSR1); every rank stops after this step.", mpi_size() - 1);
  assert_logged(t.te, HK_LOG_INFO, line);
  assert_stopped_by(&t, "SIGUSR1");
  sigaction(SIGUSR1, NULL, &after);
  assert_true(after.sa_handler == before.sa_handler);
  trainer_free(&t);
}

/* stop_signals without SIGTERM: the hook leaves SIGTERM's disposition
 * alone and handles only the signals it was given. */
static void test_stop_signals_replace_the_default_set(void) {
  trainer t;
  struct sigaction term, usr2;
  trainer_init_signals(&t, 1, HK_SIGNAL_USR2);
  sigaction(SIGTERM, NULL, &term);
  sigaction(SIGUSR2, NULL, &usr2);
  assert_true(term.sa_handler == SIG_DFL);
  assert_true(usr2.sa_handler != SIG_DFL && usr2.sa_handler != SIG_IGN);
  trainer_free(&t);
  sigaction(SIGUSR2, NULL, &usr2);
  assert_true(usr2.sa_handler == SIG_DFL);
}

/* SIGTERM during start-up — after the stop hook is made, before the
 * session exists (a program loading its data) — on one rank: the handlers
 * are the hook's from its creation, so the rank lives, and the start's
 * agreement stops every rank before any step. */
static void test_sigterm_during_start_up_on_one_rank_stops_every_rank_before_any_step(void) {
  trainer t;
  hk_status st = HK_STATUS_INIT;
  trainer_init(&t, 1);
  if (mpi_rank() == mpi_size() - 1) raise(SIGTERM);
  assert_ok(trainer_open(&t, &st), &st);
  assert_true(hk_session_should_stop(t.s));
  trainer_run(&t, 50);
  assert_every_rank_at(&t, 0);
  trainer_free(&t);
}

/* A second session's stop hook after a signal: the flag of the first one is
 * gone, so it does not stop at once. */
static void test_a_later_session_does_not_inherit_an_old_signal(void) {
  trainer t;
  hk_status st = HK_STATUS_INIT;
  trainer_init(&t, 1);
  trainer_stop_at(&t, 3);
  assert_ok(trainer_open(&t, &st), &st);
  trainer_run(&t, 50);
  assert_every_rank_at(&t, 3);
  trainer_free(&t);
}

static void test_hookeds_signal_helper_installed_makes_begin_fail_naming_it(void) {
  trainer t;
  hk_status st = HK_STATUS_INIT;
  trainer_init(&t, 1);
  assert_ok(hk_signal_install(&st), &st);
  assert_status(trainer_open(&t, &st), &st, HK_FAILED_PRECONDITION, "hk_signal_install");
  assert_null(t.s);
  assert_ok(hk_signal_uninstall(&st), &st);
  /* Without the helper the same hook starts (and nothing was left behind). */
  trainer_stop_at(&t, 2);
  assert_ok(trainer_open(&t, &st), &st);
  trainer_run(&t, 50);
  assert_every_rank_at(&t, 2);
  trainer_free(&t);
}

static void test_a_second_stop_hook_handling_signals_in_the_process_fails_begin(void) {
  trainer a, b;
  hk_status st = HK_STATUS_INIT;
  trainer_init(&a, 1);
  trainer_init(&b, 1);
  assert_ok(trainer_open(&a, &st), &st);
  assert_status(trainer_open(&b, &st), &st, HK_FAILED_PRECONDITION, "another stop hook");
  assert_ok(hk_session_close(a.s, HK_OK, &st), &st);
  /* Once the first has ended, the second may. */
  trainer_stop_at(&b, 1);
  assert_ok(trainer_open(&b, &st), &st);
  trainer_run(&b, 50);
  assert_every_rank_at(&b, 1);
  trainer_free(&a);
  trainer_free(&b);
}

/* ---- the host loop -------------------------------------------------------------------- */

static hk_loop *new_loop(hk_env *env, hk_hook **hooks, size_t nhooks, int handle_signals, int64_t last_step, float *w) {
  hk_loop_options o;
  hk_status st = HK_STATUS_INIT;
  hk_loop *loop = NULL;
  assert_int_equal(hk_loop_options_init(&o, HK_LOOP_OPTIONS_VERSION), HK_OK);
  o.env = env;
  o.hooks = hooks;
  o.nhooks = nhooks;
  o.handle_signals = handle_signals;
  o.last_step = last_step;
  assert_ok(hk_loop_new(&loop, &o, &st), &st);
  int64_t two[1] = {2};
  assert_ok(hk_loop_add_array(loop, "w", HK_DTYPE_F32, 1, two, w, 0, &st), &st);
  return loop;
}

/* The loop installs hooked's helper after the hooks' begin(): the stop hook
 * finds its SIGTERM handler replaced at the first step's end, on every rank,
 * before any collective. */
static void test_host_loop_with_handle_signals_fails_the_first_step_end(void) {
  hk_env env;
  test_env *te = mpi_test_env(&env);
  hk_mpi *mpi = mpi_test_context(&env);
  hk_status st = HK_STATUS_INIT;
  hk_hook *stop = NULL;
  struct sigaction before, after;
  sigaction(SIGTERM, NULL, &before);
  assert_ok(hk_mpi_stop_hook_new(&stop, mpi, NULL, &st), &st);
  float w[2] = {1, 2};
  hk_loop *loop = new_loop(&env, &stop, 1, 1, HK_UNSET_STEPS, w);
  assert_ok(hk_loop_start(loop, NULL, &st), &st);
  assert_ok(hk_loop_step_begin(loop, NULL, &st), &st);
  assert_status(hk_loop_step_end(loop, &st), &st, HK_FAILED_PRECONDITION, "handle_signals");
  assert_non_null(strstr(st.message, "replaced"));
  assert_status(hk_loop_finish(loop, &st), &st, HK_FAILED_PRECONDITION, "handle_signals");
  hk_loop_free(loop);
  hk_hook_free(stop);
  sigaction(SIGTERM, NULL, &after);
  assert_true(after.sa_handler == before.sa_handler);
  hk_mpi_free(mpi);
  assert_int_equal(test_env_release(te), 0);
}

/* handle_signals 0: the loop's StopAtStep (last_step) on rank 1 alone stops
 * every rank after that step. */
static void test_host_loop_last_step_on_one_rank_stops_every_rank(void) {
  hk_env env;
  test_env *te = mpi_test_env(&env);
  hk_mpi *mpi = mpi_test_context(&env);
  hk_status st = HK_STATUS_INIT;
  hk_hook *stop = NULL;
  assert_ok(hk_mpi_stop_hook_new(&stop, mpi, NULL, &st), &st);
  float w[2] = {1, 2};
  hk_loop *loop = new_loop(&env, &stop, 1, 0, mpi_rank() == 1 ? 6 : HK_UNSET_STEPS, w);
  assert_ok(hk_loop_start(loop, NULL, &st), &st);
  int steps = 0;
  while (!hk_loop_should_stop(loop) && steps < 50) {
    assert_ok(hk_loop_step_begin(loop, NULL, &st), &st);
    w[0] += 1;
    assert_ok(hk_loop_step_end(loop, &st), &st);
    steps++;
  }
  assert_ok(hk_loop_finish(loop, &st), &st);
  int64_t all[64];
  mpi_allgather_i64(hk_loop_global_step(loop), all);
  for (int r = 0; r < mpi_size(); r++) assert_int_equal(all[r], 6);
  assert_int_equal(steps, 6);
  hk_loop_free(loop);
  hk_hook_free(stop);
  hk_mpi_free(mpi);
  assert_int_equal(test_env_release(te), 0);
}

/* The host loop's StopAtStep decides in after_create_session on the rank's
 * own step, before the broadcast: a chief restored at its last step stops
 * there, while a worker (no stop condition of the loop's, step 0 until the
 * broadcast) would enter the first step's collectives alone and wait
 * forever. The stop hook's start-time agreement stops every rank before any
 * step, with the chief's step on every rank. */
static void run_program(hk_mpi *mpi, hk_env *env, const char *dir, int64_t last_step, int64_t *step, int *steps) {
  hk_status st = HK_STATUS_INIT;
  hk_hook *bcast = NULL, *stop = NULL;
  assert_ok(hk_mpi_broadcast_hook_new(&bcast, mpi, &st), &st);
  assert_ok(hk_mpi_stop_hook_new(&stop, mpi, NULL, &st), &st);
  hk_hook *hooks[2] = {bcast, stop};
  int chief = mpi_rank() == 0;
  hk_loop_options o;
  hk_loop *loop = NULL;
  assert_int_equal(hk_loop_options_init(&o, HK_LOOP_OPTIONS_VERSION), HK_OK);
  o.env = env;
  o.hooks = hooks;
  o.nhooks = 2;
  o.handle_signals = 0;
  o.checkpoint_dir = chief ? dir : NULL;
  o.last_step = chief ? last_step : HK_UNSET_STEPS;
  assert_ok(hk_loop_new(&loop, &o, &st), &st);
  float w[2] = {1, 2};
  int64_t two[1] = {2};
  assert_ok(hk_loop_add_array(loop, "w", HK_DTYPE_F32, 1, two, w, 0, &st), &st);
  assert_ok(hk_loop_start(loop, step, &st), &st);
  /* Every rank decided alike (a disagreement fails here instead of hanging
   * the first step's collective). */
  int64_t stops[64];
  mpi_allgather_i64(hk_loop_should_stop(loop), stops);
  for (int r = 0; r < mpi_size(); r++)
    if (stops[r] != stops[0])
      fail_msg("after the start rank %d should stop: %lld, rank 0: %lld", r, (long long)stops[r], (long long)stops[0]);
  *steps = 0;
  while (!hk_loop_should_stop(loop) && *steps < 50) {
    assert_ok(hk_loop_step_begin(loop, step, &st), &st);
    w[0] += 1;
    assert_ok(hk_loop_step_end(loop, &st), &st);
    ++*steps;
  }
  assert_ok(hk_loop_finish(loop, &st), &st);
  *step = hk_loop_global_step(loop);
  hk_loop_free(loop);
  hk_hook_free(stop);
  hk_hook_free(bcast);
}

static void test_host_loop_restarted_at_the_chiefs_last_step_stops_every_rank_before_any_step(void) {
  hk_env env;
  test_env *te = mpi_test_env(&env);
  hk_mpi *mpi = mpi_test_context(&env);
  char *dir = mpi_rank() == 0 ? test_tmpdir_new("mpi-stop-restart") : NULL;
  int64_t step = -1, all[64];
  int steps = -1;
  run_program(mpi, &env, dir, 4, &step, &steps); /* the first job: 4 steps, the chief saves step 4 */
  mpi_allgather_i64(step, all);
  for (int r = 0; r < mpi_size(); r++) assert_int_equal(all[r], 4);
  assert_int_equal(steps, 4);
  run_program(mpi, &env, dir, 4, &step, &steps); /* the relaunch: the chief restores step 4 */
  assert_int_equal(steps, 0);
  mpi_allgather_i64(step, all);
  for (int r = 0; r < mpi_size(); r++) assert_int_equal(all[r], 4);
  assert_logged(te, HK_LOG_INFO, "Rank 0 asked to stop; every rank stops before its next step.");
  if (dir) {
    assert_int_equal(test_tmpdir_remove(dir), 0);
    test_tmpdir_free(dir);
  }
  hk_mpi_free(mpi);
  assert_int_equal(test_env_release(te), 0);
}

/* ---- cost and errors ------------------------------------------------------------------ */

/* H51: one MPI_Allreduce per step and one at each session creation, no other
 * collective; H7: no allocation. */
static void test_the_agreement_costs_one_allreduce_per_step_and_nothing_else(void) {
  trainer t;
  hk_status st = HK_STATUS_INIT;
  trainer_init(&t, 1);
  g_allreduce = g_other_collectives = 0;
  g_counting = 1;
  assert_ok(trainer_open(&t, &st), &st);
  g_counting = 0;
  /* At creation: the start-time agreement, one more MPI_Allreduce. */
  assert_int_equal(g_allreduce, 1);
  assert_int_equal(g_other_collectives, 0);
  for (int i = 0; i < 2; i++) assert_ok(trainer_step(&t, &st), &st);
  test_alloc_reset_counts(&t.te->alloc);
  g_allreduce = g_other_collectives = 0;
  g_counting = 1;
  for (int i = 0; i < 25; i++) assert_ok(trainer_step(&t, &st), &st);
  g_counting = 0;
  assert_int_equal(g_allreduce, 25);
  assert_int_equal(g_other_collectives, 0);
  /* The hook allocates at creation only: steady-state steps allocate nothing (H7). */
  assert_int_equal(test_alloc_count(&t.te->alloc), 0);
  assert_ok(hk_session_close(t.s, HK_OK, &st), &st);
  trainer_free(&t);
}

static void test_stop_hook_new_rejects_bad_arguments(void) {
  hk_mpi *mpi = mpi_test_context(NULL);
  hk_status st = HK_STATUS_INIT;
  hk_hook *h = (hk_hook *)&st;
  hk_mpi_stop_options o = HK_MPI_STOP_OPTIONS_INIT;
  assert_status(hk_mpi_stop_hook_new(&h, NULL, NULL, &st), &st, HK_INVALID_ARGUMENT, "mpi");
  assert_null(h);
  assert_status(hk_mpi_stop_hook_new(NULL, mpi, NULL, &st), &st, HK_INVALID_ARGUMENT, "out");
  o.version = 5;
  assert_status(hk_mpi_stop_hook_new(&h, mpi, &o, &st), &st, HK_INVALID_ARGUMENT, "version 5");
  hk_env bad = HK_ENV_INIT;
  bad.version = 42;
  o.version = HK_MPI_STOP_OPTIONS_VERSION;
  o.env = &bad;
  assert_status(hk_mpi_stop_hook_new(&h, mpi, &o, &st), &st, HK_INVALID_ARGUMENT, "env");
  assert_null(h);
  o.env = NULL;
  o.stop_signals = HK_SIGNAL_USR1 | (1u << 7);
  assert_status(hk_mpi_stop_hook_new(&h, mpi, &o, &st), &st, HK_INVALID_ARGUMENT, "bits 0x80");
  assert_null(h);
  o.stop_signals = HK_SIGNAL_USR1;
  o.handle_signals = 0;
  assert_status(hk_mpi_stop_hook_new(&h, mpi, &o, &st), &st, HK_INVALID_ARGUMENT, "handle_signals is 0");
  assert_null(h);
  hk_mpi_free(mpi);
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      MPI_CASE(test_stop_at_step_on_rank_1_only_stops_every_rank_after_step_5),
      MPI_CASE(test_a_custom_hooks_stop_request_on_the_last_rank_stops_every_rank),
      MPI_CASE(test_a_stop_at_creation_on_the_last_rank_stops_every_rank_before_any_step),
      MPI_CASE(test_stop_hook_request_on_the_last_rank_stops_every_rank_after_the_next_step),
      MPI_CASE(test_stop_hook_request_from_another_thread_stops_every_rank_together),
      MPI_CASE(test_sigterm_on_one_rank_stops_every_rank_after_the_same_step),
      MPI_CASE(test_sigusr1_in_stop_signals_on_one_rank_stops_every_rank_after_the_same_step),
      MPI_CASE(test_stop_signals_replace_the_default_set),
      MPI_CASE(test_sigterm_during_start_up_on_one_rank_stops_every_rank_before_any_step),
      MPI_CASE(test_a_later_session_does_not_inherit_an_old_signal),
      MPI_CASE(test_hookeds_signal_helper_installed_makes_begin_fail_naming_it),
      MPI_CASE(test_a_second_stop_hook_handling_signals_in_the_process_fails_begin),
      MPI_CASE(test_host_loop_with_handle_signals_fails_the_first_step_end),
      MPI_CASE(test_host_loop_last_step_on_one_rank_stops_every_rank),
      MPI_CASE(test_host_loop_restarted_at_the_chiefs_last_step_stops_every_rank_before_any_step),
      MPI_CASE(test_the_agreement_costs_one_allreduce_per_step_and_nothing_else),
      MPI_CASE(test_stop_hook_new_rejects_bad_arguments),
  };
  return mpi_test_main(argc, argv, "mpi_stop", tests, sizeof tests / sizeof tests[0], 2);
}
