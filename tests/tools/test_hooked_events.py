#!/usr/bin/env python3
"""Event-file fixtures for test_hooked_events.sh, written from scratch with the
standard library only: TFRecord framing (length, masked CRC-32C of the
length, payload, masked CRC-32C of the payload) around hand-encoded Event
protocol buffers, as TensorFlow's and TensorBoard's writers lay them out.

usage: test_hooked_events.py KIND DIR [ARGS]
  basic DIR     every way a scalar can be written, values to skip, two files
  runs DIR      scalars in DIR and in two subdirectories (a resumed run too)
  big DIR N     one tag with N values (a sine), plus NaN and infinities
  torn DIR      a file whose last record is cut short
  badlen DIR    a record whose length CRC does not match
  baddata DIR   a record whose data CRC does not match
  garbage DIR   a text file named like an event file
  badproto DIR  a record that verifies but is not an Event
  empty DIR     an event file with only its file_version record
"""
import math
import os
import struct
import sys

# ---- CRC-32C (Castagnoli), reflected, table driven --------------------------
_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _TABLE.append(_c)


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = _TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283


def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def record(payload):
    head = struct.pack("<Q", len(payload))
    return head + struct.pack("<I", masked(head)) + payload + struct.pack("<I", masked(payload))


# ---- protocol buffer encoding ------------------------------------------------
def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def key(field, wire):
    return varint((field << 3) | wire)


def f_varint(field, v):
    return key(field, 0) + varint(v)


def f_double(field, v):
    return key(field, 1) + struct.pack("<d", v)


def f_float(field, v):
    return key(field, 5) + struct.pack("<f", v)


def f_bytes(field, b):
    if isinstance(b, str):
        b = b.encode()
    return key(field, 2) + varint(len(b)) + b


DT_FLOAT, DT_DOUBLE, DT_INT32, DT_STRING, DT_INT64, DT_BFLOAT16, DT_HALF = 1, 2, 3, 7, 9, 14, 19


def shape(*dims):
    return f_bytes(2, b"".join(f_bytes(2, f_varint(1, d)) for d in dims))


def tensor(dtype, dims=(), content=None, float_val=None, double_val=None, half_val=None, int64_val=None,
           string_val=None, packed=True):
    t = f_varint(1, dtype) + shape(*dims)
    if content is not None:
        t += f_bytes(4, content)
    if float_val is not None:
        if packed:
            t += f_bytes(5, b"".join(struct.pack("<f", v) for v in float_val))
        else:
            t += b"".join(f_float(5, v) for v in float_val)
    if double_val is not None:
        t += f_bytes(6, b"".join(struct.pack("<d", v) for v in double_val))
    if half_val is not None:
        t += f_bytes(13, b"".join(varint(v) for v in half_val))
    if int64_val is not None:
        t += f_bytes(10, b"".join(varint(v) for v in int64_val))
    if string_val is not None:
        t += b"".join(f_bytes(8, s) for s in string_val)
    return t


def metadata(plugin, data_class=None):
    m = f_bytes(1, f_bytes(1, plugin))
    if data_class is not None:
        m += f_varint(4, data_class)
    return m


def value(tag, simple=None, tensor_=None, meta=None, histo=None):
    v = f_bytes(1, tag)
    if meta is not None:
        v += f_bytes(9, meta)
    if simple is not None:
        v += f_float(2, simple)
    if tensor_ is not None:
        v += f_bytes(8, tensor_)
    if histo is not None:
        v += f_bytes(5, histo)
    return v


def event(step, wall, values=None, file_version=None, session_log=None, step_first=False):
    head = f_double(1, wall) + f_varint(2, step)
    if step_first:  # fields in another order than the writers use
        head = f_varint(2, step) + f_double(1, wall)
    if file_version is not None:
        return f_double(1, wall) + f_bytes(3, file_version)
    if session_log is not None:
        return head + f_bytes(7, f_varint(1, session_log[0]) + f_bytes(2, session_log[1]))
    return head + f_bytes(5, b"".join(f_bytes(1, v) for v in values))


def write(path, payloads, tail=b""):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(b"".join(record(p) for p in payloads))
        f.write(tail)


def header(wall):
    return event(0, wall, file_version="brain.Event:2")


def ef(d, secs, host="host"):
    return os.path.join(d, "events.out.tfevents.%010d.%s" % (secs, host))


# ---- fixtures ------------------------------------------------------------------
def basic(d):
    w = 1700000000.0
    histo = f_double(1, 0.0) + f_double(2, 1.0) + f_double(3, 4.0)
    first = [
        header(w),
        event(1, w + 0.25, [value("loss", simple=2.5), value("acc", tensor_=tensor(DT_FLOAT, float_val=[0.5]),
                                                             meta=metadata("scalars", 1))]),
        # A histogram, a text summary and another plugin's rank-0 float are skipped.
        event(1, w + 0.5, [value("weights", histo=histo),
                           value("notes", tensor_=tensor(DT_STRING, string_val=["hello"]), meta=metadata("text")),
                           value("pr/thresh", tensor_=tensor(DT_FLOAT, float_val=[9.0]), meta=metadata("pr_curves"))]),
        event(2, w + 1.0, [value("loss", simple=1.25), value("acc", tensor_=tensor(DT_FLOAT, float_val=[0.75]))]),
        event(2, w + 1.0, [value("lr", tensor_=tensor(DT_DOUBLE, double_val=[0.1])),
                           value("a,b", tensor_=tensor(DT_FLOAT, content=struct.pack("<f", -3.0))),
                           value('say "hi"', tensor_=tensor(DT_HALF, half_val=[0x3C00]))]),  # 1.0 in half
        event(3, w + 2.0, [value("loss", simple=float("nan")), value("pr/thresh", tensor_=tensor(DT_FLOAT,
                                                                                                    float_val=[8.0]))],
              step_first=True),
        event(3, w + 2.0, session_log=(3, "ckpt/model.ckpt")),
        event(4, w + 3.0, [value("loss", simple=float("inf")), value("count", tensor_=tensor(DT_INT64,
                                                                                              int64_val=[7])),
                           value("bf", tensor_=tensor(DT_BFLOAT16, dims=(1, 1), half_val=[0x3FC0])),  # 1.5
                           value("vec", tensor_=tensor(DT_FLOAT, dims=(2,), float_val=[1.0, 2.0]))]),
    ]
    write(ef(d, 1700000000), first)
    # The second file (later name) resumes at step 3: step 3 is written again.
    second = [
        header(w + 10),
        event(3, w + 10.5, [value("loss", simple=0.5), value("lr", tensor_=tensor(DT_DOUBLE, content=struct.pack(
            "<d", 0.01)))]),
        event(5, w + 11.0, [value("loss", simple=float("-inf")), value("acc", tensor_=tensor(
            DT_FLOAT, float_val=[0.875], packed=False))]),
    ]
    write(ef(d, 1700000010), second)
    # Files that are not event files are ignored.
    with open(os.path.join(d, "checkpoint"), "w") as f:
        f.write("not an event file\n")


def runs(d):
    w = 1700000000.0
    write(ef(d, 1700000000), [header(w)] + [event(s, w + s, [value("loss", simple=1.0 / s)]) for s in range(1, 6)])
    write(ef(os.path.join(d, "train"), 1700000000), [header(w)] + [
        event(s, w + s, [value("loss", simple=2.0 / s), value("acc", simple=s / 10.0)]) for s in range(1, 6)])
    write(ef(os.path.join(d, "eval", "deep"), 1700000000), [header(w)] + [
        event(s, w + s, [value("acc", simple=s / 20.0)]) for s in (2, 4)])
    # A subdirectory without event files is not a run.
    os.makedirs(os.path.join(d, "ckpt"), exist_ok=True)


def big(d, n):
    w = 1700000000.0
    evs = [header(w)]
    for s in range(n):
        v = math.sin(s / 500.0) * (1 + s / n) + 0.001 * ((s * 7919) % 13)
        if s == n // 3:
            v = float("nan")
        elif s == n // 2:
            v = float("inf")
        elif s == 2 * n // 3:
            v = float("-inf")
        evs.append(event(s, w + s * 0.01, [value("wave", simple=v), value("loss/total", simple=10.0 / (s + 1))]))
    write(ef(d, 1700000000), evs)


def torn(d):
    w = 1700000000.0
    recs = [header(w)] + [event(s, w + s, [value("loss", simple=float(s))]) for s in (1, 2, 3)]
    last = record(event(4, w + 4, [value("loss", simple=4.0)]))
    write(ef(d, 1700000000), recs, tail=last[:-7])


def badlen(d):
    w = 1700000000.0
    good = record(header(w)) + record(event(1, w + 1, [value("loss", simple=1.0)]))
    bad = bytearray(record(event(2, w + 2, [value("loss", simple=2.0)])))
    bad[8] ^= 0xFF  # the length's CRC
    os.makedirs(d, exist_ok=True)
    with open(ef(d, 1700000000), "wb") as f:
        f.write(good + bytes(bad) + record(event(3, w + 3, [value("loss", simple=3.0)])))


def baddata(d):
    w = 1700000000.0
    good = record(header(w))
    bad = bytearray(record(event(1, w + 1, [value("loss", simple=1.0)])))
    bad[14] ^= 0x01  # a payload byte
    os.makedirs(d, exist_ok=True)
    with open(ef(d, 1700000000), "wb") as f:
        f.write(good + bytes(bad))


def garbage(d):
    os.makedirs(d, exist_ok=True)
    with open(ef(d, 1700000000), "w") as f:
        f.write("this is a text file that happens to have an event file's name\n" * 4)


def badproto(d):
    w = 1700000000.0
    # A summary whose value claims 100 bytes it does not have.
    payload = f_double(1, w) + f_varint(2, 1) + key(5, 2) + varint(3) + key(1, 2) + varint(100) + b"x"
    write(ef(d, 1700000000), [header(w), payload])


def empty(d):
    write(ef(d, 1700000000), [header(1700000000.0)])


def main():
    kind, d = sys.argv[1], sys.argv[2]
    if kind == "big":
        big(d, int(sys.argv[3]))
    else:
        {"basic": basic, "runs": runs, "torn": torn, "badlen": badlen, "baddata": baddata, "garbage": garbage,
         "badproto": badproto, "empty": empty}[kind](d)


if __name__ == "__main__":
    main()
