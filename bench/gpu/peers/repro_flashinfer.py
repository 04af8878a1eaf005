"""The `decode` cases FlashInfer fails, reduced to what differs (GPU machine, FlashInfer importable):
    python3 bench/gpu/peers/repro_flashinfer.py
features-alibi: o checked alone; lse's error per row against slope_h * (keys_b - seqlen_q), the offset an ALiBi
distance counted from the query's index among the new tokens (not its position in the sequence) would add.
features-dv-ne-d: lse's error with head_dim_v 64 (the prefill kernel) against the same scores with V zero-padded
to 128 (lse depends on q and k alone) through the decode and the prefill kernel."""
import dataclasses
import math
import os
import sys

import torch

import flashsim

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_flashinfer import paged_call  # noqa: E402

like = torch.empty(0, device="cuda")
suite = flashsim.golden.Suite("decode", progress=False)


def run(case, cache, prefill=False):
    """paged_call's outputs (the "tokens" layout, lse base 2) as the case holds them: o [b, sq, hq, dv], lse
    [b, hq, sq] natural."""
    o, lse = paged_call(case, cache, prefill)()
    b, (n, hq) = case.case_json["batch"], lse.shape
    return o.view(b, n // b, hq, -1), lse.view(b, n // b, hq).transpose(1, 2) * math.log(2)


def lse_error(case, lse):
    """lse - exact (float64 [b, hq, sq]), rows that see no key left out (NaN)."""
    exact = torch.from_numpy(case.expected("lse")).cuda()
    return torch.where(torch.isinf(exact), torch.nan, lse.double() - exact)


case = suite["features-alibi"]
cache = case.paged_cache(like)
o, lse = run(case, cache)
print(f"{case.name}: {case.description}\n-- o alone:\n{case.verify(o=o, raise_on_failure=False)}")
err = lse_error(case, lse)
offset = case.inputs("alibi_slopes", like=like).double()[None, :, None] * \
    (cache.lengths.double() - case.case_json["seqlen_q"])[:, None, None]  # slope_h * (keys_b - seqlen_q)
print(f"-- lse - exact: max |.| {err.nan_to_num().abs().max():.4g}; "
      f"max |lse - exact - slope_h (keys_b - seqlen_q)| {(err - offset).nan_to_num().abs().max():.4g}")
print(f"   rows (b, h) 0..3 at the first query: lse - exact {err[:, :4, 0].tolist()}\n"
      f"   slope_h (keys_b - seqlen_q)      {offset[:, :4, 0].tolist()}")

case = suite["features-dv-ne-d"]
cache = case.paged_cache(like)
padded = dataclasses.replace(cache, v=torch.nn.functional.pad(cache.v, (0, cache.k.shape[3] - cache.v.shape[3])))
print(f"\n{case.name}: {case.description}")
for label, c, prefill in (("prefill kernel, head_dim_v 64", cache, True), ("decode kernel, V padded to 128", padded,
                          False), ("prefill kernel, V padded to 128", padded, True)):
    o, lse = run(case, c, prefill)
    print(f"-- {label}: max |lse - exact| {lse_error(case, lse).nan_to_num().abs().max():.3g}")
    print(case.verify(lse=lse, raise_on_failure=False))
