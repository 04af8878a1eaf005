"""FP8 cases from Python: their features (fp8, descale, the dtype name), the inputs as FP8 codes (uint8) with the
descale factors, forward-only outputs, flash_attn kwargs carrying FlashAttention-3's descales and SDPA's kwargs
refusing them."""
import json

import numpy as np
import pytest

import flashsim

SPEC = {"name": "f8", "defaults": {"seqlen": 24, "head_dim": 16, "heads_q": 4, "heads_kv": 2, "batch": 2},
        "cases": [{"name": "head", "dtype": "e4m3", "descale": "per-head"},
                  {"name": "tensor", "dtype": "e5m2", "descale": "per-tensor"},
                  {"name": "plain", "dtype": "bf16"}]}


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    spec = tmp_path_factory.mktemp("spec") / "f8.json"
    spec.write_text(json.dumps(SPEC))
    out = tmp_path_factory.mktemp("suite") / "f8"
    flashsim.golden.generate(str(spec), out, progress=False)
    return flashsim.golden.Suite(out)


def test_features_inputs_and_outputs(suite):
    head, tensor, plain = (suite[n] for n in ("head", "tensor", "plain"))
    assert {"fp8", "descale", "e4m3"} <= head.features and "backward" not in head.features
    assert {"fp8", "descale", "e5m2"} <= tensor.features
    assert not {"fp8", "descale"} & plain.features
    assert head.inputs("q").dtype == np.uint8 and head.inputs("q").shape == (2, 24, 4, 16)
    assert head.inputs("q_descale").shape == (2, 2) and tensor.inputs("q_descale").shape == (1,)
    assert head.output_names == ["o", "lse"] and "do" not in head.input_names
    for case in (head, tensor):
        kw = case.kwargs("flash_attn")
        assert all(kw[n].shape == (2, 2) and kw[n].dtype == np.float32
                   for n in ("q_descale", "k_descale", "v_descale"))
        with pytest.raises(ValueError):
            case.kwargs("sdpa")
