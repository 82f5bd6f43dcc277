/*
 * hooked-events — declarations the tool's files share. Nothing here is
 * hooked's API: the tool is written against the public headers only, as
 * any third-party tool could be.
 *
 *   main.c    usage, argument parsing, the commands
 *   data.c    the scalars read: tags, runs, points; small helpers
 *   decode.c  the protocol buffer wire format, Event and Summary values
 *   files.c   record files (TFRecord framing, both CRCs), finding runs
 *   csv.c     the csv command, and numbers in the fewest digits
 *   plot.c    the plot command: one HTML page of SVG charts
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_TOOLS_HOOKED_EVENTS_TOOL_H
#define HOOKED_TOOLS_HOOKED_EVENTS_TOOL_H

/* Every file includes this header first. */
#if !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <hooked/hooked.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TOOL "hooked-events"

typedef struct point {
  uint32_t tag;
  uint32_t run;
  int64_t step;
  double wall;
  double value;
  uint64_t seq;         /* write order: files in name order, records in file order */
  unsigned char dbl;    /* printed as a double (else as the float it was) */
  unsigned char tensor; /* came from a TensorProto (dropped if the tag is another plugin's) */
} point;

typedef struct tag_info {
  char *name;
  int other_plugin; /* its metadata names a plugin other than scalars */
  uint32_t rank;    /* position in byte order */
} tag_info;

typedef struct run_info {
  char *name; /* PATH as given for PATH itself, else the path relative to PATH */
  char **files;
  size_t nfiles, cap;
} run_info;

typedef struct dataset {
  tag_info *tags;
  size_t ntags, tags_cap;
  uint32_t *slots; /* open addressing: tag index + 1; 0 is empty */
  size_t nslots;
  point *pts;
  size_t npts, pts_cap;
  run_info *runs;
  size_t nruns, runs_cap;
  uint64_t seq;
} dataset;

/* ---- data.c ---------------------------------------------------------------- */

/* "hooked-events: out of memory" on stderr. @return 1. */
int out_of_memory(void);
/* "hooked-events: <fmt with arg>" and the --help hint on stderr. @return 2. */
int usage_error(const char *fmt, const char *arg);
/* malloc'd copies; NULL when out of memory. */
char *str_dup(const char *s);
char *path_join(const char *a, const char *b);
void dataset_free(dataset *ds);
/* The index of tag `name` (n bytes), added when new; -1 when out of memory. */
int64_t intern_tag(dataset *ds, const unsigned char *name, size_t n);
/* 0 when out of memory. */
int add_point(dataset *ds, const point *p);

/* ---- decode.c ---------------------------------------------------------------- */

/* The little-endian unsigned integer of n bytes at p. */
uint64_t get_le(const unsigned char *p, int n);
/* The scalars of one Event record of run `run`; 0 with *why on damage. */
int decode_event(dataset *ds, uint32_t run, const unsigned char *data, size_t n, const char **why);

/* ---- files.c ----------------------------------------------------------------- */

/* The runs of `path` (a directory, recursing into subdirectories when
 * `recurse`, or one event file); 1 after a message on failure. */
int find_runs(dataset *ds, const char *path, int recurse);
/* Read every run's files; 1 after a message on failure. */
int load(dataset *ds);

/* ---- csv.c, plot.c ------------------------------------------------------------- */

/* The fewest significant digits that read back to the same float (or double). */
void fmt_num(char *buf, size_t cap, double v, int dbl);
int cmd_csv(const char *path);
int cmd_plot(const char *path, const char *output);

#endif /* HOOKED_TOOLS_HOOKED_EVENTS_TOOL_H */
