#!/usr/bin/env python3
"""Open every shard of a sharded checkpoint that make_sharded wrote with
nothing but the Python standard library and numpy, as checkpoint-format.md
"Verifying from outside hooked" says: each shard is a safetensors file on its
own; every tensor's CRC-32C matches its metadata; the slices, concatenated in
the order of their "slice:" ranges and reshaped to their "shape:", give the
values make_sharded saved (the partitioned "p" whole, as the ranks' blocks
concatenated); "local/rng" of shard r holds rank r's values.

usage: read_shards.py PREFIX NSHARDS STEP
Exit status 0 when every check passes, 1 otherwise.
"""

import json
import sys

import numpy as np

_TABLE = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    _TABLE.append(c)


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = _TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


DTYPES = {"F32": "<f4", "F64": "<f8", "I64": "<i8", "U8": "u1"}


def main():
    prefix, n, step = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    slices = {}
    for r in range(n):
        path = "%s.shard-%05d-of-%05d.safetensors" % (prefix, r, n)
        b = open(path, "rb").read()
        hlen = int.from_bytes(b[:8], "little")
        h = json.loads(b[8:8 + hlen])
        meta = h.pop("__metadata__")
        base = 8 + hlen
        assert meta["format"] == "hooked/1", path
        assert meta["shard"] == str(r) and meta["num_shards"] == str(n), (path, meta)
        assert int(meta["global_step"]) == step, (path, meta)
        for name, e in h.items():
            s, end = e["data_offsets"]
            raw = b[base + s:base + end]
            assert "%08x" % crc32c(raw) == meta["crc32c:" + name], (path, name)
            arr = np.frombuffer(raw, DTYPES[e["dtype"]]).reshape(e["shape"])
            if name.startswith("local/"):
                assert name == "local/rng", name
                assert list(arr) == [16 * r + k for k in range(4)], (path, arr)
                continue
            first, last = map(int, meta["slice:" + name].split(":"))
            shape = [int(d) for d in meta["shape:" + name].split(",") if d]
            slices.setdefault(name, []).append((first, last, shape, arr))
    whole = {}
    for name, parts in slices.items():
        parts.sort(key=lambda p: p[0])
        at = 0
        for first, last, _, _ in parts:
            assert first == at, (name, parts)
            at = last
        whole[name] = np.concatenate([p[3] for p in parts]).reshape(parts[0][2])
    want_w = np.array([step + k / 4 for k in range(20)], "<f4").reshape(4, 5)
    want_b = np.array([step * 10 + k for k in range(3)], "<f8")
    assert np.array_equal(whole["w"], want_w), whole["w"]
    assert np.array_equal(whole["b"], want_b), whole["b"]
    assert int(whole["global_step"]) == step, whole["global_step"]
    want_p = np.array([step * 100 + k for k in range(7)], "<f4")
    assert np.array_equal(whole["p"], want_p), whole["p"]
    print("read_shards: %d shards of %s: OK" % (n, prefix))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except AssertionError as e:
        print("read_shards: FAILED: %r" % (e,), file=sys.stderr)
        sys.exit(1)
