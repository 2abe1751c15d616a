"""PyTorch's gloo all_reduce measured exactly as bench/allreduce_bench measures
Ringwork: per iteration restore the tensor, barrier, time one in-place float32 sum
all-reduce, check every element; median over blocks of the block averages. CSV on
rank 0. Run with Debian's /usr/bin/python3 (python3-torch 1.13).

  RANK=r WORLD_SIZE=n MASTER_ADDR=127.0.0.1 MASTER_PORT=p \\
      /usr/bin/python3 gloo_allreduce_bench.py LABEL MIN_BYTES MAX_BYTES FACTOR RUNS
"""
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist


def main():
    label, min_bytes, max_bytes, factor, runs = (sys.argv[1], int(sys.argv[2]),
                                                 int(sys.argv[3]), int(sys.argv[4]),
                                                 int(sys.argv[5]))
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, size = dist.get_rank(), dist.get_world_size()
    bytes_ = min_bytes
    while bytes_ <= max_bytes:
        count = max(1, bytes_ // 4)
        index = torch.arange(count, dtype=torch.int64)
        pristine = (((rank * 7 + index * 3) % 17) - 8).to(torch.float32)
        want = torch.zeros(count, dtype=torch.float32)
        for r in range(size):
            want += (((r * 7 + index * 3) % 17) - 8).to(torch.float32)
        iterations = min(2000, max(20, (256 << 20) // (count * 4)))
        data = torch.empty_like(pristine)
        blocks, wrong = [], 0
        for run in range(-1, runs):
            iters = 5 if run < 0 else iterations
            total = 0.0
            for _ in range(iters):
                data.copy_(pristine)
                dist.barrier()
                start = time.perf_counter()
                dist.all_reduce(data, op=dist.ReduceOp.SUM)
                total += time.perf_counter() - start
                wrong += int((data != want).sum())
            if run >= 0:
                blocks.append(total / iters * 1e6)
        stats = torch.tensor([statistics.median(blocks), float(wrong)], dtype=torch.float64)
        dist.all_reduce(stats)
        median = stats[0].item() / size
        # Any rank's fastest and slowest block (MIN of the negated maximum).
        spread = torch.tensor([min(blocks), -max(blocks)], dtype=torch.float64)
        dist.all_reduce(spread, op=dist.ReduceOp.MIN)
        if rank == 0:
            algbw = count * 4 / (median * 1e-6) / 1e9
            print(f"{label},{size},{count * 4},{count},gloo,{iterations},{median:.2f},"
                  f"{spread[0].item():.2f},{-spread[1].item():.2f},{algbw:.3f},"
                  f"{algbw * 2 * (size - 1) / size:.3f},{int(stats[1].item())}", flush=True)
        bytes_ *= factor
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
