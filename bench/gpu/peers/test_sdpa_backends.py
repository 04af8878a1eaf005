"""PyTorch SDPA's four backends (flash, cuDNN, memory-efficient, math) on a golden suite, forward and backward:
    pytest bench/gpu/peers/test_sdpa_backends.py --flashsim-suite default --flashsim-time 5"""
import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}


# SDPA takes no softcap, ALiBi, packed variable lengths, KV cache or MLA (no v input) (Case.kwargs("sdpa"); block
# masks: its mask).
@pytest.mark.flashsim(kernel="sdpa", unsupported=["softcap", "alibi", "sinks", "dropout", "mla", "varlen",
                                                  "kv_cache"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_sdpa(flashsim_case, backend):
    like = torch.empty(0, device="cuda")
    q, k, v, do = (x.transpose(1, 2) for x in flashsim_case.inputs("q", "k", "v", "do", like=like))  # BHSD views
    q, k, v = (x.requires_grad_() for x in (q, k, v))
    kwargs = flashsim_case.kwargs("sdpa", like=like)
    backward = "dq" in flashsim_case.output_names

    def call():
        with sdpa_kernel(BACKENDS[backend]):
            o = F.scaled_dot_product_attention(q, k, v, **kwargs)
            return (o, *torch.autograd.grad(o, (q, k, v), do)) if backward else (o,)

    try:
        out = flashsim_case.timed(call)
    except RuntimeError as e:  # the backend has no kernel for the case: SDPA's own words
        if "No available kernel" not in str(e):
            raise
        pytest.skip(f"sdpa-{backend} has no kernel for {flashsim_case.describe_features()}")
    names = ("o", "dq", "dk", "dv")[: len(out)]
    flashsim_case.verify(**{n: t.transpose(1, 2) for n, t in zip(names, out)})  # SDPA returns no lse
