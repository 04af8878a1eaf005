"""SDPA's math backend with the case's dropout keep mask, forward and backward: the dropout_mask argument of
aten::_scaled_dot_product_attention_math, PyTorch's hook for checking its fused kernels' dropout (P' = P o keep /
(1 - p), as flashsim's goldens define it). The fused backends draw their own masks: their kept fraction is what a
golden can check (flashsim.golden.check_keep_fraction).
    pytest bench/gpu/peers/test_sdpa_dropout.py --flashsim-suite dropout --flashsim-time 5"""
import pytest
import torch


# The math backend takes no softcap, ALiBi, variable lengths, KV cache, sink or FP8 inputs (Case.kwargs("sdpa")).
@pytest.mark.flashsim(kernel="sdpa-math-keep", unsupported=["softcap", "alibi", "sinks", "varlen", "kv_cache", "mla",
                                                            "fp8"])
def test_sdpa_math_keep_mask(flashsim_case):
    like = torch.empty(0, device="cuda")
    q, k, v, do = (x.transpose(1, 2) for x in flashsim_case.inputs("q", "k", "v", "do", like=like))  # BHSD views
    q, k, v = (x.requires_grad_() for x in (q, k, v))
    kw = flashsim_case.kwargs("sdpa", like=like, takes=["dropout"])
    p = flashsim_case.case_json.get("dropout_p", 0.0)
    keep = flashsim_case.inputs("dropout_keep", like=like).bool() if p > 0 else None  # [b, h_q, s_q, s_k]
    mask = kw.get("attn_mask")  # the op adds a mask as given: a bool one as 0 / -inf, as F.sdpa converts it
    if mask is not None and mask.dtype == torch.bool:
        mask = torch.zeros(mask.shape, dtype=q.dtype, device=q.device).masked_fill(~mask, float("-inf"))
    backward = "dq" in flashsim_case.output_names

    def call():
        o, _ = torch.ops.aten._scaled_dot_product_attention_math(
            q, k, v, mask, p, kw.get("is_causal", False), keep, scale=kw["scale"],
            enable_gqa=kw["enable_gqa"])
        return (o, *torch.autograd.grad(o, (q, k, v), do)) if backward else (o,)

    out = flashsim_case.timed(call)
    names = ("o", "dq", "dk", "dv")[: len(out)]
    flashsim_case.verify(**{n: t.transpose(1, 2) for n, t in zip(names, out)})  # no lse
