"""FlashInfer's ragged prefill lse on its two SM90 backends (GPU machine, FlashInfer importable):
    python3 bench/gpu/peers/repro_flashinfer_prefill.py
Cases of `default` that fail on lse alone where the plan falls to its FA2 backend (head_dim_v != head_dim, ALiBi),
beside cases both backends run: each case through backend "fa3" (where it takes it) and "fa2", lse's worst error and
the report of o and lse."""
import math

import torch

import flashsim
from flashinfer import BatchPrefillWithRaggedKVCacheWrapper
from flashinfer_plan import plan_kwargs, workspace

like = torch.empty(0, device="cuda")
suite = flashsim.golden.Suite("default", progress=False)
for name in ("gqa-kv4-bf16-causal", "dv-dv128", "alibi-causal-bf16"):
    case, c = suite[name], suite[name].case_json
    q, k, v = case.inputs("q", "k", "v", like=like, layout="tokens")
    qo, kv = (torch.arange(c["batch"] + 1, device="cuda", dtype=torch.int32) * c[n] for n in ("seqlen_q", "seqlen_k"))
    print(f"{name}: {case.description}")
    for backend in ("fa3", "fa2"):
        w = BatchPrefillWithRaggedKVCacheWrapper(workspace, "NHD", backend=backend)
        try:
            w.plan(qo, kv, q.shape[1], k.shape[1], q.shape[2], head_dim_vo=v.shape[2], **plan_kwargs(case, q))
            o, lse = w.run(q, k, v, return_lse=True)
        except Exception as e:  # noqa: BLE001  (a backend that does not take the case says so)
            print(f"-- {backend}: {type(e).__name__}: {str(e).splitlines()[0][:150]}")
            continue
        exact = torch.from_numpy(case.expected("lse")).cuda()  # [b, h, s]
        got = lse.view(c["batch"], -1, lse.shape[-1]).transpose(1, 2).double() * math.log(2)
        err = torch.where(torch.isinf(exact), 0, got - exact).abs()
        print(f"-- {backend}: max |lse - exact| {err.max():.3g}, mean {err.mean():.3g}")
        print(case.verify(o=o, lse=lse, layout="tokens", lse_base=2, raise_on_failure=False))
