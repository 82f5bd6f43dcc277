#include "session_fixture.h"

#include <stdio.h>
#include <stdlib.h>

void test_session_options(hk_session_options *o, const hk_env *env, hk_session_kind kind, hk_executor *ex,
                          hk_hook **hooks, size_t nhooks) {
  hk_session_options_init(o, HK_SESSION_OPTIONS_VERSION);
  o->env = env;
  o->kind = kind;
  o->executor = ex;
  o->hooks = hooks;
  o->nhooks = nhooks;
}

fake_executor *fake_gs_executor(test_env *te, hk_executor **ex, hk_handle *gs) {
  fake_executor *fx = fake_executor_new(&te->env);
  assert_non_null(fx);
  if (ex != NULL) *ex = fake_executor_executor(fx);
  *gs = fake_executor_add_global_step(fx);
  return fx;
}

fake_executor *fake_training_executor(test_env *te, hk_executor **ex, hk_handle *gs, hk_handle *train) {
  fake_executor *fx = fake_gs_executor(te, ex, gs);
  *train = fake_executor_add_train_op(fx);
  return fx;
}

session_fixture *session_fixture_new(hk_session_kind kind, int nspies) {
  static const char *const names[SESSION_FIXTURE_MAX_SPIES] = {"a", "b", "c"};
  session_fixture *f = calloc(1, sizeof(*f));
  spy_hook **spies[SESSION_FIXTURE_MAX_SPIES];
  int i;

  assert_non_null(f);
  assert_true(nspies >= 1 && nspies <= SESSION_FIXTURE_MAX_SPIES);
  spies[0] = &f->a;
  spies[1] = &f->b;
  spies[2] = &f->c;
  f->te = test_env_new();
  f->fx = fake_training_executor(f->te, &f->ex, &f->gs, &f->train);
  for (i = 0; i < nspies; i++) *spies[i] = spy_hook_new(names[i], &f->log, NULL);
  for (i = 0; i < nspies; i++) {
    assert_non_null(*spies[i]);
    (*spies[i])->action_user = f;
    f->hooks[i] = (*spies[i])->hook;
  }
  test_session_options(&f->opts, &f->te->env, kind, f->ex, f->hooks, (size_t)nspies);
  return f;
}

static hk_code fail_train(void *user, fake_executor *fx, const hk_run_args *args, hk_status *st) {
  train_fault *tf = user;
  (void)fx;
  if (args->ntargets == 0 || args->targets[0] != tf->train) return HK_OK;
  tf->seen++;
  if (tf->remaining == 0) return HK_OK;
  if (tf->remaining > 0) tf->remaining--;
  return hk_status_set(st, tf->code, "train step %d preempted", tf->seen);
}

void session_fixture_fail_train(session_fixture *f) {
  f->tf.train = f->train;
  fake_executor_on_run(f->fx, fail_train, &f->tf);
}

int fixture_release(void *fixture, fake_executor *fx, test_env *te) {
  fake_executor_free(fx);
  free(fixture);
  return test_env_release(te);
}

int session_fixture_teardown(void **state) {
  session_fixture *f = *state;
  hk_session_free(f->s);
  hk_raw_session_free(f->rs);
  hk_session_manager_free(f->sm);
  hk_scaffold_free(f->scaffold);
  fake_executor_free(f->other);
  spy_hook_free(f->a);
  spy_hook_free(f->b);
  spy_hook_free(f->c);
  return fixture_release(f, f->fx, f->te);
}

void session_fixture_open(session_fixture *f) {
  hk_code rc = hk_session_new(&f->s, &f->opts, &f->st);
  assert_ok(rc, &f->st);
  assert_non_null(f->s);
  spy_log_clear(&f->log);
  fake_executor_reset_calls(f->fx);
}

hk_code session_fixture_run_train(session_fixture *f) { return session_run_train(f->s, f->train, &f->st); }

hk_code one_hook_session_new(hk_session **out, const hk_env *env, hk_session_kind kind, hk_executor *ex, hk_hook **hook,
                             hk_scaffold *scaffold, hk_status *st) {
  hk_session_options so;
  test_session_options(&so, env, kind, ex, hook, 1);
  so.scaffold = scaffold;
  return hk_session_new(out, &so, st);
}

void session_close_and_free(hk_session *s) {
  if (s == NULL) return;
  hk_session_close(s, HK_OK, NULL);
  hk_session_free(s);
}

hk_code session_run_train(hk_session *s, hk_handle train, hk_status *st) {
  hk_run_args args = {NULL, 0, NULL, 0, &train, 1, NULL};
  return hk_session_run(s, &args, NULL, NULL, st);
}

hk_code raw_session_assign_global_step(hk_raw_session *rs, int64_t value, hk_status *st) {
  size_t index;
  hk_tensor t;
  hk_code rc = hk_executor_global_step(NULL, &index, hk_raw_session_executor(rs), st);
  if (rc != HK_OK) return rc;
  t = hk_tensor_scalar_i64(&value);
  return hk_raw_session_assign_variable(rs, index, &t, st);
}
