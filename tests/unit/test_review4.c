/*
 * test_review4 — adversarial review of CheckpointSaverHook and
 * AsyncCheckpointSaverHook (src/hooks/checkpoint_saver.c), the event files
 * they write (src/ckpt/events.c) and how sessions drive them, against
 * contract groups K and L, D3, D7, H3, H6, H26 and C94's "All of this runs
 * again after every re-creation".
 *
 * Every test here is marked "DEVIATION:" and fails against the code as
 * reviewed: each pins one place where the code does not do what the cited
 * clause says. Threads are made deterministic by a file system that holds
 * the writer thread at chosen calls until the test lets it go; where the
 * training thread would wait for the writer in a correct implementation, a
 * helper thread opens the gate after a pause (liveness only: nothing here
 * asserts on timing). Run under TSan too (-DHOOKED_SANITIZE=thread).
 */
#include "session_fixture.h"
#include "faulty_fs.h"
#include "gate_fs.h"
#include "test_env.h"
#include "tmpdir.h"

#include <hooked/checkpoint.h>
#include <hooked/hooks.h>
#include <hooked/scaffold.h>
#include <hooked/sys/fs.h>

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a gating file system ------------------------------------------------------------ */

/*
 * A gate_fs over `base` (a faulty_fs, itself over POSIX) that holds only the
 * asynchronous hook's writer thread: the test's own thread is exempt. Its
 * list gate holds the writer's stale-temporary cleanup; its write gate holds
 * writes to a chosen data file. The observer below adds, on the test's
 * thread, when `race` is armed: a write to a graph.txt temporary file made
 * while the writer is held at the list gate opens that gate and waits until
 * the writer has gone past its stale-temporary cleanup (it creates its data
 * file's temporary next): the interleaving a concurrent writer thread can
 * always produce. Fields below are guarded by gate.mu.
 */
typedef struct rfs {
  gate_fs gate;
  int race;             /* arm the graph.txt interleaving */
  int writer_made_data; /* the writer created a .safetensors temporary */
  int graph_while_held; /* the training thread wrote graph.txt while the writer was held */
  int event_syncs;      /* fsyncs of event files */
} rfs;

enum { TAG_GRAPH_TMP = 1, TAG_EVENT = 2 };

static unsigned rfs_created(void *user, gate_fs *g, const char *path) {
  rfs *r = user;
  unsigned tag = 0;
  if (gate_fs_exempt_here(g) && strstr(path, "graph.txt.tmp-") != NULL) tag |= TAG_GRAPH_TMP;
  if (strstr(path, "tfevents") != NULL) tag |= TAG_EVENT;
  if (!gate_fs_exempt_here(g) && strstr(path, ".safetensors.tmp-") != NULL) {
    r->writer_made_data = 1;
    pthread_cond_broadcast(&g->cv);
  }
  return tag;
}

static void rfs_writing(void *user, gate_fs *g, unsigned tag) {
  rfs *r = user;
  if ((tag & TAG_GRAPH_TMP) && r->race && g->list_closed && g->list_arrivals > 0) {
    r->graph_while_held = 1;
    g->list_closed = 0;
    pthread_cond_broadcast(&g->cv);
    while (!r->writer_made_data) pthread_cond_wait(&g->cv, &g->mu);
  }
}

static void rfs_syncing(void *user, gate_fs *g, unsigned tag) {
  rfs *r = user;
  (void)g;
  if (tag & TAG_EVENT) r->event_syncs++;
}

static const gate_fs_observer rfs_observer = {rfs_created, rfs_writing, rfs_syncing};

/* Opens every gate after a pause, for a training thread that (correctly)
 * waits for the writer while the writer is held. */
static void *open_later(void *arg) {
  test_sleep_real_ms(300);
  gate_fs_open(arg);
  return NULL;
}

/* ---- fixture --------------------------------------------------------------------------- */

typedef struct fixture {
  test_env *te;
  char *tmp;
  char *dir;
  fake_executor *fx;
  hk_handle gs, train;
  hk_hook *hooks[2];
  hk_session *s;
  hk_scaffold *scaffold;
  hk_saver *saver;
  faulty_fs ff;
  rfs fs;
  int preempt; /* preempt the next run of the train op */
  hk_checkpoint_saver_options o;
  hk_status st;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  assert_non_null(f);
  f->te = test_env_new();
  f->tmp = test_tmpdir_new("review4");
  f->dir = test_path(f->tmp, "ckpt");
  f->fx = fake_training_executor(f->te, NULL, &f->gs, &f->train);
  faulty_fs_init(&f->ff);
  gate_fs_init(&f->fs.gate, faulty_fs_vtable(), &f->ff);
  gate_fs_exempt(&f->fs.gate, pthread_self());
  gate_fs_observe(&f->fs.gate, &rfs_observer, &f->fs);
  f->te->env.fs = gate_fs_vtable();
  f->te->env.fs_user = &f->fs.gate;
  hk_checkpoint_saver_options_init(&f->o, HK_CHECKPOINT_SAVER_OPTIONS_VERSION);
  f->o.env = &f->te->env;
  f->o.checkpoint_dir = f->dir;
  f->o.save_steps = 1000;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  gate_fs_open(&f->fs.gate);
  session_close_and_free(f->s);
  hk_hook_free(f->hooks[0]);
  hk_hook_free(f->hooks[1]);
  hk_scaffold_free(f->scaffold);
  hk_saver_free(f->saver);
  assert_int_equal(faulty_fs_open_handles(&f->ff), 0);
  faulty_fs_destroy(&f->ff);
  gate_fs_destroy(&f->fs.gate);
  test_tmpdir_free(f->tmp);
  free(f->dir);
  return fixture_release(f, f->fx, f->te);
}

static hk_code preempt_train(void *user, fake_executor *fx, const hk_run_args *args, hk_status *st) {
  fixture *f = user;
  (void)fx;
  if (!f->preempt || args->ntargets == 0 || args->targets[0] != f->train) return HK_OK;
  f->preempt = 0;
  return hk_status_set(st, HK_ABORTED, "preempted");
}

static hk_code open_session(fixture *f, size_t nhooks, const char *checkpoint_dir) {
  hk_session_options so;
  test_session_options(&so, &f->te->env, HK_SESSION_MONITORED, fake_executor_executor(f->fx), f->hooks, nhooks);
  so.scaffold = f->scaffold;
  so.checkpoint_dir = checkpoint_dir;
  fake_executor_on_run(f->fx, preempt_train, f);
  return hk_session_new(&f->s, &so, &f->st);
}

static hk_code step(fixture *f) { return session_run_train(f->s, f->train, &f->st); }

static hk_code close_session(fixture *f) {
  hk_code rc = hk_session_close(f->s, HK_OK, &f->st);
  hk_session_free(f->s);
  f->s = NULL;
  return rc;
}

/* Event files in dir; the first one's name into name (may be NULL). */
static int event_files(const char *dir, char *name, size_t cap) {
  DIR *d = opendir(dir);
  struct dirent *e;
  int n = 0;
  if (d == NULL) return 0;
  while ((e = readdir(d)) != NULL)
    if (strstr(e->d_name, "tfevents") != NULL) {
      if (n == 0 && name != NULL) snprintf(name, cap, "%s", e->d_name);
      n++;
    }
  closedir(d);
  return n;
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

/* ---- H26, C98: the SessionLog event ----------------------------------------------------- */

/*
 * DEVIATION: C98 asks for "an event SessionLog CHECKPOINT" and H26 for
 * TensorBoard's event files. In tensorflow/core/util/event.proto the Event
 * oneof is file_version = 3, graph_def = 4, summary = 5, log_message = 6,
 * session_log = 7. events.c writes the SessionLog under field 6 (tag 0x32),
 * so TensorBoard and TF's summary_iterator read it as a LogMessage, not as a
 * SessionLog (test_events decodes field 6 too, mirroring the bug). Expected
 * tag: (7 << 3) | 2 = 0x3a.
 */
static void test_review4__h26_c98_session_log_is_event_field_7(void **state) {
  fixture *f = *state;
  char name[600], *path;
  unsigned char *data;
  size_t n = 0, off = 0;
  int field6 = 0, field7 = 0;

  f->o.save_graph_def = 0;
  assert_ok(hk_checkpoint_saver_hook_new(&f->hooks[0], &f->o, &f->st), &f->st);
  assert_ok(open_session(f, 1, NULL), &f->st);
  assert_ok(close_session(f), &f->st);

  assert_int_equal(event_files(f->dir, name, sizeof name), 1);
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
}

/* ---- H26: one event writer per directory per session --------------------------------- */

/*
 * DEVIATION: H26 "one writer per directory per session, shared by the hooks
 * writing there". Each checkpoint hook opens its own hk__event_writer in
 * begin(), so two hooks saving into the same checkpoint_dir in one session
 * (here two CheckpointSaverHooks with different basenames) create two event
 * files ("...<host>" and "...<host>.1"). Fix: a per-session registry of
 * event writers keyed by directory (reference-counted, flushed at end()
 * and close), obtained by begin() (C93).
 */
static void test_review4__h26_one_event_file_per_directory_per_session(void **state) {
  fixture *f = *state;

  f->o.save_graph_def = 0;
  f->o.checkpoint_basename = "a.ckpt";
  assert_ok(hk_checkpoint_saver_hook_new(&f->hooks[0], &f->o, &f->st), &f->st);
  f->o.checkpoint_basename = "b.ckpt";
  assert_ok(hk_checkpoint_saver_hook_new(&f->hooks[1], &f->o, &f->st), &f->st);
  assert_ok(open_session(f, 2, NULL), &f->st);
  assert_ok(step(f), &f->st);
  assert_ok(close_session(f), &f->st);
  assert_int_equal(test_dir_count_matching(f->dir, "a.ckpt-0.safetensors"), 1);
  assert_int_equal(test_dir_count_matching(f->dir, "b.ckpt-0.safetensors"), 1);
  assert_int_equal(event_files(f->dir, NULL, 0), 1);
}

/* ---- D3.4: a background error met at a re-creation ----------------------------------- */

/*
 * DEVIATION: D3.4 "Completion is processed on the training thread at the
 * first after_run (or end()) after the write finished ... Failure: that
 * after_run returns the write's error". At a re-creation the asynchronous
 * hook processes a finished write inside after_create_session and returns
 * its error from there. C4/D2.4 then make the re-creation fail with a
 * non-preemption error, so a recoverable preemption puts the MS into the
 * failed state (H18): should_stop() is true, every later run() fails, and
 * end() — the final checkpoint of D3.5 — never runs. Per D3.4 the error
 * belongs to an after_run, which leaves the session usable.
 */
static void test_review4__d34_write_error_met_at_recreation_kills_session(void **state) {
  fixture *f = *state;
  hk_code rc;

  f->o.save_graph_def = 0;
  assert_ok(hk_async_checkpoint_saver_hook_new(&f->hooks[0], &f->o, &f->st), &f->st);
  /* The creation save of step 0 fails in the background (once). */
  faulty_fs_match(&f->ff, "model.ckpt-0.safetensors");
  faulty_fs_fail_errno(&f->ff, FAULTY_FS_WRITE, 0, ENOSPC, 0);
  assert_ok(open_session(f, 1, NULL), &f->st);
  /* The first run is preempted in the executor: no after_run saw the write's
   * result before the re-creation. */
  f->preempt = 1;
  rc = step(f);
  assert_status(rc, &f->st, HK_RESOURCE_EXHAUSTED, "model.ckpt");
  assert_false(hk_session_should_stop(f->s)); /* current code: failed state */
  assert_ok(step(f), &f->st);
  assert_ok(close_session(f), &f->st);
}

/* ---- D3.2, D4.2: graph.txt written beside a write in flight --------------------------- */

/*
 * DEVIATION: D3.2 "at most one save in flight" and D4.2's "one writer per
 * directory is assumed" (step 1 of every save removes stale
 * "graph.txt.tmp-XXXXXX" files). At a re-creation (C94: "All of this runs
 * again"), the asynchronous hook writes graph.txt on the training thread
 * BEFORE it waits for the write in flight (cs_after_create_session calls
 * write_graph_file, then writer_wait_idle). The writer thread's stale-file
 * cleanup then deletes the training thread's graph.txt temporary, the
 * rename fails with NOT_FOUND, after_create_session fails, and the MS —
 * which was only recovering from a preemption — enters the failed state.
 * Fix: wait for the writer (writer_wait_idle) before write_graph_file (what
 * C105 now says: graph.txt is written on the training thread once any write
 * in flight has finished).
 */
static void test_review4__d32_graph_txt_written_beside_write_in_flight(void **state) {
  fixture *f = *state;
  pthread_t opener;
  hk_code rc;

  assert_ok(hk_async_checkpoint_saver_hook_new(&f->hooks[0], &f->o, &f->st), &f->st); /* save_graph_def 1 */
  gate_fs_close_list(&f->fs.gate); /* hold the creation save's writer before its stale-file cleanup */
  assert_ok(open_session(f, 1, NULL), &f->st);
  gate_fs_wait_list_arrival(&f->fs.gate);
  pthread_mutex_lock(&f->fs.gate.mu);
  f->fs.race = 1;
  pthread_mutex_unlock(&f->fs.gate.mu);
  assert_int_equal(pthread_create(&opener, NULL, open_later, &f->fs.gate), 0);
  f->preempt = 1;
  rc = step(f); /* preempted, re-created, run again */
  pthread_join(opener, NULL);
  assert_ok(rc, &f->st); /* current code: NOT_FOUND renaming graph.txt.tmp-XXXXXX */
  assert_false(hk_session_should_stop(f->s));
  assert_false(f->fs.graph_while_held);
  assert_ok(close_session(f), &f->st);
}

/* ---- D3.2: the Saver shared with the restore of a re-creation -------------------------- */

/*
 * An allocator over the test's that never returns memory while the test
 * runs: a freed block is filled with 'Z' (NUL-terminated) and kept until
 * quarantine_release(), so a use after free reads "ZZZ...".
 */
typedef union qhdr {
  struct {
    size_t size;
    union qhdr *next;
  } h;
  max_align_t align;
} qhdr;

typedef struct quarantine {
  hk_allocator inner;
  pthread_mutex_t mu;
  qhdr *freed;
} quarantine;

static void *q_alloc(void *u, size_t size) {
  quarantine *q = u;
  qhdr *b = q->inner.alloc(q->inner.user, sizeof *b + size);
  if (b == NULL) return NULL;
  b->h.size = size;
  b->h.next = NULL;
  return b + 1;
}

static void q_free(void *u, void *p) {
  quarantine *q = u;
  qhdr *b;
  if (p == NULL) return;
  b = (qhdr *)p - 1;
  if (b->h.size > 0) {
    memset(p, 'Z', b->h.size);
    ((char *)p)[b->h.size - 1] = '\0';
  }
  pthread_mutex_lock(&q->mu);
  b->h.next = q->freed;
  q->freed = b;
  pthread_mutex_unlock(&q->mu);
}

static void *q_realloc(void *u, void *p, size_t size) {
  void *n;
  if (p == NULL) return q_alloc(u, size);
  n = q_alloc(u, size);
  if (n == NULL) return NULL;
  memcpy(n, p, ((qhdr *)p - 1)->h.size < size ? ((qhdr *)p - 1)->h.size : size);
  q_free(u, p);
  return n;
}

static void quarantine_release(quarantine *q) {
  while (q->freed != NULL) {
    qhdr *b = q->freed;
    q->freed = b->h.next;
    q->inner.free(q->inner.user, b);
  }
  pthread_mutex_destroy(&q->mu);
}

/*
 * DEVIATION: D3.2 (the file comment of checkpoint_saver.c: "While a write is
 * in flight the training thread touches neither the snapshot buffer nor the
 * Saver"), H6, D6.1. With checkpoint_dir set, a re-creation restores with
 * the Scaffold's Saver — the one the asynchronous hook writes with (C99) —
 * and the restore re-reads the managed list (D6.1: recover_impl frees the
 * Saver's list) while the writer thread is inside hk__saver_write, between
 * plan_build and the retention deletions. The plan's `drop` entries point
 * into that freed list, so the writer deletes a path read from freed memory
 * (a heap use-after-free under ASan, a data race under TSan). Here freed
 * memory reads "ZZZ...": the writer tries to unlink "ZZZ...Z.safetensors"
 * (relative to the process's working directory!) and logs "Ignoring: ...",
 * and model.ckpt-0, which retention (max_to_keep 1) had to delete, stays.
 * Fix: the session drains built-in asynchronous hooks (finishes the write in
 * flight) before a re-creation restores, and/or the Saver serializes its
 * list (plan_build copying the dropped names).
 */
static void test_review4__d32_restore_at_recreation_races_the_writer(void **state) {
  fixture *f = *state;
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  hk_scaffold_options sco = HK_SCAFFOLD_OPTIONS_INIT;
  quarantine q;
  hk_env senv = f->te->env;
  pthread_t opener;
  hk_code rc;

  memset(&q, 0, sizeof q);
  q.inner = f->te->env.allocator;
  pthread_mutex_init(&q.mu, NULL);
  senv.allocator.alloc = q_alloc;
  senv.allocator.realloc = q_realloc;
  senv.allocator.free = q_free;
  senv.allocator.user = &q;
  so.env = &senv;
  so.executor = fake_executor_executor(f->fx);
  so.max_to_keep = 1;
  assert_ok(hk_saver_new(&f->saver, &so, &f->st), &f->st);
  sco.env = &f->te->env;
  sco.saver = f->saver;
  assert_ok(hk_scaffold_new(&f->scaffold, &sco, &f->st), &f->st);

  f->o.save_steps = 1;
  f->o.block_when_busy = 1;
  f->o.save_graph_def = 0;
  assert_ok(hk_async_checkpoint_saver_hook_new(&f->hooks[0], &f->o, &f->st), &f->st);
  gate_fs_close(&f->fs.gate, "model.ckpt-1.safetensors", NULL);
  assert_ok(open_session(f, 1, f->dir), &f->st); /* save of 0 */
  assert_ok(step(f), &f->st);                    /* 0 processed; save of 1 planned (drops 0), held */
  gate_fs_wait_arrival(&f->fs.gate);
  assert_int_equal(pthread_create(&opener, NULL, open_later, &f->fs.gate), 0);
  f->preempt = 1;
  rc = step(f); /* preempted; the re-creation restores model.ckpt-0 with the same Saver */
  pthread_join(opener, NULL);
  assert_ok(rc, &f->st);
  assert_ok(close_session(f), &f->st);
  hk_hook_free(f->hooks[0]);
  f->hooks[0] = NULL;
  hk_scaffold_free(f->scaffold);
  f->scaffold = NULL;
  hk_saver_free(f->saver);
  f->saver = NULL;
  quarantine_release(&q);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, "ZZZ"), 0);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, "Ignoring:"), 0);
}

/* ---- H26: event files flushed at close ------------------------------------------------ */

/*
 * DEVIATION: H26 event files are "flushed by end() and at close". The hook
 * flushes (fsyncs) its event file only in end(); a close whose status is not
 * clean calls no end() (C16), and the session's detach then frees the event
 * writer, which closes the file without flushing it. The CHECKPOINT event
 * of the creation save is never made durable. Fix: flush in release_session
 * (or hk__event_writer_free) as well, ignoring/logging its error.
 */
static void test_review4__h26_event_file_flushed_at_unclean_close(void **state) {
  fixture *f = *state;

  f->o.save_graph_def = 0;
  assert_ok(hk_checkpoint_saver_hook_new(&f->hooks[0], &f->o, &f->st), &f->st);
  assert_ok(open_session(f, 1, NULL), &f->st); /* file_version + CHECKPOINT at 0 written */
  assert_ok(step(f), &f->st);
  assert_int_equal(event_files(f->dir, NULL, 0), 1);
  assert_status(hk_session_close(f->s, HK_INTERNAL, &f->st), &f->st, HK_INTERNAL, NULL); /* no end() (C16) */
  hk_session_free(f->s);
  f->s = NULL;
  assert_true(f->fs.event_syncs >= 1);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_review4__h26_c98_session_log_is_event_field_7),
      T(test_review4__h26_one_event_file_per_directory_per_session),
      T(test_review4__d34_write_error_met_at_recreation_kills_session),
      T(test_review4__d32_graph_txt_written_beside_write_in_flight),
      T(test_review4__d32_restore_at_recreation_races_the_writer),
      T(test_review4__h26_event_file_flushed_at_unclean_close),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
