/*
 * hooked-events — record files, read as TensorFlow's RecordReader frames
 * them (uint64 length, masked CRC-32C of the length, payload, masked
 * CRC-32C of the payload; both checked), and the runs of a directory: its
 * own event files and each subdirectory that holds some.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "tool.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_DEPTH 32

/* ---- record files ---------------------------------------------------------------- */

static uint32_t masked_crc(const void *data, size_t n) {
  uint32_t crc = hk_crc32c_extend(0, data, n);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

static void torn(const char *path, uint64_t off, uint64_t have, uint64_t need) {
  fprintf(stderr,
          TOOL ": warning: %s: offset %" PRIu64 ": the file ends inside its last record (%" PRIu64 " of %" PRIu64
               " bytes): still being written, or its writer stopped; read up to that record\n",
          path, off, have, need);
}

/* Read every record of one event file into ds. @return 0, or 1 after a message. */
static int read_event_file(dataset *ds, uint32_t run, const char *path) {
  FILE *f = fopen(path, "rb");
  struct stat sb;
  unsigned char head[12], *buf = NULL;
  size_t cap = 0;
  uint64_t off = 0, size;
  int rc = 0;

  if (f == NULL) {
    fprintf(stderr, TOOL ": %s: cannot open: %s\n", path, strerror(errno));
    return 1;
  }
  if (fstat(fileno(f), &sb) != 0) {
    fprintf(stderr, TOOL ": %s: cannot stat: %s\n", path, strerror(errno));
    fclose(f);
    return 1;
  }
  size = (uint64_t)sb.st_size;
  while (off < size) {
    uint64_t len, left = size - off;
    uint32_t stored;
    size_t got;
    const char *why = NULL;
    int d;

    if (left < sizeof head) {
      torn(path, off, left, sizeof head);
      break;
    }
    got = fread(head, 1, sizeof head, f);
    if (got < sizeof head) { /* shrank since fstat, or a read error */
      if (ferror(f)) goto read_error;
      torn(path, off, got, sizeof head);
      break;
    }
    len = get_le(head, 8);
    stored = (uint32_t)get_le(head + 8, 4);
    if (masked_crc(head, 8) != stored) {
      fprintf(stderr,
              TOOL ": %s: offset %" PRIu64
                   ": bad record header: the CRC-32C of the length does not match "
                   "(not a TFRecord event file, or damaged)\n",
              path, off);
      rc = 1;
      break;
    }
    if (len > left - sizeof head || left - sizeof head - len < 4) {
      torn(path, off, left, sizeof head + len + 4);
      break;
    }
    if (len + 4 > cap) {
      unsigned char *nb;
      if (len + 4 > SIZE_MAX / 2) {
        rc = out_of_memory();
        break;
      }
      nb = realloc(buf, (size_t)len + 4);
      if (nb == NULL) {
        rc = out_of_memory();
        break;
      }
      buf = nb;
      cap = (size_t)len + 4;
    }
    got = fread(buf, 1, (size_t)len + 4, f);
    if (got < len + 4) {
      if (ferror(f)) goto read_error;
      torn(path, off, sizeof head + got, sizeof head + len + 4);
      break;
    }
    if (masked_crc(buf, (size_t)len) != (uint32_t)get_le(buf + len, 4)) {
      fprintf(stderr,
              TOOL ": %s: offset %" PRIu64 ": record of %" PRIu64
                   " bytes: the CRC-32C of its data does not match (damaged)\n",
              path, off, len);
      rc = 1;
      break;
    }
    d = decode_event(ds, run, buf, (size_t)len, &why);
    if (d == -2) {
      rc = out_of_memory();
      break;
    }
    if (d != 0) {
      fprintf(stderr,
              TOOL ": %s: offset %" PRIu64 ": record of %" PRIu64 " bytes is not an Event protocol buffer: %s\n", path,
              off, len, why);
      rc = 1;
      break;
    }
    off += sizeof head + len + 4;
  }
  free(buf);
  fclose(f);
  return rc;

read_error:
  fprintf(stderr, TOOL ": %s: offset %" PRIu64 ": read error: %s\n", path, off, strerror(errno));
  free(buf);
  fclose(f);
  return 1;
}

/* ---- finding runs ----------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

typedef struct strlist {
  char **v;
  size_t n, cap;
} strlist;

static int strlist_push(strlist *l, char *s) {
  if (s == NULL) return -1;
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 16;
    char **v = realloc(l->v, cap * sizeof *v);
    if (v == NULL) {
      free(s);
      return -1;
    }
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = s;
  return 0;
}

static void strlist_free(strlist *l) {
  for (size_t i = 0; i < l->n; i++) free(l->v[i]);
  free(l->v);
}

static int is_event_file_name(const char *name) { return strstr(name, "tfevents") != NULL; }

typedef struct ancestor {
  dev_t dev;
  ino_t ino;
} ancestor;

/* Add the run of `dir` if it holds event files, then, when `recurse`, its
 * subdirectories in name order. `rel` is its path relative to PATH ("" for
 * PATH itself, whose run is named `root_name`). Symbolic links are followed
 * (runs are often linked into a comparison directory); a directory that is
 * its own ancestor is skipped. @return 0, or 1 after a message. */
static int scan_dir(dataset *ds, const char *dir, const char *rel, const char *root_name, int recurse, ancestor *chain,
                    int depth, strlist *subruns) {
  DIR *d = opendir(dir);
  struct dirent *e;
  strlist files = {NULL, 0, 0}, subdirs = {NULL, 0, 0};
  struct stat sb;
  int rc = 0;

  if (d == NULL) {
    fprintf(stderr, TOOL ": %s: cannot open directory: %s\n", dir, strerror(errno));
    return 1;
  }
  if (fstat(dirfd(d), &sb) == 0) {
    for (int i = 0; i < depth; i++)
      if (chain[i].dev == sb.st_dev && chain[i].ino == sb.st_ino) {
        closedir(d);
        return 0;
      }
    chain[depth].dev = sb.st_dev;
    chain[depth].ino = sb.st_ino;
  }
  errno = 0;
  while ((e = readdir(d)) != NULL) {
    char *path;
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    path = path_join(dir, e->d_name);
    if (path == NULL) {
      rc = out_of_memory();
      break;
    }
    if (stat(path, &sb) != 0) { /* a dangling link, or it went away */
      free(path);
      continue;
    }
    if (S_ISREG(sb.st_mode) && is_event_file_name(e->d_name)) {
      if (strlist_push(&files, path) != 0) {
        rc = out_of_memory();
        break;
      }
    } else if (S_ISDIR(sb.st_mode) && (recurse || subruns != NULL)) {
      if (strlist_push(&subdirs, str_dup(e->d_name)) != 0) {
        free(path);
        rc = out_of_memory();
        break;
      }
      free(path);
    } else {
      free(path);
    }
    errno = 0;
  }
  if (rc == 0 && errno != 0) {
    fprintf(stderr, TOOL ": %s: cannot read directory: %s\n", dir, strerror(errno));
    rc = 1;
  }
  closedir(d);
  if (rc != 0) goto done;

  if (files.n > 0) {
    run_info *r;
    if (ds->nruns == ds->runs_cap) {
      size_t cap = ds->runs_cap ? ds->runs_cap * 2 : 8;
      run_info *runs = realloc(ds->runs, cap * sizeof *runs);
      if (runs == NULL) {
        rc = out_of_memory();
        goto done;
      }
      ds->runs = runs;
      ds->runs_cap = cap;
    }
    r = &ds->runs[ds->nruns];
    r->name = str_dup(rel[0] != '\0' ? rel : root_name);
    if (r->name == NULL) {
      rc = out_of_memory();
      goto done;
    }
    qsort(files.v, files.n, sizeof *files.v, cmp_str);
    r->files = files.v;
    r->nfiles = files.n;
    r->cap = files.cap;
    files.v = NULL;
    files.n = 0;
    ds->nruns++;
  }
  if (subdirs.n > 0) qsort(subdirs.v, subdirs.n, sizeof *subdirs.v, cmp_str);
  for (size_t i = 0; i < subdirs.n && rc == 0; i++) {
    char *sub = path_join(dir, subdirs.v[i]);
    char *subname = rel[0] == '\0' ? str_dup(subdirs.v[i]) : path_join(rel, subdirs.v[i]);
    if (sub == NULL || subname == NULL) {
      free(sub);
      free(subname);
      rc = out_of_memory();
      break;
    }
    if (recurse) {
      if (depth + 1 < MAX_DEPTH) rc = scan_dir(ds, sub, subname, root_name, 1, chain, depth + 1, NULL);
      free(subname);
    } else if (strlist_push(subruns, subname) != 0) {
      rc = out_of_memory();
    }
    free(sub);
  }
done:
  strlist_free(&files);
  strlist_free(&subdirs);
  return rc;
}

/* Fill ds->runs from PATH: one file, or a directory (and, when `recurse`,
 * its subdirectories). @return 0, or 1 after a message. */
int find_runs(dataset *ds, const char *path, int recurse) {
  struct stat sb;
  ancestor chain[MAX_DEPTH];
  strlist subdirs = {NULL, 0, 0};
  int rc;

  if (stat(path, &sb) != 0) {
    fprintf(stderr, TOOL ": %s: %s\n", path, strerror(errno));
    return 1;
  }
  if (S_ISREG(sb.st_mode)) {
    const char *base = strrchr(path, '/');
    ds->runs = calloc(1, sizeof *ds->runs);
    if (ds->runs == NULL) return out_of_memory();
    ds->runs_cap = 1;
    ds->runs[0].name = str_dup(base ? base + 1 : path);
    ds->runs[0].files = calloc(1, sizeof(char *));
    if (ds->runs[0].name == NULL || ds->runs[0].files == NULL || (ds->runs[0].files[0] = str_dup(path)) == NULL) {
      ds->nruns = 1;
      return out_of_memory();
    }
    ds->runs[0].nfiles = 1;
    ds->nruns = 1;
    return 0;
  }
  if (!S_ISDIR(sb.st_mode)) {
    fprintf(stderr, TOOL ": %s: neither a directory nor a regular file\n", path);
    return 1;
  }
  rc = scan_dir(ds, path, "", path, recurse, chain, 0, recurse ? NULL : &subdirs);
  if (rc == 0 && ds->nruns == 0) {
    if (recurse) {
      fprintf(stderr, TOOL ": %s: no event files (names containing 'tfevents') in it or its subdirectories\n", path);
    } else {
      fprintf(stderr, TOOL ": %s: no event files (names containing 'tfevents') in it", path);
      if (subdirs.n > 0) {
        fprintf(stderr, "; csv does not read subdirectories (%s%s): give one of them as PATH", subdirs.v[0],
                subdirs.n > 1 ? ", ..." : "");
      }
      fprintf(stderr, "\n");
    }
    rc = 1;
  }
  strlist_free(&subdirs);
  return rc;
}

/* Read every run's files, then drop the tensor values of tags that belong to
 * another plugin (their metadata may come after their first value), and
 * rank the tags in byte order. @return 0, or 1 after a message. */
static int cmp_tag_ptr(const void *a, const void *b) {
  const tag_info *x = *(tag_info *const *)a, *y = *(tag_info *const *)b;
  return strcmp(x->name, y->name);
}

int load(dataset *ds) {
  tag_info **order;
  size_t k = 0;

  for (size_t r = 0; r < ds->nruns; r++)
    for (size_t i = 0; i < ds->runs[r].nfiles; i++)
      if (read_event_file(ds, (uint32_t)r, ds->runs[r].files[i]) != 0) return 1;
  for (size_t i = 0; i < ds->npts; i++)
    if (!(ds->pts[i].tensor && ds->tags[ds->pts[i].tag].other_plugin)) ds->pts[k++] = ds->pts[i];
  ds->npts = k;
  if (ds->ntags == 0) return 0;
  order = malloc(ds->ntags * sizeof *order);
  if (order == NULL) return out_of_memory();
  for (size_t i = 0; i < ds->ntags; i++) order[i] = &ds->tags[i];
  qsort(order, ds->ntags, sizeof *order, cmp_tag_ptr);
  for (size_t i = 0; i < ds->ntags; i++) order[i]->rank = (uint32_t)i;
  free(order);
  return 0;
}
