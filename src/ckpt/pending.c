/*
 * hooked — deletions a crash may have undone
 * (checkpoint-format.md "Pending deletions in the state file" and "The
 * pending-deletion record of earlier versions").
 *
 * A save whose retention deletes checkpoints records their names in the
 * state file that stops listing them, as comment lines right after its
 * checksum line:
 *
 *   # hooked-crc32c: 84b21e25
 *   # hooked-pending-deletion: "model.ckpt-100"
 *   model_checkpoint_path: "model.ckpt-600"
 *   ...
 *
 * and then unlinks their files with no directory fsync. Those unlinks
 * become durable under the next save's data-file directory fsync: every
 * save first deletes, again, each recorded name still present that the
 * state file does not list (hk__pending_state_finish), and only the state
 * file written after that fsync stops recording them. A crash in between
 * can bring a deleted checkpoint back, unlisted and still recorded, and the
 * next save deletes it.
 *
 * Earlier versions recorded the same names in a file of their own,
 * "<latest_filename>.pending-deletions", bound to the state file by its
 * CRC-32C:
 *
 *   # hooked pending checkpoint deletions 1
 *   state_crc32c: 5f0e7a21
 *   delete: "model.ckpt-100"
 *
 * This version never writes one, and finishes one it finds
 * (hk__pending_finish) as they did: only while the state file is the one
 * the record was written for, never for a name that state file lists, and
 * only "<name>.safetensors" and its companions of valid names in that
 * directory; then it removes the record durably, before writing anything.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "ckpt/ckpt_internal.h"
#include "ckpt/shard.h"
#include "ckpt/state_internal.h"
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

static hk_code remove_record(const hk__fs *fs, const char *path, hk_status *st) {
  hk_status why = HK_STATUS_INIT;
  hk_code rc = hk__fs_unlink(fs, path, &why);
  if (rc == HK_OK || rc == HK_NOT_FOUND) return HK_OK;
  return hk_status_set(st, rc, "Cannot remove the pending-deletion record %s: %s", path, why.message);
}

/* ---- reading ------------------------------------------------------------------------ */

/* A parsed record: names point into the text. */
typedef struct record {
  uint32_t state_crc;
  const char **names;
  size_t n;
} record;

/* Strict: the exact lines earlier versions wrote, or the whole record is
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
static hk_code delete_checkpoint(const hk__fs *fs, const char *dir, const char *name, int *removed, int *failed,
                                 hk_status *st) {
  char *files[3];
  int ok = 1;
  for (size_t i = 0; i < 3; i++) {
    files[i] = hk__asprintf(fs->env, "%s%s%s%s", dir, dir[0] && dir[strlen(dir) - 1] != '/' ? "/" : "", name,
                            companion_exts[i]);
    ok = ok && files[i];
  }
  for (size_t i = 0; ok && i < 3; i++) {
    hk_status why = HK_STATUS_INIT;
    if (hk__fs_unlink(fs, files[i], &why) == HK_OK) {
      *removed = 1;
    } else if (why.code != HK_NOT_FOUND) {
      *failed = 1;
      hk_env_log(fs->env, HK_LOG_WARNING, "Ignoring: %s", why.message);
    } else if (i == 0) {
      /* No data file: a sharded checkpoint's index and shards, those left. */
      hk_code rc = hk__shard_remove_files(fs, dir, name, removed, failed, st);
      if (rc != HK_OK) ok = 0;
    }
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
    int listed = 0, removed = 0, failed = 0;
    for (size_t j = 0; j < state.n && !listed; j++) listed = strcmp(state.names[j], rec.names[i]) == 0;
    if (listed) {
      hk_env_log(env, HK_LOG_WARNING, "Not deleting checkpoint %s recorded in %s: the state file %s lists it.",
                 rec.names[i], path, state_path);
      continue;
    }
    rc = delete_checkpoint(&fs, dir, rec.names[i], &removed, &failed, st);
    (void)failed;               /* logged; the record is removed all the same, as this version always did */
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

/* ---- pending deletions recorded in the state file ------------------------------------ */

void hk__pending_left_clear(const hk_env *env, hk__pending_left *left) {
  if (!left) return;
  for (size_t i = 0; i < left->ncarry; i++) hk_env_free(env, left->carry[i]);
  hk_env_free(env, left->carry);
  memset(left, 0, sizeof *left);
}

static int paths_name(char *const *paths, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(hk__path_basename(paths[i]), name) == 0) return 1;
  return 0;
}

/* Not parsed without a checksum line, so what such a file refuses is
 * warned about once, by the recovery, not by every save. */
hk_code hk__pending_state_read(const hk_env *env, const char *dir, const char *latest, hk__state *out, hk_status *st) {
  char *path = hk__path_join(env, dir, latest), *text = NULL;
  size_t len = 0;
  hk_code rc;

  memset(out, 0, sizeof *out);
  if (!path) return oom(st, dir);
  rc = hk__read_file(env, path, HK__STATE_MAX_BYTES, &text, &len, st);
  if (rc == HK_OUT_OF_RANGE) rc = HK_NOT_FOUND;
  if (rc == HK_OK &&
      (len < sizeof CHECKSUM_PREFIX - 1 || memcmp(text, CHECKSUM_PREFIX, sizeof CHECKSUM_PREFIX - 1) != 0))
    rc = HK_NOT_FOUND;
  if (rc == HK_OK) rc = hk__state_parse(env, path, text, len, out, st);
  hk_env_free(env, text);
  hk_env_free(env, path);
  return rc;
}

hk_code hk__pending_state_finish(const hk_env *env, const char *dir, const char *latest_filename, const char *target,
                                 char *const *keep, size_t nkeep, int must_read, hk__pending_left *left,
                                 hk_status *st) {
  hk__fs fs;
  hk_status why = HK_STATUS_INIT;
  hk__state state;
  int rewrite = 0;
  hk_code rc;

  memset(left, 0, sizeof *left);
  hk__fs_init(&fs, env);
  rc = hk__pending_state_read(env, dir, latest_filename, &state, &why);
  if (rc == HK_NOT_FOUND || rc == HK_DATA_LOSS) return HK_OK; /* nothing it records can be trusted */
  if (rc == HK_RESOURCE_EXHAUSTED || (rc != HK_OK && must_read)) {
    /* This save is about to write a state file that records only what
     * it knows: a record it could not read would be lost. */
    return hk_status_set(st, rc, "Cannot read the checkpoint state file %s/%s for the deletions it records: %s", dir,
                         latest_filename, why.message);
  }
  if (rc != HK_OK) {
    hk_env_log(env, HK_LOG_WARNING,
               "Not finishing the checkpoint deletions the state file %s/%s records: it cannot be read (%s).", dir,
               latest_filename, why.message);
    return HK_OK;
  }
  if (state.npending > 0) {
    left->carry = hk_env_calloc(env, state.npending, sizeof *left->carry);
    if (!left->carry) {
      rc = oom(st, dir);
      goto done;
    }
  }
  for (size_t i = 0; i < state.npending; i++) {
    const char *name = state.pending[i];
    int removed = 0, failed = 0;
    /* Never the state file itself, nor what this Saver manages. */
    if (strcmp(name, latest_filename) == 0 || paths_name(keep, nkeep, name)) continue;
    rc = delete_checkpoint(&fs, dir, name, &removed, &failed, st);
    if (rc != HK_OK) goto done;
    if (failed && !(target && strcmp(name, target) == 0)) {
      left->carry[left->ncarry] = hk_env_strdup(env, name);
      if (!left->carry[left->ncarry++]) {
        rc = oom(st, dir);
        goto done;
      }
    }
    if (removed)
      hk_env_log(env, HK_LOG_INFO,
                 "Deleted checkpoint %s of %s, which retention dropped in a save whose deletion a crash may have "
                 "undone (recorded in the state file %s).",
                 name, dir, latest_filename);
    if (target && strcmp(name, target) == 0) rewrite = 1;
  }
  if (rewrite) {
    /* This save re-creates a recorded name: the state file must stop
     * recording it before the new checkpoint exists, or a crash could let
     * the next save delete it. The deletions first, durably; then the same
     * list recording only what failed. */
    rc = hk__fs_sync_dir(&fs, dir, &why);
    if (rc == HK_OK)
      rc = hk__state_write(env, dir, latest_filename, (const char *const *)state.names, state.timestamps, state.n,
                           state.last_preserved, (const char *const *)left->carry, left->ncarry, &why);
    if (rc != HK_OK)
      hk_status_set(st, rc, "Cannot stop the checkpoint state file %s/%s recording %s as a deletion: %s", dir,
                    latest_filename, target, why.message);
  }

done:
  hk__state_clear(env, &state);
  if (rc != HK_OK) hk__pending_left_clear(env, left);
  return rc;
}
