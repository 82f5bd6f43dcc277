/*
 * hooked::mpi — a host loop over hk_mpi_group() (hooked/loop.h,
 * hk_loop_options.group; contract H99-H103): every rank runs its own loop
 * over its own arrays into a directory all ranks share, the checkpoints
 * are sharded and saved at the loop's cadence on every rank, rank 0 alone
 * writes the events, and a second run resumes from them. Asynchronous
 * checkpoints make their collective saves on the writer thread, over a
 * second context made for the group, with MPI initialized with
 * MPI_THREAD_MULTIPLE (this program asks for it; a library that does not
 * provide it skips that case with a message).
 */
#include "mpi_test.h"
#include "ckpt_fixture.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hooked/loop.h"
#include "tmpdir.h"

/* mpi_test_main() calls MPI_Init: through the profiling interface this
 * program initializes MPI with every thread allowed to call it instead. */
int MPI_Init(int *argc, char ***argv) {
  int provided = MPI_THREAD_SINGLE;
  return PMPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
}

/* A directory every rank names: rank 0's, broadcast. */
static char *shared_dir(void) {
  char buf[512] = {0};
  if (mpi_rank() == 0) {
    char *d = test_tmpdir_new("mpiloop");
    snprintf(buf, sizeof buf, "%s", d);
    free(d);
  }
  MPI_Bcast(buf, sizeof buf, MPI_CHAR, 0, MPI_COMM_WORLD);
  return strdup(buf);
}

typedef struct prog {
  float w[8];     /* replicated: every rank takes the same step */
  int64_t own[2]; /* the rank's own (HK_LOOP_PER_RANK) */
} prog;

static void prog_init(prog *p, int seed) {
  for (int i = 0; i < 8; i++) p->w[i] = (float)(seed + i);
  p->own[0] = 100 * mpi_rank() + seed;
  p->own[1] = seed;
}

/* One run of the loop until last_step over `group_mpi`'s group; *restored:
 * whether the start restored a checkpoint. */
static void run_loop(prog *p, hk_mpi *group_mpi, const hk_env *env, const char *dir, int async, int64_t last_step,
                     int *restored) {
  static const int64_t w_dims[1] = {8}, own_dims[1] = {2};
  hk_loop_options o = HK_LOOP_OPTIONS_INIT;
  hk_loop *loop = NULL;
  hk_status st = HK_STATUS_INIT;
  o.env = env;
  o.checkpoint_dir = dir;
  o.save_steps = 3;
  o.last_step = last_step;
  o.max_to_keep = 0;
  o.async_checkpoint = async;
  o.handle_signals = 0;
  o.group = hk_mpi_group();
  o.group_user = group_mpi;
  assert_ok(hk_loop_new(&loop, &o, &st), &st);
  assert_ok(hk_loop_add_array(loop, "w", HK_DTYPE_F32, 1, w_dims, p->w, 0, &st), &st);
  assert_ok(hk_loop_add_array(loop, "own", HK_DTYPE_I64, 1, own_dims, p->own, HK_LOOP_PER_RANK, &st), &st);
  assert_ok(hk_loop_start(loop, NULL, &st), &st);
  *restored = hk_loop_restored_checkpoint(loop) != NULL;
  while (!hk_loop_should_stop(loop)) {
    assert_ok(hk_loop_step_begin(loop, NULL, &st), &st);
    for (int i = 0; i < 8; i++) p->w[i] += 0.25f;
    p->own[0] += 1;
    assert_ok(hk_loop_step_end(loop, &st), &st);
  }
  assert_ok(hk_loop_finish(loop, &st), &st);
  assert_int_equal(hk_loop_global_step(loop), last_step);
  hk_loop_free(loop);
}

/* Saved at 0, 3, 6 and 7 by every rank, resumed at 7 to 10 (saved at 10)
 * with every rank's own values back and the same replicated model
 * everywhere. */
static void check_job(hk_mpi *group_mpi, const hk_env *env, int async) {
  const int rank = mpi_rank(), n = mpi_size();
  char *dir = shared_dir();
  prog p, first;
  int restored = 0;

  prog_init(&p, 1);
  run_loop(&p, group_mpi, env, dir, async, 7, &restored);
  assert_false(restored);
  first = p;
  MPI_Barrier(MPI_COMM_WORLD);
  for (int64_t s = 0; s <= 7; s++) assert_int_equal(ckpt_shard_exists(dir, s, rank, n), s % 3 == 0 || s == 7);
  if (rank == 0) assert_int_equal(ckpt_count_entries(dir, "events.out.tfevents."), 1);
  MPI_Barrier(MPI_COMM_WORLD);

  prog_init(&p, 40); /* other initial values: the checkpoint's come back */
  run_loop(&p, group_mpi, env, dir, async, 10, &restored);
  assert_true(restored);
  assert_int_equal(p.own[0], first.own[0] + 3);
  assert_true(mpi_same_bytes_everywhere(p.w, sizeof p.w));
  for (int i = 0; i < 8; i++) assert_true(p.w[i] == first.w[i] + 0.75f);
  MPI_Barrier(MPI_COMM_WORLD);
  /* The cadence restarts at the restored step 7: the next save is 10's. */
  assert_true(ckpt_shard_exists(dir, 10, rank, n));
  assert_false(ckpt_shard_exists(dir, 8, rank, n) || ckpt_shard_exists(dir, 9, rank, n));
  MPI_Barrier(MPI_COMM_WORLD); /* every rank has looked before rank 0 removes the directory */
  if (rank == 0) {
    assert_int_equal(ckpt_count_entries(dir, "events.out.tfevents."), 2); /* one per run, rank 0's */
    test_tmpdir_remove(dir);
  }
  free(dir);
}

static void test_a_loop_over_the_job_saves_and_resumes_sharded_checkpoints(void) {
  hk_env real;
  test_env *te = mpi_test_env(&real);
  hk_mpi *mpi = mpi_test_context(&real);
  check_job(mpi, &real, 0);
  hk_mpi_free(mpi);
  test_env_free(te);
}

/* The asynchronous hook's writer thread makes the collective saves: the
 * group is a second context (the training thread keeps the first for its
 * own collectives), and MPI must allow calls from every thread. */
static void test_async_checkpoints_save_over_a_second_context(void) {
  hk_env real;
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_MULTIPLE) {
    if (mpi_rank() == 0)
      printf("skipped: this MPI library does not provide MPI_THREAD_MULTIPLE (it gives level %d)\n", provided);
    return;
  }
  test_env *te = mpi_test_env(&real);
  hk_mpi *train = mpi_test_context(&real);
  hk_mpi *ckpt = mpi_test_context(&real);
  check_job(ckpt, &real, 1);
  hk_mpi_free(ckpt);
  hk_mpi_free(train);
  test_env_free(te);
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      MPI_CASE(test_a_loop_over_the_job_saves_and_resumes_sharded_checkpoints),
      MPI_CASE(test_async_checkpoints_save_over_a_second_context),
  };
  return mpi_test_main(argc, argv, "mpi_loop", tests, sizeof tests / sizeof tests[0], 2);
}
