#!/usr/bin/env python3
"""Planted norm-kernel bugs against the norm golden suite: the NumPy norm kernel (golden/examples/numpy_norm.py),
correct and with each of five bugs, each written as a candidate folder and verified; prints which cases and
outputs catch each bug. Exit 0 when the correct kernel passes every case and every bug fails at least one.

    python3 tests/golden/norm_bugs.py --golden G --out DIR [--flashsim build/default/flashsim] [--generate]

--generate writes the norm suite into G first (replacing it). Each variant's candidate folder is removed once
verified unless --keep.
"""
import argparse
import collections
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "golden", "examples"))
import flashsim_golden  # noqa: E402
import numpy_norm  # noqa: E402

BUGS = {
    None: "correct (NumPy's pairwise sums: another summation order)",
    "eps_outside_sqrt": "rstd = 1 / (sqrt(ms) + eps)",
    "variance_n_minus_1": "LayerNorm's variance divided by N - 1",
    "dweight_bf16_sum": "dweight (and dbias) summed over rows in bf16",
    "residual_grad_dropped": "dresidual not written back (zeros)",
    "mean_not_subtracted_in_backward": "LayerNorm's dx without the mean(g) term",
}


def run_variant(golden, out, bug, exe, keep):
    """Writes the candidate folder of one variant, verifies it; returns {case: ([failing outputs], compute dtype)}
    of checked cases."""
    cases = flashsim_golden.write_and_verify(golden, out, lambda t, case: numpy_norm.norm(t, case, bug=bug), exe, keep)
    return {c["name"]: ([o["output"] for o in c["outputs"] if not o["ok"]], c["compute_dtype"]) for c in cases}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--golden", required=True, help="norm suite folder")
    ap.add_argument("--out", required=True, help="folder for the candidate folders (one per variant)")
    ap.add_argument("--flashsim", default=os.path.join(HERE, "..", "..", "build", "default", "flashsim"))
    ap.add_argument("--generate", action="store_true", help="generate the norm suite into --golden first")
    ap.add_argument("--keep", action="store_true", help="keep the candidate folders")
    args = ap.parse_args()
    if args.generate:
        subprocess.run([args.flashsim, "golden", "generate", "--suite", "norm", "--out", args.golden, "--force"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ok = True
    for bug, what in BUGS.items():
        fails = run_variant(args.golden, os.path.join(args.out, bug or "correct"), bug, args.flashsim,
                            args.keep)
        bad = {c: o for c, (o, _) in fails.items() if o}
        outputs = collections.Counter(o for outs in bad.values() for o in outs)
        groups = collections.Counter(c.split("-")[0] for c in bad)
        dtypes = collections.Counter(d for _, d in fails.values())
        bad_dtypes = collections.Counter(fails[c][1] for c in bad)
        print(f"{bug or 'correct'}: {what}")
        print(f"  {len(bad)} of {len(fails)} cases fail; outputs: "
              f"{', '.join(f'{o} {n}' for o, n in outputs.most_common()) or '-'}; "
              f"by group: {', '.join(f'{g} {n}' for g, n in sorted(groups.items())) or '-'}; "
              f"by dtype: {', '.join(f'{d} {bad_dtypes[d]}/{n}' for d, n in sorted(dtypes.items()))}")
        ok &= (not bad) if bug is None else bool(bad)
    print("OK: the correct kernel passes, every planted bug is caught" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
