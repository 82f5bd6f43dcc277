/*
 * What the checkpoint_saver_hook test programs share (checkpoint_saver_hook_tests.h).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "checkpoint_saver_hook_tests.h"

/* ---- a spy listener (C103) ------------------------------------------------------ */

void note(spy_listener *l, const char *slot, int64_t step) {
  char buf[64];
  if (l->order == NULL) return;
  snprintf(buf, sizeof buf, "%s.%s@%lld;", l->name, slot, (long long)step);
  strncat(l->order, buf, l->order_cap - strlen(l->order) - 1);
}

hk_code l_begin(void *user, hk_status *st) {
  spy_listener *l = user;
  l->begin++;
  note(l, "begin", -1);
  if (l->fail_begin != HK_OK) return hk_status_set(st, l->fail_begin, "listener %s begin failed", l->name);
  return HK_OK;
}

hk_code l_before(void *user, hk_raw_session *rs, int64_t step, hk_status *st) {
  spy_listener *l = user;
  (void)rs;
  if (l->before < MAX_EVENTS) l->before_steps[l->before] = step;
  l->before++;
  note(l, "before_save", step);
  if (l->fail_before != HK_OK) return hk_status_set(st, l->fail_before, "listener %s before_save failed", l->name);
  return HK_OK;
}

hk_code l_after(void *user, hk_raw_session *rs, int64_t step, int *stop, hk_status *st) {
  spy_listener *l = user;
  (void)rs;
  l->after++;
  note(l, "after_save", step);
  if (l->fail_after != HK_OK) return hk_status_set(st, l->fail_after, "listener %s after_save failed", l->name);
  if (step == l->stop_at) *stop = 1;
  return HK_OK;
}

hk_code l_end(void *user, hk_raw_session *rs, int64_t step, hk_status *st) {
  spy_listener *l = user;
  (void)rs;
  l->end++;
  l->end_step = step;
  note(l, "end", step);
  if (l->fail_end != HK_OK) return hk_status_set(st, l->fail_end, "listener %s end failed", l->name);
  return HK_OK;
}

const hk_checkpoint_listener_vtable spy_listener_vtable = {
    HK_CHECKPOINT_LISTENER_VTABLE_VERSION, l_begin, l_before, l_after, l_end,
};

/* ---- fixture -------------------------------------------------------------------- */

int setup(void **state) {
  fixture *f = calloc(1, sizeof(*f));
  int i;

  assert_non_null(f);
  f->te = test_env_new();
  f->tmp = test_tmpdir_new("ckpt-hook");
  f->dir = test_path(f->tmp, "ckpt");
  f->fx = fake_training_executor(f->te, NULL, &f->gs, &f->train);
  /* "v" += 5 per step, so a checkpoint's contents show its step. */
  f->v = fake_executor_add_variable(f->fx, "v", HK_DTYPE_I64, 0, NULL, HK_VAR_TRAINABLE, NULL);
  f->bump = fake_executor_add_op(f->fx, "bump");
  fake_executor_op_increments(f->fx, f->bump, f->v, 5);
  for (i = 0; i < 2; i++) {
    f->l[i].name = i == 0 ? "first" : "second";
    f->l[i].order = f->order;
    f->l[i].order_cap = sizeof f->order;
    f->l[i].stop_at = -1;
    f->ls[i].vtable = &spy_listener_vtable;
    f->ls[i].user = &f->l[i];
    f->ls[i].name = f->l[i].name;
  }
  hk_checkpoint_saver_options_init(&f->o, HK_CHECKPOINT_SAVER_OPTIONS_VERSION);
  f->o.env = &f->te->env;
  f->o.checkpoint_dir = f->dir;
  f->o.save_steps = 1;
  f->o.listeners = f->ls;
  f->o.nlisteners = 2;
  *state = f;
  return 0;
}

int teardown(void **state) {
  fixture *f = *state;
  session_close_and_free(f->s);
  hk_hook_free(f->hook);
  hk_scaffold_free(f->scaffold);
  hk_saver_free(f->saver);
  test_tmpdir_free(f->tmp);
  free(f->dir);
  return fixture_release(f, f->fx, f->te);
}

void make_hook(fixture *f) { assert_ok(hk_checkpoint_saver_hook_new(&f->hook, &f->o, &f->st), &f->st); }

hk_code open_session(fixture *f) {
  return one_hook_session_new(&f->s, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(f->fx), &f->hook,
                              f->scaffold, &f->st);
}

void open_ok(fixture *f) {
  make_hook(f);
  assert_ok(open_session(f), &f->st);
}

hk_code step(fixture *f) {
  hk_handle targets[2];
  hk_run_args args;
  targets[0] = f->train;
  targets[1] = f->bump;
  memset(&args, 0, sizeof args);
  args.targets = targets;
  args.ntargets = 2;
  return hk_session_run(f->s, &args, NULL, NULL, &f->st);
}

hk_code close_session(fixture *f) {
  hk_code rc = hk_session_close(f->s, HK_OK, &f->st);
  hk_session_free(f->s);
  f->s = NULL;
  return rc;
}

int ckpt_exists(fixture *f, const char *base, int64_t step) { return ckpt_data_exists(f->dir, base, step); }

/* The step and value of "v" recorded in checkpoint model.ckpt-<step>. */
void read_ckpt(fixture *f, int64_t step, int64_t *gs, int64_t *v) {
  ckpt_read_i64(&f->te->env, f->dir, step, 0, "v", gs, v, &f->st);
}

int count_files(fixture *f, const char *substr) { return test_dir_count_matching(f->dir, substr); }
