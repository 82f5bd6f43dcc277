/*
 * hooked — reading the checkpoint state file
 * (checkpoint-format.md "The state file"). state.c writes it.
 *
 * Reading. The grammar, per line (lines end at '\n'; a last line
 * without one counts):
 *   - blank: only spaces and tabs;
 *   - comment: optional spaces or tabs, then '#', then anything;
 *   - field: [ws] key [ws] ':' [ws] value [ws], with ws spaces or tabs only
 *     (a '\r' is not whitespace, so a CRLF file is malformed) and no trailing
 *     comment after the value.
 * Keys: model_checkpoint_path and all_model_checkpoint_paths take a
 * double-quoted string; all_model_checkpoint_timestamps and
 * last_preserved_timestamp a number. A number is finite, non-negative and
 * decimal: digits with an optional fraction ("1", "1.5", "1.", ".5") and an
 * optional exponent ("e", "E", an optional sign, digits) — no sign, hex,
 * "inf" or "nan". It is converted as strtod would in the "C" locale,
 * whatever the process's locale.
 * Strings use the C escapes of TensorFlow's text format, so a state file
 * written by TensorFlow (whose text format escapes ', " and \ and writes
 * non-ASCII bytes in octal) reads the same here: \n \t \r \a \b \f \v \\ \'
 * \" \?, octal \N..\NNN (at most 0377) and hex \xH or \xHH. Any other escape,
 * or a string without its closing quote, makes the file malformed. What an
 * escape decodes to is then judged as a name like any other byte: "\\",
 * "\"" or a control byte make the entry invalid, so such an entry is
 * refused at entry level with its WARNING — never a file-level error —
 * while "\'" and octal UTF-8 are valid name bytes.
 *
 * File-level refusals report the line where the problem is seen: the
 * offending line, the second occurrence of a repeated key or duplicate
 * name, and for problems only visible at the end (missing
 * model_checkpoint_path, timestamp count, no valid entry) the line of the
 * end of file (1 + the number of '\n'). A file over 256 MiB is refused
 * before it is read, as "(line 0)": the whole file. The bound keeps a
 * hostile file from costing unbounded memory while staying out of retention's
 * reach: max_to_keep 0 lists every checkpoint, and ~750k entries of 255-byte
 * names with timestamps fit. A line longer than
 * 4096 bytes is reported before a NUL byte in the same line. The first
 * problem of the line-by-line pass wins; duplicates and counts are checked
 * after it.
 *
 * Entry-level refusals: each refused list entry is dropped
 * together with its timestamp, with one WARNING naming it; a refused
 * model_checkpoint_path is warned about only when the list does not repeat
 * the same name (which already gave the warning). The parsed state keeps
 * the state file's invariant that the model path is the newest list
 * entry:
 *   - a refused model path is replaced by the newest valid entry;
 *   - a valid model path listed elsewhere than last moves, with its
 *     timestamp, to the end (TensorFlow treats model_checkpoint_path as the
 *     newest checkpoint);
 *   - a valid model path absent from the list is appended, and the state
 *     then has no timestamps at all: the file gives none for it, and
 *     consumers fall back to file times for every entry rather than
 *     trusting an invented one.
 *
 * The checksum line: a file whose first line starts with
 * "# hooked-crc32c:" must have it exactly as "# hooked-crc32c: " and 8
 * lowercase hex digits and '\n', the CRC-32C of every byte after it, or the
 * file is malformed (line 1) before anything else is judged: a well-formed
 * file cut at a line end, or with a listed name changed, is damage the
 * grammar cannot see. To the grammar, and to TensorFlow's text-format
 * parser, the line is a comment; a file without it (TensorFlow's, an older
 * hooked's, one written by hand) is read as it always was.
 *
 * Pending deletions: in a file with a checksum line that verifies, the
 * lines right after it that start with "# hooked-pending-deletion:" record
 * checkpoints a save dropped whose deletion may not be durable yet
 * (parse_pending says how strictly); to the grammar they are comments.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "ckpt/ckpt_internal.h"
#include "ckpt/state_internal.h"
#include "util/crc32c.h"
#include "util/decimal.h"
#include "util/fs.h"
#include "util/path.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STATE_MAX_LINE 4096

/* ---- small helpers ---------------------------------------------------------------- */

static int is_ws(char c) { return c == ' ' || c == '\t'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_key_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_'; }

/* Echoed tokens are cut short so "(line N)" fits in the status. */
static int shown_len(size_t n) { return n > 64 ? 64 : (int)n; }

/* ---- parser ----------------------------------------------------------------------- */

const char *const hk__state_key_names[KEY_COUNT] = {"model_checkpoint_path", "all_model_checkpoint_paths",
                                                    "all_model_checkpoint_timestamps", "last_preserved_timestamp"};

/* A decoded string value: may hold a NUL from an escape, hence len. */
typedef struct entry {
  char *name; /* owned, NUL-terminated at len */
  size_t len;
  int line;
} entry;

typedef struct parser {
  const hk_env *env;
  const char *what;
  hk_status *st;
  entry *paths;
  size_t npaths, cap_paths;
  double *ts;
  size_t nts, cap_ts;
  entry model;
  int have_model;
  double last_preserved;
  int have_last_preserved;
  char **pending; /* owned valid names from the pending-deletion lines */
  size_t npending;
} parser;

static hk_code malformed(parser *p, int line, const char *fmt, ...) HK_PRINTF(3, 4);
static hk_code malformed(parser *p, int line, const char *fmt, ...) {
  char reason[HK_STATUS_MESSAGE_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof reason, fmt, ap);
  va_end(ap);
  return hk_status_set(p->st, HK_DATA_LOSS, "Invalid checkpoint state loaded from %s: %s (line %d)", p->what, reason,
                       line);
}

static hk_code parse_oom(parser *p) {
  return hk_status_set(p->st, HK_RESOURCE_EXHAUSTED, "out of memory parsing checkpoint state %s", p->what);
}

static int entry_valid(const entry *e) { return strlen(e->name) == e->len && hk__valid_name(e->name); }

static void warn_refused(const parser *p, const entry *e) {
  char buf[600];
  hk_env_log(p->env, HK_LOG_WARNING, "Ignoring checkpoint state entry %s: not a bare name in the checkpoint directory",
             hk__state_printable(e->name, e->len, buf, sizeof buf));
}

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* s[*i] starts the value; on success *i is just past the closing quote. */
static hk_code parse_quoted(parser *p, int line, const char *key, const char *s, size_t n, size_t *i, entry *out) {
  size_t start, close, o = 0;
  char *buf;

  if (*i >= n || s[*i] != '"') return malformed(p, line, "expected a double-quoted string after %s:", key);
  start = ++*i;
  for (close = start; close < n && s[close] != '"'; close++)
    if (s[close] == '\\') close++;
  if (close >= n) return malformed(p, line, "unterminated quoted string for %s", key);

  buf = hk_env_alloc(p->env, close - start + 1);
  if (!buf) return parse_oom(p);
  for (size_t j = start; j < close;) {
    char c = s[j++];
    if (c != '\\') {
      buf[o++] = c;
      continue;
    }
    c = s[j++]; /* j <= close: the scan above skipped escaped characters */
    switch (c) {
      case 'n': buf[o++] = '\n'; break;
      case 't': buf[o++] = '\t'; break;
      case 'r': buf[o++] = '\r'; break;
      case 'a': buf[o++] = '\a'; break;
      case 'b': buf[o++] = '\b'; break;
      case 'f': buf[o++] = '\f'; break;
      case 'v': buf[o++] = '\v'; break;
      case '\\':
      case '\'':
      case '"':
      case '?': buf[o++] = c; break;
      case 'x': {
        int v = 0, digits = 0;
        while (digits < 2 && j < close && hex_value(s[j]) >= 0) v = v * 16 + hex_value(s[j++]), digits++;
        if (digits == 0) {
          hk_env_free(p->env, buf);
          return malformed(p, line, "malformed quoted string for %s: \\x without hex digits", key);
        }
        buf[o++] = (char)v;
        break;
      }
      default:
        if (c >= '0' && c <= '7') {
          int v = c - '0', digits = 1;
          while (digits < 3 && j < close && s[j] >= '0' && s[j] <= '7') v = v * 8 + (s[j++] - '0'), digits++;
          if (v > 0xff) {
            hk_env_free(p->env, buf);
            return malformed(p, line, "malformed quoted string for %s: octal escape above \\377", key);
          }
          buf[o++] = (char)v;
          break;
        }
        hk_env_free(p->env, buf);
        {
          char shown[16];
          return malformed(p, line, "malformed quoted string for %s: unknown escape \\%s", key,
                           hk__state_printable(&c, 1, shown, sizeof shown));
        }
    }
  }
  buf[o] = '\0';
  out->name = buf;
  out->len = o;
  out->line = line;
  *i = close + 1;
  return HK_OK;
}

static hk_code parse_number(parser *p, int line, const char *key, const char *s, size_t n, size_t *i, double *out) {
  size_t start = *i, j = *i, mantissa = 0;

  while (j < n && is_digit(s[j])) j++, mantissa++;
  if (j < n && s[j] == '.') {
    j++;
    while (j < n && is_digit(s[j])) j++, mantissa++;
  }
  if (mantissa == 0) return malformed(p, line, "malformed number for %s: expected a non-negative decimal number", key);
  if (j < n && (s[j] == 'e' || s[j] == 'E')) {
    size_t digits = 0;
    j++;
    if (j < n && (s[j] == '+' || s[j] == '-')) j++;
    while (j < n && is_digit(s[j])) j++, digits++;
    if (digits == 0) return malformed(p, line, "malformed number for %s: exponent without digits", key);
  }
  if (j < n && !is_ws(s[j]))
    return malformed(p, line, "malformed number for %s: unexpected text after '%.*s'", key, shown_len(j - start),
                     s + start);
  if (!hk__decimal_parse_c(s + start, j - start, SIZE_MAX, out))
    return malformed(p, line, "malformed number for %s: '%.*s'", key, shown_len(j - start), s + start);
  if (!hk__state_number_ok(*out))
    return malformed(p, line, "malformed number for %s: '%.*s' is not finite", key, shown_len(j - start), s + start);
  *i = j;
  return HK_OK;
}

static int grow(const hk_env *env, void **arr, size_t *cap, size_t need, size_t elem) {
  size_t ncap;
  void *grown;
  if (need <= *cap) return 1;
  ncap = *cap ? *cap * 2 : 16;
  if (ncap < need || ncap > SIZE_MAX / elem) return 0;
  grown = hk_env_realloc(env, *arr, ncap * elem);
  if (!grown) return 0;
  *arr = grown;
  *cap = ncap;
  return 1;
}

static hk_code parse_line(parser *p, int line, const char *s, size_t n) {
  size_t i = 0, key_start, key_len;
  int key = -1;
  hk_code rc;

  while (i < n && is_ws(s[i])) i++;
  if (i == n || s[i] == '#') return HK_OK;

  key_start = i;
  while (i < n && is_key_char(s[i])) i++;
  key_len = i - key_start;
  if (key_len == 0) {
    char shown[16];
    return malformed(p, line, "expected a key, found '%s'", hk__state_printable(s + i, 1, shown, sizeof shown));
  }
  for (int k = 0; k < KEY_COUNT; k++)
    if (strlen(hk__state_key_names[k]) == key_len && memcmp(hk__state_key_names[k], s + key_start, key_len) == 0)
      key = k;
  if (key < 0) return malformed(p, line, "unknown key '%.*s'", key_len > 64 ? 64 : (int)key_len, s + key_start);
  while (i < n && is_ws(s[i])) i++;
  if (i == n || s[i] != ':') return malformed(p, line, "expected ':' after %s", hk__state_key_names[key]);
  i++;
  while (i < n && is_ws(s[i])) i++;

  switch ((key_id)key) {
    case KEY_MODEL:
      if (p->have_model) return malformed(p, line, "repeated model_checkpoint_path");
      rc = parse_quoted(p, line, hk__state_key_names[key], s, n, &i, &p->model);
      if (rc != HK_OK) return rc;
      p->have_model = 1;
      break;
    case KEY_PATHS: {
      entry e;
      if (!grow(p->env, (void **)&p->paths, &p->cap_paths, p->npaths + 1, sizeof *p->paths)) return parse_oom(p);
      rc = parse_quoted(p, line, hk__state_key_names[key], s, n, &i, &e);
      if (rc != HK_OK) return rc;
      p->paths[p->npaths++] = e;
      break;
    }
    case KEY_TIMESTAMPS: {
      double v;
      rc = parse_number(p, line, hk__state_key_names[key], s, n, &i, &v);
      if (rc != HK_OK) return rc;
      if (!grow(p->env, (void **)&p->ts, &p->cap_ts, p->nts + 1, sizeof *p->ts)) return parse_oom(p);
      p->ts[p->nts++] = v;
      break;
    }
    case KEY_LAST_PRESERVED:
      if (p->have_last_preserved) return malformed(p, line, "repeated last_preserved_timestamp");
      rc = parse_number(p, line, hk__state_key_names[key], s, n, &i, &p->last_preserved);
      if (rc != HK_OK) return rc;
      p->have_last_preserved = 1;
      break;
    case KEY_COUNT: break;
  }
  while (i < n && is_ws(s[i])) i++;
  if (i != n) return malformed(p, line, "unexpected text after the value of %s", hk__state_key_names[key]);
  return HK_OK;
}

static int entry_cmp(const void *a, const void *b) {
  const entry *x = *(const entry *const *)a, *y = *(const entry *const *)b;
  size_t m = x->len < y->len ? x->len : y->len;
  int c = memcmp(x->name, y->name, m);
  if (c) return c;
  if (x->len != y->len) return x->len < y->len ? -1 : 1;
  return (x->line > y->line) - (x->line < y->line);
}

/* The earliest line that repeats a name listed before it; 0 when none. */
static hk_code find_duplicate(parser *p, int *dup_line, const entry **dup) {
  const entry **sorted;
  *dup_line = 0;
  *dup = NULL;
  if (p->npaths < 2) return HK_OK;
  sorted = hk_env_calloc(p->env, p->npaths, sizeof *sorted);
  if (!sorted) return parse_oom(p);
  for (size_t i = 0; i < p->npaths; i++) sorted[i] = &p->paths[i];
  qsort(sorted, p->npaths, sizeof *sorted, entry_cmp);
  for (size_t i = 1; i < p->npaths; i++) {
    const entry *a = sorted[i - 1], *b = sorted[i];
    if (a->len == b->len && memcmp(a->name, b->name, a->len) == 0 && (*dup_line == 0 || b->line < *dup_line)) {
      *dup_line = b->line;
      *dup = b;
    }
  }
  hk_env_free(p->env, (void *)sorted);
  return HK_OK;
}

/* The pending-deletion lines: the lines right after a checksum line that
 * start with "# hooked-pending-deletion:". Each must be exactly
 * HK__PENDING_LINE, a valid name with no escape, '"' and '\n'; one that is
 * not, or a name twice, refuses them all (WARNING): nothing is deleted
 * because of them, and the file reads as it would without them. */
#define PENDING_KEY "# hooked-pending-deletion:"
static hk_code parse_pending(parser *p, const char *text, size_t len) {
  size_t pos = CHECKSUM_LINE_LEN, cap = 0;
  int line = 2;
  const char *why = NULL;

  while (pos < len && !why) {
    const char *s = text + pos, *nl = memchr(s, '\n', len - pos);
    size_t n = nl ? (size_t)(nl - s) : len - pos, nlen;
    char *name;
    if (n < sizeof PENDING_KEY - 1 || memcmp(s, PENDING_KEY, sizeof PENDING_KEY - 1) != 0) break;
    nlen = n - (sizeof HK__PENDING_LINE - 1) - 1;
    if (!nl || n < sizeof HK__PENDING_LINE || n > STATE_MAX_LINE ||
        memcmp(s, HK__PENDING_LINE, sizeof HK__PENDING_LINE - 1) != 0 || s[n - 1] != '"') {
      why = "it is not '" PENDING_KEY " \"<name>\"'";
      break;
    }
    if (!grow(p->env, (void **)&p->pending, &cap, p->npending + 1, sizeof *p->pending)) return parse_oom(p);
    name = hk_env_alloc(p->env, nlen + 1);
    if (!name) return parse_oom(p);
    memcpy(name, s + sizeof HK__PENDING_LINE - 1, nlen);
    name[nlen] = '\0';
    p->pending[p->npending++] = name;
    if (memchr(name, '\0', nlen) || !hk__valid_name(name)) why = "it does not name a checkpoint of this directory";
    for (size_t i = 0; !why && i + 1 < p->npending; i++)
      if (strcmp(p->pending[i], name) == 0) why = "it repeats a name";
    pos += n + 1;
    line++;
  }
  if (why) {
    hk_env_log(p->env, HK_LOG_WARNING,
               "Ignoring the pending-deletion lines of the checkpoint state %s: line %d: %s; nothing is deleted "
               "because of them.",
               p->what, line, why);
    for (size_t i = 0; i < p->npending; i++) hk_env_free(p->env, p->pending[i]);
    p->npending = 0;
  }
  return HK_OK;
}

static void parser_free(parser *p) {
  for (size_t i = 0; i < p->npending; i++) hk_env_free(p->env, p->pending[i]);
  hk_env_free(p->env, p->pending);
  for (size_t i = 0; i < p->npaths; i++) hk_env_free(p->env, p->paths[i].name);
  hk_env_free(p->env, p->paths);
  hk_env_free(p->env, p->ts);
  hk_env_free(p->env, p->model.name);
}

static int same_entry(const entry *a, const entry *b) {
  return a->len == b->len && memcmp(a->name, b->name, a->len) == 0;
}

/* Apply the entry-level rules and move the result into out. */
static hk_code finish(parser *p, int eof_line, hk__state *out) {
  int dup_line;
  const entry *dup;
  size_t kept = 0;
  int model_listed = 0;
  hk_code rc;

  if (!p->have_model) return malformed(p, eof_line, "missing model_checkpoint_path");
  rc = find_duplicate(p, &dup_line, &dup);
  if (rc != HK_OK) return rc;
  if (dup) {
    /* Short, so that "(line N)" survives the status's 512 bytes after a
     * long path. */
    char buf[80];
    return malformed(p, dup_line, "duplicate all_model_checkpoint_paths %s",
                     hk__state_printable(dup->name, dup->len, buf, sizeof buf));
  }
  if (p->nts != 0 && p->nts != p->npaths)
    return malformed(p, eof_line, "%zu all_model_checkpoint_timestamps for %zu all_model_checkpoint_paths", p->nts,
                     p->npaths);

  /* Compact the list in place, timestamps alongside. */
  for (size_t i = 0; i < p->npaths; i++) {
    if (same_entry(&p->paths[i], &p->model)) model_listed = 1;
    if (!entry_valid(&p->paths[i])) {
      warn_refused(p, &p->paths[i]);
      hk_env_free(p->env, p->paths[i].name);
      continue;
    }
    if (p->nts) p->ts[kept] = p->ts[i];
    p->paths[kept++] = p->paths[i];
  }
  p->npaths = kept;
  if (p->nts) p->nts = kept;

  if (!entry_valid(&p->model)) {
    if (!model_listed) warn_refused(p, &p->model);
    if (kept == 0) {
      p->npaths = 0;
      return malformed(p, eof_line, "no valid checkpoint entry left");
    }
  } else {
    size_t at = kept;
    for (size_t i = 0; i < kept; i++)
      if (same_entry(&p->paths[i], &p->model)) at = i;
    if (at < kept) {
      entry e = p->paths[at];
      double t = p->nts ? p->ts[at] : 0;
      memmove(p->paths + at, p->paths + at + 1, (kept - at - 1) * sizeof *p->paths);
      p->paths[kept - 1] = e;
      if (p->nts) {
        memmove(p->ts + at, p->ts + at + 1, (kept - at - 1) * sizeof *p->ts);
        p->ts[kept - 1] = t;
      }
    } else {
      if (!grow(p->env, (void **)&p->paths, &p->cap_paths, kept + 1, sizeof *p->paths)) return parse_oom(p);
      p->paths[kept] = p->model;
      p->paths[kept].name = hk_env_strdup(p->env, p->model.name);
      if (!p->paths[kept].name) return parse_oom(p);
      p->npaths = ++kept;
      p->nts = 0;
    }
  }

  out->model = hk_env_strdup(p->env, p->paths[kept - 1].name);
  out->names = hk_env_calloc(p->env, kept, sizeof *out->names);
  if (p->nts) {
    out->timestamps = hk_env_calloc(p->env, kept, sizeof *out->timestamps);
    if (out->timestamps) memcpy(out->timestamps, p->ts, kept * sizeof *p->ts);
  }
  if (!out->model || !out->names || (p->nts && !out->timestamps)) return parse_oom(p);
  for (size_t i = 0; i < kept; i++) {
    out->names[i] = p->paths[i].name;
    p->paths[i].name = NULL;
  }
  out->n = kept;
  out->last_preserved = p->have_last_preserved ? p->last_preserved : NAN;
  /* A recorded name the list names is never deleted: it drops out. */
  for (size_t i = 0; i < p->npending; i++) {
    int listed = 0;
    for (size_t j = 0; j < kept && !listed; j++) listed = strcmp(out->names[j], p->pending[i]) == 0;
    if (listed) {
      hk_env_log(p->env, HK_LOG_WARNING,
                 "Not deleting checkpoint %s recorded as a pending deletion in %s: the state file lists it.",
                 p->pending[i], p->what);
      continue;
    }
    if (out->npending == 0) {
      out->pending = hk_env_calloc(p->env, p->npending, sizeof *out->pending);
      if (!out->pending) return parse_oom(p);
    }
    out->pending[out->npending++] = p->pending[i];
    p->pending[i] = NULL;
  }
  return HK_OK;
}

hk_code hk__state_parse(const hk_env *env, const char *what, const char *text, size_t len, hk__state *out,
                        hk_status *st) {
  parser p;
  size_t pos = 0;
  int line = 1;
  hk_code rc = HK_OK;

  memset(out, 0, sizeof *out);
  memset(&p, 0, sizeof p);
  p.env = env;
  p.what = what ? what : "(unnamed)";
  p.st = st;
  if (!text && len) return hk_status_set(st, HK_INVALID_ARGUMENT, "state file text is NULL");
  if (len >= sizeof CHECKSUM_PREFIX - 1 && memcmp(text, CHECKSUM_PREFIX, sizeof CHECKSUM_PREFIX - 1) == 0) {
    uint32_t want, got;
    if (len < CHECKSUM_LINE_LEN || text[sizeof CHECKSUM_PREFIX - 1] != ' ' ||
        !hk__crc32c_from_hex(text + sizeof CHECKSUM_PREFIX, 8, &want) || text[CHECKSUM_LINE_LEN - 1] != '\n')
      return malformed(&p, 1, "malformed checksum line: expected \"" CHECKSUM_PREFIX " \" and 8 lowercase hex digits");
    got = hk_crc32c_extend(0, text + CHECKSUM_LINE_LEN, len - CHECKSUM_LINE_LEN);
    if (got != want)
      return malformed(&p, 1,
                       "the file does not match its checksum line (CRC-32C of the rest recorded %08" PRIx32
                       ", computed %08" PRIx32 "): it was changed or cut after it was written",
                       want, got);
    rc = parse_pending(&p, text, len);
    if (rc != HK_OK) {
      parser_free(&p);
      return rc;
    }
  }

  while (pos < len) {
    const char *s = text + pos;
    const char *nl = memchr(s, '\n', len - pos);
    size_t n = nl ? (size_t)(nl - s) : len - pos;
    if (n > STATE_MAX_LINE) {
      rc = malformed(&p, line, "line longer than %d bytes", STATE_MAX_LINE);
      break;
    }
    if (memchr(s, '\0', n)) {
      rc = malformed(&p, line, "NUL byte");
      break;
    }
    rc = parse_line(&p, line, s, n);
    if (rc != HK_OK) break;
    pos += n;
    if (nl) pos++, line++;
  }
  if (rc == HK_OK) rc = finish(&p, line, out);
  parser_free(&p);
  if (rc != HK_OK) hk__state_clear(env, out);
  return rc;
}

void hk__state_clear(const hk_env *env, hk__state *s) {
  if (!s) return;
  if (s->names)
    for (size_t i = 0; i < s->n; i++) hk_env_free(env, s->names[i]);
  hk_env_free(env, s->names);
  hk_env_free(env, s->timestamps);
  hk_env_free(env, s->model);
  for (size_t i = 0; i < s->npending; i++) hk_env_free(env, s->pending[i]);
  hk_env_free(env, s->pending);
  memset(s, 0, sizeof *s);
}

hk_code hk__state_read(const hk_env *env, const char *dir, const char *latest_filename, hk__state *out, hk_status *st) {
  hk__fs fs;
  hk_fs_stat sb;
  char *path, *text = NULL;
  size_t len = 0;
  hk_code rc;

  memset(out, 0, sizeof *out);
  path = hk__path_join(env, dir, latest_filename ? latest_filename : DEFAULT_LATEST_FILENAME);
  if (!path) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory reading the checkpoint state of %s", dir);
  hk__fs_init(&fs, env);
  memset(&sb, 0, sizeof sb);
  /* A directory would open on POSIX and then fail to read with an errno
   * that maps to UNKNOWN; say what it is instead (TensorFlow maps EISDIR to
   * FAILED_PRECONDITION too). */
  rc = hk__fs_stat(&fs, path, &sb, st);
  if (rc == HK_OK && sb.is_dir)
    rc = hk_status_set(st, HK_FAILED_PRECONDITION, "Checkpoint state file %s is a directory", path);
  if (rc == HK_OK && sb.size > STATE_MAX_BYTES)
    rc = hk_status_set(st, HK_DATA_LOSS,
                       "Invalid checkpoint state loaded from %s: %" PRIu64 " bytes, larger than %zu bytes (line 0)",
                       path, sb.size, STATE_MAX_BYTES);
  if (rc == HK_OK) {
    /* The file may have grown since the stat (or the fs not report sizes). */
    rc = hk__read_file(env, path, STATE_MAX_BYTES, &text, &len, st);
    if (rc == HK_OUT_OF_RANGE)
      rc = hk_status_set(st, HK_DATA_LOSS, "Invalid checkpoint state loaded from %s: larger than %zu bytes (line 0)",
                         path, STATE_MAX_BYTES);
  }
  if (rc == HK_OK) rc = hk__state_parse(env, path, text, len, out, st);
  hk_env_free(env, text);
  hk_env_free(env, path);
  return rc;
}
