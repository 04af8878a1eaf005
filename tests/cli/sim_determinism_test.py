#!/usr/bin/env python3
"""`flashsim sim predict --json` and `flashsim sim sweep --csv` print byte-identical output across runs and
thread counts (OMP_NUM_THREADS 1 and 2)."""
import os
import subprocess
import sys

RUNS = [
    ["sim", "predict", "--json", "--pass", "both", "--seqlen", "1000", "--heads", "4", "--head-dim", "64",
     "--causal"],
    ["sim", "predict", "--json", "--executed", "--pass", "fwd", "--seqlen", "300", "--heads", "2",
     "--heads-kv", "1", "--head-dim", "64", "--window", "64,0", "--hw", "A100-SXM4-80GB"],
    ["sim", "predict", "--json", "--algorithm", "fa1", "--seqlen", "512", "--varlen", "100,512,37"],
    ["sim", "sweep", "--csv", "--seqlen", "2048", "--head-dim", "128", "--causal"],
    ["sim", "sweep", "--csv", "--pass", "bwd", "--seqlen", "777", "--heads", "8", "--heads-kv", "2"],
]


def run(flashsim, args, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    p = subprocess.run([flashsim] + args, capture_output=True, env=env, timeout=300)
    if p.returncode != 0:
        sys.exit(f"flashsim {' '.join(args)}: exit {p.returncode}: {p.stderr.decode(errors='replace')}")
    return p.stdout


def main():
    flashsim = sys.argv[1]
    bad = 0
    for args in RUNS:
        outs = [run(flashsim, args, t) for t in (1, 2, 2)]
        same = all(o == outs[0] for o in outs) and len(outs[0]) > 0
        print(f"{'ok  ' if same else 'FAIL'} flashsim {' '.join(args)} ({len(outs[0])} bytes)")
        bad += not same
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
