/*
 * What the session test programs (test_session_*.c) share: the fixture of
 * a session over the fake executor with three spy hooks and the i64
 * tensors x, y:0, p and q, set up once per session kind (MS and SMS).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_TESTS_UNIT_SESSION_TESTS_H
#define HOOKED_TESTS_UNIT_SESSION_TESTS_H

#include "session_fixture.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef session_fixture fixture;

/* cmocka setups (session_tests.c): setup_ms and setup_sms make the fixture
 * for a monitored and a singular session. */
int setup_kind(void **state, hk_session_kind kind);
int setup_ms(void **state);
int setup_sms(void **state);

/* The test array's entries: a test for both kinds, or for one. */
#define BOTH(fn)                                                           \
  cmocka_unit_test_setup_teardown(fn, setup_ms, session_fixture_teardown), \
      cmocka_unit_test_setup_teardown(fn, setup_sms, session_fixture_teardown)
#define MS(fn) cmocka_unit_test_setup_teardown(fn, setup_ms, session_fixture_teardown)
#define SMS(fn) cmocka_unit_test_setup_teardown(fn, setup_sms, session_fixture_teardown)

#endif /* HOOKED_TESTS_UNIT_SESSION_TESTS_H */
