"""Causal forwards held out from every DRAM model (issue 31), drawn at random with a recorded seed and written to
bench/gpu/data/ before any of them was measured, one problem a line, `b h hkv n d causal` (square, all causal).
SDPA's flash forward under ncu's one-pass DRAM counters; `compare` holds each against `flashsim traffic compare`'s
DRAM read range.
- Set 1 (seed 2026112732, reread_heldout.txt): drawn after the re-read slope's curve was fixed (commit 1ba81cd,
  since taken out: bench/results/l2_reread_h100_2026-11-27); measured on an H100 and, 2026-11-29, on an H200.
- Set 2 (seed 2026112935, reread_heldout2.txt): drawn 2026-11-29 after the H200 profile's L2 values were derived
  (bench/results/l2_probe_h200_2026-11-29), before it was measured.
- Set 3 (seed 2026112936, reread_heldout3.txt): drawn 2026-11-29 before any of it was measured, to hold the
  schedule mimic's tolerance (bench/gpu/fwd_mimic.py, fixed on sets 1 and 2) against.
- Set 4 (seed 2026112937, reread_heldout4.txt): drawn 2026-11-29 after the partitioned L2's capacity was
  committed, before it was measured (bench/results/l2_partitioned_h200_2026-11-29: it refuted that capacity).
- Set 5 (seed 2026112938, reread_heldout5.txt): drawn 2026-11-29 after the capacity with the kernels' stack
  frames was committed (sets 1 .. 4 its fit), before it was measured (bench/results/spill_frames_h200_2026-11-29).
- Set 6 (seed 2026112939, reread_heldout6.txt): d128 alone (the heads, lengths and batches drawn as the others),
  drawn 2026-11-29 after set 5 was measured, before it was measured.
- Sets 7 (seed 2026112940, reread_heldout7.txt) and 8 (seed 2026112941, reread_heldout8.txt, d64 alone: the
  kernels whose ranges the walked frames narrowed most): drawn 2026-11-29 after the capacity with the stack
  frames walked was committed, before they were measured (bench/results/spill_walk_h200_2026-11-29: set 7
  refuted that capacity).
- Sets 9 (seed 2026112942) and 10 (seed 2026112943, d128 alone: the head dim of set 7's failure): drawn 2026-11-29
  after the capacity fitted on sets 1 .. 8 was committed, before they were measured (the same folder).
- Set 11 (seed 2026112944, d256 alone: the head dim of the widest ranges and of a forward the fit's capacity was
  bound by): drawn 2026-11-29 after sets 9 and 10 were measured, before it was measured (the same folder).
- Sets 12 (seed 2026113045) and 13 (seed 2026113046), the usual draw: drawn 2026-11-30 after the partitioned L2's
  replacement was derived from the reuse probe and both bounds (LRU at the profile's 56 MiB, SRRIP at the probe's
  50 MiB) were committed, before they were measured (bench/results/l2_replacement_h200_2026-11-30).
- Sets 14 (seed 2026113047) and 15 (seed 2026113048), the usual draw: drawn 2026-11-30 before this session's
  read bounds were fixed (the optimum cache's lower end and whatever the partitioned L2's grid of capacities
  gives), measured at once and compared only after those were committed (bench/results/l2_capacity_h200_2026-11-30).
- Sets 16 (seed 2026113049) and 17 (seed 2026113050), the usual draw: drawn 2026-11-30 after the sequence-length
  sweep (reread_sweep.py) showed a forward above the bound's 56 MiB and before the capacity was fitted again with
  the sweep in the fit; measured at once and compared only after that capacity was committed
  (bench/results/l2_sweep_h200_2026-11-30).
    python3 bench/gpu/reread_heldout.py [--set 1|2|..|17]                  # rewrites the list (same seed: the same problems)
    python3 bench/gpu/reread_heldout.py [--set 1|2|..|17] measure OUT      # on the GPU machine: ncu of each problem's forward
    python3 bench/gpu/reread_heldout.py [--set 1|2|..|17] compare FLASHSIM DIR [--hw PROFILE] [--stacks]   # here: the
        range against DIR's reports (--stacks: each SDPA kernel's stack frame, sdpa_stack.py, for the H200's reports)"""
import json
import os
import subprocess
import sys

import heldout
import ncu

COUNT = 16
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
# set -> (seed, file): the date and the issue, then a draw number
SETS = {"1": (2026112732, "reread_heldout.txt"), "2": (2026112935, "reread_heldout2.txt"),
        "3": (2026112936, "reread_heldout3.txt"), "4": (2026112937, "reread_heldout4.txt"),
        "5": (2026112938, "reread_heldout5.txt"), "6": (2026112939, "reread_heldout6.txt"),
        "7": (2026112940, "reread_heldout7.txt"), "8": (2026112941, "reread_heldout8.txt"),
        "9": (2026112942, "reread_heldout9.txt"), "10": (2026112943, "reread_heldout10.txt"),
        "11": (2026112944, "reread_heldout11.txt"), "12": (2026113045, "reread_heldout12.txt"),
        "13": (2026113046, "reread_heldout13.txt"), "14": (2026113047, "reread_heldout14.txt"),
        "15": (2026113048, "reread_heldout15.txt"), "16": (2026113049, "reread_heldout16.txt"),
        "17": (2026113050, "reread_heldout17.txt")}
# sets drawn at one head dim: set 6 at d128, the kernel whose frames broke set 4 (set 5 drew two d128 forwards);
# set 8 at d64, whose ranges the walked frames narrowed most (bench/results/spill_walk_h200_2026-11-29); set 10 at
# d128, the head dim of set 7's failure; set 11 at d256, the widest ranges' (the same folder)
HEAD_DIM = {2026112939: 128, 2026112941: 64, 2026112943: 128, 2026112944: 256}
SEED, OUT = SETS["1"][0], os.path.join(DATA, SETS["1"][1])


def draw(rng):
    d, hq, hkv = heldout.head_dim_and_heads(rng)
    d = HEAD_DIM.get(SEED, d)
    # 1K .. 16K keys (the range), half odd
    n = rng.randint(1024, 16384)
    n = n | 1 if rng.random() < 0.5 else n // 64 * 64
    # about 2^28 elements of Q at most: tens of milliseconds a forward
    b = rng.randint(1, max(1, min(8, (1 << 28) // (n * hq * d))))
    return b, hq, hkv, n, d, 1


def problems(path=None):
    with open(path or OUT) as f:
        return [tuple(int(x) for x in line.split()) for line in f if not line.startswith("#")]


def set_problems(name):
    """The problems of set `name` ("1" .. ), whichever set the module was pointed at."""
    return problems(os.path.join(DATA, SETS[name][1]))


def report_name(problem):
    return "ncu_dram_reread_" + "_".join(map(str, problem[:5])) + ".csv"


def measure(out, chosen=None):
    """SDPA's flash forward of each problem (of `chosen`, else the set's) under ncu, the two DRAM counters alone
    (one pass)."""
    os.makedirs(out, exist_ok=True)
    here = os.path.dirname(os.path.abspath(__file__))
    for problem in chosen if chosen is not None else problems():
        program = [sys.executable, os.path.join(here, "sdpa.py"), "once"] + [str(x) for x in problem]
        path = os.path.join(out, report_name(problem))
        with open(path, "w") as f, open(path[:-4] + ".err", "w") as err:
            rc = subprocess.run(ncu.command("dram", program, kernel_regex="flash_fwd"), stdout=f, stderr=err).returncode
        print(f"{problem}: rc={rc}", flush=True)


def read_figure(flashsim, hw, path, problem, stacks=False):
    """The DRAM read figure (measured, lower, upper, tolerance_floor, ok, verdict) of `flashsim traffic compare` on
    the causal forward report `path` of problem (b, h, hkv, n, d), with the kernel's stack frame from sdpa_stack.py's
    table where `stacks` (SDPA's reports of the H200's PyTorch build; a kernel not in the table: none given);
    None, after a line saying why, when compare fails."""
    b, h, hkv, n, d = problem
    frame = []
    if stacks:
        import sdpa_stack
        stack = sdpa_stack.stack_bytes(path)
        frame = [] if stack is None else ["--stack-bytes", str(stack)]
    out = subprocess.run([flashsim, "traffic", "compare", "--json", "--hw", hw, "--ncu", path] +
                         ncu.problem_flags((b, h, hkv, n, d, True)) + frame,
                         capture_output=True, text=True)
    if out.returncode not in (0, 1):
        print(f"b{b} h{h}/{hkv} n{n} d{d}: {out.stderr.strip()}")
        return None
    return next(x for x in json.loads(out.stdout)["kernels"][0]["metrics"] if x["metric"] == "dram__bytes_read.sum")


def planted_reads(measured, lower, h, hkv):
    """A planted 1.5x K/V re-read on top of `measured`: half of K/V's compulsory bytes (their share of the forward's
    Q, K, V loads, hkv of h heads each) and half of what the kernel already read again."""
    kv = lower * 2 * hkv / (h + 2 * hkv)
    return measured + 0.5 * (kv + max(0.0, measured - lower))


def compare(flashsim, folder, hw="H100-SXM5-80GB", stacks=False):
    """Each report through `flashsim traffic compare` with its problem's flags: the forward's DRAM read against
    the range (the compulsory bytes .. the adverse L2's bound), and a planted 1.5x K / V re-read (the K / V part
    of the measured reads scaled) flagged or not. (The re-read model this set was drawn for was measured against
    it at commit 18c10e9, whose `compare` printed the model's upper too: bench/results/l2_reread_h100_2026-11-27.)"""
    inside = caught = total = 0
    widths = []
    for b, h, hkv, n, d, causal in problems():
        m = read_figure(flashsim, hw, os.path.join(folder, report_name((b, h, hkv, n, d))), (b, h, hkv, n, d),
                        stacks)
        if m is None:
            continue
        lower, upper, floor, c = m["lower"], m["upper"], m["tolerance_floor"], m["compulsory"]
        planted = planted_reads(m["measured"], c, h, hkv)
        flagged = planted > upper + floor
        total += 1
        inside += m["ok"]
        caught += flagged
        widths.append(upper / lower)
        print(f"b{b} h{h}/{hkv} n{n} d{d}: measured {m['measured'] / c:5.2f}x the compulsory bytes, range "
              f"{lower / c:5.2f} .. {upper / c:6.2f}x: {m['verdict'][:60]}; planted 1.5x K/V {planted / c:5.2f}x "
              f"{'flagged' if flagged else 'not flagged'}")
    if not widths:
        print(f"reread_heldout.py: no report of this set in {folder} could be compared", file=sys.stderr)
        return 2
    widths.sort()
    print(f"{inside} of {total} inside their range; planted 1.5x K/V re-reads flagged: {caught} of {total}; range "
          f"width (upper / lower) {widths[0]:.2f} .. {widths[-1]:.2f}x, median {widths[len(widths) // 2]:.2f}x")


def main():
    global SEED, OUT
    picked = heldout.pick_set(sys.argv, SETS, DATA, "1", "reread_heldout.py")
    if picked is None:
        return 2
    SEED, OUT = picked
    if len(sys.argv) == 3 and sys.argv[1] == "measure":
        return measure(sys.argv[2])
    stacks = "--stacks" in sys.argv
    if stacks:
        sys.argv.remove("--stacks")
    if len(sys.argv) in (4, 6) and sys.argv[1] == "compare" and sys.argv[4:5] in ([], ["--hw"]):
        if not os.path.isdir(sys.argv[3]):
            print(f"reread_heldout.py: no folder {sys.argv[3]}", file=sys.stderr)
            return 2
        if not (os.path.isfile(sys.argv[2]) and os.access(sys.argv[2], os.X_OK)):
            print(f"reread_heldout.py: {sys.argv[2]} is not an executable flashsim", file=sys.stderr)
            return 2
        return compare(sys.argv[2], sys.argv[3], sys.argv[5] if len(sys.argv) == 6 else "H100-SXM5-80GB", stacks)
    if len(sys.argv) > 1:
        print(f"usage: reread_heldout.py [--set {'|'.join(SETS)}] [measure OUT | compare FLASHSIM DIR [--hw PROFILE] "
              f"[--stacks]]",
              file=sys.stderr)
        return 2
    heldout.write(OUT, SEED, COUNT, draw,
                  f"causal re-read held-out problems, seed {SEED} (bench/gpu/reread_heldout.py): b h hkv n d causal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
