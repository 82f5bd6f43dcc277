#!/usr/bin/env python3
"""Read checkpoints written by hooked with nothing but the Python standard
library and numpy, exactly as checkpoint-format.md "Verifying from outside
hooked" says, and check them byte by byte:

  - the safetensors header: N little-endian, 8 + N a multiple of 64, padded
    with spaces, a JSON object whose tensor members are in bytewise name
    order and whose data_offsets tile the data in that order with no gap and
    nothing after the last tensor ("The data file");
  - the metadata: format "hooked/1", global_step, and a CRC-32C per tensor,
    recomputed here by a table-driven pure-Python CRC-32C;
  - every value, against the formulas make_checkpoint.c writes (keep the two
    in step);
  - the state file "checkpoint" (oldest first, model_checkpoint_path last);
  - that the same variables and step give a byte-identical file.

usage: read_checkpoint.py --make-checkpoint EXE --workdir DIR
Exit status 0 when every check passes, 1 otherwise.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np

STEPS = [0, 7, 123456789012]
MAX_HEADER = 100 * 1024 * 1024

# ---- CRC-32C (Castagnoli, reflected, init and final xor 0xFFFFFFFF) ----------

_POLY_REFLECTED = 0x82F63B78


def _make_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ _POLY_REFLECTED if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _make_table()


def crc32c(data):
    crc = 0xFFFFFFFF
    table = _TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


# ---- the values make_checkpoint.c writes ----------------------------------------

# numpy dtype per safetensors dtype; BF16 has none and is read as its bits.
NP_DTYPES = {
    "BOOL": np.dtype("|b1"),
    "U8": np.dtype("u1"),
    "I8": np.dtype("i1"),
    "U16": np.dtype("<u2"),
    "I16": np.dtype("<i2"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"),
    "U32": np.dtype("<u4"),
    "I32": np.dtype("<i4"),
    "F32": np.dtype("<f4"),
    "U64": np.dtype("<u8"),
    "I64": np.dtype("<i8"),
    "F64": np.dtype("<f8"),
}


def bf16_to_f32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def expected_tensors(step):
    """name -> (safetensors dtype, shape, numpy array of the expected values)."""
    wide = np.array([i * 0.5 for i in range(3 * 70)], dtype=np.float32).reshape(3, 70)
    return {
        "dense/kernel": ("F32", [3, 4], np.array([(i - 5) * 0.25 for i in range(12)], np.float32).reshape(3, 4)),
        "dense/bias": ("F64", [4], np.array([i * 0.125 - 0.25 for i in range(4)], np.float64)),
        "Z_upper": ("U8", [2, 2, 2], np.array([(i * 37 + 11) & 0xFF for i in range(8)], np.uint8).reshape(2, 2, 2)),
        "mask": ("BOOL", [7], np.array([i % 3 == 0 for i in range(7)], np.bool_)),
        "embedding/ids": ("I64", [2, 3], np.array([(i - 3) * 4000000000 + step for i in range(6)], np.int64).reshape(2, 3)),
        "counts": ("I32", [5], np.array([i * 7919 - 20000 for i in range(5)], np.int32)),
        "half": ("F16", [6], np.array([1.0, -2.0, 0.333251953125, 65504.0, 2.0 ** -24, -0.0], np.float16)),
        "bhalf": ("BF16", [3], np.array([1.0, -3.0, 3.140625], np.float32)),
        "lr": ("F32", [], np.array(0.125, np.float32)),
        "ints/i8": ("I8", [4], np.array([-128, -1, 0, 127], np.int8)),
        "ints/i16": ("I16", [3], np.array([-32768, 12345, 32767], np.int16)),
        "ints/u16": ("U16", [2], np.array([0, 65535], np.uint16)),
        "ints/u32": ("U32", [2], np.array([0, 4294967295], np.uint32)),
        "ints/u64": ("U64", [2], np.array([0, 18446744073709551615], np.uint64)),
        "scaled": ("F64", [3], np.array([float(step) * (i + 1) + 0.5 for i in range(3)], np.float64)),
        "wide": ("F32", [3, 70], wide),
        "empty": ("F32", [0, 3], np.zeros((0, 3), np.float32)),
        "global_step": ("I64", [], np.array(step, np.int64)),
    }


# ---- checks ------------------------------------------------------------------------


class Checker:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print("FAILED: " + what)
        return cond


def check_file(c, path, step):
    """Check one data file; the header must be right before values are read."""
    with open(path, "rb") as f:
        b = f.read()
    where = os.path.basename(path)
    if not c.check(len(b) >= 8, "%s: shorter than 8 bytes" % where):
        return
    n = int.from_bytes(b[:8], "little")
    c.check(n <= MAX_HEADER, "%s: header length %d over 100 MiB" % (where, n))
    if not c.check(8 + n <= len(b), "%s: header length %d beyond the file (%d bytes)" % (where, n, len(b))):
        return
    c.check((8 + n) % 64 == 0, "%s: 8 + N = %d is not a multiple of 64" % (where, 8 + n))
    raw = b[8:8 + n]
    text = raw.decode("utf-8")
    stripped = text.rstrip(" ")
    c.check(stripped.endswith("}"), "%s: header padded with something other than spaces" % where)
    # Parsed twice: as pairs for the members' order and duplicates, as
    # dicts for their values.
    pairs = json.loads(text, object_pairs_hook=lambda kv: kv)
    header = json.loads(text)
    c.check(isinstance(header, dict), "%s: the header is not a JSON object" % where)
    c.check(len(header) == len(pairs), "%s: duplicate JSON members" % where)
    meta = header.pop("__metadata__", None)
    if not c.check(isinstance(meta, dict), "%s: no __metadata__ object" % where):
        return
    c.check(all(isinstance(v, str) for v in meta.values()), "%s: a __metadata__ value is not a string" % where)
    c.check(meta.get("format") == "hooked/1", "%s: format %r" % (where, meta.get("format")))
    c.check(meta.get("global_step") == str(step), "%s: global_step %r, expected %d" % (where, meta.get("global_step"), step))

    names = [k for k, _ in pairs if k != "__metadata__"]
    by_bytes = sorted(names, key=lambda s: s.encode("utf-8"))
    c.check(names == by_bytes, "%s: members not in bytewise name order: %s" % (where, names))

    expected = expected_tensors(step)
    c.check(sorted(names) == sorted(expected), "%s: tensors %s, expected %s" % (where, sorted(names), sorted(expected)))
    crc_keys = sorted(k for k in meta if k.startswith("crc32c:"))
    c.check(crc_keys == sorted("crc32c:" + k for k in names), "%s: CRC members %s" % (where, crc_keys))

    base = 8 + n
    end_prev = 0
    for name in by_bytes:
        entry = header[name]
        dtype, shape = entry.get("dtype"), entry.get("shape")
        s, e = entry.get("data_offsets", [None, None])
        c.check(s == end_prev, "%s: %s starts at %r, previous tensor ends at %d" % (where, name, s, end_prev))
        end_prev = e
        if not c.check(dtype in NP_DTYPES, "%s: %s has dtype %r" % (where, name, dtype)):
            continue
        npd = NP_DTYPES[dtype]
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        c.check(e - s == count * npd.itemsize, "%s: %s has %d bytes for shape %s" % (where, name, e - s, shape))
        data = b[base + s:base + e]
        recorded = meta.get("crc32c:" + name, "")
        c.check(len(recorded) == 8 and recorded == recorded.lower(), "%s: CRC of %s is %r" % (where, name, recorded))
        c.check(recorded == "%08x" % crc32c(data), "%s: CRC of %s recorded %s, computed %08x" % (where, name, recorded, crc32c(data)))

        value = np.frombuffer(data, npd).reshape(shape)
        if name not in expected:
            continue
        want_dtype, want_shape, want = expected[name]
        c.check(dtype == want_dtype, "%s: %s dtype %s, expected %s" % (where, name, dtype, want_dtype))
        c.check(list(shape) == want_shape, "%s: %s shape %s, expected %s" % (where, name, shape, want_shape))
        if dtype == "BF16":
            value = bf16_to_f32(value)
        # Bit patterns, so -0.0 and every float rounding are checked too.
        same = value.shape == want.shape and value.tobytes() == want.astype(value.dtype).tobytes()
        c.check(same, "%s: %s holds %s, expected %s" % (where, name, value.tolist(), want.tolist()))
    c.check(end_prev == len(b) - base, "%s: data ends at %d, file holds %d data bytes" % (where, end_prev, len(b) - base))


def check_state(c, directory, prefixes):
    with open(os.path.join(directory, "checkpoint"), encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f if line.strip()]
    fields = [line.split(": ", 1) for line in lines]
    model = [v for k, v in fields if k == "model_checkpoint_path"]
    paths = [v for k, v in fields if k == "all_model_checkpoint_paths"]
    names = ['"%s"' % os.path.basename(p) for p in prefixes]
    c.check(model == [names[-1]], "state file: model_checkpoint_path %s, expected %s" % (model, names[-1]))
    c.check(paths == names, "state file: all_model_checkpoint_paths %s, expected %s" % (paths, names))


def make(exe, directory, steps):
    if os.path.isdir(directory):
        shutil.rmtree(directory)
    os.makedirs(directory)
    out = subprocess.run([exe, directory] + [str(s) for s in steps], check=True, stdout=subprocess.PIPE, text=True)
    return out.stdout.split()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--make-checkpoint", required=True, help="the make_checkpoint executable")
    ap.add_argument("--workdir", required=True, help="scratch directory (replaced)")
    args = ap.parse_args()

    c = Checker()
    c.check(crc32c(b"123456789") == 0xE3069283, "CRC-32C check value of '123456789'")

    first = os.path.join(args.workdir, "a")
    prefixes = make(args.make_checkpoint, first, STEPS)
    c.check(len(prefixes) == len(STEPS), "make_checkpoint printed %s" % prefixes)
    for prefix, step in zip(prefixes, STEPS):
        c.check(os.path.basename(prefix) == "model.ckpt-%d" % step, "prefix %s for step %d" % (prefix, step))
        check_file(c, prefix + ".safetensors", step)
    check_state(c, first, prefixes)

    # The README's short loader (hooked_numpy.py, shown verbatim there) must
    # agree with this careful reader on every tensor (BF16 as raw bits) and
    # return writable arrays.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from hooked_numpy import load_checkpoint
    for prefix, step in zip(prefixes, STEPS):
        meta, arrays = load_checkpoint(prefix + ".safetensors")
        c.check(meta.get("global_step") == str(step), "README loader: global_step %r" % meta.get("global_step"))
        for name, (dtype, shape, want) in expected_tensors(step).items():
            got = arrays.get(name)
            if got is not None and dtype == "BF16":
                got = bf16_to_f32(got)
            same = got is not None and got.shape == want.shape and got.tobytes() == want.astype(got.dtype).tobytes()
            c.check(same, "README loader: %s holds %s" % (name, None if got is None else got.tolist()))
        # Writable arrays that own their memory: torch.from_numpy warns on
        # read-only ones, and writing one must not change another.
        for name, arr in arrays.items():
            c.check(arr.flags.writeable, "README loader: %s is read-only" % name)
            c.check(arr.flags.owndata, "README loader: %s is a view, not a copy" % name)
        counts = arrays.get("counts")
        if c.check(counts is not None and counts.size > 0, "README loader: no counts to write"):
            before = {name: arr.tobytes() for name, arr in arrays.items()}
            counts[...] = 0
            changed = sorted(name for name, arr in arrays.items() if arr.tobytes() != before[name])
            c.check(changed == ["counts"], "README loader: writing counts changed %s" % changed)

    second = os.path.join(args.workdir, "b")
    again = make(args.make_checkpoint, second, STEPS[1:2])
    with open(prefixes[1] + ".safetensors", "rb") as f1, open(again[0] + ".safetensors", "rb") as f2:
        c.check(f1.read() == f2.read(), "the same variables and step gave different files")

    print("read_checkpoint: %d checks passed, %d failed" % (c.passed, c.failed))
    return 0 if c.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
