#!/usr/bin/env python3
"""Decode the event files `train_digits --summary-dir` writes with Google's
protobuf runtime (Debian python3-protobuf) and no TensorFlow: the message
classes are built at run time from descriptors written here, with
TensorFlow's field numbers (tensorflow/core/util/event.proto,
tensorflow/core/framework/summary.proto, tensor.proto, tensor_shape.proto),
so what hooked encodes by hand is parsed by the reference decoder.

It trains 401 steps with --summary-dir and --checkpoint-dir --save-steps 200
and checks:

  * framing: every record of every event file is uint64 length, masked
    CRC-32C of the length, payload, masked CRC-32C of the payload (CRC-32C
    computed here), and the file ends at a record boundary; a copy with one
    payload byte flipped is refused (the check checks);
  * every payload parses as a tensorflow.Event with no field unknown to
    TensorFlow's schema, at any depth, and the first event of a file is file_version "brain.Event:2";
  * the summary directory: SessionLog START at step 1 (SummarySaverHook's
    first run); loss, test_accuracy and test_loss as simple_value at steps
    1, 101, 201, 301, 401 (the MTS's default: every 100 steps, from the
    first); global_step/sec (StepCounterHook) at 101, 201, 301, 401, > 0;
    a HistogramProto "w1" at the same steps as the scalars over the 2048
    weights (num, min <= max, bucket_limit increasing, counts summing to
    num); the values sensible (losses finite and > 0, accuracies in [0, 1],
    the accuracy at 401 above the one at 1); loss and test_accuracy at step
    401 equal to the result line's;
  * the checkpoint directory: SessionLog CHECKPOINT events for steps 0,
    200, 400 and 401 naming the save path <dir>/model.ckpt (as TensorFlow's
    CheckpointSaverHook), and no summaries (they went to --summary-dir);
  * the profile directory (--profile-dir, a trace every 100 steps): one
    tagged_run_metadata event per timeline-<N>.json and nothing else, tag
    "step_<N>" at step N (TensorFlow's ProfilerHook's tag), whose
    run_metadata parses as a tensorflow.RunMetadata (config.proto,
    step_stats.proto) with no unknown field: two DeviceStepStats, the
    session's spans on "/hooked/session" and the executor's ops on
    "/job:localhost/replica:0/task:0/device:CPU:0", one NodeExecStats per
    span of the timeline, in its order, with its name, timeline_label
    "<name> = <category>()", duration and start (wall-clock microseconds,
    within the training run; relative to the step as the timeline's ts)
    and thread.

Usage: check_events.py --train-digits EXE --workdir DIR
Exit status: 0 pass, 1 fail, 77 python3-protobuf is missing (ctest SKIP).
"""
import argparse
import glob
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import time

SKIP = 77

try:
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
except ImportError as e:  # the only reason to skip
    print("check_events: SKIP: python3-protobuf is missing (%s); Debian: apt-get install -y python3-protobuf" % e)
    sys.exit(SKIP)

# ---- CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) and TF's mask ----

CRC_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    CRC_TABLE.append(_c)


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = CRC_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc(data):
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283, "CRC-32C check value"
assert crc32c(b"") == 0


# ---- TensorFlow's messages, from descriptors --------------------------------

F = descriptor_pb2.FieldDescriptorProto
OPTIONAL, REPEATED = F.LABEL_OPTIONAL, F.LABEL_REPEATED


def add_message(container, name, fields, oneofs=(), nested=()):
    """fields: (name, number, type, label, type_name or None, oneof index or None)."""
    m = container.add(name=name)
    for o in oneofs:
        m.oneof_decl.add(name=o)
    for fname, number, ftype, label, type_name, oneof in fields:
        f = m.field.add(name=fname, number=number, type=ftype, label=label)
        if type_name:
            f.type_name = type_name
        if oneof is not None:
            f.oneof_index = oneof
    for build in nested:
        build(m)
    return m


def add_enum(container, name, values):
    e = container.add(name=name)
    for vname, number in values:
        e.value.add(name=vname, number=number)


def tensorflow_messages():
    fd = descriptor_pb2.FileDescriptorProto(name="hooked_check_events/tensorflow_event.proto", package="tensorflow",
                                            syntax="proto3")
    T = "." + fd.package + "."
    # tensor_shape.proto
    add_message(fd.message_type, "TensorShapeProto",
                [("dim", 2, F.TYPE_MESSAGE, REPEATED, T + "TensorShapeProto.Dim", None),
                 ("unknown_rank", 3, F.TYPE_BOOL, OPTIONAL, None, None)],
                nested=[lambda m: add_message(m.nested_type, "Dim",
                                              [("size", 1, F.TYPE_INT64, OPTIONAL, None, None),
                                               ("name", 2, F.TYPE_STRING, OPTIONAL, None, None)])])
    # types.proto (the values the tests meet; proto3 keeps any other number)
    add_enum(fd.enum_type, "DataType", [("DT_INVALID", 0), ("DT_FLOAT", 1), ("DT_DOUBLE", 2), ("DT_INT32", 3),
                                        ("DT_STRING", 7), ("DT_INT64", 9), ("DT_BOOL", 10), ("DT_BFLOAT16", 14),
                                        ("DT_HALF", 19)])
    # tensor.proto
    add_message(fd.message_type, "TensorProto",
                [("dtype", 1, F.TYPE_ENUM, OPTIONAL, T + "DataType", None),
                 ("tensor_shape", 2, F.TYPE_MESSAGE, OPTIONAL, T + "TensorShapeProto", None),
                 ("version_number", 3, F.TYPE_INT32, OPTIONAL, None, None),
                 ("tensor_content", 4, F.TYPE_BYTES, OPTIONAL, None, None),
                 ("half_val", 13, F.TYPE_INT32, REPEATED, None, None),
                 ("float_val", 5, F.TYPE_FLOAT, REPEATED, None, None),
                 ("double_val", 6, F.TYPE_DOUBLE, REPEATED, None, None),
                 ("int_val", 7, F.TYPE_INT32, REPEATED, None, None),
                 ("string_val", 8, F.TYPE_BYTES, REPEATED, None, None),
                 ("scomplex_val", 9, F.TYPE_FLOAT, REPEATED, None, None),
                 ("int64_val", 10, F.TYPE_INT64, REPEATED, None, None),
                 ("bool_val", 11, F.TYPE_BOOL, REPEATED, None, None),
                 ("dcomplex_val", 12, F.TYPE_DOUBLE, REPEATED, None, None),
                 ("uint32_val", 16, F.TYPE_UINT32, REPEATED, None, None),
                 ("uint64_val", 17, F.TYPE_UINT64, REPEATED, None, None)])
    # summary.proto
    add_enum(fd.enum_type, "DataClass", [("DATA_CLASS_UNKNOWN", 0), ("DATA_CLASS_SCALAR", 1),
                                         ("DATA_CLASS_TENSOR", 2), ("DATA_CLASS_BLOB_SEQUENCE", 3)])
    add_message(fd.message_type, "HistogramProto",
                [("min", 1, F.TYPE_DOUBLE, OPTIONAL, None, None),
                 ("max", 2, F.TYPE_DOUBLE, OPTIONAL, None, None),
                 ("num", 3, F.TYPE_DOUBLE, OPTIONAL, None, None),
                 ("sum", 4, F.TYPE_DOUBLE, OPTIONAL, None, None),
                 ("sum_squares", 5, F.TYPE_DOUBLE, OPTIONAL, None, None),
                 ("bucket_limit", 6, F.TYPE_DOUBLE, REPEATED, None, None),
                 ("bucket", 7, F.TYPE_DOUBLE, REPEATED, None, None)])
    add_message(fd.message_type, "SummaryMetadata",
                [("plugin_data", 1, F.TYPE_MESSAGE, OPTIONAL, T + "SummaryMetadata.PluginData", None),
                 ("display_name", 2, F.TYPE_STRING, OPTIONAL, None, None),
                 ("summary_description", 3, F.TYPE_STRING, OPTIONAL, None, None),
                 ("data_class", 4, F.TYPE_ENUM, OPTIONAL, T + "DataClass", None)],
                nested=[lambda m: add_message(m.nested_type, "PluginData",
                                              [("plugin_name", 1, F.TYPE_STRING, OPTIONAL, None, None),
                                               ("content", 2, F.TYPE_BYTES, OPTIONAL, None, None)])])

    def summary_nested(m):
        add_message(m.nested_type, "Image", [("height", 1, F.TYPE_INT32, OPTIONAL, None, None),
                                             ("width", 2, F.TYPE_INT32, OPTIONAL, None, None),
                                             ("colorspace", 3, F.TYPE_INT32, OPTIONAL, None, None),
                                             ("encoded_image_string", 4, F.TYPE_BYTES, OPTIONAL, None, None)])
        add_message(m.nested_type, "Audio", [("sample_rate", 1, F.TYPE_FLOAT, OPTIONAL, None, None),
                                             ("num_channels", 2, F.TYPE_INT64, OPTIONAL, None, None),
                                             ("length_frames", 3, F.TYPE_INT64, OPTIONAL, None, None),
                                             ("encoded_audio_string", 4, F.TYPE_BYTES, OPTIONAL, None, None),
                                             ("content_type", 5, F.TYPE_STRING, OPTIONAL, None, None)])
        add_message(m.nested_type, "Value",
                    [("node_name", 7, F.TYPE_STRING, OPTIONAL, None, None),
                     ("tag", 1, F.TYPE_STRING, OPTIONAL, None, None),
                     ("metadata", 9, F.TYPE_MESSAGE, OPTIONAL, T + "SummaryMetadata", None),
                     ("simple_value", 2, F.TYPE_FLOAT, OPTIONAL, None, 0),
                     ("obsolete_old_style_histogram", 3, F.TYPE_BYTES, OPTIONAL, None, 0),
                     ("image", 4, F.TYPE_MESSAGE, OPTIONAL, T + "Summary.Image", 0),
                     ("histo", 5, F.TYPE_MESSAGE, OPTIONAL, T + "HistogramProto", 0),
                     ("audio", 6, F.TYPE_MESSAGE, OPTIONAL, T + "Summary.Audio", 0),
                     ("tensor", 8, F.TYPE_MESSAGE, OPTIONAL, T + "TensorProto", 0)],
                    oneofs=["value"])

    add_message(fd.message_type, "Summary", [("value", 1, F.TYPE_MESSAGE, REPEATED, T + "Summary.Value", None)],
                nested=[summary_nested])
    # event.proto
    add_message(fd.message_type, "LogMessage", [("level", 1, F.TYPE_INT32, OPTIONAL, None, None),
                                                ("message", 2, F.TYPE_STRING, OPTIONAL, None, None)])
    add_message(fd.message_type, "SessionLog",
                [("status", 1, F.TYPE_ENUM, OPTIONAL, T + "SessionLog.SessionStatus", None),
                 ("checkpoint_path", 2, F.TYPE_STRING, OPTIONAL, None, None),
                 ("msg", 3, F.TYPE_STRING, OPTIONAL, None, None)],
                nested=[lambda m: add_enum(m.enum_type, "SessionStatus", [("STATUS_UNSPECIFIED", 0), ("START", 1),
                                                                          ("STOP", 2), ("CHECKPOINT", 3)])])
    add_message(fd.message_type, "TaggedRunMetadata", [("tag", 1, F.TYPE_STRING, OPTIONAL, None, None),
                                                       ("run_metadata", 2, F.TYPE_BYTES, OPTIONAL, None, None)])
    add_message(fd.message_type, "SourceMetadata", [("writer", 1, F.TYPE_STRING, OPTIONAL, None, None)])
    add_message(fd.message_type, "Event",
                [("wall_time", 1, F.TYPE_DOUBLE, OPTIONAL, None, None),
                 ("step", 2, F.TYPE_INT64, OPTIONAL, None, None),
                 ("file_version", 3, F.TYPE_STRING, OPTIONAL, None, 0),
                 ("graph_def", 4, F.TYPE_BYTES, OPTIONAL, None, 0),
                 ("summary", 5, F.TYPE_MESSAGE, OPTIONAL, T + "Summary", 0),
                 ("log_message", 6, F.TYPE_MESSAGE, OPTIONAL, T + "LogMessage", 0),
                 ("session_log", 7, F.TYPE_MESSAGE, OPTIONAL, T + "SessionLog", 0),
                 ("tagged_run_metadata", 8, F.TYPE_MESSAGE, OPTIONAL, T + "TaggedRunMetadata", 0),
                 ("meta_graph_def", 9, F.TYPE_BYTES, OPTIONAL, None, 0),
                 ("source_metadata", 10, F.TYPE_MESSAGE, OPTIONAL, T + "SourceMetadata", None)],
                oneofs=["what"])

    # step_stats.proto (the sub-messages hooked never writes are declared as
    # bytes: the same wire type, so a message there would still parse)
    add_message(fd.message_type, "NodeExecStats",
                [("node_name", 1, F.TYPE_STRING, OPTIONAL, None, None),
                 ("all_start_micros", 2, F.TYPE_INT64, OPTIONAL, None, None),
                 ("op_start_rel_micros", 3, F.TYPE_INT64, OPTIONAL, None, None),
                 ("op_end_rel_micros", 4, F.TYPE_INT64, OPTIONAL, None, None),
                 ("all_end_rel_micros", 5, F.TYPE_INT64, OPTIONAL, None, None),
                 ("memory", 6, F.TYPE_BYTES, REPEATED, None, None),
                 ("output", 7, F.TYPE_BYTES, REPEATED, None, None),
                 ("timeline_label", 8, F.TYPE_STRING, OPTIONAL, None, None),
                 ("scheduled_micros", 9, F.TYPE_INT64, OPTIONAL, None, None),
                 ("thread_id", 10, F.TYPE_UINT32, OPTIONAL, None, None),
                 ("referenced_tensor", 11, F.TYPE_BYTES, REPEATED, None, None),
                 ("memory_stats", 12, F.TYPE_BYTES, OPTIONAL, None, None)])
    add_message(fd.message_type, "DeviceStepStats",
                [("device", 1, F.TYPE_STRING, OPTIONAL, None, None),
                 ("node_stats", 2, F.TYPE_MESSAGE, REPEATED, T + "NodeExecStats", None)])
    add_message(fd.message_type, "StepStats",
                [("dev_stats", 1, F.TYPE_MESSAGE, REPEATED, T + "DeviceStepStats", None)])
    # config.proto
    add_message(fd.message_type, "RunMetadata",
                [("step_stats", 1, F.TYPE_MESSAGE, OPTIONAL, T + "StepStats", None),
                 ("cost_graph", 2, F.TYPE_BYTES, OPTIONAL, None, None),
                 ("partition_graphs", 3, F.TYPE_BYTES, REPEATED, None, None)])

    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    get_class = getattr(message_factory, "GetMessageClass", None)
    if get_class is None:  # protobuf before 4.22 (Debian 12 has 3.21)
        factory = message_factory.MessageFactory(pool)
        get_class = factory.GetPrototype
    return {name: get_class(pool.FindMessageTypeByName("tensorflow." + name))
            for name in ("Event", "Summary", "SessionLog", "HistogramProto", "RunMetadata")}


# ---- reading ----------------------------------------------------------------


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def read_records(path):
    """The payloads of a TFRecord file, every CRC checked."""
    with open(path, "rb") as f:
        data = f.read()
    out, pos = [], 0
    while pos < len(data):
        check(len(data) - pos >= 12, "%s: %d stray bytes at offset %d" % (path, len(data) - pos, pos))
        header = data[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (hcrc,) = struct.unpack("<I", data[pos + 8:pos + 12])
        check(hcrc == masked_crc(header), "%s: record at offset %d: length CRC %08x, expected %08x" %
              (path, pos, hcrc, masked_crc(header)))
        check(len(data) - pos - 12 >= length + 4, "%s: record at offset %d is cut short" % (path, pos))
        payload = data[pos + 12:pos + 12 + length]
        (pcrc,) = struct.unpack("<I", data[pos + 12 + length:pos + 16 + length])
        check(pcrc == masked_crc(payload), "%s: record at offset %d: payload CRC %08x, expected %08x" %
              (path, pos, pcrc, masked_crc(payload)))
        out.append(payload)
        pos += 16 + length
    return out


def has_unknown_fields(msg):
    try:  # protobuf >= 4.22
        from google.protobuf import unknown_fields
        n = len(unknown_fields.UnknownFieldSet(msg))
    except ImportError:
        n = len(msg.UnknownFields())
    if n:
        return True
    for fd, value in msg.ListFields():
        if fd.message_type is not None:
            for m in (value if fd.label == fd.LABEL_REPEATED else [value]):
                if has_unknown_fields(m):
                    return True
    return False


def read_events(msgs, path):
    events = []
    for i, payload in enumerate(read_records(path)):
        ev = msgs["Event"]()
        ev.ParseFromString(payload)
        # Nothing hooked wrote may be outside TensorFlow's schema.
        check(not has_unknown_fields(ev), "%s: event %d holds fields TensorFlow's Event does not: %s" % (path, i, ev))
        events.append(ev)
    check(events, "%s: no events" % path)
    check(events[0].WhichOneof("what") == "file_version" and events[0].file_version == "brain.Event:2",
          "%s: the first event is not file_version 'brain.Event:2': %s" % (path, events[0]))
    return events


def dir_events(msgs, d):
    files = sorted(glob.glob(os.path.join(d, "events.out.tfevents.*")))
    check(files, "%s: no event file" % d)
    events = []
    for f in files:
        events += read_events(msgs, f)
    return files, events


def check_summaries(msgs, d, result):
    files, events = dir_events(msgs, d)
    scalars, histos, starts = {}, {}, []
    for ev in events:
        kind = ev.WhichOneof("what")
        check(ev.wall_time > 1e9, "%s: an event at step %d has wall_time %r" % (d, ev.step, ev.wall_time))
        if kind == "session_log":
            if ev.session_log.status == msgs["SessionLog"].START:
                starts.append(ev.step)
        elif kind == "summary":
            for v in ev.summary.value:
                which = v.WhichOneof("value")
                if which == "simple_value":
                    scalars.setdefault(v.tag, {})[ev.step] = v.simple_value
                elif which == "histo":
                    histos.setdefault(v.tag, {})[ev.step] = v.histo
                else:
                    raise Failure("%s: value %r at step %d holds %s" % (d, v.tag, ev.step, which))
    check(starts == [1], "%s: SessionLog START at steps %s, expected [1]" % (d, starts))
    every = [1, 101, 201, 301, 401]
    expected = {"loss": every, "test_accuracy": every, "test_loss": every, "global_step/sec": every[1:]}
    check(sorted(scalars) == sorted(expected), "%s: scalar tags %s, expected %s" % (d, sorted(scalars),
                                                                                     sorted(expected)))
    for tag, steps in expected.items():
        check(sorted(scalars[tag]) == steps, "%s: %s at steps %s, expected %s" % (d, tag, sorted(scalars[tag]), steps))
        for step, value in scalars[tag].items():
            ok = math.isfinite(value) and (0 <= value <= 1 if tag == "test_accuracy" else value > 0)
            check(ok, "%s: %s = %r at step %d" % (d, tag, value, step))
    check(scalars["test_accuracy"][401] > scalars["test_accuracy"][1] + 0.3,
          "%s: test_accuracy went from %g to %g: no learning?" % (d, scalars["test_accuracy"][1],
                                                                 scalars["test_accuracy"][401]))
    check(abs(scalars["loss"][401] - result["loss"]) <= 1e-6 and
          abs(scalars["test_accuracy"][401] - result["test_accuracy"]) <= 1e-6,
          "%s: at step 401 loss %r, test_accuracy %r; the result line says %s" %
          (d, scalars["loss"][401], scalars["test_accuracy"][401], result))
    check(sorted(histos) == ["w1"], "%s: histogram tags %s, expected ['w1']" % (d, sorted(histos)))
    check(sorted(histos["w1"]) == every, "%s: w1 at steps %s, expected %s" % (d, sorted(histos["w1"]), every))
    for step, h in histos["w1"].items():
        where = "%s: histogram w1 at step %d" % (d, step)
        check(h.num == 64 * 32, "%s: num %r, expected 2048" % (where, h.num))
        check(h.min <= h.max and h.min < 0 < h.max, "%s: min %r, max %r" % (where, h.min, h.max))
        check(len(h.bucket) == len(h.bucket_limit) > 1, "%s: %d buckets, %d limits" % (where, len(h.bucket),
                                                                                          len(h.bucket_limit)))
        check(all(a < b for a, b in zip(h.bucket_limit, h.bucket_limit[1:])), "%s: limits not increasing" % where)
        check(sum(h.bucket) == h.num and all(c >= 0 for c in h.bucket), "%s: counts sum to %r" % (where,
                                                                                                   sum(h.bucket)))
        check(h.sum_squares > 0 and math.isfinite(h.sum), "%s: sum %r, sum_squares %r" % (where, h.sum,
                                                                                          h.sum_squares))
    return files, len(events)


def check_checkpoint_events(msgs, d):
    files, events = dir_events(msgs, d)
    got = []
    for ev in events:
        kind = ev.WhichOneof("what")
        check(kind in ("file_version", "session_log"), "%s: unexpected %s event at step %d" % (d, kind, ev.step))
        if kind == "session_log":
            sl = ev.session_log
            check(sl.status == msgs["SessionLog"].CHECKPOINT, "%s: SessionLog %d at step %d" % (d, sl.status,
                                                                                                ev.step))
            # TensorFlow's CheckpointSaverHook names its save path, not the step's file.
            check(sl.checkpoint_path == os.path.join(d, "model.ckpt"),
                  "%s: CHECKPOINT at step %d names %r" % (d, ev.step, sl.checkpoint_path))
            got.append(ev.step)
    check(got == [0, 200, 400, 401], "%s: CHECKPOINT events at steps %s, expected [0, 200, 400, 401]" % (d, got))
    return files, len(events)


SESSION_DEVICE = "/hooked/session"
OPS_DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"


def check_run_metadata(msgs, d, wall_begin, wall_end):
    """The profile directory: one run-metadata event per timeline, matching it."""
    timelines = {}
    for name in os.listdir(d):
        m = re.fullmatch(r"timeline-(\d+)\.json", name)
        if m:
            with open(os.path.join(d, name)) as f:
                timelines[int(m.group(1))] = json.load(f)
    check(timelines, "%s: no timeline" % d)
    files, events = dir_events(msgs, d)
    check(len(files) == 1, "%s: %d event files, expected the one the session shares" % (d, len(files)))
    got = {}
    for ev in events[1:]:
        kind = ev.WhichOneof("what")
        check(kind == "tagged_run_metadata", "%s: unexpected %s event at step %d" % (d, kind, ev.step))
        trm = ev.tagged_run_metadata
        check(trm.tag == "step_%d" % ev.step, "%s: run metadata tagged %r at step %d" % (d, trm.tag, ev.step))
        check(ev.step not in got, "%s: two run-metadata events for step %d" % (d, ev.step))
        check(ev.wall_time > 1e9, "%s: step_%d has wall_time %r" % (d, ev.step, ev.wall_time))
        rm = msgs["RunMetadata"]()
        rm.ParseFromString(trm.run_metadata)
        check(not has_unknown_fields(rm), "%s: step_%d: RunMetadata holds unknown fields: %s" % (d, ev.step, rm))
        got[ev.step] = rm
    check(sorted(got) == sorted(timelines), "%s: run metadata for steps %s, timelines for %s" %
          (d, sorted(got), sorted(timelines)))
    for step, rm in sorted(got.items()):
        where = "%s: step_%d" % (d, step)
        devs = [ds.device for ds in rm.step_stats.dev_stats]
        check(devs == [SESSION_DEVICE, OPS_DEVICE], "%s: devices %s" % (where, devs))
        spans = [e for e in timelines[step]["traceEvents"] if e["ph"] == "X"]
        want = {SESSION_DEVICE: [e for e in spans if e["cat"] != "op"], OPS_DEVICE: [e for e in spans if e["cat"] == "op"]}
        whole = [n for n in rm.step_stats.dev_stats[0].node_stats if n.node_name == "step %d" % step]
        check(len(whole) == 1, "%s: %d nodes named 'step %d'" % (where, len(whole), step))
        t0 = whole[0].all_start_micros
        check(wall_begin * 1e6 <= t0 <= wall_end * 1e6, "%s: the step started at %d us, outside the run [%f, %f] s" %
              (where, t0, wall_begin, wall_end))
        for ds in rm.step_stats.dev_stats:
            nodes = list(ds.node_stats)
            check(len(nodes) == len(want[ds.device]), "%s: %s holds %d nodes, the timeline %d spans" %
                  (where, ds.device, len(nodes), len(want[ds.device])))
            for n, e in zip(nodes, want[ds.device]):
                what = "%s: %s node %r" % (where, ds.device, n.node_name)
                check(n.node_name == e["name"], "%s: the timeline's span is %r" % (what, e["name"]))
                check(n.timeline_label == "%s = %s()" % (e["name"], e["cat"]), "%s: label %r" % (what, n.timeline_label))
                check(n.op_start_rel_micros == 0 and n.op_end_rel_micros == n.all_end_rel_micros,
                      "%s: op times %d..%d, all_end_rel %d" % (what, n.op_start_rel_micros, n.op_end_rel_micros,
                                                               n.all_end_rel_micros))
                check(abs(n.all_end_rel_micros - e["dur"]) <= 1, "%s: %d us, the timeline says %.3f" %
                      (what, n.all_end_rel_micros, e["dur"]))
                check(abs((n.all_start_micros - t0) - e["ts"]) <= 2, "%s: starts %d us into the step, the timeline "
                      "says %.3f" % (what, n.all_start_micros - t0, e["ts"]))
                check(n.thread_id == e["tid"] & 0xFFFFFFFF, "%s: thread %d, the timeline's %d" % (what, n.thread_id,
                                                                                                    e["tid"]))
    return files, len(events)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train-digits", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    msgs = tensorflow_messages()

    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    sdir, cdir = os.path.join(a.workdir, "summaries"), os.path.join(a.workdir, "ckpt")
    pdir = os.path.join(a.workdir, "profile")
    cmd = [a.train_digits, "--steps", "401", "--log-every", "0", "--no-progress", "--summary-dir", sdir,
           "--checkpoint-dir", cdir, "--save-steps", "200", "--profile-dir", pdir, "--profile-steps", "100"]
    wall_begin = time.time()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall_end = time.time()
    fields = r.stdout.split()
    if r.returncode != 0 or len(fields) != 5 or fields[:2] != ["result:", "step=401"] or fields[4] != "stop=last_step":
        print("check_events: %s: exit %d\nstdout:\n%s\nstderr:\n%s" % (" ".join(cmd), r.returncode, r.stdout,
                                                                      r.stderr))
        return 1
    result = {k: float(v) for k, v in (f.split("=") for f in fields[2:4])}
    try:
        files, n = check_summaries(msgs, sdir, result)
        print("check_events: %s: %d events, every CRC right" % (", ".join(os.path.basename(f) for f in files), n))
        files, n = check_checkpoint_events(msgs, cdir)
        print("check_events: %s: %d events, every CRC right" % (", ".join(os.path.basename(f) for f in files), n))
        files, n = check_run_metadata(msgs, pdir, wall_begin, wall_end)
        print("check_events: %s: %d events, every run metadata matches its timeline" %
              (", ".join(os.path.basename(f) for f in files), n))
        # The CRC check catches a flipped byte.
        bad = os.path.join(a.workdir, "events.out.tfevents.corrupt")
        with open(files[0], "rb") as f:
            data = bytearray(f.read())
        data[len(data) - 6] ^= 0x01  # inside the last payload
        with open(bad, "wb") as f:
            f.write(data)
        try:
            read_records(bad)
        except Failure as e:
            print("check_events: a flipped byte is refused: %s" % e)
        else:
            raise Failure("%s: a flipped payload byte went unnoticed" % bad)
    except Failure as e:
        print("check_events: FAIL: %s" % e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
