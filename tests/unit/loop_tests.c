/*
 * What the loop test programs share (loop_tests.h).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "loop_tests.h"

/* ---- a tiny trainer ------------------------------------------------------------ */

uint64_t rng_next(rng *r) {
  r->calls++;
  r->s += 0x9e3779b97f4a7c15ull;
  uint64_t z = r->s;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

hk_code rng_save(void *user, void *dst, size_t size, hk_status *st) {
  (void)st;
  memcpy(dst, user, size);
  return HK_OK;
}

hk_code rng_restore(void *user, const void *src, size_t size, hk_status *st) {
  (void)st;
  memcpy(user, src, size);
  return HK_OK;
}

void model_init(model *m) {
  memset(m, 0, sizeof *m);
  for (int i = 0; i < 6; i++) m->w[i] = 0.5f + (float)i;
  m->b[0] = -1.0;
  m->b[1] = 2.0;
  m->r.s = 42;
  m->advance = 1;
}

/* One step of the program's own math, driven by its RNG. */
void model_step(model *m) {
  for (int i = 0; i < 6; i++) m->w[i] = m->w[i] * 0.9f + (float)(rng_next(&m->r) % 100) / 1000.0f;
  m->b[0] += 0.25;
  m->b[1] *= 0.5;
  m->loss = m->w[0] + (float)m->b[0];
  if (m->advance) m->my_step++;
  m->steps_run++;
  if (m->log) spy_log_add(m->log, "step", 0);
}

hk_code step_fn(void *user, int64_t step, hk_status *st) {
  (void)step;
  (void)st;
  model_step(user);
  return HK_OK;
}

/* ---- fixture ------------------------------------------------------------------------ */

int setup(void **state) {
  fx *f = calloc(1, sizeof *f);
  f->te = test_env_new();
  f->dir = test_tmpdir_new("loop");
  f->ck = test_path(f->dir, "ck");
  *state = f;
  return 0;
}

int teardown(void **state) {
  fx *f = *state;
  free(f->ck);
  test_tmpdir_free(f->dir);
  int rc = test_env_release(f->te);
  free(f);
  return rc;
}

hk_loop_options opts_for(fx *f) {
  hk_loop_options o = HK_LOOP_OPTIONS_INIT;
  o.env = &f->te->env;
  o.checkpoint_dir = f->ck;
  o.save_steps = 2;
  o.handle_signals = 0;
  return o;
}

/* Register w, b, loss (not checkpointed) and the RNG. */
void add_model(hk_loop *l, model *m, fx *f) {
  static const int64_t dw[2] = {2, 3}, db[1] = {2};
  assert_ok(hk_loop_add_array(l, "w", HK_DTYPE_F32, 2, dw, m->w, 0, &f->st), &f->st);
  assert_ok(hk_loop_add_array(l, "b", HK_DTYPE_F64, 1, db, m->b, 0, &f->st), &f->st);
  assert_ok(hk_loop_add_array(l, "loss", HK_DTYPE_F32, 0, NULL, &m->loss, HK_LOOP_NO_CHECKPOINT, &f->st), &f->st);
  assert_ok(hk_loop_add_state(l, "rng", sizeof m->r, rng_save, rng_restore, &m->r, 0, &f->st), &f->st);
}

/* Run a loop from start to finish with `last_step`, begin/end form. */
int64_t run_to(fx *f, model *m, const hk_loop_options *o) {
  hk_loop *l = NULL;
  int64_t step = -1;
  assert_ok(hk_loop_new(&l, o, &f->st), &f->st);
  add_model(l, m, f);
  assert_ok(hk_loop_start(l, &step, &f->st), &f->st);
  while (!hk_loop_should_stop(l)) {
    assert_ok(hk_loop_step_begin(l, NULL, &f->st), &f->st);
    model_step(m);
    assert_ok(hk_loop_step_end(l, &f->st), &f->st);
  }
  assert_ok(hk_loop_finish(l, &f->st), &f->st);
  hk_loop_free(l);
  return step;
}

char *ckpt_file(fx *f, const char *name) {
  char buf[512];
  snprintf(buf, sizeof buf, "%s/%s.safetensors", f->ck, name);
  return strdup(buf);
}

int files_equal(const char *a, const char *b) {
  size_t na = 0, nb = 0;
  char *x = test_read_file(a, &na), *y = test_read_file(b, &nb);
  int eq = x && y && na == nb && memcmp(x, y, na) == 0;
  free(x);
  free(y);
  return eq;
}

/* The index of the first of the loop's session's hooks named `name`, -1
 * when there is none. */
int hook_index(hk_loop *l, const char *name) {
  hk_session *s = hk_loop_session(l);
  for (size_t i = 0; i < hk_session_hook_count(s); i++)
    if (strcmp(hk_hook_name(hk_session_hook(s, i)), name) == 0) return (int)i;
  return -1;
}
