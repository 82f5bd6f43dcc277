/*
 * The checkpoint benchmark's other states, each in a graph of its own: the
 * small models, and the sizes and tensor counts of the scaling rows. Every
 * one is saved by a Saver that keeps every checkpoint, the previous one
 * removed before the clock starts (as sync_save() does), so that a timed
 * save does the work of its raw reference (a new file made durable) and
 * no retention on top.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "bench.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int model_fail(const char *what) {
  fprintf(stderr, PROG ": out of memory for %s\n", what);
  return 1;
}

int model_open(bench *b, model *m, const char *name, const size_t *sizes, size_t n) {
  hk_graph_options gopts = HK_GRAPH_OPTIONS_INIT;
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_handle h, gs;
  int64_t zero = 0;
  hk_tensor zero_t = hk_tensor_scalar_i64(&zero);
  size_t used = 0, gs_index;
  char buf[96];

  memset(m, 0, sizeof *m);
  for (size_t i = 0; i < n; i++) m->bytes += sizes[i];
  m->ntensors = n;
  if (posix_memalign((void **)&m->arena, 64, m->bytes > 0 ? m->bytes : 64) != 0) return model_fail(name);
  fill_state(m->arena, m->bytes);
  m->dir = path_join(b->dir, name);
  snprintf(buf, sizeof buf, "%s-raw.bin", name);
  m->raw_path = path_join(b->dir, buf);
  snprintf(buf, sizeof buf, "%s-raw.bin.tmp", name);
  m->raw_tmp = path_join(b->dir, buf);
  if (!m->dir || !m->raw_path || !m->raw_tmp) return model_fail(name);
  if (mkdir(m->dir, 0755) != 0) return os_fail("creating", m->dir);
  gopts.env = &b->env;
  if (hk_graph_new(&m->g, &gopts, &st) != HK_OK) return hk_fail(name, &st);
  for (size_t i = 0; i < n; i++) {
    hk_variable_def def = HK_VARIABLE_DEF_INIT;
    int64_t dims[1];
    dims[0] = (int64_t)(sizes[i] / 4);
    snprintf(buf, sizeof buf, "t/%06zu", i);
    def.name = buf;
    def.dtype = HK_DTYPE_F32;
    def.rank = 1;
    def.dims = dims;
    def.external_data = m->arena + used;
    if (hk_graph_variable(m->g, &h, &def, &st) != HK_OK) return hk_fail(buf, &st);
    used += sizes[i];
  }
  if (hk_graph_create_global_step(m->g, &gs, &st) != HK_OK ||
      hk_raw_session_open(&m->rs, hk_graph_executor(m->g), &st) != HK_OK ||
      hk_executor_global_step(NULL, &gs_index, hk_graph_executor(m->g), &st) != HK_OK ||
      hk_raw_session_assign_variable(m->rs, gs_index, &zero_t, &st) != HK_OK)
    return hk_fail(name, &st);
  so.env = &b->env;
  so.executor = hk_graph_executor(m->g);
  so.max_to_keep = 0; /* keeps all: model_save() removes the previous one before the clock */
  if (hk_saver_new(&m->saver, &so, &st) != HK_OK) return hk_fail(name, &st);
  return 0;
}

int model_open_mix(bench *b, model *m, const char *name, size_t bytes) {
  size_t n = 0, k = 0, used = 0, *sizes;
  int rc;
  for (size_t c = 0; c < NCLASSES; c++) n += classes[c].count;
  sizes = calloc(n, sizeof *sizes);
  if (sizes == NULL) return model_fail(name);
  bytes = bytes / 4 * 4;
  for (size_t c = 0; c < NCLASSES; c++)
    for (size_t i = 0; i < classes[c].count; i++, k++) {
      sizes[k] = (size_t)((double)bytes * classes[c].share / (double)classes[c].count) / 4 * 4;
      if (k == n - 1) sizes[k] = bytes - used; /* the last one takes the rounding */
      used += sizes[k];
    }
  rc = model_open(b, m, name, sizes, n);
  free(sizes);
  return rc;
}

int model_open_uniform(bench *b, model *m, const char *name, size_t n, size_t each) {
  size_t *sizes = calloc(n, sizeof *sizes);
  int rc;
  if (sizes == NULL) return model_fail(name);
  for (size_t i = 0; i < n; i++) sizes[i] = each / 4 * 4;
  rc = model_open(b, m, name, sizes, n);
  free(sizes);
  return rc;
}

void model_close(model *m) {
  hk_saver_free(m->saver);
  hk_raw_session_free(m->rs);
  hk_graph_free(m->g);
  if (m->dir != NULL) remove_tree(m->dir);
  if (m->raw_path != NULL) remove(m->raw_path);
  free(m->arena), free(m->dir), free(m->raw_path), free(m->raw_tmp), free(m->prefix), free(m->data_path);
  memset(m, 0, sizeof *m);
}

int model_save(bench *b, model *m, double *secs, unsigned long *syncs, unsigned long *dir_syncs) {
  hk_status st = HK_STATUS_INIT;
  char *path = path_join(m->dir, "model.ckpt");
  size_t n = 0;
  const char *const *kept = hk_saver_checkpoints(m->saver, &n);
  const char *prefix = NULL;
  double t0;
  hk_code rc;
  if (path == NULL) return model_fail("a path");
  for (size_t i = 0; i < n; i++)
    if (hk_checkpoint_exists(&b->env, kept[i]) && hk_checkpoint_remove(&b->env, kept[i], &st) != HK_OK) {
      free(path);
      return hk_fail("removing the previous checkpoint", &st);
    }
  if (fsync_dir(m->dir) != 0) {
    free(path);
    return 1;
  }
  atomic_store(&b->counts.syncs, 0);
  atomic_store(&b->counts.dir_syncs, 0);
  t0 = now_secs();
  rc = hk_saver_save(&prefix, m->saver, m->rs, path, b->next_step++, HK_SAVE_DEFAULT, &st);
  *secs = now_secs() - t0;
  if (syncs != NULL) *syncs = atomic_load(&b->counts.syncs);
  if (dir_syncs != NULL) *dir_syncs = atomic_load(&b->counts.dir_syncs);
  free(path);
  if (rc != HK_OK) return hk_fail("hk_saver_save", &st);
  return set_data_path(&m->data_path, &m->prefix, prefix);
}

int model_restore(bench *b, model *m, double *secs) {
  if (m->prefix == NULL) {
    fprintf(stderr, PROG ": restoring a model never saved\n");
    return 1;
  }
  return restore_with(b, m->saver, m->rs, m->prefix, secs);
}

int model_raw_write(bench *b, model *m, write_pacing pacing, double *secs) {
  return raw_write_file(b->dir, m->raw_tmp, m->raw_path, m->arena, m->bytes, pacing, secs);
}
