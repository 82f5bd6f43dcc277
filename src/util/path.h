/*
 * Names, paths and formatted strings allocated through an env (hk__ names;
 * not API).
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_UTIL_PATH_H
#define HOOKED_UTIL_PATH_H

#include "util/common.h"

/** 1–255 bytes, no '/', '\\', '"', control bytes (0x01–0x1F, 0x7F),
 *  no "..", not ".". */
int hk__valid_name(const char *name);
/** "dir/name" (no doubled '/'; just name when dir is "" or NULL), allocated
 *  through env; NULL on OOM. */
char *hk__path_join(const hk_env *env, const char *dir, const char *name);
/** The directory part of path ("." when it has no '/', "/" for "/x"),
 *  allocated through env; NULL on OOM. */
char *hk__path_dirname(const hk_env *env, const char *path);
/** Pointer to the last component of path (after the last '/'). */
const char *hk__path_basename(const char *path);
/** malloc-free printf into env's allocator; NULL on OOM. */
char *hk__asprintf(const hk_env *env, const char *fmt, ...) HK_PRINTF(2, 3);

#endif /* HOOKED_UTIL_PATH_H */
