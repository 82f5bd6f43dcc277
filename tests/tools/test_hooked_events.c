/*
 * Writes event files with hooked's own summary writer (hooked/summary.h) for
 * test_hooked_events.sh, which reads them back with hooked-events: the tool
 * and the writer must agree on the format.
 *
 *   test_hooked_events DIR
 *
 * DIR gets scalars "loss" (1 / step at steps 1..5, then NaN at step 6) and
 * "lr" (0.1 at steps 1..5), a histogram "weights" and a text "notes" (both
 * to be skipped); DIR/eval gets "accuracy" (step / 10 at steps 2 and 4).
 * Wall times come from a clock that starts at 1700000000 and advances 0.5 s
 * per reading, so the CSV is exact.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include <hooked/hooked.h>

#include <math.h>
#include <stdio.h>

static double fake_wall(void *user) {
  double *t = user;
  double now = *t;
  *t += 0.5;
  return now;
}

static int fail(const char *what, const hk_status *st) {
  fprintf(stderr, "test_hooked_events: %s: %s\n", what, st->message);
  return 1;
}

static int open_writer(hk_summary_writer **w, const hk_env *env, const char *dir) {
  hk_summary_writer_options o = HK_SUMMARY_WRITER_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  o.env = env;
  o.logdir = dir;
  return hk_summary_writer_new(w, &o, &st) == HK_OK ? 0 : fail(dir, &st);
}

int main(int argc, char **argv) {
  hk_env env = HK_ENV_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_summary_writer *w = NULL, *ev = NULL;
  double wall = 1700000000.0;
  float weights[4] = {0.5f, -1.0f, 2.0f, 0.25f};
  hk_tensor t;
  char eval_dir[4096];

  if (argc != 2) {
    fprintf(stderr, "usage: test_hooked_events DIR\n");
    return 2;
  }
  env.clock.wall = fake_wall;
  env.clock.user = &wall;
  snprintf(eval_dir, sizeof eval_dir, "%s/eval", argv[1]);
  if (open_writer(&w, &env, argv[1]) != 0 || open_writer(&ev, &env, eval_dir) != 0) return 1;
  for (int step = 1; step <= 5; step++) {
    if (hk_summary_writer_scalar(w, "loss", step, 1.0 / step, &st) != HK_OK) return fail("loss", &st);
    if (hk_summary_writer_scalar(w, "lr", step, 0.1, &st) != HK_OK) return fail("lr", &st);
  }
  if (hk_summary_writer_scalar(w, "loss", 6, NAN, &st) != HK_OK) return fail("loss", &st);
  if (hk_tensor_init(&t, HK_DTYPE_F32, 1, (int64_t[]){4}, weights, &st) != HK_OK) return fail("tensor", &st);
  if (hk_summary_writer_histogram(w, "weights", 6, &t, &st) != HK_OK) return fail("weights", &st);
  if (hk_summary_writer_text(w, "notes", 6, "a *text* summary", &st) != HK_OK) return fail("notes", &st);
  for (int step = 2; step <= 4; step += 2)
    if (hk_summary_writer_scalar(ev, "accuracy", step, step / 10.0, &st) != HK_OK) return fail("accuracy", &st);
  if (hk_summary_writer_close(w, &st) != HK_OK) return fail("close", &st);
  if (hk_summary_writer_close(ev, &st) != HK_OK) return fail("close eval", &st);
  hk_summary_writer_free(w);
  hk_summary_writer_free(ev);
  return 0;
}
