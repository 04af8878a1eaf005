#!/usr/bin/env python3
"""Run-to-run spread of ncu's DRAM counters: for every problem profiled more than once with the two DRAM
counters alone (files ncu_dram_<problem>.csv under the given folders, searched recursively), per kernel and
counter the lowest and highest figure and their difference as a share of the kernel's DRAM bytes (read + write,
the smaller of its runs), largest first; then the largest share among figures under a fifth of their kernel's
bytes and among write figures.

usage: ncu_dram_spread.py FOLDER...
"""
import collections
import os
import sys

from ncu_csv import read_metrics

COUNTERS = ("dram__bytes_read.sum", "dram__bytes_write.sum")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    runs = collections.defaultdict(list)
    for folder in sys.argv[1:]:
        for root, _, files in os.walk(folder):
            for f in files:
                if f.startswith("ncu_dram_") and f.endswith(".csv"):
                    runs[f[len("ncu_dram_"):-len(".csv")]].append(read_metrics(os.path.join(root, f)))
    rows = []
    for problem, reports in sorted(runs.items()):
        if len(reports) < 2:
            continue
        for kernel, name in sorted(reports[0][1].items()):
            totals = [sum(m[kernel][c] for c in COUNTERS) for m, _ in reports]
            for c in COUNTERS:
                values = [m[kernel][c] for m, _ in reports]
                share = (max(values) - min(values)) / min(totals)
                small = max(values) < min(totals) / 5
                rows.append((share, problem, name.split("<")[0].replace("void ", ""), c, len(values),
                             min(values), max(values), small))
    rows.sort(reverse=True)
    print(f"{len(runs)} problems, {sum(len(r) for r in runs.values())} reports")
    print(f"{'spread':>7}  {'problem':<24} {'kernel':<45} {'counter':<22} runs  min .. max MB")
    for share, problem, kernel, c, n, lo, hi, _ in rows:
        print(f"{share * 100:6.2f}%  {problem:<24} {kernel:<45} {c:<22} {n:4d}  {lo / 1e6:.3f} .. {hi / 1e6:.3f}")
    small = [r[0] for r in rows if r[7]]
    writes = [r[0] for r in rows if r[3] == COUNTERS[1]]
    print(f"largest spread, figures under a fifth of their kernel's DRAM bytes ({len(small)}): "
          f"{max(small) * 100:.2f}%")
    print(f"largest spread, write figures ({len(writes)}): {max(writes) * 100:.2f}%")
    print(f"largest spread, all figures ({len(rows)}): {rows[0][0] * 100:.2f}%")


if __name__ == "__main__":
    main()
