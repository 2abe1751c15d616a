"""An MLP's forward pass in NumPy from exported weights: the independent reader.

Reads WEIGHTS (.npz with np.load, or .safetensors parsed by its published layout:
an 8-byte little-endian header size, a JSON header of dtype, shape and
data_offsets, then the bytes), runs Flatten -> Dense(relu) -> Dense(softmax) on
array x of INPUT.npz with Keras' layout (kernel [in, out]) and writes the
probabilities to OUTPUT.npz as y (np.savez).

    python3 mlp_forward.py WEIGHTS INPUT.npz OUTPUT.npz
"""
import json
import struct
import sys

import numpy as np


def load(path):
    if path.endswith(".npz"):
        with np.load(path) as archive:
            return {name: archive[name] for name in archive.files}
    with open(path, "rb") as f:
        data = f.read()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    body = data[8 + size:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", info
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(body[begin:end], dtype="<f4").reshape(info["shape"])
    return out


def main():
    weights = load(sys.argv[1])
    with np.load(sys.argv[2]) as inputs:
        x = inputs["x"].astype(np.float64)
    h = x.reshape(x.shape[0], -1) @ weights["dense/kernel"] + weights["dense/bias"]
    h = np.maximum(h, 0)
    z = h @ weights["dense_1/kernel"] + weights["dense_1/bias"]
    z = np.exp(z - z.max(axis=1, keepdims=True))
    np.savez(sys.argv[3], y=(z / z.sum(axis=1, keepdims=True)).astype(np.float32))
    print("weights:", ", ".join(f"{k} {list(v.shape)}" for k, v in sorted(weights.items())))


if __name__ == "__main__":
    main()
