/*
 * event_file — an independent reader of TensorBoard event files for tests
 * (contract H26, H43): it shares no code with the library. It checks the
 * record framing (uint64 LE length, masked CRC-32C of the length, payload,
 * masked CRC-32C of the payload; CRCs recomputed bitwise) and decodes the
 * Event protocol buffer by field number, as tensorflow/core/util/event.proto
 * and framework/summary.proto, tensor.proto, tensor_shape.proto define them:
 *   Event           wall_time 1 double, step 2 int64, file_version 3,
 *                   summary 5, session_log 7 {status 1, checkpoint_path 2}
 *   Summary         value 1
 *   Value           tag 1, simple_value 2 float, histo 5, tensor 8,
 *                   metadata 9 {plugin_data 1 {plugin_name 1, content 2},
 *                   data_class 4}
 *   HistogramProto  min 1 .. sum_squares 5 double, bucket_limit 6, bucket 7
 *                   (packed doubles)
 *   TensorProto     dtype 1, tensor_shape 2 {dim 2 {size 1}}, string_val 8
 * and the ProfilerHook's run metadata (event.proto, protobuf/config.proto,
 * framework/step_stats.proto):
 *   Event           tagged_run_metadata 8 {tag 1, run_metadata 2 bytes}
 *   RunMetadata     step_stats 1 {dev_stats 1 (DeviceStepStats)}
 *   DeviceStepStats device 1, node_stats 2 (NodeExecStats)
 *   NodeExecStats   node_name 1, all_start_micros 2, op_start_rel_micros 3,
 *                   op_end_rel_micros 4, all_end_rel_micros 5 (int64),
 *                   timeline_label 8, thread_id 10 (uint32)
 * An unexpected field, wire type or framing error fails the test (cmocka).
 * Everything is malloc'd; event_file_free() releases it.
 */
#ifndef HOOKED_TEST_EVENT_FILE_H
#define HOOKED_TEST_EVENT_FILE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ev_kind { EV_FILE_VERSION = 1, EV_SUMMARY, EV_SESSION_LOG, EV_RUN_METADATA } ev_kind;
typedef enum ev_value_kind { EV_SIMPLE = 1, EV_HISTO, EV_TENSOR } ev_value_kind;

typedef struct ev_value {
  char tag[1100];
  ev_value_kind kind;
  float simple;
  /* histo */
  double min, max, num, sum, sum_squares;
  size_t nbuckets; /* bucket_limit and bucket counts (must be equal) */
  double *limits;
  double *counts;
  /* tensor */
  int dtype;
  int has_shape;
  int rank;
  char *string_val; /* NUL-terminated copy of the one string_val */
  size_t string_len;
  int nstring_val;
  /* metadata */
  int has_metadata;
  char plugin_name[64];
  size_t content_len;
  int data_class;
} ev_value;

/* NodeExecStats; fields left out (proto3 zeros) read as 0. */
typedef struct ev_node {
  char name[300];
  char label[340];
  int64_t all_start_micros, op_start_rel_micros, op_end_rel_micros, all_end_rel_micros;
  uint32_t thread_id;
} ev_node;

typedef struct ev_device {
  char device[128];
  size_t n;
  ev_node *nodes;
} ev_device;

typedef struct ev_event {
  ev_kind kind;
  int has_wall, has_step;
  double wall;
  int64_t step;
  char version[64];
  int status; /* SessionLog */
  char path[600];
  size_t nvalues; /* Summary */
  ev_value *values;
  char rm_tag[300]; /* TaggedRunMetadata */
  size_t ndevices;  /* its RunMetadata's step_stats */
  ev_device *devices;
} ev_event;

typedef struct ev_file {
  size_t n;
  ev_event *events;
  int torn; /* the file ends in a partial record (not decoded) */
} ev_file;

/** Read and decode a whole file; a torn last record sets ->torn when
 *  allow_torn, and fails the test otherwise. Never NULL. */
ev_file *event_file_read(const char *path, int allow_torn);
void event_file_free(ev_file *f);

/** Names of the files in dir whose name contains "tfevents", sorted,
 *  written into names[cap][600]. @return their count. */
int event_file_list(const char *dir, char names[][600], int cap);

/** The only event file of dir, decoded (fails the test unless there is
 *  exactly one). */
ev_file *event_file_only(const char *dir);

/** Decode n bytes holding a serialized Summary (what a summary op produces)
 *  into e's values (e->kind EV_SUMMARY); release with event_values_free(). */
void event_summary_decode(const void *data, size_t n, ev_event *e);
void event_values_free(ev_event *e);

/** The first value tagged `tag` in the file's summaries (and its event in
 *  *ev when not NULL), from event index `from` on; NULL when none. */
const ev_value *event_file_find(const ev_file *f, const char *tag, size_t from, const ev_event **ev);
/** The run-metadata event tagged `tag` (TaggedRunMetadata.tag); NULL when none. */
const ev_event *event_file_find_run_metadata(const ev_file *f, const char *tag);
/** Its node named `name` on `device`; NULL when none. */
const ev_node *event_run_metadata_node(const ev_event *e, const char *device, const char *name);
/** How many summary values are tagged `tag`. */
int event_file_count_tag(const ev_file *f, const char *tag);

#ifdef __cplusplus
}
#endif
#endif /* HOOKED_TEST_EVENT_FILE_H */
