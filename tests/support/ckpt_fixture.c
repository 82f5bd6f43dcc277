/*
 * ckpt_fixture — see ckpt_fixture.h.
 */
#include "ckpt_fixture.h"
#include "test_env.h"
#include "tmpdir.h"

#include <hooked/checkpoint.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void ckpt_dir_new(const char *tag, char **root, char **dir, char **save_path) {
  *root = test_tmpdir_new(tag);
  *dir = test_path(*root, "ck");
  assert_int_equal(mkdir(*dir, 0755), 0);
  *save_path = test_path(*dir, "model.ckpt");
}

void ckpt_dir_free(char *root, char *dir, char *save_path) {
  test_tmpdir_free(root);
  free(dir);
  free(save_path);
}

int ckpt_count_entries(const char *dir, const char *prefix) {
  DIR *d = opendir(dir);
  struct dirent *e;
  int n = 0;
  assert_non_null(d);
  while ((e = readdir(d)) != NULL)
    if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) n++;
  closedir(d);
  return n;
}

int ckpt_shard_exists(const char *dir, int64_t step, int r, int n) {
  char path[1024];
  struct stat sb;
  snprintf(path, sizeof path, "%s/model.ckpt-%lld.shard-%05d-of-%05d.safetensors", dir, (long long)step, r, n);
  return stat(path, &sb) == 0;
}

int ckpt_data_exists(const char *dir, const char *base, int64_t step) {
  char name[128];
  char *p;
  int yes;
  snprintf(name, sizeof name, "%s-%lld.safetensors", base, (long long)step);
  p = test_path(dir, name);
  yes = test_path_exists(p);
  free(p);
  return yes;
}

void ckpt_read_i64(hk_env *env, const char *dir, int64_t step, int verify, const char *var, int64_t *gs, int64_t *v,
                   hk_status *st) {
  char name[128];
  char *prefix;
  hk_checkpoint_reader *r = NULL;
  size_t i;

  snprintf(name, sizeof name, "model.ckpt-%lld", (long long)step);
  prefix = test_path(dir, name);
  assert_ok(hk_checkpoint_reader_open(&r, env, prefix, st), st);
  if (verify) assert_ok(hk_checkpoint_reader_verify(r, st), st);
  *gs = hk_checkpoint_reader_step(r);
  assert_ok(hk_checkpoint_reader_find(r, var, &i, st), st);
  assert_ok(hk_checkpoint_reader_read(r, i, v, sizeof *v, st), st);
  hk_checkpoint_reader_free(r);
  free(prefix);
}
