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
    like = torch.empty(0, device="cuda")
    varlen = flashsim_case.has_feature("varlen")
    # BSHD -> BHSD views; a packed [total, heads, d] as [1, heads, total, d]
    to_bhsd = (lambda x: x.transpose(0, 1)[None]) if varlen else (lambda x: x.transpose(1, 2))
    q, k, v, do = (to_bhsd(x) for x in flashsim_case.inputs("q", "k", "v", "do", like=like))
    q, k, v = (x.requires_grad_() for x in (q, k, v))
    sinks = flashsim_case.inputs("sinks", like=like).requires_grad_() if flashsim_case.has_feature("sinks") else None
    kwargs = flashsim_case.kwargs("flex", like=like, sinks=sinks)
    leaves = (q, k, v) + ((sinks,) if sinks is not None else ())
    backward = "dq" in flashsim_case.output_names

    def call():
        kv = (k, v) if sinks is None else (torch.nn.functional.pad(x, (0, 0, 0, 1)) for x in (k, v))  # + sink key
        o, lse = flex(q, *kv, return_lse=True, **kwargs)
        return (o, lse, *torch.autograd.grad(o, leaves, do)) if backward else (o, lse)

    out = flashsim_case.timed(call)
    from_bhsd = (lambda x: x[0].transpose(0, 1)) if varlen else (lambda x: x.transpose(1, 2))
    lse = out[1][0] if varlen else out[1]  # [heads, total] / [batch, heads, seqlen], as the case's
    grads = dict(zip(("dq", "dk", "dv"), (from_bhsd(t) for t in out[2:5])))
    if len(out) > 5:
        grads["dsinks"] = out[5]
    flashsim_case.verify(o=from_bhsd(out[0]), lse=lse, **grads)
