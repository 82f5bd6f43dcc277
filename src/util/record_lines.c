/*
 * hooked — the line reader of hooked's small text records (the pending
 * deletions record and the best-checkpoint record,
 * checkpoint-format.md): a whole record read into memory, every line ending
 * in '\n', no NUL byte, a magic first line.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "util/record_lines.h"

#include <stdio.h>
#include <string.h>

char *hk__record_next_line(char **p, const char *end, size_t *n) {
  char *line = *p, *nl;
  *n = 0;
  if (line >= end) return NULL;
  nl = memchr(line, '\n', (size_t)(end - line));
  *n = (size_t)(nl - line);
  *nl = '\0';
  *p = nl + 1;
  return line;
}

int hk__record_open(char **p, char *text, size_t len, const char *magic, char *why, size_t cap) {
  size_t n;
  const char *line;
  *p = text;
  if (len == 0 || text[len - 1] != '\n') {
    snprintf(why, cap, "it does not end with a complete line");
    return 0;
  }
  if (strlen(text) != len) {
    snprintf(why, cap, "it holds a NUL byte");
    return 0;
  }
  line = hk__record_next_line(p, text + len, &n);
  if (n != strlen(magic) || memcmp(line, magic, n) != 0) {
    snprintf(why, cap, "line 1 is not \"%s\"", magic);
    return 0;
  }
  return 1;
}
