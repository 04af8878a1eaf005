"""Attention sinks and dropout from Python: their case features (so kernels can declare them unsupported), the
sinks / dropout_keep inputs and the dsinks output, SDPA's kwargs refusing them, and check_keep_fraction's false
alarms and detection on a kernel's own RNG."""
import json

import numpy as np
import pytest

import flashsim

SPEC = {"name": "sd", "defaults": {"seqlen": 24, "head_dim": 16, "heads_q": 2, "dtype": "bf16"},
        "cases": [{"name": "sinks", "sinks": True}, {"name": "dropout", "dropout_p": 0.3}, {"name": "plain"}]}


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    spec = tmp_path_factory.mktemp("spec") / "sd.json"
    spec.write_text(json.dumps(SPEC))
    out = tmp_path_factory.mktemp("suite") / "sd"
    flashsim.golden.generate(str(spec), out, progress=False)
    return flashsim.golden.Suite(out)


def test_features_inputs_and_outputs(suite):
    sinks, dropout, plain = (suite[n] for n in ("sinks", "dropout", "plain"))
    assert "sinks" in sinks.features and "dropout" not in sinks.features
    assert "dropout" in dropout.features and "sinks" not in dropout.features
    assert not {"sinks", "dropout"} & plain.features
    assert sinks.inputs("sinks").shape == (2,) and "dsinks" in sinks.output_names
    keep = dropout.inputs("dropout_keep")
    assert keep.shape == (1, 2, 24, 24) and keep.dtype in (np.bool_, np.uint8)
    for case in (sinks, dropout):
        with pytest.raises(ValueError):
            case.kwargs("sdpa")


def test_keep_fraction_false_alarm_and_detection():
    rng = np.random.default_rng(0)
    fails = sum(not flashsim.golden.check_keep_fraction(rng.random(20000) >= 0.2, 0.2, 0.05).ok
                for _ in range(400))
    assert fails <= 35  # Binomial(400, <= 0.05): mean <= 20
    bad = flashsim.golden.check_keep_fraction(rng.random(10**6) >= 0.21, 0.2, 1e-6)
    assert not bad.ok and bad.z_score < -20 and bad.method == "normal"
    with pytest.raises(ValueError):
        flashsim.golden.check_keep_fraction(np.ones(10), 1.0)
