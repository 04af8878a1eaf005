#!/usr/bin/env python3
"""Local-memory (spill) instructions of our CUDA kernels, read from their SASS, per kernel and architecture.

  python3 bench/gpu/spills.py OBJECT_OR_BINARY [--cuobjdump PATH] [--filter REGEX] [--launch-table]

For each kernel: the LDL / STL instructions in the whole kernel and inside its loops (the code between a
backward branch and its target, the part that runs once per key or query block), and the tensor-core
instructions (HMMA) there, which tell the main loop from the small ones. A kernel whose loops hold no LDL / STL
reloads nothing per block; ncu's local-memory bytes (traffic.sh) measure the same at run time.
"""
import argparse
import re
import shutil
import subprocess
import sys


def demangle(names):
    cxxfilt = shutil.which("c++filt")
    if not cxxfilt:
        return names
    out = subprocess.run([cxxfilt], input="\n".join(names), capture_output=True, text=True).stdout
    return out.splitlines()


def kernels(sass):
    """Yields (arch, mangled name, [(address, instruction)])."""
    arch = "?"
    for block in re.split(r"\n(?=\s*(?:arch = sm_\d+|\t*Function : ))", sass):
        m = re.match(r"\s*arch = (sm_\d+)", block)
        if m:
            arch = m.group(1)
            continue
        m = re.match(r"\s*Function : (\S+)", block)
        if not m:
            continue
        ins = [(int(a, 16), t.strip()) for a, t in re.findall(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);", block)]
        yield arch, m.group(1), ins


def count(ins, lo, hi, op):
    return sum(1 for a, t in ins if lo <= a <= hi and re.search(r"\b" + op + r"\b", t))


def spill_counts(ins):
    """(LDL, STL, LDL in loops, STL in loops, HMMA in loops) of a kernel's [(address, instruction)]."""
    loops = set()
    for a, t in ins:
        m = re.search(r"\bBRA\b.*?(0x[0-9a-f]+)", t)
        if m and int(m.group(1), 16) <= a:
            loops.add((int(m.group(1), 16), a))
    # a loop's instructions, each counted once even where loops nest
    in_loop = [(a, t) for a, t in ins if any(lo <= a <= hi for lo, hi in loops)]
    end = ins[-1][0] if ins else 0
    return (count(ins, 0, end, "LDL"), count(ins, 0, end, "STL"), count(in_loop, 0, end, "LDL"),
            count(in_loop, 0, end, "STL"), count(in_loop, 0, end, "HMMA"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binary")
    ap.add_argument("--cuobjdump", default=shutil.which("cuobjdump") or "cuobjdump")
    ap.add_argument("--filter", default="", help="only kernels whose demangled name matches")
    args = ap.parse_args()
    res = subprocess.run([args.cuobjdump, "-sass", args.binary], capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"spills.py: {args.cuobjdump} failed: {res.stderr.strip()}")
    found = list(kernels(res.stdout))
    names = demangle([n for _, n, _ in found])
    rows = []
    for (arch, _, ins), name in zip(found, names):
        name = re.sub(r"\(.*", "", name).replace("flashsim::gpu::fa2::", "").replace("void ", "")
        if args.filter and not re.search(args.filter, name):
            continue
        rows.append((name, arch) + spill_counts(ins))
    print(f"{'kernel':<72} {'arch':<6} {'LDL':>4} {'STL':>4} {'loop LDL':>8} {'loop STL':>8} {'loop HMMA':>9}")
    for r in sorted(rows):
        print(f"{r[0]:<72} {r[1]:<6} {r[2]:>4} {r[3]:>4} {r[4]:>8} {r[5]:>8} {r[6]:>9}")
    clean = sum(1 for r in rows if r[4] == 0 and r[5] == 0)
    print(f"{len(rows)} kernels: {clean} with no LDL / STL in their loops, {sum(1 for r in rows if r[2] + r[3] == 0)}"
          " with none at all")


if __name__ == "__main__":
    main()
