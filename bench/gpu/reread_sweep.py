"""Causal forwards along a sequence-length sweep (issue 31): does the capacity at which the partitioned L2 model reads
what the card read move smoothly with the length, or jump between neighbours? Two families, each the shape of a
recorded forward the card treated unlike its neighbours (bench/results/l2_capacity_h200_2026-11-30): b4 h12/1
d256 (set 15's widest range, the card at 62 MiB) and b5 h12/1 d128 (set 10's n13417 at 79 MiB, set 9's n16128 at
59 MiB), each at n = 8704 .. 16384 in steps of 512. A designed list, not a random draw: written before it was
measured, held out of every fit like the random sets.
    python3 bench/gpu/reread_sweep.py                 # rewrites data/reread_sweep.txt
    python3 bench/gpu/reread_sweep.py measure OUT [--reverse] [--lengths N,N,..] [--offset-bytes B]   # on the GPU
        machine: ncu of each forward (reread_heldout's), last to first with --reverse, only at those lengths with
        --lengths (a repeat run: is the card's re-read of one forward the same from run to run?), with Q, K and V
        in one allocation B bytes into it with --offset-bytes (a multiple of 128; sdpa.py's
        FLASHSIM_SDPA_OFFSET_BYTES: does the re-read depend on where the tensors lie?)
    python3 bench/gpu/run.py derive l2-capacity build/default/flashsim ARCHIVE --hw H200   # here: the model
    python3 bench/gpu/reread_sweep.py table [RESULTS]   # here: each run's reads over the compulsory bytes, side by side"""
import os
import sys

import reread_heldout

OUT = os.path.join(reread_heldout.DATA, "reread_sweep.txt")
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "results", "l2_sweep_h200_2026-11-30")
# the runs recorded there: (archive, folder in it, what it varied)
RUNS = (("reread_sweep_csvs.tar.gz", "sweep", "run 1"), ("reread_sweep_repeat_csvs.tar.gz", "run2", "run 2"),
        ("reread_sweep_repeat_csvs.tar.gz", "run3", "run 3"),
        ("reread_sweep_offset_csvs.tar.gz", "off0", "one alloc +0"),
        ("reread_sweep_offset_csvs.tar.gz", "off1048576", "+1 MiB"),
        ("reread_sweep_offset_csvs.tar.gz", "off12583296", "+12 MiB 384"))
FAMILIES = ((4, 12, 1, 256), (5, 12, 1, 128))  # (b, h, hkv, d)
# 512 keys: four of the d256 forward's 128-row tiles and of the d128's, 16 lengths a family (32 forwards: the
# ~290 s of one device call, as two random sets take)
LENGTHS = range(8704, 16384 + 1, 512)


def sweep():
    return [(b, h, hkv, n, d, 1) for b, h, hkv, d in FAMILIES for n in LENGTHS]


def table(results):
    """Each forward's DRAM reads over its compulsory bytes in each recorded run (RUNS; '-' where a run left it out),
    and the largest over the least."""
    import tarfile
    import tempfile

    import fwd_mimic
    import ncu
    with tempfile.TemporaryDirectory() as tmp:
        for archive in sorted({a for a, _, _ in RUNS}):
            path = os.path.join(results, archive)
            if not os.path.isfile(path):
                print(f"reread_sweep.py: no {path}", file=sys.stderr)
                return 2
            with tarfile.open(path) as t:
                t.extractall(tmp)
        print_table(tmp, fwd_mimic, ncu)
    return 0


def print_table(tmp, fwd_mimic, ncu):
    print(f"{'forward':26s}" + "".join(f"{name:>13s}" for _, _, name in RUNS) + f"{'most/least':>11s}")
    for problem in sweep():
        row = []
        for _, folder, _ in RUNS:
            report = os.path.join(tmp, folder, reread_heldout.report_name(problem[:5]))
            reads = ncu.kernel_dram_reads(report, "flash_fwd_kernel") if os.path.isfile(report) else None
            row.append(None if reads is None else reads / fwd_mimic.compulsory_reads(*problem[:5]))
        seen = [x for x in row if x is not None]
        b, h, hkv, n, d, _ = problem
        print(f"{'b%d h%d/%d n%d d%d' % (b, h, hkv, n, d):26s}" +
              "".join(f"{'-' if x is None else f'{x:.2f}':>13s}" for x in row) +
              f"{max(seen) / min(seen):>11.2f}")


def main():
    if len(sys.argv) in (2, 3) and sys.argv[1] == "table":
        return table(sys.argv[2] if len(sys.argv) == 3 else RESULTS)
    if len(sys.argv) >= 3 and sys.argv[1] == "measure":
        chosen = sweep()
        rest = sys.argv[3:]
        if "--reverse" in rest:
            rest.remove("--reverse")
            chosen.reverse()
        if "--offset-bytes" in rest[:-1]:
            i = rest.index("--offset-bytes")
            if rest[i + 1].isdigit() and int(rest[i + 1]) % 128 == 0:  # sdpa.py's: whole 128-byte lines
                os.environ["FLASHSIM_SDPA_OFFSET_BYTES"] = rest[i + 1]
                del rest[i:i + 2]
        if len(rest) == 2 and rest[0] == "--lengths" and all(x.isdigit() for x in rest[1].split(",")):
            lengths = {int(x) for x in rest[1].split(",")}
            chosen = [p for p in chosen if p[3] in lengths]
            rest = []
        if not rest and chosen:
            return reread_heldout.measure(sys.argv[2], chosen)
    if len(sys.argv) > 1:
        print("usage: reread_sweep.py [measure OUT [--reverse] [--lengths N,N,..] [--offset-bytes B] | table [RESULTS]]",
              file=sys.stderr)
        return 2
    with open(OUT, "w") as f:
        f.write("# causal re-read sweep (bench/gpu/reread_sweep.py): b h hkv n d causal\n")
        for problem in sweep():
            f.write(" ".join(map(str, problem)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
