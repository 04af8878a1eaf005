#!/usr/bin/env python3
"""A planted kernel bug against a golden suite: the backward keeps its dV accumulator in bf16 across the query
blocks it sums over (dV_j = sum_i P_ij^T dO_i, rounded to bf16 after every 64-row block), an error that grows with
the sequence length. Everything else is the NumPy example kernel (golden/examples/numpy_attention.py), correct.

    python3 bench/planted_bugs/dv_bf16_accumulator.py --golden G --out CAND [--flashsim build/default/flashsim]

Writes the candidate folder, runs `flashsim golden verify --outputs dv` and prints which cases fail.
"""
import argparse
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "golden", "examples"))
import flashsim_golden  # noqa: E402
import numpy_attention  # noqa: E402

BLOCK = 64  # FlashAttention-2's backward query block (Br = 64 for d <= 128)


def bf16(x):
    """Round float32 to bfloat16 (nearest even), kept as float32."""
    b = np.ascontiguousarray(x, np.float32).view(np.uint32)
    b = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000
    return b.view(np.float32)


def dv_bf16_accumulator(p, do):
    acc = np.zeros((p.shape[1], do.shape[1]), np.float32)
    for i0 in range(0, p.shape[0], BLOCK):  # acc = bf16(acc + P_blk^T dO_blk)
        acc = bf16(acc + p[i0:i0 + BLOCK].T @ do[i0:i0 + BLOCK])
    return acc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--golden", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--flashsim", default=os.path.join(HERE, "..", "..", "build", "default", "flashsim"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    m = flashsim_golden.manifest(args.golden)
    cases = [e for e in m["cases"]]
    for n, e in enumerate(cases):
        t, case = flashsim_golden.load_case(os.path.join(args.golden, e["file"]))
        out = numpy_attention.attention(t, case, dv_product=dv_bf16_accumulator)
        flashsim_golden.save_candidate(os.path.join(args.out, e["file"]), out, case["dtype"])
        print(f"\r{n + 1}/{len(cases)} {e['name']:<40}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    r = subprocess.run([args.flashsim, "golden", "verify", "--golden", args.golden, "--candidate", args.out,
                        "--outputs", "dv", "--json"], capture_output=True, text=True)
    if r.returncode == 2:
        sys.exit(r.stderr)
    import json
    rep = json.loads(r.stdout)
    failed = [c["name"] for c in rep["cases"] if not c["ok"]]
    print(f"dV in bf16 across query blocks: {len(failed)} of {len(rep['cases'])} checked cases fail: {failed}")


if __name__ == "__main__":
    main()
