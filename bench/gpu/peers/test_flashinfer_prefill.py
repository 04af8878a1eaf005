"""FlashInfer's prefill kernel (BatchPrefillWithRaggedKVCacheWrapper: a batch as sequences packed [total, heads, d],
causal and windows bottom-right) on the cases without a KV cache, forward only (FlashInfer has no attention
backward); each variant JIT-compiled on first use (1-4 minutes):
    pytest bench/gpu/peers/test_flashinfer_prefill.py --flashsim-suite default --flashsim-time 5"""
import pytest
import torch

flashinfer = pytest.importorskip("flashinfer")
from flashinfer_plan import plan_kwargs, workspace  # noqa: E402


# No fp32, bias, dropout, sinks or FP8 descales in its prefill; MLA's shared latent columns not mapped; a boolean
# mask or block mask would go through its custom_mask (one per sequence, not per head): not mapped yet.
@pytest.mark.flashsim(kernel="flashinfer-prefill", unsupported=["fp32", "fp8", "bias", "dropout", "sinks", "mla",
                                                                "mask", "block_mask", "kv_cache"])
def test_flashinfer_prefill(flashsim_case):
    c, like = flashsim_case.case_json, torch.empty(0, device="cuda")
    if {c["head_dim"], c.get("head_dim_v", c["head_dim"])} - {64, 128, 256}:  # run 13: d16-d40 an invalid
        # configuration or a misaligned access (which ends the process's CUDA context), d80-d160 no kernel in its
        # split-KV merge
        pytest.skip(f"{flashsim_case.name}: FlashInfer's prefill runs head dims 64, 128 and 256")
    q, k, v = flashsim_case.inputs("q", "k", "v", like=like, layout="tokens")  # [b * s | total, heads, d]
    if flashsim_case.has_feature("varlen"):
        qo, kv = (x.to(torch.int32) for x in flashsim_case.inputs("cu_seqlens_q", "cu_seqlens_k", like=like))
    else:
        qo, kv = (torch.arange(c["batch"] + 1, device="cuda", dtype=torch.int32) * c[n] for n in ("seqlen_q",
                                                                                                 "seqlen_k"))
    w = flashinfer.BatchPrefillWithRaggedKVCacheWrapper(workspace, "NHD")
    w.plan(qo, kv, q.shape[1], k.shape[1], q.shape[2], head_dim_vo=v.shape[2], **plan_kwargs(flashsim_case, q))
    o, lse = flashsim_case.timed(lambda: w.run(q, k, v, return_lse=True))
    flashsim_case.verify(o=o, lse=lse, layout="tokens", lse_base=2)
