/*
 * Internal: hand-written protocol-buffer encoding of the TensorBoard messages
 * hooked writes (hk__pb_ and hk__summary_ names; not API), shared by the
 * summary writer (summary_writer.c) and the graph's summary ops
 * (src/graph/summary_ops.c).
 *
 * Field numbers, as tensorflow/core/util/event.proto,
 * tensorflow/core/framework/summary.proto, tensor.proto, tensor_shape.proto
 * and types.proto define them (checked against TensorBoard's compiled copy,
 * tensorboard/data/server/tensorboard.pb.rs):
 *   Event           wall_time 1 (double), step 2 (int64), file_version 3
 *                   (string), summary 5 (Summary), session_log 7 (SessionLog)
 *   SessionLog      status 1 (enum: START 1, STOP 2, CHECKPOINT 3),
 *                   checkpoint_path 2 (string)
 *   Summary         value 1 (repeated Value)
 *   Summary.Value   tag 1 (string), simple_value 2 (float), histo 5
 *                   (HistogramProto), tensor 8 (TensorProto), metadata 9
 *                   (SummaryMetadata)
 *   HistogramProto  min 1, max 2, num 3, sum 4, sum_squares 5 (double),
 *                   bucket_limit 6, bucket 7 (packed repeated double)
 *   SummaryMetadata plugin_data 1 (PluginData{plugin_name 1, content 2}),
 *                   data_class 4 (enum: DATA_CLASS_TENSOR 2)
 *   TensorProto     dtype 1 (DataType: DT_STRING 7), tensor_shape 2
 *                   (TensorShapeProto, empty for a scalar), string_val 8
 *
 * and for the ProfilerHook's run metadata, as
 * tensorflow/core/protobuf/config.proto and
 * tensorflow/core/framework/step_stats.proto define them:
 *   RunMetadata     step_stats 1 (StepStats)
 *   StepStats       dev_stats 1 (repeated DeviceStepStats)
 *   DeviceStepStats device 1 (string), node_stats 2 (repeated NodeExecStats)
 *   NodeExecStats   node_name 1 (string), all_start_micros 2,
 *                   op_start_rel_micros 3, op_end_rel_micros 4,
 *                   all_end_rel_micros 5 (int64), timeline_label 8
 *                   (string), thread_id 10 (uint32)
 *
 * Copyright 2026 the hooked authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef HOOKED_EVENTS_PROTO_H
#define HOOKED_EVENTS_PROTO_H

#include "hooked/common.h"
#include "hooked/tensor.h"

#include <stddef.h>
#include <stdint.h>

#define HK__PB_VARINT 0u
#define HK__PB_FIXED64 1u
#define HK__PB_LEN 2u
#define HK__PB_FIXED32 5u

/** The longest varint (a negative int64). */
#define HK__PB_VARINT_MAX 10

/* Encoders write at p, which must have room, and return the end. Every
 * field number used here is below 16, so a key is one byte. */
size_t hk__pb_varint_len(uint64_t v);
unsigned char *hk__pb_varint(unsigned char *p, uint64_t v);
unsigned char *hk__pb_key(unsigned char *p, unsigned field, unsigned wire);
unsigned char *hk__pb_double(unsigned char *p, unsigned field, double v);
unsigned char *hk__pb_float(unsigned char *p, unsigned field, float v);
/** Key and length of a length-delimited field whose n bytes follow. */
unsigned char *hk__pb_len(unsigned char *p, unsigned field, size_t n);
unsigned char *hk__pb_bytes(unsigned char *p, unsigned field, const void *data, size_t n);
/** Encoded size of a length-delimited field of n bytes (key, length, data). */
size_t hk__pb_len_size(size_t n);

/* ---- histograms (TensorFlow's histogram.cc) ---------------------------------- */

/** TensorFlow's default bucket limits: -DBL_MAX, then -(1e-12 * 1.1^k) from
 *  the largest magnitude below 1e20 down, 0, the same positive, DBL_MAX —
 *  1551 limits, computed exactly as histogram.cc does (v *= 1.1). */
#define HK__HISTO_LIMITS 1551

/**
 * A histogram being filled: bucket b counts the values v with
 * limits[b-1] <= v < limits[b] (std::upper_bound, as TensorFlow). `limits`
 * and `counts` point at HK__HISTO_LIMITS doubles each; the caller owns them.
 */
typedef struct hk__histo {
  double min, max, num, sum, sum_squares;
  const double *limits;
  double *counts;
} hk__histo;

/** Fill out[HK__HISTO_LIMITS] with the default limits. */
void hk__histo_default_limits(double *out);
/** Empty the histogram: min = DBL_MAX, max = -DBL_MAX, sums and counts 0. */
void hk__histo_clear(hk__histo *h);
/**
 * Add every element of `t` (any integer or floating dtype; f16 and bf16
 * widened exactly). `tag` names the summary in messages.
 * **Errors:** INVALID_ARGUMENT "Nan in summary histogram for: <tag>" /
 * "Infinity in summary histogram for: <tag>" (TensorFlow's messages; the
 * histogram is then partly filled: clear it), and for a BOOL or STRING
 * tensor, a tensor without data, or nbytes that do not match its shape.
 */
hk_code hk__histo_add_tensor(hk__histo *h, const hk_tensor *t, const char *tag, hk_status *st);

/* ---- one-value Summary messages ---------------------------------------------- */

/* Each pair gives the exact size of a serialized Summary holding one Value
 * and writes it. `tag` is taglen bytes (not NUL-terminated here). */
size_t hk__summary_scalar_size(size_t taglen);
unsigned char *hk__summary_scalar(unsigned char *p, const char *tag, size_t taglen, float value);

/** HistogramProto as TensorFlow encodes it (EncodeToProto, zero buckets
 *  collapsed: a run of empty buckets becomes one, keeping the last limit). */
size_t hk__summary_histogram_size(size_t taglen, const hk__histo *h);
unsigned char *hk__summary_histogram(unsigned char *p, const char *tag, size_t taglen, const hk__histo *h);
/** An upper bound of hk__summary_histogram_size() for any histogram. */
size_t hk__summary_histogram_max_size(size_t taglen);

/** The text plugin's Value: metadata plugin_name "text" (empty content:
 *  TextPluginData version 0) and data_class DATA_CLASS_TENSOR, and a scalar
 *  DT_STRING TensorProto holding the textlen bytes. */
size_t hk__summary_text_size(size_t taglen, size_t textlen);
unsigned char *hk__summary_text(unsigned char *p, const char *tag, size_t taglen, const void *text, size_t textlen);

/* ---- RunMetadata ------------------------------------------------------------------- */

/**
 * One timed part of a run, as a NodeExecStats: node_name "<name>", or
 * "<name>.<part>" when part is set; timeline_label "<node_name> = <kind>()",
 * the form TensorFlow's timeline module parses; all_start_micros (wall
 * clock, microseconds since the epoch); op_start_rel_micros 0 and
 * op_end_rel_micros = all_end_rel_micros = dur_micros (a negative duration
 * is written as 0); thread_id. Zero values are left out, as proto3 does.
 */
typedef struct hk__node_stats {
  const char *name;
  const char *part; /* NULL: none */
  const char *kind;
  int64_t start_micros;
  int64_t dur_micros;
  uint32_t thread_id;
} hk__node_stats;

/** One DeviceStepStats: the device's name and its n nodes. */
typedef struct hk__device_stats {
  const char *device;
  const hk__node_stats *nodes;
  size_t n;
} hk__device_stats;

/** The exact size of a serialized RunMetadata whose step_stats hold one
 *  DeviceStepStats per device, in order, and the encoder. */
size_t hk__run_metadata_size(const hk__device_stats *devs, size_t ndevs);
unsigned char *hk__run_metadata(unsigned char *p, const hk__device_stats *devs, size_t ndevs);

/* ---- reading a serialized Summary -------------------------------------------- */

/**
 * Step through the Values of a serialized Summary. Start with *p at its first
 * byte; each call skips fields that are not a Value and stops at the next
 * Value, whose tag (possibly empty) it returns.
 * @return 1 with *tag and *taglen set (borrowed from the bytes), 0 at the end,
 *         -1 when the bytes are not a well-formed Summary.
 */
int hk__summary_next_value(const unsigned char **p, const unsigned char *end, const unsigned char **tag,
                           size_t *taglen);
/**
 * Check that n bytes are a well-formed Summary (every field and Value
 * parses), for writing it verbatim.
 * @param nvalues  may be NULL; receives the number of Values.
 * **Errors:** INVALID_ARGUMENT "<what>: not a serialized Summary protocol
 * buffer (...)".
 */
hk_code hk__summary_check(const void *data, size_t n, const char *what, size_t *nvalues, hk_status *st);

/** Nonzero when the n bytes are valid UTF-8 (protobuf string fields must be). */
int hk__utf8_valid(const char *s, size_t n);

/** Widen one element of a numeric tensor to double: element i of data with
 *  dtype (integer, floating; not BOOL or STRING). */
double hk__element_as_double(hk_dtype dtype, const void *data, size_t i);

#endif /* HOOKED_EVENTS_PROTO_H */
