import json
import numpy as np

DTYPES = {"BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "U16": np.uint16, "I16": np.int16,
          "F16": np.float16, "U32": np.uint32, "I32": np.int32, "F32": np.float32,
          "U64": np.uint64, "I64": np.int64, "F64": np.float64,
          "BF16": np.uint16}  # numpy has no bfloat16: its raw bits

def load_checkpoint(path):
    """Return (metadata, {name: array}) of a hooked checkpoint file.
    Each array is a writable copy that owns its memory (np.frombuffer alone
    gives read-only views, which torch.from_numpy warns about)."""
    with open(path, "rb") as f:
        b = memoryview(f.read())
    n = int.from_bytes(b[:8], "little")
    header = json.loads(bytes(b[8:8 + n]))
    base = 8 + n
    meta = header.pop("__metadata__")
    arrays = {}
    for name, e in header.items():
        s, t = e["data_offsets"]
        arrays[name] = np.frombuffer(b[base + s:base + t], DTYPES[e["dtype"]]).reshape(e["shape"]).copy()
    return meta, arrays
