"""Issue 31's causal forward reads, measured from the schedule instead of a cache model: for each problem of a
re-read held-out set, SDPA's flash forward under ncu (DRAM bytes, time, launch and occupancy), then
probes/fwd_mimic.cu with the kernel's tiles, warps and resident CTAs, its "math" spin set so that it takes the
kernel's time and its register spills (the kernel's local-memory bytes, spread over its steps), under ncu too.
    python3 bench/gpu/fwd_mimic.py [--set 1|2|3] measure OUT     # on the GPU machine (nvcc builds the probe)
    python3 bench/gpu/fwd_mimic.py table OUT                   # anywhere: SDPA's reads against the mimic's
The rule, fixed before set 3 was measured: a causal forward's read range ends at the smaller of the adverse L2's
bound and the mimic's reads times r, r the largest ratio of SDPA's reads to its mimic's over sets 1 and 2 (the
same run), plus the causal forward's floor (the 5.4% run-to-run spread); set 3 is held out against it."""
import os
import re
import subprocess
import sys

import heldout
import ncu
import reread_heldout

HERE = os.path.dirname(os.path.abspath(__file__))
SDPA_METRICS = ("dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,launch__occupancy_limit_registers,"
                "launch__occupancy_limit_shared_mem,launch__occupancy_limit_warps,launch__occupancy_limit_blocks,"
                "launch__block_size,launch__grid_size,l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum,"
                "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum")
MIMIC_METRICS = ("dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,"
                 "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum")
TRAITS = re.compile(r"Flash_fwd_kernel_traits<\s*(\d+),\s*(\d+),\s*(\d+),\s*(\d+)")


def one_kernel(path):
    metrics, names = ncu.read_metrics(path)
    if len(metrics) != 1:
        raise ValueError(f"{path}: {len(metrics)} kernels profiled, expected 1")
    (kid, m), = metrics.items()
    return m, names[kid]


def measure(out, problems):
    os.makedirs(out, exist_ok=True)
    binary = os.path.join(out, "fwd_mimic")
    subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-I" + os.path.join(HERE, "probes"), "-o", binary,
                    os.path.join(HERE, "probes", "fwd_mimic.cu")], check=True)
    for problem in problems:
        b, h, hkv, n, d, causal = problem
        tag = "_".join(map(str, problem[:5]))
        sdpa = os.path.join(out, f"sdpa_{tag}.csv")
        program = [sys.executable, os.path.join(HERE, "sdpa.py"), "once"] + [str(x) for x in problem]
        with open(sdpa, "w") as f, open(sdpa[:-4] + ".err", "w") as err:
            subprocess.run(ncu.command(SDPA_METRICS, program, kernel_regex="flash_fwd"), stdout=f, stderr=err)
        try:
            m, name = one_kernel(sdpa)
        except (ValueError, OSError, IndexError) as e:
            print(f"{problem}: SDPA report unreadable ({e})", flush=True)
            continue
        t = TRAITS.search(name)
        if not t or "splitkv" in name:
            print(f"{problem}: not flash_fwd_kernel ({name[:80]})", flush=True)
            continue
        _, br, bc, warps = (int(x) for x in t.groups())
        ctas = int(min(m[k] for k in m if k.startswith("launch__occupancy_limit_")))
        shape = [str(x) for x in (b, h, hkv, n, d, br, bc, warps, ctas, causal)] + [
            f"{m.get('l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum', 0):.0f}",
            f"{m.get('l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum', 0):.0f}"]
        cal = subprocess.run([binary] + shape + ["calibrate", f"{m['gpu__time_duration.sum'] / 1e3:.2f}"],
                             capture_output=True, text=True)
        with open(os.path.join(out, f"calibrate_{tag}.txt"), "w") as f:
            f.write(cal.stdout + cal.stderr)
        spin = cal.stdout.split()[1] if cal.returncode == 0 and cal.stdout.startswith("spin") else None
        for label, s in (("mimic", spin),):
            if s is None:
                continue
            path = os.path.join(out, f"{label}_{tag}.csv")
            with open(path, "w") as f, open(path[:-4] + ".err", "w") as err:
                subprocess.run(ncu.command(MIMIC_METRICS, [binary] + shape + ["measure", s],
                                           kernel_regex="mimic_measured"), stdout=f, stderr=err)
        print(f"{problem}: Br{br} Bc{bc} w{warps} {ctas} CTAs/SM, spin {spin}", flush=True)


SENSITIVITY = [(4, 8, 4, 14483, 256, 1), (2, 16, 16, 14079, 256, 1), (8, 8, 8, 15872, 128, 1),
               (7, 12, 1, 16064, 128, 1), (7, 32, 4, 11795, 64, 1), (6, 8, 4, 8896, 96, 1)]


def sensitivity(out):
    """How much a mimic's reads move with what the kernel's time does not pin down: the mimic built without the
    spill code and with it (spills off), each calibrated to SDPA's time; the first measured twice, and at 0.8x and
    1.2x its spin."""
    os.makedirs(out, exist_ok=True)
    src = os.path.join(HERE, "probes", "fwd_mimic.cu")
    binaries = {"plain": os.path.join(out, "fwd_mimic_plain"), "spillcode": os.path.join(out, "fwd_mimic")}
    for name, binary in binaries.items():
        extra = ["-DFWD_MIMIC_NO_SPILL_CODE"] if name == "plain" else []
        subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-I" + os.path.join(HERE, "probes"), "-o", binary, src] + extra,
                       check=True)
    for problem in SENSITIVITY:
        b, h, hkv, n, d, causal = problem
        tag = "_".join(map(str, problem[:5]))
        sdpa = os.path.join(out, f"sdpa_{tag}.csv")
        program = [sys.executable, os.path.join(HERE, "sdpa.py"), "once"] + [str(x) for x in problem]
        with open(sdpa, "w") as f, open(sdpa[:-4] + ".err", "w") as err:
            subprocess.run(ncu.command(SDPA_METRICS, program, kernel_regex="flash_fwd"), stdout=f, stderr=err)
        m, name = one_kernel(sdpa)
        _, br, bc, warps = (int(x) for x in TRAITS.search(name).groups())
        ctas = int(min(m[k] for k in m if k.startswith("launch__occupancy_limit_")))
        shape = [str(x) for x in (b, h, hkv, n, d, br, bc, warps, ctas, causal, 0, 0)]
        compulsory = (b * h * n * d + 2 * b * hkv * n * d) * 2
        line = [f"b{b} h{h}/{hkv} n{n} d{d}: SDPA {m['dram__bytes_read.sum'] / compulsory:.2f}x"]
        for variant, binary in binaries.items():
            cal = subprocess.run([binary] + shape + ["calibrate", f"{m['gpu__time_duration.sum'] / 1e3:.2f}"],
                                 capture_output=True, text=True)
            spin = int(cal.stdout.split()[1])
            runs = [("", spin), ("again", spin)] + ([("x0.8", int(spin * 0.8)), ("x1.2", int(spin * 1.2))]
                                                    if variant == "plain" else [])
            for label, s in runs:
                path = os.path.join(out, f"{variant}{label}_{tag}.csv")
                with open(path, "w") as f, open(path[:-4] + ".err", "w") as err:
                    subprocess.run(ncu.command(MIMIC_METRICS, [binary] + shape + ["measure", str(s)],
                                               kernel_regex="mimic_measured"), stdout=f, stderr=err)
                mm, _ = one_kernel(path)
                line.append(f"{variant}{label or ''} spin {s} {mm['dram__bytes_read.sum'] / compulsory:.2f}x "
                            f"{mm['gpu__time_duration.sum'] / 1e3:.0f} us")
        print("; ".join(line) + f"; SDPA {m['gpu__time_duration.sum'] / 1e3:.0f} us", flush=True)


SWEEP = [(4, 8, 4, 14483, 256, 1), (2, 16, 16, 14079, 256, 1)]
SPILLED = [(8, 8, 8, 15872, 128, 1), (7, 12, 1, 16064, 128, 1), (3, 12, 3, 9841, 128, 1), (7, 32, 4, 11795, 64, 1)]


def sdpa_launch(out, problem):
    """SDPA's forward of `problem` under ncu: (metrics, [mimic's shape arguments with the kernel's spills])."""
    b, h, hkv, n, d, causal = problem
    sdpa = os.path.join(out, "sdpa_" + "_".join(map(str, problem[:5])) + ".csv")
    program = [sys.executable, os.path.join(HERE, "sdpa.py"), "once"] + [str(x) for x in problem]
    with open(sdpa, "w") as f, open(sdpa[:-4] + ".err", "w") as err:
        subprocess.run(ncu.command(SDPA_METRICS, program, kernel_regex="flash_fwd"), stdout=f, stderr=err)
    m, name = one_kernel(sdpa)
    _, br, bc, warps = (int(x) for x in TRAITS.search(name).groups())
    ctas = int(min(m[k] for k in m if k.startswith("launch__occupancy_limit_")))
    return m, [str(x) for x in (b, h, hkv, n, d, br, bc, warps, ctas, causal)] + [
        f"{m.get('l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum', 0):.0f}",
        f"{m.get('l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum', 0):.0f}"]


def mimic_reads(out, binary, shape, spin, label):
    path = os.path.join(out, f"{label}_{'_'.join(shape[:5])}_spin{spin}.csv")
    with open(path, "w") as f, open(path[:-4] + ".err", "w") as err:
        subprocess.run(ncu.command(MIMIC_METRICS, [binary] + shape + ["measure", str(spin)],
                                   kernel_regex="mimic_measured"), stdout=f, stderr=err)
    return one_kernel(path)[0]


def sweep(out):
    """The d256 mimics' reads against their spin (0 .. 6000 cycles a step), and the d64 / d128 mimics with the
    kernel's spills (a frame of as many words as a step stores)."""
    os.makedirs(out, exist_ok=True)
    binary = os.path.join(out, "fwd_mimic")
    subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-I" + os.path.join(HERE, "probes"), "-o", binary,
                    os.path.join(HERE, "probes", "fwd_mimic.cu")], check=True)
    for problem in SWEEP + SPILLED:
        b, h, hkv, n, d, _ = problem
        compulsory = (b * h * n * d + 2 * b * hkv * n * d) * 2
        m, shape = sdpa_launch(out, problem)
        line = [f"b{b} h{h}/{hkv} n{n} d{d}: SDPA {m['dram__bytes_read.sum'] / compulsory:.2f}x "
                f"{m['gpu__time_duration.sum'] / 1e3:.0f} us"]
        if problem in SWEEP:
            for spin in (0, 1000, 2000, 3000, 4000, 5000, 6000):
                mm = mimic_reads(out, binary, shape[:10] + ["0", "0"], spin, "sweep")
                line.append(f"spin {spin}: {mm['dram__bytes_read.sum'] / compulsory:.2f}x "
                            f"{mm['gpu__time_duration.sum'] / 1e3:.0f} us")
        else:
            cal = subprocess.run([binary] + shape + ["calibrate", f"{m['gpu__time_duration.sum'] / 1e3:.2f}"],
                                 capture_output=True, text=True)
            spin = int(cal.stdout.split()[1])
            mm = mimic_reads(out, binary, shape, spin, "spilled")
            line.append(f"with spills (st {shape[10]} B, ld {shape[11]} B), spin {spin}: "
                        f"{mm['dram__bytes_read.sum'] / compulsory:.2f}x {mm['gpu__time_duration.sum'] / 1e3:.0f} us, "
                        f"local st {mm.get('l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum', 0) / 1e6:.0f} MB")
        print("; ".join(line), flush=True)


def table(out):
    rows = []
    for f in sorted(os.listdir(out)):
        if not (f.startswith("sdpa_") and f.endswith(".csv")):
            continue
        tag = f[5:-4]
        b, h, hkv, n, d = (int(x) for x in tag.split("_"))
        compulsory = (b * h * n * d + 2 * b * hkv * n * d) * 2
        got = {}
        for label in ("sdpa", "mimic", "mimic_r2"):
            try:
                m, _ = one_kernel(os.path.join(out, f"{label}_{tag}.csv"))
                got[label] = m
            except (ValueError, OSError, IndexError):
                pass
        if "sdpa" not in got or "mimic" not in got:
            print(f"b{b} h{h}/{hkv} n{n} d{d}: incomplete")
            continue
        s, mm = got["sdpa"], got["mimic"]
        r2 = got["mimic_r2"]["dram__bytes_read.sum"] / compulsory if "mimic_r2" in got else float("nan")
        spills = (s.get("l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum", 0) / 1e6,
                  mm.get("l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum", 0) / 1e6)
        ratio = s["dram__bytes_read.sum"] / mm["dram__bytes_read.sum"]
        rows.append(ratio)
        print(f"b{b} h{h}/{hkv} n{n} d{d}: reads / compulsory: SDPA {s['dram__bytes_read.sum'] / compulsory:5.2f}x, "
              f"mimic {mm['dram__bytes_read.sum'] / compulsory:5.2f}x (again {r2:5.2f}x); SDPA / mimic {ratio:5.3f}; "
              f"spill stores {spills[0]:.0f} / {spills[1]:.0f} MB; "
              f"time SDPA {s['gpu__time_duration.sum'] / 1e3:8.1f} us, mimic {mm['gpu__time_duration.sum'] / 1e3:8.1f} us")
    if rows:
        rows.sort()
        print(f"{len(rows)} problems: SDPA / mimic reads {rows[0]:.3f} .. {rows[-1]:.3f}, median {rows[len(rows) // 2]:.3f}")


def main():
    picked = heldout.pick_set(sys.argv, reread_heldout.SETS, reread_heldout.DATA, "1", "fwd_mimic.py")
    if picked is None:
        return 2
    reread_heldout.SEED, reread_heldout.OUT = picked
    if len(sys.argv) == 3 and sys.argv[1] == "measure":
        return measure(sys.argv[2], reread_heldout.problems())
    if len(sys.argv) == 3 and sys.argv[1] == "sweep":
        return sweep(sys.argv[2])
    if len(sys.argv) == 3 and sys.argv[1] == "sensitivity":
        return sensitivity(sys.argv[2])
    if len(sys.argv) == 3 and sys.argv[1] == "table":
        return table(sys.argv[2])
    print("usage: fwd_mimic.py [--set 1|2|3] (measure OUT | table OUT)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
