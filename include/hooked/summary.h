/*
 * hooked — summaries for TensorBoard: event files a program, its hooks and
 * the built-in hooks write into.
 *
 * A summary writer appends TensorFlow Event records to one file
 * "events.out.tfevents.<10-digit epoch seconds>.<hostname>[suffix]" in its
 * log directory: TensorBoard's record framing (the payload length as uint64
 * little-endian, the masked CRC-32C of those 8 bytes, the payload, the
 * masked CRC-32C of the payload), "brain.Event:2" as the first event, and
 * Event protocol buffers encoded by hooked itself (no protobuf dependency):
 *   - scalars as Summary.Value.simple_value (a float),
 *   - histograms as Summary.Value.histo (HistogramProto with TensorFlow's
 *     default bucket limits),
 *   - text as the text plugin's Summary.Value: metadata plugin_name "text",
 *     data_class DATA_CLASS_TENSOR, and a scalar DT_STRING TensorProto,
 *   - serialized Summary messages (from summary ops) stored verbatim.
 * TensorBoard, tensorboard's own readers and the `hooked-events` tool read
 * these files.
 *
 *     hk_summary_writer *w = NULL;
 *     hk_summary_writer_options o = HK_SUMMARY_WRITER_OPTIONS_INIT;
 *     o.logdir = "logs/train";
 *     hk_summary_writer_new(&w, &o, &st);
 *     hk_summary_writer_scalar(w, "loss", step, loss, &st);
 *     hk_summary_writer_histogram(w, "weights", step, &weights_view, &st);
 *     hk_summary_writer_text(w, "notes", step, "**lr** halved", &st);
 *     hk_summary_writer_close(w, &st);    // flush, close, report
 *     hk_summary_writer_free(w);
 *
 * One writer per directory per session. Inside a session, ask the
 * session for its writer of a directory (hk_summary_writer_from_session(), or
 * hk_summary_writer_from_hook() from a hook): the built-in hooks (the checkpoint
 * savers' CHECKPOINT events, StepCounterHook, SummarySaverHook) use the same
 * one, so everything written into a directory during a session goes into one
 * file. Two writers of their own in one directory write two files, which
 * TensorBoard reads as one run (each event is kept, their order is by time).
 *
 * When records reach the disk. Each event is handed to the file system when
 * it is written (one write call), so a reader sees it at once; flushing makes
 * what was written durable (fsync). A writer flushes on its own cadence —
 * at the first write at least flush_secs (default 120, as TensorFlow's
 * FileWriter) after its last flush; there is no background thread —, at
 * hk_summary_writer_flush() and _close(), and a session flushes its writers
 * when it closes, clean or not. Event files are append-only, not written
 * atomically like checkpoints: after a failed write the file is closed (a reader stops at the
 * torn record), and the next write starts a new file.
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_SUMMARY_H
#define HOOKED_SUMMARY_H

#include "hooked/common.h"
#include "hooked/tensor.h"
#include "hooked/sys/hook.h"
#include "hooked/session.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hk_summary_writer hk_summary_writer;

/** The longest tag, in bytes. Tags are 1..HK_SUMMARY_TAG_MAX bytes of valid
 *  UTF-8 (protocol-buffer strings must be), e.g. "loss" or "train/loss". */
#define HK_SUMMARY_TAG_MAX 1024

/** The default of hk_summary_writer_options.flush_secs, as TensorFlow's. */
#define HK_SUMMARY_FLUSH_SECS 120.0

#define HK_SUMMARY_WRITER_OPTIONS_VERSION 1
typedef struct hk_summary_writer_options {
  uint32_t version; /**< HK_SUMMARY_WRITER_OPTIONS_VERSION */
  /** Copied: allocator, log sink, wall clock for event times and file names,
   *  monotonic clock for the flush cadence, file system. NULL: defaults. */
  const hk_env *env;
  /** Required, copied, not empty. Created with its parents at the first
   *  write when missing (not by hk_summary_writer_new()). */
  const char *logdir;
  /** HK_UNSET_SECS: HK_SUMMARY_FLUSH_SECS; else finite and > 0. */
  double flush_secs;
  /** Copied; NULL or "": none. Appended to the file name (TensorFlow's
   *  filename_suffix): at most 255 bytes, no '/', '\\' or control byte. */
  const char *filename_suffix;
} hk_summary_writer_options;
#define HK_SUMMARY_WRITER_OPTIONS_INIT \
  { HK_SUMMARY_WRITER_OPTIONS_VERSION, NULL, NULL, HK_UNSET_SECS, NULL }

/**
 * Initialize options to HK_SUMMARY_WRITER_OPTIONS_INIT.
 * @param version  HK_SUMMARY_WRITER_OPTIONS_VERSION, the version the program is compiled with.
 * @return HK_OK; INVALID_ARGUMENT (no message: there is no status), writing
 *         nothing, for a NULL opts or a version that is 0 or above
 *         HK_SUMMARY_WRITER_OPTIONS_VERSION.
 * **Threads:** any. **Allocates:** no.
 */
HK_API hk_code hk_summary_writer_options_init(hk_summary_writer_options *opts, uint32_t version);

/**
 * Create a writer of the program's own for opts->logdir. Nothing is created
 * on disk until the first write, which creates the directory (with its
 * parents) when missing and the event file.
 * @param out   receives the writer; NULL on failure.
 * @param opts  required (logdir is); borrowed for the call.
 * **Ownership:** *out owned: hk_summary_writer_close(), then
 * hk_summary_writer_free().
 * **Errors:** INVALID_ARGUMENT naming the option: a NULL out or opts, a
 * bad version or env, a NULL or empty logdir, a flush_secs that is not
 * finite and > 0, a filename_suffix that is too long or holds '/', '\\' or
 * a control byte. RESOURCE_EXHAUSTED. Nothing is created on failure.
 * **Threads:** any. **Allocates:** yes.
 */
HK_API hk_code hk_summary_writer_new(hk_summary_writer **out, const hk_summary_writer_options *opts, hk_status *status);

/**
 * Write a scalar: an Event at `step` holding a Summary with one Value whose
 * simple_value is `value` rounded to float (TensorBoard's scalar; a value
 * beyond float's range becomes an infinity; NaN and infinities are written
 * as they are).
 * @param tag   1..HK_SUMMARY_TAG_MAX bytes of UTF-8; copied into the record.
 * @param step  any value; the x axis of the plot.
 * **Ownership:** `tag` is copied into the record; nothing is kept.
 * **Errors:** INVALID_ARGUMENT naming the writer or the tag (NULL, empty,
 * too long, not UTF-8); FAILED_PRECONDITION after hk_summary_writer_close();
 * file-system errors (RESOURCE_EXHAUSTED for a full disk) naming the
 * event file, after which the next write starts a new file;
 * RESOURCE_EXHAUSTED when memory runs out. A flush due on the cadence that
 * fails is reported here too (the record itself was written).
 * **Threads:** any: the calls on one writer are serialized by its lock.
 * **Allocates:** only when this record is larger than every earlier one
 * (the writer keeps and reuses its record buffer) and when it creates the
 * file; so a steady stream of summaries allocates nothing.
 */
HK_API hk_code hk_summary_writer_scalar(hk_summary_writer *w, const char *tag, int64_t step, double value,
                                        hk_status *status);

/**
 * Write a histogram of every element of `values` (any integer or floating
 * dtype, any shape; f16 and bf16 widened exactly) as TensorFlow's histogram
 * summary does: a HistogramProto with min, max, num, sum, sum_squares and
 * TensorFlow's default bucket limits (1e-12 growing by 10% up to 1e20,
 * mirrored for negative values, 0 between, and +-DBL_MAX at the ends; bucket
 * i counts the values v with bucket_limit[i-1] <= v < bucket_limit[i]), runs
 * of empty buckets collapsed into one as TensorFlow encodes them. An empty
 * tensor gives num 0, min DBL_MAX, max -DBL_MAX and one empty bucket.
 * @param values  its data is read, not kept.
 * **Ownership:** `tag` and `values` are borrowed for the call.
 * **Errors:** as hk_summary_writer_scalar(), and INVALID_ARGUMENT for a NULL
 * values, a BOOL or STRING dtype, a shape or nbytes that do not match, and
 * "Nan in summary histogram for: <tag>" / "Infinity in summary histogram
 * for: <tag>" (TensorFlow's messages) when an element is NaN or infinite;
 * nothing is written then.
 * **Threads:** any (serialized). **Allocates:** as hk_summary_writer_scalar(),
 * and at the first histogram of the writer its bucket arrays (25 KB, kept).
 */
HK_API hk_code hk_summary_writer_histogram(hk_summary_writer *w, const char *tag, int64_t step, const hk_tensor *values,
                                           hk_status *status);

/**
 * Write text for TensorBoard's text dashboard (which renders Markdown): a
 * Value with SummaryMetadata plugin_data.plugin_name "text" and data_class
 * DATA_CLASS_TENSOR, holding a scalar DT_STRING TensorProto whose string_val
 * is the bytes of `text`.
 * @param text  NUL-terminated; may be "".
 * **Ownership:** `tag` and `text` are copied into the record; nothing kept.
 * **Errors:** as hk_summary_writer_scalar(), and INVALID_ARGUMENT for a NULL
 * text. **Threads:** any (serialized). **Allocates:** as
 * hk_summary_writer_scalar().
 */
HK_API hk_code hk_summary_writer_text(hk_summary_writer *w, const char *tag, int64_t step, const char *text,
                                      hk_status *status);

/**
 * Write a serialized Summary protocol buffer (what a summary op of
 * hooked/graph.h produces, or a merge of several) verbatim as the summary
 * of an Event at `step`.
 * @param summary  `nbytes` bytes, borrowed for the call; checked to parse as
 *                 a Summary (every field well-formed) before anything is
 *                 written. nbytes 0 is an empty Summary.
 * **Ownership:** `summary` is borrowed for the call and copied into the
 * record.
 * **Errors:** as hk_summary_writer_scalar(), and INVALID_ARGUMENT "...: not
 * a serialized Summary protocol buffer ..." for bytes that do not parse or
 * a NULL summary with nbytes > 0.
 * **Threads:** any (serialized). **Allocates:** as hk_summary_writer_scalar().
 */
HK_API hk_code hk_summary_writer_summary(hk_summary_writer *w, int64_t step, const void *summary, size_t nbytes,
                                         hk_status *status);

/**
 * Write TensorBoard's SessionLog START at `step`: the run (re)starts there.
 * TensorBoard then drops the events of this file's directory at steps >=
 * `step` written before it (what a crashed run wrote after the checkpoint
 * its successor resumed from), so a resumed run's curves do not show those
 * steps twice. SummarySaverHook writes it at its first run; the host loop
 * at every start.
 * **Errors:** INVALID_ARGUMENT for a NULL writer; FAILED_PRECONDITION after
 * hk_summary_writer_close(); file-system errors naming the event file
 * (RESOURCE_EXHAUSTED for a full disk). **Threads:** any (serialized). **Allocates:** as
 * hk_summary_writer_scalar().
 */
HK_API hk_code hk_summary_writer_session_start(hk_summary_writer *w, int64_t step, hk_status *status);

/**
 * Make everything written so far durable (fsync of the event file). Nothing
 * written since the last flush, or no file yet: nothing to do. Restarts the
 * flush cadence.
 * **Errors:** INVALID_ARGUMENT for a NULL writer; file-system errors
 * naming the file. **Threads:** any (serialized). **Allocates:** no.
 */
HK_API hk_code hk_summary_writer_flush(hk_summary_writer *w, hk_status *status);

/**
 * Flush and close the event file of a writer of the program's own
 * (hk_summary_writer_new()); later writes fail with FAILED_PRECONDITION. A
 * second close does nothing and returns OK.
 * **Errors:** INVALID_ARGUMENT for a NULL writer; FAILED_PRECONDITION for a
 * writer a session shares (the session closes it); file-system errors (the
 * file is closed all the same).
 * **Threads:** any (serialized). **Allocates:** no.
 */
HK_API hk_code hk_summary_writer_close(hk_summary_writer *w, hk_status *status);

/**
 * Free a writer of the program's own, closing it first when it is not
 * (an error is then logged at ERROR through its env, not returned).
 * @param w  consumed; NULL is a no-op. A writer a session shares is not
 *           freed (an ERROR is logged): the session frees it.
 * **Threads:** the owner's, once no other thread uses the writer.
 * **Allocates:** no.
 */
HK_API void hk_summary_writer_free(hk_summary_writer *w);

/** @return the log directory as given, "" for NULL.
 *  **Ownership:** borrowed, valid until the writer is freed.
 *  **Threads:** any. **Allocates:** no. */
HK_API const char *hk_summary_writer_logdir(const hk_summary_writer *w);

/**
 * @return the path of the event file being written, NULL before the first
 *         write, after a failed write or a close, and for NULL.
 * **Ownership:** borrowed, valid until the next write, close or free.
 * **Threads:** the thread that writes. **Allocates:** no.
 */
HK_API const char *hk_summary_writer_path(const hk_summary_writer *w);

/* ---- the writers a session shares -------------------------------------- */

/**
 * The writer session `s` shares for `logdir`: made at the first
 * request for that directory (by any hook or this call; a logdir spelled
 * with trailing slashes is the same directory), flushed when the session
 * closes, freed with the session. Its events go into the same file as the
 * built-in hooks' for that directory.
 * @param out  receives the writer; NULL on failure.
 * **Ownership:** the writer is borrowed from the session: valid until the
 * session is closed; do not close or free it. `logdir` is copied.
 * **Errors:** INVALID_ARGUMENT for a NULL s, out or logdir, or an empty
 * logdir; FAILED_PRECONDITION "Session is closed." after
 * hk_session_close(); RESOURCE_EXHAUSTED.
 * **Threads:** the training thread (the writer itself may then be used from
 * any thread). **Allocates:** at the first request for a directory.
 */
HK_API hk_code hk_summary_writer_from_session(hk_summary_writer **out, hk_session *s, const char *logdir,
                                              hk_status *status);

/**
 * From a hook's callbacks (begin() onwards): the writer the session this
 * hook serves shares for `logdir`, as hk_summary_writer_from_session() gives it,
 * so a third-party hook writes into the same file as the built-in ones.
 * @param out  receives the writer; NULL on failure.
 * **Ownership:** the writer is borrowed until the session lets go of the
 * hook (its close): drop it then (after end(), or when the next begin()
 * runs). `logdir` is copied.
 * **Errors:** INVALID_ARGUMENT for a NULL hook, out or logdir, or an empty
 * logdir; FAILED_PRECONDITION when the hook serves no session (a writer of
 * one's own then comes from hk_summary_writer_new()); RESOURCE_EXHAUSTED.
 * **Threads:** the training thread. **Allocates:** at the first request for
 * a directory in a session.
 */
HK_API hk_code hk_summary_writer_from_hook(hk_summary_writer **out, hk_hook *hook, const char *logdir,
                                           hk_status *status);

/* ---- summary ops in an executor ------------------------------ */

/** Role of every summary op's output (TensorFlow's SUMMARIES collection):
 *  the graph's summary builders register their output here. */
#define HK_ROLE_SUMMARIES "summaries"
/** Role of the op a Scaffold uses as its summary_op (TensorFlow's
 *  SUMMARY_OP collection). */
#define HK_ROLE_SUMMARY_OP "summary_op"

/**
 * For executor implementers: hk_executor_control() op (in hooked's
 * reserved range) with which a Scaffold builds its default summary_op
 *: the executor adds an op whose output 0, a 1-D U8 tensor, is the
 * concatenation of the serialized Summary messages of `inputs` (a valid
 * Summary merging all their Values), and returns that output's handle. An
 * executor without it answers UNIMPLEMENTED: the Scaffold then uses the
 * registered summaries themselves as its summary_op (SummarySaverHook
 * writes them all at the same step).
 */
#define HK_CONTROL_MERGE_SUMMARIES 110
/** The `arg` of HK_CONTROL_MERGE_SUMMARIES. */
typedef struct hk_merge_summaries_request {
  const hk_handle *inputs; /**< borrowed for the call */
  size_t ninputs;          /**< >= 1 */
  hk_handle out;           /**< filled on success */
} hk_merge_summaries_request;

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_SUMMARY_H */
