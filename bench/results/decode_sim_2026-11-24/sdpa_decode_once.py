# One SDPA flash decode call (for ncu): python3 sdpa_decode_once.py BATCH SEQLEN_K
import sys
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

batch, seqlen = int(sys.argv[1]), int(sys.argv[2])
q = torch.randn(batch, 32, 1, 128, device="cuda", dtype=torch.bfloat16)
k = torch.randn(batch, 8, seqlen, 128, device="cuda", dtype=torch.bfloat16)
v = torch.randn_like(k)
with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
    F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
torch.cuda.synchronize()
