/*
 * The smallest trainer on hooked's graph executor. A train op (a C kernel) fits y = 2x + 1 to 8 fixed points
 * by SGD; a MonitoredTrainingSession restores the newest checkpoint in CHECKPOINT_DIR, saves one every 100
 * steps and at the end, stops at step 1000, and stops after the current step on Ctrl-C or SIGTERM.
 * Usage: minimal_graph CHECKPOINT_DIR. Run it twice: the second run resumes at step 1000.
 */
#include <hooked/hooked.h>
#include <stdio.h>
#include <stdlib.h>

/* After a failed call: print the library's message and exit non-zero. */
static void check(hk_code rc, const hk_status *st) {
  if (rc == HK_OK) return;
  fprintf(stderr, "minimal_graph: %s: %s\n", hk_code_name(rc), st->message);
  exit(1);
}

/* The train op: an SGD step on wb = {w, b} (mutates[0]) over x = -1, -0.75, ..., 0.75; global step (mutates[1]) + 1 */
static hk_code sgd_step(void *user, hk_kernel_context *ctx, const hk_tensor *in, size_t nin, hk_tensor *out,
                        size_t nout, hk_status *status) {
  float *wb = hk_kernel_context_variable(ctx, 0)->data, gw = 0, gb = 0, loss = 0;
  (void)user, (void)in, (void)nin, (void)nout, (void)status;
  for (int i = 0; i < 8; i++) {
    float x = i / 4.0f - 1, err = wb[0] * x + wb[1] - (2 * x + 1);
    loss += err * err / 8, gw += err * x / 4, gb += err / 4;
  }
  wb[0] -= 0.02f * gw, wb[1] -= 0.02f * gb;
  *(float *)out[0].data = loss;
  *(int64_t *)out[1].data = ++*(int64_t *)hk_kernel_context_variable(ctx, 1)->data;
  return HK_OK;
}

int main(int argc, char **argv) {
  float wb[2] = {0, 0}; /* the model, y = wb[0] x + wb[1]: the graph restores and trains it in place */
  hk_handle vars[2], train, fetches[2];
  hk_status st = HK_STATUS_INIT;
  hk_graph *g = NULL;
  hk_hook *stop = NULL;
  hk_session *s = NULL;
  if (argc != 2) {
    fprintf(stderr, "usage: minimal_graph CHECKPOINT_DIR\n");
    return 2;
  }
  hk_variable_def var = HK_VARIABLE_DEF_INIT;
  var.name = "wb", var.dtype = HK_DTYPE_F32, var.rank = 1, var.dims = (int64_t[]){2}, var.external_data = wb;
  hk_output_spec outputs[2] = {{HK_DTYPE_F32, 0, {0}}, {HK_DTYPE_I64, 0, {0}}}; /* the loss, the new step */
  hk_op_def op = HK_OP_DEF_INIT;
  op.name = "sgd", op.kernel = sgd_step, op.mutates = vars, op.nmutates = 2, op.outputs = outputs, op.noutputs = 2;
  check(hk_graph_new(&g, NULL, &st), &st);
  check(hk_graph_variable(g, &vars[0], &var, &st), &st);
  check(hk_graph_create_global_step(g, &vars[1], &st), &st);
  check(hk_graph_op(g, &train, &op, &st), &st);
  check(hk_graph_op_output(g, &fetches[0], train, 0, &st), &st);
  check(hk_graph_op_output(g, &fetches[1], train, 1, &st), &st);

  hk_stop_at_step_options so = HK_STOP_AT_STEP_OPTIONS_INIT;
  so.last_step = 1000;
  hk_training_session_options to = HK_TRAINING_SESSION_OPTIONS_INIT;
  to.executor = hk_graph_executor(g), to.checkpoint_dir = argv[1], to.save_checkpoint_steps = 100;
  to.hooks = &stop, to.nhooks = 1;
  check(hk_stop_at_step_hook_new(&stop, &so, &st), &st);
  check(hk_signal_install(&st), &st);                /* SIGINT, SIGTERM: a clean stop */
  check(hk_training_session_new(&s, &to, &st), &st); /* restores wb and the step, or initializes */

  hk_run_args args = {NULL, 0, fetches, 2, NULL, 0, NULL}; /* fetch the loss and the step */
  hk_tensor out[2];
  hk_code rc = HK_OK;
  while (rc == HK_OK && !hk_session_should_stop(s))
    if ((rc = hk_session_run(s, &args, out, NULL, &st)) == HK_OK && *(int64_t *)out[1].data % 200 == 0)
      printf("step %lld: loss %.3g\n", (long long)*(int64_t *)out[1].data, *(float *)out[0].data);

  hk_code close_rc = hk_session_close(s, rc, rc == HK_OK ? &st : NULL); /* every end(): the final checkpoint */
  hk_session_free(s);
  hk_hook_free(stop);
  hk_graph_free(g);
  check(rc != HK_OK ? rc : close_rc, &st); /* a failed step's error, else the close's */
  printf("y = %.4f x + %.4f\n", wb[0], wb[1]);
  return 0;
}
