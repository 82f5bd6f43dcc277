/*
 * What the state file's reader and writer share (hk__ names; not API):
 * the checksum line, the default name, and the helpers both use.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_CKPT_STATE_INTERNAL_H
#define HOOKED_CKPT_STATE_INTERNAL_H

#include "ckpt/ckpt_internal.h"

#define STATE_MAX_BYTES HK__STATE_MAX_BYTES
#define DEFAULT_LATEST_FILENAME "checkpoint"
/* The first line of a state file hooked writes: this, 8 hex digits, '\n'. */
#define CHECKSUM_PREFIX "# hooked-crc32c:"
#define CHECKSUM_LINE_LEN (sizeof CHECKSUM_PREFIX - 1 + 1 + 8 + 1)

/* The state file's keys, in the order the writer writes them. */
typedef enum key_id { KEY_MODEL, KEY_PATHS, KEY_TIMESTAMPS, KEY_LAST_PRESERVED, KEY_COUNT } key_id;
extern const char *const hk__state_key_names[KEY_COUNT];

/** A bounded, log-safe rendering of a name: backslashes and bytes that are
 *  control bytes in ASCII are escaped, other bytes (UTF-8 included) are
 *  kept; an empty name shows as "". Truncated with "..." to fit. */
const char *hk__state_printable(const char *s, size_t len, char *buf, size_t cap);
/** A number the state file may hold: finite and not negative. */
int hk__state_number_ok(double v);

#endif /* HOOKED_CKPT_STATE_INTERNAL_H */
