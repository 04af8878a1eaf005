# PyTorch SDPA's flash backend (FlashAttention-2's mha_fwd, vendored in PyTorch) on a decode step: one query
# row per sequence, 32 query heads over 8 kv heads (enable_gqa), contiguous K/V (SDPA has no paged cache), head
# dim 128, bf16. Prints each launched kernel (name, grid, time from the profiler) with L2 flushed before the
# call, median of 7 calls.
#   python3 sdpa_decode.py
import statistics
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile

flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")


def one(batch, seqlen, hq=32, hk=8, d=128):
    q = torch.randn(batch, hq, 1, d, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(batch, hk, seqlen, d, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        F.scaled_dot_product_attention(q, k, v, enable_gqa=True)  # warm up
        torch.cuda.synchronize()
        times = {}
        for _ in range(7):
            flush.random_(0, 255)
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
                torch.cuda.synchronize()
            for e in prof.events():
                if e.device_type.name == "CUDA" and "flash" in e.name:
                    times.setdefault(e.name, []).append(e.device_time)
    print(f"batch {batch} seqlen_k {seqlen}: KV {2 * batch * hk * seqlen * d * 2 / 1e9:.3f} GB")
    for name, ts in times.items():
        print(f"  {statistics.median(ts):9.1f} us  {name[:200]}")


for batch, seqlen in [(64, 8192), (1, 8192), (8, 8192), (1, 32768), (16, 4096)]:
    one(batch, seqlen)
