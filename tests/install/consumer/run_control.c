/*
 * How a host-loop run reads and stops: a step timer of the program's own
 * placed before the loop's built-in hooks (so it times the program's step,
 * not the checkpoint writes that follow it), a wall-clock limit with a final checkpoint, the signals that
 * stop the run cleanly (SIGHUP when the terminal closes, SIGUSR1 when a
 * batch system warns), and why the run stopped, printed at the end.
 */
#include <hooked/hooked.h>
#include <stdio.h>
#include <stdlib.h>

static void check(hk_code rc, const hk_status *st) {
  if (rc != HK_OK) {
    fprintf(stderr, "error: %s: %s\n", hk_code_name(rc), st->message);
    exit(1);
  }
}

/* A step timer: the seconds from its before_run to its after_run. Placed
 * first (hooks_first), its before_run runs before every built-in hook's and
 * its after_run right after the program's step, before the checkpoint
 * saver's after_run writes: the time is the step's alone. */
typedef struct step_timer {
  double t0, total;
  long steps;
} step_timer;

static hk_code timer_before_run(void *user, hk_run_context *ctx, hk_run_request *req, hk_status *st) {
  step_timer *t = user;
  (void)ctx, (void)req, (void)st;
  t->t0 = hk_env_monotonic(NULL);
  return HK_OK;
}

static hk_code timer_after_run(void *user, hk_run_context *ctx, const hk_run_values *v, hk_status *st) {
  step_timer *t = user;
  (void)ctx, (void)v, (void)st;
  t->total += hk_env_monotonic(NULL) - t->t0;
  t->steps++;
  return HK_OK;
}

static const hk_hook_vtable timer_vtable = {
    .version = HK_HOOK_VTABLE_VERSION, .before_run = timer_before_run, .after_run = timer_after_run};

int main(int argc, char **argv) {
  float w = 0.0f;
  hk_status st = HK_STATUS_INIT;
  hk_loop *loop = NULL;
  step_timer timing = {0};
  hk_hook *timer = NULL, *limit = NULL;

  check(hk_hook_new(&timer, &timer_vtable, &timing, "step_timer", NULL, &st), &st);
  hk_time_limit_options to = HK_TIME_LIMIT_OPTIONS_INIT;
  to.duration_secs = 3.5 * 3600; /* stop cleanly well before a 4-hour job limit */
  check(hk_time_limit_hook_new(&limit, &to, &st), &st);

  hk_loop_options o = HK_LOOP_OPTIONS_INIT;
  o.checkpoint_dir = argc > 1 ? argv[1] : "run_control_ckpt";
  o.save_steps = 50;
  o.last_step = 200;
  o.hooks_first = &timer; /* before the NaN guard, StopAtStep, the StepCounter, the saver */
  o.nhooks_first = 1;
  o.hooks = &limit; /* after them */
  o.nhooks = 1;
  o.stop_signals = HK_SIGNAL_INT | HK_SIGNAL_TERM | HK_SIGNAL_HUP | HK_SIGNAL_USR1;
  check(hk_loop_new(&loop, &o, &st), &st);
  check(hk_loop_add_array(loop, "w", HK_DTYPE_F32, 0, NULL, &w, 0, &st), &st);
  check(hk_loop_start(loop, NULL, &st), &st);
  while (!hk_loop_should_stop(loop)) {
    check(hk_loop_step_begin(loop, NULL, &st), &st);
    w += 0.5f * (3.0f - w); /* the program's math */
    check(hk_loop_step_end(loop, &st), &st);
  }
  check(hk_loop_finish(loop, &st), &st);

  hk_stop_info why;
  hk_loop_stop_reason(&why, loop, NULL);
  printf("stopped: %s (%s) after %ld steps of %.1f us\n", hk_stop_reason_name(why.reason), why.detail, timing.steps,
         timing.steps ? timing.total * 1e6 / (double)timing.steps : 0.0);
  hk_loop_free(loop);
  hk_hook_free(limit);
  hk_hook_free(timer);
  return why.reason == HK_STOP_LAST_STEP ? 0 : 1;
}
