/*
 * What the session test programs share (session_tests.h).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "session_tests.h"

int setup_kind(void **state, hk_session_kind kind) {
  fixture *f = session_fixture_new(kind, 3);
  f->x = fake_executor_add_i64(f->fx, "x", 7);
  f->y = fake_executor_add_i64(f->fx, "y:0", 8);
  f->p = fake_executor_add_i64(f->fx, "p", 0);
  f->q = fake_executor_add_i64(f->fx, "q", 0);
  *state = f;
  return 0;
}

int setup_ms(void **state) { return setup_kind(state, HK_SESSION_MONITORED); }
int setup_sms(void **state) { return setup_kind(state, HK_SESSION_SINGULAR); }
