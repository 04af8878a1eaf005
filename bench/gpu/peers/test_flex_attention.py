"""PyTorch's FlexAttention (torch.compile'd, as it is used) on a golden suite, forward with its lse and backward:
score_mod for softcap, bias and ALiBi, block_mask for windows, masks, block masks and variable lengths, and
attention sinks as one more key whose score_mod gives the sink's logit (its gradient through the captured tensor).
    pytest bench/gpu/peers/test_flex_attention.py --flashsim-suite sparse --flashsim-time 5"""
import pytest
import torch
import torch._dynamo
from torch.nn.attention.flex_attention import flex_attention

torch._dynamo.config.cache_size_limit = 4096  # a case is a new compile: never fall back to eager silently
torch._dynamo.config.accumulated_cache_size_limit = 1 << 16
flex = torch.compile(flex_attention, dynamic=False)


# Its bias is a captured tensor: dbias is not asked for. No KV cache or keep mask: Case.kwargs("flex"); MLA's
# 576-wide keys do not fit its kernels' shared memory.
@pytest.mark.flashsim(kernel="flex", unsupported=["kv_cache", "dropout", "mla", "fp8"])
def test_flex(flashsim_case):
    case, like = flashsim_case, torch.empty(0, device="cuda")
    leaves = dict(zip("qkv", case.inputs("q", "k", "v", like=like, layout="bhsd")))  # a varlen case: [1, h, total, d]
    if case.has_feature("sinks"):  # differentiated through score_mod's captured tensor
        leaves["sinks"] = case.inputs("sinks", like=like)
    kwargs = case.kwargs("flex", like=like, sinks=leaves.get("sinks"))

    def forward():
        k, v = leaves["k"], leaves["v"]
        if "sinks" in leaves:  # the sink as one more key, its logit from score_mod
            k, v = (torch.nn.functional.pad(x, (0, 0, 0, 1)) for x in (k, v))
        return flex(leaves["q"], k, v, return_lse=True, **kwargs)

    out = case.timed(case.with_grads(forward, leaves, case.inputs("do", like=like, layout="bhsd")))
    case.verify(layout="bhsd", **out)
