/*
 * Internal declarations of the event-file layer (hk__ names; not API).
 *
 *   proto.h           hand-written encoding of Event, Summary, HistogramProto,
 *                     SessionLog and the text plugin's TensorProto
 *   summary_writer.c  the writer: TFRecord framing, the file, the flush
 *                     cadence, the lock; the public hk_summary_writer_* API
 *                     and the internal hk__event_writer_* API below, which
 *                     the sessions and the hooks use, are one object
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_EVENTS_EVENTS_H
#define HOOKED_EVENTS_EVENTS_H

#include "util/common.h"

/* SessionLog.SessionStatus (event.proto). */
#define HK__SESSION_LOG_START 1
#define HK__SESSION_LOG_CHECKPOINT 3

typedef struct hk__event_writer hk__event_writer;
/** A writer for directory `dir`; the file is created at the first write:
 *  "events.out.tfevents.<10-digit epoch seconds>.<hostname>", with the
 *  file_version "brain.Event:2" event first. */
hk_code hk__event_writer_new(hk__event_writer **out, const hk_env *env, const char *dir, hk_status *st);
/** Append a SessionLog event (status 3 = CHECKPOINT) at `step`. */
hk_code hk__event_writer_session_log(hk__event_writer *w, int64_t step, int status, const char *checkpoint_path,
                                     hk_status *st);
hk_code hk__event_writer_flush(hk__event_writer *w, hk_status *st);
void hk__event_writer_free(hk__event_writer *w);

/* hk__event_writer and hk_summary_writer (summary.h)
 * name the same object, a struct hk_summary_writer: only the pointer type
 * differs, and these two convert it. */
static inline hk_summary_writer *hk__summary_writer_of(hk__event_writer *w) { return (hk_summary_writer *)(void *)w; }
static inline hk__event_writer *hk__event_writer_of(hk_summary_writer *w) { return (hk__event_writer *)(void *)w; }

/**
 * An Event whose `tagged_run_metadata` (event.proto's TaggedRunMetadata)
 * holds `tag` and the n bytes of a serialized RunMetadata, at `step`: what
 * TensorFlow's FileWriter.add_run_metadata writes (the ProfilerHook's
 * "step_<GS>"). The bytes are written as given.
 * **Errors:** INVALID_ARGUMENT for an empty tag or NULL bytes with a size;
 * the writer's file errors; RESOURCE_EXHAUSTED.
 */
hk_code hk__event_writer_run_metadata(hk__event_writer *w, int64_t step, const char *tag, const void *run_metadata,
                                      size_t n, hk_status *st);

#endif /* HOOKED_EVENTS_EVENTS_H */
