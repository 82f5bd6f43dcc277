/*
 * What the checkpoint reader's test programs (test_reader_*.c) share: the
 * fixture (a temporary directory) and a test-only writer that builds files
 * byte by byte, so every field can be mangled.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_TESTS_UNIT_READER_TESTS_H
#define HOOKED_TESTS_UNIT_READER_TESTS_H

#include "fake_executor.h"
#include "faulty_fs.h"
#include "test_env.h"
#include "tmpdir.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct fixture {
  test_env *te;
  char *dir;
  char *path; /* <dir>/ck.safetensors */
} fixture;

int setup(void **state);
int teardown(void **state);
void write_file_len(const char *path, uint64_t hlen, const char *json, const void *data, size_t n);
void write_file(const char *path, const char *json, const void *data, size_t n);
char *subst_crcs(const char *tmpl, uint32_t ca, uint32_t cb);
uint32_t crc(const void *p, size_t n);
extern const float A_VALS[2];
extern const int64_t B_VAL;

#define META_AB \
  "\"__metadata__\":{\"format\":\"hooked/1\",\"global_step\":\"7\",\"crc32c:a\":\"{CA}\",\"crc32c:b\":\"{CB}\"}"

#define ENT_A "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}"
#define ENT_B "\"b\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[8,16]}"

void base_data(unsigned char out[16]);
void write_variant(const char *path, const char *tmpl, size_t data_len);
hk_code open_reader(fixture *f, hk_checkpoint_reader **r, hk_status *st);

typedef struct saved_graph {
  hk_graph *g;
  hk_raw_session *rs;
  hk_saver *saver;
} saved_graph;

void saved_graph_open(fixture *f, saved_graph *sg, const char *extra_name);
void saved_graph_close(saved_graph *sg);

#endif /* HOOKED_TESTS_UNIT_READER_TESTS_H */
