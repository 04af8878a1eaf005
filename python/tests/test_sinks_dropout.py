"""Attention sinks and dropout from Python: their case features (so kernels can declare them unsupported), the
sinks / dropout_keep inputs and the dsinks output, SDPA's kwargs refusing them unless the caller takes dropout,
FlexAttention's sink key and SDPA's math backend with the keep mask passing (torch), and check_keep_fraction's
false alarms and detection on a kernel's own RNG."""
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


def test_kwargs_takes_what_the_caller_carries(suite):
    sinks, dropout = suite["sinks"], suite["dropout"]
    kw = dropout.kwargs("sdpa", takes=["dropout"])
    assert kw["scale"] == pytest.approx(dropout.case_json["scale"]) and "enable_gqa" in kw
    assert dropout.kwargs("jax", takes=("dropout",))["scale"] == kw["scale"]
    with pytest.raises(ValueError, match="sinks"):
        sinks.kwargs("sdpa", takes=["dropout"])  # taking dropout lifts no other refusal
    with pytest.raises(ValueError, match="softcap"):
        dropout.kwargs("sdpa", takes=["softcap"])  # only dropout and mla can be carried by the caller
    with pytest.raises(ValueError, match="flex"):
        sinks.kwargs("sdpa", sinks=np.zeros(2, np.float32))


def _torch_or_skip():
    torch = pytest.importorskip("torch")
    pytest.importorskip("torch.nn.attention.flex_attention")
    return torch, torch.empty(0, device="cuda" if torch.cuda.is_available() else "cpu")


def test_flex_sink_key_passes_the_golden(suite):
    torch, like = _torch_or_skip()
    from torch.nn.attention.flex_attention import flex_attention

    case = suite["sinks"]
    q, k, v, do = (x.transpose(1, 2).float() for x in case.inputs("q", "k", "v", "do", like=like))
    q, k, v = (x.requires_grad_() for x in (q, k, v))
    sinks = case.inputs("sinks", like=like).requires_grad_()
    with pytest.raises(ValueError, match="sinks tensor"):
        case.kwargs("flex", like=like)  # a sinks case without the tensor the call differentiates
    kw = case.kwargs("flex", like=like, sinks=sinks)
    o, lse = flex_attention(q, *(torch.nn.functional.pad(x, (0, 0, 0, 1)) for x in (k, v)), return_lse=True, **kw)
    grads = torch.autograd.grad(o, (q, k, v, sinks), do.float())
    report = case.verify(o=o.transpose(1, 2), lse=lse, dsinks=grads[3],
                         **{n: g.transpose(1, 2) for n, g in zip(("dq", "dk", "dv"), grads)}, compute="fp32")
    assert report.passed
    no_sink = case.kwargs("flex", like=like, sinks=torch.full_like(sinks, -1e4))  # the sink's mass taken away
    o2, lse2 = flex_attention(q, *(torch.nn.functional.pad(x, (0, 0, 0, 1)) for x in (k, v)), return_lse=True,
                              **no_sink)
    assert not case.verify(o=o2.transpose(1, 2), lse=lse2, raise_on_failure=False, compute="fp32").passed


def test_sdpa_math_with_the_keep_mask_passes_the_golden(suite):
    torch, like = _torch_or_skip()
    case = suite["dropout"]
    q, k, v, do = (x.transpose(1, 2) for x in case.inputs("q", "k", "v", "do", like=like))
    q, k, v = (x.requires_grad_() for x in (q, k, v))
    kw = case.kwargs("sdpa", like=like, takes=["dropout"])
    p, keep = case.case_json["dropout_p"], case.inputs("dropout_keep", like=like).bool()
    o, _ = torch.ops.aten._scaled_dot_product_attention_math(q, k, v, kw.get("attn_mask"), p,
                                                             kw.get("is_causal", False), keep, scale=kw["scale"],
                                                             enable_gqa=kw["enable_gqa"])
    grads = torch.autograd.grad(o, (q, k, v), do)
    assert case.verify(o=o.transpose(1, 2), **{n: g.transpose(1, 2) for n, g in zip(("dq", "dk", "dv"), grads)}).passed
    o_unmasked, _ = torch.ops.aten._scaled_dot_product_attention_math(q, k, v, None, 0.0, False, None,
                                                                      scale=kw["scale"], enable_gqa=kw["enable_gqa"])
    assert not case.verify(o=o_unmasked.transpose(1, 2), raise_on_failure=False).passed  # dropout left out fails
