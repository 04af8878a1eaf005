#!/usr/bin/env python3
"""What calling flashsim.attention from Python costs over the C++ call: b1 h16 s4096 d128 fp32 NumPy inputs,
exact fa2 forward at the default tile, all cores (the issue's target: within 5%).

    python bench/python_overhead.py [--bench build/default/bench/reference_bench] [--rounds 3]

Alternates rounds of the C++ benchmark (BM_PythonBaseline, 3 calls, in its own process) and of 3 Python calls, so
both see the same machine load; prints each round, the median of the per-round ratios (adjacent runs share the
machine's speed of the moment), and the ratios of the fastest and of the median rounds. Needs the package
installed (pip install .) and the benchmark built (the default preset).
"""
import argparse
import json
import statistics
import subprocess
import time

import numpy as np

import flashsim


def cpp_seconds(bench: str) -> float:
    out = subprocess.run([bench, "--benchmark_filter=BM_PythonBaseline/widen:0", "--benchmark_format=json"],
                         capture_output=True, text=True, check=True).stdout
    run = json.loads(out)["benchmarks"][0]
    return run["real_time"] / 1e3  # ms per iteration -> s


def python_seconds(q, k, v, calls: int = 3) -> float:
    """Seconds per call, as BM_PythonBaseline's 3 iterations."""
    t0 = time.perf_counter()
    for _ in range(calls):
        flashsim.attention(q, k, v)
    return (time.perf_counter() - t0) / calls


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", default="build/default/bench/reference_bench")
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((1, 4096, 16, 128)).astype(np.float32) for _ in range(3))
    flashsim.attention(q[:, :256], k[:, :256], v[:, :256])  # warm-up: OpenMP threads, OpenBLAS
    cpp, py = [], []
    for r in range(args.rounds):
        cpp.append(cpp_seconds(args.bench))
        py.append(python_seconds(q, k, v))
        print(f"round {r + 1}: C++ {cpp[-1]:.3f} s/call, Python {py[-1]:.3f} s/call", flush=True)
    ratios = [p / c for c, p in zip(cpp, py)]
    r = statistics.median(ratios)
    print(f"per-round Python / C++: median {r:.4f} ({(r - 1) * 100:+.2f}%), range {min(ratios):.3f} .. {max(ratios):.3f}")
    for what, c, p in (("fastest", min(cpp), min(py)), ("median", statistics.median(cpp), statistics.median(py))):
        print(f"{what}: C++ {c:.3f} s, Python {p:.3f} s per call; Python / C++ = {p / c:.4f} "
              f"({(p / c - 1) * 100:+.2f}%)")


if __name__ == "__main__":
    main()
