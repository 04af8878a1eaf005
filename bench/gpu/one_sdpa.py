#!/usr/bin/env python3
"""One forward and backward of PyTorch SDPA's flash backend, for Nsight Compute to profile.

usage: one_sdpa.py BATCH HEADS HEADS_KV SEQLEN HEAD_DIM CAUSAL(0|1)
bf16 inputs from torch.randn, layout [batch, heads, seqlen, dim] as SDPA takes them; GQA (HEADS_KV < HEADS)
through enable_gqa=True.
"""
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel


def main():
    b, h, hkv, n, d, causal = (int(x) for x in sys.argv[1:7])
    torch.manual_seed(0)
    dev = "cuda"
    q = torch.randn(b, h, n, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(b, hkv, n, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(b, hkv, n, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
    kwargs = {"is_causal": bool(causal)}
    if hkv != h:
        kwargs["enable_gqa"] = True
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v, **kwargs)
        o.backward(torch.randn_like(o))
    torch.cuda.synchronize()
    print(f"ok b{b} h{h}/{hkv} n{n} d{d} causal{causal}", flush=True)


if __name__ == "__main__":
    main()
