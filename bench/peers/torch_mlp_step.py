"""One training step of the MLP 784-256-128-10 (ReLU, softmax cross-entropy, Adam) at
batch 128 in PyTorch 1.13 on one thread: the peer for bench/kernel_bench's
"MLP training step" row. Prints the median over blocks of the per-step time.

  /usr/bin/python3 bench/peers/torch_mlp_step.py [--runs=5]
"""
import statistics
import sys
import time

import torch


def main():
    runs = 5
    for arg in sys.argv[1:]:
        if arg.startswith("--runs="):
            runs = int(arg.split("=", 1)[1])
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 10))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.rand(128, 784)
    y = torch.arange(128) % 10

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()

    for _ in range(20):
        step()
    iterations = 200
    blocks = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(iterations):
            step()
        blocks.append((time.perf_counter() - start) / iterations * 1e6)
    print(f"pytorch {torch.__version__} MLP training step (784-256-128-10, batch 128, Adam, "
          f"1 thread, {torch.backends.mkldnn.is_available() and 'oneDNN available' or 'no oneDNN'}): "
          f"{statistics.median(blocks):.1f} us (min {min(blocks):.1f}, max {max(blocks):.1f})")


if __name__ == "__main__":
    main()
