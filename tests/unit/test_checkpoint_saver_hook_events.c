/*
 * Tests of CheckpointSaverHook's events: the CHECKPOINT SessionLog event
 * (C98; decoded in detail by test_events) and the event files' writers a
 * session shares (H26). *
 * Driven through real sessions over the scripted fake executor (a fetched
 * GS is the value at the start of the run, H29) and real temporary
 * directories; C100 drives the hook's vtable directly, as a harness would.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "checkpoint_saver_hook_tests.h"

/* ---- C98: the CHECKPOINT event (decoded in detail by test_events) ------------------- */

/* The one event file of dir (malloc'd name). */
static char *find_event_file(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char *name = NULL;

  assert_non_null(d);
  while ((e = readdir(d)) != NULL)
    if (strstr(e->d_name, "events.out.tfevents.") != NULL) {
      assert_null(name);
      name = strdup(e->d_name);
    }
  closedir(d);
  assert_non_null(name);
  return name;
}

static int has_bytes(const char *data, size_t n, const char *needle) {
  size_t k = strlen(needle), i;
  for (i = 0; i + k <= n; i++)
    if (memcmp(data + i, needle, k) == 0) return 1;
  return 0;
}

/* C98: each save writes a CHECKPOINT SessionLog event into the directory's event file. */
static void test_checkpoint_saver_hook__writes_an_event_file_with_checkpoint_events(void **state) {
  fixture *f = *state;
  char *save_path = test_path(f->dir, "model.ckpt");
  size_t n = 0;
  char *data = NULL;

  open_ok(f);
  assert_ok(close_session(f), &f->st);
  assert_int_equal(count_files(f, "events.out.tfevents."), 1);
  {
    char *name = find_event_file(f->dir);
    char *path = test_path(f->dir, name);
    data = test_read_file(path, &n);
    free(path);
    free(name);
  }
  assert_non_null(data);
  assert_true(has_bytes(data, n, "brain.Event:2"));
  assert_true(has_bytes(data, n, save_path));
  free(data);
  free(save_path);
}

/* ---- H26, C98: the SessionLog event and the event files' writers ------------------- */

/* The hook's options without listeners, saving only at creation (and end()). */
static void events_only_options(fixture *f) {
  f->o.save_steps = 1000;
  f->o.listeners = NULL;
  f->o.nlisteners = 0;
  f->o.save_graph_def = 0;
}

static uint64_t varint(const unsigned char **p, const unsigned char *end) {
  uint64_t v = 0;
  int shift = 0;
  while (*p < end && shift < 64) {
    unsigned char b = *(*p)++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
    shift += 7;
  }
  fail_msg("truncated varint");
  return 0;
}

/*
 * C98 asks for "an event SessionLog CHECKPOINT" and H26 for TensorBoard's
 * event files. In tensorflow/core/util/event.proto the Event oneof is
 * file_version = 3, graph_def = 4, summary = 5, log_message = 6,
 * session_log = 7: the SessionLog goes under field 7 (tag (7 << 3) | 2 =
 * 0x3a), never field 6 (which TensorBoard and TF's summary_iterator read
 * as a LogMessage).
 */
static void test_checkpoint_saver_hook__the_checkpoint_session_log_is_event_field_7(void **state) {
  fixture *f = *state;
  char *name, *path;
  unsigned char *data;
  size_t n = 0, off = 0;
  int field6 = 0, field7 = 0;

  events_only_options(f);
  open_ok(f);
  assert_ok(close_session(f), &f->st);

  assert_int_equal(count_files(f, "tfevents"), 1);
  name = find_event_file(f->dir);
  path = test_path(f->dir, name);
  data = (unsigned char *)test_read_file(path, &n);
  assert_non_null(data);
  while (n - off >= 16) {
    uint64_t len = 0;
    const unsigned char *p, *end;
    int i;
    for (i = 7; i >= 0; i--) len = (len << 8) | data[off + (size_t)i];
    assert_true(len <= n - off - 16);
    p = data + off + 12;
    end = p + len;
    while (p < end) {
      uint64_t tag = varint(&p, end);
      switch (tag & 7) {
        case 0: (void)varint(&p, end); break;
        case 1: p += 8; break;
        case 2: {
          uint64_t l = varint(&p, end);
          if (tag >> 3 == 6) field6++;
          if (tag >> 3 == 7) field7++;
          p += l;
          break;
        }
        default: fail_msg("unexpected wire type in tag 0x%llx", (unsigned long long)tag);
      }
    }
    off += 16 + (size_t)len;
  }
  assert_int_equal(field6, 0); /* no LogMessage */
  assert_int_equal(field7, 1); /* the SessionLog CHECKPOINT of the creation save (end: GS 0 already saved) */
  free(data);
  free(path);
  free(name);
}

/*
 * H26 "one writer per directory per session, shared by the hooks writing
 * there": two hooks saving into the same checkpoint_dir in one session
 * (here two CheckpointSaverHooks with different basenames) share one event
 * file (a per-session registry of event writers keyed by directory,
 * obtained by begin(), C93), never "...<host>" and "...<host>.1".
 */
static void test_checkpoint_saver_hook__one_event_file_per_directory_per_session(void **state) {
  fixture *f = *state;
  hk_hook *hooks[2] = {NULL, NULL};
  hk_session_options so;

  events_only_options(f);
  f->o.checkpoint_basename = "a.ckpt";
  make_hook(f);
  hooks[0] = f->hook;
  f->o.checkpoint_basename = "b.ckpt";
  assert_ok(hk_checkpoint_saver_hook_new(&hooks[1], &f->o, &f->st), &f->st);
  test_session_options(&so, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(f->fx), hooks, 2);
  assert_ok(hk_session_new(&f->s, &so, &f->st), &f->st);
  assert_ok(session_run_train(f->s, f->train, &f->st), &f->st);
  assert_ok(close_session(f), &f->st);
  hk_hook_free(hooks[1]);
  assert_int_equal(count_files(f, "a.ckpt-0.safetensors"), 1);
  assert_int_equal(count_files(f, "b.ckpt-0.safetensors"), 1);
  assert_int_equal(count_files(f, "tfevents"), 1);
}

/* A gate_fs (never closed) over POSIX whose observer counts fsyncs of event files. */
enum { TAG_EVENT = 1 };
static int event_syncs;

static unsigned tag_event_files(void *user, gate_fs *g, const char *path) {
  (void)user;
  (void)g;
  return strstr(path, "tfevents") != NULL ? TAG_EVENT : 0;
}

static void count_event_syncs(void *user, gate_fs *g, unsigned tag) {
  (void)user;
  (void)g;
  if (tag & TAG_EVENT) event_syncs++;
}

static const gate_fs_observer event_sync_observer = {tag_event_files, NULL, count_event_syncs};
static gate_fs event_sync_fs;

/*
 * H26: event files are "flushed by end() and at close". A close whose
 * status is not clean calls no end() (C16); the event file is flushed
 * (fsynced) all the same when the session's detach frees the event writer,
 * so the CHECKPOINT event of the creation save is made durable.
 */
static void test_checkpoint_saver_hook__event_file_flushed_at_unclean_close(void **state) {
  fixture *f = *state;

  event_syncs = 0;
  gate_fs_init(&event_sync_fs, NULL, NULL);
  gate_fs_observe(&event_sync_fs, &event_sync_observer, NULL);
  f->te->env.fs = gate_fs_vtable();
  f->te->env.fs_user = &event_sync_fs;
  events_only_options(f);
  open_ok(f); /* file_version + CHECKPOINT at 0 written */
  assert_ok(session_run_train(f->s, f->train, &f->st), &f->st);
  assert_int_equal(count_files(f, "tfevents"), 1);
  assert_status(hk_session_close(f->s, HK_INTERNAL, &f->st), &f->st, HK_INTERNAL, NULL); /* no end() (C16) */
  hk_session_free(f->s);
  f->s = NULL;
  assert_true(event_syncs >= 1);
  hk_hook_free(f->hook);
  f->hook = NULL;
  f->te->env.fs = NULL;
  f->te->env.fs_user = NULL;
  gate_fs_destroy(&event_sync_fs);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_checkpoint_saver_hook__writes_an_event_file_with_checkpoint_events),
      T(test_checkpoint_saver_hook__the_checkpoint_session_log_is_event_field_7),
      T(test_checkpoint_saver_hook__one_event_file_per_directory_per_session),
      T(test_checkpoint_saver_hook__event_file_flushed_at_unclean_close),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
