#!/usr/bin/env python3
"""The registers a thread of every gpu/decode split-kernel instance, as ptxas compiles them: the decode family's
resource table (families/decode/include/flashsim/families/decode/registers_sm90.h), which the simulator's
occupancy of a decode tile reads.

  python3 gpu/tools/decode_registers.py BUILD > families/decode/include/flashsim/families/decode/registers_sm90.h
  clang-format -i families/decode/include/flashsim/families/decode/registers_sm90.h

BUILD: a build configured with -DFLASHSIM_DECODE_INSTANCES=all and sm_90 in CMAKE_CUDA_ARCHITECTURES, in release
(build/gpurel): its compile command of gpu/decode/decode_launch.cu, run again with `-Xptxas -v`.

  python3 gpu/tools/decode_registers.py --check TABLE BUILD

The ctest gpu.decode_registers_match_build: exit 1 where BUILD's kernels compile to other registers than TABLE
lists (of the instances BUILD compiles), 77 (skipped) where BUILD cannot tell: unoptimized device code (CI's
-Xptxas -O0, -Xcicc=-O0), no sm_90, or another nvcc than the table's (its full version: two builds of nvcc 13.0
allocated different registers to three instances)."""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

ELEM_BYTES = {"float": 4, "__half": 2, "__nv_bfloat16": 2}


def parse(ptxas_log, demangle=None):
    """(tensor_cores, elem_bytes, d, dv, rows, registers) of each split kernel in a `-Xptxas -v` log, sorted; fp16
    and bf16 (both 2 bytes) share an entry, the more registers of the two (the occupancy neither exceeds)."""
    entries, name = [], None
    for line in ptxas_log.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            name = m.group(1)
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m and name:
            entries.append((name, int(m.group(1))))
            name = None
    names = (demangle or (lambda xs: xs))([n for n, _ in entries])
    out = {}
    for plain, (_, regs) in zip(names, entries):
        m = re.search(r"decode_(mma_)?split_kernel<([\w:]+), (?:\(int\))?(\d+), (?:\(int\))?(\d+)"
                      r"(?:, (?:\(int\))?(\d+))?>", plain)
        if not m:
            continue
        mma, elem, d, dv, rows = m.groups()
        key = (bool(mma), ELEM_BYTES[elem.split("::")[-1]], int(d), int(dv), int(rows or 16))
        out[key] = max(out.get(key, 0), regs)
    return sorted(k + (r,) for k, r in out.items())


def header(entries, nvcc_version):
    lines = ["#pragma once",
             f"// Registers a thread of gpu/decode's split kernels as ptxas compiled them for sm_90 ({nvcc_version}, the",
             "// release build's flags; fp16 and bf16 the more of the two). `python3 gpu/tools/decode_registers.py BUILD`",
             "// writes this file. The simulator's occupancy of a decode tile reads them: decode-v2's d64 instance, at",
             "// 127, holds four CTAs an SM where the 255 of a generic split-KV tile would hold two.",
             "",
             "namespace flashsim::gpu::decode {",
             "",
             "struct DecodeRegisters {",
             "  bool tensor_cores;  // decode-v2 (mma.sync); decode-v1 otherwise",
             "  int elem_bytes, d, dv, rows, registers;",
             "};",
             "",
             "inline constexpr DecodeRegisters kDecodeRegistersSm90[] = {"]
    lines += [f"    {{{'true' if mma else 'false'}, {e}, {d}, {dv}, {rows}, {regs}}}," for mma, e, d, dv, rows, regs in entries]
    lines += ["};", "", "}  // namespace flashsim::gpu::decode"]
    return "\n".join(lines) + "\n"


def table_entries(text):
    """The entries of a registers_sm90.h."""
    return sorted((m[0] == "true", int(m[1]), int(m[2]), int(m[3]), int(m[4]), int(m[5])) for m in re.findall(
        r"\{(true|false), (\d+), (\d+), (\d+), (\d+), (\d+)\}", text))


def main(argv):
    check = None
    if len(argv) == 3 and argv[0] == "--check":
        check, argv = argv[1], argv[2:]
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    path = os.path.join(argv[0], "compile_commands.json")
    try:
        with open(path) as f:
            cmd = next(e for e in json.load(f) if e["file"].endswith("gpu/decode/decode_launch.cu"))
    except (OSError, StopIteration, ValueError) as e:
        print(f"decode_registers.py: no compile command of gpu/decode/decode_launch.cu in {path}: {e!r}", file=sys.stderr)
        return 2
    args = shlex.split(cmd["command"])
    if check:
        with open(check) as f:
            text = f.read()
        table = table_entries(text)
        unoptimized = "-Xcicc=-O0" in args or any(a == "-Xptxas" and b == "-O0" for a, b in zip(args, args[1:]))
        version = re.search(r"release [\d.]+, V([\d.]+)", subprocess.run([args[0], "--version"], capture_output=True,
                                                                text=True).stdout)
        made_by = re.search(r"sm_90 \(CUDA ([\d.]+)", text)
        if unoptimized or "sm_90" not in " ".join(args) or not version or not made_by or \
                version.group(1) != made_by.group(1):
            print("skipped: unoptimized device code, no sm_90, or another nvcc than the table's")
            return 77
    out = args.index("-o")
    args[out + 1] = os.devnull
    log = subprocess.run(args + ["-Xptxas", "-v"], cwd=cmd["directory"], capture_output=True, text=True)
    if log.returncode != 0:
        print(log.stderr[-2000:], file=sys.stderr)
        return 1
    cxxfilt = shutil.which("c++filt")
    demangle = (lambda xs: subprocess.run([cxxfilt], input="\n".join(xs), capture_output=True, text=True)
                .stdout.splitlines()) if cxxfilt else None
    entries = parse(log.stderr + log.stdout, demangle)
    if not entries:
        print("decode_registers.py: ptxas compiled no decode split kernel (FLASHSIM_DECODE_INSTANCES=all?)",
              file=sys.stderr)
        return 1
    if check:
        listed = {e[:5]: e[5] for e in table}
        wrong = [e for e in entries if listed.get(e[:5]) != e[5]]
        for e in wrong:
            print(f"{e[:5]}: {e[5]} registers, the table {listed.get(e[:5], 'none')}: rewrite it (gpu/tools/decode_registers.py)")
        if not wrong:
            print(f"{len(entries)} split-kernel instances compile to the table's registers")
        return 1 if wrong else 0
    version = re.search(r"release [\d.]+, V([\d.]+)", subprocess.run([args[0], "--version"], capture_output=True,
                                                            text=True).stdout)
    sys.stdout.write(header(entries, f"CUDA {version.group(1) if version else '?'}"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
