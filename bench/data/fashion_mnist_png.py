"""Fashion-MNIST (Debian's dataset-fashion-mnist) as folders of PNG files, one
folder per class, as Keras' image_dataset_from_directory and torchvision's
ImageFolder read them. Written with Pillow, none of Ringwork's code.

    python3 bench/data/fashion_mnist_png.py OUT_DIR [--train_limit=N] [--test_limit=N]
        [--size=28] [--jpeg]

Writes OUT_DIR/train/<class>/<index>.png (28x28 grayscale) and OUT_DIR/test/...;
the class folders are named 0_t-shirt ... 9_ankle-boot so that their sorted order
is the label. --size resizes (bilinear) to SIZExSIZE RGB, for a heavier decode;
--jpeg writes JPEG (quality 95) instead of PNG.
"""
import argparse
import gzip
import os
import struct

from PIL import Image

IDX = "/usr/share/datasets/fashion-mnist"
CLASSES = ["t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker",
           "bag", "ankle-boot"]


def read_idx(name):
    with gzip.open(os.path.join(IDX, name)) as f:
        data = f.read()
    dims = data[3]
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return data[4 + 4 * dims:], shape


def write(out, images, labels, limit, size, jpeg):
    pixels, shape = images
    count = shape[0] if limit <= 0 else min(limit, shape[0])
    for c, name in enumerate(CLASSES):
        os.makedirs(os.path.join(out, f"{c}_{name}"), exist_ok=True)
    for i in range(count):
        image = Image.frombytes("L", (28, 28), pixels[i * 784:(i + 1) * 784])
        if size != 28:
            image = image.convert("RGB").resize((size, size), Image.BILINEAR)
        c = labels[i]
        path = os.path.join(out, f"{c}_{CLASSES[c]}", f"{i:05d}." + ("jpg" if jpeg else "png"))
        image.save(path, quality=95) if jpeg else image.save(path)
    return count


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--train_limit", type=int, default=0)
    p.add_argument("--test_limit", type=int, default=0)
    p.add_argument("--size", type=int, default=28)
    p.add_argument("--jpeg", action="store_true")
    a = p.parse_args()
    for split, prefix, limit in (("train", "train", a.train_limit), ("test", "t10k", a.test_limit)):
        images = read_idx(f"{prefix}-images-idx3-ubyte.gz")
        labels, _ = read_idx(f"{prefix}-labels-idx1-ubyte.gz")
        n = write(os.path.join(a.out, split), images, labels, limit, a.size, a.jpeg)
        print(f"{split}: {n} images in {os.path.join(a.out, split)}")


if __name__ == "__main__":
    main()
