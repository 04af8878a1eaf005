#!/usr/bin/env python3
"""The SASS of the gpu/ build, read with cuobjdump: two reports.

  python3 gpu/tools/sass.py resources OBJECT_OR_BINARY [--arch sm_90] [--cuobjdump PATH] > fa2_v1_sm_90.csv
  python3 gpu/tools/sass.py spills OBJECT_OR_BINARY [--cuobjdump PATH] [--filter REGEX]

resources: every fa2-v1 kernel instance (forward, and the backward's main kernel) as CSV: its template arguments
(pass, head dim, Br, Bc, warps, stages, dtype, score pipeline), registers a thread, stack and local-memory bytes
(`cuobjdump -res-usage`), the dynamic shared memory a launch takes (the traits' formula, the fa2 spec's
instances.h), and the LDL / STL instructions of its SASS, in all and inside loops. For the backward, warps is the
TileConfig's and kernel_warps what the kernel launches (twice as many). The fa2 spec's compiled-resource tables
are this report of the build (calibration fa2.register_overhead).

spills: for each kernel, the LDL / STL instructions in the whole kernel and inside its loops (the code between a
backward branch and its target, the part that runs once per key or query block), and the tensor-core
instructions (HMMA) there, which tell the main loop from the small ones. A kernel whose loops hold no LDL / STL
reloads nothing per block; ncu's local-memory bytes (`bench/gpu/run.py traffic`) measure the same at run time.
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


ELEMENT_BYTES = 2  # bf16 / fp16 tiles


def fwd_smem(d, br, bc, stages):
    return (br + 2 * stages * bc) * d * ELEMENT_BYTES  # Q, then stages K and V buffers


def bwd_smem(d, br, bc):
    # K, V; Q and dO double-buffered; dS^T; fp32 lse shift and D of two query blocks
    return (2 * bc * d + 4 * br * d + bc * br) * ELEMENT_BYTES + 4 * br * 4


FWD = re.compile(r"flashsim_fa2_fwd_kernel<(\d+), (\d+), (\d+), (\d+), (\d+), (\w+), (true|false)>")
BWD = re.compile(r"flashsim_fa2_bwd_main_kernel<(\d+), (\d+), (\d+), (\d+), (\w+), (true|false)>")
DTYPE = {"__nv_bfloat16": "bf16", "__half": "fp16"}


def run(cuobjdump, flag, binary, arch):
    res = subprocess.run([cuobjdump, flag, "-arch", arch, binary], capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"sass.py resources: {cuobjdump} {flag} failed: {res.stderr.strip()}")
    return res.stdout


def resources(text):
    """{mangled name: {REG: n, STACK: n, SHARED: n, LOCAL: n}} of -res-usage's output."""
    out = {}
    for name, fields in re.findall(r"Function (\S+):\s*\n\s*(REG:.*)", text):
        out[name.rstrip(":")] = {k: int(v) for k, v in re.findall(r"(\w+):(\d+)", fields)}
    return out



def resources_main(argv):
    ap = argparse.ArgumentParser(prog="sass.py resources")
    ap.add_argument("binary")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--cuobjdump", default=shutil.which("cuobjdump") or "cuobjdump")
    args = ap.parse_args(argv)
    res = resources(run(args.cuobjdump, "-res-usage", args.binary, args.arch))
    found = [(n, ins) for a, n, ins in kernels(run(args.cuobjdump, "-sass", args.binary, args.arch))
             if a == args.arch]
    names = demangle([n for n, _ in found])
    rows = []
    for (mangled, ins), name in zip(found, names):
        f, b = FWD.search(name), BWD.search(name)
        if not f and not b:
            continue
        if f:
            d, br, bc, w, st = (int(x) for x in f.groups()[:5])
            key = ("fwd", d, br, bc, w, w, st, DTYPE[f.group(6)], f.group(7) == "true")
            smem = fwd_smem(d, br, bc, st)
        else:
            d, br, bc, kw = (int(x) for x in b.groups()[:4])
            key = ("bwd", d, br, bc, kw // 2, kw, "", DTYPE[b.group(5)], b.group(6) == "true")
            smem = bwd_smem(d, br, bc)
        r = res.get(mangled, {})
        rows.append(key + (args.arch, r.get("REG", ""), r.get("STACK", ""), r.get("LOCAL", ""), smem)
                    + spill_counts(ins))
    rows.sort(key=lambda r: (r[0] != "fwd", r[1], -r[2], -r[3], r[4], str(r[6]), r[7], r[8]))
    print("pass,head_dim,block_q,block_k,warps,kernel_warps,stages,dtype,pipeline,arch,registers,stack_bytes,"
          "local_bytes,smem_bytes,ldl,stl,loop_ldl,loop_stl,loop_hmma")
    for r in rows:
        print(",".join(str(int(x)) if isinstance(x, bool) else str(x) for x in r))


def spills_main(argv):
    ap = argparse.ArgumentParser(prog="sass.py spills")
    ap.add_argument("binary")
    ap.add_argument("--cuobjdump", default=shutil.which("cuobjdump") or "cuobjdump")
    ap.add_argument("--filter", default="", help="only kernels whose demangled name matches")
    args = ap.parse_args(argv)
    res = subprocess.run([args.cuobjdump, "-sass", args.binary], capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"sass.py spills: {args.cuobjdump} failed: {res.stderr.strip()}")
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



def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in ("resources", "spills"):
        sys.exit(__doc__)
    return (resources_main if argv[0] == "resources" else spills_main)(argv[1:])


if __name__ == "__main__":
    main()
