"""Reads the CSV rows of tools/compare_allreduce.sh and prints one table: the time of
each configuration per size, and how many times slower each peer is than Ringwork's
default transport (a ratio > 1 means Ringwork is faster)."""
import csv
import sys


def main():
    rows = [r for r in csv.reader(open(sys.argv[1])) if r and r[0] != "label"]
    by_label = {}
    for r in rows:
        by_label.setdefault(r[0], {})[int(r[2])] = r
    labels = list(by_label)
    base = labels[0]
    sizes = sorted(by_label[base])
    ranks = rows[0][1]

    def human(n):
        for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
            if n >= scale:
                return f"{n // scale} {unit}"
        return f"{n} B"

    print(f"# all-reduce, float32 sum, {ranks} ranks: time in us (busbw GB/s); median of "
          f"the runs; #wrong summed over every iteration and rank")
    header = f"{'size':>8} " + " ".join(f"{l:>24}" for l in labels) + "  #wrong"
    print(header)
    for size in sizes:
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
    print(f"# ratio: peer time / {base} time (> 1: {base} is faster)")
    print(f"{'size':>8} " + " ".join(f"{l:>24}" for l in labels[1:]))
    for size in sizes:
        cells = []
        mine = float(by_label[base][size][6])
        for l in labels[1:]:
            r = by_label[l].get(size)
            cells.append(f"{'-':>24}" if r is None else f"{float(r[6]) / mine:>24.2f}")
        print(f"{human(size):>8} " + " ".join(cells))


if __name__ == "__main__":
    main()
