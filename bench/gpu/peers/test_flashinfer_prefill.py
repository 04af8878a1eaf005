"""FlashInfer's prefill kernel (BatchPrefillWithRaggedKVCacheWrapper: a batch as sequences packed [total, heads, d],
causal and windows bottom-right) on the cases without a KV cache, forward only (FlashInfer has no attention
backward); each variant JIT-compiled on first use (1-4 minutes):
    pytest bench/gpu/peers/test_flashinfer_prefill.py --flashsim-suite default --flashsim-time 5"""
import pytest
import torch

flashinfer = pytest.importorskip("flashinfer")
from test_flashinfer import plan_kwargs, workspace  # noqa: E402  (the paged adapter's: the same plan arguments)


# No fp32, bias, dropout, sinks or FP8 descales in its prefill; MLA's shared latent columns not mapped; a boolean
# mask or block mask would go through its custom_mask (one per sequence, not per head): not mapped yet.
@pytest.mark.flashsim(kernel="flashinfer-prefill", unsupported=["fp32", "fp8", "bias", "dropout", "sinks", "mla",
                                                                "mask", "block_mask", "kv_cache"])
def test_flashinfer_prefill(flashsim_case):
    names, like = flashsim_case.input_names, torch.empty(0, device="cuda")
    q, k, v = flashsim_case.inputs("q", "k", "v", like=like)
    varlen = "cu_seqlens_q" in names
    if varlen:  # already packed [total, heads, d]
        qo, kv = (x.to(torch.int32) for x in flashsim_case.inputs("cu_seqlens_q", "cu_seqlens_k", like=like))
    else:  # [b, s, heads, d] -> [b * s, heads, d]
        b = q.shape[0]
        qo, kv = (torch.arange(b + 1, device="cuda", dtype=torch.int32) * x.shape[1] for x in (q, k))
        q, k, v = (x.reshape(-1, *x.shape[2:]) for x in (q, k, v))
    if {q.shape[-1], v.shape[-1]} - {64, 128, 256}:  # run 13: d16-d40 an invalid configuration or a misaligned
        # access (which ends the process's CUDA context), d80-d160 no kernel in its split-KV merge
        pytest.skip(f"{flashsim_case.name}: FlashInfer's prefill runs head dims 64, 128 and 256")
    hq, hkv, d, dv = q.shape[1], k.shape[1], q.shape[2], v.shape[2]
    w = flashinfer.BatchPrefillWithRaggedKVCacheWrapper(workspace, "NHD")
    w.plan(qo, kv, hq, hkv, d, head_dim_vo=dv, **plan_kwargs(flashsim_case, q))
    o, lse = flashsim_case.timed(lambda: w.run(q, k, v, return_lse=True, lse_base="ln", lse_layout="HN"))
    if not varlen:  # o [b * sq, h, dv] -> [b, sq, h, dv]; lse [h, b * sq] -> [b, h, sq]
        o, lse = o.view(b, -1, hq, dv), lse.view(hq, b, -1).transpose(0, 1)
    flashsim_case.verify(o=o, lse=lse)
