/*
 * Status codes, the status object, and the environment helpers every other
 * file allocates, logs and tells time through.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#include "util/common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *hk_version(void) { return HOOKED_VERSION_STRING; }
int hk_version_number(void) { return HOOKED_VERSION_NUMBER; }

const char *hk_code_name(hk_code code) {
  switch (code) {
#define HK__CODE_CASE(name, value) \
  case HK_##name: return #name;
    HK_CODE_TABLE(HK__CODE_CASE)
#undef HK__CODE_CASE
    default: return "UNKNOWN_CODE";
  }
}

int hk_code_is_preemption(hk_code code) { return code == HK_ABORTED || code == HK_UNAVAILABLE; }

void hk_status_clear(hk_status *st) {
  if (!st) return;
  st->code = HK_OK;
  st->message[0] = '\0';
}

hk_code hk_status_setv(hk_status *st, hk_code code, const char *fmt, va_list ap) {
  if (!st) return code;
  st->code = code;
  st->message[0] = '\0';
  if (fmt) vsnprintf(st->message, sizeof st->message, fmt, ap);
  /* A non-OK status always carries a message. */
  if (code != HK_OK && st->message[0] == '\0') snprintf(st->message, sizeof st->message, "%s", hk_code_name(code));
  return code;
}

hk_code hk_status_set(hk_status *st, hk_code code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  hk_status_setv(st, code, fmt, ap);
  va_end(ap);
  return code;
}

void hk__status_copy(hk_status *dst, const hk_status *src) {
  if (!dst || !src || dst == src) return;
  dst->code = src->code;
  memcpy(dst->message, src->message, sizeof dst->message);
  dst->message[sizeof dst->message - 1] = '\0';
}

hk_code hk__callback_result(hk_code rc, hk_status *st, const char *what, const char *name) {
  if (rc != HK_OK && st && (st->code != rc || st->message[0] == '\0'))
    hk_status_set(st, rc, "%s of '%s' failed with %s", what, name, hk_code_name(rc));
  return rc;
}

/* ---- versioned structs ----------------------------------------------------- */

hk_code hk_struct_init(void *s, size_t size, const void *init, uint32_t version) {
  uint32_t current;
  if (s == NULL || init == NULL) return HK_INVALID_ARGUMENT;
  memcpy(&current, init, sizeof current);
  if (version == 0 || version > current) return HK_INVALID_ARGUMENT;
  memcpy(s, init, size);
  return HK_OK;
}

hk_code hk_struct_check_version(const void *s, uint32_t current, const char *type, const char *what,
                                hk_status *status) {
  uint32_t version;
  if (s == NULL) return HK_OK;
  memcpy(&version, s, sizeof version);
  if (version != 0 && version <= current) return HK_OK;
  return hk_status_set(status, HK_INVALID_ARGUMENT,
                       "%s->version: version %u of %s is not one this library knows (1 to %u); initialize the struct "
                       "with its _INIT macro or _init()",
                       what, (unsigned)version, type, (unsigned)current);
}

/* ---- env ------------------------------------------------------------------ */

static const hk_env default_env = HK_ENV_INIT;

const hk_env *hk__env_or_default(const hk_env *env) { return env ? env : &default_env; }

hk_code hk_env_init(hk_env *env, uint32_t version) { return HK__STRUCT_INIT(env, version, hk_env, HK_ENV_INIT); }

void hk_env_copy(hk_env *dst, const hk_env *src) { *dst = src ? *src : default_env; }

hk_code hk_env_check(const hk_env *env, const char *what, hk_status *st) {
  if (!what) what = "env";
  if (!env) return HK_OK;
  HK__CHECK_VERSION(env, HK_ENV_VERSION, hk_env, what, st);
  const hk_allocator *a = &env->allocator;
  int n = (a->alloc != NULL) + (a->realloc != NULL) + (a->free != NULL);
  if (n != 0 && n != 3)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: allocator must set all of alloc, realloc and free, or none",
                         what);
  if ((int)env->log_level < (int)HK_LOG_DEBUG || (int)env->log_level > (int)HK_LOG_ERROR)
    return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: log_level %d is not a hk_log_level", what, (int)env->log_level);
  if (env->fs) {
    const hk_fs_vtable *fs = env->fs;
    if (fs->version == 0 || fs->version > HK_FS_VTABLE_VERSION)
      return hk_status_set(st, HK_INVALID_ARGUMENT, "%s: unsupported hk_fs_vtable version %u (this library knows %u)",
                           what, (unsigned)fs->version, (unsigned)HK_FS_VTABLE_VERSION);
    if (!fs->open_read || !fs->create_excl || !fs->read_at || !fs->write || !fs->size || !fs->sync || !fs->close ||
        !fs->sync_dir || !fs->rename || !fs->unlink || !fs->stat || !fs->list || !fs->mkdir)
      return hk_status_set(st, HK_INVALID_ARGUMENT,
                           "%s: every slot of the hk_fs_vtable but map, unmap, write_at, lock, unlock and "
                           "write_at_v must be set",
                           what);
    /* A mapping that could not be released would leak for the process's life. */
    if ((fs->map == NULL) != (fs->unmap == NULL))
      return hk_status_set(st, HK_INVALID_ARGUMENT,
                           "%s: the hk_fs_vtable sets one of map and unmap: set both or neither", what);
    /* A lock that could not be released would hold the directory for the
     * process's life. Slots beyond the table's version are not read. */
    if (fs->version >= 3 && (fs->lock == NULL) != (fs->unlock == NULL))
      return hk_status_set(st, HK_INVALID_ARGUMENT,
                           "%s: the hk_fs_vtable sets one of lock and unlock: set both or neither", what);
  }
  return HK_OK;
}

void *hk_env_alloc(const hk_env *env, size_t size) {
  env = hk__env_or_default(env);
  if (size == 0) return NULL;
  if (env->allocator.alloc) return env->allocator.alloc(env->allocator.user, size);
  return malloc(size);
}

void *hk_env_calloc(const hk_env *env, size_t n, size_t size) {
  if (n == 0 || size == 0) return NULL;
  if (n > SIZE_MAX / size) return NULL;
  void *p = hk_env_alloc(env, n * size);
  if (p) memset(p, 0, n * size);
  return p;
}

void *hk_env_realloc(const hk_env *env, void *ptr, size_t size) {
  env = hk__env_or_default(env);
  if (size == 0) return NULL;
  if (env->allocator.realloc) return env->allocator.realloc(env->allocator.user, ptr, size);
  return realloc(ptr, size);
}

void hk_env_free(const hk_env *env, void *ptr) {
  if (!ptr) return;
  env = hk__env_or_default(env);
  if (env->allocator.free)
    env->allocator.free(env->allocator.user, ptr);
  else
    free(ptr);
}

char *hk_env_strdup(const hk_env *env, const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *p = hk_env_alloc(env, n);
  if (p) memcpy(p, s, n);
  return p;
}

void hk_log_stderr(void *user, hk_log_level level, const char *msg) {
  (void)user;
  static const char letters[] = {'D', 'I', 'W', 'E'};
  char lvl = (level >= HK_LOG_DEBUG && level <= HK_LOG_ERROR) ? letters[level] : '?';
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  time_t secs = ts.tv_sec;
  gmtime_r(&secs, &tm);
  char when[32];
  strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
  fprintf(stderr, "%s.%06ld: %c hooked] %s\n", when, (long)(ts.tv_nsec / 1000), lvl, msg ? msg : "");
}

void hk__env_vlog(const hk_env *env, hk_log_level level, const char *fmt, va_list ap) {
  env = hk__env_or_default(env);
  if ((int)level < (int)env->log_level) return;
  char buf[1024];
  vsnprintf(buf, sizeof buf, fmt, ap);
  if (env->log)
    env->log(env->log_user, level, buf);
  else
    hk_log_stderr(NULL, level, buf);
}

void hk_env_log(const hk_env *env, hk_log_level level, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  hk__env_vlog(env, level, fmt, ap);
  va_end(ap);
}

double hk_env_monotonic(const hk_env *env) {
  env = hk__env_or_default(env);
  if (env->clock.monotonic) return env->clock.monotonic(env->clock.user);
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double hk_env_wall(const hk_env *env) {
  env = hk__env_or_default(env);
  if (env->clock.wall) return env->clock.wall(env->clock.user);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void hk_env_sleep(const hk_env *env, double secs) {
  env = hk__env_or_default(env);
  if (!(secs > 0)) return;
  if (env->clock.sleep) {
    env->clock.sleep(env->clock.user, secs);
    return;
  }
  if (secs > 1e9) secs = 1e9; /* ~31 years; keeps the conversion to time_t defined */
  struct timespec ts;
  ts.tv_sec = (time_t)secs;
  ts.tv_nsec = (long)((secs - (double)ts.tv_sec) * 1e9);
  if (ts.tv_nsec >= 1000000000L) ts.tv_nsec = 999999999L;
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

int hk_secs_is_unset(double secs) { return isinf(secs) && secs < 0; }

int hk__secs_valid(double secs) { return isfinite(secs) && secs >= 0; }
