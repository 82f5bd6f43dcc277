/*
 * Temporary directories and file helpers for tests (see tmpdir.h).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "tmpdir.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void die(const char *what, const char *path) {
  fprintf(stderr, "tmpdir: %s %s: %s\n", what, path ? path : "", strerror(errno));
  abort();
}

char *test_tmpdir_new(const char *tag) {
  const char *base = getenv("TMPDIR");
  size_t n;
  char *path;
  if (!base || !*base) base = "/tmp";
  if (!tag || !*tag) tag = "test";
  n = strlen(base) + strlen(tag) + 32;
  path = malloc(n);
  if (!path) die("malloc for", tag);
  snprintf(path, n, "%s/hooked-%s-XXXXXX", base, tag);
  if (!mkdtemp(path)) die("mkdtemp", path);
  return path;
}

char *test_path(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  if (!p) die("malloc for", name);
  snprintf(p, n, "%s/%s", dir, name);
  return p;
}

int test_tmpdir_remove(const char *path) {
  struct stat sb;
  int rc = 0;
  if (!path) return 0;
  if (lstat(path, &sb) != 0) return errno == ENOENT ? 0 : -1;
  if (S_ISDIR(sb.st_mode)) {
    DIR *d = opendir(path);
    if (!d) return -1;
    for (struct dirent *e = readdir(d); e; e = readdir(d)) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      char *child = test_path(path, e->d_name);
      if (test_tmpdir_remove(child) != 0) rc = -1;
      free(child);
    }
    closedir(d);
    if (rmdir(path) != 0) rc = -1;
  } else if (unlink(path) != 0) {
    rc = -1;
  }
  return rc;
}

void test_tmpdir_free(char *path) {
  if (!path) return;
  test_tmpdir_remove(path);
  free(path);
}

int test_write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  int rc = 0;
  if (!f) return -1;
  if (n > 0 && fwrite(data, 1, n, f) != n) rc = -1;
  if (fclose(f) != 0) rc = -1;
  return rc;
}

char *test_read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  char *buf = NULL;
  size_t len = 0, cap = 0;
  if (!f) return NULL;
  for (;;) {
    if (len + 4096 + 1 > cap) {
      size_t ncap = cap ? cap * 2 : 8192;
      char *grown = realloc(buf, ncap);
      if (!grown) {
        free(buf);
        fclose(f);
        return NULL;
      }
      buf = grown;
      cap = ncap;
    }
    size_t got = fread(buf + len, 1, 4096, f);
    len += got;
    if (got < 4096) break;
  }
  if (ferror(f)) {
    free(buf);
    fclose(f);
    return NULL;
  }
  fclose(f);
  buf[len] = '\0';
  if (n) *n = len;
  return buf;
}

int test_path_exists(const char *path) {
  struct stat sb;
  return lstat(path, &sb) == 0;
}

int test_dir_count_matching(const char *dir, const char *substr) {
  DIR *d = opendir(dir);
  int n = 0;
  if (!d) return -1;
  for (struct dirent *e = readdir(d); e; e = readdir(d)) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    if (!substr || strstr(e->d_name, substr)) n++;
  }
  closedir(d);
  return n;
}

int test_dir_count(const char *dir) { return test_dir_count_matching(dir, NULL); }
