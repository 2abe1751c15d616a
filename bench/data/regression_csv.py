"""A regression data set as CSV files: 20 float features x ~ N(0, 1) and 10 float
targets y = x W + noise of variance 0.01 (W seeded), with a header
x0..x19,y0..y9: what train --train_data=csv:... --targets=y0,...,y9 learns.

    python3 bench/data/regression_csv.py OUT_DIR [--train=20000] [--test=2000]
        [--shards=4] [--seed=1]
"""
import argparse
import os

import numpy as np


def write(path, x, y):
    header = ",".join([f"x{i}" for i in range(x.shape[1])] + [f"y{i}" for i in range(y.shape[1])])
    np.savetxt(path, np.hstack([x, y]), delimiter=",", header=header, comments="", fmt="%.6f")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--train", type=int, default=20000)
    p.add_argument("--test", type=int, default=2000)
    p.add_argument("--shards", type=int, default=4)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    rng = np.random.default_rng(a.seed)
    w = rng.normal(size=(20, 10)) / np.sqrt(20)
    os.makedirs(a.out, exist_ok=True)
    for name, n, shards in (("train", a.train, a.shards), ("test", a.test, 1)):
        x = rng.normal(size=(n, 20))
        y = x @ w + rng.normal(scale=0.1, size=(n, 10))
        for s, rows in enumerate(np.array_split(np.arange(n), shards)):
            write(os.path.join(a.out, f"{name}-{s:05d}-of-{shards:05d}.csv"), x[rows], y[rows])
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
