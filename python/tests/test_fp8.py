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


def test_an_fp8_output_is_verified_on_its_grid(suite):
    # cuDNN's FP8 attention returns o in e4m3 with its scale factor (o_fp8 = o x scale_o). Declared (an FP8 array
    # and output_scale), the exact o rounded to e4m3 passes at scales 1 and 64 and an o 20% off fails. On the bf16
    # case the same e4m3 values handed as float32 fail (bf16's floors); on an FP8 case they would pass anyway (its
    # P, rounded to FP8, already costs more than o's rounding). A scale for an output not in FP8 is refused.
    import ml_dtypes

    for name in ("head", "plain"):
        case = suite[name]
        exact, lse = case.expected("o", "lse")
        for scale in (1.0, 64.0):
            o8 = (exact * scale).astype(ml_dtypes.float8_e4m3fn)
            assert case.verify(o=o8, lse=lse, output_scale={"o": scale}).passed, (name, scale)
            assert case.last_report.json["cases"][0]["outputs"][0]["candidate_dtype"] == "F8_E4M3"
        off = (exact * 1.2 * 64).astype(ml_dtypes.float8_e4m3fn)
        assert not case.verify(o=off, lse=lse, output_scale={"o": 64}, raise_on_failure=False).passed, name
    plain = suite["plain"]
    exact, lse = plain.expected("o", "lse")
    as_float = (exact * 64).astype(ml_dtypes.float8_e4m3fn).astype(np.float32) / 64
    assert not plain.verify(o=as_float, lse=lse, raise_on_failure=False).passed
    with pytest.raises(ValueError, match="output_scale: o"):
        plain.verify(o=exact.astype(np.float32), lse=lse, output_scale={"o": 2})
