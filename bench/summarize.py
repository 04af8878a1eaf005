#!/usr/bin/env python3
"""Turns reference_bench's JSON output (--benchmark_out=FILE --benchmark_out_format=json) into Markdown tables."""
import json
import sys


def main(path):
    data = json.load(open(path))
    ctx = data["context"]
    print(f"Machine: {ctx['num_cpus']} CPUs at {ctx['mhz_per_cpu']} MHz; run {ctx['date']}\n")
    print("| benchmark | algorithm | N | d | ms | GFLOP/s | BLAS GFLOP/s | gemm_ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for b in data["benchmarks"]:
        if b["name"].startswith("BM_TiledMemory"):
            continue
        parts = dict(p.split(":") for p in b["name"].split("/")[1:] if ":" in p)
        kind = b["name"].split("/")[0].replace("BM_", "").lower()
        print(f"| {kind} | {b['label']} | {parts['N']} | {parts['d']} | {b['real_time']:.0f} | {b['GFLOPs']:.1f} "
              f"| {b['blas_GFLOPs']:.1f} | {b['gemm_ratio']:.2f} |")
    print("\n| memory benchmark | N | peak MB | outputs MB | workspace MB |")
    print("|---|---|---|---|---|")
    for b in data["benchmarks"]:
        if b["name"].startswith("BM_TiledMemory"):
            n = b["name"].split("N:")[1].split("/")[0]
            print(f"| {b['label']} | {n} | {b['peak_MB']:.0f} | {b['outputs_MB']:.0f} | {b['workspace_MB']:.0f} |")


if __name__ == "__main__":
    main(sys.argv[1])
