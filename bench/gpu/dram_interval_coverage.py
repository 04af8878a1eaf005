#!/usr/bin/env python3
"""Coverage of `flashsim traffic compare`'s DRAM interval over every recorded H100 ncu report.

    python3 bench/gpu/dram_interval_coverage.py [FLASHSIM] > bench/results/l2_adverse_h100_2026-11-26/coverage.txt

For each report (SDPA's FA2 on the 16 recorded shapes and the calibration problem, with one-pass and with
replayed DRAM counters; flashsim's own fa2-v1 kernels), runs `traffic compare --json` and prints, per group and
over all: the share of measured DRAM figures inside [lower, upper] (within the counters' spread), and the median
interval width (upper - lower) / predicted. Figures outside their interval are listed. Exit 0 always.
"""
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
NCU = os.path.join(ROOT, "bench/results/ncu_h100_2026-11-22")
FLASHSIM = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build/default/flashsim")

# shape -> (batch, heads, heads_kv, seqlen, head_dim, causal): bench/gpu/ncu_shapes.sh's problems
SHAPES = {
    "causal_d128_n4096": (2, 16, 16, 4096, 128, True), "d64_n1024": (8, 16, 16, 1024, 64, False),
    "d256_n1024": (4, 8, 8, 1024, 256, False), "d128_n16384_causal": (1, 8, 8, 16384, 128, True),
    "gqa_d128_n2048": (2, 32, 8, 2048, 128, False), "d128_n1000": (4, 16, 16, 1000, 128, False),
    "d64_n3000_causal": (2, 16, 16, 3000, 64, True), "causal_d128_n8192": (1, 16, 16, 8192, 128, True),
    "gqa_causal_d64_n4096": (2, 16, 4, 4096, 64, True), "d96_n2048": (2, 16, 16, 2048, 96, False),
    "d128_n512": (16, 16, 16, 512, 128, False), "causal_d256_n2000": (2, 8, 8, 2000, 256, True),
    "causal_d64_n8192": (1, 16, 16, 8192, 64, True), "d128_n2048": (4, 16, 16, 2048, 128, False),
    "gqa_d64_n2048": (4, 32, 8, 2048, 64, False), "causal_d96_n4096": (2, 8, 8, 4096, 96, True),
    "calibration_d128_n4096": (2, 16, 16, 4096, 128, False),
    # flashsim's fa2-v1 (bench/gpu/traffic.sh)
    "d128_n4096": (2, 16, 16, 4096, 128, False), "d128_n4096_causal": (2, 16, 16, 4096, 128, True),
    "d64_n2048": (4, 16, 16, 2048, 64, False), "d96_n3000_causal": (2, 8, 8, 3000, 96, True),
    # taken on 2026-11-26, after the interval was written (bench/gpu/dram_interval_gpu.sh): SDPA's FA2 ...
    "d128_n8192": (1, 16, 16, 8192, 128, False), "causal_d64_n2048": (4, 16, 16, 2048, 64, True),
    "gqa_causal_d128_n4096": (2, 32, 8, 4096, 128, True), "d256_n4096": (1, 16, 16, 4096, 256, False),
    "d64_n16384": (1, 8, 8, 16384, 64, False), "causal_d96_n2048": (4, 16, 16, 2048, 96, True),
    # ... and flashsim's fa2-v1 and fa2-v1-heads-first (the planted traffic bug)
    "d128_n4096_b4h32": (4, 32, 32, 4096, 128, False), "d128_n4096_b4h32_causal": (4, 32, 32, 4096, 128, True),
    "heads_first_d128_n4096": (4, 32, 32, 4096, 128, False),
    "heads_first_d128_n4096_causal": (4, 32, 32, 4096, 128, True),
    "d64_n8192": (1, 16, 16, 8192, 64, False), "d128_n2048_causal": (4, 16, 16, 2048, 128, True),
    "gqa_d96_n4096": (2, 16, 4, 4096, 96, False), "d256_n2048": (2, 8, 8, 2048, 256, False),
    # SDPA's FA2 on 8 shapes taken after l2_adverse_reuse_bytes was fixed (ncu_shapes.sh's validation4)
    "causal_d128_n2048_b8": (8, 16, 16, 2048, 128, True), "causal_d256_n4096": (1, 16, 16, 4096, 256, True),
    "causal_d64_n16384": (1, 8, 8, 16384, 64, True), "gqa_causal_d96_n8192": (1, 32, 8, 8192, 96, True),
    "d128_n3000": (2, 16, 16, 3000, 128, False), "causal_d128_n6000": (1, 16, 16, 6000, 128, True),
    "gqa_d256_n2048": (2, 16, 4, 2048, 256, False), "d64_n4096_b8": (8, 16, 16, 4096, 64, False),
}
FIRST = ["causal_d128_n4096", "d64_n1024", "d256_n1024", "d128_n16384_causal", "gqa_d128_n2048", "d128_n1000",
         "d64_n3000_causal"]
VALIDATION = ["causal_d128_n8192", "gqa_causal_d64_n4096", "d96_n2048", "d128_n512", "causal_d256_n2000"]
VALIDATION2 = ["causal_d64_n8192", "d128_n2048", "gqa_d64_n2048", "causal_d96_n4096"]
VALIDATION3 = ["d128_n8192", "causal_d64_n2048", "gqa_causal_d128_n4096", "d256_n4096", "d64_n16384",
               "causal_d96_n2048"]
VALIDATION4 = ["causal_d128_n2048_b8", "causal_d256_n4096", "causal_d64_n16384", "gqa_causal_d96_n8192", "d128_n3000",
               "causal_d128_n6000", "gqa_d256_n2048", "d64_n4096_b8"]
NEW = os.path.join(ROOT, "bench/results/dram_interval_h100_2026-11-26")
ADVERSE = os.path.join(ROOT, "bench/results/l2_adverse_h100_2026-11-26")
HELD_OUT = "held out: SDPA FA2 (validation4, taken after l2_adverse_reuse_bytes was fixed)"
PLANTED = "fa2-v1-heads-first (planted: K/V re-read from DRAM per query block; must be flagged, not counted)"


def unpack(archive):
    """The CSVs of one of the GPU run's archives, in a temporary folder."""
    tmp = tempfile.mkdtemp()
    with tarfile.open(archive) as t:
        t.extractall(tmp)
    return tmp


def full_report(shape):
    if shape == "calibration_d128_n4096":
        return os.path.join(ROOT, "tests/data/ncu_fa2_h100_calibration.csv")
    sub = "validation/" if shape in VALIDATION else "validation2/" if shape in VALIDATION2 else ""
    return os.path.join(NCU, sub + "ncu_" + shape + ".csv")


def flags(shape):
    b, h, hkv, n, d, causal = SHAPES[shape]
    f = ["--batch", str(b), "--heads", str(h), "--heads-kv", str(hkv), "--seqlen", str(n), "--head-dim", str(d),
         "--dtype", "bf16"]
    return f + (["--causal"] if causal else [])


def reports():
    """(group, label, shape, report, dram report or None)"""
    shapes = FIRST + VALIDATION + VALIDATION2 + ["calibration_d128_n4096"]
    for s in shapes:
        yield "SDPA FA2, one-pass DRAM (single_pass/)", "single_pass", s, full_report(s), \
            os.path.join(NCU, "single_pass/ncu_dram_" + s + ".csv")
    for folder in ["single_pass_repeat/run1", "single_pass_repeat/run2", "dram_repeats/run1/first",
                   "dram_repeats/run1/validation", "dram_repeats/run1/validation2", "dram_repeats/run1/calibration",
                   "dram_repeats/run2/first", "dram_repeats/run2/validation", "dram_repeats/run2/calibration",
                   "dram_repeats/run3/first", "dram_repeats/run3/calibration"]:
        for s in shapes:
            dram = os.path.join(NCU, folder, "ncu_dram_" + s + ".csv")
            if os.path.exists(dram):
                yield "SDPA FA2, one-pass DRAM repeats", folder, s, full_report(s), dram
    for s in shapes:
        yield "SDPA FA2, replayed DRAM (the full reports)", "full", s, full_report(s), None
    for s in FIRST:
        yield "SDPA FA2, replayed DRAM (the full reports)", "repeat", s, os.path.join(NCU, "repeat/ncu_" + s + ".csv"), None
    yield ("SDPA FA2, replayed DRAM (the full reports)", "calibration_rerun", "calibration_d128_n4096",
           os.path.join(NCU, "calibration_rerun/ncu_calibration_d128_n4096.csv"), None)
    tmp = unpack(os.path.join(ROOT, "bench/results/gpu_h100_2026-11-23/fa2_backward/launch_table/final/traffic",
                              "ncu_fa2_v1_csvs.tar.gz"))
    for name in sorted(os.listdir(tmp)):
        shape = name[len("ncu_fa2_v1_fwd_"):-len(".csv")]
        yield "flashsim fa2-v1, replayed DRAM (gpu_h100_2026-11-23 launch_table/final)", "fa2-v1", shape, \
            os.path.join(tmp, name), None
    # Taken after the interval was written: SDPA on 6 new shapes, fa2-v1 on 6 new problems, both metric sets.
    full, dram = unpack(os.path.join(NEW, "ncu_csvs.tar.gz")), unpack(os.path.join(NEW, "ncu_dram_csvs.tar.gz"))
    for s in VALIDATION3:
        report = os.path.join(full, "ncu_" + s + ".csv")
        yield "new: SDPA FA2 (validation3), one-pass DRAM", "validation3", s, report, \
            os.path.join(dram, "ncu_dram_" + s + ".csv")
        yield "new: SDPA FA2 (validation3), replayed DRAM", "validation3", s, report, None
    own = unpack(os.path.join(NEW, "ncu_fa2_gpu_csvs.tar.gz"))
    for name in sorted(os.listdir(own)):
        if not name.startswith("ncu_fa2_") or not name.endswith(".csv"):
            continue
        pass_, shape = name[len("ncu_fa2_"):-len(".csv")].split("_", 1)
        report, dram = os.path.join(own, name), os.path.join(own, "ncu_dram_" + name[len("ncu_"):])
        planted = shape.startswith("heads_first")
        yield PLANTED if planted else "new: flashsim fa2-v1, one-pass DRAM", pass_, shape, report, dram
        yield PLANTED if planted else "new: flashsim fa2-v1, replayed DRAM", pass_, shape, report, None
    # Taken after the adverse capacity was fixed (commit 6174f80): SDPA on 8 more shapes.
    full = unpack(os.path.join(ADVERSE, "ncu_validation4_csvs.tar.gz"))
    dram = unpack(os.path.join(ADVERSE, "ncu_dram_validation4_csvs.tar.gz"))
    for s in VALIDATION4:
        report = os.path.join(full, "ncu_" + s + ".csv")
        yield HELD_OUT + ", one-pass DRAM", "validation4", s, report, os.path.join(dram, "ncu_dram_" + s + ".csv")
        yield HELD_OUT + ", replayed DRAM", "validation4", s, report, None


def main():
    groups = {}
    for group, label, shape, report, dram in reports():
        cmd = [FLASHSIM, "traffic", "compare", "--json", "--ncu", report] + flags(shape)
        if dram:
            cmd += ["--ncu-dram", dram]
        out = subprocess.run(cmd, capture_output=True, text=True)
        g = groups.setdefault(group, {"rows": [], "errors": []})
        if out.returncode not in (0, 1):
            g["errors"].append(f"{label}/{shape}: {out.stderr.strip()}")
            continue
        for k in json.loads(out.stdout)["kernels"]:
            for m in k["metrics"]:
                if m.get("lower") is None:
                    continue
                g["rows"].append((label, shape, k["name"].split(" ")[0], m))
    every, new, held = [], [], []
    for group, g in groups.items():
        planted = group == PLANTED
        print(group + ":" if planted else summary(group, g["rows"]))
        for e in g["errors"]:
            print("  not compared:", e)
        for label, shape, kernel, m in g["rows"]:
            if planted or not m["ok"]:
                print(f"  {'' if planted else 'outside: '}{label}/{shape}/{kernel}/{m['metric']}: measured "
                      f"{m['measured'] / 1e6:.2f} MB, range {m['lower'] / 1e6:.2f} .. {m['upper'] / 1e6:.2f} MB: "
                      f"{m['verdict']}")
        if not planted:
            every += g["rows"]
            new += g["rows"] if group.startswith("new:") else []
            held += g["rows"] if group.startswith(HELD_OUT) else []
    print(summary("NEW (taken after the interval was first written)", new))
    print(summary("HELD OUT (taken after the adverse capacity was fixed)", held))
    print(summary("ALL (the planted kernel left out)", every))


def summary(name, rows):
    inside = sum(1 for r in rows if r[3]["ok"])

    def median_width(metric):
        widths = [(r[3]["upper"] - r[3]["lower"]) / r[3]["predicted"] if r[3]["predicted"] > 0 else float("inf")
                  for r in rows if metric in r[3]["metric"]]
        return 100 * statistics.median(widths) if widths else float("nan")

    return (f"{name}: {inside} of {len(rows)} DRAM figures inside their interval "
            f"({100 * inside / max(1, len(rows)):.1f}%), median width {median_width('dram__'):.1f}% of the "
            f"prediction (reads {median_width('read'):.1f}%, writes {median_width('write'):.1f}%)")


if __name__ == "__main__":
    main()
