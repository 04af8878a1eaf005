"""flashsim.golden: suites, cases, verify reports; the pytest plugin over smoke with a NumPy kernel (passes)
and a buggy one (fails with the report)."""
import json
import textwrap

import numpy as np
import pytest

import flashsim
from conftest import EXAMPLES, SMOKE


def test_suite_lists_the_manifest_cases(smoke):
    manifest = json.loads((SMOKE / "manifest.json").read_text())
    assert smoke.names == [c["name"] for c in manifest["cases"]]
    assert len(smoke) == manifest["case_count"]
    assert [c.name for c in smoke.select("varlen")] == [n for n in smoke.names if "varlen" in n]
    with pytest.raises(ValueError, match="filter"):
        smoke.select("(")


def test_case_fields(smoke):
    case = smoke["bf16-gqa"]
    assert case.problem.heads_q % case.problem.heads_kv == 0 and case.problem.heads_q != case.problem.heads_kv
    assert {"gqa", "bf16", "backward"} <= case.features
    assert set(case.tolerances) >= {"bf16", "fp16", "fp32"}
    assert case.tolerances["bf16"]["o"]["factor"] == 2.0
    assert case.inputs("q").shape == tuple(case.problem.fields[k] for k in ("batch", "seqlen_q", "heads_q", "head_dim"))
    assert set(case.inputs()) == set(case.input_names)


def test_verify_reports_each_output(smoke):
    case = smoke["fp16-causal-odd"]
    o, lse = case.expected("o", "lse")
    report = case.verify(o=o.astype(np.float16), lse=lse.astype(np.float32))
    assert report.passed and set(report.outputs) == {"o", "lse"}
    assert report.outputs["o"].max_abs <= report.outputs["o"].bound_abs
    bad = o.astype(np.float16).copy()
    bad[0, 5, 1, 3] += 0.5
    with pytest.raises(flashsim.golden.VerificationError) as e:
        case.verify(o=bad, lse=lse)
    r = e.value.report
    assert not r.passed and not r.outputs["o"].passed and r.outputs["lse"].passed
    assert r.outputs["o"].worst_index == "[b0,s5,h1,d3]" and r.outputs["o"].mismatches == 1
    assert "SOME OUTPUTS FAILED" in str(e.value) and "[b0,s5,h1,d3]" in str(e.value)
    assert not case.verify(o=bad, raise_on_failure=False)
    with pytest.raises(ValueError, match="shape"):
        case.verify(o=o[0])


def test_a_builtin_suite_is_generated_once_into_the_cache(tmp_path, monkeypatch, smoke):
    monkeypatch.setenv("FLASHSIM_CACHE", str(tmp_path))
    suite = flashsim.golden.Suite("smoke", progress=False)
    assert suite.path.parent == tmp_path / "golden"
    mtime = (suite.path / "manifest.json").stat().st_mtime_ns
    again = flashsim.golden.Suite("smoke")
    assert again.path == suite.path and (again.path / "manifest.json").stat().st_mtime_ns == mtime
    # The same bytes as the command line writes.
    for c in suite:
        assert (suite.path / c.file.name).read_bytes() == (smoke.path / c.file.name).read_bytes()


def test_kwargs_for_flash_attention_and_sdpa(smoke):
    causal = smoke["fp16-causal-odd"]
    kw = causal.kwargs()
    assert kw["causal"] is True and kw["window_size"] == (-1, 0)
    assert kw["softmax_scale"] == pytest.approx(causal.problem.head_dim ** -0.5)
    assert causal.kwargs("sdpa")["is_causal"] is True
    shorter = smoke["bf16-causal-q-longer-than-k"]  # bottom-right causal: SDPA's is_causal is top-left
    sd = shorter.kwargs("sdpa")
    assert "is_causal" not in sd and sd["attn_mask"].dtype == bool and not sd["attn_mask"][0, 0, 0].any()
    with pytest.raises(ValueError, match="softcap"):
        smoke["bf16-softcap"].kwargs("sdpa")


PLUGIN_TEST = '''
import sys
import numpy as np
import pytest
sys.path.insert(0, {examples!r})
from numpy_attention import attention

def kernel(case, bug):
    t = {{n: np.asarray(x, dtype=np.float32) if x.dtype.name == "bfloat16" else x for n, x in case.inputs().items()}}
    out = attention(t, case.case_json)
    if bug:
        out["o"][..., 0] = 2 * out["o"][..., 0] + 1   # one head-dim column wrong
    return out

@pytest.mark.flashsim(unsupported=["kv_cache", "block_mask"])
def test_kernel(flashsim_case):
    out = kernel(flashsim_case, BUG)
    flashsim_case.verify(**out)
'''


@pytest.mark.parametrize("bug", [False, True])
def test_plugin_runs_a_kernel_over_smoke(pytester, bug):
    pytester.makepyfile(PLUGIN_TEST.format(examples=str(EXAMPLES)).replace("BUG", str(bug)))
    result = pytester.runpytest("-p", "no:cacheprovider", "--flashsim-suite", str(SMOKE), "-q")
    outcomes = result.parseoutcomes()
    names = flashsim.golden.Suite(SMOKE).names
    if not bug:
        assert outcomes.get("passed", 0) == len(names) and "failed" not in outcomes
    else:
        assert outcomes.get("failed", 0) == len(names)
        text = result.stdout.str()
        assert "VerificationError" in text and "SOME OUTPUTS FAILED" in text
        assert "test_kernel[fp32-basic]" in text


def test_plugin_filter_ids_and_skips(pytester):
    pytester.makepyfile(textwrap.dedent('''
        import pytest
        @pytest.mark.flashsim(unsupported=["varlen"])
        def test_ids(flashsim_case):
            assert flashsim_case.name
    '''))
    result = pytester.runpytest("--flashsim-suite", str(SMOKE), "--flashsim-filter", "varlen|gqa", "-v", "-rs")
    text = result.stdout.str()
    assert "test_ids[bf16-gqa] PASSED" in text
    assert "the kernel does not support varlen" in text
    outcomes = result.parseoutcomes()
    assert outcomes.get("skipped", 0) >= 1 and outcomes.get("passed", 0) >= 1
    bad = pytester.runpytest("--flashsim-suite", "no-such-suite")
    assert bad.ret != 0 and "no-such-suite" in bad.stderr.str() + bad.stdout.str()
