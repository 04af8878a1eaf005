"""Decode problems held out from the decode time model (issue 30): drawn at random with a recorded seed after the
load probe (`run.py decode` at 4 query heads over 1 kv head, bench/results/decode_h200_2026-11-28/load_probe_*)
was measured and before the model's new terms were written, written to bench/gpu/data/decode_heldout.txt, one
problem a line, `batch heads heads_kv cache_len page_size` (d128 bf16, one query row a sequence: the tile the
probe calibrated). `measure` times decode-v2 on each (every split count of the model's sweep, the launch's own
choice marked); `compare` holds the model's time and split choice against them.
    python3 bench/gpu/decode_heldout.py                       # rewrites the list (same seed: the same problems)
    python3 bench/gpu/decode_heldout.py measure BUNDLE OUT    # on the GPU machine
    python3 bench/gpu/decode_heldout.py compare FLASHSIM OUT [--hw H200]   # here
Set 1 (seed 2026112930) was compared once with the model of commit 05f3803 and then showed that model's
scheduler wrong (it spread a launch's whole waves evenly); set 2 (`--set 2`, seed 2026112931,
decode_heldout2.txt) was drawn and measured after that fix, before either was compared. Set 3 (`--set 3`, seed
2026112932, decode_heldout3.txt) adds head dims 64 and 256: drawn before their load points were measured. Set 4
(`--set 4`, seed 2026112933) was drawn before the launch-pair probe (run.py probe launch-pair), and set 5
(`--set 5`, seed 2026112934) before a term that took the probe's hidden launch off a split launch's combine; set 5
refuted the term (it was reverted), and sets 4 and 5 both check the model as it stands."""
import json
import math
import os
import subprocess
import sys

import bundle as bundle_mod
import heldout
from derive import decode_tile
from tables import read_decode_csv

# the date and the issue; set 3 adds the head dim (64, 128 or 256) as a sixth field
SETS = {"1": (2026112930, "decode_heldout.txt"), "2": (2026112931, "decode_heldout2.txt"),
        "3": (2026112932, "decode_heldout3.txt"), "4": (2026112933, "decode_heldout4.txt"),
        "5": (2026112934, "decode_heldout5.txt")}
COUNT = 24
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
SEED, OUT = SETS["1"][0], os.path.join(DATA, SETS["1"][1])
KV_BYTES_MAX = 8 << 30  # a few milliseconds a launch at most: every split count of a problem timed in seconds


def draw_with_head_dim(rng):
    d = rng.choice([64, 128, 256])
    return draw(rng, d) + (d,)


def draw(rng, d=128):
    hkv = rng.choice([1, 2, 4, 8, 16])
    heads = hkv * rng.choice([1, 2, 4, 8])  # GQA groups of 1 .. 8 query heads a kv head
    page = rng.choice([16, 32, 64, 128, 256])
    while True:  # batch 1 .. 256 and 256 .. 64K keys, log-uniform; half the lengths not a multiple of the tile
        batch = int(round(math.exp(rng.uniform(0, math.log(256)))))
        n = int(round(math.exp(rng.uniform(math.log(256), math.log(65536)))))
        n = n | 1 if rng.random() < 0.5 else max(64, n // 64 * 64)
        if batch * n * hkv * d * 2 * 2 <= KV_BYTES_MAX:
            return batch, heads, hkv, n, page


def problems():
    with open(OUT) as f:
        return [tuple(int(x) for x in line.split()) for line in f if not line.startswith("#")]


def fields(problem):
    """(batch, heads, heads_kv, cache_len, page_size, head_dim) of a problem line (sets 1 and 2: d128)."""
    return problem + (128,) * (6 - len(problem))


def csv_name(problem):
    return "decode_heldout_" + "_".join(map(str, problem)) + ".csv"


def measure(bundle, out):
    """decode-bench of decode-v2 on each problem (its CSV: every split count, the launch's choice marked)."""
    os.makedirs(out, exist_ok=True)
    env = bundle_mod.unpack(bundle)
    fg = os.path.join(bundle, "flashsim-gpu")
    for problem in problems():
        b, h, hkv, n, page, d = fields(problem)
        cmd = [fg, "decode-bench", "--kernel", "decode-v2", "--batches", str(b), "--cache-lens", str(n),
               "--page-sizes", str(page), "--heads", str(h), "--heads-kv", str(hkv), "--head-dim", str(d),
               "--repeats", "20"]
        with open(os.path.join(out, csv_name(problem)), "w") as f:
            rc = subprocess.run(cmd, stdout=f, env=env).returncode
        print(f"b{b} h{h}/{hkv} n{n} page {page} d{d}: rc={rc}", flush=True)


def compare(flashsim, folder, hw):
    """The model (`flashsim sim tune --kernel splitkv` at decode-v2's tile, `hw`'s profile) against each problem's
    measured times: the predicted time of the model's split count against its measured time, and the measured
    time of the model's count against the fastest count measured."""
    within10 = within5 = total = 0
    ratios = []
    for problem in problems():
        b, h, hkv, n, page, d = fields(problem)
        path = os.path.join(folder, csv_name(problem))
        rows = read_decode_csv(path)[1] if os.path.exists(path) else []
        name = f"b{b} h{h}/{hkv} n{n} page {page}" + (f" d{d}" if len(problem) > 5 else "")
        if not rows:
            print(f"{name}: not measured")
            continue
        br, bc, stages = decode_tile("decode-v2", d)
        out = subprocess.run([flashsim, "sim", "tune", "--kernel", "splitkv", "--split-tile", str(br), str(bc), "4",
                              str(stages),
                              "--hw", hw, "--batches", str(b), "--cache-lens", str(n), "--page-sizes", str(page),
                              "--heads", str(h), "--heads-kv", str(hkv), "--head-dims", str(d), "--json"],
                             capture_output=True, text=True, check=True)
        entry = json.loads(out.stdout)["entries"][0]
        predicted = {x["num_splits"]: x["time_us"] / 1e3 for x in entry["splits"] if x["fits"]}
        measured = {int(r["num_splits"]): r["ms"] for r in rows}
        pick = entry["best_splits"]
        if pick not in measured:
            print(f"{name}: the model's {pick} splits not measured")
            continue
        ratio = measured[pick] / predicted[pick]
        best = min(measured, key=measured.get)
        total += 1
        within10 += abs(ratio - 1) <= 0.10
        within5 += measured[pick] <= 1.05 * measured[best]
        ratios.append(ratio)
        print(f"{name}: {pick} splits {measured[pick]:.4f} ms, predicted "
              f"{predicted[pick]:.4f} (measured / predicted {ratio:.2f}); fastest {best} splits {measured[best]:.4f} "
              f"({measured[pick] / measured[best]:.2f}x)")
    ratios.sort()
    if ratios:
        print(f"prediction within 10% in {within10} of {total}; the model's split count within 5% of the fastest in "
              f"{within5} of {total}; measured / predicted {ratios[0]:.2f} .. {ratios[-1]:.2f}, median "
              f"{ratios[len(ratios) // 2]:.2f}")


def main():
    global SEED, OUT
    picked = heldout.pick_set(sys.argv, SETS, DATA, "1", "decode_heldout.py")
    if picked is None:
        return 2
    SEED, OUT = picked
    if len(sys.argv) > 3 and sys.argv[1] == "measure":
        if not os.path.isfile(os.path.join(sys.argv[2], "flashsim-gpu.xz")) and \
                not os.path.isfile(os.path.join(sys.argv[2], "flashsim-gpu")):
            print(f"decode_heldout.py: {sys.argv[2]} is no bundle (run.py bundle packs one)", file=sys.stderr)
            return 2
        return measure(sys.argv[2], sys.argv[3])
    if len(sys.argv) > 3 and sys.argv[1] == "compare":
        if not os.path.isdir(sys.argv[3]):
            print(f"decode_heldout.py: no folder {sys.argv[3]}", file=sys.stderr)
            return 2
        hw = sys.argv[sys.argv.index("--hw") + 1] if "--hw" in sys.argv else "H200"
        return compare(sys.argv[2], sys.argv[3], hw)
    if len(sys.argv) > 1:
        print(f"usage: decode_heldout.py [--set {'|'.join(SETS)}] [measure BUNDLE OUT | compare FLASHSIM OUT "
              "[--hw PROFILE]]", file=sys.stderr)
        return 2
    with_d = not OUT.endswith(("decode_heldout.txt", "decode_heldout2.txt"))  # sets 3 and on: the head dim too
    heldout.write(OUT, SEED, COUNT, draw_with_head_dim if with_d else draw,
                  f"decode held-out problems, seed {SEED} (bench/gpu/decode_heldout.py): batch heads heads_kv "
                  f"cache_len page_size{' head_dim' if with_d else ''}")


if __name__ == "__main__":
    sys.exit(main())
