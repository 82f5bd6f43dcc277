/*
 * Tests of the second-or-step timer (contract group H: C75–C79, H25, D9).
 * Pure: every clock read goes to the mock clock of test_env.
 */
#include "test_env.h"

#include <math.h>
#include <string.h>
#include <time.h>

static int setup(void **state) {
  *state = test_env_new();
  return 0;
}

static int teardown(void **state) {
  test_env_free(*state);
  return 0;
}

/* C75: neither cadence. */
static void test_timer__neither_cadence_is_invalid_argument(void **state) {
  test_env *te = *state;
  hk_timer t;
  hk_status st = HK_STATUS_INIT;
  hk_code rc = hk_timer_init(&t, HK_UNSET_SECS, HK_UNSET_STEPS, NULL, NULL, &te->env.clock, &st);
  assert_status(rc, &st, HK_INVALID_ARGUMENT, "Either every_secs or every_steps should be provided.");
}

/* C75, D9: both given, whatever the values (0 included). */
static void test_timer__both_cadences_are_invalid_argument(void **state) {
  test_env *te = *state;
  hk_timer t;
  hk_status st = HK_STATUS_INIT;
  hk_code rc = hk_timer_init(&t, 10.0, 5, NULL, NULL, &te->env.clock, &st);
  assert_status(rc, &st, HK_INVALID_ARGUMENT, "Can not provide both every_secs and every_steps.");
  rc = hk_timer_init(&t, 0.0, 0, NULL, NULL, &te->env.clock, &st);
  assert_status(rc, &st, HK_INVALID_ARGUMENT, "Can not provide both every_secs and every_steps.");
}

/* D9: components name the options as their callers spell them. */
static void test_timer__messages_name_the_options_as_the_caller_spells_them(void **state) {
  test_env *te = *state;
  hk_timer t;
  hk_status st = HK_STATUS_INIT;
  hk_code rc = hk_timer_init(&t, 1.0, 1, "save_secs", "save_steps", &te->env.clock, &st);
  assert_status(rc, &st, HK_INVALID_ARGUMENT, "Can not provide both save_secs and save_steps.");
  rc = hk_timer_init(&t, HK_UNSET_SECS, HK_UNSET_STEPS, "every_n_secs", "every_n_steps", NULL, &st);
  assert_status(rc, &st, HK_INVALID_ARGUMENT, "Either every_n_secs or every_n_steps should be provided.");
  rc = hk_timer_init(&t, HK_UNSET_SECS, 0, "save_secs", "save_steps", NULL, &st);
  assert_status(rc, &st, HK_INVALID_ARGUMENT, "save_steps");
  rc = hk_timer_init(&t, -1.0, HK_UNSET_STEPS, "save_secs", "save_steps", NULL, &st);
  assert_status(rc, &st, HK_INVALID_ARGUMENT, "save_secs");
}

/* H25: zero, negative, NaN and infinite cadences are refused, naming the option. */
static void test_timer__zero_negative_nan_and_infinite_cadences_are_refused(void **state) {
  test_env *te = *state;
  hk_timer t;
  hk_status st = HK_STATUS_INIT;
  const int64_t bad_steps[] = {0, -1, -100};
  const double bad_secs[] = {0.0, -0.5, NAN, INFINITY};
  size_t i;

  for (i = 0; i < sizeof(bad_steps) / sizeof(bad_steps[0]); i++) {
    hk_code rc = hk_timer_init(&t, HK_UNSET_SECS, bad_steps[i], NULL, NULL, &te->env.clock, &st);
    assert_status(rc, &st, HK_INVALID_ARGUMENT, "every_steps");
  }
  for (i = 0; i < sizeof(bad_secs) / sizeof(bad_secs[0]); i++) {
    hk_code rc = hk_timer_init(&t, bad_secs[i], HK_UNSET_STEPS, NULL, NULL, &te->env.clock, &st);
    assert_status(rc, &st, HK_INVALID_ARGUMENT, "every_secs");
  }
}

/* H3: a NULL timer is refused, not dereferenced. */
static void test_timer__a_null_timer_is_refused(void **state) {
  hk_status st = HK_STATUS_INIT;
  hk_code rc = hk_timer_init(NULL, HK_UNSET_SECS, 1, NULL, NULL, NULL, &st);
  (void)state;
  assert_status(rc, &st, HK_INVALID_ARGUMENT, "t");
  assert_false(hk_timer_should_trigger(NULL, 0));
  assert_false(hk_timer_update(NULL, 0, NULL, NULL));
  assert_false(hk_timer_last_triggered_step(NULL, NULL));
}

/* C76: step cadence. */
static void test_timer__triggers_every_n_steps(void **state) {
  test_env *te = *state;
  hk_timer t;
  hk_status st = HK_STATUS_INIT;
  int64_t s;

  assert_ok(hk_timer_init(&t, HK_UNSET_SECS, 10, NULL, NULL, &te->env.clock, &st), &st);
  assert_true(hk_timer_should_trigger(&t, 0));   /* never triggered */
  assert_true(hk_timer_should_trigger(&t, 123)); /* still never triggered */
  hk_timer_update(&t, 5, NULL, NULL);
  assert_false(hk_timer_should_trigger(&t, 5)); /* same step */
  for (s = 6; s < 15; s++) assert_false(hk_timer_should_trigger(&t, s));
  assert_true(hk_timer_should_trigger(&t, 15));
  assert_true(hk_timer_should_trigger(&t, 40));
  /* Time alone never triggers a step timer. */
  test_clock_advance(&te->clock, 1e6);
  assert_false(hk_timer_should_trigger(&t, 6));
  /* A step below the last trigger (a re-created session starting over) does not trigger. */
  assert_false(hk_timer_should_trigger(&t, 0));
}

/* C76: seconds cadence, measured on the injected clock. */
static void test_timer__triggers_every_n_seconds_on_the_injected_clock(void **state) {
  test_env *te = *state;
  hk_timer t;
  hk_status st = HK_STATUS_INIT;

  assert_ok(hk_timer_init(&t, 10.0, HK_UNSET_STEPS, NULL, NULL, &te->env.clock, &st), &st);
  assert_true(hk_timer_should_trigger(&t, 0));
  hk_timer_update(&t, 0, NULL, NULL);
  assert_false(hk_timer_should_trigger(&t, 1000)); /* steps alone never trigger */
  test_clock_advance(&te->clock, 9.5);
  assert_false(hk_timer_should_trigger(&t, 1));
  test_clock_advance(&te->clock, 0.5);
  assert_true(hk_timer_should_trigger(&t, 1));  /* now >= last + every_secs */
  assert_false(hk_timer_should_trigger(&t, 0)); /* the last triggered step wins over time */
}

/* C77: update returns the elapsed time and steps since the previous update. */
static void test_timer__update_returns_the_time_and_steps_since_the_last(void **state) {
  test_env *te = *state;
  hk_timer t;
  hk_status st = HK_STATUS_INIT;
  double secs = -1;
  int64_t steps = -1;

  assert_ok(hk_timer_init(&t, HK_UNSET_SECS, 1, NULL, NULL, &te->env.clock, &st), &st);
  assert_false(hk_timer_update(&t, 3, &secs, &steps)); /* first update: none */
  assert_true(secs == -1);
  assert_int_equal(steps, -1);
  test_clock_advance(&te->clock, 2.5);
  assert_true(hk_timer_update(&t, 10, &secs, &steps));
  assert_true(fabs(secs - 2.5) < 1e-9);
  assert_int_equal(steps, 7);
  test_clock_advance(&te->clock, 1.0);
  assert_true(hk_timer_update(&t, 11, NULL, &steps)); /* NULL outputs allowed */
  assert_int_equal(steps, 1);
}

/* C78: reset forgets the trigger; last_triggered_step is none until the first update. */
static void test_timer__reset_forgets_the_last_trigger(void **state) {
  test_env *te = *state;
  hk_timer t;
  hk_status st = HK_STATUS_INIT;
  int64_t last = -7;

  assert_ok(hk_timer_init(&t, HK_UNSET_SECS, 100, NULL, NULL, &te->env.clock, &st), &st);
  assert_false(hk_timer_last_triggered_step(&t, &last));
  assert_int_equal(last, -7);
  hk_timer_update(&t, 42, NULL, NULL);
  assert_true(hk_timer_last_triggered_step(&t, &last));
  assert_int_equal(last, 42);
  assert_false(hk_timer_should_trigger(&t, 43));
  hk_timer_reset(&t);
  assert_false(hk_timer_last_triggered_step(&t, &last));
  assert_true(hk_timer_should_trigger(&t, 43));
  assert_false(hk_timer_update(&t, 50, NULL, NULL)); /* first update again */
}

/* C79: a never-trigger timer. */
static void test_timer__a_never_trigger_timer_never_triggers(void **state) {
  hk_timer t;
  int64_t last = -1;
  double secs = -1;

  (void)state;
  hk_timer_init_never(&t);
  assert_false(hk_timer_should_trigger(&t, 0));
  assert_false(hk_timer_update(&t, 5, &secs, NULL));
  assert_false(hk_timer_update(&t, 9, &secs, NULL));
  assert_true(secs == -1);
  assert_false(hk_timer_last_triggered_step(&t, &last));
  assert_false(hk_timer_should_trigger(&t, 1000000));
}

/* H5: a NULL clock means the system clock: time moves on its own. */
static void test_timer__a_null_clock_is_the_system_clock(void **state) {
  hk_timer t;
  hk_status st = HK_STATUS_INIT;
  double secs = -1;

  int i, fired = 0;

  (void)state;
  assert_ok(hk_timer_init(&t, 0.001, HK_UNSET_STEPS, NULL, NULL, NULL, &st), &st);
  hk_timer_update(&t, 0, NULL, NULL);
  for (i = 0; i < 5000 && !fired; i++) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
    fired = hk_timer_should_trigger(&t, 1);
  }
  assert_true(fired);
  assert_true(hk_timer_update(&t, 1, &secs, NULL));
  assert_true(secs >= 0.001);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_timer__neither_cadence_is_invalid_argument, setup, teardown),
      cmocka_unit_test_setup_teardown(test_timer__both_cadences_are_invalid_argument, setup, teardown),
      cmocka_unit_test_setup_teardown(test_timer__messages_name_the_options_as_the_caller_spells_them, setup, teardown),
      cmocka_unit_test_setup_teardown(test_timer__zero_negative_nan_and_infinite_cadences_are_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_timer__a_null_timer_is_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_timer__triggers_every_n_steps, setup, teardown),
      cmocka_unit_test_setup_teardown(test_timer__triggers_every_n_seconds_on_the_injected_clock, setup, teardown),
      cmocka_unit_test_setup_teardown(test_timer__update_returns_the_time_and_steps_since_the_last, setup, teardown),
      cmocka_unit_test_setup_teardown(test_timer__reset_forgets_the_last_trigger, setup, teardown),
      cmocka_unit_test_setup_teardown(test_timer__a_never_trigger_timer_never_triggers, setup, teardown),
      cmocka_unit_test_setup_teardown(test_timer__a_null_clock_is_the_system_clock, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
