"""Fashion-MNIST (Debian's dataset-fashion-mnist) as NumPy archives, written by
NumPy itself (np.savez_compressed), none of Ringwork's code.

    /usr/bin/python3 bench/data/fashion_mnist_npz.py OUT_DIR [--shards=1] [--plain]

Writes OUT_DIR/train-0000i-of-0000n.npz and OUT_DIR/test.npz, each with "x", float32
[N, 28, 28] pixels scaled to [0, 1] (as train --dataset=fashion_mnist reads them),
and "y", int64 [N] labels. --plain writes np.savez (stored, not deflated).
"""
import argparse
import gzip
import os

import numpy as np

IDX = "/usr/share/datasets/fashion-mnist"


def read(prefix):
    with gzip.open(os.path.join(IDX, f"{prefix}-images-idx3-ubyte.gz")) as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
    with gzip.open(os.path.join(IDX, f"{prefix}-labels-idx1-ubyte.gz")) as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)
    return (x / 255.0).astype(np.float32), y.astype(np.int64)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--shards", type=int, default=1)
    p.add_argument("--plain", action="store_true")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    save = np.savez if a.plain else np.savez_compressed
    x, y = read("train")
    for i, (xs, ys) in enumerate(zip(np.array_split(x, a.shards), np.array_split(y, a.shards))):
        save(os.path.join(a.out, f"train-{i:05d}-of-{a.shards:05d}.npz"), x=xs, y=ys)
    x, y = read("t10k")
    save(os.path.join(a.out, "test.npz"), x=x, y=y)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
