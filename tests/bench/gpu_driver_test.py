#!/usr/bin/env python3
"""The GPU driver's CPU side (bench/gpu/run.py and its modules), without a GPU: every verb's arguments, ncu's
command lines and CSV reader on the recorded reports of tests/data/ncu, the tables (the DRAM counters' spread of
the recorded repeats, ours beside SDPA, the probes' tables, the decode table's peers), `flashsim-gpu check`
summaries and autotune plans, a bundle packed from this build's flashsim and unpacked again, a wheel carried in
parts and joined again, and `compare` on recorded reports.

  gpu_driver_test.py DRIVER_DIR SOURCE_DIR FLASHSIM
"""
import glob
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import unittest
import unittest.mock
from contextlib import redirect_stdout

DRIVER, SRC, FLASHSIM = sys.argv[1:4]
sys.path.insert(0, DRIVER)
import bundle  # noqa: E402
import carry_parts  # noqa: E402
import derive  # noqa: E402
import fwd_mimic  # noqa: E402
import ncu  # noqa: E402
import run  # noqa: E402
import sdpa_stack  # noqa: E402
import tables  # noqa: E402

NCU = os.path.join(SRC, "tests", "data", "ncu")


def write(folder, name, text):
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def ncu_csv(rows):
    """An ncu details page: rows of (id, kernel, metric, unit, value)."""
    lines = ['==PROF== Connected to process 1', '"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"']
    lines += [f'"{i}","{k}","{m}","{u}","{v}"' for i, k, m, u, v in rows]
    return "\n".join(lines) + "\n"


class Arguments(unittest.TestCase):
    def parse(self, *argv):
        return run.parser().parse_args(list(argv))

    def test_every_verb(self):
        a = self.parse("bundle", "--build", "build/b", "--out", "x", "--binaries", "flashsim")
        self.assertEqual((a.fn, a.build, a.out, a.binaries), (run.cmd_bundle, "build/b", "x", "flashsim"))
        a = self.parse("check", "--kernels", "fa2-v1", "--dq", "partials", "--no-sanitize")
        self.assertEqual((a.fn, a.kernels, a.dq, a.no_sanitize, a.bundle), (run.cmd_check, "fa2-v1", "partials", True,
                                                                            ".gpu-bundle"))
        a = self.parse("bench", "--grid", "--seqlens 4096", "--tag", "_t")
        self.assertEqual((a.fn, a.grid.split(), a.tag, a.rounds), (run.cmd_bench, ["--seqlens", "4096"], "_t", 2))
        for argv in (["bench", "--rounds", "0"], ["autotune", "--rounds", "-1"], ["tune-validate", "--rounds", "x"]):
            with self.assertRaises(SystemExit) as e, redirect_stdout(io.StringIO()), \
                    open(os.devnull, "w") as null, redirect_stderr(null):
                self.parse(*argv)
            self.assertEqual(e.exception.code, 2, argv)
        a = self.parse("traffic", "sdpa", "--shapes", "validation3", "--metrics", "dram", "--runs", "3")
        self.assertEqual((a.fn, a.what, a.shapes, a.metrics, a.runs), (run.cmd_traffic, "sdpa", "validation3", "dram", 3))
        for what in ("fa2", "own", "tiles", "autotune-tiles", "layouts", "metric-sets"):
            self.assertEqual(self.parse("traffic", what).what, what)
        self.assertEqual(self.parse("compare", "--set", "validation2", "--replayed").set, "validation2")
        a = self.parse("autotune", "--no-check", "--grid", "small", "--budget-s", "100")
        self.assertEqual((a.no_check, a.no_time, a.grid, a.budget_s, a.rounds), (True, False, "small", 100, 3))
        self.assertEqual(self.parse("autotune", "--rounds", "7").rounds, 7)
        a = self.parse("tune-validate", "--out", "o")
        self.assertEqual((a.fn, a.no_check, a.out, a.rounds), (run.cmd_tune_validate, True, "o", 1))
        for name in ("l2", "launch", "cta-rates", "cta-stream"):
            self.assertEqual(self.parse("probe", name).name, name)
        self.assertEqual(self.parse("probe", "l2", "--probes", "causal_mimic", "--metrics", "dram").probes, "causal_mimic")
        self.assertEqual(self.parse("sdpa", "once", "2", "16", "16", "2048", "96", "0").rest, ["2", "16", "16", "2048", "96", "0"])
        self.assertEqual(self.parse("python-check", "smoke", "default").suites, ["smoke", "default"])
        self.assertEqual(self.parse("table", "launch", "a.err", "r1.csv", "r2.csv").files, ["a.err", "r1.csv", "r2.csv"])
        self.assertEqual(self.parse("derive", "l2-adverse", "fs", "res").results, "res")
        a = self.parse("peers", "--kernels", "sdpa,flex", "--suites", "smoke", "--time", "3", "--run-s", "60")
        self.assertEqual((a.fn, a.kernels, a.suites, a.time, a.run_s, a.bundle), (run.cmd_peers, "sdpa,flex", "smoke",
                                                                                 3, 60, ".gpu-bundle-py"))
        a = self.parse("resources", "bin", "--arch", "sm_80")
        self.assertEqual((a.verb, a.rest), ("resources", ["bin", "--arch", "sm_80"]))

    def test_bad_verb_and_choice(self):
        for argv in (["nosuchverb"], ["traffic", "nosuch"], ["traffic", "sdpa", "--shapes", "nosuch"], ["probe", "x"]):
            with self.assertRaises(SystemExit), redirect_stdout(io.StringIO()), \
                    open(os.devnull, "w") as null, redirect_stderr(null):
                self.parse(*argv)


def redirect_stderr(f):
    import contextlib
    return contextlib.redirect_stderr(f)


class Ncu(unittest.TestCase):
    def test_command(self):
        cmd = ncu.command("dram", ["python3", "sdpa.py", "once", "1"], kernel_regex="flash")
        self.assertEqual(cmd, ["ncu", "--clock-control", "none", "-k", "regex:flash", "--csv", "--metrics",
                               "dram__bytes_read.sum,dram__bytes_write.sum", "python3", "sdpa.py", "once", "1"])
        cmd = ncu.command("tile", ["fg"], kernel_regex="flashsim_fa2_fwd", launch_count=1, clock_control=False,
                          extra=("--page", "raw"))
        self.assertEqual(cmd[:7], ["ncu", "-k", "regex:flashsim_fa2_fwd", "--launch-count", "1", "--csv", "--page"])
        self.assertEqual(len(ncu.TRAFFIC.split(",")), 16)
        self.assertEqual(len(ncu.TILE.split(",")), 21)
        self.assertTrue(ncu.AUTOTUNE.startswith(ncu.TILE + ","))

    def test_recorded_shapes_are_the_recorded_reports(self):
        for set_name, sub in (("first", ""), ("validation", "validation/"), ("validation2", "validation2/")):
            for name in ncu.SHAPES[set_name]:
                self.assertTrue(os.path.exists(os.path.join(NCU, sub + f"ncu_{name}.csv")), name)
                self.assertTrue(os.path.exists(os.path.join(NCU, "single_pass", f"ncu_dram_{name}.csv")), name)

    def test_problem_flags(self):
        self.assertEqual(ncu.problem_flags((2, 32, 8, 2048, 128, False)),
                         ["--batch", "2", "--heads", "32", "--heads-kv", "8", "--seqlen", "2048", "--head-dim", "128",
                          "--dtype", "bf16"])
        self.assertEqual(ncu.problem_flags((1, 8, 8, 16384, 128, True), dtype=None)[-1], "--causal")

    def test_read_recorded_report(self):
        metrics, names = ncu.read_metrics(os.path.join(NCU, "ncu_causal_d128_n4096.csv"))
        self.assertEqual(len(metrics), len(names))
        self.assertTrue(any("flash_fwd_kernel" in n for n in names.values()))
        for m in metrics.values():
            self.assertEqual(set(ncu.TRAFFIC.split(",")), set(m))
            self.assertGreater(m["gpu__time_duration.sum"], 0)
        dram, _ = ncu.read_metrics(os.path.join(NCU, "single_pass", "ncu_dram_causal_d128_n4096.csv"))
        self.assertEqual(sorted(dram), sorted(metrics))

    def test_units(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = write(tmp, "r.csv", ncu_csv([(0, "k", "dram__bytes_read.sum", "Mbyte", "1,234.5"),
                                                (0, "k", "gpu__time_duration.sum", "usecond", "2")]))
            m, names = ncu.read_metrics(path)
        self.assertEqual(m, {0: {"dram__bytes_read.sum": 1234.5e6, "gpu__time_duration.sum": 2000}})
        self.assertEqual(names, {0: "k"})


class Tables(unittest.TestCase):
    def test_dram_spread_of_the_recorded_repeats(self):
        lines = tables.dram_spread([os.path.join(NCU, d) for d in ("single_pass", "single_pass_repeat", "dram_repeats")])
        self.assertEqual(lines[0], "17 problems, 68 reports")
        self.assertIn("d128_n16384_causal", lines[2])
        self.assertTrue(lines[2].startswith("  5.43%"))
        self.assertEqual(lines[-3:], [
            "largest spread, figures under a fifth of their kernel's DRAM bytes (22): 0.67%",
            "largest spread, write figures (68): 1.26%",
            "largest spread, all figures (136): 5.43%"])

    def test_bench_table(self):
        head = "kernel,problem,fwd_ms,fwd_tflops,bwd_ms,bwd_tflops,skipped\n"
        p = "b4 h16 q4096 k4096 d128 bf16"
        with tempfile.TemporaryDirectory() as tmp:
            ours = write(tmp, "o.csv", head + f"fa2-v1,{p},1,300.0,1,200.0,\nnaive-v1,{p},0,0,0,0,\"too big\"\n")
            sdpa = write(tmp, "s.csv", head + f"sdpa-flash,{p},1,400.0,1,250.0,\"\"\nsdpa-cudnn,{p},1,500.0,1,0,\"\"\n")
            lines = tables.bench_table(tables.read_bench_csv(ours), tables.read_bench_csv(sdpa))
        self.assertEqual(len(lines), 2)  # the skipped row left out
        # x flash, x cudnn; a peer at 0 TFLOP/s (cuDNN's backward here) gives no ratio
        self.assertEqual(lines[1].split(), [*p.split(), "fa2-v1", "300.0", "400.0", "500.0", "0.75", "0.60", "200.0",
                                            "250.0", "0.0", "0.80", "-"])

    def test_bench_rounds_take_each_rows_median(self):
        head = "kernel,problem,fwd_ms,fwd_tflops,bwd_ms,bwd_tflops,skipped\n"
        p, q = "b4 h16 q4096 k4096 d128 bf16", "b1 h16 q512 k512 d64 bf16"
        with tempfile.TemporaryDirectory() as tmp:
            rounds = [tables.read_bench_csv(write(tmp, f"r{i}.csv", head + f"fa3-v1,{p},{f},{300 / f:.1f},2,100.0,\n"
                                                                       f"fa3-v1,{q},0.5,10.0,0,0,\n"))
                      for i, f in enumerate((1.0, 1.2, 1.1))]
            merged, worst = tables.merge_bench_rounds(rounds)
            path = os.path.join(tmp, "m.csv")
            tables.write_bench_csv(path, merged)
            again = tables.read_bench_csv(path)
        self.assertEqual([r["problem"] for r in merged], [p, q])
        self.assertEqual((merged[0]["fwd_ms"], merged[0]["fwd_tflops"]), ("1.1000", "272.7"))  # 300 TFLOP/s x 1 ms
        self.assertEqual((merged[0]["bwd_ms"], merged[0]["bwd_tflops"]), ("2.0000", "100.0"))
        self.assertEqual((merged[1]["bwd_ms"], merged[1]["bwd_tflops"]), ("0", "0"))  # forward only: left as it was
        self.assertAlmostEqual(worst[0], 0.2)
        self.assertEqual(worst[1:], ("fa3-v1", p))
        self.assertEqual(again, merged)
        # a side that ran in one round only (one kernel's rows missing from another round) keeps its one time
        merged, _ = tables.merge_bench_rounds([rounds[0], []])
        self.assertEqual(merged[0]["fwd_ms"], "1.0000")

    def test_autotune_agreement_of_two_runs(self):
        head = "kernel,pass,head_dim,dtype,causal,bias,seqlen_q,batch,heads,block_q,block_k,warps,stages," \
               "bwd_block_q,bwd_block_k,ms,skipped"

        def rows(times, spreads=None):
            out = []
            for i, ((d, bk), ms) in enumerate(times):
                line = f"fa3-v1,fwd,{d},bf16,0,0,4096,4,16,128,{bk},12,2,,,{ms},"
                out.append(line + (f",{spreads[i]}" if spreads else ""))
            return out
        # d64: three tiles, the second run swaps the two slower (rho 0.5); d128: two tiles, the same order (1.0)
        first = [((64, 64), 1.0), ((64, 128), 1.1), ((64, 160), 1.3), ((128, 64), 2.0), ((128, 128), 1.0)]
        second = [((64, 64), 1.0), ((64, 128), 1.2), ((64, 160), 1.1), ((128, 64), 2.2), ((128, 128), 1.1)]
        with tempfile.TemporaryDirectory() as tmp:
            a = write(tmp, "a.csv", "\n".join([head] + rows(first)) + "\n")
            b = write(tmp, "b.csv", "\n".join([head + ",rounds_spread"] +
                                               rows(second, [0.01, 0.05, 0.03, 0.02, 0.04])) + "\n")
            lines = tables.autotune_agreement(a, b)
        self.assertEqual(lines[1].split(), ["fa3-v1", "fwd", "64", "1", "0.500", "0.500"])
        self.assertEqual(lines[2].split(), ["fa3-v1", "fwd", "128", "1", "1.000", "1.000"])
        self.assertEqual(lines[3], "the first's fastest within 5% of the second's fastest: 2 of 2 entries")
        self.assertEqual(len(lines), 5)  # the first run has no rounds: no spread line for it
        self.assertTrue(lines[4].endswith("a config's rounds apart by 1.0 .. 5.0%, median 3.0%"), lines[4])

    def test_probe_tables(self):
        with tempfile.TemporaryDirectory() as tmp:
            rows = []
            for i, (rd, wr, t) in enumerate(((100e6, 0, 40e3), (0, 8e6, 10e3))):
                rows += [(i, "k", "dram__bytes_read.sum", "byte", rd), (i, "k", "dram__bytes_write.sum", "byte", wr),
                         (i, "k", "gpu__time_duration.sum", "nsecond", t)]
            report = write(tmp, "p.csv", ncu_csv(rows))
            mib = 2**20
            launches = write(tmp, "p.err", f"launch 0 reuse_read buffer_bytes {32 * mib}\n"
                                           f"launch 1 stream_rw footprint_bytes {96 * mib} write_bytes {32 * mib}\nother\n")
            l2 = tables.l2_probe_table(report, launches)
            self.assertEqual(len(l2), 2)
            self.assertIn("miss per re-read 0.990", l2[0])  # (100 MB / 32 MiB - 1) / 2
            self.assertIn("still dirty at end  25.55 MB", l2[1])  # 32 MiB written, 8 MB of it to DRAM
            copy = write(tmp, "c.err", "launch 0 copy 64 MiB\nlaunch 1 empty\n")
            launch = tables.launch_probe_table(copy, [report, report], bandwidth=1e12)
            self.assertIn("beyond it  -60.00 us".replace("  -", " -"), launch[0])
            self.assertTrue(launch[-1].startswith("copy kernels: time beyond DRAM bytes at 1.00 TB/s, median -60.00"))

    def test_compare_summary_of_a_recorded_output(self):
        path = os.path.join(SRC, "tests", "data", "recorded_outputs", "expected",
                            "compare_first_causal_d128_n4096_one_pass.txt")
        with open(path) as f:
            text = f.read()
        lines = tables.compare_summary(json.loads(text[:text.rindex("exit")]))
        self.assertEqual(lines[-1], "all within tolerance")
        self.assertTrue(lines[0].startswith("fwd_fa2 "))
        self.assertRegex(lines[0], r"l1tex__m_xbar2l1tex_read_bytes.sum +1141.0 MB +1140.9 MB  ratio 1.0001 +ok$")
        self.assertRegex(lines[3], r"dram__bytes_read.sum +125.3 MB +100.7 MB +100.7 .. +967.9 MB  ok \(within")
        self.assertRegex(lines[7], r"gpu__time_duration.sum +485.2 us +502.8 us  ratio 0.9650 +\(not checked\)$")

    def test_check_summary_and_plan(self):
        log = ("== fa2-v1 (fwd+bwd)\ncase a ok\n== fa2-v1 (fwd+bwd)\n18 cases run (0 forward only), 0 skipped\n"
               "18 cases passed, 0 failed\nALL PASS\n")
        self.assertEqual(tables.check_summary(log), ["      2 == fa2-v1 (fwd+bwd)", "      1 18 cases passed, 0 failed",
                                                     "      1 ALL PASS"])
        self.assertTrue(tables.check_clean(log))
        plan = ("1 problems, 3 configs\n[1/3] fwd d128 bf16 plain n128 fwd Br128 Bc64 w4 st2\n"
                "[2/3] fwd d128 bf16 plain n128 fwd Br128 Bc64 w4 st1\n[3/3] bwd d128 bf16 plain n128 bwd Br64 Bc64 w2\n")
        self.assertEqual(tables.instances(plan), [("fwd", 128, 128, 64, 4, 2), ("fwd", 128, 128, 64, 4, 1),
                                                  ("bwd", 128, 64, 64, 2, None)])


class Peers(unittest.TestCase):
    def test_table_of_records(self):
        import peers
        rows = [dict(kernel="k", suite="s", case="a", outcome="pass", reason="", worst_fraction=0.5, seconds=0.002),
                dict(kernel="k", suite="s", case="b", outcome="fail", reason="o: max abs error over bound",
                     worst_fraction=3.0, seconds=0.001),
                dict(kernel="k", suite="s", case="c", outcome="skip", reason="c: the kernel does not support varlen",
                     worst_fraction=None, seconds=None),
                dict(kernel="k", suite="s", case="d", outcome="skip", reason="d: the kernel does not support varlen",
                     worst_fraction=None, seconds=None)]
        rerun = dict(rows[1], outcome="pass", reason="", worst_fraction=0.25, seconds=0.004)  # a later run's
        with tempfile.TemporaryDirectory() as d:
            for name, recs in (("r1.jsonl", rows), ("r2.jsonl", [rerun])):
                write(d, name, "".join(json.dumps(r) + "\n" for r in recs))
            lines = peers.table(os.path.join(d, "r1.jsonl"), os.path.join(d, "r2.jsonl"))
        self.assertIn("| k | s | 2 | 0 | 2 | 0 | 0.50 | 3.000 | - |", lines)  # no other kernel: no ratio  # b passed on the rerun; median of 2, 4 ms
        self.assertIn("- k: 2, the kernel does not support varlen", lines)  # the case names dropped: one group
        self.assertIn("Failures and errors (0):", lines)

    def test_speed_compares_kernels_case_by_case_and_pass_by_pass(self):
        import peers

        def rec(kernel, case, seconds, outputs=("o", "lse", "dq", "dk", "dv"), outcome="pass", suite="s"):
            return dict(kernel=kernel, suite=suite, case=case, outcome=outcome, reason="", worst_fraction=0.1,
                        outputs=list(outputs), seconds=seconds)
        rows = [rec("a", "c1", 0.001), rec("b", "c1", 0.004), rec("a", "c2", 0.003), rec("b", "c2", 0.001),
                rec("c", "c2", 0.002),
                rec("a", "c3", 0.009), rec("b", "c3", 0.001, outcome="fail"),  # a failure is not timed beside
                rec("f", "c1", 0.0001, outputs=("o", "lse")),  # forward only: not beside a's forward + backward
                rec("g", "c1", 0.0002, outputs=("o",))]
        rerun = rec("b", "c1", 0.002)  # a later file's record replaces the first
        with tempfile.TemporaryDirectory() as d:
            write(d, "r1.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
            write(d, "r2.jsonl", json.dumps(rerun) + "\n")
            lines = peers.speed(os.path.join(d, "r1.jsonl"), os.path.join(d, "r2.jsonl"))
            none = peers.speed(os.path.join(d, "r2.jsonl"))
        self.assertIn("## s, fwd: 1 cases timed on two kernels or more", lines)
        self.assertIn("| f | 1 | 1.00 | 1 | 0.100 |", lines)
        self.assertIn("| g | 1 | 2.00 | 0 | 0.200 |", lines)
        self.assertIn("## s, fwd+bwd: 2 cases timed on two kernels or more", lines)  # c3: a alone passed
        self.assertIn("| a | 2 | 1.73 | 1 | 2.000 |", lines)  # ratios 1 and 3: geometric mean sqrt(3)
        self.assertIn("| b | 2 | 1.41 | 1 | 1.500 |", lines)  # 2 and 1 (the rerun's 2 ms on c1)
        self.assertIn("| c | 1 | 2.00 | 0 | 2.000 |", lines)
        self.assertIn("| c1 | 1.000* | 2.000 |  |", lines)
        self.assertIn("| c2 | 3.000 | 1.000* | 2.000 |", lines)
        self.assertEqual(none, ["no case passed on two kernels with times"])
        for what in ("peers", "peers-speed"):  # not records: one line, exit 2
            self.assertEqual(run.main(["table", what, os.path.join(SRC, "README.md")]), 2)
        with tempfile.TemporaryDirectory() as d:
            write(d, "r1.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
            write(d, "r2.jsonl", json.dumps(rerun) + "\n")
            table = peers.table(os.path.join(d, "r1.jsonl"), os.path.join(d, "r2.jsonl"))
        self.assertIn("| a | s | 3 | 0 | 0 | 0 | 0.10 | 3.000 | 1.73 (2) |", table)  # c3 alone: not in the ratio
        self.assertIn("| g | s | 1 | 0 | 0 | 0 | 0.10 | 0.200 | 2.00 (1) |", table)  # beside f's forward

    def test_jit_shards_share_the_compile_jobs(self):
        from unittest import mock

        import peers
        self.assertEqual(peers.compile_jobs({"MAX_JOBS": "16"}, 14), 1)
        self.assertEqual(peers.compile_jobs({"MAX_JOBS": "16"}, 3), 5)
        self.assertEqual(peers.compile_jobs({"MAX_JOBS": "16"}, 1), 16)
        with mock.patch.object(peers.os, "cpu_count", return_value=16):
            self.assertEqual(peers.compile_jobs({}, 2), 8)
        launched = []
        fake = mock.MagicMock()
        fake.wait.return_value = 0
        with tempfile.TemporaryDirectory() as d, mock.patch.object(peers, "generate"), \
                mock.patch.object(peers.subprocess, "Popen", side_effect=lambda c, env, **kw: launched.append(env)
                                  or fake):
            peers.run({"MAX_JOBS": "16"}, d, kernels=["flashinfer-prefill"], suites=["smoke"], shards=4)
            peers.run({"MAX_JOBS": "16"}, d, kernels=["sdpa"], suites=["smoke"], shards=4)
        self.assertEqual([e["MAX_JOBS"] for e in launched], ["4"] * 4 + ["16"])  # SDPA compiles nothing: unchanged

    def test_every_adapter_exists_and_every_suite_it_lists_is_run(self):
        import peers
        for kernel, (adapter, suites) in peers.KERNELS.items():
            path = os.path.join(peers.HERE, adapter)
            self.assertTrue(os.path.isfile(path), f"{kernel}: {adapter}")
            self.assertIn("@pytest.mark.flashsim(", run.read(path), f"{kernel}: {adapter} has no flashsim marker")
            # run() walks SUITE_ORDER: a suite missing there would never run, silently
            self.assertEqual([s for s in suites if s not in peers.SUITE_ORDER], [], kernel)
        self.assertLessEqual(peers.JIT_PER_VARIANT | peers.COMPILED, set(peers.KERNELS))

    def test_resume_skips_the_recorded_cases(self):
        import re

        import peers
        with tempfile.TemporaryDirectory() as d:
            rec = os.path.join(d, "r.jsonl")
            with open(rec, "w") as f:
                for kernel, suite, case in (("flashinfer-prefill", "default", "a-1"), ("sdpa-flash", "smoke", "b"),
                                            ("flashinfer-prefill", "default", "a.1"), ("flashinfer", "decode", "c")):
                    f.write(json.dumps({"kernel": kernel, "suite": suite, "case": case}) + "\n")
            done = peers.recorded([rec])
        self.assertEqual(done[("flashinfer-prefill", "default")], {"a-1", "a.1"})
        self.assertEqual(done[("sdpa", "smoke")], {"b"})  # a parametrized adapter's record
        self.assertEqual(done[("flashinfer", "decode")], {"c"})
        self.assertNotIn(("flashinfer", "default"), done)  # flashinfer-prefill's records are not flashinfer's
        regex = peers.case_filter_regex(None, done[("flashinfer-prefill", "default")])
        kept = [n for n in ("a-1", "a.1", "a-10", "ax1", "b") if re.search(regex, n)]
        self.assertEqual(kept, ["a-10", "ax1", "b"])  # exact names only ("." is not a wildcard)
        regex = peers.case_filter_regex("^a", {"a-1"})
        self.assertEqual([n for n in ("a-1", "a-2", "b-2") if re.search(regex, n)], ["a-2"])
        self.assertIsNone(peers.case_filter_regex(None, set()))
        self.assertEqual(run.main(["peers", "--resume", os.path.join(d, "gone.jsonl")]), 2)
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as bad:
            bad.write("not json\n")
            bad.flush()
            self.assertEqual(run.main(["peers", "--resume", bad.name]), 2)
        self.assertEqual(run.main(["peers", "--shards", "0"]), 2)

    def test_a_run_that_left_no_record_says_so(self):
        import peers
        from unittest import mock
        with tempfile.TemporaryDirectory() as d, redirect_stdout(io.StringIO()) as out, \
                mock.patch.object(run, "python_env", return_value={}), mock.patch.object(peers, "run") as ran:
            rc = run.main(["peers", "--out", d, "--kernels", "flash-attn-4"])  # every adapter skipped at import
        self.assertEqual((rc, ran.call_count), (1, 1))
        self.assertIn("no case records", out.getvalue())  # not a traceback from the table


class DecodeTable(unittest.TestCase):
    def test_peers_beside_each_cell(self):
        ours = ("# device copy bandwidth (read + write of a 2 GiB cudaMemcpy): 3000.0 GB/s\n"
                "kernel,batch,cache_len,page_size,num_splits,chosen,ms,predicted_ms,kv_bytes,kv_GBps,share_of_copy\n"
                "decode-v2,8,1024,16,1,0,0.0500,0.0450,33554432,671.1,0.22\n"
                "decode-v2,8,1024,16,4,1,0.0400,0.0380,33554432,838.9,0.28\n"
                "decode-v2,8,1024,256,4,1,0.0300,0.0380,33554432,1118.5,0.37\n")
        peers = ("backend,batch,cache_len,ms,kv_GBps\nsdpa-flash,8,1024,0.0700,479.3\nsdpa-cudnn,8,1024,,,\"refused\"\n"
                 "flashinfer-p16,8,1024,0.0600,559.2\nflashinfer-p256,8,1024,0.0550,610.1\n")
        with tempfile.TemporaryDirectory() as d:
            lines = tables.decode_table([write(d, "v2.csv", ours)], write(d, "sdpa.csv", peers))
        self.assertTrue(lines[2].endswith("| SDPA flash ms | SDPA cuDNN ms | FlashInfer ms |"))
        # each row's FlashInfer time is at its own page size; a refused backend reads "-"
        self.assertTrue(lines[4].startswith("| 8 | 1024 | 16 | 4 | 0.0400 |") and lines[4].endswith("| 0.07 | - | 0.06 |"))
        self.assertTrue(lines[5].startswith("| 8 | 1024 | 256 | 4 | 0.0300 |") and lines[5].endswith("| 0.055 |"))
        self.assertIn("decode-v2: prediction within 10% in 1 of 2 cells; the model's split count within 5% of the "
                      "measured best in 2 of 2", lines)
        # a later model's predictions (sim tune --json) replace the recorded ones and pick among the measured counts
        model = {"entries": [
            {"batch": 8, "cache_len": 1024, "page_size": 16, "splits": [
                {"num_splits": 1, "time_us": 48.0, "fits": True}, {"num_splits": 4, "time_us": 60.0, "fits": True},
                {"num_splits": 8, "time_us": 10.0, "fits": False}]},  # not fitting: never picked
            {"batch": 8, "cache_len": 1024, "page_size": 256, "splits": [{"num_splits": 4, "time_us": 30.0,
                                                                           "fits": True}]}]}
        with tempfile.TemporaryDirectory() as d:
            lines = tables.decode_table([write(d, "v2.csv", ours)], None, write(d, "m.json", json.dumps(model)))
            with redirect_stderr(io.StringIO()) as err:  # a missing file or a JSON of another shape: exit 2
                self.assertEqual(run.main(["table", "decode", os.path.join(d, "none.csv")]), 2)
                self.assertEqual(run.main(["table", "decode", os.path.join(d, "v2.csv"), "--model",
                                           write(d, "other.json", "{}")]), 2)
            self.assertEqual(err.getvalue().count("\n"), 2)
        self.assertTrue(lines[4].startswith("| 8 | 1024 | 16 | 1 | 0.0500 |") and "| 0.0480 | 1.04 | 4 |" in lines[4])
        self.assertIn("decode-v2: prediction within 10% in 2 of 2 cells; the model's split count within 5% of the "
                      "measured best in 1 of 2", lines)
        # the model's own pick (best_splits: sim::pick_splits) where the JSON names it, even if not the fastest row
        model["entries"][0]["best_splits"] = 4
        with tempfile.TemporaryDirectory() as d:
            lines = tables.decode_table([write(d, "v2.csv", ours)], None, write(d, "m.json", json.dumps(model)))
        self.assertTrue(lines[4].startswith("| 8 | 1024 | 16 | 4 | 0.0400 |"), lines[4])


def calibration_results(calibration_id):
    """The results folder bench/calibration.json names for a calibration id."""
    with open(os.path.join(SRC, "bench/calibration.json")) as f:
        return os.path.join(SRC, json.load(f)["constants"][calibration_id]["results"])


class SparseTable(unittest.TestCase):
    # calibration fa2.block_sparse_h100: its run at the launch tiles
    RUN3 = os.path.join(calibration_results("fa2.block_sparse_h100"), "run3_launch_tiles")

    def test_the_model_follows_the_recorded_block_sparse_times(self):
        # fa2-v1 on the H100 at 1, 1/2, 1/4, 1/8 of a random block mask's tiles (and without one), d64 / d128,
        # causal and not, recorded 2026-11-27: the kernels' own models (fwd_fa2_v1, bwd_dq_dk_dv_group) with the
        # mask's steps listed predict each pass within 15% (issue 30). The calibration (fa2.step_costs_h100) has
        # no block mask and no 8K problem.
        csvs = sorted(glob.glob(os.path.join(self.RUN3, "sparse_bench*.csv")))
        lines = tables.sparse_table(csvs, FLASHSIM)
        self.assertEqual(len(lines), 2 + 15)
        ratios = [float(x) for line in lines[2:] for x in (line.split("|")[5], line.split("|")[8])]
        self.assertEqual(len(ratios), 30)
        self.assertTrue(all(0.85 <= r <= 1.15 for r in ratios), lines)

    def test_recorded_predictions_without_a_build(self):
        lines = tables.sparse_table(sorted(glob.glob(os.path.join(self.RUN3, "sparse_bench1.csv"))))
        self.assertIn("| b2 h16 q8192 k8192 d128 causal bf16 | random:keep=0.5 | 0.976 | 0.944 | 0.967 | 4.15 | "
                      "2.55 | 0.614 |", lines)  # the FA2 models' backward the CSV recorded
        self.assertEqual(run.main(["table", "sparse", os.path.join(SRC, "README.md")]), 2)
        csv0 = os.path.join(self.RUN3, "sparse_bench0.csv")
        self.assertEqual(run.main(["table", "sparse", csv0, "--flashsim", os.path.join(SRC, "no/flashsim")]), 2)
        self.assertEqual(tables.version_models(FLASHSIM, "fa2-v1"),
                         (["fwd_fa2_v1"], ["bwd_dot_do_o_lse", "bwd_dq_dk_dv_group", "bwd_convert_dq_rows"]))
        with self.assertRaises(KeyError):  # the CPU stand-in names no models
            tables.version_models(FLASHSIM, "host-emulated-v1")


class Fa3ModelTable(unittest.TestCase):
    # calibration fa3.step_costs_spread_h200: the H200's forward tile costs from calib-spread's shapes
    RESULTS = calibration_results("fa3.step_costs_spread_h200")

    def test_the_h200_forward_follows_its_recorded_bench_times(self):
        # fa3-v1's forward on the H200's recorded bench grid, short causal rows and d256 rows (2026-11-28/29, events),
        # none a calibration shape: within 15% with the H200's own tile costs, where the H100's one-K/V-head costs
        # gave 0.73x .. 0.83x on the d256 short causal ones. The backward keeps its component estimate at d256.
        mask, split = calibration_results("fa3.mask_cost_h200"), calibration_results("fa3.bwd_split_h200")
        bench = [os.path.join(mask, "bench/bench_ours_grid.csv"), os.path.join(mask, "bench/bench_ours_short.csv"),
                 os.path.join(split, "bench/bench_ours.csv")]
        lines = tables.fa3_model_table(bench, FLASHSIM, "H200")
        fwd = [float(line.split()[9]) for line in lines[1:-2]]
        self.assertEqual(len(fwd), 22)
        self.assertTrue(all(0.85 <= r <= 1.15 for r in fwd), lines)
        self.assertTrue(lines[-2].startswith("fwd: 22 problems") and lines[-1].startswith("bwd: 22 problems"), lines)
        held_out = tables.fa3_model_table([os.path.join(self.RESULTS, "heldout_fwd.txt")], FLASHSIM, "H200")
        self.assertEqual(len(held_out), 1 + 11 + 1)  # the d256 forward alone, no backward column
        self.assertEqual(run.main(["table", "fa3-model", os.path.join(SRC, "README.md")]), 2)
        with redirect_stderr(io.StringIO()) as err:  # a folder without the records, a profile that is none: exit 2
            self.assertEqual(run.main(["derive", "fa3-steps", FLASHSIM, os.path.join(SRC, "no", "such")]), 2)
            self.assertEqual(run.main(["derive", "fa3-steps", FLASHSIM, self.RESULTS, "--hw", "H999"]), 2)
        self.assertEqual(err.getvalue().count("\n"), 2)

    def test_calib_rounds_take_each_shapes_median(self):
        # fa3_dev calib in rounds: a line a shape each round; a shape's tile cost is (median - latency) / 8
        latency = derive.fa3_profile_latency("H200")
        times = {128: [0.0400, 0.0460, 0.0420], 256: [0.0700, 0.0710, 0.0650]}  # ms, three rounds each
        with tempfile.TemporaryDirectory() as tmp:
            lines = [f"time b1 h264 hkv1 sq512 sk{sk} d128 full persistent1 pingpong1 Br128 Bc128 st2: {t:.4f} ms "
                     f"100.0 TFLOP/s" for r in range(3) for sk, ts in times.items() for t in [ts[r]]]
            write(tmp, "calib_events.txt", "\n".join(lines) + "\n")
            os.makedirs(os.path.join(tmp, "bwd_ncu"))
            with redirect_stdout(io.StringIO()):
                entries = derive.fa3_steps(tmp, "H200", only="fwd_fa3")
        self.assertEqual(len(entries), 1)
        e = entries[0]
        self.assertEqual((e["head_dim"], e["block_k"], e["stages"], e["persistent"]), (128, 128, 2, True))
        want = [[1, float(f"{(0.0420e-3 - latency) / 8:.4g}")], [2, float(f"{(0.0700e-3 - latency) / 8:.4g}")]]
        self.assertEqual(e["tile_s_by_steps"], want)

    def test_decode_load_lines_give_the_step_and_the_ctas_fixed_time(self):
        # the load probe's CSV made up: a CTA of n tiles takes fixed + n step, w CTAs a slot one after another
        # (528 sequences over 264 slots: two), after the launch's latency; derive recovers step and fixed
        latency = derive.fa3_profile_latency("H200")
        truth = {1: (2.0e-6, 4.0e-6), 264: (2.5e-6, 9.0e-6), 528: (2.5e-6, 9.0e-6)}
        header = "kernel,batch,cache_len,page_size,num_splits,chosen,ms,predicted_ms,kv_bytes,kv_GBps,share_of_copy"
        rows = []
        for batch, (step, fixed) in truth.items():
            waves = -(-batch // 264)
            for n in (128, 1000, 4096):  # 2, 16 (a partial tile: 16 tiles), 64 tiles
                tiles = -(-n // 64)
                ms = (latency + waves * (fixed + tiles * step)) * 1e3
                rows.append(f"decode-v2,{batch},{n},16,1,1,{ms:.6f},0,0,0,0")
                rows.append(f"decode-v2,{batch},{n},16,2,0,{2 * ms:.6f},0,0,0,0")  # another split count: ignored
        with tempfile.TemporaryDirectory() as tmp:
            write(tmp, "decode_bench_decode-v2.csv", "# device copy bandwidth: 4000 GB/s\n" + header + "\n" +
                  "\n".join(rows) + "\n")
            with redirect_stdout(io.StringIO()):
                out = derive.decode_load(tmp, "H200", 128, FLASHSIM)
        self.assertEqual(list(out), ["decode-v2"])
        (load,) = out["decode-v2"]["load"]
        self.assertEqual(load["page_size"], 16)
        self.assertEqual([p[0] for p in load["points"]], [1, 264])  # 528 folds into 264's point
        for (ctas, step, fixed), want in zip(load["points"], (truth[1], truth[264])):
            self.assertAlmostEqual(step, want[0], delta=1e-10)
            self.assertAlmostEqual(fixed, want[1], delta=1e-9)
        with tempfile.TemporaryDirectory() as empty, redirect_stderr(io.StringIO()) as err:  # no CSVs: exit 2
            self.assertEqual(run.main(["derive", "decode-load", FLASHSIM, empty, "--hw", "H200"]), 2)
        self.assertIn("no decode_bench_decode-v1.csv", err.getvalue())

    def test_the_h200_profile_holds_what_the_recorded_probe_derives(self):
        # the profile's decode load points are derive's output of the recorded probe, not numbers typed in
        results = calibration_results("decode.load_h200")
        with open(os.path.join(SRC, "tiling_sim/profiles/H200.json")) as f:
            steps = json.load(f)["measured_steps"]
        for d, folder in ((128, results), (64, os.path.join(results, "d64")), (256, os.path.join(results, "d256"))):
            with redirect_stdout(io.StringIO()):
                out = derive.decode_load(folder, "H200", d, FLASHSIM)
            self.assertEqual(len(out), 2, d)
            for version, entry in out.items():
                held = [e for e in steps if e.get("load") and e["head_dim"] == d and e["block_q"] == entry["block_q"]]
                self.assertEqual(len(held), 1, (d, version))
                self.assertEqual(held[0]["load"], entry["load"], (d, version))
                if d != 128:  # a tile the H200 measured first here: the lone CTA's line too
                    self.assertEqual(held[0]["tile_s_by_steps"], entry["tile_s_by_steps"], (d, version))

    def test_the_l2_adverse_capacities_are_what_the_recorded_runs_derive(self):
        # each profile's l2_adverse_reuse_bytes is derive's output of its recorded probes (and, on the H200, of the
        # causal forwards measured there), not a number typed in
        for hw, cid in (("H100-SXM5-80GB", "h100.l2_adverse_reuse_bytes"), ("H200", "h200.l2")):
            out = io.StringIO()
            with redirect_stdout(out):
                derive.l2_adverse(FLASHSIM, calibration_results(cid), hw)
            derived = int(out.getvalue().rsplit("l2_adverse_reuse_bytes = ", 1)[1].split()[0])
            shown = json.loads(subprocess.run([FLASHSIM, "hw", "show", hw], capture_output=True, text=True,
                                              check=True).stdout)
            self.assertEqual(derived, shown["l2_adverse_reuse_bytes"], hw)

    def test_dram_coverage_card_refuses_bad_input_in_one_line(self):
        with redirect_stderr(io.StringIO()) as err:
            self.assertEqual(run.main(["derive", "dram-coverage-card", FLASHSIM]), 2)  # no results folder
            with tempfile.TemporaryDirectory() as empty, self.assertRaises(SystemExit) as ex:
                run.main(["derive", "dram-coverage-card", FLASHSIM, empty, "--hw", "H200"])
            self.assertEqual(ex.exception.code, 2)
            with self.assertRaises(SystemExit) as ex:  # a profile flashsim does not know
                run.main(["derive", "dram-coverage-card", FLASHSIM, calibration_results("h200.l2"), "--hw", "NOPE"])
            self.assertEqual(ex.exception.code, 2)
        lines = err.getvalue().strip().splitlines()
        self.assertEqual(len(lines), 3, lines)
        self.assertIn("no sdpa_dram/SET/ncu_dram_csvs.tar.gz", lines[1])
        self.assertIn("unknown hardware profile 'NOPE'", lines[2])

    def test_decode_load_entries_merge_into_a_profile_file(self):
        # an entry of a held key takes the new load alone; a new key is appended whole; one entry a line stays
        with open(os.path.join(SRC, "tiling_sim/profiles/H200.json")) as f:
            text = f.read()
        held = json.loads(text)["measured_steps"]
        first = dict(held[0], load=[{"page_size": 16, "points": [[1, 1e-6, 2e-6]]}], tile_s_by_steps=[[1, 9.0], [2, 9.0]])
        new = dict(held[0], head_dim=96, load=[{"page_size": 16, "points": [[1, 1e-6, 2e-6]]}])
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "p.json")
            write(tmp, "p.json", text)
            derive.write_measured_steps("H200", [first, new], path)
            with open(path) as f:
                after_text = f.read()
        after = json.loads(after_text)["measured_steps"]
        self.assertEqual(len(after), len(held) + 1)
        self.assertEqual(after[0]["load"], first["load"])
        self.assertEqual(after[0]["tile_s_by_steps"], held[0]["tile_s_by_steps"])  # only the load is replaced
        self.assertEqual(after[-1], new)
        self.assertEqual(after[1:-1], held[1:])
        self.assertEqual(after_text.count("\n"), text.count("\n") + 1)

    def test_decode_registers_from_a_ptxas_log(self):
        # ptxas -v's lines (demangled names): each split kernel's registers, fp16 and bf16 folded into the larger
        sys.path.insert(0, os.path.join(SRC, "gpu", "tools"))
        import decode_registers
        log = "\n".join([
            "ptxas info    : Compiling entry function 'decode_mma_split_kernel<__half, (int)64, (int)64>' for 'sm_90'",
            "ptxas info    : Used 109 registers, used 1 barriers",
            "ptxas info    : Compiling entry function 'decode_mma_split_kernel<__nv_bfloat16, 64, 64>' for 'sm_90'",
            "ptxas info    : Used 127 registers, used 1 barriers",
            "ptxas info    : Compiling entry function 'decode_split_kernel<float, 128, 64, 8>' for 'sm_90'",
            "ptxas info    : Used 156 registers",
            "ptxas info    : Compiling entry function 'decode_combine_kernel<float>' for 'sm_90'",
            "ptxas info    : Used 32 registers"])
        entries = decode_registers.parse(log)
        self.assertEqual(entries, [(False, 4, 128, 64, 8, 156), (True, 2, 64, 64, 16, 127)])
        text = decode_registers.header(entries, "CUDA 13.0")
        self.assertIn("{true, 2, 64, 64, 16, 127},", text)
        self.assertEqual(decode_registers.main([os.path.join(SRC, "no", "such")]), 2)


class CarryParts(unittest.TestCase):
    def test_split_and_join(self):
        import argparse
        import zipfile

        with tempfile.TemporaryDirectory() as d:
            wheel = os.path.join(d, "pkg-1.0-py3-none-any.whl")
            with zipfile.ZipFile(wheel, "w") as z:  # 2.5 MiB that do not compress: three parts of 1 MiB
                z.writestr("pkg/__init__.py", "X = 1\n")
                z.writestr("pkg/data/blob.bin", os.urandom(5 << 19))
                z.writestr("pkg/unused/big.bin", os.urandom(1 << 20))
            out, store, site = (os.path.join(d, n) for n in ("parts", "store", "site"))
            with redirect_stdout(io.StringIO()):
                carry_parts.split(argparse.Namespace(wheels=[wheel], out=out, part_mb=1, drop=["pkg/unused/*"],
                                                     lzma=False))
                self.assertEqual(sorted(os.listdir(out)), ["p1", "p2", "p3"])
                join = lambda p: carry_parts.join(argparse.Namespace(folder=os.path.join(out, p), store=store,  # noqa
                                                                     target=site))
                self.assertEqual([join("p1"), join("p3")], [3, 3])  # parts still missing: nothing unpacked
                self.assertFalse(os.path.exists(site))
                self.assertEqual(join("p2"), 0)
            self.assertEqual(run.read(os.path.join(site, "pkg", "__init__.py")), "X = 1\n")
            self.assertEqual(os.path.getsize(os.path.join(site, "pkg", "data", "blob.bin")), 5 << 19)
            self.assertFalse(os.path.exists(os.path.join(site, "pkg", "unused")))  # dropped by the glob
            part = os.path.join(store, "pkg-1.0-py3-none-any.whl.02")
            with open(part, "r+b") as f:  # a damaged part: refused by its sha256
                f.write(b"\0" * 16)
            with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
                self.assertEqual(carry_parts.join(argparse.Namespace(folder=os.path.join(out, "p1"), store=store,
                                                                     target=site)), 1)
            # a file that is no wheel: one line, exit 2, the earlier parts left as they were
            bad = write(d, "bad.whl", "not a zip")
            res = subprocess.run([sys.executable, os.path.join(DRIVER, "carry_parts.py"), "split", bad, "--out", out],
                                 capture_output=True, text=True)
            self.assertEqual((res.returncode, res.stderr.count("\n")), (2, 1))
            self.assertEqual(sorted(os.listdir(out)), ["p1", "p2", "p3"])

    def test_lzma_parts_unpack_to_the_same_files(self):
        import argparse
        import zipfile

        with tempfile.TemporaryDirectory() as d:
            wheel = os.path.join(d, "pkg-1.0-py3-none-any.whl")
            text = "".join(f"line {i} of a library that compresses\n" for i in range(200000))
            with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr("pkg/lib.txt", text)
            out, store, site = (os.path.join(d, n) for n in ("parts", "store", "site"))
            with redirect_stdout(io.StringIO()):
                carry_parts.split(argparse.Namespace(wheels=[wheel], out=out, part_mb=30, drop=[], lzma=True))
                self.assertEqual(carry_parts.join(argparse.Namespace(folder=os.path.join(out, "p1"), store=store,
                                                                     target=site)), 0)
            part = os.path.join(out, "p1", "pkg-1.0-py3-none-any.whl.01")
            self.assertEqual(zipfile.ZipFile(part).getinfo("pkg/lib.txt").compress_type, zipfile.ZIP_LZMA)
            self.assertLess(os.path.getsize(part), os.path.getsize(wheel))  # LZMA beats the wheel's deflate here
            self.assertEqual(run.read(os.path.join(site, "pkg", "lib.txt")), text)


class Bundle(unittest.TestCase):
    def test_parse_ldd(self):
        text = ("\tlinux-vdso.so.1 (0x7ff)\n\tlibopenblas.so.0 => /lib/x86_64-linux-gnu/libopenblas.so.0 (0x7f)\n"
                "\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x7f)\n\t/lib64/ld-linux-x86-64.so.2 (0x7f)\n")
        self.assertEqual(bundle.parse_ldd(text), [("libopenblas.so.0", "/lib/x86_64-linux-gnu/libopenblas.so.0"),
                                                  ("libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6")])

    def test_pack_and_unpack(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "b")
            files = bundle.pack(os.path.dirname(FLASHSIM), out, binaries=(os.path.basename(FLASHSIM),), strip=False,
                                xz_level=0)
            self.assertEqual(files, sorted([os.path.basename(FLASHSIM), "lib.tar.xz"]))
            with tarfile.open(os.path.join(out, "lib.tar.xz")) as t:
                libs = [os.path.basename(n) for n in t.getnames() if n != "lib"]
            self.assertTrue(libs)
            self.assertFalse([n for n in libs if n.startswith(bundle.SYSTEM_LIBS)])
            env = bundle.unpack(out)
            self.assertTrue(env["LD_LIBRARY_PATH"].startswith(os.path.abspath(os.path.join(out, "lib")) + ":"))
            self.assertEqual(sorted(os.listdir(os.path.join(out, "lib"))), sorted(libs))
            res = subprocess.run([os.path.join(out, os.path.basename(FLASHSIM)), "hw", "list"], env=env,
                                 capture_output=True, text=True)
            self.assertEqual(res.returncode, 0)
            self.assertIn("H100-SXM5-80GB", res.stdout)
            # a shell's way in: `eval "$(python3 bench/gpu/bundle.py env BUNDLE)"` runs the same binary
            script, binary = bundle.__file__, os.path.join(out, os.path.basename(FLASHSIM))
            res = subprocess.run(["bash", "-c", f'eval "$(python3 {script} env {out})" && {binary} hw list'],
                                 capture_output=True, text=True)
            self.assertEqual(res.returncode, 0, res.stderr)
            self.assertIn("H100-SXM5-80GB", res.stdout)
            res = subprocess.run([sys.executable, script, "env"], capture_output=True, text=True)
            self.assertEqual(res.returncode, 2)
            self.assertIn("usage: bundle.py env BUNDLE", res.stderr)
            res = subprocess.run([sys.executable, script, "env", os.path.join(tmp, "none")], capture_output=True,
                                 text=True)
            self.assertEqual((res.returncode, res.stdout, res.stderr.count("\n")), (2, "", 1))


class Compare(unittest.TestCase):
    def test_validation2_against_the_prediction(self):
        out = io.StringIO()
        with redirect_stdout(out):
            rc = run.main(["compare", "--set", "validation2", "--flashsim", FLASHSIM])
        text = out.getvalue()
        self.assertIn(rc, (0, 1))
        self.assertEqual(text.count("== "), 4)
        self.assertIn("tests/data/ncu/validation2/ncu_causal_d64_n8192.csv --ncu-dram "
                      "tests/data/ncu/single_pass/ncu_dram_causal_d64_n8192.csv", text)
        out = io.StringIO()
        with redirect_stdout(out):
            rc = run.main(["compare", "--set", "validation", "--json-summary", "--flashsim", FLASHSIM])
        text = out.getvalue()
        self.assertEqual(rc, 0)
        self.assertEqual(text.count("all within tolerance"), 5)
        self.assertIn("dram__bytes_read.sum", text)


class FwdMimic(unittest.TestCase):
    RESULTS = calibration_results("h200.fwd_mimic")

    def test_sdpa_reads_more_than_its_mimic_exactly_where_its_frame_is_376_bytes(self):
        # the counters run (calibration h200.spill_frame_reads): SDPA's d128 forwards read more DRAM than their
        # frameless mimics on the 376-byte instantiation, the same on the 136-byte one; the SM-side L2 reads agree
        results = calibration_results("h200.spill_frame_reads")
        with tempfile.TemporaryDirectory() as tmp:
            with tarfile.open(os.path.join(results, "counters_csvs.tar.gz")) as t:
                t.extractall(tmp)
            folder = os.path.join(tmp, "counters")
            seen = 0
            for (b, h, hkv, n, d), s, mm in fwd_mimic.pairs(folder):
                stack = sdpa_stack.stack_bytes(os.path.join(folder, f"sdpa_{b}_{h}_{hkv}_{n}_{d}.csv"))
                ratio = s["dram__bytes_read.sum"] / mm["dram__bytes_read.sum"]
                if d != 128:
                    continue
                seen += 1
                if stack == 376:
                    self.assertGreater(ratio, 1.08, (b, h, hkv, n))
                else:
                    self.assertEqual(stack, 136)
                    self.assertLess(ratio, 1.04, (b, h, hkv, n))
                sm = [x["lts__t_sectors_srcunit_tex_op_read.sum"] for x in (s, mm)]
                self.assertAlmostEqual(sm[0] / sm[1], 1, delta=0.005)
            self.assertEqual(seen, 6)
            with redirect_stdout(io.StringIO()) as out:
                self.assertEqual(fwd_mimic.counter_table(folder), 0)
            self.assertEqual(out.getvalue().count("SM->L2 read"), 7)

    def test_compulsory_reads_are_q_k_v_once(self):
        # b2 h4 (2 kv heads) n8 d16 bf16: Q 2*4*8*16*2 = 2048 bytes, K and V 2 * 2*2*8*16*2 = 2048
        self.assertEqual(fwd_mimic.compulsory_reads(2, 4, 2, 8, 16), 4096)

    def test_the_bound_is_the_smaller_and_the_plant_adds_half_the_kv_and_the_excess(self):
        # h 4 / hkv 2: K/V are half the compulsory 100; measured 120 adds 0.5 * (50 + 20) = 35
        bound, ok, flagged, flagged_by_l2, planted = fwd_mimic.mimic_verdict(120, 100, 500, 5, 110, 1.2, 4, 2)
        self.assertAlmostEqual(bound, 132)
        self.assertAlmostEqual(planted, 155)
        self.assertTrue(ok)
        self.assertTrue(flagged)  # 155 > 132 + 5
        self.assertFalse(flagged_by_l2)  # 155 < 500 + 5
        bound, ok, _, _, _ = fwd_mimic.mimic_verdict(140, 100, 130, 5, 110, 1.2, 4, 2)
        self.assertEqual(bound, 130)  # the L2's bound is the smaller
        self.assertFalse(ok)  # 140 > 135

    def test_no_problem_of_the_fit_sets_is_flagged_and_r_is_their_largest_ratio(self):
        with tempfile.TemporaryDirectory() as tmp:
            with tarfile.open(os.path.join(self.RESULTS, "run5_sets.tar.gz")) as t:
                t.extractall(tmp)
            fit = [os.path.join(tmp, "set1"), os.path.join(tmp, "set2")]
            ratios = []
            for folder in fit:
                for f in glob.glob(os.path.join(folder, "sdpa_*.csv")):
                    mimic = os.path.join(folder, "mimic_" + os.path.basename(f)[5:])
                    if os.path.exists(mimic) and os.path.getsize(f):
                        reads = [next(iter(ncu.read_metrics(x)[0].values()))["dram__bytes_read.sum"] for x in (f, mimic)]
                        ratios.append(reads[0] / reads[1])
            out = io.StringIO()
            with redirect_stdout(out):
                self.assertEqual(fwd_mimic.evaluate(FLASHSIM, "H200", fit, []), 0)
            text = out.getvalue()
            self.assertIn(f"r = {max(ratios):.3f}", text)
            self.assertEqual(len(ratios), 31)
            self.assertEqual(text.count(": ok;"), 31)  # r is the largest ratio: every fit problem inside
            self.assertNotIn("FLAGGED", text)

    def test_calibration_reads_the_probes_line_and_says_when_it_missed(self):
        with tempfile.TemporaryDirectory() as tmp:
            fake = write(tmp, "probe", "#!/bin/sh\necho spin 1234 us $2 target_us ${14} smem 1 sms 1 clock_khz 1\n")
            os.chmod(fake, 0o755)
            shape = [str(x) for x in (1, 2, 2, 64, 64, 64, 64, 4, 2, 1, 0, 0)]
            for took, missed in (("2000.0", False), ("2150.0", True)):  # the target 2 ms: 0% and 7.5% off
                shape[1] = took  # the fake prints its second argument as the time it took
                out = io.StringIO()
                with redirect_stdout(out):
                    spin = fwd_mimic.calibrate(fake, shape, {"gpu__time_duration.sum": 2e6})
                self.assertEqual(spin, 1234)
                self.assertEqual("missed the kernel's time" in out.getvalue(), missed, out.getvalue())
            failing = write(tmp, "failing", "#!/bin/sh\necho no shared-memory size fits >&2\nexit 1\n")
            os.chmod(failing, 0o755)
            with redirect_stdout(io.StringIO()) as out:
                self.assertIsNone(fwd_mimic.calibrate(failing, shape, {"gpu__time_duration.sum": 2e6}))
            self.assertIn("no shared-memory size fits", out.getvalue())

    def test_a_trace_reads_back_and_its_schedule_is_summarized(self):
        import array
        with tempfile.TemporaryDirectory() as tmp:
            # b1 h1 n256 d64, Br = Bc = 128: two CTAs (query blocks 0 and 1) of 1 and 2 tiles on SMs 5 and 7; block
            # 1 starts 50 ns after block 0, its one step between two tiles takes 150 ns; tile 0 is read at 100 ns
            # by block 0, at 300 by block 1
            words = array.array("I", [5, 1, 0, 100, 200, 7, 2, 50, 150, 300, 350])
            path = os.path.join(tmp, "trace.bin")
            with open(path, "wb") as f:
                f.write(b"fwd_mimic trace 1 1 1 256 64 128 128 2 2 0\n")
                f.write(words.tobytes())
            shape, ctas = fwd_mimic.read_trace(path)
            self.assertEqual(shape, (1, 1, 1, 256, 64, 128, 128, 2))
            self.assertEqual([(sm, tiles, list(t)) for sm, tiles, t in ctas],
                             [(5, 1, [0, 100, 200]), (7, 2, [50, 150, 300, 350])])
            with redirect_stdout(io.StringIO()) as out:
                self.assertEqual(fwd_mimic.schedule_summary(path), 0)
            text = out.getvalue()
            self.assertIn("2 CTAs on 2 SMs in 0.00 ms", text)
            self.assertIn("a K/V step 0.15 / 0.15 / 0.15 us", text)
            self.assertIn("0 CTAs started before the CTA launched ahead of them", text)
            self.assertIn("read tile 0 0.2 us apart (median)", text)
            with open(path, "ab") as f:  # a word too many: not a trace of these CTAs
                f.write(array.array("I", [9]).tobytes())
            with self.assertRaises(ValueError):
                fwd_mimic.read_trace(path)
            with redirect_stderr(io.StringIO()) as err:
                sys.argv = ["fwd_mimic.py", "schedule", path]
                self.assertEqual(fwd_mimic.main(), 2)
            self.assertIn("words left", err.getvalue())

    def test_bad_arguments_exit_2(self):
        with tempfile.TemporaryDirectory() as tmp:
            bad = (["fwd_mimic.py"], ["fwd_mimic.py", "--set", "9", "table", "x"], ["fwd_mimic.py", "evaluate", "a"],
                   ["fwd_mimic.py", "schedule", os.path.join(tmp, "none")],
                   ["fwd_mimic.py", "table", os.path.join(tmp, "none")],
                   ["fwd_mimic.py", "evaluate", FLASHSIM, "H200", os.path.join(tmp, "none"), "--", tmp],
                   ["fwd_mimic.py", "evaluate", os.path.join(tmp, "no-flashsim"), "H200", tmp, "--", tmp])
            for argv in bad:
                with redirect_stderr(io.StringIO()) as err:
                    sys.argv = list(argv)
                    self.assertEqual(fwd_mimic.main(), 2, argv)
                self.assertEqual(len(err.getvalue().strip().splitlines()), 1, err.getvalue())
            sys.argv = ["fwd_mimic.py", "evaluate", FLASHSIM, "NOPE", tmp, "--", tmp]
            with self.assertRaises(SystemExit) as ex:  # derive.show_profile: flashsim's line, exit 2
                with redirect_stderr(io.StringIO()):
                    fwd_mimic.main()
            self.assertEqual(ex.exception.code, 2)
        with tempfile.TemporaryDirectory() as empty, redirect_stderr(io.StringIO()), redirect_stdout(io.StringIO()):
            self.assertEqual(fwd_mimic.evaluate(FLASHSIM, "H200", [empty], []), 2)


class SdpaStack(unittest.TestCase):
    NAME = ("void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, 0, 0, bfloat16_t, Flash_kernel_traits<128, "
            "128, 64, 4, bfloat16_t>>, 0, 1, 0, 0, {}, 1, 0, 0>(Flash_fwd_params)")

    def test_names_map_to_the_table(self):
        frames = sdpa_stack.table()
        # cuobjdump's STACK of SDPA's d128 causal forward: 376 bytes when the lengths are not a tile multiple
        self.assertEqual(frames[sdpa_stack.key(self.NAME.format(0))], 376)
        self.assertEqual(frames[sdpa_stack.key(self.NAME.format(1))], 136)
        # the demangled spelling (true / false, cutlass::) gives the same key
        demangled = self.NAME.format(0).replace("bfloat16_t, Flash", "cutlass::bfloat16_t, Flash").replace(
            "0, 1, 0, 0, 0, 1, 0, 0>", "false, true, false, false, false, true, false, false>")
        self.assertEqual(sdpa_stack.key(demangled), sdpa_stack.key(self.NAME.format(0)))
        self.assertIsNone(sdpa_stack.key("void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128"))

    def test_the_table_is_cuobjdumps_recorded_output(self):
        # the rows of data/sdpa_flash_fwd_stack_sm90.txt, made again from the recorded cuobjdump output
        import gzip
        with gzip.open(os.path.join(calibration_results("h200.spill_frame_reads"), "stack.txt.gz"), "rt") as f:
            rows = sdpa_stack.from_cuobjdump(f.read())
        self.assertEqual({tuple(map(str, r[:15])): r[15] for r in rows}, sdpa_stack.table())
        self.assertEqual(len(rows), 272)
        # a flash forward's function line without its usage line: one line, exit 2
        with tempfile.TemporaryDirectory() as tmp:
            bad = os.path.join(tmp, "res_usage.txt")
            with open(bad, "w") as f:
                f.write(f"Function {self.NAME.format(0)}:\nFunction other:\n")
            with redirect_stderr(io.StringIO()) as err, redirect_stdout(io.StringIO()):
                self.assertEqual(sdpa_stack.main(["--from-cuobjdump", bad]), 2)
            self.assertEqual(len(err.getvalue().strip().splitlines()), 1, err.getvalue())

    def test_a_report_gives_its_forward_frame_or_none(self):
        with tempfile.TemporaryDirectory() as tmp:
            def report(names):
                path = os.path.join(tmp, "r.csv")
                with open(path, "w") as f:
                    f.write('"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n')
                    for i, name in enumerate(names):
                        f.write(f'"{i}","{name}","dram__bytes_read.sum","byte","1"\n')
                return path
            self.assertEqual(sdpa_stack.stack_bytes(report([self.NAME.format(0)])), 376)
            # SDPA's backward kernels beside it: the forward's frame
            self.assertEqual(sdpa_stack.stack_bytes(report([self.NAME.format(1), "void flash_bwd_dot_do_o_kernel<1>"])),
                             136)
            # another build's forward (seven flags), no forward, an unreadable report: none
            self.assertIsNone(sdpa_stack.stack_bytes(report([self.NAME.format(0).replace(", 0, 0>(", ", 0>(")])))
            self.assertIsNone(sdpa_stack.stack_bytes(report(["void flash_bwd_dot_do_o_kernel<1>"])))
            self.assertIsNone(sdpa_stack.stack_bytes(os.path.join(tmp, "missing.csv")))


class L2Partitioned(unittest.TestCase):
    def test_the_h200_has_its_fit_and_held_out_forwards(self):
        fit, check = derive.partitioned_sets("H200")
        # re-read sets 1 .. 8, the 16 recorded causal shapes (set 1's b2 h16/2 n13760 report is empty, and set 8's
        # b1 h8/4 n1216 ran SDPA's split-KV kernel: derive says so and leaves them out) and the 32 forwards of the
        # sequence-length sweep; sets 9 .. 17 held out
        self.assertEqual(len(fit), 8 * 16 + 16 + 32)
        self.assertEqual({label for label, _, _ in fit}, {f"set{n}" for n in range(1, 9)} |
                         {"first", "validation", "validation2", "validation3", "validation4", "sweep d128",
                          "sweep d256"})
        self.assertEqual({label for label, _, _ in check}, {f"set{n}" for n in range(9, 18)})
        self.assertEqual(len(check) % 16, 0)
        for _, report, _ in fit + check:
            self.assertTrue(os.path.exists(report), report)
        # the H100's forwards lack their kernels' stack frames
        for hw in ("H100-SXM5-80GB", "B200"):
            with self.assertRaises(ValueError):
                derive.partitioned_sets(hw)
        # a card without recorded forwards, or a profile of one L2 partition: one line, exit 2
        for hw in ("H100-SXM5-80GB", "A100-SXM4-80GB", "L4"):
            with redirect_stderr(io.StringIO()) as err:
                self.assertEqual(run.main(["derive", "l2-partitioned", FLASHSIM, "--hw", hw]), 2)
            self.assertEqual(len(err.getvalue().strip().splitlines()), 1, err.getvalue())

    def test_the_reuse_probe_curve_and_the_replacement_checks(self):
        # the H200's three probe runs: no miss while a buffer fits, nearly all at 96 MiB, growing between
        measured = derive.reuse_probe_measured(derive.L2_PROBE_RUNS["H200"])
        self.assertEqual(list(measured), [8, 16, 20, 24, 28, 32, 36, 40, 44, 48, 56, 64, 96])
        self.assertLess(measured[24], 0.01)
        self.assertGreater(measured[96], 0.95)
        values = list(measured.values())
        for a, b in zip(values, values[1:]):
            self.assertGreaterEqual(b, a - 0.005)  # the counters' noise near zero
        # the H100's one-pass run: its 50 MiB L2 loses re-reads sooner
        h100 = derive.reuse_probe_measured(derive.L2_PROBE_RUNS["H100-SXM5-80GB"])
        self.assertEqual(list(h100), list(measured))
        self.assertGreater(h100[40], measured[40])
        with self.assertRaises(ValueError):  # a launch list without reuse_read
            derive.reuse_probe_measured([(sorted(glob.glob(os.path.join(NCU, "*.csv")))[0], os.devnull)])
        # no recorded probe runs, or no recorded forwards: one line, exit 2
        with redirect_stderr(io.StringIO()), self.assertRaises(SystemExit) as exit_:  # argparse's usage error
            run.main(["derive", "l2-partitioned-check", FLASHSIM, "--capacity-mib", "-3"])
        self.assertEqual(exit_.exception.code, 2)
        for verb in (["l2-replacement", FLASHSIM, "--hw", "A100-SXM4-80GB"],
                     ["l2-partitioned-check", FLASHSIM, "--hw", "L4"]):
            with redirect_stderr(io.StringIO()) as err:
                self.assertEqual(run.main(["derive"] + verb), 2)
            self.assertEqual(len(err.getvalue().strip().splitlines()), 1, err.getvalue())

    def test_the_sweep_is_two_families_along_the_length(self):
        import reread_sweep
        problems = reread_sweep.sweep()
        self.assertEqual(len(problems), 32)
        self.assertEqual({p[:3] + p[4:] for p in problems}, {(4, 12, 1, 256, 1), (5, 12, 1, 128, 1)})
        self.assertTrue(all(8704 <= p[3] <= 16384 and p[3] % 512 == 0 for p in problems))
        with open(reread_sweep.OUT) as f:  # the committed list is the sweep
            self.assertEqual([tuple(int(x) for x in line.split()) for line in f if not line.startswith("#")],
                             problems)
        # its reports (the first run, tensors allocated apart), labelled by family; none in an empty folder
        forwards = derive.sweep_forwards(os.path.join(derive.L2_SWEEP_H200, "reread_sweep_csvs.tar.gz"))
        self.assertEqual([f[2] for f in forwards], [p[:5] for p in problems])
        self.assertEqual({f[0] for f in forwards}, {"sweep d128", "sweep d256"})
        with tempfile.TemporaryDirectory() as tmp:
            with self.assertRaises(ValueError):
                derive.sweep_forwards(tmp)
            with self.assertRaises(ValueError):  # a file that is no archive
                derive.sweep_forwards(write(tmp, "x.tar.gz", "not a tarball"))
        # the recorded runs side by side: the three runs of one layout agree within 3% (the README's repeatability),
        # while the same forward in one allocation reads up to half as much (its address effect)
        with redirect_stdout(io.StringIO()) as out:
            self.assertEqual(reread_sweep.table(reread_sweep.RESULTS), 0)
        rows = out.getvalue().splitlines()[1:]
        self.assertEqual(len(rows), 32)
        for row in rows:
            runs = [float(x) for x in row.split()[4:7] if x != "-"]
            self.assertLessEqual(max(runs) / min(runs), 1.03, row)
        self.assertGreaterEqual(max(float(row.split()[-1]) for row in rows), 2.0)
        with redirect_stderr(io.StringIO()):
            self.assertEqual(reread_sweep.table(tempfile.gettempdir()), 2)  # no archives there
        # measure's arguments: anything but --reverse, --lengths and --offset-bytes is a usage error
        for argv in (["measure", "OUT", "--bogus"], ["measure", "OUT", "--lengths", "1"], ["bogus"],
                     ["measure", "OUT", "--lengths", "a,b"], ["measure", "OUT", "--offset-bytes", "100"]):
            with redirect_stderr(io.StringIO()) as err, unittest.mock.patch.object(sys, "argv", ["x"] + argv):
                self.assertEqual(reread_sweep.main(), 2)
            self.assertIn("usage", err.getvalue())

    def test_the_capacity_at_which_the_model_reads_what_the_card_did(self):
        reads = {56: 400.0, 64: 200.0, 72: 100.0}  # halving every 8 MiB
        self.assertEqual(derive.card_capacity(200.0, reads), 64)
        self.assertAlmostEqual(derive.card_capacity(200.0 / 2 ** 0.5, reads), 68)  # exponential between
        self.assertEqual(derive.card_capacity(500.0, reads), 56)  # more than at the smallest: that one
        self.assertIsNone(derive.card_capacity(50.0, reads))  # less than at the largest: beyond the grid
        self.assertEqual(derive.card_capacity(100.0, {56: 100.0, 64: 100.0}), 56)  # flat: the first
        with redirect_stderr(io.StringIO()) as err:  # no recorded forwards with their frames: one line, exit 2
            self.assertEqual(run.main(["derive", "l2-capacity", FLASHSIM, "--hw", "L4"]), 2)
        self.assertEqual(len(err.getvalue().strip().splitlines()), 1, err.getvalue())

    def test_the_h200_profile_has_the_capacity_with_stack_frames(self):
        # 50 MiB with the kernels' stack frames walked, fitted on re-read sets 1 .. 8 and the sequence-length sweep
        # (56 MiB on sets 1 .. 8 was refuted by the sweep, 58 MiB on sets 1 .. 4 on blind set 7, 52 MiB without
        # frames on set 4); the H100's forwards lack their frames: its range is the LRU's
        for hw, capacity in (("H200", 50 << 20), ("H100-SXM5-80GB", 0)):
            profile = derive.show_profile(FLASHSIM, hw)
            self.assertEqual(profile["l2_partitions"], 2)
            self.assertEqual(profile["l2_partitioned_adverse_bytes"], capacity)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
