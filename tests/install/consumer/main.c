/*
 * The smallest complete hooked program: fit w so that (w - 3)^2 is minimal,
 * with a global step, a monitored session and a StopAtStep hook.
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

/* Kernel of the train op: output 0 is the loss before the update, and the
 * variable (the op's mutates[0]) takes one gradient-descent step. */
static hk_code sgd_step(void *user, hk_kernel_context *ctx, const hk_tensor *inputs, size_t ninputs, hk_tensor *outputs,
                        size_t noutputs, hk_status *status) {
  float *w = hk_kernel_context_variable(ctx, 0)->data;
  float diff = *w - 3.0f;
  (void)user;
  (void)inputs;
  (void)ninputs;
  (void)noutputs;
  (void)status;
  *(float *)outputs[0].data = diff * diff;
  *w -= 0.1f * 2.0f * diff;
  return HK_OK;
}

int main(void) {
  hk_status st = HK_STATUS_INIT;
  hk_graph *g = NULL;
  hk_handle gs, w, one, inc, train, loss;
  int64_t one_value = 1;
  hk_tensor one_tensor = hk_tensor_scalar_i64(&one_value);

  if (hk_version_number() != HOOKED_VERSION_NUMBER) {
    fprintf(stderr, "hooked.h is %s but the library is %s\n", HOOKED_VERSION_STRING, hk_version());
    return 1;
  }

  /* 1. The model: a global step, a variable w = 0, and a train op. */
  check(hk_graph_new(&g, NULL, &st), &st);
  check(hk_graph_create_global_step(g, &gs, &st), &st);

  hk_variable_def var = HK_VARIABLE_DEF_INIT;
  var.name = "w";
  var.dtype = HK_DTYPE_F32;
  var.rank = 0;
  var.init.kind = HK_INIT_ZEROS;
  check(hk_graph_variable(g, &w, &var, &st), &st);

  hk_output_spec scalar_f32 = {HK_DTYPE_F32, 0, {0}};
  hk_op_def op = HK_OP_DEF_INIT;
  op.name = "sgd";
  op.kernel = sgd_step;
  op.mutates = &w;
  op.nmutates = 1;
  op.outputs = &scalar_f32;
  op.noutputs = 1;
  check(hk_graph_op(g, &train, &op, &st), &st);
  check(hk_graph_op_output(g, &loss, train, 0, &st), &st);

  check(hk_graph_constant(g, &one, "one", &one_tensor, &st), &st);
  check(hk_graph_assign_add(g, &inc, "increment_global_step", gs, one, &st), &st);

  /* 2. Hooks: stop after 20 steps. */
  hk_hook *stop = NULL;
  hk_stop_at_step_options stop_opts = HK_STOP_AT_STEP_OPTIONS_INIT;
  stop_opts.num_steps = 20;
  check(hk_stop_at_step_hook_new(&stop, &stop_opts, &st), &st);

  /* 3. A monitored session over the graph's embedded executor. It runs the
   *    hooks' begin(), finalizes the graph and initializes the variables. */
  hk_session *sess = NULL;
  hk_session_options opts = HK_SESSION_OPTIONS_INIT;
  opts.executor = hk_graph_executor(g);
  opts.hooks = &stop;
  opts.nhooks = 1;
  check(hk_session_new(&sess, &opts, &st), &st);

  /* 4. The training loop: fetch the loss, run the increment as a target. */
  hk_run_args args = {NULL, 0, &loss, 1, &inc, 1, NULL};
  hk_tensor result;
  hk_code rc = HK_OK;
  int steps = 0;
  float first = -1.0f, last = -1.0f;
  while (!hk_session_should_stop(sess)) {
    rc = hk_session_run(sess, &args, &result, NULL, &st);
    if (rc != HK_OK) break;
    last = *(const float *)result.data;
    if (steps++ == 0) first = last;
  }
  if (rc != HK_OK) fprintf(stderr, "run failed: %s: %s\n", hk_code_name(rc), st.message);

  /* 5. Close with the loop's status (end() runs on every hook), then free:
   *    the session before the hooks and the graph it borrows. */
  hk_status close_st = HK_STATUS_INIT;
  hk_code close_rc = hk_session_close(sess, rc, &close_st);
  hk_session_free(sess);
  hk_hook_free(stop);
  hk_graph_free(g);
  check(close_rc, &close_st);

  printf("%d steps, loss %.4f -> %.6f\n", steps, first, last);
  return steps == 20 && last < first ? 0 : 1;
}
