"""FlexAttention's paged attention (torch.compile'd flex_attention through torch's experimental PagedAttention: the
page maps in its mask_mod and score_mod, the appended tokens written with its assign) on the KV-cache cases:
    pytest bench/gpu/peers/test_flex_paged.py --flashsim-suite decode --flashsim-time 5"""
import pytest
import torch
import torch._dynamo
from torch.nn.attention.flex_attention import flex_attention

torch._dynamo.config.cache_size_limit = 4096  # a case is a new compile: never fall back to eager silently
flex = torch.compile(flex_attention, dynamic=False)


# Case.flex_paged: no sink, MLA or FP8 with the cache; the cases without a cache are test_flex_attention.py's.
@pytest.mark.flashsim(kernel="flex-paged", unsupported=["sinks", "mla", "fp8"])
def test_flex_paged(flashsim_case):
    if not flashsim_case.has_feature("kv_cache"):
        pytest.skip(f"{flashsim_case.name}: no KV cache (test_flex_attention.py runs it)")
    like = torch.empty(0, device="cuda")
    q = flashsim_case.inputs("q", like=like).transpose(1, 2)  # [b, heads_q, seqlen_q, d]
    k, v, kwargs = flashsim_case.flex_paged(like)
    o, lse = flashsim_case.timed(lambda: flex(q, k, v, return_lse=True, **kwargs))
    flashsim_case.verify(o=o.transpose(1, 2), lse=lse)
