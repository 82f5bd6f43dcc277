/*
 * Tests of the event files checkpoint hooks write (contract H26; the
 * SessionLog CHECKPOINT event of C98). The files are produced through a
 * CheckpointSaverHook in a real session and decoded here independently of
 * the library: TensorFlow's record framing (uint64 LE length, masked CRC-32C
 * of the length, payload, masked CRC-32C of the payload, CRCs recomputed with
 * a bitwise reference) and the Event protocol buffer (wall_time = 1 double,
 * step = 2 int64, file_version = 3 string, session_log = 7 SessionLog{status
 * = 1, checkpoint_path = 2}; 6 is log_message, which must never appear).
 */
#include "session_fixture.h"
#include "tmpdir.h"
#include "faulty_fs.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_RECORDS 32

typedef struct event {
  int has_wall, has_step, has_version, has_log;
  double wall;
  int64_t step;
  char version[64];
  int64_t status;
  char path[512];
} event;

/* ---- independent decoding ---------------------------------------------------------- */

static uint32_t crc32c_ref(const unsigned char *p, size_t n) {
  uint32_t crc = 0xffffffffu;
  size_t i;
  int k;
  for (i = 0; i < n; i++) {
    crc ^= p[i];
    for (k = 0; k < 8; k++) crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1u)));
  }
  return crc ^ 0xffffffffu;
}

static uint32_t masked(const unsigned char *p, size_t n) {
  uint32_t c = crc32c_ref(p, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

static uint64_t get_le(const unsigned char *p, int nbytes) {
  uint64_t v = 0;
  int i;
  for (i = nbytes - 1; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

static uint64_t get_varint(const unsigned char **p, const unsigned char *end) {
  uint64_t v = 0;
  int shift = 0;
  while (*p < end) {
    unsigned char b = *(*p)++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
    shift += 7;
    assert_true(shift < 64);
  }
  fail_msg("truncated varint");
  return 0;
}

static void decode_session_log(const unsigned char *p, const unsigned char *end, event *e) {
  while (p < end) {
    uint64_t tag = get_varint(&p, end);
    if (tag == 0x08) {
      e->status = (int64_t)get_varint(&p, end);
    } else if (tag == 0x12) {
      uint64_t n = get_varint(&p, end);
      assert_true(n < sizeof e->path && n <= (uint64_t)(end - p));
      memcpy(e->path, p, (size_t)n);
      e->path[n] = '\0';
      p += n;
    } else {
      fail_msg("unexpected SessionLog tag 0x%llx", (unsigned long long)tag);
    }
  }
}

static void decode_event(const unsigned char *p, size_t len, event *e) {
  const unsigned char *end = p + len;
  memset(e, 0, sizeof *e);
  while (p < end) {
    uint64_t tag = get_varint(&p, end);
    uint64_t n;
    switch (tag) {
      case 0x09: { /* wall_time, fixed64 double */
        uint64_t bits;
        assert_true(end - p >= 8);
        bits = get_le(p, 8);
        memcpy(&e->wall, &bits, sizeof e->wall);
        e->has_wall = 1;
        p += 8;
        break;
      }
      case 0x10:
        e->step = (int64_t)get_varint(&p, end);
        e->has_step = 1;
        break;
      case 0x1a:
        n = get_varint(&p, end);
        assert_true(n < sizeof e->version && n <= (uint64_t)(end - p));
        memcpy(e->version, p, (size_t)n);
        e->version[n] = '\0';
        e->has_version = 1;
        p += n;
        break;
      case 0x3a: /* C98: session_log is field 7 of tensorflow/core/util/event.proto */
        n = get_varint(&p, end);
        assert_true(n <= (uint64_t)(end - p));
        decode_session_log(p, p + n, e);
        e->has_log = 1;
        p += n;
        break;
      default: fail_msg("unexpected Event tag 0x%llx", (unsigned long long)tag);
    }
  }
}

/* Parse a whole event file: every record's framing and both CRCs. @return the
 * number of events. */
static int parse_file(const char *path, event *out, int cap) {
  size_t n = 0, off = 0;
  unsigned char *data = (unsigned char *)test_read_file(path, &n);
  int count = 0;

  assert_non_null(data);
  while (off < n) {
    uint64_t len;
    assert_true(n - off >= 12);
    len = get_le(data + off, 8);
    assert_true(get_le(data + off + 8, 4) == masked(data + off, 8));
    assert_true(len <= n - off - 16);
    assert_true(get_le(data + off + 12 + len, 4) == masked(data + off + 12, (size_t)len));
    assert_true(count < cap);
    decode_event(data + off + 12, (size_t)len, &out[count++]);
    off += 16 + (size_t)len;
  }
  free(data);
  return count;
}

/* ---- fixture ---------------------------------------------------------------------- */

typedef struct fixture {
  test_env *te;
  char *tmp;
  char *dir;
  fake_executor *fx;
  hk_handle gs, train;
  hk_hook *hook;
  hk_session *s;
  hk_checkpoint_saver_options o;
  hk_status st;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof(*f));
  assert_non_null(f);
  f->te = test_env_new();
  f->tmp = test_tmpdir_new("events");
  f->dir = test_path(f->tmp, "ckpt");
  f->fx = fake_training_executor(f->te, NULL, &f->gs, &f->train);
  hk_checkpoint_saver_options_init(&f->o, HK_CHECKPOINT_SAVER_OPTIONS_VERSION);
  f->o.env = &f->te->env;
  f->o.checkpoint_dir = f->dir;
  f->o.save_steps = 1;
  f->o.save_graph_def = 0;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  session_close_and_free(f->s);
  hk_hook_free(f->hook);
  test_tmpdir_free(f->tmp);
  free(f->dir);
  return fixture_release(f, f->fx, f->te);
}

static void open_ok(fixture *f) {
  assert_ok(hk_checkpoint_saver_hook_new(&f->hook, &f->o, &f->st), &f->st);
  assert_ok(one_hook_session_new(&f->s, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(f->fx), &f->hook,
                                 NULL, &f->st),
            &f->st);
}

static void close_ok(fixture *f) {
  assert_ok(hk_session_close(f->s, HK_OK, &f->st), &f->st);
  hk_session_free(f->s);
  f->s = NULL;
}

/* "events.out.tfevents.<secs>.<host>" as the mock wall clock (1.7e9) gives it. */
static char *expected_name(void) {
  char host[256];
  char *name = malloc(600);
  assert_non_null(name);
  assert_int_equal(gethostname(host, sizeof host), 0);
  host[sizeof host - 1] = '\0';
  snprintf(name, 600, "events.out.tfevents.1700000000.%s", host);
  return name;
}

/* Event file names in dir, sorted; @return their count. */
static int event_files(const char *dir, char names[][600], int cap) {
  DIR *d = opendir(dir);
  struct dirent *e;
  int n = 0, i, j;

  if (d == NULL) return 0;
  while ((e = readdir(d)) != NULL)
    if (strstr(e->d_name, "tfevents") != NULL) {
      assert_true(n < cap);
      snprintf(names[n++], 600, "%s", e->d_name);
    }
  closedir(d);
  for (i = 1; i < n; i++)
    for (j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
      char t[600];
      memcpy(t, names[j], 600);
      memcpy(names[j], names[j - 1], 600);
      memcpy(names[j - 1], t, 600);
    }
  return n;
}

/* ---- tests ------------------------------------------------------------------------- */

static void test_events__h26_name_framing_and_checkpoint_events(void **state) {
  fixture *f = *state;
  char names[4][600];
  char *expect = expected_name();
  char *save_path = test_path(f->dir, "model.ckpt");
  char *path;
  event ev[MAX_RECORDS];
  int n, i;

  open_ok(f);
  assert_ok(session_run_train(f->s, f->train, &f->st), &f->st);
  assert_ok(session_run_train(f->s, f->train, &f->st), &f->st);
  close_ok(f);

  assert_int_equal(event_files(f->dir, names, 4), 1);
  assert_string_equal(names[0], expect);
  path = test_path(f->dir, names[0]);
  n = parse_file(path, ev, MAX_RECORDS);
  /* file_version first, then one CHECKPOINT per save: 0, 1, 2 (C101). */
  assert_int_equal(n, 4);
  assert_true(ev[0].has_version && ev[0].has_wall && !ev[0].has_log);
  assert_string_equal(ev[0].version, "brain.Event:2");
  assert_true(ev[0].wall == 1.7e9);
  for (i = 1; i < 4; i++) {
    assert_true(ev[i].has_log && ev[i].has_step && ev[i].has_wall && !ev[i].has_version);
    assert_true(ev[i].step == i - 1);
    assert_true(ev[i].status == 3);             /* SessionLog.CHECKPOINT */
    assert_string_equal(ev[i].path, save_path); /* no step suffix (C98) */
  }
  free(path);
  free(save_path);
  free(expect);
}

/* H26: created at the first write: a session whose first save never comes
 * leaves no event file. */
static hk_code failing_before_save(void *user, hk_raw_session *rs, int64_t step, hk_status *st) {
  (void)user;
  (void)rs;
  (void)step;
  return hk_status_set(st, HK_CANCELLED, "not now");
}

static void test_events__h26_created_at_first_write(void **state) {
  fixture *f = *state;
  static const hk_checkpoint_listener_vtable vt = {HK_CHECKPOINT_LISTENER_VTABLE_VERSION, NULL, failing_before_save,
                                                   NULL, NULL};
  hk_checkpoint_listener l = {&vt, NULL, "refuser"};
  char names[4][600];

  f->o.listeners = &l;
  f->o.nlisteners = 1;
  assert_ok(hk_checkpoint_saver_hook_new(&f->hook, &f->o, &f->st), &f->st);
  assert_status(one_hook_session_new(&f->s, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(f->fx), &f->hook,
                                     NULL, &f->st),
                &f->st, HK_CANCELLED, "not now");
  assert_true(test_path_exists(f->dir)); /* begin() ran */
  assert_int_equal(event_files(f->dir, names, 4), 0);
}

/* H26: an existing file of the same name is left alone; the writer appends
 * ".1" to its name. */
static void test_events__h26_name_collision_gets_suffix(void **state) {
  fixture *f = *state;
  char names[4][600];
  char *expect = expected_name();
  char *taken, *mine;
  char want[700];
  event ev[MAX_RECORDS];
  size_t n = 0;
  char *data;

  assert_int_equal(mkdir(f->dir, 0755), 0);
  taken = test_path(f->dir, expect);
  assert_int_equal(test_write_file(taken, "other", 5), 0);
  open_ok(f);
  close_ok(f);

  assert_int_equal(event_files(f->dir, names, 4), 2);
  snprintf(want, sizeof want, "%s.1", expect);
  assert_string_equal(names[1], want);
  data = test_read_file(taken, &n);
  assert_true(n == 5 && memcmp(data, "other", 5) == 0);
  free(data);
  mine = test_path(f->dir, want);
  assert_int_equal(parse_file(mine, ev, MAX_RECORDS), 2);
  assert_string_equal(ev[0].version, "brain.Event:2");
  assert_true(ev[1].status == 3 && ev[1].step == 0);
  free(mine);
  free(taken);
  free(expect);
}

/* A failed write is reported (H9 code, naming the file), and nothing is
 * appended after the torn record: the next event starts a new file, which
 * again begins with file_version. */
static void test_events__h26_write_error_starts_new_file(void **state) {
  fixture *f = *state;
  faulty_fs ff;
  char names[4][600];
  event ev[MAX_RECORDS];
  char *path;
  int i;

  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &f->te->env);
  open_ok(f);
  faulty_fs_match(&ff, "tfevents");
  faulty_fs_short_writes(&ff, 7);
  faulty_fs_fail_errno(&ff, FAULTY_FS_WRITE, 1, ENOSPC, 0); /* the second piece of the step-1 record */
  assert_status(session_run_train(f->s, f->train, &f->st), &f->st, HK_RESOURCE_EXHAUSTED, "tfevents");
  faulty_fs_reset(&ff);
  assert_ok(session_run_train(f->s, f->train, &f->st), &f->st);
  close_ok(f);
  assert_int_equal(faulty_fs_open_handles(&ff), 0);

  assert_int_equal(event_files(f->dir, names, 4), 2);
  /* The first file: file_version, step 0, then a torn record (not parsed). */
  path = test_path(f->dir, names[0]);
  {
    size_t n = 0;
    unsigned char *data = (unsigned char *)test_read_file(path, &n);
    size_t off = 0;
    int whole = 0;
    while (n - off >= 12 && get_le(data + off, 8) <= n - off - 16) {
      off += 16 + (size_t)get_le(data + off, 8);
      whole++;
    }
    assert_int_equal(whole, 2);
    assert_true(off < n); /* the torn piece is there, and nothing after it */
    free(data);
  }
  free(path);
  path = test_path(f->dir, names[1]);
  i = parse_file(path, ev, MAX_RECORDS);
  assert_int_equal(i, 2);
  assert_string_equal(ev[0].version, "brain.Event:2");
  assert_true(ev[1].step == 2 && ev[1].status == 3);
  free(path);
  faulty_fs_destroy(&ff);
}

/* A create failure is returned with the path and H9's code. */
static void test_events__h9_create_failure(void **state) {
  fixture *f = *state;
  faulty_fs ff;

  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &f->te->env);
  faulty_fs_match(&ff, "tfevents");
  faulty_fs_fail_errno(&ff, FAULTY_FS_CREATE_EXCL, 0, EACCES, 1);
  assert_ok(hk_checkpoint_saver_hook_new(&f->hook, &f->o, &f->st), &f->st);
  assert_status(one_hook_session_new(&f->s, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(f->fx), &f->hook,
                                     NULL, &f->st),
                &f->st, HK_PERMISSION_DENIED, "events.out.tfevents.");
  hk_hook_free(f->hook);
  f->hook = NULL;
  assert_int_equal(faulty_fs_open_handles(&ff), 0);
  faulty_fs_destroy(&ff);
}

/* H9: a file system that answers ABORTED or UNAVAILABLE for an event file
 * must not trigger session recovery: the event writer reports UNKNOWN,
 * naming the file, as every other checkpoint file does. */
static void test_events__h9_preemption_code_becomes_unknown(void **state) {
  fixture *f = *state;
  faulty_fs ff;

  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &f->te->env);
  faulty_fs_match(&ff, "tfevents");
  faulty_fs_fail_code(&ff, FAULTY_FS_CREATE_EXCL, 0, HK_ABORTED, 0);
  assert_ok(hk_checkpoint_saver_hook_new(&f->hook, &f->o, &f->st), &f->st);
  assert_status(one_hook_session_new(&f->s, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(f->fx), &f->hook,
                                     NULL, &f->st),
                &f->st, HK_UNKNOWN, "events.out.tfevents.");
  assert_non_null(strstr(f->st.message, "ABORTED"));
  hk_hook_free(f->hook);
  f->hook = NULL;
  assert_int_equal(faulty_fs_open_handles(&ff), 0);
  faulty_fs_destroy(&ff);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_events__h26_name_framing_and_checkpoint_events),
      T(test_events__h26_created_at_first_write),
      T(test_events__h26_name_collision_gets_suffix),
      T(test_events__h26_write_error_starts_new_file),
      T(test_events__h9_create_failure),
      T(test_events__h9_preemption_code_becomes_unknown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
