/*
 * hooked-ckpt — what every command shares: messages, paths, a directory's
 * checkpoints (the state file's, then the other data files by name and step)
 * and the shape of a tensor as text.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "tool.h"

const char *dtype_st_name(hk_dtype dtype) {
  switch (dtype) {
#define X(lc, uc, size, st) \
  case HK_DTYPE_##uc: return st;
    HK_DTYPE_TABLE(X)
#undef X
    default: return "?";
  }
}

int usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, TOOL ": ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\nTry '" TOOL " --help'.\n");
  return 2;
}

int problem(const char *file, const hk_status *st) {
  fprintf(stderr, TOOL ": %s: %s\n", file, st->message);
  return 1;
}

void log_sink(void *user, hk_log_level level, const char *msg) {
  (void)user;
  fprintf(stderr, TOOL ": %s: %s\n", level >= HK_LOG_ERROR ? "error" : "warning", msg);
}

int is_directory(const char *path) {
  const hk_fs_vtable *fs = hk_fs_posix();
  hk_fs_stat s;
  return fs->stat(NULL, path, &s, NULL) == HK_OK && s.is_dir;
}

char *join(const char *a, const char *b, const char *c) {
  size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
  char *s = malloc(n);
  if (s != NULL) snprintf(s, n, "%s%s%s", a, b, c);
  return s;
}

int out_of_memory(void) {
  fprintf(stderr, TOOL ": out of memory\n");
  return 1;
}

/* ---- checkpoints of a directory ------------------------------------------- */

static int add_candidate(dir_listing *d, char *prefix, int listed, double ts, int64_t step) {
  for (size_t i = 0; i < d->n; i++) {
    if (strcmp(d->c[i].prefix, prefix) == 0) {
      free(prefix);
      return 0;
    }
  }
  if (d->n == d->cap) {
    size_t cap = d->cap ? d->cap * 2 : 16;
    candidate *c = realloc(d->c, cap * sizeof *c);
    if (c == NULL) {
      free(prefix);
      d->oom = 1;
      return 1;
    }
    d->c = c;
    d->cap = cap;
  }
  d->c[d->n].prefix = prefix;
  d->c[d->n].listed = listed;
  d->c[d->n].latest = 0;
  d->c[d->n].timestamp = ts;
  d->c[d->n].scan_step = step;
  d->n++;
  return 0;
}

/* A data file name "<name>-<digits>.safetensors", or a sharded
 * checkpoint's index "<name>-<digits>.shards": its step, or -1. */
int64_t scan_name_step(const char *name) {
  size_t len = strlen(name), sl = strlen(DATA_SUFFIX), end, i;
  int64_t step = 0;
  /* A shard "<prefix>.shard-DDDDD-of-DDDDD.safetensors" belongs to its index. */
  if (len > 32 && strcmp(name + len - sl, DATA_SUFFIX) == 0) {
    const char *t = name + len - sl - 21;
    int digits = 1;
    for (int k = 0; k < 21; k++)
      if (k >= 7 && k != 12 && k != 13 && k != 14 && k != 15 && (t[k] < '0' || t[k] > '9')) digits = 0;
    if (digits && strncmp(t, ".shard-", 7) == 0 && strncmp(t + 12, "-of-", 4) == 0) return -1;
  }
  if (len > strlen(INDEX_SUFFIX) && strcmp(name + len - strlen(INDEX_SUFFIX), INDEX_SUFFIX) == 0)
    sl = strlen(INDEX_SUFFIX);
  else if (len <= sl || strcmp(name + len - sl, DATA_SUFFIX) != 0)
    return -1;
  end = len - sl;
  i = end;
  while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9') i--;
  if (i == end || i < 2 || name[i - 1] != '-' || end - i > 18) return -1;
  for (; i < end; i++) step = step * 10 + (name[i] - '0');
  return step;
}

static hk_code on_dir_entry(void *user, const char *name, hk_status *status) {
  dir_listing *d = user;
  int64_t step = scan_name_step(name);
  char *prefix;
  (void)status;
  if (step < 0) return HK_OK;
  prefix = join(d->dir, "/", name);
  if (prefix == NULL) {
    d->oom = 1;
    return HK_OK;
  }
  prefix[strlen(prefix) - (is_index_path(prefix) ? strlen(INDEX_SUFFIX) : strlen(DATA_SUFFIX))] = '\0';
  add_candidate(d, prefix, 0, NAN, step);
  return HK_OK;
}

static int cmp_unlisted(const void *pa, const void *pb) {
  const candidate *a = pa, *b = pb;
  /* Every name matched "<basename>-<step>": by basename, then by step. */
  size_t ba = (size_t)(strrchr(a->prefix, '-') - a->prefix), bb = (size_t)(strrchr(b->prefix, '-') - b->prefix);
  int c = memcmp(a->prefix, b->prefix, ba < bb ? ba : bb);
  if (c != 0) return c;
  if (ba != bb) return ba < bb ? -1 : 1;
  return (a->scan_step > b->scan_step) - (a->scan_step < b->scan_step);
}

/* The state file's checkpoints, oldest first, then the other data files of
 * the directory by basename and step. @return 0, or 1 after a message. */
int list_dir(const hk_env *env, const char *dir, dir_listing *d) {
  hk_status st = HK_STATUS_INIT;
  hk_checkpoint_state *cs = NULL;
  hk_code rc;
  size_t nlisted;

  memset(d, 0, sizeof *d);
  d->dir = dir;
  rc = hk_checkpoint_state_get(&cs, env, dir, NULL, &st);
  if (rc == HK_OK) {
    const char *model = hk_checkpoint_state_model_path(cs);
    d->state_found = 1;
    for (size_t i = 0; i < hk_checkpoint_state_count(cs); i++) {
      char *p = join(hk_checkpoint_state_path(cs, i), "", "");
      if (p == NULL || add_candidate(d, p, 1, hk_checkpoint_state_timestamp(cs, i), -1) != 0) {
        hk_checkpoint_state_free(cs);
        return out_of_memory();
      }
    }
    /* TF's rule: model_checkpoint_path is the newest even when the list
     * misses it. */
    if (model != NULL) {
      char *p = join(model, "", "");
      if (p == NULL || add_candidate(d, p, 1, NAN, -1) != 0) {
        hk_checkpoint_state_free(cs);
        return out_of_memory();
      }
      for (size_t i = 0; i < d->n; i++) d->c[i].latest = strcmp(d->c[i].prefix, model) == 0;
    }
    hk_checkpoint_state_free(cs);
  } else if (rc != HK_NOT_FOUND) {
    d->state_problem = 1;
    problem(dir, &st);
  }
  nlisted = d->n;
  hk_status_clear(&st);
  if (hk_fs_posix()->list(NULL, dir, on_dir_entry, d, &st) != HK_OK) return problem(dir, &st);
  if (d->oom) return out_of_memory();
  if (d->n > nlisted) qsort(d->c + nlisted, d->n - nlisted, sizeof *d->c, cmp_unlisted); /* c may be NULL */
  return 0;
}

int is_index_path(const char *path) {
  size_t n = strlen(path), k = strlen(INDEX_SUFFIX);
  return n > k && strcmp(path + n - k, INDEX_SUFFIX) == 0;
}

int index_num_shards(const char *index_path) {
  FILE *f = fopen(index_path, "r");
  char line[128];
  int n = 0;
  if (f == NULL) return 0;
  while (fgets(line, sizeof line, f) != NULL)
    if (sscanf(line, "num_shards: %d", &n) == 1) break;
  fclose(f);
  return n;
}

void free_listing(dir_listing *d) {
  for (size_t i = 0; i < d->n; i++) free(d->c[i].prefix);
  free(d->c);
}

void format_shape(const hk_checkpoint_entry *e, char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = '\0';
  len += (size_t)snprintf(buf, cap, "[");
  for (int32_t k = 0; k < e->rank && len < cap; k++)
    len += (size_t)snprintf(buf + len, cap - len, "%s%" PRId64, k ? ", " : "", e->dims[k]);
  if (len < cap) snprintf(buf + len, cap - len, "]");
}
