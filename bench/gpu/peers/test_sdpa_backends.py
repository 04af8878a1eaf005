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
    like = torch.empty(0, device="cuda")
    mla = flashsim_case.has_feature("mla")
    q, k, do = (x.transpose(1, 2) for x in flashsim_case.inputs("q", "k", "do", like=like))  # BHSD views
    q, k = q.requires_grad_(), k.requires_grad_()
    v = k[..., :flashsim_case.case_json["head_dim_v"]] if mla else \
        flashsim_case.inputs("v", like=like).transpose(1, 2).requires_grad_()
    leaves = (q, k) if mla else (q, k, v)  # MLA: dk is K's whole gradient, V's part included
    kwargs = flashsim_case.kwargs("sdpa", like=like, takes=["mla"])
    backward = "dq" in flashsim_case.output_names

    def call():
        with sdpa_kernel(BACKENDS[backend]):
            o = F.scaled_dot_product_attention(q, k, v, **kwargs)
            return (o, *torch.autograd.grad(o, leaves, do)) if backward else (o,)

    try:
        out = flashsim_case.timed(call)
    except RuntimeError as e:  # the backend has no kernel for the case: SDPA's own words
        if "No available kernel" not in str(e):
            raise
        pytest.skip(f"sdpa-{backend} has no kernel for {flashsim_case.describe_features()}")
    names = ("o", "dq", "dk", "dv")[: len(out)]
    flashsim_case.verify(**{n: t.transpose(1, 2) for n, t in zip(names, out)})  # SDPA returns no lse
