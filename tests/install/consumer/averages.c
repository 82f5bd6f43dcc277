/*
 * The moving average of the weights and the best weights at the end, on a
 * training loop of its own: SGD on noisy points of y = 3x - 1, with a
 * learning rate too large for its last steps. An ExponentialMovingAverage hook averages
 * "w" (exported at the end as a checkpoint of its own), and the loop keeps
 * the best checkpoint by a validation loss and restores it when training
 * ends. The README quotes it.
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

static float val_loss_of(const float w[2]) {
  float loss = 0.0f;
  for (int i = -4; i <= 4; i++) {
    float x = (float)i / 4.0f, err = w[0] * x + w[1] - (3.0f * x - 1.0f);
    loss += err * err / 9.0f;
  }
  return loss;
}

int main(int argc, char **argv) {
  float w[2] = {0.0f, 0.0f}, val_loss = 1e30f;
  int64_t step = 0, dims[1] = {2};
  uint64_t rng = 7;
  const char *dir = argc > 1 ? argv[1] : "averages_ckpt";
  char export_path[512];
  hk_status st = HK_STATUS_INIT;
  hk_loop *loop = NULL;
  hk_hook *ema = NULL;
  snprintf(export_path, sizeof export_path, "%s/ema", dir);

  hk_loop_options o = HK_LOOP_OPTIONS_INIT;
  o.checkpoint_dir = dir;
  o.save_steps = 50;
  o.last_step = 400;
  o.best_k = 1; /* keep the best checkpoint by val_loss ... */
  o.best_metric = "val_loss";
  o.restore_best = 1; /* ... and put it back into w at the end */
  check(hk_loop_new(&loop, &o, &st), &st);
  check(hk_loop_add_array(loop, "w", HK_DTYPE_F32, 1, dims, w, 0, &st), &st);
  check(hk_loop_add_array(loop, "val_loss", HK_DTYPE_F32, 0, NULL, &val_loss, HK_LOOP_NO_CHECKPOINT, &st), &st);

  const char *averaged[] = {"w"};
  hk_ema_options eo = HK_EMA_OPTIONS_INIT;
  eo.variables = averaged;
  eo.nvariables = 1;
  eo.decay = 0.9;
  eo.export_path = export_path; /* at the end: <dir>/ema.safetensors */
  check(hk_ema_hook_new(&ema, &eo, &st), &st);
  check(hk_loop_add_ema(loop, ema, &st), &st); /* shadows in every checkpoint */

  check(hk_loop_start(loop, &step, &st), &st);
  while (!hk_loop_should_stop(loop)) {
    check(hk_loop_step_begin(loop, &step, &st), &st);
    float lr = step < 300 ? 0.05f : 0.9f; /* too large at the end */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    float x = (float)(rng >> 40) / (float)(1 << 24) * 2.0f - 1.0f, noise = (float)(rng & 0xff) / 255.0f - 0.5f;
    float err = w[0] * x + w[1] - (3.0f * x - 1.0f + noise);
    w[0] -= lr * err * x;
    w[1] -= lr * err;
    val_loss = val_loss_of(w); /* what the next save is ranked by */
    check(hk_loop_step_end(loop, &st), &st);
  }
  check(hk_loop_finish(loop, &st), &st); /* the final checkpoint, then the best weights back in w */

  hk_tensor avg;
  check(hk_ema_hook_average(&avg, ema, "w", &st), &st);
  const float *a = avg.data;
  printf("best w = %.4f, b = %.4f (val_loss %.6f); average w = %.4f, b = %.4f\n", w[0], w[1], val_loss_of(w), a[0],
         a[1]);
  hk_loop_free(loop);
  hk_hook_free(ema);
  return 0;
}
