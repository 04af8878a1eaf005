"""Tables made from recorded runs, on any machine: ours beside SDPA (`flashsim-gpu bench --csv` and
`sdpa.py bench`), the L2 and launch probes under ncu, the DRAM counters' run-to-run spread, and the summary
lines of `flashsim-gpu check`. Each returns its lines; run.py prints them."""
import collections
import csv
import functools
import json
import os
import re
import statistics
import subprocess

from ncu import read_metrics

MIB = 2**20


def read_bench_csv(path):
    """The rows of a `flashsim-gpu bench --csv` (or `sdpa.py bench`) file that ran (no `skipped` reason)."""
    with open(path) as f:
        return [r for r in csv.DictReader(f) if not r["skipped"]]


def write_bench_csv(path, rows):
    """Rows as read_bench_csv gives them, back to a CSV with their own columns."""
    with open(path, "w", newline="") as f:
        if rows:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)


def merge_bench_rounds(rounds):
    """Rounds of the same bench CSV (lists of read_bench_csv rows) as one: each (kernel, problem)'s times the median
    of its rounds (the upper middle of an even count, as flashsim-gpu takes its launches'), TFLOP/s from those;
    and the largest spread of a row's forward or backward time between rounds ((slowest - fastest) / fastest,
    its kernel and problem)."""
    by = collections.OrderedDict()
    for rows in rounds:
        for r in rows:
            by.setdefault((r["kernel"], r["problem"]), []).append(r)
    merged, worst = [], (0.0, "", "")
    for (kernel, problem), rs in by.items():
        row = dict(rs[0])
        for p in ("fwd", "bwd"):
            ms = sorted(float(r[f"{p}_ms"]) for r in rs if float(r[f"{p}_ms"] or 0) > 0)
            if not ms:
                continue
            mid = ms[len(ms) // 2]
            flops = float(rs[0][f"{p}_tflops"]) * float(rs[0][f"{p}_ms"])  # TFLOP/s x ms: the same FLOPs each round
            row[f"{p}_ms"], row[f"{p}_tflops"] = f"{mid:.4f}", f"{flops / mid:.1f}"
            worst = max(worst, (ms[-1] / ms[0] - 1, kernel, problem))
        merged.append(row)
    return merged, worst


def bench_table(ours, sdpa):
    """Per problem, each of our versions beside SDPA's flash and cuDNN backends, TFLOP/s forward and backward,
    and our ratio to each."""
    ref = {(r["kernel"], r["problem"]): r for r in sdpa}
    lines = [f"{'problem':<34} {'kernel':<14} {'fwd TF/s':>9} {'flash':>7} {'cudnn':>7} {'x flash':>8} {'x cudnn':>8} "
             f"{'bwd TF/s':>9} {'flash':>7} {'cudnn':>7} {'x flash':>8} {'x cudnn':>8}"]
    for r in ours:
        fl, cu = ref.get(("sdpa-flash", r["problem"])), ref.get(("sdpa-cudnn", r["problem"]))

        def cell(x, key):
            return f"{float(x[key]):7.1f}" if x else "      -"

        def ratio(peer, key):
            ok = peer and float(peer[key]) > 0 and float(r[key]) > 0
            return f"{float(r[key]) / float(peer[key]):8.2f}" if ok else "       -"

        lines.append(f"{r['problem']:<34} {r['kernel']:<14} {float(r['fwd_tflops']):9.1f} {cell(fl, 'fwd_tflops')} "
                     f"{cell(cu, 'fwd_tflops')} {ratio(fl, 'fwd_tflops')} {ratio(cu, 'fwd_tflops')} "
                     f"{float(r['bwd_tflops']):9.1f} {cell(fl, 'bwd_tflops')} {cell(cu, 'bwd_tflops')} "
                     f"{ratio(fl, 'bwd_tflops')} {ratio(cu, 'bwd_tflops')}")
    return lines


def launches(path):
    """The launch list a probe writes on stderr: [(launch index, [fields after it])]."""
    out = []
    with open(path) as f:
        for line in f:
            if line.startswith("launch"):
                fields = line.split()
                out.append((int(fields[1]), fields[2:]))
    return out


def miss_per_reread(read_bytes, buffer_bytes, reads=3):
    """A read-reuse probe's DRAM reads beyond its first pass over the buffer, over the re-reads' bytes."""
    return (read_bytes / buffer_bytes - 1) / (reads - 1)


def l2_probe_table(csv_path, launch_list):
    """One line per L2 probe launch: what it did and what ncu measured (DRAM bytes, time), plus the figure each
    probe exists for (h100.l2_dirty_bytes, h100.l2_reuse_bytes, h100.l2_adverse_reuse_bytes)."""
    metrics, _ = read_metrics(csv_path)
    lines = []
    for launch, f in launches(launch_list):
        kind, variant = f[0], ""
        if kind in ("fa_mimic", "causal_mimic"):
            variant, f = f[1], f[:1] + f[2:]
        args = dict(zip(f[1::2], (int(x) for x in f[2::2])))
        m = metrics[launch]
        rd, wr, t = m["dram__bytes_read.sum"], m["dram__bytes_write.sum"], m.get("gpu__time_duration.sum", 0)
        if kind == "stream_rw":
            what = (f"footprint {args['footprint_bytes'] / MIB:5.0f} MiB, written {args['write_bytes'] / MIB:5.1f} MiB"
                    f" -> still dirty at end {(args['write_bytes'] - wr) / 1e6:6.2f} MB")
        elif kind == "reuse_read":
            s = args["buffer_bytes"]
            what = f"buffer {s / MIB:5.0f} MiB read 3x -> miss per re-read {miss_per_reread(rd, s):5.3f}"
        elif kind == "write_then_spin":
            what = f"written {args['write_bytes'] / MIB:4.0f} MiB, then idle {args['spin_us']:3d} us"
        elif kind == "fa_mimic":
            what = (f"{variant:28s} O {args['o_bytes'] / 1e6:5.1f} MB, K/V {args['kv_bytes'] / 1e6:6.1f} MB -> O still "
                    f"dirty at end {(args['o_bytes'] - wr) / 1e6:5.2f} MB")
        elif kind == "causal_mimic":
            comp = args["q_bytes"] + args["kv_bytes"]
            what = (f"{variant:24s} Q + K/V {comp / 1e6:5.1f} MB, O {args['o_bytes'] / 1e6:4.1f} MB -> reads "
                    f"{rd / comp:5.3f}x the compulsory")
        elif kind == "dirty_reuse":
            s, first, spread = args["buffer_bytes"], args["dirty_first_bytes"], args["dirty_spread_bytes"]
            when = f"first {first / MIB:3.0f}" if first else f"spread {spread / MIB:2.0f}"
            what = (f"buffer {s / MIB:3.0f} MiB read 3x, dirty {when} MiB -> miss per re-read "
                    f"{miss_per_reread(rd, s):5.3f}, dirty written back {wr / 1e6:5.1f} MB")
        else:  # reuse_frames
            s = args["buffer_bytes"]
            what = (f"buffer {s / MIB:3.0f} MiB read 3x, dirty frames {args['frame_bytes'] * args['slots'] / 1e6:4.1f}"
                    f" MB -> miss per re-read {miss_per_reread(rd, s):5.3f}")
        lines.append(f"{launch:2d} {kind:15s} {what:74s} DRAM read {rd / 1e6:7.2f} MB, write {wr / 1e6:7.2f} MB, "
                     f"{t / 1e3:6.1f} us")
    return lines


def launch_probe_table(launch_list, runs, bandwidth=2.97e12):
    """One line per launch-probe kernel over the runs (ncu CSVs): its time in each run, its DRAM bytes and its
    time beyond them at the copy bandwidth (the lowest time of the runs); then the median of that overhead over
    the copy kernels (h100.kernel_latency_s). bandwidth: the profile's achieved_dram_bytes_per_s."""
    reports = [read_metrics(p)[0] for p in runs]
    lines, overheads = [], []
    for launch, f in launches(launch_list):
        what = " ".join(f)
        times = [r[launch]["gpu__time_duration.sum"] / 1e3 for r in reports]
        dram = reports[0][launch]["dram__bytes_read.sum"] + reports[0][launch]["dram__bytes_write.sum"]
        busy = dram / bandwidth * 1e6
        over = min(times) - busy
        if f[0] == "copy":
            overheads.append(over)
        lines.append(f"{launch:2d} {what:<62} time {' '.join(f'{t:7.2f}' for t in times)} us  DRAM {dram / 1e6:7.1f} MB"
                     f" = {busy:6.2f} us  beyond it {over:5.2f} us")
    if overheads:
        lines.append(f"copy kernels: time beyond DRAM bytes at {bandwidth / 1e12:.2f} TB/s, median "
                     f"{statistics.median(overheads):.2f} us (range {min(overheads):.2f} .. {max(overheads):.2f})")
    return lines


DRAM_COUNTERS = ("dram__bytes_read.sum", "dram__bytes_write.sum")


def dram_spread(folders):
    """Run-to-run spread of ncu's DRAM counters (h100.ncu_dram_repeatability): for every problem profiled more
    than once with the two DRAM counters alone (ncu_dram_<problem>.csv under the folders, recursively), per
    kernel and counter the lowest and highest figure and their difference as a share of the kernel's DRAM bytes
    (the smaller of its runs), largest first; then the largest share among figures under a fifth of their
    kernel's bytes and among write figures."""
    runs = collections.defaultdict(list)
    for folder in folders:
        for root, _, files in os.walk(folder):
            for f in sorted(files):
                if f.startswith("ncu_dram_") and f.endswith(".csv"):
                    runs[f[len("ncu_dram_"):-len(".csv")]].append(read_metrics(os.path.join(root, f)))
    rows = []
    for problem, reports in sorted(runs.items()):
        if len(reports) < 2:
            continue
        for kernel, name in sorted(reports[0][1].items()):
            totals = [sum(m[kernel][c] for c in DRAM_COUNTERS) for m, _ in reports]
            for c in DRAM_COUNTERS:
                values = [m[kernel][c] for m, _ in reports]
                share = (max(values) - min(values)) / min(totals)
                small = max(values) < min(totals) / 5
                rows.append((share, problem, name.split("<")[0].replace("void ", ""), c, len(values),
                             min(values), max(values), small))
    rows.sort(reverse=True)
    lines = [f"{len(runs)} problems, {sum(len(r) for r in runs.values())} reports",
             f"{'spread':>7}  {'problem':<24} {'kernel':<45} {'counter':<22} runs  min .. max MB"]
    for share, problem, kernel, c, n, lo, hi, _ in rows:
        lines.append(f"{share * 100:6.2f}%  {problem:<24} {kernel:<45} {c:<22} {n:4d}  {lo / 1e6:.3f} .. {hi / 1e6:.3f}")
    small = [r[0] for r in rows if r[7]]
    writes = [r[0] for r in rows if r[3] == DRAM_COUNTERS[1]]
    if rows:
        lines += [f"largest spread, figures under a fifth of their kernel's DRAM bytes ({len(small)}): "
                  f"{max(small, default=0) * 100:.2f}%",
                  f"largest spread, write figures ({len(writes)}): {max(writes, default=0) * 100:.2f}%",
                  f"largest spread, all figures ({len(rows)}): {rows[0][0] * 100:.2f}%"]
    return lines


CHECK_SUMMARY = re.compile(r"^== |cases passed|ALL PASS|NOTHING CHECKED|SOME OUTPUTS FAILED|^skipped|ERROR SUMMARY|RACECHECK SUMMARY")


def check_summary(text):
    """The lines of a `flashsim-gpu check` log that say what ran and how it ended (a version's header, the
    verdicts, the sanitizers' summaries), each once with its count, most frequent first."""
    counts = collections.Counter(line for line in text.splitlines() if CHECK_SUMMARY.search(line))
    return [f"{n:7d} {line}" for line, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


def check_clean(text):
    """Whether a `flashsim-gpu check --quiet` log ran every case (none skipped, none forward only)."""
    return "cases run (0 forward only), 0 skipped" in text


def check_passed(text):
    """Whether a `flashsim-gpu check --quiet` log failed no case (a version may skip cases, saying why)."""
    return "cases passed, 0 failed" in text


INSTANCE = re.compile(r"(fwd|bwd) d(\d+) .* Br(\d+) Bc(\d+) w(\d+)(?: st(\d+))?")


def instances(dry_run):
    """The configs of `flashsim-gpu autotune --dry-run`'s plan: [(pass, head dim, Br, Bc, warps, stages or None)],
    each once, in its order."""
    seen, out = set(), []
    for line in dry_run.splitlines():
        m = INSTANCE.search(line)
        if not m:
            continue
        p, d, br, bc, w, st = m.groups()
        key = (p, int(d), int(br), int(bc), int(w), int(st) if st else None)
        if key not in seen:
            seen.add(key)
            out.append(key)
    return out


def compare_summary(report, label=""):
    """A line per kernel and metric of `flashsim traffic compare --json`'s report (a dict): measured, predicted,
    their ratio or the DRAM range, and the verdict; then the report's overall verdict."""
    lines = []
    for k in report["kernels"]:
        name = k["name"].split(" ")[0]
        if not k.get("recognized", True):
            lines.append(f"{label}{name:<22} not recognized")
            continue
        for m in k["metrics"]:
            scale, unit = (1e3, "us") if "time" in m["metric"] else (1e6, "MB")  # ncu's base units: ns, bytes
            if m.get("lower") is not None:
                bound = f"{m['lower'] / scale:9.1f} .. {m['upper'] / scale:9.1f} {unit}"
            else:
                bound = f"ratio {m['ratio']:.4f}" if m.get("ratio") is not None else "ratio -"
            lines.append(f"{label}{name:<22} {m['metric']:<46} {m['measured'] / scale:11.1f} {unit} "
                         f"{m['predicted'] / scale:11.1f} {unit}  {bound:<26} {m['verdict'] or '(not checked)'}")
    lines.append(f"{label}{'all within tolerance' if report.get('ok') else 'SOME METRICS OUT OF TOLERANCE'}")
    return lines


def _ranks(x):
    """Average ranks (1-based) of x, ties sharing their mean (as sim tune --check ranks)."""
    order = sorted(range(len(x)), key=lambda i: x[i])
    r = [0.0] * len(x)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and x[order[j + 1]] == x[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


def _spearman(x, y):
    rx, ry = _ranks(x), _ranks(y)
    n = len(x)
    mx, my = sum(rx) / n, sum(ry) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx, syy = sum((a - mx) ** 2 for a in rx), sum((b - my) ** 2 for b in ry)
    return sxy / (sxx * syy) ** 0.5 if sxx > 0 and syy > 0 else 0.0


def autotune_agreement(first, second):
    """Two `flashsim-gpu autotune` CSVs of the same plan, the first taken as the prediction of the second: the
    statistics `flashsim sim tune --check` gives a model (its fastest within 5% of the second's fastest, the
    within-entry Spearman per (kernel, pass, head dim)). How far timings agree with themselves: the ceiling of any
    model's ranking."""
    spreads = {}

    def load(path):
        out = {}
        with open(path) as f:
            for r in csv.DictReader(f):
                if r.get("rounds_spread") and r["ms"] and not r.get("skipped"):
                    spreads.setdefault(path, []).append(float(r["rounds_spread"]))
                if r["ms"] and not r.get("skipped"):
                    entry = (r.get("kernel") or "fa2-v1", r["pass"], int(r["head_dim"]), r["dtype"], r["causal"],
                             r["bias"], int(r["seqlen_q"]), r["batch"], r["heads"])
                    tile = (r["block_q"], r["block_k"], r["warps"], r["stages"], r["bwd_block_q"], r["bwd_block_k"])
                    out.setdefault(entry, {})[tile] = float(r["ms"])
        return out
    a, b = load(first), load(second)
    groups = collections.defaultdict(list)
    within, entries = 0, 0
    for entry, tiles in sorted(a.items()):
        common = [t for t in tiles if t in b.get(entry, {})]
        if len(common) < 2:
            continue
        x, y = [tiles[t] for t in common], [b[entry][t] for t in common]
        groups[entry[:3]].append(_spearman(x, y))
        pick = min(range(len(x)), key=lambda i: x[i])
        entries += 1
        within += y[pick] <= 1.05 * min(y)
    lines = [f"{'kernel':<8} {'pass':<4} {'d':>4} {'entries':>7} {'rho mean':>9} {'rho min':>8}"]
    for (kernel, p, d), rhos in sorted(groups.items()):
        lines.append(f"{kernel:<8} {p:<4} {d:>4} {len(rhos):>7} {sum(rhos) / len(rhos):>9.3f} {min(rhos):>8.3f}")
    lines.append(f"the first's fastest within 5% of the second's fastest: {within} of {entries} entries")
    for path in (first, second):  # autotune --rounds: how far a config's rounds differed (0: one round)
        s = sorted(spreads.get(path, []))
        if s and s[-1] > 0:
            lines.append(f"{os.path.basename(os.path.dirname(path)) or path}: a config's rounds apart by "
                         f"{100 * s[0]:.1f} .. {100 * s[-1]:.1f}%, median {100 * s[len(s) // 2]:.1f}%")
    return lines


def read_decode_csv(path):
    """flashsim-gpu decode-bench's CSV: (copy bandwidth in B/s, rows as dicts with numbers)."""
    copy, rows = 0.0, []
    with open(path) as f:
        for line in f:
            if line.startswith("# device copy bandwidth"):
                copy = float(line.split(":")[1].split()[0]) * 1e9
    with open(path) as f:
        for r in csv.DictReader(line for line in f if not line.startswith("#")):
            rows.append({k: (v if k == "kernel" else float(v)) for k, v in r.items()})
    return copy, rows


def decode_table(version_csvs, sdpa_csv=None, model_json=None):
    """decode-bench over its grid, one line a (batch, cache length, page size): each version's time at the model's
    split count, its share of the copy bandwidth and the prediction's ratio; the measured best count; SDPA's
    backends (contiguous K/V) and FlashInfer's paged decode at the same page size beside it. Then the issue's
    tallies: the share at each cell, the prediction within 10%, the model's count within 5% of the best.
    model_json: `flashsim sim tune --kernel splitkv --split-tile ... --json` of a later model: its predictions
    replace the recorded ones and its pick (best_splits: sim::pick_splits, where it was measured; else the fastest
    predicted of the counts measured) the launch's."""
    model, picks = {}, {}
    if model_json:
        with open(model_json) as f:
            for e in json.load(f)["entries"]:
                key = (e["batch"], e["cache_len"], e["page_size"])
                model[key] = {x["num_splits"]: x["time_us"] / 1e3 for x in e["splits"] if x["fits"]}
                picks[key] = e.get("best_splits")
    sdpa = {}
    if sdpa_csv:
        with open(sdpa_csv) as f:
            for r in csv.DictReader(f):
                if r["ms"]:
                    sdpa[(r["backend"], int(r["batch"]), int(r["cache_len"]))] = float(r["ms"])
    lines = []
    for path in version_csvs:
        copy, rows = read_decode_csv(path)
        cells = {}
        for r in rows:
            cells.setdefault((int(r["batch"]), int(r["cache_len"]), int(r["page_size"])), []).append(r)
        name = rows[0]["kernel"] if rows else path
        lines += [f"{name} (copy bandwidth {copy / 1e9:.0f} GB/s)", "",
                  "| batch | cache | page | splits (model) | ms | share of copy | predicted ms | meas / pred "
                  "| best splits | best ms | model's / best | SDPA flash ms | SDPA cuDNN ms | FlashInfer ms |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        within10 = within5 = 0
        for (b, n, page), rs in sorted(cells.items()):
            if model:  # the later model's predictions and pick among the measured counts
                pred = model[(b, n, page)]
                rs = [dict(r, predicted_ms=pred[int(r["num_splits"])]) for r in rs if int(r["num_splits"]) in pred]
                picked = [r for r in rs if int(r["num_splits"]) == picks[(b, n, page)]]
                chosen = picked[0] if picked else min(rs, key=lambda r: r["predicted_ms"])
            else:
                chosen = next(r for r in rs if r["chosen"] == 1)
            best = min(rs, key=lambda r: r["ms"])
            ratio = chosen["ms"] / chosen["predicted_ms"]
            within10 += abs(ratio - 1) <= 0.10
            within5 += chosen["ms"] <= 1.05 * best["ms"]
            fl, cu = sdpa.get(("sdpa-flash", b, n)), sdpa.get(("sdpa-cudnn", b, n))
            fi = sdpa.get((f"flashinfer-p{page}", b, n))
            lines.append(f"| {b} | {n} | {page} | {int(chosen['num_splits'])} | {chosen['ms']:.4f} | "
                         f"{chosen['kv_bytes'] / (chosen['ms'] * 1e-3) / copy:.2f} | {chosen['predicted_ms']:.4f} | "
                         f"{ratio:.2f} | {int(best['num_splits'])} | {best['ms']:.4f} | {chosen['ms'] / best['ms']:.2f} | "
                         f"{fl if fl else '-'} | {cu if cu else '-'} | {fi if fi else '-'} |")
        lines += ["", f"{name}: prediction within 10% in {within10} of {len(cells)} cells; the model's split count "
                  f"within 5% of the measured best in {within5} of {len(cells)}", ""]
    return lines


@functools.lru_cache(maxsize=None)
def version_models(flashsim, version):
    """(forward models, backward models) of a kernel version, as sparse-bench predicts it: its simulator kernels
    (`flashsim-gpu list`, from the build beside `flashsim`) split by pass (`flashsim sim kernels`). KeyError: a
    version without them."""
    listing = subprocess.run([os.path.join(os.path.dirname(flashsim), "flashsim-gpu"), "list"], capture_output=True,
                             text=True, check=True).stdout.splitlines()
    names = next((nxt.split("simulator kernels:")[1].split() for line, nxt in zip(listing, listing[1:])
                  if line.split()[:1] == [version] and "simulator kernels:" in nxt), None)
    if not names:
        raise KeyError(f"{version}: no simulator kernels in flashsim-gpu list")
    passes = {f[0]: f[2] for f in (line.split() for line in subprocess.run(
        [flashsim, "sim", "kernels"], capture_output=True, text=True, check=True).stdout.splitlines()[1:]) if f}
    return [n for n in names if passes[n] == "fwd"], [n for n in names if passes[n] == "bwd"]


def _bench_problem(text):
    """A bench CSV's problem ("b16 h32/8 q1024 k1024 d64 causal bf16") as fa3_dev's shape (b h hkv sq sk d wl wr)."""
    m = re.match(r"b(\d+) h(\d+)(?:/(\d+))? q(\d+) k(\d+) d(\d+)( causal)?", text)
    b, h, sq, sk, d = int(m[1]), int(m[2]), int(m[4]), int(m[5]), int(m[6])
    return (b, h, int(m[3] or m[2]), sq, sk, d, -1, 0 if m[7] else -1)


def _sparse_predict(flashsim, row, hw):
    """(forward ms, backward ms) the simulator predicts for a sparse-bench CSV row: its problem, block mask (seed 1,
    the bench's inputs) and tiles, the kernel's own models."""
    prob = row["problem"]
    b, h, hkv, q, k, d, _, right = _bench_problem(prob)
    br, bc, w, st = re.search(r"fwd Br(\d+) Bc(\d+) w(\d+) st(\d+)", row["tile"]).groups()
    bbr, bbc, bw = re.search(r"bwd Br(\d+) Bc(\d+) w(\d+)", row["tile"]).groups()
    dtype = prob.split()[-1]
    args = ["--batch", str(b), "--heads", str(h), "--heads-kv", str(hkv), "--seqlen-q", str(q), "--seqlen-k", str(k),
            "--head-dim", str(d), "--dtype", dtype, "--hw", hw, "--seed", "1", "--json"] + (["--causal"] if right == 0 else [])
    mask = re.search(r"block_mask:(\w+):(\d+)x(\d+):(\S+)", prob)
    if mask:
        args += ["--block-mask", mask.group(4), "--block-mask-shape", mask.group(1), "--block-mask-tile",
                 f"{mask.group(2)},{mask.group(3)}"]
    fwd_models, bwd_models = version_models(flashsim, row["kernel"])

    def run(models, tile):
        cmd = [flashsim, "sim", "predict"] + [x for m in models for x in ("--kernel", m)] + args + tile
        out = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
        return 1e3 * sum(kernel["time_s"] for kernel in out["kernels"])

    return (run(fwd_models, ["--block-q", br, "--block-k", bc, "--warps", w, "--stages", st]),
            run(bwd_models, ["--bwd-block-q", bbr, "--bwd-block-k", bbc, "--warps", bw]))


def sparse_table(csv_paths, flashsim=None, hw="H100-SXM5-80GB"):
    """flashsim-gpu sparse-bench's rows: measured time per pass beside the prediction the CSV recorded or, with a
    flashsim build, the one it predicts now for the same problem, mask and tiles (the kernel's own models)."""
    rows = []
    for p in csv_paths:
        with open(p) as f:
            rows += list(csv.DictReader(f))
    lines = ["| problem | mask | fwd ms | predicted | pred / meas | bwd ms | predicted | pred / meas |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        fwd, bwd = (float(r["fwd_predicted_ms"]), float(r["bwd_predicted_ms"])) if not flashsim else \
            _sparse_predict(flashsim, r, hw)
        fm, bm = float(r["fwd_ms"]), float(r["bwd_ms"])
        shape = re.sub(r" block_mask:\S+", "", r["problem"])
        lines.append(f"| {shape} | {r['spec']} | {fm:.3f} | {fwd:.3f} | {fwd / fm:.3f} | {bm:.2f} | {bwd:.2f} | "
                     f"{bwd / bm:.3f} |")
    return lines


def fa3_model_table(paths, flashsim, hw="H100-SXM5-80GB"):
    """fa3-v1's times by CUDA events against `flashsim sim predict --hw hw` now: flashsim-gpu bench's CSVs (the
    forward kernel, and the backward's three kernels summed) and fa3_dev's `fwdshape` lines (the forward)."""
    import derive
    kernels = {"fwd": ["fwd_fa3"], "bwd": ["bwd_fa3_dot_do_o", "bwd_fa3", "bwd_fa3_convert"]}
    rows = []  # (shape, {pass: measured seconds})
    for path in paths:
        if path.endswith(".csv"):
            rows += [(_bench_problem(r["problem"]), {"fwd": float(r["fwd_ms"]) * 1e-3, "bwd": float(r["bwd_ms"]) * 1e-3})
                     for r in read_bench_csv(path) if r["kernel"] == "fa3-v1"]
        else:
            rows += [(shape, {"fwd": seconds}) for shape, seconds in derive.read_fwdshape(path).items()]
    if not rows:
        raise ValueError(f"no fa3-v1 times in {', '.join(paths)}")
    lines = [f"{'b h hkv sq sk d wl wr':36s} {'fwd us':>9} {'/ model':>8} {'bwd us':>9} {'/ model':>8}"]
    ratios = collections.defaultdict(list)
    for shape, measured in rows:
        line = f"{' '.join(map(str, shape)):36s}"
        for pass_ in ("fwd", "bwd"):
            if pass_ not in measured:
                continue
            predicted = sum(derive.fa3_predict(flashsim, k, shape, hw) for k in kernels[pass_])
            ratios[pass_].append(measured[pass_] / predicted)
            line += f" {measured[pass_] * 1e6:9.1f} {measured[pass_] / predicted:8.3f}"
        lines.append(line)
    for pass_, r in ratios.items():
        dev = sorted(abs(x - 1) for x in r)
        lines.append(f"{pass_}: {len(r)} problems, measured / predicted {min(r):.3f} .. {max(r):.3f}, median |error| "
                     f"{statistics.median(dev):.1%}, within 15%: {sum(d <= 0.15 for d in dev)} of {len(r)}")
    return lines
