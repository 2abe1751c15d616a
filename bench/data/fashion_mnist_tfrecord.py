"""Fashion-MNIST (Debian's dataset-fashion-mnist) as TFRecord files of
tf.train.Example, written by an independent writer: protobuf's Python serializer
(python3-protobuf, the schema data/testdata/tf_example.proto compiled by protoc
here) and crcmod's CRC32C, none of Ringwork's code.

    python3 bench/data/fashion_mnist_tfrecord.py OUT_DIR [--train_shards=8]
        [--test_shards=1] [--gzip] [--copies=1] [--shard_sizes=45000,10000,5000]

Each Example: "image", a float_list of 784 pixels scaled to [0, 1] (as
train --dataset=fashion_mnist reads them), and "label", an int64_list of 1.
Writes OUT_DIR/train-0000i-of-0000n.tfrecord[.gz] and OUT_DIR/test-....
--copies repeats the training set (larger files, for memory tests);
--shard_sizes cuts the training set into shards of these sizes instead.
"""
import argparse
import gzip
import os
import struct
import subprocess
import sys
import tempfile

import crcmod.predefined

crc32c = crcmod.predefined.mkCrcFun("crc-32c")
IDX = "/usr/share/datasets/fashion-mnist"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def masked(data):
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame(record):
    length = struct.pack("<Q", len(record))
    return (length + struct.pack("<I", masked(length)) + record +
            struct.pack("<I", masked(record)))


def read_idx(name):
    with gzip.open(os.path.join(IDX, name)) as f:
        data = f.read()
    dims = data[3]
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return data[4 + 4 * dims:], shape


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--train_shards", type=int, default=8)
    p.add_argument("--test_shards", type=int, default=1)
    p.add_argument("--gzip", action="store_true")
    p.add_argument("--copies", type=int, default=1)
    p.add_argument("--shard_sizes", default="")
    a = p.parse_args()
    build = tempfile.mkdtemp()
    proto_dir = os.path.join(ROOT, "data", "testdata")
    subprocess.run(["protoc", f"--proto_path={proto_dir}", f"--python_out={build}",
                    os.path.join(proto_dir, "tf_example.proto")], check=True)
    sys.path.insert(0, build)
    import tf_example_pb2 as pb

    os.makedirs(a.out, exist_ok=True)
    for split, prefix, shards in (("train", "train", a.train_shards),
                                  ("test", "t10k", a.test_shards)):
        pixels, (n, rows, cols) = read_idx(f"{prefix}-images-idx3-ubyte.gz")
        labels, _ = read_idx(f"{prefix}-labels-idx1-ubyte.gz")
        size = rows * cols
        copies = a.copies if split == "train" else 1
        total = n * copies
        if split == "train" and a.shard_sizes:
            sizes = [int(s) for s in a.shard_sizes.split(",")]
        else:
            sizes = [total // shards + (1 if s < total % shards else 0) for s in range(shards)]
        assert sum(sizes) == total, f"shard sizes add to {sum(sizes)}, not {total}"
        i = 0
        for s, count in enumerate(sizes):
            name = f"{split}-{s:05d}-of-{len(sizes):05d}.tfrecord" + (".gz" if a.gzip else "")
            with (gzip.open if a.gzip else open)(os.path.join(a.out, name), "wb") as f:
                for _ in range(count):
                    k = i % n
                    e = pb.Example()
                    image = e.features.feature["image"].float_list.value
                    image.extend(b / 255.0 for b in pixels[k * size:(k + 1) * size])
                    e.features.feature["label"].int64_list.value.append(labels[k])
                    f.write(frame(e.SerializeToString()))
                    i += 1
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
