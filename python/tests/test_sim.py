"""flashsim.sim against `flashsim sim predict --json` and `sim sweep --json`: the same JSON."""
import json

import flashsim

from conftest import run_cli


def test_predict_equals_the_command_line():
    p = flashsim.Problem(batch=2, heads_q=8, heads_kv=2, seqlen=2048, head_dim=128, causal=True, dtype="bf16")
    got = flashsim.sim.predict(p, {"block_q": 128, "block_k": 64, "warps": 4, "stages": 2})
    cli = run_cli("sim", "predict", "--batch", "2", "--heads", "8", "--heads-kv", "2", "--seqlen", "2048",
                  "--head-dim", "128", "--causal", "--dtype", "bf16", "--block-q", "128", "--block-k", "64",
                  "--warps", "4", "--stages", "2", "--json")
    assert got == json.loads(cli.stdout)
    assert got["fits"] and got["kernels"][0]["time_s"] > 0


def test_paged_decode_predict_keeps_the_split_tile():
    p = flashsim.Problem(batch=4, heads_q=32, heads_kv=8, seqlen_q=1, head_dim=128, dtype="bf16", page_size=256,
                         cache_seqlens=[4096, 4096, 4096, 4096])
    got = flashsim.sim.predict(p, {"num_splits": 4}, pass_="fwd")
    cli = run_cli("sim", "predict", "--batch", "4", "--heads", "32", "--heads-kv", "8", "--seqlen-q", "1",
                  "--seqlen-k", "4096", "--head-dim", "128", "--dtype", "bf16", "--page-size", "256",
                  "--cache-seqlens", "4096", "--num-splits", "4", "--pass", "fwd", "--json")
    assert got == json.loads(cli.stdout)
    assert got["split_kv"]["num_splits"] == 4


def test_sweep_equals_the_command_line_as_dict_and_frame():
    p = flashsim.Problem(batch=1, heads_q=4, seqlen=1024, head_dim=64, dtype="fp16")
    got = flashsim.sim.sweep(p, top=5, frame=False)
    cli = run_cli("sim", "sweep", "--batch", "1", "--heads", "4", "--seqlen", "1024", "--head-dim", "64",
                  "--dtype", "fp16", "--top", "5", "--json")
    assert got == json.loads(cli.stdout)
    assert len(got["ranked"]) == 5
    try:
        import pandas  # noqa: F401
    except ImportError:
        return
    df = flashsim.sim.sweep(p, top=5)
    assert list(df["config"]) == [r["config"] for r in got["ranked"]] and df.attrs["legal"] == got["legal"]


def test_a_golden_case_is_a_problem():
    case = flashsim.golden.Suite(__import__("conftest").SMOKE)["bf16-gqa"]
    got = flashsim.sim.predict(case, pass_="fwd")
    assert got["problem"] == case.problem.description


def test_sweep_both_passes_ranks_each_on_its_own():
    p = flashsim.Problem(batch=1, heads_q=4, seqlen=512, head_dim=64, causal=True, dtype="bf16")
    both = flashsim.sim.sweep(p, pass_="both", top=3, frame=False)
    assert set(both) == {"fwd", "bwd"}
    assert both["fwd"] == flashsim.sim.sweep(p, pass_="fwd", top=3, frame=False)
    assert both["bwd"] == flashsim.sim.sweep(p, pass_="bwd", top=3, frame=False)
    assert all("bwd" not in row["config"] for row in both["fwd"]["ranked"])
