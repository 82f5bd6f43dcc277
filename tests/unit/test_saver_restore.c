/*
 * test_saver — restoring (C125, H27): restore errors, and restore's two read
 * paths, mapped and read.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "saver_tests.h"

/* ---- restore errors (C125, H27) ---------------------------------------------------------- */

/* C125: restore refuses a NULL or missing path and a truncated or corrupt file, naming it. */
static void test_saver__restore_refuses_bad_paths_and_files_naming_them(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  char path[1024], *data;
  size_t n;
  f->saver = make_saver(f, 5, HK_UNSET_SECS);
  save_step(f, f->saver, 1);
  assert_status(hk_saver_restore(f->saver, f->rs, NULL, &st), &st, HK_INVALID_ARGUMENT,
                "Can't load save_path when it is None.");
  assert_status(hk_saver_restore(NULL, f->rs, "x", &st), &st, HK_INVALID_ARGUMENT, "saver");
  assert_status(hk_saver_restore(f->saver, NULL, "x", &st), &st, HK_INVALID_ARGUMENT, "rs");
  snprintf(path, sizeof path, "%s-9", f->save_path);
  assert_status(hk_saver_restore(f->saver, f->rs, path, &st), &st, HK_NOT_FOUND,
                "The passed save_path is not a valid checkpoint: ");
  assert_non_null(strstr(st.message, "model.ckpt-9"));

  /* truncated: DATA_LOSS naming the file, and nothing crashes */
  snprintf(path, sizeof path, "%s-1.safetensors", f->save_path);
  data = test_read_file(path, &n);
  assert_non_null(data);
  assert_int_equal(test_write_file(path, data, n - 3), 0);
  assert_status(hk_saver_restore(f->saver, f->rs, path, &st), &st, HK_DATA_LOSS, "model.ckpt-1");
  /* a flipped byte in the tensor data: the CRC names the tensor */
  data[n - 1] ^= 0x55;
  assert_int_equal(test_write_file(path, data, n), 0);
  assert_status(hk_saver_restore(f->saver, f->rs, path, &st), &st, HK_DATA_LOSS, "model.ckpt-1");
  free(data);
}

/* ---- restore's reads: in place by read_at, assigned from a mapping (C125, H27, H30) ---------- */

/* H30: variables the executor lends its memory for are read straight into
 * it with the fs's read_at, never through a mapping, whether or not the fs
 * can map: the same values either way, and every handle closed. */
static void test_saver__restore_in_place_reads_and_never_maps(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  char prefix[1024];
  f->saver = make_saver(f, 5, HK_UNSET_SECS);
  save_step(f, f->saver, 4);
  snprintf(prefix, sizeof prefix, "%s-4", f->save_path);

  for (int no_map = 0; no_map < 2; no_map++) {
    set_values(f, 40 + no_map);
    faulty_fs_no_map(&f->ff, no_map);
    faulty_fs_reset(&f->ff);
    assert_ok(hk_saver_restore(f->saver, f->rs, prefix, &st), &st);
    assert_values(f, 4);
    assert_int_equal(faulty_fs_calls(&f->ff, FAULTY_FS_MAP), 0);
    assert_true(faulty_fs_calls(&f->ff, FAULTY_FS_READ_AT) > 2); /* header length, header, tensors */
    assert_int_equal(faulty_fs_open_maps(&f->ff), 0);
    assert_int_equal(faulty_fs_open_handles(&f->ff), 0);
  }
  faulty_fs_no_map(&f->ff, 0);
}

/* A graph of one U8 variable "big" of n bytes (more than one 1 MiB read
 * piece), saved with byte k = k * 7 + seed. */
typedef struct big_graph {
  hk_graph *g;
  hk_raw_session *rs;
  hk_saver *saver;
  size_t idx, n;
} big_graph;

static void big_open(fx *f, big_graph *bg, size_t n) {
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_saver_options o = HK_SAVER_OPTIONS_INIT;
  hk_variable_def d = HK_VARIABLE_DEF_INIT;
  hk_status st = HK_STATUS_INIT;
  int64_t dims[1];
  hk_handle h;
  dims[0] = (int64_t)n;
  bg->n = n;
  go.env = &f->te->env;
  assert_ok(hk_graph_new(&bg->g, &go, &st), &st);
  d.name = "big";
  d.dtype = HK_DTYPE_U8;
  d.rank = 1;
  d.dims = dims;
  assert_ok(hk_graph_variable(bg->g, &h, &d, &st), &st);
  assert_ok(hk_raw_session_open(&bg->rs, hk_graph_executor(bg->g), &st), &st);
  assert_ok(hk_executor_find_variable(hk_graph_executor(bg->g), "big", &bg->idx, &st), &st);
  o.executor = hk_graph_executor(bg->g);
  o.env = &f->te->env;
  assert_ok(hk_saver_new(&bg->saver, &o, &st), &st);
}

static void big_set(big_graph *bg, int seed) {
  hk_status st = HK_STATUS_INIT;
  int64_t dims[1];
  hk_tensor t;
  unsigned char *buf = malloc(bg->n);
  assert_non_null(buf);
  dims[0] = (int64_t)bg->n;
  for (size_t k = 0; k < bg->n; k++) buf[k] = (unsigned char)(k * 7 + (size_t)seed);
  assert_ok(hk_tensor_init(&t, HK_DTYPE_U8, 1, dims, buf, &st), &st);
  assert_ok(hk_raw_session_assign_variable(bg->rs, bg->idx, &t, &st), &st);
  free(buf);
}

static int big_is(big_graph *bg, int seed) {
  hk_status st = HK_STATUS_INIT;
  hk_tensor t;
  const unsigned char *p;
  if (hk_raw_session_read_variable(&t, bg->rs, bg->idx, &st) != HK_OK || t.nbytes != bg->n) return 0;
  p = t.data;
  for (size_t k = 0; k < bg->n; k++)
    if (p[k] != (unsigned char)(k * 7 + (size_t)seed)) return 0;
  return 1;
}

static void big_close(big_graph *bg) {
  hk_saver_free(bg->saver);
  hk_raw_session_free(bg->rs);
  hk_graph_free(bg->g);
}

/* Flip bit `bit` of byte `at` of big's data in the file at `prefix`. */
static void big_flip(big_graph *bg, const char *prefix, size_t at, unsigned char bit) {
  char path[1024], *data;
  size_t n;
  snprintf(path, sizeof path, "%s.safetensors", prefix);
  data = test_read_file(path, &n);
  assert_non_null(data);
  data[n - bg->n + at] ^= (char)bit;
  assert_int_equal(test_write_file(path, data, n), 0);
  free(data);
}

/* H27: a tensor of several 1 MiB read pieces, read on one thread (under
 * 4 MiB), round-trips; a flipped byte in its first, a middle or its last
 * piece is DATA_LOSS naming the file and the tensor. */
static void test_saver__a_big_tensor_s_checksum_is_checked_in_every_piece(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  big_graph bg;
  const char *prefix = NULL;
  big_open(f, &bg, ((size_t)3 << 20) + 5);
  big_set(&bg, 1);
  assert_ok(hk_saver_save(&prefix, bg.saver, bg.rs, f->save_path, 1, HK_SAVE_DEFAULT, &st), &st);
  big_set(&bg, 2);
  test_log_clear(&f->te->log);
  assert_ok(hk_saver_restore(bg.saver, bg.rs, prefix, &st), &st);
  assert_true(big_is(&bg, 1));
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_DEBUG, "in place, on one thread"), 1);
  {
    const size_t where[3] = {0, (size_t)3 << 19, bg.n - 1};
    for (size_t w = 0; w < 3; w++) {
      big_flip(&bg, prefix, where[w], 0x01);
      faulty_fs_reset(&f->ff);
      assert_status(hk_saver_restore(bg.saver, bg.rs, prefix, &st), &st, HK_DATA_LOSS, "CRC-32C mismatch");
      assert_non_null(strstr(st.message, "'big'"));
      assert_non_null(strstr(st.message, "model.ckpt-1.safetensors"));
      assert_int_equal(faulty_fs_open_handles(&f->ff), 0);
      big_flip(&bg, prefix, where[w], 0x01); /* whole again */
    }
  }
  assert_ok(hk_saver_restore(bg.saver, bg.rs, prefix, &st), &st);
  assert_true(big_is(&bg, 1));
  big_close(&bg);
}

/* H27: a restore large enough for two threads (4 MiB or more): exact
 * bytes, and a flipped byte in the middle or in the very last piece is
 * DATA_LOSS naming the file and the tensor. */
static void test_saver__two_threads_restore_in_place_at_once(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  big_graph bg;
  const char *prefix = NULL;
  big_open(f, &bg, ((size_t)20 << 20) + 333);
  big_set(&bg, 5);
  assert_ok(hk_saver_save(&prefix, bg.saver, bg.rs, f->save_path, 1, HK_SAVE_DEFAULT, &st), &st);
  big_set(&bg, 6);
  test_log_clear(&f->te->log);
  assert_ok(hk_saver_restore(bg.saver, bg.rs, prefix, &st), &st);
  assert_true(big_is(&bg, 5));
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_DEBUG, "in place, on two threads"), 1);
  {
    const size_t where[2] = {bg.n / 2, bg.n - 1};
    for (size_t w = 0; w < 2; w++) {
      big_flip(&bg, prefix, where[w], 0x20);
      assert_status(hk_saver_restore(bg.saver, bg.rs, prefix, &st), &st, HK_DATA_LOSS, "CRC-32C mismatch");
      assert_non_null(strstr(st.message, "'big'"));
      assert_non_null(strstr(st.message, "model.ckpt-1.safetensors"));
      big_flip(&bg, prefix, where[w], 0x20);
    }
  }
  assert_int_equal(faulty_fs_open_handles(&f->ff), 0);
  big_close(&bg);
}

/* H9: a read that fails in the middle of a two-thread restore (the first,
 * a middle and the last piece's read, and every read from one on) fails
 * the restore with the file system's code naming the file, whichever
 * thread meets it; no handle is left open and a restore after it works. */
static void test_saver__a_read_failing_mid_restore_fails_it_naming_the_file(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  big_graph bg;
  const char *prefix = NULL;
  long reads;
  big_open(f, &bg, ((size_t)8 << 20) + 17);
  big_set(&bg, 7);
  assert_ok(hk_saver_save(&prefix, bg.saver, bg.rs, f->save_path, 1, HK_SAVE_DEFAULT, &st), &st);
  faulty_fs_reset(&f->ff);
  assert_ok(hk_saver_restore(bg.saver, bg.rs, prefix, &st), &st);
  reads = faulty_fs_calls(&f->ff, FAULTY_FS_READ_AT);
  assert_true(reads >= 2 + 9); /* length, header, 9 pieces */
  {
    const long nth[4] = {2, 2 + 4, reads - 1, 2};
    for (int k = 0; k < 4; k++) {
      faulty_fs_fail_errno(&f->ff, FAULTY_FS_READ_AT, nth[k], EIO, k == 3);
      assert_status(hk_saver_restore(bg.saver, bg.rs, prefix, &st), &st, HK_UNKNOWN, "model.ckpt-1.safetensors");
      assert_true(faulty_fs_injected(&f->ff) >= 1);
      assert_int_equal(faulty_fs_open_handles(&f->ff), 0);
    }
  }
  faulty_fs_reset(&f->ff);
  big_set(&bg, 8);
  assert_ok(hk_saver_restore(bg.saver, bg.rs, prefix, &st), &st);
  assert_true(big_is(&bg, 7));
  big_close(&bg);
}

static int poison_write_at_calls;

static hk_code poison_write_at(void *user, hk_fs_file *f, const void *buf, size_t len, uint64_t offset,
                               size_t *nwritten, hk_status *st) {
  (void)user, (void)f, (void)buf, (void)len, (void)offset, (void)st;
  poison_write_at_calls++;
  *nwritten = 0;
  return HK_INTERNAL;
}

/* Save the big graph's state at `step` with a Saver over env, unmanaged;
 * returns the data file's bytes (malloc) and their count. */
static char *big_save_with(fx *f, big_graph *bg, const hk_env *env, int64_t step, size_t *n) {
  return saved_bytes(f, hk_graph_executor(bg->g), bg->rs, env, step, n);
}

/* D4: checkpoint-format.md: the same variables and step give the same bytes
 * whichever way the file is written: data first with write_at (CRCs on a
 * second thread from 8 MiB on, else while writing), or in order through an
 * fs without write_at; and a version-1 fs vtable is never asked for
 * write_at (H10), whatever follows its last slot. */
static void test_saver__every_write_path_writes_the_same_bytes(void **state) {
  fx *f = *state;
  static const size_t sizes[2] = {(size_t)40 << 10, ((size_t)9 << 20) + 17};
  static hk_fs_vtable append_only, v1;
  for (size_t k = 0; k < 2; k++) {
    big_graph bg;
    hk_env env = f->te->env;
    size_t na = 0, nb = 0, nc = 0;
    char *a, *b, *c;
    big_open(f, &bg, sizes[k]);
    big_set(&bg, 3);
    a = big_save_with(f, &bg, &env, 7, &na); /* faulty_fs: write_at */
    append_only = *faulty_fs_vtable();
    append_only.write_at = NULL;
    env.fs = &append_only;
    b = big_save_with(f, &bg, &env, 7, &nb);
    v1 = *faulty_fs_vtable();
    v1.version = 1;
    v1.write_at = poison_write_at;
    env.fs = &v1;
    poison_write_at_calls = 0;
    c = big_save_with(f, &bg, &env, 7, &nc);
    assert_int_equal(poison_write_at_calls, 0);
    assert_int_equal(na, nb);
    assert_int_equal(na, nc);
    assert_memory_equal(a, b, na);
    assert_memory_equal(a, c, na);
    assert_int_equal((na - sizes[k]) % 64, 0); /* length and padded header, then the data */
    free(a);
    free(b);
    free(c);
    big_close(&bg);
  }
}

/* What a save does to its data file, recorded: every write_at to a
 * ".safetensors" temporary file, and the fsyncs of files and directories. */
typedef struct order_fs {
  hk_fs_file *data; /* the data file's temporary, once created */
  int writes;       /* write_at calls to it */
  uint64_t last_offset;
  size_t last_len;
  uint64_t first_offset;
  int appends; /* write calls to it */
  int syncs, dir_syncs;
} order_fs;

static hk_code of_create_excl(void *user, const char *path, hk_fs_file **out, hk_status *st) {
  order_fs *o = user;
  hk_code rc = hk_fs_posix()->create_excl(NULL, path, out, st);
  if (rc == HK_OK && strstr(path, ".safetensors.tmp-")) o->data = *out;
  return rc;
}
static hk_code of_write(void *user, hk_fs_file *f, const void *buf, size_t len, size_t *n, hk_status *st) {
  order_fs *o = user;
  if (f == o->data) o->appends++;
  return hk_fs_posix()->write(NULL, f, buf, len, n, st);
}
static hk_code of_write_at(void *user, hk_fs_file *f, const void *buf, size_t len, uint64_t offset, size_t *n,
                           hk_status *st) {
  order_fs *o = user;
  if (f == o->data) {
    if (o->writes++ == 0) o->first_offset = offset;
    o->last_offset = offset;
    o->last_len = len;
  }
  return hk_fs_posix()->write_at(NULL, f, buf, len, offset, n, st);
}
static hk_code of_sync(void *user, hk_fs_file *f, hk_status *st) {
  ((order_fs *)user)->syncs++;
  return hk_fs_posix()->sync(NULL, f, st);
}
static hk_code of_close(void *user, hk_fs_file *f, hk_status *st) {
  order_fs *o = user;
  if (f == o->data) o->data = NULL;
  return hk_fs_posix()->close(NULL, f, st);
}
static hk_code of_sync_dir(void *user, const char *path, hk_status *st) {
  ((order_fs *)user)->dir_syncs++;
  return hk_fs_posix()->sync_dir(NULL, path, st);
}

/* D4.1, D4.2: one managed save writes its data file data first (at its
 * final offsets) and its header last, at offset 0, in one write; it makes
 * exactly four fsyncs: the data file, its directory, the state file, its
 * directory. */
static void test_saver__writes_data_first_header_last_with_four_fsyncs(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  static hk_fs_vtable vt;
  order_fs o;
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  hk_saver *s = NULL;
  hk_checkpoint_reader *r = NULL;
  const char *prefix = NULL;
  hk_env env = f->te->env;
  vt = *hk_fs_posix();
  vt.create_excl = of_create_excl;
  vt.write = of_write;
  vt.write_at = of_write_at;
  vt.sync = of_sync;
  vt.close = of_close;
  vt.sync_dir = of_sync_dir;
  memset(&o, 0, sizeof o);
  env.fs = &vt;
  env.fs_user = &o;
  for (size_t i = 0; i < NVARS; i++) set_var(f, var_names[i], 4, i);
  so.executor = f->ex;
  so.env = &env;
  so.max_to_keep = 3;
  assert_ok(hk_saver_new(&s, &so, &st), &st);
  assert_ok(hk_saver_save(NULL, s, f->rs, f->save_path, 1, HK_SAVE_DEFAULT, &st), &st); /* a state file exists */
  memset(&o, 0, sizeof o);
  assert_ok(hk_saver_save(&prefix, s, f->rs, f->save_path, 2, HK_SAVE_DEFAULT, &st), &st);
  assert_int_equal(o.appends, 0);
  assert_true(o.writes >= 2);
  assert_true(o.first_offset > 0); /* the data, first */
  assert_int_equal(o.last_offset, 0);
  assert_int_equal(o.syncs, 2);
  assert_int_equal(o.dir_syncs, 2);
  assert_ok(hk_checkpoint_reader_open(&r, &env, prefix, &st), &st);
  {
    hk_checkpoint_entry e;
    assert_ok(hk_checkpoint_reader_entry(&e, r, 0, &st), &st);
    assert_int_equal(o.last_len, e.offset); /* length and header, exactly what precedes the data */
  }
  assert_ok(hk_checkpoint_reader_verify(r, &st), &st);
  hk_checkpoint_reader_free(r);
  hk_saver_free(s);
}

/* Save a graph of `nvars` U8 variables of `bytes` each (variable k holds
 * k + j at byte j) unmanaged at `step` through an fs over env (nfs); the
 * data file's bytes (malloc) and their count. */
static char *many_small_save(fx *f, const hk_fs_vtable *vt, void *user, size_t nvars, size_t bytes, size_t *n) {
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_env env = f->te->env;
  hk_graph *g = NULL;
  hk_raw_session *rs = NULL;
  hk_saver *s = NULL;
  const char *prefix = NULL;
  unsigned char *buf = malloc(bytes);
  char path[1024], *data;
  assert_non_null(buf);
  go.env = &f->te->env;
  assert_ok(hk_graph_new(&g, &go, &st), &st);
  for (size_t k = 0; k < nvars; k++) {
    hk_variable_def d = HK_VARIABLE_DEF_INIT;
    int64_t dims[1] = {(int64_t)bytes};
    char name[32];
    hk_handle h;
    snprintf(name, sizeof name, "v%04zu", k);
    d.name = name;
    d.dtype = HK_DTYPE_U8;
    d.rank = 1;
    d.dims = dims;
    assert_ok(hk_graph_variable(g, &h, &d, &st), &st);
  }
  assert_ok(hk_raw_session_open(&rs, hk_graph_executor(g), &st), &st);
  for (size_t k = 0; k < nvars; k++) {
    int64_t dims[1] = {(int64_t)bytes};
    hk_tensor t;
    for (size_t j = 0; j < bytes; j++) buf[j] = (unsigned char)(k + j);
    assert_ok(hk_tensor_init(&t, HK_DTYPE_U8, 1, dims, buf, &st), &st);
    assert_ok(hk_raw_session_assign_variable(rs, k, &t, &st), &st);
  }
  env.fs = vt;
  env.fs_user = user;
  so.executor = hk_graph_executor(g);
  so.env = &env;
  assert_ok(hk_saver_new(&s, &so, &st), &st);
  assert_ok(hk_saver_save(&prefix, s, rs, f->save_path, 3, HK_SAVE_NO_STATE, &st), &st);
  snprintf(path, sizeof path, "%s.safetensors", prefix);
  data = test_read_file(path, n);
  assert_non_null(data);
  assert_int_equal(remove(path), 0);
  hk_saver_free(s);
  hk_raw_session_free(rs);
  hk_graph_free(g);
  free(buf);
  return data;
}

/* Small tensors' data is gathered into writes of up to 1 MiB: 300
 * tensors of 4 KiB take two writes and the header one more, not 301 (each
 * write call costs the file system a fixed amount). The file is byte for
 * byte what writing in order (an fs without write_at) gives. */
static void test_saver__small_tensors_are_written_together(void **state) {
  fx *f = *state;
  static hk_fs_vtable vt, append_only;
  order_fs o;
  size_t na = 0, nb = 0;
  char *a, *b;
  vt = *hk_fs_posix();
  vt.create_excl = of_create_excl;
  vt.write = of_write;
  vt.write_at = of_write_at;
  vt.sync = of_sync;
  vt.close = of_close;
  vt.sync_dir = of_sync_dir;
  memset(&o, 0, sizeof o);
  a = many_small_save(f, &vt, &o, 300, 4096, &na);
  assert_int_equal(o.appends, 0);
  assert_int_equal(o.writes, 3);
  assert_int_equal(o.last_offset, 0); /* the header, last */
  append_only = *hk_fs_posix();
  append_only.write_at = NULL;
  b = many_small_save(f, &append_only, NULL, 300, 4096, &nb);
  assert_int_equal(na, nb);
  assert_memory_equal(a, b, na);
  free(a);
  free(b);
}

/* An fs that truncates the data file to `keep` bytes after the reader
 * opened it: at the reader's second size() (the restore's check before it
 * reads), or (at_read) just before forwarding the first read of tensor
 * data (the third read_at: length, header, data). */
typedef struct shrink_fs {
  char path[1024];
  uint64_t keep;
  int at_read;
  int sizes, reads, truncated;
} shrink_fs;

static void sh_truncate(shrink_fs *s) {
  if (s->truncated++ == 0) assert_int_equal(truncate(s->path, (off_t)s->keep), 0);
}

static hk_code sh_open_read(void *user, const char *path, hk_fs_file **out, hk_status *st) {
  shrink_fs *s = user;
  if (strstr(path, ".safetensors")) snprintf(s->path, sizeof s->path, "%s", path);
  return hk_fs_posix()->open_read(NULL, path, out, st);
}
static hk_code sh_create_excl(void *user, const char *path, hk_fs_file **out, hk_status *st) {
  (void)user;
  return hk_fs_posix()->create_excl(NULL, path, out, st);
}
static hk_code sh_read_at(void *user, hk_fs_file *f, void *buf, size_t len, uint64_t offset, size_t *nread,
                          hk_status *st) {
  shrink_fs *s = user;
  if (s->path[0] && s->at_read && ++s->reads == 3) sh_truncate(s);
  return hk_fs_posix()->read_at(NULL, f, buf, len, offset, nread, st);
}
static hk_code sh_write(void *user, hk_fs_file *f, const void *buf, size_t len, size_t *nwritten, hk_status *st) {
  (void)user;
  return hk_fs_posix()->write(NULL, f, buf, len, nwritten, st);
}
static hk_code sh_size(void *user, hk_fs_file *f, uint64_t *size, hk_status *st) {
  shrink_fs *s = user;
  if (s->path[0] && !s->at_read && ++s->sizes == 2) sh_truncate(s);
  return hk_fs_posix()->size(NULL, f, size, st);
}
static hk_code sh_sync(void *user, hk_fs_file *f, hk_status *st) {
  (void)user;
  return hk_fs_posix()->sync(NULL, f, st);
}
static hk_code sh_close(void *user, hk_fs_file *f, hk_status *st) {
  (void)user;
  return hk_fs_posix()->close(NULL, f, st);
}
static hk_code sh_sync_dir(void *user, const char *path, hk_status *st) {
  (void)user;
  return hk_fs_posix()->sync_dir(NULL, path, st);
}
static hk_code sh_rename(void *user, const char *from, const char *to, hk_status *st) {
  (void)user;
  return hk_fs_posix()->rename(NULL, from, to, st);
}
static hk_code sh_unlink(void *user, const char *path, hk_status *st) {
  (void)user;
  return hk_fs_posix()->unlink(NULL, path, st);
}
static hk_code sh_stat(void *user, const char *path, hk_fs_stat *out, hk_status *st) {
  (void)user;
  return hk_fs_posix()->stat(NULL, path, out, st);
}
static hk_code sh_list(void *user, const char *path, hk_fs_list_fn fn, void *fn_user, hk_status *st) {
  (void)user;
  return hk_fs_posix()->list(NULL, path, fn, fn_user, st);
}
static hk_code sh_mkdir(void *user, const char *path, hk_status *st) {
  (void)user;
  return hk_fs_posix()->mkdir(NULL, path, st);
}
static hk_code sh_map(void *user, hk_fs_file *f, uint64_t offset, size_t len, const void **addr, void **token,
                      hk_status *st) {
  (void)user;
  return hk_fs_posix()->map(NULL, f, offset, len, addr, token, st);
}
static hk_code sh_unmap(void *user, void *token, hk_status *st) {
  (void)user;
  return hk_fs_posix()->unmap(NULL, token, st);
}

static const hk_fs_vtable shrink_vtable = {
    .version = HK_FS_VTABLE_VERSION,
    .open_read = sh_open_read,
    .create_excl = sh_create_excl,
    .read_at = sh_read_at,
    .write = sh_write,
    .size = sh_size,
    .sync = sh_sync,
    .close = sh_close,
    .sync_dir = sh_sync_dir,
    .rename = sh_rename,
    .unlink = sh_unlink,
    .stat = sh_stat,
    .list = sh_list,
    .mkdir = sh_mkdir,
    .map = sh_map,
    .unmap = sh_unmap,
};

/* H27: a data file that shrinks after the reader opened it is refused
 * with DATA_LOSS naming the file and the tensor: found by the check before
 * any read (nothing assigned), or, when it shrinks once the reads began,
 * by the short read itself. */
static void test_saver__a_file_shrunk_after_open_fails_the_restore(void **state) {
  fx *f = *state;
  hk_status st = HK_STATUS_INIT;
  big_graph bg;
  const char *prefix = NULL;
  char path[1024];
  size_t n;
  char *data;
  f->te->env.fs = &shrink_vtable; /* before the Saver copies the env */
  big_open(f, &bg, (size_t)1 << 16);
  for (int at_read = 0; at_read < 2; at_read++) {
    shrink_fs sh;
    memset(&sh, 0, sizeof sh);
    f->te->env.fs_user = &sh;
    hk_saver_free(bg.saver);
    {
      hk_saver_options o = HK_SAVER_OPTIONS_INIT;
      o.executor = hk_graph_executor(bg.g);
      o.env = &f->te->env;
      assert_ok(hk_saver_new(&bg.saver, &o, &st), &st);
    }
    big_set(&bg, 3);
    assert_ok(hk_saver_save(&prefix, bg.saver, bg.rs, f->save_path, 2, HK_SAVE_DEFAULT, &st), &st);
    snprintf(path, sizeof path, "%s.safetensors", prefix);
    data = test_read_file(path, &n);
    assert_non_null(data);
    free(data);
    sh.keep = n - 8192 - 100; /* two pages and more short of the end */
    sh.at_read = at_read;
    big_set(&bg, 4);
    assert_status(hk_saver_restore(bg.saver, bg.rs, prefix, &st), &st, HK_DATA_LOSS, "model.ckpt-2.safetensors");
    assert_non_null(strstr(st.message, "'big'"));
    assert_non_null(strstr(st.message, "the file ends"));
    assert_int_equal(sh.truncated, 1);
    if (!at_read) assert_true(big_is(&bg, 4)); /* nothing assigned */
  }
  faulty_fs_bind(&f->ff, &f->te->env);
  big_close(&bg);
}

/* A second graph with the same names but one variable changed, restoring
 * the first graph's checkpoint: the error names the variable and nothing
 * is assigned (H27). */
static void mismatch_case(fx *f, const char *prefix, hk_dtype dt, int32_t rank, const int64_t *dims, const char *drop,
                          hk_code code, const char *s1, const char *s2) {
  hk_graph *g;
  hk_executor *ex;
  hk_raw_session *rs;
  hk_graph_options go = HK_GRAPH_OPTIONS_INIT;
  hk_saver_options o = HK_SAVER_OPTIONS_INIT;
  hk_saver *s;
  hk_status st = HK_STATUS_INIT;
  hk_variable_def d = HK_VARIABLE_DEF_INIT;
  static const int64_t b_dims[1] = {4};
  hk_handle h;
  double sentinel[4] = {-1, -1, -1, -1};
  hk_tensor t;
  size_t idx;

  go.env = &f->te->env;
  assert_ok(hk_graph_new(&g, &go, &st), &st);
  ex = hk_graph_executor(g);
  d.name = "b";
  d.dtype = HK_DTYPE_F64;
  d.rank = 1;
  d.dims = b_dims;
  assert_ok(hk_graph_variable(g, &h, &d, &st), &st);
  d.name = "w";
  d.dtype = dt;
  d.rank = rank;
  d.dims = dims;
  assert_ok(hk_graph_variable(g, &h, &d, &st), &st);
  if (drop) {
    d.name = drop;
    d.dtype = HK_DTYPE_I8;
    d.rank = 0;
    d.dims = NULL;
    assert_ok(hk_graph_variable(g, &h, &d, &st), &st);
  }
  assert_ok(hk_raw_session_open(&rs, ex, &st), &st);
  assert_ok(hk_executor_find_variable(ex, "b", &idx, &st), &st);
  assert_ok(hk_tensor_init(&t, HK_DTYPE_F64, 1, b_dims, sentinel, &st), &st);
  assert_ok(hk_raw_session_assign_variable(rs, idx, &t, &st), &st);
  o.executor = ex;
  assert_ok(hk_saver_new(&s, &o, &st), &st);
  assert_status(hk_saver_restore(s, rs, prefix, &st), &st, code, s1);
  if (s2) assert_non_null(strstr(st.message, s2));
  /* "b" comes first and matches, yet it was not assigned */
  assert_ok(hk_raw_session_read_variable(&t, rs, idx, &st), &st);
  assert_true(((double *)t.data)[0] == -1);
  hk_saver_free(s);
  hk_raw_session_free(rs);
  hk_graph_free(g);
}

/* H27: restoring a checkpoint of another model fails, naming the variable that does not match. */
static void test_saver__restore_of_another_model_is_refused_naming_the_variable(void **state) {
  fx *f = *state;
  static const int64_t w_dims[2] = {2, 3}, w_t[2] = {3, 2};
  char prefix[1024];
  f->saver = make_saver(f, 5, HK_UNSET_SECS);
  save_step(f, f->saver, 1);
  snprintf(prefix, sizeof prefix, "%s-1", f->save_path);
  mismatch_case(f, prefix, HK_DTYPE_F64, 2, w_dims, NULL, HK_INVALID_ARGUMENT, "w", "f64");
  mismatch_case(f, prefix, HK_DTYPE_F64, 2, w_dims, NULL, HK_INVALID_ARGUMENT, "f32", NULL);
  mismatch_case(f, prefix, HK_DTYPE_F32, 2, w_t, NULL, HK_INVALID_ARGUMENT, "[2, 3]", "[3, 2]");
  mismatch_case(f, prefix, HK_DTYPE_F32, 2, w_dims, "zz_missing", HK_NOT_FOUND,
                "Key zz_missing not found in checkpoint", "model.ckpt-1");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_saver__restore_refuses_bad_paths_and_files_naming_them, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__restore_of_another_model_is_refused_naming_the_variable, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_saver__restore_in_place_reads_and_never_maps, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__a_read_failing_mid_restore_fails_it_naming_the_file, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__a_big_tensor_s_checksum_is_checked_in_every_piece, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__a_file_shrunk_after_open_fails_the_restore, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__two_threads_restore_in_place_at_once, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__every_write_path_writes_the_same_bytes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__writes_data_first_header_last_with_four_fsyncs, setup, teardown),
      cmocka_unit_test_setup_teardown(test_saver__small_tensors_are_written_together, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
