/*
 * crash_tests — the checker of test_crash.c's scenarios: crash consistency
 * of checkpoint saves, proven by exhaustive power-loss exploration
 * (D4.1–D4.5, D5, D6.2–D6.5, H31, C123; D3.3/D3.6 for the asynchronous
 * hook's writer thread).
 *
 * Each scenario runs once over tests/support/crash_fs, which forwards every
 * call to a fresh directory and records every operation of every thread in
 * one order. Then EVERY crash point of that recording is replayed under the
 * strict power-loss model of crash_fs.h (unsynced data lost, torn, zeroed or
 * kept; any subset of the directory changes no directory fsync has made
 * durable yet), and each distinct state is written into a fresh directory
 * and checked:
 *
 *   - no file appears that the run never wrote;
 *   - files no save may touch (an unmanaged checkpoint, a foreign file: D6.4)
 *     are there, unchanged;
 *   - the state file is, byte for byte, the previous one or one the run
 *     renamed into place, complete; every checkpoint it names exists and
 *     verifies (D4.4, H31), so hk_checkpoint_latest() returns its
 *     model_checkpoint_path, with no fallback;
 *   - hk_checkpoint_latest() returns the previous checkpoint or one the run
 *     wrote, never nothing or one older than the last save reported done
 *     (D4.5: "a save that returned is never lost"; the Saver's return, a
 *     listener's after_save for the hooks), and a Saver restores it
 *     COMPLETE: every CRC verifies, the recorded global step is the one in
 *     its name, and every variable holds what was saved at that step;
 *   - the NEXT save in that directory (a fresh Saver, as after a restart)
 *     succeeds, leaves no temporary file (D4.1, D4.2 step 1), only names it
 *     or the crashed run wrote, and a directory whose newest checkpoint is
 *     the new one, complete, with the same checks; and nothing outside
 *     retention (H60): every model.ckpt-<step> data file is listed in the
 *     state file, which lists at most max_to_keep — a checkpoint renamed
 *     into place by a save that crashed before its state file is adopted.
 *
 * Bounds: three small tensors (a data file is about 600 bytes); at most
 * CRASH_SUBSET_BITS pending directory changes explored as subsets (in-order
 * prefixes and all-but-one beyond); per-file data outcomes for at most two
 * unsynced files; every distinct (tree, last acknowledged save) checked
 * once. The trees live in /dev/shm when it exists ($HOOKED_CRASH_DIR
 * overrides).
 *
 * The scenarios, and the recording of each, are in test_crash.c.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "crash_tests.h"

/* ---- the model: global_step, v = 5 * step, w a fixed pattern ------------------------- */

static float w_value(size_t i) { return (float)i * 0.25f - 7.5f; }

void make_executor(test_env *te, model_vars *mv) {
  static const int64_t dims[1] = {W_N};
  float w[W_N];
  for (size_t i = 0; i < W_N; i++) w[i] = w_value(i);
  mv->fx = fake_training_executor(te, &mv->ex, &mv->gs, &mv->train);
  /* "v" += 5 per training step, so a checkpoint's contents show its step. */
  mv->v = fake_executor_add_variable(mv->fx, "v", HK_DTYPE_I64, 0, NULL, HK_VAR_TRAINABLE, NULL);
  mv->bump = fake_executor_add_op(mv->fx, "bump");
  fake_executor_op_increments(mv->fx, mv->bump, mv->v, 5);
  mv->w = fake_executor_add_variable(mv->fx, "w", HK_DTYPE_F32, 1, dims, HK_VAR_TRAINABLE, w);
}

static size_t var_index(hk_executor *ex, const char *name) {
  hk_status st = HK_STATUS_INIT;
  size_t idx = 0;
  assert_ok(hk_executor_find_variable(ex, name, &idx, &st), &st);
  return idx;
}

static void assign(hk_raw_session *rs, hk_executor *ex, const char *name, hk_dtype dt, int32_t rank,
                   const int64_t *dims, void *data) {
  hk_status st = HK_STATUS_INIT;
  hk_tensor t;
  assert_ok(hk_tensor_init(&t, dt, rank, dims, data, &st), &st);
  assert_ok(hk_raw_session_assign_variable(rs, var_index(ex, name), &t, &st), &st);
}

/* What a training program holds at `step`. */
void assign_step(hk_raw_session *rs, hk_executor *ex, int64_t step) {
  static const int64_t dims[1] = {W_N};
  int64_t gs = step, v = 5 * step;
  float w[W_N];
  for (size_t i = 0; i < W_N; i++) w[i] = w_value(i);
  assign(rs, ex, "global_step", HK_DTYPE_I64, 0, NULL, &gs);
  assign(rs, ex, "v", HK_DTYPE_I64, 0, NULL, &v);
  assign(rs, ex, "w", HK_DTYPE_F32, 1, dims, w);
}

hk_saver *saver_new(const hk_env *env, hk_executor *ex, int64_t max_to_keep) {
  hk_saver_options so = HK_SAVER_OPTIONS_INIT;
  hk_status st = HK_STATUS_INIT;
  hk_saver *sv = NULL;
  so.env = env;
  so.executor = ex;
  so.max_to_keep = max_to_keep;
  assert_ok(hk_saver_new(&sv, &so, &st), &st);
  return sv;
}

static int64_t step_of(const char *prefix) {
  const char *dash = strrchr(prefix, '-');
  return dash ? strtoll(dash + 1, NULL, 10) : -1;
}

/* A fresh directory for a recording or for the crash states: in memory
 * (/dev/shm) when there is one, since thousands of small trees are written
 * and removed and nothing here needs a disk; $HOOKED_CRASH_DIR overrides. */
char *fast_tmpdir(const char *tag) {
  const char *base = getenv("HOOKED_CRASH_DIR");
  struct stat sb;
  size_t n;
  char *path;
  if (!base || !*base)
    base = stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode) && access("/dev/shm", W_OK) == 0 ? "/dev/shm" : NULL;
  if (!base) return test_tmpdir_new(tag);
  n = strlen(base) + strlen(tag) + 32;
  path = malloc(n);
  assert_non_null(path);
  snprintf(path, n, "%s/hooked-%s-XXXXXX", base, tag);
  assert_non_null(mkdtemp(path));
  return path;
}

/* mkdir -p, directly (the hooks' own is what the scenarios test). */
static void mkdir_p(const char *path) {
  char *p = strdup(path);
  assert_non_null(p);
  for (char *s = p + 1; *s; s++) {
    if (*s != '/') continue;
    *s = '\0';
    if (!test_path_exists(p)) assert_int_equal(mkdir(p, 0755), 0);
    *s = '/';
  }
  if (!test_path_exists(p)) assert_int_equal(mkdir(p, 0755), 0);
  free(p);
}

double now_secs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the checker ------------------------------------------------------------------- */

typedef struct run_ctx {
  checker *ck;
  const crash_fs *cf; /* the recording being explored */
  const expect *ex;
  int64_t allowed[MAX_ALLOWED];
  size_t nallowed;
  int depth;
  int state_bad; /* the current state already counted as bad */
  const crash_state *cs;
} run_ctx;

static void violation(run_ctx *rc, const char *fmt, ...) {
  checker *ck = rc->ck;
  va_list ap;
  char what[768];
  if (!rc->state_bad) {
    rc->state_bad = 1;
    ck->bad++;
  }
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (ck->want && strstr(what, ck->want)) ck->want_hits++;
  if (ck->nmsgs < MAX_MSGS) {
    snprintf(ck->msgs[ck->nmsgs++], sizeof ck->msgs[0], "%s%s\n      in: %s", rc->depth ? "" : "[nested] ", what,
             crash_state_describe(rc->cs));
  }
}

static int allowed(const run_ctx *rc, int64_t step) {
  for (size_t i = 0; i < rc->nallowed; i++)
    if (rc->allowed[i] == step) return 1;
  return 0;
}

/* The steps a crash may restore: the previous one and every one the run wrote. */
static void collect_allowed(run_ctx *rc) {
  rc->nallowed = 0;
  if (rc->ex->prev >= 0) rc->allowed[rc->nallowed++] = rc->ex->prev;
  for (size_t i = 0; i < crash_fs_nops(rc->cf); i++) {
    const crash_op *op = crash_fs_op(rc->cf, i);
    const char *suf = ".safetensors";
    char pre[128];
    size_t n;
    snprintf(pre, sizeof pre, "%s/model.ckpt-", rc->ex->ck);
    if (op->kind != CRASH_OP_RENAME || strncmp(op->path2, pre, strlen(pre)) != 0) continue;
    n = strlen(op->path2);
    if (n < strlen(suf) || strcmp(op->path2 + n - strlen(suf), suf) != 0) continue;
    if (rc->nallowed < MAX_ALLOWED) rc->allowed[rc->nallowed++] = strtoll(op->path2 + strlen(pre), NULL, 10);
  }
}

/* Open, verify every CRC, check the recorded step; then restore through a
 * fresh Saver and compare every variable with the model at that step.
 * @return 0, or -1 with the reason in why. */
static int check_checkpoint(checker *ck, const hk_env *env, const char *prefix, int64_t step, int restore, char *why,
                            size_t cap) {
  hk_status st = HK_STATUS_INIT;
  hk_checkpoint_reader *r = NULL;
  hk_saver *sv;
  hk_raw_session *rs = NULL;
  hk_tensor t;
  int64_t gs, v;
  int ok = 0;

  if (hk_checkpoint_reader_open(&r, env, prefix, &st) != HK_OK) {
    snprintf(why, cap, "does not open: %.400s", st.message);
    return -1;
  }
  if (hk_checkpoint_reader_verify(r, &st) != HK_OK) {
    snprintf(why, cap, "does not verify: %.400s", st.message);
    hk_checkpoint_reader_free(r);
    return -1;
  }
  if (hk_checkpoint_reader_step(r) != step) {
    snprintf(why, cap, "records global_step %" PRId64 ", not %" PRId64, hk_checkpoint_reader_step(r), step);
    hk_checkpoint_reader_free(r);
    return -1;
  }
  hk_checkpoint_reader_free(r);
  if (!restore) return 0;

  sv = saver_new(env, ck->mv.ex, 5);
  assert_ok(hk_raw_session_open(&rs, ck->mv.ex, &st), &st);
  if (hk_saver_restore(sv, rs, prefix, &st) != HK_OK) {
    snprintf(why, cap, "does not restore: %.400s", st.message);
    ok = -1;
  }
  if (ok == 0) {
    assert_ok(hk_raw_session_read_variable(&t, rs, var_index(ck->mv.ex, "global_step"), &st), &st);
    memcpy(&gs, t.data, sizeof gs);
    assert_ok(hk_raw_session_read_variable(&t, rs, var_index(ck->mv.ex, "v"), &st), &st);
    memcpy(&v, t.data, sizeof v);
    if (gs != step || v != 5 * step) {
      snprintf(why, cap, "restores global_step %" PRId64 " and v %" PRId64 ", saved were %" PRId64 " and %" PRId64, gs,
               v, step, 5 * step);
      ok = -1;
    }
  }
  if (ok == 0) {
    assert_ok(hk_raw_session_read_variable(&t, rs, var_index(ck->mv.ex, "w"), &st), &st);
    assert_int_equal(t.nbytes, W_N * sizeof(float));
    for (size_t i = 0; i < W_N && ok == 0; i++) {
      float x;
      memcpy(&x, (const char *)t.data + i * sizeof x, sizeof x);
      if (x != w_value(i)) {
        snprintf(why, cap, "restores w[%zu] = %g, saved was %g", i, (double)x, (double)w_value(i));
        ok = -1;
      }
    }
  }
  hk_raw_session_free(rs);
  hk_saver_free(sv);
  return ok;
}

/*
 * The invariants of a directory a crash (or a save) left (D4.4, D4.5, D5).
 * `must`: the step the newest checkpoint must have (-1: any allowed one).
 * @return the step restored, -1 when there was nothing to restore.
 */
static int64_t check_restorable(run_ctx *rc, const hk_env *env, const char *dir, int64_t acked, int64_t must,
                                const char *when) {
  checker *ck = rc->ck;
  hk_status st = HK_STATUS_INIT;
  hk_checkpoint_state *cs = NULL;
  char *latest = NULL;
  char why[512];
  int64_t state_step = -1, restored = -1;
  hk_code code;

  code = hk_checkpoint_state_get(&cs, env, dir, NULL, &st);
  if (code == HK_OK) {
    state_step = step_of(hk_checkpoint_state_model_path(cs));
    for (size_t i = 0; i < hk_checkpoint_state_count(cs); i++) {
      const char *p = hk_checkpoint_state_path(cs, i);
      if (check_checkpoint(ck, env, p, step_of(p), 0, why, sizeof why) != 0)
        violation(rc, "%s: the state file names %s, which %s (D4.4)", when, p, why);
    }
    hk_checkpoint_state_free(cs);
  } else if (code != HK_NOT_FOUND) {
    violation(rc, "%s: the state file is not the previous or the new one, complete: %s (D4.4)", when, st.message);
  }

  st = (hk_status)HK_STATUS_INIT;
  code = hk_checkpoint_latest(&latest, env, dir, NULL, &st);
  if (code == HK_NOT_FOUND) {
    if (acked != CRASH_NO_MARK)
      violation(rc, "%s: nothing to restore, but the save of step %" PRId64 " had returned (D4.5)", when, acked);
    else if (rc->ex->prev >= 0 || must >= 0)
      violation(rc, "%s: nothing to restore, but checkpoint %" PRId64 " was there before (D4.4)", when,
                must >= 0 ? must : rc->ex->prev);
  } else if (code != HK_OK) {
    violation(rc, "%s: hk_checkpoint_latest fails: %s (D4.4, D5)", when, st.message);
  } else {
    restored = step_of(latest);
    if (state_step >= 0 && restored != state_step)
      violation(
          rc, "%s: hk_checkpoint_latest falls back to %s: the state file's newest, %" PRId64 ", does not verify (D4.4)",
          when, latest, state_step);
    if (must >= 0 && restored != must)
      violation(rc, "%s: the newest checkpoint is %s, not step %" PRId64, when, latest, must);
    else if (must < 0 && !allowed(rc, restored))
      violation(rc, "%s: restores %s, neither the previous checkpoint nor one the run wrote (D4.4)", when, latest);
    if (acked != CRASH_NO_MARK && restored < acked && restored != rc->ex->survive)
      violation(rc, "%s: restores %s, older than the save of step %" PRId64 " that had returned (D4.5)", when, latest,
                acked);
    if (check_checkpoint(ck, env, latest, restored, 1, why, sizeof why) != 0)
      violation(rc, "%s: the checkpoint to restore, %s, %s (H31, D4.4)", when, latest, why);
    hk_env_free(env, latest);
  }
  return restored;
}

/* D4.4, byte for byte: the state file a crash left is the one the
 * recording started with, or one the run renamed into place, complete. */
static void check_state_file_whole(run_ctx *rc, const crash_state *cs) {
  char name[128];
  const unsigned char *data = NULL, *init;
  size_t len = 0, init_len = 0;
  int found = 0, match = 0;
  snprintf(name, sizeof name, "%s/checkpoint", rc->ex->ck);
  for (size_t i = 0; i < crash_state_count(cs) && !found; i++) {
    const unsigned char *d = NULL;
    size_t n = 0;
    if (strcmp(crash_state_entry(cs, i, NULL, &d, &n), name) == 0) {
      found = 1;
      data = d;
      len = n;
    }
  }
  if (!found) return; /* its absence is judged by check_restorable() */
  init = crash_fs_initial(rc->cf, name, &init_len);
  if (init && init_len == len && (len == 0 || memcmp(init, data, len) == 0)) match = 1;
  for (size_t i = 0; i < crash_fs_nops(rc->cf) && !match; i++) {
    const crash_op *op = crash_fs_op(rc->cf, i);
    if (op->kind == CRASH_OP_RENAME && strcmp(op->path2, name) == 0) {
      size_t n = 0;
      unsigned char *whole = crash_fs_content_at(rc->cf, i, &n);
      match = whole && n == len && (len == 0 || memcmp(whole, data, len) == 0);
      free(whole);
    }
  }
  if (!match)
    violation(rc,
              "after the crash: the state file (%zu bytes) is neither the previous one nor a new one, complete (D4.4)",
              len);
}

/* Any file of checkpoint <ck>/<name>: its data file, or a sharded one's
 * index or a shard (a crash may leave some of them). */
static int tree_has_checkpoint(const crash_state *cs, const char *ck, const char *name, size_t name_len) {
  char stem[300];
  size_t n = (size_t)snprintf(stem, sizeof stem, "%s/%.*s.", ck, (int)name_len, name);
  for (size_t i = 0; i < crash_state_count(cs); i++) {
    const char *p = crash_state_entry(cs, i, NULL, NULL, NULL);
    if (strncmp(p, stem, n) != 0) continue;
    if (strcmp(p + n, "safetensors") == 0 || strcmp(p + n, "shards") == 0 ||
        (strncmp(p + n, "shard-", 6) == 0 && !strstr(p + n, ".tmp-")))
      return 1;
  }
  return 0;
}

/* D6.5's window: the state file durable without listing model.ckpt-<vanish>
 * (it records it as a pending deletion), whose data file is still there:
 * deleted with no directory fsync, and brought back by the crash. */
static int in_unfinished_deletion_window(const run_ctx *rc, const crash_state *cs) {
  char name[128], quoted[128], state_name[128];
  const unsigned char *data = NULL;
  size_t len = 0;
  int state = 0;
  if (rc->ex->vanish < 0) return 0;
  snprintf(name, sizeof name, "model.ckpt-%" PRId64, rc->ex->vanish);
  snprintf(state_name, sizeof state_name, "%s/checkpoint", rc->ex->ck);
  snprintf(quoted, sizeof quoted, "all_model_checkpoint_paths: \"model.ckpt-%" PRId64 "\"", rc->ex->vanish);
  if (!tree_has_checkpoint(cs, rc->ex->ck, name, strlen(name))) return 0;
  for (size_t i = 0; i < crash_state_count(cs); i++) {
    const char *p = crash_state_entry(cs, i, NULL, &data, &len);
    if (strcmp(p, state_name) == 0) {
      char *text = malloc(len + 1);
      assert_non_null(text);
      if (len) memcpy(text, data, len);
      text[len] = '\0';
      state = strstr(text, quoted) == NULL && strstr(text, "model_checkpoint_path") != NULL;
      free(text);
    }
  }
  return state;
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* A file the crashed save wrote that is none of the files D4 names (data
 * file, graph description, state file, their temporaries, the event file):
 * D6.5's record of pending deletions, whatever its name. */
static int has_own_record(const run_ctx *rc, const crash_state *cs) {
  for (size_t i = 0; i < crash_state_count(cs); i++) {
    int is_dir;
    const char *p = crash_state_entry(cs, i, &is_dir, NULL, NULL);
    const char *base = strrchr(p, '/') ? strrchr(p, '/') + 1 : p;
    if (is_dir || crash_fs_initial(rc->cf, p, &(size_t){0}) != NULL) continue;
    if (strstr(base, ".tmp-") || ends_with(base, ".safetensors") || ends_with(base, ".shards") ||
        ends_with(base, ".graph.txt") || strcmp(base, "checkpoint") == 0 || strcmp(base, "graph.txt") == 0 ||
        strncmp(base, "events.", 7) == 0)
      continue;
    return 1;
  }
  return 0;
}

/* The state file records a pending deletion whose data file is there (a
 * deletion not durable yet, or brought back by the crash). */
static int records_present(const run_ctx *rc, const crash_state *cs) {
  static const char key[] = "\n# hooked-pending-deletion: \"";
  char state_name[128];
  const unsigned char *data = NULL;
  size_t len = 0;
  int found = 0;
  snprintf(state_name, sizeof state_name, "%s/checkpoint", rc->ex->ck);
  for (size_t i = 0; i < crash_state_count(cs) && !found; i++) {
    char *text;
    if (strcmp(crash_state_entry(cs, i, NULL, &data, &len), state_name) != 0) continue;
    text = malloc(len + 1);
    assert_non_null(text);
    if (len) memcpy(text, data, len);
    text[len] = '\0';
    for (const char *p = strstr(text, key); p && !found; p = strstr(p + 1, key)) {
      const char *name = p + sizeof key - 1, *q = strchr(name, '"');
      if (!q) break;
      found = tree_has_checkpoint(cs, rc->ex->ck, name, (size_t)(q - name));
    }
    free(text);
  }
  return found;
}

/* Where the next save's own crash points are explored too: D6.5's window,
 * a recorded deletion still to do, and wherever the crashed save left a
 * record of pending deletions of its own. */
static int nests(const run_ctx *rc, const crash_state *cs) {
  return in_unfinished_deletion_window(rc, cs) || records_present(rc, cs) || has_own_record(rc, cs);
}

static void check_keep(run_ctx *rc, const char *root, const char *when) {
  for (size_t i = 0; i < rc->ex->nkeep; i++) {
    size_t want_len = 0, got_len = 0;
    const unsigned char *want = crash_fs_initial(rc->cf, rc->ex->keep[i], &want_len);
    char *p = test_path(root, rc->ex->keep[i]);
    char *got = test_read_file(p, &got_len);
    if (!want) {
      /* the state this recording started from had already lost it: reported there */
      free(p);
      free(got);
      continue;
    }
    if (!got)
      violation(rc, "%s: %s, which no save may touch, is gone (D6.4)", when, rc->ex->keep[i]);
    else if (got_len != want_len || (want_len && memcmp(got, want, want_len) != 0))
      violation(rc, "%s: %s, which no save may touch, changed (D6.4)", when, rc->ex->keep[i]);
    free(got);
    free(p);
  }
}

/* Names created by the operations of a recording (not its initial tree). */
static int created_by(const crash_fs *cf, const char *rel) {
  for (size_t i = 0; i < crash_fs_nops(cf); i++) {
    const crash_op *op = crash_fs_op(cf, i);
    if ((op->kind == CRASH_OP_CREATE || op->kind == CRASH_OP_MKDIR) && strcmp(op->path, rel) == 0) return 1;
    if (op->kind == CRASH_OP_RENAME && strcmp(op->path2, rel) == 0) return 1;
  }
  return 0;
}

typedef struct walk_ctx {
  run_ctx *rc;
  const crash_fs *next;
  const char *when;
} walk_ctx;

static void walk_names(walk_ctx *w, const char *abs, const char *rel) {
  DIR *d = opendir(abs);
  assert_non_null(d);
  for (struct dirent *e = readdir(d); e; e = readdir(d)) {
    char *a, *r;
    struct stat sb;
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    a = test_path(abs, e->d_name);
    r = *rel ? test_path(rel, e->d_name) : strdup(e->d_name);
    assert_non_null(r);
    if (!crash_fs_known_name(w->rc->cf, r) && !(w->next && created_by(w->next, r)))
      violation(w->rc, "%s: %s appeared, a file no save wrote", w->when, r);
    if (strstr(e->d_name, ".tmp-") && w->next)
      violation(w->rc, "%s: the temporary file %s is left over (D4.1, D4.2 step 1)", w->when, r);
    if (lstat(a, &sb) == 0 && S_ISDIR(sb.st_mode)) walk_names(w, a, r);
    free(a);
    free(r);
  }
  closedir(d);
}

/* H60: after a successful save nothing hooked wrote is outside retention —
 * every "model.ckpt-<step>" data file (or sharded checkpoint's index) in the directory is listed in the
 * state file (the orphan a crash between a save's data-file and state-file
 * renames leaves is adopted), and the state file lists at most the
 * Saver's max_to_keep. */
static void check_retention(run_ctx *rc, const hk_env *env, const char *dir, const char *when) {
  hk_status st = HK_STATUS_INIT;
  hk_checkpoint_state *cs = NULL;
  DIR *d;
  if (hk_checkpoint_state_get(&cs, env, dir, NULL, &st) != HK_OK) return; /* judged by check_restorable() */
  if ((int64_t)hk_checkpoint_state_count(cs) > rc->ex->max_to_keep)
    violation(rc, "%s: the state file lists %zu checkpoints, more than max_to_keep %" PRId64 " (D6.3)", when,
              hk_checkpoint_state_count(cs), rc->ex->max_to_keep);
  d = opendir(dir);
  assert_non_null(d);
  for (struct dirent *e = readdir(d); e; e = readdir(d)) {
    const char *digits = e->d_name + strlen("model.ckpt-");
    size_t k = 0, n = strlen(e->d_name);
    /* A data file, or a sharded checkpoint's index. */
    const char *ext = ends_with(e->d_name, ".shards") ? ".shards" : ".safetensors";
    int listed = 0;
    if (strncmp(e->d_name, "model.ckpt-", strlen("model.ckpt-")) != 0 || !ends_with(e->d_name, ext) ||
        strstr(e->d_name, ".tmp-"))
      continue;
    while (digits[k] >= '0' && digits[k] <= '9') k++;
    if (k == 0 || digits + k != e->d_name + n - strlen(ext)) continue;
    if (rc->ex->survive >= 0 && strtoll(digits, NULL, 10) == rc->ex->survive) continue; /* not retention's */
    for (size_t i = 0; i < hk_checkpoint_state_count(cs) && !listed; i++) {
      const char *p = hk_checkpoint_state_path(cs, i);
      const char *base = strrchr(p, '/') ? strrchr(p, '/') + 1 : p;
      listed = strncmp(base, e->d_name, n - strlen(ext)) == 0 && base[n - strlen(ext)] == '\0';
    }
    if (!listed) violation(rc, "%s: %s is outside retention: the state file does not list it (H60)", when, e->d_name);
  }
  closedir(d);
  hk_checkpoint_state_free(cs);
}

/* An acknowledged save that wrote no state file is never lost (D4.5), even
 * under a name the state file records as a pending deletion (D6.5). */
static void check_survivor(run_ctx *rc, const hk_env *env, const char *dir, int required, const char *when) {
  char name[96], why[512];
  char *prefix;
  if (rc->ex->survive < 0 || !required) return;
  snprintf(name, sizeof name, "model.ckpt-%" PRId64, rc->ex->survive);
  prefix = test_path(dir, name);
  if (check_checkpoint(rc->ck, env, prefix, rc->ex->survive, 0, why, sizeof why) != 0)
    violation(rc, "%s: %s, whose save had returned, %s (D4.5, D6.5)", when, name, why);
  free(prefix);
}

static int visit(void *user, const crash_state *cs);

void explore(checker *ck, const crash_fs *cf, const expect *ex, int depth, const crash_explore_opts *opts,
             crash_explore_stats *stats) {
  run_ctx rc;
  memset(&rc, 0, sizeof rc);
  rc.ck = ck;
  rc.cf = cf;
  rc.ex = ex;
  rc.depth = depth;
  collect_allowed(&rc);
  crash_fs_explore(cf, opts, visit, &rc, stats);
}

/* Check one crash state (see the file comment). */
static int visit(void *user, const crash_state *cs) {
  run_ctx *rc = user;
  checker *ck = rc->ck;
  hk_env posix = ck->te->env, next_env = ck->te->env;
  hk_status st = HK_STATUS_INIT;
  char name[64];
  char *root, *dir, *save_path;
  crash_fs *next;
  hk_saver *sv;
  hk_raw_session *rs = NULL;
  int64_t acked = crash_state_mark(cs), restored;
  int survived;
  hk_code code;
  walk_ctx w;

  rc->cs = cs;
  rc->state_bad = 0;
  ck->checked++;
  if (rc->depth == 0) ck->nested++;
  test_log_clear(&ck->te->log);
  posix.fs = NULL;
  posix.fs_user = NULL;
  snprintf(name, sizeof name, "s%lu", ck->seq++);
  root = test_path(ck->scratch, name);
  assert_int_equal(mkdir(root, 0755), 0);
  crash_state_materialize(cs, root);
  dir = test_path(root, rc->ex->ck);
  save_path = test_path(dir, "model.ckpt");

  if (rc->depth > 0 && (in_unfinished_deletion_window(rc, cs) || records_present(rc, cs))) ck->windows++;
  /* What the crash left. */
  w.rc = rc;
  w.next = NULL;
  w.when = "after the crash";
  walk_names(&w, root, "");
  check_keep(rc, root, "after the crash");
  check_state_file_whole(rc, cs);
  restored = check_restorable(rc, &posix, dir, acked, -1, "after the crash");
  survived = rc->depth > 0 ? acked == rc->ex->survive : rc->ex->survived;
  check_survivor(rc, &posix, dir, survived, "after the crash");

  /* The next save: a fresh Saver, as a restarted program has. A hook would
   * create a missing checkpoint directory first (C92); so does the test. */
  mkdir_p(dir);
  next = crash_fs_new(root);
  crash_fs_bind(next, &next_env);
  sv = saver_new(&next_env, ck->mv.ex, rc->ex->max_to_keep);
  assert_ok(hk_raw_session_open(&rs, ck->mv.ex, &st), &st);
  assign_step(rs, ck->mv.ex, rc->ex->next);
  code = hk_saver_save(NULL, sv, rs, save_path, rc->ex->next, HK_SAVE_DEFAULT, &st);
  hk_raw_session_free(rs);
  hk_saver_free(sv);
  if (code != HK_OK) {
    violation(rc, "the next save fails: %s", st.message);
  } else {
    char msg[512];
    crash_fs_mark(next, rc->ex->next);
    assert_int_equal(crash_fs_unmodeled(next), 0);
    if (crash_fs_check_model(next, msg, sizeof msg) != 0) fail_msg("crash_fs lost track of the next save: %s", msg);
    w.next = next;
    w.when = "after the next save";
    walk_names(&w, root, "");
    check_keep(rc, root, "after the next save");
    check_restorable(rc, &posix, dir, rc->ex->next, rc->ex->next, "after the next save");
    check_retention(rc, &posix, dir, "after the next save");
    check_survivor(rc, &posix, dir, survived, "after the next save");
    for (int k = 0; rc->ex->vanish >= 0 && k < 3; k++) {
      char *p;
      snprintf(name, sizeof name, "model.ckpt-%" PRId64 "%s", rc->ex->vanish,
               k == 0   ? ".safetensors"
               : k == 1 ? ".graph.txt"
                        : ".shards");
      p = test_path(dir, name);
      snprintf(name, sizeof name, "model.ckpt-%" PRId64 ".shard-", rc->ex->vanish);
      if (test_dir_count_matching(dir, name) > 0)
        violation(rc, "after the next save: a shard of model.ckpt-%" PRId64 " is still there (D21)", rc->ex->vanish);
      snprintf(name, sizeof name, "model.ckpt-%" PRId64 "%s", rc->ex->vanish,
               k == 0   ? ".safetensors"
               : k == 1 ? ".graph.txt"
                        : ".shards");
      if (test_path_exists(p))
        violation(rc,
                  "after the next save: %s is still there; retention was about to delete it when the crash "
                  "came, and the next save must finish that (D6.5, H31)",
                  name);
      free(p);
    }
    /* D6.5's recovery save is crash-tested too: every crash point of it. */
    if (rc->depth > 0 && rc->ex->nest && nests(rc, cs)) {
      expect nested = *rc->ex;
      nested.prev = restored;
      nested.next = rc->ex->next + 1;
      nested.nest = 0;
      /* A listed one may leave through later retention. */
      nested.survived = survived && rc->ex->survive_kept;
      explore(ck, next, &nested, rc->depth - 1, &ck->nested_opts, NULL);
    }
  }
  assert_int_equal(crash_fs_open_handles(next), 0);
  crash_fs_free(next);
  assert_int_equal(test_tmpdir_remove(root), 0);
  free(save_path);
  free(dir);
  free(root);
  return 0;
}

checker *checker_new(void) {
  checker *ck = calloc(1, sizeof *ck);
  assert_non_null(ck);
  ck->te = test_env_new();
  make_executor(ck->te, &ck->mv);
  ck->scratch = fast_tmpdir("crash-states");
  /* The next saves' own crash points: every subset of directory changes,
   * but only the lost and the complete outcome of unsynced data (their
   * torn and zeroed files are temporaries, as in the first run). */
  ck->nested_opts.no_data_modes = 1;
  return ck;
}

void checker_free(checker *ck) {
  test_tmpdir_free(ck->scratch);
  fake_executor_free(ck->mv.fx);
  assert_int_equal(test_env_release(ck->te), 0);
  free(ck);
}

void print_msgs(const checker *ck) {
  for (int i = 0; i < ck->nmsgs; i++) printf("  violation: %s\n", ck->msgs[i]);
  if (ck->bad > ck->nmsgs) printf("  ... %ld violating states in all\n", ck->bad);
}
