#!/usr/bin/env python3
"""The model's ranking next to the measured one, for one head dim: every fa2-v1 forward config on one problem,
predicted (`flashsim sim tune`) and measured (`flashsim-gpu autotune`), each relative to its own fastest.

    python3 bench/tune_chart.py [--flashsim build/default/flashsim] [--csv AUTOTUNE.csv] [--head-dim 128]
        [--seqlen 4096] [--dtype bf16] [--features plain] [--out PNG]
"""
import argparse
import csv
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results", "fa2_tune_h100_2026-11-26")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flashsim", default=os.path.join(HERE, "..", "build", "default", "flashsim"))
    ap.add_argument("--csv", default=os.path.join(RESULTS, "final_table", "grid", "autotune.csv"))
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--seqlen", type=int, default=4096)
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--features", default="plain", choices=["plain", "causal"])
    ap.add_argument("--out", default=os.path.join(RESULTS, "tune_d128_bf16_n4096.png"))
    a = ap.parse_args()
    causal = "1" if a.features == "causal" else "0"
    measured = {}
    with open(a.csv) as f:
        for r in csv.DictReader(f):
            if (r["pass"], r["head_dim"], r["dtype"], r["seqlen_q"], r["causal"], r["bias"]) != (
                    "fwd", str(a.head_dim), a.dtype, str(a.seqlen), causal, "0") or r["skipped"]:
                continue
            name = "Br%s Bc%s w%s st%s" % (r["block_q"], r["block_k"], r["warps"], r["stages"])
            measured[name] = float(r["ms"]) * 1e-3
    if not measured:
        sys.exit("no measured rows for that problem in " + a.csv)
    out = subprocess.run([a.flashsim, "sim", "tune", "--kernel", "fa2-fwd", "--head-dims", str(a.head_dim),
                          "--dtypes", a.dtype, "--seqlens", str(a.seqlen), "--features",
                          "causal", "--top", "0", "--json"], check=True, capture_output=True, text=True)
    entry = next(e for e in json.loads(out.stdout)["entries"] if e["features"] == a.features)
    predicted = {r["config"]: r["time_s"] for r in entry["ranked"]}
    names = sorted((n for n in measured if n in predicted), key=lambda n: measured[n])
    mbest, pbest = min(measured[n] for n in names), min(predicted[n] for n in names)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    y = list(range(len(names)))
    fig, ax = plt.subplots(figsize=(7.5, 0.32 * len(names) + 1.4))
    ax.barh([i - 0.2 for i in y], [measured[n] / mbest for n in names], height=0.4, label="measured (H100)")
    ax.barh([i + 0.2 for i in y], [predicted[n] / pbest for n in names], height=0.4, label="predicted (sim tune)")
    ax.set_yticks(y)
    ax.set_yticklabels(names)
    ax.invert_yaxis()
    ax.set_xlim(0.9, max(max(measured[n] / mbest for n in names), max(predicted[n] / pbest for n in names)) + 0.05)
    ax.set_xlabel("time relative to the fastest (each side its own)")
    ax.set_title("fa2-v1 forward, %s: d%d %s %s n%d" % (entry["problem"], a.head_dim, a.dtype, a.features, a.seqlen),
                 fontsize=9)
    ax.legend(loc="lower right", fontsize=8)
    fig.savefig(a.out, dpi=110, bbox_inches="tight")
    print("wrote", a.out)


if __name__ == "__main__":
    main()
