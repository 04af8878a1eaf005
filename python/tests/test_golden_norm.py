"""Norm cases from Python: a suite mixing attention and norm cases, Case.op / features / kwargs / tensors, verify
with a float32 NumPy norm and with a planted bug, and the plugin's ops= marker."""
import json
import textwrap

import numpy as np
import pytest

import flashsim

SPEC = {"name": "mixed", "defaults": {"seqlen": 24, "head_dim": 16, "dtype": "bf16"},
        "cases": [{"name": "attn", "heads_q": 2},
                  {"name": "rms-res", "op": "rmsnorm", "rows": 40, "hidden": 96, "residual": True},
                  {"name": "ln", "op": "layernorm", "rows": 33, "hidden": 130, "offset": 8, "zero_rows": 2}]}


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    spec = tmp_path_factory.mktemp("spec") / "mixed.json"
    spec.write_text(json.dumps(SPEC))
    out = tmp_path_factory.mktemp("suite") / "mixed"
    flashsim.golden.generate(str(spec), out, progress=False)
    return flashsim.golden.Suite(out)


def numpy_norm(case):
    """The norm in float32 from the formulas (NumPy's own summation order)."""
    c = case.case_json
    x, w, dy = (np.asarray(case.inputs(n), np.float32) for n in ("x", "weight", "dy"))
    h = x + np.asarray(case.inputs("residual"), np.float32) if c["residual"] else x
    ln = c["op"] == "layernorm"
    mean = h.mean(axis=1, dtype=np.float32) if ln else np.zeros(h.shape[0], np.float32)
    ms = ((h - mean[:, None]) ** 2).mean(axis=1, dtype=np.float32)  # var for LayerNorm, mean(h^2) for RMSNorm
    rstd = (1 / np.sqrt(ms + np.float32(c["eps"]))).astype(np.float32)
    xhat = (h - mean[:, None]) * rstd[:, None]
    out = {"y": xhat * w + (np.asarray(case.inputs("bias"), np.float32) if ln else 0), "rstd": rstd}
    g = dy * w
    c1 = (g * xhat).mean(axis=1, keepdims=True)
    c2 = g.mean(axis=1, keepdims=True) if ln else 0
    out["dx"] = rstd[:, None] * (g - xhat * c1 - c2)  # dh = rstd (g - xhat mean(g xhat) - mean(g))
    out["dweight"] = (dy * xhat).sum(axis=0)
    if ln:
        out.update(mean=mean, dbias=dy.sum(axis=0))
    if c["residual"]:
        out.update(h=h, dresidual=out["dx"])
    return out


def test_cases_know_their_op(mixed):
    assert [c.op for c in mixed] == ["attention", "rmsnorm", "layernorm"]
    assert mixed.manifest["cases"][1]["op"] == "rmsnorm" and "op" not in mixed.manifest["cases"][0]
    rms, ln = mixed["rms-res"], mixed["ln"]
    assert rms.output_names == ["y", "h", "rstd", "dx", "dweight", "dresidual"]
    assert ln.input_names == ["x", "weight", "bias", "dy"]
    assert {"rmsnorm", "residual", "bf16", "backward"} <= rms.features
    assert {"layernorm", "offset", "zero_rows"} <= ln.features
    assert rms.kwargs() == {"eps": 1e-5}
    assert not rms.has_feature("rows_without_keys")  # no lse to read: no keys
    assert rms.expected("rstd").shape == (40,) and ln.expected("dweight").shape == (130,)
    with pytest.raises(ValueError, match="no attention problem"):
        rms.problem


def test_numpy_norm_passes_and_a_dropped_residual_gradient_fails(mixed):
    for name in ("rms-res", "ln"):
        report = mixed[name].verify(**numpy_norm(mixed[name]), compute="bf16")
        assert report.passed, str(report)
    out = numpy_norm(mixed["rms-res"])
    out["dresidual"] = np.zeros_like(out["dresidual"])
    with pytest.raises(flashsim.golden.VerificationError, match="dresidual"):
        mixed["rms-res"].verify(**out)


def test_plugin_skips_cases_of_other_ops(pytester, mixed):
    pytester.makepyfile(textwrap.dedent('''
        import pytest

        def test_attention(flashsim_case):
            assert flashsim_case.op == "attention"

        @pytest.mark.flashsim(ops=["rmsnorm", "layernorm"])
        def test_norms(flashsim_case):
            assert flashsim_case.op in ("rmsnorm", "layernorm")
        '''))
    record = pytester.path / "record.jsonl"
    result = pytester.runpytest("--flashsim-suite", str(mixed.path), "-v", "-rs", "--flashsim-record", str(record))
    result.assert_outcomes(passed=3, skipped=3)
    result.stdout.fnmatch_lines(["*ln: op layernorm, the test checks attention*",
                                 "*attn: op attention, the test checks rmsnorm, layernorm*"])
    rows = [json.loads(line) for line in record.read_text().splitlines()]  # norm cases recorded too
    assert sorted((r["kernel"], r["case"], r["outcome"]) for r in rows) == [
        ("attention", "attn", "pass"), ("attention", "ln", "skip"), ("attention", "rms-res", "skip"),
        ("norms", "attn", "skip"), ("norms", "ln", "pass"), ("norms", "rms-res", "pass")]
