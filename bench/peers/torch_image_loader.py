"""The peer of bench/input_bench --images: PyTorch 1.13's DataLoader over a folder of
class folders (torchvision's ImageFolder layout; torchvision is not in Debian, so
the dataset is written out here the way ImageFolder + transforms do it): PIL opens
and decodes each file, converts it to the first image's mode (L or RGB), resizes it
bilinearly when --size is given, makes a float tensor in [0, 1] (ToTensor) and
mirrors it left-right with probability 1/2 (RandomHorizontalFlip); the loader
shuffles, batches (--batch) and decodes on --workers processes (default: the
machine's cores, the usual choice). Prints one line per pass and the median of the
passes after the first, as input_bench does.

  /usr/bin/python3 bench/peers/torch_image_loader.py DIR [--batch=256] [--workers=0]
      [--passes=5] [--size=0] [--random_flip=1]
"""
import argparse
import os
import statistics
import time

import numpy as np
import torch
from PIL import Image

EXTENSIONS = (".png", ".jpg", ".jpeg")


class ImageFolder(torch.utils.data.Dataset):
    def __init__(self, root, size, flip):
        classes = sorted(d.name for d in os.scandir(root) if d.is_dir())
        self.samples = []
        for label, name in enumerate(classes):
            for dirpath, _, files in sorted(os.walk(os.path.join(root, name))):
                for f in sorted(files):
                    if f.lower().endswith(EXTENSIONS):
                        self.samples.append((os.path.join(dirpath, f), label))
        with Image.open(self.samples[0][0]) as first:
            self.mode = "L" if first.mode in ("L", "1", "I") else "RGB"
        self.size = size
        self.flip = flip

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        path, label = self.samples[i]
        with Image.open(path) as image:
            image = image.convert(self.mode)
            if self.size:
                image = image.resize((self.size, self.size), Image.BILINEAR)
            pixels = np.asarray(image, dtype=np.uint8)
        x = torch.from_numpy(pixels.copy()).float().div_(255)
        x = x.unsqueeze(0) if x.dim() == 2 else x.permute(2, 0, 1)
        if self.flip and torch.rand(1).item() < 0.5:
            x = torch.flip(x, dims=[2])
        return x, label


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--passes", type=int, default=5)
    p.add_argument("--size", type=int, default=0)
    p.add_argument("--random_flip", type=int, default=1)
    a = p.parse_args()
    workers = a.workers or os.cpu_count()
    torch.set_num_threads(1)
    data = ImageFolder(a.dir, a.size, a.random_flip)
    loader = torch.utils.data.DataLoader(data, batch_size=a.batch, shuffle=True,
                                         num_workers=workers, persistent_workers=True)
    print(f"# torch DataLoader: {a.dir} ({len(data)} files, mode {data.mode}), batch "
          f"{a.batch}, {workers} worker processes")
    print(f"{'pass':>6} {'elements':>10} {'seconds':>10} {'elements/s':>12}")
    rates = []
    for p_ in range(a.passes):
        start = time.perf_counter()
        n = 0
        for x, _ in loader:
            n += x.shape[0]
        s = time.perf_counter() - start
        print(f"{p_ + 1:>6} {n:>10} {s:>10.3f} {n / s:>12.0f}", flush=True)
        if p_ > 0:
            rates.append(n / s)
    print(f"# median elements/s (passes 2-{a.passes}): {statistics.median_high(rates):.0f}")


if __name__ == "__main__":
    main()
