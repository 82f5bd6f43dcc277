/*
 * The smallest trainer on hooked's host loop. The program owns its model (y = w x + b), its math and its
 * random numbers, and fits y = 2x + 1 by SGD on points it draws itself. The lines marked "hooked" add what a
 * training job needs: resume from the newest checkpoint in CHECKPOINT_DIR, a checkpoint every 100 steps and
 * at the end, a stop at step 1000, and a stop after the current step on Ctrl-C or SIGTERM.
 * Usage: minimal_host_loop CHECKPOINT_DIR. Run it twice: the second run resumes at step 1000.
 */
#include <hooked/hooked.h>
#include <stdio.h>
#include <string.h>

/* The program's random numbers (xorshift64): uniform between -1 and 1. */
static float uniform(uint64_t *s) {
  *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
  return (float)(*s >> 40) / (1 << 23) - 1;
}

/* The RNG's state goes into every checkpoint through these two: without it a resumed run would draw
 * other points than an uninterrupted one. */
static hk_code save_rng(void *rng, void *dst, size_t size, hk_status *st) {
  (void)st;
  memcpy(dst, rng, size);
  return HK_OK;
}
static hk_code load_rng(void *rng, const void *src, size_t size, hk_status *st) {
  (void)st;
  memcpy(rng, src, size);
  return HK_OK;
}

/* After a failed call: print the library's message; return the exit status. */
static int fail(const hk_status *st) {
  fprintf(stderr, "minimal_host_loop: %s: %s\n", hk_code_name(st->code), st->message);
  return 1;
}

int main(int argc, char **argv) {
  float wb[2] = {0, 0}; /* the model: y = wb[0] x + wb[1] */
  uint64_t rng = 42;    /* the program's random numbers */
  int64_t step = 0;
  hk_status st = HK_STATUS_INIT;
  hk_loop *loop = NULL;
  if (argc != 2) {
    fprintf(stderr, "usage: minimal_host_loop CHECKPOINT_DIR\n");
    return 2;
  }
  hk_loop_options o = HK_LOOP_OPTIONS_INIT;                           /* hooked */
  o.checkpoint_dir = argv[1], o.save_steps = 100, o.last_step = 1000; /* hooked */
  if (hk_loop_new(&loop, &o, &st) != HK_OK) return fail(&st);         /* hooked */
  /* From here on errors are sticky: after a failed call every later one fails, and hk_loop_finish() returns it. */
  hk_loop_add_array(loop, "wb", HK_DTYPE_F32, 1, (int64_t[]){2}, wb, 0, &st);   /* hooked */
  hk_loop_add_state(loop, "rng", sizeof rng, save_rng, load_rng, &rng, 0, &st); /* hooked */
  if (hk_loop_start(loop, &step, &st) == HK_OK) /* hooked: restores wb and rng, or keeps them */
    printf("starting at step %lld\n", (long long)step);

  while (!hk_loop_should_stop(loop) && hk_loop_step_begin(loop, &step, &st) == HK_OK) { /* hooked */
    float gw = 0, gb = 0, loss = 0; /* one SGD step on 8 fresh points: the program's own math */
    for (int i = 0; i < 8; i++) {
      float x = uniform(&rng), err = wb[0] * x + wb[1] - (2 * x + 1);
      loss += err * err / 8, gw += err * x / 4, gb += err / 4;
    }
    wb[0] -= 0.02f * gw, wb[1] -= 0.02f * gb;
    hk_loop_step_end(loop, &st); /* hooked: step + 1 is done; a checkpoint when one is due */
    if (++step % 200 == 0) printf("step %lld: loss %.3g\n", (long long)step, loss);
  }
  hk_code rc = hk_loop_finish(loop, &st); /* hooked: the final checkpoint, or the first error */
  hk_loop_free(loop);                     /* hooked */
  if (rc != HK_OK) return fail(&st);      /* hooked */
  printf("y = %.4f x + %.4f\n", wb[0], wb[1]);
  return 0;
}
