#!/usr/bin/env python3
"""Read the state file hooked writes with TensorFlow's own text-format
parser (Google's protobuf runtime, Debian python3-protobuf, no TensorFlow):
the CheckpointState message is built at run time from a descriptor written
here with TensorFlow's field numbers (tensorflow/python/training/
checkpoint_state.proto), and the file is merged into it the way
tf.train.get_checkpoint_state() does (text_format.Merge).

It writes four checkpoints with make_checkpoint --keep 3, so that retention
deletes the first and the state file records it as a pending deletion, and
checks:

  * the first line is "# hooked-crc32c: " and 8 lowercase hex digits, the
    CRC-32C of every byte after that line (contract C117, H33; computed here);
  * the second line records the deleted checkpoint,
    '# hooked-pending-deletion: "model.ckpt-5"' (contract D6.5), and its
    files are gone;
  * TensorFlow's parser reads the whole file, the checksum line as a
    comment and the pending-deletion line too: model_checkpoint_path, all_model_checkpoint_paths (oldest
    first), one timestamp per path and last_preserved_timestamp, with no
    field left unknown;
  * what it reads is what the file says: a second parse of the file without
    its checksum line gives the same message.

Usage: check_state_file.py --make-checkpoint EXE --workdir DIR
Exit status: 0 pass, 1 fail, 77 python3-protobuf is missing (ctest SKIP).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

SKIP = 77

try:
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format
except ImportError as e:  # the only reason to skip
    print("check_state_file: SKIP: python3-protobuf is missing (%s); Debian: apt-get install -y python3-protobuf" % e)
    sys.exit(SKIP)

STEPS = [5, 10, 20, 40]
KEPT = STEPS[1:]  # --keep 3


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def checkpoint_state_class():
    """tensorflow.CheckpointState, field numbers as in TensorFlow."""
    F = descriptor_pb2.FieldDescriptorProto
    fd = descriptor_pb2.FileDescriptorProto(name="hooked_check_state/checkpoint_state.proto", package="tensorflow",
                                            syntax="proto3")
    m = fd.message_type.add(name="CheckpointState")
    m.field.add(name="model_checkpoint_path", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    m.field.add(name="all_model_checkpoint_paths", number=2, type=F.TYPE_STRING, label=F.LABEL_REPEATED)
    m.field.add(name="all_model_checkpoint_timestamps", number=3, type=F.TYPE_DOUBLE, label=F.LABEL_REPEATED)
    m.field.add(name="last_preserved_timestamp", number=4, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    desc = pool.FindMessageTypeByName("tensorflow.CheckpointState")
    get_class = getattr(message_factory, "GetMessageClass", None)
    if get_class is None:  # protobuf before 4.22 (Debian 12 has 3.21)
        return message_factory.MessageFactory(pool).GetPrototype(desc)
    return get_class(desc)


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--make-checkpoint", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    ckpt = os.path.join(args.workdir, "ckpt")
    os.makedirs(ckpt)
    try:
        subprocess.run([args.make_checkpoint, "--keep", "3", ckpt] + [str(s) for s in STEPS], check=True,
                       stdout=subprocess.DEVNULL)
        with open(os.path.join(ckpt, "checkpoint"), "rb") as fh:
            raw = fh.read()
        first, sep, rest = raw.partition(b"\n")
        m = re.fullmatch(rb"# hooked-crc32c: ([0-9a-f]{8})", first)
        check(sep == b"\n" and m is not None, "the first line is not the checksum line: %r" % first)
        check(int(m.group(1), 16) == crc32c(rest),
              "the checksum line says %s, the CRC-32C of the rest is %08x" % (m.group(1).decode(), crc32c(rest)))
        second = rest.partition(b"\n")[0]
        check(second == b'# hooked-pending-deletion: "model.ckpt-%d"' % STEPS[0],
              "the second line does not record the deleted checkpoint: %r" % second)
        check(not os.path.exists(os.path.join(ckpt, "model.ckpt-%d.safetensors" % STEPS[0])),
              "the deleted checkpoint's data file is still there")

        CheckpointState = checkpoint_state_class()
        cs = CheckpointState()
        text_format.Merge(raw.decode("utf-8"), cs)  # as tf.train.get_checkpoint_state() reads it
        names = ["model.ckpt-%d" % s for s in KEPT]
        check(cs.model_checkpoint_path == names[-1], "model_checkpoint_path %r" % cs.model_checkpoint_path)
        check(list(cs.all_model_checkpoint_paths) == names,
              "all_model_checkpoint_paths %r" % list(cs.all_model_checkpoint_paths))
        check(len(cs.all_model_checkpoint_timestamps) == len(KEPT) and
              all(t > 1e9 for t in cs.all_model_checkpoint_timestamps) and
              list(cs.all_model_checkpoint_timestamps) == sorted(cs.all_model_checkpoint_timestamps),
              "all_model_checkpoint_timestamps %r" % list(cs.all_model_checkpoint_timestamps))
        check(0 < cs.last_preserved_timestamp <= cs.all_model_checkpoint_timestamps[0],
              "last_preserved_timestamp %r" % cs.last_preserved_timestamp)

        plain = CheckpointState()
        text_format.Merge(rest.decode("utf-8"), plain)
        check(plain == cs, "the file read without its checksum line differs:\n%s\nvs\n%s" % (plain, cs))
    except (Failure, subprocess.CalledProcessError, text_format.ParseError) as e:
        print("check_state_file: FAIL: %s" % e)
        return 1
    print("check_state_file: PASS: TensorFlow's text-format parser reads hooked's state file (%d entries, checksum "
          "line %s, one pending deletion)" % (len(KEPT), m.group(1).decode()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
