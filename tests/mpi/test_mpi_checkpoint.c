/*
 * hooked::mpi — sharded checkpoints over a context's group (hk_mpi_group();
 * contract D16-D21, H95): every rank writes its shard into a directory all
 * ranks share, the chief commits; a rank whose disk is full fails the save
 * on every rank; the job's first N-1 ranks, on a communicator of their
 * own, restore the N ranks' checkpoint byte-identically; a corrupt shard
 * makes every rank fall back together.
 */
#include "mpi_test.h"
#include "graph_fixture.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hooked/checkpoint.h"
#include "hooked/graph.h"
#include "faulty_fs.h"
#include "tmpdir.h"

static const char *const per_rank[1] = {"rng"};

typedef struct model {
  hk_env env;
  faulty_fs ff;
  hk_mpi *mpi;
  hk_graph *g;
  hk_raw_session *rs;
  hk_saver *saver;
} model;

/* A directory every rank of comm names: rank 0's, broadcast. */
static char *shared_dir(MPI_Comm comm) {
  char buf[512] = {0};
  int rank;
  MPI_Comm_rank(comm, &rank);
  if (rank == 0) {
    char *d = test_tmpdir_new("mpickpt");
    assert_non_null(d);
    snprintf(buf, sizeof buf, "%s", d);
    free(d);
  }
  MPI_Bcast(buf, sizeof buf, MPI_CHAR, 0, comm);
  return strdup(buf);
}

static void model_new(model *m, MPI_Comm comm) {
  static const int64_t w_dims[2] = {9, 11}, rng_dims[1] = {8};
  hk_mpi_options mo = HK_MPI_OPTIONS_INIT;
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_handle h;
  memset(m, 0, sizeof *m);
  hk_env_init(&m->env, HK_ENV_VERSION);
  m->env.log_level = HK_LOG_ERROR;
  faulty_fs_init(&m->ff);
  faulty_fs_bind(&m->ff, &m->env);
  mo.env = &m->env;
  mo.comm = comm;
  mo.collective_timeout_secs = 60;
  assert_ok(hk_mpi_new(&m->mpi, &mo, &st), &st);
  go.env = &m->env;
  assert_ok(hk_graph_new(&m->g, &go, &st), &st);
  graph_fixture_variable(m->g, "w", HK_DTYPE_F32, 2, w_dims);
  assert_ok(hk_graph_create_global_step(m->g, &h, &st), &st);
  graph_fixture_variable(m->g, "rng", HK_DTYPE_U8, 1, rng_dims);
  assert_ok(hk_raw_session_open(&m->rs, hk_graph_executor(m->g), &st), &st);
  so.executor = hk_graph_executor(m->g);
  so.group = hk_mpi_group();
  so.group_user = m->mpi;
  so.per_rank_list = per_rank;
  so.nper_rank_list = 1;
  assert_ok(hk_saver_new(&m->saver, &so, &st), &st);
}

static void model_free(model *m) {
  hk_saver_free(m->saver);
  hk_raw_session_free(m->rs);
  hk_graph_free(m->g);
  hk_mpi_free(m->mpi);
  faulty_fs_destroy(&m->ff);
}

/* w[k] = seed + k / 8, the global step `gs`, rng = rank-dependent. */
static void set_values(model *m, int seed, int64_t gs) {
  hk_status st = HK_STATUS_INIT;
  float w[99];
  unsigned char rng[8];
  int64_t dims[2] = {9, 11}, rd[1] = {8};
  hk_tensor t;
  size_t i;
  for (int k = 0; k < 99; k++) w[k] = (float)seed + (float)k / 8.0f;
  for (int k = 0; k < 8; k++) rng[k] = (unsigned char)(seed + 16 * hk_mpi_rank(m->mpi) + k);
  assert_ok(hk_tensor_init(&t, HK_DTYPE_F32, 2, dims, w, &st), &st);
  assert_ok(hk_executor_find_variable(hk_graph_executor(m->g), "w", &i, &st), &st);
  assert_ok(hk_raw_session_assign_variable(m->rs, i, &t, &st), &st);
  assert_ok(hk_tensor_init(&t, HK_DTYPE_U8, 1, rd, rng, &st), &st);
  assert_ok(hk_executor_find_variable(hk_graph_executor(m->g), "rng", &i, &st), &st);
  assert_ok(hk_raw_session_assign_variable(m->rs, i, &t, &st), &st);
  t = hk_tensor_scalar_i64(&gs);
  assert_ok(hk_executor_find_variable(hk_graph_executor(m->g), "global_step", &i, &st), &st);
  assert_ok(hk_raw_session_assign_variable(m->rs, i, &t, &st), &st);
}

static int w_is(model *m, int seed) {
  hk_status st = HK_STATUS_INIT;
  hk_tensor t;
  size_t i;
  assert_ok(hk_executor_find_variable(hk_graph_executor(m->g), "w", &i, &st), &st);
  assert_ok(hk_raw_session_read_variable(&t, m->rs, i, &st), &st);
  for (int k = 0; k < 99; k++)
    if (((const float *)t.data)[k] != (float)seed + (float)k / 8.0f) return 0;
  return 1;
}

static char *join(const char *dir, const char *name) {
  char *p = malloc(strlen(dir) + strlen(name) + 2);
  assert_non_null(p);
  sprintf(p, "%s/%s", dir, name);
  return p;
}

static void test_every_rank_writes_its_shard_and_the_job_restores_on_fewer_ranks(void) {
  char *dir = shared_dir(MPI_COMM_WORLD), *save_path = join(dir, "model.ckpt"), name[128], *p;
  int n = mpi_size(), rank = mpi_rank();
  hk_status st = HK_STATUS_INIT;
  const char *prefix = NULL;
  MPI_Comm fewer;
  model m;

  model_new(&m, MPI_COMM_WORLD);
  set_values(&m, 3, 40);
  assert_ok(hk_saver_save(&prefix, m.saver, m.rs, save_path, 40, 0, &st), &st);
  snprintf(name, sizeof name, "model.ckpt-40.shard-%05d-of-%05d.safetensors", rank, n);
  p = join(dir, name);
  assert_true(test_path_exists(p));
  free(p);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) assert_ok(hk_checkpoint_verify(NULL, prefix, &st), &st);
  model_free(&m);

  /* The first n-1 ranks resume the n ranks' checkpoint. */
  MPI_Comm_split(MPI_COMM_WORLD, rank < n - 1 ? 0 : MPI_UNDEFINED, rank, &fewer);
  if (fewer != MPI_COMM_NULL) {
    const char *restored = NULL;
    model_new(&m, fewer);
    set_values(&m, 5, 0);
    assert_ok(hk_saver_restore_latest(&restored, m.saver, m.rs, dir, &st), &st);
    assert_non_null(restored);
    assert_true(w_is(&m, 3));
    model_free(&m);
    MPI_Comm_free(&fewer);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) test_tmpdir_remove(dir);
  free(save_path);
  free(dir);
}

static void test_a_full_disk_on_one_rank_fails_the_save_on_every_rank(void) {
  char *dir = shared_dir(MPI_COMM_WORLD), *save_path = join(dir, "model.ckpt");
  int n = mpi_size(), rank = mpi_rank();
  hk_status st = HK_STATUS_INIT;
  char want[64];
  model m;

  model_new(&m, MPI_COMM_WORLD);
  set_values(&m, 1, 10);
  assert_ok(hk_saver_save(NULL, m.saver, m.rs, save_path, 10, 0, &st), &st);
  if (rank == n - 1) {
    faulty_fs_match(&m.ff, ".shard-");
    faulty_fs_fail_errno(&m.ff, FAULTY_FS_WRITE, 0, ENOSPC, 1);
  }
  set_values(&m, 2, 20);
  assert_int_equal(hk_saver_save(NULL, m.saver, m.rs, save_path, 20, 0, &st), HK_RESOURCE_EXHAUSTED);
  snprintf(want, sizeof want, "rank %d of %d: ", n - 1, n);
  assert_non_null(strstr(st.message, want));
  MPI_Barrier(MPI_COMM_WORLD);
  assert_int_equal(test_dir_count_matching(dir, "model.ckpt-20"), 0);
  faulty_fs_reset(&m.ff);
  {
    const char *restored = NULL;
    assert_ok(hk_saver_restore_latest(&restored, m.saver, m.rs, dir, &st), &st);
    assert_non_null(strstr(restored, "model.ckpt-10"));
    assert_true(w_is(&m, 1));
  }
  model_free(&m);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) test_tmpdir_remove(dir);
  free(save_path);
  free(dir);
}

static void test_a_corrupt_shard_makes_every_rank_fall_back_together(void) {
  char *dir = shared_dir(MPI_COMM_WORLD), *save_path = join(dir, "model.ckpt");
  int n = mpi_size(), rank = mpi_rank();
  hk_status st = HK_STATUS_INIT;
  const char *restored = NULL;
  model m;

  model_new(&m, MPI_COMM_WORLD);
  set_values(&m, 1, 10);
  assert_ok(hk_saver_save(NULL, m.saver, m.rs, save_path, 10, 0, &st), &st);
  set_values(&m, 2, 20);
  assert_ok(hk_saver_save(NULL, m.saver, m.rs, save_path, 20, 0, &st), &st);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    char name[128], *p;
    FILE *f;
    snprintf(name, sizeof name, "model.ckpt-20.shard-%05d-of-%05d.safetensors", n - 1, n);
    p = join(dir, name);
    f = fopen(p, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, -1, SEEK_END), 0);
    int c = fgetc(f);
    assert_int_equal(fseek(f, -1, SEEK_END), 0);
    fputc(c ^ 0x5a, f);
    fclose(f);
    free(p);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  set_values(&m, 7, 0);
  assert_ok(hk_saver_restore_latest(&restored, m.saver, m.rs, dir, &st), &st);
  assert_non_null(strstr(restored, "model.ckpt-10"));
  assert_true(w_is(&m, 1));
  model_free(&m);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) test_tmpdir_remove(dir);
  free(save_path);
  free(dir);
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      MPI_CASE(test_every_rank_writes_its_shard_and_the_job_restores_on_fewer_ranks),
      MPI_CASE(test_a_full_disk_on_one_rank_fails_the_save_on_every_rank),
      MPI_CASE(test_a_corrupt_shard_makes_every_rank_fall_back_together),
  };
  return mpi_test_main(argc, argv, "mpi_checkpoint", tests, sizeof tests / sizeof tests[0], 2);
}
