/*
 * hooked::mpi — the asynchronous parameter server (H52–H56), with a chief
 * and 2 or 3 workers.
 *
 * The model: a global step and w, f32[4], initialized to 1 by the chief.
 * The chief is a MonitoredTrainingSession whose train op is
 * hk_mpi_ps_serve_op() and whose chief-only hook is the chief hook; each
 * worker k is a worker session (is_chief 0) with the scaffold fields of
 * hk_mpi_ps_worker_ready_ops(), the shared-step executor and the worker
 * hook first, whose train op adds 0.25 to element (k - 1) % 3 of w: every
 * update is exact in f32, and the chief's w tells how many updates of each
 * worker it applied. Element 3 is never trained.
 *
 * Checked: the chief's w is the initial value plus each worker's applied
 * updates times 0.25, exactly, at every step (one update per global step,
 * applied whole) and in every checkpoint it wrote (a consistent copy at one
 * global step); the global step is the number of updates; the chief's
 * hk_mpi_ps_updates() is the sum of the workers'; a worker with
 * GlobalStepWaiterHook(wait_until_step 20) pushes first once the shared step
 * reached 20; the chief's StopAtStep ends every worker and every session
 * closes cleanly; workers wait, without failing, for a chief that starts
 * late; a worker's own StopAtStep (on the shared step) stops the chief and so
 * every worker; a worker whose model differs is refused.
 *
 * Nothing here depends on how the ranks are scheduled: where a test needs
 * one rank to have done something before another goes on (a worker to have
 * found the chief not serving yet, the waiting worker to have pushed), the
 * other waits for a message saying so, on a communicator of the test's own
 * (gates below); a rank that is slow only makes the job slower.
 */
#include "mpi_test.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hooked/checkpoint.h"
#include "mpi/ps.h" /* hk__mpi_ps_set_chunk_bytes(): the sources are compiled in */

/* MPI's profiling interface: sends of at most SMALL_PIECE bytes, the pieces
 * of a message split by a forced small chunk size. */
#define SMALL_PIECE 5
static int g_small_sends;
int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
              MPI_Request *request) {
  if (datatype == MPI_BYTE && count <= SMALL_PIECE) g_small_sends++;
  return PMPI_Isend(buf, count, datatype, dest, tag, comm, request);
}
#include "hooked/coordinator.h"
#include "hooked/graph.h"
#include "hooked/hooks.h"
#include "hooked/training_session.h"
#include "tmpdir.h"

#include "../../src/ckpt/snapshot.h"

#define DELTA 0.25f

/* ---- a hook that records what the test checks ------------------------------------ */

/* ---- gates between ranks ------------------------------------------------------------ */

/* Test-only messages on a duplicate of MPI_COMM_WORLD, so they never meet the
 * parameter server's. gate_comm_open/close are collective. */
static MPI_Comm g_gate = MPI_COMM_NULL;

static void gate_comm_open(void) { assert_int_equal(MPI_Comm_dup(MPI_COMM_WORLD, &g_gate), MPI_SUCCESS); }
static void gate_comm_close(void) { assert_int_equal(MPI_Comm_free(&g_gate), MPI_SUCCESS); }
static void gate_send(int to) {
  int one = 1;
  assert_int_equal(MPI_Send(&one, 1, MPI_INT, to, 0, g_gate), MPI_SUCCESS);
}
static void gate_recv(int from) {
  int v = 0;
  assert_int_equal(MPI_Recv(&v, 1, MPI_INT, from, 0, g_gate, MPI_STATUS_IGNORE), MPI_SUCCESS);
}

/* The chief's progress, for a thread of its own that waits for it. */
typedef struct progress {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int64_t gs;
  int64_t stop_at; /* the waiting thread requests a stop once gs reaches it */
  hk_coordinator *coord;
} progress;

typedef struct record {
  size_t gs_index, w_index;
  int chief;
  double sleep_secs; /* before each run: slows a worker down */
  int runs;
  int64_t first_gs; /* the global step after the first run's push (-1: none) */
  int64_t last_gs;  /* after the last run */
  int64_t final_gs; /* at end() */
  float final_w[4];
  int inconsistent_steps; /* chief: steps whose w does not add up to the global step */
  int ended;
  int64_t hold_from; /* > 0: before a run once last_gs >= hold_from, wait for hold_rank's gate message */
  int hold_rank;
  int held;               /* that message was received */
  int notify_after_first; /* after the first run, send a gate message to every worker but itself */
  int64_t notify_at;      /* > 0: after the run that ends at this global step, a gate message to notify_rank */
  int notify_rank;
  progress *progress; /* the chief's, when a thread waits for it */
} record;

static void read_state(hk_raw_session *rs, const record *r, int64_t *gs, float w[4]) {
  hk_tensor t;
  hk_status st = HK_STATUS_INIT;
  assert_ok(hk_raw_session_variable_storage(&t, rs, r->gs_index, &st), &st);
  memcpy(gs, t.data, sizeof *gs);
  assert_ok(hk_raw_session_variable_storage(&t, rs, r->w_index, &st), &st);
  memcpy(w, t.data, 4 * sizeof(float));
}

/* The number of updates w holds: (w[e] - 1) / DELTA summed, exact. */
static int64_t updates_in(const float w[4]) {
  int64_t n = 0;
  for (int e = 0; e < 4; e++) n += (int64_t)((w[e] - 1.0f) / DELTA);
  return n;
}

static hk_code rec_before_run(void *user, hk_run_context *ctx, hk_run_request *req, hk_status *st) {
  record *r = user;
  (void)ctx, (void)req, (void)st;
  if (r->hold_from > 0 && !r->held && r->last_gs >= r->hold_from) {
    gate_recv(r->hold_rank);
    r->held = 1;
  }
  if (r->sleep_secs > 0) {
    struct timespec ts = {0, (long)(r->sleep_secs * 1e9)};
    nanosleep(&ts, NULL);
  }
  return HK_OK;
}

static hk_code rec_after_run(void *user, hk_run_context *ctx, const hk_run_values *values, hk_status *st) {
  record *r = user;
  int64_t gs;
  float w[4];
  (void)values, (void)st;
  read_state(hk_run_context_session(ctx), r, &gs, w);
  if (r->runs++ == 0) {
    r->first_gs = gs;
    if (r->notify_after_first)
      for (int k = 1; k < mpi_size(); k++)
        if (k != mpi_rank()) gate_send(k);
  }
  r->last_gs = gs;
  if (r->notify_at > 0 && gs == r->notify_at) gate_send(r->notify_rank);
  if (r->chief && (updates_in(w) != gs || w[3] != 1.0f)) r->inconsistent_steps++;
  if (r->progress) {
    pthread_mutex_lock(&r->progress->mu);
    r->progress->gs = gs;
    pthread_cond_broadcast(&r->progress->cv);
    pthread_mutex_unlock(&r->progress->mu);
  }
  return HK_OK;
}

static hk_code rec_end(void *user, hk_raw_session *rs, hk_status *st) {
  record *r = user;
  (void)st;
  read_state(rs, r, &r->final_gs, r->final_w);
  r->ended = 1;
  return HK_OK;
}

static const hk_hook_vtable record_vtable = {
    .version = HK_HOOK_VTABLE_VERSION,
    .before_run = rec_before_run,
    .after_run = rec_after_run,
    .end = rec_end,
};

/* ---- one rank: the chief or a worker ------------------------------------------------- */

typedef struct ps_rank {
  test_env *te;
  hk_env env; /* counting allocator, log capture, system clock */
  hk_mpi *mpi;
  hk_mpi_ps *ps;
  int chief;
  hk_graph *g;
  hk_handle gs, w, train;
  hk_executor *wex; /* worker: the shared-step executor */
  hk_scaffold *scaffold;
  hk_hook *role; /* the chief hook or the worker hook */
  hk_hook *stop_at, *waiter, *rec_hook;
  record rec;
  hk_hook *hooks[4];
  size_t nhooks;
  hk_session *s;
  char *ckdir;
} ps_rank;

/* Build this rank's model; `w_len` other than 4 gives another model. */
static void ps_build(ps_rank *p, int w_len) {
  hk_status st = HK_STATUS_INIT;
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  go.env = &p->env;
  assert_ok(hk_graph_new(&p->g, &go, &st), &st);
  assert_ok(hk_graph_get_or_create_global_step(p->g, &p->gs, &st), &st);
  hk_variable_def def = HK_VARIABLE_DEF_INIT;
  int64_t dims[1] = {w_len};
  def.name = "w";
  def.dtype = HK_DTYPE_F32;
  def.rank = 1;
  def.dims = dims;
  def.init.kind = HK_INIT_CONSTANT;
  def.init.value = 1.0;
  assert_ok(hk_graph_variable(p->g, &p->w, &def, &st), &st);
  hk_executor *ex = hk_graph_executor(p->g);
  hk_variable_info info;
  assert_ok(hk_executor_global_step(&info, &p->rec.gs_index, ex, &st), &st);
  assert_ok(hk_executor_find_variable(ex, "w", &p->rec.w_index, &st), &st);
  assert_ok(hk_mpi_ps_new(&p->ps, p->mpi, &st), &st);
  hk_scaffold_options so;
  assert_int_equal(hk_scaffold_options_init(&so, HK_SCAFFOLD_OPTIONS_VERSION), HK_OK);
  so.env = &p->env;
  if (p->chief) {
    assert_ok(hk_mpi_ps_serve_op(&p->train, p->ps, p->g, "serve", &st), &st);
    assert_ok(hk_mpi_ps_chief_hook_new(&p->role, p->ps, &st), &st);
  } else {
    float delta[8] = {0, 0, 0, 0, 0, 0, 0, 0}; /* room for another model's w (w_len up to 8) */
    assert_true(w_len <= 8);
    if (w_len == 4) delta[(mpi_rank() - 1) % 3] = DELTA;
    hk_tensor dt;
    hk_handle d;
    assert_ok(hk_tensor_init(&dt, HK_DTYPE_F32, 1, dims, delta, &st), &st);
    assert_ok(hk_graph_constant(p->g, &d, "delta", &dt, &st), &st);
    assert_ok(hk_graph_assign_add(p->g, &p->train, "train", p->w, d, &st), &st);
    assert_ok(
        hk_mpi_ps_worker_ready_ops(p->ps, p->g, &so.ready_op, &so.ready_for_local_init_op, &so.local_init_op, &st),
        &st);
    assert_ok(hk_mpi_ps_worker_executor_new(&p->wex, p->ps, ex, &st), &st);
    assert_ok(hk_mpi_ps_worker_hook_new(&p->role, p->ps, &st), &st);
  }
  assert_ok(hk_scaffold_new(&p->scaffold, &so, &st), &st);
  p->rec.chief = p->chief;
  p->rec.first_gs = -1;
  assert_ok(hk_hook_new(&p->rec_hook, &record_vtable, &p->rec, "Recorder", &p->env, &st), &st);
}

static void ps_init(ps_rank *p) {
  memset(p, 0, sizeof *p);
  p->te = mpi_test_env(&p->env);
  p->mpi = mpi_test_context(&p->env);
  p->chief = hk_mpi_is_chief(p->mpi);
  ps_build(p, 4);
}

static void ps_stop_at(ps_rank *p, int64_t last_step) {
  hk_status st = HK_STATUS_INIT;
  hk_stop_at_step_options o = HK_STOP_AT_STEP_OPTIONS_INIT;
  o.last_step = last_step;
  assert_ok(hk_stop_at_step_hook_new(&p->stop_at, &o, &st), &st);
}

static void ps_wait_for(ps_rank *p, int64_t step) {
  hk_status st = HK_STATUS_INIT;
  hk_global_step_waiter_options o = HK_GLOBAL_STEP_WAITER_OPTIONS_INIT;
  o.wait_until_step = step;
  o.poll_interval_secs = 0.02;
  assert_ok(hk_global_step_waiter_hook_new(&p->waiter, &o, &st), &st);
}

/* The session of this rank's role. */
static hk_code ps_open(ps_rank *p, hk_status *st) {
  hk_training_session_options o;
  assert_int_equal(hk_training_session_options_init(&o, HK_TRAINING_SESSION_OPTIONS_VERSION), HK_OK);
  o.env = &p->env;
  o.is_chief = p->chief;
  o.scaffold = p->scaffold;
  o.recovery_wait_secs = 0.1;
  o.max_wait_secs = 60;
  p->nhooks = 0;
  if (p->chief) {
    o.executor = hk_graph_executor(p->g);
    o.chief_only_hooks = &p->role;
    o.nchief_only_hooks = 1;
    if (p->ckdir) {
      o.checkpoint_dir = p->ckdir;
      o.save_checkpoint_steps = 5;
    }
  } else {
    o.executor = p->wex;
    p->hooks[p->nhooks++] = p->role; /* first */
  }
  if (p->stop_at) p->hooks[p->nhooks++] = p->stop_at;
  if (p->waiter) p->hooks[p->nhooks++] = p->waiter;
  p->hooks[p->nhooks++] = p->rec_hook;
  o.hooks = p->hooks;
  o.nhooks = p->nhooks;
  return hk_training_session_new(&p->s, &o, st);
}

/* Train until the session stops; close with how the loop ended. A serve op
 * whose workers all left ends the chief's loop with OUT_OF_RANGE; a worker
 * waiting for a step when the job stops ends with CANCELLED. Both are clean. */
static hk_code ps_train(ps_rank *p, hk_status *st) {
  hk_run_args args;
  hk_status run_st = HK_STATUS_INIT;
  memset(&args, 0, sizeof args);
  args.targets = &p->train;
  args.ntargets = 1;
  hk_code rc = HK_OK;
  while (!hk_session_should_stop(p->s)) {
    rc = hk_session_run(p->s, &args, NULL, NULL, &run_st);
    if (rc != HK_OK) break;
  }
  if (rc != HK_OK && rc != HK_OUT_OF_RANGE && rc != HK_CANCELLED) {
    *st = run_st;
    return rc;
  }
  return hk_session_close(p->s, rc, st);
}

static void ps_free_model(ps_rank *p) {
  hk_session_free(p->s);
  p->s = NULL;
  hk_scaffold_free(p->scaffold);
  hk_hook_free(p->role);
  hk_hook_free(p->stop_at);
  hk_hook_free(p->waiter);
  hk_hook_free(p->rec_hook);
  hk_executor_free(p->wex);
  hk_graph_free(p->g);
  hk_mpi_ps_free(p->ps);
  p->scaffold = NULL;
  p->role = p->stop_at = p->waiter = p->rec_hook = NULL;
  p->wex = NULL;
  p->g = NULL;
  p->ps = NULL;
}

static void ps_free(ps_rank *p) {
  ps_free_model(p);
  hk_mpi_free(p->mpi);
  test_tmpdir_free(p->ckdir);
  assert_int_equal(test_env_release(p->te), 0);
}

/* Every rank's hk_mpi_ps_updates() (the chief's at 0): the chief applied as
 * many as the workers counted, and w holds exactly those. */
static void check_counts(ps_rank *p, int64_t *counts) {
  mpi_allgather_i64(hk_mpi_ps_updates(p->ps), counts);
  if (!p->chief) return;
  int64_t sum = 0;
  for (int r = 1; r < mpi_size(); r++) sum += counts[r];
  if (counts[0] != sum)
    fail_msg("the chief applied %lld updates, the workers counted %lld", (long long)counts[0], (long long)sum);
  assert_int_equal(p->rec.final_gs, counts[0]);
  float want[4] = {1, 1, 1, 1};
  for (int r = 1; r < mpi_size(); r++) want[(r - 1) % 3] += DELTA * (float)counts[r];
  for (int e = 0; e < 4; e++)
    if (p->rec.final_w[e] != want[e])
      fail_msg("w[%d] is %.9g, the updates the workers counted make %.9g", e, (double)p->rec.final_w[e],
               (double)want[e]);
  assert_int_equal(p->rec.inconsistent_steps, 0);
}

/* Every checkpoint of dir holds w with exactly as many updates as its step. */
static void check_checkpoints(ps_rank *p, int64_t last) {
  DIR *d = opendir(p->ckdir);
  struct dirent *e;
  int n = 0, saw_last = 0;
  hk_status st = HK_STATUS_INIT;
  assert_non_null(d);
  while ((e = readdir(d)) != NULL) {
    const char *dot = strstr(e->d_name, ".safetensors");
    if (!dot || dot[strlen(".safetensors")] != '\0') continue;
    char *path = test_path(p->ckdir, e->d_name);
    hk_checkpoint_reader *r = NULL;
    assert_ok(hk_checkpoint_reader_open(&r, &p->env, path, &st), &st);
    assert_ok(hk_checkpoint_reader_verify(r, &st), &st);
    int64_t step = hk_checkpoint_reader_step(r), gs = -1;
    float w[4];
    size_t i;
    assert_ok(hk_checkpoint_reader_find(r, "w", &i, &st), &st);
    assert_ok(hk_checkpoint_reader_read(r, i, w, sizeof w, &st), &st);
    assert_ok(hk_checkpoint_reader_find(r, "global_step", &i, &st), &st);
    assert_ok(hk_checkpoint_reader_read(r, i, &gs, sizeof gs, &st), &st);
    if (gs != step || updates_in(w) != step || w[3] != 1.0f)
      fail_msg("%s: step %lld, global_step %lld, w holds %lld updates", path, (long long)step, (long long)gs,
               (long long)updates_in(w));
    saw_last |= step == last;
    hk_checkpoint_reader_free(r);
    free(path);
    n++;
  }
  closedir(d);
  assert_true(n >= 2);
  assert_true(saw_last); /* the final checkpoint: the state at the chief's last step */
}

/* ---- the tests ---------------------------------------------------------------------- */

/* The chief stops at step 60; the last worker starts once the shared step
 * reached 20; the others push, slowed to 10 ms a step, and once they have
 * seen step 30 wait until the waiter has pushed: so the waiter always pushes
 * before the job ends, however the ranks are scheduled. */
static void test_updates_reach_the_chief_whole_and_its_stop_at_step_ends_every_worker(void) {
  ps_rank p;
  hk_status st = HK_STATUS_INIT;
  const int64_t last = 60;
  ps_init(&p);
  gate_comm_open();
  int waiter_rank = mpi_size() - 1, waiter = mpi_rank() == waiter_rank;
  if (p.chief) {
    p.ckdir = test_tmpdir_new("mpi-ps");
    ps_stop_at(&p, last);
  } else if (waiter) {
    ps_wait_for(&p, 20);
    p.rec.notify_after_first = 1;
  } else {
    ps_stop_at(&p, 1000000); /* never: the chief's stop ends it */
    p.rec.sleep_secs = 0.01;
    p.rec.hold_from = 30;
    p.rec.hold_rank = waiter_rank;
  }
  hk_code rc = ps_open(&p, &st);
  if (rc != HK_OK) test_log_dump(&p.te->log);
  assert_ok(rc, &st);
  rc = ps_train(&p, &st);
  if (rc != HK_OK) test_log_dump(&p.te->log);
  assert_ok(rc, &st);
  assert_true(p.rec.ended);
  int64_t counts[64];
  check_counts(&p, counts);
  if (p.chief) {
    assert_int_equal(p.rec.final_gs, last);
    assert_int_equal(hk_mpi_ps_updates(p.ps), last);
    assert_logged(p.te, HK_LOG_INFO, "Every worker has left.");
    check_checkpoints(&p, last);
  } else {
    /* Every worker learned the final step. */
    assert_int_equal(p.rec.final_gs, last);
  }
  if (waiter) {
    /* It pushed (the others waited for it at step 30), only after step 20. */
    assert_true(hk_mpi_ps_updates(p.ps) > 0);
    assert_logged(p.te, HK_LOG_INFO, "Waiting for global step 20 before starting training.");
    if (p.rec.first_gs < 21)
      fail_msg("the waiting worker's first push was answered at global step %lld", (long long)p.rec.first_gs);
  } else if (!p.chief && !p.rec.held) {
    gate_recv(waiter_rank); /* its message came after this worker's last hold check */
  }
  gate_comm_close();
  ps_free(&p);
}

/* A worker's log sink that, besides capturing, tells the chief once the
 * worker's session found the model not yet served. */
typedef struct late_sink {
  test_log *log;
  int told;
} late_sink;

static void late_sink_log(void *user, hk_log_level level, const char *msg) {
  late_sink *k = user;
  test_log_sink(k->log, level, msg);
  if (!k->told && strstr(msg, "not yet served by the chief")) {
    k->told = 1;
    gate_send(0);
  }
}

/* The chief creates its session only once every worker's session has found
 * the model not yet served (the ready check): the workers' sessions wait,
 * without failing, and start once the chief serves. */
static void test_workers_wait_for_a_chief_that_starts_late(void) {
  ps_rank p;
  hk_status st = HK_STATUS_INIT;
  late_sink sink = {NULL, 0};
  ps_init(&p);
  gate_comm_open();
  if (p.chief) {
    ps_stop_at(&p, 6);
    for (int r = 1; r < mpi_size(); r++) gate_recv(r);
  } else {
    sink.log = &p.te->log;
    p.env.log = late_sink_log;
    p.env.log_user = &sink;
  }
  hk_code rc = ps_open(&p, &st);
  if (rc != HK_OK) test_log_dump(&p.te->log);
  assert_ok(rc, &st);
  if (!p.chief) {
    assert_int_equal(sink.told, 1); /* it waited: the chief started after this */
    assert_logged(p.te, HK_LOG_INFO, "not yet served by the chief");
  }
  assert_ok(ps_train(&p, &st), &st);
  int64_t counts[64];
  check_counts(&p, counts);
  if (p.chief) assert_int_equal(p.rec.final_gs, 6);
  gate_comm_close();
  ps_free(&p);
}

/* Worker 1's own StopAtStep on the shared step stops the chief and so every
 * worker; the counts still add up. */
static void test_a_workers_stop_at_step_stops_the_chief_and_every_worker(void) {
  ps_rank p;
  hk_status st = HK_STATUS_INIT;
  ps_init(&p);
  if (p.chief)
    ps_stop_at(&p, 100000); /* a bound, not the reason to stop */
  else
    ps_stop_at(&p, mpi_rank() == 1 ? 10 : 1000000);
  assert_ok(ps_open(&p, &st), &st);
  hk_code rc = ps_train(&p, &st);
  if (rc != HK_OK) test_log_dump(&p.te->log);
  assert_ok(rc, &st);
  int64_t counts[64];
  check_counts(&p, counts);
  if (p.chief) {
    /* Stopped by the worker. Whether the other workers had left before the
     * chief's end() (nothing to wait for, nothing logged) or it told them
     * to stop there is scheduling: either way every rank closed cleanly. */
    assert_true(p.rec.final_gs >= 10);
    assert_true(p.rec.final_gs < 100000);
  }
  ps_free(&p);
}

/* Every message split into pieces of at most 5 bytes (the chunk size forced
 * small, as messages above 1 GiB are split): the updates reach the chief
 * whole and exact, the same w as unsplit messages make (every check of
 * check_counts()), and pieces were sent. */
static void test_messages_split_into_small_pieces_carry_the_same_exact_updates(void) {
  ps_rank p;
  hk_status st = HK_STATUS_INIT;
  ps_init(&p);
  hk__mpi_ps_set_chunk_bytes(p.ps, SMALL_PIECE);
  ps_stop_at(&p, p.chief ? 40 : 1000000);
  g_small_sends = 0;
  assert_ok(ps_open(&p, &st), &st);
  hk_code rc = ps_train(&p, &st);
  if (rc != HK_OK) test_log_dump(&p.te->log);
  assert_ok(rc, &st);
  int64_t counts[64];
  check_counts(&p, counts);
  if (p.chief) assert_int_equal(p.rec.final_gs, 40);
  /* The chief's replies and every worker's pushes went in pieces. */
  assert_true(g_small_sends > 0);
  ps_free(&p);
}

/* Worker 1 with another model (w of 5 elements): its session is refused
 * with FAILED_PRECONDITION naming it. */
static void expect_refused(ps_rank *p) {
  hk_status st = HK_STATUS_INIT;
  ps_build(p, 5);
  assert_status(ps_open(p, &st), &st, HK_FAILED_PRECONDITION, "rank 1's shared variables");
  assert_null(p->s);
  ps_free_model(p);
}

/* H53: worker 1 builds another model, twice: while the chief serves (the
 * other workers wait at step 4 until it was refused) and while the chief
 * stops (after its last step, 8, it tells worker 1 to try). Both sessions
 * are refused. It then builds the right model on a new endpoint and joins a
 * job that is stopping: its session stops before its first step. */
static void test_a_worker_with_another_model_is_refused(void) {
  ps_rank p;
  hk_status st = HK_STATUS_INIT;
  memset(&p, 0, sizeof p);
  p.te = mpi_test_env(&p.env);
  p.mpi = mpi_test_context(&p.env);
  p.chief = hk_mpi_is_chief(p.mpi);
  gate_comm_open();
  if (mpi_rank() == 1) {
    expect_refused(&p); /* by the serve op */
    for (int k = 2; k < mpi_size(); k++) gate_send(k);
    gate_recv(0);       /* the chief passed its last step */
    expect_refused(&p); /* by the chief's end() */
  }
  ps_build(&p, 4);
  if (p.chief) {
    ps_stop_at(&p, 8);
    p.rec.notify_at = 8;
    p.rec.notify_rank = 1;
  } else if (mpi_rank() > 1) {
    p.rec.hold_from = 4;
    p.rec.hold_rank = 1;
  }
  assert_ok(ps_open(&p, &st), &st);
  assert_ok(ps_train(&p, &st), &st);
  if (mpi_rank() > 1 && !p.rec.held) gate_recv(1);
  int64_t counts[64];
  check_counts(&p, counts);
  if (mpi_rank() == 1) assert_int_equal(hk_mpi_ps_updates(p.ps), 0);
  gate_comm_close();
  ps_free(&p);
}

/* H54: the last worker waits for a step the job never reaches; when the
 * chief stops, its "stop" answer to the waiter's step read stops the
 * worker's coordinator, which ends the wait (CANCELLED, clean). */
static void test_a_worker_waiting_for_a_step_is_released_when_the_chief_stops(void) {
  ps_rank p;
  hk_status st = HK_STATUS_INIT;
  ps_init(&p);
  int waiter = mpi_rank() == mpi_size() - 1;
  if (p.chief)
    ps_stop_at(&p, 10);
  else if (waiter)
    ps_wait_for(&p, 1000);
  else
    ps_stop_at(&p, 1000000);
  assert_ok(ps_open(&p, &st), &st);
  assert_ok(ps_train(&p, &st), &st);
  int64_t counts[64];
  check_counts(&p, counts);
  if (waiter) {
    assert_int_equal(hk_mpi_ps_updates(p.ps), 0);
    assert_int_equal(p.rec.runs, 0);
  }
  if (p.chief) assert_int_equal(p.rec.final_gs, 10);
  ps_free(&p);
}

/* Requests a stop on the chief's coordinator once it applied stop_at updates. */
static void *stop_chief_at(void *arg) {
  progress *pr = arg;
  pthread_mutex_lock(&pr->mu);
  while (pr->gs < pr->stop_at) pthread_cond_wait(&pr->cv, &pr->mu);
  pthread_mutex_unlock(&pr->mu);
  hk_coordinator_request_stop(pr->coord, HK_OK, NULL);
  return NULL;
}

/* H52: a stop requested on the chief's coordinator (from another thread,
 * once 5 updates were applied, while the serve op waits for more) ends the
 * serve op's run with CANCELLED, a clean end: the chief's hook stops every
 * worker and its final checkpoint is written. */
static void test_a_stop_on_the_chiefs_coordinator_ends_the_service_cleanly(void) {
  ps_rank p;
  hk_status st = HK_STATUS_INIT;
  pthread_t th;
  progress pr;
  memset(&pr, 0, sizeof pr);
  pthread_mutex_init(&pr.mu, NULL);
  pthread_cond_init(&pr.cv, NULL);
  pr.stop_at = 5;
  ps_init(&p);
  if (p.chief) {
    p.ckdir = test_tmpdir_new("mpi-ps-stop");
    p.rec.progress = &pr;
  } else {
    ps_stop_at(&p, 1000000);
    p.rec.sleep_secs = 0.002;
  }
  assert_ok(ps_open(&p, &st), &st);
  if (p.chief) {
    pr.coord = hk_session_coordinator(p.s);
    assert_int_equal(pthread_create(&th, NULL, stop_chief_at, &pr), 0);
  }
  assert_ok(ps_train(&p, &st), &st);
  if (p.chief) pthread_join(th, NULL);
  pthread_cond_destroy(&pr.cv);
  pthread_mutex_destroy(&pr.mu);
  int64_t counts[64];
  check_counts(&p, counts);
  if (p.chief) {
    assert_true(p.rec.final_gs >= 5);
    assert_logged(p.te, HK_LOG_INFO, "Every worker has left.");
    check_checkpoints(&p, p.rec.final_gs);
  }
  ps_free(&p);
}

/* H61: the worker executor wraps the worker's graph executor and hands it
 * the inner raw session it opened: a snapshot attached through it reaches
 * the graph's own session, so the train op that writes w copies it first
 * (no writer thread runs: only that barrier can copy), and a raw session of
 * the inner executor, not one of the wrapper's, is refused. */
static void test_the_worker_executor_hands_the_inner_executor_its_raw_session(void) {
  ps_rank p;
  hk_status st = HK_STATUS_INIT;
  ps_init(&p);
  if (!p.chief) {
    hk_raw_session *rs = NULL, *inner = NULL;
    hk_snapshot *snap = NULL;
    hk_control_snapshot a = HK_CONTROL_SNAPSHOT_INIT;
    hk_tensor view, ones;
    float one[4] = {1, 1, 1, 1}, copy[4] = {0, 0, 0, 0};
    int64_t dims[1] = {4};
    hk_run_args args;
    assert_ok(hk_raw_session_open(&rs, p.wex, &st), &st);
    assert_ok(hk_tensor_init(&ones, HK_DTYPE_F32, 1, dims, one, &st), &st);
    assert_ok(hk_raw_session_assign_variable(rs, p.rec.w_index, &ones, &st), &st);
    assert_ok(hk_raw_session_read_variable(&view, rs, p.rec.w_index, &st), &st);
    assert_ok(hk__snapshot_new(&snap, &p.env, &st), &st);
    assert_ok(hk__snapshot_reset(snap, 1, hk_executor_variable_count(p.wex), &st), &st);
    hk__snapshot_add(snap, p.rec.w_index, view.data, copy, sizeof copy);
    hk__snapshot_arm(snap);
    a.snapshot = snap;
    /* Not one of the wrapper's raw sessions. */
    assert_ok(hk_raw_session_open(&inner, hk_graph_executor(p.g), &st), &st);
    a.session = inner;
    assert_status(hk_executor_control(p.wex, HK_CONTROL_SNAPSHOT_ATTACH, &a, &st), &st, HK_INVALID_ARGUMENT,
                  "executor 'parameter-server worker': HK_CONTROL_SNAPSHOT_ATTACH");
    /* Its own. */
    a.session = rs;
    assert_ok(hk_executor_control(p.wex, HK_CONTROL_SNAPSHOT_ATTACH, &a, &st), &st);
    memset(&args, 0, sizeof args);
    args.targets = &p.train;
    args.ntargets = 1;
    assert_ok(hk_raw_session_run(rs, &args, NULL, NULL, &st), &st);
    assert_int_equal(hk__snapshot_copied_here(snap), 1);
    for (int e = 0; e < 4; e++) assert_true(copy[e] == 1.0f);
    assert_ok(hk_raw_session_read_variable(&view, rs, p.rec.w_index, &st), &st); /* the run wrote w */
    assert_true(((const float *)view.data)[(mpi_rank() - 1) % 3] == 1.0f + DELTA);
    assert_ok(hk_executor_control(p.wex, HK_CONTROL_SNAPSHOT_DETACH, &a, &st), &st);
    hk_raw_session_free(inner);
    hk_raw_session_free(rs);
    hk__snapshot_free(snap);
  }
  ps_free(&p);
}

static void test_constructors_reject_bad_arguments_and_the_wrong_role(void) {
  hk_status st = HK_STATUS_INIT;
  hk_mpi *world = mpi_test_context(NULL), *self = NULL;
  hk_mpi_options o = HK_MPI_OPTIONS_INIT;
  o.comm = MPI_COMM_SELF;
  assert_ok(hk_mpi_new(&self, &o, &st), &st);
  hk_mpi_ps *ps = (hk_mpi_ps *)&st;
  assert_status(hk_mpi_ps_new(&ps, self, &st), &st, HK_INVALID_ARGUMENT, "1 rank");
  assert_null(ps);
  assert_status(hk_mpi_ps_new(&ps, NULL, &st), &st, HK_INVALID_ARGUMENT, "mpi");
  assert_status(hk_mpi_ps_new(NULL, world, &st), &st, HK_INVALID_ARGUMENT, "out");
  assert_int_equal(hk_mpi_ps_updates(NULL), 0);
  hk_mpi_ps_free(NULL);

  assert_ok(hk_mpi_ps_new(&ps, world, &st), &st);
  hk_graph *g = NULL;
  assert_ok(hk_graph_new(&g, NULL, &st), &st);
  hk_handle gs, a, b, c;
  hk_hook *h = NULL;
  hk_executor *ex = NULL;
  if (hk_mpi_is_chief(world)) {
    /* A graph without a global step cannot be served. */
    assert_status(hk_mpi_ps_serve_op(&a, ps, g, "serve", &st), &st, HK_INVALID_ARGUMENT, "global step");
    assert_status(hk_mpi_ps_worker_ready_ops(ps, g, &a, &b, &c, &st), &st, HK_INVALID_ARGUMENT, "chief");
    assert_status(hk_mpi_ps_worker_executor_new(&ex, ps, hk_graph_executor(g), &st), &st, HK_INVALID_ARGUMENT, "chief");
    assert_status(hk_mpi_ps_worker_hook_new(&h, ps, &st), &st, HK_INVALID_ARGUMENT, "chief");
    assert_ok(hk_graph_get_or_create_global_step(g, &gs, &st), &st);
    assert_status(hk_mpi_ps_serve_op(&a, ps, g, NULL, &st), &st, HK_INVALID_ARGUMENT, "name");
    assert_ok(hk_mpi_ps_chief_hook_new(&h, ps, &st), &st);
    hk_hook_free(h);
  } else {
    assert_status(hk_mpi_ps_serve_op(&a, ps, g, "serve", &st), &st, HK_INVALID_ARGUMENT, "worker");
    assert_status(hk_mpi_ps_chief_hook_new(&h, ps, &st), &st, HK_INVALID_ARGUMENT, "worker");
    assert_status(hk_mpi_ps_worker_executor_new(&ex, ps, NULL, &st), &st, HK_INVALID_ARGUMENT, "inner");
    assert_status(hk_mpi_ps_worker_ready_ops(ps, NULL, &a, &b, &c, &st), &st, HK_INVALID_ARGUMENT, NULL);
    assert_ok(hk_mpi_ps_worker_hook_new(&h, ps, &st), &st);
    hk_hook_free(h);
  }
  assert_status(hk_mpi_ps_chief_hook_new(NULL, ps, &st), &st, HK_INVALID_ARGUMENT, "out");
  assert_status(hk_mpi_ps_worker_hook_new(&h, NULL, &st), &st, HK_INVALID_ARGUMENT, "ps");
  assert_int_equal(hk_mpi_ps_updates(ps), 0);
  hk_graph_free(g);
  hk_mpi_ps_free(ps);
  hk_mpi_free(self);
  hk_mpi_free(world);
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      MPI_CASE(test_updates_reach_the_chief_whole_and_its_stop_at_step_ends_every_worker),
      MPI_CASE(test_workers_wait_for_a_chief_that_starts_late),
      MPI_CASE(test_a_workers_stop_at_step_stops_the_chief_and_every_worker),
      MPI_CASE(test_messages_split_into_small_pieces_carry_the_same_exact_updates),
      MPI_CASE(test_a_worker_with_another_model_is_refused),
      MPI_CASE(test_a_worker_waiting_for_a_step_is_released_when_the_chief_stops),
      MPI_CASE(test_a_stop_on_the_chiefs_coordinator_ends_the_service_cleanly),
      MPI_CASE(test_the_worker_executor_hands_the_inner_executor_its_raw_session),
      MPI_CASE(test_constructors_reject_bad_arguments_and_the_wrong_role),
  };
  return mpi_test_main(argc, argv, "mpi_ps", tests, sizeof tests / sizeof tests[0], 3);
}
