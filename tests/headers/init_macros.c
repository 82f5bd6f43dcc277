/*
 * Expands every public _INIT macro, so the header test proves they are valid
 * initializers in C11 and in C++17 (-Wall -Wextra -Wpedantic -Werror).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "hooked/hooked.h"

int hk_headertest_init_macros(void);

int hk_headertest_init_macros(void) {
  hk_status st = HK_STATUS_INIT;
  hk_env env = HK_ENV_INIT;
  hk_graph_options graph = HK_GRAPH_OPTIONS_INIT;
  hk_variable_def var = HK_VARIABLE_DEF_INIT;
  hk_op_def op = HK_OP_DEF_INIT;
  hk_run_options run = HK_RUN_OPTIONS_INIT;
  hk_run_metadata md = HK_RUN_METADATA_INIT;
  hk_scaffold_options scaffold = HK_SCAFFOLD_OPTIONS_INIT;
  hk_session_manager_options manager = HK_SESSION_MANAGER_OPTIONS_INIT;
  hk_prepare_options prepare = HK_PREPARE_OPTIONS_INIT;
  hk_session_options session = HK_SESSION_OPTIONS_INIT;
  hk_stop_at_step_options stop = HK_STOP_AT_STEP_OPTIONS_INIT;
  hk_global_step_waiter_options waiter = HK_GLOBAL_STEP_WAITER_OPTIONS_INIT;
  hk_learning_rate_options lr = HK_LEARNING_RATE_OPTIONS_INIT;
  hk_time_limit_options limit = HK_TIME_LIMIT_OPTIONS_INIT;
  hk_handle none = HK_NO_HANDLE;

  /* Use every object so no -Wunused-variable fires. */
  return (int)st.code + (int)env.version + (int)graph.version + (int)var.version + (int)op.version + (int)run.version +
         (int)md.version + (int)scaffold.version + (int)manager.version + (int)prepare.version + (int)session.version +
         (int)stop.version + (int)waiter.version + (int)lr.version + (int)limit.version + (int)none +
         (hk_secs_is_unset(waiter.deadline_secs) ? 1 : 0) + (stop.num_steps == HK_UNSET_STEPS ? 1 : 0) +
         HOOKED_VERSION_NUMBER;
}
