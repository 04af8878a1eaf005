#!/usr/bin/env python3
"""Joins flashsim-gpu bench --csv and sdpa_bench.py's CSV: per problem, each of our versions beside SDPA's flash and
cuDNN backends, TFLOP/s forward and backward, and our ratio to SDPA flash."""
import csv
import sys


def read(path):
    with open(path) as f:
        return [r for r in csv.DictReader(f) if not r["skipped"]]


ours, sdpa = read(sys.argv[1]), read(sys.argv[2])
ref = {(r["kernel"], r["problem"]): r for r in sdpa}
print(f"{'problem':<34} {'kernel':<14} {'fwd TF/s':>9} {'flash':>7} {'cudnn':>7} {'x flash':>8} "
      f"{'bwd TF/s':>9} {'flash':>7} {'cudnn':>7} {'x flash':>8}")
for r in ours:
    fl, cu = ref.get(("sdpa-flash", r["problem"])), ref.get(("sdpa-cudnn", r["problem"]))
    def cell(x, key):
        return f"{float(x[key]):7.1f}" if x else "      -"
    def ratio(key):
        return f"{float(r[key]) / float(fl[key]):8.2f}" if fl and float(fl[key]) > 0 and float(r[key]) > 0 else "       -"
    print(f"{r['problem']:<34} {r['kernel']:<14} {float(r['fwd_tflops']):9.1f} {cell(fl, 'fwd_tflops')} "
          f"{cell(cu, 'fwd_tflops')} {ratio('fwd_tflops')} {float(r['bwd_tflops']):9.1f} {cell(fl, 'bwd_tflops')} "
          f"{cell(cu, 'bwd_tflops')} {ratio('bwd_tflops')}")
