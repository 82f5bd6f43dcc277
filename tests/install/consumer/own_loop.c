/*
 * A training loop that owns its arrays, its math and its random numbers —
 * fitting y = 3x - 1 by SGD on points it draws itself — with hooked added
 * around it: the lines marked "hooked" resume from the newest checkpoint
 * that verifies, checkpoint every 100 steps and at the end, and stop
 * cleanly on Ctrl-C or SIGTERM. Run it twice: the second run resumes.
 */
#include <hooked/hooked.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check(hk_code rc, const hk_status *st) {
  if (rc != HK_OK) {
    fprintf(stderr, "error: %s: %s\n", hk_code_name(rc), st->message);
    exit(1);
  }
}

/* The program's own random numbers (xorshift64): state the checkpoint must
 * hold too, or a resumed run would draw different points. */
static float uniform(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return (float)(*s >> 40) / (float)(1 << 24);
}

static hk_code save_rng(void *user, void *dst, size_t size, hk_status *st) {
  (void)st;
  memcpy(dst, user, size);
  return HK_OK;
}

static hk_code load_rng(void *user, const void *src, size_t size, hk_status *st) {
  (void)st;
  memcpy(user, src, size);
  return HK_OK;
}

int main(int argc, char **argv) {
  float w[2] = {0.0f, 0.0f}; /* the model: y = w[0] * x + w[1] */
  float loss = 0.0f;
  uint64_t rng = 42;
  int64_t step = 0, dims[1] = {2};
  hk_status st = HK_STATUS_INIT;
  hk_loop *loop = NULL;

  hk_loop_options o = HK_LOOP_OPTIONS_INIT;                                                              /* hooked */
  o.checkpoint_dir = argc > 1 ? argv[1] : "own_loop_ckpt";                                               /* hooked */
  o.save_steps = 100;                                                                                    /* hooked */
  o.last_step = 500;                                                                                     /* hooked */
  check(hk_loop_new(&loop, &o, &st), &st);                                                               /* hooked */
  check(hk_loop_add_array(loop, "w", HK_DTYPE_F32, 1, dims, w, 0, &st), &st);                            /* hooked */
  check(hk_loop_add_array(loop, "loss", HK_DTYPE_F32, 0, NULL, &loss, HK_LOOP_NO_CHECKPOINT, &st), &st); /* hooked */
  check(hk_loop_add_state(loop, "rng", sizeof rng, save_rng, load_rng, &rng, 0, &st), &st);              /* hooked */
  check(hk_loop_start(loop, &step, &st), &st);                                                           /* hooked */
  printf("starting at step %lld\n", (long long)step);

  while (!hk_loop_should_stop(loop)) {                /* hooked */
    check(hk_loop_step_begin(loop, &step, &st), &st); /* hooked */
    /* One SGD step on a batch of 8 fresh points: the program's own math. */
    float g0 = 0.0f, g1 = 0.0f;
    loss = 0.0f;
    for (int i = 0; i < 8; i++) {
      float x = uniform(&rng) * 2.0f - 1.0f, y = 3.0f * x - 1.0f;
      float err = w[0] * x + w[1] - y;
      loss += err * err / 8.0f;
      g0 += err * x / 4.0f;
      g1 += err / 4.0f;
    }
    w[0] -= 0.1f * g0;
    w[1] -= 0.1f * g1;
    check(hk_loop_step_end(loop, &st), &st); /* hooked */
  }
  check(hk_loop_finish(loop, &st), &st); /* hooked */
  printf("step %lld: w = %.4f, b = %.4f, loss %.6f\n", (long long)hk_loop_global_step(loop), w[0], w[1], loss);
  hk_loop_free(loop); /* hooked */
  return 0;
}
