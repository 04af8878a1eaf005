#!/usr/bin/env python3
"""Run a kernel on every case of a flashsim golden suite, write the candidate folder, and verify it.

    python3 golden/examples/run_candidate.py --golden build/golden/smoke --out /tmp/cand --kernel sdpa
    python3 golden/examples/run_candidate.py --golden golden/data/smoke --out /tmp/cand --kernel numpy

--kernel numpy: NumPy float32 attention (numpy_attention.py), and RMSNorm / LayerNorm (numpy_norm.py) for a
                norm case: stand-ins that need nothing but NumPy.
--kernel sdpa:  PyTorch's scaled_dot_product_attention (CUDA when available), forward and backward through
                autograd; bias, masks, windows and ALiBi go in as one float attn_mask, GQA through
                enable_gqa, variable lengths one sequence at a time. SDPA has no softcap and no attention
                sinks (those cases are skipped) and does not return the lse (not written: verify with
                --outputs o,dq,dk,dv,dbias).
Then `flashsim golden verify --golden G --candidate OUT` (exit code passed through) unless --no-verify.
"""
import argparse
import fnmatch
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flashsim_golden import load_case, manifest, save_candidate  # noqa: E402


def numpy_kernel(t, case):
    if case.get("op", "attention") != "attention":  # a norm case: rmsnorm or layernorm
        from numpy_norm import norm
        return norm(t, case), case["dtype"]
    from numpy_attention import attention
    return attention(t, case), case["dtype"]  # computed in fp32 from inputs in the case's dtype


def sdpa_kernel(t, case):
    import torch
    import torch.nn.functional as F
    if case.get("op", "attention") != "attention":
        return None, f"SDPA is attention, the case is {case['op']}"
    if case.get("sinks"):
        return None, "SDPA has no attention sinks"
    if case["softcap"] > 0:
        return None, "SDPA has no softcap"
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    tdt = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16, "fp64": torch.float64}[case["dtype"]]

    def tensor(name, grad=False):
        x = torch.from_numpy(np.ascontiguousarray(t[name])).to(dev).to(tdt)  # exact: values are in the dtype
        return x.requires_grad_(grad)

    q, k, v, do = tensor("q", True), tensor("k", True), tensor("v", True), tensor("do")
    bias = tensor("bias", True) if "bias" in t else None
    varlen = "cu_seqlens_q" in t
    if varlen:
        cq, ck = t["cu_seqlens_q"].tolist(), t["cu_seqlens_k"].tolist()
        seqs = [(cq[b], cq[b + 1], ck[b], ck[b + 1]) for b in range(len(cq) - 1)]
    hq, hk = q.shape[-2], k.shape[-2]

    def mask_for(b, lq, lk):
        """Float mask [1|H, lq, lk]: bias + ALiBi, -inf where the window or boolean mask hides a key."""
        i = torch.arange(lq, device=dev)[:, None]
        j = torch.arange(lk, device=dev)[None, :]
        keep = torch.ones(lq, lk, dtype=torch.bool, device=dev)
        if case["window_left"] >= 0:
            keep &= j >= i + lk - lq - case["window_left"]
        if case["window_right"] >= 0:
            keep &= j <= i + lk - lq + case["window_right"]
        keep = keep[None].expand(hq, lq, lk)
        if "mask" in t:
            mb = torch.from_numpy(t["mask"]).to(dev)
            keep = keep & mb[b if mb.shape[0] > 1 else 0][:, :lq, :lk]
        add = torch.zeros(hq, lq, lk, dtype=torch.float32, device=dev)
        if bias is not None:
            add = add + bias[b if bias.shape[0] > 1 else 0][:, :lq, :lk].float()
        if "alibi_slopes" in t:
            slopes = torch.from_numpy(t["alibi_slopes"]).to(dev)
            add = add - slopes[:, None, None] * (i + lk - lq - j).abs()[None].float()
        return add.masked_fill(~keep, float("-inf")).to(tdt)

    def run(qs, ks, vs, b):  # [1, S, H, D] -> SDPA's [1, H, S, D]
        lq, lk = qs.shape[1], ks.shape[1]
        out = F.scaled_dot_product_attention(qs.transpose(1, 2), ks.transpose(1, 2), vs.transpose(1, 2),
                                             attn_mask=mask_for(b, lq, lk)[None], scale=case["scale"],
                                             enable_gqa=hq != hk)
        return out.transpose(1, 2)

    if varlen:
        o = torch.cat([run(q[None, a:b_], k[None, c:d], v[None, c:d], n)[0] for n, (a, b_, c, d) in enumerate(seqs)])
    else:
        o = torch.cat([run(q[b:b + 1], k[b:b + 1], v[b:b + 1], b) for b in range(q.shape[0])])
    o.backward(do)
    out = {"o": o, "dq": q.grad, "dk": k.grad, "dv": v.grad}
    if bias is not None:
        out["dbias"] = bias.grad
    return {n: x.detach().float().cpu().numpy() for n, x in out.items()}, case["dtype"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--golden", required=True, help="golden suite folder")
    ap.add_argument("--out", required=True, help="candidate folder to write")
    ap.add_argument("--kernel", choices=["numpy", "sdpa"], default="numpy")
    ap.add_argument("--case", action="append", default=[], help="only cases matching this glob (repeatable)")
    ap.add_argument("--flashsim", default=None, help="flashsim binary (default: build/default/flashsim, PATH)")
    ap.add_argument("--no-verify", action="store_true", help="only write the candidate folder")
    args = ap.parse_args()
    kernel = {"numpy": numpy_kernel, "sdpa": sdpa_kernel}[args.kernel]
    os.makedirs(args.out, exist_ok=True)
    ran, skipped = [], []
    for entry in manifest(args.golden)["cases"]:
        if args.case and not any(fnmatch.fnmatch(entry["name"], g) for g in args.case):
            continue
        t, case = load_case(os.path.join(args.golden, entry["file"]))
        try:
            out, why = kernel(t, case)
        except Exception as e:  # a kernel that refuses a case (unsupported feature): reported, not written
            out, why = None, f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
        if out is None:
            skipped.append((entry["name"], why))
            continue
        save_candidate(os.path.join(args.out, entry["file"]), out, why)
        ran.append(entry["name"])
    print(f"{args.kernel}: wrote {len(ran)} candidate files to {args.out}; skipped {len(skipped)}")
    for name, why in skipped:
        print(f"  skipped {name}: {why}")
    if args.no_verify:
        return 0
    exe = args.flashsim
    if exe is None:
        here = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build",
                                             "default", "flashsim"))
        exe = os.path.relpath(here) if os.path.exists(here) else "flashsim"  # relative: no machine path printed
    cmd = [exe, "golden", "verify", "--golden", args.golden, "--candidate", args.out, "--quiet"]
    if skipped:  # check just the cases the kernel ran
        for name in ran:
            cmd += ["--case", name]
    if args.kernel == "sdpa":
        cmd += ["--outputs", "o,dq,dk,dv,dbias"]
    print("$ " + " ".join(cmd), flush=True)
    try:
        return subprocess.call(cmd)
    except OSError as e:  # no such binary (or not executable): one line, naming the flag that sets it
        print(f"run_candidate.py: error: cannot run flashsim as '{exe}' ({e.strerror}); build it, or name it with "
              f"--flashsim PATH (the candidate folder {args.out} is written; --no-verify skips this step)",
              file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
