"""FlashInfer's MLA kernel (BatchMLAPagedAttentionWrapper, its fa3 backend on Hopper) on DeepSeek's latent cache
cases: one 576-wide latent head a cache row, V its first head_dim_v columns, forward; JIT-compiled on first use:
    pytest bench/gpu/peers/test_flashinfer_mla.py --flashsim-suite mla --flashsim-time 5"""
import pytest
import torch

flashinfer = pytest.importorskip("flashinfer")
from flashinfer_plan import workspace  # noqa: E402


# The MLA cases with a KV cache alone (its wrapper reads pages); no window, softcap, ALiBi or sinks in its plan.
@pytest.mark.flashsim(kernel="flashinfer-mla", unsupported=["fp32", "fp8", "sinks", "alibi", "softcap"])
def test_flashinfer_mla(flashsim_case):
    c = flashsim_case.case_json
    if not flashsim_case.has_feature("mla") or not flashsim_case.has_feature("kv_cache"):
        pytest.skip(f"{flashsim_case.name}: not an MLA case over a KV cache")
    if c.get("window_left", -1) >= 0 or c.get("window_right", -1) > 0:
        pytest.skip(f"{flashsim_case.name}: its MLA plan takes causal or nothing, no window")
    cache = flashsim_case.paged_cache(torch.empty(0, device="cuda"))  # k [pages, page, 1, 576]
    q = flashsim_case.inputs("q", like=cache.k, layout="tokens")  # [b * sq, heads, 576]
    b, (hq, d), dv = c["batch"], q.shape[1:], c["head_dim_v"]
    qo_indptr = torch.arange(b + 1, device="cuda", dtype=torch.int32) * (q.shape[0] // b)
    w = flashinfer.mla.BatchMLAPagedAttentionWrapper(workspace, backend="fa3")
    w.plan(metadata=flashinfer.mla.MLAPlanMetadata.csr(qo_indptr, cache.indptr, cache.indices, cache.lengths),
           num_heads=hq, head_dim_ckv=dv, head_dim_kpe=d - dv, page_size=cache.page_size,
           causal=c.get("window_right", -1) == 0, sm_scale=c["scale"], q_data_type=q.dtype, kv_data_type=q.dtype,
           query_layout="packed", kv_cache_layout="packed", lse_mode="basee")
    o, lse = flashsim_case.timed(lambda: w.run(query=q, kv_cache=cache.k[:, :, 0], return_lse=True,
                                               return_lse_base_on_e=True))
    flashsim_case.verify(o=o, lse=lse, layout="tokens")
