"""FlashInfer's paged attention on the KV-cache cases: its decode kernel for one query token a sequence, its
prefill kernel (causal bottom-right) for more or where head_dim_v != head_dim, its MLA kernel for DeepSeek's latent
cache; each JIT-compiled on first use (1-4 minutes a variant):
    pytest bench/gpu/peers/test_flashinfer.py --flashsim-suite decode --flashsim-time 5"""
import math

import pytest
import torch

flashinfer = pytest.importorskip("flashinfer")
workspace = torch.empty(128 << 20, dtype=torch.uint8, device="cuda")  # FlashInfer's plan/run scratch (its docs: 128 MB)


def plan_kwargs(case, q):
    """FlashInfer's plan arguments for a case's scores (q [..., heads_q, d]): causal, window_left (skipped where the
    window ends past the diagonal: its windows end there or nowhere), softcap, scale, ALiBi (skipped where the
    case's slopes are not the ones FlashInfer computes from the head count), the dtypes."""
    c = case.case_json
    left, right = c.get("window_left", -1), c.get("window_right", -1)
    if right > 0:
        pytest.skip(f"{case.name}: FlashInfer's windows end at the diagonal (right 0) or nowhere")
    kw = dict(causal=right == 0, pos_encoding_mode="NONE", window_left=left,
              logits_soft_cap=c.get("softcap", 0.0) or None, sm_scale=c["scale"], q_data_type=q.dtype,
              kv_data_type=q.dtype)
    if "alibi_slopes" in case.input_names:
        if not torch.allclose(case.inputs("alibi_slopes", like=q).float(),
                              flashinfer.utils.get_alibi_slopes(q.shape[-2], device="cuda")):
            pytest.skip(f"{case.name}: ALiBi slopes other than FlashInfer's 2^(-8h/n)")
        kw["pos_encoding_mode"] = "ALIBI"
    return kw


def paged_call(case, cache, prefill=False):
    """A zero-argument call giving (o [b, sq, hq, dv], lse [b, hq, sq], natural log) for a KV-cache case, planned
    on `cache` (Case.paged_cache); prefill: its prefill kernel even where the decode kernel fits."""
    c = case.case_json
    q = case.inputs("q", like=cache.k)  # [b, sq, heads_q, d]
    b, sq, hq, d = q.shape
    qo_indptr = torch.arange(b + 1, device="cuda", dtype=torch.int32) * sq
    if c.get("mla"):  # one latent head: [pages, page, 1, 576] -> [pages, page, 576]; V its first head_dim_v columns
        w = flashinfer.mla.BatchMLAPagedAttentionWrapper(workspace, backend="fa3")
        meta = flashinfer.mla.MLAPlanMetadata.csr(qo_indptr, cache.indptr, cache.indices, cache.lengths)
        w.plan(metadata=meta, num_heads=hq, head_dim_ckv=c["head_dim_v"], head_dim_kpe=d - c["head_dim_v"],
               page_size=cache.page_size, causal=c.get("window_right", -1) == 0, sm_scale=c["scale"],
               q_data_type=q.dtype, kv_data_type=q.dtype, query_layout="packed", kv_cache_layout="packed",
               lse_mode="basee")
        run = lambda: w.run(query=q.reshape(b * sq, hq, d), kv_cache=cache.k[:, :, 0], return_lse=True,  # noqa: E731
                            return_lse_base_on_e=True)
        to_e = 1.0
    else:
        kw = plan_kwargs(case, q)
        hkv, dv = cache.k.shape[2], cache.v.shape[3]
        if sq == 1 and dv == d and not prefill:  # its decode kernel (CUDA cores, split-KV planned by FlashInfer)
            kw.pop("causal")  # one query row, bottom-right: it sees every key
            w = flashinfer.BatchDecodeWithPagedKVCacheWrapper(workspace, "NHD")
            w.plan(cache.indptr, cache.indices, cache.last_page_len, hq, hkv, d, cache.page_size, **kw)
        else:  # its prefill kernel over the pages, causal aligned bottom-right
            w = flashinfer.BatchPrefillWithPagedKVCacheWrapper(workspace, "NHD")
            w.plan(qo_indptr, cache.indptr, cache.indices, cache.last_page_len, hq, hkv, d, cache.page_size,
                   head_dim_vo=dv, **kw)
        run = lambda: w.run(q.reshape(b * sq, hq, d), (cache.k, cache.v), return_lse=True)  # noqa: E731
        to_e = math.log(2)  # its lse is base 2 unless asked otherwise

    def call():
        o, lse = run()
        return o.view(b, sq, hq, -1), lse.view(b, sq, hq).transpose(1, 2) * to_e
    return call


# fp32: its attention kernels take fp16 / bf16. Not mapped (not tried): FP8 codes with per-head descales (its FP8
# path scales a KV cache per tensor) and attention sinks (its run() takes sinks on some backends).
@pytest.mark.flashsim(kernel="flashinfer", unsupported=["fp32", "fp8", "sinks"])
def test_flashinfer(flashsim_case):
    if not flashsim_case.has_feature("kv_cache"):
        pytest.skip(f"{flashsim_case.name}: no KV cache (FlashInfer's paged wrappers run the cache cases)")
    o, lse = flashsim_case.timed(paged_call(flashsim_case, flashsim_case.paged_cache(torch.empty(0, device="cuda"))))
    flashsim_case.verify(o=o, lse=lse)
