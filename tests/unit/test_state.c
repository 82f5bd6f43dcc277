/*
 * Tests of the checkpoint state file (contract C117, C118, C123, H32, H33,
 * H34; checkpoint-format.md "The state file"), through the public
 * hk_checkpoint_state_get() / hk_checkpoint_state_update() on a real
 * temporary directory, with faulty_fs for the write failures.
 */
#include "faulty_fs.h"
#include "test_env.h"
#include "tmpdir.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct fixture {
  test_env *te;
  char *dir;
  char *state_path; /* dir/checkpoint */
  hk_checkpoint_state *cs;
  hk_status st;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  assert_non_null(f);
  f->te = test_env_new();
  f->dir = test_tmpdir_new("state");
  f->state_path = test_path(f->dir, "checkpoint");
  hk_status_clear(&f->st);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  int rc;
  hk_checkpoint_state_free(f->cs);
  free(f->state_path);
  test_tmpdir_free(f->dir);
  rc = test_env_release(f->te);
  free(f);
  return rc;
}

static const char golden[] =
    "model_checkpoint_path: \"model.ckpt-3000\"\n"
    "all_model_checkpoint_paths: \"model.ckpt-2000\"\n"
    "all_model_checkpoint_paths: \"model.ckpt-2500\"\n"
    "all_model_checkpoint_paths: \"model.ckpt-3000\"\n"
    "all_model_checkpoint_timestamps: 1763700000.125\n"
    "all_model_checkpoint_timestamps: 1763700030.5\n"
    "all_model_checkpoint_timestamps: 1763700061.25\n"
    "last_preserved_timestamp: 1763690000\n";

/* What hooked writes for a state whose lines are `body`: its checksum line
 * (C117, H33), then body. malloc'd. */
static char *written(const char *body) {
  char *out = malloc(strlen(body) + 32);
  assert_non_null(out);
  sprintf(out, "# hooked-crc32c: %08x\n%s", (unsigned)hk_crc32c_extend(0, body, strlen(body)), body);
  return out;
}

static void assert_written(const char *text, const char *body) {
  char *want = written(body);
  assert_string_equal(text, want);
  free(want);
}

static void put_state(fixture *f, const char *text, size_t n) {
  assert_int_equal(test_write_file(f->state_path, text, n), 0);
}

static void put_text(fixture *f, const char *text) { put_state(f, text, strlen(text)); }

/* Write `text` as the state file and read it back. */
static hk_code load(fixture *f, const char *text) {
  hk_checkpoint_state_free(f->cs);
  f->cs = NULL;
  put_state(f, text, strlen(text));
  hk_status_clear(&f->st);
  return hk_checkpoint_state_get(&f->cs, &f->te->env, f->dir, NULL, &f->st);
}

static void load_ok(fixture *f, const char *text) {
  hk_code rc = load(f, text);
  if (rc != HK_OK) print_error("state text:\n%s\n", text);
  assert_ok(rc, &f->st);
  assert_non_null(f->cs);
}

static char *in_dir(fixture *f, const char *name) { return test_path(f->dir, name); }

static void assert_path(fixture *f, size_t i, const char *name) {
  char *want = in_dir(f, name);
  assert_non_null(hk_checkpoint_state_path(f->cs, i));
  assert_string_equal(hk_checkpoint_state_path(f->cs, i), want);
  free(want);
}

static void assert_model(fixture *f, const char *name) {
  char *want = in_dir(f, name);
  assert_string_equal(hk_checkpoint_state_model_path(f->cs), want);
  free(want);
}

/* H33/C123: DATA_LOSS "Invalid checkpoint state loaded from <path>: <reason> (line N)". */
static void assert_malformed_n(fixture *f, const char *text, size_t n, int line, const char *reason) {
  char want[256];
  hk_code rc;
  hk_checkpoint_state_free(f->cs);
  f->cs = NULL;
  put_state(f, text, n);
  hk_status_clear(&f->st);
  rc = hk_checkpoint_state_get(&f->cs, &f->te->env, f->dir, NULL, &f->st);
  if (rc != HK_DATA_LOSS) print_error("state text:\n%.*s\n", (int)(n > 300 ? 300 : n), text);
  snprintf(want, sizeof want, "Invalid checkpoint state loaded from %s: ", f->state_path);
  assert_status(rc, &f->st, HK_DATA_LOSS, want);
  assert_null(f->cs);
  snprintf(want, sizeof want, "(line %d)", line);
  if (!strstr(f->st.message, want) || !strstr(f->st.message, reason))
    print_error("message '%s' lacks '%s' or '%s'\n", f->st.message, want, reason);
  assert_non_null(strstr(f->st.message, want));
  assert_non_null(strstr(f->st.message, reason));
}

static void assert_malformed(fixture *f, const char *text, int line, const char *reason) {
  assert_malformed_n(f, text, strlen(text), line, reason);
}

static int count_refusals(fixture *f, const char *shown) {
  char want[700];
  snprintf(want, sizeof want, "Ignoring checkpoint state entry %s: not a bare name in the checkpoint directory", shown);
  return test_log_count(&f->te->log, HK_LOG_WARNING, want);
}

static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

/* ---- reading: accepted forms (H33) ------------------------------------------------- */

/* C123: the state file example of the format document reads back as written. */
static void test_state__reads_the_format_doc_example(void **state) {
  fixture *f = *state;
  load_ok(f, golden);
  assert_model(f, "model.ckpt-3000");
  assert_int_equal(hk_checkpoint_state_count(f->cs), 3);
  assert_path(f, 0, "model.ckpt-2000");
  assert_path(f, 1, "model.ckpt-2500");
  assert_path(f, 2, "model.ckpt-3000");
  assert_null(hk_checkpoint_state_path(f->cs, 3));
  assert_true(hk_checkpoint_state_timestamp(f->cs, 0) == 1763700000.125);
  assert_true(hk_checkpoint_state_timestamp(f->cs, 1) == 1763700030.5);
  assert_true(hk_checkpoint_state_timestamp(f->cs, 2) == 1763700061.25);
  assert_true(isnan(hk_checkpoint_state_timestamp(f->cs, 3)));
  assert_true(hk_checkpoint_state_last_preserved(f->cs) == 1763690000.0);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, ""), 0);
}

/* H33: the reader accepts spaces and tabs around tokens, comments, blank lines and keys in any order. */
static void test_state__accepts_spaces_tabs_comments_blank_lines_any_key_order(void **state) {
  fixture *f = *state;
  load_ok(f,
          "# written by hand\n"
          "\n"
          "last_preserved_timestamp:7\n"
          "  \t \n"
          "\t all_model_checkpoint_timestamps \t:\t 10 \t\n"
          " all_model_checkpoint_paths :  \"a\"\n"
          "   # an indented comment: with \"quotes\" and \\ \n"
          "all_model_checkpoint_timestamps\t:20\n"
          "model_checkpoint_path\t:\t\"b\"\t\n"
          "all_model_checkpoint_paths:\"b\"   "); /* no final newline */
  assert_model(f, "b");
  assert_int_equal(hk_checkpoint_state_count(f->cs), 2);
  assert_path(f, 0, "a");
  assert_path(f, 1, "b");
  assert_true(hk_checkpoint_state_timestamp(f->cs, 0) == 10);
  assert_true(hk_checkpoint_state_timestamp(f->cs, 1) == 20);
  assert_true(hk_checkpoint_state_last_preserved(f->cs) == 7);
}

/* H33: timestamps and last_preserved_timestamp may be absent; the model path alone is a list of one. */
static void test_state__timestamps_and_last_preserved_are_optional(void **state) {
  fixture *f = *state;
  load_ok(f,
          "model_checkpoint_path: \"m-2\"\nall_model_checkpoint_paths: \"m-1\"\nall_model_checkpoint_paths: \"m-2\"\n");
  assert_int_equal(hk_checkpoint_state_count(f->cs), 2);
  assert_true(isnan(hk_checkpoint_state_timestamp(f->cs, 0)));
  assert_true(isnan(hk_checkpoint_state_timestamp(f->cs, 1)));
  assert_true(isnan(hk_checkpoint_state_last_preserved(f->cs)));
  /* The model path alone is a list of one. */
  load_ok(f, "model_checkpoint_path: \"only\"\n");
  assert_int_equal(hk_checkpoint_state_count(f->cs), 1);
  assert_path(f, 0, "only");
  assert_model(f, "only");
}

/* H33: numbers are unsigned decimals with an optional fraction and exponent. */
static void test_state__numbers_are_strict_decimals(void **state) {
  fixture *f = *state;
  static const struct {
    const char *text;
    double value;
  } ok[] = {{"0", 0},
            {"7", 7},
            {"007", 7},
            {"1.", 1},
            {".5", 0.5},
            {"1.25", 1.25},
            {"1e3", 1000},
            {"1E3", 1000},
            {"1.5e+2", 150},
            {"25e-1", 2.5},
            {"0.1", 0.1},
            {"1e-320", 1e-320},
            {"1763700000.125", 1763700000.125}};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    char text[256];
    snprintf(text, sizeof text, "model_checkpoint_path: \"a\"\nlast_preserved_timestamp: %s\n", ok[i].text);
    load_ok(f, text);
    if (!same_bits(hk_checkpoint_state_last_preserved(f->cs), ok[i].value)) print_error("%s\n", ok[i].text);
    assert_true(same_bits(hk_checkpoint_state_last_preserved(f->cs), ok[i].value));
  }
}

/* H33: quoted strings take TensorFlow's text-format escapes, octal and hex included. */
static void test_state__string_escapes_follow_tf_text_format(void **state) {
  fixture *f = *state;
  /* TF writes ' as \' and non-ASCII bytes in octal: both are valid name bytes. */
  load_ok(f,
          "model_checkpoint_path: \"caf\\303\\251\"\n"
          "all_model_checkpoint_paths: \"it\\'s\"\n"
          "all_model_checkpoint_paths: \"\\x41bc\\?\"\n"
          "all_model_checkpoint_paths: \"caf\\303\\251\"\n");
  assert_int_equal(hk_checkpoint_state_count(f->cs), 3);
  assert_path(f, 0, "it's");
  assert_path(f, 1, "Abc?");
  assert_path(f, 2, "caf\xc3\xa9");
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, ""), 0);
}

/* H33: a line of 4096 bytes is accepted and one byte more is malformed. */
static void test_state__line_of_exactly_4096_bytes_is_accepted(void **state) {
  fixture *f = *state;
  char *text = malloc(8192);
  size_t o = 0;
  assert_non_null(text);
  text[o++] = '#';
  memset(text + o, 'x', 4095);
  o += 4095;
  o += (size_t)sprintf(text + o, "\nmodel_checkpoint_path: \"a\"\n");
  load_ok(f, text);
  text[1] = 'y';
  memmove(text + 4097, text + 4096, strlen(text + 4096) + 1); /* one byte more on line 1 */
  text[4096] = 'x';
  assert_malformed(f, text, 1, "line longer than 4096 bytes");
  free(text);
}

/* ---- reading: file-level refusals (H33, C123) -------------------------------------- */

/* H33: an unknown or repeated key, or a missing model_checkpoint_path, is malformed at its line. */
static void test_state__refuses_unknown_and_repeated_keys(void **state) {
  fixture *f = *state;
  assert_malformed(f, "model_checkpoint_path: \"a\"\nfoo: 1\n", 2, "unknown key 'foo'");
  assert_malformed(f, "model_checkpoint_path: \"a\"\nModel_checkpoint_path: \"a\"\n", 2, "unknown key");
  assert_malformed(f, "model_checkpoint_path: \"a\"\n\nmodel_checkpoint_path: \"a\"\n", 3,
                   "repeated model_checkpoint_path");
  assert_malformed(f, "last_preserved_timestamp: 1\nmodel_checkpoint_path: \"a\"\nlast_preserved_timestamp: 1\n", 3,
                   "repeated last_preserved_timestamp");
  assert_malformed(f, "all_model_checkpoint_paths: \"a\"\n", 2, "missing model_checkpoint_path");
  assert_malformed(f, "all_model_checkpoint_paths: \"a\"", 1, "missing model_checkpoint_path");
  assert_malformed(f, "", 1, "missing model_checkpoint_path");
  assert_malformed(f, "# only a comment\n\n", 3, "missing model_checkpoint_path");
  assert_malformed(f, "model_checkpoint_path \"a\"\n", 1, "expected ':'");
  assert_malformed(f, ": \"a\"\n", 1, "expected a key");
  assert_malformed(f, "model_checkpoint_path: \"a\"\r\n", 1, "unexpected text");
  assert_malformed(f, "model_checkpoint_path: \"a\" # trailing comment\n", 1, "unexpected text");
}

/* H33: a name listed twice is malformed at the line that repeats it, whatever its spelling. */
static void test_state__refuses_duplicate_names_at_the_repeating_line(void **state) {
  fixture *f = *state;
  assert_malformed(f,
                   "model_checkpoint_path: \"b\"\n"
                   "all_model_checkpoint_paths: \"a\"\n"
                   "all_model_checkpoint_paths: \"b\"\n"
                   "all_model_checkpoint_paths: \"c\"\n"
                   "all_model_checkpoint_paths: \"b\"\n"
                   "all_model_checkpoint_paths: \"a\"\n",
                   5, "duplicate all_model_checkpoint_paths b");
  /* Two spellings of one name are one name. */
  assert_malformed(f,
                   "model_checkpoint_path: \"A\"\n"
                   "all_model_checkpoint_paths: \"A\"\n"
                   "all_model_checkpoint_paths: \"\\101\"\n",
                   3, "duplicate");
}

/* H33: a timestamp count other than 0 or the number of paths is malformed. */
static void test_state__refuses_a_timestamp_count_other_than_0_or_the_path_count(void **state) {
  fixture *f = *state;
  assert_malformed(f,
                   "model_checkpoint_path: \"b\"\n"
                   "all_model_checkpoint_paths: \"a\"\n"
                   "all_model_checkpoint_paths: \"b\"\n"
                   "all_model_checkpoint_timestamps: 1\n",
                   5, "1 all_model_checkpoint_timestamps for 2 all_model_checkpoint_paths");
  assert_malformed(f, "model_checkpoint_path: \"b\"\nall_model_checkpoint_timestamps: 1\n", 3,
                   "1 all_model_checkpoint_timestamps for 0");
  /* The count is the file's, before entries are refused. */
  assert_malformed(f,
                   "model_checkpoint_path: \"b\"\n"
                   "all_model_checkpoint_paths: \"../a\"\n"
                   "all_model_checkpoint_paths: \"b\"\n"
                   "all_model_checkpoint_timestamps: 2\n",
                   5, "1 all_model_checkpoint_timestamps for 2");
}

/* H33: a signed, hexadecimal, infinite, NaN or otherwise malformed number is refused naming its key. */
static void test_state__refuses_malformed_numbers(void **state) {
  fixture *f = *state;
  static const char *const bad[] = {"-1",  "+1", "0x10", "inf",   "nan",   "1e",  "1e+",  "1.5.2", ".",       "e5",
                                    "1,5", "",   "1 2",  "\"1\"", "1e999", "1_0", "1.5f", "١",     "Infinity"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char text[128];
    snprintf(text, sizeof text, "model_checkpoint_path: \"a\"\nlast_preserved_timestamp: %s\n", bad[i]);
    assert_malformed(f, text, 2, "last_preserved_timestamp");
    snprintf(text, sizeof text,
             "model_checkpoint_path: \"a\"\nall_model_checkpoint_paths: \"a\"\nall_model_checkpoint_timestamps: %s\n",
             bad[i]);
    assert_malformed(f, text, 3, "all_model_checkpoint_timestamps");
  }
  assert_malformed(f, "model_checkpoint_path: \"a\"\nlast_preserved_timestamp: 1e999\n", 2, "not finite");
  /* A 4000-digit number: refused as infinite, its line still in the message. */
  char *big = malloc(4100);
  assert_non_null(big);
  int k = sprintf(big, "model_checkpoint_path: \"a\"\nlast_preserved_timestamp: 1");
  memset(big + k, '0', 4000);
  strcpy(big + k + 4000, "\n");
  assert_malformed(f, big, 2, "not finite");
  free(big);
}

/* H33: an unterminated, unquoted or badly escaped string is refused naming its key. */
static void test_state__refuses_malformed_quoted_strings(void **state) {
  fixture *f = *state;
  static const char *const bad[] = {"\"a",       "a",       "'a'", "\"a\" \"b\"", "\"a\"x", "\"a\\q\"", "\"\\x\"",
                                    "\"\\400\"", "\"a\\\"", "",    "\"\\8\"",     "\"a\" 1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char text[128];
    snprintf(text, sizeof text, "# comment\nmodel_checkpoint_path: %s\n", bad[i]);
    assert_malformed(f, text, 2, "model_checkpoint_path");
    snprintf(text, sizeof text, "model_checkpoint_path: \"a\"\nall_model_checkpoint_paths: %s\n", bad[i]);
    assert_malformed(f, text, 2, "all_model_checkpoint_paths");
  }
  assert_malformed(f, "model_checkpoint_path: \"a\\q\"\n", 1, "unknown escape \\q");
  assert_malformed(f, "model_checkpoint_path: \"a\n\"\n", 1, "unterminated");
}

/* H33: a NUL byte anywhere in the file is malformed at its line. */
static void test_state__refuses_a_nul_byte(void **state) {
  fixture *f = *state;
  static const char text[] = "model_checkpoint_path: \"a\"\n# fine\nall_model_checkpoint_paths: \"a\0b\"\n";
  assert_malformed_n(f, text, sizeof text - 1, 3, "NUL byte");
  static const char in_comment[] = "model_checkpoint_path: \"a\"\n#\0\n";
  assert_malformed_n(f, in_comment, sizeof in_comment - 1, 2, "NUL byte");
}

/* H33: the reader's bound is 256 MiB (include/hooked/checkpoint.h), large enough
 * that D6.3's ever-growing list cannot reach it
 * (test_state__a_file_over_16_mib_is_written_and_read reads a
 * 17.7 MB one). One byte more is refused before it is read: the sparse
 * file's NUL bytes would otherwise be reported at line 2, not as the whole
 * file, "(line 0)", with its size. */
static void test_state__refuses_a_file_over_256_mib_unread(void **state) {
  fixture *f = *state;
  static const char first[] = "model_checkpoint_path: \"a\"\n";
  const off_t n = ((off_t)256 << 20) + 1;
  hk_code rc;
  put_state(f, first, sizeof first - 1);
  assert_int_equal(truncate(f->state_path, n), 0);
  hk_status_clear(&f->st);
  rc = hk_checkpoint_state_get(&f->cs, &f->te->env, f->dir, NULL, &f->st);
  assert_status(rc, &f->st, HK_DATA_LOSS, "Invalid checkpoint state loaded from ");
  assert_null(f->cs);
  assert_non_null(strstr(f->st.message, "268435457 bytes, larger than 268435456 bytes (line 0)"));
}

/* ---- reading: entry-level refusals (H32, H33) ------------------------------------ */

/* H33: each entry that is not a bare name is ignored with a warning showing it escaped. */
static void test_state__ignores_each_entry_that_is_not_a_bare_name(void **state) {
  fixture *f = *state;
  char long_name[300], long_shown[300];
  memset(long_name, 'n', 256);
  long_name[256] = '\0';
  strcpy(long_shown, long_name);
  static const struct {
    const char *in_file; /* as quoted in the file */
    const char *shown;   /* as the warning shows it */
  } bad[] = {{"../x", "../x"},     {"/etc/passwd", "/etc/passwd"},
             {"a/b", "a/b"},       {"a\\\\b", "a\\\\b"},
             {"", "\"\""},         {".", "."},
             {"..", ".."},         {"x..y", "x..y"},
             {"\\001x", "\\001x"}, {"a\tb", "a\\011b"},
             {"a\\nb", "a\\012b"}, {"q\\\"x", "q\"x"},
             {"\\177", "\\177"},   {"\\000a", "\\000a"},
             {NULL, NULL}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *in_file = bad[i].in_file ? bad[i].in_file : long_name;
    const char *shown = bad[i].shown ? bad[i].shown : long_shown;
    char text[1024];
    snprintf(text, sizeof text,
             "model_checkpoint_path: \"good\"\n"
             "all_model_checkpoint_paths: \"%s\"\n"
             "all_model_checkpoint_paths: \"good\"\n"
             "all_model_checkpoint_timestamps: 1\n"
             "all_model_checkpoint_timestamps: 2\n",
             in_file);
    test_log_clear(&f->te->log);
    load_ok(f, text);
    assert_int_equal(hk_checkpoint_state_count(f->cs), 1);
    assert_path(f, 0, "good");
    assert_model(f, "good");
    /* the refused entry's timestamp went with it */
    assert_true(hk_checkpoint_state_timestamp(f->cs, 0) == 2);
    if (count_refusals(f, shown) != 1) test_log_dump(&f->te->log);
    assert_int_equal(count_refusals(f, shown), 1);
    assert_int_equal(test_log_count(&f->te->log, HK_LOG_WARNING, ""), 1);
  }
}

/* H32: a checkpoint name of 255 bytes is valid. */
static void test_state__accepts_a_255_byte_name(void **state) {
  fixture *f = *state;
  char name[256], text[600];
  memset(name, 'n', 255);
  name[255] = '\0';
  snprintf(text, sizeof text, "model_checkpoint_path: \"%s\"\n", name);
  load_ok(f, text);
  assert_model(f, name);
}

/* H33: a refused model_checkpoint_path falls back to the newest valid entry. */
static void test_state__refused_model_path_falls_back_to_the_newest_valid_entry(void **state) {
  fixture *f = *state;
  load_ok(f,
          "model_checkpoint_path: \"/etc/passwd\"\n"
          "all_model_checkpoint_paths: \"a\"\n"
          "all_model_checkpoint_paths: \"b\"\n"
          "all_model_checkpoint_paths: \"/etc/passwd\"\n"
          "all_model_checkpoint_timestamps: 1\n"
          "all_model_checkpoint_timestamps: 2\n"
          "all_model_checkpoint_timestamps: 3\n");
  assert_model(f, "b");
  assert_int_equal(hk_checkpoint_state_count(f->cs), 2);
  assert_path(f, 0, "a");
  assert_path(f, 1, "b");
  assert_true(hk_checkpoint_state_timestamp(f->cs, 0) == 1);
  assert_true(hk_checkpoint_state_timestamp(f->cs, 1) == 2);
  /* one warning per refused name, even when both keys give it */
  assert_int_equal(count_refusals(f, "/etc/passwd"), 1);

  test_log_clear(&f->te->log);
  load_ok(f, "model_checkpoint_path: \"../x\"\nall_model_checkpoint_paths: \"a\"\n");
  assert_model(f, "a");
  assert_int_equal(count_refusals(f, "../x"), 1);
}

/* H33: a file with no valid entry left is malformed. */
static void test_state__refuses_a_file_with_no_valid_entry_left(void **state) {
  fixture *f = *state;
  assert_malformed(f, "model_checkpoint_path: \"../x\"\n", 2, "no valid checkpoint entry left");
  assert_malformed(f,
                   "model_checkpoint_path: \"../x\"\n"
                   "all_model_checkpoint_paths: \"a/b\"\n"
                   "all_model_checkpoint_paths: \"../x\"",
                   3, "no valid checkpoint entry left");
  assert_int_equal(count_refusals(f, "../x"), 2);
  assert_int_equal(count_refusals(f, "a/b"), 1);
}

/* H33: the reader never touches a refused name: every fs call on a path naming
 * one would fail, and none is made. */
static void test_state__refused_entries_are_never_opened(void **state) {
  fixture *f = *state;
  faulty_fs ff;
  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &f->te->env);
  faulty_fs_match(&ff, "passwd");
  faulty_fs_fail_errno(&ff, FAULTY_FS_ANY, 0, EACCES, 1);
  load_ok(f,
          "model_checkpoint_path: \"/etc/passwd\"\n"
          "all_model_checkpoint_paths: \"../../etc/passwd\"\n"
          "all_model_checkpoint_paths: \"ok\"\n");
  assert_int_equal(faulty_fs_injected(&ff), 0);
  assert_true(faulty_fs_calls(&ff, FAULTY_FS_ANY) > 0);
  assert_int_equal(faulty_fs_calls(&ff, FAULTY_FS_OPEN_READ), 1);
  assert_int_equal(faulty_fs_open_handles(&ff), 0);
  assert_model(f, "ok");
  faulty_fs_destroy(&ff);
}

/* ---- reading: the model path is the newest entry (C117; documented choice) -------- */

/* C117: a model_checkpoint_path missing from the list is appended, and the timestamps dropped. */
static void test_state__model_path_missing_from_the_list_is_appended_without_timestamps(void **state) {
  fixture *f = *state;
  load_ok(f,
          "model_checkpoint_path: \"c\"\n"
          "all_model_checkpoint_paths: \"a\"\n"
          "all_model_checkpoint_paths: \"b\"\n"
          "all_model_checkpoint_timestamps: 1\n"
          "all_model_checkpoint_timestamps: 2\n"
          "last_preserved_timestamp: 5\n");
  assert_int_equal(hk_checkpoint_state_count(f->cs), 3);
  assert_path(f, 0, "a");
  assert_path(f, 1, "b");
  assert_path(f, 2, "c");
  assert_model(f, "c");
  for (size_t i = 0; i < 3; i++) assert_true(isnan(hk_checkpoint_state_timestamp(f->cs, i)));
  assert_true(hk_checkpoint_state_last_preserved(f->cs) == 5);
}

/* C117: a model_checkpoint_path listed early moves last, taking its timestamp with it. */
static void test_state__model_path_listed_early_moves_last_with_its_timestamp(void **state) {
  fixture *f = *state;
  load_ok(f,
          "model_checkpoint_path: \"a\"\n"
          "all_model_checkpoint_paths: \"a\"\n"
          "all_model_checkpoint_paths: \"b\"\n"
          "all_model_checkpoint_paths: \"c\"\n"
          "all_model_checkpoint_timestamps: 1\n"
          "all_model_checkpoint_timestamps: 2\n"
          "all_model_checkpoint_timestamps: 3\n");
  assert_int_equal(hk_checkpoint_state_count(f->cs), 3);
  assert_path(f, 0, "b");
  assert_path(f, 1, "c");
  assert_path(f, 2, "a");
  assert_model(f, "a");
  assert_true(hk_checkpoint_state_timestamp(f->cs, 0) == 2);
  assert_true(hk_checkpoint_state_timestamp(f->cs, 1) == 3);
  assert_true(hk_checkpoint_state_timestamp(f->cs, 2) == 1);
}

/* ---- reading: errors that are not about the text (C123, H9) ----------------------- */

/* C123: without a state file, or without the directory, the reader returns NOT_FOUND naming the path. */
static void test_state__not_found_without_a_state_file(void **state) {
  fixture *f = *state;
  hk_code rc = hk_checkpoint_state_get(&f->cs, &f->te->env, f->dir, NULL, &f->st);
  assert_status(rc, &f->st, HK_NOT_FOUND, f->state_path);
  assert_null(f->cs);
  char *missing = in_dir(f, "nope");
  rc = hk_checkpoint_state_get(&f->cs, &f->te->env, missing, NULL, &f->st);
  assert_status(rc, &f->st, HK_NOT_FOUND, missing);
  free(missing);
}

/* C123: a state file that is a directory is FAILED_PRECONDITION naming it. */
static void test_state__a_state_file_that_is_a_directory_is_refused(void **state) {
  fixture *f = *state;
  assert_int_equal(mkdir(f->state_path, 0755), 0);
  hk_code rc = hk_checkpoint_state_get(&f->cs, &f->te->env, f->dir, NULL, &f->st);
  assert_status(rc, &f->st, HK_FAILED_PRECONDITION, "is a directory");
  assert_non_null(strstr(f->st.message, f->state_path));
  assert_null(f->cs);
}

/* H9: a read error at any file-system call is returned with the file system's code. */
static void test_state__read_errors_are_the_file_system_s(void **state) {
  fixture *f = *state;
  faulty_fs ff;
  put_state(f, golden, strlen(golden));
  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &f->te->env);
  for (long n = 0;; n++) {
    faulty_fs_fail_errno(&ff, FAULTY_FS_ANY, n, EIO, 0);
    hk_status_clear(&f->st);
    hk_code rc = hk_checkpoint_state_get(&f->cs, &f->te->env, f->dir, NULL, &f->st);
    if (faulty_fs_injected(&ff) == 0) {
      assert_ok(rc, &f->st);
      break;
    }
    /* close errors after a full read count too: the file was not read cleanly */
    assert_status(rc, &f->st, HK_UNKNOWN, f->state_path);
    assert_null(f->cs);
    assert_int_equal(faulty_fs_open_handles(&ff), 0);
  }
  faulty_fs_fail_errno(&ff, FAULTY_FS_OPEN_READ, 0, EACCES, 0);
  hk_checkpoint_state_free(f->cs);
  f->cs = NULL;
  assert_status(hk_checkpoint_state_get(&f->cs, &f->te->env, f->dir, NULL, &f->st), &f->st, HK_PERMISSION_DENIED,
                f->state_path);
  faulty_fs_destroy(&ff);
}

/* C123: the state file may have another name, which must be a valid bare name. */
static void test_state__custom_latest_filename(void **state) {
  fixture *f = *state;
  char *p = in_dir(f, "my_state");
  assert_int_equal(test_write_file(p, golden, strlen(golden)), 0);
  assert_ok(hk_checkpoint_state_get(&f->cs, &f->te->env, f->dir, "my_state", &f->st), &f->st);
  assert_model(f, "model.ckpt-3000");
  hk_checkpoint_state_free(f->cs);
  f->cs = NULL;
  assert_status(hk_checkpoint_state_get(&f->cs, &f->te->env, f->dir, "../my_state", &f->st), &f->st,
                HK_INVALID_ARGUMENT, "latest_filename");
  assert_status(hk_checkpoint_state_get(&f->cs, &f->te->env, f->dir, "", &f->st), &f->st, HK_INVALID_ARGUMENT,
                "latest_filename");
  free(p);
}

/* C123: the listed names are joined to the directory as the caller spelled it. */
static void test_state__paths_join_dir_as_given(void **state) {
  fixture *f = *state;
  char dir_slash[1024];
  put_state(f, golden, strlen(golden));
  snprintf(dir_slash, sizeof dir_slash, "%s/", f->dir);
  assert_ok(hk_checkpoint_state_get(&f->cs, &f->te->env, dir_slash, NULL, &f->st), &f->st);
  assert_path(f, 0, "model.ckpt-2000");
}

static void test_state__null_arguments_and_accessors(void **state) {
  fixture *f = *state;
  hk_env bad_env = f->te->env;
  assert_status(hk_checkpoint_state_get(&f->cs, &f->te->env, NULL, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "dir");
  assert_status(hk_checkpoint_state_get(NULL, &f->te->env, f->dir, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "out");
  bad_env.version = 0;
  assert_status(hk_checkpoint_state_get(&f->cs, &bad_env, f->dir, NULL, &f->st), &f->st, HK_INVALID_ARGUMENT, "env");
  assert_null(hk_checkpoint_state_model_path(NULL));
  assert_int_equal(hk_checkpoint_state_count(NULL), 0);
  assert_null(hk_checkpoint_state_path(NULL, 0));
  assert_true(isnan(hk_checkpoint_state_timestamp(NULL, 0)));
  assert_true(isnan(hk_checkpoint_state_last_preserved(NULL)));
  hk_checkpoint_state_free(NULL);

  const char *names[] = {"a"};
  assert_status(hk_checkpoint_state_update(&f->te->env, NULL, "a", names, 1, NULL, 0, NULL, &f->st), &f->st,
                HK_INVALID_ARGUMENT, "dir");
  assert_status(hk_checkpoint_state_update(&f->te->env, f->dir, NULL, names, 1, NULL, 0, NULL, &f->st), &f->st,
                HK_INVALID_ARGUMENT, "newest");
  assert_status(hk_checkpoint_state_update(&f->te->env, f->dir, "a", NULL, 1, NULL, 0, NULL, &f->st), &f->st,
                HK_INVALID_ARGUMENT, "names");
  const char *with_null[] = {"a", NULL};
  assert_status(hk_checkpoint_state_update(&f->te->env, f->dir, "a", with_null, 2, NULL, 0, NULL, &f->st), &f->st,
                HK_INVALID_ARGUMENT, "names[1]");
  assert_false(test_path_exists(f->state_path));
}

/* The default env (NULL) reads and writes through POSIX. */
static void test_state__works_with_the_default_env(void **state) {
  fixture *f = *state;
  const char *names[] = {"a", "b"};
  assert_ok(hk_checkpoint_state_update(NULL, f->dir, "b", names, 2, NULL, 3, NULL, &f->st), &f->st);
  hk_checkpoint_state *cs = NULL;
  assert_ok(hk_checkpoint_state_get(&cs, NULL, f->dir, NULL, &f->st), &f->st);
  assert_int_equal(hk_checkpoint_state_count(cs), 2);
  hk_checkpoint_state_free(cs);
}

/* ---- writing (C117, C118, H32, H34) ------------------------------------------------ */

/* C117: the writer writes exactly the example of the format document, atomically. */
static void test_state__writes_exactly_the_format_doc_example(void **state) {
  fixture *f = *state;
  const char *names[] = {"model.ckpt-2000", "model.ckpt-2500", "model.ckpt-3000"};
  const double ts[] = {1763700000.125, 1763700030.5, 1763700061.25};
  size_t n = 0;
  assert_ok(hk_checkpoint_state_update(&f->te->env, f->dir, "model.ckpt-3000", names, 3, ts, 1763690000, NULL, &f->st),
            &f->st);
  char *text = test_read_file(f->state_path, &n);
  assert_non_null(text);
  assert_int_equal(n, strlen(golden) + 26);
  assert_written(text, golden);
  free(text);
  assert_int_equal(test_dir_count(f->dir), 1); /* no temporary file left */
  assert_int_equal(test_log_count(&f->te->log, -1, "Manually adding"), 0);
}

/* C117: without timestamps the writer writes no timestamp line. */
static void test_state__writes_no_timestamp_lines_without_timestamps(void **state) {
  fixture *f = *state;
  const char *names[] = {"a", "b"};
  assert_ok(hk_checkpoint_state_update(&f->te->env, f->dir, "b", names, 2, NULL, 0.5, NULL, &f->st), &f->st);
  char *text = test_read_file(f->state_path, NULL);
  assert_written(text,
                 "model_checkpoint_path: \"b\"\n"
                 "all_model_checkpoint_paths: \"a\"\n"
                 "all_model_checkpoint_paths: \"b\"\n"
                 "last_preserved_timestamp: 0.5\n");
  free(text);
}

/* C117: timestamps are written in the shortest form that reads back to the same double. */
static void test_state__timestamps_round_trip_bit_exactly_in_shortest_form(void **state) {
  fixture *f = *state;
  enum { N = 64 };
  const char *names[N];
  char name_buf[N][16];
  double ts[N] = {0.0,
                  -0.0,
                  0.1,
                  1.0 / 3.0,
                  2.0 / 3.0,
                  1763700000.125,
                  5e-324,
                  2.2250738585072014e-308,
                  1.7976931348623157e308,
                  123456789.123456789,
                  1e15,
                  1e16,
                  1e17,
                  9007199254740993.0};
  uint64_t x = 0x9e3779b97f4a7c15ULL;
  ts[14] = nextafter(1.7e9, INFINITY);
  ts[15] = nextafter(1.7e9, 0);
  for (int i = 16; i < N; i++) {
    double v;
    do { /* random finite non-negative bit patterns */
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      uint64_t bits = x & 0x7fffffffffffffffULL;
      memcpy(&v, &bits, sizeof v);
    } while (!isfinite(v));
    ts[i] = i % 2 ? v : fmod(v, 4e9);
  }
  for (int i = 0; i < N; i++) {
    snprintf(name_buf[i], sizeof name_buf[i], "m-%d", i);
    names[i] = name_buf[i];
  }
  assert_ok(hk_checkpoint_state_update(&f->te->env, f->dir, names[N - 1], names, N, ts, 1.0 / 3.0, NULL, &f->st),
            &f->st);
  assert_ok(hk_checkpoint_state_get(&f->cs, &f->te->env, f->dir, NULL, &f->st), &f->st);
  assert_int_equal(hk_checkpoint_state_count(f->cs), N);
  for (int i = 0; i < N; i++) {
    double want = ts[i] == 0 ? 0.0 : ts[i]; /* -0 is written as 0 */
    if (!same_bits(hk_checkpoint_state_timestamp(f->cs, (size_t)i), want))
      print_error("timestamp %d: wrote %.17g, read %.17g\n", i, ts[i], hk_checkpoint_state_timestamp(f->cs, (size_t)i));
    assert_true(same_bits(hk_checkpoint_state_timestamp(f->cs, (size_t)i), want));
  }
  assert_true(same_bits(hk_checkpoint_state_last_preserved(f->cs), 1.0 / 3.0));

  char *text = test_read_file(f->state_path, NULL);
  assert_non_null(strstr(text, "all_model_checkpoint_timestamps: 0\n"));
  assert_null(strstr(text, ": -"));
  assert_non_null(strstr(text, "all_model_checkpoint_timestamps: 0.1\n"));
  assert_non_null(strstr(text, "all_model_checkpoint_timestamps: 0.3333333333333333\n")); /* 16 digits */
  assert_non_null(strstr(text, "all_model_checkpoint_timestamps: 5e-324\n"));
  assert_non_null(strstr(text, "all_model_checkpoint_timestamps: 1.7976931348623157e+308\n"));
  assert_non_null(strstr(text, "all_model_checkpoint_timestamps: 1e+16\n"));
  free(text);
}

/* C118: paths in the directory are written as bare names; paths elsewhere are INVALID_ARGUMENT. */
static void test_state__update_accepts_paths_in_dir_and_refuses_other_dirs(void **state) {
  fixture *f = *state;
  char *a = in_dir(f, "a"), *b = in_dir(f, "b");
  const char *names[] = {a, "b"};
  assert_ok(hk_checkpoint_state_update(&f->te->env, f->dir, b, names, 2, NULL, 1, NULL, &f->st), &f->st);
  assert_ok(hk_checkpoint_state_get(&f->cs, &f->te->env, f->dir, NULL, &f->st), &f->st);
  assert_path(f, 0, "a");
  assert_path(f, 1, "b");
  char *before = test_read_file(f->state_path, NULL);

  char *elsewhere = test_path("/tmp/elsewhere", "a");
  char *nested = in_dir(f, "sub/a");
  char dir_slash[1024];
  const char *other[] = {elsewhere};
  const char *deeper[] = {nested};
  const char *relative[] = {"x/a"};
  assert_status(hk_checkpoint_state_update(&f->te->env, f->dir, "b", other, 1, NULL, 1, NULL, &f->st), &f->st,
                HK_INVALID_ARGUMENT, elsewhere);
  assert_status(hk_checkpoint_state_update(&f->te->env, f->dir, "b", deeper, 1, NULL, 1, NULL, &f->st), &f->st,
                HK_INVALID_ARGUMENT, nested);
  assert_status(hk_checkpoint_state_update(&f->te->env, f->dir, "b", relative, 1, NULL, 1, NULL, &f->st), &f->st,
                HK_INVALID_ARGUMENT, "x/a");
  assert_status(hk_checkpoint_state_update(&f->te->env, f->dir, elsewhere, names, 2, NULL, 1, NULL, &f->st), &f->st,
                HK_INVALID_ARGUMENT, elsewhere);
  /* A dir given with a trailing slash is the same directory. */
  snprintf(dir_slash, sizeof dir_slash, "%s/", f->dir);
  assert_ok(hk_checkpoint_state_update(&f->te->env, dir_slash, b, names, 2, NULL, 1, NULL, &f->st), &f->st);

  char *after = test_read_file(f->state_path, NULL);
  assert_string_equal(before, after);
  free(before);
  free(after);
  free(elsewhere);
  free(nested);
  free(a);
  free(b);
}

/* C117: a newest checkpoint missing from the list is appended with the wall-clock time and a log line. */
static void test_state__update_appends_a_missing_newest_with_a_log_line(void **state) {
  fixture *f = *state;
  const char *names[] = {"a", "b"};
  const double ts[] = {10, 20};
  char *c = in_dir(f, "c");
  assert_ok(hk_checkpoint_state_update(&f->te->env, f->dir, c, names, 2, ts, 1, NULL, &f->st), &f->st);
  char want[1100];
  snprintf(want, sizeof want, "%s is not in all_model_checkpoint_paths. Manually adding it.", c);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, want), 1);
  assert_ok(hk_checkpoint_state_get(&f->cs, &f->te->env, f->dir, NULL, &f->st), &f->st);
  assert_int_equal(hk_checkpoint_state_count(f->cs), 3);
  assert_path(f, 2, "c");
  assert_model(f, "c");
  /* the appended newest is stamped with the env's wall clock */
  assert_true(hk_checkpoint_state_timestamp(f->cs, 2) == hk_env_wall(&f->te->env));
  assert_true(hk_checkpoint_state_timestamp(f->cs, 0) == 10);

  /* with no names at all */
  test_log_clear(&f->te->log);
  assert_ok(hk_checkpoint_state_update(&f->te->env, f->dir, "d", NULL, 0, NULL, 1, NULL, &f->st), &f->st);
  assert_int_equal(test_log_count(&f->te->log, HK_LOG_INFO, "d is not in all_model_checkpoint_paths"), 1);
  char *text = test_read_file(f->state_path, NULL);
  assert_written(text,
                 "model_checkpoint_path: \"d\"\nall_model_checkpoint_paths: \"d\"\nlast_preserved_timestamp: 1\n");
  free(text);
  free(c);
}

/* C117: a newest checkpoint already listed moves last with its timestamp. */
static void test_state__update_moves_a_listed_newest_last(void **state) {
  fixture *f = *state;
  const char *names[] = {"a", "b", "c"};
  const double ts[] = {1, 2, 3};
  assert_ok(hk_checkpoint_state_update(&f->te->env, f->dir, "a", names, 3, ts, 1, NULL, &f->st), &f->st);
  assert_int_equal(test_log_count(&f->te->log, -1, "Manually adding"), 0);
  assert_ok(hk_checkpoint_state_get(&f->cs, &f->te->env, f->dir, NULL, &f->st), &f->st);
  assert_path(f, 0, "b");
  assert_path(f, 1, "c");
  assert_path(f, 2, "a");
  assert_true(hk_checkpoint_state_timestamp(f->cs, 2) == 1);
}

/* C118: a checkpoint name equal to the state file's name is INVALID_ARGUMENT. */
static void test_state__update_refuses_a_name_equal_to_latest_filename(void **state) {
  fixture *f = *state;
  const char *names[] = {"a", "checkpoint"};
  char want[1100];
  snprintf(want, sizeof want,
           "Save path '%s/checkpoint' conflicts with path used for checkpoint state.  Please use a different save "
           "path.",
           f->dir);
  assert_status(hk_checkpoint_state_update(&f->te->env, f->dir, "checkpoint", names, 2, NULL, 1, NULL, &f->st), &f->st,
                HK_INVALID_ARGUMENT, want);
  const char *names2[] = {"state", "b"};
  assert_status(hk_checkpoint_state_update(&f->te->env, f->dir, "b", names2, 2, NULL, 1, "state", &f->st), &f->st,
                HK_INVALID_ARGUMENT, "conflicts with path used for checkpoint state");
  /* "checkpoint" is an ordinary name when the state file is called otherwise */
  assert_ok(hk_checkpoint_state_update(&f->te->env, f->dir, "checkpoint", names, 2, NULL, 1, "state", &f->st), &f->st);
  assert_false(test_path_exists(f->state_path));
}

/* H32: a checkpoint name that is not 1 to 255 bytes of allowed characters is INVALID_ARGUMENT. */
static void test_state__update_refuses_invalid_names(void **state) {
  fixture *f = *state;
  char long_name[300];
  memset(long_name, 'n', 256);
  long_name[256] = '\0';
  const char *bad[] = {"", ".", "..", "x..y", "a\\b", "q\"x", "a\tb", "a\nb", "\x7f", long_name};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *names[] = {bad[i], "ok"};
    assert_status(hk_checkpoint_state_update(&f->te->env, f->dir, "ok", names, 2, NULL, 1, NULL, &f->st), &f->st,
                  HK_INVALID_ARGUMENT, "not a bare name");
    assert_status(hk_checkpoint_state_update(&f->te->env, f->dir, bad[i], NULL, 0, NULL, 1, NULL, &f->st), &f->st,
                  HK_INVALID_ARGUMENT, NULL);
  }
  const char *names[] = {"ok"};
  assert_status(hk_checkpoint_state_update(&f->te->env, f->dir, "ok", names, 1, NULL, 1, "a/state", &f->st), &f->st,
                HK_INVALID_ARGUMENT, "latest_filename");
  assert_status(hk_checkpoint_state_update(&f->te->env, f->dir, "ok", names, 1, NULL, 1, "..", &f->st), &f->st,
                HK_INVALID_ARGUMENT, "latest_filename");
  assert_int_equal(test_dir_count(f->dir), 0);
}

static void test_state__update_refuses_duplicates_and_bad_numbers(void **state) {
  fixture *f = *state;
  const char *dup[] = {"a", "b", "a", "c"};
  assert_status(hk_checkpoint_state_update(&f->te->env, f->dir, "c", dup, 4, NULL, 1, NULL, &f->st), &f->st,
                HK_INVALID_ARGUMENT, "listed twice");
  char *a = in_dir(f, "a");
  const char *dup_spelled[] = {"a", a};
  assert_status(hk_checkpoint_state_update(&f->te->env, f->dir, "a", dup_spelled, 2, NULL, 1, NULL, &f->st), &f->st,
                HK_INVALID_ARGUMENT, "listed twice");
  free(a);
  const char *names[] = {"a", "b"};
  const double bad_ts[][2] = {{1, NAN}, {-1, 2}, {1, INFINITY}};
  for (size_t i = 0; i < 3; i++)
    assert_status(hk_checkpoint_state_update(&f->te->env, f->dir, "b", names, 2, bad_ts[i], 1, NULL, &f->st), &f->st,
                  HK_INVALID_ARGUMENT, "timestamp");
  const double bad_lp[] = {NAN, -1, INFINITY, -INFINITY};
  for (size_t i = 0; i < 4; i++)
    assert_status(hk_checkpoint_state_update(&f->te->env, f->dir, "b", names, 2, NULL, bad_lp[i], NULL, &f->st), &f->st,
                  HK_INVALID_ARGUMENT, "last_preserved");
  assert_int_equal(test_dir_count(f->dir), 0);
}

/* D4, H9: a failed write reports the file system's error and leaves the
 * previous state file byte-identical, with no temporary file behind. */
static void test_state__write_failures_leave_the_previous_state_file_intact(void **state) {
  fixture *f = *state;
  static const int slots[] = {FAULTY_FS_CREATE_EXCL, FAULTY_FS_WRITE, FAULTY_FS_SYNC, FAULTY_FS_CLOSE,
                              FAULTY_FS_RENAME};
  const char *names[] = {"a", "b", "c"};
  const double ts[] = {1, 2, 3};
  static const char new_text[] =
      "model_checkpoint_path: \"c\"\n"
      "all_model_checkpoint_paths: \"a\"\n"
      "all_model_checkpoint_paths: \"b\"\n"
      "all_model_checkpoint_paths: \"c\"\n"
      "all_model_checkpoint_timestamps: 1\n"
      "all_model_checkpoint_timestamps: 2\n"
      "all_model_checkpoint_timestamps: 3\n"
      "last_preserved_timestamp: 1\n";
  faulty_fs ff;

  put_state(f, golden, strlen(golden));
  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &f->te->env);
  for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++) {
    faulty_fs_fail_errno(&ff, slots[i], 0, ENOSPC, 0);
    hk_code rc = hk_checkpoint_state_update(&f->te->env, f->dir, "c", names, 3, ts, 1, NULL, &f->st);
    assert_int_equal(faulty_fs_injected(&ff), 1);
    assert_status(rc, &f->st, HK_RESOURCE_EXHAUSTED, NULL);
    assert_int_equal(faulty_fs_open_handles(&ff), 0);
    char *text = test_read_file(f->state_path, NULL);
    assert_string_equal(text, golden);
    free(text);
    assert_int_equal(test_dir_count(f->dir), 1);
  }
  /* Every single-call failure of the sequence, up to a successful write. */
  for (long n = 0;; n++) {
    faulty_fs_fail_errno(&ff, FAULTY_FS_ANY, n, EIO, 0);
    hk_code rc = hk_checkpoint_state_update(&f->te->env, f->dir, "c", names, 3, ts, 1, NULL, &f->st);
    if (faulty_fs_injected(&ff) == 0) {
      assert_ok(rc, &f->st);
      break;
    }
    assert_int_equal(faulty_fs_open_handles(&ff), 0);
    assert_int_equal(test_dir_count(f->dir), 1);
    char *text = test_read_file(f->state_path, NULL);
    /* A failure after the rename (the directory fsync) is reported, but the
     * new file is then already in place: whole either way. */
    if (strcmp(text, golden) != 0) assert_written(text, new_text);
    assert_int_not_equal(rc, HK_OK);
    free(text);
  }
  char *text = test_read_file(f->state_path, NULL);
  assert_written(text, new_text);
  free(text);
  faulty_fs_destroy(&ff);
}

/* D4: short writes are written again until the whole state file is written. */
static void test_state__short_writes_still_write_the_whole_file(void **state) {
  fixture *f = *state;
  const char *names[] = {"model.ckpt-2000", "model.ckpt-2500", "model.ckpt-3000"};
  const double ts[] = {1763700000.125, 1763700030.5, 1763700061.25};
  faulty_fs ff;
  faulty_fs_init(&ff);
  faulty_fs_bind(&ff, &f->te->env);
  faulty_fs_short_writes(&ff, 7);
  assert_ok(hk_checkpoint_state_update(&f->te->env, f->dir, "model.ckpt-3000", names, 3, ts, 1763690000, NULL, &f->st),
            &f->st);
  char *text = test_read_file(f->state_path, NULL);
  assert_written(text, golden);
  free(text);
  faulty_fs_destroy(&ff);
}

/* H7: with allocation N failing, for N = 0, 1, 2, ... until the call succeeds, every allocation failure is
 * RESOURCE_EXHAUSTED, and nothing leaks (the teardown checks live blocks). */
static void test_state__out_of_memory_everywhere(void **state) {
  fixture *f = *state;
  const char *names[] = {"a", "b", "c"};
  const double ts[] = {1, 2, 3};
  for (long n = 0;; n++) {
    test_alloc_fail_at(&f->te->alloc, n, 0);
    hk_code rc = hk_checkpoint_state_update(&f->te->env, f->dir, "d", names, 3, ts, 1, NULL, &f->st);
    if (rc == HK_OK) break;
    assert_status(rc, &f->st, HK_RESOURCE_EXHAUSTED, NULL);
    assert_int_equal(test_alloc_live(&f->te->alloc), 0);
    assert_true(n < 1000);
  }
  test_alloc_fail_at(&f->te->alloc, -1, 0);
  put_text(f,
           "model_checkpoint_path: \"/x\"\n"
           "all_model_checkpoint_paths: \"a\"\n"
           "all_model_checkpoint_paths: \"b\"\n"
           "all_model_checkpoint_paths: \"/x\"\n"
           "all_model_checkpoint_timestamps: 1\n"
           "all_model_checkpoint_timestamps: 2\n"
           "all_model_checkpoint_timestamps: 3\n");
  for (long n = 0;; n++) {
    test_alloc_fail_at(&f->te->alloc, n, 0);
    hk_code rc = hk_checkpoint_state_get(&f->cs, &f->te->env, f->dir, NULL, &f->st);
    if (rc == HK_OK) break;
    assert_status(rc, &f->st, HK_RESOURCE_EXHAUSTED, NULL);
    assert_null(f->cs);
    assert_int_equal(test_alloc_live(&f->te->alloc), 0);
    assert_true(n < 1000);
  }
  test_alloc_fail_at(&f->te->alloc, -1, 0);
  assert_model(f, "b");
  for (long n = 0;; n++) { /* the appending path of the reader */
    hk_checkpoint_state_free(f->cs);
    f->cs = NULL;
    put_text(f, "model_checkpoint_path: \"m\"\nall_model_checkpoint_paths: \"a\"\n");
    test_alloc_fail_at(&f->te->alloc, n, 0);
    hk_code rc = hk_checkpoint_state_get(&f->cs, &f->te->env, f->dir, NULL, &f->st);
    if (rc == HK_OK) break;
    assert_status(rc, &f->st, HK_RESOURCE_EXHAUSTED, NULL);
    assert_int_equal(test_alloc_live(&f->te->alloc), 0);
  }
  test_alloc_fail_at(&f->te->alloc, -1, 0);
  assert_int_equal(hk_checkpoint_state_count(f->cs), 2);
}

/* ---- no size cap on a state file listing every checkpoint (D6.3, H33) ---------------- */

/*
 * D6.3 ("With max_to_keep 0 nothing is deleted and the state file lists
 * every checkpoint saved or recovered") and H33's exhaustive list of
 * file-level refusals, which has no size limit below the 256 MiB one (only
 * 4096-byte lines): a state file over 16 MiB (62000 names of 255 bytes) is
 * written and read back, so a Saver with max_to_keep 0 never starts failing
 * its saves once enough checkpoints are listed.
 */
static void test_state__a_file_over_16_mib_is_written_and_read(void **state) {
  fixture *f = *state;
  enum { N = 62000, LEN = 255 };
  char **names = calloc(N, sizeof *names);
  hk_checkpoint_state *cs = NULL;
  hk_status st = HK_STATUS_INIT;
  hk_code rc;
  assert_non_null(names);
  for (size_t i = 0; i < N; i++) {
    names[i] = malloc(LEN + 1);
    assert_non_null(names[i]);
    memset(names[i], 'm', LEN);
    snprintf(names[i] + LEN - 12, 13, "-%011zu", i);
  }
  rc = hk_checkpoint_state_update(NULL, f->dir, names[N - 1], (const char *const *)names, N, NULL, 0, NULL, &st);
  for (size_t i = 0; i < N; i++) free(names[i]);
  free(names);
  assert_ok(rc, &st);
  assert_ok(hk_checkpoint_state_get(&cs, NULL, f->dir, NULL, &st), &st);
  assert_int_equal(hk_checkpoint_state_count(cs), N);
  hk_checkpoint_state_free(cs);
}

/* ---- H33 parsing corners ------------------------------------------------------------- */

/* H33: "-0" (a sign, even on zero) and "1e400" are malformed; "1e-400"
 * (underflows to 0, strtod's ERANGE), "1E+3" and "5." are numbers. */
static void test_state__signed_and_overflowing_numbers_are_malformed_underflow_is_not(void **state) {
  fixture *f = *state;
  static const char *const bad[] = {"-0", "-0.0", "1e400"};
  static const char *const good[] = {"1e-400", "1E+3", "5."};
  char text[256];
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    snprintf(text, sizeof text, "model_checkpoint_path: \"a\"\nlast_preserved_timestamp: %s\n", bad[i]);
    assert_status(load(f, text), &f->st, HK_DATA_LOSS, "(line 2)");
    assert_null(f->cs);
  }
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    snprintf(text, sizeof text, "model_checkpoint_path: \"a\"\nlast_preserved_timestamp: %s\n", good[i]);
    assert_ok(load(f, text), &f->st);
    assert_true(hk_checkpoint_state_last_preserved(f->cs) >= 0);
  }
}

/* H33: a trailing comment after a value, and a NUL inside a quoted name
 * reached through an escape: the first is malformed, the second an entry
 * refused with the warning (never a crash, never a truncated name). */
static void test_state__trailing_comment_malformed_and_escaped_nul_refused(void **state) {
  fixture *f = *state;
  assert_status(load(f, "model_checkpoint_path: \"a\" # newest\n"), &f->st, HK_DATA_LOSS, "(line 1)");
  assert_ok(load(f,
                 "model_checkpoint_path: \"b\"\n"
                 "all_model_checkpoint_paths: \"a\\000x\"\n"
                 "all_model_checkpoint_paths: \"b\"\n"),
            &f->st);
  assert_int_equal(hk_checkpoint_state_count(f->cs), 1);
  assert_logged(f->te, HK_LOG_WARNING, "Ignoring checkpoint state entry a\\000x");
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
      T(test_state__reads_the_format_doc_example),
      T(test_state__accepts_spaces_tabs_comments_blank_lines_any_key_order),
      T(test_state__timestamps_and_last_preserved_are_optional),
      T(test_state__numbers_are_strict_decimals),
      T(test_state__string_escapes_follow_tf_text_format),
      T(test_state__line_of_exactly_4096_bytes_is_accepted),
      T(test_state__refuses_unknown_and_repeated_keys),
      T(test_state__refuses_duplicate_names_at_the_repeating_line),
      T(test_state__refuses_a_timestamp_count_other_than_0_or_the_path_count),
      T(test_state__refuses_malformed_numbers),
      T(test_state__refuses_malformed_quoted_strings),
      T(test_state__refuses_a_nul_byte),
      T(test_state__refuses_a_file_over_256_mib_unread),
      T(test_state__ignores_each_entry_that_is_not_a_bare_name),
      T(test_state__accepts_a_255_byte_name),
      T(test_state__refused_model_path_falls_back_to_the_newest_valid_entry),
      T(test_state__refuses_a_file_with_no_valid_entry_left),
      T(test_state__refused_entries_are_never_opened),
      T(test_state__model_path_missing_from_the_list_is_appended_without_timestamps),
      T(test_state__model_path_listed_early_moves_last_with_its_timestamp),
      T(test_state__not_found_without_a_state_file),
      T(test_state__a_state_file_that_is_a_directory_is_refused),
      T(test_state__read_errors_are_the_file_system_s),
      T(test_state__custom_latest_filename),
      T(test_state__paths_join_dir_as_given),
      T(test_state__null_arguments_and_accessors),
      T(test_state__works_with_the_default_env),
      T(test_state__writes_exactly_the_format_doc_example),
      T(test_state__writes_no_timestamp_lines_without_timestamps),
      T(test_state__timestamps_round_trip_bit_exactly_in_shortest_form),
      T(test_state__update_accepts_paths_in_dir_and_refuses_other_dirs),
      T(test_state__update_appends_a_missing_newest_with_a_log_line),
      T(test_state__update_moves_a_listed_newest_last),
      T(test_state__update_refuses_a_name_equal_to_latest_filename),
      T(test_state__update_refuses_invalid_names),
      T(test_state__update_refuses_duplicates_and_bad_numbers),
      T(test_state__write_failures_leave_the_previous_state_file_intact),
      T(test_state__short_writes_still_write_the_whole_file),
      T(test_state__out_of_memory_everywhere),
      T(test_state__a_file_over_16_mib_is_written_and_read),
      T(test_state__signed_and_overflowing_numbers_are_malformed_underflow_is_not),
      T(test_state__trailing_comment_malformed_and_escaped_nul_refused),
#undef T
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
