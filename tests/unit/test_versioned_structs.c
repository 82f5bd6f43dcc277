/*
 * The one version rule for versioned structs (contract H10): every options
 * struct's _init fills the whole struct for its current version and
 * refuses version 0 or a version above it without writing; every consumer
 * refuses such a struct with INVALID_ARGUMENT naming it; and the helper
 * behind both, hk_struct_init() and hk_struct_check_version(), says so.
 */
#include "test_env.h"

#include <string.h>

typedef hk_code (*init_fn)(void *opts, uint32_t version);

typedef struct {
  const char *name;
  size_t size;
  uint32_t current;
  init_fn init;
} versioned;

/* Each _init through a common signature. */
#define WRAP(type, fn) \
  static hk_code init_##type(void *opts, uint32_t version) { return fn((type *)opts, version); }
WRAP(hk_env, hk_env_init)
WRAP(hk_graph_options, hk_graph_options_init)
WRAP(hk_run_options, hk_run_options_init)
WRAP(hk_saver_options, hk_saver_options_init)
WRAP(hk_scaffold_options, hk_scaffold_options_init)
WRAP(hk_session_manager_options, hk_session_manager_options_init)
WRAP(hk_prepare_options, hk_prepare_options_init)
WRAP(hk_session_options, hk_session_options_init)
WRAP(hk_training_session_options, hk_training_session_options_init)
WRAP(hk_loop_options, hk_loop_options_init)
WRAP(hk_summary_writer_options, hk_summary_writer_options_init)
WRAP(hk_stop_at_step_options, hk_stop_at_step_options_init)
WRAP(hk_progress_options, hk_progress_options_init)
WRAP(hk_global_step_waiter_options, hk_global_step_waiter_options_init)
WRAP(hk_logging_tensor_options, hk_logging_tensor_options_init)
WRAP(hk_nan_tensor_options, hk_nan_tensor_options_init)
WRAP(hk_final_ops_options, hk_final_ops_options_init)
WRAP(hk_feed_fn_options, hk_feed_fn_options_init)
WRAP(hk_checkpoint_saver_options, hk_checkpoint_saver_options_init)
WRAP(hk_step_counter_options, hk_step_counter_options_init)
WRAP(hk_summary_saver_options, hk_summary_saver_options_init)
WRAP(hk_early_stopping_options, hk_early_stopping_options_init)
WRAP(hk_profiler_options, hk_profiler_options_init)
WRAP(hk_time_limit_options, hk_time_limit_options_init)

#define VERSIONED(type, current) \
  { #type, sizeof(type), (current), init_##type }

static const versioned every_options_struct[] = {
    VERSIONED(hk_env, HK_ENV_VERSION),
    VERSIONED(hk_graph_options, HK_GRAPH_OPTIONS_VERSION),
    VERSIONED(hk_run_options, HK_RUN_OPTIONS_VERSION),
    VERSIONED(hk_saver_options, HK_SAVER_OPTIONS_VERSION),
    VERSIONED(hk_scaffold_options, HK_SCAFFOLD_OPTIONS_VERSION),
    VERSIONED(hk_session_manager_options, HK_SESSION_MANAGER_OPTIONS_VERSION),
    VERSIONED(hk_prepare_options, HK_PREPARE_OPTIONS_VERSION),
    VERSIONED(hk_session_options, HK_SESSION_OPTIONS_VERSION),
    VERSIONED(hk_training_session_options, HK_TRAINING_SESSION_OPTIONS_VERSION),
    VERSIONED(hk_loop_options, HK_LOOP_OPTIONS_VERSION),
    VERSIONED(hk_summary_writer_options, HK_SUMMARY_WRITER_OPTIONS_VERSION),
    VERSIONED(hk_stop_at_step_options, HK_STOP_AT_STEP_OPTIONS_VERSION),
    VERSIONED(hk_progress_options, HK_PROGRESS_OPTIONS_VERSION),
    VERSIONED(hk_global_step_waiter_options, HK_GLOBAL_STEP_WAITER_OPTIONS_VERSION),
    VERSIONED(hk_logging_tensor_options, HK_LOGGING_TENSOR_OPTIONS_VERSION),
    VERSIONED(hk_nan_tensor_options, HK_NAN_TENSOR_OPTIONS_VERSION),
    VERSIONED(hk_final_ops_options, HK_FINAL_OPS_OPTIONS_VERSION),
    VERSIONED(hk_feed_fn_options, HK_FEED_FN_OPTIONS_VERSION),
    VERSIONED(hk_checkpoint_saver_options, HK_CHECKPOINT_SAVER_OPTIONS_VERSION),
    VERSIONED(hk_step_counter_options, HK_STEP_COUNTER_OPTIONS_VERSION),
    VERSIONED(hk_summary_saver_options, HK_SUMMARY_SAVER_OPTIONS_VERSION),
    VERSIONED(hk_early_stopping_options, HK_EARLY_STOPPING_OPTIONS_VERSION),
    VERSIONED(hk_profiler_options, HK_PROFILER_OPTIONS_VERSION),
    VERSIONED(hk_time_limit_options, HK_TIME_LIMIT_OPTIONS_VERSION),
};

#define NSTRUCTS (sizeof every_options_struct / sizeof every_options_struct[0])
#define BIGGEST 4096

/* No release had another version: every struct is at version 1. */
static void test_versioned_structs__every_options_struct_is_at_version_1(void **state) {
  (void)state;
  for (size_t i = 0; i < NSTRUCTS; i++) {
    if (every_options_struct[i].current != 1)
      fail_msg("%s is at version %u", every_options_struct[i].name, (unsigned)every_options_struct[i].current);
  }
}

/* _init of the current version writes every byte (two buffers filled
 * differently come out the same) and sets the version. */
static void test_versioned_structs__init_fills_the_whole_struct(void **state) {
  (void)state;
  static unsigned char a[BIGGEST], b[BIGGEST];
  for (size_t i = 0; i < NSTRUCTS; i++) {
    const versioned *v = &every_options_struct[i];
    uint32_t version;
    assert_true(v->size <= BIGGEST);
    memset(a, 0x00, v->size);
    memset(b, 0xff, v->size);
    assert_int_equal(v->init(a, v->current), HK_OK);
    assert_int_equal(v->init(b, v->current), HK_OK);
    if (memcmp(a, b, v->size) != 0) fail_msg("%s_init left bytes unwritten", v->name);
    memcpy(&version, a, sizeof version);
    assert_int_equal(version, v->current);
  }
}

/* _init of version 0 or of a version above the current one, or of a NULL
 * struct, returns INVALID_ARGUMENT and writes nothing. */
static void test_versioned_structs__init_refuses_another_version_without_writing(void **state) {
  (void)state;
  static unsigned char buf[BIGGEST], copy[BIGGEST];
  for (size_t i = 0; i < NSTRUCTS; i++) {
    const versioned *v = &every_options_struct[i];
    memset(buf, 0x5a, v->size);
    memcpy(copy, buf, v->size);
    assert_int_equal(v->init(buf, 0), HK_INVALID_ARGUMENT);
    assert_int_equal(v->init(buf, v->current + 1), HK_INVALID_ARGUMENT);
    assert_int_equal(v->init(buf, UINT32_MAX), HK_INVALID_ARGUMENT);
    if (memcmp(buf, copy, v->size) != 0) fail_msg("%s_init wrote into a struct it refused", v->name);
    assert_int_equal(v->init(NULL, v->current), HK_INVALID_ARGUMENT);
  }
}

/* The helper's own rule and message. */
static void test_versioned_structs__check_names_the_struct_and_its_versions(void **state) {
  (void)state;
  hk_status st = HK_STATUS_INIT;
  hk_loop_options o = HK_LOOP_OPTIONS_INIT;
  assert_int_equal(hk_struct_check_version(&o, HK_LOOP_OPTIONS_VERSION, "hk_loop_options", "f: opts", &st), HK_OK);
  assert_int_equal(hk_struct_check_version(NULL, 1, "hk_loop_options", "f: opts", &st), HK_OK);
  o.version = 0;
  assert_status(hk_struct_check_version(&o, HK_LOOP_OPTIONS_VERSION, "hk_loop_options", "f: opts", &st), &st,
                HK_INVALID_ARGUMENT,
                "f: opts->version: version 0 of hk_loop_options is not one this library knows (1 to 1)");
  o.version = 7;
  assert_status(hk_struct_check_version(&o, HK_LOOP_OPTIONS_VERSION, "hk_loop_options", "f: opts", &st), &st,
                HK_INVALID_ARGUMENT, "version 7 of hk_loop_options");
  assert_int_equal(hk_struct_check_version(&o, 7, "hk_loop_options", "f: opts", NULL), HK_OK);
  o.version = 0;
  assert_int_equal(hk_struct_check_version(&o, 7, "hk_loop_options", "f: opts", NULL), HK_INVALID_ARGUMENT);
  /* hk_struct_init: the initial value's version is the current one. */
  hk_loop_options init = HK_LOOP_OPTIONS_INIT;
  assert_int_equal(hk_struct_init(&o, sizeof o, &init, 1), HK_OK);
  assert_int_equal(o.version, 1);
  assert_int_equal(hk_struct_init(&o, sizeof o, &init, 2), HK_INVALID_ARGUMENT);
  assert_int_equal(hk_struct_init(&o, sizeof o, NULL, 1), HK_INVALID_ARGUMENT);
}

/* Consumers of the options structs that gained an _init refuse a version
 * they do not know, naming the struct, before creating anything. */
static void test_versioned_structs__consumers_refuse_an_unknown_version_naming_the_struct(void **state) {
  (void)state;
  hk_status st = HK_STATUS_INIT;
  hk_graph *g = NULL;
  hk_hook *h = NULL;
  hk_graph_options go;
  hk_stop_at_step_options so;
  hk_global_step_waiter_options wo;

  assert_int_equal(hk_graph_options_init(&go, HK_GRAPH_OPTIONS_VERSION), HK_OK);
  go.version = 0;
  assert_status(hk_graph_new(&g, &go, &st), &st, HK_INVALID_ARGUMENT, "version 0 of hk_graph_options");
  assert_null(g);
  go.version = HK_GRAPH_OPTIONS_VERSION;
  assert_ok(hk_graph_new(&g, &go, &st), &st);
  hk_graph_free(g);

  assert_int_equal(hk_stop_at_step_options_init(&so, HK_STOP_AT_STEP_OPTIONS_VERSION), HK_OK);
  so.num_steps = 3;
  so.version = HK_STOP_AT_STEP_OPTIONS_VERSION + 1;
  assert_status(hk_stop_at_step_hook_new(&h, &so, &st), &st, HK_INVALID_ARGUMENT, "hk_stop_at_step_options");
  assert_null(h);
  so.version = HK_STOP_AT_STEP_OPTIONS_VERSION;
  assert_ok(hk_stop_at_step_hook_new(&h, &so, &st), &st);
  hk_hook_free(h);
  h = NULL;

  assert_int_equal(hk_global_step_waiter_options_init(&wo, HK_GLOBAL_STEP_WAITER_OPTIONS_VERSION), HK_OK);
  wo.version = 0;
  assert_status(hk_global_step_waiter_hook_new(&h, &wo, &st), &st, HK_INVALID_ARGUMENT,
                "version 0 of hk_global_step_waiter_options");
  assert_null(h);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_versioned_structs__every_options_struct_is_at_version_1),
      cmocka_unit_test(test_versioned_structs__init_fills_the_whole_struct),
      cmocka_unit_test(test_versioned_structs__init_refuses_another_version_without_writing),
      cmocka_unit_test(test_versioned_structs__check_names_the_struct_and_its_versions),
      cmocka_unit_test(test_versioned_structs__consumers_refuse_an_unknown_version_naming_the_struct),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
