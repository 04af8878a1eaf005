"""FlashAttention's CuTe-DSL package (flash-attn-4, its SM90 kernels on a Hopper GPU): flash_attn_func /
flash_attn_varlen_func forward with the lse and backward, its learnable_sink for attention sinks, and its paged
call (page_table, seqused_k over the cache after the append) for the KV-cache cases, forward; each variant is
JIT-compiled on first use:
    pytest bench/gpu/peers/test_flash_attn_4.py --flashsim-suite default --flashsim-time 5"""
import pytest
import torch

cute = pytest.importorskip("flash_attn.cute")


def fa4_kwargs(case, like):
    """flash_attn_func's keyword arguments for a case, as flash-attn-4 takes them (its "no limit" window is None)."""
    kw = case.kwargs("flash_attn", like=like)
    kw["window_size"] = tuple(None if w < 0 else w for w in kw["window_size"])
    return kw


# fp32: its kernels take fp16 / bf16; FP8 is its SM100 path; ALiBi, bias, masks and block masks would go through its
# score_mod / mask_mod / block-sparse tensors (not mapped); no keep-mask dropout; MLA's absorbed form (qv) not mapped.
@pytest.mark.flashsim(kernel="flash-attn-4", unsupported=["fp32", "fp8", "alibi", "bias", "mask", "block_mask",
                                                          "dropout", "mla"])
def test_flash_attn_4(flashsim_case):
    c, like = flashsim_case.case_json, torch.empty(0, device="cuda")
    d, dv = c["head_dim"], c.get("head_dim_v", c["head_dim"])
    if d % 8 or dv % 8:  # an assertion in its interface (16-byte rows)
        pytest.skip(f"{flashsim_case.name}: its SM90 path takes head dims divisible by 8")
    if dv != d and "dq" in flashsim_case.output_names:  # run 15: an MLIR error compiling dv 16 / 32 / 96, shared
        # memory over the 227 KiB limit at d64 dv128 and d128 dv256 (its forward runs these)
        pytest.skip(f"{flashsim_case.name}: its SM90 backward fails for head_dim_v != head_dim")
    kw, leaves = fa4_kwargs(flashsim_case, like), {}
    if flashsim_case.has_feature("sinks"):  # its learnable_sink: differentiated as a leaf
        leaves["sinks"] = kw["learnable_sink"] = flashsim_case.inputs("sinks", like=like)
    if flashsim_case.has_feature("kv_cache"):  # forward over the pages after the append
        cache, q = flashsim_case.paged_cache(like), flashsim_case.inputs("q", like=like)
        o, lse = flashsim_case.timed(lambda: cute.flash_attn_varlen_func(
            q, cache.k, cache.v, page_table=cache.block_table, seqused_k=cache.lengths, return_lse=True, **kw))
        return flashsim_case.verify(o=o, lse=lse)
    leaves.update(zip("qkv", flashsim_case.inputs("q", "k", "v", like=like)))
    fn = cute.flash_attn_varlen_func if "cu_seqlens_q" in kw else cute.flash_attn_func
    forward = lambda: fn(leaves["q"], leaves["k"], leaves["v"], return_lse=True, **kw)  # noqa: E731
    do = flashsim_case.inputs("do", like=like) if "do" in flashsim_case.input_names else None
    flashsim_case.verify(**flashsim_case.timed(flashsim_case.with_grads(forward, leaves, do)))
