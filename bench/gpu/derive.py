"""Derivations run here, after a GPU run, from its recorded reports and this machine's flashsim: the constants
of bench/calibration.json that are computed rather than read off a table.

  l2_adverse(flashsim, results)   h100.l2_adverse_reuse_bytes, from the causal_mimic probes
  dram_coverage(flashsim)         h100.dram_interval: the DRAM interval's coverage of every recorded report
  l2_reuse_models()               h100.l2_reuse_bytes: replacement models against the read-reuse curve
  fa3_steps(results)              fa3.step_costs_h100: the measured_steps entries of fa3-v1's kernels
  fa3_heldout(flashsim, results)  the fa3 models against the held-out shapes (bench/gpu/data/fa3_heldout.txt)
  decode_load(results, hw)        decode.load_h200: the split-KV decode's step and CTA costs under load
"""
import collections
import glob
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tarfile
import tempfile

from ncu import SHAPES as SET_SHAPES, all_shapes, kernel_dram_reads, problem_flags, read_metrics

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MIB = 2**20
NCU = os.path.join(ROOT, "tests/data/ncu")  # the SDPA reports of 2026-11-22/23 (h100.ncu_replay_write_bytes)
RESULTS = os.path.join(ROOT, "bench/results")
SHAPES = all_shapes()
FIRST, VALIDATION, VALIDATION2, VALIDATION3, VALIDATION4 = (
    list(SET_SHAPES[s]) for s in ("first", "validation", "validation2", "validation3", "validation4"))

# --- h100.l2_adverse_reuse_bytes
STEP = MIB // 4  # resolution of the search: a quarter MiB (2048 lines of 128 bytes)
# The reverse-walk mimics with O written: variant -> (batch, heads, seqlen, causal, head dim, Br, Bc), bf16.
MIMICS = {
    "n4096_causal_rev_spin": (2, 16, 4096, True, 128, 128, 64),
    "n4096_causal_rev_nospin": (2, 16, 4096, True, 128, 128, 64),
    "n4096_full_rev_spin": (2, 16, 4096, False, 128, 128, 64),
    "n16384_causal_rev_spin": (1, 8, 16384, True, 128, 128, 64),
    "d64_n8192_causal_rev_spin": (2, 16, 8192, True, 64, 128, 128),
    "d64_n8192_causal_rev_nospin": (2, 16, 8192, True, 64, 128, 128),
    "d96_n4096_causal_rev_spin": (4, 8, 4096, True, 96, 128, 64),
    "d96_n4096_causal_rev_nospin": (4, 8, 4096, True, 96, 128, 64),
    "d256_n2048_causal_rev_spin": (4, 8, 2048, True, 256, 64, 64),
    "d256_n2048_causal_rev_nospin": (4, 8, 2048, True, 256, 64, 64),
}


def mimic_kernel(d, br, bc):
    """SDPA's forward kernel name for (head dim, Br, Bc), 4 warps: what traffic compare recognizes."""
    return (f"void flash_fwd_kernel<Flash_fwd_kernel_traits<{d}, {br}, {bc}, 4, 0, 0, bfloat16_t, "
            f"Flash_kernel_traits<{d}, {br}, {bc}, 4, bfloat16_t>>, 0, 1, 0, 0, 0, 0, 0, 0>(Flash_fwd_params)")


def mimic_runs(results):
    """variant -> [(DRAM bytes read, written)] of every run"""
    runs = {}
    for name in sorted(os.listdir(results)):
        # the launch list: `.launches` beside the probe's CSV (2026-11-26), or run.py probe's `.err`
        lists = [os.path.join(results, name[:-4] + ext) for ext in (".launches", ".err")]
        lists = [f for f in lists if os.path.exists(f)]
        if not name.endswith(".csv") or not lists:
            continue
        metrics, _ = read_metrics(os.path.join(results, name))
        for line in open(lists[0]):
            f = line.split()
            if len(f) > 3 and f[0] == "launch" and f[3] in MIMICS:
                m = metrics[int(f[1])]
                runs.setdefault(f[3], []).append((m["dram__bytes_read.sum"], m["dram__bytes_write.sum"]))
    return runs


def mimic_report(path, batch, heads, seqlen, d, br, bc, runs):
    """A report of the mimic's launch, one kernel a run, as ncu writes one."""
    grid = f"({seqlen // br}, {batch}, {heads})"
    with open(path, "w") as out:
        out.write('"ID","Kernel Name","Block Size","Grid Size","Metric Name","Metric Unit","Metric Value"\n')
        for i, (read, write) in enumerate(runs):
            for metric, value in (("dram__bytes_read.sum", read), ("dram__bytes_write.sum", write)):
                out.write(f'"{i}","{mimic_kernel(d, br, bc)}","(128, 1, 1)","{grid}","{metric}","byte","{value:.0f}"\n')


def adverse_compare(flashsim, tmp, profile, report, flags, capacity):
    """traffic compare's forward read figures of `report` (one a run), through `profile` with an adverse L2 of
    `capacity` bytes and no code allowance"""
    hw = os.path.join(tmp, "hw.json")
    with open(hw, "w") as f:
        json.dump(dict(profile, name="adverse-probe", l2_adverse_reuse_bytes=capacity, kernel_code_bytes=0,
                       l2_partitioned_adverse_bytes=0),  # the LRU's own bound, the partitioned L2's aside
                  f)
    cmd = [flashsim, "traffic", "compare", "--json", "--hw", hw, "--ncu", report] + flags
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode not in (0, 1):
        sys.exit(out.stderr)
    return [m for k in json.loads(out.stdout)["kernels"] if k["name"].startswith("fwd") for m in k["metrics"]
            if m["metric"] == "dram__bytes_read.sum"]


def show_profile(flashsim, hw):
    """`flashsim hw show hw` as a dict; exits with flashsim's message for a profile it does not know"""
    out = subprocess.run([flashsim, "hw", "show", hw], capture_output=True, text=True)
    if out.returncode != 0:
        print(out.stderr.strip() or f"flashsim hw show {hw}: exit {out.returncode}", file=sys.stderr)
        sys.exit(2)
    return json.loads(out.stdout)


def largest_capacity(flashsim, tmp, profile, report, flags):
    """(C, figures at C, upper through l2_reuse_bytes): the largest C of l2_reuse_bytes less whole STEPs at which
    every run's forward DRAM reads are within the range. An LRU's misses only grow as it shrinks (a stack
    algorithm), so the upper bound does too: a bisection finds the C the walk down in STEPs finds."""
    reuse = profile["l2_reuse_bytes"]
    at = {}

    def figures(k):  # at reuse - k STEPs
        if k not in at:
            at[k] = adverse_compare(flashsim, tmp, profile, report, flags, reuse - k * STEP)
        return at[k]

    ok = lambda k: all(m["ok"] for m in figures(k))  # noqa: E731
    lo, hi = 0, max(0, (reuse - 1) // STEP)  # the smallest k that fits lies in [lo, hi]; hi: the last step above 0
    if ok(0) or not ok(hi):
        k = 0 if ok(0) else hi
        return reuse - k * STEP, figures(k), figures(0)[0]["upper"]
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid + 1, hi)
    return reuse - lo * STEP, figures(lo), figures(0)[0]["upper"]


def card_sdpa_sets(results):
    """(shape set, folder of its unpacked reports) of each recorded shape set SDPA ran on the card of `results`
    with one-pass DRAM counters (`run.py traffic sdpa --shapes SET --metrics dram`: sdpa_dram/SET/ncu_dram_csvs.tar.gz)"""
    for shape_set in ("first", "validation", "validation2", "validation3", "validation4"):
        archive = os.path.join(results, "sdpa_dram", shape_set, "ncu_dram_csvs.tar.gz")
        if os.path.exists(archive):
            yield shape_set, unpack(archive)


def card_causal_forwards(results):
    """(label, report, flags) of the causal forwards SDPA ran on the card of `results`, one-pass DRAM counters:
    the recorded shape sets (card_sdpa_sets) and the re-read held-out set 1
    (reread/reread_csvs.tar.gz), where the folder has them"""
    for shape_set, reports in card_sdpa_sets(results):
        for shape in SET_SHAPES[shape_set]:
            if SHAPES[shape][5]:
                yield f"{shape_set}/{shape}", os.path.join(reports, f"ncu_dram_{shape}.csv"), flags(shape)
    archive = os.path.join(results, "reread", "reread_csvs.tar.gz")
    if os.path.exists(archive):
        import reread_heldout  # its set 1 (the module's default list)
        folder = os.path.join(unpack(archive), "reread")
        for problem in reread_heldout.problems():
            b, h, hkv, n, d, _ = problem
            yield (f"reread/b{b} h{h}/{hkv} n{n} d{d}", os.path.join(folder, reread_heldout.report_name(problem)),
                   problem_flags(problem))


def l2_adverse(flashsim, results, hw="H100-SXM5-80GB"):
    """The `hw` profile's l2_adverse_reuse_bytes (calibration h100.l2_adverse_reuse_bytes, h200.l2) from the
    causal_mimic probes' runs in `results` (l2_probe.cu's CSVs with their launch lists) and, where `results` has
    them, SDPA's causal forwards measured on the same card (card_causal_forwards; the H100's came from the mimics
    alone, and its recorded causal forwards were inside at that capacity). Each mimic that walks K/V backwards
    and writes O (FA2's forward without the math: SDPA's launches at head dims 64, 96, 128 and 256, 4 warps, 2 CTAs
    an SM) is the schedule flashsim executes for that kernel; its runs go to `traffic compare` as a report of the
    mimic's launch, with a profile whose l2_adverse_reuse_bytes is C and no code allowance: C goes down from
    l2_reuse_bytes in 1/4 MiB steps until every run's DRAM reads are within the range; the adverse capacity is the
    smallest such C over the mimics and the forwards. Prints one line per mimic and forward, and the result."""
    profile = show_profile(flashsim, hw)
    reuse = profile["l2_reuse_bytes"]
    runs = mimic_runs(results)
    missing = sorted(set(MIMICS) - set(runs))
    if missing:
        raise SystemExit(f"no runs of {', '.join(missing)} in {results}")
    result = reuse
    with tempfile.TemporaryDirectory() as tmp:
        for variant, (batch, heads, seqlen, causal, d, br, bc) in MIMICS.items():
            report = os.path.join(tmp, "mimic.csv")
            mimic_report(report, batch, heads, seqlen, d, br, bc, runs[variant])
            tail = ["--replayed", "no", "--batch", str(batch), "--heads", str(heads), "--seqlen", str(seqlen),
                    "--head-dim", str(d), "--dtype", "bf16"] + (["--causal"] if causal else [])
            capacity, figures, at_reuse = largest_capacity(flashsim, tmp, profile, report, tail)
            most = max(m["measured"] for m in figures)
            print(f"{variant:29s} {len(figures)} runs, at most {most / 1e6:6.2f} MB read "
                  f"({most / figures[0]['compulsory']:5.3f}x the compulsory); the schedule reads {at_reuse / 1e6:6.2f} MB "
                  f"through an LRU of {reuse / MIB:.2f} MiB, {figures[0]['upper'] / 1e6:6.2f} MB through "
                  f"{capacity / MIB:5.2f} MiB, the largest that takes every run")
            result = min(result, capacity)
        for label, report, tail in card_causal_forwards(results):
            capacity, figures, at_reuse = largest_capacity(flashsim, tmp, profile, report, tail)
            m = figures[0]
            c = m["compulsory"]
            print(f"{label:29s} SDPA, {m['measured'] / c:5.3f}x the compulsory; the schedule reads "
                  f"{at_reuse / c:5.2f}x through {reuse / MIB:.2f} MiB, {m['upper'] / c:5.2f}x "
                  f"through {capacity / MIB:5.2f} MiB, the largest that takes it")
            result = min(result, capacity)
    print(f"l2_adverse_reuse_bytes = {result} ({result / MIB:.2f} MiB)")




# --- h200.l2_replacement
# each card's reuse_read runs: (ncu CSV, its launch list); the H100's one-pass run alone (its others replayed the
# counters: ../l2_probe_h100_2026-11-22/README.md)
L2_PROBE_RUNS = {
    "H200": [(os.path.join(RESULTS, "l2_probe_h200_2026-11-29", f"l2_probe_dram_run{n}.csv"),
              os.path.join(RESULTS, "l2_probe_h200_2026-11-29", f"l2_probe_dram_run{n}.err")) for n in (1, 2, 3)],
    "H100-SXM5-80GB": [(os.path.join(RESULTS, "l2_probe_h100_2026-11-22", "l2_probe_run3_single_pass.csv"),
                        os.path.join(RESULTS, "l2_probe_h100_2026-11-22", "l2_probe_run3_single_pass.launches"))],
}


def reuse_probe_measured(runs):
    """l2_probe.cu's reuse_read launches in `runs` ((ncu CSV, launch list) pairs): {buffer MiB: the runs' mean
    miss per re-read}, a re-read's DRAM reads beyond the first pass over a pass's bytes."""
    import tables
    misses = collections.defaultdict(list)
    for csv, launch_list in runs:
        metrics, _ = read_metrics(csv)
        for launch, f in tables.launches(launch_list):
            if f[0] == "reuse_read":
                args = dict(zip(f[1::2], (int(x) for x in f[2::2])))
                size = args["buffer_bytes"]
                misses[size / MIB].append(tables.miss_per_reread(metrics[launch]["dram__bytes_read.sum"], size,
                                                                 args["reads"]))
    if not misses:
        raise ValueError(f"no reuse_read launches in {', '.join(csv for csv, _ in runs)}")
    return {mib: statistics.mean(v) for mib, v in sorted(misses.items())}


def l2_replacement(flashsim, hw="H200"):
    """The `hw` profile's l2_replacement (calibration h200.l2_replacement): the probe's read-reuse curve (a buffer
    read 3 times in 64 KB chunks, each chunk by CTAs on other SMs; the mean of the card's runs) beside the
    partitioned L2 model's (`flashsim sim l2-reuse`, the profile's partitions and ways) for each replacement at
    each capacity from half of l2_bytes up to l2_bytes in MiB steps; the replacement whose nearest curve (root mean
    square over the buffer sizes) is nearer the card's, and that curve's capacity."""
    if hw not in L2_PROBE_RUNS:
        raise ValueError(f"no recorded L2 probe runs of {hw} ({', '.join(L2_PROBE_RUNS)})")
    measured = reuse_probe_measured(L2_PROBE_RUNS[hw])
    l2 = show_profile(flashsim, hw)["l2_bytes"]
    sizes = ",".join(f"{m:g}" for m in measured)
    best = {}
    for policy in ("lru", "srrip", "drrip"):
        for mib in range(l2 // MIB // 2, l2 // MIB + 1):
            out = subprocess.run([flashsim, "sim", "l2-reuse", "--hw", hw, "--replacement", policy, "--capacity-mib",
                                  str(mib), "--buffers-mib", sizes, "--json"], capture_output=True, text=True,
                                 check=True)
            curve = [r["miss_per_reread"] for r in json.loads(out.stdout)["rows"]]
            rms = math.sqrt(statistics.mean((c - m) ** 2 for c, m in zip(curve, measured.values())))
            if policy not in best or rms < best[policy][0]:
                best[policy] = (rms, mib, curve)
    print(f"{'buffer MiB':>10} {'measured':>9} " +
          " ".join(f"{f'{p} {best[p][1]} MiB':>15}" for p in best))
    for i, (mib, m) in enumerate(measured.items()):
        print(f"{mib:>10g} {m:>9.3f} " + " ".join(f"{best[p][2][i]:>15.3f}" for p in best))
    print("rms " + ", ".join(f"{p}: {best[p][0]:.4f} at {best[p][1]} MiB" for p in best))
    policy = min(best, key=lambda p: best[p][0])
    print(f"l2_replacement = {policy} (its curve nearest the probe's at {best[policy][1]} MiB)")



def print_partitioned(name, rows, lines=True):
    """One line a (label, problem, read figure) of `rows` (partitioned_figures'): the measured reads and the range
    over the compulsory bytes, inside or not, and the planted 1.5x K/V re-read (reread_heldout.py's) flagged or not
    (where `lines`); then the summary of `name`: inside, the plant flagged, the width (upper over lower), the
    upper end over the compulsory bytes and over the measured reads, and the measured reads over the lower end."""
    import reread_heldout
    if not rows:
        return
    caught = 0
    for label, (b, h, hkv, n, d), m in rows:
        c = m["compulsory"]
        planted = reread_heldout.planted_reads(m["measured"], c, h, hkv)
        flagged = planted > m["upper"] + m["tolerance_floor"]
        caught += flagged
        if not lines:
            continue
        print(f"  {label} b{b} h{h}/{hkv} n{n} d{d}: measured {m['measured'] / c:5.2f}x the compulsory bytes, "
              f"range {m['lower'] / c:5.2f} .. {m['upper'] / c:5.2f}x: {'ok' if m['ok'] else 'OUTSIDE'}; planted "
              f"{planted / c:5.2f}x {'flagged' if flagged else 'not flagged'}")
    widths = sorted(m["upper"] / m["lower"] for _, _, m in rows)
    wide = sorted(m["upper"] / m["compulsory"] for _, _, m in rows)
    over = sorted(m["upper"] / m["measured"] for _, _, m in rows)
    above = sorted(m["measured"] / m["lower"] for _, _, m in rows)
    print(f"{name}: {sum(m['ok'] for _, _, m in rows)} of {len(rows)} inside; planted flagged on {caught}; width "
          f"(upper over lower) {widths[0]:.2f} .. {widths[-1]:.2f}x, median {statistics.median(widths):.2f}x, at "
          f"most 1.5x: {sum(w <= 1.5 for w in widths)}; upper over the compulsory bytes median "
          f"{statistics.median(wide):.2f}x; upper over measured {over[0]:.2f} .. {over[-1]:.2f}, median "
          f"{statistics.median(over):.2f}; measured over lower {above[0]:.3f} .. {above[-1]:.2f}, median "
          f"{statistics.median(above):.2f}")


def l2_partitioned_check(flashsim, hw="H200", replacement="lru", capacity_mib=0):
    """Every recorded causal forward of `hw` (partitioned_sets: the fit and the held out) against traffic compare's
    read range with the partitioned L2 at `capacity_mib` (0: the profile's l2_partitioned_adverse_bytes) and
    `replacement`, each SDPA kernel's stack frame walked (print_partitioned's lines), for all, for the held
    out and for each held-out set."""
    profile = dict(show_profile(flashsim, hw), l2_replacement=replacement)
    capacity = capacity_mib * MIB if capacity_mib else profile["l2_partitioned_adverse_bytes"]
    fit, check = partitioned_sets(hw)
    held = {label for label, _, _ in check}
    with tempfile.TemporaryDirectory() as tmp:
        rows = partitioned_figures(flashsim, tmp, profile, capacity, fit + check)
    print(f"{hw}, partitioned L2 of {capacity / MIB:g} MiB, {replacement}:")
    print_partitioned("all", rows)
    print_partitioned("held out", [r for r in rows if r[0] in held], lines=False)
    for name in sorted(held, key=lambda x: int(x[3:])):
        print_partitioned(f"  {name}", [r for r in rows if r[0] == name], lines=False)


# --- h200.l2_capacity
CAPACITY_GRID_MIB = (56, 64, 72, 80, 96, 120)  # the profile's bound (56) up to twice the L2 (60 MiB)
SWEEP_GRID_MIB = (48, 56, 64, 72, 80, 96, 120)  # a sweep's forwards are in no fit: some may read more than at 56


def card_capacity(measured, reads):
    """The capacity in MiB at which the model reads what the card did: `reads` {MiB: bytes} falls as the
    capacity grows; between two of its capacities the reads are taken as exponential in the capacity. None where
    the card read less than at the largest capacity; below the smallest, that capacity."""
    caps = sorted(reads)
    if measured >= reads[caps[0]]:
        return caps[0]
    for c0, c1 in zip(caps, caps[1:]):
        m0, m1 = reads[c0], reads[c1]
        if m1 <= measured <= m0:
            return c0 if m0 == m1 else c0 + (c1 - c0) * math.log(m0 / measured) / math.log(m0 / m1)
    return None


def sweep_forwards(results):
    """reread_sweep.py's forwards as (label, report, problem): `results` its measured folder or that folder's archive
    (the `sweep` folder inside)."""
    import reread_heldout
    import reread_sweep
    folder = results
    if os.path.isfile(results):
        try:
            folder = os.path.join(unpack(results), "sweep")
        except tarfile.TarError as e:
            raise ValueError(f"{results}: not a reread_sweep.py archive ({e})") from e
    forwards = []
    for b, h, hkv, n, d, _ in reread_sweep.sweep():
        path = os.path.join(folder, reread_heldout.report_name((b, h, hkv, n, d)))
        if os.path.isfile(path):
            forwards.append((f"sweep d{d}", path, (b, h, hkv, n, d)))
    if not forwards:
        raise ValueError(f"no reread_sweep.py reports in {results}")
    return forwards


def l2_capacity(flashsim, hw="H200", least_reread=2.0, replacement=None, sweep=None):
    """The recorded causal forwards of `hw` (partitioned_sets) that read at least `least_reread` x their compulsory
    bytes: the partitioned L2's reads (the profile's partitions, ways and replacement; each SDPA kernel's frame
    walked) at each capacity of grid, over the compulsory bytes, beside the card's; the capacity at
    which the model reads what the card did (card_capacity); then how far those capacities spread and how much
    the model's reads fall across that spread: the least width of any read range made of the model at two
    capacities that holds all of them. `replacement`: a set's replacement instead of the profile's. `sweep`:
    reread_sweep.py's reports (a folder or its archive) instead of the recorded sets, every forward of them, and
    how far the capacity moves between neighbouring lengths."""
    from concurrent.futures import ThreadPoolExecutor

    import fwd_mimic
    import reread_heldout
    profile = show_profile(flashsim, hw)
    if replacement:
        profile["l2_replacement"] = replacement
    if sweep:
        fit, check, least_reread = [], sweep_forwards(sweep), 0.0
        grid = SWEEP_GRID_MIB
    else:
        fit, check = partitioned_sets(hw)
        grid = CAPACITY_GRID_MIB
    held = {label for label, _, _ in check}
    with tempfile.TemporaryDirectory() as tmp:
        hws = {}
        for mib in grid:  # the adverse LRU of 1 MiB reads more: the upper end is the partitioned L2's
            hws[mib] = os.path.join(tmp, f"grid_{mib}.json")
            with open(hws[mib], "w") as f:
                json.dump(dict(profile, name="capacity-grid", l2_partitioned_adverse_bytes=mib * MIB,
                               l2_adverse_reuse_bytes=MIB, kernel_code_bytes=0), f)

        def at(r, mib):
            return reread_heldout.read_figure(flashsim, hws[mib], r[1], r[2], True)

        def rereads(r):  # the report's forward reads over Q, K and V once (bf16), before any compare
            try:
                reads = kernel_dram_reads(r[1], "flash_fwd_kernel")
            except (IndexError, ValueError):
                return 0.0
            return (reads or 0.0) / fwd_mimic.compulsory_reads(*r[2])

        candidates = [r for r in fit + check if rereads(r) >= 0.9 * least_reread]  # compare's bytes decide below
        with ThreadPoolExecutor(2) as pool:
            first = list(pool.map(lambda r: at(r, grid[0]), candidates))
            chosen = [(r, m) for r, m in zip(candidates, first)
                      if m is not None and m["measured"] >= least_reread * m["compulsory"]]
            rest = list(pool.map(lambda rm: {mib: at(rm[0], mib)["upper"] for mib in grid[1:]}, chosen))
    print(f"{hw}, {profile['l2_replacement']} sets: the partitioned L2's reads over the compulsory bytes at each capacity (MiB), the card's, and the "
          f"capacity at which the model reads them; forwards reading {least_reread:g}x their compulsory bytes or more")
    print(f"  {'forward':34s} " + " ".join(f"{mib:>6d}" for mib in grid) + f" {'card':>6s} {'at MiB':>7s}")
    found = []
    for ((label, _, (b, h, hkv, n, d)), m), more in zip(chosen, rest):
        reads = {grid[0]: m["upper"], **more}
        c = m["compulsory"]
        where = card_capacity(m["measured"], reads)
        found.append((where, reads, m["measured"], label in held, label, n))
        print(f"  {label + ' b%d h%d/%d n%d d%d' % (b, h, hkv, n, d):34s} " +
              " ".join(f"{reads[mib] / c:6.2f}" for mib in grid) +
              f" {m['measured'] / c:6.2f} {'beyond' if where is None else f'{where:7.1f}'}")
    # a sweep is all held out: one summary, then its neighbouring lengths
    summaries = (("all", found),) if sweep else (("all", found), ("held out", [f for f in found if f[3]]))
    for name, rows in summaries:
        at_mib = sorted(f[0] for f in rows if f[0] is not None)
        if not at_mib:
            continue
        lo, hi = at_mib[0], at_mib[-1]
        # the model at the grid capacities around lo and hi: the narrowest two-capacity range that holds them all
        below = max(x for x in grid if x <= lo)
        above = [x for x in grid if x >= hi]
        spans = sorted(f[1][below] / f[1][above[0]] for f in rows) if above else []
        print(f"{name}: {len(rows)} forwards, the model reads what the card did at {lo:.1f} .. {hi:.1f} MiB (median "
              f"{statistics.median(at_mib):.1f}; beyond the grid: {sum(f[0] is None for f in rows)})" +
              (f"; the model's reads at {below} MiB over those at {above[0]} MiB: median "
               f"{statistics.median(spans):.2f}x, at most {spans[-1]:.2f}x" if spans else ""))
    for family in sorted({f[4] for f in found}) if sweep else ():  # how far the capacity and reads move
        run = sorted((f[5], f[0], f[2]) for f in found if f[4] == family and f[0] is not None)
        steps = [abs(w1 - w0) for (_, w0, _), (_, w1, _) in zip(run, run[1:])]
        jumps = [max(r1 / r0, r0 / r1) for (_, _, r0), (_, _, r1) in zip(run, run[1:])]
        if steps:
            print(f"{family}: between neighbouring lengths the capacity moves {statistics.median(steps):.1f} MiB "
                  f"(median), at most {max(steps):.1f}; the card's reads change {statistics.median(jumps):.2f}x "
                  f"(median), at most {max(jumps):.2f}x")


# --- h100.dram_interval
NEW = os.path.join(RESULTS, "dram_interval_h100_2026-11-26")
ADVERSE = os.path.join(RESULTS, "l2_adverse_h100_2026-11-26")
HELD_OUT = "held out: SDPA FA2 (validation4, taken after l2_adverse_reuse_bytes was fixed)"
PLANTED = "fa2-v1-heads-first (planted: K/V re-read from DRAM per query block; must be flagged, not counted)"


MIMIC_H200 = os.path.join(RESULTS, "fwd_mimic_h200_2026-11-29")


SPILL_FRAMES_H200 = os.path.join(RESULTS, "spill_frames_h200_2026-11-29")
SPILL_WALK_H200 = os.path.join(RESULTS, "spill_walk_h200_2026-11-29")
L2_REPLACEMENT_H200 = os.path.join(RESULTS, "l2_replacement_h200_2026-11-30")
L2_CAPACITY_H200 = os.path.join(RESULTS, "l2_capacity_h200_2026-11-30")
L2_SWEEP_H200 = os.path.join(RESULTS, "l2_sweep_h200_2026-11-30")


def partitioned_figures(flashsim, tmp, profile, capacity, reports):
    """traffic compare's forward read figure of each (label, report, problem) of `reports` through `profile` with
    a partitioned L2 of `capacity` bytes (l2_partitioned_adverse_bytes), two reports at a time; each SDPA kernel's
    stack frame from sdpa_stack.py's table"""
    from concurrent.futures import ThreadPoolExecutor

    import reread_heldout
    hw = os.path.join(tmp, f"partitioned_{capacity}.json")
    with open(hw, "w") as f:
        json.dump(dict(profile, name="partitioned-probe", l2_partitioned_adverse_bytes=capacity), f)
    with ThreadPoolExecutor(2) as pool:
        figures = list(pool.map(lambda r: reread_heldout.read_figure(flashsim, hw, r[1], r[2], True), reports))
    return [(label, problem, m) for (label, _, problem), m in zip(reports, figures) if m is not None]


def partitioned_sets(hw):
    """(fit, held out): the (label, report, problem) causal forwards l2-partitioned derives `hw`'s capacity from
    and checks it on. H200: SDPA's re-read sets 1 .. 3 (fwd_mimic.py's run5_sets.tar.gz, counters and spills), 4
    (one-pass DRAM counters, l2_partitioned_h200_2026-11-29), 5, 6 (spill_frames_h200_2026-11-29), 7 and 8
    (spill_walk_h200_2026-11-29), and the recorded shape sets' causal forwards measured there (card_sdpa_sets);
    sets 9, 10 and 11, drawn after this fit, 12 and 13 (l2_replacement_h200_2026-11-30), 14 and 15
    (l2_capacity_h200_2026-11-30), 16 and 17 (l2_sweep_h200_2026-11-30), held out. Set 7 refuted the walked
    frames' capacity fitted without it (58 MiB, on sets 1 .. 4 and the shape sets): every set measured before
    the refit is in it. The sequence-length sweep (reread_sweep.py) refuted the 56 MiB fitted on those: it is in
    the fit too, sets 9 .. 15 stay held out (measured before it, in no fit) and sets 16 and 17 were drawn
    before the refit.
    The H100's (re-read set 1, the fa2 held-out causal forwards) lack their kernels' stack frames: its derivation
    without them is commit a6787ff's."""
    if hw == "H200":
        import reread_heldout
        folder = unpack(os.path.join(MIMIC_H200, "run5_sets.tar.gz"))
        sets = {}
        for name in ("set1", "set2", "set3"):
            for f in sorted(os.listdir(os.path.join(folder, name))):
                if f.startswith("sdpa_") and f.endswith(".csv"):
                    problem = tuple(int(x) for x in f[5:-4].split("_"))
                    sets.setdefault(name, []).append((name, os.path.join(folder, name, f), problem))
        archives = [("set4", os.path.join(RESULTS, "l2_partitioned_h200_2026-11-29"))] + \
            [(f"set{n}", SPILL_FRAMES_H200) for n in (5, 6)] + [(f"set{n}", SPILL_WALK_H200) for n in (7, 8, 9, 10, 11)] + \
            [(f"set{n}", L2_REPLACEMENT_H200) for n in (12, 13)] + [(f"set{n}", L2_CAPACITY_H200) for n in (14, 15)] + \
            [(f"set{n}", L2_SWEEP_H200) for n in (16, 17)]
        for name, results in archives:
            archive = os.path.join(results, f"reread_{name}_csvs.tar.gz")
            if os.path.exists(archive):
                folder = os.path.join(unpack(archive), name.replace("set", "s"))
                sets[name] = [(name, os.path.join(folder, reread_heldout.report_name(problem)), problem[:5])
                              for problem in reread_heldout.set_problems(name[3:])]
        # and the recorded shape sets' causal forwards measured on the card (as l2-adverse takes them)
        recorded = [(shape_set, os.path.join(reports, f"ncu_dram_{shape}.csv"), SHAPES[shape][:5])
                    for shape_set, reports in card_sdpa_sets(os.path.join(RESULTS, "l2_probe_h200_2026-11-29"))
                    for shape in SET_SHAPES[shape_set] if SHAPES[shape][5]]
        # the sequence-length sweep, its tensors allocated apart as every set's (its first run)
        sweep = sweep_forwards(os.path.join(L2_SWEEP_H200, "reread_sweep_csvs.tar.gz"))
        fit = [r for n in range(1, 9) for r in sets[f"set{n}"]] + recorded + sweep
        return fit, [r for n in range(9, 18) for r in sets.get(f"set{n}", [])]
    raise ValueError(f"no recorded causal forwards with their kernels' stack frames on {hw} (H200)")


def l2_partitioned(flashsim, hw="H200"):
    """The `hw` profile's l2_partitioned_adverse_bytes (calibration h200.l2_partitioned_adverse; the H200 alone:
    the H100's forwards lack their kernels' stack frames) from the card's fit causal forwards (partitioned_sets),
    each with its SDPA kernel's frame: from l2_bytes down in MiB
    steps, the largest capacity at which every one of them reads within traffic compare's range; then the held-out
    forwards at that capacity, and a planted 1.5x K/V re-read (reread_heldout.py's) on all. The profile's
    l2_partitions and l2_ways are taken as they are."""
    profile = show_profile(flashsim, hw)
    if profile.get("l2_partitions", 1) < 2:
        raise ValueError(f"the {hw} profile has one L2 partition (l2_partitions)")
    # the bound needs each spilling kernel's stack frame (dram_interval.h): sdpa_stack.py's table is the H200 runs'
    # PyTorch build; the H100's was not recorded (its derivation without frames: commit a6787ff,
    # bench/results/l2_partitioned_h200_2026-11-29/derive_h100.txt)
    fit, check = partitioned_sets(hw)
    with tempfile.TemporaryDirectory() as tmp:
        capacity = profile["l2_bytes"] // MIB * MIB
        nominal = partitioned_figures(flashsim, tmp, profile, capacity, fit)
        readable = {problem for _, problem, _ in nominal}
        fit = [r for r in fit if r[2] in readable]  # a report compare cannot read: said once, left out
        # the partitioned L2 at the card's whole capacity, as a prediction: its reads (the range's upper end, the
        # kernel's code and the LRU's point estimate aside) over the measured
        for name, rows in (("fit", nominal), ("held out", partitioned_figures(flashsim, tmp, profile, capacity, check))):
            if not rows:
                print(f"{name}: no forwards")
                continue
            ratios = sorted(m["upper"] / m["measured"] for _, _, m in rows)
            print(f"at l2_bytes ({capacity / MIB:.0f} MiB), {name}: the upper end over the measured reads "
                  f"{ratios[0]:.2f} .. {ratios[-1]:.2f}, median {ratios[len(ratios) // 2]:.2f}; within 10%: "
                  f"{sum(abs(r - 1) <= 0.1 for r in ratios)} of {len(ratios)}, within 20%: "
                  f"{sum(abs(r - 1) <= 0.2 for r in ratios)}", flush=True)
        figures = nominal  # at l2_bytes, then a MiB less each round
        while True:
            outside = [f"{label} {problem}" for label, problem, m in figures if not m["ok"]]
            print(f"{capacity / MIB:5.1f} MiB: {len(figures) - len(outside)} of {len(figures)} fit forwards inside"
                  + (f" (outside: {', '.join(outside)})" if outside else ""), flush=True)
            if not outside or capacity <= MIB:
                break
            # a MiB less: the forwards outside first; while one of them stays outside, the others need no run
            # (the capacity is not the answer either way)
            last = [r for r, (_, _, m) in zip(fit, figures) if not m["ok"]]
            while capacity > MIB:
                capacity -= MIB
                again = partitioned_figures(flashsim, tmp, profile, capacity, last)
                still = [f"{label} {problem}" for label, problem, m in again if not m["ok"]]
                if not still:
                    break
                print(f"{capacity / MIB:5.1f} MiB: still outside: {', '.join(still)}", flush=True)
            figures = partitioned_figures(flashsim, tmp, profile, capacity, fit)
        for name, rows in (("fit", figures), ("held out", partitioned_figures(flashsim, tmp, profile, capacity, check))):
            print_partitioned(name, rows)
    print(f"l2_partitioned_adverse_bytes = {capacity} ({capacity / MIB:.0f} MiB, {capacity / profile['l2_bytes']:.3f}"
          f" of l2_bytes)")


def unpack(archive):
    """The CSVs of one of the GPU run's archives, in a temporary folder."""
    tmp = tempfile.mkdtemp()
    with tarfile.open(archive) as t:
        t.extractall(tmp)
    return tmp


def full_report(shape):
    if shape == "calibration_d128_n4096":
        return os.path.join(ROOT, "tests/data/ncu_fa2_h100_calibration.csv")
    sub = "validation/" if shape in VALIDATION else "validation2/" if shape in VALIDATION2 else ""
    return os.path.join(NCU, sub + "ncu_" + shape + ".csv")


def flags(shape):
    return problem_flags(SHAPES[shape])


def coverage_reports():
    """(group, label, shape, report, dram report or None)"""
    shapes = FIRST + VALIDATION + VALIDATION2 + ["calibration_d128_n4096"]
    for s in shapes:
        yield "SDPA FA2, one-pass DRAM (single_pass/)", "single_pass", s, full_report(s), \
            os.path.join(NCU, "single_pass/ncu_dram_" + s + ".csv")
    for folder in ["single_pass_repeat/run1", "single_pass_repeat/run2", "dram_repeats/run1/first",
                   "dram_repeats/run1/validation", "dram_repeats/run1/validation2", "dram_repeats/run1/calibration",
                   "dram_repeats/run2/first", "dram_repeats/run2/validation", "dram_repeats/run2/calibration",
                   "dram_repeats/run3/first", "dram_repeats/run3/calibration"]:
        for s in shapes:
            dram = os.path.join(NCU, folder, "ncu_dram_" + s + ".csv")
            if os.path.exists(dram):
                yield "SDPA FA2, one-pass DRAM repeats", folder, s, full_report(s), dram
    for s in shapes:
        yield "SDPA FA2, replayed DRAM (the full reports)", "full", s, full_report(s), None
    for s in FIRST:
        yield "SDPA FA2, replayed DRAM (the full reports)", "repeat", s, os.path.join(NCU, "repeat/ncu_" + s + ".csv"), None
    yield ("SDPA FA2, replayed DRAM (the full reports)", "calibration_rerun", "calibration_d128_n4096",
           os.path.join(NCU, "calibration_rerun/ncu_calibration_d128_n4096.csv"), None)
    tmp = unpack(os.path.join(RESULTS, "gpu_h100_2026-11-23/fa2_backward/launch_table/final/traffic",
                              "ncu_fa2_v1_csvs.tar.gz"))
    for name in sorted(os.listdir(tmp)):
        shape = name[len("ncu_fa2_v1_fwd_"):-len(".csv")]
        yield "flashsim fa2-v1, replayed DRAM (gpu_h100_2026-11-23 launch_table/final)", "fa2-v1", shape, \
            os.path.join(tmp, name), None
    # Taken after the interval was written: SDPA on 6 new shapes, fa2-v1 on 6 new problems, both metric sets.
    full, dram = unpack(os.path.join(NEW, "ncu_csvs.tar.gz")), unpack(os.path.join(NEW, "ncu_dram_csvs.tar.gz"))
    for s in VALIDATION3:
        report = os.path.join(full, "ncu_" + s + ".csv")
        yield "new: SDPA FA2 (validation3), one-pass DRAM", "validation3", s, report, \
            os.path.join(dram, "ncu_dram_" + s + ".csv")
        yield "new: SDPA FA2 (validation3), replayed DRAM", "validation3", s, report, None
    own = unpack(os.path.join(NEW, "ncu_fa2_gpu_csvs.tar.gz"))
    for name in sorted(os.listdir(own)):
        if not name.startswith("ncu_fa2_") or not name.endswith(".csv"):
            continue
        pass_, shape = name[len("ncu_fa2_"):-len(".csv")].split("_", 1)
        report, dram = os.path.join(own, name), os.path.join(own, "ncu_dram_" + name[len("ncu_"):])
        planted = shape.startswith("heads_first")
        yield PLANTED if planted else "new: flashsim fa2-v1, one-pass DRAM", pass_, shape, report, dram
        yield PLANTED if planted else "new: flashsim fa2-v1, replayed DRAM", pass_, shape, report, None
    # Taken after the adverse capacity was fixed (commit 6174f80): SDPA on 8 more shapes.
    full = unpack(os.path.join(ADVERSE, "ncu_validation4_csvs.tar.gz"))
    dram = unpack(os.path.join(ADVERSE, "ncu_dram_validation4_csvs.tar.gz"))
    for s in VALIDATION4:
        report = os.path.join(full, "ncu_" + s + ".csv")
        yield HELD_OUT + ", one-pass DRAM", "validation4", s, report, os.path.join(dram, "ncu_dram_" + s + ".csv")
        yield HELD_OUT + ", replayed DRAM", "validation4", s, report, None


def dram_coverage(flashsim):
    """Coverage of `flashsim traffic compare`'s DRAM interval over every recorded H100 ncu report (calibration
    h100.dram_interval): SDPA's FA2 on the recorded shapes and the calibration problem, with one-pass and with
    replayed DRAM counters; flashsim's own fa2-v1 kernels. Per group and over all: the share of measured DRAM
    figures inside [lower, upper] and the median interval width; figures outside are listed."""
    groups = {}
    for group, label, shape, report, dram in coverage_reports():
        cmd = [flashsim, "traffic", "compare", "--json", "--ncu", report] + flags(shape)
        if dram:
            cmd += ["--ncu-dram", dram]
        out = subprocess.run(cmd, capture_output=True, text=True)
        g = groups.setdefault(group, {"rows": [], "errors": []})
        if out.returncode not in (0, 1):
            g["errors"].append(f"{label}/{shape}: {out.stderr.strip()}")
            continue
        for k in json.loads(out.stdout)["kernels"]:
            for m in k["metrics"]:
                if m.get("lower") is None:
                    continue
                g["rows"].append((label, shape, k["name"].split(" ")[0], m))
    every, new, held = [], [], []
    for group, g in groups.items():
        planted = group == PLANTED
        print(group + ":" if planted else summary(group, g["rows"]))
        for e in g["errors"]:
            print("  not compared:", e)
        for label, shape, kernel, m in g["rows"]:
            if planted or not m["ok"]:
                print(f"  {'' if planted else 'outside: '}{label}/{shape}/{kernel}/{m['metric']}: measured "
                      f"{m['measured'] / 1e6:.2f} MB, range {m['lower'] / 1e6:.2f} .. {m['upper'] / 1e6:.2f} MB: "
                      f"{m['verdict']}")
        if not planted:
            every += g["rows"]
            new += g["rows"] if group.startswith("new:") else []
            held += g["rows"] if group.startswith(HELD_OUT) else []
    print(summary("NEW (taken after the interval was first written)", new))
    print(summary("HELD OUT (taken after the adverse capacity was fixed)", held))
    print(summary("ALL (the planted kernel left out)", every))



def dram_coverage_card(flashsim, results, hw, stacks=False):
    """Coverage of the DRAM interval on another card: SDPA's FA2 on the recorded shape sets, one-pass DRAM
    counters (`run.py traffic sdpa --shapes SET --metrics dram` there: results/sdpa_dram/SET/ncu_dram_csvs.tar.gz),
    each report through `traffic compare --hw hw` (with its forward's stack frame where `stacks`: sdpa_stack.py);
    per set and over all, as dram-coverage prints (h200.l2)."""
    import sdpa_stack
    show_profile(flashsim, hw)  # an unknown profile: one line, not a failure per report
    frames = sdpa_stack.table()
    every = []
    for shape_set, reports in card_sdpa_sets(results):
        rows = []
        for shape in SET_SHAPES[shape_set]:
            report = os.path.join(reports, f"ncu_dram_{shape}.csv")
            stack = sdpa_stack.stack_bytes(report, frames) if stacks else None
            cmd = [flashsim, "traffic", "compare", "--json", "--hw", hw, "--ncu", report] + flags(shape) + (
                [] if stack is None else ["--stack-bytes", str(stack)])
            out = subprocess.run(cmd, capture_output=True, text=True)
            if out.returncode not in (0, 1):
                print(f"  not compared: {shape_set}/{shape}: {out.stderr.strip()}")
                continue
            rows += [(shape_set, shape, k["name"].split(" ")[0], m) for k in json.loads(out.stdout)["kernels"]
                     for m in k["metrics"] if m.get("lower") is not None]
        print(summary(f"SDPA FA2 {shape_set}, one-pass DRAM", rows))
        for label, shape, kernel, m in rows:
            if not m["ok"]:
                print(f"  outside: {label}/{shape}/{kernel}/{m['metric']}: measured {m['measured'] / 1e6:.2f} MB, "
                      f"range {m['lower'] / 1e6:.2f} .. {m['upper'] / 1e6:.2f} MB: {m['verdict']}")
        every += rows
    if not every:
        print(f"derive dram-coverage-card: no sdpa_dram/SET/ncu_dram_csvs.tar.gz under {results}", file=sys.stderr)
        sys.exit(2)
    print(summary(f"ALL on {hw}", every))


def summary(name, rows):
    inside = sum(1 for r in rows if r[3]["ok"])

    def median_width(metric):
        widths = [(r[3]["upper"] - r[3]["lower"]) / r[3]["predicted"] if r[3]["predicted"] > 0 else float("inf")
                  for r in rows if metric in r[3]["metric"]]
        return 100 * statistics.median(widths) if widths else float("nan")

    return (f"{name}: {inside} of {len(rows)} DRAM figures inside their interval "
            f"({100 * inside / max(1, len(rows)):.1f}%), median width {median_width('dram__'):.1f}% of the "
            f"prediction (reads {median_width('read'):.1f}%, writes {median_width('write'):.1f}%)")



# --- h100.l2_reuse_models
CHUNK = 64 * 1024
# measured miss per re-read (table_run3_single_pass.txt, launches 24-36)
MEASURED = {8: 0, 16: 0, 20: 0, 24: 0, 28: .042, 32: .127, 36: .280, 40: .463, 44: .660, 48: .769, 56: .906,
            64: .966, 96: 1.0}


class Lru:
    def __init__(self, cap, rng):
        self.cap, self.entries, self.used = cap, collections.OrderedDict(), 0

    def has(self, key):
        if key in self.entries:
            self.entries.move_to_end(key)
            return True
        return False

    def put(self, key, size):
        self.entries[key] = size
        self.used += size
        while self.used > self.cap:
            self.used -= self.entries.popitem(last=False)[1]


class RandomReplacement:
    def __init__(self, cap, rng):
        self.cap, self.keys, self.index, self.used, self.rng = cap, [], {}, 0, rng

    def has(self, key):
        return key in self.index

    def put(self, key, size):
        self.index[key] = len(self.keys)
        self.keys.append(key)
        self.used += size
        while self.used > self.cap:  # equal sizes: evict one at random
            i = self.rng.randrange(len(self.keys))
            victim, last = self.keys[i], self.keys[-1]
            self.keys[i], self.index[last] = last, i
            self.keys.pop()
            del self.index[victim]
            self.used -= size


def miss_per_reread(buffer_bytes, cache, parts, seed=0):
    rng = random.Random(seed)
    halves = [cache(50 * MIB // parts, rng) for _ in range(parts)]
    chunks, dram = buffer_bytes // CHUNK, 0
    size = CHUNK // parts  # a chunk's lines split evenly between the homes
    for cta in range(3 * chunks):
        chunk, side = cta % chunks, rng.randrange(parts)
        for home in range(parts):
            key = (chunk, home)
            if halves[side].has(key):
                continue
            if home != side and halves[home].has(key):
                halves[side].put(key, size)  # a copy in the reader's half
                continue
            dram += size
            halves[home].put(key, size)
            if home != side:
                halves[side].put(key, size)
    return (dram / buffer_bytes - 1) / 2


def l2_reuse_models():
    """Replacement models against the L2 probe's read-reuse curve (calibration h100.l2_reuse_bytes, launches 24-36:
    a buffer of B MiB read 3 times in 64 KB chunks by CTAs on other SMs), each on the same access pattern, its miss
    per re-read beside the measured one: one LRU of the whole 50 MiB; two partitions of 25 MiB (each line homed in
    one, a copy kept in the reader's partition, as the H100's L2 keeps data read across its two halves) with LRU
    or with random replacement. CTAs land on either half at random."""
    models = [("LRU, 50 MiB", Lru, 1), ("LRU, 2 x 25 MiB + copies", Lru, 2),
              ("random, 2 x 25 MiB + copies", RandomReplacement, 2)]
    print(f"{'buffer MiB':>10} {'measured':>9} " + " ".join(f"{name:>28}" for name, _, _ in models))
    for mib, measured in MEASURED.items():
        row = [miss_per_reread(mib * MIB, cache, parts) for _, cache, parts in models]
        print(f"{mib:>10} {measured:>9.3f} " + " ".join(f"{v:>28.3f}" for v in row))



# --- fa3.step_costs_h100
FA3_SMS = 132          # the H100 SXM5's SMs: the calibration grids are 1056 = 8 x 132 tiles
FA3_TILES_PER_SM = 8
# the hand-kept forward tiles (Br, Bc, stages): a calibration line without its tile is of these
FA3_FWD_TILES = {64: (128, 128, 2), 96: (128, 128, 2), 128: (128, 128, 2), 256: (128, 64, 2)}
# the backward's tiles (Br, Bc, stages); d256's calibration has 256 keys (4 key blocks of 64, as 512 keys are of 128)
FA3_BWD_TILES = {64: (64, 128, 2), 96: (64, 128, 2), 128: (64, 128, 2), 256: (64, 64, 1)}
# The forward's points kept: 1 .. 32 key blocks a tile. At 128 (fa3_tune.sh's run of 2026-11-26, run2) the
# calibration shape, every SM streaming one shared K / V head, ran the heavy tiles' steps 10-40% slower than the
# bench grid's (d128 Bc128: 240 us a 128-step tile against 213 in the grid's d128 n16384 launch), and the ranking
# of the autotune got worse: the shape stops standing for real launches there (the results README).
FA3_FWD_MAX_STEPS = 32
FA3_CALIB = os.path.join(RESULTS, "fa3_model_h100_2026-11-26", "run2")


def profile_path(hw):
    """The built-in profile file named `hw`."""
    for path in glob.glob(os.path.join(ROOT, "tiling_sim/profiles/*.json")):
        with open(path) as f:
            if json.load(f).get("name") == hw:
                return path
    raise ValueError(f"no built-in profile named {hw}")


def fa3_profile_latency(hw="H100-SXM5-80GB"):
    """A built-in profile's kernel_latency_s, its own or the profile it inherits."""
    with open(profile_path(hw)) as f:
        j = json.load(f)
    return j["kernel_latency_s"] if "kernel_latency_s" in j else fa3_profile_latency(j["inherits"])


def fa3_steps(results=FA3_CALIB, hw="H100-SXM5-80GB", spread=False, only=""):
    """The profile's measured_steps from fa3_calib.sh's records: the forward by CUDA events (calib_events.txt:
    264 query heads over one K / V head, 512 queries, 128 .. 4096 keys; spread: calib_spread_events.txt, the
    same shapes with the query heads over as many K / V heads as stay L2-resident), the backward's main kernel by
    ncu at the card's clocks (bwd_ncu/ncu_bwd_calib_d*_sq*.csv: 264 heads, 4 key blocks (512 keys, 256 at d256),
    64 .. 4096 queries); 8 tiles an SM in every run, so a tile of n steps costs (time - kernel_latency_s) / 8,
    with the latency of the profile hw (the card that ran them); only: these kernels' entries (comma-separated)."""
    import re
    latency = fa3_profile_latency(hw)
    fwd = {}  # (d, (Br, Bc, stages), persistent) -> [(keys, seconds)]
    with open(os.path.join(results, "calib_spread_events.txt" if spread else "calib_events.txt")) as f:
        for line in f:
            # a line names its instance (" Br128 Bc64 st2") since the candidates were timed; before, the hand-kept
            # tile of its head dim
            m = re.match(r"time b1 h264 hkv" + (r"\d+" if spread else "1") + r" sq512 sk(\d+) d(\d+) full "
                         r"persistent(\d) pingpong1(?: Br(\d+) Bc(\d+) st(\d+))?: ([\d.]+) ms", line)
            if m:
                d = int(m[2])
                tile = (int(m[4]), int(m[5]), int(m[6])) if m[4] else FA3_FWD_TILES[d]
                fwd.setdefault((d, tile, bool(int(m[3]))), []).append((int(m[1]), float(m[7]) * 1e-3))
    entries = []

    def entry(kernel, d, tile, persistent, steps_times):
        br, bc, stages = tile
        points = [[steps, float(f"{(t - latency) / FA3_TILES_PER_SM:.4g}")] for steps, t in sorted(steps_times)]
        entries.append({"kernel": kernel, "head_dim": d, "block_q": br, "block_k": bc, "stages": stages,
                        "persistent": persistent, "tile_s_by_steps": points})

    for (d, tile, persistent), runs in sorted(fwd.items()):
        by_keys = collections.defaultdict(list)  # fa3_dev's calib rounds: a line a shape each round
        for sk, t in runs:
            by_keys[sk].append(t)
        entry("fwd_fa3", d, tile, persistent, [(sk // tile[1], statistics.median(ts)) for sk, ts in by_keys.items()
                                               if sk // tile[1] <= FA3_FWD_MAX_STEPS])
    # the backward's runs: the folder's own, else the calibration run's (fa3_tune.sh times the forward alone)
    bwd_dir = os.path.join(results, "bwd_ncu")
    if not os.path.isdir(bwd_dir):
        bwd_dir = os.path.join(FA3_CALIB, "bwd_ncu")
        print(f"# the backward's entries from {os.path.relpath(bwd_dir, ROOT)}", file=sys.stderr)
    for d, tile in FA3_BWD_TILES.items():
        runs = []
        if not any(re.match(rf"ncu_bwd_calib_d{d}_sq\d+\.csv$", n) for n in os.listdir(bwd_dir)):
            continue  # a head dim the run did not calibrate (d256's backward came after 2026-11-26)
        for name in sorted(os.listdir(bwd_dir)):
            m = re.match(rf"ncu_bwd_calib_d{d}_sq(\d+)\.csv$", name)
            if not m:
                continue
            metrics, names = read_metrics(os.path.join(bwd_dir, name))
            main = [k for k, n in names.items() if "flashsim_fa3_bwd_kernel" in n]
            runs.append((int(m[1]) // tile[0], metrics[main[0]]["gpu__time_duration.sum"] * 1e-9))
        entry("bwd_fa3", d, tile, False, runs)
    if only:
        entries = [e for e in entries if e["kernel"] in only.split(",")]
    print(json.dumps(entries).replace("}, {", "},\n {"))
    return entries


def fa3_predict(flashsim, kernel, shape, hw="H100-SXM5-80GB"):
    """flashsim sim predict's time_s of one fa3 kernel model on a held-out shape (b h hkv sq sk d wl wr)."""
    b, h, hkv, sq, sk, d, wl, wr = shape
    cmd = [flashsim, "sim", "predict", "--kernel", kernel, "--hw", hw, "--batch", str(b), "--heads", str(h), "--heads-kv",
           str(hkv), "--seqlen-q", str(sq), "--seqlen-k", str(sk), "--head-dim", str(d), "--dtype", "bf16", "--json"]
    if wl >= 0 or wr >= 0:
        cmd += ["--window", f"{wl},{wr}"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out)["kernels"][0]["time_s"]


def read_fwdshape(path):
    """fa3_dev's `fwdshape` lines of a file: shape (b h hkv sq sk d wl wr) -> the forward's seconds."""
    import re
    with open(path) as f:
        return {tuple(map(int, m[1].split())): float(m[2]) * 1e-3
                for m in (re.match(r"fwdshape ([-\d ]+): ([\d.]+) ms", line) for line in f) if m}


def fa3_heldout(flashsim, results=FA3_CALIB, hw="H100-SXM5-80GB"):
    """The held-out shapes (bench/gpu/data/fa3_heldout.txt, drawn before the run) against the model: the forward's
    time (CUDA events, heldout_fwd.txt), the backward main kernel's (ncu) and the backward kernels' L2 -> SM
    bytes (traffic compare)."""
    rows, fwd_ratios, bwd_ratios, byte_fails = [], [], [], 0
    fwd = read_fwdshape(os.path.join(results, "heldout_fwd.txt"))
    for shape, measured in fwd.items():
        pred = fa3_predict(flashsim, "fwd_fa3", shape, hw)
        fwd_ratios.append(measured / pred)
        line = f"{' '.join(map(str, shape)):34s} fwd {measured * 1e6:9.1f} us / {pred * 1e6:9.1f} = {measured / pred:.3f}"
        csv_path = os.path.join(results, "bwd_ncu", "ncu_bwd_heldout_" + "_".join(map(str, shape)) + ".csv")
        if os.path.exists(csv_path):
            metrics, names = read_metrics(csv_path)
            main = [k for k, n in names.items() if "flashsim_fa3_bwd_kernel" in n][0]
            bm = metrics[main]["gpu__time_duration.sum"] * 1e-9
            bp = fa3_predict(flashsim, "bwd_fa3", shape, hw)
            bwd_ratios.append(bm / bp)
            b, h, hkv, sq, sk, d, wl, wr = shape
            cmd = [flashsim, "traffic", "compare", "--ncu", csv_path, "--hw", hw, "--batch", str(b), "--heads", str(h),
                   "--heads-kv", str(hkv), "--seqlen-q", str(sq), "--seqlen-k", str(sk), "--head-dim", str(d),
                   "--dtype", "bf16", "--json"] + (["--window", f"{wl},{wr}"] if wl >= 0 or wr >= 0 else [])
            js = json.loads(subprocess.run(cmd, capture_output=True, text=True).stdout)
            sm_side = [m for k in js["kernels"] for m in k["metrics"]
                       if m["metric"].startswith(("l1tex__", "lts__t_sectors")) and "local" not in m["metric"]]
            worst = max(abs(m["ratio"] - 1) for m in sm_side)
            byte_fails += sum(not m["ok"] for m in sm_side)
            line += f"   bwd main {bm * 1e6:9.1f} us / {bp * 1e6:9.1f} = {bm / bp:.3f}   SM-side bytes worst {worst:.2%}"
        rows.append(line)
    print("\n".join(rows))
    for name, r in (("forward", fwd_ratios), ("backward main", bwd_ratios)):
        dev = sorted(abs(x - 1) for x in r)
        print(f"{name}: {len(r)} shapes, measured / predicted {min(r):.3f} .. {max(r):.3f}, median |error| "
              f"{statistics.median(dev):.1%}, within 15%: {sum(d <= 0.15 for d in dev)} of {len(r)}")
    print(f"SM-side byte metrics out of 2%: {byte_fails}")


# --- fa2.step_costs_h100 (issue 31): the FA2 backward main kernels' per-CTA costs, and the held-out check
FA2_MODEL = os.path.join(RESULTS, "fa2_model_h100_2026-11-27")
# the main backward kernels: simulator model -> the ncu name's prefix and the traits' first four integers
FA2_BWD_MAIN = {"bwd_dq_dk_dv_group": (r"flashsim_fa2_bwd_main_kernel<\s*([\d\s,]+)", "ours"),
                "bwd_dq_dk_dv": (r"flash_bwd_dq_dk_dv\w*<.*?Flash_bwd_kernel_traits<\s*([\d\s,]+)", "sdpa")}


def fa2_reports(archive):
    """The CSVs of a recorded fa2-steps / fa2-heldout archive, unpacked into a temporary folder: name -> path."""
    tmp = tempfile.mkdtemp()
    with tarfile.open(archive) as t:
        t.extractall(tmp, filter="data")
    return {n: os.path.join(tmp, n) for n in os.listdir(tmp) if n.endswith(".csv")}


# the forward kernels: simulator model -> the ncu name's traits (head dim, Br, Bc, warps) and whose report
FA2_FWD = {"fwd_fa2_v1": (r"flashsim_fa2_fwd_kernel<\s*([\d\s,]+)", "ours"),
           "fwd_fa2": (r"flash_fwd_kernel<Flash_fwd_kernel_traits<\s*([\d\s,]+)", "sdpa")}


def fa2_kernel_time(path, pattern):
    """(seconds, (head dim, Br, Bc, warps)) of the report's kernel whose name matches `pattern`."""
    import re
    metrics, names = read_metrics(path)
    for k, name in names.items():
        m = re.search(pattern, name)
        if m:
            traits = tuple(int(x) for x in m[1].replace(" ", "").split(",")[:4])
            return metrics[k]["gpu__time_duration.sum"] * 1e-9, traits
    raise ValueError(f"{path}: no kernel matching {pattern}")


def fa2_main_kernel(path, model):
    """(seconds, (head dim, Br, Bc, warps)) of a report's main backward kernel of `model`."""
    return fa2_kernel_time(path, FA2_BWD_MAIN[model][0])


def fa2_forward_ctas(b, h, n, br, bc):
    """A square causal forward's CTAs in launch order (query blocks fastest): (key-block steps, masked steps), as
    the fwd_fa2 models list them (tiling_sim/src/kernels/fa2_forward.cpp: the diagonal's blocks masked)."""
    one = []
    for m in range(-(-n // br)):
        q0 = m * br
        n_max = -(-min(n, q0 + br) // bc)
        full_hi = 0 if q0 + 1 < bc else (q0 + 1) // bc
        one.append((n_max, sum(1 for j in range(n_max) if j >= full_hi)))
    return one * (b * h)


def measured_makespan(ctas, points, masked_s, slots=FA3_SMS):
    """tiling_sim/src/kernels/measured_steps.cpp's makespan: CTAs dealt in launch order to the SMs."""
    import heapq
    pts = sorted(points)

    def tile(steps):  # linear between the points, the last two's slope past them, the first two's below
        (a, ta), (b_, tb) = (pts[0], pts[1]) if steps < pts[0][0] else next(
            ((p, q) for p, q in zip(pts, pts[1:]) if steps <= q[0]), (pts[-2], pts[-1]))
        return max(0.0, ta + (tb - ta) * (steps - a) / (b_ - a))

    heap = [0.0] * slots
    for steps, masked in ctas:
        heapq.heappush(heap, heapq.heappop(heap) + (tile(steps) + masked * masked_s if steps else 0.0))
    return max(heap)


def fa2_steps(results=FA2_MODEL):
    """The profile's measured_steps of the FA2 kernels (flashsim's and FlashAttention-2's, as PyTorch's SDPA builds
    it) from `run.py traffic fa2-steps`' reports: square non-causal problems of 1056 CTAs at 128-row tiles (2112 at
    64), every CTA walking n / Br query blocks (backward) or n / Bc key blocks (forward); an SM's seconds for a CTA
    of that many steps = (time - kernel_latency_s) x SMs / CTAs. The forward's masked step: what makes the model's
    makespan of the n4096 causal problem its measured time (the n1024 one checks it)."""
    from ncu import FA2_STEPS
    latency = fa3_profile_latency()
    reports = fa2_reports(os.path.join(results, "steps", "fa2-steps_csvs.tar.gz"))

    def report(who, pass_, name):
        return reports[f"ncu_ours_{pass_}_{name}.csv" if who == "ours" else f"ncu_sdpa_{name}.csv"]

    points = collections.defaultdict(list)  # (model, (d, Br, Bc)) -> [(steps, seconds)]
    for name, (b, h, hkv, n, d, causal) in FA2_STEPS.items():
        if causal:
            continue
        for model, (pattern, who) in FA2_BWD_MAIN.items():
            t, (hd, br, bc, warps) = fa2_kernel_time(report(who, "bwd", name), pattern)
            points[(model, (hd, br, bc))].append((n // br, (t - latency) * FA3_SMS / (-(-n // bc) * b * h)))
        for model, (pattern, who) in FA2_FWD.items():
            t, (hd, br, bc, warps) = fa2_kernel_time(report(who, "fwd", name), pattern)
            points[(model, (hd, br, bc))].append((n // bc, (t - latency) * FA3_SMS / (-(-n // br) * b * h)))
    entries = []
    for (model, (hd, br, bc)), pts in sorted(points.items()):
        pts = [(s, float(f"{t:.4g}")) for s, t in sorted(pts)]
        e = {"kernel": model, "head_dim": hd, "block_q": br, "block_k": bc, "stages": 1, "persistent": False,
             "tile_s_by_steps": [list(p) for p in pts]}
        if model in FA2_FWD:
            pattern, who = FA2_FWD[model]
            fit, check = (f"steps_d{hd}_n4096_causal", f"steps_d{hd}_n1024_causal")
            b, h, _, n, _, _ = FA2_STEPS[fit]
            t = fa2_kernel_time(report(who, "fwd", fit), pattern)[0] - latency
            ctas = fa2_forward_ctas(b, h, n, br, bc)
            lo, hi = -pts[-1][1], 100 * pts[-1][1]  # bisection: the makespan grows with the masked step's cost
            for _ in range(60):
                mid = (lo + hi) / 2
                lo, hi = (mid, hi) if measured_makespan(ctas, pts, mid) < t else (lo, mid)
            e["masked_step_s"] = float(f"{lo:.4g}")
            b, h, _, n, _, _ = FA2_STEPS[check]
            tc = fa2_kernel_time(report(who, "fwd", check), pattern)[0] - latency
            pc = measured_makespan(fa2_forward_ctas(b, h, n, br, bc), pts, lo)
            print(f"# {model} d{hd}: masked step {lo * 1e6:.2f} us (a step {(pts[-1][1] - pts[-2][1]) / (pts[-1][0] - pts[-2][0]) * 1e6:.2f}); "
                  f"{check}: measured / predicted {tc / pc:.3f}", file=sys.stderr)
        entries.append(e)
    print(json.dumps(entries).replace("}, {", "},\n {"))
    return entries


def fa2_heldout(flashsim, results=FA2_MODEL):
    """The held-out problems (bench/gpu/data/fa2_heldout.txt, drawn before the run) against the model, by
    `flashsim traffic compare` of every recorded report: fa2-v1's forward and backward, SDPA's flash forward and
    backward. The forward's and the main backward kernel's time, the SM-side bytes (2%), the DRAM ranges."""
    from run import heldout_problems
    reports = fa2_reports(os.path.join(results, "heldout", "fa2-heldout_csvs.tar.gz"))
    times = collections.defaultdict(list)  # (who, fwd | bwd) -> [measured / predicted]
    byte_fails, dram_in, dram_all, misses = [], 0, 0, []
    for name, (b, h, hkv, n, d, causal) in heldout_problems().items():
        flags = ["--batch", str(b), "--heads", str(h), "--heads-kv", str(hkv), "--seqlen", str(n), "--head-dim",
                 str(d), "--dtype", "bf16"] + (["--causal"] if causal else [])
        line = f"{name:40s}"
        for who, files in (("fa2-v1", (f"ncu_ours_fwd_{name}.csv", f"ncu_ours_bwd_{name}.csv")),
                           ("sdpa", (f"ncu_sdpa_{name}.csv",))):
            for f in files:
                out = subprocess.run([flashsim, "traffic", "compare", "--ncu", reports[f], "--json"] + flags,
                                     capture_output=True, text=True)
                if out.returncode not in (0, 1):
                    raise RuntimeError(f"{f}: {out.stderr.strip()}")
                for k in json.loads(out.stdout)["kernels"]:
                    main = k["name"].startswith("fwd_") or k["name"].startswith("bwd_dq_dk_dv")
                    for m in k["metrics"]:
                        metric = m["metric"]
                        if metric == "gpu__time_duration.sum" and main:
                            kind = "fwd" if k["name"].startswith("fwd_") else "bwd"
                            times[(who, kind)].append(m["ratio"])
                            line += f"  {who} {kind} {m['ratio']:.3f}"
                        elif metric.startswith("dram__"):
                            dram_all += 1
                            dram_in += m["ok"]
                            if not m["ok"]:
                                misses.append(f"{name} {k['name']} {metric}: {m['verdict']}")
                        elif metric.startswith(("l1tex__m_", "l1tex__t_bytes_pipe_lsu_mem_global")) and not m["ok"]:
                            byte_fails.append(f"{name} {k['name']} {metric}: {m['ratio']:.4f}")
        print(line)
    for (who, kind), r in sorted(times.items()):
        dev = sorted(abs(x - 1) for x in r)
        print(f"{who} {kind}: {len(r)} problems, measured / predicted {min(r):.3f} .. {max(r):.3f}, median |error| "
              f"{statistics.median(dev):.1%}, within 15%: {sum(x <= 0.15 for x in dev)} of {len(r)}")
    print(f"SM-side byte figures out of 2%: {len(byte_fails)}")
    print("\n".join("  " + x for x in byte_fails))
    print(f"DRAM figures inside their range: {dram_in} of {dram_all} ({dram_in / max(1, dram_all):.1%})")
    print("\n".join("  " + x for x in misses))
    return 0



# --- decode.load_h200: the split-KV decode under load
DECODE_LOAD = os.path.join(RESULTS, "decode_h200_2026-11-28", "load_probe_2026-11-29")


def decode_tile(version, d):
    """(Br, Bc, stages) of a decode version's bf16 tile at head dim d (= dv) and the probe's 4-query-head groups
    (families/decode/include/flashsim/families/decode/traits.h): decode-v2 16 rows, 64 keys, 3 stages (2 at d256,
    whose stages are 64 KiB); decode-v1 4 rows, a tile of at most 32 KiB of K and V (128 keys at d64, 64 at d128,
    32 at d256), 3 stages."""
    if version == "decode-v2":
        return 16, 64, 2 if d > 128 else 3
    return 4, min(128, max(16, 32768 // (4 * d))), 3


def decode_slots(flashsim, hw, d, tile):
    """The split kernel's resident CTAs as the model counts them (its occupancy: what it deals a launch to), from
    `flashsim sim tune --kernel splitkv` at the tile."""
    br, bc, stages = tile
    out = subprocess.run([flashsim, "sim", "tune", "--kernel", "splitkv", "--split-tile", str(br), str(bc), "4",
                          str(stages), "--hw", hw, "--head-dims", str(d), "--batches", "1", "--cache-lens", "1024",
                          "--page-sizes", "16", "--heads", "4", "--heads-kv", "1", "--json"],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["entries"][0]["splits"][0]["split_resident_ctas"]


def write_measured_steps(hw, entries, path=None):
    """Merges `entries` into the built-in profile `hw`'s measured_steps, in place: an entry of the same key
    (kernel, head dim, Br, Bc, stages, persistent) takes the new `load`, the others are appended whole. The file
    keeps one entry a line. path: another file of that form."""
    path = path or profile_path(hw)
    with open(path) as f:
        lines = f.read().split("\n")
    prefix = ' "measured_steps": ['
    key = lambda e: (e["kernel"], e["head_dim"], e["block_q"], e["block_k"], e["stages"], e.get("persistent", False))
    start = next((i for i, line in enumerate(lines) if line.startswith(prefix)), None)
    if start is None:
        raise ValueError(f"{path} has no measured_steps list of one entry a line")
    end = next(i for i in range(start, len(lines)) if lines[i].rstrip().endswith("}],"))
    held = []
    for i in range(start, end + 1):
        body = (lines[i][len(prefix):] if i == start else lines[i].strip()).rstrip()
        held.append(json.loads(body[:-2] if body.endswith("}],") else body[:-1]))
    by_key = {key(e): e for e in held}
    for e in entries:
        if key(e) in by_key:
            by_key[key(e)]["load"] = e["load"]
        else:
            held.append(e)
    lines[start:end + 1] = [(prefix if n == 0 else "   ") + json.dumps(e) + ("]," if n == len(held) - 1 else ",")
                            for n, e in enumerate(held)]
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return path


def decode_load(results, hw="H200", head_dim=128, flashsim=os.path.join(ROOT, "build/default/flashsim"),
                write=False):
    """The load probe's lines (`run.py decode --grid "--heads 4 --heads-kv 1 --batches 1,66,132,264,528
    --cache-lens 128,...,8192 --page-sizes 16,256 [--head-dim D]"`: one CTA a sequence at one split): for each
    version, page size and batch, its time against the key tiles a CTA streams, a line. With C CTAs over the
    model's S resident slots, w = ceil(C / S) of them run one after another on a slot: a step takes slope / w, a
    CTA's fixed time is (intercept - kernel_latency_s) / w, at min(C, S) CTAs streaming. Prints each line and the
    profile's entries: `load` (points of equal CTAs averaged) and, for a tile the profile has no entry of,
    `tile_s_by_steps` (one sequence's line at the two longest lengths, the last page size's: a lone CTA's step).
    write: merge them into the built-in profile `hw` (write_measured_steps)."""
    from tables import read_decode_csv
    latency = fa3_profile_latency(hw)
    out = {}
    for version in ("decode-v2", "decode-v1"):
        br, bc, stages = decode_tile(version, head_dim)
        path = os.path.join(results, f"decode_bench_{version}.csv")
        if not os.path.exists(path):
            continue
        _, rows = read_decode_csv(path)
        rows = [r for r in rows if r["num_splits"] == 1]
        slots = decode_slots(flashsim, hw, head_dim, (br, bc, stages))
        loads, lone = [], []
        for page in sorted({int(r["page_size"]) for r in rows}):
            points = collections.defaultdict(list)
            for batch in sorted({int(r["batch"]) for r in rows}):
                line = [(math.ceil(r["cache_len"] / bc), r["ms"] * 1e-3) for r in rows
                        if int(r["batch"]) == batch and int(r["page_size"]) == page]
                if len(line) < 2:
                    continue
                slope, intercept = statistics.linear_regression(*zip(*line))  # least squares
                waves = math.ceil(batch / slots)
                step, fixed = slope / waves, max(0.0, (intercept - latency) / waves)
                print(f"{version} page {page} b{batch}: {min(batch, slots)} CTAs streaming, a step {step * 1e6:.3f} us, "
                      f"a CTA's fixed {fixed * 1e6:.2f} us ({waves} on a slot; line {slope * 1e6:.3f} us a step + "
                      f"{intercept * 1e6:.1f} us)")
                points[min(batch, slots)].append((step, fixed))
                if batch == 1:  # a lone CTA's line at the two longest lengths: the entry's tile_s_by_steps
                    longest = sorted(n for n, _ in line)[-2:]
                    lone = [[n, float(f"{intercept + slope * n:.6g}")] for n in longest]
            loads.append({"page_size": page, "points": [
                [c, float(f"{statistics.mean(s for s, _ in v):.4g}"), float(f"{statistics.mean(f for _, f in v):.4g}")]
                for c, v in sorted(points.items())]})
        out[version] = {"kernel": "fwd_splitkv", "head_dim": head_dim, "block_q": br, "block_k": bc,
                        "stages": stages, "persistent": False, "tile_s_by_steps": lone, "load": loads}
    if not out:
        raise ValueError(f"no decode_bench_decode-v1.csv or decode_bench_decode-v2.csv in {results}")
    for version, entry in out.items():
        print(f"{version}: {json.dumps(entry)}")
    if write:
        print(f"wrote {os.path.relpath(write_measured_steps(hw, list(out.values())), ROOT)}")
    return out
