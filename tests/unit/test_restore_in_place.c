/*
 * test_restore — restoring in place through the executor's variable storage
 * (H30, H27), never asked of a version-1 vtable (H10).
 *
 * Checkpoints are written by a "writer" raw session whose variables hold
 * values derived from a seed (the step), so a restored session shows which
 * checkpoint it came from; the initializers give other values, so a session
 * that was initialized instead of restored is told apart (restore_tests.c).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "restore_tests.h"

/* ---- H30, H27, H10: restoring in place through the executor's storage -------------- */

/* A fake executor with the model's checkpointed variables (no ops). */
static fake_executor *fake_model(fx *f, int with_storage, uint32_t b_flags) {
  static const int64_t w_dims[2] = {2, 3}, b_dims[1] = {4};
  fake_executor *fk = with_storage ? fake_executor_new_with_storage(&f->te->env) : fake_executor_new(&f->te->env);
  assert_non_null(fk);
  fake_executor_add_variable(fk, "w", HK_DTYPE_F32, 2, w_dims, 0, NULL);
  fake_executor_add_variable(fk, "b", HK_DTYPE_F64, 1, b_dims, b_flags, NULL);
  fake_executor_add_global_step(fk);
  return fk;
}

/* Restore `prefix` into a fresh raw session of ex (*rs) through a Saver of
 * w, b and global_step over env. */
static hk_code restore_ex(fx *f, hk_executor *ex, const hk_env *env, const char *prefix, hk_raw_session **rs) {
  hk_saver_options o = HK_SAVER_OPTIONS_INIT;
  hk_saver *s = NULL;
  hk_code rc;
  o.env = env;
  o.executor = ex;
  o.var_list = all_vars;
  o.nvar_list = 3;
  assert_ok(hk_saver_new(&s, &o, &f->st), &f->st);
  assert_ok(hk_raw_session_open(rs, ex, &f->st), &f->st);
  rc = hk_saver_restore(s, *rs, prefix, &f->st);
  hk_saver_free(s);
  return rc;
}

/* w, b and the GS of rs, as bytes, into out (NW floats, 4 doubles, 1 int64). */
static void bytes_of(hk_executor *ex, hk_raw_session *rs, unsigned char *out) {
  static const char *const names[3] = {"w", "b", "global_step"};
  static const size_t sizes[3] = {NW * sizeof(float), 4 * sizeof(double), sizeof(int64_t)};
  hk_status st = HK_STATUS_INIT;
  for (size_t i = 0, at = 0; i < 3; at += sizes[i], i++) {
    size_t idx = 0;
    hk_tensor t;
    assert_ok(hk_executor_find_variable(ex, names[i], &idx, &st), &st);
    assert_ok(hk_raw_session_read_variable(&t, rs, idx, &st), &st);
    assert_int_equal(t.nbytes, sizes[i]);
    memcpy(out + at, t.data, sizes[i]);
  }
}

#define MODEL_BYTES (NW * sizeof(float) + 4 * sizeof(double) + sizeof(int64_t))

/* H30: the graph executor and a fake with the storage slot restore in
 * place; a fake without it assigns. All three end with exactly the
 * checkpoint's values. */
static void test_restore__restoring_in_place_gives_what_assigning_gives(void **state) {
  fx *f = *state;
  unsigned char want[MODEL_BYTES], got[MODEL_BYTES];
  hk_raw_session *rs = NULL;
  fake_executor *with = fake_model(f, 1, 0), *without = fake_model(f, 0, 0);
  char *prefix;
  save(f, 3);
  prefix = prefix_of(f, 3);
  bytes_of(f->m.ex, f->rs, want);

  assert_ok(restore_ex(f, f->m.ex, &f->te->env, prefix, &rs), &f->st);
  assert_true(holds(&f->m, rs, 3));
  bytes_of(f->m.ex, rs, got);
  assert_memory_equal(got, want, MODEL_BYTES);
  hk_raw_session_free(rs);

  assert_ok(restore_ex(f, fake_executor_executor(with), &f->te->env, prefix, &rs), &f->st);
  bytes_of(fake_executor_executor(with), rs, got);
  assert_memory_equal(got, want, MODEL_BYTES);
  assert_int_equal(fake_executor_calls(with, FAKE_VARIABLE_STORAGE), 3);
  assert_int_equal(fake_executor_calls(with, FAKE_VARIABLE_ASSIGN), 0);
  hk_raw_session_free(rs);

  assert_ok(restore_ex(f, fake_executor_executor(without), &f->te->env, prefix, &rs), &f->st);
  bytes_of(fake_executor_executor(without), rs, got);
  assert_memory_equal(got, want, MODEL_BYTES);
  assert_int_equal(fake_executor_calls(without, FAKE_VARIABLE_STORAGE), 0);
  assert_int_equal(fake_executor_calls(without, FAKE_VARIABLE_ASSIGN), 3);
  hk_raw_session_free(rs);

  fake_executor_free(with);
  fake_executor_free(without);
  free(prefix);
}

/* H27: a tensor whose bytes no longer match their CRC is DATA_LOSS naming
 * the file and the tensor, in place (graph, fake with storage) and by
 * assignment (fake without), with the file mapped and read. */
static void test_restore__a_corrupt_tensor_is_data_loss_in_place_and_by_assign(void **state) {
  fx *f = *state;
  fake_executor *with = fake_model(f, 1, 0), *without = fake_model(f, 0, 0);
  hk_executor *exs[3] = {f->m.ex, fake_executor_executor(with), fake_executor_executor(without)};
  char *prefix, *data;
  faulty_fs ff;
  hk_env env = f->te->env;
  save(f, 4);
  corrupt(f, 4); /* the last byte: a byte of "w", the last name */
  prefix = prefix_of(f, 4);
  data = data_of(f, 4);
  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &env);
  for (int mapped = 0; mapped < 2; mapped++) {
    faulty_fs_no_map(&ff, !mapped);
    for (size_t k = 0; k < 3; k++) {
      hk_raw_session *rs = NULL;
      assert_status(restore_ex(f, exs[k], &env, prefix, &rs), &f->st, HK_DATA_LOSS, data);
      assert_non_null(strstr(f->st.message, "tensor 'w'"));
      assert_non_null(strstr(f->st.message, "CRC-32C mismatch"));
      hk_raw_session_free(rs);
    }
  }
  assert_int_equal(faulty_fs_open_handles(&ff), 0);
  assert_int_equal(faulty_fs_open_maps(&ff), 0);
  faulty_fs_destroy(&ff);
  fake_executor_free(with);
  fake_executor_free(without);
  free(prefix);
  free(data);
}

/* Variables assigned rather than read in place are assigned from a
 * mapping of the file when the fs can map (one mapping, released by the
 * end). A failing map is no error: the bytes are read instead (DEBUG,
 * naming the file). A failing unmap is a WARNING naming the file; the
 * values are restored and no mapping is left. */
static void test_restore__assigning_maps_the_file_and_a_map_failure_reads_instead(void **state) {
  fx *f = *state;
  unsigned char want[MODEL_BYTES], got[MODEL_BYTES];
  fake_executor *without = fake_model(f, 0, 0);
  hk_executor *ex = fake_executor_executor(without);
  hk_env env = f->te->env;
  faulty_fs ff;
  char *prefix;
  save(f, 5);
  prefix = prefix_of(f, 5);
  bytes_of(f->m.ex, f->rs, want);
  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &env);
  for (int k = 0; k < 3; k++) {
    hk_raw_session *rs = NULL;
    test_log_clear(&f->te->log);
    if (k == 0) faulty_fs_reset(&ff);
    if (k == 1) faulty_fs_fail_errno(&ff, FAULTY_FS_MAP, 0, ENOMEM, 1);
    if (k == 2) faulty_fs_fail_errno(&ff, FAULTY_FS_UNMAP, 0, EIO, 1);
    assert_ok(restore_ex(f, ex, &env, prefix, &rs), &f->st);
    bytes_of(ex, rs, got);
    assert_memory_equal(got, want, MODEL_BYTES);
    assert_int_equal(faulty_fs_calls(&ff, FAULTY_FS_MAP), 1);
    assert_int_equal(faulty_fs_calls(&ff, FAULTY_FS_UNMAP), k == 1 ? 0 : 1);
    assert_int_equal(faulty_fs_injected(&ff), k == 0 ? 0 : 1);
    assert_int_equal(faulty_fs_open_maps(&ff), 0);
    assert_int_equal(faulty_fs_open_handles(&ff), 0);
    if (k == 1) {
      assert_true(faulty_fs_calls(&ff, FAULTY_FS_READ_AT) > 2); /* length, header, tensors */
      assert_logged(f->te, HK_LOG_DEBUG, "instead of mapping it");
      assert_logged(f->te, HK_LOG_DEBUG, "model.ckpt-5.safetensors");
    }
    if (k == 2) {
      assert_logged(f->te, HK_LOG_WARNING, "Releasing the mapping of checkpoint");
      assert_logged(f->te, HK_LOG_WARNING, "model.ckpt-5.safetensors");
    }
    hk_raw_session_free(rs);
  }
  faulty_fs_destroy(&ff);
  fake_executor_free(without);
  free(prefix);
}

static int poison_calls;

/* What a version-1 table has after `destroy` is not a slot: if it were
 * called, it would hand out memory that is not the variable's. */
static hk_code poison_storage(void *self, void *session, size_t index, hk_tensor *out, hk_status *st) {
  static unsigned char junk[256];
  (void)self, (void)session, (void)index, (void)st;
  poison_calls++;
  memset(out, 0, sizeof *out);
  out->data = junk;
  return HK_OK;
}

/* H10: a vtable declaring version 1 is never asked for variable storage,
 * whatever follows `destroy` in memory: restore assigns. */
static void test_restore__a_version_1_executor_is_never_asked_for_storage(void **state) {
  fx *f = *state;
  fake_executor *fk = fake_model(f, 0, 0);
  static hk_executor_vtable v1;
  hk_executor *ex = NULL;
  hk_raw_session *rs = NULL;
  hk_tensor t;
  unsigned char want[MODEL_BYTES], got[MODEL_BYTES];
  char *prefix;
  save(f, 5);
  prefix = prefix_of(f, 5);
  bytes_of(f->m.ex, f->rs, want);
  v1 = *fake_executor_vtable();
  v1.version = 1;
  v1.destroy = NULL; /* the fake's own executor destroys it */
  v1.variable_storage = poison_storage;
  poison_calls = 0;
  assert_ok(hk_executor_new(&ex, &v1, hk_executor_self(fake_executor_executor(fk)), &f->te->env, &f->st), &f->st);
  assert_ok(restore_ex(f, ex, &f->te->env, prefix, &rs), &f->st);
  bytes_of(ex, rs, got);
  assert_memory_equal(got, want, MODEL_BYTES);
  assert_int_equal(fake_executor_calls(fk, FAKE_VARIABLE_ASSIGN), 3);
  assert_status(hk_raw_session_variable_storage(&t, rs, 0, &f->st), &f->st, HK_UNIMPLEMENTED, "variable storage");
  assert_int_equal(poison_calls, 0);
  hk_raw_session_free(rs);
  /* The same table declaring version 2 is asked (and must then be right). */
  v1.version = 2;
  assert_ok(hk_raw_session_open(&rs, ex, &f->st), &f->st);
  assert_status(hk_raw_session_variable_storage(&t, rs, 0, &f->st), &f->st, HK_INTERNAL, "does not match");
  assert_null(t.data);
  assert_int_equal(poison_calls, 1);
  hk_raw_session_free(rs);
  hk_executor_free(ex);
  fake_executor_free(fk);
  free(prefix);
}

/* H30, H27: storage refused for one variable (UNIMPLEMENTED) means that one
 * is assigned and the others are written in place; an optional variable is
 * always assigned (an older checkpoint may lack it, D5.3, and it must then
 * hold verified bytes); any other storage error is the executor's: no
 * fallback to an older checkpoint. */
static void test_restore__variables_whose_storage_is_refused_are_assigned(void **state) {
  fx *f = *state;
  fake_executor *fk = fake_model(f, 1, 0), *opt = fake_model(f, 1, HK_VAR_OPTIONAL);
  hk_raw_session *rs = NULL;
  unsigned char want[MODEL_BYTES], got[MODEL_BYTES];
  char *prefix;
  save(f, 6);
  prefix = prefix_of(f, 6);
  bytes_of(f->m.ex, f->rs, want);

  fake_executor_fail(fk, FAKE_VARIABLE_STORAGE, 2, 1, HK_UNIMPLEMENTED, "no storage for this one");
  assert_ok(restore_ex(f, fake_executor_executor(fk), &f->te->env, prefix, &rs), &f->st);
  bytes_of(fake_executor_executor(fk), rs, got);
  assert_memory_equal(got, want, MODEL_BYTES);
  assert_int_equal(fake_executor_calls(fk, FAKE_VARIABLE_STORAGE), 3);
  assert_int_equal(fake_executor_calls(fk, FAKE_VARIABLE_ASSIGN), 1);
  hk_raw_session_free(rs);

  assert_ok(restore_ex(f, fake_executor_executor(opt), &f->te->env, prefix, &rs), &f->st);
  bytes_of(fake_executor_executor(opt), rs, got);
  assert_memory_equal(got, want, MODEL_BYTES);
  assert_int_equal(fake_executor_calls(opt, FAKE_VARIABLE_STORAGE), 2);
  assert_int_equal(fake_executor_calls(opt, FAKE_VARIABLE_ASSIGN), 1); /* "b" */
  hk_raw_session_free(rs);

  fake_executor_fail(fk, FAKE_VARIABLE_STORAGE, 1, 1, HK_RESOURCE_EXHAUSTED, "device memory is full");
  assert_status(restore_ex(f, fake_executor_executor(fk), &f->te->env, prefix, &rs), &f->st, HK_RESOURCE_EXHAUSTED,
                "device memory is full");
  hk_raw_session_free(rs);
  fake_executor_free(fk);
  fake_executor_free(opt);
  free(prefix);
}

/* H30: hk_raw_session_variable_storage's answers with the graph executor:
 * the variable's own buffer, writable, the variable initialized from then
 * on; argument, index and closed-session errors. */
static void test_restore__the_graph_executor_restores_into_its_storage(void **state) {
  fx *f = *state;
  hk_raw_session *rs = NULL;
  hk_tensor t, v;
  size_t iw = var_index(&f->m, "w");
  assert_ok(hk_raw_session_open(&rs, f->m.ex, &f->st), &f->st);
  assert_status(hk_raw_session_read_variable(&v, rs, iw, &f->st), &f->st, HK_FAILED_PRECONDITION, "uninitialized");
  assert_ok(hk_raw_session_variable_storage(&t, rs, iw, &f->st), &f->st);
  assert_int_equal(t.dtype, HK_DTYPE_F32);
  assert_int_equal(t.rank, 2);
  assert_int_equal(t.dims[0], 2);
  assert_int_equal(t.dims[1], 3);
  assert_int_equal(t.nbytes, NW * sizeof(float));
  for (size_t k = 0; k < NW; k++) ((float *)t.data)[k] = w_of(9, k);
  assert_ok(hk_raw_session_read_variable(&v, rs, iw, &f->st), &f->st);
  assert_ptr_equal(v.data, t.data);
  for (size_t k = 0; k < NW; k++) assert_true(((const float *)v.data)[k] == w_of(9, k));
  assert_status(hk_raw_session_variable_storage(&t, NULL, iw, &f->st), &f->st, HK_INVALID_ARGUMENT, "session");
  assert_status(hk_raw_session_variable_storage(NULL, rs, iw, &f->st), &f->st, HK_INVALID_ARGUMENT, "out");
  assert_status(hk_raw_session_variable_storage(&t, rs, 1000, &f->st), &f->st, HK_OUT_OF_RANGE, "1000");
  assert_ok(hk_raw_session_close(rs, &f->st), &f->st);
  assert_status(hk_raw_session_variable_storage(&t, rs, iw, &f->st), &f->st, HK_FAILED_PRECONDITION, "closed");
  assert_null(t.data);
  hk_raw_session_free(rs);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_restore__restoring_in_place_gives_what_assigning_gives, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__a_corrupt_tensor_is_data_loss_in_place_and_by_assign, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_restore__a_version_1_executor_is_never_asked_for_storage, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__variables_whose_storage_is_refused_are_assigned, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__the_graph_executor_restores_into_its_storage, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restore__assigning_maps_the_file_and_a_map_failure_reads_instead, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
