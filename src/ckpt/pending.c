/*
 * hooked — the pending-deletion record
 * (checkpoint-format.md "The pending-deletion record").
 *
 * A save whose retention deletes checkpoints writes, before the state file
 * that stops listing them, "<latest_filename>.pending-deletions" beside the
 * state file:
 *
 *   # hooked pending checkpoint deletions 1
 *   state_crc32c: 5f0e7a21
 *   delete: "model.ckpt-100"
 *   delete: "model.ckpt-200"
 *
 * state_crc32c is the CRC-32C of the exact bytes of the state file the save
 * writes next. The save removes the record once the deletions are done and
 * the directory fsync after them has made them durable (a removal that
 * persisted alone would leave checkpoints nothing deletes). A crash before
 * that leaves the record; the next save (of any Saver using that state file)
 * finds it before its own work and finishes the deletions — but only while
 * the state file is still the one the record was written for, never for a
 * name that state file lists, and only "<name>.safetensors" and its
 * companions of valid names in that directory. It then removes
 * the record durably, before writing anything, so a record can never
 * outlive the save that finds it and later meet a checkpoint re-created
 * under a recorded name.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "ckpt/ckpt_internal.h"
#include "util/common.h"
#include "util/crc32c.h"
#include "util/fs.h"
#include "util/path.h"
#include "util/record_lines.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define MAGIC "# hooked pending checkpoint deletions 1"
#define KEY_CRC "state_crc32c: "
#define KEY_DELETE "delete: \""
/* The files of a checkpoint: the data file, the graph description
 * and the name older versions gave it. */
static const char *const companion_exts[3] = {".safetensors", ".graph.txt", ".meta"};

static char *record_path(const hk_env *env, const char *dir, const char *latest) {
  char *name = hk__asprintf(env, "%s" HK__PENDING_SUFFIX, latest);
  char *path = name ? hk__path_join(env, dir, name) : NULL;
  hk_env_free(env, name);
  return path;
}

static hk_code oom(hk_status *st, const char *dir) {
  return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory recording the checkpoint deletions of %s", dir);
}

/* ---- writing ------------------------------------------------------------------------ */

hk_code hk__pending_write(const hk_env *env, const char *dir, const char *latest_filename, const char *const *names,
                          const double *timestamps, size_t n, double last_preserved, char *const *drop, size_t ndrop,
                          hk_status *st) {
  char *state = NULL, *text = NULL, *path = NULL;
  size_t state_len = 0, len = 0, cap;
  hk__atomic_file af;
  hk_code rc;

  if (ndrop == 0) return HK_OK;
  rc = hk__state_format(env, dir, latest_filename, names, timestamps, n, last_preserved, &state, &state_len, st);
  if (rc != HK_OK) return rc;
  cap = sizeof MAGIC + sizeof KEY_CRC + 9 + 1;
  for (size_t i = 0; i < ndrop; i++) cap += sizeof KEY_DELETE + strlen(hk__path_basename(drop[i])) + 2;
  text = hk_env_alloc(env, cap);
  path = record_path(env, dir, latest_filename);
  if (!text || !path) {
    rc = oom(st, dir);
    goto done;
  }
  len = (size_t)snprintf(text, cap, MAGIC "\n" KEY_CRC "%08" PRIx32 "\n", hk_crc32c_extend(0, state, state_len));
  for (size_t i = 0; i < ndrop; i++) {
    const char *name = hk__path_basename(drop[i]);
    /* Retention drops only names it listed, which are valid; a record the
     * next save would refuse is never written. */
    if (!hk__valid_name(name) || strcmp(name, latest_filename) == 0) {
      rc = hk_status_set(st, HK_INTERNAL, "checkpoint %s to delete is not a valid checkpoint name in %s", drop[i], dir);
      goto done;
    }
    len += (size_t)snprintf(text + len, cap - len, KEY_DELETE "%s\"\n", name);
  }
  rc = hk__atomic_begin(&af, env, path, st);
  if (rc != HK_OK) goto done;
  /* The data file's commit fsyncs this directory next, before the state
   * file is written: that fsync makes the record's name durable. */
  af.defer_dir_sync = 1;
  rc = hk__atomic_write(&af, text, len, st);
  if (rc != HK_OK) {
    hk__atomic_abort(&af);
    goto done;
  }
  rc = hk__atomic_commit(&af, st);

done:
  hk_env_free(env, state);
  hk_env_free(env, text);
  hk_env_free(env, path);
  return rc;
}

static hk_code remove_record(const hk__fs *fs, const char *path, hk_status *st) {
  hk_status why = HK_STATUS_INIT;
  hk_code rc = hk__fs_unlink(fs, path, &why);
  if (rc == HK_OK || rc == HK_NOT_FOUND) return HK_OK;
  return hk_status_set(st, rc, "Cannot remove the pending-deletion record %s: %s", path, why.message);
}

void hk__pending_remove(const hk_env *env, const char *dir, const char *latest_filename) {
  hk_status why = HK_STATUS_INIT;
  hk__fs fs;
  char *path = record_path(env, dir, latest_filename);
  if (!path) {
    hk_env_log(env, HK_LOG_WARNING, "Ignoring: out of memory removing the pending-deletion record of %s", dir);
    return;
  }
  hk__fs_init(&fs, env);
  if (remove_record(&fs, path, &why) != HK_OK) hk_env_log(env, HK_LOG_WARNING, "Ignoring: %s", why.message);
  hk_env_free(env, path);
}

/* ---- reading ------------------------------------------------------------------------ */

/* A parsed record: names point into the text. */
typedef struct record {
  uint32_t state_crc;
  const char **names;
  size_t n;
} record;

/* Strict: the exact lines hk__pending_write writes, or the whole record is
 * malformed (*why says how). RESOURCE_EXHAUSTED is the only error code. */
static hk_code parse_record(const hk_env *env, char *text, size_t len, const char *latest, record *out, char *why,
                            size_t cap, int *malformed) {
  char *p = text;
  const char *end = text + len, *line;
  size_t n, lineno = 2, count = 0;

  memset(out, 0, sizeof *out);
  *malformed = 1;
  if (!hk__record_open(&p, text, len, MAGIC, why, cap)) return HK_OK;
  line = hk__record_next_line(&p, end, &n);
  if (!line || n < sizeof KEY_CRC - 1 || memcmp(line, KEY_CRC, sizeof KEY_CRC - 1) != 0 ||
      !hk__crc32c_from_hex(line + sizeof KEY_CRC - 1, n - (sizeof KEY_CRC - 1), &out->state_crc)) {
    snprintf(why, cap, "line 2 is not \"" KEY_CRC "<8 lowercase hex digits>\"");
    return HK_OK;
  }
  for (const char *q = p; q < end; q++) count += *q == '\n';
  if (count == 0) {
    snprintf(why, cap, "it names no checkpoint");
    return HK_OK;
  }
  out->names = hk_env_calloc(env, count, sizeof *out->names);
  if (!out->names) return HK_RESOURCE_EXHAUSTED;
  while ((line = hk__record_next_line(&p, end, &n)) != NULL) {
    char *name = (char *)(uintptr_t)line + sizeof KEY_DELETE - 1;
    lineno++;
    if (n < sizeof KEY_DELETE || memcmp(line, KEY_DELETE, sizeof KEY_DELETE - 1) != 0 || line[n - 1] != '"') {
      snprintf(why, cap, "line %zu is not 'delete: \"<name>\"'", lineno);
      goto refused;
    }
    name[n - sizeof KEY_DELETE] = '\0'; /* drop the closing quote */
    /* Only a bare, valid checkpoint name of this directory; never the
     * state file itself. */
    if (!hk__valid_name(name) || strcmp(name, latest) == 0) {
      snprintf(why, cap, "line %zu does not name a checkpoint of this directory", lineno);
      goto refused;
    }
    out->names[out->n++] = name;
  }
  *malformed = 0;
  return HK_OK;

refused:
  hk_env_free(env, (void *)out->names);
  memset(out, 0, sizeof *out);
  return HK_OK;
}

/* Remove the files of checkpoint dir/name: *removed is set when one
 * existed. Only RESOURCE_EXHAUSTED (before any removal) is returned; other
 * removal errors are logged at WARNING "Ignoring: %s", as a save's retention
 * deletions are. */
static hk_code delete_checkpoint(const hk__fs *fs, const char *dir, const char *name, int *removed, hk_status *st) {
  char *files[3];
  int ok = 1;
  for (size_t i = 0; i < 3; i++) {
    files[i] = hk__asprintf(fs->env, "%s%s%s%s", dir, dir[0] && dir[strlen(dir) - 1] != '/' ? "/" : "", name,
                            companion_exts[i]);
    ok = ok && files[i];
  }
  for (size_t i = 0; ok && i < 3; i++) {
    hk_status why = HK_STATUS_INIT;
    if (hk__fs_unlink(fs, files[i], &why) == HK_OK)
      *removed = 1;
    else if (why.code != HK_NOT_FOUND)
      hk_env_log(fs->env, HK_LOG_WARNING, "Ignoring: %s", why.message);
  }
  for (size_t i = 0; i < 3; i++) hk_env_free(fs->env, files[i]);
  return ok ? HK_OK : oom(st, dir);
}

hk_code hk__pending_finish(const hk_env *env, const char *dir, const char *latest_filename, hk_status *st) {
  hk__fs fs;
  hk_status why = HK_STATUS_INIT;
  char *path, *state_path = NULL, *text = NULL, *state_text = NULL;
  size_t len = 0, state_len = 0;
  char reason[160];
  int malformed = 0;
  size_t deleted = 0;
  hk__state state;
  record rec;
  hk_code rc;

  memset(&rec, 0, sizeof rec);
  memset(&state, 0, sizeof state);
  hk__fs_init(&fs, env);
  path = record_path(env, dir, latest_filename);
  if (!path) return oom(st, dir);
  rc = hk__read_file(env, path, HK__STATE_MAX_BYTES, &text, &len, &why);
  if (rc == HK_NOT_FOUND) {
    hk_env_free(env, path);
    return HK_OK; /* the usual case: the last save finished */
  }
  if (rc == HK_RESOURCE_EXHAUSTED) {
    hk__status_copy(st, &why);
    hk_env_free(env, path);
    return rc;
  }
  if (rc == HK_OUT_OF_RANGE) {
    hk_env_log(env, HK_LOG_WARNING,
               "Ignoring the pending-deletion record %s: it is larger than any record hooked writes; nothing is "
               "deleted because of it, and it is removed.",
               path);
    goto remove;
  }
  if (rc != HK_OK) {
    /* It may be there: the save must not write what a record it cannot
     * read or remove could later delete. */
    rc = hk_status_set(st, rc, "Cannot read the pending-deletion record %s: %s", path, why.message);
    hk_env_free(env, path);
    return rc;
  }
  if (parse_record(env, text, len, latest_filename, &rec, reason, sizeof reason, &malformed) != HK_OK) {
    rc = oom(st, dir);
    goto done;
  }
  if (malformed) {
    hk_env_log(env, HK_LOG_WARNING,
               "Ignoring the pending-deletion record %s: %s; nothing is deleted because of it, and it is removed.",
               path, reason);
    goto remove;
  }
  state_path = hk__path_join(env, dir, latest_filename);
  if (!state_path) {
    rc = oom(st, dir);
    goto done;
  }
  hk_status_clear(&why);
  rc = hk__read_file(env, state_path, HK__STATE_MAX_BYTES, &state_text, &state_len, &why);
  if (rc == HK_RESOURCE_EXHAUSTED) {
    hk__status_copy(st, &why);
    goto done;
  }
  if (rc != HK_OK) {
    hk_env_log(env, HK_LOG_WARNING,
               "Not finishing the checkpoint deletions recorded in %s: the state file %s cannot be read (%s); nothing "
               "is deleted, and the record is removed.",
               path, state_path, why.message);
    goto remove;
  }
  if (hk_crc32c_extend(0, state_text, state_len) != rec.state_crc) {
    /* A save interrupted before its state file, or one whose removal of the
     * record did not survive: the state file is not the one the record
     * belongs to, so its names say nothing about what may go. */
    hk_env_log(env, HK_LOG_INFO,
               "Not finishing the checkpoint deletions recorded in %s: they belong to a state file other than the "
               "current %s (a save interrupted before writing it); nothing is deleted, and the record is removed.",
               path, state_path);
    goto remove;
  }
  hk_status_clear(&why);
  rc = hk__state_parse(env, state_path, state_text, state_len, &state, &why);
  if (rc == HK_RESOURCE_EXHAUSTED) {
    hk__status_copy(st, &why);
    goto done;
  }
  if (rc != HK_OK) {
    hk_env_log(env, HK_LOG_WARNING,
               "Not finishing the checkpoint deletions recorded in %s: %s; nothing is deleted, and the record is "
               "removed.",
               path, why.message);
    goto remove;
  }
  for (size_t i = 0; i < rec.n; i++) {
    int listed = 0, removed = 0;
    for (size_t j = 0; j < state.n && !listed; j++) listed = strcmp(state.names[j], rec.names[i]) == 0;
    if (listed) {
      hk_env_log(env, HK_LOG_WARNING, "Not deleting checkpoint %s recorded in %s: the state file %s lists it.",
                 rec.names[i], path, state_path);
      continue;
    }
    rc = delete_checkpoint(&fs, dir, rec.names[i], &removed, st);
    if (rc != HK_OK) goto done; /* the record stays: the next save tries again */
    if (removed) {
      deleted++;
      hk_env_log(env, HK_LOG_INFO,
                 "Deleted checkpoint %s of %s, which retention dropped in a save interrupted before deleting it "
                 "(recorded in %s).",
                 rec.names[i], dir, path);
    }
  }
  /* The deletions are durable before the record goes: its removal alone
   * surviving a crash would leave checkpoints nothing deletes. */
  if (deleted > 0) {
    hk_status_clear(&why);
    rc = hk__fs_sync_dir(&fs, dir, &why);
    if (rc != HK_OK) {
      hk_status_set(st, rc, "Cannot make the deletions recorded in %s durable: %s", path, why.message);
      goto done;
    }
  }

remove:
  /* Durably, before the save's own work: a record that came back after a
   * crash could meet a checkpoint that work re-creates under its name. So
   * a failure here fails the save, before it has written anything. */
  rc = remove_record(&fs, path, st);
  if (rc == HK_OK) {
    hk_status_clear(&why);
    rc = hk__fs_sync_dir(&fs, dir, &why);
    if (rc != HK_OK)
      hk_status_set(st, rc, "Cannot make the removal of the pending-deletion record %s durable: %s", path, why.message);
  }

done:
  hk__state_clear(env, &state);
  hk_env_free(env, (void *)rec.names);
  hk_env_free(env, text);
  hk_env_free(env, state_text);
  hk_env_free(env, state_path);
  hk_env_free(env, path);
  return rc;
}
