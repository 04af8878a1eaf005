"""PyTorch SDPA's four backends (flash, cuDNN, memory-efficient, math) on a golden suite, forward and backward;
an MLA case's v is k's first head_dim_v columns:
    pytest bench/gpu/peers/test_sdpa_backends.py --flashsim-suite default --flashsim-time 5"""
import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}


# SDPA takes no softcap, ALiBi, packed variable lengths, KV cache or FP8 inputs (Case.kwargs("sdpa"); block masks:
# its mask), no sink, and its dropout draws its own mask (test_sdpa_dropout.py gives the math backend the case's).
@pytest.mark.flashsim(kernel="sdpa", unsupported=["softcap", "alibi", "sinks", "dropout", "varlen", "kv_cache",
                                                  "fp8"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_sdpa(flashsim_case, backend):
    case, like = flashsim_case, torch.empty(0, device="cuda")
    mla, dv = case.has_feature("mla"), case.case_json.get("head_dim_v")
    leaves = dict(zip("qk", case.inputs("q", "k", like=like, layout="bhsd")))
    if not mla:  # MLA: v is k[..., :head_dim_v], dk K's whole gradient (V's part included)
        leaves["v"] = case.inputs("v", like=like, layout="bhsd")
    kwargs = case.kwargs("sdpa", like=like, takes=["mla"])

    def forward():
        with sdpa_kernel(BACKENDS[backend]):
            q, k = leaves["q"], leaves["k"]
            return F.scaled_dot_product_attention(q, k, k[..., :dv] if mla else leaves["v"], **kwargs)

    try:
        out = case.timed(case.with_grads(forward, leaves, case.inputs("do", like=like, layout="bhsd")))
    except RuntimeError as e:  # the backend has no kernel for the case: SDPA's own words
        if "No available kernel" not in str(e):
            raise
        pytest.skip(f"sdpa-{backend} has no kernel for {case.describe_features()}")
    case.verify(layout="bhsd", **out)  # SDPA returns no lse: o and the gradients are checked
