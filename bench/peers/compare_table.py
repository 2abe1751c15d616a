"""Reads the CSV rows of bench/compare_allreduce.sh and prints one table: the time of
each configuration per size, and how many times slower each peer is than Ringwork's
default transport (a ratio > 1 means Ringwork is faster)."""
import csv
import sys


def human(n):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n // scale} {unit}"
    return f"{n} B"


def time_table(by_label, labels, ranks, title):
    print(f"# {title}, float32 sum, {ranks} ranks: time in us (busbw GB/s); median of "
          f"the runs; #wrong summed over every iteration and rank")
    print(f"{'size':>8} " + " ".join(f"{l:>24}" for l in labels) + "  #wrong")
    for size in sorted(by_label[labels[0]]):
        cells, wrong = [], 0
        for l in labels:
            r = by_label[l].get(size)
            if r is None:
                cells.append(f"{'-':>24}")
                continue
            cells.append(f"{float(r[6]):>12.1f} ({float(r[10]):>6.2f})    ")
            wrong += int(r[11])
        print(f"{human(size):>8} " + " ".join(cells) + f"  {wrong}")
    print()


def ratio_table(by_label, base, others):
    print(f"# ratio: peer time / {base} time (> 1: {base} is faster)")
    print(f"{'size':>8} " + " ".join(f"{l:>24}" for l in others))
    for size in sorted(by_label[base]):
        cells = []
        mine = float(by_label[base][size][6])
        for l in others:
            r = by_label[l].get(size)
            cells.append(f"{'-':>24}" if r is None else f"{float(r[6]) / mine:>24.2f}")
        print(f"{human(size):>8} " + " ".join(cells))
    print()


def main():
    rows = [r for r in csv.reader(open(sys.argv[1])) if r and r[0] != "label"]
    by_label, ranks_of = {}, {}
    for r in rows:
        by_label.setdefault(r[0], {})[int(r[2])] = r
        ranks_of[r[0]] = r[1]
    # Emulated multi-host rows (label "...-2x2-...") have more ranks: a table of their own.
    local = [l for l in by_label if "2x2" not in l]
    emulated = [l for l in by_label if "2x2" in l]
    base = local[0]
    time_table(by_label, local, ranks_of[base], "all-reduce")
    ratio_table(by_label, base, local[1:])
    # Across hosts every byte goes over gRPC: Ringwork's gRPC path against MPI over TCP.
    # Twice when there is a row with gRPC's bandwidth-delay probe on (--grpc_bdp_probe).
    for grpc in ("ringwork-grpc", "ringwork-grpc-probe"):
        if grpc in by_label and "mpi-tcp" in by_label:
            ratio_table(by_label, grpc, [l for l in ("mpi-tcp", "gloo") if l in by_label])
    if emulated:
        time_table(by_label, emulated, ranks_of[emulated[0]],
                   "all-reduce on 2 emulated hosts x 2 workers (shared memory within a host, "
                   "gRPC across)")
        if len(emulated) > 1:
            ratio_table(by_label, emulated[-1], emulated[:-1])


if __name__ == "__main__":
    main()
