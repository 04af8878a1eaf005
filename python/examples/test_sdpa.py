"""PyTorch's scaled_dot_product_attention, forward and backward, against a flashsim golden suite:
    pytest python/examples/test_sdpa.py --flashsim-suite smoke      (CUDA when there is a GPU, else the CPU)"""
import pytest
import torch
import torch.nn.functional as F

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


# SDPA has no softcap, ALiBi, sinks, keep mask, packed variable lengths, KV cache, block mask (this example does
# not expand it: bench/gpu/peers does) or MLA (V a view of K: no v input); a row that sees no key: its cuDNN
# backend gives it a nonzero output.
@pytest.mark.flashsim(unsupported=["softcap", "alibi", "sinks", "dropout", "mla", "varlen", "kv_cache", "block_mask",
                                   "rows_without_keys"])
def test_sdpa(flashsim_case):
    like = torch.empty(0, device=DEVICE)
    q, k, v, do = flashsim_case.inputs("q", "k", "v", "do", like=like, layout="bhsd")  # [b, heads, s, d] views
    q, k, v = (x.contiguous().requires_grad_() for x in (q, k, v))
    o = F.scaled_dot_product_attention(q, k, v, **flashsim_case.kwargs("sdpa", like=like))
    o.backward(do)
    flashsim_case.verify(o=o, dq=q.grad, dk=k.grad, dv=v.grad, layout="bhsd")  # SDPA returns no lse
