/*
 * Names, paths and formatted strings, allocated through an env.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "util/path.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- strings and paths ---------------------------------------------------------- */

char *hk__asprintf(const hk_env *env, const char *fmt, ...) {
  va_list ap;
  int n;
  char *s;

  va_start(ap, fmt);
  n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return NULL;
  s = hk_env_alloc(env, (size_t)n + 1);
  if (!s) return NULL;
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return s;
}

int hk__valid_name(const char *name) {
  size_t n;
  if (!name) return 0;
  n = strlen(name);
  if (n < 1 || n > 255) return 0;
  if (strcmp(name, ".") == 0 || strstr(name, "..")) return 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)name[i];
    if (c == '/' || c == '\\' || c == '"' || c < 0x20 || c == 0x7f) return 0;
  }
  return 1;
}

char *hk__path_join(const hk_env *env, const char *dir, const char *name) {
  size_t dl;
  if (!dir || !*dir) return hk_env_strdup(env, name);
  dl = strlen(dir);
  while (*name == '/') name++;
  if (dir[dl - 1] == '/') return hk__asprintf(env, "%s%s", dir, name);
  return hk__asprintf(env, "%s/%s", dir, name);
}

char *hk__path_dirname(const hk_env *env, const char *path) {
  const char *slash = strrchr(path, '/');
  size_t n;
  char *out;
  if (!slash) return hk_env_strdup(env, ".");
  n = (size_t)(slash - path);
  while (n > 0 && path[n - 1] == '/') n--; /* "a//b" is in "a" */
  if (n == 0) return hk_env_strdup(env, "/");
  out = hk_env_alloc(env, n + 1);
  if (!out) return NULL;
  memcpy(out, path, n);
  out[n] = '\0';
  return out;
}

const char *hk__path_basename(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}
