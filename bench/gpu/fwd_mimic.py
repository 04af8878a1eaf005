"""Issue 31's causal forward reads, measured from the schedule instead of a cache model: for each problem of a
re-read held-out set, SDPA's flash forward under ncu (DRAM bytes, time, launch and occupancy), then
probes/fwd_mimic.cu with the kernel's tiles, warps and resident CTAs, its "math" spin set so that it takes the
kernel's time and its register spills (the kernel's local-memory bytes, spread over its steps), under ncu too.
    python3 bench/gpu/fwd_mimic.py [--set 1|2|3] measure OUT     # on the GPU machine (nvcc builds the probe)
    python3 bench/gpu/fwd_mimic.py table OUT                   # anywhere: SDPA's reads against the mimic's
    python3 bench/gpu/fwd_mimic.py evaluate FLASHSIM HW FIT_DIR... -- CHECK_DIR...   # the rule below
    python3 bench/gpu/fwd_mimic.py counters OUT                # on the GPU machine: COUNTED's L2 and spill counters
    python3 bench/gpu/fwd_mimic.py counter-table OUT           # anywhere: SDPA's counters beside its mimic's
    python3 bench/gpu/fwd_mimic.py trace OUT                   # on the GPU machine: TRACED's schedules, as run
    python3 bench/gpu/fwd_mimic.py schedule TRACE...           # anywhere: how a traced schedule ran
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
# the DRAM counters, the time and the local-memory (spill) bytes; SDPA's also the launch and its occupancy limits
MIMIC_METRICS = ncu.LAUNCH + ",l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum"
SDPA_METRICS = MIMIC_METRICS + "," + ",".join(
    "launch__" + m for m in ("occupancy_limit_registers", "occupancy_limit_shared_mem", "occupancy_limit_warps",
                             "occupancy_limit_blocks", "block_size", "grid_size"))
# the traced mimic's: also the L2's sectors read from the SMs and their lookups, those one L2 partition asked the
# other for (the LTC fabric) and their lookups, and the sectors filled from DRAM
TRACE_METRICS = MIMIC_METRICS + "," + ",".join(
    "lts__" + m + ".sum" for m in (
        "t_sectors_srcunit_tex_op_read", "t_sectors_srcunit_tex_op_write", "t_sectors_srcunit_tex_op_read_lookup_hit",
        "t_sectors_srcunit_tex_op_read_lookup_miss", "t_sectors_srcunit_ltcfabric_op_read",
        "t_sectors_srcunit_ltcfabric_op_read_lookup_hit", "t_sectors_srcunit_ltcfabric_op_read_lookup_miss",
        "d_sectors_fill_device"))
# SDPA's and its mimic's, side by side: the traced set, both L2 write counters, the L1's local-memory misses (spill
# traffic that reaches the L2), the carveout and the registers
COUNTER_METRICS = SDPA_METRICS + "," + ",".join(
    "lts__" + m + ".sum" for m in (
        "t_sectors_srcunit_tex_op_read", "t_sectors_srcunit_tex_op_write", "t_sectors_srcunit_tex_op_read_lookup_hit",
        "t_sectors_srcunit_tex_op_read_lookup_miss", "t_sectors_srcunit_ltcfabric_op_read",
        "t_sectors_srcunit_ltcfabric_op_read_lookup_hit", "t_sectors_srcunit_ltcfabric_op_read_lookup_miss",
        "d_sectors_fill_device", "t_sectors_srcunit_tex_op_write_lookup_miss")) + (
    ",l1tex__t_sectors_pipe_lsu_mem_local_op_ld_lookup_miss.sum,l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum,"
    "l1tex__m_xbar2l1tex_read_bytes.sum,l1tex__m_l1tex2xbar_write_bytes.sum,launch__shared_mem_config_size,"
    "launch__shared_mem_per_block_dynamic,launch__shared_mem_per_block_static,launch__registers_per_thread,"
    "sm__warps_active.avg.pct_of_peak_sustained_active")
TRAITS = re.compile(r"Flash_fwd_kernel_traits<\s*(\d+),\s*(\d+),\s*(\d+),\s*(\d+)")


def one_kernel(path):
    metrics, names = ncu.read_metrics(path)
    if len(metrics) != 1:
        raise ValueError(f"{path}: {len(metrics)} kernels profiled, expected 1")
    (kid, m), = metrics.items()
    return m, names[kid]


def build(out, name="fwd_mimic", defines=()):
    """nvcc's build of probes/fwd_mimic.cu in `out` (-D `defines`): the binary's path."""
    binary = os.path.join(out, name)
    subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-I" + os.path.join(HERE, "probes"), "-o", binary,
                    os.path.join(HERE, "probes", "fwd_mimic.cu")] + ["-D" + d for d in defines], check=True)
    return binary


def sdpa_launch(out, problem, metrics=SDPA_METRICS):
    """SDPA's forward of `problem` under ncu into out/sdpa_TAG.csv: (its metrics, the mimic's shape arguments: the
    kernel's tiles, warps, resident CTAs an SM and local-memory store and load bytes). ValueError when the report
    is unreadable or is not of flash_fwd_kernel."""
    b, h, hkv, n, d, causal = problem
    sdpa = os.path.join(out, "sdpa_" + "_".join(map(str, problem[:5])) + ".csv")
    program = [sys.executable, os.path.join(HERE, "sdpa.py"), "once"] + [str(x) for x in problem]
    with open(sdpa, "w") as f, open(sdpa[:-4] + ".err", "w") as err:
        subprocess.run(ncu.command(metrics, program, kernel_regex="flash_fwd"), stdout=f, stderr=err)
    try:
        m, name = one_kernel(sdpa)
    except (OSError, IndexError) as e:
        raise ValueError(f"SDPA report unreadable ({e})") from e
    t = TRAITS.search(name)
    if not t or "splitkv" in name:
        raise ValueError(f"not flash_fwd_kernel ({name[:80]})")
    _, br, bc, warps = (int(x) for x in t.groups())
    ctas = int(min(m[k] for k in m if k.startswith("launch__occupancy_limit_")))
    return m, [str(x) for x in (b, h, hkv, n, d, br, bc, warps, ctas, causal)] + [
        f"{m.get('l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum', 0):.0f}",
        f"{m.get('l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum', 0):.0f}"]


def calibrate(binary, shape, kernel_metrics, log=None):
    """The spin at which the mimic takes the kernel's time (None when the probe failed); says when it missed by
    over 5% (the secant stops at spin 0 where the time falls as the spin grows)."""
    cal = subprocess.run([binary] + shape + ["calibrate", f"{kernel_metrics['gpu__time_duration.sum'] / 1e3:.2f}"],
                         capture_output=True, text=True)
    if log:
        with open(log, "w") as f:
            f.write(cal.stdout + cal.stderr)
    if cal.returncode != 0 or not cal.stdout.startswith("spin"):
        print(f"{shape[:5]}: the mimic's calibration failed: {(cal.stdout + cal.stderr).strip()[:200]}", flush=True)
        return None
    words = cal.stdout.split()
    spin, took, target = int(words[1]), float(words[3]), float(words[5])
    if abs(took - target) > 0.05 * target:
        print(f"{shape[:5]}: the mimic's calibration missed the kernel's time ({took:.0f} us at spin {spin}, the "
              f"kernel {target:.0f} us)", flush=True)
    return spin


def mimic_reads(binary, shape, spin, path, metrics=MIMIC_METRICS, trace=None):
    """One launch of the mimic at `spin` under ncu into `path` (recording its schedule into `trace` where given):
    its metrics."""
    mode = ["trace", str(spin), trace] if trace else ["measure", str(spin)]
    with open(path, "w") as f, open(path[:-4] + ".err", "w") as err:
        subprocess.run(ncu.command(metrics, [binary] + shape + mode, kernel_regex="mimic_measured"), stdout=f,
                       stderr=err)
    return one_kernel(path)[0]


def calibrated(out, problems, metrics=SDPA_METRICS):
    """For each problem whose SDPA forward ran under ncu: (problem, tag, the probe's binary, SDPA's metrics, the
    mimic's shape arguments, the spin that takes the kernel's time or None); a line for each that did not run."""
    os.makedirs(out, exist_ok=True)
    binary = build(out)
    for problem in problems:
        tag = "_".join(map(str, problem[:5]))
        try:
            m, shape = sdpa_launch(out, problem, metrics)
        except ValueError as e:
            print(f"{problem}: {e}", flush=True)
            continue
        yield problem, tag, binary, m, shape, calibrate(binary, shape, m, os.path.join(out, f"calibrate_{tag}.txt"))


def measure(out, problems):
    """Each problem: SDPA's forward, then its mimic (the kernel's time and spills) under ncu."""
    for problem, tag, binary, _, shape, spin in calibrated(out, problems):
        if spin is not None:
            try:
                mimic_reads(binary, shape, spin, os.path.join(out, f"mimic_{tag}.csv"))
            except (ValueError, OSError, IndexError) as e:
                print(f"{problem}: the mimic's report is unreadable ({e})", flush=True)
        print(f"{problem}: Br{shape[5]} Bc{shape[6]} w{shape[7]} {shape[8]} CTAs/SM, spin {spin}", flush=True)


SENSITIVITY = [(4, 8, 4, 14483, 256, 1), (2, 16, 16, 14079, 256, 1), (8, 8, 8, 15872, 128, 1),
               (7, 12, 1, 16064, 128, 1), (7, 32, 4, 11795, 64, 1), (6, 8, 4, 8896, 96, 1)]


def sensitivity(out):
    """How much a mimic's reads move with what the kernel's time does not pin down: the mimic built without the
    spill code and with it (spills off), each calibrated to SDPA's time; the first measured twice, and at 0.8x and
    1.2x its spin."""
    os.makedirs(out, exist_ok=True)
    binaries = {"plain": build(out, "fwd_mimic_plain", ["FWD_MIMIC_NO_SPILL_CODE"]), "spillcode": build(out)}
    for problem in SENSITIVITY:
        b, h, hkv, n, d, _ = problem
        tag = "_".join(map(str, problem[:5]))
        m, shape = sdpa_launch(out, problem)
        shape = shape[:10] + ["0", "0"]
        compulsory = compulsory_reads(*problem[:5])
        line = [f"b{b} h{h}/{hkv} n{n} d{d}: SDPA {m['dram__bytes_read.sum'] / compulsory:.2f}x"]
        for variant, binary in binaries.items():
            spin = calibrate(binary, shape, m)
            runs = [("", spin), ("again", spin)] + ([("x0.8", int(spin * 0.8)), ("x1.2", int(spin * 1.2))]
                                                    if variant == "plain" else [])
            for label, s in runs:
                mm = mimic_reads(binary, shape, s, os.path.join(out, f"{variant}{label}_{tag}.csv"))
                line.append(f"{variant}{label} spin {s} {mm['dram__bytes_read.sum'] / compulsory:.2f}x "
                            f"{mm['gpu__time_duration.sum'] / 1e3:.0f} us")
        print("; ".join(line) + f"; SDPA {m['gpu__time_duration.sum'] / 1e3:.0f} us", flush=True)


SWEEP = [(4, 8, 4, 14483, 256, 1), (2, 16, 16, 14079, 256, 1)]
SPILLED = [(8, 8, 8, 15872, 128, 1), (7, 12, 1, 16064, 128, 1), (3, 12, 3, 9841, 128, 1), (7, 32, 4, 11795, 64, 1)]


def sweep(out):
    """The d256 mimics' reads against their spin (0 .. 6000 cycles a step), and the d64 / d128 mimics with the
    kernel's spills (a frame of as many words as a step stores)."""
    os.makedirs(out, exist_ok=True)
    binary = build(out)
    for problem in SWEEP + SPILLED:
        b, h, hkv, n, d, _ = problem
        tag = "_".join(map(str, problem[:5]))
        compulsory = compulsory_reads(*problem[:5])
        m, shape = sdpa_launch(out, problem)
        line = [f"b{b} h{h}/{hkv} n{n} d{d}: SDPA {m['dram__bytes_read.sum'] / compulsory:.2f}x "
                f"{m['gpu__time_duration.sum'] / 1e3:.0f} us"]
        if problem in SWEEP:
            for spin in (0, 1000, 2000, 3000, 4000, 5000, 6000):
                mm = mimic_reads(binary, shape[:10] + ["0", "0"], spin,
                                 os.path.join(out, f"sweep_{tag}_spin{spin}.csv"))
                line.append(f"spin {spin}: {mm['dram__bytes_read.sum'] / compulsory:.2f}x "
                            f"{mm['gpu__time_duration.sum'] / 1e3:.0f} us")
        else:
            spin = calibrate(binary, shape, m)
            mm = mimic_reads(binary, shape, spin, os.path.join(out, f"spilled_{tag}_spin{spin}.csv"))
            line.append(f"with spills (st {shape[10]} B, ld {shape[11]} B), spin {spin}: "
                        f"{mm['dram__bytes_read.sum'] / compulsory:.2f}x {mm['gpu__time_duration.sum'] / 1e3:.0f} us, "
                        f"local st {mm.get('l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum', 0) / 1e6:.0f} MB")
        print("; ".join(line), flush=True)


# Problems of sets 1 and 2 whose mimic reads are furthest from every cache model run on the schedule in lockstep:
# the d256 problems read 1.3 .. 4.6x where an LRU of the L2's size gives 1.0 .. 1.5x, the GQA d64 ones less than
# it gives.
TRACED = [(4, 8, 8, 5312, 256, 1), (4, 8, 4, 14483, 256, 1), (2, 16, 16, 14079, 256, 1), (8, 8, 8, 15872, 128, 1),
          (7, 12, 1, 16064, 128, 1), (7, 32, 4, 11795, 64, 1), (6, 32, 8, 14159, 64, 1), (2, 16, 16, 4480, 256, 1)]


def trace(out):
    """Each TRACED problem: SDPA's forward under ncu, the mimic calibrated to its time, then the mimic under ncu
    recording the schedule it ran (out/trace_TAG.bin, probes/fwd_mimic.cu's `trace`) beside its DRAM reads."""
    for problem, tag, binary, m, shape, spin in calibrated(out, TRACED):
        if spin is None:
            continue
        try:
            mm = mimic_reads(binary, shape, spin, os.path.join(out, f"mimic_{tag}.csv"), TRACE_METRICS,
                             os.path.join(out, f"trace_{tag}.bin"))
        except (ValueError, OSError, IndexError) as e:
            print(f"{problem}: the mimic's report is unreadable ({e})", flush=True)
            continue
        c = compulsory_reads(*problem[:5])
        print(f"{problem}: Br{shape[5]} Bc{shape[6]} w{shape[7]} {shape[8]} CTAs/SM, spin {spin}: SDPA "
              f"{m['dram__bytes_read.sum'] / c:.2f}x, traced mimic {mm['dram__bytes_read.sum'] / c:.2f}x the "
              f"compulsory reads", flush=True)


# d128 forwards SDPA re-reads more than its mimic does (run 5: 1.39, 1.19, 1.13x), two it does not (1.01, 1.03x),
# a failure of blind set 4 (l2_partitioned_h200_2026-11-29) and a d64 control (1.03x)
COUNTED = [(3, 12, 6, 13623, 128, 1), (8, 8, 2, 9623, 128, 1), (7, 8, 8, 6657, 128, 1), (8, 8, 8, 15872, 128, 1),
           (2, 32, 32, 8320, 128, 1), (3, 16, 16, 4032, 128, 1), (7, 32, 4, 11795, 64, 1)]


def counters(out):
    """Each COUNTED problem: SDPA's forward and its calibrated mimic under ncu with COUNTER_METRICS (where their
    streams differ: L2 reads and writes from the SMs, spill misses in L1, the carveout); then the resource usage
    cuobjdump gives PyTorch's sm_90 kernels into out/res_usage.txt (their stack frames: sdpa_stack.py
    --from-cuobjdump makes its table from it). A counter
    this ncu does not know is left out (one line says which): one unknown name would void every report."""
    known = subprocess.run(["ncu", "--query-metrics", "--chip", "gh100"], capture_output=True, text=True).stdout
    names = set(line.split()[0] for line in known.splitlines() if line.strip())
    metrics = [m for m in COUNTER_METRICS.split(",") if m.startswith(("launch__", "gpu__", "dram__"))
               or m.split(".")[0] in names or not names]
    if len(metrics) < len(COUNTER_METRICS.split(",")):
        print("left out (unknown to ncu):", sorted(set(COUNTER_METRICS.split(",")) - set(metrics)), flush=True)
    for problem, tag, binary, m, shape, spin in calibrated(out, COUNTED, ",".join(metrics)):
        if spin is None:
            continue
        try:
            mimic_reads(binary, shape, spin, os.path.join(out, f"mimic_{tag}.csv"), ",".join(metrics))
        except (ValueError, OSError, IndexError) as e:
            print(f"{problem}: the mimic's report is unreadable ({e})", flush=True)
        print(f"{problem}: spin {spin}", flush=True)
    import torch  # the GPU machine's PyTorch: where its flash kernels are
    lib = os.path.join(os.path.dirname(torch.__file__), "lib")
    with open(os.path.join(out, "res_usage.txt"), "w") as f:
        for so in sorted(os.listdir(lib)):
            if so.startswith("libtorch_cuda"):
                f.write(subprocess.run(["cuobjdump", "-res-usage", "-arch", "sm_90", os.path.join(lib, so)],
                                       capture_output=True, text=True, timeout=400).stdout)


def counter_table(out):
    """SDPA's counters beside its mimic's, per problem, in compulsory reads (sectors of 32 bytes)."""
    rows = [("DRAM read", "dram__bytes_read.sum", 1), ("DRAM write", "dram__bytes_write.sum", 1),
            ("SM->L2 read", "lts__t_sectors_srcunit_tex_op_read.sum", 32),
            ("  miss", "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum", 32),
            ("fabric read", "lts__t_sectors_srcunit_ltcfabric_op_read.sum", 32),
            ("  miss", "lts__t_sectors_srcunit_ltcfabric_op_read_lookup_miss.sum", 32),
            ("SM->L2 write", "lts__t_sectors_srcunit_tex_op_write.sum", 32),
            ("  miss", "lts__t_sectors_srcunit_tex_op_write_lookup_miss.sum", 32),
            ("local ld", "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum", 32),
            ("  L1 miss", "l1tex__t_sectors_pipe_lsu_mem_local_op_ld_lookup_miss.sum", 32),
            ("local st", "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum", 1),
            ("L2->L1 read", "l1tex__m_xbar2l1tex_read_bytes.sum", 1),
            ("L1->L2 write", "l1tex__m_l1tex2xbar_write_bytes.sum", 1)]
    raw = [("carveout KB", "launch__shared_mem_config_size", 1e-3), ("dyn smem KB", "launch__shared_mem_per_block_dynamic", 1e-3),
           ("static smem KB", "launch__shared_mem_per_block_static", 1e-3), ("registers", "launch__registers_per_thread", 1),
           ("warps active %", "sm__warps_active.avg.pct_of_peak_sustained_active", 1),
           ("time us", "gpu__time_duration.sum", 1e-3)]
    for (b, h, hkv, n, d), s, mm in pairs(out):
        c = compulsory_reads(b, h, hkv, n, d)
        print(f"b{b} h{h}/{hkv} n{n} d{d}            SDPA     mimic   (in compulsory reads, {c / 1e6:.0f} MB)")
        for label, key, unit in rows:
            print(f"  {label:14s} {s.get(key, float('nan')) * unit / c:8.3f}  {mm.get(key, float('nan')) * unit / c:8.3f}")
        for label, key, scale in raw:
            print(f"  {label:14s} {s.get(key, float('nan')) * scale:8.1f}  {mm.get(key, float('nan')) * scale:8.1f}")
        # SDPA's DRAM bytes beyond its mimic's, over the kernel's threads (its launch: grid x block)
        threads = s.get("launch__grid_size", float("nan")) * s.get("launch__block_size", float("nan"))
        print(f"  SDPA - mimic, bytes a thread: reads {(s['dram__bytes_read.sum'] - mm['dram__bytes_read.sum']) / threads:.0f}"
              f", writes {(s['dram__bytes_write.sum'] - mm['dram__bytes_write.sum']) / threads:.0f}")
    return 0


def read_trace(path):
    """A trace of probes/fwd_mimic.cu (its write_trace): ((b, h, hkv, n, d, br, bc, ctas_per_sm), [(sm, tiles,
    times in ns: start, each K/V step, end)] in launch order). ValueError when the file is not such a trace."""
    import array
    with open(path, "rb") as f:
        head = f.readline().split()
        words = array.array("I")
        words.frombytes(f.read())
    if len(head) != 12 or head[:2] != [b"fwd_mimic", b"trace"]:
        raise ValueError(f"{path}: not a fwd_mimic trace")
    if sys.byteorder != "little":
        words.byteswap()
    shape = tuple(int(x) for x in head[2:10])
    ctas, i = [], 0
    for _ in range(int(head[10])):
        sm, tiles = words[i], words[i + 1]
        ctas.append((sm, tiles, words[i + 2:i + 4 + tiles]))
        i += tiles + 4
    if i != len(words):
        raise ValueError(f"{path}: {len(words) - i} words left after {head[10].decode()} CTAs")
    return shape, ctas


def schedule_summary(path):
    """How the traced schedule ran: the K/V steps' times, the CTAs started out of launch order, and the time
    between consecutive query blocks of one head reading the same K/V tile (one step, where CTAs walk in
    lockstep: the order a cache model replays)."""
    shape, ctas = read_trace(path)
    b, h, hkv, n, d, br, bc, per_sm = shape
    steps = sorted(t[k + 1] - t[k] for _, tiles, t in ctas for k in range(1, tiles))
    starts = [t[0] for _, _, t in ctas]
    late = sum(1 for a, b_ in zip(starts, starts[1:]) if b_ < a)
    blocks = (n + br - 1) // br
    gaps = []
    for head in range(len(ctas) // blocks):
        first_tile = [ctas[head * blocks + m][2][ctas[head * blocks + m][1]] for m in range(blocks)]  # tile 0's
        gaps += [abs(y - x) for x, y in zip(first_tile, first_tile[1:])]
    gaps.sort()
    q = lambda v, f: v[min(len(v) - 1, int(f * len(v)))]  # noqa: E731
    print(f"{os.path.basename(path)}: b{b} h{h}/{hkv} n{n} d{d} Br{br} Bc{bc}, {per_sm} CTAs an SM, {len(ctas)} CTAs "
          f"on {len(set(sm for sm, _, _ in ctas))} SMs in {max(t[-1] for _, _, t in ctas) / 1e6:.2f} ms; a K/V step "
          f"{q(steps, 0.1) / 1e3:.2f} / {q(steps, 0.5) / 1e3:.2f} / {q(steps, 0.9) / 1e3:.2f} us (10/50/90%); "
          f"{late} CTAs started before the CTA launched ahead of them; consecutive query blocks read tile 0 "
          f"{q(gaps, 0.5) / 1e3:.1f} us apart (median), {q(gaps, 0.9) / 1e3:.1f} us (90%)")
    return 0


def pairs(folder):
    """(problem (b, h, hkv, n, d), SDPA's metrics, the mimic's metrics) of each problem of `folder` that has both."""
    for f in sorted(os.listdir(folder)):
        if not (f.startswith("sdpa_") and f.endswith(".csv")):
            continue
        tag = f[5:-4]
        try:
            s, _ = one_kernel(os.path.join(folder, f))
            mm, _ = one_kernel(os.path.join(folder, f"mimic_{tag}.csv"))
        except (ValueError, OSError, IndexError):
            print(f"{folder}: {tag} incomplete (no report of SDPA or of its mimic)")
            continue
        yield tuple(int(x) for x in tag.split("_")), s, mm


def compulsory_reads(b, h, hkv, n, d):
    return (b * h * n * d + 2 * b * hkv * n * d) * 2  # Q, K and V once, bf16


def mimic_verdict(measured, lower, upper, floor, mimic, r, h, hkv):
    """The rule: the read range [lower, min(upper, mimic x r)] (mimic: the mimic's reads) plus the floor. Returns
    (bound, inside, a planted 1.5x K/V re-read (reread_heldout.py's) flagged, flagged by the L2's bound alone,
    the planted reads)."""
    bound = min(upper, mimic * r)
    planted = reread_heldout.planted_reads(measured, lower, h, hkv)
    return bound, measured <= bound + floor, planted > bound + floor, planted > upper + floor, planted


def evaluate(flashsim, hw, fit, check):
    """The rule of this file's header: r from the `fit` folders, then every folder's causal forward reads against
    it, beside the L2's bound alone."""
    ratios = [s["dram__bytes_read.sum"] / mm["dram__bytes_read.sum"] for folder in fit for _, s, mm in pairs(folder)]
    if not ratios:
        print("fwd_mimic.py: no problem with both reports in the fit folders", file=sys.stderr)
        return 2
    r = max(ratios)
    print(f"r = {r:.3f}: the largest SDPA / mimic read ratio over {', '.join(map(os.path.basename, fit))}")
    for folder in fit + check:
        inside = caught = caught_before = total = 0
        widths = []
        for (b, h, hkv, n, d), s, mm in pairs(folder):
            m = reread_heldout.read_figure(flashsim, hw, os.path.join(folder, f"sdpa_{b}_{h}_{hkv}_{n}_{d}.csv"),
                                           (b, h, hkv, n, d))
            if m is None:
                continue
            lower, upper = m["compulsory"], m["upper"]  # the rule's range starts at the compulsory bytes
            bound, ok, flagged, flagged_before, planted = mimic_verdict(
                m["measured"], lower, upper, m["tolerance_floor"], mm["dram__bytes_read.sum"], r, h, hkv)
            total += 1
            inside += ok
            caught += flagged
            caught_before += flagged_before
            widths.append(bound / lower)
            print(f"  b{b} h{h}/{hkv} n{n} d{d}: measured {m['measured'] / lower:5.2f}x the compulsory bytes; range "
                  f"up to {upper / lower:6.2f}x (L2), {bound / lower:5.2f}x (with the mimic): "
                  f"{'ok' if ok else 'FLAGGED'}; planted {planted / lower:5.2f}x "
                  f"{'flagged' if flagged else 'not flagged'}")
        if not widths:
            print(f"{os.path.basename(folder)}: no problem with both reports")
            continue
        widths.sort()
        print(f"{os.path.basename(folder)}: {inside} of {total} inside; planted flagged {caught} of {total} (the L2 "
              f"bound alone: {caught_before}); width {widths[0]:.2f} .. {widths[-1]:.2f}x, "
              f"median {widths[len(widths) // 2]:.2f}x")
    return 0


def table(out):
    """Each problem's reads (over the compulsory bytes), SDPA's and its mimic's, spills and times."""
    ratios = []
    for (b, h, hkv, n, d), s, mm in pairs(out):
        c = compulsory_reads(b, h, hkv, n, d)
        again = ""
        try:
            again = f" (again {one_kernel(os.path.join(out, f'mimic_r2_{b}_{h}_{hkv}_{n}_{d}.csv'))[0]['dram__bytes_read.sum'] / c:5.2f}x)"
        except (ValueError, OSError, IndexError):
            pass
        ratio = s["dram__bytes_read.sum"] / mm["dram__bytes_read.sum"]
        ratios.append(ratio)
        print(f"b{b} h{h}/{hkv} n{n} d{d}: reads / compulsory: SDPA {s['dram__bytes_read.sum'] / c:5.2f}x, "
              f"mimic {mm['dram__bytes_read.sum'] / c:5.2f}x{again}; SDPA / mimic {ratio:5.3f}; spill stores "
              f"{s.get('l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum', 0) / 1e6:.0f} / "
              f"{mm.get('l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum', 0) / 1e6:.0f} MB; time SDPA "
              f"{s['gpu__time_duration.sum'] / 1e3:8.1f} us, mimic {mm['gpu__time_duration.sum'] / 1e3:8.1f} us")
    if ratios:
        ratios.sort()
        print(f"{len(ratios)} problems: SDPA / mimic reads {ratios[0]:.3f} .. {ratios[-1]:.3f}, "
              f"median {ratios[len(ratios) // 2]:.3f}")
    return 0


def folders(paths):
    """Whether every path is a folder; one line on stderr for the first that is not."""
    for path in paths:
        if not os.path.isdir(path):
            print(f"fwd_mimic.py: no folder {path}", file=sys.stderr)
            return False
    return True


def main():
    picked = heldout.pick_set(sys.argv, reread_heldout.SETS, reread_heldout.DATA, "1", "fwd_mimic.py")
    if picked is None:
        return 2
    reread_heldout.SEED, reread_heldout.OUT = picked
    if len(sys.argv) == 3 and sys.argv[1] == "measure":
        return measure(sys.argv[2], reread_heldout.problems())
    if len(sys.argv) > 4 and sys.argv[1] == "evaluate" and "--" in sys.argv:
        cut = sys.argv.index("--")
        flashsim, hw, fit, check = sys.argv[2], sys.argv[3], sys.argv[4:cut], sys.argv[cut + 1:]
        if not (os.path.isfile(flashsim) and os.access(flashsim, os.X_OK)):
            print(f"fwd_mimic.py: {flashsim} is not an executable flashsim", file=sys.stderr)
            return 2
        if not folders(fit + check):
            return 2
        import derive
        derive.show_profile(flashsim, hw)  # an unknown profile: one line and exit 2
        return evaluate(flashsim, hw, fit, check)
    if len(sys.argv) == 3 and sys.argv[1] == "counters":
        return counters(sys.argv[2])
    if len(sys.argv) == 3 and sys.argv[1] == "counter-table":
        return counter_table(sys.argv[2]) if folders(sys.argv[2:]) else 2
    if len(sys.argv) == 3 and sys.argv[1] == "trace":
        return trace(sys.argv[2])
    if len(sys.argv) >= 3 and sys.argv[1] == "schedule":
        try:
            for path in sys.argv[2:]:
                schedule_summary(path)
        except (OSError, ValueError) as e:
            print(f"fwd_mimic.py: {e}", file=sys.stderr)
            return 2
        return 0
    if len(sys.argv) == 3 and sys.argv[1] == "sweep":
        return sweep(sys.argv[2])
    if len(sys.argv) == 3 and sys.argv[1] == "sensitivity":
        return sensitivity(sys.argv[2])
    if len(sys.argv) == 3 and sys.argv[1] == "table":
        return table(sys.argv[2]) if folders(sys.argv[2:]) else 2
    print("usage: fwd_mimic.py [--set 1|2|3] (measure OUT | table OUT | counters OUT | counter-table OUT | sensitivity OUT | sweep OUT | trace OUT | schedule TRACE... | "
          "evaluate FLASHSIM HW FIT_DIR... -- CHECK_DIR...)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
