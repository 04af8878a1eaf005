"""FlashInfer's paged attention on the KV-cache cases: its decode kernel for one query token a sequence, its
prefill kernel (causal bottom-right) for more or where head_dim_v != head_dim; each JIT-compiled on first use
(1-4 minutes a variant). Its MLA kernel: test_flashinfer_mla.py.
    pytest bench/gpu/peers/test_flashinfer.py --flashsim-suite decode --flashsim-time 5"""
import pytest
import torch

flashinfer = pytest.importorskip("flashinfer")
from flashinfer_plan import plan_kwargs, workspace  # noqa: E402


def paged_call(case, cache, prefill=False):
    """A zero-argument call giving FlashInfer's (o [b * sq, hq, dv], lse [b * sq, hq], base 2): the "tokens" layout
    of Case.verify, for a KV-cache case planned on `cache` (Case.paged_cache); prefill: its prefill kernel even where
    the decode kernel fits."""
    q = case.inputs("q", like=cache.k, layout="tokens")
    (hq, d), (hkv, dv), b = q.shape[1:], cache.v.shape[2:], case.case_json["batch"]
    kw = plan_kwargs(case, q)
    if q.shape[0] == b and dv == d and not prefill:  # one query row a sequence: its decode kernel (CUDA cores, its
        kw.pop("causal")  # own split-KV plan); the row is the last, so it sees every key
        w = flashinfer.BatchDecodeWithPagedKVCacheWrapper(workspace, "NHD")
        w.plan(cache.indptr, cache.indices, cache.last_page_len, hq, hkv, d, cache.page_size, **kw)
    else:  # its prefill kernel over the pages, causal aligned bottom-right
        qo_indptr = torch.arange(b + 1, device="cuda", dtype=torch.int32) * (q.shape[0] // b)
        w = flashinfer.BatchPrefillWithPagedKVCacheWrapper(workspace, "NHD")
        w.plan(qo_indptr, cache.indptr, cache.indices, cache.last_page_len, hq, hkv, d, cache.page_size,
               head_dim_vo=dv, **kw)
    return lambda: w.run(q, (cache.k, cache.v), return_lse=True)


# fp32: its attention kernels take fp16 / bf16. Not mapped (not tried): FP8 codes with per-head descales (its FP8
# path scales a KV cache per tensor) and attention sinks (its run() takes sinks on some backends).
@pytest.mark.flashsim(kernel="flashinfer", unsupported=["fp32", "fp8", "sinks", "mla"])
def test_flashinfer(flashsim_case):
    if not flashsim_case.has_feature("kv_cache"):
        pytest.skip(f"{flashsim_case.name}: no KV cache (FlashInfer's paged wrappers run the cache cases)")
    o, lse = flashsim_case.timed(paged_call(flashsim_case, flashsim_case.paged_cache(torch.empty(0, device="cuda"))))
    flashsim_case.verify(o=o, lse=lse, layout="tokens", lse_base=2)
