/*
 * hooked-events — the scalars read: tags (interned, in byte order), runs and
 * their files, points in write order; and the tool's small helpers.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "tool.h"

#include <stdlib.h>
#include <string.h>

int out_of_memory(void) {
  fprintf(stderr, TOOL ": out of memory\n");
  return 1;
}

int usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, TOOL ": ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\nTry '" TOOL " --help'.\n");
  return 2;
}

char *str_dup(const char *s) {
  size_t n = strlen(s) + 1;
  char *c = malloc(n);
  if (c != NULL) memcpy(c, s, n);
  return c;
}

char *path_join(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  int slash = la > 0 && a[la - 1] != '/';
  char *s = malloc(la + (size_t)slash + lb + 1);
  if (s == NULL) return NULL;
  memcpy(s, a, la);
  if (slash) s[la] = '/';
  memcpy(s + la + slash, b, lb + 1);
  return s;
}

void dataset_free(dataset *ds) {
  for (size_t i = 0; i < ds->ntags; i++) free(ds->tags[i].name);
  for (size_t i = 0; i < ds->nruns; i++) {
    for (size_t k = 0; k < ds->runs[i].nfiles; k++) free(ds->runs[i].files[k]);
    free(ds->runs[i].files);
    free(ds->runs[i].name);
  }
  free(ds->tags);
  free(ds->slots);
  free(ds->pts);
  free(ds->runs);
}

static uint64_t hash_bytes(const unsigned char *p, size_t n) {
  uint64_t h = 1469598103934665603u; /* FNV-1a */
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211u;
  return h;
}

static int rehash(dataset *ds, size_t nslots) {
  uint32_t *slots = calloc(nslots, sizeof *slots);
  if (slots == NULL) return -1;
  for (size_t i = 0; i < ds->ntags; i++) {
    const char *name = ds->tags[i].name;
    size_t h = (size_t)hash_bytes((const unsigned char *)name, strlen(name)) & (nslots - 1);
    while (slots[h] != 0) h = (h + 1) & (nslots - 1);
    slots[h] = (uint32_t)i + 1;
  }
  free(ds->slots);
  ds->slots = slots;
  ds->nslots = nslots;
  return 0;
}

/* The index of tag `name` (n bytes, no NUL), added when new. @return -1 when out of memory. */
int64_t intern_tag(dataset *ds, const unsigned char *name, size_t n) {
  size_t h;
  char *copy;

  if (ds->nslots == 0 || (ds->ntags + 1) * 2 > ds->nslots) {
    if (rehash(ds, ds->nslots ? ds->nslots * 2 : 64) != 0) return -1;
  }
  h = (size_t)hash_bytes(name, n) & (ds->nslots - 1);
  while (ds->slots[h] != 0) {
    const char *t = ds->tags[ds->slots[h] - 1].name;
    if (strlen(t) == n && memcmp(t, name, n) == 0) return ds->slots[h] - 1;
    h = (h + 1) & (ds->nslots - 1);
  }
  if (ds->ntags == ds->tags_cap) {
    size_t cap = ds->tags_cap ? ds->tags_cap * 2 : 32;
    tag_info *t = realloc(ds->tags, cap * sizeof *t);
    if (t == NULL) return -1;
    ds->tags = t;
    ds->tags_cap = cap;
  }
  copy = malloc(n + 1);
  if (copy == NULL) return -1;
  if (n > 0) memcpy(copy, name, n);
  copy[n] = '\0';
  ds->tags[ds->ntags].name = copy;
  ds->tags[ds->ntags].other_plugin = 0;
  ds->tags[ds->ntags].rank = 0;
  ds->slots[h] = (uint32_t)ds->ntags + 1;
  return (int64_t)ds->ntags++;
}

int add_point(dataset *ds, const point *p) {
  if (ds->npts == ds->pts_cap) {
    size_t cap = ds->pts_cap ? ds->pts_cap * 2 : 1024;
    point *pts = realloc(ds->pts, cap * sizeof *pts);
    if (pts == NULL) return -1;
    ds->pts = pts;
    ds->pts_cap = cap;
  }
  ds->pts[ds->npts++] = *p;
  return 0;
}
