#!/usr/bin/env python3
"""Prints one line per launch-probe kernel over the runs given: its gpu__time_duration (each run), its DRAM
bytes, and its time beyond those bytes at the copy bandwidth (the lowest time of the runs); then the median of
that overhead over the copy kernels.

usage: launch_probe_table.py LAUNCHES.err RUN.csv... [--bandwidth BYTES_PER_S (default 2.97e12)]
"""
import statistics
import sys

from ncu_csv import read_metrics


def main():
    args = sys.argv[1:]
    bandwidth = 2.97e12  # the H100 profile's achieved_dram_bytes_per_s (copy bandwidth)
    if "--bandwidth" in args:
        i = args.index("--bandwidth")
        bandwidth = float(args[i + 1])
        del args[i:i + 2]
    if len(args) < 2:
        sys.exit(__doc__)
    runs = [read_metrics(p)[0] for p in args[1:]]
    overheads = []
    for line in open(args[0]):
        if not line.startswith("launch"):
            continue
        f = line.split()
        launch, what = int(f[1]), " ".join(f[2:])
        times = [r[launch]["gpu__time_duration.sum"] / 1e3 for r in runs]
        dram = runs[0][launch]["dram__bytes_read.sum"] + runs[0][launch]["dram__bytes_write.sum"]
        busy = dram / bandwidth * 1e6
        over = min(times) - busy
        if f[2] == "copy":
            overheads.append(over)
        print(f"{launch:2d} {what:<62} time {' '.join(f'{t:7.2f}' for t in times)} us  DRAM {dram / 1e6:7.1f} MB"
              f" = {busy:6.2f} us  beyond it {over:5.2f} us")
    print(f"copy kernels: time beyond DRAM bytes at {bandwidth / 1e12:.2f} TB/s, median {statistics.median(overheads):.2f}"
          f" us (range {min(overheads):.2f} .. {max(overheads):.2f})")


if __name__ == "__main__":
    main()
