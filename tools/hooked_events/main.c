/*
 * hooked-events — read TensorBoard event files and export their scalars.
 *
 *   hooked-events csv PATH              every scalar as tag,step,wall_time,value
 *   hooked-events plot PATH -o FILE     one self-contained HTML file, a chart per tag
 *
 * PATH is a summary directory or one event file. A directory's runs are its
 * own event files (every regular file whose name contains "tfevents", as
 * TensorBoard picks them up, read in name order, which for hooked's and
 * TensorFlow's names is the order they were created in) and, for plot, each
 * subdirectory at any depth that holds event files, named by its path
 * relative to PATH.
 *
 * Records are read as TensorFlow's RecordReader frames them: uint64
 * length, masked CRC-32C of the length, payload, masked CRC-32C of the
 * payload; both CRCs of every record are checked. A file may end inside its
 * last record when its writer is still appending or was killed: that record
 * is dropped with a warning. Anything else that does not verify is refused
 * with the file and the record's offset, and nothing is written.
 *
 * Payloads are Event protocol buffers, decoded here by hand: wall_time = 1
 * (double), step = 2 (int64), summary = 5, Summary.value = 1 (repeated
 * Value: tag = 1, simple_value = 2 float, histo = 5, tensor = 8
 * TensorProto, metadata = 9 SummaryMetadata). A scalar is a simple_value, or
 * a TensorProto of one element (rank 0, or every dimension 1) of dtype
 * float, double, half, bfloat16, int32 or int64, held in tensor_content or
 * in float_val, double_val, half_val, int_val or int64_val, as TensorBoard's
 * newer writers store scalars — unless the tag's metadata gives it to another
 * plugin (text, histograms, ...). Every other value is skipped.
 *
 * Written only against the public API (hk_crc32c_extend() of
 * hooked/checkpoint.h) and POSIX, as any third-party tool could be.
 *
 * Exit status: 0 success; 1 any problem (one line on stderr,
 * "hooked-events: <file>: <message>"); 2 bad usage.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "tool.h"

#include <string.h>

static const char usage_text[] = "usage: " TOOL
                                 " COMMAND ARGS\n"
                                 "\n"
                                 "Export the scalars of TensorBoard event files (events.out.tfevents.*), as\n"
                                 "hooked's summary writer and TensorFlow write them. PATH is a directory or one\n"
                                 "event file; a directory's event files are those directly in it whose name\n"
                                 "contains 'tfevents', read in name order.\n"
                                 "\n"
                                 "commands:\n"
                                 "  csv PATH              print every scalar of PATH as CSV: a header line\n"
                                 "                        'tag,step,wall_time,value', then one line per value,\n"
                                 "                        sorted by tag (byte order), step, wall_time and the order\n"
                                 "                        written; every value is printed, duplicates included.\n"
                                 "                        Tags holding a comma, a double quote or a line break are\n"
                                 "                        quoted (RFC 4180); values print in the fewest digits that\n"
                                 "                        read back to the same number, or nan, inf, -inf.\n"
                                 "                        Subdirectories are not read: run csv on each of them\n"
                                 "  plot PATH -o FILE     write FILE, one self-contained HTML page (inline SVG, no\n"
                                 "                        script, nothing fetched) with a line chart per scalar tag:\n"
                                 "                        step on x, value on y. Each subdirectory of PATH holding\n"
                                 "                        event files is another run, overlaid in its own colour.\n"
                                 "                        A step written twice (a resumed run) plots its last\n"
                                 "                        value; NaN and infinities are marked above the plot\n"
                                 "\n"
                                 "options:\n"
                                 "  -o, --output FILE     (plot) the HTML file to write; '-' for standard output\n"
                                 "  -h, --help            show this help\n"
                                 "  --version             show the hooked version\n"
                                 "\n"
                                 "Every record's two CRC-32Cs are checked. A file that ends inside its last\n"
                                 "record (still being written, or its writer was killed) is read up to that\n"
                                 "record with a warning; any other damage is an error naming the file and the\n"
                                 "offset of the record.\n"
                                 "\n"
                                 "exit status: 0 success, 1 any problem (a message on stderr), 2 bad usage\n";

/* ---- main ------------------------------------------------------------------------------ */

int main(int argc, char **argv) {
  const char *cmd, *path = NULL, *output = NULL;
  int only_args = 0;

  for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      fputs(usage_text, stdout);
      return 0;
    }
    if (strcmp(argv[i], "--version") == 0) {
      printf(TOOL " (hooked %s)\n", hk_version());
      return 0;
    }
  }
  if (argc < 2) {
    fputs(usage_text, stderr);
    return 2;
  }
  cmd = argv[1];
  if (strcmp(cmd, "csv") != 0 && strcmp(cmd, "plot") != 0) return usage_error("unknown command '%s'", cmd);
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    if (!only_args && strcmp(a, "--") == 0) {
      only_args = 1;
      continue;
    }
    if (!only_args && (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0 || strncmp(a, "--output=", 9) == 0 ||
                       (strncmp(a, "-o", 2) == 0 && a[2] != '\0'))) {
      const char *v = a[1] == 'o' ? (a[2] != '\0' ? a + 2 : NULL) : a[8] == '=' ? a + 9 : NULL;
      if (strcmp(cmd, "plot") != 0) return usage_error("option '%s' is for plot only", a);
      if (v == NULL) {
        if (i + 1 >= argc) return usage_error("option '%s' needs a file name", a);
        v = argv[++i];
      }
      if (output != NULL) return usage_error("option '%s' given twice", "-o");
      if (v[0] == '\0') return usage_error("option '%s' needs a file name", "-o");
      output = v;
      continue;
    }
    if (!only_args && a[0] == '-' && a[1] != '\0') return usage_error("unknown option '%s'", a);
    if (path != NULL) return usage_error("too many arguments for '%s': one PATH", cmd);
    path = a;
  }
  if (path == NULL) return usage_error("'%s' needs a PATH (a directory or an event file)", cmd);
  if (strcmp(cmd, "csv") == 0) return cmd_csv(path);
  if (output == NULL) return usage_error("'%s' needs -o FILE (the HTML file to write; '-' for standard output)", cmd);
  return cmd_plot(path, output);
}
