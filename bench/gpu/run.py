#!/usr/bin/env python3
"""One driver for GPU-machine work: pack here, run there, tabulate and derive here.

  python3 bench/gpu/run.py bundle [--build DIR] [--out DIR] [--python] [--golden-subset SUITE]   (here)
  python3 bench/gpu/run.py check [--kernels K] [--dq partials] [--tiles "..."] [--no-sanitize]  (GPU)
  python3 bench/gpu/run.py bench [--grid "..."] [--kernels K] [--tag T]                         (GPU)
  python3 bench/gpu/run.py traffic fa2|own|sdpa|tiles|autotune-tiles|layouts|metric-sets ...    (GPU, ncu)
  python3 bench/gpu/run.py compare [--set first|repeat|validation|validation2] [--replayed]     (here)
  python3 bench/gpu/run.py autotune [--kernel K] [--no-check] [--no-time] [--grid small|"..."] [--budget-s S] (GPU)
  python3 bench/gpu/run.py tune-validate                                                         (GPU)
  python3 bench/gpu/run.py probe l2|launch|cta-rates|cta-stream [--probes NAME]                (GPU)
  python3 bench/gpu/run.py decode [--grid "..."] [--sdpa-grid "..."] [--no-check|--no-sanitize] [--no-bench] (GPU)
  python3 bench/gpu/run.py sparse [--tiles "..."] [--bench "..."] [--no-check] [--no-bench]     (GPU)
  python3 bench/gpu/run.py sdpa bench|once|decode|decode-once|golden ...                        (GPU, PyTorch)
  python3 bench/gpu/run.py python-check [SUITE...]                                               (GPU, PyTorch)
  python3 bench/gpu/run.py peers [--kernels K] [--suites S] [--time N] [--budget-s S]           (GPU, PyTorch)
  python3 bench/gpu/run.py table bench|l2|launch|spread|check|agree|peers FILES...              (anywhere)
  python3 bench/gpu/run.py derive l2-adverse|l2-partitioned[-check]|l2-capacity|l2-replacement|dram-coverage|l2-reuse-models|fa2-steps|fa2-heldout [...] (here)
  python3 bench/gpu/run.py resources|spills BINARY [...]                                         (where nvcc is)

On the GPU machine the bundle (`--bundle`, default .gpu-bundle) is unpacked once and its libraries put on the
loader's path; everything is written to `--out` (default $OUT, else .). Each verb's --help says more. The
measured constants these runs produce are listed, with their commands, in bench/calibration.json.
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "peers"))
import bundle as bundle_mod  # noqa: E402
import ncu  # noqa: E402
import tables  # noqa: E402

PROBES = {  # name -> (source, ncu metric set or None to run the binary alone, runs)
    "l2": ("l2_probe.cu", "probe", 1),
    "launch": ("launch_probe.cu", "launch", 3),
    "cta-rates": ("cta_rates_probe.cu", None, 1),
    "cta-stream": ("cta_stream_probe.cu", None, 1),
    "launch-pair": ("launch_pair_probe.cu", None, 1),
}


def say(*args):
    print(*args, flush=True)


def sh(cmd, out=None, err=None, env=None, check=False, timeout=None):
    """Runs cmd (a list), stdout / stderr to the files given (else inherited); returns the exit code."""
    fo = open(out, "w") if out else None
    fe = (fo if err == out else open(err, "w")) if err else None
    try:
        return subprocess.run(cmd, stdout=fo, stderr=fe, env=env, check=check, timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        return 124
    finally:
        for f in {fo, fe} - {None}:
            f.close()


def read(path):
    with open(path, errors="replace") as f:
        return f.read()


class Gpu:
    """The GPU machine's side: the unpacked bundle, its environment, the output folder."""

    def __init__(self, args):
        os.chdir(ROOT)
        self.bundle = args.bundle
        self.out = args.out
        os.makedirs(self.out, exist_ok=True)
        self.env = bundle_mod.unpack(self.bundle)
        self.flashsim = os.path.join(self.bundle, "flashsim")
        self.fg = os.path.join(self.bundle, "flashsim-gpu")

    def path(self, *names):
        return os.path.join(self.out, *names)

    def gpu_txt(self, name="gpu.txt"):
        sh(["nvidia-smi", "-L"], out=self.path(name))
        say(read(self.path(name)).strip())

    def golden(self, suite, where):
        sh([self.flashsim, "golden", "generate", "--suite", suite, "--out", where, "--force"], out=os.devnull,
           env=self.env)
        return where

    def check(self, golden, name, extra=(), summary=True, env=None):
        """flashsim-gpu check of a suite into log `name`, its summary printed; env: variables set beside the
        bundle's."""
        log = self.path(name)
        rc = sh([self.fg, "check", "--golden", golden] + list(extra), out=log, err=log, env=dict(self.env, **(env or {})))
        if summary:
            say(f"{name}: exit {rc}")
            say("\n".join(tables.check_summary(read(log))[:20]))
        return rc, read(log)


def sanitize_small(g, golden, tag, flags, max_bytes):
    """compute-sanitizer memcheck, racecheck and synccheck on the cases of a suite whose file is under max_bytes,
    each tool's log sanitizer_<tool>_<tag>_small.txt, its summary printed."""
    with open(os.path.join(golden, "manifest.json")) as f:
        small = [c["name"] for c in json.load(f)["cases"]
                 if os.path.getsize(os.path.join(golden, c["file"])) < max_bytes]
    for tool in ("memcheck", "racecheck", "synccheck"):
        log = g.path(f"sanitizer_{tool}_{tag}_small.txt")
        rc = sh(["compute-sanitizer", "--tool", tool, "--error-exitcode", "3", g.fg, "check", "--golden", golden,
                 "--quiet"] + list(flags) + [x for c in small for x in ("--case", c)], out=log, err=log, env=g.env)
        say(f"compute-sanitizer {tool} on {len(small)} small {tag} cases: exit {rc}")
        say("\n".join(tables.check_summary(read(log))))


def kernels_flag(args):
    return ["--kernel", args.kernels] if args.kernels else []


# --- verbs

def cmd_bundle(args):
    os.chdir(ROOT)
    if args.golden_subset:
        n = bundle_mod.golden_subset(args.golden_subset, "gpu_golden/default")
        os.makedirs("gpu_golden/wheels", exist_ok=True)
        sh([sys.executable, "-m", "pip", "download", "-q", "safetensors==0.8.0", "--no-deps", "-d", "gpu_golden/wheels"])
        say(f"{n} cases in gpu_golden/default (carry gpu_golden; then run.py sdpa golden OUT)")
        return 0
    if args.python:
        files = bundle_mod.pack_python(args.out or ".gpu-bundle-py", python=args.python_exe)
    else:
        files = bundle_mod.pack(args.build, args.out or ".gpu-bundle", binaries=args.binaries.split(","),
                                strip=not args.no_strip, compress=not args.no_compress)
    out = os.path.relpath(args.out, ROOT) if args.out else (".gpu-bundle-py" if args.python else ".gpu-bundle")
    say(f"{out}: {' '.join(files)}")
    return 0


def cmd_check(args):
    """Every CUDA kernel version on the smoke suite (committed), the default suite and the fa2-tiles suite
    (suites/fa2_tiles.json: the default's features at d96, d128, d256), each at its launch tiles; optionally the
    deterministic backward (--dq) and other tiles (--tiles); fa3-v1 also on the fa3-walk suite (suites/fa3_walk.json:
    persistent grids of several tiles a CTA) at the rule's walk, the balanced and the static one; then
    compute-sanitizer memcheck, racecheck and synccheck on smoke and on the default suite's small cases (fa3-v1:
    memcheck of two fa3-walk cases walked balanced)."""
    g = Gpu(args)
    g.gpu_txt()
    default = g.golden("default", "/tmp/golden-default")
    tiles = g.golden(os.path.join(HERE, "suites", "fa2_tiles.json"), "/tmp/golden-fa2-tiles")
    for suite in ("golden/data/smoke", default, tiles):
        g.check(suite, f"check_{os.path.basename(suite)}.txt", kernels_flag(args))
    listed = subprocess.run([g.fg, "list"], capture_output=True, text=True, env=g.env).stdout
    fa3 = "fa3-v1" in (args.kernels.split(",") if args.kernels else listed.split())  # not in a build without CUTLASS
    walk = g.golden(os.path.join(HERE, "suites", "fa3_walk.json"), "/tmp/golden-fa3-walk") if fa3 else None
    if fa3:
        for mode in ("", "balanced", "static"):
            g.check(walk, f"check_fa3_walk{'_' + mode if mode else ''}.txt", ["--kernel", "fa3-v1"],
                    env={"FLASHSIM_FA3_WALK": mode})
    if args.dq:
        for suite in (default, tiles):
            g.check(suite, f"check_{os.path.basename(suite)}_dq_{args.dq}.txt",
                    kernels_flag(args) + ["--dq-strategy", args.dq])
    if args.tiles:
        g.check(tiles, "check_tiles_override.txt", kernels_flag(args) + args.tiles.split())
    if args.no_sanitize:
        return 0
    with open(os.path.join(default, "manifest.json")) as f:
        small = [c["name"] for c in json.load(f)["cases"] if os.path.getsize(os.path.join(default, c["file"])) < 1 << 20]
    for tool in ("memcheck", "racecheck", "synccheck"):
        for golden, name, cases in (("golden/data/smoke", f"sanitizer_{tool}.txt", []),
                                    (default, f"sanitizer_{tool}_default_small.txt", small)):
            log = g.path(name)
            rc = sh(["compute-sanitizer", "--tool", tool, "--error-exitcode", "3", g.fg, "check", "--golden", golden]
                    + [x for c in cases for x in ("--case", c)] + kernels_flag(args) + ["--quiet"],
                    out=log, err=log, env=g.env)
            say(f"compute-sanitizer {tool} {name}: exit {rc}")
            say("\n".join(tables.check_summary(read(log))))
    if fa3:
        log = g.path("sanitizer_memcheck_fa3_walk.txt")
        rc = sh(["compute-sanitizer", "--tool", "memcheck", "--error-exitcode", "3", g.fg, "check", "--golden", walk,
                 "--kernel", "fa3-v1", "--quiet", "--case", "causal-d64-b2h12-n1024", "--case", "varlen-d96-h6"],
                out=log, err=log, env=dict(g.env, FLASHSIM_FA3_WALK="balanced"))
        say(f"compute-sanitizer memcheck on two fa3-walk cases walked balanced: exit {rc}")
        say("\n".join(tables.check_summary(read(log))))
    return 0


def cmd_bench(args):
    """Our CUDA kernel versions (flashsim-gpu bench --csv) and PyTorch's SDPA backends (sdpa.py bench) on the same
    grid in the same run, then one table with each of ours beside SDPA's flash and cuDNN backends and the ratio.
    --rounds N runs the pair N times in alternating order (ours first, then SDPA first, ...) and takes each row's
    median round: a card whose power cap lowers its clock during a run (an H200 moved one kernel 7% between two
    rounds, calibration fa3.tune_rounds_h200) would otherwise favour whichever side ran first."""
    g = Gpu(args)
    g.gpu_txt()
    grid = args.grid.split() if args.grid else []
    rounds = {"ours": [], "sdpa": []}
    for i in range(args.rounds):
        tag = args.tag + (f"_r{i + 1}" if args.rounds > 1 else "")
        ours, sdpa = g.path(f"bench_ours{tag}.csv"), g.path(f"bench_sdpa{tag}.csv")
        runs = [("ours", "flashsim-gpu bench", [g.fg, "bench", "--csv"] + kernels_flag(args) + grid, ours, g.env),
                ("sdpa", "sdpa.py bench", [sys.executable, os.path.join(HERE, "sdpa.py"), "bench"] + grid, sdpa, None)]
        for side, label, cmd, out, env in (runs if i % 2 == 0 else runs[::-1]):
            say(f"{label} (round {i + 1} of {args.rounds}): exit", sh(cmd, out=out, env=env))
            rounds[side].append(tables.read_bench_csv(out) if os.path.exists(out) else [])
    (ours_rows, worst_ours), (sdpa_rows, worst_sdpa) = (tables.merge_bench_rounds(rounds[s]) for s in ("ours", "sdpa"))
    lines = tables.bench_table(ours_rows, sdpa_rows)
    if args.rounds > 1:  # the medians as the one-round files were (run.py table bench reads them)
        for rows, name in ((ours_rows, "ours"), (sdpa_rows, "sdpa")):
            tables.write_bench_csv(g.path(f"bench_{name}{args.tag}.csv"), rows)
        worst = max(worst_ours, worst_sdpa)
        lines.append(f"{args.rounds} rounds in alternating order, each row's median round; the widest row between "
                     f"rounds: {100 * worst[0]:.1f}% ({worst[1]}, {worst[2]})")
    with open(g.path(f"bench_table{args.tag}.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    say("\n".join(lines))
    return 0


def archive(out, name, pattern):
    """Every file of out matching pattern into out/name (a .tar.gz, so that all of them come back), then removed."""
    files = sorted(glob.glob(os.path.join(out, pattern)))
    with tarfile.open(os.path.join(out, name), "w:gz") as t:
        for f in files:
            t.add(f, os.path.basename(f))
    for f in files:
        os.remove(f)
    return len(files)


def ncu_ours(g, kernel, pass_, problem, metrics, csv_path):
    """ncu on `flashsim-gpu bench` of one kernel and problem: the forward's one launch, or the backward's three
    kernels (dot_do_o, main, convert_dq: one backward call)."""
    b, h, hkv, n, d, causal = problem
    program = [g.fg, "bench", "--kernel", kernel, "--batch", str(b), "--heads", str(h), "--heads-kv", str(hkv),
               "--seqlens", str(n), "--head-dims", str(d), "--causal", "yes" if causal else "no", "--repeats", "3"]
    cmd = ncu.command(metrics, program, kernel_regex=f"flashsim_fa2_{pass_}_", launch_count=1 if pass_ == "fwd" else 3)
    return sh(cmd, out=csv_path, err=csv_path[:-4] + ".err", env=g.env)


def heldout_problems():
    """bench/gpu/data/fa2_heldout.txt: name -> (b, h, hkv, n, d, causal)."""
    out = {}
    with open(os.path.join(HERE, "data", "fa2_heldout.txt")) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                b, h, hkv, n, d, c = (int(x) for x in line.split())
                out[f"heldout_b{b}_h{h}_{hkv}_n{n}_d{d}{'_causal' if c else ''}"] = (b, h, hkv, n, d, bool(c))
    return out


def traffic_fa2_models(g, what, only):
    """fa2-steps: the calibration problems (ncu.FA2_STEPS); fa2-heldout: the held-out ones (fa2_heldout.py). Each
    under ncu with the traffic set and the instruction count: fa2-v1's forward, its backward's three kernels, and
    SDPA's flash forward and backward (one call). Archived as <what>_csvs.tar.gz."""
    g.gpu_txt()
    problems = ncu.FA2_STEPS if what == "fa2-steps" else heldout_problems()
    start = time.time()
    for i, (name, problem) in enumerate(problems.items()):
        if only and not re.search(only, name):
            continue
        for pass_ in ("fwd", "bwd"):
            rc = ncu_ours(g, "fa2-v1", pass_, problem, "steps", g.path(f"ncu_ours_{pass_}_{name}.csv"))
            if rc:
                say(f"{name} fa2-v1 {pass_}: ncu exit {rc}")
        b, h, hkv, n, d, causal = problem
        program = [sys.executable, os.path.join(HERE, "sdpa.py"), "once", str(b), str(h), str(hkv), str(n), str(d),
                   str(int(causal))]
        csv_path = g.path(f"ncu_sdpa_{name}.csv")
        rc = sh(ncu.command("steps", program, kernel_regex="flash"), out=csv_path, err=csv_path[:-4] + ".err")
        say(f"[{i + 1}/{len(problems)}, {time.time() - start:.0f} s] {name}: sdpa rc={rc}, "
            f"{read(csv_path).count('void flash')} rows")
    say(f"{archive(g.out, what + '_csvs.tar.gz', 'ncu_*')} files in {what}_csvs.tar.gz")
    return 0


def cmd_traffic(args):
    """Nsight Compute runs (metric sets and problems: ncu.py).
    fa2:            our fa2-v1's forward and backward on ncu.FA2_SHAPES, then `flashsim traffic compare` of each
    own:            fa2-v1-heads-first (a planted traffic bug) checked, then under ncu beside fa2-v1 (ncu.OWN_RUNS),
                    each kernel with the full set and the DRAM counters alone (h100.dram_interval)
    sdpa:           SDPA's flash backend on a shape set (--shapes), --metrics traffic or dram, --runs N repeats
    tiles:          fa2-v1's forward at every instantiated tile (stages 1), tile metric set (h100.warp_cpi)
    autotune-tiles: every fa2-v1 forward instance through `flashsim-gpu autotune` (bias problems too)
    layouts:        one SDPA problem in each CSV layout ncu writes (tests/data/ncu/csv_layouts)
    metric-sets:    SDPA d96 and the L2 probe's mimics with 2, 5 and 16 metrics (h100.ncu_replay_write_bytes)
    fa2-steps:      fa2-v1's and SDPA's forward and backward on ncu.FA2_STEPS (fa2.step_costs_h100), instructions too
    fa2-heldout:    the same on bench/gpu/data/fa2_heldout.txt's problems, drawn before any was measured"""
    g = Gpu(args)
    what = args.what
    if what in ("fa2", "own"):
        if what == "own":
            g.gpu_txt("gpu_own.txt")
            default = g.golden("default", "/tmp/golden-default")
            for suite in ("golden/data/smoke", default):
                g.check(suite, f"check_heads_first_{os.path.basename(suite)}.txt", ["--kernel", "fa2-v1-heads-first"])
            runs = [(name, k, p, prob) for name, (k, passes, prob) in ncu.OWN_RUNS.items() for p in passes.split(",")]
            sets = (("traffic", "ncu_fa2"), ("dram", "ncu_dram_fa2"))
        else:
            runs = [(name, "fa2-v1", p, prob) for name, prob in ncu.FA2_SHAPES.items() for p in ("fwd", "bwd")]
            sets = (("traffic", "ncu_fa2_v1"),)
        compare_log = g.path("traffic_compare.txt")
        for name, kernel, pass_, problem in runs:
            for metrics, prefix in sets:
                csv_path = g.path(f"{prefix}_{pass_}_{name}.csv")
                rc = ncu_ours(g, kernel, pass_, problem, metrics, csv_path)
                say(f"{name} {pass_} {metrics}: rc={rc}")
            if what == "fa2":  # the text for the record, the JSON for the summary
                cmd = [g.flashsim, "traffic", "compare", "--ncu", csv_path] + ncu.problem_flags(problem, dtype=None)
                out = subprocess.run(cmd, capture_output=True, text=True, env=g.env)
                with open(compare_log, "a") as f:
                    f.write(f"== {name} {pass_}\n{out.stdout}{out.stderr}")
                js = subprocess.run(cmd + ["--json"], capture_output=True, text=True, env=g.env)
                say(f"== {name} {pass_}: exit {js.returncode}")
                if js.returncode in (0, 1):
                    say("\n".join(tables.compare_summary(json.loads(js.stdout))))
                else:
                    say(js.stderr.strip())
        name = "ncu_fa2_gpu_csvs.tar.gz" if what == "own" else "ncu_fa2_v1_csvs.tar.gz"
        say(f"{archive(g.out, name, 'ncu_*fa2_*')} files in {name}")
        return 0
    if what in ("fa2-steps", "fa2-heldout"):
        return traffic_fa2_models(g, what, args.only)
    if what == "sdpa":
        shapes = ncu.SHAPES[args.shapes]
        prefix = "ncu_dram" if args.metrics == "dram" else "ncu"
        for run in range(1, args.runs + 1):
            out = g.path(f"run{run}", args.shapes) if args.runs > 1 else g.out
            os.makedirs(out, exist_ok=True)
            for name, problem in shapes.items():
                if args.only and args.only not in name:
                    continue
                b, h, hkv, n, d, causal = problem
                program = [sys.executable, os.path.join(HERE, "sdpa.py"), "once", str(b), str(h), str(hkv), str(n),
                           str(d), str(int(causal))]
                csv_path = os.path.join(out, f"{prefix}_{name}.csv")
                rc = sh(ncu.command(args.metrics, program, kernel_regex="flash"), out=csv_path, err=csv_path[:-4] + ".err")
                say(f"== {name}: rc={rc}, {read(csv_path).count('void flash')} rows")
            if args.runs == 1:
                say(f"{archive(out, prefix + '_csvs.tar.gz', prefix + '_*')} files in {prefix}_csvs.tar.gz")
        return 0
    if what == "layouts":
        b, h, hkv, n, d, causal = ncu.SHAPES["layouts"]["d64_n1000_causal"]
        program = [sys.executable, os.path.join(HERE, "sdpa.py"), "once", str(b), str(h), str(hkv), str(n), str(d),
                   str(int(causal))]
        for name, metrics, extra in (("ncu_d64_n1000_causal", "traffic", ()),
                                     ("ncu_base_units_d64_n1000_causal", "traffic", ("--print-units", "base")),
                                     ("ncu_raw_d64_n1000_causal", "traffic", ("--page", "raw")),
                                     ("ncu_dram_d64_n1000_causal", "dram", ())):
            rc = sh(ncu.command(metrics, program, kernel_regex="flash", extra=extra), out=g.path(name + ".csv"),
                    err=os.devnull)
            say(f"{name}: rc={rc}")
        return 0
    if what == "metric-sets":
        probe = build_probe("l2")
        for set_name, metrics in (("dram_only", "dram"), ("small", "probe"), ("big", "traffic")):
            sh(ncu.command(metrics, [sys.executable, os.path.join(HERE, "sdpa.py"), "once", "2", "16", "16", "2048",
                                     "96", "0"], kernel_regex="flash"),
               out=g.path(f"sdpa_d96_{set_name}.csv"), err=os.devnull)
            sh(ncu.command(metrics, [probe], kernel_regex="fa_mimic"), out=g.path(f"mimic_{set_name}.csv"),
               err=os.devnull)
        say(f"{archive(g.out, 'metric_sets.tar.gz', '*_*.csv')} files in metric_sets.tar.gz")
        return 0
    # tiles, autotune-tiles: the tile metric set, no clock control (as the model's rates were measured)
    for d in args.head_dims.split(","):
        if what == "tiles":
            plan = subprocess.run([g.fg, "autotune", "--dry-run", "--head-dims", d, "--seqlens", "128", "--features",
                                   "plain", "--dtypes", "bf16"], capture_output=True, text=True, env=g.env).stdout
            for p, _, br, bc, w, st in tables.instances(plan):
                if p != "fwd" or st != 1:
                    continue
                csv_path = g.path(f"ncu_tiles_d{d}_Br{br}_Bc{bc}_w{w}.csv")
                program = [g.fg, "bench", "--kernel", "fa2-v1", "--head-dims", d, "--seqlens", str(args.seqlen),
                           "--causal", "no", "--dtype", args.dtype, "--repeats", "3", "--block-q", str(br),
                           "--block-k", str(bc), "--warps", str(w), "--stages", "1"]
                sh(ncu.command("tile", program, kernel_regex="flashsim_fa2_fwd", launch_count=1, clock_control=False),
                   out=csv_path, err=os.devnull, env=g.env)
                say(f"d{d} Br{br} Bc{bc} w{w}: {read(csv_path).count('flashsim_fa2_fwd')} rows")
        else:
            for feature in args.features.split(","):
                csv_path = g.path(f"ncu_autotune_d{d}_{feature}.csv")
                program = [g.fg, "autotune", "--pass", "fwd", "--head-dims", d, "--dtypes", args.dtype, "--seqlens",
                           str(args.seqlen), "--features", feature, "--warmup", "0", "--repeats", "1"]
                rc = sh(ncu.command("autotune", program, kernel_regex="flashsim_fa2_fwd_kernel", clock_control=False),
                        out=csv_path, err=g.path(f"ncu_autotune_d{d}_{feature}.log"), env=g.env)
                say(f"d{d} {feature}: exit {rc}, {read(csv_path).count('gpu__time_duration.sum')} launches")
    return 0


def cmd_compare(args):
    """Here: every recorded H100 ncu report of a set (tests/data/ncu) against flashsim's prediction, one block a
    shape; DRAM counters from the one-pass reports of single_pass/ unless --replayed (or the repeat set)."""
    data = os.path.join(ROOT, "tests/data/ncu")
    shapes = ncu.SHAPES["first" if args.set in ("first", "repeat") else args.set]
    sub = "" if args.set == "first" else args.set + "/"
    rc_all = 0
    for name, problem in shapes.items():
        cmd = [args.flashsim, "traffic", "compare", "--ncu", os.path.join(data, sub + f"ncu_{name}.csv")]
        if args.set != "repeat" and not args.replayed:
            cmd += ["--ncu-dram", os.path.join(data, "single_pass", f"ncu_dram_{name}.csv")]
        cmd += ncu.problem_flags(problem)
        say("== " + name + ": flashsim " + " ".join(os.path.relpath(c, ROOT) if c.startswith(ROOT) else c
                                                     for c in cmd[1:]))
        if args.json_summary:
            out = subprocess.run(cmd + ["--json"], capture_output=True, text=True)
            rc = out.returncode
            say("\n".join(tables.compare_summary(json.loads(out.stdout))) if rc in (0, 1) else out.stderr.strip())
        else:
            rc = subprocess.run(cmd).returncode
        say(f"exit code {rc}\n")
        rc_all = max(rc_all, rc)
    return rc_all


def cmd_autotune(args):
    """Every tile config of --kernel (fa2-v1: the fa2 spec's instances; fa3-v1: the fa3 spec's) checked against
    goldens (suites/fa2_instances.json: every feature at d64..d256; the forward at each tile with --tiles-for fwd,
    the backward with --tiles-for bwd), then all timed on a grid by `flashsim-gpu autotune` within --budget-s (its
    CSV keeps the rows done). Grid: default 4 head dims x bf16, fp16 x seqlen 1K, 4K, 16K x plain, causal, bias,
    causal+bias (fa3-v1: plain, causal); small: d64 and d128, bf16, 4096, plain and causal+bias; or autotune's
    own flags."""
    g = Gpu(args)
    t0 = time.time()
    g.gpu_txt()
    if not args.no_check:
        golden = g.golden(os.path.join(HERE, "suites", "fa2_instances.json"), "/tmp/golden-fa2-instances")
        plan = subprocess.run([g.fg, "autotune", "--kernel", args.kernel, "--dry-run", "--seqlens", "128", "--features",
                               "plain", "--dtypes", "bf16"], capture_output=True, text=True, env=g.env).stdout
        with open(g.path("instances.txt"), "w") as f:
            f.write(plan)
        bad, lines, full = 0, [], []
        for p, d, br, bc, w, st in tables.instances(plan):
            if p == "fwd":
                tiles = ["--tiles-for", "fwd", "--block-q", str(br), "--block-k", str(bc), "--warps", str(w),
                         "--stages", str(st)]
            else:
                tiles = ["--tiles-for", "bwd", "--bwd-block-q", str(br), "--bwd-block-k", str(bc), "--warps", str(w)]
            rc, text = g.check(golden, "check_one.txt", ["--kernel", args.kernel, "--case", f"*-d{d}-*", "--case",
                                                         f"*-d{d}"] + tiles + ["--quiet"], summary=False)
            # fa2-v1 runs every case of the suite; fa3-v1 skips bias, masks and ALiBi (and d256's backward), saying so
            clean = rc == 0 and (tables.check_clean(text) if args.kernel == "fa2-v1" else tables.check_passed(text))
            bad += not clean
            verdict = "; ".join(line.strip() for line in text.splitlines()
                                if line.startswith("== ") or "cases passed" in line)
            lines.append(f"{p} d{d} Br{br} Bc{bc} w{w}{f' st{st}' if st else ''}: exit {rc}; {verdict}")
            full.append(f"==== {p} d{d} {' '.join(tiles)}\n{text}")
            say(lines[-1])
        os.remove(g.path("check_one.txt"))
        with open(g.path("check_instances.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")
        with open(g.path("check_instances_full.txt"), "w") as f:
            f.write("".join(full))
        say(f"instances checked: {len(lines)}, not clean: {bad} ({time.time() - t0:.0f} s so far)")
    if not args.no_time:
        grids = {"": [], "small": ["--head-dims", "64,128", "--dtypes", "bf16", "--seqlens", "4096", "--features",
                                   "plain,causal+bias"]}
        grid = grids[args.grid] if args.grid in grids else args.grid.split()
        left = max(1, int(args.budget_s - (time.time() - t0)))
        rc = sh([g.fg, "autotune", "--kernel", args.kernel, "--rounds", str(args.rounds)] + grid + args.args.split() +
                ["--out", g.path("autotune.csv")],
                err=g.path("autotune_progress.txt"), env=g.env, timeout=left)
        rows = max(0, read(g.path("autotune.csv")).count("\n") - 1) if os.path.exists(g.path("autotune.csv")) else 0
        say(f"autotune: exit {rc} ({rows} rows, limit {left} s)")
    say(f"total: {time.time() - t0:.0f} s")
    return 0


def cmd_tune_validate(args):
    """The timings `flashsim sim tune --check` compares its ranking with, and the goldens of the launch table it
    generated, in one run: OUT/grid (autotune's default grid), OUT/heldout (bf16, seqlen 512, 2K, 8K, 16 heads at
    every head dim: a grid the model's constants were never looked at against), OUT/check_default.txt
    (calibration fa2.tune_resolution)."""
    t0 = time.time()
    base = args.out
    for sub, grid, budget in (("grid", "", args.grid_budget_s),
                              ("heldout", "--dtypes bf16 --seqlens 512,2048,8192 --heads 16", args.heldout_budget_s)):
        args.out, args.no_check, args.no_time, args.grid, args.budget_s, args.args = (
            os.path.join(base, sub), True, False, grid, budget, "")
        cmd_autotune(args)
    args.out = base
    g = Gpu(args)
    g.check(g.golden("default", "/tmp/golden-default"), "check_default.txt", ["--kernel", "fa2-v1"])
    say(f"total: {time.time() - t0:.0f} s")
    return 0


def build_probe(name, arch="sm_90"):
    """The probe's binary in build/gpu_probe/, built with nvcc where missing or older than its source."""
    src = os.path.join(HERE, "probes", PROBES[name][0])
    binary = os.path.join(ROOT, "build", "gpu_probe", PROBES[name][0][:-3])
    if not os.path.exists(binary) or os.path.getmtime(binary) < os.path.getmtime(src):
        os.makedirs(os.path.dirname(binary), exist_ok=True)
        subprocess.run(["nvcc", "-O3", f"-arch={arch}", "-o", binary, src], check=True)
    return binary


def cmd_probe(args):
    """A probe of probes/ (each says which profile field and calibration id it measures), built with nvcc and run:
    l2 and launch under ncu (a CSV row per launch and metric, the launch list on stderr; launch 3 times),
    cta-rates, cta-stream and launch-pair alone (their table on stdout). Then `run.py table l2|launch` here."""
    os.chdir(ROOT)
    os.makedirs(args.out, exist_ok=True)
    binary = build_probe(args.name, args.arch)
    source, metrics, runs = PROBES[args.name]
    stem = source[:-3]
    if metrics is None:
        rc = sh([binary], out=os.path.join(args.out, f"{stem}.txt"))
        say(read(os.path.join(args.out, f"{stem}.txt")))
        return rc
    if args.metrics:
        metrics, stem = args.metrics, f"{stem}_{args.metrics}"
    for run in range(1, runs + 1):
        name = f"{stem}_run{run}" if runs > 1 else stem
        rc = sh(ncu.command(metrics, [binary] + ([args.probes] if args.probes else [])),
                out=os.path.join(args.out, name + ".csv"), err=os.path.join(args.out, name + ".err"))
        say(f"{name}: rc={rc}, {read(os.path.join(args.out, name + '.csv')).count('dram__bytes_write')} launches")
    return 0


def cmd_decode(args):
    """decode-v1 (issue 30): the decode suite and the default suite's decode cases checked, compute-sanitizer
    memcheck, racecheck and synccheck on the decode suite's small cases, then flashsim-gpu decode-bench's grid
    (every split count the model predicts, the device's copy bandwidth) and SDPA's backends on the same grid (contiguous
    K/V; with flashinfer among --sdpa-grid's --backends, FlashInfer's paged decode too) in the same run."""
    g = Gpu(args)
    g.gpu_txt()
    decode = g.golden("decode", "/tmp/golden-decode")
    if not args.no_check:
        default = g.golden("default", "/tmp/golden-default")
        g.check(decode, "check_decode.txt", ["--kernel", args.kernels])
        g.check(default, "check_default_decode.txt", ["--kernel", args.kernels, "--case", "decode-*"])
        if not args.no_sanitize:
            sanitize_small(g, decode, "decode", ["--kernel", args.kernels], 4 << 20)
    if args.ncu:  # ncu on decode-bench's launches of one cell (every split count), then `flashsim traffic compare`
        b, n, page = args.ncu.split(",")
        for kernel in args.kernels.split(","):
            program = [g.fg, "decode-bench", "--kernel", kernel, "--batches", b, "--cache-lens", n, "--page-sizes",
                       page, "--repeats", "3"]
            csv_path = g.path(f"ncu_decode_{kernel}.csv")
            rc = sh(ncu.command("traffic", program, kernel_regex="decode_", launch_count=args.ncu_launches),
                    out=csv_path, err=csv_path[:-4] + ".err", env=g.env)
            cmd = [g.flashsim, "traffic", "compare", "--ncu", csv_path, "--heads", "32", "--heads-kv", "8",
                   "--head-dim", "128", "--seqlen-q", "1", "--seqlen-k", n, "--page-size", page, "--batch", b,
                   "--cache-seqlens", n]
            out = subprocess.run(cmd, capture_output=True, text=True, env=g.env)
            with open(g.path(f"traffic_compare_decode_{kernel}.txt"), "w") as f:
                f.write(out.stdout + out.stderr)
            say(f"== ncu {kernel}: rc={rc}; traffic compare: exit {out.returncode}\n{out.stdout[-4000:]}"
                f"{out.stderr[-1000:]}")
    if args.no_bench:
        return 0
    if args.no_sdpa:
        args.sdpa_grid = None
    grid = args.grid.split() if args.grid else []
    for kernel in args.kernels.split(","):
        ours = g.path(f"decode_bench_{kernel}.csv")
        say(f"flashsim-gpu decode-bench --kernel {kernel}: exit",
            sh([g.fg, "decode-bench", "--kernel", kernel] + grid, out=ours, env=g.env))
        say(read(ours)[-1500:])
    if args.sdpa_grid is None:
        return 0
    sdpa = g.path("decode_sdpa.csv")
    say("sdpa.py decode-grid: exit", sh([sys.executable, os.path.join(HERE, "sdpa.py"), "decode-grid"] +
                                         args.sdpa_grid.split(), out=sdpa))
    say(read(sdpa)[-2000:])
    return 0


def cmd_sparse(args):
    """Block-sparse attention (issue 30): the sparse suite and the default suite's sparse cases checked on every
    version that takes a block mask (fa2-v1 skips inactive tiles, its tile counts checked against the
    reference's; naive-v1, three-pass-v1, two-pass-v1 mask them), extra check runs with tile flags (--tiles:
    ';'-separated "--case GLOB ... tile flags" groups, for a build that lacks the launch tiles), compute-sanitizer
    memcheck, racecheck and synccheck on the small cases, then flashsim-gpu sparse-bench (time and prediction per
    density)."""
    g = Gpu(args)
    g.gpu_txt()
    sparse = g.golden("sparse", "/tmp/golden-sparse")
    if not args.no_check:
        default = g.golden("default", "/tmp/golden-default")
        g.check(sparse, "check_sparse.txt")
        g.check(default, "check_default_sparse.txt", ["--case", "sparse-*"])
        for i, flags in enumerate(t for t in args.tiles.split(";") if t.strip()):
            g.check(sparse, f"check_sparse_tiles{i}.txt", ["--kernel", "fa2-v1"] + flags.split())
            g.check(default, f"check_default_sparse_tiles{i}.txt", ["--kernel", "fa2-v1"] + flags.split())
        sanitize_small(g, sparse, "sparse", args.sanitize_flags.split(), 1 << 20)
    if args.ncu:  # ncu on one block-sparse problem, then `flashsim traffic compare` of each pass
        b, h, hkv, n, d, causal, spec = args.ncu.split(",", 6)
        problem = (int(b), int(h), int(hkv), int(n), int(d), causal == "1")
        flags = ["--batch", b, "--heads", h, "--heads-kv", hkv, "--seqlen", n, "--head-dim", d] + \
            (["--causal"] if causal == "1" else []) + args.ncu_tiles.split()
        program = [g.fg, "sparse-bench", "--specs", spec, "--repeats", "3"] + flags
        mask = ["--block-mask", spec, "--block-mask-shape", "1hqk", "--block-mask-tile", "128,128", "--seed", "1"]
        for pass_, count in (("fwd", 1), ("bwd", 3)):
            csv_path = g.path(f"ncu_sparse_{pass_}.csv")
            rc = sh(ncu.command("traffic", program, kernel_regex=f"flashsim_fa2_{pass_}_", launch_count=count),
                    out=csv_path, err=csv_path[:-4] + ".err", env=g.env)
            cmd = [g.flashsim, "traffic", "compare", "--ncu", csv_path] + ncu.problem_flags(problem) + mask
            out = subprocess.run(cmd, capture_output=True, text=True, env=g.env)
            with open(g.path(f"traffic_compare_sparse_{pass_}.txt"), "w") as f:
                f.write(out.stdout + out.stderr)
            say(f"== ncu {pass_}: rc={rc}; traffic compare: exit {out.returncode}\n{out.stdout[-3000:]}{out.stderr[-1000:]}")
    if args.no_bench:
        return 0
    for i, flags in enumerate(b for b in args.bench.split(";") if b.strip()):
        out = g.path(f"sparse_bench{i}.csv")
        say(f"flashsim-gpu sparse-bench {flags}: exit", sh([g.fg, "sparse-bench"] + flags.split(), out=out, err=out,
                                                          env=g.env))
        say(read(out)[-2500:])
    return 0


def cmd_sdpa(args):
    os.chdir(ROOT)
    return sh([sys.executable, os.path.join(HERE, "sdpa.py"), args.what] + args.rest)


CHECKOUT_PYTHON = ("this checkout's python/flashsim/*.py over the bundle's wheel (a change to the Python sources "
                   "alone since `bundle --python`)")


def python_env(b, site="/tmp/fs-site", extra_wheels=(), checkout_python=False):
    """Installs the bundle of `run.py bundle --python` (and the wheels in extra_wheels, without their
    dependencies) beside the machine's PyTorch (python3 there is itself a virtual environment: the packages go to
    a folder on PYTHONPATH); returns the environment that finds them. checkout_python: this checkout's
    python/flashsim/*.py replace the wheel's (the native module stays the bundle's: for a change to the Python
    sources alone since the bundle was packed)."""
    if not os.path.isdir(os.path.join(b, "lib")):
        sh(["tar", "-C", b, "-xJf", os.path.join(b, "lib.tar.xz")], check=True)
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.abspath(os.path.join(b, "lib")) + ":" + os.environ.get("LD_LIBRARY_PATH", ""),
               PYTHONPATH=site + ":" + os.environ.get("PYTHONPATH", ""), FLASHSIM_CACHE="/tmp/fs-cache")
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--target", site, "--find-links",
           os.path.join(b, "wheels")]
    sh(pip + ["--no-deps", "flashsim", "ml_dtypes"] + list(extra_wheels), check=True)
    if checkout_python:
        for f in glob.glob(os.path.join(ROOT, "python", "flashsim", "*.py")):
            shutil.copy(f, os.path.join(site, "flashsim"))
        say("python/flashsim/*.py of this checkout over the bundle's wheel")
    if sh([sys.executable, "-c", "import pytest"], err=os.devnull) != 0:
        sh(pip + ["pytest"], check=True)
    return env


def cmd_peers(args):
    """The field's kernels (bench/gpu/peers: SDPA's four backends, FlexAttention, JAX's cuDNN and XLA attention,
    PyTorch's and Liger-Kernel's norms) over the golden suites through the pytest plugin, each case checked and
    timed; a JSON line a case in OUT/peers.jsonl, pytest's logs beside it, the table in OUT/peers.md. Wheels the
    machine lacks (Liger-Kernel) travel in .whl (carry it)."""
    import peers
    os.chdir(ROOT)
    resume = [f for f in args.resume.split(",") if f]
    missing = [f for f in resume if not os.path.isfile(f)]
    if missing or args.shards < 1:
        print(f"run.py peers: --resume {missing[0]}: no such file" if missing else
              f"run.py peers: --shards {args.shards}: at least 1", file=sys.stderr)
        return 2
    try:
        done = peers.recorded(resume)
    except (ValueError, KeyError, TypeError) as e:  # not run.py peers' JSON lines (json's errors are ValueErrors)
        print(f"run.py peers: --resume: not a record file of run.py peers: {e!r}", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    env = python_env(args.bundle, extra_wheels=sorted(glob.glob(os.path.join(ROOT, ".whl", "*.whl"))),
                     checkout_python=args.checkout_python)
    env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"  # JAX and PyTorch share the GPU's memory
    peers.run(env, args.out, args.kernels.split(",") if args.kernels else None,
              args.suites.split(",") if args.suites else None, args.time, args.budget_s, args.filter or None,
              args.run_s, args.shards, done)
    record = os.path.join(args.out, "peers.jsonl")
    if not os.path.exists(record):  # every adapter skipped at import (a missing package) or failed to start
        say(f"no case records in {record}: see the pytest logs in {os.path.join(args.out, 'logs')}")
        return 1
    say("\n".join(peers.table(record)))
    return 0


def cmd_python_check(args):
    """Installs the bundle of `run.py bundle --python` beside the machine's PyTorch (python3 there is itself a
    virtual environment: the packages go to a folder on PYTHONPATH), runs python/tests (the torch tests CI skips
    included), then the SDPA example with the plugin over the given suites (default: smoke); logs and JUnit XML
    to --out."""
    os.chdir(ROOT)
    out = args.out
    os.makedirs(out, exist_ok=True)
    env = python_env(args.bundle, checkout_python=args.checkout_python)
    pytest = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider"]
    sh(pytest + ["python/tests", f"--junitxml={out}/python_tests.xml"], out=f"{out}/python_tests.log",
       err=f"{out}/python_tests.log", env=env)
    say("\n".join(read(f"{out}/python_tests.log").splitlines()[-15:]))
    for s in args.suites or ["smoke"]:
        t0 = time.time()
        sh(pytest + ["python/examples/test_sdpa.py", "--flashsim-suite", s, f"--junitxml={out}/sdpa_{s}.xml"],
           out=f"{out}/sdpa_{s}.log", err=f"{out}/sdpa_{s}.log", env=env)
        say("\n".join(read(f"{out}/sdpa_{s}.log").splitlines()[-25:]))
        say(f"sdpa over {s}: {time.time() - t0:.0f} s (generating the suite included)")
    return 0


def cmd_table(args):
    """Tables from recorded files, on any machine:
    bench OURS.csv SDPA.csv        ours beside SDPA's backends, with the ratio to SDPA flash
    l2 PROBE.csv LAUNCHES          the L2 probe's launches (LAUNCHES: the .err / .launches list)
    launch LAUNCHES RUN.csv...     the launch probe over its runs (--bandwidth: the copy bandwidth)
    spread FOLDER...               the DRAM counters' run-to-run spread (ncu_dram_*.csv under the folders)
    check LOG...                   the summary lines of flashsim-gpu check logs
    agree A.csv B.csv              two autotune CSVs of one plan, A taken as the prediction of B (the ceiling of
                                   sim tune --check's statistics)
    peers PEERS.jsonl...           run.py peers' records: kernel x suite, skips by reason, failures
    peers-speed PEERS.jsonl...     the same records' times side by side, a case a row (one GPU's records)
    decode BENCH.csv... [SDPA.csv] decode-bench's CSVs (one a version) beside sdpa.py decode-grid's
    sparse SPARSE.csv...           sparse-bench's CSVs: measured and predicted time a pass (--flashsim: predicted now)
    fa3-model BENCH.csv|FWD.txt... fa3-v1's event times (flashsim-gpu bench CSVs, fa3_dev fwdshape lines) against
                                   the fwd_fa3 / bwd_fa3 models now (--flashsim, --hw)"""
    f = args.files
    missing = [x for x in f + ([args.model] if args.model else []) if not os.path.exists(x)]
    if missing:  # a bad path is the caller's: one line, exit 2
        print(f"run.py table: {missing[0]}: no such file or folder", file=sys.stderr)
        return 2
    if args.what == "bench":
        lines = tables.bench_table(tables.read_bench_csv(f[0]), tables.read_bench_csv(f[1]))
    elif args.what == "l2":
        lines = tables.l2_probe_table(f[0], f[1])
    elif args.what == "launch":
        lines = tables.launch_probe_table(f[0], f[1:], args.bandwidth)
    elif args.what == "spread":
        lines = tables.dram_spread(f)
    elif args.what == "agree":
        lines = tables.autotune_agreement(f[0], f[1])
    elif args.what in ("peers", "peers-speed"):
        import peers
        try:
            lines = peers.table(*f) if args.what == "peers" else peers.speed(*f)
        except (ValueError, KeyError, TypeError) as e:  # not run.py peers' JSON lines (json's errors: ValueError)
            print(f"run.py table {args.what}: not run.py peers records: {e!r}", file=sys.stderr)
            return 2
    elif args.what == "sparse":
        try:
            lines = tables.sparse_table(f, args.flashsim, args.hw)
        except (KeyError, ValueError, AttributeError) as e:  # a CSV of another shape, or a kernel with no models
            print(f"run.py table sparse: not flashsim-gpu sparse-bench data: {e!r}", file=sys.stderr)
            return 2
        except (OSError, subprocess.CalledProcessError) as e:  # no flashsim / flashsim-gpu build there
            print(f"run.py table sparse: --flashsim {args.flashsim}: {e}", file=sys.stderr)
            return 2
    elif args.what == "decode":
        sdpa = [x for x in f if os.path.basename(x).startswith("decode_sdpa")]
        try:
            lines = tables.decode_table([x for x in f if x not in sdpa], sdpa[0] if sdpa else None, args.model)
        except (ValueError, KeyError) as e:  # a CSV or --model JSON of another shape (json's errors are ValueErrors)
            print(f"run.py table decode: not decode-bench / sim tune --json data: {e!r}", file=sys.stderr)
            return 2
    elif args.what == "fa3-model":
        try:
            lines = tables.fa3_model_table(f, args.flashsim or os.path.join(ROOT, "build/default/flashsim"), args.hw)
        except (KeyError, ValueError, TypeError) as e:  # a CSV or text of another shape
            print(f"run.py table fa3-model: not flashsim-gpu bench / fa3_dev fwdshape data: {e!r}", file=sys.stderr)
            return 2
        except (OSError, subprocess.CalledProcessError) as e:  # no flashsim build there
            print(f"run.py table fa3-model: --flashsim {args.flashsim}: {e}", file=sys.stderr)
            return 2
    else:
        lines = [line for path in f for line in [f"== {path}"] + tables.check_summary(read(path))]
    say("\n".join(lines))
    return 0


def cmd_derive(args):
    import derive
    try:
        return derive_one(derive, args) or 0
    except (OSError, ValueError, KeyError, subprocess.CalledProcessError) as e:  # a missing record or profile
        print(f"run.py derive {args.what}: {e}", file=sys.stderr)
        return 2


def derive_one(derive, args):
    if args.what == "dram-coverage-card":
        if not args.results:
            print("derive dram-coverage-card: give the results folder (its sdpa_dram/SET/ archives)", file=sys.stderr)
            return 2
        return derive.dram_coverage_card(args.flashsim, args.results, args.hw, args.stacks)
    if args.what == "l2-adverse":
        derive.l2_adverse(args.flashsim, args.results or os.path.join(ROOT, "bench/results/l2_adverse_h100_2026-11-26"),
                          args.hw)
    elif args.what == "l2-partitioned":
        derive.l2_partitioned(args.flashsim, args.hw)
    elif args.what == "l2-replacement":
        derive.l2_replacement(args.flashsim, args.hw)
    elif args.what == "l2-capacity":
        derive.l2_capacity(args.flashsim, args.hw, replacement=args.replacement, sweep=args.results)
    elif args.what == "l2-partitioned-check":
        derive.l2_partitioned_check(args.flashsim, args.hw, args.replacement, args.capacity_mib)
    elif args.what == "dram-coverage":
        derive.dram_coverage(args.flashsim)
    elif args.what == "fa3-heldout":
        derive.fa3_heldout(args.flashsim, args.results or derive.FA3_CALIB, args.hw)
    elif args.what == "fa3-steps":
        derive.fa3_steps(args.results or derive.FA3_CALIB, args.hw, args.spread, args.only)
    elif args.what == "fa2-steps":
        derive.fa2_steps(args.results or derive.FA2_MODEL)
    elif args.what == "fa2-heldout":
        derive.fa2_heldout(args.flashsim, args.results or derive.FA2_MODEL)
    elif args.what == "decode-load":
        derive.decode_load(args.results or derive.DECODE_LOAD, args.hw, args.head_dim, args.flashsim, args.write)
    else:
        derive.l2_reuse_models()


def cmd_sass(args):
    return sh([sys.executable, os.path.join(ROOT, "gpu", "tools", "sass.py"), args.verb] + args.rest)


def rounds_count(text):
    """argparse's type of --rounds: a whole number of at least one (else argparse's usage error, exit 2)."""
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text}: at least one round")
    return n


def capacity_mib(text):
    """argparse's type of derive's --capacity-mib: a whole number of MiB, 0 for the profile's (else a usage error)."""
    n = int(text)
    if n < 0:
        raise argparse.ArgumentTypeError(f"{text}: a capacity is 0 (the profile's) or more MiB")
    return n


def parser():
    ap = argparse.ArgumentParser(prog="run.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="verb", required=True, metavar="VERB")

    def verb(name, fn, gpu=False, **kw):
        p = sub.add_parser(name, description=fn.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, **kw)
        p.set_defaults(fn=fn)
        if gpu:
            p.add_argument("--bundle", default=".gpu-bundle", help="the folder `run.py bundle` packed")
            p.add_argument("--out", default=os.environ.get("OUT", "."), help="where outputs go (default $OUT)")
        return p

    p = verb("bundle", cmd_bundle, help="pack flashsim and flashsim-gpu (or the Python package) for the GPU machine")
    p.add_argument("--build", default=os.path.join(ROOT, "build", "default"))
    p.add_argument("--out", default=None, help="default .gpu-bundle (.gpu-bundle-py with --python)")
    p.add_argument("--binaries", default="flashsim,flashsim-gpu")
    p.add_argument("--no-strip", action="store_true")
    p.add_argument("--no-compress", action="store_true")
    p.add_argument("--python", action="store_true", help="the Python package instead (a cp312 wheel and its libs)")
    p.add_argument("--python-exe", default=os.environ.get("PYTHON312", "python3.12"))
    p.add_argument("--golden-subset", metavar="SUITE", help="copy SUITE's cases under 500 KB to gpu_golden/default")

    p = verb("check", cmd_check, gpu=True, help="every kernel version on the golden suites, then the sanitizers")
    p.add_argument("--kernels", default="", help="comma-separated versions (default: all)")
    p.add_argument("--dq", default="", help="also the backward with this --dq-strategy (partials)")
    p.add_argument("--tiles", default="", help="also fa2-tiles at these tile flags")
    p.add_argument("--no-sanitize", action="store_true")

    p = verb("bench", cmd_bench, gpu=True, help="ours and SDPA's backends timed in one run, one table")
    p.add_argument("--grid", default="", help='extra flags for both ("--seqlens 4096 --head-dims 128")')
    p.add_argument("--kernels", default="")
    p.add_argument("--tag", default="", help="a suffix of the output files")
    p.add_argument("--rounds", type=rounds_count, default=2,
                   help="the pair timed this many times in alternating order, each row's median round (default 2)")

    p = verb("traffic", cmd_traffic, gpu=True, help="Nsight Compute runs (ncu.py's metric sets and problems)")
    p.add_argument("what", choices=["fa2", "own", "sdpa", "tiles", "autotune-tiles", "layouts", "metric-sets",
                                    "fa2-steps", "fa2-heldout"])
    p.add_argument("--shapes", default="first", choices=sorted(ncu.SHAPES), help="sdpa: the shape set")
    p.add_argument("--metrics", default="traffic", choices=["traffic", "dram"], help="sdpa: the metric set")
    p.add_argument("--runs", type=int, default=1, help="sdpa: repeats, each into OUT/runN/SET")
    p.add_argument("--only", default="", help="sdpa: only shapes whose name contains this; fa2-steps, fa2-heldout: "
                   "whose name matches this regular expression")
    p.add_argument("--head-dims", default="64,128", help="tiles, autotune-tiles")
    p.add_argument("--features", default="bias,plain", help="autotune-tiles")
    p.add_argument("--seqlen", type=int, default=4096, help="tiles, autotune-tiles")
    p.add_argument("--dtype", default="bf16", help="tiles, autotune-tiles")

    p = verb("compare", cmd_compare, help="here: the recorded SDPA reports of a set against the prediction")
    p.add_argument("--flashsim", default=os.path.join(ROOT, "build/default/flashsim"))
    p.add_argument("--set", default="first", choices=["first", "repeat", "validation", "validation2"])
    p.add_argument("--replayed", action="store_true", help="each report's own replayed DRAM counters")
    p.add_argument("--json-summary", action="store_true", help="a line a metric from traffic compare --json")

    def autotune_flags(p):
        p.add_argument("--grid", default="", help='small, or autotune flags ("--head-dims 128 ...")')
        p.add_argument("--args", default="", help='more autotune flags ("--repeats 20")')
        p.add_argument("--budget-s", type=float, default=530, help="seconds the whole verb may take")
        p.add_argument("--rounds", type=rounds_count, default=3,
                       help="a problem's configs timed in turn this many times, each one's median round (default 3; "
                            "autotune --rounds)")

    p = verb("autotune", cmd_autotune, gpu=True, help="every instance of a version checked, then timed")
    p.add_argument("--kernel", default="fa2-v1", choices=["fa2-v1", "fa3-v1"], help="the version")
    p.add_argument("--no-check", action="store_true")
    p.add_argument("--no-time", action="store_true")
    autotune_flags(p)

    p = verb("tune-validate", cmd_tune_validate, gpu=True, help="sim tune --check's timings and the table's goldens")
    p.add_argument("--grid-budget-s", type=float, default=300)
    p.add_argument("--heldout-budget-s", type=float, default=150)
    p.add_argument("--rounds", type=rounds_count, default=1,
                   help="autotune --rounds (default 1: fa2-v1's 1392 grid configs fill --grid-budget-s at one)")
    p.set_defaults(no_check=True, no_time=False, grid="", args="", budget_s=0, kernel="fa2-v1")

    p = verb("probe", cmd_probe, help="build and run a probe of probes/")
    p.add_argument("name", choices=sorted(PROBES))
    p.add_argument("--out", default=os.environ.get("OUT", "."))
    p.add_argument("--arch", default="sm_90")
    p.add_argument("--probes", default="", help="l2: one family (dirty_reuse, causal_mimic ...)")
    p.add_argument("--metrics", default="", choices=["", "dram"], help="l2: the DRAM counters alone (one pass)")

    p = verb("decode", cmd_decode, gpu=True, help="decode-v1: decode suites checked, sanitizers, decode-bench beside SDPA")
    p.add_argument("--grid", default="", help='flags for flashsim-gpu decode-bench ("--batches 1,64")')
    p.add_argument("--sdpa-grid", default="", help='flags for sdpa.py decode-grid ("--batches 1,64")')
    p.add_argument("--kernels", default="decode-v1,decode-v2", help="the versions checked and timed")
    p.add_argument("--ncu", default="", help="ncu and traffic compare of one cell: batch,cache_len,page_size")
    p.add_argument("--ncu-launches", type=int, default=60, help="decode kernels ncu profiles (every split count's)")
    p.add_argument("--no-check", action="store_true")
    p.add_argument("--no-sanitize", action="store_true", help="the checks without compute-sanitizer")
    p.add_argument("--no-bench", action="store_true")
    p.add_argument("--no-sdpa", action="store_true")

    p = verb("sparse", cmd_sparse, gpu=True, help="block-sparse: sparse suites checked, sanitizers, sparse-bench")
    p.add_argument("--tiles", default="", help='\';\'-separated extra fa2-v1 check runs ("--case d64* --block-q 128")')
    p.add_argument("--sanitize-flags", default="", help="flags of the sanitizer check runs (--kernel, tile flags)")
    p.add_argument("--bench", default="", help='\';\'-separated flashsim-gpu sparse-bench runs ("--seqlen 8192")')
    p.add_argument("--no-check", action="store_true", help="time only")
    p.add_argument("--no-bench", action="store_true", help="check only")
    p.add_argument("--ncu", default="", help="ncu and traffic compare of one problem: b,h,hkv,n,d,causal,spec")
    p.add_argument("--ncu-tiles", default="", help="tile flags of the --ncu run (a build without the launch tiles)")
    p = verb("sdpa", cmd_sdpa, help="PyTorch SDPA: bench, once, decode, decode-once, golden (sdpa.py)")
    p.add_argument("what", choices=["bench", "once", "decode", "decode-once", "decode-grid", "golden"])
    p.add_argument("rest", nargs=argparse.REMAINDER)

    p = verb("python-check", cmd_python_check, help="the Python package's tests and the SDPA plugin example")
    p.add_argument("suites", nargs="*")
    p.add_argument("--bundle", default=".gpu-bundle-py")
    p.add_argument("--out", default=os.environ.get("OUT", "/tmp/flashsim-py"))
    p.add_argument("--checkout-python", action="store_true", help=CHECKOUT_PYTHON)

    p = verb("peers", cmd_peers, help="the field's kernels over the golden suites (bench/gpu/peers)")
    p.add_argument("--bundle", default=".gpu-bundle-py")
    p.add_argument("--out", default=os.environ.get("OUT", "/tmp/flashsim-peers"))
    p.add_argument("--kernels", default="", help="comma-separated adapters (default: all; peers.py KERNELS)")
    p.add_argument("--suites", default="", help="comma-separated suites (default: each adapter's)")
    p.add_argument("--time", type=int, default=5, help="timed calls a case after the checked one (median kept)")
    p.add_argument("--filter", default="", help="only the cases whose name matches (--flashsim-filter)")
    p.add_argument("--run-s", type=float, default=300, help="seconds one (adapter, suite) run may take")
    p.add_argument("--budget-s", type=float, default=540, help="seconds the whole verb may take")
    p.add_argument("--shards", type=int, default=6, help="pytest processes at once for the adapters that compile "
                   "per variant or per case (peers.py JIT_PER_VARIANT, COMPILED): more compile at once on more cores; "
                   "the JIT adapters' shards share MAX_JOBS (default: the cores) nvcc jobs, so few shards finish "
                   "some variants within a time limit where many finish none")
    p.add_argument("--resume", default="", help="comma-separated record files (peers.jsonl) of earlier runs: the "
                   "(adapter, suite, case)s they hold are not run again (a run that its time limit cut, continued)")
    p.add_argument("--checkout-python", action="store_true", help=CHECKOUT_PYTHON)

    p = verb("table", cmd_table, help="tables from recorded files")
    p.add_argument("what", choices=["bench", "l2", "launch", "spread", "check", "agree", "peers", "peers-speed",
                                    "decode", "sparse", "fa3-model"])
    p.add_argument("files", nargs="+")
    p.add_argument("--bandwidth", type=float, default=2.97e12, help="launch: bytes/s (achieved_dram_bytes_per_s)")
    p.add_argument("--model", default=None, help="decode: a later model's predictions (flashsim sim tune --kernel "
                   "splitkv --split-tile ... --json) in place of the recorded ones")
    p.add_argument("--flashsim", default=None, help="sparse: a flashsim build whose predictions replace the recorded "
                   "ones (the same problems, masks and tiles); fa3-model: the build predicting (default build/default)")
    p.add_argument("--hw", default="H100-SXM5-80GB", help="sparse, fa3-model: the profile of those predictions")

    p = verb("derive", cmd_derive, help="constants derived from recorded reports (derive.py)")
    p.add_argument("what", choices=["l2-adverse", "l2-partitioned", "l2-partitioned-check", "l2-capacity", "l2-replacement", "dram-coverage", "dram-coverage-card", "l2-reuse-models", "fa3-steps", "fa3-heldout",
                                    "fa2-steps", "fa2-heldout", "decode-load"])
    p.add_argument("flashsim", nargs="?", default=os.path.join(ROOT, "build/default/flashsim"))
    p.add_argument("results", nargs="?", default="", help="l2-adverse, dram-coverage-card, fa3-steps, fa3-heldout, fa2-steps, fa2-heldout, decode-load: "
                   "the results folder; l2-capacity: reread_sweep.py's reports (a folder or its archive) instead of the "
                   "recorded sets")
    p.add_argument("--hw", default="H100-SXM5-80GB", help="fa3-steps, decode-load: the profile of the card that ran "
                   "them (its kernel_latency_s); l2-adverse, dram-coverage-card, fa3-heldout: the profile predicting; "
                   "l2-partitioned: the card (H200: its recorded causal forwards with their kernels' stack frames); "
                   "l2-replacement: the card whose L2 probe runs are recorded (H200)")
    p.add_argument("--replacement", default="lru", choices=["lru", "srrip", "drrip"], help="l2-partitioned-check, "
                   "l2-capacity: the partitioned L2's replacement")
    p.add_argument("--capacity-mib", type=capacity_mib, default=0, help="l2-partitioned-check: its capacity (0: the profile's)")
    p.add_argument("--stacks", action="store_true", help="dram-coverage-card: each SDPA forward's stack frame "
                   "(sdpa_stack.py: the H200 runs' PyTorch build) to traffic compare --stack-bytes")
    p.add_argument("--spread", action="store_true", help="fa3-steps: the forward from calib-spread's shapes "
                   "(calib_spread_events.txt) in place of calib's one K / V head")
    p.add_argument("--only", default="", help="fa3-steps: only these simulator kernels' entries (fwd_fa3,bwd_fa3)")
    p.add_argument("--head-dim", type=int, default=128, choices=[64, 128, 256], help="decode-load: the probe's head dim")
    p.add_argument("--write", action="store_true", help="decode-load: merge the entries into the --hw profile's file")

    for name, what in (("resources", "fa2-v1's compiled resources as CSV (gpu/tools/sass.py)"),
                       ("spills", "LDL / STL of every kernel's SASS (gpu/tools/sass.py)")):
        p = verb(name, cmd_sass, help=what)
        p.add_argument("rest", nargs=argparse.REMAINDER)
    return ap


def main(argv=None):
    args = parser().parse_args(argv)
    for name in ("out", "bundle", "build"):  # relative to where the driver was started, before any chdir
        if getattr(args, name, None):
            setattr(args, name, os.path.abspath(getattr(args, name)))
    return args.fn(args) or 0


if __name__ == "__main__":
    sys.exit(main())
