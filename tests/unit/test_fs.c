/*
 * Tests of the file-system interface (contract H9): the errno mapping, the
 * built-in POSIX implementation slot by slot, and the faulty_fs test
 * support that the checkpoint fault sweeps rely on.
 */
#include "faulty_fs.h"
#include "test_env.h"
#include "tmpdir.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct fixture {
  char *dir;
  const hk_fs_vtable *fs;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  assert_non_null(f);
  f->dir = test_tmpdir_new("fs");
  f->fs = hk_fs_posix();
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  int rc = test_tmpdir_remove(f->dir);
  free(f->dir);
  free(f);
  return rc;
}

/* Create `name` in the fixture's directory through `fs` with the given bytes. */
static void create_file(const hk_fs_vtable *fs, void *user, const char *path, const char *data) {
  hk_status st = HK_STATUS_INIT;
  hk_fs_file *fh = NULL;
  size_t n = strlen(data), done = 0;
  assert_ok(fs->create_excl(user, path, &fh, &st), &st);
  while (done < n) {
    size_t w = 0;
    assert_ok(fs->write(user, fh, data + done, n - done, &w, &st), &st);
    assert_true(w > 0);
    done += w;
  }
  assert_ok(fs->sync(user, fh, &st), &st);
  assert_ok(fs->close(user, fh, &st), &st);
}

/* ---- H9 mapping ------------------------------------------------------------ */

/* H9: every errno maps to the status code the file-system clause lists. */
static void test_fs__errno_values_map_to_status_codes(void **state) {
  static const struct {
    int err;
    hk_code code;
  } cases[] = {
      {ENOSPC, HK_RESOURCE_EXHAUSTED},
      {EDQUOT, HK_RESOURCE_EXHAUSTED},
      {EACCES, HK_PERMISSION_DENIED},
      {EPERM, HK_PERMISSION_DENIED},
      {EROFS, HK_PERMISSION_DENIED},
      {ENOENT, HK_NOT_FOUND},
      {ENOTDIR, HK_NOT_FOUND},
      {EEXIST, HK_ALREADY_EXISTS},
      {EIO, HK_UNKNOWN},
      {EINVAL, HK_UNKNOWN},
      {0, HK_UNKNOWN},
  };
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    hk_status st = HK_STATUS_INIT;
    hk_code rc = hk_fs_status_from_errno(&st, cases[i].err, "write", "/some/file");
    assert_int_equal(rc, cases[i].code);
    assert_int_equal(st.code, cases[i].code);
    /* H9: the message names the path and carries the OS text */
    assert_non_null(strstr(st.message, "write /some/file: "));
    assert_false(hk_code_is_preemption(rc));
  }
  {
    hk_status st = HK_STATUS_INIT;
    hk_fs_status_from_errno(&st, ENOSPC, "write", "f");
    assert_non_null(strstr(st.message, strerror(ENOSPC)));
  }
  /* a NULL status still returns the code */
  assert_int_equal(hk_fs_status_from_errno(NULL, EROFS, "x", "y"), HK_PERMISSION_DENIED);
}

/* ---- POSIX implementation ---------------------------------------------------- */

static void test_fs__posix_vtable_is_complete(void **state) {
  hk_env env = HK_ENV_INIT;
  hk_status st = HK_STATUS_INIT;
  (void)state;
  env.fs = hk_fs_posix();
  assert_ptr_equal(hk_fs_posix(), hk_fs_posix());
  assert_int_equal(hk_fs_posix()->version, HK_FS_VTABLE_VERSION);
  assert_ok(hk_env_check(&env, "env", &st), &st);
}

static void test_fs__posix_write_then_read_back(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_fs_file *fh = NULL;
  char *path = test_path(f->dir, "a.bin");
  char buf[64];
  size_t n = 0;
  uint64_t size = 0;

  create_file(f->fs, NULL, path, "hello, world");
  assert_ok(f->fs->open_read(NULL, path, &fh, &st), &st);
  assert_non_null(fh);
  assert_ok(f->fs->size(NULL, fh, &size, &st), &st);
  assert_int_equal(size, 12);
  assert_ok(f->fs->read_at(NULL, fh, buf, 5, 7, &n, &st), &st);
  assert_int_equal(n, 5);
  assert_memory_equal(buf, "world", 5);
  /* short only at the end of the file */
  assert_ok(f->fs->read_at(NULL, fh, buf, sizeof buf, 3, &n, &st), &st);
  assert_int_equal(n, 9);
  assert_memory_equal(buf, "lo, world", 9);
  assert_ok(f->fs->read_at(NULL, fh, buf, sizeof buf, 100, &n, &st), &st);
  assert_int_equal(n, 0);
  assert_ok(f->fs->close(NULL, fh, &st), &st);
  free(path);
}

/* H9: write_at_v writes its pieces one after the other from the offset
 * (bytes before it read as zeros), at most 256 pieces per call — a short
 * write the caller completes — and a piece may be empty. */
static void test_fs__posix_write_at_v_writes_pieces_in_order(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_fs_file *fh = NULL;
  char *path = test_path(f->dir, "v.bin");
  static hk_fs_piece pieces[300];
  static char want[10 + 300 * 3], got[sizeof want];
  size_t n = 0, done = 0, total = 0;
  uint64_t size = 0;
  char *bytes = malloc(300 * 3);
  assert_non_null(bytes);
  memset(want, 0, 10);
  for (size_t i = 0; i < 300; i++) {
    size_t len = i % 4; /* 0 to 3 bytes: empty pieces too */
    for (size_t k = 0; k < len; k++) bytes[3 * i + k] = (char)('a' + (i + k) % 26);
    pieces[i].data = bytes + 3 * i;
    pieces[i].len = len;
    memcpy(want + 10 + total, bytes + 3 * i, len);
    total += len;
  }
  assert_ok(f->fs->create_excl(NULL, path, &fh, &st), &st);
  assert_ok(f->fs->write_at_v(NULL, fh, pieces, 300, 10, &n, &st), &st);
  /* the first call takes at most 256 pieces: the bytes of pieces 0..255 */
  assert_true(n > 0 && n < total);
  for (size_t i = 0; i < 256; i++) done += pieces[i].len;
  assert_int_equal(n, done);
  assert_ok(f->fs->write_at_v(NULL, fh, pieces + 256, 44, 10 + n, &n, &st), &st);
  assert_int_equal(done + n, total);
  assert_ok(f->fs->close(NULL, fh, &st), &st);
  assert_ok(f->fs->open_read(NULL, path, &fh, &st), &st);
  assert_ok(f->fs->size(NULL, fh, &size, &st), &st);
  assert_int_equal(size, 10 + total);
  assert_ok(f->fs->read_at(NULL, fh, got, 10 + total, 0, &n, &st), &st);
  assert_int_equal(n, 10 + total);
  assert_memory_equal(got, want, 10 + total);
  assert_ok(f->fs->close(NULL, fh, &st), &st);
  free(bytes);
  free(path);
}

/* H9: map and unmap are the only optional slots, and come as a pair: a
 * vtable without both is accepted (the library reads instead), one with
 * only one of them is refused naming the env. */
static void test_fs__the_map_slots_are_optional_as_a_pair(void **state) {
  hk_fs_vtable vt = *hk_fs_posix();
  hk_env env = HK_ENV_INIT;
  hk_status st = HK_STATUS_INIT;
  (void)state;
  assert_non_null(vt.map);
  assert_non_null(vt.unmap);
  env.fs = &vt;
  vt.map = NULL;
  vt.unmap = NULL;
  assert_ok(hk_env_check(&env, "env", &st), &st);
  vt.map = hk_fs_posix()->map;
  assert_status(hk_env_check(&env, "opts.env", &st), &st, HK_INVALID_ARGUMENT, "opts.env");
  assert_non_null(strstr(st.message, "map and unmap"));
  vt.map = NULL;
  vt.unmap = hk_fs_posix()->unmap;
  assert_status(hk_env_check(&env, "opts.env", &st), &st, HK_INVALID_ARGUMENT, "map and unmap");
  /* a required slot is still required */
  vt = *hk_fs_posix();
  vt.read_at = NULL;
  assert_status(hk_env_check(&env, "opts.env", &st), &st, HK_INVALID_ARGUMENT, "opts.env");
}

/* H9: the POSIX map gives the bytes at any offset (not page-aligned), and
 * refuses a range past the end of the file as it is now, also when the
 * file shrank after it was opened, rather than map pages whose touch
 * would raise SIGBUS. */
static void test_fs__posix_map_reads_range_and_refuses_past_eof(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_fs_file *fh = NULL;
  char *path = test_path(f->dir, "m.bin");
  char *data = malloc(10000 + 1);
  const void *addr = NULL;
  void *token = NULL;

  assert_non_null(data);
  for (size_t i = 0; i < 10000; i++) data[i] = (char)('a' + i % 26 + (i / 4096));
  data[10000] = '\0';
  create_file(f->fs, NULL, path, data);
  assert_ok(f->fs->open_read(NULL, path, &fh, &st), &st);
  assert_ok(f->fs->map(NULL, fh, 4097, 5000, &addr, &token, &st), &st);
  assert_non_null(addr);
  assert_memory_equal(addr, data + 4097, 5000);
  assert_ok(f->fs->unmap(NULL, token, &st), &st);
  /* up to the last byte exactly */
  assert_ok(f->fs->map(NULL, fh, 9999, 1, &addr, &token, &st), &st);
  assert_memory_equal(addr, data + 9999, 1);
  assert_ok(f->fs->unmap(NULL, token, &st), &st);
  /* one past it, an empty range and an offset past the end */
  assert_status(f->fs->map(NULL, fh, 9999, 2, &addr, &token, &st), &st, HK_OUT_OF_RANGE, "end of the file");
  assert_null(addr);
  assert_null(token);
  assert_int_not_equal(f->fs->map(NULL, fh, 0, 0, &addr, &token, &st), HK_OK);
  assert_int_not_equal(f->fs->map(NULL, fh, 20000, 1, &addr, &token, &st), HK_OK);
  /* the file shrinks under the open handle */
  assert_int_equal(truncate(path, 5000), 0);
  assert_status(f->fs->map(NULL, fh, 4097, 5000, &addr, &token, &st), &st, HK_OUT_OF_RANGE, "5000 bytes");
  assert_null(addr);
  assert_ok(f->fs->map(NULL, fh, 4097, 903, &addr, &token, &st), &st);
  assert_memory_equal(addr, data + 4097, 903);
  assert_ok(f->fs->unmap(NULL, token, &st), &st);
  assert_ok(f->fs->close(NULL, fh, &st), &st);
  free(data);
  free(path);
}

/* faulty_fs passes map/unmap through, counts them, can fail either (an
 * injected unmap failure still releases the mapping, as close does) and
 * can act as an fs without mapping. */
static void test_fs__faulty_map_and_unmap(void **state) {
  fixture *f = *state;
  const hk_fs_vtable *vt = faulty_fs_vtable();
  faulty_fs ff;
  hk_status st = HK_STATUS_INIT;
  hk_fs_file *fh = NULL;
  char *path = test_path(f->dir, "m.bin");
  const void *addr = NULL;
  void *token = NULL;

  faulty_fs_init(&ff);
  create_file(vt, &ff, path, "0123456789");
  assert_ok(vt->open_read(&ff, path, &fh, &st), &st);
  assert_ok(vt->map(&ff, fh, 2, 5, &addr, &token, &st), &st);
  assert_memory_equal(addr, "23456", 5);
  assert_int_equal(faulty_fs_open_maps(&ff), 1);
  faulty_fs_fail_errno(&ff, FAULTY_FS_UNMAP, 0, EIO, 0);
  assert_status(vt->unmap(&ff, token, &st), &st, HK_UNKNOWN, "m.bin");
  assert_int_equal(faulty_fs_open_maps(&ff), 0);
  faulty_fs_fail_errno(&ff, FAULTY_FS_MAP, 0, ENOMEM, 0);
  assert_status(vt->map(&ff, fh, 2, 5, &addr, &token, &st), &st, HK_UNKNOWN, "m.bin");
  assert_null(addr);
  assert_int_equal(faulty_fs_calls(&ff, FAULTY_FS_MAP), 1);
  assert_int_equal(faulty_fs_injected(&ff), 1);
  assert_string_equal(faulty_fs_slot_name(FAULTY_FS_MAP), "map");
  assert_string_equal(faulty_fs_slot_name(FAULTY_FS_UNMAP), "unmap");
  faulty_fs_reset(&ff);
  faulty_fs_no_map(&ff, 1);
  assert_status(vt->map(&ff, fh, 2, 5, &addr, &token, &st), &st, HK_UNIMPLEMENTED, "m.bin");
  assert_int_equal(faulty_fs_calls(&ff, FAULTY_FS_ANY), 0);
  assert_int_equal(faulty_fs_open_maps(&ff), 0);
  assert_ok(vt->close(&ff, fh, &st), &st);
  faulty_fs_destroy(&ff);
  free(path);
}

static void test_fs__posix_create_excl_refuses_existing(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_fs_file *fh = NULL;
  char *path = test_path(f->dir, "exists");

  create_file(f->fs, NULL, path, "x");
  assert_status(f->fs->create_excl(NULL, path, &fh, &st), &st, HK_ALREADY_EXISTS, path);
  free(path);
}

static void test_fs__posix_missing_file_is_not_found_naming_it(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_fs_file *fh = NULL;
  hk_fs_stat sb;
  char *path = test_path(f->dir, "missing");
  char *below = test_path(f->dir, "missing/deeper");

  assert_status(f->fs->open_read(NULL, path, &fh, &st), &st, HK_NOT_FOUND, path);
  assert_status(f->fs->stat(NULL, path, &sb, &st), &st, HK_NOT_FOUND, path);
  assert_status(f->fs->unlink(NULL, path, &st), &st, HK_NOT_FOUND, path);
  assert_status(f->fs->create_excl(NULL, below, &fh, &st), &st, HK_NOT_FOUND, below);
  assert_status(f->fs->list(NULL, path, NULL, NULL, &st), &st, HK_NOT_FOUND, path);
  assert_status(f->fs->sync_dir(NULL, path, &st), &st, HK_NOT_FOUND, path);
  free(path);
  free(below);
}

static void test_fs__posix_stat_reports_size_type_and_mtime(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_fs_stat sb;
  char *path = test_path(f->dir, "s");

  create_file(f->fs, NULL, path, "12345");
  memset(&sb, 0xff, sizeof sb);
  assert_ok(f->fs->stat(NULL, path, &sb, &st), &st);
  assert_int_equal(sb.is_dir, 0);
  assert_int_equal(sb.size, 5);
  assert_true(sb.mtime > 1e9);
  assert_ok(f->fs->stat(NULL, f->dir, &sb, &st), &st);
  assert_int_not_equal(sb.is_dir, 0);
  free(path);
}

static void test_fs__posix_rename_replaces_and_sync_dir(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  char *from = test_path(f->dir, "from");
  char *to = test_path(f->dir, "to");
  size_t n = 0;

  create_file(f->fs, NULL, from, "new");
  create_file(f->fs, NULL, to, "old contents");
  assert_ok(f->fs->rename(NULL, from, to, &st), &st);
  assert_ok(f->fs->sync_dir(NULL, f->dir, &st), &st);
  assert_false(test_path_exists(from));
  char *got = test_read_file(to, &n);
  assert_non_null(got);
  assert_int_equal(n, 3);
  assert_memory_equal(got, "new", 3);
  free(got);
  /* a failed rename names both paths */
  assert_status(f->fs->rename(NULL, from, to, &st), &st, HK_NOT_FOUND, from);
  assert_non_null(strstr(st.message, to));
  free(from);
  free(to);
}

typedef struct names {
  int n;
  int saw_a, saw_b, saw_dots;
  int stop_after;
} names;

static hk_code collect(void *user, const char *name, hk_status *st) {
  names *l = user;
  l->n++;
  if (strcmp(name, "a") == 0) l->saw_a = 1;
  if (strcmp(name, "b") == 0) l->saw_b = 1;
  if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) l->saw_dots = 1;
  if (l->stop_after && l->n == l->stop_after) return hk_status_set(st, HK_CANCELLED, "stop at %s", name);
  return HK_OK;
}

static void test_fs__posix_list_mkdir_unlink(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  char *a = test_path(f->dir, "a");
  char *b = test_path(f->dir, "b");
  names l;

  create_file(f->fs, NULL, a, "1");
  assert_ok(f->fs->mkdir(NULL, b, &st), &st);
  assert_status(f->fs->mkdir(NULL, b, &st), &st, HK_ALREADY_EXISTS, b);
  memset(&l, 0, sizeof l);
  assert_ok(f->fs->list(NULL, f->dir, collect, &l, &st), &st);
  assert_int_equal(l.n, 2);
  assert_true(l.saw_a && l.saw_b);
  assert_false(l.saw_dots);
  /* a callback error stops the listing and is returned */
  memset(&l, 0, sizeof l);
  l.stop_after = 1;
  assert_status(f->fs->list(NULL, f->dir, collect, &l, &st), &st, HK_CANCELLED, "stop at");
  assert_int_equal(l.n, 1);
  assert_ok(f->fs->unlink(NULL, a, &st), &st);
  assert_false(test_path_exists(a));
  free(a);
  free(b);
}

static void test_fs__posix_handles_are_independent(void **state) {
  fixture *f = *state;
  hk_status st = HK_STATUS_INIT;
  hk_fs_file *h[3];
  char *p = test_path(f->dir, "h");
  char c[3];
  size_t n;

  create_file(f->fs, NULL, p, "xyz");
  for (int i = 0; i < 3; i++) assert_ok(f->fs->open_read(NULL, p, &h[i], &st), &st);
  assert_ptr_not_equal(h[0], h[1]);
  for (int i = 0; i < 3; i++) {
    assert_ok(f->fs->read_at(NULL, h[i], &c[i], 1, (uint64_t)i, &n, &st), &st);
    assert_int_equal(n, 1);
  }
  assert_memory_equal(c, "xyz", 3);
  for (int i = 0; i < 3; i++) assert_ok(f->fs->close(NULL, h[i], &st), &st);
  free(p);
}

/* ---- faulty_fs ---------------------------------------------------------------- */

static void test_fs__faulty_fails_nth_call_of_a_slot(void **state) {
  fixture *f = *state;
  faulty_fs ff;
  const hk_fs_vtable *vt = faulty_fs_vtable();
  hk_status st = HK_STATUS_INIT;
  hk_fs_stat sb;
  char *p = test_path(f->dir, "f");

  faulty_fs_init(&ff);
  create_file(vt, &ff, p, "data");
  assert_int_equal(faulty_fs_calls(&ff, FAULTY_FS_CREATE_EXCL), 1);
  assert_int_equal(faulty_fs_calls(&ff, FAULTY_FS_CLOSE), 1);
  assert_int_equal(faulty_fs_open_handles(&ff), 0);

  faulty_fs_fail_errno(&ff, FAULTY_FS_STAT, 1, EIO, 0);
  assert_int_equal(faulty_fs_calls(&ff, FAULTY_FS_ANY), 0); /* arming zeroes the counters */
  assert_ok(vt->stat(&ff, p, &sb, &st), &st);
  assert_status(vt->stat(&ff, p, &sb, &st), &st, HK_UNKNOWN, p);
  assert_ok(vt->stat(&ff, p, &sb, &st), &st);
  assert_int_equal(faulty_fs_injected(&ff), 1);
  assert_int_equal(faulty_fs_calls(&ff, FAULTY_FS_STAT), 3);

  faulty_fs_fail_errno(&ff, FAULTY_FS_STAT, 1, ENOSPC, 1);
  assert_ok(vt->stat(&ff, p, &sb, &st), &st);
  assert_status(vt->stat(&ff, p, &sb, &st), &st, HK_RESOURCE_EXHAUSTED, p);
  assert_status(vt->stat(&ff, p, &sb, &st), &st, HK_RESOURCE_EXHAUSTED, p);
  assert_int_equal(faulty_fs_injected(&ff), 2);

  faulty_fs_fail_code(&ff, FAULTY_FS_UNLINK, 0, HK_PERMISSION_DENIED, 0);
  assert_status(vt->unlink(&ff, p, &st), &st, HK_PERMISSION_DENIED, p);
  assert_true(test_path_exists(p)); /* an injected failure does not reach the disk */
  faulty_fs_destroy(&ff);
  free(p);
}

static void test_fs__faulty_counts_across_slots_with_a_path_filter(void **state) {
  fixture *f = *state;
  faulty_fs ff;
  const hk_fs_vtable *vt = faulty_fs_vtable();
  hk_status st = HK_STATUS_INIT;
  hk_fs_stat sb;
  char *a = test_path(f->dir, "a.safetensors");
  char *b = test_path(f->dir, "b.meta");

  faulty_fs_init(&ff);
  create_file(vt, &ff, a, "1");
  create_file(vt, &ff, b, "2");
  faulty_fs_match(&ff, ".meta");
  faulty_fs_fail_errno(&ff, FAULTY_FS_ANY, 1, EIO, 0);
  assert_ok(vt->stat(&ff, b, &sb, &st), &st);                 /* eligible call 0 */
  assert_ok(vt->stat(&ff, a, &sb, &st), &st);                 /* not eligible */
  assert_ok(vt->unlink(&ff, a, &st), &st);                    /* not eligible */
  assert_status(vt->unlink(&ff, b, &st), &st, HK_UNKNOWN, b); /* eligible call 1 */
  assert_int_equal(faulty_fs_calls(&ff, FAULTY_FS_ANY), 4);
  assert_int_equal(faulty_fs_calls(&ff, FAULTY_FS_UNLINK), 2);
  assert_false(test_path_exists(a));
  assert_true(test_path_exists(b));
  faulty_fs_destroy(&ff);
  free(a);
  free(b);
}

static void test_fs__faulty_short_writes_and_disk_full(void **state) {
  fixture *f = *state;
  faulty_fs ff;
  const hk_fs_vtable *vt = faulty_fs_vtable();
  hk_status st = HK_STATUS_INIT;
  hk_fs_file *fh = NULL;
  char *p = test_path(f->dir, "w");
  size_t w = 0;

  faulty_fs_init(&ff);
  faulty_fs_short_writes(&ff, 3);
  faulty_fs_space(&ff, 5);
  assert_ok(vt->create_excl(&ff, p, &fh, &st), &st);
  assert_int_equal(faulty_fs_open_handles(&ff), 1);
  assert_ok(vt->write(&ff, fh, "abcdefgh", 8, &w, &st), &st);
  assert_int_equal(w, 3);
  assert_ok(vt->write(&ff, fh, "defgh", 5, &w, &st), &st);
  assert_int_equal(w, 2); /* the limit cuts the write short */
  assert_status(vt->write(&ff, fh, "fgh", 3, &w, &st), &st, HK_RESOURCE_EXHAUSTED, p);
  assert_int_equal(w, 0);
  /* close with an injected error still releases the file */
  faulty_fs_fail_errno(&ff, FAULTY_FS_CLOSE, 0, EIO, 0);
  assert_status(vt->close(&ff, fh, &st), &st, HK_UNKNOWN, p);
  assert_int_equal(faulty_fs_open_handles(&ff), 0);
  size_t n = 0;
  char *got = test_read_file(p, &n);
  assert_non_null(got);
  assert_int_equal(n, 5);
  assert_memory_equal(got, "abcde", 5);
  free(got);
  faulty_fs_destroy(&ff);
  free(p);
}

static void test_fs__faulty_binds_into_an_env(void **state) {
  faulty_fs ff;
  hk_env env = HK_ENV_INIT;
  hk_status st = HK_STATUS_INIT;
  (void)state;
  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &env);
  assert_ptr_equal(env.fs, faulty_fs_vtable());
  assert_ptr_equal(env.fs_user, &ff);
  assert_ok(hk_env_check(&env, "env", &st), &st);
  assert_string_equal(faulty_fs_slot_name(FAULTY_FS_WRITE), "write");
  assert_string_equal(faulty_fs_slot_name(FAULTY_FS_ANY), "any");
  faulty_fs_destroy(&ff);
}

/* D4.1 through a public writer (the state file is written atomically by
 * the fs layer): at every injected failure the previous file stays whole,
 * no temporary file or handle is left, and short writes are looped over. */
static void test_fs__an_atomic_write_failing_at_any_call_leaves_the_old_file(void **state) {
  fixture *f = *state;
  faulty_fs ff;
  hk_env env = HK_ENV_INIT;
  hk_status st = HK_STATUS_INIT;
  const char *names[1] = {"model.ckpt-2"};
  char *state_path = test_path(f->dir, "checkpoint");
  size_t n = 0;

  assert_int_equal(test_write_file(state_path, "model_checkpoint_path: \"old\"\n", 29), 0);
  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &env);
  for (long k = 0;; k++) {
    faulty_fs_fail_errno(&ff, FAULTY_FS_ANY, k, ENOSPC, 0);
    hk_code rc = hk_checkpoint_state_update(&env, f->dir, "model.ckpt-2", names, 1, NULL, 0, NULL, &st);
    assert_int_equal(faulty_fs_open_handles(&ff), 0);
    assert_int_equal(test_dir_count_matching(f->dir, ".tmp-"), 0);
    if (faulty_fs_injected(&ff) == 0) {
      assert_ok(rc, &st);
      break;
    }
    char *text = test_read_file(state_path, &n);
    assert_non_null(text);
    if (rc != HK_OK) {
      assert_status(rc, &st, HK_RESOURCE_EXHAUSTED, "checkpoint");
      /* failed before the rename: the old file; after it (directory
       * fsync): the new one, whole either way */
      assert_true(strstr(text, "\"old\"") || strstr(text, "model.ckpt-2"));
    }
    free(text);
  }
  /* one byte per write call still writes the whole file */
  faulty_fs_reset(&ff);
  faulty_fs_short_writes(&ff, 1);
  names[0] = "model.ckpt-3";
  assert_ok(hk_checkpoint_state_update(&env, f->dir, "model.ckpt-3", names, 1, NULL, 0, NULL, &st), &st);
  assert_true(faulty_fs_calls(&ff, FAULTY_FS_WRITE) > 20);
  char *text = test_read_file(state_path, &n);
  assert_non_null(text);
  assert_non_null(strstr(text, "model_checkpoint_path: \"model.ckpt-3\"\n"));
  free(text);
  assert_int_equal(test_dir_count_matching(f->dir, ".tmp-"), 0);
  faulty_fs_destroy(&ff);
  free(state_path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fs__errno_values_map_to_status_codes),
      cmocka_unit_test(test_fs__posix_vtable_is_complete),
      cmocka_unit_test_setup_teardown(test_fs__posix_write_then_read_back, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fs__posix_write_at_v_writes_pieces_in_order, setup, teardown),
      cmocka_unit_test(test_fs__the_map_slots_are_optional_as_a_pair),
      cmocka_unit_test_setup_teardown(test_fs__posix_map_reads_range_and_refuses_past_eof, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fs__faulty_map_and_unmap, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fs__posix_create_excl_refuses_existing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fs__posix_missing_file_is_not_found_naming_it, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fs__posix_stat_reports_size_type_and_mtime, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fs__posix_rename_replaces_and_sync_dir, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fs__posix_list_mkdir_unlink, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fs__posix_handles_are_independent, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fs__faulty_fails_nth_call_of_a_slot, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fs__faulty_counts_across_slots_with_a_path_filter, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fs__faulty_short_writes_and_disk_full, setup, teardown),
      cmocka_unit_test(test_fs__faulty_binds_into_an_env),
      cmocka_unit_test_setup_teardown(test_fs__an_atomic_write_failing_at_any_call_leaves_the_old_file, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
