"""Nsight Compute in one place: the metric sets, the problems profiled, the command line, and the CSV reader.

Metric sets (ncu --metrics):
  TRAFFIC  the 16 metrics `flashsim traffic compare` reads (bytes per level and direction, time, registers)
  DRAM     the two DRAM counters alone, which ncu collects in one pass (no replay: calibration id
           h100.ncu_replay_write_bytes in bench/calibration.json)
  TILE     pipe and stall counters the per-CTA model is checked against (h100.warp_cpi, h100.lockstep_cpi_factor)
  AUTOTUNE TILE plus the global-load counters, for fa2-v1's forward instances on bias problems
  PROBE    the L2 probes' DRAM and L2 sector counters and time
  LAUNCH   the launch probe's time and DRAM counters
  STALLS   every warp stall reason's ratio (fa2_masked_stalls.sh, fa3_stages_ncu.sh)

    python3 bench/gpu/ncu.py metrics SET     # a set's metrics, comma-separated (for a shell script's ncu)
"""
import csv
import sys

TRAFFIC = ("dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,l1tex__m_xbar2l1tex_read_bytes.sum,"
           "l1tex__m_l1tex2xbar_write_bytes.sum,l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum,"
           "l1tex__t_bytes_pipe_lsu_mem_global_op_st.sum,l1tex__t_bytes_pipe_lsu_mem_global_op_red.sum,"
           "l1tex__t_bytes_pipe_lsu_mem_global_op_atom.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum,"
           "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum,launch__registers_per_thread,"
           "launch__shared_mem_per_block_dynamic,lts__t_sectors_srcunit_tex_op_read.sum,"
           "lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sectors_srcunit_tex_op_red.sum")
DRAM = "dram__bytes_read.sum,dram__bytes_write.sum"
_STALLS = ("barrier", "short_scoreboard", "mio_throttle", "math_pipe_throttle", "long_scoreboard", "wait",
           "not_selected", "selected", "lg_throttle", "dispatch_stall", "no_instruction")
TILE = ",".join(
    ["gpu__time_duration.sum", "sm__cycles_elapsed.avg", "smsp__inst_executed.sum",
     "smsp__inst_executed_pipe_tensor_op_hmma.sum",
     "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
     "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
     "l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed"]
    + [f"smsp__average_warps_issue_stalled_{s}_per_issue_active.ratio" for s in _STALLS]
    + ["smsp__warps_active.avg.per_cycle_active", "sm__warps_active.avg.pct_of_peak_sustained_active"])
AUTOTUNE = TILE + (",smsp__inst_executed_op_global_ld.sum,smsp__inst_executed_op_ldgsts.sum,"
                   "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum")
PROBE = DRAM + ",lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,gpu__time_duration.sum"
LAUNCH = "gpu__time_duration.sum," + DRAM
STALLS = ",".join(f"smsp__average_warps_issue_stalled_{s}_per_issue_active.ratio"
                  for s in _STALLS + ("branch_resolving", "membar", "sleeping"))
SETS = {"traffic": TRAFFIC, "dram": DRAM, "tile": TILE, "autotune": AUTOTUNE, "probe": PROBE, "launch": LAUNCH,
        "stalls": STALLS}

# SDPA's FA2 problems, by set: name -> (batch, heads, heads_kv, seqlen, head_dim, causal).
# first: the 7 shapes the traffic model was written on; validation: 5 measured after it; validation2: 4 more
# (2026-11-23); validation3: 6 never seen by the DRAM interval's derivation (h100.dram_interval); validation4: 8
# measured after the adverse capacity was fixed (h100.l2_adverse_reuse_bytes); calibration: the problem of
# tests/data/ncu_fa2_h100_calibration.csv; layouts: the problem of tests/data/ncu/csv_layouts.
SHAPES = {
    "first": {
        "causal_d128_n4096": (2, 16, 16, 4096, 128, True), "d64_n1024": (8, 16, 16, 1024, 64, False),
        "d256_n1024": (4, 8, 8, 1024, 256, False), "d128_n16384_causal": (1, 8, 8, 16384, 128, True),
        "gqa_d128_n2048": (2, 32, 8, 2048, 128, False), "d128_n1000": (4, 16, 16, 1000, 128, False),
        "d64_n3000_causal": (2, 16, 16, 3000, 64, True)},
    "validation": {
        "causal_d128_n8192": (1, 16, 16, 8192, 128, True), "gqa_causal_d64_n4096": (2, 16, 4, 4096, 64, True),
        "d96_n2048": (2, 16, 16, 2048, 96, False), "d128_n512": (16, 16, 16, 512, 128, False),
        "causal_d256_n2000": (2, 8, 8, 2000, 256, True)},
    "validation2": {
        "causal_d64_n8192": (1, 16, 16, 8192, 64, True), "d128_n2048": (4, 16, 16, 2048, 128, False),
        "gqa_d64_n2048": (4, 32, 8, 2048, 64, False), "causal_d96_n4096": (2, 8, 8, 4096, 96, True)},
    "validation3": {
        "d128_n8192": (1, 16, 16, 8192, 128, False), "causal_d64_n2048": (4, 16, 16, 2048, 64, True),
        "gqa_causal_d128_n4096": (2, 32, 8, 4096, 128, True), "d256_n4096": (1, 16, 16, 4096, 256, False),
        "d64_n16384": (1, 8, 8, 16384, 64, False), "causal_d96_n2048": (4, 16, 16, 2048, 96, True)},
    "validation4": {
        "causal_d128_n2048_b8": (8, 16, 16, 2048, 128, True), "causal_d256_n4096": (1, 16, 16, 4096, 256, True),
        "causal_d64_n16384": (1, 8, 8, 16384, 64, True), "gqa_causal_d96_n8192": (1, 32, 8, 8192, 96, True),
        "d128_n3000": (2, 16, 16, 3000, 128, False), "causal_d128_n6000": (1, 16, 16, 6000, 128, True),
        "gqa_d256_n2048": (2, 16, 4, 2048, 256, False), "d64_n4096_b8": (8, 16, 16, 4096, 64, False)},
    "calibration": {"calibration_d128_n4096": (2, 16, 16, 4096, 128, False)},
    "layouts": {"d64_n1000_causal": (2, 8, 8, 1000, 64, True)},
}
# fa2-v1 (ours) under ncu: `traffic fa2`'s shapes, and `traffic own`'s runs (name -> kernel, passes, problem).
FA2_SHAPES = {
    "d128_n4096": (2, 16, 16, 4096, 128, False), "d128_n4096_causal": (2, 16, 16, 4096, 128, True),
    "d64_n2048": (4, 16, 16, 2048, 64, False), "d96_n3000_causal": (2, 8, 8, 3000, 96, True),
    "gqa_d128_n2048": (2, 32, 8, 2048, 128, False)}
OWN_RUNS = {
    "heads_first_d128_n4096": ("fa2-v1-heads-first", "fwd", (4, 32, 32, 4096, 128, False)),
    "heads_first_d128_n4096_causal": ("fa2-v1-heads-first", "fwd", (4, 32, 32, 4096, 128, True)),
    "d128_n4096_b4h32": ("fa2-v1", "fwd", (4, 32, 32, 4096, 128, False)),
    "d128_n4096_b4h32_causal": ("fa2-v1", "fwd", (4, 32, 32, 4096, 128, True)),
    "d64_n8192": ("fa2-v1", "fwd,bwd", (1, 16, 16, 8192, 64, False)),
    "d128_n2048_causal": ("fa2-v1", "fwd,bwd", (4, 16, 16, 2048, 128, True)),
    "gqa_d96_n4096": ("fa2-v1", "fwd,bwd", (2, 16, 4, 4096, 96, False)),
    "d256_n2048": ("fa2-v1", "fwd,bwd", (2, 8, 8, 2048, 256, False)),
}


# The FA2 backward's (and forward's) per-CTA costs (calibration fa2.step_costs_h100, issue 31): square problems whose
# grids are 1056 CTAs (8 waves of one CTA an SM, 4 of two) at 128-row tiles, the CTAs' step counts going 2 .. 64
# with the length; causal ones for the masked steps. Never one of the held-out problems (bench/gpu/data/).
FA2_STEPS = {f"steps_d{d}_n{n}{'_causal' if c else ''}": (4096 // n, 33, 33, n, d, c)
             for d in (64, 96, 128, 256) for n in (256, 512, 1024, 2048, 4096) for c in (False,)}
FA2_STEPS.update({f"steps_d{d}_n{n}_causal": (4096 // n, 33, 33, n, d, True) for d in (64, 96, 128, 256)
                  for n in (1024, 4096)})
# ncu's count of executed warp instructions beside the traffic set: what an instruction-chain model is checked on.
STEPS = TRAFFIC + ",smsp__inst_executed.sum"
SETS["steps"] = STEPS


def all_shapes():
    """Every named problem of every set (SDPA's and ours): name -> (batch, heads, heads_kv, seqlen, d, causal)."""
    out = {}
    for shapes in SHAPES.values():
        out.update(shapes)
    out.update(FA2_SHAPES)
    out.update({name: problem for name, (_, _, problem) in OWN_RUNS.items()})
    return out


def problem_flags(problem, dtype="bf16"):
    """flashsim's problem flags (sim predict, traffic compare) for (batch, heads, heads_kv, seqlen, d, causal)."""
    b, h, hkv, n, d, causal = problem
    flags = ["--batch", str(b), "--heads", str(h)]
    if hkv != h:
        flags += ["--heads-kv", str(hkv)]
    flags += ["--seqlen", str(n), "--head-dim", str(d)] + (["--causal"] if causal else [])
    return flags + (["--dtype", dtype] if dtype else [])


def command(metrics, program, kernel_regex=None, launch_count=None, clock_control=True, extra=()):
    """The ncu command line profiling `program` (a list) with a metric set's name or a metric list."""
    cmd = ["ncu"] + (["--clock-control", "none"] if clock_control else [])
    if kernel_regex:
        cmd += ["-k", "regex:" + kernel_regex]
    if launch_count:
        cmd += ["--launch-count", str(launch_count)]
    return cmd + ["--csv"] + list(extra) + ["--metrics", SETS.get(metrics, metrics)] + list(program)


UNITS = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "nsecond": 1, "ns": 1, "usecond": 1e3,
         "msecond": 1e6}


def read_metrics(path):
    """An ncu --csv details page (one row per kernel and metric) as ({kernel ID: {metric: value}}, {kernel ID: name}),
    values in base units (bytes, nanoseconds). Lines that are not quoted CSV (==PROF== lines, the program's own
    output) are skipped."""
    with open(path) as f:
        rows = list(csv.reader(line for line in f if line.startswith('"')))
    head = rows[0]
    col = {name: head.index(name) for name in ("ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value")}
    metrics, names = {}, {}
    for r in rows[1:]:
        value = float(r[col["Metric Value"]].replace(",", "")) * UNITS.get(r[col["Metric Unit"]], 1)
        kernel = int(r[col["ID"]])
        metrics.setdefault(kernel, {})[r[col["Metric Name"]]] = value
        names[kernel] = r[col["Kernel Name"]]
    return metrics, names


def kernel_dram_reads(path, name):
    """The DRAM bytes read by the report's kernel whose name contains `name` (the most of them, where several
    do); None where none does."""
    metrics, names = read_metrics(path)
    reads = [metrics[k].get("dram__bytes_read.sum", 0.0) for k in metrics if name in names[k]]
    return max(reads) if reads else None


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "metrics" or sys.argv[2] not in SETS:
        print(f"usage: ncu.py metrics {'|'.join(SETS)}", file=sys.stderr)
        sys.exit(2)
    print(SETS[sys.argv[2]])
