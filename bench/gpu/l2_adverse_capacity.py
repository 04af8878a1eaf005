#!/usr/bin/env python3
"""Derives the H100 profile's l2_adverse_reuse_bytes from the causal_mimic probes (bench/gpu/l2_probe.cu).

    python3 bench/gpu/l2_adverse_capacity.py build/default/flashsim bench/results/l2_adverse_h100_2026-11-26

Each mimic that walks K/V backwards and writes O (FA2's forward without the math: SDPA's launches at head dims
64, 96, 128 and 256, 4 warps, 2 CTAs an SM) is the schedule flashsim executes for that kernel. Its runs (`causal_mimic_*.csv` with their
`.launches`) go to `traffic compare` as a report of the mimic's launch, with a profile whose
l2_adverse_reuse_bytes is C and no code allowance: C goes down from l2_reuse_bytes in 1/4 MiB steps until every
run's DRAM reads are within the range (the executed schedule through an LRU of C, within the counters' spread, as
for any kernel); the adverse capacity is the smallest such C over the mimics. Prints one line per mimic and the result.
"""
import json
import os
import subprocess
import sys
import tempfile

from ncu_csv import read_metrics

MIB = 2**20
STEP = MIB // 4  # resolution of the search: a quarter MiB (2048 lines of 128 bytes)
# The reverse-walk mimics with O written: variant -> (batch, heads, seqlen, causal, head dim, Br, Bc), bf16.
MIMICS = {
    "n4096_causal_rev_spin": (2, 16, 4096, True, 128, 128, 64),
    "n4096_causal_rev_nospin": (2, 16, 4096, True, 128, 128, 64),
    "n4096_full_rev_spin": (2, 16, 4096, False, 128, 128, 64),
    "n16384_causal_rev_spin": (1, 8, 16384, True, 128, 128, 64),
    "d64_n8192_causal_rev_spin": (2, 16, 8192, True, 64, 128, 128),
    "d64_n8192_causal_rev_nospin": (2, 16, 8192, True, 64, 128, 128),
    "d96_n4096_causal_rev_spin": (4, 8, 4096, True, 96, 128, 64),
    "d96_n4096_causal_rev_nospin": (4, 8, 4096, True, 96, 128, 64),
    "d256_n2048_causal_rev_spin": (4, 8, 2048, True, 256, 64, 64),
    "d256_n2048_causal_rev_nospin": (4, 8, 2048, True, 256, 64, 64),
}


def kernel(d, br, bc):
    """SDPA's forward kernel name for (head dim, Br, Bc), 4 warps: what traffic compare recognizes."""
    return (f"void flash_fwd_kernel<Flash_fwd_kernel_traits<{d}, {br}, {bc}, 4, 0, 0, bfloat16_t, "
            f"Flash_kernel_traits<{d}, {br}, {bc}, 4, bfloat16_t>>, 0, 1, 0, 0, 0, 0, 0, 0>(Flash_fwd_params)")


def measured(results):
    """variant -> [(DRAM bytes read, written)] of every run"""
    runs = {}
    for name in sorted(os.listdir(results)):
        if not (name.startswith("causal_mimic_") and name.endswith(".csv")):
            continue
        metrics, _ = read_metrics(os.path.join(results, name))
        for line in open(os.path.join(results, name[:-4] + ".launches")):
            f = line.split()
            if len(f) > 3 and f[0] == "launch" and f[3] in MIMICS:
                m = metrics[int(f[1])]
                runs.setdefault(f[3], []).append((m["dram__bytes_read.sum"], m["dram__bytes_write.sum"]))
    return runs


def report(path, batch, heads, seqlen, d, br, bc, runs):
    """A report of the mimic's launch, one kernel a run, as ncu writes one."""
    grid = f"({seqlen // br}, {batch}, {heads})"
    with open(path, "w") as out:
        out.write('"ID","Kernel Name","Block Size","Grid Size","Metric Name","Metric Unit","Metric Value"\n')
        for i, (read, write) in enumerate(runs):
            for metric, value in (("dram__bytes_read.sum", read), ("dram__bytes_write.sum", write)):
                out.write(f'"{i}","{kernel(d, br, bc)}","(128, 1, 1)","{grid}","{metric}","byte","{value:.0f}"\n')


def compare(flashsim, tmp, profile, batch, heads, seqlen, causal, d, capacity):
    """traffic compare's read figures of the runs, through `profile` with an adverse L2 of `capacity` bytes"""
    hw = os.path.join(tmp, "hw.json")
    json.dump(dict(profile, name="H100-adverse-probe", l2_adverse_reuse_bytes=capacity, kernel_code_bytes=0),
              open(hw, "w"))
    cmd = [flashsim, "traffic", "compare", "--json", "--replayed", "no", "--hw", hw, "--ncu",
           os.path.join(tmp, "mimic.csv"), "--batch", str(batch), "--heads", str(heads), "--seqlen", str(seqlen),
           "--head-dim", str(d), "--dtype", "bf16"] + (["--causal"] if causal else [])
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode not in (0, 1):
        sys.exit(out.stderr)
    return [m for k in json.loads(out.stdout)["kernels"] for m in k["metrics"]
            if m["metric"] == "dram__bytes_read.sum"]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    flashsim, results = sys.argv[1], sys.argv[2]
    profile = json.loads(subprocess.run([flashsim, "hw", "show", "H100-SXM5-80GB"], capture_output=True,
                                        text=True, check=True).stdout)
    reuse = profile["l2_reuse_bytes"]
    runs = measured(results)
    missing = sorted(set(MIMICS) - set(runs))
    if missing:
        sys.exit(f"no runs of {', '.join(missing)} in {results}")
    result = reuse
    with tempfile.TemporaryDirectory() as tmp:
        for variant, (batch, heads, seqlen, causal, d, br, bc) in MIMICS.items():
            report(os.path.join(tmp, "mimic.csv"), batch, heads, seqlen, d, br, bc, runs[variant])
            capacity, at_reuse = reuse, None
            while capacity > STEP:
                figures = compare(flashsim, tmp, profile, batch, heads, seqlen, causal, d, capacity)
                at_reuse = at_reuse or figures[0]["upper"]  # the first step's: through l2_reuse_bytes
                if all(m["ok"] for m in figures):
                    break
                capacity -= STEP
            most = max(m["measured"] for m in figures)
            print(f"{variant:29s} {len(figures)} runs, at most {most / 1e6:6.2f} MB read "
                  f"({most / figures[0]['lower']:5.3f}x the compulsory); the schedule reads {at_reuse / 1e6:6.2f} MB "
                  f"through an LRU of {reuse / MIB:.2f} MiB, {figures[0]['upper'] / 1e6:6.2f} MB through "
                  f"{capacity / MIB:5.2f} MiB, the largest that takes every run")
            result = min(result, capacity)
    print(f"l2_adverse_reuse_bytes = {result} ({result / MIB:.2f} MiB)")


if __name__ == "__main__":
    main()
