#!/usr/bin/env python3
"""Planted attention-kernel bugs against a golden suite: the NumPy attention kernel
(golden/examples/numpy_attention.py), correct and with each of its planted bugs for one feature, each written as
a candidate folder and verified; prints which cases and outputs catch each bug. Exit 0 when the correct kernel
passes every case and every bug fails at least one.

    python3 tests/golden/attention_bugs.py --feature sinks --golden G --out DIR [--flashsim build/default/flashsim]
                                           [--generate]

--feature picks the suite (of the same name) and the bugs: sinks (the sink missing from the lse, missing from
o's denominator, dsinks with the wrong sign), dropout (P scaled by (1 - p) instead of 1 / (1 - p), the keep mask
missing from the backward's dP), fp8 (the descales applied twice, the first descale used for every (batch, kv
head) where the case gives one per head, the lse without P's 2^8 offset undone), mla (the rotary part dropped from
the scores: q.k over the latent columns alone). --generate writes the suite into G first (replacing it). Each
variant's candidate folder is removed once verified unless --keep.
"""
import argparse
import collections
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "golden", "examples"))
import flashsim_golden  # noqa: E402
import numpy_attention  # noqa: E402

FEATURES = {
    "sinks": ["sink_missing_from_lse", "sink_missing_from_output", "dsinks_sign"],
    "dropout": ["dropout_scaled_by_1_minus_p", "dropout_missing_in_backward"],
    "fp8": ["descale_applied_twice", "per_tensor_descale_for_per_head", "p_offset_not_undone"],
    "mla": ["mla_rope_dropped"],
}


def run_variant(golden, out, bug, exe, keep):
    """Writes the candidate folder of one variant, verifies it; returns {case: [failing outputs]}."""
    cases = flashsim_golden.write_and_verify(golden, out, lambda t, case: numpy_attention.attention(t, case, bug=bug),
                                             exe, keep)
    return {c["name"]: [o["output"] for o in c["outputs"] if not o["ok"]] for c in cases}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--feature", required=True, choices=sorted(FEATURES))
    ap.add_argument("--golden", required=True, help="the feature's suite folder")
    ap.add_argument("--out", required=True, help="folder for the candidate folders (one per variant)")
    ap.add_argument("--flashsim", default=os.path.join(HERE, "..", "..", "build", "default", "flashsim"))
    ap.add_argument("--generate", action="store_true", help="generate the feature's suite into --golden first")
    ap.add_argument("--keep", action="store_true", help="keep the candidate folders")
    args = ap.parse_args()
    if args.generate:
        subprocess.run([args.flashsim, "golden", "generate", "--suite", args.feature, "--out", args.golden,
                        "--force"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ok = True
    for bug in [None] + FEATURES[args.feature]:
        fails = run_variant(args.golden, os.path.join(args.out, bug or "correct"), bug, args.flashsim, args.keep)
        bad = {c: o for c, o in fails.items() if o}
        outputs = collections.Counter(o for outs in bad.values() for o in outs)
        what = numpy_attention.BUGS[bug] if bug else "correct (NumPy float32)"
        print(f"{bug or 'correct'}: {what}")
        print(f"  {len(bad)} of {len(fails)} cases fail; outputs: "
              f"{', '.join(f'{o} {n}' for o, n in outputs.most_common()) or '-'}")
        if bug is None and bad:
            for c, o in sorted(bad.items()):
                print(f"    {c}: {', '.join(o)}")
        ok &= (not bad) if bug is None else bool(bad)
    print("OK: the correct kernel passes, every planted bug is caught" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
