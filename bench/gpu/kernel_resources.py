#!/usr/bin/env python3
"""Resources of every fa2-v1 kernel instance (forward, and the backward's main kernel) as CSV, read from the binary.

  python3 bench/gpu/kernel_resources.py OBJECT_OR_BINARY [--arch sm_90] [--cuobjdump PATH] > kernel_resources.csv

Per kernel: its template arguments (pass, head dim, Br, Bc, warps, stages, dtype, score pipeline), registers a
thread, stack and local-memory bytes (`cuobjdump -res-usage`), the dynamic shared memory a launch takes (the
traits' formula, flashsim/fa2_instances.h), and the LDL / STL instructions of its SASS, in all and inside loops
(bench/gpu/spills.py's count: a loop's LDL / STL reload spilled registers once per key or query block).
For the backward, warps is the TileConfig's and kernel_warps what the kernel launches (twice as many).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spills  # noqa: E402  (kernels, spill_counts, demangle)

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
        sys.exit(f"kernel_resources.py: {cuobjdump} {flag} failed: {res.stderr.strip()}")
    return res.stdout


def resources(text):
    """{mangled name: {REG: n, STACK: n, SHARED: n, LOCAL: n}} of -res-usage's output."""
    out = {}
    for name, fields in re.findall(r"Function (\S+):\s*\n\s*(REG:.*)", text):
        out[name.rstrip(":")] = {k: int(v) for k, v in re.findall(r"(\w+):(\d+)", fields)}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binary")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--cuobjdump", default=shutil.which("cuobjdump") or "cuobjdump")
    args = ap.parse_args()
    res = resources(run(args.cuobjdump, "-res-usage", args.binary, args.arch))
    found = [(n, ins) for a, n, ins in spills.kernels(run(args.cuobjdump, "-sass", args.binary, args.arch))
             if a == args.arch]
    names = spills.demangle([n for n, _ in found])
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
                    + spills.spill_counts(ins))
    rows.sort(key=lambda r: (r[0] != "fwd", r[1], -r[2], -r[3], r[4], str(r[6]), r[7], r[8]))
    print("pass,head_dim,block_q,block_k,warps,kernel_warps,stages,dtype,pipeline,arch,registers,stack_bytes,"
          "local_bytes,smem_bytes,ldl,stl,loop_ldl,loop_stl,loop_hmma")
    for r in rows:
        print(",".join(str(int(x)) if isinstance(x, bool) else str(x) for x in r))


if __name__ == "__main__":
    main()
