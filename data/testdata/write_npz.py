"""Writes .npz archives with NumPy itself (np.savez, np.savez_compressed), for the
tests of data/pipeline/npz_source: an independent writer, none of Ringwork's code.

    /usr/bin/python3 data/testdata/write_npz.py OUT_DIR

Row i (counted across a.npz, rows 0-9, then c.npz, rows 10-16) holds
  x: float32 [3, 2], x[j, k] = i + 0.5 j + 0.25 k     y: int64, 3 i
  w: float64, i / 4                                   b: bool [2], (i + k) even
  u: uint8 [4], (7 i + k) % 256                       s: int16, -100 i
Also the archives a reader must refuse: fortran.npz, bigendian.npz, rows.npz
(arrays of different rows), corrupt.npz (c.npz with a byte of x's deflated data
flipped near its end), strings.npz (a unicode array) and other.npz (x of rows [3]).
"""
import os
import sys

import numpy as np


def arrays(first, n):
    i = np.arange(first, first + n)
    j = np.arange(3).reshape(1, 3, 1)
    k = np.arange(2).reshape(1, 1, 2)
    return {
        "x": (i.reshape(-1, 1, 1) + 0.5 * j + 0.25 * k).astype(np.float32),
        "y": (3 * i).astype(np.int64),
        "w": (i / 4).astype(np.float64),
        "b": ((i.reshape(-1, 1) + np.arange(2)) % 2 == 0),
        "u": ((7 * i.reshape(-1, 1) + np.arange(4)) % 256).astype(np.uint8),
        "s": (-100 * i).astype(np.int16),
    }


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    np.savez(os.path.join(out, "a.npz"), **arrays(0, 10))
    np.savez_compressed(os.path.join(out, "c.npz"), **arrays(10, 7))
    np.savez(os.path.join(out, "fortran.npz"), x=np.asfortranarray(np.ones((4, 3), np.float32)))
    np.savez(os.path.join(out, "bigendian.npz"), x=np.ones((4, 3), dtype=">f4"))
    np.savez(os.path.join(out, "rows.npz"), x=np.ones((4, 3), np.float32), y=np.ones(5, np.int64))
    np.savez(os.path.join(out, "strings.npz"), x=np.array(["a", "b"]))
    np.savez(os.path.join(out, "other.npz"), x=np.ones((4, 3), np.float32), y=np.ones(4, np.int64))
    with open(os.path.join(out, "c.npz"), "rb") as f:
        data = bytearray(f.read())
    # The first member (x.npy, deflated): flip a byte inside its compressed data.
    name_len = int.from_bytes(data[26:28], "little")
    extra_len = int.from_bytes(data[28:30], "little")
    compressed = int.from_bytes(data[18:22], "little")
    start = 30 + name_len + extra_len
    assert data[30:30 + name_len] == b"x.npy", data[30:30 + name_len]
    data[start + compressed - 6] ^= 0x55  # Late: the header before it inflates.
    with open(os.path.join(out, "corrupt.npz"), "wb") as f:
        f.write(data)
    print("ok")


if __name__ == "__main__":
    main()
