"""The field's kernels over flashsim's golden suites (run.py peers on the GPU machine, run.py table peers here).

Each adapter (test_*.py beside this file) is a pytest test on the flashsim plugin; run() starts one pytest per
(adapter, suite) with --flashsim-record, so each case leaves a JSON line: kernel, suite, case, outcome (pass,
fail, skip, error), reason, worst error as a fraction of its bound, seconds (median of the timed calls)."""
import collections
import json
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
NORM_SUITES = ["norm", "default"]  # default mixes norm cases in
KERNELS = {  # adapter -> (file, suites): each over smoke, default, long and the suites its features fit
    "sdpa": ("test_sdpa_backends.py", ["smoke", "default", "sparse", "mla", "long"]),
    "sdpa-keep": ("test_sdpa_dropout.py", ["dropout"]),  # the math backend given the case's keep mask
    "flex": ("test_flex_attention.py", ["smoke", "default", "sparse", "sinks", "long"]),
    "flex-paged": ("test_flex_paged.py", ["decode", "default"]),  # FlexAttention's paged attention, KV caches alone
    "flashinfer": ("test_flashinfer.py", ["default", "decode"]),  # paged attention, KV caches alone
    "flashinfer-mla": ("test_flashinfer_mla.py", ["default", "mla"]),  # its MLA kernel, latent KV caches alone
    "flashinfer-prefill": ("test_flashinfer_prefill.py", ["smoke", "default", "long"]),  # dense cases, forward only
    "flashinfer-norm": ("test_flashinfer_norms.py", NORM_SUITES),
    # FlashAttention's CuTe-DSL kernels (its SM90 forward and backward; paged forward on the KV-cache cases)
    "flash-attn-4": ("test_flash_attn_4.py", ["smoke", "default", "sinks", "decode", "long"]),
    "jax": ("test_jax_attention.py", ["smoke", "default", "sparse", "long"]),
    "jax-fp8": ("test_jax_fp8.py", ["fp8"]),  # cuDNN's FP8 attention: o in e4m3 at its scale factor
    "torch-norms": ("test_torch_norms.py", NORM_SUITES),
    "liger": ("test_liger_norms.py", NORM_SUITES),
}


# Adapters whose every case compiles (torch.compile, jax.jit: 3-8 s a case on the H100 machine's CPUs) run the large
# suites in `shards` processes at once (run.py peers --shards, default 6); their timed calls take a lock in turn
# (--flashsim-time-lock), so a case's time is the GPU's alone while the other shards compile.
COMPILED = {"flex", "flex-paged", "jax", "jax-fp8"}
LARGE_SUITES = {"default"}
# FlashInfer JIT-compiles a kernel per variant (dtype, head dim, features) on first use, 1-3 minutes of nvcc each:
# every suite in shards, so the variants compile at once, each variant's cases in one shard (--flashsim-shard-by
# variant: a shard does not wait on the lock of a variant another shard is building).
# flash-attn-4 compiles each variant through the CuTe DSL in the calling process (seconds to a minute of CPU each).
JIT_PER_VARIANT = {"flashinfer", "flashinfer-mla", "flashinfer-prefill", "flashinfer-norm", "flash-attn-4"}
SUITE_ORDER = ["smoke", "norm", "fp8", "default", "sparse", "sinks", "dropout", "mla", "decode", "long"]  # cheap first


def generate(env, suite, out):
    """Generates a built-in suite once (all cores), timed; the adapters then find it in the cache."""
    t0 = time.time()
    code = f"import flashsim; print(len(flashsim.golden.Suite({suite!r}, progress=False)))"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    print(f"suite {suite}: {r.stdout.strip() or r.stderr.strip()[-300:]} cases generated in {time.time() - t0:.0f} s",
          flush=True)
    with open(os.path.join(out, "generate.log"), "a") as f:
        f.write(f"{suite}: rc {r.returncode}, {time.time() - t0:.0f} s\n{r.stderr[-2000:]}\n")


def recorded(paths):
    """(adapter, suite) -> the cases earlier runs' records (JSON lines) hold; a parametrized adapter's records
    ("sdpa-flash" of adapter "sdpa") count for it."""
    done = collections.defaultdict(set)
    for path in paths:
        with open(path) as f:
            lines = f.readlines()
        for line in lines:
            if line.strip():
                r = json.loads(line)
                adapter = r["kernel"] if r["kernel"] in KERNELS else \
                    next((k for k in KERNELS if r["kernel"].startswith(k + "-")), None)
                if adapter:
                    done[(adapter, r["suite"])].add(r["case"])
    return done


def case_filter_regex(case_filter, skip):
    """The plugin's --flashsim-filter (re.search on a case's name) for the cases that match case_filter (None: any)
    and are not in skip (names)."""
    if not skip:
        return case_filter
    regex = "^(?!(?:" + "|".join(re.escape(n) for n in sorted(skip)) + ")$)"
    return regex + (f"(?=.*(?:{case_filter}))" if case_filter else "")


def compile_jobs(env, shards):
    """nvcc jobs a shard of a JIT-compiling adapter may run (its MAX_JOBS): the caller's MAX_JOBS (default: every
    core) shared among the shards. Each shard taking them all oversubscribes the cores: run 22 (FlashInfer, 14
    shards of 16 jobs on 16 cores) compiled 14 variants at once and none finished within its 410 s, where one
    variant alone takes about 3 minutes."""
    total = int(env.get("MAX_JOBS") or 0) or os.cpu_count() or 1
    return max(1, total // shards)


def run(env, out, kernels=None, suites=None, repeats=5, budget_s=540, case_filter=None, run_s=300, shards=6,
        done=None):
    """pytest per (suite, adapter) within budget_s, suite by suite in SUITE_ORDER, each stopped after run_s (the
    cases it finished are recorded); the records in out/peers.jsonl, pytest's logs in out/logs. done: recorded()
    of earlier runs' records: the cases they hold are not run again (a run its time limit cut, continued)."""
    done = done or {}
    start = time.time()
    os.makedirs(os.path.join(out, "logs"), exist_ok=True)
    record = os.path.join(out, "peers.jsonl")
    for suite in [s for s in SUITE_ORDER if suites is None or s in suites]:
        plan = [k for k in (kernels or KERNELS) if suite in KERNELS[k][1]]
        if not plan:
            continue
        if budget_s - (time.time() - start) < 30:
            print(f"{suite}: not run (budget spent)", flush=True)
            continue
        generate(env, suite, out)
        for kernel in plan:
            left = budget_s - (time.time() - start)
            if left < 20:
                print(f"{kernel} {suite}: not run (budget spent)", flush=True)
                continue
            cmd = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                   os.path.join(HERE, KERNELS[kernel][0]), "--flashsim-suite", suite, "--flashsim-record", record]
            cases = case_filter_regex(case_filter, done.get((kernel, suite)))
            cmd += ["--flashsim-filter", cases] if cases else []
            n = shards if kernel in JIT_PER_VARIANT or (kernel in COMPILED and suite in LARGE_SUITES) else 1
            cmd += ["--flashsim-time", str(repeats), "--flashsim-time-lock", os.path.join(out, "time.lock")]
            by = ["--flashsim-shard-by", "variant"] if kernel in JIT_PER_VARIANT else []  # a variant compiled once
            runs = [(cmd, f"{kernel}_{suite}")] if n == 1 else \
                [(cmd + ["--flashsim-shard", f"{i}/{n}"] + by, f"{kernel}_{suite}_{i}") for i in range(n)]
            t0 = time.time()
            procs = []
            shard_env = dict(env, MAX_JOBS=str(compile_jobs(env, n))) if kernel in JIT_PER_VARIANT else env
            for c, name in runs:
                log = open(os.path.join(out, "logs", name + ".log"), "w")
                procs.append((subprocess.Popen(c, env=shard_env, stdout=log, stderr=subprocess.STDOUT), log, name))
            for p, log, name in procs:
                try:
                    rc = p.wait(timeout=max(1, min(left, run_s) - (time.time() - t0)))
                except subprocess.TimeoutExpired:
                    p.kill()
                    rc = "timeout"
                log.close()
                with open(log.name) as f:
                    tail = f.read().strip().splitlines()[-1:] or [""]
                print(f"{name}: rc {rc}, {time.time() - t0:.0f} s: {tail[0]}", flush=True)


def _reason(r):
    """A skip or failure reason without the case's name in front (so that reasons group)."""
    return re.sub(r"^" + re.escape(r["case"]) + r": ", "", r["reason"] or "")


def latest_records(paths):
    """The records of the files in order, a later file's record of a (kernel, suite, case) replacing an earlier
    one's (a rerun)."""
    latest = {}
    for p in paths:
        with open(p) as f:
            lines = f.readlines()
        for line in lines:
            if line.strip():
                r = json.loads(line)
                latest[(r["kernel"], r["suite"], r["case"])] = r
    return list(latest.values())


def table(*paths):
    """kernel x suite: passed / failed / skipped / errors, the worst error / bound of the passing cases, the median
    time of a case (over the cases it passed: no comparison between kernels) and its time over the fastest kernel's
    on the cases another kernel also passed in the same pass (geometric mean; speed() has them case by case); then
    the skips grouped by reason and every failure or error."""
    rows = latest_records(paths)
    cells = collections.defaultdict(list)
    for r in rows:
        cells[(r["kernel"], r["suite"])].append(r)
    ratios = collections.defaultdict(list)  # (kernel, suite) -> its time over the fastest's, on shared cases
    for (suite, _), shared in _shared_times(rows).items():
        for t in shared.values():
            for k, sec in t.items():
                ratios[(k, suite)].append(sec / min(t.values()))
    out = ["| kernel | suite | pass | fail | skip | error | worst error / bound (passing) | median ms / case | "
           "time / fastest's on shared cases (cases) |",
           "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for (kernel, suite), rs in sorted(cells.items()):
        n = collections.Counter(r["outcome"] for r in rs)
        worst = [r["worst_fraction"] for r in rs if r["outcome"] == "pass" and r["worst_fraction"] is not None]
        secs = [r["seconds"] for r in rs if r["outcome"] == "pass" and r["seconds"] is not None]
        vs = ratios.get((kernel, suite))
        vs = f"{statistics.geometric_mean(vs):.2f} ({len(vs)})" if vs else "-"
        out.append(f"| {kernel} | {suite} | {n['pass']} | {n['fail']} | {n['skip']} | {n['error']} | "
                   f"{max(worst):.2f} | {1e3 * statistics.median(secs):.3f} | {vs} |" if worst and secs else
                   f"| {kernel} | {suite} | {n['pass']} | {n['fail']} | {n['skip']} | {n['error']} | - | - | {vs} |")
    out += ["", "Skips by reason (kernel: count, reason):"]
    skips = collections.Counter((r["kernel"], _reason(r)) for r in rows if r["outcome"] == "skip")
    out += [f"- {k}: {c}, {why}" for (k, why), c in sorted(skips.items())]
    bad = [r for r in rows if r["outcome"] in ("fail", "error")]
    out += ["", f"Failures and errors ({len(bad)}):"]
    out += [f"- {r['kernel']} {r['suite']} {r['case']}: {r['outcome']}: {_reason(r)}" for r in bad]
    return out


def _timed_pass(r):
    """What a passing record's time covers: "fwd+bwd" where it checked a gradient (its outputs dq, dk, dx, ...),
    else "fwd"."""
    return "fwd+bwd" if any(o.startswith("d") for o in r.get("outputs") or ()) else "fwd"


def _shared_times(rows):
    """(suite, pass) -> case -> kernel -> seconds, for the cases that passed with a time on two kernels or more."""
    groups = collections.defaultdict(dict)
    for r in rows:
        if r["outcome"] == "pass" and r.get("seconds"):
            groups[(r["suite"], _timed_pass(r))].setdefault(r["case"], {})[r["kernel"]] = r["seconds"]
    return {g: {c: t for c, t in cases.items() if len(t) > 1} for g, cases in groups.items()
            if any(len(t) > 1 for t in cases.values())}


def speed(*paths):
    """The kernels side by side, case by case: a kernel's time is compared only with the others' on the same case and
    the same pass (forward, or forward and backward), each kernel's median over different cases being no
    comparison. Per (suite, pass): each kernel's cases timed beside another kernel, the geometric mean of its time
    over the fastest kernel's on each of them, the cases it was fastest on; then a table a case, a column a kernel
    (ms, the fastest marked *). Records of one GPU: the times are wall times of the adapter's call (median)."""
    out = []
    for (suite, kind), shared in sorted(_shared_times(latest_records(paths)).items(),
                                        key=lambda g: (SUITE_ORDER.index(g[0][0]) if g[0][0] in SUITE_ORDER else 99,
                                                       g[0][1])):
        kernels = sorted({k for t in shared.values() for k in t})
        out += [f"## {suite}, {kind}: {len(shared)} cases timed on two kernels or more", "",
                "| kernel | cases | time / fastest's (geometric mean) | fastest on | median ms |",
                "| --- | ---: | ---: | ---: | ---: |"]
        summary = []
        for k in kernels:
            mine = [t for t in shared.values() if k in t]
            ratios = [t[k] / min(t.values()) for t in mine]
            summary.append((statistics.geometric_mean(ratios), k, len(mine), sum(r == 1.0 for r in ratios),
                            1e3 * statistics.median(t[k] for t in mine)))
        out += [f"| {k} | {n} | {g:.2f} | {fast} | {ms:.3f} |" for g, k, n, fast, ms in sorted(summary)]
        out += ["", "| case | " + " | ".join(kernels) + " |", "| --- |" + " ---: |" * len(kernels)]
        for case, t in sorted(shared.items()):
            best = min(t.values())
            out.append(f"| {case} | " + " | ".join("" if k not in t else f"{1e3 * t[k]:.3f}" + ("*" if t[k] == best
                                                                                                  else "")
                                                    for k in kernels) + " |")
        out.append("")
    return out or ["no case passed on two kernels with times"]
