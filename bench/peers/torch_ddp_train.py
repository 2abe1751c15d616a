"""The same job as `tools/train --model=M` in PyTorch 1.13 DistributedDataParallel
over gloo, Adam (eps 1e-7), global batch split over the workers, --threads per
worker (1). Rank 0 prints train samples/s (over the whole fit) and the test
accuracy (and AUC for wide_deep) as JSON. With WORLD_SIZE=1 it trains in one plain
process, without DDP.

  --model=mlp        784-256-128-10 on Fashion-MNIST from Debian's package, lr 1e-3
  --model=resnet     keras/applications.h's SmallResNet (3x3 stem of 16, three stages
                     of two residual blocks of 16/32/64 filters, batch norm with
                     PyTorch momentum 0.1 = Keras 0.9, eps 1e-3), Fashion-MNIST, each
                     training example flipped left-right with probability 1/2, lr 2e-3
                     with a cosine decay to 0 over the run (train's defaults)
  --model=wide_deep  WideAndDeep (8-wide embeddings of 300 ids, Dense 64-32-1, a
                     linear wide part, sigmoid) on a click log of the same shape as
                     --dataset=synthetic_clicks (generated here: the same sizes, not
                     the same draws), lr 3e-3
  --model=lstm, transformer  keras/applications.h's SequenceClassifier: an Embedding of
                     32 per token, then LSTM(64) (its last state), or positions added and
                     two post-norm encoder blocks (2 heads, feed-forward 64, layer norm eps
                     1e-3, no dropout) averaged over the steps; Linear(4). On sequences of
                     the same shape as --dataset=synthetic_sequences (generated here by the
                     same rule: 20 tokens, 4 markers, 10% label noise; not the same
                     draws), lr 1e-3 (lstm), 3e-3 (transformer)
  --steps_per_epoch=K  stop each epoch after K steps (0: a whole pass)

  RANK=r WORLD_SIZE=n MASTER_ADDR=127.0.0.1 MASTER_PORT=p \\
      /usr/bin/python3 torch_ddp_train.py [--model=mlp] [--epochs=5] [--global_batch_size=256] [--threads=1]
"""
import gzip
import json
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist

DATA = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")


def load(prefix):
    with gzip.open(f"{DATA}/{prefix}-images-idx3-ubyte.gz") as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784)
    with gzip.open(f"{DATA}/{prefix}-labels-idx1-ubyte.gz") as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    return torch.from_numpy(images.astype(np.float32) / 255.0), torch.from_numpy(labels.astype(np.int64))


def conv_bn(cin, cout, k, stride):
    return torch.nn.Sequential(torch.nn.Conv2d(cin, cout, k, stride, padding=k // 2, bias=False),
                               torch.nn.BatchNorm2d(cout, eps=1e-3, momentum=0.1))


class Block(torch.nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.a = conv_bn(cin, cout, 3, stride)
        self.b = conv_bn(cout, cout, 3, 1)
        self.shortcut = conv_bn(cin, cout, 1, stride) if stride != 1 or cin != cout else torch.nn.Identity()

    def forward(self, x):
        return torch.relu(self.b(torch.relu(self.a(x))) + self.shortcut(x))


def small_resnet():
    layers = [conv_bn(1, 16, 3, 1), torch.nn.ReLU()]
    cin = 16
    for stage, filters in enumerate([16, 32, 64]):
        for block in range(2):
            layers.append(Block(cin, filters, 2 if stage > 0 and block == 0 else 1))
            cin = filters
    layers += [torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(64, 10)]
    return torch.nn.Sequential(*layers)


class WideAndDeep(torch.nn.Module):
    def __init__(self, num_ids):
        super().__init__()
        self.deep_embedding = torch.nn.Embedding(num_ids, 8)
        self.deep = torch.nn.Sequential(torch.nn.Linear(2 * 8 + 3, 64), torch.nn.ReLU(),
                                        torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
        self.wide_embedding = torch.nn.Embedding(num_ids, 1)
        self.wide = torch.nn.Linear(2 + 3, 1)

    def forward(self, x):
        ids, numbers = x[:, :2].long(), x[:, 2:]
        deep = self.deep(torch.cat([self.deep_embedding(ids).flatten(1), numbers], 1))
        wide = self.wide(torch.cat([self.wide_embedding(ids).flatten(1), numbers], 1))
        return (deep + wide).squeeze(1)


def click_log(count, users=200, items=100, seed=7):
    rng = np.random.default_rng(seed)
    u = (rng.random(count) ** 2 * users).astype(np.int64)
    v = (rng.random(count) ** 2 * items).astype(np.int64)
    numbers = rng.standard_normal((count, 3)).astype(np.float32)
    user, item = rng.standard_normal((users, 4)) / 2, rng.standard_normal((items, 4))
    logit = -1 + (user[u] * item[v]).sum(1) + numbers @ np.array([0.8, -0.5, 0.3])
    labels = (rng.random(count) < 1 / (1 + np.exp(-logit))).astype(np.float32)
    x = np.concatenate([u[:, None], users + v[:, None], numbers], 1).astype(np.float32)
    return torch.from_numpy(x), torch.from_numpy(labels)


def marker_sequences(count, seed, steps=20, vocabulary=50, noise=0.1):
    """synthetic_sequences' rule: class 2 [1 before 2] + [3 before 4]."""
    rng = np.random.default_rng(seed)
    x = rng.integers(5, vocabulary, size=(count, steps))
    places = np.argsort(rng.random((count, steps)), axis=1)[:, :4]
    x[np.arange(count)[:, None], places] = np.arange(1, 5)
    truth = 2 * (places[:, 0] < places[:, 1]) + (places[:, 2] < places[:, 3])
    noisy = rng.random(count) < noise
    y = np.where(noisy, (truth + rng.integers(1, 4, size=count)) % 4, truth)
    return torch.from_numpy(x.astype(np.int64)), torch.from_numpy(y.astype(np.int64))


class SequenceClassifier(torch.nn.Module):
    def __init__(self, kind, vocabulary=50, steps=20):
        super().__init__()
        self.kind = kind
        self.embed = torch.nn.Embedding(vocabulary, 32)
        if kind == "lstm":
            self.lstm = torch.nn.LSTM(32, 64, batch_first=True)
            self.out = torch.nn.Linear(64, 4)
        else:
            self.positions = torch.nn.Parameter(torch.randn(steps, 32) * 0.1)
            self.blocks = torch.nn.ModuleList(
                torch.nn.TransformerEncoderLayer(32, 2, dim_feedforward=64, dropout=0.0,
                                                 batch_first=True, layer_norm_eps=1e-3)
                for _ in range(2))
            self.out = torch.nn.Linear(32, 4)

    def forward(self, ids):
        h = self.embed(ids)
        if self.kind == "lstm":
            _, (last, _) = self.lstm(h)
            return self.out(last[0])
        h = h + self.positions
        for block in self.blocks:
            h = block(h)
        return self.out(h.mean(1))


def auc(scores, labels):
    order = np.argsort(scores, kind="stable")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    positives = labels.sum()
    return (ranks[labels == 1].sum() - positives * (positives + 1) / 2) / (positives * (len(labels) - positives))


def main():
    args = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--"))
    epochs = int(args.get("epochs", 5))
    name = args.get("model", "mlp")
    steps_per_epoch = int(args.get("steps_per_epoch", 0))
    global_batch = int(args.get("global_batch_size", 256))
    threads = int(args.get("threads", 1))
    torch.set_num_threads(threads)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1:
        dist.init_process_group("gloo")
    rank = dist.get_rank() if world > 1 else 0
    torch.manual_seed(42)
    lr = 1e-3
    if name in ("lstm", "transformer"):
        x, y = marker_sequences(20000, 11)
        tx, ty = marker_sequences(5000, 12)
        model, loss_fn = SequenceClassifier(name), torch.nn.CrossEntropyLoss()
        lr = 3e-3 if name == "transformer" else 1e-3
    elif name == "wide_deep":
        x, y = click_log(300000)
        tx, ty = click_log(75000, seed=8)
        model, loss_fn, lr = WideAndDeep(300), torch.nn.BCEWithLogitsLoss(), 3e-3
    else:
        x, y = load("train")
        tx, ty = load("t10k")
        if name == "resnet":
            x, tx = x.reshape(-1, 1, 28, 28), tx.reshape(-1, 1, 28, 28)
            model = small_resnet()
            lr = 2e-3
        else:
            model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(),
                                        torch.nn.Linear(256, 128), torch.nn.ReLU(),
                                        torch.nn.Linear(128, 10))
        loss_fn = torch.nn.CrossEntropyLoss()
    ddp = torch.nn.parallel.DistributedDataParallel(model) if world > 1 else model
    optimizer = torch.optim.Adam(ddp.parameters(), lr=lr, eps=1e-7)
    per_worker = global_batch // world
    steps = len(x) // global_batch
    if steps_per_epoch > 0:
        steps = min(steps, steps_per_epoch)
    schedule = None
    flips = torch.Generator().manual_seed(1000 + rank)  # Each worker draws its own, as Ringwork's.
    if name == "resnet":
        schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=max(1, steps * epochs))
    start = time.perf_counter()
    for epoch in range(epochs):
        order = torch.randperm(len(x), generator=torch.Generator().manual_seed(epoch))
        mine = order[rank::world]
        for step in range(steps):
            index = mine[step * per_worker:(step + 1) * per_worker]
            optimizer.zero_grad(set_to_none=True)
            inputs = x[index]
            if name == "resnet":  # RandomFlip("horizontal").
                flip = torch.rand(len(index), generator=flips) < 0.5
                inputs = torch.where(flip[:, None, None, None], inputs.flip(3), inputs)
            loss_fn(ddp(inputs), y[index]).backward()
            optimizer.step()
            if schedule is not None:
                schedule.step()
    train_s = time.perf_counter() - start
    model.eval()
    with torch.no_grad():
        outputs = torch.cat([model(tx[i:i + 1000]) for i in range(0, len(tx), 1000)])
    extra = {}
    if name == "wide_deep":
        accuracy = ((outputs > 0).float() == ty).float().mean().item()
        extra["test_auc"] = float(auc(outputs.numpy(), ty.numpy()))
    else:
        accuracy = (outputs.argmax(1) == ty).float().mean().item()
    if rank == 0:
        kind = "DDP gloo" if world > 1 else "one process"
        print(json.dumps({"framework": f"pytorch {torch.__version__} {kind}", "model": name,
                          "num_workers": world, "threads": threads, "epochs": epochs,
                          "global_batch_size": global_batch,
                          "train_samples_per_second": steps * epochs * global_batch / train_s,
                          "test_accuracy": accuracy, **extra}), flush=True)
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
