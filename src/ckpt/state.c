/*
 * hooked — the checkpoint state file (contract C117, C118, C123, H32–H34;
 * checkpoint-format.md "The state file").
 *
 * Reading (H33). The grammar, per line (lines end at '\n'; a last line
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
 * "\"" or a control byte make the entry invalid (H32), so such an entry is
 * refused at entry level with H33's warning — never a file-level error —
 * while "\'" and octal UTF-8 are valid name bytes.
 *
 * File-level refusals report the line where the problem is seen: the
 * offending line, the second occurrence of a repeated key or duplicate
 * name, and for problems only visible at the end (missing
 * model_checkpoint_path, timestamp count, no valid entry) the line of the
 * end of file (1 + the number of '\n'). A file over 256 MiB is refused
 * before it is read, as "(line 0)": the whole file. The bound keeps a
 * hostile file from costing unbounded memory while staying out of D6.3's
 * reach: max_to_keep 0 lists every checkpoint, and ~750k entries of 255-byte
 * names with timestamps fit. A line longer than
 * 4096 bytes is reported before a NUL byte in the same line. The first
 * problem of the line-by-line pass wins; duplicates and counts are checked
 * after it.
 *
 * Entry-level refusals (H32/H33): each refused list entry is dropped
 * together with its timestamp, with one WARNING naming it; a refused
 * model_checkpoint_path is warned about only when the list does not repeat
 * the same name (which already gave the warning). The parsed state keeps
 * C117's invariant that the model path is the newest list entry:
 *   - a refused model path is replaced by the newest valid entry (H33);
 *   - a valid model path listed elsewhere than last moves, with its
 *     timestamp, to the end (TensorFlow treats model_checkpoint_path as the
 *     newest checkpoint);
 *   - a valid model path absent from the list is appended, and the state
 *     then has no timestamps at all: the file gives none for it, and
 *     consumers fall back to file times for every entry (C122) rather than
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
 * Writing (C117) emits the checksum line, then exactly checkpoint-format.md's
 * lines in its order, numbers as the shortest %.Ng text (N = 1..17) that
 * converts back to the same double, always with '.' as the decimal point;
 * -0 is written as 0.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "ckpt/ckpt.h"
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

#define STATE_MAX_BYTES HK__STATE_MAX_BYTES
#define STATE_MAX_LINE 4096
#define DEFAULT_LATEST_FILENAME "checkpoint"
/* The first line of a state file hooked writes: this, 8 hex digits, '\n'. */
#define CHECKSUM_PREFIX "# hooked-crc32c:"
#define CHECKSUM_LINE_LEN (sizeof CHECKSUM_PREFIX - 1 + 1 + 8 + 1)

struct hk_checkpoint_state {
  hk_env env;         /* what everything below was allocated with */
  char *model_path;   /* "<dir>/<model>" */
  char **paths;       /* n "<dir>/<name>", oldest first */
  double *timestamps; /* n, or NULL */
  size_t n;
  double last_preserved; /* NaN when absent */
};

/* ---- small helpers ---------------------------------------------------------------- */

static int is_ws(char c) { return c == ' ' || c == '\t'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_key_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_'; }

/* A bounded, log-safe rendering of a name: backslashes and bytes that are
 * control bytes in ASCII are escaped, other bytes (UTF-8 included) are kept;
 * an empty name shows as "". Truncated with "..." to fit. */
static const char *printable(const char *s, size_t len, char *buf, size_t cap) {
  size_t o = 0;
  if (len == 0) {
    snprintf(buf, cap, "\"\"");
    return buf;
  }
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    char tmp[8];
    size_t k;
    if (c == '\\') {
      tmp[0] = '\\', tmp[1] = '\\', k = 2;
    } else if (c < 0x20 || c == 0x7f) {
      k = (size_t)snprintf(tmp, sizeof tmp, "\\%03o", (unsigned)c);
    } else {
      tmp[0] = (char)c, k = 1;
    }
    if (o + k + 4 > cap) {
      memcpy(buf + o, "...", 3);
      o += 3;
      break;
    }
    memcpy(buf + o, tmp, k);
    o += k;
  }
  buf[o] = '\0';
  return buf;
}

/* The shortest text among the %.Ng renderings (N = 1..17) of a finite
 * v >= 0 that read back as v (%.17g always does), the lowest N on a tie,
 * with '.' as the decimal point. Shortest text rather than lowest N: %g
 * switches to an exponent below N digits, so 1763690000 prints as
 * "1763690000" (N = 10), not "1.76369e+09" (N = 6). */
static void format_number(double v, char *out, size_t cap) {
  char tmp[64], best[64];
  size_t best_len = SIZE_MAX;

  if (v == 0) v = 0; /* -0 would print a sign the reader refuses */
  best[0] = '\0';
  for (int prec = 1; prec <= 17; prec++) {
    int k = snprintf(tmp, sizeof tmp, "%.*g", prec, v);
    if (k > 0 && (size_t)k < best_len && (prec == 17 || strtod(tmp, NULL) == v)) {
      memcpy(best, tmp, (size_t)k + 1);
      best_len = (size_t)k;
    }
  }
  hk__decimal_to_c(best, out, cap);
}

/* Echoed tokens are cut short so "(line N)" fits in the status. */
static int shown_len(size_t n) { return n > 64 ? 64 : (int)n; }

static int number_ok(double v) { return isfinite(v) && v >= 0; }

/* ---- parser ----------------------------------------------------------------------- */

typedef enum key_id { KEY_MODEL, KEY_PATHS, KEY_TIMESTAMPS, KEY_LAST_PRESERVED, KEY_COUNT } key_id;

static const char *const key_names[KEY_COUNT] = {"model_checkpoint_path", "all_model_checkpoint_paths",
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
             printable(e->name, e->len, buf, sizeof buf));
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
                           printable(&c, 1, shown, sizeof shown));
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
  if (!number_ok(*out))
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
    return malformed(p, line, "expected a key, found '%s'", printable(s + i, 1, shown, sizeof shown));
  }
  for (int k = 0; k < KEY_COUNT; k++)
    if (strlen(key_names[k]) == key_len && memcmp(key_names[k], s + key_start, key_len) == 0) key = k;
  if (key < 0) return malformed(p, line, "unknown key '%.*s'", key_len > 64 ? 64 : (int)key_len, s + key_start);
  while (i < n && is_ws(s[i])) i++;
  if (i == n || s[i] != ':') return malformed(p, line, "expected ':' after %s", key_names[key]);
  i++;
  while (i < n && is_ws(s[i])) i++;

  switch ((key_id)key) {
    case KEY_MODEL:
      if (p->have_model) return malformed(p, line, "repeated model_checkpoint_path");
      rc = parse_quoted(p, line, key_names[key], s, n, &i, &p->model);
      if (rc != HK_OK) return rc;
      p->have_model = 1;
      break;
    case KEY_PATHS: {
      entry e;
      if (!grow(p->env, (void **)&p->paths, &p->cap_paths, p->npaths + 1, sizeof *p->paths)) return parse_oom(p);
      rc = parse_quoted(p, line, key_names[key], s, n, &i, &e);
      if (rc != HK_OK) return rc;
      p->paths[p->npaths++] = e;
      break;
    }
    case KEY_TIMESTAMPS: {
      double v;
      rc = parse_number(p, line, key_names[key], s, n, &i, &v);
      if (rc != HK_OK) return rc;
      if (!grow(p->env, (void **)&p->ts, &p->cap_ts, p->nts + 1, sizeof *p->ts)) return parse_oom(p);
      p->ts[p->nts++] = v;
      break;
    }
    case KEY_LAST_PRESERVED:
      if (p->have_last_preserved) return malformed(p, line, "repeated last_preserved_timestamp");
      rc = parse_number(p, line, key_names[key], s, n, &i, &p->last_preserved);
      if (rc != HK_OK) return rc;
      p->have_last_preserved = 1;
      break;
    case KEY_COUNT: break;
  }
  while (i < n && is_ws(s[i])) i++;
  if (i != n) return malformed(p, line, "unexpected text after the value of %s", key_names[key]);
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

static void parser_free(parser *p) {
  for (size_t i = 0; i < p->npaths; i++) hk_env_free(p->env, p->paths[i].name);
  hk_env_free(p->env, p->paths);
  hk_env_free(p->env, p->ts);
  hk_env_free(p->env, p->model.name);
}

static int same_entry(const entry *a, const entry *b) {
  return a->len == b->len && memcmp(a->name, b->name, a->len) == 0;
}

/* Apply the entry-level rules and move the result into out (H33, C117). */
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
                     printable(dup->name, dup->len, buf, sizeof buf));
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
   * H9 maps to UNKNOWN; say what it is instead (TensorFlow maps EISDIR to
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

/* ---- writer ---------------------------------------------------------------------- */

typedef struct sbuf {
  const hk_env *env;
  char *p;
  size_t len, cap;
  int oom;
} sbuf;

static void sbuf_add(sbuf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    char *grown;
    while (cap < b->len + n + 1) cap *= 2;
    grown = hk_env_realloc(b->env, b->p, cap);
    if (!grown) {
      b->oom = 1;
      return;
    }
    b->p = grown;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

static void sbuf_str(sbuf *b, const char *s) { sbuf_add(b, s, strlen(s)); }

static void sbuf_field_name(sbuf *b, const char *key, const char *name) {
  sbuf_str(b, key);
  sbuf_add(b, ": \"", 3);
  sbuf_str(b, name);
  sbuf_add(b, "\"\n", 2);
}

static void sbuf_field_number(sbuf *b, const char *key, double v) {
  char num[64];
  format_number(v, num, sizeof num);
  sbuf_str(b, key);
  sbuf_add(b, ": ", 2);
  sbuf_str(b, num);
  sbuf_add(b, "\n", 1);
}

static int cstr_cmp(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* The checks of H32, C118 and "no name twice", naming the culprit. */
static hk_code check_names(const hk_env *env, const char *dir, const char *latest, const char *const *names, size_t n,
                           hk_status *st) {
  char buf[600];
  const char **sorted;
  const char *sep = (dir[0] && dir[strlen(dir) - 1] != '/') ? "/" : "";

  for (size_t i = 0; i < n; i++) {
    if (!names[i]) return hk_status_set(st, HK_INVALID_ARGUMENT, "checkpoint name %zu of the state file is NULL", i);
    if (!hk__valid_name(names[i]))
      return hk_status_set(st, HK_INVALID_ARGUMENT,
                           "Checkpoint name %s is not a bare name in the checkpoint directory %s: 1-255 bytes, no "
                           "'/', '\\', '\"', \"..\" or control bytes, and not \".\"",
                           printable(names[i], strlen(names[i]), buf, 300), dir);
    if (strcmp(names[i], latest) == 0)
      return hk_status_set(st, HK_INVALID_ARGUMENT,
                           "Save path '%s%s%s' conflicts with path used for checkpoint state.  Please use a different "
                           "save path.",
                           dir, sep, names[i]);
  }
  if (n < 2) return HK_OK;
  sorted = hk_env_calloc(env, n, sizeof *sorted);
  if (!sorted) return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory writing the checkpoint state of %s", dir);
  memcpy((void *)sorted, names, n * sizeof *names);
  qsort((void *)sorted, n, sizeof *sorted, cstr_cmp);
  for (size_t i = 1; i < n; i++) {
    if (strcmp(sorted[i - 1], sorted[i]) == 0) {
      hk_status_set(st, HK_INVALID_ARGUMENT, "Checkpoint %s is listed twice for the checkpoint state of %s",
                    printable(sorted[i], strlen(sorted[i]), buf, 300), dir);
      hk_env_free(env, (void *)sorted);
      return HK_INVALID_ARGUMENT;
    }
  }
  hk_env_free(env, (void *)sorted);
  return HK_OK;
}

/* last_preserved NaN leaves its line out (callers that track none). */
hk_code hk__state_format(const hk_env *env, const char *dir, const char *latest_filename, const char *const *names,
                         const double *timestamps, size_t n, double last_preserved, char **text, size_t *len,
                         hk_status *st) {
  char buf[600];
  sbuf b;
  hk_code rc;

  *text = NULL;
  *len = 0;
  if (!dir) return hk_status_set(st, HK_INVALID_ARGUMENT, "checkpoint state: 'dir' is NULL");
  if (!latest_filename) latest_filename = DEFAULT_LATEST_FILENAME;
  if (!hk__valid_name(latest_filename))
    return hk_status_set(st, HK_INVALID_ARGUMENT, "latest_filename %s is not a valid name for the state file in %s",
                         printable(latest_filename, strlen(latest_filename), buf, 300), dir);
  if (n == 0 || !names)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "no checkpoint to record in the checkpoint state of %s", dir);
  rc = check_names(env, dir, latest_filename, names, n, st);
  if (rc != HK_OK) return rc;
  for (size_t i = 0; timestamps && i < n; i++)
    if (!number_ok(timestamps[i]))
      return hk_status_set(st, HK_INVALID_ARGUMENT,
                           "timestamp of checkpoint %s must be finite and >= 0 for the state file in %s, got %g",
                           names[i], dir, timestamps[i]);
  if (!isnan(last_preserved) && !number_ok(last_preserved))
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "last_preserved_timestamp must be finite and >= 0 for the state file in %s, got %g", dir,
                         last_preserved);

  memset(&b, 0, sizeof b);
  b.env = env;
  /* The checksum line's room, filled once the rest is known. */
  sbuf_add(&b, CHECKSUM_PREFIX " 00000000\n", CHECKSUM_LINE_LEN);
  sbuf_field_name(&b, key_names[KEY_MODEL], names[n - 1]);
  for (size_t i = 0; i < n; i++) sbuf_field_name(&b, key_names[KEY_PATHS], names[i]);
  for (size_t i = 0; timestamps && i < n; i++) sbuf_field_number(&b, key_names[KEY_TIMESTAMPS], timestamps[i]);
  if (!isnan(last_preserved)) sbuf_field_number(&b, key_names[KEY_LAST_PRESERVED], last_preserved);
  if (b.oom) {
    hk_env_free(env, b.p);
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory writing the checkpoint state of %s", dir);
  }
  if (b.len > STATE_MAX_BYTES) {
    hk_env_free(env, b.p);
    /* H32's spirit: never write a state file the reader would refuse. */
    return hk_status_set(st, HK_INVALID_ARGUMENT,
                         "checkpoint state of %s would be %zu bytes, more than the %zu a reader accepts", dir, b.len,
                         STATE_MAX_BYTES);
  }
  {
    char crc[9];
    snprintf(crc, sizeof crc, "%08" PRIx32, hk_crc32c_extend(0, b.p + CHECKSUM_LINE_LEN, b.len - CHECKSUM_LINE_LEN));
    memcpy(b.p + sizeof CHECKSUM_PREFIX, crc, 8);
  }
  *text = b.p;
  *len = b.len;
  return HK_OK;
}

hk_code hk__state_write(const hk_env *env, const char *dir, const char *latest_filename, const char *const *names,
                        const double *timestamps, size_t n, double last_preserved, hk_status *st) {
  char *text = NULL, *path;
  size_t len = 0;
  hk_code rc = hk__state_format(env, dir, latest_filename, names, timestamps, n, last_preserved, &text, &len, st);

  if (rc != HK_OK) return rc;
  path = hk__path_join(env, dir, latest_filename ? latest_filename : DEFAULT_LATEST_FILENAME);
  if (!path) {
    hk_env_free(env, text);
    return hk_status_set(st, HK_RESOURCE_EXHAUSTED, "out of memory writing the checkpoint state of %s", dir);
  }
  rc = hk__write_file_atomic(env, path, text, len, st);
  hk_env_free(env, path);
  hk_env_free(env, text);
  return rc;
}

/* ---- public API ------------------------------------------------------------------ */

void hk_checkpoint_state_free(hk_checkpoint_state *cs) {
  if (!cs) return;
  if (cs->paths)
    for (size_t i = 0; i < cs->n; i++) hk_env_free(&cs->env, cs->paths[i]);
  hk_env_free(&cs->env, cs->paths);
  hk_env_free(&cs->env, cs->timestamps);
  hk_env_free(&cs->env, cs->model_path);
  hk_env env = cs->env;
  hk_env_free(&env, cs);
}

hk_code hk_get_checkpoint_state(const hk_env *env, const char *dir, const char *latest_filename,
                                hk_checkpoint_state **out, hk_status *status) {
  char buf[600];
  hk_checkpoint_state *cs;
  hk__state s;
  hk_code rc;

  if (out) *out = NULL;
  rc = hk_env_check(env, "env", status);
  if (rc != HK_OK) return rc;
  if (!out) return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_get_checkpoint_state: 'out' is NULL");
  if (!dir) return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_get_checkpoint_state: 'dir' is NULL");
  if (!latest_filename) latest_filename = DEFAULT_LATEST_FILENAME;
  if (!hk__valid_name(latest_filename))
    return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_get_checkpoint_state: latest_filename %s is not a valid name",
                         printable(latest_filename, strlen(latest_filename), buf, 300));

  rc = hk__state_read(env, dir, latest_filename, &s, status);
  if (rc != HK_OK) return rc;

  cs = hk_env_calloc(env, 1, sizeof *cs);
  if (cs) {
    hk_env_copy(&cs->env, env);
    cs->paths = hk_env_calloc(env, s.n, sizeof *cs->paths);
    cs->model_path = hk__path_join(env, dir, s.model);
    if (cs->paths) {
      cs->n = s.n;
      for (size_t i = 0; i < s.n; i++) {
        cs->paths[i] = hk__path_join(env, dir, s.names[i]);
        if (!cs->paths[i]) rc = HK_RESOURCE_EXHAUSTED;
      }
    }
    if (!cs->paths || !cs->model_path) rc = HK_RESOURCE_EXHAUSTED;
    cs->timestamps = s.timestamps;
    s.timestamps = NULL;
    cs->last_preserved = s.last_preserved;
  } else {
    rc = HK_RESOURCE_EXHAUSTED;
  }
  hk__state_clear(env, &s);
  if (rc != HK_OK) {
    hk_checkpoint_state_free(cs);
    return hk_status_set(status, rc, "out of memory reading the checkpoint state of %s", dir);
  }
  *out = cs;
  return HK_OK;
}

const char *hk_checkpoint_state_model_path(const hk_checkpoint_state *cs) { return cs ? cs->model_path : NULL; }

size_t hk_checkpoint_state_count(const hk_checkpoint_state *cs) { return cs ? cs->n : 0; }

const char *hk_checkpoint_state_path(const hk_checkpoint_state *cs, size_t i) {
  return cs && i < cs->n ? cs->paths[i] : NULL;
}

double hk_checkpoint_state_timestamp(const hk_checkpoint_state *cs, size_t i) {
  return cs && cs->timestamps && i < cs->n ? cs->timestamps[i] : NAN;
}

double hk_checkpoint_state_last_preserved(const hk_checkpoint_state *cs) { return cs ? cs->last_preserved : NAN; }

/* The bare name of `name` relative to dir: itself when it has no '/', the
 * rest after "<dir>/" otherwise; NULL when it lives elsewhere (C118). */
static const char *bare_name(const char *dir, const char *name) {
  size_t dl = strlen(dir);
  const char *rest;
  if (!strchr(name, '/')) return name;
  if (dl == 0 || strncmp(name, dir, dl) != 0) return NULL;
  rest = name + dl;
  if (dir[dl - 1] != '/') {
    if (*rest != '/') return NULL;
    rest++;
  }
  return strchr(rest, '/') ? NULL : rest;
}

hk_code hk_update_checkpoint_state(const hk_env *env, const char *dir, const char *newest, const char *const *names,
                                   size_t n, const double *timestamps, double last_preserved,
                                   const char *latest_filename, hk_status *status) {
  const char **bare = NULL;
  double *ts = NULL;
  const char *newest_bare;
  size_t count = n, at;
  hk_code rc;

  rc = hk_env_check(env, "env", status);
  if (rc != HK_OK) return rc;
  if (!dir) return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_update_checkpoint_state: 'dir' is NULL");
  if (!newest) return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_update_checkpoint_state: 'newest' is NULL");
  if (n > 0 && !names)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_update_checkpoint_state: 'names' is NULL with n = %zu", n);
  if (!number_ok(last_preserved))
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         "hk_update_checkpoint_state: last_preserved must be finite and >= 0, got %g", last_preserved);
  if (n >= SIZE_MAX / sizeof(double) - 1)
    return hk_status_set(status, HK_INVALID_ARGUMENT, "hk_update_checkpoint_state: n = %zu is too large", n);

  newest_bare = bare_name(dir, newest);
  if (!newest_bare)
    return hk_status_set(status, HK_INVALID_ARGUMENT,
                         "Checkpoint %s is not in %s: the checkpoint state records only checkpoints of its own "
                         "directory",
                         newest, dir);
  bare = hk_env_calloc(env, n + 1, sizeof *bare);
  if (timestamps) ts = hk_env_calloc(env, n + 1, sizeof *ts);
  if (!bare || (timestamps && !ts)) {
    rc = hk_status_set(status, HK_RESOURCE_EXHAUSTED, "out of memory writing the checkpoint state of %s", dir);
    goto done;
  }
  at = n;
  for (size_t i = 0; i < n; i++) {
    if (!names[i]) {
      rc = hk_status_set(status, HK_INVALID_ARGUMENT, "hk_update_checkpoint_state: names[%zu] is NULL", i);
      goto done;
    }
    bare[i] = bare_name(dir, names[i]);
    if (!bare[i]) {
      rc = hk_status_set(status, HK_INVALID_ARGUMENT,
                         "Checkpoint %s is not in %s: the checkpoint state records only checkpoints of its own "
                         "directory",
                         names[i], dir);
      goto done;
    }
    if (ts) ts[i] = timestamps[i];
    if (at == n && strcmp(bare[i], newest_bare) == 0) at = i;
  }
  if (at == n) {
    /* C117; the newest was just written, so "now" is its timestamp. */
    hk_env_log(env, HK_LOG_INFO, "%s is not in all_model_checkpoint_paths. Manually adding it.", newest);
    bare[n] = newest_bare;
    if (ts) ts[n] = hk_env_wall(env);
    count = n + 1;
  } else if (at != n - 1) {
    /* Listed, but not last: the newest goes last, with its timestamp. */
    const char *name = bare[at];
    double t = ts ? ts[at] : 0;
    memmove((void *)(bare + at), bare + at + 1, (n - at - 1) * sizeof *bare);
    bare[n - 1] = name;
    if (ts) {
      memmove(ts + at, ts + at + 1, (n - at - 1) * sizeof *ts);
      ts[n - 1] = t;
    }
  }
  rc = hk__state_write(env, dir, latest_filename, bare, ts, count, last_preserved, status);
done:
  hk_env_free(env, (void *)bare);
  hk_env_free(env, ts);
  return rc;
}
