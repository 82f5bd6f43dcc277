/*
 * test_state_checksum — the state file's checksum line (contract C117,
 * H33, C123; checkpoint-format.md "The state file"): hooked writes
 * "# hooked-crc32c: <8 hex>" first, the CRC-32C of every byte after it;
 * a file that starts with that line must match it, so damage that leaves
 * the file well-formed (a listed name changed, the file cut at a line end)
 * is refused as malformed, while a file without it (TensorFlow's, an older
 * hooked's, a hand-written one) reads as before.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <hooked/hooked.h>
#include <hooked/checkpoint.h>

#include "test_env.h"
#include "tmpdir.h"

#define LINE1_LEN 26 /* "# hooked-crc32c: " + 8 hex digits + '\n' */

typedef struct fixture {
  test_env *te;
  char *dir;
  char *state_path;
  hk_status st;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  assert_non_null(f);
  f->te = test_env_new();
  f->dir = test_tmpdir_new("state-checksum");
  f->state_path = test_path(f->dir, "checkpoint");
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  free(f->state_path);
  test_tmpdir_free(f->dir);
  assert_int_equal(test_env_release(f->te), 0);
  free(f);
  return 0;
}

/* checkpoint-format.md's example, as TensorFlow writes it (no checksum line). */
static const char body[] =
    "model_checkpoint_path: \"model.ckpt-3000\"\n"
    "all_model_checkpoint_paths: \"model.ckpt-2000\"\n"
    "all_model_checkpoint_paths: \"model.ckpt-2500\"\n"
    "all_model_checkpoint_paths: \"model.ckpt-3000\"\n"
    "all_model_checkpoint_timestamps: 1763700000.125\n"
    "all_model_checkpoint_timestamps: 1763700030.5\n"
    "all_model_checkpoint_timestamps: 1763700061.25\n"
    "last_preserved_timestamp: 1763690000\n";

/* The example written by hooked: hk_checkpoint_state_update(). @return the
 * file's bytes (malloc), *n their count. */
static char *write_example(fixture *f, size_t *n) {
  static const char *const names[3] = {"model.ckpt-2000", "model.ckpt-2500", "model.ckpt-3000"};
  static const double ts[3] = {1763700000.125, 1763700030.5, 1763700061.25};
  char *text;
  assert_ok(hk_checkpoint_state_update(&f->te->env, f->dir, "model.ckpt-3000", names, 3, ts, 1763690000, NULL, &f->st),
            &f->st);
  text = test_read_file(f->state_path, n);
  assert_non_null(text);
  return text;
}

static hk_code load(fixture *f, const char *text, size_t n, hk_checkpoint_state **cs) {
  *cs = NULL;
  assert_int_equal(test_write_file(f->state_path, text, n), 0);
  hk_status_clear(&f->st);
  return hk_checkpoint_state_get(cs, &f->te->env, f->dir, NULL, &f->st);
}

/* What a parsed state says, as one line, to compare two reads. */
static void describe(const hk_checkpoint_state *cs, char *out, size_t cap) {
  size_t o = (size_t)snprintf(out, cap, "%s;", hk_checkpoint_state_model_path(cs));
  for (size_t i = 0; i < hk_checkpoint_state_count(cs) && o < cap; i++)
    o += (size_t)snprintf(out + o, cap - o, "%s=%.17g;", hk_checkpoint_state_path(cs, i),
                          hk_checkpoint_state_timestamp(cs, i));
  if (o < cap) snprintf(out + o, cap - o, "lp=%.17g", hk_checkpoint_state_last_preserved(cs));
}

/* C117: the checksum line comes first and holds the CRC-32C of the rest,
 * which is the format document's example byte for byte. */
static void test_state_checksum__written_first_and_matching(void **state) {
  fixture *f = *state;
  size_t n = 0;
  char *text = write_example(f, &n);
  char want[LINE1_LEN + 1];
  hk_checkpoint_state *cs = NULL;
  snprintf(want, sizeof want, "# hooked-crc32c: %08x\n", (unsigned)hk_crc32c_extend(0, body, strlen(body)));
  assert_int_equal(n, LINE1_LEN + strlen(body));
  assert_memory_equal(text, want, LINE1_LEN);
  assert_memory_equal(text + LINE1_LEN, body, strlen(body));
  assert_memory_equal(text, "# hooked-crc32c: 84b21e25\n", LINE1_LEN); /* the document's example */
  assert_ok(load(f, text, n, &cs), &f->st);
  assert_int_equal(hk_checkpoint_state_count(cs), 3);
  hk_checkpoint_state_free(cs);
  free(text);
}

/* A listed name changed, the file still well-formed: refused as malformed,
 * at line 1; the Saver's recovery and hk_checkpoint_latest() then treat it
 * as absent and scan, with their WARNING (C123). */
static void test_state_checksum__changed_name_is_refused(void **state) {
  fixture *f = *state;
  size_t n = 0;
  char *text = write_example(f, &n);
  char *at = strstr(text, "model.ckpt-2500");
  char *latest = NULL, *data;
  hk_checkpoint_state *cs = NULL;
  assert_non_null(at);
  at[12] = '6'; /* model.ckpt-2600 */
  assert_status(load(f, text, n, &cs), &f->st, HK_DATA_LOSS, "does not match its checksum line");
  assert_non_null(strstr(f->st.message, f->state_path));
  assert_non_null(strstr(f->st.message, "(line 1)"));
  assert_null(cs);
  /* The scan finds nothing to restore here: NOT_FOUND, after the warning. */
  data = test_path(f->dir, "model.ckpt-2600.safetensors");
  assert_int_equal(test_write_file(data, "x", 1), 0);
  hk_status_clear(&f->st);
  assert_status(hk_checkpoint_latest(&latest, &f->te->env, f->dir, NULL, &f->st), &f->st, HK_DATA_LOSS,
                "model.ckpt-2600");
  assert_logged(f->te, HK_LOG_WARNING, "Ignoring the checkpoint state file");
  free(data);
  free(text);
}

/* The file cut at each line end: every prefix but the whole file is refused. */
static void test_state_checksum__cut_at_every_line_end_is_refused(void **state) {
  fixture *f = *state;
  size_t n = 0, cuts = 0;
  char *text = write_example(f, &n);
  for (size_t k = 1; k < n; k++) {
    hk_checkpoint_state *cs = NULL;
    if (text[k - 1] != '\n') continue;
    assert_status(load(f, text, k, &cs), &f->st, HK_DATA_LOSS, "Invalid checkpoint state loaded from");
    assert_null(cs);
    if (k > LINE1_LEN) assert_non_null(strstr(f->st.message, "does not match its checksum line"));
    cuts++;
  }
  assert_int_equal(cuts, 8); /* after line 1 .. after line 8 of 9 */
  free(text);
}

/* Every bit of the checksum line, flipped: the file is refused — or, when
 * the flip makes line 1 an ordinary comment, read exactly as the intact
 * file (its body is intact). A flip in the digits is always refused. */
static void test_state_checksum__bit_flips_in_the_checksum_line(void **state) {
  fixture *f = *state;
  size_t n = 0, refused = 0, as_comment = 0;
  char *text = write_example(f, &n);
  char *copy = malloc(n);
  char good[2048], got[2048];
  hk_checkpoint_state *cs = NULL;
  assert_non_null(copy);
  assert_ok(load(f, text, n, &cs), &f->st);
  describe(cs, good, sizeof good);
  hk_checkpoint_state_free(cs);
  for (size_t at = 0; at < LINE1_LEN; at++) {
    for (int bit = 0; bit < 8; bit++) {
      hk_code rc;
      memcpy(copy, text, n);
      copy[at] = (char)(copy[at] ^ (1 << bit));
      rc = load(f, copy, n, &cs);
      if (rc == HK_OK) {
        describe(cs, got, sizeof got);
        hk_checkpoint_state_free(cs);
        assert_string_equal(got, good);
        assert_true(at < 16); /* only a flip in "# hooked-crc32c:" can make it a plain comment */
        as_comment++;
      } else {
        assert_int_equal(rc, HK_DATA_LOSS);
        refused++;
      }
    }
  }
  assert_int_equal(refused + as_comment, 8 * LINE1_LEN);
  assert_true(refused >= 8 * 10); /* every flip of the space, the digits and the newline, at least */
  free(copy);
  free(text);
}

/* A file without the line — TensorFlow's, an older hooked's — reads as
 * before; the line elsewhere is a comment; a first line that starts like it
 * must be it exactly. */
static void test_state_checksum__tensorflow_file_without_it_is_read(void **state) {
  fixture *f = *state;
  hk_checkpoint_state *cs = NULL;
  char text[1024];
  unsigned crc = (unsigned)hk_crc32c_extend(0, body, strlen(body));
  assert_ok(load(f, body, strlen(body), &cs), &f->st);
  assert_int_equal(hk_checkpoint_state_count(cs), 3);
  hk_checkpoint_state_free(cs);
  snprintf(text, sizeof text, "# written by hand\n# hooked-crc32c: 00000000\n%s", body);
  assert_ok(load(f, text, strlen(text), &cs), &f->st);
  hk_checkpoint_state_free(cs);
  {
    const char *const bad[] = {"# hooked-crc32c: %08X\n%s", "# hooked-crc32c:  %08x\n%s", "# hooked-crc32c: %08x \n%s",
                               "# hooked-crc32c:%08x\n%s"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
      snprintf(text, sizeof text, bad[i], crc, body);
      if (i == 0 && strchr(text, 'A') == NULL && strchr(text, 'B') == NULL && strchr(text, 'C') == NULL &&
          strchr(text, 'D') == NULL && strchr(text, 'E') == NULL && strchr(text, 'F') == NULL)
        continue; /* no letter to upper-case */
      assert_status(load(f, text, strlen(text), &cs), &f->st, HK_DATA_LOSS, "(line 1)");
      assert_null(cs);
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_state_checksum__written_first_and_matching, setup, teardown),
      cmocka_unit_test_setup_teardown(test_state_checksum__changed_name_is_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_state_checksum__cut_at_every_line_end_is_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_state_checksum__bit_flips_in_the_checksum_line, setup, teardown),
      cmocka_unit_test_setup_teardown(test_state_checksum__tensorflow_file_without_it_is_read, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
