"""MLA cases from Python: the feature, no v / v_cache / v_new input (V is the first head_dim_v columns of k), no dv
output (dk is K's whole gradient), the NumPy kernel passing them and SDPA's kwargs refusing them."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import flashsim

EXAMPLES = Path(__file__).resolve().parents[2] / "golden" / "examples"
SPEC = {"name": "mla", "defaults": {"mla": True, "heads_q": 4, "head_dim": 40, "head_dim_v": 32, "causal": True},
        "cases": [{"name": "prefill", "batch": 2, "seqlen": 20, "dtype": "fp32"},
                  {"name": "decode", "seqlen_q": 1, "page_size": 8, "cache_seqlens": [5, 19], "dtype": "bf16"},
                  {"name": "plain", "mla": False, "heads_kv": 4, "seqlen": 20, "dtype": "fp32"}]}


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    spec = tmp_path_factory.mktemp("spec") / "mla.json"
    spec.write_text(json.dumps(SPEC))
    out = tmp_path_factory.mktemp("suite") / "mla"
    flashsim.golden.generate(str(spec), out, progress=False)
    return flashsim.golden.Suite(out)


def test_features_inputs_and_outputs(suite):
    prefill, decode, plain = (suite[n] for n in ("prefill", "decode", "plain"))
    assert {"mla", "backward", "head_dim_v"} <= prefill.features and "mla" not in plain.features
    assert {"mla", "kv_cache"} <= decode.features and "backward" not in decode.features
    assert "v" not in prefill.input_names and prefill.inputs("k").shape == (2, 20, 1, 40)
    assert prefill.output_names == ["o", "lse", "dq", "dk"] and prefill.expected("o").shape == (2, 20, 4, 32)
    assert not {"v_cache", "v_new"} & set(decode.input_names) and decode.inputs("k_cache").shape[-2:] == (1, 40)
    assert "dv" in plain.output_names
    with pytest.raises(ValueError):
        prefill.kwargs("sdpa")
    assert prefill.kwargs("sdpa", takes=["mla"]) == {"scale": pytest.approx(prefill.case_json["scale"]),
                                                     "enable_gqa": True, "is_causal": True}
    with pytest.raises(ValueError, match="kv_cache"):
        decode.kwargs("sdpa", takes=["mla"])  # the paged cache stays refused


def test_numpy_kernel_passes(suite):
    sys.path.insert(0, str(EXAMPLES))
    from numpy_attention import attention

    for name in ("prefill", "decode"):
        case = suite[name]
        t = {n: np.asarray(x, dtype=np.float32) if x.dtype.name == "bfloat16" else x for n, x in case.inputs().items()}
        case.verify(**attention(t, case.case_json))
