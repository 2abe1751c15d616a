"""The same job as `tools/train --model=mlp` in PyTorch 1.13 DistributedDataParallel
over gloo: MLP 784-256-128-10, Adam (lr 1e-3, eps 1e-7), global batch 256 split
over the workers, Fashion-MNIST from Debian's package, --threads per worker (1).
Rank 0 prints train samples/s (over the whole fit) and the test accuracy as JSON.
With WORLD_SIZE=1 it trains in one plain process, without DDP.

  RANK=r WORLD_SIZE=n MASTER_ADDR=127.0.0.1 MASTER_PORT=p \\
      /usr/bin/python3 torch_ddp_train.py [--epochs=5] [--global_batch_size=256] [--threads=1]
"""
import gzip
import json
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist

DATA = "/usr/share/datasets/fashion-mnist"


def load(prefix):
    with gzip.open(f"{DATA}/{prefix}-images-idx3-ubyte.gz") as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784)
    with gzip.open(f"{DATA}/{prefix}-labels-idx1-ubyte.gz") as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    return torch.from_numpy(images.astype(np.float32) / 255.0), torch.from_numpy(labels.astype(np.int64))


def main():
    args = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--"))
    epochs = int(args.get("epochs", 5))
    global_batch = int(args.get("global_batch_size", 256))
    threads = int(args.get("threads", 1))
    torch.set_num_threads(threads)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1:
        dist.init_process_group("gloo")
    rank = dist.get_rank() if world > 1 else 0
    torch.manual_seed(42)
    x, y = load("train")
    tx, ty = load("t10k")
    model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 10))
    ddp = torch.nn.parallel.DistributedDataParallel(model) if world > 1 else model
    optimizer = torch.optim.Adam(ddp.parameters(), lr=1e-3, eps=1e-7)
    loss_fn = torch.nn.CrossEntropyLoss()
    per_worker = global_batch // world
    steps = len(x) // global_batch
    start = time.perf_counter()
    for epoch in range(epochs):
        order = torch.randperm(len(x), generator=torch.Generator().manual_seed(epoch))
        mine = order[rank::world]
        for step in range(steps):
            index = mine[step * per_worker:(step + 1) * per_worker]
            optimizer.zero_grad(set_to_none=True)
            loss_fn(ddp(x[index]), y[index]).backward()
            optimizer.step()
    train_s = time.perf_counter() - start
    with torch.no_grad():
        accuracy = (model(tx).argmax(1) == ty).float().mean().item()
    if rank == 0:
        kind = "DDP gloo" if world > 1 else "one process"
        print(json.dumps({"framework": f"pytorch {torch.__version__} {kind}",
                          "num_workers": world, "threads": threads, "epochs": epochs,
                          "global_batch_size": global_batch,
                          "train_samples_per_second": steps * epochs * global_batch / train_s,
                          "test_accuracy": accuracy}), flush=True)
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
